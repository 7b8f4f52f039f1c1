//! What Debezium's connectors share: their config conventions (include/exclude lists
//! of regular expressions, enumerated modes, Connect's number and boolean parsing) and
//! pieces of their event format (key structs as JSON in headers, the order of a Java
//! `HashMap` that some fields are written in).

use regex::Regex;
use serde_json::Value as Json;

use crate::connectors::ConfigKeyDef;
use crate::data::{Schema, SchemaRef, Struct, Type, Value};
use crate::{ConfigError, Props};

/// Regular expressions of `*.include.list` / `*.exclude.list`, each matched against the
/// whole identifier, as Debezium's `Selectors` do.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    include: Vec<Regex>,
    exclude: Vec<Regex>,
}

impl Filter {
    pub fn parse(config: &Props, include: &str, exclude: &str) -> Result<Filter, ConfigError> {
        let list = |key: &str| -> Result<Vec<Regex>, ConfigError> {
            let Some(value) = config.get(key) else {
                return Ok(Vec::new());
            };
            value
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| {
                    Regex::new(&format!("^(?:{s})$")).map_err(|e| {
                        ConfigError::invalid(key, value, &format!("not a regular expression: {e}"))
                    })
                })
                .collect()
        };
        let filter = Filter {
            include: list(include)?,
            exclude: list(exclude)?,
        };
        if !filter.include.is_empty() && !filter.exclude.is_empty() {
            return Err(ConfigError::new(
                exclude,
                format!("\"{include}\" is already specified"),
            ));
        }
        Ok(filter)
    }

    /// The index of the first include pattern `name` matches (`usize::MAX` for none):
    /// Debezium snapshots tables in the include list's order.
    pub fn position(&self, name: &str) -> usize {
        self.include
            .iter()
            .position(|r| r.is_match(name))
            .unwrap_or(usize::MAX)
    }

    pub fn matches(&self, name: &str) -> bool {
        if !self.include.is_empty() {
            return self.include.iter().any(|r| r.is_match(name));
        }
        !self.exclude.iter().any(|r| r.is_match(name))
    }
}

pub fn key(
    name: &'static str,
    ty: &'static str,
    default: Option<&'static str>,
    importance: &'static str,
    documentation: &'static str,
) -> ConfigKeyDef {
    ConfigKeyDef {
        name,
        ty,
        default,
        required: false,
        importance,
        documentation,
    }
}

pub fn one_of<T: Copy>(
    config: &Props,
    key: &str,
    default: &str,
    choices: &[(&str, T)],
    errors: &mut ConfigError,
) -> Option<T> {
    let value = config.get(key).map(String::as_str).unwrap_or(default);
    let found = choices
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(value.trim()))
        .map(|(_, v)| *v);
    if found.is_none() {
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        errors.push(ConfigError::invalid(
            key,
            value,
            &format!(
                "The '{key}' value is invalid: must be one of {}",
                names.join(", ")
            ),
        ));
    }
    found
}

pub fn number<T: std::str::FromStr>(
    config: &Props,
    key: &str,
    default: T,
    ty: &str,
    errors: &mut ConfigError,
) -> T {
    match config.get(key) {
        None => default,
        Some(v) => v.trim().parse().unwrap_or_else(|_| {
            errors.push(ConfigError::invalid(
                key,
                v,
                &format!("Not a number of type {ty}"),
            ));
            default
        }),
    }
}

pub fn boolean(config: &Props, key: &str, default: bool, errors: &mut ConfigError) -> bool {
    match config.get(key).map(|v| v.trim().to_ascii_lowercase()) {
        None => default,
        Some(v) if v == "true" => true,
        Some(v) if v == "false" => false,
        Some(v) => {
            errors.push(ConfigError::invalid(
                key,
                &v,
                "Expected value to be either true or false",
            ));
            default
        }
    }
}

/// `skipped.operations`: the operations (`c`, `u`, `d`, `t`) not emitted; `none` for
/// none. Debezium's default is `t` (truncates are not emitted).
pub fn skipped_operations(config: &Props, errors: &mut ConfigError) -> Vec<char> {
    let mut skipped = Vec::new();
    for op in config
        .get("skipped.operations")
        .map(String::as_str)
        .unwrap_or("t")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        match op {
            "none" => skipped.clear(),
            "c" => skipped.push('c'),
            "u" => skipped.push('u'),
            "d" => skipped.push('d'),
            "t" => skipped.push('t'),
            other => errors.push(ConfigError::invalid(
                "skipped.operations",
                other,
                "The 'skipped.operations' value is invalid: must be one of c, u, d, t, none",
            )),
        }
    }
    skipped
}

/// A key struct as JSON, for Debezium's `__debezium.oldkey`/`newkey` headers.
pub fn struct_json(s: &Struct) -> Json {
    fn value(v: &Value) -> Json {
        match v {
            Value::Null => Json::Null,
            Value::Int8(n) => Json::from(*n),
            Value::Int16(n) => Json::from(*n),
            Value::Int32(n) => Json::from(*n),
            Value::Int64(n) => Json::from(*n),
            Value::Float32(n) => Json::from(*n),
            Value::Float64(n) => Json::from(*n),
            Value::Boolean(b) => Json::Bool(*b),
            Value::String(t) => Json::String(t.clone()),
            Value::Bytes(b) => {
                use base64::Engine;
                Json::String(base64::engine::general_purpose::STANDARD.encode(b))
            }
            Value::Array(items) => Json::Array(items.iter().map(value).collect()),
            Value::Map(entries) => Json::Array(
                entries
                    .iter()
                    .map(|(k, v)| Json::Array(vec![value(k), value(v)]))
                    .collect(),
            ),
            Value::Struct(s) => struct_json(s),
        }
    }
    Json::Object(
        s.schema
            .fields
            .iter()
            .map(|f| (f.name.clone(), value(&s.values[f.index])))
            .collect(),
    )
}

/// Entries in the order a Java `HashMap<String, _>` with them inserted in this order
/// iterates (Debezium's `data_collections`): by bucket of the spread `String.hashCode`
/// in a table of the capacity the map grew to, then in insertion order.
pub fn java_hash_map_order(entries: &[(String, i64)]) -> Vec<&(String, i64)> {
    let mut capacity = 16usize;
    while entries.len() > capacity * 3 / 4 {
        capacity *= 2;
    }
    let bucket = |key: &str| {
        let h = key
            .encode_utf16()
            .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)));
        let h = h as u32;
        ((h ^ (h >> 16)) as usize) & (capacity - 1)
    };
    let mut ordered: Vec<&(String, i64)> = entries.iter().collect();
    ordered.sort_by_key(|(k, _)| bucket(k));
    ordered
}

/// The `transaction` block of a change event (`event.block`).
pub fn transaction_block_schema() -> SchemaRef {
    Schema::new(Type::Struct)
        .optional()
        .named("event.block")
        .with_version(1)
        .field("id", Schema::new(Type::String))
        .field("total_order", Schema::new(Type::Int64))
        .field("data_collection_order", Schema::new(Type::Int64))
        .into()
}

/// A transaction metadata record's key and value (`<prefix>.transaction`): `BEGIN` with
/// no counts, `END` with the event count and `(data collection, count)` pairs in the
/// order given.
pub fn transaction_metadata(
    status: &str,
    id: &str,
    end: Option<(i64, Vec<(&str, i64)>)>,
    ts_ms: i64,
) -> ((SchemaRef, Struct), (SchemaRef, Struct)) {
    let key_schema: SchemaRef = Schema::new(Type::Struct)
        .named("io.debezium.connector.common.TransactionMetadataKey")
        .with_version(1)
        .field("id", Schema::new(Type::String))
        .into();
    let collection: SchemaRef = Schema::new(Type::Struct)
        .optional()
        .named("event.collection")
        .with_version(1)
        .field("data_collection", Schema::new(Type::String))
        .field("event_count", Schema::new(Type::Int64))
        .into();
    let value_schema: SchemaRef = Schema::new(Type::Struct)
        .named("io.debezium.connector.common.TransactionMetadataValue")
        .with_version(1)
        .field("status", Schema::new(Type::String))
        .field("id", Schema::new(Type::String))
        .field("event_count", Schema::new(Type::Int64).optional())
        .field(
            "data_collections",
            Schema::array(collection.clone()).optional(),
        )
        .field("ts_ms", Schema::new(Type::Int64))
        .into();
    let mut key = Struct::new(key_schema.clone());
    key.values[0] = Value::String(id.into());
    let mut value = Struct::new(value_schema.clone());
    value.values[0] = Value::String(status.into());
    value.values[1] = Value::String(id.into());
    if let Some((total, collections)) = end {
        value.values[2] = Value::Int64(total);
        value.values[3] = Value::Array(
            collections
                .into_iter()
                .map(|(name, count)| {
                    let mut c = Struct::new(collection.clone());
                    c.values[0] = Value::String(name.into());
                    c.values[1] = Value::Int64(count);
                    Value::Struct(c)
                })
                .collect(),
        );
    }
    value.values[4] = Value::Int64(ts_ms);
    ((key_schema, key), (value_schema, value))
}
