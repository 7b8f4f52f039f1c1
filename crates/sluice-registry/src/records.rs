//! The records of the `_schemas` topic, in Confluent Schema Registry's format, so a topic
//! written by either registry can be read by the other.
//!
//! Keys and values are JSON. The key says what a record is about (`keytype`): SCHEMA (one
//! version of a subject; a null value deletes it permanently), CONFIG and MODE (global when
//! `subject` is null), DELETE_SUBJECT (soft-deletes a subject's versions up to `version`),
//! CLEAR_SUBJECT (drops a subject's soft-deleted versions) and NOOP (written by a new
//! leader to learn where the log ends). The topic is compacted, so the latest value per key
//! is the state; replaying the whole topic in order rebuilds the registry.

use serde::{Deserialize, Serialize};

use crate::schema::SchemaType;

/// A `_schemas` key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "keytype")]
pub enum Key {
    #[serde(rename = "SCHEMA")]
    Schema {
        subject: String,
        version: i32,
        #[serde(default = "one")]
        magic: i32,
    },
    #[serde(rename = "CONFIG")]
    Config {
        #[serde(default)]
        subject: Option<String>,
        #[serde(default)]
        magic: i32,
    },
    #[serde(rename = "MODE")]
    Mode {
        #[serde(default)]
        subject: Option<String>,
        #[serde(default)]
        magic: i32,
    },
    #[serde(rename = "DELETE_SUBJECT")]
    DeleteSubject {
        subject: String,
        #[serde(default)]
        magic: i32,
    },
    #[serde(rename = "CLEAR_SUBJECT")]
    ClearSubject {
        subject: String,
        #[serde(default)]
        magic: i32,
    },
    #[serde(rename = "NOOP")]
    Noop {
        #[serde(default)]
        magic: i32,
    },
}

fn one() -> i32 {
    1
}

impl Key {
    pub fn schema(subject: &str, version: i32) -> Key {
        Key::Schema {
            subject: subject.to_string(),
            version,
            magic: 1,
        }
    }

    pub fn config(subject: Option<&str>) -> Key {
        Key::Config {
            subject: subject.map(str::to_string),
            magic: 0,
        }
    }

    pub fn mode(subject: Option<&str>) -> Key {
        Key::Mode {
            subject: subject.map(str::to_string),
            magic: 0,
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a key always serializes")
    }
}

/// A reference from a schema to another subject's version.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SchemaReference {
    pub name: String,
    pub subject: String,
    pub version: i32,
}

/// The value of a SCHEMA key: one version of a subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemaValue {
    pub subject: String,
    pub version: i32,
    pub id: i32,
    /// Absent for Avro, as Confluent writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_type: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<SchemaReference>,
    pub schema: String,
    #[serde(default)]
    pub deleted: bool,
}

impl SchemaValue {
    /// The schema type; an unknown name is kept out of the registry's state by the reader.
    pub fn schema_type(&self) -> Option<SchemaType> {
        match &self.schema_type {
            None => Some(SchemaType::Avro),
            Some(name) => SchemaType::parse(name),
        }
    }
}

/// The value of a CONFIG key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigValue {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalize: Option<bool>,
}

/// The value of a MODE key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeValue {
    pub mode: String,
}

/// The value of a DELETE_SUBJECT key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteSubjectValue {
    pub subject: String,
    pub version: i32,
}

/// The value of a CLEAR_SUBJECT key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClearSubjectValue {
    pub subject: String,
}

/// A decoded `_schemas` record. `None` values are tombstones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Schema {
        subject: String,
        version: i32,
        value: Option<SchemaValue>,
    },
    Config {
        subject: Option<String>,
        value: Option<ConfigValue>,
    },
    Mode {
        subject: Option<String>,
        value: Option<ModeValue>,
    },
    DeleteSubject(DeleteSubjectValue),
    ClearSubject(ClearSubjectValue),
    Noop,
}

/// Why a `_schemas` record was skipped by the reader.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("key is not a _schemas key: {0}")]
    Key(serde_json::Error),
    #[error("value does not match its key: {0}")]
    Value(serde_json::Error),
    #[error("record without a key")]
    NoKey,
}

impl Record {
    /// Decodes a record of the `_schemas` topic.
    pub fn decode(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Record, DecodeError> {
        let key: Key =
            serde_json::from_slice(key.ok_or(DecodeError::NoKey)?).map_err(DecodeError::Key)?;
        fn parse<T: serde::de::DeserializeOwned>(
            value: Option<&[u8]>,
        ) -> Result<Option<T>, DecodeError> {
            match value {
                None => Ok(None),
                Some(bytes) => serde_json::from_slice(bytes)
                    .map(Some)
                    .map_err(DecodeError::Value),
            }
        }
        Ok(match key {
            Key::Schema {
                subject, version, ..
            } => Record::Schema {
                subject,
                version,
                value: parse(value)?,
            },
            Key::Config { subject, .. } => Record::Config {
                subject,
                value: parse(value)?,
            },
            Key::Mode { subject, .. } => Record::Mode {
                subject,
                value: parse(value)?,
            },
            Key::DeleteSubject { subject, .. } => match parse(value)? {
                Some(value) => Record::DeleteSubject(value),
                None => Record::DeleteSubject(DeleteSubjectValue {
                    subject,
                    version: i32::MAX,
                }),
            },
            Key::ClearSubject { subject, .. } => {
                Record::ClearSubject(parse(value)?.unwrap_or(ClearSubjectValue { subject }))
            }
            Key::Noop { .. } => Record::Noop,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_written_as_confluent_writes_them() {
        assert_eq!(
            String::from_utf8(Key::schema("orders-value", 2).to_bytes()).unwrap(),
            r#"{"keytype":"SCHEMA","subject":"orders-value","version":2,"magic":1}"#
        );
        assert_eq!(
            String::from_utf8(Key::config(None).to_bytes()).unwrap(),
            r#"{"keytype":"CONFIG","subject":null,"magic":0}"#
        );
        assert_eq!(
            String::from_utf8(Key::mode(Some("s")).to_bytes()).unwrap(),
            r#"{"keytype":"MODE","subject":"s","magic":0}"#
        );
    }

    #[test]
    fn confluent_records_decode() {
        let cases: &[(&str, Option<&str>, Record)] = &[
            (
                r#"{"keytype":"SCHEMA","subject":"t-value","version":1,"magic":1}"#,
                Some(
                    r#"{"subject":"t-value","version":1,"id":21,"schema":"\"string\"","deleted":false}"#,
                ),
                Record::Schema {
                    subject: "t-value".into(),
                    version: 1,
                    value: Some(SchemaValue {
                        subject: "t-value".into(),
                        version: 1,
                        id: 21,
                        schema_type: None,
                        references: vec![],
                        schema: "\"string\"".into(),
                        deleted: false,
                    }),
                },
            ),
            (
                r#"{"keytype":"SCHEMA","subject":"t-value","version":1,"magic":1}"#,
                None,
                Record::Schema {
                    subject: "t-value".into(),
                    version: 1,
                    value: None,
                },
            ),
            (
                r#"{"keytype":"CONFIG","subject":null,"magic":0}"#,
                Some(r#"{"compatibilityLevel":"FULL"}"#),
                Record::Config {
                    subject: None,
                    value: Some(ConfigValue {
                        compatibility_level: Some("FULL".into()),
                        normalize: None,
                    }),
                },
            ),
            (
                r#"{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}"#,
                Some(r#"{"subject":"s","version":3}"#),
                Record::DeleteSubject(DeleteSubjectValue {
                    subject: "s".into(),
                    version: 3,
                }),
            ),
            (r#"{"keytype":"NOOP","magic":0}"#, None, Record::Noop),
        ];
        for (key, value, want) in cases {
            let got = Record::decode(Some(key.as_bytes()), value.map(str::as_bytes)).unwrap();
            assert_eq!(&got, want, "{key}");
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for (key, value) in [
            (Some(&b"not json"[..]), None),
            (Some(&br#"{"keytype":"WHAT"}"#[..]), None),
            (
                Some(&br#"{"keytype":"SCHEMA","subject":"s","version":1}"#[..]),
                Some(&b"[1]"[..]),
            ),
            (None, Some(&b"{}"[..])),
        ] {
            assert!(Record::decode(key, value).is_err());
        }
    }
}
