//! One transform's or predicate's options, parsed as Connect parses them: a
//! `ConfigDef` embedded under `transforms.<alias>.` (or `predicates.<alias>.`). Every
//! error is keyed by the full key, with the text `config/validate` answers: type and
//! missing-value errors name the full key, a validator's error names the option alone
//! (Connect's embedded validators see the unprefixed name).
//!
//! Getters record an error and hand back a harmless default, so one pass over a
//! transform's options reports every bad option at once; [`Options::check`] then stops
//! the transform from being built.

use crate::{ConfigError, Props};

use super::support::java_list;

pub(crate) struct Options<'a> {
    /// `transforms.<alias>.` or `predicates.<alias>.`.
    prefix: String,
    config: &'a Props,
    errors: ConfigError,
}

impl<'a> Options<'a> {
    pub fn new(config: &'a Props, prefix: String) -> Options<'a> {
        Options {
            prefix,
            config,
            errors: ConfigError::default(),
        }
    }

    /// The full key of an option.
    pub fn key(&self, option: &str) -> String {
        format!("{}{option}", self.prefix)
    }

    /// The option's value as given, untrimmed.
    pub fn raw(&self, option: &str) -> Option<&'a str> {
        self.config.get(&self.key(option)).map(String::as_str)
    }

    /// A `STRING` option without default: trimmed, as `ConfigDef.parseType` trims.
    pub fn string(&self, option: &str) -> Option<String> {
        self.raw(option).map(|v| v.trim().to_string())
    }

    pub fn string_or(&self, option: &str, default: &str) -> String {
        self.string(option).unwrap_or_else(|| default.to_string())
    }

    /// A `STRING` option with `NO_DEFAULT_VALUE`.
    pub fn required_string(&mut self, option: &str) -> String {
        match self.string(option) {
            Some(v) => v,
            None => {
                self.missing(option);
                String::new()
            }
        }
    }

    /// A required `STRING` option with `ConfigDef.NonEmptyString`.
    pub fn required_non_empty_string(&mut self, option: &str) -> String {
        let value = self.required_string(option);
        if value.is_empty() && self.raw(option).is_some() {
            self.invalid(option, &value, "String must be non-empty");
        }
        value
    }

    /// A `LIST` option: trimmed, split on commas with the whitespace around them; an
    /// empty string is the empty list.
    pub fn list(&self, option: &str) -> Option<Vec<String>> {
        self.raw(option).map(parse_list)
    }

    pub fn list_or_empty(&self, option: &str) -> Vec<String> {
        self.list(option).unwrap_or_default()
    }

    /// A required `LIST` option with Kafka's `NonEmptyListValidator`.
    pub fn non_empty_list(&mut self, option: &str) -> Vec<String> {
        match self.list(option) {
            None => {
                self.missing(option);
                Vec::new()
            }
            Some(list) => {
                if list.is_empty() {
                    self.invalid(option, &java_list(&list), "Empty list");
                }
                list
            }
        }
    }

    /// A `BOOLEAN` option: `true` or `false` in any case, trimmed.
    pub fn boolean(&mut self, option: &str, default: bool) -> bool {
        match self.raw(option) {
            None => default,
            Some(raw) => match parse_boolean(raw) {
                Some(b) => b,
                None => {
                    self.type_error(option, raw, "Expected value to be either true or false");
                    default
                }
            },
        }
    }

    /// An `INT` option without default.
    pub fn int(&mut self, option: &str) -> Option<i32> {
        let raw = self.raw(option)?;
        match raw.trim().parse::<i32>() {
            Ok(v) => Some(v),
            Err(_) => {
                self.type_error(option, raw, "Not a number of type INT");
                None
            }
        }
    }

    /// A `STRING` option checked by `ConfigDef.ValidString.in(...)`.
    pub fn one_of(&mut self, option: &str, value: &str, valid: &[&str]) -> bool {
        if valid.contains(&value) {
            return true;
        }
        self.invalid(
            option,
            value,
            &format!("String must be one of: {}", valid.join(", ")),
        );
        false
    }

    /// A validator's error: `Invalid value V for configuration OPTION: reason`, keyed by
    /// the full key.
    pub fn invalid(&mut self, option: &str, value: &str, reason: &str) {
        let key = self.key(option);
        self.errors.push(ConfigError::new(
            key,
            format!("Invalid value {value} for configuration {option}: {reason}"),
        ));
    }

    /// A parse error, which Connect reports with the full key.
    fn type_error(&mut self, option: &str, value: &str, reason: &str) {
        let key = self.key(option);
        self.errors.push(ConfigError::invalid(&key, value, reason));
    }

    pub fn missing(&mut self, option: &str) {
        let key = self.key(option);
        self.errors.push(ConfigError::missing(&key));
    }

    /// An error in the transform's own words, keyed by one of its options.
    pub fn error(&mut self, option: &str, message: impl Into<String>) {
        let key = self.key(option);
        self.errors.push(ConfigError::new(key, message));
    }

    /// The errors so far, if any: the transform is not built.
    pub fn check(&mut self) -> Result<(), ConfigError> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(std::mem::take(&mut self.errors))
        }
    }

    /// An error found while configuring after the options parsed (Kafka's
    /// `configure` throwing a `ConfigException`), keyed by `option`.
    pub fn fail<T>(&self, option: &str, message: impl Into<String>) -> Result<T, ConfigError> {
        Err(ConfigError::new(self.key(option), message))
    }
}

/// `ConfigDef.parseType(LIST)`.
pub(crate) fn parse_list(raw: &str) -> Vec<String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Vec::new();
    }
    trimmed.split(',').map(|s| s.trim().to_string()).collect()
}

pub(crate) fn parse_boolean(raw: &str) -> Option<bool> {
    let trimmed = raw.trim();
    if trimmed.eq_ignore_ascii_case("true") {
        Some(true)
    } else if trimmed.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_as_config_def_parses_them() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            ("  ", &[]),
            ("a", &["a"]),
            (" a , b,c ", &["a", "b", "c"]),
            ("a,", &["a", ""]),
            ("a,,b", &["a", "", "b"]),
        ];
        for (raw, expected) in cases {
            assert_eq!(parse_list(raw), *expected, "{raw:?}");
        }
    }

    #[test]
    fn option_errors_carry_connect_texts_under_the_full_key() {
        let config: Props = [
            ("transforms.t.flag", "yes"),
            ("transforms.t.fields", ""),
            ("transforms.t.name", " "),
            ("transforms.t.number", "x"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let mut options = Options::new(&config, "transforms.t.".into());
        assert!(options.boolean("flag", true));
        assert!(options.non_empty_list("fields").is_empty());
        assert_eq!(options.required_non_empty_string("name"), "");
        assert_eq!(options.required_string("absent"), "");
        assert_eq!(options.int("number"), None);
        let errors = options.check().unwrap_err().errors;
        assert_eq!(
            errors,
            vec![
                (
                    "transforms.t.flag".to_string(),
                    "Invalid value yes for configuration transforms.t.flag: Expected value to be either true or false".to_string()
                ),
                (
                    "transforms.t.fields".to_string(),
                    "Invalid value [] for configuration fields: Empty list".to_string()
                ),
                (
                    "transforms.t.name".to_string(),
                    "Invalid value  for configuration name: String must be non-empty".to_string()
                ),
                (
                    "transforms.t.absent".to_string(),
                    "Missing required configuration \"transforms.t.absent\" which has no default value.".to_string()
                ),
                (
                    "transforms.t.number".to_string(),
                    "Invalid value x for configuration transforms.t.number: Not a number of type INT".to_string()
                ),
            ]
        );
    }
}
