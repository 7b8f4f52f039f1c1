//! Confluent Schema Registry's REST API over [`Registry`] (axum). Requests take JSON with
//! any of the content types Confluent accepts (`application/vnd.schemaregistry.v1+json`,
//! `application/vnd.schemaregistry+json`, `application/json`, or none); responses are
//! `application/vnd.schemaregistry.v1+json`. Errors are `{"error_code": N, "message": ...}`
//! with Confluent's codes (see [`crate::error`]).
//!
//! Writes (register, delete, PUT/DELETE config and mode) are served by the leader; another
//! instance forwards them to it and relays its answer (Confluent's request forwarding).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::RegistryError;
use crate::leader::{Leader, Leadership};
use crate::records::{ConfigValue, SchemaReference};
use crate::registry::{Registry, SchemaRequest, SubjectVersion, VersionSpec};
use crate::schema::SchemaType;

pub const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

/// Requests larger than this are refused (a schema of several MiB is a mistake, and the
/// body is buffered whole).
pub const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

pub struct App {
    pub registry: Registry,
    pub leadership: Leadership,
    pub http: reqwest::Client,
}

type Shared = State<Arc<App>>;
type Params = Query<HashMap<String, String>>;

/// The router of every route Confluent's API has that Sluice serves.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(|| async { ok(json!({})) }))
        .route("/subjects", get(list_subjects))
        .route("/subjects/{subject}", post(lookup).delete(delete_subject))
        .route(
            "/subjects/{subject}/versions",
            get(list_versions).post(register),
        )
        .route(
            "/subjects/{subject}/versions/{version}",
            get(get_version).delete(delete_version),
        )
        .route(
            "/subjects/{subject}/versions/{version}/schema",
            get(get_version_schema),
        )
        .route(
            "/subjects/{subject}/versions/{version}/referencedby",
            get(referenced_by),
        )
        .route("/schemas", get(list_schemas))
        .route("/schemas/types", get(schema_types))
        .route("/schemas/ids/{id}", get(schema_by_id))
        .route("/schemas/ids/{id}/schema", get(schema_by_id_raw))
        .route("/schemas/ids/{id}/subjects", get(schema_subjects))
        .route("/schemas/ids/{id}/versions", get(schema_versions))
        .route(
            "/compatibility/subjects/{subject}/versions",
            post(compatibility_all),
        )
        .route(
            "/compatibility/subjects/{subject}/versions/{version}",
            post(compatibility_version),
        )
        .route(
            "/config",
            get(get_config).put(put_config).delete(delete_config),
        )
        .route(
            "/config/{subject}",
            get(get_config).put(put_config).delete(delete_config),
        )
        .route("/mode", get(get_mode).put(put_mode).delete(delete_mode))
        .route(
            "/mode/{subject}",
            get(get_mode).put(put_mode).delete(delete_mode),
        )
        .route("/contexts", get(|| async { ok(json!(["."])) }))
        .route("/v1/metadata/id", get(metadata_id))
        .fallback(|| async { error(RegistryError::new(404, "HTTP 404 Not Found")) })
        .layer(axum::extract::DefaultBodyLimit::max(MAX_REQUEST_BYTES))
        .with_state(app)
}

// -- responses -------------------------------------------------------------------------------

fn respond(status: StatusCode, body: Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    response
}

fn ok(body: Value) -> Response {
    respond(StatusCode::OK, body)
}

fn error(error: RegistryError) -> Response {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    respond(
        status,
        json!({"error_code": error.error_code, "message": error.message}),
    )
}

fn answer(result: Result<Value, RegistryError>) -> Response {
    match result {
        Ok(body) => ok(body),
        Err(e) => error(e),
    }
}

fn flag(params: &HashMap<String, String>, name: &str) -> bool {
    params
        .get(name)
        .is_some_and(|value| value.eq_ignore_ascii_case("true"))
}

fn references_json(references: &[SchemaReference]) -> Value {
    serde_json::to_value(references).expect("references serialize")
}

fn subject_version_json(version: &SubjectVersion) -> Value {
    let mut body = serde_json::Map::new();
    body.insert("subject".into(), json!(version.subject));
    body.insert("version".into(), json!(version.version));
    body.insert("id".into(), json!(version.id));
    if version.schema_type != SchemaType::Avro {
        body.insert("schemaType".into(), json!(version.schema_type.name()));
    }
    if !version.references.is_empty() {
        body.insert("references".into(), references_json(&version.references));
    }
    body.insert("schema".into(), json!(version.schema));
    Value::Object(body)
}

fn config_json(config: &ConfigValue) -> Value {
    let mut body = serde_json::Map::new();
    if let Some(level) = &config.compatibility_level {
        body.insert("compatibilityLevel".into(), json!(level));
    }
    if let Some(normalize) = config.normalize {
        body.insert("normalize".into(), json!(normalize));
    }
    Value::Object(body)
}

// -- request bodies --------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SchemaBody {
    #[serde(default)]
    schema: Option<String>,
    #[serde(default)]
    schema_type: Option<String>,
    #[serde(default)]
    references: Option<Vec<SchemaReference>>,
    #[serde(default)]
    id: Option<i32>,
    #[serde(default)]
    version: Option<i32>,
}

fn parse_body<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, RegistryError> {
    serde_json::from_slice(body)
        .map_err(|e| RegistryError::new(400, format!("Invalid JSON in the request body: {e}")))
}

fn schema_request(body: &Bytes) -> Result<SchemaRequest, RegistryError> {
    let body: SchemaBody = parse_body(body)?;
    let schema = body
        .schema
        .ok_or_else(|| RegistryError::invalid_schema("(missing: the body has no \"schema\")"))?;
    Ok(SchemaRequest {
        schema,
        schema_type: body.schema_type,
        references: body.references.unwrap_or_default(),
        id: body.id.filter(|id| *id >= 0),
        version: body.version.filter(|version| *version >= 1),
    })
}

// -- forwarding to the leader ----------------------------------------------------------------

/// Runs a write here if this instance leads, else relays the request to the leader.
async fn on_leader<F, Fut>(
    app: &App,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
    here: F,
) -> Response
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Response>,
{
    // Between elections, wait (as long as a write may take) for a leader.
    let leader = app
        .leadership
        .wait_for_leader(app.registry.store().write_timeout())
        .await;
    match leader {
        Leader::Me => here().await,
        Leader::Unknown => error(RegistryError::unknown_leader()),
        Leader::Remote(base) => {
            let url = format!(
                "{}{}",
                base.trim_end_matches('/'),
                uri.path_and_query().map(|p| p.as_str()).unwrap_or("/")
            );
            let mut request = app
                .http
                .request(method, &url)
                .header(header::CONTENT_TYPE, CONTENT_TYPE)
                .body(body.to_vec());
            if let Some(authorization) = headers.get(header::AUTHORIZATION) {
                request = request.header(header::AUTHORIZATION, authorization);
            }
            match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    match response.bytes().await {
                        Ok(bytes) => {
                            let mut relayed = (status, bytes.to_vec()).into_response();
                            relayed.headers_mut().insert(
                                header::CONTENT_TYPE,
                                HeaderValue::from_static(CONTENT_TYPE),
                            );
                            relayed
                        }
                        Err(e) => error(RegistryError::forwarding(e)),
                    }
                }
                Err(e) => error(RegistryError::forwarding(e)),
            }
        }
    }
}

// -- subjects --------------------------------------------------------------------------------

async fn list_subjects(State(app): Shared, Query(params): Params) -> Response {
    let prefix = params
        .get("subjectPrefix")
        .map(String::as_str)
        .unwrap_or("");
    ok(json!(app.registry.subjects(
        prefix,
        flag(&params, "deleted"),
        flag(&params, "deletedOnly")
    )))
}

async fn list_versions(
    State(app): Shared,
    Path(subject): Path<String>,
    Query(params): Params,
) -> Response {
    answer(
        app.registry
            .versions(
                &subject,
                flag(&params, "deleted"),
                flag(&params, "deletedOnly"),
            )
            .map(|versions| json!(versions)),
    )
}

async fn register(
    State(app): Shared,
    Path(subject): Path<String>,
    Query(params): Params,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = match schema_request(&body) {
        Ok(request) => request,
        Err(e) => return error(e),
    };
    let normalize = flag(&params, "normalize");
    on_leader(&app, method, &uri, &headers, body.clone(), || async {
        answer(
            app.registry
                .register(&subject, &request, normalize)
                .await
                .map(|id| json!({"id": id})),
        )
    })
    .await
}

async fn lookup(
    State(app): Shared,
    Path(subject): Path<String>,
    Query(params): Params,
    body: Bytes,
) -> Response {
    answer(schema_request(&body).and_then(|request| {
        app.registry
            .lookup(
                &subject,
                &request,
                flag(&params, "normalize"),
                flag(&params, "deleted"),
            )
            .map(|version| subject_version_json(&version))
    }))
}

async fn delete_subject(
    State(app): Shared,
    Path(subject): Path<String>,
    Query(params): Params,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    on_leader(&app, method, &uri, &headers, body, || async {
        answer(
            app.registry
                .delete_subject(&subject, flag(&params, "permanent"))
                .await
                .map(|versions| json!(versions)),
        )
    })
    .await
}

async fn get_version(
    State(app): Shared,
    Path((subject, version)): Path<(String, String)>,
    Query(params): Params,
) -> Response {
    answer(VersionSpec::parse(&version).and_then(|spec| {
        let version = app
            .registry
            .version(&subject, spec, flag(&params, "deleted"))?;
        let version = with_format(&app, version, &params)?;
        Ok(subject_version_json(&version))
    }))
}

/// `?format=` (Confluent's Python Protobuf deserializer asks `serialized` for references):
/// the schema in that format when its type has it, else as stored.
fn with_format(
    app: &App,
    mut version: SubjectVersion,
    params: &HashMap<String, String>,
) -> Result<SubjectVersion, RegistryError> {
    if let Some(format) = params.get("format").filter(|format| !format.is_empty())
        && let Some(formatted) = app.registry.formatted_schema(version.id, format)?
    {
        version.schema = formatted;
    }
    Ok(version)
}

async fn get_version_schema(
    State(app): Shared,
    Path((subject, version)): Path<(String, String)>,
    Query(params): Params,
) -> Response {
    match VersionSpec::parse(&version)
        .and_then(|spec| {
            app.registry
                .version(&subject, spec, flag(&params, "deleted"))
        })
        .and_then(|version| with_format(&app, version, &params))
    {
        Ok(version) => raw_schema(version.schema),
        Err(e) => error(e),
    }
}

/// A schema string as the body (Confluent's `/schema` routes): the JSON schema itself for
/// Avro and JSON Schema, the text for Protobuf.
fn raw_schema(schema: String) -> Response {
    let mut response = (StatusCode::OK, schema).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    response
}

async fn referenced_by(
    State(app): Shared,
    Path((subject, version)): Path<(String, String)>,
) -> Response {
    answer(
        VersionSpec::parse(&version)
            .and_then(|spec| app.registry.referenced_by(&subject, spec))
            .map(|ids| json!(ids)),
    )
}

async fn delete_version(
    State(app): Shared,
    Path((subject, version)): Path<(String, String)>,
    Query(params): Params,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let spec = match VersionSpec::parse(&version) {
        Ok(spec) => spec,
        Err(e) => return error(e),
    };
    on_leader(&app, method, &uri, &headers, body, || async {
        answer(
            app.registry
                .delete_version(&subject, spec, flag(&params, "permanent"))
                .await
                .map(|version| json!(version)),
        )
    })
    .await
}

// -- schemas ---------------------------------------------------------------------------------

async fn list_schemas(State(app): Shared, Query(params): Params) -> Response {
    let prefix = params
        .get("subjectPrefix")
        .map(String::as_str)
        .unwrap_or("");
    let schemas = app.registry.schemas(
        prefix,
        flag(&params, "deleted"),
        flag(&params, "latestOnly"),
    );
    ok(Value::Array(
        schemas.iter().map(subject_version_json).collect(),
    ))
}

async fn schema_types() -> Response {
    ok(json!(
        SchemaType::ALL
            .iter()
            .map(|schema_type| schema_type.name())
            .collect::<Vec<_>>()
    ))
}

fn parse_id(id: &str) -> Result<i32, RegistryError> {
    id.parse::<i32>()
        .map_err(|_| RegistryError::new(404, format!("HTTP 404 Not Found: schema id '{id}'")))
}

async fn schema_by_id(
    State(app): Shared,
    Path(id): Path<String>,
    Query(params): Params,
) -> Response {
    answer((|| {
        let id = parse_id(&id)?;
        let schema = app
            .registry
            .schema_by_id(id, params.get("subject").map(String::as_str))?;
        let mut body = serde_json::Map::new();
        if schema.schema_type != SchemaType::Avro {
            body.insert("schemaType".into(), json!(schema.schema_type.name()));
        }
        if !schema.references.is_empty() {
            body.insert("references".into(), references_json(&schema.references));
        }
        let text = match params.get("format").filter(|format| !format.is_empty()) {
            Some(format) => app
                .registry
                .formatted_schema(id, format)?
                .unwrap_or(schema.schema),
            None => schema.schema,
        };
        body.insert("schema".into(), json!(text));
        Ok(Value::Object(body))
    })())
}

async fn schema_by_id_raw(
    State(app): Shared,
    Path(id): Path<String>,
    Query(params): Params,
) -> Response {
    match parse_id(&id).and_then(|id| {
        app.registry
            .schema_by_id(id, params.get("subject").map(String::as_str))
    }) {
        Ok(schema) => raw_schema(schema.schema),
        Err(e) => error(e),
    }
}

async fn schema_subjects(
    State(app): Shared,
    Path(id): Path<String>,
    Query(params): Params,
) -> Response {
    answer(
        parse_id(&id)
            .and_then(|id| app.registry.id_versions(id, flag(&params, "deleted")))
            .map(|versions| {
                let mut subjects: Vec<String> =
                    versions.into_iter().map(|(subject, _)| subject).collect();
                subjects.dedup();
                json!(subjects)
            }),
    )
}

async fn schema_versions(
    State(app): Shared,
    Path(id): Path<String>,
    Query(params): Params,
) -> Response {
    answer(
        parse_id(&id)
            .and_then(|id| app.registry.id_versions(id, flag(&params, "deleted")))
            .map(|versions| {
                Value::Array(
                    versions
                        .into_iter()
                        .map(|(subject, version)| json!({"subject": subject, "version": version}))
                        .collect(),
                )
            }),
    )
}

// -- compatibility ---------------------------------------------------------------------------

async fn compatibility_all(
    State(app): Shared,
    Path(subject): Path<String>,
    Query(params): Params,
    body: Bytes,
) -> Response {
    compatibility(&app, &subject, None, &params, &body)
}

async fn compatibility_version(
    State(app): Shared,
    Path((subject, version)): Path<(String, String)>,
    Query(params): Params,
    body: Bytes,
) -> Response {
    match VersionSpec::parse(&version) {
        Ok(spec) => compatibility(&app, &subject, Some(spec), &params, &body),
        Err(e) => error(e),
    }
}

fn compatibility(
    app: &App,
    subject: &str,
    version: Option<VersionSpec>,
    params: &HashMap<String, String>,
    body: &Bytes,
) -> Response {
    let verbose = flag(params, "verbose");
    answer(schema_request(body).and_then(|request| {
        let result = app.registry.check_compatibility(
            subject,
            version,
            &request,
            flag(params, "normalize"),
            verbose,
        )?;
        Ok(if verbose {
            json!({"is_compatible": result.is_compatible, "messages": result.messages})
        } else {
            json!({"is_compatible": result.is_compatible})
        })
    }))
}

// -- config ----------------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigBody {
    #[serde(default)]
    compatibility: Option<String>,
    /// Some clients send the GET form back.
    #[serde(default)]
    compatibility_level: Option<String>,
    #[serde(default)]
    normalize: Option<bool>,
}

/// `/config` and `/config/{subject}` share their handlers: no path is the global config.
type SubjectPath = Option<Path<String>>;

fn subject_of(path: &SubjectPath) -> Option<&str> {
    path.as_ref().map(|Path(subject)| subject.as_str())
}

async fn get_config(State(app): Shared, subject: SubjectPath, Query(params): Params) -> Response {
    answer(
        app.registry
            .config(subject_of(&subject), flag(&params, "defaultToGlobal"))
            .map(|c| config_json(&c)),
    )
}

async fn put_config(
    State(app): Shared,
    subject: SubjectPath,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed: ConfigBody = match parse_body(&body) {
        Ok(parsed) => parsed,
        Err(e) => return error(e),
    };
    let level = parsed.compatibility.or(parsed.compatibility_level);
    if level.is_none() && parsed.normalize.is_none() {
        return error(RegistryError::invalid_compatibility_level());
    }
    on_leader(&app, method, &uri, &headers, body, || async {
        answer(
            app.registry
                .set_config(subject_of(&subject), level.as_deref(), parsed.normalize)
                .await
                .map(|config| {
                    let mut body = serde_json::Map::new();
                    if let Some(level) = config.compatibility_level {
                        body.insert("compatibility".into(), json!(level));
                    }
                    if let Some(normalize) = config.normalize {
                        body.insert("normalize".into(), json!(normalize));
                    }
                    Value::Object(body)
                }),
        )
    })
    .await
}

async fn delete_config(
    State(app): Shared,
    subject: SubjectPath,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    on_leader(&app, method, &uri, &headers, body, || async {
        answer(
            app.registry
                .delete_config(subject_of(&subject))
                .await
                .map(|c| config_json(&c)),
        )
    })
    .await
}

// -- mode ------------------------------------------------------------------------------------

#[derive(Deserialize)]
struct ModeBody {
    mode: String,
}

async fn get_mode(State(app): Shared, subject: SubjectPath, Query(params): Params) -> Response {
    answer(
        app.registry
            .mode(subject_of(&subject), flag(&params, "defaultToGlobal"))
            .map(|mode| json!({"mode": mode.name()})),
    )
}

async fn put_mode(
    State(app): Shared,
    subject: SubjectPath,
    Query(params): Params,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed: ModeBody = match parse_body(&body) {
        Ok(parsed) => parsed,
        Err(e) => return error(e),
    };
    let force = flag(&params, "force");
    on_leader(&app, method, &uri, &headers, body, || async {
        answer(
            app.registry
                .set_mode(subject_of(&subject), &parsed.mode, force)
                .await
                .map(|mode| json!({"mode": mode.name()})),
        )
    })
    .await
}

async fn delete_mode(
    State(app): Shared,
    subject: SubjectPath,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    on_leader(&app, method, &uri, &headers, body, || async {
        answer(
            app.registry
                .delete_mode(subject_of(&subject))
                .await
                .map(|mode| json!({"mode": mode.name()})),
        )
    })
    .await
}

async fn metadata_id(State(app): Shared) -> Response {
    ok(json!({
        "scope": {
            "path": [],
            "clusters": {"kafka-cluster": app.registry.store().cluster_id().unwrap_or_default(),
                         "schema-registry-cluster": app.leadership.group_id()}
        }
    }))
}
