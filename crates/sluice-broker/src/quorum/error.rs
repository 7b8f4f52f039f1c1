//! Why the metadata quorum could not start on this node.

use std::path::PathBuf;

/// A failure to open the metadata quorum's stores or to start Raft on them. Each variant
/// is a different action for the operator: `Io` is the disk (space, permissions),
/// `Corrupt` is data on disk this version cannot read (restore it, or format the node
/// again and let it catch up from the quorum), `Config` is the configuration, `Raft` is
/// the Raft library refusing what it was given.
#[derive(Debug, thiserror::Error)]
pub enum QuorumStartError {
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} cannot be read: {reason}", path.display())]
    Corrupt { path: PathBuf, reason: String },
    #[error("{0}")]
    Config(String),
    #[error("Raft did not start: {0}")]
    Raft(String),
}

impl QuorumStartError {
    /// An error of the partition log that holds the metadata log, by its kind.
    pub(crate) fn from_log(path: PathBuf, error: sluice_storage::StorageError) -> Self {
        match error {
            sluice_storage::StorageError::Io { path, source } => Self::Io { path, source },
            sluice_storage::StorageError::Corrupt { path, reason } => {
                Self::Corrupt { path, reason }
            }
            other => Self::Corrupt {
                path,
                reason: other.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sluice_metadata::METADATA_LOG_DIR;

    use super::QuorumStartError;
    use crate::quorum::{LogStore, StateMachine};

    fn on_apply() -> crate::quorum::OnApply {
        Arc::new(|_| {})
    }

    #[test]
    fn a_quorum_state_file_that_does_not_decode_is_corrupt_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let log_dir = dir.path().join(METADATA_LOG_DIR);
        std::fs::create_dir_all(&log_dir).unwrap();
        std::fs::write(log_dir.join("quorum-state"), b"{\"vote\": ").unwrap();
        match LogStore::open(dir.path(), true) {
            Err(QuorumStartError::Corrupt { path, .. }) => {
                assert_eq!(path, log_dir.join("quorum-state"))
            }
            Err(other) => panic!("not Corrupt: {other}"),
            Ok(_) => panic!("a torn quorum-state opened"),
        }
    }

    #[test]
    fn a_snapshot_that_does_not_decode_is_corrupt_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let log_dir = dir.path().join(METADATA_LOG_DIR);
        std::fs::create_dir_all(&log_dir).unwrap();
        std::fs::write(log_dir.join("quorum-snapshot.json"), b"not json").unwrap();
        let error = StateMachine::open(dir.path(), on_apply())
            .err()
            .expect("a bad snapshot opened");
        assert!(
            matches!(&error, QuorumStartError::Corrupt { path, .. } if *path == log_dir.join("quorum-snapshot.json")),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .contains("quorum-snapshot.json cannot be read")
        );
    }

    #[test]
    fn a_metadata_directory_that_cannot_be_created_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the metadata log's directory must be.
        std::fs::write(dir.path().join(METADATA_LOG_DIR), b"").unwrap();
        let error = StateMachine::open(dir.path(), on_apply())
            .err()
            .expect("opened over a file");
        assert!(matches!(error, QuorumStartError::Io { .. }), "{error:?}");
        let error = LogStore::open(dir.path(), true)
            .err()
            .expect("opened over a file");
        assert!(matches!(error, QuorumStartError::Io { .. }), "{error:?}");
    }

    #[test]
    fn a_node_reports_it_as_the_quorum_not_a_listener() {
        let error = crate::node::NodeError::from(QuorumStartError::Config("x".into()));
        assert_eq!(error.to_string(), "metadata quorum: x");
    }
}
