#!/usr/bin/env python3
"""Transactions across a broker SIGKILL (run.sh restarts the broker in between).

    python3 compat/txn/broker_kill.py prepare BOOTSTRAP STATE_FILE BROKER_PID [SUITE]
    python3 compat/txn/broker_kill.py verify BOOTSTRAP STATE_FILE [SUITE]

prepare: producer A (transactional.id TA, 1-partition topic KA) begins a transaction, writes
open-0..4 and flushes them (acknowledged, not committed); producer B (TB, topic KB) commits
committed-0..2 in one transaction and commits committed-3..4 in a second one; the moment
the second commit_transaction() returns, prepare SIGKILLs the broker (BROKER_PID) itself.
Names go to STATE_FILE.
verify (after run.sh started the broker again on the same ports and data dir):
  (b) read_committed of KB reads committed-0..4: a commit acknowledged right before the
      SIGKILL survives it (Kafka writes the markers after EndTxn returns; the restarted
      coordinator must finish them)
  (a) read_committed of KA reads nothing; a new producer with TA: init_transactions()
      (which aborts A's transaction) succeeds, it commits new-0..2; read_committed of KA
      then reads exactly new-0..2 (open-* never), read_uncommitted open-0..4 + new-0..2
"""

import json
import os
import signal
import sys
import time

from txncommon import T, create_topic, name, read, txn_producer
from checklib import Checks, CheckFailed, expect, main_guard

OPEN = ["open-%d" % i for i in range(5)]
COMMITTED = ["committed-%d" % i for i in range(5)]
NEW = ["new-%d" % i for i in range(3)]


def prepare(bootstrap, state_file, broker_pid, checks):
    st = {"KA": name("bk-a"), "KB": name("bk-b"), "TA": name("bk-txn-a"), "TB": name("bk-txn-b")}

    def run():
        create_topic(bootstrap, st["KA"])
        create_topic(bootstrap, st["KB"])
        a = txn_producer(bootstrap, st["TA"])
        b = txn_producer(bootstrap, st["TB"])
        a.init_transactions(T)
        b.init_transactions(T)
        b.begin_transaction()
        for v in COMMITTED[:3]:
            b.produce(st["KB"], value=v.encode(), partition=0)
        b.commit_transaction(T)
        a.begin_transaction()
        for v in OPEN:
            a.produce(st["KA"], value=v.encode(), partition=0)
        if a.flush(T):
            raise CheckFailed("A's records not acknowledged")
        b.begin_transaction()
        for v in COMMITTED[3:]:
            b.produce(st["KB"], value=v.encode(), partition=0)
        b.commit_transaction(T)
        os.kill(broker_pid, signal.SIGKILL)
        KEEP.extend([a, b])  # no destructor: A's transaction stays open, nothing is flushed
        with open(state_file, "w") as f:
            json.dump(st, f)

    checks.run("A's records sent, B's commit returned, broker SIGKILLed at once", run)
    sys.stdout.flush()
    os._exit(checks.exit_code())


KEEP = []


def verify(bootstrap, state_file, checks):
    with open(state_file) as f:
        st = json.load(f)

    def committed_survives():
        got = [v for _, _, v in read(bootstrap, st["KB"], "read_committed", len(COMMITTED),
                                     timeout=20)]
        expect(got, COMMITTED, "read_committed of %s after the restart" % st["KB"])

    def open_aborted():
        got = [v for _, _, v in read(bootstrap, st["KA"], "read_committed", 1, timeout=1.5)]
        expect(got, [], "read_committed of %s after the restart, before the new producer"
               % st["KA"])
        a2 = txn_producer(bootstrap, st["TA"])
        t0 = time.monotonic()
        a2.init_transactions(20)
        took = time.monotonic() - t0
        a2.begin_transaction()
        for v in NEW:
            a2.produce(st["KA"], value=v.encode(), partition=0)
        a2.commit_transaction(T)
        got = [v for _, _, v in read(bootstrap, st["KA"], "read_committed", len(NEW))]
        expect(got, NEW, "read_committed of %s after the new producer's commit" % st["KA"])
        got = [v for _, _, v in read(bootstrap, st["KA"], "read_uncommitted",
                                     len(OPEN) + len(NEW))]
        expect(got, OPEN + NEW, "read_uncommitted of %s" % st["KA"])
        print("# broker-kill: init_transactions after the restart took %.1fs" % took, flush=True)

    checks.run("(b) killed right after commit_transaction() returned: the committed records "
               "are visible to read_committed after the restart", committed_survives)
    checks.run("(a) killed mid-transaction: after the restart init_transactions() with the same "
               "transactional.id aborts it; its records never visible, new commits are",
               open_aborted)


def main(argv):
    mode, bootstrap, state_file = argv[1], argv[2], argv[3]
    if mode == "prepare":
        checks = Checks(argv[5] if len(argv) > 5 else "broker-kill")
        return main_guard(checks, lambda: prepare(bootstrap, state_file, int(argv[4]), checks))
    checks = Checks(argv[4] if len(argv) > 4 else "broker-kill")
    return main_guard(checks, lambda: verify(bootstrap, state_file, checks))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
