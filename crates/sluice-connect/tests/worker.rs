//! A Connect worker against a real in-process broker, through its REST API: Kafka
//! Connect's status codes and JSON shapes, a file -> topic -> file pipeline with the
//! FileStream connectors, the internal topics' records, pause/resume/stop/delete, and a
//! worker restarted on the same topics resuming from its committed offsets.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;
#[path = "support/worker.rs"]
mod harness;

use std::path::Path;
use std::time::{Duration, Instant};

use common::TestNode;
use harness::RunningWorker;
use serde_json::{Value, json};
use sluice_client::TopicPartition;
use sluice_client::consumer::{Consumer, ConsumerConfig};

async fn read_topic(node: &TestNode, topic: &str, expected: usize) -> Vec<String> {
    let mut config = ConsumerConfig::new([node.address.to_string()]);
    config.set("auto.offset.reset", "earliest").unwrap();
    let mut consumer = Consumer::new(config).await.unwrap();
    let tp = TopicPartition::new(topic, 0);
    consumer.assign([tp.clone()]).unwrap();
    consumer.seek(&tp, 0).unwrap();
    let mut values = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while values.len() < expected && Instant::now() < deadline {
        for r in consumer.poll(Duration::from_millis(200)).await.unwrap() {
            values.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
        }
    }
    // Anything beyond what was expected (a duplicate) shows up too.
    for r in consumer.poll(Duration::from_millis(500)).await.unwrap() {
        values.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
    }
    values
}

async fn wait_lines(path: &Path, expected: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        if lines.len() >= expected || Instant::now() >= deadline {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn append_lines(path: &Path, range: std::ops::Range<usize>) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for i in range {
        writeln!(f, "line {i}").unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_file_pipeline_through_connects_rest_api_survives_a_worker_restart() {
    let node = TestNode::start(&[("group.initial.rebalance.delay.ms", "0")]).await;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    let output = dir.path().join("out.txt");
    append_lines(&input, 0..100);

    let worker = RunningWorker::start(&node, "connect-test", "").await;
    let (status, root) = worker.call("GET", "/", None).await;
    assert_eq!(status, 200);
    assert_eq!(root["version"], "4.1.1");
    assert!(
        root["kafka_cluster_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    assert_eq!(
        worker.call("GET", "/connectors", None).await,
        (200, json!([]))
    );
    let (status, plugins) = worker.call("GET", "/connector-plugins", None).await;
    assert_eq!(status, 200);
    assert!(
        plugins.as_array().unwrap().iter().any(|p| p["class"]
            == "org.apache.kafka.connect.file.FileStreamSourceConnector"
            && p["type"] == "source"),
        "{plugins}"
    );

    // Bad input: Connect's codes and messages.
    let (status, body) = worker.call("GET", "/connectors/nope", None).await;
    assert_eq!(
        (status, body),
        (
            404,
            json!({"error_code": 404, "message": "Connector nope not found"})
        )
    );
    let (status, body) = worker
        .call(
            "POST",
            "/connectors",
            Some(json!({"name": "bad", "config": {"connector.class": "com.example.Nope"}})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error_code"], 400);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("Failed to find any class that implements Connector and which name matches com.example.Nope"),
        "{body}"
    );
    let (status, body) = worker
        .call(
            "PUT",
            "/connector-plugins/FileStreamSourceConnector/config/validate",
            Some(json!({"connector.class": "FileStreamSource", "file": "x", "name": "v"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["error_count"], 1, "{body}");
    let topic_errors: Vec<&Value> = body["configs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["value"]["name"] == "topic")
        .collect();
    assert_eq!(
        topic_errors[0]["value"]["errors"],
        json!(["Missing required configuration \"topic\" which has no default value."])
    );
    let (status, body) = worker
        .call("POST", "/connectors", Some(json!({"config": {}})))
        .await;
    assert_eq!(status, 400, "{body}");
    let http = reqwest::Client::new();
    let malformed = http
        .post(format!("{}/connectors", worker.url))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status().as_u16(), 400);

    // A file source: every line a record, in order.
    let source = json!({
        "name": "file-source",
        "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "tasks.max": "1",
            "file": input.display().to_string(),
            "topic": "lines",
        }
    });
    let (status, created) = worker
        .call("POST", "/connectors", Some(source.clone()))
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["name"], "file-source");
    assert_eq!(created["type"], "source");
    assert_eq!(created["config"]["topic"], "lines");
    assert_eq!(created["config"]["name"], "file-source");
    let (status, body) = worker.call("POST", "/connectors", Some(source)).await;
    assert_eq!(
        (status, body),
        (
            409,
            json!({"error_code": 409, "message": "Connector file-source already exists"})
        )
    );
    let expected: Vec<String> = (0..100).map(|i| format!("line {i}")).collect();
    assert_eq!(read_topic(&node, "lines", 100).await, expected);
    let status = worker
        .wait_for("/connectors/file-source/status", "source running", |s| {
            s["connector"]["state"] == "RUNNING" && s["tasks"][0]["state"] == "RUNNING"
        })
        .await;
    assert_eq!(status["type"], "source");
    assert_eq!(status["tasks"][0]["id"], 0);
    assert!(
        status["tasks"][0]["worker_id"]
            .as_str()
            .unwrap()
            .starts_with("127.0.0.1:")
    );
    let (_, tasks) = worker
        .call("GET", "/connectors/file-source/tasks", None)
        .await;
    assert_eq!(
        tasks[0]["id"],
        json!({"connector": "file-source", "task": 0})
    );
    assert_eq!(tasks[0]["config"]["topic"], "lines");
    let size = std::fs::metadata(&input).unwrap().len();
    worker
        .wait_for(
            "/connectors/file-source/offsets",
            "offsets committed",
            |o| o["offsets"][0]["offset"]["position"] == size,
        )
        .await;
    let (_, offsets) = worker
        .call("GET", "/connectors/file-source/offsets", None)
        .await;
    assert_eq!(
        offsets["offsets"][0]["partition"],
        json!({"filename": input.display().to_string()})
    );

    // A file sink: the topic's records as lines.
    let (status, body) = worker
        .call(
            "POST",
            "/connectors",
            Some(json!({"name": "file-sink", "config": {
                "connector.class": "FileStreamSink",
                "topics": "lines",
                "file": output.display().to_string(),
            }})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["type"], "sink");
    assert_eq!(wait_lines(&output, 100).await, expected);
    let (_, list) = worker
        .call("GET", "/connectors?expand=status&expand=info", None)
        .await;
    assert_eq!(list["file-sink"]["info"]["type"], "sink");
    assert!(list["file-source"]["status"]["connector"]["state"].is_string());

    // Pause and resume.
    let (status, _) = worker
        .call("PUT", "/connectors/file-source/pause", None)
        .await;
    assert_eq!(status, 202);
    worker
        .wait_for("/connectors/file-source/status", "paused", |s| {
            s["connector"]["state"] == "PAUSED" && s["tasks"][0]["state"] == "PAUSED"
        })
        .await;
    let (status, _) = worker
        .call("PUT", "/connectors/file-source/resume", None)
        .await;
    assert_eq!(status, 202);
    worker
        .wait_for("/connectors/file-source/status", "resumed", |s| {
            s["connector"]["state"] == "RUNNING" && s["tasks"][0]["state"] == "RUNNING"
        })
        .await;

    // The worker stops (committing what it completed); lines written meanwhile are
    // read by the next worker on the same topics, from the committed position.
    worker.stop().await;
    append_lines(&input, 100..150);
    let worker = RunningWorker::start(&node, "connect-test", "").await;
    let (_, names) = worker.call("GET", "/connectors", None).await;
    assert_eq!(names, json!(["file-sink", "file-source"]));
    let expected: Vec<String> = (0..150).map(|i| format!("line {i}")).collect();
    assert_eq!(
        read_topic(&node, "lines", 150).await,
        expected,
        "no line lost or repeated"
    );
    assert_eq!(wait_lines(&output, 150).await, expected);

    // Stop (KIP-875), then delete.
    let (status, _) = worker.call("PUT", "/connectors/file-sink/stop", None).await;
    assert_eq!(status, 204);
    worker
        .wait_for("/connectors/file-sink/status", "stopped", |s| {
            s["connector"]["state"] == "STOPPED" && s["tasks"] == json!([])
        })
        .await;
    let (status, _) = worker.call("DELETE", "/connectors/file-sink", None).await;
    assert_eq!(status, 204);
    let (status, _) = worker.call("GET", "/connectors/file-sink", None).await;
    assert_eq!(status, 404);
    worker.stop().await;
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_task_reports_its_trace_and_runs_again_once_restarted() {
    let node = TestNode::start(&[("group.initial.rebalance.delay.ms", "0")]).await;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    append_lines(&input, 0..10);
    let missing = dir.path().join("not-yet");
    let output = missing.join("out.txt");
    let worker = RunningWorker::start(&node, "connect-test", "").await;
    for (name, config) in [
        (
            "src",
            json!({"connector.class": "FileStreamSource", "file": input.display().to_string(), "topic": "t"}),
        ),
        (
            "sink",
            json!({"connector.class": "FileStreamSink", "file": output.display().to_string(), "topics": "t"}),
        ),
    ] {
        let (status, body) = worker
            .call(
                "POST",
                "/connectors",
                Some(json!({"name": name, "config": config})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    // The sink's file cannot be created: the task fails, with Connect's trace.
    let failed = worker
        .wait_for("/connectors/sink/status", "sink task failed", |s| {
            s["tasks"][0]["state"] == "FAILED"
        })
        .await;
    let trace = failed["tasks"][0]["trace"].as_str().unwrap();
    assert!(
        trace.starts_with(
            "org.apache.kafka.connect.errors.ConnectException: Couldn't find or create file"
        ),
        "{trace}"
    );
    assert_eq!(failed["connector"]["state"], "RUNNING");
    // The worker goes on: the source ran meanwhile.
    assert_eq!(read_topic(&node, "t", 10).await.len(), 10);
    // A failed task stays failed until restarted, even once it could run: the directory
    // exists now, so a restart on its own (the reconcile loop runs every second) would
    // show RUNNING here. Then, restarted, it runs from the start.
    std::fs::create_dir(&missing).unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (_, still) = worker
        .call("GET", "/connectors/sink/tasks/0/status", None)
        .await;
    assert_eq!(still["state"], "FAILED");
    let (status, _) = worker
        .call("POST", "/connectors/sink/tasks/0/restart", None)
        .await;
    assert_eq!(status, 204);
    worker
        .wait_for("/connectors/sink/status", "sink task running again", |s| {
            s["tasks"][0]["state"] == "RUNNING"
        })
        .await;
    let expected: Vec<String> = (0..10).map(|i| format!("line {i}")).collect();
    assert_eq!(wait_lines(&output, 10).await, expected);
    // Restarting an unknown task's connector is Connect's 404.
    let (status, body) = worker
        .call("POST", "/connectors/nope/tasks/0/restart", None)
        .await;
    assert_eq!(status, 404, "{body}");
    worker.stop().await;
    node.stop().await;
}

/// Every worker id the connector's and its tasks' statuses name.
fn owners(status: &Value) -> Vec<String> {
    let mut out = vec![
        status["connector"]["worker_id"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    ];
    for t in status["tasks"].as_array().into_iter().flatten() {
        out.push(t["worker_id"].as_str().unwrap_or("").to_string());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_share_the_work_and_one_takes_it_all_when_the_other_leaves() {
    if let Ok(filter) = std::env::var("SLUICE_TEST_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_test_writer()
            .try_init();
    }
    let node = TestNode::start(&[("group.initial.rebalance.delay.ms", "0")]).await;
    let dir = tempfile::tempdir().unwrap();
    // Incremental cooperative (the default protocol): b's work waits 1 s for it to
    // come back before a takes it.
    let timers = "heartbeat.interval.ms=300\nsession.timeout.ms=6000\nscheduled.rebalance.max.delay.ms=1000\n";
    let a = RunningWorker::start(&node, "connect-test", timers).await;
    let b = RunningWorker::start(&node, "connect-test", timers).await;
    let names = ["s0", "s1", "s2"];
    for (i, name) in names.iter().enumerate() {
        let input = dir.path().join(format!("{name}.txt"));
        append_lines(&input, 0..20);
        // Through either worker: the one not leading forwards the write to the leader.
        let through = if i % 2 == 0 { &a } else { &b };
        let (status, body) = through
            .call(
                "POST",
                "/connectors",
                Some(json!({"name": name, "config": {
                    "connector.class": "FileStreamSource",
                    "file": input.display().to_string(),
                    "topic": format!("topic-{i}"),
                }})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    // Six units of work (three connectors, three tasks) over two workers: once both are
    // in the group each runs some, and both workers' REST APIs tell the same statuses.
    let deadline = Instant::now() + Duration::from_secs(30);
    let seen = loop {
        let mut seen = std::collections::BTreeSet::new();
        let mut running = true;
        for name in names {
            let (_, s) = a
                .call("GET", &format!("/connectors/{name}/status"), None)
                .await;
            running &= s["connector"]["state"] == "RUNNING" && s["tasks"][0]["state"] == "RUNNING";
            seen.extend(owners(&s));
        }
        if running && seen.len() == 2 {
            break seen;
        }
        assert!(
            Instant::now() < deadline,
            "not shared by both workers: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for name in names {
        let path = format!("/connectors/{name}/status");
        let (_, status) = a.call("GET", &path, None).await;
        b.wait_for(&path, "the same status through the other worker", |s| {
            owners(s) == owners(&status)
        })
        .await;
    }
    for i in 0..3 {
        assert_eq!(read_topic(&node, &format!("topic-{i}"), 20).await.len(), 20);
    }
    // b leaves (stopping its tasks, committing their offsets): a runs everything, and
    // lines written meanwhile arrive once.
    b.stop().await;
    for name in names {
        append_lines(&dir.path().join(format!("{name}.txt")), 20..30);
    }
    for name in names {
        let path = format!("/connectors/{name}/status");
        a.wait_for(&path, "everything on the remaining worker", |s| {
            s["tasks"][0]["state"] == "RUNNING"
                && owners(s).iter().all(|w| seen.contains(w))
                && owners(s)
                    .iter()
                    .collect::<std::collections::BTreeSet<_>>()
                    .len()
                    == 1
        })
        .await;
    }
    let expected: Vec<String> = (0..30).map(|i| format!("line {i}")).collect();
    for i in 0..3 {
        assert_eq!(
            read_topic(&node, &format!("topic-{i}"), 30).await,
            expected,
            "topic-{i}: no line lost or repeated across the hand-over"
        );
    }
    a.stop().await;
    node.stop().await;
}

/// Produces each value (None: a tombstone) to partition 0 of `topic`, in order.
async fn produce(node: &TestNode, topic: &str, values: &[Option<&str>]) {
    use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};
    let producer = Producer::connect(
        ProducerConfig::builder(vec![node.address.to_string()])
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    for v in values {
        let mut record = ProducerRecord::new(topic, bytes::Bytes::new()).with_partition(0);
        record.value = v.map(|v| bytes::Bytes::from(v.to_string()));
        record = record.with_header("origin", Some(bytes::Bytes::from_static(b"test")));
        producer.send(record).await.unwrap().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn records_that_fail_conversion_go_to_the_dead_letter_queue_with_connects_headers() {
    let node = TestNode::start(&[("group.initial.rebalance.delay.ms", "0")]).await;
    let dir = tempfile::tempdir().unwrap();
    produce(
        &node,
        "in",
        &[Some(r#"{"n":1}"#), Some("not json"), Some(r#"{"n":3}"#)],
    )
    .await;
    let worker = RunningWorker::start(&node, "connect-test", "").await;
    let sink = |file: &str, extra: Value| {
        let mut config = json!({
            "connector.class": "FileStreamSink",
            "file": dir.path().join(file).display().to_string(),
            "topics": "in",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
        });
        config
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        config
    };

    // A queue among the connector's own topics, or a tolerance Connect does not know:
    // Connect's 400 naming the key, and nothing created.
    for (bad, says) in [
        (
            json!({"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "in"}),
            "The DLQ topic 'in' may not be included in the list of topics ('topics=[in]') consumed by the connector",
        ),
        (
            json!({"errors.tolerance": "most"}),
            "Invalid value most for configuration errors.tolerance",
        ),
    ] {
        let (status, body) = worker
            .call(
                "POST",
                "/connectors",
                Some(json!({"name": "bad", "config": sink("bad.txt", bad)})),
            )
            .await;
        assert_eq!(status, 400, "{body}");
        assert!(body["message"].as_str().unwrap().contains(says), "{body}");
        let (status, body) = worker
            .call(
                "PUT",
                "/connector-plugins/FileStreamSink/config/validate",
                Some(sink("bad.txt", json!({"errors.tolerance": "most"}))),
            )
            .await;
        assert_eq!(status, 200);
        let tolerance = body["configs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["definition"]["name"] == "errors.tolerance")
            .expect("validate lists the error-handling keys");
        assert_eq!(
            tolerance["value"]["errors"][0],
            "Invalid value most for configuration errors.tolerance: String must be one of: none, all"
        );
    }

    // Tolerance all: the good records reach the file, the bad one the queue, with the
    // original value and headers and Connect's context headers.
    let (status, body) = worker
        .call(
            "POST",
            "/connectors",
            Some(
                json!({"name": "tolerant", "config": sink("good.txt", json!({
                    "errors.tolerance": "all",
                    "errors.log.enable": "true",
                    "errors.deadletterqueue.topic.name": "in-dlq",
                    "errors.deadletterqueue.topic.replication.factor": "1",
                    "errors.deadletterqueue.context.headers.enable": "true",
                }))}),
            ),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    // Tolerance none (the default): the same record fails the task.
    let (status, body) = worker
        .call(
            "POST",
            "/connectors",
            Some(json!({"name": "strict", "config": sink("strict.txt", json!({}))})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        wait_lines(&dir.path().join("good.txt"), 2).await,
        ["{n=1}", "{n=3}"]
    );
    let failed = worker
        .wait_for("/connectors/strict/status", "strict task failed", |s| {
            s["tasks"][0]["state"] == "FAILED"
        })
        .await;
    let trace = failed["tasks"][0]["trace"].as_str().unwrap();
    assert!(
        trace.starts_with(
            "org.apache.kafka.connect.errors.ConnectException: Tolerance exceeded in error handler"
        ) && trace.contains("VALUE_CONVERTER")
            && trace.contains("offset 1"),
        "{trace}"
    );
    // The strict task wrote nothing past its failure and committed nothing past it.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("strict.txt")).unwrap(),
        "",
        "nothing from the batch the failure interrupted reaches the sink"
    );

    let mut config = ConsumerConfig::new([node.address.to_string()]);
    config.set("auto.offset.reset", "earliest").unwrap();
    let mut consumer = Consumer::new(config).await.unwrap();
    let tp = TopicPartition::new("in-dlq", 0);
    consumer.assign([tp.clone()]).unwrap();
    consumer.seek(&tp, 0).unwrap();
    let mut dead = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while dead.is_empty() && Instant::now() < deadline {
        dead.extend(consumer.poll(Duration::from_millis(200)).await.unwrap());
    }
    dead.extend(consumer.poll(Duration::from_millis(500)).await.unwrap());
    assert_eq!(dead.len(), 1, "exactly the bad record is dead-lettered");
    let record = &dead[0];
    assert_eq!(record.value.as_deref(), Some(&b"not json"[..]));
    let headers: Vec<(String, String)> = record
        .headers
        .iter()
        .map(|h| {
            (
                String::from_utf8_lossy(&h.key).into_owned(),
                String::from_utf8_lossy(h.value.as_deref().unwrap_or_default()).into_owned(),
            )
        })
        .collect();
    let header = |k: &str| {
        headers
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no header {k} in {headers:?}"))
    };
    assert_eq!(header("origin"), "test");
    assert_eq!(header("__connect.errors.topic"), "in");
    assert_eq!(header("__connect.errors.partition"), "0");
    assert_eq!(header("__connect.errors.offset"), "1");
    assert_eq!(header("__connect.errors.connector.name"), "tolerant");
    assert_eq!(header("__connect.errors.task.id"), "0");
    assert_eq!(header("__connect.errors.stage"), "VALUE_CONVERTER");
    assert_eq!(
        header("__connect.errors.class.name"),
        "org.apache.kafka.connect.json.JsonConverter"
    );
    assert_eq!(
        header("__connect.errors.exception.class.name"),
        "org.apache.kafka.connect.errors.DataException"
    );
    assert!(
        header("__connect.errors.exception.message")
            .contains("Converting byte[] to Kafka Connect data failed due to serialization error"),
        "{headers:?}"
    );
    // A connector's producer.override.* reaches its producer: a line longer than the
    // max.request.size it sets fails the task, naming the setting.
    let big = dir.path().join("big.txt");
    std::fs::write(&big, format!("short\n{}\n", "x".repeat(500))).unwrap();
    let (status, body) = worker
        .call(
            "POST",
            "/connectors",
            Some(json!({"name": "small-requests", "config": {
                "connector.class": "FileStreamSource",
                "file": big.display().to_string(),
                "topic": "big",
                "producer.override.max.request.size": "300",
            }})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let failed = worker
        .wait_for(
            "/connectors/small-requests/status",
            "the override fails the task",
            |s| s["tasks"][0]["state"] == "FAILED",
        )
        .await;
    assert!(
        failed["tasks"][0]["trace"]
            .as_str()
            .unwrap_or("")
            .contains("max.request.size=300"),
        "{failed}"
    );
    worker.stop().await;
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn offsets_are_read_altered_and_reset_only_while_stopped_as_in_kip_875() {
    let node = TestNode::start(&[("group.initial.rebalance.delay.ms", "0")]).await;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    let output = dir.path().join("out.txt");
    append_lines(&input, 0..10);
    let size = std::fs::metadata(&input).unwrap().len();
    let worker = RunningWorker::start(&node, "connect-test", "").await;
    for (name, config) in [
        (
            "src",
            json!({"connector.class": "FileStreamSource", "file": input.display().to_string(), "topic": "t"}),
        ),
        (
            "sink",
            json!({"connector.class": "FileStreamSink", "file": output.display().to_string(), "topics": "t"}),
        ),
    ] {
        let (status, body) = worker
            .call(
                "POST",
                "/connectors",
                Some(json!({"name": name, "config": config})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    assert_eq!(wait_lines(&output, 10).await.len(), 10);
    // Source offsets come from the offsets topic, sink offsets from the consumer group.
    worker
        .wait_for("/connectors/src/offsets", "source offsets", |o| {
            o["offsets"][0]["offset"]["position"] == size
        })
        .await;
    let sink_offsets = worker
        .wait_for("/connectors/sink/offsets", "sink offsets", |o| {
            o["offsets"][0]["offset"]["kafka_offset"] == 10
        })
        .await;
    assert_eq!(
        sink_offsets["offsets"][0]["partition"],
        json!({"kafka_topic": "t", "kafka_partition": 0})
    );

    // Only a STOPPED connector's offsets change.
    let (status, body) = worker.call("DELETE", "/connectors/src/offsets", None).await;
    assert_eq!(status, 400);
    assert_eq!(
        body["message"],
        "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/src/stop' endpoint"
    );
    for name in ["src", "sink"] {
        let (status, _) = worker
            .call("PUT", &format!("/connectors/{name}/stop"), None)
            .await;
        assert_eq!(status, 204);
        worker
            .wait_for(&format!("/connectors/{name}/status"), "stopped", |s| {
                s["connector"]["state"] == "STOPPED"
            })
            .await;
    }

    // Malformed sink offsets: Connect's 400s.
    for (body, says) in [
        (
            json!({}),
            "Partitions / offsets need to be provided for an alter offsets request",
        ),
        (
            json!({"offsets": [{"partition": {"kafka_topic": "t"}, "offset": null}]}),
            "The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'",
        ),
        (
            json!({"offsets": [{"partition": {"kafka_topic": "t", "kafka_partition": "x"}, "offset": null}]}),
            "Failed to parse the following Kafka partition value in the provided offsets: 'x'. Partition values for sink connectors need to be integers.",
        ),
        (
            json!({"offsets": [{"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {}}]}),
            "The offset for a sink connector should either be null or contain the key 'kafka_offset'",
        ),
    ] {
        let (status, answer) = worker
            .call("PATCH", "/connectors/sink/offsets", Some(body))
            .await;
        assert_eq!((status, answer["message"].as_str()), (400, Some(says)));
    }

    // The sink rewinds to offset 5 ("5" as a string, as Connect accepts), the source
    // forgets its position: resumed, the sink writes 5..9 again, then the source's
    // second reading of the file.
    let (status, body) = worker
        .call(
            "PATCH",
            "/connectors/sink/offsets",
            Some(json!({"offsets": [{"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": "5"}}]})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["message"],
        "The offsets for this connector have been altered successfully"
    );
    let (_, rewound) = worker.call("GET", "/connectors/sink/offsets", None).await;
    assert_eq!(rewound["offsets"][0]["offset"]["kafka_offset"], 5);
    let (status, body) = worker.call("DELETE", "/connectors/src/offsets", None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["message"],
        "The offsets for this connector have been reset successfully"
    );
    let (_, reset) = worker.call("GET", "/connectors/src/offsets", None).await;
    assert_eq!(reset["offsets"], json!([]));
    for name in ["sink", "src"] {
        let (status, _) = worker
            .call("PUT", &format!("/connectors/{name}/resume"), None)
            .await;
        assert_eq!(status, 202);
    }
    let mut expected: Vec<String> = (0..10).map(|i| format!("line {i}")).collect();
    expected.extend((5..10).map(|i| format!("line {i}")));
    expected.extend((0..10).map(|i| format!("line {i}")));
    assert_eq!(wait_lines(&output, 25).await, expected);
    worker.stop().await;
    node.stop().await;
}

/// Every record of `topic`'s partition 0 as (key, value) text, read as `isolation`
/// (`read_committed` or `read_uncommitted`) up to the end the broker reports then.
async fn read_all(node: &TestNode, topic: &str, isolation: &str) -> Vec<(String, String)> {
    let mut config = ConsumerConfig::new([node.address.to_string()]);
    config.set("auto.offset.reset", "earliest").unwrap();
    config.set("isolation.level", isolation).unwrap();
    let mut consumer = Consumer::new(config).await.unwrap();
    let tp = TopicPartition::new(topic, 0);
    consumer.assign([tp.clone()]).unwrap();
    consumer.seek(&tp, 0).unwrap();
    let text = |b: Option<bytes::Bytes>| String::from_utf8_lossy(&b.unwrap_or_default()).into();
    let mut records = Vec::new();
    let mut quiet = 0;
    while quiet < 3 {
        let batch = consumer.poll(Duration::from_millis(300)).await.unwrap();
        quiet = if batch.is_empty() { quiet + 1 } else { 0 };
        records.extend(batch.into_iter().map(|r| (text(r.key), text(r.value))));
    }
    records
}

/// KIP-618 zombie fencing: a previous generation of an exactly-once source connector ran
/// two tasks (its task count record says 2) and task 1's producer is still alive with a
/// transaction open. When the connector's new task configs (one task) are committed, the
/// leader fences the producers of tasks 0 and 1 before any new task starts, and records
/// the new count: the zombie's transaction is aborted and its commit fails as fenced.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_exactly_once_source_fences_the_previous_generations_producers_before_starting() {
    use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};
    let node = TestNode::start(&[
        ("group.initial.rebalance.delay.ms", "0"),
        ("transaction.state.log.num.partitions", "3"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    append_lines(&input, 0..20);
    let worker = RunningWorker::start(
        &node,
        "connect-test",
        "exactly.once.source.support=enabled\n",
    )
    .await;

    // The zombie: task 1 of the previous generation, mid-transaction.
    let zombie = Producer::connect(
        ProducerConfig::builder(vec![node.address.to_string()])
            .transactional_id("connect-test-eos-1")
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    zombie.init_transactions().await.unwrap();
    zombie.begin_transaction().unwrap();
    zombie
        .send(ProducerRecord::new("eos-out", "zombie").with_partition(0))
        .await
        .unwrap()
        .await
        .unwrap();
    // The previous generation's task count record, as a Connect worker wrote it.
    let writer = Producer::connect(
        ProducerConfig::builder(vec![node.address.to_string()])
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    writer
        .send(
            ProducerRecord::new("connect-configs", r#"{"task-count":2}"#)
                .with_key("tasks-fencing-eos")
                .with_partition(0),
        )
        .await
        .unwrap()
        .await
        .unwrap();

    let config = json!({"name": "eos", "config": {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "file": input.to_str().unwrap(),
        "topic": "eos-out",
    }});
    let (status, body) = worker.call("POST", "/connectors", Some(config)).await;
    assert_eq!(status, 201, "{body}");
    worker
        .wait_for("/connectors/eos/status", "the task running", |s| {
            s["tasks"][0]["state"] == "RUNNING"
        })
        .await;

    // The zombie was fenced: its transaction aborted, its commit refused.
    let error = zombie.commit_transaction().await.unwrap_err();
    let code = error.code().map(|code| code.name());
    assert!(
        matches!(
            code.as_deref(),
            Some("PRODUCER_FENCED" | "INVALID_PRODUCER_EPOCH")
        ),
        "{error}"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let committed = loop {
        let values: Vec<String> = read_all(&node, "eos-out", "read_committed")
            .await
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        if values.len() >= 20 || Instant::now() > deadline {
            break values;
        }
    };
    let expected: Vec<String> = (0..20).map(|i| format!("line {i}")).collect();
    assert_eq!(
        committed, expected,
        "every line once, nothing of the zombie's"
    );
    // The new generation's count is recorded after the commit of its task configs.
    let records = read_all(&node, "connect-configs", "read_uncommitted").await;
    let keys: Vec<&str> = records.iter().map(|(k, _)| k.as_str()).collect();
    let commit = keys.iter().rposition(|k| *k == "commit-eos").unwrap();
    let count = keys
        .iter()
        .rposition(|k| *k == "tasks-fencing-eos")
        .unwrap();
    assert!(commit < count, "{keys:?}");
    assert_eq!(records[count].1, r#"{"task-count":1}"#);
    worker.stop().await;
    node.stop().await;
}
