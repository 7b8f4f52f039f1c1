//! Reading a JSON Schema document: the JSON itself (an object or a boolean, bounded in
//! depth), the draft it is written in, its check against that draft's meta-schema, the
//! documents of its references and the URIs they are found at, and the compiled validator
//! records are checked with. Also the URI and JSON-pointer helpers the loader resolves
//! `$ref`s with.

use jsonschema::{Draft, Registry, Validator};
use serde_json::Value;

use super::canonical::LiteralJson;
use super::model::{Document, Model};
use super::{JsonSchema, MAX_SCHEMA_DEPTH};
use crate::schema::{InvalidSchema, ResolvedReference};

/// The base URI of a schema without `$id`, as the `jsonschema` crate uses it: a reference
/// named `address.json` is found at `json-schema:///address.json`.
pub(super) const DEFAULT_BASE_URI: &str = "json-schema:///";

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
}

fn invalid(message: impl Into<String>) -> InvalidSchema {
    InvalidSchema(message.into())
}

/// Reads a schema document: JSON, an object or a boolean, at most [`MAX_SCHEMA_DEPTH`] deep.
pub(super) fn read_document(text: &str) -> Result<Value, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|error| format!("Invalid JSON: {error}"))?;
    if !(value.is_object() || value.is_boolean()) {
        return Err("Invalid JSON schema: a schema is a JSON object or a boolean".to_owned());
    }
    check_depth(&value)?;
    Ok(value)
}

/// Refuses values nested deeper than [`MAX_SCHEMA_DEPTH`], without recursing.
pub(super) fn check_depth(value: &Value) -> Result<(), String> {
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

pub(super) fn id_keyword(draft: Draft) -> &'static str {
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
pub(super) fn resolve_uri(base: &str, reference: &str) -> Option<String> {
    let base = jsonschema::uri::from_str(base).ok()?;
    let resolved = jsonschema::uri::resolve_against(&base.borrow(), reference).ok()?;
    Some(resolved.as_str().to_owned())
}

pub(super) fn strip_fragment(uri: &str) -> &str {
    uri.split_once('#').map_or(uri, |(before, _)| before)
}

pub(super) fn percent_decode(text: &str) -> String {
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

pub(super) fn push_pointer_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            _ => pointer.push(c),
        }
    }
}

pub(super) fn unescape_pointer_token(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_schema::tests::{parse, reference};
    use crate::schema::ParsedSchema;

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
}
