//! Protobuf schemas (Confluent's `PROTOBUF` schema type): parsing a `.proto` file with its
//! references, the canonical and normalized text the registry stores, and Confluent's
//! compatibility rules between two versions.
//!
//! It follows Confluent Schema Registry's protobuf provider: `ProtobufSchema` (parsing, the
//! record name, `?format=serialized`), `ProtobufSchemaUtils` (the printer) and the `diff`
//! package (`SchemaDiff`, `MessageSchemaDiff`, `FieldSchemaDiff`, `Difference`). It is not a
//! serializer: the Confluent wire format of Protobuf records (magic byte, schema id, message
//! indexes) lives with the serializers.
//!
//! Parsing. A schema is `.proto` text (proto2 or proto3) or, when it is not, a base64
//! serialized `FileDescriptorProto` (what Confluent's Python client registers). protox
//! compiles it against an in-memory resolver holding the references (an import path and its
//! text or base64 descriptor) and Google's well-known types, so every type name is resolved
//! before anything else looks at the schema. A descriptor can say things no `.proto` file
//! can; one whose printed text does not compile back to the same canonical text is refused,
//! since the text is what the registry keeps.
//!
//! Canonical text. Confluent prints the schema back from its parsed form
//! (`canonicalString()`); Sluice prints it from the compiled descriptor, the way Confluent
//! prints a schema that arrived as a descriptor: type names fully qualified with a leading dot
//! (`.shop.Address`), `json_name` only where it differs from the default, proto2 files without
//! a `syntax` line; and maps as `map<string, .shop.Item>`. So the `.proto` text and the base64
//! descriptor of one file get the same canonical string and the same id, and whitespace and
//! comments never matter. The body of a message keeps the order in which its nested types
//! were declared, synthetic map entry and group types included, because message indexes on
//! the wire count them.
//!
//! Normalized text (`normalize=true`, Confluent's `normalize()`): the canonical text with
//! imports sorted and deduplicated, options sorted by name, fields sorted by number, oneofs
//! sorted by their first field number, enum values sorted by number then name, and reserved
//! and extension ranges one per line sorted by start. Messages, enums, services and methods
//! keep their order: message indexes depend on it.
//!
//! Compatibility (`backward_incompatibilities`) ports Confluent's differences and reports the
//! ones outside `SchemaDiff.COMPATIBLE_CHANGES`, in Confluent's words: a removed message, a
//! field whose kind (scalar, message, map) or scalar group changed (an enum reads as an
//! int32), a message field whose type changed name or, taken from another file, became
//! incompatible, a numeric field's label change, a required field added or removed, a oneof
//! member removed while its oneof stays, fields that could be set together moved into one
//! oneof, a changed package. Adding and removing optional fields and messages, renaming
//! fields and every enum change are compatible.
//!
//! Known differences from Confluent:
//! - Built in are Google's `google/protobuf/*.proto` files and, from Confluent's bundle,
//!   `confluent/meta.proto`, `confluent/type/decimal.proto`, `google/type/date.proto` and
//!   `google/type/timeofday.proto` ([`crate::known_types`]); Confluent's other bundled files
//!   (`confluent/type/variant.proto`, the rest of `google/type/`) must be given as references.
//! - The canonical text of a `.proto` schema names types fully qualified where Confluent keeps
//!   them as written, so such a schema gets another canonical string than in Confluent. For a
//!   descriptor Confluent prints map entries as nested messages (`option map_entry = true`),
//!   which protoc refuses to read; Sluice prints `map<..>`.
//! - Groups are printed, and compared like message fields; Confluent drops the groups of a
//!   descriptor and ignores them when comparing. Weak imports are printed too.
//! - Options of extension ranges are not printed.
//! - A change of `syntax` alone is not reported, as in Confluent: what it changes (labels)
//!   is judged field by field.
//! - Messages of one scope are compared in declaration order (Confluent: hash order), so
//!   differences may come in another order.
//! - Messages say "new" for the schema the method is called on and "old" for `previous`;
//!   Confluent swaps the words when the check runs the other way (FORWARD).
//! - The check follows nested messages and referenced types at most `COMPARISON_DEPTH_MAX`
//!   deep and reports deeper ones as not compared.
//!
//! Cost: parsing compiles the file once with protox (twice for a descriptor: the printed
//! text is compiled back) and prints it twice; nothing of it is on a record's path. A
//! compatibility check visits every message and field of both versions once, and a message
//! of another file once per field that reaches it.

use std::any::Any;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::{self, Write as _};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use prost::Message as _;
use prost_reflect::{
    Cardinality, DescriptorPool, DynamicMessage, EnumDescriptor, ExtensionDescriptor,
    FieldDescriptor, FileDescriptor, Kind, MapKey, MessageDescriptor, MethodDescriptor,
    OneofDescriptor, ReflectMessage as _, ServiceDescriptor, Syntax, Value,
};
use prost_types::FieldDescriptorProto;
use prost_types::field_descriptor_proto::Label as ProtoLabel;
use protox::file::{ChainFileResolver, File, FileResolver};

use crate::schema::{InvalidSchema, ParsedSchema, ResolvedReference, SchemaType};

/// The name the schema's own file gets among the files it imports: Confluent's
/// `ProtobufSchema.DEFAULT_NAME`, which also names the file of `?format=serialized`.
const MAIN_FILE_NAME: &str = "default";

/// The largest field number (2^29 - 1): a field range reaching it prints as `to max`.
const FIELD_NUMBER_MAX: i64 = 536_870_911;

/// The largest enum value: an enum range reaching it prints as `to max`.
const ENUM_NUMBER_MAX: i64 = i32::MAX as i64;

/// `uninterpreted_option`, the field number every `*Options` message reserves for options
/// the compiler has not resolved; protox resolves them all, so it never prints.
const UNINTERPRETED_OPTION_NUMBER: u32 = 999;

/// How deep the compatibility check follows nested messages and message fields into other
/// files; a descriptor nests at most about 100 levels (prost's decoding limit), a `.proto`
/// file 32 (protox's), so only long chains of referenced types reach it.
const COMPARISON_DEPTH_MAX: usize = 256;

/// `FileDescriptorProto.source_code_info`: positions and comments, left out of the
/// serialized format.
const SOURCE_CODE_INFO_NUMBER: u32 = 9;

/// A Protobuf schema the registry accepted: its file compiled with every import, and the
/// two texts printed from it.
pub struct ProtobufSchema {
    /// The schema's file and every file it imports, type names resolved.
    pool: DescriptorPool,
    /// The schema's own file in `pool`.
    file_name: String,
    /// Subject and version of each referenced import path: a message type both versions
    /// take from the same subject version is not compared again (Confluent's check of
    /// `SchemaReference`s).
    references: HashMap<String, (String, i32)>,
    canonical: String,
    normalized: String,
}

impl fmt::Debug for ProtobufSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtobufSchema")
            .field("canonical", &self.canonical)
            .finish_non_exhaustive()
    }
}

impl ProtobufSchema {
    /// Parses `schema`, `.proto` text or a base64 serialized `FileDescriptorProto`, with its
    /// references (import path and text, or base64 descriptor, of each file it imports,
    /// directly or not). Google's well-known types need no reference.
    pub fn parse(
        schema: &str,
        references: &[ResolvedReference],
    ) -> Result<ProtobufSchema, InvalidSchema> {
        let file_name = main_file_name(references);
        let main = open_source(&file_name, schema).map_err(compile_error)?;
        let from_descriptor = main.source().is_none();
        let parsed = ProtobufSchema::compile(file_name, main, references)?;
        if from_descriptor {
            // The registry keeps the canonical text, not the descriptor. A descriptor can say
            // what no `.proto` file can (prost-reflect is more lenient than the parser), so
            // it is refused now rather than when the stored text is read back.
            let refused = |why: String| {
                InvalidSchema(format!(
                    "the descriptor does not print as an equivalent .proto file: {why}"
                ))
            };
            let text = File::from_source(&parsed.file_name, &parsed.canonical)
                .map_err(|error| refused(format!("{error:?}")))?;
            let reparsed = ProtobufSchema::compile(parsed.file_name.clone(), text, references)
                .map_err(|error| refused(error.0))?;
            if reparsed.canonical != parsed.canonical {
                return Err(refused(format!("it reads back as\n{}", reparsed.canonical)));
            }
        }
        Ok(parsed)
    }

    /// Compiles the schema's file `main` with its references and prints it.
    fn compile(
        file_name: String,
        main: File,
        references: &[ResolvedReference],
    ) -> Result<ProtobufSchema, InvalidSchema> {
        let mut resolver = ChainFileResolver::new();
        resolver.add(MemoryResolver {
            main_name: file_name.clone(),
            main,
            // A later reference of the same name replaces an earlier one, as in Confluent.
            references: references
                .iter()
                .map(|reference| (reference.name.clone(), reference.schema.clone()))
                .collect(),
        });
        resolver.add(crate::known_types::KnownTypesResolver::new());
        let mut compiler = protox::Compiler::with_file_resolver(resolver);
        compiler.open_file(&file_name).map_err(compile_error)?;
        let pool = compiler.descriptor_pool();
        check_map_entries(&pool)?;
        let file = pool.get_file_by_name(&file_name).ok_or_else(|| {
            InvalidSchema(format!("the schema's file '{file_name}' was not compiled"))
        })?;
        let canonical = Printer::new(Layout::Canonical).file(&file);
        let normalized = Printer::new(Layout::Normalized).file(&file);
        Ok(ProtobufSchema {
            references: references
                .iter()
                .map(|reference| {
                    (
                        reference.name.clone(),
                        (reference.subject.clone(), reference.version),
                    )
                })
                .collect(),
            pool,
            file_name,
            canonical,
            normalized,
        })
    }

    fn file(&self) -> FileDescriptor {
        self.pool
            .get_file_by_name(&self.file_name)
            .expect("parse checked that the schema's file is in its pool")
    }

    /// The file as a serialized `FileDescriptorProto`, custom options included and source
    /// positions left out.
    fn serialized_descriptor(&self) -> Vec<u8> {
        let encoded = self.file().encode_to_vec();
        let descriptor = prost_types::FileDescriptorProto::default().descriptor();
        match DynamicMessage::decode(descriptor, encoded.as_slice()) {
            Ok(mut file) => {
                file.clear_field_by_number(SOURCE_CODE_INFO_NUMBER);
                file.encode_to_vec()
            }
            // The pool encoded these bytes itself, so this does not happen; if it did, the
            // typed copy still describes every type, only custom options are missing.
            Err(_) => prost_types::FileDescriptorProto {
                source_code_info: None,
                ..self.file().file_descriptor_proto().clone()
            }
            .encode_to_vec(),
        }
    }

    /// Which subject version a file of this schema's pool comes from: the schema itself is
    /// the empty subject at version -1 (Confluent's dummy reference), a well-known type none.
    fn file_origin(&self, file_name: &str) -> Option<(String, i32)> {
        if file_name == self.file_name {
            return Some((String::new(), -1));
        }
        self.references.get(file_name).cloned()
    }
}

impl ParsedSchema for ProtobufSchema {
    fn schema_type(&self) -> SchemaType {
        SchemaType::Protobuf
    }

    fn canonical(&self) -> String {
        self.canonical.clone()
    }

    fn normalized(&self) -> String {
        self.normalized.clone()
    }

    /// The full name of the file's first message, or of its first enum when it has none
    /// (Confluent's `name()`).
    fn record_name(&self) -> Option<String> {
        let file = self.file();
        if let Some(message) = file.messages().next() {
            return Some(message.full_name().to_owned());
        }
        file.enums()
            .next()
            .map(|enumeration| enumeration.full_name().to_owned())
    }

    fn formatted(&self, format: &str) -> Option<String> {
        if !format.eq_ignore_ascii_case("serialized") {
            return None;
        }
        Some(BASE64.encode(self.serialized_descriptor()))
    }

    fn backward_incompatibilities(&self, previous: &dyn ParsedSchema) -> Vec<String> {
        self.incompatibilities_as_reader(previous, "new", "old")
    }

    fn incompatibilities_as_reader(
        &self,
        previous: &dyn ParsedSchema,
        reader_role: &str,
        writer_role: &str,
    ) -> Vec<String> {
        let Some(previous) = previous.as_any().downcast_ref::<ProtobufSchema>() else {
            return vec!["Incompatible because of different schema type".to_owned()];
        };
        let mut diff = Diff::new(previous, self);
        diff.files(&previous.file(), &self.file());
        let mut messages: Vec<String> = diff
            .differences
            .iter()
            .map(|difference| difference.message(reader_role, writer_role))
            .collect();
        if diff.too_deep {
            // What was not compared cannot be called compatible.
            messages.push(format!(
                "Protobuf messages nested deeper than {COMPARISON_DEPTH_MAX} (through fields and \
                 references) are not compared"
            ));
        }
        messages
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A name for the schema's own file that no reference uses.
fn main_file_name(references: &[ResolvedReference]) -> String {
    let taken: HashSet<&str> = references
        .iter()
        .map(|reference| reference.name.as_str())
        .collect();
    let mut name = MAIN_FILE_NAME.to_owned();
    let mut suffix = 0u32;
    while taken.contains(name.as_str()) {
        suffix += 1;
        name = format!("{MAIN_FILE_NAME}_{suffix}");
    }
    name
}

fn compile_error(error: protox::Error) -> InvalidSchema {
    // The Debug form is protox's one-line "file:line:column: message".
    InvalidSchema(format!("{error:?}"))
}

/// Opens one file: `.proto` text, or else a base64 serialized `FileDescriptorProto`. When
/// it is neither, the error is the `.proto` parser's, which says most about a typo.
fn open_source(name: &str, schema: &str) -> Result<File, protox::Error> {
    let text_error = match File::from_source(name, schema) {
        Ok(file) => return Ok(file),
        Err(error) => error,
    };
    match decode_descriptor(name, schema) {
        Some(file) => file,
        None => Err(text_error),
    }
}

/// The file a base64 `FileDescriptorProto` describes; `None` when `schema` is no such thing.
fn decode_descriptor(name: &str, schema: &str) -> Option<Result<File, protox::Error>> {
    let mut encoded = BASE64.decode(schema.trim()).ok()?;
    let descriptor = prost_types::FileDescriptorProto::decode(encoded.as_slice()).ok()?;
    // Checked here because prost-reflect panics while reporting an unknown syntax.
    if !matches!(descriptor.syntax(), "" | "proto2" | "proto3") {
        return Some(Err(protox::Error::new(DescriptorProblem(format!(
            "{name}: unknown syntax '{}'",
            descriptor.syntax().escape_debug()
        )))));
    }
    // The file must be known by the import path that names it, whatever name it was built
    // under. The last occurrence of a singular field wins, so appending the name renames the
    // file without going through prost-types, which would drop custom options.
    prost::encoding::string::encode(1, &name.to_owned(), &mut encoded);
    Some(File::decode_file_descriptor_proto(encoded.as_slice()).map_err(protox::Error::new))
}

/// A descriptor refused before protox sees it; prints the same for `Display` and `Debug`,
/// since protox's errors print through `Debug`.
struct DescriptorProblem(String);

impl fmt::Display for DescriptorProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for DescriptorProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DescriptorProblem {}

/// Serves the schema's own file and its references to protox by import path; anything else
/// falls through to the well-known types.
struct MemoryResolver {
    main_name: String,
    main: File,
    references: HashMap<String, String>,
}

impl FileResolver for MemoryResolver {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        if name == self.main_name {
            return Ok(self.main.clone());
        }
        match self.references.get(name) {
            Some(schema) => open_source(name, schema),
            None => Err(protox::Error::file_not_found(name)),
        }
    }
}

/// A descriptor can say `map_entry = true` of any message; a map entry without its key and
/// value fields cannot be printed as a map, so such a schema is refused.
fn check_map_entries(pool: &DescriptorPool) -> Result<(), InvalidSchema> {
    for message in pool.all_messages() {
        if message.is_map_entry() && map_entry_fields(&message).is_none() {
            return Err(InvalidSchema(format!(
                "map entry '{}' must have a key field 1 and a value field 2",
                message.full_name()
            )));
        }
    }
    Ok(())
}

/// The key and value fields of a map entry message.
fn map_entry_fields(entry: &MessageDescriptor) -> Option<(FieldDescriptor, FieldDescriptor)> {
    if !entry.is_map_entry() {
        return None;
    }
    Some((entry.get_field(1)?, entry.get_field(2)?))
}

/// The key and value kinds when a field of `kind` and `cardinality` is a map.
fn map_kinds(kind: &Kind, cardinality: Cardinality) -> Option<(Kind, Kind)> {
    if cardinality != Cardinality::Repeated {
        return None;
    }
    let (key, value) = map_entry_fields(kind.as_message()?)?;
    Some((key.kind(), value.kind()))
}

/// A field's label as Confluent's parsed form has it: none in a oneof, none for a proto3
/// field without `optional`, `optional` for a proto3 `optional` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Label {
    Optional,
    Required,
    Repeated,
}

impl Label {
    fn of(proto: &FieldDescriptorProto, in_oneof: bool, proto3: bool) -> Option<Label> {
        if proto.proto3_optional() {
            return Some(Label::Optional);
        }
        if in_oneof {
            return None;
        }
        match proto.label() {
            ProtoLabel::Repeated => Some(Label::Repeated),
            ProtoLabel::Required => Some(Label::Required),
            ProtoLabel::Optional if proto3 => None,
            ProtoLabel::Optional => Some(Label::Optional),
        }
    }

    fn keyword(self) -> &'static str {
        match self {
            Label::Optional => "optional",
            Label::Required => "required",
            Label::Repeated => "repeated",
        }
    }
}

/// Whether `field` is in a oneof written in the schema (not the synthetic oneof of a proto3
/// `optional` field).
fn in_real_oneof(field: &FieldDescriptor) -> bool {
    field
        .containing_oneof()
        .is_some_and(|oneof| !oneof.is_synthetic())
}

fn is_proto3(file: &FileDescriptor) -> bool {
    file.syntax() == Syntax::Proto3
}

/// The `json_name` protoc derives from a field name: underscores dropped, the letter after
/// each one upper-cased.
fn default_json_name(name: &str) -> String {
    let mut json_name = String::with_capacity(name.len());
    let mut capitalize_next = false;
    for character in name.chars() {
        if character == '_' {
            capitalize_next = true;
        } else if capitalize_next {
            json_name.push(character.to_ascii_uppercase());
            capitalize_next = false;
        } else {
            json_name.push(character);
        }
    }
    json_name
}

// ---------------------------------------------------------------------------------------
// The printer.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Declaration order: the string the registry stores and compares.
    Canonical,
    /// Sorted where order carries no meaning: `normalize=true`.
    Normalized,
}

/// One option as printed: `name = value`, in a statement or in a field's brackets.
struct OptionText {
    /// `java_package`, or `(pkg.custom)` for a custom option.
    name: String,
    /// The name without parentheses, by which normalization sorts (as Confluent does).
    sort_key: String,
    value: String,
}

/// A field or an extension, as much of it as printing needs.
struct FieldSpec {
    name: String,
    number: u32,
    kind: Kind,
    label: Option<Label>,
    map: Option<(Kind, Kind)>,
    /// The group's message type when the field is a group declared in this scope: printed
    /// inline (`optional group Name = 1 { ... }`) rather than as a field and a message.
    group: Option<MessageDescriptor>,
    options: Vec<OptionText>,
}

/// Prints a compiled file back as `.proto` text in Confluent's layout: statements grouped
/// in sections (reserved, options, fields, oneofs, extensions, extend blocks, nested types),
/// a blank line before each section, two spaces of indentation per level.
struct Printer {
    layout: Layout,
}

impl Printer {
    fn new(layout: Layout) -> Printer {
        Printer { layout }
    }

    fn normalizes(&self) -> bool {
        self.layout == Layout::Normalized
    }

    fn file(&self, file: &FileDescriptor) -> String {
        let proto = file.file_descriptor_proto();
        let mut out = String::new();
        // A proto2 file prints no syntax line: protoc leaves `syntax` unset in the
        // descriptors of proto2 files, and protox does so even when the text says "proto2".
        if is_proto3(file) {
            out.push_str("syntax = \"proto3\";\n");
        }
        if !proto.package().is_empty() {
            let _ = writeln!(out, "package {};", proto.package());
        }
        push_section(&mut out, &self.imports(proto), false);
        push_section(&mut out, &self.statement_options(&file.options()), false);

        let extensions: Vec<ExtensionDescriptor> = file.extensions().collect();
        let (groups, plain) = split_group_extensions(&extensions, None);
        let mut types: Vec<String> = file
            .messages()
            .map(|message| match groups.get(message.full_name()) {
                // Where parsing must declare the group's type, among the messages.
                Some(extension) => self
                    .extend_blocks(std::slice::from_ref(extension), None)
                    .concat(),
                None => self.message_block(&message, format!("message {}", message.name())),
            })
            .collect();
        types.extend(
            file.enums()
                .map(|enumeration| self.enum_block(&enumeration)),
        );
        push_section(&mut out, &types, false);
        push_section(&mut out, &self.extend_blocks(&plain, None), false);
        let services: Vec<String> = file
            .services()
            .map(|service| self.service_block(&service))
            .collect();
        push_section(&mut out, &services, false);
        out
    }

    fn imports(&self, proto: &prost_types::FileDescriptorProto) -> Vec<String> {
        let mut plain = Vec::new();
        let mut public = Vec::new();
        let mut weak = Vec::new();
        for (index, dependency) in proto.dependency.iter().enumerate() {
            let index = i32::try_from(index).unwrap_or(i32::MAX);
            if proto.public_dependency.contains(&index) {
                public.push(dependency.as_str());
            } else if proto.weak_dependency.contains(&index) {
                weak.push(dependency.as_str());
            } else {
                plain.push(dependency.as_str());
            }
        }
        if self.normalizes() {
            for list in [&mut plain, &mut public, &mut weak] {
                list.sort_unstable();
                list.dedup();
            }
        }
        let mut lines = Vec::new();
        for (keyword, list) in [("", plain), ("public ", public), ("weak ", weak)] {
            for dependency in list {
                lines.push(format!("import {keyword}{};\n", quote(dependency)));
            }
        }
        lines
    }

    /// `header {` and the body of a message (or of a group, whose body is a message's).
    fn message_block(&self, message: &MessageDescriptor, header: String) -> String {
        let proto = message.descriptor_proto();
        let body = MessageBody::of(message);
        // Normalization orders by field number and keeps Confluent's layout, whatever the
        // order of the synthetic types.
        let fields_first = self.normalizes() || body.fields_first_keeps_type_order();
        let mut out = header;
        out.push_str(" {");
        push_section(&mut out, &self.message_reserved(proto), true);
        push_section(&mut out, &self.statement_options(&message.options()), true);

        let mut fields: Vec<&FieldDescriptor> = body
            .top_level()
            .filter(|field| fields_first || body.declared_type(field).is_none())
            .collect();
        if self.normalizes() {
            fields.sort_by_key(|field| field.number());
        }
        let fields: Vec<String> = fields
            .into_iter()
            .map(|field| self.field_text(self.field_spec(message, field)))
            .collect();
        push_section(&mut out, &fields, true);

        let mut oneofs: Vec<(&OneofDescriptor, Vec<&FieldDescriptor>)> = body
            .oneofs
            .iter()
            .map(|oneof| (oneof, body.members(oneof).collect()))
            .filter(|(_, members): &(_, Vec<_>)| !members.is_empty())
            .collect();
        if self.normalizes() {
            for (_, members) in &mut oneofs {
                members.sort_by_key(|field| field.number());
            }
            oneofs.sort_by_key(|(_, members)| members.first().map(|field| field.number()));
        }
        let oneofs: Vec<String> = oneofs
            .iter()
            .map(|(oneof, members)| self.oneof_block(message, oneof, members))
            .collect();
        push_section(&mut out, &oneofs, true);

        let ranges: Vec<(i64, i64)> = proto
            .extension_range
            .iter()
            .map(|range| (i64::from(range.start()), i64::from(range.end()) - 1))
            .collect();
        let extension_ranges = self.ranges("extensions", ranges, Vec::new(), FIELD_NUMBER_MAX);
        push_section(&mut out, &extension_ranges, true);
        let extend_blocks = self.extend_blocks(&body.plain_extensions, Some(message));
        push_section(&mut out, &extend_blocks, true);

        let mut types = Vec::new();
        for nested in &body.nested {
            if let Some(extension) = body.group_extensions.get(nested.full_name()) {
                // Where parsing must declare the group's type, among the nested messages.
                let slice = std::slice::from_ref(extension);
                types.push(self.extend_blocks(slice, Some(message)).concat());
            } else if !body.is_synthetic(nested) {
                types.push(self.message_block(nested, format!("message {}", nested.name())));
            } else if !fields_first {
                // A map or group field prints where parsing must declare its type.
                if let Some(field) = body.top_level_declaring(nested) {
                    types.push(self.field_text(self.field_spec(message, field)));
                }
            }
        }
        types.extend(
            message
                .child_enums()
                .map(|enumeration| self.enum_block(&enumeration)),
        );
        push_section(&mut out, &types, true);
        out.push_str("}\n");
        out
    }

    fn oneof_block(
        &self,
        message: &MessageDescriptor,
        oneof: &OneofDescriptor,
        members: &[&FieldDescriptor],
    ) -> String {
        let mut out = format!("oneof {} {{", oneof.name());
        push_section(&mut out, &self.statement_options(&oneof.options()), true);
        let fields: Vec<String> = members
            .iter()
            .map(|field| self.field_text(self.field_spec(message, field)))
            .collect();
        push_section(&mut out, &fields, true);
        out.push_str("}\n");
        out
    }

    fn field_spec(&self, message: &MessageDescriptor, field: &FieldDescriptor) -> FieldSpec {
        let proto = field.field_descriptor_proto();
        let kind = field.kind();
        let mut options = self.options(&field.options());
        if proto.default_value.is_some() {
            options.push(self.default_option(proto, &field.default_value(), &kind));
        }
        if let Some(json_name) = proto.json_name.as_deref()
            && json_name != default_json_name(field.name())
        {
            options.push(OptionText {
                name: "json_name".to_owned(),
                sort_key: "json_name".to_owned(),
                value: quote(json_name),
            });
        }
        self.sort_options(&mut options);
        FieldSpec {
            name: field.name().to_owned(),
            number: field.number(),
            label: Label::of(proto, in_real_oneof(field), is_proto3(&field.parent_file())),
            map: map_kinds(&kind, field.cardinality()),
            group: synthetic_type(message, field).filter(|_| field.is_group()),
            kind,
            options,
        }
    }

    fn extension_spec(
        &self,
        extension: &ExtensionDescriptor,
        scope: Option<&MessageDescriptor>,
    ) -> FieldSpec {
        let proto = extension.field_descriptor_proto();
        let kind = extension.kind();
        let mut options = self.options(&extension.options());
        if proto.default_value.is_some() {
            options.push(self.default_option(proto, &extension.default_value(), &kind));
        }
        // An extension takes no `json_name` option.
        self.sort_options(&mut options);
        let group = if extension.is_group() {
            kind.as_message()
                .filter(|declared| declared_in(declared, scope))
                .cloned()
        } else {
            None
        };
        FieldSpec {
            name: extension.name().to_owned(),
            number: extension.number(),
            label: Label::of(proto, false, is_proto3(&extension.parent_file())),
            map: map_kinds(&kind, extension.cardinality()),
            group,
            kind,
            options,
        }
    }

    fn default_option(
        &self,
        proto: &FieldDescriptorProto,
        value: &Value,
        kind: &Kind,
    ) -> OptionText {
        // An enum default keeps the value name written, which the pool checked exists (an
        // alias prints as written, not as the first name of its number).
        let value = match kind {
            Kind::Enum(_) => proto.default_value().to_owned(),
            _ => self.value(value, kind),
        };
        OptionText {
            name: "default".to_owned(),
            sort_key: "default".to_owned(),
            value,
        }
    }

    fn field_text(&self, spec: FieldSpec) -> String {
        let label = spec
            .label
            .map(|label| format!("{} ", label.keyword()))
            .unwrap_or_default();
        let options = inline_options(&spec.options);
        if let Some(group) = &spec.group {
            let header = format!("{label}group {} = {}{options}", group.name(), spec.number);
            return self.message_block(group, header);
        }
        match &spec.map {
            Some((key, value)) => format!(
                "map<{}, {}> {} = {}{options};\n",
                type_name(key),
                type_name(value),
                spec.name,
                spec.number
            ),
            None => format!(
                "{label}{} {} = {}{options};\n",
                type_name(&spec.kind),
                spec.name,
                spec.number
            ),
        }
    }

    /// `extend .pkg.Message { ... }` blocks for the extensions declared in one scope, one per
    /// extended message in order of first appearance.
    fn extend_blocks(
        &self,
        extensions: &[ExtensionDescriptor],
        scope: Option<&MessageDescriptor>,
    ) -> Vec<String> {
        let mut by_extendee: Vec<(String, Vec<&ExtensionDescriptor>)> = Vec::new();
        for extension in extensions {
            let extendee = extension.containing_message().full_name().to_owned();
            match by_extendee.iter_mut().find(|(name, _)| *name == extendee) {
                Some((_, members)) => members.push(extension),
                None => by_extendee.push((extendee, vec![extension])),
            }
        }
        by_extendee
            .into_iter()
            .map(|(extendee, mut members)| {
                if self.normalizes() {
                    members.sort_by_key(|extension| extension.number());
                }
                let mut out = format!("extend .{extendee} {{");
                let fields: Vec<String> = members
                    .iter()
                    .map(|extension| self.field_text(self.extension_spec(extension, scope)))
                    .collect();
                push_section(&mut out, &fields, true);
                out.push_str("}\n");
                out
            })
            .collect()
    }

    fn message_reserved(&self, proto: &prost_types::DescriptorProto) -> Vec<String> {
        let ranges = proto
            .reserved_range
            .iter()
            .map(|range| (i64::from(range.start()), i64::from(range.end()) - 1))
            .collect();
        self.ranges(
            "reserved",
            ranges,
            proto.reserved_name.clone(),
            FIELD_NUMBER_MAX,
        )
    }

    /// `keyword 5;`, `keyword 8 to 10;`, `keyword 100 to max;` and `keyword "name";`, one
    /// statement each (ranges inclusive here), as Confluent prints a descriptor's ranges.
    fn ranges(
        &self,
        keyword: &str,
        ranges: Vec<(i64, i64)>,
        names: Vec<String>,
        max: i64,
    ) -> Vec<String> {
        let mut items: Vec<(i64, String)> = ranges
            .into_iter()
            .map(|(start, end)| {
                let text = if start == end {
                    start.to_string()
                } else if end >= max {
                    format!("{start} to max")
                } else {
                    format!("{start} to {end}")
                };
                (start, text)
            })
            .chain(names.iter().map(|name| (i64::MAX, quote(name))))
            .collect();
        if self.normalizes() {
            items.sort();
        }
        items
            .into_iter()
            .map(|(_, text)| format!("{keyword} {text};\n"))
            .collect()
    }

    fn enum_block(&self, enumeration: &EnumDescriptor) -> String {
        let proto = enumeration.enum_descriptor_proto();
        let mut out = format!("enum {} {{", enumeration.name());
        let ranges = proto
            .reserved_range
            .iter()
            .map(|range| (i64::from(range.start()), i64::from(range.end())))
            .collect();
        let reserved = self.ranges(
            "reserved",
            ranges,
            proto.reserved_name.clone(),
            ENUM_NUMBER_MAX,
        );
        let options = self.statement_options(&enumeration.options());
        let mut values: Vec<_> = proto
            .value
            .iter()
            .filter_map(|value| enumeration.get_value_by_name(value.name()))
            .collect();
        if self.normalizes() {
            values.sort_by(|left, right| {
                (left.number(), left.name()).cmp(&(right.number(), right.name()))
            });
        }
        // Confluent's enum layout: no blank line between reserved, options and values.
        if !reserved.is_empty() || !options.is_empty() || !values.is_empty() {
            out.push('\n');
        }
        for line in reserved.iter().chain(&options) {
            push_indented(&mut out, line);
        }
        for value in values {
            let mut options = self.options(&value.options());
            self.sort_options(&mut options);
            let line = format!(
                "{} = {}{};\n",
                value.name(),
                value.number(),
                inline_options(&options)
            );
            push_indented(&mut out, &line);
        }
        out.push_str("}\n");
        out
    }

    fn service_block(&self, service: &ServiceDescriptor) -> String {
        let mut out = format!("service {} {{", service.name());
        push_section(&mut out, &self.statement_options(&service.options()), true);
        let methods: Vec<String> = service
            .methods()
            .map(|method| self.method_text(&method))
            .collect();
        push_section(&mut out, &methods, true);
        out.push_str("}\n");
        out
    }

    fn method_text(&self, method: &MethodDescriptor) -> String {
        let stream = |streaming: bool| if streaming { "stream " } else { "" };
        let mut out = format!(
            "rpc {} ({}.{}) returns ({}.{})",
            method.name(),
            stream(method.is_client_streaming()),
            method.input().full_name(),
            stream(method.is_server_streaming()),
            method.output().full_name()
        );
        let options = self.statement_options(&method.options());
        if options.is_empty() {
            out.push_str(";\n");
        } else {
            out.push_str(" {\n");
            for option in &options {
                push_indented(&mut out, option);
            }
            out.push_str("}\n");
        }
        out
    }

    /// `option name = value;` statements.
    fn statement_options(&self, options: &DynamicMessage) -> Vec<String> {
        let mut options = self.options(options);
        self.sort_options(&mut options);
        options
            .iter()
            .map(|option| format!("option {} = {};\n", option.name, option.value))
            .collect()
    }

    /// Every option set in an `*Options` message: standard ones by field number, then custom
    /// ones by extension number. A repeated option gives one entry per value.
    fn options(&self, options: &DynamicMessage) -> Vec<OptionText> {
        let mut texts = Vec::new();
        let mut fields: Vec<(FieldDescriptor, &Value)> = options
            .fields()
            .filter(|(field, _)| field.number() != UNINTERPRETED_OPTION_NUMBER)
            .collect();
        fields.sort_by_key(|(field, _)| field.number());
        for (field, value) in fields {
            self.push_option(&mut texts, field.name(), field.name(), value, &field.kind());
        }
        let mut extensions: Vec<(ExtensionDescriptor, &Value)> = options.extensions().collect();
        extensions.sort_by_key(|(extension, _)| extension.number());
        for (extension, value) in extensions {
            let name = format!("({})", extension.full_name());
            self.push_option(
                &mut texts,
                &name,
                extension.full_name(),
                value,
                &extension.kind(),
            );
        }
        texts
    }

    fn push_option(
        &self,
        texts: &mut Vec<OptionText>,
        name: &str,
        sort_key: &str,
        value: &Value,
        kind: &Kind,
    ) {
        let values = match value {
            Value::List(values) => values.iter().collect(),
            value => vec![value],
        };
        for value in values {
            texts.push(OptionText {
                name: name.to_owned(),
                sort_key: sort_key.to_owned(),
                value: self.value(value, kind),
            });
        }
    }

    fn sort_options(&self, options: &mut [OptionText]) {
        if self.normalizes() {
            options.sort_by(|left, right| left.sort_key.cmp(&right.sort_key));
        }
    }

    /// A value as `.proto` text: a literal, an enum value name, or a message in the text
    /// format's aggregate syntax.
    fn value(&self, value: &Value, kind: &Kind) -> String {
        match value {
            Value::Bool(value) => value.to_string(),
            Value::I32(value) => value.to_string(),
            Value::I64(value) => value.to_string(),
            Value::U32(value) => value.to_string(),
            Value::U64(value) => value.to_string(),
            Value::F32(value) => float_text(*value),
            Value::F64(value) => float_text(*value),
            Value::String(value) => quote(value),
            Value::Bytes(value) => quote_bytes(value),
            Value::EnumNumber(number) => kind
                .as_enum()
                .and_then(|enumeration| enumeration.get_value(*number))
                .map(|value| value.name().to_owned())
                .unwrap_or_else(|| number.to_string()),
            Value::Message(message) => self.aggregate(message),
            Value::List(values) => {
                let items: Vec<String> =
                    values.iter().map(|value| self.value(value, kind)).collect();
                format!("[{}]", items.join(", "))
            }
            Value::Map(entries) => {
                let value_kind = kind
                    .as_message()
                    .and_then(map_entry_fields)
                    .map(|(_, value)| value.kind());
                let mut keys: Vec<&MapKey> = entries.keys().collect();
                keys.sort();
                let items: Vec<String> = keys
                    .into_iter()
                    .map(|key| {
                        let value = match &value_kind {
                            Some(value_kind) => self.value(&entries[key], value_kind),
                            None => self.value(&entries[key], kind),
                        };
                        format!("{{ key: {}, value: {value} }}", map_key_text(key))
                    })
                    .collect();
                format!("[{}]", items.join(", "))
            }
        }
    }

    /// A message value as `{ name: value, [extension.name]: value }`, fields by number.
    fn aggregate(&self, message: &DynamicMessage) -> String {
        let mut entries = Vec::new();
        let mut fields: Vec<(FieldDescriptor, &Value)> = message.fields().collect();
        fields.sort_by_key(|(field, _)| field.number());
        for (field, value) in fields {
            // The text format names a group field by its type's name.
            let name = match (field.is_group(), field.kind().as_message()) {
                (true, Some(group)) => group.name().to_owned(),
                _ => field.name().to_owned(),
            };
            entries.push(format!("{name}: {}", self.value(value, &field.kind())));
        }
        let mut extensions: Vec<(ExtensionDescriptor, &Value)> = message.extensions().collect();
        extensions.sort_by_key(|(extension, _)| extension.number());
        for (extension, value) in extensions {
            entries.push(format!(
                "[{}]: {}",
                extension.full_name(),
                self.value(value, &extension.kind())
            ));
        }
        if entries.is_empty() {
            "{}".to_owned()
        } else {
            format!("{{ {} }}", entries.join(", "))
        }
    }
}

/// What a message body holds, in declaration order, and which of its nested types parsing
/// its printed text declares by itself: a map field's entry and a group's message. Parsing
/// declares such a type where its field is, and message indexes on the wire count nested
/// types, so the printer keeps them in their place among the nested messages.
struct MessageBody<'m> {
    message: &'m MessageDescriptor,
    fields: Vec<FieldDescriptor>,
    /// The oneofs written in the schema (not the synthetic ones of proto3 `optional`).
    oneofs: Vec<OneofDescriptor>,
    nested: Vec<MessageDescriptor>,
    /// The extensions declared here that are groups, by their type's full name: each
    /// prints in an extend block of its own where its type is declared.
    group_extensions: HashMap<String, ExtensionDescriptor>,
    /// The other extensions declared here, printed in extend blocks after the oneofs.
    plain_extensions: Vec<ExtensionDescriptor>,
}

impl<'m> MessageBody<'m> {
    fn of(message: &'m MessageDescriptor) -> MessageBody<'m> {
        let extensions: Vec<ExtensionDescriptor> = message.child_extensions().collect();
        let (group_extensions, plain_extensions) =
            split_group_extensions(&extensions, Some(message));
        MessageBody {
            message,
            fields: message
                .descriptor_proto()
                .field
                .iter()
                .filter_map(|field| message.get_field_by_name(field.name()))
                .collect(),
            oneofs: message
                .oneofs()
                .filter(|oneof| !oneof.is_synthetic())
                .collect(),
            group_extensions,
            plain_extensions,
            nested: message.child_messages().collect(),
        }
    }

    fn top_level(&self) -> impl Iterator<Item = &FieldDescriptor> {
        self.fields.iter().filter(|field| !in_real_oneof(field))
    }

    fn members<'a>(
        &'a self,
        oneof: &'a OneofDescriptor,
    ) -> impl Iterator<Item = &'a FieldDescriptor> {
        self.fields.iter().filter(move |field| {
            field
                .containing_oneof()
                .is_some_and(|containing| containing.name() == oneof.name())
        })
    }

    /// The nested type `field` makes parsing declare, by full name.
    fn declared_type(&self, field: &FieldDescriptor) -> Option<String> {
        synthetic_type(self.message, field).map(|declared| declared.full_name().to_owned())
    }

    fn is_synthetic(&self, nested: &MessageDescriptor) -> bool {
        nested.is_map_entry()
            || self
                .fields
                .iter()
                .any(|field| self.declared_type(field).as_deref() == Some(nested.full_name()))
    }

    /// The top-level field that declares the synthetic type `nested`.
    fn top_level_declaring(&self, nested: &MessageDescriptor) -> Option<&FieldDescriptor> {
        self.top_level()
            .find(|field| self.declared_type(field).as_deref() == Some(nested.full_name()))
    }

    /// Whether printing fields, then oneofs, then nested messages (the common case and
    /// Confluent's layout) declares the nested types in their order: the synthetic types
    /// all come before the first message written out, in that order.
    fn fields_first_keeps_type_order(&self) -> bool {
        let printed: Vec<String> = self
            .top_level()
            .chain(self.oneofs.iter().flat_map(|oneof| self.members(oneof)))
            .filter_map(|field| self.declared_type(field))
            .collect();
        let declared: Vec<&str> = self
            .nested
            .iter()
            .take_while(|nested| self.is_synthetic(nested))
            .map(|nested| nested.full_name())
            .collect();
        let synthetic_count = self
            .nested
            .iter()
            .filter(|nested| self.is_synthetic(nested))
            .count();
        declared.len() == synthetic_count && printed.iter().map(String::as_str).eq(declared)
    }
}

/// The nested type a field of `message` makes parsing declare by itself: its map entry, or
/// its group's message, when that type is nested in `message`.
fn synthetic_type(
    message: &MessageDescriptor,
    field: &FieldDescriptor,
) -> Option<MessageDescriptor> {
    let declared = field.kind().as_message()?.clone();
    let synthetic = if field.is_group() {
        true
    } else {
        map_kinds(&field.kind(), field.cardinality()).is_some()
    };
    (synthetic && declared_in(&declared, Some(message))).then_some(declared)
}

/// Whether `message` is declared directly in `scope` (a message, or the file for `None`).
fn declared_in(message: &MessageDescriptor, scope: Option<&MessageDescriptor>) -> bool {
    match (message.parent_message(), scope) {
        (Some(parent), Some(scope)) => parent.full_name() == scope.full_name(),
        (None, None) => true,
        _ => false,
    }
}

/// The extensions declared in `scope` split in two: groups whose type is declared in
/// `scope` too, by that type's full name, and the others.
fn split_group_extensions(
    extensions: &[ExtensionDescriptor],
    scope: Option<&MessageDescriptor>,
) -> (
    HashMap<String, ExtensionDescriptor>,
    Vec<ExtensionDescriptor>,
) {
    let mut groups = HashMap::new();
    let mut plain = Vec::new();
    for extension in extensions {
        let kind = extension.kind();
        match kind.as_message() {
            Some(declared) if extension.is_group() && declared_in(declared, scope) => {
                groups.insert(declared.full_name().to_owned(), extension.clone());
            }
            _ => plain.push(extension.clone()),
        }
    }
    (groups, plain)
}

/// The `.proto` name of a scalar field type (`sint32`, `fixed64`, ...); none for a
/// message or an enum.
pub fn scalar_type_name(kind: &Kind) -> Option<&'static str> {
    Some(match kind {
        Kind::Double => "double",
        Kind::Float => "float",
        Kind::Int32 => "int32",
        Kind::Int64 => "int64",
        Kind::Uint32 => "uint32",
        Kind::Uint64 => "uint64",
        Kind::Sint32 => "sint32",
        Kind::Sint64 => "sint64",
        Kind::Fixed32 => "fixed32",
        Kind::Fixed64 => "fixed64",
        Kind::Sfixed32 => "sfixed32",
        Kind::Sfixed64 => "sfixed64",
        Kind::Bool => "bool",
        Kind::String => "string",
        Kind::Bytes => "bytes",
        Kind::Message(_) | Kind::Enum(_) => return None,
    })
}

fn type_name(kind: &Kind) -> String {
    match kind {
        Kind::Message(message) => format!(".{}", message.full_name()),
        Kind::Enum(enumeration) => format!(".{}", enumeration.full_name()),
        scalar => scalar_type_name(scalar).unwrap_or_default().to_owned(),
    }
}

/// Field options in brackets: ` [a = 1]`, or one per line when there are several.
fn inline_options(options: &[OptionText]) -> String {
    match options {
        [] => String::new(),
        [option] => format!(" [{} = {}]", option.name, option.value),
        options => {
            let lines: Vec<String> = options
                .iter()
                .map(|option| format!("  {} = {}", option.name, option.value))
                .collect();
            format!(" [\n{}\n]", lines.join(",\n"))
        }
    }
}

/// Appends a section: a line break (closing the line that opened the block, a blank line
/// after an earlier section) and each block, indented one level inside a block.
fn push_section(out: &mut String, blocks: &[String], indented: bool) {
    if blocks.is_empty() {
        return;
    }
    // The first section of a file starts it without a blank line.
    if !out.is_empty() {
        out.push('\n');
    }
    for block in blocks {
        if indented {
            push_indented(out, block);
        } else {
            out.push_str(block);
        }
    }
}

fn push_indented(out: &mut String, block: &str) {
    for line in block.lines() {
        if !line.is_empty() {
            out.push_str("  ");
            out.push_str(line);
        }
        out.push('\n');
    }
}

/// A float literal: the shortest text that reads back as the same value, `inf`, `-inf` or
/// `nan`.
fn float_text<T: fmt::Debug + Into<f64> + Copy>(value: T) -> String {
    let wide: f64 = value.into();
    if wide.is_nan() {
        "nan".to_owned()
    } else if wide.is_infinite() {
        if wide > 0.0 { "inf" } else { "-inf" }.to_owned()
    } else {
        format!("{value:?}")
    }
}

/// A string literal. Control characters are escaped, so every line break in printed text
/// is one the printer put there.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            control if control.is_ascii_control() => {
                let _ = write!(out, "\\{:03o}", u32::from(control));
            }
            other => out.push(other),
        }
    }
    out.push('"');
    out
}

/// A bytes literal: printable ASCII as is, everything else as octal escapes.
fn quote_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for &byte in bytes {
        match byte {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b' '..=b'~' => out.push(char::from(byte)),
            other => {
                let _ = write!(out, "\\{other:03o}");
            }
        }
    }
    out.push('"');
    out
}

fn map_key_text(key: &MapKey) -> String {
    match key {
        MapKey::Bool(value) => value.to_string(),
        MapKey::I32(value) => value.to_string(),
        MapKey::I64(value) => value.to_string(),
        MapKey::U32(value) => value.to_string(),
        MapKey::U64(value) => value.to_string(),
        MapKey::String(value) => quote(value),
    }
}

// ---------------------------------------------------------------------------------------
// Compatibility.

/// The incompatible kinds of Confluent's `Difference.Type`. The compatible ones
/// (`FIELD_ADDED`, `FIELD_REMOVED`, `ENUM_CONST_CHANGED`, `ONEOF_FIELD_MOVED_TO_TOP_LEVEL`, ...)
/// never reach a message, so they are not recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DifferenceType {
    PackageChanged,
    MessageRemoved,
    FieldKindChanged,
    FieldScalarKindChanged,
    FieldNamedTypeChanged,
    FieldNumericLabelChanged,
    RequiredFieldAdded,
    RequiredFieldRemoved,
    OneofFieldRemoved,
    MultipleFieldsMovedToOneof,
    FieldMovedToExistingOneof,
}

impl DifferenceType {
    fn name(self) -> &'static str {
        match self {
            DifferenceType::PackageChanged => "PACKAGE_CHANGED",
            DifferenceType::MessageRemoved => "MESSAGE_REMOVED",
            DifferenceType::FieldKindChanged => "FIELD_KIND_CHANGED",
            DifferenceType::FieldScalarKindChanged => "FIELD_SCALAR_KIND_CHANGED",
            DifferenceType::FieldNamedTypeChanged => "FIELD_NAMED_TYPE_CHANGED",
            DifferenceType::FieldNumericLabelChanged => "FIELD_NUMERIC_LABEL_CHANGED",
            DifferenceType::RequiredFieldAdded => "REQUIRED_FIELD_ADDED",
            DifferenceType::RequiredFieldRemoved => "REQUIRED_FIELD_REMOVED",
            DifferenceType::OneofFieldRemoved => "ONEOF_FIELD_REMOVED",
            DifferenceType::MultipleFieldsMovedToOneof => "MULTIPLE_FIELDS_MOVED_TO_ONEOF",
            DifferenceType::FieldMovedToExistingOneof => "FIELD_MOVED_TO_EXISTING_ONEOF",
        }
    }

    /// Confluent's description, with the reader's and the writer's roles filled in as its
    /// `SchemaValidatorBuilder` does: "new" and "old" for a backward check, swapped for a
    /// forward one.
    fn description(self, path: &str, new: &str, old: &str) -> String {
        match self {
            DifferenceType::PackageChanged => format!(
                "The package at '{path}' in the {new} schema does not match the package in the \
                 {old} schema"
            ),
            DifferenceType::MessageRemoved => format!(
                "The {new} schema is missing a MESSAGE type at path '{path}' in the {old} schema"
            ),
            DifferenceType::FieldKindChanged => format!(
                "The type of a field at path '{path}' in the {new} schema does not match the \
                 {old} schema"
            ),
            DifferenceType::FieldScalarKindChanged => format!(
                "The kind of a SCALAR field at path '{path}' in the {new} schema does not match \
                 its kind in the {old} schema"
            ),
            DifferenceType::FieldNamedTypeChanged => format!(
                "The type of a MESSAGE field at path '{path}' in the {new} schema does not match \
                 its type in the {old} schema"
            ),
            DifferenceType::FieldNumericLabelChanged => format!(
                "The label for a NUMERIC field at path '{path}' in the {new} schema does not \
                 match its label in the {old} schema"
            ),
            // Confluent's wording, double space included.
            DifferenceType::RequiredFieldAdded => format!(
                "A required field  at path '{path}' in the {new} schema is missing in the {old} \
                 schema"
            ),
            DifferenceType::RequiredFieldRemoved => format!(
                "The {new} schema is missing a required field at path: '{path}' in the {old} \
                 schema"
            ),
            DifferenceType::OneofFieldRemoved => format!(
                "The {new} schema is missing a oneof field at path '{path}' in the {old} schema"
            ),
            DifferenceType::MultipleFieldsMovedToOneof => format!(
                "Multiple fields in the oneof at path '{path}' in the {new} schema are outside a \
                 oneof in the {old} schema"
            ),
            DifferenceType::FieldMovedToExistingOneof => format!(
                "A field in the oneof at path '{path}' in the {new} schema is outside an existing \
                 oneof in the {old} schema"
            ),
        }
    }
}

/// One incompatibility at a path such as `#/Order/2` (message, then field number) or
/// `#/Order/payment/3` (a field in a oneof).
struct Difference {
    kind: DifferenceType,
    path: String,
}

impl Difference {
    /// Confluent's message, the reader and the writer named by their roles.
    fn message(&self, reader_role: &str, writer_role: &str) -> String {
        format!(
            "{{errorType:\"{}\", description:\"{}\"}}",
            self.kind.name(),
            self.kind.description(&self.path, reader_role, writer_role)
        )
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message("new", "old"))
    }
}

/// A field's type as the rules see it: an enum counts as a scalar, a map entry as a map.
enum FieldType {
    Scalar(Kind),
    Message(MessageDescriptor),
    Map(Box<FieldType>, Box<FieldType>),
}

impl FieldType {
    fn of(kind: Kind, cardinality: Cardinality) -> FieldType {
        if let Some((key, value)) = map_kinds(&kind, cardinality) {
            return FieldType::Map(
                Box::new(FieldType::of(key, Cardinality::Optional)),
                Box::new(FieldType::of(value, Cardinality::Optional)),
            );
        }
        match kind {
            Kind::Message(message) => FieldType::Message(message),
            scalar => FieldType::Scalar(scalar),
        }
    }
}

/// The groups of scalar types whose values read each other (protobuf's "updating a message
/// type" rules, as Confluent groups them); an enum reads as an int32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScalarGroup {
    GeneralNumber,
    SignedNumber,
    StringOrBytes,
    Fixed32,
    Fixed64,
    Float,
    Double,
}

impl ScalarGroup {
    fn of(kind: &Kind) -> ScalarGroup {
        match kind {
            Kind::Int32
            | Kind::Int64
            | Kind::Uint32
            | Kind::Uint64
            | Kind::Bool
            | Kind::Enum(_) => ScalarGroup::GeneralNumber,
            Kind::Sint32 | Kind::Sint64 => ScalarGroup::SignedNumber,
            Kind::String | Kind::Bytes => ScalarGroup::StringOrBytes,
            // `FieldType::of` keeps messages apart, so none gets here; a length-delimited
            // group keeps the match total without a panic.
            Kind::Message(_) => ScalarGroup::StringOrBytes,
            Kind::Fixed32 | Kind::Sfixed32 => ScalarGroup::Fixed32,
            Kind::Fixed64 | Kind::Sfixed64 => ScalarGroup::Fixed64,
            Kind::Float => ScalarGroup::Float,
            Kind::Double => ScalarGroup::Double,
        }
    }
}

/// A field of a message as the rules see it.
struct DiffField {
    field: FieldDescriptor,
    label: Option<Label>,
    required: bool,
    /// The oneof it is in, if any (never the synthetic one of a proto3 `optional`).
    oneof: Option<String>,
}

/// The fields of a message by number, and its oneofs (name and member numbers, in
/// declaration order).
struct MessageFields {
    by_number: HashMap<u32, DiffField>,
    oneofs: Vec<(String, Vec<u32>)>,
}

impl MessageFields {
    fn of(message: &MessageDescriptor) -> MessageFields {
        let proto3 = is_proto3(&message.parent_file());
        let mut by_number = HashMap::new();
        for field in message.fields() {
            let proto = field.field_descriptor_proto();
            let oneof = field
                .containing_oneof()
                .filter(|oneof| !oneof.is_synthetic())
                .map(|oneof| oneof.name().to_owned());
            let label = Label::of(proto, oneof.is_some(), proto3);
            let required = proto.label() == ProtoLabel::Required;
            by_number.insert(
                field.number(),
                DiffField {
                    field,
                    label,
                    required,
                    oneof,
                },
            );
        }
        let oneofs = message
            .oneofs()
            .filter(|oneof| !oneof.is_synthetic())
            .map(|oneof| {
                let members = oneof.fields().map(|field| field.number()).collect();
                (oneof.name().to_owned(), members)
            })
            .collect();
        MessageFields { by_number, oneofs }
    }
}

/// Confluent's `SchemaDiff` walk: the original (old) schema against the update (new).
struct Diff<'a> {
    original: &'a ProtobufSchema,
    update: &'a ProtobufSchema,
    /// Where the walk is: message names, oneof names and field numbers.
    path: Vec<String>,
    /// Full names of the original messages being compared, so a recursive type reached
    /// again through a field is not compared forever (Confluent's `SchemaScope`).
    in_progress: Vec<String>,
    /// Whether some message lay deeper than `COMPARISON_DEPTH_MAX` and went uncompared.
    too_deep: bool,
    differences: Vec<Difference>,
}

impl<'a> Diff<'a> {
    fn new(original: &'a ProtobufSchema, update: &'a ProtobufSchema) -> Diff<'a> {
        Diff {
            original,
            update,
            path: Vec::new(),
            in_progress: Vec::new(),
            too_deep: false,
            differences: Vec::new(),
        }
    }

    fn add(&mut self, kind: DifferenceType) {
        self.differences.push(Difference {
            kind,
            path: format!("#/{}", self.path.join("/")),
        });
    }

    fn add_at(&mut self, segments: &[String], kind: DifferenceType) {
        let depth = self.path.len();
        self.path.extend_from_slice(segments);
        self.add(kind);
        self.path.truncate(depth);
    }

    fn files(&mut self, original: &FileDescriptor, update: &FileDescriptor) {
        if original.package_name() != update.package_name() {
            self.add(DifferenceType::PackageChanged);
        }
        self.message_lists(original.messages().collect(), update.messages().collect());
    }

    /// Messages of one scope, matched by name. A map entry is no type in the `.proto` that
    /// Confluent compares, so it is left to the map field.
    fn message_lists(&mut self, original: Vec<MessageDescriptor>, update: Vec<MessageDescriptor>) {
        for original_message in original.iter().filter(|message| !message.is_map_entry()) {
            self.path.push(original_message.name().to_owned());
            let update_message = update.iter().find(|message| {
                message.name() == original_message.name() && !message.is_map_entry()
            });
            match update_message {
                None => self.add(DifferenceType::MessageRemoved),
                Some(update_message) => self.messages(original_message, update_message),
            }
            self.path.pop();
        }
        // A message only in the update is MESSAGE_ADDED, which is compatible.
    }

    /// Confluent's `MessageSchemaDiff.compare`: fields by number across the whole message,
    /// whatever oneof they are in, then the nested messages.
    fn messages(&mut self, original: &MessageDescriptor, update: &MessageDescriptor) {
        if self
            .in_progress
            .iter()
            .any(|name| name == original.full_name())
        {
            return;
        }
        if self.in_progress.len() >= COMPARISON_DEPTH_MAX {
            self.too_deep = true;
            return;
        }
        self.in_progress.push(original.full_name().to_owned());
        let original_fields = MessageFields::of(original);
        let update_fields = MessageFields::of(update);

        // A oneof gone by name with none of its members left anywhere was deleted whole,
        // which is compatible; members dropped from a oneof that survives in part are not.
        let completely_deleted: HashSet<&str> = original_fields
            .oneofs
            .iter()
            .filter(|(name, members)| {
                !update_fields
                    .oneofs
                    .iter()
                    .any(|(update_name, _)| update_name == name)
                    && !members
                        .iter()
                        .any(|number| update_fields.by_number.contains_key(number))
            })
            .map(|(name, _)| name.as_str())
            .collect();

        // Fields that could be set together in old data and are now in one oneof.
        for (name, members) in &update_fields.oneofs {
            let mut origins = HashSet::new();
            let mut moved_from_top_level = 0;
            for number in members {
                match original_fields.by_number.get(number) {
                    Some(DiffField {
                        oneof: Some(oneof), ..
                    }) => {
                        origins.insert(format!("oneof:{oneof}"));
                    }
                    Some(_) => {
                        origins.insert(format!("field:{number}"));
                        moved_from_top_level += 1;
                    }
                    // A new field: old data never set it.
                    None => {}
                }
            }
            if origins.len() > 1 {
                let kind = if moved_from_top_level > 1 {
                    DifferenceType::MultipleFieldsMovedToOneof
                } else {
                    DifferenceType::FieldMovedToExistingOneof
                };
                self.add_at(std::slice::from_ref(name), kind);
            }
        }

        let numbers: BTreeSet<u32> = original_fields
            .by_number
            .keys()
            .chain(update_fields.by_number.keys())
            .copied()
            .collect();
        for number in numbers {
            let original_field = original_fields.by_number.get(&number);
            let update_field = update_fields.by_number.get(&number);
            match (original_field, update_field) {
                (Some(original_field), None) => match &original_field.oneof {
                    Some(oneof) if !completely_deleted.contains(oneof.as_str()) => self.add_at(
                        &[oneof.clone(), number.to_string()],
                        DifferenceType::OneofFieldRemoved,
                    ),
                    Some(_) => {}
                    None if original_field.required => {
                        self.add_at(&[number.to_string()], DifferenceType::RequiredFieldRemoved)
                    }
                    // FIELD_REMOVED: compatible.
                    None => {}
                },
                (None, Some(update_field)) => {
                    if update_field.oneof.is_none() && update_field.required {
                        self.add_at(&[number.to_string()], DifferenceType::RequiredFieldAdded);
                    }
                }
                (Some(original_field), Some(update_field)) => {
                    // Reported where the field now is: in its oneof, or at the top level.
                    let depth = self.path.len();
                    if let Some(oneof) = &update_field.oneof {
                        self.path.push(oneof.clone());
                    }
                    self.path.push(number.to_string());
                    self.fields(original_field, update_field);
                    self.path.truncate(depth);
                }
                (None, None) => {}
            }
        }

        self.message_lists(
            original.child_messages().collect(),
            update.child_messages().collect(),
        );
        self.in_progress.pop();
    }

    /// Confluent's `FieldSchemaDiff.compare`; a new name is compatible.
    fn fields(&mut self, original: &DiffField, update: &DiffField) {
        let original_type = FieldType::of(original.field.kind(), original.field.cardinality());
        let update_type = FieldType::of(update.field.kind(), update.field.cardinality());
        self.types(original.label, update.label, &original_type, &update_type);
    }

    fn types(
        &mut self,
        original_label: Option<Label>,
        update_label: Option<Label>,
        original: &FieldType,
        update: &FieldType,
    ) {
        match (original, update) {
            (FieldType::Scalar(original), FieldType::Scalar(update)) => {
                let group = ScalarGroup::of(original);
                if group != ScalarGroup::of(update) {
                    self.add(DifferenceType::FieldScalarKindChanged);
                    return;
                }
                let label_changed = matches!(
                    (original_label, update_label),
                    (Some(original), Some(update)) if original != update
                );
                // A string or bytes field changing label is compatible.
                if label_changed && group != ScalarGroup::StringOrBytes {
                    self.add(DifferenceType::FieldNumericLabelChanged);
                }
            }
            (FieldType::Message(original), FieldType::Message(update)) => {
                self.message_types(original, update);
            }
            (
                FieldType::Map(original_key, original_value),
                FieldType::Map(update_key, update_value),
            ) => {
                self.types(None, None, original_key, update_key);
                self.types(None, None, original_value, update_value);
            }
            _ => self.add(DifferenceType::FieldKindChanged),
        }
    }

    /// Confluent's `compareMessageTypes`: the type's name within its package must stay; a
    /// type taken from elsewhere than both sides' same subject version is compared too, and
    /// any incompatibility in it makes the field's type incompatible.
    fn message_types(&mut self, original: &MessageDescriptor, update: &MessageDescriptor) {
        let original_local = local_name(original);
        let update_local = local_name(update);
        if original_local != update_local {
            self.add(DifferenceType::FieldNamedTypeChanged);
            return;
        }
        let original_origin = self.original.file_origin(original.parent_file().name());
        let update_origin = self.update.file_origin(update.parent_file().name());
        if let (Some(original_origin), Some(update_origin)) = (&original_origin, &update_origin)
            && original_origin == update_origin
        {
            // Both in the schema's own file (compared as messages of the file) or both from
            // the same subject version.
            return;
        }
        let field_path = std::mem::replace(
            &mut self.path,
            original_local.split('.').map(str::to_owned).collect(),
        );
        let before = self.differences.len();
        self.messages(original, update);
        self.path = field_path;
        if self.differences.len() > before {
            self.add(DifferenceType::FieldNamedTypeChanged);
        }
    }
}

/// A message's name within its package: `Outer.Inner` for `.shop.Outer.Inner`.
fn local_name(message: &MessageDescriptor) -> String {
    let full_name = message.full_name();
    let package = message.package_name();
    if package.is_empty() {
        return full_name.to_owned();
    }
    full_name
        .strip_prefix(package)
        .and_then(|rest| rest.strip_prefix('.'))
        .unwrap_or(full_name)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_json_names_follow_protoc() {
        let cases = [
            ("order_id", "orderId"),
            ("name", "name"),
            ("a__b", "aB"),
            ("trailing_", "trailing"),
            ("_leading", "Leading"),
            ("already_Camel", "alreadyCamel"),
        ];
        for (name, expected) in cases {
            assert_eq!(default_json_name(name), expected, "{name}");
        }
    }

    #[test]
    fn literals_escape_what_would_break_a_line_or_a_quote() {
        let cases = [
            (quote("plain"), "\"plain\""),
            (quote("a\"b\\c"), "\"a\\\"b\\\\c\""),
            (
                quote("line\nbreak\ttab\u{1}"),
                "\"line\\nbreak\\ttab\\001\"",
            ),
            (quote("é"), "\"é\""),
            (quote_bytes(&[0, 255, b'a', b'"']), "\"\\000\\377a\\\"\""),
        ];
        for (printed, expected) in cases {
            assert_eq!(printed, expected);
        }
    }

    #[test]
    fn floats_print_shortest_round_trip_text() {
        let cases = [
            (float_text(1.5f64), "1.5"),
            (float_text(1.0f64), "1.0"),
            (float_text(1e300f64), "1e300"),
            (float_text(0.1f32), "0.1"),
            (float_text(f64::INFINITY), "inf"),
            (float_text(f64::NEG_INFINITY), "-inf"),
            (float_text(f32::NAN), "nan"),
        ];
        for (printed, expected) in cases {
            assert_eq!(printed, expected);
        }
    }

    #[test]
    fn field_options_print_inline_or_one_per_line() {
        let option = |name: &str, value: &str| OptionText {
            name: name.to_owned(),
            sort_key: name.to_owned(),
            value: value.to_owned(),
        };
        assert_eq!(inline_options(&[]), "");
        assert_eq!(
            inline_options(&[option("packed", "true")]),
            " [packed = true]"
        );
        assert_eq!(
            inline_options(&[option("packed", "true"), option("deprecated", "true")]),
            " [\n  packed = true,\n  deprecated = true\n]"
        );
    }

    #[test]
    fn descriptions_are_confluents_words() {
        let cases = [
            (
                DifferenceType::PackageChanged,
                "The package at '#/' in the new schema does not match the package in the old schema",
            ),
            (
                DifferenceType::MessageRemoved,
                "The new schema is missing a MESSAGE type at path '#/' in the old schema",
            ),
            (
                DifferenceType::FieldKindChanged,
                "The type of a field at path '#/' in the new schema does not match the old schema",
            ),
            (
                DifferenceType::FieldScalarKindChanged,
                "The kind of a SCALAR field at path '#/' in the new schema does not match its kind in the old schema",
            ),
            (
                DifferenceType::FieldNamedTypeChanged,
                "The type of a MESSAGE field at path '#/' in the new schema does not match its type in the old schema",
            ),
            (
                DifferenceType::FieldNumericLabelChanged,
                "The label for a NUMERIC field at path '#/' in the new schema does not match its label in the old schema",
            ),
            (
                DifferenceType::RequiredFieldAdded,
                "A required field  at path '#/' in the new schema is missing in the old schema",
            ),
            (
                DifferenceType::RequiredFieldRemoved,
                "The new schema is missing a required field at path: '#/' in the old schema",
            ),
            (
                DifferenceType::OneofFieldRemoved,
                "The new schema is missing a oneof field at path '#/' in the old schema",
            ),
            (
                DifferenceType::MultipleFieldsMovedToOneof,
                "Multiple fields in the oneof at path '#/' in the new schema are outside a oneof in the old schema",
            ),
            (
                DifferenceType::FieldMovedToExistingOneof,
                "A field in the oneof at path '#/' in the new schema is outside an existing oneof in the old schema",
            ),
        ];
        for (kind, expected) in cases {
            assert_eq!(
                kind.description("#/", "new", "old"),
                expected,
                "{}",
                kind.name()
            );
        }
    }

    #[test]
    fn difference_prints_in_confluent_format() {
        let difference = Difference {
            kind: DifferenceType::FieldScalarKindChanged,
            path: "#/Order/2".to_owned(),
        };
        assert_eq!(
            difference.to_string(),
            "{errorType:\"FIELD_SCALAR_KIND_CHANGED\", description:\"The kind of a SCALAR field at \
             path '#/Order/2' in the new schema does not match its kind in the old schema\"}"
        );
    }
}
