//! The normalized text: Confluent's `AvroSchemaUtils.toNormalizedString` (full names,
//! reserved attributes in a fixed order, custom properties and aliases sorted, defaults
//! converted to their field's type as Avro's `JacksonUtils.toObject` converts them, the
//! logical type's attributes first), which `normalize()` parses again.

use std::collections::HashSet;
use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

use super::SCHEMA_DEPTH_MAX;
use super::canonical::{write_doc, write_string_array};
use super::graph::{Field, FieldOrder, Kind, NodeId, Primitive, SchemaGraph, TooDeep};
use super::jackson::{
    java_double, java_float, utf16_order, write_java_number, write_json, write_json_string,
};

/// Properties that make Avro ignore a logical type (`LogicalType.INCOMPATIBLE_PROPS`).
const LOGICAL_TYPE_INCOMPATIBLE: [&str; 4] = [
    "avro.java.string",
    "java-class",
    "java-key-class",
    "java-element",
];

/// A logical type Avro recognizes and accepts on its underlying type; others are only
/// properties.
struct LogicalType {
    name: &'static str,
    /// Precision and scale of a decimal.
    decimal: Option<(i64, i64)>,
}

impl SchemaGraph {
    // --- Confluent's `AvroSchemaUtils.toNormalizedString` --------------------------------

    /// The normalized text before it is parsed again: named types by full name (the
    /// references' top-level types by name only), reserved attributes in a fixed order,
    /// custom properties and aliases sorted, defaults converted to their field's type.
    pub(super) fn normalized_text(
        &self,
        root: NodeId,
        reference_names: &[String],
    ) -> Result<String, TooDeep> {
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

#[cfg(test)]
mod tests {
    use crate::avro::tests::parse;
    use crate::schema::ParsedSchema;

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
}
