//! TLS on `SSL` and `SASL_SSL` listeners (rustls with the ring provider), configured with
//! Kafka's `ssl.*` keys, each read first as `listener.name.<listener>.ssl.*` and then
//! without the prefix, as Kafka reads them:
//!
//! - The server's key and certificate chain: `ssl.keystore.type=PEM` with
//!   `ssl.keystore.location` (a PEM file holding the private key and the chain) or with
//!   `ssl.keystore.certificate.chain` and `ssl.keystore.key` (PEM text); the key as
//!   PKCS#8, PKCS#1 or SEC1, or encrypted PKCS#8 (PBES2) with `ssl.key.password`.
//!   PKCS12 and JKS stores are refused at load, naming the key (no pure-Rust reader is
//!   used for them yet).
//! - The trusted certificates for client certificates: `ssl.truststore.type=PEM` with
//!   `ssl.truststore.location` or `ssl.truststore.certificates`.
//! - `ssl.client.auth` none | requested | required (on `SASL_SSL` only the listener's own
//!   `listener.name.<l>.ssl.client.auth` counts, as in Kafka since KIP-684);
//!   `ssl.enabled.protocols` (TLSv1.2, TLSv1.3), `ssl.protocol`; `ssl.cipher.suites` by
//!   their IANA (and Java) names.
//! - `ssl.principal.mapping.rules`: an `SSL` connection's principal is
//!   `User:<mapped subject DN>` of its client certificate ([`principal`]), or
//!   `User:ANONYMOUS` without one; on `SASL_SSL` the SASL user.
//!
//! Everything is read and checked when the configuration loads: a missing or unreadable
//! file, a key that does not match its certificate, an unknown protocol or cipher suite
//! is a [`ConfigError`] naming the key (never a password or a key's text).
//!
//! A node's dynamic `listener.name.<l>.ssl.keystore.*` and `ssl.truststore.*` configs
//! rebuild that listener's settings when they change ([`TlsListeners`]): certificates
//! rotate without a restart, as with Kafka's `kafka-configs --alter --entity-type
//! brokers`.

pub mod principal;

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use crate::principal::Principal;
pub use crate::refused::Refused;
use crate::security_protocol::SecurityProtocol;
pub use principal::{PrincipalMapper, subject_dn};

/// The `ssl.*` keys Sluice reads, with or without a `listener.name.<l>.` prefix.
/// `ssl.endpoint.identification.algorithm`, `ssl.keymanager.algorithm`,
/// `ssl.trustmanager.algorithm`, `ssl.secure.random.implementation` and `ssl.provider`
/// are accepted and have no effect (they choose Java classes or apply to a client).
pub const SSL_KEYS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.protocol",
    "ssl.cipher.suites",
    "ssl.principal.mapping.rules",
    "ssl.endpoint.identification.algorithm",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation",
    "ssl.provider",
    "ssl.engine.factory.class",
];

/// Whether `key` is one of [`SSL_KEYS`].
pub fn is_ssl_key(key: &str) -> bool {
    SSL_KEYS.contains(&key)
}

/// `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Requested,
    Required,
}

/// A TLS listener's settings, checked and built at load.
pub struct ListenerTls {
    pub protocol: SecurityProtocol,
    pub client_auth: ClientAuth,
    pub principal_mapper: PrincipalMapper,
    acceptor: TlsAcceptor,
    /// The effective `ssl.*` values it was built from (equality; never printed).
    source: Vec<(&'static str, Option<String>)>,
}

impl std::fmt::Debug for ListenerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenerTls")
            .field("protocol", &self.protocol)
            .field("client_auth", &self.client_auth)
            .field("principal_mapper", &self.principal_mapper.to_string())
            .finish_non_exhaustive()
    }
}

impl PartialEq for ListenerTls {
    fn eq(&self, other: &Self) -> bool {
        self.protocol == other.protocol && self.source == other.source
    }
}
impl Eq for ListenerTls {}

/// What a finished handshake gives the connection.
pub struct Handshake {
    pub stream: tokio_rustls::server::TlsStream<TcpStream>,
    /// On `SSL`: the client certificate's mapped principal, else ANONYMOUS. On `SASL_SSL`
    /// ANONYMOUS until SASL authenticates.
    pub principal: Principal,
}

impl ListenerTls {
    /// The TLS handshake on an accepted connection, and the principal it proves.
    pub async fn accept(&self, stream: TcpStream) -> Result<Handshake, String> {
        let stream = self
            .acceptor
            .accept(stream)
            .await
            .map_err(|error| format!("TLS handshake failed: {error}"))?;
        let mut principal = Principal::anonymous();
        if self.protocol == SecurityProtocol::Ssl
            && let Some(certificate) = stream
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
        {
            let dn = subject_dn(certificate)?;
            let Some(name) = self.principal_mapper.name(&dn) else {
                return Err(format!(
                    "no ssl.principal.mapping.rules rule applies to {dn} ({})",
                    self.principal_mapper
                ));
            };
            principal = Principal {
                principal_type: "User".into(),
                name,
            };
        }
        Ok(Handshake { stream, principal })
    }
}

/// Where a listener's `ssl.*` keys are read from: the broker's configuration
/// (`crate::config::BrokerConfig` implements it), kept abstract so that the TLS layer
/// does not depend on the configuration module that holds its settings.
pub trait SslKeySource {
    /// `listener.name.<listener>.<key>` only.
    fn listener_value(&self, listener: &str, key: &str) -> Option<&str>;
    /// The listener's value, else the broker-wide one.
    fn security_value(&self, listener: &str, key: &str) -> Option<&str>;
}

/// Reads a listener's `ssl.*` keys: its `listener.name.<l>.` form, else the broker's.
struct Keys<'a> {
    config: &'a dyn SslKeySource,
    listener: &'a str,
    protocol: SecurityProtocol,
}

impl Keys<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.config
            .security_value(self.listener, key)
            .map(str::trim)
            .filter(|value| !value.is_empty())
    }

    /// The key as the operator wrote it: prefixed when the listener sets it.
    fn name(&self, key: &str) -> String {
        if self.config.listener_value(self.listener, key).is_some() {
            format!("listener.name.{}.{key}", self.listener.to_lowercase())
        } else {
            key.to_string()
        }
    }

    fn refuse(&self, key: &str, value: &str, reason: impl Into<String>) -> Refused {
        Refused {
            key: self.name(key),
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}

/// PEM text with its certificates and private key, as parsed.
struct Pem {
    certificates: Vec<CertificateDer<'static>>,
    key: Option<PrivateKeyDer<'static>>,
    /// An `ENCRYPTED PRIVATE KEY` section's DER (PKCS#8 EncryptedPrivateKeyInfo).
    encrypted_key: Option<Vec<u8>>,
    /// A key encrypted the way OpenSSL's traditional format does (`Proc-Type`).
    legacy_encrypted_key: bool,
}

/// Reads PEM as Kafka's `PemStore` does: the sections between `-----BEGIN <label>-----`
/// and `-----END <label>-----`, whitespace anywhere in the base64 (so a value written on
/// one line of a properties file reads as well as a file); other text is ignored.
fn parse_pem(text: &[u8]) -> Result<Pem, String> {
    use rustls::pki_types::pem::{self, SectionKind};
    let text = String::from_utf8_lossy(text);
    let sections =
        regex::Regex::new(r"(?s)-----BEGIN ([A-Z0-9 ]+?)-----(.*?)-----END ([A-Z0-9 ]+?)-----")
            .expect("the PEM pattern compiles");
    let mut pem = Pem {
        certificates: Vec::new(),
        key: None,
        encrypted_key: None,
        legacy_encrypted_key: false,
    };
    for section in sections.captures_iter(&text) {
        let label = &section[1];
        let body = &section[2];
        if label != &section[3] {
            return Err(format!("PEM section {label} ends as {}", &section[3]));
        }
        if body.contains("Proc-Type:") {
            pem.legacy_encrypted_key = true;
            continue;
        }
        let base64: String = body.chars().filter(|c| !c.is_whitespace()).collect();
        if label == "ENCRYPTED PRIVATE KEY" {
            use base64::Engine as _;
            let der = base64::engine::general_purpose::STANDARD
                .decode(&base64)
                .map_err(|_| format!("PEM section {label} is not valid base64"))?;
            pem.encrypted_key = Some(der);
            continue;
        }
        let mut wrapped = format!("-----BEGIN {label}-----\n");
        for line in base64.as_bytes().chunks(64) {
            wrapped.push_str(&String::from_utf8_lossy(line));
            wrapped.push('\n');
        }
        wrapped.push_str(&format!("-----END {label}-----\n"));
        let mut reader = std::io::BufReader::new(wrapped.as_bytes());
        match pem::from_buf(&mut reader) {
            Ok(Some((kind, der))) => match kind {
                SectionKind::Certificate => pem.certificates.push(CertificateDer::from(der)),
                SectionKind::PrivateKey => pem.key = Some(PrivateKeyDer::Pkcs8(der.into())),
                SectionKind::RsaPrivateKey => pem.key = Some(PrivateKeyDer::Pkcs1(der.into())),
                SectionKind::EcPrivateKey => pem.key = Some(PrivateKeyDer::Sec1(der.into())),
                _ => {}
            },
            Ok(None) => {}
            // The error is not shown: it could quote a line of a key.
            Err(_) => return Err(format!("PEM section {label} is not valid base64")),
        }
    }
    Ok(pem)
}

/// The PEM text of a `*.location` key: the file's contents.
fn read_location(keys: &Keys<'_>, key: &str, path: &str) -> Result<Vec<u8>, Refused> {
    std::fs::read(path)
        .map_err(|error| keys.refuse(key, path, format!("cannot read the file: {error}")))
}

/// Checks a store type: PEM is read; PKCS12 and JKS are refused with what to do.
fn check_store_type(keys: &Keys<'_>, key: &str, store: &str) -> Result<(), Refused> {
    match store {
        "PEM" => Ok(()),
        "PKCS12" | "JKS" => Err(keys.refuse(
            key,
            store,
            format!(
                "{store} stores are not read by Sluice: convert to PEM (for example \
                 `openssl pkcs12 -in store.p12 -nodes`) and set {key}=PEM"
            ),
        )),
        other => Err(keys.refuse(
            key,
            other,
            "unknown store type: Sluice reads PEM".to_string(),
        )),
    }
}

/// The server's certificate chain and private key.
fn keystore(
    keys: &Keys<'_>,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), Refused> {
    let store = keys.get("ssl.keystore.type").unwrap_or("JKS");
    let inline_chain = keys.get("ssl.keystore.certificate.chain");
    let inline_key = keys.get("ssl.keystore.key");
    let location = keys.get("ssl.keystore.location");
    let (pem, source_key) = if inline_chain.is_some() || inline_key.is_some() {
        if location.is_some() {
            // Kafka refuses the same (a broker-wide location reaches every listener).
            return Err(keys.refuse(
                "ssl.keystore.key",
                "(hidden)",
                format!(
                    "Both SSL key store location and separate private key are specified \
                     ({} is set too)",
                    keys.name("ssl.keystore.location")
                ),
            ));
        }
        if store != "PEM" {
            return Err(keys.refuse(
                "ssl.keystore.type",
                store,
                "ssl.keystore.certificate.chain and ssl.keystore.key are read with \
                 ssl.keystore.type=PEM only",
            ));
        }
        let (Some(chain), Some(key)) = (inline_chain, inline_key) else {
            let missing = if inline_chain.is_none() {
                "ssl.keystore.certificate.chain"
            } else {
                "ssl.keystore.key"
            };
            return Err(keys.refuse(
                missing,
                "",
                "ssl.keystore.certificate.chain and ssl.keystore.key are set together",
            ));
        };
        let chain = parse_pem(chain.as_bytes())
            .map_err(|e| keys.refuse("ssl.keystore.certificate.chain", "(hidden)", e))?;
        let key_pem = parse_pem(key.as_bytes())
            .map_err(|e| keys.refuse("ssl.keystore.key", "(hidden)", e))?;
        (
            Pem {
                certificates: chain.certificates,
                key: key_pem.key,
                encrypted_key: key_pem.encrypted_key,
                legacy_encrypted_key: key_pem.legacy_encrypted_key,
            },
            "ssl.keystore.key",
        )
    } else if let Some(path) = location {
        check_store_type(keys, "ssl.keystore.type", store)?;
        if keys.get("ssl.keystore.password").is_some() {
            return Err(keys.refuse(
                "ssl.keystore.password",
                "(hidden)",
                "a PEM key store has no store password (as in Kafka): use \
                 ssl.key.password for an encrypted key",
            ));
        }
        let text = read_location(keys, "ssl.keystore.location", path)?;
        let pem = parse_pem(&text).map_err(|e| keys.refuse("ssl.keystore.location", path, e))?;
        (pem, "ssl.keystore.location")
    } else {
        return Err(keys.refuse(
            "ssl.keystore.location",
            "",
            format!(
                "listener {} is {}: set ssl.keystore.type=PEM with ssl.keystore.location, \
                 or ssl.keystore.certificate.chain and ssl.keystore.key",
                keys.listener,
                if keys.protocol == SecurityProtocol::Ssl {
                    "SSL"
                } else {
                    "SASL_SSL"
                }
            ),
        ));
    };
    let shown = |key: &str| {
        if key.ends_with(".location") {
            location.unwrap_or("").to_string()
        } else {
            "(hidden)".into()
        }
    };
    if pem.legacy_encrypted_key {
        return Err(keys.refuse(
            source_key,
            &shown(source_key),
            "the private key is encrypted in OpenSSL's traditional format (Proc-Type), which \
             Kafka does not read either: convert it to PKCS#8 (`openssl pkcs8 -topk8`)",
        ));
    }
    let mut key = pem.key;
    if let Some(encrypted) = &pem.encrypted_key {
        let Some(password) = keys.get("ssl.key.password") else {
            return Err(keys.refuse(
                source_key,
                &shown(source_key),
                "the private key is encrypted and no ssl.key.password is set",
            ));
        };
        let info =
            pkcs8::EncryptedPrivateKeyInfo::try_from(encrypted.as_slice()).map_err(|_| {
                keys.refuse(
                    source_key,
                    &shown(source_key),
                    "the encrypted private key is not a PKCS#8 EncryptedPrivateKeyInfo",
                )
            })?;
        let decrypted = info.decrypt(password.as_bytes()).map_err(|_| {
            keys.refuse(
                "ssl.key.password",
                "(hidden)",
                "cannot decrypt the private key with it (a wrong password, or an encryption \
                 other than PBES2 with PBKDF2 or scrypt and AES-CBC)",
            )
        })?;
        key = Some(PrivateKeyDer::Pkcs8(decrypted.as_bytes().to_vec().into()));
    }
    let Some(key) = key else {
        return Err(keys.refuse(
            source_key,
            &shown(source_key),
            "no private key found (expected a PEM PRIVATE KEY section)",
        ));
    };
    if pem.certificates.is_empty() {
        let key = if source_key == "ssl.keystore.key" {
            "ssl.keystore.certificate.chain"
        } else {
            source_key
        };
        return Err(keys.refuse(
            key,
            &shown(key),
            "no certificate found (expected PEM CERTIFICATE sections)",
        ));
    }
    Ok((pem.certificates, key))
}

/// The certificates trusted to sign client certificates (empty when none are set).
fn truststore(keys: &Keys<'_>) -> Result<Vec<CertificateDer<'static>>, Refused> {
    let store = keys.get("ssl.truststore.type").unwrap_or("JKS");
    if store == "PEM" && keys.get("ssl.truststore.password").is_some() {
        return Err(keys.refuse(
            "ssl.truststore.password",
            "(hidden)",
            "a PEM trust store has no password (as in Kafka)",
        ));
    }
    if let Some(text) = keys.get("ssl.truststore.certificates") {
        if store != "PEM" {
            return Err(keys.refuse(
                "ssl.truststore.type",
                store,
                "ssl.truststore.certificates is read with ssl.truststore.type=PEM only",
            ));
        }
        let pem = parse_pem(text.as_bytes())
            .map_err(|e| keys.refuse("ssl.truststore.certificates", "(hidden)", e))?;
        if pem.certificates.is_empty() {
            return Err(keys.refuse(
                "ssl.truststore.certificates",
                "(hidden)",
                "no certificate found",
            ));
        }
        return Ok(pem.certificates);
    }
    let Some(path) = keys.get("ssl.truststore.location") else {
        return Ok(Vec::new());
    };
    check_store_type(keys, "ssl.truststore.type", store)?;
    let text = read_location(keys, "ssl.truststore.location", path)?;
    let pem = parse_pem(&text).map_err(|e| keys.refuse("ssl.truststore.location", path, e))?;
    if pem.certificates.is_empty() {
        return Err(keys.refuse(
            "ssl.truststore.location",
            path,
            "no certificate found (expected PEM CERTIFICATE sections)",
        ));
    }
    Ok(pem.certificates)
}

/// The IANA name of a rustls suite (which spells TLS 1.3's `TLS13_...`).
fn suite_name(suite: &rustls::SupportedCipherSuite) -> String {
    let name = format!("{:?}", suite.suite());
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name,
    }
}

/// The TLS settings of listener `name` if its protocol is SSL or SASL_SSL.
pub fn listener_tls(
    config: &dyn SslKeySource,
    name: &str,
    protocol: SecurityProtocol,
) -> Result<Option<ListenerTls>, Refused> {
    if !matches!(protocol, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl) {
        return Ok(None);
    }
    let keys = Keys {
        config,
        listener: name,
        protocol,
    };
    if let Some(class) = keys.get("ssl.engine.factory.class") {
        return Err(keys.refuse(
            "ssl.engine.factory.class",
            class,
            "Java SSL engine factories are not loaded by Sluice",
        ));
    }
    let (chain, key) = keystore(&keys)?;
    let trusted = truststore(&keys)?;

    // ssl.client.auth: on SASL_SSL only the listener's own value (KIP-684).
    let client_auth_value = match protocol {
        SecurityProtocol::SaslSsl => config.listener_value(name, "ssl.client.auth"),
        _ => keys.get("ssl.client.auth"),
    }
    .map(str::trim)
    .unwrap_or("none");
    let client_auth = match client_auth_value {
        "none" => ClientAuth::None,
        "requested" => ClientAuth::Requested,
        "required" => ClientAuth::Required,
        other => {
            return Err(keys.refuse(
                "ssl.client.auth",
                other,
                "expected one of none, requested, required",
            ));
        }
    };

    // ssl.enabled.protocols, else ssl.protocol.
    let ssl_protocol = keys.get("ssl.protocol").unwrap_or("TLSv1.3");
    if !["TLS", "TLSv1.2", "TLSv1.3"].contains(&ssl_protocol) {
        return Err(keys.refuse(
            "ssl.protocol",
            ssl_protocol,
            "Sluice serves TLSv1.2 and TLSv1.3 (TLS for both)",
        ));
    }
    let enabled_text = keys
        .get("ssl.enabled.protocols")
        .unwrap_or("TLSv1.2,TLSv1.3");
    let mut versions: Vec<&'static rustls::SupportedProtocolVersion> = Vec::new();
    for protocol in enabled_text
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        versions.push(match protocol {
            "TLSv1.2" => &rustls::version::TLS12,
            "TLSv1.3" => &rustls::version::TLS13,
            other => {
                return Err(keys.refuse(
                    "ssl.enabled.protocols",
                    enabled_text,
                    format!("{other} is not served: Sluice serves TLSv1.2 and TLSv1.3"),
                ));
            }
        });
    }
    if versions.is_empty() {
        versions = match ssl_protocol {
            "TLSv1.2" => vec![&rustls::version::TLS12],
            "TLSv1.3" => vec![&rustls::version::TLS13],
            _ => vec![&rustls::version::TLS12, &rustls::version::TLS13],
        };
    }

    // ssl.cipher.suites by name; the provider's all when unset.
    let mut provider = rustls::crypto::ring::default_provider();
    if let Some(text) = keys.get("ssl.cipher.suites") {
        let mut chosen = Vec::new();
        for wanted in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some(suite) = rustls::crypto::ring::ALL_CIPHER_SUITES
                .iter()
                .find(|suite| suite_name(suite) == wanted)
            else {
                let known: Vec<String> = rustls::crypto::ring::ALL_CIPHER_SUITES
                    .iter()
                    .map(suite_name)
                    .collect();
                return Err(keys.refuse(
                    "ssl.cipher.suites",
                    text,
                    format!(
                        "cipher suite {wanted} is not served; Sluice serves {}",
                        known.join(", ")
                    ),
                ));
            };
            chosen.push(*suite);
        }
        if !chosen.is_empty() {
            provider.cipher_suites = chosen;
        }
    }
    let provider = Arc::new(provider);

    let principal_mapper = match keys.get("ssl.principal.mapping.rules") {
        Some(rules) => PrincipalMapper::parse(rules)
            .map_err(|reason| keys.refuse("ssl.principal.mapping.rules", rules, reason))?,
        None => PrincipalMapper::default(),
    };

    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|error| {
            keys.refuse(
                "ssl.cipher.suites",
                keys.get("ssl.cipher.suites").unwrap_or(""),
                format!("no cipher suite for the enabled protocols ({enabled_text}): {error}"),
            )
        })?;
    let builder = if client_auth == ClientAuth::None {
        builder.with_no_client_auth()
    } else {
        if trusted.is_empty() {
            return Err(keys.refuse(
                "ssl.truststore.location",
                "",
                format!(
                    "ssl.client.auth={client_auth_value} needs trusted certificates: set \
                     ssl.truststore.type=PEM with ssl.truststore.location or \
                     ssl.truststore.certificates"
                ),
            ));
        }
        let truststore_key = if keys.get("ssl.truststore.certificates").is_some() {
            "ssl.truststore.certificates"
        } else {
            "ssl.truststore.location"
        };
        let mut roots = rustls::RootCertStore::empty();
        for certificate in trusted {
            roots.add(certificate).map_err(|error| {
                keys.refuse(
                    truststore_key,
                    keys.get("ssl.truststore.location").unwrap_or("(hidden)"),
                    format!("a trusted certificate is not usable: {error}"),
                )
            })?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
        let verifier = if client_auth == ClientAuth::Requested {
            verifier.allow_unauthenticated()
        } else {
            verifier
        };
        let verifier = verifier.build().map_err(|error| {
            keys.refuse(
                truststore_key,
                keys.get("ssl.truststore.location").unwrap_or("(hidden)"),
                format!("cannot verify client certificates with these: {error}"),
            )
        })?;
        builder.with_client_cert_verifier(verifier)
    };
    let keystore_key = if keys.get("ssl.keystore.key").is_some() {
        "ssl.keystore.key"
    } else {
        "ssl.keystore.location"
    };
    let server = builder.with_single_cert(chain, key).map_err(|error| {
        keys.refuse(
            keystore_key,
            keys.get("ssl.keystore.location").unwrap_or("(hidden)"),
            format!("the key and certificate chain are not usable: {error}"),
        )
    })?;
    let source = SSL_KEYS
        .iter()
        .map(|key| (*key, keys.get(key).map(str::to_string)))
        .collect();
    Ok(Some(ListenerTls {
        protocol,
        client_auth,
        principal_mapper,
        acceptor: TlsAcceptor::from(Arc::new(server)),
        source,
    }))
}

// -- certificates reloaded on a dynamic config change --------------------------------------

/// The `ssl.*` keys Kafka reconfigures without a restart (`SslConfigs.RECONFIGURABLE_CONFIGS`),
/// set per broker with the listener prefix: `kafka-configs.sh --alter --entity-type brokers
/// --entity-name <id> --add-config listener.name.<l>.ssl.keystore.location=...`.
pub(crate) const DYNAMIC_SSL_KEYS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BrokerConfig, ConfigError};
    use crate::tls_reload::{TlsListeners, dynamic_ssl_key, validate_dynamic};

    fn data(file: &str) -> String {
        format!("{}/src/tls/testdata/{file}", env!("CARGO_MANIFEST_DIR"))
    }

    const LISTENERS: &str = "listeners=PLAINTEXT://:9092,SSL://:9093,SECURE://:9094,CONTROLLER://:9095\n\
        listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SECURE:SASL_SSL,CONTROLLER:PLAINTEXT\n\
        listener.name.secure.sasl.enabled.mechanisms=PLAIN\n\
        listener.name.secure.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\";\n";

    fn load(extra: &str) -> Result<BrokerConfig, ConfigError> {
        let text = format!(
            "node.id=1\nprocess.roles=broker,controller\ncontroller.listener.names=CONTROLLER\n\
             {LISTENERS}{extra}"
        );
        BrokerConfig::load(&text, &[]).map(|loaded| loaded.config)
    }

    fn pem_keystore() -> String {
        format!(
            "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
            data("server.pem")
        )
    }

    /// Loading fails, naming `key`, saying `reason`, and showing no secret.
    fn refused(extra: &str, key: &str, reason: &str) {
        let error = load(extra).unwrap_err();
        let text = error.to_string();
        match &error {
            ConfigError::Invalid { key: named, .. } => assert_eq!(named, key, "{text}"),
            other => panic!("unexpected {other:?}"),
        }
        assert!(text.contains(reason), "{text}");
        for secret in ["key-secret", "alice-secret", "MII"] {
            assert!(!text.contains(secret), "{text} shows a secret");
        }
    }

    #[test]
    fn ssl_and_sasl_ssl_listeners_load_with_a_pem_keystore() {
        let config = load(&pem_keystore()).unwrap();
        let listeners = &config.settings().listeners;
        assert_eq!(
            listeners.tls.keys().collect::<Vec<_>>(),
            ["SECURE", "SSL"],
            "only the TLS listeners"
        );
        assert_eq!(listeners.tls["SSL"].protocol, SecurityProtocol::Ssl);
        assert_eq!(listeners.tls["SSL"].client_auth, ClientAuth::None);
        assert_eq!(listeners.tls["SECURE"].protocol, SecurityProtocol::SaslSsl);
        assert!(
            listeners.sasl.contains_key("SECURE"),
            "SASL_SSL authenticates"
        );
        assert!(!listeners.sasl.contains_key("SSL"));
        assert_eq!(
            listeners.tls["SSL"].principal_mapper.to_string(),
            "SslPrincipalMapper(rules = [DEFAULT])"
        );
    }

    #[test]
    fn an_encrypted_pkcs8_key_reads_with_ssl_key_password() {
        // `openssl pkcs8 -topk8 -v2 aes-256-cbc` (PBES2, PBKDF2-HMAC-SHA256).
        let config = load(&format!(
            "ssl.keystore.type=PEM\nssl.keystore.location={}\nssl.key.password=key-secret\n",
            data("server-encrypted.pem")
        ))
        .unwrap();
        assert!(config.settings().listeners.tls.contains_key("SSL"));
    }

    #[test]
    fn a_dynamic_keystore_change_is_checked_then_reloaded() {
        let config = load(&format!(
            "ssl.keystore.type=PEM\nlistener.name.ssl.ssl.keystore.location={}\n\
             listener.name.secure.ssl.keystore.location={}\n",
            data("server.pem"),
            data("server.pem")
        ))
        .unwrap();
        assert_eq!(
            dynamic_ssl_key("listener.name.SSL.ssl.keystore.location"),
            Some(("ssl".to_string(), "ssl.keystore.location"))
        );
        assert_eq!(dynamic_ssl_key("ssl.keystore.location"), None);
        assert_eq!(dynamic_ssl_key("listener.name.ssl.ssl.client.auth"), None);
        let layer = |key: &str, value: &str| {
            std::collections::BTreeMap::from([(key.to_string(), value.to_string())])
        };
        // Checked as an alteration is: a missing file, an unknown listener.
        let error = validate_dynamic(
            &config,
            &layer(
                "listener.name.ssl.ssl.keystore.location",
                "/nonexistent.pem",
            ),
        )
        .unwrap_err();
        assert!(error.contains("cannot read the file"), "{error}");
        let error = validate_dynamic(
            &config,
            &layer(
                "listener.name.plaintext.ssl.keystore.location",
                &data("server.pem"),
            ),
        )
        .unwrap_err();
        assert!(error.contains("not an SSL or SASL_SSL listener"), "{error}");
        validate_dynamic(
            &config,
            &layer(
                "listener.name.ssl.ssl.keystore.location",
                &data("server.pem"),
            ),
        )
        .unwrap();

        // Applied: only the listener whose keys changed gets new settings.
        let listeners = TlsListeners::new(&config);
        let mut ssl = listeners.subscribe("SSL").unwrap();
        let mut secure = listeners.subscribe("SECURE").unwrap();
        assert!(listeners.subscribe("PLAINTEXT").is_none());
        listeners.apply(None);
        assert!(!ssl.has_changed().unwrap(), "nothing changed");
        let change = layer(
            "listener.name.ssl.ssl.keystore.location",
            &data("server-encrypted.pem"),
        );
        // Not readable without its password: the old settings stay.
        listeners.apply(Some(&change));
        assert!(!ssl.has_changed().unwrap());
        let mut change = change;
        change.insert(
            "listener.name.ssl.ssl.key.password".into(),
            "key-secret".into(),
        );
        listeners.apply(Some(&change));
        assert!(ssl.has_changed().unwrap(), "reloaded");
        assert!(!secure.has_changed().unwrap(), "another listener untouched");
        ssl.mark_unchanged();
        secure.mark_unchanged();
        listeners.apply(Some(&change));
        assert!(!ssl.has_changed().unwrap(), "the same values do not reload");
    }

    #[test]
    fn listener_keys_override_the_broker_wide_ones() {
        let config = load(&format!(
            "{}ssl.truststore.type=PEM\nssl.truststore.location={}\n\
             ssl.client.auth=requested\nlistener.name.ssl.ssl.client.auth=required\n\
             listener.name.SSL.ssl.principal.mapping.rules=RULE:^CN=(.*?),.*$/$1/L,DEFAULT\n",
            pem_keystore(),
            data("ca.pem")
        ))
        .unwrap();
        let tls = &config.settings().listeners.tls;
        assert_eq!(tls["SSL"].client_auth, ClientAuth::Required);
        assert_eq!(
            tls["SSL"].principal_mapper.name("CN=Alice,O=x").unwrap(),
            "alice"
        );
        // On SASL_SSL only the listener's own ssl.client.auth counts (KIP-684).
        assert_eq!(tls["SECURE"].client_auth, ClientAuth::None);
    }

    #[test]
    fn inline_pem_reads_on_one_line_as_in_a_properties_file() {
        let one_line = |file: &str| {
            std::fs::read_to_string(data(file))
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        let config = load(&format!(
            "listener.name.secure.ssl.keystore.type=PEM\n\
             listener.name.secure.ssl.keystore.certificate.chain={}\n\
             listener.name.secure.ssl.keystore.key={}\n\
             ssl.keystore.type=PEM\nlistener.name.ssl.ssl.keystore.location={}\n\
             ssl.truststore.type=PEM\nssl.truststore.certificates={}\n\
             ssl.client.auth=required\n",
            one_line("server.crt"),
            one_line("server.key"),
            data("server.pem"),
            one_line("ca.pem"),
        ))
        .unwrap();
        assert_eq!(
            config.settings().listeners.tls["SSL"].client_auth,
            ClientAuth::Required
        );
        assert!(config.settings().listeners.tls.contains_key("SECURE"));
        // Both a location and an inline key for one listener: refused, as Kafka does.
        refused(
            &format!(
                "ssl.keystore.type=PEM\nssl.keystore.location={}\n\
                 listener.name.secure.ssl.keystore.certificate.chain={}\n\
                 listener.name.secure.ssl.keystore.key={}\n",
                data("server.pem"),
                one_line("server.crt"),
                one_line("server.key"),
            ),
            "listener.name.secure.ssl.keystore.key",
            "Both SSL key store location and separate private key are specified",
        );
    }

    #[test]
    fn ciphers_and_protocols_by_kafkas_names() {
        load(&format!(
            "{}ssl.enabled.protocols=TLSv1.3\n\
             ssl.cipher.suites=TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256\n",
            pem_keystore()
        ))
        .unwrap();
        load(&format!(
            "{}ssl.enabled.protocols=TLSv1.2\nssl.protocol=TLSv1.2\n\
             ssl.cipher.suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n",
            pem_keystore()
        ))
        .unwrap();
        refused(
            &format!(
                "{}ssl.cipher.suites=TLS_RSA_WITH_AES_128_CBC_SHA\n",
                pem_keystore()
            ),
            "ssl.cipher.suites",
            "cipher suite TLS_RSA_WITH_AES_128_CBC_SHA is not served",
        );
        refused(
            &format!(
                "{}ssl.enabled.protocols=TLSv1.2\nssl.cipher.suites=TLS_AES_128_GCM_SHA256\n",
                pem_keystore()
            ),
            "ssl.cipher.suites",
            "no cipher suite for the enabled protocols",
        );
        refused(
            &format!("{}ssl.enabled.protocols=TLSv1.2,TLSv1.1\n", pem_keystore()),
            "ssl.enabled.protocols",
            "TLSv1.1 is not served",
        );
        refused(
            &format!("{}ssl.protocol=SSLv3\n", pem_keystore()),
            "ssl.protocol",
            "TLSv1.2 and TLSv1.3",
        );
    }

    #[test]
    fn what_cannot_be_served_is_refused_at_load_naming_the_key() {
        refused("", "ssl.keystore.location", "set ssl.keystore.type=PEM");
        refused(
            &format!("ssl.keystore.location={}\n", data("server.pem")),
            "ssl.keystore.type",
            "JKS stores are not read",
        );
        refused(
            &format!(
                "ssl.keystore.type=PKCS12\nssl.keystore.location={}\n",
                data("server.pem")
            ),
            "ssl.keystore.type",
            "PKCS12 stores are not read",
        );
        refused(
            "ssl.keystore.type=PEM\nlistener.name.ssl.ssl.keystore.location=/nonexistent/server.pem\n",
            "listener.name.ssl.ssl.keystore.location",
            "cannot read the file",
        );
        refused(
            &format!(
                "ssl.keystore.type=PEM\nssl.keystore.location={}\nssl.key.password=not-the-key-secret\n",
                data("server-encrypted.pem")
            ),
            "ssl.key.password",
            "cannot decrypt the private key",
        );
        refused(
            &format!(
                "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
                data("server-encrypted.pem")
            ),
            "ssl.keystore.location",
            "no ssl.key.password is set",
        );
        refused(
            &format!(
                "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
                data("mismatched.pem")
            ),
            "ssl.keystore.location",
            "not usable",
        );
        refused(
            &format!(
                "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
                data("server.crt")
            ),
            "ssl.keystore.location",
            "no private key found",
        );
        refused(
            &format!(
                "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
                data("server.key")
            ),
            "ssl.keystore.location",
            "no certificate found",
        );
        refused(
            &format!("{}ssl.keystore.password=key-secret\n", pem_keystore()),
            "ssl.keystore.password",
            "a PEM key store has no store password",
        );
        refused(
            "ssl.keystore.type=PEM\nssl.keystore.key=-----BEGIN PRIVATE KEY----- MII -----END PRIVATE KEY-----\n",
            "ssl.keystore.certificate.chain",
            "set together",
        );
        refused(
            &format!(
                "{}ssl.truststore.type=PEM\nssl.truststore.location={}\n\
                 ssl.truststore.password=key-secret\n",
                pem_keystore(),
                data("ca.pem")
            ),
            "ssl.truststore.password",
            "a PEM trust store has no password",
        );
        refused(
            &format!("{}ssl.client.auth=always\n", pem_keystore()),
            "ssl.client.auth",
            "none, requested, required",
        );
        refused(
            &format!(
                "{}listener.name.ssl.ssl.client.auth=required\n",
                pem_keystore()
            ),
            "ssl.truststore.location",
            "needs trusted certificates",
        );
        refused(
            &format!(
                "{}ssl.truststore.type=PEM\nssl.truststore.location={}\n",
                pem_keystore(),
                data("server.key")
            ),
            "ssl.truststore.location",
            "no certificate found",
        );
        refused(
            &format!("{}ssl.principal.mapping.rules=RULE:x/y/Q\n", pem_keystore()),
            "ssl.principal.mapping.rules",
            "Invalid rule",
        );
        refused(
            "ssl.keystore.type=PEM\n\
             listener.name.ssl.ssl.keystore.key=-----BEGIN PRIVATE KEY----- M!! -----END PRIVATE KEY-----\n\
             listener.name.ssl.ssl.keystore.certificate.chain=x\n",
            "listener.name.ssl.ssl.keystore.key",
            "not valid base64",
        );
        // The cluster's own listeners do not speak TLS.
        refused(
            &format!("{}inter.broker.listener.name=SSL\n", pem_keystore()),
            "listener.security.protocol.map",
            "carries the cluster's own traffic",
        );
    }
}
