"""Shared helpers of the transaction checks (librdkafka via confluent-kafka).

The check runner is compat/clients/checklib.py ("PASS <suite>: <check>" lines); the suite
name comes from the command line (run.sh passes e.g. "rdkafka-txn@tv2").
"""

import os
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "clients"))

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError,  # noqa: E402,F401
                             KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from checklib import CheckFailed  # noqa: E402

T = 10  # seconds: the bound on a single client call
RUN_ID = uuid.uuid4().hex[:6]  # topic/group/transactional ids are unique per run


def name(prefix):
    return "%s-%s" % (prefix, RUN_ID)


def admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": T * 1000,
                        "log_level": 3})


def create_topic(bootstrap, topic, partitions=1):
    a = admin(bootstrap)
    fs = a.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=T,
                         request_timeout=T)
    for f in fs.values():
        f.result(timeout=T + 5)
    deadline = time.monotonic() + T
    while True:
        md = a.list_topics(topic=topic, timeout=T)
        t = md.topics.get(topic)
        if t is not None and t.error is None and len(t.partitions) == partitions and all(
                p.leader >= 0 for p in t.partitions.values()):
            return
        if time.monotonic() > deadline:
            raise CheckFailed("topic %s: metadata not ready" % topic)
        time.sleep(0.1)


def txn_producer(bootstrap, txn_id, extra=None):
    conf = {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5,
            "log_level": 3}
    conf.update(extra or {})
    return Producer(conf)


def plain_produce(bootstrap, topic, values, partition=0):
    """Non-transactional, acks=all; returns the offsets."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all",
                  "message.timeout.ms": T * 1000, "log_level": 3})
    offsets, errors = [], []

    def cb(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            offsets.append(msg.offset())

    for v in values:
        p.produce(topic, value=v.encode(), partition=partition, on_delivery=cb)
    left = p.flush(T)
    if left or errors:
        raise CheckFailed("produce to %s: %d undelivered, errors %s" % (topic, left, errors[:3]))
    return sorted(offsets)


def reader(bootstrap, isolation, group=None):
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group or name("reader"),
                     "isolation.level": isolation, "enable.auto.commit": False,
                     "enable.partition.eof": False, "fetch.wait.max.ms": 100,
                     "socket.timeout.ms": T * 1000, "log_level": 3})


def read(bootstrap, topic, isolation, want, partitions=1, linger=0.7, timeout=15):
    """Records of topic (every partition from the beginning) as [(partition, offset,
    value)]: polls until `want` records arrived (or timeout), then `linger` s more for
    any extra ones."""
    return [(p, o, v) for _, p, o, v in
            read_topics(bootstrap, {topic: partitions}, isolation, want, linger, timeout)]


def read_topics(bootstrap, topics, isolation, want, linger=0.7, timeout=15):
    """The same for several topics ({topic: partitions}) with one consumer: sorted
    [(topic, partition, offset, value)]."""
    c = reader(bootstrap, isolation)
    try:
        c.assign([TopicPartition(t, p, OFFSET_BEGINNING)
                  for t, n in topics.items() for p in range(n)])
        out = []
        deadline = time.monotonic() + timeout
        until = None
        while True:
            now = time.monotonic()
            if until is None and len(out) >= want:
                until = now + linger
            if (until is not None and now > until) or now > deadline:
                break
            m = c.poll(0.1)
            if m is None:
                continue
            if m.error():
                raise CheckFailed("%s consumer of %s: %s" % (isolation, list(topics), m.error()))
            out.append((m.topic(), m.partition(), m.offset(),
                        m.value().decode() if m.value() is not None else None))
        return sorted(out)
    finally:
        c.close()


def values_by_partition(records):
    out = {}
    for p, _, v in records:
        out.setdefault(p, []).append(v)
    return out


def committed(bootstrap, group, topic, partitions=1, timeout=T):
    """{partition: committed offset or None}, read with OffsetFetch (require_stable).
    Retried while the broker answers UNSTABLE_OFFSET_COMMIT: a transaction's offsets are
    pending until its markers are written, which Kafka does after EndTxn returned."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    a = admin(bootstrap)
    deadline = time.monotonic() + timeout
    while True:
        fs = a.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p)
                                                  for p in range(partitions)])],
            request_timeout=T, require_stable=True)
        try:
            res = fs[group].result(timeout=T + 5)
            errs = [tp.error for tp in res.topic_partitions if tp.error is not None]
        except KafkaException as e:
            res, errs = None, [e.args[0] if e.args else e]
        unstable = [e for e in errs if isinstance(e, KafkaError)
                    and e.code() == KafkaError.UNSTABLE_OFFSET_COMMIT]
        if unstable and time.monotonic() < deadline:
            time.sleep(0.05)
            continue
        if errs:
            raise CheckFailed("OffsetFetch %s %s: %s" % (group, topic, errs[0]))
        return {tp.partition: tp.offset if tp.offset >= 0 else None
                for tp in res.topic_partitions}


def kafka_error(e):
    """The KafkaError inside a KafkaException (or None)."""
    if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        return e.args[0]
    return None
