//! The web console over HTTP, without a browser (compat/console drives it in headless
//! Chromium): `sluice server --with-console` serves every page; topic changes are applied
//! whole or refused with the broker's error on the field it is about, leaving nothing
//! half-done; `sluice console` against the same node in read-only mode shows no form and
//! refuses every change; a bad console setting is refused naming its key.

mod process;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

struct Console {
    base: String,
    http: reqwest::Client,
}

impl Console {
    async fn get(&self, path: &str) -> (u16, String) {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }
}

/// Kills the process when dropped, so a failed assertion leaves no server behind.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn error_field(body: &Value) -> (&str, &str) {
    (
        body["error"]["field"].as_str().unwrap_or(""),
        body["error"]["message"].as_str().unwrap_or(""),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_changes_topics_whole_or_not_at_all_and_read_only_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, address, url) = process::start_with_args(
        dir.path(),
        &[
            "group.initial.rebalance.delay.ms=0",
            "console.sample.interval.ms=500",
        ],
        &["--with-console", "--console-listen", "127.0.0.1:0"],
        "sluice: console on ",
    );
    let _broker = Killed(broker);
    let console = Console {
        base: url.trim_end_matches('/').to_string(),
        http: reqwest::Client::new(),
    };

    // The overview: the cluster, its one broker, the quorum, the health signals.
    let response = console
        .http
        .get(format!("{}/", console.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("default-src 'self'"), "{csp}");
    let page = response.text().await.unwrap();
    assert!(page.contains("id=\"cluster-id\""), "{page}");
    assert!(
        page.contains(&address.to_string()),
        "the broker's endpoint: {page}"
    );
    assert!(
        page.contains("card ok\" id=\"active-controllers\""),
        "{page}"
    );
    assert!(page.contains("<a href=\"/topics\">Topics</a>"), "{page}");
    assert!(
        page.contains("<a href=\"/groups\">Consumer groups</a>"),
        "{page}"
    );
    for asset in ["console.js", "console.css", "messages.js"] {
        assert_eq!(
            console.get(&format!("/assets/{asset}")).await.0,
            200,
            "{asset}"
        );
    }
    let (status, page) = console.get("/no/such/page").await;
    assert_eq!(status, 404);
    assert!(
        page.contains("There is no page at /no/such/page."),
        "{page}"
    );
    let (status, body) = console.post("/api/no-such-api", json!({})).await;
    assert_eq!(status, 404);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no such API")
    );

    // An invalid config: the broker's error, on the configs field, and no topic.
    let (status, body) = console
        .post(
            "/api/topics",
            json!({"name": "orders", "partitions": 3, "replication_factor": 1,
                   "configs": "cleanup.policy=compact\nretention.ms=soon"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (field, message) = error_field(&body);
    assert_eq!(field, "configs");
    assert!(
        message.starts_with("INVALID_CONFIG: Invalid value soon for configuration retention.ms"),
        "{message}"
    );
    assert_eq!(console.get("/topics/orders").await.0, 404);
    let (status, body) = console
        .post(
            "/api/topics",
            json!({"name": "orders", "configs": "just words"}),
        )
        .await;
    assert_eq!((status, error_field(&body).0), (400, "configs"), "{body}");
    let (status, body) = console
        .post(
            "/api/topics",
            json!({"name": "orders", "replication_factor": 3}),
        )
        .await;
    assert_eq!(
        (status, error_field(&body).0),
        (400, "replication_factor"),
        "one broker cannot hold 3 replicas: {body}"
    );
    assert_eq!(console.get("/topics/orders").await.0, 404);

    // Created; the list shows it at once; a second create is the broker's conflict.
    let (status, body) = console
        .post(
            "/api/topics",
            json!({"name": "orders", "partitions": 3, "configs": "retention.ms=3600000"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["redirect"], "/topics/orders");
    let (_, list) = console.get("/topics").await;
    assert!(
        list.contains("<a href=\"/topics/orders\">orders</a>"),
        "{list}"
    );
    let (status, body) = console.post("/api/topics", json!({"name": "orders"})).await;
    assert_eq!((status, error_field(&body).0), (409, "name"), "{body}");

    // The topic's page: partitions, configs with their sources.
    let (status, page) = console.get("/topics/orders").await;
    assert_eq!(status, 200);
    assert_eq!(
        page.matches("<tr><td>").count(),
        3,
        "three partitions: {page}"
    );
    assert!(
        page.contains("<tr data-config=\"retention.ms\"><td class=\"mono\">retention.ms</td><td><span class=\"mono\">3600000</span></td><td><span class=\"badge ok\">topic</span>"),
        "{page}"
    );
    assert!(
        page.contains("<tr data-config=\"segment.bytes\">"),
        "{page}"
    );
    assert!(
        page.contains("<span class=\"badge muted\">default</span>"),
        "{page}"
    );

    // Config edits: an invalid value and an unknown key change nothing.
    let (status, body) = console
        .post(
            "/api/topics/orders/configs",
            json!({"config_name": "cleanup.policy", "config_value": "shred", "op": "set"}),
        )
        .await;
    assert_eq!(
        (status, error_field(&body).0),
        (400, "config_value"),
        "{body}"
    );
    let (status, body) = console
        .post(
            "/api/topics/orders/configs",
            json!({"config_name": "no.such.config", "config_value": "1", "op": "set"}),
        )
        .await;
    assert_eq!(
        (status, error_field(&body).0),
        (400, "config_name"),
        "{body}"
    );
    let (_, page) = console.get("/topics/orders").await;
    assert!(
        page.contains("<tr data-config=\"cleanup.policy\"><td class=\"mono\">cleanup.policy</td><td><span class=\"mono\">delete</span>"),
        "{page}"
    );
    let (status, _) = console
        .post(
            "/api/topics/orders/configs",
            json!({"config_name": "retention.ms", "op": "delete"}),
        )
        .await;
    assert_eq!(status, 200);
    let (_, page) = console.get("/topics/orders").await;
    assert!(
        page.contains("<tr data-config=\"retention.ms\"><td class=\"mono\">retention.ms</td><td><span class=\"mono\">604800000</span></td><td><span class=\"badge muted\">default</span>"),
        "reset to Kafka's default: {page}"
    );

    // Partitions only grow.
    let (status, body) = console
        .post("/api/topics/orders/partitions", json!({"partitions": 2}))
        .await;
    assert_eq!(
        (status, error_field(&body).0),
        (400, "partitions"),
        "{body}"
    );
    assert!(
        error_field(&body).1.starts_with("INVALID_PARTITIONS"),
        "{body}"
    );
    let (status, _) = console
        .post("/api/topics/orders/partitions", json!({"partitions": 4}))
        .await;
    assert_eq!(status, 200);
    assert!(
        console
            .get("/topics/orders")
            .await
            .1
            .contains("4 partitions")
    );

    // The planner: the guide's reasoning, and each bad field named.
    let (status, page) = console
        .get("/plan?target=100MB%2Fs&consumers=&growth=&topic=orders")
        .await;
    assert_eq!(status, 200);
    assert!(
        page.contains("<span id=\"plan-partitions\">20</span>"),
        "{page}"
    );
    assert!(
        page.contains("orders</a> has 4 partitions, 16 short"),
        "{page}"
    );
    let (_, page) = console.get("/plan?target=fast&consumers=-1").await;
    assert!(!page.contains("plan-partitions"), "{page}");
    assert!(
        page.contains("data-error-for=\"consumers\" role=\"alert\">a whole number"),
        "{page}"
    );

    // `sluice console` against the same node, read-only: no form, every change refused.
    let mut read_only_process = Command::new(process::SLUICE)
        .args(["console", "--bootstrap-server", &address.to_string()])
        .args(["--listen", "127.0.0.1:0", "--set", "console.read.only=true"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(read_only_process.stderr.take().unwrap());
    let read_only = Killed(read_only_process);
    let mut line = String::new();
    let base = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "sluice console exited"
        );
        if let Some(url) = line.trim().strip_prefix("sluice console: serving on ") {
            break url.trim_end_matches('/').to_string();
        }
    };
    std::thread::spawn(move || for _ in stderr.lines() {});
    let viewer = Console {
        base,
        http: reqwest::Client::new(),
    };
    let (status, page) = viewer.get("/topics").await;
    assert_eq!(status, 200);
    assert!(page.contains("read-only"), "{page}");
    assert!(!page.contains("class=\"api-form\""), "no form: {page}");
    let (_, page) = viewer.get("/topics/orders").await;
    assert!(
        page.contains("4 partitions") && !page.contains("api-form"),
        "{page}"
    );
    for (path, body) in [
        ("/api/topics", json!({"name": "sneaky"})),
        ("/api/topics/orders/partitions", json!({"partitions": 9})),
        ("/api/topics/orders/delete", json!({"confirm": "orders"})),
        (
            "/api/topics/orders/configs",
            json!({"config_name": "retention.ms", "config_value": "1"}),
        ),
    ] {
        let (status, body) = viewer.post(path, body).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert!(error_field(&body).1.contains("read-only"), "{body}");
    }
    assert_eq!(console.get("/topics/sneaky").await.0, 404);
    assert!(
        console
            .get("/topics/orders")
            .await
            .1
            .contains("4 partitions")
    );
    drop(read_only);

    // Deleting needs the name typed.
    let (status, body) = console
        .post("/api/topics/orders/delete", json!({"confirm": "order"}))
        .await;
    assert_eq!((status, error_field(&body).0), (400, "confirm"), "{body}");
    assert_eq!(console.get("/topics/orders").await.0, 200);
    let (status, body) = console
        .post("/api/topics/orders/delete", json!({"confirm": "orders"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["redirect"], "/topics");
}

#[test]
fn a_bad_console_setting_is_refused_naming_its_key() {
    let output = Command::new(process::SLUICE)
        .args(["console", "--bootstrap-server", "127.0.0.1:9"])
        .args([
            "--listen",
            "127.0.0.1:0",
            "--set",
            "console.read.only=maybe",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("console.read.only: 'maybe' is not true or false"),
        "{stderr}"
    );
    let output = Command::new(process::SLUICE)
        .args(["console", "--set", "console.colour=blue"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("unknown console setting 'console.colour'"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
