#!/usr/bin/env bash
# Runs the partition-log criterion benchmarks and prints MiB/s for each benchmark of a
# group, with the log/plain ratio (log-X against plain-X when there is one); then a paired run that alternates log and plain
# round by round, whose ratios hold up better on a busy machine
# (docs/benchmarks.md explains the figures).
#
#   bench/log-throughput.sh                 # everything (about 5 minutes)
#   bench/log-throughput.sh append-16KiB    # extra arguments go to criterion (a filter)
#   SUMMARY_ONLY=1 bench/log-throughput.sh  # just re-print the table of the last run
#   PAIRED_ROUNDS=0 bench/log-throughput.sh # skip the paired run (default 30 rounds)
#
# Criterion figures are the median time per iteration turned into MiB/s with the
# benchmark's byte count. Only results written by this run are shown.
set -euo pipefail

cd "$(dirname "$0")/.."
command -v jq >/dev/null || { echo "jq is required" >&2; exit 1; }
target_dir=$(cargo metadata --format-version 1 --no-deps | jq -r .target_directory)
criterion_dir="$target_dir/criterion"

marker=$(mktemp)
trap 'rm -f "$marker"' EXIT
if [[ -n "${SUMMARY_ONLY:-}" ]]; then
  touch -d '@0' "$marker"
else
  cargo bench -p sluice-storage --bench log -- "$@"
fi

[[ -d "$criterion_dir" ]] || { echo "no results in $criterion_dir" >&2; exit 1; }

echo
echo "Criterion summary (median; MiB/s = 2^20 bytes/s; log/plain from sequential runs)"
printf '%-20s %-18s %12s %10s\n' group benchmark MiB/s log/plain
printf '%-20s %-18s %12s %10s\n' ----- --------- ----- ---------
for group in append-16KiB append-1MiB append-16KiB-fsync append-1MiB-fsync \
             read-16KiB read-1MiB validate-16KiB; do
  [[ -d "$criterion_dir/$group" ]] || continue
  declare -A rate=()
  names=()
  for dir in "$criterion_dir/$group"/*/; do
    dir=${dir%/}
    name=$(basename "$dir")
    [[ "$name" == report ]] && continue
    estimates="$dir/new/estimates.json"
    meta="$dir/new/benchmark.json"
    [[ -f "$estimates" && -f "$meta" && "$estimates" -nt "$marker" ]] || continue
    ns=$(jq -r .median.point_estimate "$estimates")
    bytes=$(jq -r '.throughput.Bytes // empty' "$meta")
    [[ -n "$bytes" ]] || continue
    rate[$name]=$(awk -v b="$bytes" -v ns="$ns" 'BEGIN { printf "%.0f", b / (ns / 1e9) / 1048576 }')
    names+=("$name")
  done
  # log first, then plain, then the rest.
  ordered=()
  for name in log plain; do
    [[ -n "${rate[$name]:-}" ]] && ordered+=("$name")
  done
  for name in "${names[@]}"; do
    [[ "$name" == log || "$name" == plain ]] || ordered+=("$name")
  done
  for name in "${ordered[@]}"; do
    ratio=""
    # log-X is compared with plain-X when there is one, else with plain.
    base=plain
    [[ "$name" == log-* && -n "${rate[plain-${name#log-}]:-}" ]] && base="plain-${name#log-}"
    if [[ "$name" == log* && -n "${rate[$base]:-}" ]]; then
      ratio=$(awk -v a="${rate[$name]}" -v b="${rate[$base]}" 'BEGIN { printf "%.0f%%", 100 * a / b }')
    fi
    printf '%-20s %-18s %12s %10s\n' "$group" "$name" "${rate[$name]}" "$ratio"
  done
  unset rate
done

rounds=${PAIRED_ROUNDS:-30}
if [[ "$rounds" != 0 && -z "${SUMMARY_ONLY:-}" ]]; then
  cargo bench -p sluice-storage --bench log -- --paired="$rounds"
fi
