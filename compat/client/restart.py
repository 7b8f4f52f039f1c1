#!/usr/bin/env python3
"""The idempotent native producer across a broker SIGKILL (run.sh kills and restarts it).

    python3 compat/client/restart.py prepare BOOTSTRAP STATE_FILE [SUITE]
    python3 compat/client/restart.py verify BOOTSTRAP STATE_FILE STREAM_OUT STREAM_RC KILLED_AT [SUITE]

prepare: creates a 4-partition topic, writes its name to STATE_FILE.
run.sh then starts `client_compat stream BOOTSTRAP TOPIC 6000 1500` (keys k-(i % 97), values
i, idempotence on by default, acks=all), SIGKILLs the broker once 1,500 records were
acknowledged, starts it again on the same ports and data dir, and waits for the producer.
verify:
  producer      the producer ended with every record acknowledged (exit 0, "delivered
                6000 failed 0") and had not finished sending when the broker was killed
  no loss, no duplicates
                librdkafka reads the topic from the beginning: each value 0..5999 exactly
                once
  order         per partition the values increase (send order), and each key stays on one
                partition
"""

import json
import sys

sys.dont_write_bytecode = True
from common import (Checks, CheckFailed, create_topics, expect, main_guard, name,  # noqa: E402
                    read_all)

PARTITIONS = 4
COUNT = 6000


def prepare(bootstrap, state_file, checks):
    def run():
        topic = name("restart")
        create_topics(bootstrap, {topic: PARTITIONS})
        with open(state_file, "w") as f:
            json.dump({"topic": topic}, f)
    checks.run("a %d-partition topic for the stream" % PARTITIONS, run)


def verify(bootstrap, state_file, stream_out, stream_rc, killed_at, checks):
    with open(state_file) as f:
        topic = json.load(f)["topic"]
    with open(stream_out) as f:
        lines = f.read().splitlines()

    def producer():
        expect(stream_rc, "0", "client_compat stream exit code (output: %s)"
               % " | ".join(l for l in lines if not l.startswith(("sent", "acked")))[-400:])
        expect(lines[-1] if lines else None, "delivered %d failed 0" % COUNT, "summary")
        sent = int(killed_at.split(",")[0].split()[1]) if killed_at.startswith("sent ") else None
        if sent is None or sent >= COUNT:
            raise CheckFailed("the broker was killed at %r: not mid-stream" % killed_at)
    checks.run("the idempotent producer rode out the SIGKILL: all %d records acknowledged "
               "(killed after %s)" % (COUNT, killed_at), producer)
    msgs = read_all(bootstrap, {topic: PARTITIONS}, COUNT, timeout=30)

    def exactly_once():
        vals = [int(m.value()) for m in msgs]
        missing = sorted(set(range(COUNT)) - set(vals))
        dups = len(vals) - len(set(vals))
        if missing or dups or len(vals) != COUNT:
            seen, dup_list = set(), []
            for v in vals:
                if v in seen:
                    dup_list.append(v)
                seen.add(v)
            raise CheckFailed("%d records read; %d missing (first %s), %d duplicates (first %s)"
                              % (len(vals), len(missing), missing[:10], dups, dup_list[:10]))
    checks.run("librdkafka reads each of the %d values exactly once (no loss, no duplicates)"
               % COUNT, exactly_once)

    def ordered():
        last, keys = {}, {}
        for m in msgs:
            v, p = int(m.value()), m.partition()
            if p in last and v <= last[p][0]:
                raise CheckFailed("partition %d: value %d at offset %d after %d at offset %d"
                                  % (p, v, m.offset(), last[p][0], last[p][1]))
            last[p] = (v, m.offset())
            k = m.key().decode()
            if keys.setdefault(k, p) != p:
                raise CheckFailed("key %s on partitions %d and %d" % (k, keys[k], p))
    checks.run("per partition the values are in send order; each key on one partition", ordered)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "prepare":
        checks = Checks(sys.argv[4] if len(sys.argv) > 4 else "restart")
        sys.exit(main_guard(checks, lambda: prepare(sys.argv[2], sys.argv[3], checks)))
    if len(sys.argv) >= 7 and sys.argv[1] == "verify":
        checks = Checks(sys.argv[7] if len(sys.argv) > 7 else "restart")
        sys.exit(main_guard(checks, lambda: verify(*sys.argv[2:7], checks)))
    sys.exit(__doc__)
