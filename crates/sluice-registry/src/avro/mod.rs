//! Avro schemas in the registry: parsing (with references), the canonical string the
//! registry stores and compares, the `normalize=true` form, and Avro's reader/writer
//! compatibility rules with Confluent's messages.
//!
//! What it follows: Confluent Schema Registry's `AvroSchema`, which delegates to the Apache
//! Avro Java library. Parsing follows Avro's `Schema.Parser` as Confluent configures it for
//! a new schema (strict names and namespaces, defaults validated, forward references
//! resolved at the end of each document as in Avro 1.12, JSON comments allowed because
//! Avro's Jackson factory allows them). [`ParsedSchema::canonical`] is Avro's
//! `Schema.toString(references)`: compact JSON with Avro's attribute order (`type`, `name`,
//! `namespace`, `doc`, then the body, then custom properties, then `aliases`), every
//! attribute of the input kept (doc, defaults, aliases, order, logical types, custom
//! properties), Java's number formatting, and the named types of the references written by
//! name rather than inlined. [`ParsedSchema::normalized`] is Confluent's
//! `AvroSchemaUtils.toNormalizedString` re-parsed and printed canonically, as `normalize()`
//! does: full names, custom properties and aliases sorted, defaults converted to their
//! field's type, logical type attributes first. Compatibility is Avro's
//! `SchemaCompatibility` (every incompatibility, not only the first, with its JSON-pointer
//! path) and each is worded by Confluent's `Difference`.
//!
//! What it is not: a datum codec, nor the Parsing Canonical Form. The schema graph, its JSON
//! writer and the checker are written here rather than taken from the `apache-avro` crate
//! because the canonical string and the messages are part of the registry's contract with
//! Confluent clients, and that crate prints schemas in its own attribute order and drops
//! custom properties. Serializers that need an `apache_avro::Schema` can parse
//! `formatted("resolved")`, which inlines every named type.
//!
//! Cost: this runs when a schema is registered or looked up, never per record. Parsing is
//! linear in the text (one JSON parse, one graph node per type occurrence, one pass to
//! resolve forward references, one to validate defaults, two prints). A compatibility check
//! visits each (reader node, writer node) pair at most once, memoized like Avro's checker,
//! so recursive schemas terminate; in practice it is linear in the smaller schema.
//!
//! Limits: JSON nesting is bounded by `serde_json` (128 levels); printing, comparing and
//! default validation refuse to go deeper than [`SCHEMA_DEPTH_MAX`] levels (a schema whose
//! print would be deeper is refused as invalid); a check stops after
//! [`CHECK_DEPTH_MAX`] nested steps, [`CHECK_PAIRS_MAX`] visited pairs or
//! [`CHECK_RECORDED_INCOMPATIBILITIES_MAX`] recorded reasons, and reports at most
//! [`INCOMPATIBILITIES_MAX`] of them.
//!
//! The code: `graph` is the schema graph (Avro's `Schema` objects: names, fields, the node
//! kinds, default validation and `equals`); `parse` builds it from a document and its
//! references; `canonical` prints Avro's `Schema.toString` and `normalize` Confluent's
//! normalized text; `jackson` holds the JSON and number formats of Jackson and Java both
//! prints use; and `compatibility` is Avro's reader/writer checker with Confluent's
//! messages.

mod canonical;
mod compatibility;
mod graph;
mod jackson;
mod normalize;
mod parse;

use std::any::Any;
use std::fmt;
use std::sync::OnceLock;

use self::graph::{Kind, NodeId, SchemaGraph};
use crate::schema::{ParsedSchema, ResolvedReference, SchemaType};

/// How deep a schema may nest once its references are inlined, which bounds printing,
/// structural comparison and default validation. One JSON document cannot nest deeper
/// (`serde_json` stops at 128 levels), but a chain of references could; the bound keeps
/// such a chain from exhausting a worker thread's stack, here and in compatibility checks.
pub const SCHEMA_DEPTH_MAX: usize = 128;

/// How many nested (reader, writer) steps a compatibility check may take. A record nested
/// in a record costs one step, an optional one (through a union) three; a debug build
/// spends about 4 KiB of stack per step, so this stays well inside a 2 MiB thread stack.
pub const CHECK_DEPTH_MAX: usize = 256;

/// How many distinct (reader node, writer node) pairs a compatibility check may visit.
pub const CHECK_PAIRS_MAX: usize = 1_000_000;

/// How many incompatibilities one check reports; Avro's checker can repeat a memoized
/// result once per use of a shared named type, so the list can grow with the schema.
pub const INCOMPATIBILITIES_MAX: usize = 1_000;

/// How many incompatibilities a check may record or copy from one result into another,
/// which bounds its memory and time when a result is reused at many places.
pub const CHECK_RECORDED_INCOMPATIBILITIES_MAX: usize = 1_000_000;

/// An Avro schema the registry accepted: the parsed graph of the schema and of its
/// references, and its canonical string.
pub struct AvroSchema {
    graph: SchemaGraph,
    root: NodeId,
    references: Vec<ResolvedReference>,
    /// Full names of the references' top-level named types: printed by name, not inlined.
    reference_names: Vec<String>,
    canonical: String,
    resolved: String,
    normalized: OnceLock<String>,
}

impl fmt::Debug for AvroSchema {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("AvroSchema")
            .field("canonical", &self.canonical)
            .field("references", &self.reference_names)
            .finish()
    }
}

impl ParsedSchema for AvroSchema {
    fn incompatibilities_as_reader(
        &self,
        writer: &dyn ParsedSchema,
        reader_role: &str,
        writer_role: &str,
    ) -> Vec<String> {
        match writer.as_any().downcast_ref::<AvroSchema>() {
            Some(writer) => {
                AvroSchema::incompatibilities_as_reader(self, writer, reader_role, writer_role)
            }
            None => self.backward_incompatibilities(writer),
        }
    }

    fn schema_type(&self) -> SchemaType {
        SchemaType::Avro
    }

    fn canonical(&self) -> String {
        self.canonical.clone()
    }

    /// Confluent's `normalize()`: the normalized text parsed again (with the same
    /// references) and printed canonically. Were the normalized text refused by the parser
    /// (Confluent would then fail the request), the canonical string is returned instead.
    fn normalized(&self) -> String {
        self.normalized
            .get_or_init(|| {
                let Ok(text) = self.graph.normalized_text(self.root, &self.reference_names) else {
                    return self.canonical.clone();
                };
                match AvroSchema::parse(&text, &self.references) {
                    Ok(reparsed) => reparsed.canonical,
                    Err(_) => self.canonical.clone(),
                }
            })
            .clone()
    }

    /// The full name of a top-level record, as Confluent's `AvroSchema.name()`: enums, fixed
    /// types, unions and primitives have none.
    fn record_name(&self) -> Option<String> {
        match &self.graph.nodes[self.root].kind {
            Kind::Record { named, .. } => Some(named.name.full()),
            _ => None,
        }
    }

    /// `resolved` (Confluent's only other Avro format): the schema with the references'
    /// named types inlined where first used.
    fn formatted(&self, format: &str) -> Option<String> {
        format
            .trim()
            .eq_ignore_ascii_case("resolved")
            .then(|| self.resolved.clone())
    }

    fn backward_incompatibilities(&self, previous: &dyn ParsedSchema) -> Vec<String> {
        match previous.as_any().downcast_ref::<AvroSchema>() {
            Some(previous) => self.incompatibilities_as_reader(previous, "new", "old"),
            None => vec!["Incompatible because of different schema type".to_owned()],
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn parse(schema: &str) -> AvroSchema {
        AvroSchema::parse(schema, &[])
            .unwrap_or_else(|error| panic!("{schema} should parse: {error}"))
    }

    #[test]
    fn record_name_is_the_full_name_of_a_top_level_record() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                r#"{"type":"record","name":"Order","namespace":"com.example","fields":[]}"#,
                Some("com.example.Order"),
            ),
            (
                r#"{"type":"record","name":"a.b.Order","fields":[]}"#,
                Some("a.b.Order"),
            ),
            (
                r#"{"type":"error","name":"Oops","fields":[]}"#,
                Some("Oops"),
            ),
            // Confluent's `AvroSchema.name()` names records only.
            (
                r#"{"type":"enum","name":"com.example.Suit","symbols":["A"]}"#,
                None,
            ),
            (r#"{"type":"fixed","name":"Hash","size":16}"#, None),
            (r#""string""#, None),
            (r#"["null",{"type":"record","name":"R","fields":[]}]"#, None),
        ];
        for (input, expected) in cases {
            assert_eq!(parse(input).record_name().as_deref(), *expected, "{input}");
        }
    }
}
