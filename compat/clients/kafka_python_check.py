#!/usr/bin/env python3
"""kafka-python (pure Python client, default settings) against a broker.

    python3 compat/clients/kafka_python_check.py BOOTSTRAP

Topics kp-*: created with KafkaAdminClient; records produced with KafkaProducer (its
defaults: in 3.x idempotence on, so InitProducerId; acks=all; the broker's version
inferred from ApiVersions) with keys, headers and explicit timestamps, codecs none and
gzip (the others need optional packages); read back with a KafkaConsumer that has no
group (group_id=None, assign()); beginning_offsets / end_offsets / offsets_for_times.
One PASS/FAIL line per check. Written for kafka-python 3.x (run.sh installs the newest
if none is installed); also passes with 2.3.
"""

import sys
import time

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from checklib import Checks, CheckFailed, eventually, expect, main_guard

CODECS = ["none", "gzip"]
PARTITIONS = 3
COUNT = 24
T = 8  # seconds per client call
BASE_TS = (int(time.time() * 1000) // 1000) * 1000 - 300_000

BOOTSTRAP = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
checks = Checks("kafka-python")
COMMON = dict(bootstrap_servers=BOOTSTRAP, request_timeout_ms=T * 1000,
              client_id="sluice-compat-kafka-python")
# the bound on the initial ApiVersions probe: 3.x renamed 2.x's option
if "bootstrap_timeout_ms" in KafkaProducer.DEFAULT_CONFIG:
    COMMON["bootstrap_timeout_ms"] = T * 1000
else:
    COMMON["api_version_auto_timeout_ms"] = T * 1000


def record(i, codec):
    """(partition, key, value, headers, timestamp) of record i of a codec topic."""
    key = None if i == 4 else ("k%d" % i).encode()
    value = None if i == 6 else ("v%d-%s-" % (i, codec) + "y" * (i * 5)).encode()
    headers = [] if i % 3 == 0 else [("h", ("%d" % i).encode()), ("h2", b"x" * (i % 4))]
    return i % PARTITIONS, key, value, headers, BASE_TS + i * 100


def expected(codec):
    out = {p: [] for p in range(PARTITIONS)}
    for i in range(COUNT):
        p, k, v, h, ts = record(i, codec)
        out[p].append((len(out[p]), k, v, h, ts))
    return out


def topic(codec):
    return "kp-%s" % codec


def consumer():
    return KafkaConsumer(group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
                         fetch_max_wait_ms=100, consumer_timeout_ms=T * 1000, **COMMON)


def main():
    print("# kafka-python %s (producer enable_idempotence default: %s)" % (
        kafka.__version__, KafkaProducer.DEFAULT_CONFIG.get("enable_idempotence")), flush=True)
    state = {}

    def admin_create():
        admin = KafkaAdminClient(**COMMON)
        state["admin"] = admin
        admin.create_topics([NewTopic(topic(c), PARTITIONS, 1) for c in CODECS] +
                            [NewTopic("kp-delete-me", 1, 1, topic_configs={"retention.ms": "60000"})],
                            timeout_ms=T * 1000)

        def listed():
            names = set(admin.list_topics())
            missing = sorted(({topic(c) for c in CODECS} | {"kp-delete-me"}) - names)
            expect(missing, [], "topics missing from list_topics")
        eventually(listed)
    checks.run("KafkaAdminClient create_topics + list_topics", admin_create)

    def describe():
        def ok():
            d = state["admin"].describe_topics([topic("none")])
            expect(len(d), 1, "describe_topics count")
            t = d[0]
            # 3.x uses the protocol's field names, 2.x shorter ones
            expect((t.get("name", t.get("topic")), t["error_code"], t["is_internal"]),
                   (topic("none"), 0, False), "name, error_code, is_internal")
            parts = sorted((p.get("partition_index", p.get("partition")),
                            p.get("leader_id", p.get("leader")), p.get("leader_epoch", 0),
                            list(p.get("replica_nodes", p.get("replicas"))),
                            list(p.get("isr_nodes", p.get("isr"))), p["error_code"])
                           for p in t["partitions"])
            expect(parts, [(i, 1, 0, [1], [1], 0) for i in range(PARTITIONS)],
                   "partitions (index, leader, leader_epoch, replicas, isr, error)")
        eventually(ok)
        c = consumer()
        try:
            expect(c.partitions_for_topic(topic("gzip")), set(range(PARTITIONS)),
                   "partitions_for_topic")
        finally:
            c.close()
    checks.run("describe_topics / partitions_for_topic", describe,
               deps=["KafkaAdminClient create_topics + list_topics"])

    for codec in CODECS:
        def produce(codec=codec):
            p = KafkaProducer(compression_type=None if codec == "none" else codec, linger_ms=20,
                              max_block_ms=T * 1000, **COMMON)
            try:
                futures = []
                for i in range(COUNT):
                    part, k, v, h, ts = record(i, codec)
                    futures.append(p.send(topic(codec), value=v, key=k, headers=h,
                                          partition=part, timestamp_ms=ts))
                p.flush(timeout=T)
                exp = expected(codec)
                for i, f in enumerate(futures):
                    md = f.get(timeout=T)
                    part = i % PARTITIONS
                    expect((md.partition, md.offset, md.timestamp),
                           (part, exp[part][i // PARTITIONS][0], record(i, codec)[4]),
                           "record %d metadata (partition, offset, timestamp)" % i)
            finally:
                p.close(timeout=T)
        checks.run("produce %s" % codec, produce,
                   deps=["KafkaAdminClient create_topics + list_topics"])

    for codec in CODECS:
        def consume(codec=codec):
            c = consumer()
            try:
                tps = [TopicPartition(topic(codec), p) for p in range(PARTITIONS)]
                c.assign(tps)
                c.seek_to_beginning()
                got = {p: [] for p in range(PARTITIONS)}
                deadline = time.monotonic() + T * 1.5
                while sum(map(len, got.values())) < COUNT and time.monotonic() < deadline:
                    for tp, recs in c.poll(timeout_ms=200).items():
                        got[tp.partition].extend(recs)
                # nothing beyond the expected records
                for tp in tps:
                    expect(c.position(tp, timeout_ms=T * 1000), COUNT // PARTITIONS,
                           "position of %s/%d after reading" % (tp.topic, tp.partition))
                extra = c.poll(timeout_ms=300)
                expect(sum(len(r) for r in extra.values()), 0, "records past the end")
            finally:
                c.close()
            errors = []
            for p, want in expected(codec).items():
                have = [(r.offset, r.key, r.value, list(r.headers), r.timestamp, r.timestamp_type)
                        for r in got[p]]
                want = [(o, k, v, h, ts, 0) for (o, k, v, h, ts) in want]
                if have != want:
                    for i, (a, b) in enumerate(zip(have, want)):
                        if a != b:
                            errors.append("partition %d #%d: got %r, expected %r" % (p, i, a, b))
                            break
                    if len(have) != len(want):
                        errors.append("partition %d: %d records, expected %d"
                                      % (p, len(have), len(want)))
            if errors:
                raise CheckFailed("; ".join(errors[:4]))
        checks.run("consume %s (assign, seek_to_beginning, no group)" % codec, consume,
                   deps=["produce %s" % codec])

    def list_offsets():
        c = consumer()
        try:
            tps = [TopicPartition(topic("gzip"), p) for p in range(PARTITIONS)]
            expect(c.beginning_offsets(tps), {tp: 0 for tp in tps}, "beginning_offsets")
            expect(c.end_offsets(tps), {tp: COUNT // PARTITIONS for tp in tps}, "end_offsets")
            exp = expected("gzip")
            tp0, tp1, tp2 = tps
            queries = {tp0: exp[0][3][4], tp1: exp[1][2][4] - 50, tp2: exp[2][-1][4] + 1}
            r = c.offsets_for_times(queries)
            got = {tp.partition: (None if v is None else (v.offset, v.timestamp))
                   for tp, v in r.items()}
            expect(got, {0: (3, exp[0][3][4]), 1: (2, exp[1][2][4]), 2: None},
                   "offsets_for_times {partition: (offset, timestamp)}")
        finally:
            c.close()
    checks.run("beginning_offsets / end_offsets / offsets_for_times", list_offsets,
               deps=["produce gzip"])

    def delete():
        admin = state["admin"]
        admin.delete_topics(["kp-delete-me"], timeout_ms=T * 1000)

        def gone():
            expect("kp-delete-me" in set(admin.list_topics()), False, "kp-delete-me listed")
        eventually(gone)
    checks.run("delete_topics", delete, deps=["KafkaAdminClient create_topics + list_topics"])
    if "admin" in state:
        state["admin"].close()


if __name__ == "__main__":
    sys.exit(main_guard(checks, main))
