//! `ObjectStoreCheckpointStorage` against object_store's in-memory store (always) and a
//! real S3-compatible server, moto, started by the test (`moto[server]` from PyPI,
//! installed with pip when missing; the test fails, never skips, when it cannot be had).
//!
//! Both stores run the same check: store, latest, retention of the newest K, a torn
//! checkpoint (state without `_metadata`) ignored then replaced, an abandoned attempt below
//! a new checkpoint removed, a truncated state object refused, and a second storage over
//! the same prefix (a restarted job) seeing what the first one stored.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::ObjectStore;
use object_store::memory::InMemory;
use object_store::path::Path;
use sluice_stream::StreamError;
use sluice_stream::checkpoint::{
    CheckpointStorage, CompletedCheckpoint, METADATA_FILE_NAME, NodeSnapshot,
    ObjectStoreCheckpointStorage, STATE_OBJECT_NAME,
};

fn checkpoint(checkpoint_id: u64) -> CompletedCheckpoint {
    CompletedCheckpoint {
        checkpoint_id,
        job_name: "orders".into(),
        timestamp_ms: checkpoint_id as i64 * 1_000,
        max_parallelism: 128,
        nodes: vec![NodeSnapshot {
            name: "source".into(),
            source_position: Some(serde_json::json!(checkpoint_id * 10)),
            keyed_state: None,
        }],
    }
}

/// Direct access to the objects, as a crash or bit rot would leave them; the test thread is
/// not inside a runtime, so `block_on` is fine here.
struct Objects {
    store: Arc<dyn ObjectStore>,
    runtime: tokio::runtime::Runtime,
}

impl Objects {
    fn of(storage: &ObjectStoreCheckpointStorage) -> Self {
        Self {
            store: Arc::clone(storage.object_store()),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        }
    }

    fn put(&self, location: &Path, bytes: Vec<u8>) {
        self.runtime
            .block_on(self.store.put(location, bytes.into()))
            .unwrap();
    }

    fn get(&self, location: &Path) -> Option<Vec<u8>> {
        self.runtime.block_on(async {
            match self.store.get(location).await {
                Ok(object) => Some(object.bytes().await.unwrap().to_vec()),
                Err(object_store::Error::NotFound { .. }) => None,
                Err(error) => panic!("reading {location}: {error}"),
            }
        })
    }

    fn exists(&self, location: &Path) -> bool {
        self.get(location).is_some()
    }
}

/// The whole behaviour, against storages made by `open(root, retained_checkpoints)`; two
/// calls with the same root address the same objects.
fn check_storage(open: &dyn Fn(&str, usize) -> ObjectStoreCheckpointStorage) {
    let mut storage = open("jobs/orders", 2);
    let objects = Objects::of(&storage);
    let state = |storage: &ObjectStoreCheckpointStorage, id| {
        storage.checkpoint_prefix(id).child(STATE_OBJECT_NAME)
    };
    let metadata = |storage: &ObjectStoreCheckpointStorage, id| {
        storage.checkpoint_prefix(id).child(METADATA_FILE_NAME)
    };

    assert_eq!(storage.latest().unwrap(), None, "nothing stored yet");
    for id in 1..=3 {
        storage.store(&checkpoint(id)).unwrap();
        assert_eq!(storage.latest().unwrap(), Some(checkpoint(id)));
    }
    assert!(!objects.exists(&state(&storage, 1)), "beyond retention");
    assert!(!objects.exists(&metadata(&storage, 1)), "beyond retention");
    assert!(objects.exists(&metadata(&storage, 2)), "retained");

    // A crash between the two PUTs of checkpoint 4: its state is there, its metadata not.
    objects.put(&state(&storage, 4), b"{".to_vec());
    assert_eq!(
        storage.latest().unwrap(),
        Some(checkpoint(3)),
        "torn 4 ignored"
    );
    // A restarted job over the same prefix sees the same.
    assert_eq!(
        open("jobs/orders", 2).latest().unwrap(),
        Some(checkpoint(3))
    );

    // The retry of id 4 replaces the torn attempt; retention drops 2.
    storage.store(&checkpoint(4)).unwrap();
    assert_eq!(storage.latest().unwrap(), Some(checkpoint(4)));
    assert!(!objects.exists(&metadata(&storage, 2)), "beyond retention");
    assert!(objects.exists(&metadata(&storage, 3)), "retained");

    // An attempt abandoned at 5 is removed once 6 is stored above it.
    objects.put(&state(&storage, 5), b"{\"checkpoint_id\"".to_vec());
    storage.store(&checkpoint(6)).unwrap();
    assert!(
        !objects.exists(&state(&storage, 5)),
        "abandoned attempt removed"
    );
    assert!(!objects.exists(&metadata(&storage, 3)), "beyond retention");
    assert_eq!(
        open("jobs/orders", 2).latest().unwrap(),
        Some(checkpoint(6))
    );

    // Another prefix of the same store is another job: it sees nothing of the first.
    let mut other = open("jobs/fraud", 1);
    assert_eq!(other.latest().unwrap(), None);

    // A state object cut short is an error, not a partial restore.
    other.store(&checkpoint(7)).unwrap();
    let state_path = state(&other, 7);
    let mut bytes = objects.get(&state_path).unwrap();
    bytes.pop();
    objects.put(&state_path, bytes);
    match other.latest() {
        Err(StreamError::Checkpoint(message)) => {
            assert!(message.contains("metadata says"), "{message}");
        }
        unexpected => panic!("a truncated state must be refused: {unexpected:?}"),
    }
    // The first job's checkpoints are untouched.
    assert_eq!(storage.latest().unwrap(), Some(checkpoint(6)));
}

#[test]
fn in_memory_object_store() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    check_storage(&|root, retained| {
        ObjectStoreCheckpointStorage::new(Arc::clone(&store), Path::from(root), retained).unwrap()
    });
}

#[test]
fn usable_and_droppable_inside_an_async_runtime() {
    // A `#[tokio::main]` program calls the synchronous storage from a runtime thread: no
    // nested `block_on` panic, and dropping the storage there does not panic either.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut storage = ObjectStoreCheckpointStorage::from_url(
            "memory://jobs/orders",
            [] as [(&str, &str); 0],
            1,
        )
        .unwrap();
        storage.store(&checkpoint(1)).unwrap();
        assert_eq!(storage.latest().unwrap(), Some(checkpoint(1)));
        drop(storage);
    });
}

#[test]
fn urls_that_are_refused() {
    let no_options = || [] as [(&str, &str); 0];
    for (url, expected) in [
        ("file:///tmp/checkpoints", "DirectoryCheckpointStorage"),
        ("ftp://host/checkpoints", "unsupported scheme"),
        ("s3:///checkpoints", "no bucket"),
        ("gs:///checkpoints", "no bucket"),
        ("az:///checkpoints", "no container"),
        ("checkpoints", "scheme://"),
    ] {
        match ObjectStoreCheckpointStorage::from_url(url, no_options(), 1) {
            Err(StreamError::InvalidConfiguration(message)) => {
                assert!(message.contains(expected), "{url}: {message}");
            }
            unexpected => panic!("{url}: {unexpected:?}"),
        }
    }
    for scheme in ["s3", "gs", "az"] {
        let url = format!("{scheme}://bucket/p");
        match ObjectStoreCheckpointStorage::from_url(&url, [("no_such_option", "1")], 1) {
            Err(StreamError::InvalidConfiguration(message)) => {
                assert!(message.contains("no_such_option"), "{message}");
            }
            unexpected => panic!("{url}, unknown option: {unexpected:?}"),
        }
    }
}

/// Google Cloud Storage and Azure Blob Storage URLs build their stores (no request is
/// made: credentials are resolved on first use), under the prefix the URL names.
#[test]
fn gcs_and_azure_urls_build_their_stores() {
    let storage = ObjectStoreCheckpointStorage::from_url(
        "az://checkpoints/jobs/orders",
        [
            ("account_name", "devstoreaccount1"),
            // Azurite's well-known development key.
            (
                "access_key",
                "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
            ),
            ("use_emulator", "true"),
        ],
        2,
    )
    .unwrap();
    assert_eq!(storage.root().as_ref(), "jobs/orders");
    assert!(
        storage.object_store().to_string().contains("checkpoints"),
        "{}",
        storage.object_store()
    );
    let storage =
        ObjectStoreCheckpointStorage::from_url("gs://bucket/jobs", [] as [(&str, &str); 0], 2)
            .unwrap();
    assert_eq!(storage.root().as_ref(), "jobs");
    assert!(
        storage.object_store().to_string().contains("bucket"),
        "{}",
        storage.object_store()
    );
}

/// A moto server on 127.0.0.1, killed when this is dropped (also when the test fails).
struct MotoServer {
    child: Child,
    endpoint: String,
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const MOTO_START_TIMEOUT: Duration = Duration::from_secs(15);
const BUCKET: &str = "sluice-checkpoints";

fn python_has_moto() -> bool {
    Command::new("python3")
        .args(["-c", "import moto.server, boto3"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Makes `import moto.server` work, installing `moto[server]` with pip if needed
/// (idempotent: a no-op once installed). Panics with the reason otherwise: this test must
/// not pass without having talked to a real S3 server.
fn ensure_moto() {
    if python_has_moto() {
        return;
    }
    let install = Command::new("python3")
        .args(["-m", "pip", "install", "-q", "moto[server]"])
        .output();
    let detail = match &install {
        Ok(output) => String::from_utf8_lossy(&output.stderr).into_owned(),
        Err(error) => format!("python3 could not be run: {error}"),
    };
    assert!(
        python_has_moto(),
        "the S3 checkpoint test needs moto (`python3 -m pip install 'moto[server]'`), \
         which is missing and could not be installed: {detail}"
    );
}

fn start_moto() -> MotoServer {
    ensure_moto();
    // A free port: bound, read, released. Another process could take it in between; the
    // start then fails loudly below rather than talking to a stranger for long.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free local port")
        .port();
    let log = tempfile::NamedTempFile::new().expect("a log file for moto");
    let child = Command::new("python3")
        .args([
            "-m",
            "moto.server",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(log.reopen().expect("the moto log file"))
        .spawn()
        .expect("python3 -m moto.server starts");
    let mut server = MotoServer {
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
    };
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        let exited = server.child.try_wait().expect("moto's status");
        if exited.is_some() || started.elapsed() > MOTO_START_TIMEOUT {
            let mut output = String::new();
            let _ = log
                .reopen()
                .and_then(|mut file| file.read_to_string(&mut output));
            panic!("moto did not listen on port {port} ({exited:?}): {output}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// object_store cannot create buckets; boto3 (a dependency of moto) can.
fn create_bucket(endpoint: &str) {
    let script = format!(
        "import boto3\n\
         boto3.client('s3', endpoint_url='{endpoint}', region_name='us-east-1', \
         aws_access_key_id='test', aws_secret_access_key='test').create_bucket(Bucket='{BUCKET}')"
    );
    let output = Command::new("python3")
        .args(["-c", &script])
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "creating bucket {BUCKET} on moto: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn s3_on_a_local_moto_server() {
    let server = start_moto();
    create_bucket(&server.endpoint);
    let endpoint = server.endpoint.clone();
    check_storage(&|root, retained| {
        let options = [
            ("endpoint", endpoint.as_str()),
            ("allow_http", "true"),
            ("region", "us-east-1"),
            ("access_key_id", "test"),
            ("secret_access_key", "test"),
        ];
        ObjectStoreCheckpointStorage::from_url(&format!("s3://{BUCKET}/{root}"), options, retained)
            .unwrap()
            .with_operation_timeout(Duration::from_secs(10))
    });
    drop(server);
}
