#!/usr/bin/env bash
# Starts/stops the local services the app talks to, without Docker.
#   scripts/services.sh up|down|status     env: PIN_SERVICES (default "kafka redis elasticsearch objectstore")
# `up` prints the settings to use on stdout, one `export NAME=value` per line, so
#   eval "$(bash scripts/services.sh up)"
# configures the current shell; progress goes to stderr. KAFKA_SASL_BROKERS (the broker's SASL listener)
# is for the tests of the Kafka SASL settings; the service itself does not read it. objectstore is the
# S3-compatible store of the messenger's files (scripts/objectstore.sh; its FILES_S3_* settings and the AWS SDK's AWS_* variables).
set -euo pipefail

DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SERVICES="${PIN_SERVICES:-kafka redis elasticsearch objectstore}"

run() { # run <service> <action>
  case "$1" in
    # 9>&-: the services started here must not inherit the lock's descriptor (they would hold it for good).
    kafka | redis | elasticsearch | objectstore) bash "$DIR/$1.sh" "$2" 9>&- ;;
    # HOOK: PostgreSQL is started by the Node code itself (embedded-postgres when DATABASE_URL
    # is unset), so there is nothing to do here. A script-managed Postgres would plug in here.
    postgres) echo "postgres: started by the app (embedded-postgres), nothing to do" >&2 ;;
  esac
}

# Check every name first, so a typo does not leave half the services started.
for s in $SERVICES; do
  case "$s" in kafka | redis | elasticsearch | objectstore | postgres) ;; *) echo "services: unknown service '$s' in PIN_SERVICES" >&2; exit 2 ;; esac
done

# One `up` or `down` at a time on this machine: two test runs starting at once (a CI run beside a
# developer's) would otherwise both find a service down, both start it, and the loser's pid file
# would name a process that failed to bind while the winner's runs untracked.
mkdir -p /tmp/pin-services
exec 9>/tmp/pin-services/.lock
flock 9

case "${1:-}" in
  up)
    # Each `up` prints its export line on stdout; collect them and print them at the end.
    exports=""
    for s in $SERVICES; do exports+="$(run "$s" up)"$'\n'; done
    printf '%s' "$exports" | sed '/^$/d'
    ;;
  down | status)
    # Reverse order for down; keep going past a failure so one broken service does not strand the rest.
    rc=0
    for s in $(printf '%s\n' $SERVICES | tac); do run "$s" "$1" || rc=1; done
    exit "$rc"
    ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
