#!/usr/bin/env python3
"""kafka-python (its own group coordinator client) in a consumer group.

    python3 compat/groups/kafka_python_groups.py BOOTSTRAP

Checks (suite "kafka-python"): KafkaConsumers (range assignor, each polled by its own
thread) on a 6-partition topic: the first gets all 6, a second joins and they split 3/3
(disjoint, complete); 10 records per partition are then produced and each consumes
exactly the 30 records of its partitions; commit() and commit_async() with a callback;
committed() and OffsetFetch (confluent-kafka AdminClient) read back 10 for every
partition; after one consumer closes (LeaveGroup), the other gets all 6 partitions.

The second consumer starts once the first owns the partitions: kafka-python 3.0.12
(seen against Kafka 4.1.1, about 1 run in 4) can leave a leader's SyncGroup hanging
when both join a just-created topic at once, with its metadata arriving mid-rebalance;
the leader is then dropped after the session timeout.

Each consumer also loads the topic's partitions (partitions_for_topic) before it
subscribes. Without that, a loaded machine (1 full CI run in 2) let kafka-python's
first JoinGroup win the race with its first topic metadata: as leader it assigned
nothing ("No partition metadata for topic"), rejoined when the metadata came, received
the second SyncGroup's full assignment (generation 2, all 6 partitions, in its DEBUG log)
and never applied it: its poll thread had already marked the rejoin done. The broker
answered every request as Kafka does; KP_DEBUG_LOG=path writes that client log.

Each member thread polls with a 1 s timeout. kafka-python 3.0.12 loses a rebalance that a
poll's timeout cuts short when the rejoin came from a metadata change (its first join
always does: the subscription's metadata snapshot is still empty then, so the leader
rejoins at generation 2 once metadata arrives): the leader records its new assignment
snapshot before SyncGroup, so the next poll sees nothing left to join and never awaits
the SyncGroup it sent. The member then never applies that assignment, never heartbeats
again, and keeps the generation-1 partitions. With poll(timeout_ms=50) a loaded machine
hit it in 1 of 2 runs (the SyncGroup response arrived 7 ms after the poll returned).
"""

import logging
import os
import queue
import sys
import threading
import time

from kafka import KafkaConsumer, TopicPartition
from kafka.coordinator.assignors.range import RangePartitionAssignor

from common import ALL, T, committed, create_topic, name, produce
from checklib import Checks, CheckFailed, expect, main_guard

# KP_DEBUG_LOG=path: kafka-python's DEBUG log (requests, responses, coordinator state).
if os.environ.get("KP_DEBUG_LOG"):
    logging.basicConfig(filename=os.environ["KP_DEBUG_LOG"], level=logging.DEBUG,
                        format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")
BOOTSTRAP = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
checks = Checks("kafka-python")
TOPIC, GROUP = name("kp"), name("gkp")


def consumer(cid):
    c = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=GROUP, client_id=cid,
                      auto_offset_reset="earliest", enable_auto_commit=False,
                      session_timeout_ms=6000, heartbeat_interval_ms=500,
                      max_poll_interval_ms=30000, request_timeout_ms=T * 1000 + 1000,
                      fetch_max_wait_ms=100,
                      partition_assignment_strategy=[RangePartitionAssignor])
    # The topic's metadata first (see the module doc).
    deadline = time.monotonic() + T
    while len(c.partitions_for_topic(TOPIC) or ()) < len(ALL):
        if time.monotonic() > deadline:
            raise CheckFailed("%s: no metadata for %s" % (cid, TOPIC))
        time.sleep(0.1)
    c.subscribe([TOPIC])
    return c


def parts(c):
    return {tp.partition for tp in c.assignment()}


class KPMember:
    """A KafkaConsumer polled by its own thread (as an application would run it); other
    calls on it go through call(), which runs them on that thread between polls."""

    def __init__(self, cid):
        self.cid = cid
        self.c = consumer(cid)
        self.records = []  # (partition, offset)
        self.assigned = set()
        self.error = None
        self._calls = queue.Queue()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            while not self._stop.is_set():
                while not self._calls.empty():
                    fn, box = self._calls.get()
                    try:
                        box.put((True, fn(self.c)))
                    except Exception as e:  # noqa: BLE001
                        box.put((False, e))
                # 1 s, not less: see the module doc.
                for tp, recs in self.c.poll(timeout_ms=1000).items():
                    self.records.extend((tp.partition, r.offset) for r in recs)
                self.assigned = {tp.partition for tp in self.c.assignment()}
        except Exception as e:  # noqa: BLE001
            self.error = "%s: %s" % (type(e).__name__, e)
        finally:
            try:
                self.c.close()
            except Exception:  # noqa: BLE001
                pass

    def call(self, fn, timeout=T * 2):
        box = queue.Queue()
        self._calls.put((fn, box))
        try:
            ok, v = box.get(timeout=timeout)
        except queue.Empty:
            raise CheckFailed("%s: call not served in %ss" % (self.cid, timeout))
        if not ok:
            raise v
        return v

    def close(self):
        self._stop.set()
        self.thread.join(T * 2)


def wait(ms, cond, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise CheckFailed("%s (after %ss): assignments %s%s" % (
                what, timeout, [sorted(m.assigned) for m in ms],
                "".join(" %s: %s" % (m.cid, m.error) for m in ms if m.error)))
        time.sleep(0.05)


def main():
    create_topic(BOOTSTRAP, TOPIC)
    a = KPMember("kp-a")
    b = None
    try:
        wait([a], lambda: a.assigned == ALL, "the first consumer did not get all 6")
        b = KPMember("kp-b")

        def split():
            def ok():
                pa, pb = a.assigned, b.assigned
                return pa and pb and not (pa & pb) and (pa | pb) == ALL
            wait([a, b], ok, "no 3/3 split")
            time.sleep(0.5)
            if not ok():
                raise CheckFailed("split did not hold: %s %s" % (a.assigned, b.assigned))
            expect(sorted([len(a.assigned), len(b.assigned)]), [3, 3], "assignment sizes")
            for m in (a, b):
                p = sorted(m.assigned)
                if p != list(range(p[0], p[0] + 3)):
                    raise CheckFailed("range assignment not contiguous: %s" % p)
        checks.run("two consumers split 6 partitions 3/3", split)

        def consume():
            produce(BOOTSTRAP, TOPIC, 10)  # after the split: each record has one owner
            wait([a, b], lambda: len(a.records) + len(b.records) >= 60,
                 "not all 60 records consumed")
            for m in (a, b):
                want = sorted((p, o) for p in m.assigned for o in range(10))
                expect(sorted(m.records), want, "records of %s" % m.cid)
        checks.run("each consumes exactly its partitions' records", consume,
                   deps=["two consumers split 6 partitions 3/3"])

        def commit():
            a.call(lambda c: c.commit())
            done = []
            b.call(lambda c: c.commit_async(callback=lambda offsets, resp: done.append((offsets, resp))))
            wait([a, b], lambda: done, "no commit_async callback", timeout=T)
            offsets, resp = done[0]
            if isinstance(resp, Exception):
                raise CheckFailed("commit_async: %r" % resp)
            expect({tp.partition: om.offset for tp, om in offsets.items()},
                   {p: 10 for p in b.assigned}, "commit_async offsets")
            for m in (a, b):
                for p in sorted(m.assigned):
                    expect(m.call(lambda c, p=p: c.committed(TopicPartition(TOPIC, p))), 10,
                           "committed() %s/%d" % (TOPIC, p))
            expect(committed(BOOTSTRAP, GROUP, TOPIC), {p: 10 for p in ALL}, "OffsetFetch")
        checks.run("commit / commit_async: committed offsets = consumed", commit,
                   deps=["each consumes exactly its partitions' records"])

        def leave():
            b.close()
            wait([a], lambda: a.assigned == ALL, "the remaining consumer did not get all 6",
                 timeout=20)
        checks.run("a consumer leaves: the other gets all 6 partitions", leave,
                   deps=["two consumers split 6 partitions 3/3"])
    finally:
        for m in (a, b):
            if m is not None:
                m.close()


if __name__ == "__main__":
    sys.exit(main_guard(checks, main))
