//! Kafka Connect's internal topic records, byte for byte: what a Sluice worker and an
//! Apache Kafka Connect worker write to and read from `config.storage.topic`,
//! `offset.storage.topic` and `status.storage.topic` (`KafkaConfigBackingStore`,
//! `KafkaOffsetBackingStore`, `KafkaStatusBackingStore`; JSON through a JsonConverter
//! with schemas disabled).
//!
//! Config topic keys: `connector-<name>` (`{"properties":{...}}`), `task-<name>-<n>`
//! (`{"properties":{...}}`), `commit-<name>` (`{"tasks":N}`), `target-state-<name>`
//! (`{"state":"PAUSED","state.v2":"STOPPED"}`: `state` is what workers from before
//! KIP-875 understand), a null value deleting a connector or its target state.
//! Status topic keys: `status-connector-<name>`, `status-task-<name>-<n>` (`{"state":
//! "RUNNING","trace":null,"worker_id":"host:port","generation":5}`). Offset topic: key
//! `["<connector>",{<source partition>}]`, value the source offset object.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value as Json, json};

use crate::Props;

/// A connector's target state (`TargetState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TargetState {
    #[default]
    Started,
    Paused,
    /// KIP-875: no tasks, offsets may be altered.
    Stopped,
}

impl TargetState {
    pub fn name(self) -> &'static str {
        match self {
            TargetState::Started => "STARTED",
            TargetState::Paused => "PAUSED",
            TargetState::Stopped => "STOPPED",
        }
    }

    fn parse(name: &str) -> Option<TargetState> {
        Some(match name {
            "STARTED" => TargetState::Started,
            "PAUSED" => TargetState::Paused,
            "STOPPED" => TargetState::Stopped,
            _ => return None,
        })
    }
}

/// One config topic record, decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigRecord {
    Connector {
        name: String,
        config: Option<Props>,
    },
    Task {
        connector: String,
        task: u32,
        config: Props,
    },
    Commit {
        connector: String,
        tasks: u32,
    },
    TargetState {
        connector: String,
        state: Option<TargetState>,
    },
    /// KIP-618's task count record (`tasks-fencing-<name>`): the producers of the
    /// connector's first `count` tasks were fenced out, so tasks of its latest committed
    /// configs may start.
    TaskCount {
        connector: String,
        count: u32,
    },
    /// Records this worker does not act on (`session-key`, restart requests, keys from
    /// newer workers): kept out of the state, not an error.
    Other {
        key: String,
    },
}

fn properties(config: &Props) -> Vec<u8> {
    serde_json::to_vec(&json!({ "properties": config })).expect("a string map serializes")
}

impl ConfigRecord {
    /// The record's key and value bytes.
    pub fn encode(&self) -> (String, Option<Vec<u8>>) {
        match self {
            ConfigRecord::Connector { name, config } => {
                (format!("connector-{name}"), config.as_ref().map(properties))
            }
            ConfigRecord::Task {
                connector,
                task,
                config,
            } => (format!("task-{connector}-{task}"), Some(properties(config))),
            ConfigRecord::Commit { connector, tasks } => (
                format!("commit-{connector}"),
                Some(serde_json::to_vec(&json!({ "tasks": tasks })).expect("json")),
            ),
            ConfigRecord::TargetState { connector, state } => (
                format!("target-state-{connector}"),
                state.map(|state| {
                    // Workers from before KIP-875 know only STARTED and PAUSED.
                    let legacy = match state {
                        TargetState::Stopped => TargetState::Paused,
                        other => other,
                    };
                    serde_json::to_vec(&json!({ "state": legacy.name(), "state.v2": state.name() }))
                        .expect("json")
                }),
            ),
            ConfigRecord::TaskCount { connector, count } => (
                format!("tasks-fencing-{connector}"),
                Some(serde_json::to_vec(&json!({ "task-count": count })).expect("json")),
            ),
            ConfigRecord::Other { key } => (key.clone(), None),
        }
    }

    /// Decodes a config topic record; an unreadable value is an error naming the key.
    pub fn decode(key: &str, value: Option<&[u8]>) -> Result<ConfigRecord, String> {
        let object = |value: &[u8]| -> Result<Map<String, Json>, String> {
            match serde_json::from_slice::<Json>(value) {
                Ok(Json::Object(map)) => Ok(map),
                Ok(other) => Err(format!("{key}: expected a JSON object, found {other}")),
                Err(e) => Err(format!("{key}: {e}")),
            }
        };
        let props = |value: &[u8]| -> Result<Props, String> {
            let map = object(value)?;
            match map.get("properties") {
                Some(Json::Object(p)) => Ok(p
                    .iter()
                    .map(|(k, v)| {
                        let v = match v {
                            Json::String(s) => s.clone(),
                            Json::Null => String::new(),
                            other => other.to_string(),
                        };
                        (k.clone(), v)
                    })
                    .collect()),
                _ => Err(format!("{key}: no \"properties\" object")),
            }
        };
        if let Some(name) = key.strip_prefix("connector-") {
            return Ok(ConfigRecord::Connector {
                name: name.to_string(),
                config: value.map(props).transpose()?,
            });
        }
        if let Some(name) = key.strip_prefix("target-state-") {
            let state = match value {
                None => None,
                Some(value) => {
                    let map = object(value)?;
                    let name = map
                        .get("state.v2")
                        .or_else(|| map.get("state"))
                        .and_then(Json::as_str)
                        .ok_or_else(|| format!("{key}: no state"))?;
                    Some(
                        TargetState::parse(name)
                            .ok_or_else(|| format!("{key}: unknown target state {name}"))?,
                    )
                }
            };
            return Ok(ConfigRecord::TargetState {
                connector: name.to_string(),
                state,
            });
        }
        if let Some(name) = key.strip_prefix("commit-") {
            let Some(value) = value else {
                return Ok(ConfigRecord::Other { key: key.into() });
            };
            let tasks = object(value)?
                .get("tasks")
                .and_then(Json::as_u64)
                .ok_or_else(|| format!("{key}: no task count"))?;
            return Ok(ConfigRecord::Commit {
                connector: name.to_string(),
                tasks: u32::try_from(tasks).map_err(|e| format!("{key}: {e}"))?,
            });
        }
        if let Some(name) = key.strip_prefix("tasks-fencing-") {
            let Some(value) = value else {
                return Ok(ConfigRecord::Other { key: key.into() });
            };
            let count = object(value)?
                .get("task-count")
                .and_then(Json::as_u64)
                .ok_or_else(|| format!("{key}: no task count"))?;
            return Ok(ConfigRecord::TaskCount {
                connector: name.to_string(),
                count: u32::try_from(count).map_err(|e| format!("{key}: {e}"))?,
            });
        }
        if let Some(rest) = key.strip_prefix("task-")
            && let Some((connector, task)) = rest.rsplit_once('-')
            && let Ok(task) = task.parse::<u32>()
            && let Some(value) = value
        {
            return Ok(ConfigRecord::Task {
                connector: connector.to_string(),
                task,
                config: props(value)?,
            });
        }
        Ok(ConfigRecord::Other { key: key.into() })
    }
}

/// The connectors and tasks the config topic holds (`ClusterConfigState`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigState {
    /// The config topic offset after the last record applied.
    pub offset: i64,
    pub connectors: BTreeMap<String, Props>,
    pub target_states: BTreeMap<String, TargetState>,
    /// Committed task configs (a `commit-` record publishes the staged ones).
    pub tasks: BTreeMap<String, Vec<Props>>,
    /// The latest task count record of each connector (KIP-618): how many task producers
    /// the next round of zombie fencing fences out. Kept when a connector is deleted, as
    /// Connect keeps it, so a connector re-created under the name fences the old tasks.
    pub task_count_records: BTreeMap<String, u32>,
    /// Connectors whose latest task configs were committed after their latest task count
    /// record: their exactly-once source tasks wait for a round of zombie fencing.
    pub pending_fencing: BTreeSet<String>,
    staged: BTreeMap<String, BTreeMap<u32, Props>>,
}

impl ConfigState {
    pub fn apply(&mut self, record: ConfigRecord, offset: i64) {
        self.offset = self.offset.max(offset + 1);
        match record {
            ConfigRecord::Connector { name, config } => match config {
                Some(config) => {
                    self.connectors.insert(name, config);
                }
                None => {
                    self.connectors.remove(&name);
                    self.tasks.remove(&name);
                    self.staged.remove(&name);
                    self.target_states.remove(&name);
                }
            },
            ConfigRecord::TargetState { connector, state } => match state {
                Some(state) => {
                    self.target_states.insert(connector, state);
                }
                None => {
                    self.target_states.remove(&connector);
                }
            },
            ConfigRecord::Task {
                connector,
                task,
                config,
            } => {
                self.staged
                    .entry(connector)
                    .or_default()
                    .insert(task, config);
            }
            ConfigRecord::Commit { connector, tasks } => {
                // Fencing is pending after every commit, a dropped one included, as in
                // Connect.
                self.pending_fencing.insert(connector.clone());
                let staged = self.staged.remove(&connector).unwrap_or_default();
                let previous = self.tasks.remove(&connector).unwrap_or_default();
                // A commit publishes tasks 0..N: each from this round's staged configs,
                // else the one already committed (Connect drops an inconsistent commit;
                // a missing config here is skipped with a warning).
                let mut committed = Vec::new();
                for task in 0..tasks {
                    match staged
                        .get(&task)
                        .cloned()
                        .or_else(|| previous.get(task as usize).cloned())
                    {
                        Some(config) => committed.push(config),
                        None => {
                            tracing::warn!(
                                connector,
                                task,
                                "a commit names a task with no config; ignoring the commit"
                            );
                            self.tasks.insert(connector.clone(), previous);
                            return;
                        }
                    }
                }
                self.tasks.insert(connector, committed);
            }
            ConfigRecord::TaskCount { connector, count } => {
                self.pending_fencing.remove(&connector);
                self.task_count_records.insert(connector, count);
            }
            ConfigRecord::Other { .. } => {}
        }
    }

    pub fn target_state(&self, connector: &str) -> TargetState {
        self.target_states
            .get(connector)
            .copied()
            .unwrap_or_default()
    }
}

/// A connector's or task's state as the status topic holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// UNASSIGNED, RUNNING, PAUSED, STOPPED, FAILED, RESTARTING, DESTROYED.
    pub state: String,
    pub trace: Option<String>,
    pub worker_id: String,
    pub generation: i32,
    /// The plugin's version (KIP-891, Kafka 4.1; absent in older workers' records).
    pub version: Option<String>,
}

impl Status {
    pub fn encode(&self) -> Vec<u8> {
        let mut value = json!({
            "state": self.state,
            "trace": self.trace,
            "worker_id": self.worker_id,
            "generation": self.generation,
        });
        if let Some(version) = &self.version {
            value["version"] = json!(version);
        }
        serde_json::to_vec(&value).expect("json")
    }

    pub fn decode(value: &[u8]) -> Option<Status> {
        let map: Map<String, Json> = serde_json::from_slice(value).ok()?;
        Some(Status {
            state: map.get("state")?.as_str()?.to_string(),
            trace: map.get("trace").and_then(Json::as_str).map(str::to_string),
            worker_id: map.get("worker_id")?.as_str()?.to_string(),
            generation: map.get("generation").and_then(Json::as_i64).unwrap_or(0) as i32,
            version: map
                .get("version")
                .and_then(Json::as_str)
                .map(str::to_string),
        })
    }
}

/// A status topic key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum StatusKey {
    Connector(String),
    Task(String, u32),
}

impl StatusKey {
    pub fn encode(&self) -> String {
        match self {
            StatusKey::Connector(name) => format!("status-connector-{name}"),
            StatusKey::Task(name, task) => format!("status-task-{name}-{task}"),
        }
    }

    pub fn decode(key: &str) -> Option<StatusKey> {
        if let Some(name) = key.strip_prefix("status-connector-") {
            return Some(StatusKey::Connector(name.to_string()));
        }
        let rest = key.strip_prefix("status-task-")?;
        let (name, task) = rest.rsplit_once('-')?;
        Some(StatusKey::Task(name.to_string(), task.parse().ok()?))
    }
}

/// KIP-558: a topic a connector's task produced to or consumed from, in the status topic
/// under `topic-<topic>-connector-<connector>`, valued `{"topic":{"name","connector",
/// "task","discoverTimestamp"}}` (Connect's `TOPIC_STATUS` struct, schemaless JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicStatus {
    pub topic: String,
    pub connector: String,
    pub task: i32,
    pub discover_timestamp: i64,
}

impl TopicStatus {
    pub const PREFIX: &str = "topic-";

    pub fn key(topic: &str, connector: &str) -> String {
        format!("topic-{topic}-connector-{connector}")
    }

    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(&json!({"topic": {
            "name": self.topic,
            "connector": self.connector,
            "task": self.task,
            "discoverTimestamp": self.discover_timestamp,
        }}))
        .expect("json")
    }

    pub fn decode(value: &[u8]) -> Option<TopicStatus> {
        let v: Json = serde_json::from_slice(value).ok()?;
        let t = v.get("topic")?;
        Some(TopicStatus {
            topic: t.get("name")?.as_str()?.to_string(),
            connector: t.get("connector")?.as_str()?.to_string(),
            task: t.get("task").and_then(Json::as_i64).unwrap_or(0) as i32,
            discover_timestamp: t
                .get("discoverTimestamp")
                .and_then(Json::as_i64)
                .unwrap_or(0),
        })
    }
}

/// An offsets topic key: `["<connector>",{partition}]`, as Connect's schemaless
/// JsonConverter writes it (compact JSON, the partition's keys in the connector's
/// order).
pub fn offset_key(connector: &str, partition: &Map<String, Json>) -> Vec<u8> {
    serde_json::to_vec(&json!([connector, partition])).expect("json")
}

/// Decodes an offsets topic key; None for keys of another shape (Connect skips them).
pub fn decode_offset_key(key: &[u8]) -> Option<(String, Map<String, Json>)> {
    match serde_json::from_slice::<Json>(key).ok()? {
        Json::Array(items) if items.len() == 2 => {
            let mut items = items.into_iter();
            let connector = items.next()?.as_str()?.to_string();
            match items.next()? {
                Json::Object(partition) => Some((connector, partition)),
                _ => None,
            }
        }
        _ => None,
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
    fn config_records_are_connects_bytes() {
        let config = props(&[("connector.class", "FileStreamSource"), ("topic", "t")]);
        let (key, value) = ConfigRecord::Connector {
            name: "src".into(),
            config: Some(config.clone()),
        }
        .encode();
        assert_eq!(key, "connector-src");
        assert_eq!(
            String::from_utf8(value.unwrap()).unwrap(),
            r#"{"properties":{"connector.class":"FileStreamSource","topic":"t"}}"#
        );
        let (key, value) = ConfigRecord::TargetState {
            connector: "src".into(),
            state: Some(TargetState::Stopped),
        }
        .encode();
        assert_eq!(key, "target-state-src");
        assert_eq!(
            String::from_utf8(value.unwrap()).unwrap(),
            r#"{"state":"PAUSED","state.v2":"STOPPED"}"#
        );
        let (key, value) = ConfigRecord::Commit {
            connector: "src".into(),
            tasks: 2,
        }
        .encode();
        assert_eq!(
            (key.as_str(), value.unwrap()),
            ("commit-src", br#"{"tasks":2}"#.to_vec())
        );
        assert_eq!(
            ConfigRecord::decode("task-my-conn-1", Some(br#"{"properties":{"a":"b"}}"#)),
            Ok(ConfigRecord::Task {
                connector: "my-conn".into(),
                task: 1,
                config: props(&[("a", "b")]),
            })
        );
        // A pre-KIP-875 worker's target state.
        assert_eq!(
            ConfigRecord::decode("target-state-x", Some(br#"{"state":"PAUSED"}"#)),
            Ok(ConfigRecord::TargetState {
                connector: "x".into(),
                state: Some(TargetState::Paused),
            })
        );
        assert!(ConfigRecord::decode("connector-x", Some(b"not json")).is_err());
        assert_eq!(
            ConfigRecord::decode("session-key", Some(b"{}")),
            Ok(ConfigRecord::Other {
                key: "session-key".into()
            })
        );
    }

    #[test]
    fn a_commit_publishes_the_staged_task_configs() {
        let mut state = ConfigState::default();
        let c = |name: &str| ConfigRecord::Connector {
            name: name.into(),
            config: Some(props(&[("tasks.max", "2")])),
        };
        state.apply(c("a"), 0);
        for task in 0..2 {
            state.apply(
                ConfigRecord::Task {
                    connector: "a".into(),
                    task,
                    config: props(&[("task", &task.to_string())]),
                },
                1 + i64::from(task),
            );
        }
        assert!(!state.tasks.contains_key("a"), "staged until the commit");
        state.apply(
            ConfigRecord::Commit {
                connector: "a".into(),
                tasks: 2,
            },
            3,
        );
        assert_eq!(state.tasks["a"].len(), 2);
        assert_eq!(state.tasks["a"][1]["task"], "1");
        assert_eq!(state.offset, 4);
        // A commit naming a task with no config leaves the committed ones.
        state.apply(
            ConfigRecord::Commit {
                connector: "a".into(),
                tasks: 3,
            },
            4,
        );
        assert_eq!(state.tasks["a"].len(), 2);
        state.apply(
            ConfigRecord::Connector {
                name: "a".into(),
                config: None,
            },
            5,
        );
        assert!(state.connectors.is_empty() && state.tasks.is_empty());
    }

    #[test]
    fn task_count_records_clear_the_fencing_a_commit_makes_pending() {
        // As Apache Kafka Connect 4.1.1 writes it (KafkaConfigBackingStore's
        // TASK_COUNT_RECORD_V0).
        let record = ConfigRecord::TaskCount {
            connector: "my-conn".into(),
            count: 3,
        };
        let (key, value) = record.encode();
        assert_eq!(key, "tasks-fencing-my-conn");
        assert_eq!(value.as_deref(), Some(&br#"{"task-count":3}"#[..]));
        assert_eq!(ConfigRecord::decode(&key, value.as_deref()), Ok(record));
        assert!(ConfigRecord::decode("tasks-fencing-x", Some(b"{}")).is_err());

        let mut state = ConfigState::default();
        let task = |task| ConfigRecord::Task {
            connector: "a".into(),
            task,
            config: props(&[]),
        };
        let commit = |tasks| ConfigRecord::Commit {
            connector: "a".into(),
            tasks,
        };
        let count = |count| ConfigRecord::TaskCount {
            connector: "a".into(),
            count,
        };
        state.apply(task(0), 0);
        state.apply(commit(1), 1);
        assert!(state.pending_fencing.contains("a"));
        state.apply(count(1), 2);
        assert!(state.pending_fencing.is_empty());
        assert_eq!(state.task_count_records["a"], 1);
        // A new generation waits again, an inconsistent commit included.
        state.apply(commit(4), 3);
        assert!(state.pending_fencing.contains("a"));
        assert_eq!(state.task_count_records["a"], 1, "until the next record");
        state.apply(count(4), 4);
        // Deleting the connector keeps its record, as Connect does.
        state.apply(
            ConfigRecord::Connector {
                name: "a".into(),
                config: None,
            },
            5,
        );
        assert_eq!(state.task_count_records["a"], 4);
    }

    #[test]
    fn status_and_offset_records_are_connects_bytes() {
        let status = Status {
            state: "RUNNING".into(),
            trace: None,
            worker_id: "127.0.0.1:8083".into(),
            generation: 3,
            version: Some("4.1.1".into()),
        };
        // As an Apache Kafka Connect 4.1.1 worker wrote it.
        assert_eq!(
            String::from_utf8(status.encode()).unwrap(),
            r#"{"state":"RUNNING","trace":null,"worker_id":"127.0.0.1:8083","generation":3,"version":"4.1.1"}"#
        );
        assert_eq!(Status::decode(&status.encode()), Some(status));
        assert_eq!(
            StatusKey::decode("status-task-my-conn-0"),
            Some(StatusKey::Task("my-conn".into(), 0))
        );
        let mut partition = Map::new();
        partition.insert("filename".into(), Json::String("/tmp/in.txt".into()));
        let key = offset_key("file-source", &partition);
        assert_eq!(
            String::from_utf8(key.clone()).unwrap(),
            r#"["file-source",{"filename":"/tmp/in.txt"}]"#
        );
        assert_eq!(
            decode_offset_key(&key),
            Some(("file-source".into(), partition))
        );
        assert_eq!(decode_offset_key(b"{}"), None);
    }
}
