#!/usr/bin/env bash
# Third-party client compat suite (issue 3): Kafka clients and tools, unchanged, against
# one broker.
#
#   compat/clients/run.sh            # against Sluice (target/debug/sluice, built first)
#   compat/clients/run.sh --kafka    # the same checks against Apache Kafka 4.1.1
#
# Options: --no-build (use target/debug/sluice as it is; SLUICE=path picks another
# binary), --serial (one suite at a time; default: all suites at once), --keep (keep the
# work dir with each suite's stderr and the broker's log), --only "SUITE ..." (some of:
# confluent kafka-python kcat java kafka-tools).
#
# Suites (each prints "PASS <suite>: <check>" / "FAIL <suite>: <check>: <reason>"):
#   confluent     confluent_check.py     librdkafka via confluent-kafka: every codec, admin
#   kafka-python  kafka_python_check.py  the pure-Python client
#   kcat          kcat_check.sh          kcat -L/-P/-C/-Q
#   java          JavaClients.java       KafkaProducer (defaults), KafkaConsumer, Admin
#   kafka-tools   java_tools_check.sh    kafka-topics, kafka-configs, console producer and
#                                        consumer, kafka-get-offsets
# Ends with "clients: N passed, M failed" and exits 1 if anything failed. Installs what
# is missing: kafka-python and confluent-kafka (pip), kcat (apt), Kafka's jars
# (compat/kafka/fetch-kafka.sh). About 10 s against Sluice and 20 s against Kafka on an idle
# 2-core machine; bounded (about 45 s) when the broker answers nothing.
set -uo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
here="$root/compat/clients"

broker=sluice build=1 serial=0 keep=0
suites="confluent kafka-python kcat java kafka-tools"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kafka) broker=kafka ;;
    --no-build) build=0 ;;
    --serial) serial=1 ;;
    --keep) keep=1 ;;
    --only) suites="$2"; shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
started=$(date +%s%N)

# -- tools -------------------------------------------------------------------------------
libs="$(compat/kafka/fetch-kafka.sh)" || { echo "run.sh: fetch-kafka.sh failed" >&2; exit 1; }
python3 -c 'import kafka' 2>/dev/null || python3 -m pip install -q kafka-python >&2
python3 -c 'import confluent_kafka' 2>/dev/null || python3 -m pip install -q confluent-kafka >&2
if ! command -v kcat >/dev/null; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat; } >&2 \
    || echo "run.sh: could not install kcat" >&2
fi

work="$(mktemp -d -t sluice-clients.XXXXXX)"
name=clients
source "$root/compat/lib/suites.sh"
cleanup() {
  stop_suites
  if [[ "$broker" == kafka ]]; then
    compat/kafka/run-kafka.sh stop "$work/kafka" >/dev/null 2>&1
  else
    stop_sluice
  fi
  if [[ "$keep" == 1 ]]; then echo "clients: work dir kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# -- broker ------------------------------------------------------------------------------
if [[ "$broker" == kafka ]]; then
  mkdir -p "$work/kafka"
  # kafka_local.py's single-node KRaft Kafka, plus the settings of Kafka's shipped
  # server.properties that Sluice's embedded default has and kafka_local.py does not (so
  # that both brokers run with the same configuration: describe-configs output names
  # static settings), and Kafka's default auto topic creation (on), as Sluice has it.
  bootstrap="$(python3 - "$work/kafka" <<'PY'
import sys
sys.path.insert(0, "compat/kafka")
from kafka_local import LocalKafka
k = LocalKafka(sys.argv[1], extra_props={
    "auto.create.topics.enable": "true",
    "num.network.threads": "3", "num.io.threads": "8",
    "socket.send.buffer.bytes": "102400", "socket.receive.buffer.bytes": "102400",
    "socket.request.max.bytes": "104857600",
    "log.retention.hours": "168", "log.segment.bytes": "1073741824",
    "log.retention.check.interval.ms": "300000",
})
k.start(detach=True)
try:
    k.wait_ready()
except BaseException:
    k.stop()
    raise
print(k.bootstrap)
PY
)" || {
    echo "run.sh: Kafka did not start" >&2; tail -30 "$work/kafka/kafka.out" >&2; exit 1; }
  broker_log="$work/kafka/kafka.out"
  what="Apache Kafka $(cat "$libs/VERSION" 2>/dev/null)"
else
  sluice="${SLUICE:-target/debug/sluice}"
  if [[ "$build" == 1 && -z "${SLUICE:-}" ]]; then
    compat/build.sh || { echo "run.sh: compat/build.sh failed" >&2; exit 1; }
  fi
  [[ -x "$sluice" ]] || { echo "run.sh: no $sluice (build it or set SLUICE)" >&2; exit 1; }
  read -r port cport < <(free_ports)
  mkdir -p "$work/data"
  broker_log="$work/sluice.err"
  start_sluice || exit 1
  bootstrap="127.0.0.1:$port"
  what="Sluice ($sluice)"
fi
echo "clients: against $what at $bootstrap"

# -- suites ------------------------------------------------------------------------------
suite_cmd() { # sets cmd=(...) for suite $1
  case "$1" in
    confluent) cmd=(timeout 70 python3 "$here/confluent_check.py" "$bootstrap") ;;
    kafka-python) cmd=(timeout 70 python3 "$here/kafka_python_check.py" "$bootstrap") ;;
    kcat) cmd=(timeout 70 "$here/kcat_check.sh" "$bootstrap") ;;
    java) cmd=(timeout 75 java -Xms64m -Xmx512m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
            -XX:-UsePerfData "-Dlog4j2.configurationFile=$root/compat/kafka/log4j2.properties"
            -cp "$libs/*" "$here/JavaClients.java" "$bootstrap") ;;
    kafka-tools) cmd=(timeout 80 "$here/java_tools_check.sh" "$bootstrap" "$libs") ;;
    *) cmd=(sh -c "echo 'FAIL $1: (suite) unknown suite'; exit 1") ;;
  esac
}
run_suites
for s in $suites; do
  [[ "$serial" == 1 ]] || cat "$work/$s.out"
  tally_suite "$s"
done
finish_suites
