//! Burrow's HTTP API v3 as Sluice's monitor serves it: every route's status code and JSON
//! shape (Burrow's envelope `error`/`message`/`request` and its payload keys, from
//! `core/internal/httpserver` at Burrow commit ced55ba9), over storage fed the requests
//! the cluster and consumer modules would send. No broker is needed: the modules are not
//! started, the monitor's storage is fed directly.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use sluice_monitor::config::Config;
use sluice_monitor::monitor::Monitor;
use sluice_monitor::types::StorageRequest;

const CONFIG: &str = r#"
[general]
access-control-allow-origin="*"
[cluster.local]
servers=["127.0.0.1:9"]
[storage.default]
class-name="inmemory"
intervals=3
min-distance=0
[evaluator.default]
expire-cache=0
[notifier.mail]
class-name="email"
server="127.0.0.1"
port=25
from="a@example.com"
to="b@example.com"
password="secret"
"#;

fn now_ms() -> i64 {
    let elapsed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    i64::try_from(elapsed.as_millis()).expect("fits")
}

/// A monitor whose storage holds topic `orders` (2 partitions, log end 100 and 50) and
/// group `billing` committing partition 0 at 40, 60, 80 a second apart (lag falling:
/// OK) and partition 1 at 10, 10, 10 with lag (STALL).
fn monitor() -> Monitor {
    let config = Config::from_toml(CONFIG, "test.toml").expect("valid config");
    let monitor = Monitor::new(config).expect("monitor");
    let now = now_ms();
    for (partition, offset) in [(0, 100), (1, 50)] {
        monitor.apply(StorageRequest::SetBrokerOffset {
            cluster: "local".into(),
            topic: "orders".into(),
            partition,
            topic_partition_count: 2,
            offset,
            timestamp_ms: now - 3_000,
        });
    }
    for (index, (first, second)) in [(40, 10), (60, 10), (80, 10)].into_iter().enumerate() {
        let at = now - 3_000 + 1_000 * index as i64;
        for (partition, offset) in [(0, first), (1, second)] {
            monitor.apply(StorageRequest::SetConsumerOffset {
                cluster: "local".into(),
                group: "billing".into(),
                topic: "orders".into(),
                partition,
                offset,
                order: index as i64 * 2 + i64::from(partition),
                timestamp_ms: at,
                observed_ms: at,
            });
        }
    }
    monitor.apply(StorageRequest::SetConsumerOwner {
        cluster: "local".into(),
        group: "billing".into(),
        topic: "orders".into(),
        partition: 0,
        owner: "/10.0.0.1".into(),
        client_id: "billing-1".into(),
    });
    monitor
}

async fn serve(monitor: Monitor) -> (String, tokio::sync::watch::Sender<bool>) {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let (bound, _) =
        sluice_monitor::http::serve(monitor, "127.0.0.1:0".parse().expect("literal"), stopped)
            .await
            .expect("binds");
    (format!("http://{bound}"), stop)
}

async fn call(method: reqwest::Method, url: &str) -> (u16, Option<String>, String) {
    let response = reqwest::Client::new()
        .request(method, url)
        .send()
        .await
        .expect("the API answers");
    let status = response.status().as_u16();
    let cors = response
        .headers()
        .get("access-control-allow-origin")
        .map(|value| value.to_str().unwrap_or("").to_string());
    (status, cors, response.text().await.expect("a body"))
}

async fn get_json(base: &str, path: &str) -> (u16, Value) {
    let (status, cors, body) = call(reqwest::Method::GET, &format!("{base}{path}")).await;
    assert_eq!(
        cors.as_deref(),
        Some("*"),
        "{path}: access-control-allow-origin from [general]"
    );
    let value: Value =
        serde_json::from_str(&body).unwrap_or_else(|_| panic!("{path}: not JSON: {body}"));
    (status, value)
}

/// Burrow's envelope: `error`, `message`, `request.url`; the payload beside them.
fn envelope(path: &str, value: &Value, error: bool, message: &str) {
    assert_eq!(value["error"], json!(error), "{path}: {value}");
    assert_eq!(value["message"], json!(message), "{path}: {value}");
    assert_eq!(
        value["request"]["url"],
        json!(path.split('?').next().unwrap_or(path)),
        "{path}"
    );
    assert!(value["request"]["host"].is_string(), "{path}: request.host");
}

#[tokio::test]
async fn every_route_answers_with_burrows_codes_and_shapes() {
    let (base, _stop) = serve(monitor()).await;

    let (status, body) = call(reqwest::Method::GET, &format!("{base}/burrow/admin"))
        .await
        .into_status_body();
    assert_eq!((status, body.as_str()), (200, "GOOD"));
    // The modules never ran, so no cluster has had its first log end offsets read.
    let (status, body) = call(reqwest::Method::GET, &format!("{base}/burrow/admin/ready"))
        .await
        .into_status_body();
    assert_eq!((status, body.as_str()), (503, "STARTING"));

    let cases: &[(&str, u16, bool, &str, &str, Value)] = &[
        (
            "/v3/kafka",
            200,
            false,
            "cluster list returned",
            "clusters",
            json!(["local"]),
        ),
        (
            "/v3/kafka/local/topic",
            200,
            false,
            "topic list returned",
            "topics",
            json!(["orders"]),
        ),
        (
            "/v3/kafka/local/topic/orders",
            200,
            false,
            "topic offsets returned",
            "offsets",
            json!([100, 50]),
        ),
        (
            "/v3/kafka/local/topic/orders/consumers",
            200,
            false,
            "consumers of topic returned",
            "consumers",
            json!(["billing"]),
        ),
        (
            "/v3/kafka/local/consumer",
            200,
            false,
            "consumer list returned",
            "consumers",
            json!(["billing"]),
        ),
        (
            "/v3/kafka/nowhere/topic",
            404,
            true,
            "cluster not found",
            "",
            Value::Null,
        ),
        (
            "/v3/kafka/local/topic/nothing",
            404,
            true,
            "cluster or topic not found",
            "",
            Value::Null,
        ),
        (
            "/v3/kafka/nowhere/consumer",
            404,
            true,
            "cluster not found",
            "",
            Value::Null,
        ),
        (
            "/v3/kafka/local/consumer/nobody",
            404,
            true,
            "cluster or consumer not found",
            "",
            Value::Null,
        ),
        (
            "/v3/kafka/nowhere",
            404,
            true,
            "cluster module not found",
            "",
            Value::Null,
        ),
    ];
    for (path, code, error, message, key, expected) in cases {
        let (status, value) = get_json(&base, path).await;
        assert_eq!(status, *code, "{path}: {value}");
        envelope(path, &value, *error, message);
        if !key.is_empty() {
            assert_eq!(&value[*key], expected, "{path}");
        }
    }

    // A group's stored windows, Burrow's ConsumerPartition shape (3 slots, oldest first).
    let (status, detail) = get_json(&base, "/v3/kafka/local/consumer/billing").await;
    assert_eq!(status, 200);
    envelope(
        "/v3/kafka/local/consumer/billing",
        &detail,
        false,
        "consumer detail returned",
    );
    let partitions = detail["topics"]["orders"]
        .as_array()
        .expect("a topic's partitions");
    assert_eq!(partitions.len(), 2);
    let offsets: Vec<i64> = partitions[0]["offsets"]
        .as_array()
        .expect("offsets")
        .iter()
        .map(|slot| slot["offset"].as_i64().expect("a full slot"))
        .collect();
    assert_eq!(offsets, [40, 60, 80]);
    for key in ["offset", "timestamp", "observedAt", "lag"] {
        assert!(
            partitions[0]["offsets"][0].get(key).is_some(),
            "slot key {key}"
        );
    }
    assert_eq!(partitions[0]["owner"], json!("/10.0.0.1"));
    assert_eq!(partitions[0]["client_id"], json!("billing-1"));
    assert_eq!(partitions[1]["current-lag"], json!(40));

    // /status lists only unhealthy partitions, /lag every one; both carry the group's.
    for (path, listed) in [
        ("/v3/kafka/local/consumer/billing/status", vec![1]),
        ("/v3/kafka/local/consumer/billing/lag", vec![0, 1]),
    ] {
        let (status, value) = get_json(&base, path).await;
        assert_eq!(status, 200, "{path}");
        envelope(path, &value, false, "consumer status returned");
        let group = &value["status"];
        assert_eq!(group["cluster"], json!("local"));
        assert_eq!(group["group"], json!("billing"));
        assert_eq!(
            group["status"],
            json!("ERR"),
            "a STALL partition makes an ERR group"
        );
        assert_eq!(group["partition_count"], json!(2));
        assert_eq!(group["totallag"], json!(20 + 40));
        assert_eq!(group["maxlag"]["partition"], json!(1));
        let shown: Vec<i64> = group["partitions"]
            .as_array()
            .expect("partitions")
            .iter()
            .map(|partition| partition["partition"].as_i64().expect("partition"))
            .collect();
        assert_eq!(shown, listed, "{path}");
        let stalled = group["partitions"]
            .as_array()
            .and_then(|partitions| partitions.iter().find(|p| p["partition"] == json!(1)))
            .expect("partition 1");
        assert_eq!(stalled["status"], json!("STALL"));
        for key in [
            "topic",
            "owner",
            "client_id",
            "start",
            "end",
            "current_lag",
            "complete",
        ] {
            assert!(stalled.get(key).is_some(), "{path}: partition key {key}");
        }
    }
    let (status, value) = get_json(&base, "/v3/kafka/local/consumer/nobody/status").await;
    assert_eq!(status, 404);
    assert_eq!(value["status"]["status"], json!("NOTFOUND"));

    // Config: the sections and their modules; a notifier's password is never shown.
    let (status, value) = get_json(&base, "/v3/config").await;
    assert_eq!(status, 200);
    assert!(
        value["general"].is_object() && value["httpserver"].is_object(),
        "{value}"
    );
    let (_, value) = get_json(&base, "/v3/config/notifier").await;
    assert_eq!(value["modules"], json!(["mail"]));
    let (_, value) = get_json(&base, "/v3/config/notifier/mail").await;
    assert_eq!(value["module"]["server"], json!("127.0.0.1"));
    assert!(value["module"].get("password").is_none(), "{value}");
    let (_, value) = get_json(&base, "/v3/config/cluster/local").await;
    assert_eq!(value["module"]["servers"], json!(["127.0.0.1:9"]));
    assert_eq!(
        value["module"]["offset-refresh"],
        json!(10),
        "Burrow's default"
    );

    // Unknown paths: Burrow's catch-all 404.
    let (status, _, body) = call(reqwest::Method::GET, &format!("{base}/v2/kafka")).await;
    assert_eq!(status, 404);
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("JSON"),
        json!({"error": true, "message": "invalid request type", "result": {}})
    );

    // DELETE one topic of a group, then the group: gone from the list and NOTFOUND.
    let (status, _, _) = call(
        reqwest::Method::DELETE,
        &format!("{base}/v3/kafka/local/consumer/billing/topic/orders"),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _, body) = call(
        reqwest::Method::DELETE,
        &format!("{base}/v3/kafka/local/consumer/billing"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (_, value) = get_json(&base, "/v3/kafka/local/consumer").await;
    assert_eq!(value["consumers"], json!([]));
    let (status, value) = get_json(&base, "/v3/kafka/local/consumer/billing/lag").await;
    assert_eq!(
        (status, &value["status"]["status"]),
        (404, &json!("NOTFOUND"))
    );
    let (status, _, _) = call(
        reqwest::Method::DELETE,
        &format!("{base}/v3/kafka/nowhere/consumer/billing"),
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn lag_metrics_carry_kafka_exporters_and_burrows_names() {
    let (base, _stop) = serve(monitor()).await;
    let (status, _, text) = call(reqwest::Method::GET, &format!("{base}/metrics")).await;
    assert_eq!(status, 200);
    for series in [
        r#"kafka_consumergroup_lag{cluster="local",consumergroup="billing",topic="orders",partition="0"} 20"#,
        r#"kafka_consumergroup_lag{cluster="local",consumergroup="billing",topic="orders",partition="1"} 40"#,
        r#"kafka_consumergroup_lag_sum{cluster="local",consumergroup="billing",topic="orders"} 60"#,
        r#"kafka_consumergroup_current_offset{cluster="local",consumergroup="billing",topic="orders",partition="0"} 80"#,
        r#"burrow_kafka_consumer_status{cluster="local",consumer_group="billing"} 3"#,
        r#"burrow_kafka_consumer_lag_total{cluster="local",consumer_group="billing"} 60"#,
        r#"burrow_kafka_topic_partition_status{cluster="local",consumer_group="billing",topic="orders",partition="1"} 5"#,
        r#"burrow_kafka_topic_partition_offset{cluster="local",topic="orders",partition="0"} 100"#,
    ] {
        assert!(text.contains(series), "missing {series} in:\n{text}");
    }
}

trait StatusBody {
    fn into_status_body(self) -> (u16, String);
}

impl StatusBody for (u16, Option<String>, String) {
    fn into_status_body(self) -> (u16, String) {
        (self.0, self.2)
    }
}
