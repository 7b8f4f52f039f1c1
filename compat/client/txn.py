#!/usr/bin/env python3
"""Transactions of the native producer, judged by librdkafka and kafka-transactions.sh.

    python3 compat/client/txn.py BOOTSTRAP WORKDIR LIBS [SUITE]

client_compat txn (transactional.id client-txn-RUN, a 3-partition topic, keys k-0..k-29):
init_transactions; commit commit-1-0..29; write abort-0..29 (flushed: acknowledged, in the
log) and abort; commit commit-2-0..29. Checks:
  read_committed     a confluent-kafka read_committed consumer sees exactly commit-1-* then
                     commit-2-* (in that order per partition), never abort-*
  read_uncommitted   a read_uncommitted one also sees abort-* between them (the aborted
                     records did reach the log; the markers are what hides them)
  list               kafka-transactions.sh list shows the transactional id (CompleteCommit)
  describe           kafka-transactions.sh describe --transactional-id: CompleteCommit, the
                     producer id list showed
"""

import sys

sys.dont_write_bytecode = True
from common import (Checks, CheckFailed, create_topics, expect, main_guard, name,  # noqa: E402
                    read_all, run_example, table, tool)

PARTITIONS = 3
COUNT = 30
TXN_TOOL = "org.apache.kafka.tools.TransactionsCommand"


def by_partition(msgs):
    out = {}
    for m in msgs:
        out.setdefault(m.partition(), []).append(m.value().decode())
    return out


def expected(names):
    """Values per partition for the given transactions, in send order (keys k-I)."""
    return [("%s-%d" % (n, i), "k-%d" % i) for n in names for i in range(COUNT)]


def main(bootstrap, workdir, libs, checks):
    topic, txn_id = name("client-txn"), name("client-txn")
    create_topics(bootstrap, {topic: PARTITIONS})
    out = {}

    def produce():
        out["lines"] = run_example(["txn", bootstrap, topic, txn_id, str(COUNT)], timeout=60)
        for step in ("initialized", "committed commit-1", "committed commit-2"):
            if step not in out["lines"]:
                raise CheckFailed("client_compat txn printed %r, no %r" % (out["lines"], step))
    produced = checks.run("the native transactional producer commits one transaction, aborts "
                          "one (after its records were acknowledged), commits another", produce)
    if not produced:
        return

    def placement(msgs):
        # partition of each key, as the records show it: the same for every transaction
        seen = {}
        for m in msgs:
            k = m.key().decode()
            if seen.setdefault(k, m.partition()) != m.partition():
                raise CheckFailed("key %s on partitions %d and %d" % (k, seen[k], m.partition()))

    def committed():
        msgs = read_all(bootstrap, {topic: PARTITIONS}, 2 * COUNT, "read_committed")
        placement(msgs)
        vals = by_partition(msgs)
        want = {}
        for v, k in expected(["commit-1", "commit-2"]):
            p = next(m.partition() for m in msgs if m.key().decode() == k)
            want.setdefault(p, []).append(v)
        expect(sum(len(v) for v in vals.values()), 2 * COUNT, "read_committed records")
        expect(vals, want, "read_committed values per partition")

    def uncommitted():
        msgs = read_all(bootstrap, {topic: PARTITIONS}, 3 * COUNT, "read_uncommitted")
        placement(msgs)
        vals = by_partition(msgs)
        want = {}
        for v, k in expected(["commit-1", "abort", "commit-2"]):
            p = next(m.partition() for m in msgs if m.key().decode() == k)
            want.setdefault(p, []).append(v)
        expect(sum(len(v) for v in vals.values()), 3 * COUNT, "read_uncommitted records")
        expect(vals, want, "read_uncommitted values per partition")

    checks.run("librdkafka read_committed sees commit-1-* and commit-2-*, in order, never "
               "abort-*", committed)
    checks.run("librdkafka read_uncommitted sees the aborted records too (they reached the log)",
               uncommitted)
    state = {}

    def listed():
        rows = [r for r in table(tool(bootstrap, libs, TXN_TOOL, "list"))
                if r.get("TransactionalId") == txn_id]
        if len(rows) != 1:
            raise CheckFailed("list: no single row for %s" % txn_id)
        expect(rows[0].get("TransactionState"), "CompleteCommit", "list: TransactionState")
        state["producer_id"] = rows[0].get("ProducerId")

    def described():
        rows = table(tool(bootstrap, libs, TXN_TOOL, "describe", "--transactional-id", txn_id))
        expect(len(rows), 1, "describe: rows")
        expect(rows[0].get("TransactionState"), "CompleteCommit", "describe: TransactionState")
        if state.get("producer_id") and rows[0].get("ProducerId") != state["producer_id"]:
            raise CheckFailed("describe: ProducerId %s, list said %s"
                              % (rows[0].get("ProducerId"), state["producer_id"]))

    checks.run("kafka-transactions.sh list shows the transactional id (CompleteCommit)", listed)
    checks.run("kafka-transactions.sh describe --transactional-id: CompleteCommit, the same "
               "producer id", described)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    checks = Checks(sys.argv[4] if len(sys.argv) > 4 else "txn")
    sys.exit(main_guard(checks, lambda: main(*sys.argv[1:4], checks)))
