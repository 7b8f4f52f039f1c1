//! The registry's state: what replaying `_schemas` in order leaves (Confluent's lookup
//! cache). Every instance holds a full copy, built by its reader of the topic; only
//! the leader writes, and it writes through the topic, never to this state directly, so
//! a follower and the leader agree once they have read the same offset.
//!
//! Schema ids are global: an id names one schema text of one type with one list of
//! references, used by any number of subject versions. Ids are never reused, even after
//! every version using one is permanently deleted.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::records::{ConfigValue, Record, SchemaReference, SchemaValue};
use crate::schema::SchemaType;

/// The schema an id names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdEntry {
    pub schema_type: SchemaType,
    pub schema: String,
    pub references: Vec<SchemaReference>,
    /// The subject versions that use it.
    pub used_by: BTreeSet<(String, i32)>,
}

type ContentKey = (SchemaType, String, Vec<SchemaReference>);

#[derive(Debug, Default)]
pub struct Store {
    subjects: BTreeMap<String, BTreeMap<i32, SchemaValue>>,
    ids: BTreeMap<i32, IdEntry>,
    /// Content → id, so registering a known schema is a hash lookup. Two ids with the
    /// same content (an import can make them) keep the first one written.
    by_content: HashMap<ContentKey, i32>,
    /// Global config under `None`.
    configs: BTreeMap<Option<String>, ConfigValue>,
    /// Global mode under `None`.
    modes: BTreeMap<Option<String>, String>,
    max_id: i32,
    /// Records the reader could not apply (bad JSON, unknown schema type), for metrics and
    /// logs; they change nothing.
    pub skipped_records: u64,
}

impl Store {
    pub fn new() -> Store {
        Store::default()
    }

    /// Applies one record of `_schemas`, in log order.
    pub fn apply(&mut self, record: Record) {
        match record {
            Record::Schema {
                subject,
                version,
                value,
            } => {
                self.remove_version(&subject, version);
                if let Some(value) = value {
                    let Some(schema_type) = value.schema_type() else {
                        self.skipped_records += 1;
                        return;
                    };
                    self.max_id = self.max_id.max(value.id);
                    let by_content = &mut self.by_content;
                    let entry = self.ids.entry(value.id).or_insert_with(|| {
                        by_content
                            .entry((schema_type, value.schema.clone(), value.references.clone()))
                            .or_insert(value.id);
                        IdEntry {
                            schema_type,
                            schema: value.schema.clone(),
                            references: value.references.clone(),
                            used_by: BTreeSet::new(),
                        }
                    });
                    entry.used_by.insert((subject.clone(), version));
                    self.subjects
                        .entry(subject)
                        .or_default()
                        .insert(version, value);
                }
            }
            Record::Config { subject, value } => match value {
                Some(value) => {
                    self.configs.insert(subject, value);
                }
                None => {
                    self.configs.remove(&subject);
                }
            },
            Record::Mode { subject, value } => match value {
                Some(value) => {
                    self.modes.insert(subject, value.mode);
                }
                None => {
                    self.modes.remove(&subject);
                }
            },
            Record::DeleteSubject(delete) => {
                if let Some(versions) = self.subjects.get_mut(&delete.subject) {
                    for (_, value) in versions.range_mut(..=delete.version) {
                        value.deleted = true;
                    }
                }
            }
            Record::ClearSubject(clear) => {
                let deleted: Vec<i32> = self
                    .subjects
                    .get(&clear.subject)
                    .map(|versions| {
                        versions
                            .values()
                            .filter(|value| value.deleted)
                            .map(|value| value.version)
                            .collect()
                    })
                    .unwrap_or_default();
                for version in deleted {
                    self.remove_version(&clear.subject, version);
                }
            }
            Record::Noop => {}
        }
    }

    fn remove_version(&mut self, subject: &str, version: i32) {
        let Some(versions) = self.subjects.get_mut(subject) else {
            return;
        };
        let Some(old) = versions.remove(&version) else {
            return;
        };
        if versions.is_empty() {
            self.subjects.remove(subject);
        }
        if let Some(entry) = self.ids.get_mut(&old.id) {
            entry.used_by.remove(&(subject.to_string(), version));
            if entry.used_by.is_empty() {
                let key = (
                    entry.schema_type,
                    entry.schema.clone(),
                    entry.references.clone(),
                );
                self.ids.remove(&old.id);
                if self.by_content.get(&key) == Some(&old.id) {
                    self.by_content.remove(&key);
                }
            }
        }
    }

    /// Subjects with at least one version (live ones only unless `deleted`), in order.
    pub fn subjects(&self, deleted: bool) -> impl Iterator<Item = (&String, bool)> {
        self.subjects.iter().filter_map(move |(subject, versions)| {
            let live = versions.values().any(|value| !value.deleted);
            (live || deleted).then_some((subject, live))
        })
    }

    /// A subject's versions, oldest first; soft-deleted ones only when `deleted`.
    pub fn versions(&self, subject: &str, deleted: bool) -> Vec<&SchemaValue> {
        self.subjects
            .get(subject)
            .map(|versions| {
                versions
                    .values()
                    .filter(|value| deleted || !value.deleted)
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn version(&self, subject: &str, version: i32) -> Option<&SchemaValue> {
        self.subjects.get(subject)?.get(&version)
    }

    /// Whether the subject has any record at all (live or soft-deleted).
    pub fn subject_exists(&self, subject: &str) -> bool {
        self.subjects.contains_key(subject)
    }

    /// The highest version number the subject ever had that is still in the log (soft
    /// deleted ones count, so a new version never takes a deleted one's number).
    pub fn max_version(&self, subject: &str) -> i32 {
        self.subjects
            .get(subject)
            .and_then(|versions| versions.keys().next_back().copied())
            .unwrap_or(0)
    }

    pub fn id(&self, id: i32) -> Option<&IdEntry> {
        self.ids.get(&id)
    }

    pub fn max_id(&self) -> i32 {
        self.max_id
    }

    /// The id of a schema with exactly this type, text and references, if any version of
    /// any subject uses one.
    pub fn find_id(
        &self,
        schema_type: SchemaType,
        schema: &str,
        references: &[SchemaReference],
    ) -> Option<i32> {
        self.by_content
            .get(&(schema_type, schema.to_string(), references.to_vec()))
            .copied()
    }

    /// The ids of the live schema versions that reference `subject` at `version`.
    pub fn referenced_by(&self, subject: &str, version: i32) -> Vec<i32> {
        let mut ids: Vec<i32> = self
            .subjects
            .values()
            .flat_map(|versions| versions.values())
            .filter(|value| {
                !value.deleted
                    && value
                        .references
                        .iter()
                        .any(|r| r.subject == subject && r.version == version)
            })
            .map(|value| value.id)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    pub fn config(&self, subject: Option<&str>) -> Option<&ConfigValue> {
        self.configs.get(&subject.map(str::to_string))
    }

    pub fn mode(&self, subject: Option<&str>) -> Option<&str> {
        self.modes
            .get(&subject.map(str::to_string))
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{ClearSubjectValue, DeleteSubjectValue, ModeValue};

    fn schema(subject: &str, version: i32, id: i32, text: &str) -> Record {
        Record::Schema {
            subject: subject.into(),
            version,
            value: Some(SchemaValue {
                subject: subject.into(),
                version,
                id,
                schema_type: None,
                references: vec![],
                schema: text.into(),
                deleted: false,
            }),
        }
    }

    #[test]
    fn replay_builds_subjects_ids_and_deletes() {
        let mut store = Store::new();
        store.apply(schema("a", 1, 1, "\"string\""));
        store.apply(schema("a", 2, 2, "\"int\""));
        store.apply(schema("b", 1, 1, "\"string\""));
        assert_eq!(store.find_id(SchemaType::Avro, "\"string\"", &[]), Some(1));
        assert_eq!(store.id(1).unwrap().used_by.len(), 2);
        assert_eq!(
            store
                .versions("a", false)
                .iter()
                .map(|v| v.version)
                .collect::<Vec<_>>(),
            [1, 2]
        );

        store.apply(Record::DeleteSubject(DeleteSubjectValue {
            subject: "a".into(),
            version: 2,
        }));
        assert!(store.versions("a", false).is_empty());
        assert_eq!(store.versions("a", true).len(), 2);
        assert_eq!(
            store
                .subjects(false)
                .map(|(s, _)| s.clone())
                .collect::<Vec<_>>(),
            ["b"]
        );
        assert_eq!(store.subjects(true).count(), 2);
        assert_eq!(store.max_version("a"), 2);

        store.apply(Record::ClearSubject(ClearSubjectValue {
            subject: "a".into(),
        }));
        assert!(!store.subject_exists("a"));
        assert!(store.id(2).is_none(), "id 2 had no other user");
        assert!(store.id(1).is_some(), "b still uses id 1");
        assert_eq!(store.max_id(), 2, "ids are never reused");

        store.apply(Record::Schema {
            subject: "b".into(),
            version: 1,
            value: None,
        });
        assert!(store.id(1).is_none());
        assert_eq!(store.max_id(), 2);
    }

    #[test]
    fn config_and_mode_records_set_and_clear() {
        let mut store = Store::new();
        store.apply(Record::Config {
            subject: Some("s".into()),
            value: Some(ConfigValue {
                compatibility_level: Some("FULL".into()),
                normalize: None,
            }),
        });
        store.apply(Record::Mode {
            subject: None,
            value: Some(ModeValue {
                mode: "READONLY".into(),
            }),
        });
        assert_eq!(
            store
                .config(Some("s"))
                .unwrap()
                .compatibility_level
                .as_deref(),
            Some("FULL")
        );
        assert!(store.config(None).is_none());
        assert_eq!(store.mode(None), Some("READONLY"));
        store.apply(Record::Config {
            subject: Some("s".into()),
            value: None,
        });
        store.apply(Record::Mode {
            subject: None,
            value: None,
        });
        assert!(store.config(Some("s")).is_none());
        assert!(store.mode(None).is_none());
    }
}
