//! `RegexRouter`: renames the topic of a record whose whole topic matches `regex`
//! (`Matcher.matches`), replacing the first match with `replacement` (`replaceFirst`).
//!
//! Java regexes run on Rust's `regex` crate, which has the same syntax for what topic
//! routing uses (classes, groups, named groups `(?<name>...)`, quantifiers) and refuses
//! look-around and back-references as an invalid regex. The replacement keeps Java's
//! syntax: `$1` or `${name}` insert a group (the longest group number that exists, as
//! Java reads `$12` with fewer than 12 groups as `$1` then `2`), a backslash escapes
//! the next character. A replacement Java would refuse fails the record that needs it,
//! as in Kafka.

use regex::Regex;

use crate::ConfigError;
use crate::data::{DataError, Record};

use super::Transform;
use super::config::Options;

/// A Java pattern: the pattern as written (for `find`) and anchored at both ends (for
/// `matches`).
pub(crate) struct JavaPattern {
    pub find: Regex,
    pub whole: Regex,
}

impl JavaPattern {
    /// The pattern, or the regex engine's reason for refusing it. The pattern is
    /// checked alone first, so that anchoring cannot make a malformed one valid.
    pub fn compile(pattern: &str) -> Result<JavaPattern, String> {
        let find = Regex::new(pattern).map_err(|e| e.to_string())?;
        let whole = Regex::new(&format!(r"\A(?:{pattern})\z")).map_err(|e| e.to_string())?;
        Ok(JavaPattern { find, whole })
    }

    pub fn matches(&self, text: &str) -> bool {
        self.whole.is_match(text)
    }
}

/// A piece of a parsed Java replacement string.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Group(usize),
}

/// Java's `Matcher.appendReplacement` syntax, resolved against the pattern's groups.
fn parse_replacement(replacement: &str, pattern: &Regex) -> Result<Vec<Piece>, String> {
    let group_count = pattern.captures_len() - 1;
    let chars: Vec<char> = replacement.chars().collect();
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut cursor = 0;
    while cursor < chars.len() {
        match chars[cursor] {
            '\\' => {
                cursor += 1;
                let Some(&escaped) = chars.get(cursor) else {
                    return Err("character to be escaped is missing".into());
                };
                literal.push(escaped);
                cursor += 1;
            }
            '$' => {
                cursor += 1;
                let Some(&next) = chars.get(cursor) else {
                    return Err("Illegal group reference: group index is missing".into());
                };
                let group = if next == '{' {
                    cursor += 1;
                    let start = cursor;
                    while cursor < chars.len() && chars[cursor].is_ascii_alphanumeric() {
                        cursor += 1;
                    }
                    let name: String = chars[start..cursor].iter().collect();
                    if name.is_empty() {
                        return Err("named capturing group has 0 length name".into());
                    }
                    if chars.get(cursor) != Some(&'}') {
                        return Err("named capturing group is missing trailing '}'".into());
                    }
                    if name.starts_with(|c: char| c.is_ascii_digit()) {
                        return Err(format!(
                            "capturing group name {{{name}}} starts with digit character"
                        ));
                    }
                    cursor += 1;
                    pattern
                        .capture_names()
                        .position(|n| n == Some(name.as_str()))
                        .ok_or_else(|| format!("No group with name {{{name}}}"))?
                } else {
                    let Some(first) = next.to_digit(10) else {
                        return Err("Illegal group reference".into());
                    };
                    cursor += 1;
                    let mut group = first as usize;
                    while let Some(digit) = chars.get(cursor).and_then(|c| c.to_digit(10)) {
                        let longer = group * 10 + digit as usize;
                        if longer > group_count {
                            break;
                        }
                        group = longer;
                        cursor += 1;
                    }
                    if group > group_count {
                        return Err(format!("No group {group}"));
                    }
                    group
                };
                if !literal.is_empty() {
                    pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                }
                pieces.push(Piece::Group(group));
            }
            other => {
                literal.push(other);
                cursor += 1;
            }
        }
    }
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    Ok(pieces)
}

pub(crate) struct RegexRouter {
    pattern: JavaPattern,
    /// The parsed replacement, or Java's reason for refusing it.
    replacement: Result<Vec<Piece>, String>,
}

pub(crate) fn regex_router(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(RegexRouter::configure(options)?))
}

impl RegexRouter {
    fn configure(options: &mut Options) -> Result<RegexRouter, ConfigError> {
        let regex = options.required_string("regex");
        let replacement = options.required_string("replacement");
        let pattern = match JavaPattern::compile(&regex) {
            Ok(pattern) => Some(pattern),
            Err(reason) => {
                if options.raw("regex").is_some() {
                    options.invalid("regex", &regex, &format!("Invalid regex: {reason}"));
                }
                None
            }
        };
        options.check()?;
        let pattern = pattern.expect("an invalid regex is a config error");
        let replacement = parse_replacement(&replacement, &pattern.find);
        Ok(RegexRouter {
            pattern,
            replacement,
        })
    }
}

impl Transform for RegexRouter {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        if !self.pattern.matches(&record.topic) {
            return Ok(Some(record));
        }
        let pieces = self
            .replacement
            .as_ref()
            .map_err(|reason| DataError(reason.clone()))?;
        let Some(captures) = self.pattern.find.captures(&record.topic) else {
            return Ok(Some(record));
        };
        let whole = captures.get(0).expect("group 0 is the match");
        let mut topic = String::with_capacity(record.topic.len());
        topic.push_str(&record.topic[..whole.start()]);
        for piece in pieces {
            match piece {
                Piece::Literal(text) => topic.push_str(text),
                Piece::Group(group) => {
                    if let Some(m) = captures.get(*group) {
                        topic.push_str(m.as_str());
                    }
                }
            }
        }
        topic.push_str(&record.topic[whole.end()..]);
        record.topic = topic;
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::data::Value;

    fn route(regex: &str, replacement: &str, topic: &str) -> Result<String, DataError> {
        let router = configure(&[("regex", regex), ("replacement", replacement)], |o| {
            RegexRouter::configure(o)
        })
        .unwrap();
        Ok(router.apply(sink(topic, None, Value::Null))?.unwrap().topic)
    }

    /// Kafka's `RegexRouterTest`, then Java replacement syntax.
    #[test]
    fn topics_are_rewritten_as_java_replace_first_does() {
        let cases = [
            ("foo", "bar", "foo", "bar"),
            ("foo", "bar", "orig", "orig"),
            ("(.*)", "$1", "orig", "orig"),
            ("(.*)", "prefix-$1", "orig", "prefix-orig"),
            ("(.*)", "$1-suffix", "orig", "orig-suffix"),
            (
                "(.*)-(\\d\\d\\d\\d\\d\\d\\d\\d)",
                "$1",
                "index-20160117",
                "index",
            ),
            ("(.*)-(.*)", "$2.$1", "a-b", "b.a"),
            (
                "(?<db>[a-z]+)\\.(?<table>[a-z]+)",
                "${table}_${db}",
                "inv.items",
                "items_inv",
            ),
            ("(a)(b)", "$12", "ab", "a2"),
            ("(a)|(b)", "[$2]", "a", "[]"),
            ("(.*)", "\\$1 costs \\\\", "x", "$1 costs \\"),
            // `matches` decides, `replaceFirst` then replaces the first match only.
            ("a*?", "X", "aaa", "Xaaa"),
        ];
        for (regex, replacement, topic, expected) in cases {
            assert_eq!(
                route(regex, replacement, topic).unwrap(),
                expected,
                "{regex} {replacement}"
            );
        }
    }

    #[test]
    fn a_bad_replacement_fails_only_records_that_match() {
        let cases = [
            ("(.*)", "$2", "No group 2"),
            (
                "(.*)",
                "$",
                "Illegal group reference: group index is missing",
            ),
            ("(.*)", "$x", "Illegal group reference"),
            ("(.*)", "\\", "character to be escaped is missing"),
            ("(.*)", "${nope}", "No group with name {nope}"),
            ("(.*)", "${}", "named capturing group has 0 length name"),
            (
                "(.*)",
                "${ab",
                "named capturing group is missing trailing '}'",
            ),
        ];
        for (regex, replacement, message) in cases {
            assert_eq!(route(regex, replacement, "t").unwrap_err().0, message);
        }
        assert_eq!(route("x(.*)", "$2", "t").unwrap(), "t");
    }

    #[test]
    fn config_errors() {
        let errors = |config: &[(&str, &str)]| option_errors(config, RegexRouter::configure);
        assert_eq!(
            errors(&[("regex", "a")]),
            one_error(
                "replacement",
                "Missing required configuration \"transforms.t.replacement\" which has no default value."
            )
        );
        let invalid = errors(&[("regex", "a)(b"), ("replacement", "x")]);
        assert_eq!(invalid.len(), 1);
        assert_eq!(invalid[0].0, "transforms.t.regex");
        assert!(
            invalid[0]
                .1
                .starts_with("Invalid value a)(b for configuration regex: Invalid regex: "),
            "{}",
            invalid[0].1
        );
    }
}
