//! A Connect worker in-process against a test broker, driven through its REST API, for
//! the connector tests. A test file includes it beside the broker's test harness:
//!
//! ```ignore
//! #[path = "../../sluice-broker/tests/common/mod.rs"]
//! mod common;
//! #[path = "support/worker.rs"]
//! mod harness;
//! ```
#![allow(dead_code)] // each test file uses its own part

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_connect::WorkerConfig;
use tokio::sync::watch;

use crate::common::TestNode;

pub struct RunningWorker {
    pub url: String,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Result<(), String>>,
}

impl RunningWorker {
    /// A worker of group `group` with String converters, small internal topics and a
    /// 200 ms offset flush; `extra` holds more `connect-distributed.properties` lines,
    /// which win over these.
    pub async fn start(node: &TestNode, group: &str, extra: &str) -> RunningWorker {
        let text = format!(
            "bootstrap.servers={}\n\
             group.id={group}\n\
             key.converter=org.apache.kafka.connect.storage.StringConverter\n\
             value.converter=org.apache.kafka.connect.storage.StringConverter\n\
             config.storage.topic=connect-configs\n\
             offset.storage.topic=connect-offsets\n\
             status.storage.topic=connect-status\n\
             config.storage.replication.factor=1\n\
             offset.storage.replication.factor=1\n\
             status.storage.replication.factor=1\n\
             offset.storage.partitions=5\n\
             status.storage.partitions=2\n\
             offset.flush.interval.ms=200\n\
             listeners=http://127.0.0.1:0\n{extra}",
            node.address
        );
        let config = WorkerConfig::from_props(WorkerConfig::parse_properties(&text)).unwrap();
        let (stop, stopped) = watch::channel(false);
        let (bound, address) = tokio::sync::oneshot::channel::<SocketAddr>();
        let task = tokio::spawn(sluice_connect::serve(config, stopped, Some(bound)));
        let address = tokio::time::timeout(Duration::from_secs(60), address)
            .await
            .expect("the worker starts within 60 s")
            .expect("the worker binds its listener");
        RunningWorker {
            url: format!("http://{address}"),
            stop,
            task,
        }
    }

    /// Stops the worker as SIGTERM does (tasks commit what they completed).
    pub async fn stop(self) {
        self.stop.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .expect("the worker stops within 30 s")
            .unwrap()
            .unwrap();
    }

    /// One REST call: the status code and the body as JSON (a string when it is not
    /// JSON, null when empty).
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let http = reqwest::Client::new();
        let mut request = http.request(method.parse().unwrap(), format!("{}{path}", self.url));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, value)
    }

    /// `POST /connectors`, which must answer 201.
    pub async fn create(&self, name: &str, config: Value) {
        let (status, body) = self
            .call(
                "POST",
                "/connectors",
                Some(json!({"name": name, "config": config})),
            )
            .await;
        assert_eq!(status, 201, "creating {name}: {body}");
    }

    /// Polls `path` until `check` holds (statuses are written asynchronously).
    pub async fn wait_for(&self, path: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (status, body) = self.call("GET", path, None).await;
            if status == 200 && check(&body) {
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: last answer {status} {body}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The connector's first task's status, now.
    pub async fn task_state(&self, name: &str) -> Value {
        let (status, body) = self
            .call("GET", &format!("/connectors/{name}/status"), None)
            .await;
        assert_eq!(status, 200, "{body}");
        body["tasks"][0].clone()
    }

    /// The connector's first task's status, once `check` holds.
    pub async fn wait_task(&self, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let body = self
            .wait_for(&format!("/connectors/{name}/status"), what, |body| {
                check(&body["tasks"][0])
            })
            .await;
        body["tasks"][0].clone()
    }
}
