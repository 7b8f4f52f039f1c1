//! The Avro converter (`io.confluent.connect.avro.AvroConverter`) against Sluice's real
//! schema registry on a real in-process broker: registration under TopicNameStrategy
//! subjects, reads by id, `auto.register.schemas=false`, `use.latest.version`, unknown ids,
//! bad bytes; from a worker's multi-threaded runtime, a current-thread runtime and no
//! runtime at all.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;
#[path = "support/registry.rs"]
mod registry;

use std::sync::Arc;

use registry::{an_order, order, registry, registry_converter, versions};
use sluice_connect::data::{DataError, Schema, Type, Value};

fn round_trip_through_the_registry() {
    let url = registry();
    let writer = registry_converter("io.confluent.connect.avro.AvroConverter", &url, &[], false);
    let schema = order();
    let bytes = writer
        .from_connect("orders", Some(&schema), &an_order(None))
        .unwrap()
        .unwrap();
    assert_eq!(&bytes[..5], [0, 0, 0, 0, 1], "magic byte, then schema id 1");
    assert_eq!(versions(&url, "orders-value"), "[1]");
    // The same schema again is the same id and version.
    let again = writer
        .from_connect("orders", Some(&schema), &an_order(Some("x")))
        .unwrap()
        .unwrap();
    assert_eq!(&again[..5], [0, 0, 0, 0, 1]);
    assert_eq!(versions(&url, "orders-value"), "[1]");
    // Null is a tombstone; a required schema refuses it.
    assert_eq!(writer.from_connect("orders", None, &Value::Null), Ok(None));
    assert_eq!(
        writer.from_connect("orders", Some(&schema), &Value::Null),
        Err(DataError("Found null value for non-optional schema".into()))
    );

    let reader = registry_converter("io.confluent.connect.avro.AvroConverter", &url, &[], false);
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
    assert_eq!(read.get("price"), Some(&Value::Bytes(vec![0x04, 0xd2])));
    assert_eq!(reader.to_connect("orders", None), Ok((None, Value::Null)));

    // A key converter registers under <topic>-key.
    let keys = registry_converter("io.confluent.connect.avro.AvroConverter", &url, &[], true);
    keys.from_connect(
        "orders",
        Some(&Arc::new(Schema::new(Type::String))),
        &Value::String("k".into()),
    )
    .unwrap();
    assert_eq!(versions(&url, "orders-key"), "[1]");

    // Without auto-registration, an unregistered schema is refused with the registry's
    // 40403, and a registered one is found.
    let strict = registry_converter(
        "io.confluent.connect.avro.AvroConverter",
        &url,
        &[("auto.register.schemas", "false")],
        false,
    );
    let other = Arc::new(Schema::new(Type::Int32));
    let error = strict
        .from_connect("orders", Some(&other), &Value::Int32(1))
        .unwrap_err()
        .0;
    assert!(
        error.starts_with(
            "Failed to serialize Avro data from topic orders: Error retrieving Avro schema"
        ),
        "{error}"
    );
    assert!(error.contains("40403"), "{error}");
    let found = strict
        .from_connect("orders", Some(&schema), &an_order(None))
        .unwrap()
        .unwrap();
    assert_eq!(&found[..5], [0, 0, 0, 0, 1]);

    // use.latest.version writes with the subject's latest schema and id, and refuses a
    // schema the latest cannot read.
    let latest = registry_converter(
        "io.confluent.connect.avro.AvroConverter",
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
        "Failed to serialize Avro data from topic orders: Incompatible schema of type 'AVRO'. Set latest.compatibility.strict=false to disable this check. See log file for more details."
    );

    // An unknown id, and bytes without the magic byte.
    let error = reader
        .to_connect("orders", Some(&[0, 0, 0, 0, 99]))
        .unwrap_err()
        .0;
    assert!(
        error.starts_with("Failed to deserialize data for topic orders to Avro: Error retrieving Avro value schema for id 99: "),
        "{error}"
    );
    assert_eq!(
        reader.to_connect("orders", Some(b"{}")).unwrap_err().0,
        "Failed to deserialize data for topic orders to Avro: Unknown magic byte!"
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

#[tokio::test(flavor = "current_thread")]
async fn the_converter_works_inside_a_current_thread_runtime() {
    round_trip_through_the_registry();
}
