//! Entry point for `fuzz/` (cargo-fuzz target `connect_records`): everything a Connect
//! worker reads that another process wrote — its group's metadata and assignments (from
//! any worker, Apache's included), the three internal topics' records, record bytes
//! through the JSON converter (with and without the schema envelope), and the
//! registry-free halves of the JSON Schema and Protobuf converters (a writer's JSON
//! Schema text and a value in it; a message's bytes in a schema Sluice generates), and a
//! PostgreSQL logical replication message with its rows read as Debezium's values, and
//! MySQL DDL statements applied to the table model a MySQL source keeps — must
//! give a value or an error, never a panic or an unbounded allocation.

use std::sync::{Arc, OnceLock};

use prost_reflect::DynamicMessage;

use crate::Props;
use crate::converters::{self, GeneratedSchema, JsonSchemaData, ProtobufData, jackson};
use crate::data::{Schema, SchemaRef, Type};
use crate::group;
use crate::records::{self, ConfigRecord, ConfigState, Status, StatusKey, TopicStatus};

/// The first byte picks the decoder; for the key/value ones the second splits the rest
/// into a key and a value.
pub fn records(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match selector % 10 {
        0 => {
            if let Ok(state) = group::decode_metadata(rest) {
                // What decodes encodes back and decodes to the same.
                let again = group::encode_metadata(
                    &state.url,
                    state.config_offset,
                    Some(&state.allocation),
                );
                assert_eq!(group::decode_metadata(&again).ok(), Some(state));
            }
        }
        1 => {
            if let Ok(assignment) = group::decode_assignment(rest) {
                let again = group::encode_assignment(&assignment, 1);
                assert_eq!(group::decode_assignment(&again).ok(), Some(assignment));
            }
        }
        2 => {
            let (key, value) = split(rest);
            let key = String::from_utf8_lossy(key);
            let mut state = ConfigState::default();
            for value in [Some(value), None] {
                if let Ok(record) = ConfigRecord::decode(&key, value) {
                    state.apply(record, 0);
                }
            }
            let _ = state.target_state(&key);
        }
        3 => {
            let (key, value) = split(rest);
            let _ = StatusKey::decode(&String::from_utf8_lossy(key));
            let _ = Status::decode(value);
            let _ = TopicStatus::decode(value);
            let _ = records::decode_offset_key(key);
        }
        4 | 5 => {
            let mut props = Props::new();
            props.insert("schemas.enable".into(), (selector % 6 == 4).to_string());
            if let Ok(json) =
                converters::converter(converters::JSON_CONVERTER, &props, false, "value.converter")
                && let Ok((schema, value)) = json.to_connect("t", Some(rest))
            {
                // What it read it can write back.
                let _ = json.from_connect("t", schema.as_ref(), &value);
            }
        }
        6 => {
            let (schema, value) = split(rest);
            let data = JsonSchemaData::default();
            if let Ok(schema) = data.to_connect_schema(&String::from_utf8_lossy(schema), None) {
                // What it read it can write back.
                let _ = data.schema_text(&schema);
                if let Ok(node) = jackson::read_tree(value) {
                    let _ = data.to_connect_data(Some(&schema), Some(&node));
                }
            }
        }
        7 => {
            let (data, schema, generated) = protobuf_target();
            if let Ok(message) = DynamicMessage::decode(generated.message.clone(), rest)
                && let Ok(value) = data.to_connect_data(schema, &message)
            {
                // What it read it can write back.
                let _ = data.from_connect_data(schema, &generated.message, &value);
            }
        }
        8 => crate::connectors::postgres::fuzz_message(rest),
        9 => {
            // MySQL DDL from a binlog: statements applied in turn to one model.
            let mut tables = crate::connectors::mysql::ddl::Tables::default();
            for statement in String::from_utf8_lossy(rest).split('\u{0}') {
                let _ = tables.apply(Some("d"), statement);
            }
        }
        _ => unreachable!("selector % 10"),
    }
}

/// The Protobuf decoder's target: the message Sluice generates for a Connect struct with
/// every kind of field (built once).
fn protobuf_target() -> &'static (ProtobufData, SchemaRef, GeneratedSchema) {
    static TARGET: OnceLock<(ProtobufData, SchemaRef, GeneratedSchema)> = OnceLock::new();
    TARGET.get_or_init(|| {
        let line = Schema::new(Type::Struct)
            .named("Line")
            .field("sku", Schema::new(Type::String))
            .field("quantity", Schema::new(Type::Int16).optional());
        let schema: SchemaRef = Arc::new(
            Schema::new(Type::Struct)
                .named("fuzz.Order")
                .field("id", Schema::new(Type::Int64))
                .field("ok", Schema::new(Type::Boolean))
                .field("ratio", Schema::new(Type::Float32))
                .field("blob", Schema::new(Type::Bytes).optional())
                .field("price", Schema::decimal(2))
                .field("day", Schema::date())
                .field("at", Schema::time())
                .field("created", Schema::timestamp())
                .field(
                    "tags",
                    Schema::map(Schema::new(Type::String), Schema::new(Type::Int32)),
                )
                .field(
                    "by_id",
                    Schema::map(Schema::new(Type::Int64), Schema::new(Type::String)),
                )
                .field("lines", Schema::array(line)),
        );
        let data = ProtobufData::default();
        let generated = data
            .from_connect_schema(&schema)
            .expect("the fuzz target's schema generates");
        (data, schema, generated)
    })
}

fn split(rest: &[u8]) -> (&[u8], &[u8]) {
    match rest.split_first() {
        Some((&at, rest)) => rest.split_at((at as usize).min(rest.len())),
        None => (&[], &[]),
    }
}
