#!/usr/bin/env python3
"""Round trips with every codec the other way: librdkafka writes, the native consumer reads.

    python3 compat/client/consume.py BOOTSTRAP WORKDIR [SUITE]

For each codec (none, gzip, snappy, lz4, zstd): a confluent-kafka (librdkafka) producer
sends 300 keyed records with headers to a 3-partition topic (compression.type=CODEC,
linger.ms=5); `sluice consume TOPIC -e -f ...` (built on sluice-client's consumer, by
assignment from the beginning) must print every record at the partition and offset
librdkafka's delivery report gave, with the same key, value and headers, in offset order
per partition, and nothing else.
"""

import os
import subprocess
import sys

sys.dont_write_bytecode = True
from common import (ROOT, T, Checks, CheckFailed, Producer, create_topics, expect,  # noqa: E402
                    main_guard, name)

BOOTSTRAP = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
SLUICE = os.environ.get("SLUICE", os.path.join(ROOT, "target", "debug", "sluice"))
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
N = 300


def produce(topic, codec):
    """Returns {(partition, offset): (key, value, headers)} from the delivery reports."""
    p = Producer({"bootstrap.servers": BOOTSTRAP, "compression.type": codec,
                  "linger.ms": 5, "log_level": 3})
    sent = {}
    errors = []
    # A delivery report carries no headers: the ones sent, by value.
    headers_of = {}

    def cb(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            value = msg.value().decode()
            sent[(msg.partition(), msg.offset())] = (msg.key().decode(), value,
                                                     headers_of[value])

    for i in range(N):
        headers = [("n", str(i).encode())] if i % 3 else []
        headers_of["value %d %s" % (i, codec)] = tuple((k, v.decode()) for k, v in headers)
        p.produce(topic, key=("key-%d" % (i % 40)).encode(), value=("value %d %s" % (i, codec)).encode(),
                  headers=headers, on_delivery=cb)
    if p.flush(T) or errors or len(sent) != N:
        raise CheckFailed("librdkafka produce: %d delivered, errors %s" % (len(sent), errors[:3]))
    return sent


def consume(topic):
    run = subprocess.run([SLUICE, "consume", topic, "-b", BOOTSTRAP, "-e",
                          "-f", "%p\\t%o\\t%k\\t%s\\t%h\\n"],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    if run.returncode != 0:
        raise CheckFailed("sluice consume: exit %d: %s" % (run.returncode, run.stderr[-500:]))
    got = {}
    order = {}
    for line in run.stdout.splitlines():
        p, o, k, v, h = line.split("\t")
        headers = tuple(tuple(x.split("=", 1)) for x in h.split(",")) if h else ()
        key = (int(p), int(o))
        if key in got:
            raise CheckFailed("offset %s printed twice" % (key,))
        got[key] = (k, v, headers)
        order.setdefault(int(p), []).append(int(o))
    for p, offsets in order.items():
        if offsets != sorted(offsets):
            raise CheckFailed("partition %d out of order: %s" % (p, offsets[:10]))
    return got


def main(checks):
    topics = {name("consume-" + c): 3 for c in CODECS}
    create_topics(BOOTSTRAP, topics)
    for codec in CODECS:
        topic = name("consume-" + codec)

        def check(topic=topic, codec=codec):
            sent = produce(topic, codec)
            got = consume(topic)
            missing = sorted(set(sent) - set(got))
            extra = sorted(set(got) - set(sent))
            expect((missing[:5], extra[:5]), ([], []), "(partition, offset)s missing, extra")
            wrong = [k for k in sent if sent[k] != got[k]]
            expect([got[k] for k in wrong[:1]], [sent[k] for k in wrong[:1]],
                   "the record at %s" % (wrong[:1],))

        checks.run("%s: %d records written by librdkafka, read back by sluice consume (the "
                   "native consumer) at the same partitions and offsets with keys, values "
                   "and headers" % (codec, N), check)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    checks = Checks(sys.argv[3] if len(sys.argv) > 3 else "consume")
    sys.exit(main_guard(checks, lambda: main(checks)))
