//! The registry's write path under SIGKILL. A registration is acknowledged (200 with an
//! id) only after the broker acknowledged its `_schemas` record with `acks=all` and the
//! registry's reader applied it; so after `sluice server --with-registry` is SIGKILLed
//! mid-stream and restarted on the same log directory, every acknowledged
//! (subject, version, id) must be served again, ids must still name one schema each, and
//! new registrations must continue above every id handed out.

mod process;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const ROUNDS: usize = 3;

fn schema(n: usize) -> String {
    // One record per subject, evolved by a field with a default (BACKWARD compatible).
    json!({"type": "record", "name": "Evolving", "namespace": "crash",
           "fields": [{"name": format!("f{n}"), "type": "long", "default": 0}]})
    .to_string()
}

async fn register(http: &reqwest::Client, base: &str, subject: &str, n: usize) -> Option<i64> {
    let response = http
        .post(format!("{base}/subjects/{subject}/versions"))
        .header("content-type", "application/vnd.schemaregistry.v1+json")
        .body(json!({"schema": schema(n)}).to_string())
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json::<Value>().await.ok()?["id"].as_i64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_registrations_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    // (subject, n) → acknowledged id
    let mut acknowledged: BTreeMap<(String, usize), i64> = BTreeMap::new();
    let mut n = 0;
    for round in 0..ROUNDS {
        let (mut child, _, base) =
            process::start_with_registry(dir.path(), &["group.initial.rebalance.delay.ms=0"]);
        // What the earlier rounds acknowledged is all there.
        check(&http, &base, &acknowledged).await;

        // Register until a kill lands at a moment chosen by time, not by progress: the
        // clock starts at the round's first acknowledged registration (a loaded machine
        // can take longer than the window to serve the first one), and waits for it at
        // most 30 s.
        let kill_after = Duration::from_millis(300 + 250 * round as u64);
        let mut started: Option<Instant> = None;
        let waiting_since = Instant::now();
        let subject = format!("crash-{round}");
        while started.is_none_or(|t| t.elapsed() < kill_after)
            && waiting_since.elapsed() < Duration::from_secs(30)
        {
            n += 1;
            if let Some(id) = register(&http, &base, &subject, n).await {
                acknowledged.insert((subject.clone(), n), id);
                started.get_or_insert_with(Instant::now);
            }
        }
        // An in-flight registration races the kill: it may or may not land.
        let in_flight = {
            let (http, base, subject) = (http.clone(), base.clone(), subject.clone());
            let m = n + 1;
            tokio::spawn(async move { register(&http, &base, &subject, m).await })
        };
        tokio::time::sleep(Duration::from_millis(2)).await;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        if let Ok(Some(id)) = in_flight.await {
            acknowledged.insert((subject, n + 1), id);
        }
        n += 1;
    }
    assert!(
        acknowledged.len() >= ROUNDS,
        "too few registrations to judge: {}",
        acknowledged.len()
    );
    let (mut child, _, base) =
        process::start_with_registry(dir.path(), &["group.initial.rebalance.delay.ms=0"]);
    check(&http, &base, &acknowledged).await;
    // A new schema's id continues above every id handed out.
    let max = acknowledged.values().copied().max().unwrap();
    let id = register(&http, &base, "after", n + 1)
        .await
        .expect("a registration after restart");
    assert!(id > max, "id {id} reuses one at or below {max}");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Every acknowledged registration is served: by subject (its schema is among the
/// subject's versions, under its id) and by id (that schema).
async fn check(http: &reqwest::Client, base: &str, acknowledged: &BTreeMap<(String, usize), i64>) {
    for ((subject, n), id) in acknowledged {
        let by_id: Value = http
            .get(format!("{base}/schemas/ids/{id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(by_id["schema"].as_str().unwrap_or("null")).ok(),
            serde_json::from_str::<Value>(&schema(*n)).ok(),
            "id {id} of {subject} #{n}: {by_id}"
        );
        let lookup: Value = http
            .post(format!("{base}/subjects/{subject}"))
            .header("content-type", "application/vnd.schemaregistry.v1+json")
            .body(json!({"schema": schema(*n)}).to_string())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(lookup["id"].as_i64(), Some(*id), "{subject} #{n}: {lookup}");
    }
}
