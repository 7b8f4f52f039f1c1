#!/usr/bin/env bash
# Transactions compat suite: Kafka's Java client and librdkafka, unchanged, using
# transactions against one broker, at transaction.version 1 and then 2.
#
#   compat/txn/run.sh            # against Sluice (target/debug/sluice, built first)
#   compat/txn/run.sh --kafka    # the same checks against Apache Kafka 4.1.1
#
# Options: --no-build (use target/debug/sluice as it is; SLUICE=path picks another
# binary), --serial (one suite at a time; default: all at once), --keep (keep the work
# dir with each suite's stderr and the broker's log), --only "SUITE ..." (some of:
# eos-java eos-rust rdkafka-txn zombie hanging tools broker-kill), --tv "1 2" (the transaction.version
# levels to run at, in order).
#
# For each level: kafka-features.sh (org.apache.kafka.tools.FeatureCommand) upgrade/
# downgrade --feature transaction.version=N, then describe must show that level (suite
# "features"); then the suites below at once, each line's suite named SUITE@tvN:
#   eos-java     TxnJava.java eos     the guide's consume-transform-produce loop in a JVM that
#                                     is SIGKILLed 3 times and restarted; every 5th transaction
#                                     aborted: each input exactly once in the output
#                                     (read_committed), committed offsets = input end offsets,
#                                     read_uncommitted sees the aborted records too
#   eos-rust     TxnJava.java eos     the same driver and checks with the processor written
#                                     with Sluice's Rust client (the transactional_processor
#                                     example of sluice-client; EOS_PROCESSOR)
#   rdkafka-txn  rdkafka_txn.py       orders/inventory/notifications transactions (commit and
#                                     abort) with send_offsets_to_transaction; read_committed /
#                                     read_uncommitted values and offsets; librdkafka fencing
#   zombie       TxnJava.java zombie  two producers, one transactional.id: ProducerFenced
#   hanging      hanging.py           a SIGKILLed producer's open transaction holds the LSO
#                                     until the coordinator aborts it (transaction.timeout.ms)
#   tools        tools_check.py       kafka-transactions.sh list, describe, describe-producers
#                                     and abort (WriteTxnMarkers from the admin client) on an
#                                     open transaction
# and then, alone:
#   broker-kill  broker_kill.py       the broker is SIGKILLed mid-transaction and right after a
#                                     commit returned, restarted (same ports and data dir):
#                                     the commit survives, the open transaction is aborted by
#                                     the next init_transactions
# Ends with "txn: N passed, M failed" and exits 1 if anything failed. Every suite is
# bounded (timeout 60-100 s); 55-80 s against Kafka, 40-60 s against Sluice on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
here="$root/compat/txn"

broker=sluice build=1 serial=0 keep=0
all_suites="eos-java eos-rust rdkafka-txn zombie hanging tools broker-kill"
only="$all_suites"
levels="1 2"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kafka) broker=kafka ;;
    --no-build) build=0 ;;
    --serial) serial=1 ;;
    --keep) keep=1 ;;
    --only) only="$2"; shift ;;
    --tv) levels="$2"; shift ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
for s in $only; do
  [[ " $all_suites " == *" $s "* ]] || { echo "run.sh: unknown suite $s (of: $all_suites)" >&2; exit 2; }
done
started=$(date +%s%N)

# -- tools -------------------------------------------------------------------------------
libs="$(compat/kafka/fetch-kafka.sh)" || { echo "run.sh: fetch-kafka.sh failed" >&2; exit 1; }
python3 -c 'import confluent_kafka' 2>/dev/null || python3 -m pip install -q confluent-kafka >&2

work="$(mktemp -d -t sluice-txn.XXXXXX)"
name=txn
suites=""
source "$root/compat/lib/suites.sh"
sluice_settings=(
  "offsets.topic.replication.factor=1"
  "transaction.state.log.replication.factor=1"
  "transaction.state.log.min.isr=1"
  "transaction.abort.timed.out.transaction.cleanup.interval.ms=500"
)
javac_pid=""
cleanup() {
  stop_suites
  [[ -n "$javac_pid" ]] && kill "$javac_pid" 2>/dev/null
  if [[ "$broker" == kafka ]]; then
    python3 "$root/compat/kafka/kafka_ctl.py" stop "$work/kafka" >/dev/null 2>&1
  else
    stop_sluice
  fi
  if [[ "$keep" == 1 ]]; then echo "txn: work dir kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

jvm=(java -Xms64m -Xmx512m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData
     "-Dlog4j2.configurationFile=$root/compat/kafka/log4j2.properties")

# -- the Java checks, compiled while the broker starts -----------------------------------
mkdir -p "$work/classes"
javac -nowarn -cp "$libs/*" -d "$work/classes" "$here/TxnJava.java" > "$work/javac.err" 2>&1 &
javac_pid=$!

# -- broker ------------------------------------------------------------------------------
if [[ "$broker" == kafka ]]; then
  mkdir -p "$work/kafka"
  # kafka_local.py's single-node KRaft Kafka with the transaction settings (Kafka only:
  # a broker restarted after a SIGKILL registers again only once the old registration's
  # session expires, so a short broker.session.timeout.ms keeps broker-kill quick)
  bootstrap="$(python3 "$root/compat/kafka/kafka_ctl.py" start "$work/kafka" \
    group.initial.rebalance.delay.ms=0 offsets.topic.replication.factor=1 \
    transaction.state.log.replication.factor=1 transaction.state.log.min.isr=1 \
    transaction.abort.timed.out.transaction.cleanup.interval.ms=500 \
    broker.session.timeout.ms=3000 broker.heartbeat.interval.ms=500)" || {
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
echo "txn: against $what at $bootstrap"
wait "$javac_pid"; javac_rc=$?; javac_pid=""

# -- suites ------------------------------------------------------------------------------
suite_cmd() { # sets cmd=(...) for suite $1 (SUITE@tvN)
  local s="${1%@*}"
  case "$s" in
    eos-java|zombie)
      if [[ "$javac_rc" != 0 ]]; then
        cmd=(sh -c "echo 'FAIL $1: (suite) javac TxnJava.java failed: $(tr '\n' ' ' < "$work/javac.err" | tr -d "'" | tail -c 300)'; exit 1")
      else
        cmd=(timeout 100 "${jvm[@]}" -cp "$work/classes:$libs/*" TxnJava "${s%-java}" "$bootstrap" "$1")
      fi ;;
    eos-rust)
      processor="$root/target/debug/examples/transactional_processor"
      if [[ "$javac_rc" != 0 ]]; then
        cmd=(sh -c "echo 'FAIL $1: (suite) javac TxnJava.java failed'; exit 1")
      elif [[ ! -x "$processor" ]]; then
        cmd=(sh -c "echo 'FAIL $1: (suite) no $processor (compat/build.sh builds it)'; exit 1")
      else
        cmd=(env EOS_PROCESSOR="$processor" timeout 100 "${jvm[@]}" -cp "$work/classes:$libs/*" TxnJava eos "$bootstrap" "$1")
      fi ;;
    rdkafka-txn) cmd=(timeout 60 python3 "$here/rdkafka_txn.py" "$bootstrap" "$1") ;;
    hanging) cmd=(timeout 60 python3 "$here/hanging.py" "$bootstrap" "$1") ;;
    tools) cmd=(timeout 90 python3 "$here/tools_check.py" "$bootstrap" "$libs" "$1") ;;
    *) cmd=(sh -c "echo 'FAIL $1: (suite) unknown suite'; exit 1") ;;
  esac
}

extra_pass=0 extra_fail=0
record() { # record PASS|FAIL LINE: print a line of run.sh's own and count it
  echo "$1 $2"
  if [[ "$1" == PASS ]]; then extra_pass=$((extra_pass + 1)); else extra_fail=$((extra_fail + 1)); fi
}
secs() { local ms=$((($(date +%s%N) - $1) / 1000000)); echo "$((ms / 1000)).$((ms % 1000 / 100))s"; }

# Sets transaction.version to $1 with kafka-features.sh and checks that describe shows it.
switch_level() {
  local v="$1" verb out level t0
  t0=$(date +%s%N)
  if [[ "$v" == 1 ]]; then verb=downgrade; else verb=upgrade; fi
  out="$(timeout 30 "${jvm[@]}" -cp "$libs/*" org.apache.kafka.tools.FeatureCommand \
         --bootstrap-server "$bootstrap" "$verb" --feature "transaction.version=$v" 2>&1 < /dev/null)"
  if [[ $? != 0 ]]; then
    record FAIL "features@tv$v: kafka-features.sh $verb --feature transaction.version=$v: $(grep -v '^\s*at ' <<< "$out" | tail -c 400 | tr '\n' ' ')"
    return
  fi
  out="$(timeout 30 "${jvm[@]}" -cp "$libs/*" org.apache.kafka.tools.FeatureCommand \
         --bootstrap-server "$bootstrap" describe 2>&1 < /dev/null)"
  level="$(sed -n 's/^Feature: transaction\.version\s.*FinalizedVersionLevel: \([0-9]*\).*/\1/p' <<< "$out")"
  if [[ "$level" == "$v" ]]; then
    record PASS "features@tv$v: kafka-features.sh $verb --feature transaction.version=$v, then describe shows FinalizedVersionLevel: $v ($(secs "$t0"))"
  else
    record FAIL "features@tv$v: kafka-features.sh $verb --feature transaction.version=$v succeeded but describe shows ${level:-no transaction.version}: $(grep -v '^\s*at ' <<< "$out" | grep -i 'transaction\|error\|exception' | tail -c 300 | tr '\n' ' ')"
  fi
}

broker_pid_now() {
  if [[ "$broker" == kafka ]]; then cat "$work/kafka/kafka.pid"; else echo "$broker_pid"; fi
}

# broker-kill at level $1: prepare (which SIGKILLs the broker), restart, verify.
broker_kill() {
  local s="broker-kill@tv$1" t0 rc
  local out="$work/$s.out" err="$work/$s.err"
  : > "$out"
  # (in braces: bash's "Killed" notice about Sluice, its child, goes to $err too)
  { (cd "$here" && exec timeout 60 python3 "$here/broker_kill.py" prepare "$bootstrap" \
       "$work/$s.json" "$(broker_pid_now)" "$s") >> "$out" < /dev/null
    rc=$?; } 2>> "$err"
  # the broker is dead now (or should be): make sure, then start it again
  t0=$(date +%s%N)
  if [[ "$broker" == kafka ]]; then
    python3 "$root/compat/kafka/kafka_ctl.py" kill "$work/kafka" 2>> "$err"
    python3 "$root/compat/kafka/kafka_ctl.py" restart "$work/kafka" > /dev/null 2>> "$err"
  else
    { kill -KILL "$broker_pid"; wait "$broker_pid"; } 2>/dev/null
    broker_pid=""
    start_sluice 2>> "$err"
  fi
  if [[ $? == 0 ]]; then
    echo "PASS $s: broker restarted after the SIGKILL on the same ports and data dir ($(secs "$t0"))" >> "$out"
  else
    echo "FAIL $s: broker restarted after the SIGKILL on the same ports and data dir: $(tail -c 400 "$err" | tr '\n' ' ')" >> "$out"
    echo 1 > "$work/$s.rc"
    return
  fi
  if [[ "$rc" == 0 ]]; then
    (cd "$here" && exec timeout 60 python3 "$here/broker_kill.py" verify "$bootstrap" \
       "$work/$s.json" "$s") >> "$out" 2>> "$err" < /dev/null
    rc=$?
  else
    echo "FAIL $s: checks after the restart: skipped (the preparation failed)" >> "$out"
  fi
  echo "$rc" > "$work/$s.rc"
}

ran_suites=""
for v in $levels; do
  if ! broker_alive; then
    record FAIL "tv$v: (phase) skipped: the broker is not running"
    continue
  fi
  switch_level "$v"
  suites=""
  for s in $only; do [[ "$s" != broker-kill ]] && suites+="$s@tv$v "; done
  if [[ -n "$suites" ]]; then
    run_suites
    for s in $suites; do [[ "$serial" == 1 ]] || cat "$work/$s.out"; done
    ran_suites+="$suites"
    [[ "$broker_died" == 1 ]] && break  # finish_suites reports it
  fi
  if [[ " $only " == *" broker-kill "* ]]; then
    broker_kill "$v"
    cat "$work/broker-kill@tv$v.out"
    ran_suites+="broker-kill@tv$v "
  fi
done

passed=$extra_pass failed=$extra_fail
suites="$ran_suites"
for s in $suites; do tally_suite "$s"; done
finish_suites
