#!/usr/bin/env bash
# Builds a check.py input dir from the captured Kafka fixtures, to test the
# harness itself without Sluice's batch builder:
#
#   compat/batches/sample-from-fixtures.sh OUTDIR [librdkafka|java]
#   python3 compat/batches/check.py OUTDIR        # must pass
#
# OUTDIR/<codec>.batches = <client>-<codec>/00000000000000000000.log (a segment is
# exactly a concatenation of v2 batches starting at offset 0), plus expected.json.
set -euo pipefail
out="${1:?usage: sample-from-fixtures.sh OUTDIR [librdkafka|java]}"
client="${2:-librdkafka}"
fixtures="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/crates/sluice-storage/tests/fixtures/kafka"
mkdir -p "$out"
for codec in none gzip snappy lz4 zstd; do
  cp "$fixtures/$client-$codec/00000000000000000000.log" "$out/$codec.batches"
done
cp "$fixtures/expected.json" "$out/expected.json"
