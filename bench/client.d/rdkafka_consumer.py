#!/usr/bin/env python3
"""confluent-kafka (librdkafka through Python) consumer load generator for bench/client.

    rdkafka_consumer.py BOOTSTRAP TOPIC PARTITIONS RECORDS [-X key=value ...]

The same loop as rdkafka_consume.c: assign partitions 0..PARTITIONS-1 at OFFSET_BEGINNING
(no subscribe, no group join; confluent-kafka's Consumer requires a group.id, so a
placeholder, and nothing is committed), then Consumer.consume(500, 1.0) (a batch of up to
500, as the Rust consumer's max.poll.records) until RECORDS records arrived, reading each
value's length. One metadata request first (list_topics, as rdkafka_consume.c); the clock
runs from the assign to the last record; prints one `RESULT {json}` line as the others do.
"""

import json
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition, libversion


def main(argv):
    bootstrap, topic, partitions, records = argv[1], argv[2], int(argv[3]), int(argv[4])
    conf = {"bootstrap.servers": bootstrap, "group.id": "bench-client-unused",
            "enable.auto.commit": "false", "enable.auto.offset.store": "false"}
    rest = argv[5:]
    while rest:
        if rest[0] != "-X" or len(rest) < 2 or "=" not in rest[1]:
            sys.exit(__doc__)
        k, v = rest[1].split("=", 1)
        conf[k] = v
        rest = rest[2:]
    c = Consumer(conf)
    c.list_topics(topic, timeout=30)
    begun = time.perf_counter()
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    count = nbytes = errors = 0
    started = None
    last = time.perf_counter()
    consume = c.consume
    while count < records:
        batch = consume(500, 1.0)
        if not batch:
            if time.perf_counter() - last > 30:
                print("rdkafka_consumer.py: no record for 30 s after %d of %d" % (count, records),
                      file=sys.stderr)
                break
            continue
        for m in batch:
            err = m.error()
            if err is not None:
                if err.code() != KafkaError._PARTITION_EOF:
                    errors += 1
                    if errors <= 5:
                        print("rdkafka_consumer.py: %s" % err, file=sys.stderr)
                continue
            if started is None:
                started = time.perf_counter()
            count += 1
            nbytes += len(m.value())
        last = time.perf_counter()
    ended = time.perf_counter()
    if started is None:
        started = ended
    seconds = ended - begun
    with open("/proc/self/status") as f:
        rss = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
    print("RESULT " + json.dumps({
        "records": count, "value_bytes_total": nbytes, "seconds": round(seconds, 3),
        "startup_s": round(started - begun, 3), "records_per_s": round(count / seconds),
        "mb_per_s": round(nbytes / seconds / 1e6, 2), "errors": errors, "peak_rss_kib": rss,
        "librdkafka": libversion()[0]}), flush=True)
    c.close()
    return 0 if count == records else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
