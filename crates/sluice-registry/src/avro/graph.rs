//! The schema graph: Avro's `Schema` objects as nodes of one graph shared by a schema and
//! its references (primitives, records with their fields, enums, fixed types, arrays,
//! maps, unions), names as Avro splits and checks them, and the two questions Avro asks of
//! a parsed type: whether a default fits it (`isValidDefault`) and whether two definitions
//! are the same type (`equals`).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::SCHEMA_DEPTH_MAX;
use crate::schema::InvalidSchema;

/// Index of a node in its [`SchemaGraph`]. As in Avro's object graph, every occurrence of a
/// primitive, array, map or union is its own node, while every use of a named type points at
/// the one node that defines it; compatibility memoization relies on that identity.
pub(super) type NodeId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Primitive {
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
    pub(super) fn from_name(name: &str) -> Option<Primitive> {
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

    pub(super) fn name(self) -> &'static str {
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
pub(super) enum AvroType {
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
    pub(super) fn upper_name(self) -> &'static str {
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
pub(super) struct Name {
    pub(super) name: String,
    pub(super) space: Option<String>,
}

impl Name {
    /// Avro's `new Name(name, space)`: a dotted name carries its own namespace; an empty
    /// namespace is none. The name part is validated here, the namespace when the type is
    /// defined (aliases keep theirs unchecked, as in Avro).
    pub(super) fn parse(raw: &str, default_space: Option<&str>) -> Result<Name, InvalidSchema> {
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

    pub(super) fn full(&self) -> String {
        match &self.space {
            Some(space) => format!("{space}.{}", self.name),
            None => self.name.clone(),
        }
    }

    /// Avro's `Name.getQualified`: the short name inside its own namespace.
    pub(super) fn qualified(&self, current_space: Option<&str>) -> String {
        match (self.space.as_deref(), current_space) {
            (Some(space), Some(current)) if space == current && !is_type_keyword(&self.name) => {
                self.name.clone()
            }
            _ => self.full(),
        }
    }

    /// An alias as Avro's `getAliases()` lists it: its full name, or `.name` for an alias
    /// explicitly in the null namespace of a type that has one.
    pub(super) fn alias_full_name(&self, owner_space: Option<&str>) -> String {
        if self.space.is_none() && owner_space.is_some() {
            format!(".{}", self.name)
        } else {
            self.full()
        }
    }
}

/// Avro's strict name rule (what Confluent applies to a new schema): a letter or `_`, then
/// letters, digits or `_`, all ASCII.
pub(super) fn validate_name(name: &str) -> Result<(), String> {
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
pub(super) struct Named {
    pub(super) name: Name,
    pub(super) doc: Option<String>,
    /// In declaration order, without repeats (Avro keeps them in a `LinkedHashSet`).
    pub(super) aliases: Vec<Name>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FieldOrder {
    Ascending,
    Descending,
    Ignore,
}

#[derive(Debug)]
pub(super) struct Field {
    pub(super) name: String,
    pub(super) doc: Option<String>,
    pub(super) schema: NodeId,
    pub(super) default: Option<Value>,
    /// A float or double default written as `"NaN"` or `"Infinity"`: Avro reads it as that
    /// number, and Jackson prints such a number quoted, so it is kept as that string.
    pub(super) default_is_non_finite: bool,
    pub(super) order: FieldOrder,
    pub(super) aliases: Vec<String>,
    pub(super) properties: Map<String, Value>,
}

#[derive(Debug)]
pub(super) enum Kind {
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
pub(super) struct Node {
    pub(super) kind: Kind,
    /// Custom properties (every non-reserved attribute, `logicalType` included), in the
    /// order of the input.
    pub(super) properties: Map<String, Value>,
}

/// Printing or comparing went deeper than [`SCHEMA_DEPTH_MAX`].
#[derive(Debug)]
pub(super) struct TooDeep;

#[derive(Debug, Default)]
pub(super) struct SchemaGraph {
    pub(super) nodes: Vec<Node>,
}

impl SchemaGraph {
    pub(super) fn push(&mut self, kind: Kind, properties: Map<String, Value>) -> NodeId {
        self.nodes.push(Node { kind, properties });
        self.nodes.len() - 1
    }

    pub(super) fn named(&self, id: NodeId) -> Option<&Named> {
        match &self.nodes[id].kind {
            Kind::Record { named, .. } | Kind::Enum { named, .. } | Kind::Fixed { named, .. } => {
                Some(named)
            }
            _ => None,
        }
    }

    pub(super) fn avro_type(&self, id: NodeId) -> AvroType {
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
    pub(super) fn union_key(&self, id: NodeId) -> String {
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

    // --- Avro's `Schema.isValidDefault` -------------------------------------------------

    pub(super) fn is_valid_default(&self, id: NodeId, value: &Value, depth: usize) -> bool {
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
    pub(super) fn same_definition(
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
