//! Sluice's schema registry: Confluent Schema Registry's REST API, its storage in the
//! compacted `_schemas` topic, the compatibility rules of its three schema types, and the
//! serializers that put Confluent's wire format on records.
//!
//! What it is: a service (`sluice registry`, or in-process with `sluice server
//! --with-registry`) that any Confluent client talks to unchanged, and a library of
//! serializers for the Rust client. What it is not: part of the broker or of the client —
//! the broker knows nothing of schemas, and `sluice-client` stays free of schema code; the
//! registry is a client application of the broker like any other.
//!
//! The schema types live behind one trait ([`schema::ParsedSchema`]): [`avro`],
//! [`protobuf`] and [`json_schema`] each parse, canonicalize and judge compatibility;
//! [`compatibility`] applies a level (BACKWARD, FULL_TRANSITIVE, ...) over a subject's
//! versions.

pub mod avro;
pub mod client;
pub mod compatibility;
pub mod error;
pub mod fuzzing;
pub mod http;
pub mod json_schema;
pub mod kafka_store;
pub mod known_types;
pub mod leader;
pub mod protobuf;
pub mod records;
pub mod registry;
pub mod schema;
pub mod serde;
pub mod server;
pub mod store;
