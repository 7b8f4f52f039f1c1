"""Protobuf with Confluent's Python client: .proto text, the serialized format, evolution,
and ProtobufSerializer/ProtobufDeserializer records through Sluice.

    python3 protobuf_check.py BOOTSTRAP REGISTRY_URL WORK_DIR

Subjects `protobuf-*` (and `sluice/compat/money.proto`, the subject the serializer's
reference strategy gives an imported file), topics `protobuf-*`. The message classes are
built at run time from FileDescriptorProtos (google.protobuf's descriptor pool and message
factory), so no protoc is needed. What the Python serializer sends is not .proto text but
a base64 FileDescriptorProto, and its deserializer asks for `?format=serialized`: both
must work for the round trips to pass.
"""

import base64
import sys

import common
from common import Checks, CheckFailed, expect, main_guard
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

bootstrap, url, work = common.args()
checks = Checks("registry")
F = descriptor_pb2.FieldDescriptorProto

PAYMENT_SUBJECT = "protobuf-payment-value"
PAYMENT_V1 = """syntax = "proto3";
package com.example;

message Payment {
  string id = 1;
  double amount = 2;
}
"""
# A new field: BACKWARD-compatible.
PAYMENT_V2 = PAYMENT_V1.replace("  double amount = 2;\n",
                                "  double amount = 2;\n  string currency = 3;\n")
# Field 1 turned from string (length-delimited) into int64 (varint): incompatible.
PAYMENT_V3_INCOMPATIBLE = PAYMENT_V2.replace("string id = 1;", "int64 id = 1;")
state = {}


def field(message, name, number, kind, repeated=False, type_name=None):
    f = message.field.add(name=name, number=number, type=kind, json_name=name,
                          label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
    if type_name:
        f.type_name = type_name


def shop_file():
    """sluice/compat/shop.proto: Customer (message index 0) and Order (index 1, with a
    nested message and enum), no imports."""
    f = descriptor_pb2.FileDescriptorProto(name="sluice/compat/shop.proto",
                                           package="com.example.shop", syntax="proto3")
    customer = f.message_type.add(name="Customer")
    field(customer, "id", 1, F.TYPE_STRING)
    field(customer, "name", 2, F.TYPE_STRING)
    order = f.message_type.add(name="Order")
    line = order.nested_type.add(name="Line")
    field(line, "sku", 1, F.TYPE_STRING)
    field(line, "quantity", 2, F.TYPE_INT32)
    status = order.enum_type.add(name="Status")
    status.value.add(name="NEW", number=0)
    status.value.add(name="PAID", number=1)
    field(order, "id", 1, F.TYPE_STRING)
    field(order, "amount", 2, F.TYPE_DOUBLE)
    field(order, "customer", 3, F.TYPE_MESSAGE, type_name=".com.example.shop.Customer")
    field(order, "lines", 4, F.TYPE_MESSAGE, repeated=True,
          type_name=".com.example.shop.Order.Line")
    field(order, "status", 5, F.TYPE_ENUM, type_name=".com.example.shop.Order.Status")
    field(order, "tags", 6, F.TYPE_STRING, repeated=True)
    return f


def money_files():
    """sluice/compat/money.proto, and invoice.proto importing it."""
    money = descriptor_pb2.FileDescriptorProto(name="sluice/compat/money.proto",
                                               package="com.example.money", syntax="proto3")
    m = money.message_type.add(name="Money")
    field(m, "currency", 1, F.TYPE_STRING)
    field(m, "units", 2, F.TYPE_INT64)
    invoice = descriptor_pb2.FileDescriptorProto(name="sluice/compat/invoice.proto",
                                                 package="com.example.billing", syntax="proto3",
                                                 dependency=["sluice/compat/money.proto"])
    i = invoice.message_type.add(name="Invoice")
    field(i, "id", 1, F.TYPE_STRING)
    field(i, "total", 2, F.TYPE_MESSAGE, type_name=".com.example.money.Money")
    return [money, invoice]


def message_classes(files, names):
    pool = descriptor_pool.DescriptorPool()
    for f in files:
        pool.Add(f)
    return [message_factory.GetMessageClass(pool.FindMessageTypeByName(n)) for n in names]


def decode_serialized(schema, what):
    """A schema answered for ?format=serialized: a base64 FileDescriptorProto."""
    expect(schema.schema_type, "PROTOBUF", "schemaType of %s" % what)
    try:
        return descriptor_pb2.FileDescriptorProto.FromString(
            base64.b64decode(schema.schema_str or "", validate=True))
    except Exception as e:  # noqa: BLE001 - binascii and protobuf errors alike
        raise CheckFailed("%s?format=serialized is not a base64 FileDescriptorProto (%s): %r" % (
            what, e, (schema.schema_str or "")[:160]))


def serialized_descriptor(url_, schema_id):
    """GET /schemas/ids/{id}?format=serialized, decoded."""
    schema = common.registry_client(url_).get_schema(schema_id, fmt="serialized")
    return decode_serialized(schema, "GET /schemas/ids/%d" % schema_id)


def fields_of(proto, message):
    for m in proto.message_type:
        if m.name == message:
            return [(f.name, f.number, f.type) for f in m.field]
    raise CheckFailed("no message %s in %s" % (message, [m.name for m in proto.message_type]))


def register_text():
    client = common.registry_client(url)
    schema_id = client.register_schema(PAYMENT_SUBJECT, Schema(PAYMENT_V1, "PROTOBUF"))
    expect(common.registry_client(url).register_schema(
        PAYMENT_SUBJECT, Schema(PAYMENT_V1, "PROTOBUF")), schema_id, "id of the same text again")
    latest = common.registry_client(url).get_latest_version(PAYMENT_SUBJECT)
    expect((latest.version, latest.schema_id, latest.schema.schema_type),
           (1, schema_id, "PROTOBUF"), "latest (version, id, schemaType)")
    text = latest.schema.schema_str or ""
    for part in ("message Payment", "string id = 1;", "double amount = 2;"):
        if part not in text:
            raise CheckFailed("the stored text lacks %r: %r" % (part, text))
    proto = serialized_descriptor(url, schema_id)
    expect((proto.package, proto.syntax), ("com.example", "proto3"), "(package, syntax)")
    expect(fields_of(proto, "Payment"), [("id", 1, F.TYPE_STRING), ("amount", 2, F.TYPE_DOUBLE)],
           "Payment's fields in ?format=serialized")
    state["payment_v1"] = schema_id


def version_serialized():
    # What ProtobufDeserializer asks for each reference of a schema it reads.
    got = common.registry_client(url).get_version(PAYMENT_SUBJECT, 1, True, "serialized")
    expect((got.version, got.schema_id), (1, state["payment_v1"]), "(version, id)")
    proto = decode_serialized(got.schema, "GET /subjects/%s/versions/1" % PAYMENT_SUBJECT)
    expect(fields_of(proto, "Payment"), [("id", 1, F.TYPE_STRING), ("amount", 2, F.TYPE_DOUBLE)],
           "Payment's fields")


def evolve():
    client = common.registry_client(url)
    expect(client.test_compatibility(PAYMENT_SUBJECT, Schema(PAYMENT_V2, "PROTOBUF")), True,
           "a new field: is_compatible")
    v2 = client.register_schema(PAYMENT_SUBJECT, Schema(PAYMENT_V2, "PROTOBUF"))
    fresh = common.registry_client(url)
    expect(fresh.get_versions(PAYMENT_SUBJECT), [1, 2], "versions")
    expect(fresh.get_version(PAYMENT_SUBJECT, 2).schema_id, v2, "version 2's id")
    expect(fields_of(serialized_descriptor(url, v2), "Payment"),
           [("id", 1, F.TYPE_STRING), ("amount", 2, F.TYPE_DOUBLE), ("currency", 3, F.TYPE_STRING)],
           "v2's fields")
    expect(fresh.test_compatibility(PAYMENT_SUBJECT, Schema(PAYMENT_V3_INCOMPATIBLE, "PROTOBUF")),
           False, "string id -> int64 id: is_compatible")
    common.expect_error(
        lambda: fresh.register_schema(PAYMENT_SUBJECT, Schema(PAYMENT_V3_INCOMPATIBLE, "PROTOBUF")),
        409, 409, "registering string id -> int64 id")
    expect(common.registry_client(url).get_versions(PAYMENT_SUBJECT), [1, 2], "versions after 409")


def roundtrip(topic, cls, values, index_bytes, what):
    """Serializes values (dicts of cls's fields) with ProtobufSerializer, through Sluice,
    back with ProtobufDeserializer; returns the registered RegisteredSchema."""
    client = common.registry_client(url)
    common.create_topic(bootstrap, topic)
    ctx = common.value_context(topic)
    write = ProtobufSerializer(cls, client, {})
    messages_in = [cls(**v) for v in values]
    payloads = [write(m, ctx) for m in messages_in]
    latest = common.registry_client(url).get_latest_version(topic + "-value")
    expect((latest.version, latest.schema.schema_type), (1, "PROTOBUF"),
           "%s-value after the serializer (version, schemaType)" % topic)
    for i, p in enumerate(payloads):
        expect(common.wire_schema_id(p, "record %d" % i), latest.schema_id, "record %d's id" % i)
        expect(p[5:5 + len(index_bytes)], index_bytes, "record %d's message indexes" % i)
    common.produce(bootstrap, topic, payloads)
    got_messages = common.consume(bootstrap, topic, len(payloads))
    expect([m.value() for m in got_messages], payloads, "the bytes read back from Sluice")
    read = ProtobufDeserializer(cls, {}, common.registry_client(url))
    got = []
    for i, m in enumerate(got_messages):
        try:
            got.append(read(m.value(), ctx))
        except Exception as e:  # noqa: BLE001 - report which record and why
            raise CheckFailed("ProtobufDeserializer on record %d: %s: %s" % (i, type(e).__name__, e))
    if got != messages_in:
        bad = next(i for i, (a, b) in enumerate(zip(got, messages_in)) if a != b)
        raise CheckFailed("%s: record %d decoded as %r, expected %r" % (
            what, bad, got[bad], messages_in[bad]))
    return latest


def serde_roundtrip():
    customer, order = message_classes([shop_file()],
                                      ["com.example.shop.Customer", "com.example.shop.Order"])
    values = [{"id": "p-%d" % i, "amount": i * 2 + 0.5,
               "customer": customer(id="c-%d" % (i % 3), name="Name %d" % i),
               "lines": [order.Line(sku="sku-%d" % j, quantity=j + 1) for j in range(i % 3)],
               "status": i % 2, "tags": ["t%d" % j for j in range(i % 4)]} for i in range(12)]
    # Order is the file's second message: message indexes [1], zigzag varints 0x02 0x02.
    latest = roundtrip("protobuf-orders", order, values, b"\x02\x02", "Order")
    text = latest.schema.schema_str or ""
    for part in ("message Customer", "message Order", "message Line", "enum Status"):
        if part not in text:
            raise CheckFailed("the stored schema lacks %r: %r" % (part, text[:300]))


def references():
    money, invoice = money_files()
    money_cls, invoice_cls = message_classes([money, invoice],
                                             ["com.example.money.Money",
                                              "com.example.billing.Invoice"])
    values = [{"id": "inv-%d" % i, "total": money_cls(currency="EUR", units=100 + i)}
              for i in range(6)]
    # Invoice is the file's first message: message indexes [0], one 0x00 byte.
    latest = roundtrip("protobuf-invoices", invoice_cls, values, b"\x00", "Invoice")
    refs = [(r.name, r.subject, r.version) for r in (latest.schema.references or [])]
    expect(refs, [("sluice/compat/money.proto", "sluice/compat/money.proto", 1)],
           "protobuf-invoices-value's references (name, subject, version)")
    dep = common.registry_client(url).get_latest_version("sluice/compat/money.proto")
    expect((dep.version, dep.schema.schema_type), (1, "PROTOBUF"),
           "the imported file's subject (version, schemaType)")
    if "message Money" not in (dep.schema.schema_str or ""):
        raise CheckFailed("sluice/compat/money.proto's schema lacks Money: %r" % dep.schema.schema_str)


def body():
    text = "protobuf: register .proto text; read it back as text and ?format=serialized"
    checks.run(text, register_text)
    checks.run("protobuf: GET /subjects/{s}/versions/{v}?format=serialized answers a base64 "
               "FileDescriptorProto (what the deserializer asks for references)",
               version_serialized, deps=[text])
    checks.run("protobuf: a new field is compatible (version 2); string -> int64 is refused: 409",
               evolve, deps=[text])
    checks.run("protobuf: ProtobufSerializer -> Sluice -> ProtobufDeserializer: "
               "Order (message index 1, nested types) read back equal", serde_roundtrip)
    checks.run("protobuf: an imported file becomes a reference subject; "
               "Invoice read back equal through it", references)


if __name__ == "__main__":
    sys.exit(main_guard(checks, body))
