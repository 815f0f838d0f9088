#!/usr/bin/env bash
# Local Redis (Debian's redis-server) for the optional multi-replica hub backplane, no Docker.
#   scripts/redis.sh up|down|status      env: REDIS_PORT (16379), PIN_STATE_DIR
# A throwaway instance: its own port, pid file and log under the state dir, no persistence.
set -euo pipefail

STATE="${PIN_STATE_DIR:-/tmp/pin-services}/redis"
PORT="${REDIS_PORT:-16379}"
PIDFILE="$STATE/redis.pid"

SERVICE=redis
# shellcheck source=service-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/service-lib.sh"
ping() { [[ "$(redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null)" == PONG ]]; }

up() {
  if ! command -v redis-server >/dev/null; then
    say "installing redis-server from apt (once)"
    # Plain output kept aside; shown only if apt fails. (With systemd, the package also
    # starts its own service on 6379; that one is not ours and does not collide.)
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server; } \
      >/tmp/pin-redis-apt.log 2>&1 || { tail -n 20 /tmp/pin-redis-apt.log >&2; say "apt-get failed"; exit 1; }
  fi
  if pid_alive && ping; then
    say "already running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"
  else
    if ping; then say "port $PORT answers but is not ours (no live pid in $PIDFILE)"; exit 1; fi
    mkdir -p "$STATE"
    redis-server --bind 127.0.0.1 --port "$PORT" --daemonize yes --pidfile "$PIDFILE" \
      --logfile "$STATE/redis.log" --dir "$STATE" --save '' --appendonly no
    for _ in $(seq 50); do ping && break; sleep 0.1; done
    ping || { tail -n 20 "$STATE/redis.log" >&2; say "not answering PING after 5 s"; exit 1; }
    say "ready on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"), log $STATE/redis.log)"
  fi
  echo "export REDIS_URL=redis://127.0.0.1:$PORT"
}

down() {
  if pid_alive; then
    local pid; pid="$(cat "$PIDFILE")"
    # NOSAVE: nothing to persist; then wait for the process, SIGKILL as a last resort.
    redis-cli -h 127.0.0.1 -p "$PORT" shutdown nosave >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
    stop_pid "$pid" 5
  else
    say "not running"
  fi
  rm -f "$PIDFILE"
}

status() {
  if pid_alive && ping; then say "running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"; else say "not running"; exit 3; fi
}

case "${1:-}" in
  up|down|status) "$1" ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
