//! `sluice connect`: a Kafka Connect worker (distributed mode, Connect's REST API) run
//! from the `connect-distributed.properties` file `connect-distributed.sh` takes; its
//! subcommands drive a running worker's REST API as `curl` would. And the in-process
//! worker of `sluice server --with-connect`.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, bail};
use sluice_connect::WorkerConfig;

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ConnectArgs {
    /// A `connect-distributed.properties` file (Kafka Connect's keys and defaults).
    config: Option<PathBuf>,
    /// Override one key, `key=value`; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    #[command(subcommand)]
    command: Option<ConnectCommand>,
}

#[derive(clap::Subcommand, Debug)]
pub enum ConnectCommand {
    /// The connectors, with their status.
    List(Target),
    /// Create a connector from a JSON file (`{"name":...,"config":{...}}`, as
    /// `POST /connectors` takes it) or `-` for stdin.
    Create {
        #[command(flatten)]
        target: Target,
        file: PathBuf,
    },
    /// A connector's status and its tasks'.
    Status {
        #[command(flatten)]
        target: Target,
        name: String,
    },
    Pause {
        #[command(flatten)]
        target: Target,
        name: String,
    },
    Resume {
        #[command(flatten)]
        target: Target,
        name: String,
    },
    Stop {
        #[command(flatten)]
        target: Target,
        name: String,
    },
    /// Restart a connector and its tasks (`includeTasks=true`).
    Restart {
        #[command(flatten)]
        target: Target,
        name: String,
        /// Only the failed ones (`onlyFailed=true`).
        #[arg(long)]
        only_failed: bool,
    },
    Delete {
        #[command(flatten)]
        target: Target,
        name: String,
    },
    /// A source connector's committed offsets.
    Offsets {
        #[command(flatten)]
        target: Target,
        name: String,
    },
}

#[derive(clap::Args, Debug)]
pub struct Target {
    /// The worker's REST URL.
    #[arg(long, default_value = "http://127.0.0.1:8083")]
    url: String,
}

pub fn run(args: ConnectArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    match args.command {
        Some(command) => runtime.block_on(client(command)),
        None => {
            let Some(path) = args.config else {
                bail!(
                    "usage: sluice connect connect-distributed.properties (or a subcommand: see --help)"
                );
            };
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            let mut props = WorkerConfig::parse_properties(&text);
            for entry in &args.overrides {
                let (key, value) = entry
                    .split_once('=')
                    .with_context(|| format!("--set {entry}: expected key=value"))?;
                props.insert(key.trim().to_string(), value.trim().to_string());
            }
            let config = WorkerConfig::from_props(props)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            runtime.block_on(worker(config))
        }
    }
}

async fn worker(config: WorkerConfig) -> anyhow::Result<()> {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .expect("installing a SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
        eprintln!("sluice: shutting down");
        let _ = stop.send(true);
    });
    worker_in_process(config, stopped, None).await
}

/// The worker of `sluice server --with-connect`: against the node's own listener,
/// Connect's sample `connect-distributed.properties` otherwise (JSON converters,
/// `connect-configs`/`connect-offsets`/`connect-status`), replication as the node's
/// default. Its REST URL, once bound, is sent to `bound` (the node's console reaches it
/// there).
pub async fn start_in_process(
    broker: SocketAddr,
    listen: &str,
    stopped: tokio::sync::watch::Receiver<bool>,
    bound: tokio::sync::oneshot::Sender<String>,
) -> anyhow::Result<()> {
    let text = format!(
        "bootstrap.servers={broker}\n\
         group.id=connect-cluster\n\
         key.converter=org.apache.kafka.connect.json.JsonConverter\n\
         value.converter=org.apache.kafka.connect.json.JsonConverter\n\
         offset.storage.topic=connect-offsets\n\
         offset.storage.replication.factor=-1\n\
         config.storage.topic=connect-configs\n\
         config.storage.replication.factor=-1\n\
         status.storage.topic=connect-status\n\
         status.storage.replication.factor=-1\n\
         offset.flush.interval.ms=10000\n\
         listeners=http://{listen}\n"
    );
    let config = WorkerConfig::from_props(WorkerConfig::parse_properties(&text))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    worker_in_process(config, stopped, Some(bound)).await
}

async fn worker_in_process(
    config: WorkerConfig,
    stopped: tokio::sync::watch::Receiver<bool>,
    url: Option<tokio::sync::oneshot::Sender<String>>,
) -> anyhow::Result<()> {
    let (bound, address) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        if let Ok(address) = address.await {
            eprintln!("sluice: Kafka Connect REST API listening on http://{address}");
            if let Some(url) = url {
                let _ = url.send(format!("http://{address}"));
            }
        }
    });
    sluice_connect::serve(config, stopped, Some(bound))
        .await
        .map_err(|e| anyhow::anyhow!(e))
}

async fn client(command: ConnectCommand) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let (method, url, body) = match command {
        ConnectCommand::List(t) => (
            reqwest::Method::GET,
            format!("{}/connectors?expand=status", t.url),
            None,
        ),
        ConnectCommand::Create { target, file } => {
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin()).context("reading stdin")?
            } else {
                std::fs::read_to_string(&file)
                    .with_context(|| format!("reading {}", file.display()))?
            };
            (
                reqwest::Method::POST,
                format!("{}/connectors", target.url),
                Some(text),
            )
        }
        ConnectCommand::Status { target, name } => (
            reqwest::Method::GET,
            format!("{}/connectors/{name}/status", target.url),
            None,
        ),
        ConnectCommand::Pause { target, name } => (
            reqwest::Method::PUT,
            format!("{}/connectors/{name}/pause", target.url),
            None,
        ),
        ConnectCommand::Resume { target, name } => (
            reqwest::Method::PUT,
            format!("{}/connectors/{name}/resume", target.url),
            None,
        ),
        ConnectCommand::Stop { target, name } => (
            reqwest::Method::PUT,
            format!("{}/connectors/{name}/stop", target.url),
            None,
        ),
        ConnectCommand::Restart {
            target,
            name,
            only_failed,
        } => (
            reqwest::Method::POST,
            format!(
                "{}/connectors/{name}/restart?includeTasks=true&onlyFailed={only_failed}",
                target.url
            ),
            None,
        ),
        ConnectCommand::Delete { target, name } => (
            reqwest::Method::DELETE,
            format!("{}/connectors/{name}", target.url),
            None,
        ),
        ConnectCommand::Offsets { target, name } => (
            reqwest::Method::GET,
            format!("{}/connectors/{name}/offsets", target.url),
            None,
        ),
    };
    let mut request = http.request(method, &url);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body);
    }
    let response = request
        .send()
        .await
        .with_context(|| format!("requesting {url}"))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !text.is_empty() {
        println!("{text}");
    }
    if !status.is_success() {
        bail!("{url}: HTTP {status}");
    }
    Ok(())
}
