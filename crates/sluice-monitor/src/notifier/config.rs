//! A `[notifier.NAME]` section, read with Burrow's keys and defaults and validated once
//! into [`NotifierSettings`]: regexes compiled, templates loaded and checked, addresses
//! and methods parsed. Everything that can be wrong with a notifier is found here, at
//! startup, not when the first alert is due.
//!
//! Burrow's keys, all kebab-case:
//! - common: `class-name` (`http` or `email`), `group-allowlist`, `group-denylist`
//!   (regular expressions; empty means none), `extras` (a table handed to templates as
//!   `.Extras`), `send-close` (false), `send-once` (false), `threshold` (a status number
//!   or name, default 2 = WARN), `interval` (seconds between evaluations of a group,
//!   default 60), `send-interval` (seconds between repeated open notifications, default
//!   `interval`), `template-open`, `template-close` (file paths; where Burrow requires
//!   them, a notifier without them uses Sluice's built-in templates, see
//!   [`super::default_templates`]);
//! - `http`: `url-open`, `url-close` (Go templates too: `?id={{.ID}}`; `url-close`
//!   defaults to `url-open`, where Burrow refuses to start), `method-open`
//!   (POST), `method-close` (POST, Burrow's default; its sample config sets DELETE),
//!   `headers` (a table), `username`/`password` (basic auth), `timeout` (seconds, 5),
//!   `keepalive` (seconds, 300), `disable-http-keepalive`, and for `https://` URLs
//!   `extra-ca` (a PEM file of CA certificates trusted besides the system's) and
//!   `noverify` (accept any certificate; logged as a warning when loaded);
//! - `email`: `server`, `port`, `auth-type` (`plain` or empty), `username`, `password`,
//!   `from`, `to` (comma-separated, or a list), and `timeout` (seconds for the whole SMTP
//!   exchange, 30; Burrow has no such key).
//!
//! Refused with a message rather than ignored: Burrow's old `group-whitelist`/
//! `group-blacklist` (Burrow refuses them too), `extra-ca` and `noverify` on an email
//! notifier (this build's SMTP client has no STARTTLS), `auth-type crammd5`, and `plain`
//! auth to a server that is not on this host (the password would cross the network in
//! clear; Go's `net/smtp`, which Burrow uses, refuses the same).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use regex::Regex;
use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::Value;

use super::NotifierError;
use super::coordinator::{AlertRules, NotificationKind};
use super::default_templates::{Class, default_template};
use super::template::Template;
use crate::types::Status;

/// Burrow's minimum evaluation interval when no notifier is configured (about 10 years).
pub const EVALUATION_INTERVAL_NONE_SECONDS: u64 = 310_536_000;

/// A status threshold as Burrow's config writes it: a number (`threshold=2`) or, as
/// Sluice also accepts, a status name (`threshold="WARN"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threshold(pub Status);

impl Default for Threshold {
    fn default() -> Threshold {
        Threshold(Status::Warning)
    }
}

impl<'de> Deserialize<'de> for Threshold {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Threshold, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(i64),
            Name(String),
        }
        let statuses = [
            Status::NotFound,
            Status::Ok,
            Status::Warning,
            Status::Error,
            Status::Stop,
            Status::Stall,
            Status::Rewind,
        ];
        let found = match Raw::deserialize(deserializer)? {
            Raw::Number(number) => statuses.into_iter().find(|status| status.code() == number),
            Raw::Name(name) => {
                let upper = name.trim().to_ascii_uppercase();
                let upper = match upper.as_str() {
                    "WARNING" => "WARN",
                    "ERROR" => "ERR",
                    other => other,
                };
                statuses.into_iter().find(|status| status.as_str() == upper)
            }
        };
        found.map(Threshold).ok_or_else(|| {
            serde::de::Error::custom(
                "threshold is a status: 0-6 or NOTFOUND, OK, WARN, ERR, STOP, STALL, REWIND",
            )
        })
    }
}

/// `to` as Burrow writes it (`"a@x, b@y"`) or as a list.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Recipients {
    Joined(String),
    List(Vec<String>),
}

/// One `[notifier.NAME]` section as written. [`NotifierSettings::from_config`] validates
/// it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct NotifierConfig {
    pub class_name: Option<String>,
    pub group_allowlist: Option<String>,
    pub group_denylist: Option<String>,
    pub group_whitelist: Option<String>,
    pub group_blacklist: Option<String>,
    #[serde(default)]
    pub extras: BTreeMap<String, Value>,
    #[serde(default)]
    pub send_close: bool,
    #[serde(default)]
    pub send_once: bool,
    #[serde(default)]
    pub threshold: Threshold,
    pub interval: Option<u64>,
    pub send_interval: Option<u64>,
    pub template_open: Option<PathBuf>,
    pub template_close: Option<PathBuf>,
    // http
    pub url_open: Option<String>,
    pub url_close: Option<String>,
    pub method_open: Option<String>,
    pub method_close: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub timeout: Option<u64>,
    pub keepalive: Option<u64>,
    #[serde(default)]
    pub disable_http_keepalive: bool,
    pub extra_ca: Option<String>,
    #[serde(default)]
    pub noverify: bool,
    // http basic auth and email auth
    pub username: Option<String>,
    pub password: Option<String>,
    // email
    pub server: Option<String>,
    pub port: Option<u16>,
    pub auth_type: Option<String>,
    pub from: Option<String>,
    pub to: Option<Recipients>,
}

/// A username and password; the password never shows in `{:?}` (settings get logged).
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// An `http` notifier's validated settings.
#[derive(Clone, Debug)]
pub struct HttpSettings {
    pub url_open: Template,
    pub url_close: Option<Template>,
    pub method_open: Method,
    pub method_close: Method,
    /// `Content-Type: application/json` and then the configured headers, which win;
    /// configured values are marked sensitive (a token does not show in `{:?}`).
    pub headers: HeaderMap,
    pub basic_auth: Option<Credentials>,
    pub timeout: Duration,
    pub keepalive: Duration,
    pub connection_reuse: bool,
    /// `extra-ca`: certificates trusted for `https://` besides the system's roots.
    pub extra_ca: Vec<reqwest::Certificate>,
    /// False with `noverify`: any certificate is accepted, for any host name.
    pub verify_certificates: bool,
}

/// An `email` notifier's validated settings.
#[derive(Clone, Debug)]
pub struct EmailSettings {
    pub server: String,
    pub port: u16,
    /// `auth-type plain`.
    pub plain_auth: Option<Credentials>,
    pub from: String,
    pub to: Vec<String>,
    pub timeout: Duration,
}

// One per notifier, built once at startup and never moved in a loop: the bytes an http
// notifier's settings take beyond an email one's cost nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Transport {
    Http(HttpSettings),
    Email(EmailSettings),
}

/// A notifier ready to start: what it alerts on, what it sends, and how.
#[derive(Clone, Debug)]
pub struct NotifierSettings {
    pub name: String,
    pub rules: AlertRules,
    /// How often Burrow evaluates each group for this notifier (`interval`).
    pub interval: Duration,
    pub extras: BTreeMap<String, String>,
    pub template_open: Template,
    pub template_close: Option<Template>,
    pub transport: Transport,
}

const HTTP_TIMEOUT_DEFAULT_SECONDS: u64 = 5;
const HTTP_KEEPALIVE_DEFAULT_SECONDS: u64 = 300;
const SMTP_TIMEOUT_DEFAULT_SECONDS: u64 = 30;
/// An `extra-ca` file larger than this is refused: Debian's whole bundle of trusted roots
/// (144 certificates) is about a fifth of it.
const EXTRA_CA_BYTES_MAX: u64 = 1024 * 1024;
const INTERVAL_DEFAULT_SECONDS: u64 = 60;

impl NotifierSettings {
    /// Every `[notifier.*]` section, as [`crate::config::Config::notifiers`] holds them.
    pub fn from_configs(
        sections: &BTreeMap<String, Value>,
    ) -> Result<Vec<NotifierSettings>, NotifierError> {
        sections
            .iter()
            .map(|(name, section)| {
                let config = NotifierConfig::deserialize(section)
                    .map_err(|error| invalid(name, error.to_string()))?;
                NotifierSettings::from_config(name, &config)
            })
            .collect()
    }

    pub fn from_config(
        name: &str,
        config: &NotifierConfig,
    ) -> Result<NotifierSettings, NotifierError> {
        let fail = |message: String| invalid(name, message);
        if config.group_whitelist.is_some() || config.group_blacklist.is_some() {
            return Err(fail(
                "group-whitelist and group-blacklist are now group-allowlist and group-denylist \
                 (Burrow refuses the old names too)"
                    .to_string(),
            ));
        }
        let class = match config.class_name.as_deref() {
            Some("http") => Class::Http,
            Some("email") => Class::Email,
            Some(other) => {
                return Err(fail(format!(
                    "class-name {other:?}: Sluice has the http and email notifiers"
                )));
            }
            None => return Err(fail("class-name is required (http or email)".to_string())),
        };
        let regex = |key: &str, pattern: &Option<String>| -> Result<Option<Regex>, NotifierError> {
            match pattern.as_deref() {
                None | Some("") => Ok(None),
                Some(pattern) => Regex::new(pattern)
                    .map(Some)
                    .map_err(|error| invalid(name, format!("{key}: {error}"))),
            }
        };
        let interval_seconds = config.interval.unwrap_or(INTERVAL_DEFAULT_SECONDS);
        let send_interval_seconds = config.send_interval.unwrap_or(interval_seconds);
        let rules = AlertRules {
            allowlist: regex("group-allowlist", &config.group_allowlist)?,
            denylist: regex("group-denylist", &config.group_denylist)?,
            threshold: config.threshold.0,
            send_interval: Duration::from_secs(send_interval_seconds),
            send_once: config.send_once,
            send_close: config.send_close,
        };
        let mut extras = BTreeMap::new();
        for (key, value) in &config.extras {
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Number(number) => number.to_string(),
                Value::Bool(flag) => flag.to_string(),
                _ => return Err(fail(format!("extras.{key}: a string, number or boolean"))),
            };
            extras.insert(key.clone(), text);
        }
        let load = |path: &Option<PathBuf>, kind| -> Result<Template, NotifierError> {
            match path {
                // An empty path is what Burrow's viper reads for a missing key.
                Some(path) if !path.as_os_str().is_empty() => {
                    Template::load(path).map_err(|source| NotifierError::Template {
                        name: name.to_string(),
                        source,
                    })
                }
                _ => default_template(name, class, kind),
            }
        };
        let template_open = load(&config.template_open, NotificationKind::Open)?;
        let template_close = if config.send_close {
            Some(load(&config.template_close, NotificationKind::Close)?)
        } else {
            None
        };
        let transport = match class {
            Class::Http => Transport::Http(http_settings(name, config)?),
            Class::Email => Transport::Email(email_settings(name, config)?),
        };
        Ok(NotifierSettings {
            name: name.to_string(),
            rules,
            interval: Duration::from_secs(interval_seconds),
            extras,
            template_open,
            template_close,
            transport,
        })
    }
}

fn invalid(name: &str, message: impl Into<String>) -> NotifierError {
    NotifierError::Config {
        name: name.to_string(),
        message: message.into(),
    }
}

fn url_template(name: &str, key: &str, url: &str) -> Result<Template, NotifierError> {
    Template::parse(key.to_string(), url).map_err(|source| NotifierError::Template {
        name: name.to_string(),
        source,
    })
}

/// Go's 0 means no timeout; a send that can hang forever would hold its queue slot
/// forever, so Sluice asks for a number of seconds.
fn timeout(name: &str, seconds: Option<u64>, default: u64) -> Result<Duration, NotifierError> {
    match seconds.unwrap_or(default) {
        0 => Err(invalid(name, "timeout is at least 1 second")),
        seconds => Ok(Duration::from_secs(seconds)),
    }
}

fn method(
    name: &str,
    key: &str,
    value: Option<&str>,
    default: Method,
) -> Result<Method, NotifierError> {
    match value {
        None | Some("") => Ok(default),
        Some(text) => Method::from_bytes(text.as_bytes())
            .map_err(|_| invalid(name, format!("{key} {text:?} is not an HTTP method"))),
    }
}

fn http_settings(name: &str, config: &NotifierConfig) -> Result<HttpSettings, NotifierError> {
    let url_open = match config.url_open.as_deref() {
        None | Some("") => return Err(invalid(name, "url-open is required for an http notifier")),
        Some(url) => url_template(name, "url-open", url)?,
    };
    // Burrow requires url-close with send-close, yet its own sample config sets
    // send-close and method-close DELETE without one: the event's URL is meant.
    let url_close = if config.send_close {
        match config.url_close.as_deref() {
            None | Some("") => Some(url_open.clone()),
            Some(url) => Some(url_template(name, "url-close", url)?),
        }
    } else {
        None
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    for (header, value) in &config.headers {
        let header_name = HeaderName::from_bytes(header.as_bytes())
            .map_err(|_| invalid(name, format!("headers: {header:?} is not a header name")))?;
        let mut header_value = HeaderValue::from_str(value)
            .map_err(|_| invalid(name, format!("headers.{header}: not a valid header value")))?;
        header_value.set_sensitive(true);
        headers.insert(header_name, header_value);
    }
    let basic_auth = match config.username.as_deref() {
        None | Some("") => None,
        Some(username) => Some(Credentials {
            username: username.to_string(),
            password: config.password.clone().unwrap_or_default(),
        }),
    };
    Ok(HttpSettings {
        url_open,
        url_close,
        method_open: method(
            name,
            "method-open",
            config.method_open.as_deref(),
            Method::POST,
        )?,
        method_close: method(
            name,
            "method-close",
            config.method_close.as_deref(),
            Method::POST,
        )?,
        headers,
        basic_auth,
        timeout: timeout(name, config.timeout, HTTP_TIMEOUT_DEFAULT_SECONDS)?,
        keepalive: Duration::from_secs(config.keepalive.unwrap_or(HTTP_KEEPALIVE_DEFAULT_SECONDS)),
        connection_reuse: !config.disable_http_keepalive,
        extra_ca: extra_ca(name, config)?,
        verify_certificates: !config.noverify,
    })
}

/// Burrow's `extra-ca` and `noverify`. As in Burrow, `noverify` makes `extra-ca`
/// moot and it is not read. Unlike Burrow, a file with no certificate in it is an error
/// (Burrow logs that it uses the system's roots only), found here rather than as a
/// certificate refused at the first alert.
fn extra_ca(
    name: &str,
    config: &NotifierConfig,
) -> Result<Vec<reqwest::Certificate>, NotifierError> {
    if config.noverify {
        let unused = if config.extra_ca.is_some() {
            " (its extra-ca is not used)"
        } else {
            ""
        };
        tracing::warn!(
            notifier = name,
            "noverify is set: the certificates of https:// endpoints are not checked, so \
             anyone on the network path can read and change this notifier's notifications{unused}"
        );
        return Ok(Vec::new());
    }
    let path = match config.extra_ca.as_deref() {
        None | Some("") => return Ok(Vec::new()),
        Some(path) => path,
    };
    let read_error = |error: std::io::Error| invalid(name, format!("extra-ca {path:?}: {error}"));
    let size = std::fs::metadata(path).map_err(read_error)?.len();
    if size > EXTRA_CA_BYTES_MAX {
        return Err(invalid(
            name,
            format!(
                "extra-ca {path:?}: {size} bytes is more than the {EXTRA_CA_BYTES_MAX} a CA file may have"
            ),
        ));
    }
    let pem = std::fs::read(path).map_err(read_error)?;
    let certificates = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|error| invalid(name, format!("extra-ca {path:?}: {error}")))?;
    if certificates.is_empty() {
        return Err(invalid(
            name,
            format!("extra-ca {path:?}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it"),
        ));
    }
    Ok(certificates)
}

fn is_local_host(server: &str) -> bool {
    let host = server.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// An address for a header or an SMTP command: nothing that could end a line or the
/// `<...>` it is written in.
fn address(name: &str, key: &str, text: &str) -> Result<String, NotifierError> {
    let text = text.trim();
    if text.is_empty() || text.contains(['\r', '\n', '<', '>']) || !text.contains('@') {
        return Err(invalid(
            name,
            format!("{key} {text:?} is not an email address"),
        ));
    }
    Ok(text.to_string())
}

fn email_settings(name: &str, config: &NotifierConfig) -> Result<EmailSettings, NotifierError> {
    if config.extra_ca.is_some() || config.noverify {
        return Err(invalid(
            name,
            "extra-ca and noverify configure TLS, which this build's email notifier does not \
             speak (its SMTP client has no STARTTLS)",
        ));
    }
    let server = match config.server.as_deref().map(str::trim) {
        None | Some("") => return Err(invalid(name, "server is required for an email notifier")),
        Some(server) => server.to_string(),
    };
    let port = match config.port {
        None | Some(0) => return Err(invalid(name, "port is required for an email notifier")),
        Some(port) => port,
    };
    let from = address(name, "from", config.from.as_deref().unwrap_or_default())?;
    let to = match &config.to {
        None => return Err(invalid(name, "to is required for an email notifier")),
        Some(Recipients::Joined(joined)) => joined
            .split(',')
            .map(|recipient| address(name, "to", recipient))
            .collect::<Result<Vec<_>, _>>()?,
        Some(Recipients::List(list)) => list
            .iter()
            .map(|recipient| address(name, "to", recipient))
            .collect::<Result<Vec<_>, _>>()?,
    };
    if to.is_empty() {
        return Err(invalid(name, "to names no recipient"));
    }
    let plain_auth = match config
        .auth_type
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("") => None,
        Some("plain") => {
            if !is_local_host(&server) {
                return Err(invalid(
                    name,
                    format!(
                        "auth-type plain to {server}: the password would cross the network \
                         unencrypted (this build's SMTP client has no STARTTLS); use a relay \
                         on this host"
                    ),
                ));
            }
            Some(Credentials {
                username: config.username.clone().unwrap_or_default(),
                password: config.password.clone().unwrap_or_default(),
            })
        }
        Some(other) => {
            return Err(invalid(
                name,
                format!("auth-type {other:?}: Sluice supports plain or none"),
            ));
        }
    };
    Ok(EmailSettings {
        server,
        port,
        plain_auth,
        from,
        to,
        timeout: timeout(name, config.timeout, SMTP_TIMEOUT_DEFAULT_SECONDS)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template_dir() -> String {
        format!("{}/tests/data/burrow-templates", env!("CARGO_MANIFEST_DIR"))
    }

    /// Burrow's sample `[notifier.default]`, with its template paths pointed at the copies
    /// in tests/data and its close template's `.Id` mended (see that directory's README).
    fn burrows_sample(directory: &std::path::Path) -> String {
        let close = std::fs::read_to_string(format!("{}/default-http-delete.tmpl", template_dir()))
            .expect("Burrow's close template")
            .replace(".Id", ".ID");
        let close_path = directory.join("delete.tmpl");
        std::fs::write(&close_path, close).expect("written");
        format!(
            r#"
class-name="http"
url-open="http://someservice.example.com:1467/v1/event"
interval=60
timeout=5
keepalive=30
extras={{ api_key="REDACTED", app="burrow", tier="STG", fabric="mydc" }}
template-open="{}/default-http-post.tmpl"
template-close="{}"
method-close="DELETE"
send-close=true
threshold=1
"#,
            template_dir(),
            close_path.display()
        )
    }

    fn settings_from_toml(text: &str) -> Result<NotifierSettings, NotifierError> {
        let value: toml::Value = toml::from_str(text).expect("valid TOML");
        let json = serde_json::to_value(value).expect("TOML is JSON-able");
        let sections = BTreeMap::from([("default".to_string(), json)]);
        NotifierSettings::from_configs(&sections).map(|mut all| all.remove(0))
    }

    #[test]
    fn burrows_sample_reads_with_burrows_defaults() {
        let directory = tempfile::tempdir().expect("a temp dir");
        let settings = settings_from_toml(&burrows_sample(directory.path())).expect("valid");
        assert_eq!(settings.rules.threshold, Status::Ok);
        assert_eq!(settings.rules.send_interval, Duration::from_secs(60));
        assert!(settings.rules.send_close && !settings.rules.send_once);
        assert_eq!(settings.extras["api_key"], "REDACTED");
        let Transport::Http(http) = &settings.transport else {
            panic!("an http notifier");
        };
        assert_eq!(
            (http.method_open.as_str(), http.method_close.as_str()),
            ("POST", "DELETE")
        );
        assert_eq!(http.timeout, Duration::from_secs(5));
        assert_eq!(http.keepalive, Duration::from_secs(30));
        assert_eq!(http.headers["content-type"], "application/json");
        assert!(settings.template_close.is_some());
        // Burrow's sample has no url-close: the open URL is used.
        assert_eq!(
            http.url_close.as_ref().map(Template::name),
            Some("url-open")
        );
    }

    #[test]
    fn defaults_are_burrows() {
        let text = format!(
            "class-name=\"http\"\nurl-open=\"http://h/x\"\ntemplate-open=\"{}/default-http-post.tmpl\"\n",
            template_dir()
        );
        let settings = settings_from_toml(&text).expect("valid");
        assert_eq!(settings.rules.threshold, Status::Warning);
        assert_eq!(settings.interval, Duration::from_secs(60));
        assert_eq!(settings.rules.send_interval, Duration::from_secs(60));
        let Transport::Http(http) = &settings.transport else {
            panic!("an http notifier");
        };
        assert_eq!(
            (http.method_open.as_str(), http.method_close.as_str()),
            ("POST", "POST")
        );
        assert_eq!(http.keepalive, Duration::from_secs(300));
        let named = settings_from_toml(&format!("{text}threshold=\"stop\"\nsend-interval=5\n"))
            .expect("valid");
        assert_eq!(named.rules.threshold, Status::Stop);
        assert_eq!(named.rules.send_interval, Duration::from_secs(5));
    }

    #[test]
    fn bad_sections_are_refused_naming_the_key() {
        let open = format!(
            "template-open=\"{}/default-http-post.tmpl\"\n",
            template_dir()
        );
        let email = format!(
            "class-name=\"email\"\nserver=\"127.0.0.1\"\nport=25\nfrom=\"a@x\"\nto=\"b@y\"\n{open}"
        );
        let cases: Vec<(String, &str)> =
            vec![
            (
                "class-name=\"slack\"\n".to_string() + &open,
                "class-name \"slack\"",
            ),
            (
                "class-name=\"http\"\n".to_string() + &open,
                "url-open is required",
            ),
            (
                "url-open=\"http://h\"\n".to_string() + &open,
                "class-name is required",
            ),
            (
                "class-name=\"http\"\nurl-open=\"http://h/{{.Nope}}\"\n".to_string() + &open,
                "can't evaluate field Nope",
            ),
            (
                "class-name=\"http\"\nurl-open=\"http://h\"\ngroup-allowlist=\"(\"\n".to_string()
                    + &open,
                "group-allowlist:",
            ),
            (
                "class-name=\"http\"\nurl-open=\"http://h\"\ngroup-whitelist=\"x\"\n".to_string()
                    + &open,
                "group-allowlist and group-denylist",
            ),
            (
                "class-name=\"http\"\nurl-open=\"http://h\"\nmethod-open=\"PO ST\"\n".to_string()
                    + &open,
                "not an HTTP method",
            ),
            (
                "class-name=\"http\"\nurl-open=\"http://h\"\nthreshold=9\n".to_string() + &open,
                "threshold is a status",
            ),
            (
                "class-name=\"http\"\nurl-open=\"https://h\"\nextra-ca=\"/nonexistent/ca.pem\"\n"
                    .to_string()
                    + &open,
                "extra-ca \"/nonexistent/ca.pem\": No such file",
            ),
            (
                "class-name=\"http\"\nurl-open=\"https://h\"\n".to_string()
                    + &format!("extra-ca=\"{}/default-http-post.tmpl\"\n", template_dir())
                    + &open,
                "no PEM certificate",
            ),
            (email.clone() + "noverify=true\n", "no STARTTLS"),
            (email.clone() + "extra-ca=\"/etc/ssl/ca.pem\"\n", "no STARTTLS"),
            (
                "class-name=\"http\"\nurl-open=\"http://h\"\ntemplat-open=\"x\"\n".to_string()
                    + &open,
                "unknown field `templat-open`",
            ),
            (
                email.replace("127.0.0.1", "mail.example.com") + "auth-type=\"plain\"\n",
                "unencrypted",
            ),
            (email.clone() + "auth-type=\"crammd5\"\n", "plain or none"),
            (
                email.replace("\"b@y\"", "\"b@y, nobody\""),
                "\"nobody\" is not an email address",
            ),
            (email.replace("port=25\n", ""), "port is required"),
            (
                email.clone() + "timeout=0\n",
                "timeout is at least 1 second",
            ),
            (
                "class-name=\"http\"\nurl-open=\"http://h\"\n".to_string()
                    + &open.replace("default-http-post", "missing"),
                "missing.tmpl",
            ),
        ];
        for (text, expected) in cases {
            let error = settings_from_toml(&text).expect_err(&text).to_string();
            assert!(error.starts_with("notifier.default: "), "{error}");
            assert!(
                error.contains(expected),
                "{text}\n{error}\nlacks {expected:?}"
            );
        }
    }

    #[test]
    fn email_sections_read_recipients_and_local_plain_auth() {
        let text = format!(
            "class-name=\"email\"\nserver=\"localhost\"\nport=2525\nauth-type=\"PLAIN\"\n\
             username=\"u\"\npassword=\"p\"\nfrom=\"burrow@example.com\"\n\
             to=\"ops@example.com, dba@example.com\"\ntemplate-open=\"{}/default-email.tmpl\"\n",
            template_dir()
        );
        let settings = settings_from_toml(&text).expect("valid");
        let Transport::Email(email) = &settings.transport else {
            panic!("an email notifier");
        };
        assert_eq!(email.to, ["ops@example.com", "dba@example.com"]);
        let credentials = email.plain_auth.as_ref().expect("plain auth");
        assert_eq!(
            (credentials.username.as_str(), credentials.password.as_str()),
            ("u", "p")
        );
        assert!(
            !format!("{settings:?}").contains("\"p\""),
            "the password shows: {settings:?}"
        );
        assert_eq!(email.timeout, Duration::from_secs(30));
    }

    /// Without template-open and template-close, Sluice's built-in templates, for the
    /// notifier's class; a path still wins.
    #[test]
    fn missing_templates_are_the_built_in_ones() {
        let names = |text: &str| {
            let settings = settings_from_toml(text).expect("valid");
            (
                settings.template_open.name().to_string(),
                settings
                    .template_close
                    .map(|close| close.name().to_string()),
            )
        };
        assert_eq!(
            names(
                "class-name=\"http\"\nurl-open=\"https://hooks.slack.com/services/x\"\nsend-close=true\n"
            ),
            (
                "(built-in) default-http-open.tmpl".to_string(),
                Some("(built-in) default-http-close.tmpl".to_string())
            )
        );
        assert_eq!(
            names("class-name=\"http\"\nurl-open=\"http://h\"\ntemplate-open=\"\"\n"),
            ("(built-in) default-http-open.tmpl".to_string(), None)
        );
        let email = "class-name=\"email\"\nserver=\"127.0.0.1\"\nport=25\nfrom=\"a@x\"\nto=\"b@y\"\nsend-close=true\n";
        assert_eq!(
            names(email),
            (
                "(built-in) default-email-open.tmpl".to_string(),
                Some("(built-in) default-email-close.tmpl".to_string())
            )
        );
        let open = format!("{}/default-email.tmpl", template_dir());
        assert_eq!(
            names(&format!("{email}template-open=\"{open}\"\n")),
            (
                open,
                Some("(built-in) default-email-close.tmpl".to_string())
            )
        );
    }

    /// The guide's `burrow_config` block (event-streaming guide, "Burrow") exactly as
    /// written, read as the monitor reads YAML: its Slack notifier loads.
    #[test]
    fn the_guides_slack_notifier_loads_as_written() {
        let guide = r#"
burrow_config:
  general:
    pidfile: "/var/run/burrow.pid"
    stdout-logfile: "/var/log/burrow.log"

  cluster:
    kafka-prod:
      class-name: kafka
      servers: ["broker1:9092", "broker2:9092", "broker3:9092"]
      topic-refresh: 120
      offset-refresh: 30

  notifier:
    slack:
      class-name: http
      url-open: "https://hooks.slack.com/services/xxx/yyy/zzz"
      send-close: true
"#;
        let config = crate::config::Config::from_yaml(guide, "guide.yaml").expect("valid YAML");
        let settings = NotifierSettings::from_configs(&config.notifiers).expect("valid notifier");
        let [slack] = settings.as_slice() else {
            panic!("one notifier: {settings:?}");
        };
        assert_eq!(slack.name, "slack");
        assert!(slack.rules.send_close);
        let Transport::Http(http) = &slack.transport else {
            panic!("an http notifier");
        };
        assert_eq!(http.method_close, Method::POST);
        assert!(http.verify_certificates && http.extra_ca.is_empty());
        assert_eq!(
            slack.template_close.as_ref().map(Template::name),
            Some("(built-in) default-http-close.tmpl")
        );
    }

    #[test]
    fn a_huge_extra_ca_file_is_refused() {
        let directory = tempfile::tempdir().expect("a temp dir");
        let path = directory.path().join("huge.pem");
        std::fs::write(&path, vec![b'-'; EXTRA_CA_BYTES_MAX as usize + 1]).expect("written");
        let text = format!(
            "class-name=\"http\"\nurl-open=\"https://h\"\nextra-ca=\"{}\"\n",
            path.display()
        );
        let error = settings_from_toml(&text)
            .expect_err("too large")
            .to_string();
        assert!(error.contains("more than the 1048576"), "{error}");
    }

    #[test]
    fn noverify_turns_verification_off_and_skips_extra_ca() {
        let text = "class-name=\"http\"\nurl-open=\"https://h\"\nnoverify=true\n\
                    extra-ca=\"/nonexistent/ca.pem\"\n";
        let settings = settings_from_toml(text).expect("valid: extra-ca is not read");
        let Transport::Http(http) = &settings.transport else {
            panic!("an http notifier");
        };
        assert!(!http.verify_certificates && http.extra_ca.is_empty());
    }
}
