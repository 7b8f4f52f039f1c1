//! The Connectors pages: every connector of the Kafka Connect worker (cluster) with its
//! type, class, state, tasks and worker; creating one from JSON after Connect's own
//! `config/validate` (each failing key listed with its error, nothing created while one
//! fails); a connector's page with its configuration, status, each task's state and
//! trace, its source offsets, and pause, resume, restart, stop and delete.
//!
//! Everything goes through Connect's REST API at `console.config.connect_url`, with the
//! REST helper of the Schemas pages: Connect's `{"error_code", "message"}` is shown as it
//! said it, next to the field it is about.

use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use reqwest::Method;
use serde_json::{Map, Value, json};

use super::html::{self, Nav, OnSuccess, esc, seg};
use super::schemas::{Service, call, count, failed_page, json_body, malformed_json, text_of};
use super::state::{ApiError, ApiResult, Console};

pub fn routes() -> Router<Arc<Console>> {
    Router::new()
        .route("/connectors", get(list_page))
        .route("/connectors/{name}", get(connector_page))
        .route("/api/connectors", post(create))
        .route("/api/connectors/validate", post(validate))
        .route("/api/connectors/{name}/{action}", post(act))
}

type Body = Result<Json<Value>, JsonRejection>;

async fn connect(
    console: &Console,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> ApiResult<Value> {
    call(console, Service::Connect, method, path, body).await
}

/// A connector's or task's state as a badge: RUNNING green, PAUSED, RESTARTING and
/// UNASSIGNED amber, FAILED red, STOPPED (and anything else) grey.
fn state_badge(state: &str) -> String {
    let kind = match state {
        "RUNNING" => "ok",
        "PAUSED" | "RESTARTING" | "UNASSIGNED" => "warn",
        "FAILED" => "err",
        _ => "muted",
    };
    html::badge(state, kind)
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut at = value;
    for key in path {
        at = at.get(key)?;
    }
    at.as_str()
}

/// Configuration keys whose values the page does not show.
fn is_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "password",
        "secret",
        "token",
        "jaas.config",
        "credentials",
        "api.key",
        "private.key",
    ]
    .iter()
    .any(|word| key.contains(word))
}

// -- the list --------------------------------------------------------------------------------

/// One connector as the list shows it.
#[derive(Debug, PartialEq)]
struct Row {
    name: String,
    kind: String,
    class: String,
    state: String,
    worker: String,
    /// (task id, state).
    tasks: Vec<(i64, String)>,
}

/// The rows of `GET /connectors?expand=status&expand=info` (an object by name), or of a
/// worker that does not expand (an array of names), sorted by name.
fn rows_of(answer: &Value) -> Vec<Row> {
    let mut rows: Vec<Row> = match answer {
        Value::Object(by_name) => by_name
            .iter()
            .map(|(name, entry)| {
                let status = entry.get("status").unwrap_or(&Value::Null);
                let info = entry.get("info").unwrap_or(&Value::Null);
                let tasks = status
                    .get("tasks")
                    .and_then(Value::as_array)
                    .map(|tasks| {
                        tasks
                            .iter()
                            .map(|task| {
                                (
                                    task.get("id").and_then(Value::as_i64).unwrap_or(-1),
                                    str_at(task, &["state"]).unwrap_or("UNKNOWN").to_string(),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                Row {
                    name: name.clone(),
                    kind: str_at(info, &["type"])
                        .or_else(|| str_at(status, &["type"]))
                        .unwrap_or("—")
                        .to_string(),
                    class: str_at(info, &["config", "connector.class"])
                        .unwrap_or("—")
                        .to_string(),
                    state: str_at(status, &["connector", "state"])
                        .unwrap_or("UNKNOWN")
                        .to_string(),
                    worker: str_at(status, &["connector", "worker_id"])
                        .unwrap_or("—")
                        .to_string(),
                    tasks,
                }
            })
            .collect(),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .map(|name| Row {
                name: name.to_string(),
                kind: "—".to_string(),
                class: "—".to_string(),
                state: "UNKNOWN".to_string(),
                worker: "—".to_string(),
                tasks: Vec::new(),
            })
            .collect(),
        _ => Vec::new(),
    };
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    rows
}

const EXAMPLE: &str = "{\"name\": \"lines\", \"config\": {\"connector.class\": \
     \"org.apache.kafka.connect.file.FileStreamSourceConnector\", \"tasks.max\": \"1\", \
     \"file\": \"/tmp/lines.txt\", \"topic\": \"lines\"}}";

async fn list_page(State(console): State<Arc<Console>>) -> Response {
    const TITLE: &str = "Connectors";
    if console.config.connect_url.is_none() {
        return html::page(
            &console,
            Nav::Connectors,
            TITLE,
            &Service::Connect.not_configured(),
        );
    }
    let (connectors, plugins) = tokio::join!(
        connect(
            &console,
            Method::GET,
            "/connectors?expand=status&expand=info",
            None
        ),
        connect(&console, Method::GET, "/connector-plugins", None),
    );
    let rows = match connectors {
        Ok(answer) => rows_of(&answer),
        Err(error) => return failed_page(&console, Nav::Connectors, TITLE, &error),
    };
    let mut body = String::with_capacity(512 * rows.len() + 8192);
    let running = rows.iter().filter(|r| r.state == "RUNNING").count();
    let failed = rows
        .iter()
        .filter(|r| r.state == "FAILED" || r.tasks.iter().any(|(_, s)| s == "FAILED"))
        .count();
    let _ = write!(
        body,
        "<p>{} connectors: {running} running, {failed} with a failure.</p>",
        rows.len()
    );
    body.push_str(&html::table_filter("connectors", "Search connectors"));
    body.push_str(
        "<table id=\"connectors\"><thead><tr><th scope=\"col\">Name</th>\
         <th scope=\"col\">Type</th><th scope=\"col\">Class</th><th scope=\"col\">State</th>\
         <th scope=\"col\">Tasks</th><th scope=\"col\">Worker</th></tr></thead><tbody>",
    );
    for row in &rows {
        let mut tasks = format!("{}", row.tasks.len());
        for (id, state) in &row.tasks {
            let _ = write!(
                tasks,
                " <span title=\"task {id}\">#{id} {}</span>",
                state_badge(state)
            );
        }
        let _ = write!(
            body,
            "<tr data-connector=\"{0}\"><td><a href=\"/connectors/{1}\">{0}</a></td><td>{2}</td>\
             <td class=\"mono\">{3}</td><td>{4}</td><td>{tasks}</td><td>{5}</td></tr>",
            esc(&row.name),
            seg(&row.name),
            esc(&row.kind),
            esc(&row.class),
            state_badge(&row.state),
            esc(&row.worker)
        );
    }
    body.push_str("</tbody></table>");
    if rows.is_empty() {
        body.push_str("<p class=\"muted\">No connectors yet.</p>");
    }

    body.push_str(if console.config.read_only {
        "<h2>Validate a connector configuration</h2>"
    } else {
        "<h2>Create a connector</h2>"
    });
    // Read-only, the form's one action is the validation (it changes nothing).
    body.push_str(&if console.config.read_only {
        html::form_start(
            "/api/connectors/validate",
            "POST",
            OnSuccess::Result("validate-result"),
            "Validate a connector configuration",
        )
    } else {
        html::form_start(
            "/api/connectors",
            "POST",
            OnSuccess::Redirect,
            "Create a connector",
        )
    });
    let placeholder = format!(
        "placeholder=\"{}\" spellcheck=\"false\" aria-describedby=\"h-config\"",
        esc(EXAMPLE)
    );
    body.push_str(&html::field(
        "config",
        "Configuration (JSON)",
        &html::textarea("config", "", 14, &placeholder),
        "Either {\"name\": ..., \"config\": {...}} or a flat configuration with \"name\" \
         inside. Validate asks the worker's config/validate; Create validates first and \
         creates nothing while a key has an error.",
    ));
    let _ = write!(
        body,
        "<div id=\"validate-result\" aria-live=\"polite\"></div>\
         <div class=\"actions\"><button type=\"submit\" class=\"secondary\" \
         data-api=\"/api/connectors/validate\" data-success=\"result:validate-result\">Validate</button>{}</div>\
         <p class=\"form-error\" data-error-for=\"_form\" role=\"alert\"></p>\
         <p class=\"form-status\" role=\"status\"></p></form>",
        if console.config.read_only {
            ""
        } else {
            "<button type=\"submit\">Create</button>"
        }
    );

    body.push_str("<h2>Plugins</h2>");
    match plugins {
        Ok(plugins) => {
            body.push_str(
                "<table id=\"plugins\"><thead><tr><th scope=\"col\">Class</th>\
                 <th scope=\"col\">Type</th><th scope=\"col\">Version</th></tr></thead><tbody>",
            );
            for plugin in plugins.as_array().into_iter().flatten() {
                let _ = write!(
                    body,
                    "<tr><td class=\"mono\">{}</td><td>{}</td><td>{}</td></tr>",
                    esc(str_at(plugin, &["class"]).unwrap_or("—")),
                    esc(str_at(plugin, &["type"]).unwrap_or("—")),
                    esc(str_at(plugin, &["version"]).unwrap_or("—")),
                );
            }
            body.push_str("</tbody></table>");
        }
        Err(error) => {
            let _ = write!(
                body,
                "<p class=\"error\" role=\"alert\">{}</p>",
                esc(&error.message)
            );
        }
    }
    html::page(&console, Nav::Connectors, TITLE, &body)
}

// -- one connector ---------------------------------------------------------------------------

fn trace_html(summary: &str, trace: Option<&str>) -> String {
    match trace.filter(|t| !t.is_empty()) {
        Some(trace) => format!(
            "<details><summary>{}</summary><pre class=\"mono\">{}</pre></details>",
            esc(summary),
            esc(trace)
        ),
        None => String::new(),
    }
}

async fn connector_page(State(console): State<Arc<Console>>, Path(name): Path<String>) -> Response {
    if console.config.connect_url.is_none() {
        return html::page(
            &console,
            Nav::Connectors,
            &name,
            &Service::Connect.not_configured(),
        );
    }
    let base = format!("/connectors/{}", seg(&name));
    let (status_path, offsets_path) = (format!("{base}/status"), format!("{base}/offsets"));
    let (info, status, offsets) = tokio::join!(
        connect(&console, Method::GET, &base, None),
        connect(&console, Method::GET, &status_path, None),
        connect(&console, Method::GET, &offsets_path, None),
    );
    let info = match info {
        Ok(info) => info,
        Err(error) => return failed_page(&console, Nav::Connectors, &name, &error),
    };
    let mut body = String::with_capacity(16 * 1024);
    let (state, worker) = match &status {
        Ok(status) => (
            str_at(status, &["connector", "state"]).unwrap_or("UNKNOWN"),
            str_at(status, &["connector", "worker_id"]).unwrap_or("—"),
        ),
        Err(_) => ("UNKNOWN", "—"),
    };
    let tasks: Vec<Value> = status
        .as_ref()
        .ok()
        .and_then(|s| s.get("tasks"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let _ = write!(
        body,
        "<div class=\"cards\">\
         <div class=\"card\"><div class=\"value\" id=\"connector-state\">{}</div><div class=\"label\">state</div></div>\
         <div class=\"card\"><div class=\"value\">{}</div><div class=\"label\">type</div></div>\
         <div class=\"card\"><div class=\"value\">{}</div><div class=\"label\">tasks</div></div>\
         <div class=\"card\"><div class=\"value mono\">{}</div><div class=\"label\">worker</div></div>\
         </div><p>Class <code>{}</code>. <a href=\"/connectors\">All connectors</a></p>",
        state_badge(state),
        esc(str_at(&info, &["type"]).unwrap_or("—")),
        tasks.len(),
        esc(worker),
        esc(str_at(&info, &["config", "connector.class"]).unwrap_or("—")),
    );
    if let Err(error) = &status {
        let _ = write!(
            body,
            "<p class=\"error\" role=\"alert\">{}</p>",
            esc(&error.message)
        );
    }
    if let Ok(status) = &status {
        body.push_str(&trace_html(
            "The connector's trace",
            str_at(status, &["connector", "trace"]),
        ));
    }

    if !console.config.read_only {
        let api = format!("/api/connectors/{}", seg(&name));
        body.push_str("<section class=\"panel\" aria-label=\"Actions\"><div class=\"actions\">");
        for (action, label) in [
            ("pause", "Pause"),
            ("resume", "Resume"),
            ("restart", "Restart"),
            ("stop", "Stop"),
        ] {
            body.push_str(&html::action_button(
                &format!("{api}/{action}"),
                "POST",
                "{}",
                label,
            ));
        }
        body.push_str(
            "</div><p class=\"form-error\" data-error-for=\"_form\" role=\"alert\"></p>\
             <p class=\"muted\">Restart restarts the connector and all its tasks; Stop \
             shuts it down and releases its tasks (its configuration stays).</p></section>",
        );
    }

    body.push_str(
        "<h2>Tasks</h2><table id=\"tasks\"><thead><tr><th scope=\"col\" class=\"num\">Task</th>\
         <th scope=\"col\">State</th><th scope=\"col\">Worker</th><th scope=\"col\">Trace</th>\
         </tr></thead><tbody>",
    );
    for task in &tasks {
        let id = task.get("id").and_then(Value::as_i64).unwrap_or(-1);
        let _ = write!(
            body,
            "<tr data-task=\"{id}\"><td class=\"num\">{id}</td><td>{}</td><td class=\"mono\">{}</td><td>{}</td></tr>",
            state_badge(str_at(task, &["state"]).unwrap_or("UNKNOWN")),
            esc(str_at(task, &["worker_id"]).unwrap_or("—")),
            trace_html("trace", str_at(task, &["trace"])),
        );
    }
    body.push_str("</tbody></table>");
    if tasks.is_empty() {
        body.push_str("<p class=\"muted\">No tasks.</p>");
    }

    body.push_str(
        "<h2>Configuration</h2><table id=\"config\"><thead><tr><th scope=\"col\">Key</th>\
         <th scope=\"col\">Value</th></tr></thead><tbody>",
    );
    let mut config: Vec<(&String, &Value)> = info
        .get("config")
        .and_then(Value::as_object)
        .map(|config| config.iter().collect())
        .unwrap_or_default();
    config.sort_by(|a, b| a.0.cmp(b.0));
    for (key, value) in config {
        let value = if is_secret(key) {
            "<span class=\"muted\">(hidden)</span>".to_string()
        } else {
            format!(
                "<pre>{}</pre>",
                esc(value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_string)
                    .as_str())
            )
        };
        let _ = write!(
            body,
            "<tr><td class=\"mono\">{}</td><td>{value}</td></tr>",
            esc(key)
        );
    }
    body.push_str("</tbody></table>");

    body.push_str("<h2>Offsets</h2>");
    match offsets {
        Ok(offsets) => {
            let text = serde_json::to_string_pretty(&offsets).unwrap_or_default();
            let _ = write!(
                body,
                "<pre class=\"mono\" id=\"offsets\">{}</pre>",
                esc(&text)
            );
        }
        Err(error) => {
            let _ = write!(
                body,
                "<p class=\"error\" id=\"offsets\">{}</p>",
                esc(&error.message)
            );
        }
    }

    if !console.config.read_only {
        body.push_str("<h2>Delete</h2>");
        body.push_str(&html::form_start(
            &format!("/api/connectors/{}/delete", seg(&name)),
            "POST",
            OnSuccess::Redirect,
            "Delete the connector",
        ));
        body.push_str(&html::field(
            "confirm",
            "Type the connector's name to confirm",
            &html::text_input("confirm", "", "autocomplete=\"off\""),
            "Its configuration is removed and its tasks stop; the topics and the offsets \
             it wrote stay.",
        ));
        body.push_str(&html::form_end("Delete"));
    }
    html::page(&console, Nav::Connectors, &name, &body)
}

// -- creating: the JSON, its validation ------------------------------------------------------

/// A connector as the create form describes it.
#[derive(Debug, PartialEq)]
struct NewConnector {
    name: Option<String>,
    /// Every value a string (Connect's configs are), `name` included when known.
    config: Map<String, Value>,
    /// Connect's `initial_state` (RUNNING, PAUSED, STOPPED), when given.
    initial_state: Option<String>,
}

impl NewConnector {
    fn class(&self) -> Option<&str> {
        self.config
            .get("connector.class")
            .and_then(Value::as_str)
            .filter(|class| !class.trim().is_empty())
    }
}

/// The form's JSON: `{"name", "config": {...}}` (as Connect's POST /connectors takes it,
/// or as GET /connectors/{name} answers: its `tasks` and `type` are ignored), or a flat
/// configuration with `name` inside. Numbers and booleans become strings, nulls are left
/// out; anything else is an error saying where.
fn normalise(text: &str) -> Result<NewConnector, String> {
    if text.trim().is_empty() {
        return Err(format!(
            "paste the connector's configuration as JSON, e.g. {EXAMPLE}"
        ));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| malformed_json(&e))?;
    let Value::Object(object) = value else {
        return Err(
            "the configuration must be a JSON object: {\"name\": ..., \"config\": {...}} or a \
             flat configuration with \"name\" inside"
                .to_string(),
        );
    };
    let name_of = |value: Option<&Value>, at: &str| -> Result<Option<String>, String> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(name)) if name.trim().is_empty() => {
                Err(format!("{at} is empty: a connector needs a name"))
            }
            Some(Value::String(name)) => Ok(Some(name.trim().to_string())),
            Some(_) => Err(format!("{at} must be a string")),
        }
    };
    let (name, raw, initial_state) = match object.get("config") {
        Some(Value::Object(config)) => {
            for key in object.keys() {
                if !["name", "config", "initial_state", "tasks", "type"].contains(&key.as_str()) {
                    return Err(format!(
                        "unexpected key \"{key}\" beside \"name\" and \"config\" (a flat \
                         configuration has no \"config\" object)"
                    ));
                }
            }
            let outer = name_of(object.get("name"), "\"name\"")?;
            let inner = name_of(config.get("name"), "config.name")?;
            if let (Some(outer), Some(inner)) = (&outer, &inner)
                && outer != inner
            {
                return Err(format!(
                    "\"name\" ({outer}) and config.name ({inner}) differ"
                ));
            }
            let initial_state = match object.get("initial_state") {
                None | Some(Value::Null) => None,
                Some(Value::String(state))
                    if ["RUNNING", "PAUSED", "STOPPED"].contains(&state.as_str()) =>
                {
                    Some(state.clone())
                }
                Some(other) => {
                    return Err(format!(
                        "initial_state {other} is not RUNNING, PAUSED or STOPPED"
                    ));
                }
            };
            (outer.or(inner), config.clone(), initial_state)
        }
        Some(_) => return Err("\"config\" must be a JSON object of strings".to_string()),
        None => (name_of(object.get("name"), "\"name\"")?, object, None),
    };
    let mut config = Map::new();
    for (key, value) in raw {
        let text = match value {
            Value::Null => continue,
            Value::String(text) => text,
            Value::Number(number) => number.to_string(),
            Value::Bool(flag) => flag.to_string(),
            Value::Array(_) | Value::Object(_) => {
                return Err(format!(
                    "the value of \"{key}\" must be a string, a number or a boolean (Connect \
                     configurations are strings; lists are comma-separated)"
                ));
            }
        };
        config.insert(key, Value::String(text));
    }
    if let Some(name) = &name {
        config.insert("name".to_string(), Value::String(name.clone()));
    }
    Ok(NewConnector {
        name,
        config,
        initial_state,
    })
}

/// The keys `config/validate` found errors in, each with its errors, in Connect's order.
fn validation_errors(answer: &Value) -> Vec<(String, Vec<String>)> {
    answer
        .get("configs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|config| {
            let value = config.get("value")?;
            let errors: Vec<String> = value
                .get("errors")
                .and_then(Value::as_array)?
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            if errors.is_empty() {
                return None;
            }
            let key = str_at(value, &["name"])
                .or_else(|| str_at(config, &["definition", "name"]))
                .unwrap_or("?");
            Some((key.to_string(), errors))
        })
        .collect()
}

/// Connect's verdict: (the plugin's class, error_count, the failing keys).
struct Validation {
    class: String,
    error_count: u64,
    errors: Vec<(String, Vec<String>)>,
}

async fn run_validation(console: &Console, connector: &NewConnector) -> ApiResult<Validation> {
    let class = connector.class().ok_or_else(|| {
        ApiError::field(
            "config",
            "the configuration has no \"connector.class\" (see the plugins below, e.g. \
             org.apache.kafka.connect.file.FileStreamSourceConnector)",
        )
    })?;
    let path = format!("/connector-plugins/{}/config/validate", seg(class));
    let answer = connect(
        console,
        Method::PUT,
        &path,
        Some(&Value::Object(connector.config.clone())),
    )
    .await
    .map_err(|error| error.on("config"))?;
    let errors = validation_errors(&answer);
    let error_count = answer
        .get("error_count")
        .and_then(Value::as_u64)
        .unwrap_or(errors.len() as u64);
    Ok(Validation {
        class: str_at(&answer, &["name"]).unwrap_or(class).to_string(),
        error_count,
        errors,
    })
}

fn validation_html(validation: &Validation) -> String {
    let mut out = format!(
        "<p data-error-count=\"{}\">{} <code>{}</code></p>",
        validation.error_count,
        if validation.error_count == 0 {
            html::badge("valid", "ok")
        } else {
            html::badge(&count(validation.error_count, "error"), "err")
        },
        esc(&validation.class)
    );
    if !validation.errors.is_empty() {
        out.push_str("<ul class=\"validate-errors\">");
        for (key, errors) in &validation.errors {
            let _ = write!(
                out,
                "<li data-config=\"{0}\">{0}: {1}</li>",
                esc(key),
                esc(&errors.join("; "))
            );
        }
        out.push_str("</ul>");
    }
    out
}

fn errors_text(errors: &[(String, Vec<String>)]) -> String {
    errors
        .iter()
        .map(|(key, errors)| format!("{key}: {}", errors.join("; ")))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// POST /api/connectors/validate: Connect's `config/validate` of the form's JSON, as a
/// list of the failing keys for `#validate-result`.
async fn validate(State(console): State<Arc<Console>>, body: Body) -> ApiResult {
    let body = json_body(body)?;
    let connector =
        normalise(&text_of(&body, "config")).map_err(|m| ApiError::field("config", m))?;
    let validation = run_validation(&console, &connector).await?;
    let errors: Map<String, Value> = validation
        .errors
        .iter()
        .map(|(key, errors)| (key.clone(), json!(errors)))
        .collect();
    Ok(Json(json!({
        "class": validation.class,
        "error_count": validation.error_count,
        "errors": errors,
        "html": validation_html(&validation),
        "message": if validation.error_count == 0 {
            "Valid: Kafka Connect found no error.".to_string()
        } else {
            format!("Kafka Connect found {}.", count(validation.error_count, "error"))
        },
    })))
}

/// POST /api/connectors: validates, then creates (nothing is created while a key fails).
async fn create(State(console): State<Arc<Console>>, body: Body) -> ApiResult {
    let body = json_body(body)?;
    let connector =
        normalise(&text_of(&body, "config")).map_err(|m| ApiError::field("config", m))?;
    let Some(name) = connector.name.clone() else {
        return Err(ApiError::field(
            "config",
            "the connector needs a name: {\"name\": ..., \"config\": {...}}, or \"name\" in \
             a flat configuration",
        ));
    };
    let validation = run_validation(&console, &connector).await?;
    if validation.error_count > 0 || !validation.errors.is_empty() {
        return Err(ApiError::field(
            "config",
            format!(
                "Kafka Connect's validation found {}, nothing was created: {}",
                count(
                    validation.error_count.max(validation.errors.len() as u64),
                    "error"
                ),
                errors_text(&validation.errors)
            ),
        ));
    }
    let mut request = json!({"name": name, "config": connector.config});
    if let Some(state) = &connector.initial_state {
        request["initial_state"] = json!(state);
    }
    connect(&console, Method::POST, "/connectors", Some(&request))
        .await
        .map_err(|error| error.on("config"))?;
    Ok(Json(json!({
        "message": format!("Created the connector {name}."),
        "redirect": format!("/connectors/{}", seg(&name)),
    })))
}

// -- actions ---------------------------------------------------------------------------------

/// POST /api/connectors/{name}/{pause|resume|restart|stop|delete}.
async fn act(
    State(console): State<Arc<Console>>,
    Path((name, action)): Path<(String, String)>,
    body: Body,
) -> ApiResult {
    let base = format!("/connectors/{}", seg(&name));
    let (method, path, target, done) = match action.as_str() {
        "pause" => (Method::PUT, format!("{base}/pause"), "PAUSED", "Paused"),
        "resume" => (Method::PUT, format!("{base}/resume"), "RUNNING", "Resumed"),
        "stop" => (Method::PUT, format!("{base}/stop"), "STOPPED", "Stopped"),
        "restart" => (
            Method::POST,
            format!("{base}/restart?includeTasks=true&onlyFailed=false"),
            "",
            "Restarted",
        ),
        "delete" => {
            let body = json_body(body)?;
            if text_of(&body, "confirm").trim() != name {
                return Err(ApiError::field(
                    "confirm",
                    format!("type the connector's name, {name}, to confirm: nothing was deleted"),
                ));
            }
            connect(&console, Method::DELETE, &base, None).await?;
            return Ok(Json(json!({
                "message": format!("Deleted the connector {name}."),
                "redirect": "/connectors",
            })));
        }
        _ => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("no such action '{action}': pause, resume, restart, stop or delete"),
            ));
        }
    };
    connect(&console, method, &path, None).await?;
    settle(&console, &base, target).await;
    Ok(Json(
        json!({"message": format!("{done} the connector {name}.")}),
    ))
}

/// Whether a status shows the change done: the connector in `target` and no task on the
/// way (a failed task is done too); for a restart (`""`), nothing RESTARTING or
/// UNASSIGNED.
fn settled(status: &Value, target: &str) -> bool {
    let connector = str_at(status, &["connector", "state"]).unwrap_or("");
    let tasks: Vec<&str> = status
        .get("tasks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|task| str_at(task, &["state"]))
        .collect();
    if target.is_empty() {
        return ![connector]
            .iter()
            .chain(&tasks)
            .any(|s| *s == "RESTARTING" || *s == "UNASSIGNED");
    }
    connector == target && tasks.iter().all(|s| *s == target || *s == "FAILED")
}

/// Connect applies a state change asynchronously: wait (up to 3 s) until the status shows
/// it, so the page the browser reloads shows the new state.
async fn settle(console: &Console, base: &str, target: &str) {
    let path = format!("{base}/status");
    for _ in 0..30 {
        match connect(console, Method::GET, &path, None).await {
            Ok(status) if settled(&status, target) => return,
            Ok(_) => {}
            Err(_) => return,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_and_flat_configs_normalise_alike() {
        let nested = normalise(
            r#"{"name": "lines", "config": {"connector.class": "FileStreamSource",
                "tasks.max": 1, "file": "/tmp/x.txt", "topic": "t", "batch.size": null,
                "errors.log.enable": true}}"#,
        )
        .unwrap();
        let flat = normalise(
            r#"{"name": "lines", "connector.class": "FileStreamSource", "tasks.max": "1",
                "file": "/tmp/x.txt", "topic": "t", "errors.log.enable": "true"}"#,
        )
        .unwrap();
        assert_eq!(nested, flat);
        assert_eq!(nested.name.as_deref(), Some("lines"));
        assert_eq!(nested.class(), Some("FileStreamSource"));
        assert_eq!(nested.config["tasks.max"], json!("1"));
        assert_eq!(nested.config["name"], json!("lines"));
        assert!(!nested.config.contains_key("batch.size"));
        // GET /connectors/{name}'s answer pasted back works too.
        let info = normalise(
            r#"{"name": "a", "config": {"connector.class": "X", "name": "a"}, "tasks": [], "type": "source"}"#,
        )
        .unwrap();
        assert_eq!(info.name.as_deref(), Some("a"));
        let paused =
            normalise(r#"{"name": "a", "config": {}, "initial_state": "PAUSED"}"#).unwrap();
        assert_eq!(paused.initial_state.as_deref(), Some("PAUSED"));
        // No name: validation still runs (Connect reports it); creation refuses.
        assert_eq!(normalise(r#"{"connector.class": "X"}"#).unwrap().name, None);
    }

    #[test]
    fn bad_configs_say_what_is_wrong() {
        let error = |text: &str| normalise(text).unwrap_err();
        assert_eq!(
            error("{\"name\": \"a\",\n \"config\": {\"file\" \"x\"}}"),
            "the JSON is malformed at line 2 column 20: expected `:`"
        );
        assert!(error("").starts_with("paste the connector's configuration"));
        assert!(error("[1]").starts_with("the configuration must be a JSON object"));
        assert_eq!(
            error(r#"{"name": "a", "config": "x"}"#),
            "\"config\" must be a JSON object of strings"
        );
        assert!(
            error(r#"{"name": "a", "config": {}, "extra": 1}"#)
                .contains("unexpected key \"extra\"")
        );
        assert_eq!(
            error(r#"{"name": "a", "config": {"name": "b"}}"#),
            "\"name\" (a) and config.name (b) differ"
        );
        assert!(error(r#"{"name": "a", "topics": ["x"]}"#).contains("the value of \"topics\""));
        assert_eq!(error(r#"{"name": 5}"#), "\"name\" must be a string");
        assert!(error(r#"{"name": " "}"#).contains("needs a name"));
        assert!(
            error(r#"{"name": "a", "config": {}, "initial_state": "GO"}"#)
                .contains("initial_state")
        );
    }

    #[test]
    fn validation_lists_each_failing_key() {
        let answer = json!({
            "name": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "error_count": 2,
            "configs": [
                {"definition": {"name": "name"}, "value": {"name": "name", "value": "a", "errors": []}},
                {"definition": {"name": "topic"}, "value": {"name": "topic", "value": null,
                    "errors": ["Missing required configuration \"topic\" which has no default value."]}},
                {"definition": {"name": "tasks.max"}, "value": {"name": "tasks.max", "errors": ["<bad>", "too small"]}},
            ],
        });
        let errors = validation_errors(&answer);
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].0, "topic");
        let html = validation_html(&Validation {
            class: "C".to_string(),
            error_count: 2,
            errors,
        });
        assert!(
            html.contains(
                "<li data-config=\"topic\">topic: Missing required configuration &quot;topic&quot;"
            ),
            "{html}"
        );
        assert!(
            html.contains("<li data-config=\"tasks.max\">tasks.max: &lt;bad&gt;; too small</li>"),
            "{html}"
        );
        assert!(html.contains("data-error-count=\"2\""));
    }

    #[test]
    fn connect_errors_keep_its_code_and_message() {
        let error = super::super::schemas::service_error(
            Service::Connect,
            409,
            br#"{"error_code":409,"message":"Connector lines already exists"}"#,
        )
        .on("config");
        assert_eq!(error.status, StatusCode::CONFLICT);
        assert_eq!(
            error.message,
            "Kafka Connect error 409: Connector lines already exists"
        );
        assert_eq!(error.field.as_deref(), Some("config"));
        assert_eq!(error.code.as_deref(), Some("409"));
    }

    #[test]
    fn the_list_reads_expanded_and_plain_answers() {
        let answer = json!({
            "b": {"status": {"name": "b", "connector": {"state": "RUNNING", "worker_id": "w:8083"},
                             "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w:8083"},
                                       {"id": 1, "state": "FAILED", "worker_id": "w:8083", "trace": "boom"}],
                             "type": "source"},
                  "info": {"name": "b", "config": {"connector.class": "C"}, "tasks": [], "type": "source"}},
            "a": {"status": {"connector": {"state": "PAUSED", "worker_id": "w"}, "tasks": []}},
        });
        let rows = rows_of(&answer);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[0].name.as_str(),
                rows[0].state.as_str(),
                rows[0].class.as_str()
            ),
            ("a", "PAUSED", "—")
        );
        assert_eq!(
            rows[1].tasks,
            vec![(0, "RUNNING".to_string()), (1, "FAILED".to_string())]
        );
        assert_eq!(
            (rows[1].kind.as_str(), rows[1].worker.as_str()),
            ("source", "w:8083")
        );
        assert_eq!(rows_of(&json!(["z", "y"]))[0].name, "y");
    }

    #[test]
    fn states_and_secrets() {
        assert!(state_badge("RUNNING").contains("badge ok"));
        assert!(state_badge("FAILED").contains("badge err"));
        assert!(state_badge("PAUSED").contains("badge warn"));
        assert!(state_badge("STOPPED").contains("badge muted"));
        assert!(is_secret("connection.password"));
        assert!(is_secret("sasl.jaas.config"));
        assert!(!is_secret("key.converter"));
        assert!(!is_secret("file"));
        let status = |c: &str, t: &[&str]| json!({"connector": {"state": c}, "tasks": t.iter().map(|s| json!({"state": s})).collect::<Vec<_>>()});
        assert!(settled(&status("PAUSED", &["PAUSED"]), "PAUSED"));
        assert!(!settled(&status("PAUSED", &["RUNNING"]), "PAUSED"));
        assert!(settled(&status("STOPPED", &[]), "STOPPED"));
        assert!(settled(&status("RUNNING", &["RUNNING", "FAILED"]), ""));
        assert!(!settled(&status("RUNNING", &["RESTARTING"]), ""));
    }
}
