//! The Schemas pages: the registry's subjects with their latest version, type and
//! compatibility level (search); one subject's versions side by side with a line diff
//! (JSON schemas pretty-printed first, so an Avro or JSON Schema diff is per field); its
//! compatibility level with an editor; registering a new version after the registry's
//! compatibility check; a new subject; soft deletes with confirmation.
//!
//! Everything goes through the registry's REST API (Confluent Schema Registry's) at
//! `console.config.registry_url`. This module also holds the console's REST helper
//! ([`call`]), shared with the Connectors pages: a non-2xx answer becomes an [`ApiError`]
//! that keeps the service's own `error_code` and message, so the page shows what the
//! registry (or Connect) said, next to the field it is about.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use reqwest::Method;
use serde_json::{Value, json};

use super::html::{self, Nav, OnSuccess, esc, seg};
use super::state::{ApiError, ApiResult, Console};

pub fn routes() -> Router<Arc<Console>> {
    Router::new()
        .route("/schemas", get(subjects_page))
        .route("/schemas/{subject}", get(subject_page))
        .route("/api/schemas", post(create_subject))
        .route("/api/schemas/{subject}/check", post(check))
        .route("/api/schemas/{subject}/versions", post(register))
        .route("/api/schemas/{subject}/config", put(set_level))
        .route("/api/schemas/{subject}/delete", post(delete))
}

// -- the REST helper (shared with the Connectors pages) ---------------------------------------

/// A REST service behind the console.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    /// Confluent Schema Registry's API (`--registry-url`, `sluice server --with-registry`).
    Registry,
    /// Kafka Connect's REST API (`--connect-url`, `sluice server --with-connect`).
    Connect,
}

impl Service {
    pub fn name(self) -> &'static str {
        match self {
            Service::Registry => "Schema registry",
            Service::Connect => "Kafka Connect",
        }
    }

    pub fn url(self, console: &Console) -> Option<&str> {
        match self {
            Service::Registry => console.config.registry_url.as_deref(),
            Service::Connect => console.config.connect_url.as_deref(),
        }
    }

    /// Why the page is empty and how to give the console this service.
    pub fn how_to_configure(self) -> &'static str {
        match self {
            Service::Registry => {
                "No schema registry is configured. Start the console with \
                 `sluice console --registry-url http://HOST:8081`, or run the node with \
                 `sluice server --with-registry` (its console then uses that registry)."
            }
            Service::Connect => {
                "No Kafka Connect worker is configured. Start the console with \
                 `sluice console --connect-url http://HOST:8083`, or run the node with \
                 `sluice server --with-connect` (its console then uses that worker)."
            }
        }
    }

    /// The page's content when the service is not configured.
    pub fn not_configured(self) -> String {
        let (option, server, example) = match self {
            Service::Registry => ("--registry-url", "--with-registry", "http://HOST:8081"),
            Service::Connect => ("--connect-url", "--with-connect", "http://HOST:8083"),
        };
        format!(
            "<section class=\"panel\" aria-label=\"Not configured\"><p>{}</p><ul>\
             <li>Against any cluster: <code>sluice console --bootstrap-server HOST:PORT \
             {option} {example}</code></li>\
             <li>On a Sluice node: <code>sluice server {server} --with-console</code></li>\
             </ul></section>",
            esc(match self {
                Service::Registry => "No schema registry is configured.",
                Service::Connect => "No Kafka Connect worker is configured.",
            })
        )
    }
}

/// One request to `service`: `path` (with its query) after the service's URL, `body` as
/// JSON. A 2xx answer is its JSON (`null` when empty); anything else is an [`ApiError`]
/// with the service's status (a 5xx becomes 502), `error_code` and message.
pub async fn call(
    console: &Console,
    service: Service,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> ApiResult<Value> {
    let Some(base) = service.url(console) else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            service.how_to_configure(),
        ));
    };
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let mut request = console
        .http
        .request(method, &url)
        .header(reqwest::header::ACCEPT, "application/json");
    if let Some(body) = body {
        request = request.json(body);
    }
    let unreachable = |error: &dyn std::error::Error| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            format!(
                "{} at {base} did not answer: {}",
                service.name(),
                error_chain(error)
            ),
        )
    };
    let response = request.send().await.map_err(|e| unreachable(&e))?;
    let status = response.status().as_u16();
    let bytes = response.bytes().await.map_err(|e| unreachable(&e))?;
    if !(200..300).contains(&status) {
        return Err(service_error(service, status, &bytes));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            format!(
                "{} answered HTTP {status} with something that is not JSON: {e}",
                service.name()
            ),
        )
    })
}

/// An error and its causes, `a: b: c` (reqwest's own text names only the URL).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let _ = write!(text, ": {cause}");
        source = cause.source();
    }
    text
}

/// A service's non-2xx answer as the console's error: its `{"error_code", "message"}`
/// kept visible (the code also in [`ApiError::code`]); a 4xx keeps its status, anything
/// else is a 502 (the service failed, not the request).
pub fn service_error(service: Service, status: u16, body: &[u8]) -> ApiError {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let code = parsed
        .as_ref()
        .and_then(|v| v.get("error_code"))
        .and_then(Value::as_i64);
    let message = parsed
        .as_ref()
        .and_then(|v| v.get("message"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let text = match (code, message) {
        (Some(code), Some(message)) => format!("{} error {code}: {message}", service.name()),
        (None, Some(message)) => format!("{} answered HTTP {status}: {message}", service.name()),
        _ => {
            let raw = String::from_utf8_lossy(body);
            let raw = raw.trim();
            if raw.is_empty() {
                format!("{} answered HTTP {status}", service.name())
            } else {
                let cut: String = raw.chars().take(500).collect();
                format!("{} answered HTTP {status}: {cut}", service.name())
            }
        }
    };
    let status = match StatusCode::from_u16(status) {
        Ok(status) if status.is_client_error() => status,
        _ => StatusCode::BAD_GATEWAY,
    };
    ApiError {
        status,
        message: text,
        field: None,
        code: code.map(|code| code.to_string()),
    }
}

/// A request body that is JSON, or the error saying it is not.
pub fn json_body(body: Result<Json<Value>, JsonRejection>) -> ApiResult<Value> {
    body.map(|Json(value)| value).map_err(|rejection| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("the request is not JSON: {}", rejection.body_text()),
        )
    })
}

/// A form field's value as text (`""` when absent).
pub fn text_of(body: &Value, key: &str) -> String {
    match body.get(key) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(number)) => number.to_string(),
        Some(Value::Bool(flag)) => flag.to_string(),
        _ => String::new(),
    }
}

/// `1 line`, `2 lines`.
pub fn count(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// serde_json's parse error for a person: where (line, column) and what.
pub fn malformed_json(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    let what = text.strip_suffix(&suffix).unwrap_or(&text);
    format!(
        "the JSON is malformed at line {} column {}: {what}",
        error.line(),
        error.column()
    )
}

/// A page whose data could not be read: the service's error, with its status.
pub fn failed_page(console: &Console, nav: Nav, title: &str, error: &ApiError) -> Response {
    let body = format!(
        "<p class=\"error\" role=\"alert\">{}</p>",
        esc(&error.message)
    );
    (
        error.status,
        Html(html::render_page(console, nav, title, &body)),
    )
        .into_response()
}

// -- registry specifics ----------------------------------------------------------------------

/// The compatibility levels, as the registry spells them.
const LEVELS: [&str; 7] = [
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
    "NONE",
];

/// The schema types (the registry's `schemaType`; absent means AVRO).
const TYPES: [(&str, &str); 3] = [
    ("AVRO", "Avro"),
    ("PROTOBUF", "Protobuf"),
    ("JSON", "JSON Schema"),
];

async fn registry(
    console: &Console,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> ApiResult<Value> {
    call(console, Service::Registry, method, path, body).await
}

/// Points a registry error at the form field it is about: an incompatible (409) or
/// invalid (42201) schema at `schema`, a bad level (42203) at `compatibility`, a bad
/// subject name (42208) at `subject`, a bad or unknown version at `version`.
fn on_registry_field(error: ApiError) -> ApiError {
    let field = match error.code.as_deref() {
        Some("409" | "42201") => "schema",
        Some("42203") => "compatibility",
        Some("42208") => "subject",
        Some("42202" | "40402") => "version",
        _ => return error,
    };
    error.on(field)
}

fn has_code(error: &ApiError, codes: &[&str]) -> bool {
    error
        .code
        .as_deref()
        .is_some_and(|code| codes.contains(&code))
}

/// A subject's own level: `Some` when set on the subject, `None` when it follows the
/// global one (40408; older registries answer 40401).
async fn subject_level(console: &Console, subject: &str) -> ApiResult<Option<String>> {
    match registry(
        console,
        Method::GET,
        &format!("/config/{}", seg(subject)),
        None,
    )
    .await
    {
        Ok(config) => Ok(config
            .get("compatibilityLevel")
            .or_else(|| config.get("compatibility"))
            .and_then(Value::as_str)
            .map(str::to_string)),
        Err(error) if has_code(&error, &["40408", "40401"]) => Ok(None),
        Err(error) => Err(error),
    }
}

async fn global_level(console: &Console) -> ApiResult<String> {
    let config = registry(console, Method::GET, "/config", None).await?;
    Ok(config
        .get("compatibilityLevel")
        .or_else(|| config.get("compatibility"))
        .and_then(Value::as_str)
        .unwrap_or("BACKWARD")
        .to_string())
}

fn level_html(own: &Option<String>, global: &str) -> String {
    match own {
        Some(level) => html::badge(level, "ok"),
        None => format!(
            "{} <span class=\"muted\">(global)</span>",
            html::badge(global, "muted")
        ),
    }
}

fn schema_type_of(version: &Value) -> &str {
    version
        .get("schemaType")
        .and_then(Value::as_str)
        .unwrap_or("AVRO")
}

/// What the register and check forms send, checked before the registry sees it.
#[derive(Debug, PartialEq)]
struct SchemaInput {
    schema: String,
    schema_type: String,
    references: Vec<Value>,
}

impl SchemaInput {
    fn parse(body: &Value) -> ApiResult<SchemaInput> {
        let schema_type = text_of(body, "schema_type").trim().to_ascii_uppercase();
        let schema_type = if schema_type.is_empty() {
            "AVRO".to_string()
        } else {
            schema_type
        };
        if !TYPES.iter().any(|(t, _)| *t == schema_type) {
            return Err(ApiError::field(
                "schema_type",
                format!("'{schema_type}' is not a schema type: AVRO, PROTOBUF or JSON"),
            ));
        }
        let schema = text_of(body, "schema");
        if schema.trim().is_empty() {
            return Err(ApiError::field("schema", "the schema is empty"));
        }
        // Avro and JSON Schema are JSON: say where it is broken before the registry does.
        if schema_type != "PROTOBUF"
            && let Err(error) = serde_json::from_str::<Value>(&schema)
        {
            return Err(ApiError::field("schema", malformed_json(&error)));
        }
        let references = parse_references(&text_of(body, "references"))?;
        Ok(SchemaInput {
            schema,
            schema_type,
            references,
        })
    }

    /// The registry's request body.
    fn to_registry(&self) -> Value {
        let mut body = serde_json::Map::new();
        body.insert("schema".into(), json!(self.schema));
        if self.schema_type != "AVRO" {
            body.insert("schemaType".into(), json!(self.schema_type));
        }
        if !self.references.is_empty() {
            body.insert("references".into(), Value::Array(self.references.clone()));
        }
        Value::Object(body)
    }
}

/// The optional references: a JSON array of `{"name", "subject", "version"}`.
fn parse_references(text: &str) -> ApiResult<Vec<Value>> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let shape = "references are a JSON array of {\"name\": ..., \"subject\": ..., \"version\": N}";
    let value: Value = serde_json::from_str(text)
        .map_err(|error| ApiError::field("references", malformed_json(&error)))?;
    let Value::Array(items) = value else {
        return Err(ApiError::field("references", shape));
    };
    for (i, item) in items.iter().enumerate() {
        let ok = item.get("name").is_some_and(Value::is_string)
            && item.get("subject").is_some_and(Value::is_string)
            && item.get("version").is_some_and(Value::is_i64);
        if !ok {
            return Err(ApiError::field(
                "references",
                format!("reference {}: {shape}", i + 1),
            ));
        }
    }
    Ok(items)
}

fn subject_name(body: &Value) -> ApiResult<String> {
    let subject = text_of(body, "subject").trim().to_string();
    if subject.is_empty() {
        return Err(ApiError::field(
            "subject",
            "a subject needs a name (e.g. orders-value)",
        ));
    }
    if subject.chars().any(char::is_control) {
        return Err(ApiError::field(
            "subject",
            "a subject's name cannot hold control characters",
        ));
    }
    Ok(subject)
}

fn versions_of(value: &Value) -> Vec<i64> {
    let mut versions: Vec<i64> = value
        .as_array()
        .map(|items| items.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    versions.sort_unstable();
    versions
}

// -- pages -----------------------------------------------------------------------------------

/// One row of the subjects table.
struct SubjectRow {
    latest: Option<Value>,
    level: ApiResult<Option<String>>,
}

async fn subjects_page(State(console): State<Arc<Console>>) -> Response {
    const TITLE: &str = "Schemas";
    if console.config.registry_url.is_none() {
        return html::page(
            &console,
            Nav::Schemas,
            TITLE,
            &Service::Registry.not_configured(),
        );
    }
    let subjects: Vec<String> = match registry(&console, Method::GET, "/subjects", None).await {
        Ok(value) => value
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        Err(error) => return failed_page(&console, Nav::Schemas, TITLE, &error),
    };
    let (latest, global) = tokio::join!(
        registry(&console, Method::GET, "/schemas?latestOnly=true", None),
        global_level(&console)
    );
    // Every subject's latest version in one request; a registry without `latestOnly`
    // is asked per subject.
    let mut latest_by_subject: HashMap<String, Value> = HashMap::new();
    let per_subject_latest = match latest {
        Ok(Value::Array(items)) => {
            for item in items {
                if let Some(subject) = item.get("subject").and_then(Value::as_str) {
                    let newer = latest_by_subject.get(subject).is_none_or(|known| {
                        known.get("version").and_then(Value::as_i64)
                            < item.get("version").and_then(Value::as_i64)
                    });
                    if newer {
                        latest_by_subject.insert(subject.to_string(), item);
                    }
                }
            }
            false
        }
        _ => true,
    };
    let rows = subject_rows(&console, &subjects, per_subject_latest).await;

    let mut body = String::with_capacity(256 * subjects.len() + 4096);
    let global_text = match &global {
        Ok(level) => html::badge(level, "ok"),
        Err(error) => format!("<span class=\"error\">{}</span>", esc(&error.message)),
    };
    let global = global.unwrap_or_else(|_| "BACKWARD".to_string());
    let _ = write!(
        body,
        "<p>{} subjects. Global compatibility level: {global_text}.</p>",
        subjects.len()
    );
    body.push_str(&html::table_filter("subjects", "Search subjects"));
    body.push_str(
        "<table id=\"subjects\"><thead><tr><th scope=\"col\">Subject</th>\
         <th scope=\"col\" class=\"num\">Latest version</th>\
         <th scope=\"col\" class=\"num\">Schema id</th><th scope=\"col\">Type</th>\
         <th scope=\"col\">Compatibility</th></tr></thead><tbody>",
    );
    for subject in &subjects {
        let row = rows.get(subject);
        let latest = latest_by_subject
            .get(subject)
            .or_else(|| row.and_then(|row| row.latest.as_ref()));
        let number = |key: &str| {
            latest
                .and_then(|v| v.get(key))
                .and_then(Value::as_i64)
                .map_or_else(|| "—".to_string(), |n| n.to_string())
        };
        let schema_type = latest.map_or("—", schema_type_of);
        let level = match row.map(|row| &row.level) {
            Some(Ok(own)) => level_html(own, &global),
            Some(Err(error)) => format!("<span class=\"error\">{}</span>", esc(&error.message)),
            None => "—".to_string(),
        };
        let _ = write!(
            body,
            "<tr><td><a href=\"/schemas/{}\">{}</a></td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td>{}</td><td>{level}</td></tr>",
            seg(subject),
            esc(subject),
            number("version"),
            number("id"),
            esc(schema_type),
        );
    }
    body.push_str("</tbody></table>");
    if subjects.is_empty() {
        body.push_str("<p class=\"muted\">No subjects yet.</p>");
    }
    if !console.config.read_only {
        body.push_str("<h2>New subject</h2>");
        body.push_str(&html::form_start(
            "/api/schemas",
            "POST",
            OnSuccess::Redirect,
            "Register a new subject",
        ));
        body.push_str(&html::field(
            "subject",
            "Subject",
            &html::text_input("subject", "", "required aria-describedby=\"h-subject\""),
            "TopicNameStrategy names subjects TOPIC-value and TOPIC-key.",
        ));
        body.push_str(&schema_fields("AVRO", ""));
        body.push_str(&html::form_end("Register"));
    }
    html::page(&console, Nav::Schemas, TITLE, &body)
}

/// Each subject's own level (and, when asked, its latest version), 16 requests at a time.
async fn subject_rows(
    console: &Arc<Console>,
    subjects: &[String],
    with_latest: bool,
) -> HashMap<String, SubjectRow> {
    let mut rows = HashMap::with_capacity(subjects.len());
    for chunk in subjects.chunks(16) {
        let mut tasks = tokio::task::JoinSet::new();
        for subject in chunk {
            let console = console.clone();
            let subject = subject.clone();
            tasks.spawn(async move {
                let level = subject_level(&console, &subject).await;
                let latest = if with_latest {
                    let path = format!("/subjects/{}/versions/latest", seg(&subject));
                    registry(&console, Method::GET, &path, None).await.ok()
                } else {
                    None
                };
                (subject, SubjectRow { latest, level })
            });
        }
        while let Some(joined) = tasks.join_next().await {
            if let Ok((subject, row)) = joined {
                rows.insert(subject, row);
            }
        }
    }
    rows
}

/// The schema type, schema and references fields of the register forms.
fn schema_fields(schema_type: &str, schema: &str) -> String {
    let mut out = html::field(
        "schema_type",
        "Schema type",
        &html::select("schema_type", &TYPES, schema_type),
        "",
    );
    out.push_str(&html::field(
        "schema",
        "Schema",
        &html::textarea(
            "schema",
            schema,
            14,
            "required spellcheck=\"false\" aria-describedby=\"h-schema\"",
        ),
        "Avro or JSON Schema as JSON, Protobuf as a .proto file.",
    ));
    out.push_str(&html::field(
        "references",
        "References (optional)",
        &html::textarea(
            "references",
            "",
            3,
            "spellcheck=\"false\" aria-describedby=\"h-references\" \
             placeholder=\"[{&quot;name&quot;: &quot;common.avsc&quot;, &quot;subject&quot;: \
             &quot;common-value&quot;, &quot;version&quot;: 1}]\"",
        ),
        "A JSON array of {\"name\", \"subject\", \"version\"}: the schemas this one imports.",
    ));
    out
}

#[derive(serde::Deserialize)]
struct CompareQuery {
    left: Option<String>,
    right: Option<String>,
}

async fn subject_page(
    State(console): State<Arc<Console>>,
    Path(subject): Path<String>,
    Query(query): Query<CompareQuery>,
) -> Response {
    if console.config.registry_url.is_none() {
        return html::page(
            &console,
            Nav::Schemas,
            &subject,
            &Service::Registry.not_configured(),
        );
    }
    let base = format!("/subjects/{}", seg(&subject));
    let versions = match registry(&console, Method::GET, &format!("{base}/versions"), None).await {
        Ok(value) => versions_of(&value),
        Err(error) => return failed_page(&console, Nav::Schemas, &subject, &error),
    };
    let Some(&latest) = versions.last() else {
        let error = ApiError::new(StatusCode::NOT_FOUND, "the subject has no versions");
        return failed_page(&console, Nav::Schemas, &subject, &error);
    };
    let previous = versions
        .len()
        .checked_sub(2)
        .map_or(latest, |i| versions[i]);
    let mut notes = String::new();
    let mut pick = |asked: &Option<String>, default: i64, side: &str| match asked.as_deref() {
        None | Some("") => default,
        Some(text) => match text.trim().parse::<i64>() {
            Ok(version) if versions.contains(&version) => version,
            _ => {
                let _ = write!(
                    notes,
                    "<p class=\"error\" role=\"alert\">There is no version '{}' ({side}); \
                     showing version {default}.</p>",
                    esc(text)
                );
                default
            }
        },
    };
    let left = pick(&query.left, previous, "left");
    let right = pick(&query.right, latest, "right");
    let (left_path, right_path) = (
        format!("{base}/versions/{left}"),
        format!("{base}/versions/{right}"),
    );
    let (left_version, right_version, own_level, global) = tokio::join!(
        registry(&console, Method::GET, &left_path, None),
        registry(&console, Method::GET, &right_path, None),
        subject_level(&console, &subject),
        global_level(&console),
    );
    let (left_version, right_version) = match (left_version, right_version) {
        (Ok(l), Ok(r)) => (l, r),
        (Err(error), _) | (_, Err(error)) => {
            return failed_page(&console, Nav::Schemas, &subject, &error);
        }
    };
    let global_text = match &global {
        Ok(level) => level.clone(),
        Err(error) => format!("unknown ({})", error.message),
    };
    let global = global.unwrap_or_else(|_| "BACKWARD".to_string());
    // The register form starts from the latest version, whichever pair is compared.
    let latest_value = if right == latest {
        right_version.clone()
    } else {
        registry(
            &console,
            Method::GET,
            &format!("{base}/versions/latest"),
            None,
        )
        .await
        .unwrap_or_else(|_| right_version.clone())
    };
    let latest_type = schema_type_of(&latest_value).to_string();

    let mut body = String::with_capacity(16 * 1024);
    body.push_str(&notes);
    let level_text = match &own_level {
        Ok(own) => level_html(own, &global),
        Err(error) => format!("<span class=\"error\">{}</span>", esc(&error.message)),
    };
    let _ = write!(
        body,
        "<div class=\"cards\">\
         <div class=\"card\"><div class=\"value\">{latest}</div><div class=\"label\">latest version</div></div>\
         <div class=\"card\"><div class=\"value\">{}</div><div class=\"label\">type</div></div>\
         <div class=\"card\"><div class=\"value\">{level_text}</div><div class=\"label\">compatibility</div></div>\
         </div><p><a href=\"/schemas\">All subjects</a></p>",
        esc(&latest_type),
    );

    // Versions.
    body.push_str(
        "<h2>Versions</h2><table id=\"versions\"><thead><tr><th scope=\"col\" class=\"num\">Version</th>\
         <th scope=\"col\">Compare</th></tr></thead><tbody>",
    );
    for (i, version) in versions.iter().enumerate().rev() {
        let mut links = format!(
            "<a href=\"/schemas/{0}?left={1}&amp;right={1}\">view</a>",
            seg(&subject),
            version
        );
        if i > 0 {
            let _ = write!(
                links,
                " · <a href=\"/schemas/{}?left={}&amp;right={version}\">diff with version {}</a>",
                seg(&subject),
                versions[i - 1],
                versions[i - 1]
            );
        }
        let _ = write!(
            body,
            "<tr><td class=\"num\">{version}</td><td>{links}</td></tr>"
        );
    }
    body.push_str("</tbody></table>");

    // The two versions side by side.
    let _ = write!(
        body,
        "<h2>Version {left} and version {right}</h2>\
         <form method=\"get\" action=\"/schemas/{}\" class=\"row\" aria-label=\"Choose the versions to compare\">",
        seg(&subject)
    );
    let options: Vec<(String, String)> = versions
        .iter()
        .map(|v| (v.to_string(), format!("version {v}")))
        .collect();
    let options: Vec<(&str, &str)> = options
        .iter()
        .map(|(v, l)| (v.as_str(), l.as_str()))
        .collect();
    body.push_str(&html::field(
        "left",
        "Left",
        &html::select("left", &options, &left.to_string()),
        "",
    ));
    body.push_str(&html::field(
        "right",
        "Right",
        &html::select("right", &options, &right.to_string()),
        "",
    ));
    body.push_str("<div class=\"actions\"><button type=\"submit\">Compare</button></div></form>");
    let title = |number: i64, version: &Value| {
        format!(
            "Version {number} (id {}, {})",
            version
                .get("id")
                .and_then(Value::as_i64)
                .map_or_else(|| "?".to_string(), |id| id.to_string()),
            schema_type_of(version)
        )
    };
    let text = |version: &Value| {
        version
            .get("schema")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    body.push_str(&diff_html(
        &title(left, &left_version),
        &title(right, &right_version),
        &text(&left_version),
        &text(&right_version),
    ));
    for (number, version) in [(left, &left_version), (right, &right_version)] {
        if let Some(references) = version.get("references").filter(|r| r.is_array()) {
            let _ = write!(
                body,
                "<p>Version {number} references: <code>{}</code></p>",
                esc(&references.to_string())
            );
        }
    }

    // Compatibility level.
    let api = format!("/api/schemas/{}", seg(&subject));
    body.push_str("<h2>Compatibility level</h2>");
    let own = own_level.as_ref().ok().cloned().flatten();
    let _ = write!(
        body,
        "<p>{}: {}. The global level is {}.</p>",
        esc(&subject),
        match &own {
            Some(level) => format!("{} (set on this subject)", html::badge(level, "ok")),
            None => format!(
                "{} (the global level, none set on this subject)",
                html::badge(&global, "muted")
            ),
        },
        esc(&global_text)
    );
    if !console.config.read_only {
        body.push_str(&html::form_start(
            &format!("{api}/config"),
            "PUT",
            OnSuccess::Reload,
            "Change the compatibility level",
        ));
        let global_label = format!("the global level ({global})");
        let mut options: Vec<(&str, &str)> = vec![("", global_label.as_str())];
        options.extend(LEVELS.iter().map(|level| (*level, *level)));
        body.push_str(&html::field(
            "compatibility",
            "Compatibility level",
            &html::select("compatibility", &options, own.as_deref().unwrap_or("")),
            "BACKWARD: new readers read old data; FORWARD: old readers read new data; FULL: both; \
             _TRANSITIVE: against every version, not only the latest.",
        ));
        body.push_str(&html::form_end("Save level"));
    }

    // Register a new version (or, read-only, only check one).
    let latest_schema = text(&latest_value);
    body.push_str(if console.config.read_only {
        "<h2>Check a schema's compatibility</h2>"
    } else {
        "<h2>Register a new version</h2>"
    });
    // Read-only, the form's one action is the check (a dry run the guard lets through).
    body.push_str(&if console.config.read_only {
        html::form_start(
            &format!("{api}/check"),
            "POST",
            OnSuccess::Result("compat-result"),
            "Check a schema's compatibility",
        )
    } else {
        html::form_start(
            &format!("{api}/versions"),
            "POST",
            OnSuccess::Redirect,
            "Register a new version",
        )
    });
    body.push_str(&schema_fields(&latest_type, &pretty(&latest_schema)));
    let _ = write!(
        body,
        "<div id=\"compat-result\" aria-live=\"polite\"></div>\
         <div class=\"actions\"><button type=\"submit\" class=\"secondary\" \
         data-api=\"{}/check\" data-success=\"result:compat-result\">Check compatibility</button>{}</div>\
         <p class=\"form-error\" data-error-for=\"_form\" role=\"alert\"></p>\
         <p class=\"form-status\" role=\"status\"></p></form>",
        esc(&api),
        if console.config.read_only {
            ""
        } else {
            "<button type=\"submit\">Register</button>"
        }
    );

    // Soft delete.
    if !console.config.read_only {
        body.push_str("<h2>Delete</h2>");
        body.push_str(&html::form_start(
            &format!("{api}/delete"),
            "POST",
            OnSuccess::Redirect,
            "Delete a version or the subject",
        ));
        let mut options: Vec<(String, String)> = versions
            .iter()
            .rev()
            .map(|v| (v.to_string(), format!("version {v}")))
            .collect();
        options.push((
            "all".to_string(),
            "the whole subject (every version)".to_string(),
        ));
        let options: Vec<(&str, &str)> = options
            .iter()
            .map(|(v, l)| (v.as_str(), l.as_str()))
            .collect();
        body.push_str(&html::field(
            "version",
            "What to delete",
            &html::select("version", &options, &latest.to_string()),
            "A soft delete: the registry keeps the schema (ids still resolve) and can \
             delete it permanently later.",
        ));
        body.push_str(&html::field(
            "confirm",
            "Type the subject's name to confirm",
            &html::text_input("confirm", "", "autocomplete=\"off\""),
            "",
        ));
        body.push_str(&html::form_end("Delete"));
    }
    html::page(&console, Nav::Schemas, &subject, &body)
}

// -- API ---------------------------------------------------------------------------------------

type Body = Result<Json<Value>, JsonRejection>;

/// POST /api/schemas/{subject}/check: the registry's verdict on the schema against the
/// latest version (verbose: with its reasons), as HTML for `#compat-result`.
async fn check(
    State(console): State<Arc<Console>>,
    Path(subject): Path<String>,
    body: Body,
) -> ApiResult {
    let input = SchemaInput::parse(&json_body(body)?)?;
    let path = format!(
        "/compatibility/subjects/{}/versions/latest?verbose=true",
        seg(&subject)
    );
    let mut first = false;
    let (is_compatible, messages) =
        match registry(&console, Method::POST, &path, Some(&input.to_registry())).await {
            Ok(answer) => (
                answer
                    .get("is_compatible")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                answer
                    .get("messages")
                    .and_then(Value::as_array)
                    .map(|items| {
                        items
                            .iter()
                            .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            // No version to be compatible with: any valid schema is accepted.
            Err(error) if has_code(&error, &["40401", "40402"]) => {
                first = true;
                (
                    true,
                    vec![
                        "The subject has no version yet: nothing to be compatible with."
                            .to_string(),
                    ],
                )
            }
            Err(error) => return Err(on_registry_field(error)),
        };
    Ok(Json(json!({
        "is_compatible": is_compatible,
        "messages": messages,
        "html": check_html(is_compatible, &messages),
        "message": if first {
            "No version yet: the registry accepts any valid schema."
        } else if is_compatible {
            "Compatible with the latest version."
        } else {
            "Not compatible: the registry would refuse it (409)."
        },
    })))
}

fn check_html(is_compatible: bool, messages: &[String]) -> String {
    let mut out = format!(
        "<p data-compatible=\"{is_compatible}\">{}</p>",
        if is_compatible {
            html::badge("compatible", "ok")
        } else {
            html::badge("incompatible", "err")
        }
    );
    if !messages.is_empty() {
        out.push_str("<ul class=\"compat-messages\">");
        for message in messages {
            let _ = write!(out, "<li class=\"mono\">{}</li>", esc(message));
        }
        out.push_str("</ul>");
    }
    out
}

/// POST /api/schemas/{subject}/versions: registers the schema (the registry checks its
/// compatibility; a 409 comes back next to the schema).
async fn register(
    State(console): State<Arc<Console>>,
    Path(subject): Path<String>,
    body: Body,
) -> ApiResult {
    let input = SchemaInput::parse(&json_body(body)?)?;
    register_version(&console, &subject, &input).await
}

async fn register_version(console: &Console, subject: &str, input: &SchemaInput) -> ApiResult {
    let path = format!("/subjects/{}/versions", seg(subject));
    let answer = registry(console, Method::POST, &path, Some(&input.to_registry()))
        .await
        .map_err(on_registry_field)?;
    let id = answer.get("id").and_then(Value::as_i64).unwrap_or(-1);
    Ok(Json(json!({
        "message": format!("Registered under {subject}: schema id {id}."),
        "id": id,
        "redirect": format!("/schemas/{}", seg(subject)),
    })))
}

/// POST /api/schemas: a new subject with its first version.
async fn create_subject(State(console): State<Arc<Console>>, body: Body) -> ApiResult {
    let body = json_body(body)?;
    let subject = subject_name(&body)?;
    let input = SchemaInput::parse(&body)?;
    let path = format!("/subjects/{}/versions", seg(&subject));
    match registry(&console, Method::GET, &path, None).await {
        Ok(_) => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!("the subject '{subject}' exists: register a new version on its page"),
            )
            .on("subject"));
        }
        Err(error) if has_code(&error, &["40401"]) => {}
        Err(error) => return Err(on_registry_field(error)),
    }
    register_version(&console, &subject, &input).await
}

/// PUT /api/schemas/{subject}/config: the subject's level (`""`: follow the global one).
async fn set_level(
    State(console): State<Arc<Console>>,
    Path(subject): Path<String>,
    body: Body,
) -> ApiResult {
    let level = text_of(&json_body(body)?, "compatibility")
        .trim()
        .to_ascii_uppercase();
    let path = format!("/config/{}", seg(&subject));
    if level.is_empty() {
        match registry(&console, Method::DELETE, &path, None).await {
            Ok(_) => {}
            // Nothing set on the subject: it follows the global level already.
            Err(error) if has_code(&error, &["40408", "40401"]) => {}
            Err(error) => return Err(on_registry_field(error).on("compatibility")),
        }
        return Ok(Json(json!({
            "message": format!("{subject} follows the global level."),
        })));
    }
    if !LEVELS.contains(&level.as_str()) {
        return Err(ApiError::field(
            "compatibility",
            format!("'{level}' is not a level: {}", LEVELS.join(", ")),
        ));
    }
    registry(
        &console,
        Method::PUT,
        &path,
        Some(&json!({"compatibility": level})),
    )
    .await
    .map_err(|error| on_registry_field(error).on("compatibility"))?;
    Ok(Json(json!({
        "message": format!("The compatibility level of {subject} is {level}."),
    })))
}

/// POST /api/schemas/{subject}/delete: a soft delete of one version or the subject,
/// confirmed by typing the subject's name.
async fn delete(
    State(console): State<Arc<Console>>,
    Path(subject): Path<String>,
    body: Body,
) -> ApiResult {
    let body = json_body(body)?;
    if text_of(&body, "confirm").trim() != subject {
        return Err(ApiError::field(
            "confirm",
            format!("type the subject's name, {subject}, to confirm: nothing was deleted"),
        ));
    }
    let version = text_of(&body, "version").trim().to_string();
    let base = format!("/subjects/{}", seg(&subject));
    if version == "all" {
        registry(&console, Method::DELETE, &base, None)
            .await
            .map_err(on_registry_field)?;
        return Ok(Json(json!({
            "message": format!("Deleted the subject {subject}."),
            "redirect": "/schemas",
        })));
    }
    let number: i64 = version.parse().map_err(|_| {
        ApiError::field(
            "version",
            format!("'{version}' is not a version number or 'all'"),
        )
    })?;
    registry(
        &console,
        Method::DELETE,
        &format!("{base}/versions/{number}"),
        None,
    )
    .await
    .map_err(on_registry_field)?;
    // The last version gone, the subject is gone too.
    let remaining = registry(&console, Method::GET, &format!("{base}/versions"), None).await;
    let redirect = match remaining {
        Ok(versions) if !versions_of(&versions).is_empty() => format!("/schemas/{}", seg(&subject)),
        _ => "/schemas".to_string(),
    };
    Ok(Json(json!({
        "message": format!("Deleted version {number} of {subject}."),
        "redirect": redirect,
    })))
}

// -- the diff ----------------------------------------------------------------------------------

/// A schema as the diff compares it: JSON (Avro, JSON Schema) pretty-printed, one field
/// per line; anything else (Protobuf) as it is.
fn pretty(schema: &str) -> String {
    match serde_json::from_str::<Value>(schema) {
        Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_else(|_| schema.to_string()),
        Err(_) => schema.to_string(),
    }
}

/// One line of a diff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Line<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

/// Above this many cells (changed lines left × right) the LCS table is not built and the
/// changed middle is shown as removed then added.
const MAX_LCS_CELLS: usize = 4_000_000;

/// A line diff by longest common subsequence (after the common prefix and suffix): the
/// fewest lines removed and added that turn `left` into `right`.
fn diff_lines<'a>(left: &[&'a str], right: &[&'a str]) -> Vec<Line<'a>> {
    let prefix = left.iter().zip(right).take_while(|(a, b)| a == b).count();
    let room = left.len().min(right.len()) - prefix;
    let suffix = left
        .iter()
        .rev()
        .zip(right.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    let a = &left[prefix..left.len() - suffix];
    let b = &right[prefix..right.len() - suffix];
    let mut out: Vec<Line<'a>> = left[..prefix].iter().map(|l| Line::Same(l)).collect();
    if a.len().saturating_mul(b.len()) > MAX_LCS_CELLS {
        out.extend(a.iter().map(|l| Line::Del(l)));
        out.extend(b.iter().map(|l| Line::Add(l)));
    } else {
        // lcs[i][j]: the LCS length of a[i..] and b[j..], row-major.
        let width = b.len() + 1;
        let mut lcs = vec![0u32; (a.len() + 1) * width];
        for i in (0..a.len()).rev() {
            for j in (0..b.len()).rev() {
                lcs[i * width + j] = if a[i] == b[j] {
                    lcs[(i + 1) * width + j + 1] + 1
                } else {
                    lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            if a[i] == b[j] {
                out.push(Line::Same(a[i]));
                i += 1;
                j += 1;
            } else if lcs[(i + 1) * width + j] >= lcs[i * width + j + 1] {
                out.push(Line::Del(a[i]));
                i += 1;
            } else {
                out.push(Line::Add(b[j]));
                j += 1;
            }
        }
        out.extend(a[i..].iter().map(|l| Line::Del(l)));
        out.extend(b[j..].iter().map(|l| Line::Add(l)));
    }
    out.extend(left[left.len() - suffix..].iter().map(|l| Line::Same(l)));
    out
}

/// The diff as rows of two columns: a common line on both sides; a run of changes with
/// its removed lines on the left beside its added lines on the right.
fn side_by_side<'a>(lines: &[Line<'a>]) -> Vec<(Option<Line<'a>>, Option<Line<'a>>)> {
    let mut rows = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        if let Line::Same(_) = lines[i] {
            rows.push((Some(lines[i]), Some(lines[i])));
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && !matches!(lines[i], Line::Same(_)) {
            i += 1;
        }
        let run = &lines[start..i];
        let dels: Vec<Line<'a>> = run
            .iter()
            .copied()
            .filter(|l| matches!(l, Line::Del(_)))
            .collect();
        let adds: Vec<Line<'a>> = run
            .iter()
            .copied()
            .filter(|l| matches!(l, Line::Add(_)))
            .collect();
        for k in 0..dels.len().max(adds.len()) {
            rows.push((dels.get(k).copied(), adds.get(k).copied()));
        }
    }
    rows
}

/// Two schemas side by side in `<div class="diff">`, removed lines marked `del` on the
/// left, added ones `add` on the right.
fn diff_html(left_title: &str, right_title: &str, left: &str, right: &str) -> String {
    let (left, right) = (pretty(left), pretty(right));
    let left_lines: Vec<&str> = left.lines().collect();
    let right_lines: Vec<&str> = right.lines().collect();
    let lines = diff_lines(&left_lines, &right_lines);
    let removed = lines.iter().filter(|l| matches!(l, Line::Del(_))).count();
    let added = lines.iter().filter(|l| matches!(l, Line::Add(_))).count();
    let mut out = format!(
        "<p class=\"muted\" id=\"diff-summary\">{}</p>\
         <div class=\"diff\" role=\"group\" aria-label=\"{} beside {}\" aria-describedby=\"diff-summary\">\
         <div><strong>{}</strong></div><div><strong>{}</strong></div>",
        if removed + added == 0 {
            "The two schemas are the same.".to_string()
        } else {
            format!(
                "{} removed, {} added.",
                count(removed as u64, "line"),
                count(added as u64, "line")
            )
        },
        esc(left_title),
        esc(right_title),
        esc(left_title),
        esc(right_title),
    );
    let cell = |line: Option<Line<'_>>| match line {
        None => "<div></div>".to_string(),
        Some(Line::Same(text)) => format!("<div>  {}</div>", esc(text)),
        Some(Line::Del(text)) => format!("<div class=\"del\">- {}</div>", esc(text)),
        Some(Line::Add(text)) => format!("<div class=\"add\">+ {}</div>", esc(text)),
    };
    for (l, r) in side_by_side(&lines) {
        out.push_str(&cell(l));
        out.push_str(&cell(r));
    }
    out.push_str("</div>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff<'a>(left: &[&'a str], right: &[&'a str]) -> Vec<Line<'a>> {
        diff_lines(left, right)
    }

    #[test]
    fn the_same_lines_are_all_same() {
        assert_eq!(
            diff(&["a", "b"], &["a", "b"]),
            vec![Line::Same("a"), Line::Same("b")]
        );
        assert_eq!(diff(&[], &[]), vec![]);
    }

    #[test]
    fn insertions_deletions_and_replacements_are_minimal() {
        assert_eq!(
            diff(&["a", "c"], &["a", "b", "c"]),
            vec![Line::Same("a"), Line::Add("b"), Line::Same("c")]
        );
        assert_eq!(
            diff(&["a", "b", "c"], &["a", "c"]),
            vec![Line::Same("a"), Line::Del("b"), Line::Same("c")]
        );
        assert_eq!(
            diff(&["a", "b", "c"], &["a", "x", "c"]),
            vec![
                Line::Same("a"),
                Line::Del("b"),
                Line::Add("x"),
                Line::Same("c")
            ]
        );
        assert_eq!(diff(&[], &["x"]), vec![Line::Add("x")]);
        assert_eq!(diff(&["x"], &[]), vec![Line::Del("x")]);
        // The LCS keeps the longest common run (b c d), not the first match.
        let d = diff(&["a", "b", "c", "d", "e"], &["b", "c", "d", "a", "e"]);
        let same: Vec<_> = d.iter().filter(|l| matches!(l, Line::Same(_))).collect();
        assert_eq!(same.len(), 4, "{d:?}");
        let kept: usize = d.iter().filter(|l| !matches!(l, Line::Add(_))).count();
        assert_eq!(kept, 5);
    }

    #[test]
    fn a_change_run_pairs_removed_beside_added() {
        let lines = diff(&["a", "b", "c", "z"], &["a", "x", "z"]);
        assert_eq!(
            side_by_side(&lines),
            vec![
                (Some(Line::Same("a")), Some(Line::Same("a"))),
                (Some(Line::Del("b")), Some(Line::Add("x"))),
                (Some(Line::Del("c")), None),
                (Some(Line::Same("z")), Some(Line::Same("z"))),
            ]
        );
    }

    #[test]
    fn a_huge_change_falls_back_to_removed_then_added() {
        let left: Vec<String> = (0..3000).map(|i| format!("l{i}")).collect();
        let right: Vec<String> = (0..3000).map(|i| format!("r{i}")).collect();
        let left: Vec<&str> = left.iter().map(String::as_str).collect();
        let right: Vec<&str> = right.iter().map(String::as_str).collect();
        let d = diff(&left, &right);
        assert_eq!(d.len(), 6000);
        assert_eq!(d[0], Line::Del("l0"));
        assert_eq!(d[3000], Line::Add("r0"));
    }

    #[test]
    fn avro_schemas_are_diffed_per_field() {
        let v1 = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}"#;
        let v2 = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"note","type":"string","default":""}]}"#;
        let html = diff_html("Version 1", "Version 2", v1, v2);
        assert!(
            html.contains("<div class=\"add\">+       &quot;name&quot;: &quot;note&quot;,</div>"),
            "{html}"
        );
        assert!(!html.contains("class=\"del\""), "{html}");
        assert!(html.contains("0 lines removed"), "{html}");
        // A type change is one line.
        let v3 = v1.replace("\"long\"", "\"string\"");
        let html = diff_html("1", "3", v1, &v3);
        assert!(html.contains("1 line removed, 1 line added"), "{html}");
        assert!(
            html.contains("<div class=\"del\">-       &quot;type&quot;: &quot;long&quot;</div>"),
            "{html}"
        );
        // Protobuf stays as written.
        assert_eq!(
            pretty("syntax = \"proto3\";\nmessage A {}"),
            "syntax = \"proto3\";\nmessage A {}"
        );
        assert!(diff_html("1", "1", v1, v1).contains("The two schemas are the same."));
    }

    #[test]
    fn service_errors_keep_the_service_code_and_message() {
        let body = br#"{"error_code":409,"message":"Schema being registered is incompatible with an earlier schema for subject \"o\", details: [x]"}"#;
        let error = on_registry_field(service_error(Service::Registry, 409, body));
        assert_eq!(error.status, StatusCode::CONFLICT);
        assert_eq!(error.code.as_deref(), Some("409"));
        assert_eq!(error.field.as_deref(), Some("schema"));
        assert!(
            error
                .message
                .starts_with("Schema registry error 409: Schema being registered is incompatible")
        );

        let error = on_registry_field(service_error(
            Service::Registry,
            422,
            br#"{"error_code":42201,"message":"Invalid schema x"}"#,
        ));
        assert_eq!(
            (error.status, error.field.as_deref()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("schema"))
        );
        assert_eq!(
            error.message,
            "Schema registry error 42201: Invalid schema x"
        );

        let error = on_registry_field(service_error(
            Service::Registry,
            404,
            br#"{"error_code":40401,"message":"Subject 'x' not found."}"#,
        ));
        assert_eq!((error.status, error.field), (StatusCode::NOT_FOUND, None));

        // A server error is the service's failure: 502, its text kept.
        let error = service_error(
            Service::Connect,
            500,
            br#"{"error_code":500,"message":"boom"}"#,
        );
        assert_eq!(error.status, StatusCode::BAD_GATEWAY);
        assert_eq!(error.message, "Kafka Connect error 500: boom");
        let error = service_error(Service::Connect, 503, b"<html>down</html>");
        assert_eq!(
            error.message,
            "Kafka Connect answered HTTP 503: <html>down</html>"
        );
        assert_eq!(error.code, None);
        assert_eq!(
            service_error(Service::Connect, 404, b"").message,
            "Kafka Connect answered HTTP 404"
        );
    }

    #[test]
    fn malformed_json_says_where() {
        let error = serde_json::from_str::<Value>("{\n  \"a\": 1,\n  \"b\" 2\n}").unwrap_err();
        assert_eq!(
            malformed_json(&error),
            "the JSON is malformed at line 3 column 7: expected `:`"
        );
    }

    #[test]
    fn schema_input_is_checked_before_the_registry_sees_it() {
        let input =
            SchemaInput::parse(&json!({"schema": "\"string\"", "schema_type": ""})).unwrap();
        assert_eq!(input.to_registry(), json!({"schema": "\"string\""}));
        let input = SchemaInput::parse(&json!({
            "schema": "syntax = \"proto3\"; message A {}",
            "schema_type": "protobuf",
            "references": "[{\"name\": \"b.proto\", \"subject\": \"b\", \"version\": 1}]",
        }))
        .unwrap();
        assert_eq!(
            input.to_registry(),
            json!({"schema": "syntax = \"proto3\"; message A {}", "schemaType": "PROTOBUF",
                   "references": [{"name": "b.proto", "subject": "b", "version": 1}]})
        );
        let field = |body: Value| SchemaInput::parse(&body).unwrap_err().field;
        assert_eq!(field(json!({"schema": " "})).as_deref(), Some("schema"));
        assert_eq!(
            field(json!({"schema": "{\"type\":"})).as_deref(),
            Some("schema")
        );
        assert_eq!(
            field(json!({"schema": "{}", "schema_type": "XML"})).as_deref(),
            Some("schema_type")
        );
        assert_eq!(
            field(json!({"schema": "{}", "references": "{}"})).as_deref(),
            Some("references")
        );
        assert_eq!(
            field(json!({"schema": "{}", "references": "[{\"name\": 1}]"})).as_deref(),
            Some("references")
        );
    }
}
