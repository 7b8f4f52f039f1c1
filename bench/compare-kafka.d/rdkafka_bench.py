#!/usr/bin/env python3
"""librdkafka load generator for bench/compare-kafka (confluent-kafka, Python).

    rdkafka_bench.py produce BOOTSTRAP TOPIC RECORDS RECORD_SIZE ACKS
    rdkafka_bench.py consume BOOTSTRAP TOPIC RECORDS [IDLE_TIMEOUT_S]

produce: RECORDS records with a RECORD_SIZE-byte value (no key) as fast as librdkafka
takes them, librdkafka's defaults otherwise (linger.ms=5, no idempotence); the clock
stops when every delivery report is in. consume: assign() every partition of TOPIC
from the beginning, no consumer group, until RECORDS records arrived. Both print one
JSON object (records, bytes, seconds, records_per_sec, mb_per_sec with MB = 2^20
bytes, as Kafka's perf tools print it) and exit 1 on an error or a short count.
"""

import json
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition


def report(records, nbytes, seconds, **extra):
    out = {"records": records, "bytes": nbytes, "seconds": round(seconds, 3),
           "records_per_sec": round(records / seconds, 1) if seconds > 0 else 0.0,
           "mb_per_sec": round(nbytes / seconds / 1048576, 2) if seconds > 0 else 0.0}
    out.update(extra)
    print(json.dumps(out), flush=True)


def produce(bootstrap, topic, records, size, acks):
    failed = []
    delivered = [0]

    def on_delivery(err, msg):
        if err is not None:
            if len(failed) < 5:
                failed.append(str(err))
            else:
                failed.append(None)
        else:
            delivered[0] += 1

    errors = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks,
                  "client.id": "compare-kafka-rdkafka-producer",
                  "queue.buffering.max.messages": 1000000,
                  "on_delivery": on_delivery,
                  "error_cb": lambda e: errors.append(str(e))})
    # Metadata first, so the clock does not include the connection.
    p.list_topics(topic, timeout=30)
    payload = (b"SLUICEKAFKA" * (size // 11 + 1))[:size]
    start = time.perf_counter()
    sent = 0
    while sent < records:
        try:
            p.produce(topic, payload)
            sent += 1
        except BufferError:
            p.poll(0.001)
            continue
        if sent % 1000 == 0:
            p.poll(0)
    left = p.flush(120)
    seconds = time.perf_counter() - start
    report(delivered[0], delivered[0] * size, seconds,
           failed=len(failed), undelivered=left, errors=errors[:5],
           first_failures=[f for f in failed if f][:5])
    return 0 if delivered[0] == records and not failed else 1


def consume(bootstrap, topic, records, idle_timeout):
    errors = []
    c = Consumer({"bootstrap.servers": bootstrap,
                  # librdkafka wants a group.id for a consumer handle; with assign() and
                  # no commits it is never used (no FindCoordinator / JoinGroup).
                  "group.id": "compare-kafka-unused",
                  "enable.auto.commit": False, "enable.auto.offset.store": False,
                  "client.id": "compare-kafka-rdkafka-consumer",
                  "error_cb": lambda e: errors.append(str(e))})
    md = c.list_topics(topic, timeout=30)
    parts = sorted(md.topics[topic].partitions)
    start = time.perf_counter()
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
    n = 0
    nbytes = 0
    last = time.perf_counter()
    end = start
    while n < records:
        msgs = c.consume(num_messages=10000, timeout=0.1)
        now = time.perf_counter()
        if not msgs:
            if now - last > idle_timeout:
                break
            continue
        last = now
        for m in msgs:
            if m.error() is not None:
                errors.append(str(m.error()))
                continue
            n += 1
            v = m.value()
            if v is not None:
                nbytes += len(v)
            k = m.key()
            if k is not None:
                nbytes += len(k)
        end = time.perf_counter()
    c.close()
    report(n, nbytes, end - start, errors=errors[:5])
    return 0 if n >= records else 1


def main(argv):
    try:
        if len(argv) == 7 and argv[1] == "produce":
            return produce(argv[2], argv[3], int(argv[4]), int(argv[5]), argv[6])
        if len(argv) in (5, 6) and argv[1] == "consume":
            return consume(argv[2], argv[3], int(argv[4]),
                           float(argv[5]) if len(argv) == 6 else 10.0)
    except KafkaException as e:
        print("rdkafka_bench: %s" % e, file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
