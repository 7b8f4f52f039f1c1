//! The canonical string: Avro's `Schema.toString(references)`, compact JSON with Avro's
//! attribute order, every attribute of the input kept, and the references' named types
//! written by name; with every named type inlined, the `resolved` format.

use std::collections::HashSet;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::SCHEMA_DEPTH_MAX;
use super::graph::{FieldOrder, Kind, Name, Named, NodeId, SchemaGraph, TooDeep};
use super::jackson::{write_json, write_json_string};

impl SchemaGraph {
    // --- Avro's `Schema.toString` -------------------------------------------------------

    /// The schema at `id` as Avro's `toString` prints it, with `known_names` printed by name.
    pub(super) fn to_json(&self, id: NodeId, known_names: &[String]) -> Result<String, TooDeep> {
        let mut known: HashSet<String> = known_names.iter().cloned().collect();
        let mut out = String::new();
        self.write_schema(id, &mut known, None, &mut out, 0)?;
        Ok(out)
    }

    /// The schema at `id` with every named type inlined, for messages.
    pub(super) fn resolved_text(&self, id: NodeId) -> String {
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

pub(super) fn write_doc(doc: Option<&str>, out: &mut String) {
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

pub(super) fn write_string_array<'a>(texts: impl Iterator<Item = &'a str>, out: &mut String) {
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

#[cfg(test)]
mod tests {
    use crate::avro::tests::parse;
    use crate::schema::ParsedSchema;

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
}
