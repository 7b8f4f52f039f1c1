//! Connect's error handling for records (KIP-298, KIP-610): `errors.tolerance`,
//! `errors.log.*` and, for sink connectors, the dead letter queue
//! (`errors.deadletterqueue.*`), with the `__connect.errors.*` context headers Connect's
//! `DeadLetterQueueReporter` writes.
//!
//! A failure in a stage (key/value converter, a transform, the sink task refusing a
//! record through its errant-record report) goes to [`Reporter::report`]: with
//! `errors.tolerance=none` it fails the task ("Tolerance exceeded in error handler"); with
//! `all` the record is skipped, logged when `errors.log.enable`, and, for a sink, the
//! original record (its raw key, value, headers and timestamp) is written to the dead
//! letter queue topic before the task goes on. The write is acknowledged (acks=all)
//! before `report` returns, so the consumer offsets committed after it never pass a
//! record that is neither in the sink nor in the queue.

use std::time::Duration;

use bytes::Bytes;
use sluice_client::consumer::ConsumerRecord;
use sluice_client::producer::{Acks, Producer, ProducerConfig, ProducerRecord};
use sluice_client::{Admin, ClientConfig, ErrorCode, NewTopic};

use crate::connectors::{ConnectError, Kind};
use crate::{ConfigError, Props};

pub const TOLERANCE: &str = "errors.tolerance";
pub const RETRY_TIMEOUT: &str = "errors.retry.timeout";
pub const RETRY_DELAY_MAX: &str = "errors.retry.delay.max.ms";
pub const LOG_ENABLE: &str = "errors.log.enable";
pub const LOG_INCLUDE_MESSAGES: &str = "errors.log.include.messages";
pub const DLQ_TOPIC: &str = "errors.deadletterqueue.topic.name";
pub const DLQ_REPLICATION_FACTOR: &str = "errors.deadletterqueue.topic.replication.factor";
pub const DLQ_CONTEXT_HEADERS: &str = "errors.deadletterqueue.context.headers.enable";

/// Every key of Connect's "Error Handling" group, for `config/validate`.
pub const KEYS: [&str; 8] = [
    RETRY_TIMEOUT,
    RETRY_DELAY_MAX,
    TOLERANCE,
    LOG_ENABLE,
    LOG_INCLUDE_MESSAGES,
    DLQ_TOPIC,
    DLQ_REPLICATION_FACTOR,
    DLQ_CONTEXT_HEADERS,
];

/// The headers `DeadLetterQueueReporter` adds (`ERROR_HEADER_*`).
pub mod headers {
    pub const ORIG_TOPIC: &str = "__connect.errors.topic";
    pub const ORIG_PARTITION: &str = "__connect.errors.partition";
    pub const ORIG_OFFSET: &str = "__connect.errors.offset";
    pub const CONNECTOR_NAME: &str = "__connect.errors.connector.name";
    pub const TASK_ID: &str = "__connect.errors.task.id";
    pub const STAGE: &str = "__connect.errors.stage";
    pub const EXECUTING_CLASS: &str = "__connect.errors.class.name";
    pub const EXCEPTION: &str = "__connect.errors.exception.class.name";
    pub const EXCEPTION_MESSAGE: &str = "__connect.errors.exception.message";
    pub const EXCEPTION_STACK_TRACE: &str = "__connect.errors.exception.stacktrace";
}

/// Where in a record's path a failure happened (Connect's `Stage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    KeyConverter,
    ValueConverter,
    Transformation,
    TaskPut,
    TaskPoll,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::KeyConverter => "KEY_CONVERTER",
            Stage::ValueConverter => "VALUE_CONVERTER",
            Stage::Transformation => "TRANSFORMATION",
            Stage::TaskPut => "TASK_PUT",
            Stage::TaskPoll => "TASK_POLL",
        }
    }
}

/// A connector's `errors.*` settings, with Connect's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub tolerate_all: bool,
    pub log: bool,
    pub log_messages: bool,
    pub dlq_topic: Option<String>,
    pub dlq_replication_factor: i16,
    pub context_headers: bool,
    pub retry_timeout: Option<Duration>,
    pub retry_delay_max: Duration,
}

impl Policy {
    /// Parses and checks the keys as `ConnectorConfig`/`SinkConnectorConfig` do.
    pub fn from_config(config: &Props, kind: Kind) -> Result<Policy, ConfigError> {
        let mut errors = ConfigError::default();
        let boolean = |key: &str, errors: &mut ConfigError| match config
            .get(key)
            .map(|v| v.trim().to_ascii_lowercase())
        {
            None => false,
            Some(v) if v == "true" => true,
            Some(v) if v == "false" => false,
            Some(v) => {
                errors.push(ConfigError::invalid(
                    key,
                    &v,
                    "Expected value to be either true or false",
                ));
                false
            }
        };
        let tolerate_all = match config.get(TOLERANCE).map(|v| v.trim()) {
            None => false,
            Some(v) if v.eq_ignore_ascii_case("none") => false,
            Some(v) if v.eq_ignore_ascii_case("all") => true,
            Some(v) => {
                errors.push(ConfigError::invalid(
                    TOLERANCE,
                    v,
                    "String must be one of: none, all",
                ));
                false
            }
        };
        let log = boolean(LOG_ENABLE, &mut errors);
        let log_messages = boolean(LOG_INCLUDE_MESSAGES, &mut errors);
        let context_headers = boolean(DLQ_CONTEXT_HEADERS, &mut errors);
        let long = |key: &str, default: i64, errors: &mut ConfigError| -> i64 {
            match config.get(key).map(|v| v.trim()) {
                None => default,
                Some(v) => v.parse::<i64>().unwrap_or_else(|_| {
                    errors.push(ConfigError::invalid(key, v, "Not a number of type LONG"));
                    default
                }),
            }
        };
        let retry_timeout = match long(RETRY_TIMEOUT, 0, &mut errors) {
            -1 => None,
            ms => Some(Duration::from_millis(ms.max(0) as u64)),
        };
        let retry_delay_max =
            Duration::from_millis(long(RETRY_DELAY_MAX, 60_000, &mut errors).max(0) as u64);
        let dlq_topic = config
            .get(DLQ_TOPIC)
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        let dlq_replication_factor = match config.get(DLQ_REPLICATION_FACTOR).map(|v| v.trim()) {
            None => 3,
            Some(v) => match v.parse::<i16>() {
                Ok(rf) if rf == -1 || rf >= 1 => rf,
                _ => {
                    errors.push(ConfigError::invalid(
                        DLQ_REPLICATION_FACTOR,
                        v,
                        "Replication factor must be positive and not larger than the number of brokers in the Kafka cluster, or -1 to use the broker's default",
                    ));
                    3
                }
            },
        };
        if let Some(topic) = &dlq_topic {
            if kind == Kind::Source {
                // Connect defines the DLQ keys only for sink connectors; a source
                // connector's value would be silently unused there, so say so.
                errors.push(ConfigError::new(
                    DLQ_TOPIC,
                    "A dead letter queue is only supported for sink connectors",
                ));
            }
            let consumed: Vec<&str> = config
                .get("topics")
                .map(|t| t.split(',').map(str::trim).collect())
                .unwrap_or_default();
            if consumed.contains(&topic.as_str()) {
                errors.push(ConfigError::new(
                    DLQ_TOPIC,
                    // The list as Java prints it (`List.toString`).
                    format!(
                        "The DLQ topic '{topic}' may not be included in the list of topics ('topics=[{}]') consumed by the connector",
                        consumed.join(", ")
                    ),
                ));
            } else if let Some(regex) = config.get("topics.regex")
                && regex::Regex::new(&format!("^(?:{regex})$")).is_ok_and(|r| r.is_match(topic))
            {
                errors.push(ConfigError::new(
                    DLQ_TOPIC,
                    format!(
                        "The DLQ topic '{topic}' may not be included in the regex matching the topics ('topics.regex={regex}') consumed by the connector"
                    ),
                ));
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Policy {
            tolerate_all,
            log,
            log_messages,
            dlq_topic,
            dlq_replication_factor,
            context_headers,
            retry_timeout,
            retry_delay_max,
        })
    }
}

/// One failed record.
pub struct Failure<'a> {
    pub stage: Stage,
    /// The class that failed: the converter's, the transform's, the task's.
    pub class: &'a str,
    /// The Java exception class Connect would name.
    pub exception: &'a str,
    pub message: &'a str,
    /// The record as consumed (sinks); sources have none.
    pub original: Option<&'a ConsumerRecord>,
}

/// A task's error handler: its policy, its counters, and the dead letter queue's producer.
pub struct Reporter {
    policy: Policy,
    connector: String,
    task: u32,
    dlq: Option<Producer>,
    /// Records skipped because of an error (`total-records-skipped`).
    pub skipped: u64,
    /// Records written to the dead letter queue (`deadletterqueue-produce-requests`).
    pub dead_lettered: u64,
}

impl Reporter {
    /// Creates the dead letter queue topic if it does not exist (with the configured
    /// replication factor, one partition) and its producer.
    pub async fn start(
        policy: Policy,
        bootstrap: &[String],
        connector: &str,
        task: u32,
    ) -> Result<Reporter, ConnectError> {
        let kafka = |e: sluice_client::Error| ConnectError(e.to_string());
        let mut dlq = None;
        if let Some(topic) = &policy.dlq_topic {
            let admin = Admin::connect(ClientConfig::new(bootstrap.to_vec()))
                .await
                .map_err(kafka)?;
            let results = admin
                .create_topics(
                    &[NewTopic {
                        name: topic.clone(),
                        num_partitions: Some(1),
                        replication_factor: (policy.dlq_replication_factor > 0)
                            .then_some(policy.dlq_replication_factor),
                        configs: Vec::new(),
                    }],
                    false,
                )
                .await
                .map_err(kafka)?;
            match results.get(topic) {
                Some(Ok(_)) => {}
                Some(Err(e)) if e.code == ErrorCode::TOPIC_ALREADY_EXISTS => {}
                Some(Err(e)) => {
                    return Err(ConnectError(format!(
                        "Could not initialize dead letter queue with topic={topic}: {e}"
                    )));
                }
                None => return Err(ConnectError("CreateTopics answered nothing".into())),
            }
            let producer = Producer::connect(
                ProducerConfig::builder(bootstrap.to_vec())
                    .client_id(&format!("connector-dlq-producer-{connector}-{task}"))
                    .acks(Acks::All)
                    .enable_idempotence(true)
                    .build()
                    .map_err(|e| ConnectError(e.to_string()))?,
            )
            .await
            .map_err(|e| ConnectError(e.to_string()))?;
            dlq = Some(producer);
        }
        Ok(Reporter {
            policy,
            connector: connector.to_string(),
            task,
            dlq,
            skipped: 0,
            dead_lettered: 0,
        })
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Applies the policy to one failure: `Err` fails the task (tolerance none, or the
    /// dead letter queue could not take the record); `Ok` means the record is skipped.
    pub async fn report(&mut self, failure: Failure<'_>) -> Result<(), ConnectError> {
        let location = match failure.original {
            Some(r) => format!(
                " in stage '{}' with class '{}' for topic '{}' partition {} offset {}",
                failure.stage.name(),
                failure.class,
                r.topic,
                r.partition,
                r.offset
            ),
            None => format!(
                " in stage '{}' with class '{}'",
                failure.stage.name(),
                failure.class
            ),
        };
        if !self.policy.tolerate_all {
            return Err(ConnectError(format!(
                "Tolerance exceeded in error handler: {}: {}{location}",
                failure.exception, failure.message
            )));
        }
        self.skipped += 1;
        if self.policy.log {
            let record = match (self.policy.log_messages, failure.original) {
                (true, Some(r)) => format!(
                    ", consumer record: ConsumerRecord(topic = {}, partition = {}, offset = {}, timestamp = {}, key = {} bytes, value = {} bytes)",
                    r.topic,
                    r.partition,
                    r.offset,
                    r.timestamp,
                    r.key.as_ref().map_or(0, |k| k.len()),
                    r.value.as_ref().map_or(0, |v| v.len())
                ),
                _ => String::new(),
            };
            tracing::error!(
                connector = %self.connector,
                task = self.task,
                "Error encountered in task {}-{}. Executing stage '{}' with class '{}'{record}: {}: {}",
                self.connector,
                self.task,
                failure.stage.name(),
                failure.class,
                failure.exception,
                failure.message
            );
        }
        let (Some(producer), Some(original)) = (&self.dlq, failure.original) else {
            return Ok(());
        };
        let topic = self.policy.dlq_topic.clone().unwrap_or_default();
        let mut record = ProducerRecord::new(topic.clone(), Bytes::new());
        record.key = original.key.clone();
        record.value = original.value.clone();
        if original.timestamp >= 0 {
            record = record.with_timestamp(original.timestamp);
        }
        for h in &original.headers {
            record = record.with_header(h.key.clone(), h.value.clone());
        }
        if self.policy.context_headers {
            let trace = format!("{}: {}", failure.exception, failure.message);
            let context: [(&str, String); 10] = [
                (headers::ORIG_TOPIC, original.topic.clone()),
                (headers::ORIG_PARTITION, original.partition.to_string()),
                (headers::ORIG_OFFSET, original.offset.to_string()),
                (headers::CONNECTOR_NAME, self.connector.clone()),
                (headers::TASK_ID, self.task.to_string()),
                (headers::STAGE, failure.stage.name().to_string()),
                (headers::EXECUTING_CLASS, failure.class.to_string()),
                (headers::EXCEPTION, failure.exception.to_string()),
                (headers::EXCEPTION_MESSAGE, failure.message.to_string()),
                (headers::EXCEPTION_STACK_TRACE, trace),
            ];
            for (k, v) in context {
                record = record.with_header(Bytes::from_static(k.as_bytes()), Some(Bytes::from(v)));
            }
        }
        let delivery = producer.send(record).await.map_err(|e| {
            ConnectError(format!(
                "Could not produce message to dead letter queue. topic={topic}: {e}"
            ))
        })?;
        delivery.await.map_err(|e| {
            ConnectError(format!(
                "Could not produce message to dead letter queue. topic={topic}: {e}"
            ))
        })?;
        self.dead_lettered += 1;
        Ok(())
    }

    pub async fn close(self) {
        if let Some(producer) = self.dlq {
            let _ = producer.flush().await;
        }
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

    #[test]
    fn defaults_are_connects() {
        let p = Policy::from_config(&props(&[("topics", "a")]), Kind::Sink).unwrap();
        assert!(!p.tolerate_all && !p.log && !p.log_messages && !p.context_headers);
        assert_eq!(p.dlq_topic, None);
        assert_eq!(p.dlq_replication_factor, 3);
        assert_eq!(p.retry_timeout, Some(Duration::ZERO));
        assert_eq!(p.retry_delay_max, Duration::from_secs(60));
    }

    #[test]
    fn bad_values_name_their_key() {
        let e = Policy::from_config(
            &props(&[
                ("topics", "a,dlq"),
                (TOLERANCE, "some"),
                (LOG_ENABLE, "yes"),
                (DLQ_TOPIC, "dlq"),
                (DLQ_REPLICATION_FACTOR, "0"),
            ]),
            Kind::Sink,
        )
        .unwrap_err();
        let keys: Vec<&str> = e.errors.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [TOLERANCE, LOG_ENABLE, DLQ_REPLICATION_FACTOR, DLQ_TOPIC]
        );
        assert!(
            e.errors[3]
                .1
                .contains("may not be included in the list of topics")
        );
    }

    #[test]
    fn the_dlq_may_not_match_the_topics_regex_nor_serve_a_source() {
        let e = Policy::from_config(
            &props(&[("topics.regex", "orders-.*"), (DLQ_TOPIC, "orders-dlq")]),
            Kind::Sink,
        )
        .unwrap_err();
        assert!(e.errors[0].1.contains("topics.regex=orders-.*"));
        let e = Policy::from_config(&props(&[(DLQ_TOPIC, "dlq")]), Kind::Source).unwrap_err();
        assert_eq!(e.errors[0].0, DLQ_TOPIC);
        let ok = Policy::from_config(
            &props(&[
                ("topics", "orders"),
                (TOLERANCE, "ALL"),
                (DLQ_TOPIC, "orders-dlq"),
                (DLQ_REPLICATION_FACTOR, "1"),
                (DLQ_CONTEXT_HEADERS, "true"),
                (RETRY_TIMEOUT, "-1"),
            ]),
            Kind::Sink,
        )
        .unwrap();
        assert!(ok.tolerate_all && ok.context_headers);
        assert_eq!(ok.dlq_topic.as_deref(), Some("orders-dlq"));
        assert_eq!(ok.retry_timeout, None);
    }
}
