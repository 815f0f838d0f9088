#!/usr/bin/env bash
# Single-node Elasticsearch for the messenger's contact search, for local runs and tests, no Docker.
#   scripts/elasticsearch.sh up|down|status   env: ES_PORT (19200), ES_TRANSPORT_PORT (19300),
#                                             ES_HEAP (256m), ES_USER (pin-es), PIN_CACHE_DIR,
#                                             PIN_STATE_DIR, ES_JAVA_HOME (the machine's java)
#
# Distribution: org.elasticsearch.distribution.integ-test-zip:elasticsearch from Maven Central —
# the newest there when chosen is 8.19.21 (no 9.x is published as integ-test-zip). It has no bundled
# JDK (runs on the machine's Java 17, which 8.x supports), no painless/_reindex, and x-pack security,
# which we switch off. The npm client @elastic/elasticsearch is pinned to the same major (8).
# Elasticsearch refuses to run as root: as root, a system user (ES_USER) is created once and the
# node runs as that user with its config, data and logs under the state dir.
set -euo pipefail

VERSION="8.19.21"
ARTIFACT="org.elasticsearch.distribution.integ-test-zip:elasticsearch:$VERSION:zip"
CACHE="${PIN_CACHE_DIR:-$HOME/.cache/pin-platform-jobs}"
ZIP="$CACHE/elasticsearch-$VERSION.zip"
STATE="${PIN_STATE_DIR:-/tmp/pin-services}/elasticsearch"
# Unpacked outside the cache: the cache sits under root's home, which the node's user cannot read.
HOME_DIR="${PIN_STATE_DIR:-/tmp/pin-services}/elasticsearch-$VERSION"
PORT="${ES_PORT:-19200}"
TPORT="${ES_TRANSPORT_PORT:-19300}"
HEAP="${ES_HEAP:-256m}"
ES_USER="${ES_USER:-pin-es}"
PIDFILE="$STATE/run/es.pid" LOG="$STATE/logs/pin-es.log"
URL="http://127.0.0.1:$PORT"

SERVICE=elasticsearch
# shellcheck source=service-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/service-lib.sh"
cluster_health() { # curl when there is one, else plain HTTP/1.0 over bash's /dev/tcp
  if command -v curl >/dev/null; then curl -sf -m 2 "$URL/_cluster/health"; return; fi
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT" && printf 'GET /_cluster/health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 && timeout 2 cat <&3)
}
healthy() { cluster_health 2>/dev/null | grep -qE '"status":"(green|yellow)"'; }
running() { pid_alive && healthy; }
as_root() { [[ $(id -u) -eq 0 ]]; }

fetch_distribution() {
  [[ -f $ZIP ]] && return
  say "fetching Elasticsearch $VERSION (integ-test-zip) from Maven Central into $CACHE (once)"
  mkdir -p "$CACHE"
  local tmp="$CACHE/es-fetch.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy -Dartifact="$ARTIFACT" \
    -DoutputDirectory="$tmp" >"$tmp.log" 2>&1 || { cat "$tmp.log" >&2; say "maven fetch failed"; exit 1; }
  # Rename at the end so an interrupted fetch never leaves a half-written zip in the cache.
  mv "$tmp/elasticsearch-$VERSION.zip" "$ZIP"
  rm -rf "$tmp" "$tmp.log"
}

unpack() {
  [[ -x $HOME_DIR/bin/elasticsearch ]] && return
  local tmp="$HOME_DIR.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  if command -v unzip >/dev/null; then
    unzip -q "$ZIP" -d "$tmp"
  else # python's zipfile drops the exec bits; only the launch scripts need them back
    python3 -m zipfile -e "$ZIP" "$tmp" && chmod a+x "$tmp/elasticsearch-$VERSION/bin/"*
  fi
  rm -rf "$HOME_DIR" && mv "$tmp/elasticsearch-$VERSION" "$HOME_DIR" && rm -rf "$tmp"
  chmod -R a+rX "$HOME_DIR"
}

ensure_user() {
  as_root || return 0
  id -u "$ES_USER" >/dev/null 2>&1 && return
  say "creating system user $ES_USER (Elasticsearch refuses to run as root)"
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$ES_USER"
}

java_home() {
  if [[ -n ${ES_JAVA_HOME:-} ]]; then echo "$ES_JAVA_HOME"; return; fi
  command -v java >/dev/null || { say "java (17+) not found on PATH"; exit 1; }
  dirname "$(dirname "$(readlink -f "$(command -v java)")")"
}

write_config() {
  rm -rf "$STATE/config" && mkdir -p "$STATE/config" "$STATE/data" "$STATE/logs" "$STATE/run"
  cp -r "$HOME_DIR/config/." "$STATE/config/"
  cat >"$STATE/config/elasticsearch.yml" <<EOF
cluster.name: pin-local
node.name: pin-es-1
path.data: $STATE/data
path.logs: $STATE/logs
network.host: 127.0.0.1
http.port: $PORT
transport.port: $TPORT
# One node, no cluster formation, and therefore no production bootstrap checks.
discovery.type: single-node
# A local test node: plain HTTP, no users.
xpack.security.enabled: false
# No mmap: no need for vm.max_map_count on the host.
node.store.allow_mmap: false
# A nearly full disk must not turn the indices read-only under the tests.
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
EOF
  # The node writes its keystore into the config dir, and its data, logs and pid under the state dir.
  if as_root; then chown -R "$ES_USER" "$STATE"; fi
}

up() {
  if running; then say "already running on $URL (pid $(cat "$PIDFILE"))"; echo "export ELASTICSEARCH_URL=$URL"; return; fi
  if pid_alive; then say "pid $(cat "$PIDFILE") alive but not healthy; restarting"; down; fi
  if port_open "$PORT" || port_open "$TPORT"; then say "port $PORT or $TPORT is taken by another process"; exit 1; fi
  local jhome; jhome="$(java_home)"
  fetch_distribution
  unpack
  ensure_user
  write_config
  local t0; t0=$(now_ms)
  local env=(env "ES_PATH_CONF=$STATE/config" "ES_JAVA_HOME=$jhome" "ES_JAVA_OPTS=-Xms$HEAP -Xmx$HEAP -XX:-HeapDumpOnOutOfMemoryError"
    "ES_TMPDIR=$STATE/run")
  : >"$LOG.out"
  # -d daemonises and writes the JVM's pid; the launcher's own output goes to $LOG.out.
  if as_root; then
    chown "$ES_USER" "$LOG.out"
    runuser -u "$ES_USER" -- "${env[@]}" "$HOME_DIR/bin/elasticsearch" -d -p "$PIDFILE" >>"$LOG.out" 2>&1 </dev/null 9>&- \
      || { tail -n 30 "$LOG.out" >&2; say "start failed"; exit 1; }
  else
    "${env[@]}" "$HOME_DIR/bin/elasticsearch" -d -p "$PIDFILE" >>"$LOG.out" 2>&1 </dev/null 9>&- \
      || { tail -n 30 "$LOG.out" >&2; say "start failed"; exit 1; }
  fi
  until healthy; do
    if (($(now_ms) - t0 > 120000)) || { [[ -f $PIDFILE ]] && ! pid_alive; }; then
      tail -n 30 "$LOG.out" >&2; [[ -f $LOG ]] && tail -n 30 "$LOG" >&2
      say "not ready within 120 s"; exit 1
    fi
    sleep 0.5
  done
  say "Elasticsearch $VERSION ready on $URL in $(($(now_ms) - t0)) ms (pid $(cat "$PIDFILE"), logs $STATE/logs)"
  echo "export ELASTICSEARCH_URL=$URL"
}

down() {
  if pid_alive; then
    local pid; pid="$(cat "$PIDFILE")"
    kill "$pid"
    stop_pid "$pid" 20
  else
    say "not running"
  fi
  # Throwaway node: its indices go with it; the unpacked distribution stays for the next `up`.
  rm -rf "$STATE"
}

status() {
  if running; then say "running on $URL (pid $(cat "$PIDFILE"))"; else say "not running"; exit 3; fi
}

case "${1:-}" in
  up|down)
    # Serialise concurrent up/down (e.g. parallel test runners); the node itself gets 9>&-.
    mkdir -p "$(dirname "$STATE")"
    exec 9>"$STATE.lock"
    flock 9
    "$1" ;;
  status) "$1" ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
