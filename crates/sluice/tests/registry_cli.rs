//! `sluice registry`: a standalone registry process against a running `sluice server`,
//! configured from a Confluent `schema-registry.properties` file; and a bad config key
//! refused with a message naming it.

mod process;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_registry_reads_confluents_properties() {
    let dir = tempfile::tempdir().unwrap();
    let (mut broker, address) = process::start(dir.path(), &["group.initial.rebalance.delay.ms=0"]);
    let properties = dir.path().join("schema-registry.properties");
    std::fs::write(
        &properties,
        format!(
            "# Confluent's keys\nlisteners=http://127.0.0.1:0\n\
             kafkastore.bootstrap.servers=PLAINTEXT://{address}\n\
             kafkastore.topic=_schemas_cli\nschema.compatibility.level=full_transitive\n"
        ),
    )
    .unwrap();
    let mut registry = Command::new(process::SLUICE)
        .args(["registry", "--config"])
        .arg(&properties)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(registry.stderr.take().unwrap());
    let mut line = String::new();
    let base = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the registry exited"
        );
        if let Some(url) = line
            .trim()
            .strip_prefix("sluice: schema registry listening on ")
        {
            break url.to_string();
        }
    };
    std::thread::spawn(move || for _ in stderr.lines() {});

    let http = reqwest::Client::new();
    let config: Value = http
        .get(format!("{base}/config"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(config, json!({"compatibilityLevel": "FULL_TRANSITIVE"}));
    let registered: Value = http
        .post(format!("{base}/subjects/cli-value/versions"))
        .header("content-type", "application/json")
        .body(json!({"schema": "\"string\""}).to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(registered, json!({"id": 1}));
    // The schema went to the topic the file named.
    let topics = Command::new(process::SLUICE)
        .args(["topic", "list", "--bootstrap-server", &address.to_string()])
        .output()
        .unwrap();
    let topics = String::from_utf8_lossy(&topics.stdout);
    assert!(
        topics.lines().any(|topic| topic.trim() == "_schemas_cli"),
        "{topics}"
    );

    registry.kill().unwrap();
    registry.wait().unwrap();
    broker.kill().unwrap();
    broker.wait().unwrap();
}

#[test]
fn a_bad_registry_config_is_refused_naming_the_key() {
    for (setting, key) in [
        (
            "schema.compatibility.level=SIDEWAYS",
            "schema.compatibility.level",
        ),
        ("no.such.key=1", "no.such.key"),
    ] {
        let output = Command::new(process::SLUICE)
            .args(["registry", "--set", setting])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{setting}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(key), "{setting}: {stderr}");
    }
}
