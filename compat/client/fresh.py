#!/usr/bin/env python3
"""The idempotent native producer into freshly created topics, at full speed.

    python3 compat/client/fresh.py BOOTSTRAP WORKDIR [SUITE]

For each of TOPICS fresh 6-partition topics: create it (waiting only until Metadata lists
every partition's leader, as bench/client does), then at once `client_compat burst
BOOTSTRAP TOPIC 50000 1024` (no key: the sticky partitioner spreads the records; 1 KiB
values, so 15 records per 16 KiB batch; idempotence on by default, acks=all, linger.ms=5).
Kafka answers NOT_LEADER_OR_FOLLOWER for a moment on some partitions of a topic this fresh
although Metadata lists their leader; the producer must retry without letting a later batch
of the partition be written before the failed one. Checks per topic:
  producer      every record acknowledged ("delivered 50000 failed 0"), each at its own
                (partition, offset); the retries the producer logged are reported
  exactly once, in order
                librdkafka reads the topic from the beginning: each value 0..49999 exactly
                once, at the partition and offset the producer reported, increasing per
                partition (send order)
"""

import os
import subprocess
import sys

sys.dont_write_bytecode = True
from common import (Checks, CheckFailed, create_topics, example, expect, main_guard,  # noqa: E402
                    name, read_all)

TOPICS = 3
PARTITIONS = 6
COUNT = 50000
VALUE_BYTES = 1024
SETTINGS = ["linger.ms=5", "batch.size=16384", "acks=all", "enable.idempotence=true"]


def burst(bootstrap, topic, workdir):
    """Runs client_compat burst; returns ({index: (partition, offset)}, failures, summary,
    retries logged)."""
    args = [example(), "burst", bootstrap, topic, str(COUNT), str(VALUE_BYTES)]
    for s in SETTINGS:
        args += ["-X", s]
    env = dict(os.environ, RUST_LOG="sluice_client::producer=debug", NO_COLOR="1")
    err_path = os.path.join(workdir, "fresh-%s.err" % topic)
    with open(err_path, "w") as err:
        run = subprocess.run(args, stdout=subprocess.PIPE, stderr=err, text=True, timeout=150,
                             stdin=subprocess.DEVNULL, env=env)
    placed, failures, summary = {}, [], None
    for line in run.stdout.splitlines():
        if line.startswith("failure "):
            failures.append(line)
        elif line.startswith("delivered "):
            summary = line
        else:
            i, p, o = line.split("\t")
            if int(i) in placed:
                raise CheckFailed("record %s acknowledged twice" % i)
            placed[int(i)] = (int(p), int(o))
    retries = {}
    with open(err_path) as f:
        for line in f:
            if "retrying a batch" in line or "a batch failed" in line:
                code = next((w for w in ("NOT_LEADER_OR_FOLLOWER", "OUT_OF_ORDER_SEQUENCE_NUMBER",
                                         "UNKNOWN_TOPIC_OR_PARTITION", "NOT_ENOUGH_REPLICAS",
                                         "LEADER_NOT_AVAILABLE") if w in line), "other")
                kind = "failed" if "a batch failed" in line else "retried"
                retries["%s %s" % (kind, code)] = retries.get("%s %s" % (kind, code), 0) + 1
    if run.returncode != 0 and not failures and summary is None:
        with open(err_path) as f:
            raise CheckFailed("client_compat burst: exit %d: %s" % (run.returncode, f.read()[-600:]))
    return placed, failures, summary, retries


def check_topic(bootstrap, workdir, k, checks):
    topic = name("fresh%d" % k)
    state = {}

    def produce():
        create_topics(bootstrap, {topic: PARTITIONS})
        placed, failures, summary, retries = burst(bootstrap, topic, workdir)
        state["placed"] = placed
        state["retries"] = retries
        if failures:
            raise CheckFailed("%d failures, first: %s (retries: %s)"
                              % (len(failures), failures[0][:300], retries or "none"))
        expect(summary, "delivered %d failed 0" % COUNT, "summary")
        expect(len(placed), COUNT, "acknowledged records")
        if len(set(placed.values())) != COUNT:
            raise CheckFailed("two records acknowledged at the same (partition, offset)")
    checks.run("topic %d: a fresh %d-partition topic, %d x %d B records sent at once: every "
               "record acknowledged, each at its own offset" % (k, PARTITIONS, COUNT, VALUE_BYTES),
               produce)
    if "placed" not in state:
        return
    checks.run("topic %d: the producer's retries: %s" % (k, ", ".join(
        "%d %s" % (n, what) for what, n in sorted(state["retries"].items())) or "none"),
        lambda: None)
    msgs = read_all(bootstrap, {topic: PARTITIONS}, COUNT, timeout=60)

    def exactly_once_in_order():
        vals = [int(m.value()[:10]) for m in msgs]
        missing = sorted(set(range(COUNT)) - set(vals))
        dups = len(vals) - len(set(vals))
        if missing or dups or len(vals) != COUNT:
            raise CheckFailed("%d records read; %d missing (first %s), %d duplicates"
                              % (len(vals), len(missing), missing[:10], dups))
        last = {}
        for m, v in zip(msgs, vals):
            p = m.partition()
            if state["placed"][v] != (p, m.offset()):
                raise CheckFailed("value %d read at %d/%d, acknowledged at %d/%d"
                                  % ((v, p, m.offset()) + state["placed"][v]))
            if p in last and v <= last[p]:
                raise CheckFailed("partition %d: value %d at offset %d after %d"
                                  % (p, v, m.offset(), last[p]))
            last[p] = v
            if len(m.value()) != VALUE_BYTES:
                raise CheckFailed("value %d: %d bytes" % (v, len(m.value())))
    checks.run("topic %d: librdkafka reads each of the %d values exactly once, at its "
               "acknowledged offset, in send order per partition" % (k, COUNT),
               exactly_once_in_order)


def run(bootstrap, workdir, checks):
    for k in range(TOPICS):
        check_topic(bootstrap, workdir, k, checks)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    checks = Checks(sys.argv[3] if len(sys.argv) > 3 else "fresh")
    sys.exit(main_guard(checks, lambda: run(sys.argv[1], sys.argv[2], checks)))
