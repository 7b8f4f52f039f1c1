//! Confluent's mapping, checked against the schema texts Confluent's converter registers
//! (derived from `AvroData.fromConnectSchema` and Avro's `Schema.toString`; the cases
//! follow Confluent's `AvroDataTest` in avro-data/src/test/java/io/confluent/connect/avro/).

use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::data::Field;

fn data() -> AvroData {
    AvroData::new(AvroDataConfig::default())
}

fn prim(ty: Type) -> Schema {
    Schema::new(ty)
}

fn s(text: &str) -> Value {
    Value::String(text.into())
}

fn avro_text(schema: &Schema) -> String {
    data()
        .from_connect_schema(Some(schema))
        .unwrap()
        .to_json()
        .unwrap()
}

fn back(text: &str, version: Option<i32>) -> Option<Schema> {
    let avro = AvroSchema::parse(text).unwrap();
    data()
        .to_connect_schema(&avro, version)
        .unwrap()
        .map(Arc::unwrap_or_clone)
}

fn person() -> Schema {
    Schema::new(Type::Struct)
        .named("com.example.Person")
        .with_version(1)
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
        .field("map", Schema::map(prim(Type::String), prim(Type::Int32)))
        .field(
            "mapNonStringKeys",
            Schema::map(prim(Type::Int32), prim(Type::Int32)),
        )
        .field("decimal", Schema::decimal(2))
        .field("date", Schema::date())
        .field("time", Schema::time())
        .field("timestamp", Schema::timestamp())
        .field("optional", prim(Type::String).optional())
        .field(
            "withDefault",
            prim(Type::Int32).with_default(Value::Int32(42)),
        )
        .field(
            "optionalWithDefault",
            prim(Type::String).optional().with_default(s("x")),
        )
        .field(
            "nested",
            Schema::new(Type::Struct).field("a", prim(Type::Boolean)),
        )
}

const PERSON_AVRO: &str = concat!(
    r#"{"type":"record","name":"Person","namespace":"com.example","fields":["#,
    r#"{"name":"int8","type":{"type":"int","connect.type":"int8"}},"#,
    r#"{"name":"int16","type":{"type":"int","connect.type":"int16"}},"#,
    r#"{"name":"int32","type":"int"},{"name":"int64","type":"long"},{"name":"float32","type":"float"},"#,
    r#"{"name":"float64","type":"double"},{"name":"boolean","type":"boolean"},{"name":"string","type":"string"},"#,
    r#"{"name":"bytes","type":"bytes"},{"name":"array","type":{"type":"array","items":"string"}},"#,
    r#"{"name":"map","type":{"type":"map","values":"int"}},"#,
    r#"{"name":"mapNonStringKeys","type":{"type":"array","items":{"type":"record","name":"MapEntry","namespace":"io.confluent.connect.avro","fields":[{"name":"key","type":"int"},{"name":"value","type":"int"}]}}},"#,
    r#"{"name":"decimal","type":{"type":"bytes","scale":2,"precision":64,"connect.version":1,"connect.parameters":{"scale":"2"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}},"#,
    r#"{"name":"date","type":{"type":"int","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Date","logicalType":"date"}},"#,
    r#"{"name":"time","type":{"type":"int","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Time","logicalType":"time-millis"}},"#,
    r#"{"name":"timestamp","type":{"type":"long","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Timestamp","logicalType":"timestamp-millis"}},"#,
    r#"{"name":"optional","type":["null","string"],"default":null},"#,
    r#"{"name":"withDefault","type":{"type":"int","connect.default":42},"default":42},"#,
    r#"{"name":"optionalWithDefault","type":[{"type":"string","connect.default":"x"},"null"],"default":"x"},"#,
    r#"{"name":"nested","type":{"type":"record","name":"ConnectDefault","namespace":"io.confluent.connect.avro","fields":[{"name":"a","type":"boolean"}]}}],"#,
    r#""connect.version":1,"connect.name":"com.example.Person"}"#
);

/// Debezium's envelope uses its `Value` struct twice (`before`, `after`): the second is
/// the record named, as Confluent registers it (`"type":["null","Value"]`), not a second
/// definition.
#[test]
fn a_named_struct_used_twice_is_defined_once_then_named() {
    let value: SchemaRef = Schema::new(Type::Struct)
        .optional()
        .named("dbz.public.t.Value")
        .field("id", prim(Type::Int32))
        .into();
    let envelope = Schema::new(Type::Struct)
        .named("dbz.public.t.Envelope")
        .with_version(2)
        .field("before", value.clone())
        .field("after", value);
    assert_eq!(
        avro_text(&envelope),
        r#"{"type":"record","name":"Envelope","namespace":"dbz.public.t","fields":[{"name":"before","type":["null",{"type":"record","name":"Value","fields":[{"name":"id","type":"int"}],"connect.name":"dbz.public.t.Value"}],"default":null},{"name":"after","type":["null","Value"],"default":null}],"connect.version":2,"connect.name":"dbz.public.t.Envelope"}"#
    );
}

#[test]
fn a_struct_becomes_the_record_confluent_registers() {
    assert_eq!(avro_text(&person()), PERSON_AVRO);
    // And back, whatever the registry's version: Connect's own wins.
    assert_eq!(back(PERSON_AVRO, Some(7)), Some(person()));
    // The registry accepts the text as is and prints it the same.
    use sluice_registry::schema::ParsedSchema as _;
    let registry = sluice_registry::avro::AvroSchema::parse(PERSON_AVRO, &[]).unwrap();
    assert_eq!(registry.canonical(), PERSON_AVRO);
}

#[test]
fn primitives_and_metadata_map_as_confluent_maps_them() {
    // (Connect schema, Avro text)
    let cases = [
        (prim(Type::Boolean), r#""boolean""#),
        (prim(Type::Int8), r#"{"type":"int","connect.type":"int8"}"#),
        (prim(Type::Int32).optional(), r#"["null","int"]"#),
        (
            prim(Type::String)
                .named("com.example.Name")
                .with_version(3)
                .with_doc("docs")
                .with_parameter("k", "v"),
            r#"{"type":"string","connect.doc":"docs","connect.version":3,"connect.parameters":{"k":"v"},"connect.name":"com.example.Name"}"#,
        ),
        (
            prim(Type::Float32).with_default(Value::Float32(1.1)),
            r#"{"type":"float","connect.default":1.1}"#,
        ),
        (
            Schema::decimal(2).with_parameter("connect.decimal.precision", "10"),
            r#"{"type":"bytes","scale":2,"precision":10,"connect.version":1,"connect.parameters":{"scale":"2","connect.decimal.precision":"10"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}"#,
        ),
        (
            // A scale above the precision cannot be Avro's decimal: the legacy property only.
            Schema::decimal(12).with_parameter("connect.decimal.precision", "10"),
            r#"{"type":"bytes","scale":12,"precision":10,"connect.version":1,"connect.parameters":{"scale":"12","connect.decimal.precision":"10"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}"#,
        ),
        (
            Schema::map(prim(Type::String).optional(), prim(Type::Int8)).named("a.M"),
            r#"{"type":"array","items":{"type":"record","name":"M","namespace":"a","fields":[{"name":"key","type":["null","string"],"default":null},{"name":"value","type":{"type":"int","connect.type":"int8"}}],"connect.internal.type":"MapEntry"},"connect.name":"a.M"}"#,
        ),
    ];
    for (schema, text) in cases {
        assert_eq!(avro_text(&schema), text);
        assert_eq!(back(text, None), Some(schema), "{text}");
    }
}

#[test]
fn field_defaults_are_kept_as_avro_keeps_them() {
    // A float default is a double in the field (Avro's JacksonUtils), a float in
    // connect.default; an optional struct's default fits its union's record branch.
    let inner = Schema::new(Type::Struct).field("b", prim(Type::Int32));
    let inner_ref: SchemaRef = Arc::new(inner.clone().optional());
    let inner_default = Value::Struct(
        Struct::new(Arc::clone(&inner_ref))
            .with("b", Value::Int32(1))
            .unwrap(),
    );
    let schema = Schema::new(Type::Struct)
        .field("f", prim(Type::Float32).with_default(Value::Float32(1.1)))
        .field(
            "bytes",
            prim(Type::Bytes).with_default(Value::Bytes(vec![0, 0xe9, 0xff])),
        )
        .field("inner", inner.optional().with_default(inner_default));
    assert_eq!(
        avro_text(&schema),
        concat!(
            r#"{"type":"record","name":"ConnectDefault","namespace":"io.confluent.connect.avro","fields":["#,
            r#"{"name":"f","type":{"type":"float","connect.default":1.1},"default":1.100000023841858},"#,
            "{\"name\":\"bytes\",\"type\":{\"type\":\"bytes\",\"connect.default\":\"\\u0000\u{e9}\u{ff}\"},\"default\":\"\\u0000\u{e9}\u{ff}\"},",
            r#"{"name":"inner","type":["null",{"type":"record","name":"ConnectDefault2","fields":[{"name":"b","type":"int"}],"connect.default":{"b":1}}],"default":{"b":1}}]}"#
        )
    );
}

#[test]
fn a_struct_used_twice_is_one_record() {
    let point = Schema::new(Type::Struct).field("x", prim(Type::Int32));
    let schema = Schema::new(Type::Struct)
        .field("from", point.clone())
        .field("to", point.clone())
        .field("maybe", point.clone().optional());
    let text = avro_text(&schema);
    assert_eq!(
        text,
        concat!(
            r#"{"type":"record","name":"ConnectDefault","namespace":"io.confluent.connect.avro","fields":["#,
            r#"{"name":"from","type":{"type":"record","name":"ConnectDefault2","fields":[{"name":"x","type":"int"}]}},"#,
            r#"{"name":"to","type":"ConnectDefault2"},{"name":"maybe","type":["null","ConnectDefault2"],"default":null}]}"#
        )
    );
    assert_eq!(back(&text, None), Some(schema));
    // Two different maps of non-string keys both want io.confluent.connect.avro.MapEntry:
    // Avro refuses, as it refuses Confluent's converter.
    let clash = Schema::new(Type::Struct)
        .field("a", Schema::map(prim(Type::Int32), prim(Type::Int32)))
        .field("b", Schema::map(prim(Type::Int32), prim(Type::String)));
    assert_eq!(
        data()
            .from_connect_schema(Some(&clash))
            .unwrap()
            .to_json()
            .unwrap_err()
            .0,
        "Can't redefine: io.confluent.connect.avro.MapEntry"
    );
}

#[test]
fn foreign_avro_schemas_map_as_confluent_maps_them() {
    let text = r#"{"type":"record","name":"Order","namespace":"shop","doc":"an order","fields":[
        {"name":"id","type":"long","doc":"the id"},
        {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID"],"default":"NEW"}},
        {"name":"hash","type":{"type":"fixed","name":"Hash","size":4}},
        {"name":"choice","type":["null","int","string"]},
        {"name":"count","type":"int","default":0},
        {"name":"when","type":{"type":"long","logicalType":"timestamp-micros"}},
        {"name":"price","type":{"type":"fixed","name":"Price","size":8,"logicalType":"decimal","precision":10,"scale":2}}]}"#;
    let expected = Schema::new(Type::Struct)
        .named("shop.Order")
        .with_version(4)
        .with_parameter(AVRO_RECORD_DOC_PROP, "an order")
        .with_parameter(format!("{AVRO_FIELD_DOC_PREFIX_PROP}id"), "the id")
        .field("id", prim(Type::Int64))
        .field(
            "status",
            prim(Type::String)
                .named("shop.Status")
                .with_parameter(format!("{AVRO_ENUM_DEFAULT_PREFIX_PROP}Status"), "NEW")
                .with_parameter(AVRO_TYPE_ENUM, "shop.Status")
                .with_parameter(format!("{AVRO_TYPE_ENUM}.NEW"), "NEW")
                .with_parameter(format!("{AVRO_TYPE_ENUM}.PAID"), "PAID"),
        )
        .field(
            "hash",
            prim(Type::Bytes)
                .named("shop.Hash")
                .with_parameter(CONNECT_AVRO_FIXED_SIZE_PROP, "4"),
        )
        .field(
            "choice",
            Schema::new(Type::Struct)
                .named(AVRO_TYPE_UNION)
                .optional()
                .field("int", prim(Type::Int32).optional())
                .field("string", prim(Type::String).optional()),
        )
        .field(
            "count",
            prim(Type::Int32)
                .with_parameter(AVRO_FIELD_DEFAULT_FLAG_PROP, "true")
                .with_default(Value::Int32(0)),
        )
        .field("when", prim(Type::Int64))
        .field(
            "price",
            Schema::decimal(2)
                .with_parameter(CONNECT_AVRO_DECIMAL_PRECISION_PROP, "10")
                .with_parameter(CONNECT_AVRO_FIXED_SIZE_PROP, "8"),
        );
    assert_eq!(back(text, Some(4)), Some(expected));

    // Writing it back gives Avro that reads the same data (fixed stays fixed, the union
    // stays a union, the enum becomes a string).
    let connect = back(text, Some(4)).unwrap();
    let written = avro_text(&connect);
    assert!(
        written.contains(r#"{"name":"choice","type":["null","int","string"],"default":null}"#),
        "{written}"
    );
    assert!(
        written.contains(r#"{"type":"fixed","name":"Hash","size":4,"#),
        "{written}"
    );
}

#[test]
fn bad_avro_is_refused_with_confluent_texts() {
    let cases = [
        (
            r#""null""#,
            "Standalone null schemas are not supported by this converter",
        ),
        (
            r#"{"type":"int","connect.type":"int128"}"#,
            "Connect type annotation for Avro int field is null",
        ),
        (
            r#"{"type":"int","connect.version":"one"}"#,
            "Invalid Connect version found: \"one\"",
        ),
        (
            r#"{"type":"int","connect.name":7}"#,
            "Invalid schema name: 7",
        ),
        (
            r#"{"type":"int","connect.parameters":[]}"#,
            "Expected JSON object for schema parameters but found: []",
        ),
        (
            r#"{"type":"int","connect.parameters":{"a":1}}"#,
            "Expected schema parameter values to be strings but found: 1",
        ),
        (
            r#"{"type":"int","logicalType":"date","connect.name":"x.Y"}"#,
            "Mismatched names: name already added to SchemaBuilder (org.apache.kafka.connect.data.Date) differs from name in source schema (x.Y)",
        ),
        (
            r#"["int",{"type":"int","connect.type":"int8"}]"#,
            "Multiple union schemas map to the Connect union field name",
        ),
        (
            r#"{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}"#,
            "Recursive Avro schemas are not supported: L refers to itself",
        ),
    ];
    for (text, message) in cases {
        let avro = AvroSchema::parse(text).unwrap();
        assert_eq!(
            data().to_connect_schema(&avro, None).unwrap_err().0,
            message,
            "{text}"
        );
    }
    assert_eq!(
        data()
            .to_connect_schema(
                &AvroSchema::parse(r#"{"type":"bytes","logicalType":"decimal","scale":1}"#)
                    .unwrap(),
                Some(3)
            )
            .unwrap_err()
            .0,
        "Mismatched versions: version already added to SchemaBuilder (1) differs from version in source schema (3)"
    );
}

#[test]
fn values_convert_with_confluent_texts_for_bad_ones() {
    let d = data();
    let schema = prim(Type::Int32);
    let avro = d.from_connect_schema(Some(&schema)).unwrap();
    assert_eq!(
        d.from_connect_data(Some(&schema), &avro, &s("x"))
            .unwrap_err()
            .0,
        "Invalid type for INT32: class java.lang.String"
    );
    let record = Schema::new(Type::Struct).field("a", prim(Type::String));
    let avro = d.from_connect_schema(Some(&record)).unwrap();
    let empty = Value::Struct(Struct::new(Arc::new(record.clone())));
    assert_eq!(
        d.from_connect_data(Some(&record), &avro, &empty)
            .unwrap_err()
            .0,
        "Found null value for non-optional schema"
    );
    let anything = d.from_connect_schema(None).unwrap();
    assert_eq!(
        d.from_connect_data(None, &anything, &Value::Bytes(vec![1]))
            .unwrap_err()
            .0,
        "Unknown Java type for schemaless data: class [B"
    );
    assert_eq!(
        d.from_connect_data(
            Some(&schema),
            &AvroSchema::parse(r#""int""#).unwrap(),
            &Value::Null
        ),
        Err(DataError("Found null value for non-optional schema".into()))
    );
}

#[test]
fn schemaless_data_travels_as_anything() {
    let d = data();
    let anything = d.from_connect_schema(None).unwrap();
    assert_eq!(anything.to_json().unwrap(), ANYTHING_SCHEMA_JSON);
    assert_eq!(d.to_connect_schema(&anything, None).unwrap(), None);
    let value = Value::Map(vec![
        (
            s("a"),
            Value::Array(vec![Value::Int32(1), Value::Null, s("x")]),
        ),
        (
            Value::Int64(2),
            Value::Map(vec![(Value::Boolean(true), Value::Float64(1.5))]),
        ),
    ]);
    let datum = d
        .from_connect_data(None, &anything, &value)
        .unwrap()
        .unwrap();
    let mut bytes = Vec::new();
    avro_binary::encode(&anything, &datum, &mut bytes).unwrap();
    let (read, rest) = avro_binary::decode(&anything, &bytes).unwrap();
    assert!(rest.is_empty());
    assert_eq!(d.to_connect_data(None, &anything, &read).unwrap(), value);
    assert_eq!(
        d.from_connect_data(None, &anything, &Value::Null).unwrap(),
        None
    );
}

use super::super::avro_binary;

// Round trips: Connect → Avro schema and bytes → Connect.

fn leaf() -> impl Strategy<Value = Schema> {
    let base = prop_oneof![
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
    (
        base,
        any::<bool>(),
        proptest::option::of("[a-z]{1,5}\\.[A-Z][a-z]{0,4}"),
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
        })
        .prop_flat_map(|schema| {
            let default = proptest::option::weighted(0.3, present_value(Arc::new(schema.clone())));
            (Just(schema), default)
        })
        .prop_map(|(mut schema, default)| {
            schema.default = default;
            schema
        })
}

fn schema_strategy() -> impl Strategy<Value = Schema> {
    leaf().prop_recursive(3, 24, 4, |inner| {
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
            (proptest::collection::vec(inner, 0..4), any::<bool>()).prop_map(
                |(fields, optional)| {
                    let mut schema = Schema::new(Type::Struct);
                    schema.fields = fields
                        .into_iter()
                        .enumerate()
                        .map(|(index, field)| Field {
                            name: format!("f{index}"),
                            index,
                            schema: Arc::new(field),
                        })
                        .collect();
                    schema.optional = optional;
                    schema
                }
            ),
        ]
    })
}

fn value_strategy(schema: Arc<Schema>) -> BoxedStrategy<Value> {
    let present = present_value(Arc::clone(&schema));
    // A null with a default is written as the default.
    if schema.optional && schema.default.is_none() {
        prop_oneof![1 => Just(Value::Null), 4 => present].boxed()
    } else {
        present
    }
}

fn present_value(schema: Arc<Schema>) -> BoxedStrategy<Value> {
    match schema.name.as_deref() {
        Some(DECIMAL) => {
            return proptest::collection::vec(any::<u8>(), 1..12)
                .prop_map(|b| {
                    Value::Bytes(
                        BigInteger::from_twos_complement(&b)
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
            .prop_filter("not NaN", |v| !v.is_nan())
            .prop_map(Value::Float32)
            .boxed(),
        Type::Float64 => any::<f64>()
            .prop_filter("not NaN", |v| !v.is_nan())
            .prop_map(Value::Float64)
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
            proptest::collection::vec((present_value(key), value_strategy(value)), 0..4)
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

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn schemas_and_values_round_trip(
        (schema, value) in schema_strategy().prop_flat_map(|schema| {
            let schema = Arc::new(schema);
            (Just(Arc::clone(&schema)), present_value(schema))
        }),
        version in proptest::option::of(1..9i32),
    ) {
        let d = data();
        let avro = d.from_connect_schema(Some(&schema)).unwrap();
        // Avro cannot hold two different records of one name (two different maps with
        // non-string keys both make a MapEntry record): Confluent fails those too.
        let Ok(text) = avro.to_json() else { return Ok(()); };
        let parsed = AvroSchema::parse(&text).unwrap();
        prop_assert_eq!(parsed.to_json().unwrap(), text.clone());

        let datum = d.from_connect_data(Some(&schema), &avro, &value).unwrap().unwrap();
        let mut bytes = Vec::new();
        avro_binary::encode(&parsed, &datum, &mut bytes).unwrap();
        // The apache-avro crate reads the same bytes with the same schema.
        let theirs = apache_avro::Schema::parse_str(&text).unwrap();
        let mut reader = &bytes[..];
        apache_avro::reader::datum::GenericDatumReader::builder(&theirs)
            .build()
            .unwrap()
            .read_value(&mut reader)
            .unwrap();
        prop_assert!(reader.is_empty());

        let (read, rest) = avro_binary::decode(&parsed, &bytes).unwrap();
        prop_assert!(rest.is_empty());
        let read_schema = d.to_connect_schema(&parsed, version).unwrap().unwrap();
        let mut expected_schema = (*schema).clone();
        // The registry's version goes on the top schema, unless that is a union
        // (optional), which Confluent converts without it.
        if expected_schema.version.is_none() && !expected_schema.optional {
            expected_schema.version = version;
        }
        prop_assert_eq!(&*read_schema, &expected_schema);
        let read_value = d.to_connect_data(Some(&read_schema), &parsed, &read).unwrap();
        prop_assert_eq!(strip_schemas(read_value), strip_schemas(value));
    }
}

/// Values compared without their structs' schemas (the top-level schema's version may
/// differ from the one the value was built with).
fn strip_schemas(value: Value) -> Value {
    match value {
        Value::Struct(s) => Value::Array(s.values.into_iter().map(strip_schemas).collect()),
        Value::Array(items) => Value::Array(items.into_iter().map(strip_schemas).collect()),
        Value::Map(entries) => Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| (strip_schemas(k), strip_schemas(v)))
                .collect(),
        ),
        other => other,
    }
}

#[test]
fn enum_symbols_and_parameters_keep_their_declared_order() {
    // An enum's symbols are Connect parameters; Connect keeps parameters in the order
    // they were set (a LinkedHashMap), so they go out in the order the writer declared.
    let text = r#"{"type":"enum","name":"Status","symbols":["PAID","NEW","CANCELLED"]}"#;
    let schema = back(text, None).unwrap();
    let symbols: Vec<&String> = schema
        .parameters
        .keys()
        .filter(|k| k.starts_with(&format!("{AVRO_TYPE_ENUM}.")))
        .collect();
    assert_eq!(
        symbols,
        [
            &format!("{AVRO_TYPE_ENUM}.PAID"),
            &format!("{AVRO_TYPE_ENUM}.NEW"),
            &format!("{AVRO_TYPE_ENUM}.CANCELLED")
        ]
    );
    // Without enhanced.avro.schema.support (Confluent's default, and Sluice's only mode)
    // the enum is written as a string, its parameters in Connect's order.
    assert_eq!(
        avro_text(&schema),
        format!(
            r#"{{"type":"string","connect.parameters":{{"{e}":"Status","{e}.PAID":"PAID","{e}.NEW":"NEW","{e}.CANCELLED":"CANCELLED"}},"connect.name":"Status"}}"#,
            e = AVRO_TYPE_ENUM
        )
    );
}
