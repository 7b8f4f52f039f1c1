//! `TimestampRouter`: renames the topic from `topic.format` (default
//! `${topic}-${timestamp}`), putting the record's timestamp formatted by
//! `timestamp.format` (a `SimpleDateFormat` pattern in UTC, default `yyyyMMdd`) in place
//! of `${timestamp}`. A record without a timestamp is an error.
//!
//! Kafka builds its `SimpleDateFormat` at the first record, so a bad pattern fails the
//! task there; here it is a config error of `timestamp.format`, found before any record.

use crate::ConfigError;
use crate::data::{DataError, Record};

use super::Transform;
use super::config::Options;
use super::simple_date_format::SimpleDateFormat;
use super::support::java_record;

pub(crate) struct TimestampRouter {
    topic_format: String,
    timestamp_format: SimpleDateFormat,
}

pub(crate) fn timestamp_router(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(TimestampRouter::configure(options)?))
}

impl TimestampRouter {
    fn configure(options: &mut Options) -> Result<TimestampRouter, ConfigError> {
        let topic_format = options.string_or("topic.format", "${topic}-${timestamp}");
        let pattern = options.string_or("timestamp.format", "yyyyMMdd");
        let timestamp_format = SimpleDateFormat::new(&pattern);
        if let Err(reason) = &timestamp_format {
            options.invalid("timestamp.format", &pattern, reason);
        }
        options.check()?;
        Ok(TimestampRouter {
            topic_format,
            timestamp_format: timestamp_format.expect("a bad pattern is a config error"),
        })
    }
}

impl Transform for TimestampRouter {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        let Some(timestamp) = record.timestamp else {
            return Err(DataError(format!(
                "Timestamp missing on record: {}",
                java_record(&record)
            )));
        };
        let formatted = self.timestamp_format.format(timestamp);
        record.topic = self
            .topic_format
            .replace("${topic}", &record.topic)
            .replace("${timestamp}", &formatted);
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::data::Value;

    /// Kafka's `TimestampRouterTest.defaultConfiguration`.
    #[test]
    fn the_default_appends_the_day() {
        let xform = configure(&[], TimestampRouter::configure).unwrap();
        let mut record = Record::new("test", None, Value::Null);
        record.partition = Some(0);
        record.timestamp = Some(1_483_425_001_864);
        assert_eq!(xform.apply(record).unwrap().unwrap().topic, "test-20170103");
    }

    #[test]
    fn formats_are_configurable() {
        let xform = configure(
            &[
                ("topic.format", "${timestamp}/${topic}/${topic}"),
                ("timestamp.format", "yyyy-MM-dd'T'HH"),
            ],
            TimestampRouter::configure,
        )
        .unwrap();
        let mut record = Record::new("t$1", None, Value::Null);
        record.timestamp = Some(1_483_425_001_864);
        assert_eq!(
            xform.apply(record).unwrap().unwrap().topic,
            "2017-01-03T06/t$1/t$1"
        );
    }

    #[test]
    fn a_record_without_timestamp_is_refused() {
        let xform = configure(&[], TimestampRouter::configure).unwrap();
        let mut record = Record::new("test", None, Value::Null);
        record.partition = Some(0);
        assert_eq!(
            xform.apply(record).unwrap_err().0,
            "Timestamp missing on record: SourceRecord{sourcePartition=null, sourceOffset=null} ConnectRecord{topic='test', kafkaPartition=0, key=null, keySchema=null, value=null, valueSchema=null, timestamp=null, headers=ConnectHeaders(headers=)}"
        );
    }

    #[test]
    fn config_errors() {
        assert_eq!(
            option_errors(&[("timestamp.format", "yyyyq")], TimestampRouter::configure),
            one_error(
                "timestamp.format",
                "Invalid value yyyyq for configuration timestamp.format: Illegal pattern character 'q'"
            )
        );
    }
}
