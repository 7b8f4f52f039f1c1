//! `sluice registry`: a schema registry against a running cluster, configured with
//! Confluent's `schema-registry.properties` keys; and the in-process registry of
//! `sluice server --with-registry`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use sluice_registry::server::{RegistryConfig, start};

#[derive(clap::Args, Debug)]
pub struct RegistryArgs {
    /// A `schema-registry.properties` file (Confluent's keys: `listeners`,
    /// `kafkastore.bootstrap.servers`, `kafkastore.topic`, `schema.compatibility.level`, ...).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Override one key, `key=value`; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// The cluster (`kafkastore.bootstrap.servers`), when no config file names it.
    #[arg(long, default_value = "127.0.0.1:9092", value_delimiter = ',')]
    bootstrap_server: Vec<String>,
    /// The HTTP address (`listeners`), when no config file names it.
    #[arg(long, default_value = "127.0.0.1:8081")]
    listen: String,
}

pub fn run(args: RegistryArgs) -> anyhow::Result<()> {
    let mut entries = BTreeMap::new();
    entries.insert(
        "kafkastore.bootstrap.servers".to_string(),
        args.bootstrap_server.join(","),
    );
    entries.insert("listeners".to_string(), format!("http://{}", args.listen));
    if let Some(path) = &args.config {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        for (key, value) in properties(&text) {
            entries.insert(key, value);
        }
    }
    for entry in &args.overrides {
        let (key, value) = entry
            .split_once('=')
            .with_context(|| format!("--set {entry}: expected key=value"))?;
        entries.insert(key.trim().to_string(), value.trim().to_string());
    }
    let config = RegistryConfig::from_map(&entries)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let running = start(config).await?;
        eprintln!("sluice: schema registry listening on {}", running.url());
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .context("installing a SIGTERM handler")?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
        eprintln!("sluice: shutting down");
        running.shutdown().await;
        Ok(())
    })
}

/// `key=value` lines; `#` and `!` start comments (a Java properties file's simple form).
fn properties(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with('!'))
        .filter_map(|line| {
            let (key, value) = line.split_once('=').or_else(|| line.split_once(':'))?;
            Some((key.trim().to_string(), value.trim().to_string()))
        })
        .collect()
}

/// The registry of `sluice server --with-registry`: against the node's own listener,
/// `_schemas` with the node's replication (1 on a single node). Its URL, once bound, is
/// sent to `bound` (the node's console reaches it there).
pub async fn start_in_process(
    broker: SocketAddr,
    listen: &str,
    bound: tokio::sync::oneshot::Sender<String>,
) -> anyhow::Result<()> {
    let mut entries = BTreeMap::new();
    entries.insert(
        "kafkastore.bootstrap.servers".to_string(),
        broker.to_string(),
    );
    entries.insert("listeners".to_string(), format!("http://{listen}"));
    let config = RegistryConfig::from_map(&entries)?;
    let running = start(config).await?;
    eprintln!("sluice: schema registry listening on {}", running.url());
    let _ = bound.send(running.url().to_string());
    running.wait().await;
    Ok(())
}
