//! The JSON Schema converter (`io.confluent.connect.json.JsonSchemaConverter`) against
//! Sluice's real schema registry on a real in-process broker: registration under
//! TopicNameStrategy subjects with the text Confluent's converter registers, reads by id
//! with the registry's version, `auto.register.schemas=false`, `use.latest.version`,
//! `json.fail.invalid.schema`, an Avro schema's id, unknown ids, bad bytes; from a worker's
//! multi-threaded runtime and from no runtime at all.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;
#[path = "support/registry.rs"]
mod registry;

use std::sync::Arc;

use registry::{an_order, get, on_runtime, order, registry, registry_converter, versions};
use sluice_connect::converters::{Converter, JsonSchemaData};
use sluice_connect::data::{Schema, Type, Value};

fn json_schema(url: &str, extra: &[(&str, &str)], is_key: bool) -> Box<dyn Converter> {
    registry_converter("JsonSchemaConverter", url, extra, is_key)
}

/// Registers a JSON schema under `subject` as another client would; answers its id.
fn register(url: &str, subject: &str, schema: &str) -> i32 {
    let url = format!("{url}/subjects/{subject}/versions");
    let body = serde_json::json!({"schema": schema, "schemaType": "JSON"});
    let answer: serde_json::Value = on_runtime(async move {
        let response = reqwest::Client::new()
            .post(url)
            .header("Content-Type", "application/vnd.schemaregistry.v1+json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        response.json().await.unwrap()
    });
    i32::try_from(answer["id"].as_i64().expect("an id")).unwrap()
}

fn id_of(bytes: &[u8]) -> i32 {
    assert_eq!(bytes[0], 0, "the magic byte");
    i32::from_be_bytes(bytes[1..5].try_into().unwrap())
}

fn round_trip_through_the_registry() {
    let url = registry();
    let writer = json_schema(&url, &[], false);
    let schema = order();
    let bytes = writer
        .from_connect("orders", Some(&schema), &an_order(None))
        .unwrap()
        .unwrap();
    let id = id_of(&bytes);
    // Magic byte, id, then the JSON text; the null optional note is written as null.
    assert_eq!(
        std::str::from_utf8(&bytes[5..]).unwrap(),
        r#"{"id":7,"note":null,"price":"BNI="}"#
    );
    assert_eq!(versions(&url, "orders-value"), "[1]");
    let generated = JsonSchemaData::default().schema_text(&schema).unwrap();
    let registered: serde_json::Value =
        serde_json::from_str(&get(&url, &format!("/schemas/ids/{id}"))).unwrap();
    assert_eq!(registered["schemaType"], "JSON");
    assert_eq!(registered["schema"], generated.as_str());

    // The same schema again is the same id and version.
    let again = writer
        .from_connect("orders", Some(&schema), &an_order(Some("x")))
        .unwrap()
        .unwrap();
    assert_eq!(id_of(&again), id);
    assert_eq!(versions(&url, "orders-value"), "[1]");
    assert_eq!(writer.from_connect("orders", None, &Value::Null), Ok(None));

    let reader = json_schema(&url, &[], false);
    let (read_schema, value) = reader.to_connect("orders", Some(&again)).unwrap();
    let mut expected = (*schema).clone();
    // The registry's version, since the schema carries no connect.version.
    expected.version = Some(1);
    assert_eq!(read_schema.as_deref(), Some(&expected));
    let Value::Struct(read) = value else {
        panic!("a struct")
    };
    assert_eq!(read.get("id"), Some(&Value::Int64(7)));
    assert_eq!(read.get("note"), Some(&Value::String("x".into())));
    assert_eq!(read.get("price"), Some(&Value::Bytes(vec![0x04, 0xd2])));
    assert_eq!(reader.to_connect("orders", None), Ok((None, Value::Null)));

    // A key converter registers under <topic>-key.
    let keys = json_schema(&url, &[], true);
    keys.from_connect(
        "orders",
        Some(&Arc::new(Schema::new(Type::String))),
        &Value::String("k".into()),
    )
    .unwrap();
    assert_eq!(versions(&url, "orders-key"), "[1]");

    // Without auto-registration, an unregistered schema is refused with the registry's
    // 40403, and a registered one is found.
    let strict = json_schema(&url, &[("auto.register.schemas", "false")], false);
    let other = Arc::new(Schema::new(Type::Int32));
    let error = strict
        .from_connect("orders", Some(&other), &Value::Int32(1))
        .unwrap_err()
        .0;
    assert!(
        error.starts_with(
            "Converting Kafka Connect data to byte[] failed due to serialization error of topic \
             orders: Error retrieving JSON schema: "
        ),
        "{error}"
    );
    assert!(error.contains("40403"), "{error}");
    let found = strict
        .from_connect("orders", Some(&schema), &an_order(None))
        .unwrap()
        .unwrap();
    assert_eq!(found, bytes);

    // use.latest.version writes with the subject's latest id, and refuses a schema the
    // latest cannot read.
    let latest = json_schema(
        &url,
        &[
            ("auto.register.schemas", "false"),
            ("use.latest.version", "true"),
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
        "Converting Kafka Connect data to byte[] failed due to serialization error of topic \
         orders: Incompatible schema of type 'JSON'. Set latest.compatibility.strict=false to \
         disable this check. See log file for more details."
    );

    // json.fail.invalid.schema: a value its schema refuses fails, writing and reading.
    let mut frame = bytes[..5].to_vec();
    frame.extend_from_slice(br#"{"id":"seven","price":"BNI="}"#);
    let validating = json_schema(&url, &[("json.fail.invalid.schema", "true")], false);
    let error = validating.to_connect("orders", Some(&frame)).unwrap_err().0;
    assert!(
        error.starts_with(&format!(
            "Converting byte[] to Kafka Connect data failed due to serialization error of topic \
             orders: Error deserializing JSON message for id {id}: JSON does not match schema of \
             type JSON: "
        )),
        "{error}"
    );
    // Without it, the value is read as Confluent's converter reads it (a string's
    // longValue() is 0).
    let (_, lenient) = reader.to_connect("orders", Some(&frame)).unwrap();
    assert_eq!(
        lenient.as_struct().unwrap().get("id"),
        Some(&Value::Int64(0))
    );

    // Writing with a latest schema the value does not match (the compatibility check
    // off): written as is, unless json.fail.invalid.schema checks it.
    let foreign = register(
        &url,
        "strict-value",
        r#"{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}"#,
    );
    let mut unchecked = vec![
        ("auto.register.schemas", "false"),
        ("use.latest.version", "true"),
        ("latest.compatibility.strict", "false"),
    ];
    let written = json_schema(&url, &unchecked, false)
        .from_connect("strict", Some(&schema), &an_order(None))
        .unwrap()
        .unwrap();
    assert_eq!(id_of(&written), foreign);
    unchecked.push(("json.fail.invalid.schema", "true"));
    let error = json_schema(&url, &unchecked, false)
        .from_connect("strict", Some(&schema), &an_order(None))
        .unwrap_err()
        .0;
    assert!(
        error.starts_with(
            "Converting Kafka Connect data to byte[] failed due to serialization error of topic \
             strict: Error serializing JSON message: Validation error in JSON, Error report:\n"
        ),
        "{error}"
    );

    // An Avro schema's id is refused, as is an unknown id and bytes without the magic
    // byte.
    let avro = registry_converter("AvroConverter", &url, &[], false);
    let avro_bytes = avro
        .from_connect("payments", Some(&schema), &an_order(None))
        .unwrap()
        .unwrap();
    let avro_id = id_of(&avro_bytes);
    let error = reader
        .to_connect("payments", Some(&avro_bytes))
        .unwrap_err()
        .0;
    assert_eq!(
        error,
        format!(
            "Converting byte[] to Kafka Connect data failed due to serialization error of topic \
             payments: Error deserializing JSON message for id {avro_id}: the schema with id \
             {avro_id} is of type AVRO, not JSON"
        )
    );
    let error = reader
        .to_connect("orders", Some(&[0, 0, 0, 0, 99, b'{', b'}']))
        .unwrap_err()
        .0;
    assert!(
        error.starts_with(
            "Converting byte[] to Kafka Connect data failed due to serialization error of topic \
             orders: Error retrieving JSON schema for id 99: "
        ),
        "{error}"
    );
    assert!(error.contains("40403"), "{error}");
    assert_eq!(
        reader.to_connect("orders", Some(b"{}")).unwrap_err().0,
        "Converting byte[] to Kafka Connect data failed due to serialization error of topic \
         orders: Error deserializing JSON message for id -1: Unknown magic byte!"
    );
    // A truncated payload is an error, not a panic.
    let truncated = &bytes[..bytes.len() - 3];
    let error = reader.to_connect("orders", Some(truncated)).unwrap_err().0;
    assert!(
        error.starts_with(&format!(
            "Converting byte[] to Kafka Connect data failed due to serialization error of topic \
             orders: Error deserializing JSON message for id {id}: "
        )),
        "{error}"
    );
}

#[test]
fn the_converter_works_against_the_registry_without_a_runtime() {
    round_trip_through_the_registry();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_converter_works_inside_the_workers_runtime() {
    round_trip_through_the_registry();
}
