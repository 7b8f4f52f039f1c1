//! Confluent's Elasticsearch sink against a real Elasticsearch-API server: OpenSearch
//! 2.19 embedded in a JVM (`compat/opensearch/start.sh`), a real in-process broker and a
//! worker, through Connect's REST API. Documents are read back through OpenSearch's REST
//! API: one document per key after updates, deletes for null values, ids from
//! topic+partition+offset with `key.ignore`, and a malformed document skipped under
//! `behavior.on.malformed.documents=warn` while the task keeps running.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;
#[path = "support/worker.rs"]
mod harness;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::TestNode;
use harness::RunningWorker;
use serde_json::{Value, json};
use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};

const OPENSEARCH_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../compat/opensearch");

/// One OpenSearch node, stopped (SIGTERM, then SIGKILL) on drop.
struct OpenSearch {
    child: Child,
    url: String,
    _home: tempfile::TempDir,
}

impl OpenSearch {
    fn start() -> OpenSearch {
        let dir = Path::new(OPENSEARCH_DIR);
        assert!(
            dir.join("libs/.stamp").exists(),
            "OpenSearch's jars are missing: run compat/opensearch/fetch.sh first (it resolves \
             them from Maven Central into {})",
            dir.join("libs").display()
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let home = tempfile::tempdir().unwrap();
        let start = Instant::now();
        let mut child = Command::new(dir.join("start.sh"))
            .arg(port.to_string())
            .arg(home.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("compat/opensearch/start.sh runs");
        let stdout = child.stdout.take().expect("piped");
        let (ready, wait) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("opensearch ready on ") {
                    let _ = ready.send(());
                }
                eprintln!("opensearch: {line}");
            }
        });
        let mut node = OpenSearch {
            child,
            url: format!("http://127.0.0.1:{port}"),
            _home: home,
        };
        if wait.recv_timeout(Duration::from_secs(120)).is_err() {
            let exited = node.child.try_wait().ok().flatten();
            panic!(
                "OpenSearch did not print its ready line within 120 s (exit: {exited:?}); \
                 its output is above. Are its jars fetched (compat/opensearch/fetch.sh)?"
            );
        }
        eprintln!("opensearch ready in {:?}", start.elapsed());
        node
    }

    async fn call(&self, method: &str, path: &str) -> (u16, Value) {
        let response = reqwest::Client::new()
            .request(method.parse().unwrap(), format!("{}{path}", self.url))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// Refreshes and reads a document (`None`: not found).
    async fn doc(&self, index: &str, id: &str) -> Option<Value> {
        self.call("POST", &format!("/{index}/_refresh")).await;
        let id = id.replace('+', "%2B");
        match self.call("GET", &format!("/{index}/_doc/{id}")).await {
            (200, doc) => Some(doc),
            (404, _) => None,
            (status, body) => panic!("GET {index}/_doc/{id}: {status} {body}"),
        }
    }

    async fn count(&self, index: &str) -> u64 {
        self.call("POST", &format!("/{index}/_refresh")).await;
        let (status, body) = self.call("GET", &format!("/{index}/_count")).await;
        assert_eq!(status, 200, "{body}");
        body["count"].as_u64().unwrap()
    }

    async fn wait_for_doc(&self, index: &str, id: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (status, _) = self.call("HEAD", &format!("/{index}")).await;
            if status == 200
                && let Some(doc) = self.doc(index, id).await
            {
                return doc;
            }
            assert!(
                Instant::now() < deadline,
                "{index}/{id} was not written within 60 s"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for OpenSearch {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A JsonConverter envelope of a person: `age` an int32, or (to break the index's
/// mapping) a string.
fn person(name: &str, age: Value) -> String {
    let age_type = if age.is_string() { "string" } else { "int32" };
    json!({
        "schema": {"type": "struct", "name": "person", "optional": false, "fields": [
            {"field": "name", "type": "string", "optional": false},
            {"field": "age", "type": age_type, "optional": true},
        ]},
        "payload": {"name": name, "age": age},
    })
    .to_string()
}

async fn produce(node: &TestNode, records: Vec<(&str, Option<&str>, Option<String>)>) {
    let config =
        ProducerConfig::from_iter([("bootstrap.servers".to_string(), node.address.to_string())])
            .unwrap();
    let producer = Producer::connect(config).await.unwrap();
    for (topic, key, value) in records {
        let mut record = ProducerRecord::new(topic, Vec::new()).with_partition(0);
        record.value = value.map(Into::into);
        if let Some(key) = key {
            record = record.with_key(key.to_string());
        }
        producer.send(record).await.unwrap();
    }
    producer.flush().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn documents_follow_the_topics_keys_updates_deletes_and_malformed_records() {
    let started = Instant::now();
    let opensearch = tokio::task::spawn_blocking(OpenSearch::start)
        .await
        .unwrap();
    let node = TestNode::start(&[("group.initial.rebalance.delay.ms", "0")]).await;
    let worker = RunningWorker::start(
        &node,
        "connect-es-test",
        "value.converter=org.apache.kafka.connect.json.JsonConverter\n",
    )
    .await;

    // People, keyed: an update, a delete, and a record whose age is a string where the
    // index's mapping (made from the first record's schema) has an integer.
    produce(
        &node,
        vec![
            ("people", Some("k1"), Some(person("ann", json!(30)))),
            ("people", Some("k2"), Some(person("bo", json!(40)))),
            ("people", Some("k1"), Some(person("ann", json!(31)))),
            ("people", Some("k3"), Some(person("cy", json!(50)))),
            ("people", Some("k3"), None),
            (
                "people",
                Some("k4"),
                Some(person("dee", json!("not a number"))),
            ),
            ("people", Some("k5"), Some(person("ed", json!(60)))),
        ],
    )
    .await;
    // Events, unkeyed: documents by topic+partition+offset.
    let event_object = |n: i64| {
        Some(
            json!({
                "schema": {"type": "struct", "fields": [{"field": "n", "type": "int64"}]},
                "payload": {"n": n}
            })
            .to_string(),
        )
    };
    produce(
        &node,
        vec![
            ("events", None, event_object(1)),
            ("events", None, event_object(2)),
            ("events", None, event_object(3)),
        ],
    )
    .await;

    worker
        .create(
            "es-people",
            json!({
                "connector.class": "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector",
                "topics": "people",
                "connection.url": opensearch.url,
                "behavior.on.null.values": "delete",
                "behavior.on.malformed.documents": "warn",
                "type.name": "_doc",
            }),
        )
        .await;
    worker
        .create(
            "es-events",
            json!({
                "connector.class": "ElasticsearchSink",
                "topics": "events",
                "connection.url": opensearch.url,
                "key.ignore": "true",
                "schema.ignore": "true",
            }),
        )
        .await;

    // k5 comes last in its partition: once it is there, everything before it was handled.
    let k5 = opensearch.wait_for_doc("people", "k5").await;
    assert_eq!(k5["_source"], json!({"name": "ed", "age": 60}));
    let k1 = opensearch.doc("people", "k1").await.expect("k1 is there");
    assert_eq!(
        k1["_source"],
        json!({"name": "ann", "age": 31}),
        "the update replaced it"
    );
    assert_eq!(
        k1["_version"], 2,
        "the external version is the Kafka offset of the update"
    );
    assert!(
        opensearch.doc("people", "k3").await.is_none(),
        "deleted by its null value"
    );
    assert!(
        opensearch.doc("people", "k4").await.is_none(),
        "the malformed document was skipped"
    );
    assert_eq!(opensearch.count("people").await, 3, "k1, k2, k5");
    let (status, mapping) = opensearch.call("GET", "/people/_mapping").await;
    assert_eq!(status, 200);
    assert_eq!(
        mapping["people"]["mappings"]["properties"]["age"],
        json!({"type": "integer"}),
        "the mapping came from the value schema"
    );
    let task = worker.task_state("es-people").await;
    assert_eq!(
        task["state"], "RUNNING",
        "warn keeps the task running: {task}"
    );

    let second = opensearch.wait_for_doc("events", "events+0+1").await;
    assert_eq!(second["_source"], json!({"n": 2}));
    assert_eq!(opensearch.count("events").await, 3);
    for offset in [0, 2] {
        assert!(
            opensearch
                .doc("events", &format!("events+0+{offset}"))
                .await
                .is_some()
        );
    }
    assert_eq!(worker.task_state("es-events").await["state"], "RUNNING");

    worker.stop().await;
    drop(opensearch);
    eprintln!("the Elasticsearch sink test took {:?}", started.elapsed());
}
