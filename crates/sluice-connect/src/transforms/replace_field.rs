//! `ReplaceField$Key` / `ReplaceField$Value`: keeps (`include`), drops (`exclude`, which
//! wins) and renames (`renames`, `old:new` pairs) the top-level fields of a struct or
//! schemaless map. The updated schema keeps the input's name, version, doc and
//! parameters; a null key or value passes through.
//!
//! Kafka 4.0 removed the deprecated `blacklist` and `whitelist` options (KAFKA-17530);
//! they are still read here as Kafka 3.x read them (aliases of `exclude` and `include`,
//! the new name winning when both are set) so that older configs keep their meaning
//! instead of silently keeping every field.

use std::collections::{BTreeMap, BTreeSet};

use crate::ConfigError;
use crate::data::{DataError, Record, Schema, Struct, Value};

use super::Transform;
use super::config::Options;
use super::support::{
    Operand, SchemaCache, add_field, into_map, java_list, java_split, map_put, require_map,
    require_struct, struct_get, struct_with_basics,
};

const PURPOSE: &str = "field replacement";

pub(crate) struct ReplaceField {
    operand: Operand,
    exclude: BTreeSet<String>,
    include: BTreeSet<String>,
    renames: BTreeMap<String, String>,
    reverse_renames: BTreeMap<String, String>,
    replace_null_with_default: bool,
    schemas: SchemaCache,
}

pub(crate) fn key(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(ReplaceField::configure(options, Operand::Key)?))
}

pub(crate) fn value(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(ReplaceField::configure(options, Operand::Value)?))
}

/// `renames`: each mapping is exactly two parts around a colon.
fn parse_renames(options: &mut Options, mappings: &[String]) -> BTreeMap<String, String> {
    let mut renames = BTreeMap::new();
    for mapping in mappings {
        let parts = java_split(mapping, ':');
        if parts.len() != 2 {
            options.invalid(
                "renames",
                &java_list(mappings),
                &format!("Invalid rename mapping: {mapping}"),
            );
            return BTreeMap::new();
        }
        renames.insert(parts[0].to_string(), parts[1].to_string());
    }
    renames
}

impl ReplaceField {
    pub(crate) fn configure(
        options: &mut Options,
        operand: Operand,
    ) -> Result<ReplaceField, ConfigError> {
        let exclude = options
            .list("exclude")
            .or_else(|| options.list("blacklist"))
            .unwrap_or_default();
        let include = options
            .list("include")
            .or_else(|| options.list("whitelist"))
            .unwrap_or_default();
        let mappings = options.list_or_empty("renames");
        let renames = parse_renames(options, &mappings);
        let replace_null_with_default = options.boolean("replace.null.with.default", true);
        options.check()?;
        let reverse_renames = renames
            .iter()
            .map(|(old, new)| (new.clone(), old.clone()))
            .collect();
        Ok(ReplaceField {
            operand,
            exclude: exclude.into_iter().collect(),
            include: include.into_iter().collect(),
            renames,
            reverse_renames,
            replace_null_with_default,
            schemas: SchemaCache::new(),
        })
    }

    fn keeps(&self, name: &str) -> bool {
        !self.exclude.contains(name) && (self.include.is_empty() || self.include.contains(name))
    }

    fn renamed<'a>(&'a self, name: &'a str) -> &'a str {
        self.renames.get(name).map_or(name, String::as_str)
    }

    fn reverse_renamed<'a>(&'a self, name: &'a str) -> &'a str {
        self.reverse_renames.get(name).map_or(name, String::as_str)
    }

    fn updated_schema(&self, schema: &Schema) -> Result<Schema, DataError> {
        let mut updated = struct_with_basics(schema);
        for field in schema.fields.iter().filter(|f| self.keeps(&f.name)) {
            add_field(
                &mut updated,
                self.renamed(&field.name),
                field.schema.clone(),
            )?;
        }
        Ok(updated)
    }
}

impl Transform for ReplaceField {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        if self.operand.value(&record).is_null() {
            return Ok(Some(record));
        }
        if self.operand.schema(&record).is_none() {
            require_map(self.operand.value(&record), PURPOSE)?;
            let (_, value) = self.operand.take(&mut record);
            let mut updated = Vec::new();
            for (key, field_value) in into_map(value, PURPOSE)? {
                let name = match &key {
                    Value::String(name) => name.clone(),
                    other => other.to_string(),
                };
                if self.keeps(&name) {
                    map_put(&mut updated, self.renamed(&name), field_value);
                }
            }
            self.operand.put(&mut record, None, Value::Map(updated));
            return Ok(Some(record));
        }

        let value = require_struct(self.operand.value(&record), PURPOSE)?;
        let updated_schema = self
            .schemas
            .get_or_build(&value.schema, |s| self.updated_schema(s))?;
        let mut updated = Struct::new(updated_schema.clone());
        for field in &updated_schema.fields {
            let original = self.reverse_renamed(&field.name);
            let field_value = struct_get(value, original, self.replace_null_with_default)?;
            updated.put(&field.name, field_value)?;
        }
        self.operand
            .put(&mut record, Some(updated_schema), Value::Struct(updated));
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::data::{SchemaRef, Type};

    fn transform(operand: Operand, config: &[(&str, &str)]) -> ReplaceField {
        configure(config, |o| ReplaceField::configure(o, operand)).unwrap()
    }

    fn four_fields() -> SchemaRef {
        schema(&[
            ("dont", Schema::new(Type::String)),
            ("abc", Schema::new(Type::Int32)),
            ("foo", Schema::new(Type::Boolean)),
            ("etc", Schema::new(Type::String)),
        ])
    }

    /// Kafka's `ReplaceFieldTest.tombstoneSchemaless` and `tombstoneWithSchema`.
    #[test]
    fn tombstones_pass_through() {
        let xform = transform(
            Operand::Value,
            &[("include", "abc,foo"), ("renames", "abc:xyz,foo:bar")],
        );
        for schema in [None, Some(four_fields())] {
            let record = sink("test", schema, Value::Null);
            assert_eq!(xform.apply(record.clone()).unwrap(), Some(record));
        }
    }

    /// Kafka's `ReplaceFieldTest.schemaless`.
    #[test]
    fn schemaless_fields_are_excluded_and_renamed() {
        let xform = transform(
            Operand::Value,
            &[("exclude", "dont"), ("renames", "abc:xyz,foo:bar")],
        );
        let value = map(&[
            ("dont", s("whatever")),
            ("abc", Value::Int32(42)),
            ("foo", Value::Boolean(true)),
            ("etc", s("etc")),
        ]);
        let out = xform.apply(sink("test", None, value)).unwrap().unwrap();
        assert_eq!(
            out.value,
            map(&[
                ("xyz", Value::Int32(42)),
                ("bar", Value::Boolean(true)),
                ("etc", s("etc")),
            ])
        );
    }

    /// Kafka's `ReplaceFieldTest.withSchema`.
    #[test]
    fn struct_fields_are_included_and_renamed() {
        let xform = transform(
            Operand::Value,
            &[("include", "abc,foo"), ("renames", "abc:xyz,foo:bar")],
        );
        let schema = four_fields();
        let value = structure(
            &schema,
            &[
                ("dont", s("whatever")),
                ("abc", Value::Int32(42)),
                ("foo", Value::Boolean(true)),
                ("etc", s("etc")),
            ],
        );
        let out = xform
            .apply(sink("test", Some(schema), Value::Struct(value)))
            .unwrap()
            .unwrap();
        let Value::Struct(updated) = out.value else {
            panic!("a struct")
        };
        assert_eq!(updated.schema.fields.len(), 2);
        assert_eq!(updated.get("xyz"), Some(&Value::Int32(42)));
        assert_eq!(updated.get("bar"), Some(&Value::Boolean(true)));
        assert_eq!(out.value_schema.as_ref(), Some(&updated.schema));
    }

    /// Kafka's `ReplaceFieldTest.testReplaceNullWithDefaultConfigOn{Value,Key}`.
    #[test]
    fn null_fields_read_as_their_default_unless_configured_otherwise() {
        for operand in [Operand::Key, Operand::Value] {
            for (replace, expected) in [("false", Value::Null), ("true", Value::Int32(42))] {
                let xform = transform(
                    operand,
                    &[
                        ("include", "abc"),
                        ("renames", "abc:optional_with_default"),
                        ("replace.null.with.default", replace),
                    ],
                );
                let schema = schema(&[(
                    "abc",
                    Schema::new(Type::Int32)
                        .optional()
                        .with_default(Value::Int32(42)),
                )]);
                let value = Value::Struct(Struct::new(schema.clone()));
                let record = match operand {
                    Operand::Key => sink("test", None, Value::Null).with_key(Some(schema), value),
                    Operand::Value => sink("test", Some(schema), value),
                };
                let out = xform.apply(record).unwrap().unwrap();
                let Value::Struct(updated) = operand.value(&out) else {
                    panic!("a struct")
                };
                assert_eq!(updated.schema.fields.len(), 1);
                assert_eq!(updated.values[0], expected);
            }
        }
    }

    #[test]
    fn the_deprecated_names_still_select_fields() {
        let xform = transform(
            Operand::Value,
            &[
                ("blacklist", "a"),
                ("whitelist", "a,b,c"),
                ("include", "a,b"),
            ],
        );
        let value = map(&[("a", s("1")), ("b", s("2")), ("c", s("3"))]);
        let out = xform.apply(sink("t", None, value)).unwrap().unwrap();
        assert_eq!(out.value, map(&[("b", s("2"))]));
    }

    #[test]
    fn renaming_onto_a_kept_field_is_refused_with_a_schema() {
        let xform = transform(Operand::Value, &[("renames", "abc:etc")]);
        let schema = four_fields();
        let value = structure(
            &schema,
            &[
                ("dont", s("x")),
                ("abc", Value::Int32(1)),
                ("foo", Value::Boolean(false)),
                ("etc", s("y")),
            ],
        );
        assert_eq!(
            xform
                .apply(sink("t", Some(schema), Value::Struct(value)))
                .unwrap_err()
                .0,
            "Cannot create field because of field name duplication etc"
        );
        assert_eq!(
            xform.apply(sink("t", None, s("x"))).unwrap_err().0,
            "Only Map objects supported in absence of schema for [field replacement], found: java.lang.String"
        );
    }

    #[test]
    fn config_errors() {
        let errors = |config: &[(&str, &str)]| {
            option_errors(config, |o| ReplaceField::configure(o, Operand::Value))
        };
        for bad in ["abc", "a:b:c", "a:"] {
            assert_eq!(
                errors(&[("renames", &format!("x:y, {bad}"))]),
                one_error(
                    "renames",
                    &format!(
                        "Invalid value [x:y, {bad}] for configuration renames: Invalid rename mapping: {bad}"
                    )
                )
            );
        }
    }
}
