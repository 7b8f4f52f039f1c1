"""Avro with Confluent's Python client: register, evolve, refuse, and records through Sluice.

    python3 avro_check.py BOOTSTRAP REGISTRY_URL WORK_DIR

Subjects `avro-*`, topic `avro-orders`. The guide's Order v1 -> v2 (a field with a
default and a nullable field) registers under the default BACKWARD; v3 (a field without
a default) is refused with 409 by the REST API and by an AvroSerializer; a subject set to
NONE takes it. AvroSerializer writes v1 and v2 records (auto-registering both under
TopicNameStrategy's `avro-orders-value`); librdkafka reads them back from Sluice and
AvroDeserializer decodes each to the value written, and with the v2 reader schema fills
v1 records with the defaults.
"""

import json
import sys

import common
from common import Checks, CheckFailed, expect, main_guard
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

bootstrap, url, work = common.args()
checks = Checks("registry")
SUBJECT = "avro-guide-value"
FREE_SUBJECT = "avro-free-value"
TOPIC = "avro-orders"
ORDER_V1, ORDER_V2, ORDER_V3_INCOMPATIBLE = (
    common.ORDER_V1, common.ORDER_V2, common.ORDER_V3_INCOMPATIBLE)
state = {}


def same_schema(got, want, what):
    """Confluent answers the canonical form; compare as JSON so spacing does not matter."""
    try:
        parsed = json.loads(got)
    except (TypeError, ValueError) as e:
        raise CheckFailed("%s: not JSON (%s): %r" % (what, e, got))
    expect(parsed, json.loads(want), what)


def schema_types():
    got = common.registry_client(url).get_schema_types()
    expect(sorted(got), ["AVRO", "JSON", "PROTOBUF"], "GET /schemas/types")


def register_v1():
    client = common.registry_client(url)
    schema_id = client.register_schema(SUBJECT, Schema(ORDER_V1, "AVRO"))
    if not isinstance(schema_id, int) or schema_id <= 0:
        raise CheckFailed("register: id %r, expected a positive int" % (schema_id,))
    # A second client (no cache) registering the same schema gets the same id.
    again = common.registry_client(url).register_schema(SUBJECT, Schema(ORDER_V1, "AVRO"))
    expect(again, schema_id, "id of the same schema registered again")
    fresh = common.registry_client(url)
    latest = fresh.get_latest_version(SUBJECT)
    expect((latest.subject, latest.version, latest.schema_id), (SUBJECT, 1, schema_id),
           "latest version (subject, version, id)")
    expect(latest.schema.schema_type, "AVRO", "latest version's schemaType")
    same_schema(latest.schema.schema_str, ORDER_V1, "latest version's schema")
    same_schema(fresh.get_schema(schema_id).schema_str, ORDER_V1, "GET /schemas/ids/%d" % schema_id)
    looked_up = fresh.lookup_schema(SUBJECT, Schema(ORDER_V1, "AVRO"))
    expect((looked_up.version, looked_up.schema_id), (1, schema_id), "lookup (version, id)")
    expect(fresh.get_versions(SUBJECT), [1], "versions")
    if SUBJECT not in fresh.get_subjects():
        raise CheckFailed("GET /subjects does not list %s" % SUBJECT)
    # Other suites may register the same schema (ids are global): SUBJECT is among them.
    by_id = fresh.get_subjects_by_schema_id(schema_id)
    if SUBJECT not in by_id:
        raise CheckFailed("GET /schemas/ids/%d/subjects: %r lacks %s" % (schema_id, by_id, SUBJECT))
    state["v1"] = schema_id


def evolve_v2():
    client = common.registry_client(url)
    expect(client.get_compatibility(), "BACKWARD", "global compatibility level")
    expect(client.test_compatibility(SUBJECT, Schema(ORDER_V2, "AVRO")), True,
           "v2 against v1: is_compatible")
    schema_id = client.register_schema(SUBJECT, Schema(ORDER_V2, "AVRO"))
    if schema_id == state["v1"]:
        raise CheckFailed("v2 got v1's id %d" % schema_id)
    fresh = common.registry_client(url)
    v2 = fresh.get_version(SUBJECT, 2)
    expect((v2.version, v2.schema_id), (2, schema_id), "version 2 (version, id)")
    same_schema(v2.schema.schema_str, ORDER_V2, "version 2's schema")
    expect(fresh.get_latest_version(SUBJECT).version, 2, "latest version")
    expect(fresh.get_versions(SUBJECT), [1, 2], "versions")
    state["v2"] = schema_id


def refuse_v3():
    client = common.registry_client(url)
    expect(client.test_compatibility(SUBJECT, Schema(ORDER_V3_INCOMPATIBLE, "AVRO")), False,
           "v3 (a field without default) against v2: is_compatible")
    e = common.expect_error(
        lambda: client.register_schema(SUBJECT, Schema(ORDER_V3_INCOMPATIBLE, "AVRO")),
        409, 409, "registering v3")
    if "incompatible" not in e.error_message.lower():
        raise CheckFailed("409's message does not say incompatible: %r" % e.error_message)
    expect(common.registry_client(url).get_versions(SUBJECT), [1, 2], "versions after the 409")


def subject_level_none():
    client = common.registry_client(url)
    first = client.register_schema(FREE_SUBJECT, Schema(ORDER_V2, "AVRO"))
    expect(first, state["v2"], "the v2 schema's id under a second subject (ids are global)")
    answer = client.set_compatibility(FREE_SUBJECT, "NONE")
    expect(answer, {"compatibility": "NONE"}, "PUT /config/%s answer" % FREE_SUBJECT)
    expect(client.get_compatibility(FREE_SUBJECT), "NONE", "the subject's level")
    expect(client.get_compatibility(), "BACKWARD", "the global level (unchanged)")
    third = client.register_schema(FREE_SUBJECT, Schema(ORDER_V3_INCOMPATIBLE, "AVRO"))
    latest = common.registry_client(url).get_latest_version(FREE_SUBJECT)
    expect((latest.version, latest.schema_id), (2, third), "v3 under NONE (version, id)")


def serde_roundtrip():
    client = common.registry_client(url)
    common.create_topic(bootstrap, TOPIC)
    ctx = common.value_context(TOPIC)
    v1_values = [{"id": "v1-%d" % i, "amount": i + 0.5} for i in range(5)]
    v2_values = common.orders_v2(10)
    write_v1 = AvroSerializer(client, ORDER_V1)
    write_v2 = AvroSerializer(client, ORDER_V2)
    payloads = [write_v1(v, ctx) for v in v1_values] + [write_v2(v, ctx) for v in v2_values]
    # Both writer schemas were auto-registered under TopicNameStrategy's subject.
    fresh = common.registry_client(url)
    subject = TOPIC + "-value"
    expect(fresh.get_versions(subject), [1, 2], "versions of %s after the serializers" % subject)
    ids = [fresh.get_version(subject, v).schema_id for v in (1, 2)]
    expect(ids, [state["v1"], state["v2"]], "ids of %s's versions 1, 2 (same schemas as %s)" % (
        subject, SUBJECT))
    for i, p in enumerate(payloads):
        want = ids[0] if i < len(v1_values) else ids[1]
        expect(common.wire_schema_id(p, "record %d" % i), want, "record %d's schema id" % i)
    keys = [("k%d" % i).encode() for i in range(len(payloads))]
    common.produce(bootstrap, TOPIC, payloads, keys)
    messages = common.consume(bootstrap, TOPIC, len(payloads))
    expect([m.value() for m in messages], payloads, "the bytes read back from Sluice")
    read = AvroDeserializer(common.registry_client(url))
    got = [read(m.value(), ctx) for m in messages]
    common.expect_values(got, v1_values + v2_values, "values decoded with each record's writer schema")
    state["messages"] = messages
    state["v1_values"], state["v2_values"] = v1_values, v2_values


def reader_schema_defaults():
    ctx = common.value_context(TOPIC)
    read_as_v2 = AvroDeserializer(common.registry_client(url), ORDER_V2)
    got = [read_as_v2(m.value(), ctx) for m in state["messages"]]
    want = [dict(v, currency="USD", note=None) for v in state["v1_values"]] + state["v2_values"]
    common.expect_values(got, want, "values decoded with the v2 reader schema")


def serializer_refused():
    write_v3 = AvroSerializer(common.registry_client(url), ORDER_V3_INCOMPATIBLE)
    value = dict(common.orders_v2(1)[0], customer="c-1")
    common.expect_error(lambda: write_v3(value, common.value_context(TOPIC)), 409, 409,
                        "AvroSerializer with the incompatible v3")
    expect(common.registry_client(url).get_versions(TOPIC + "-value"), [1, 2],
           "versions of %s-value after the refusal" % TOPIC)


def body():
    v1 = "avro: register the guide's Order v1 (id, version 1, lookup, subjects)"
    v2 = "avro: Order v2 (a default, a nullable field) is BACKWARD-compatible: version 2"
    roundtrip = "avro: AvroSerializer -> Sluice -> AvroDeserializer: v1 and v2 records read back equal"
    checks.run("avro: GET /schemas/types lists AVRO, JSON, PROTOBUF", schema_types)
    checks.run(v1, register_v1)
    checks.run(v2, evolve_v2, deps=[v1])
    checks.run("avro: Order v3 (a field without default) is incompatible: HTTP 409, error_code 409",
               refuse_v3, deps=[v2])
    checks.run("avro: a subject set to NONE takes Order v3; the global level stays BACKWARD",
               subject_level_none, deps=[v2])
    checks.run(roundtrip, serde_roundtrip, deps=[v2])
    checks.run("avro: v1 records read with the v2 reader schema get currency USD, note null",
               reader_schema_defaults, deps=[roundtrip])
    checks.run("avro: an AvroSerializer with the incompatible v3 fails with 409",
               serializer_refused, deps=[roundtrip])


if __name__ == "__main__":
    sys.exit(main_guard(checks, body))
