//! Kafka Connect's REST API (4.1), its status codes and JSON shapes: errors are
//! `{"error_code": N, "message": ...}` as Connect's `ConnectExceptionMapper` writes them.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde_json::{Map, Value as Json, json};

use crate::records::{StatusKey, TargetState};
use crate::worker::{HerderError, Worker, connector_type};
use crate::{ConfigError, Props};
use crate::{connectors, errors, loggers};

/// The version `GET /` reports: the Kafka Connect release whose API this is.
pub const CONNECT_VERSION: &str = "4.1.1";

type Shared = State<Arc<Worker>>;
type Params = Query<Vec<(String, String)>>;

pub fn router(worker: Arc<Worker>) -> Router {
    Router::new()
        .route("/", get(root))
        .route("/connectors", get(list).post(create))
        .route("/connectors/{name}", get(info).delete(delete))
        .route(
            "/connectors/{name}/config",
            get(get_config).put(put_config).patch(patch_config),
        )
        .route("/connectors/{name}/status", get(status))
        .route("/connectors/{name}/restart", post(restart))
        .route("/connectors/{name}/pause", put(pause))
        .route("/connectors/{name}/resume", put(resume))
        .route("/connectors/{name}/stop", put(stop))
        .route("/connectors/{name}/tasks", get(tasks))
        .route("/connectors/{name}/tasks/{task}/status", get(task_status))
        .route(
            "/connectors/{name}/tasks/{task}/restart",
            post(task_restart),
        )
        .route(
            "/connectors/{name}/offsets",
            get(offsets).patch(alter_offsets).delete(reset_offsets),
        )
        .route("/connectors/{name}/topics", get(topics))
        .route("/connectors/{name}/topics/reset", put(reset_topics))
        .route("/admin/loggers", get(all_loggers))
        .route("/admin/loggers/{logger}", get(get_logger).put(set_logger))
        .route("/connector-plugins", get(plugins))
        .route("/connector-plugins/{plugin}/config", get(plugin_config))
        .route("/connector-plugins/{plugin}/config/validate", put(validate))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "HTTP 404 Not Found") })
        .layer(axum::middleware::from_fn_with_state(
            worker.clone(),
            route_writes,
        ))
        .with_state(worker)
}

/// Where a write goes, as in Connect: config changes (create, config, delete, pause,
/// resume, stop) to the group's leader, restarts to the worker running what restarts;
/// between generations, Connect's 409. Reads and `config/validate` are served here.
async fn route_writes(
    State(worker): Shared,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let forwarded = request.headers().contains_key(FORWARDED);
    if method == axum::http::Method::GET || path.starts_with("/connector-plugins") || forwarded {
        return next.run(request).await;
    }
    let Some(assignment) = worker.assignment() else {
        return error(
            StatusCode::CONFLICT,
            "Cannot complete request because of a conflicting operation (e.g. worker rebalance)",
        );
    };
    let target = if path.ends_with("/restart") {
        // The worker running the connector (or task) restarts it.
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let key = match parts.as_slice() {
            ["connectors", name, "restart"] => Some(StatusKey::Connector(name.to_string())),
            ["connectors", name, "tasks", task, "restart"] => task
                .parse()
                .ok()
                .map(|t| StatusKey::Task(name.to_string(), t)),
            _ => None,
        };
        let runs_here = match &key {
            Some(StatusKey::Connector(name)) => assignment.runs_connector(name),
            Some(StatusKey::Task(name, t)) => assignment.runs_task(name, *t),
            None => true,
        };
        if runs_here {
            None
        } else {
            key.and_then(|k| worker.status(&k))
                .map(|s| format!("http://{}/", s.worker_id))
                .filter(|url| *url != worker.config.rest_url())
        }
    } else if assignment.leading() || assignment.leader_url.is_empty() {
        None
    } else {
        Some(assignment.leader_url.clone())
    };
    match target {
        None => next.run(request).await,
        Some(url) => forward(&url, request).await,
    }
}

/// Marks a request another worker forwarded, so it is served where it arrives.
const FORWARDED: &str = "x-sluice-connect-forwarded";

async fn forward(base: &str, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 16 * 1024 * 1024).await else {
        return error(StatusCode::BAD_REQUEST, "request body too large");
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .trim_start_matches('/')
        .to_string();
    let url = format!("{}/{path}", base.trim_end_matches('/'));
    tracing::debug!(%url, "forwarding a REST request");
    let method = match reqwest::Method::from_bytes(parts.method.as_str().as_bytes()) {
        Ok(m) => m,
        Err(_) => {
            return error(
                StatusCode::METHOD_NOT_ALLOWED,
                "HTTP 405 Method Not Allowed",
            );
        }
    };
    let mut outgoing = reqwest::Client::new()
        .request(method, &url)
        .header(FORWARDED, "1")
        .body(body.to_vec());
    if let Some(ct) = parts.headers.get(axum::http::header::CONTENT_TYPE)
        && let Ok(ct) = ct.to_str()
    {
        outgoing = outgoing.header("content-type", ct);
    }
    match outgoing.send().await {
        Ok(answer) => {
            let status = StatusCode::from_u16(answer.status().as_u16())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let bytes = answer.bytes().await.unwrap_or_default();
            let mut response = (status, bytes.to_vec()).into_response();
            if !bytes.is_empty() {
                response.headers_mut().insert(
                    axum::http::header::CONTENT_TYPE,
                    axum::http::HeaderValue::from_static("application/json"),
                );
            }
            response
        }
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("Error trying to forward REST request: {e}"),
        ),
    }
}

fn json_response(status: StatusCode, body: Json) -> Response {
    (status, axum::Json(body)).into_response()
}

fn error(status: StatusCode, message: &str) -> Response {
    json_response(
        status,
        json!({"error_code": status.as_u16(), "message": message}),
    )
}

fn herder_error(e: HerderError) -> Response {
    let status = match &e {
        HerderError::NotFound(_) => StatusCode::NOT_FOUND,
        HerderError::Exists(_) => StatusCode::CONFLICT,
        HerderError::BadRequest(_) | HerderError::Invalid { .. } => StatusCode::BAD_REQUEST,
        HerderError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    error(status, &e.to_string())
}

async fn root(State(worker): Shared) -> Response {
    json_response(
        StatusCode::OK,
        json!({
            "version": CONNECT_VERSION,
            "commit": "sluice",
            "kafka_cluster_id": worker.cluster_id().unwrap_or_default(),
        }),
    )
}

/// `ConnectorInfo`: name, config, tasks (`{"connector","task"}`), type.
fn connector_info(worker: &Worker, name: &str) -> Option<Json> {
    let state = worker.state();
    let config = state.connectors.get(name)?;
    let tasks: Vec<Json> = (0..state.tasks.get(name).map_or(0, Vec::len))
        .map(|t| json!({"connector": name, "task": t}))
        .collect();
    Some(json!({
        "name": name,
        "config": config,
        "tasks": tasks,
        "type": connector_type(config).unwrap_or("unknown"),
    }))
}

fn status_json(worker: &Worker, key: &StatusKey) -> Map<String, Json> {
    let mut out = Map::new();
    match worker.status(key) {
        Some(s) => {
            out.insert("state".into(), json!(s.state));
            out.insert("worker_id".into(), json!(s.worker_id));
            if let Some(version) = s.version {
                out.insert("version".into(), json!(version));
            }
            if let Some(trace) = s.trace {
                out.insert("trace".into(), json!(trace));
            }
        }
        None => {
            out.insert("state".into(), json!("UNASSIGNED"));
            out.insert("worker_id".into(), json!(worker.config.worker_id()));
        }
    }
    out
}

/// `ConnectorStateInfo`.
fn connector_status(worker: &Worker, name: &str) -> Option<Json> {
    let state = worker.state();
    let config = state.connectors.get(name)?;
    // Connect lists the tasks the status topic holds for the connector.
    let tasks: Vec<Json> = worker
        .task_statuses(name)
        .into_iter()
        .map(|t| {
            let mut s = Map::new();
            s.insert("id".into(), json!(t));
            s.extend(status_json(worker, &StatusKey::Task(name.into(), t)));
            Json::Object(s)
        })
        .collect();
    Some(json!({
        "name": name,
        "connector": status_json(worker, &StatusKey::Connector(name.into())),
        "tasks": tasks,
        "type": connector_type(config).unwrap_or("unknown"),
    }))
}

async fn list(State(worker): Shared, Query(params): Params) -> Response {
    if let Err(e) = worker.sync().await {
        return herder_error(e);
    }
    let names: Vec<String> = worker.state().connectors.keys().cloned().collect();
    let expand: Vec<&str> = params
        .iter()
        .filter(|(k, _)| k == "expand")
        .map(|(_, v)| v.as_str())
        .collect();
    if expand.is_empty() {
        return json_response(StatusCode::OK, json!(names));
    }
    let mut out = Map::new();
    for name in names {
        let mut entry = Map::new();
        if expand.contains(&"status")
            && let Some(s) = connector_status(&worker, &name)
        {
            entry.insert("status".into(), s);
        }
        if expand.contains(&"info")
            && let Some(i) = connector_info(&worker, &name)
        {
            entry.insert("info".into(), i);
        }
        out.insert(name, Json::Object(entry));
    }
    json_response(StatusCode::OK, Json::Object(out))
}

/// A JSON object of strings as Connect reads a config (numbers and booleans as text).
fn props_of(value: &Json) -> Result<Props, String> {
    let Json::Object(map) = value else {
        return Err("Cannot deserialize value: a connector config must be a JSON object".into());
    };
    Ok(map
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            (
                k.clone(),
                match v {
                    Json::String(s) => s.clone(),
                    other => other.to_string(),
                },
            )
        })
        .collect())
}

fn parse_body(body: &Bytes) -> Result<Json, Box<Response>> {
    serde_json::from_slice(body).map_err(|e| {
        Box::new(error(
            StatusCode::BAD_REQUEST,
            &format!("Unrecognized or malformed JSON: {e}"),
        ))
    })
}

async fn create(State(worker): Shared, body: Bytes) -> Response {
    let body = match parse_body(&body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let Some(name) = body.get("name").and_then(Json::as_str).map(str::trim) else {
        return error(StatusCode::BAD_REQUEST, "Connector name must not be empty");
    };
    if name.is_empty() {
        return error(StatusCode::BAD_REQUEST, "Connector name must not be empty");
    }
    if name.chars().any(|c| c.is_control()) {
        return error(
            StatusCode::BAD_REQUEST,
            "Connector name must not contain ISO control characters",
        );
    }
    let mut config = match body.get("config").map(props_of) {
        Some(Ok(c)) => c,
        Some(Err(e)) => return error(StatusCode::BAD_REQUEST, &e),
        None => Props::new(),
    };
    match config.get("name") {
        Some(n) if n != name => {
            return error(
                StatusCode::BAD_REQUEST,
                "Connector name configuration must match connector name in request",
            );
        }
        _ => {
            config.insert("name".into(), name.to_string());
        }
    }
    let initial = match body.get("initial_state").and_then(Json::as_str) {
        None => None,
        Some("RUNNING") => Some(TargetState::Started),
        Some("PAUSED") => Some(TargetState::Paused),
        Some("STOPPED") => Some(TargetState::Stopped),
        Some(other) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("Invalid initial state {other}: must be RUNNING, PAUSED or STOPPED"),
            );
        }
    };
    match worker.put_connector(name, config, false, initial).await {
        Ok(_) => json_response(
            StatusCode::CREATED,
            connector_info(&worker, name).unwrap_or(Json::Null),
        ),
        Err(e) => herder_error(e),
    }
}

async fn info(State(worker): Shared, Path(name): Path<String>) -> Response {
    if let Err(e) = worker.sync().await {
        return herder_error(e);
    }
    match connector_info(&worker, &name) {
        Some(i) => json_response(StatusCode::OK, i),
        None => herder_error(HerderError::NotFound(name)),
    }
}

async fn delete(State(worker): Shared, Path(name): Path<String>) -> Response {
    match worker.delete_connector(&name).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => herder_error(e),
    }
}

async fn get_config(State(worker): Shared, Path(name): Path<String>) -> Response {
    if let Err(e) = worker.sync().await {
        return herder_error(e);
    }
    match worker.state().connectors.get(&name) {
        Some(c) => json_response(StatusCode::OK, json!(c)),
        None => herder_error(HerderError::NotFound(name)),
    }
}

async fn put_config(State(worker): Shared, Path(name): Path<String>, body: Bytes) -> Response {
    let body = match parse_body(&body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let mut config = match props_of(&body) {
        Ok(c) => c,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e),
    };
    match config.get("name") {
        Some(n) if *n != name => {
            return error(
                StatusCode::BAD_REQUEST,
                "Connector name configuration must match connector name in request",
            );
        }
        _ => {
            config.insert("name".into(), name.clone());
        }
    }
    match worker.put_connector(&name, config, true, None).await {
        Ok(created) => json_response(
            if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            },
            connector_info(&worker, &name).unwrap_or(Json::Null),
        ),
        Err(e) => herder_error(e),
    }
}

async fn patch_config(State(worker): Shared, Path(name): Path<String>, body: Bytes) -> Response {
    let body = match parse_body(&body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let Json::Object(patch) = body else {
        return error(
            StatusCode::BAD_REQUEST,
            "A config patch must be a JSON object",
        );
    };
    if let Err(e) = worker.sync().await {
        return herder_error(e);
    }
    let Some(mut config) = worker.state().connectors.get(&name).cloned() else {
        return herder_error(HerderError::NotFound(name));
    };
    for (k, v) in patch {
        match v {
            Json::Null => {
                config.remove(&k);
            }
            Json::String(s) => {
                config.insert(k, s);
            }
            other => {
                config.insert(k, other.to_string());
            }
        }
    }
    match worker.put_connector(&name, config, true, None).await {
        Ok(_) => json_response(
            StatusCode::OK,
            connector_info(&worker, &name).unwrap_or(Json::Null),
        ),
        Err(e) => herder_error(e),
    }
}

async fn status(State(worker): Shared, Path(name): Path<String>) -> Response {
    if let Err(e) = worker.sync().await {
        return herder_error(e);
    }
    match connector_status(&worker, &name) {
        Some(s) => json_response(StatusCode::OK, s),
        None => error(
            StatusCode::NOT_FOUND,
            &format!("No status found for connector {name}"),
        ),
    }
}

fn flag(params: &[(String, String)], key: &str) -> bool {
    params.iter().any(|(k, v)| k == key && v == "true")
}

async fn restart(
    State(worker): Shared,
    Path(name): Path<String>,
    Query(params): Params,
) -> Response {
    let include_tasks = flag(&params, "includeTasks");
    let only_failed = flag(&params, "onlyFailed");
    match worker
        .restart(&name, None, include_tasks, only_failed)
        .await
    {
        // Connect answers 204 for the plain (connector only) restart, 202 with the
        // status otherwise.
        Ok(()) if !include_tasks && !only_failed => StatusCode::NO_CONTENT.into_response(),
        Ok(()) => json_response(
            StatusCode::ACCEPTED,
            connector_status(&worker, &name).unwrap_or(Json::Null),
        ),
        Err(HerderError::NotFound(name)) => {
            error(StatusCode::NOT_FOUND, &format!("Unknown connector: {name}"))
        }
        Err(e) => herder_error(e),
    }
}

async fn set_state(worker: &Worker, name: &str, state: TargetState) -> Response {
    match worker.set_target_state(name, state).await {
        Ok(()) => StatusCode::ACCEPTED.into_response(),
        Err(e) => herder_error(e),
    }
}

async fn pause(State(worker): Shared, Path(name): Path<String>) -> Response {
    set_state(&worker, &name, TargetState::Paused).await
}

async fn resume(State(worker): Shared, Path(name): Path<String>) -> Response {
    set_state(&worker, &name, TargetState::Started).await
}

async fn stop(State(worker): Shared, Path(name): Path<String>) -> Response {
    // Connect answers a stop with 204, a pause or resume with 202.
    match worker.set_target_state(&name, TargetState::Stopped).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => herder_error(e),
    }
}

async fn tasks(State(worker): Shared, Path(name): Path<String>) -> Response {
    if let Err(e) = worker.sync().await {
        return herder_error(e);
    }
    let state = worker.state();
    if !state.connectors.contains_key(&name) {
        return herder_error(HerderError::NotFound(name));
    }
    let tasks: Vec<Json> = state
        .tasks
        .get(&name)
        .map(|tasks| {
            tasks
                .iter()
                .enumerate()
                .map(|(i, config)| json!({"id": {"connector": name, "task": i}, "config": config}))
                .collect()
        })
        .unwrap_or_default();
    json_response(StatusCode::OK, json!(tasks))
}

async fn task_status(State(worker): Shared, Path((name, task)): Path<(String, u32)>) -> Response {
    if let Err(e) = worker.sync().await {
        return herder_error(e);
    }
    let state = worker.state();
    if !state.connectors.contains_key(&name) {
        return herder_error(HerderError::NotFound(name));
    }
    if state
        .tasks
        .get(&name)
        .is_none_or(|t| task as usize >= t.len())
    {
        return error(
            StatusCode::NOT_FOUND,
            &format!("No status found for task {name}-{task}"),
        );
    }
    let mut s = Map::new();
    s.insert("id".into(), json!(task));
    s.extend(status_json(&worker, &StatusKey::Task(name, task)));
    json_response(StatusCode::OK, Json::Object(s))
}

async fn task_restart(State(worker): Shared, Path((name, task)): Path<(String, u32)>) -> Response {
    match worker.restart(&name, Some(task), false, false).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => herder_error(e),
    }
}

async fn offsets(State(worker): Shared, Path(name): Path<String>) -> Response {
    if let Err(e) = worker.sync().await {
        return herder_error(e);
    }
    match worker.offsets(&name).await {
        Ok(offsets) => {
            let offsets: Vec<Json> = offsets
                .into_iter()
                .map(|(p, o)| json!({"partition": p, "offset": o}))
                .collect();
            json_response(StatusCode::OK, json!({ "offsets": offsets }))
        }
        Err(e) => herder_error(e),
    }
}

/// `PATCH /connectors/{c}/offsets` (KIP-875): `{"offsets":[{"partition":{..},
/// "offset":{..}|null}]}`.
async fn alter_offsets(State(worker): Shared, Path(name): Path<String>, body: Bytes) -> Response {
    let body = match parse_body(&body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let missing = || {
        error(
            StatusCode::BAD_REQUEST,
            "Partitions / offsets need to be provided for an alter offsets request",
        )
    };
    let Some(entries) = body.get("offsets").and_then(Json::as_array) else {
        return missing();
    };
    if entries.is_empty() {
        return missing();
    }
    let mut change = Vec::new();
    for entry in entries {
        let Some(partition) = entry.get("partition").and_then(Json::as_object) else {
            return error(
                StatusCode::BAD_REQUEST,
                "The partition of every entry in 'offsets' must be an object",
            );
        };
        let offset = match entry.get("offset") {
            None | Some(Json::Null) => None,
            Some(Json::Object(o)) => Some(o.clone()),
            Some(_) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "The offset of every entry in 'offsets' must be an object or null",
                );
            }
        };
        change.push((partition.clone(), offset));
    }
    if let Err(e) = worker.sync().await {
        return herder_error(e);
    }
    match worker.modify_offsets(&name, Some(change)).await {
        Ok(message) => json_response(StatusCode::OK, json!({ "message": message })),
        Err(e) => herder_error(e),
    }
}

async fn reset_offsets(State(worker): Shared, Path(name): Path<String>) -> Response {
    if let Err(e) = worker.sync().await {
        return herder_error(e);
    }
    match worker.modify_offsets(&name, None).await {
        Ok(message) => json_response(StatusCode::OK, json!({ "message": message })),
        Err(e) => herder_error(e),
    }
}

/// `GET /connectors/{c}/topics` (KIP-558): the topics its tasks produced to or consumed
/// from since the last reset.
async fn topics(State(worker): Shared, Path(name): Path<String>) -> Response {
    if !worker.config.topic_tracking {
        return error(StatusCode::FORBIDDEN, "Topic tracking is disabled.");
    }
    if let Err(e) = worker.sync().await {
        return herder_error(e);
    }
    // An unknown connector has no active topics (Connect answers 200, not 404).
    let topics = worker.active_topics(&name);
    json_response(StatusCode::OK, json!({ name: { "topics": topics } }))
}

async fn reset_topics(State(worker): Shared, Path(name): Path<String>) -> Response {
    if !worker.config.topic_tracking {
        return error(StatusCode::FORBIDDEN, "Topic tracking is disabled.");
    }
    if !worker.config.topic_tracking_allow_reset {
        return error(StatusCode::FORBIDDEN, "Topic tracking reset is disabled.");
    }
    match worker.reset_topics(&name).await {
        Ok(()) => StatusCode::ACCEPTED.into_response(),
        Err(e) => herder_error(e),
    }
}

/// `GET /admin/loggers`: every logger with a level set, and the root.
async fn all_loggers() -> Response {
    let all: Map<String, Json> = loggers::all()
        .into_iter()
        .map(|(name, (level, modified))| (name, json!({"level": level, "last_modified": modified})))
        .collect();
    json_response(StatusCode::OK, Json::Object(all))
}

async fn get_logger(Path(logger): Path<String>) -> Response {
    match loggers::level(&logger) {
        Some((level, modified)) => json_response(
            StatusCode::OK,
            json!({"level": level, "last_modified": modified}),
        ),
        None => error(
            StatusCode::NOT_FOUND,
            &format!("Logger {logger} not found."),
        ),
    }
}

/// `PUT /admin/loggers/{name}` with `{"level": ...}`: this worker's level (answering
/// the loggers changed), or with `?scope=cluster` every worker's (204), through the
/// config topic's `logger-cluster-<name>` record as Connect does.
async fn set_logger(
    State(worker): Shared,
    Path(logger): Path<String>,
    Query(params): Query<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    let body = match parse_body(&body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let Some(level) = body.get("level").and_then(Json::as_str) else {
        return error(
            StatusCode::BAD_REQUEST,
            "Desired 'level' parameter was not specified in request.",
        );
    };
    let Some(level) = loggers::parse_level(level) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("invalid log level '{level}'."),
        );
    };
    // Any other scope is the worker's, as Connect has it (with a warning).
    if params
        .get("scope")
        .is_some_and(|s| s.eq_ignore_ascii_case("cluster"))
    {
        return match worker.set_cluster_logger(&logger, level).await {
            Ok(()) => StatusCode::NO_CONTENT.into_response(),
            Err(e) => herder_error(e),
        };
    }
    match loggers::set(&logger, level, now_ms()) {
        Ok(changed) => json_response(StatusCode::OK, json!(changed)),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

async fn plugins(Query(params): Query<HashMap<String, String>>) -> Response {
    let _only_connectors = params.get("connectorsOnly").is_none_or(|v| v != "false");
    let list: Vec<Json> = connectors::plugins()
        .iter()
        .map(|p| json!({"class": p.class(), "type": p.kind().name(), "version": p.version()}))
        .collect();
    json_response(StatusCode::OK, json!(list))
}

async fn plugin_config(Path(plugin): Path<String>) -> Response {
    let Some(plugin) = connectors::plugin(&plugin) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!(
                "Failed to find any class that implements Connector and which name matches {plugin}"
            ),
        );
    };
    let keys: Vec<Json> = plugin
        .config_keys()
        .iter()
        .map(|k| {
            json!({
                "name": k.name, "type": k.ty, "required": k.required,
                "default_value": k.default, "importance": k.importance,
                "documentation": k.documentation, "group": null, "width": "NONE",
                "display_name": k.name, "dependents": [], "order": -1,
            })
        })
        .collect();
    json_response(StatusCode::OK, json!(keys))
}

/// `PUT /connector-plugins/{p}/config/validate`: every key's value and errors
/// (`ConfigInfos`).
async fn validate(State(worker): Shared, Path(plugin): Path<String>, body: Bytes) -> Response {
    let body = match parse_body(&body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let mut config = match props_of(&body) {
        Ok(c) => c,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e),
    };
    let Some(found) = connectors::plugin(&plugin) else {
        return error(
            StatusCode::BAD_REQUEST,
            &format!(
                "Failed to find any class that implements Connector and which name matches {plugin}"
            ),
        );
    };
    config
        .entry("connector.class".into())
        .or_insert_with(|| found.class().to_string());
    let errors = worker
        .validate(&config)
        .err()
        .unwrap_or_else(ConfigError::default);
    let mut names: Vec<String> = [
        "name",
        "connector.class",
        "tasks.max",
        "key.converter",
        "value.converter",
        "transforms",
        "predicates",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    names.extend(errors::KEYS.iter().map(|k| k.to_string()));
    names.extend(found.config_keys().iter().map(|k| k.name.to_string()));
    for (k, _) in &errors.errors {
        if !names.contains(k) {
            names.push(k.clone());
        }
    }
    let configs: Vec<Json> = names
        .iter()
        .map(|name| {
            let errs: Vec<&str> = errors
                .errors
                .iter()
                .filter(|(k, _)| k == name)
                .map(|(_, m)| m.as_str())
                .collect();
            json!({
                "definition": {"name": name},
                "value": {
                    "name": name,
                    "value": config.get(name),
                    "recommended_values": [],
                    "errors": errs,
                    "visible": true,
                }
            })
        })
        .collect();
    json_response(
        StatusCode::OK,
        json!({
            "name": found.class(),
            "error_count": errors.errors.len(),
            "groups": ["Common", "Transforms", "Predicates", "Error Handling"],
            "configs": configs,
        }),
    )
}
