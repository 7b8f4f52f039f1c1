//! Burrow's HTTP API (v3), with its routes, status codes and JSON shapes
//! (`core/internal/httpserver` at Burrow commit ced55ba9), so dashboards and scripts
//! written for Burrow work unchanged; plus `/metrics` in Prometheus' text format.
//!
//! Every JSON answer has Burrow's envelope: `error`, `message`, the payload under its
//! Burrow key (`clusters`, `topics`, `offsets`, `consumers`, `status`, `module`), and
//! `request` (`url`, `host`). An unknown path is Burrow's 404
//! `{"error":true,"message":"invalid request type","result":{}}`.
//!
//! Not served: `POST /v3/admin/loglevel` (Sluice's level is set by `RUST_LOG` at start;
//! `GET` answers it).

use std::net::SocketAddr;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::monitor::Monitor;
use crate::types::Status;

#[derive(Clone)]
struct Api {
    monitor: Monitor,
    host: String,
}

/// The API's routes over `monitor`, to serve alone ([`serve`]) or merged into another
/// server's router.
pub fn router(monitor: Monitor) -> Router {
    let host = hostname();
    let cors = monitor.config().general.access_control_allow_origin.clone();
    let api = Api { monitor, host };
    let router = Router::new()
        .route("/burrow/admin", get(admin))
        .route("/burrow/admin/ready", get(ready))
        .route("/metrics", get(metrics))
        .route("/v3/kafka", get(cluster_list))
        .route("/v3/kafka/{cluster}", get(cluster_detail))
        .route("/v3/kafka/{cluster}/topic", get(topic_list))
        .route("/v3/kafka/{cluster}/topic/{topic}", get(topic_detail))
        .route(
            "/v3/kafka/{cluster}/topic/{topic}/consumers",
            get(topic_consumers),
        )
        .route("/v3/kafka/{cluster}/consumer", get(consumer_list))
        .route(
            "/v3/kafka/{cluster}/consumer/{group}",
            get(consumer_detail).delete(consumer_delete),
        )
        .route(
            "/v3/kafka/{cluster}/consumer/{group}/topic/{topic}",
            axum::routing::delete(consumer_topic_delete),
        )
        .route(
            "/v3/kafka/{cluster}/consumer/{group}/status",
            get(consumer_status),
        )
        .route(
            "/v3/kafka/{cluster}/consumer/{group}/lag",
            get(consumer_lag),
        )
        .route("/v3/config", get(config_main))
        .route("/v3/config/{section}", get(config_list))
        .route("/v3/config/{section}/{name}", get(config_detail))
        .route("/v3/admin/loglevel", get(log_level))
        .fallback(not_found)
        .with_state(api);
    match cors.and_then(|origin| HeaderValue::from_str(&origin).ok()) {
        Some(origin) => router.layer(axum::middleware::map_response(
            move |mut response: Response| {
                let origin = origin.clone();
                async move {
                    response
                        .headers_mut()
                        .insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
                    response
                }
            },
        )),
        None => router,
    }
}

/// Binds `address` and serves the API until `stop` turns true. Returns the bound
/// address (for port 0) and the serving task.
pub async fn serve(
    monitor: Monitor,
    address: SocketAddr,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind(address).await?;
    let bound = listener.local_addr()?;
    let app = router(monitor);
    let task = tokio::spawn(async move {
        let stopped = async move {
            let _ = stop.wait_for(|stopped| *stopped).await;
        };
        if let Err(error) = axum::serve(listener, app)
            .with_graceful_shutdown(stopped)
            .await
        {
            tracing::error!(%error, "monitor: the HTTP server failed");
        }
    });
    Ok((bound, task))
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|_| "localhost".to_string())
}

impl Api {
    fn respond(&self, status: StatusCode, uri: &Uri, message: &str, payload: Value) -> Response {
        let mut body = json!({
            "error": !status.is_success(),
            "message": message,
            "request": {"url": uri.path(), "host": self.host},
        });
        if let (Value::Object(body), Value::Object(payload)) = (&mut body, payload) {
            body.extend(payload);
        }
        (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response()
    }

    fn ok(&self, uri: &Uri, message: &str, payload: Value) -> Response {
        self.respond(StatusCode::OK, uri, message, payload)
    }

    fn error(&self, status: StatusCode, uri: &Uri, message: &str) -> Response {
        self.respond(status, uri, message, json!({}))
    }
}

async fn admin() -> &'static str {
    "GOOD"
}

async fn ready(State(api): State<Api>) -> Response {
    if api.monitor.is_ready() {
        (StatusCode::OK, "READY").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "STARTING").into_response()
    }
}

async fn metrics(State(api): State<Api>) -> Response {
    let mut registry = prometheus_client::registry::Registry::default();
    crate::metrics::register(&mut registry, api.monitor.clone());
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, &registry) {
        Ok(()) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"error":true,"message":"invalid request type","result":{}}"#,
    )
        .into_response()
}

async fn cluster_list(State(api): State<Api>, uri: Uri) -> Response {
    let clusters = api.monitor.clusters();
    api.ok(
        &uri,
        "cluster list returned",
        json!({ "clusters": clusters }),
    )
}

async fn cluster_detail(State(api): State<Api>, uri: Uri, Path(cluster): Path<String>) -> Response {
    match cluster_module(&api.monitor, &cluster) {
        Some(module) => api.ok(
            &uri,
            "cluster module detail returned",
            json!({ "module": module }),
        ),
        None => api.error(StatusCode::NOT_FOUND, &uri, "cluster module not found"),
    }
}

async fn topic_list(State(api): State<Api>, uri: Uri, Path(cluster): Path<String>) -> Response {
    match api.monitor.topics(&cluster) {
        Some(topics) => api.ok(&uri, "topic list returned", json!({ "topics": topics })),
        None => api.error(StatusCode::NOT_FOUND, &uri, "cluster not found"),
    }
}

async fn topic_detail(
    State(api): State<Api>,
    uri: Uri,
    Path((cluster, topic)): Path<(String, String)>,
) -> Response {
    match api.monitor.topic(&cluster, &topic) {
        Some(offsets) => api.ok(
            &uri,
            "topic offsets returned",
            json!({ "offsets": offsets }),
        ),
        None => api.error(StatusCode::NOT_FOUND, &uri, "cluster or topic not found"),
    }
}

async fn topic_consumers(
    State(api): State<Api>,
    uri: Uri,
    Path((cluster, topic)): Path<(String, String)>,
) -> Response {
    match api.monitor.consumers_for_topic(&cluster, &topic) {
        Some(consumers) => api.ok(
            &uri,
            "consumers of topic returned",
            json!({ "consumers": consumers }),
        ),
        None => api.error(StatusCode::NOT_FOUND, &uri, "cluster not found"),
    }
}

async fn consumer_list(State(api): State<Api>, uri: Uri, Path(cluster): Path<String>) -> Response {
    match api.monitor.consumers(&cluster) {
        Some(consumers) => api.ok(
            &uri,
            "consumer list returned",
            json!({ "consumers": consumers }),
        ),
        None => api.error(StatusCode::NOT_FOUND, &uri, "cluster not found"),
    }
}

async fn consumer_detail(
    State(api): State<Api>,
    uri: Uri,
    Path((cluster, group)): Path<(String, String)>,
) -> Response {
    match api.monitor.consumer(&cluster, &group) {
        Some(topics) => api.ok(
            &uri,
            "consumer detail returned",
            json!({ "topics": topics }),
        ),
        None => api.error(StatusCode::NOT_FOUND, &uri, "cluster or consumer not found"),
    }
}

async fn consumer_status(
    State(api): State<Api>,
    uri: Uri,
    Path((cluster, group)): Path<(String, String)>,
) -> Response {
    group_status(&api, &uri, &cluster, &group, false)
}

async fn consumer_lag(
    State(api): State<Api>,
    uri: Uri,
    Path((cluster, group)): Path<(String, String)>,
) -> Response {
    group_status(&api, &uri, &cluster, &group, true)
}

fn group_status(api: &Api, uri: &Uri, cluster: &str, group: &str, show_all: bool) -> Response {
    let status = api.monitor.group_status(cluster, group, show_all);
    let code = if status.status == Status::NotFound {
        StatusCode::NOT_FOUND
    } else {
        StatusCode::OK
    };
    // Burrow answers a missing group with its NOTFOUND status and error=false.
    let mut response = api.respond(
        StatusCode::OK,
        uri,
        "consumer status returned",
        json!({ "status": status }),
    );
    *response.status_mut() = code;
    response
}

async fn consumer_delete(
    State(api): State<Api>,
    uri: Uri,
    Path((cluster, group)): Path<(String, String)>,
) -> Response {
    if api.monitor.delete_group(&cluster, &group, None) {
        api.ok(&uri, "consumer group removed", json!({}))
    } else {
        api.error(StatusCode::NOT_FOUND, &uri, "cluster not found")
    }
}

async fn consumer_topic_delete(
    State(api): State<Api>,
    uri: Uri,
    Path((cluster, group, topic)): Path<(String, String, String)>,
) -> Response {
    if api.monitor.delete_group(&cluster, &group, Some(&topic)) {
        api.ok(&uri, "consumer group removed", json!({}))
    } else {
        api.error(StatusCode::NOT_FOUND, &uri, "cluster not found")
    }
}

fn client_profile(monitor: &Monitor, name: Option<&str>) -> Value {
    let name = name.unwrap_or("");
    let profile = monitor.config().client_profiles.get(name);
    json!({
        "name": name,
        "client-id": monitor.config().client_id(Some(name).filter(|name| !name.is_empty())),
        "kafka-version": profile.and_then(|profile| profile.kafka_version.clone()).unwrap_or_default(),
        "tls": null,
        "sasl": null,
    })
}

fn cluster_module(monitor: &Monitor, cluster: &str) -> Option<Value> {
    let config = monitor.config().clusters.get(cluster)?;
    Some(json!({
        "class-name": config.class_name,
        "servers": config.servers,
        "client-profile": client_profile(monitor, config.client_profile.as_deref()),
        "topic-refresh": config.topic_refresh,
        "offset-refresh": config.offset_refresh,
    }))
}

async fn config_main(State(api): State<Api>, uri: Uri) -> Response {
    let config = api.monitor.config();
    let servers: serde_json::Map<String, Value> = config
        .httpservers
        .iter()
        .map(|(name, server)| {
            (
                name.clone(),
                json!({"address": server.address, "tls": server.tls.clone().unwrap_or_default(), "timeout": server.timeout.unwrap_or(0)}),
            )
        })
        .collect();
    api.ok(
        &uri,
        "main config returned",
        json!({
            "general": {
                "pidfile": config.general.pidfile.clone().unwrap_or_default(),
                "stdout-logfile": config.general.stdout_logfile.clone().unwrap_or_default(),
                "access-control-allow-origin": config.general.access_control_allow_origin.clone().unwrap_or_default(),
            },
            "logging": {
                "filename": config.logging.filename.clone().unwrap_or_default(),
                "max-size": config.logging.maxsize.unwrap_or(0),
                "max-backups": config.logging.maxbackups.unwrap_or(0),
                "max-age": config.logging.maxage.unwrap_or(0),
                "use-local-time": config.logging.use_localtime.unwrap_or(false),
                "use-compression": config.logging.use_compression.unwrap_or(false),
                "level": config.logging.level.clone().unwrap_or_else(|| "info".to_string()),
            },
            "zookeeper": {"servers": [], "timeout": 0, "root-path": ""},
            "httpserver": servers,
        }),
    )
}

/// The module names of a config section, and Burrow's coordinator name for it.
fn section_modules(monitor: &Monitor, section: &str) -> Option<Vec<String>> {
    let config = monitor.config();
    Some(match section {
        "storage" => config.storage.keys().cloned().collect(),
        "evaluator" => config.evaluators.keys().cloned().collect(),
        "cluster" => config.clusters.keys().cloned().collect(),
        "consumer" => config.consumers.keys().cloned().collect(),
        "notifier" => config.notifiers.keys().cloned().collect(),
        _ => return None,
    })
}

async fn config_list(State(api): State<Api>, uri: Uri, Path(section): Path<String>) -> Response {
    match section_modules(&api.monitor, &section) {
        Some(modules) => api.ok(
            &uri,
            &format!("{section} module list returned"),
            json!({"coordinator": section, "modules": modules}),
        ),
        None => not_found().await,
    }
}

async fn config_detail(
    State(api): State<Api>,
    uri: Uri,
    Path((section, name)): Path<(String, String)>,
) -> Response {
    let config = api.monitor.config();
    let module = match section.as_str() {
        "cluster" => cluster_module(&api.monitor, &name),
        "consumer" => config.consumers.get(&name).map(|consumer| {
            json!({
                "class-name": consumer.class_name,
                "cluster": consumer.cluster,
                "servers": consumer.servers,
                "group-allowlist": consumer.group_allowlist.clone().unwrap_or_default(),
                "zookeeper-path": "",
                "zookeeper-timeout": 0,
                "client-profile": client_profile(&api.monitor, consumer.client_profile.as_deref()),
                "offsets-topic": consumer.offsets_topic,
                "start-latest": consumer.start_latest,
            })
        }),
        "storage" => config.storage.get(&name).cloned(),
        "evaluator" => config.evaluators.get(&name).cloned(),
        // A notifier's section may hold credentials (an email password): never echoed.
        "notifier" => config.notifiers.get(&name).map(|notifier| {
            let mut shown = notifier.clone();
            if let Value::Object(fields) = &mut shown {
                fields.remove("password");
            }
            shown
        }),
        _ => return not_found().await,
    };
    match module {
        Some(module) => api.ok(
            &uri,
            &format!("{section} module detail returned"),
            json!({ "module": module }),
        ),
        None => api.error(
            StatusCode::NOT_FOUND,
            &uri,
            &format!("{section} module not found"),
        ),
    }
}

async fn log_level(State(api): State<Api>, uri: Uri) -> Response {
    let level = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".to_string());
    api.ok(&uri, "log level returned", json!({ "level": level }))
}
