//! The JSON Schema converter: the registry-free `JsonSchemaData` (generated schema texts
//! against Confluent's, data both ways, schemas written by others), the settings, and bad
//! bytes. The converter against Sluice's real registry is in
//! `tests/json_schema_registry.rs`.

use std::sync::Arc;

use super::*;
use crate::Props;
use crate::converters::DecimalFormat;
use crate::converters::json_schema_data::{
    JSON_TYPE_ENUM, JSON_TYPE_ONE_OF, SCHEMA_DEPTH_MAX, java_hash_map_order,
};
use crate::data::{Schema, Struct, Type};

fn prim(ty: Type) -> Schema {
    Schema::new(ty)
}

fn data() -> JsonSchemaData {
    JsonSchemaData::default()
}

fn numeric() -> JsonSchemaData {
    JsonSchemaData::new(JsonSchemaDataConfig {
        decimal_format: DecimalFormat::Numeric,
        ..JsonSchemaDataConfig::default()
    })
}

/// The value's JSON text as the converter writes it.
fn json(data: &JsonSchemaData, schema: &Schema, value: &Value) -> String {
    let node = data
        .from_connect_data(Some(schema), value)
        .unwrap()
        .expect("a value to write");
    jackson::write_string(&node)
}

/// JSON text read back as Connect data of the schema `text` describes.
fn read(data: &JsonSchemaData, text: &str, value: &str) -> (SchemaRef, Value) {
    let schema = data.to_connect_schema(text, None).unwrap();
    let node = jackson::read_tree(value.as_bytes()).unwrap();
    let value = data.to_connect_data(Some(&schema), Some(&node)).unwrap();
    (schema, value)
}

/// Each case: a Connect schema, the text Confluent's converter registers for it, a value
/// and its JSON. Cases named `JsonSchemaDataTest.*` carry over the expected schema and
/// value of that test in Confluent's `json-schema-converter/src/test/java/io/confluent/
/// connect/json/JsonSchemaDataTest.java` (there compared as everit objects; here as the
/// printed text, in everit's printing order).
fn cases() -> Vec<(&'static str, Schema, &'static str, Value, &'static str)> {
    let record = Schema::new(Type::Struct)
        .named("Record")
        .field("int8", prim(Type::Int8))
        .field("string", prim(Type::String));
    let record_value = {
        let mut s = Struct::new(Arc::new(record.clone()));
        s.put("int8", Value::Int8(12)).unwrap();
        Value::Struct(s)
    };
    vec![
        (
            "JsonSchemaDataTest.testFromConnectBoolean",
            prim(Type::Boolean),
            r#"{"type":"boolean"}"#,
            Value::Boolean(true),
            "true",
        ),
        (
            "JsonSchemaDataTest.testFromConnectByte",
            prim(Type::Int8),
            r#"{"type":"integer","connect.type":"int8"}"#,
            Value::Int8(12),
            "12",
        ),
        (
            "JsonSchemaDataTest.testFromConnectShort",
            prim(Type::Int16),
            r#"{"type":"integer","connect.type":"int16"}"#,
            Value::Int16(12),
            "12",
        ),
        (
            "JsonSchemaDataTest.testFromConnectInteger",
            prim(Type::Int32),
            r#"{"type":"integer","connect.type":"int32"}"#,
            Value::Int32(12),
            "12",
        ),
        (
            "JsonSchemaDataTest.testFromConnectLong",
            prim(Type::Int64),
            r#"{"type":"integer","connect.type":"int64"}"#,
            Value::Int64(12),
            "12",
        ),
        (
            "JsonSchemaDataTest.testFromConnectFloat",
            prim(Type::Float32),
            r#"{"type":"number","connect.type":"float32"}"#,
            Value::Float32(12.2),
            "12.2",
        ),
        (
            "JsonSchemaDataTest.testFromConnectDouble",
            prim(Type::Float64),
            r#"{"type":"number","connect.type":"float64"}"#,
            Value::Float64(12.2),
            "12.2",
        ),
        (
            "JsonSchemaDataTest.testFromConnectBytes",
            prim(Type::Bytes),
            r#"{"type":"string","connect.type":"bytes"}"#,
            Value::Bytes(b"foo".to_vec()),
            r#""Zm9v""#,
        ),
        (
            "JsonSchemaDataTest.testFromConnectString",
            prim(Type::String),
            r#"{"type":"string"}"#,
            Value::String("string".into()),
            r#""string""#,
        ),
        (
            "JsonSchemaDataTest.testFromConnectNull (the optional boolean)",
            prim(Type::Boolean).optional(),
            r#"{"oneOf":[{"type":"null"},{"type":"boolean"}]}"#,
            Value::Boolean(false),
            "false",
        ),
        (
            "JsonSchemaDataTest.testFromConnectBase64Decimal",
            Schema::decimal(2),
            concat!(
                r#"{"type":"string","title":"org.apache.kafka.connect.data.Decimal","#,
                r#""connect.version":1,"connect.type":"bytes","connect.parameters":{"scale":"2"}}"#
            ),
            // 1.56: unscaled 156.
            Value::Bytes(vec![0, 0x9c]),
            r#""AJw=""#,
        ),
        (
            "JsonSchemaDataTest.testFromConnectTimestampWithDefault",
            Schema::timestamp().with_default(Value::Int64(0)),
            concat!(
                r#"{"type":"integer","title":"org.apache.kafka.connect.data.Timestamp","#,
                r#""default":0,"connect.version":1,"connect.type":"int64"}"#
            ),
            Value::Int64(1_234_567_890),
            "1234567890",
        ),
        (
            "Date",
            Schema::date(),
            concat!(
                r#"{"type":"integer","title":"org.apache.kafka.connect.data.Date","#,
                r#""connect.version":1,"connect.type":"int32"}"#
            ),
            Value::Int32(19_000),
            "19000",
        ),
        (
            "Time",
            Schema::time(),
            concat!(
                r#"{"type":"integer","title":"org.apache.kafka.connect.data.Time","#,
                r#""connect.version":1,"connect.type":"int32"}"#
            ),
            Value::Int32(3_600_000),
            "3600000",
        ),
        (
            "JsonSchemaDataTest.testFromConnectMapWithStringKey",
            Schema::map(prim(Type::String), prim(Type::Int32)),
            concat!(
                r#"{"type":"object","connect.type":"map","#,
                r#""additionalProperties":{"type":"integer","connect.type":"int32"}}"#
            ),
            Value::Map(vec![(Value::String("hi".into()), Value::Int32(32))]),
            r#"{"hi":32}"#,
        ),
        (
            "JsonSchemaDataTest.testFromConnectMapWithNonStringKey",
            Schema::map(prim(Type::Int32), prim(Type::Int32)),
            concat!(
                r#"{"type":"array","connect.type":"map","items":{"type":"object","properties":{"#,
                r#""value":{"type":"integer","connect.index":1,"connect.type":"int32"},"#,
                r#""key":{"type":"integer","connect.index":0,"connect.type":"int32"}}}}"#
            ),
            Value::Map(vec![(Value::Int32(54), Value::Int32(32))]),
            r#"[{"key":54,"value":32}]"#,
        ),
        (
            "JsonSchemaDataTest.testFromConnectMapWithOptionalKey",
            Schema::map(prim(Type::String).optional(), prim(Type::Int32)),
            concat!(
                r#"{"type":"array","connect.type":"map","items":{"type":"object","properties":{"#,
                r#""value":{"type":"integer","connect.index":1,"connect.type":"int32"},"#,
                r#""key":{"connect.index":0,"oneOf":[{"type":"null"},{"type":"string"}]}}}}"#
            ),
            Value::Map(vec![(Value::String("hi".into()), Value::Int32(32))]),
            r#"[{"key":"hi","value":32}]"#,
        ),
        (
            "JsonSchemaDataTest.testFromNamedConnectMap",
            Schema::map(prim(Type::String), prim(Type::Int32)).named("foo.bar"),
            concat!(
                r#"{"type":"object","title":"foo.bar","connect.type":"map","#,
                r#""additionalProperties":{"type":"integer","connect.type":"int32"}}"#
            ),
            Value::Map(vec![]),
            "{}",
        ),
        (
            "JsonSchemaDataTest.testFromConnectRecordWithMissingNonoptional",
            record,
            concat!(
                r#"{"type":"object","title":"Record","properties":{"#,
                r#""string":{"type":"string","connect.index":1},"#,
                r#""int8":{"type":"integer","connect.index":0,"connect.type":"int8"}}}"#
            ),
            record_value,
            r#"{"int8":12}"#,
        ),
    ]
}

#[test]
fn generated_schemas_and_values_are_confluents() {
    let data = data();
    for (name, schema, expected_schema, value, expected_json) in cases() {
        assert_eq!(
            data.schema_text(&schema).unwrap(),
            expected_schema,
            "schema of {name}"
        );
        assert_eq!(
            json(&data, &schema, &value),
            expected_json,
            "value of {name}"
        );
    }
}

#[test]
fn generated_schemas_read_back_to_the_same_connect_schema_and_value() {
    let data = data();
    for (name, schema, text, value, value_json) in cases() {
        let (read_schema, read_value) = read(&data, text, value_json);
        assert_eq!(*read_schema, schema, "schema of {name}");
        let expected = match value {
            // A required field left null reads as absent: the struct holds a null.
            Value::Struct(s) => Value::Struct(Struct {
                schema: Arc::clone(&read_schema),
                values: s.values,
            }),
            other => other,
        };
        assert_eq!(read_value, expected, "value of {name}");
    }
}

#[test]
fn numeric_decimals_are_json_numbers() {
    // JsonSchemaDataTest.testFromConnectNumericDecimal and ...WithTrailingZeros.
    let data = numeric();
    let schema = Schema::decimal(2);
    let text = data.schema_text(&schema).unwrap();
    assert_eq!(
        text,
        concat!(
            r#"{"type":"number","title":"org.apache.kafka.connect.data.Decimal","#,
            r#""connect.version":1,"connect.type":"bytes","connect.parameters":{"scale":"2"}}"#
        )
    );
    assert_eq!(json(&data, &schema, &Value::Bytes(vec![0, 0x9c])), "1.56");
    let (read_schema, value) = read(&data, &text, "1.56");
    assert_eq!(*read_schema, schema);
    assert_eq!(value, Value::Bytes(vec![0, 0x9c]));
    let four = Schema::decimal(4);
    // 1.5600: unscaled 15600 = 0x3cf0.
    assert_eq!(
        json(&data, &four, &Value::Bytes(vec![0x3c, 0xf0])),
        "1.5600"
    );
}

/// Every Connect type in one struct, nested and optional, with defaults and docs: the
/// generated text keeps Confluent's order and reads back to the same schema and value.
#[test]
fn a_struct_of_every_type_round_trips() {
    let address = Schema::new(Type::Struct)
        .named("shop.Address")
        .field("city", prim(Type::String))
        .field("zip", prim(Type::Int32).optional());
    let schema = Arc::new(
        Schema::new(Type::Struct)
            .named("shop.Order")
            .with_version(3)
            .with_doc("An order")
            .field("int8", prim(Type::Int8))
            .field("int16", prim(Type::Int16))
            .field("int32", prim(Type::Int32))
            .field("int64", prim(Type::Int64))
            .field("float32", prim(Type::Float32))
            .field("float64", prim(Type::Float64))
            .field("boolean", prim(Type::Boolean))
            .field(
                "string",
                prim(Type::String)
                    .with_doc("a note")
                    .with_default(Value::String("none".into())),
            )
            .field("bytes", prim(Type::Bytes).optional())
            .field("array", Schema::array(prim(Type::String)))
            .field("map", Schema::map(prim(Type::String), prim(Type::Int32)))
            .field("decimal", Schema::decimal(2))
            .field("date", Schema::date().optional())
            .field("timestamp", Schema::timestamp())
            .field("address", address.clone())
            .field("previous", address.clone().optional()),
    );
    let address_ref = Arc::new(address.clone());
    let mut home = Struct::new(Arc::clone(&address_ref));
    home.put("city", Value::String("Oslo".into())).unwrap();
    let mut value = Struct::new(Arc::clone(&schema));
    for (name, v) in [
        ("int8", Value::Int8(-8)),
        ("int16", Value::Int16(-16)),
        ("int32", Value::Int32(32)),
        ("int64", Value::Int64(1 << 40)),
        ("float32", Value::Float32(0.5)),
        ("float64", Value::Float64(2.25)),
        ("boolean", Value::Boolean(true)),
        ("bytes", Value::Bytes(vec![1, 2, 3])),
        (
            "array",
            Value::Array(vec![Value::String("a".into()), Value::String("b".into())]),
        ),
        (
            "map",
            Value::Map(vec![(Value::String("k".into()), Value::Int32(1))]),
        ),
        ("decimal", Value::Bytes(vec![0x30, 0x39])),
        ("timestamp", Value::Int64(1_700_000_000_000)),
        ("address", Value::Struct(home.clone())),
    ] {
        value.put(name, v).unwrap();
    }
    let value = Value::Struct(value);
    let data = data();
    let text = data.schema_text(&schema).unwrap();
    // The field order is java.util.HashMap's for these names; connect.index restores
    // Connect's.
    assert!(
        text.starts_with(concat!(
            r#"{"type":"object","title":"shop.Order","description":"An order","#,
            r#""connect.version":3,"properties":{"#
        )),
        "{text}"
    );
    assert!(
        text.contains(concat!(
            r#""string":{"type":"string","description":"a note","default":"none","#,
            r#""connect.index":7}"#
        )),
        "{text}"
    );
    assert!(
        text.contains(r#""boolean":{"connect.index":6,"type":"boolean"}"#),
        "{text}"
    );
    assert!(
        text.contains(concat!(
            r#""previous":{"connect.index":15,"oneOf":[{"type":"null"},"#,
            r#"{"type":"object","title":"shop.Address","properties":{"#
        )),
        "{text}"
    );
    let written = json(&data, &schema, &value);
    assert!(
        written.starts_with(r#"{"int8":-8,"int16":-16,"int32":32,"int64":1099511627776,"#),
        "{written}"
    );
    // The null string field is written as its default; the null optional fields as null.
    assert!(
        written.contains(r#""string":"none","bytes":"AQID","#),
        "{written}"
    );
    assert!(written.contains(r#""date":null,"#), "{written}");
    assert!(
        written.ends_with(r#""address":{"city":"Oslo","zip":null},"previous":null}"#),
        "{written}"
    );

    let (read_schema, read_value) = read(&data, &text, &written);
    assert_eq!(*read_schema, *schema);
    let Value::Struct(read_struct) = &read_value else {
        panic!("a struct: {read_value:?}");
    };
    assert_eq!(
        read_struct.get("string"),
        Some(&Value::String("none".into()))
    );
    assert_eq!(
        read_struct.get("decimal"),
        Some(&Value::Bytes(vec![0x30, 0x39]))
    );
    assert_eq!(
        json(&data, &read_schema, &read_value),
        written,
        "the value read writes the same JSON"
    );
}

#[test]
fn the_struct_of_confluents_schema_values_test_prints_in_its_order() {
    // The schema text of `SchemaValuesTest.testSchemaValueComplexJsonMD5` in Confluent's
    // core/src/test/java/io/confluent/kafka/schemaregistry/storage/SchemaValuesTest.java,
    // a schema Confluent's converter generated, compacted.
    let schema = Schema::new(Type::Struct)
        .field("int8", prim(Type::Int8))
        .field("int16", prim(Type::Int16))
        .field("int32", prim(Type::Int32))
        .field("int64", prim(Type::Int64))
        .field("float32", prim(Type::Float32))
        .field("float64", prim(Type::Float64))
        .field("boolean", prim(Type::Boolean))
        .field("string", prim(Type::String))
        .field("bytes", prim(Type::Bytes))
        .field("array", Schema::array(prim(Type::String)))
        .field("map", Schema::map(prim(Type::String), prim(Type::Int32)));
    let expected = concat!(
        r#"{"type":"object","properties":{"#,
        r#""boolean":{"connect.index":6,"type":"boolean"},"#,
        r#""string":{"type":"string","connect.index":7},"#,
        r#""int32":{"type":"integer","connect.index":2,"connect.type":"int32"},"#,
        r#""array":{"type":"array","connect.index":9,"items":{"type":"string"}},"#,
        r#""int64":{"type":"integer","connect.index":3,"connect.type":"int64"},"#,
        r#""bytes":{"type":"string","connect.index":8,"connect.type":"bytes"},"#,
        r#""int8":{"type":"integer","connect.index":0,"connect.type":"int8"},"#,
        r#""float32":{"type":"number","connect.index":4,"connect.type":"float32"},"#,
        r#""float64":{"type":"number","connect.index":5,"connect.type":"float64"},"#,
        r#""map":{"type":"object","connect.index":10,"connect.type":"map","#,
        r#""additionalProperties":{"type":"integer","connect.type":"int32"}},"#,
        r#""int16":{"type":"integer","connect.index":1,"connect.type":"int16"}}}"#
    );
    assert_eq!(data().schema_text(&schema).unwrap(), expected);
    assert_eq!(*data().to_connect_schema(expected, None).unwrap(), schema);
}

#[test]
fn java_hash_map_order_matches_javas() {
    // java.util.HashMap<String, _> of 16 buckets iterates "connect.version" (bucket 1),
    // "connect.index" (8), "connect.type" (13), "connect.parameters" (15).
    let keys = [
        "connect.type",
        "connect.index",
        "connect.version",
        "connect.parameters",
    ];
    let ordered: Vec<String> =
        java_hash_map_order(keys.iter().map(|k| (k.to_string(), ())).collect(), 16)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
    assert_eq!(
        ordered,
        [
            "connect.version",
            "connect.index",
            "connect.type",
            "connect.parameters"
        ]
    );
}

#[test]
fn additional_properties_false_is_written_when_configured() {
    let data = JsonSchemaData::new(JsonSchemaDataConfig {
        object_additional_properties: false,
        ..JsonSchemaDataConfig::default()
    });
    let schema = Schema::new(Type::Struct)
        .named("R")
        .field("a", prim(Type::String));
    assert_eq!(
        data.schema_text(&schema).unwrap(),
        r#"{"type":"object","additionalProperties":false,"title":"R","properties":{"a":{"type":"string","connect.index":0}}}"#
    );
}

/// A schema as Confluent's Python `JSONSchemaSerializer` users write them: no Connect
/// keywords, `required`, nullable fields, `$ref` to definitions.
const PYTHON_SCHEMA: &str = r##"{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "Person",
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer"},
    "score": {"type": "number"},
    "active": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "address": {"$ref": "#/definitions/Address"},
    "nickname": {"oneOf": [{"type": "null"}, {"type": "string"}]},
    "email": {"type": ["string", "null"], "default": null},
    "country": {"type": "string", "default": "NO"},
    "home": {"$ref": "#/$defs/Home"}
  },
  "required": ["name", "age"],
  "definitions": {
    "Address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}}}
  },
  "$defs": {"Home": {"type": "object", "title": "Home", "properties": {"rooms": {"type": "integer"}}}}
}"##;

#[test]
fn schemas_written_by_others_read_as_confluent_reads_them() {
    let data = data();
    let schema = data.to_connect_schema(PYTHON_SCHEMA, Some(4)).unwrap();
    assert_eq!(schema.ty, Type::Struct);
    assert_eq!(schema.name.as_deref(), Some("Person"));
    assert_eq!(schema.version, Some(4));
    // Fields in java.util.HashMap order of the names (no connect.index to say otherwise).
    let names: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
    let mut expected: Vec<String> = [
        "name", "age", "score", "active", "tags", "address", "nickname", "email", "country", "home",
    ]
    .iter()
    .map(|n| n.to_string())
    .collect();
    expected = java_hash_map_order(expected.into_iter().map(|n| (n, ())).collect(), 16)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, expected);
    let field = |name: &str| Arc::clone(&schema.get_field(name).unwrap().schema);
    assert_eq!(*field("name"), prim(Type::String));
    assert_eq!(*field("age"), prim(Type::Int64));
    assert_eq!(*field("score"), prim(Type::Float64));
    assert_eq!(*field("active"), prim(Type::Boolean));
    assert_eq!(*field("tags"), Schema::array(prim(Type::String)));
    assert_eq!(*field("nickname"), prim(Type::String).optional());
    assert_eq!(*field("email"), prim(Type::String).optional());
    assert_eq!(
        *field("country"),
        prim(Type::String).with_default(Value::String("NO".into()))
    );
    let address = field("address");
    assert_eq!(address.ty, Type::Struct);
    assert_eq!(*address.get_field("zip").unwrap().schema, prim(Type::Int64));
    assert_eq!(field("home").name.as_deref(), Some("Home"));

    let node = jackson::read_tree(
        br#"{"name":"Ann","age":41,"score":9.5,"active":true,"tags":["x"],
            "address":{"city":"Oslo","zip":150},"nickname":null,"email":"a@b.c"}"#,
    )
    .unwrap();
    let value = data.to_connect_data(Some(&schema), Some(&node)).unwrap();
    let Value::Struct(person) = &value else {
        panic!("a struct: {value:?}");
    };
    assert_eq!(person.get("age"), Some(&Value::Int64(41)));
    assert_eq!(person.get("score"), Some(&Value::Float64(9.5)));
    assert_eq!(person.get("nickname"), Some(&Value::Null));
    // Absent, and not required by Connect's reading: null, as Confluent's converter leaves it.
    assert_eq!(person.get("home"), Some(&Value::Null));
    // Absent with a default: the default.
    assert_eq!(person.get("country"), Some(&Value::String("NO".into())));

    // use.optional.for.nonrequired: only name and age stay required.
    let optional = JsonSchemaData::new(JsonSchemaDataConfig {
        use_optional_for_nonrequired: true,
        ..JsonSchemaDataConfig::default()
    });
    let schema = optional.to_connect_schema(PYTHON_SCHEMA, None).unwrap();
    for field in &schema.fields {
        let required = field.name == "name" || field.name == "age";
        assert_eq!(field.schema.optional, !required, "{}", field.name);
    }
}

#[test]
fn enums_and_unions_read_as_confluent_names_them() {
    let data = data();
    let schema = data
        .to_connect_schema(r#"{"type":"string","enum":["red","green"]}"#, None)
        .unwrap();
    assert_eq!(schema.ty, Type::String);
    assert_eq!(
        schema.parameters.get(JSON_TYPE_ENUM).map(String::as_str),
        Some("")
    );
    assert_eq!(
        schema
            .parameters
            .get(&format!("{JSON_TYPE_ENUM}.green"))
            .map(String::as_str),
        Some("green")
    );
    assert_eq!(
        data.schema_text(&schema).unwrap(),
        r#"{"enum":["red","green"]}"#,
        "symbols in the order they were declared (Connect's parameters keep it)"
    );

    let union = data
        .to_connect_schema(r#"{"oneOf":[{"type":"string"},{"type":"integer"}]}"#, None)
        .unwrap();
    assert_eq!(union.name.as_deref(), Some(JSON_TYPE_ONE_OF));
    let names: Vec<&str> = union.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "io.confluent.connect.json.OneOf.field.0",
            "io.confluent.connect.json.OneOf.field.1"
        ]
    );
    let node = jackson::read_tree(b"12").unwrap();
    let value = data.to_connect_data(Some(&union), Some(&node)).unwrap();
    let Value::Struct(chosen) = &value else {
        panic!("a struct: {value:?}");
    };
    assert_eq!(
        chosen.get("io.confluent.connect.json.OneOf.field.1"),
        Some(&Value::Int64(12))
    );
    assert_eq!(json(&data, &union, &value), "12");
    assert_eq!(
        data.schema_text(&union).unwrap(),
        concat!(
            r#"{"oneOf":[{"type":"string","connect.index":0},"#,
            r#"{"type":"integer","connect.index":1,"connect.type":"int64"}]}"#
        )
    );
}

#[test]
fn unreadable_schemas_and_values_are_data_errors() {
    let data = data();
    for (text, expected) in [
        ("{", "Invalid JSON schema: "),
        (
            r#"{"type":"array"}"#,
            "Array schema did not specify the items type",
        ),
        (
            r##"{"$ref":"#/definitions/Nope"}"##,
            "Unsupported JSON schema reference \"#/definitions/Nope\"",
        ),
        (
            r##"{"type":"object","properties":{"next":{"$ref":"#"}}}"##,
            "JSON schema nests deeper than 128 schemas",
        ),
        (
            r#"{"allOf":[{"type":"boolean"}]}"#,
            r#"Unsupported criterion allOf for {"allOf":[{"type":"boolean"}]}"#,
        ),
        (
            r#"{"type":"null"}"#,
            "Unsupported schema type org.everit.json.schema.NullSchema",
        ),
        (
            r#"{"type":"integer","connect.type":"int128"}"#,
            "Unsupported type int128",
        ),
    ] {
        let error = data.to_connect_schema(text, None).unwrap_err();
        assert!(error.0.starts_with(expected), "{text}: {error}");
    }
    let schema = Arc::new(Schema::new(Type::Struct).field("a", prim(Type::Int32)));
    for (value, expected) in [
        (
            "[1]",
            "Structs should be encoded as JSON objects, but found ARRAY",
        ),
        ("null", "Invalid null value for required STRUCT field"),
    ] {
        let node = jackson::read_tree(value.as_bytes()).unwrap();
        let error = data
            .to_connect_data(Some(&schema), Some(&node))
            .unwrap_err();
        assert_eq!(error.0, expected);
    }
    let map = Arc::new(Schema::map(prim(Type::Int32), prim(Type::Int32)));
    let node = jackson::read_tree(br#"{"a":1}"#).unwrap();
    assert_eq!(
        data.to_connect_data(Some(&map), Some(&node)).unwrap_err().0,
        "Maps with non-string fields should be encoded as JSON array of objects, but found OBJECT"
    );
    assert_eq!(
        data.from_connect_data(Some(&prim(Type::Int32)), &Value::String("x".into()))
            .unwrap_err()
            .0,
        "Invalid type for INT32: class java.lang.String"
    );
}

fn settings(pairs: &[(&str, &str)]) -> Result<JsonSchemaConverterConfig, ConfigError> {
    let props: Props = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    JsonSchemaConverterConfig::parse(&Settings::new(&props, "value.converter"))
}

#[test]
fn settings_are_checked_with_confluent_texts() {
    let config = settings(&[
        ("schema.registry.url", "http://localhost:8081"),
        ("decimal.format", "numeric"),
        ("use.optional.for.nonrequired", "true"),
        ("json.fail.invalid.schema", "true"),
    ])
    .unwrap();
    assert_eq!(config.data.decimal_format, DecimalFormat::Numeric);
    assert!(config.data.use_optional_for_nonrequired);
    assert!(config.fail_invalid_schema);
    assert_eq!(config.data.schemas_cache_size, 1000);

    let errors = settings(&[
        ("decimal.format", "HEX"),
        ("generalized.sum.type.support", "true"),
        ("preserve.additional.properties", "true"),
        ("object.additional.properties", "maybe"),
        ("schemas.cache.config", "many"),
    ])
    .unwrap_err()
    .errors;
    let expected: Vec<(String, String)> = [
        (
            "value.converter.schema.registry.url",
            "Missing required configuration \"schema.registry.url\" which has no default value.",
        ),
        (
            "value.converter.object.additional.properties",
            "Invalid value maybe for configuration object.additional.properties: Expected value \
             to be either true or false",
        ),
        (
            "value.converter.generalized.sum.type.support",
            "Invalid value true for configuration generalized.sum.type.support: not supported \
             by this JSON Schema converter; only false is",
        ),
        (
            "value.converter.preserve.additional.properties",
            "Invalid value true for configuration preserve.additional.properties: not supported \
             by this JSON Schema converter; only false is",
        ),
        (
            "value.converter.decimal.format",
            "Invalid value HEX for configuration decimal.format: String must be one of (case \
             insensitive): BASE64, NUMERIC",
        ),
        (
            "value.converter.schemas.cache.config",
            "Invalid value many for configuration schemas.cache.config: Not a number of type INT",
        ),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(errors, expected);
}

fn converter(url: &str) -> JsonSchemaConverter {
    JsonSchemaConverter::new(JsonSchemaConverterConfig::new(url), false).unwrap()
}

#[test]
fn bad_bytes_are_data_errors_before_the_registry_is_asked() {
    // Nothing listens on port 9: a registry call would be a network error instead.
    let converter = converter("http://127.0.0.1:9");
    for (bytes, cause) in [
        (&[][..], "java.nio.BufferUnderflowException"),
        (&[1, 0, 0, 0, 1, b'{'][..], "Unknown magic byte!"),
        (&[0, 0, 0][..], "java.nio.BufferUnderflowException"),
    ] {
        let error = converter.to_connect("orders", Some(bytes)).unwrap_err();
        assert_eq!(
            error.0,
            format!(
                "Converting byte[] to Kafka Connect data failed due to serialization error of \
                 topic orders: Error deserializing JSON message for id -1: {cause}"
            )
        );
    }
    assert_eq!(
        converter.to_connect("orders", None),
        Ok((None, Value::Null))
    );
    assert_eq!(
        converter.from_connect("orders", None, &Value::Null),
        Ok(None)
    );
    let error = converter
        .from_connect("orders", None, &Value::String("x".into()))
        .unwrap_err();
    assert!(
        error.0.starts_with(
            "Converting Kafka Connect data to byte[] failed due to serialization error of topic \
             orders: Error serializing JSON message"
        ),
        "{error}"
    );
}

#[test]
fn an_unreachable_registry_is_a_network_error() {
    let converter = converter("http://127.0.0.1:9");
    let schema = Arc::new(prim(Type::String));
    let error = converter
        .from_connect("orders", Some(&schema), &Value::String("x".into()))
        .unwrap_err();
    assert!(
        error
            .0
            .starts_with("Network connection error while serializing Json data for topic orders: "),
        "{error}"
    );
    let error = converter
        .to_connect("orders", Some(&[0, 0, 0, 0, 1, b'1']))
        .unwrap_err();
    assert!(
        error
            .0
            .starts_with("Network connection error while deserializing data for topic orders: "),
        "{error}"
    );
}

#[test]
fn deeply_nested_schemas_read_and_write_without_exhausting_the_stack() {
    // As deep as a schema may nest: arrays of arrays down to a string.
    let depth = SCHEMA_DEPTH_MAX - 1;
    let text = format!(
        "{}{{\"type\":\"string\"}}{}",
        r#"{"type":"array","items":"#.repeat(depth),
        "}".repeat(depth)
    );
    let data = data();
    let schema = data.to_connect_schema(&text, None).unwrap();
    assert_eq!(data.schema_text(&schema).unwrap(), text);
    let value = (0..depth).fold(Value::String("x".into()), |v, _| Value::Array(vec![v]));
    let written = json(&data, &schema, &value);
    let node = jackson::read_tree(written.as_bytes()).unwrap();
    assert_eq!(
        data.to_connect_data(Some(&schema), Some(&node)).unwrap(),
        value
    );
    // One more is refused.
    let deeper = format!(r#"{{"type":"array","items":{text}}}"#);
    assert_eq!(
        data.to_connect_schema(&deeper, None).unwrap_err().0,
        "JSON schema nests deeper than 128 schemas (a recursive schema?); recursive schemas are \
         not supported"
    );
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    /// JSON built from the keywords and values the schema reader looks at, so random
    /// documents reach its branches rather than stopping at the first unknown key.
    fn json_text() -> impl Strategy<Value = String> {
        let words = prop::sample::select(vec![
            "type",
            "properties",
            "items",
            "oneOf",
            "anyOf",
            "allOf",
            "$ref",
            "enum",
            "const",
            "connect.type",
            "connect.index",
            "connect.version",
            "connect.parameters",
            "default",
            "title",
            "required",
            "additionalProperties",
            "object",
            "array",
            "string",
            "integer",
            "number",
            "boolean",
            "null",
            "map",
            "bytes",
            "int8",
            "float32",
            "#",
            "#/definitions/a",
            "definitions",
            "a",
            "key",
            "value",
        ]);
        let leaf = prop_oneof![
            words
                .clone()
                .prop_map(|w| serde_json::Value::String(w.to_string())),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<bool>().prop_map(serde_json::Value::Bool),
            Just(serde_json::Value::Null),
            (-1e6f64..1e6).prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(6, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                prop::collection::vec((words.clone(), inner), 0..5).prop_map(|members| {
                    serde_json::Value::Object(
                        members
                            .into_iter()
                            .map(|(k, v)| (k.to_string(), v))
                            .collect(),
                    )
                }),
            ]
        })
        .prop_map(|v| v.to_string())
    }

    proptest! {
        /// Any document is a schema or a DataError; any schema read generates a text that
        /// reads back to the same Connect schema; any value is Connect data or an error.
        #[test]
        fn no_schema_or_value_panics(schema in json_text(), value in json_text()) {
            let data = data();
            if let Ok(connect) = data.to_connect_schema(&schema, None) {
                let text = data.schema_text(&connect);
                if let Ok(text) = text {
                    let again = data.to_connect_schema(&text, None).unwrap();
                    prop_assert_eq!(&*again, &*connect);
                }
                let node = jackson::read_tree(value.as_bytes()).unwrap();
                if let Ok(read) = data.to_connect_data(Some(&connect), Some(&node)) {
                    let _ = data.from_connect_data(Some(&connect), &read);
                }
            }
        }
    }
}

#[test]
fn ignore_default_for_nullables_writes_null() {
    // JsonSchemaDataTest.testFromConnectRecordIgnoreDefaultForNullables.
    let data = JsonSchemaData::new(JsonSchemaDataConfig {
        ignore_default_for_nullables: true,
        ..JsonSchemaDataConfig::default()
    });
    let schema = Arc::new(
        Schema::new(Type::Struct)
            .named("Record")
            .field("int8", prim(Type::Int8))
            .field(
                "string",
                prim(Type::String)
                    .optional()
                    .with_default(Value::String("default-string".into())),
            ),
    );
    assert_eq!(
        data.schema_text(&schema).unwrap(),
        concat!(
            r#"{"type":"object","title":"Record","properties":{"#,
            r#""string":{"connect.index":1,"oneOf":[{"type":"null"},"#,
            r#"{"type":"string","default":"default-string"}]},"#,
            r#""int8":{"type":"integer","connect.index":0,"connect.type":"int8"}}}"#
        )
    );
    let mut value = Struct::new(Arc::clone(&schema));
    value.put("int8", Value::Int8(12)).unwrap();
    let value = Value::Struct(value);
    assert_eq!(json(&data, &schema, &value), r#"{"int8":12,"string":null}"#);
    // By default the null field is written as its default.
    assert_eq!(
        json(&JsonSchemaData::default(), &schema, &value),
        r#"{"int8":12,"string":"default-string"}"#
    );
}

#[test]
fn a_singleton_union_is_flattened_unless_configured_otherwise() {
    // JsonSchemaDataTest.testToConnectSingletonUnion.
    let text = r#"{"oneOf":[{"type":"string"}]}"#;
    let (schema, value) = read(&data(), text, r#""bar""#);
    assert_eq!(*schema, prim(Type::String));
    assert_eq!(value, Value::String("bar".into()));
    let kept = JsonSchemaData::new(JsonSchemaDataConfig {
        flatten_singleton_unions: false,
        ..JsonSchemaDataConfig::default()
    });
    let (schema, _) = read(&kept, text, r#""bar""#);
    assert_eq!(schema.name.as_deref(), Some(JSON_TYPE_ONE_OF));
    assert_eq!(schema.fields.len(), 1);
}

/// `allOf`, as the `*InAllOf` and `testCombinedSchema*` cases of Confluent's
/// JsonSchemaDataTest read it (there built as everit objects; here as the JSON everit
/// loads them from).
#[test]
fn all_of_reads_as_confluent_reads_it() {
    let data = data();
    let read_schema = |text: &str| data.to_connect_schema(text, None).unwrap();
    let enum_params = |symbols: &[&str]| {
        symbols.iter().fold(
            prim(Type::String).with_parameter(JSON_TYPE_ENUM, ""),
            |schema, symbol| schema.with_parameter(format!("{JSON_TYPE_ENUM}.{symbol}"), *symbol),
        )
    };
    // testToConnectEnumInAllOf
    assert_eq!(
        *read_schema(r#"{"allOf":[{"type":"string"},{"enum":["one","two","three"]}]}"#),
        enum_params(&["one", "two", "three"])
    );
    // testToConnectIntEnumInAllOfIsValid
    assert_eq!(
        *read_schema(r#"{"allOf":[{"type":"number"},{"enum":[1,2,3]}]}"#),
        prim(Type::Float64)
    );
    // testToConnectStringConstInAllOf, ...IntegerConst..., ...NumberConst...
    assert_eq!(
        *read_schema(r#"{"const":"money","type":"string"}"#),
        prim(Type::String)
    );
    assert_eq!(
        *read_schema(r#"{"const":123,"type":"integer"}"#),
        prim(Type::Int64)
    );
    assert_eq!(
        *read_schema(r#"{"const":123.45,"type":"number"}"#),
        prim(Type::Float64)
    );
    // testToConnectReferenceInAllOf
    assert_eq!(
        *read_schema(
            r##"{"allOf":[{"$ref":"#/definitions/n"}],
                "definitions":{"n":{"type":"integer","connect.type":"int64"}}}"##
        ),
        prim(Type::Int64)
    );
    // testToConnectUnionEnumInAllOfIsValid
    let union = read_schema(
        r#"{"allOf":[{"oneOf":[{"type":"integer","connect.type":"int8"},
                               {"type":"integer","connect.type":"int16"}]},
                     {"enum":[1,2,3]}]}"#,
    );
    assert_eq!(
        *union,
        Schema::new(Type::Struct)
            .named(JSON_TYPE_ONE_OF)
            .field(
                format!("{JSON_TYPE_ONE_OF}.field.0"),
                prim(Type::Int8).optional()
            )
            .field(
                format!("{JSON_TYPE_ONE_OF}.field.1"),
                prim(Type::Int16).optional()
            )
    );
    // testCombinedSchemaAllOfRef: the object's properties and both references'.
    let message = read_schema(
        r##"{"$schema":"http://json-schema.org/draft-07/schema#",
            "allOf":[{"$ref":"#/definitions/MessageBase"},{"$ref":"#/definitions/MessageBase2"}],
            "title":"IdentifyUserMessage","description":"An IdentifyUser message","type":"object",
            "properties":{"prevUserId":{"type":"string"},"newUserId":{"type":"string"}},
            "definitions":{
              "MessageBase":{"properties":{"id":{"type":"string"},"type":{"type":"string"}}},
              "MessageBase2":{"properties":{"id2":{"type":"string"}}}}}"##,
    );
    for name in ["id", "type", "id2", "newUserId", "prevUserId"] {
        assert_eq!(
            message.get_field(name).map(|f| (*f.schema).clone()),
            Some(prim(Type::String)),
            "{name}"
        );
    }
    assert_eq!(message.fields.len(), 5);
    // testCombinedSchemaTitleAndObject: an object beside anyOf is the anyOf's union.
    let product = read_schema(
        r#"{"title":"Product Identifier","type":"object","anyOf":[
              {"type":"object","properties":{"keycode":{"type":"string"}}},
              {"type":"object","properties":{"itemCode":{"type":"string"}}}]}"#,
    );
    assert_eq!(product.name.as_deref(), Some(JSON_TYPE_ONE_OF));
    // A value reads into the allOf's struct.
    let schema = read_schema(
        r##"{"allOf":[{"$ref":"#/definitions/Base"},
                      {"type":"object","properties":{"extra":{"type":"string"}}}],
            "definitions":{"Base":{"type":"object","properties":{"id":{"type":"integer"}},
                                   "required":["id"]}}}"##,
    );
    let node = jackson::read_tree(br#"{"id":5,"extra":"e"}"#).unwrap();
    let value = data.to_connect_data(Some(&schema), Some(&node)).unwrap();
    assert_eq!(value.as_struct().unwrap().get("id"), Some(&Value::Int64(5)));
    assert_eq!(
        value.as_struct().unwrap().get("extra"),
        Some(&Value::String("e".into()))
    );
}
