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
//!
//! The code: `parse` reads a schema document and its references (the draft, the
//! meta-schema check, the URIs the references are found at, the compiled validator);
//! `canonical` prints Confluent's canonical and normalized strings; `model` is the model the
//! rules compare and `load` reads the documents into it, resolving `$ref`s; `difference`
//! holds Confluent's difference types and their messages; and `compatibility` walks two
//! models side by side and records their differences.

mod canonical;
mod compatibility;
mod difference;
mod load;
mod model;
mod parse;

use std::any::Any;
use std::fmt;

use jsonschema::Validator;
use serde_json::Value;

use self::model::Model;
use crate::schema::{ParsedSchema, SchemaType};

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Map;

    use crate::schema::ResolvedReference;

    pub(super) fn parse(schema: &str) -> JsonSchema {
        JsonSchema::parse(schema, &[]).unwrap_or_else(|error| panic!("{schema}: {error}"))
    }

    pub(super) fn reference(name: &str, schema: &str) -> ResolvedReference {
        ResolvedReference {
            name: name.to_owned(),
            subject: format!("{name}-value"),
            version: 1,
            schema: schema.to_owned(),
        }
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
