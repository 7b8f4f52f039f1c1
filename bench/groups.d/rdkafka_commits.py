#!/usr/bin/env python3
"""OffsetCommit / OffsetFetch rate of librdkafka (confluent-kafka), for bench/groups.

    rdkafka_commits.py BOOTSTRAP TOPIC PARTITIONS OP COUNT THREADS WARMUP GROUP_PREFIX

The same as CommitBench.java: THREADS threads (confluent-kafka releases the GIL while it
waits for the broker), each a Consumer in its own group (GROUP_PREFIX-tN) with assign()
of every partition and enable.auto.commit=false; WARMUP untimed operations each, then
COUNT each from a common start:
  commit100  commit(offsets=[all PARTITIONS partitions], asynchronous=False)
  commit1    commit(offsets=[one partition], asynchronous=False), partition i % PARTITIONS
  fetch      committed([all PARTITIONS partitions])
Prints RESULT {"ops":..,"seconds":..,"ops_per_sec":..,"offsets_per_sec":..,"p50_ms":..,
"p99_ms":..,"max_ms":..}.
"""

import json
import sys
import threading
import time

from confluent_kafka import Consumer, TopicPartition


def main():
    bootstrap, topic, partitions, op, count, threads, warmup, prefix = sys.argv[1:9]
    partitions, count, threads, warmup = int(partitions), int(count), int(threads), int(warmup)
    assert op in ("commit100", "commit1", "fetch"), op
    ready = threading.Barrier(threads + 1)
    done = threading.Barrier(threads + 1)
    lat = [[] for _ in range(threads)]
    ends = [0.0] * threads
    errors = [None] * threads

    def once(c, i):
        if op == "commit100":
            c.commit(offsets=[TopicPartition(topic, p, i) for p in range(partitions)],
                     asynchronous=False)
        elif op == "commit1":
            c.commit(offsets=[TopicPartition(topic, i % partitions, i)], asynchronous=False)
        else:
            got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
            if len(got) != partitions or any(t.error or t.offset < 0 for t in got):
                raise RuntimeError("committed() returned %r" % got[:3])

    def worker(ti):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "%s-t%d" % (prefix, ti),
                      "client.id": "%s-t%d" % (prefix, ti), "enable.auto.commit": False,
                      "log_level": 3})
        waited = False
        try:
            c.assign([TopicPartition(topic, p) for p in range(partitions)])
            c.commit(offsets=[TopicPartition(topic, p, 1) for p in range(partitions)],
                     asynchronous=False)
            i = 2
            for _ in range(warmup):
                once(c, i)
                i += 1
            waited = True
            ready.wait()
            mine = lat[ti]
            for _ in range(count):
                s = time.perf_counter()
                once(c, i)
                mine.append(time.perf_counter() - s)
                i += 1
            ends[ti] = time.perf_counter()
        except Exception as e:  # noqa: BLE001 - reported
            errors[ti] = "%s: %s" % (type(e).__name__, e)
            ends[ti] = time.perf_counter()
            if not waited:
                try:
                    ready.wait()
                except threading.BrokenBarrierError:
                    pass
        finally:
            try:
                c.close()
            finally:
                done.wait()

    ts = [threading.Thread(target=worker, args=(t,), daemon=True) for t in range(threads)]
    for t in ts:
        t.start()
    ready.wait()
    start = time.perf_counter()
    done.wait()
    for t, e in enumerate(errors):
        if e:
            print("ERROR thread %d: %s" % (t, e), flush=True)
            sys.exit(1)
    secs = max(ends) - start
    flat = sorted(x for l in lat for x in l)
    ops = threads * count
    per = 1 if op == "commit1" else partitions
    print("RESULT " + json.dumps({
        "ops": ops, "seconds": round(secs, 3), "ops_per_sec": round(ops / secs, 1),
        "offsets_per_sec": round(ops * per / secs, 1),
        "p50_ms": round(flat[len(flat) // 2] * 1e3, 3),
        "p99_ms": round(flat[min(len(flat) - 1, int(len(flat) * 0.99))] * 1e3, 3),
        "max_ms": round(flat[-1] * 1e3, 3)}), flush=True)


if __name__ == "__main__":
    main()
