#!/usr/bin/env bash
# Local S3-compatible object store for the messenger's files (versitygw, posix backend), no Docker.
#   scripts/objectstore.sh up|down|status   env: OBJECTSTORE_PORT (19000), FILES_S3_BUCKET (pin-files),
#                                            PIN_CACHE_DIR, PIN_STATE_DIR (/tmp/pin-services: pid, log,
#                                            data/ and meta/ under objectstore/); needs Go on PATH (or
#                                            in /usr/local/go/bin) the first time, to build the binary
#
# Version: versitygw v1.8.0, built once with `go install` (about a minute on an idle 2-core box; the
# Go module proxy serves it) into the cache beside Kafka's jars; the binary is what is cached.
# Objects are plain files under data/<bucket>/; their metadata (content type, ETag) goes to a sidecar
# directory rather than extended attributes, so a tmpfs state dir works too. The credentials are the
# store's root user: local only, public, and printed as the FILES_S3_* settings the service reads.
# It checks SigV4 signatures as S3 does, presigned ones included (a forged or altered one is 403).
# CORS answers any origin: a page uploads and downloads through presigned URLs, which are the
# authorisation (a production bucket lists its apps' origins in its own CORS rules).
set -euo pipefail

VERSION=v1.8.0
CACHE="${PIN_CACHE_DIR:-$HOME/.cache/pin-platform-jobs}/versitygw-$VERSION"
BIN="$CACHE/versitygw"
STATE="${PIN_STATE_DIR:-/tmp/pin-services}/objectstore"
PORT="${OBJECTSTORE_PORT:-19000}"
BUCKET="${FILES_S3_BUCKET:-pin-files}"
ACCESS_KEY=pin-local
SECRET_KEY=pin-local-objectstore-secret
PIDFILE="$STATE/versitygw.pid" LOG="$STATE/versitygw.log"

SERVICE=objectstore
# shellcheck source=service-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/service-lib.sh"
# Any HTTP answer will do (an anonymous request gets 403): the gateway is serving.
answers() { curl -s -o /dev/null -m 2 "http://127.0.0.1:$PORT/" 2>/dev/null; }
running() { pid_alive && answers; }

build() {
  [[ -x $BIN ]] && return
  local go; go="$(command -v go || true)"
  [[ -z $go && -x /usr/local/go/bin/go ]] && go=/usr/local/go/bin/go
  [[ -n $go ]] || { say "needs Go (1.24 or newer) on PATH to build versitygw $VERSION once"; exit 1; }
  say "building versitygw $VERSION with go install into $CACHE (once, about a minute)"
  local tmp="$CACHE.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  GOBIN="$tmp" "$go" install "github.com/versity/versitygw/cmd/versitygw@$VERSION" >"$tmp.log" 2>&1 \
    || { tail -n 20 "$tmp.log" >&2; say "go install failed"; exit 1; }
  rm -f "$tmp.log"
  # Renamed at the end so an interrupted build never leaves a half-written binary in the cache.
  rm -rf "$CACHE" && mv "$tmp" "$CACHE"
}

up() {
  build
  if running; then
    say "already running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"
  else
    if answers; then say "port $PORT answers but is not ours (no live pid in $PIDFILE)"; exit 1; fi
    # A bucket is a directory of the posix backend's root; made here, so the store needs no client.
    mkdir -p "$STATE/data/$BUCKET" "$STATE/meta"
    ROOT_ACCESS_KEY_ID="$ACCESS_KEY" ROOT_SECRET_ACCESS_KEY="$SECRET_KEY" \
      setsid "$BIN" --port "127.0.0.1:$PORT" --region us-east-1 --quiet --cors-allow-origin '*' \
      posix --sidecar "$STATE/meta" "$STATE/data" >"$LOG" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
    for _ in $(seq 100); do answers && break; pid_alive || break; sleep 0.1; done
    running || { tail -n 20 "$LOG" >&2; say "not answering after 10 s"; exit 1; }
    say "ready on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"), bucket $BUCKET, log $LOG)"
  fi
  echo "export FILES_S3_ENDPOINT=http://127.0.0.1:$PORT"
  echo "export FILES_S3_BUCKET=$BUCKET"
  # The region and credentials are the AWS SDK's own variables (its default chain), not the service's settings.
  echo "export AWS_REGION=us-east-1"
  echo "export AWS_ACCESS_KEY_ID=$ACCESS_KEY"
  echo "export AWS_SECRET_ACCESS_KEY=$SECRET_KEY"
}

down() {
  if pid_alive; then
    local pid; pid="$(cat "$PIDFILE")"
    kill "$pid" 2>/dev/null || true
    stop_pid "$pid" 5
  else
    say "not running"
  fi
  rm -f "$PIDFILE"
}

status() {
  if running; then say "running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"; else say "not running"; exit 3; fi
}

case "${1:-}" in
  up|down|status) "$1" ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
