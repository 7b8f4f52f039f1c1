#!/usr/bin/env python3
"""librdkafka consumer groups: offset commits and at-least-once across a crash.

    python3 compat/groups/rdkafka_commits.py BOOTSTRAP

Checks (suite "rdkafka-commits"), each with its own 6-partition topic (10 or 20 records
per partition) and group; committed offsets are read back with the consumer's
committed() and with AdminClient list_consumer_group_offsets (OffsetFetch):
  auto-commit              enable.auto.commit (300 ms): every partition at 10
  commit (sync)            5 records per partition; explicit offsets of what was consumed
                           (partitions with nothing consumed: no committed offset); 5 more
                           records each; commit() of the stored offsets: 10 each
  commit (async) callback  commit(asynchronous=True): on_commit reports 10 each, no error
  at-least-once + SIGKILL  a child consumer commits every 10 records it has processed and
                           is killed mid-way; a new member resumes exactly at the committed
                           offsets and the processed records cover all 120 produced
"""

import sys
import time

from common import (ALL, SESSION_MS, T, ChildMember, Member, close_all, committed,
                    create_topic, name, produce, wait_for, wait_stable)
from confluent_kafka import TopicPartition
from checklib import Checks, CheckFailed, expect, main_guard

BOOTSTRAP = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
checks = Checks("rdkafka-commits")


def consumed_next(m, topic=None):
    """{partition: last consumed offset + 1} from a member's records."""
    out = {}
    for (_, p, o, _) in m.records:
        out[p] = max(out.get(p, 0), o + 1)
    return out


def committed_via_consumer(m, topic):
    tps = m.call(lambda c: c.committed([TopicPartition(topic, p) for p in sorted(ALL)],
                                       timeout=T))
    return {tp.partition: (tp.offset if tp.offset >= 0 else None) for tp in tps}


def setup(tag, per_partition=10):
    topic, group = name("rc" + tag), name("gc" + tag)
    create_topic(BOOTSTRAP, topic)
    produce(BOOTSTRAP, topic, per_partition)
    return topic, group


def wait_all(m, n):
    wait_for(lambda: "%s consumed %d of %d records" % (m.name, len(m.records), n),
             lambda: len(m.records) >= n, timeout=20)


def auto_commit():
    topic, group = setup("auto")
    m = Member(BOOTSTRAP, group, topic, "cm-auto",
               {"enable.auto.commit": True, "auto.commit.interval.ms": 300})
    try:
        wait_stable([m])
        wait_all(m, 60)
        expect(consumed_next(m), {p: 10 for p in ALL}, "consumed")
        want = {p: 10 for p in ALL}
        last = {}

        def done():
            last["v"] = committed(BOOTSTRAP, group, topic)
            return last["v"] == want
        wait_for(lambda: "OffsetFetch: %s, expected %s" % (last.get("v"), want), done, 10, 0.3)
        expect(committed_via_consumer(m, topic), want, "committed()")
    finally:
        close_all([m])


def commit_sync():
    topic, group = setup("sync", per_partition=5)
    m = Member(BOOTSTRAP, group, topic, "cm-sync", {"fetch.wait.max.ms": 10})
    try:
        wait_stable([m])
        wait_all(m, 1)

        def commit_consumed(c):  # on the member's thread: nothing consumed meanwhile
            now = consumed_next(m)
            res = c.commit(offsets=[TopicPartition(topic, p, o) for p, o in now.items()],
                           asynchronous=False)
            return now, {tp.partition: tp.offset for tp in res}
        part, res = m.call(commit_consumed)
        expect(res, part, "commit() result")
        want = {p: part.get(p) for p in ALL}
        expect(committed_via_consumer(m, topic), want, "committed() after the first commit")
        expect(committed(BOOTSTRAP, group, topic), want, "OffsetFetch after the first commit")
        produce(BOOTSTRAP, topic, 5, tag="more")
        wait_all(m, 60)
        res = m.call(lambda c: c.commit(asynchronous=False))
        want = {p: 10 for p in ALL}
        expect({tp.partition: tp.offset for tp in res}, want, "commit() of the stored offsets")
        expect(committed_via_consumer(m, topic), want, "committed()")
        expect(committed(BOOTSTRAP, group, topic), want, "OffsetFetch")
    finally:
        close_all([m])


def commit_async():
    topic, group = setup("async")
    m = Member(BOOTSTRAP, group, topic, "cm-async")
    try:
        wait_stable([m])
        wait_all(m, 60)
        expect(m.commits, [], "commit callbacks before any commit")
        m.call(lambda c: c.commit(asynchronous=True))
        wait_for("no on_commit callback", lambda: m.commits, timeout=T)
        want = {p: 10 for p in ALL}
        expect(m.commits[0], (None, want), "on_commit (error, offsets)")
        expect(committed_via_consumer(m, topic), want, "committed()")
        expect(committed(BOOTSTRAP, group, topic), want, "OffsetFetch")
    finally:
        close_all([m])


def at_least_once():
    topic, group = setup("alo", per_partition=20)
    produced = {(p, o) for p in ALL for o in range(20)}
    members = []
    try:
        a = ChildMember(BOOTSTRAP, group, topic, "alo-a", mode={"commit_every": 10, "delay": 0.02})
        members.append(a)
        wait_for(lambda: "the first consumer committed %d times (records %d, error %s)"
                 % (len(a.commits), len(a.records), a.error), lambda: len(a.commits) >= 3, 20)
        a.kill()
        processed_a = {(p, o) for (_, p, o, _) in a.records}
        if len(processed_a) >= 120:
            raise CheckFailed("the first consumer processed everything before the kill")
        last = {}
        for _, offs in a.commits:
            last.update(offs)
        got = committed(BOOTSTRAP, group, topic)
        for p, o in last.items():
            if got.get(p) is None or got[p] < o:
                raise CheckFailed("committed %s, below the last commit seen %s" % (got, last))
        for p, o in got.items():
            if o is not None and (p, o - 1) not in processed_a:
                raise CheckFailed("committed offset %d of partition %d was never processed"
                                  % (o, p))
        b = Member(BOOTSTRAP, group, topic, "alo-b")
        members.append(b)
        wait_for(lambda: "the second consumer got %d records" % len(b.records),
                 lambda: produced <= processed_a | {(p, o) for (_, p, o, _) in b.records},
                 timeout=SESSION_MS / 1000 + 20)
        first = {}
        for (_, p, o, _) in b.records:
            first.setdefault(p, o)
        want = {p: (got.get(p) or 0) for p in ALL if (got.get(p) or 0) < 20}
        expect(first, want, "first offset the new consumer read per partition (committed %s)" % got)
    finally:
        close_all(members)


def main():
    checks.run("auto-commit: committed offsets = consumed", auto_commit)
    checks.run("commit (sync): committed offsets = consumed", commit_sync)
    checks.run("commit (async) with on_commit callback", commit_async)
    checks.run("at-least-once: SIGKILL after commits, new member resumes, no loss",
               at_least_once)


if __name__ == "__main__":
    sys.exit(main_guard(checks, main))
