# Helpers shared by scripts/kafka.sh, elasticsearch.sh and redis.sh (sourced, not run).
# The sourcing script sets SERVICE (its name in messages) and PIDFILE before calling them.

say() { echo "$SERVICE: $*" >&2; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# proc_alive <pid>: the process exists and is not a finished zombie. A SIGKILLed JVM shows its main
# thread as a zombie while the other threads still tear down (and still hold its ports), so only a
# zombie with no thread left counts as gone; one nobody has reaped yet holds nothing.
proc_alive() {
  kill -0 "$1" 2>/dev/null || return 1
  local st; st="$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p; s/^Threads:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$1/status" 2>/dev/null | tr '\n' ' ')"
  [[ $st != "Z 1 " && -n $st ]]
}
pid_alive() { [[ -f $PIDFILE ]] && proc_alive "$(cat "$PIDFILE")"; }
now_ms() { local t=${EPOCHREALTIME//[.,]/}; echo $((t / 1000)); }

# stop_pid <pid> <seconds>: waits that long for the process (already asked to stop) to exit, then
# SIGKILLs it; says which.
stop_pid() {
  local pid=$1 seconds=$2
  for _ in $(seq $((seconds * 5))); do proc_alive "$pid" || break; sleep 0.2; done
  if proc_alive "$pid"; then say "no exit after $seconds s, SIGKILL"; kill -9 "$pid"; fi
  say "stopped (pid $pid)"
}
