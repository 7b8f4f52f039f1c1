#!/usr/bin/env python3
"""Jepsen-style workload, nemesis and checker for a Kafka-compatible cluster.

    jepsen.py [--backend kafka|sluice] [--topology combined|split] [--duration S]
              [--scenarios workload,2013,failover,groups,txn] [--summary FILE] [--keep] ...
    jepsen.py --self-test           # the checker against synthetic histories

Scenarios (one cluster, started once, healed and made whole between scenarios):

  workload  K idempotent acks=all producers write unique integers to a topic with RF=3,
            min.insync.replicas=2; two consumers read every partition concurrently
            (assign(), no group); a nemesis cycles through faults (SIGKILL of a partition
            leader then restart, SIGSTOP of a follower for longer than
            replica.lag.time.max.ms then SIGCONT, isolation of a leader through the proxies
            then heal, SIGKILL of the active controller then restart, isolation of the
            active controller then heal); then everything is healed, and every partition
            is drained from offset 0 by a fresh consumer.
  2013      Kafka's 2013 Jepsen scenario on a 1-partition topic with min.insync.replicas=1:
            the followers are cut from the leader until the ISR is the leader alone, writes
            are acknowledged by the leader alone, then the leader is isolated and the
            followers come back. With unclean.leader.election.enable=false the partition
            must go offline (no leader, writes fail) rather than elect a stale follower;
            after the old leader is healed no acknowledged write may be missing.
  failover  a librdkafka producer and Kafka's Java consumer (FailoverConsumer.java) through
            a SIGKILL of a partition leader: the Java consumer must read every
            acknowledged value, and the drain must hold every one.
  groups    a librdkafka consumer group (2 members, synchronous commits) through a SIGKILL
            of its group coordinator: no acknowledged commit lost, commits resume on the
            new coordinator, nothing acknowledged left unprocessed (at-least-once).
  txn       transactional librdkafka producers (commit, deliberate flush+abort, simulated
            client crashes before/during commit) through a SIGKILL of a transaction
            coordinator and then of a partition leader: read_committed must show every
            committed transaction, no aborted one, unknown outcomes all-or-nothing, no
            value twice, and a transaction committed after recovery must become visible.

The checker (check()) flags: acknowledged writes missing from the drain (lost), a value
at two offsets (duplicate), an offset read with two different values (divergent), a
consumer session seeing an offset not above one it saw before on the same partition
(backwards), an ack whose offset does not hold its value in the drain (ack-mismatch),
values read that no producer sent (phantom), plus scenario-specific anomalies (the txn
scenario's are computed by check_txn()). Exit
status 1 if any anomaly count is non-zero, 2 on a harness error.
"""

import argparse
import collections
import itertools
import json
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cluster as cl  # noqa: E402
from cluster import log  # noqa: E402

CLIENT_TIMEOUTS = {
    "socket.timeout.ms": 10000,
    "topic.metadata.refresh.interval.ms": 2000,
    "metadata.max.age.ms": 6000,
    "reconnect.backoff.ms": 50,
    "reconnect.backoff.max.ms": 1000,
    "retry.backoff.ms": 100,
    "log_level": 2,
}


# =========================================================================================
# History and checker (no client library needed: the self-test runs anywhere)
# =========================================================================================

class History:
    """Everything the clients saw. Thread-safe."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counter = itertools.count()
        self.attempted = {}  # value -> producer
        self.acked = {}  # value -> (partition, offset, t)
        self.failed = {}  # value -> error string
        self.reads = []  # (session, partition, offset, value)
        self.drain = []  # (partition, offset, value) read by the final drain
        self.events = []  # (t_start, t_end, name, detail)
        self.anomalies = collections.defaultdict(list)  # scenario-specific
        self.notes = []
        self.extra_counts = {}  # scenario-specific counts, reported and summarised
        self.generic_counts = True  # False: the first report line (acks, drain) does not apply
        self.write_times = []  # (partition, t): writes that count as acknowledged for the
        #                        availability figures besides h.acked (committed transactions)
        # What a run must have done to count (a scenario sets them): a history that could
        # pass empty is not evidence of anything.
        self.min_acked = 0  # acknowledged writes
        self.min_reads = 0  # values read by the concurrent readers
        self.faults_expected = ()  # fault kinds that must each have been injected
        self.proxy_unknown = 0  # connections the proxy could not attribute to a process
        # Failed deliveries allowed (None: any number, as where writes fail by design).
        self.max_failed = None
        # Plain (non-idempotent) producers: a retried write may land twice, and retries
        # may reorder a producer's writes (at-least-once, as Kafka promises them): counted,
        # not anomalies. Loss, divergence and the rest still are.
        self.at_least_once = False

    def next_value(self):
        with self.lock:
            return next(self.counter)

    def attempt(self, v, producer):
        with self.lock:
            self.attempted[v] = producer

    def ack(self, v, partition, offset):
        if partition is None or offset is None or offset < 0:
            self.notes.append("ack of %r without an offset (partition %r, offset %r)" % (v, partition, offset))
            partition = -1 if partition is None else partition
            offset = -1 if offset is None or offset < 0 else offset
        with self.lock:
            self.acked[v] = (partition, offset, time.monotonic())
            self.failed.pop(v, None)

    def fail(self, v, err):
        with self.lock:
            if v not in self.acked:
                self.failed[v] = err

    def read(self, session, partition, offset, value):
        if partition is None or offset is None:
            self.notes.append("read of %r without a position (partition %r, offset %r)" % (value, partition, offset))
            return
        with self.lock:
            self.reads.append((session, partition, offset, value))

    def add_drain(self, partition, offset, value):
        with self.lock:
            self.drain.append((partition, offset, value))

    def anomaly(self, kind, evidence):
        with self.lock:
            self.anomalies[kind].append(evidence)


def parse_value(raw):
    try:
        return int(raw)
    except (TypeError, ValueError):
        return raw if isinstance(raw, str) else repr(raw)


def check(h, drained=True):
    """Return {"counts": {...}, "anomalies": {kind: [evidence...]}}."""
    an = collections.defaultdict(list)
    drain_at = {}  # (p, off) -> value
    drain_values = collections.defaultdict(set)  # value -> {(p, off)}
    for p, off, v in h.drain:
        if (p, off) in drain_at and drain_at[(p, off)] != v:
            an["divergent"].append("drain read (%d,%d) as %r and %r" % (p, off, drain_at[(p, off)], v))
        drain_at[(p, off)] = v
        drain_values[v].add((p, off))

    # every read: concurrent consumers and the drain
    at = collections.defaultdict(set)  # (p, off) -> values
    where = collections.defaultdict(set)  # value -> {(p, off)}
    for _s, p, off, v in h.reads:
        at[(p, off)].add(v)
        where[v].add((p, off))
    for (p, off), v in drain_at.items():
        at[(p, off)].add(v)
        where[v].add((p, off))
    for v, acked in h.acked.items():
        if acked[1] < 0:
            continue  # acknowledged without an offset: checked for loss only
        where_ack = (acked[0], acked[1])
        at[where_ack].add(v)
        where[v].add(where_ack)

    for (p, off), vs in sorted(at.items()):
        if len(vs) > 1:
            an["divergent"].append("offset %d of partition %d holds %s (reads, drain and acks)"
                                   % (off, p, sorted(map(str, vs))))
    duplicated = 0
    for v, locs in sorted(where.items(), key=lambda kv: str(kv[0])):
        if len(locs) > 1 and h.at_least_once:
            duplicated += 1
        elif len(locs) > 1:
            ack = h.acked.get(v)
            an["duplicate"].append("value %r at %s (%s; sent by %s)" % (
                v, sorted(locs), "acknowledged at (%d,%d)" % ack[:2] if ack else "not acknowledged",
                h.attempted.get(v, "nobody")))
    for v in sorted(set(where) - set(h.attempted), key=str):
        an["phantom"].append("value %r read at %s but never sent" % (v, sorted(where[v])))

    # offsets going backwards within a consumer session
    last = {}
    for s, p, off, v in h.reads:
        k = (s, p)
        if k in last and off <= last[k]:
            an["backwards"].append("session %s partition %d: offset %d after %d" % (s, p, off, last[k]))
        last[k] = off

    if drained:
        for v, (p, off, _t) in sorted(h.acked.items(), key=lambda kv: str(kv[0])):
            if v not in drain_values:
                an["lost"].append("value %r acknowledged at (%d,%d), absent from the drain" % (v, p, off))
            elif off >= 0 and drain_at.get((p, off)) != v:
                an["ack-mismatch"].append("value %r acknowledged at (%d,%d); the drain has %r there"
                                          " and the value at %s" % (v, p, off, drain_at.get((p, off)),
                                                                    sorted(drain_values[v])))

    if drained and h.generic_counts:
        # A value a concurrent reader saw (below the high watermark: committed) must
        # still be there at the end.
        for v in sorted({v for _s, _p, _off, v in h.reads} - set(drain_values), key=str):
            locs = sorted((p, off) for _s, p, off, rv in h.reads if rv == v)
            an["lost-after-read"].append("value %r read at %s by a concurrent reader, absent from the drain"
                                         % (v, locs))

    # Per producer and partition, acknowledged values (each producer sends increasing
    # values) must sit at increasing offsets: idempotent producers keep their order.
    order = collections.defaultdict(list)
    for v, (p, off, _t) in h.acked.items():
        if h.at_least_once:
            break
        if off >= 0 and isinstance(v, int) and v in h.attempted:
            order[(h.attempted[v], p)].append((v, off))
    for (producer, p), acks in sorted(order.items(), key=str):
        acks.sort()
        for (v1, o1), (v2, o2) in zip(acks, acks[1:]):
            if o2 <= o1:
                an["producer-order"].append("producer %s, partition %d: value %r at offset %d, after value %r "
                                            "at offset %d" % (producer, p, v2, o2, v1, o1))

    # A run that did nothing proves nothing.
    if len(h.acked) < h.min_acked:
        an["too-few-acks"].append("%d acknowledged writes, fewer than the %d a run needs"
                                  % (len(h.acked), h.min_acked))
    if len(h.reads) < h.min_reads:
        an["too-few-reads"].append("%d concurrent reads, fewer than the %d a run needs"
                                   % (len(h.reads), h.min_reads))
    injected = collections.Counter(name for _t0, _t1, name, _detail in h.events)
    for kind in h.faults_expected:
        if not injected[kind]:
            an["fault-not-injected"].append("fault %s was never injected (injected: %s)"
                                            % (kind, dict(injected) or "none"))
    # Failed deliveries, by producer and error: a producer that gets them where Kafka's
    # gets none is an outage to its user even when nothing acknowledged is lost.
    failed_by = collections.Counter((h.attempted.get(v, "?"), err) for v, err in h.failed.items())
    if h.max_failed is not None and len(h.failed) > h.max_failed:
        an["delivery-failures"].append("%d writes failed to be delivered (at most %d allowed): %s"
                                       % (len(h.failed), h.max_failed,
                                          "; ".join("%s: %s x%d" % (p, e, n)
                                                    for (p, e), n in failed_by.most_common(10))))
    if h.proxy_unknown:
        an["proxy-unattributed"].append("%d connections the partition proxy could not attribute to a process "
                                        "(a cut may not have applied to them)" % h.proxy_unknown)

    for kind, ev in h.anomalies.items():
        an[kind].extend(ev)

    unknown = set(h.attempted) - set(h.acked) - set(h.failed)
    counts = {
        "attempted": len(h.attempted),
        "acknowledged": len(h.acked),
        "failed": len(h.failed),
        "unknown": len(unknown),
        "failed_or_unknown_present": len((set(h.failed) | unknown) & set(drain_values)),
        "read_concurrent": len(h.reads),
        "read_drain": len(h.drain),
        "acks_without_offset": sum(1 for (_p, off, _t) in h.acked.values() if off < 0),
        "acks_checked_at_offset": sum(1 for v, (p, off, _t) in h.acked.items()
                                      if drain_at.get((p, off)) == v),
        "failed_by": {"%s: %s" % pe: n for pe, n in failed_by.most_common()},
    }
    if h.at_least_once:
        h.extra_counts["values_written_twice"] = duplicated
    if h.extra_counts:
        counts["extra"] = dict(h.extra_counts)
    if not h.generic_counts:
        counts["generic"] = False
    return {"counts": counts, "anomalies": {k: v for k, v in an.items() if v}}


def check_txn(txns, committed_reads, uncommitted_reads, concurrent_committed=()):
    """The transactional checks (the txn scenario). txns: [{"id", "producer", "values",
    "outcome": committed|aborted|unknown, "acks": {value: (p, off)}, "path": [...]}];
    committed_reads / uncommitted_reads: [(p, off, value)] read from offset 0 to the end
    of every partition by a read_committed / read_uncommitted consumer after recovery;
    concurrent_committed: [(p, off, value)] read by a read_committed consumer during the
    run. Returns ({kind: [evidence]}, counts).

    txn-commit-lost    a value of a committed transaction (commit_transaction returned)
                       not in the read_committed read
    txn-abort-visible  a value of an aborted transaction (abort_transaction returned) in a
                       read_committed read (the final one or the concurrent one), or of a
                       transaction whose client crashed before it called commit_transaction
    txn-atomicity      an unknown-outcome transaction partly visible to read_committed
    txn-duplicate      a value at two offsets (either read), or read twice
    txn-uncommitted-missing  a value of a committed transaction not in the
                       read_uncommitted read (sanity: read_uncommitted sees every record)
    ack-mismatch       a committed value not at the offset its delivery report gave
    divergent          one (partition, offset) holding different values in the two reads
    """
    an = collections.defaultdict(list)
    rc = collections.defaultdict(list)  # value -> [(p, off)]
    ru = collections.defaultdict(list)
    for p, off, v in committed_reads:
        rc[v].append((p, off))
    for p, off, v in uncommitted_reads:
        ru[v].append((p, off))
    seen_concurrent = collections.defaultdict(set)
    for p, off, v in concurrent_committed:
        seen_concurrent[v].add((p, off))

    def desc(t):
        return "txn %s (%d values; %s)" % (t["id"], len(t["values"]), "; ".join(t.get("path", [])) or "-")

    def where(v):
        return "%s rc %s ru %s" % (v, rc.get(v, []), ru.get(v, []))

    counts = collections.Counter()
    for t in txns:
        vals = t["values"]
        counts["txn_" + t["outcome"]] += 1
        counts["values_" + t["outcome"]] += len(vals)
        if not vals:
            continue
        vis = [v for v in vals if v in rc]
        if t["outcome"] == "committed":
            missing = [v for v in vals if v not in rc]
            if missing:
                an["txn-commit-lost"].append("%s: committed, but %d/%d values not visible to read_committed: %s"
                                             % (desc(t), len(missing), len(vals),
                                                ", ".join("%s (acked at %s)" % (where(v), t["acks"].get(v))
                                                          for v in missing[:6])))
            ru_missing = [v for v in vals if v not in ru]
            if ru_missing:
                an["txn-uncommitted-missing"].append("%s: committed, but %d values not read by read_uncommitted: %s"
                                                     % (desc(t), len(ru_missing), ru_missing[:6]))
            for v in vals:
                ack = t["acks"].get(v)
                if ack and v in rc and tuple(ack) not in rc[v]:
                    an["ack-mismatch"].append("%s: value %r acknowledged at %s, read_committed read it at %s"
                                              % (desc(t), v, tuple(ack), rc[v]))
        elif t["outcome"] == "aborted":
            if vis:
                an["txn-abort-visible"].append("%s: aborted, but %d/%d values visible to read_committed: %s"
                                               % (desc(t), len(vis), len(vals), ", ".join(where(v) for v in vis[:6])))
        else:
            if vis and t.get("never_committed"):
                an["txn-abort-visible"].append("%s: the client crashed before calling commit_transaction, but %d/%d "
                                               "values are visible to read_committed: %s"
                                               % (desc(t), len(vis), len(vals), ", ".join(where(v) for v in vis[:6])))
            elif vis and len(vis) < len(vals):
                an["txn-atomicity"].append("%s: outcome unknown, %d of its %d values visible to read_committed: "
                                           "visible %s; not visible %s"
                                           % (desc(t), len(vis), len(vals), [where(v) for v in vis[:4]],
                                              [where(v) for v in vals if v not in rc][:4]))
            counts["unknown_resolved_" + ("committed" if len(vis) == len(vals) else
                                          "aborted" if not vis else "partial")] += 1
        if t["outcome"] != "committed":
            conc = [v for v in vals if v in seen_concurrent]
            if t["outcome"] == "aborted" and conc:
                an["txn-abort-visible"].append("%s: aborted, but the concurrent read_committed consumer read "
                                               "%s" % (desc(t), ", ".join("%r at %s" % (v, sorted(seen_concurrent[v]))
                                                                         for v in conc[:6])))
    for name, m in (("read_committed", rc), ("read_uncommitted", ru)):
        for v, locs in sorted(m.items(), key=lambda kv: str(kv[0])):
            if len(locs) > 1:
                an["txn-duplicate"].append("value %r read %d times by %s, at %s" % (v, len(locs), name, locs))
    at = {}
    for p, off, v in list(committed_reads) + list(uncommitted_reads) + list(concurrent_committed):
        if at.setdefault((p, off), v) != v:
            an["divergent"].append("offset %d of partition %d read as %r and %r" % (off, p, at[(p, off)], v))
    return {k: v for k, v in an.items() if v}, dict(counts)


def ack_gaps(h, events):
    """Availability figures: the longest time a partition went without an acknowledged
    write (per partition, the largest over partitions), overall and around each fault."""
    per_p = collections.defaultdict(list)
    for (p, _o, t) in h.acked.values():
        per_p[p].append(t)
    for p, t in h.write_times:
        per_p[p].append(t)
    gaps = []  # (gap, start)
    for ts in per_p.values():
        ts.sort()
        gaps.extend((b - a, a) for a, b in zip(ts, ts[1:]))
    res = {"longest_ack_gap_s": round(max(gaps)[0], 2) if gaps else None, "per_fault": []}
    # A gap belongs to the fault most recently started when the gap began (from 0.5 s
    # before the fault's start until 0.5 s before the next fault's start, or 10 s after
    # the last fault's end); gaps before the first fault are the baseline.
    evs = sorted(events)
    first = evs[0][0] - 0.5 if evs else float("inf")
    base = [g for g, a in gaps if a < first]
    res["baseline_longest_ack_gap_s"] = round(max(base), 2) if base else None
    for i, (t0, t1, name, detail) in enumerate(evs):
        end = evs[i + 1][0] - 0.5 if i + 1 < len(evs) else t1 + 10
        inside = [g for g, a in gaps if t0 - 0.5 <= a < end]
        res["per_fault"].append((name, detail, round(max(inside), 2) if inside else None))
    return res


def report(name, result, out=sys.stdout, limit=10):
    c = result["counts"]
    if not c.get("generic", True):
        print("%s: attempted %d values; read %d concurrently" % (name, c["attempted"], c["read_concurrent"]),
              file=out)
    else:
        print("%s: attempted %d, acknowledged %d, failed %d, unknown %d (of which present in the "
              "drain: %d), read %d concurrently + %d by the drain, acks found at their offset %d/%d"
              " (%d acks without an offset)"
              % (name, c["attempted"], c["acknowledged"], c["failed"], c["unknown"],
                 c["failed_or_unknown_present"], c["read_concurrent"], c["read_drain"],
                 c["acks_checked_at_offset"], c["acknowledged"], c["acks_without_offset"]), file=out)
    if c.get("extra"):
        print("%s: %s" % (name, ", ".join("%s %s" % kv for kv in c["extra"].items())), file=out)
    if c.get("failed_by"):
        print("%s: failed deliveries by producer and error: %s"
              % (name, "; ".join("%s x%d" % kv for kv in c["failed_by"].items())), file=out)
    kinds = ["lost", "duplicate", "divergent", "backwards", "ack-mismatch", "phantom"]
    if not c.get("generic", True):  # the txn scenario
        kinds = ["txn-commit-lost", "txn-abort-visible", "txn-duplicate", "txn-atomicity", "txn-stuck",
                 "txn-timeout-unresolved", "txn-timeout-committed", "txn-uncommitted-missing", "duplicate", "divergent", "backwards", "ack-mismatch", "phantom"]
    kinds += sorted(k for k in result["anomalies"] if k not in kinds)
    print("%s: anomalies: %s" % (name, ", ".join("%s %d" % (k, len(result["anomalies"].get(k, [])))
                                                  for k in kinds)), file=out)
    for k in kinds:
        ev = result["anomalies"].get(k, [])
        for e in ev[:limit]:
            print("  %s: %s" % (k.upper(), e), file=out)
        if len(ev) > limit:
            print("  %s: ... and %d more" % (k.upper(), len(ev) - limit), file=out)
    out.flush()


def self_test():
    """Feed the checker synthetic histories, one per anomaly; each must be flagged, and a
    clean history must pass."""
    def base():
        h = History()
        for v, (p, off) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
            h.attempt(v, 0)
            h.ack(v, p, off)
            h.add_drain(p, off, v)
            h.read("c1", p, off, v)
        return h

    failures = []

    def expect(name, h, kind, n=1):
        r = check(h)
        got = len(r["anomalies"].get(kind, []))
        others = {k: len(v) for k, v in r["anomalies"].items() if k != kind}
        ok = got >= n if kind else not r["anomalies"]
        print("%s self-test: %s -> %s" % ("PASS" if ok else "FAIL", name,
                                          {k: len(v) for k, v in r["anomalies"].items()} or "clean"))
        if not ok:
            failures.append(name)
        return r, others

    expect("clean history", base(), None)

    h = base()  # lost: acked value 4 at (1,2), not in the drain
    h.attempt(4, 0)
    h.ack(4, 1, 2)
    expect("lost write", h, "lost")

    h = base()  # duplicate: value 3 also at (1,2)
    h.add_drain(1, 2, 3)
    expect("duplicate", h, "duplicate")

    h = base()  # divergent: a concurrent read saw 9 at (0,1), the drain has 1
    h.attempt(9, 0)
    h.read("c2", 0, 1, 9)
    expect("divergent offset", h, "divergent")

    h = base()  # backwards: session c1 sees (0,0) after (0,1)
    h.read("c1", 0, 0, 0)
    expect("backwards read", h, "backwards")

    h = base()  # ack mismatch: value 5 acked at (1,5), the drain has it at (1,2)
    h.attempt(5, 0)
    h.ack(5, 1, 5)
    h.add_drain(1, 2, 5)
    expect("ack at the wrong offset", h, "ack-mismatch")

    h = base()  # phantom: a value nobody wrote
    h.add_drain(1, 2, 77)
    expect("phantom value", h, "phantom")

    h = base()  # a failed/unknown write present in the drain is not an anomaly
    h.attempt(6, 0)
    h.fail(6, "timed out")
    h.add_drain(1, 2, 6)
    r, _ = expect("indeterminate write present", h, None)

    h = base()  # read by a concurrent reader, gone from the drain
    h.attempt(8, 0)
    h.read("c1", 1, 2, 8)
    expect("read, then lost", h, "lost-after-read")

    h = base()  # one producer's later value at an earlier offset
    h.attempt(10, 1)
    h.attempt(11, 1)
    h.ack(10, 1, 3)
    h.ack(11, 1, 2)
    h.add_drain(1, 2, 11)
    h.add_drain(1, 3, 10)
    expect("producer order", h, "producer-order")

    h = base()  # plain producers (at least once): a retried value written twice passes...
    h.at_least_once = True
    h.add_drain(1, 2, 3)
    r, _ = expect("plain producer: a value written twice", h, None)
    if r["counts"].get("extra", {}).get("values_written_twice") != 1:
        print("FAIL self-test: plain producer: the value written twice is not counted: %s" % r["counts"])
        failures.append("plain duplicate count")
    h = base()  # ...but a lost one does not
    h.at_least_once = True
    h.attempt(4, 0)
    h.ack(4, 1, 2)
    expect("plain producer: lost write", h, "lost")

    h = History()  # an empty history, where a run needs acks and reads
    h.min_acked, h.min_reads = 1, 1
    r, _ = expect("empty history", h, "too-few-acks")
    if not r["anomalies"].get("too-few-reads"):
        failures.append("empty history: too-few-reads")

    h = base()  # faults expected, none injected
    h.faults_expected = ("kill-leader",)
    expect("zero faults", h, "fault-not-injected")

    h = base()  # more failed deliveries than allowed
    h.max_failed = 1
    for v in (20, 21):
        h.attempt(v, 2)
        h.fail(v, "Local: Message timed out")
    expect("failed deliveries over the margin", h, "delivery-failures")

    h = base()  # the proxy could not attribute a connection
    h.proxy_unknown = 1
    expect("unattributed proxy connection", h, "proxy-unattributed")

    h = base()  # scenario anomalies are carried through
    h.anomaly("unclean-election", "partition 0 led by 2 while isolated")
    expect("scenario anomaly", h, "unclean-election")

    # the transactional checker
    def txn(i, outcome, vals, part=0, base=0):
        return {"id": "t%d" % i, "producer": "p", "values": list(vals), "outcome": outcome,
                "acks": {v: (part, base + k) for k, v in enumerate(vals)}, "path": []}

    def txn_case(name, kind, mutate):
        txns = [txn(0, "committed", [0, 1], 0, 0), txn(1, "aborted", [2, 3], 1, 0),
                txn(2, "unknown", [4, 5], 2, 0), txn(3, "unknown", [6, 7], 0, 3),
                txn(4, "committed", [8], 1, 3)]
        # log: p0: 0 1 marker 6(aborted) 7(aborted) marker; p1: 2 3 (aborted) marker 8 marker;
        #      p2: 4 5 marker (the unknown t2 committed, t3 aborted)
        rc = [(0, 0, 0), (0, 1, 1), (1, 3, 8), (2, 0, 4), (2, 1, 5)]
        ru = rc + [(1, 0, 2), (1, 1, 3), (0, 3, 6), (0, 4, 7)]
        conc = [(0, 0, 0)]
        rc, ru, conc = mutate(txns, rc, ru, conc) or (rc, ru, conc)
        an, _counts = check_txn(txns, rc, ru, conc)
        ok = (not an) if kind is None else bool(an.get(kind))
        print("%s self-test: %s -> %s" % ("PASS" if ok else "FAIL", name,
                                          {k: len(v) for k, v in an.items()} or "clean"))
        if not ok:
            failures.append(name)

    txn_case("txn: clean history (unknown outcomes all-or-nothing)", None, lambda t, rc, ru, cc: None)
    txn_case("txn: committed value lost", "txn-commit-lost",
             lambda t, rc, ru, cc: ([r for r in rc if r[2] != 8], ru, cc))
    txn_case("txn: aborted value visible", "txn-abort-visible",
             lambda t, rc, ru, cc: (rc + [(1, 0, 2)], ru, cc))
    txn_case("txn: aborted value read concurrently", "txn-abort-visible",
             lambda t, rc, ru, cc: (rc, ru, cc + [(1, 1, 3)]))
    txn_case("txn: crashed before commit, yet visible", "txn-abort-visible",
             lambda t, rc, ru, cc: t[2].update({"never_committed": True}))
    txn_case("txn: unknown transaction half visible", "txn-atomicity",
             lambda t, rc, ru, cc: ([r for r in rc if r[2] != 5], ru, cc))
    txn_case("txn: value twice", "txn-duplicate",
             lambda t, rc, ru, cc: (rc + [(2, 5, 4)], ru + [(2, 5, 4)], cc))
    txn_case("txn: read_uncommitted misses a committed value", "txn-uncommitted-missing",
             lambda t, rc, ru, cc: (rc, [r for r in ru if r[2] != 1], cc))
    txn_case("txn: committed value at another offset", "ack-mismatch",
             lambda t, rc, ru, cc: t[4]["acks"].update({8: (1, 4)}))

    # A stalled producer's note: where its writes wait, from librdkafka's statistics.
    summary = stats_summary(json.dumps({
        "eos": {"idemp_state": "DrainBump", "idemp_stateage": 41000, "producer_id": 7,
                "producer_epoch": 1},
        "brokers": {"127.0.0.1:1/2": {"nodeid": 2, "state": "UP", "outbuf_cnt": 0, "waitresp_cnt": 3,
                                      "req_timeouts": 9, "disconnects": 4}},
        "topics": {"t": {"topic": "t", "partitions": {
            "0": {"leader": 2, "msgq_cnt": 800, "xmit_msgq_cnt": 12},
            "-1": {"leader": -1, "msgq_cnt": 0, "xmit_msgq_cnt": 0}}}}}))
    want = ["idempotence DrainBump for 41.0s, producer id 7 epoch 1",
            "broker 2 UP (out 0, awaiting response 3, timeouts 9, disconnects 4)",
            "t[0] leader 2 queued 800 in transmit 12"]
    if [w for w in want if w not in summary] or "t[-1]" in summary:
        failures.append("stats summary")
        print("FAIL self-test: stalled producer's statistics summary: %s" % summary)
    else:
        print("PASS self-test: stalled producer's statistics summary")

    # The partition proxy (loopback sockets, no node).
    failures += cl.proxy_self_test()

    print("self-test: %d failed" % len(failures))
    return 1 if failures else 0


# =========================================================================================
# Clients
# =========================================================================================

def _ck():
    import confluent_kafka  # noqa: F401
    return confluent_kafka


class Admin:
    def __init__(self, c):
        from confluent_kafka.admin import AdminClient
        self.c = c
        self.admin = AdminClient(dict(CLIENT_TIMEOUTS, **{"bootstrap.servers": c.bootstrap()}))

    def partitions(self, topic, timeout=5):
        """{partition: (leader, replicas, isr)} or None if metadata could not be had."""
        try:
            md = self.admin.list_topics(topic, timeout=timeout)
        except Exception:
            return None
        t = md.topics.get(topic)
        if t is None or (t.error is not None and not t.partitions):
            return None
        return {p: (pm.leader, list(pm.replicas), list(pm.isrs)) for p, pm in t.partitions.items()}

    def create_topic(self, topic, partitions, config, timeout=60):
        from confluent_kafka.admin import NewTopic
        fs = self.admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=3,
                                                config=config)], operation_timeout=30, request_timeout=30)
        for f in fs.values():
            f.result(timeout=timeout)
        self.wait_healthy(topic, partitions, timeout)

    def wait_healthy(self, topic, partitions=None, timeout=60):
        """Every partition has a leader and a full ISR (bounded). Returns the layout."""
        deadline = time.monotonic() + timeout
        info = None
        while time.monotonic() < deadline:
            info = self.partitions(topic)
            if info and (partitions is None or len(info) == partitions) and all(
                    l >= 0 and sorted(isr) == sorted(rep) and len(rep) == 3 for l, rep, isr in info.values()):
                return info
            time.sleep(0.5)
        raise TimeoutError("topic %s not healthy in %ss: %s" % (topic, timeout, info))


class ProducerPool:
    """K producer threads, each an acks=all librdkafka producer, idempotent unless
    idempotent=False (the plain workload: retries may duplicate and reorder)."""

    def __init__(self, c, h, topic, count=3, rate=100.0, timeout_ms=30000, values=None, name="p",
                 idempotent=True):
        self.idempotent = idempotent
        self.c, self.h, self.topic = c, h, topic
        self.count, self.rate, self.timeout_ms = count, rate, timeout_ms
        self.values = values  # optional iterator of values (else h.next_value)
        self.values_lock = threading.Lock()
        self.name = name
        self.stop_ev = threading.Event()
        self.threads = []
        self.fatal = 0

    def conf(self):
        return dict(CLIENT_TIMEOUTS, **{
            "bootstrap.servers": self.c.bootstrap(), "acks": "all", "enable.idempotence": self.idempotent,
            "message.timeout.ms": self.timeout_ms, "linger.ms": 5,
            "request.timeout.ms": 5000, "max.in.flight.requests.per.connection": 5})

    def _next(self):
        if self.values is None:
            return self.h.next_value()
        with self.values_lock:
            return next(self.values, None)

    def _run(self, idx):
        from confluent_kafka import Producer
        h = self.h
        fatal = threading.Event()
        pname = "%s%d" % (self.name, idx)
        # Evidence for a producer that stops delivering while the others go on (issue 19:
        # one producer's whole share failed once, and nothing said why): librdkafka's
        # idempotence and broker-connection debug log in the work dir, its statistics
        # every 5 s, and a note with the last of them when no write was acknowledged for
        # STALL_S while writes were waiting. The work dir is kept when a write failed.
        last_ack = [time.monotonic()]
        stats = [None]
        stalled = [False]
        log_path = os.path.join(self.c.workdir, "producer-%s.rdkafka.log" % pname)

        def on_error(err):
            if err.fatal():
                fatal.set()

        def on_delivery(err, msg):
            v = parse_value(msg.value().decode())
            if err is not None:
                # By partition too: one producer failing on every partition and every
                # producer failing on one partition are different faults.
                h.fail(v, "%s (partition %s)" % (err, msg.partition()))
            else:
                h.ack(v, msg.partition(), msg.offset())
                last_ack[0] = time.monotonic()
                if stalled[0]:
                    stalled[0] = False
                    log("producer %s: delivering again" % pname)

        def on_stats(raw):
            stats[0] = raw

        conf = self.conf()
        conf["error_cb"] = on_error
        conf.update({"debug": "eos,broker", "log_level": 7, "statistics.interval.ms": 5000,
                     "stats_cb": on_stats})
        p = Producer(conf, logger=_file_logger("rdkafka-" + pname, log_path))
        interval = 1.0 / self.rate if self.rate else 0
        next_t = time.monotonic()
        while not self.stop_ev.is_set():
            if not stalled[0] and len(p) and time.monotonic() - last_ack[0] > STALL_S:
                stalled[0] = True
                note = "producer %s: no write acknowledged for %.0fs with %d waiting: %s (log %s)" % (
                    pname, time.monotonic() - last_ack[0], len(p), stats_summary(stats[0]), log_path)
                h.notes.append(note)
                log(note)
            if fatal.is_set():
                self.fatal += 1
                h.notes.append("producer %s: fatal error, replaced" % pname)
                p.flush(5)
                fatal.clear()
                p = Producer(conf, logger=_file_logger("rdkafka-" + pname, log_path))
            v = self._next()
            if v is None:
                break
            while True:
                try:
                    p.produce(self.topic, key=str(v).encode(), value=str(v).encode(), on_delivery=on_delivery)
                    break
                except BufferError:
                    p.poll(0.1)
                    if self.stop_ev.is_set():
                        break
            else:
                break
            h.attempt(v, pname)
            p.poll(0)
            if interval:
                next_t += interval
                delay = next_t - time.monotonic()
                if delay > 0:
                    p.poll(delay)
                else:
                    next_t = time.monotonic()
        left = p.flush(self.timeout_ms / 1000.0 + 10)
        if left:
            h.notes.append("producer %s: %d messages without a delivery report at the end" % (pname, left))

    def start(self):
        for i in range(self.count):
            t = threading.Thread(target=self._run, args=(i,), name="producer-%d" % i, daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def stop(self, timeout=60):
        self.stop_ev.set()
        self.join(timeout)

    def join(self, timeout=60):
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self.threads)


# A producer with writes waiting and none acknowledged for this long gets a note with its
# librdkafka state (ProducerPool): the faults last 6 s and writes resume within 8 s of one.
STALL_S = 20.0


def _file_logger(name, path):
    import logging
    logger = logging.getLogger(name)
    logger.propagate = False
    if not logger.handlers:
        handler = logging.FileHandler(path)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    return logger


def stats_summary(raw):
    """The parts of a librdkafka statistics JSON that say where a producer's writes wait:
    its idempotence state and producer id, each broker connection's state and requests
    (queued, awaiting a response, timed out), each partition's leader and queue."""
    if not raw:
        return "no statistics yet"
    try:
        st = json.loads(raw)
        eos = st.get("eos", {})
        parts = ["idempotence %s for %.1fs, producer id %s epoch %s" % (
            eos.get("idemp_state"), eos.get("idemp_stateage", 0) / 1e3, eos.get("producer_id"),
            eos.get("producer_epoch"))]
        for name, b in sorted(st.get("brokers", {}).items()):
            parts.append("broker %s %s (out %s, awaiting response %s, timeouts %s, disconnects %s)" % (
                b.get("nodeid") if b.get("nodeid", -1) >= 0 else name, b.get("state"), b.get("outbuf_cnt"),
                b.get("waitresp_cnt"), b.get("req_timeouts"), b.get("disconnects")))
        for t in st.get("topics", {}).values():
            for pid, pt in sorted(t.get("partitions", {}).items()):
                if pid == "-1":
                    continue
                parts.append("%s[%s] leader %s queued %s in transmit %s" % (
                    t.get("topic"), pid, pt.get("leader"), pt.get("msgq_cnt"), pt.get("xmit_msgq_cnt")))
        return "; ".join(parts)
    except (ValueError, AttributeError, TypeError) as e:
        return "statistics unreadable: %s" % e


def consumer_conf(c, extra=None):
    conf = dict(CLIENT_TIMEOUTS, **{
        "bootstrap.servers": c.bootstrap(), "group.id": "jepsen-assign-only",
        "enable.auto.commit": False, "enable.auto.offset.store": False,
        "enable.partition.eof": True, "auto.offset.reset": "error", "fetch.wait.max.ms": 100,
        "check.crcs": True})
    conf.update(extra or {})
    return conf


class ConcurrentReader:
    """A consumer thread reading every partition from the beginning until stopped. An
    offset reset (out of range / truncation) starts a new session for the partition."""

    def __init__(self, c, h, topic, partitions, name, conf=None):
        self.c, self.h, self.topic, self.partitions, self.name = c, h, topic, partitions, name
        self.conf = conf or {}
        self.stop_ev = threading.Event()
        self.thread = threading.Thread(target=self._run, name="reader-" + name, daemon=True)
        self.errors = collections.Counter()

    def _run(self):
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
        cons = Consumer(consumer_conf(self.c, self.conf))
        gen = collections.Counter()
        cons.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)])
        try:
            while not self.stop_ev.is_set():
                msgs = cons.consume(500, 0.2)
                for m in msgs:
                    err = m.error()
                    if err is None:
                        p = m.partition()
                        self.h.read("%s/%d/%d" % (self.name, p, gen[p]), p, m.offset(),
                                    parse_value(m.value().decode(errors="replace")))
                    elif err.code() == KafkaError._PARTITION_EOF:
                        continue
                    elif err.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                        p = m.partition()
                        self.h.anomaly("consumer-reset", "%s: partition %s: %s" % (self.name, p, err))
                        if p is not None and p >= 0:
                            gen[p] += 1
                            cons.seek(TopicPartition(self.topic, p, OFFSET_BEGINNING))
                    else:
                        self.errors[err.name()] += 1
        finally:
            cons.close()

    def start(self):
        self.thread.start()
        return self

    def stop(self, timeout=30):
        self.stop_ev.set()
        self.thread.join(timeout)


def drain(c, h, topic, partitions, timeout=90):
    """Read every partition from offset 0 to its high watermark with a fresh consumer."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
    cons = Consumer(consumer_conf(c))
    deadline = time.monotonic() + timeout
    try:
        hw = {}
        for p in range(partitions):
            while True:
                try:
                    lo, hi = cons.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                    hw[p] = hi
                    if lo != 0:
                        h.anomaly("drain", "partition %d starts at offset %d, not 0" % (p, lo))
                    break
                except Exception as e:
                    if time.monotonic() > deadline:
                        h.anomaly("drain", "partition %d: no watermarks: %s" % (p, e))
                        return
                    time.sleep(1)
        cons.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        pos = {p: 0 for p in range(partitions)}
        done = {p for p in range(partitions) if hw[p] == 0}
        while len(done) < partitions and time.monotonic() < deadline:
            for m in cons.consume(1000, 0.5):
                err = m.error()
                p = m.partition()
                if err is None:
                    h.add_drain(p, m.offset(), parse_value(m.value().decode(errors="replace")))
                    pos[p] = m.offset() + 1
                    if pos[p] >= hw[p]:
                        done.add(p)
                elif err.code() == KafkaError._PARTITION_EOF:
                    if m.offset() >= hw.get(p, 0):
                        done.add(p)
                else:
                    if err.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                        h.anomaly("drain", "partition %s: %s" % (p, err))
                        done.add(p)
        for p in range(partitions):
            if p not in done:
                h.anomaly("drain", "partition %d: drained to %d of high watermark %d in %ss"
                          % (p, pos[p], hw[p], timeout))
        log("drain: %s records up to high watermarks %s" % (len(h.drain), hw))
    finally:
        cons.close()


# =========================================================================================
# Nemesis
# =========================================================================================

# The workload's minimum acknowledged writes and concurrent reads (a few seconds of the
# default 3 producers x 80/s).
MIN_WORKLOAD_OPS = 500
# Failed deliveries the workload allows: Kafka 4.1.1 had 0 of 72,815 in the same harness
# (docs/reliability.md); the margin is 0.5% of the attempted writes, at least 10.
FAILED_DELIVERIES_FRACTION = 0.005
FAILED_DELIVERIES_FLOOR = 10
FAULT_KINDS = ["kill-leader", "pause-follower", "isolate-leader", "kill-controller",
               "isolate-controller", "pause-controller", "clock-jump", "overlap"]
# Faults only Sluice can take: its wall clock has a test hook (SLUICE_TEST_CLOCK_SKEW_FILE);
# Kafka's is the host's, shared by every node and by the harness.
SLUICE_ONLY_FAULTS = ("clock-jump",)
# A clock jump: the node's wall clock leaps forward by this much, then back to as far
# behind the host's, then into step (NTP stepping a clock both ways).
CLOCK_JUMP_MS = 5 * 60 * 1000
# The faults `overlap` runs two of at once, on different nodes. The controller faults that
# watch for fenced brokers are left out (a broker another fault kills is rightly fenced),
# and at most one network fault runs at a time (a heal heals every cut).
OVERLAP_KINDS = ["kill-leader", "pause-follower", "isolate-leader", "kill-controller", "clock-jump"]
NETWORK_FAULTS = ("isolate-leader", "isolate-controller")
# broker.session.timeout.ms of every node (cluster.COMMON_PROPS), in seconds.
SESSION_TIMEOUT_S = int(cl.COMMON_PROPS["broker.session.timeout.ms"]) / 1000.0


def watch_fencing(c, h, suspect, seconds, phase):
    """Poll every live, running broker other than `suspect` for `seconds` (Metadata on its
    real port: Kafka and Sluice list only unfenced brokers). A healthy broker missing from
    any view is an anomaly: only the suspect stopped heartbeating."""
    expected = sorted(b.id for b in c.brokers if b.id != suspect and b.alive() and not b.paused)
    start = time.monotonic()
    end = start + seconds
    missing_seen = set()
    while time.monotonic() < end:
        for b in c.brokers:
            if b.id == suspect or not b.alive() or b.paused:
                continue
            try:
                ids = set(cl.metadata_broker_ids(b.real["PLAINTEXT"], timeout=1.0))
            except (OSError, struct.error, ConnectionError):
                continue
            for gone in expected:
                if gone not in ids and (b.id, gone) not in missing_seen:
                    missing_seen.add((b.id, gone))
                    h.anomaly("healthy-broker-fenced",
                              "broker %d, heartbeating all along, was missing from broker %d's Metadata "
                              "(fenced) %.1fs %s on node %s (brokers listed: %s)"
                              % (gone, b.id, time.monotonic() - start, phase, suspect, sorted(ids)))
        time.sleep(0.25)


class Nemesis:
    def __init__(self, c, admin, h, topic, rng, hold=6.0, mode=None, faults=None):
        self.c, self.admin, self.h, self.topic, self.rng = c, admin, h, topic, rng
        self.hold = hold
        self.mode = mode
        self.faults = list(faults or FAULT_KINDS)
        self.busy = set()  # nodes a running fault acts on (overlap: the other picks elsewhere)
        self.lock = threading.Lock()

    def _free(self, node):
        """Claims `node` for a fault; False if another running fault has it."""
        with self.lock:
            if node in self.busy:
                return False
            self.busy.add(node)
            return True

    def _layout(self):
        info = self.admin.partitions(self.topic, timeout=5)
        if not info:
            return None
        return info

    def _pick_leader(self):
        info = self._layout()
        if not info:
            return None, None
        cands = [(p, l) for p, (l, rep, isr) in info.items()
                 if l >= 0 and self.c.nodes[l].alive() and l not in self.busy]
        if not cands:
            return None, None
        return self.rng.choice(sorted(cands))

    def _pick_follower(self):
        info = self._layout()
        if not info:
            return None, None
        cands = [(p, f) for p, (l, rep, isr) in info.items() for f in isr
                 if f != l and self.c.nodes[f].alive() and not self.c.nodes[f].paused
                 and f not in self.busy]
        if not cands:
            return None, None
        return self.rng.choice(sorted(cands))

    def run_one(self, name, record=True):
        """Apply one fault, hold it, undo it. Returns (name, detail) or None (no candidate,
        or the candidate is taken by another running fault). record=False leaves it out of
        the history's events (an overlap records its pair as one event)."""
        if name == "overlap":
            return self.run_overlap()
        c = self.c
        t0 = time.monotonic()
        claimed = []

        def claim(node):
            if node is None or not self._free(node):
                return False
            claimed.append(node)
            return True

        try:
            done = self._run_claimed(name, c, claim)
            if done is not None and record:
                self.h.events.append((t0, time.monotonic()) + done)
            return done
        finally:
            with self.lock:
                self.busy.difference_update(claimed)

    def run_overlap(self):
        """Two faults at once on different nodes, the second starting 1-2 s into the first."""
        t0 = time.monotonic()
        kinds = [k for k in OVERLAP_KINDS if self.c.can_jump_clocks or k not in SLUICE_ONLY_FAULTS]
        pairs = [(a, b) for a in kinds for b in kinds
                 if a != b and not (a in NETWORK_FAULTS and b in NETWORK_FAULTS)]
        first, second = self.rng.choice(pairs)
        if second == "kill-controller":
            # It acts on one node only (the active controller): first, so that the
            # other fault does not take that node and leave it without a candidate.
            first, second = second, first
        results = [None, None]
        # When the second kind finds no free node (partition leaders all on the node the
        # first fault took, say), another kind that goes with the first is tried.
        others = [k for k in kinds if k not in (first, second)
                  and not (k in NETWORK_FAULTS and first in NETWORK_FAULTS)]
        self.rng.shuffle(others)

        def go(i, choices, delay):
            time.sleep(delay)
            try:
                for kind in choices:
                    results[i] = self.run_one(kind, record=False)
                    if results[i] is not None:
                        return
            except Exception as e:  # reported below; the other fault still undoes itself
                results[i] = e

        threads = [threading.Thread(target=go, args=(0, [first], 0.0), daemon=True),
                   threading.Thread(target=go, args=(1, [second] + others, self.rng.uniform(1.0, 2.0)),
                                    daemon=True)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for r in results:
            if isinstance(r, Exception):
                raise r
        if results[0] is None or results[1] is None:
            # One of them found no free candidate: not an overlap. Whatever ran is in the
            # history under its own name; try again.
            for r in results:
                if r is not None:
                    self.h.events.append((t0, time.monotonic()) + r)
            return None
        detail = "%s, overlapping %s" % (results[0][1], results[1][1])
        log("nemesis: overlap: " + detail)
        self.h.events.append((t0, time.monotonic(), "overlap", detail))
        return "overlap", detail

    def _run_claimed(self, name, c, claim):
        if name == "kill-leader":
            p, node = self._pick_leader()
            if not claim(node):
                return None
            detail = "SIGKILL node %d (leader of partition %d), restart after %.0fs" % (node, p, self.hold)
            log("nemesis: " + detail)
            c.kill(node)
            time.sleep(self.hold)
            c.start_node(node, wait=True, timeout=90)
        elif name == "pause-follower":
            p, node = self._pick_follower()
            if not claim(node):
                return None
            detail = "SIGSTOP node %d (follower of partition %d) for %.0fs" % (node, p, self.hold)
            log("nemesis: " + detail)
            c.pause(node)
            try:
                time.sleep(self.hold)
            finally:
                c.resume(node)
        elif name == "isolate-leader":
            p, node = self._pick_leader()
            if not claim(node):
                return None
            detail = "isolate node %d (leader of partition %d) for %.0fs" % (node, p, self.hold)
            log("nemesis: " + detail)
            c.isolate([node], mode=self.mode)
            try:
                time.sleep(self.hold)
            finally:
                c.heal()
        elif name == "kill-controller":
            node = c.active_controller()
            which = "the active controller"
            if node is not None and not c.nodes[node].alive():
                return None
            if node is None or node not in c.nodes:
                live = [n.id for n in c.controllers if n.alive()]
                if not live:
                    return None
                node = self.rng.choice(live)
                which = "a random controller (DescribeQuorum gave no leader)"
            if not claim(node):
                return None
            detail = "SIGKILL controller %d (%s), restart after %.0fs" % (node, which, self.hold)
            log("nemesis: " + detail)
            c.kill(node)
            time.sleep(self.hold)
            c.start_node(node, wait=True, timeout=90)
        elif name == "isolate-controller":
            node = c.active_controller()
            if node is None or node not in c.nodes or not claim(node):
                return None
            detail = "isolate controller %d (the active controller) for %.0fs" % (node, self.hold)
            log("nemesis: " + detail)
            c.isolate([node], mode=self.mode)
            try:
                watch_fencing(c, self.h, node, self.hold, "into the isolation of the controller")
            finally:
                c.heal()
            # Healed, the deposed controller must not act on what it saw while cut off.
            watch_fencing(c, self.h, node, 5.0, "after healing the isolation of the controller")
        elif name == "pause-controller":
            # The active controller stops (SIGSTOP) for longer than the brokers' session
            # timeout while writes go on, then wakes still believing it leads. It must
            # not act on what it saw before it stopped: the brokers that heartbeat the
            # new controller all along stay unfenced, during the pause and after it.
            node = c.active_controller()
            if node is None or node not in c.nodes or not c.nodes[node].alive() or c.nodes[node].paused:
                return None
            if not claim(node):
                return None
            hold = max(self.hold, SESSION_TIMEOUT_S + 3)
            detail = ("SIGSTOP controller %d (the active controller) for %.0fs, past the %.0fs broker session "
                      "timeout" % (node, hold, SESSION_TIMEOUT_S))
            log("nemesis: " + detail)
            c.pause(node)
            try:
                watch_fencing(c, self.h, node, hold, "into the pause of the controller")
            finally:
                c.resume(node)
            watch_fencing(c, self.h, node, 5.0, "after resuming the paused controller")
        elif name == "clock-jump":
            # A partition leader's wall clock (its ISR lag, record timestamps,
            # retention, transaction and group timeouts) leaps forward, then back to as
            # far behind the host's, then into step; monotonic timers do not move.
            if not c.can_jump_clocks:
                return None
            p, node = self._pick_leader()
            if not claim(node):
                return None
            detail = ("wall clock of node %d (leader of partition %d) +%ds for %.0fs, then -%ds for %.0fs"
                      % (node, p, CLOCK_JUMP_MS // 1000, self.hold / 2, CLOCK_JUMP_MS // 1000, self.hold / 2))
            log("nemesis: " + detail)
            try:
                c.jump_clock(node, CLOCK_JUMP_MS)
                time.sleep(self.hold / 2)
                c.jump_clock(node, -CLOCK_JUMP_MS)
                time.sleep(self.hold / 2)
            finally:
                c.jump_clock(node, 0)
        else:
            raise ValueError(name)
        return name, detail

    def run(self, until, quiet=3.0):
        for name in itertools.cycle(self.faults):
            if time.monotonic() + self.hold > until:
                break
            # The cluster may still be settling from the last fault (an ISR not yet
            # full): look for a candidate for a while before calling it missing.
            tried_until = min(until - self.hold, time.monotonic() + 10)
            while self.run_one(name) is None:
                if time.monotonic() >= tried_until:
                    log("nemesis: %s: no candidate" % name)
                    self.h.anomaly("fault-no-candidate", "%s found no node to act on for 10s" % name)
                    break
                time.sleep(0.5)
            # let the cluster settle a little (bounded) before the next fault
            end = min(until, time.monotonic() + quiet)
            while time.monotonic() < end:
                time.sleep(0.2)
        c = self.c
        c.heal_all(timeout=120)


# =========================================================================================
# Scenarios
# =========================================================================================

def scenario_nemesis(c, admin, h, topic, args, rng, what):
    """The workload's nemesis, over `topic`, for --duration seconds (every fault kind once
    in the default 110 s), in a scenario with a workload of its own (txn, groups): its
    faults are expected like the workload's."""
    if args.duration <= 0:
        return
    nemesis = Nemesis(c, admin, h, topic, rng, hold=args.hold, mode=args.partition_mode,
                      faults=args.faults.split(","))
    h.faults_expected = tuple(nemesis.faults)
    log("%s: the nemesis for %.0fs (%s)" % (what, args.duration, ", ".join(nemesis.faults)))
    nemesis.run(time.monotonic() + args.duration)


def scenario_workload(c, admin, args, rng):
    h = History()
    topic = "jepsen-workload"
    parts = args.partitions
    admin.create_topic(topic, parts, {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"})
    readers = [ConcurrentReader(c, h, topic, parts, "r%d" % i).start() for i in range(2)]
    producers = ProducerPool(c, h, topic, count=args.producers, rate=args.rate).start()
    # The plain workload, through the same faults: non-idempotent acks=all producers on a
    # topic of their own (same configuration, leaders on the same nodes).
    hp = History()
    hp.at_least_once = True
    plain_topic = "jepsen-plain"
    admin.create_topic(plain_topic, parts, {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"})
    plain_readers = [ConcurrentReader(c, hp, plain_topic, parts, "pr0").start()]
    plain = ProducerPool(c, hp, plain_topic, count=1, rate=args.rate, name="plain", idempotent=False).start()
    nemesis = Nemesis(c, admin, h, topic, rng, hold=args.hold, mode=args.partition_mode,
                      faults=args.faults.split(","))
    # Every fault kind at least once, and enough traffic to have been tested by them.
    h.faults_expected = tuple(nemesis.faults)
    h.min_acked = h.min_reads = MIN_WORKLOAD_OPS
    t_end = time.monotonic() + args.duration
    try:
        time.sleep(min(3, args.duration))
        nemesis.run(t_end)
        try:
            admin.wait_healthy(topic, parts, timeout=90)
        except TimeoutError as e:
            h.anomaly("unrecovered", str(e))
        time.sleep(2)  # a little fault-free traffic after recovery
    finally:
        producers.stop(timeout=60)
        plain.stop(timeout=60)
        time.sleep(1)
        for r in readers + plain_readers:
            r.stop()
    drain(c, h, topic, parts)
    drain(c, hp, plain_topic, parts)
    for hist, rs in ((h, readers), (hp, plain_readers)):
        for r in rs:
            if r.errors:
                hist.notes.append("reader %s errors: %s" % (r.name, dict(r.errors)))
        hist.proxy_unknown = c.net.stats["unknown_src"]
        hist.max_failed = max(FAILED_DELIVERIES_FLOOR, int(len(hist.attempted) * FAILED_DELIVERIES_FRACTION))
    hp.min_acked = hp.min_reads = MIN_WORKLOAD_OPS // args.producers
    hp.faults_expected = h.faults_expected
    hp.events = list(h.events)
    return [("workload", h), ("workload-plain", hp)]


def scenario_2013(c, admin, args, rng):
    """ISR shrinks to the leader alone; the leader is partitioned away; the partition must go
    offline (not elect a stale follower); after heal no acknowledged write is lost."""
    from confluent_kafka import Producer
    h = History()
    topic = "jepsen-2013"
    unclean = "true" if args.unclean_2013 else "false"
    if args.unclean_2013:
        log("2013: NEGATIVE CONTROL: unclean.leader.election.enable=true on the topic; this must FAIL")
    admin.create_topic(topic, 1, {"min.insync.replicas": "1", "unclean.leader.election.enable": unclean})
    leader, replicas, isr = admin.wait_healthy(topic, 1)[0]
    followers = [r for r in replicas if r != leader]
    log("2013: partition 0 leader %d, followers %s" % (leader, followers))

    def produce_batch(n, timeout_s, tag, bootstrap=None):
        conf = dict(CLIENT_TIMEOUTS, **{"bootstrap.servers": bootstrap or c.bootstrap(), "acks": "all",
                                        "enable.idempotence": True, "linger.ms": 5,
                                        "message.timeout.ms": int(timeout_s * 1000),
                                        "request.timeout.ms": 5000})
        p = Producer(conf)
        acked = [0]

        def cb(err, msg):
            v = parse_value(msg.value().decode())
            if err is None:
                h.ack(v, msg.partition(), msg.offset())
                acked[0] += 1
            else:
                h.fail(v, str(err))
        for _ in range(n):
            v = h.next_value()
            p.produce(topic, key=str(v).encode(), value=str(v).encode(), on_delivery=cb)
            h.attempt(v, tag)
            p.poll(0)
        left = p.flush(timeout_s + 10)
        return acked[0], left

    a, _ = produce_batch(200, 20, "phase-a")
    log("2013: phase A (full ISR): %d/200 acknowledged" % a)

    # 1. Cut the followers' replica fetches to the leader (their PLAINTEXT links to it);
    #    controllers stay connected, so the leader's AlterPartition shrinking the ISR lands.
    #    A follower that is not fetching only falls out of the ISR once the leader's log
    #    end moves past it, so phase B's writes start now: they are acknowledged (acks=all)
    #    as soon as the ISR is the leader alone.
    c.cut([(f, leader, "PLAINTEXT") for f in followers])
    t0 = time.monotonic()
    phase_b = {}
    tb = threading.Thread(target=lambda: phase_b.setdefault("r", produce_batch(200, 40, "phase-b")),
                          daemon=True)
    tb.start()
    shrunk = False
    while time.monotonic() < t0 + 40:
        info = admin.partitions(topic)
        if info and info[0][2] == [leader]:
            shrunk = True
            break
        time.sleep(0.5)
    h.events.append((t0, time.monotonic(), "cut-followers", "followers %s cut from leader %d" % (followers, leader)))
    if not shrunk:
        h.anomaly("2013-setup", "ISR did not shrink to [%d] within 40s: %s" % (leader, admin.partitions(topic)))
        c.heal()
        tb.join(60)
        drain(c, h, topic, 1)
        return h
    log("2013: ISR shrank to [%d] after %.1fs" % (leader, time.monotonic() - t0))
    tb.join(60)
    b = phase_b.get("r", (0, 0))[0]
    log("2013: phase B (ISR = leader alone): %d/200 acknowledged" % b)
    if b == 0:
        h.anomaly("2013-setup", "the leader alone acknowledged no write (min.insync.replicas=1)")

    # 2. Partition the leader away (from nodes and clients); the followers come back.
    c.net.set_cuts(set())
    c.isolate([leader], mode=args.partition_mode)
    t1 = time.monotonic()
    offline_seen = False
    others = [r for r in replicas if r != leader]
    boot_others = c.bootstrap(exclude=[leader])
    while time.monotonic() < t1 + 30:
        info = admin.partitions(topic)
        if info:
            l = info[0][0]
            if l in others:
                h.anomaly("unclean-election", "partition 0 led by stale follower %d while %d is isolated "
                          "(isr %s)" % (l, leader, info[0][2]))
                break
            if l < 0:
                offline_seen = True
                break
        time.sleep(0.3)
    if offline_seen:
        log("2013: partition offline %.1fs after isolating the leader" % (time.monotonic() - t1))
        # writes must fail while offline
        ok, left = produce_batch(20, 6, "offline", bootstrap=boot_others)
        if ok:
            h.anomaly("offline-write", "%d writes acknowledged while partition 0 had no leader" % ok)
        # and it stays offline (sampled) while split
        t_hold = time.monotonic() + 4
        while time.monotonic() < t_hold:
            info = admin.partitions(topic)
            if info and info[0][0] in others:
                h.anomaly("unclean-election", "partition 0 led by stale follower %d while %d is isolated"
                          % (info[0][0], leader))
                break
            time.sleep(0.5)
        log("2013: offline writes: %d acknowledged, %d failed (expected: all fail)" % (ok, 20 - ok))
    elif not h.anomalies.get("unclean-election"):
        h.anomaly("offline-not-observed", "partition 0 never reported leader -1 within 30s of isolating %d: %s"
                  % (leader, admin.partitions(topic)))
    h.events.append((t1, time.monotonic(), "isolate-leader", "leader %d isolated" % leader))

    # 3. Heal; the old leader comes back as leader; nothing acknowledged may be missing.
    c.heal()
    t2 = time.monotonic()
    try:
        info = admin.wait_healthy(topic, 1, timeout=60)
        log("2013: healed; leader %d, isr %s after %.1fs" % (info[0][0], info[0][2], time.monotonic() - t2))
    except TimeoutError as e:
        h.anomaly("unrecovered", str(e))
    cc, _ = produce_batch(50, 20, "phase-c")
    log("2013: phase C (healed): %d/50 acknowledged" % cc)
    drain(c, h, topic, 1)
    return h


def scenario_failover(c, admin, args, rng):
    """librdkafka producer + Java consumer through a SIGKILL of a partition leader."""
    h = History()
    topic = "jepsen-failover"
    parts = 3
    admin.create_topic(topic, parts, {"min.insync.replicas": "2"})
    work = os.path.join(c.workdir, "failover")
    os.makedirs(work, exist_ok=True)
    expected = os.path.join(work, "expected.txt")
    java_out = os.path.join(work, "java.out")
    java_err = os.path.join(work, "java.err")
    cmd = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
           "-Dlog4j2.configurationFile=" + cl.LOG4J,
           "-cp", os.path.join(c.libs or os.path.join(cl.KAFKA_DIR, "libs"), "*"),
           os.path.join(HERE, "FailoverConsumer.java"), c.bootstrap(), topic, expected, str(150000)]
    with open(java_err, "wb"):
        pass
    # stdout to java.out, stderr to java.err: spawn() merges them, so use a wrapper via sh
    jproc = cl.spawn(["sh", "-c", 'exec "$@" 2>>"%s"' % java_err, "sh"] + cmd, java_out)
    t0 = time.monotonic()
    producers = ProducerPool(c, h, topic, count=1, rate=args.failover_rate, name="failover-p").start()
    # wait (bounded) until the Java consumer is reading, so that it lives through the kill
    t_wait = time.monotonic() + 60
    while time.monotonic() < t_wait and jproc.poll() is None:
        with open(java_out, errors="replace") as f:
            if any(line.startswith("R ") for line in f):
                break
        time.sleep(0.5)
    else:
        h.anomaly("java-consumer", "the Java consumer read nothing in 60s (exit %s)" % jproc.poll())
    time.sleep(2)
    info = admin.partitions(topic)
    leader = info[0][0] if info else None
    killed = None
    if leader is not None and leader >= 0:
        log("failover: SIGKILL node %d (leader of partition 0) while producing and consuming" % leader)
        tk = time.monotonic()
        c.kill(leader)
        killed = leader
    else:
        h.anomaly("failover", "no leader for partition 0 to kill: %s" % info)
    time.sleep(args.hold)
    producers.stop(timeout=90)
    if killed is not None:
        h.events.append((tk, time.monotonic(), "kill-leader", "SIGKILL node %d" % killed))
    acked = sorted(h.acked)
    log("failover: producer done: %d/%d acknowledged" % (len(acked), len(h.attempted)))
    with open(expected + ".tmp", "w") as f:
        f.write("".join("%d\n" % v for v in acked))
    os.rename(expected + ".tmp", expected)
    try:
        jproc.wait(120)
    except subprocess.TimeoutExpired:
        h.anomaly("failover", "Java consumer did not finish in 120s")
    cl.kill_proc(jproc)
    seen = set()
    status = None
    session = 0
    with open(java_out, errors="replace") as f:
        for line in f:
            parts_ = line.split()
            if not parts_:
                continue
            if parts_[0] == "R" and len(parts_) == 4:
                v = parse_value(parts_[3])
                h.read("java/%s/%d" % (parts_[1], session), int(parts_[1]), int(parts_[2]), v)
                seen.add(v)
            elif parts_[0] == "S":
                session += 1
                h.anomaly("consumer-reset", "java: " + line.strip())
            elif parts_[0] in ("DONE", "TIMEOUT"):
                status = line.strip()
    missing = [v for v in acked if v not in seen]
    log("failover: Java consumer: %s, read %d distinct values, %d acknowledged values not read (%.1fs)"
        % (status, len(seen), len(missing), time.monotonic() - t0))
    if missing:
        h.anomaly("java-missed", "Java consumer (%s) never read %d acknowledged values, e.g. %s"
                  % (status, len(missing), missing[:10]))
    if status is None or not status.startswith("DONE"):
        try:
            with open(java_err, errors="replace") as f:
                tail = f.read()[-2000:]
        except OSError:
            tail = ""
        h.anomaly("java-consumer", "status %r; stderr tail: %s" % (status, tail))
    if killed is not None:
        c.start_node(killed, wait=True, timeout=90)
    try:
        admin.wait_healthy(topic, parts, timeout=60)
    except TimeoutError as e:
        h.anomaly("unrecovered", str(e))
    drain(c, h, topic, parts)
    return h


def group_coordinator(c, group, timeout=30):
    """The node id of a group's coordinator (FindCoordinator through the admin client)."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient(dict(CLIENT_TIMEOUTS, **{"bootstrap.servers": c.bootstrap()}))
    deadline = time.monotonic() + timeout
    while True:
        try:
            d = admin.describe_consumer_groups([group], request_timeout=10)[group].result(timeout=15)
            return d.coordinator.id
        except Exception as e:
            if time.monotonic() > deadline:
                raise TimeoutError("no coordinator for %s: %s" % (group, e))
            time.sleep(0.5)


def scenario_groups(c, admin, args, rng):
    """A librdkafka consumer group commits through a SIGKILL of its group coordinator.

    Two members consume a 3-partition topic while a producer writes, committing
    synchronously what they processed. The coordinator's node is killed; the members go
    on (finding the new coordinator) for a while, then stop. A fresh member of the group
    must then see committed offsets no lower than the highest each partition had
    acknowledged ("commit-lost"), the members must have committed again after the kill
    ("no-commit-after-failover"), and what they processed plus what the fresh member reads
    from the committed offsets must cover every acknowledged value ("group-missed").
    """
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    h = History()
    topic, group, parts = "jepsen-groups", "jepsen-group", 3
    admin.create_topic(topic, parts, {"min.insync.replicas": "2"})
    lock = threading.Lock()
    processed = set()
    acked = {}  # partition -> highest committed offset acknowledged
    acked_after_kill = [0]
    killed_at = [None]
    errors = []
    stop = threading.Event()
    group_conf = {"group.id": group, "auto.offset.reset": "earliest", "enable.partition.eof": False,
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 500}

    def member(name):
        cons = Consumer(consumer_conf(c, group_conf))
        cons.subscribe([topic])
        try:
            while not stop.is_set():
                good = [m for m in cons.consume(200, 0.5) if m.error() is None]
                if not good:
                    continue
                last = {}
                for m in good:
                    v = parse_value(m.value().decode(errors="replace"))
                    with lock:
                        processed.add(v)
                    last[m.partition()] = m.offset() + 1
                try:
                    result = cons.commit(offsets=[TopicPartition(topic, p, o) for p, o in last.items()],
                                         asynchronous=False)
                except KafkaException as e:
                    with lock:
                        errors.append(str(e))
                    continue
                with lock:
                    for tp in result:
                        if tp.error is None:
                            acked[tp.partition] = max(acked.get(tp.partition, 0), tp.offset)
                            if killed_at[0] is not None:
                                acked_after_kill[0] += 1
        finally:
            cons.close()

    members = [threading.Thread(target=member, args=("m%d" % i,), daemon=True) for i in range(2)]
    for t in members:
        t.start()
    producers = ProducerPool(c, h, topic, count=1, rate=args.failover_rate, name="groups-p").start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with lock:
            if len(acked) == parts:
                break
        time.sleep(0.2)
    else:
        h.anomaly("group-commit", "the members committed no offsets for every partition in 60s: %s" % acked)
    time.sleep(2)
    coordinator = group_coordinator(c, group)
    log("groups: SIGKILL node %d (the coordinator of %s) while members consume and commit"
        % (coordinator, group))
    tk = time.monotonic()
    c.kill(coordinator)
    with lock:
        killed_at[0] = tk
        before_kill = dict(acked)
    time.sleep(max(args.hold, 10))
    h.events.append((tk, time.monotonic(), "kill-coordinator", "SIGKILL node %d" % coordinator))
    c.start_node(coordinator, wait=True, timeout=90)
    # Then every fault kind of the workload's nemesis, on this topic's leaders, while the
    # members go on consuming and committing.
    scenario_nemesis(c, admin, h, topic, args, rng, "groups")
    producers.stop(timeout=90)
    # Let the members catch up with what was produced, then stop them.
    time.sleep(3)
    stop.set()
    for t in members:
        t.join(30)
    with lock:
        final_acked = dict(acked)
        after = acked_after_kill[0]
    log("groups: commits acknowledged %s before the kill, %s in all, %d after; %d commit errors"
        % (before_kill, final_acked, after, len(errors)))
    if after == 0:
        h.anomaly("no-commit-after-failover", "no commit acknowledged after the coordinator was killed; "
                  "errors: %s" % errors[-3:])
    # A fresh member: the committed offsets, then everything after them.
    cons = Consumer(consumer_conf(c, dict(group_conf, **{"group.id": group})))
    try:
        committed = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                committed = {tp.partition: tp.offset for tp in cons.committed(
                    [TopicPartition(topic, p) for p in range(parts)], timeout=10)}
                break
            except KafkaException:
                time.sleep(0.5)
        if committed is None:
            h.anomaly("commit-lost", "committed offsets unreadable after the failover")
            committed = {}
        for p, offset in final_acked.items():
            if committed.get(p, -1) < offset:
                h.anomaly("commit-lost", "partition %d: committed %s after the failover, but %d was acknowledged"
                          % (p, committed.get(p), offset))
        cons.assign([TopicPartition(topic, p, max(committed.get(p, 0), 0)) for p in range(parts)])
        idle_until = time.monotonic() + 5
        while time.monotonic() < idle_until:
            msgs = [m for m in cons.consume(500, 0.5) if m.error() is None]
            if msgs:
                idle_until = time.monotonic() + 3
            for m in msgs:
                processed.add(parse_value(m.value().decode(errors="replace")))
    finally:
        cons.close()
    missed = [v for v in sorted(h.acked) if v not in processed]
    log("groups: %d acknowledged values, %d processed by the group or after its committed offsets, %d missed"
        % (len(h.acked), len(processed), len(missed)))
    if missed:
        h.anomaly("group-missed", "%d acknowledged values neither processed by the group nor after its "
                  "committed offsets, e.g. %s" % (len(missed), missed[:10]))
    c.start_node(coordinator, wait=True, timeout=90)
    try:
        admin.wait_healthy(topic, parts, timeout=60)
    except TimeoutError as e:
        h.anomaly("unrecovered", str(e))
    drain(c, h, topic, parts)
    return h


# -----------------------------------------------------------------------------------------
# Transactions (the txn scenario)
# -----------------------------------------------------------------------------------------

TXN_TIMEOUT_MS = 10000  # transaction.timeout.ms of the workload's producers
ZOMBIES_KEPT = 3  # replaced instances each transactional producer keeps alive
TXN_STUCK_BOUND = 30.0  # seconds for a transaction committed after recovery to become visible
# transaction.abort.timed.out.transaction.cleanup.interval.ms (Kafka's and Sluice's default).
TXN_ABORT_SCAN_S = 10.0
# An abandoned transaction must be aborted by its coordinator within its timeout, one
# scan interval, and this slack (a coordinator killed meanwhile, a new one loading state).
TXN_TIMEOUT_ABORT_SLACK_S = 25.0


def find_coordinator(port, key, key_type, timeout=3.0):
    """FindCoordinator v1 (API 10; key_type 0 = group, 1 = transactional id), sent raw to a
    broker's port; returns (error_code, node_id)."""
    client = b"sluice-jepsen"
    k = key.encode()
    req = (struct.pack(">hhih", 10, 1, 11, len(client)) + client
           + struct.pack(">h", len(k)) + k + struct.pack(">b", key_type))
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(req)) + req)
        size = struct.unpack(">i", cl._recv_exact(s, 4))[0]
        resp = cl._recv_exact(s, size)
    pos = 4 + 4  # correlation id, throttle_time_ms
    err = struct.unpack_from(">h", resp, pos)[0]
    pos += 2
    mlen = struct.unpack_from(">h", resp, pos)[0]  # error_message (nullable)
    pos += 2 + max(mlen, 0)
    return err, struct.unpack_from(">i", resp, pos)[0]


def txn_coordinator(c, tid, timeout=30):
    """The node id of a transactional id's coordinator (FindCoordinator key type 1 to any
    live broker, straight to its real port)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        for b in c.brokers:
            if not b.alive() or b.paused:
                continue
            try:
                err, node = find_coordinator(b.real["PLAINTEXT"], tid, 1)
            except (OSError, struct.error, ConnectionError) as e:
                last = "node %d: %s" % (b.id, e)
                continue
            if err == 0 and node in c.nodes:
                return node
            last = "node %d answered error %d, node %d" % (b.id, err, node)
        if time.monotonic() > deadline:
            raise TimeoutError("no transaction coordinator for %s in %ss: %s" % (tid, timeout, last))
        time.sleep(0.5)


def _kerr(stage, err):
    flags = [f for f, on in (("retriable", err.retriable()), ("abortable", err.txn_requires_abort()),
                             ("fatal", err.fatal())) if on]
    return "%s raised %s%s" % (stage, err.name(), " (%s)" % ",".join(flags) if flags else "")


class TxnProducer:
    """One transactional librdkafka producer in a thread: begin, produce a few unique values
    to several partitions, commit (or, deliberately, flush and abort), and record each
    transaction's outcome as the client saw it, following librdkafka's error rules:

    - commit_transaction / abort_transaction returned: committed / aborted;
    - an abortable error (txn_requires_abort) anywhere: abort_transaction, aborted if it
      returns;
    - a retriable error from commit (e.g. a timeout while the coordinator is down): commit
      again (up to 6 times);
    - a fatal error (or retries exhausted, or an error that is none of these): outcome
      unknown; a new producer with the same transactional.id is made, whose
      init_transactions fences the old one and completes or aborts its transaction.

    A share (crash_ratio) of the transactions simulate a client crash: after producing
    and flushing, the producer is abandoned either before commit_transaction (the
    transaction must then end aborted) or right after sending it (commit_transaction with
    a 5 ms timeout: the outcome is unknown); the abandoned instance is kept alive (a
    zombie; the latest ZOMBIES_KEPT of each producer), and a new instance with the same
    transactional.id takes over.
    """

    def __init__(self, c, h, topic, parts, tid, rng, abort_ratio, record, crash_ratio=0.0):
        self.c, self.h, self.topic, self.parts, self.tid = c, h, topic, parts, tid
        self.rng, self.abort_ratio, self.record = rng, abort_ratio, record
        self.crash_ratio = crash_ratio
        self.zombies = []
        self.stop_ev = threading.Event()
        self.thread = threading.Thread(target=self._run, name="txn-" + tid, daemon=True)
        self.counts = collections.Counter()
        self.errors = collections.Counter()
        self.n = 0

    def conf(self):
        return dict(CLIENT_TIMEOUTS, **{
            "bootstrap.servers": self.c.bootstrap(), "transactional.id": self.tid,
            "transaction.timeout.ms": TXN_TIMEOUT_MS, "message.timeout.ms": TXN_TIMEOUT_MS,
            "enable.idempotence": True, "acks": "all", "linger.ms": 5, "request.timeout.ms": 5000})

    def new_producer(self, timeout=60):
        """A producer with this transactional id whose init_transactions returned, or None."""
        from confluent_kafka import KafkaException, Producer
        deadline = time.monotonic() + timeout
        p = Producer(self.conf())
        while True:
            try:
                p.init_transactions(10)
                self.counts["init"] += 1
                return p
            except KafkaException as e:
                err = e.args[0]
                self.errors[_kerr("init", err)] += 1
                if time.monotonic() > deadline:
                    self.h.notes.append("%s: init_transactions failed for %ss: %s" % (self.tid, timeout, err))
                    return None
                if err.fatal() or not err.retriable():
                    p = Producer(self.conf())
                time.sleep(0.5)

    def new_txn(self):
        self.n += 1
        return {"id": "%s#%d" % (self.tid, self.n), "producer": self.tid, "values": [], "parts": {},
                "outcome": "unknown", "acks": {}, "errs": {}, "path": [], "t0": time.monotonic()}

    def run_txn(self, p, t, abort, k=None, start=None, crash=None):
        """One transaction; returns (outcome, the producer must be replaced)."""
        from confluent_kafka import KafkaException
        k = k if k is not None else self.rng.randint(3, 6)
        start = start if start is not None else self.rng.randrange(self.parts)

        def on_delivery(err, msg):
            v = parse_value(msg.value().decode())
            if err is None:
                t["acks"][v] = (msg.partition(), msg.offset())
            else:
                t["errs"][v] = str(err)
        try:
            p.begin_transaction()
            for i in range(k):
                v = self.h.next_value()
                part = (start + i) % self.parts
                self.h.attempt(v, t["id"])
                while True:
                    try:
                        p.produce(self.topic, partition=part, key=str(v).encode(), value=str(v).encode(),
                                  on_delivery=on_delivery)
                        break
                    except BufferError:
                        p.poll(0.1)
                t["values"].append(v)
                t["parts"][v] = part
                p.poll(0)
        except KafkaException as e:
            return self._failed(p, t, "produce", e.args[0])
        if crash:
            err = self._flush(p, t)
            if err is not None:
                return self._failed(p, t, "flush", err)
            if crash == "before-commit":
                t["path"].append("client crash before commit_transaction")
                t["never_committed"] = True
                return "unknown", True
            try:
                p.commit_transaction(0.005)
                t["path"].append("commit returned within 5 ms")
                return "committed", True
            except KafkaException as e:
                t["path"].append(_kerr("commit (5 ms)", e.args[0]) + "; client crash during commit")
                return "unknown", True
        if abort:
            t["path"].append("deliberate abort")
            err = self._flush(p, t)  # so that the aborted records reach the log
            if err is not None:
                return self._failed(p, t, "flush", err)
            return self._abort(p, t)
        return self._commit(p, t)

    def _flush(self, p, t):
        """flush(15); returns the error it raised, if any: librdkafka raises a fatal one
        there when the producer was fenced meanwhile (its transaction timed out and the
        coordinator bumped the epoch, say)."""
        from confluent_kafka import KafkaException
        try:
            left = p.flush(15)
        except KafkaException as e:
            return e.args[0]
        if left:
            t["path"].append("flush left %d undelivered" % left)
        return None

    def _failed(self, p, t, stage, err):
        t["path"].append(_kerr(stage, err))
        self.errors[_kerr(stage, err)] += 1
        if err.fatal():
            return "unknown", True
        # abortable (or an error that is neither: abort too; only a returned abort counts)
        return self._abort(p, t)

    def _commit(self, p, t):
        from confluent_kafka import KafkaException
        for attempt in range(10):
            try:
                p.commit_transaction(3)
                t["path"].append("commit returned" + (" (attempt %d)" % (attempt + 1) if attempt else ""))
                p.poll(0)
                return "committed", False
            except KafkaException as e:
                err = e.args[0]
                t["path"].append(_kerr("commit", err))
                self.errors[_kerr("commit", err)] += 1
                if err.fatal():
                    return "unknown", True
                if err.txn_requires_abort():
                    return self._abort(p, t)
                if not err.retriable():
                    return "unknown", True
        t["path"].append("commit: gave up after 10 attempts")
        return "unknown", True

    def _abort(self, p, t):
        from confluent_kafka import KafkaException
        for attempt in range(6):
            try:
                p.abort_transaction(10)
                t["path"].append("abort returned")
                p.poll(0)
                return "aborted", False
            except KafkaException as e:
                err = e.args[0]
                t["path"].append(_kerr("abort", err))
                self.errors[_kerr("abort", err)] += 1
                if err.fatal() or not err.retriable():
                    return "unknown", True
        t["path"].append("abort: gave up after 6 attempts")
        return "unknown", True

    def _run(self):
        p = None
        replace = False
        try:
            while not self.stop_ev.is_set():
                if p is None:
                    p = self.new_producer()
                    replace = False
                    if p is None:
                        continue
                    if self.zombies:
                        self.probe_zombie(self.zombies[-1])
                t = self.new_txn()
                crash = None
                if self.rng.random() < self.crash_ratio:
                    crash = self.rng.choice(["before-commit", "during-commit"])
                    self.counts["crash_" + crash] += 1
                abort = not crash and self.rng.random() < self.abort_ratio
                if abort:
                    self.counts["deliberate_abort"] += 1
                outcome, replace = self.run_txn(p, t, abort, crash=crash)
                t["outcome"], t["t1"] = outcome, time.monotonic()
                self.counts[outcome] += 1
                self.record(t)
                if replace:
                    self.counts["replaced"] += 1
                    self.zombies.append(p)  # alive; the next init_transactions fences it
                    # The latest few stay alive (each holds sockets through the proxies:
                    # hundreds over a long soak ran the harness out of descriptors).
                    while len(self.zombies) > ZOMBIES_KEPT:
                        self.zombies.pop(0)
                    p = None
                time.sleep(0.02)
            if p is None and replace:
                # the last transaction's outcome is unknown: fence it, as an application would
                self.new_producer()
        except Exception:
            self.h.anomaly("harness-error", "%s: %s" % (self.tid, traceback.format_exc()))

    def probe_zombie(self, z):
        """The instance just fenced by a new one's init_transactions tries one more
        transaction, as a zombie that does not know it was replaced would. It must not
        commit, and none of its values may ever be visible to read_committed (the
        transaction is recorded as aborted, so check_txn holds it to that)."""
        t = self.new_txn()
        t["path"].append("zombie: the fenced instance tries again")
        outcome, _ = self.run_txn(z, t, abort=False)
        self.counts["zombie_attempts"] += 1
        if outcome == "committed":
            self.h.anomaly("zombie-committed", "%s: an instance fenced by a newer one committed %s (%s)"
                           % (self.tid, t["id"], "; ".join(t["path"])))
        t["outcome"], t["t1"] = "aborted", time.monotonic()
        self.record(t)

    def abandon(self, p):
        """The transaction-timeout path: begin, write one value to every partition, flush,
        and then nothing: no commit, no abort, and no new instance with this transactional
        id. Only the coordinator's timeout can end it, and it must end aborted (recorded
        so, for check_txn). Returns the transaction; `p` must be kept alive."""
        t = self.new_txn()
        t["path"].append("abandoned after its writes: only transaction.timeout.ms (%d ms) can end it"
                         % TXN_TIMEOUT_MS)
        p.begin_transaction()
        for part in range(self.parts):
            v = self.h.next_value()
            self.h.attempt(v, t["id"])
            p.produce(self.topic, partition=part, key=str(v).encode(), value=str(v).encode(),
                      on_delivery=lambda err, msg: (t["acks"].__setitem__(parse_value(msg.value().decode()),
                                                                        (msg.partition(), msg.offset()))
                                                    if err is None else None))
            t["values"].append(v)
            t["parts"][v] = part
        left = p.flush(15)
        if left:
            t["path"].append("flush left %d undelivered" % left)
        t["outcome"], t["t1"] = "aborted", time.monotonic()
        self.record(t)
        return t

    def start(self):
        self.thread.start()
        return self

    def stop(self, timeout=120):
        self.stop_ev.set()
        self.thread.join(timeout)
        self.zombies.clear()
        return not self.thread.is_alive()


class LogReader:
    """A fresh consumer (assign(), no group) reading every partition from offset 0 at one
    isolation level; read_until() goes on where the last call stopped."""

    def __init__(self, c, topic, parts, isolation):
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
        self.topic, self.parts, self.isolation = topic, parts, isolation
        self.cons = Consumer(consumer_conf(c, {"isolation.level": isolation}))
        self.cons.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(parts)])
        self.records = []  # (p, off, value)
        self.seen = set()
        self.pos = {p: 0 for p in range(parts)}  # next offset (after EOF: the end it reached)
        self.errors = collections.Counter()

    def read_until(self, done, timeout):
        from confluent_kafka import KafkaError
        deadline = time.monotonic() + timeout
        while not done(self):
            if time.monotonic() > deadline:
                return False
            for m in self.cons.consume(1000, 0.3):
                err, p = m.error(), m.partition()
                if err is None:
                    v = parse_value(m.value().decode(errors="replace"))
                    self.records.append((p, m.offset(), v))
                    self.seen.add(v)
                    self.pos[p] = max(self.pos[p], m.offset() + 1)
                elif err.code() == KafkaError._PARTITION_EOF:
                    self.pos[p] = max(self.pos[p], m.offset())
                else:
                    self.errors["%s partition %s" % (err.name(), p)] += 1
        return True

    def ends(self):
        """{partition: end offset} from ListOffsets at this consumer's isolation level
        (read_committed: the last stable offset; read_uncommitted: the high watermark)."""
        from confluent_kafka import TopicPartition
        out = {}
        for p in range(self.parts):
            try:
                out[p] = self.cons.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)[1]
            except Exception as e:
                out[p] = "error: %s" % e
        return out

    def close(self):
        self.cons.close()


def scenario_txn(c, admin, args, rng):
    """Transactional producers through a SIGKILL of a transaction coordinator and of a
    partition leader; read_committed must show exactly the committed transactions."""
    h = History()
    h.generic_counts = False
    topic, parts = "jepsen-txn", 3
    admin.create_topic(topic, parts, {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"})
    txns = []
    lock = threading.Lock()

    def record(t):
        with lock:
            txns.append(t)
        if t["outcome"] == "committed":
            for part in set(t["parts"].values()):
                h.write_times.append((part, t["t1"]))

    def commits_since(t0):
        with lock:
            return sum(1 for t in txns if t["outcome"] == "committed" and t["t1"] >= t0)

    def fault(node, detail, name):
        """Kill node, hold, restart; log when each producer committed again."""
        if c.active_controller() == node:
            detail += "; it is the active controller"
        log("txn: " + detail)
        t0 = time.monotonic()
        c.kill(node)
        time.sleep(max(0.0, args.hold - 1))
        layout = admin.partitions(topic, timeout=2)
        time.sleep(min(1.0, args.hold))
        t_restart = time.monotonic()
        c.start_node(node, wait=True, timeout=90)
        h.events.append((t0, time.monotonic(), name, detail))
        with lock:
            first = {tid: min((t["t1"] - t0 for t in txns if t["producer"] == tid and t["outcome"] == "committed"
                               and t["t1"] >= t0), default=None) for tid in tids}
        log("txn: node %d restarted %.1fs after the kill (ready at +%.1fs); %d commits since the kill; first "
            "commit of each producer after it at %s; %s layout %.0fs into the fault (leader, replicas, isr): %s"
            % (node, t_restart - t0, time.monotonic() - t0, commits_since(t0),
               ", ".join("%s +%s" % (tid, "%.1fs" % f if f is not None else "none") for tid, f in first.items()),
               topic, max(0.0, args.hold - 1), layout))

    reader = ConcurrentReader(c, h, topic, parts, "rc", conf={"isolation.level": "read_committed"}).start()
    tids = ["jepsen-txn-%d" % i for i in range(args.txn_producers)]
    prods = [TxnProducer(c, h, topic, parts, tid, random.Random(rng.random()), args.txn_abort_ratio,
                         record, crash_ratio=args.txn_crash_ratio).start() for tid in tids]
    t_start = time.monotonic()
    t_end = t_start + (args.txn_duration if args.txn_duration is not None else args.duration)
    coord = None
    t_healed = None
    ap = watch = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(p.counts["committed"] for p in prods):
            time.sleep(0.2)
        idle = [p.tid for p in prods if not p.counts["committed"]]
        if idle:
            h.anomaly("txn-setup", "no committed transaction in 60s from %s: %s"
                      % (idle, {p.tid: dict(p.errors) for p in prods if p.tid in idle}))
        log("txn: %d producers committing (%.1fs to the first commit of each)"
            % (len(prods), time.monotonic() - t_start))
        # A transaction left open for the coordinator to time out, through the faults.
        abandoner = TxnProducer(c, h, topic, parts, "jepsen-txn-abandoned", random.Random(1), 0, record)
        ap = abandoner.new_producer(timeout=60)
        if ap is None:
            h.anomaly("txn-setup", "init_transactions of the abandoned transaction's id failed: %s"
                      % dict(abandoner.errors))
        else:
            abandoned = abandoner.abandon(ap)
            watch = TimeoutAbortWatch(c, h, topic, abandoned, ap)
            log("txn: %s left open at offsets %s (transaction.timeout.ms %d)"
                % (abandoned["id"], sorted(abandoned["acks"].values()), TXN_TIMEOUT_MS))
        time.sleep(2)

        # 1. SIGKILL the transaction coordinator of the first producer's transactional id.
        try:
            coord = txn_coordinator(c, tids[0])
        except TimeoutError as e:
            h.anomaly("txn-setup", str(e))
        if coord is not None:
            shared = [tid for tid in tids[1:] if _safe_coordinator(c, tid) == coord]
            detail = ("SIGKILL node %d (transaction coordinator of %s%s), restart after %.0fs"
                      % (coord, tids[0], " and " + ", ".join(shared) if shared else "", args.hold))
            fault(coord, detail, "kill-txn-coordinator")
        time.sleep(3)

        # 2. SIGKILL the leader of a partition of the topic (another node if possible).
        info = admin.partitions(topic) or {}
        cands = sorted((p, l) for p, (l, _rep, _isr) in info.items() if l >= 0 and c.nodes[l].alive())
        pick = [x for x in cands if x[1] != coord] or cands
        if pick:
            part, leader = rng.choice(pick)
            detail = "SIGKILL node %d (leader of partition %d), restart after %.0fs" % (leader, part, args.hold)
            fault(leader, detail, "kill-leader")
        else:
            h.anomaly("txn-setup", "no live leader of %s to kill: %s" % (topic, info))
        # 3. Every fault kind of the workload's nemesis, on this topic's leaders.
        scenario_nemesis(c, admin, h, topic, args, rng, "txn")
        t_healed = time.monotonic()
        time.sleep(max(4.0, t_end - time.monotonic()))
    finally:
        for p in prods:
            if not p.stop(timeout=120):
                h.anomaly("harness-error", "producer %s did not stop in 120s" % p.tid)
        reader.stop()
    after = commits_since(t_healed) if t_healed is not None else 0
    log("txn: workload done in %.1fs; %d commits after the last restart"
        % (time.monotonic() - t_start, after))

    # Recovery: every partition of the topic and of __transaction_state led, ISR full.
    try:
        admin.wait_healthy(topic, parts, timeout=60)
        admin.wait_healthy("__transaction_state", None, timeout=60)
    except TimeoutError as e:
        h.anomaly("unrecovered", str(e))

    if watch is not None:
        watch.check()
        del watch, ap

    # The LSO must move: a new transaction (one value per partition) commits and becomes
    # visible to read_committed within TXN_STUCK_BOUND; the read starts at offset 0, so it
    # is also the read that the checks use.
    probe = TxnProducer(c, h, topic, parts, "jepsen-txn-probe", random.Random(0), 0, record)
    t_probe = time.monotonic()
    pp = probe.new_producer(timeout=60)
    probe_vals = []
    if pp is None:
        h.anomaly("txn-stuck", "after recovery, init_transactions of a new transactional id failed for 60s: %s"
                  % dict(probe.errors))
    else:
        t = probe.new_txn()
        outcome, _ = probe.run_txn(pp, t, abort=False, k=parts, start=0)
        t["outcome"], t["t1"] = outcome, time.monotonic()
        record(t)
        if outcome == "committed":
            probe_vals = list(t["values"])
        else:
            h.anomaly("txn-stuck", "after recovery, a new transaction did not commit: %s" % "; ".join(t["path"]))
        pp.flush(5)
        del pp
    t_commit = time.monotonic()
    rc = LogReader(c, topic, parts, "read_committed")
    ru = LogReader(c, topic, parts, "read_uncommitted")
    try:
        visible = rc.read_until(lambda r: all(v in r.seen for v in probe_vals), TXN_STUCK_BOUND)
        if probe_vals and not visible:
            h.anomaly("txn-stuck", "the transaction committed after recovery (values %s, commit returned %.1fs "
                      "after it began) was not visible to read_committed %.0fs later: read up to %s, last stable "
                      "offsets %s, high watermarks %s" % (probe_vals, t_commit - t_probe, TXN_STUCK_BOUND,
                                                          rc.pos, rc.ends(), ru.ends()))
        elif probe_vals:
            log("txn: a transaction committed after recovery was visible to read_committed %.1fs after its commit "
                "returned (%.1fs after init_transactions began)"
                % (time.monotonic() - t_commit, time.monotonic() - t_probe))
        hw = ru.ends()
        if not all(isinstance(v, int) for v in hw.values()):
            h.anomaly("drain", "no high watermarks: %s" % hw)
            hw = {p: 0 for p in range(parts)}
        if not rc.read_until(lambda r: all(r.pos[p] >= hw[p] for p in range(parts)), TXN_STUCK_BOUND):
            h.anomaly("txn-stuck", "read_committed did not reach the high watermarks %s in %.0fs (no producer "
                      "is running): reached %s, last stable offsets %s" % (hw, TXN_STUCK_BOUND, rc.pos, rc.ends()))
        if not ru.read_until(lambda r: all(r.pos[p] >= hw[p] for p in range(parts)), 60):
            h.anomaly("drain", "read_uncommitted did not reach the high watermarks %s in 60s: reached %s"
                      % (hw, ru.pos))
        for r in (rc, ru):
            for e, n in r.errors.items():
                h.anomaly("drain", "%s consumer: %s (%d times)" % (r.isolation, e, n))
    finally:
        rc.close()
        ru.close()
    log("txn: read %d records read_committed, %d read_uncommitted, high watermarks %s"
        % (len(rc.records), len(ru.records), hw))

    with lock:
        all_txns = list(txns)
    anomalies, counts = check_txn(all_txns, rc.records, ru.records,
                                  [(p, off, v) for _s, p, off, v in h.reads])
    for kind, ev in anomalies.items():
        for e in ev:
            h.anomaly(kind, e)
    for name, recs in (("read_committed", rc.records), ("read_uncommitted", ru.records)):
        for p, off, v in recs:
            if v not in h.attempted:
                h.anomaly("phantom", "%s read %r at (%d,%d), never sent" % (name, v, p, off))
    totals = collections.Counter()
    errors = collections.Counter()
    for p in prods:
        totals.update(p.counts)
        errors.update(p.errors)
    h.extra_counts.update(counts)
    h.extra_counts.update({"deliberate_aborts": totals["deliberate_abort"],
                           "crashes_before_commit": totals["crash_before-commit"],
                           "crashes_during_commit": totals["crash_during-commit"],
                           "producers_replaced": totals["replaced"],
                           "zombie_attempts": totals["zombie_attempts"],
                           "commits_after_last_restart": after, "read_committed": len(rc.records),
                           "read_uncommitted": len(ru.records), "read_concurrent": len(h.reads)})
    if errors:
        h.notes.append("client errors: %s" % ", ".join("%s x%d" % kv for kv in errors.most_common()))
    for t in all_txns:
        if t["outcome"] == "unknown" and not any("client crash" in s for s in t["path"]):
            h.notes.append("unknown outcome: %s: %s" % (t["id"], "; ".join(t["path"])))
    if reader.errors:
        h.notes.append("concurrent reader errors: %s" % dict(reader.errors))
    return h


class TimeoutAbortWatch:
    """Watches the abandoned transaction `t` (TxnProducer.abandon) from the moment it is
    left open: its coordinator must abort it once transaction.timeout.ms has passed, so
    the last stable offset of every partition it wrote moves past its record within the
    timeout, a scan interval and TXN_TIMEOUT_ABORT_SLACK_S (txn-timeout-unresolved
    otherwise); and its producer, which never learnt of it, cannot commit it afterwards
    (txn-timeout-committed)."""

    def __init__(self, c, h, topic, t, p):
        self.c, self.h, self.topic, self.t, self.p = c, h, topic, t, p
        self.bound = TXN_TIMEOUT_MS / 1000.0 + TXN_ABORT_SCAN_S + TXN_TIMEOUT_ABORT_SLACK_S
        self.wrote = {part: off for (part, off) in t["acks"].values()}
        self.lso = {}
        self.ended_after = None
        self.thread = threading.Thread(target=self._run, name="txn-timeout-watch", daemon=True)
        self.thread.start()

    def _run(self):
        from confluent_kafka import Consumer, KafkaException, TopicPartition
        cons = Consumer(consumer_conf(self.c, {"isolation.level": "read_committed"}))
        try:
            deadline = self.t["t1"] + self.bound
            while time.monotonic() < deadline:
                for part in self.wrote:
                    try:
                        self.lso[part] = cons.get_watermark_offsets(TopicPartition(self.topic, part), timeout=2)[1]
                    except KafkaException as e:
                        self.lso[part] = "error: %s" % e
                if all(isinstance(v, int) and v > self.wrote[part] for part, v in self.lso.items()):
                    self.ended_after = time.monotonic() - self.t["t1"]
                    return
                time.sleep(0.5)
        except Exception:
            self.h.anomaly("harness-error", "timeout watch: %s" % traceback.format_exc())
        finally:
            cons.close()

    def check(self):
        from confluent_kafka import KafkaException
        t, h = self.t, self.h
        if len(self.wrote) != len(t["values"]):
            h.anomaly("txn-setup", "the abandoned transaction %s was not fully written: acks %s of values %s"
                      % (t["id"], t["acks"], t["values"]))
            return
        self.thread.join(self.bound + 30)
        if self.ended_after is None:
            h.anomaly("txn-timeout-unresolved",
                      "%s was left open with records at %s; %.0fs later (timeout %d ms) the last stable offsets "
                      "were %s: the coordinator never ended it" % (t["id"], self.wrote, self.bound, TXN_TIMEOUT_MS,
                                                                    self.lso))
            return
        t["path"].append("ended by the coordinator's timeout %.1fs after its writes" % self.ended_after)
        log("txn: the abandoned %s was ended by its coordinator %.1fs after its writes (timeout %d ms, scan "
            "every %.0fs; last stable offsets %s past its records at %s)"
            % (t["id"], self.ended_after, TXN_TIMEOUT_MS, TXN_ABORT_SCAN_S, self.lso, self.wrote))
        h.extra_counts["timeout_abort_s"] = round(self.ended_after, 1)
        try:
            self.p.commit_transaction(10)
            h.anomaly("txn-timeout-committed", "%s: its producer committed it after the coordinator timed it out"
                      % t["id"])
        except KafkaException as e:
            t["path"].append(_kerr("late commit", e.args[0]))
            log("txn: the abandoned producer's late commit failed as it must: %s" % _kerr("commit", e.args[0]))


def _safe_coordinator(c, tid):
    try:
        return txn_coordinator(c, tid, timeout=5)
    except TimeoutError:
        return None


SCENARIOS = {"workload": scenario_workload, "2013": scenario_2013, "failover": scenario_failover,
             "groups": scenario_groups, "txn": scenario_txn}


# =========================================================================================
# Main
# =========================================================================================

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=["kafka", "sluice"], default="kafka")
    ap.add_argument("--topology", choices=["combined", "split"], default="combined")
    ap.add_argument("--duration", type=float, default=110,
                    help="seconds of the nemesis in each scenario that runs it (workload, txn, "
                         "groups; 110: one round of every fault kind, with a margin)")
    ap.add_argument("--scenarios", default="workload,2013,failover,groups,txn")
    ap.add_argument("--producers", type=int, default=3)
    ap.add_argument("--rate", type=float, default=80.0, help="messages/s per producer")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--hold", type=float, default=6.0, help="seconds each fault lasts")
    ap.add_argument("--partition-mode", choices=["reset", "blackhole"], default="reset")
    ap.add_argument("--faults", default=None,
                    help="the workload nemesis's fault kinds, in the order it cycles through them "
                         "(default: all of %s; %s with Sluice only)"
                    % (", ".join(FAULT_KINDS), ", ".join(SLUICE_ONLY_FAULTS)))
    ap.add_argument("--failover-rate", type=float, default=100.0, help="messages/s in the failover scenario")
    ap.add_argument("--unclean-2013", action="store_true",
                    help="negative control: run the 2013 scenario with unclean.leader.election."
                         "enable=true on its topic; the checker must then report anomalies")
    ap.add_argument("--txn-duration", type=float, default=None,
                    help="seconds of the txn scenario's workload (default: --duration)")
    ap.add_argument("--txn-producers", type=int, default=3, help="transactional producers in the txn scenario")
    ap.add_argument("--txn-abort-ratio", type=float, default=0.25,
                    help="share of the txn scenario's transactions aborted on purpose")
    ap.add_argument("--txn-crash-ratio", type=float, default=0.03,
                    help="share of the txn scenario's transactions whose client 'crashes' (is abandoned)"
                         " before or during commit")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--summary", help="write a JSON summary here")
    ap.add_argument("--keep", action="store_true", help="keep the cluster's work dir")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args(argv)

    if args.self_test:
        return self_test()

    cl.exit_on_signals()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    if args.faults is None:
        args.faults = ",".join(f for f in FAULT_KINDS
                               if args.backend == "sluice" or f not in SLUICE_ONLY_FAULTS)
    for f in args.faults.split(","):
        if f not in FAULT_KINDS:
            ap.error("unknown fault %s (known: %s)" % (f, ", ".join(FAULT_KINDS)))
        if f in SLUICE_ONLY_FAULTS and args.backend != "sluice":
            ap.error("fault %s needs Sluice's clock hook" % f)
    scenarios = [s for s in args.scenarios.split(",") if s]
    for s in scenarios:
        if s not in SCENARIOS:
            ap.error("unknown scenario %s" % s)
    log("jepsen: backend %s, topology %s, scenarios %s, duration %ss, seed %d"
        % (args.backend, args.topology, scenarios, args.duration, seed))
    summary = {"backend": args.backend, "topology": args.topology, "seed": seed,
               "duration": args.duration, "scenarios": {}}
    failed = False
    t_all = time.monotonic()
    c = cl.Cluster(args.backend, args.topology, keep=args.keep)
    try:
        t = time.monotonic()
        c.start()
        summary["startup_s"] = round(time.monotonic() - t, 1)
        if args.backend == "kafka":
            summary["kafka_version"] = open(os.path.join(c.libs, "VERSION")).read().strip()
        admin = Admin(c)
        for s in scenarios:
            t = time.monotonic()
            log("=== scenario %s" % s)
            try:
                histories = SCENARIOS[s](c, admin, args, rng)
            except Exception:
                histories = History()
                histories.anomaly("harness-error", traceback.format_exc())
            if isinstance(histories, History):
                histories = [(s, histories)]
            # make the cluster whole for the next scenario
            try:
                c.heal_all(timeout=120)
            except Exception as e:
                histories[0][1].anomaly("unrecovered", "cluster not whole after scenario: %s" % e)
            dt = time.monotonic() - t
            for name, h in histories:
                failed |= report_history(name, h, dt, c, summary)

    except Exception:
        traceback.print_exc()
        summary["error"] = traceback.format_exc()
        failed = None
    finally:
        t = time.monotonic()
        c.stop()
        log("cluster stopped in %.1fs" % (time.monotonic() - t))
    summary["total_s"] = round(time.monotonic() - t_all, 1)
    summary["pass"] = failed is False
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump(summary, f, indent=2)
    log("jepsen: %s in %.1fs (%s)" % ("PASS" if failed is False else "FAIL", summary["total_s"],
                                      ", ".join("%s %s %.1fs" % (k, "pass" if v["pass"] else "FAIL", v["seconds"])
                                                for k, v in summary["scenarios"].items())))
    if failed is None:
        return 2
    return 1 if failed else 0


def report_history(s, h, dt, c, summary):
    """Checks and reports one history; records it in the summary; True if it failed."""
    result = check(h)
    report(s, result)
    for n in h.notes[:10]:
        print("  note: %s" % n)
    if len(h.notes) > 10:
        print("  note: ... and %d more notes" % (len(h.notes) - 10))
    gaps = ack_gaps(h, h.events)
    for name, detail, gap in gaps["per_fault"]:
        print("  fault: %s: %s; longest per-partition ack gap from it to the next fault: %s"
              % (name, detail, "%ss" % gap if gap is not None else "no acks in that window"))
    ok = not result["anomalies"]
    if "delivery-failures" in result["anomalies"]:
        # The producers' librdkafka logs (producer-*.rdkafka.log) and the nodes' logs.
        c.keep = True
        print("  note: work dir kept for the failed deliveries: %s" % c.workdir)
    log("=== scenario %s: %s in %.1fs" % (s, "PASS" if ok else "FAIL", dt))
    summary["scenarios"][s] = {
        "pass": ok, "seconds": round(dt, 1), "counts": result["counts"],
        "anomalies": {k: len(v) for k, v in result["anomalies"].items()},
        "longest_ack_gap_s": gaps["longest_ack_gap_s"],
        "baseline_longest_ack_gap_s": gaps["baseline_longest_ack_gap_s"],
        "faults": [{"fault": n, "detail": d, "longest_ack_gap_s": g} for n, d, g in gaps["per_fault"]],
        "faults_injected": dict(collections.Counter(name for _t0, _t1, name, _d in h.events)),
        "proxy": dict(c.net.stats)}
    return not ok


if __name__ == "__main__":
    sys.exit(main())
