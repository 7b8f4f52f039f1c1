#!/usr/bin/env python3
"""Kafka's transaction tool (kafka-transactions.sh, org.apache.kafka.tools.TransactionsCommand)
on an open transaction.

    python3 compat/txn/tools_check.py BOOTSTRAP LIBS [SUITE]

A librdkafka transactional producer (a child process) begins a transaction, writes open-0..2
to partition 0 of a new topic, flushes, and waits. Then (suite "tools"):
  list                 `list` shows the transactional id, its producer id and Ongoing
  describe             `describe --transactional-id` shows Ongoing, the timeout and the topic
                       partition in the transaction
  describe-producers   `describe-producers` shows the producer with CurrentTransactionStartOffset 0
  abort                `abort --topic --partition --start-offset 0` (the Admin client's
                       abortTransaction: WriteTxnMarkers to the partition leader) ends it on
                       that partition: a record written after it becomes visible to
                       read_committed, the open-* records never do
The child is SIGKILLed at the end.
"""

import os
import signal
import subprocess
import sys
import time

from txncommon import T, create_topic, name, plain_produce, read, txn_producer
from checklib import Checks, CheckFailed, expect, main_guard

JVM = ["java", "-Xms64m", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
       "-XX:-UsePerfData"]
OPEN = ["open-%d" % i for i in range(3)]


def child(bootstrap, topic, txn_id):
    p = txn_producer(bootstrap, txn_id, {"transaction.timeout.ms": 60000})
    p.init_transactions(T)
    p.begin_transaction()
    for v in OPEN:
        p.produce(topic, value=v.encode(), partition=0)
    if p.flush(T):
        print("error: not delivered", flush=True)
        return 1
    print("sent", flush=True)
    time.sleep(600)
    return 0


def tool(bootstrap, libs, *args):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    cmd = JVM + ["-Dlog4j2.configurationFile=%s/compat/kafka/log4j2.properties" % root,
                 "-cp", os.path.join(libs, "*"), "org.apache.kafka.tools.TransactionsCommand",
                 "--bootstrap-server", bootstrap] + list(args)
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                         stdin=subprocess.DEVNULL)
    if run.returncode != 0:
        raise CheckFailed("kafka-transactions %s: exit %d: %s" % (
            " ".join(args), run.returncode, (run.stderr or run.stdout)[-500:]))
    return run.stdout


def table(text):
    """A tool's tab-separated table as dicts (header row first)."""
    rows = [[c.strip() for c in line.split("\t")] for line in text.splitlines() if line.strip()]
    if not rows:
        raise CheckFailed("empty output")
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def main(bootstrap, libs, checks):
    topic = name("tools")
    txn_id = name("tools-txn")
    create_topic(bootstrap, topic)
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "child", bootstrap,
                             topic, txn_id], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            text=True, start_new_session=True)
    try:
        line = proc.stdout.readline().strip()
        if line != "sent":
            raise CheckFailed("transactional child: %r (exit %s)" % (line, proc.poll()))
        state = {}

        def listed():
            rows = [r for r in table(tool(bootstrap, libs, "list"))
                    if r.get("TransactionalId") == txn_id]
            if len(rows) != 1:
                raise CheckFailed("list: no single row for %s" % txn_id)
            expect(rows[0].get("TransactionState"), "Ongoing", "list: TransactionState")
            state["producer_id"] = rows[0].get("ProducerId")

        def described():
            rows = table(tool(bootstrap, libs, "describe", "--transactional-id", txn_id))
            expect(len(rows), 1, "describe: rows")
            row = rows[0]
            expect(row.get("TransactionState"), "Ongoing", "describe: TransactionState")
            expect(row.get("TransactionTimeoutMs"), "60000", "describe: TransactionTimeoutMs")
            expect(row.get("TopicPartitions"), "%s-0" % topic, "describe: TopicPartitions")
            if state.get("producer_id") and row.get("ProducerId") != state["producer_id"]:
                raise CheckFailed("describe: ProducerId %s, list said %s"
                                  % (row.get("ProducerId"), state["producer_id"]))

        def producers():
            rows = table(tool(bootstrap, libs, "describe-producers", "--topic", topic,
                              "--partition", "0"))
            expect(len(rows), 1, "describe-producers: rows")
            expect(rows[0].get("CurrentTransactionStartOffset"), "0",
                   "describe-producers: CurrentTransactionStartOffset")

        def aborted():
            plain_produce(bootstrap, topic, ["after"])
            tool(bootstrap, libs, "abort", "--topic", topic, "--partition", "0",
                 "--start-offset", "0")
            expect([v for _, _, v in read(bootstrap, topic, "read_committed", 1)], ["after"],
                   "read_committed after the abort")

        checks.run("kafka-transactions list shows the open transaction (Ongoing)", listed)
        checks.run("kafka-transactions describe: Ongoing, its timeout and partition", described)
        checks.run("kafka-transactions describe-producers: CurrentTransactionStartOffset 0",
                   producers)
        checks.run("kafka-transactions abort --start-offset 0 (WriteTxnMarkers from the admin "
                   "client) ends it on the partition: read_committed sees what followed, "
                   "never its records", aborted)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        sys.exit(child(*sys.argv[2:5]))
    bootstrap, libs = sys.argv[1], sys.argv[2]
    checks = Checks(sys.argv[3] if len(sys.argv) > 3 else "tools")
    sys.exit(main_guard(checks, lambda: main(bootstrap, libs, checks)))
