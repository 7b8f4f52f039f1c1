//! Entry points for `fuzz/` (cargo-fuzz targets `registry_schemas` and
//! `registry_records`): everything the registry reads from outside — schema texts in
//! requests, `_schemas` records, serialized records — must give a value or an error,
//! never a panic or an unbounded allocation.

use crate::records::Record;
use crate::schema::{self, SchemaType};
use crate::serde::wire;

/// The first byte picks a schema type, the rest is the schema text; when it parses, it is
/// canonicalized, normalized and checked against itself and against a fixed schema of
/// its type (compatibility in both directions).
pub fn schemas(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let schema_type = SchemaType::ALL[selector as usize % SchemaType::ALL.len()];
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let Ok(parsed) = schema::parse(schema_type, text, &[]) else {
        return;
    };
    let _ = parsed.canonical();
    let _ = parsed.normalized();
    let _ = parsed.record_name();
    let _ = parsed.formatted("serialized");
    let _ = parsed.backward_incompatibilities(parsed.as_ref());
    let fixed = match schema_type {
        SchemaType::Avro => r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}"#,
        SchemaType::Protobuf => "syntax = \"proto3\";\nmessage R { int64 a = 1; }\n",
        SchemaType::Json => r#"{"type":"object","properties":{"a":{"type":"integer"}}}"#,
    };
    if let Ok(other) = schema::parse(schema_type, fixed, &[]) {
        let _ = parsed.backward_incompatibilities(other.as_ref());
        let _ = other.backward_incompatibilities(parsed.as_ref());
    }
    // The canonical form must parse again (it is what the registry stores).
    let canonical = parsed.canonical();
    assert!(
        schema::parse(schema_type, &canonical, &[]).is_ok(),
        "the canonical form of an accepted {schema_type} schema does not parse: {canonical}"
    );
}

/// `_schemas` records (the first byte splits key from value) and Confluent wire-format
/// headers and Protobuf message indexes.
pub fn records(data: &[u8]) {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let split = (split as usize).min(rest.len());
    let (key, value) = rest.split_at(split);
    let _ = Record::decode(Some(key), Some(value));
    let _ = Record::decode(Some(key), None);
    if let Ok((_, payload)) = wire::read_header(rest) {
        let _ = wire::read_message_indexes(payload);
    }
}
