//! A captured table as Debezium describes it: its key and value schemas, the change
//! event envelope, the `source` block of the Postgres connector, and rows turned into
//! Connect structs.

use std::sync::Arc;

use super::pgoutput::Datum;
use super::values::{Mapped, Modes};
use crate::data::{Schema, SchemaRef, Struct, Type, Value};

/// Debezium's placeholder for a TOASTed value that an update did not send
/// (`unavailable.value.placeholder`).
pub const UNAVAILABLE: &str = "__debezium_unavailable_value";

/// The connector name `source.connector` carries.
pub const CONNECTOR: &str = "postgresql";
/// The Debezium release whose event format this connector writes (`source.version`).
pub const DEBEZIUM_VERSION: &str = "3.6.1.Final";

/// The values `source.snapshot` takes (`io.debezium.connector.SnapshotRecord`).
pub const SNAPSHOT_VALUES: &str =
    "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental";

#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    /// `None`: a type Debezium leaves out (the column is not in the schemas).
    pub mapped: Option<Mapped>,
    pub optional: bool,
    /// The column's default, when it is a literal (its schema carries it).
    pub default: Option<Value>,
    /// Position in the primary key (1-based), if part of it.
    pub key_position: Option<i32>,
}

/// A table's columns and schemas.
#[derive(Debug)]
pub struct Table {
    pub schema_name: String,
    pub name: String,
    pub topic: String,
    pub columns: Vec<Column>,
    /// Indexes into `columns` of the primary key, in key order.
    pub key_columns: Vec<usize>,
    pub key_schema: Option<SchemaRef>,
    pub value_schema: SchemaRef,
    pub envelope: SchemaRef,
}

/// `io.debezium.connector.postgresql.Source`.
pub fn source_schema() -> SchemaRef {
    let long = || Schema::new(Type::Int64);
    let string = || Schema::new(Type::String);
    Schema::new(Type::Struct)
        .named("io.debezium.connector.postgresql.Source")
        .with_version(1)
        .field("version", string())
        .field("connector", string())
        .field("name", string())
        .field("ts_ms", long())
        .field(
            "snapshot",
            Schema::new(Type::String)
                .optional()
                .named("io.debezium.data.Enum")
                .with_version(1)
                .with_parameter("allowed", SNAPSHOT_VALUES)
                .with_default(Value::String("false".into())),
        )
        .field("db", string())
        .field("sequence", string().optional())
        .field("ts_us", long().optional())
        .field("ts_ns", long().optional())
        .field("schema", string())
        .field("table", string())
        .field("txId", long().optional())
        .field("lsn", long().optional())
        .field("xmin", long().optional())
        .field("origin", string().optional())
        .field("origin_lsn", long().optional())
        .into()
}

pub use crate::connectors::debezium::transaction_block_schema;

impl Table {
    pub fn new(
        prefix: &str,
        schema_name: &str,
        name: &str,
        columns: Vec<Column>,
        source: &SchemaRef,
        transaction: &SchemaRef,
    ) -> Table {
        let topic = format!("{prefix}.{schema_name}.{name}");
        let mut key_columns: Vec<usize> = (0..columns.len())
            .filter(|&i| columns[i].key_position.is_some() && columns[i].mapped.is_some())
            .collect();
        key_columns.sort_by_key(|&i| columns[i].key_position);
        let field = |c: &Column| {
            let mapped = c.mapped.as_ref().expect("mapped columns only");
            let mut schema = mapped.schema.clone();
            if let Some(default) = &c.default {
                schema = schema.with_default(default.clone());
            }
            if c.optional {
                schema.optional()
            } else {
                schema
            }
        };
        let key_schema = (!key_columns.is_empty()).then(|| {
            let mut s = Schema::new(Type::Struct).named(format!("{topic}.Key"));
            for &i in &key_columns {
                s = s.field(columns[i].name.clone(), field(&columns[i]));
            }
            SchemaRef::from(s)
        });
        let mut value = Schema::new(Type::Struct)
            .optional()
            .named(format!("{topic}.Value"));
        for c in columns.iter().filter(|c| c.mapped.is_some()) {
            value = value.field(c.name.clone(), field(c));
        }
        let value_schema: SchemaRef = value.into();
        let envelope = Schema::new(Type::Struct)
            .named(format!("{topic}.Envelope"))
            .with_version(2)
            .field("before", value_schema.clone())
            .field("after", value_schema.clone())
            .field("source", source.clone())
            .field("transaction", transaction.clone())
            .field("op", Schema::new(Type::String))
            .field("ts_ms", Schema::new(Type::Int64).optional())
            .field("ts_us", Schema::new(Type::Int64).optional())
            .field("ts_ns", Schema::new(Type::Int64).optional())
            .into();
        Table {
            schema_name: schema_name.to_string(),
            name: name.to_string(),
            topic,
            columns,
            key_columns,
            key_schema,
            value_schema,
            envelope,
        }
    }

    /// The full name Debezium's filters and logs use.
    pub fn id(&self) -> String {
        format!("{}.{}", self.schema_name, self.name)
    }

    /// A row (one datum per column, in column order) as the table's value struct.
    pub fn row(&self, datums: &[Datum], modes: &Modes) -> Result<Struct, String> {
        if datums.len() != self.columns.len() {
            return Err(format!(
                "a row of {} with {} values for {} columns",
                self.id(),
                datums.len(),
                self.columns.len()
            ));
        }
        let mut row = Struct::new(self.value_schema.clone());
        let mut field = 0;
        for (column, datum) in self.columns.iter().zip(datums) {
            let Some(mapped) = &column.mapped else {
                continue;
            };
            row.values[field] = match datum {
                // A NOT NULL column without a value (a key-only old row): its default or
                // its type's zero, as Debezium writes it.
                Datum::Null if !column.optional => {
                    column.default.clone().unwrap_or_else(|| mapped.fallback())
                }
                Datum::Null => Value::Null,
                Datum::Text(text) => mapped
                    .value(text, modes)
                    .map_err(|e| format!("column {} of {}: {e}", column.name, self.id()))?,
                Datum::UnchangedToast => unavailable(&mapped.schema),
                Datum::Binary(_) => {
                    return Err(format!(
                        "column {} of {}: a binary-format value (the stream asks for text)",
                        column.name,
                        self.id()
                    ));
                }
            };
            // A struct value (VariableScaleDecimal) carries the field's own schema, as
            // converters compare them.
            if let Value::Struct(s) = &mut row.values[field] {
                s.schema = self.value_schema.fields[field].schema.clone();
            }
            field += 1;
        }
        Ok(row)
    }

    /// The key struct of a value struct (`None` for a table without a primary key).
    pub fn key(&self, row: &Struct) -> Option<Struct> {
        let schema = self.key_schema.clone()?;
        let mut key = Struct::new(schema);
        for (k, &i) in self.key_columns.iter().enumerate() {
            key.values[k] = row
                .get(&self.columns[i].name)
                .cloned()
                .unwrap_or(Value::Null);
        }
        Some(key)
    }
}

/// What an unchanged TOASTed column reads as: Debezium's placeholder in the column's
/// own type where it has one.
fn unavailable(schema: &Schema) -> Value {
    match schema.ty {
        Type::String => Value::String(UNAVAILABLE.into()),
        Type::Bytes => Value::Bytes(UNAVAILABLE.as_bytes().to_vec()),
        Type::Array => match schema.value_schema.as_ref().map(|s| s.ty) {
            Some(Type::String) => Value::Array(vec![Value::String(UNAVAILABLE.into())]),
            Some(Type::Bytes) => Value::Array(vec![Value::Bytes(UNAVAILABLE.as_bytes().to_vec())]),
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

pub type TableRef = Arc<Table>;
