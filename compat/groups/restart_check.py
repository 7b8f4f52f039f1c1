#!/usr/bin/env python3
"""Committed offsets survive a broker restart (run.sh restarts the broker in between).

    python3 compat/groups/restart_check.py prepare BOOTSTRAP STATE_FILE
    python3 compat/groups/restart_check.py verify BOOTSTRAP STATE_FILE

prepare: a 6-partition topic with 5 records per partition; group A (a librdkafka member)
consumes them and commits offset p%5+1 with metadata "meta-p" for partition p; group B
(a member with auto-commit) consumes everything and closes (final commit: 5 each). Both
read back with OffsetFetch; names and expected offsets go to STATE_FILE.
verify (after the restart): OffsetFetch returns the same offsets and metadata for both
groups; list_consumer_groups lists both; a new member of group A resumes at the
committed offsets (its first record per partition).
"""

import json
import sys

from common import (ALL, T, Member, admin, close_all, create_topic, name, produce,
                    wait_for, wait_stable)
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from checklib import Checks, CheckFailed, expect, main_guard

MODE, BOOTSTRAP, STATE = sys.argv[1], sys.argv[2], sys.argv[3]
checks = Checks("restart")


def offsets_with_metadata(group, topic):
    a = admin(BOOTSTRAP)  # kept referenced until the result is in
    fs = a.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in sorted(ALL)])],
        request_timeout=T)
    res = fs[group].result(timeout=T + 5)
    out = {}
    for tp in res.topic_partitions:
        if tp.error is not None:
            raise CheckFailed("OffsetFetch %s/%d: %s" % (topic, tp.partition, tp.error))
        out[str(tp.partition)] = [tp.offset, tp.metadata or ""]
    return out


def prepare():
    topic, ga, gb = name("rr"), name("gra"), name("grb")
    create_topic(BOOTSTRAP, topic)
    produce(BOOTSTRAP, topic, 5)
    a = Member(BOOTSTRAP, ga, topic, "restart-a")
    b = Member(BOOTSTRAP, gb, topic, "restart-b",
               {"enable.auto.commit": True, "auto.commit.interval.ms": 5000})
    try:
        wait_stable([a])
        wait_stable([b])
        wait_for(lambda: "consumed %d and %d of 30" % (len(a.records), len(b.records)),
                 lambda: len(a.records) >= 30 and len(b.records) >= 30, timeout=20)
        offs = [TopicPartition(topic, p, p % 5 + 1, metadata="meta-%d" % p) for p in sorted(ALL)]
        a.call(lambda c: c.commit(offsets=offs, asynchronous=False))
    finally:
        close_all([a, b])  # b's close commits its final offsets
    want_a = {str(p): [p % 5 + 1, "meta-%d" % p] for p in ALL}
    want_b = {str(p): [5, ""] for p in ALL}
    expect(offsets_with_metadata(ga, topic), want_a, "group A OffsetFetch")
    expect(offsets_with_metadata(gb, topic), want_b, "group B OffsetFetch (auto-commit on close)")
    with open(STATE, "w") as f:
        json.dump({"topic": topic, "groups": {ga: want_a, gb: want_b}, "a": ga}, f)


def verify():
    with open(STATE) as f:
        st = json.load(f)
    topic = st["topic"]
    for g, want in st["groups"].items():
        expect(offsets_with_metadata(g, topic), want, "group %s OffsetFetch" % g)
    a = admin(BOOTSTRAP)
    listed = a.list_consumer_groups(request_timeout=T).result(timeout=T + 5)
    names = {x.group_id for x in listed.valid}
    missing = set(st["groups"]) - names
    if missing:
        raise CheckFailed("list_consumer_groups lacks %s (has %s)" % (sorted(missing), sorted(names)))
    m = Member(BOOTSTRAP, st["a"], topic, "restart-a2")
    try:
        wait_stable([m])
        wait_for(lambda: "resumed member got %d records" % len(m.records),
                 lambda: len({p for (_, p, _, _) in m.records}) >= 5, timeout=15)
        first = {}
        for (_, p, o, _) in m.records:
            first.setdefault(p, o)
        expect(first, {p: p % 5 + 1 for p in ALL if p % 5 + 1 < 5},
               "first offset read per partition by a new member of group A")
    finally:
        close_all([m])


def main():
    if MODE == "prepare":
        checks.run("commit offsets (2 groups) before the restart", prepare)
    else:
        checks.run("committed offsets and metadata read back after the restart", verify)


if __name__ == "__main__":
    sys.exit(main_guard(checks, main))
