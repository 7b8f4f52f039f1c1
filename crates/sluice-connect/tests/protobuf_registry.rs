//! The Protobuf converter (`io.confluent.connect.protobuf.ProtobufConverter`) against
//! Sluice's real schema registry on a real in-process broker: registration under
//! TopicNameStrategy subjects (with imports of Confluent's known files and no references),
//! reads by id with the version, a stable id across converter restarts,
//! `auto.register.schemas=false`, `use.latest.version`, records written by another
//! serializer (a base64 descriptor, a nested message type), an AVRO id, unknown ids and
//! bad bytes; from a worker's multi-threaded runtime, a current-thread runtime and no
//! runtime at all.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;
#[path = "support/registry.rs"]
mod registry;

use std::sync::Arc;

use prost_reflect::{DynamicMessage, Value as ProtoValue};
use registry::{on_runtime, registry, registry_converter, versions};
use sluice_connect::converters::{Converter, converter};
use sluice_connect::data::{Schema, SchemaRef, Struct, Type, Value};
use sluice_registry::client::{ClientConfig, SchemaRegistryClient};
use sluice_registry::serde::protobuf::{ProtobufSerializer, build_file};
use sluice_registry::serde::strategy::TopicNameStrategy;

fn order() -> SchemaRef {
    let line = Schema::new(Type::Struct)
        .named("Line")
        .field("sku", Schema::new(Type::String))
        .field("quantity", Schema::new(Type::Int16));
    Arc::new(
        Schema::new(Type::Struct)
            .named("shop.Order")
            .field("id", Schema::new(Type::Int64))
            .field("note", Schema::new(Type::String).optional())
            .field("price", Schema::decimal(2))
            .field("created", Schema::timestamp())
            .field("lines", Schema::array(line)),
    )
}

fn an_order(note: Option<&str>) -> Value {
    let schema = order();
    let line_schema = schema
        .get_field("lines")
        .unwrap()
        .schema
        .value_schema
        .clone()
        .unwrap();
    let line = Struct::new(line_schema)
        .with("sku", Value::String("A-1".into()))
        .unwrap()
        .with("quantity", Value::Int16(3))
        .unwrap();
    let mut value = Struct::new(schema);
    value.put("id", Value::Int64(7)).unwrap();
    value
        .put(
            "note",
            note.map_or(Value::Null, |n| Value::String(n.into())),
        )
        .unwrap();
    value.put("price", Value::Bytes(vec![0x04, 0xd2])).unwrap();
    value
        .put("created", Value::Int64(1_700_000_000_123))
        .unwrap();
    value
        .put("lines", Value::Array(vec![Value::Struct(line)]))
        .unwrap();
    Value::Struct(value)
}

fn protobuf(url: &str, extra: &[(&str, &str)], is_key: bool) -> Box<dyn Converter> {
    registry_converter(
        "io.confluent.connect.protobuf.ProtobufConverter",
        url,
        extra,
        is_key,
    )
}

fn round_trip_through_the_registry() {
    let url = registry();
    let writer = protobuf(&url, &[], false);
    let schema = order();
    let bytes = writer
        .from_connect("orders", Some(&schema), &an_order(None))
        .unwrap()
        .unwrap();
    assert_eq!(
        &bytes[..6],
        [0, 0, 0, 0, 1, 0],
        "magic byte, schema id 1, indexes [0]"
    );
    assert_eq!(versions(&url, "orders-value"), "[1]");
    // The same schema again, and from a restarted converter, is the same id and version.
    let again = protobuf(&url, &[], false)
        .from_connect("orders", Some(&schema), &an_order(Some("x")))
        .unwrap()
        .unwrap();
    assert_eq!(&again[..6], [0, 0, 0, 0, 1, 0]);
    assert_eq!(versions(&url, "orders-value"), "[1]");
    assert_eq!(writer.from_connect("orders", None, &Value::Null), Ok(None));

    // Read back by id: the registry's version, every field optional with its tag.
    let reader = protobuf(&url, &[], false);
    let (read_schema, value) = reader.to_connect("orders", Some(&again)).unwrap();
    let read_schema = read_schema.unwrap();
    assert_eq!(read_schema.name.as_deref(), Some("Order"));
    assert_eq!(read_schema.version, Some(1));
    let quantity = &read_schema
        .get_field("lines")
        .unwrap()
        .schema
        .value_schema
        .as_ref()
        .unwrap()
        .get_field("quantity")
        .unwrap()
        .schema;
    assert_eq!(
        quantity.ty,
        Type::Int16,
        "connect.type survives the registry"
    );
    assert_eq!(
        value.to_string(),
        "Struct{id=7,note=x,price=[B@2,created=1700000000123,lines=[Struct{sku=A-1,quantity=3}]}"
    );
    let Value::Struct(read) = value else {
        panic!("a struct")
    };
    assert_eq!(read.get("price"), Some(&Value::Bytes(vec![0x04, 0xd2])));
    assert_eq!(reader.to_connect("orders", None), Ok((None, Value::Null)));

    // A key converter registers under <topic>-key, a raw string as Google's wrapper.
    let keys = protobuf(&url, &[], true);
    let key = keys
        .from_connect(
            "orders",
            Some(&Arc::new(Schema::new(Type::String))),
            &Value::String("k".into()),
        )
        .unwrap()
        .unwrap();
    assert_eq!(versions(&url, "orders-key"), "[1]");
    // StringValue is the 8th message of wrappers.proto: indexes [7].
    assert_eq!(&key[5..7], [2, 14]);
    let (key_schema, key_value) = keys.to_connect("orders", Some(&key)).unwrap();
    assert_eq!(
        (key_schema.unwrap().ty, key_value),
        (Type::String, Value::String("k".into()))
    );

    // Without auto-registration, an unregistered schema is refused with the registry's
    // 40403, and a registered one is found.
    let strict = protobuf(&url, &[("auto.register.schemas", "false")], false);
    let other: SchemaRef = Arc::new(
        Schema::new(Type::Struct)
            .named("shop.Other")
            .field("x", Schema::new(Type::Int32)),
    );
    let other_value = Value::Struct(
        Struct::new(other.clone())
            .with("x", Value::Int32(1))
            .unwrap(),
    );
    let error = strict
        .from_connect("orders", Some(&other), &other_value)
        .unwrap_err()
        .0;
    assert!(
        error.starts_with("Failed to serialize Protobuf data from topic orders: Error retrieving Protobuf schema: syntax"),
        "{error}"
    );
    assert!(error.contains("40403"), "{error}");
    let found = strict
        .from_connect("orders", Some(&schema), &an_order(None))
        .unwrap()
        .unwrap();
    assert_eq!(found, bytes);

    // use.latest.version frames with the subject's latest id; a message the latest
    // schema does not hold is refused.
    let latest = protobuf(
        &url,
        &[
            ("auto.register.schemas", "false"),
            ("use.latest.version", "true"),
        ],
        false,
    );
    assert_eq!(
        latest
            .from_connect("orders", Some(&schema), &an_order(None))
            .unwrap()
            .unwrap(),
        bytes
    );
    let error = latest
        .from_connect("orders", Some(&other), &other_value)
        .unwrap_err()
        .0;
    assert!(error.contains("has no message shop.Other"), "{error}");
    // latest.compatibility.strict: an Order whose id turned from int64 into string is one
    // the latest schema cannot read; without the check it is framed with the latest id.
    let changed: SchemaRef = Arc::new(
        Schema::new(Type::Struct)
            .named("shop.Order")
            .field("id", Schema::new(Type::String)),
    );
    let changed_value = Value::Struct(
        Struct::new(changed.clone())
            .with("id", Value::String("seven".into()))
            .unwrap(),
    );
    assert_eq!(
        latest
            .from_connect("orders", Some(&changed), &changed_value)
            .unwrap_err()
            .0,
        "Failed to serialize Protobuf data from topic orders: Incompatible schema of type 'PROTOBUF'. Set latest.compatibility.strict=false to disable this check. See log file for more details."
    );
    let lenient = protobuf(
        &url,
        &[
            ("auto.register.schemas", "false"),
            ("use.latest.version", "true"),
            ("latest.compatibility.strict", "false"),
        ],
        false,
    );
    let framed = lenient
        .from_connect("orders", Some(&changed), &changed_value)
        .unwrap()
        .unwrap();
    assert_eq!(&framed[..6], [0, 0, 0, 0, 1, 0]);

    // A record another serializer wrote: a base64 descriptor (what Confluent's Python
    // client registers), a nested message type (indexes [0, 0]).
    let file = build_file(
        "events.proto",
        "syntax = \"proto3\"; package ev; message Envelope { message Click { string page = 1; int32 x = 2; } Click click = 1; }",
        &[],
    )
    .unwrap();
    let click_type = file
        .parent_pool()
        .get_message_by_name("ev.Envelope.Click")
        .unwrap();
    let mut click = DynamicMessage::new(click_type);
    click.set_field_by_name("page", ProtoValue::String("/home".into()));
    click.set_field_by_name("x", ProtoValue::I32(-4));
    let registry_url = url.clone();
    let framed = on_runtime(async move {
        let client = SchemaRegistryClient::new(ClientConfig::new(&registry_url)).unwrap();
        ProtobufSerializer::new(client, TopicNameStrategy, false)
            .serialize("clicks", &click)
            .await
            .unwrap()
    });
    assert_eq!(&framed[5..8], [4, 0, 0], "indexes [0, 0]");
    let click_id = i32::from_be_bytes(framed[1..5].try_into().unwrap());
    let (click_schema, click_value) = reader.to_connect("clicks", Some(&framed)).unwrap();
    let click_schema = click_schema.unwrap();
    assert_eq!(
        (click_schema.name.as_deref(), click_schema.version),
        (Some("Click"), Some(1))
    );
    assert_eq!(click_value.to_string(), "Struct{page=/home,x=-4}");

    // A truncated message, bad indexes, an AVRO id and an unknown id.
    let error = reader
        .to_connect("clicks", Some(&framed[..framed.len() - 1]))
        .unwrap_err()
        .0;
    assert!(
        error.starts_with(&format!("Failed to deserialize data for topic clicks to Protobuf: Error deserializing Protobuf message for id {click_id}")),
        "{error}"
    );
    let mut bad_indexes = framed[..5].to_vec();
    bad_indexes.extend_from_slice(&[4, 0, 18]);
    let error = reader
        .to_connect("clicks", Some(&bad_indexes))
        .unwrap_err()
        .0;
    assert_eq!(
        error,
        format!(
            "Failed to deserialize data for topic clicks to Protobuf: Error deserializing Protobuf message for id {click_id}: no message at indexes [0, 9]"
        )
    );
    let avro = converter(
        "AvroConverter",
        &[("schema.registry.url".to_string(), url.clone())].into(),
        false,
        "value.converter",
    )
    .unwrap();
    // 0 is the Avro byte 0, which reads as message indexes [0]: the schema's type is
    // what refuses the record.
    let avro_bytes = avro
        .from_connect(
            "avro-topic",
            Some(&Arc::new(Schema::new(Type::Int32))),
            &Value::Int32(0),
        )
        .unwrap()
        .unwrap();
    let avro_id = i32::from_be_bytes(avro_bytes[1..5].try_into().unwrap());
    assert_eq!(
        reader
            .to_connect("avro-topic", Some(&avro_bytes))
            .unwrap_err()
            .0,
        format!(
            "Failed to deserialize data for topic avro-topic to Protobuf: Error retrieving Protobuf schema for id {avro_id}: the schema is AVRO"
        )
    );
    let error = reader
        .to_connect("orders", Some(&[0, 0, 0, 0, 99, 0]))
        .unwrap_err()
        .0;
    assert!(
        error.starts_with("Failed to deserialize data for topic orders to Protobuf: Error retrieving Protobuf schema for id 99: "),
        "{error}"
    );
    assert!(error.contains("40403"), "{error}");
    assert_eq!(
        reader.to_connect("orders", Some(b"{}")).unwrap_err().0,
        "Failed to deserialize data for topic orders to Protobuf: Unknown magic byte!"
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
