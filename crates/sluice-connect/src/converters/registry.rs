//! What every converter backed by a schema registry shares (Confluent's `AvroConverter`,
//! `JsonSchemaConverter`, `ProtobufConverter`): the serializer's settings
//! (`AbstractKafkaSchemaSerDeConfig`'s keys and defaults), the subject name strategies,
//! the texts they fail with (`Format`), and how a synchronous converter waits for the
//! asynchronous registry client.
//!
//! Blocking: [`super::Converter`] is synchronous and the registry client is not. Registry
//! calls run on a small runtime of their own (one thread, shared by every registry-backed
//! converter in the process), and the caller waits: inside the worker's multi-threaded
//! Tokio runtime the wait is wrapped in `block_in_place`, so the worker's other tasks keep
//! running; on a current-thread runtime the wait blocks that runtime until the registry
//! answers (the worker runs its tasks on the multi-threaded runtime).

use std::fmt::Display;
use std::future::Future;
use std::sync::{Mutex, OnceLock};

use sluice_registry::client::{
    ClientConfig, ClientError, RegisteredSchema, Schema as RegistrySchema, SchemaRegistryClient,
};
use sluice_registry::serde::strategy::{
    RecordNameStrategy, SubjectNameStrategy, TopicNameStrategy, TopicRecordNameStrategy,
};

use super::{Settings, with_cause};
use crate::ConfigError;
use crate::data::DataError;

pub const SCHEMA_REGISTRY_URL_CONFIG: &str = "schema.registry.url";
pub const AUTO_REGISTER_SCHEMAS_CONFIG: &str = "auto.register.schemas";
pub const USE_LATEST_VERSION_CONFIG: &str = "use.latest.version";
pub const LATEST_COMPATIBILITY_STRICT_CONFIG: &str = "latest.compatibility.strict";
pub const NORMALIZE_SCHEMAS_CONFIG: &str = "normalize.schemas";
pub const MAX_SCHEMAS_PER_SUBJECT_CONFIG: &str = "max.schemas.per.subject";
pub const KEY_SUBJECT_NAME_STRATEGY_CONFIG: &str = "key.subject.name.strategy";
pub const VALUE_SUBJECT_NAME_STRATEGY_CONFIG: &str = "value.subject.name.strategy";

const TOPIC_NAME_STRATEGY: &str = "io.confluent.kafka.serializers.subject.TopicNameStrategy";
const RECORD_NAME_STRATEGY: &str = "io.confluent.kafka.serializers.subject.RecordNameStrategy";
const TOPIC_RECORD_NAME_STRATEGY: &str =
    "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy";

/// Which subject a schema goes under (Confluent's `*.subject.name.strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubjectStrategy {
    #[default]
    Topic,
    Record,
    TopicRecord,
}

impl SubjectStrategy {
    /// The subject of a schema written to `topic`; `record_name` is the schema's record
    /// name (Avro's full name, JSON Schema's `title`, Protobuf's message full name).
    pub fn subject(
        self,
        topic: &str,
        is_key: bool,
        record_name: Option<&str>,
    ) -> Result<String, DataError> {
        let subject = match self {
            SubjectStrategy::Topic => TopicNameStrategy.subject(topic, is_key, record_name),
            SubjectStrategy::Record => RecordNameStrategy.subject(topic, is_key, record_name),
            SubjectStrategy::TopicRecord => {
                TopicRecordNameStrategy.subject(topic, is_key, record_name)
            }
        };
        subject.map_err(|e| DataError(e.to_string()))
    }
}

/// The serializer's settings every registry-backed converter takes, with Confluent's
/// defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryConverterConfig {
    pub schema_registry_urls: Vec<String>,
    pub auto_register_schemas: bool,
    pub use_latest_version: bool,
    pub latest_compatibility_strict: bool,
    pub normalize_schemas: bool,
    pub max_schemas_per_subject: usize,
    pub key_subject_strategy: SubjectStrategy,
    pub value_subject_strategy: SubjectStrategy,
}

impl RegistryConverterConfig {
    /// A configuration with Confluent's defaults for a registry at `urls`.
    pub fn new(urls: &str) -> RegistryConverterConfig {
        RegistryConverterConfig {
            schema_registry_urls: split_urls(urls),
            auto_register_schemas: true,
            use_latest_version: false,
            latest_compatibility_strict: true,
            normalize_schemas: false,
            max_schemas_per_subject: 1000,
            key_subject_strategy: SubjectStrategy::Topic,
            value_subject_strategy: SubjectStrategy::Topic,
        }
    }

    pub fn parse(settings: &Settings<'_>) -> Result<RegistryConverterConfig, ConfigError> {
        let mut errors = ConfigError::default();
        let urls = settings
            .string(SCHEMA_REGISTRY_URL_CONFIG)
            .map(split_urls)
            .unwrap_or_default();
        if urls.is_empty() {
            errors.push(settings.missing(SCHEMA_REGISTRY_URL_CONFIG));
        } else if let Err(e) = SchemaRegistryClient::new(ClientConfig::new(&urls.join(","))) {
            errors.push(settings.invalid(
                SCHEMA_REGISTRY_URL_CONFIG,
                &urls.join(","),
                &e.to_string(),
            ));
        }
        let mut config = RegistryConverterConfig::new("");
        config.schema_registry_urls = urls;
        let mut boolean = |name: &str, default: bool| match settings.boolean(name, default) {
            Ok(v) => v,
            Err(e) => {
                errors.push(e);
                default
            }
        };
        config.auto_register_schemas = boolean(AUTO_REGISTER_SCHEMAS_CONFIG, true);
        config.use_latest_version = boolean(USE_LATEST_VERSION_CONFIG, false);
        config.latest_compatibility_strict = boolean(LATEST_COMPATIBILITY_STRICT_CONFIG, true);
        config.normalize_schemas = boolean(NORMALIZE_SCHEMAS_CONFIG, false);
        match settings.int(MAX_SCHEMAS_PER_SUBJECT_CONFIG, 1000) {
            Ok(v) => config.max_schemas_per_subject = usize::try_from(v).unwrap_or(0),
            Err(e) => errors.push(e),
        }
        for (name, strategy) in [
            (
                KEY_SUBJECT_NAME_STRATEGY_CONFIG,
                &mut config.key_subject_strategy,
            ),
            (
                VALUE_SUBJECT_NAME_STRATEGY_CONFIG,
                &mut config.value_subject_strategy,
            ),
        ] {
            match settings.string(name) {
                None => {}
                Some(TOPIC_NAME_STRATEGY) => *strategy = SubjectStrategy::Topic,
                Some(RECORD_NAME_STRATEGY) => *strategy = SubjectStrategy::Record,
                Some(TOPIC_RECORD_NAME_STRATEGY) => *strategy = SubjectStrategy::TopicRecord,
                Some(other) => errors.push(settings.invalid(
                    name,
                    other,
                    &format!("Class {other} could not be found."),
                )),
            }
        }
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(errors)
        }
    }

    /// The serializer's settings and a format's own (`data`), with every error of both.
    pub(crate) fn parse_with<D>(
        settings: &Settings<'_>,
        data: impl FnOnce(&Settings<'_>) -> Result<D, ConfigError>,
    ) -> Result<(RegistryConverterConfig, D), ConfigError> {
        match (RegistryConverterConfig::parse(settings), data(settings)) {
            (Ok(registry), Ok(data)) => Ok((registry, data)),
            (registry, data) => {
                let mut errors = ConfigError::default();
                for e in [registry.err(), data.err()].into_iter().flatten() {
                    errors.push(e);
                }
                Err(errors)
            }
        }
    }

    /// The strategy for the key's or the value's subject.
    pub fn strategy(&self, is_key: bool) -> SubjectStrategy {
        if is_key {
            self.key_subject_strategy
        } else {
            self.value_subject_strategy
        }
    }

    /// The schema a record goes out with, by Confluent's serializer's rules: with
    /// `auto.register.schemas` ours is registered under `subject`; otherwise with
    /// `use.latest.version` the subject's latest is answered, for the caller to check
    /// against ours; otherwise ours must already be registered there.
    pub(crate) fn writer_schema(
        &self,
        client: &SchemaRegistryClient,
        format: Format,
        topic: &str,
        subject: &str,
        ours: RegistrySchema,
    ) -> Result<WriterSchema, DataError> {
        let client = client.clone();
        let subject = subject.to_string();
        let normalize = self.normalize_schemas;
        let text = ours.schema.clone();
        let [registering, latest, retrieving] = format.write_failures();
        let failure =
            |message: &str, e| format.write_registry_failure(topic, &format!("{message}{text}"), e);
        if self.auto_register_schemas {
            run_blocking(async move { client.register(&subject, &ours, normalize).await })?
                .map(WriterSchema::Ours)
                .map_err(|e| failure(registering, e))
        } else if self.use_latest_version {
            run_blocking(async move { client.get_latest(&subject).await })?
                .map(|found| WriterSchema::Latest(Box::new(found)))
                .map_err(|e| failure(latest, e))
        } else {
            run_blocking(async move { client.lookup(&subject, &ours, normalize).await })?
                .map(|found| WriterSchema::Ours(found.id))
                .map_err(|e| failure(retrieving, e))
        }
    }

    /// A registry client for these settings, caching at most `max.schemas.per.subject`
    /// schemas.
    pub fn client(&self) -> Result<SchemaRegistryClient, ConfigError> {
        let mut client_config = ClientConfig::new(&self.schema_registry_urls.join(","));
        client_config.cache_capacity = self.max_schemas_per_subject;
        SchemaRegistryClient::new(client_config)
            .map_err(|e| ConfigError::new(SCHEMA_REGISTRY_URL_CONFIG, e.to_string()))
    }
}

pub(crate) fn split_urls(urls: &str) -> Vec<String> {
    urls.split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .collect()
}

/// The registry's runtime: one thread, for every registry-backed converter.
fn registry_runtime() -> Result<&'static tokio::runtime::Runtime, DataError> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("sluice-connect-registry")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the schema registry client's runtime: {e}"))
        })
        .as_ref()
        .map_err(|e| DataError(e.clone()))
}

/// Runs a registry call to completion from synchronous code (see the module's notes on
/// blocking).
pub(crate) fn run_blocking<T: Send + 'static>(
    future: impl Future<Output = T> + Send + 'static,
) -> Result<T, DataError> {
    let runtime = registry_runtime()?;
    let (sender, receiver) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        // The caller may have gone (a panic); nobody is left to tell.
        let _ = sender.send(future.await);
    });
    let wait = move || receiver.recv();
    let answer = match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        _ => wait(),
    };
    answer.map_err(|_| DataError("the schema registry request was abandoned".into()))
}

/// A cache's lock; entries are whole values, so a panic elsewhere cannot leave one
/// half-written and a poisoned lock is taken as it is.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The schema a record goes out with ([`RegistryConverterConfig::writer_schema`]).
#[derive(Debug)]
pub(crate) enum WriterSchema {
    /// Ours, registered or found registered: its id.
    Ours(i32),
    /// The subject's latest (`use.latest.version`).
    Latest(Box<RegisteredSchema>),
}

/// What a registry-backed converter writes, for the texts it fails with: Confluent's
/// converters word their failures by format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Avro,
    Protobuf,
    JsonSchema,
}

impl Format {
    /// The format's name in Confluent's network error texts.
    fn name(self) -> &'static str {
        match self {
            Format::Avro => "Avro",
            Format::Protobuf => "Protobuf",
            Format::JsonSchema => "Json",
        }
    }

    /// Confluent's serializers' texts for a failed registration, latest-version read and
    /// lookup of the schema written (each followed by the schema's text).
    fn write_failures(self) -> [&'static str; 3] {
        match self {
            Format::Avro => [
                "Error registering Avro schema",
                "Error retrieving latest version of Avro schema",
                "Error retrieving Avro schema",
            ],
            Format::Protobuf => [
                "Error registering Protobuf schema: ",
                "Error retrieving latest version: ",
                "Error retrieving Protobuf schema: ",
            ],
            Format::JsonSchema => [
                "Error registering JSON schema: ",
                "Error retrieving latest version: ",
                "Error retrieving JSON schema: ",
            ],
        }
    }

    /// Connect data that could not be written.
    pub(crate) fn serialize_failure(self, topic: &str, cause: impl Display) -> DataError {
        let message = match self {
            Format::JsonSchema => format!(
                "Converting Kafka Connect data to byte[] failed due to serialization error of \
                 topic {topic}: "
            ),
            _ => format!(
                "Failed to serialize {} data from topic {topic}:",
                self.name()
            ),
        };
        with_cause(&message, cause)
    }

    /// Bytes that could not be read as Connect data.
    pub(crate) fn deserialize_failure(self, topic: &str, cause: impl Display) -> DataError {
        let message = match self {
            Format::JsonSchema => format!(
                "Converting byte[] to Kafka Connect data failed due to serialization error of \
                 topic {topic}: "
            ),
            _ => format!(
                "Failed to deserialize data for topic {topic} to {}:",
                self.name()
            ),
        };
        with_cause(&message, cause)
    }

    /// A registry failure while writing.
    pub(crate) fn write_registry_failure(
        self,
        topic: &str,
        message: &str,
        error: ClientError,
    ) -> DataError {
        match error {
            ClientError::Transport { source, .. } => DataError(format!(
                "Network connection error while serializing {} data for topic {topic}: {source}",
                self.name()
            )),
            other => self.serialize_failure(topic, with_cause(message, other)),
        }
    }

    /// A registry failure while reading.
    pub(crate) fn read_registry_failure(
        self,
        topic: &str,
        message: &str,
        error: ClientError,
    ) -> DataError {
        match error {
            ClientError::Transport { source, .. } => DataError(format!(
                "Network connection error while deserializing data for topic {topic}: {source}"
            )),
            other => self.deserialize_failure(topic, with_cause(message, other)),
        }
    }
}
