#!/usr/bin/env bash
# The guide's alert rules and Grafana dashboard (deploy/), judged by Prometheus's own
# tools (Debian's `prometheus` package, installed by scripts/test's install_tools; this
# script installs nothing):
#
#   promtool check rules deploy/prometheus/alerts.yml
#   promtool test rules compat/prometheus/alerts_test.yml   every rule on synthetic series
#   files_check.py   the dashboard is a Grafana dashboard model, and every metric a panel
#                    or a rule names exists (metrics.rs, or the lag metrics' names)
#   alerts_live.py   a real Prometheus (scrape and evaluation every 1 s) on a real 3-node
#                    cluster: nothing fires while healthy, every dashboard query runs,
#                    UnderReplicatedPartitions fires when a node is SIGKILLed and resolves
#                    when it is back
#
#   compat/prometheus/run.sh [--no-build] [--keep]
#
# Options: --no-build (use target/debug/sluice as it is; SLUICE=path picks another
# binary), --keep (keep the work dir: the nodes' logs, Prometheus's config, log and TSDB).
# Ends with "prometheus: ... in S s"; exits 1 if anything failed. About 20 s; the live
# part is bounded by timeout 120.
set -uo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/../.."
here=compat/prometheus

build=1 keep=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) build=0 ;;
    --keep) keep=(--keep) ;;
    -h|--help) sed -n '2,20p' "$self"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
started=$SECONDS

for tool in promtool prometheus; do
  command -v "$tool" >/dev/null || {
    echo "run.sh: no $tool (Debian's prometheus package; scripts/test's install_tools installs it)" >&2
    exit 1
  }
done
sluice="${SLUICE:-target/debug/sluice}"
if [[ "$build" == 1 && -z "${SLUICE:-}" ]]; then
  compat/build.sh || { echo "run.sh: compat/build.sh failed" >&2; exit 1; }
fi
[[ -x "$sluice" ]] || { echo "run.sh: no $sluice (build it or set SLUICE)" >&2; exit 1; }

failed=0
check() { # check NAME COMMAND...: PASS/FAIL line with the command's output on failure
  local name="$1" out
  shift
  if out="$("$@" 2>&1)"; then
    echo "PASS prometheus: $name"
  else
    echo "FAIL prometheus: $name:"
    echo "$out" | sed 's/^/  /'
    failed=1
  fi
}
check "promtool check rules deploy/prometheus/alerts.yml" promtool check rules deploy/prometheus/alerts.yml
check "promtool test rules $here/alerts_test.yml (every rule on synthetic series)" \
  promtool test rules "$here/alerts_test.yml"
python3 "$here/files_check.py" || failed=1
SLUICE_BIN="$sluice" timeout 120 python3 "$here/alerts_live.py" "${keep[@]}" || failed=1

echo "prometheus: $([[ "$failed" == 0 ]] && echo passed || echo FAILED) in $((SECONDS - started)) s"
exit "$failed"
