//! The Avro converter: the registry-free codec against fixed ids, its settings, and an
//! unreachable registry. The converter against Sluice's real registry is in
//! `tests/avro_registry.rs`.

use std::sync::Arc;

use super::*;
use crate::Props;
use crate::converters::registry::*;
use crate::data::{Struct, Type};

fn prim(ty: Type) -> Schema {
    Schema::new(ty)
}

fn order() -> SchemaRef {
    Arc::new(
        Schema::new(Type::Struct)
            .named("shop.Order")
            .field("id", prim(Type::Int64))
            .field("note", prim(Type::String).optional())
            .field("price", Schema::decimal(2)),
    )
}

fn an_order(note: Option<&str>) -> Value {
    let mut value = Struct::new(order());
    value.put("id", Value::Int64(7)).unwrap();
    value
        .put(
            "note",
            note.map_or(Value::Null, |n| Value::String(n.into())),
        )
        .unwrap();
    value.put("price", Value::Bytes(vec![0x04, 0xd2])).unwrap();
    Value::Struct(value)
}

const ORDER_AVRO: &str = concat!(
    r#"{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},"#,
    r#"{"name":"note","type":["null","string"],"default":null},"#,
    r#"{"name":"price","type":{"type":"bytes","scale":2,"precision":64,"connect.version":1,"connect.parameters":{"scale":"2"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}}],"#,
    r#""connect.name":"shop.Order"}"#
);

#[test]
fn the_codec_frames_a_struct_with_a_fixed_id() {
    let codec = AvroCodec::new(AvroDataConfig::default());
    let avro = codec.avro_schema(Some(&order())).unwrap();
    assert_eq!(avro.to_json().unwrap(), ORDER_AVRO);
    let bytes = codec
        .encode(42, &avro, Some(&order()), &an_order(Some("hi")))
        .unwrap()
        .unwrap();
    // Magic byte, id 42, then id 7 (zig-zag 14), union branch 1, "hi", 2 bytes of 1234.
    assert_eq!(bytes, [0, 0, 0, 0, 42, 14, 2, 4, b'h', b'i', 4, 0x04, 0xd2]);
    assert_eq!(AvroCodec::schema_id(&bytes), Ok(42));

    // The apache-avro crate reads and writes the datum the same way.
    let theirs = apache_avro::Schema::parse_str(ORDER_AVRO).unwrap();
    let datum = apache_avro::reader::datum::GenericDatumReader::builder(&theirs)
        .build()
        .unwrap()
        .read_value(&mut &bytes[5..])
        .unwrap();
    let mut rewritten = Vec::new();
    apache_avro::writer::datum::GenericDatumWriter::builder(&theirs)
        .build()
        .unwrap()
        .write_value_ref(&mut rewritten, &datum)
        .unwrap();
    assert_eq!(rewritten, &bytes[5..]);

    let (schema, value) = codec.decode(&bytes, &avro, Some(3)).unwrap();
    let mut expected = (*order()).clone();
    expected.version = Some(3);
    assert_eq!(schema.as_deref(), Some(&expected));
    let Value::Struct(read) = value else {
        panic!("a struct")
    };
    assert_eq!(
        read.values,
        match an_order(Some("hi")) {
            Value::Struct(s) => s.values,
            _ => unreachable!(),
        }
    );
    assert_eq!(
        codec.encode(42, &avro, Some(&order()), &Value::Null),
        Err(DataError("Found null value for non-optional schema".into()))
    );
}

#[test]
fn top_level_bytes_go_raw_and_schemaless_data_as_anything() {
    let codec = AvroCodec::new(AvroDataConfig::default());
    for schema in [prim(Type::Bytes), Schema::decimal(2)] {
        let avro = codec.avro_schema(Some(&schema)).unwrap();
        let bytes = codec
            .encode(1, &avro, Some(&schema), &Value::Bytes(vec![0x12, 0x34]))
            .unwrap()
            .unwrap();
        assert_eq!(bytes, [0, 0, 0, 0, 1, 0x12, 0x34]);
        assert_eq!(
            codec.decode(&bytes, &avro, None).unwrap().1,
            Value::Bytes(vec![0x12, 0x34])
        );
    }
    let anything = codec.avro_schema(None).unwrap();
    let bytes = codec
        .encode(9, &anything, None, &Value::Int64(5))
        .unwrap()
        .unwrap();
    // Nine optional fields; "long" (the sixth) is set: five nulls, branch 1, 5.
    assert_eq!(bytes, [0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 2, 10, 0, 0, 0]);
    assert_eq!(
        codec.decode(&bytes, &anything, Some(1)).unwrap(),
        (None, Value::Int64(5))
    );
    assert_eq!(codec.encode(9, &anything, None, &Value::Null), Ok(None));
    assert_eq!(
        codec
            .decode(&[1, 0, 0, 0, 9], &anything, None)
            .unwrap_err()
            .0,
        "Unknown magic byte!"
    );
    assert!(
        codec
            .decode(&[0, 0, 0, 0, 9, 2], &anything, None)
            .unwrap_err()
            .0
            .starts_with("Error deserializing Avro message for id 9: ")
    );
}

fn settings(pairs: &[(&str, &str)]) -> Result<AvroConverterConfig, ConfigError> {
    let props: Props = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    AvroConverterConfig::parse(&Settings::new(&props, "value.converter"))
}

#[test]
fn settings_are_checked_with_confluent_texts() {
    assert_eq!(
        settings(&[]).unwrap_err().errors,
        vec![(
            "value.converter.schema.registry.url".to_string(),
            "Missing required configuration \"schema.registry.url\" which has no default value."
                .to_string()
        )]
    );
    let errors = settings(&[
        (SCHEMA_REGISTRY_URL_CONFIG, "http://localhost:8081"),
        (AUTO_REGISTER_SCHEMAS_CONFIG, "sometimes"),
        (VALUE_SUBJECT_NAME_STRATEGY_CONFIG, "com.example.Mine"),
        ("enhanced.avro.schema.support", "true"),
    ])
    .unwrap_err();
    assert_eq!(
        errors.message(),
        "Invalid value sometimes for configuration auto.register.schemas: Expected value to be either true or false\n\
         Invalid value com.example.Mine for configuration value.subject.name.strategy: Class com.example.Mine could not be found.\n\
         Invalid value true for configuration enhanced.avro.schema.support: Sluice's AvroConverter does not support this setting"
    );
    let config = settings(&[
        (SCHEMA_REGISTRY_URL_CONFIG, " http://a:8081, http://b:8081 "),
        (USE_LATEST_VERSION_CONFIG, "true"),
        (
            VALUE_SUBJECT_NAME_STRATEGY_CONFIG,
            "io.confluent.kafka.serializers.subject.RecordNameStrategy",
        ),
    ])
    .unwrap();
    assert_eq!(
        config.registry.schema_registry_urls,
        ["http://a:8081", "http://b:8081"]
    );
    assert!(config.registry.use_latest_version && config.registry.auto_register_schemas);
    assert_eq!(
        config.registry.value_subject_strategy,
        SubjectStrategy::Record
    );
    // Through the factory too.
    let props: Props = [(
        "schema.registry.url".to_string(),
        "http://localhost:8081".to_string(),
    )]
    .into();
    assert!(super::super::converter("AvroConverter", &props, false, "value.converter").is_ok());
}

fn avro_converter(url: &str, extra: &[(&str, &str)], is_key: bool) -> AvroConverter {
    let mut pairs = vec![(SCHEMA_REGISTRY_URL_CONFIG, url)];
    pairs.extend_from_slice(extra);
    AvroConverter::new(settings(&pairs).unwrap(), is_key).unwrap()
}

#[test]
fn an_unreachable_registry_is_a_network_error() {
    // Nothing listens on port 1.
    let converter = avro_converter("http://127.0.0.1:1", &[], false);
    let error = converter
        .from_connect("t", Some(&order()), &an_order(None))
        .unwrap_err()
        .0;
    assert!(
        error.starts_with("Network connection error while serializing Avro data for topic t: "),
        "{error}"
    );
    let error = converter
        .to_connect("t", Some(&[0, 0, 0, 0, 1]))
        .unwrap_err()
        .0;
    assert!(
        error.starts_with("Network connection error while deserializing data for topic t: "),
        "{error}"
    );
}
