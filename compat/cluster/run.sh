#!/usr/bin/env bash
# Fault-injection suite for a 3-node cluster (the short CI version). See README.md.
#
#   compat/cluster/run.sh [--backend kafka|sluice] [--topology combined|split]
#                         [--duration S] [--scenarios workload,2013,failover,groups,txn] [--keep]
#                         [-- extra jepsen.py arguments]
#
# Defaults: --backend sluice --topology combined --duration 110 (one round of every fault kind). Runs the checker's
# self-test first, then every scenario on one cluster; prints the time of each scenario
# and exits non-zero if the self-test fails, any anomaly is found, or the harness breaks.
# Installs what is missing: Kafka's jars (compat/kafka/fetch-kafka.sh: the Kafka backend,
# and the Java consumer for both backends), confluent-kafka (pip). For --backend sluice
# it builds target/debug/sluice unless SLUICE_BIN names a binary.
set -uo pipefail
cd "$(dirname "$0")/../.."

backend=sluice topology=combined duration=110 scenarios=workload,2013,failover,groups,txn keep=()
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --backend) backend="$2"; shift ;;
    --topology) topology="$2"; shift ;;
    --duration) duration="$2"; shift ;;
    --scenarios) scenarios="$2"; shift ;;
    --keep) keep=(--keep) ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
started=$(date +%s)

compat/kafka/fetch-kafka.sh >/dev/null || { echo "run.sh: fetch-kafka.sh failed" >&2; exit 1; }
python3 -c 'import confluent_kafka' 2>/dev/null || python3 -m pip install -q confluent-kafka >&2
if [[ "$backend" == sluice && -z "${SLUICE_BIN:-}" ]]; then
  compat/build.sh || { echo "run.sh: compat/build.sh failed" >&2; exit 1; }
fi

echo "== checker self-test"
python3 compat/cluster/jepsen.py --self-test || { echo "run.sh: checker self-test FAILED" >&2; exit 1; }

echo "== cluster: backend $backend, topology $topology, workload ${duration}s"
# The whole run is bounded: a hung harness is killed (its atexit kills every node it
# started, and the nodes die with it anyway: PR_SET_PDEATHSIG).
timeout -k 30 900 python3 compat/cluster/jepsen.py --backend "$backend" --topology "$topology" \
  --duration "$duration" --scenarios "$scenarios" "${keep[@]}" "${extra[@]}"
rc=$?
echo "== cluster: $( [[ $rc == 0 ]] && echo PASS || echo "FAIL (exit $rc)" ) in $(( $(date +%s) - started ))s"
exit $rc
