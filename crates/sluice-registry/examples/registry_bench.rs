//! Load generator of `bench/registry`: registrations/s (`POST /subjects/{s}/versions`,
//! each a new Avro schema, so each is a write through `_schemas`) and lookups/s
//! (`GET /schemas/ids/{id}`, served from the registry's memory) against a running
//! registry, with `--concurrency` requests in flight over keep-alive connections.
//!
//!     registry_bench --registry http://127.0.0.1:8081 --registrations 2000 \
//!         --lookup-seconds 10 --concurrency 1,8,64
//!
//! Prints one line per phase: `phase concurrency requests seconds per_second p50_us p99_us`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

struct Args {
    registry: String,
    registrations: usize,
    lookup_seconds: u64,
    concurrency: Vec<usize>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        registry: "http://127.0.0.1:8081".to_string(),
        registrations: 2000,
        lookup_seconds: 10,
        concurrency: vec![1, 8, 64],
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--registry" => args.registry = value()?,
            "--registrations" => {
                args.registrations = value()?.parse().map_err(|e| format!("{e}"))?
            }
            "--lookup-seconds" => {
                args.lookup_seconds = value()?.parse().map_err(|e| format!("{e}"))?
            }
            "--concurrency" => {
                args.concurrency = value()?
                    .split(',')
                    .map(|c| c.trim().parse::<usize>().map_err(|e| format!("{e}")))
                    .collect::<Result<_, _>>()?
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn report(phase: &str, concurrency: usize, mut latencies: Vec<u64>, elapsed: Duration) {
    latencies.sort_unstable();
    println!(
        "{phase} {concurrency} {} {:.2} {:.0} {} {}",
        latencies.len(),
        elapsed.as_secs_f64(),
        latencies.len() as f64 / elapsed.as_secs_f64(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );
}

#[tokio::main]
async fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("registry_bench: {e}");
            std::process::exit(2);
        }
    };
    let http = reqwest::Client::new();
    let base = args.registry.trim_end_matches('/').to_string();
    let run = format!("{:x}", std::process::id());
    let mut ids = Vec::new();

    for &concurrency in &args.concurrency {
        // Registrations: distinct records, one subject per worker (a subject's versions
        // are checked for compatibility against the latest, as a user's evolution is).
        let next = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let mut workers = Vec::new();
        for worker in 0..concurrency {
            let (http, base, next, run) = (http.clone(), base.clone(), next.clone(), run.clone());
            let total = args.registrations;
            workers.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut ids = Vec::new();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= total {
                        break;
                    }
                    let schema = json!({
                        "type": "record",
                        // One record per subject, evolved by a field with a default:
                        // BACKWARD compatible with the version before.
                        "name": format!("W{worker}"),
                        "namespace": "bench",
                        "fields": [{"name": format!("f{n}"), "type": "long", "default": 0}]
                    });
                    let subject = format!("bench-{run}-c{concurrency}-w{worker}");
                    let t = Instant::now();
                    let response = http
                        .post(format!("{base}/subjects/{subject}/versions"))
                        .header("content-type", "application/vnd.schemaregistry.v1+json")
                        .body(json!({"schema": schema.to_string()}).to_string())
                        .send()
                        .await
                        .expect("the registry answers");
                    let status = response.status();
                    let body: serde_json::Value = response.json().await.expect("JSON");
                    assert!(status.is_success(), "registration failed: {status} {body}");
                    latencies.push(t.elapsed().as_micros() as u64);
                    ids.push(body["id"].as_i64().expect("an id"));
                }
                (latencies, ids)
            }));
        }
        let mut latencies = Vec::new();
        for worker in workers {
            let (l, i) = worker.await.expect("worker");
            latencies.extend(l);
            ids.extend(i);
        }
        report("register", concurrency, latencies, started.elapsed());
    }

    let ids = Arc::new(ids);
    for &concurrency in &args.concurrency {
        let deadline = Instant::now() + Duration::from_secs(args.lookup_seconds);
        let started = Instant::now();
        let mut workers = Vec::new();
        for worker in 0..concurrency {
            let (http, base, ids) = (http.clone(), base.clone(), ids.clone());
            workers.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut i = worker;
                while Instant::now() < deadline {
                    let id = ids[i % ids.len()];
                    i += 7;
                    let t = Instant::now();
                    let response = http
                        .get(format!("{base}/schemas/ids/{id}"))
                        .send()
                        .await
                        .expect("the registry answers");
                    assert!(response.status().is_success(), "lookup of {id} failed");
                    let _ = response.bytes().await.expect("a body");
                    latencies.push(t.elapsed().as_micros() as u64);
                }
                latencies
            }));
        }
        let mut latencies = Vec::new();
        for worker in workers {
            latencies.extend(worker.await.expect("worker"));
        }
        report("lookup", concurrency, latencies, started.elapsed());
    }
}
