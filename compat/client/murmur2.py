#!/usr/bin/env python3
"""Keyed placement: the native producer against Kafka's Java producer and librdkafka.

    python3 compat/client/murmur2.py BOOTSTRAP WORKDIR LIBS [SUITE]

300 keys (ascii, UTF-8, empty, binary of 1-1000 bytes, seeded) are produced, one record
per key, to three 16-partition topics: by the native producer (client_compat produce), by
Kafka's Java producer 4.1.1 with its default partitioner (JavaPartitions.java) and by
librdkafka with partitioner=murmur2_random. Each key's partition, as each producer's
acknowledgement reports it, must be the same for all three; and librdkafka reading the
native producer's topic must find each record where the producer said.
"""

import random
import sys

sys.dont_write_bytecode = True
from common import (Checks, CheckFailed, create_topics, expect, java_partitions,  # noqa: E402
                    main_guard, name, rdkafka_partitions, read_all, rust_produce)

PARTITIONS = 16


def keys():
    rnd = random.Random(2026)
    out = [b"", "日本語".encode(), "中文键".encode(), "Ελληνικά".encode(), b"\x00", b"\xff" * 4]
    out += [("user-%d" % i).encode() for i in range(100)]
    while len(out) < 300:
        out.append(bytes(rnd.randrange(256) for _ in range(rnd.choice([1, 2, 3, 5, 8, 13, 64,
                                                                         257, 1000]))))
    return out


def main(bootstrap, workdir, libs, checks):
    ks = keys()
    t_rust, t_java, t_rd = name("m2-rust"), name("m2-java"), name("m2-rdkafka")
    create_topics(bootstrap, {t_rust: PARTITIONS, t_java: PARTITIONS, t_rd: PARTITIONS})
    got = {}

    def rust():
        placed = rust_produce(bootstrap, t_rust, [(k, str(i).encode(), [], None)
                                                  for i, k in enumerate(ks)], workdir)
        got["rust"] = [p for p, _ in placed]
        got["rust-offsets"] = placed

    def java():
        got["java"] = java_partitions(bootstrap, t_java, ks, libs, workdir)

    def rdkafka():
        got["rdkafka"] = rdkafka_partitions(bootstrap, t_rd, ks)

    checks.run("the native producer sends %d keys to %d partitions" % (len(ks), PARTITIONS), rust)
    checks.run("Kafka's Java producer (default partitioner) sends the same keys", java)
    checks.run("librdkafka (murmur2_random) sends the same keys", rdkafka)

    def compare(other):
        def fn():
            bad = [i for i in range(len(ks)) if got["rust"][i] != got[other][i]]
            if bad:
                i = bad[0]
                raise CheckFailed("%d of %d keys differ; first: key %s: native producer %d, %s %d"
                                  % (len(bad), len(ks), ks[i].hex()[:40], got["rust"][i], other,
                                     got[other][i]))
            if len(set(got["rust"])) < PARTITIONS:
                raise CheckFailed("only %d partitions used" % len(set(got["rust"])))
        return fn

    checks.run("every key on the partition Kafka's Java producer picks", compare("java"),
               deps=["the native producer sends %d keys to %d partitions" % (len(ks), PARTITIONS),
                     "Kafka's Java producer (default partitioner) sends the same keys"])
    checks.run("every key on the partition librdkafka's murmur2_random picks", compare("rdkafka"),
               deps=["the native producer sends %d keys to %d partitions" % (len(ks), PARTITIONS),
                     "librdkafka (murmur2_random) sends the same keys"])

    def read_back():
        msgs = read_all(bootstrap, {t_rust: PARTITIONS}, len(ks))
        expect(len(msgs), len(ks), "records read")
        where = {int(m.value()): (m.partition(), m.offset(), m.key() or b"") for m in msgs}
        for i, (p, o) in enumerate(got["rust-offsets"]):
            expect(where.get(i), (p, o, ks[i]), "record %d (partition, offset, key)" % i)
    checks.run("librdkafka reads each record where the native producer said", read_back,
               deps=["the native producer sends %d keys to %d partitions" % (len(ks), PARTITIONS)])


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    checks = Checks(sys.argv[4] if len(sys.argv) > 4 else "murmur2")
    sys.exit(main_guard(checks, lambda: main(*sys.argv[1:4], checks)))
