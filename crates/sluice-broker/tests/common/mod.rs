//! Starts a real Sluice node in-process (`node::run`, the code `sluice server` runs) on
//! free loopback ports with a temporary log directory.

#![allow(dead_code)]

use std::net::SocketAddr;

use sluice_broker::{BrokerConfig, EMBEDDED_SERVER_PROPERTIES};
use tokio::sync::{oneshot, watch};

pub struct TestNode {
    pub address: SocketAddr,
    pub dir: tempfile::TempDir,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl TestNode {
    /// Starts a node with the embedded defaults plus `overrides`.
    pub async fn start(overrides: &[(&str, &str)]) -> TestNode {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir, overrides).await
    }

    /// Starts a node on an existing log directory (a restart).
    pub async fn start_in(dir: tempfile::TempDir, overrides: &[(&str, &str)]) -> TestNode {
        let mut all: Vec<(String, String)> = vec![
            (
                "listeners".into(),
                "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0".into(),
            ),
            (
                "advertised.listeners".into(),
                "PLAINTEXT://127.0.0.1:0".into(),
            ),
            ("log.dirs".into(), dir.path().display().to_string()),
        ];
        all.extend(
            overrides
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        let config = BrokerConfig::load(EMBEDDED_SERVER_PROPERTIES, &all)
            .unwrap()
            .config;
        let (stop, stopped) = watch::channel(false);
        let (bound, address) = oneshot::channel();
        let bound = std::sync::Mutex::new(Some(bound));
        let task = tokio::spawn(async move {
            sluice_broker::node::run(config, stopped, move |_, address| {
                if let Some(bound) = bound.lock().unwrap().take() {
                    let _ = bound.send(address);
                }
            })
            .await
            .expect("the node runs and shuts down cleanly");
        });
        let address = address.await.expect("the node binds its listener");
        TestNode {
            address,
            dir,
            stop,
            task,
        }
    }

    /// Clean shutdown; returns the log directory for a restart.
    pub async fn stop(self) -> tempfile::TempDir {
        self.stop.send(true).unwrap();
        self.task.await.unwrap();
        self.dir
    }
}
