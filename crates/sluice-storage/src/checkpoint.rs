//! Kafka's small text files beside the segments, in its exact formats:
//!
//! - `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint` (per log dir):
//!   `0\n<count>\n<topic> <partition> <offset>\n...`
//! - `leader-epoch-checkpoint` (per partition): `0\n<count>\n<epoch> <start offset>\n...`
//! - `partition.metadata` (per partition): `version: 0\ntopic_id: <base64url uuid>\n`
//!
//! Writes are atomic: a `.tmp` file is written and fsynced, then renamed over the old
//! one and the directory fsynced, so a crash leaves the old or the new file, never a mix.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;

use crate::error::{IoContext, Result, StorageError};

const VERSION: &str = "0";

/// Writes `contents` to `path` atomically and durably.
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    {
        let mut file = File::create(&temporary).at(&temporary)?;
        file.write_all(contents).at(&temporary)?;
        file.sync_all().at(&temporary)?;
    }
    std::fs::rename(&temporary, path).at(path)?;
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Makes a directory's entries (created, renamed, deleted files) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

fn corrupt(path: &Path, reason: impl Into<String>) -> StorageError {
    StorageError::Corrupt {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Reads a versioned checkpoint of whitespace-separated lines with `fields` each.
/// A missing file reads as empty.
fn read_lines(path: &Path, fields: usize) -> Result<Vec<Vec<String>>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) if error.kind() == std::io::ErrorKind::InvalidData => {
            return Err(corrupt(path, "not UTF-8 text"));
        }
        Err(source) => {
            return Err(StorageError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut lines = text.lines();
    match lines.next() {
        Some(VERSION) => {}
        other => return Err(corrupt(path, format!("unsupported version line {other:?}"))),
    }
    let count: usize = lines
        .next()
        .and_then(|line| line.trim().parse().ok())
        .ok_or_else(|| corrupt(path, "missing or malformed entry count"))?;
    let entries: Vec<Vec<String>> = lines
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.split_whitespace().map(str::to_string).collect())
        .collect();
    if entries.len() != count {
        return Err(corrupt(
            path,
            format!("header says {count} entries, file has {}", entries.len()),
        ));
    }
    if let Some(bad) = entries.iter().find(|entry| entry.len() != fields) {
        return Err(corrupt(path, format!("malformed line {:?}", bad.join(" "))));
    }
    Ok(entries)
}

fn parse<T: std::str::FromStr>(path: &Path, text: &str) -> Result<T> {
    text.parse()
        .map_err(|_| corrupt(path, format!("malformed number {text:?}")))
}

/// A per-log-dir map of partition → offset (`recovery-point-offset-checkpoint`,
/// `log-start-offset-checkpoint`).
pub fn read_offset_checkpoint(path: &Path) -> Result<Vec<(String, i32, i64)>> {
    read_lines(path, 3)?
        .into_iter()
        .map(|fields| {
            Ok((
                fields[0].clone(),
                parse(path, &fields[1])?,
                parse(path, &fields[2])?,
            ))
        })
        .collect()
}

pub fn write_offset_checkpoint(path: &Path, entries: &[(String, i32, i64)]) -> Result<()> {
    let mut text = format!("{VERSION}\n{}\n", entries.len());
    for (topic, partition, offset) in entries {
        text.push_str(&format!("{topic} {partition} {offset}\n"));
    }
    write_atomically(path, text.as_bytes())
}

/// The `leader-epoch-checkpoint` of a partition: (epoch, start offset) pairs.
pub fn read_leader_epoch_checkpoint(path: &Path) -> Result<Vec<(i32, i64)>> {
    read_lines(path, 2)?
        .into_iter()
        .map(|fields| Ok((parse(path, &fields[0])?, parse(path, &fields[1])?)))
        .collect()
}

pub fn write_leader_epoch_checkpoint(path: &Path, entries: &[(i32, i64)]) -> Result<()> {
    let mut text = format!("{VERSION}\n{}\n", entries.len());
    for (epoch, offset) in entries {
        text.push_str(&format!("{epoch} {offset}\n"));
    }
    write_atomically(path, text.as_bytes())
}

/// A topic id (Kafka's `Uuid`), shown as Kafka shows it: URL-safe base64 without padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TopicId(pub [u8; 16]);

impl TopicId {
    pub fn to_base64(self) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(self.0)
    }

    pub fn from_base64(text: &str) -> Option<TopicId> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .ok()?;
        Some(TopicId(bytes.try_into().ok()?))
    }
}

impl std::fmt::Display for TopicId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_base64())
    }
}

/// Reads `partition.metadata`; `None` when the file does not exist.
pub fn read_partition_metadata(path: &Path) -> Result<Option<TopicId>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(StorageError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut version = None;
    let mut topic_id = None;
    for line in text.lines() {
        match line.split_once(':') {
            Some(("version", value)) => version = Some(value.trim().to_string()),
            Some(("topic_id", value)) => topic_id = Some(value.trim().to_string()),
            _ if line.trim().is_empty() => {}
            _ => return Err(corrupt(path, format!("unexpected line {line:?}"))),
        }
    }
    if version.as_deref() != Some(VERSION) {
        return Err(corrupt(path, format!("unsupported version {version:?}")));
    }
    let topic_id = topic_id.ok_or_else(|| corrupt(path, "no topic_id line"))?;
    TopicId::from_base64(&topic_id)
        .map(Some)
        .ok_or_else(|| corrupt(path, format!("malformed topic id {topic_id:?}")))
}

pub fn write_partition_metadata(path: &Path, topic_id: TopicId) -> Result<()> {
    let text = format!("version: {VERSION}\ntopic_id: {topic_id}\n");
    write_atomically(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_match_kafka_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recovery-point-offset-checkpoint");
        let entries = vec![("orders".to_string(), 0, 42), ("orders".to_string(), 3, 7)];
        write_offset_checkpoint(&path, &entries).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "0\n2\norders 0 42\norders 3 7\n"
        );
        assert_eq!(read_offset_checkpoint(&path).unwrap(), entries);

        let path = dir.path().join("leader-epoch-checkpoint");
        write_leader_epoch_checkpoint(&path, &[(0, 0), (3, 150)]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "0\n2\n0 0\n3 150\n"
        );
        assert_eq!(
            read_leader_epoch_checkpoint(&path).unwrap(),
            vec![(0, 0), (3, 150)]
        );

        let path = dir.path().join("partition.metadata");
        // Kafka's own example id from a partition.metadata file.
        let id = TopicId::from_base64("q8wWXsUgTbG3ECdrqOGGcw").unwrap();
        write_partition_metadata(&path, id).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "version: 0\ntopic_id: q8wWXsUgTbG3ECdrqOGGcw\n"
        );
        assert_eq!(read_partition_metadata(&path).unwrap(), Some(id));
    }

    #[test]
    fn malformed_files_are_typed_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint");
        for text in [
            "",
            "1\n0\n",
            "0\n2\na 0 1\n",
            "0\n1\na zero 1\n",
            "0\n1\na 0\n",
        ] {
            std::fs::write(&path, text).unwrap();
            assert!(
                matches!(
                    read_offset_checkpoint(&path),
                    Err(StorageError::Corrupt { .. })
                ),
                "{text:?}"
            );
        }
        assert!(
            read_offset_checkpoint(&dir.path().join("missing"))
                .unwrap()
                .is_empty()
        );
    }
}
