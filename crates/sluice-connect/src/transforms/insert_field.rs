//! `InsertField$Key` / `InsertField$Value`: adds the record's topic, partition, Kafka
//! offset (sink records only), timestamp and a static string as fields of a struct or
//! schemaless map. A field name ending in `!` makes the field required in the updated
//! schema, `?` (the default) optional. The updated schema keeps the input schema's name,
//! version, doc and parameters (`SchemaUtil.copySchemaBasics`) and appends the inserted
//! fields after the original ones; a null key or value passes through untouched.

use crate::ConfigError;
use crate::data::{DataError, Record, Schema, SchemaRef, Struct, Type, Value};

use super::Transform;
use super::config::Options;
use super::support::{
    Operand, SchemaCache, add_field, into_map, map_put, require_sink_offset, require_struct,
    struct_get, struct_with_basics,
};

const PURPOSE: &str = "field insertion";

/// A field to insert and whether its schema is optional.
#[derive(Debug, Clone)]
struct InsertionSpec {
    name: String,
    optional: bool,
}

impl InsertionSpec {
    fn parse(spec: Option<String>) -> Option<InsertionSpec> {
        let spec = spec?;
        Some(if let Some(name) = spec.strip_suffix('?') {
            InsertionSpec {
                name: name.to_string(),
                optional: true,
            }
        } else if let Some(name) = spec.strip_suffix('!') {
            InsertionSpec {
                name: name.to_string(),
                optional: false,
            }
        } else {
            InsertionSpec {
                name: spec,
                optional: true,
            }
        })
    }
}

pub(crate) struct InsertField {
    operand: Operand,
    topic: Option<InsertionSpec>,
    partition: Option<InsertionSpec>,
    offset: Option<InsertionSpec>,
    timestamp: Option<InsertionSpec>,
    static_field: Option<InsertionSpec>,
    static_value: Option<String>,
    replace_null_with_default: bool,
    schemas: SchemaCache,
}

pub(crate) fn key(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(InsertField::configure(options, Operand::Key)?))
}

pub(crate) fn value(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(InsertField::configure(options, Operand::Value)?))
}

impl InsertField {
    pub(crate) fn configure(
        options: &mut Options,
        operand: Operand,
    ) -> Result<InsertField, ConfigError> {
        let topic = InsertionSpec::parse(options.string("topic.field"));
        let partition = InsertionSpec::parse(options.string("partition.field"));
        let offset = InsertionSpec::parse(options.string("offset.field"));
        let timestamp = InsertionSpec::parse(options.string("timestamp.field"));
        let static_field = InsertionSpec::parse(options.string("static.field"));
        let static_value = options.string("static.value");
        let replace_null_with_default = options.boolean("replace.null.with.default", true);
        options.check()?;
        if topic.is_none()
            && partition.is_none()
            && offset.is_none()
            && timestamp.is_none()
            && static_field.is_none()
        {
            return options.fail("type", "No field insertion configured");
        }
        if let (Some(field), None) = (&static_field, &static_value) {
            return options.fail(
                "static.value",
                format!(
                    "Invalid value null for configuration static.value: No value specified for static field: {}",
                    field.name
                ),
            );
        }
        Ok(InsertField {
            operand,
            topic,
            partition,
            offset,
            timestamp,
            static_field,
            static_value,
            replace_null_with_default,
            schemas: SchemaCache::new(),
        })
    }

    /// `InsertField$Value` inserting only a static string field, as Debezium's
    /// `ExtractNewRecordState` configures its `__deleted` delegate.
    pub(crate) fn static_value(
        field: &str,
        value: &str,
        replace_null_with_default: bool,
    ) -> InsertField {
        InsertField {
            operand: Operand::Value,
            topic: None,
            partition: None,
            offset: None,
            timestamp: None,
            static_field: InsertionSpec::parse(Some(field.to_string())),
            static_value: Some(value.to_string()),
            replace_null_with_default,
            schemas: SchemaCache::new(),
        }
    }

    /// The fields to insert into this record, in Kafka's order; a record without a
    /// partition or timestamp gets no such field.
    fn insertions(&self, record: &Record) -> Result<Vec<(&str, Value)>, DataError> {
        let mut fields = Vec::new();
        if let Some(spec) = &self.topic {
            fields.push((spec.name.as_str(), Value::String(record.topic.clone())));
        }
        if let (Some(spec), Some(partition)) = (&self.partition, record.partition) {
            fields.push((spec.name.as_str(), Value::Int32(partition)));
        }
        if let Some(spec) = &self.offset {
            let offset = require_sink_offset(record, PURPOSE)?;
            fields.push((spec.name.as_str(), Value::Int64(offset)));
        }
        if let (Some(spec), Some(timestamp)) = (&self.timestamp, record.timestamp) {
            fields.push((spec.name.as_str(), Value::Int64(timestamp)));
        }
        if let (Some(spec), Some(value)) = (&self.static_field, &self.static_value) {
            fields.push((spec.name.as_str(), Value::String(value.clone())));
        }
        Ok(fields)
    }

    fn updated_schema(&self, schema: &Schema) -> Result<Schema, DataError> {
        let mut updated = struct_with_basics(schema);
        for field in &schema.fields {
            add_field(&mut updated, &field.name, field.schema.clone())?;
        }
        let specs = [
            (&self.topic, Schema::new(Type::String)),
            (&self.partition, Schema::new(Type::Int32)),
            (&self.offset, Schema::new(Type::Int64)),
            (&self.timestamp, Schema::timestamp()),
            (&self.static_field, Schema::new(Type::String)),
        ];
        for (spec, field_schema) in specs {
            if let Some(spec) = spec {
                let field_schema = if spec.optional {
                    field_schema.optional()
                } else {
                    field_schema
                };
                add_field(&mut updated, &spec.name, SchemaRef::new(field_schema))?;
            }
        }
        Ok(updated)
    }
}

impl Transform for InsertField {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        if self.operand.value(&record).is_null() {
            return Ok(Some(record));
        }
        if self.operand.schema(&record).is_none() {
            super::support::require_map(self.operand.value(&record), PURPOSE)?;
            let insertions = self.insertions(&record)?;
            let insertions: Vec<(String, Value)> = insertions
                .into_iter()
                .map(|(name, value)| (name.to_string(), value))
                .collect();
            let (_, value) = self.operand.take(&mut record);
            let mut entries = into_map(value, PURPOSE)?;
            for (name, value) in insertions {
                map_put(&mut entries, &name, value);
            }
            self.operand.put(&mut record, None, Value::Map(entries));
            return Ok(Some(record));
        }

        let value = require_struct(self.operand.value(&record), PURPOSE)?;
        let updated_schema = self
            .schemas
            .get_or_build(&value.schema, |s| self.updated_schema(s))?;
        let mut updated = Struct::new(updated_schema.clone());
        for field in &value.schema.fields {
            let field_value = struct_get(value, &field.name, self.replace_null_with_default)?;
            updated.put(&field.name, field_value)?;
        }
        for (name, field_value) in self.insertions(&record)? {
            updated.put(name, field_value)?;
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
    use crate::data::TIMESTAMP;

    fn transform(operand: Operand, config: &[(&str, &str)]) -> InsertField {
        configure(config, |o| InsertField::configure(o, operand)).unwrap()
    }

    const ALL: &[(&str, &str)] = &[
        ("topic.field", "topic_field!"),
        ("partition.field", "partition_field"),
        ("timestamp.field", "timestamp_field?"),
        ("static.field", "instance_id"),
        ("static.value", "my-instance-id"),
    ];

    fn source(topic: &str, schema: Option<SchemaRef>, value: Value, timestamp: i64) -> Record {
        let mut record = Record::new(topic, schema, value);
        record.partition = Some(0);
        record.timestamp = Some(timestamp);
        record
    }

    /// Kafka's `InsertFieldTest.topLevelStructRequired`.
    #[test]
    fn a_non_struct_value_with_a_schema_is_refused() {
        let xform = transform(Operand::Value, &[("topic.field", "topic_field")]);
        let record = Record::new("", Some(Schema::new(Type::Int32).into()), Value::Int32(42));
        assert_eq!(
            xform.apply(record).unwrap_err().0,
            "Only Struct objects supported for [field insertion], found: java.lang.Integer"
        );
    }

    /// Kafka's `InsertFieldTest.copySchemaAndInsertConfiguredFields`.
    #[test]
    fn fields_are_inserted_into_a_struct_under_an_updated_schema() {
        let xform = transform(Operand::Value, ALL);
        let schema: SchemaRef = Schema::new(Type::Struct)
            .named("name")
            .with_version(1)
            .with_doc("doc")
            .field("magic", Schema::new(Type::Int64).optional())
            .into();
        let value = structure(&schema, &[("magic", Value::Int64(42))]);
        let out = xform
            .apply(source(
                "test",
                Some(schema.clone()),
                Value::Struct(value),
                789,
            ))
            .unwrap()
            .unwrap();
        let updated = out.value_schema.clone().unwrap();
        assert_eq!(updated.name.as_deref(), Some("name"));
        assert_eq!(updated.version, Some(1));
        assert_eq!(updated.doc.as_deref(), Some("doc"));
        let field = |n: &str| (*updated.get_field(n).unwrap().schema).clone();
        assert_eq!(field("magic"), Schema::new(Type::Int64).optional());
        assert_eq!(field("topic_field"), Schema::new(Type::String));
        assert_eq!(
            field("partition_field"),
            Schema::new(Type::Int32).optional()
        );
        assert_eq!(field("timestamp_field"), Schema::timestamp().optional());
        assert_eq!(field("timestamp_field").name.as_deref(), Some(TIMESTAMP));
        assert_eq!(field("instance_id"), Schema::new(Type::String).optional());
        let Value::Struct(out_value) = &out.value else {
            panic!("a struct")
        };
        assert_eq!(out_value.get("magic"), Some(&Value::Int64(42)));
        assert_eq!(out_value.get("topic_field"), Some(&s("test")));
        assert_eq!(out_value.get("partition_field"), Some(&Value::Int32(0)));
        assert_eq!(out_value.get("timestamp_field"), Some(&Value::Int64(789)));
        assert_eq!(out_value.get("instance_id"), Some(&s("my-instance-id")));

        // The updated schema is cached: the next record with the schema shares it.
        let mut next = Record::new(
            "test",
            Some(schema.clone()),
            Value::Struct(Struct::new(schema)),
        );
        next.partition = Some(1);
        let next = xform.apply(next).unwrap().unwrap();
        assert!(std::sync::Arc::ptr_eq(
            next.value_schema.as_ref().unwrap(),
            &updated
        ));
    }

    /// Kafka's `InsertFieldTest.schemalessInsertConfiguredFields`.
    #[test]
    fn fields_are_inserted_into_a_schemaless_map() {
        let xform = transform(Operand::Value, ALL);
        let out = xform
            .apply(source(
                "test",
                None,
                map(&[("magic", Value::Int64(42))]),
                123,
            ))
            .unwrap()
            .unwrap();
        assert_eq!(
            out.value,
            map(&[
                ("magic", Value::Int64(42)),
                ("topic_field", s("test")),
                ("partition_field", Value::Int32(0)),
                ("timestamp_field", Value::Int64(123)),
                ("instance_id", s("my-instance-id")),
            ])
        );
        assert_eq!(out.value_schema, None);
    }

    /// Kafka's `InsertFieldTest.insertConfiguredFieldsIntoTombstoneEvent*` and
    /// `insertIntoNullKeyLeavesRecordUnchanged`.
    #[test]
    fn null_values_pass_through() {
        let xform = transform(Operand::Value, ALL);
        let tombstone = Record::new("test", None, Value::Null);
        assert_eq!(xform.apply(tombstone.clone()).unwrap(), Some(tombstone));
        let schema = schema(&[("magic", Schema::new(Type::Int64).optional())]);
        let tombstone = Record::new("test", Some(schema), Value::Null);
        assert_eq!(xform.apply(tombstone.clone()).unwrap(), Some(tombstone));

        let xform = transform(Operand::Key, ALL);
        let null_key = Record::new("test", None, map(&[("magic", Value::Int64(42))]));
        assert_eq!(xform.apply(null_key.clone()).unwrap(), Some(null_key));
    }

    /// Kafka's `InsertFieldTest.insertKeyFieldsIntoTombstoneEvent`.
    #[test]
    fn key_fields_are_inserted_into_a_tombstone_key() {
        let xform = transform(Operand::Key, ALL);
        let mut record = Record::new("test", None, Value::Null)
            .with_key(None, map(&[("magic", Value::Int64(42))]));
        record.partition = Some(0);
        let out = xform.apply(record).unwrap().unwrap();
        assert_eq!(
            out.key,
            map(&[
                ("magic", Value::Int64(42)),
                ("topic_field", s("test")),
                ("partition_field", Value::Int32(0)),
                ("instance_id", s("my-instance-id")),
            ])
        );
        assert_eq!(out.value, Value::Null);
    }

    /// Kafka's `InsertFieldTest.testUnsetOptionalField`.
    #[test]
    fn null_fields_read_as_their_default_unless_configured_otherwise() {
        for (replace, expected) in [("false", Value::Null), ("true", Value::Int64(42))] {
            let mut config = ALL.to_vec();
            config.push(("replace.null.with.default", replace));
            let xform = transform(Operand::Value, &config);
            let magic = Schema::new(Type::Int64)
                .optional()
                .with_default(Value::Int64(42));
            let schema: SchemaRef = Schema::new(Type::Struct)
                .named("name")
                .with_version(1)
                .with_doc("doc")
                .field("magic_with_default", magic.clone())
                .into();
            let out = xform
                .apply(source(
                    "test",
                    Some(schema.clone()),
                    Value::Struct(Struct::new(schema)),
                    789,
                ))
                .unwrap()
                .unwrap();
            let Value::Struct(out_value) = &out.value else {
                panic!("a struct")
            };
            let field = out_value.schema.get_field("magic_with_default").unwrap();
            assert_eq!(*field.schema, magic);
            assert_eq!(out_value.values[field.index], expected, "{replace}");
        }
    }

    #[test]
    fn the_offset_is_inserted_into_sink_records_only() {
        let xform = transform(Operand::Value, &[("offset.field", "offset")]);
        let mut record = sink("t", None, map(&[]));
        record.kafka_offset = Some(7);
        let out = xform.apply(record).unwrap().unwrap();
        assert_eq!(out.value, map(&[("offset", Value::Int64(7))]));
        assert_eq!(
            xform.apply(Record::new("t", None, map(&[]))).unwrap_err().0,
            "Only SinkRecord supported for [field insertion], found: org.apache.kafka.connect.source.SourceRecord"
        );
    }

    #[test]
    fn schemaless_and_struct_errors_name_the_purpose() {
        let xform = transform(Operand::Value, &[("topic.field", "t")]);
        assert_eq!(
            xform.apply(Record::new("t", None, s("x"))).unwrap_err().0,
            "Only Map objects supported in absence of schema for [field insertion], found: java.lang.String"
        );
        let schema = schema(&[("t", Schema::new(Type::String))]);
        let value = structure(&schema, &[("t", s("x"))]);
        assert_eq!(
            xform
                .apply(Record::new("t", Some(schema), Value::Struct(value)))
                .unwrap_err()
                .0,
            "Cannot create field because of field name duplication t"
        );
    }

    #[test]
    fn config_errors() {
        let errors = |config: &[(&str, &str)]| {
            option_errors(config, |o| InsertField::configure(o, Operand::Value))
        };
        assert_eq!(
            errors(&[]),
            one_error("type", "No field insertion configured")
        );
        assert_eq!(
            errors(&[("static.field", "instance_id")]),
            one_error(
                "static.value",
                "Invalid value null for configuration static.value: No value specified for static field: instance_id"
            )
        );
        assert_eq!(
            errors(&[("topic.field", "t"), ("replace.null.with.default", "1")]),
            one_error(
                "replace.null.with.default",
                "Invalid value 1 for configuration transforms.t.replace.null.with.default: Expected value to be either true or false"
            )
        );
    }
}
