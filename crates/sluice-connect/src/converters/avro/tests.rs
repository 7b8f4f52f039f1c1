//! The Avro converter: the registry-free codec against fixed ids, and the converter
//! against a small in-process registry that answers as Confluent's does for the calls the
//! converter makes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use super::*;
use crate::Props;
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
        config.schema_registry_urls,
        ["http://a:8081", "http://b:8081"]
    );
    assert!(config.use_latest_version && config.auto_register_schemas);
    assert_eq!(config.value_subject_strategy, SubjectStrategy::Record);
    // Through the factory too.
    let props: Props = [(
        "schema.registry.url".to_string(),
        "http://localhost:8081".to_string(),
    )]
    .into();
    assert!(super::super::converter("AvroConverter", &props, false, "value.converter").is_ok());
}

/// A registry that answers the converter's calls as Confluent's does.
#[derive(Default)]
struct FakeRegistry {
    /// (subject, version, id, schema)
    versions: Vec<(String, i32, i32, String)>,
    /// id → schema
    ids: BTreeMap<i32, String>,
    calls: usize,
}

type Shared = Arc<Mutex<FakeRegistry>>;

fn not_found(code: i32, message: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"error_code": code, "message": message})),
    )
        .into_response()
}

async fn register(
    State(registry): State<Shared>,
    Path(subject): Path<String>,
    body: Bytes,
) -> Response {
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let schema = body["schema"].as_str().unwrap().to_string();
    let mut registry = registry.lock().unwrap();
    registry.calls += 1;
    let id = match registry.ids.iter().find(|(_, s)| **s == schema) {
        Some((id, _)) => *id,
        None => {
            let id = registry.ids.len() as i32 + 1;
            registry.ids.insert(id, schema.clone());
            id
        }
    };
    if !registry
        .versions
        .iter()
        .any(|(s, _, i, _)| *s == subject && *i == id)
    {
        let version = registry
            .versions
            .iter()
            .filter(|(s, ..)| *s == subject)
            .count() as i32
            + 1;
        registry.versions.push((subject, version, id, schema));
    }
    axum::Json(json!({"id": id})).into_response()
}

async fn lookup(
    State(registry): State<Shared>,
    Path(subject): Path<String>,
    body: Bytes,
) -> Response {
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let schema = body["schema"].as_str().unwrap();
    let mut registry = registry.lock().unwrap();
    registry.calls += 1;
    match registry
        .versions
        .iter()
        .find(|(s, _, _, text)| *s == subject && text == schema)
    {
        Some((subject, version, id, text)) => {
            axum::Json(json!({"subject": subject, "version": version, "id": id, "schema": text}))
                .into_response()
        }
        None => not_found(40403, "Schema not found"),
    }
}

async fn by_id(State(registry): State<Shared>, Path(id): Path<i32>) -> Response {
    let mut registry = registry.lock().unwrap();
    registry.calls += 1;
    match registry.ids.get(&id) {
        Some(schema) => axum::Json(json!({"schema": schema})).into_response(),
        None => not_found(40403, "Schema not found"),
    }
}

async fn latest(State(registry): State<Shared>, Path(subject): Path<String>) -> Response {
    let mut registry = registry.lock().unwrap();
    registry.calls += 1;
    match registry
        .versions
        .iter()
        .filter(|(s, ..)| *s == subject)
        .max_by_key(|(_, v, ..)| *v)
    {
        Some((subject, version, id, text)) => {
            axum::Json(json!({"subject": subject, "version": version, "id": id, "schema": text}))
                .into_response()
        }
        None => not_found(40401, "Subject not found"),
    }
}

/// Serves a fake registry on its own runtime thread; answers its URL.
fn fake_registry() -> (String, Shared) {
    let registry: Shared = Arc::default();
    let app = Router::new()
        .route("/subjects/{subject}/versions", post(register))
        .route("/subjects/{subject}", post(lookup))
        .route("/subjects/{subject}/versions/latest", get(latest))
        .route("/schemas/ids/{id}", get(by_id))
        .with_state(Arc::clone(&registry));
    let (address_sender, address) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            address_sender.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    (format!("http://{}", address.recv().unwrap()), registry)
}

fn avro_converter(url: &str, extra: &[(&str, &str)], is_key: bool) -> AvroConverter {
    let mut pairs = vec![(SCHEMA_REGISTRY_URL_CONFIG, url)];
    pairs.extend_from_slice(extra);
    AvroConverter::new(settings(&pairs).unwrap(), is_key).unwrap()
}

fn round_trip_through_the_registry() {
    let (url, registry) = fake_registry();
    let converter = avro_converter(&url, &[], false);
    let schema = order();
    let bytes = converter
        .from_connect("orders", Some(&schema), &an_order(None))
        .unwrap()
        .unwrap();
    assert_eq!(&bytes[..5], [0, 0, 0, 0, 1]);
    assert_eq!(
        registry.lock().unwrap().versions,
        vec![("orders-value".to_string(), 1, 1, ORDER_AVRO.to_string())]
    );
    // The same schema again is not registered again.
    converter
        .from_connect("orders", Some(&schema), &an_order(Some("x")))
        .unwrap();
    let calls = registry.lock().unwrap().calls;
    assert_eq!(calls, 1);
    // Null is a tombstone, with no registry call; a required schema refuses it.
    assert_eq!(
        converter.from_connect("orders", None, &Value::Null),
        Ok(None)
    );
    let optional = Arc::new((*schema).clone().optional());
    assert_eq!(
        converter.from_connect("orders", Some(&optional), &Value::Null),
        Ok(None)
    );
    assert_eq!(
        converter.from_connect("orders", Some(&schema), &Value::Null),
        Err(DataError("Found null value for non-optional schema".into()))
    );

    let reader = avro_converter(&url, &[], false);
    let (read_schema, value) = reader.to_connect("orders", Some(&bytes)).unwrap();
    let mut expected = (*schema).clone();
    // The registry's version, since the schema carries no connect.version.
    expected.version = Some(1);
    assert_eq!(read_schema.as_deref(), Some(&expected));
    let Value::Struct(read) = value else {
        panic!("a struct")
    };
    assert_eq!(read.get("id"), Some(&Value::Int64(7)));
    assert_eq!(read.get("note"), Some(&Value::Null));
    assert_eq!(reader.to_connect("orders", None), Ok((None, Value::Null)));
    reader.to_connect("orders", Some(&bytes)).unwrap();
    assert_eq!(
        registry.lock().unwrap().calls,
        calls + 2,
        "one fetch by id, one version lookup, then cached"
    );

    // A key converter registers under <topic>-key.
    let keys = avro_converter(&url, &[], true);
    keys.from_connect(
        "orders",
        Some(&Arc::new(prim(Type::String))),
        &Value::String("k".into()),
    )
    .unwrap();
    assert!(
        registry
            .lock()
            .unwrap()
            .versions
            .iter()
            .any(|(s, ..)| s == "orders-key")
    );

    // Without auto-registration, an unregistered schema is refused.
    let strict = avro_converter(&url, &[(AUTO_REGISTER_SCHEMAS_CONFIG, "false")], false);
    let other = Arc::new(prim(Type::Int32));
    let error = strict
        .from_connect("orders", Some(&other), &Value::Int32(1))
        .unwrap_err()
        .0;
    assert!(
        error.starts_with("Failed to serialize Avro data from topic orders: Error retrieving Avro schema\"int\": schema registry error 40403"),
        "{error}"
    );
    // ... and a registered one is found.
    let found = strict
        .from_connect("orders", Some(&schema), &an_order(None))
        .unwrap()
        .unwrap();
    assert_eq!(&found[..5], [0, 0, 0, 0, 1]);

    // use.latest.version writes with the subject's latest schema and id.
    let latest = avro_converter(
        &url,
        &[
            (AUTO_REGISTER_SCHEMAS_CONFIG, "false"),
            (USE_LATEST_VERSION_CONFIG, "true"),
        ],
        false,
    );
    let written = latest
        .from_connect("orders", Some(&schema), &an_order(None))
        .unwrap()
        .unwrap();
    assert_eq!(written, bytes);
    let error = latest
        .from_connect("orders", Some(&other), &Value::Int32(1))
        .unwrap_err()
        .0;
    assert_eq!(
        error,
        "Failed to serialize Avro data from topic orders: Incompatible schema of type 'AVRO'. Set latest.compatibility.strict=false to disable this check. See log file for more details."
    );

    // An unknown id.
    let error = reader
        .to_connect("orders", Some(&[0, 0, 0, 0, 99]))
        .unwrap_err()
        .0;
    assert!(error.starts_with("Failed to deserialize data for topic orders to Avro: Error retrieving Avro value schema for id 99: "), "{error}");
    assert_eq!(
        reader.to_connect("orders", Some(b"{}")).unwrap_err().0,
        "Failed to deserialize data for topic orders to Avro: Unknown magic byte!"
    );
}

#[test]
fn the_converter_works_against_a_registry_without_a_runtime() {
    round_trip_through_the_registry();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_converter_works_inside_the_workers_runtime() {
    round_trip_through_the_registry();
}

#[tokio::test(flavor = "current_thread")]
async fn the_converter_works_inside_a_current_thread_runtime() {
    round_trip_through_the_registry();
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
