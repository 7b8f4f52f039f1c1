//! Several registry instances on one `_schemas`: one leader writes; a write sent to the
//! other is forwarded to it; when the leader leaves, the other takes over and continues
//! the ids.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;

use std::time::Duration;

use common::TestNode;
use serde_json::{Value, json};
use sluice_registry::leader::Leader;
use sluice_registry::server::{RegistryConfig, RunningRegistry, start};

async fn instance(node: &TestNode) -> RunningRegistry {
    let mut config = RegistryConfig::new(
        vec![node.address.to_string()],
        "127.0.0.1:0".parse().unwrap(),
    );
    config.store.replication_factor = 1;
    start(config).await.expect("the registry starts")
}

async fn post(base: &str, path: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("content-type", "application/vnd.schemaregistry.v1+json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

async fn get(base: &str, path: &str) -> Value {
    reqwest::get(format!("{base}{path}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn schema(name: &str) -> Value {
    json!({"schema": format!(r#"{{"type":"record","name":"{name}","fields":[]}}"#)})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_writes_followers_forward_and_take_over() {
    let node = TestNode::start(&[("group.initial.rebalance.delay.ms", "0")]).await;
    let first = instance(&node).await;
    let second = instance(&node).await;
    let timeout = Duration::from_secs(30);
    let leaders = [
        first.app.leadership.wait_for_leader(timeout).await,
        second.app.leadership.wait_for_leader(timeout).await,
    ];
    // Both joined one group: exactly one leads, the other points at it (the second may
    // have seen a generation of its own first; wait for the one with both).
    let deadline = std::time::Instant::now() + timeout;
    let (leader, follower) = loop {
        let a = first.app.leadership.leader();
        let b = second.app.leadership.leader();
        match (&a, &b) {
            (Leader::Me, Leader::Remote(url)) if *url == first.url() => break (&first, &second),
            (Leader::Remote(url), Leader::Me) if *url == second.url() => break (&second, &first),
            _ => {}
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no single leader: {a:?} {b:?} (first seen {leaders:?})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    // A write to the follower is forwarded; both then serve it.
    assert_eq!(
        post(&follower.url(), "/subjects/a/versions", schema("A")).await,
        (200, json!({"id": 1}))
    );
    assert_eq!(
        post(&leader.url(), "/subjects/b/versions", schema("B")).await,
        (200, json!({"id": 2}))
    );
    for base in [leader.url(), follower.url()] {
        let deadline = std::time::Instant::now() + timeout;
        while get(&base, "/subjects").await != json!(["a", "b"]) {
            assert!(
                std::time::Instant::now() < deadline,
                "{base} never read both writes"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // The leader leaves; the follower takes over and continues the ids.
    let (leader, follower) = if std::ptr::eq(leader, &first) {
        (first, second)
    } else {
        (second, first)
    };
    leader.shutdown().await;
    let deadline = std::time::Instant::now() + timeout;
    while follower.app.leadership.leader() != Leader::Me {
        assert!(
            std::time::Instant::now() < deadline,
            "the follower never took over"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        post(&follower.url(), "/subjects/c/versions", schema("C")).await,
        (200, json!({"id": 3}))
    );
    follower.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_eligible_instance_writes_get_unknown_leader() {
    let node = TestNode::start(&[("group.initial.rebalance.delay.ms", "0")]).await;
    let mut config = RegistryConfig::new(
        vec![node.address.to_string()],
        "127.0.0.1:0".parse().unwrap(),
    );
    config.store.replication_factor = 1;
    config.store.timeout = Duration::from_secs(2);
    config.leader_eligibility = false;
    let registry = start(config).await.expect("the registry starts");
    let (status, body) = post(&registry.url(), "/subjects/a/versions", schema("A")).await;
    assert_eq!(
        (status, body["error_code"].clone()),
        (500, json!(50004)),
        "{body}"
    );
    // Reads need no leader.
    assert_eq!(get(&registry.url(), "/subjects").await, json!([]));
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_cannot_be_reached_is_a_forwarding_error() {
    use sluice_registry::http::{App, router};
    use sluice_registry::kafka_store::{KafkaStore, KafkaStoreConfig};
    use sluice_registry::leader::Leadership;
    use sluice_registry::registry::{Registry, RegistrySettings};

    let node = TestNode::start(&[("group.initial.rebalance.delay.ms", "0")]).await;
    let mut store = KafkaStoreConfig::new(vec![node.address.to_string()]);
    store.replication_factor = 1;
    let store = KafkaStore::start(store).await.unwrap();
    // A port nothing listens on.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let app = std::sync::Arc::new(App {
        registry: Registry::new(store, RegistrySettings::default()),
        leadership: Leadership::fixed("g", Leader::Remote(dead_url)),
        http: reqwest::Client::new(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router(app)).await });
    let (status, body) = post(&base, "/subjects/a/versions", schema("A")).await;
    assert_eq!(
        (status, body["error_code"].clone()),
        (500, json!(50003)),
        "{body}"
    );
    assert_eq!(get(&base, "/subjects").await, json!([]));
}
