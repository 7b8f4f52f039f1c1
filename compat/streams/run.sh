#!/usr/bin/env bash
# Kafka Streams compat suite: a word-count application with
# processing.guarantee=exactly_once_v2 (Kafka Streams 4.1.1 from Maven Central, unchanged)
# against one broker, SIGKILLed and restarted mid-run; its output table must equal a batch
# count of its input.
#
#   compat/streams/run.sh            # against Sluice (target/debug/sluice, built first)
#   compat/streams/run.sh --kafka    # the same checks against Apache Kafka 4.1.1
#
# Options: --no-build (use target/debug/sluice as it is; SLUICE=path picks another
# binary), --keep (keep the work dir: the broker's log, each app run's stderr, the check's
# stderr), RUST_LOG (passed to Sluice; e.g. RUST_LOG=info), STREAMS_LOG4J=path (a log4j2
# configuration for the JVMs instead of ../kafka/log4j2.properties, e.g. one at INFO).
#
# One suite, "wordcount" (StreamsWordCount.java check): input 20,000 lines in 4 partitions,
# produced in two halves; the app (flatMapValues -> groupBy word (repartition topic) ->
# count (changelog topic) -> output, 2 stream threads) runs as a child JVM: run 1 is
# SIGKILLed after committing part of the first half; run 2 (same state dir) while the
# second half is being produced; run 3 (empty state dir: restored from the changelog)
# finishes. Checks: the read_committed output table equals the batch count for every word;
# each word's values are 1..n (cache off: every input word counted once); the group's
# committed offsets equal the input's end offsets; the repartition and changelog (compact)
# topics exist; Streams purged consumed repartition records (DeleteRecords); ListTransactions
# shows the app's transactional.ids. See README.md.
# Ends with "streams: N passed, M failed" and exits 1 if anything failed; bounded by
# timeout 200 s (30-60 s on 2 cores).
set -uo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/../.."
root="$PWD"
here="$root/compat/streams"

broker=sluice build=1 keep=0 serial=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kafka) broker=kafka ;;
    --no-build) build=0 ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,26p' "$self"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
started=$(date +%s%N)

# -- tools -------------------------------------------------------------------------------
slibs="$("$here/fetch-streams.sh")" || { echo "run.sh: fetch-streams.sh failed" >&2; exit 1; }
if [[ "$broker" == kafka ]]; then
  klibs="$(compat/kafka/fetch-kafka.sh)" || { echo "run.sh: fetch-kafka.sh failed" >&2; exit 1; }
fi

work="$(mktemp -d -t sluice-streams.XXXXXX)"
name=streams
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
  if [[ "$keep" == 1 ]]; then echo "streams: work dir kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log4j="${STREAMS_LOG4J:-$root/compat/kafka/log4j2.properties}"
jvm=(java -Xms64m -Xmx512m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData
     "-Dlog4j2.configurationFile=$log4j")

# -- the Java program, compiled while the broker starts -----------------------------------
mkdir -p "$work/classes"
javac -nowarn -cp "$slibs/*" -d "$work/classes" "$here/StreamsWordCount.java" > "$work/javac.err" 2>&1 &
javac_pid=$!

# -- broker ------------------------------------------------------------------------------
if [[ "$broker" == kafka ]]; then
  mkdir -p "$work/kafka"
  bootstrap="$(python3 "$root/compat/kafka/kafka_ctl.py" start "$work/kafka" \
    group.initial.rebalance.delay.ms=0 offsets.topic.replication.factor=1 \
    transaction.state.log.replication.factor=1 transaction.state.log.min.isr=1 \
    transaction.abort.timed.out.transaction.cleanup.interval.ms=500)" || {
    echo "run.sh: Kafka did not start" >&2; tail -30 "$work/kafka/kafka.out" >&2; exit 1; }
  broker_log="$work/kafka/kafka.out"
  what="Apache Kafka $(cat "$klibs/VERSION" 2>/dev/null)"
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
echo "streams: against $what at $bootstrap (Kafka Streams $(cat "$slibs/VERSION"))"
wait "$javac_pid"; javac_rc=$?; javac_pid=""

# -- the suite ---------------------------------------------------------------------------
suite_cmd() {
  if [[ "$javac_rc" != 0 ]]; then
    cmd=(sh -c "echo 'FAIL $1: (suite) javac StreamsWordCount.java failed: $(tr '\n' ' ' < "$work/javac.err" | tr -d "'" | tail -c 300)'; exit 1")
  else
    cmd=(timeout 200 "${jvm[@]}" -cp "$work/classes:$slibs/*" StreamsWordCount check "$bootstrap" "$work" "$1")
  fi
}
suites="wordcount"
run_suites
cat "$work/wordcount.out"
tally_suite wordcount
finish_suites
