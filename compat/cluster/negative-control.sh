#!/usr/bin/env bash
# The fault checker's negative control against Sluice: Kafka's 2013 scenario with
# unclean.leader.election.enable=true forced on the topic. A stale follower is then
# elected and the writes the leader acknowledged alone are lost, so the run must FAIL
# with `unclean-election` and `lost` anomalies; this script passes only then. (Against
# Kafka: `run.sh --backend kafka --scenarios 2013 -- --unclean-2013`, docs/reliability.md.)
#
#   compat/cluster/negative-control.sh [--topology combined|split]
set -uo pipefail
cd "$(dirname "$0")/../.."
topology=combined
[[ "${1:-}" == --topology ]] && topology="$2"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
compat/cluster/run.sh --backend sluice --topology "$topology" --scenarios 2013 -- --unclean-2013 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
anomalies=$(grep -m1 '^2013: anomalies:' "$out")
if [[ $rc == 1 ]] && grep -q 'unclean-election [1-9]' <<<"$anomalies" && grep -q 'lost [1-9]' <<<"$anomalies"; then
  echo "negative control: PASS (the checker reported the forced unclean election and its loss: ${anomalies#2013: anomalies: })"
  exit 0
fi
echo "negative control: FAIL: run.sh exited $rc and reported: ${anomalies:-no anomaly line}; expected exit 1 with unclean-election and lost" >&2
exit 1
