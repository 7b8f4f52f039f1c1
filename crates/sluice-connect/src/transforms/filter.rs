//! `Filter`: drops every record it is applied to; with a predicate (`RecordIsTombstone`,
//! `TopicNameMatches`, `HasHeaderKey`) it drops the records that match (or, negated,
//! those that do not).

use crate::ConfigError;
use crate::data::{DataError, Record};

use super::Transform;
use super::config::Options;

pub(crate) struct Filter;

pub(crate) fn filter(_options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(Filter))
}

impl Transform for Filter {
    fn apply(&self, _record: Record) -> Result<Option<Record>, DataError> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Value;

    #[test]
    fn every_record_is_dropped() {
        assert_eq!(
            Filter.apply(Record::new("t", None, Value::Null)).unwrap(),
            None
        );
    }
}
