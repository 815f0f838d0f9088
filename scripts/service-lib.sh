# Helpers shared by scripts/kafka.sh, elasticsearch.sh and redis.sh (sourced, not run).
# The sourcing script sets SERVICE (its name in messages) and PIDFILE before calling them.

say() { echo "$SERVICE: $*" >&2; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pid_alive() { [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
now_ms() { local t=${EPOCHREALTIME//[.,]/}; echo $((t / 1000)); }

# stop_pid <pid> <seconds>: waits that long for the process (already asked to stop) to exit, then
# SIGKILLs it; says which.
stop_pid() {
  local pid=$1 seconds=$2
  for _ in $(seq $((seconds * 5))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then say "no exit after $seconds s, SIGKILL"; kill -9 "$pid"; fi
  say "stopped (pid $pid)"
}
