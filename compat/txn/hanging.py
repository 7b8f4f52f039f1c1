#!/usr/bin/env python3
"""A transaction left open by a SIGKILLed producer holds the last stable offset until the
coordinator aborts it after transaction.timeout.ms.

    python3 compat/txn/hanging.py BOOTSTRAP [SUITE]
    python3 compat/txn/hanging.py child BOOTSTRAP TOPIC TXN_ID TIMEOUT_MS   (the producer)

A 1-partition topic gets before-0..2 (plain producer). A child process (a transactional
librdkafka producer, transaction.timeout.ms=5000) begins a transaction, writes hung-0..4,
flushes, and is SIGKILLed. Then a plain producer writes after-0..2. A read_committed
consumer (started at once) polls for up to 20 s.
Checks (suite "hanging"):
  lso holds   until transaction.timeout.ms after the transaction began, read_committed
              sees before-0..2 and nothing else (the after-* records are behind the open
              transaction)
  aborted     within 20 s the after-* records become visible (not before the timeout);
              read_committed then reads exactly before-0..2, after-0..2 (never hung-*)
  written     read_uncommitted reads before-*, hung-*, after-* (the hung records were in
              the log all along)
"""

import os
import signal
import subprocess
import sys
import time

from txncommon import (T, create_topic, name, plain_produce, read, reader, txn_producer,
                       TopicPartition, OFFSET_BEGINNING)
from checklib import Checks, CheckFailed, expect, main_guard

TIMEOUT_MS = 5000
BOUND = 20  # seconds: the wait for the coordinator's abort


def child(bootstrap, topic, txn_id, timeout_ms):
    p = txn_producer(bootstrap, txn_id, {"transaction.timeout.ms": int(timeout_ms)})
    p.init_transactions(T)
    print("begin %.3f" % time.time(), flush=True)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, value=b"hung-%d" % i, partition=0)
    if p.flush(T):
        print("error: not delivered", flush=True)
        return 1
    print("sent %.3f" % time.time(), flush=True)
    time.sleep(600)
    return 0


BEFORE = ["before-%d" % i for i in range(3)]
HUNG = ["hung-%d" % i for i in range(5)]
AFTER = ["after-%d" % i for i in range(3)]


def main(bootstrap, checks):
    topic = name("hanging")
    state = {}

    def lso_holds():
        create_topic(bootstrap, topic)
        plain_produce(bootstrap, topic, BEFORE)
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "child", bootstrap,
                                 topic, name("hanging-txn"), str(TIMEOUT_MS)],
                                stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                start_new_session=True)
        try:
            begin = None
            for line in proc.stdout:
                if line.startswith("begin "):
                    begin = float(line.split()[1])
                elif line.startswith("sent "):
                    break
                else:
                    raise CheckFailed("transactional child: %s" % line.strip())
            else:
                raise CheckFailed("transactional child exited (%s) before its records were "
                                  "sent" % proc.wait())
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        state["begin"] = begin
        plain_produce(bootstrap, topic, AFTER)
        c = reader(bootstrap, "read_committed")
        state["consumer"] = c
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        seen = state["seen"] = []  # (time, value)
        hold_until = begin + TIMEOUT_MS / 1000.0 - 0.3
        while time.time() < hold_until:
            m = c.poll(0.05)
            if m is not None and not m.error():
                seen.append((time.time(), m.value().decode()))
        vals = [v for _, v in seen]
        if vals != BEFORE:
            raise CheckFailed("read_committed during the open transaction (%.1fs after it began): "
                              "got %r, expected %r" % (hold_until - begin, vals, BEFORE))

    def aborted():
        c, seen, begin = state["consumer"], state["seen"], state["begin"]
        deadline = time.time() + BOUND
        while time.time() < deadline and len(seen) < len(BEFORE) + len(AFTER):
            m = c.poll(0.05)
            if m is not None and not m.error():
                seen.append((time.time(), m.value().decode()))
        c.close()
        vals = [v for _, v in seen]
        if vals[len(BEFORE):] == []:
            raise CheckFailed("read_committed: after-* not visible %ds after the producer was "
                              "killed (the open transaction was not aborted)" % BOUND)
        first_after = min(t for t, v in seen if v.startswith("after-"))
        if first_after < begin + TIMEOUT_MS / 1000.0 - 0.2:
            raise CheckFailed("after-0 visible %.2fs after the transaction began, before "
                              "transaction.timeout.ms (%dms)" % (first_after - begin, TIMEOUT_MS))
        expect(vals, BEFORE + AFTER, "read_committed values (consumer that waited)")
        expect([v for _, _, v in read(bootstrap, topic, "read_committed", 6)], BEFORE + AFTER,
               "read_committed values (new consumer)")
        print("# hanging: after-* visible %.1fs after the transaction began (timeout %dms)"
              % (first_after - begin, TIMEOUT_MS), flush=True)

    def written():
        expect([v for _, _, v in read(bootstrap, topic, "read_uncommitted", 11)],
               BEFORE + HUNG + AFTER, "read_uncommitted values")

    checks.run("a SIGKILLed producer's open transaction holds the LSO: read_committed sees "
               "only the records before it until transaction.timeout.ms", lso_holds)
    checks.run("the coordinator aborts it after the timeout: later records become visible "
               "(within %ds), the hung records never" % BOUND, aborted, deps=[list(checks.status)[0]])
    checks.run("read_uncommitted sees the hung transaction's records", written,
               deps=[list(checks.status)[0]])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        sys.exit(child(*sys.argv[2:6]))
    bootstrap = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
    checks = Checks(sys.argv[2] if len(sys.argv) > 2 else "hanging")
    sys.exit(main_guard(checks, lambda: main(bootstrap, checks)))
