//! A client of Confluent Schema Registry's REST API, as the serializers in [`crate::serde`]
//! use it: register a schema under a subject, look one up, read a schema by id, read a
//! subject's versions, list subjects, test compatibility. It speaks to Sluice's registry and
//! to Confluent's alike (content type `application/vnd.schemaregistry.v1+json`).
//!
//! What it is not: a schema library. Schemas travel as strings with their type and
//! references; parsing them is the serializers' business (and the registry's). It is also
//! not part of `sluice-client`, which stays free of schema code.
//!
//! Why caches: every record a serializer writes needs its schema's id, and every record a
//! deserializer reads needs the schema behind an id. Ids are immutable, so id → schema is
//! cached for good; (subject, schema) → id and (subject, version) → schema change only when
//! a subject is deleted, which Confluent's clients also ignore. Each cache holds at most
//! `cache_capacity` entries (oldest out first): a bound, not a tuning knob. `latest` is
//! never cached, since it moves.
//!
//! Errors carry Confluent's `error_code` (40401 subject not found, 40403 schema not found,
//! 409 incompatible, 42201 invalid schema, ...) so a caller can switch on it.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::{Method, StatusCode, Url};
use serde::Deserialize;
use serde_json::{Value, json};

pub use crate::records::SchemaReference;
pub use crate::schema::SchemaType;

/// The content type of Confluent's API, sent with every request body.
pub const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

/// A response body larger than this is refused rather than buffered: no schema is this
/// large, and the registry's own request limit is the same.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// The `error_code` of an error answer that carried none (not Confluent's JSON).
pub const UNKNOWN_ERROR_CODE: i32 = -1;

/// The client's settings (Confluent's `schema.registry.url`, `cache.capacity`,
/// `request.timeout.ms`).
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Base URLs of the registry's instances; a request that cannot reach one (connect or
    /// transport error) is tried on the next. An HTTP error answer is not retried.
    pub urls: Vec<String>,
    /// Entries per cache (default 1000, as Confluent's clients).
    pub cache_capacity: usize,
    /// Time allowed for each request, connect to last byte (default 30 s).
    pub request_timeout: Duration,
}

impl ClientConfig {
    /// `urls` as Confluent's `schema.registry.url`: one URL, or several separated by commas.
    pub fn new(urls: &str) -> ClientConfig {
        ClientConfig {
            urls: urls
                .split(',')
                .map(|url| url.trim().to_string())
                .filter(|url| !url.is_empty())
                .collect(),
            cache_capacity: 1000,
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// What can go wrong talking to the registry.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The registry answered with an error: Confluent's `error_code` and `message`
    /// (`error_code` is [`UNKNOWN_ERROR_CODE`] when the body was not Confluent's JSON).
    #[error("schema registry error {error_code} (HTTP {status}): {message}")]
    Registry {
        status: u16,
        error_code: i32,
        message: String,
    },
    /// No instance could be reached; the error of the last one tried.
    #[error("schema registry at {url} unreachable: {source}")]
    Transport {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("schema registry response from {url} exceeds {limit_bytes} bytes")]
    ResponseTooLarge { url: String, limit_bytes: usize },
    #[error("unexpected schema registry response from {url}: {detail}")]
    UnexpectedResponse { url: String, detail: String },
    #[error("schema registry client configuration: {0}")]
    Config(String),
}

impl ClientError {
    /// Confluent's `error_code` when the registry answered with an error.
    pub fn error_code(&self) -> Option<i32> {
        match self {
            ClientError::Registry { error_code, .. } => Some(*error_code),
            _ => None,
        }
    }
}

/// A schema as the API carries it: its text, type and references. The text is whatever
/// the schema type uses (Avro or JSON Schema JSON, `.proto` text or a base64
/// `FileDescriptorProto`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Schema {
    pub schema: String,
    pub schema_type: SchemaType,
    pub references: Vec<SchemaReference>,
}

impl Schema {
    pub fn new(schema_type: SchemaType, schema: impl Into<String>) -> Schema {
        Schema {
            schema: schema.into(),
            schema_type,
            references: Vec::new(),
        }
    }

    pub fn with_references(mut self, references: Vec<SchemaReference>) -> Schema {
        self.references = references;
        self
    }

    fn request_body(&self) -> Value {
        let mut body = serde_json::Map::new();
        body.insert("schema".into(), json!(self.schema));
        if self.schema_type != SchemaType::Avro {
            body.insert("schemaType".into(), json!(self.schema_type.name()));
        }
        if !self.references.is_empty() {
            body.insert("references".into(), json!(self.references));
        }
        Value::Object(body)
    }
}

/// One version of a subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredSchema {
    pub subject: String,
    pub id: i32,
    pub version: i32,
    pub schema: Schema,
}

/// Which version of a subject to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VersionSelector {
    Latest,
    Number(i32),
}

impl fmt::Display for VersionSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionSelector::Latest => f.write_str("latest"),
            VersionSelector::Number(number) => write!(f, "{number}"),
        }
    }
}

/// A map that holds at most `capacity` entries, dropping the oldest insertion first.
#[derive(Debug)]
pub(crate) struct BoundedCache<K, V> {
    capacity: usize,
    entries: HashMap<K, V>,
    order: VecDeque<K>,
}

impl<K: Hash + Eq + Clone, V: Clone> BoundedCache<K, V> {
    pub(crate) fn new(capacity: usize) -> BoundedCache<K, V> {
        BoundedCache {
            capacity,
            entries: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub(crate) fn get(&self, key: &K) -> Option<V> {
        self.entries.get(key).cloned()
    }

    pub(crate) fn insert(&mut self, key: K, value: V) {
        if self.capacity == 0 {
            return;
        }
        if let Some(existing) = self.entries.get_mut(&key) {
            *existing = value;
            return;
        }
        while self.entries.len() >= self.capacity {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.entries.remove(&oldest);
        }
        self.order.push_back(key.clone());
        self.entries.insert(key, value);
        debug_assert_eq!(self.entries.len(), self.order.len());
    }
}

/// (subject, normalize, schema): the key of the register and lookup caches.
type SubjectSchemaKey = (String, bool, Schema);

#[derive(Debug)]
struct Caches {
    /// (id, `format` parameter) → schema.
    schemas_by_id: BoundedCache<(i32, Option<String>), Arc<Schema>>,
    ids_by_schema: BoundedCache<SubjectSchemaKey, i32>,
    versions_by_schema: BoundedCache<SubjectSchemaKey, RegisteredSchema>,
    /// (subject, version number) → that version.
    versions_by_number: BoundedCache<(String, i32), RegisteredSchema>,
}

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    urls: Vec<Url>,
    caches: Mutex<Caches>,
}

/// A client of one registry (any of its instances). Cheap to clone: clones share the
/// connection pool and the caches.
#[derive(Debug, Clone)]
pub struct SchemaRegistryClient {
    inner: Arc<Inner>,
}

/// The JSON of a schema in a response (`/schemas/ids/{id}`, `/subjects/{s}/versions/{v}`,
/// a lookup).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SchemaBody {
    schema: String,
    #[serde(default)]
    schema_type: Option<String>,
    #[serde(default)]
    references: Vec<SchemaReference>,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    id: Option<i32>,
    #[serde(default)]
    version: Option<i32>,
}

#[derive(Deserialize)]
struct ErrorBody {
    error_code: i32,
    #[serde(default)]
    message: String,
}

impl SchemaRegistryClient {
    pub fn new(config: ClientConfig) -> Result<SchemaRegistryClient, ClientError> {
        if config.urls.is_empty() {
            return Err(ClientError::Config("no registry URL".into()));
        }
        let urls = config
            .urls
            .iter()
            .map(|url| {
                let parsed = Url::parse(url)
                    .map_err(|e| ClientError::Config(format!("registry URL {url}: {e}")))?;
                if parsed.cannot_be_a_base() {
                    return Err(ClientError::Config(format!(
                        "registry URL {url}: not a base URL"
                    )));
                }
                Ok(parsed)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let http = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .build()
            .map_err(|e| ClientError::Config(format!("HTTP client: {e}")))?;
        let capacity = config.cache_capacity;
        Ok(SchemaRegistryClient {
            inner: Arc::new(Inner {
                http,
                urls,
                caches: Mutex::new(Caches {
                    schemas_by_id: BoundedCache::new(capacity),
                    ids_by_schema: BoundedCache::new(capacity),
                    versions_by_schema: BoundedCache::new(capacity),
                    versions_by_number: BoundedCache::new(capacity),
                }),
            }),
        })
    }

    /// A client of the registry at `urls` (comma-separated) with default settings.
    pub fn from_url(urls: &str) -> Result<SchemaRegistryClient, ClientError> {
        SchemaRegistryClient::new(ClientConfig::new(urls))
    }

    fn caches(&self) -> std::sync::MutexGuard<'_, Caches> {
        // A panic while holding the lock cannot leave a cache inconsistent in a way that
        // matters (entries are whole values), so a poisoned lock is still usable.
        self.inner
            .caches
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `POST /subjects/{subject}/versions`: registers `schema` (or finds it already
    /// registered) and answers its id.
    pub async fn register(
        &self,
        subject: &str,
        schema: &Schema,
        normalize: bool,
    ) -> Result<i32, ClientError> {
        let key = (subject.to_string(), normalize, schema.clone());
        if let Some(id) = self.caches().ids_by_schema.get(&key) {
            return Ok(id);
        }
        let query = normalize_query(normalize);
        let (url, body) = self
            .call(
                Method::POST,
                &["subjects", subject, "versions"],
                &query,
                Some(schema.request_body()),
            )
            .await?;
        let id = body
            .get("id")
            .and_then(Value::as_i64)
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| unexpected(&url, format!("no id in {body}")))?;
        let mut caches = self.caches();
        caches.ids_by_schema.insert(key, id);
        if !normalize {
            caches
                .schemas_by_id
                .insert((id, None), Arc::new(schema.clone()));
        }
        Ok(id)
    }

    /// `GET /schemas/ids/{id}`: the schema with this id.
    pub async fn get_schema_by_id(&self, id: i32) -> Result<Arc<Schema>, ClientError> {
        self.schema_by_id(id, None).await
    }

    /// `GET /schemas/ids/{id}?format=...`: the schema in another format (for Protobuf,
    /// `serialized` answers a base64 `FileDescriptorProto`). A registry that has no such
    /// format answers the schema as registered.
    pub async fn get_schema_by_id_in_format(
        &self,
        id: i32,
        format: &str,
    ) -> Result<Arc<Schema>, ClientError> {
        self.schema_by_id(id, Some(format)).await
    }

    async fn schema_by_id(
        &self,
        id: i32,
        format: Option<&str>,
    ) -> Result<Arc<Schema>, ClientError> {
        let key = (id, format.map(str::to_string));
        if let Some(schema) = self.caches().schemas_by_id.get(&key) {
            return Ok(schema);
        }
        let id_text = id.to_string();
        let query: Vec<(&str, &str)> = format.map(|f| ("format", f)).into_iter().collect();
        let (url, body) = self
            .call(Method::GET, &["schemas", "ids", &id_text], &query, None)
            .await?;
        let schema = Arc::new(parse_schema_body(&url, body)?.0);
        self.caches().schemas_by_id.insert(key, Arc::clone(&schema));
        Ok(schema)
    }

    /// `POST /subjects/{subject}`: the version of `subject` that is `schema`; Confluent's
    /// 40401 (no such subject) or 40403 (not registered under it) otherwise.
    pub async fn lookup(
        &self,
        subject: &str,
        schema: &Schema,
        normalize: bool,
    ) -> Result<RegisteredSchema, ClientError> {
        let key = (subject.to_string(), normalize, schema.clone());
        if let Some(found) = self.caches().versions_by_schema.get(&key) {
            return Ok(found);
        }
        let query = normalize_query(normalize);
        let (url, body) = self
            .call(
                Method::POST,
                &["subjects", subject],
                &query,
                Some(schema.request_body()),
            )
            .await?;
        let found = registered_schema(&url, subject, body)?;
        self.caches().versions_by_schema.insert(key, found.clone());
        Ok(found)
    }

    /// `GET /subjects/{subject}/versions/{version}`. Numbered versions are cached; `latest`
    /// is always asked for.
    pub async fn get_version(
        &self,
        subject: &str,
        version: VersionSelector,
    ) -> Result<RegisteredSchema, ClientError> {
        let key = match version {
            VersionSelector::Number(number) => Some((subject.to_string(), number)),
            VersionSelector::Latest => None,
        };
        if let Some(key) = &key
            && let Some(found) = self.caches().versions_by_number.get(key)
        {
            return Ok(found);
        }
        let version_text = version.to_string();
        let (url, body) = self
            .call(
                Method::GET,
                &["subjects", subject, "versions", &version_text],
                &[],
                None,
            )
            .await?;
        let found = registered_schema(&url, subject, body)?;
        let mut caches = self.caches();
        caches
            .versions_by_number
            .insert((found.subject.clone(), found.version), found.clone());
        caches
            .schemas_by_id
            .insert((found.id, None), Arc::new(found.schema.clone()));
        Ok(found)
    }

    /// The latest version of `subject`.
    pub async fn get_latest(&self, subject: &str) -> Result<RegisteredSchema, ClientError> {
        self.get_version(subject, VersionSelector::Latest).await
    }

    /// `GET /subjects`: every subject with a live version.
    pub async fn subjects(&self) -> Result<Vec<String>, ClientError> {
        let (url, body) = self.call(Method::GET, &["subjects"], &[], None).await?;
        serde_json::from_value(body.clone()).map_err(|e| unexpected(&url, format!("{e}: {body}")))
    }

    /// `GET /subjects/{subject}/versions`: the subject's live version numbers.
    pub async fn versions(&self, subject: &str) -> Result<Vec<i32>, ClientError> {
        let (url, body) = self
            .call(Method::GET, &["subjects", subject, "versions"], &[], None)
            .await?;
        serde_json::from_value(body.clone()).map_err(|e| unexpected(&url, format!("{e}: {body}")))
    }

    /// `POST /compatibility/subjects/{subject}/versions/{version}`: whether `schema` may
    /// follow that version under the subject's compatibility level.
    pub async fn test_compatibility(
        &self,
        subject: &str,
        version: VersionSelector,
        schema: &Schema,
    ) -> Result<bool, ClientError> {
        let version_text = version.to_string();
        let (url, body) = self
            .call(
                Method::POST,
                &[
                    "compatibility",
                    "subjects",
                    subject,
                    "versions",
                    &version_text,
                ],
                &[],
                Some(schema.request_body()),
            )
            .await?;
        body.get("is_compatible")
            .and_then(Value::as_bool)
            .ok_or_else(|| unexpected(&url, format!("no is_compatible in {body}")))
    }

    /// Sends one request to the first instance that answers; returns the URL asked and the
    /// JSON body of a 2xx answer.
    async fn call(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, &str)],
        body: Option<Value>,
    ) -> Result<(Url, Value), ClientError> {
        let mut last_transport_error = None;
        for base in &self.inner.urls {
            let url = endpoint(base, segments, query);
            let mut request = self
                .inner
                .http
                .request(method.clone(), url.clone())
                .header(reqwest::header::ACCEPT, CONTENT_TYPE);
            if let Some(body) = &body {
                request = request
                    .header(reqwest::header::CONTENT_TYPE, CONTENT_TYPE)
                    .body(body.to_string());
            }
            let response = match request.send().await {
                Ok(response) => response,
                Err(source) => {
                    tracing::debug!(%url, error = %source, "schema registry unreachable");
                    last_transport_error = Some(ClientError::Transport {
                        url: url.to_string(),
                        source,
                    });
                    continue;
                }
            };
            let status = response.status();
            let bytes = read_bounded(&url, response).await?;
            return answer(&url, status, &bytes).map(|value| (url, value));
        }
        Err(last_transport_error.expect("urls is never empty (checked in new)"))
    }
}

fn normalize_query(normalize: bool) -> Vec<(&'static str, &'static str)> {
    if normalize {
        vec![("normalize", "true")]
    } else {
        Vec::new()
    }
}

/// `base` with `segments` appended (each percent-encoded, so a subject such as
/// `common/address.proto` stays one segment) and `query`.
fn endpoint(base: &Url, segments: &[&str], query: &[(&str, &str)]) -> Url {
    let mut url = base.clone();
    {
        let mut path = url
            .path_segments_mut()
            .expect("a base URL (checked in new)");
        path.pop_if_empty();
        path.extend(segments);
    }
    if query.is_empty() {
        url.set_query(None);
    } else {
        url.query_pairs_mut().clear().extend_pairs(query);
    }
    url
}

async fn read_bounded(url: &Url, mut response: reqwest::Response) -> Result<Vec<u8>, ClientError> {
    if response
        .content_length()
        .is_some_and(|length| length > MAX_RESPONSE_BYTES as u64)
    {
        return Err(too_large(url));
    }
    let mut bytes = Vec::new();
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|source| ClientError::Transport {
                url: url.to_string(),
                source,
            })?;
        let Some(chunk) = chunk else {
            return Ok(bytes);
        };
        if bytes.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(too_large(url));
        }
        bytes.extend_from_slice(&chunk);
    }
}

fn too_large(url: &Url) -> ClientError {
    ClientError::ResponseTooLarge {
        url: url.to_string(),
        limit_bytes: MAX_RESPONSE_BYTES,
    }
}

fn answer(url: &Url, status: StatusCode, bytes: &[u8]) -> Result<Value, ClientError> {
    if status.is_success() {
        return serde_json::from_slice(bytes)
            .map_err(|e| unexpected(url, format!("invalid JSON ({e})")));
    }
    Err(match serde_json::from_slice::<ErrorBody>(bytes) {
        Ok(error) => ClientError::Registry {
            status: status.as_u16(),
            error_code: error.error_code,
            message: error.message,
        },
        Err(_) => ClientError::Registry {
            status: status.as_u16(),
            error_code: UNKNOWN_ERROR_CODE,
            message: String::from_utf8_lossy(bytes).into_owned(),
        },
    })
}

fn unexpected(url: &Url, detail: String) -> ClientError {
    ClientError::UnexpectedResponse {
        url: url.to_string(),
        detail,
    }
}

fn parse_schema_body(url: &Url, body: Value) -> Result<(Schema, SchemaBody), ClientError> {
    let parsed: SchemaBody =
        serde_json::from_value(body).map_err(|e| unexpected(url, e.to_string()))?;
    let schema_type = match &parsed.schema_type {
        None => SchemaType::Avro,
        Some(name) => SchemaType::parse(name)
            .ok_or_else(|| unexpected(url, format!("unknown schemaType {name}")))?,
    };
    let schema = Schema {
        schema: parsed.schema.clone(),
        schema_type,
        references: parsed.references.clone(),
    };
    Ok((schema, parsed))
}

fn registered_schema(
    url: &Url,
    subject: &str,
    body: Value,
) -> Result<RegisteredSchema, ClientError> {
    let (schema, parsed) = parse_schema_body(url, body)?;
    let (Some(id), Some(version)) = (parsed.id, parsed.version) else {
        return Err(unexpected(url, "no id or version".into()));
    };
    Ok(RegisteredSchema {
        subject: parsed.subject.unwrap_or_else(|| subject.to_string()),
        id,
        version,
        schema,
    })
}
