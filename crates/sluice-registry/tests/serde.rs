//! The serializers and deserializers of `sluice_registry::serde` and the registry client,
//! against a real registry over a real in-process broker: round trips of Avro, Protobuf
//! and JSON under each subject name strategy with auto-registration, the subjects they
//! register, Confluent's wire format byte for byte, and malformed input refused with
//! typed errors. Codec-only checks (wire format, strategies, schema parsing) need no
//! registry and come first.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;

use apache_avro::types::Value as AvroValue;
use common::TestNode;
use proptest::prelude::*;
use prost::Message;
use prost_reflect::{DynamicMessage, FileDescriptor, ReflectMessage, Value as ProtoValue};
use serde_json::json;
use sluice_registry::client::{
    ClientError, Schema, SchemaReference, SchemaRegistryClient, SchemaType, VersionSelector,
};
use sluice_registry::serde::avro::{AvroDeserializer, AvroSerializer, ParsedAvroSchema};
use sluice_registry::serde::json::{CompiledJsonSchema, JsonDeserializer, JsonSerializer};
use sluice_registry::serde::protobuf::{
    ProtobufDeserializer, ProtobufSerializer, build_file, message_indexes,
};
use sluice_registry::serde::wire::{
    self, WireFormatError, read_header, read_message_indexes, write_header, write_message_indexes,
};
use sluice_registry::serde::{
    RecordNameStrategy, SerdeError, SerializerConfig, SubjectNameStrategy, TopicNameStrategy,
    TopicRecordNameStrategy,
};
use sluice_registry::server::{RegistryConfig, RunningRegistry, start};

const ORDER: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"},{"name":"note","type":["null","string"],"default":null}]}"#;
/// ORDER without `note`, plus a defaulted `currency`: reads what ORDER wrote.
const ORDER_READER: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"},{"name":"currency","type":"string","default":"USD"}]}"#;
const ADDRESS: &str = r#"{"type":"record","name":"Address","namespace":"com.example","fields":[{"name":"city","type":"string"}]}"#;
const CUSTOMER: &str = r#"{"type":"record","name":"Customer","namespace":"com.example","fields":[{"name":"name","type":"string"},{"name":"address","type":"com.example.Address"}]}"#;

const MONEY_PROTO: &str = r#"syntax = "proto3";
package common;
message Money { string currency = 1; int64 units = 2; }
"#;
const ORDERS_PROTO: &str = r#"syntax = "proto3";
package shop;
import "common/money.proto";
import "google/protobuf/timestamp.proto";
message Header { string source = 1; }
message Order {
  message Line { string sku = 1; common.Money price = 2; }
  string id = 1;
  repeated Line lines = 2;
  google.protobuf.Timestamp placed_at = 3;
  map<string, string> tags = 4;
}
"#;

const EVENT_JSON_SCHEMA: &str = r#"{"$schema":"http://json-schema.org/draft-07/schema#","title":"com.example.Event","type":"object","properties":{"kind":{"type":"string"},"count":{"type":"integer","minimum":0}},"required":["kind"]}"#;

// -- codecs, no registry ---------------------------------------------------------------------

#[test]
fn wire_format_is_confluents_byte_for_byte() {
    // Magic byte 0, then the id big-endian.
    for (id, bytes) in [
        (1, [0u8, 0, 0, 0, 1]),
        (258, [0, 0, 0, 1, 2]),
        (i32::MAX, [0, 0x7f, 0xff, 0xff, 0xff]),
    ] {
        let mut buffer = Vec::new();
        write_header(&mut buffer, id);
        assert_eq!(buffer, bytes, "id {id}");
        assert_eq!(read_header(&bytes), Ok((id, &[][..])));
    }
    // The Avro string "hi" under id 1: the header, then zig-zag length 2 and the bytes.
    let framed = [0u8, 0, 0, 0, 1, 4, b'h', b'i'];
    assert_eq!(read_header(&framed), Ok((1, &[4, b'h', b'i'][..])));

    // Protobuf message indexes: [0] is the single byte 0; otherwise a zig-zag varint
    // count then zig-zag varint indexes.
    let cases: &[(&[i32], &[u8])] = &[
        (&[0], &[0]),
        (&[1], &[2, 2]),
        (&[1, 0], &[4, 2, 0]),
        (&[0, 2, 1], &[6, 0, 4, 2]),
        (&[64], &[2, 0x80, 0x01]),
    ];
    for (indexes, bytes) in cases {
        let mut buffer = Vec::new();
        write_message_indexes(&mut buffer, indexes);
        assert_eq!(buffer, *bytes, "{indexes:?}");
        assert_eq!(
            read_message_indexes(bytes),
            Ok((indexes.to_vec(), &[][..])),
            "{bytes:?}"
        );
    }
}

#[test]
fn malformed_frames_are_typed_errors() {
    let truncated = |needed, available| WireFormatError::Truncated { needed, available };
    let headers: &[(&[u8], WireFormatError)] = &[
        (&[], truncated(5, 0)),
        (&[1, 0, 0, 0, 1], WireFormatError::UnknownMagicByte(1)),
        (&[0x7b, b'"', b'a'], WireFormatError::UnknownMagicByte(b'{')),
        (&[0, 0, 0], truncated(5, 3)),
    ];
    for (bytes, error) in headers {
        assert_eq!(read_header(bytes), Err(error.clone()), "{bytes:?}");
    }
    let indexes: &[(&[u8], WireFormatError)] = &[
        (&[], truncated(1, 0)),
        (
            &[0x80, 0x80, 0x80, 0x80, 0x80, 0x01],
            WireFormatError::VarintTooLong,
        ),
        (
            &[0x80, 0x80, 0x80, 0x80, 0x80],
            WireFormatError::VarintTooLong,
        ),
        (&[0x80], truncated(2, 1)),
        (&[1], WireFormatError::MessageIndexCount(-1)),
        (&[202, 1], WireFormatError::MessageIndexCount(101)),
        (&[2, 1], WireFormatError::NegativeMessageIndex(-1)),
        (&[4, 2], truncated(1, 0)),
    ];
    for (bytes, error) in indexes {
        assert_eq!(read_message_indexes(bytes), Err(error.clone()), "{bytes:?}");
    }
}

proptest! {
    #[test]
    fn varints_round_trip(value in any::<i32>(), tail in proptest::collection::vec(any::<u8>(), 0..4)) {
        let mut buffer = Vec::new();
        wire::write_zigzag_varint(&mut buffer, value);
        prop_assert!(buffer.len() <= 5);
        buffer.extend_from_slice(&tail);
        prop_assert_eq!(wire::read_zigzag_varint(&buffer), Ok((value, &tail[..])));
    }

    #[test]
    fn message_indexes_round_trip(indexes in proptest::collection::vec(0..i32::MAX, 1..8)) {
        let mut buffer = Vec::new();
        write_message_indexes(&mut buffer, &indexes);
        prop_assert_eq!(read_message_indexes(&buffer), Ok((indexes.clone(), &[][..])));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..24)) {
        let _ = read_header(&bytes);
        let _ = read_message_indexes(&bytes);
        let order = ParsedAvroSchema::parse(ORDER, &[]).unwrap();
        let _ = order.decode(&bytes, None);
    }
}

/// (strategy, is_key, record name, the subject it names).
type StrategyCase = (
    &'static dyn SubjectNameStrategy,
    bool,
    Option<&'static str>,
    Option<&'static str>,
);

#[test]
fn strategies_name_subjects_as_confluent() {
    let cases: [StrategyCase; 7] = [
        (&TopicNameStrategy, false, Some("a.B"), Some("orders-value")),
        (&TopicNameStrategy, true, None, Some("orders-key")),
        (&RecordNameStrategy, false, Some("a.B"), Some("a.B")),
        (&RecordNameStrategy, true, Some("a.B"), Some("a.B")),
        (&RecordNameStrategy, false, None, None),
        (
            &TopicRecordNameStrategy,
            false,
            Some("a.B"),
            Some("orders-a.B"),
        ),
        (&TopicRecordNameStrategy, true, None, None),
    ];
    for (strategy, is_key, record_name, want) in cases {
        let subject = strategy.subject("orders", is_key, record_name).ok();
        assert_eq!(
            subject.as_deref(),
            want,
            "{strategy:?} {is_key} {record_name:?}"
        );
    }
}

#[test]
fn serializer_config_reads_confluents_keys() {
    let config = SerializerConfig::from_map([
        ("auto.register.schemas", "false"),
        ("use.latest.version", "true"),
        ("normalize.schemas", "true"),
    ])
    .unwrap();
    assert_eq!(
        config,
        SerializerConfig {
            auto_register_schemas: false,
            use_latest_version: true,
            normalize_schemas: true,
            skip_known_types: true,
        }
    );
    for bad in [
        vec![("use.latest.version", "true")],
        vec![("auto.register.schemas", "yes")],
        vec![("schema.registry.url", "http://x")],
    ] {
        assert!(
            matches!(
                SerializerConfig::from_map(bad.clone()),
                Err(SerdeError::Config(_))
            ),
            "{bad:?}"
        );
    }
}

#[test]
fn avro_datums_round_trip_and_resolve_to_a_reader_schema() {
    let writer = ParsedAvroSchema::parse(ORDER, &[]).unwrap();
    assert_eq!(writer.record_name().as_deref(), Some("com.example.Order"));
    let json = json!({"id": "o-1", "amount": 2.5, "note": "gift"});
    let value = writer
        .conform(AvroValue::try_from(json.clone()).unwrap())
        .unwrap();
    let mut bytes = Vec::new();
    writer.encode(&value, &mut bytes).unwrap();
    let decoded = writer.decode(&bytes, None).unwrap();
    assert_eq!(serde_json::Value::try_from(decoded).unwrap(), json);

    let reader = ParsedAvroSchema::parse(ORDER_READER, &[]).unwrap();
    let resolved = writer.decode(&bytes, Some(&reader)).unwrap();
    assert_eq!(
        serde_json::Value::try_from(resolved).unwrap(),
        json!({"id": "o-1", "amount": 2.5, "currency": "USD"})
    );

    // Named types of references.
    assert!(ParsedAvroSchema::parse(CUSTOMER, &[]).is_err());
    let customer = ParsedAvroSchema::parse(CUSTOMER, &[ADDRESS]).unwrap();
    let value = customer
        .conform(AvroValue::try_from(json!({"name": "Ada", "address": {"city": "Oslo"}})).unwrap())
        .unwrap();
    let mut bytes = Vec::new();
    customer.encode(&value, &mut bytes).unwrap();
    assert_eq!(bytes, [6, b'A', b'd', b'a', 8, b'O', b's', b'l', b'o']);
    assert_eq!(customer.decode(&bytes, None).unwrap(), value);

    // Malformed datums: empty, truncated string, an overlong varint, a negative length, a
    // union branch out of range.
    let malformed: &[&[u8]] = &[
        &[],
        &[8, b'o'],
        &[2, b'x', 0, 0, 0, 0, 0, 0, 0, 0, 2, 8, b'a'],
        &[
            0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
        ],
        &[0x7f],
        &[2, b'x', 0, 0, 0, 0, 0, 0, 0, 0, 6],
    ];
    for bytes in malformed {
        let result = writer.decode(bytes, None);
        assert!(
            matches!(
                result,
                Err(SerdeError::Avro(_) | SerdeError::CorruptAvroDatum)
            ),
            "{bytes:?}: {result:?}"
        );
    }
    // A value that does not match is refused before anything is written.
    let mut buffer = Vec::new();
    assert!(
        writer
            .encode(&AvroValue::String("not a record".into()), &mut buffer)
            .is_err()
    );
}

#[test]
fn json_schemas_validate_and_resolve_references() {
    let compiled = CompiledJsonSchema::compile(EVENT_JSON_SCHEMA, &[]).unwrap();
    assert_eq!(compiled.record_name(), Some("com.example.Event"));
    compiled
        .validate(&json!({"kind": "click", "count": 1}))
        .unwrap();
    let error = compiled
        .validate(&json!({"kind": "click", "count": -1}))
        .unwrap_err();
    assert!(error.to_string().contains("/count"), "{error}");
    assert!(compiled.validate(&json!({})).is_err());

    let address =
        r#"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#;
    let customer = r#"{"type":"object","properties":{"address":{"$ref":"address.json"}}}"#;
    let compiled = CompiledJsonSchema::compile(
        customer,
        &[("address.json".to_string(), address.to_string())],
    )
    .unwrap();
    compiled
        .validate(&json!({"address": {"city": "Oslo"}}))
        .unwrap();
    assert!(compiled.validate(&json!({"address": {}})).is_err());
}

#[test]
fn protobuf_message_indexes_follow_the_file() {
    let file = orders_file();
    let cases = [
        ("shop.Header", vec![0]),
        ("shop.Order", vec![1]),
        ("shop.Order.Line", vec![1, 0]),
        // The map's synthetic entry type is nested after Line, as protoc declares it.
        ("shop.Order.TagsEntry", vec![1, 1]),
    ];
    for (name, indexes) in cases {
        let message = file.parent_pool().get_message_by_name(name).unwrap();
        assert_eq!(message_indexes(&message), indexes, "{name}");
        let found = sluice_registry::serde::protobuf::message_at(&file, &indexes).unwrap();
        assert_eq!(found.full_name(), name);
    }
    assert!(sluice_registry::serde::protobuf::message_at(&file, &[2]).is_none());
    assert!(sluice_registry::serde::protobuf::message_at(&file, &[1, 5]).is_none());
}

/// Serializers are shared between tasks: they, the futures of their calls and their errors
/// are `Send` (and the serializers `Sync`), so `tokio::spawn` takes them.
#[tokio::test]
async fn serializers_and_their_futures_are_send() {
    fn send_sync<T: Send + Sync + 'static>() {}
    fn send<T: Send>(_: T) {}
    send_sync::<SerdeError>();
    send_sync::<AvroSerializer>();
    send_sync::<AvroDeserializer>();
    send_sync::<ProtobufSerializer>();
    send_sync::<ProtobufDeserializer>();
    send_sync::<JsonSerializer>();
    send_sync::<JsonDeserializer>();
    let client = SchemaRegistryClient::from_url("http://127.0.0.1:9").unwrap();
    let avro = AvroSerializer::new(client.clone(), ORDER, TopicNameStrategy, false).unwrap();
    let avro_reader = AvroDeserializer::new(client.clone());
    let protobuf = ProtobufSerializer::new(client.clone(), TopicNameStrategy, false);
    let protobuf_reader = ProtobufDeserializer::new(client.clone());
    let json =
        JsonSerializer::new(client.clone(), EVENT_JSON_SCHEMA, TopicNameStrategy, false).unwrap();
    let json_reader = JsonDeserializer::new(client);
    let order = message(&orders_file(), "shop.Order", &[]);
    send(avro.serialize("t", &AvroValue::Null));
    send(avro.serialize_json("t", &json!({})));
    send(avro_reader.deserialize(&[]));
    send(protobuf.serialize("t", &order));
    send(protobuf_reader.deserialize(&[]));
    send(json.serialize("t", &json!({})));
    send(json_reader.deserialize(&[]));
}

// -- against a registry ----------------------------------------------------------------------

struct Harness {
    _node: TestNode,
    registry: RunningRegistry,
    client: SchemaRegistryClient,
}

impl Harness {
    async fn start() -> Harness {
        let node = TestNode::start(&[("group.initial.rebalance.delay.ms", "0")]).await;
        let mut config = RegistryConfig::new(
            vec![node.address.to_string()],
            "127.0.0.1:0".parse().unwrap(),
        );
        config.store.replication_factor = 1;
        let registry = start(config).await.expect("the registry starts");
        let client = SchemaRegistryClient::from_url(&registry.url()).unwrap();
        Harness {
            _node: node,
            registry,
            client,
        }
    }

    /// `GET /subjects`, asked without the client under test.
    async fn subjects(&self) -> Vec<String> {
        let response = reqwest::get(format!("{}/subjects", self.registry.url()))
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }
}

fn strategy_cases(
    topic: &str,
    record_name: &str,
) -> Vec<(Box<dyn SubjectNameStrategy>, bool, String)> {
    vec![
        (Box::new(TopicNameStrategy), false, format!("{topic}-value")),
        (Box::new(TopicNameStrategy), true, format!("{topic}-key")),
        (Box::new(RecordNameStrategy), false, record_name.to_string()),
        (
            Box::new(TopicRecordNameStrategy),
            false,
            format!("{topic}-{record_name}"),
        ),
    ]
}

fn id_of(payload: &[u8]) -> i32 {
    read_header(payload).unwrap().0
}

fn registry_code(error: &SerdeError) -> Option<i32> {
    match error {
        SerdeError::Registry(error) => error.error_code(),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_client_speaks_confluents_api() {
    let h = Harness::start().await;
    let client = &h.client;
    let v1 = Schema::new(SchemaType::Avro, ORDER);
    let id = client.register("orders-value", &v1, false).await.unwrap();
    assert_eq!(id, 1);
    // Registering again is answered (from the cache or the registry) with the same id.
    assert_eq!(
        client.register("orders-value", &v1, false).await.unwrap(),
        1
    );
    let by_id = client.get_schema_by_id(1).await.unwrap();
    assert_eq!(
        (by_id.schema_type, by_id.references.is_empty()),
        (SchemaType::Avro, true)
    );
    let found = client.lookup("orders-value", &v1, false).await.unwrap();
    assert_eq!(
        (found.subject.as_str(), found.id, found.version),
        ("orders-value", 1, 1)
    );
    let latest = client.get_latest("orders-value").await.unwrap();
    assert_eq!((latest.id, latest.version), (1, 1));
    let first = client
        .get_version("orders-value", VersionSelector::Number(1))
        .await
        .unwrap();
    assert_eq!(first, latest);
    assert_eq!(client.subjects().await.unwrap(), vec!["orders-value"]);
    assert_eq!(client.versions("orders-value").await.unwrap(), vec![1]);

    let compatible = Schema::new(SchemaType::Avro, ORDER_READER);
    assert!(
        client
            .test_compatibility("orders-value", VersionSelector::Latest, &compatible)
            .await
            .unwrap()
    );
    let incompatible = Schema::new(
        SchemaType::Avro,
        r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"int"}]}"#,
    );
    assert!(
        !client
            .test_compatibility("orders-value", VersionSelector::Latest, &incompatible)
            .await
            .unwrap()
    );

    // Confluent's error codes reach the caller.
    fn code<T: std::fmt::Debug>(result: Result<T, ClientError>) -> Option<i32> {
        result.err().and_then(|e| e.error_code())
    }
    assert_eq!(code(client.get_latest("missing").await), Some(40401));
    assert_eq!(
        code(
            client
                .get_version("orders-value", VersionSelector::Number(7))
                .await
        ),
        Some(40402)
    );
    assert_eq!(code(client.get_schema_by_id(999).await), Some(40403));
    assert_eq!(
        code(client.lookup("orders-value", &compatible, false).await),
        Some(40403)
    );
    assert_eq!(
        code(
            client
                .register("orders-value", &Schema::new(SchemaType::Avro, "{"), false)
                .await
        ),
        Some(42201)
    );
    assert_eq!(
        code(client.register("orders-value", &incompatible, false).await),
        Some(409)
    );

    // A second URL that does not answer is skipped.
    let failover = SchemaRegistryClient::from_url(&format!(
        "http://127.0.0.1:{},{}",
        common::free_port(),
        h.registry.url()
    ))
    .unwrap();
    assert_eq!(
        failover.subjects().await.unwrap(),
        vec!["orders-value".to_string()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn avro_round_trips_under_each_strategy() {
    let h = Harness::start().await;

    // The first schema of a fresh registry gets id 1: the Avro string "hi" is exactly the
    // frame Confluent documents.
    let strings =
        AvroSerializer::new(h.client.clone(), r#""string""#, TopicNameStrategy, false).unwrap();
    let framed = strings
        .serialize("greetings", &AvroValue::String("hi".into()))
        .await
        .unwrap();
    assert_eq!(framed, [0, 0, 0, 0, 1, 4, b'h', b'i']);
    let deserializer = AvroDeserializer::new(h.client.clone());
    assert_eq!(
        deserializer
            .deserialize(&[0, 0, 0, 0, 1, 4, b'h', b'i'])
            .await
            .unwrap(),
        AvroValue::String("hi".into())
    );
    // A primitive has no record name.
    let unnamed =
        AvroSerializer::new(h.client.clone(), r#""string""#, RecordNameStrategy, false).unwrap();
    assert!(matches!(
        unnamed.serialize("greetings", &AvroValue::Null).await,
        Err(SerdeError::NoRecordName { .. })
    ));

    let order = json!({"id": "o-1", "amount": 12.5, "note": null});
    let mut ids = Vec::new();
    for (strategy, is_key, subject) in strategy_cases("orders", "com.example.Order") {
        let serializer = AvroSerializer::new(h.client.clone(), ORDER, strategy, is_key).unwrap();
        assert_eq!(serializer.subject("orders").unwrap(), subject);
        let payload = serializer.serialize_json("orders", &order).await.unwrap();
        ids.push(id_of(&payload));
        let read = deserializer.deserialize_json(&payload).await.unwrap();
        assert_eq!(read, order, "{subject}");
    }
    // One schema, one id, whatever the subject.
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    let subjects = h.subjects().await;
    for subject in [
        "greetings-value",
        "orders-value",
        "orders-key",
        "com.example.Order",
        "orders-com.example.Order",
    ] {
        assert!(
            subjects.contains(&subject.to_string()),
            "{subject} in {subjects:?}"
        );
    }

    // serde types in and out, `Option` through the union.
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Order {
        id: String,
        amount: f64,
        note: Option<String>,
    }
    let serializer =
        AvroSerializer::new(h.client.clone(), ORDER, TopicNameStrategy, false).unwrap();
    for note in [None, Some("gift".to_string())] {
        let order = Order {
            id: "o-2".into(),
            amount: 1.0,
            note,
        };
        let payload = serializer.serialize_serde("orders", &order).await.unwrap();
        let read: Order = deserializer.deserialize_into(&payload).await.unwrap();
        assert_eq!(read, order);
    }

    // A reader schema resolves what the writer wrote.
    let reader = AvroDeserializer::new(h.client.clone())
        .with_reader_schema(ORDER_READER, &[])
        .unwrap();
    let payload = serializer
        .serialize_json("orders", &json!({"id": "o-3", "amount": 3.0, "note": "x"}))
        .await
        .unwrap();
    assert_eq!(
        reader.deserialize_json(&payload).await.unwrap(),
        json!({"id": "o-3", "amount": 3.0, "currency": "USD"})
    );

    // A value that does not match the schema is an error.
    assert!(matches!(
        serializer
            .serialize("orders", &AvroValue::String("x".into()))
            .await,
        Err(SerdeError::Avro(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn avro_references_latest_version_and_no_auto_registration() {
    let h = Harness::start().await;
    let client = &h.client;
    client
        .register("address", &Schema::new(SchemaType::Avro, ADDRESS), false)
        .await
        .unwrap();
    let references = vec![SchemaReference {
        name: "com.example.Address".into(),
        subject: "address".into(),
        version: 1,
    }];
    let serializer = AvroSerializer::with_references(
        client.clone(),
        CUSTOMER,
        references.clone(),
        TopicNameStrategy,
        false,
    )
    .await
    .unwrap();
    let customer = json!({"name": "Ada", "address": {"city": "Oslo"}});
    let payload = serializer
        .serialize_json("customers", &customer)
        .await
        .unwrap();
    // A fresh client: the deserializer fetches the schema and its reference itself.
    let fresh = SchemaRegistryClient::from_url(&h.registry.url()).unwrap();
    let read = AvroDeserializer::new(fresh)
        .deserialize_json(&payload)
        .await
        .unwrap();
    assert_eq!(read, customer);
    let registered = client.get_latest("customers-value").await.unwrap();
    assert_eq!(registered.schema.references, references);

    // Without auto-registration the schema must already be under the subject.
    let lookup_only = SerializerConfig {
        auto_register_schemas: false,
        ..SerializerConfig::default()
    };
    let serializer = AvroSerializer::new(client.clone(), ORDER, TopicNameStrategy, false)
        .unwrap()
        .with_config(lookup_only)
        .unwrap();
    let order = json!({"id": "o-1", "amount": 1.5, "note": null});
    let error = serializer
        .serialize_json("orders", &order)
        .await
        .unwrap_err();
    assert_eq!(registry_code(&error), Some(40401), "{error}");
    let id = client
        .register("orders-value", &Schema::new(SchemaType::Avro, ORDER), false)
        .await
        .unwrap();
    let payload = serializer.serialize_json("orders", &order).await.unwrap();
    assert_eq!(id_of(&payload), id);

    // use.latest.version writes with the latest version (v2 adds a defaulted field).
    let v2 = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"},{"name":"note","type":["null","string"],"default":null},{"name":"currency","type":"string","default":"EUR"}]}"#;
    let v2_id = client
        .register("orders-value", &Schema::new(SchemaType::Avro, v2), false)
        .await
        .unwrap();
    let latest = SerializerConfig {
        auto_register_schemas: false,
        use_latest_version: true,
        ..SerializerConfig::default()
    };
    let serializer = AvroSerializer::new(client.clone(), ORDER, TopicNameStrategy, false)
        .unwrap()
        .with_config(latest)
        .unwrap();
    let payload = serializer.serialize_json("orders", &order).await.unwrap();
    assert_eq!(id_of(&payload), v2_id);
    let read = AvroDeserializer::new(client.clone())
        .deserialize_json(&payload)
        .await
        .unwrap();
    assert_eq!(
        read,
        json!({"id": "o-1", "amount": 1.5, "note": null, "currency": "EUR"})
    );
}

fn orders_file() -> FileDescriptor {
    build_file(
        "shop/orders.proto",
        ORDERS_PROTO,
        &[("common/money.proto".to_string(), MONEY_PROTO.to_string())],
    )
    .expect("the test schema compiles")
}

fn message(file: &FileDescriptor, name: &str, fields: &[(&str, ProtoValue)]) -> DynamicMessage {
    let descriptor = file
        .parent_pool()
        .get_message_by_name(name)
        .unwrap_or_else(|| panic!("{name} in the test schema"));
    let mut message = DynamicMessage::new(descriptor);
    for (field, value) in fields {
        message.set_field_by_name(field, value.clone());
    }
    message
}

/// (message, strategy, is_key, subject, the message index bytes after the id)
type ProtobufCase = (
    DynamicMessage,
    Box<dyn SubjectNameStrategy>,
    bool,
    &'static str,
    &'static [u8],
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_round_trips_under_each_strategy() {
    let h = Harness::start().await;
    let file = orders_file();
    let money = message(
        &file,
        "common.Money",
        &[
            ("currency", ProtoValue::String("EUR".into())),
            ("units", ProtoValue::I64(12)),
        ],
    );
    let line = message(
        &file,
        "shop.Order.Line",
        &[
            ("sku", ProtoValue::String("sku-1".into())),
            ("price", ProtoValue::Message(money)),
        ],
    );
    let placed_at = message(
        &file,
        "google.protobuf.Timestamp",
        &[("seconds", ProtoValue::I64(1_700_000_000))],
    );
    let order = message(
        &file,
        "shop.Order",
        &[
            ("id", ProtoValue::String("o-1".into())),
            (
                "lines",
                ProtoValue::List(vec![ProtoValue::Message(line.clone())]),
            ),
            ("placed_at", ProtoValue::Message(placed_at)),
        ],
    );
    let header = message(
        &file,
        "shop.Header",
        &[("source", ProtoValue::String("web".into()))],
    );

    let cases: Vec<ProtobufCase> = vec![
        (
            order.clone(),
            Box::new(TopicNameStrategy),
            false,
            "orders-value",
            &[2, 2],
        ),
        (
            header.clone(),
            Box::new(TopicNameStrategy),
            true,
            "orders-key",
            &[0],
        ),
        (
            line.clone(),
            Box::new(RecordNameStrategy),
            false,
            "shop.Order.Line",
            &[4, 2, 0],
        ),
        (
            order.clone(),
            Box::new(TopicRecordNameStrategy),
            false,
            "orders-shop.Order",
            &[2, 2],
        ),
    ];
    let deserializer = ProtobufDeserializer::new(h.client.clone());
    for (written, strategy, is_key, subject, index_bytes) in cases {
        let serializer = ProtobufSerializer::new(h.client.clone(), strategy, is_key);
        assert_eq!(
            serializer.subject("orders", &written.descriptor()).unwrap(),
            subject
        );
        let payload = match serializer.serialize("orders", &written).await {
            Ok(payload) => payload,
            Err(e) => panic!("{subject}: {e}"),
        };
        let encoded = written.encode_to_vec();
        assert_eq!(
            &payload[5..],
            [index_bytes, encoded.as_slice()].concat().as_slice(),
            "{subject}"
        );
        let read = deserializer.deserialize(&payload).await.unwrap();
        assert_eq!(
            read.descriptor().full_name(),
            written.descriptor().full_name()
        );
        assert_eq!(read.encode_to_vec(), encoded, "{subject}");
    }
    // The import is registered under its path and referenced; Google's well-known types
    // are not registered (skip.known.types).
    let subjects = h.subjects().await;
    for subject in [
        "common/money.proto",
        "orders-value",
        "orders-key",
        "shop.Order.Line",
        "orders-shop.Order",
    ] {
        assert!(
            subjects.contains(&subject.to_string()),
            "{subject} in {subjects:?}"
        );
    }
    assert!(
        !subjects.iter().any(|s| s.starts_with("google/")),
        "{subjects:?}"
    );
    let registered = h.client.get_latest("orders-value").await.unwrap();
    assert_eq!(
        registered.schema.references,
        vec![SchemaReference {
            name: "common/money.proto".into(),
            subject: "common/money.proto".into(),
            version: 1,
        }]
    );
    // A record whose indexes name no message.
    let id = id_of(
        &ProtobufSerializer::new(h.client.clone(), TopicNameStrategy, false)
            .serialize("orders", &order)
            .await
            .unwrap(),
    );
    let mut unknown = Vec::new();
    write_header(&mut unknown, id);
    unknown.extend_from_slice(&[2, 18]);
    assert!(matches!(
        deserializer.deserialize(&unknown).await,
        Err(SerdeError::UnknownMessage { indexes, .. }) if indexes == [9]
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_round_trips_under_each_strategy() {
    let h = Harness::start().await;
    let event = json!({"kind": "click", "count": 3});

    // An invalid value is refused before anything is registered.
    let serializer = JsonSerializer::new(
        h.client.clone(),
        EVENT_JSON_SCHEMA,
        TopicNameStrategy,
        false,
    )
    .unwrap();
    assert!(matches!(
        serializer.serialize("invalid", &json!({"count": 1})).await,
        Err(SerdeError::JsonValidation(_))
    ));
    assert!(!h.subjects().await.contains(&"invalid-value".to_string()));

    let deserializer = JsonDeserializer::new(h.client.clone());
    for (strategy, is_key, subject) in strategy_cases("events", "com.example.Event") {
        let serializer =
            JsonSerializer::new(h.client.clone(), EVENT_JSON_SCHEMA, strategy, is_key).unwrap();
        assert_eq!(serializer.subject("events").unwrap(), subject);
        let payload = match serializer.serialize("events", &event).await {
            Ok(payload) => payload,
            Err(e) => panic!("{subject}: {e}"),
        };
        assert_eq!(&payload[5..], event.to_string().as_bytes());
        assert_eq!(deserializer.deserialize(&payload).await.unwrap(), event);
    }
    let subjects = h.subjects().await;
    for subject in [
        "events-value",
        "events-key",
        "com.example.Event",
        "events-com.example.Event",
    ] {
        assert!(
            subjects.contains(&subject.to_string()),
            "{subject} in {subjects:?}"
        );
    }

    // A record another writer framed that does not match the schema: refused when
    // validating, read when not.
    let id = id_of(&serializer.serialize("events", &event).await.unwrap());
    let mut invalid = Vec::new();
    write_header(&mut invalid, id);
    invalid.extend_from_slice(br#"{"count":-1}"#);
    assert!(matches!(
        deserializer.deserialize(&invalid).await,
        Err(SerdeError::JsonValidation(_))
    ));
    let lenient = JsonDeserializer::new(h.client.clone()).without_validation();
    assert_eq!(
        lenient.deserialize(&invalid).await.unwrap(),
        json!({"count": -1})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_records_are_typed_errors() {
    let h = Harness::start().await;
    let avro =
        AvroSerializer::new(h.client.clone(), r#""string""#, TopicNameStrategy, false).unwrap();
    let avro_id = id_of(
        &avro
            .serialize("t", &AvroValue::String("x".into()))
            .await
            .unwrap(),
    );
    let json_id = id_of(
        &JsonSerializer::new(h.client.clone(), EVENT_JSON_SCHEMA, TopicNameStrategy, true)
            .unwrap()
            .serialize("t", &json!({"kind": "k"}))
            .await
            .unwrap(),
    );
    let framed = |id: i32, body: &[u8]| {
        let mut payload = Vec::new();
        write_header(&mut payload, id);
        payload.extend_from_slice(body);
        payload
    };

    let avro_deserializer = AvroDeserializer::new(h.client.clone());
    let protobuf_deserializer = ProtobufDeserializer::new(h.client.clone());
    let json_deserializer = JsonDeserializer::new(h.client.clone());

    // What every format shares: the frame.
    for payload in [&[][..], &[1, 0, 0, 0, 1, 2, b'x'], &[0, 0, 0]] {
        assert!(
            matches!(
                avro_deserializer.deserialize(payload).await,
                Err(SerdeError::WireFormat(_))
            ),
            "{payload:?}"
        );
        assert!(matches!(
            protobuf_deserializer.deserialize(payload).await,
            Err(SerdeError::WireFormat(_))
        ));
        assert!(matches!(
            json_deserializer.deserialize(payload).await,
            Err(SerdeError::WireFormat(_))
        ));
    }
    // An id the registry does not know: Confluent's 40403.
    let unknown = framed(9999, &[2, b'x']);
    let error = avro_deserializer.deserialize(&unknown).await.unwrap_err();
    assert_eq!(registry_code(&error), Some(40403), "{error}");
    let error = protobuf_deserializer
        .deserialize(&framed(9999, &[0]))
        .await
        .unwrap_err();
    assert_eq!(registry_code(&error), Some(40403), "{error}");

    // A truncated Avro datum.
    let result = avro_deserializer
        .deserialize(&framed(avro_id, &[8, b'h']))
        .await;
    assert!(
        matches!(result, Err(SerdeError::CorruptAvroDatum)),
        "{result:?}"
    );
    // The schema behind the id is of another type.
    assert!(matches!(
        avro_deserializer.deserialize(&framed(json_id, b"{}")).await,
        Err(SerdeError::SchemaTypeMismatch { .. })
    ));
    assert!(matches!(
        protobuf_deserializer
            .deserialize(&framed(avro_id, &[0]))
            .await,
        Err(SerdeError::SchemaTypeMismatch { .. })
    ));
    // Bad message indexes are refused before the registry is asked.
    for (indexes, error) in [
        (
            &[0x80, 0x80, 0x80, 0x80, 0x80, 0x01][..],
            WireFormatError::VarintTooLong,
        ),
        (&[1][..], WireFormatError::MessageIndexCount(-1)),
        (&[2, 3][..], WireFormatError::NegativeMessageIndex(-2)),
    ] {
        let result = protobuf_deserializer
            .deserialize(&framed(9999, indexes))
            .await;
        assert!(
            matches!(&result, Err(SerdeError::WireFormat(e)) if *e == error),
            "{indexes:?}: {result:?}"
        );
    }
    // Not JSON after the frame.
    assert!(matches!(
        json_deserializer
            .deserialize(&framed(json_id, b"{\"kind\""))
            .await,
        Err(SerdeError::Json(_))
    ));
}
