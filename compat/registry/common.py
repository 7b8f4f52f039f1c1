"""Shared by compat/registry's Python checks: the schemas, clients, topics and readers.

Every check here judges Sluice's schema registry (`sluice server --with-registry`) with
Confluent's own Python client (`confluent-kafka`: SchemaRegistryClient and the Avro,
Protobuf and JSON Schema serializers) and librdkafka for the records. A check script
takes `BOOTSTRAP REGISTRY_URL WORK_DIR` and prints `PASS registry: <suite>: <check>` or
`FAIL registry: <suite>: <check>: <reason>` lines (compat/clients/checklib.py).

Each suite uses its own subjects and topics (prefixed by the suite's name), so the
suites can run at once against one registry; none changes the global config.
"""

import json
import os
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "compat", "clients"))
sys.dont_write_bytecode = True

from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.error import SchemaRegistryError  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from checklib import Checks, CheckFailed, expect, main_guard  # noqa: E402,F401

T = 10  # seconds: the bound on one client call
RUN_ID = uuid.uuid4().hex[:6]

# The guide's example: Order v1, and v2 adding a field with a default and an optional
# (nullable, null default) field, which BACKWARD allows.
ORDER_V1 = json.dumps({
    "type": "record", "name": "Order", "namespace": "com.example",
    "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "double"}],
}, separators=(",", ":"))
ORDER_V2 = json.dumps({
    "type": "record", "name": "Order", "namespace": "com.example",
    "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "double"},
               {"name": "currency", "type": "string", "default": "USD"},
               {"name": "note", "type": ["null", "string"], "default": None}],
}, separators=(",", ":"))
# v2 plus a field without a default: BACKWARD refuses it (new readers cannot fill it in
# for records written with v2).
ORDER_V3_INCOMPATIBLE = json.dumps({
    "type": "record", "name": "Order", "namespace": "com.example",
    "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "double"},
               {"name": "currency", "type": "string", "default": "USD"},
               {"name": "note", "type": ["null", "string"], "default": None},
               {"name": "customer", "type": "string"}],
}, separators=(",", ":"))


def orders_v2(n, prefix="o"):
    """n Order v2 values; amounts are exact binary fractions so doubles compare equal."""
    return [{"id": "%s-%d" % (prefix, i), "amount": i * 10 + 0.25,
             "currency": ["USD", "EUR", "JPY"][i % 3],
             "note": None if i % 2 == 0 else "note \u00e9 %d" % i} for i in range(n)]


def registry_client(url):
    """A fresh client (its own caches): one request is bounded by T, retries are off so an
    error answer is seen as it is."""
    return SchemaRegistryClient({"url": url, "timeout": T, "max.retries": 0})


def expect_values(got, want, what):
    """Lists of values: the count, then the first record that differs (not the whole list)."""
    if len(got) != len(want):
        raise CheckFailed("%s: %d values, expected %d" % (what, len(got), len(want)))
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            raise CheckFailed("%s: record %d is %r, expected %r" % (what, i, g, w))


def registry_error(call, what):
    """Runs call(); returns the SchemaRegistryError it raised; fails if it raised none."""
    try:
        got = call()
    except SchemaRegistryError as e:
        return e
    raise CheckFailed("%s: expected a SchemaRegistryError, got a success: %r" % (what, got))


def expect_error(call, status, code, what):
    e = registry_error(call, what)
    got = (e.http_status_code, e.error_code)
    if got != (status, code):
        raise CheckFailed("%s: got HTTP %s error_code %s (%r), expected HTTP %d error_code %d" % (
            what, got[0], got[1], e.error_message, status, code))
    if not e.error_message:
        raise CheckFailed("%s: the error has no message" % what)
    return e


def wire_schema_id(data, what):
    """The schema id of a value in Confluent's wire format: magic byte 0, 4-byte id."""
    if data is None or len(data) < 5 or data[0] != 0:
        raise CheckFailed("%s: not Confluent's wire format (magic 0 + 4-byte id): %r" % (
            what, data[:8] if data else data))
    return int.from_bytes(data[1:5], "big")


def value_context(topic):
    return SerializationContext(topic, MessageField.VALUE)


# -- the broker --------------------------------------------------------------------------

def create_topic(bootstrap, topic, partitions=1):
    """Creates the topic and waits until its partitions have a leader."""
    a = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": T * 1000,
                     "log_level": 3})
    for f in a.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=T,
                             request_timeout=T).values():
        f.result(timeout=T + 5)
    deadline = time.monotonic() + T
    while True:
        md = a.list_topics(topic=topic, timeout=T).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == partitions and all(
                p.leader >= 0 for p in md.partitions.values()):
            return
        if time.monotonic() > deadline:
            raise CheckFailed("topic %s: no leader after %ds" % (topic, T))
        time.sleep(0.1)


def produce(bootstrap, topic, values, keys=None):
    """Produces the (already serialized) values to partition 0, acks=all; returns offsets."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "socket.timeout.ms": T * 1000, "message.timeout.ms": T * 1000,
                  "log_level": 3})
    offsets = {}
    errors = []

    def report(err, msg, i):
        if err is not None:
            errors.append("record %d: %s" % (i, err))
        else:
            offsets[i] = msg.offset()

    for i, v in enumerate(values):
        p.produce(topic, partition=0, key=None if keys is None else keys[i], value=v,
                  on_delivery=lambda err, msg, i=i: report(err, msg, i))
    left = p.flush(T + 5)
    if left or errors:
        raise CheckFailed("producing to %s: %d undelivered, errors: %s" % (
            topic, left, "; ".join(errors[:3])))
    return [offsets[i] for i in range(len(values))]


def consume(bootstrap, topic, count, timeout=20):
    """The first `count` records of partition 0 (librdkafka Messages, in offset order);
    fails if fewer arrive within `timeout` seconds."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "registry-reader-" + RUN_ID,
                  "enable.auto.commit": False, "enable.partition.eof": False,
                  "fetch.wait.max.ms": 100, "check.crcs": True,
                  "socket.timeout.ms": T * 1000, "log_level": 3})
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            for m in c.consume(count - len(out), 0.2):
                if m.error():
                    raise CheckFailed("consuming %s: %s" % (topic, m.error()))
                out.append(m)
        if len(out) < count:
            raise CheckFailed("consuming %s: %d of %d records within %ds" % (
                topic, len(out), count, timeout))
        return sorted(out, key=lambda m: m.offset())
    finally:
        c.close()


def args():
    """BOOTSTRAP REGISTRY_URL WORK_DIR from the command line."""
    if len(sys.argv) != 4:
        sys.exit("usage: %s BOOTSTRAP REGISTRY_URL WORK_DIR" % sys.argv[0])
    return sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3]
