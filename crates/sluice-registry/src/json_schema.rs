//! JSON Schema, the registry's `JSON` schema type: parsing a schema (with the `$ref`s it makes
//! to other subjects' schemas), Confluent's canonical and normalized strings, the `title` as
//! record name, a compiled validator the serializers check records with, and the list of
//! reasons a new schema cannot read what an old one wrote.
//!
//! What it follows: Confluent Schema Registry's `JsonSchema` and its compatibility checker
//! (`json-schema-provider`, `diff/SchemaDiff`, `ObjectSchemaDiff`, `ArraySchemaDiff`,
//! `NumberSchemaDiff`, `StringSchemaDiff`, `EnumSchemaDiff`, `ConstSchemaDiff`,
//! `NotSchemaDiff`, `CombinedSchemaDiff`, as released in Confluent Platform 8.3), under its
//! default `STRICT` policy. A schema is first read into the model Confluent's checker
//! works on (the shape everit's loader gives a draft-07 schema: `StringSchema`,
//! `NumberSchema`, `ObjectSchema`, ..., a synthetic `allOf` when one schema object holds
//! several kinds of constraint, an `anyOf` for a list of types); the rules then walk two
//! models side by side and record every difference (Confluent's `Difference.Type`) with the
//! JSON path where it was found. The incompatible ones become Confluent's messages,
//! `{errorType:"TYPE_CHANGED", description:"A type at path '#/properties/a' is different
//! between the new schema and the old schema'}` (the unbalanced quote is Confluent's).
//!
//! What it is not: a validator of its own. Whether a text is a valid schema (against its
//! draft's meta-schema) and whether a record satisfies a schema are answered by the
//! `jsonschema` crate, with remote fetching off: a `$ref` resolves to the schema itself, to a
//! reference the registry resolved, or to nothing (then the schema is invalid).
//!
//! Known differences from Confluent:
//! - A property added to an open content model is reported as
//!   `PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL`, the name Confluent used up to 8.2.1, which Sluice
//!   keeps. Confluent 8.0.6+/8.1.4+/8.2.2+/8.3 split it into
//!   `REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL`,
//!   `REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL` and
//!   `OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL`; all are incompatible under `STRICT`,
//!   so the verdict is the same, only the name differs. The `LENIENT` policy is not offered.
//! - Messages call the reader "new" and the writer "old", which is what Confluent says for a
//!   BACKWARD check; for a FORWARD check (the old schema reads) Confluent swaps the two words.
//!   [`JsonSchema::incompatibilities_with_labels`] takes the words when the caller knows.
//! - Recursive schemas: a pair of (old, new) subschemas met again while it is being compared
//!   is taken as compatible, as on Confluent's main branch (8.3 keys the guard on the old
//!   subschema alone). Results are memoized per pair when they do not depend on such a
//!   cycle. A check that would compare more than [`MAX_COMPARED_PAIRS`] pairs, or nest deeper
//!   than [`MAX_COMPARISON_DEPTH`], stops and reports itself incompatible (Confluent has no
//!   bound but a request timeout).
//! - Drafts 2019-09 and 2020-12: Confluent translates them through json-sKema; here they are
//!   read like draft-07 with `prefixItems`, `items` after `prefixItems`, `dependentRequired`,
//!   `dependentSchemas`, `unevaluatedProperties` and `unevaluatedItems` mapped the way that
//!   translation maps them, and a `$ref` beside other keywords read as an `allOf` of both.
//! - A `$ref` this model cannot follow although the validator could (a meta-schema URL,
//!   `$recursiveRef`, `$dynamicRef`) is compared as the empty schema; Confluent fails.
//! - `multipleOf` changes are judged by exact division (Confluent divides `intValue()`s,
//!   which fails on fractional values); `exclusiveMaximum` decreases compare the two
//!   exclusive limits (Confluent compares against `maximum`, a bug).
//! - Property and enum orders in messages follow the schema text; Confluent's follow hash
//!   order. The metadata checks (`confluent:reserved`) and the `$$` property-name rule of
//!   new registrations are not part of this type.
//! - The canonical string is Jackson's, except for JSON Jackson accepts and serde_json does
//!   not (`NaN`, numbers beyond the range of `f64`, lone surrogates, text after the value).
//!
//! Cost: parsing reads the text twice (a value tree, and the literal tree the canonical
//! string is printed from, which re-reads each nested value once per level of nesting, so
//! O(bytes x depth) with depth at most [`MAX_SCHEMA_DEPTH`]), validates it against its
//! meta-schema, compiles it, and builds the model (one node per subschema, a few more per
//! schema object with several kinds of constraint). A compatibility check visits each
//! (old, new) pair of subschemas once when nothing is recursive, plus the cross product of
//! the branches of each `oneOf`/`anyOf`/`allOf` it meets; both are bounded as above.
//! Schemas are registered rarely, so none of this is on a record's path. `validate` is: one
//! pass of the compiled validator, and a second that lists the errors only when it fails.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

use jsonschema::{Draft, Registry, Validator};
use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::schema::{InvalidSchema, ParsedSchema, ResolvedReference, SchemaType};

/// Levels of JSON nesting (objects and arrays) a schema or a referenced schema may have.
/// Every walk over a schema recurses at most this deep; serde_json itself stops at 128.
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// (old, new) subschema pairs one compatibility check may compare before it gives up and
/// reports the schemas incompatible. Each comparison is a few microseconds.
pub const MAX_COMPARED_PAIRS: usize = 100_000;

/// Pair comparisons nested inside one another. A schema within [`MAX_SCHEMA_DEPTH`] nests
/// them at most about twice as deep (a `type` list or a synthetic `allOf` adds a level
/// without adding JSON nesting); only chains of `$ref`s go further. Each level measured about
/// 5 KiB of stack in a debug build, so the bound stays well inside a 2 MiB thread stack.
pub const MAX_COMPARISON_DEPTH: usize = 128;

/// Validation errors [`JsonSchema::validate`] describes before it stops listing them.
pub const MAX_VALIDATION_ERRORS_REPORTED: usize = 10;

/// The base URI of a schema without `$id`, as the `jsonschema` crate uses it: a reference
/// named `address.json` is found at `json-schema:///address.json`.
const DEFAULT_BASE_URI: &str = "json-schema:///";

/// A parsed, valid JSON Schema.
pub struct JsonSchema {
    canonical: String,
    normalized: String,
    title: Option<String>,
    validator: Validator,
    model: Model,
}

impl fmt::Debug for JsonSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonSchema")
            .field("canonical", &self.canonical)
            .finish_non_exhaustive()
    }
}

impl JsonSchema {
    /// Parses `schema` (a JSON object or boolean) with `references` resolved: each one is
    /// reachable by `$ref` under its `name`, relative to the schema's `$id` if it has one.
    pub fn parse(schema: &str, references: &[ResolvedReference]) -> Result<Self, InvalidSchema> {
        let root = read_document(schema).map_err(invalid)?;
        let literal = LiteralJson::parse(schema)
            .map_err(|error| invalid(format!("Invalid JSON: {error}")))?;
        let canonical = literal.to_json_string();
        let normalized = literal.sorted().to_json_string();
        let title = root.get("title").and_then(Value::as_str).map(str::to_owned);

        let draft = draft_of(&root);
        if root.is_object() {
            check_against_meta_schema(draft, &root).map_err(invalid)?;
        }

        let root_base = match root.get(id_keyword(draft)).and_then(Value::as_str) {
            Some(id) if !(draft <= Draft::Draft7 && id.starts_with('#')) => {
                resolve_uri(DEFAULT_BASE_URI, id)
                    .map(|uri| strip_fragment(&uri).to_owned())
                    .ok_or_else(|| invalid(format!("'{id}' is not a valid $id")))?
            }
            _ => DEFAULT_BASE_URI.to_owned(),
        };

        let mut documents = Vec::with_capacity(1 + references.len());
        let mut root_document = root;
        bridge_definitions(&mut root_document);
        documents.push(Document {
            value: root_document,
            uris: vec![DEFAULT_BASE_URI.to_owned()],
        });
        for reference in references {
            let mut value = read_document(&reference.schema).map_err(|error| {
                invalid(format!("Invalid reference '{}': {error}", reference.name))
            })?;
            bridge_definitions(&mut value);
            let mut uris = Vec::with_capacity(2);
            for base in [root_base.as_str(), DEFAULT_BASE_URI] {
                let uri = resolve_uri(base, &reference.name).ok_or_else(|| {
                    invalid(format!(
                        "'{}' is not a valid reference name",
                        reference.name
                    ))
                })?;
                let uri = strip_fragment(&uri).to_owned();
                if !uris.contains(&uri) {
                    uris.push(uri);
                }
            }
            documents.push(Document { value, uris });
        }

        let validator = build_validator(&documents, draft)
            .map_err(|error| invalid(format!("Invalid JSON schema: {error}")))?;
        let model = Model::load(documents, draft);
        Ok(JsonSchema {
            canonical,
            normalized,
            title,
            validator,
            model,
        })
    }

    /// Checks `instance` against the schema: `Err` lists (up to
    /// [`MAX_VALIDATION_ERRORS_REPORTED`]) the reasons it does not conform, each prefixed
    /// with the JSON pointer of the offending value.
    pub fn validate(&self, instance: &Value) -> Result<(), String> {
        // Records are valid far more often than not, and `is_valid` stops at nothing to
        // describe; the errors are collected only for the rest.
        if self.validator.is_valid(instance) {
            return Ok(());
        }
        let errors: Vec<String> = self
            .validator
            .iter_errors(instance)
            .take(MAX_VALIDATION_ERRORS_REPORTED)
            .map(|error| {
                let path = error.instance_path().as_str();
                if path.is_empty() {
                    error.to_string()
                } else {
                    format!("{path}: {error}")
                }
            })
            .collect();
        if errors.is_empty() {
            // `is_valid` said no; never let a record through on a silent error list.
            Err("the instance does not conform to the schema".to_owned())
        } else {
            Err(errors.join("; "))
        }
    }

    /// Every reason this schema (the reader) cannot read data written with `writer`, worded
    /// as Confluent words them with `reader_label` and `writer_label` ("new", "old") for the
    /// two schemas.
    pub fn incompatibilities_with_labels(
        &self,
        writer: &JsonSchema,
        reader_label: &str,
        writer_label: &str,
    ) -> Vec<String> {
        let (differences, limit_exceeded) = self.differences_from(writer);
        let mut messages: Vec<String> = differences
            .iter()
            .filter(|difference| !difference.kind.is_compatible())
            .map(|difference| difference.message(reader_label, writer_label))
            .collect();
        if limit_exceeded {
            messages.push(format!(
                "{{errorType:\"COMPARISON_LIMIT_EXCEEDED\", description:\"Comparing the \
                 {reader_label} schema with the {writer_label} schema needs more than \
                 {MAX_COMPARED_PAIRS} subschema comparisons or nests deeper than \
                 {MAX_COMPARISON_DEPTH}; the schemas are treated as incompatible'}}"
            ));
        }
        messages
    }

    /// All differences (compatible ones too) found going from `writer` to `self`, and
    /// whether the comparison stopped at its bound.
    fn differences_from(&self, writer: &JsonSchema) -> (Vec<Difference>, bool) {
        let mut comparison = Comparison::new([&writer.model, &self.model]);
        let mut context = Context::default();
        comparison.compare(
            &mut context,
            SchemaRef {
                side: OLD,
                node: writer.model.root,
            },
            SchemaRef {
                side: NEW,
                node: self.model.root,
            },
        );
        (context.differences, comparison.limit_exceeded)
    }
}

impl ParsedSchema for JsonSchema {
    fn incompatibilities_as_reader(
        &self,
        writer: &dyn ParsedSchema,
        reader_role: &str,
        writer_role: &str,
    ) -> Vec<String> {
        match writer.as_any().downcast_ref::<JsonSchema>() {
            Some(writer) => {
                JsonSchema::incompatibilities_with_labels(self, writer, reader_role, writer_role)
            }
            None => self.backward_incompatibilities(writer),
        }
    }

    fn schema_type(&self) -> SchemaType {
        SchemaType::Json
    }

    /// Confluent's `canonicalString()`: the schema as Jackson re-serializes it, compact,
    /// keys in the order written, numbers as Jackson prints them (`1.50` stays `1.50`,
    /// `1e3` becomes `1E+3`).
    fn canonical(&self) -> String {
        self.canonical.clone()
    }

    /// Confluent's `normalize()`: the canonical string read back with object keys sorted
    /// (Jackson's sorting node factory, a `TreeMap`, so UTF-16 order), recursively. Arrays
    /// keep their order: `enum` and `required` are lists to Confluent too.
    fn normalized(&self) -> String {
        self.normalized.clone()
    }

    fn record_name(&self) -> Option<String> {
        self.title.clone()
    }

    fn formatted(&self, _format: &str) -> Option<String> {
        None
    }

    fn backward_incompatibilities(&self, previous: &dyn ParsedSchema) -> Vec<String> {
        match previous.as_any().downcast_ref::<JsonSchema>() {
            Some(previous) => self.incompatibilities_with_labels(previous, "new", "old"),
            None => vec!["Incompatible because of different schema type".to_owned()],
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn invalid(message: impl Into<String>) -> InvalidSchema {
    InvalidSchema(message.into())
}

/// Reads a schema document: JSON, an object or a boolean, at most [`MAX_SCHEMA_DEPTH`] deep.
fn read_document(text: &str) -> Result<Value, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|error| format!("Invalid JSON: {error}"))?;
    if !(value.is_object() || value.is_boolean()) {
        return Err("Invalid JSON schema: a schema is a JSON object or a boolean".to_owned());
    }
    check_depth(&value)?;
    Ok(value)
}

/// Refuses values nested deeper than [`MAX_SCHEMA_DEPTH`], without recursing.
fn check_depth(value: &Value) -> Result<(), String> {
    let mut stack = vec![(value, 1usize)];
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(members) => Box::new(members.values()),
            _ => continue,
        };
        if depth > MAX_SCHEMA_DEPTH {
            return Err(format!(
                "Invalid JSON schema: nested deeper than {MAX_SCHEMA_DEPTH} levels"
            ));
        }
        stack.extend(
            children
                .filter(|child| child.is_array() || child.is_object())
                .map(|child| (child, depth + 1)),
        );
    }
    Ok(())
}

/// The draft a schema is read with: its `$schema`, else draft-07, as Confluent
/// (`SpecificationVersion`, which also takes the version-less URL for draft-04).
fn draft_of(schema: &Value) -> Draft {
    let Some(uri) = schema.get("$schema").and_then(Value::as_str) else {
        return Draft::Draft7;
    };
    match uri.strip_suffix('#').unwrap_or(uri) {
        "http://json-schema.org/draft-04/schema"
        | "https://json-schema.org/draft-04/schema"
        | "http://json-schema.org/schema"
        | "https://json-schema.org/schema" => Draft::Draft4,
        "http://json-schema.org/draft-06/schema" | "https://json-schema.org/draft-06/schema" => {
            Draft::Draft6
        }
        "http://json-schema.org/draft/2019-09/schema"
        | "https://json-schema.org/draft/2019-09/schema" => Draft::Draft201909,
        "http://json-schema.org/draft/2020-12/schema"
        | "https://json-schema.org/draft/2020-12/schema" => Draft::Draft202012,
        _ => Draft::Draft7,
    }
}

fn id_keyword(draft: Draft) -> &'static str {
    if draft == Draft::Draft4 { "id" } else { "$id" }
}

fn check_against_meta_schema(draft: Draft, schema: &Value) -> Result<(), String> {
    let result = match draft {
        Draft::Draft4 => jsonschema::draft4::meta::validate(schema),
        Draft::Draft6 => jsonschema::draft6::meta::validate(schema),
        Draft::Draft201909 => jsonschema::draft201909::meta::validate(schema),
        Draft::Draft202012 => jsonschema::draft202012::meta::validate(schema),
        _ => jsonschema::draft7::meta::validate(schema),
    };
    result.map_err(|error| {
        let path = error.instance_path().as_str();
        if path.is_empty() {
            format!("Invalid JSON schema: {error}")
        } else {
            format!("Invalid JSON schema at '{path}': {error}")
        }
    })
}

/// Compiles the validator: the root with every reference registered under its URIs, no
/// retrieval of anything else.
fn build_validator(documents: &[Document], draft: Draft) -> Result<Validator, String> {
    let root = &documents[0].value;
    let options = jsonschema::options().with_draft(draft).offline();
    if documents.len() == 1 {
        return options.build(root).map_err(|error| error.to_string());
    }
    let mut builder = Registry::new().draft(draft);
    for document in &documents[1..] {
        for uri in &document.uris {
            builder = builder
                .add(uri, &document.value)
                .map_err(|error| error.to_string())?;
        }
    }
    let registry = builder.prepare().map_err(|error| error.to_string())?;
    options
        .with_registry(&registry)
        .build(root)
        .map_err(|error| error.to_string())
}

/// Confluent copies a document's top-level `definitions` into `$defs` before loading it, so
/// `"$ref": "#/$defs/x"` finds a body written under `definitions`. Done here when `$defs` is
/// absent and no definition carries an id (a copied `$id` would name two resources).
fn bridge_definitions(document: &mut Value) {
    let Some(members) = document.as_object_mut() else {
        return;
    };
    if members.contains_key("$defs") {
        return;
    }
    let Some(Value::Object(definitions)) = members.get("definitions") else {
        return;
    };
    let has_ids = definitions
        .values()
        .any(|definition| definition.get("$id").is_some() || definition.get("id").is_some());
    if definitions.is_empty() || has_ids {
        return;
    }
    let copy = Value::Object(definitions.clone());
    members.insert("$defs".to_owned(), copy);
}

/// Resolves `reference` against `base` (both URI references), as the `jsonschema` crate does.
fn resolve_uri(base: &str, reference: &str) -> Option<String> {
    let base = jsonschema::uri::from_str(base).ok()?;
    let resolved = jsonschema::uri::resolve_against(&base.borrow(), reference).ok()?;
    Some(resolved.as_str().to_owned())
}

fn strip_fragment(uri: &str) -> &str {
    uri.split_once('#').map_or(uri, |(before, _)| before)
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|b| (*b as char).to_digit(16));
        match (bytes[index], hex(index + 1), hex(index + 2)) {
            (b'%', Some(high), Some(low)) => {
                decoded.push((high * 16 + low) as u8);
                index += 3;
            }
            (byte, _, _) => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

fn push_pointer_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            _ => pointer.push(c),
        }
    }
}

fn unescape_pointer_token(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

// ---------------------------------------------------------------------------------------
// The canonical and normalized strings.

/// JSON as Jackson holds it for Confluent: numbers kept as literals (Confluent reads floats
/// as exact `BigDecimal`s), objects in the order written with a repeated key keeping its
/// first position and last value.
#[derive(Debug, Clone, PartialEq)]
enum LiteralJson {
    Null,
    Bool(bool),
    /// Already in Jackson's notation.
    Number(String),
    String(String),
    Array(Vec<LiteralJson>),
    Object(Vec<(String, LiteralJson)>),
}

/// The members of one JSON object, each value left unparsed.
struct RawMembers<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for RawMembers<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = RawMembers<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, &'de RawValue>()? {
                    members.push(member);
                }
                Ok(RawMembers(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}

impl LiteralJson {
    /// Parses text [`read_document`] accepted (so it is JSON and at most
    /// [`MAX_SCHEMA_DEPTH`] deep, which bounds the recursion).
    fn parse(text: &str) -> Result<LiteralJson, serde_json::Error> {
        let raw: &RawValue = serde_json::from_str(text)?;
        Self::from_raw(raw)
    }

    fn from_raw(raw: &RawValue) -> Result<LiteralJson, serde_json::Error> {
        let text = raw.get().trim();
        Ok(match text.as_bytes().first() {
            Some(b'{') => {
                let RawMembers(raw_members) = serde_json::from_str(text)?;
                let mut members: Vec<(String, LiteralJson)> = Vec::with_capacity(raw_members.len());
                let mut positions: HashMap<String, usize> = HashMap::new();
                for (key, raw_value) in raw_members {
                    let value = Self::from_raw(raw_value)?;
                    match positions.get(&key) {
                        Some(&position) => members[position].1 = value,
                        None => {
                            positions.insert(key.clone(), members.len());
                            members.push((key, value));
                        }
                    }
                }
                LiteralJson::Object(members)
            }
            Some(b'[') => {
                let raw_items: Vec<&RawValue> = serde_json::from_str(text)?;
                let items = raw_items
                    .into_iter()
                    .map(Self::from_raw)
                    .collect::<Result<Vec<_>, _>>()?;
                LiteralJson::Array(items)
            }
            Some(b'"') => LiteralJson::String(serde_json::from_str(text)?),
            Some(b't') => LiteralJson::Bool(true),
            Some(b'f') => LiteralJson::Bool(false),
            Some(b'n') => LiteralJson::Null,
            _ => LiteralJson::Number(jackson_number(text)),
        })
    }

    /// The same value with every object's keys sorted as Java sorts strings (UTF-16 units).
    fn sorted(&self) -> LiteralJson {
        match self {
            LiteralJson::Array(items) => {
                LiteralJson::Array(items.iter().map(LiteralJson::sorted).collect())
            }
            LiteralJson::Object(members) => {
                let mut sorted: Vec<(String, LiteralJson)> = members
                    .iter()
                    .map(|(key, value)| (key.clone(), value.sorted()))
                    .collect();
                sorted.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
                LiteralJson::Object(sorted)
            }
            other => other.clone(),
        }
    }

    fn to_json_string(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            LiteralJson::Null => out.push_str("null"),
            LiteralJson::Bool(value) => out.push_str(if *value { "true" } else { "false" }),
            LiteralJson::Number(literal) => out.push_str(literal),
            LiteralJson::String(value) => write_jackson_string(value, out),
            LiteralJson::Array(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            LiteralJson::Object(members) => {
                out.push('{');
                for (index, (key, value)) in members.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    write_jackson_string(key, out);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// A string as Jackson's generator writes it: `"` and `\` escaped, the control characters
/// `\b \t \n \f \r` in short form and the others as `\u00XX` (upper-case hex), the rest raw.
fn write_jackson_string(value: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{0C}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let code = c as usize;
                out.push_str("\\u00");
                out.push(HEX[code >> 4] as char);
                out.push(HEX[code & 0xF] as char);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A JSON number literal as Jackson prints it back for Confluent: an integer as its digits
/// (`-0` is the int 0), a fraction or exponent as `BigDecimal.toString()` of the exact
/// literal (`1.50` stays, `1e3` is `1E+3`, `0.0000001` is `1E-7`).
fn jackson_number(literal: &str) -> String {
    let (negative, unsigned) = match literal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, literal),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (integer_digits, fraction_digits) = match mantissa.split_once('.') {
        Some((integer, fraction)) => (integer, Some(fraction)),
        None => (mantissa, None),
    };
    if exponent.is_none() && fraction_digits.is_none() {
        let is_zero = integer_digits.bytes().all(|b| b == b'0');
        return if negative && !is_zero {
            format!("-{integer_digits}")
        } else {
            integer_digits.to_owned()
        };
    }
    let fraction_digits = fraction_digits.unwrap_or("");
    let exponent: i64 = exponent.map_or(0, |text| {
        let (sign, digits) = match text.as_bytes().first() {
            Some(b'-') => (-1, &text[1..]),
            Some(b'+') => (1, &text[1..]),
            _ => (1, text),
        };
        let magnitude = digits
            .bytes()
            .filter(u8::is_ascii_digit)
            .fold(0i64, |acc, b| {
                acc.saturating_mul(10).saturating_add(i64::from(b - b'0'))
            });
        sign * magnitude
    });
    let all_digits = format!("{integer_digits}{fraction_digits}");
    let coefficient = all_digits.trim_start_matches('0');
    let coefficient = if coefficient.is_empty() {
        "0"
    } else {
        coefficient
    };
    let scale = (fraction_digits.len() as i64).saturating_sub(exponent);
    let sign = if negative && coefficient != "0" {
        "-"
    } else {
        ""
    };
    let length = coefficient.len() as i64;
    if scale == 0 {
        return format!("{sign}{coefficient}");
    }
    let adjusted = length - 1 - scale;
    if scale > 0 && adjusted >= -6 {
        // Plain notation; `adjusted >= -6` bounds the leading zeros to five.
        return if scale >= length {
            let zeros = "0".repeat((scale - length) as usize);
            format!("{sign}0.{zeros}{coefficient}")
        } else {
            let point = (length - scale) as usize;
            format!("{sign}{}.{}", &coefficient[..point], &coefficient[point..])
        };
    }
    let mut text = format!("{sign}{}", &coefficient[..1]);
    if length > 1 {
        text.push('.');
        text.push_str(&coefficient[1..]);
    }
    if adjusted != 0 {
        text.push('E');
        if adjusted > 0 {
            text.push('+');
        }
        text.push_str(&adjusted.to_string());
    }
    text
}

// ---------------------------------------------------------------------------------------
// The model Confluent's rules compare: everit's reading of a schema.

type NodeId = usize;

/// The node every unresolvable `$ref` points to: the empty schema.
const UNRESOLVED: NodeId = 0;

/// A schema document: the root (index 0) or a referenced schema, with the URIs it is
/// registered under (the first is the base its relative references resolve against).
#[derive(Debug)]
struct Document {
    value: Value,
    uris: Vec<String>,
}

/// One schema, read into the model: the root and every subschema reachable from it.
#[derive(Debug)]
struct Model {
    documents: Vec<Document>,
    nodes: Vec<Node>,
    root: NodeId,
}

#[derive(Debug)]
struct Node {
    kind: Kind,
    annotations: Annotations,
    origin: Origin,
}

/// The keywords every kind of schema carries (everit's common properties).
#[derive(Debug, Default)]
struct Annotations {
    id: Option<String>,
    title: Option<String>,
    description: Option<String>,
    default: Option<Value>,
    /// `"connect.type": "bytes"`: Kafka Connect's decimal as bytes, which Confluent lets
    /// change between `string` and `number`.
    connect_bytes: bool,
}

/// Where a node was read from, to tell two subschemas of a `oneOf`/`anyOf`/`allOf` apart the
/// way Confluent does (by their JSON): the schema object at `pointer`, or one `part` of it
/// when one object holds several kinds of constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    document: usize,
    pointer: String,
    part: Part,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Whole,
    Keyword(&'static str),
    Typed(&'static str),
    Sniffed(&'static str),
    TypeList,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Criterion {
    All,
    Any,
    One,
}

impl Criterion {
    fn keyword(self) -> &'static str {
        match self {
            Criterion::All => "allOf",
            Criterion::Any => "anyOf",
            Criterion::One => "oneOf",
        }
    }
}

/// everit's schema classes; two nodes of different kinds are a `TYPE_CHANGED` to Confluent.
#[derive(Debug)]
enum Kind {
    True,
    Empty,
    False,
    /// A `$ref` and what it resolved to ([`UNRESOLVED`] if nothing).
    Reference(NodeId),
    String(StringKind),
    Number(NumberKind),
    Boolean,
    Null,
    Enum(Vec<Value>),
    Const(Value),
    Combined(Criterion, Vec<NodeId>),
    Not(NodeId),
    Object(Box<ObjectKind>),
    Array(Box<ArrayKind>),
    /// `if`/`then`/`else`, which Confluent does not compare.
    Conditional,
}

impl Kind {
    fn class(&self) -> u8 {
        match self {
            Kind::True => 0,
            Kind::Empty => 1,
            Kind::False => 2,
            Kind::Reference(_) => 3,
            Kind::String(_) => 4,
            Kind::Number(_) => 5,
            Kind::Boolean => 6,
            Kind::Null => 7,
            Kind::Enum(_) => 8,
            Kind::Const(_) => 9,
            Kind::Combined(..) => 10,
            Kind::Not(_) => 11,
            Kind::Object(_) => 12,
            Kind::Array(_) => 13,
            Kind::Conditional => 14,
        }
    }

    fn is_combined(&self) -> bool {
        matches!(self, Kind::Combined(..))
    }

    /// everit's `EmptySchema`, which `TrueSchema` extends.
    fn is_empty_schema(&self) -> bool {
        matches!(self, Kind::Empty | Kind::True)
    }
}

#[derive(Debug, Default)]
struct StringKind {
    min_length: Option<f64>,
    max_length: Option<f64>,
    pattern: Option<String>,
}

#[derive(Debug, Default)]
struct NumberKind {
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
    multiple_of: Option<f64>,
    requires_integer: bool,
}

#[derive(Debug)]
struct ObjectKind {
    properties: Vec<(String, NodeId)>,
    required: Vec<String>,
    min_properties: Option<f64>,
    max_properties: Option<f64>,
    permits_additional: bool,
    additional_schema: Option<NodeId>,
    pattern_properties: Vec<PatternProperty>,
    property_dependencies: Vec<(String, Vec<String>)>,
    schema_dependencies: Vec<(String, NodeId)>,
    unevaluated: Option<NodeId>,
}

#[derive(Debug)]
struct PatternProperty {
    /// The pattern compiled as `{"pattern": ...}`, so it matches as the validator does;
    /// `None` if it does not compile (the property then matches nothing).
    matcher: Option<Arc<Validator>>,
    schema: NodeId,
}

#[derive(Debug)]
struct ArrayKind {
    all_items: Option<NodeId>,
    tuple_items: Vec<NodeId>,
    permits_additional: bool,
    additional_schema: Option<NodeId>,
    min_items: Option<f64>,
    max_items: Option<f64>,
    unique_items: bool,
    min_contains: Option<f64>,
    max_contains: Option<f64>,
    unevaluated: Option<NodeId>,
}

/// A schema object's place: its document, JSON pointer, and the base URI its own `$id` (if
/// any) resolves against.
#[derive(Debug, Clone)]
struct Location {
    document: usize,
    pointer: String,
    base: String,
}

/// Resources (a document, or a subschema with an `$id`) and anchors by absolute URI.
#[derive(Debug, Default)]
struct ResourceIndex {
    resources: HashMap<String, Location>,
    anchors: HashMap<String, Location>,
}

/// How a keyword holds subschemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Single,
    List,
    Named,
}

fn subschema_shape(keyword: &str, value: &Value) -> Option<Shape> {
    Some(match keyword {
        "additionalItems"
        | "additionalProperties"
        | "contains"
        | "not"
        | "if"
        | "then"
        | "else"
        | "propertyNames"
        | "unevaluatedItems"
        | "unevaluatedProperties"
        | "contentSchema" => Shape::Single,
        "items" if value.is_array() => Shape::List,
        "items" => Shape::Single,
        "allOf" | "anyOf" | "oneOf" | "prefixItems" => Shape::List,
        "properties" | "patternProperties" | "definitions" | "$defs" | "dependencies"
        | "dependentSchemas" => Shape::Named,
        _ => return None,
    })
}

/// The base URI inside `schema`: its `$id` resolved against `base`, unless it has none or
/// (drafts up to 7) it is a `#name` anchor.
fn base_inside(base: &str, schema: &Value, draft: Draft) -> String {
    match schema.get(id_keyword(draft)).and_then(Value::as_str) {
        Some(id) if !(draft <= Draft::Draft7 && id.starts_with('#')) => resolve_uri(base, id)
            .map(|uri| strip_fragment(&uri).to_owned())
            .unwrap_or_else(|| base.to_owned()),
        _ => base.to_owned(),
    }
}

impl ResourceIndex {
    fn build(documents: &[Document], draft: Draft) -> ResourceIndex {
        let mut index = ResourceIndex::default();
        for (document, contents) in documents.iter().enumerate() {
            for uri in &contents.uris {
                let location = Location {
                    document,
                    pointer: String::new(),
                    base: uri.clone(),
                };
                index.resources.entry(uri.clone()).or_insert(location);
            }
            let base = contents.uris[0].clone();
            index.add_schema(&contents.value, draft, document, String::new(), &base, 0);
        }
        index
    }

    /// Indexes `schema` (at `pointer`, inside `base`) and its subschemas. `depth` counts
    /// schema levels, which are fewer than the JSON levels [`check_depth`] bounded.
    fn add_schema(
        &mut self,
        schema: &Value,
        draft: Draft,
        document: usize,
        pointer: String,
        base: &str,
        depth: usize,
    ) {
        let Some(members) = schema.as_object() else {
            return;
        };
        if depth > MAX_SCHEMA_DEPTH {
            return;
        }
        let location = Location {
            document,
            pointer: pointer.clone(),
            base: base.to_owned(),
        };
        let inner_base = base_inside(base, schema, draft);
        match members.get(id_keyword(draft)).and_then(Value::as_str) {
            Some(anchor) if draft <= Draft::Draft7 && anchor.starts_with('#') => {
                let key = format!("{}{anchor}", strip_fragment(base));
                self.anchors.entry(key).or_insert_with(|| location.clone());
            }
            Some(_) if inner_base != base => {
                self.resources
                    .entry(inner_base.clone())
                    .or_insert_with(|| location.clone());
            }
            Some(_) => {}
            None => {}
        }
        let anchor = members
            .get("$anchor")
            .and_then(Value::as_str)
            .filter(|_| draft >= Draft::Draft201909);
        if let Some(anchor) = anchor {
            let key = format!("{inner_base}#{anchor}");
            self.anchors.entry(key).or_insert(location);
        }
        for (keyword, value) in members {
            let mut child_pointer = pointer.clone();
            push_pointer_token(&mut child_pointer, keyword);
            match subschema_shape(keyword, value) {
                Some(Shape::Single) => {
                    self.add_schema(
                        value,
                        draft,
                        document,
                        child_pointer,
                        &inner_base,
                        depth + 1,
                    );
                }
                Some(Shape::List) => {
                    for (index, item) in value.as_array().into_iter().flatten().enumerate() {
                        let mut item_pointer = child_pointer.clone();
                        push_pointer_token(&mut item_pointer, &index.to_string());
                        self.add_schema(
                            item,
                            draft,
                            document,
                            item_pointer,
                            &inner_base,
                            depth + 1,
                        );
                    }
                }
                Some(Shape::Named) => {
                    for (name, item) in value.as_object().into_iter().flatten() {
                        let mut item_pointer = child_pointer.clone();
                        push_pointer_token(&mut item_pointer, name);
                        self.add_schema(
                            item,
                            draft,
                            document,
                            item_pointer,
                            &inner_base,
                            depth + 1,
                        );
                    }
                }
                None => {}
            }
        }
    }
}

impl Model {
    /// Reads every subschema reachable from the root. Subschemas are read from a work list,
    /// not recursively, so `$ref` chains cost no stack.
    fn load(documents: Vec<Document>, draft: Draft) -> Model {
        let index = ResourceIndex::build(&documents, draft);
        let mut loader = Loader {
            documents: &documents,
            draft,
            index,
            nodes: Vec::new(),
            by_location: HashMap::new(),
            pending: Vec::new(),
            matchers: HashMap::new(),
        };
        loader.nodes.push(Node {
            kind: Kind::Empty,
            annotations: Annotations::default(),
            origin: Origin {
                document: usize::MAX,
                pointer: String::new(),
                part: Part::Whole,
            },
        });
        let root = loader.load(Location {
            document: 0,
            pointer: String::new(),
            base: DEFAULT_BASE_URI.to_owned(),
        });
        while let Some((node, location)) = loader.pending.pop() {
            loader.fill(node, &location);
        }
        let nodes = loader.nodes;
        Model {
            documents,
            nodes,
            root,
        }
    }

    /// Follows `$ref`s to the schema they name (Confluent's `normalizeSchema`), through
    /// chains; a chain that loops or ends nowhere is the empty schema.
    fn resolve(&self, mut node: NodeId) -> NodeId {
        for _ in 0..self.nodes.len() {
            match self.nodes[node].kind {
                Kind::Reference(target) => node = target,
                _ => return node,
            }
        }
        UNRESOLVED
    }

    /// Whether two subschemas of one `oneOf`/`anyOf`/`allOf` are the same to Confluent,
    /// which collects them in a set keyed by their JSON.
    fn same_subschema(&self, a: NodeId, b: NodeId) -> bool {
        if a == b {
            return true;
        }
        let (a, b) = (&self.nodes[a].origin, &self.nodes[b].origin);
        if a.part != b.part || a.document >= self.documents.len() {
            return false;
        }
        if b.document >= self.documents.len() {
            return false;
        }
        let value_a = self.documents[a.document].value.pointer(&a.pointer);
        let value_b = self.documents[b.document].value.pointer(&b.pointer);
        value_a.is_some() && value_a == value_b
    }
}

struct Loader<'d> {
    documents: &'d [Document],
    draft: Draft,
    index: ResourceIndex,
    nodes: Vec<Node>,
    by_location: HashMap<(usize, String), NodeId>,
    pending: Vec<(NodeId, Location)>,
    matchers: HashMap<String, Option<Arc<Validator>>>,
}

const NUMBER_KEYWORDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];
const STRING_KEYWORDS: &[&str] = &["minLength", "maxLength", "pattern", "format"];
const STRING_KEYWORDS_2019: &[&str] = &["minLength", "maxLength", "pattern"];
const OBJECT_KEYWORDS_4: &[&str] = &[
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "dependencies",
    "patternProperties",
    "additionalProperties",
];
const OBJECT_KEYWORDS_6: &[&str] = &[
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "dependencies",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
];
const OBJECT_KEYWORDS_2019: &[&str] = &[
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "dependencies",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
];
const ARRAY_KEYWORDS_4: &[&str] = &[
    "items",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
];
const ARRAY_KEYWORDS_6: &[&str] = &[
    "items",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
];
const ARRAY_KEYWORDS_2019: &[&str] = &[
    "items",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "prefixItems",
    "unevaluatedItems",
    "minContains",
    "maxContains",
];
const CONDITIONAL_KEYWORDS: &[&str] = &["if", "then", "else"];

impl<'d> Loader<'d> {
    fn object_keywords(&self) -> &'static [&'static str] {
        match self.draft {
            Draft::Draft4 => OBJECT_KEYWORDS_4,
            Draft::Draft6 | Draft::Draft7 => OBJECT_KEYWORDS_6,
            _ => OBJECT_KEYWORDS_2019,
        }
    }

    fn array_keywords(&self) -> &'static [&'static str] {
        match self.draft {
            Draft::Draft4 => ARRAY_KEYWORDS_4,
            Draft::Draft6 | Draft::Draft7 => ARRAY_KEYWORDS_6,
            _ => ARRAY_KEYWORDS_2019,
        }
    }

    fn string_keywords(&self) -> &'static [&'static str] {
        if self.draft >= Draft::Draft201909 {
            STRING_KEYWORDS_2019
        } else {
            STRING_KEYWORDS
        }
    }

    fn modern(&self) -> bool {
        self.draft >= Draft::Draft201909
    }

    /// The node for the schema at `location`, read later from the work list.
    fn load(&mut self, location: Location) -> NodeId {
        let key = (location.document, location.pointer.clone());
        if let Some(&node) = self.by_location.get(&key) {
            return node;
        }
        let node = self.nodes.len();
        self.nodes.push(Node {
            kind: Kind::Empty,
            annotations: Annotations::default(),
            origin: Origin {
                document: location.document,
                pointer: location.pointer.clone(),
                part: Part::Whole,
            },
        });
        self.by_location.insert(key, node);
        self.pending.push((node, location));
        node
    }

    fn add(&mut self, kind: Kind, origin: Origin) -> NodeId {
        self.nodes.push(Node {
            kind,
            annotations: Annotations::default(),
            origin,
        });
        self.nodes.len() - 1
    }

    fn fill(&mut self, node: NodeId, location: &Location) {
        let documents = self.documents;
        let Some(schema) = documents[location.document]
            .value
            .pointer(&location.pointer)
        else {
            return;
        };
        let (kind, annotations) = match schema {
            Value::Bool(true) => (Kind::True, Annotations::default()),
            Value::Bool(false) => (Kind::False, Annotations::default()),
            Value::Object(members) => {
                let base = base_inside(&location.base, schema, self.draft);
                let kind = self.read_object(location, &base, members);
                (kind, self.annotations(members))
            }
            _ => (Kind::Empty, Annotations::default()),
        };
        self.nodes[node].kind = kind;
        self.nodes[node].annotations = annotations;
    }

    fn annotations(&self, members: &Map<String, Value>) -> Annotations {
        let text = |key: &str| members.get(key).and_then(Value::as_str).map(str::to_owned);
        Annotations {
            id: text(id_keyword(self.draft)),
            title: text("title"),
            description: text("description"),
            default: members.get("default").cloned(),
            connect_bytes: members.get("connect.type").and_then(Value::as_str) == Some("bytes"),
        }
    }

    /// everit's `loadSchemaObject`: each extractor in turn takes the keywords it
    /// understands; one result is the schema, several an `allOf` of them, none the empty
    /// schema.
    fn read_object(
        &mut self,
        location: &Location,
        base: &str,
        members: &'d Map<String, Value>,
    ) -> Kind {
        let child = |segments: &[&str]| {
            let mut pointer = location.pointer.clone();
            for segment in segments {
                push_pointer_token(&mut pointer, segment);
            }
            Location {
                document: location.document,
                pointer,
                base: base.to_owned(),
            }
        };
        let origin = |part: Part| Origin {
            document: location.document,
            pointer: location.pointer.clone(),
            part,
        };
        let mut consumed: HashSet<&'static str> = HashSet::new();
        let mut parts: Vec<(Kind, Part)> = Vec::new();

        if let Some(reference) = members.get("$ref").and_then(Value::as_str) {
            let target = match self.resolve_reference(reference, base) {
                Some(target) => self.load(target),
                None => UNRESOLVED,
            };
            if !self.modern() {
                // Up to draft-07 a `$ref` replaces its siblings.
                return Kind::Reference(target);
            }
            consumed.insert("$ref");
            parts.push((Kind::Reference(target), Part::Keyword("$ref")));
        }
        if let Some(values) = members.get("enum").and_then(Value::as_array) {
            consumed.insert("enum");
            parts.push((Kind::Enum(values.clone()), Part::Keyword("enum")));
        }
        for criterion in [Criterion::All, Criterion::Any, Criterion::One] {
            let keyword = criterion.keyword();
            if let Some(items) = members.get(keyword).and_then(Value::as_array) {
                consumed.insert(keyword);
                let subschemas = (0..items.len())
                    .map(|index| self.load(child(&[keyword, &index.to_string()])))
                    .collect();
                parts.push((
                    Kind::Combined(criterion, subschemas),
                    Part::Keyword(keyword),
                ));
            }
        }
        if members.contains_key("not") {
            consumed.insert("not");
            let negated = self.load(child(&["not"]));
            parts.push((Kind::Not(negated), Part::Keyword("not")));
        }
        // Draft-04 has no `const`.
        if let Some(value) = members.get("const").filter(|_| self.draft != Draft::Draft4) {
            consumed.insert("const");
            parts.push((Kind::Const(value.clone()), Part::Keyword("const")));
        }
        match members.get("type") {
            Some(Value::String(name)) => {
                consumed.insert("type");
                if let Some((kind, name)) = self.read_typed(name, members, &child, &mut consumed) {
                    parts.push((kind, Part::Typed(name)));
                }
            }
            Some(Value::Array(names)) => {
                consumed.insert("type");
                let mut alternatives = Vec::with_capacity(names.len());
                for name in names.iter().filter_map(Value::as_str) {
                    if let Some((kind, name)) =
                        self.read_typed(name, members, &child, &mut consumed)
                    {
                        alternatives.push(self.add(kind, origin(Part::Typed(name))));
                    }
                }
                parts.push((Kind::Combined(Criterion::Any, alternatives), Part::TypeList));
            }
            _ => {}
        }
        // everit's property sniffer: keywords no extractor took imply a type.
        let present = |keywords: &[&str], consumed: &HashSet<&'static str>| {
            keywords
                .iter()
                .any(|keyword| members.contains_key(*keyword) && !consumed.contains(keyword))
        };
        if present(self.array_keywords(), &consumed) {
            let array = self.read_array(members, &child);
            parts.push((Kind::Array(Box::new(array)), Part::Sniffed("array")));
        }
        if present(self.object_keywords(), &consumed) {
            let object = self.read_object_kind(members, &child);
            parts.push((Kind::Object(Box::new(object)), Part::Sniffed("object")));
        }
        if present(NUMBER_KEYWORDS, &consumed) {
            let number = self.read_number(members, false);
            parts.push((Kind::Number(number), Part::Sniffed("number")));
        }
        if present(self.string_keywords(), &consumed) {
            parts.push((Kind::String(read_string(members)), Part::Sniffed("string")));
        }
        if self.draft >= Draft::Draft7 && present(CONDITIONAL_KEYWORDS, &consumed) {
            parts.push((Kind::Conditional, Part::Sniffed("if")));
        }

        match parts.len() {
            0 => Kind::Empty,
            1 => parts.pop().map_or(Kind::Empty, |(kind, _)| kind),
            _ => {
                let subschemas = parts
                    .into_iter()
                    .map(|(kind, part)| self.add(kind, origin(part)))
                    .collect();
                Kind::Combined(Criterion::All, subschemas)
            }
        }
    }

    /// everit's `loadForExplicitType`: the schema for one `type`, taking its keywords.
    fn read_typed(
        &mut self,
        name: &str,
        members: &'d Map<String, Value>,
        child: &dyn Fn(&[&str]) -> Location,
        consumed: &mut HashSet<&'static str>,
    ) -> Option<(Kind, &'static str)> {
        Some(match name {
            "string" => {
                consumed.extend(self.string_keywords());
                (Kind::String(read_string(members)), "string")
            }
            "integer" | "number" => {
                consumed.extend(NUMBER_KEYWORDS);
                let integer = name == "integer";
                let kind = Kind::Number(self.read_number(members, integer));
                (kind, if integer { "integer" } else { "number" })
            }
            "boolean" => (Kind::Boolean, "boolean"),
            "null" => (Kind::Null, "null"),
            "array" => {
                consumed.extend(self.array_keywords());
                let array = self.read_array(members, child);
                (Kind::Array(Box::new(array)), "array")
            }
            "object" => {
                consumed.extend(self.object_keywords());
                let object = self.read_object_kind(members, child);
                (Kind::Object(Box::new(object)), "object")
            }
            _ => return None,
        })
    }

    fn read_number(&self, members: &Map<String, Value>, requires_integer: bool) -> NumberKind {
        let number = |key: &str| members.get(key).and_then(Value::as_f64);
        // Draft-04's exclusive limits are booleans, which Confluent does not compare.
        let exclusive = |key: &str| {
            if self.draft == Draft::Draft4 {
                None
            } else {
                number(key)
            }
        };
        NumberKind {
            minimum: number("minimum"),
            maximum: number("maximum"),
            exclusive_minimum: exclusive("exclusiveMinimum"),
            exclusive_maximum: exclusive("exclusiveMaximum"),
            multiple_of: number("multipleOf"),
            requires_integer,
        }
    }

    fn read_object_kind(
        &mut self,
        members: &'d Map<String, Value>,
        child: &dyn Fn(&[&str]) -> Location,
    ) -> ObjectKind {
        let number = |key: &str| members.get(key).and_then(Value::as_f64);
        let mut object = ObjectKind {
            properties: Vec::new(),
            required: Vec::new(),
            min_properties: number("minProperties"),
            max_properties: number("maxProperties"),
            permits_additional: true,
            additional_schema: None,
            pattern_properties: Vec::new(),
            property_dependencies: Vec::new(),
            schema_dependencies: Vec::new(),
            unevaluated: None,
        };
        let id_keyword = id_keyword(self.draft);
        for (name, schema) in members
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            // everit skips a property named like the id keyword unless it is a schema object.
            if name == id_keyword && !schema.is_object() {
                continue;
            }
            let node = self.load(child(&["properties", name]));
            object.properties.push((name.clone(), node));
        }
        match members.get("additionalProperties") {
            Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => object.permits_additional = false,
            Some(Value::Object(_)) => {
                object.additional_schema = Some(self.load(child(&["additionalProperties"])));
            }
            _ => {}
        }
        object.required = members
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        for (pattern, _) in members
            .get("patternProperties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let schema = self.load(child(&["patternProperties", pattern]));
            let matcher = self.matcher(pattern);
            object
                .pattern_properties
                .push(PatternProperty { matcher, schema });
        }
        let dependencies = |keyword: &str, loader: &mut Self, object: &mut ObjectKind| {
            for (name, dependency) in members
                .get(keyword)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                match dependency {
                    Value::Array(names) => {
                        let names = names.iter().filter_map(Value::as_str).map(str::to_owned);
                        object
                            .property_dependencies
                            .push((name.clone(), names.collect()));
                    }
                    Value::Object(_) | Value::Bool(_) => {
                        let node = loader.load(child(&[keyword, name]));
                        object.schema_dependencies.push((name.clone(), node));
                    }
                    _ => {}
                }
            }
        };
        dependencies("dependencies", self, &mut object);
        if self.modern() {
            dependencies("dependentRequired", self, &mut object);
            dependencies("dependentSchemas", self, &mut object);
            if members.contains_key("unevaluatedProperties") {
                object.unevaluated = Some(self.load(child(&["unevaluatedProperties"])));
            }
        }
        object
    }

    fn read_array(
        &mut self,
        members: &'d Map<String, Value>,
        child: &dyn Fn(&[&str]) -> Location,
    ) -> ArrayKind {
        let number = |key: &str| members.get(key).and_then(Value::as_f64);
        let mut array = ArrayKind {
            all_items: None,
            tuple_items: Vec::new(),
            permits_additional: true,
            additional_schema: None,
            min_items: number("minItems"),
            max_items: number("maxItems"),
            unique_items: members.get("uniqueItems").and_then(Value::as_bool) == Some(true),
            min_contains: number("minContains"),
            max_contains: number("maxContains"),
            unevaluated: None,
        };
        let mut additional_flag = true;
        let tuple = |loader: &mut Self, keyword: &str, items: &[Value]| -> Vec<NodeId> {
            (0..items.len())
                .map(|index| loader.load(child(&[keyword, &index.to_string()])))
                .collect()
        };
        if self.draft == Draft::Draft202012 {
            // json-sKema's reading, as Confluent translates it: `prefixItems` is the tuple,
            // `items` the schema of the rest (of all items when there is no tuple).
            if let Some(items) = members.get("prefixItems").and_then(Value::as_array) {
                array.tuple_items = tuple(self, "prefixItems", items);
            }
            match members.get("items") {
                Some(Value::Bool(false)) => additional_flag = false,
                Some(Value::Object(_)) => {
                    let node = self.load(child(&["items"]));
                    if array.tuple_items.is_empty() {
                        array.all_items = Some(node);
                    } else {
                        array.additional_schema = Some(node);
                    }
                }
                _ => {}
            }
        } else {
            match members.get("additionalItems") {
                Some(Value::Bool(flag)) => additional_flag = *flag,
                Some(Value::Object(_)) => {
                    array.additional_schema = Some(self.load(child(&["additionalItems"])));
                }
                _ => {}
            }
            match members.get("items") {
                Some(Value::Array(items)) => array.tuple_items = tuple(self, "items", items),
                Some(Value::Object(_) | Value::Bool(_)) => {
                    array.all_items = Some(self.load(child(&["items"])));
                }
                _ => {}
            }
        }
        // everit's `ArraySchema` constructor.
        array.permits_additional = if !additional_flag && array.all_items.is_some() {
            true
        } else {
            array.additional_schema.is_some() || additional_flag
        };
        if self.modern() && members.contains_key("unevaluatedItems") {
            array.unevaluated = Some(self.load(child(&["unevaluatedItems"])));
        }
        array
    }

    fn matcher(&mut self, pattern: &str) -> Option<Arc<Validator>> {
        if let Some(matcher) = self.matchers.get(pattern) {
            return matcher.clone();
        }
        let matcher = jsonschema::options()
            .with_draft(Draft::Draft7)
            .offline()
            .build(&serde_json::json!({ "pattern": pattern }))
            .ok()
            .map(Arc::new);
        self.matchers.insert(pattern.to_owned(), matcher.clone());
        matcher
    }

    /// The schema `reference` names, seen from `base`: a resource (document or `$id`), a
    /// JSON pointer into one, or an anchor.
    fn resolve_reference(&self, reference: &str, base: &str) -> Option<Location> {
        let target = resolve_uri(base, reference)?;
        let (resource, fragment) = target.split_once('#').unwrap_or((&target, ""));
        let root = self.index.resources.get(resource)?;
        let fragment = percent_decode(fragment);
        if fragment.is_empty() {
            return Some(root.clone());
        }
        match fragment.strip_prefix('/') {
            Some(pointer) => self.walk_pointer(root, pointer),
            None => self
                .index
                .anchors
                .get(&format!("{resource}#{fragment}"))
                .cloned(),
        }
    }

    /// Walks a JSON pointer from a resource, keeping track of the base URI as it passes
    /// through schemas with an `$id`.
    fn walk_pointer(&self, root: &Location, pointer: &str) -> Option<Location> {
        let document = &self.documents[root.document].value;
        let mut value = document.pointer(&root.pointer)?;
        let mut location = root.clone();
        // Whether `value` is a schema (its `$id` counts), a container of schemas, or
        // somewhere the walk no longer knows.
        #[derive(Clone, Copy)]
        enum Position {
            Schema,
            Container,
            Unknown,
        }
        let mut position = Position::Schema;
        for raw_token in pointer.split('/') {
            let token = unescape_pointer_token(raw_token);
            let next_position = match position {
                Position::Schema => {
                    location.base = base_inside(&location.base, value, self.draft);
                    let child = value.get(&token)?;
                    match subschema_shape(&token, child) {
                        Some(Shape::Single) => Position::Schema,
                        Some(Shape::List | Shape::Named) => Position::Container,
                        None => Position::Unknown,
                    }
                }
                Position::Container => Position::Schema,
                Position::Unknown => Position::Unknown,
            };
            value = match value {
                Value::Object(members) => members.get(&token)?,
                Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
            push_pointer_token(&mut location.pointer, &token);
            position = next_position;
        }
        Some(location)
    }
}

fn read_string(members: &Map<String, Value>) -> StringKind {
    StringKind {
        min_length: members.get("minLength").and_then(Value::as_f64),
        max_length: members.get("maxLength").and_then(Value::as_f64),
        pattern: members
            .get("pattern")
            .and_then(Value::as_str)
            .map(str::to_owned),
    }
}

// ---------------------------------------------------------------------------------------
// Confluent's differences and their messages.

macro_rules! difference_types {
    ($($variant:ident = $name:literal,)*) => {
        /// Confluent's `Difference.Type`: what changed at a path, from the old schema to the
        /// new one.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        enum DifferenceType {
            $($variant,)*
        }

        impl DifferenceType {
            fn name(self) -> &'static str {
                match self {
                    $(DifferenceType::$variant => $name,)*
                }
            }
        }
    };
}

difference_types! {
    IdChanged = "ID_CHANGED",
    DescriptionChanged = "DESCRIPTION_CHANGED",
    TitleChanged = "TITLE_CHANGED",
    DefaultChanged = "DEFAULT_CHANGED",
    SchemaAdded = "SCHEMA_ADDED",
    SchemaRemoved = "SCHEMA_REMOVED",
    TypeExtended = "TYPE_EXTENDED",
    TypeNarrowed = "TYPE_NARROWED",
    TypeChanged = "TYPE_CHANGED",
    MaxLengthAdded = "MAX_LENGTH_ADDED",
    MaxLengthRemoved = "MAX_LENGTH_REMOVED",
    MaxLengthIncreased = "MAX_LENGTH_INCREASED",
    MaxLengthDecreased = "MAX_LENGTH_DECREASED",
    MinLengthAdded = "MIN_LENGTH_ADDED",
    MinLengthRemoved = "MIN_LENGTH_REMOVED",
    MinLengthIncreased = "MIN_LENGTH_INCREASED",
    MinLengthDecreased = "MIN_LENGTH_DECREASED",
    PatternAdded = "PATTERN_ADDED",
    PatternRemoved = "PATTERN_REMOVED",
    PatternChanged = "PATTERN_CHANGED",
    MaximumAdded = "MAXIMUM_ADDED",
    MaximumRemoved = "MAXIMUM_REMOVED",
    MaximumIncreased = "MAXIMUM_INCREASED",
    MaximumDecreased = "MAXIMUM_DECREASED",
    MinimumAdded = "MINIMUM_ADDED",
    MinimumRemoved = "MINIMUM_REMOVED",
    MinimumIncreased = "MINIMUM_INCREASED",
    MinimumDecreased = "MINIMUM_DECREASED",
    ExclusiveMaximumAdded = "EXCLUSIVE_MAXIMUM_ADDED",
    ExclusiveMaximumRemoved = "EXCLUSIVE_MAXIMUM_REMOVED",
    ExclusiveMaximumIncreased = "EXCLUSIVE_MAXIMUM_INCREASED",
    ExclusiveMaximumDecreased = "EXCLUSIVE_MAXIMUM_DECREASED",
    ExclusiveMinimumAdded = "EXCLUSIVE_MINIMUM_ADDED",
    ExclusiveMinimumRemoved = "EXCLUSIVE_MINIMUM_REMOVED",
    ExclusiveMinimumIncreased = "EXCLUSIVE_MINIMUM_INCREASED",
    ExclusiveMinimumDecreased = "EXCLUSIVE_MINIMUM_DECREASED",
    MultipleOfAdded = "MULTIPLE_OF_ADDED",
    MultipleOfRemoved = "MULTIPLE_OF_REMOVED",
    MultipleOfExpanded = "MULTIPLE_OF_EXPANDED",
    MultipleOfReduced = "MULTIPLE_OF_REDUCED",
    MultipleOfChanged = "MULTIPLE_OF_CHANGED",
    RequiredAttributeAdded = "REQUIRED_ATTRIBUTE_ADDED",
    RequiredAttributeWithDefaultAdded = "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
    RequiredAttributeRemoved = "REQUIRED_ATTRIBUTE_REMOVED",
    MaxPropertiesAdded = "MAX_PROPERTIES_ADDED",
    MaxPropertiesRemoved = "MAX_PROPERTIES_REMOVED",
    MaxPropertiesIncreased = "MAX_PROPERTIES_INCREASED",
    MaxPropertiesDecreased = "MAX_PROPERTIES_DECREASED",
    MinPropertiesAdded = "MIN_PROPERTIES_ADDED",
    MinPropertiesRemoved = "MIN_PROPERTIES_REMOVED",
    MinPropertiesIncreased = "MIN_PROPERTIES_INCREASED",
    MinPropertiesDecreased = "MIN_PROPERTIES_DECREASED",
    AdditionalPropertiesAdded = "ADDITIONAL_PROPERTIES_ADDED",
    AdditionalPropertiesRemoved = "ADDITIONAL_PROPERTIES_REMOVED",
    AdditionalPropertiesExtended = "ADDITIONAL_PROPERTIES_EXTENDED",
    AdditionalPropertiesNarrowed = "ADDITIONAL_PROPERTIES_NARROWED",
    DependencyArrayAdded = "DEPENDENCY_ARRAY_ADDED",
    DependencyArrayRemoved = "DEPENDENCY_ARRAY_REMOVED",
    DependencyArrayExtended = "DEPENDENCY_ARRAY_EXTENDED",
    DependencyArrayNarrowed = "DEPENDENCY_ARRAY_NARROWED",
    DependencyArrayChanged = "DEPENDENCY_ARRAY_CHANGED",
    DependencySchemaAdded = "DEPENDENCY_SCHEMA_ADDED",
    DependencySchemaRemoved = "DEPENDENCY_SCHEMA_REMOVED",
    PropertyAddedToOpenContentModel = "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
    PropertyWithEmptySchemaAddedToOpenContentModel =
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
    RequiredPropertyAddedToUnopenContentModel = "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
    RequiredPropertyWithDefaultAddedToUnopenContentModel =
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
    OptionalPropertyAddedToUnopenContentModel = "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
    PropertyRemovedFromOpenContentModel = "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
    PropertyWithFalseRemovedFromClosedContentModel =
        "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    PropertyRemovedFromClosedContentModel = "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    PropertyRemovedIsCoveredByPartiallyOpenContentModel =
        "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    PropertyRemovedNotCoveredByPartiallyOpenContentModel =
        "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    PropertyAddedIsCoveredByPartiallyOpenContentModel =
        "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    PropertyAddedNotCoveredByPartiallyOpenContentModel =
        "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    UnevaluatedPropertiesAdded = "UNEVALUATED_PROPERTIES_ADDED",
    UnevaluatedPropertiesRemoved = "UNEVALUATED_PROPERTIES_REMOVED",
    UnevaluatedPropertiesExtended = "UNEVALUATED_PROPERTIES_EXTENDED",
    UnevaluatedPropertiesNarrowed = "UNEVALUATED_PROPERTIES_NARROWED",
    MaxItemsAdded = "MAX_ITEMS_ADDED",
    MaxItemsRemoved = "MAX_ITEMS_REMOVED",
    MaxItemsIncreased = "MAX_ITEMS_INCREASED",
    MaxItemsDecreased = "MAX_ITEMS_DECREASED",
    MinItemsAdded = "MIN_ITEMS_ADDED",
    MinItemsRemoved = "MIN_ITEMS_REMOVED",
    MinItemsIncreased = "MIN_ITEMS_INCREASED",
    MinItemsDecreased = "MIN_ITEMS_DECREASED",
    MaxContainsAdded = "MAX_CONTAINS_ADDED",
    MaxContainsRemoved = "MAX_CONTAINS_REMOVED",
    MaxContainsIncreased = "MAX_CONTAINS_INCREASED",
    MaxContainsDecreased = "MAX_CONTAINS_DECREASED",
    MinContainsAdded = "MIN_CONTAINS_ADDED",
    MinContainsRemoved = "MIN_CONTAINS_REMOVED",
    MinContainsIncreased = "MIN_CONTAINS_INCREASED",
    MinContainsDecreased = "MIN_CONTAINS_DECREASED",
    UniqueItemsAdded = "UNIQUE_ITEMS_ADDED",
    UniqueItemsRemoved = "UNIQUE_ITEMS_REMOVED",
    AdditionalItemsAdded = "ADDITIONAL_ITEMS_ADDED",
    AdditionalItemsRemoved = "ADDITIONAL_ITEMS_REMOVED",
    AdditionalItemsExtended = "ADDITIONAL_ITEMS_EXTENDED",
    AdditionalItemsNarrowed = "ADDITIONAL_ITEMS_NARROWED",
    UnevaluatedItemsAdded = "UNEVALUATED_ITEMS_ADDED",
    UnevaluatedItemsRemoved = "UNEVALUATED_ITEMS_REMOVED",
    UnevaluatedItemsExtended = "UNEVALUATED_ITEMS_EXTENDED",
    UnevaluatedItemsNarrowed = "UNEVALUATED_ITEMS_NARROWED",
    ItemAddedToOpenContentModel = "ITEM_ADDED_TO_OPEN_CONTENT_MODEL",
    ItemWithEmptySchemaAddedToOpenContentModel = "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
    ItemAddedToClosedContentModel = "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
    ItemRemovedFromOpenContentModel = "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
    ItemWithFalseRemovedFromClosedContentModel =
        "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    ItemRemovedFromClosedContentModel = "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    ItemRemovedIsCoveredByPartiallyOpenContentModel =
        "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    ItemRemovedNotCoveredByPartiallyOpenContentModel =
        "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    ItemAddedIsCoveredByPartiallyOpenContentModel =
        "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    ItemAddedNotCoveredByPartiallyOpenContentModel =
        "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    EnumArrayExtended = "ENUM_ARRAY_EXTENDED",
    EnumArrayNarrowed = "ENUM_ARRAY_NARROWED",
    EnumArrayChanged = "ENUM_ARRAY_CHANGED",
    CombinedTypeExtended = "COMBINED_TYPE_EXTENDED",
    CombinedTypeChanged = "COMBINED_TYPE_CHANGED",
    ProductTypeExtended = "PRODUCT_TYPE_EXTENDED",
    ProductTypeNarrowed = "PRODUCT_TYPE_NARROWED",
    SumTypeExtended = "SUM_TYPE_EXTENDED",
    SumTypeNarrowed = "SUM_TYPE_NARROWED",
    CombinedTypeSubschemasChanged = "COMBINED_TYPE_SUBSCHEMAS_CHANGED",
    NotTypeExtended = "NOT_TYPE_EXTENDED",
    NotTypeNarrowed = "NOT_TYPE_NARROWED",
}

/// The four variants of a limit keyword (`ADDED`, `REMOVED`, `INCREASED`, `DECREASED`).
type LimitTypes = [DifferenceType; 4];

impl DifferenceType {
    /// Confluent's `COMPATIBLE_CHANGES_STRICT`: a reader with this change still reads what
    /// the writer wrote.
    fn is_compatible(self) -> bool {
        use DifferenceType::*;
        matches!(
            self,
            IdChanged
                | DescriptionChanged
                | TitleChanged
                | DefaultChanged
                | SchemaRemoved
                | TypeExtended
                | MaxLengthIncreased
                | MaxLengthRemoved
                | MinLengthDecreased
                | MinLengthRemoved
                | PatternRemoved
                | MaximumIncreased
                | MaximumRemoved
                | MinimumDecreased
                | MinimumRemoved
                | ExclusiveMaximumIncreased
                | ExclusiveMaximumRemoved
                | ExclusiveMinimumDecreased
                | ExclusiveMinimumRemoved
                | MultipleOfReduced
                | MultipleOfRemoved
                | RequiredAttributeWithDefaultAdded
                | RequiredAttributeRemoved
                | DependencyArrayNarrowed
                | DependencyArrayRemoved
                | DependencySchemaRemoved
                | MaxPropertiesIncreased
                | MaxPropertiesRemoved
                | MinPropertiesDecreased
                | MinPropertiesRemoved
                | AdditionalPropertiesAdded
                | AdditionalPropertiesExtended
                | UnevaluatedPropertiesAdded
                | UnevaluatedPropertiesExtended
                | PropertyWithEmptySchemaAddedToOpenContentModel
                | RequiredPropertyWithDefaultAddedToUnopenContentModel
                | OptionalPropertyAddedToUnopenContentModel
                | PropertyWithFalseRemovedFromClosedContentModel
                | PropertyRemovedFromOpenContentModel
                | PropertyAddedIsCoveredByPartiallyOpenContentModel
                | PropertyRemovedIsCoveredByPartiallyOpenContentModel
                | MaxItemsIncreased
                | MaxItemsRemoved
                | MinItemsDecreased
                | MinItemsRemoved
                | MaxContainsIncreased
                | MaxContainsRemoved
                | MinContainsDecreased
                | MinContainsRemoved
                | UniqueItemsRemoved
                | AdditionalItemsAdded
                | AdditionalItemsExtended
                | UnevaluatedItemsAdded
                | UnevaluatedItemsExtended
                | ItemWithEmptySchemaAddedToOpenContentModel
                | ItemAddedToClosedContentModel
                | ItemWithFalseRemovedFromClosedContentModel
                | ItemRemovedFromOpenContentModel
                | ItemAddedIsCoveredByPartiallyOpenContentModel
                | ItemRemovedIsCoveredByPartiallyOpenContentModel
                | EnumArrayExtended
                | CombinedTypeExtended
                | ProductTypeNarrowed
                | SumTypeExtended
                | NotTypeNarrowed
        )
    }

    /// Confluent's `Difference.error()`: the description, with `reader` and `writer` for
    /// its two `%s`.
    fn description(self, path: &str, reader: &str, writer: &str) -> String {
        use DifferenceType::*;
        match self {
            MaximumAdded
            | MinimumAdded
            | ExclusiveMaximumAdded
            | ExclusiveMinimumAdded
            | MultipleOfAdded
            | MaxLengthAdded
            | MinLengthAdded
            | PatternAdded
            | RequiredAttributeAdded
            | MaxPropertiesAdded
            | MinPropertiesAdded
            | DependencyArrayAdded
            | DependencySchemaAdded
            | MaxItemsAdded
            | MinItemsAdded
            | MaxContainsAdded
            | MinContainsAdded
            | UniqueItemsAdded
            | AdditionalItemsRemoved
            | AdditionalPropertiesRemoved
            | UnevaluatedPropertiesRemoved
            | UnevaluatedItemsRemoved => format!(
                "The keyword at path '{path}' in the {reader} schema is not present in the \
                 {writer} schema"
            ),
            MinLengthIncreased
            | MinimumIncreased
            | ExclusiveMinimumIncreased
            | MinPropertiesIncreased
            | MultipleOfExpanded
            | MinItemsIncreased
            | MinContainsIncreased => format!(
                "The value at path '{path}' in the {reader} schema is more than its value in \
                 the {writer} schema"
            ),
            MaxLengthDecreased
            | MaximumDecreased
            | MaxItemsDecreased
            | MaxContainsDecreased
            | ExclusiveMaximumDecreased
            | MaxPropertiesDecreased => format!(
                "The value at path '{path}' in the {reader} schema is less than its value in \
                 the {writer} schema"
            ),
            PatternChanged | MultipleOfChanged | DependencyArrayChanged => format!(
                "The value at path '{path}' is different between the {reader} and {writer} \
                 schema"
            ),
            AdditionalItemsNarrowed
            | EnumArrayNarrowed
            | SumTypeNarrowed
            | AdditionalPropertiesNarrowed
            | UnevaluatedPropertiesNarrowed
            | UnevaluatedItemsNarrowed => format!(
                "An array or combined type at path '{path}' has fewer elements in the {reader} \
                 schema than the {writer} schema"
            ),
            DependencyArrayExtended | ProductTypeExtended | SumTypeExtended | NotTypeExtended => {
                format!(
                    "An array or combined type at path '{path}' has more elements in the {reader} \
                 schema than the {writer} schema"
                )
            }
            TypeChanged
            | TypeNarrowed
            | CombinedTypeChanged
            | CombinedTypeSubschemasChanged
            | EnumArrayChanged => format!(
                "A type at path '{path}' is different between the {reader} schema and the \
                 {writer} schema"
            ),
            PropertyAddedToOpenContentModel | ItemAddedToOpenContentModel => format!(
                "The {reader} schema has an open content model and has a property or item at \
                 path '{path}' which is missing in the {writer} schema"
            ),
            RequiredPropertyAddedToUnopenContentModel => format!(
                "The {reader} schema has an unopen content model and has a required property at \
                 path '{path}' which is missing in the {writer} schema"
            ),
            PropertyRemovedFromClosedContentModel | ItemRemovedFromClosedContentModel => format!(
                "The {reader} has a closed content model and is missing a property or item \
                 present at path '{path}' in the {writer} schema"
            ),
            PropertyRemovedNotCoveredByPartiallyOpenContentModel
            | ItemRemovedNotCoveredByPartiallyOpenContentModel => format!(
                "A property or item is missing in the {reader} schema but present at path \
                 '{path}' in the {writer} schema and is not covered by its partially open \
                 content model"
            ),
            PropertyAddedNotCoveredByPartiallyOpenContentModel
            | ItemAddedNotCoveredByPartiallyOpenContentModel => format!(
                "The {reader} schema has a property or item at path '{path}' which is missing \
                 in the {writer} schema and is not covered by its partially open content model"
            ),
            _ => String::new(),
        }
    }
}

/// One difference, at a path relative to the pair of schemas being compared (`""` is the
/// pair itself); the top-level comparison's paths are the schemas' JSON paths without `#/`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Difference {
    kind: DifferenceType,
    path: String,
}

impl Difference {
    /// Confluent's `Difference.toString()`, with its `%s`s filled in as its
    /// `SchemaValidatorBuilder` fills them.
    fn message(&self, reader: &str, writer: &str) -> String {
        let path = format!("#/{}", self.path);
        format!(
            "{{errorType:\"{}\", description:\"{}'}}",
            self.kind.name(),
            self.kind.description(&path, reader, writer)
        )
    }
}

/// Confluent's diff `Context`: the path being compared (relative to the current pair) and
/// the differences found so far.
#[derive(Debug, Default)]
struct Context {
    path: Vec<String>,
    differences: Vec<Difference>,
}

impl Context {
    /// A context for a trial comparison whose differences the caller may keep or drop.
    fn trial(&self) -> Context {
        Context {
            path: self.path.clone(),
            differences: Vec::new(),
        }
    }

    fn is_compatible(&self) -> bool {
        self.differences
            .iter()
            .all(|difference| difference.kind.is_compatible())
    }

    fn add(&mut self, kind: DifferenceType) {
        self.differences.push(Difference {
            kind,
            path: self.path.join("/"),
        });
    }

    fn add_at(&mut self, keyword: &str, kind: DifferenceType) {
        self.path.push(keyword.to_owned());
        self.add(kind);
        self.path.pop();
    }

    fn keep(&mut self, trial: Context) {
        self.differences.extend(trial.differences);
    }

    /// Adds a pair's differences (paths relative to the pair) at the current path.
    fn add_rebased(&mut self, differences: &[Difference]) {
        let prefix = self.path.join("/");
        for difference in differences {
            let path = match (prefix.is_empty(), difference.path.is_empty()) {
                (true, _) => difference.path.clone(),
                (false, true) => prefix.clone(),
                (false, false) => format!("{prefix}/{}", difference.path),
            };
            self.differences.push(Difference {
                kind: difference.kind,
                path,
            });
        }
    }

    fn enter(&mut self, segment: impl Into<String>) {
        self.path.push(segment.into());
    }

    fn leave(&mut self) {
        self.path.pop();
    }
}

// ---------------------------------------------------------------------------------------
// Confluent's comparison (`SchemaDiff` and the per-kind diffs), old schema to new.

const OLD: usize = 0;
const NEW: usize = 1;

/// A node of one of the two models being compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct SchemaRef {
    side: usize,
    node: NodeId,
}

impl SchemaRef {
    fn to(self, node: NodeId) -> SchemaRef {
        SchemaRef {
            side: self.side,
            node,
        }
    }
}

type Pair = (SchemaRef, SchemaRef);

struct Comparison<'m> {
    models: [&'m Model; 2],
    /// Pair results that did not depend on a cycle, paths relative to the pair.
    memo: HashMap<Pair, Rc<Vec<Difference>>>,
    in_progress: HashSet<Pair>,
    /// Cycles cut so far; a pair whose comparison cut one is not memoized.
    cycles_cut: u64,
    pairs_compared: usize,
    depth: usize,
    limit_exceeded: bool,
}

impl<'m> Comparison<'m> {
    fn new(models: [&'m Model; 2]) -> Self {
        Comparison {
            models,
            memo: HashMap::new(),
            in_progress: HashSet::new(),
            cycles_cut: 0,
            pairs_compared: 0,
            depth: 0,
            limit_exceeded: false,
        }
    }

    fn node(&self, schema: SchemaRef) -> &'m Node {
        let model: &'m Model = self.models[schema.side];
        &model.nodes[schema.node]
    }

    fn kind(&self, schema: SchemaRef) -> &'m Kind {
        &self.node(schema).kind
    }

    fn resolve(&self, schema: SchemaRef) -> SchemaRef {
        schema.to(self.models[schema.side].resolve(schema.node))
    }

    /// `SchemaDiff.compare` with a missing schema on either side.
    fn compare_optional(
        &mut self,
        context: &mut Context,
        original: Option<SchemaRef>,
        update: Option<SchemaRef>,
    ) {
        match (original, update) {
            (None, None) => {}
            (None, Some(_)) => context.add(DifferenceType::SchemaAdded),
            (Some(_), None) => context.add(DifferenceType::SchemaRemoved),
            (Some(original), Some(update)) => self.compare(context, original, update),
        }
    }

    /// `SchemaDiff.compare`: `$ref`s followed, each pair compared once (memoized unless its
    /// result hung on a cycle), a pair met again inside itself taken as compatible.
    fn compare(&mut self, context: &mut Context, original: SchemaRef, update: SchemaRef) {
        if self.limit_exceeded {
            return;
        }
        let pair = (self.resolve(original), self.resolve(update));
        if let Some(differences) = self.memo.get(&pair) {
            let differences = Rc::clone(differences);
            context.add_rebased(&differences);
            return;
        }
        if self.in_progress.contains(&pair) {
            self.cycles_cut += 1;
            return;
        }
        if self.pairs_compared >= MAX_COMPARED_PAIRS || self.depth >= MAX_COMPARISON_DEPTH {
            self.limit_exceeded = true;
            return;
        }
        self.pairs_compared += 1;
        self.depth += 1;
        self.in_progress.insert(pair);
        let cycles_before = self.cycles_cut;
        let mut pair_context = Context::default();
        self.compare_types(&mut pair_context, pair.0, pair.1);
        self.in_progress.remove(&pair);
        self.depth -= 1;
        let differences = Rc::new(pair_context.differences);
        if self.cycles_cut == cycles_before && !self.limit_exceeded {
            self.memo.insert(pair, Rc::clone(&differences));
        }
        context.add_rebased(&differences);
    }

    fn compare_types(&mut self, context: &mut Context, original: SchemaRef, update: SchemaRef) {
        use DifferenceType::*;
        let (original_kind, update_kind) = (self.kind(original), self.kind(update));
        match (original_kind, update_kind) {
            (original_kind, Kind::Combined(criterion, subschemas))
                if !original_kind.is_combined() =>
            {
                if subschemas.len() == 1 {
                    // A singleton union is its only member.
                    let mut trial = context.trial();
                    self.compare(&mut trial, original, update.to(subschemas[0]));
                    if trial.is_compatible() {
                        context.keep(trial);
                        return;
                    }
                } else if *criterion != Criterion::All {
                    for &subschema in subschemas {
                        let mut trial = context.trial();
                        self.compare(&mut trial, original, update.to(subschema));
                        if trial.is_compatible() {
                            context.keep(trial);
                            context.add(SumTypeExtended);
                            return;
                        }
                    }
                }
            }
            (Kind::Combined(criterion, subschemas), update_kind) if !update_kind.is_combined() => {
                if subschemas.len() == 1 {
                    let mut trial = context.trial();
                    self.compare(&mut trial, original.to(subschemas[0]), update);
                    if trial.is_compatible() {
                        context.keep(trial);
                        return;
                    }
                } else if *criterion == Criterion::All {
                    for &subschema in subschemas {
                        let mut trial = context.trial();
                        self.compare(&mut trial, original.to(subschema), update);
                        if trial.is_compatible() {
                            context.keep(trial);
                            context.add(ProductTypeNarrowed);
                            return;
                        }
                    }
                }
            }
            _ => {}
        }

        let (original_node, update_node) = (self.node(original), self.node(update));
        let same_class = original_kind.class() == update_kind.class();
        if !same_class {
            if matches!(original_kind, Kind::False) || update_kind.is_empty_schema() {
                return;
            }
            if original_node.annotations.connect_bytes && update_node.annotations.connect_bytes {
                // Kafka Connect's decimal may move between string and number encodings.
                return;
            }
            context.add(TypeChanged);
            return;
        }

        let (a, b) = (&original_node.annotations, &update_node.annotations);
        if a.id != b.id {
            context.add(IdChanged);
        }
        if a.title != b.title {
            context.add(TitleChanged);
        }
        if a.description != b.description {
            context.add(DescriptionChanged);
        }
        if a.default != b.default {
            context.add(DefaultChanged);
        }

        match (original_kind, update_kind) {
            (Kind::String(a), Kind::String(b)) => compare_strings(context, a, b),
            (Kind::Number(a), Kind::Number(b)) => compare_numbers(context, a, b),
            (Kind::Const(a), Kind::Const(b)) if a != b => {
                context.add_at("const", EnumArrayChanged);
            }
            (Kind::Enum(a), Kind::Enum(b)) => compare_enums(context, a, b),
            (Kind::Combined(criterion_a, a), Kind::Combined(criterion_b, b)) => {
                let original_side = (original, *criterion_a, a.as_slice());
                let update_side = (update, *criterion_b, b.as_slice());
                self.compare_combined(context, original_side, update_side);
            }
            (Kind::Not(a), Kind::Not(b)) => {
                context.enter("not");
                // What the old schema excluded, the new one may exclude less of: compared
                // the other way round.
                let mut trial = context.trial();
                self.compare(&mut trial, update.to(*b), original.to(*a));
                context.add(if trial.is_compatible() {
                    NotTypeNarrowed
                } else {
                    NotTypeExtended
                });
                context.leave();
            }
            (Kind::Object(a), Kind::Object(b)) => {
                self.compare_objects(context, (original, a), (update, b));
            }
            (Kind::Array(a), Kind::Array(b)) => {
                self.compare_arrays(context, (original, a), (update, b));
            }
            _ => {}
        }
    }

    /// `CombinedSchemaDiff`: criteria, sizes, then a maximum matching of compatible
    /// (old, new) subschema pairs, which must cover the smaller side.
    fn compare_combined(
        &mut self,
        context: &mut Context,
        (original, original_criterion, original_all): (SchemaRef, Criterion, &[NodeId]),
        (update, update_criterion, update_all): (SchemaRef, Criterion, &[NodeId]),
    ) {
        use DifferenceType::*;
        if original_criterion != update_criterion {
            let single_original = original_all.len() == 1;
            let single_update = update_all.len() == 1;
            let extended = update_criterion == Criterion::Any
                || (single_original && single_update)
                || (single_original && update_criterion == Criterion::One)
                || (single_update && original_criterion == Criterion::All);
            if !extended {
                context.add(CombinedTypeChanged);
                return;
            }
            context.add(CombinedTypeExtended);
        }
        let original_subschemas = distinct(self.models[original.side], original_all);
        let update_subschemas = distinct(self.models[update.side], update_all);
        let (original_size, update_size) = (original_subschemas.len(), update_subschemas.len());
        if original_size < update_size {
            context.add(if update_criterion == Criterion::All {
                ProductTypeExtended
            } else {
                SumTypeExtended
            });
        } else if original_size > update_size {
            context.add(if original_criterion == Criterion::All {
                ProductTypeNarrowed
            } else {
                SumTypeNarrowed
            });
        }
        let mut edges: Vec<(usize, usize, Vec<Difference>)> = Vec::new();
        for (original_index, &original_subschema) in original_subschemas.iter().enumerate() {
            context.enter(format!("{}/{original_index}", original_criterion.keyword()));
            for (update_index, &update_subschema) in update_subschemas.iter().enumerate() {
                let mut trial = context.trial();
                self.compare(
                    &mut trial,
                    original.to(original_subschema),
                    update.to(update_subschema),
                );
                if trial.is_compatible() {
                    edges.push((original_index, update_index, trial.differences));
                }
            }
            context.leave();
        }
        let pairs: Vec<(usize, usize)> = edges.iter().map(|(a, b, _)| (*a, *b)).collect();
        let matching = maximum_matching(original_size, update_size, &pairs);
        for &edge in &matching {
            context.differences.extend(edges[edge].2.iter().cloned());
        }
        if matching.len() < original_size.min(update_size) {
            context.add(CombinedTypeSubschemasChanged);
        }
    }

    /// `ObjectSchemaDiff`.
    fn compare_objects(
        &mut self,
        context: &mut Context,
        (original, a): (SchemaRef, &ObjectKind),
        (update, b): (SchemaRef, &ObjectKind),
    ) {
        use DifferenceType::*;
        context.enter("required");
        for (name, _) in &a.properties {
            let Some(&(_, update_property)) = b.properties.iter().find(|(n, _)| n == name) else {
                continue;
            };
            let was_required = a.required.contains(name);
            let is_required = b.required.contains(name);
            if was_required && !is_required {
                context.add_at(name, RequiredAttributeRemoved);
            } else if !was_required && is_required {
                context.add_at(
                    name,
                    if self.has_default(update.to(update_property)) {
                        RequiredAttributeWithDefaultAdded
                    } else {
                        RequiredAttributeAdded
                    },
                );
            }
        }
        context.leave();

        context.enter("properties");
        let added = b
            .properties
            .iter()
            .filter(|(name, _)| !a.properties.iter().any(|(n, _)| n == name));
        let names: Vec<&String> = a
            .properties
            .iter()
            .chain(added)
            .map(|(name, _)| name)
            .collect();
        for name in names {
            let original_property = a.properties.iter().find(|(n, _)| n == name).map(|p| p.1);
            let update_property = b.properties.iter().find(|(n, _)| n == name).map(|p| p.1);
            context.enter(name.as_str());
            match (original_property, update_property) {
                (Some(original_property), None) => {
                    // Only the new model says whether a property may go.
                    if self.is_open_object(update, b) {
                        context.add(PropertyRemovedFromOpenContentModel);
                    } else if let Some(covering) = self.partially_open_object(update, b, name) {
                        let mut trial = context.trial();
                        self.compare(&mut trial, original.to(original_property), covering);
                        let covered = trial.is_compatible();
                        context.keep(trial);
                        context.add(if covered {
                            PropertyRemovedIsCoveredByPartiallyOpenContentModel
                        } else {
                            PropertyRemovedNotCoveredByPartiallyOpenContentModel
                        });
                    } else if matches!(self.kind(original.to(original_property)), Kind::False) {
                        context.add(PropertyWithFalseRemovedFromClosedContentModel);
                    } else {
                        context.add(PropertyRemovedFromClosedContentModel);
                    }
                }
                (None, Some(update_property)) => {
                    // Only the old model says whether a property may come.
                    if self.is_open_object(original, a) {
                        if self.kind(update.to(update_property)).is_empty_schema() {
                            context.add(PropertyWithEmptySchemaAddedToOpenContentModel);
                        } else {
                            context.add(PropertyAddedToOpenContentModel);
                        }
                    } else {
                        if let Some(covering) = self.partially_open_object(original, a, name) {
                            let mut trial = context.trial();
                            self.compare(&mut trial, covering, update.to(update_property));
                            let covered = trial.is_compatible();
                            context.keep(trial);
                            context.add(if covered {
                                PropertyAddedIsCoveredByPartiallyOpenContentModel
                            } else {
                                PropertyAddedNotCoveredByPartiallyOpenContentModel
                            });
                        }
                        context.add(if !b.required.contains(name) {
                            OptionalPropertyAddedToUnopenContentModel
                        } else if self.has_default(update.to(update_property)) {
                            RequiredPropertyWithDefaultAddedToUnopenContentModel
                        } else {
                            RequiredPropertyAddedToUnopenContentModel
                        });
                    }
                }
                (Some(original_property), Some(update_property)) => {
                    self.compare(
                        context,
                        original.to(original_property),
                        update.to(update_property),
                    );
                }
                (None, None) => {}
            }
            context.leave();
        }
        context.leave();

        context.enter("dependencies");
        let dependency_names = union_of_names(&a.property_dependencies, &b.property_dependencies);
        for name in dependency_names {
            let was = a
                .property_dependencies
                .iter()
                .find(|(n, _)| *n == name)
                .map(|d| &d.1);
            let is = b
                .property_dependencies
                .iter()
                .find(|(n, _)| *n == name)
                .map(|d| &d.1);
            let kind = match (was, is) {
                (_, None) => Some(DependencyArrayRemoved),
                (None, Some(_)) => Some(DependencyArrayAdded),
                (Some(was), Some(is)) => {
                    let contains_all =
                        |all: &[String], some: &[String]| some.iter().all(|n| all.contains(n));
                    if contains_all(was, is) && contains_all(is, was) {
                        None
                    } else if contains_all(is, was) {
                        Some(DependencyArrayExtended)
                    } else if contains_all(was, is) {
                        Some(DependencyArrayNarrowed)
                    } else {
                        Some(DependencyArrayChanged)
                    }
                }
            };
            if let Some(kind) = kind {
                context.add_at(&name, kind);
            }
        }
        let dependency_names = union_of_names(&a.schema_dependencies, &b.schema_dependencies);
        for name in dependency_names {
            let was = a
                .schema_dependencies
                .iter()
                .find(|(n, _)| *n == name)
                .map(|d| d.1);
            let is = b
                .schema_dependencies
                .iter()
                .find(|(n, _)| *n == name)
                .map(|d| d.1);
            context.enter(name.as_str());
            match (was, is) {
                (_, None) => context.add(DependencySchemaRemoved),
                (None, Some(_)) => context.add(DependencySchemaAdded),
                (Some(was), Some(is)) => self.compare(context, original.to(was), update.to(is)),
            }
            context.leave();
        }
        context.leave();

        context.enter("additionalProperties");
        if a.permits_additional != b.permits_additional {
            context.add(if b.permits_additional {
                AdditionalPropertiesAdded
            } else {
                AdditionalPropertiesRemoved
            });
        } else {
            match (a.additional_schema, b.additional_schema) {
                (None, Some(_)) => context.add(AdditionalPropertiesNarrowed),
                (Some(_), None) => context.add(AdditionalPropertiesExtended),
                (Some(was), Some(is)) => self.compare(context, original.to(was), update.to(is)),
                (None, None) => {}
            }
        }
        context.leave();

        let unevaluated_types = [
            UnevaluatedPropertiesAdded,
            UnevaluatedPropertiesRemoved,
            UnevaluatedPropertiesExtended,
            UnevaluatedPropertiesNarrowed,
        ];
        self.compare_unevaluated(
            context,
            "unevaluatedProperties",
            (original, a.unevaluated),
            (update, b.unevaluated),
            unevaluated_types,
        );

        compare_limit(
            context,
            "maxProperties",
            a.max_properties,
            b.max_properties,
            [
                MaxPropertiesAdded,
                MaxPropertiesRemoved,
                MaxPropertiesIncreased,
                MaxPropertiesDecreased,
            ],
        );
        compare_limit(
            context,
            "minProperties",
            a.min_properties,
            b.min_properties,
            [
                MinPropertiesAdded,
                MinPropertiesRemoved,
                MinPropertiesIncreased,
                MinPropertiesDecreased,
            ],
        );
    }

    /// everit's `hasDefaultValue()` of a property's schema as written (a `$ref` may carry one).
    fn has_default(&self, schema: SchemaRef) -> bool {
        self.node(schema).annotations.default.is_some()
    }

    /// Fully open: any extra property is allowed and left unconstrained.
    fn is_open_object(&self, side: SchemaRef, object: &ObjectKind) -> bool {
        object.permits_additional
            && object.additional_schema.is_none()
            && object.pattern_properties.is_empty()
            && object
                .unevaluated
                .is_none_or(|node| self.kind(side.to(node)).is_empty_schema())
    }

    /// The schema a partially open object gives an extra property `name`: the first
    /// matching pattern property's, else `additionalProperties`', else
    /// `unevaluatedProperties`' (when that is a real constraint).
    fn partially_open_object(
        &self,
        side: SchemaRef,
        object: &ObjectKind,
        name: &str,
    ) -> Option<SchemaRef> {
        let name_value = Value::String(name.to_owned());
        for pattern in &object.pattern_properties {
            if pattern
                .matcher
                .as_ref()
                .is_some_and(|matcher| matcher.is_valid(&name_value))
            {
                return Some(side.to(pattern.schema));
            }
        }
        if let Some(schema) = object.additional_schema {
            return Some(side.to(schema));
        }
        let additional_absent = object.permits_additional && object.additional_schema.is_none();
        match object.unevaluated {
            Some(node) if additional_absent && self.is_real_constraint(side.to(node)) => {
                Some(side.to(node))
            }
            _ => None,
        }
    }

    /// Neither `false` nor the empty schema.
    fn is_real_constraint(&self, schema: SchemaRef) -> bool {
        let kind = self.kind(schema);
        !matches!(kind, Kind::False) && !kind.is_empty_schema()
    }

    /// The `unevaluatedProperties`/`unevaluatedItems` comparison of Confluent 8.3.
    fn compare_unevaluated(
        &mut self,
        context: &mut Context,
        keyword: &str,
        (original, was): (SchemaRef, Option<NodeId>),
        (update, is): (SchemaRef, Option<NodeId>),
        [added, removed, extended, narrowed]: LimitTypes,
    ) {
        let (was, is) = match (was, is) {
            (None, None) => return,
            (was, is) => (was.map(|n| original.to(n)), is.map(|n| update.to(n))),
        };
        let is_false = |schema: Option<SchemaRef>| {
            schema.is_some_and(|schema| matches!(self.kind(schema), Kind::False))
        };
        let is_empty = |schema: Option<SchemaRef>| {
            schema.is_some_and(|schema| self.kind(schema).is_empty_schema())
        };
        let (was_false, is_false) = (is_false(was), is_false(is));
        let (was_empty, is_empty) = (is_empty(was), is_empty(is));
        context.enter(keyword);
        match (was, is) {
            (None, Some(_)) => context.add(if is_false { removed } else { narrowed }),
            (Some(_), None) => context.add(if was_false { added } else { extended }),
            (Some(was), Some(is)) => {
                if was_false && !is_false {
                    context.add(added);
                } else if !was_false && is_false {
                    context.add(removed);
                } else if was_empty && !is_empty {
                    context.add(narrowed);
                } else if !was_empty && is_empty {
                    context.add(extended);
                } else {
                    self.compare(context, was, is);
                }
            }
            (None, None) => {}
        }
        context.leave();
    }

    /// `ArraySchemaDiff`.
    fn compare_arrays(
        &mut self,
        context: &mut Context,
        (original, a): (SchemaRef, &ArrayKind),
        (update, b): (SchemaRef, &ArrayKind),
    ) {
        use DifferenceType::*;
        context.enter("items");
        self.compare_optional(
            context,
            a.all_items.map(|node| original.to(node)),
            b.all_items.map(|node| update.to(node)),
        );
        context.leave();

        let common = a.tuple_items.len().min(b.tuple_items.len());
        for index in 0..common {
            context.enter(format!("items/{index}"));
            let (was, is) = (a.tuple_items[index], b.tuple_items[index]);
            self.compare(context, original.to(was), update.to(is));
            context.leave();
        }
        for (index, &was) in a.tuple_items.iter().enumerate().skip(common) {
            context.enter(format!("items/{index}"));
            if self.is_open_array(update, b) {
                context.add(ItemRemovedFromOpenContentModel);
            } else if let Some(covering) = self.partially_open_array(update, b) {
                let mut trial = context.trial();
                self.compare(&mut trial, original.to(was), covering);
                let covered = trial.is_compatible();
                context.keep(trial);
                context.add(if covered {
                    ItemRemovedIsCoveredByPartiallyOpenContentModel
                } else {
                    ItemRemovedNotCoveredByPartiallyOpenContentModel
                });
            } else if matches!(self.kind(original.to(was)), Kind::False) {
                context.add(ItemWithFalseRemovedFromClosedContentModel);
            } else {
                context.add(ItemRemovedFromClosedContentModel);
            }
            context.leave();
        }
        for (index, &is) in b.tuple_items.iter().enumerate().skip(common) {
            context.enter(format!("items/{index}"));
            if self.is_open_array(original, a) {
                if self.kind(update.to(is)).is_empty_schema() {
                    context.add(ItemWithEmptySchemaAddedToOpenContentModel);
                } else {
                    context.add(ItemAddedToOpenContentModel);
                }
            } else if let Some(covering) = self.partially_open_array(original, a) {
                let mut trial = context.trial();
                self.compare(&mut trial, covering, update.to(is));
                let covered = trial.is_compatible();
                context.keep(trial);
                context.add(if covered {
                    ItemAddedIsCoveredByPartiallyOpenContentModel
                } else {
                    ItemAddedNotCoveredByPartiallyOpenContentModel
                });
            } else {
                context.add(ItemAddedToClosedContentModel);
            }
            context.leave();
        }

        context.enter("additionalItems");
        if a.permits_additional != b.permits_additional {
            context.add(if a.permits_additional {
                AdditionalItemsRemoved
            } else {
                AdditionalItemsAdded
            });
        } else {
            match (a.additional_schema, b.additional_schema) {
                (None, Some(_)) => context.add(AdditionalItemsNarrowed),
                (Some(_), None) => context.add(AdditionalItemsExtended),
                (Some(was), Some(is)) => self.compare(context, original.to(was), update.to(is)),
                (None, None) => {}
            }
        }
        context.leave();

        self.compare_unevaluated(
            context,
            "unevaluatedItems",
            (original, a.unevaluated),
            (update, b.unevaluated),
            [
                UnevaluatedItemsAdded,
                UnevaluatedItemsRemoved,
                UnevaluatedItemsExtended,
                UnevaluatedItemsNarrowed,
            ],
        );

        compare_limit(
            context,
            "maxItems",
            a.max_items,
            b.max_items,
            [
                MaxItemsAdded,
                MaxItemsRemoved,
                MaxItemsIncreased,
                MaxItemsDecreased,
            ],
        );
        compare_limit(
            context,
            "minItems",
            a.min_items,
            b.min_items,
            [
                MinItemsAdded,
                MinItemsRemoved,
                MinItemsIncreased,
                MinItemsDecreased,
            ],
        );
        if a.unique_items != b.unique_items {
            context.add_at(
                "uniqueItems",
                if a.unique_items {
                    UniqueItemsRemoved
                } else {
                    UniqueItemsAdded
                },
            );
        }
        compare_limit(
            context,
            "maxContains",
            a.max_contains,
            b.max_contains,
            [
                MaxContainsAdded,
                MaxContainsRemoved,
                MaxContainsIncreased,
                MaxContainsDecreased,
            ],
        );
        compare_limit(
            context,
            "minContains",
            a.min_contains,
            b.min_contains,
            [
                MinContainsAdded,
                MinContainsRemoved,
                MinContainsIncreased,
                MinContainsDecreased,
            ],
        );
    }

    fn is_open_array(&self, side: SchemaRef, array: &ArrayKind) -> bool {
        array.permits_additional
            && array.additional_schema.is_none()
            && array
                .unevaluated
                .is_none_or(|node| self.kind(side.to(node)).is_empty_schema())
    }

    fn partially_open_array(&self, side: SchemaRef, array: &ArrayKind) -> Option<SchemaRef> {
        if let Some(schema) = array.additional_schema {
            return Some(side.to(schema));
        }
        let additional_absent = array.permits_additional && array.additional_schema.is_none();
        match array.unevaluated {
            Some(node) if additional_absent && self.is_real_constraint(side.to(node)) => {
                Some(side.to(node))
            }
            _ => None,
        }
    }
}

/// The subschemas of a combined schema without repeats (Confluent puts them in a set).
fn distinct(model: &Model, subschemas: &[NodeId]) -> Vec<NodeId> {
    let mut distinct: Vec<NodeId> = Vec::with_capacity(subschemas.len());
    for &subschema in subschemas {
        if !distinct
            .iter()
            .any(|&kept| model.same_subschema(kept, subschema))
        {
            distinct.push(subschema);
        }
    }
    distinct
}

fn union_of_names<T>(a: &[(String, T)], b: &[(String, T)]) -> Vec<String> {
    let mut names: Vec<String> = a.iter().map(|(name, _)| name.clone()).collect();
    for (name, _) in b {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

/// A limit keyword (`maxLength`, `minimum`, ...) from the old value to the new one.
fn compare_limit(
    context: &mut Context,
    keyword: &str,
    original: Option<f64>,
    update: Option<f64>,
    [added, removed, increased, decreased]: LimitTypes,
) {
    match (original, update) {
        (None, Some(_)) => context.add_at(keyword, added),
        (Some(_), None) => context.add_at(keyword, removed),
        (Some(was), Some(is)) if was < is => context.add_at(keyword, increased),
        (Some(was), Some(is)) if was > is => context.add_at(keyword, decreased),
        _ => {}
    }
}

/// `StringSchemaDiff`.
fn compare_strings(context: &mut Context, a: &StringKind, b: &StringKind) {
    use DifferenceType::*;
    compare_limit(
        context,
        "maxLength",
        a.max_length,
        b.max_length,
        [
            MaxLengthAdded,
            MaxLengthRemoved,
            MaxLengthIncreased,
            MaxLengthDecreased,
        ],
    );
    compare_limit(
        context,
        "minLength",
        a.min_length,
        b.min_length,
        [
            MinLengthAdded,
            MinLengthRemoved,
            MinLengthIncreased,
            MinLengthDecreased,
        ],
    );
    match (&a.pattern, &b.pattern) {
        (None, Some(_)) => context.add_at("pattern", PatternAdded),
        (Some(_), None) => context.add_at("pattern", PatternRemoved),
        (Some(was), Some(is)) if was != is => context.add_at("pattern", PatternChanged),
        _ => {}
    }
}

/// `NumberSchemaDiff`.
fn compare_numbers(context: &mut Context, a: &NumberKind, b: &NumberKind) {
    use DifferenceType::*;
    compare_limit(
        context,
        "maximum",
        a.maximum,
        b.maximum,
        [
            MaximumAdded,
            MaximumRemoved,
            MaximumIncreased,
            MaximumDecreased,
        ],
    );
    compare_limit(
        context,
        "minimum",
        a.minimum,
        b.minimum,
        [
            MinimumAdded,
            MinimumRemoved,
            MinimumIncreased,
            MinimumDecreased,
        ],
    );
    compare_limit(
        context,
        "exclusiveMaximum",
        a.exclusive_maximum,
        b.exclusive_maximum,
        [
            ExclusiveMaximumAdded,
            ExclusiveMaximumRemoved,
            ExclusiveMaximumIncreased,
            ExclusiveMaximumDecreased,
        ],
    );
    compare_limit(
        context,
        "exclusiveMinimum",
        a.exclusive_minimum,
        b.exclusive_minimum,
        [
            ExclusiveMinimumAdded,
            ExclusiveMinimumRemoved,
            ExclusiveMinimumIncreased,
            ExclusiveMinimumDecreased,
        ],
    );
    match (a.multiple_of, b.multiple_of) {
        (None, Some(_)) => context.add_at("multipleOf", MultipleOfAdded),
        (Some(_), None) => context.add_at("multipleOf", MultipleOfRemoved),
        (Some(was), Some(is)) if was != is => {
            let kind = if is_multiple(is, was) {
                // Every value the new schema accepts, the old did: fewer values.
                MultipleOfExpanded
            } else if is_multiple(was, is) {
                MultipleOfReduced
            } else {
                MultipleOfChanged
            };
            context.add_at("multipleOf", kind);
        }
        _ => {}
    }
    if a.requires_integer != b.requires_integer {
        context.add(if a.requires_integer {
            TypeExtended
        } else {
            TypeNarrowed
        });
    }
}

/// Whether `value` is a whole multiple of `divisor`, exactly for integers and within
/// rounding for fractions (`0.3` is a multiple of `0.1`).
fn is_multiple(value: f64, divisor: f64) -> bool {
    if divisor == 0.0 || !value.is_finite() || !divisor.is_finite() {
        return false;
    }
    let quotient = value / divisor;
    if !quotient.is_finite() {
        return false;
    }
    (quotient - quotient.round()).abs() <= 1e-9 * quotient.abs().max(1.0)
}

/// `EnumSchemaDiff`: the lists as Confluent compares them (equal as lists, else as sets).
fn compare_enums(context: &mut Context, a: &[Value], b: &[Value]) {
    use DifferenceType::*;
    if a == b {
        return;
    }
    let contains_all = |all: &[Value], some: &[Value]| some.iter().all(|v| all.contains(v));
    let kind = if contains_all(b, a) {
        EnumArrayExtended
    } else if contains_all(a, b) {
        EnumArrayNarrowed
    } else {
        EnumArrayChanged
    };
    context.add_at("enum", kind);
}

/// A maximum matching of a bipartite graph (`left` and `right` vertices, `edges` between
/// them), as the indexes of the chosen edges, ordered by left vertex. Augmenting paths are
/// found breadth first, so the search needs no recursion.
fn maximum_matching(left: usize, right: usize, edges: &[(usize, usize)]) -> Vec<usize> {
    let mut adjacency: Vec<Vec<(usize, usize)>> = vec![Vec::new(); left];
    for (edge, &(from, to)) in edges.iter().enumerate() {
        adjacency[from].push((to, edge));
    }
    // For each right vertex, the left vertex and edge it is matched by.
    let mut matched_right: Vec<Option<(usize, usize)>> = vec![None; right];
    for start in 0..left {
        // Breadth-first search over alternating paths from `start`.
        let mut previous: Vec<Option<(usize, usize)>> = vec![None; right];
        let mut visited = vec![false; right];
        let mut queue = std::collections::VecDeque::from([start]);
        let mut free_end = None;
        'search: while let Some(vertex) = queue.pop_front() {
            for &(to, edge) in &adjacency[vertex] {
                if visited[to] {
                    continue;
                }
                visited[to] = true;
                previous[to] = Some((vertex, edge));
                match matched_right[to] {
                    None => {
                        free_end = Some(to);
                        break 'search;
                    }
                    Some((next, _)) => queue.push_back(next),
                }
            }
        }
        // Flip the path: each right vertex on it takes the edge that reached it.
        let mut cursor = free_end;
        while let Some(to) = cursor {
            let Some((from, edge)) = previous[to] else {
                break;
            };
            let displaced = matched_right.iter().position(
                |matched| matches!(matched, Some((left_vertex, _)) if *left_vertex == from),
            );
            matched_right[to] = Some((from, edge));
            cursor = displaced.filter(|&other| other != to);
        }
    }
    let mut matching: Vec<(usize, usize)> = matched_right.into_iter().flatten().collect();
    matching.sort_unstable();
    matching.into_iter().map(|(_, edge)| edge).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(schema: &str) -> JsonSchema {
        JsonSchema::parse(schema, &[]).unwrap_or_else(|error| panic!("{schema}: {error}"))
    }

    fn reference(name: &str, schema: &str) -> ResolvedReference {
        ResolvedReference {
            name: name.to_owned(),
            subject: format!("{name}-value"),
            version: 1,
            schema: schema.to_owned(),
        }
    }

    #[test]
    fn canonical_is_compact_keeps_key_order_and_ignores_whitespace() {
        let cases = [
            (
                "{ \"type\" : \"object\",\n  \"properties\" : { \"b\" : { }, \"a\" : { } } }",
                r#"{"type":"object","properties":{"b":{},"a":{}}}"#,
            ),
            ("\n\ttrue  ", "true"),
            (
                r#"{"required": [ "b", "a" ], "title":"T"}"#,
                r#"{"required":["b","a"],"title":"T"}"#,
            ),
            // A repeated key keeps its first position and its last value, as in Jackson.
            (
                r#"{"title":"x","type":"string","title":"y"}"#,
                r#"{"title":"y","type":"string"}"#,
            ),
        ];
        for (text, canonical) in cases {
            assert_eq!(parse(text).canonical(), canonical, "{text}");
            assert_eq!(parse(canonical).canonical(), canonical, "{canonical}");
        }
    }

    #[test]
    fn canonical_prints_numbers_and_strings_as_jackson_does() {
        let numbers = [
            ("0", "0"),
            ("-0", "0"),
            ("-12", "-12"),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567890",
            ),
            ("1.0", "1.0"),
            ("1.50", "1.50"),
            ("0.10", "0.10"),
            ("-0.0", "0.0"),
            ("1e3", "1E+3"),
            ("1E3", "1E+3"),
            ("-1.5E+10", "-1.5E+10"),
            ("1.5e1", "15"),
            ("10e-1", "1.0"),
            ("2.5e-3", "0.0025"),
            ("123.456e-2", "1.23456"),
            ("0.000001", "0.000001"),
            ("0.0000001", "1E-7"),
            ("1e-7", "1E-7"),
            ("0e5", "0E+5"),
        ];
        for (literal, jackson) in numbers {
            assert_eq!(jackson_number(literal), jackson, "{literal}");
            let schema = parse(&format!(r#"{{"default":{literal}}}"#));
            assert_eq!(schema.canonical(), format!(r#"{{"default":{jackson}}}"#));
        }
        let schema = parse(r#"{"default":"a\/b\u001f\u00e9\n\"\\"}"#);
        assert_eq!(schema.canonical(), r#"{"default":"a/b\u001Fé\n\"\\"}"#);
    }

    #[test]
    fn normalized_sorts_object_keys_recursively_and_keeps_arrays() {
        let written = r#"{"type":"object","required":["b","a"],
            "properties":{"b":{"type":"string"},"a":{"enum":[2,1]}}}"#;
        let reordered = r#"{"properties":{"a":{"enum":[2,1]},"b":{"type":"string"}},
            "type":"object","required":["b","a"]}"#;
        let normalized = r#"{"properties":{"a":{"enum":[2,1]},"b":{"type":"string"}},"required":["b","a"],"type":"object"}"#;
        assert_eq!(parse(written).normalized(), normalized);
        assert_eq!(parse(reordered).normalized(), normalized);
        assert_ne!(parse(written).canonical(), parse(reordered).canonical());
        // Java orders strings by UTF-16 unit: a surrogate pair (U+1F600) sorts before U+FF61.
        let schema = parse("{\"\u{FF61}\":1,\"\u{1F600}\":2}");
        assert_eq!(schema.normalized(), "{\"\u{1F600}\":2,\"\u{FF61}\":1}");
    }

    #[test]
    fn record_name_is_the_title_and_there_is_no_other_format() {
        let cases = [
            (
                r#"{"title":"com.example.Order","type":"object"}"#,
                Some("com.example.Order"),
            ),
            (r#"{"type":"object"}"#, None),
            ("true", None),
        ];
        for (text, title) in cases {
            let schema = parse(text);
            assert_eq!(schema.record_name().as_deref(), title, "{text}");
            assert_eq!(schema.formatted("serialized"), None);
            assert_eq!(schema.schema_type(), SchemaType::Json);
        }
    }

    #[test]
    fn invalid_schemas_are_refused_with_a_reason() {
        let cases = [
            ("{\"type\": \"object\"", "Invalid JSON"),
            ("", "Invalid JSON"),
            ("5", "a JSON object or a boolean"),
            ("[{}]", "a JSON object or a boolean"),
            (r#""string""#, "a JSON object or a boolean"),
            (r#"{"type": 5}"#, "/type"),
            (r#"{"type": "text"}"#, "/type"),
            (r#"{"minLength": -1}"#, "/minLength"),
            (r#"{"required": "a"}"#, "/required"),
            (r#"{"properties": {"a": 1}}"#, "/properties/a"),
            (r#"{"pattern": "(("}"#, "/pattern"),
            (r#"{"$ref": "address.json"}"#, "address.json"),
            (
                r##"{"properties": {"a": {"$ref": "#/definitions/b"}}}"##,
                "/definitions/b",
            ),
            (r#"{"type": "object"} {}"#, "Invalid JSON"),
        ];
        for (text, reason) in cases {
            match JsonSchema::parse(text, &[]) {
                Ok(schema) => panic!("{text} was accepted: {schema:?}"),
                Err(InvalidSchema(message)) => {
                    assert!(message.contains(reason), "{text}: {message}");
                }
            }
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let nested = |levels: usize, wrapper: &str| {
            let mut schema = String::from("{}");
            for _ in 1..levels {
                schema = wrapper.replace("INNER", &schema);
            }
            schema
        };
        // The second wrapper costs two comparison levels per JSON level (a synthetic `allOf`
        // of the `not` and the type list): the deepest schema still compares within bounds.
        for wrapper in [
            r#"{"not":INNER}"#,
            r#"{"type":["object","null"],"not":INNER}"#,
        ] {
            let deepest = parse(&nested(MAX_SCHEMA_DEPTH, wrapper));
            assert!(
                deepest.backward_incompatibilities(&deepest).is_empty(),
                "{wrapper}"
            );
            for levels in [MAX_SCHEMA_DEPTH + 1, 127, 129, 10_000] {
                let error = JsonSchema::parse(&nested(levels, wrapper), &[]).expect_err("too deep");
                assert!(
                    error.0.contains("deeper") || error.0.contains("recursion"),
                    "{error}"
                );
            }
        }
    }

    #[test]
    fn every_draft_is_read_and_draft_07_is_the_default() {
        let cases = [
            "true",
            "false",
            "{}",
            r#"{"$schema":"http://json-schema.org/draft-04/schema#","type":"integer","minimum":1,"exclusiveMinimum":true}"#,
            r#"{"$schema":"http://json-schema.org/draft-06/schema#","type":"integer","exclusiveMinimum":1}"#,
            r#"{"$schema":"http://json-schema.org/draft-07/schema#","if":{"type":"string"},"then":{"minLength":1}}"#,
            r##"{"$schema":"https://json-schema.org/draft/2019-09/schema","$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a","minLength":1}"##,
            r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","prefixItems":[{"type":"string"}],"items":false}"#,
            // An unknown meta-schema reads as draft-07, as in Confluent.
            r#"{"$schema":"http://example.com/my-meta-schema","type":"string"}"#,
            // Confluent finds `#/$defs/x` in `definitions`.
            r##"{"definitions":{"x":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/x"}}}"##,
        ];
        for text in cases {
            let schema = parse(text);
            assert!(
                schema.backward_incompatibilities(&schema).is_empty(),
                "{text}"
            );
        }
        // Draft-07 rules apply without `$schema`: `exclusiveMinimum` is a number there.
        assert!(JsonSchema::parse(r#"{"exclusiveMinimum":true}"#, &[]).is_err());
    }

    #[test]
    fn references_resolve_by_name_relative_to_the_id() {
        let address = reference(
            "address.json",
            r#"{"type":"object","properties":{"street":{"type":"string"}},
                "definitions":{"zip":{"type":"string","pattern":"^[0-9]{5}$"}}}"#,
        );
        let cases = [
            r#"{"type":"object","properties":{"address":{"$ref":"address.json"}}}"#,
            r##"{"properties":{"zip":{"$ref":"address.json#/definitions/zip"}}}"##,
            r#"{"$id":"https://example.com/schemas/customer.json","properties":{"address":{"$ref":"address.json"}}}"#,
            r#"{"$id":"https://example.com/schemas/customer.json","properties":{"address":{"$ref":"https://example.com/schemas/address.json"}}}"#,
        ];
        for text in cases {
            let schema = JsonSchema::parse(text, std::slice::from_ref(&address))
                .unwrap_or_else(|error| panic!("{text}: {error}"));
            assert!(
                schema.backward_incompatibilities(&schema).is_empty(),
                "{text}"
            );
        }
        let without = JsonSchema::parse(cases[0], &[]).expect_err("unresolved");
        assert!(without.0.contains("address.json"), "{without}");
    }

    #[test]
    fn validate_accepts_conforming_instances_and_says_why_others_fail() {
        let order = r##"{"type":"object","additionalProperties":false,"required":["id"],
            "properties":{"id":{"type":"integer","minimum":1},"email":{"type":"string","format":"email"},
            "lines":{"type":"array","items":{"$ref":"#/definitions/line"}}},
            "definitions":{"line":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string"}}}}}"##;
        let cases = [
            (order, r#"{"id":1}"#, None),
            (
                order,
                r#"{"id":1,"email":"a@example.com","lines":[{"sku":"x"}]}"#,
                None,
            ),
            (order, r#"{}"#, Some("\"id\" is a required property")),
            (
                order,
                r#"{"id":0}"#,
                Some("/id: 0 is less than the minimum of 1"),
            ),
            (order, r#"{"id":1,"email":"nope"}"#, Some("/email")),
            (order, r#"{"id":1,"lines":[{}]}"#, Some("/lines/0")),
            (order, r#"{"id":1,"extra":true}"#, Some("extra")),
            ("true", "[1,2]", None),
            ("false", "null", Some("False schema")),
        ];
        for (schema, instance, failure) in cases {
            let schema = parse(schema);
            let instance: Value = serde_json::from_str(instance).expect("instance");
            match (schema.validate(&instance), failure) {
                (Ok(()), None) => {}
                (Err(reason), Some(expected)) => {
                    assert!(reason.contains(expected), "{instance}: {reason}");
                }
                (result, _) => panic!("{instance}: {result:?}"),
            }
        }
        let many = parse(r#"{"items":{"type":"string"}}"#);
        let reason = many
            .validate(&Value::Array(vec![Value::from(1); 50]))
            .expect_err("fails");
        assert_eq!(
            reason.matches("is not of type").count(),
            MAX_VALIDATION_ERRORS_REPORTED
        );
    }

    #[test]
    fn validate_follows_references() {
        let address = reference(
            "address.json",
            r#"{"type":"object","required":["street"],"properties":{"street":{"type":"string"}}}"#,
        );
        let customer = JsonSchema::parse(
            r#"{"type":"object","properties":{"address":{"$ref":"address.json"}}}"#,
            &[address],
        )
        .expect("valid");
        assert!(
            customer
                .validate(&serde_json::json!({"address": {"street": "Main"}}))
                .is_ok()
        );
        let reason = customer
            .validate(&serde_json::json!({"address": {"street": 5}}))
            .expect_err("street is a string");
        assert!(reason.contains("/address/street"), "{reason}");
    }

    #[test]
    fn compatible_differences_are_recorded_but_not_reported() {
        let cases = [
            (
                r#"{"type":"integer"}"#,
                r#"{"type":"number"}"#,
                "TYPE_EXTENDED #/",
            ),
            (r#"{"title":"a"}"#, r#"{"title":"b"}"#, "TITLE_CHANGED #/"),
            (
                r#"{"type":"string","maxLength":3}"#,
                r#"{"type":"string"}"#,
                "MAX_LENGTH_REMOVED #/maxLength",
            ),
            (
                r#"{"type":"string"}"#,
                r#"{"oneOf":[{"type":"string"},{"type":"null"}]}"#,
                "SUM_TYPE_EXTENDED #/",
            ),
        ];
        for (old, new, recorded) in cases {
            let (old, new) = (parse(old), parse(new));
            let (differences, limit_exceeded) = new.differences_from(&old);
            let names: Vec<String> = differences
                .iter()
                .map(|difference| format!("{} #/{}", difference.kind.name(), difference.path))
                .collect();
            assert_eq!(names, [recorded]);
            assert!(!limit_exceeded);
            assert!(new.backward_incompatibilities(&old).is_empty());
        }
    }

    #[test]
    fn recursive_schemas_are_compared_without_looping() {
        let tree = |leaf_type: &str| {
            format!(
                r##"{{"definitions":{{"node":{{"type":"object","properties":{{
                    "value":{{"type":"{leaf_type}"}},
                    "children":{{"type":"array","items":{{"$ref":"#/definitions/node"}}}}}}}}}},
                    "$ref":"#/definitions/node"}}"##
            )
        };
        let (integers, numbers) = (parse(&tree("integer")), parse(&tree("number")));
        assert!(integers.backward_incompatibilities(&integers).is_empty());
        assert!(numbers.backward_incompatibilities(&integers).is_empty());
        assert_eq!(
            integers.backward_incompatibilities(&numbers),
            [
                "{errorType:\"TYPE_NARROWED\", description:\"A type at path '#/properties/value' \
                 is different between the new schema and the old schema'}"
            ]
        );
        let itself = parse(r##"{"$ref":"#"}"##);
        assert!(itself.backward_incompatibilities(&itself).is_empty());
    }

    #[test]
    fn a_comparison_stops_at_its_bounds_and_reports_itself_incompatible() {
        // Every branch of a wide `oneOf` is compared with every other one.
        let branches: Vec<String> = (0..400)
            .map(|index| format!(r#"{{"type":"string","maxLength":{index}}}"#))
            .collect();
        let wide = parse(&format!(r#"{{"oneOf":[{}]}}"#, branches.join(",")));
        let messages = wide.backward_incompatibilities(&wide);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].contains("COMPARISON_LIMIT_EXCEEDED"),
            "{messages:?}"
        );

        // A chain of `$ref`s nests comparisons deeper than the schema is nested.
        let definitions: Vec<String> = (0..150)
            .map(|index| {
                format!(
                    r##""d{index}":{{"properties":{{"next":{{"$ref":"#/definitions/d{}"}}}}}}"##,
                    index + 1
                )
            })
            .collect();
        let chain = parse(&format!(
            r##"{{"definitions":{{{},"d150":{{}}}},"$ref":"#/definitions/d0"}}"##,
            definitions.join(",")
        ));
        let messages = chain.backward_incompatibilities(&chain);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].contains("COMPARISON_LIMIT_EXCEEDED"),
            "{messages:?}"
        );
    }

    #[test]
    fn maximum_matching_is_maximum() {
        // (left vertices, right vertices, edges, matching size)
        type Graph = (usize, usize, &'static [(usize, usize)], usize);
        let cases: [Graph; 5] = [
            (0, 0, &[], 0),
            (2, 2, &[(0, 0), (1, 1)], 2),
            // Greedy would match 0-0 and strand 1; an augmenting path fixes it.
            (2, 2, &[(0, 0), (0, 1), (1, 0)], 2),
            (3, 3, &[(0, 0), (1, 0), (2, 0)], 1),
            (3, 3, &[(0, 0), (0, 1), (1, 0), (1, 2), (2, 1)], 3),
        ];
        for (left, right, edges, size) in cases {
            let matching = maximum_matching(left, right, edges);
            assert_eq!(matching.len(), size, "{edges:?}");
            let mut lefts: Vec<usize> = matching.iter().map(|&edge| edges[edge].0).collect();
            let mut rights: Vec<usize> = matching.iter().map(|&edge| edges[edge].1).collect();
            lefts.dedup();
            rights.sort_unstable();
            rights.dedup();
            assert_eq!((lefts.len(), rights.len()), (size, size), "{edges:?}");
        }
    }

    fn schema_like_json() -> impl Strategy<Value = Value> {
        let keywords = prop::sample::select(vec![
            "type",
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "dependencies",
            "items",
            "additionalItems",
            "prefixItems",
            "enum",
            "const",
            "allOf",
            "anyOf",
            "oneOf",
            "not",
            "$ref",
            "$id",
            "$schema",
            "definitions",
            "minimum",
            "exclusiveMaximum",
            "multipleOf",
            "maxLength",
            "pattern",
            "minItems",
            "uniqueItems",
            "title",
            "default",
            "if",
            "a",
            "b",
        ]);
        let texts = prop::sample::select(vec![
            "string",
            "integer",
            "number",
            "object",
            "array",
            "boolean",
            "null",
            "#",
            "#/definitions/a",
            "#/properties/a",
            "address.json",
            "^a",
            "a",
            "https://json-schema.org/draft/2020-12/schema",
            "http://json-schema.org/draft-04/schema#",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i64..20).prop_map(Value::from),
            (-100.0f64..100.0).prop_map(Value::from),
            texts.prop_map(Value::from),
        ];
        leaf.prop_recursive(6, 48, 5, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((keywords.clone(), inner), 0..5).prop_map(|members| {
                    Value::Object(
                        members
                            .into_iter()
                            .map(|(k, v)| (k.to_owned(), v))
                            .collect(),
                    )
                }),
            ]
        })
    }

    /// Schemas built from the keywords the rules look at, mostly valid, so comparisons of
    /// two of them go deep.
    fn structured_schema() -> impl Strategy<Value = Value> {
        use serde_json::json;
        let names = || prop::sample::select(vec!["a", "b", "c"]);
        let leaf = prop_oneof![
            Just(json!({})),
            any::<bool>().prop_map(Value::Bool),
            prop::sample::select(vec![
                "string", "integer", "number", "boolean", "null", "object", "array"
            ])
            .prop_map(|name| json!({ "type": name })),
            (0u64..6).prop_map(|length| json!({"type": "string", "maxLength": length})),
            (-3i64..3).prop_map(|minimum| json!({"type": "integer", "minimum": minimum})),
            prop::collection::vec(names(), 1..4).prop_map(|values| json!({ "enum": values })),
            prop::sample::select(vec![
                "#",
                "#/definitions/a",
                "#/properties/a",
                "address.json"
            ])
            .prop_map(|reference| json!({ "$ref": reference })),
        ];
        leaf.prop_recursive(5, 48, 4, move |inner| {
            let additional = prop_oneof![
                Just(None),
                any::<bool>().prop_map(|open| Some(Value::Bool(open))),
                inner.clone().prop_map(Some),
            ];
            prop_oneof![
                (
                    prop::collection::vec((names(), inner.clone()), 0..4),
                    prop::collection::vec(names(), 0..3),
                    additional,
                )
                    .prop_map(|(properties, required, additional)| {
                        let properties: Map<String, Value> = properties
                            .into_iter()
                            .map(|(name, schema)| (name.to_owned(), schema))
                            .collect();
                        let mut object = json!({
                            "type": "object", "properties": properties, "required": required
                        });
                        if let Some(additional) = additional {
                            object["additionalProperties"] = additional;
                        }
                        object
                    }),
                (inner.clone(), 0u64..3, any::<bool>()).prop_map(|(items, minimum, unique)| {
                    json!({"type": "array", "items": items, "minItems": minimum, "uniqueItems": unique})
                }),
                (prop::collection::vec(inner.clone(), 1..3), any::<bool>()).prop_map(
                    |(items, more)| json!({"type": "array", "items": items, "additionalItems": more})
                ),
                (
                    prop::sample::select(vec!["allOf", "anyOf", "oneOf"]),
                    prop::collection::vec(inner.clone(), 1..4)
                )
                    .prop_map(|(keyword, subschemas)| json!({ keyword: subschemas })),
                inner.clone().prop_map(|negated| json!({ "not": negated })),
                (inner.clone(), inner.clone()).prop_map(|(definition, property)| {
                    json!({"definitions": {"a": definition}, "properties": {"a": property}})
                }),
                inner.clone().prop_map(|schema| {
                    json!({"patternProperties": {"^a": schema}, "additionalProperties": false})
                }),
                (inner.clone(), prop::collection::vec(names(), 0..3)).prop_map(
                    |(schema, names)| json!({"dependencies": {"a": names, "b": schema}})
                ),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Nothing a client sends makes the parser or the comparison panic; a schema reads
        /// itself, and its canonical and normalized strings are fixed points.
        #[test]
        fn random_schemas_never_panic(
            first in prop_oneof![3 => structured_schema(), 1 => schema_like_json()],
            second in prop_oneof![3 => structured_schema(), 1 => schema_like_json()],
        ) {
            let address = reference("address.json", r#"{"type":"string"}"#);
            let references = [address];
            let parsed_first = JsonSchema::parse(&first.to_string(), &references);
            let parsed_second = JsonSchema::parse(&second.to_string(), &references);
            if let Ok(schema) = &parsed_first {
                prop_assert!(schema.backward_incompatibilities(schema).is_empty());
                let again = JsonSchema::parse(&schema.canonical(), &references).expect("canonical parses");
                prop_assert_eq!(again.canonical(), schema.canonical());
                prop_assert_eq!(again.normalized(), schema.normalized());
                // Key order means nothing to the rules.
                let sorted = JsonSchema::parse(&schema.normalized(), &references).expect("normalized parses");
                prop_assert!(sorted.backward_incompatibilities(schema).is_empty());
                let _ = schema.validate(&second);
                if let Ok(other) = &parsed_second {
                    let _ = schema.backward_incompatibilities(other);
                    let _ = other.backward_incompatibilities(schema);
                }
            }
        }

        /// However deep a document nests, it is parsed or refused, never overflowing.
        #[test]
        fn deep_nesting_is_refused_not_overflowed(levels in 1usize..400, shape in 0usize..3) {
            let (open, close) = match shape {
                0 => (r#"{"not":"#, "}"),
                1 => (r#"{"properties":{"a":"#, "}}"),
                _ => (r#"{"enum":["#, "]}"),
            };
            let mut text = String::new();
            for _ in 0..levels {
                text.push_str(open);
            }
            text.push_str(if shape == 2 { "[]" } else { "{}" });
            for _ in 0..levels {
                text.push_str(close);
            }
            if let Ok(schema) = JsonSchema::parse(&text, &[]) {
                let _ = schema.backward_incompatibilities(&schema);
            }
        }
    }
}
