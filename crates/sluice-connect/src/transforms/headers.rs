//! The header transforms of KIP-145: `InsertHeader` (adds `header` with
//! `value.literal`), `DropHeaders` (removes every header named in `headers`) and
//! `HeaderFrom$Key` / `HeaderFrom$Value` (copies or moves fields into headers).
//!
//! Headers here hold bytes in the form Connect's default `SimpleHeaderConverter` writes
//! them: a header made from a field value is that value as `Values.convertToString`
//! prints it, a literal is the literal text (Connect parses it into a typed value
//! first, which prints back the same for the literals people write: `1`, `true`,
//! `text`).

use std::collections::BTreeSet;

use crate::ConfigError;
use crate::data::{DataError, Header, Record, Schema, Struct, Value};

use super::Transform;
use super::config::Options;
use super::support::{
    Operand, SchemaCache, add_field, header_bytes, into_map, map_get, require_struct, struct_get,
    struct_with_basics,
};

pub(crate) struct InsertHeader {
    header: String,
    literal: bytes::Bytes,
}

pub(crate) fn insert_header(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    let header = options.required_string("header");
    let literal = options.required_string("value.literal");
    options.check()?;
    Ok(Box::new(InsertHeader {
        header,
        literal: bytes::Bytes::from(literal),
    }))
}

impl Transform for InsertHeader {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        record.headers.push(Header {
            key: self.header.clone(),
            value: Some(self.literal.clone()),
        });
        Ok(Some(record))
    }
}

pub(crate) struct DropHeaders {
    headers: BTreeSet<String>,
}

pub(crate) fn drop_headers(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    let headers = options.non_empty_list("headers");
    options.check()?;
    Ok(Box::new(DropHeaders {
        headers: headers.into_iter().collect(),
    }))
}

impl Transform for DropHeaders {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        record.headers.retain(|h| !self.headers.contains(&h.key));
        Ok(Some(record))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    Move,
    Copy,
}

pub(crate) struct HeaderFrom {
    operand: Operand,
    /// (field, header) pairs, in configured order.
    pairs: Vec<(String, String)>,
    operation: Operation,
    replace_null_with_default: bool,
    schemas: SchemaCache,
}

pub(crate) fn header_from_key(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(HeaderFrom::configure(options, Operand::Key)?))
}

pub(crate) fn header_from_value(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(HeaderFrom::configure(options, Operand::Value)?))
}

impl HeaderFrom {
    fn configure(options: &mut Options, operand: Operand) -> Result<HeaderFrom, ConfigError> {
        let fields = options.non_empty_list("fields");
        let headers = options.non_empty_list("headers");
        let operation = options.required_string("operation");
        if options.raw("operation").is_some() {
            options.one_of("operation", &operation, &["move", "copy"]);
        }
        let replace_null_with_default = options.boolean("replace.null.with.default", true);
        options.check()?;
        if fields.len() != headers.len() {
            return options.fail(
                "headers",
                "'fields' config must have the same number of elements as 'headers' config.",
            );
        }
        Ok(HeaderFrom {
            operand,
            pairs: fields.into_iter().zip(headers).collect(),
            operation: if operation == "move" {
                Operation::Move
            } else {
                Operation::Copy
            },
            replace_null_with_default,
            schemas: SchemaCache::new(),
        })
    }

    fn purpose(&self) -> &'static str {
        match self.operation {
            Operation::Move => "header move",
            Operation::Copy => "header copy",
        }
    }

    fn moved_schema(&self, schema: &Schema) -> Result<Schema, DataError> {
        let mut updated = struct_with_basics(schema);
        for field in &schema.fields {
            if !self.pairs.iter().any(|(name, _)| *name == field.name) {
                add_field(&mut updated, &field.name, field.schema.clone())?;
            }
        }
        Ok(updated)
    }
}

impl Transform for HeaderFrom {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        if self.operand.schema(&record).is_none() {
            let (_, value) = self.operand.take(&mut record);
            let mut entries = into_map(value, self.purpose())?;
            for (field, header) in &self.pairs {
                let field_value = map_get(&entries, field).cloned().unwrap_or(Value::Null);
                if self.operation == Operation::Move {
                    entries.retain(|(k, _)| k.as_str() != Some(field));
                }
                record.headers.push(Header {
                    key: header.clone(),
                    value: header_bytes(&field_value),
                });
            }
            self.operand.put(&mut record, None, Value::Map(entries));
            return Ok(Some(record));
        }

        let value = require_struct(self.operand.value(&record), self.purpose())?;
        let mut headers = Vec::with_capacity(self.pairs.len());
        for (field, header) in &self.pairs {
            // A field the schema lacks gives a null header (Kafka fails with a
            // NullPointerException there).
            let field_value = match value.schema.get_field(field) {
                Some(_) => struct_get(value, field, self.replace_null_with_default)?,
                None => Value::Null,
            };
            headers.push(Header {
                key: header.clone(),
                value: header_bytes(&field_value),
            });
        }
        if self.operation == Operation::Move {
            let moved_schema = self
                .schemas
                .get_or_build(&value.schema, |s| self.moved_schema(s))?;
            let mut moved = Struct::new(moved_schema.clone());
            for field in &moved_schema.fields {
                moved.put(
                    &field.name,
                    struct_get(value, &field.name, self.replace_null_with_default)?,
                )?;
            }
            self.operand
                .put(&mut record, Some(moved_schema), Value::Struct(moved));
        }
        record.headers.extend(headers);
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::data::Type;

    fn header(key: &str, value: &str) -> Header {
        Header {
            key: key.into(),
            value: Some(value.to_string().into()),
        }
    }

    fn with_headers(headers: Vec<Header>) -> Record {
        let mut record = Record::new("topic", None, s("value")).with_key(None, s("key"));
        record.headers = headers;
        record
    }

    /// Kafka's `InsertHeaderTest`.
    #[test]
    fn headers_are_inserted_after_existing_ones() {
        let cases = [
            ("inserted", "inserted-value", "existing", "existing-value"),
            (
                "existing",
                "inserted-value",
                "existing",
                "preexisting-value",
            ),
            ("inserted", "1", "existing", "existing-value"),
        ];
        for (key, literal, existing, existing_value) in cases {
            let xform = configure(
                &[("header", key), ("value.literal", literal)],
                insert_header,
            )
            .unwrap();
            let out = xform
                .apply(with_headers(vec![header(existing, existing_value)]))
                .unwrap()
                .unwrap();
            assert_eq!(
                out.headers,
                vec![header(existing, existing_value), header(key, literal)]
            );
            assert_eq!((out.key, out.value), (s("key"), s("value")));
        }
        for missing in ["header", "value.literal"] {
            let config: Vec<(&str, &str)> = [("header", "h"), ("value.literal", "v")]
                .into_iter()
                .filter(|(k, _)| *k != missing)
                .collect();
            assert_eq!(
                option_errors(&config, insert_header),
                one_error(
                    missing,
                    &format!(
                        "Missing required configuration \"transforms.t.{missing}\" which has no default value."
                    )
                )
            );
        }
    }

    /// Kafka's `DropHeadersTest`.
    #[test]
    fn named_headers_are_dropped() {
        let xform = configure(&[("headers", "dropped")], drop_headers).unwrap();
        let cases = [
            (
                vec![header("dropped", "a"), header("kept", "b")],
                vec![header("kept", "b")],
            ),
            (
                vec![
                    header("dropped", "a"),
                    header("kept", "b"),
                    header("dropped", "c"),
                ],
                vec![header("kept", "b")],
            ),
            (vec![header("kept", "b")], vec![header("kept", "b")]),
        ];
        for (headers, expected) in cases {
            let out = xform.apply(with_headers(headers)).unwrap().unwrap();
            assert_eq!(out.headers, expected);
        }
        assert_eq!(
            option_errors(&[("headers", "")], drop_headers),
            one_error(
                "headers",
                "Invalid value [] for configuration headers: Empty list"
            )
        );
    }

    fn header_from(operand: Operand, operation: &str) -> HeaderFrom {
        configure(
            &[
                ("fields", "field1,field2"),
                ("headers", "inserted1,inserted2"),
                ("operation", operation),
            ],
            |o| HeaderFrom::configure(o, operand),
        )
        .unwrap()
    }

    /// Kafka's `HeaderFromTest.schemaless` cases.
    #[test]
    fn schemaless_fields_are_copied_or_moved_to_headers() {
        let value = map(&[("field1", s("field1-value")), ("field2", s("field2-value"))]);
        let existing = header("existing", "existing-value");
        for (operation, remaining) in [("copy", value.clone()), ("move", Value::Map(vec![]))] {
            let record = with_headers(vec![existing.clone()]);
            let record = Record {
                value: value.clone(),
                ..record
            };
            let out = header_from(Operand::Value, operation)
                .apply(record)
                .unwrap()
                .unwrap();
            assert_eq!(out.value, remaining, "{operation}");
            assert_eq!(
                out.headers,
                vec![
                    existing.clone(),
                    header("inserted1", "field1-value"),
                    header("inserted2", "field2-value")
                ]
            );
        }
    }

    /// Kafka's `HeaderFromTest.withSchema` cases.
    #[test]
    fn struct_fields_are_copied_or_moved_to_headers() {
        let schema = schema(&[
            ("field1", Schema::new(Type::String)),
            ("field2", Schema::new(Type::Int32)),
            ("field3", Schema::new(Type::Boolean)),
        ]);
        let key = structure(
            &schema,
            &[
                ("field1", s("field1-value")),
                ("field2", Value::Int32(42)),
                ("field3", Value::Boolean(true)),
            ],
        );
        let record =
            Record::new("t", None, Value::Null).with_key(Some(schema.clone()), Value::Struct(key));

        let copied = header_from(Operand::Key, "copy")
            .apply(record.clone())
            .unwrap()
            .unwrap();
        assert_eq!(copied.key, record.key);
        assert_eq!(
            copied.headers,
            vec![
                header("inserted1", "field1-value"),
                header("inserted2", "42")
            ]
        );

        let moved = header_from(Operand::Key, "move")
            .apply(record)
            .unwrap()
            .unwrap();
        let moved_schema = moved.key_schema.clone().unwrap();
        assert_eq!(moved_schema.fields.len(), 1);
        assert_eq!(
            moved.key,
            Value::Struct(structure(
                &moved_schema,
                &[("field3", Value::Boolean(true))]
            ))
        );
        assert_eq!(moved.headers.len(), 2);
    }

    /// Kafka's `HeaderFromTest.invalidConfig*`.
    #[test]
    fn config_errors() {
        let errors = |config: &[(&str, &str)]| {
            option_errors(config, |o| HeaderFrom::configure(o, Operand::Value))
        };
        let mismatch = one_error(
            "headers",
            "'fields' config must have the same number of elements as 'headers' config.",
        );
        assert_eq!(
            errors(&[
                ("fields", "foo"),
                ("headers", "foo,bar"),
                ("operation", "copy")
            ]),
            mismatch
        );
        assert_eq!(
            errors(&[
                ("fields", "foo,bar"),
                ("headers", "foo"),
                ("operation", "copy")
            ]),
            mismatch
        );
        assert_eq!(
            errors(&[("fields", ""), ("headers", ""), ("operation", "copy")]),
            [
                one_error(
                    "fields",
                    "Invalid value [] for configuration fields: Empty list"
                ),
                one_error(
                    "headers",
                    "Invalid value [] for configuration headers: Empty list"
                ),
            ]
            .concat()
        );
        assert_eq!(
            errors(&[("fields", "a"), ("headers", "b"), ("operation", "swap")]),
            one_error(
                "operation",
                "Invalid value swap for configuration operation: String must be one of: move, copy"
            )
        );
    }
}
