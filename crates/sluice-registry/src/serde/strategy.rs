//! Subject name strategies: which subject a serializer registers (or looks up) its schema
//! under, Confluent's `key.subject.name.strategy` / `value.subject.name.strategy`.
//!
//! - [`TopicNameStrategy`] (the default): `<topic>-key` or `<topic>-value`; one schema
//!   lineage per topic.
//! - [`RecordNameStrategy`]: the record's full name (Avro record, Protobuf message, JSON
//!   Schema `title`); one lineage per record type, whatever the topic.
//! - [`TopicRecordNameStrategy`]: `<topic>-<full name>`; several record types per topic.
//!
//! A strategy is a trait so that a caller may bring its own, as Confluent's clients allow.

use std::fmt;

use super::SerdeError;

pub trait SubjectNameStrategy: Send + Sync + fmt::Debug {
    /// The subject for a record of `topic` (its key when `is_key`) whose schema's record
    /// name is `record_name` (`None` when the schema has none).
    fn subject(
        &self,
        topic: &str,
        is_key: bool,
        record_name: Option<&str>,
    ) -> Result<String, SerdeError>;
}

#[derive(Debug, Clone, Copy, Default)]
pub struct TopicNameStrategy;

#[derive(Debug, Clone, Copy, Default)]
pub struct RecordNameStrategy;

#[derive(Debug, Clone, Copy, Default)]
pub struct TopicRecordNameStrategy;

impl SubjectNameStrategy for TopicNameStrategy {
    fn subject(&self, topic: &str, is_key: bool, _: Option<&str>) -> Result<String, SerdeError> {
        Ok(format!("{topic}-{}", if is_key { "key" } else { "value" }))
    }
}

impl SubjectNameStrategy for RecordNameStrategy {
    fn subject(&self, _: &str, _: bool, record_name: Option<&str>) -> Result<String, SerdeError> {
        record_name
            .map(str::to_string)
            .ok_or(SerdeError::NoRecordName {
                strategy: "RecordNameStrategy",
            })
    }
}

impl SubjectNameStrategy for TopicRecordNameStrategy {
    fn subject(
        &self,
        topic: &str,
        _: bool,
        record_name: Option<&str>,
    ) -> Result<String, SerdeError> {
        let record_name = record_name.ok_or(SerdeError::NoRecordName {
            strategy: "TopicRecordNameStrategy",
        })?;
        Ok(format!("{topic}-{record_name}"))
    }
}

/// A boxed strategy is a strategy, so a caller can pick one at run time.
impl<S: SubjectNameStrategy + ?Sized> SubjectNameStrategy for Box<S> {
    fn subject(
        &self,
        topic: &str,
        is_key: bool,
        record_name: Option<&str>,
    ) -> Result<String, SerdeError> {
        (**self).subject(topic, is_key, record_name)
    }
}
