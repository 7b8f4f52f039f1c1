#!/usr/bin/env bash
# Log compaction, retention and topic configs compat suite: librdkafka (confluent-kafka),
# Kafka 4.1's kafka-configs.sh and (Sluice only) Sluice's CLI against one broker whose
# log cleaner and retention run every 100-200 ms.
#
#   compat/compaction/run.sh            # against Sluice (target/debug/sluice, built first)
#   compat/compaction/run.sh --kafka    # the same checks against Apache Kafka 4.1.1
#
# Options: --no-build (use target/debug/sluice as it is; SLUICE=path picks another
# binary), --keep (keep the work dir: the broker's log, the check's stderr), RUST_LOG
# (passed to Sluice; e.g. RUST_LOG=info).
#
# Broker settings (both backends): log.cleaner.backoff.ms=100,
# log.retention.check.interval.ms=200, log.cleaner.min.compaction.lag.ms=0,
# log.cleaner.dedupe.buffer.size=16777216, group.initial.rebalance.delay.ms=0; Kafka also
# log.initial.task.delay.ms=0 (its retention task starts only after 30 s otherwise; Sluice
# has no such key). Topics roll
# with segment.ms=100 (Kafka 4.1 refuses a topic segment.bytes below 1 MiB, KIP-1030).
#
# One suite, "compaction" (compaction_check.py):
#   1 the guide's example: A v1, B v1, A v2, C v1, B v2, A v3 + a rolling record compact
#     to 3 C=v1, 4 B=v2, 5 A=v3 (+ 6), offsets, keys and values exact
#   2 tombstones (delete.retention.ms=1000): kept by the first pass, gone after the horizon
#     and one more roll (what Kafka 4.1.1 needs); Sluice only (6b): gone without new data
#   3 retention (retention.ms=1000): the log start offset moves; auto.offset.reset
#     earliest / latest / error for a consumer assigned at offset 0
#   4 a keyless record to a compacted topic: INVALID_RECORD (87), nothing appended
#   5 kafka-configs.sh --alter turns compaction on; --describe --all lines vs Kafka 4.1.1's
#   6 Sluice only: sluice topic alter-config --set cleanup.policy=compact; describe
# Ends with "compaction: N passed, M failed" and exits 1 if anything failed; bounded by
# timeout 150 s (about 20 s against Kafka, see README.md).
set -uo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/../.."
root="$PWD"
here="$root/compat/compaction"

broker=sluice build=1 keep=0 serial=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kafka) broker=kafka ;;
    --no-build) build=0 ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,29p' "$self"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
started=$(date +%s%N)

# -- tools -------------------------------------------------------------------------------
libs="$(compat/kafka/fetch-kafka.sh)" || { echo "run.sh: fetch-kafka.sh failed" >&2; exit 1; }
python3 -c 'import confluent_kafka' 2>/dev/null || python3 -m pip install -q confluent-kafka >&2

work="$(mktemp -d -t sluice-compaction.XXXXXX)"
name=compaction
suites=""
source "$root/compat/lib/suites.sh"
settings=(
  "log.cleaner.backoff.ms=100"
  "log.retention.check.interval.ms=200"
  "log.cleaner.min.compaction.lag.ms=0"
  "log.cleaner.dedupe.buffer.size=16777216"
)
sluice_settings=("offsets.topic.replication.factor=1" "${settings[@]}")
cleanup() {
  stop_suites
  if [[ "$broker" == kafka ]]; then
    python3 "$root/compat/kafka/kafka_ctl.py" stop "$work/kafka" >/dev/null 2>&1
  else
    stop_sluice
  fi
  if [[ "$keep" == 1 ]]; then echo "compaction: work dir kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# -- broker ------------------------------------------------------------------------------
sluice="${SLUICE:-target/debug/sluice}"
if [[ "$broker" == kafka ]]; then
  mkdir -p "$work/kafka"
  bootstrap="$(python3 "$root/compat/kafka/kafka_ctl.py" start "$work/kafka" \
    group.initial.rebalance.delay.ms=0 log.initial.task.delay.ms=0 "${settings[@]}")" || {
    echo "run.sh: Kafka did not start" >&2; tail -30 "$work/kafka/kafka.out" >&2; exit 1; }
  broker_log="$work/kafka/kafka.out"
  what="Apache Kafka $(cat "$libs/VERSION" 2>/dev/null)"
else
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
echo "compaction: against $what at $bootstrap"

# -- the suite ---------------------------------------------------------------------------
suite_cmd() {
  cmd=(env "WORK=$work" timeout 150 python3 "$here/compaction_check.py" "$bootstrap" "$libs"
       "$broker" "$(realpath "$sluice" 2>/dev/null || echo "$sluice")")
}
suites="compaction"
run_suites
grep -v '^INFO ' "$work/compaction.out"
grep '^INFO ' "$work/compaction.out" | sed 's/^INFO /  info: /'
tally_suite compaction
finish_suites
