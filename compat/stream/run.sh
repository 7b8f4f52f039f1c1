#!/usr/bin/env bash
# Stream-processing fault test (issue 10): the guide's order-statistics pipeline,
# `examples/order_stats` (Kafka source -> filter COMPLETED -> key_by region -> 5-minute
# tumbling event-time window aggregate -> exactly-once Kafka sink), SIGKILLed at random
# moments and restarted from its checkpoints against one Sluice node; its read_committed
# output must equal a batch computation over the input, each window once.
#
#   compat/stream/run.sh [--no-build] [--keep] [--orders N] [--kills K] [--seed S]
#
# --no-build: use target/debug/sluice and target/debug/examples/order_stats as they are
# (SLUICE=path, ORDER_STATS=path pick other binaries); --keep: keep the work dir (the
# broker's log, run-N.err of each order_stats run, the checkpoints, stream.err);
# --orders N (default 5000), --kills K (default 5), --seed S (repeats an input and the
# kill delays; the seed is printed). One suite, "stream" (check.py): librdkafka writes N
# JSON orders (bounded disorder < 8 s, a third not COMPLETED) to a 3-partition topic, paced
# while order_stats runs; K runs are SIGKILLed (odd ones 1.5-4.5 s after they start, even
# ones once window results of theirs sit in an open transaction) and restarted with the
# same arguments; trailing orders push every partition's watermark past the last
# window; a final run ends by itself (--exit-when-idle-ms). See README.md.
# Ends with "stream: N passed, M failed" and exits 1 if anything failed; bounded by
# timeout 200 s (about 30 s on 2 cores with --no-build).
set -uo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/../.."
root="$PWD"
here="$root/compat/stream"

broker=sluice build=1 keep=0 serial=0
check_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) build=0 ;;
    --keep) keep=1 ;;
    --orders|--kills|--seed) check_args+=("$1" "$2"); shift ;;
    -h|--help) sed -n '2,21p' "$self"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
started=$(date +%s%N)

# -- tools -------------------------------------------------------------------------------
python3 -c 'import confluent_kafka' 2>/dev/null || python3 -m pip install -q confluent-kafka >&2
if [[ "$build" == 1 && -z "${SLUICE:-}${ORDER_STATS:-}" ]]; then
  compat/build.sh || { echo "run.sh: compat/build.sh failed" >&2; exit 1; }
fi
sluice="${SLUICE:-target/debug/sluice}"
order_stats="${ORDER_STATS:-$root/target/debug/examples/order_stats}"
[[ -x "$sluice" ]] || { echo "run.sh: no $sluice (build it or set SLUICE)" >&2; exit 1; }
[[ -x "$order_stats" ]] || { echo "run.sh: no $order_stats (build it or set ORDER_STATS)" >&2; exit 1; }

work="$(mktemp -d -t sluice-stream.XXXXXX)"
name=stream
suites=""
source "$root/compat/lib/suites.sh"
sluice_settings=(
  "offsets.topic.replication.factor=1"
  "transaction.state.log.replication.factor=1"
  "transaction.state.log.min.isr=1"
)
cleanup() {
  stop_suites
  stop_sluice
  if [[ "$keep" == 1 ]]; then echo "stream: work dir kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# -- broker ------------------------------------------------------------------------------
read -r port cport < <(free_ports)
mkdir -p "$work/data"
broker_log="$work/sluice.err"
start_sluice || exit 1
bootstrap="127.0.0.1:$port"
what="Sluice ($sluice)"
echo "stream: order_stats ($order_stats) against $what at $bootstrap"

# -- the suite ---------------------------------------------------------------------------
# "stream": the single-threaded executor; "stream-parallel": the same job with
# execute_parallel at parallelism 2 (the source split over two tasks, windows and the
# exactly-once sink on two), on topics of its own.
suite_cmd() {
  case "$1" in
    stream)
      cmd=(timeout 200 python3 "$here/check.py" "$bootstrap" "$work/stream" "$order_stats"
        "${check_args[@]}") ;;
    stream-parallel)
      cmd=(timeout 200 python3 "$here/check.py" "$bootstrap" "$work/stream-parallel"
        "$order_stats" --parallelism 2 --topic-prefix parallel- "${check_args[@]}") ;;
  esac
}
suites="stream stream-parallel"
run_suites
cat "$work/stream.out" "$work/stream-parallel.out"
tally_suite stream
tally_suite stream-parallel
finish_suites
