//! The JsonConverter against Kafka's own cases: most inputs and expected values come from
//! Kafka's `JsonConverterTest` (connect/json/src/test/java/org/apache/kafka/connect/json/),
//! which compares parsed JSON; the exact bytes asserted here are what Kafka's
//! `asJsonSchema` and Jackson write for them (member order as Kafka builds the nodes).

use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::Props;

const TOPIC: &str = "topic";

fn converter(props: &[(&str, &str)]) -> JsonConverter {
    try_converter(props).expect("valid settings")
}

fn try_converter(props: &[(&str, &str)]) -> Result<JsonConverter, ConfigError> {
    let props: Props = props
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    JsonConverter::new(JsonConverterConfig::parse(&Settings::new(
        &props,
        "value.converter",
    ))?)
}

fn write(c: &JsonConverter, schema: Option<Schema>, value: Value) -> String {
    let schema = schema.map(Arc::new);
    let bytes = c
        .from_connect(TOPIC, schema.as_ref(), &value)
        .expect("converts")
        .expect("not a tombstone");
    String::from_utf8(bytes).expect("UTF-8")
}

fn read(c: &JsonConverter, json: &str) -> (Option<Schema>, Value) {
    let (schema, value) = c
        .to_connect(TOPIC, Some(json.as_bytes()))
        .expect("converts");
    (schema.map(Arc::unwrap_or_clone), value)
}

fn read_error(c: &JsonConverter, json: &str) -> String {
    c.to_connect(TOPIC, Some(json.as_bytes())).unwrap_err().0
}

fn s(text: &str) -> Value {
    Value::String(text.into())
}

fn prim(ty: Type) -> Schema {
    Schema::new(ty)
}

fn structure(schema: &SchemaRef, values: &[(&str, Value)]) -> Value {
    let mut result = Struct::new(Arc::clone(schema));
    for (name, value) in values {
        result.put(name, value.clone()).unwrap();
    }
    Value::Struct(result)
}

#[test]
fn every_type_is_written_as_kafka_writes_it() {
    let c = converter(&[]);
    let int_array = Schema::array(prim(Type::Int32));
    let string_map = Schema::map(prim(Type::String), prim(Type::Int32));
    let int_map = Schema::map(prim(Type::Int32), prim(Type::Int32));
    let cases: Vec<(Schema, Value, &str)> = vec![
        (
            prim(Type::Boolean),
            Value::Boolean(true),
            r#"{"schema":{"type":"boolean","optional":false},"payload":true}"#,
        ),
        (
            prim(Type::Int8),
            Value::Int8(12),
            r#"{"schema":{"type":"int8","optional":false},"payload":12}"#,
        ),
        (
            prim(Type::Int16),
            Value::Int16(12),
            r#"{"schema":{"type":"int16","optional":false},"payload":12}"#,
        ),
        (
            prim(Type::Int32),
            Value::Int32(12),
            r#"{"schema":{"type":"int32","optional":false},"payload":12}"#,
        ),
        (
            prim(Type::Int64),
            Value::Int64(4398046511104),
            r#"{"schema":{"type":"int64","optional":false},"payload":4398046511104}"#,
        ),
        (
            prim(Type::Float32),
            Value::Float32(12.34),
            r#"{"schema":{"type":"float","optional":false},"payload":12.34}"#,
        ),
        (
            prim(Type::Float64),
            Value::Float64(12.34),
            r#"{"schema":{"type":"double","optional":false},"payload":12.34}"#,
        ),
        (
            prim(Type::Float64),
            Value::Float64(1e10),
            r#"{"schema":{"type":"double","optional":false},"payload":1.0E10}"#,
        ),
        (
            prim(Type::Bytes),
            Value::Bytes(b"test-string".to_vec()),
            r#"{"schema":{"type":"bytes","optional":false},"payload":"dGVzdC1zdHJpbmc="}"#,
        ),
        (
            prim(Type::String),
            s("test-string"),
            r#"{"schema":{"type":"string","optional":false},"payload":"test-string"}"#,
        ),
        (
            int_array,
            Value::Array(vec![Value::Int32(1), Value::Int32(2), Value::Int32(3)]),
            r#"{"schema":{"type":"array","items":{"type":"int32","optional":false},"optional":false},"payload":[1,2,3]}"#,
        ),
        (
            string_map,
            Value::Map(vec![
                (s("key1"), Value::Int32(12)),
                (s("key2"), Value::Int32(15)),
            ]),
            r#"{"schema":{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int32","optional":false},"optional":false},"payload":{"key1":12,"key2":15}}"#,
        ),
        (
            int_map,
            Value::Map(vec![
                (Value::Int32(1), Value::Int32(12)),
                (Value::Int32(2), Value::Int32(15)),
            ]),
            r#"{"schema":{"type":"map","keys":{"type":"int32","optional":false},"values":{"type":"int32","optional":false},"optional":false},"payload":[[1,12],[2,15]]}"#,
        ),
        (
            Schema::decimal(2),
            Value::Bytes(vec![0, 0x9c]),
            r#"{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":"AJw="}"#,
        ),
        (
            Schema::date(),
            Value::Int32(10000),
            r#"{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1},"payload":10000}"#,
        ),
        (
            Schema::time(),
            Value::Int32(14400000),
            r#"{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time","version":1},"payload":14400000}"#,
        ),
        (
            Schema::timestamp(),
            Value::Int64(4000000000),
            r#"{"schema":{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1},"payload":4000000000}"#,
        ),
        (
            prim(Type::Boolean)
                .named("bool")
                .with_version(3)
                .with_doc("the documentation")
                .with_parameter("foo", "bar"),
            Value::Boolean(true),
            r#"{"schema":{"type":"boolean","optional":false,"name":"bool","version":3,"doc":"the documentation","parameters":{"foo":"bar"}},"payload":true}"#,
        ),
        (
            // Parameters in the order they were set (SchemaBuilder's LinkedHashMap), as
            // Debezium's column parameters come out of Kafka's JsonConverter.
            prim(Type::String)
                .with_parameter("__debezium.source.column.type", "VARCHAR")
                .with_parameter("__debezium.source.column.length", "255")
                .with_parameter("__debezium.source.column.name", "email"),
            Value::String("a@b".into()),
            r#"{"schema":{"type":"string","optional":false,"parameters":{"__debezium.source.column.type":"VARCHAR","__debezium.source.column.length":"255","__debezium.source.column.name":"email"}},"payload":"a@b"}"#,
        ),
        (
            prim(Type::Boolean).with_default(Value::Boolean(true)),
            Value::Boolean(true),
            r#"{"schema":{"type":"boolean","optional":false,"default":true},"payload":true}"#,
        ),
        (
            prim(Type::Boolean).optional(),
            Value::Null,
            r#"{"schema":{"type":"boolean","optional":true},"payload":null}"#,
        ),
    ];
    for (schema, value, expected) in cases {
        assert_eq!(write(&c, Some(schema.clone()), value.clone()), expected);
        // And back.
        let (read_schema, read_value) = read(&c, expected);
        assert_eq!(read_schema.as_ref(), Some(&schema), "{expected}");
        assert_eq!(read_value, value, "{expected}");
    }
}

#[test]
fn structs_are_written_with_field_last_in_each_field() {
    // structToJson
    let c = converter(&[]);
    let schema: SchemaRef = Arc::new(
        Schema::new(Type::Struct)
            .field("field1", prim(Type::Boolean))
            .field("field2", prim(Type::String))
            .field("field3", prim(Type::String))
            .field("field4", prim(Type::Boolean)),
    );
    let value = structure(
        &schema,
        &[
            ("field1", Value::Boolean(true)),
            ("field2", s("string2")),
            ("field3", s("string3")),
            ("field4", Value::Boolean(false)),
        ],
    );
    let expected = concat!(
        r#"{"schema":{"type":"struct","fields":[{"type":"boolean","optional":false,"field":"field1"},"#,
        r#"{"type":"string","optional":false,"field":"field2"},{"type":"string","optional":false,"field":"field3"},"#,
        r#"{"type":"boolean","optional":false,"field":"field4"}],"optional":false},"#,
        r#""payload":{"field1":true,"field2":"string2","field3":"string3","field4":false}}"#
    );
    assert_eq!(write(&c, Some((*schema).clone()), value.clone()), expected);
    assert_eq!(read(&c, expected), (Some((*schema).clone()), value));

    // A struct whose schema is another, equal schema is fine (structSchemaIdentical); a
    // different one is not.
    let other: SchemaRef = Arc::new(Schema::new(Type::Struct).field("x", prim(Type::Int32)));
    let mismatched = structure(&other, &[("x", Value::Int32(1))]);
    assert_eq!(
        c.from_connect(TOPIC, Some(&schema), &mismatched)
            .unwrap_err()
            .0,
        "Mismatching schema."
    );
}

#[test]
fn nulls_become_defaults_unless_told_otherwise() {
    // serializeNullToDefault / serializeNullToNull / deserializeNullToDefault /
    // deserializeNullToNull and their field variants.
    let schema = prim(Type::String).optional().with_default(s("default"));
    let struct_schema: SchemaRef =
        Arc::new(Schema::new(Type::Struct).field("field1", schema.clone()));
    let replacing = converter(&[(REPLACE_NULL_WITH_DEFAULT_CONFIG, "true")]);
    let keeping = converter(&[(REPLACE_NULL_WITH_DEFAULT_CONFIG, "false")]);

    assert_eq!(
        write(&replacing, Some(schema.clone()), Value::Null),
        r#"{"schema":{"type":"string","optional":true,"default":"default"},"payload":"default"}"#
    );
    assert_eq!(
        write(&keeping, Some(schema.clone()), Value::Null),
        r#"{"schema":{"type":"string","optional":true,"default":"default"},"payload":null}"#
    );
    let field_null = Value::Struct(Struct::new(Arc::clone(&struct_schema)));
    assert_eq!(
        write(
            &replacing,
            Some((*struct_schema).clone()),
            field_null.clone()
        ),
        r#"{"schema":{"type":"struct","fields":[{"type":"string","optional":true,"default":"default","field":"field1"}],"optional":false},"payload":{"field1":"default"}}"#
    );
    let written = write(&keeping, Some((*struct_schema).clone()), field_null.clone());
    assert_eq!(
        written,
        r#"{"schema":{"type":"struct","fields":[{"type":"string","optional":true,"default":"default","field":"field1"}],"optional":false},"payload":{"field1":null}}"#
    );

    let envelope =
        r#"{"schema":{"type":"string","optional":true,"default":"default"},"payload":null}"#;
    assert_eq!(read(&replacing, envelope).1, s("default"));
    assert_eq!(read(&keeping, envelope).1, Value::Null);
    assert_eq!(
        read(&replacing, &written).1,
        structure(&struct_schema, &[("field1", s("default"))])
    );
    assert_eq!(read(&keeping, &written).1, field_null);
}

#[test]
fn decimals_follow_decimal_format() {
    // decimalToNumericJson, decimalWithTrailingZerosToNumericJson
    let numeric = converter(&[(DECIMAL_FORMAT_CONFIG, "numeric")]);
    assert_eq!(
        write(
            &numeric,
            Some(Schema::decimal(2)),
            Value::Bytes(vec![0, 0x9c])
        ),
        r#"{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":1.56}"#
    );
    // 15600 at scale 4
    assert_eq!(
        write(
            &numeric,
            Some(Schema::decimal(4)),
            Value::Bytes(vec![0x3c, 0xf0])
        ),
        r#"{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"4"}},"payload":1.5600}"#
    );
    // Negative, tiny and non-minimal bytes print as BigDecimal does.
    assert_eq!(
        write(
            &numeric,
            Some(Schema::decimal(9)),
            Value::Bytes(vec![0xff, 0xff, 0xff])
        ),
        r#"{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"9"}},"payload":-1E-9}"#
    );
    let base64 = converter(&[]);
    assert!(
        write(
            &base64,
            Some(Schema::decimal(2)),
            Value::Bytes(vec![0, 0, 0x9c])
        )
        .ends_with(r#""payload":"AJw="}"#)
    );

    // decimalToConnect, numericDecimalToConnect, numericDecimalWithTrailingZerosToConnect,
    // highPrecisionNumericDecimalToConnect: every form reads as the unscaled bytes.
    let envelope = |scale: i32, payload: &str| {
        format!(
            r#"{{ "schema": {{ "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, "parameters": {{ "scale": "{scale}" }} }}, "payload": {payload} }}"#
        )
    };
    assert_eq!(
        read(&base64, &envelope(2, "\"AJw=\"")),
        (Some(Schema::decimal(2)), Value::Bytes(vec![0, 0x9c]))
    );
    assert_eq!(
        read(&base64, &envelope(2, "1.56")).1,
        Value::Bytes(vec![0, 0x9c])
    );
    assert_eq!(
        read(&base64, &envelope(4, "1.5600")).1,
        Value::Bytes(vec![0x3c, 0xf0])
    );
    assert_eq!(
        read(&base64, &envelope(2, "1.5")).1,
        Value::Bytes(vec![0, 0x96])
    );
    let high = read(&base64, &envelope(17, "1.23456789123456789")).1;
    let Value::Bytes(high) = high else {
        panic!("bytes")
    };
    assert_eq!(
        BigInteger::from_twos_complement(&high)
            .unwrap()
            .to_java_string(),
        "123456789123456789"
    );
    // decimalToConnectWithDefaultValue, decimalToConnectOptionalWithDefaultValue
    let (schema, value) = read(
        &base64,
        r#"{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, "optional": true, "default": "AJw=", "parameters": { "scale": "2" } }, "payload": null }"#,
    );
    assert_eq!(
        schema,
        Some(
            Schema::decimal(2)
                .optional()
                .with_default(Value::Bytes(vec![0, 0x9c]))
        )
    );
    assert_eq!(value, Value::Bytes(vec![0, 0x9c]));

    assert_eq!(
        read_error(&base64, &envelope(1, "1.55")),
        "Decimal value has mismatching scale for given Decimal schema. Schema has scale 1, value has scale 2."
    );
    assert_eq!(
        read_error(&base64, &envelope(2, "true")),
        "Invalid type for Decimal, underlying representation should be numeric or bytes but was BOOLEAN"
    );
    assert!(
        read_error(&base64, &envelope(2, "\"!!\""))
            .starts_with("Invalid bytes for Decimal field: ")
    );
    // decimalToJsonWithoutSchema: without a schema, bytes are only bytes.
    assert_eq!(
        c_err(&base64, Schema::decimal(2), s("1.56")),
        "Invalid type for Decimal, expected BigDecimal but was class java.lang.String"
    );
}

fn c_err(c: &JsonConverter, schema: Schema, value: Value) -> String {
    c.from_connect(TOPIC, Some(&Arc::new(schema)), &value)
        .unwrap_err()
        .0
}

#[test]
fn logical_types_read_with_their_defaults() {
    let c = converter(&[]);
    // dateToConnectWithDefaultValue, timeToConnectOptionalWithDefaultValue,
    // timestampToConnectOptionalWithDefaultValue
    let cases = [
        (
            r#"{ "schema": { "type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1, "default": 0 }, "payload": null }"#,
            Schema::date().with_default(Value::Int32(0)),
            Value::Int32(0),
        ),
        (
            r#"{ "schema": { "type": "int32", "name": "org.apache.kafka.connect.data.Time", "version": 1, "optional": true, "default": 0 }, "payload": null }"#,
            Schema::time().optional().with_default(Value::Int32(0)),
            Value::Int32(0),
        ),
        (
            r#"{ "schema": { "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1,  "optional": true, "default": 42 }, "payload": null }"#,
            Schema::timestamp()
                .optional()
                .with_default(Value::Int64(42)),
            Value::Int64(42),
        ),
        (
            r#"{ "schema": { "type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1, "optional": true }, "payload": null }"#,
            Schema::date().optional(),
            Value::Null,
        ),
    ];
    for (json, schema, value) in cases {
        assert_eq!(read(&c, json), (Some(schema), value), "{json}");
    }
    let errors = [
        (
            r#"{"schema":{"type":"int32","name":"org.apache.kafka.connect.data.Date"},"payload":1.5}"#,
            "Invalid type for Date, underlying representation should be integer but was NUMBER",
        ),
        (
            r#"{"schema":{"type":"int32","name":"org.apache.kafka.connect.data.Time"},"payload":86400001}"#,
            "Time values must use number of milliseconds greater than 0 and less than 86400000",
        ),
        (
            r#"{"schema":{"type":"int64","name":"org.apache.kafka.connect.data.Timestamp"},"payload":"x"}"#,
            "Invalid type for Timestamp, underlying representation should be integral but was STRING",
        ),
    ];
    for (json, message) in errors {
        assert_eq!(read_error(&c, json), message);
    }
    assert_eq!(
        c_err(&c, Schema::time(), Value::Int32(-1)),
        "Kafka Connect Time type should not have any date fields set to non-zero values."
    );
    assert_eq!(
        c_err(&c, Schema::timestamp(), Value::Int32(1)),
        "Invalid type for Timestamp, expected Date but was class java.lang.Integer"
    );
}

#[test]
fn kafka_reading_cases_read_the_same() {
    let c = converter(&[]);
    let optional_struct: SchemaRef = Arc::new(
        Schema::new(Type::Struct)
            .field("optional", prim(Type::String).optional())
            .field("required", prim(Type::String)),
    );
    let cases: Vec<(&str, Schema, Value)> = vec![
        // testConnectSchemaMetadataTranslation
        (
            r#"{ "schema": { "type": "boolean", "optional": false, "name": "bool", "version": 2, "doc": "the documentation", "parameters": { "foo": "bar" }}, "payload": true }"#,
            prim(Type::Boolean)
                .named("bool")
                .with_version(2)
                .with_doc("the documentation")
                .with_parameter("foo", "bar"),
            Value::Boolean(true),
        ),
        (
            r#"{ "schema": { "type": "boolean", "default": true }, "payload": null }"#,
            prim(Type::Boolean).with_default(Value::Boolean(true)),
            Value::Boolean(true),
        ),
        // numberWithLeadingZerosToConnect
        (
            r#"{ "schema": { "type": "int8" }, "payload": 0012 }"#,
            prim(Type::Int8),
            Value::Int8(12),
        ),
        (
            r#"{ "schema": { "type": "int16" }, "payload": 000123 }"#,
            prim(Type::Int16),
            Value::Int16(123),
        ),
        (
            r#"{ "schema": { "type": "int32" }, "payload": 000012345 }"#,
            prim(Type::Int32),
            Value::Int32(12345),
        ),
        (
            r#"{ "schema": { "type": "int64" }, "payload": 00000123456789 }"#,
            prim(Type::Int64),
            Value::Int64(123456789),
        ),
        (
            r#"{ "schema": { "type": "float" }, "payload": 12.34 }"#,
            prim(Type::Float32),
            Value::Float32(12.34),
        ),
        (
            r#"{ "schema": { "type": "double" }, "payload": 12.34 }"#,
            prim(Type::Float64),
            Value::Float64(12.34),
        ),
        (
            r#"{ "schema": { "type": "bytes" }, "payload": "dGVzdC1zdHJpbmc=" }"#,
            prim(Type::Bytes),
            Value::Bytes(b"test-string".to_vec()),
        ),
        // structWithOptionalFieldToConnect
        (
            r#"{ "schema": { "type": "struct", "fields": [{ "field":"optional", "type": "string", "optional": true }, {  "field": "required", "type": "string" }] }, "payload": { "required": "required" } }"#,
            (*optional_struct).clone(),
            structure(&optional_struct, &[("required", s("required"))]),
        ),
        // Jackson's leniency: a number read as a string is null, text read as a number 0,
        // an int8 keeps the low bits.
        (
            r#"{"schema":{"type":"string","optional":true},"payload":12}"#,
            prim(Type::String).optional(),
            Value::Null,
        ),
        (
            r#"{"schema":{"type":"int32"},"payload":"12"}"#,
            prim(Type::Int32),
            Value::Int32(0),
        ),
        (
            r#"{"schema":{"type":"int8"},"payload":300}"#,
            prim(Type::Int8),
            Value::Int8(44),
        ),
        (
            r#"{"schema":{"type":"int32"},"payload":12.9}"#,
            prim(Type::Int32),
            Value::Int32(12),
        ),
    ];
    for (json, schema, value) in cases {
        assert_eq!(read(&c, json), (Some(schema), value), "{json}");
    }
    // mapToConnectNonStringKeys, with a repeated key replacing the earlier value.
    let (_, map) = read(
        &c,
        r#"{ "schema": { "type": "map", "keys": { "type" : "int32" }, "values": { "type" : "int32" } }, "payload": [ [1, 12], [2, 15], [1, 13] ] }"#,
    );
    assert_eq!(
        map,
        Value::Map(vec![
            (Value::Int32(1), Value::Int32(13)),
            (Value::Int32(2), Value::Int32(15))
        ])
    );
}

#[test]
fn schemaless_json_reads_with_json_types() {
    // nullSchemaPrimitiveToConnect
    let c = converter(&[]);
    let cases = [
        (r#"{ "schema": null, "payload": null }"#, Value::Null),
        (
            r#"{ "schema": null, "payload": true }"#,
            Value::Boolean(true),
        ),
        (r#"{ "schema": null, "payload": 12 }"#, Value::Int64(12)),
        (
            r#"{ "schema": null, "payload": 12.24 }"#,
            Value::Float64(12.24),
        ),
        (
            r#"{ "schema": null, "payload": "a string" }"#,
            s("a string"),
        ),
        (
            r#"{ "schema": null, "payload": [1, "2", 3] }"#,
            Value::Array(vec![Value::Int64(1), s("2"), Value::Int64(3)]),
        ),
        (
            r#"{ "schema": null, "payload": { "field1": 1, "field2": 2} }"#,
            Value::Map(vec![
                (s("field1"), Value::Int64(1)),
                (s("field2"), Value::Int64(2)),
            ]),
        ),
    ];
    for (json, value) in cases {
        assert_eq!(read(&c, json), (None, value), "{json}");
    }

    let plain = converter(&[(SCHEMAS_ENABLE_CONFIG, "false")]);
    // noSchemaToConnect, schemalessWithEmptyFieldValueToConnect, emptyBytesToConnect
    assert_eq!(read(&plain, "true"), (None, Value::Boolean(true)));
    assert_eq!(
        read(&plain, r#"{ "a": "", "b": null}"#),
        (
            None,
            Value::Map(vec![(s("a"), s("")), (s("b"), Value::Null)])
        )
    );
    assert_eq!(read(&plain, ""), (None, Value::Null));
    assert_eq!(plain.to_connect(TOPIC, None), Ok((None, Value::Null)));
    // noSchemaToJson, nullValueToJson, nullSchemaAndNullValueToJson
    assert_eq!(write(&plain, None, Value::Boolean(true)), "true");
    assert_eq!(plain.from_connect(TOPIC, None, &Value::Null), Ok(None));
    assert_eq!(c.from_connect(TOPIC, None, &Value::Null), Ok(None));
    // A schema and a null value is JSON null, not a tombstone.
    assert_eq!(
        write(&plain, Some(prim(Type::Int32).optional()), Value::Null),
        "null"
    );

    // nullSchemaAndPrimitiveToJson, nullSchemaAndArrayToJson, nullSchemaAndMapToJson,
    // nullSchemaAndMapNonStringKeysToJson
    assert_eq!(
        write(&c, None, Value::Boolean(true)),
        r#"{"schema":null,"payload":true}"#
    );
    assert_eq!(
        write(
            &c,
            None,
            Value::Array(vec![Value::Int32(1), s("string"), Value::Boolean(true)])
        ),
        r#"{"schema":null,"payload":[1,"string",true]}"#
    );
    assert_eq!(
        write(
            &c,
            None,
            Value::Map(vec![
                (s("key1"), Value::Int32(12)),
                (s("key2"), s("string")),
                (s("key3"), Value::Boolean(true))
            ])
        ),
        r#"{"schema":null,"payload":{"key1":12,"key2":"string","key3":true}}"#
    );
    assert_eq!(
        write(
            &c,
            None,
            Value::Map(vec![
                (s("string"), Value::Int32(12)),
                (Value::Int32(52), s("string")),
                (Value::Boolean(false), Value::Boolean(true)),
            ])
        ),
        r#"{"schema":null,"payload":[["string",12],[52,"string"],[false,true]]}"#
    );
}

#[test]
fn bad_input_fails_with_kafka_texts() {
    let c = converter(&[]);
    let envelope_required = "JsonConverter with schemas.enable requires \"schema\" and \"payload\" fields and may not contain additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration.";
    for json in [
        r#"{"a":1}"#,
        r#"{"schema":null}"#,
        r#"{"schema":null,"payload":1,"x":2}"#,
        "[]",
        "12",
        "",
    ] {
        assert_eq!(read_error(&c, json), envelope_required, "{json}");
    }
    assert!(read_error(&c, "{").starts_with(
        "Converting byte[] to Kafka Connect data failed due to serialization error: "
    ));
    let errors = [
        (
            r#"{"schema":{},"payload":1}"#,
            "Schema must contain 'type' field",
        ),
        (
            r#"{"schema":{"type":"nope"},"payload":1}"#,
            "Unknown schema type: nope",
        ),
        (
            r#"{"schema":{"type":"array"},"payload":[]}"#,
            "Array schema did not specify the element type",
        ),
        (
            r#"{"schema":{"type":"map","values":{"type":"int8"}},"payload":{}}"#,
            "Map schema did not specify the key type",
        ),
        (
            r#"{"schema":{"type":"struct"},"payload":{}}"#,
            "Struct schema's \"fields\" argument is not an array.",
        ),
        (
            r#"{"schema":{"type":"struct","fields":[{"type":"int8"}]},"payload":{}}"#,
            "Struct schema's field name not specified properly",
        ),
        (
            r#"{"schema":{"type":"struct","fields":[{"type":"int8","field":"a"},{"type":"int8","field":"a"}]},"payload":{}}"#,
            "Cannot create field because of field name duplication a",
        ),
        (
            r#"{"schema":{"type":"int8","parameters":{"a":1}},"payload":1}"#,
            "Schema parameters must have string values.",
        ),
        (
            r#"{"schema":{"type":"int8"},"payload":null}"#,
            "Invalid null value for required INT8 field",
        ),
        (
            r#"{"schema":{"type":"struct","fields":[]},"payload":[]}"#,
            "Structs should be encoded as JSON objects, but found ARRAY",
        ),
        (
            r#"{"schema":{"type":"struct","fields":[{"type":"string","field":"a"}]},"payload":{"a":1}}"#,
            "Invalid value: null used for required field: \"a\", schema type: STRING",
        ),
        (
            r#"{"schema":{"type":"map","keys":{"type":"string"},"values":{"type":"int8"}},"payload":[]}"#,
            "Maps with string fields should be encoded as JSON objects, but found ARRAY",
        ),
        (
            r#"{"schema":{"type":"map","keys":{"type":"int8"},"values":{"type":"int8"}},"payload":{}}"#,
            "Maps with non-string fields should be encoded as JSON array of tuples, but found OBJECT",
        ),
        (
            r#"{"schema":{"type":"map","keys":{"type":"int8"},"values":{"type":"int8"}},"payload":[1]}"#,
            "Found invalid map entry instead of array tuple: NUMBER",
        ),
        (
            r#"{"schema":{"type":"map","keys":{"type":"int8"},"values":{"type":"int8"}},"payload":[[1]]}"#,
            "Found invalid map entry, expected length 2 but found :1",
        ),
        (
            r#"{"schema":{"type":"struct","fields":[{"type":"int8","field":"a"}],"default":{"a":1}},"payload":null}"#,
            "Invalid default value: Struct schemas do not match.",
        ),
    ];
    for (json, message) in errors {
        assert_eq!(read_error(&c, json), message, "{json}");
    }
    assert!(
        read_error(&c, r#"{"schema":{"type":"bytes"},"payload":"%%"}"#)
            .starts_with("Invalid bytes field: ")
    );

    // mismatchSchemaJson and the other writing errors.
    assert_eq!(
        c_err(&c, prim(Type::Float64), Value::Boolean(true)),
        "Invalid type for FLOAT64: class java.lang.Boolean"
    );
    assert_eq!(
        c_err(&c, prim(Type::Bytes), s("x")),
        "Invalid type for bytes type: class java.lang.String"
    );
    assert_eq!(
        c_err(&c, prim(Type::Int32), Value::Null),
        "Conversion error: null value for field that is required and has no default value"
    );
    let schemaless_struct = structure(
        &Arc::new(Schema::new(Type::Struct).field("a", prim(Type::Int8))),
        &[("a", Value::Int8(1))],
    );
    assert_eq!(
        c.from_connect(TOPIC, None, &schemaless_struct)
            .unwrap_err()
            .0,
        "Mismatching schema."
    );
    assert_eq!(
        c_err(
            &c,
            Schema::decimal(2).with_parameter("scale", "x"),
            Value::Bytes(vec![1])
        ),
        "Invalid scale parameter found in Decimal schema: For input string: \"x\""
    );
}

#[test]
fn settings_are_checked_with_kafka_texts() {
    let error = try_converter(&[
        (SCHEMAS_ENABLE_CONFIG, "maybe"),
        (DECIMAL_FORMAT_CONFIG, "hex"),
        (SCHEMAS_CACHE_SIZE_CONFIG, "many"),
    ])
    .unwrap_err();
    assert_eq!(
        error.errors,
        vec![
            (
                "value.converter.schemas.enable".to_string(),
                "Invalid value maybe for configuration schemas.enable: Expected value to be either true or false".to_string()
            ),
            (
                "value.converter.schemas.cache.size".to_string(),
                "Invalid value many for configuration schemas.cache.size: Not a number of type INT".to_string()
            ),
            (
                "value.converter.decimal.format".to_string(),
                "Invalid value hex for configuration decimal.format: String must be one of (case insensitive): BASE64, NUMERIC".to_string()
            ),
        ]
    );
    assert_eq!(
        try_converter(&[(SCHEMA_CONTENT_CONFIG, r#"{"type":"nope"}"#)])
            .unwrap_err()
            .errors,
        vec![(
            "value.converter.schema.content".to_string(),
            "Unknown schema type: nope".to_string()
        )]
    );
}

#[test]
fn schema_content_reads_bare_payloads() {
    let c = converter(&[(
        SCHEMA_CONTENT_CONFIG,
        r#"{"type":"struct","fields":[{"field":"id","type":"int64"},{"field":"name","type":"string","optional":true}]}"#,
    )]);
    let schema: SchemaRef = Arc::new(
        Schema::new(Type::Struct)
            .field("id", prim(Type::Int64))
            .field("name", prim(Type::String).optional()),
    );
    assert_eq!(
        read(&c, r#"{"id":7,"name":"x","other":true}"#),
        (
            Some((*schema).clone()),
            structure(&schema, &[("id", Value::Int64(7)), ("name", s("x"))])
        )
    );
    // Writing still uses the envelope.
    assert!(write(&c, Some(prim(Type::Int8)), Value::Int8(1)).starts_with(r#"{"schema":"#));
    // Without schemas.enable the content is not used.
    let plain = converter(&[
        (SCHEMAS_ENABLE_CONFIG, "false"),
        (SCHEMA_CONTENT_CONFIG, "not json"),
    ]);
    assert_eq!(read(&plain, "1"), (None, Value::Int64(1)));
}

#[test]
fn envelope_schemas_are_cached_up_to_the_bound() {
    // testCacheSchemaToConnectConversion
    let c = converter(&[(SCHEMAS_CACHE_SIZE_CONFIG, "2")]);
    read(
        &c,
        r#"{ "schema": { "type": "boolean" }, "payload": true }"#,
    );
    read(
        &c,
        r#"{ "schema": { "type": "boolean" }, "payload": true }"#,
    );
    assert_eq!(c.cache().len(), 1);
    read(
        &c,
        r#"{ "schema": { "type": "boolean", "optional": true }, "payload": true }"#,
    );
    read(
        &c,
        r#"{ "schema": { "type": "boolean", "optional": false }, "payload": true }"#,
    );
    assert_eq!(c.cache().len(), 2);
}

/// Connect schemas whose values survive JSON unchanged: no struct defaults (Kafka refuses
/// them when reading), no NaN (Jackson writes it as a string) nor -0.0 (a `BigDecimal`
/// has no negative zero), distinct map keys.
fn schema_strategy() -> impl Strategy<Value = Schema> {
    let leaf = prop_oneof![
        Just(prim(Type::Int8)),
        Just(prim(Type::Int16)),
        Just(prim(Type::Int32)),
        Just(prim(Type::Int64)),
        Just(prim(Type::Float32)),
        Just(prim(Type::Float64)),
        Just(prim(Type::Boolean)),
        Just(prim(Type::String)),
        Just(prim(Type::Bytes)),
        (0..6i32).prop_map(Schema::decimal),
        Just(Schema::date()),
        Just(Schema::time()),
        Just(Schema::timestamp()),
    ];
    let leaf = (
        leaf,
        any::<bool>(),
        proptest::option::of("[a-z.]{1,8}"),
        proptest::option::of(1..5i32),
        proptest::option::of("\\PC{0,8}"),
    )
        .prop_map(|(mut schema, optional, name, version, doc)| {
            schema.optional = optional;
            if schema.name.is_none() {
                schema.name = name;
                schema.version = version;
            }
            schema.doc = doc;
            schema
        });
    // Some leaves have a default (written in the schema, read back from it).
    let leaf = leaf
        .prop_flat_map(|schema| {
            let default =
                proptest::option::weighted(0.3, present_value_strategy(Arc::new(schema.clone())));
            (Just(schema), default)
        })
        .prop_map(|(mut schema, default)| {
            schema.default = default;
            schema
        });
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (inner.clone(), any::<bool>()).prop_map(|(element, optional)| {
                let mut schema = Schema::array(element);
                schema.optional = optional;
                schema
            }),
            (
                prop_oneof![Just(prim(Type::String)), Just(prim(Type::Int32))],
                inner.clone(),
                any::<bool>()
            )
                .prop_map(|(key, value, optional)| {
                    let mut schema = Schema::map(key, value);
                    schema.optional = optional;
                    schema
                }),
            (
                proptest::collection::vec(inner, 0..4),
                any::<bool>(),
                proptest::option::of("[A-Z][a-z]{0,6}")
            )
                .prop_map(|(fields, optional, name)| {
                    let mut schema = Schema::new(Type::Struct);
                    for (i, field) in fields.into_iter().enumerate() {
                        schema = schema.field(format!("f{i}"), field);
                    }
                    schema.optional = optional;
                    schema.name = name;
                    schema
                }),
        ]
    })
}

fn value_strategy(schema: Arc<Schema>) -> BoxedStrategy<Value> {
    let present = present_value_strategy(Arc::clone(&schema));
    // A null with a default is written as the default, so it would not read back as null.
    if schema.optional && schema.default.is_none() {
        prop_oneof![1 => Just(Value::Null), 4 => present].boxed()
    } else {
        present
    }
}

fn present_value_strategy(schema: Arc<Schema>) -> BoxedStrategy<Value> {
    match schema.name.as_deref() {
        Some(DECIMAL) => {
            return proptest::collection::vec(any::<u8>(), 1..12)
                .prop_map(|bytes| {
                    Value::Bytes(
                        BigInteger::from_twos_complement(&bytes)
                            .unwrap()
                            .to_twos_complement(),
                    )
                })
                .boxed();
        }
        Some(TIME) => return (0..=86_400_000i32).prop_map(Value::Int32).boxed(),
        _ => {}
    }
    match schema.ty {
        Type::Int8 => any::<i8>().prop_map(Value::Int8).boxed(),
        Type::Int16 => any::<i16>().prop_map(Value::Int16).boxed(),
        Type::Int32 => any::<i32>().prop_map(Value::Int32).boxed(),
        Type::Int64 => any::<i64>().prop_map(Value::Int64).boxed(),
        Type::Float32 => any::<f32>()
            .prop_filter("finite", |v| v.is_finite())
            .prop_map(|v| Value::Float32(v + 0.0))
            .boxed(),
        Type::Float64 => any::<f64>()
            .prop_filter("finite", |v| v.is_finite())
            .prop_map(|v| Value::Float64(v + 0.0))
            .boxed(),
        Type::Boolean => any::<bool>().prop_map(Value::Boolean).boxed(),
        Type::String => "\\PC{0,12}".prop_map(Value::String).boxed(),
        Type::Bytes => proptest::collection::vec(any::<u8>(), 0..12)
            .prop_map(Value::Bytes)
            .boxed(),
        Type::Array => {
            let element = Arc::clone(schema.value_schema.as_ref().unwrap());
            proptest::collection::vec(value_strategy(element), 0..4)
                .prop_map(Value::Array)
                .boxed()
        }
        Type::Map => {
            let key = Arc::clone(schema.key_schema.as_ref().unwrap());
            let value = Arc::clone(schema.value_schema.as_ref().unwrap());
            proptest::collection::vec((present_value_strategy(key), value_strategy(value)), 0..4)
                .prop_map(|entries| {
                    let mut distinct: Vec<(Value, Value)> = Vec::new();
                    for (k, v) in entries {
                        if !distinct.iter().any(|(existing, _)| *existing == k) {
                            distinct.push((k, v));
                        }
                    }
                    Value::Map(distinct)
                })
                .boxed()
        }
        Type::Struct => {
            let fields: Vec<BoxedStrategy<Value>> = schema
                .fields
                .iter()
                .map(|f| value_strategy(Arc::clone(&f.schema)))
                .collect();
            fields
                .prop_map(move |values| {
                    Value::Struct(Struct {
                        schema: Arc::clone(&schema),
                        values,
                    })
                })
                .boxed()
        }
    }
}

fn schema_and_value() -> impl Strategy<Value = (Arc<Schema>, Value)> {
    schema_strategy().prop_flat_map(|schema| {
        let schema = Arc::new(schema);
        (Just(Arc::clone(&schema)), value_strategy(schema))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn values_round_trip_through_the_envelope((schema, value) in schema_and_value(), numeric in any::<bool>()) {
        let c = converter(&[(DECIMAL_FORMAT_CONFIG, if numeric { "NUMERIC" } else { "BASE64" })]);
        let bytes = c.from_connect(TOPIC, Some(&schema), &value).unwrap().unwrap();
        let (read_schema, read_value) = c.to_connect(TOPIC, Some(&bytes)).unwrap();
        prop_assert_eq!(read_schema.as_deref(), Some(&*schema));
        prop_assert_eq!(&read_value, &value);
        // And the second trip writes the same bytes.
        let again = c.from_connect(TOPIC, read_schema.as_ref(), &read_value).unwrap().unwrap();
        prop_assert_eq!(again, bytes);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = converter(&[]).to_connect(TOPIC, Some(&bytes));
        let _ = converter(&[(SCHEMAS_ENABLE_CONFIG, "false")]).to_connect(TOPIC, Some(&bytes));
    }
}
