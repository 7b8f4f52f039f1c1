//! Debezium's `io.debezium.transforms.ExtractNewRecordState` ("event flattening"):
//! replaces a Debezium change event (a struct whose schema name ends in `.Envelope`,
//! with `before`, `after`, `source`, `transaction`, `op`, `ts_ms`) by its `after` state.
//! Records that are not change events pass through untouched.
//!
//! Deletes (events whose `after` is null) and tombstones (null values) follow
//! `delete.tombstone.handling.mode` when it is set (Debezium 2.5+; the only option left
//! in Debezium 3.2+, whose default became `tombstone`):
//!
//! | mode                     | delete event                       | tombstone |
//! |--------------------------|------------------------------------|-----------|
//! | `drop`                   | dropped                            | dropped   |
//! | `tombstone`              | null value under the row schema    | dropped   |
//! | `rewrite`                | `before` + `__deleted` = `"true"`  | dropped   |
//! | `rewrite-with-tombstone` | `before` + `__deleted` = `"true"`  | kept      |
//! | `delete-to-tombstone`    | null value, null schema            | dropped   |
//!
//! and otherwise the deprecated pair Debezium 2.x and 3.0/3.1 read: `delete.handling.mode`
//! = `drop` (default) | `none` (null value) | `rewrite`, and `drop.tombstones` (default
//! true). In the rewrite modes creates and updates get `__deleted` = `"false"` (a
//! string, as Debezium writes it). An event whose `before` and `after` are both null (a
//! truncate) is dropped.
//!
//! `add.fields` / `add.headers` copy envelope fields into the row or the headers:
//! `op`, `ts_ms`, `ts_us`, `ts_ns` from the envelope, `id`, `total_order`,
//! `data_collection_order` from `transaction`, any other name from `source`, or
//! `struct.field` explicitly; each is named `<prefix><field>` or
//! `<prefix><struct>_<field>` (prefixes `add.fields.prefix` / `add.headers.prefix`,
//! default `__`), or `<prefix><name>` with `field:name`. A field the event lacks is
//! skipped. A tombstone gets an `op` header of `d`. `route.by.field` renames the topic
//! to the value of a row field. Debezium's `drop.fields.*` options (driven by a header
//! that `ExtractChangedRecordState` writes) are refused: not implemented here.

use crate::ConfigError;
use crate::data::{DataError, Header, Record, Schema, SchemaRef, Struct, Type, Value};

use super::Transform;
use super::config::Options;
use super::insert_field::InsertField;
use super::support::{
    SchemaCache, add_field, copy_schema_basics, header_bytes, java_split, require_struct,
    struct_get, struct_with_basics,
};

const PURPOSE: &str = "source field insertion";
const DELETED_FIELD: &str = "__deleted";
const ENVELOPE_SCHEMA_SUFFIX: &str = ".Envelope";

/// Debezium 2.5+'s `delete.tombstone.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TombstoneMode {
    Drop,
    Tombstone,
    Rewrite,
    RewriteWithTombstone,
    DeleteToTombstone,
}

/// The deprecated `delete.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LegacyDelete {
    Drop,
    Rewrite,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deletes {
    Mode(TombstoneMode),
    Legacy {
        delete: LegacyDelete,
        drop_tombstones: bool,
    },
}

/// What becomes of a delete event.
enum DeleteAction {
    Drop,
    /// The row schema with a null value.
    NullValue,
    /// No schema, no value.
    Tombstone,
    /// `before`, marked deleted.
    Rewrite,
}

impl Deletes {
    fn keeps_tombstones(self) -> bool {
        match self {
            Deletes::Mode(mode) => mode == TombstoneMode::RewriteWithTombstone,
            Deletes::Legacy {
                drop_tombstones, ..
            } => !drop_tombstones,
        }
    }

    fn on_delete(self) -> DeleteAction {
        match self {
            Deletes::Mode(TombstoneMode::Drop)
            | Deletes::Legacy {
                delete: LegacyDelete::Drop,
                ..
            } => DeleteAction::Drop,
            Deletes::Mode(TombstoneMode::Tombstone)
            | Deletes::Legacy {
                delete: LegacyDelete::None,
                ..
            } => DeleteAction::NullValue,
            Deletes::Mode(TombstoneMode::DeleteToTombstone) => DeleteAction::Tombstone,
            Deletes::Mode(TombstoneMode::Rewrite | TombstoneMode::RewriteWithTombstone)
            | Deletes::Legacy {
                delete: LegacyDelete::Rewrite,
                ..
            } => DeleteAction::Rewrite,
        }
    }

    fn is_rewrite(self) -> bool {
        matches!(self.on_delete(), DeleteAction::Rewrite)
    }
}

/// An envelope field to copy into the row or the headers (Debezium's `FieldReference`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldReference {
    /// The envelope field holding it (`source`, `transaction`), or None for a top-level
    /// field.
    parent: Option<String>,
    field: String,
    /// The name of the added field or header.
    new_name: String,
}

impl FieldReference {
    fn parse(prefix: &str, spec: &str) -> Result<FieldReference, String> {
        let unexpected = || format!("Unexpected field name: {spec}");
        let parts = java_split(spec, ':');
        let Some(path) = parts.first() else {
            return Err(unexpected());
        };
        let steps = java_split(path, '.');
        let (parent, field) = match steps.as_slice() {
            [] => return Err(unexpected()),
            [field] => (default_parent(field), field.to_string()),
            [parent, field, ..] => (Some(parent.to_string()), field.to_string()),
        };
        let new_name = match parts.len() {
            1 if steps.len() == 1 => format!("{prefix}{field}"),
            1 => format!("{prefix}{}_{field}", parent.as_deref().unwrap_or_default()),
            2 => format!("{prefix}{}", parts[1]),
            _ => return Err(unexpected()),
        };
        Ok(FieldReference {
            parent,
            field,
            new_name,
        })
    }

    /// A comma list of references (`add.fields`, `add.headers`).
    fn parse_all(prefix: &str, specs: &str) -> Result<Vec<FieldReference>, String> {
        if specs.is_empty() {
            return Ok(Vec::new());
        }
        java_split(specs, ',')
            .into_iter()
            .map(|spec| FieldReference::parse(prefix, spec.trim()))
            .collect()
    }

    /// The schema of the added field: the source field's, made optional; None where the
    /// event has no such field.
    fn schema_in(&self, envelope: &Schema) -> Option<SchemaRef> {
        let parent = match &self.parent {
            Some(name) => envelope.get_field(name).map(|f| &*f.schema),
            None => Some(envelope),
        };
        let field = parent
            .and_then(|p| p.get_field(&self.field))
            // Another transform may have put the field at the top level.
            .or_else(|| envelope.get_field(&self.field))?;
        Some(SchemaRef::new(copy_schema_basics(&field.schema).optional()))
    }

    /// The value to copy, read without defaults; null where its parent is null.
    fn value_in(&self, envelope: &Struct) -> Result<Value, DataError> {
        let parent = match &self.parent {
            None => envelope,
            Some(name) => match envelope
                .schema
                .get_field(name)
                .map(|f| &envelope.values[f.index])
            {
                Some(Value::Struct(parent)) => parent,
                _ => return Ok(Value::Null),
            },
        };
        if parent.schema.get_field(&self.field).is_some() {
            struct_get(parent, &self.field, false)
        } else {
            struct_get(envelope, &self.field, false)
        }
    }
}

fn default_parent(field: &str) -> Option<String> {
    match field {
        "id" | "total_order" | "data_collection_order" => Some("transaction".into()),
        "op" | "ts_ms" | "ts_us" | "ts_ns" => None,
        "updateDescription" => Some("updateDescription".into()),
        _ => Some("source".into()),
    }
}

pub(crate) struct ExtractNewRecordState {
    deletes: Deletes,
    added_fields: Vec<FieldReference>,
    added_headers: Vec<FieldReference>,
    route_by_field: Option<String>,
    mark_deleted: InsertField,
    mark_live: InsertField,
    schemas: SchemaCache<(SchemaRef, SchemaRef)>,
}

pub(crate) fn extract_new_record_state(
    options: &mut Options,
) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(ExtractNewRecordState::configure(options)?))
}

/// Debezium's validation text for an option.
fn invalid(options: &mut Options, option: &str, value: &str, problem: &str) {
    options.error(
        option,
        format!("The '{option}' value '{value}' is invalid: {problem}"),
    );
}

/// An enumerated option, trimmed and case-insensitive.
fn enumerated<T: Copy>(
    options: &mut Options,
    option: &str,
    values: &[(&str, T)],
    listed: &str,
) -> Option<T> {
    let raw = options.raw(option)?;
    let wanted = raw.trim().to_lowercase();
    match values.iter().find(|(name, _)| *name == wanted) {
        Some((_, value)) => Some(*value),
        None => {
            invalid(
                options,
                option,
                raw,
                &format!("Value must be one of {listed}"),
            );
            None
        }
    }
}

fn boolean(options: &mut Options, option: &str, default: bool) -> bool {
    let Some(raw) = options.raw(option) else {
        return default;
    };
    match raw.trim().to_lowercase().as_str() {
        "true" => true,
        "false" => false,
        _ => {
            invalid(options, option, raw, "Either 'true' or 'false' is expected");
            default
        }
    }
}

impl ExtractNewRecordState {
    fn configure(options: &mut Options) -> Result<ExtractNewRecordState, ConfigError> {
        // Debezium lists the values in its `HashSet`'s order.
        let mode = enumerated(
            options,
            "delete.tombstone.handling.mode",
            &[
                ("drop", TombstoneMode::Drop),
                ("tombstone", TombstoneMode::Tombstone),
                ("rewrite", TombstoneMode::Rewrite),
                (
                    "rewrite-with-tombstone",
                    TombstoneMode::RewriteWithTombstone,
                ),
                ("delete-to-tombstone", TombstoneMode::DeleteToTombstone),
            ],
            "drop, tombstone, rewrite-with-tombstone, rewrite, delete-to-tombstone",
        );
        let delete = enumerated(
            options,
            "delete.handling.mode",
            &[
                ("drop", LegacyDelete::Drop),
                ("rewrite", LegacyDelete::Rewrite),
                ("none", LegacyDelete::None),
            ],
            "drop, none, rewrite",
        )
        .unwrap_or(LegacyDelete::Drop);
        let drop_tombstones = boolean(options, "drop.tombstones", true);
        let replace_null_with_default = boolean(options, "replace.null.with.default", true);
        let route_by_field = options
            .raw("route.by.field")
            .filter(|v| !v.is_empty())
            .map(str::to_string);
        let fields_prefix = options.raw("add.fields.prefix").unwrap_or("__").to_string();
        let headers_prefix = options
            .raw("add.headers.prefix")
            .unwrap_or("__")
            .to_string();
        let mut references = |option: &str, prefix: &str| {
            let specs = options.raw(option).unwrap_or_default();
            FieldReference::parse_all(prefix, specs).unwrap_or_else(|message| {
                options.error(option, message);
                Vec::new()
            })
        };
        let added_fields = references("add.fields", &fields_prefix);
        let added_headers = references("add.headers", &headers_prefix);
        for option in [
            "drop.fields.header.name",
            "drop.fields.from.key",
            "drop.fields.keep.schema.compatible",
        ] {
            if options.raw(option).is_some_and(|v| !v.trim().is_empty()) {
                options.error(
                    option,
                    format!("'{option}' is not supported by this runtime"),
                );
            }
        }
        options.check()?;
        let deletes = match mode {
            Some(mode) => Deletes::Mode(mode),
            None => Deletes::Legacy {
                delete,
                drop_tombstones,
            },
        };
        Ok(ExtractNewRecordState {
            deletes,
            added_fields,
            added_headers,
            route_by_field,
            mark_deleted: InsertField::static_value(
                DELETED_FIELD,
                "true",
                replace_null_with_default,
            ),
            mark_live: InsertField::static_value(DELETED_FIELD, "false", replace_null_with_default),
            schemas: SchemaCache::new(),
        })
    }

    /// The `add.headers` headers of an event (or of a tombstone: `op` only, as `d`).
    fn headers(&self, envelope: Option<&Struct>) -> Result<Vec<Header>, DataError> {
        let mut headers = Vec::new();
        for reference in &self.added_headers {
            let Some(envelope) = envelope else {
                if reference.field == "op" {
                    headers.push(Header {
                        key: reference.new_name.clone(),
                        value: Some(bytes::Bytes::from_static(b"d")),
                    });
                }
                continue;
            };
            if reference.schema_in(&envelope.schema).is_some() {
                headers.push(Header {
                    key: reference.new_name.clone(),
                    value: header_bytes(&reference.value_in(envelope)?),
                });
            }
        }
        Ok(headers)
    }

    /// The row with the `add.fields` fields appended (Debezium rebuilds the row schema
    /// even when there are none: it keeps the name, version, doc and parameters and
    /// becomes required).
    fn add_fields(&self, envelope: &Struct, mut row: Record) -> Result<Record, DataError> {
        let value = require_struct(&row.value, PURPOSE)?;
        let key = (value.schema.clone(), envelope.schema.clone());
        let updated_schema = self
            .schemas
            .get_or_build(&key, |(row_schema, envelope_schema)| {
                let mut updated = struct_with_basics(row_schema);
                for field in &row_schema.fields {
                    add_field(&mut updated, &field.name, field.schema.clone())?;
                }
                for reference in &self.added_fields {
                    if let Some(schema) = reference.schema_in(envelope_schema) {
                        add_field(&mut updated, &reference.new_name, schema)?;
                    }
                }
                Ok(updated)
            })?;
        let mut updated = Struct::new(updated_schema.clone());
        for field in &value.schema.fields {
            updated.put(&field.name, value.values[field.index].clone())?;
        }
        for reference in &self.added_fields {
            if reference.schema_in(&envelope.schema).is_some() {
                updated.put(&reference.new_name, reference.value_in(envelope)?)?;
            }
        }
        row.value_schema = Some(updated_schema);
        row.value = Value::Struct(updated);
        Ok(row)
    }

    /// `route.by.field`: the row's string field, which becomes the topic unless blank.
    fn route(&self, row: &Value, purpose: &str) -> Result<Option<String>, DataError> {
        let Some(name) = &self.route_by_field else {
            return Ok(None);
        };
        let row = require_struct(row, purpose)?;
        let Some(field) = row.schema.get_field(name) else {
            return Err(DataError(format!("{name} is not a valid field name")));
        };
        if field.schema.ty != Type::String {
            return Err(DataError(format!("Field '{name}' is not of type STRING")));
        }
        Ok(row
            .get(name)
            .and_then(Value::as_str)
            .filter(|topic| !topic.trim().is_empty())
            .map(str::to_string))
    }
}

/// An envelope field and its schema, read as `ExtractField$Value` reads it.
fn envelope_field(envelope: &Struct, name: &str) -> Result<(SchemaRef, Value), DataError> {
    let Some(field) = envelope.schema.get_field(name) else {
        return Err(DataError(format!("Unknown field: {name}")));
    };
    Ok((field.schema.clone(), struct_get(envelope, name, true)?))
}

impl Transform for ExtractNewRecordState {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        let is_tombstone = record.value.is_null();
        let is_envelope = record
            .value_schema
            .as_ref()
            .and_then(|s| s.name.as_deref())
            .is_some_and(|name| name.ends_with(ENVELOPE_SCHEMA_SUFFIX));
        if is_envelope && !is_tombstone {
            require_struct(&record.value, "field extraction")?;
        }
        if (is_envelope || is_tombstone) && !self.added_headers.is_empty() {
            let headers = self.headers(record.value.as_struct())?;
            record.headers.extend(headers);
        }
        if is_tombstone {
            return Ok(self.deletes.keeps_tombstones().then_some(record));
        }
        if !is_envelope {
            return Ok(Some(record));
        }

        let Value::Struct(envelope) = std::mem::replace(&mut record.value, Value::Null) else {
            unreachable!("an envelope value was checked to be a struct");
        };
        let (after_schema, after) = envelope_field(&envelope, "after")?;
        if !after.is_null() {
            record.value_schema = Some(after_schema);
            record.value = after;
            if self.deletes.is_rewrite() && matches!(record.value, Value::Struct(_)) {
                record = self
                    .mark_live
                    .apply(record)?
                    .expect("inserting keeps the record");
            }
            if let Some(topic) = self.route(
                &record.value,
                "Read record to set topic routing for CREATE / UPDATE",
            )? {
                record.topic = topic;
            }
            return self.add_fields(&envelope, record).map(Some);
        }

        let (before_schema, before) = envelope_field(&envelope, "before")?;
        if before.is_null() {
            // A truncate event.
            return Ok(None);
        }
        match self.deletes.on_delete() {
            DeleteAction::Drop => return Ok(None),
            DeleteAction::NullValue => record.value_schema = Some(after_schema),
            DeleteAction::Tombstone => record.value_schema = None,
            DeleteAction::Rewrite => {
                record.value_schema = Some(before_schema);
                record.value = before.clone();
                if matches!(before, Value::Struct(_)) {
                    record = self
                        .mark_deleted
                        .apply(record)?
                        .expect("inserting keeps the record");
                }
            }
        }
        if let Some(topic) = self.route(&before, "Read record to set topic routing for DELETE")? {
            record.topic = topic;
        }
        if record.value.is_null() {
            return Ok(Some(record));
        }
        self.add_fields(&envelope, record).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    /// The row schema of Debezium's `AbstractExtractStateTest`.
    fn row_schema() -> SchemaRef {
        schema(&[
            (
                "id",
                Schema::new(Type::Int8).with_parameter("__debezium.source.column.name", "id"),
            ),
            ("name", Schema::new(Type::String)),
        ])
    }

    fn source_schema() -> SchemaRef {
        schema(&[
            ("lsn", Schema::new(Type::Int32)),
            ("ts_ms", Schema::new(Type::Int64).optional()),
            ("db", Schema::new(Type::String).optional()),
            ("table", Schema::new(Type::String).optional()),
        ])
    }

    fn transaction_schema() -> SchemaRef {
        Schema::new(Type::Struct)
            .field("id", Schema::new(Type::String))
            .field("total_order", Schema::new(Type::Int64))
            .field("data_collection_order", Schema::new(Type::Int64))
            .optional()
            .into()
    }

    /// Debezium's `Envelope` schema for a row schema.
    fn envelope_schema(row: &SchemaRef) -> SchemaRef {
        let optional_row: SchemaRef = (**row).clone().optional().into();
        Schema::new(Type::Struct)
            .named("dummy.Envelope")
            .field("before", optional_row.clone())
            .field("after", optional_row)
            .field("source", source_schema())
            .field("transaction", transaction_schema())
            .field("op", Schema::new(Type::String))
            .field("ts_ms", Schema::new(Type::Int64).optional())
            .into()
    }

    fn row(name: &str) -> Value {
        let schema: SchemaRef = (*row_schema()).clone().optional().into();
        Value::Struct(structure(
            &schema,
            &[("id", Value::Int8(1)), ("name", s(name))],
        ))
    }

    /// A change event as Debezium's `Envelope.create/update/delete` builds it.
    fn event(op: &str, before: Option<Value>, after: Option<Value>) -> Record {
        let envelope = envelope_schema(&row_schema());
        let source = structure(
            &source_schema(),
            &[
                ("lsn", Value::Int32(1234)),
                ("db", s("test_db")),
                ("table", s("test_table")),
            ],
        );
        let mut value = structure(
            &envelope,
            &[
                ("op", s(op)),
                ("source", Value::Struct(source)),
                ("ts_ms", Value::Int64(1_710_032_523_000)),
            ],
        );
        if let Some(before) = before {
            value.put("before", before).unwrap();
        }
        if let Some(after) = after {
            value.put("after", after).unwrap();
        }
        if op == "u" {
            let transaction = structure(
                &transaction_schema(),
                &[
                    ("id", s("571")),
                    ("total_order", Value::Int64(42)),
                    ("data_collection_order", Value::Int64(42)),
                ],
            );
            value
                .put("transaction", Value::Struct(transaction))
                .unwrap();
        }
        Record::new("dummy", Some(envelope), Value::Struct(value))
    }

    fn create() -> Record {
        event("c", None, Some(row("myRecord")))
    }

    fn update() -> Record {
        event("u", Some(row("myRecord")), Some(row("updatedRecord")))
    }

    fn delete() -> Record {
        event("d", Some(row("myRecord")), None)
    }

    fn tombstone() -> Record {
        Record::new("dummy", None, Value::Null)
    }

    fn transform(config: &[(&str, &str)]) -> ExtractNewRecordState {
        configure(config, ExtractNewRecordState::configure).unwrap()
    }

    fn field(record: &Record, name: &str) -> Value {
        let Value::Struct(row) = &record.value else {
            panic!("a struct value, not {:?}", record.value)
        };
        row.get(name)
            .cloned()
            .unwrap_or_else(|| panic!("no field {name}"))
    }

    fn header(record: &Record, key: &str) -> Option<String> {
        record
            .headers
            .iter()
            .find(|h| h.key == key)
            .and_then(|h| h.value.as_ref())
            .map(|v| String::from_utf8_lossy(v).into_owned())
    }

    /// Debezium's `testUnwrapCreateRecord`, `testHandleCreateRewrite`.
    #[test]
    fn creates_and_updates_become_their_after_state() {
        for config in [&[][..], &[("delete.tombstone.handling.mode", "tombstone")]] {
            let out = transform(config).apply(create()).unwrap().unwrap();
            assert_eq!(field(&out, "id"), Value::Int8(1));
            assert_eq!(field(&out, "name"), s("myRecord"));
            let schema = out.value_schema.as_ref().unwrap();
            assert_eq!(schema.fields.len(), 2);
            // Rebuilt by `addFields`: required now, parameters kept.
            assert!(!schema.optional);
            assert_eq!(
                schema.get_field("id").unwrap().schema.parameters["__debezium.source.column.name"],
                "id"
            );
            let out = transform(config).apply(update()).unwrap().unwrap();
            assert_eq!(field(&out, "name"), s("updatedRecord"));
        }

        for config in [
            &[
                ("delete.tombstone.handling.mode", "rewrite"),
                ("add.headers", "op"),
            ][..],
            &[("delete.handling.mode", "rewrite"), ("add.headers", "op")],
        ] {
            let out = transform(config).apply(create()).unwrap().unwrap();
            assert_eq!(field(&out, "__deleted"), s("false"));
            assert_eq!(out.headers.len(), 1);
            assert_eq!(header(&out, "__op").as_deref(), Some("c"));
        }
    }

    /// Debezium's `testTombstone*`, `testDeleteDroppedByDefault`, `testHandleDelete*`,
    /// `testDeleteRewriteToTombstoneAndDropActualTombstone`, and the deprecated options of
    /// Debezium 2.x (`LegacyExtractNewRecordStateTest`).
    #[test]
    fn deletes_and_tombstones_follow_the_configured_mode() {
        enum Expect {
            Dropped,
            NullValueWithSchema,
            NullValueNoSchema,
            Rewritten,
            Kept,
        }
        use Expect::*;
        let cases: &[(Pairs, Expect, Expect)] = &[
            (&[], Dropped, Dropped),
            (&[("delete.handling.mode", "drop")], Dropped, Dropped),
            (
                &[("delete.handling.mode", "none")],
                NullValueWithSchema,
                Dropped,
            ),
            (&[("delete.handling.mode", " REWRITE ")], Rewritten, Dropped),
            (&[("drop.tombstones", "false")], Dropped, Kept),
            (
                &[
                    ("delete.handling.mode", "rewrite"),
                    ("drop.tombstones", "false"),
                ],
                Rewritten,
                Kept,
            ),
            (
                &[("delete.tombstone.handling.mode", "drop")],
                Dropped,
                Dropped,
            ),
            (
                &[("delete.tombstone.handling.mode", "tombstone")],
                NullValueWithSchema,
                Dropped,
            ),
            (
                &[("delete.tombstone.handling.mode", "rewrite")],
                Rewritten,
                Dropped,
            ),
            (
                &[("delete.tombstone.handling.mode", "rewrite-with-tombstone")],
                Rewritten,
                Kept,
            ),
            (
                &[("delete.tombstone.handling.mode", "delete-to-tombstone")],
                NullValueNoSchema,
                Dropped,
            ),
            // The new option wins over the deprecated ones.
            (
                &[
                    ("delete.tombstone.handling.mode", "tombstone"),
                    ("delete.handling.mode", "rewrite"),
                    ("drop.tombstones", "false"),
                ],
                NullValueWithSchema,
                Dropped,
            ),
        ];
        for (config, on_delete, on_tombstone) in cases {
            let xform = transform(config);
            let out = xform.apply(delete()).unwrap();
            match on_delete {
                Dropped => assert_eq!(out, None, "{config:?}"),
                NullValueWithSchema => {
                    let out = out.unwrap();
                    assert_eq!(out.value, Value::Null, "{config:?}");
                    assert_eq!(
                        out.value_schema,
                        Some((*row_schema()).clone().optional().into())
                    );
                }
                NullValueNoSchema => {
                    let out = out.unwrap();
                    assert_eq!((out.value_schema, out.value), (None, Value::Null));
                }
                Rewritten => {
                    let out = out.unwrap();
                    assert_eq!(field(&out, "__deleted"), s("true"), "{config:?}");
                    assert_eq!(field(&out, "name"), s("myRecord"));
                }
                Kept => unreachable!(),
            }
            let out = xform.apply(tombstone()).unwrap();
            match on_tombstone {
                Dropped => assert_eq!(out, None, "{config:?}"),
                Kept => assert_eq!(out, Some(tombstone()), "{config:?}"),
                _ => unreachable!(),
            }
        }
    }

    /// Debezium's `testTruncateDroppedByDefault`, `testIgnoreUnknownRecord`,
    /// `testAddHeadersForNonEnvelopeRecord`.
    #[test]
    fn truncates_are_dropped_and_other_records_pass() {
        let xform = transform(&[("delete.tombstone.handling.mode", "tombstone")]);
        assert_eq!(xform.apply(event("t", None, None)).unwrap(), None);

        let xform = transform(&[("add.headers", "op,source.lsn")]);
        let heartbeat_schema: SchemaRef = Schema::new(Type::Struct)
            .named("io.debezium.connector.common.Heartbeat")
            .field("ts_ms", Schema::new(Type::Int64))
            .into();
        let heartbeat = Record::new(
            "op.with.heartbeat",
            Some(heartbeat_schema.clone()),
            Value::Struct(structure(&heartbeat_schema, &[("ts_ms", Value::Int64(1))])),
        );
        assert_eq!(xform.apply(heartbeat.clone()).unwrap(), Some(heartbeat));
        let unnamed = Record::new("t", Some(row_schema()), row("x"));
        assert_eq!(xform.apply(unnamed.clone()).unwrap(), Some(unnamed));
        let schemaless = Record::new("t", None, map(&[("after", s("x"))]));
        assert_eq!(xform.apply(schemaless.clone()).unwrap(), Some(schemaless));
    }

    /// Debezium's `testAddField`, `testAddFields`, `testAddFieldsSpecifyStruct`,
    /// `testAddFieldsForMissingOptionalField`, `testNewFieldAndHeaderMapping`.
    #[test]
    fn envelope_fields_are_added_to_the_row() {
        let out = transform(&[("add.fields", "op,table,lsn,source.ts_ms")])
            .apply(create())
            .unwrap()
            .unwrap();
        assert_eq!(field(&out, "__op"), s("c"));
        assert_eq!(field(&out, "__table"), s("test_table"));
        assert_eq!(field(&out, "__lsn"), Value::Int32(1234));
        assert_eq!(field(&out, "__source_ts_ms"), Value::Null);
        let schema = out.value_schema.as_ref().unwrap();
        assert_eq!(
            *schema.get_field("__lsn").unwrap().schema,
            Schema::new(Type::Int32).optional()
        );

        let out = transform(&[
            ("add.fields", "op , lsn,id"),
            ("add.fields.prefix", "prefix."),
        ])
        .apply(update())
        .unwrap()
        .unwrap();
        assert_eq!(field(&out, "prefix.op"), s("u"));
        assert_eq!(field(&out, "prefix.lsn"), Value::Int32(1234));
        assert_eq!(field(&out, "prefix.id"), s("571"));

        let out = transform(&[(
            "add.fields",
            "op,source.lsn,transaction.id,transaction.total_order",
        )])
        .apply(update())
        .unwrap()
        .unwrap();
        assert_eq!(field(&out, "__source_lsn"), Value::Int32(1234));
        assert_eq!(field(&out, "__transaction_id"), s("571"));
        assert_eq!(field(&out, "__transaction_total_order"), Value::Int64(42));

        // No transaction block in a create: the transaction id is null.
        let out = transform(&[("add.fields", "op,lsn,id")])
            .apply(create())
            .unwrap()
            .unwrap();
        assert_eq!(field(&out, "__id"), Value::Null);

        let out = transform(&[
            (
                "add.fields",
                "notExisting,op:OP, lsn:LSN, id:ID, source.lsn:source_lsn, transaction.total_order:TOTAL_ORDER",
            ),
            ("add.fields.prefix", ""),
            (
                "add.headers",
                "op, source.lsn:source_lsn, transaction.id:TXN_ID, transaction.total_order:TOTAL_ORDER",
            ),
            ("add.headers.prefix", "prefix."),
        ])
        .apply(update())
        .unwrap()
        .unwrap();
        assert_eq!(field(&out, "OP"), s("u"));
        assert_eq!(field(&out, "LSN"), Value::Int32(1234));
        assert_eq!(field(&out, "ID"), s("571"));
        assert_eq!(field(&out, "source_lsn"), Value::Int32(1234));
        assert_eq!(field(&out, "TOTAL_ORDER"), Value::Int64(42));
        assert!(
            out.value_schema
                .as_ref()
                .unwrap()
                .get_field("notExisting")
                .is_none()
        );
        assert_eq!(out.headers.len(), 4);
        assert_eq!(header(&out, "prefix.op").as_deref(), Some("u"));
        assert_eq!(header(&out, "prefix.source_lsn").as_deref(), Some("1234"));
        assert_eq!(header(&out, "prefix.TXN_ID").as_deref(), Some("571"));
        assert_eq!(header(&out, "prefix.TOTAL_ORDER").as_deref(), Some("42"));
    }

    /// Debezium's `testAddFieldsHandleDeleteRewrite`,
    /// `testAddHeadersHandleDeleteRewriteAndTombstone`.
    #[test]
    fn rewritten_deletes_and_tombstones_carry_added_fields_and_headers() {
        let xform = transform(&[
            ("delete.tombstone.handling.mode", "rewrite-with-tombstone"),
            ("add.fields", "op,lsn"),
            ("add.headers", "op,source.lsn"),
        ]);
        let out = xform.apply(delete()).unwrap().unwrap();
        assert_eq!(field(&out, "__deleted"), s("true"));
        assert_eq!(field(&out, "__op"), s("d"));
        assert_eq!(field(&out, "__lsn"), Value::Int32(1234));
        assert_eq!(header(&out, "__op").as_deref(), Some("d"));
        assert_eq!(header(&out, "__source_lsn").as_deref(), Some("1234"));

        let out = xform.apply(tombstone()).unwrap().unwrap();
        assert_eq!(out.value, Value::Null);
        assert_eq!(header(&out, "__op").as_deref(), Some("d"));
        assert_eq!(out.headers.len(), 1);
    }

    /// Debezium's `testUnwrapCreateRecordWithOptionalDefaultValue` and
    /// `testUnwrapCreateRecordRewriteWithOptionalDefaultValue*`.
    #[test]
    fn null_row_fields_keep_or_take_their_default() {
        let row_schema = schema(&[
            ("id", Schema::new(Type::Int8)),
            (
                "name",
                Schema::new(Type::String)
                    .optional()
                    .with_default(s("default_str")),
            ),
        ]);
        let envelope = envelope_schema(&row_schema);
        let optional_row: SchemaRef = (*row_schema).clone().optional().into();
        let after = structure(&optional_row, &[("id", Value::Int8(1))]);
        let source = structure(&source_schema(), &[("lsn", Value::Int32(1))]);
        let value = structure(
            &envelope,
            &[
                ("op", s("c")),
                ("after", Value::Struct(after)),
                ("source", Value::Struct(source)),
            ],
        );
        let record = Record::new("dummy", Some(envelope), Value::Struct(value));
        let raw = |out: Record| {
            let Value::Struct(row) = out.value else {
                panic!("a struct")
            };
            let index = row.schema.get_field("name").unwrap().index;
            row.values[index].clone()
        };
        let out = transform(&[]).apply(record.clone()).unwrap().unwrap();
        assert_eq!(raw(out), Value::Null);
        let out = transform(&[("delete.tombstone.handling.mode", "rewrite")])
            .apply(record.clone())
            .unwrap()
            .unwrap();
        assert_eq!(raw(out), s("default_str"));
        let out = transform(&[
            ("delete.tombstone.handling.mode", "rewrite"),
            ("replace.null.with.default", "false"),
        ])
        .apply(record)
        .unwrap()
        .unwrap();
        assert_eq!(raw(out), Value::Null);
    }

    /// Debezium's `testAddTopicRoutingField`, `testUpdateTopicRoutingField`,
    /// `testDeleteTopicRoutingField`.
    #[test]
    fn topics_are_routed_by_a_row_field() {
        let xform = transform(&[
            ("route.by.field", "name"),
            ("delete.tombstone.handling.mode", "rewrite"),
        ]);
        assert_eq!(xform.apply(create()).unwrap().unwrap().topic, "myRecord");
        assert_eq!(
            xform.apply(update()).unwrap().unwrap().topic,
            "updatedRecord"
        );
        assert_eq!(xform.apply(delete()).unwrap().unwrap().topic, "myRecord");
        let xform = transform(&[("route.by.field", "id")]);
        assert_eq!(
            xform.apply(create()).unwrap_err().0,
            "Field 'id' is not of type STRING"
        );
    }

    #[test]
    fn config_errors() {
        let errors =
            |config: &[(&str, &str)]| option_errors(config, ExtractNewRecordState::configure);
        assert_eq!(
            errors(&[("delete.tombstone.handling.mode", "jbsdfkjsd")]),
            one_error(
                "delete.tombstone.handling.mode",
                "The 'delete.tombstone.handling.mode' value 'jbsdfkjsd' is invalid: Value must be one of drop, tombstone, rewrite-with-tombstone, rewrite, delete-to-tombstone"
            )
        );
        assert_eq!(
            errors(&[("delete.handling.mode", "keep")]),
            one_error(
                "delete.handling.mode",
                "The 'delete.handling.mode' value 'keep' is invalid: Value must be one of drop, none, rewrite"
            )
        );
        assert_eq!(
            errors(&[("drop.tombstones", "yes")]),
            one_error(
                "drop.tombstones",
                "The 'drop.tombstones' value 'yes' is invalid: Either 'true' or 'false' is expected"
            )
        );
        assert_eq!(
            errors(&[("add.fields", "op,a:b:c")]),
            one_error("add.fields", "Unexpected field name: a:b:c")
        );
        assert_eq!(
            errors(&[("drop.fields.header.name", "drop")]),
            one_error(
                "drop.fields.header.name",
                "'drop.fields.header.name' is not supported by this runtime"
            )
        );
    }
}
