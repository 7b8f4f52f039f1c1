#!/usr/bin/env python3
"""Confluent's ProtobufConverter on a Sluice Connect worker, judged by Confluent's own
Python client (confluent_kafka's ProtobufSerializer / ProtobufDeserializer, issue 20).

(a) sink:   records written by confluent_kafka's ProtobufSerializer (a message with a
            string, int32, int64, double, bool, repeated string, nested message and
            enum; one record with proto3 defaults) are read by a FileStreamSinkConnector
            with value.converter=io.confluent.connect.protobuf.ProtobufConverter and
            InsertField$Value offset.field; every line of the file is the Connect value
            as Kafka's Struct.toString prints it.
(b) source: a FileStreamSourceConnector with the ProtobufConverter and the transforms
            HoistField$Value (field `line`) and InsertField$Value (topic.field,
            timestamp.field) writes a topic; the schema Sluice registered under
            <topic>-value is the message Confluent's converter generates (checked field
            by field from ?format=serialized), and confluent_kafka's
            ProtobufDeserializer, with a message class built by hand for that schema,
            reads every line back. offset.field is Kafka-offset-only (sink records), as
            in Kafka: a source connector with it fails its task with Kafka's message.

run(check, http, wait_until, connect_url, broker, registry, work, sluice) runs both
against a running node; alone, it starts one:
  python3 compat/connect/protobuf_interop.py --sluice target/debug/sluice [--keep]
"""
import argparse
import base64
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2

F = descriptor_pb2.FieldDescriptorProto
CONVERTER = "io.confluent.connect.protobuf.ProtobufConverter"


def _field(message, name, number, kind, repeated=False, type_name=None):
    f = message.field.add(name=name, number=number, type=kind, json_name=name,
                          label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
    if type_name:
        f.type_name = type_name
    return f


def reading_class():
    """sluice/interop/reading.proto: Reading { Sensor, Unit; scalars, repeated, nested, enum }."""
    f = descriptor_pb2.FileDescriptorProto(name="sluice/interop/reading.proto",
                                           package="sluice.interop", syntax="proto3")
    m = f.message_type.add(name="Reading")
    sensor = m.nested_type.add(name="Sensor")
    _field(sensor, "id", 1, F.TYPE_STRING)
    _field(sensor, "floor", 2, F.TYPE_INT32)
    unit = m.enum_type.add(name="Unit")
    unit.value.add(name="CELSIUS", number=0)
    unit.value.add(name="KELVIN", number=1)
    _field(m, "name", 1, F.TYPE_STRING)
    _field(m, "count", 2, F.TYPE_INT32)
    _field(m, "total", 3, F.TYPE_INT64)
    _field(m, "ratio", 4, F.TYPE_DOUBLE)
    _field(m, "ok", 5, F.TYPE_BOOL)
    _field(m, "tags", 6, F.TYPE_STRING, repeated=True)
    _field(m, "sensor", 7, F.TYPE_MESSAGE, type_name=".sluice.interop.Reading.Sensor")
    _field(m, "unit", 8, F.TYPE_ENUM, type_name=".sluice.interop.Reading.Unit")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("sluice.interop.Reading"))


def line_message_file():
    """What Confluent's ProtobufData generates for HoistField(line) + InsertField(topic,
    timestamp) of a FileStreamSource line: an unnamed struct, so ConnectDefault1, proto3,
    fields numbered in order, the timestamp as google.protobuf.Timestamp."""
    f = descriptor_pb2.FileDescriptorProto(name="connect_default.proto", syntax="proto3",
                                           dependency=["google/protobuf/timestamp.proto"])
    m = f.message_type.add(name="ConnectDefault1")
    _field(m, "line", 1, F.TYPE_STRING)
    _field(m, "topic", 2, F.TYPE_STRING)
    _field(m, "ts", 3, F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp")
    return f


def line_class():
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(line_message_file())
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("ConnectDefault1"))


def _produce(broker, topic, values):
    p = Producer({"bootstrap.servers": broker})
    errors = []
    for v in values:
        p.produce(topic, value=v, on_delivery=lambda err, msg: err and errors.append(err))
    p.flush(30)
    if errors:
        raise RuntimeError("produce to %s: %s" % (topic, errors))


def _consume(broker, topic, count, timeout=60):
    c = Consumer({"bootstrap.servers": broker, "group.id": "protobuf-interop-" + uuid.uuid4().hex,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    out = []
    deadline = time.time() + timeout
    try:
        while len(out) < count and time.time() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            out.append(m)
    finally:
        c.close()
    return out


def _file_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().splitlines()


def _connector(http, connect_url, name, config):
    status, body = http("PUT", "%s/connectors/%s/config" % (connect_url, name), config)
    if status not in (200, 201):
        raise RuntimeError("PUT %s: %s %r" % (name, status, body))


def _task_states(http, connect_url, name):
    status, body = http("GET", "%s/connectors/%s/status" % (connect_url, name))
    if status != 200:
        return []
    return [(t.get("state"), t.get("trace", "")) for t in body.get("tasks", [])]


def sink_check(check, http, wait_until, connect_url, broker, registry, work):
    topic = "protobuf-readings-" + uuid.uuid4().hex[:8]
    Reading = reading_class()
    client = SchemaRegistryClient({"url": registry})
    write = ProtobufSerializer(Reading, client, {"use.deprecated.format": False})
    ctx = SerializationContext(topic, MessageField.VALUE)
    readings = [
        Reading(name="r%d" % i, count=i + 1, total=10_000_000_000 + i, ratio=i + 0.5, ok=True,
                tags=["a", "b%d" % i], sensor=Reading.Sensor(id="s%d" % i, floor=-i),
                unit=Reading.KELVIN)
        for i in range(3)
    ]
    # proto3 defaults: unset scalars read as their defaults, an unset message as null.
    readings.append(Reading(name="defaults"))
    _produce(broker, topic, [write(r, ctx) for r in readings])
    expected = [
        "Struct{name=r%d,count=%d,total=%d,ratio=%s,ok=true,tags=[a, b%d],"
        "sensor=Struct{id=s%d,floor=%d},unit=KELVIN,kafka_offset=%d}"
        % (i, i + 1, 10_000_000_000 + i, repr(i + 0.5), i, i, -i, i)
        for i in range(3)
    ]
    expected.append("Struct{name=defaults,count=0,total=0,ratio=0.0,ok=false,tags=[],unit=CELSIUS,"
                    "kafka_offset=3}")
    out = os.path.join(work, topic + ".txt")
    _connector(http, connect_url, topic + "-sink", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "tasks.max": "1",
        "topics": topic,
        "file": out,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": CONVERTER,
        "value.converter.schema.registry.url": registry,
        "transforms": "offset",
        "transforms.offset.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.offset.offset.field": "kafka_offset",
    })
    try:
        got = wait_until("the sink's file", lambda: len(_file_lines(out)) >= len(expected) and _file_lines(out), 60)
    except RuntimeError as e:
        got = _file_lines(out)
        check("protobuf sink: the task runs", False, "%s; tasks %r" % (e, _task_states(http, connect_url, topic + "-sink")))
    check("protobuf sink: ProtobufSerializer records print as Kafka's Struct.toString",
          got == expected, "got %r, expected %r" % (got, expected))
    http("DELETE", "%s/connectors/%s-sink" % (connect_url, topic))


def source_check(check, http, wait_until, connect_url, broker, registry, work):
    topic = "protobuf-lines-" + uuid.uuid4().hex[:8]
    source_file = os.path.join(work, topic + ".in")
    lines = ["protobuf line %d" % i for i in range(5)] + ["ünïcode ✓"]
    with open(source_file, "w") as f:
        f.write("".join(l + "\n" for l in lines))
    _connector(http, connect_url, topic + "-source", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1",
        "file": source_file,
        "topic": topic,
        "value.converter": CONVERTER,
        "value.converter.schema.registry.url": registry,
        "transforms": "hoist,insert",
        "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.hoist.field": "line",
        "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.insert.topic.field": "topic",
        "transforms.insert.timestamp.field": "ts",
    })
    records = _consume(broker, topic, len(lines))
    check("protobuf source: every line reaches the topic", len(records) == len(lines),
          "%d of %d; tasks %r" % (len(records), len(lines), _task_states(http, connect_url, topic + "-source")))

    client = SchemaRegistryClient({"url": registry})
    try:
        latest = client.get_latest_version(topic + "-value")
        registered = client.get_schema(latest.schema_id, fmt="serialized")
        proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(registered.schema_str))
        want = line_message_file()
        fields = lambda m: [(f.name, f.number, f.type, f.label, f.type_name) for f in m.field]
        ok = (latest.version == 1 and registered.schema_type == "PROTOBUF" and proto.syntax == "proto3"
              and [m.name for m in proto.message_type] == ["ConnectDefault1"]
              and fields(proto.message_type[0]) == fields(want.message_type[0])
              and list(proto.dependency) == ["google/protobuf/timestamp.proto"]
              and not latest.schema.references)
        check("protobuf source: the registered schema is Confluent's ConnectDefault1 "
              "(line, topic, ts as google.protobuf.Timestamp; no references)", ok,
              "version %s, %r" % (latest.version, proto))
        read = ProtobufDeserializer(line_class(), {"use.deprecated.format": False}, client)
        ctx = SerializationContext(topic, MessageField.VALUE)
        got = [read(r.value(), ctx) for r in records]
        values = [(m.line, m.topic) for m in got]
        check("protobuf source: ProtobufDeserializer reads line and topic back",
              values == [(l, topic) for l in lines], repr(values))
        # The worker's source records carry no timestamp: the optional field stays unset.
        check("protobuf source: the unset timestamp reads as absent",
              all(not m.HasField("ts") for m in got), repr([m.ts for m in got]))
        check("protobuf source: the frame is magic 0, the registered id, message indexes [0]",
              all(r.value()[:6] == b"\x00" + latest.schema_id.to_bytes(4, "big") + b"\x00" for r in records),
              repr([r.value()[:6] for r in records]))
    except Exception as e:  # noqa: BLE001 - report the client's error as the failure
        check("protobuf source: the registry and ProtobufDeserializer", False, "%s: %s" % (type(e).__name__, e))
    http("DELETE", "%s/connectors/%s-source" % (connect_url, topic))

    # offset.field on a source record: Kafka's InsertField refuses it (sink records only).
    name = topic + "-offset"
    _connector(http, connect_url, name, {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1",
        "file": source_file,
        "topic": topic + "-offset",
        "value.converter": CONVERTER,
        "value.converter.schema.registry.url": registry,
        "transforms": "hoist,insert",
        "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.hoist.field": "line",
        "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.insert.offset.field": "offset",
    })
    try:
        states = wait_until("the offset.field task to fail",
                            lambda: [s for s in _task_states(http, connect_url, name) if s[0] == "FAILED"], 60)
    except RuntimeError as e:
        states = [("not failed", str(e))]
    check("protobuf source: InsertField offset.field on a source record fails the task as in Kafka",
          any("Only SinkRecord supported for [field insertion]" in trace for _, trace in states),
          repr(states)[:400])
    http("DELETE", "%s/connectors/%s" % (connect_url, name))


def run(check, http, wait_until, connect_url, broker, registry, work, sluice):
    """Both checks against a running node (sluice, the binary's path, is unused here: the
    topics are read with confluent_kafka)."""
    del sluice
    for part in (sink_check, source_check):
        try:
            part(check, http, wait_until, connect_url, broker, registry, work)
        except Exception as e:  # noqa: BLE001 - a harness failure is a failure
            check("protobuf %s: harness" % part.__name__, False, "%s: %s" % (type(e).__name__, e))


def main():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import connect_check as cc

    ap = argparse.ArgumentParser()
    ap.add_argument("--sluice", required=True)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    sluice = os.path.abspath(args.sluice)
    work = tempfile.mkdtemp(prefix="sluice-protobuf-interop-")
    server = None
    try:
        broker_port, ctl_port, registry_port, connect_port = (cc.free_port() for _ in range(4))
        server = cc.Proc("server", [sluice, "server",
                                    "--set", "log.dirs=" + os.path.join(work, "logs"),
                                    "--set", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (broker_port, ctl_port),
                                    "--set", "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % broker_port,
                                    "--set", "controller.quorum.voters=1@127.0.0.1:%d" % ctl_port,
                                    "--set", "group.initial.rebalance.delay.ms=0",
                                    "--with-registry", "--registry-listen", "127.0.0.1:%d" % registry_port,
                                    "--with-connect", "--connect-listen", "127.0.0.1:%d" % connect_port], work)
        broker = "127.0.0.1:%d" % broker_port
        connect_url = "http://127.0.0.1:%d" % connect_port
        registry = "http://127.0.0.1:%d" % registry_port
        cc.wait_until("the broker", lambda: "listening on PLAINTEXT" in open(server.log).read(), 60)
        cc.wait_rest(connect_url, server)
        run(cc.check, cc.http, cc.wait_until, connect_url, broker, registry, work, sluice)
    except Exception as e:  # noqa: BLE001 - a harness failure is a failure, with the log
        cc.check("protobuf interop: harness", False, "%s\n%s" % (e, server.tail(30) if server else ""))
    finally:
        if server:
            server.stop()
        if args.keep:
            print("work dir kept: " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    failed = cc.RESULTS.count(False)
    print("protobuf interop: %d passed, %d failed" % (cc.RESULTS.count(True), failed))
    return 1 if failed or not cc.RESULTS else 0


if __name__ == "__main__":
    sys.exit(main())
