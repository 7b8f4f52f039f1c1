//! Connect's predicates (KIP-585, `org.apache.kafka.connect.transforms.predicates.*`):
//! `TopicNameMatches` (the whole topic matches `pattern`), `HasHeaderKey` (some header
//! is named `name`) and `RecordIsTombstone` (the value is null).

use crate::ConfigError;
use crate::data::Record;

use super::Predicate;
use super::config::Options;
use super::regex_router::JavaPattern;

pub(crate) struct TopicNameMatches {
    pattern: JavaPattern,
}

pub(crate) fn topic_name_matches(options: &mut Options) -> Result<Box<dyn Predicate>, ConfigError> {
    let pattern = options.required_non_empty_string("pattern");
    // Connect's composite validator stops at the first failure: an empty pattern is not
    // also reported as an invalid regex.
    if !pattern.is_empty()
        && let Err(reason) = JavaPattern::compile(&pattern)
    {
        options.invalid("pattern", &pattern, &format!("Invalid regex: {reason}"));
    }
    options.check()?;
    Ok(Box::new(TopicNameMatches {
        pattern: JavaPattern::compile(&pattern).expect("the pattern was checked"),
    }))
}

impl Predicate for TopicNameMatches {
    fn test(&self, record: &Record) -> bool {
        self.pattern.matches(&record.topic)
    }
}

pub(crate) struct HasHeaderKey {
    name: String,
}

pub(crate) fn has_header_key(options: &mut Options) -> Result<Box<dyn Predicate>, ConfigError> {
    let name = options.required_non_empty_string("name");
    options.check()?;
    Ok(Box::new(HasHeaderKey { name }))
}

impl Predicate for HasHeaderKey {
    fn test(&self, record: &Record) -> bool {
        record.headers.iter().any(|h| h.key == self.name)
    }
}

pub(crate) struct RecordIsTombstone;

pub(crate) fn record_is_tombstone(
    _options: &mut Options,
) -> Result<Box<dyn Predicate>, ConfigError> {
    Ok(Box::new(RecordIsTombstone))
}

impl Predicate for RecordIsTombstone {
    fn test(&self, record: &Record) -> bool {
        record.value.is_null()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::data::{Header, Value};

    fn topic(name: &str) -> Record {
        Record::new(name, None, Value::Null)
    }

    fn with_headers(keys: &[&str]) -> Record {
        let mut record = topic("t");
        record.headers = keys
            .iter()
            .map(|k| Header {
                key: k.to_string(),
                value: None,
            })
            .collect();
        record
    }

    /// Kafka's `TopicNameMatchesTest.testTest`.
    #[test]
    fn topic_names_match_whole() {
        let predicate = configure(&[("pattern", "my-prefix-.*")], topic_name_matches).unwrap();
        for (name, expected) in [
            ("my-prefix-", true),
            ("my-prefix-foo", true),
            ("x-my-prefix-", false),
            ("x-my-prefix-foo", false),
            ("your-prefix-", false),
            ("your-prefix-foo", false),
            ("", false),
        ] {
            assert_eq!(predicate.test(&topic(name)), expected, "{name}");
        }
    }

    /// Kafka's `TopicNameMatchesTest` config tests.
    #[test]
    fn topic_name_matches_config_errors() {
        assert_eq!(
            option_errors(&[], topic_name_matches),
            one_error(
                "pattern",
                "Missing required configuration \"transforms.t.pattern\" which has no default value."
            )
        );
        assert_eq!(
            option_errors(&[("pattern", "")], topic_name_matches),
            one_error(
                "pattern",
                "Invalid value  for configuration pattern: String must be non-empty"
            )
        );
        let invalid = option_errors(&[("pattern", "*")], topic_name_matches);
        assert_eq!(invalid.len(), 1);
        assert!(
            invalid[0]
                .1
                .starts_with("Invalid value * for configuration pattern: Invalid regex: "),
            "{}",
            invalid[0].1
        );
    }

    /// Kafka's `HasHeaderKeyTest`.
    #[test]
    fn header_keys_are_found() {
        let predicate = configure(&[("name", "foo")], has_header_key).unwrap();
        for (keys, expected) in [
            (&["foo"][..], true),
            (&["foo", "bar"], true),
            (&["bar", "foo", "bar", "foo"], true),
            (&["bar"], false),
            (&["bar", "bar"], false),
            (&[], false),
        ] {
            assert_eq!(predicate.test(&with_headers(keys)), expected, "{keys:?}");
        }
        assert_eq!(
            option_errors(&[], has_header_key),
            one_error(
                "name",
                "Missing required configuration \"transforms.t.name\" which has no default value."
            )
        );
        assert_eq!(
            option_errors(&[("name", "")], has_header_key),
            one_error(
                "name",
                "Invalid value  for configuration name: String must be non-empty"
            )
        );
    }

    #[test]
    fn tombstones_have_a_null_value() {
        let predicate = configure(&[], record_is_tombstone).unwrap();
        assert!(predicate.test(&topic("t")));
        assert!(!predicate.test(&Record::new("t", None, Value::String("v".into()))));
    }
}
