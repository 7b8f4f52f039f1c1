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

use std::any::Any;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write as _};
use std::rc::Rc;
use std::sync::OnceLock;

use serde_json::{Map, Number, Value};

use crate::schema::{InvalidSchema, ParsedSchema, ResolvedReference, SchemaType};

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

/// Avro's largest byte length (`SystemLimitException.MAX_ARRAY_VM_LIMIT`), which bounds a
/// fixed type's size.
const FIXED_SIZE_MAX: i64 = i32::MAX as i64 - 8;

/// Attributes of a schema object that are not custom properties.
const SCHEMA_RESERVED: [&str; 10] = [
    "doc",
    "fields",
    "items",
    "name",
    "namespace",
    "size",
    "symbols",
    "values",
    "type",
    "aliases",
];

/// An enum's reserved attributes: the schema ones plus its default symbol.
const ENUM_RESERVED: [&str; 11] = [
    "doc",
    "fields",
    "items",
    "name",
    "namespace",
    "size",
    "symbols",
    "values",
    "type",
    "aliases",
    "default",
];

/// A record field's reserved attributes.
const FIELD_RESERVED: [&str; 6] = ["default", "doc", "name", "order", "type", "aliases"];

/// Properties that make Avro ignore a logical type (`LogicalType.INCOMPATIBLE_PROPS`).
const LOGICAL_TYPE_INCOMPATIBLE: [&str; 4] = [
    "avro.java.string",
    "java-class",
    "java-key-class",
    "java-element",
];

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

impl AvroSchema {
    /// Parses `schema` after `references` (dependencies before dependents), each of which
    /// defines named types `schema` may use by full name.
    pub fn parse(schema: &str, references: &[ResolvedReference]) -> Result<Self, InvalidSchema> {
        let mut parser = GraphParser::default();
        let mut reference_names = Vec::new();
        for reference in references {
            let root = parser.parse_document(&reference.schema).map_err(|error| {
                InvalidSchema(format!(
                    "Invalid schema reference {} (subject {}, version {}): {}",
                    reference.name, reference.subject, reference.version, error.0
                ))
            })?;
            if let Some(named) = parser.graph.named(root) {
                reference_names.push(named.name.full());
            }
        }
        let root = parser.parse_document(schema)?;
        let graph = parser.graph;
        let too_deep = |_| {
            InvalidSchema(format!(
                "Avro schema nests deeper than {SCHEMA_DEPTH_MAX} levels once its references are \
                 inlined"
            ))
        };
        let canonical = graph.to_json(root, &reference_names).map_err(too_deep)?;
        let resolved = graph.to_json(root, &[]).map_err(too_deep)?;
        Ok(AvroSchema {
            graph,
            root,
            references: references.to_vec(),
            reference_names,
            canonical,
            resolved,
            normalized: OnceLock::new(),
        })
    }

    /// Every reason this schema (the reader) cannot read data written with `writer`, worded
    /// as Confluent words them with `reader_role` and `writer_role` in its placeholders
    /// (Confluent says "new"/"old" for BACKWARD and "old"/"new" for FORWARD).
    pub fn incompatibilities_as_reader(
        &self,
        writer: &AvroSchema,
        reader_role: &str,
        writer_role: &str,
    ) -> Vec<String> {
        let mut check = CompatibilityCheck::new(&self.graph, &writer.graph);
        match check.check_detached(self.root, writer.root) {
            Ok(found) => found
                .iter()
                .map(|incompatibility| incompatibility.describe(reader_role, writer_role))
                .collect(),
            Err(aborted) => vec![format!(
                "Unexpected exception during compatibility check: {}",
                aborted.message()
            )],
        }
    }
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

// ---------------------------------------------------------------------------------------
// The schema graph.
// ---------------------------------------------------------------------------------------

/// Index of a node in its [`SchemaGraph`]. As in Avro's object graph, every occurrence of a
/// primitive, array, map or union is its own node, while every use of a named type points at
/// the one node that defines it; compatibility memoization relies on that identity.
type NodeId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Primitive {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
}

impl Primitive {
    fn from_name(name: &str) -> Option<Primitive> {
        Some(match name {
            "null" => Primitive::Null,
            "boolean" => Primitive::Boolean,
            "int" => Primitive::Int,
            "long" => Primitive::Long,
            "float" => Primitive::Float,
            "double" => Primitive::Double,
            "bytes" => Primitive::Bytes,
            "string" => Primitive::String,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Primitive::Null => "null",
            Primitive::Boolean => "boolean",
            Primitive::Int => "int",
            Primitive::Long => "long",
            Primitive::Float => "float",
            Primitive::Double => "double",
            Primitive::Bytes => "bytes",
            Primitive::String => "string",
        }
    }
}

/// Avro's `Schema.Type`, which compatibility messages print in upper case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AvroType {
    Primitive(Primitive),
    Record,
    Enum,
    Array,
    Map,
    Union,
    Fixed,
    Unresolved,
}

impl AvroType {
    fn upper_name(self) -> &'static str {
        match self {
            AvroType::Primitive(Primitive::Null) => "NULL",
            AvroType::Primitive(Primitive::Boolean) => "BOOLEAN",
            AvroType::Primitive(Primitive::Int) => "INT",
            AvroType::Primitive(Primitive::Long) => "LONG",
            AvroType::Primitive(Primitive::Float) => "FLOAT",
            AvroType::Primitive(Primitive::Double) => "DOUBLE",
            AvroType::Primitive(Primitive::Bytes) => "BYTES",
            AvroType::Primitive(Primitive::String) => "STRING",
            AvroType::Record => "RECORD",
            AvroType::Enum => "ENUM",
            AvroType::Array => "ARRAY",
            AvroType::Map => "MAP",
            AvroType::Union => "UNION",
            AvroType::Fixed => "FIXED",
            AvroType::Unresolved => "UNRESOLVED",
        }
    }
}

/// The names of Avro's types: a named type whose short name is one of these is always
/// printed with its namespace, or it would read back as that type.
fn is_type_keyword(name: &str) -> bool {
    matches!(
        name,
        "record"
            | "enum"
            | "array"
            | "map"
            | "union"
            | "fixed"
            | "string"
            | "bytes"
            | "int"
            | "long"
            | "float"
            | "double"
            | "boolean"
            | "null"
    )
}

/// A full name split as Avro splits it: the part after the last dot is the name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Name {
    name: String,
    space: Option<String>,
}

impl Name {
    /// Avro's `new Name(name, space)`: a dotted name carries its own namespace; an empty
    /// namespace is none. The name part is validated here, the namespace when the type is
    /// defined (aliases keep theirs unchecked, as in Avro).
    fn parse(raw: &str, default_space: Option<&str>) -> Result<Name, InvalidSchema> {
        let (space, name) = match raw.rfind('.') {
            Some(dot) => (Some(&raw[..dot]), &raw[dot + 1..]),
            None => (default_space, raw),
        };
        validate_name(name).map_err(InvalidSchema)?;
        Ok(Name {
            name: name.to_owned(),
            space: space.filter(|space| !space.is_empty()).map(str::to_owned),
        })
    }

    fn full(&self) -> String {
        match &self.space {
            Some(space) => format!("{space}.{}", self.name),
            None => self.name.clone(),
        }
    }

    /// Avro's `Name.getQualified`: the short name inside its own namespace.
    fn qualified(&self, current_space: Option<&str>) -> String {
        match (self.space.as_deref(), current_space) {
            (Some(space), Some(current)) if space == current && !is_type_keyword(&self.name) => {
                self.name.clone()
            }
            _ => self.full(),
        }
    }

    /// An alias as Avro's `getAliases()` lists it: its full name, or `.name` for an alias
    /// explicitly in the null namespace of a type that has one.
    fn alias_full_name(&self, owner_space: Option<&str>) -> String {
        if self.space.is_none() && owner_space.is_some() {
            format!(".{}", self.name)
        } else {
            self.full()
        }
    }
}

/// Avro's strict name rule (what Confluent applies to a new schema): a letter or `_`, then
/// letters, digits or `_`, all ASCII.
fn validate_name(name: &str) -> Result<(), String> {
    let mut characters = name.chars();
    let Some(first) = characters.next() else {
        return Err("Empty name".to_owned());
    };
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Err(format!("Illegal initial character: {name}"));
    }
    if !characters.all(|character| character.is_ascii_alphanumeric() || character == '_') {
        return Err(format!("Illegal character in: {name}"));
    }
    Ok(())
}

/// What record, enum and fixed types share.
#[derive(Debug)]
struct Named {
    name: Name,
    doc: Option<String>,
    /// In declaration order, without repeats (Avro keeps them in a `LinkedHashSet`).
    aliases: Vec<Name>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldOrder {
    Ascending,
    Descending,
    Ignore,
}

#[derive(Debug)]
struct Field {
    name: String,
    doc: Option<String>,
    schema: NodeId,
    default: Option<Value>,
    /// A float or double default written as `"NaN"` or `"Infinity"`: Avro reads it as that
    /// number, and Jackson prints such a number quoted, so it is kept as that string.
    default_is_non_finite: bool,
    order: FieldOrder,
    aliases: Vec<String>,
    properties: Map<String, Value>,
}

#[derive(Debug)]
enum Kind {
    Primitive(Primitive),
    Record {
        named: Named,
        fields: Vec<Field>,
        is_error: bool,
    },
    Enum {
        named: Named,
        symbols: Vec<String>,
        default: Option<String>,
    },
    Fixed {
        named: Named,
        size: i64,
    },
    Array(NodeId),
    Map(NodeId),
    Union(Vec<NodeId>),
    /// A use of a named type not defined yet at that point of the document (its
    /// namespace-qualified name); replaced by the definition once the document is parsed.
    Unresolved(String),
}

#[derive(Debug)]
struct Node {
    kind: Kind,
    /// Custom properties (every non-reserved attribute, `logicalType` included), in the
    /// order of the input.
    properties: Map<String, Value>,
}

/// A logical type Avro recognizes and accepts on its underlying type; others are only
/// properties.
struct LogicalType {
    name: &'static str,
    /// Precision and scale of a decimal.
    decimal: Option<(i64, i64)>,
}

/// Printing or comparing went deeper than [`SCHEMA_DEPTH_MAX`].
#[derive(Debug)]
struct TooDeep;

#[derive(Debug, Default)]
struct SchemaGraph {
    nodes: Vec<Node>,
}

impl SchemaGraph {
    fn push(&mut self, kind: Kind, properties: Map<String, Value>) -> NodeId {
        self.nodes.push(Node { kind, properties });
        self.nodes.len() - 1
    }

    fn named(&self, id: NodeId) -> Option<&Named> {
        match &self.nodes[id].kind {
            Kind::Record { named, .. } | Kind::Enum { named, .. } | Kind::Fixed { named, .. } => {
                Some(named)
            }
            _ => None,
        }
    }

    fn avro_type(&self, id: NodeId) -> AvroType {
        match &self.nodes[id].kind {
            Kind::Primitive(primitive) => AvroType::Primitive(*primitive),
            Kind::Record { .. } => AvroType::Record,
            Kind::Enum { .. } => AvroType::Enum,
            Kind::Fixed { .. } => AvroType::Fixed,
            Kind::Array(_) => AvroType::Array,
            Kind::Map(_) => AvroType::Map,
            Kind::Union(_) => AvroType::Union,
            Kind::Unresolved(_) => AvroType::Unresolved,
        }
    }

    /// What makes two union branches the same for Avro (`getFullName()`).
    fn union_key(&self, id: NodeId) -> String {
        match &self.nodes[id].kind {
            Kind::Primitive(primitive) => primitive.name().to_owned(),
            Kind::Record { named, .. } | Kind::Enum { named, .. } | Kind::Fixed { named, .. } => {
                named.name.full()
            }
            Kind::Array(_) => "array".to_owned(),
            Kind::Map(_) => "map".to_owned(),
            Kind::Union(_) => "union".to_owned(),
            Kind::Unresolved(name) => name.clone(),
        }
    }

    // --- Avro's `Schema.toString` -------------------------------------------------------

    /// The schema at `id` as Avro's `toString` prints it, with `known_names` printed by name.
    fn to_json(&self, id: NodeId, known_names: &[String]) -> Result<String, TooDeep> {
        let mut known: HashSet<String> = known_names.iter().cloned().collect();
        let mut out = String::new();
        self.write_schema(id, &mut known, None, &mut out, 0)?;
        Ok(out)
    }

    /// The schema at `id` with every named type inlined, for messages.
    fn resolved_text(&self, id: NodeId) -> String {
        self.to_json(id, &[])
            .unwrap_or_else(|TooDeep| format!("<schema nested deeper than {SCHEMA_DEPTH_MAX}>"))
    }

    fn write_schema(
        &self,
        id: NodeId,
        known: &mut HashSet<String>,
        space: Option<&str>,
        out: &mut String,
        depth: usize,
    ) -> Result<(), TooDeep> {
        if depth > SCHEMA_DEPTH_MAX {
            return Err(TooDeep);
        }
        let node = &self.nodes[id];
        match &node.kind {
            Kind::Primitive(primitive) => {
                if node.properties.is_empty() {
                    write_json_string(primitive.name(), out);
                } else {
                    out.push_str("{\"type\":");
                    write_json_string(primitive.name(), out);
                    write_properties(&node.properties, out);
                    out.push('}');
                }
            }
            Kind::Record {
                named,
                fields,
                is_error,
            } => {
                if write_name_reference(named, known, space, out) {
                    return Ok(());
                }
                out.push_str(if *is_error {
                    "{\"type\":\"error\""
                } else {
                    "{\"type\":\"record\""
                });
                write_name(&named.name, space, out);
                write_doc(named.doc.as_deref(), out);
                out.push_str(",\"fields\":[");
                for (index, field) in fields.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    out.push_str("{\"name\":");
                    write_json_string(&field.name, out);
                    out.push_str(",\"type\":");
                    self.write_schema(
                        field.schema,
                        known,
                        named.name.space.as_deref(),
                        out,
                        depth + 1,
                    )?;
                    write_doc(field.doc.as_deref(), out);
                    if let Some(default) = &field.default {
                        out.push_str(",\"default\":");
                        write_json(default, out);
                    }
                    match field.order {
                        FieldOrder::Ascending => {}
                        FieldOrder::Descending => out.push_str(",\"order\":\"descending\""),
                        FieldOrder::Ignore => out.push_str(",\"order\":\"ignore\""),
                    }
                    if !field.aliases.is_empty() {
                        out.push_str(",\"aliases\":");
                        write_string_array(field.aliases.iter().map(String::as_str), out);
                    }
                    write_properties(&field.properties, out);
                    out.push('}');
                }
                out.push(']');
                write_properties(&node.properties, out);
                write_aliases(named, out);
                out.push('}');
            }
            Kind::Enum {
                named,
                symbols,
                default,
            } => {
                if write_name_reference(named, known, space, out) {
                    return Ok(());
                }
                out.push_str("{\"type\":\"enum\"");
                write_name(&named.name, space, out);
                write_doc(named.doc.as_deref(), out);
                out.push_str(",\"symbols\":");
                write_string_array(symbols.iter().map(String::as_str), out);
                if let Some(default) = default {
                    out.push_str(",\"default\":");
                    write_json_string(default, out);
                }
                write_properties(&node.properties, out);
                write_aliases(named, out);
                out.push('}');
            }
            Kind::Fixed { named, size } => {
                if write_name_reference(named, known, space, out) {
                    return Ok(());
                }
                out.push_str("{\"type\":\"fixed\"");
                write_name(&named.name, space, out);
                write_doc(named.doc.as_deref(), out);
                let _ = write!(out, ",\"size\":{size}");
                write_properties(&node.properties, out);
                write_aliases(named, out);
                out.push('}');
            }
            Kind::Array(items) => {
                out.push_str("{\"type\":\"array\",\"items\":");
                self.write_schema(*items, known, space, out, depth + 1)?;
                write_properties(&node.properties, out);
                out.push('}');
            }
            Kind::Map(values) => {
                out.push_str("{\"type\":\"map\",\"values\":");
                self.write_schema(*values, known, space, out, depth + 1)?;
                write_properties(&node.properties, out);
                out.push('}');
            }
            Kind::Union(branches) => {
                out.push('[');
                for (index, branch) in branches.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    self.write_schema(*branch, known, space, out, depth + 1)?;
                }
                out.push(']');
            }
            Kind::Unresolved(name) => write_json_string(name, out),
        }
        Ok(())
    }

    // --- Confluent's `AvroSchemaUtils.toNormalizedString` --------------------------------

    /// The normalized text before it is parsed again: named types by full name (the
    /// references' top-level types by name only), reserved attributes in a fixed order,
    /// custom properties and aliases sorted, defaults converted to their field's type.
    fn normalized_text(&self, root: NodeId, reference_names: &[String]) -> Result<String, TooDeep> {
        let mut seen: HashSet<String> = reference_names.iter().cloned().collect();
        let mut out = String::new();
        self.write_normalized(root, &mut seen, &mut out, 0)?;
        Ok(out)
    }

    fn write_normalized(
        &self,
        id: NodeId,
        seen: &mut HashSet<String>,
        out: &mut String,
        depth: usize,
    ) -> Result<(), TooDeep> {
        if depth > SCHEMA_DEPTH_MAX {
            return Err(TooDeep);
        }
        let node = &self.nodes[id];
        let logical_type = self.logical_type(id);
        match &node.kind {
            Kind::Union(branches) => {
                out.push('[');
                for (index, branch) in branches.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    self.write_normalized(*branch, seen, out, depth + 1)?;
                }
                out.push(']');
            }
            Kind::Array(child) | Kind::Map(child) => {
                let (type_name, child_attribute) = match node.kind {
                    Kind::Array(_) => ("array", "items"),
                    _ => ("map", "values"),
                };
                let _ = write!(out, "{{\"type\":\"{type_name}\",\"{child_attribute}\":");
                self.write_normalized(*child, seen, out, depth + 1)?;
                write_logical_type(logical_type.as_ref(), out);
                self.write_sorted_properties(&node.properties, out);
                out.push('}');
            }
            Kind::Record { named, .. } | Kind::Enum { named, .. } | Kind::Fixed { named, .. } => {
                let full_name = named.name.full();
                if !seen.insert(full_name.clone()) {
                    write_json_string(&full_name, out);
                    return Ok(());
                }
                out.push_str("{\"name\":");
                write_json_string(&full_name, out);
                match &node.kind {
                    Kind::Record { fields, .. } => {
                        out.push_str(",\"type\":\"record\",\"fields\":[");
                        for (index, field) in fields.iter().enumerate() {
                            if index > 0 {
                                out.push(',');
                            }
                            self.write_normalized_field(field, seen, out, depth)?;
                        }
                        out.push(']');
                    }
                    Kind::Enum { symbols, .. } => {
                        out.push_str(",\"type\":\"enum\",\"symbols\":");
                        write_string_array(symbols.iter().map(String::as_str), out);
                    }
                    Kind::Fixed { size, .. } => {
                        let _ = write!(out, ",\"type\":\"fixed\",\"size\":{size}");
                    }
                    _ => {}
                }
                write_logical_type(logical_type.as_ref(), out);
                if let Some(doc) = named.doc.as_deref().filter(|doc| !doc.is_empty()) {
                    out.push_str(",\"doc\":");
                    write_json_string(doc, out);
                }
                if !named.aliases.is_empty() {
                    let mut aliases: Vec<String> = named
                        .aliases
                        .iter()
                        .map(|alias| alias.alias_full_name(named.name.space.as_deref()))
                        .collect();
                    aliases.sort_by(|left, right| utf16_order(left, right));
                    aliases.dedup();
                    out.push_str(",\"aliases\":");
                    write_string_array(aliases.iter().map(String::as_str), out);
                }
                if let Kind::Enum {
                    default: Some(default),
                    ..
                } = &node.kind
                {
                    out.push_str(",\"default\":");
                    write_json_string(default, out);
                }
                self.write_sorted_properties(&node.properties, out);
                out.push('}');
            }
            Kind::Primitive(primitive) => {
                if logical_type.is_some() || !node.properties.is_empty() {
                    out.push_str("{\"type\":");
                    write_json_string(primitive.name(), out);
                    write_logical_type(logical_type.as_ref(), out);
                    self.write_sorted_properties(&node.properties, out);
                    out.push('}');
                } else {
                    write_json_string(primitive.name(), out);
                }
            }
            Kind::Unresolved(name) => write_json_string(name, out),
        }
        Ok(())
    }

    fn write_normalized_field(
        &self,
        field: &Field,
        seen: &mut HashSet<String>,
        out: &mut String,
        depth: usize,
    ) -> Result<(), TooDeep> {
        out.push_str("{\"name\":");
        write_json_string(&field.name, out);
        out.push_str(",\"type\":");
        self.write_normalized(field.schema, seen, out, depth + 1)?;
        // Confluent prints the Java enum constant; parsing upper-cases it anyway.
        out.push_str(match field.order {
            FieldOrder::Ascending => ",\"order\":\"ASCENDING\"",
            FieldOrder::Descending => ",\"order\":\"DESCENDING\"",
            FieldOrder::Ignore => ",\"order\":\"IGNORE\"",
        });
        write_doc(field.doc.as_deref(), out);
        if !field.aliases.is_empty() {
            let mut aliases = field.aliases.clone();
            aliases.sort_by(|left, right| utf16_order(left, right));
            out.push_str(",\"aliases\":");
            write_string_array(aliases.iter().map(String::as_str), out);
        }
        if let Some(default) = &field.default {
            let converted = if field.default_is_non_finite {
                Some(JavaObject::Text(
                    default.as_str().unwrap_or("NaN").to_owned(),
                ))
            } else {
                self.to_java_object(default, Some(field.schema), 0)
            };
            // Avro's `defaultVal()` is null when the value fits none of the field's types,
            // and Confluent then leaves the default out.
            if let Some(converted) = converted {
                out.push_str(",\"default\":");
                converted.write(out);
            }
        }
        self.write_sorted_properties(&field.properties, out);
        out.push('}');
        Ok(())
    }

    /// Confluent's `setSimpleProps`: properties sorted by name, values as Avro reads them
    /// back into Java objects (object keys sorted too).
    fn write_sorted_properties(&self, properties: &Map<String, Value>, out: &mut String) {
        let mut sorted: Vec<(&String, &Value)> = properties.iter().collect();
        sorted.sort_by(|left, right| utf16_order(left.0, right.0));
        for (key, value) in sorted {
            out.push(',');
            write_json_string(key, out);
            out.push(':');
            match self.to_java_object(value, None, 0) {
                Some(converted) => converted.write(out),
                None => write_json(value, out),
            }
        }
    }

    /// Avro's `JacksonUtils.toObject(json, schema)`: the Java value a default (or, without a
    /// schema, a property) stands for; `None` where Avro finds none.
    fn to_java_object(
        &self,
        value: &Value,
        schema: Option<NodeId>,
        depth: usize,
    ) -> Option<JavaObject> {
        if depth > SCHEMA_DEPTH_MAX {
            return None;
        }
        if value.is_null() {
            return Some(JavaObject::Null);
        }
        let kind = schema.map(|id| &self.nodes[id].kind);
        if let Some(Kind::Union(branches)) = kind {
            return branches
                .iter()
                .filter(|branch| {
                    !matches!(self.nodes[**branch].kind, Kind::Primitive(Primitive::Null))
                })
                .find_map(|branch| self.to_java_object(value, Some(*branch), depth + 1));
        }
        let primitive = match kind {
            Some(Kind::Primitive(primitive)) => Some(*primitive),
            _ => None,
        };
        match value {
            Value::Null => Some(JavaObject::Null),
            Value::Bool(boolean) => Some(JavaObject::Boolean(*boolean)),
            Value::Number(number) => number_to_java_object(number, kind.is_none(), primitive),
            Value::String(text) => match kind {
                None | Some(Kind::Primitive(Primitive::String)) | Some(Kind::Enum { .. }) => {
                    Some(JavaObject::Text(text.clone()))
                }
                Some(Kind::Primitive(Primitive::Bytes)) | Some(Kind::Fixed { .. }) => {
                    Some(JavaObject::Text(latin1_round_trip(text)))
                }
                _ => None,
            },
            Value::Array(elements) => {
                let element_schema = match kind {
                    None => None,
                    Some(Kind::Array(items)) => Some(*items),
                    // Avro throws here ("Not an array"); no value is the closest answer.
                    Some(_) => return None,
                };
                Some(JavaObject::List(
                    elements
                        .iter()
                        .map(|element| self.to_java_object(element, element_schema, depth + 1))
                        .collect(),
                ))
            }
            Value::Object(entries) => Some(JavaObject::Map(
                entries
                    .iter()
                    .map(|(key, entry)| {
                        let entry_schema = match kind {
                            Some(Kind::Map(values)) => Some(*values),
                            Some(Kind::Record { fields, .. }) => fields
                                .iter()
                                .find(|field| field.name == *key)
                                .map(|field| field.schema),
                            _ => None,
                        };
                        (
                            key.clone(),
                            self.to_java_object(entry, entry_schema, depth + 1),
                        )
                    })
                    .collect(),
            )),
        }
    }

    /// The logical type Avro would attach (`LogicalTypes.fromSchemaIgnoreInvalid`): only the
    /// standard ones, and only on the types they allow.
    fn logical_type(&self, id: NodeId) -> Option<LogicalType> {
        let node = &self.nodes[id];
        let name = node.properties.get("logicalType")?.as_str()?;
        if LOGICAL_TYPE_INCOMPATIBLE
            .iter()
            .any(|property| node.properties.get(*property).is_some_and(Value::is_string))
        {
            return None;
        }
        let primitive = match &node.kind {
            Kind::Primitive(primitive) => Some(*primitive),
            _ => None,
        };
        let fixed_size = match &node.kind {
            Kind::Fixed { size, .. } => Some(*size),
            _ => None,
        };
        let simple = |name: &'static str, allowed: bool| {
            allowed.then_some(LogicalType {
                name,
                decimal: None,
            })
        };
        match name {
            "decimal" => {
                let integer = |key: &str| {
                    node.properties
                        .get(key)
                        .map(|value| value.as_i64().filter(|value| i32::try_from(*value).is_ok()))
                };
                let precision = integer("precision")??;
                let scale = integer("scale").unwrap_or(Some(0))?;
                let precision_max = match (primitive, fixed_size) {
                    (Some(Primitive::Bytes), _) => i64::from(i32::MAX),
                    // Avro: round(floor(log10(2) * (8 * size - 1))) digits fit in the bytes.
                    (_, Some(size)) => ((8 * size - 1) as f64 * 2f64.log10()).floor() as i64,
                    _ => return None,
                };
                let valid =
                    precision > 0 && precision <= precision_max && scale >= 0 && scale <= precision;
                valid.then_some(LogicalType {
                    name: "decimal",
                    decimal: Some((precision, scale)),
                })
            }
            "big-decimal" => simple("big-decimal", primitive == Some(Primitive::Bytes)),
            "duration" => simple("duration", fixed_size == Some(12)),
            "uuid" => simple(
                "uuid",
                primitive == Some(Primitive::String) || fixed_size == Some(16),
            ),
            "date" => simple("date", primitive == Some(Primitive::Int)),
            "time-millis" => simple("time-millis", primitive == Some(Primitive::Int)),
            "time-micros" => simple("time-micros", primitive == Some(Primitive::Long)),
            "timestamp-millis" => simple("timestamp-millis", primitive == Some(Primitive::Long)),
            "timestamp-micros" => simple("timestamp-micros", primitive == Some(Primitive::Long)),
            "timestamp-nanos" => simple("timestamp-nanos", primitive == Some(Primitive::Long)),
            "local-timestamp-millis" => {
                simple("local-timestamp-millis", primitive == Some(Primitive::Long))
            }
            "local-timestamp-micros" => {
                simple("local-timestamp-micros", primitive == Some(Primitive::Long))
            }
            "local-timestamp-nanos" => {
                simple("local-timestamp-nanos", primitive == Some(Primitive::Long))
            }
            _ => None,
        }
    }

    // --- Avro's `Schema.isValidDefault` -------------------------------------------------

    fn is_valid_default(&self, id: NodeId, value: &Value, depth: usize) -> bool {
        if depth > SCHEMA_DEPTH_MAX {
            return false;
        }
        match &self.nodes[id].kind {
            Kind::Primitive(Primitive::String | Primitive::Bytes)
            | Kind::Enum { .. }
            | Kind::Fixed { .. } => value.is_string(),
            Kind::Primitive(Primitive::Int) => value
                .as_i64()
                .is_some_and(|integer| i32::try_from(integer).is_ok()),
            Kind::Primitive(Primitive::Long) => value.is_i64(),
            Kind::Primitive(Primitive::Float | Primitive::Double) => value.is_number(),
            Kind::Primitive(Primitive::Boolean) => value.is_boolean(),
            Kind::Primitive(Primitive::Null) => value.is_null(),
            Kind::Array(items) => value.as_array().is_some_and(|elements| {
                elements
                    .iter()
                    .all(|element| self.is_valid_default(*items, element, depth + 1))
            }),
            Kind::Map(values) => value.as_object().is_some_and(|entries| {
                entries
                    .values()
                    .all(|entry| self.is_valid_default(*values, entry, depth + 1))
            }),
            // Avro accepts a default matching any branch, not only the first.
            Kind::Union(branches) => branches
                .iter()
                .any(|branch| self.is_valid_default(*branch, value, depth + 1)),
            Kind::Record { fields, .. } => value.as_object().is_some_and(|entries| {
                fields.iter().all(|field| {
                    match entries.get(&field.name).or(field.default.as_ref()) {
                        Some(entry) => {
                            (field.default_is_non_finite && !entries.contains_key(&field.name))
                                || self.is_valid_default(field.schema, entry, depth + 1)
                        }
                        None => false,
                    }
                })
            }),
            Kind::Unresolved(_) => false,
        }
    }

    // --- Avro's `Schema.equals`, for a named type defined twice -------------------------

    /// Whether two definitions are the same type as Avro's `equals` sees it (names,
    /// structure, defaults, orders and properties; docs and aliases do not count).
    fn same_definition(
        &self,
        left: NodeId,
        right: NodeId,
        seen: &mut HashSet<(NodeId, NodeId)>,
        depth: usize,
    ) -> bool {
        if left == right {
            return true;
        }
        if depth > SCHEMA_DEPTH_MAX {
            return false;
        }
        let (left_node, right_node) = (&self.nodes[left], &self.nodes[right]);
        let shallow_name = |node: &Node| match &node.kind {
            Kind::Unresolved(name) => Some(name.clone()),
            Kind::Record { named, .. } | Kind::Enum { named, .. } | Kind::Fixed { named, .. } => {
                Some(named.name.full())
            }
            _ => None,
        };
        if matches!(left_node.kind, Kind::Unresolved(_))
            || matches!(right_node.kind, Kind::Unresolved(_))
        {
            return shallow_name(left_node).is_some()
                && shallow_name(left_node) == shallow_name(right_node);
        }
        if left_node.properties != right_node.properties {
            return false;
        }
        match (&left_node.kind, &right_node.kind) {
            (Kind::Primitive(left_primitive), Kind::Primitive(right_primitive)) => {
                left_primitive == right_primitive
            }
            (
                Kind::Record {
                    named: left_named,
                    fields: left_fields,
                    ..
                },
                Kind::Record {
                    named: right_named,
                    fields: right_fields,
                    ..
                },
            ) => {
                if left_named.name.full() != right_named.name.full()
                    || left_fields.len() != right_fields.len()
                {
                    return false;
                }
                if !seen.insert((left, right)) {
                    return true;
                }
                left_fields
                    .iter()
                    .zip(right_fields)
                    .all(|(left_field, right_field)| {
                        left_field.name == right_field.name
                            && left_field.order == right_field.order
                            && left_field.properties == right_field.properties
                            && match (&left_field.default, &right_field.default) {
                                (None, None) => true,
                                (Some(left_default), Some(right_default)) => {
                                    json_equal(left_default, right_default)
                                }
                                _ => false,
                            }
                            && self.same_definition(
                                left_field.schema,
                                right_field.schema,
                                seen,
                                depth + 1,
                            )
                    })
            }
            (
                Kind::Enum {
                    named: left_named,
                    symbols: left_symbols,
                    ..
                },
                Kind::Enum {
                    named: right_named,
                    symbols: right_symbols,
                    ..
                },
            ) => left_named.name.full() == right_named.name.full() && left_symbols == right_symbols,
            (
                Kind::Fixed {
                    named: left_named,
                    size: left_size,
                },
                Kind::Fixed {
                    named: right_named,
                    size: right_size,
                },
            ) => left_named.name.full() == right_named.name.full() && left_size == right_size,
            (Kind::Array(left_child), Kind::Array(right_child))
            | (Kind::Map(left_child), Kind::Map(right_child)) => {
                self.same_definition(*left_child, *right_child, seen, depth + 1)
            }
            (Kind::Union(left_branches), Kind::Union(right_branches)) => {
                left_branches.len() == right_branches.len()
                    && left_branches.iter().zip(right_branches).all(
                        |(left_branch, right_branch)| {
                            self.same_definition(*left_branch, *right_branch, seen, depth + 1)
                        },
                    )
            }
            _ => false,
        }
    }
}

/// JSON equality where numbers compare by value (`1` and `1.0` are the same default).
fn json_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(left_number), Value::Number(right_number)) => {
            left_number == right_number || left_number.as_f64() == right_number.as_f64()
        }
        (Value::Array(left_elements), Value::Array(right_elements)) => {
            left_elements.len() == right_elements.len()
                && left_elements
                    .iter()
                    .zip(right_elements)
                    .all(|(left_element, right_element)| json_equal(left_element, right_element))
        }
        (Value::Object(left_entries), Value::Object(right_entries)) => {
            left_entries.len() == right_entries.len()
                && left_entries.iter().all(|(key, left_entry)| {
                    right_entries
                        .get(key)
                        .is_some_and(|right_entry| json_equal(left_entry, right_entry))
                })
        }
        _ => left == right,
    }
}

/// A Java value from Avro's `JacksonUtils.toObject`, printed as Confluent prints it
/// (Jackson, object keys sorted).
enum JavaObject {
    Null,
    Boolean(bool),
    Integer(i64),
    /// An integer beyond `long`, kept as its digits.
    BigInteger(String),
    Float(f32),
    Double(f64),
    Text(String),
    List(Vec<Option<JavaObject>>),
    Map(Vec<(String, Option<JavaObject>)>),
}

impl JavaObject {
    fn write(&self, out: &mut String) {
        match self {
            JavaObject::Null => out.push_str("null"),
            JavaObject::Boolean(boolean) => out.push_str(if *boolean { "true" } else { "false" }),
            JavaObject::Integer(integer) => {
                let _ = write!(out, "{integer}");
            }
            JavaObject::BigInteger(digits) => out.push_str(digits),
            JavaObject::Float(float) => {
                write_java_number(java_float(*float), float.is_finite(), out)
            }
            JavaObject::Double(double) => {
                write_java_number(java_double(*double), double.is_finite(), out);
            }
            JavaObject::Text(text) => write_json_string(text, out),
            JavaObject::List(elements) => {
                out.push('[');
                for (index, element) in elements.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    write_optional_java_object(element.as_ref(), out);
                }
                out.push(']');
            }
            JavaObject::Map(entries) => {
                let mut sorted: Vec<&(String, Option<JavaObject>)> = entries.iter().collect();
                sorted.sort_by(|left, right| utf16_order(&left.0, &right.0));
                out.push('{');
                for (index, (key, entry)) in sorted.into_iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    write_json_string(key, out);
                    out.push(':');
                    write_optional_java_object(entry.as_ref(), out);
                }
                out.push('}');
            }
        }
    }
}

fn write_optional_java_object(object: Option<&JavaObject>, out: &mut String) {
    match object {
        Some(object) => object.write(out),
        None => out.push_str("null"),
    }
}

/// Jackson quotes the non-finite numbers (`QUOTE_NON_NUMERIC_NUMBERS`).
fn write_java_number(text: String, finite: bool, out: &mut String) {
    if finite {
        out.push_str(&text);
    } else {
        write_json_string(&text, out);
    }
}

/// The numeric cases of Avro's `JacksonUtils.toObject`: Jackson reads an integer as `int`,
/// `long` or big integer by its size, a decimal as `double`; the schema then converts it.
fn number_to_java_object(
    number: &Number,
    schemaless: bool,
    primitive: Option<Primitive>,
) -> Option<JavaObject> {
    if let Some(integer) = number.as_i64() {
        return match primitive {
            _ if schemaless => Some(JavaObject::Integer(integer)),
            Some(Primitive::Int | Primitive::Long) => Some(JavaObject::Integer(integer)),
            Some(Primitive::Float) => Some(JavaObject::Float(integer as f32)),
            Some(Primitive::Double) => Some(JavaObject::Double(integer as f64)),
            _ => None,
        };
    }
    if number.is_u64() {
        // A big integer: Avro converts it to nothing; as a property it is kept as written.
        return schemaless.then(|| JavaObject::BigInteger(number.to_string()));
    }
    let double = number.as_f64()?;
    match primitive {
        _ if schemaless => Some(JavaObject::Double(double)),
        Some(Primitive::Double) => Some(JavaObject::Double(double)),
        Some(Primitive::Float) => Some(JavaObject::Float(double as f32)),
        _ => None,
    }
}

/// A bytes or fixed default as Avro reads it (`getBytes(ISO_8859_1)`) and prints it back:
/// characters beyond Latin-1 become `?`, one per UTF-16 unit.
fn latin1_round_trip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match u32::from(character) {
            0..=0xFF => out.push(character),
            0x100..=0xFFFF => out.push('?'),
            _ => out.push_str("??"),
        }
    }
    out
}

/// Java's `String.compareTo` (UTF-16 code units), which orders Confluent's sorted maps.
fn utf16_order(left: &str, right: &str) -> Ordering {
    left.encode_utf16().cmp(right.encode_utf16())
}

// ---------------------------------------------------------------------------------------
// JSON as Jackson writes it.
// ---------------------------------------------------------------------------------------

/// Jackson's string escaping: `"` and `\`, the short escapes for backspace, tab, newline,
/// form feed and carriage return, `\u00XX` (upper-case hex) for other control characters,
/// everything else (`/` and non-ASCII included) as is.
fn write_json_string(text: &str, out: &mut String) {
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            control if u32::from(control) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", u32::from(control));
            }
            other => out.push(other),
        }
    }
    out.push('"');
}

/// Compact JSON with Jackson's number and string formatting, object keys in input order.
fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(boolean) => out.push_str(if *boolean { "true" } else { "false" }),
        Value::Number(number) => write_json_number(number, out),
        Value::String(text) => write_json_string(text, out),
        Value::Array(elements) => {
            out.push('[');
            for (index, element) in elements.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_json(element, out);
            }
            out.push(']');
        }
        Value::Object(entries) => {
            out.push('{');
            for (index, (key, entry)) in entries.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_json_string(key, out);
                out.push(':');
                write_json(entry, out);
            }
            out.push('}');
        }
    }
}

fn write_json_number(number: &Number, out: &mut String) {
    if let Some(integer) = number.as_i64() {
        let _ = write!(out, "{integer}");
    } else if let Some(integer) = number.as_u64() {
        let _ = write!(out, "{integer}");
    } else if let Some(double) = number.as_f64() {
        write_java_number(java_double(double), double.is_finite(), out);
    }
}

fn json_text(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

/// Java's `Double.toString` (what Jackson prints a `double` with): the shortest digits
/// that read back the same, plain for magnitudes in [10^-3, 10^7), `d.dddE±n` otherwise,
/// always with a fractional digit.
fn java_double(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        }
        .to_owned();
    }
    java_notation(&format!("{value:e}"))
}

/// Java's `Float.toString`, with the shortest digits of the `float`.
fn java_float(value: f32) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        }
        .to_owned();
    }
    java_notation(&format!("{value:e}"))
}

/// Rewrites Rust's shortest scientific form (`-1.25e-5`) in Java's notation.
fn java_notation(scientific: &str) -> String {
    let (negative, unsigned) = match scientific.strip_prefix('-') {
        Some(unsigned) => (true, unsigned),
        None => (false, scientific),
    };
    let (mantissa, exponent) = unsigned.split_once('e').unwrap_or((unsigned, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    if (-3..7).contains(&exponent) {
        if exponent >= 0 {
            let integer_digits = exponent as usize + 1;
            if digits.len() <= integer_digits {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', integer_digits - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..integer_digits]);
                out.push('.');
                out.push_str(&digits[integer_digits..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        out.push('.');
        out.push_str(if digits.len() > 1 { &digits[1..] } else { "0" });
        let _ = write!(out, "E{exponent}");
    }
    out
}

/// Java's `Double.parseDouble`, which Avro applies to a float or double field's string
/// default: surrounding blanks, a sign, `NaN`, `Infinity`, a decimal with an optional
/// exponent and `f`/`d` suffix. Hexadecimal forms are not accepted here.
fn java_parse_double(text: &str) -> Option<f64> {
    let trimmed = text.trim_matches(|character: char| character <= ' ');
    let (sign, body) = match trimmed.as_bytes().first() {
        Some(b'-') => (-1.0, &trimmed[1..]),
        Some(b'+') => (1.0, &trimmed[1..]),
        _ => (1.0, trimmed),
    };
    match body {
        "NaN" => return Some(f64::NAN),
        "Infinity" => return Some(sign * f64::INFINITY),
        _ => {}
    }
    let body = body.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(body);
    let plausible = body.bytes().any(|byte| byte.is_ascii_digit())
        && body
            .bytes()
            .all(|byte| byte.is_ascii_digit() || matches!(byte, b'.' | b'e' | b'E' | b'+' | b'-'));
    if !plausible {
        return None;
    }
    body.parse::<f64>().ok().map(|value| sign * value)
}

// --- pieces of Avro's `toJson` ----------------------------------------------------------

/// Avro's `writeNameRef`: a named type already printed (or a reference's) is printed by
/// name; otherwise it is remembered as printed and `false` says to print it in full.
fn write_name_reference(
    named: &Named,
    known: &mut HashSet<String>,
    space: Option<&str>,
    out: &mut String,
) -> bool {
    if known.insert(named.name.full()) {
        return false;
    }
    write_json_string(&named.name.qualified(space), out);
    true
}

/// Avro's `Name.writeName`: the short name, and the namespace when it is not the enclosing
/// one (an empty one for a type in the null namespace inside a namespaced type).
fn write_name(name: &Name, current_space: Option<&str>, out: &mut String) {
    out.push_str(",\"name\":");
    write_json_string(&name.name, out);
    match (name.space.as_deref(), current_space) {
        (Some(space), current) if Some(space) != current => {
            out.push_str(",\"namespace\":");
            write_json_string(space, out);
        }
        (None, Some(_)) => out.push_str(",\"namespace\":\"\""),
        _ => {}
    }
}

fn write_doc(doc: Option<&str>, out: &mut String) {
    if let Some(doc) = doc {
        out.push_str(",\"doc\":");
        write_json_string(doc, out);
    }
}

fn write_aliases(named: &Named, out: &mut String) {
    if named.aliases.is_empty() {
        return;
    }
    let aliases: Vec<String> = named
        .aliases
        .iter()
        .map(|alias| alias.qualified(named.name.space.as_deref()))
        .collect();
    out.push_str(",\"aliases\":");
    write_string_array(aliases.iter().map(String::as_str), out);
}

fn write_string_array<'a>(texts: impl Iterator<Item = &'a str>, out: &mut String) {
    out.push('[');
    for (index, text) in texts.enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_json_string(text, out);
    }
    out.push(']');
}

fn write_properties(properties: &Map<String, Value>, out: &mut String) {
    for (key, value) in properties {
        out.push(',');
        write_json_string(key, out);
        out.push(':');
        write_json(value, out);
    }
}

/// Confluent's `setLogicalProps`: the logical type's own attributes right after the body.
fn write_logical_type(logical_type: Option<&LogicalType>, out: &mut String) {
    let Some(logical_type) = logical_type else {
        return;
    };
    let _ = write!(out, ",\"logicalType\":\"{}\"", logical_type.name);
    if let Some((precision, scale)) = logical_type.decimal {
        let _ = write!(out, ",\"precision\":{precision}");
        if scale != 0 {
            let _ = write!(out, ",\"scale\":{scale}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Parsing.
// ---------------------------------------------------------------------------------------

/// Avro's `Schema.Parser` with the names it has seen: each document (a reference, then the
/// schema) adds its named types for the next ones to use.
#[derive(Default)]
struct GraphParser {
    graph: SchemaGraph,
    /// Full name to the node defining it.
    names: HashMap<String, NodeId>,
}

impl GraphParser {
    fn parse_document(&mut self, text: &str) -> Result<NodeId, InvalidSchema> {
        let json = parse_json(text)?;
        let first_node = self.graph.nodes.len();
        let root = self.parse_node(&json, None)?;
        let root = self.resolve_forward_references(first_node, root)?;
        self.validate_defaults(first_node)?;
        Ok(root)
    }

    fn parse_node(&mut self, json: &Value, space: Option<&str>) -> Result<NodeId, InvalidSchema> {
        match json {
            Value::String(name) => Ok(self.find(name, space)),
            Value::Object(object) => {
                let Some(type_name) = object.get("type").and_then(Value::as_str) else {
                    return Err(invalid(format!("No type: {}", json_text(json))));
                };
                if let Some(primitive) = Primitive::from_name(type_name) {
                    let properties = properties(object, &SCHEMA_RESERVED);
                    return Ok(self.graph.push(Kind::Primitive(primitive), properties));
                }
                match type_name {
                    "record" | "error" => {
                        self.parse_record(object, json, space, type_name == "error")
                    }
                    "enum" => self.parse_enum(object, json, space),
                    "fixed" => self.parse_fixed(object, json, space),
                    "array" | "map" => {
                        let (child_attribute, missing) = if type_name == "array" {
                            ("items", "Array has no items type")
                        } else {
                            ("values", "Map has no values type")
                        };
                        let Some(child) = object.get(child_attribute) else {
                            return Err(invalid(format!("{missing}: {}", json_text(json))));
                        };
                        let child = self.parse_node(child, space)?;
                        let kind = if type_name == "array" {
                            Kind::Array(child)
                        } else {
                            Kind::Map(child)
                        };
                        Ok(self.graph.push(kind, properties(object, &SCHEMA_RESERVED)))
                    }
                    // Avro 1.11 read `{"type": "Name"}` as a use of a defined named type.
                    other => self.lookup(other, space).ok_or_else(|| {
                        invalid(format!(
                            "Unknown type \"{other}\": a schema \"type\" must be a primitive \
                             type, one of \"record\", \"error\", \"enum\", \"fixed\", \
                             \"array\" or \"map\", or a named type defined before"
                        ))
                    }),
                }
            }
            Value::Array(branches) => self.parse_union(branches, json, space),
            other => Err(invalid(format!(
                "Not an Avro schema (a type name, object or union is expected): {}",
                json_text(other)
            ))),
        }
    }

    fn parse_union(
        &mut self,
        branches: &[Value],
        json: &Value,
        space: Option<&str>,
    ) -> Result<NodeId, InvalidSchema> {
        let mut ids = Vec::with_capacity(branches.len());
        let mut keys = HashSet::with_capacity(branches.len());
        for branch in branches {
            let id = self.parse_node(branch, space)?;
            if matches!(self.graph.nodes[id].kind, Kind::Union(_)) {
                return Err(invalid(format!("Nested union: {}", json_text(json))));
            }
            let key = self.graph.union_key(id);
            if !keys.insert(key.clone()) {
                return Err(invalid(format!("Duplicate in union: {key}")));
            }
            ids.push(id);
        }
        Ok(self.graph.push(Kind::Union(ids), Map::new()))
    }

    fn parse_named(
        &self,
        object: &Map<String, Value>,
        json: &Value,
        space: Option<&str>,
    ) -> Result<Named, InvalidSchema> {
        let own_space = text_attribute(object, "namespace").or(space);
        let Some(raw_name) = text_attribute(object, "name") else {
            return Err(invalid(format!("No name in schema: {}", json_text(json))));
        };
        let name = Name::parse(raw_name, own_space)?;
        let full_name = name.full();
        if Primitive::from_name(&full_name).is_some() {
            return Err(invalid(format!(
                "Schemas may not be named after primitives: {full_name}"
            )));
        }
        let aliases = match object.get("aliases") {
            None => Vec::new(),
            Some(aliases) => {
                let mut parsed: Vec<Name> = Vec::new();
                for alias in string_list(aliases, json)? {
                    let alias = Name::parse(alias, name.space.as_deref())?;
                    if !parsed.iter().any(|known| known.full() == alias.full()) {
                        parsed.push(alias);
                    }
                }
                parsed
            }
        };
        Ok(Named {
            name,
            doc: text_attribute(object, "doc").map(str::to_owned),
            aliases,
        })
    }

    fn parse_record(
        &mut self,
        object: &Map<String, Value>,
        json: &Value,
        space: Option<&str>,
        is_error: bool,
    ) -> Result<NodeId, InvalidSchema> {
        let named = self.parse_named(object, json, space)?;
        let Some(Value::Array(fields_json)) = object.get("fields") else {
            return Err(invalid(format!(
                "Record has no fields: {}",
                json_text(json)
            )));
        };
        let mut fields: Vec<Field> = Vec::with_capacity(fields_json.len());
        let mut field_names = HashSet::with_capacity(fields_json.len());
        for field_json in fields_json {
            let field = self.parse_field(field_json, named.name.space.as_deref())?;
            if !field_names.insert(field.name.clone()) {
                return Err(invalid(format!(
                    "Duplicate field {} in record {}",
                    field.name,
                    named.name.full()
                )));
            }
            fields.push(field);
        }
        let kind = Kind::Record {
            named,
            fields,
            is_error,
        };
        let id = self.graph.push(kind, properties(object, &SCHEMA_RESERVED));
        self.define(id)?;
        Ok(id)
    }

    fn parse_field(&mut self, json: &Value, space: Option<&str>) -> Result<Field, InvalidSchema> {
        let Some((object, name)) = json
            .as_object()
            .and_then(|object| Some((object, text_attribute(object, "name")?)))
        else {
            return Err(invalid(format!("No field name: {}", json_text(json))));
        };
        validate_name(name).map_err(InvalidSchema)?;
        let Some(type_json) = object.get("type") else {
            return Err(invalid(format!("No field type: {}", json_text(json))));
        };
        let schema = self.parse_node(type_json, space)?;
        let order = match object.get("order") {
            None => FieldOrder::Ascending,
            Some(order) => match order.as_str().map(str::to_ascii_uppercase).as_deref() {
                Some("ASCENDING") => FieldOrder::Ascending,
                Some("DESCENDING") => FieldOrder::Descending,
                Some("IGNORE") => FieldOrder::Ignore,
                _ => {
                    return Err(invalid(format!(
                        "Invalid order {} of field {name}: ascending, descending or ignore",
                        json_text(order)
                    )));
                }
            },
        };
        let mut default = object.get("default").cloned();
        let mut default_is_non_finite = false;
        // Avro reads a float or double field's string default as a number.
        let floating = matches!(
            self.graph.nodes[schema].kind,
            Kind::Primitive(Primitive::Float | Primitive::Double)
        );
        if let (true, Some(Value::String(text))) = (floating, &default) {
            let Some(number) = java_parse_double(text) else {
                return Err(invalid(format!(
                    "Invalid default for field {name}: {} is not a number",
                    json_text(&Value::String(text.clone()))
                )));
            };
            default = Some(match Number::from_f64(number) {
                Some(number) => Value::Number(number),
                None => {
                    default_is_non_finite = true;
                    Value::String(java_double(number))
                }
            });
        }
        let aliases = match object.get("aliases") {
            None => Vec::new(),
            Some(aliases) => {
                let mut unique: Vec<String> = Vec::new();
                for alias in string_list(aliases, json)? {
                    if !unique.iter().any(|known| known == alias) {
                        unique.push(alias.to_owned());
                    }
                }
                unique
            }
        };
        Ok(Field {
            name: name.to_owned(),
            doc: text_attribute(object, "doc").map(str::to_owned),
            schema,
            default,
            default_is_non_finite,
            order,
            aliases,
            properties: properties(object, &FIELD_RESERVED),
        })
    }

    fn parse_enum(
        &mut self,
        object: &Map<String, Value>,
        json: &Value,
        space: Option<&str>,
    ) -> Result<NodeId, InvalidSchema> {
        let named = self.parse_named(object, json, space)?;
        let Some(Value::Array(symbols_json)) = object.get("symbols") else {
            return Err(invalid(format!("Enum has no symbols: {}", json_text(json))));
        };
        let mut symbols: Vec<String> = Vec::with_capacity(symbols_json.len());
        let mut unique = HashSet::with_capacity(symbols_json.len());
        for symbol in symbols_json {
            let Some(symbol) = symbol.as_str() else {
                return Err(invalid(format!(
                    "Enum symbol is not a string: {}",
                    json_text(symbol)
                )));
            };
            validate_name(symbol).map_err(InvalidSchema)?;
            if !unique.insert(symbol) {
                return Err(invalid(format!("Duplicate enum symbol: {symbol}")));
            }
            symbols.push(symbol.to_owned());
        }
        // Avro ignores a default that is not a string.
        let default = text_attribute(object, "default").map(str::to_owned);
        if let Some(default) = default
            .as_deref()
            .filter(|default| !unique.contains(default))
        {
            return Err(invalid(format!(
                "The Enum Default: {default} is not in the enum symbol set: [{}]",
                symbols.join(", ")
            )));
        }
        let kind = Kind::Enum {
            named,
            symbols,
            default,
        };
        let id = self.graph.push(kind, properties(object, &ENUM_RESERVED));
        self.define(id)?;
        Ok(id)
    }

    fn parse_fixed(
        &mut self,
        object: &Map<String, Value>,
        json: &Value,
        space: Option<&str>,
    ) -> Result<NodeId, InvalidSchema> {
        let named = self.parse_named(object, json, space)?;
        let Some(size) = object
            .get("size")
            .and_then(Value::as_i64)
            .filter(|size| i32::try_from(*size).is_ok())
        else {
            return Err(invalid(format!("Invalid or no size: {}", json_text(json))));
        };
        if !(0..=FIXED_SIZE_MAX).contains(&size) {
            return Err(invalid(format!(
                "Invalid fixed size {size}: it must be between 0 and {FIXED_SIZE_MAX}"
            )));
        }
        let kind = Kind::Fixed { named, size };
        let id = self.graph.push(kind, properties(object, &SCHEMA_RESERVED));
        self.define(id)?;
        Ok(id)
    }

    /// Adds a named type to the names known to later uses (Avro's `ParseContext.put`): its
    /// namespace must be valid, and a name may be defined again only as the same type.
    fn define(&mut self, id: NodeId) -> Result<(), InvalidSchema> {
        let Some(named) = self.graph.named(id) else {
            return Ok(());
        };
        if let Some(space) = &named.name.space {
            for part in space.split('.') {
                validate_name(part).map_err(|error| {
                    invalid(format!("Namespace part \"{part}\" is invalid: {error}"))
                })?;
            }
        }
        let full_name = named.name.full();
        match self.names.get(&full_name) {
            None => {
                self.names.insert(full_name, id);
                Ok(())
            }
            Some(&existing) => {
                if self
                    .graph
                    .same_definition(existing, id, &mut HashSet::new(), 0)
                {
                    Ok(())
                } else {
                    Err(invalid(format!("Can't redefine: {full_name}")))
                }
            }
        }
    }

    /// Avro's `ParseContext.find`: a primitive, the name qualified by the enclosing
    /// namespace, the name as a full name, or else a forward reference.
    fn find(&mut self, name: &str, space: Option<&str>) -> NodeId {
        if let Some(primitive) = Primitive::from_name(name) {
            return self.graph.push(Kind::Primitive(primitive), Map::new());
        }
        if let Some(id) = self.lookup(name, space) {
            return id;
        }
        let qualified = qualify(name, space);
        self.graph.push(Kind::Unresolved(qualified), Map::new())
    }

    fn lookup(&self, name: &str, space: Option<&str>) -> Option<NodeId> {
        self.names
            .get(&qualify(name, space))
            .or_else(|| self.names.get(name))
            .copied()
    }

    /// Points every use of a type defined later in the document at its definition.
    fn resolve_forward_references(
        &mut self,
        first_node: NodeId,
        root: NodeId,
    ) -> Result<NodeId, InvalidSchema> {
        let mut targets: HashMap<NodeId, NodeId> = HashMap::new();
        for (offset, node) in self.graph.nodes[first_node..].iter().enumerate() {
            if let Kind::Unresolved(name) = &node.kind {
                let Some(&target) = self.names.get(name) else {
                    return Err(invalid(format!(
                        "Undefined name: \"{name}\" is neither a primitive type nor a named \
                         type defined in this schema or its references"
                    )));
                };
                targets.insert(first_node + offset, target);
            }
        }
        if targets.is_empty() {
            return Ok(root);
        }
        let retarget = |id: &mut NodeId| {
            if let Some(target) = targets.get(id) {
                *id = *target;
            }
        };
        for node in &mut self.graph.nodes[first_node..] {
            match &mut node.kind {
                Kind::Record { fields, .. } => {
                    fields
                        .iter_mut()
                        .for_each(|field| retarget(&mut field.schema));
                }
                Kind::Array(child) | Kind::Map(child) => retarget(child),
                Kind::Union(branches) => branches.iter_mut().for_each(retarget),
                _ => {}
            }
        }
        Ok(targets.get(&root).copied().unwrap_or(root))
    }

    /// Confluent validates the defaults of a new schema (`setValidateDefaults(true)`).
    fn validate_defaults(&self, first_node: NodeId) -> Result<(), InvalidSchema> {
        for node in &self.graph.nodes[first_node..] {
            let Kind::Record { fields, .. } = &node.kind else {
                continue;
            };
            for field in fields {
                let Some(default) = &field.default else {
                    continue;
                };
                if field.default_is_non_finite
                    || self.graph.is_valid_default(field.schema, default, 0)
                {
                    continue;
                }
                return Err(invalid(format!(
                    "Invalid default for field {}: {} not a {}",
                    field.name,
                    json_text(default),
                    self.graph.resolved_text(field.schema)
                )));
            }
        }
        Ok(())
    }
}

fn invalid(message: String) -> InvalidSchema {
    InvalidSchema(message)
}

fn qualify(name: &str, space: Option<&str>) -> String {
    match space {
        Some(space) if !name.contains('.') => format!("{space}.{name}"),
        _ => name.to_owned(),
    }
}

/// Avro's `getOptionalText`: the attribute when it is a string, otherwise nothing.
fn text_attribute<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

fn string_list<'a>(list: &'a Value, owner: &Value) -> Result<Vec<&'a str>, InvalidSchema> {
    let Some(elements) = list.as_array() else {
        return Err(invalid(format!(
            "aliases not an array: {}",
            json_text(owner)
        )));
    };
    elements
        .iter()
        .map(|element| {
            element
                .as_str()
                .ok_or_else(|| invalid(format!("alias not a string: {}", json_text(element))))
        })
        .collect()
}

fn properties(object: &Map<String, Value>, reserved: &[&str]) -> Map<String, Value> {
    object
        .iter()
        .filter(|(key, _)| !reserved.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

fn parse_json(text: &str) -> Result<Value, InvalidSchema> {
    let text = strip_json_comments(text)?;
    serde_json::from_str(&text).map_err(|error| invalid(format!("Invalid JSON: {error}")))
}

/// Avro's JSON factory allows `/* */` and `//` comments; they are blanked out here (outside
/// strings) before the JSON is read.
fn strip_json_comments(text: &str) -> Result<Cow<'_, str>, InvalidSchema> {
    if !text.contains('/') {
        return Ok(Cow::Borrowed(text));
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied_up_to = 0;
    let mut index = 0;
    let mut in_string = false;
    while index < bytes.len() {
        let byte = bytes[index];
        if in_string {
            match byte {
                b'\\' => index += 2,
                b'"' => {
                    in_string = false;
                    index += 1;
                }
                _ => index += 1,
            }
            continue;
        }
        match (byte, bytes.get(index + 1)) {
            (b'"', _) => {
                in_string = true;
                index += 1;
            }
            (b'/', Some(b'*')) => {
                out.push_str(&text[copied_up_to..index]);
                let Some(length) = text[index + 2..].find("*/") else {
                    return Err(invalid("Invalid JSON: unterminated /* comment".to_owned()));
                };
                index += 2 + length + 2;
                copied_up_to = index;
                out.push(' ');
            }
            (b'/', Some(b'/')) => {
                out.push_str(&text[copied_up_to..index]);
                index = text[index..]
                    .find('\n')
                    .map_or(bytes.len(), |length| index + length);
                copied_up_to = index;
                out.push(' ');
            }
            _ => index += 1,
        }
    }
    out.push_str(&text[copied_up_to..]);
    Ok(Cow::Owned(out))
}

// ---------------------------------------------------------------------------------------
// Compatibility: Avro's `SchemaCompatibility.ReaderWriterCompatibilityChecker`.
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IncompatibilityType {
    NameMismatch,
    FixedSizeMismatch,
    MissingEnumSymbols,
    ReaderFieldMissingDefaultValue,
    TypeMismatch,
    MissingUnionBranch,
}

impl IncompatibilityType {
    fn name(self) -> &'static str {
        match self {
            IncompatibilityType::NameMismatch => "NAME_MISMATCH",
            IncompatibilityType::FixedSizeMismatch => "FIXED_SIZE_MISMATCH",
            IncompatibilityType::MissingEnumSymbols => "MISSING_ENUM_SYMBOLS",
            IncompatibilityType::ReaderFieldMissingDefaultValue => {
                "READER_FIELD_MISSING_DEFAULT_VALUE"
            }
            IncompatibilityType::TypeMismatch => "TYPE_MISMATCH",
            IncompatibilityType::MissingUnionBranch => "MISSING_UNION_BRANCH",
        }
    }
}

/// One of Avro's `Incompatibility`s. Shared text: a memoized result is copied into every
/// result that uses it, so copies must not cost the length of the path.
#[derive(Debug, Clone)]
struct Incompatibility {
    kind: IncompatibilityType,
    message: Rc<str>,
    /// Avro's `getLocation`: a JSON pointer from the root (whose token is left out).
    path: Rc<str>,
}

impl Incompatibility {
    fn new(kind: IncompatibilityType, message: String, location: &[String]) -> Self {
        let mut path = String::from("/");
        for (index, token) in location.iter().skip(1).enumerate() {
            if index > 0 {
                path.push('/');
            }
            path.push_str(&token.replace('~', "~0").replace('/', "~1"));
        }
        Incompatibility {
            kind,
            message: message.into(),
            path: path.into(),
        }
    }

    /// Confluent's `Difference.error()` with its two placeholders filled (reader first).
    fn describe(&self, reader_role: &str, writer_role: &str) -> String {
        let path = &self.path;
        let message = &self.message;
        let description = match self.kind {
            IncompatibilityType::FixedSizeMismatch => format!(
                "The size of FIXED type field at path '{path}' in the {reader_role} schema does \
                 not match with the {writer_role} schema"
            ),
            IncompatibilityType::TypeMismatch => format!(
                "The type (path '{path}') of a field in the {reader_role} schema does not match \
                 with the {writer_role} schema"
            ),
            IncompatibilityType::NameMismatch => {
                format!("The name of the schema has changed (path '{path}')")
            }
            IncompatibilityType::MissingEnumSymbols => format!(
                "The {reader_role} schema is missing enum symbols '{message}' at path '{path}' in \
                 the {writer_role} schema"
            ),
            IncompatibilityType::MissingUnionBranch => format!(
                "The {reader_role} schema is missing a type inside a union field at path \
                 '{path}' in the {writer_role} schema"
            ),
            IncompatibilityType::ReaderFieldMissingDefaultValue => format!(
                "The field '{message}' at path '{path}' in the {reader_role} schema has no \
                 default value and is missing in the {writer_role} schema"
            ),
        };
        format!(
            "{{errorType:'{}', description:'{description}', additionalInfo:'{message}'}}",
            self.kind.name()
        )
    }
}

/// Why a check stopped before its end.
enum CheckAborted {
    /// Avro throws when a reader field matches several writer fields (by name and aliases).
    AmbiguousField(String),
    TooDeep,
    TooManyPairs,
    TooManyIncompatibilities,
}

impl CheckAborted {
    fn message(&self) -> String {
        match self {
            CheckAborted::AmbiguousField(message) => message.clone(),
            CheckAborted::TooDeep => {
                format!("the schemas nest deeper than {CHECK_DEPTH_MAX} levels")
            }
            CheckAborted::TooManyPairs => {
                format!("the schemas have more than {CHECK_PAIRS_MAX} pairs of types to compare")
            }
            CheckAborted::TooManyIncompatibilities => format!(
                "the schemas differ in more than {CHECK_RECORDED_INCOMPATIBILITIES_MAX} places"
            ),
        }
    }
}

type Found = Rc<Vec<Incompatibility>>;

/// One reader/writer check. Results are memoized per (reader node, writer node) pair, and
/// a pair met again while it is being checked counts as compatible: that is how recursive
/// types terminate. A memoized result is reused as is, paths included, as Avro does.
///
/// The recursion runs through `check`, `calculate`, a per-type function and `check` again;
/// each is kept small (messages are built in separate functions) because the depth
/// allowed, [`CHECK_DEPTH_MAX`], is paid for in stack.
struct CompatibilityCheck<'a> {
    reader: &'a SchemaGraph,
    writer: &'a SchemaGraph,
    /// `None` while the pair is being checked.
    memo: HashMap<(NodeId, NodeId), Option<Found>>,
    depth: usize,
    /// Incompatibilities still allowed to be recorded or copied between results.
    recorded_budget: usize,
    compatible: Found,
}

impl<'a> CompatibilityCheck<'a> {
    fn new(reader: &'a SchemaGraph, writer: &'a SchemaGraph) -> Self {
        CompatibilityCheck {
            reader,
            writer,
            memo: HashMap::new(),
            depth: 0,
            recorded_budget: CHECK_RECORDED_INCOMPATIBILITIES_MAX,
            compatible: Rc::new(Vec::new()),
        }
    }

    /// A check from a fresh root location, as Avro's two-argument `getCompatibility`, which
    /// it uses for union branches.
    fn check_detached(&mut self, reader: NodeId, writer: NodeId) -> Result<Found, CheckAborted> {
        let mut location = Vec::new();
        self.check(String::new(), reader, writer, &mut location)
    }

    fn check(
        &mut self,
        token: String,
        reader: NodeId,
        writer: NodeId,
        location: &mut Vec<String>,
    ) -> Result<Found, CheckAborted> {
        location.push(token);
        let found = match self.memo.get(&(reader, writer)) {
            Some(None) => self.compatible.clone(),
            Some(Some(found)) => found.clone(),
            None => {
                if self.depth >= CHECK_DEPTH_MAX {
                    return Err(CheckAborted::TooDeep);
                }
                if self.memo.len() >= CHECK_PAIRS_MAX {
                    return Err(CheckAborted::TooManyPairs);
                }
                self.memo.insert((reader, writer), None);
                self.depth += 1;
                let found = Rc::new(self.calculate(reader, writer, location)?);
                self.depth -= 1;
                self.memo.insert((reader, writer), Some(found.clone()));
                found
            }
        };
        location.pop();
        Ok(found)
    }

    fn calculate(
        &mut self,
        reader: NodeId,
        writer: NodeId,
        location: &mut Vec<String>,
    ) -> Result<Vec<Incompatibility>, CheckAborted> {
        let reader_type = self.reader.avro_type(reader);
        let writer_type = self.writer.avro_type(writer);
        if reader_type == writer_type {
            return self.calculate_same_type(reader, writer, location);
        }
        if writer_type == AvroType::Union {
            return self.calculate_writer_union(reader, writer, location);
        }
        if is_promotion(reader_type, writer_type) {
            return Ok(Vec::new());
        }
        if reader_type == AvroType::Union {
            return self.calculate_reader_union(reader, writer, location);
        }
        let mut found = Vec::new();
        self.record(
            &mut found,
            type_mismatch(reader_type, writer_type, location),
        )?;
        Ok(found)
    }

    fn calculate_same_type(
        &mut self,
        reader: NodeId,
        writer: NodeId,
        location: &mut Vec<String>,
    ) -> Result<Vec<Incompatibility>, CheckAborted> {
        let reader_graph = self.reader;
        let writer_graph = self.writer;
        let mut found = Vec::new();
        match (
            &reader_graph.nodes[reader].kind,
            &writer_graph.nodes[writer].kind,
        ) {
            (Kind::Array(reader_items), Kind::Array(writer_items)) => {
                let items =
                    self.check("items".to_owned(), *reader_items, *writer_items, location)?;
                self.copy(&mut found, &items)?;
            }
            (Kind::Map(reader_values), Kind::Map(writer_values)) => {
                let values = self.check(
                    "values".to_owned(),
                    *reader_values,
                    *writer_values,
                    location,
                )?;
                self.copy(&mut found, &values)?;
            }
            (
                Kind::Record {
                    named: reader_named,
                    ..
                },
                Kind::Record {
                    named: writer_named,
                    ..
                },
            ) => {
                if let Some(mismatch) = name_mismatch(reader_named, writer_named, location) {
                    self.record(&mut found, mismatch)?;
                }
                self.check_record_fields(reader, writer, location, &mut found)?;
            }
            (Kind::Union(_), Kind::Union(writer_branches)) => {
                // Every branch the writer may have written must be readable; what is
                // wrong inside a branch is not detailed.
                for (index, writer_branch) in writer_branches.iter().enumerate() {
                    location.push(index.to_string());
                    if !self.check_detached(reader, *writer_branch)?.is_empty() {
                        let writer_type = writer_graph.avro_type(*writer_branch);
                        self.record(&mut found, missing_union_branch(writer_type, location))?;
                    }
                    location.pop();
                }
            }
            (reader_kind, writer_kind) => {
                for incompatibility in
                    named_leaf_incompatibilities(reader_kind, writer_kind, location)
                {
                    self.record(&mut found, incompatibility)?;
                }
            }
        }
        Ok(found)
    }

    /// Reading a writer union: every branch the writer may have written must be readable.
    fn calculate_writer_union(
        &mut self,
        reader: NodeId,
        writer: NodeId,
        location: &mut Vec<String>,
    ) -> Result<Vec<Incompatibility>, CheckAborted> {
        let mut found = Vec::new();
        if let Kind::Union(writer_branches) = &self.writer.nodes[writer].kind {
            for (index, writer_branch) in writer_branches.iter().enumerate() {
                let branch = self.check(index.to_string(), reader, *writer_branch, location)?;
                self.copy(&mut found, &branch)?;
            }
        }
        Ok(found)
    }

    /// Reading into a reader union: some branch must read what was written.
    fn calculate_reader_union(
        &mut self,
        reader: NodeId,
        writer: NodeId,
        location: &[String],
    ) -> Result<Vec<Incompatibility>, CheckAborted> {
        let reader_graph = self.reader;
        if let Kind::Union(reader_branches) = &reader_graph.nodes[reader].kind {
            for reader_branch in reader_branches {
                if self.check_detached(*reader_branch, writer)?.is_empty() {
                    return Ok(Vec::new());
                }
            }
        }
        let mut found = Vec::new();
        let writer_type = self.writer.avro_type(writer);
        self.record(&mut found, missing_union_branch(writer_type, location))?;
        Ok(found)
    }

    fn check_record_fields(
        &mut self,
        reader: NodeId,
        writer: NodeId,
        location: &mut Vec<String>,
        found: &mut Vec<Incompatibility>,
    ) -> Result<(), CheckAborted> {
        let reader_graph = self.reader;
        let writer_graph = self.writer;
        let (
            Kind::Record {
                fields: reader_fields,
                ..
            },
            Kind::Record {
                fields: writer_fields,
                ..
            },
        ) = (
            &reader_graph.nodes[reader].kind,
            &writer_graph.nodes[writer].kind,
        )
        else {
            return Ok(());
        };
        location.push("fields".to_owned());
        for (position, reader_field) in reader_fields.iter().enumerate() {
            location.push(position.to_string());
            match lookup_writer_field(writer_fields, reader_field) {
                Err(()) => {
                    return Err(ambiguous_field(
                        reader_graph,
                        writer_graph,
                        reader_field,
                        position,
                        writer,
                    ));
                }
                Ok(Some(writer_field)) => {
                    let types = self.check(
                        "type".to_owned(),
                        reader_field.schema,
                        writer_field.schema,
                        location,
                    )?;
                    self.copy(found, &types)?;
                }
                Ok(None) if reader_field.default.is_some() => {}
                Ok(None) => {
                    let enum_with_default = matches!(
                        &reader_graph.nodes[reader_field.schema].kind,
                        Kind::Enum {
                            default: Some(_),
                            ..
                        }
                    );
                    if enum_with_default {
                        // Avro compares the field's enum with the writer record itself.
                        let types =
                            self.check("type".to_owned(), reader_field.schema, writer, location)?;
                        self.copy(found, &types)?;
                    } else {
                        let missing = Incompatibility::new(
                            IncompatibilityType::ReaderFieldMissingDefaultValue,
                            reader_field.name.clone(),
                            location,
                        );
                        self.record(found, missing)?;
                    }
                }
            }
            location.pop();
        }
        location.pop();
        Ok(())
    }

    fn record(
        &mut self,
        found: &mut Vec<Incompatibility>,
        incompatibility: Incompatibility,
    ) -> Result<(), CheckAborted> {
        self.spend(1)?;
        if found.len() < INCOMPATIBILITIES_MAX {
            found.push(incompatibility);
        }
        Ok(())
    }

    fn copy(
        &mut self,
        found: &mut Vec<Incompatibility>,
        more: &[Incompatibility],
    ) -> Result<(), CheckAborted> {
        let room = INCOMPATIBILITIES_MAX
            .saturating_sub(found.len())
            .min(more.len());
        self.spend(room)?;
        found.extend(more[..room].iter().cloned());
        Ok(())
    }

    fn spend(&mut self, count: usize) -> Result<(), CheckAborted> {
        self.recorded_budget = self
            .recorded_budget
            .checked_sub(count)
            .ok_or(CheckAborted::TooManyIncompatibilities)?;
        Ok(())
    }
}

/// Avro's promotions: int to long, float or double; long to float or double; float to
/// double; string and bytes both ways.
fn is_promotion(reader: AvroType, writer: AvroType) -> bool {
    matches!(
        (reader, writer),
        (
            AvroType::Primitive(Primitive::Long),
            AvroType::Primitive(Primitive::Int)
        ) | (
            AvroType::Primitive(Primitive::Float),
            AvroType::Primitive(Primitive::Int | Primitive::Long)
        ) | (
            AvroType::Primitive(Primitive::Double),
            AvroType::Primitive(Primitive::Int | Primitive::Long | Primitive::Float)
        ) | (
            AvroType::Primitive(Primitive::Bytes),
            AvroType::Primitive(Primitive::String)
        ) | (
            AvroType::Primitive(Primitive::String),
            AvroType::Primitive(Primitive::Bytes)
        )
    )
}

/// Avro's `lookupWriterField`: by the reader field's name, then by each of its aliases;
/// `Err` when more than one writer field matches (Avro throws).
fn lookup_writer_field<'f>(
    writer_fields: &'f [Field],
    reader_field: &Field,
) -> Result<Option<&'f Field>, ()> {
    let mut candidates = writer_fields
        .iter()
        .find(|writer_field| writer_field.name == reader_field.name)
        .into_iter()
        .chain(reader_field.aliases.iter().filter_map(|alias| {
            writer_fields
                .iter()
                .find(|writer_field| writer_field.name == *alias)
        }));
    let first = candidates.next();
    match candidates.next() {
        Some(_) => Err(()),
        None => Ok(first),
    }
}

#[inline(never)]
fn ambiguous_field(
    reader_graph: &SchemaGraph,
    writer_graph: &SchemaGraph,
    reader_field: &Field,
    position: usize,
    writer: NodeId,
) -> CheckAborted {
    CheckAborted::AmbiguousField(format!(
        "Reader record field {} type:{} pos:{position} matches multiple fields in writer record \
         schema {}",
        reader_field.name,
        reader_graph.avro_type(reader_field.schema).upper_name(),
        writer_graph.resolved_text(writer)
    ))
}

#[inline(never)]
fn type_mismatch(
    reader_type: AvroType,
    writer_type: AvroType,
    location: &[String],
) -> Incompatibility {
    Incompatibility::new(
        IncompatibilityType::TypeMismatch,
        format!(
            "reader type: {} not compatible with writer type: {}",
            reader_type.upper_name(),
            writer_type.upper_name()
        ),
        location,
    )
}

#[inline(never)]
fn missing_union_branch(writer_type: AvroType, location: &[String]) -> Incompatibility {
    Incompatibility::new(
        IncompatibilityType::MissingUnionBranch,
        format!(
            "reader union lacking writer type: {}",
            writer_type.upper_name()
        ),
        location,
    )
}

/// Avro's `schemaNameEquals`: the same short name (namespaces are not compared), or the
/// writer's full name among the reader's aliases.
#[inline(never)]
fn name_mismatch(
    reader: &Named,
    writer: &Named,
    location: &mut Vec<String>,
) -> Option<Incompatibility> {
    let writer_full_name = writer.name.full();
    let same = reader.name.name == writer.name.name
        || reader
            .aliases
            .iter()
            .any(|alias| alias.alias_full_name(reader.name.space.as_deref()) == writer_full_name);
    if same {
        return None;
    }
    location.push("name".to_owned());
    let mismatch = Incompatibility::new(
        IncompatibilityType::NameMismatch,
        format!("expected: {writer_full_name}"),
        location,
    );
    location.pop();
    Some(mismatch)
}

/// What differs between two enums or two fixed types (primitives never differ from their
/// own type).
#[inline(never)]
fn named_leaf_incompatibilities(
    reader: &Kind,
    writer: &Kind,
    location: &mut Vec<String>,
) -> Vec<Incompatibility> {
    let mut found = Vec::new();
    match (reader, writer) {
        (
            Kind::Fixed {
                named: reader_named,
                size: reader_size,
            },
            Kind::Fixed {
                named: writer_named,
                size: writer_size,
            },
        ) => {
            found.extend(name_mismatch(reader_named, writer_named, location));
            if reader_size != writer_size {
                location.push("size".to_owned());
                found.push(Incompatibility::new(
                    IncompatibilityType::FixedSizeMismatch,
                    format!("expected: {writer_size}, found: {reader_size}"),
                    location,
                ));
                location.pop();
            }
        }
        (
            Kind::Enum {
                named: reader_named,
                symbols: reader_symbols,
                default: reader_default,
            },
            Kind::Enum {
                named: writer_named,
                symbols: writer_symbols,
                ..
            },
        ) => {
            found.extend(name_mismatch(reader_named, writer_named, location));
            let mut missing: Vec<&str> = writer_symbols
                .iter()
                .filter(|symbol| !reader_symbols.contains(symbol))
                .map(String::as_str)
                .collect();
            missing.sort_unstable();
            // A reader enum with a default reads unknown symbols as that default.
            let has_default = reader_default
                .as_ref()
                .is_some_and(|default| reader_symbols.contains(default));
            if !missing.is_empty() && !has_default {
                location.push("symbols".to_owned());
                found.push(Incompatibility::new(
                    IncompatibilityType::MissingEnumSymbols,
                    format!("[{}]", missing.join(", ")),
                    location,
                ));
                location.pop();
            }
        }
        _ => {}
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(schema: &str) -> AvroSchema {
        AvroSchema::parse(schema, &[])
            .unwrap_or_else(|error| panic!("{schema} should parse: {error}"))
    }

    fn reference(name: &str, schema: &str) -> ResolvedReference {
        ResolvedReference {
            name: name.to_owned(),
            subject: name.to_owned(),
            version: 1,
            schema: schema.to_owned(),
        }
    }

    /// Expected strings are what Avro's `Schema.toString()` prints for the input (checked
    /// by hand against Avro's `toJson` and Confluent's tests).
    #[test]
    fn canonical_form_is_avro_to_string() {
        let cases: &[(&str, &str)] = &[
            (
                r#"{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}"#,
                r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}"#,
            ),
            // Avro's attribute order, whatever the input's.
            (
                r#"{"fields":[{"type":"string","name":"id"}],"namespace":"com.example","name":"Order","type":"record"}"#,
                r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"}]}"#,
            ),
            // Doc, defaults, order, aliases and custom properties are kept.
            (
                r#"{"type":"record","name":"R","namespace":"a.b","aliases":["Old","x.Y"],"doc":"d","x-custom":{"k":1,"a":[true,null]},"fields":[{"name":"f","type":"int","p":true,"aliases":["g"],"order":"DESCENDING","default":1,"doc":"fd"}]}"#,
                r#"{"type":"record","name":"R","namespace":"a.b","doc":"d","fields":[{"name":"f","type":"int","doc":"fd","default":1,"order":"descending","aliases":["g"],"p":true}],"x-custom":{"k":1,"a":[true,null]},"aliases":["Old","x.Y"]}"#,
            ),
            (r#""string""#, r#""string""#),
            (r#"{"type":"string"}"#, r#""string""#),
            // Reserved attributes mean nothing on a primitive and are dropped, as by Avro.
            (r#"{"type":"string","doc":"d","name":"n"}"#, r#""string""#),
            (
                r#"{"type":"long","logicalType":"timestamp-millis"}"#,
                r#"{"type":"long","logicalType":"timestamp-millis"}"#,
            ),
            (
                r#"{"type":"bytes","scale":2,"precision":4,"logicalType":"decimal"}"#,
                r#"{"type":"bytes","scale":2,"precision":4,"logicalType":"decimal"}"#,
            ),
            (
                r#"["null",{"type":"array","items":"int"},{"type":"map","values":{"type":"string","avro.java.string":"String"}}]"#,
                r#"["null",{"type":"array","items":"int"},{"type":"map","values":{"type":"string","avro.java.string":"String"}}]"#,
            ),
            // Namespaces: omitted when inherited, "" for the null namespace inside another,
            // later uses by the shortest name that reads back the same.
            (
                r#"{"type":"record","name":"Outer","namespace":"a","fields":[
                    {"name":"same","type":{"type":"record","name":"Inner","fields":[]}},
                    {"name":"other","type":{"type":"enum","name":"b.E","symbols":["X"]}},
                    {"name":"none","type":{"type":"fixed","name":"F","namespace":"","size":2}},
                    {"name":"again","type":"Inner"},
                    {"name":"againE","type":"b.E"},
                    {"name":"againF","type":"F"}]}"#,
                r#"{"type":"record","name":"Outer","namespace":"a","fields":[{"name":"same","type":{"type":"record","name":"Inner","fields":[]}},{"name":"other","type":{"type":"enum","name":"E","namespace":"b","symbols":["X"]}},{"name":"none","type":{"type":"fixed","name":"F","namespace":"","size":2}},{"name":"again","type":"Inner"},{"name":"againE","type":"b.E"},{"name":"againF","type":"F"}]}"#,
            ),
            // A short name that is a type keyword is printed in full.
            (
                r#"{"type":"record","name":"a.Outer","fields":[{"name":"x","type":{"type":"fixed","name":"record","size":1}},{"name":"y","type":"record"}]}"#,
                r#"{"type":"record","name":"Outer","namespace":"a","fields":[{"name":"x","type":{"type":"fixed","name":"record","size":1}},{"name":"y","type":"a.record"}]}"#,
            ),
            // Numbers as Jackson prints Java's: doubles always with a fraction, string
            // defaults of float fields read as numbers.
            (
                r#"{"type":"record","name":"R","fields":[
                    {"name":"a","type":"double","default":"1.5"},
                    {"name":"b","type":"double","default":1e3},
                    {"name":"c","type":"float","default":12.30},
                    {"name":"d","type":"double","default":"NaN"},
                    {"name":"e","type":"long","default":4000000000},
                    {"name":"f","type":"double","default":1E-5},
                    {"name":"g","type":"double","default":-0.0}]}"#,
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"double","default":1.5},{"name":"b","type":"double","default":1000.0},{"name":"c","type":"float","default":12.3},{"name":"d","type":"double","default":"NaN"},{"name":"e","type":"long","default":4000000000},{"name":"f","type":"double","default":1.0E-5},{"name":"g","type":"double","default":-0.0}]}"#,
            ),
            (
                r#"{"type":"enum","name":"Suit","symbols":["A","B"],"default":"A","doc":"d","aliases":["S"]}"#,
                r#"{"type":"enum","name":"Suit","doc":"d","symbols":["A","B"],"default":"A","aliases":["S"]}"#,
            ),
            (
                r#"{"type":"fixed","size":12,"name":"D","logicalType":"duration"}"#,
                r#"{"type":"fixed","name":"D","size":12,"logicalType":"duration"}"#,
            ),
            // Jackson's escapes: upper-case hex for control characters, `/` and non-ASCII
            // as they are.
            (
                r#"{"type":"record","name":"R","doc":"a\"b\\c\nd\u001fé/","fields":[]}"#,
                r#"{"type":"record","name":"R","doc":"a\"b\\c\nd\u001Fé/","fields":[]}"#,
            ),
            (
                r#"{"type":"error","name":"Oops","fields":[]}"#,
                r#"{"type":"error","name":"Oops","fields":[]}"#,
            ),
            // A type used before its definition (allowed since Avro 1.12) is printed in
            // full where first used.
            (
                r#"{"type":"record","name":"A","fields":[{"name":"b","type":"B"},{"name":"b2","type":{"type":"record","name":"B","fields":[]}}]}"#,
                r#"{"type":"record","name":"A","fields":[{"name":"b","type":{"type":"record","name":"B","fields":[]}},{"name":"b2","type":"B"}]}"#,
            ),
            // The same type defined twice is accepted (Avro 1.12) and printed once.
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"enum","name":"E","symbols":["A"]}},{"name":"b","type":{"type":"enum","name":"E","symbols":["A"],"doc":"again"}}]}"#,
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"enum","name":"E","symbols":["A"]}},{"name":"b","type":"E"}]}"#,
            ),
            (
                r#"{"type":"record","name":"Node","fields":[{"name":"value","type":"int"},{"name":"next","type":["null","Node"],"default":null}]}"#,
                r#"{"type":"record","name":"Node","fields":[{"name":"value","type":"int"},{"name":"next","type":["null","Node"],"default":null}]}"#,
            ),
            // Confluent's AvroSchemaTest.testNormalization.
            (
                r#"{"type":"record","name":"myrecord","doc":"hi\"there","fields":[{"type":"string","name":"f1","doc":"bye\"now"}]}"#,
                r#"{"type":"record","name":"myrecord","doc":"hi\"there","fields":[{"name":"f1","type":"string","doc":"bye\"now"}]}"#,
            ),
            // `{"type": "Name"}` for a defined type, as Avro 1.11 reads it.
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"enum","name":"E","symbols":["A"]}},{"name":"b","type":{"type":"E"}}]}"#,
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"enum","name":"E","symbols":["A"]}},{"name":"b","type":"E"}]}"#,
            ),
        ];
        for (input, expected) in cases {
            let schema = parse(input);
            assert_eq!(schema.canonical(), *expected, "canonical form of {input}");
            assert_eq!(
                parse(expected).canonical(),
                *expected,
                "canonical form is a fixed point"
            );
        }
    }

    #[test]
    fn whitespace_and_comments_do_not_change_the_canonical_form() {
        let compact = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}"#;
        let spread = "{\n  \"type\" : \"record\",\n\t\"name\" : \"Order\", \"namespace\": \"com.example\",\r\n  \
                      \"fields\" : [ { \"name\" : \"id\", \"type\" : \"string\" } ,\n    \
                      { \"name\" : \"amount\", \"type\" : \"double\" } ]\n}\n";
        let commented = "/* an order */ {\"type\":\"record\",\"name\":\"Order\", // its name\n\
                         \"namespace\":\"com.example\",\"fields\":[{\"name\":\"id\",\"type\":\"string\"},\
                         {\"name\":\"amount\",\"type\":\"double\"}]}";
        for input in [compact, spread, commented] {
            assert_eq!(parse(input).canonical(), compact, "{input}");
        }
        // A comment marker inside a string is text.
        let in_string = r#"{"type":"record","name":"R","doc":"a /* b */ // c","fields":[]}"#;
        assert_eq!(parse(in_string).canonical(), in_string);
    }

    /// Expected strings are Confluent's `normalize().canonicalString()`.
    #[test]
    fn normalized_form_is_confluents() {
        let cases: &[(&str, &str)] = &[
            (
                r#"{"type":"record","name":"myrecord","doc":"hi\"there","fields":[{"type":"string","name":"f1","doc":"bye\"now"}]}"#,
                r#"{"type":"record","name":"myrecord","doc":"hi\"there","fields":[{"name":"f1","type":"string","doc":"bye\"now"}]}"#,
            ),
            // Confluent's testNormalizationPreservesMetadataForPrimitiveTypes.
            (
                r#"{"connect.name": "some.scope.Envelope", "fields": [{"default": null, "name": "before", "type": ["null", {"connect.name": "some.scope.Value", "fields": [{"name": "created_at", "type": {"connect.name": "io.debezium.time.Timestamp", "connect.version": 1, "type": "long"}}, {"name":"normal_long", "type":"long"}], "name": "Value", "type": "record"}]}, {"default": null, "name": "after", "type": ["null", "Value"]}], "name": "Envelope", "namespace": "some.scope", "type": "record"}"#,
                r#"{"type":"record","name":"Envelope","namespace":"some.scope","fields":[{"name":"before","type":["null",{"type":"record","name":"Value","fields":[{"name":"created_at","type":{"type":"long","connect.name":"io.debezium.time.Timestamp","connect.version":1}},{"name":"normal_long","type":"long"}],"connect.name":"some.scope.Value"}],"default":null},{"name":"after","type":["null","Value"],"default":null}],"connect.name":"some.scope.Envelope"}"#,
            ),
            // Properties, aliases and object keys sorted.
            (
                r#"{"type":"record","name":"R","namespace":"n","aliases":["Z","A"],"z":1,"a":{"y":2,"b":1},"fields":[{"name":"f","type":"int","aliases":["q","b"],"zz":1,"aa":2,"order":"descending"}]}"#,
                r#"{"type":"record","name":"R","namespace":"n","fields":[{"name":"f","type":"int","order":"descending","aliases":["b","q"],"aa":2,"zz":1}],"a":{"b":1,"y":2},"z":1,"aliases":["A","Z"]}"#,
            ),
            // A logical type's attributes first, when Avro recognizes it.
            (
                r#"{"type":"bytes","scale":2,"precision":4,"logicalType":"decimal"}"#,
                r#"{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}"#,
            ),
            (
                r#"{"type":"long","connect.name":"x","logicalType":"timestamp-millis"}"#,
                r#"{"type":"long","logicalType":"timestamp-millis","connect.name":"x"}"#,
            ),
            (
                r#"{"type":"string","logicalType":"timestamp-millis","connect.name":"x"}"#,
                r#"{"type":"string","connect.name":"x","logicalType":"timestamp-millis"}"#,
            ),
            // Defaults converted to their field's type.
            (
                r#"{"type":"record","name":"R","fields":[
                    {"name":"d","type":"double","default":1},
                    {"name":"f","type":"float","default":0.1},
                    {"name":"u","type":["null","long"],"default":null},
                    {"name":"m","type":{"type":"map","values":"double"},"default":{"b":2,"a":1}},
                    {"name":"b","type":"bytes","default":"\u00ff\u0100"}]}"#,
                r#"{"type":"record","name":"R","fields":[{"name":"d","type":"double","default":1.0},{"name":"f","type":"float","default":0.1},{"name":"u","type":["null","long"],"default":null},{"name":"m","type":{"type":"map","values":"double"},"default":{"a":1.0,"b":2.0}},{"name":"b","type":"bytes","default":"ÿ?"}]}"#,
            ),
            // As Confluent does: a type in the null namespace inside a namespaced one is
            // printed by its bare full name and so moves into the enclosing namespace.
            (
                r#"{"type":"record","name":"a.Outer","fields":[{"name":"i","type":{"type":"record","name":"Inner","namespace":"","fields":[]}}]}"#,
                r#"{"type":"record","name":"Outer","namespace":"a","fields":[{"name":"i","type":{"type":"record","name":"Inner","fields":[]}}]}"#,
            ),
        ];
        for (input, expected) in cases {
            let schema = parse(input);
            assert_eq!(schema.normalized(), *expected, "normalized form of {input}");
            assert_eq!(
                parse(expected).normalized(),
                *expected,
                "normalized form is a fixed point"
            );
        }
    }

    #[test]
    fn schemas_that_differ_only_in_spelling_normalize_the_same() {
        let spellings = [
            r#"{"namespace":"com.example","name":"Order","type":"record","fields":[{"type":"string","name":"id"}],"b":1,"a":2}"#,
            r#"{"type":"record","name":"com.example.Order","a":2,"b":1,"fields":[{"name":"id","type":"string","order":"ascending"}]}"#,
            r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":{"type":"string"}}],"a":2,"b":1}"#,
        ];
        let normalized: Vec<String> = spellings
            .iter()
            .map(|text| parse(text).normalized())
            .collect();
        assert!(
            normalized.iter().all(|form| *form == normalized[0]),
            "{normalized:#?}"
        );
        assert_ne!(
            parse(spellings[0]).canonical(),
            parse(spellings[1]).canonical()
        );
    }

    #[test]
    fn invalid_schemas_are_refused_with_the_reason() {
        let cases: &[(&str, &str)] = &[
            ("not json", "Invalid JSON"),
            ("", "Invalid JSON"),
            (r#""string" "int""#, "Invalid JSON"),
            ("/* never closed", "unterminated /* comment"),
            ("12", "Not an Avro schema"),
            (r#"{"name":"x"}"#, "No type"),
            (r#"{"type":"foo"}"#, "Unknown type \"foo\""),
            (r#""strin""#, "Undefined name: \"strin\""),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"Missing"}]}"#,
                "Undefined name: \"Missing\"",
            ),
            (
                r#"{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"Missing"}]}"#,
                "Undefined name: \"n.Missing\"",
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string","default":null}]}"#,
                r#"Invalid default for field a: null not a "string""#,
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":"1"}]}"#,
                "Invalid default for field a",
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":2147483648}]}"#,
                "Invalid default for field a",
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":["null","string"],"default":1}]}"#,
                r#"Invalid default for field a: 1 not a ["null","string"]"#,
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]},"default":{}}]}"#,
                "Invalid default for field a",
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"double","default":"abc"}]}"#,
                r#"Invalid default for field a: "abc" is not a number"#,
            ),
            (
                r#"{"type":"record","name":"1R","fields":[]}"#,
                "Illegal initial character: 1R",
            ),
            (
                r#"{"type":"record","name":"R-x","fields":[]}"#,
                "Illegal character in: R-x",
            ),
            (
                r#"{"type":"enum","name":"E","symbols":["é"]}"#,
                "Illegal initial character: é",
            ),
            (
                r#"{"type":"record","name":"R","namespace":"com.1x","fields":[]}"#,
                "Namespace part \"1x\" is invalid",
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a-b","type":"int"}]}"#,
                "Illegal character in: a-b",
            ),
            (r#"{"type":"record","name":"R"}"#, "Record has no fields"),
            (r#"{"type":"record","fields":[]}"#, "No name in schema"),
            (
                r#"{"type":"record","name":"R","fields":[{"type":"int"}]}"#,
                "No field name",
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a"}]}"#,
                "No field type",
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"a","type":"long"}]}"#,
                "Duplicate field a in record R",
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int","order":"up"}]}"#,
                "Invalid order \"up\" of field a",
            ),
            (
                r#"{"type":"enum","name":"E","symbols":["A","A"]}"#,
                "Duplicate enum symbol: A",
            ),
            (
                r#"{"type":"enum","name":"E","symbols":["A"],"default":"B"}"#,
                "The Enum Default: B is not in the enum symbol set: [A]",
            ),
            (r#"{"type":"enum","name":"E"}"#, "Enum has no symbols"),
            (r#"{"type":"fixed","name":"F"}"#, "Invalid or no size"),
            (
                r#"{"type":"fixed","name":"F","size":1.5}"#,
                "Invalid or no size",
            ),
            (
                r#"{"type":"fixed","name":"F","size":-1}"#,
                "Invalid fixed size -1",
            ),
            (r#"["string","string"]"#, "Duplicate in union: string"),
            (r#"["null",["int"]]"#, "Nested union"),
            (r#"{"type":"array"}"#, "Array has no items type"),
            (r#"{"type":"map","items":"int"}"#, "Map has no values type"),
            (
                r#"{"type":"record","name":"int","fields":[]}"#,
                "Schemas may not be named after primitives: int",
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"enum","name":"E","symbols":["A"]}},{"name":"b","type":{"type":"enum","name":"E","symbols":["B"]}}]}"#,
                "Can't redefine: E",
            ),
            (
                r#"{"type":"record","name":"R","aliases":"Old","fields":[]}"#,
                "aliases not an array",
            ),
        ];
        for (input, expected) in cases {
            match AvroSchema::parse(input, &[]) {
                Ok(schema) => panic!("{input} should be refused, got {}", schema.canonical()),
                Err(InvalidSchema(message)) => assert!(
                    message.contains(expected),
                    "{input}: {message:?} should contain {expected:?}"
                ),
            }
        }
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

    #[test]
    fn references_are_used_by_name_and_inlined_only_when_resolved() {
        let address = reference(
            "com.example.Address",
            r#"{"type":"record","name":"Address","namespace":"com.example","fields":[{"name":"street","type":"string"},{"name":"country","type":{"type":"enum","name":"Country","symbols":["FR","US"]}}]}"#,
        );
        let customer = r#"{"type":"record","name":"Customer","namespace":"com.example","fields":[
            {"name":"home","type":"Address"},
            {"name":"work","type":["null","com.example.Address"],"default":null}]}"#;
        let schema = AvroSchema::parse(customer, std::slice::from_ref(&address))
            .expect("a schema using a referenced type parses");
        assert_eq!(
            schema.canonical(),
            r#"{"type":"record","name":"Customer","namespace":"com.example","fields":[{"name":"home","type":"Address"},{"name":"work","type":["null","Address"],"default":null}]}"#
        );
        assert_eq!(
            schema.formatted("RESOLVED").as_deref(),
            Some(
                r#"{"type":"record","name":"Customer","namespace":"com.example","fields":[{"name":"home","type":{"type":"record","name":"Address","fields":[{"name":"street","type":"string"},{"name":"country","type":{"type":"enum","name":"Country","symbols":["FR","US"]}}]}},{"name":"work","type":["null","Address"],"default":null}]}"#
            )
        );
        assert_eq!(schema.formatted("serialized"), None);
        assert_eq!(schema.normalized(), schema.canonical());
        // A type nested in a reference is not a reference's own type: Avro inlines it.
        let with_country = AvroSchema::parse(
            r#"{"type":"record","name":"com.example.Shipment","fields":[{"name":"to","type":"Address"},{"name":"origin","type":"Country"}]}"#,
            std::slice::from_ref(&address),
        )
        .expect("nested referenced types are usable");
        assert_eq!(
            with_country.canonical(),
            r#"{"type":"record","name":"Shipment","namespace":"com.example","fields":[{"name":"to","type":"Address"},{"name":"origin","type":{"type":"enum","name":"Country","symbols":["FR","US"]}}]}"#
        );
        // A reference listed twice (two dependents share it) defines the same types again.
        let twice = AvroSchema::parse(customer, &[address.clone(), address.clone()])
            .expect("a type defined again identically is accepted");
        assert_eq!(twice.canonical(), schema.canonical());
        let error = AvroSchema::parse(customer, &[]).expect_err("the reference is needed");
        assert!(
            error.0.contains("Undefined name: \"com.example.Address\""),
            "{error}"
        );
        let broken = reference("com.example.Address", "{");
        let error = AvroSchema::parse(customer, &[broken]).expect_err("a broken reference");
        assert!(
            error
                .0
                .starts_with("Invalid schema reference com.example.Address"),
            "{error}"
        );
    }

    fn messages(reader: &str, writer: &str) -> Vec<String> {
        parse(reader).backward_incompatibilities(&parse(writer))
    }

    /// Expected strings are Confluent's, byte for byte (`Difference.error()` with "new"
    /// for the reader and "old" for the writer).
    #[test]
    fn incompatibilities_are_worded_as_confluent_words_them() {
        let order_v1 =
            r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}"#;
        let cases: &[(&str, &str, &[&str])] = &[
            (
                r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"total","type":"double"}]}"#,
                order_v1,
                &[
                    "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'total' at path '/fields/1' in the new schema has no default value and is missing in the old schema', additionalInfo:'total'}",
                ],
            ),
            (
                r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"int"},{"name":"total","type":"double"}]}"#,
                order_v1,
                &[
                    "{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/0/type') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: INT not compatible with writer type: STRING'}",
                    "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'total' at path '/fields/1' in the new schema has no default value and is missing in the old schema', additionalInfo:'total'}",
                ],
            ),
            (
                r#"{"type":"record","name":"Invoice","fields":[{"name":"id","type":"string"}]}"#,
                order_v1,
                &[
                    "{errorType:'NAME_MISMATCH', description:'The name of the schema has changed (path '/name')', additionalInfo:'expected: Order'}",
                ],
            ),
            (
                r#"{"type":"enum","name":"E","symbols":["A"]}"#,
                r#"{"type":"enum","name":"E","symbols":["C","A","B"]}"#,
                &[
                    "{errorType:'MISSING_ENUM_SYMBOLS', description:'The new schema is missing enum symbols '[B, C]' at path '/symbols' in the old schema', additionalInfo:'[B, C]'}",
                ],
            ),
            (
                r#"{"type":"fixed","name":"F","size":4}"#,
                r#"{"type":"fixed","name":"F","size":8}"#,
                &[
                    "{errorType:'FIXED_SIZE_MISMATCH', description:'The size of FIXED type field at path '/size' in the new schema does not match with the old schema', additionalInfo:'expected: 8, found: 4'}",
                ],
            ),
            (
                r#"["null","string"]"#,
                r#"["null","string","int"]"#,
                &[
                    "{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a union field at path '/2' in the old schema', additionalInfo:'reader union lacking writer type: INT'}",
                ],
            ),
            (
                r#""string""#,
                r#"["null","string"]"#,
                &[
                    "{errorType:'TYPE_MISMATCH', description:'The type (path '/0') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: STRING not compatible with writer type: NULL'}",
                ],
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"u","type":["null","int"]}]}"#,
                r#"{"type":"record","name":"R","fields":[{"name":"u","type":"string"}]}"#,
                &[
                    "{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a union field at path '/fields/0/type' in the old schema', additionalInfo:'reader union lacking writer type: STRING'}",
                ],
            ),
            // What is wrong inside a union branch is not detailed, as in Avro.
            (
                r#"{"type":"record","name":"R","fields":[{"name":"u","type":["null",{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}]}]}"#,
                r#"{"type":"record","name":"R","fields":[{"name":"u","type":["null",{"type":"record","name":"S","fields":[]}]}]}"#,
                &[
                    "{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a union field at path '/fields/0/type/1' in the old schema', additionalInfo:'reader union lacking writer type: RECORD'}",
                ],
            ),
            (
                r#"{"type":"array","items":"int"}"#,
                r#"{"type":"array","items":"long"}"#,
                &[
                    "{errorType:'TYPE_MISMATCH', description:'The type (path '/items') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: INT not compatible with writer type: LONG'}",
                ],
            ),
            (
                r#"{"type":"map","values":"boolean"}"#,
                r#"{"type":"array","items":"boolean"}"#,
                &[
                    "{errorType:'TYPE_MISMATCH', description:'The type (path '/') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: MAP not compatible with writer type: ARRAY'}",
                ],
            ),
            // Namespaces are not compared, aliases are honoured, promotions allowed.
            (
                r#"{"type":"record","name":"x.Order","fields":[{"name":"id","type":"string"}]}"#,
                r#"{"type":"record","name":"y.Order","fields":[{"name":"id","type":"string"}]}"#,
                &[],
            ),
            (
                r#"{"type":"record","name":"Purchase","aliases":["Order"],"fields":[{"name":"key","aliases":["id"],"type":"bytes"}]}"#,
                order_v1,
                &[],
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":"double"},{"name":"c","type":"float"},{"name":"d","type":"string"}]}"#,
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"float"},{"name":"c","type":"long"},{"name":"d","type":"bytes"}]}"#,
                &[],
            ),
            // A reader enum with a default reads symbols it lacks.
            (
                r#"{"type":"enum","name":"E","symbols":["A","UNKNOWN"],"default":"UNKNOWN"}"#,
                r#"{"type":"enum","name":"E","symbols":["A","B"]}"#,
                &[],
            ),
            // A reader field matched by its name and by an alias: Avro throws.
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","aliases":["b"],"type":"int"}]}"#,
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int"}]}"#,
                &[
                    r#"Unexpected exception during compatibility check: Reader record field a type:INT pos:0 matches multiple fields in writer record schema {"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int"}]}"#,
                ],
            ),
        ];
        for (reader, writer, expected) in cases {
            assert_eq!(
                messages(reader, writer),
                *expected,
                "reader {reader}, writer {writer}"
            );
        }
    }

    #[test]
    fn recursive_schemas_are_checked_without_looping() {
        let list = |value_type: &str| {
            format!(
                r#"{{"type":"record","name":"Node","fields":[{{"name":"value","type":"{value_type}"}},{{"name":"next","type":["null","Node"],"default":null}}]}}"#
            )
        };
        assert!(messages(&list("long"), &list("int")).is_empty());
        assert_eq!(
            messages(&list("string"), &list("int")),
            [
                "{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/0/type') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: STRING not compatible with writer type: INT'}"
            ]
        );
        // Mutually recursive types.
        let tree = r#"{"type":"record","name":"Tree","fields":[{"name":"children","type":{"type":"array","items":{"type":"record","name":"Branch","fields":[{"name":"tree","type":"Tree"},{"name":"weight","type":"int"}]}}}]}"#;
        assert!(messages(tree, tree).is_empty());
    }

    #[test]
    fn java_number_formatting() {
        let doubles: &[(f64, &str)] = &[
            (1.0, "1.0"),
            (1000.0, "1000.0"),
            (1234567.0, "1234567.0"),
            (1.0e7, "1.0E7"),
            (12345678.9, "1.23456789E7"),
            (0.001, "0.001"),
            (0.0001, "1.0E-4"),
            (-1.5e-5, "-1.5E-5"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (2e23, "2.0E23"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (value, expected) in doubles {
            assert_eq!(java_double(*value), *expected, "{value}");
        }
        assert_eq!(java_float(0.1), "0.1");
        assert_eq!(java_float(12.3), "12.3");
        assert_eq!(java_float(1.0e10), "1.0E10");
        let parsed: &[(&str, Option<f64>)] = &[
            ("1.5", Some(1.5)),
            (" -2 ", Some(-2.0)),
            ("1e3", Some(1000.0)),
            ("2.5f", Some(2.5)),
            (".5", Some(0.5)),
            ("-Infinity", Some(f64::NEG_INFINITY)),
            ("inf", None),
            ("abc", None),
            ("", None),
            ("0x10", None),
        ];
        for (text, expected) in parsed {
            assert_eq!(java_parse_double(text), *expected, "{text:?}");
        }
    }

    /// A cycle of `length` records, each holding the next, optionally through a union.
    fn record_cycle(length: usize, optional: bool) -> String {
        let mut schema = "\"N0\"".to_owned();
        for level in (0..length).rev() {
            if optional {
                schema = format!(r#"["null",{schema}]"#);
            }
            schema = format!(
                r#"{{"type":"record","name":"N{level}","fields":[{{"name":"next","type":{schema}}}]}}"#
            );
        }
        schema
    }

    #[test]
    fn checks_of_long_recursive_cycles_stop_at_the_depth_limit() {
        // A 33-cycle read as a 34-cycle meets a (reader, writer) pair again only after
        // 33 * 34 records, past the limit; reaching the limit fits in half the 2 MiB stack
        // of a Tokio worker, even in a debug build.
        let (reader, writer) = (record_cycle(33, false), record_cycle(34, false));
        let reasons = std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || messages(&reader, &writer))
            .expect("a thread")
            .join()
            .expect("no stack overflow");
        assert_eq!(
            reasons,
            [format!(
                "Unexpected exception during compatibility check: the schemas nest deeper than \
                 {CHECK_DEPTH_MAX} levels"
            )]
        );
        // A 15-cycle read as a 16-cycle finishes within the limit.
        let reasons = messages(&record_cycle(15, false), &record_cycle(16, false));
        assert!(
            reasons[0].starts_with("{errorType:'NAME_MISMATCH'"),
            "{reasons:?}"
        );
        // A 3-cycle read as a 4-cycle differs where the cycles part, inside unions.
        assert_eq!(
            messages(&record_cycle(3, true), &record_cycle(4, true)),
            [
                "{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a union field at path '/fields/0/type/1' in the old schema', additionalInfo:'reader union lacking writer type: RECORD'}"
            ]
        );
        assert!(messages(&record_cycle(3, true), &record_cycle(3, true)).is_empty());
    }

    #[test]
    fn schemas_nesting_past_the_limit_are_refused_not_overflowed() {
        // Each reference nests 40 records (120 JSON levels, near serde_json's 128); chained,
        // four of them pass the limit once resolved.
        let mut references = Vec::new();
        let mut previous: Option<String> = None;
        for document in 0..4 {
            let mut schema = match &previous {
                Some(name) => format!("\"{name}\""),
                None => "\"int\"".to_owned(),
            };
            for level in 0..40 {
                schema = format!(
                    r#"{{"type":"record","name":"D{document}L{level}","fields":[{{"name":"f","type":{schema}}}]}}"#
                );
            }
            references.push(reference(&format!("D{document}L39"), &schema));
            previous = Some(format!("D{document}L39"));
        }
        let using = |name: &str| {
            format!(r#"{{"type":"record","name":"Top","fields":[{{"name":"f","type":"{name}"}}]}}"#)
        };
        let outcome = std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || {
                let error = AvroSchema::parse(&using("D3L39"), &references)
                    .expect_err("four chained references are too deep");
                assert!(error.0.contains("nests deeper than"), "{error}");
                let deepest = AvroSchema::parse(&using("D2L39"), &references[..3])
                    .expect("three chained references resolve within the limit");
                assert!(deepest.backward_incompatibilities(&deepest).is_empty());
                assert_eq!(deepest.normalized(), deepest.canonical());
            })
            .expect("a thread")
            .join();
        assert!(
            outcome.is_ok(),
            "no stack overflow and the expected outcomes"
        );
    }
}
