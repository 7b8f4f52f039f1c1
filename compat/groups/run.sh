#!/usr/bin/env bash
# Consumer-group compat suite: Kafka clients and tools, unchanged, in consumer groups
# against one broker.
#
#   compat/groups/run.sh            # against Sluice (target/debug/sluice, built first)
#   compat/groups/run.sh --kafka    # the same checks against Apache Kafka 4.1.1
#
# Options: --no-build (use target/debug/sluice as it is; SLUICE=path picks another
# binary), --serial (one suite at a time; default: all at once), --keep (keep the work
# dir with each suite's stderr and the broker's log), --only "SUITE ..." (some of:
# rdkafka-assign rdkafka-failover rdkafka-commits java kafka-python kafka-tools restart).
#
# Suites (each prints "PASS <suite>: <check>" / "FAIL <suite>: <check>: <reason>"):
#   rdkafka-assign    rdkafka_assign.py      librdkafka: range 3/6/8 members; cooperative-
#                                            sticky vs eager revocations when a member joins
#   rdkafka-failover  rdkafka_failover.py    a member joins, one is SIGKILLed: per generation
#                                            no partition consumed twice; static membership
#   rdkafka-commits   rdkafka_commits.py     auto-commit, sync, async+callback; at-least-once
#                                            across a SIGKILL
#   java              GroupsJava.java        Java consumer: cooperative-sticky vs eager, mixed
#                                            Java + librdkafka group, commitSync/commitAsync/
#                                            auto-commit, KIP-848 group.protocol=consumer
#   kafka-python      kafka_python_groups.py kafka-python group: split, commit
#   kafka-tools       tools_check.py         kafka-consumer-groups --list/--describe/--members/
#                                            --reset-offsets/--delete
#   restart           restart_check.py       commits (run with the suites above), then the
#                                            broker is restarted (SIGTERM, same ports and log
#                                            dir) once they are done, then the offsets are read
# Ends with "groups: N passed, M failed" and exits 1 if anything failed. About 25 s
# against Sluice and 35 s against Kafka on 2 cores; every suite is bounded (90 s).
set -uo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
here="$root/compat/groups"

broker=sluice build=1 serial=0 keep=0
suites="rdkafka-assign rdkafka-failover rdkafka-commits java kafka-python kafka-tools restart"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kafka) broker=kafka ;;
    --no-build) build=0 ;;
    --serial) serial=1 ;;
    --keep) keep=1 ;;
    --only) suites="$2"; shift ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
started=$(date +%s%N)

# -- tools -------------------------------------------------------------------------------
libs="$(compat/kafka/fetch-kafka.sh)" || { echo "run.sh: fetch-kafka.sh failed" >&2; exit 1; }
python3 -c 'import kafka' 2>/dev/null || python3 -m pip install -q kafka-python >&2
python3 -c 'import confluent_kafka' 2>/dev/null || python3 -m pip install -q confluent-kafka >&2

work="$(mktemp -d -t sluice-groups.XXXXXX)"
name=groups
deferred_output=restart  # printed after the restart phase
source "$root/compat/lib/suites.sh"
cleanup() {
  stop_suites
  if [[ "$broker" == kafka ]]; then
    python3 "$root/compat/kafka/kafka_ctl.py" stop "$work/kafka" >/dev/null 2>&1
  else
    stop_sluice
  fi
  if [[ "$keep" == 1 ]]; then echo "groups: work dir kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# -- broker ------------------------------------------------------------------------------
if [[ "$broker" == kafka ]]; then
  mkdir -p "$work/kafka"
  # kafka_local.py's single-node KRaft Kafka with group.initial.rebalance.delay.ms=0 and
  # offsets.topic.replication.factor=1
  bootstrap="$(python3 "$root/compat/kafka/kafka_ctl.py" start "$work/kafka" \
    group.initial.rebalance.delay.ms=0 offsets.topic.replication.factor=1)" || {
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
echo "groups: against $what at $bootstrap"

# -- suites ------------------------------------------------------------------------------
suite_cmd() { # sets cmd=(...) for suite $1
  case "$1" in
    rdkafka-assign) cmd=(timeout 90 python3 "$here/rdkafka_assign.py" "$bootstrap") ;;
    rdkafka-failover) cmd=(timeout 90 python3 "$here/rdkafka_failover.py" "$bootstrap") ;;
    rdkafka-commits) cmd=(timeout 90 python3 "$here/rdkafka_commits.py" "$bootstrap") ;;
    kafka-python) cmd=(timeout 90 python3 "$here/kafka_python_groups.py" "$bootstrap") ;;
    kafka-tools) cmd=(timeout 90 python3 "$here/tools_check.py" "$bootstrap" "$libs") ;;
    java) cmd=(timeout 100 java -Xms64m -Xmx512m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
            -XX:-UsePerfData "-Dlog4j2.configurationFile=$root/compat/kafka/log4j2.properties"
            "-Dgroups.dir=$here" -cp "$libs/*" "$here/GroupsJava.java" "$bootstrap") ;;
    restart) cmd=(timeout 60 python3 "$here/restart_check.py" prepare "$bootstrap" "$work/restart.json") ;;
    *) cmd=(sh -c "echo 'FAIL $1: (suite) unknown suite'; exit 1") ;;
  esac
}
run_suites

# -- restart phase: after every other suite, restart the broker, read the offsets back --
extra_pass=0 extra_fail=0
if [[ " $suites " == *" restart "* && "$broker_died" == 0 && "$(cat "$work/restart.rc")" == 0 ]]; then
  mv "$work/restart.out" "$work/restart-prepare.out"
  t0=$(date +%s%N)
  if [[ "$broker" == kafka ]]; then
    python3 "$root/compat/kafka/kafka_ctl.py" restart "$work/kafka" > /dev/null 2>> "$work/restart.err"; rc=$?
  else
    stopping_from=$(wc -l < "$broker_log")
    stop_sluice; src=$?
    rc=0
    if [[ "$src" != 0 ]]; then
      echo "FAIL restart: broker stops on SIGTERM: exit code $src after $((stop_ms / 1000)).$((stop_ms % 1000 / 100))s;" \
        "its log since the signal: $(tail -n +$((stopping_from + 1)) "$broker_log" | tail -c 1500 | tr '\n' ' ')" \
        >> "$work/restart-phase.out"
      extra_fail=$((extra_fail + 1))
    else
      echo "PASS restart: broker stops on SIGTERM ($((stop_ms / 1000)).$((stop_ms % 1000 / 100))s)" >> "$work/restart-phase.out"
      extra_pass=$((extra_pass + 1))
    fi
    start_sluice 2>> "$work/restart.err" || rc=1
  fi
  ms=$((($(date +%s%N) - t0) / 1000000))
  if [[ "$rc" == 0 ]]; then
    echo "PASS restart: broker restarted on the same ports and log dir ($((ms / 1000)).$((ms % 1000 / 100))s)" \
      >> "$work/restart-phase.out"
    extra_pass=$((extra_pass + 1))
    (cd "$here" && exec timeout 60 python3 "$here/restart_check.py" verify "$bootstrap" "$work/restart.json") \
      > "$work/restart.out" 2>> "$work/restart.err" < /dev/null
    echo $? > "$work/restart.rc"
  else
    echo "FAIL restart: broker restarted on the same ports and log dir: $(tail -c 400 "$work/restart.err" | tr '\n' ' ')" \
      >> "$work/restart-phase.out"
    extra_fail=$((extra_fail + 1))
    printf 'FAIL restart: committed offsets and metadata read back after the restart: skipped (no broker)\n' > "$work/restart.out"
    echo 1 > "$work/restart.rc"
  fi
fi

passed=$extra_pass failed=$extra_fail
for s in $suites; do
  if [[ "$s" == restart ]]; then
    cat "$work/restart-prepare.out" "$work/restart-phase.out" "$work/restart.out" 2>/dev/null
    tally_suite restart "$work/restart.out" \
      "$(grep -c '^PASS ' "$work/restart-prepare.out" 2>/dev/null)"
  else
    [[ "$serial" == 1 ]] || cat "$work/$s.out"
    tally_suite "$s"
  fi
done
finish_suites
