#!/usr/bin/env python3
"""JSON Schema converter interop (issue 20): Confluent's own Python client
(confluent_kafka's JSONSerializer / JSONDeserializer, the clients'
"JSON Schema serializer") is the judge of Sluice Connect's
io.confluent.connect.json.JsonSchemaConverter, on a Sluice broker and registry.

a. sink:   records written by JSONSerializer with a hand-written schema (string,
           integer, number, boolean, array, nested object, a nullable field, a nested
           property left out) are read by a FileStreamSinkConnector with the
           JsonSchemaConverter (use.optional.for.nonrequired=true, and InsertField's
           offset.field); each line of its file is the Connect value as Kafka's
           Struct.toString prints it, fields in the order Confluent's converter gives
           a schema without connect.index (java.util.HashMap's order of the names).
b. source: a FileStreamSourceConnector with the JsonSchemaConverter, HoistField$Value
           (field "line") and InsertField$Value (timestamp.field "ts") writes a topic
           that JSONDeserializer reads back line for line; the registered schema is
           the text Confluent's converter registers for that Connect schema.

InsertField's offset.field applies to sink records only (Kafka fails a source task
that sets it), so (a) uses it and (b) uses timestamp.field; a source record from
the file source carries no timestamp, so "ts" is null, as on Apache Kafka.

`run(...)` is for connect_check.py; alone:
  jsonschema_interop.py --sluice target/debug/sluice [--keep]
starts `sluice server --with-registry --with-connect` in a temporary directory.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import connect_check as cc  # noqa: E402  (the shared helpers: check, http, wait_until, free_port)

from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

JSON_SCHEMA_CONVERTER = "io.confluent.connect.json.JsonSchemaConverter"

PERSON_SCHEMA = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Person",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "score": {"type": "number"},
        "active": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {"type": "object", "properties": {"city": {"type": "string"},
                                                     "zip": {"type": "integer"}},
                    "required": ["city"]},
        "nickname": {"oneOf": [{"type": "null"}, {"type": "string"}]},
    },
    "required": ["name", "age", "score", "active", "tags", "address"],
})

PEOPLE = [
    {"name": "Ann", "age": 41, "score": 9.5, "active": True, "tags": ["x", "y"],
     "address": {"city": "Oslo", "zip": 150}, "nickname": None},
    {"name": "Bo", "age": 7, "score": 0.25, "active": False, "tags": [],
     "address": {"city": "Lund"}, "nickname": "B"},
    {"name": "Cy", "age": 100000000000, "score": 12.0, "active": True, "tags": ["a"],
     "address": {"city": "Rome", "zip": 0}, "nickname": "C"},
]


def java_hash(text):
    """Java's String.hashCode (UTF-16 code units)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hash_map_order(names, capacity=16):
    """The iteration order of a java.util.HashMap of `capacity` buckets holding `names`
    (put in this order): by bucket, then put order."""
    def bucket(name):
        h = java_hash(name)
        return (h ^ (h >> 16)) & (capacity - 1)
    return sorted(names, key=bucket)


def java_text(value):
    """A value as Kafka's Struct.toString prints it (the Connect value the converter reads
    from the Python client's JSON)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(java_text(v) for v in value) + "]"
    if isinstance(value, tuple):  # a struct: (field order, dict)
        order, fields = value
        return "Struct{" + ",".join("%s=%s" % (k, java_text(fields[k]))
                                    for k in order if fields.get(k) is not None) + "}"
    return str(value)


def expected_sink_line(person, offset):
    order = java_hash_map_order(list(json.loads(PERSON_SCHEMA)["properties"]))
    fields = dict(person)
    fields["address"] = (java_hash_map_order(["city", "zip"]), person["address"])
    # InsertField's offset.field goes last.
    return java_text((order + ["offset"], dict(fields, offset=offset)))


def expected_source_schema():
    """What Confluent's converter registers for HoistField(line) + InsertField(ts):
    an unnamed struct of a string and an optional Timestamp."""
    properties = {
        "line": '{"type":"string","connect.index":0}',
        "ts": ('{"connect.index":1,"oneOf":[{"type":"null"},{"type":"integer",'
               '"title":"org.apache.kafka.connect.data.Timestamp","connect.version":1,'
               '"connect.type":"int64"}]}'),
    }
    body = ",".join('"%s":%s' % (name, properties[name])
                    for name in java_hash_map_order(list(properties)))
    return '{"type":"object","properties":{%s}}' % body


def file_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().splitlines()


def run(check, http, wait_until, connect_url, broker, registry, work, sluice):
    del sluice  # the topics are read with Confluent's client, not Sluice's
    client = SchemaRegistryClient({"url": registry})
    suffix = str(int(time.time() * 1000))

    # a. Python's JSONSerializer -> topic -> JsonSchemaConverter -> FileStreamSink.
    topic = "js-people-" + suffix
    serializer = JSONSerializer(PERSON_SCHEMA, client)
    producer = Producer({"bootstrap.servers": broker})
    for person in PEOPLE:
        producer.produce(topic, value=serializer(person, SerializationContext(topic, MessageField.VALUE)))
    check("jsonschema: JSONSerializer writes %d records" % len(PEOPLE), producer.flush(30) == 0,
          "records left unsent")
    sink_file = os.path.join(work, "js-sink.txt")
    status, body = http("POST", connect_url + "/connectors", {"name": "js-sink-" + suffix, "config": {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "topics": topic, "file": sink_file,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": JSON_SCHEMA_CONVERTER,
        "value.converter.schema.registry.url": registry,
        # Bo's address has no zip: read as a required field (the default), the nested
        # struct fails Kafka's Struct validation, on Confluent's converter too.
        "value.converter.use.optional.for.nonrequired": "true",
        "transforms": "offset",
        "transforms.offset.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.offset.offset.field": "offset"}})
    check("jsonschema: POST the sink connector", status == 201, repr(body))
    expected = [expected_sink_line(p, i) for i, p in enumerate(PEOPLE)]
    try:
        wait_until("the sink's file", lambda: len(file_lines(sink_file)) >= len(PEOPLE), 60)
    except RuntimeError as e:
        _, state = http("GET", connect_url + "/connectors/js-sink-%s/status" % suffix)
        check("jsonschema: the sink writes every record", False, "%s; status %r" % (e, state))
    got = file_lines(sink_file)
    check("jsonschema: the sink prints each record as Kafka's Struct.toString", got == expected,
          "expected %r, got %r" % (expected, got))

    # b. FileStreamSource -> JsonSchemaConverter -> topic -> Python's JSONDeserializer.
    lines = ["line %d: caf\u00e9 \"quoted\"" % i for i in range(5)]
    source_file = os.path.join(work, "js-source.txt")
    with open(source_file, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    out_topic = "js-lines-" + suffix
    status, body = http("POST", connect_url + "/connectors", {"name": "js-source-" + suffix, "config": {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "file": source_file, "topic": out_topic,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": JSON_SCHEMA_CONVERTER,
        "value.converter.schema.registry.url": registry,
        "transforms": "hoist,ts",
        "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.hoist.field": "line",
        "transforms.ts.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.ts.timestamp.field": "ts"}})
    check("jsonschema: POST the source connector", status == 201, repr(body))
    deserializer = JSONDeserializer(None, schema_registry_client=client)
    consumer = Consumer({"bootstrap.servers": broker, "group.id": "js-reader-" + suffix,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([out_topic])
    values, errors = [], []
    deadline = time.time() + 60
    try:
        while len(values) < len(lines) and time.time() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                # The topic appears when the source's first record does.
                if "UNKNOWN_TOPIC" not in str(msg.error()):
                    errors.append(str(msg.error()))
                continue
            try:
                values.append(deserializer(msg.value(), SerializationContext(out_topic, MessageField.VALUE)))
            except Exception as e:  # the deserializer's verdict is the check
                errors.append(repr(e))
                values.append(None)
    finally:
        consumer.close()
    expected_values = [{"line": line, "ts": None} for line in lines]
    check("jsonschema: JSONDeserializer reads what the source wrote", values == expected_values and not errors,
          "expected %r, got %r; errors %r" % (expected_values, values, errors))
    status, latest = http("GET", registry + "/subjects/%s-value/versions/latest" % out_topic)
    registered = latest.get("schema") if isinstance(latest, dict) else None
    check("jsonschema: the source registered Confluent's schema text",
          status == 200 and latest.get("schemaType") == "JSON" and registered == expected_source_schema(),
          "expected %r, got %s %r" % (expected_source_schema(), status, latest))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sluice", required=True)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    sluice = os.path.abspath(args.sluice)
    work = tempfile.mkdtemp(prefix="sluice-jsonschema-interop-")
    procs = []
    try:
        broker_port, ctl_port = cc.free_port(), cc.free_port()
        registry_port, connect_port = cc.free_port(), cc.free_port()
        server = cc.Proc("server", [sluice, "server",
                                    "--set", "log.dirs=" + os.path.join(work, "logs"),
                                    "--set", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (broker_port, ctl_port),
                                    "--set", "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % broker_port,
                                    "--set", "controller.quorum.voters=1@127.0.0.1:%d" % ctl_port,
                                    "--set", "group.initial.rebalance.delay.ms=0",
                                    "--with-registry", "--registry-listen", "127.0.0.1:%d" % registry_port,
                                    "--with-connect", "--connect-listen", "127.0.0.1:%d" % connect_port], work)
        procs.append(server)
        broker = "127.0.0.1:%d" % broker_port
        registry = "http://127.0.0.1:%d" % registry_port
        connect_url = "http://127.0.0.1:%d" % connect_port
        cc.wait_until("the broker", lambda: "listening on PLAINTEXT" in open(server.log).read(), 60)
        cc.wait_rest(connect_url, server)
        cc.wait_until("the registry", lambda: urllib.request.urlopen(registry + "/subjects", timeout=5).status == 200, 60)
        run(cc.check, cc.http, cc.wait_until, connect_url, broker, registry, work, sluice)
    except Exception as e:  # a harness failure is a failure, with the logs' tails
        cc.check("jsonschema harness", False, "%s\n%s" % (e, "\n".join("--- %s\n%s" % (p.name, p.tail(15)) for p in procs)))
    finally:
        for p in reversed(procs):
            p.stop()
        if args.keep:
            print("work dir kept: " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    failed = cc.RESULTS.count(False)
    print("jsonschema: %d passed, %d failed" % (cc.RESULTS.count(True), failed))
    return 1 if failed or not cc.RESULTS else 0


if __name__ == "__main__":
    sys.exit(main())
