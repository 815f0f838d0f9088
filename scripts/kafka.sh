#!/usr/bin/env bash
# Single-node Apache Kafka (KRaft, broker+controller in one JVM) for local runs and tests, no Docker.
#   scripts/kafka.sh up|down|status      env: KAFKA_PORT (19092), KAFKA_CONTROLLER_PORT (19093),
#                                        KAFKA_SASL_PORT (19094), KAFKA_SCRAM_USER (pin),
#                                        KAFKA_SCRAM_PASSWORD (pin-local-secret),
#                                        PIN_CACHE_DIR, PIN_STATE_DIR (/tmp/pin-services: pid, log,
#                                        data/ and its cluster.id under kafka/), KAFKA_LOG_LEVEL (WARN),
#                                        KAFKA_READY_TIMEOUT_MS (120000: a JVM start on a loaded 2-core box)
#
# Two client listeners: PLAINTEXT on KAFKA_PORT (no authentication; what the tests and `npm start` use)
# and SASL_PLAINTEXT on KAFKA_SASL_PORT, which accepts SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN for the
# one local user KAFKA_SCRAM_USER (so the client's SASL settings are tested against a real broker).
# The SCRAM credentials are written into the metadata log when the data dir is formatted
# (`kafka-storage format --add-scram`, KIP-900): a changed password needs `down` + `up`; a data dir
# formatted before this listener existed is formatted again at `up`.
#
# Version: Kafka 4.4.0 (the newest on Maven Central when chosen; set in scripts/kafka/pom.xml).
# Kafka 4.0 dropped the protocol versions older than Kafka 2.1 (KIP-896); kafkajs 2.2.4 negotiates
# newer ones through ApiVersions, and a real check against 4.4.0 passed: admin createTopics/
# fetchTopicMetadata/fetchOffsets, idempotent producer with headers, consumer group subscribe/run/
# commitOffsets/pause/resume/seek. So no fallback to 3.9.x is needed.
# auto.create.topics.enable stays true (Kafka's default); code should still create its topics
# explicitly, because producing to a missing topic would then silently get num.partitions=6.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
POM="$ROOT/scripts/kafka/pom.xml"
VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM")"
LIBS="${PIN_CACHE_DIR:-$HOME/.cache/pin-platform-jobs}/kafka-$VERSION/libs"
STATE="${PIN_STATE_DIR:-/tmp/pin-services}/kafka"
PORT="${KAFKA_PORT:-19092}"
CPORT="${KAFKA_CONTROLLER_PORT:-19093}"
SASL_PORT="${KAFKA_SASL_PORT:-19094}"
SCRAM_USER="${KAFKA_SCRAM_USER:-pin}" SCRAM_PASSWORD="${KAFKA_SCRAM_PASSWORD:-pin-local-secret}"
PIDFILE="$STATE/kafka.pid" LOG="$STATE/kafka.log" DATA="$STATE/data" CLUSTER_ID_FILE="$STATE/cluster.id"
# Written at format time beside cluster.id: this data dir holds the SCRAM user (a dir formatted by an
# older kafka.sh does not, and its SASL listener refuses every login).
SCRAM_FILE="$STATE/scram.user"

SERVICE=kafka
# shellcheck source=service-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/service-lib.sh"
running() { pid_alive && port_open "$PORT"; }

fetch_jars() {
  [[ -f $LIBS/kafka_2.13-$VERSION.jar ]] && return
  say "fetching Kafka $VERSION jars from Maven Central into $LIBS (once)"
  local tmp="$LIBS.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  # Output kept aside: on success Debian's Maven 3.8 prints nothing but stray ANSI resets.
  mvn -B -q -f "$POM" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$tmp" >"$tmp.log" 2>&1 || { cat "$tmp.log" >&2; say "maven fetch failed"; exit 1; }
  rm -f "$tmp.log"
  # Rename at the end so an interrupted fetch never leaves a half-filled cache behind.
  rm -rf "$LIBS" && mv "$tmp" "$LIBS"
}

server_properties() {
  cat <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CPORT
listeners=PLAINTEXT://127.0.0.1:$PORT,SASL_PLAINTEXT://127.0.0.1:$SASL_PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT,SASL_PLAINTEXT://127.0.0.1:$SASL_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
# The SASL listener: SCRAM users come from the metadata log (added at format time); PLAIN's one
# user is declared here, with the same name and password.
listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$SCRAM_USER="$SCRAM_PASSWORD";
log.dirs=$DATA
num.partitions=6
auto.create.topics.enable=true
# One node: every internal topic must live with replication 1.
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
# Fewer partitions than the default 50 for the lazily created internal topics: the first
# group join / idempotent producer on a fresh broker gets going sooner.
offsets.topic.num.partitions=6
transaction.state.log.num.partitions=6
# Tests join groups constantly; no point waiting 3 s for more members.
group.initial.rebalance.delay.ms=0
# The fault suite kills consumers many times a minute: their sessions may be as short as 1 s
# (the broker's default floor is 6 s) so a restarted replica soon gets its partitions back.
group.min.session.timeout.ms=1000
EOF
}

# A broker started by an older kafka.sh runs with another server.properties than this one writes.
config_current() { [[ "$(server_properties)" == "$(cat "$STATE/server.properties" 2>/dev/null)" ]]; }

write_config() {
  server_properties >"$STATE/server.properties"
  # Kafka 4.x logs through log4j2. Console goes to kafka.log via the redirect in up(), so JVM
  # crashes land in the same file. WARN by default; the one INFO line is what up() waits for.
  cat >"$STATE/log4j2.properties" <<EOF
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = ${KAFKA_LOG_LEVEL:-WARN}
rootLogger.appenderRef.out.ref = OUT
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = INFO
EOF
}

up() {
  if running; then
    if config_current; then say "already running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"; exports; return; fi
    # Only a JVM started on this state dir's config: a stale pid file may name some other process.
    if ! tr '\0' ' ' <"/proc/$(cat "$PIDFILE")/cmdline" 2>/dev/null | grep -qF "kafka.Kafka $STATE/server.properties"; then
      say "pid $(cat "$PIDFILE") is not the broker of $STATE; not touching it"; exit 1
    fi
    say "running with an older server.properties: restarting it with this one"; stop_broker
  fi
  if pid_alive; then say "pid $(cat "$PIDFILE") alive but port $PORT closed; restarting"; stop_broker; fi
  if port_open "$PORT" || port_open "$CPORT" || port_open "$SASL_PORT"; then
    say "port $PORT, $CPORT or $SASL_PORT is taken by another process"; exit 1
  fi
  command -v java >/dev/null || { say "java (17+) not found on PATH"; exit 1; }
  fetch_jars
  write_config
  local t0; t0=$(now_ms); local jvm=(java -Xms256m -Xmx768m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
    "-Dlog4j2.configurationFile=$STATE/log4j2.properties" -cp "$LIBS/*")
  # The cluster id lives beside the data ($CLUSTER_ID_FILE) and is the one the data dir was
  # formatted with: a data dir left by a killed broker (or a reboot) is started as is, with no
  # format at all — formatting it again under a new id fails the broker with "Invalid cluster.id".
  # Only a fresh dir is formatted, with an id from Kafka's own generator: a hand-made base64url id
  # starts with '-' one time in 64 and is then read by StorageTool as an option.
  if [[ -f $DATA/meta.properties && ! -f $SCRAM_FILE ]]; then
    # Formatted by an older kafka.sh, without the SCRAM user its SASL listener needs. This broker is
    # local and throwaway, so it is formatted again, knowingly, rather than left refusing every login.
    say "the data dir predates the SASL listener (no SCRAM user in it): formatting it again (its topics are dropped)"
    rm -rf "$DATA" "$CLUSTER_ID_FILE"
  fi
  if [[ ! -f $DATA/meta.properties ]]; then
    if [[ ! -s $CLUSTER_ID_FILE ]]; then
      # The id alone on its line (the console logger shares stdout).
      local id; id="$("${jvm[@]}" kafka.tools.StorageTool random-uuid 2>"$LOG" | grep -Ex '[A-Za-z0-9_-]{22}' | tail -n 1)" || true
      [[ -n $id ]] || { tail -n 20 "$LOG" >&2; say "random-uuid failed"; exit 1; }
      echo "$id" >"$CLUSTER_ID_FILE.tmp" && mv "$CLUSTER_ID_FILE.tmp" "$CLUSTER_ID_FILE"
    fi
    local scram="name=$SCRAM_USER,password=$SCRAM_PASSWORD"
    "${jvm[@]}" kafka.tools.StorageTool format --config "$STATE/server.properties" \
      "--cluster-id=$(cat "$CLUSTER_ID_FILE")" --add-scram "SCRAM-SHA-256=[$scram]" --add-scram "SCRAM-SHA-512=[$scram]" >"$LOG" 2>&1 \
      || { tail -n 20 "$LOG" >&2; say "storage format failed"; exit 1; }
    echo "$SCRAM_USER" >"$SCRAM_FILE"
  fi
  : >"$LOG"
  # setsid+nohup: the broker outlives this shell and its terminal; both exec, so $! is the JVM.
  setsid nohup "${jvm[@]}" kafka.Kafka "$STATE/server.properties" >>"$LOG" 2>&1 </dev/null 9>&- &
  echo $! >"$PIDFILE"
  # A JVM per poll would be slow; the broker logs this line once it serves requests.
  until grep -q 'Kafka Server started' "$LOG" && port_open "$PORT"; do
    if ! pid_alive || (( $(now_ms) - t0 > ${KAFKA_READY_TIMEOUT_MS:-120000} )); then
      tail -n 30 "$LOG" >&2; say "not ready within ${KAFKA_READY_TIMEOUT_MS:-120000} ms"; exit 1
    fi
    sleep 0.2
  done
  say "Kafka $VERSION ready on 127.0.0.1:$PORT (SASL on $SASL_PORT) in $(( $(now_ms) - t0 )) ms (pid $(cat "$PIDFILE"), log $LOG)"
  exports
}

# KAFKA_SASL_BROKERS only when that listener really takes the SCRAM user: a broker started by an older
# kafka.sh (no such listener) or on an older data dir (no such user) would fail SASL tests obscurely.
exports() {
  echo "export KAFKA_BROKERS=127.0.0.1:$PORT"
  if port_open "$SASL_PORT" && [[ -f $SCRAM_FILE ]]; then echo "export KAFKA_SASL_BROKERS=127.0.0.1:$SASL_PORT"; fi
}

# Stops the broker and keeps its data (and cluster id) for the next start.
stop_broker() {
  if pid_alive; then
    local pid; pid="$(cat "$PIDFILE")"
    kill "$pid"
    stop_pid "$pid" 20 # a clean single-node shutdown takes a few seconds; do not wait forever
  else
    say "not running"
  fi
  rm -f "$PIDFILE"
}

down() {
  stop_broker
  # The data (and with it its cluster id) dies with `down`; a crash keeps both for the next `up`.
  rm -rf "$PIDFILE" "$DATA" "$CLUSTER_ID_FILE" "$SCRAM_FILE"
}

status() {
  if running; then say "running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"; else say "not running"; exit 3; fi
}

case "${1:-}" in
  up|down)
    # Serialise concurrent up/down (e.g. parallel test runners); the broker itself gets 9>&-.
    mkdir -p "$STATE"
    exec 9>"$STATE.lock"
    flock 9
    "$1" ;;
  status) "$1" ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
