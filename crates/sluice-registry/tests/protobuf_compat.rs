//! The Protobuf schema type as the registry sees it: which schemas parse, the canonical and
//! normalized strings they store, the serialized format the Python client asks for, and
//! Confluent's compatibility rules between two versions.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use proptest::prelude::*;
use prost::Message as _;
use sluice_registry::protobuf::ProtobufSchema;
use sluice_registry::schema::{ParsedSchema, ResolvedReference};

fn parse(schema: &str) -> ProtobufSchema {
    ProtobufSchema::parse(schema, &[])
        .unwrap_or_else(|error| panic!("schema should parse: {error}\n{schema}"))
}

fn reference(name: &str, version: i32, schema: &str) -> ResolvedReference {
    ResolvedReference {
        name: name.to_owned(),
        subject: name.trim_end_matches(".proto").to_owned(),
        version,
        schema: schema.to_owned(),
    }
}

/// What the Python client registers: the file compiled (type names resolved), as protoc
/// embeds it in generated code (`json_name` only where the schema sets one, no source
/// positions), base64 encoded.
fn python_client_form(name: &str, schema: &str) -> String {
    let directory = tempfile::tempdir().expect("temporary directory");
    std::fs::write(directory.path().join(name), schema).expect("write the .proto file");
    let set = protox::compile([name], [directory.path()]).expect("protox compiles the file");
    let mut file = set
        .file
        .into_iter()
        .find(|file| file.name() == name)
        .expect("the compiled file");
    file.source_code_info = None;
    for message in &mut file.message_type {
        clear_json_names(message);
    }
    BASE64.encode(file.encode_to_vec())
}

fn clear_json_names(message: &mut prost_types::DescriptorProto) {
    for field in &mut message.field {
        // protoc's default: underscores dropped, the letter after each upper-cased.
        let mut default = String::new();
        let mut upper = false;
        for character in field.name().chars() {
            match character {
                '_' => upper = true,
                other if upper => {
                    default.push(other.to_ascii_uppercase());
                    upper = false;
                }
                other => default.push(other),
            }
        }
        if field.json_name.as_deref() == Some(default.as_str()) {
            field.json_name = None;
        }
    }
    for nested in &mut message.nested_type {
        clear_json_names(nested);
    }
}

fn decode_serialized(schema: &ProtobufSchema) -> prost_types::FileDescriptorProto {
    let serialized = schema
        .formatted("serialized")
        .expect("the serialized format exists");
    let bytes = BASE64.decode(serialized).expect("serialized is base64");
    prost_types::FileDescriptorProto::decode(bytes.as_slice()).expect("a FileDescriptorProto")
}

// ---------------------------------------------------------------------------------------
// Compatibility.

/// Every incompatibility expected, in order: `(errorType, path)`.
type Expected = &'static [(&'static str, &'static str)];

/// `(what changes, old schema, new schema, expected)`.
type CompatibilityCase = (&'static str, &'static str, &'static str, Expected);

/// `(what changes, old schema, its references, new schema, its references, expected)`.
type ReferenceCase<'a> = (
    &'a str,
    &'a str,
    &'a [ResolvedReference],
    &'a str,
    &'a [ResolvedReference],
    Expected,
);

const PROTO3_SCALAR: &str = "syntax = \"proto3\"; message Order { int32 id = 1; TYPE value = 2; }";

fn scalar_pair(old_type: &str, new_type: &str) -> (String, String) {
    (
        PROTO3_SCALAR.replace("TYPE", old_type),
        PROTO3_SCALAR.replace("TYPE", new_type),
    )
}

#[test]
fn scalar_type_changes_follow_the_compatible_groups() {
    const SCALAR_CHANGED: Expected = &[("FIELD_SCALAR_KIND_CHANGED", "#/Order/2")];
    let cases: &[(&str, &str, Expected)] = &[
        ("int32", "int64", &[]),
        ("int32", "uint32", &[]),
        ("int64", "uint64", &[]),
        ("uint64", "bool", &[]),
        ("int32", "string", SCALAR_CHANGED),
        ("string", "bytes", &[]),
        ("bytes", "string", &[]),
        ("sint32", "sint64", &[]),
        ("sint32", "int32", SCALAR_CHANGED),
        ("int64", "sint64", SCALAR_CHANGED),
        ("fixed32", "sfixed32", &[]),
        ("fixed64", "sfixed64", &[]),
        ("fixed32", "fixed64", SCALAR_CHANGED),
        ("fixed32", "int32", SCALAR_CHANGED),
        ("float", "double", SCALAR_CHANGED),
        ("double", "int64", SCALAR_CHANGED),
        ("string", "int32", SCALAR_CHANGED),
    ];
    for (old_type, new_type, expected) in cases {
        let (old, new) = scalar_pair(old_type, new_type);
        check_compatibility(
            &format!("{old_type} -> {new_type}"),
            &old,
            &new,
            &[],
            &[],
            expected,
        );
    }
}

#[test]
fn compatibility_rules() {
    let cases: &[CompatibilityCase] = &[
        (
            "adding a field",
            "syntax = \"proto3\"; message A { int32 a = 1; }",
            "syntax = \"proto3\"; message A { int32 a = 1; string b = 2; }",
            &[],
        ),
        (
            "removing a field",
            "syntax = \"proto3\"; message A { int32 a = 1; string b = 2; }",
            "syntax = \"proto3\"; message A { int32 a = 1; }",
            &[],
        ),
        (
            "renaming a field",
            "syntax = \"proto3\"; message A { int32 a = 1; }",
            "syntax = \"proto3\"; message A { int32 renamed = 1; }",
            &[],
        ),
        (
            "adding a message",
            "syntax = \"proto3\"; message A { int32 a = 1; }",
            "syntax = \"proto3\"; message A { int32 a = 1; } message B { int32 b = 1; }",
            &[],
        ),
        (
            "removing a message",
            "syntax = \"proto3\"; message A { int32 a = 1; } message B { int32 b = 1; }",
            "syntax = \"proto3\"; message A { int32 a = 1; }",
            &[("MESSAGE_REMOVED", "#/B")],
        ),
        (
            "removing a nested message",
            "syntax = \"proto3\"; message A { message Item { int32 id = 1; } }",
            "syntax = \"proto3\"; message A { }",
            &[("MESSAGE_REMOVED", "#/A/Item")],
        ),
        (
            "a nested message's field changing kind",
            "syntax = \"proto3\"; message A { message Item { int32 id = 1; } Item item = 1; }",
            "syntax = \"proto3\"; message A { message Item { string id = 1; } Item item = 1; }",
            &[("FIELD_SCALAR_KIND_CHANGED", "#/A/Item/1")],
        ),
        (
            "a scalar becoming a message",
            "syntax = \"proto3\"; message A { int32 a = 1; } message B { int32 b = 1; }",
            "syntax = \"proto3\"; message A { B a = 1; } message B { int32 b = 1; }",
            &[("FIELD_KIND_CHANGED", "#/A/1")],
        ),
        (
            "a message becoming a map",
            "syntax = \"proto3\"; message A { B a = 1; } message B { int32 b = 1; }",
            "syntax = \"proto3\"; message A { map<string, B> a = 1; } message B { int32 b = 1; }",
            &[("FIELD_KIND_CHANGED", "#/A/1")],
        ),
        (
            "an enum becoming an int32",
            "syntax = \"proto3\"; message A { E e = 1; } enum E { X = 0; }",
            "syntax = \"proto3\"; message A { int32 e = 1; } enum E { X = 0; }",
            &[],
        ),
        (
            "an enum becoming a string",
            "syntax = \"proto3\"; message A { E e = 1; } enum E { X = 0; }",
            "syntax = \"proto3\"; message A { string e = 1; } enum E { X = 0; }",
            &[("FIELD_SCALAR_KIND_CHANGED", "#/A/1")],
        ),
        (
            "an enum becoming a message",
            "syntax = \"proto3\"; message A { E e = 1; } enum E { X = 0; } message M {}",
            "syntax = \"proto3\"; message A { M e = 1; } enum E { X = 0; } message M {}",
            &[("FIELD_KIND_CHANGED", "#/A/1")],
        ),
        (
            "enum values added, renamed and removed",
            "syntax = \"proto3\"; enum E { X = 0; Y = 1; Z = 2; } message A { E e = 1; }",
            "syntax = \"proto3\"; enum E { X = 0; WHY = 1; W = 3; } message A { E e = 1; }",
            &[],
        ),
        (
            "an enum removed",
            "syntax = \"proto3\"; enum E { X = 0; } message A { int32 a = 1; }",
            "syntax = \"proto3\"; message A { int32 a = 1; }",
            &[],
        ),
        (
            "a map value widening",
            "syntax = \"proto3\"; message A { map<string, int32> m = 1; }",
            "syntax = \"proto3\"; message A { map<string, int64> m = 1; }",
            &[],
        ),
        (
            "a map value changing kind",
            "syntax = \"proto3\"; message A { map<string, int32> m = 1; }",
            "syntax = \"proto3\"; message A { map<string, string> m = 1; }",
            &[("FIELD_SCALAR_KIND_CHANGED", "#/A/1")],
        ),
        (
            "a message field's type renamed",
            "syntax = \"proto3\"; message Order { int32 id = 1; Address to = 2; } \
             message Address { string street = 1; } message Customer { string street = 1; }",
            "syntax = \"proto3\"; message Order { int32 id = 1; Customer to = 2; } \
             message Address { string street = 1; } message Customer { string street = 1; }",
            &[("FIELD_NAMED_TYPE_CHANGED", "#/Order/2")],
        ),
        (
            "the package changing",
            "syntax = \"proto3\"; package shop.v1; message A { int32 a = 1; }",
            "syntax = \"proto3\"; package shop.v2; message A { int32 a = 1; }",
            &[("PACKAGE_CHANGED", "#/")],
        ),
        (
            "proto2 adding a required field",
            "syntax = \"proto2\"; message A { optional int32 a = 1; }",
            "syntax = \"proto2\"; message A { optional int32 a = 1; required string b = 2; }",
            &[("REQUIRED_FIELD_ADDED", "#/A/2")],
        ),
        (
            "proto2 removing a required field",
            "syntax = \"proto2\"; message A { optional int32 a = 1; required string b = 2; }",
            "syntax = \"proto2\"; message A { optional int32 a = 1; }",
            &[("REQUIRED_FIELD_REMOVED", "#/A/2")],
        ),
        (
            "proto2 removing an optional field",
            "syntax = \"proto2\"; message A { optional int32 a = 1; optional string b = 2; }",
            "syntax = \"proto2\"; message A { optional int32 a = 1; }",
            &[],
        ),
        (
            "proto2 numeric field becoming repeated",
            "syntax = \"proto2\"; message A { optional int32 a = 1; }",
            "syntax = \"proto2\"; message A { repeated int32 a = 1; }",
            &[("FIELD_NUMERIC_LABEL_CHANGED", "#/A/1")],
        ),
        (
            "proto2 numeric field becoming required",
            "syntax = \"proto2\"; message A { optional int64 a = 1; }",
            "syntax = \"proto2\"; message A { required int64 a = 1; }",
            &[("FIELD_NUMERIC_LABEL_CHANGED", "#/A/1")],
        ),
        (
            "proto2 string field becoming repeated",
            "syntax = \"proto2\"; message A { optional string a = 1; }",
            "syntax = \"proto2\"; message A { repeated string a = 1; }",
            &[],
        ),
        (
            "proto3 implicit field becoming repeated (no label to compare, as in Confluent)",
            "syntax = \"proto3\"; message A { int32 a = 1; }",
            "syntax = \"proto3\"; message A { repeated int32 a = 1; }",
            &[],
        ),
        (
            "proto3 optional field becoming repeated",
            "syntax = \"proto3\"; message A { optional int32 a = 1; }",
            "syntax = \"proto3\"; message A { repeated int32 a = 1; }",
            &[("FIELD_NUMERIC_LABEL_CHANGED", "#/A/1")],
        ),
        (
            "proto3 field becoming optional",
            "syntax = \"proto3\"; message A { int32 a = 1; }",
            "syntax = \"proto3\"; message A { optional int32 a = 1; }",
            &[],
        ),
        (
            "proto2 to proto3 with the same fields",
            "syntax = \"proto2\"; message A { optional int32 a = 1; optional string b = 2; }",
            "syntax = \"proto3\"; message A { int32 a = 1; string b = 2; }",
            &[],
        ),
        (
            "one field moved into a new oneof",
            "syntax = \"proto3\"; message A { int32 a = 1; string b = 2; }",
            "syntax = \"proto3\"; message A { oneof choice { int32 a = 1; } string b = 2; }",
            &[],
        ),
        (
            "two fields moved into a new oneof",
            "syntax = \"proto3\"; message A { int32 a = 1; string b = 2; }",
            "syntax = \"proto3\"; message A { oneof choice { int32 a = 1; string b = 2; } }",
            &[("MULTIPLE_FIELDS_MOVED_TO_ONEOF", "#/A/choice")],
        ),
        (
            "a field moved into an existing oneof",
            "syntax = \"proto3\"; message A { int32 a = 1; oneof choice { string b = 2; bytes c = 3; } }",
            "syntax = \"proto3\"; message A { oneof choice { int32 a = 1; string b = 2; bytes c = 3; } }",
            &[("FIELD_MOVED_TO_EXISTING_ONEOF", "#/A/choice")],
        ),
        (
            "a new field added to a oneof",
            "syntax = \"proto3\"; message A { oneof choice { string b = 2; } }",
            "syntax = \"proto3\"; message A { oneof choice { string b = 2; int64 c = 3; } }",
            &[],
        ),
        (
            "a oneof member removed while the oneof stays",
            "syntax = \"proto3\"; message A { oneof choice { string b = 2; int64 c = 3; } }",
            "syntax = \"proto3\"; message A { oneof choice { string b = 2; } }",
            &[("ONEOF_FIELD_REMOVED", "#/A/choice/3")],
        ),
        (
            "a whole oneof removed",
            "syntax = \"proto3\"; message A { int32 a = 1; oneof choice { string b = 2; int64 c = 3; } }",
            "syntax = \"proto3\"; message A { int32 a = 1; }",
            &[],
        ),
        (
            "a oneof member moved to the top level",
            "syntax = \"proto3\"; message A { oneof choice { string b = 2; int64 c = 3; } }",
            "syntax = \"proto3\"; message A { string b = 2; oneof choice { int64 c = 3; } }",
            &[],
        ),
        (
            "a oneof member changing kind, reported in its oneof",
            "syntax = \"proto3\"; message A { oneof choice { string b = 2; int64 c = 3; } }",
            "syntax = \"proto3\"; message A { oneof choice { string b = 2; string c = 3; } }",
            &[("FIELD_SCALAR_KIND_CHANGED", "#/A/choice/3")],
        ),
        (
            "every difference is reported, in field order",
            "syntax = \"proto3\"; message A { int32 a = 1; string b = 2; double c = 3; } message B {}",
            "syntax = \"proto3\"; message A { string a = 1; int32 b = 2; float c = 3; }",
            &[
                ("FIELD_SCALAR_KIND_CHANGED", "#/A/1"),
                ("FIELD_SCALAR_KIND_CHANGED", "#/A/2"),
                ("FIELD_SCALAR_KIND_CHANGED", "#/A/3"),
                ("MESSAGE_REMOVED", "#/B"),
            ],
        ),
        (
            "a well-known type kept",
            "syntax = \"proto3\"; import \"google/protobuf/timestamp.proto\"; \
             message A { google.protobuf.Timestamp at = 1; }",
            "syntax = \"proto3\"; import \"google/protobuf/timestamp.proto\"; \
             message A { google.protobuf.Timestamp when = 1; int32 b = 2; }",
            &[],
        ),
        (
            "a well-known type replaced by another",
            "syntax = \"proto3\"; import \"google/protobuf/timestamp.proto\"; \
             message A { google.protobuf.Timestamp at = 1; }",
            "syntax = \"proto3\"; import \"google/protobuf/duration.proto\"; \
             message A { google.protobuf.Duration at = 1; }",
            &[("FIELD_NAMED_TYPE_CHANGED", "#/A/1")],
        ),
    ];
    for (change, old, new, expected) in cases {
        check_compatibility(change, old, new, &[], &[], expected);
    }
}

#[test]
fn compatibility_follows_references() {
    let address_v1 =
        "syntax = \"proto3\"; package shop; message Address { string street = 1; int32 zip = 2; }";
    let address_v2 =
        "syntax = \"proto3\"; package shop; message Address { string street = 1; string zip = 2; }";
    let address_v3 = "syntax = \"proto3\"; package shop; message Address { string street = 1; int64 zip = 2; string city = 3; }";
    let order = "syntax = \"proto3\"; package shop; import \"address.proto\"; \
                 message Order { int32 id = 1; Address ship_to = 2; }";
    let local_address = "syntax = \"proto3\"; package shop; \
                         message Order { int32 id = 1; Address ship_to = 2; } \
                         message Address { string street = 1; string zip = 2; }";
    let v1 = [reference("address.proto", 1, address_v1)];
    let v2 = [reference("address.proto", 2, address_v2)];
    let v3 = [reference("address.proto", 3, address_v3)];
    let cases: &[ReferenceCase] = &[
        ("the same reference version", order, &v1, order, &v1, &[]),
        (
            "a compatible new reference version",
            order,
            &v1,
            order,
            &v3,
            &[],
        ),
        (
            "an incompatible new reference version",
            order,
            &v1,
            order,
            &v2,
            &[
                ("FIELD_SCALAR_KIND_CHANGED", "#/Address/2"),
                ("FIELD_NAMED_TYPE_CHANGED", "#/Order/2"),
            ],
        ),
        (
            "a referenced type moved into the schema",
            order,
            &v1,
            local_address,
            &[],
            &[
                ("FIELD_SCALAR_KIND_CHANGED", "#/Address/2"),
                ("FIELD_NAMED_TYPE_CHANGED", "#/Order/2"),
            ],
        ),
    ];
    for (change, old, old_references, new, new_references, expected) in cases {
        check_compatibility(change, old, new, old_references, new_references, expected);
    }
}

#[test]
fn recursive_types_through_references_are_compared_once() {
    let node = "syntax = \"proto3\"; message Node { int32 value = 1; Node next = 2; }";
    let tree = "syntax = \"proto3\"; import \"node.proto\"; message Tree { Node root = 1; }";
    check_compatibility(
        "a recursive referenced type in a new version",
        tree,
        tree,
        &[reference("node.proto", 1, node)],
        &[reference("node.proto", 2, node)],
        &[],
    );
}

#[test]
fn reference_chains_deeper_than_the_bound_are_not_called_compatible() {
    fn chain(length: usize) -> String {
        let mut text = String::from("syntax = \"proto3\";\n");
        for index in 0..length {
            text.push_str(&format!(
                "message M{index} {{ M{} next = 1; }}\n",
                index + 1
            ));
        }
        text.push_str(&format!("message M{length} {{ int32 end = 1; }}\n"));
        text
    }
    let root = "syntax = \"proto3\"; import \"chain.proto\"; message Root { M0 first = 1; }";
    for (length, compatible) in [(100, true), (300, false)] {
        let chain = chain(length);
        let old = ProtobufSchema::parse(root, &[reference("chain.proto", 1, &chain)]).expect("old");
        let new = ProtobufSchema::parse(root, &[reference("chain.proto", 2, &chain)]).expect("new");
        let messages = new.backward_incompatibilities(&old);
        assert_eq!(messages.is_empty(), compatible, "{length}: {messages:?}");
    }
}

#[test]
fn incompatibility_messages_read_as_confluents() {
    let (old, new) = scalar_pair("int32", "string");
    let messages = parse(&new).backward_incompatibilities(&parse(&old));
    assert_eq!(
        messages,
        vec![
            "{errorType:\"FIELD_SCALAR_KIND_CHANGED\", description:\"The kind of a SCALAR field at \
             path '#/Order/2' in the new schema does not match its kind in the old schema\"}"
                .to_owned()
        ]
    );
}

fn check_compatibility(
    change: &str,
    old: &str,
    new: &str,
    old_references: &[ResolvedReference],
    new_references: &[ResolvedReference],
    expected: &[(&str, &str)],
) {
    let old = ProtobufSchema::parse(old, old_references)
        .unwrap_or_else(|error| panic!("{change}: old schema: {error}"));
    let new = ProtobufSchema::parse(new, new_references)
        .unwrap_or_else(|error| panic!("{change}: new schema: {error}"));
    let messages = new.backward_incompatibilities(&old);
    assert_eq!(
        messages.len(),
        expected.len(),
        "{change}: expected {expected:?}, got {messages:#?}"
    );
    for (message, (error_type, path)) in messages.iter().zip(expected) {
        assert!(
            message.contains(&format!("errorType:\"{error_type}\""))
                && message.contains(&format!("'{path}'")),
            "{change}: expected {error_type} at {path}, got {message}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Canonical and normalized text.

#[test]
fn canonical_ignores_whitespace_and_comments() {
    let variants = [
        "syntax = \"proto3\";\npackage shop;\n\nmessage Order {\n  int32 id = 1;\n  string note = 2;\n}\n",
        "syntax=\"proto3\";package shop;message Order{int32 id=1;string note=2;}",
        "// orders\nsyntax = 'proto3';\n/* the package */ package shop;\nmessage Order { // an order\n\n\n  int32 id = 1; /* key */\n\tstring note = 2;\n}",
    ];
    let canonical: Vec<String> = variants
        .iter()
        .map(|schema| parse(schema).canonical())
        .collect();
    for (variant, text) in variants.iter().zip(&canonical) {
        assert_eq!(text, &canonical[0], "{variant}");
    }
    assert_eq!(
        canonical[0],
        "syntax = \"proto3\";\npackage shop;\n\nmessage Order {\n  int32 id = 1;\n  string note = 2;\n}\n"
    );
}

#[test]
fn canonical_text_and_python_descriptor_forms_agree() {
    let schemas = [
        (
            "order.proto",
            "syntax = \"proto3\";\npackage shop;\nimport \"google/protobuf/timestamp.proto\";\n\
             option java_package = \"com.shop\";\n\
             message Order {\n  int32 order_id = 1;\n  map<string, Item> items = 2;\n\
               google.protobuf.Timestamp created = 3;\n  optional string note = 4 [json_name = \"n\"];\n\
               oneof payment { string card = 5; int64 cash = 6; }\n  repeated Status history = 7 [packed = false];\n\
               message Item { string sku = 1; double price = 2; }\n\
               enum Status { UNKNOWN = 0; PAID = 1; }\n  reserved 9, 10 to 12;\n}\n\
             service Orders { rpc Get (Order) returns (stream Order); }\n",
        ),
        (
            "legacy.proto",
            "syntax = \"proto2\";\nmessage Legacy {\n  required int64 id = 1;\n\
               optional string name = 2 [default = \"none\"];\n  optional double ratio = 3 [default = 0.5];\n\
               optional Kind kind = 4 [default = B];\n  extensions 100 to max;\n\
               enum Kind { A = 0; B = 1; }\n}\n",
        ),
    ];
    for (name, schema) in schemas {
        let from_text = parse(schema);
        let from_descriptor = parse(&python_client_form(name, schema));
        assert_eq!(from_text.canonical(), from_descriptor.canonical(), "{name}");
        assert_eq!(
            from_text.normalized(),
            from_descriptor.normalized(),
            "{name}"
        );
    }
}

#[test]
fn canonical_prints_types_maps_and_options_as_documented() {
    let schema = parse(
        "syntax = \"proto3\"; package shop; import \"google/protobuf/timestamp.proto\"; \
         message Order { int32 id = 1; map<string, Item> items = 2; google.protobuf.Timestamp at = 3; \
         repeated int32 tags = 4 [packed = false, deprecated = true]; \
         message Item { string sku = 1; } }",
    );
    assert_eq!(
        schema.canonical(),
        "syntax = \"proto3\";\npackage shop;\n\nimport \"google/protobuf/timestamp.proto\";\n\n\
         message Order {\n  int32 id = 1;\n  map<string, .shop.Order.Item> items = 2;\n\
         \x20 .google.protobuf.Timestamp at = 3;\n  repeated int32 tags = 4 [\n    packed = false,\n\
         \x20   deprecated = true\n  ];\n\n  message Item {\n    string sku = 1;\n  }\n}\n"
    );
}

#[test]
fn canonical_reparses_to_itself() {
    let schemas = [
        "syntax = \"proto3\"; package a.b; message M { message N { enum E { X = 0; } E e = 1; } \
         N n = 1; repeated N ns = 2; map<int64, N.E> m = 3; optional bytes b = 4; oneof o { string s = 5; M m2 = 6; } }",
        "syntax = \"proto2\"; import \"google/protobuf/descriptor.proto\"; \
         message Opt { optional int32 a = 1; repeated string b = 2; optional Opt c = 3; \
           map<string, int32> m = 4; enum E { A = 0; B = 1; } extensions 1000 to 2000; } \
         extend google.protobuf.MessageOptions { optional Opt my_opt = 50000; repeated int32 rep = 50001; } \
         message A { option (my_opt) = { a: 1, b: [\"x\", \"y\"], c: { a: 2 }, m: [{key: \"k\", value: 1}] }; \
           option (rep) = 1; option (rep) = 2; \
           message X {} map<string, int32> m = 1; optional group G = 2 { optional int32 q = 1; } \
           message Y {} oneof o { int32 z = 4; } \
           required string s = 5 [default = \"a\\\"b\\n\"]; optional bytes by = 6 [default = \"\\001\\377\"]; \
           optional double d = 7 [default = -inf]; optional Opt.E e = 8 [default = B]; \
           extensions 100 to 199; extend Opt { optional int32 ext = 1000; } }",
        "syntax = \"proto3\"; enum Status { option allow_alias = true; reserved 5 to 9, 20; reserved \"OLD\"; \
         A = 0; B = 1; C = 1 [deprecated = true]; } \
         service S { option deprecated = true; rpc Ping (Empty) returns (Empty) { option idempotency_level = NO_SIDE_EFFECTS; } \
         rpc Stream (stream Empty) returns (stream Empty); } message Empty {}",
    ];
    for schema in schemas {
        let parsed = parse(schema);
        for text in [parsed.canonical(), parsed.normalized()] {
            let again = ProtobufSchema::parse(&text, &[])
                .unwrap_or_else(|error| panic!("printed text should parse: {error}\n{text}"));
            assert_eq!(
                again.canonical(),
                parse(&again.canonical()).canonical(),
                "{text}"
            );
        }
        assert_eq!(
            parse(&parsed.canonical()).canonical(),
            parsed.canonical(),
            "{schema}"
        );
    }
}

#[test]
fn canonical_keeps_the_order_of_nested_types() {
    // Message indexes on the wire count nested types, map entries and groups included, in
    // declaration order: the canonical text must declare them in the same order.
    let schemas = [
        "syntax = \"proto3\"; message A { message X {} map<string, int32> m = 1; message Y {} \
         map<int32, X> n = 2; }",
        "syntax = \"proto3\"; message A { map<string, int32> m = 1; message X {} }",
        "syntax = \"proto2\"; message A { message X {} optional group G = 1 { optional int32 q = 1; } \
         message Y {} }",
        "syntax = \"proto2\"; message A { extensions 100 to 200; } \
         extend A { optional group G = 100 { optional int32 x = 1; } } \
         message B { extend A { optional group H = 101 { optional int32 y = 1; } } message C {} } \
         message D {}",
    ];
    for schema in schemas {
        let parsed = parse(schema);
        let reparsed = parse(&parsed.canonical());
        assert_eq!(
            type_order(&reparsed),
            type_order(&parsed),
            "{}",
            parsed.canonical()
        );
        assert_eq!(reparsed.canonical(), parsed.canonical());
    }
}

#[test]
fn normalized_ignores_order_without_meaning() {
    let variants = [
        "syntax = \"proto3\"; import \"google/protobuf/timestamp.proto\"; import \"google/protobuf/duration.proto\"; \
         option java_package = \"p\"; option go_package = \"g\"; \
         message A { string b = 2; int32 a = 1; oneof o { int64 d = 4; int32 c = 3; } \
         repeated int32 r = 5 [deprecated = true, packed = true]; reserved 20, 10; } \
         enum E { X = 0; Z = 2; Y = 1; }",
        "syntax = \"proto3\"; import \"google/protobuf/duration.proto\"; import \"google/protobuf/timestamp.proto\"; \
         option go_package = \"g\"; option java_package = \"p\"; \
         message A { repeated int32 r = 5 [packed = true, deprecated = true]; int32 a = 1; \
         oneof o { int32 c = 3; int64 d = 4; } string b = 2; reserved 10, 20; } \
         enum E { X = 0; Y = 1; Z = 2; }",
    ];
    let first = parse(variants[0]);
    let second = parse(variants[1]);
    assert_ne!(first.canonical(), second.canonical());
    assert_eq!(first.normalized(), second.normalized());
    assert_eq!(
        parse(&first.normalized()).normalized(),
        first.normalized(),
        "normalizing is idempotent"
    );
}

// ---------------------------------------------------------------------------------------
// Parsing, references, names and formats.

#[test]
fn references_resolve_by_import_path() {
    let address = "syntax = \"proto3\"; package shop; message Address { string street = 1; }";
    let order = "syntax = \"proto3\"; package shop; import \"address.proto\"; \
                 message Order { int32 id = 1; Address ship_to = 2; }";
    let as_text = [reference("address.proto", 1, address)];
    let as_descriptor = [reference(
        "address.proto",
        1,
        &python_client_form("address.proto", address),
    )];
    for references in [&as_text[..], &as_descriptor[..]] {
        let parsed = ProtobufSchema::parse(order, references).expect("order with its reference");
        assert!(
            parsed.canonical().contains(".shop.Address ship_to = 2;"),
            "{}",
            parsed.canonical()
        );
        assert_eq!(parsed.record_name().as_deref(), Some("shop.Order"));
    }
    // A reference may take the name the schema's own file has among its imports.
    let named_default = [reference("default", 1, address)];
    let importing_default = order.replace("address.proto", "default");
    ProtobufSchema::parse(&importing_default, &named_default).expect("a reference named default");

    let missing = ProtobufSchema::parse(order, &[]).expect_err("the import is missing");
    assert!(missing.0.contains("address.proto"), "{missing}");

    // A reference's own references come in the same list.
    let street = "syntax = \"proto3\"; package shop; message Street { string name = 1; }";
    let address_with_street = "syntax = \"proto3\"; package shop; import \"street.proto\"; \
                               message Address { Street street = 1; }";
    let transitive = [
        reference("street.proto", 1, street),
        reference("address.proto", 2, address_with_street),
    ];
    ProtobufSchema::parse(order, &transitive).expect("transitive references");
}

#[test]
fn well_known_types_need_no_reference() {
    let schema = parse(
        "syntax = \"proto3\"; import \"google/protobuf/timestamp.proto\"; \
         import \"google/protobuf/wrappers.proto\"; import \"google/protobuf/any.proto\"; \
         message Event { google.protobuf.Timestamp at = 1; google.protobuf.StringValue note = 2; \
         google.protobuf.Any payload = 3; }",
    );
    assert!(
        schema
            .canonical()
            .contains(".google.protobuf.Timestamp at = 1;")
    );
}

#[test]
fn invalid_schemas_are_refused() {
    let cases = [
        (
            "a syntax error",
            "syntax = \"proto3\"; message { }",
            "expected an identifier",
        ),
        (
            "an unknown type",
            "syntax = \"proto3\"; message A { Missing m = 1; }",
            "Missing",
        ),
        (
            "a missing import",
            "syntax = \"proto3\"; import \"nowhere.proto\"; message A {}",
            "nowhere.proto",
        ),
        (
            "a duplicate field number",
            "syntax = \"proto3\"; message A { int32 a = 1; int32 b = 1; }",
            "",
        ),
        (
            "required in proto3",
            "syntax = \"proto3\"; message A { required int32 a = 1; }",
            "required",
        ),
        (
            "an unknown syntax",
            "syntax = \"proto4\"; message A {}",
            "proto4",
        ),
        ("base64 of something else", "aGVsbG8gd29ybGQ=", ""),
        ("a JSON schema", "{\"type\": \"object\"}", ""),
    ];
    for (what, schema, message_part) in cases {
        let error =
            ProtobufSchema::parse(schema, &[]).expect_err(&format!("{what} should be refused"));
        assert!(error.0.contains(message_part), "{what}: {error}");
    }
}

#[test]
fn serialized_format_round_trips_through_parse() {
    let schemas = [
        "syntax = \"proto3\"; package shop; import \"google/protobuf/timestamp.proto\"; \
         message Order { int32 id = 1; google.protobuf.Timestamp at = 2; map<string, int64> counts = 3; }",
        "syntax = \"proto2\"; message A { optional int32 a = 1 [default = 7]; }",
    ];
    for schema in schemas {
        let parsed = parse(schema);
        let serialized = parsed.formatted("serialized").expect("serialized format");
        let descriptor = decode_serialized(&parsed);
        assert!(descriptor.source_code_info.is_none(), "no source positions");
        let reparsed = parse(&serialized);
        assert_eq!(reparsed.canonical(), parsed.canonical());
        assert_eq!(reparsed.formatted("SERIALIZED"), Some(serialized));
    }
    assert_eq!(
        parse("syntax = \"proto3\"; message A {}").formatted("default"),
        None
    );
    assert_eq!(
        parse("syntax = \"proto3\"; message A {}").formatted("ignore_extensions"),
        None
    );
}

#[test]
fn record_name_is_the_first_message() {
    let cases = [
        (
            "syntax = \"proto3\"; package shop.v1; enum E { X = 0; } message Order {} message Item {}",
            Some("shop.v1.Order"),
        ),
        (
            "syntax = \"proto3\"; message Order { message Inner {} }",
            Some("Order"),
        ),
        (
            "syntax = \"proto3\"; package shop; enum Status { X = 0; }",
            Some("shop.Status"),
        ),
        ("syntax = \"proto3\"; package shop;", None),
    ];
    for (schema, expected) in cases {
        assert_eq!(parse(schema).record_name().as_deref(), expected, "{schema}");
    }
}

// ---------------------------------------------------------------------------------------
// Generated schemas.

/// One statement of a generated message body. Type choices index a list of scalars, the
/// file's messages and the message's own nested types.
#[derive(Debug, Clone)]
enum Item {
    Field { label: usize, type_choice: usize },
    Map { key: usize, value_choice: usize },
    Oneof(Vec<usize>),
    Nested,
    Enum,
}

const SCALARS: [&str; 10] = [
    "int32", "int64", "uint32", "sint32", "fixed64", "bool", "string", "bytes", "double", "float",
];

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        4 => (0..3usize, any::<usize>())
            .prop_map(|(label, type_choice)| Item::Field { label, type_choice }),
        1 => (0..4usize, any::<usize>()).prop_map(|(key, value_choice)| Item::Map { key, value_choice }),
        1 => proptest::collection::vec(any::<usize>(), 1..3).prop_map(Item::Oneof),
        1 => Just(Item::Nested),
        1 => Just(Item::Enum),
    ]
}

fn render_schema(proto3: bool, messages: &[Vec<Item>]) -> String {
    let mut text = String::new();
    text.push_str(if proto3 {
        "syntax = \"proto3\";\n"
    } else {
        "syntax = \"proto2\";\n"
    });
    text.push_str("package gen;\n");
    for (index, items) in messages.iter().enumerate() {
        let nested = items
            .iter()
            .filter(|item| matches!(item, Item::Nested))
            .count();
        let enums = items
            .iter()
            .filter(|item| matches!(item, Item::Enum))
            .count();
        let mut types: Vec<String> = SCALARS.iter().map(|scalar| scalar.to_string()).collect();
        types.extend((0..messages.len()).map(|other| format!("M{other}")));
        types.extend((0..nested).map(|nested| format!("N{nested}")));
        types.extend((0..enums).map(|enumeration| format!("E{enumeration}")));
        let labels: [&str; 3] = if proto3 {
            ["", "optional ", "repeated "]
        } else {
            ["optional ", "required ", "repeated "]
        };
        let (mut number, mut nested_index, mut enum_index) = (0, 0, 0);
        text.push_str(&format!("message M{index} {{\n"));
        for item in items {
            match item {
                Item::Field { label, type_choice } => {
                    number += 1;
                    let field_type = &types[type_choice % types.len()];
                    text.push_str(&format!(
                        "  {}{field_type} f{number} = {number};\n",
                        labels[*label]
                    ));
                }
                Item::Map { key, value_choice } => {
                    number += 1;
                    let key = ["string", "int32", "int64", "bool"][*key];
                    let value = &types[value_choice % types.len()];
                    text.push_str(&format!("  map<{key}, {value}> f{number} = {number};\n"));
                }
                Item::Oneof(members) => {
                    text.push_str(&format!("  oneof o{} {{\n", number + 1));
                    for member in members {
                        number += 1;
                        let member_type = &types[member % types.len()];
                        text.push_str(&format!("    {member_type} f{number} = {number};\n"));
                    }
                    text.push_str("  }\n");
                }
                Item::Nested => {
                    text.push_str(&format!(
                        "  message N{nested_index} {{ optional int32 x = 1; }}\n"
                    ));
                    nested_index += 1;
                }
                Item::Enum => {
                    text.push_str(&format!(
                        "  enum E{enum_index} {{ E{enum_index}_A = 0; E{enum_index}_B = 1; }}\n"
                    ));
                    enum_index += 1;
                }
            }
        }
        text.push_str("}\n");
    }
    text
}

/// Every message's full name, depth first in declaration order.
fn type_order(schema: &ProtobufSchema) -> Vec<String> {
    fn walk(prefix: &str, messages: &[prost_types::DescriptorProto], names: &mut Vec<String>) {
        for message in messages {
            let name = format!("{prefix}.{}", message.name());
            names.push(name.clone());
            walk(&name, &message.nested_type, names);
        }
    }
    let mut names = Vec::new();
    walk("", &decode_serialized(schema).message_type, &mut names);
    names
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 128,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn printed_forms_describe_the_same_schema(
        proto3 in any::<bool>(),
        messages in proptest::collection::vec(proptest::collection::vec(item(), 0..8), 1..4),
    ) {
        let text = render_schema(proto3, &messages);
        let parsed = ProtobufSchema::parse(&text, &[]);
        prop_assert!(parsed.is_ok(), "{:?}\n{}", parsed.err(), text);
        let parsed = parsed.expect("checked");
        let canonical = parse(&parsed.canonical());
        prop_assert_eq!(canonical.canonical(), parsed.canonical());
        // Message indexes count nested types, map entries included.
        prop_assert_eq!(type_order(&canonical), type_order(&parsed));
        let normalized = parse(&parsed.normalized());
        prop_assert_eq!(normalized.normalized(), parsed.normalized());
        let serialized = parse(&parsed.formatted("serialized").expect("serialized"));
        prop_assert_eq!(serialized.canonical(), parsed.canonical());
        for other in [&canonical, &normalized, &serialized] {
            prop_assert!(other.backward_incompatibilities(&parsed).is_empty());
            prop_assert!(parsed.backward_incompatibilities(other).is_empty());
        }
    }

    #[test]
    fn any_two_versions_compare_in_confluents_format(
        old in (any::<bool>(), proptest::collection::vec(proptest::collection::vec(item(), 0..8), 1..4)),
        new in (any::<bool>(), proptest::collection::vec(proptest::collection::vec(item(), 0..8), 1..4)),
    ) {
        let old = parse(&render_schema(old.0, &old.1));
        let new = parse(&render_schema(new.0, &new.1));
        let messages = new.backward_incompatibilities(&old);
        for message in &messages {
            prop_assert!(
                message.starts_with("{errorType:\"") && message.ends_with("\"}"),
                "{}",
                message
            );
        }
        prop_assert_eq!(new.backward_incompatibilities(&old), messages, "deterministic");
    }
}

// ---------------------------------------------------------------------------------------
// No input panics.

const SEED_SCHEMA: &str = "syntax = \"proto3\"; package p; \
    import \"google/protobuf/timestamp.proto\"; \
    message A { int32 a = 1; map<string, B> m = 2; oneof o { string s = 3; B b = 4; } \
    google.protobuf.Timestamp t = 5; message B { repeated int64 v = 1 [packed = false]; } \
    enum E { X = 0; Y = 1; } E e = 6; optional bytes by = 7; } \
    service S { rpc Get (A) returns (A); }";

const PROTO2_SEED_SCHEMA: &str = "syntax = \"proto2\"; package q; \
    import \"google/protobuf/descriptor.proto\"; \
    extend google.protobuf.FieldOptions { optional string tag = 50000; } \
    message A { required int32 a = 1 [default = 3, (tag) = \"x\"]; \
    optional group G = 2 { optional string s = 1 [default = \"\\001\"]; } \
    extensions 100 to 200; reserved 5 to 7; reserved \"old\"; \
    enum E { option allow_alias = true; X = 0; Y = 1; Z = 1; } optional E e = 3 [default = Z]; } \
    extend A { repeated sint64 more = 100 [packed = true]; }";

proptest! {
    // Failures are reproduced by the named tests below rather than a regressions file.
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn parse_never_panics_on_text(schema in "\\PC{0,200}") {
        let _ = ProtobufSchema::parse(&schema, &[]);
    }

    #[test]
    fn parse_never_panics_on_proto_like_text(
        schema in "(syntax = \"proto[23]\";)?( ?(message|enum|oneof|map<|optional|repeated|required|group|int32|string|[A-Za-z]{1,3}|=|[0-9]{1,3}|;|\\{|\\}|\\[|\\]|default|json_name|\"[a-z]*\"|,|>|\\.))*",
    ) {
        if let Ok(parsed) = ProtobufSchema::parse(&schema, &[]) {
            let _ = parsed.backward_incompatibilities(&parsed);
        }
    }

    #[test]
    fn parse_never_panics_on_altered_descriptors(
        seed in prop_oneof![Just(SEED_SCHEMA), Just(PROTO2_SEED_SCHEMA)],
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        truncate in proptest::option::of(any::<usize>()),
    ) {
        let mut bytes = BASE64.decode(parse(seed).formatted("serialized").expect("serialized"))
            .expect("base64");
        for (position, value) in edits {
            let index = position % bytes.len();
            bytes[index] = value;
        }
        if let Some(length) = truncate {
            bytes.truncate(length % (bytes.len() + 1));
        }
        if let Ok(parsed) = ProtobufSchema::parse(&BASE64.encode(&bytes), &[]) {
            let reparsed = ProtobufSchema::parse(&parsed.canonical(), &[]);
            prop_assert!(reparsed.is_ok(), "{:?}\n{}", reparsed, parsed.canonical());
            let reparsed = reparsed.expect("checked");
            prop_assert_eq!(reparsed.canonical(), parsed.canonical());
            let _ = parsed.record_name();
            let _ = parsed.formatted("serialized");
            let _ = parsed.backward_incompatibilities(&parse(seed));
            let _ = parse(seed).backward_incompatibilities(&parsed);
        }
    }
}

#[test]
fn descriptors_no_proto_file_can_state_are_refused() {
    // Found by `parse_never_panics_on_altered_descriptors`. prost-reflect panics while
    // reporting an unknown syntax, so the parser checks it first; and it accepts what the
    // `.proto` parser refuses (a required field in proto3), which the stored canonical text
    // could not say.
    let unknown_syntax = |descriptor: &mut prost_types::FileDescriptorProto| {
        descriptor.syntax = Some("\0roto3".to_owned());
    };
    let proto3_required = |descriptor: &mut prost_types::FileDescriptorProto| {
        descriptor.message_type[0].field[0].label =
            Some(prost_types::field_descriptor_proto::Label::Required as i32);
    };
    type Alter<'a> = &'a dyn Fn(&mut prost_types::FileDescriptorProto);
    let cases: [(&str, Alter, &str); 2] = [
        ("an unknown syntax", &unknown_syntax, "unknown syntax"),
        (
            "a proto3 required field",
            &proto3_required,
            "does not print as an equivalent",
        ),
    ];
    for (what, alter, message_part) in cases {
        let mut descriptor = decode_serialized(&parse(SEED_SCHEMA));
        alter(&mut descriptor);
        let error =
            ProtobufSchema::parse(&BASE64.encode(descriptor.encode_to_vec()), &[]).expect_err(what);
        assert!(error.0.contains(message_part), "{what}: {error}");
    }
}
