//! Avro schemas as Avro's Java library holds and prints them, for the Avro converter: the
//! graph with every property kept (`connect.name`, `connect.type`, `logicalType`, ...),
//! parsed from the registry's text and printed as `Schema.toString()` prints it.
//!
//! Why here and not `apache-avro`: Confluent's `AvroData` reads Connect's metadata from
//! custom properties on any schema, primitives included, which `apache-avro` drops; and a
//! schema the converter registers must be the text Confluent's converter would register
//! (attribute order, `"connect.version":1` before `"connect.name"`, floats as Java prints
//! them), or the registry would take it for a new version.
//!
//! Printing follows Avro's `Schema.toJson`: a primitive without properties is its bare
//! name; a named type is defined where first met and named (relative to the enclosing
//! namespace) afterwards; attributes go `type`, `name`, `namespace`, `doc`, body,
//! properties, `aliases`; a field goes `name`, `type`, `doc`, `default`, `order`,
//! `aliases`, properties. Two different definitions of one name are refused, as Avro
//! refuses them (`Can't redefine`).
//!
//! Limits: nesting is bounded by the JSON reader (Jackson's 1000 levels); named types may
//! refer to themselves (recursive records), which the datum codec bounds separately.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use super::jackson::{self, JsonNode};
use crate::data::DataError;

/// A full name split as Avro splits it: the last dot-separated part is the name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Name {
    pub(crate) name: String,
    /// None for the null namespace (Avro treats `""` the same).
    pub(crate) namespace: Option<String>,
}

impl Name {
    /// `name` in `namespace`; a dotted `name` carries its own namespace.
    pub(crate) fn new(name: &str, namespace: Option<&str>) -> Name {
        match name.rsplit_once('.') {
            Some((space, simple)) => Name {
                name: simple.to_string(),
                namespace: Some(space.to_string()).filter(|s| !s.is_empty()),
            },
            None => Name {
                name: name.to_string(),
                namespace: namespace.filter(|s| !s.is_empty()).map(str::to_string),
            },
        }
    }

    pub(crate) fn full(&self) -> String {
        match &self.namespace {
            Some(space) => format!("{space}.{}", self.name),
            None => self.name.clone(),
        }
    }

    /// `getQualified(space)`: the short name inside its own namespace, else the full one.
    fn qualified(&self, space: Option<&str>) -> String {
        match &self.namespace {
            None => self.name.clone(),
            Some(own) if Some(own.as_str()) == space => self.name.clone(),
            Some(_) => self.full(),
        }
    }
}

/// Custom properties, in the order they were added.
pub(crate) type Props = Vec<(String, JsonNode)>;

/// One node of a schema.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AvroNode {
    pub(crate) kind: AvroKind,
    pub(crate) props: Props,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AvroKind {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Array(Box<AvroNode>),
    Map(Box<AvroNode>),
    Union(Vec<AvroNode>),
    Record(Arc<RecordType>),
    Enum(Arc<EnumType>),
    Fixed(Arc<FixedType>),
    /// A named type defined elsewhere in the schema, by full name.
    Reference(String),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RecordType {
    pub(crate) name: Name,
    pub(crate) doc: Option<String>,
    pub(crate) fields: Vec<AvroField>,
    pub(crate) aliases: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AvroField {
    pub(crate) name: String,
    pub(crate) schema: AvroNode,
    pub(crate) doc: Option<String>,
    pub(crate) default: Option<JsonNode>,
    /// `descending` or `ignore`; none for the default, `ascending`.
    pub(crate) order: Option<String>,
    pub(crate) aliases: Vec<String>,
    pub(crate) props: Props,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EnumType {
    pub(crate) name: Name,
    pub(crate) doc: Option<String>,
    pub(crate) symbols: Vec<String>,
    pub(crate) default: Option<String>,
    pub(crate) aliases: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FixedType {
    pub(crate) name: Name,
    pub(crate) doc: Option<String>,
    pub(crate) size: usize,
    pub(crate) aliases: Vec<String>,
}

impl AvroNode {
    pub(crate) fn new(kind: AvroKind) -> AvroNode {
        AvroNode {
            kind,
            props: Vec::new(),
        }
    }

    /// `addProp`: a property is set once; setting it again to the same value is nothing,
    /// to another value is refused (Avro's `Can't overwrite property`).
    pub(crate) fn add_prop(&mut self, name: &str, value: JsonNode) -> Result<(), DataError> {
        match self.props.iter().find(|(n, _)| n == name) {
            Some((_, existing)) if *existing == value => Ok(()),
            Some(_) => Err(DataError(format!("Can't overwrite property: {name}"))),
            None => {
                self.props.push((name.to_string(), value));
                Ok(())
            }
        }
    }

    pub(crate) fn prop(&self, name: &str) -> Option<&JsonNode> {
        self.props.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// `getProp`: a property's text, none when absent or not text.
    pub(crate) fn text_prop(&self, name: &str) -> Option<&str> {
        self.prop(name).and_then(JsonNode::text_value)
    }

    /// The type's name as Avro's `Schema.Type.getName()` says it.
    pub(crate) fn type_name(&self) -> &'static str {
        match &self.kind {
            AvroKind::Null => "null",
            AvroKind::Boolean => "boolean",
            AvroKind::Int => "int",
            AvroKind::Long => "long",
            AvroKind::Float => "float",
            AvroKind::Double => "double",
            AvroKind::Bytes => "bytes",
            AvroKind::String => "string",
            AvroKind::Array(_) => "array",
            AvroKind::Map(_) => "map",
            AvroKind::Union(_) => "union",
            AvroKind::Record(_) => "record",
            AvroKind::Enum(_) => "enum",
            AvroKind::Fixed(_) => "fixed",
            AvroKind::Reference(_) => "reference",
        }
    }

    /// The full name of a named type (or a reference to one).
    pub(crate) fn full_name(&self) -> Option<String> {
        match &self.kind {
            AvroKind::Record(r) => Some(r.name.full()),
            AvroKind::Enum(e) => Some(e.name.full()),
            AvroKind::Fixed(f) => Some(f.name.full()),
            AvroKind::Reference(full) => Some(full.clone()),
            _ => None,
        }
    }
}

/// A whole Avro schema: its root and every named type it defines, by full name.
#[derive(Debug, Clone)]
pub struct AvroSchema {
    pub(crate) root: AvroNode,
    pub(crate) named: Arc<HashMap<String, AvroNode>>,
}

impl PartialEq for AvroSchema {
    /// Equal when they print the same, as Avro's `Schema.equals` compares.
    fn eq(&self, other: &AvroSchema) -> bool {
        self.to_json().ok() == other.to_json().ok()
    }
}

impl AvroSchema {
    /// A schema built in code: its named types are collected from the graph.
    pub(crate) fn from_root(root: AvroNode) -> AvroSchema {
        let mut named = HashMap::new();
        collect_named(&root, &mut named);
        AvroSchema {
            root,
            named: Arc::new(named),
        }
    }

    /// Parses Avro schema JSON (Avro's `Schema.Parser`, without references to other
    /// documents).
    pub fn parse(text: &str) -> Result<AvroSchema, DataError> {
        let json = jackson::read_tree_doubles(text.as_bytes())
            .map_err(|e| DataError(format!("Invalid Avro schema: {}", e.0)))?;
        let mut parser = Parser {
            named: HashMap::new(),
        };
        let root = parser.node(&json, None)?;
        Ok(AvroSchema {
            root,
            named: Arc::new(parser.named),
        })
    }

    /// `Schema.toString()`: compact JSON in Avro's attribute order.
    pub fn to_json(&self) -> Result<String, DataError> {
        let mut printer = Printer {
            defined: HashMap::new(),
            out: String::new(),
        };
        printer.node(&self.root, None)?;
        Ok(printer.out)
    }

    /// The definition behind a reference (or the node itself).
    pub(crate) fn resolve<'a>(&'a self, node: &'a AvroNode) -> Result<&'a AvroNode, DataError> {
        match &node.kind {
            AvroKind::Reference(full) => self
                .named
                .get(full)
                .ok_or_else(|| DataError(format!("Undefined name: {full}"))),
            _ => Ok(node),
        }
    }
}

fn collect_named(node: &AvroNode, named: &mut HashMap<String, AvroNode>) {
    if let Some(full) = node.full_name()
        && !matches!(node.kind, AvroKind::Reference(_))
    {
        if named.contains_key(&full) {
            return;
        }
        named.insert(full, node.clone());
    }
    match &node.kind {
        AvroKind::Array(items) => collect_named(items, named),
        AvroKind::Map(values) => collect_named(values, named),
        AvroKind::Union(branches) => branches.iter().for_each(|b| collect_named(b, named)),
        AvroKind::Record(record) => record
            .fields
            .iter()
            .for_each(|f| collect_named(&f.schema, named)),
        _ => {}
    }
}

fn primitive(name: &str) -> Option<AvroKind> {
    Some(match name {
        "null" => AvroKind::Null,
        "boolean" => AvroKind::Boolean,
        "int" => AvroKind::Int,
        "long" => AvroKind::Long,
        "float" => AvroKind::Float,
        "double" => AvroKind::Double,
        "bytes" => AvroKind::Bytes,
        "string" => AvroKind::String,
        _ => return None,
    })
}

/// Attributes of a schema object that are not properties.
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
const FIELD_RESERVED: [&str; 6] = ["default", "doc", "name", "order", "type", "aliases"];

struct Parser {
    named: HashMap<String, AvroNode>,
}

fn invalid(message: impl Into<String>) -> DataError {
    DataError(format!("Invalid Avro schema: {}", message.into()))
}

impl Parser {
    fn node(&mut self, json: &JsonNode, space: Option<&str>) -> Result<AvroNode, DataError> {
        match json {
            JsonNode::Text(name) => self.named_or_primitive(name, space),
            JsonNode::Array(branches) => {
                let branches = branches
                    .iter()
                    .map(|b| self.node(b, space))
                    .collect::<Result<_, _>>()?;
                Ok(AvroNode::new(AvroKind::Union(branches)))
            }
            JsonNode::Object(members) => self.object(json, members, space),
            other => Err(invalid(format!(
                "not a schema: {}",
                jackson::write_string(other)
            ))),
        }
    }

    fn named_or_primitive(&self, name: &str, space: Option<&str>) -> Result<AvroNode, DataError> {
        if let Some(kind) = primitive(name) {
            return Ok(AvroNode::new(kind));
        }
        // A name without dots is looked up in the enclosing namespace first, then in
        // the null namespace.
        let full = Name::new(name, space).full();
        for candidate in [full, name.to_string()] {
            if self.named.contains_key(&candidate) {
                return Ok(AvroNode::new(AvroKind::Reference(candidate)));
            }
        }
        Err(invalid(format!("\"{name}\" is not a defined name")))
    }

    fn object(
        &mut self,
        json: &JsonNode,
        members: &[(String, JsonNode)],
        space: Option<&str>,
    ) -> Result<AvroNode, DataError> {
        let Some(type_name) = json.get("type") else {
            return Err(invalid("No type"));
        };
        let JsonNode::Text(type_name) = type_name else {
            // {"type": <schema>} is that schema.
            return self.node(type_name, space);
        };
        let text = |key: &str| {
            json.get(key)
                .and_then(JsonNode::text_value)
                .map(str::to_string)
        };
        let props = |reserved: &[&str]| -> Props {
            members
                .iter()
                .filter(|(k, _)| !reserved.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        let aliases = || -> Vec<String> {
            json.get("aliases")
                .map(|a| {
                    a.elements()
                        .into_iter()
                        .filter_map(|e| e.text_value().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let named = |this: &Parser| -> Result<Name, DataError> {
            let Some(name) = text("name") else {
                return Err(invalid("No name in schema"));
            };
            let namespace = match json.get("namespace") {
                Some(JsonNode::Text(ns)) => Some(ns.as_str()),
                _ => space,
            };
            let name = Name::new(&name, namespace);
            if this.named.contains_key(&name.full()) {
                return Err(invalid(format!("Can't redefine: {}", name.full())));
            }
            Ok(name)
        };
        if let Some(kind) = primitive(type_name) {
            return Ok(AvroNode {
                kind,
                props: props(&SCHEMA_RESERVED),
            });
        }
        let node = match type_name.as_str() {
            "array" => {
                let items = json
                    .get("items")
                    .ok_or_else(|| invalid("Array has no items type"))?;
                AvroNode {
                    kind: AvroKind::Array(Box::new(self.node(items, space)?)),
                    props: props(&SCHEMA_RESERVED),
                }
            }
            "map" => {
                let values = json
                    .get("values")
                    .ok_or_else(|| invalid("Map has no values type"))?;
                AvroNode {
                    kind: AvroKind::Map(Box::new(self.node(values, space)?)),
                    props: props(&SCHEMA_RESERVED),
                }
            }
            "enum" => {
                let name = named(self)?;
                let symbols = json
                    .get("symbols")
                    .filter(|s| matches!(s, JsonNode::Array(_)))
                    .ok_or_else(|| invalid("Enum has no symbols"))?
                    .elements()
                    .into_iter()
                    .map(|s| {
                        s.text_value()
                            .map(str::to_string)
                            .ok_or_else(|| invalid("Enum symbols must be strings"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let mut reserved = SCHEMA_RESERVED.to_vec();
                reserved.push("default");
                let node = AvroNode {
                    kind: AvroKind::Enum(Arc::new(EnumType {
                        name,
                        doc: text("doc"),
                        symbols,
                        default: text("default"),
                        aliases: aliases(),
                    })),
                    props: props(&reserved),
                };
                self.define(&node);
                node
            }
            "fixed" => {
                let name = named(self)?;
                let size = match json.get("size") {
                    Some(size) if size.is_int() && size.int_value() >= 0 => {
                        size.int_value() as usize
                    }
                    _ => return Err(invalid("Invalid or no size")),
                };
                let node = AvroNode {
                    kind: AvroKind::Fixed(Arc::new(FixedType {
                        name,
                        doc: text("doc"),
                        size,
                        aliases: aliases(),
                    })),
                    props: props(&SCHEMA_RESERVED),
                };
                self.define(&node);
                node
            }
            "record" | "error" => {
                let name = named(self)?;
                let record_space = name.namespace.clone();
                // The record is defined before its fields are read, so they may refer to
                // it; the fields are filled in afterwards.
                let placeholder = AvroNode::new(AvroKind::Record(Arc::new(RecordType {
                    name: name.clone(),
                    doc: text("doc"),
                    fields: Vec::new(),
                    aliases: aliases(),
                })));
                self.define(&placeholder);
                let Some(JsonNode::Array(field_nodes)) = json.get("fields") else {
                    return Err(invalid("Record has no fields"));
                };
                let mut fields: Vec<AvroField> = Vec::with_capacity(field_nodes.len());
                for field in field_nodes {
                    let Some(field_name) = field.get("name").and_then(JsonNode::text_value) else {
                        return Err(invalid("No field name"));
                    };
                    if fields.iter().any(|f| f.name == field_name) {
                        return Err(invalid(format!(
                            "Duplicate field {field_name} in record {}",
                            name.full()
                        )));
                    }
                    let field_type = field.get("type").ok_or_else(|| invalid("No field type"))?;
                    let schema = self.node(field_type, record_space.as_deref())?;
                    let JsonNode::Object(field_members) = field else {
                        unreachable!("a field with a name is an object")
                    };
                    fields.push(AvroField {
                        name: field_name.to_string(),
                        schema,
                        doc: field
                            .get("doc")
                            .and_then(JsonNode::text_value)
                            .map(str::to_string),
                        default: field.get("default").cloned(),
                        order: field
                            .get("order")
                            .and_then(JsonNode::text_value)
                            .filter(|o| *o != "ascending")
                            .map(str::to_string),
                        aliases: field
                            .get("aliases")
                            .map(|a| {
                                a.elements()
                                    .into_iter()
                                    .filter_map(|e| e.text_value().map(str::to_string))
                                    .collect()
                            })
                            .unwrap_or_default(),
                        props: field_members
                            .iter()
                            .filter(|(k, _)| !FIELD_RESERVED.contains(&k.as_str()))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect(),
                    });
                }
                let node = AvroNode {
                    kind: AvroKind::Record(Arc::new(RecordType {
                        name: name.clone(),
                        doc: text("doc"),
                        fields,
                        aliases: aliases(),
                    })),
                    props: props(&SCHEMA_RESERVED),
                };
                self.named.insert(name.full(), node.clone());
                node
            }
            // A named type used as {"type": "com.example.Name"}.
            other => {
                let mut node = self.named_or_primitive(other, space)?;
                node.props = props(&SCHEMA_RESERVED);
                node
            }
        };
        Ok(node)
    }

    fn define(&mut self, node: &AvroNode) {
        let full = node.full_name().expect("a named type");
        self.named.insert(full, node.clone());
    }
}

struct Printer<'a> {
    /// Named types printed so far, by full name.
    defined: HashMap<String, &'a AvroNode>,
    out: String,
}

impl<'a> Printer<'a> {
    fn node(&mut self, node: &'a AvroNode, space: Option<&str>) -> Result<(), DataError> {
        match &node.kind {
            AvroKind::Null
            | AvroKind::Boolean
            | AvroKind::Int
            | AvroKind::Long
            | AvroKind::Float
            | AvroKind::Double
            | AvroKind::Bytes
            | AvroKind::String => {
                if node.props.is_empty() {
                    self.text(node.type_name());
                } else {
                    self.out.push_str("{\"type\":");
                    self.text(node.type_name());
                    self.props(&node.props);
                    self.out.push('}');
                }
            }
            AvroKind::Array(items) => {
                self.out.push_str("{\"type\":\"array\",\"items\":");
                self.node(items, space)?;
                self.props(&node.props);
                self.out.push('}');
            }
            AvroKind::Map(values) => {
                self.out.push_str("{\"type\":\"map\",\"values\":");
                self.node(values, space)?;
                self.props(&node.props);
                self.out.push('}');
            }
            AvroKind::Union(branches) => {
                self.out.push('[');
                for (i, branch) in branches.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.node(branch, space)?;
                }
                self.out.push(']');
            }
            AvroKind::Reference(full) => {
                let name = Name::new(full, None);
                self.text(&name.qualified(space));
            }
            AvroKind::Record(record) => {
                if self.name_reference(node, &record.name, space)? {
                    return Ok(());
                }
                self.out.push_str("{\"type\":\"record\"");
                self.name(&record.name, space);
                let inner = record.name.namespace.as_deref();
                if let Some(doc) = &record.doc {
                    self.member("doc");
                    self.text(doc);
                }
                self.member("fields");
                self.out.push('[');
                for (i, field) in record.fields.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.field(field, inner)?;
                }
                self.out.push(']');
                self.props(&node.props);
                self.aliases(&record.aliases);
                self.out.push('}');
            }
            AvroKind::Enum(e) => {
                if self.name_reference(node, &e.name, space)? {
                    return Ok(());
                }
                self.out.push_str("{\"type\":\"enum\"");
                self.name(&e.name, space);
                if let Some(doc) = &e.doc {
                    self.member("doc");
                    self.text(doc);
                }
                self.member("symbols");
                self.out.push('[');
                for (i, symbol) in e.symbols.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.text(symbol);
                }
                self.out.push(']');
                if let Some(default) = &e.default {
                    self.member("default");
                    self.text(default);
                }
                self.props(&node.props);
                self.aliases(&e.aliases);
                self.out.push('}');
            }
            AvroKind::Fixed(f) => {
                if self.name_reference(node, &f.name, space)? {
                    return Ok(());
                }
                self.out.push_str("{\"type\":\"fixed\"");
                self.name(&f.name, space);
                if let Some(doc) = &f.doc {
                    self.member("doc");
                    self.text(doc);
                }
                self.member("size");
                write!(self.out, "{}", f.size).expect("writing to a String");
                self.props(&node.props);
                self.aliases(&f.aliases);
                self.out.push('}');
            }
        }
        Ok(())
    }

    /// `writeNameRef`: a named type already printed is printed by name; another type
    /// by the same name cannot be.
    fn name_reference(
        &mut self,
        node: &'a AvroNode,
        name: &Name,
        space: Option<&str>,
    ) -> Result<bool, DataError> {
        let full = name.full();
        match self.defined.get(&full) {
            Some(existing) if **existing == *node => {
                self.text(&name.qualified(space));
                Ok(true)
            }
            Some(_) => Err(DataError(format!("Can't redefine: {full}"))),
            None => {
                self.defined.insert(full, node);
                Ok(false)
            }
        }
    }

    /// `writeName`: the name, and the namespace unless it is the enclosing one.
    fn name(&mut self, name: &Name, space: Option<&str>) {
        self.member("name");
        self.text(&name.name);
        match (&name.namespace, space) {
            (Some(own), enclosing) if Some(own.as_str()) != enclosing => {
                self.member("namespace");
                self.text(own);
            }
            (None, Some(_)) => {
                self.member("namespace");
                self.text("");
            }
            _ => {}
        }
    }

    fn field(&mut self, field: &'a AvroField, space: Option<&str>) -> Result<(), DataError> {
        self.out.push_str("{\"name\":");
        self.text(&field.name);
        self.member("type");
        self.node(&field.schema, space)?;
        if let Some(doc) = &field.doc {
            self.member("doc");
            self.text(doc);
        }
        if let Some(default) = &field.default {
            self.member("default");
            self.out.push_str(&jackson::write_string(default));
        }
        if let Some(order) = &field.order {
            self.member("order");
            self.text(order);
        }
        self.aliases(&field.aliases);
        self.props(&field.props);
        self.out.push('}');
        Ok(())
    }

    fn member(&mut self, name: &str) {
        self.out.push(',');
        self.text(name);
        self.out.push(':');
    }

    fn text(&mut self, text: &str) {
        self.out
            .push_str(&jackson::write_string(&JsonNode::Text(text.to_string())));
    }

    fn props(&mut self, props: &Props) {
        for (name, value) in props {
            self.member(name);
            self.out.push_str(&jackson::write_string(value));
        }
    }

    fn aliases(&mut self, aliases: &[String]) {
        if aliases.is_empty() {
            return;
        }
        self.member("aliases");
        self.out.push('[');
        for (i, alias) in aliases.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.text(alias);
        }
        self.out.push(']');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_print_in_avro_order() {
        let cases = [
            r#""int""#,
            r#"{"type":"int","connect.type":"int8"}"#,
            r#"{"type":"bytes","scale":2,"precision":64,"connect.version":1,"connect.parameters":{"scale":"2"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}"#,
            r#"["null","string"]"#,
            r#"{"type":"record","name":"Person","namespace":"com.example","doc":"who","fields":[{"name":"name","type":"string","doc":"d","default":"x","order":"descending","aliases":["n"],"p":1},{"name":"friend","type":["null","Person"],"default":null}],"connect.name":"com.example.Person","aliases":["Human"]}"#,
            r#"{"type":"record","name":"A","namespace":"x","fields":[{"name":"b","type":{"type":"record","name":"B","namespace":"","fields":[]}},{"name":"c","type":{"type":"record","name":"C","fields":[{"name":"again","type":["null","C"]}]}}]}"#,
            r#"{"type":"array","items":{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}}"#,
            r#"{"type":"map","values":{"type":"fixed","name":"F","namespace":"n","size":16},"p":"q"}"#,
        ];
        for text in cases {
            let schema = AvroSchema::parse(text).unwrap();
            assert_eq!(schema.to_json().unwrap(), text);
        }
    }

    #[test]
    fn printing_agrees_with_the_registrys_canonical_form() {
        use sluice_registry::schema::ParsedSchema as _;
        let text = r#"{"type":"record","name":"ConnectDefault","namespace":"io.confluent.connect.avro","fields":[{"name":"a","type":{"type":"int","connect.type":"int16"}},{"name":"b","type":["null",{"type":"array","items":{"type":"double","connect.default":1.0E10}}],"default":null},{"name":"c","type":{"type":"record","name":"ConnectDefault2","fields":[{"name":"d","type":"boolean"}]}},{"name":"e","type":"ConnectDefault2"}],"connect.version":3}"#;
        let ours = AvroSchema::parse(text).unwrap().to_json().unwrap();
        let registry = sluice_registry::avro::AvroSchema::parse(text, &[]).unwrap();
        assert_eq!(ours, registry.canonical());
        assert_eq!(ours, text);
    }

    #[test]
    fn names_are_defined_once() {
        assert!(AvroSchema::parse(r#"{"type":"record","name":"A","fields":[{"name":"x","type":{"type":"record","name":"A","fields":[]}}]}"#).is_err());
        assert!(AvroSchema::parse(r#""Nope""#).is_err());
        let record = |field: &str| {
            AvroNode::new(AvroKind::Record(Arc::new(RecordType {
                name: Name::new("R", None),
                doc: None,
                fields: vec![AvroField {
                    name: field.into(),
                    schema: AvroNode::new(AvroKind::Int),
                    doc: None,
                    default: None,
                    order: None,
                    aliases: vec![],
                    props: vec![],
                }],
                aliases: vec![],
            })))
        };
        let two_different = AvroSchema::from_root(AvroNode::new(AvroKind::Union(vec![
            record("a"),
            record("b"),
        ])));
        assert_eq!(two_different.to_json().unwrap_err().0, "Can't redefine: R");
        let same_twice = AvroSchema::from_root(AvroNode::new(AvroKind::Union(vec![
            record("a"),
            record("a"),
        ])));
        assert_eq!(
            same_twice.to_json().unwrap(),
            r#"[{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]},"R"]"#
        );
    }
}
