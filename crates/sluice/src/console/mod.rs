//! The web console: topics and messages, consumer groups and their lag, brokers and the
//! metadata quorum, schemas, connectors and the partition planner, in a browser.
//!
//! `sluice server --with-console` serves it from the node (port 8080 by default);
//! `sluice console --bootstrap-server HOST:PORT` serves it against any Kafka-protocol
//! cluster, Apache Kafka included. Everything it shows comes over Kafka's wire protocol
//! (the admin client), the schema registry's and Connect's REST APIs, and the lag
//! monitor (Burrow's evaluation); nothing is read from a broker's disk.
//!
//! Pages are rendered on the server as plain HTML; one small script
//! (`assets/console.js`, embedded in the binary like the stylesheet) submits forms to
//! the JSON API under `/api`, shows each error next to its field, and streams the
//! message browser. No request leaves for another host: the Content-Security-Policy says
//! so to the browser.
//!
//! `console.read.only=true` hides every form that changes the cluster and refuses every
//! such request (403), whatever sends it.

pub mod connectors;
pub mod groups;
pub mod html;
pub mod messages;
pub mod overview;
pub mod planner;
pub mod sampler;
pub mod schemas;
pub mod state;
pub mod topics;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use clap::Args;
use sluice_monitor::monitor::Monitor;
use tokio::sync::watch;

pub use state::{ApiError, Console, ConsoleConfig};

/// The console's default address (Kafka UI's and Redpanda Console's port).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

#[derive(Args)]
pub struct ConsoleArgs {
    /// The cluster's `host:port` addresses, comma-separated (Sluice or Apache Kafka).
    #[arg(long, default_value = "127.0.0.1:9092", value_delimiter = ',')]
    bootstrap_server: Vec<String>,
    /// Where the console serves its pages.
    #[arg(long, default_value = DEFAULT_LISTEN)]
    listen: String,
    /// The schema registry's URL (Schemas pages, and decoding of Avro, Protobuf and
    /// JSON Schema messages).
    #[arg(long)]
    registry_url: Option<String>,
    /// The Kafka Connect worker's REST URL (Connectors pages).
    #[arg(long)]
    connect_url: Option<String>,
    /// A Burrow configuration for the console's lag monitor (default: Burrow's defaults
    /// on this cluster, named `local`).
    #[arg(long)]
    monitor_config: Option<PathBuf>,
    /// Console settings, `key=value`, repeatable: `console.read.only=true`,
    /// `console.sample.interval.ms=5000`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

/// `sluice console`: the console against any cluster, until SIGINT or SIGTERM.
pub fn run(args: ConsoleArgs) -> anyhow::Result<()> {
    let mut config = ConsoleConfig::new(args.bootstrap_server);
    config.registry_url = args.registry_url;
    config.connect_url = args.connect_url;
    config.monitor_config = args.monitor_config;
    for setting in &args.settings {
        config.set(setting)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let (stop, stopped) = watch::channel(false);
        let bound = start(config, &args.listen, None, stopped).await?;
        eprintln!("sluice console: serving on http://{bound}/");
        crate::monitor::wait_for_signal().await;
        eprintln!("sluice console: shutting down");
        let _ = stop.send(true);
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok(())
    })
}

/// Starts the console: its monitor (or `monitor`, one already running in this process),
/// its sampler and its HTTP server on `listen`. Returns the bound address.
pub async fn start(
    config: ConsoleConfig,
    listen: &str,
    monitor: Option<Arc<OnceLock<Monitor>>>,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<SocketAddr> {
    let address: SocketAddr = listen
        .parse()
        .with_context(|| format!("the console's listen address '{listen}' is not host:port"))?;
    let console = Console::connect(config, monitor, stop.clone()).await?;
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("binding the console on {address}"))?;
    let bound = listener.local_addr()?;
    let app = router(console);
    let mut stop_serving = stop;
    tokio::spawn(async move {
        let shutdown = async move {
            let _ = stop_serving.wait_for(|stop| *stop).await;
        };
        if let Err(error) = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::warn!("the console's server stopped: {error}");
        }
    });
    Ok(bound)
}

/// Every page and API route, the embedded assets, the read-only guard and the headers
/// that keep the browser on this host.
pub fn router(console: Arc<Console>) -> Router {
    Router::new()
        .merge(overview::routes())
        .merge(topics::routes())
        .merge(messages::routes())
        .merge(groups::routes())
        .merge(schemas::routes())
        .merge(connectors::routes())
        .merge(planner::routes())
        .route("/assets/{name}", get(asset))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            console.clone(),
            read_only_guard,
        ))
        .layer(axum::middleware::map_response(security_headers))
        .with_state(console)
}

/// A request that would change the cluster, on a read-only console: refused, whatever
/// sent it (the pages do not show the forms, but a script or curl could still try).
/// Previews that change nothing (`.../preview`, `.../check`, `.../validate`) pass.
async fn read_only_guard(
    axum::extract::State(console): axum::extract::State<Arc<Console>>,
    request: Request,
    next: Next,
) -> Response {
    let safe = matches!(*request.method(), Method::GET | Method::HEAD)
        || ["/preview", "/check", "/validate"]
            .iter()
            .any(|suffix| request.uri().path().ends_with(suffix));
    if console.config.read_only && !safe {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "the console is read-only (console.read.only=true): nothing was changed",
        )
        .into_response();
    }
    next.run(request).await
}

async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; \
             connect-src 'self'; frame-ancestors 'none'; form-action 'self'",
        ),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// The embedded assets: (name, content type, content).
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "console.css",
        "text/css; charset=utf-8",
        include_str!("assets/console.css"),
    ),
    (
        "console.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/console.js"),
    ),
    (
        "messages.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/messages.js"),
    ),
];

async fn asset(axum::extract::Path(name): axum::extract::Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, content)) => (
            [
                (header::CONTENT_TYPE, *content_type),
                (header::CACHE_CONTROL, "max-age=300"),
            ],
            *content,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn not_found(
    axum::extract::State(console): axum::extract::State<Arc<Console>>,
    uri: axum::http::Uri,
) -> Response {
    if uri.path().starts_with("/api/") {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no such API: {}", uri.path()),
        )
        .into_response();
    }
    html::error_page(
        &console,
        StatusCode::NOT_FOUND,
        "Not found",
        &format!("There is no page at {}.", uri.path()),
    )
}
