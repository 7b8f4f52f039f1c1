//! Checkpoints in object storage (S3 and anything else `object_store` speaks): Flink's
//! `FileSystemCheckpointStorage` on an `s3://` path.
//!
//! Same layout and commit protocol as `DirectoryCheckpointStorage`, one object per file:
//! `<prefix>/chk-N/state.json` (every node's snapshot), then `<prefix>/chk-N/_metadata`,
//! written last. An object PUT is atomic (the object is wholly there or not at all), so the
//! metadata PUT is the commit point, as the rename is on a local disk: a `chk-N/` without
//! `_metadata` (a crash between the two PUTs) is ignored by `latest` and removed by the
//! next `store`. The metadata names the checkpoint id and the state object's length, both
//! checked on read. The newest `retained_checkpoints` completed checkpoints are kept.
//! Deleting a checkpoint (retention, or a retried id) removes `_metadata` first, so a
//! half-deleted checkpoint is never taken for a completed one.
//!
//! What this is not: a concurrent-writer protocol. As in Flink, one job writes its
//! checkpoint prefix; two jobs sharing a prefix would delete each other's checkpoints.
//!
//! Threading: `CheckpointStorage` is synchronous and `object_store` is async, so each
//! storage owns a one-worker tokio runtime. Every call is spawned onto that runtime and the
//! caller waits on a `std::sync::mpsc` channel, never with `Runtime::block_on` (which
//! panics on a thread already inside a runtime, e.g. a `#[tokio::main]` program) nor a
//! tokio `blocking_recv` (which panics there too). So the storage is safe to call from any
//! thread, but it does block the calling thread for the duration of the request: from async
//! code call it inside `spawn_blocking`. The runtime is shut down in the background when the
//! last clone is dropped, which is also allowed inside an async context.
//!
//! Cost: a `store` is 2 PUTs, 1 LIST of the prefix, 1 HEAD per listed checkpoint
//! (retention + abandoned attempts, so about `retained_checkpoints`), and per deleted
//! checkpoint 1 LIST and about 2 DELETEs; a `latest` is 1 LIST and 2 GETs. The
//! thread hand-off per request costs microseconds, noise beside a network round trip.
//! Every request is bounded by `operation_timeout` (`object_store`'s own retries included).
//!
//! URLs (`from_url`): `s3://bucket/prefix` (also `s3a://`) with the usual `AWS_*`
//! environment, then explicit options (`endpoint`, `allow_http`, `region`, ... as
//! `object_store`'s `AmazonS3ConfigKey` spells them) for local S3-compatible servers;
//! `gs://bucket/prefix` (Google Cloud Storage: the `GOOGLE_*` environment, then options as
//! `GoogleConfigKey` spells them, e.g. `service_account_key`); `az://container/prefix`
//! (also `azure://`; Azure Blob Storage: the `AZURE_*` environment, then options as
//! `AzureConfigKey` spells them, e.g. `account_name`, `access_key`, `use_emulator`); and
//! `memory://` for tests. The S3 path is tested against a local server (moto); GCS and
//! Azure go through the same `ObjectStore` trait, their URLs and options are tested for
//! how they are read, not against a service. `file://` is refused: the crate builds `object_store` without its
//! `fs` feature, and `DirectoryCheckpointStorage` writes the same layout to a local
//! directory with fsync and an atomic rename, which is what a local path needs anyway.

use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use ::object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use ::object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use ::object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use ::object_store::memory::InMemory;
use ::object_store::path::Path;
use ::object_store::{ListResult, ObjectStore, PutPayload};
use bytes::Bytes;

use super::storage::Metadata;
use super::{CheckpointStorage, CompletedCheckpoint, METADATA_FILE_NAME};
use crate::error::StreamError;

/// The object holding a checkpoint's snapshot, beside `_metadata` (the same name as the
/// directory storage's state file, so both layouts read alike).
pub const STATE_OBJECT_NAME: &str = "state.json";
const CHECKPOINT_PREFIX: &str = "chk-";
/// How long one object-store request (with its retries) may take before `store` or
/// `latest` fails, unless `with_operation_timeout` says otherwise.
const OPERATION_TIMEOUT_DEFAULT: Duration = Duration::from_secs(60);

/// The storage's private runtime; shut down without blocking when the last clone goes, as
/// dropping a `Runtime` normally blocks and panics inside an async context.
#[derive(Debug)]
struct IoRuntime(Option<tokio::runtime::Runtime>);

impl Drop for IoRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Checkpoints as `chk-N/` prefixes under a prefix of an object store. Clones share the
/// store and the runtime.
#[derive(Debug, Clone)]
pub struct ObjectStoreCheckpointStorage {
    store: Arc<dyn ObjectStore>,
    root: Path,
    retained_checkpoints: usize,
    operation_timeout: Duration,
    runtime: Arc<IoRuntime>,
}

fn object_error(context: &str, location: &Path, error: impl std::fmt::Display) -> StreamError {
    StreamError::Checkpoint(format!("{context} {location}: {error}"))
}

fn invalid_url(url: &str, why: impl std::fmt::Display) -> StreamError {
    StreamError::InvalidConfiguration(format!("checkpoint storage URL {url:?}: {why}"))
}

/// Ids of `chk-N` among listed prefixes, sorted.
fn checkpoint_ids(listing: &ListResult) -> Vec<u64> {
    let mut ids: Vec<u64> = listing
        .common_prefixes
        .iter()
        .filter_map(|prefix| {
            prefix
                .filename()?
                .strip_prefix(CHECKPOINT_PREFIX)?
                .parse()
                .ok()
        })
        .collect();
    ids.sort_unstable();
    ids
}

/// `options` as the config keys of one object_store builder (`C`), or which one it does not
/// know.
fn config_keys<C>(url: &str, options: &[(String, String)]) -> Result<Vec<(C, String)>, StreamError>
where
    C: FromStr,
    C::Err: std::fmt::Display,
{
    options
        .iter()
        .map(|(key, value)| {
            C::from_str(key)
                .map(|config_key| (config_key, value.clone()))
                .map_err(|error| invalid_url(url, format!("option {key:?}: {error}")))
        })
        .collect()
}

impl ObjectStoreCheckpointStorage {
    /// Checkpoints under `root` (empty for the bucket's top) of `store`; keeps the newest
    /// `retained_checkpoints` (at least one).
    pub fn new(
        store: Arc<dyn ObjectStore>,
        root: Path,
        retained_checkpoints: usize,
    ) -> Result<Self, StreamError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("sluice-checkpoint-io")
            .enable_all()
            .build()
            .map_err(|error| {
                StreamError::Checkpoint(format!("starting the object store runtime: {error}"))
            })?;
        Ok(Self {
            store,
            root,
            retained_checkpoints: retained_checkpoints.max(1),
            operation_timeout: OPERATION_TIMEOUT_DEFAULT,
            runtime: Arc::new(IoRuntime(Some(runtime))),
        })
    }

    /// A store from a URL: `s3://bucket/prefix` (or `s3a://`), configured from the `AWS_*`
    /// environment and then `options` (keys as `AmazonS3ConfigKey` parses them, e.g.
    /// `endpoint`, `allow_http`, `region`, `access_key_id`, `secret_access_key`);
    /// `gs://bucket/prefix` (`GOOGLE_*`, then `GoogleConfigKey` options);
    /// `az://container/prefix` or `azure://` (`AZURE_*`, then `AzureConfigKey` options); or
    /// `memory://prefix`. `file://` is refused (see the module documentation).
    pub fn from_url<K, V>(
        url: &str,
        options: impl IntoIterator<Item = (K, V)>,
        retained_checkpoints: usize,
    ) -> Result<Self, StreamError>
    where
        K: AsRef<str>,
        V: Into<String>,
    {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(invalid_url(url, "expected scheme://..."));
        };
        let scheme = scheme.to_ascii_lowercase();
        let options: Vec<(String, String)> = options
            .into_iter()
            .map(|(key, value)| (key.as_ref().to_string(), value.into()))
            .collect();
        // Cloud URLs: the bucket (container) and the prefix under it.
        let (bucket, bucket_prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let no_bucket = if scheme.starts_with("az") {
            "no container"
        } else {
            "no bucket"
        };
        let cloud = matches!(scheme.as_str(), "s3" | "s3a" | "gs" | "az" | "azure");
        if cloud && bucket.is_empty() {
            return Err(invalid_url(url, no_bucket));
        }
        let built = |store: Result<Arc<dyn ObjectStore>, ::object_store::Error>| {
            store
                .map(|store| (store, bucket_prefix))
                .map_err(|error| invalid_url(url, error))
        };
        let (store, prefix): (Arc<dyn ObjectStore>, &str) = match scheme.as_str() {
            "s3" | "s3a" => built(
                config_keys::<AmazonS3ConfigKey>(url, &options)?
                    .into_iter()
                    .fold(
                        AmazonS3Builder::from_env().with_bucket_name(bucket),
                        |builder, (key, value)| builder.with_config(key, value),
                    )
                    .build()
                    .map(|store| Arc::new(store) as Arc<dyn ObjectStore>),
            )?,
            "gs" => built(
                config_keys::<GoogleConfigKey>(url, &options)?
                    .into_iter()
                    .fold(
                        GoogleCloudStorageBuilder::from_env().with_bucket_name(bucket),
                        |builder, (key, value)| builder.with_config(key, value),
                    )
                    .build()
                    .map(|store| Arc::new(store) as Arc<dyn ObjectStore>),
            )?,
            "az" | "azure" => built(
                config_keys::<AzureConfigKey>(url, &options)?
                    .into_iter()
                    .fold(
                        MicrosoftAzureBuilder::from_env().with_container_name(bucket),
                        |builder, (key, value)| builder.with_config(key, value),
                    )
                    .build()
                    .map(|store| Arc::new(store) as Arc<dyn ObjectStore>),
            )?,
            "memory" => (Arc::new(InMemory::new()), rest),
            "file" => {
                return Err(invalid_url(
                    url,
                    "local paths are not served through object_store (built without its \
                         `fs` feature); use DirectoryCheckpointStorage, same layout",
                ));
            }
            other => {
                return Err(invalid_url(
                    url,
                    format!("unsupported scheme {other:?} (s3, s3a, gs, az, azure, memory)"),
                ));
            }
        };
        let root =
            Path::parse(prefix.trim_matches('/')).map_err(|error| invalid_url(url, error))?;
        Self::new(store, root, retained_checkpoints)
    }

    /// Bounds every request (default 60 s); a request that takes
    /// longer fails the `store` or `latest` it belongs to.
    pub fn with_operation_timeout(mut self, operation_timeout: Duration) -> Self {
        self.operation_timeout = operation_timeout;
        self
    }

    /// The prefix of checkpoint `checkpoint_id`: its objects are `STATE_OBJECT_NAME` and
    /// `METADATA_FILE_NAME` under it.
    pub fn checkpoint_prefix(&self, checkpoint_id: u64) -> Path {
        self.root
            .child(format!("{CHECKPOINT_PREFIX}{checkpoint_id}"))
    }

    /// The object store checkpoints are written to.
    pub fn object_store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The prefix the `chk-N/` prefixes are under.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Runs one request on the private runtime and waits for it on this thread (see the
    /// module documentation for why not `block_on`).
    fn run<T, F>(&self, context: &str, location: &Path, request: F) -> Result<T, StreamError>
    where
        T: Send + 'static,
        F: Future<Output = ::object_store::Result<T>> + Send + 'static,
    {
        let runtime = self
            .runtime
            .0
            .as_ref()
            .expect("the runtime is only taken when the last clone drops");
        let operation_timeout = self.operation_timeout;
        let (sender, receiver) = mpsc::sync_channel(1);
        runtime.spawn(async move {
            let outcome = tokio::time::timeout(operation_timeout, request).await;
            // The receiver waits below until this sends: it cannot be gone.
            let _ = sender.send(outcome);
        });
        match receiver.recv() {
            Ok(Ok(result)) => result.map_err(|error| object_error(context, location, error)),
            Ok(Err(_elapsed)) => Err(object_error(
                context,
                location,
                format!("no answer within {operation_timeout:?}"),
            )),
            // Only if the task was dropped unfinished: the runtime is shutting down.
            Err(mpsc::RecvError) => Err(object_error(context, location, "runtime shut down")),
        }
    }

    fn put(&self, location: &Path, bytes: Vec<u8>) -> Result<(), StreamError> {
        let store = Arc::clone(&self.store);
        let path = location.clone();
        self.run("writing", location, async move {
            store.put(&path, PutPayload::from(bytes)).await.map(|_| ())
        })
    }

    /// The object's bytes, or `None` if there is no such object.
    fn get(&self, location: &Path) -> Result<Option<Bytes>, StreamError> {
        let store = Arc::clone(&self.store);
        let path = location.clone();
        self.run("reading", location, async move {
            match store.get(&path).await {
                Ok(object) => object.bytes().await.map(Some),
                Err(::object_store::Error::NotFound { .. }) => Ok(None),
                Err(error) => Err(error),
            }
        })
    }

    fn exists(&self, location: &Path) -> Result<bool, StreamError> {
        let store = Arc::clone(&self.store);
        let path = location.clone();
        self.run("checking", location, async move {
            match store.head(&path).await {
                Ok(_) => Ok(true),
                Err(::object_store::Error::NotFound { .. }) => Ok(false),
                Err(error) => Err(error),
            }
        })
    }

    /// One level of `prefix` (the store's top for an empty path).
    fn list(&self, prefix: &Path) -> Result<ListResult, StreamError> {
        let store = Arc::clone(&self.store);
        let path = prefix.clone();
        self.run("listing", prefix, async move {
            let prefix = (!path.as_ref().is_empty()).then_some(&path);
            store.list_with_delimiter(prefix).await
        })
    }

    fn delete_object(&self, location: &Path) -> Result<(), StreamError> {
        let store = Arc::clone(&self.store);
        let path = location.clone();
        self.run("removing", location, async move {
            match store.delete(&path).await {
                Ok(()) | Err(::object_store::Error::NotFound { .. }) => Ok(()),
                Err(error) => Err(error),
            }
        })
    }

    /// Removes every object of checkpoint `checkpoint_id`, `_metadata` first so that from
    /// the first DELETE on it no longer counts as completed.
    fn delete_checkpoint(&self, checkpoint_id: u64) -> Result<(), StreamError> {
        let prefix = self.checkpoint_prefix(checkpoint_id);
        self.delete_object(&prefix.child(METADATA_FILE_NAME))?;
        for object in self.list(&prefix)?.objects {
            self.delete_object(&object.location)?;
        }
        Ok(())
    }

    /// Every `chk-N/` under the root: (id, completed), by id.
    fn checkpoints(&self) -> Result<Vec<(u64, bool)>, StreamError> {
        checkpoint_ids(&self.list(&self.root)?)
            .into_iter()
            .map(|id| {
                let completed =
                    self.exists(&self.checkpoint_prefix(id).child(METADATA_FILE_NAME))?;
                Ok((id, completed))
            })
            .collect()
    }

    /// Reads checkpoint `checkpoint_id` if it is completed, checking what `_metadata` says.
    fn read(&self, checkpoint_id: u64) -> Result<Option<CompletedCheckpoint>, StreamError> {
        let prefix = self.checkpoint_prefix(checkpoint_id);
        let metadata_path = prefix.child(METADATA_FILE_NAME);
        let Some(metadata_bytes) = self.get(&metadata_path)? else {
            return Ok(None);
        };
        let metadata = Metadata::decode(&metadata_bytes, checkpoint_id)
            .map_err(|failure| object_error(failure.step, &metadata_path, failure.reason))?;
        let state_path = prefix.child(metadata.state_file.as_str());
        let state_bytes = self
            .get(&state_path)?
            .ok_or_else(|| object_error("reading", &state_path, "missing, metadata names it"))?;
        let checkpoint = metadata
            .decode_state(&state_bytes)
            .map_err(|failure| object_error(failure.step, &state_path, failure.reason))?;
        Ok(Some(checkpoint))
    }
}

impl CheckpointStorage for ObjectStoreCheckpointStorage {
    fn store(&mut self, checkpoint: &CompletedCheckpoint) -> Result<(), StreamError> {
        let checkpoint_id = checkpoint.checkpoint_id;
        let prefix = self.checkpoint_prefix(checkpoint_id);
        // Left by an attempt that crashed (before or after its commit point): replaced whole,
        // so the new state never sits beside an older `_metadata`.
        if !self.list(&prefix)?.objects.is_empty() {
            self.delete_checkpoint(checkpoint_id)?;
        }
        let state_bytes = serde_json::to_vec(checkpoint)
            .map_err(|error| object_error("encoding", &prefix, error))?;
        let metadata = Metadata {
            checkpoint_id,
            state_file: STATE_OBJECT_NAME.to_string(),
            state_bytes: state_bytes.len() as u64,
        };
        let metadata_bytes = serde_json::to_vec(&metadata)
            .map_err(|error| object_error("encoding", &prefix, error))?;
        self.put(&prefix.child(STATE_OBJECT_NAME), state_bytes)?;
        // The commit point.
        self.put(&prefix.child(METADATA_FILE_NAME), metadata_bytes)?;

        // Retention: the newest completed ones stay; older completed ones and abandoned
        // attempts below this id go.
        let listed = self.checkpoints()?;
        debug_assert!(
            listed.contains(&(checkpoint_id, true)),
            "a stored checkpoint lists as completed (object stores list after write)"
        );
        let completed: Vec<u64> = listed
            .iter()
            .filter(|(_, completed)| *completed)
            .map(|(id, _)| *id)
            .collect();
        let excess = completed.len().saturating_sub(self.retained_checkpoints);
        let abandoned = listed
            .iter()
            .filter(|(id, completed)| !completed && *id < checkpoint_id)
            .map(|(id, _)| *id);
        for id in completed[..excess].iter().copied().chain(abandoned) {
            self.delete_checkpoint(id)?;
        }
        Ok(())
    }

    fn latest(&self) -> Result<Option<CompletedCheckpoint>, StreamError> {
        // Newest first; the first with `_metadata` is the latest completed one. As in the
        // directory storage, a damaged latest checkpoint is an error, not a silent fallback
        // to an older one.
        for id in checkpoint_ids(&self.list(&self.root)?).into_iter().rev() {
            if let Some(checkpoint) = self.read(id)? {
                return Ok(Some(checkpoint));
            }
        }
        Ok(None)
    }
}
