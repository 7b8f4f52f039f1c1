//! Avro schema evolution through the registry's compatibility levels: the changes a user
//! makes to a subject's schema and whether each level lets them register it, plus property
//! tests that no input (random text, random JSON, random valid schemas) panics the parser
//! or the checker.

use proptest::prelude::*;
use serde_json::{Value, json};
use sluice_registry::compatibility::CompatibilityLevel;
use sluice_registry::schema::{self, ParsedSchema, ResolvedReference, SchemaType};

fn avro(text: &str) -> Box<dyn ParsedSchema> {
    avro_with(text, &[])
}

fn avro_with(text: &str, references: &[ResolvedReference]) -> Box<dyn ParsedSchema> {
    schema::parse(SchemaType::Avro, text, references)
        .unwrap_or_else(|error| panic!("{text} should parse: {error}"))
}

/// Whether `new` may follow `history` (oldest first) at `level`.
fn allowed(level: CompatibilityLevel, history: &[&str], new: &str) -> bool {
    let previous: Vec<Box<dyn ParsedSchema>> = history.iter().map(|text| avro(text)).collect();
    let previous: Vec<&dyn ParsedSchema> = previous.iter().map(|schema| schema.as_ref()).collect();
    level
        .incompatibilities(avro(new).as_ref(), &previous)
        .is_empty()
}

const ORDER_V1: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}"#;

/// The guide's example: optional fields with defaults.
const ORDER_V2: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"},{"name":"currency","type":"string","default":"USD"},{"name":"note","type":["null","string"],"default":null}]}"#;

const ORDER_ADDED_WITHOUT_DEFAULT: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"},{"name":"total","type":"double"}]}"#;

const ORDER_REMOVED_AMOUNT: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"}]}"#;

fn record_with(field_type: &str) -> String {
    format!(r#"{{"type":"record","name":"R","fields":[{{"name":"f","type":{field_type}}}]}}"#)
}

/// A change to a subject's schema and whether each level allows it.
struct Evolution {
    change: &'static str,
    old: String,
    new: String,
    allowed: Vec<(CompatibilityLevel, bool)>,
}

fn evolution(
    change: &'static str,
    old: impl Into<String>,
    new: impl Into<String>,
    allowed: Vec<(CompatibilityLevel, bool)>,
) -> Evolution {
    Evolution {
        change,
        old: old.into(),
        new: new.into(),
        allowed,
    }
}

#[test]
fn evolutions_are_allowed_or_refused_per_level() {
    use CompatibilityLevel::{Backward, Forward, Full, None as NoCheck};
    let suit = |symbols: &str| format!(r#"{{"type":"enum","name":"Suit","symbols":{symbols}}}"#);
    let suit_with_default = |symbols: &str| {
        format!(r#"{{"type":"enum","name":"Suit","symbols":{symbols},"default":"UNKNOWN"}}"#)
    };
    let fixed = |size: u32| format!(r#"{{"type":"fixed","name":"Hash","size":{size}}}"#);
    let cases = [
        evolution(
            "fields added with defaults",
            ORDER_V1,
            ORDER_V2,
            vec![(Backward, true), (Forward, true), (Full, true)],
        ),
        evolution(
            "field added without a default",
            ORDER_V1,
            ORDER_ADDED_WITHOUT_DEFAULT,
            vec![
                (Backward, false),
                (Forward, true),
                (Full, false),
                (NoCheck, true),
            ],
        ),
        evolution(
            "field without a default removed",
            ORDER_V1,
            ORDER_REMOVED_AMOUNT,
            vec![(Backward, true), (Forward, false), (Full, false)],
        ),
        evolution(
            "int widened to long",
            record_with(r#""int""#),
            record_with(r#""long""#),
            vec![(Backward, true), (Forward, false)],
        ),
        evolution(
            "long widened to double",
            record_with(r#""long""#),
            record_with(r#""double""#),
            vec![(Backward, true), (Forward, false)],
        ),
        evolution(
            "float widened to double",
            record_with(r#""float""#),
            record_with(r#""double""#),
            vec![(Backward, true), (Forward, false)],
        ),
        evolution(
            "string read as bytes and back",
            record_with(r#""string""#),
            record_with(r#""bytes""#),
            vec![(Full, true)],
        ),
        evolution(
            "int changed to string",
            record_with(r#""int""#),
            record_with(r#""string""#),
            vec![(Backward, false), (Forward, false)],
        ),
        evolution(
            "enum symbol added",
            suit(r#"["HEARTS","SPADES"]"#),
            suit(r#"["HEARTS","SPADES","CLUBS"]"#),
            vec![(Backward, true), (Forward, false)],
        ),
        evolution(
            "enum symbol removed",
            suit(r#"["HEARTS","SPADES"]"#),
            suit(r#"["HEARTS"]"#),
            vec![(Backward, false), (Forward, true)],
        ),
        evolution(
            "enum symbol added to an enum with a default",
            suit_with_default(r#"["UNKNOWN","HEARTS"]"#),
            suit_with_default(r#"["UNKNOWN","HEARTS","CLUBS"]"#),
            vec![(Full, true)],
        ),
        evolution(
            "union branch added",
            record_with(r#"["null","string"]"#),
            record_with(r#"["null","string","int"]"#),
            vec![(Backward, true), (Forward, false)],
        ),
        evolution(
            "field made optional",
            record_with(r#""string""#),
            record_with(r#"["null","string"]"#),
            vec![(Backward, true), (Forward, false)],
        ),
        evolution(
            "array items widened",
            record_with(r#"{"type":"array","items":"int"}"#),
            record_with(r#"{"type":"array","items":"long"}"#),
            vec![(Backward, true), (Forward, false)],
        ),
        evolution(
            "map values changed",
            record_with(r#"{"type":"map","values":"int"}"#),
            record_with(r#"{"type":"map","values":"boolean"}"#),
            vec![(Backward, false), (Forward, false)],
        ),
        evolution(
            "fixed size changed",
            fixed(16),
            fixed(32),
            vec![(Backward, false), (Forward, false)],
        ),
        evolution(
            "record renamed with an alias",
            ORDER_V1,
            ORDER_V1.replace(
                r#""name":"Order""#,
                r#""name":"Purchase","aliases":["Order"]"#,
            ),
            vec![(Backward, true), (Forward, false)],
        ),
        evolution(
            "whitespace only",
            ORDER_V1,
            serde_json::to_string_pretty(&serde_json::from_str::<Value>(ORDER_V1).unwrap())
                .unwrap(),
            vec![(Full, true)],
        ),
    ];
    for evolution in &cases {
        for (level, expected) in &evolution.allowed {
            assert_eq!(
                allowed(*level, &[evolution.old.as_str()], &evolution.new),
                *expected,
                "{} at {}",
                evolution.change,
                level.name()
            );
        }
    }
}

#[test]
fn transitive_levels_check_every_earlier_version() {
    let v1 = record_with(r#""string""#);
    let v2 = r#"{"type":"record","name":"R","fields":[]}"#;
    let v3 = r#"{"type":"record","name":"R","fields":[{"name":"f","type":"int","default":0}]}"#;
    assert!(allowed(CompatibilityLevel::Backward, &[&v1, v2], v3));
    assert!(!allowed(
        CompatibilityLevel::BackwardTransitive,
        &[&v1, v2],
        v3
    ));
    assert!(!allowed(CompatibilityLevel::FullTransitive, &[&v1, v2], v3));
}

#[test]
fn the_guides_incompatible_order_is_explained() {
    let reasons = CompatibilityLevel::Backward.incompatibilities(
        avro(ORDER_ADDED_WITHOUT_DEFAULT).as_ref(),
        &[avro(ORDER_V1).as_ref()],
    );
    assert_eq!(
        reasons,
        [
            "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'total' at path '/fields/2' in the new schema has no default value and is missing in the old schema', additionalInfo:'total'}"
        ]
    );
}

#[test]
fn schemas_using_a_referenced_type_evolve_like_inline_ones() {
    let address = ResolvedReference {
        name: "com.example.Address".into(),
        subject: "address-value".into(),
        version: 1,
        schema: r#"{"type":"record","name":"Address","namespace":"com.example","fields":[{"name":"street","type":"string"}]}"#.into(),
    };
    let references = [address];
    let v1 = avro_with(
        r#"{"type":"record","name":"Customer","namespace":"com.example","fields":[{"name":"address","type":"com.example.Address"}]}"#,
        &references,
    );
    let v2 = avro_with(
        r#"{"type":"record","name":"Customer","namespace":"com.example","fields":[{"name":"address","type":"Address"},{"name":"billing","type":["null","Address"],"default":null}]}"#,
        &references,
    );
    assert_eq!(
        v1.canonical(),
        r#"{"type":"record","name":"Customer","namespace":"com.example","fields":[{"name":"address","type":"Address"}]}"#
    );
    assert!(
        CompatibilityLevel::Full
            .incompatibilities(v2.as_ref(), &[v1.as_ref()])
            .is_empty()
    );
    let error = schema::parse(SchemaType::Avro, &v1.canonical(), &[])
        .expect_err("the referenced type is not defined without its reference");
    assert!(error.0.contains("com.example.Address"), "{error}");
}

#[test]
fn a_recursive_linked_list_evolves() {
    let list = |extra_field: &str| {
        format!(
            r#"{{"type":"record","name":"LinkedList","namespace":"com.example","fields":[{{"name":"value","type":"int"}},{{"name":"next","type":["null","LinkedList"],"default":null}}{extra_field}]}}"#
        )
    };
    let v1 = list("");
    let v2 = list(r#",{"name":"label","type":"string","default":""}"#);
    let v3 = list(r#",{"name":"label","type":"string"}"#);
    assert!(allowed(CompatibilityLevel::FullTransitive, &[&v1], &v2));
    assert!(!allowed(CompatibilityLevel::Backward, &[&v1], &v3));
    assert!(allowed(CompatibilityLevel::Forward, &[&v1], &v3));
}

/// Arbitrary JSON, weighted towards the shapes Avro schemas have.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(vec![
            "record", "enum", "fixed", "array", "map", "error", "null", "int", "long", "string",
            "bytes", "double", "float", "boolean", "R", "E", "a.R", "NaN", "1.5", "",
        ])
        .prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "type",
                        "name",
                        "namespace",
                        "fields",
                        "items",
                        "values",
                        "symbols",
                        "size",
                        "default",
                        "aliases",
                        "order",
                        "doc",
                        "logicalType",
                        "precision",
                        "scale",
                        "x",
                    ]),
                    inner,
                ),
                0..6,
            )
            .prop_map(|entries| {
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(key, value)| (key.to_owned(), value))
                        .collect(),
                )
            }),
        ]
    })
}

/// Valid Avro schemas: primitives, enums, fixed, logical types, arrays, maps, optional
/// unions and records, nested. Named types get unique names afterwards.
fn valid_schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        prop::sample::select(vec![
            "null", "boolean", "int", "long", "float", "double", "bytes", "string"
        ])
        .prop_map(Value::from),
        prop::collection::btree_set("[A-D]", 1..4).prop_map(|symbols| {
            json!({"type": "enum", "name": "E", "symbols": symbols.into_iter().collect::<Vec<_>>()})
        }),
        (0u32..20).prop_map(|size| json!({"type": "fixed", "name": "F", "size": size})),
        Just(json!({"type": "long", "logicalType": "timestamp-millis"})),
        Just(json!({"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2})),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            inner
                .clone()
                .prop_map(|values| json!({"type": "map", "values": values})),
            inner.clone().prop_map(|branch| {
                if branch.is_array() || branch == json!("null") {
                    branch
                } else {
                    json!(["null", branch])
                }
            }),
            prop::collection::vec((inner, any::<bool>()), 0..4).prop_map(|fields| {
                let fields: Vec<Value> = fields
                    .into_iter()
                    .enumerate()
                    .map(|(index, (field_type, with_default))| {
                        let optional = field_type.get(0) == Some(&json!("null"));
                        let mut field = json!({"name": format!("f{index}"), "type": field_type});
                        if optional && with_default {
                            field["default"] = Value::Null;
                        }
                        field
                    })
                    .collect();
                json!({"type": "record", "name": "R", "fields": fields})
            }),
        ]
    })
    .prop_map(|mut schema| {
        let mut counter = 0;
        rename_named_types(&mut schema, &mut counter);
        schema
    })
}

fn rename_named_types(value: &mut Value, counter: &mut usize) {
    match value {
        Value::Array(elements) => {
            for element in elements {
                rename_named_types(element, counter);
            }
        }
        Value::Object(object) => {
            let named = matches!(
                object.get("type").and_then(Value::as_str),
                Some("record" | "enum" | "fixed")
            );
            if named && object.contains_key("name") {
                object.insert("name".into(), Value::from(format!("T{counter}")));
                *counter += 1;
            }
            for child in object.values_mut() {
                rename_named_types(child, counter);
            }
        }
        _ => {}
    }
}

/// Everything a parsed schema offers, run for its panics.
fn exercise(parsed: &dyn ParsedSchema) {
    let _ = parsed.canonical();
    let _ = parsed.normalized();
    let _ = parsed.record_name();
    let _ = parsed.formatted("resolved");
    let _ = parsed.backward_incompatibilities(parsed);
}

proptest! {
    #[test]
    fn random_text_never_panics(text in "\\PC{0,64}") {
        if let Ok(parsed) = schema::parse(SchemaType::Avro, &text, &[]) {
            exercise(parsed.as_ref());
        }
    }

    #[test]
    fn random_json_never_panics(reader in any_json(), writer in any_json()) {
        let reader = schema::parse(SchemaType::Avro, &reader.to_string(), &[]);
        let writer = schema::parse(SchemaType::Avro, &writer.to_string(), &[]);
        if let Ok(reader) = &reader {
            exercise(reader.as_ref());
        }
        if let (Ok(reader), Ok(writer)) = (&reader, &writer) {
            let _ = reader.backward_incompatibilities(writer.as_ref());
            let _ = writer.backward_incompatibilities(reader.as_ref());
        }
    }

    #[test]
    fn valid_schemas_round_trip_and_read_themselves(
        first in valid_schema(),
        second in valid_schema(),
    ) {
        let text = serde_json::to_string_pretty(&first).unwrap();
        let parsed = schema::parse(SchemaType::Avro, &text, &[])
            .map_err(|error| TestCaseError::fail(format!("{text}: {error}")))?;
        let canonical = parsed.canonical();
        prop_assert_eq!(&avro(&canonical).canonical(), &canonical);
        let normalized = parsed.normalized();
        prop_assert_eq!(&avro(&normalized).normalized(), &normalized);
        prop_assert_eq!(avro(&normalized).canonical(), normalized);
        // Every schema reads what it writes.
        let again = avro(&text);
        let reasons = parsed.backward_incompatibilities(again.as_ref());
        prop_assert!(reasons.is_empty(), "{}: {:?}", text, reasons);
        let other = avro(&second.to_string());
        let _ = parsed.backward_incompatibilities(other.as_ref());
        let _ = other.backward_incompatibilities(parsed.as_ref());
    }
}

proptest! {
    /// Serializers hand the resolved form to the `apache-avro` crate.
    #[test]
    fn resolved_schemas_are_read_by_apache_avro(first in valid_schema()) {
        let parsed = avro(&first.to_string());
        let resolved = parsed.formatted("resolved").unwrap();
        let result = apache_avro::Schema::parse_str(&resolved);
        prop_assert!(result.is_ok(), "{}: {:?}", resolved, result.err());
    }
}
