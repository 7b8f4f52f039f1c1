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
broker_pid=""
suite_pids=()
cleanup() {
  for s in $suites; do
    [[ -f "$work/$s.pid" && ! -f "$work/$s.rc" ]] && kill -TERM "$(cat "$work/$s.pid")" 2>/dev/null
  done
  for p in "${suite_pids[@]}"; do wait "$p" 2>/dev/null; done
  if [[ "$broker" == kafka ]]; then
    python3 "$here/kafka_ctl.py" stop "$work/kafka" >/dev/null 2>&1
  else
    stop_sluice
  fi
  if [[ "$keep" == 1 ]]; then echo "groups: work dir kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# -- broker ------------------------------------------------------------------------------
start_sluice() { # on $port/$cport with log dir $work/data; returns 1 if it does not listen
  local from=0
  [[ -f "$broker_log" ]] && from=$(wc -l < "$broker_log")
  "$sluice" server \
    --set "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport" \
    --set "advertised.listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport" \
    --set "controller.quorum.bootstrap.servers=127.0.0.1:$cport" \
    --set "log.dirs=$work/data" \
    --set "group.initial.rebalance.delay.ms=0" \
    >> "$work/sluice.out" 2>> "$broker_log" < /dev/null &
  broker_pid=$!
  for _ in $(seq 300); do
    tail -n +$((from + 1)) "$broker_log" | grep -q "^sluice: listening on PLAINTEXT://127.0.0.1:$port" && return 0
    kill -0 "$broker_pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "run.sh: sluice did not start listening on 127.0.0.1:$port:" >&2
  tail -30 "$broker_log" >&2
  return 1
}
stop_sluice() { # SIGTERM, SIGKILL after 5 s; returns the exit code
  local rc=0
  [[ -n "$broker_pid" ]] || return 0
  kill -TERM "$broker_pid" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$broker_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$broker_pid" 2>/dev/null
  wait "$broker_pid" 2>/dev/null; rc=$?
  broker_pid=""
  return $rc
}
if [[ "$broker" == kafka ]]; then
  mkdir -p "$work/kafka"
  # kafka_local.py's single-node KRaft Kafka with group.initial.rebalance.delay.ms=0 and
  # offsets.topic.replication.factor=1
  bootstrap="$(python3 "$here/kafka_ctl.py" start "$work/kafka")" || {
    echo "run.sh: Kafka did not start" >&2; tail -30 "$work/kafka/kafka.out" >&2; exit 1; }
  broker_log="$work/kafka/kafka.out"
  what="Apache Kafka $(cat "$libs/VERSION" 2>/dev/null)"
else
  sluice="${SLUICE:-target/debug/sluice}"
  if [[ "$build" == 1 && -z "${SLUICE:-}" ]]; then
    cargo build -q -p sluice || { echo "run.sh: cargo build -p sluice failed" >&2; exit 1; }
  fi
  [[ -x "$sluice" ]] || { echo "run.sh: no $sluice (build it or set SLUICE)" >&2; exit 1; }
  read -r port cport < <(python3 -c '
import socket
s1, s2 = socket.socket(), socket.socket()
s1.bind(("127.0.0.1", 0)); s2.bind(("127.0.0.1", 0))
print(s1.getsockname()[1], s2.getsockname()[1])')
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
run_suite() {
  local s="$1" cmd
  suite_cmd "$s"
  # timeout(1) passes a SIGTERM on to the check, which cleanup() relies on
  (cd "$here" && exec "${cmd[@]}") > "$work/$s.out" 2> "$work/$s.err" < /dev/null &
  echo $! > "$work/$s.pid"
  wait $!
  echo $? > "$work/$s.rc"
}
for s in $suites; do
  if [[ "$serial" == 1 ]]; then
    run_suite "$s"
    [[ "$s" == restart ]] || cat "$work/$s.out"  # restart: printed after its 2nd phase
  else
    run_suite "$s" &
    suite_pids+=($!)
  fi
done
broker_alive() {
  if [[ "$broker" == kafka ]]; then kill -0 "$(cat "$work/kafka/kafka.pid" 2>/dev/null)" 2>/dev/null
  else [[ -n "$broker_pid" ]] && kill -0 "$broker_pid" 2>/dev/null; fi
}
broker_died=0
while :; do
  left=0
  for s in $suites; do [[ -f "$work/$s.rc" ]] || left=1; done
  [[ "$left" == 0 ]] && break
  if ! broker_alive; then
    broker_died=1
    for s in $suites; do
      [[ -f "$work/$s.pid" && ! -f "$work/$s.rc" ]] && kill -TERM "$(cat "$work/$s.pid")" 2>/dev/null
    done
    break
  fi
  sleep 0.2
done
for p in "${suite_pids[@]}"; do wait "$p"; done
suite_pids=()

# -- restart phase: after every other suite, restart the broker, read the offsets back --
extra_pass=0 extra_fail=0
if [[ " $suites " == *" restart "* && "$broker_died" == 0 && "$(cat "$work/restart.rc")" == 0 ]]; then
  mv "$work/restart.out" "$work/restart-prepare.out"
  t0=$(date +%s%N)
  if [[ "$broker" == kafka ]]; then
    python3 "$here/kafka_ctl.py" restart "$work/kafka" > /dev/null 2>> "$work/restart.err"; rc=$?
  else
    stop_sluice; src=$?
    rc=0
    if [[ "$src" != 0 ]]; then
      echo "FAIL restart: broker stops on SIGTERM: exit code $src" >> "$work/restart-phase.out"
      extra_fail=$((extra_fail + 1))
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
  elif [[ "$serial" != 1 ]]; then
    cat "$work/$s.out"
  fi
  rc="$(cat "$work/$s.rc" 2>/dev/null || echo '?')"
  p=$(grep -c '^PASS ' "$work/$s.out")
  f=$(grep -c '^FAIL ' "$work/$s.out")
  if [[ "$s" == restart && -f "$work/restart-prepare.out" ]]; then
    p=$((p + $(grep -c '^PASS ' "$work/restart-prepare.out")))
  fi
  if [[ "$rc" != 0 && "$f" == 0 ]] || [[ "$rc" == 0 && "$f" != 0 ]] || [[ "$p$f" == 00 ]]; then
    why="exit $rc"; [[ "$rc" == 124 ]] && why="timed out"; [[ "$rc" == 143 ]] && why="stopped"
    echo "FAIL $s: (suite) $why: $(grep -v '^\s*at ' "$work/$s.err" | tail -c 400 | tr '\n' ' ')"
    f=$((f + 1))
  fi
  passed=$((passed + p)); failed=$((failed + f))
done

if [[ "$broker" == sluice ]]; then
  if broker_alive; then
    passed=$((passed + 1)); echo "PASS broker: sluice still running after all suites"
  else
    failed=$((failed + 1))
    echo "FAIL broker: sluice exited during the run (the suites were stopped): $(tail -c 600 "$broker_log" | tr '\n' ' ')"
    broker_pid=""
  fi
elif [[ "$broker_died" == 1 ]]; then
  failed=$((failed + 1)); echo "FAIL broker: Kafka exited during the run (the suites were stopped)"
fi
if [[ "$failed" != 0 ]]; then
  if [[ "$broker" == sluice ]] && grep -qv '^sluice: listening on' "$broker_log"; then
    echo "groups: the broker's log (last lines):"
    grep -v '^sluice: listening on' "$broker_log" | tail -n 15 | sed 's/^/  /'
  fi
  if [[ "$keep" == 1 ]]; then
    echo "groups: each suite's stderr is in $work/SUITE.err, the broker's log in $broker_log"
  else
    echo "groups: rerun with --keep to keep each suite's stderr and the broker's log"
  fi
fi
elapsed_ms=$((($(date +%s%N) - started) / 1000000))
printf 'groups: ran against %s in %d.%ds\n' "$what" $((elapsed_ms / 1000)) $((elapsed_ms % 1000 / 100))
echo "groups: $passed passed, $failed failed"
[[ "$failed" == 0 ]]
