#!/usr/bin/env bash
# CDC compat suite: Debezium 3.6.1's PostgreSQL connector on Apache Kafka Connect 4.3.0
# judges Sluice's native Postgres source, both writing into a Sluice broker from a real
# PostgreSQL 15 (cdc_check.py's docstring); then Sluice's worker SIGKILLed twice
# mid-stream, nothing lost, and exactly once with exactly.once.source.support
# (kill_check.py); then Debezium 2.6.2's MySqlConnector on Apache Connect 3.7.0 judges
# Sluice's native MySQL/MariaDB source on a real MariaDB 10.11 (mysql/mysql_check.py
# --side-by-side).
#
#   compat/cdc/run.sh [--no-build] [--side debezium|sluice|both] [--out DIR] [--keep]
#
# --no-build uses target/debug/sluice as it is (SLUICE=path picks another binary).
# --out defaults to a temp dir (removed afterwards unless --keep). Installs what is
# missing: Connect's and Debezium's jars (compat/cdc/fetch-debezium.sh). About a minute
# a side.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=1 side=both out="" keep=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) build=0 ;;
    --side) side="$2"; shift ;;
    --out) out="$2"; shift ;;
    --keep) keep=(--keep) ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
libs="$(compat/cdc/fetch-debezium.sh)" || { echo "run.sh: fetch-debezium.sh failed" >&2; exit 1; }
if [[ $build == 1 ]]; then
  compat/build.sh || { echo "run.sh: compat/build.sh failed" >&2; exit 1; }
fi
python3 -c 'import confluent_kafka' 2>/dev/null || python3 -m pip install -q confluent-kafka
tmp=""
if [[ -z "$out" ]]; then
  tmp="$(mktemp -d /tmp/sluice-cdc-out.XXXXXX)"
  out="$tmp"
fi
sluice="${SLUICE:-$PWD/target/debug/sluice}"
started=$(date +%s)
python3 compat/cdc/cdc_check.py --sluice "$sluice" --libs "$libs" --side "$side" --out "$out" "${keep[@]}"
rc=$?
if [[ $side != debezium ]]; then
  # Durability: Sluice's worker SIGKILLed mid-stream, at least once and exactly once.
  python3 compat/cdc/kill_check.py --sluice "$sluice" "${keep[@]}" || rc=1
  # MariaDB: Debezium 2.6.2's MySqlConnector (connector.adapter=mariadb) on Apache Connect
  # 3.7.0 beside Sluice's native one, without and with transaction metadata.
  python3 compat/cdc/mysql/mysql_check.py --sluice "$sluice" --out "$out/mariadb" --side-by-side "${keep[@]}" || rc=1
fi
echo "cdc compat: $(( $(date +%s) - started ))s"
if [[ -n "$tmp" && ${#keep[@]} -eq 0 ]]; then rm -rf "$tmp"; elif [[ -n "$tmp" ]]; then echo "captures kept: $tmp"; fi
exit $rc
