#!/usr/bin/env bash
# mixed-group: the issue's acceptance for the consumer, against the suite's broker: 2
# Sluice consumers and 1 Java consumer (kafka-clients from compat/kafka/libs) in one group
# with cooperative-sticky split 6 partitions 2/2/2, and the Java member's arrival
# rebalances incrementally (each Sluice member keeps the partitions it still owns; its
# listener sees only the moved ones revoked, nothing lost). The test is
# crates/sluice-client/tests/consumer.rs two_sluice_consumers_and_a_java_one_split_incrementally
# (ignored by plain `cargo test`: it needs Java); cargo reuses the test build (--workspace:
# the features `cargo test --workspace` resolved, so nothing is compiled again).
#
#   compat/client/mixed_group.sh BOOTSTRAP SUITE
set -uo pipefail
cd "$(dirname "$0")/../.."
bootstrap="$1" suite="$2"
test=two_sluice_consumers_and_a_java_one_split_incrementally
t0=$(date +%s%N)
out="$(SLUICE_INTEROP_BOOTSTRAP="$bootstrap" cargo test -q --workspace --test consumer -- \
        --ignored --exact "$test" 2>&1)"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
what="2 Sluice consumers + 1 Java consumer, cooperative-sticky: 6 partitions split 2/2/2, the Java member's join revokes only the moved partitions"
if [[ $rc == 0 ]] && grep -q "test result: ok. 1 passed" <<< "$out"; then
  echo "PASS $suite: $what ($((ms / 1000)).$((ms % 1000 / 100))s)"
else
  echo "FAIL $suite: $what: $(grep -E "panicked|assert|Error|error" <<< "$out" | head -5 | tr '\n' ' ' | tail -c 600)"
  exit 1
fi
