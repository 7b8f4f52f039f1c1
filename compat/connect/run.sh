#!/usr/bin/env bash
# Kafka Connect compat suite (issue 20): Apache Kafka Connect 4.1.1 (connect-runtime and
# connect-file from Maven Central, one JVM at a time) judges Sluice's Connect worker on
# one Sluice broker. See connect_check.py's docstring for the checks.
#
#   compat/connect/run.sh [--no-build] [--keep]
#
# --no-build uses target/debug/sluice as it is (SLUICE=path picks another binary).
# Installs what is missing: Kafka's jars (compat/kafka/fetch-kafka.sh). About a minute.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=1 keep=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) build=0 ;;
    --keep) keep=(--keep) ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
libs="$(compat/kafka/fetch-kafka.sh)" || { echo "run.sh: fetch-kafka.sh failed" >&2; exit 1; }
if [[ $build == 1 ]]; then
  compat/build.sh || { echo "run.sh: compat/build.sh failed" >&2; exit 1; }
fi
sluice="${SLUICE:-$PWD/target/debug/sluice}"
started=$(date +%s)
python3 compat/connect/connect_check.py --sluice "$sluice" --libs "$libs" "${keep[@]}"
rc=$?
echo "connect compat: $(( $(date +%s) - started ))s"
exit $rc
