//! The Debezium MySQL/MariaDB connector's configuration keys, defaults and checks
//! (`MySqlConnectorConfig` / `MariaDbConnectorConfig` and their common
//! `BinlogConnectorConfig`), as far as Sluice's connector implements them.

use std::time::Duration;

use crate::connectors::ConfigKeyDef;
use crate::connectors::debezium::{Filter, boolean, key, number, one_of, skipped_operations};
use crate::connectors::postgres::values::{BinaryMode, DecimalMode};
use crate::{ConfigError, Props};

/// `snapshot.mode` (Debezium 3.x's names; the 2.x names `schema_only`, `never` and
/// `schema_only_recovery` are accepted for the same modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotMode {
    /// Snapshot the schema and data when no offset exists, then stream.
    Initial,
    /// Snapshot at every start, then stream.
    Always,
    /// Snapshot when no offset exists, then stop streaming.
    InitialOnly,
    /// Snapshot only the schema (no `op: r` events), then stream from the current
    /// binlog position.
    NoData,
    /// Snapshot when no offset exists or the binlog no longer holds the offset.
    WhenNeeded,
    /// Rebuild a lost or corrupt schema history from the current table definitions,
    /// then stream from the stored offset.
    Recovery,
}

/// `time.precision.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeMode {
    /// TIME as microseconds, DATETIME by its precision (`Timestamp`/`MicroTimestamp`).
    AdaptiveTimeMicroseconds,
    /// Connect's logical types (millisecond precision).
    Connect,
}

/// `bigint.unsigned.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnsignedMode {
    /// `int64`, wrapping above `i64::MAX` (Debezium's default).
    Long,
    /// `Decimal` with scale 0.
    Precise,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modes {
    pub decimal: DecimalMode,
    pub time: TimeMode,
    pub bigint_unsigned: UnsignedMode,
    pub binary: BinaryMode,
}

impl Default for Modes {
    fn default() -> Modes {
        Modes {
            decimal: DecimalMode::Precise,
            time: TimeMode::AdaptiveTimeMicroseconds,
            bigint_unsigned: UnsignedMode::Long,
            binary: BinaryMode::Bytes,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    /// `database.server.id`: the replica id the binlog connection registers with.
    pub server_id: u32,
    pub prefix: String,
    pub databases: Filter,
    pub tables: Filter,
    pub snapshot: SnapshotMode,
    pub include_schema_changes: bool,
    pub history_topic: String,
    pub history_bootstrap: Vec<String>,
    pub tombstones_on_delete: bool,
    pub transaction_metadata: bool,
    pub skipped: Vec<char>,
    pub modes: Modes,
    pub max_batch_size: usize,
    pub poll_interval: Duration,
    pub connect_timeout: Duration,
    /// `connector.class` named the MariaDB connector (`source.connector` = `mariadb`).
    pub mariadb_class: bool,
}

pub const HOSTNAME: &str = "database.hostname";
pub const PORT: &str = "database.port";
pub const USER: &str = "database.user";
pub const PASSWORD: &str = "database.password";
pub const SERVER_ID: &str = "database.server.id";
pub const TOPIC_PREFIX: &str = "topic.prefix";
pub const SNAPSHOT_MODE: &str = "snapshot.mode";
pub const HISTORY_TOPIC: &str = "schema.history.internal.kafka.topic";
pub const HISTORY_BOOTSTRAP: &str = "schema.history.internal.kafka.bootstrap.servers";

pub fn keys() -> Vec<ConfigKeyDef> {
    let required = |k: ConfigKeyDef| ConfigKeyDef {
        required: true,
        ..k
    };
    vec![
        required(key(
            HOSTNAME,
            "STRING",
            None,
            "HIGH",
            "Resolvable hostname or IP address of the database server.",
        )),
        key(
            PORT,
            "INT",
            Some("3306"),
            "HIGH",
            "Port of the database server.",
        ),
        required(key(
            USER,
            "STRING",
            None,
            "HIGH",
            "Name of the database user to be used when connecting to the database.",
        )),
        key(
            PASSWORD,
            "PASSWORD",
            None,
            "HIGH",
            "Password of the database user to be used when connecting to the database.",
        ),
        required(key(
            SERVER_ID,
            "LONG",
            None,
            "HIGH",
            "A numeric ID of this database client, which must be unique across all currently-running database processes in the cluster. This connector joins the database cluster as another server (with this unique ID) so it can read the binlog.",
        )),
        required(key(
            TOPIC_PREFIX,
            "STRING",
            None,
            "HIGH",
            "Topic prefix that identifies and provides a namespace for the particular database server/cluster is capturing changes. The topic prefix should be unique across all other connectors, since it is used as a prefix for all Kafka topic names that receive events emitted by this connector. Only alphanumeric characters, hyphens, dots and underscores must be accepted.",
        )),
        key(
            "database.include.list",
            "LIST",
            None,
            "HIGH",
            "The databases for which changes are to be captured",
        ),
        key(
            "database.exclude.list",
            "LIST",
            None,
            "MEDIUM",
            "A comma-separated list of regular expressions that match database names to be excluded from monitoring",
        ),
        key(
            "table.include.list",
            "LIST",
            None,
            "HIGH",
            "The tables for which changes are to be captured",
        ),
        key(
            "table.exclude.list",
            "LIST",
            None,
            "MEDIUM",
            "A comma-separated list of regular expressions that match the fully-qualified names of tables to be excluded from monitoring",
        ),
        key(
            SNAPSHOT_MODE,
            "STRING",
            Some("initial"),
            "LOW",
            "The criteria for running a snapshot upon startup of the connector. Select one of the following snapshot options: 'when_needed', 'initial', 'always', 'initial_only', 'no_data', 'recovery'.",
        ),
        key(
            "include.schema.changes",
            "BOOLEAN",
            Some("true"),
            "MEDIUM",
            "Whether the connector should publish changes in the database schema to a Kafka topic with the same name as the database server ID.",
        ),
        required(key(
            HISTORY_TOPIC,
            "STRING",
            None,
            "HIGH",
            "The name of the topic for the database schema history",
        )),
        required(key(
            HISTORY_BOOTSTRAP,
            "STRING",
            None,
            "HIGH",
            "A list of host/port pairs that the connector will use for establishing the initial connection to the Kafka cluster for retrieving database schema history previously stored by the connector.",
        )),
        key(
            "tombstones.on.delete",
            "BOOLEAN",
            Some("true"),
            "MEDIUM",
            "Whether delete operations should be represented by a delete event and a subsequent tombstone event (true) or only by a delete event (false).",
        ),
        key(
            "provide.transaction.metadata",
            "BOOLEAN",
            Some("false"),
            "LOW",
            "Enables transaction metadata extraction together with event counting",
        ),
        key(
            "skipped.operations",
            "LIST",
            Some("t"),
            "LOW",
            "The comma-separated list of operations to skip during streaming, defined as: 'c' for inserts/create; 'u' for updates; 'd' for deletes, 't' for truncates, and 'none' to indicate nothing skipped.",
        ),
        key(
            "decimal.handling.mode",
            "STRING",
            Some("precise"),
            "MEDIUM",
            "Specify how DECIMAL and NUMERIC columns should be represented in change events, including: 'precise' (the default) uses java.math.BigDecimal to represent values, which are encoded in the change events using a binary representation and Kafka Connect's 'org.apache.kafka.connect.data.Decimal' type; 'string' uses string to represent values; 'double' represents values using Java's 'double', which may not offer the precision but will be far easier to use in consumers.",
        ),
        key(
            "time.precision.mode",
            "STRING",
            Some("adaptive_time_microseconds"),
            "MEDIUM",
            "Time, date and timestamps can be represented with different kinds of precisions, including: 'adaptive_time_microseconds': the precision of date and timestamp values is based the database column's precision; but time fields always use microseconds precision; 'connect': always represents time, date and timestamp values using Kafka Connect's built-in representations for Time, Date, and Timestamp, which uses millisecond precision regardless of the database columns' precision.",
        ),
        key(
            "bigint.unsigned.handling.mode",
            "STRING",
            Some("long"),
            "MEDIUM",
            "Specify how BIGINT UNSIGNED columns should be represented in change events, including: 'precise' uses java.math.BigDecimal to represent values, which are encoded in the change events using a binary representation and Kafka Connect's 'org.apache.kafka.connect.data.Decimal' type; 'long' (the default) represents values using Java's 'long', which may not offer the precision but will be far easier to use in consumers.",
        ),
        key(
            "binary.handling.mode",
            "STRING",
            Some("bytes"),
            "LOW",
            "Specify how binary (blob, binary, etc.) columns should be represented in change events, including: 'bytes' represents binary data as byte array (default); 'base64' represents binary data as base64-encoded string; 'base64-url-safe' represents binary data as base64-url-safe-encoded string; 'hex' represents binary data as hex-encoded (base16) string",
        ),
        key(
            "max.batch.size",
            "INT",
            Some("2048"),
            "MEDIUM",
            "Maximum size of each batch of source records. Defaults to 2048.",
        ),
        key(
            "poll.interval.ms",
            "LONG",
            Some("500"),
            "MEDIUM",
            "Time to wait for new change events to appear after receiving no events, given in milliseconds. Defaults to 500 ms.",
        ),
        key(
            "connect.timeout.ms",
            "LONG",
            Some("30000"),
            "MEDIUM",
            "Maximum time to wait after trying to connect to the database before timing out, given in milliseconds. Defaults to 30 seconds (30,000 ms).",
        ),
        key(
            "connector.adapter",
            "STRING",
            Some("mysql"),
            "LOW",
            "Debezium 2.x's switch between MySQL and MariaDB: 'mysql', 'mariadb'. Sluice's connector asks the server which it is, so both values are accepted and mean the same.",
        ),
    ]
}

impl Settings {
    pub fn parse(config: &Props) -> Result<Settings, ConfigError> {
        let mut errors = ConfigError::default();
        let mut required = |key: &str| match config.get(key).map(|v| v.trim()) {
            Some(v) if !v.is_empty() => v.to_string(),
            _ => {
                errors.push(ConfigError::missing(key));
                String::new()
            }
        };
        let host = required(HOSTNAME);
        let user = required(USER);
        let prefix = required(TOPIC_PREFIX);
        let history_topic = required(HISTORY_TOPIC);
        let history_bootstrap: Vec<String> = required(HISTORY_BOOTSTRAP)
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let server_id_text = required(SERVER_ID);
        let server_id = if server_id_text.is_empty() {
            0
        } else {
            match server_id_text.parse::<u32>() {
                Ok(id) if id > 0 => id,
                _ => {
                    errors.push(ConfigError::invalid(
                        SERVER_ID,
                        &server_id_text,
                        "The 'database.server.id' value is invalid: A positive, non-zero value is expected",
                    ));
                    0
                }
            }
        };
        if !prefix.is_empty()
            && !prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            errors.push(ConfigError::invalid(
                TOPIC_PREFIX,
                &prefix,
                "The 'topic.prefix' value is invalid: Only alphanumeric characters, hyphens, dots and underscores are accepted",
            ));
        }
        // TLS to the database is not there yet: a setting that demands it is refused
        // rather than connecting in the clear.
        if let Some(mode) = config.get("database.ssl.mode").map(|m| m.trim())
            && !matches!(
                mode.to_ascii_lowercase().as_str(),
                "disabled" | "disable" | "preferred" | "prefer"
            )
        {
            errors.push(ConfigError::invalid(
                "database.ssl.mode",
                mode,
                "TLS to the database is not supported by Sluice's MySQL connector yet; use 'disabled' or 'preferred'",
            ));
        }
        let snapshot = one_of(
            config,
            SNAPSHOT_MODE,
            "initial",
            &[
                ("initial", SnapshotMode::Initial),
                ("always", SnapshotMode::Always),
                ("initial_only", SnapshotMode::InitialOnly),
                ("no_data", SnapshotMode::NoData),
                ("schema_only", SnapshotMode::NoData),
                ("never", SnapshotMode::NoData),
                ("when_needed", SnapshotMode::WhenNeeded),
                ("recovery", SnapshotMode::Recovery),
                ("schema_only_recovery", SnapshotMode::Recovery),
            ],
            &mut errors,
        )
        .unwrap_or(SnapshotMode::Initial);
        one_of(
            config,
            "connector.adapter",
            "mysql",
            &[("mysql", ()), ("mariadb", ())],
            &mut errors,
        );
        let modes = Modes {
            decimal: one_of(
                config,
                "decimal.handling.mode",
                "precise",
                &[
                    ("precise", DecimalMode::Precise),
                    ("double", DecimalMode::Double),
                    ("string", DecimalMode::String),
                ],
                &mut errors,
            )
            .unwrap_or(DecimalMode::Precise),
            time: one_of(
                config,
                "time.precision.mode",
                "adaptive_time_microseconds",
                &[
                    (
                        "adaptive_time_microseconds",
                        TimeMode::AdaptiveTimeMicroseconds,
                    ),
                    ("connect", TimeMode::Connect),
                ],
                &mut errors,
            )
            .unwrap_or(TimeMode::AdaptiveTimeMicroseconds),
            bigint_unsigned: one_of(
                config,
                "bigint.unsigned.handling.mode",
                "long",
                &[
                    ("long", UnsignedMode::Long),
                    ("precise", UnsignedMode::Precise),
                ],
                &mut errors,
            )
            .unwrap_or(UnsignedMode::Long),
            binary: one_of(
                config,
                "binary.handling.mode",
                "bytes",
                &[
                    ("bytes", BinaryMode::Bytes),
                    ("base64", BinaryMode::Base64),
                    ("base64-url-safe", BinaryMode::Base64UrlSafe),
                    ("hex", BinaryMode::Hex),
                ],
                &mut errors,
            )
            .unwrap_or(BinaryMode::Bytes),
        };
        let skipped = skipped_operations(config, &mut errors);
        let databases = Filter::parse(config, "database.include.list", "database.exclude.list")
            .unwrap_or_else(|e| {
                errors.push(e);
                Filter::default()
            });
        let tables = Filter::parse(config, "table.include.list", "table.exclude.list")
            .unwrap_or_else(|e| {
                errors.push(e);
                Filter::default()
            });
        let max_batch_size: usize = number(config, "max.batch.size", 2048, "INT", &mut errors);
        let settings = Settings {
            host,
            port: number(config, PORT, 3306, "INT", &mut errors),
            user,
            password: config.get(PASSWORD).cloned().unwrap_or_default(),
            server_id,
            prefix,
            databases,
            tables,
            snapshot,
            include_schema_changes: boolean(config, "include.schema.changes", true, &mut errors),
            history_topic,
            history_bootstrap,
            tombstones_on_delete: boolean(config, "tombstones.on.delete", true, &mut errors),
            transaction_metadata: boolean(
                config,
                "provide.transaction.metadata",
                false,
                &mut errors,
            ),
            skipped,
            modes,
            max_batch_size: max_batch_size.max(1),
            poll_interval: Duration::from_millis(number(
                config,
                "poll.interval.ms",
                500,
                "LONG",
                &mut errors,
            )),
            connect_timeout: Duration::from_millis(number(
                config,
                "connect.timeout.ms",
                30_000,
                "LONG",
                &mut errors,
            )),
            mariadb_class: config
                .get("connector.class")
                .is_some_and(|c| c.contains("MariaDb")),
        };
        if errors.is_empty() {
            Ok(settings)
        } else {
            Err(errors)
        }
    }

    /// Whether a table (`db.table`) is captured: its database passes the database
    /// filter and the table the table filter. The system databases never are.
    pub fn captured(&self, database: &str, table: &str) -> bool {
        self.database_included(database) && self.tables.matches(&format!("{database}.{table}"))
    }

    pub fn database_included(&self, database: &str) -> bool {
        !matches!(
            database,
            "mysql" | "information_schema" | "performance_schema" | "sys"
        ) && self.databases.matches(database)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Props {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn guide() -> Props {
        props(&[
            (
                "connector.class",
                "io.debezium.connector.mysql.MySqlConnector",
            ),
            ("database.hostname", "mysql"),
            ("database.port", "3306"),
            ("database.user", "debezium"),
            ("database.password", "dbz"),
            ("database.server.id", "184054"),
            ("topic.prefix", "order-service"),
            ("database.include.list", "order_service"),
            (
                "table.include.list",
                "order_service.orders,order_service.order_items",
            ),
            (
                "schema.history.internal.kafka.bootstrap.servers",
                "kafka:9092",
            ),
            (
                "schema.history.internal.kafka.topic",
                "schema-changes.order-service",
            ),
            ("include.schema.changes", "true"),
        ])
    }

    #[test]
    fn the_guides_config_parses_with_debeziums_defaults() {
        let s = Settings::parse(&guide()).unwrap();
        assert_eq!(s.server_id, 184054);
        assert_eq!(s.port, 3306);
        assert_eq!(s.snapshot, SnapshotMode::Initial);
        assert_eq!(s.history_bootstrap, vec!["kafka:9092".to_string()]);
        assert_eq!(s.skipped, vec!['t']);
        assert_eq!(s.modes, Modes::default());
        assert!(s.tombstones_on_delete && s.include_schema_changes);
        assert!(!s.transaction_metadata && !s.mariadb_class);
        assert!(s.captured("order_service", "orders"));
        assert!(s.captured("order_service", "order_items"));
        assert!(!s.captured("order_service", "orders_archive"));
        assert!(!s.captured("other_db", "orders"));
    }

    #[test]
    fn bad_values_are_named_and_required_keys_missing_are_listed() {
        let mut config = guide();
        config.insert("database.server.id".into(), "0".into());
        config.insert("snapshot.mode".into(), "sometimes".into());
        config.insert("time.precision.mode".into(), "adaptive".into());
        config.remove("schema.history.internal.kafka.topic");
        let message = Settings::parse(&config).unwrap_err().message();
        for needle in [
            "database.server.id",
            "snapshot.mode",
            "time.precision.mode",
            "schema.history.internal.kafka.topic",
        ] {
            assert!(message.contains(needle), "{needle} not in {message}");
        }
    }

    #[test]
    fn old_snapshot_mode_names_mean_the_new_modes() {
        for (name, mode) in [
            ("schema_only", SnapshotMode::NoData),
            ("never", SnapshotMode::NoData),
            ("schema_only_recovery", SnapshotMode::Recovery),
            ("when_needed", SnapshotMode::WhenNeeded),
        ] {
            let mut config = guide();
            config.insert("snapshot.mode".into(), name.into());
            assert_eq!(Settings::parse(&config).unwrap().snapshot, mode, "{name}");
        }
    }

    #[test]
    fn system_databases_are_never_captured() {
        let mut config = guide();
        config.remove("database.include.list");
        config.remove("table.include.list");
        let s = Settings::parse(&config).unwrap();
        assert!(s.captured("shop", "t"));
        assert!(!s.captured("mysql", "user"));
        assert!(!s.database_included("performance_schema"));
    }
}
