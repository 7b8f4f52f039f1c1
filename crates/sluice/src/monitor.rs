//! `sluice monitor --config burrow.toml`: Burrow's consumer-lag monitor, its HTTP API and
//! notifiers, against any Kafka-protocol cluster; `sluice server --with-monitor` runs the
//! same monitor in-process against the node; `sluice group lag` prints Burrow's view of
//! groups, from a running monitor (`--monitor URL`) or from a one-shot read of the
//! cluster.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use sluice_monitor::config::{Config, listen_address};
use sluice_monitor::monitor::Monitor;
use sluice_monitor::types::{GroupStatus, PartitionStatus};
use tokio::sync::watch;

#[derive(Args)]
pub struct MonitorArgs {
    /// Burrow's configuration file: TOML as Burrow ships it, or YAML (`.yaml`/`.yml`,
    /// the guide's `burrow_config:` block as written).
    #[arg(long)]
    config: PathBuf,
}

/// How long a one-shot view waits for the cluster's offsets before printing what it has.
const ONE_SHOT_TIMEOUT: Duration = Duration::from_secs(30);

pub fn run(args: MonitorArgs) -> anyhow::Result<()> {
    let config = Config::load(&args.config)?;
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let (stop, stopped) = watch::channel(false);
        let monitor = Monitor::new(config)?;
        let mut tasks = monitor.start(stopped.clone());
        tasks.extend(crate::monitor::start_notifiers(&monitor, stopped.clone())?);
        for (name, server) in &monitor.config().httpservers {
            let address = listen_address(&server.address)
                .map_err(|message| anyhow::anyhow!("httpserver.{name}: {message}"))?;
            let (bound, task) =
                sluice_monitor::http::serve(monitor.clone(), address, stopped.clone())
                    .await
                    .with_context(|| format!("httpserver.{name}: binding {address}"))?;
            eprintln!("sluice monitor: Burrow's API on http://{bound}/v3/kafka");
            tasks.push(task);
        }
        wait_for_signal().await;
        eprintln!("sluice monitor: shutting down");
        let _ = stop.send(true);
        for task in tasks {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
        Ok(())
    })
}

pub(crate) async fn wait_for_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}

/// The notifiers of `monitor`'s config, started.
pub fn start_notifiers(
    monitor: &Monitor,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<()>>> {
    Ok(monitor.start_notifiers(stop)?.into_iter().collect())
}

/// Starts the monitor in-process against the node's first client listener, its API on
/// `listen`; `slot` receives the monitor so the node's `/metrics` can export its lag.
pub async fn start_in_process(
    broker: std::net::SocketAddr,
    listen: &str,
    config_path: Option<PathBuf>,
    slot: Arc<OnceLock<Monitor>>,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let config = match config_path {
        Some(path) => Config::load(&path)?,
        None => Config::for_servers("local", vec![broker.to_string()]),
    };
    let monitor = Monitor::new(config)?;
    let address =
        listen_address(listen).map_err(|message| anyhow::anyhow!("--monitor-listen: {message}"))?;
    monitor.start(stop.clone());
    start_notifiers(&monitor, stop.clone())?;
    let (bound, _) = sluice_monitor::http::serve(monitor.clone(), address, stop)
        .await
        .with_context(|| format!("binding the monitor's API on {address}"))?;
    eprintln!("sluice: Burrow's API on http://{bound}/v3/kafka");
    let _ = slot.set(monitor);
    Ok(())
}

/// `sluice group lag`: Burrow's evaluation of `groups` (every group when empty).
pub async fn group_lag(
    bootstrap_servers: &[String],
    groups: Vec<String>,
    monitor_url: Option<String>,
    cluster: &str,
    json: bool,
) -> anyhow::Result<()> {
    let statuses = match monitor_url {
        Some(url) => from_monitor(&url, cluster, groups).await?,
        None => one_shot(bootstrap_servers, cluster, groups).await?,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&statuses)?);
    } else {
        print!("{}", render(&statuses));
    }
    Ok(())
}

async fn from_monitor(
    url: &str,
    cluster: &str,
    groups: Vec<String>,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let base = url.trim_end_matches('/');
    let groups = if groups.is_empty() {
        let listed: serde_json::Value = http
            .get(format!("{base}/v3/kafka/{cluster}/consumer"))
            .send()
            .await
            .with_context(|| format!("asking the monitor at {base}"))?
            .json()
            .await?;
        if listed["error"] == true {
            bail!("the monitor: {}", listed["message"]);
        }
        serde_json::from_value(listed["consumers"].clone())
            .context("the monitor's consumer list")?
    } else {
        groups
    };
    let mut statuses = Vec::new();
    for group in groups {
        let answer: serde_json::Value = http
            .get(format!("{base}/v3/kafka/{cluster}/consumer/{group}/lag"))
            .send()
            .await
            .with_context(|| format!("asking the monitor at {base}"))?
            .json()
            .await?;
        statuses.push(answer["status"].clone());
    }
    Ok(statuses)
}

async fn one_shot(
    bootstrap_servers: &[String],
    cluster: &str,
    groups: Vec<String>,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let mut config = Config::for_servers(cluster, bootstrap_servers.to_vec());
    for section in config.clusters.values_mut() {
        // One read of the log end offsets is all a one-shot view takes.
        section.offset_refresh = 1;
    }
    let monitor = Monitor::new(config)?;
    let (stop, stopped) = watch::channel(false);
    monitor.start(stopped);
    if !monitor.caught_up(ONE_SHOT_TIMEOUT).await {
        eprintln!(
            "sluice group lag: the cluster's offsets were not all read within {}s; showing what was",
            ONE_SHOT_TIMEOUT.as_secs()
        );
    }
    let _ = stop.send(true);
    let groups = if groups.is_empty() {
        monitor.groups(cluster)
    } else {
        groups
    };
    let mut statuses = Vec::new();
    for group in groups {
        statuses.push(serde_json::to_value(
            monitor.group_status(cluster, &group, true),
        )?);
    }
    eprintln!(
        "sluice group lag: a one-shot view: each past commit's lag is measured against the current \
         log end offset, as Burrow's after a restart; `sluice monitor` keeps the live windows \
         (ask it with --monitor URL)"
    );
    Ok(statuses)
}

/// Burrow's view as tables: one line per group, then its partitions.
fn render(statuses: &[serde_json::Value]) -> String {
    let mut out = String::new();
    for value in statuses {
        let Ok(status) = serde_json::from_value::<StatusView>(value.clone()) else {
            out.push_str(&format!("{value}\n"));
            continue;
        };
        let maxlag = status
            .maxlag
            .as_ref()
            .map(|partition| {
                format!(
                    "{}/{} ({})",
                    partition.topic, partition.partition, partition.current_lag
                )
            })
            .unwrap_or_else(|| "-".to_string());
        out.push_str(&format!(
            "\n{:<30} {:<8} {:>8} {:>10} {:>10}  {}\n",
            "GROUP", "STATUS", "COMPLETE", "PARTITIONS", "TOTALLAG", "MAXLAG"
        ));
        out.push_str(&format!(
            "{:<30} {:<8} {:>8.2} {:>10} {:>10}  {}\n",
            status.group,
            status.status,
            status.complete,
            status.partition_count,
            status.totallag,
            maxlag
        ));
        if status.partitions.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n{:<24} {:>9} {:<7} {:>12} {:>12} {:>10} {:>8}  {}\n",
            "TOPIC",
            "PARTITION",
            "STATUS",
            "START-OFFSET",
            "END-OFFSET",
            "LAG",
            "WINDOW-S",
            "OWNER/CLIENT-ID"
        ));
        for partition in &status.partitions {
            let offset = |end: &Option<OffsetView>| {
                end.as_ref()
                    .map_or("-".to_string(), |o| o.offset.to_string())
            };
            let span = match (&partition.start, &partition.end) {
                (Some(start), Some(end)) => {
                    format!("{:.1}", (end.timestamp - start.timestamp) as f64 / 1000.0)
                }
                _ => "-".to_string(),
            };
            let owner = if partition.owner.is_empty() && partition.client_id.is_empty() {
                "-".to_string()
            } else {
                format!("{}/{}", partition.owner, partition.client_id)
            };
            out.push_str(&format!(
                "{:<24} {:>9} {:<7} {:>12} {:>12} {:>10} {:>8}  {}\n",
                partition.topic,
                partition.partition,
                partition.status,
                offset(&partition.start),
                offset(&partition.end),
                partition.current_lag,
                span,
                owner
            ));
        }
    }
    out
}

/// The parts of Burrow's status JSON the table prints (read back from JSON so the monitor
/// answer and the one-shot one print the same way).
#[derive(serde::Deserialize)]
struct StatusView {
    group: String,
    status: String,
    complete: f32,
    partition_count: usize,
    totallag: u64,
    maxlag: Option<PartitionView>,
    #[serde(default)]
    partitions: Vec<PartitionView>,
}

#[derive(serde::Deserialize)]
struct PartitionView {
    topic: String,
    partition: i32,
    status: String,
    #[serde(default)]
    owner: String,
    #[serde(default)]
    client_id: String,
    start: Option<OffsetView>,
    end: Option<OffsetView>,
    current_lag: u64,
}

#[derive(serde::Deserialize)]
struct OffsetView {
    offset: i64,
    timestamp: i64,
}

// Keeps the library's types and this view in step: a GroupStatus must read back.
const _: fn(&GroupStatus, &PartitionStatus) = |_, _| {};
