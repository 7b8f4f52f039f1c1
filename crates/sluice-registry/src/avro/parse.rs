//! Parsing an Avro schema as Avro's `Schema.Parser` does for Confluent: each document (the
//! references, then the schema) read into the shared graph, names checked and defined,
//! forward references resolved at the end of the document, defaults validated, and JSON
//! comments allowed.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde_json::{Map, Number, Value};

use super::graph::{
    Field, FieldOrder, Kind, Name, Named, NodeId, Primitive, SchemaGraph, validate_name,
};
use super::jackson::{java_double, java_parse_double, json_text};
use super::{AvroSchema, SCHEMA_DEPTH_MAX};
use crate::schema::{InvalidSchema, ResolvedReference};

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
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ParsedSchema;

    fn reference(name: &str, schema: &str) -> ResolvedReference {
        ResolvedReference {
            name: name.to_owned(),
            subject: name.to_owned(),
            version: 1,
            schema: schema.to_owned(),
        }
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
