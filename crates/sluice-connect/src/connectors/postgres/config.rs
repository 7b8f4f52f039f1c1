//! The Debezium PostgreSQL connector's configuration keys, defaults and checks (Debezium
//! 3.x's `PostgresConnectorConfig`), as far as Sluice's connector implements them.

use std::time::Duration;

use super::values::{BinaryMode, DecimalMode, IntervalMode, Modes, TimeMode};
use crate::connectors::ConfigKeyDef;
use crate::connectors::debezium::{Filter, boolean, key, number, one_of, skipped_operations};
use crate::{ConfigError, Props};

/// `snapshot.mode` (Debezium 3.x's names; `never` is the old name of `no_data`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotMode {
    /// Snapshot when no offset exists (or the last snapshot did not finish), then stream.
    Initial,
    /// Snapshot at every start, then stream.
    Always,
    /// Snapshot when no offset exists, then stop.
    InitialOnly,
    /// Never snapshot data; stream from the slot.
    NoData,
    /// Snapshot when no offset exists or the slot can no longer serve the offset.
    WhenNeeded,
}

/// `publication.autocreate.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublicationMode {
    AllTables,
    Disabled,
    Filtered,
    NoTables,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub dbname: String,
    pub prefix: String,
    pub slot: String,
    pub slot_drop_on_stop: bool,
    pub publication: String,
    pub publication_mode: PublicationMode,
    pub schemas: Filter,
    pub tables: Filter,
    pub snapshot: SnapshotMode,
    pub tombstones_on_delete: bool,
    pub transaction_metadata: bool,
    /// Operations not emitted: `c`, `u`, `d`, `t` (Debezium skips truncates by default).
    pub skipped: Vec<char>,
    pub modes: Modes,
    pub max_batch_size: usize,
    pub poll_interval: Duration,
    pub status_update_interval: Duration,
    pub connect_timeout: Duration,
}

pub const HOSTNAME: &str = "database.hostname";
pub const PORT: &str = "database.port";
pub const USER: &str = "database.user";
pub const PASSWORD: &str = "database.password";
pub const DBNAME: &str = "database.dbname";
pub const TOPIC_PREFIX: &str = "topic.prefix";
pub const PLUGIN: &str = "plugin.name";
pub const SLOT: &str = "slot.name";
pub const PUBLICATION: &str = "publication.name";
pub const PUBLICATION_MODE: &str = "publication.autocreate.mode";
pub const SNAPSHOT_MODE: &str = "snapshot.mode";

pub fn keys() -> Vec<ConfigKeyDef> {
    vec![
        ConfigKeyDef {
            required: true,
            ..key(
                HOSTNAME,
                "STRING",
                None,
                "HIGH",
                "Resolvable hostname or IP address of the database server.",
            )
        },
        key(
            PORT,
            "INT",
            Some("5432"),
            "HIGH",
            "Port of the database server.",
        ),
        ConfigKeyDef {
            required: true,
            ..key(
                USER,
                "STRING",
                None,
                "HIGH",
                "Name of the database user to be used when connecting to the database.",
            )
        },
        key(
            PASSWORD,
            "PASSWORD",
            None,
            "HIGH",
            "Password of the database user to be used when connecting to the database.",
        ),
        ConfigKeyDef {
            required: true,
            ..key(
                DBNAME,
                "STRING",
                None,
                "HIGH",
                "The name of the database from which the connector should capture changes",
            )
        },
        ConfigKeyDef {
            required: true,
            ..key(
                TOPIC_PREFIX,
                "STRING",
                None,
                "HIGH",
                "Topic prefix that identifies and provides a namespace for the particular database server/cluster is capturing changes. The topic prefix should be unique across all other connectors, since it is used as a prefix for all Kafka topic names that receive events emitted by this connector. Only alphanumeric characters, hyphens, dots and underscores must be accepted.",
            )
        },
        key(
            PLUGIN,
            "STRING",
            Some("decoderbufs"),
            "MEDIUM",
            "The name of the Postgres logical decoding plugin installed on the server. Supported values are 'decoderbufs' and 'pgoutput'; Sluice's connector decodes 'pgoutput'.",
        ),
        key(
            SLOT,
            "STRING",
            Some("debezium"),
            "MEDIUM",
            "The name of the Postgres logical decoding slot created for streaming changes from a plugin. Defaults to 'debezium",
        ),
        key(
            "slot.drop.on.stop",
            "BOOLEAN",
            Some("false"),
            "MEDIUM",
            "Whether or not to drop the logical replication slot when the connector finishes orderly.",
        ),
        key(
            PUBLICATION,
            "STRING",
            Some("dbz_publication"),
            "LOW",
            "The name of the Postgres 10+ publication used for streaming changes from a plugin.",
        ),
        key(
            PUBLICATION_MODE,
            "STRING",
            Some("all_tables"),
            "LOW",
            "Applies only when streaming changes using pgoutput. Determine how creation of a publication should work: all_tables, disabled, filtered, no_tables.",
        ),
        key(
            "schema.include.list",
            "LIST",
            None,
            "HIGH",
            "The schemas for which events should be captured",
        ),
        key(
            "schema.exclude.list",
            "LIST",
            None,
            "MEDIUM",
            "The schemas for which events must not be captured",
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
            "MEDIUM",
            "The criteria for running a snapshot upon startup of the connector: initial, always, initial_only, no_data (never), when_needed.",
        ),
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
            "Specify how DECIMAL and NUMERIC columns should be represented in change events: precise, string, double.",
        ),
        key(
            "time.precision.mode",
            "STRING",
            Some("adaptive"),
            "MEDIUM",
            "Time, date, and timestamps can be represented with different kinds of precisions: adaptive, adaptive_time_microseconds, connect.",
        ),
        key(
            "binary.handling.mode",
            "STRING",
            Some("bytes"),
            "LOW",
            "Specify how binary (blob, binary, etc.) columns should be represented in change events: bytes, base64, base64-url-safe, hex.",
        ),
        key(
            "interval.handling.mode",
            "STRING",
            Some("numeric"),
            "MEDIUM",
            "Specify how INTERVAL columns should be represented in change events: numeric, string.",
        ),
        key(
            "max.batch.size",
            "INT",
            Some("2048"),
            "MEDIUM",
            "Maximum size of each batch of source records.",
        ),
        key(
            "poll.interval.ms",
            "LONG",
            Some("500"),
            "MEDIUM",
            "Time to wait for new change events to appear after receiving no events, given in milliseconds.",
        ),
        key(
            "status.update.interval.ms",
            "INT",
            Some("10000"),
            "MEDIUM",
            "Frequency for sending replication connection status updates to the server, given in milliseconds.",
        ),
        key(
            "database.connect.timeout.ms",
            "INT",
            Some("30000"),
            "LOW",
            "Maximum time to wait after trying to connect to the database before timing out, given in milliseconds.",
        ),
        key(
            "database.sslmode",
            "STRING",
            Some("prefer"),
            "MEDIUM",
            "Whether to use an encrypted connection to Postgres. Sluice's connector has no TLS yet: disable, allow and prefer connect unencrypted; require, verify-ca and verify-full are refused.",
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
        let dbname = required(DBNAME);
        let prefix = required(TOPIC_PREFIX);
        if !prefix.is_empty()
            && !prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            errors.push(ConfigError::invalid(
                TOPIC_PREFIX,
                &prefix,
                "Topic prefix can only contain alphanumeric characters, hyphens, dots and underscores",
            ));
        }
        let plugin = config
            .get(PLUGIN)
            .map(|p| p.trim())
            .unwrap_or("decoderbufs");
        if !plugin.eq_ignore_ascii_case("pgoutput") {
            errors.push(ConfigError::invalid(
                PLUGIN,
                plugin,
                "Sluice's PostgresConnector decodes only pgoutput, PostgreSQL's built-in logical decoding plugin (Debezium's default is decoderbufs, a server extension): set plugin.name=pgoutput",
            ));
        }
        // TLS to the database is not there yet: a setting that demands it is refused
        // rather than connecting in the clear.
        if let Some(mode) = config.get("database.sslmode").map(|m| m.trim())
            && !matches!(
                mode.to_ascii_lowercase().as_str(),
                "disable" | "prefer" | "allow"
            )
        {
            errors.push(ConfigError::invalid(
                "database.sslmode",
                mode,
                "Sluice's PostgresConnector does not connect over TLS yet: only disable, allow and prefer (which fall back to an unencrypted connection) are accepted",
            ));
        }
        let slot = config
            .get(SLOT)
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| "debezium".into());
        if slot.is_empty()
            || !slot
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            errors.push(ConfigError::invalid(
                SLOT,
                &slot,
                "Valid replication slot name must contain only digits, lowercase characters and underscores with length <= 63",
            ));
        }
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
                "adaptive",
                &[
                    ("adaptive", TimeMode::Adaptive),
                    (
                        "adaptive_time_microseconds",
                        TimeMode::AdaptiveTimeMicroseconds,
                    ),
                    ("connect", TimeMode::Connect),
                ],
                &mut errors,
            )
            .unwrap_or(TimeMode::Adaptive),
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
            interval: one_of(
                config,
                "interval.handling.mode",
                "numeric",
                &[
                    ("numeric", IntervalMode::Numeric),
                    ("string", IntervalMode::String),
                ],
                &mut errors,
            )
            .unwrap_or(IntervalMode::Numeric),
        };
        let snapshot = one_of(
            config,
            SNAPSHOT_MODE,
            "initial",
            &[
                ("initial", SnapshotMode::Initial),
                ("always", SnapshotMode::Always),
                ("initial_only", SnapshotMode::InitialOnly),
                ("no_data", SnapshotMode::NoData),
                ("never", SnapshotMode::NoData),
                ("when_needed", SnapshotMode::WhenNeeded),
            ],
            &mut errors,
        )
        .unwrap_or(SnapshotMode::Initial);
        let publication_mode = one_of(
            config,
            PUBLICATION_MODE,
            "all_tables",
            &[
                ("all_tables", PublicationMode::AllTables),
                ("disabled", PublicationMode::Disabled),
                ("filtered", PublicationMode::Filtered),
                ("no_tables", PublicationMode::NoTables),
            ],
            &mut errors,
        )
        .unwrap_or(PublicationMode::AllTables);
        let skipped = skipped_operations(config, &mut errors);
        let schemas = Filter::parse(config, "schema.include.list", "schema.exclude.list")
            .unwrap_or_else(|e| {
                errors.push(e);
                Filter::default()
            });
        let tables = Filter::parse(config, "table.include.list", "table.exclude.list")
            .unwrap_or_else(|e| {
                errors.push(e);
                Filter::default()
            });
        let settings = Settings {
            host,
            port: number(config, PORT, 5432, "INT", &mut errors),
            user,
            password: config.get(PASSWORD).cloned().unwrap_or_default(),
            dbname,
            prefix,
            slot,
            slot_drop_on_stop: boolean(config, "slot.drop.on.stop", false, &mut errors),
            publication: config
                .get(PUBLICATION)
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|| "dbz_publication".into()),
            publication_mode,
            schemas,
            tables,
            snapshot,
            tombstones_on_delete: boolean(config, "tombstones.on.delete", true, &mut errors),
            transaction_metadata: boolean(
                config,
                "provide.transaction.metadata",
                false,
                &mut errors,
            ),
            skipped,
            modes,
            max_batch_size: number(config, "max.batch.size", 2048usize, "INT", &mut errors).max(1),
            poll_interval: Duration::from_millis(number(
                config,
                "poll.interval.ms",
                500u64,
                "LONG",
                &mut errors,
            )),
            status_update_interval: Duration::from_millis(
                number(
                    config,
                    "status.update.interval.ms",
                    10_000u64,
                    "INT",
                    &mut errors,
                )
                .max(1),
            ),
            connect_timeout: Duration::from_millis(
                number(
                    config,
                    "database.connect.timeout.ms",
                    30_000u64,
                    "INT",
                    &mut errors,
                )
                .max(1),
            ),
        };
        if errors.is_empty() {
            Ok(settings)
        } else {
            Err(errors)
        }
    }

    /// Whether a table is captured: its schema and `schema.table` pass the filters.
    pub fn captures(&self, schema: &str, table: &str) -> bool {
        self.schemas.matches(schema) && self.tables.matches(&format!("{schema}.{table}"))
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

    fn minimal() -> Vec<(&'static str, &'static str)> {
        vec![
            (HOSTNAME, "127.0.0.1"),
            (USER, "postgres"),
            (DBNAME, "inventory"),
            (TOPIC_PREFIX, "dbserver1"),
            (PLUGIN, "pgoutput"),
        ]
    }

    #[test]
    fn debeziums_defaults() {
        let s = Settings::parse(&props(&minimal())).unwrap();
        assert_eq!(
            (s.port, s.slot.as_str(), s.publication.as_str()),
            (5432, "debezium", "dbz_publication")
        );
        assert_eq!(s.snapshot, SnapshotMode::Initial);
        assert_eq!(s.publication_mode, PublicationMode::AllTables);
        assert!(s.tombstones_on_delete && !s.transaction_metadata);
        assert_eq!(s.skipped, vec!['t']);
        assert_eq!(s.modes, Modes::default());
    }

    #[test]
    fn every_problem_is_reported_by_key() {
        let e = Settings::parse(&props(&[
            (PLUGIN, "decoderbufs"),
            (SNAPSHOT_MODE, "sometimes"),
            (PORT, "x"),
            (SLOT, "Bad-Slot"),
            ("database.sslmode", "verify-full"),
            ("table.include.list", "public.a"),
            ("table.exclude.list", "public.b"),
        ]))
        .unwrap_err();
        let keys: Vec<&str> = e.errors.iter().map(|(k, _)| k.as_str()).collect();
        for k in [
            HOSTNAME,
            USER,
            DBNAME,
            TOPIC_PREFIX,
            PLUGIN,
            SNAPSHOT_MODE,
            PORT,
            SLOT,
            "table.exclude.list",
            "database.sslmode",
        ] {
            assert!(keys.contains(&k), "{k} not reported: {keys:?}");
        }
        assert!(
            e.message().contains("set plugin.name=pgoutput"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn table_filters_match_whole_names() {
        let mut p = minimal();
        p.push(("table.include.list", "public.orders,inv\\.item.*"));
        let s = Settings::parse(&props(&p)).unwrap();
        assert!(s.captures("public", "orders"));
        assert!(!s.captures("public", "orders_archive"));
        assert!(s.captures("inv", "items"));
        assert!(!s.captures("public", "customers"));
    }
}
