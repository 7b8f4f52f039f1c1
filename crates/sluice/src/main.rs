//! `sluice`: every Sluice service and tool behind one command.
//!
//! `sluice server` runs a single-node broker that Kafka clients and tools use;
//! `sluice dump-log` prints segment files as Kafka's DumpLogSegments does;
//! `sluice topic` manages topics on a running cluster as Kafka's `kafka-topics.sh` does;
//! `sluice group` lists, describes and deletes consumer groups and resets their offsets as
//! Kafka's `kafka-consumer-groups.sh` does;
//! `sluice cluster status` shows the metadata quorum as `kafka-metadata-quorum.sh` does;
//! `sluice plan` sizes a topic's partitions by the guide's formula, optionally measuring
//! per-partition rates on a running cluster.

mod cluster;
mod connect;
mod console;
mod consume;
mod dump_log;
mod group;
mod monitor;
mod plan;
mod produce;
mod registry;
mod remote;
mod topic;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// `sluice --version`: this build's version and the Kafka protocol version it speaks.
static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "{} (Kafka {} protocol)",
        env!("CARGO_PKG_VERSION"),
        sluice_broker::apis::KAFKA_VERSION
    )
});

#[derive(Parser)]
#[command(
    name = "sluice",
    version = VERSION.as_str(),
    about = "Sluice: a Kafka-compatible event streaming platform"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a node (broker and controller) with the embedded default configuration
    /// (Kafka's shipped server.properties on 127.0.0.1:9092), or `--config`.
    Server {
        /// A Kafka server.properties file (Kafka's keys and defaults).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Override one key, `key=value`; repeatable.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
        /// Also run a schema registry in-process, on `--registry-listen`, storing its
        /// schemas in this node's `_schemas` topic.
        #[arg(long)]
        with_registry: bool,
        /// The registry's HTTP address with `--with-registry`.
        #[arg(long, default_value = "127.0.0.1:8081")]
        registry_listen: String,
        /// Also run a Kafka Connect worker in-process, its REST API on
        /// `--connect-listen`, its state in this node's `connect-*` topics.
        #[arg(long)]
        with_connect: bool,
        /// The Connect worker's REST address with `--with-connect`.
        #[arg(long, default_value = "127.0.0.1:8083")]
        connect_listen: String,
        /// Also run the consumer-lag monitor (Burrow's evaluation, API and notifiers)
        /// in-process against this node; its lag metrics join the node's `/metrics`.
        #[arg(long)]
        with_monitor: bool,
        /// The monitor's API address with `--with-monitor` (Burrow's v3 API).
        #[arg(long, default_value = "127.0.0.1:8000")]
        monitor_listen: String,
        /// A Burrow configuration for the in-process monitor (default: this node as
        /// cluster `local`, Burrow's defaults, no notifiers).
        #[arg(long)]
        monitor_config: Option<PathBuf>,
        /// Also serve the web console (topics, messages, groups and lag, brokers and
        /// quorum, schemas, connectors) on `--console-listen`. `console.*` keys given
        /// with `--set` or in `--config` configure it (`console.read.only=true`).
        #[arg(long)]
        with_console: bool,
        /// The console's HTTP address with `--with-console`.
        #[arg(long, default_value = console::DEFAULT_LISTEN)]
        console_listen: String,
        /// A SCRAM credential the node writes when it bootstraps a new cluster, as
        /// `kafka-storage format --add-scram` does:
        /// `SCRAM-SHA-256=[name=admin,password=admin-secret]` (also `iterations=`,
        /// `salt=` with `saltedpassword=`, base64); repeatable. Ignored by a node whose
        /// cluster already exists.
        #[arg(long = "add-scram", value_name = "MECHANISM=[name=...,password=...]")]
        add_scram: Vec<String>,
    },
    /// Serve the web console against any Kafka-protocol cluster (Sluice or Apache
    /// Kafka), with its schema registry and Connect worker if given.
    Console(console::ConsoleArgs),
    /// Watch consumer lag as LinkedIn's Burrow does (its config file, evaluation rules,
    /// HTTP API v3, http and email notifiers), against any Kafka-protocol cluster.
    Monitor(monitor::MonitorArgs),
    /// Run a Kafka Connect worker (distributed mode, Connect's REST API) from a
    /// `connect-distributed.properties` file; or drive a running one's REST API
    /// (`list`, `create`, `status`, `pause`, `resume`, `stop`, `restart`, `delete`,
    /// `offsets`).
    Connect(connect::ConnectArgs),
    /// Run a schema registry (Confluent Schema Registry's REST API) against a running
    /// cluster, with Confluent's `schema-registry.properties` keys.
    Registry(registry::RegistryArgs),
    /// Print the batches, records and index entries of segment files, in the format of
    /// Kafka's `kafka-dump-log.sh` (DumpLogSegments).
    DumpLog {
        /// `.log`, `.index`, `.timeindex` or `.snapshot` (producer state) files.
        #[arg(long, required = true, num_args = 1.., value_delimiter = ',')]
        files: Vec<PathBuf>,
        /// Print every record, not only batch headers.
        #[arg(long)]
        deep_iteration: bool,
        /// Print keys and values (implies --deep-iteration).
        #[arg(long)]
        print_data_log: bool,
    },
    /// Create, list, describe, alter (configs, partitions) and delete topics on a running cluster (Sluice or Apache
    /// Kafka), over the wire as Kafka's `kafka-topics.sh` does.
    Topic {
        /// The cluster's `host:port` addresses, comma-separated.
        #[arg(
            long,
            global = true,
            default_value = "127.0.0.1:9092",
            value_delimiter = ','
        )]
        bootstrap_server: Vec<String>,
        #[command(subcommand)]
        command: topic::TopicCommand,
    },
    /// List, describe and delete consumer groups and reset their offsets on a running
    /// cluster, over the wire as Kafka's `kafka-consumer-groups.sh` does.
    Group {
        /// The cluster's `host:port` addresses, comma-separated.
        #[arg(
            long,
            global = true,
            default_value = "127.0.0.1:9092",
            value_delimiter = ','
        )]
        bootstrap_server: Vec<String>,
        #[command(subcommand)]
        command: group::GroupCommand,
    },
    /// Write records from stdin, one a line, as `kcat -P` does (`-k key`,
    /// `--key-separator`, `-H name=value`, `-p partition`, `--acks`, `--compression`,
    /// `-X key=value` producer settings).
    Produce(produce::ProduceArgs),
    /// Print records, as `kcat -C` does (`-g group`, `-o beginning|end|<offset>|@<ms>`,
    /// `-c count`, `-e`, `-f format`, `-X key=value` consumer settings).
    Consume(consume::ConsumeArgs),
    /// How many partitions a topic needs, reasoned as the guide's partition-count formula
    /// (target throughput, per-partition rates given or `--measure`d, consumers, growth).
    Plan(plan::PlanArgs),
    /// The cluster's metadata quorum, over the wire as Kafka's
    /// `kafka-metadata-quorum.sh describe --status --replication` shows it.
    Cluster {
        /// The cluster's `host:port` addresses, comma-separated.
        #[arg(
            long,
            global = true,
            default_value = "127.0.0.1:9092",
            value_delimiter = ','
        )]
        bootstrap_server: Vec<String>,
        #[command(subcommand)]
        command: cluster::ClusterCommand,
    },
}

/// Logs to stderr, filtered by `RUST_LOG` (default `warn`); the filter can be changed at
/// runtime through Connect's `/admin/loggers` (`sluice_connect::loggers`).
fn init_tracing() {
    use tracing_subscriber::prelude::*;
    use tracing_subscriber::{EnvFilter, reload};
    let base = std::env::var("RUST_LOG")
        .ok()
        .filter(|f| EnvFilter::try_new(f).is_ok())
        .unwrap_or_else(|| "warn".to_string());
    let (filter, handle) = reload::Layer::new(EnvFilter::new(&base));
    tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .init();
    sluice_connect::loggers::install(&base, move |directives| {
        let filter = EnvFilter::try_new(directives).map_err(|e| e.to_string())?;
        handle.reload(filter).map_err(|e| e.to_string())
    });
}

fn main() -> anyhow::Result<()> {
    init_tracing();
    match Cli::parse().command {
        Command::Server {
            config,
            overrides,
            with_registry,
            registry_listen,
            with_connect,
            connect_listen,
            with_monitor,
            monitor_listen,
            monitor_config,
            with_console,
            console_listen,
            add_scram,
        } => server(
            config,
            &overrides,
            &add_scram,
            Companions {
                registry: with_registry.then_some(registry_listen),
                connect: with_connect.then_some(connect_listen),
                monitor: with_monitor.then_some((monitor_listen, monitor_config)),
                console: with_console.then_some(console_listen),
            },
        ),
        Command::Console(args) => {
            if let Err(error) = console::run(args) {
                eprintln!("sluice console: {error:#}");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Monitor(args) => {
            if let Err(error) = monitor::run(args) {
                eprintln!("sluice monitor: {error:#}");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Connect(args) => {
            if let Err(error) = connect::run(args) {
                eprintln!("sluice connect: {error:#}");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Registry(args) => {
            if let Err(error) = registry::run(args) {
                eprintln!("sluice registry: {error:#}");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::DumpLog {
            files,
            deep_iteration,
            print_data_log,
        } => {
            let options = dump_log::Options {
                deep_iteration: deep_iteration || print_data_log,
                print_data: print_data_log,
            };
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let mut failed = false;
            for file in &files {
                if let Err(error) = dump_log::dump(file, &options, &mut out) {
                    eprintln!("{}: {error:#}", file.display());
                    failed = true;
                }
            }
            std::io::Write::flush(&mut out)?;
            if failed {
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Topic {
            bootstrap_server,
            command,
        } => {
            if let Err(error) = topic::run(&bootstrap_server, command) {
                eprintln!("sluice topic: {error:#}");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Group {
            bootstrap_server,
            command,
        } => {
            if let Err(error) = group::run(&bootstrap_server, command) {
                eprintln!("sluice group: {error:#}");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Consume(args) => {
            if let Err(error) = consume::run(args) {
                eprintln!("sluice consume: {error:#}");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Produce(args) => {
            if let Err(error) = produce::run(args) {
                eprintln!("sluice produce: {error:#}");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Plan(args) => {
            if let Err(error) = plan::run(args) {
                eprintln!("sluice plan: {error:#}");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Cluster {
            bootstrap_server,
            command,
        } => {
            if let Err(error) = cluster::run(&bootstrap_server, command) {
                eprintln!("sluice cluster: {error:#}");
                std::process::exit(1);
            }
            Ok(())
        }
    }
}

/// The services `sluice server` runs beside the broker, each with its listen address.
struct Companions {
    registry: Option<String>,
    connect: Option<String>,
    monitor: Option<(String, Option<PathBuf>)>,
    console: Option<String>,
}

fn server(
    config_path: Option<PathBuf>,
    overrides: &[String],
    add_scram: &[String],
    companions: Companions,
) -> anyhow::Result<()> {
    use anyhow::Context;
    let Companions {
        registry: registry_listen,
        connect: connect_listen,
        monitor,
        console: console_listen,
    } = companions;
    let text = match &config_path {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
        }
        None => sluice_broker::EMBEDDED_SERVER_PROPERTIES.to_string(),
    };
    // `console.*` keys configure the console, not the broker: from the file, then the
    // overrides (which win).
    let mut console_settings: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("console."))
        .map(|line| line.replacen(':', "=", usize::from(!line.contains('='))))
        .collect();
    let text: String = text
        .lines()
        .filter(|line| !line.trim().starts_with("console."))
        .map(|line| format!("{line}\n"))
        .collect();
    let mut broker_overrides = Vec::new();
    for o in overrides {
        let (key, value) = sluice_broker::BrokerConfig::parse_override(o)?;
        if key.starts_with("console.") {
            console_settings.push(format!("{key}={value}"));
        } else {
            broker_overrides.push((key, value));
        }
    }
    let overrides = broker_overrides;
    let console_config = match &console_listen {
        Some(_) => {
            let mut config = console::ConsoleConfig::new(Vec::new());
            for setting in &console_settings {
                config.set(setting)?;
            }
            Some(config)
        }
        None => {
            if !console_settings.is_empty() {
                tracing::warn!("console.* settings are ignored without --with-console");
            }
            None
        }
    };
    let mut loaded = sluice_broker::BrokerConfig::load(&text, &overrides)?;
    let bootstrap_scram = add_scram
        .iter()
        .map(|text| sluice_broker::scram::parse_add_scram(text))
        .collect::<Result<Vec<_>, String>>()
        .map_err(|reason| anyhow::anyhow!("--add-scram: {reason}"))?;
    loaded.config = loaded.config.with_bootstrap_scram(bootstrap_scram);
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    if let Some(file) = sluice_storage::clock::watch_skew_file_from_env() {
        tracing::warn!(
            "test hook: the wall clock follows the skew in {} ({})",
            file.display(),
            sluice_storage::clock::TEST_CLOCK_SKEW_FILE
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        // A Connect worker stops first (its tasks commit through the broker), then the
        // broker.
        let (stop_connect, connect_stopped) = tokio::sync::watch::channel(false);
        let (connect_done, mut connect_finished) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            let mut terminate =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("installing a SIGTERM handler");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
            eprintln!("sluice: shutting down");
            let _ = stop_connect.send(true);
            let _ = tokio::time::timeout(
                std::time::Duration::from_secs(15),
                connect_finished.wait_for(|done| *done),
            )
            .await;
            let _ = stop.send(true);
        });
        // With --with-registry, the registry starts once the broker's first client
        // listener is bound, and stores its schemas through it.
        let (bound, broker_address) = tokio::sync::watch::channel(None::<std::net::SocketAddr>);
        let bound = std::sync::Mutex::new(Some(bound));
        let first_listener =
            |mut address: tokio::sync::watch::Receiver<Option<std::net::SocketAddr>>| async move {
                address
                    .wait_for(Option::is_some)
                    .await
                    .ok()
                    .and_then(|a| *a)
            };
        // The registry's and Connect's URLs once bound (a port 0 is only known then), for
        // the console.
        let (registry_bound, registry_url) = tokio::sync::oneshot::channel::<String>();
        let (connect_bound, connect_url) = tokio::sync::oneshot::channel::<String>();
        let registry_url = registry_listen.is_some().then_some(registry_url);
        let connect_url = connect_listen.is_some().then_some(connect_url);
        match connect_listen {
            Some(listen) => {
                let address = broker_address.clone();
                tokio::spawn(async move {
                    if let Some(broker) = first_listener(address).await
                        && let Err(error) = connect::start_in_process(
                            broker,
                            &listen,
                            connect_stopped,
                            connect_bound,
                        )
                        .await
                    {
                        eprintln!("sluice: the Kafka Connect worker did not start: {error:#}");
                    }
                    let _ = connect_done.send(true);
                });
            }
            None => {
                let _ = connect_done.send(true);
            }
        }
        let registry = registry_listen.map(|listen| {
            let address = broker_address.clone();
            tokio::spawn(async move {
                let Some(broker) = first_listener(address).await else {
                    return;
                };
                if let Err(error) =
                    registry::start_in_process(broker, &listen, registry_bound).await
                {
                    eprintln!("sluice: the schema registry did not start: {error:#}");
                }
            })
        });
        // With --with-monitor, the monitor starts once the broker listens, and the node's
        // /metrics exports its lag from then on.
        let monitor_slot = std::sync::Arc::new(std::sync::OnceLock::new());
        let shared_monitor = monitor.is_some().then(|| monitor_slot.clone());
        let mut collectors = Vec::new();
        if let Some((listen, config_path)) = monitor {
            collectors.push(sluice_monitor::metrics::collector(monitor_slot.clone()));
            let address = broker_address.clone();
            let stop_monitor = stopped.clone();
            tokio::spawn(async move {
                let Some(broker) = first_listener(address).await else {
                    return;
                };
                if let Err(error) = monitor::start_in_process(
                    broker,
                    &listen,
                    config_path,
                    monitor_slot,
                    stop_monitor,
                )
                .await
                {
                    eprintln!("sluice: the lag monitor did not start: {error:#}");
                }
            });
        }
        // With --with-console, the console starts once the broker listens; it reaches
        // the registry, Connect and the monitor this node runs.
        if let (Some(listen), Some(mut config)) = (console_listen, console_config) {
            let address = broker_address.clone();
            let stop_console = stopped.clone();
            tokio::spawn(async move {
                let Some(broker) = first_listener(address).await else {
                    return;
                };
                config.bootstrap_servers = vec![broker.to_string()];
                let bound = async |url: Option<tokio::sync::oneshot::Receiver<String>>| match url {
                    Some(url) => tokio::time::timeout(std::time::Duration::from_secs(60), url)
                        .await
                        .ok()
                        .and_then(Result::ok),
                    None => None,
                };
                if config.registry_url.is_none() {
                    config.registry_url = bound(registry_url).await;
                }
                if config.connect_url.is_none() {
                    config.connect_url = bound(connect_url).await;
                }
                match console::start(config, &listen, shared_monitor, stop_console).await {
                    Ok(bound) => eprintln!("sluice: console on http://{bound}/"),
                    Err(error) => eprintln!("sluice: the console did not start: {error:#}"),
                }
            });
        }
        let on_listening = |listener: &sluice_broker::Listener, address: std::net::SocketAddr| {
            // One line per listener on stderr, for operators and for tests that ask
            // for port 0.
            eprintln!("sluice: listening on {}://{address}", listener.name);
            if listener.name != "CONTROLLER"
                && let Some(bound) = bound.lock().unwrap_or_else(|p| p.into_inner()).take()
            {
                let _ = bound.send(Some(address));
            }
        };
        let outcome = sluice_broker::node::run_with_collectors(
            loaded.config,
            stopped,
            on_listening,
            collectors,
        )
        .await;
        if let Some(registry) = registry {
            registry.abort();
        }
        outcome
    })?;
    Ok(())
}
