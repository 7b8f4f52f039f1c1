//! The Protobuf converter without a registry: generated `.proto` text, Connect ↔ Protobuf
//! both ways, messages written by others, settings and bad bytes. Registry behaviour is in
//! `tests/protobuf_registry.rs`.

use std::collections::HashMap;

use prost::Message as _;
use prost_reflect::{DynamicMessage, MessageDescriptor, Value as ProtoValue};

use super::*;
use crate::Props;
use crate::converters::protobuf_data::{
    PROTOBUF_TYPE_ENUM, PROTOBUF_TYPE_PROP, PROTOBUF_TYPE_TAG, PROTOBUF_TYPE_UNION_PREFIX,
    scrub_name,
};
use crate::data::{Schema, Struct, Type};

fn data() -> ProtobufData {
    ProtobufData::default()
}

fn data_with(settings: &[(&str, &str)]) -> ProtobufData {
    let props: Props = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ProtobufData::new(
        ProtobufDataConfig::parse(&Settings::new(&props, "value.converter")).expect("valid"),
    )
}

/// Connect → message bytes → Connect, as the converter does around the registry.
fn round_trip(data: &ProtobufData, schema: &SchemaRef, value: &Value) -> (SchemaRef, Value) {
    let generated = data.from_connect_schema(schema).expect("schema");
    let message = data
        .from_connect_data(schema, &generated.message, value)
        .expect("data")
        .expect("not null");
    let bytes = message.encode_to_vec();
    let decoded =
        DynamicMessage::decode(generated.message.clone(), bytes.as_slice()).expect("decode");
    let read_schema = data
        .to_connect_schema(&generated.message, Some(1))
        .expect("read schema");
    let read_value = data
        .to_connect_data(&read_schema, &decoded)
        .expect("read data");
    (read_schema, read_value)
}

/// Compiles `.proto` text as another client's schema would be, and answers its message.
fn message_type(text: &str, name: &str) -> MessageDescriptor {
    let file =
        sluice_registry::serde::protobuf::build_file("other.proto", text, &[]).expect("compiles");
    file.parent_pool()
        .get_message_by_name(name)
        .expect("message")
}

fn tag(schema: Schema, tag: u32) -> Schema {
    schema.with_parameter(PROTOBUF_TYPE_TAG, tag.to_string())
}

/// ProtobufDataTest.testFromConnectComplex's schema (Confluent's schema-registry
/// repository, protobuf-converter/src/test/.../ProtobufDataTest.java): the field types and
/// the default names `ConnectDefault2Entry`.. asserted there, as the full text here.
#[test]
fn complex_schema_generates_confluents_proto_text() {
    let status = Schema::new(Type::String)
        .named("Status")
        .optional()
        .with_parameter(PROTOBUF_TYPE_ENUM, "Status")
        .with_parameter(format!("{PROTOBUF_TYPE_ENUM}.ACTIVE"), "0")
        .with_parameter(format!("{PROTOBUF_TYPE_ENUM}.INACTIVE"), "1");
    let schema: SchemaRef = Schema::new(Type::Struct)
        .field(
            "int8",
            Schema::new(Type::Int8)
                .with_default(Value::Int8(2))
                .with_doc("int8 field"),
        )
        .field("int16", Schema::new(Type::Int16))
        .field("int32", Schema::new(Type::Int32))
        .field("int64", Schema::new(Type::Int64))
        .field("float32", Schema::new(Type::Float32))
        .field("float64", Schema::new(Type::Float64))
        .field("boolean", Schema::new(Type::Boolean))
        .field("string", Schema::new(Type::String))
        .field("bytes", Schema::new(Type::Bytes))
        .field("array", Schema::array(Schema::new(Type::String)))
        .field(
            "map",
            Schema::map(Schema::new(Type::String), Schema::new(Type::Int32)),
        )
        .field(
            "mapNonStringKeys",
            Schema::map(Schema::new(Type::Int32), Schema::new(Type::Int32)),
        )
        .field(
            "mapNullValues",
            Schema::map(
                Schema::new(Type::String),
                Schema::new(Type::String).optional(),
            ),
        )
        .field("enum", status)
        .into();
    let generated = data().from_connect_schema(&schema).expect("generated");
    assert_eq!(
        generated.text,
        r#"syntax = "proto3";

import "confluent/meta.proto";

message ConnectDefault1 {
  int32 int8 = 1 [(confluent.field_meta) = { params: [{ key: "connect.type", value: "int8" }] }];
  int32 int16 = 2 [(confluent.field_meta) = { params: [{ key: "connect.type", value: "int16" }] }];
  int32 int32 = 3;
  int64 int64 = 4;
  float float32 = 5;
  double float64 = 6;
  bool boolean = 7;
  string string = 8;
  bytes bytes = 9;
  repeated string array = 10;
  message ConnectDefault2Entry {
    string key = 1;
    int32 value = 2;
  }
  repeated ConnectDefault2Entry map = 11;
  message ConnectDefault3Entry {
    int32 key = 1;
    int32 value = 2;
  }
  repeated ConnectDefault3Entry mapNonStringKeys = 12;
  message ConnectDefault4Entry {
    string key = 1;
    string value = 2;
  }
  repeated ConnectDefault4Entry mapNullValues = 13;
  enum Status {
    ACTIVE = 0;
    INACTIVE = 1;
  }
  Status enum = 14;
}
"#
    );
    assert_eq!(generated.message.full_name(), "ConnectDefault1");

    // The values of that test, and what reads back (maps keep their entries, the enum its
    // symbol, every field optional with its tag).
    let mut value = Struct::new(schema.clone());
    for (name, v) in [
        ("int8", Value::Int8(12)),
        ("int16", Value::Int16(12)),
        ("int32", Value::Int32(12)),
        ("int64", Value::Int64(12)),
        ("float32", Value::Float32(12.2)),
        ("float64", Value::Float64(12.2)),
        ("boolean", Value::Boolean(true)),
        ("string", Value::String("foo".into())),
        ("bytes", Value::Bytes(b"foo".to_vec())),
        (
            "array",
            Value::Array(vec![
                Value::String("a".into()),
                Value::String("b".into()),
                Value::String("c".into()),
            ]),
        ),
        (
            "map",
            Value::Map(vec![(Value::String("field".into()), Value::Int32(1))]),
        ),
        (
            "mapNonStringKeys",
            Value::Map(vec![(Value::Int32(1), Value::Int32(1))]),
        ),
        (
            "mapNullValues",
            Value::Map(vec![(Value::String("field".into()), Value::Null)]),
        ),
        ("enum", Value::String("INACTIVE".into())),
    ] {
        value.put(name, v).expect("valid");
    }
    let (read_schema, read_value) = round_trip(&data(), &schema, &Value::Struct(value));
    assert_eq!(read_schema.name.as_deref(), Some("ConnectDefault1"));
    assert_eq!(read_schema.version, Some(1));
    let int8 = &read_schema.get_field("int8").expect("int8").schema;
    assert_eq!((int8.ty, int8.optional), (Type::Int8, true));
    assert_eq!(
        int8.parameters.get(PROTOBUF_TYPE_TAG).map(String::as_str),
        Some("1")
    );
    let map = &read_schema.get_field("map").expect("map").schema;
    assert_eq!(
        (map.ty, map.name.as_deref()),
        (Type::Map, Some("connect_default2"))
    );
    let status = &read_schema.get_field("enum").expect("enum").schema;
    assert_eq!(status.name.as_deref(), Some("Status"));
    assert_eq!(
        status
            .parameters
            .get(&format!("{PROTOBUF_TYPE_ENUM}.INACTIVE"))
            .map(String::as_str),
        Some("1")
    );
    assert_eq!(
        read_value.to_string(),
        "Struct{int8=12,int16=12,int32=12,int64=12,float32=12.2,float64=12.2,boolean=true,\
         string=foo,bytes=[B@3,array=[a, b, c],map={field=1},mapNonStringKeys={1=1},\
         mapNullValues={field=},enum=INACTIVE}"
    );
}

/// ProtobufDataTest.testFromConnectNameCollision and
/// testFromConnectComplexDuplicateImports.
#[test]
fn nested_names_and_imports_follow_confluent() {
    let nested = Schema::new(Type::Struct)
        .named("nested")
        .field("string", Schema::new(Type::String));
    let schema: SchemaRef = Schema::new(Type::Struct).field("nested", nested).into();
    let generated = data().from_connect_schema(&schema).expect("generated");
    let field = generated
        .message
        .get_field_by_name("nested")
        .expect("field");
    match field.kind() {
        prost_reflect::Kind::Message(m) => assert_eq!(m.name(), "nestedMessage"),
        other => panic!("{other:?}"),
    }

    let schema: SchemaRef = Schema::new(Type::Struct)
        .named("shop.Order")
        .field("createdAt", Schema::timestamp())
        .field("updatedAt", Schema::timestamp())
        .into();
    let generated = data().from_connect_schema(&schema).expect("generated");
    assert_eq!(
        generated.text,
        "syntax = \"proto3\";\npackage shop;\n\nimport \"google/protobuf/timestamp.proto\";\n\n\
         message Order {\n  google.protobuf.Timestamp createdAt = 1;\n  \
         google.protobuf.Timestamp updatedAt = 2;\n}\n"
    );
    assert_eq!(generated.message.full_name(), "shop.Order");
}

#[test]
fn every_type_and_logical_type_round_trips() {
    let decimal = Schema::decimal(3).optional();
    let schema: SchemaRef = Schema::new(Type::Struct)
        .named("io.example.All")
        .field("i8", Schema::new(Type::Int8).optional())
        .field("i16", Schema::new(Type::Int16).optional())
        .field("i32", Schema::new(Type::Int32).optional())
        .field("i64", Schema::new(Type::Int64).optional())
        .field("f32", Schema::new(Type::Float32).optional())
        .field("f64", Schema::new(Type::Float64).optional())
        .field("b", Schema::new(Type::Boolean).optional())
        .field("s", Schema::new(Type::String).optional())
        .field("bytes", Schema::new(Type::Bytes).optional())
        .field("dec", decimal)
        .field("date", Schema::date().optional())
        .field("time", Schema::time().optional())
        .field("ts", Schema::timestamp().optional())
        .field(
            "list",
            Schema::array(Schema::new(Type::Int64).optional()).optional(),
        )
        .field(
            "inner",
            Schema::new(Type::Struct)
                .named("Inner")
                .field("x", Schema::new(Type::Int32).optional())
                .optional(),
        )
        .into();
    let inner_schema = schema.get_field("inner").unwrap().schema.clone();
    let mut value = Struct::new(schema.clone());
    for (name, v) in [
        ("i8", Value::Int8(-8)),
        ("i16", Value::Int16(-1600)),
        ("i32", Value::Int32(-32)),
        ("i64", Value::Int64(i64::MIN)),
        ("f32", Value::Float32(1.5)),
        ("f64", Value::Float64(-2.25)),
        ("b", Value::Boolean(true)),
        ("s", Value::String("héllo".into())),
        ("bytes", Value::Bytes(vec![0, 1, 255])),
        // 12345.678 (ProtobufDataTest.testFromConnectDecimal's value)
        ("dec", Value::Bytes(vec![0x00, 0xbc, 0x61, 0x4e])),
        // 2017-09-18 (testFromConnectDate's date)
        ("date", Value::Int32(17427)),
        ("time", Value::Int32(45_296_789)),
        ("ts", Value::Int64(-1_500)),
        ("list", Value::Array(vec![Value::Int64(1), Value::Int64(2)])),
        (
            "inner",
            Value::Struct(
                Struct::new(inner_schema)
                    .with("x", Value::Int32(7))
                    .unwrap(),
            ),
        ),
    ] {
        value.put(name, v).expect(name);
    }
    let (read_schema, read_value) = round_trip(&data(), &schema, &Value::Struct(value));
    let field = |name: &str| read_schema.get_field(name).unwrap().schema.clone();
    assert_eq!(read_schema.name.as_deref(), Some("All"));
    assert_eq!(field("dec").decimal_scale(), Some(3));
    assert_eq!(field("date").name.as_deref(), Some(crate::data::DATE));
    assert_eq!(field("time").name.as_deref(), Some(crate::data::TIME));
    assert_eq!(field("ts").name.as_deref(), Some(crate::data::TIMESTAMP));
    assert_eq!(field("inner").name.as_deref(), Some("Inner"));
    let Value::Struct(read) = read_value else {
        panic!()
    };
    let get = |name: &str| read.get(name).unwrap().clone();
    assert_eq!(get("i8"), Value::Int8(-8));
    assert_eq!(get("i16"), Value::Int16(-1600));
    assert_eq!(get("i32"), Value::Int32(-32));
    assert_eq!(get("i64"), Value::Int64(i64::MIN));
    assert_eq!(get("f32"), Value::Float32(1.5));
    assert_eq!(get("f64"), Value::Float64(-2.25));
    assert_eq!(get("b"), Value::Boolean(true));
    assert_eq!(get("s"), Value::String("héllo".into()));
    assert_eq!(get("bytes"), Value::Bytes(vec![0, 1, 255]));
    assert_eq!(get("dec"), Value::Bytes(vec![0x00, 0xbc, 0x61, 0x4e]));
    assert_eq!(get("date"), Value::Int32(17427));
    assert_eq!(get("time"), Value::Int32(45_296_789));
    assert_eq!(get("ts"), Value::Int64(-1_500));
    assert_eq!(
        get("list"),
        Value::Array(vec![Value::Int64(1), Value::Int64(2)])
    );
    assert_eq!(get("inner").to_string(), "Struct{x=7}");
}

/// The messages of Confluent's logical types, as ProtobufDataTest's testFromConnectDate,
/// testFromConnectDecimal and testFromConnectTimestamp expect them.
#[test]
fn logical_types_are_confluents_messages() {
    let schema: SchemaRef = Schema::new(Type::Struct)
        .named("L")
        .field("date", Schema::date())
        .field("dec", Schema::decimal(3))
        .field("ts", Schema::timestamp())
        .field("time", Schema::time())
        .into();
    let value = Struct::new(schema.clone())
        .with("date", Value::Int32(17427))
        .unwrap()
        .with("dec", Value::Bytes(vec![0x00, 0xbc, 0x61, 0x4e]))
        .unwrap()
        .with("ts", Value::Int64(1_505_692_800_123))
        .unwrap()
        .with("time", Value::Int32(3_723_004))
        .unwrap();
    let generated = data().from_connect_schema(&schema).unwrap();
    assert!(generated.text.contains("confluent.type.Decimal dec = 2 [(confluent.field_meta) = { params: [{ key: \"scale\", value: \"3\" }] }];"), "{}", generated.text);
    let message = data()
        .from_connect_data(&schema, &generated.message, &Value::Struct(value))
        .unwrap()
        .unwrap();
    let sub = |name: &str| match &*message.get_field_by_name(name).unwrap() {
        ProtoValue::Message(m) => m.clone(),
        other => panic!("{other:?}"),
    };
    let int = |m: &DynamicMessage, name: &str| m.get_field_by_name(name).unwrap().into_owned();
    let date = sub("date");
    assert_eq!(
        (int(&date, "year"), int(&date, "month"), int(&date, "day")),
        (
            ProtoValue::I32(2017),
            ProtoValue::I32(9),
            ProtoValue::I32(18)
        )
    );
    let dec = sub("dec");
    assert_eq!(
        int(&dec, "value"),
        ProtoValue::Bytes(vec![0x00, 0xbc, 0x61, 0x4e].into())
    );
    assert_eq!(int(&dec, "precision"), ProtoValue::U32(8));
    assert_eq!(int(&dec, "scale"), ProtoValue::I32(3));
    let ts = sub("ts");
    assert_eq!(
        (int(&ts, "seconds"), int(&ts, "nanos")),
        (ProtoValue::I64(1_505_692_800), ProtoValue::I32(123_000_000))
    );
    let time = sub("time");
    assert_eq!(
        (
            int(&time, "hours"),
            int(&time, "minutes"),
            int(&time, "seconds"),
            int(&time, "nanos")
        ),
        (
            ProtoValue::I32(1),
            ProtoValue::I32(2),
            ProtoValue::I32(3),
            ProtoValue::I32(4_000_000)
        )
    );
}

#[test]
fn raw_primitives_are_wrapper_messages() {
    for (schema, value) in [
        (Schema::new(Type::Int32), Value::Int32(5)),
        (Schema::new(Type::Int64), Value::Int64(-5)),
        (Schema::new(Type::String), Value::String("x".into())),
        (Schema::new(Type::Boolean), Value::Boolean(true)),
        (Schema::new(Type::Float64), Value::Float64(0.5)),
        (Schema::new(Type::Bytes), Value::Bytes(vec![1])),
    ] {
        let schema: SchemaRef = schema.into();
        let (read_schema, read_value) = round_trip(&data(), &schema, &value);
        assert_eq!(read_schema.ty, schema.ty);
        assert_eq!(read_value, value);
    }
    // int8 is written in an Int32Value, and reads back as int32 (Confluent's
    // testFromConnectInt8Struct writes it the same way).
    let schema: SchemaRef = Schema::new(Type::Int8).into();
    let generated = data().from_connect_schema(&schema).unwrap();
    assert_eq!(generated.message.full_name(), "google.protobuf.Int32Value");
    assert_eq!(
        sluice_registry::serde::protobuf::message_indexes(&generated.message),
        vec![4]
    );
    let (read_schema, read_value) = round_trip(&data(), &schema, &Value::Int8(15));
    assert_eq!(
        (read_schema.ty, read_value),
        (Type::Int32, Value::Int32(15))
    );
    // An array at the top has no message.
    let schema: SchemaRef = Schema::array(Schema::new(Type::Int32)).into();
    assert_eq!(
        data().from_connect_schema(&schema).unwrap_err().0,
        "Unsupported root schema of type ARRAY"
    );
}

#[test]
fn nullable_settings_change_the_generated_fields() {
    let schema: SchemaRef = Schema::new(Type::Struct)
        .named("N")
        .field("a", Schema::new(Type::String).optional())
        .field("b", Schema::new(Type::Int64).optional())
        .field("c", Schema::new(Type::Int32))
        .into();
    let text = |settings: &[(&str, &str)]| {
        data_with(settings)
            .from_connect_schema(&schema)
            .unwrap()
            .text
    };
    assert_eq!(
        text(&[("optional.for.nullables", "true")]),
        "syntax = \"proto3\";\n\nmessage N {\n  optional string a = 1;\n  optional int64 b = 2;\n  int32 c = 3;\n}\n"
    );
    assert_eq!(
        text(&[("wrapper.for.nullables", "true")]),
        "syntax = \"proto3\";\n\nimport \"google/protobuf/wrappers.proto\";\n\nmessage N {\n  \
         google.protobuf.StringValue a = 1;\n  google.protobuf.Int64Value b = 2;\n  int32 c = 3;\n}\n"
    );
    // And back: a null stays null, a set value (even the default) stays set.
    for settings in [
        &[("optional.for.nullables", "true")][..],
        &[("wrapper.for.nullables", "true")][..],
    ] {
        let data = data_with(settings);
        let value = Struct::new(schema.clone())
            .with("b", Value::Int64(0))
            .unwrap()
            .with("c", Value::Int32(0))
            .unwrap();
        let (read_schema, read_value) = round_trip(&data, &schema, &Value::Struct(value));
        assert!(
            read_schema.get_field("a").unwrap().schema.optional,
            "{settings:?}"
        );
        assert!(
            !read_schema.get_field("c").unwrap().schema.optional,
            "{settings:?}"
        );
        assert_eq!(read_value.to_string(), "Struct{b=0,c=0}", "{settings:?}");
    }
}

#[test]
fn unions_are_oneofs_both_ways() {
    let union = Schema::new(Type::Struct)
        .named(format!("{PROTOBUF_TYPE_UNION_PREFIX}choice"))
        .field("text", tag(Schema::new(Type::String).optional(), 2))
        .field("number", tag(Schema::new(Type::Int32).optional(), 3))
        .optional();
    let schema: SchemaRef = Schema::new(Type::Struct)
        .named("U")
        .field("choice_0", union.clone())
        .field("id", tag(Schema::new(Type::Int32).optional(), 1))
        .into();
    let generated = data().from_connect_schema(&schema).unwrap();
    assert_eq!(
        generated.text,
        "syntax = \"proto3\";\n\nmessage U {\n  oneof choice {\n    string text = 2;\n    int32 number = 3;\n  }\n  int32 id = 1;\n}\n"
    );
    let union_value = Struct::new(schema.get_field("choice_0").unwrap().schema.clone())
        .with("number", Value::Int32(9))
        .unwrap();
    let value = Struct::new(schema.clone())
        .with("choice_0", Value::Struct(union_value))
        .unwrap()
        .with("id", Value::Int32(1))
        .unwrap();
    let (read_schema, read_value) = round_trip(&data(), &schema, &Value::Struct(value));
    assert_eq!(
        read_value.to_string(),
        "Struct{choice_0=Struct{number=9},id=1}"
    );
    assert_eq!(
        read_schema
            .get_field("choice_0")
            .unwrap()
            .schema
            .name
            .as_deref(),
        Some("io.confluent.connect.protobuf.Union.choice")
    );
    // Without the index the field is the oneof's name.
    let plain = data_with(&[("generate.index.for.unions", "false")]);
    let read = plain.to_connect_schema(&generated.message, None).unwrap();
    assert_eq!(read.fields[0].name, "choice");
    // An empty union has nothing to write.
    let empty = Struct::new(schema.clone())
        .with(
            "choice_0",
            Value::Struct(Struct::new(
                schema.get_field("choice_0").unwrap().schema.clone(),
            )),
        )
        .unwrap();
    assert_eq!(
        data()
            .from_connect_data(&schema, &generated.message, &Value::Struct(empty))
            .unwrap_err()
            .0,
        "Cannot find non-null field"
    );
}

/// A message written by another client (Confluent's Python serializer registers its
/// file as is): nested types, an enum, a oneof, a map, repeated fields, wrappers and a
/// well-known type read to Confluent's Connect schema and value.
#[test]
fn messages_written_by_others_read_as_confluent_reads_them() {
    let text = r#"
        syntax = "proto3";
        package shop;
        import "google/protobuf/timestamp.proto";
        import "google/protobuf/wrappers.proto";
        message Order {
          enum Status { NEW = 0; PAID = 1; }
          message Line { string sku = 1; sint32 quantity = 2; }
          string id = 1;
          repeated Line lines = 2;
          map<string, int64> totals = 3;
          Status status = 4;
          oneof payment { string card = 5; uint32 voucher = 6; }
          google.protobuf.Timestamp created = 7;
          google.protobuf.StringValue note = 8;
          optional int32 priority = 9;
          fixed64 checksum = 10;
        }
    "#;
    let order = message_type(text, "shop.Order");
    let schema = data().to_connect_schema(&order, Some(3)).unwrap();
    let names: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "payment_0",
            "id",
            "lines",
            "totals",
            "status",
            "created",
            "note",
            "priority",
            "checksum"
        ]
    );
    assert_eq!(
        (schema.name.as_deref(), schema.version),
        (Some("Order"), Some(3))
    );
    let field = |name: &str| schema.get_field(name).unwrap().schema.clone();
    assert_eq!(field("lines").ty, Type::Array);
    assert_eq!(
        field("lines")
            .value_schema
            .as_ref()
            .unwrap()
            .name
            .as_deref(),
        Some("Line")
    );
    let lines = field("lines");
    let quantity = &lines
        .value_schema
        .as_ref()
        .unwrap()
        .get_field("quantity")
        .unwrap()
        .schema;
    assert_eq!(
        quantity
            .parameters
            .get(PROTOBUF_TYPE_PROP)
            .map(String::as_str),
        Some("sint32")
    );
    assert_eq!(
        (field("totals").ty, field("totals").name.as_deref()),
        (Type::Map, Some("totals"))
    );
    assert_eq!(
        field("status")
            .parameters
            .get(PROTOBUF_TYPE_ENUM)
            .map(String::as_str),
        Some("Status")
    );
    assert_eq!(
        field("status")
            .parameters
            .get("io.confluent.connect.protobuf.Enum.PAID")
            .map(String::as_str),
        Some("1")
    );
    assert_eq!(
        field("created").name.as_deref(),
        Some(crate::data::TIMESTAMP)
    );
    // Without wrapper.for.nullables a wrapper is a struct of its value.
    assert_eq!(field("note").name.as_deref(), Some("StringValue"));
    assert_eq!(
        field("checksum")
            .parameters
            .get(PROTOBUF_TYPE_PROP)
            .map(String::as_str),
        Some("fixed64")
    );
    assert_eq!(
        field("priority")
            .parameters
            .get(PROTOBUF_TYPE_TAG)
            .map(String::as_str),
        Some("9")
    );

    let mut message = DynamicMessage::new(order.clone());
    message.set_field_by_name("id", ProtoValue::String("o-1".into()));
    let line = order.get_field_by_name("lines").unwrap();
    let prost_reflect::Kind::Message(line_type) = line.kind() else {
        panic!()
    };
    let mut first = DynamicMessage::new(line_type.clone());
    first.set_field_by_name("sku", ProtoValue::String("A".into()));
    first.set_field_by_name("quantity", ProtoValue::I32(-2));
    message.set_field_by_name("lines", ProtoValue::List(vec![ProtoValue::Message(first)]));
    let mut totals = HashMap::new();
    totals.insert(
        prost_reflect::MapKey::String("b".into()),
        ProtoValue::I64(2),
    );
    totals.insert(
        prost_reflect::MapKey::String("a".into()),
        ProtoValue::I64(1),
    );
    message.set_field_by_name("totals", ProtoValue::Map(totals));
    message.set_field_by_name("status", ProtoValue::EnumNumber(1));
    message.set_field_by_name("voucher", ProtoValue::U32(u32::MAX));
    message.set_field_by_name("checksum", ProtoValue::U64(u64::MAX));
    let bytes = message.encode_to_vec();
    let decoded = DynamicMessage::decode(order.clone(), bytes.as_slice()).unwrap();
    let value = data().to_connect_data(&schema, &decoded).unwrap();
    assert_eq!(
        value.to_string(),
        "Struct{payment_0=Struct{voucher=4294967295},id=o-1,lines=[Struct{sku=A,quantity=-2}],\
         totals={a=1, b=2},status=PAID,checksum=-1}"
    );

    // Settings that change how the same message reads.
    let enhanced = data_with(&[
        ("enhanced.protobuf.schema.support", "true"),
        ("int.for.enums", "true"),
        ("wrapper.for.nullables", "true"),
        ("flatten.unions", "true"),
    ]);
    let schema = enhanced.to_connect_schema(&order, None).unwrap();
    assert_eq!(schema.name.as_deref(), Some("shop.Order"));
    let field = |name: &str| schema.get_field(name).unwrap().schema.clone();
    assert_eq!(
        (field("status").ty, field("status").name.as_deref()),
        (Type::Int32, Some("shop.Order.Status"))
    );
    assert_eq!(field("note").ty, Type::String);
    let value = enhanced.to_connect_data(&schema, &decoded).unwrap();
    assert_eq!(
        value.to_string(),
        "Struct{voucher=4294967295,id=o-1,lines=[Struct{sku=A,quantity=-2}],totals={a=1, b=2},\
         status=1,checksum=-1}"
    );
}

#[test]
fn a_struct_value_must_match_its_schema() {
    let schema: SchemaRef = Schema::new(Type::Struct)
        .named("A")
        .field("x", Schema::new(Type::Int32))
        .into();
    let other: SchemaRef = Schema::new(Type::Struct)
        .named("B")
        .field("x", Schema::new(Type::Int32))
        .into();
    let generated = data().from_connect_schema(&schema).unwrap();
    let value = Struct::new(other).with("x", Value::Int32(1)).unwrap();
    assert_eq!(
        data()
            .from_connect_data(&schema, &generated.message, &Value::Struct(value))
            .unwrap_err()
            .0,
        "Mismatching struct schema"
    );
    assert_eq!(
        data()
            .from_connect_data(&schema, &generated.message, &Value::String("x".into()))
            .unwrap_err()
            .0,
        "Invalid type for STRUCT: class java.lang.String"
    );
}

/// ProtobufDataTest.testNameScrubbing's cases.
#[test]
fn names_scrub_as_confluent_scrubs_them() {
    for (name, scrubbed) in [
        ("", ""),
        ("abc_DEF_123", "abc_DEF_123"),
        ("abc+-.*_", "abc_2B____"),
        ("abc-def", "abc_def"),
        ("abc+def", "abc_2Bdef"),
        ("abc  def", "abc__def"),
        ("abc.def", "abc_def"),
        ("0abc.def", "x0abc_def"),
        ("_abc.def", "x_abc_def"),
        ("0abc", "x0abc"),
        ("_abc", "x_abc"),
    ] {
        assert_eq!(scrub_name(name), scrubbed, "{name}");
    }
    let schema: SchemaRef = Schema::new(Type::Struct)
        .named("my-topic.Value")
        .field("first-name", Schema::new(Type::String))
        .into();
    let generated = data_with(&[("scrub.invalid.names", "true")])
        .from_connect_schema(&schema)
        .unwrap();
    assert_eq!(generated.message.full_name(), "my_topic.Value");
    assert!(generated.message.get_field_by_name("first_name").is_some());
    // Without scrubbing the name is refused by the compiler, not by a panic.
    let error = data().from_connect_schema(&schema).unwrap_err().0;
    assert!(
        error.starts_with("Invalid protobuf schema definition"),
        "{error}"
    );
}

#[test]
fn settings_are_checked_per_key() {
    let props: Props = [
        (
            "schema.registry.url".to_string(),
            "http://localhost:8081".to_string(),
        ),
        (
            "generalized.sum.type.support".to_string(),
            "true".to_string(),
        ),
        ("int.for.enums".to_string(), "maybe".to_string()),
    ]
    .into();
    let error =
        ProtobufConverterConfig::parse(&Settings::new(&props, "value.converter")).unwrap_err();
    assert_eq!(
        error.errors,
        vec![
            (
                "value.converter.int.for.enums".to_string(),
                "Invalid value maybe for configuration int.for.enums: Expected value to be either true or false".to_string()
            ),
            (
                "value.converter.generalized.sum.type.support".to_string(),
                "Invalid value true for configuration generalized.sum.type.support: Sluice's ProtobufConverter does not support this setting".to_string()
            ),
        ]
    );
    let props: Props = [("int.for.enums".to_string(), "true".to_string())].into();
    let error = crate::converters::converter("Protobuf", &props, false, "value.converter")
        .err()
        .unwrap();
    assert_eq!(
        error.errors[0].1,
        "Missing required configuration \"schema.registry.url\" which has no default value."
    );
}

/// Bytes that are not a record of this format fail before the registry is asked (the
/// registry URL here answers nothing).
#[test]
fn bad_bytes_are_data_errors() {
    let converter =
        ProtobufConverter::new(ProtobufConverterConfig::new("http://127.0.0.1:9"), false).unwrap();
    for (bytes, expected) in [
        (
            &[][..],
            "Failed to deserialize data for topic t to Protobuf: Unknown magic byte!",
        ),
        (
            &[1, 0, 0, 0, 1, 0][..],
            "Failed to deserialize data for topic t to Protobuf: Unknown magic byte!",
        ),
        (
            &[0, 0, 0][..],
            "Failed to deserialize data for topic t to Protobuf: Unknown magic byte!",
        ),
        (
            &[0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff][..],
            "Failed to deserialize data for topic t to Protobuf: Error deserializing Protobuf message for id 1: a varint longer than 5 bytes",
        ),
        (
            &[0, 0, 0, 0, 1, 0x01][..],
            "Failed to deserialize data for topic t to Protobuf: Error deserializing Protobuf message for id 1: message index count -1 is negative or above 100",
        ),
    ] {
        assert_eq!(
            converter.to_connect("t", Some(bytes)).unwrap_err().0,
            expected,
            "{bytes:?}"
        );
    }
    assert_eq!(
        converter.to_connect("t", None).unwrap(),
        (None, Value::Null)
    );
    assert_eq!(
        converter.from_connect("t", None, &Value::Null).unwrap(),
        None
    );
    assert_eq!(
        converter
            .from_connect("t", None, &Value::Int32(1))
            .unwrap_err()
            .0,
        "Failed to serialize Protobuf data from topic t: Unsupported object of class java.lang.Integer"
    );
}

/// Truncated and garbage message bodies fail to decode, never panic.
#[test]
fn truncated_messages_do_not_decode() {
    let order = message_type(
        "syntax = \"proto3\"; message M { string s = 1; repeated int64 xs = 2; }",
        "M",
    );
    let mut message = DynamicMessage::new(order.clone());
    message.set_field_by_name("s", ProtoValue::String("hello".into()));
    message.set_field_by_name(
        "xs",
        ProtoValue::List(vec![ProtoValue::I64(300), ProtoValue::I64(-1)]),
    );
    let bytes = message.encode_to_vec();
    for cut in 1..bytes.len() {
        let decoded = DynamicMessage::decode(order.clone(), &bytes[..cut]);
        if let Ok(decoded) = decoded {
            // A cut on a field boundary is a shorter valid message; it still converts.
            let schema = data().to_connect_schema(&order, None).unwrap();
            data().to_connect_data(&schema, &decoded).unwrap();
        }
    }
    assert!(DynamicMessage::decode(order, &[0x0a, 0x05, b'h'][..]).is_err());
    // A recursive message has no Connect schema here: refused, not a stack overflow.
    let recursive = message_type("syntax = \"proto3\"; message R { R child = 1; }", "R");
    assert_eq!(
        data().to_connect_schema(&recursive, None).unwrap_err().0,
        "The recursive message R has no Connect schema here"
    );
}

/// ProtobufConverterTest's TestMessage (Confluent's schema-registry repository,
/// protobuf-converter/src/test/.../ProtobufConverterTest.java, message from
/// protobuf-serializer/src/test/proto/TestProto.proto): its Connect schema
/// (`getTestMessageSchema`), its value (`getTestMessageStruct("Hello World", 123)`) and
/// the bytes of `HELLO_WORLD_MESSAGE`, both ways; and `HELLO_WORLD_MESSAGE_NESTED` for
/// testFromConnectDataForValueWithNamespaceNested.
#[test]
fn confluents_test_message_converts_to_its_bytes_and_back() {
    const FULL_NAME: &str = "io.confluent.kafka.serializers.protobuf.test.TestMessage";
    // (field, Connect type, io.confluent.connect.protobuf.Type, value of the test struct)
    let fields: [(&str, Type, Option<&str>, Value); 15] = [
        (
            "test_string",
            Type::String,
            None,
            Value::String("Hello World".into()),
        ),
        ("test_bool", Type::Boolean, None, Value::Boolean(false)),
        ("test_bytes", Type::Bytes, None, Value::Bytes(Vec::new())),
        ("test_double", Type::Float64, None, Value::Float64(0.0)),
        ("test_float", Type::Float32, None, Value::Float32(0.0)),
        (
            "test_fixed32",
            Type::Int64,
            Some("fixed32"),
            Value::Int64(0),
        ),
        (
            "test_fixed64",
            Type::Int64,
            Some("fixed64"),
            Value::Int64(0),
        ),
        ("test_int32", Type::Int32, None, Value::Int32(123)),
        ("test_int64", Type::Int64, None, Value::Int64(0)),
        (
            "test_sfixed32",
            Type::Int32,
            Some("sfixed32"),
            Value::Int32(0),
        ),
        (
            "test_sfixed64",
            Type::Int64,
            Some("sfixed64"),
            Value::Int64(0),
        ),
        ("test_sint32", Type::Int32, Some("sint32"), Value::Int32(0)),
        ("test_sint64", Type::Int64, Some("sint64"), Value::Int64(0)),
        ("test_uint32", Type::Int64, Some("uint32"), Value::Int64(0)),
        ("test_uint64", Type::Int64, Some("uint64"), Value::Int64(0)),
    ];
    let builder = |name: &str| {
        let mut schema = Schema::new(Type::Struct).named(name);
        for (i, (field, ty, protobuf_type, _)) in fields.iter().enumerate() {
            let mut field_schema = tag(Schema::new(*ty).optional(), i as u32 + 1);
            if let Some(protobuf_type) = protobuf_type {
                field_schema = field_schema.with_parameter(PROTOBUF_TYPE_PROP, *protobuf_type);
            }
            schema = schema.field(*field, field_schema);
        }
        schema
    };
    let fill = |schema: &SchemaRef| {
        let mut value = Struct::new(schema.clone());
        for (field, _, _, v) in &fields {
            value.put(field, v.clone()).unwrap();
        }
        value
    };
    // HELLO_WORLD_MESSAGE.toByteArray(): test_string (1) and test_int32 (8).
    let hello: Vec<u8> = [&[0x0a, 0x0b][..], b"Hello World", &[0x40, 0x7b]].concat();

    let schema: SchemaRef = builder(FULL_NAME).with_version(1).into();
    let generated = data().from_connect_schema(&schema).unwrap();
    assert_eq!(generated.message.full_name(), FULL_NAME);
    let message = data()
        .from_connect_data(&schema, &generated.message, &Value::Struct(fill(&schema)))
        .unwrap()
        .unwrap();
    assert_eq!(message.encode_to_vec(), hello);

    // Nested: TestMessage2 with test_message = 16.
    let nested: SchemaRef = tag(builder(FULL_NAME).optional(), 16).into();
    let outer: SchemaRef = builder("io.confluent.kafka.serializers.protobuf.test.TestMessage2")
        .field("test_message", nested.clone())
        .with_version(1)
        .into();
    let mut value = fill(&outer);
    value
        .put("test_message", Value::Struct(fill(&nested)))
        .unwrap();
    let generated = data().from_connect_schema(&outer).unwrap();
    let message = data()
        .from_connect_data(&outer, &generated.message, &Value::Struct(value))
        .unwrap()
        .unwrap();
    let expected: Vec<u8> = [&hello[..], &[0x82, 0x01, hello.len() as u8][..], &hello[..]].concat();
    assert_eq!(message.encode_to_vec(), expected);

    // testToConnectDataForValue: the bytes as TestProto.proto's TestMessage read to
    // getTestMessageSchema() (version 1) and getTestMessageStruct.
    let text = r#"syntax = "proto3";
        package io.confluent.kafka.serializers.protobuf.test;
        message TestMessage {
          string test_string = 1; bool test_bool = 2; bytes test_bytes = 3;
          double test_double = 4; float test_float = 5; fixed32 test_fixed32 = 6;
          fixed64 test_fixed64 = 7; int32 test_int32 = 8; int64 test_int64 = 9;
          sfixed32 test_sfixed32 = 10; sfixed64 test_sfixed64 = 11; sint32 test_sint32 = 12;
          sint64 test_sint64 = 13; uint32 test_uint32 = 14; uint64 test_uint64 = 15;
        }"#;
    let descriptor = message_type(text, FULL_NAME);
    let read_schema = data().to_connect_schema(&descriptor, Some(1)).unwrap();
    let expected_schema: SchemaRef = builder("TestMessage").with_version(1).into();
    assert_eq!(read_schema, expected_schema);
    let decoded = DynamicMessage::decode(descriptor, hello.as_slice()).unwrap();
    assert_eq!(
        data().to_connect_data(&read_schema, &decoded).unwrap(),
        Value::Struct(fill(&expected_schema))
    );
}

/// ProtobufConverterTest.testComplex: a schema with Confluent's tags (as read schemas
/// carry them) reads back equal, named ConnectDefault1 with the registry's version; its
/// map named `connect_default2` goes through `ConnectDefault2Entry` and back.
#[test]
fn confluents_complex_schema_reads_back_equal() {
    let optional = |ty: Type, n: u32| tag(Schema::new(ty).optional(), n);
    let builder = || {
        Schema::new(Type::Struct)
            .field("int32", optional(Type::Int32, 1))
            .field("int64", optional(Type::Int64, 2))
            .field("float32", optional(Type::Float32, 3))
            .field("float64", optional(Type::Float64, 4))
            .field("boolean", optional(Type::Boolean, 5))
            .field("string", optional(Type::String, 6))
            .field("bytes", optional(Type::Bytes, 7))
            .field(
                "array",
                tag(
                    Schema::array(Schema::new(Type::String).optional()).optional(),
                    8,
                ),
            )
            .field(
                "map",
                tag(
                    Schema::map(optional(Type::String, 1), optional(Type::Int32, 2))
                        .named("connect_default2")
                        .optional(),
                    9,
                ),
            )
    };
    let schema: SchemaRef = builder().into();
    let value = Struct::new(schema.clone())
        .with("int32", Value::Int32(12))
        .unwrap()
        .with("int64", Value::Int64(12))
        .unwrap()
        .with("float32", Value::Float32(12.2))
        .unwrap()
        .with("float64", Value::Float64(12.2))
        .unwrap()
        .with("boolean", Value::Boolean(true))
        .unwrap()
        .with("string", Value::String("foo".into()))
        .unwrap()
        .with("bytes", Value::Bytes(b"foo".to_vec()))
        .unwrap()
        .with(
            "array",
            Value::Array(vec![Value::String("a".into()), Value::String("b".into())]),
        )
        .unwrap()
        .with(
            "map",
            Value::Map(vec![(Value::String("field".into()), Value::Int32(1))]),
        )
        .unwrap();
    let (read_schema, read_value) = round_trip(&data(), &schema, &Value::Struct(value.clone()));
    let expected: SchemaRef = builder().named("ConnectDefault1").with_version(1).into();
    assert_eq!(read_schema, expected);
    let Value::Struct(read) = read_value else {
        panic!("a struct")
    };
    assert_eq!(read.values, value.values);
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    fn record_schema() -> SchemaRef {
        Schema::new(Type::Struct)
            .named("p.Record")
            .field("i8", Schema::new(Type::Int8))
            .field("i64", Schema::new(Type::Int64).optional())
            .field("s", Schema::new(Type::String).optional())
            .field("f", Schema::new(Type::Float64))
            .field("list", Schema::array(Schema::new(Type::Int32)))
            .field(
                "map",
                Schema::map(
                    Schema::new(Type::String),
                    Schema::new(Type::Int64).optional(),
                ),
            )
            .field("ts", Schema::timestamp().optional())
            .into()
    }

    proptest! {
        /// Connect → Protobuf → Connect keeps every value (a null optional reads back as
        /// null; an empty array as empty).
        #[test]
        fn values_round_trip(
            i8v in any::<i8>(),
            i64v in proptest::option::of(any::<i64>()),
            s in proptest::option::of(".{0,12}"),
            f in any::<f64>().prop_filter("NaN never equals itself", |f| !f.is_nan()),
            list in proptest::collection::vec(any::<i32>(), 0..5),
            map in proptest::collection::btree_map("[a-z]{1,4}", any::<i64>(), 0..4),
            ts in proptest::option::of(-10_000_000_000_000i64..10_000_000_000_000),
        ) {
            let schema = record_schema();
            let value = Struct::new(schema.clone())
                .with("i8", Value::Int8(i8v)).unwrap()
                .with("i64", i64v.map_or(Value::Null, Value::Int64)).unwrap()
                .with("s", s.clone().map_or(Value::Null, Value::String)).unwrap()
                .with("f", Value::Float64(f)).unwrap()
                .with("list", Value::Array(list.iter().copied().map(Value::Int32).collect())).unwrap()
                .with("map", Value::Map(map.iter().map(|(k, v)| (Value::String(k.clone()), Value::Int64(*v))).collect())).unwrap()
                .with("ts", ts.map_or(Value::Null, Value::Int64)).unwrap();
            let (_, read) = round_trip(&data(), &schema, &Value::Struct(value));
            let Value::Struct(read) = read else { panic!("a struct") };
            prop_assert_eq!(read.get("i8"), Some(&Value::Int8(i8v)));
            // proto3 has no presence for a plain scalar: an unset optional reads as 0 / "".
            prop_assert_eq!(read.get("i64"), Some(&Value::Int64(i64v.unwrap_or(0))));
            prop_assert_eq!(read.get("s"), Some(&Value::String(s.unwrap_or_default())));
            prop_assert_eq!(read.get("f"), Some(&Value::Float64(f)));
            prop_assert_eq!(read.get("list"), Some(&Value::Array(list.into_iter().map(Value::Int32).collect())));
            prop_assert_eq!(
                read.get("map"),
                Some(&Value::Map(map.into_iter().map(|(k, v)| (Value::String(k), Value::Int64(v))).collect()))
            );
            prop_assert_eq!(read.get("ts"), Some(&ts.map_or(Value::Null, Value::Int64)));
        }

        /// Any bytes as a message of a generated type: decoding fails or the message
        /// converts (or fails to) without a panic.
        #[test]
        fn any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let schema = record_schema();
            let generated = data().from_connect_schema(&schema).unwrap();
            let read_schema = data().to_connect_schema(&generated.message, None).unwrap();
            if let Ok(message) = DynamicMessage::decode(generated.message.clone(), bytes.as_slice()) {
                let _ = data().to_connect_data(&read_schema, &message);
            }
        }
    }
}
