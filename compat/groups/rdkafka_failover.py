#!/usr/bin/env python3
"""librdkafka consumer groups: members joining and crashing; static membership.

    python3 compat/groups/rdkafka_failover.py BOOTSTRAP

Checks (suite "rdkafka-failover"):
  join + crash       while a producer writes 50 records/s into 6 partitions, member A
                     (range, auto-commit) is joined by B (a child process) and C; B is
                     killed with SIGKILL; after the session timeout A and C share all 6.
                     For every generation (read from librdkafka's group metadata at each
                     assignment callback) and partition, at most one member consumed
                     records; no member got a record of a partition outside its
                     assignment; every produced record was consumed by someone.
  static membership  A and B (a child process) with group.instance.id; B is killed with
                     SIGKILL and restarted with the same group.instance.id: it gets the
                     same partitions back, and A sees no revoke/assign callback (also not
                     after the session timeout has passed).
"""

import sys
import time

from common import (ALL, SESSION_MS, ChildMember, Member, Ticker, check_disjoint_complete,
                    close_all, create_topic, group_state, name, wait_for, wait_stable)
from checklib import Checks, CheckFailed, expect, main_guard

BOOTSTRAP = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
checks = Checks("rdkafka-failover")
CONF = {"partition.assignment.strategy": "range", "enable.auto.commit": True,
        "auto.commit.interval.ms": 200}


def join_and_crash():
    topic, group = name("rf"), name("gf")
    create_topic(BOOTSTRAP, topic)
    ticker = Ticker(BOOTSTRAP, topic, interval=0.02)
    members = []
    try:
        a = Member(BOOTSTRAP, group, topic, "fo-a", CONF)
        members.append(a)
        wait_stable([a], timeout=30)
        time.sleep(0.5)
        b = ChildMember(BOOTSTRAP, group, topic, "fo-b", CONF)
        members.append(b)
        wait_stable([a, b], timeout=30)
        time.sleep(0.5)
        c = Member(BOOTSTRAP, group, topic, "fo-c", CONF)
        members.append(c)
        three = wait_stable([a, b, c], timeout=30, settle=0.2)
        expect(sorted(len(x) for x in three.values()), [2, 2, 2], "3-member assignment")
        time.sleep(1.0)
        gen3 = a.gen
        t_kill = time.monotonic()
        b.kill()
        two = wait_stable([a, c], timeout=SESSION_MS / 1000 + 20)
        took = time.monotonic() - t_kill
        check_disjoint_complete(two)
        if a.gen is None or gen3 is None or a.gen <= gen3:
            raise CheckFailed("no new generation after the crash: %s (was %s)" % (a.gen, gen3))
        time.sleep(1.0)
        sent = ticker.stop()
        ticker = None

        def all_consumed():
            got = set()
            for m in members:
                got |= {(p, o) for (_, p, o, _) in m.records}
            return sent <= got
        wait_for(lambda: "%d produced records never consumed: %s" % (
            len(sent - {(p, o) for m in members for (_, p, o, _) in m.records}),
            sorted(sent - {(p, o) for m in members for (_, p, o, _) in m.records})[:5]),
            all_consumed, timeout=15)
        # who consumed what, per generation
        owners = {}
        gens = set()
        for m in members:
            if m.strays:
                raise CheckFailed("%s got %d records of partitions outside its assignment, "
                                  "e.g. (gen, partition, offset) %s" % (
                                      m.name, len(m.strays), m.strays[0][:3]))
            assigned_gens = [g for (k, g, _) in m.kinds() if k == "assign"]
            if assigned_gens != sorted(set(assigned_gens)):
                raise CheckFailed("%s: assignment generations not increasing: %s"
                                  % (m.name, assigned_gens))
            for (g, p, _, _) in m.records:
                owners.setdefault((g, p), set()).add(m.name)
                gens.add(g)
        both = {k: sorted(v) for k, v in owners.items() if len(v) > 1}
        if both:
            raise CheckFailed("partitions consumed by two members in one generation: "
                              "(generation, partition) -> members %s" % both)
        if None in gens:
            raise CheckFailed("records consumed outside any generation")
        if len(gens) < 4:
            raise CheckFailed("records consumed in generations %s: expected at least 4 "
                              "(A; A+B; A+B+C; A+C)" % sorted(gens))
        if took < SESSION_MS / 1000 * 0.5:
            raise CheckFailed("the group rebalanced %.1fs after the SIGKILL, before the "
                              "session timeout (%d ms)" % (took, SESSION_MS))
    finally:
        if ticker is not None:
            try:
                ticker.stop()
            except Exception:  # noqa: BLE001
                pass
        close_all(members)


def static_restart():
    topic, group = name("rs"), name("gs")
    create_topic(BOOTSTRAP, topic)
    members = []
    try:
        a = Member(BOOTSTRAP, group, topic, "st-a", dict(CONF, **{"group.instance.id": "st-a"}))
        members.append(a)
        wait_stable([a], timeout=30)
        b = ChildMember(BOOTSTRAP, group, topic, "st-b", dict(CONF, **{"group.instance.id": "st-b"}))
        members.append(b)
        before = wait_stable([a, b], timeout=30, settle=1.0)
        expect(sorted(len(x) for x in before.values()), [3, 3], "assignment %s" % before)
        t_mark = time.monotonic()
        gen_a = a.gen
        b.kill()
        b2 = ChildMember(BOOTSTRAP, group, topic, "st-b", dict(CONF, **{"group.instance.id": "st-b"}))
        members.append(b2)
        wait_for(lambda: "restarted static member got no assignment: " + group_state([a, b2]),
                 lambda: b2.gen is not None, timeout=SESSION_MS / 1000 - 0.5)
        took = time.monotonic() - t_mark
        expect(sorted(b2.assignment), sorted(before["st-b"]),
               "partitions of the restarted member (%.1fs after the kill)" % took)
        # stay past the old session's timeout: still no rebalance anywhere
        time.sleep(max(0.0, SESSION_MS / 1000 + 2.0 - (time.monotonic() - t_mark)))
        ev = a.kinds(since=t_mark)
        if ev:
            raise CheckFailed("the other member saw a rebalance: %s" % ev)
        expect(sorted(a.assignment), sorted(before["st-a"]), "the other member's partitions")
        expect(a.live_gen, gen_a, "the other member's generation")
        ev = [e for e in b2.kinds() if e[0] != "assign" or sorted(e[2]) != sorted(before["st-b"])]
        if ev:
            raise CheckFailed("the restarted member saw more rebalances: %s" % b2.kinds())
        check_disjoint_complete({"st-a": a.assignment, "st-b": b2.assignment})
    finally:
        close_all(members)


def main():
    checks.run("join + crash (SIGKILL): no partition consumed twice in a generation, no loss",
               join_and_crash)
    checks.run("static membership: member killed and restarted keeps its partitions, "
               "no rebalance", static_restart)


if __name__ == "__main__":
    sys.exit(main_guard(checks, main))
