//! `TimestampConverter$Key` / `TimestampConverter$Value`: converts a timestamp (the
//! whole key or value, or the top-level `field`) between `string` (a `SimpleDateFormat`
//! `format`, in UTC), `unix` (an int64 in `unix.precision`: seconds, milliseconds,
//! microseconds or nanoseconds), and Connect's `Date`, `Time` and `Timestamp`
//! (`target.type`). With a schema the source type comes from the schema; without one,
//! an int64 is `unix` and a string is `string`.

use crate::ConfigError;
use crate::data::{
    DATE, DataError, Record, Schema, SchemaRef, Struct, TIME, TIMESTAMP, Type, Value,
};

use super::Transform;
use super::config::Options;
use super::simple_date_format::SimpleDateFormat;
use super::support::{
    Operand, SchemaCache, add_field, into_map, java_schema, map_get, map_put, struct_get,
    struct_with_basics,
};

const PURPOSE: &str = "converting timestamp formats";
const MILLIS_PER_DAY: i64 = 86_400_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Unix,
    Date,
    Time,
    Timestamp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Precision {
    Seconds,
    Milliseconds,
    Microseconds,
    Nanoseconds,
}

impl Kind {
    fn schema(self, optional: bool) -> Schema {
        let schema = match self {
            Kind::String => Schema::new(Type::String),
            Kind::Unix => Schema::new(Type::Int64),
            Kind::Date => Schema::date(),
            Kind::Time => Schema::time(),
            Kind::Timestamp => Schema::timestamp(),
        };
        if optional { schema.optional() } else { schema }
    }

    /// The kind a schema holds (`timestampTypeFromSchema`).
    fn of_schema(schema: &Schema) -> Result<Kind, DataError> {
        Ok(match (schema.name.as_deref(), schema.ty) {
            (Some(TIMESTAMP), _) => Kind::Timestamp,
            (Some(DATE), _) => Kind::Date,
            (Some(TIME), _) => Kind::Time,
            (_, Type::String) => Kind::String,
            (_, Type::Int64) => Kind::Unix,
            _ => {
                return Err(DataError(format!(
                    "Schema {} does not correspond to a known timestamp type format",
                    java_schema(schema)
                )));
            }
        })
    }
}

pub(crate) struct TimestampConverter {
    operand: Operand,
    field: String,
    target: Kind,
    format: Option<SimpleDateFormat>,
    precision: Precision,
    replace_null_with_default: bool,
    schemas: SchemaCache,
}

pub(crate) fn key(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(TimestampConverter::configure(
        options,
        Operand::Key,
    )?))
}

pub(crate) fn value(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(TimestampConverter::configure(
        options,
        Operand::Value,
    )?))
}

impl TimestampConverter {
    fn configure(
        options: &mut Options,
        operand: Operand,
    ) -> Result<TimestampConverter, ConfigError> {
        let field = options.string_or("field", "");
        let target = options.required_string("target.type");
        let kinds = ["string", "unix", "Date", "Time", "Timestamp"];
        if options.raw("target.type").is_some() {
            options.one_of("target.type", &target, &kinds);
        }
        let pattern = options.string_or("format", "");
        let precision = options.string_or("unix.precision", "milliseconds");
        options.one_of(
            "unix.precision",
            &precision,
            &["nanoseconds", "microseconds", "milliseconds", "seconds"],
        );
        let replace_null_with_default = options.boolean("replace.null.with.default", true);
        options.check()?;
        let target = match target.as_str() {
            "string" => Kind::String,
            "unix" => Kind::Unix,
            "Date" => Kind::Date,
            "Time" => Kind::Time,
            _ => Kind::Timestamp,
        };
        if target == Kind::String && pattern.is_empty() {
            return options.fail(
                "format",
                "TimestampConverter requires format option to be specified when using string timestamps",
            );
        }
        let format = if pattern.is_empty() {
            None
        } else {
            match SimpleDateFormat::new(&pattern) {
                Ok(format) => Some(format),
                Err(_) => {
                    return options.fail(
                        "format",
                        format!(
                            "TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: {pattern}"
                        ),
                    );
                }
            }
        };
        Ok(TimestampConverter {
            operand,
            field,
            target,
            format,
            precision: match precision.as_str() {
                "seconds" => Precision::Seconds,
                "microseconds" => Precision::Microseconds,
                "nanoseconds" => Precision::Nanoseconds,
                _ => Precision::Milliseconds,
            },
            replace_null_with_default,
            schemas: SchemaCache::new(),
        })
    }

    fn format(&self) -> Result<&SimpleDateFormat, DataError> {
        self.format.as_ref().ok_or_else(|| {
            DataError(
                "TimestampConverter requires format option to be specified when using string timestamps"
                    .into(),
            )
        })
    }

    /// Epoch milliseconds of a timestamp of `kind` (`toRaw`).
    fn to_millis(&self, kind: Kind, value: &Value) -> Result<i64, DataError> {
        let class = || format!("class {}", value.java_class());
        match (kind, value) {
            (Kind::String, Value::String(text)) => {
                let format = self.format()?;
                format.parse(text).ok_or_else(|| {
                    DataError(format!(
                        "Could not parse timestamp: value ({text}) does not match pattern ({})",
                        format.pattern()
                    ))
                })
            }
            (Kind::String, _) => Err(DataError(format!(
                "Expected string timestamp to be a String, but found {}",
                class()
            ))),
            (Kind::Unix, Value::Int64(unix)) => Ok(match self.precision {
                Precision::Seconds => unix.saturating_mul(1000),
                Precision::Milliseconds => *unix,
                Precision::Microseconds => unix / 1000,
                Precision::Nanoseconds => unix / 1_000_000,
            }),
            (Kind::Unix, _) => Err(DataError(format!(
                "Expected Unix timestamp to be a Long, but found {}",
                class()
            ))),
            (Kind::Date, Value::Int32(days)) => Ok(i64::from(*days) * MILLIS_PER_DAY),
            (Kind::Time, Value::Int32(millis)) => Ok(i64::from(*millis)),
            (Kind::Timestamp, Value::Int64(millis)) => Ok(*millis),
            (Kind::Date | Kind::Time | Kind::Timestamp, _) => Err(DataError(format!(
                "Expected {} to be a java.util.Date, but found {}",
                match kind {
                    Kind::Date => "Date",
                    Kind::Time => "Time",
                    _ => "Timestamp",
                },
                class()
            ))),
        }
    }

    /// A timestamp of the target kind (`toType`).
    fn to_target(&self, millis: i64) -> Result<Value, DataError> {
        Ok(match self.target {
            Kind::String => Value::String(self.format()?.format(millis)),
            Kind::Unix => Value::Int64(match self.precision {
                Precision::Seconds => millis / 1000,
                Precision::Milliseconds => millis,
                Precision::Microseconds => millis.saturating_mul(1000),
                Precision::Nanoseconds => millis.saturating_mul(1_000_000),
            }),
            Kind::Date => Value::Int32(millis.div_euclid(MILLIS_PER_DAY) as i32),
            Kind::Time => Value::Int32(millis.rem_euclid(MILLIS_PER_DAY) as i32),
            Kind::Timestamp => Value::Int64(millis),
        })
    }

    /// `convertTimestamp`: null stays null; without a known kind it is inferred.
    fn convert(&self, value: &Value, kind: Option<Kind>) -> Result<Value, DataError> {
        if value.is_null() {
            return Ok(Value::Null);
        }
        let kind = match (kind, value) {
            (Some(kind), _) => kind,
            (None, Value::Int64(_)) => Kind::Unix,
            (None, Value::String(_)) => Kind::String,
            (None, other) => {
                return Err(DataError(format!(
                    "TimestampConverter does not support class {} objects as timestamps",
                    other.java_class()
                )));
            }
        };
        self.to_target(self.to_millis(kind, value)?)
    }

    fn convert_struct(
        &self,
        value: &Struct,
        updated_schema: &SchemaRef,
    ) -> Result<Struct, DataError> {
        let mut updated = Struct::new(updated_schema.clone());
        for field in &value.schema.fields {
            let original = struct_get(value, &field.name, self.replace_null_with_default)?;
            let field_value = if field.name == self.field {
                self.convert(&original, Some(Kind::of_schema(&field.schema)?))?
            } else {
                original
            };
            updated.put(&field.name, field_value)?;
        }
        Ok(updated)
    }

    fn updated_schema(&self, schema: &Schema) -> Result<Schema, DataError> {
        let mut updated = struct_with_basics(schema);
        for field in &schema.fields {
            let field_schema = if field.name == self.field {
                SchemaRef::new(self.target.schema(field.schema.optional))
            } else {
                field.schema.clone()
            };
            add_field(&mut updated, &field.name, field_schema)?;
        }
        updated.optional = schema.optional;
        if let Some(Value::Struct(default)) = &schema.default {
            let without_default: SchemaRef = updated.clone().into();
            updated.default = Some(Value::Struct(
                self.convert_struct(default, &without_default)?,
            ));
        }
        Ok(updated)
    }
}

impl Transform for TimestampConverter {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        let Some(schema) = self.operand.schema(&record).cloned() else {
            let (_, value) = self.operand.take(&mut record);
            let updated = if value.is_null() || self.field.is_empty() {
                self.convert(&value, None)?
            } else {
                let mut entries = into_map(value, PURPOSE)?;
                let field_value = map_get(&entries, &self.field)
                    .cloned()
                    .unwrap_or(Value::Null);
                map_put(&mut entries, &self.field, self.convert(&field_value, None)?);
                Value::Map(entries)
            };
            self.operand.put(&mut record, None, updated);
            return Ok(Some(record));
        };
        if self.field.is_empty() {
            let updated_schema = SchemaRef::new(self.target.schema(schema.optional));
            let kind = Kind::of_schema(&schema)?;
            let updated = self.convert(self.operand.value(&record), Some(kind))?;
            self.operand.put(&mut record, Some(updated_schema), updated);
            return Ok(Some(record));
        }
        let updated_schema = self
            .schemas
            .get_or_build(&schema, |s| self.updated_schema(s))?;
        let updated = match self.operand.value(&record) {
            Value::Null => Value::Null,
            Value::Struct(value) => Value::Struct(self.convert_struct(value, &updated_schema)?),
            other => {
                return Err(DataError(format!(
                    "Only Struct objects supported for [{PURPOSE}], found: {}",
                    other.java_class()
                )));
            }
        };
        self.operand.put(&mut record, Some(updated_schema), updated);
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    /// Kafka's `TimestampConverterTest` instant: 1970-01-02T03:04:05.006Z (the test's
    /// `DATE_PLUS_TIME`), as each kind holds it.
    const MILLIS: i64 = MILLIS_PER_DAY + 3 * 3_600_000 + 4 * 60_000 + 5_000 + 6;
    const STRING_PATTERN: &str = "yyyy MM dd HH mm ss SSS z";
    const STRING: &str = "1970 01 02 03 04 05 006 UTC";

    fn transform(config: &[(&str, &str)]) -> TimestampConverter {
        configure(config, |o| TimestampConverter::configure(o, Operand::Value)).unwrap()
    }

    fn convert(
        config: &[(&str, &str)],
        schema: Option<Schema>,
        value: Value,
    ) -> Result<Record, DataError> {
        let record = Record::new("topic", schema.map(SchemaRef::new), value);
        Ok(transform(config).apply(record)?.unwrap())
    }

    /// Kafka's `TimestampConverterTest.testSchemaless*` and `testWithSchema*` conversions.
    #[test]
    fn whole_values_convert_between_kinds() {
        let sources = [
            (Some(Schema::timestamp()), Value::Int64(MILLIS)),
            (Some(Schema::new(Type::Int64)), Value::Int64(MILLIS)),
            (None, Value::Int64(MILLIS)),
            (Some(Schema::new(Type::String)), s(STRING)),
            (None, s(STRING)),
        ];
        let targets = [
            ("Timestamp", Schema::timestamp(), Value::Int64(MILLIS)),
            ("Date", Schema::date(), Value::Int32(1)),
            (
                "Time",
                Schema::time(),
                Value::Int32((MILLIS - MILLIS_PER_DAY) as i32),
            ),
            ("unix", Schema::new(Type::Int64), Value::Int64(MILLIS)),
            ("string", Schema::new(Type::String), s(STRING)),
        ];
        for (source_schema, source) in &sources {
            for (target, target_schema, expected) in &targets {
                let out = convert(
                    &[("target.type", target), ("format", STRING_PATTERN)],
                    source_schema.clone(),
                    source.clone(),
                )
                .unwrap();
                assert_eq!(&out.value, expected, "{source:?} to {target}");
                if source_schema.is_some() {
                    assert_eq!(out.value_schema.as_deref(), Some(target_schema));
                } else {
                    assert_eq!(out.value_schema, None);
                }
            }
        }
        let out = convert(
            &[("target.type", "Timestamp")],
            Some(Schema::date()),
            Value::Int32(1),
        )
        .unwrap();
        assert_eq!(out.value, Value::Int64(MILLIS_PER_DAY));
    }

    /// Kafka's `TimestampConverterTest.testSchemalessUnixPrecision*` and
    /// `testWithSchemaUnixPrecision*`.
    #[test]
    fn unix_timestamps_follow_the_precision() {
        let cases = [
            ("seconds", 1_483_425_001, 1_483_425_001_000),
            ("milliseconds", 1_483_425_001_864, 1_483_425_001_864),
            ("microseconds", 1_483_425_001_864_123, 1_483_425_001_864),
            ("nanoseconds", 1_483_425_001_864_123_456, 1_483_425_001_864),
        ];
        for (precision, unix, millis) in cases {
            let out = convert(
                &[("target.type", "Timestamp"), ("unix.precision", precision)],
                None,
                Value::Int64(unix),
            )
            .unwrap();
            assert_eq!(out.value, Value::Int64(millis), "{precision}");
            let out = convert(
                &[("target.type", "unix"), ("unix.precision", precision)],
                Some(Schema::timestamp()),
                Value::Int64(1_483_425_001_864),
            )
            .unwrap();
            let expected = match precision {
                "seconds" => 1_483_425_001,
                "microseconds" => 1_483_425_001_864_000,
                "nanoseconds" => 1_483_425_001_864_000_000,
                _ => 1_483_425_001_864,
            };
            assert_eq!(out.value, Value::Int64(expected), "{precision}");
        }
    }

    /// Kafka's `TimestampConverterTest.testWithSchemaFieldConversion*` and
    /// `testSchemalessFieldConversion`.
    #[test]
    fn fields_convert_and_the_rest_is_kept() {
        let schema = schema(&[
            ("ts", Schema::timestamp()),
            ("other", Schema::new(Type::String)),
        ]);
        let value = structure(
            &schema,
            &[("ts", Value::Int64(MILLIS)), ("other", s("test"))],
        );
        let out = convert(
            &[("target.type", "Date"), ("field", "ts")],
            Some((*schema).clone()),
            Value::Struct(value),
        )
        .unwrap();
        let Value::Struct(converted) = out.value else {
            panic!("a struct")
        };
        assert_eq!(
            *converted.schema.get_field("ts").unwrap().schema,
            Schema::date()
        );
        assert_eq!(converted.get("ts"), Some(&Value::Int32(1)));
        assert_eq!(converted.get("other"), Some(&s("test")));

        let out = convert(
            &[("target.type", "Date"), ("field", "ts")],
            None,
            map(&[("ts", Value::Int64(MILLIS)), ("other", s("test"))]),
        )
        .unwrap();
        assert_eq!(
            out.value,
            map(&[("ts", Value::Int32(1)), ("other", s("test"))])
        );

        let out = convert(
            &[("target.type", "Date"), ("field", "ts")],
            Some((*schema).clone()),
            Value::Null,
        )
        .unwrap();
        assert_eq!(out.value, Value::Null);
    }

    #[test]
    fn wrong_inputs_are_refused() {
        let cases = [
            (
                Some(Schema::new(Type::Int32)),
                Value::Int32(1),
                "Schema Schema{INT32} does not correspond to a known timestamp type format",
            ),
            (
                None,
                Value::Int32(1),
                "TimestampConverter does not support class java.lang.Integer objects as timestamps",
            ),
            (
                None,
                s("not a time"),
                "Could not parse timestamp: value (not a time) does not match pattern (yyyy MM dd HH mm ss SSS z)",
            ),
        ];
        for (schema, value, message) in cases {
            assert_eq!(
                convert(
                    &[("target.type", "Timestamp"), ("format", STRING_PATTERN)],
                    schema,
                    value
                )
                .unwrap_err()
                .0,
                message
            );
        }
    }

    /// Kafka's `TimestampConverterTest.testConfig*`.
    #[test]
    fn config_errors() {
        let errors = |config: &[(&str, &str)]| {
            option_errors(config, |o| TimestampConverter::configure(o, Operand::Value))
        };
        assert_eq!(
            errors(&[]),
            one_error(
                "target.type",
                "Missing required configuration \"transforms.t.target.type\" which has no default value."
            )
        );
        assert_eq!(
            errors(&[("target.type", "invalid")]),
            one_error(
                "target.type",
                "Invalid value invalid for configuration target.type: String must be one of: string, unix, Date, Time, Timestamp"
            )
        );
        assert_eq!(
            errors(&[("target.type", "string")]),
            one_error(
                "format",
                "TimestampConverter requires format option to be specified when using string timestamps"
            )
        );
        assert_eq!(
            errors(&[("target.type", "string"), ("format", "bad-formatj")]),
            one_error(
                "format",
                "TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: bad-formatj"
            )
        );
        assert_eq!(
            errors(&[("target.type", "unix"), ("unix.precision", "hours")]),
            one_error(
                "unix.precision",
                "Invalid value hours for configuration unix.precision: String must be one of: nanoseconds, microseconds, milliseconds, seconds"
            )
        );
    }
}
