"""JSON Schema with Confluent's Python client: register, evolve, refuse, and
JSONSerializer/JSONDeserializer records through Sluice.

    python3 json_check.py BOOTSTRAP REGISTRY_URL WORK_DIR

Subjects `json-*`, topic `json-shipments`. Shipment v1 is a closed content model
(`additionalProperties: false`); v2 adds an optional property (Confluent:
OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL, compatible); v3 adds a required one
(REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL, incompatible under BACKWARD: 409).
"""

import json
import sys

import common
from common import Checks, CheckFailed, expect, main_guard
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

bootstrap, url, work = common.args()
checks = Checks("registry")
SUBJECT = "json-shipment-value"
TOPIC = "json-shipments"


def shipment(extra_properties=None, extra_required=()):
    properties = {"id": {"type": "string"}, "weight": {"type": "number"},
                  "tags": {"type": "array", "items": {"type": "string"}}}
    properties.update(extra_properties or {})
    return json.dumps({
        "$schema": "http://json-schema.org/draft-07/schema#", "title": "Shipment",
        "type": "object", "properties": properties,
        "required": ["id"] + list(extra_required), "additionalProperties": False,
    })


SHIPMENT_V1 = shipment()
SHIPMENT_V2 = shipment({"carrier": {"type": "string"}})
SHIPMENT_V3_INCOMPATIBLE = shipment({"carrier": {"type": "string"},
                                     "priority": {"type": "integer"}}, ["priority"])
state = {}


def register():
    client = common.registry_client(url)
    schema_id = client.register_schema(SUBJECT, Schema(SHIPMENT_V1, "JSON"))
    expect(common.registry_client(url).register_schema(SUBJECT, Schema(SHIPMENT_V1, "JSON")),
           schema_id, "id of the same schema again")
    fresh = common.registry_client(url)
    latest = fresh.get_latest_version(SUBJECT)
    expect((latest.version, latest.schema_id, latest.schema.schema_type), (1, schema_id, "JSON"),
           "latest (version, id, schemaType)")
    try:
        stored = json.loads(latest.schema.schema_str)
    except (TypeError, ValueError) as e:
        raise CheckFailed("the stored schema is not JSON (%s): %r" % (e, latest.schema.schema_str))
    expect(stored, json.loads(SHIPMENT_V1), "the stored schema (as JSON)")
    expect(json.loads(fresh.get_schema(schema_id).schema_str), json.loads(SHIPMENT_V1),
           "GET /schemas/ids/%d" % schema_id)
    state["v1"] = schema_id


def evolve():
    client = common.registry_client(url)
    expect(client.test_compatibility(SUBJECT, Schema(SHIPMENT_V2, "JSON")), True,
           "an optional property added to a closed model: is_compatible")
    v2 = client.register_schema(SUBJECT, Schema(SHIPMENT_V2, "JSON"))
    fresh = common.registry_client(url)
    expect(fresh.get_versions(SUBJECT), [1, 2], "versions")
    expect(fresh.get_version(SUBJECT, 2).schema_id, v2, "version 2's id")
    expect(fresh.test_compatibility(SUBJECT, Schema(SHIPMENT_V3_INCOMPATIBLE, "JSON")), False,
           "a required property added: is_compatible")
    common.expect_error(
        lambda: fresh.register_schema(SUBJECT, Schema(SHIPMENT_V3_INCOMPATIBLE, "JSON")),
        409, 409, "registering a required property added")
    expect(common.registry_client(url).get_versions(SUBJECT), [1, 2], "versions after 409")


def serde_roundtrip():
    client = common.registry_client(url)
    common.create_topic(bootstrap, TOPIC)
    ctx = common.value_context(TOPIC)
    write = JSONSerializer(SHIPMENT_V2, client)
    values = [{"id": "s-%d" % i, "weight": i * 1.5, "tags": ["t%d" % j for j in range(i % 3)],
               "carrier": "carrier \u00e9 %d" % i} for i in range(10)]
    values.append({"id": "s-minimal"})
    payloads = [write(v, ctx) for v in values]
    latest = common.registry_client(url).get_latest_version(TOPIC + "-value")
    expect((latest.version, latest.schema.schema_type), (1, "JSON"),
           "%s-value after the serializer (version, schemaType)" % TOPIC)
    for i, p in enumerate(payloads):
        expect(common.wire_schema_id(p, "record %d" % i), latest.schema_id, "record %d's id" % i)
        expect(json.loads(p[5:]), values[i], "record %d's JSON payload" % i)
    common.produce(bootstrap, TOPIC, payloads)
    messages = common.consume(bootstrap, TOPIC, len(payloads))
    expect([m.value() for m in messages], payloads, "the bytes read back from Sluice")
    read = JSONDeserializer(None, schema_registry_client=common.registry_client(url))
    common.expect_values([read(m.value(), ctx) for m in messages], values, "values decoded")


def body():
    v1 = "json: register a JSON Schema (id, version 1, schemaType JSON, read back)"
    checks.run(v1, register)
    checks.run("json: an optional property is compatible (version 2); "
               "a required one is refused: 409", evolve, deps=[v1])
    checks.run("json: JSONSerializer -> Sluice -> JSONDeserializer: records read back equal",
               serde_roundtrip)


if __name__ == "__main__":
    sys.exit(main_guard(checks, body))
