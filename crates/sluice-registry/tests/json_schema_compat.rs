//! Confluent's JSON Schema compatibility rules, as the registry applies them: for each rule a
//! change a reader survives and one it does not, with the `errorType`s and paths Confluent
//! reports. Each case is (rule, old schema, new schema, expected incompatibilities as
//! `ERROR_TYPE #/path`); the new schema reads data written with the old one (BACKWARD).

use sluice_registry::compatibility::CompatibilityLevel;
use sluice_registry::json_schema::JsonSchema;
use sluice_registry::schema::{ParsedSchema, ResolvedReference};

struct Case {
    rule: &'static str,
    old: &'static str,
    new: &'static str,
    incompatible: &'static [&'static str],
}

const fn case(
    rule: &'static str,
    old: &'static str,
    new: &'static str,
    incompatible: &'static [&'static str],
) -> Case {
    Case {
        rule,
        old,
        new,
        incompatible,
    }
}

const CLOSED_A: &str =
    r#"{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}"#;
const OPEN_A: &str = r#"{"type":"object","properties":{"a":{"type":"string"}}}"#;

const CASES: &[Case] = &[
    // Types.
    case("same schema", CLOSED_A, CLOSED_A, &[]),
    case(
        "type changed",
        r#"{"type":"string"}"#,
        r#"{"type":"integer"}"#,
        &["TYPE_CHANGED #/"],
    ),
    case(
        "anything may become the empty schema",
        r#"{"type":"string"}"#,
        "{}",
        &[],
    ),
    case(
        "anything may become true",
        r#"{"type":"string"}"#,
        "true",
        &[],
    ),
    case(
        "false may become anything",
        "false",
        r#"{"type":"string"}"#,
        &[],
    ),
    case(
        "integer extended to number",
        r#"{"type":"integer"}"#,
        r#"{"type":"number"}"#,
        &[],
    ),
    case(
        "number narrowed to integer",
        r#"{"type":"number"}"#,
        r#"{"type":"integer"}"#,
        &["TYPE_NARROWED #/"],
    ),
    case(
        "Kafka Connect decimal as bytes may change encoding",
        r#"{"type":"string","connect.type":"bytes"}"#,
        r#"{"type":"number","connect.type":"bytes"}"#,
        &[],
    ),
    case(
        "property type changed",
        OPEN_A,
        r#"{"type":"object","properties":{"a":{"type":"boolean"}}}"#,
        &["TYPE_CHANGED #/properties/a"],
    ),
    // Content models: properties added.
    case(
        "optional property added to a closed content model",
        CLOSED_A,
        r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"additionalProperties":false}"#,
        &[],
    ),
    case(
        "property added to an open content model",
        OPEN_A,
        r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}"#,
        &["PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/b"],
    ),
    case(
        "property with the empty schema added to an open content model",
        OPEN_A,
        r#"{"type":"object","properties":{"a":{"type":"string"},"b":{}}}"#,
        &[],
    ),
    case(
        "required property with a default added to a closed content model",
        CLOSED_A,
        r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string","default":"x"}},"required":["b"],"additionalProperties":false}"#,
        &[],
    ),
    case(
        "required property added to a closed content model",
        CLOSED_A,
        r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["b"],"additionalProperties":false}"#,
        &["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"],
    ),
    case(
        "property added, covered by the old additionalProperties schema",
        r#"{"type":"object","additionalProperties":{"type":"string","maxLength":3}}"#,
        r#"{"type":"object","properties":{"b":{"type":"string","maxLength":5}},"additionalProperties":{"type":"string","maxLength":3}}"#,
        &[],
    ),
    case(
        "property added, not covered by the old additionalProperties schema",
        r#"{"type":"object","additionalProperties":{"type":"string"}}"#,
        r#"{"type":"object","properties":{"b":{"type":"integer"}},"additionalProperties":{"type":"string"}}"#,
        &[
            "TYPE_CHANGED #/properties/b",
            "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/b",
        ],
    ),
    case(
        "property added, covered by a matching old pattern property",
        r#"{"type":"object","patternProperties":{"^n_":{"type":"integer"}},"additionalProperties":false}"#,
        r#"{"type":"object","properties":{"n_count":{"type":"number"}},"patternProperties":{"^n_":{"type":"integer"}},"additionalProperties":false}"#,
        &[],
    ),
    case(
        "property added, against a matching old pattern property",
        r#"{"type":"object","patternProperties":{"^n_":{"type":"integer"}},"additionalProperties":false}"#,
        r#"{"type":"object","properties":{"n_name":{"type":"string"}},"patternProperties":{"^n_":{"type":"integer"}},"additionalProperties":false}"#,
        &[
            "TYPE_CHANGED #/properties/n_name",
            "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/n_name",
        ],
    ),
    // Content models: properties removed.
    case(
        "property removed, the new model open",
        OPEN_A,
        r#"{"type":"object"}"#,
        &[],
    ),
    case(
        "property removed, the new model closed",
        CLOSED_A,
        r#"{"type":"object","additionalProperties":false}"#,
        &["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/a"],
    ),
    case(
        "property that was false removed from a closed model",
        r#"{"type":"object","properties":{"a":false},"additionalProperties":false}"#,
        r#"{"type":"object","additionalProperties":false}"#,
        &[],
    ),
    // Required.
    case(
        "required removed",
        r#"{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}"#,
        OPEN_A,
        &[],
    ),
    case(
        "existing property made required",
        OPEN_A,
        r#"{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}"#,
        &["REQUIRED_ATTRIBUTE_ADDED #/required/a"],
    ),
    case(
        "existing property made required with a default",
        OPEN_A,
        r#"{"type":"object","properties":{"a":{"type":"string","default":""}},"required":["a"]}"#,
        &[],
    ),
    // additionalProperties.
    case(
        "additionalProperties false to true",
        r#"{"type":"object","additionalProperties":false}"#,
        r#"{"type":"object","additionalProperties":true}"#,
        &[],
    ),
    case(
        "additionalProperties true to false",
        r#"{"type":"object"}"#,
        r#"{"type":"object","additionalProperties":false}"#,
        &["ADDITIONAL_PROPERTIES_REMOVED #/additionalProperties"],
    ),
    case(
        "additionalProperties given a schema",
        r#"{"type":"object"}"#,
        r#"{"type":"object","additionalProperties":{"type":"string"}}"#,
        &["ADDITIONAL_PROPERTIES_NARROWED #/additionalProperties"],
    ),
    case(
        "additionalProperties schema dropped",
        r#"{"type":"object","additionalProperties":{"type":"string"}}"#,
        r#"{"type":"object"}"#,
        &[],
    ),
    // Strings.
    case(
        "maxLength increased",
        r#"{"type":"string","maxLength":5}"#,
        r#"{"type":"string","maxLength":10}"#,
        &[],
    ),
    case(
        "maxLength decreased",
        r#"{"type":"string","maxLength":10}"#,
        r#"{"type":"string","maxLength":5}"#,
        &["MAX_LENGTH_DECREASED #/maxLength"],
    ),
    case(
        "maxLength added",
        r#"{"type":"string"}"#,
        r#"{"type":"string","maxLength":5}"#,
        &["MAX_LENGTH_ADDED #/maxLength"],
    ),
    case(
        "minLength decreased",
        r#"{"type":"string","minLength":3}"#,
        r#"{"type":"string","minLength":1}"#,
        &[],
    ),
    case(
        "minLength increased",
        r#"{"type":"string","minLength":1}"#,
        r#"{"type":"string","minLength":3}"#,
        &["MIN_LENGTH_INCREASED #/minLength"],
    ),
    case(
        "pattern removed",
        r#"{"type":"string","pattern":"^a"}"#,
        r#"{"type":"string"}"#,
        &[],
    ),
    case(
        "pattern added",
        r#"{"type":"string"}"#,
        r#"{"type":"string","pattern":"^a"}"#,
        &["PATTERN_ADDED #/pattern"],
    ),
    case(
        "pattern changed",
        r#"{"type":"string","pattern":"^a"}"#,
        r#"{"type":"string","pattern":"^b"}"#,
        &["PATTERN_CHANGED #/pattern"],
    ),
    // Numbers.
    case(
        "maximum increased",
        r#"{"type":"number","maximum":10}"#,
        r#"{"type":"number","maximum":20}"#,
        &[],
    ),
    case(
        "maximum decreased",
        r#"{"type":"number","maximum":20}"#,
        r#"{"type":"number","maximum":10}"#,
        &["MAXIMUM_DECREASED #/maximum"],
    ),
    case(
        "minimum decreased",
        r#"{"type":"number","minimum":1}"#,
        r#"{"type":"number","minimum":0}"#,
        &[],
    ),
    case(
        "minimum increased",
        r#"{"type":"number","minimum":0}"#,
        r#"{"type":"number","minimum":1.5}"#,
        &["MINIMUM_INCREASED #/minimum"],
    ),
    case(
        "exclusiveMaximum increased",
        r#"{"type":"number","exclusiveMaximum":1}"#,
        r#"{"type":"number","exclusiveMaximum":2}"#,
        &[],
    ),
    case(
        "exclusiveMaximum decreased",
        r#"{"type":"number","exclusiveMaximum":2}"#,
        r#"{"type":"number","exclusiveMaximum":1}"#,
        &["EXCLUSIVE_MAXIMUM_DECREASED #/exclusiveMaximum"],
    ),
    case(
        "multipleOf reduced",
        r#"{"type":"number","multipleOf":4}"#,
        r#"{"type":"number","multipleOf":2}"#,
        &[],
    ),
    case(
        "multipleOf reduced, fractions",
        r#"{"type":"number","multipleOf":0.3}"#,
        r#"{"type":"number","multipleOf":0.1}"#,
        &[],
    ),
    case(
        "multipleOf expanded",
        r#"{"type":"number","multipleOf":2}"#,
        r#"{"type":"number","multipleOf":4}"#,
        &["MULTIPLE_OF_EXPANDED #/multipleOf"],
    ),
    case(
        "multipleOf changed",
        r#"{"type":"number","multipleOf":2}"#,
        r#"{"type":"number","multipleOf":3}"#,
        &["MULTIPLE_OF_CHANGED #/multipleOf"],
    ),
    // Objects' sizes.
    case(
        "maxProperties increased",
        r#"{"type":"object","maxProperties":2}"#,
        r#"{"type":"object","maxProperties":3}"#,
        &[],
    ),
    case(
        "maxProperties decreased",
        r#"{"type":"object","maxProperties":3}"#,
        r#"{"type":"object","maxProperties":2}"#,
        &["MAX_PROPERTIES_DECREASED #/maxProperties"],
    ),
    case(
        "minProperties removed",
        r#"{"type":"object","minProperties":1}"#,
        r#"{"type":"object"}"#,
        &[],
    ),
    case(
        "minProperties increased",
        r#"{"type":"object","minProperties":1}"#,
        r#"{"type":"object","minProperties":2}"#,
        &["MIN_PROPERTIES_INCREASED #/minProperties"],
    ),
    // Arrays.
    case(
        "items schema extended",
        r#"{"type":"array","items":{"type":"integer"}}"#,
        r#"{"type":"array","items":{"type":"number"}}"#,
        &[],
    ),
    case(
        "items schema changed",
        r#"{"type":"array","items":{"type":"integer"}}"#,
        r#"{"type":"array","items":{"type":"string"}}"#,
        &["TYPE_CHANGED #/items"],
    ),
    case(
        "items schema removed",
        r#"{"type":"array","items":{"type":"integer"}}"#,
        r#"{"type":"array"}"#,
        &[],
    ),
    case(
        "items schema added",
        r#"{"type":"array"}"#,
        r#"{"type":"array","items":{"type":"integer"}}"#,
        // Confluent gives SCHEMA_ADDED no description, so the message has no path.
        &["SCHEMA_ADDED"],
    ),
    case(
        "maxItems increased",
        r#"{"type":"array","maxItems":2}"#,
        r#"{"type":"array","maxItems":3}"#,
        &[],
    ),
    case(
        "maxItems decreased",
        r#"{"type":"array","maxItems":3}"#,
        r#"{"type":"array","maxItems":2}"#,
        &["MAX_ITEMS_DECREASED #/maxItems"],
    ),
    case(
        "minItems decreased",
        r#"{"type":"array","minItems":2}"#,
        r#"{"type":"array","minItems":1}"#,
        &[],
    ),
    case(
        "minItems increased",
        r#"{"type":"array","minItems":1}"#,
        r#"{"type":"array","minItems":2}"#,
        &["MIN_ITEMS_INCREASED #/minItems"],
    ),
    case(
        "uniqueItems removed",
        r#"{"type":"array","uniqueItems":true}"#,
        r#"{"type":"array"}"#,
        &[],
    ),
    case(
        "uniqueItems added",
        r#"{"type":"array"}"#,
        r#"{"type":"array","uniqueItems":true}"#,
        &["UNIQUE_ITEMS_ADDED #/uniqueItems"],
    ),
    case(
        "tuple item added to a closed array",
        r#"{"type":"array","items":[{"type":"string"}],"additionalItems":false}"#,
        r#"{"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}"#,
        &[],
    ),
    case(
        "tuple item added to an open array",
        r#"{"type":"array","items":[{"type":"string"}]}"#,
        r#"{"type":"array","items":[{"type":"string"},{"type":"integer"}]}"#,
        &["ITEM_ADDED_TO_OPEN_CONTENT_MODEL #/items/1"],
    ),
    case(
        "tuple item removed from a closed array",
        r#"{"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}"#,
        r#"{"type":"array","items":[{"type":"string"}],"additionalItems":false}"#,
        &["ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL #/items/1"],
    ),
    case(
        "tuple item changed",
        r#"{"type":"array","items":[{"type":"string"}]}"#,
        r#"{"type":"array","items":[{"type":"integer"}]}"#,
        &["TYPE_CHANGED #/items/0"],
    ),
    case(
        "additionalItems false",
        r#"{"type":"array","items":[{"type":"string"}]}"#,
        r#"{"type":"array","items":[{"type":"string"}],"additionalItems":false}"#,
        &["ADDITIONAL_ITEMS_REMOVED #/additionalItems"],
    ),
    case(
        "draft 2020-12 prefix item added to a closed array",
        r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","prefixItems":[{"type":"string"}],"items":false}"#,
        r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false}"#,
        &[],
    ),
    // Enums and const.
    case(
        "enum extended",
        r#"{"enum":["a","b"]}"#,
        r#"{"enum":["a","b","c"]}"#,
        &[],
    ),
    case(
        "enum reordered",
        r#"{"enum":["a","b"]}"#,
        r#"{"enum":["b","a"]}"#,
        &[],
    ),
    case(
        "enum narrowed",
        r#"{"enum":["a","b","c"]}"#,
        r#"{"enum":["a","b"]}"#,
        &["ENUM_ARRAY_NARROWED #/enum"],
    ),
    case(
        "enum changed",
        r#"{"enum":["a","b"]}"#,
        r#"{"enum":["a","c"]}"#,
        &["ENUM_ARRAY_CHANGED #/enum"],
    ),
    case(
        "enum of a typed schema narrowed (an allOf of type and enum to Confluent)",
        r#"{"type":"string","enum":["a","b"]}"#,
        r#"{"type":"string","enum":["a"]}"#,
        &["COMBINED_TYPE_SUBSCHEMAS_CHANGED #/"],
    ),
    case(
        "enum dropped",
        r#"{"type":"string","enum":["a"]}"#,
        r#"{"type":"string"}"#,
        &[],
    ),
    case(
        "const changed",
        r#"{"properties":{"kind":{"const":"a"}}}"#,
        r#"{"properties":{"kind":{"const":"b"}}}"#,
        &["ENUM_ARRAY_CHANGED #/properties/kind/const"],
    ),
    // Combined schemas.
    case(
        "a type becomes one of a union",
        r#"{"type":"string"}"#,
        r#"{"oneOf":[{"type":"string"},{"type":"null"}]}"#,
        &[],
    ),
    case(
        "a union becomes one of its types",
        r#"{"oneOf":[{"type":"string"},{"type":"null"}]}"#,
        r#"{"type":"string"}"#,
        &["TYPE_CHANGED #/"],
    ),
    case(
        "a type list gains a type",
        r#"{"type":["string","null"]}"#,
        r#"{"type":["string","null","integer"]}"#,
        &[],
    ),
    case(
        "oneOf extended",
        r#"{"oneOf":[{"type":"string"},{"type":"integer"}]}"#,
        r#"{"oneOf":[{"type":"string"},{"type":"integer"},{"type":"boolean"}]}"#,
        &[],
    ),
    case(
        "oneOf narrowed",
        r#"{"oneOf":[{"type":"string"},{"type":"integer"},{"type":"boolean"}]}"#,
        r#"{"oneOf":[{"type":"string"},{"type":"integer"}]}"#,
        &["SUM_TYPE_NARROWED #/"],
    ),
    case(
        "anyOf member changed",
        r#"{"anyOf":[{"type":"string"},{"type":"integer"}]}"#,
        r#"{"anyOf":[{"type":"string"},{"type":"boolean"}]}"#,
        &["COMBINED_TYPE_SUBSCHEMAS_CHANGED #/"],
    ),
    case(
        "oneOf becomes anyOf",
        r#"{"oneOf":[{"type":"string"},{"type":"integer"}]}"#,
        r#"{"anyOf":[{"type":"string"},{"type":"integer"}]}"#,
        &[],
    ),
    case(
        "anyOf becomes allOf",
        r#"{"anyOf":[{"type":"string"},{"maxLength":3}]}"#,
        r#"{"allOf":[{"type":"string"},{"maxLength":3}]}"#,
        &["COMBINED_TYPE_CHANGED #/"],
    ),
    case(
        "allOf narrowed",
        r#"{"allOf":[{"type":"string"},{"maxLength":3}]}"#,
        r#"{"allOf":[{"type":"string"}]}"#,
        &[],
    ),
    case(
        "allOf extended",
        r#"{"allOf":[{"type":"string"}]}"#,
        r#"{"allOf":[{"type":"string"},{"maxLength":3}]}"#,
        &["PRODUCT_TYPE_EXTENDED #/"],
    ),
    case(
        "not narrowed",
        r#"{"not":{"type":["string","number"]}}"#,
        r#"{"not":{"type":"string"}}"#,
        &[],
    ),
    case(
        "not extended",
        r#"{"not":{"type":"string"}}"#,
        r#"{"not":{"type":["string","number"]}}"#,
        &["NOT_TYPE_EXTENDED #/not"],
    ),
    // Dependencies.
    case(
        "dependency array removed",
        r#"{"dependencies":{"a":["b"]}}"#,
        r#"{"properties":{}}"#,
        &[],
    ),
    case(
        "dependency array added",
        r#"{"properties":{}}"#,
        r#"{"dependencies":{"a":["b"]}}"#,
        &["DEPENDENCY_ARRAY_ADDED #/dependencies/a"],
    ),
    case(
        "dependency array narrowed",
        r#"{"dependencies":{"a":["b","c"]}}"#,
        r#"{"dependencies":{"a":["b"]}}"#,
        &[],
    ),
    case(
        "dependency array extended",
        r#"{"dependencies":{"a":["b"]}}"#,
        r#"{"dependencies":{"a":["b","c"]}}"#,
        &["DEPENDENCY_ARRAY_EXTENDED #/dependencies/a"],
    ),
    case(
        "dependency schema added",
        r#"{"properties":{}}"#,
        r#"{"dependencies":{"a":{"required":["b"]}}}"#,
        &["DEPENDENCY_SCHEMA_ADDED #/dependencies/a"],
    ),
    // References inside the schema are followed.
    case(
        "moving a subschema into definitions",
        r#"{"properties":{"a":{"type":"string"}}}"#,
        r##"{"properties":{"a":{"$ref":"#/definitions/a"}},"definitions":{"a":{"type":"string"}}}"##,
        &[],
    ),
    case(
        "a referenced definition changes type",
        r##"{"properties":{"a":{"$ref":"#/definitions/a"}},"definitions":{"a":{"type":"string"}}}"##,
        r##"{"properties":{"a":{"$ref":"#/definitions/a"}},"definitions":{"a":{"type":"integer"}}}"##,
        &["TYPE_CHANGED #/properties/a"],
    ),
    // Every incompatibility is reported, not the first.
    case(
        "several changes at once",
        r#"{"type":"object","properties":{"a":{"type":"string","maxLength":10},"b":{"type":"integer"}},"additionalProperties":false}"#,
        r#"{"type":"object","properties":{"a":{"type":"string","maxLength":5},"b":{"type":"string"},"c":{"type":"string"}},"required":["c"],"additionalProperties":false}"#,
        &[
            "MAX_LENGTH_DECREASED #/properties/a/maxLength",
            "TYPE_CHANGED #/properties/b",
            "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/c",
        ],
    ),
];

fn parse(schema: &str) -> JsonSchema {
    JsonSchema::parse(schema, &[]).unwrap_or_else(|error| panic!("{schema}: {error}"))
}

/// `ERROR_TYPE #/path` of a Confluent message (the path is the first quoted one), or the
/// type alone when the description names no path.
fn summary(message: &str) -> String {
    let error_type = message
        .strip_prefix("{errorType:\"")
        .and_then(|rest| rest.split('"').next())
        .unwrap_or(message);
    match message.split_once("path '") {
        Some((_, rest)) => format!("{error_type} {}", rest.split('\'').next().unwrap_or("")),
        None => error_type.to_owned(),
    }
}

#[test]
fn confluent_rules_for_json_schema() {
    let mut failures = Vec::new();
    for case in CASES {
        let (old, new) = (parse(case.old), parse(case.new));
        let found: Vec<String> = new
            .backward_incompatibilities(&old)
            .iter()
            .map(|message| summary(message))
            .collect();
        if found != case.incompatible {
            failures.push(format!(
                "{}:\n  expected {:?}\n  found    {found:?}",
                case.rule, case.incompatible
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn messages_are_worded_as_confluent_words_them() {
    let cases = [
        (
            OPEN_A,
            r#"{"type":"object","properties":{"a":{"type":"string"},"x":{"type":"integer"}}}"#,
            "{errorType:\"PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL\", description:\"The new schema has \
             an open content model and has a property or item at path '#/properties/x' which is \
             missing in the old schema'}",
        ),
        (
            r#"{"type":"string","maxLength":10}"#,
            r#"{"type":"string","maxLength":5}"#,
            "{errorType:\"MAX_LENGTH_DECREASED\", description:\"The value at path '#/maxLength' in \
             the new schema is less than its value in the old schema'}",
        ),
        (
            r#"{"type":"string"}"#,
            r#"{"type":"integer"}"#,
            "{errorType:\"TYPE_CHANGED\", description:\"A type at path '#/' is different between \
             the new schema and the old schema'}",
        ),
        (
            r#"{"enum":["a","b"]}"#,
            r#"{"enum":["a"]}"#,
            "{errorType:\"ENUM_ARRAY_NARROWED\", description:\"An array or combined type at path \
             '#/enum' has fewer elements in the new schema than the old schema'}",
        ),
        (
            CLOSED_A,
            r#"{"type":"object","properties":{"a":{"type":"string"},"b":{}},"required":["b"],"additionalProperties":false}"#,
            "{errorType:\"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL\", description:\"The new \
             schema has an unopen content model and has a required property at path \
             '#/properties/b' which is missing in the old schema'}",
        ),
        (
            r#"{"type":"array"}"#,
            r#"{"type":"array","items":{"type":"string"}}"#,
            "{errorType:\"SCHEMA_ADDED\", description:\"'}",
        ),
    ];
    for (old, new, message) in cases {
        assert_eq!(
            parse(new).backward_incompatibilities(&parse(old)),
            [message]
        );
    }
    // The reader and the writer may be named for a FORWARD check.
    let (old, new) = (parse(r#"{"enum":["a"]}"#), parse(r#"{"enum":["a","b"]}"#));
    assert_eq!(
        old.incompatibilities_with_labels(&new, "old", "new"),
        [
            "{errorType:\"ENUM_ARRAY_NARROWED\", description:\"An array or combined type at path \
          '#/enum' has fewer elements in the old schema than the new schema'}"
        ]
    );
}

#[test]
fn compatibility_levels_apply_the_rules_both_ways() {
    let v1 = parse(CLOSED_A);
    let v2 = parse(
        r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"additionalProperties":false}"#,
    );
    let history: [&dyn ParsedSchema; 1] = [&v1];
    // Adding an optional property to a closed model: new readers read old data, but an old
    // reader (closed, no `b`) cannot read data that has `b`.
    assert!(
        CompatibilityLevel::Backward
            .incompatibilities(&v2, &history)
            .is_empty()
    );
    let forward = CompatibilityLevel::Forward.incompatibilities(&v2, &history);
    let forward: Vec<String> = forward.iter().map(|message| summary(message)).collect();
    assert_eq!(
        forward,
        ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/b"]
    );
    assert_eq!(
        CompatibilityLevel::Full
            .incompatibilities(&v2, &history)
            .len(),
        1
    );
    assert!(
        CompatibilityLevel::None
            .incompatibilities(&v2, &history)
            .is_empty()
    );
}

#[test]
fn referenced_schemas_are_compared_through_their_references() {
    let address = |street_type: &str| ResolvedReference {
        name: "address.json".to_owned(),
        subject: "address".to_owned(),
        version: 1,
        schema: format!(
            r#"{{"type":"object","properties":{{"street":{{"type":"{street_type}"}}}}}}"#
        ),
    };
    let customer = r#"{"type":"object","properties":{"address":{"$ref":"address.json"}}}"#;
    let with = |street_type: &str| {
        JsonSchema::parse(customer, &[address(street_type)]).expect("customer parses")
    };
    assert!(
        with("string")
            .backward_incompatibilities(&with("string"))
            .is_empty()
    );
    let found: Vec<String> = with("integer")
        .backward_incompatibilities(&with("string"))
        .iter()
        .map(|message| summary(message))
        .collect();
    assert_eq!(
        found,
        ["TYPE_CHANGED #/properties/address/properties/street"]
    );
    assert!(JsonSchema::parse(customer, &[]).is_err());
}
