//! What every schema type provides to the registry: parsing (with references resolved to
//! their text), the canonical string the registry stores and compares, a normalized form
//! (`normalize=true`), the record name used by the record name strategies, and the list of
//! reasons a new schema cannot read data written with an earlier one.
//!
//! The registry never looks inside a schema itself; it only calls this trait. A schema type
//! module (`avro`, `protobuf`, `json_schema`) implements it for its parsed form.

use std::any::Any;
use std::fmt;

/// The `schemaType` of Confluent's API. Absent in a request or response means AVRO.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaType {
    Avro,
    Protobuf,
    Json,
}

impl SchemaType {
    pub const ALL: [SchemaType; 3] = [SchemaType::Json, SchemaType::Protobuf, SchemaType::Avro];

    /// The name in Confluent's API (`GET /schemas/types` answers these).
    pub fn name(self) -> &'static str {
        match self {
            SchemaType::Avro => "AVRO",
            SchemaType::Protobuf => "PROTOBUF",
            SchemaType::Json => "JSON",
        }
    }

    /// Parses a `schemaType` value; Confluent accepts the names case-insensitively.
    pub fn parse(name: &str) -> Option<SchemaType> {
        match name.to_ascii_uppercase().as_str() {
            "AVRO" => Some(SchemaType::Avro),
            "PROTOBUF" => Some(SchemaType::Protobuf),
            "JSON" => Some(SchemaType::Json),
            _ => None,
        }
    }
}

impl fmt::Display for SchemaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A reference resolved to the schema it names, as the parsers receive it: `name` is the
/// name the referring schema uses (an Avro full name, a `.proto` import path, a JSON
/// Schema `$ref` URL), `schema` the referenced version's text. A reference's own
/// references are resolved too and appear in the same list, dependencies before
/// dependents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedReference {
    pub name: String,
    pub subject: String,
    pub version: i32,
    pub schema: String,
}

/// Why a schema was refused by its parser; the registry answers 42201 (invalid schema)
/// with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidSchema(pub String);

/// A schema its type's parser accepted.
pub trait ParsedSchema: Send + Sync + fmt::Debug {
    fn schema_type(&self) -> SchemaType;

    /// The string the registry stores, returns and compares for identity (Confluent's
    /// `canonicalString()`): two registrations of the same schema that differ only in
    /// whitespace get the same id.
    fn canonical(&self) -> String;

    /// The normalized form used when a request says `normalize=true` (Confluent's
    /// `normalize()`): semantically equal schemas (field order of a JSON object, Avro
    /// attributes, Protobuf options order, ...) normalize to the same string.
    fn normalized(&self) -> String;

    /// The schema's record name, for `RecordNameStrategy`: an Avro record's full name, a
    /// Protobuf file's first message's full name, a JSON Schema's `title`.
    fn record_name(&self) -> Option<String>;

    /// The schema in another format of `GET /schemas/ids/{id}?format=...`: for Protobuf
    /// `serialized` (a base64 `FileDescriptorProto`, which Confluent's Python client asks
    /// for); `None` when the type has no such format (the canonical string is served).
    fn formatted(&self, format: &str) -> Option<String>;

    /// Every reason this schema (the reader, the new version) cannot read data written
    /// with `previous` (the writer); empty when it can. Messages follow Confluent's verbose
    /// compatibility messages. `previous` is always of the same schema type (the registry
    /// checks before calling).
    fn backward_incompatibilities(&self, previous: &dyn ParsedSchema) -> Vec<String>;

    /// [`ParsedSchema::backward_incompatibilities`] with the roles named in the messages:
    /// a FORWARD check runs the old schema as the reader, and Confluent's messages then
    /// call it "old" and the writer "new". Types whose messages name no roles keep the
    /// default.
    fn incompatibilities_as_reader(
        &self,
        writer: &dyn ParsedSchema,
        reader_role: &str,
        writer_role: &str,
    ) -> Vec<String> {
        let _ = (reader_role, writer_role);
        self.backward_incompatibilities(writer)
    }

    fn as_any(&self) -> &dyn Any;
}

/// Parses `schema` as `schema_type`.
pub fn parse(
    schema_type: SchemaType,
    schema: &str,
    references: &[ResolvedReference],
) -> Result<Box<dyn ParsedSchema>, InvalidSchema> {
    Ok(match schema_type {
        SchemaType::Avro => Box::new(crate::avro::AvroSchema::parse(schema, references)?),
        SchemaType::Protobuf => {
            Box::new(crate::protobuf::ProtobufSchema::parse(schema, references)?)
        }
        SchemaType::Json => Box::new(crate::json_schema::JsonSchema::parse(schema, references)?),
    })
}
