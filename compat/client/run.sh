#!/usr/bin/env bash
# Native client compat suite: Sluice's Rust producer and consumer (crates/sluice-client) against one
# broker, judged by third-party clients: librdkafka (confluent-kafka), Kafka's Java
# producer and Kafka's tools.
#
#   compat/client/run.sh            # against Sluice (target/debug/sluice, built first)
#   compat/client/run.sh --kafka    # the same checks against Apache Kafka 4.1.1
#
# Options: --no-build (use target/debug/sluice and target/debug/examples/client_compat as
# they are; SLUICE=path / CLIENT_COMPAT=path pick other binaries), --serial (one suite at
# a time; default: all at once), --keep (keep the work dir with each suite's stderr and the
# broker's log), --only "SUITE ..." (some of: roundtrip consume murmur2 txn fresh mixed-group restart).
#
# The producer is driven through crates/sluice-client/examples/client_compat.rs. Suites
# (details in each script's docstring and README.md), at once:
#   roundtrip  roundtrip.py  every codec (none gzip snappy lz4 zstd): 400 keyed records with
#                            headers, null/empty values and CreateTime timestamps, read back
#                            by librdkafka at the reported offsets, in order; keyed records
#                            on librdkafka's murmur2_random partition; the segment files
#                            carry the codec (Kafka's DumpLogSegments)
#   consume    consume.py    every codec the other way: librdkafka writes 300 keyed records
#                            with headers, `sluice consume` (the native consumer) prints each
#                            at the reported partition and offset, in order, nothing else
#   murmur2    murmur2.py    300 keys: the native producer's partition equals Kafka's Java
#                            producer's (JavaPartitions.java) and librdkafka's
#   txn        txn.py        commit, abort (records acknowledged first), commit:
#                            read_committed sees only the committed records, in order;
#                            kafka-transactions.sh list/describe show the transactional id
#   fresh      fresh.py      3 freshly created 6-partition topics, each sent 50,000 1 KiB
#                            records at once by an idempotent producer (Kafka answers
#                            NOT_LEADER_OR_FOLLOWER for a moment on such partitions): every
#                            record acknowledged once, read back by librdkafka exactly once
#                            at its offset, in send order per partition
#   mixed-group mixed_group.sh 2 Sluice consumers + 1 Java consumer, cooperative-sticky, in
#                            one group: 6 partitions split 2/2/2; the Java member's join
#                            revokes only the moved partitions (the consumer's acceptance;
#                            the test lives in crates/sluice-client/tests/consumer.rs)
# and then, alone:
#   restart    restart.py    an idempotent stream of 6,000 records; the broker is SIGKILLed
#                            mid-stream and restarted (same ports and data dir): every
#                            record acknowledged, each exactly once, in order per partition
# Ends with "client: N passed, M failed" and exits 1 if anything failed. About 20 s
# against Sluice and 25 s against Kafka on 2 cores, plus the build.
set -uo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
here="$root/compat/client"

broker=sluice build=1 serial=0 keep=0
all_suites="roundtrip consume murmur2 txn fresh mixed-group restart"
only="$all_suites"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kafka) broker=kafka ;;
    --no-build) build=0 ;;
    --serial) serial=1 ;;
    --keep) keep=1 ;;
    --only) only="$2"; shift ;;
    -h|--help) sed -n '2,39p' "$0"; exit 0 ;;
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
if [[ "$build" == 1 && -z "${SLUICE:-}${CLIENT_COMPAT:-}" ]]; then
  compat/build.sh || { echo "run.sh: compat/build.sh failed" >&2; exit 1; }
fi
export CLIENT_COMPAT="${CLIENT_COMPAT:-$root/target/debug/examples/client_compat}"
[[ -x "$CLIENT_COMPAT" ]] || { echo "run.sh: no $CLIENT_COMPAT (build it or set CLIENT_COMPAT)" >&2; exit 1; }

work="$(mktemp -d -t sluice-client.XXXXXX)"
name=client
suites=""
source "$root/compat/lib/suites.sh"
sluice_settings=(
  "offsets.topic.replication.factor=1"
  "transaction.state.log.replication.factor=1"
  "transaction.state.log.min.isr=1"
)
stream_pid=""
cleanup() {
  stop_suites
  [[ -n "$stream_pid" ]] && kill "$stream_pid" 2>/dev/null
  if [[ "$broker" == kafka ]]; then
    python3 "$root/compat/kafka/kafka_ctl.py" stop "$work/kafka" >/dev/null 2>&1
  else
    stop_sluice
  fi
  if [[ "$keep" == 1 ]]; then echo "client: work dir kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# -- broker ------------------------------------------------------------------------------
if [[ "$broker" == kafka ]]; then
  mkdir -p "$work/kafka"
  # a broker restarted after a SIGKILL registers again only once the old registration's
  # session expires: a short broker.session.timeout.ms keeps restart quick
  bootstrap="$(python3 "$root/compat/kafka/kafka_ctl.py" start "$work/kafka" \
    group.initial.rebalance.delay.ms=0 offsets.topic.replication.factor=1 \
    transaction.state.log.replication.factor=1 transaction.state.log.min.isr=1 \
    broker.session.timeout.ms=3000 broker.heartbeat.interval.ms=500)" || {
    echo "run.sh: Kafka did not start" >&2; tail -30 "$work/kafka/kafka.out" >&2; exit 1; }
  broker_log="$work/kafka/kafka.out"
  data_dir="$work/kafka/data"
  what="Apache Kafka $(cat "$libs/VERSION" 2>/dev/null)"
else
  sluice="${SLUICE:-target/debug/sluice}"
  [[ -x "$sluice" ]] || { echo "run.sh: no $sluice (build it or set SLUICE)" >&2; exit 1; }
  read -r port cport < <(free_ports)
  mkdir -p "$work/data"
  broker_log="$work/sluice.err"
  data_dir="$work/data"
  start_sluice || exit 1
  bootstrap="127.0.0.1:$port"
  what="Sluice ($sluice)"
fi
echo "client: against $what at $bootstrap"

# -- suites ------------------------------------------------------------------------------
suite_cmd() { # sets cmd=(...) for suite $1
  case "$1" in
    roundtrip) cmd=(timeout 90 python3 "$here/roundtrip.py" "$bootstrap" "$work" "$libs" "$data_dir" "$1") ;;
    consume) cmd=(timeout 120 python3 "$here/consume.py" "$bootstrap" "$work" "$1") ;;
    murmur2) cmd=(timeout 90 python3 "$here/murmur2.py" "$bootstrap" "$work" "$libs" "$1") ;;
    txn) cmd=(timeout 90 python3 "$here/txn.py" "$bootstrap" "$work" "$libs" "$1") ;;
    fresh) cmd=(timeout 400 python3 "$here/fresh.py" "$bootstrap" "$work" "$1") ;;
    mixed-group) cmd=(timeout 200 "$here/mixed_group.sh" "$bootstrap" "$1") ;;
    *) cmd=(sh -c "echo 'FAIL $1: (suite) unknown suite'; exit 1") ;;
  esac
}

secs() { local ms=$((($(date +%s%N) - $1) / 1000000)); echo "$((ms / 1000)).$((ms % 1000 / 100))s"; }

broker_pid_now() {
  if [[ "$broker" == kafka ]]; then cat "$work/kafka/kafka.pid"; else echo "$broker_pid"; fi
}

# restart: prepare, the stream, SIGKILL + restart of the broker mid-stream, verify.
restart_suite() {
  local s=restart out="$work/restart.out" err="$work/restart.err" rc t0 killed_at i
  : > "$out"
  (cd "$here" && exec timeout 30 python3 "$here/restart.py" prepare "$bootstrap" \
     "$work/restart.json" "$s") >> "$out" 2>> "$err" < /dev/null
  if [[ $? != 0 ]]; then echo 1 > "$work/$s.rc"; return; fi
  local topic
  topic="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["topic"])' "$work/restart.json")"
  timeout 120 "$CLIENT_COMPAT" stream "$bootstrap" "$topic" 6000 1500 \
    > "$work/restart.stream" 2> "$work/restart.stream.err" < /dev/null &
  stream_pid=$!
  for i in $(seq 400); do
    awk '/^acked / && $2 >= 1500 { f = 1 } END { exit !f }' "$work/restart.stream" && break
    kill -0 "$stream_pid" 2>/dev/null || break
    sleep 0.05
  done
  killed_at="$(grep '^sent ' "$work/restart.stream" | tail -1), $(grep '^acked ' "$work/restart.stream" | tail -1)"
  t0=$(date +%s%N)
  {
    if [[ "$broker" == kafka ]]; then
      python3 "$root/compat/kafka/kafka_ctl.py" kill "$work/kafka" &&
        python3 "$root/compat/kafka/kafka_ctl.py" restart "$work/kafka" > /dev/null
    else
      { kill -KILL "$broker_pid"; wait "$broker_pid"; } 2>/dev/null
      broker_pid=""
      start_sluice
    fi
  } 2>> "$err"
  if [[ $? == 0 ]]; then
    echo "PASS $s: broker SIGKILLed at \"$killed_at\" and restarted on the same ports and data dir ($(secs "$t0"))" >> "$out"
  else
    echo "FAIL $s: broker SIGKILLed at \"$killed_at\" and restarted on the same ports and data dir: $(tail -c 400 "$err" | tr '\n' ' ')" >> "$out"
  fi
  wait "$stream_pid"; rc=$?; stream_pid=""
  cat "$work/restart.stream.err" >> "$err"
  (cd "$here" && exec timeout 60 python3 "$here/restart.py" verify "$bootstrap" \
     "$work/restart.json" "$work/restart.stream" "$rc" "$killed_at" "$s") >> "$out" 2>> "$err" < /dev/null
  rc=$?
  grep -q '^FAIL ' "$out" && rc=1
  echo "$rc" > "$work/$s.rc"
}

suites=""
for s in $only; do [[ "$s" != restart ]] && suites+="$s "; done
ran_suites="$suites"
if [[ -n "$suites" ]]; then
  run_suites
  for s in $suites; do [[ "$serial" == 1 ]] || cat "$work/$s.out"; done
fi
if [[ " $only " == *" restart "* && "$broker_died" == 0 ]]; then
  restart_suite
  cat "$work/restart.out"
  ran_suites+="restart "
fi

passed=0 failed=0
suites="$ran_suites"
for s in $suites; do tally_suite "$s"; done
finish_suites
