#!/usr/bin/env python3
"""librdkafka consumer groups: assignment sizes (range) and eager vs cooperative rebalances.

    python3 compat/groups/rdkafka_assign.py BOOTSTRAP

Checks (suite "rdkafka-assign"), each on its own 6-partition topic and group:
  range: 3 / 6 / 8 members   every member of one generation; 2/2/2, 1x6, 1x6 + 2 idle;
                             disjoint, complete, each member's partitions contiguous
  cooperative-sticky: join   2 members (3+3), a third joins: the partitions revoked (from
                             on_revoke) are exactly the ones that moved, 0 < n < 6; 2/2/2
  eager (range): join        the same with range: all 6 partitions are revoked
"""

import sys
import time

from common import (ALL, Member, check_disjoint_complete, close_all, create_topic, name,
                    produce, wait_stable)
from checklib import Checks, CheckFailed, expect, main_guard

BOOTSTRAP = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
checks = Checks("rdkafka-assign")


def range_group(n):
    topic, group = name("ra%d" % n), name("ga%d" % n)
    create_topic(BOOTSTRAP, topic)
    members = [Member(BOOTSTRAP, group, topic, "ra%d-m%d" % (n, i),
                      {"partition.assignment.strategy": "range"}) for i in range(n)]
    try:
        got = wait_stable(members, timeout=30, settle=0.3)
        check_disjoint_complete(got)
        sizes = sorted(len(a) for a in got.values())
        want = {3: [2, 2, 2], 6: [1] * 6, 8: [0, 0] + [1] * 6}[n]
        expect(sizes, want, "assignment sizes (%s)" % got)
        for m, a in got.items():
            if a and sorted(a) != list(range(min(a), max(a) + 1)):
                raise CheckFailed("range assignment of %s not contiguous: %s" % (m, sorted(a)))
        gens = {m.gen for m in members}
        expect(len(gens), 1, "generations of the members")
    finally:
        close_all(members)


def join_third(strategy):
    coop = strategy == "cooperative-sticky"
    tag = "co" if coop else "ea"
    topic, group = name("r" + tag), name("g" + tag)
    create_topic(BOOTSTRAP, topic)
    produce(BOOTSTRAP, topic, 5)
    conf = {"partition.assignment.strategy": strategy}
    a = Member(BOOTSTRAP, group, topic, tag + "-a", conf)
    b = Member(BOOTSTRAP, group, topic, tag + "-b", conf)
    members = [a, b]
    try:
        before = wait_stable(members, timeout=30, settle=0.3)
        expect(sorted(len(x) for x in before.values()), [3, 3], "2-member assignment %s" % before)
        t0 = time.monotonic()
        c = Member(BOOTSTRAP, group, topic, tag + "-c", conf)
        members.append(c)
        after = wait_stable(members, timeout=30, settle=0.5)
        check_disjoint_complete(after)
        expect(sorted(len(x) for x in after.values()), [2, 2, 2], "3-member assignment %s" % after)
        revoked = {}
        for m in (a, b):
            for kind, gen, parts in m.kinds(since=t0, kinds=("revoke", "lost")):
                if kind == "lost":
                    raise CheckFailed("%s: partitions %s lost (not revoked)" % (m.name, parts))
                for p in parts:
                    revoked.setdefault(p, []).append(m.name)
        for p, who in revoked.items():
            if len(who) > 1 or who[0] not in before or p not in before[who[0]]:
                raise CheckFailed("partition %d revoked by %s; it was owned as %s" % (p, who, before))
        moved = {p for p in ALL if any(p in before[m] and p not in after[m] for m in before)}
        if coop:
            expect(sorted(revoked), sorted(moved),
                   "revoked partitions (before %s, after %s)" % (before, after))
            if not 0 < len(revoked) < 6:
                raise CheckFailed("revoked %s: expected some but not all" % sorted(revoked))
            expect(sorted(after[c.name]), sorted(moved), "the new member's partitions")
        else:
            expect(sorted(revoked), sorted(ALL), "revoked partitions (eager)")
    finally:
        close_all(members)


def main():
    for n in (3, 6, 8):
        checks.run("range: %d members on 6 partitions" % n, lambda n=n: range_group(n))
    checks.run("cooperative-sticky: a 3rd member joins, only moved partitions revoked",
               lambda: join_third("cooperative-sticky"))
    checks.run("eager (range): a 3rd member joins, all partitions revoked",
               lambda: join_third("range"))


if __name__ == "__main__":
    sys.exit(main_guard(checks, main))
