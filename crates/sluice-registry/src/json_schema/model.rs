//! The model Confluent's rules compare: everit's reading of a schema, one node per
//! subschema (`StringSchema`, `NumberSchema`, `ObjectSchema`, ..., a synthetic `allOf` when
//! one schema object holds several kinds of constraint), with `$ref`s pointing at the node
//! they resolved to.

use std::sync::Arc;

use jsonschema::Validator;
use serde_json::Value;

pub(super) type NodeId = usize;

/// The node every unresolvable `$ref` points to: the empty schema.
pub(super) const UNRESOLVED: NodeId = 0;

/// A schema document: the root (index 0) or a referenced schema, with the URIs it is
/// registered under (the first is the base its relative references resolve against).
#[derive(Debug)]
pub(super) struct Document {
    pub(super) value: Value,
    pub(super) uris: Vec<String>,
}

/// One schema, read into the model: the root and every subschema reachable from it.
#[derive(Debug)]
pub(super) struct Model {
    pub(super) documents: Vec<Document>,
    pub(super) nodes: Vec<Node>,
    pub(super) root: NodeId,
}

#[derive(Debug)]
pub(super) struct Node {
    pub(super) kind: Kind,
    pub(super) annotations: Annotations,
    pub(super) origin: Origin,
}

/// The keywords every kind of schema carries (everit's common properties).
#[derive(Debug, Default)]
pub(super) struct Annotations {
    pub(super) id: Option<String>,
    pub(super) title: Option<String>,
    pub(super) description: Option<String>,
    pub(super) default: Option<Value>,
    /// `"connect.type": "bytes"`: Kafka Connect's decimal as bytes, which Confluent lets
    /// change between `string` and `number`.
    pub(super) connect_bytes: bool,
}

/// Where a node was read from, to tell two subschemas of a `oneOf`/`anyOf`/`allOf` apart the
/// way Confluent does (by their JSON): the schema object at `pointer`, or one `part` of it
/// when one object holds several kinds of constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Origin {
    pub(super) document: usize,
    pub(super) pointer: String,
    pub(super) part: Part,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    Whole,
    Keyword(&'static str),
    Typed(&'static str),
    Sniffed(&'static str),
    TypeList,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Criterion {
    All,
    Any,
    One,
}

impl Criterion {
    pub(super) fn keyword(self) -> &'static str {
        match self {
            Criterion::All => "allOf",
            Criterion::Any => "anyOf",
            Criterion::One => "oneOf",
        }
    }
}

/// everit's schema classes; two nodes of different kinds are a `TYPE_CHANGED` to Confluent.
#[derive(Debug)]
pub(super) enum Kind {
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
    pub(super) fn class(&self) -> u8 {
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

    pub(super) fn is_combined(&self) -> bool {
        matches!(self, Kind::Combined(..))
    }

    /// everit's `EmptySchema`, which `TrueSchema` extends.
    pub(super) fn is_empty_schema(&self) -> bool {
        matches!(self, Kind::Empty | Kind::True)
    }
}

#[derive(Debug, Default)]
pub(super) struct StringKind {
    pub(super) min_length: Option<f64>,
    pub(super) max_length: Option<f64>,
    pub(super) pattern: Option<String>,
}

#[derive(Debug, Default)]
pub(super) struct NumberKind {
    pub(super) minimum: Option<f64>,
    pub(super) maximum: Option<f64>,
    pub(super) exclusive_minimum: Option<f64>,
    pub(super) exclusive_maximum: Option<f64>,
    pub(super) multiple_of: Option<f64>,
    pub(super) requires_integer: bool,
}

#[derive(Debug)]
pub(super) struct ObjectKind {
    pub(super) properties: Vec<(String, NodeId)>,
    pub(super) required: Vec<String>,
    pub(super) min_properties: Option<f64>,
    pub(super) max_properties: Option<f64>,
    pub(super) permits_additional: bool,
    pub(super) additional_schema: Option<NodeId>,
    pub(super) pattern_properties: Vec<PatternProperty>,
    pub(super) property_dependencies: Vec<(String, Vec<String>)>,
    pub(super) schema_dependencies: Vec<(String, NodeId)>,
    pub(super) unevaluated: Option<NodeId>,
}

#[derive(Debug)]
pub(super) struct PatternProperty {
    /// The pattern compiled as `{"pattern": ...}`, so it matches as the validator does;
    /// `None` if it does not compile (the property then matches nothing).
    pub(super) matcher: Option<Arc<Validator>>,
    pub(super) schema: NodeId,
}

#[derive(Debug)]
pub(super) struct ArrayKind {
    pub(super) all_items: Option<NodeId>,
    pub(super) tuple_items: Vec<NodeId>,
    pub(super) permits_additional: bool,
    pub(super) additional_schema: Option<NodeId>,
    pub(super) min_items: Option<f64>,
    pub(super) max_items: Option<f64>,
    pub(super) unique_items: bool,
    pub(super) min_contains: Option<f64>,
    pub(super) max_contains: Option<f64>,
    pub(super) unevaluated: Option<NodeId>,
}

impl Model {
    /// Follows `$ref`s to the schema they name (Confluent's `normalizeSchema`), through
    /// chains; a chain that loops or ends nowhere is the empty schema.
    pub(super) fn resolve(&self, mut node: NodeId) -> NodeId {
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
    pub(super) fn same_subschema(&self, a: NodeId, b: NodeId) -> bool {
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
