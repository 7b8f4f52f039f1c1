#!/usr/bin/env python3
"""confluent-kafka (librdkafka through Python) load generator for bench/client.

    rdkafka_producer.py BOOTSTRAP TOPIC RECORDS VALUE_BYTES [-X key=value ...]

The same loop as rdkafka_perf.c: RECORDS values (client_compat perf's pattern, no key)
through Producer.produce as fast as it takes them (BufferError: poll 1 ms, retry), poll(0)
every 1,000, flush; prints one `RESULT {json}` line as the others do. Python's per-call
overhead (one produce() call per record) bounds it at small values.
"""

import json
import sys
import time

from confluent_kafka import Producer, libversion


def main(argv):
    bootstrap, topic, records, size = argv[1], argv[2], int(argv[3]), int(argv[4])
    conf = {"bootstrap.servers": bootstrap}
    rest = argv[5:]
    while rest:
        if rest[0] != "-X" or len(rest) < 2 or "=" not in rest[1]:
            sys.exit(__doc__)
        k, v = rest[1].split("=", 1)
        conf[k] = v
        rest = rest[2:]
    done = {"acked": 0, "failed": 0}

    def on_delivery(err, msg):
        done["failed" if err is not None else "acked"] += 1

    conf["on_delivery"] = on_delivery
    p = Producer(conf)
    p.list_topics(topic, timeout=30)
    pool = bytes(ord("a") + (i * 7919 + i // 13) % 26 for i in range(size + 4096))
    values = [pool[o:o + size] for o in range(4096)]
    start = time.perf_counter()
    i = 0
    produce = p.produce
    while i < records:
        try:
            produce(topic, values[(i * 61) % 4096])
        except BufferError:
            p.poll(0.001)
            continue
        i += 1
        if i % 1000 == 0:
            p.poll(0)
    left = p.flush(120)
    seconds = time.perf_counter() - start
    with open("/proc/self/status") as f:
        rss = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
    print("RESULT " + json.dumps({
        "records": records, "value_bytes": size, "seconds": round(seconds, 3),
        "records_per_s": round(records / seconds), "mb_per_s": round(records * size / seconds / 1e6, 2),
        "acked": done["acked"], "failed": done["failed"], "undelivered": left,
        "peak_rss_kib": rss, "librdkafka": libversion()[0]}), flush=True)
    return 0 if done["acked"] == records and not left else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
