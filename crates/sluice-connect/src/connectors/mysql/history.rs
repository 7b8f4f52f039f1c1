//! Debezium's MySQL connector's two descriptions of a schema change, formatted from the
//! [`ddl`] model (no I/O): the record of the schema change topic (`<topic.prefix>`,
//! `io.debezium.connector.mysql.SchemaChangeKey` / `SchemaChangeValue` with its
//! `tableChanges` of `io.debezium.connector.schema.Change` structs), and the document of
//! the schema history topic (Jackson's pretty print of a `HistoryRecord`, whose table
//! changes are written by `JsonTableChangeSerializer`, not as the Connect structs are).
//!
//! The format is the one observed from Debezium 2.7.4 on MariaDB 10.11 and described in
//! `docs/design/debezium-mariadb-events.md` §8 (§6 for the `source` block). Where the
//! capture did not show a case, the column attributes follow what 2.7.4's DDL parser
//! gives (`MySqlAntlrDdlParser`'s type table, `ColumnDefinitionParserListener`,
//! `DefaultValueParserListener`, `ColumnImpl`'s charset rule): TINYINT is JDBC SMALLINT,
//! NUMERIC is JDBC NUMERIC, a SET's length is its members and commas, DECIMAL without
//! a precision is (10, 0), `generated` is only set by AUTO_INCREMENT (and SERIAL), and a
//! DROP change carries neither `table` nor (in the history) `comment`.
//!
//! Nothing here panics on any model or JSON value: the pretty printer is iterative, and
//! a value that does not fit the schema it was given is left null (which
//! [`Struct::validate`] then reports).

use serde_json::{Map as JsonMap, Value as Json};

use super::ddl::{Column, Table, TableId};
use crate::converters::jackson::{self, JsonNode};
use crate::data::{Schema, SchemaRef, Struct, Type, Value};

/// `io.debezium.connector.mysql.SchemaChangeKey`.
pub const KEY_SCHEMA_NAME: &str = "io.debezium.connector.mysql.SchemaChangeKey";
/// `io.debezium.connector.mysql.SchemaChangeValue`.
pub const VALUE_SCHEMA_NAME: &str = "io.debezium.connector.mysql.SchemaChangeValue";
const CHANGE_SCHEMA_NAME: &str = "io.debezium.connector.schema.Change";
const TABLE_SCHEMA_NAME: &str = "io.debezium.connector.schema.Table";
const COLUMN_SCHEMA_NAME: &str = "io.debezium.connector.schema.Column";

/// What Debezium's parser gives a `DEFAULT CURRENT_TIMESTAMP` / `NOW()` column.
const CURRENT_TIMESTAMP_DEFAULT: &str = "1970-01-01 00:00:00";

// java.sql.Types.
const CHAR: i32 = 1;
const NUMERIC: i32 = 2;
const DECIMAL: i32 = 3;
const INTEGER: i32 = 4;
const SMALLINT: i32 = 5;
const FLOAT: i32 = 6;
const REAL: i32 = 7;
const DOUBLE: i32 = 8;
const VARCHAR: i32 = 12;
const BOOLEAN: i32 = 16;
const DATE: i32 = 91;
const TIME: i32 = 92;
const TIMESTAMP: i32 = 93;
const OTHER: i32 = 1111;
const BLOB: i32 = 2004;
const TIMESTAMP_WITH_TIMEZONE: i32 = 2014;
const BIT: i32 = -7;
const BIGINT: i32 = -5;
const BINARY: i32 = -2;
const VARBINARY: i32 = -3;
const NVARCHAR: i32 = -9;
const NCHAR: i32 = -15;

/// A `tableChanges` entry's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    Create,
    Alter,
    Drop,
}

impl ChangeType {
    /// The name Debezium writes (`CREATE`, `ALTER`, `DROP`).
    pub fn name(self) -> &'static str {
        match self {
            ChangeType::Create => "CREATE",
            ChangeType::Alter => "ALTER",
            ChangeType::Drop => "DROP",
        }
    }
}

/// One entry of `tableChanges`.
#[derive(Debug, Clone)]
pub struct TableChange {
    pub kind: ChangeType,
    pub id: TableId,
    /// None for DROP (and ignored for DROP: Debezium 2.7.4 describes no table there).
    pub table: Option<Table>,
}

impl TableChange {
    /// The table this change describes: none for a DROP.
    fn described(&self) -> Option<&Table> {
        match self.kind {
            ChangeType::Drop => None,
            ChangeType::Create | ChangeType::Alter => self.table.as_ref(),
        }
    }
}

/// `io.debezium.connector.mysql.SchemaChangeKey` (version 1, field `databaseName`).
pub fn key_schema() -> SchemaRef {
    Schema::new(Type::Struct)
        .named(KEY_SCHEMA_NAME)
        .with_version(1)
        .field("databaseName", Schema::new(Type::String))
        .into()
}

/// The key struct of a schema change record (`""` for server-level statements).
pub fn key(schema: &SchemaRef, database: &str) -> Struct {
    let mut key = Struct::new(schema.clone());
    set(
        &mut key,
        "databaseName",
        Value::String(database.to_string()),
    );
    key
}

fn column_schema() -> SchemaRef {
    let string = || Schema::new(Type::String);
    let int = || Schema::new(Type::Int32);
    let boolean = || Schema::new(Type::Boolean).optional();
    Schema::new(Type::Struct)
        .named(COLUMN_SCHEMA_NAME)
        .with_version(1)
        .field("name", string())
        .field("jdbcType", int())
        .field("nativeType", int().optional())
        .field("typeName", string())
        .field("typeExpression", string().optional())
        .field("charsetName", string().optional())
        .field("length", int().optional())
        .field("scale", int().optional())
        .field("position", int())
        .field("optional", boolean())
        .field("autoIncremented", boolean())
        .field("generated", boolean())
        .field("comment", string().optional())
        .field("defaultValueExpression", string().optional())
        .field("enumValues", Schema::array(string()).optional())
        .into()
}

fn table_schema() -> SchemaRef {
    Schema::new(Type::Struct)
        .optional()
        .named(TABLE_SCHEMA_NAME)
        .with_version(1)
        .field("defaultCharsetName", Schema::new(Type::String).optional())
        .field(
            "primaryKeyColumnNames",
            Schema::array(Schema::new(Type::String)).optional(),
        )
        .field("columns", Schema::array(column_schema()))
        .field("comment", Schema::new(Type::String).optional())
        .into()
}

fn change_schema() -> SchemaRef {
    Schema::new(Type::Struct)
        .named(CHANGE_SCHEMA_NAME)
        .with_version(1)
        .field("type", Schema::new(Type::String))
        .field("id", Schema::new(Type::String))
        .field("table", table_schema())
        .into()
}

/// `io.debezium.connector.mysql.SchemaChangeValue` (version 1): `source` (the given
/// schema), `ts_ms`, `databaseName`, `schemaName`, `ddl`, `tableChanges`.
pub fn value_schema(source: &SchemaRef) -> SchemaRef {
    Schema::new(Type::Struct)
        .named(VALUE_SCHEMA_NAME)
        .with_version(1)
        .field("source", source.clone())
        .field("ts_ms", Schema::new(Type::Int64))
        .field("databaseName", Schema::new(Type::String).optional())
        .field("schemaName", Schema::new(Type::String).optional())
        .field("ddl", Schema::new(Type::String).optional())
        .field("tableChanges", Schema::array(change_schema()))
        .into()
}

/// The value struct of a schema change record: `source` (a struct of the schema's
/// `source` field), `ts_ms` (processing time), `databaseName`, `schemaName` null,
/// `ddl`, `tableChanges`.
pub fn value(
    schema: &SchemaRef,
    source: Struct,
    ts_ms: i64,
    database: &str,
    ddl: &str,
    changes: &[TableChange],
) -> Struct {
    let mut value = Struct::new(schema.clone());
    set(&mut value, "source", Value::Struct(source));
    set(&mut value, "ts_ms", Value::Int64(ts_ms));
    set(
        &mut value,
        "databaseName",
        Value::String(database.to_string()),
    );
    set(&mut value, "ddl", Value::String(ddl.to_string()));
    let change_schema = element_schema(schema, "tableChanges");
    let changes = match &change_schema {
        Some(change_schema) => changes
            .iter()
            .map(|c| Value::Struct(change_struct(change_schema, c)))
            .collect(),
        None => Vec::new(),
    };
    set(&mut value, "tableChanges", Value::Array(changes));
    value
}

/// Puts a value the schema was built for; a value that does not fit (a caller's
/// `source` of another schema) stays null, and `Struct::validate` reports it.
fn set(target: &mut Struct, name: &str, value: Value) {
    let _ = target.put(name, value);
}

/// The schema of a struct field's schema (`table` of a change).
fn field_schema(schema: &SchemaRef, name: &str) -> Option<SchemaRef> {
    schema.get_field(name).map(|f| f.schema.clone())
}

/// The element schema of an array field (`columns` of a table).
fn element_schema(schema: &SchemaRef, name: &str) -> Option<SchemaRef> {
    schema
        .get_field(name)
        .and_then(|f| f.schema.value_schema.clone())
}

fn change_struct(schema: &SchemaRef, change: &TableChange) -> Struct {
    let mut s = Struct::new(schema.clone());
    set(&mut s, "type", Value::String(change.kind.name().into()));
    set(&mut s, "id", Value::String(quoted_id(&change.id)));
    if let (Some(table), Some(table_schema)) = (change.described(), field_schema(schema, "table")) {
        set(
            &mut s,
            "table",
            Value::Struct(table_struct(&table_schema, table)),
        );
    }
    s
}

fn table_struct(schema: &SchemaRef, table: &Table) -> Struct {
    let mut s = Struct::new(schema.clone());
    set(
        &mut s,
        "defaultCharsetName",
        optional_string(&table.default_charset),
    );
    set(
        &mut s,
        "primaryKeyColumnNames",
        Value::Array(
            table
                .primary_key
                .iter()
                .map(|k| Value::String(k.clone()))
                .collect(),
        ),
    );
    let columns = match element_schema(schema, "columns") {
        Some(column_schema) => table
            .columns
            .iter()
            .map(|c| Value::Struct(column_struct(&column_schema, &Attributes::of(c, table))))
            .collect(),
        None => Vec::new(),
    };
    set(&mut s, "columns", Value::Array(columns));
    s
}

fn column_struct(schema: &SchemaRef, a: &Attributes) -> Struct {
    let mut s = Struct::new(schema.clone());
    let int = |v: Option<i32>| v.map_or(Value::Null, Value::Int32);
    set(&mut s, "name", Value::String(a.name.clone()));
    set(&mut s, "jdbcType", Value::Int32(a.jdbc_type));
    set(&mut s, "typeName", Value::String(a.type_name.clone()));
    set(&mut s, "typeExpression", Value::String(a.type_name.clone()));
    set(&mut s, "charsetName", optional_string(&a.charset));
    set(&mut s, "length", int(a.length));
    set(&mut s, "scale", int(a.scale));
    set(&mut s, "position", Value::Int32(a.position));
    set(&mut s, "optional", Value::Boolean(a.optional));
    set(
        &mut s,
        "autoIncremented",
        Value::Boolean(a.auto_incremented),
    );
    set(&mut s, "generated", Value::Boolean(a.generated));
    set(&mut s, "comment", optional_string(&a.comment));
    set(
        &mut s,
        "defaultValueExpression",
        optional_string(&a.default),
    );
    if !a.enum_values.is_empty() {
        set(
            &mut s,
            "enumValues",
            Value::Array(
                a.enum_values
                    .iter()
                    .map(|v| Value::String(v.clone()))
                    .collect(),
            ),
        );
    }
    s
}

fn optional_string(text: &Option<String>) -> Value {
    text.as_ref()
        .map_or(Value::Null, |t| Value::String(t.clone()))
}

/// The schema history topic's record value for one DDL statement: Jackson's pretty
/// print of `{"source": {"server": server}, "position": position, "ts_ms",
/// "databaseName", "ddl", "tableChanges": [...]}` (no `schemaName`), the changes as
/// `JsonTableChangeSerializer` writes them.
pub fn document(
    server: &str,
    position: &JsonMap<String, Json>,
    ts_ms: i64,
    database: &str,
    ddl: &str,
    changes: &[TableChange],
) -> String {
    let mut source = JsonMap::new();
    source.insert("server".into(), Json::String(server.into()));
    let mut doc = JsonMap::new();
    doc.insert("source".into(), Json::Object(source));
    doc.insert("position".into(), Json::Object(position.clone()));
    doc.insert("ts_ms".into(), Json::from(ts_ms));
    doc.insert("databaseName".into(), Json::String(database.into()));
    doc.insert("ddl".into(), Json::String(ddl.into()));
    doc.insert(
        "tableChanges".into(),
        Json::Array(changes.iter().map(change_document).collect()),
    );
    jackson_pretty(&Json::Object(doc))
}

fn change_document(change: &TableChange) -> Json {
    let mut doc = JsonMap::new();
    doc.insert("type".into(), Json::String(change.kind.name().into()));
    doc.insert("id".into(), Json::String(quoted_id(&change.id)));
    if let Some(table) = change.described() {
        doc.insert("table".into(), table_document(table));
        // `Table.comment()`: the model keeps no table comment.
        doc.insert("comment".into(), Json::Null);
    }
    Json::Object(doc)
}

fn table_document(table: &Table) -> Json {
    let mut doc = JsonMap::new();
    doc.insert(
        "defaultCharsetName".into(),
        optional_json(&table.default_charset),
    );
    doc.insert(
        "primaryKeyColumnNames".into(),
        Json::Array(
            table
                .primary_key
                .iter()
                .map(|k| Json::String(k.clone()))
                .collect(),
        ),
    );
    doc.insert(
        "columns".into(),
        Json::Array(
            table
                .columns
                .iter()
                .map(|c| column_document(&Attributes::of(c, table)))
                .collect(),
        ),
    );
    doc.insert("attributes".into(), Json::Array(Vec::new()));
    Json::Object(doc)
}

fn column_document(a: &Attributes) -> Json {
    let mut doc = JsonMap::new();
    doc.insert("name".into(), Json::String(a.name.clone()));
    doc.insert("jdbcType".into(), Json::from(a.jdbc_type));
    doc.insert("typeName".into(), Json::String(a.type_name.clone()));
    doc.insert("typeExpression".into(), Json::String(a.type_name.clone()));
    doc.insert("charsetName".into(), optional_json(&a.charset));
    if let Some(length) = a.length {
        doc.insert("length".into(), Json::from(length));
    }
    if let Some(scale) = a.scale {
        doc.insert("scale".into(), Json::from(scale));
    }
    doc.insert("position".into(), Json::from(a.position));
    doc.insert("optional".into(), Json::Bool(a.optional));
    doc.insert("autoIncremented".into(), Json::Bool(a.auto_incremented));
    doc.insert("generated".into(), Json::Bool(a.generated));
    doc.insert("comment".into(), optional_json(&a.comment));
    // A nullable column without a DEFAULT clause has DEFAULT NULL (SHOW CREATE TABLE
    // writes it out), which Debezium counts as a default.
    doc.insert(
        "hasDefaultValue".into(),
        Json::Bool(a.default.is_some() || a.optional),
    );
    if let Some(default) = &a.default {
        doc.insert(
            "defaultValueExpression".into(),
            Json::String(default.clone()),
        );
    }
    doc.insert(
        "enumValues".into(),
        Json::Array(a.enum_values.iter().cloned().map(Json::String).collect()),
    );
    Json::Object(doc)
}

fn optional_json(text: &Option<String>) -> Json {
    text.as_ref()
        .map_or(Json::Null, |t| Json::String(t.clone()))
}

/// `TableId.toDoubleQuotedString()`: `"db"."table"`, each part in double quotes with
/// inner double quotes doubled (a part already starting or ending with one is kept as
/// is, an empty database left out).
fn quoted_id(id: &TableId) -> String {
    let quote = |part: &str| {
        if part.is_empty() {
            "\"\"".to_string()
        } else if !part.starts_with('"') && !part.ends_with('"') {
            format!("\"{}\"", part.replace('"', "\"\""))
        } else {
            part.to_string()
        }
    };
    if id.database.is_empty() {
        quote(&id.name)
    } else {
        format!("{}.{}", quote(&id.database), quote(&id.name))
    }
}

/// A column as Debezium 2.7.4's parser describes it (`io.debezium.relational.Column`).
struct Attributes {
    name: String,
    jdbc_type: i32,
    /// `typeName` and `typeExpression` (the same for MySQL).
    type_name: String,
    charset: Option<String>,
    length: Option<i32>,
    scale: Option<i32>,
    position: i32,
    optional: bool,
    auto_incremented: bool,
    generated: bool,
    comment: Option<String>,
    /// `defaultValueExpression`; `hasDefaultValue` is whether there is one.
    default: Option<String>,
    /// The members as written, in single quotes (`'NEW'`).
    enum_values: Vec<String>,
}

impl Attributes {
    fn of(column: &Column, table: &Table) -> Attributes {
        let upper = column.type_name.to_ascii_uppercase();
        let mut words = upper.split_whitespace();
        let first = words.next().unwrap_or("");
        let second = words.next().unwrap_or("");
        let jdbc_type = jdbc_type(first, second);
        let serial = first == "SERIAL";
        let type_name = if serial {
            "BIGINT UNSIGNED".to_string()
        } else {
            column.type_name.clone()
        };

        let collection = matches!(first, "ENUM" | "SET");
        let length = if first == "ENUM" {
            Some(1)
        } else if first == "SET" {
            // The members and the commas between them.
            let members = i32::try_from(column.members.len()).unwrap_or(i32::MAX);
            Some(members.saturating_mul(2).saturating_sub(1).max(0))
        } else {
            column.length.or(match jdbc_type {
                DECIMAL | NUMERIC => Some(10),
                BIT | NCHAR => Some(1),
                _ => None,
            })
        };
        let scale = column.scale.or(match jdbc_type {
            DECIMAL | NUMERIC => Some(0),
            _ => None,
        });

        let own_charset = column
            .charset
            .clone()
            .filter(|c| !c.eq_ignore_ascii_case("DEFAULT"));
        let charset = match jdbc_type {
            NCHAR | NVARCHAR => Some("utf8".to_string()),
            CHAR | VARCHAR => own_charset.or_else(|| table.default_charset.clone()),
            _ => own_charset,
        };

        let default = column.default.as_deref().map(|d| {
            if is_current_timestamp(d) {
                CURRENT_TIMESTAMP_DEFAULT.to_string()
            } else {
                d.to_string()
            }
        });
        let enum_values = if collection {
            column.members.iter().map(|m| quoted_member(m)).collect()
        } else {
            Vec::new()
        };

        Attributes {
            name: column.name.clone(),
            jdbc_type,
            type_name,
            charset,
            length,
            scale,
            position: i32::try_from(column.position).unwrap_or(i32::MAX),
            optional: column.optional && !serial,
            auto_incremented: column.auto_increment || serial,
            // Debezium's parser marks only AUTO_INCREMENT (and SERIAL) columns generated,
            // not `GENERATED ALWAYS AS` ones.
            generated: column.auto_increment || serial,
            comment: column.comment.clone(),
            default,
            enum_values,
        }
    }
}

/// The java.sql.Types code 2.7.4's `MySqlAntlrDdlParser` gives a type, by its (upper
/// case) first and second word.
fn jdbc_type(first: &str, second: &str) -> i32 {
    match (first, second) {
        ("CHAR" | "CHARACTER", "VARYING") => VARCHAR,
        ("CHAR" | "CHARACTER", _) => CHAR,
        ("NATIONAL", "VARCHAR") | ("NCHAR", "VARCHAR" | "VARYING") | ("NVARCHAR", _) => NVARCHAR,
        ("NATIONAL", _) | ("NCHAR", _) => NCHAR,
        ("LONG", "VARBINARY") => BLOB,
        ("VARCHAR" | "TINYTEXT" | "TEXT" | "MEDIUMTEXT" | "LONGTEXT" | "LONG", _) => VARCHAR,
        ("TINYINT" | "INT1" | "SMALLINT" | "INT2", _) => SMALLINT,
        ("MEDIUMINT" | "INT3" | "MIDDLEINT" | "INT" | "INTEGER" | "INT4" | "YEAR", _) => INTEGER,
        ("BIGINT" | "INT8" | "SERIAL", _) => BIGINT,
        ("REAL", _) => REAL,
        ("DOUBLE" | "FLOAT8", _) => DOUBLE,
        ("FLOAT" | "FLOAT4", _) => FLOAT,
        ("DECIMAL" | "DEC" | "FIXED", _) => DECIMAL,
        ("NUMERIC", _) => NUMERIC,
        ("BIT", _) => BIT,
        ("BOOL" | "BOOLEAN", _) => BOOLEAN,
        ("DATE", _) => DATE,
        ("TIME", _) => TIME,
        ("DATETIME", _) => TIMESTAMP,
        ("TIMESTAMP", _) => TIMESTAMP_WITH_TIMEZONE,
        ("BINARY", _) => BINARY,
        ("VARBINARY", _) => VARBINARY,
        ("BLOB" | "TINYBLOB" | "MEDIUMBLOB" | "LONGBLOB", _) => BLOB,
        ("ENUM" | "SET", _) => CHAR,
        // JSON, the spatial types, anything else.
        _ => OTHER,
    }
}

/// `CURRENT_TIMESTAMP`, `CURRENT_TIMESTAMP(n)`, `NOW()`, `NOW(n)`, any case: the
/// defaults Debezium's parser replaces with the epoch.
fn is_current_timestamp(default: &str) -> bool {
    let (name, rest) = match default.find('(') {
        Some(at) => default.split_at(at),
        None => (default, ""),
    };
    let arguments_ok = rest.is_empty()
        || rest
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .is_some_and(|digits| digits.chars().all(|c| c.is_ascii_digit()));
    (name.eq_ignore_ascii_case("CURRENT_TIMESTAMP") || name.eq_ignore_ascii_case("NOW"))
        && arguments_ok
}

/// An ENUM or SET member as the DDL text has it (`'NEW'`), quoted as `SHOW CREATE
/// TABLE` quotes it.
fn quoted_member(member: &str) -> String {
    format!("'{}'", member.replace('\\', "\\\\").replace('\'', "''"))
}

/// What is still open while printing.
enum Open<'a> {
    Object(serde_json::map::Iter<'a>, bool),
    Array(std::slice::Iter<'a, Json>, bool),
}

/// Jackson's `DefaultPrettyPrinter` output of a JSON value: objects with one member a
/// line, indented two spaces per enclosing object (arrays add no level), `"name" :
/// value`, `{ }` for an empty object; arrays inline, `[ a, b ]`, `[ ]` when empty, so
/// objects in arrays open and close on the array's line (`[ {` ... `}, {` ... `} ]`).
/// Strings with Jackson's escapes, numbers as Java prints them. No trailing newline.
pub fn jackson_pretty(value: &Json) -> String {
    let mut out = String::new();
    let mut open: Vec<Open<'_>> = Vec::new();
    // Objects open (Jackson's `_nesting`).
    let mut nesting = 0usize;
    let mut next = Some(value);
    loop {
        if let Some(value) = next.take() {
            match value {
                Json::Object(members) if members.is_empty() => out.push_str("{ }"),
                Json::Object(members) => {
                    out.push('{');
                    nesting += 1;
                    open.push(Open::Object(members.iter(), true));
                }
                Json::Array(items) if items.is_empty() => out.push_str("[ ]"),
                Json::Array(items) => {
                    out.push('[');
                    open.push(Open::Array(items.iter(), true));
                }
                scalar => write_scalar(scalar, &mut out),
            }
        }
        let Some(top) = open.last_mut() else {
            return out;
        };
        match top {
            Open::Object(members, first) => match members.next() {
                Some((name, value)) => {
                    if !*first {
                        out.push(',');
                    }
                    *first = false;
                    indent(&mut out, nesting);
                    out.push_str(&jackson::write_string(&JsonNode::Text(name.clone())));
                    out.push_str(" : ");
                    next = Some(value);
                }
                None => {
                    open.pop();
                    nesting = nesting.saturating_sub(1);
                    indent(&mut out, nesting);
                    out.push('}');
                }
            },
            Open::Array(items, first) => match items.next() {
                Some(item) => {
                    out.push_str(if *first { " " } else { ", " });
                    *first = false;
                    next = Some(item);
                }
                None => {
                    open.pop();
                    out.push_str(" ]");
                }
            },
        }
    }
}

fn indent(out: &mut String, nesting: usize) {
    out.push('\n');
    for _ in 0..nesting {
        out.push_str("  ");
    }
}

fn write_scalar(value: &Json, out: &mut String) {
    match value {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                out.push_str(&u.to_string());
            } else if let Some(f) = n.as_f64() {
                out.push_str(&jackson::java_double_string(f));
            } else {
                out.push_str(&n.to_string());
            }
        }
        Json::String(s) => out.push_str(&jackson::write_string(&JsonNode::Text(s.clone()))),
        // Containers are opened by the caller; nothing else reaches here.
        Json::Array(_) | Json::Object(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::connectors::mysql::ddl::Tables;
    use crate::converters::{Converter, JsonConverter, JsonConverterConfig};

    /// The guide's order service, as `SHOW CREATE TABLE` prints it (ddl.rs's tests).
    const ORDERS: &str = "CREATE TABLE `orders` (
      `id` int(11) NOT NULL AUTO_INCREMENT,
      `customer_id` int(11) NOT NULL,
      `status` enum('NEW','PAID','SHIPPED') NOT NULL DEFAULT 'NEW',
      `total` decimal(10,2) DEFAULT NULL,
      `created_at` datetime(3) DEFAULT NULL,
      `updated_at` timestamp(6) NULL DEFAULT current_timestamp(6) ON UPDATE current_timestamp(6),
      `note` text CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci DEFAULT NULL COMMENT 'free text',
      `data` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`data`)),
      PRIMARY KEY (`id`),
      KEY `by_customer` (`customer_id`)
    ) ENGINE=InnoDB AUTO_INCREMENT=4 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci";

    const ALTER: &str = "ALTER TABLE orders ADD COLUMN channel VARCHAR(16) DEFAULT 'web'";

    fn orders_id() -> TableId {
        TableId {
            database: "order_service".into(),
            name: "orders".into(),
        }
    }

    /// `orders` after the capture's ALTER, as its `tableChanges` entry.
    fn altered_orders() -> TableChange {
        let mut tables = Tables::default();
        tables
            .apply(Some("order_service"), ORDERS)
            .expect("the CREATE parses");
        tables
            .apply(Some("order_service"), ALTER)
            .expect("the ALTER parses");
        TableChange {
            kind: ChangeType::Alter,
            id: orders_id(),
            table: tables.get(&orders_id()).cloned(),
        }
    }

    /// The connector's own `io.debezium.connector.mysql.Source` (§6 lists it).
    fn source_schema() -> SchemaRef {
        crate::connectors::mysql::tables::source_schema(false)
    }

    /// The ALTER's source block (debezium-mariadb `order-service` offset 14).
    fn alter_source(schema: &SchemaRef) -> Struct {
        let mut s = Struct::new(schema.clone());
        for (name, value) in [
            ("version", Value::String("2.7.4.Final".into())),
            ("connector", Value::String("mysql".into())),
            ("name", Value::String("order-service".into())),
            ("ts_ms", Value::Int64(1_796_608_093_000)),
            ("snapshot", Value::String("false".into())),
            ("db", Value::String("order_service".into())),
            ("ts_us", Value::Int64(1_796_608_093_000_000)),
            ("ts_ns", Value::Int64(1_796_608_093_000_000_000)),
            ("table", Value::String("orders".into())),
            ("server_id", Value::Int64(1)),
            ("file", Value::String("binlog.000001".into())),
            ("pos", Value::Int64(13262)),
            ("row", Value::Int32(1)),
        ] {
            s.put(name, value).expect("a source field");
        }
        s
    }

    fn json_converter() -> JsonConverter {
        JsonConverter::new(JsonConverterConfig::default()).expect("the default config")
    }

    #[test]
    fn jackson_pretty_prints_as_default_pretty_printer() {
        assert_eq!(jackson_pretty(&json!({})), "{ }");
        assert_eq!(jackson_pretty(&json!([])), "[ ]");
        assert_eq!(
            jackson_pretty(&json!("a\"\\\n\u{1}é")),
            "\"a\\\"\\\\\\n\\u0001é\""
        );
        assert_eq!(jackson_pretty(&json!(1.5)), "1.5");
        assert_eq!(jackson_pretty(&json!(1e300)), "1.0E300");
        assert_eq!(
            jackson_pretty(&json!({"a": 1, "b": [], "c": {}, "d": [1, "x", null, true]})),
            "{\n  \"a\" : 1,\n  \"b\" : [ ],\n  \"c\" : { },\n  \"d\" : [ 1, \"x\", null, true ]\n}"
        );
        assert_eq!(
            jackson_pretty(&json!({"list": [{"k": {"n": [[1], {}]}}, {"e": []}], "z": -7})),
            r#"{
  "list" : [ {
    "k" : {
      "n" : [ [ 1 ], { } ]
    }
  }, {
    "e" : [ ]
  } ],
  "z" : -7
}"#
        );
        assert_eq!(
            jackson_pretty(&json!([{"a": {"b": {}}}])),
            "[ {\n  \"a\" : {\n    \"b\" : { }\n  }\n} ]"
        );
    }

    #[test]
    fn history_document_of_the_alter_matches_the_capture() {
        let mut position = JsonMap::new();
        position.insert("ts_sec".into(), json!(1_796_608_093));
        position.insert("file".into(), json!("binlog.000001"));
        position.insert("pos".into(), json!(13414));
        position.insert("server_id".into(), json!(1));
        let doc = document(
            "order-service",
            &position,
            1_796_608_093_497,
            "order_service",
            ALTER,
            &[altered_orders()],
        );
        let start = r#"{
  "source" : {
    "server" : "order-service"
  },
  "position" : {
    "ts_sec" : 1796608093,
    "file" : "binlog.000001",
    "pos" : 13414,
    "server_id" : 1
  },
  "ts_ms" : 1796608093497,
  "databaseName" : "order_service",
  "ddl" : "ALTER TABLE orders ADD COLUMN channel VARCHAR(16) DEFAULT 'web'",
  "tableChanges" : [ {
    "type" : "ALTER",
    "id" : "\"order_service\".\"orders\"",
    "table" : {
      "defaultCharsetName" : "utf8mb4",
      "primaryKeyColumnNames" : [ "id" ],
      "columns" : [ {
        "name" : "id",
        "jdbcType" : 4,
        "typeName" : "INT",
        "typeExpression" : "INT",
        "charsetName" : null,
        "length" : 11,
        "position" : 1,
        "optional" : false,
        "autoIncremented" : true,
        "generated" : true,
        "comment" : null,
        "hasDefaultValue" : false,
        "enumValues" : [ ]
      }, {
        "name" : "customer_id","#;
        assert!(doc.starts_with(start), "{doc}");
        let status = r#"
      }, {
        "name" : "status",
        "jdbcType" : 1,
        "typeName" : "ENUM",
        "typeExpression" : "ENUM",
        "charsetName" : "utf8mb4",
        "length" : 1,
        "position" : 3,
        "optional" : false,
        "autoIncremented" : false,
        "generated" : false,
        "comment" : null,
        "hasDefaultValue" : true,
        "defaultValueExpression" : "NEW",
        "enumValues" : [ "'NEW'", "'PAID'", "'SHIPPED'" ]
      }, {
"#;
        assert!(doc.contains(status), "{doc}");
        let total = r#"
        "name" : "total",
        "jdbcType" : 3,
        "typeName" : "DECIMAL",
        "typeExpression" : "DECIMAL",
        "charsetName" : null,
        "length" : 10,
        "scale" : 2,
        "position" : 4,
        "optional" : true,
"#;
        assert!(doc.contains(total), "{doc}");
        let updated_at = r#"
        "name" : "updated_at",
        "jdbcType" : 2014,
        "typeName" : "TIMESTAMP",
        "typeExpression" : "TIMESTAMP",
        "charsetName" : null,
        "length" : 6,
        "position" : 6,
        "optional" : true,
        "autoIncremented" : false,
        "generated" : false,
        "comment" : null,
        "hasDefaultValue" : true,
        "defaultValueExpression" : "1970-01-01 00:00:00",
        "enumValues" : [ ]
"#;
        assert!(doc.contains(updated_at), "{doc}");
        assert!(doc.contains("\"comment\" : \"free text\",\n"), "{doc}");
        let end = r#"
      }, {
        "name" : "channel",
        "jdbcType" : 12,
        "typeName" : "VARCHAR",
        "typeExpression" : "VARCHAR",
        "charsetName" : "utf8mb4",
        "length" : 16,
        "position" : 9,
        "optional" : true,
        "autoIncremented" : false,
        "generated" : false,
        "comment" : null,
        "hasDefaultValue" : true,
        "defaultValueExpression" : "web",
        "enumValues" : [ ]
      } ],
      "attributes" : [ ]
    },
    "comment" : null
  } ]
}"#;
        assert!(doc.ends_with(end), "{doc}");
    }

    #[test]
    fn schema_change_value_validates_and_matches_the_capture() {
        let converter = json_converter();
        let key_schema = key_schema();
        assert_eq!(
            converter.schema_to_json(&key_schema).expect("a schema"),
            r#"{"type":"struct","fields":[{"type":"string","optional":false,"field":"databaseName"}],"optional":false,"name":"io.debezium.connector.mysql.SchemaChangeKey","version":1}"#
        );
        let key = key(&key_schema, "order_service");
        key.validate().expect("a valid key");

        let source = source_schema();
        let schema = value_schema(&source);
        let source_json = r#"{"type":"struct","fields":[{"type":"string","optional":false,"field":"version"},{"type":"string","optional":false,"field":"connector"},{"type":"string","optional":false,"field":"name"},{"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"true,last,false,incremental"},"default":"false","field":"snapshot"},{"type":"string","optional":false,"field":"db"},{"type":"string","optional":true,"field":"sequence"},{"type":"int64","optional":true,"field":"ts_us"},{"type":"int64","optional":true,"field":"ts_ns"},{"type":"string","optional":true,"field":"table"},{"type":"int64","optional":false,"field":"server_id"},{"type":"string","optional":true,"field":"gtid"},{"type":"string","optional":false,"field":"file"},{"type":"int64","optional":false,"field":"pos"},{"type":"int32","optional":false,"field":"row"},{"type":"int64","optional":true,"field":"thread"},{"type":"string","optional":true,"field":"query"}],"optional":false,"name":"io.debezium.connector.mysql.Source","field":"source"}"#;
        // §8's value schema, verbatim, with §6's Source fields in place of its "…".
        let value_schema_json = format!(
            "{}{}{}",
            r#"{"type":"struct","fields":["#,
            source_json,
            r#",{"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":true,"field":"databaseName"},{"type":"string","optional":true,"field":"schemaName"},{"type":"string","optional":true,"field":"ddl"},{"type":"array","items":{"type":"struct","fields":[{"type":"string","optional":false,"field":"type"},{"type":"string","optional":false,"field":"id"},{"type":"struct","fields":[{"type":"string","optional":true,"field":"defaultCharsetName"},{"type":"array","items":{"type":"string","optional":false},"optional":true,"field":"primaryKeyColumnNames"},{"type":"array","items":{"type":"struct","fields":[{"type":"string","optional":false,"field":"name"},{"type":"int32","optional":false,"field":"jdbcType"},{"type":"int32","optional":true,"field":"nativeType"},{"type":"string","optional":false,"field":"typeName"},{"type":"string","optional":true,"field":"typeExpression"},{"type":"string","optional":true,"field":"charsetName"},{"type":"int32","optional":true,"field":"length"},{"type":"int32","optional":true,"field":"scale"},{"type":"int32","optional":false,"field":"position"},{"type":"boolean","optional":true,"field":"optional"},{"type":"boolean","optional":true,"field":"autoIncremented"},{"type":"boolean","optional":true,"field":"generated"},{"type":"string","optional":true,"field":"comment"},{"type":"string","optional":true,"field":"defaultValueExpression"},{"type":"array","items":{"type":"string","optional":false},"optional":true,"field":"enumValues"}],"optional":false,"name":"io.debezium.connector.schema.Column","version":1},"optional":false,"field":"columns"},{"type":"string","optional":true,"field":"comment"}],"optional":true,"name":"io.debezium.connector.schema.Table","version":1,"field":"table"}],"optional":false,"name":"io.debezium.connector.schema.Change","version":1},"optional":false,"field":"tableChanges"}],"optional":false,"name":"io.debezium.connector.mysql.SchemaChangeValue","version":1}"#
        );
        assert_eq!(
            converter.schema_to_json(&schema).expect("a schema"),
            value_schema_json
        );
        let fields: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            fields,
            [
                "source",
                "ts_ms",
                "databaseName",
                "schemaName",
                "ddl",
                "tableChanges"
            ]
        );

        let value = value(
            &schema,
            alter_source(&source),
            1_796_608_093_497,
            "order_service",
            ALTER,
            &[altered_orders()],
        );
        value.validate().expect("a valid value");
        assert_eq!(value.get("schemaName"), Some(&Value::Null));
        let bytes = converter
            .from_connect("order-service", Some(&schema), &Value::Struct(value))
            .expect("converts")
            .expect("not a tombstone");
        let text = String::from_utf8(bytes).expect("UTF-8");
        // §8's payload, up to its first "…".
        let start = r#""payload":{"source":{"version":"2.7.4.Final","connector":"mysql","name":"order-service","ts_ms":1796608093000,"snapshot":"false","db":"order_service","sequence":null,"ts_us":1796608093000000,"ts_ns":1796608093000000000,"table":"orders","server_id":1,"gtid":null,"file":"binlog.000001","pos":13262,"row":1,"thread":null,"query":null},"ts_ms":1796608093497,"databaseName":"order_service","schemaName":null,"ddl":"ALTER TABLE orders ADD COLUMN channel VARCHAR(16) DEFAULT 'web'","tableChanges":[{"type":"ALTER","id":"\"order_service\".\"orders\"","table":{"defaultCharsetName":"utf8mb4","primaryKeyColumnNames":["id"],"columns":[{"name":"id","jdbcType":4,"nativeType":null,"typeName":"INT","typeExpression":"INT","charsetName":null,"length":11,"scale":null,"position":1,"optional":false,"autoIncremented":true,"generated":true,"comment":null,"defaultValueExpression":null,"enumValues":null},{"name":"customer_id","#;
        assert!(text.contains(start), "{text}");
        let status = r#"{"name":"status","jdbcType":1,"nativeType":null,"typeName":"ENUM","typeExpression":"ENUM","charsetName":"utf8mb4","length":1,"scale":null,"position":3,"optional":false,"autoIncremented":false,"generated":false,"comment":null,"defaultValueExpression":"NEW","enumValues":["'NEW'","'PAID'","'SHIPPED'"]},"#;
        assert!(text.contains(status), "{text}");
        let updated_at = r#"{"name":"updated_at","jdbcType":2014,"#;
        assert!(text.contains(updated_at), "{text}");
        assert!(
            text.contains(
                r#""length":6,"scale":null,"position":6,"optional":true,"autoIncremented":false,"generated":false,"comment":null,"defaultValueExpression":"1970-01-01 00:00:00","enumValues":null}"#
            ),
            "{text}"
        );
        let end = r#"{"name":"channel","jdbcType":12,"nativeType":null,"typeName":"VARCHAR","typeExpression":"VARCHAR","charsetName":"utf8mb4","length":16,"scale":null,"position":9,"optional":true,"autoIncremented":false,"generated":false,"comment":null,"defaultValueExpression":"web","enumValues":null}],"comment":null}}]}}"#;
        assert!(text.ends_with(end), "{text}");
    }

    #[test]
    fn drop_changes_carry_no_table() {
        let id = TableId {
            database: "order_service".into(),
            name: "not_captured".into(),
        };
        // A table given with a DROP is not described, as in Debezium 2.7.4.
        let stale = altered_orders().table;
        let drop = TableChange {
            kind: ChangeType::Drop,
            id: id.clone(),
            table: stale,
        };
        let source = source_schema();
        let schema = value_schema(&source);
        let ddl = "DROP TABLE `order_service`.`not_captured`";
        let value = value(
            &schema,
            alter_source(&source),
            1,
            "order_service",
            ddl,
            std::slice::from_ref(&drop),
        );
        value.validate().expect("a valid value");
        let Some(Value::Array(changes)) = value.get("tableChanges") else {
            panic!("tableChanges is an array: {value:?}");
        };
        assert_eq!(changes.len(), 1);
        let change = changes[0].as_struct().expect("a change struct");
        assert_eq!(change.get("type"), Some(&Value::String("DROP".into())));
        assert_eq!(
            change.get("id"),
            Some(&Value::String("\"order_service\".\"not_captured\"".into()))
        );
        assert_eq!(change.get("table"), Some(&Value::Null));

        let doc = document(
            "order-service",
            &JsonMap::new(),
            1,
            "order_service",
            ddl,
            &[drop],
        );
        assert!(
            doc.ends_with(
                "  \"tableChanges\" : [ {\n    \"type\" : \"DROP\",\n    \"id\" : \"\\\"order_service\\\".\\\"not_captured\\\"\"\n  } ]\n}"
            ),
            "{doc}"
        );
        assert!(doc.contains("  \"position\" : { },\n"), "{doc}");

        let none = document("order-service", &JsonMap::new(), 1, "", "SET x=1", &[]);
        assert!(none.ends_with("  \"tableChanges\" : [ ]\n}"), "{none}");
    }

    #[test]
    fn column_attributes_follow_debezium_2_7_4() {
        let mut tables = Tables::default();
        tables
            .apply(
                Some("d"),
                "CREATE TABLE t (a tinyint(4), b set('x','y','z') DEFAULT 'x', \
                 c decimal(5), d numeric, e bit, f int(10) unsigned NOT NULL, \
                 g varchar(3) CHARACTER SET latin1, h nchar, i json, j blob, \
                 k timestamp NULL DEFAULT CURRENT_TIMESTAMP, l datetime DEFAULT now(), \
                 m enum('it''s','a\\\\b'), n double, o year(4), p int AS (f + 1) VIRTUAL, \
                 q char(2)) DEFAULT CHARSET=utf8mb4",
            )
            .expect("the CREATE parses");
        let table = tables
            .get(&TableId {
                database: "d".into(),
                name: "t".into(),
            })
            .expect("created");
        let a = |name: &str| Attributes::of(table.column(name).expect("a column"), table);
        assert_eq!((a("a").jdbc_type, a("a").length), (SMALLINT, Some(4)));
        let b = a("b");
        assert_eq!((b.jdbc_type, b.length), (CHAR, Some(5)));
        assert_eq!(b.charset.as_deref(), Some("utf8mb4"));
        assert_eq!(b.enum_values, ["'x'", "'y'", "'z'"]);
        assert_eq!((a("c").length, a("c").scale), (Some(5), Some(0)));
        assert_eq!(
            (a("d").jdbc_type, a("d").length, a("d").scale),
            (NUMERIC, Some(10), Some(0))
        );
        assert_eq!((a("e").jdbc_type, a("e").length), (BIT, Some(1)));
        let f = a("f");
        assert_eq!(
            (f.type_name.as_str(), f.jdbc_type),
            ("INT UNSIGNED", INTEGER)
        );
        assert_eq!(a("g").charset.as_deref(), Some("latin1"));
        let h = a("h");
        assert_eq!((h.jdbc_type, h.length), (NCHAR, Some(1)));
        assert_eq!(h.charset.as_deref(), Some("utf8"));
        assert_eq!((a("i").jdbc_type, a("i").charset), (OTHER, None));
        assert_eq!(a("j").jdbc_type, BLOB);
        assert_eq!(
            (a("k").jdbc_type, a("k").default.as_deref()),
            (TIMESTAMP_WITH_TIMEZONE, Some(CURRENT_TIMESTAMP_DEFAULT))
        );
        assert_eq!(
            (a("l").jdbc_type, a("l").default.as_deref()),
            (TIMESTAMP, Some(CURRENT_TIMESTAMP_DEFAULT))
        );
        assert_eq!(a("m").enum_values, ["'it''s'", "'a\\\\b'"]);
        assert_eq!(a("n").jdbc_type, DOUBLE);
        assert_eq!((a("o").jdbc_type, a("o").length), (INTEGER, Some(4)));
        assert!(!a("p").generated, "only AUTO_INCREMENT is generated");
        assert_eq!(
            (a("q").jdbc_type, a("q").charset.as_deref()),
            (CHAR, Some("utf8mb4"))
        );
        assert_eq!(
            quoted_id(&TableId {
                database: "d".into(),
                name: "we\"ird".into(),
            }),
            "\"d\".\"we\"\"ird\""
        );
    }
}
