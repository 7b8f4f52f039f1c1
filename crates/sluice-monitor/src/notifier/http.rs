//! The `http` notifier: one request per notification, as Burrow's `HTTPNotifier` makes
//! it. The open template renders the body and `url-open` (itself a template:
//! `http://alerts/v1/event?id={{.ID}}`) the URL, sent with `method-open`; a close uses
//! the close template, `url-close` and `method-close`. Every request carries
//! `Content-Type: application/json`, then the configured `headers` (which may replace
//! it), and basic auth when `username` is set. A 2xx answer is success.
//!
//! `https://` as Burrow speaks it: the system's trusted roots (rustls with ring, the TLS
//! object_store already builds; see this crate's Cargo.toml), plus the certificates of
//! `extra-ca`, or no verification at all with `noverify`. A certificate refused is a
//! failed attempt like a connection refused: logged with rustls's reason and retried (a
//! server's certificate gets renewed, a clock gets fixed).

use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};

use super::config::{Credentials, HttpSettings};
use super::delivery::DeliveryError;

/// How much of a response body is read (and thrown away) so the connection can be
/// reused; a longer body is cut off and the connection dropped.
const RESPONSE_BYTES_MAX: usize = 64 * 1024;
/// Causes of a failed request written into its log line, at most.
const CAUSES_MAX: usize = 8;

/// A rendered request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HttpRequest {
    pub method: Method,
    pub url: String,
    pub body: String,
}

pub(crate) struct HttpTransport {
    client: reqwest::Client,
    headers: HeaderMap,
    basic_auth: Option<Credentials>,
}

impl HttpTransport {
    pub(crate) fn new(settings: &HttpSettings) -> Result<HttpTransport, String> {
        let mut builder = reqwest::Client::builder()
            .timeout(settings.timeout)
            .tcp_keepalive(settings.keepalive);
        if !settings.connection_reuse {
            builder = builder.pool_max_idle_per_host(0);
        }
        for certificate in &settings.extra_ca {
            builder = builder.add_root_certificate(certificate.clone());
        }
        if !settings.verify_certificates {
            builder = builder.danger_accept_invalid_certs(true);
        }
        let client = builder
            .build()
            .map_err(|error| format!("cannot build the HTTP client: {error}"))?;
        Ok(HttpTransport {
            client,
            headers: settings.headers.clone(),
            basic_auth: settings.basic_auth.clone(),
        })
    }

    pub(crate) async fn send(&self, request: &HttpRequest) -> Result<(), DeliveryError> {
        let scheme_is = |scheme: &str| {
            request
                .url
                .get(..scheme.len())
                .is_some_and(|start| start.eq_ignore_ascii_case(scheme))
        };
        if !scheme_is("http://") && !scheme_is("https://") {
            return Err(DeliveryError {
                retryable: false,
                message: format!(
                    "{:?} is not an http:// or https:// URL",
                    redacted(&request.url)
                ),
            });
        }
        let mut builder = self
            .client
            .request(request.method.clone(), &request.url)
            .headers(self.headers.clone())
            .body(request.body.clone());
        if let Some(credentials) = &self.basic_auth {
            builder = builder.basic_auth(&credentials.username, Some(&credentials.password));
        }
        let mut response = builder.send().await.map_err(|error| DeliveryError {
            // A URL that does not parse will not parse next time either.
            retryable: !error.is_builder(),
            message: format!(
                "{} {}: {}",
                request.method,
                redacted(&request.url),
                causes(&error.without_url())
            ),
        })?;
        let status = response.status();
        let mut read = 0;
        while read < RESPONSE_BYTES_MAX {
            match response.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                _ => break,
            }
        }
        if status.is_success() {
            return Ok(());
        }
        Err(DeliveryError {
            retryable: retryable_status(status),
            message: format!(
                "{} {}: the endpoint answered {status}",
                request.method,
                redacted(&request.url)
            ),
        })
    }
}

/// A URL as logs show it: scheme, host and port only. A webhook's path and query often
/// are its secret (a Slack incoming webhook's token), and a log is no place for one.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "(not a URL)".to_string();
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    // Credentials in the authority (`user:pass@host`) are a secret too.
    let host = authority.rsplit('@').next().unwrap_or("");
    if authority.len() == rest.len() {
        format!("{scheme}://{host}")
    } else {
        format!("{scheme}://{host}/…")
    }
}

/// An error and its causes, outermost first: reqwest's own text says only "error sending
/// request"; why (connection refused, a certificate's unknown issuer) is in its sources.
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    // Bounded: a cycle of sources would otherwise loop forever.
    for _ in 0..CAUSES_MAX {
        let Some(cause) = source else {
            break;
        };
        let cause_text = cause.to_string();
        // Layers often repeat the text of the one below them.
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Worth another try: the endpoint is overloaded, restarting or timed out.
fn retryable_status(status: StatusCode) -> bool {
    status.is_server_error()
        || status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
}

#[cfg(test)]
mod tests {
    #[test]
    fn logged_urls_keep_only_scheme_host_and_port() {
        for (url, shown) in [
            (
                "https://hooks.slack.com/services/T0/B0/secret",
                "https://hooks.slack.com/…",
            ),
            (
                "http://user:pass@127.0.0.1:8080/x?token=1",
                "http://127.0.0.1:8080/…",
            ),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("nonsense", "(not a URL)"),
        ] {
            assert_eq!(super::redacted(url), shown, "{url}");
        }
    }

    use super::*;

    /// An error with a text and a cause, as hyper and rustls nest theirs.
    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|layer| layer as _)
        }
    }

    #[test]
    fn a_failure_names_its_causes_once_each() {
        let certificate = Layer("invalid peer certificate: UnknownIssuer", None);
        let io = Layer(
            "invalid peer certificate: UnknownIssuer",
            Some(Box::new(certificate)),
        );
        let connect = Layer("client error (Connect)", Some(Box::new(io)));
        let outer = Layer("error sending request", Some(Box::new(connect)));
        assert_eq!(
            causes(&outer),
            "error sending request: client error (Connect): invalid peer certificate: \
             UnknownIssuer"
        );
    }

    #[test]
    fn only_transient_answers_are_retried() {
        let cases = [
            (500, true),
            (503, true),
            (429, true),
            (408, true),
            (400, false),
            (404, false),
            (301, false),
        ];
        for (code, retryable) in cases {
            let status = StatusCode::from_u16(code).expect("a status");
            assert_eq!(retryable_status(status), retryable, "{code}");
        }
    }
}
