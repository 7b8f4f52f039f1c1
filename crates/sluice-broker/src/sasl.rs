//! SASL authentication of a connection on a `SASL_PLAINTEXT` listener, as Kafka's
//! `SaslServerAuthenticator` does it (KIP-43, KIP-152): the client may send ApiVersions,
//! then SaslHandshake naming a mechanism the listener enables, then the mechanism's
//! tokens — in SaslAuthenticate requests after a v1 handshake, or as bare size-prefixed
//! frames after a v0 one. Any other request before authentication closes the
//! connection. A failed authentication is answered with `SASL_AUTHENTICATION_FAILED`
//! and Kafka's message after `connection.failed.authentication.delay.ms`, and the
//! connection closes; the message does not say which part was wrong.
//!
//! Mechanisms: `PLAIN` (RFC 4616) with the users of the listener's
//! `listener.name.<listener>.plain.sasl.jaas.config` (`PlainLoginModule`'s
//! `user_<name>="<password>"` options, as Kafka's default `PlainServerCallbackHandler`
//! reads them); `SCRAM-SHA-256` and `SCRAM-SHA-512` ([`crate::scram`]) with the
//! credentials of the current metadata image (`UserScramCredentialRecord`s, managed with
//! AlterUserScramCredentials). The authenticated principal is `User:<name>` (Kafka's
//! `DefaultKafkaPrincipalBuilder`).

use sluice_protocol::ErrorCode;

use crate::config::ListenerSasl;
use crate::image::ImageView;
use crate::request::Principal;
use crate::scram::{ScramFailure, ScramMechanism, ScramServer};

/// A SASL mechanism Sluice serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    Plain,
    Scram(ScramMechanism),
}

impl Mechanism {
    pub fn parse(name: &str) -> Option<Mechanism> {
        match name {
            "PLAIN" => Some(Mechanism::Plain),
            other => ScramMechanism::from_name(other).map(Mechanism::Scram),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::Scram(scram) => scram.name(),
        }
    }
}

/// Where a connection is in its authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Waiting for SaslHandshake (ApiVersions is also taken).
    Handshake,
    /// A mechanism was chosen; its tokens come in SaslAuthenticate requests
    /// (`framed`) or as bare frames (a v0 handshake).
    Authenticate { mechanism: Mechanism, framed: bool },
    /// Authenticated as this principal.
    Complete(Principal),
}

/// What the connection does with a request while authenticating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Serve the request as usual (ApiVersions before the handshake; everything once
    /// authenticated).
    Serve,
    /// Answer SaslHandshake with this error (NONE when the mechanism is enabled) and
    /// the enabled mechanisms.
    Handshake { error: ErrorCode },
    /// Decode the SaslAuthenticate request and pass its token to
    /// [`Authenticator::on_token`].
    Authenticate,
    /// Answer the token: the server's reply bytes on success (the connection is then
    /// authenticated), or the failure (answered after the failed-authentication delay,
    /// then the connection closes).
    Token(Result<Vec<u8>, AuthFailure>),
    /// Close the connection: the request is not allowed now (Kafka's
    /// `IllegalSaslStateException`).
    Close(String),
}

/// A failed authentication, as the client is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthFailure {
    pub error: ErrorCode,
    pub message: String,
}

/// A SaslHandshake request's API key, SaslAuthenticate's, ApiVersions'.
const SASL_HANDSHAKE: i16 = 17;
const SASL_AUTHENTICATE: i16 = 36;
const API_VERSIONS: i16 = 18;

/// One connection's authentication.
#[derive(Debug)]
pub struct Authenticator {
    sasl: std::sync::Arc<ListenerSasl>,
    /// The metadata image, whose SCRAM credentials are read at the exchange's start.
    image: ImageView,
    state: State,
    /// The SCRAM exchange under way.
    scram: Option<ScramServer>,
}

impl Authenticator {
    pub fn new(sasl: std::sync::Arc<ListenerSasl>, image: ImageView) -> Authenticator {
        Authenticator {
            sasl,
            image,
            state: State::Handshake,
            scram: None,
        }
    }

    /// The principal, once authenticated.
    pub fn principal(&self) -> Option<&Principal> {
        match &self.state {
            State::Complete(principal) => Some(principal),
            _ => None,
        }
    }

    /// Whether the next frame is a bare token (after a v0 handshake), not a request.
    pub fn expects_bare_token(&self) -> bool {
        matches!(self.state, State::Authenticate { framed: false, .. })
    }

    /// The mechanisms to list in a SaslHandshake answer.
    pub fn enabled_mechanisms(&self) -> &[String] {
        &self.sasl.enabled_mechanisms
    }

    /// What to do with a request of `api_key` at `version` (SaslHandshake's
    /// `mechanism` read by the caller).
    pub fn on_request(&mut self, api_key: i16, version: i16, mechanism: Option<&str>) -> Step {
        match (&self.state, api_key) {
            (State::Complete(_), SASL_HANDSHAKE | SASL_AUTHENTICATE) => {
                // Re-authentication (KIP-368) is not offered: session lifetime 0.
                Step::Close("SASL request after authentication completed".into())
            }
            (State::Complete(_), _) => Step::Serve,
            (State::Handshake, API_VERSIONS) => Step::Serve,
            (State::Handshake, SASL_HANDSHAKE) => {
                let requested = mechanism.unwrap_or("");
                let enabled = self.sasl.enabled_mechanisms.iter().any(|m| m == requested);
                match Mechanism::parse(requested).filter(|_| enabled) {
                    Some(mechanism) => {
                        self.state = State::Authenticate {
                            mechanism,
                            framed: version >= 1,
                        };
                        Step::Handshake {
                            error: ErrorCode::NONE,
                        }
                    }
                    None => Step::Handshake {
                        error: ErrorCode::UNSUPPORTED_SASL_MECHANISM,
                    },
                }
            }
            (State::Authenticate { framed: true, .. }, SASL_AUTHENTICATE) => Step::Authenticate,
            (State::Handshake, other) => Step::Close(format!(
                "Unexpected Kafka request of type {other} during SASL handshake."
            )),
            (State::Authenticate { .. }, other) => Step::Close(format!(
                "Unexpected Kafka request of type {other} during SASL authentication."
            )),
        }
    }

    /// Evaluates the client's token (from SaslAuthenticate, or a bare frame).
    pub fn on_token(&mut self, token: &[u8]) -> Step {
        let State::Authenticate { mechanism, .. } = self.state else {
            return Step::Close("SASL token outside of an authentication".into());
        };
        let result = match mechanism {
            Mechanism::Plain => self.plain(token),
            Mechanism::Scram(scram) => match self.scram(scram, token) {
                // A challenge: the exchange goes on.
                Ok((reply, None)) => return Step::Token(Ok(reply)),
                Ok((reply, Some(principal))) => Ok((principal, reply)),
                Err(failure) => Err(failure),
            },
        };
        Step::Token(result.map(|(principal, reply)| {
            self.state = State::Complete(principal);
            reply
        }))
    }

    /// One SCRAM message. Failures are answered as Kafka's `SaslServerAuthenticator`
    /// answers a `SaslException`: one message that says nothing of what was wrong
    /// (unknown user, wrong password, malformed message), except the authorization-id
    /// refusal, which Kafka passes on.
    fn scram(
        &mut self,
        mechanism: ScramMechanism,
        token: &[u8],
    ) -> Result<(Vec<u8>, Option<Principal>), AuthFailure> {
        let image = &self.image;
        let server = self
            .scram
            .get_or_insert_with(|| ScramServer::new(mechanism));
        let outcome = server.evaluate(token, |name| {
            image
                .current()
                .scram_credential(name, mechanism.type_id())
                .cloned()
        });
        match outcome {
            Ok((reply, user)) => Ok((
                reply,
                user.map(|name| Principal {
                    principal_type: "User".into(),
                    name,
                }),
            )),
            Err(failure) => {
                self.scram = None;
                let message = match failure {
                    ScramFailure::Authentication(message) => message,
                    ScramFailure::Invalid(reason) => {
                        tracing::debug!(%reason, mechanism = mechanism.name(), "SCRAM exchange failed");
                        format!(
                            "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
                            mechanism.name()
                        )
                    }
                };
                Err(AuthFailure {
                    error: ErrorCode::SASL_AUTHENTICATION_FAILED,
                    message,
                })
            }
        }
    }

    /// RFC 4616: `[authzid] NUL authcid NUL passwd`; the messages are Kafka's
    /// (`PlainSaslServer`, `PlainServerCallbackHandler`).
    fn plain(&self, token: &[u8]) -> Result<(Principal, Vec<u8>), AuthFailure> {
        let failed = |message: String| AuthFailure {
            error: ErrorCode::SASL_AUTHENTICATION_FAILED,
            message,
        };
        let text = String::from_utf8_lossy(token);
        let parts: Vec<&str> = text.split('\u{0}').collect();
        if parts.len() != 3 {
            return Err(failed(format!(
                "Invalid SASL/PLAIN response: expected 3 tokens, got {}",
                parts.len()
            )));
        }
        let (authorization_id, username, password) = (parts[0], parts[1], parts[2]);
        if username.is_empty() {
            return Err(failed(
                "Authentication failed: username not specified".into(),
            ));
        }
        if password.is_empty() {
            return Err(failed(
                "Authentication failed: password not specified".into(),
            ));
        }
        let known = self.sasl.plain_users.get(username);
        // Compared in constant time, so the answer's timing says nothing either.
        if !known.is_some_and(|expected| constant_time_eq(expected.as_bytes(), password.as_bytes()))
        {
            return Err(failed(
                "Authentication failed: Invalid username or password".into(),
            ));
        }
        if !authorization_id.is_empty() && authorization_id != username {
            return Err(failed(
                "Authentication failed: Client requested an authorization id that is different from username"
                    .into(),
            ));
        }
        Ok((
            Principal {
                principal_type: "User".into(),
                name: username.to_string(),
            },
            Vec::new(),
        ))
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut difference = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        difference |= usize::from(x ^ b.get(i).copied().unwrap_or(!x));
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::config::{parse_jaas, plain_users};

    const JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin"
        password="admin-secret"
        user_admin="admin-secret"
        user_alice="al\"ice";"#;

    fn authenticator() -> Authenticator {
        let modules = parse_jaas(JAAS).unwrap();
        let mut image = sluice_metadata::MetadataImage::default();
        for (user, password, mechanism) in [
            ("alice", "alice-secret", ScramMechanism::Sha256),
            ("bob", "bob-secret", ScramMechanism::Sha512),
        ] {
            image
                .apply(&sluice_metadata::MetadataRecord::UserScramCredential(
                    mechanism.credential_from_password(user, password, 4096),
                ))
                .unwrap();
        }
        Authenticator::new(
            Arc::new(ListenerSasl {
                enabled_mechanisms: vec![
                    "PLAIN".into(),
                    "SCRAM-SHA-256".into(),
                    "SCRAM-SHA-512".into(),
                    "GSSAPI".into(),
                ],
                plain_users: plain_users(&modules),
            }),
            ImageView::fixed(image),
        )
    }

    /// Runs a SCRAM exchange; the final step's result.
    fn scram(
        version: i16,
        mechanism: ScramMechanism,
        user: &str,
        password: &str,
    ) -> (Authenticator, Step) {
        let mut auth = authenticator();
        assert_eq!(
            auth.on_request(SASL_HANDSHAKE, 1, Some(mechanism.name())),
            Step::Handshake {
                error: ErrorCode::NONE
            }
        );
        let mut client = crate::scram::tests::Client::new(mechanism, user, password);
        if version >= 1 {
            assert_eq!(
                auth.on_request(SASL_AUTHENTICATE, 2, None),
                Step::Authenticate
            );
        }
        let first = match auth.on_token(&client.first()) {
            Step::Token(Ok(first)) => first,
            other => return (auth, other),
        };
        assert!(auth.principal().is_none(), "authenticated before the proof");
        if version >= 1 {
            assert_eq!(
                auth.on_request(SASL_AUTHENTICATE, 2, None),
                Step::Authenticate
            );
        }
        let last = auth.on_token(&client.final_message(&first));
        (auth, last)
    }

    #[test]
    fn scram_authenticates_against_the_images_credentials() {
        for (mechanism, user, password) in [
            (ScramMechanism::Sha256, "alice", "alice-secret"),
            (ScramMechanism::Sha512, "bob", "bob-secret"),
        ] {
            let (auth, last) = scram(1, mechanism, user, password);
            let Step::Token(Ok(server_final)) = last else {
                panic!("{mechanism:?}: {last:?}");
            };
            assert!(server_final.starts_with(b"v="));
            assert_eq!(
                auth.principal().unwrap().to_string(),
                format!("User:{user}")
            );
        }
    }

    #[test]
    fn scram_failures_carry_kafkas_message_only() {
        let expected = |mechanism: &str| {
            Step::Token(Err(AuthFailure {
                error: ErrorCode::SASL_AUTHENTICATION_FAILED,
                message: format!(
                    "Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
                ),
            }))
        };
        // Wrong password, unknown user, a user of the other mechanism only.
        for (mechanism, user, password) in [
            (ScramMechanism::Sha256, "alice", "wrong"),
            (ScramMechanism::Sha256, "mallory", "alice-secret"),
            (ScramMechanism::Sha256, "bob", "bob-secret"),
            (ScramMechanism::Sha512, "alice", "alice-secret"),
        ] {
            let (auth, last) = scram(1, mechanism, user, password);
            assert_eq!(last, expected(mechanism.name()), "{user}");
            assert!(auth.principal().is_none());
        }
        // Garbage as the first message.
        let mut auth = authenticator();
        auth.on_request(SASL_HANDSHAKE, 1, Some("SCRAM-SHA-512"));
        assert_eq!(auth.on_token(b"n,,n"), expected("SCRAM-SHA-512"));
    }

    #[test]
    fn scram_tokens_after_a_v0_handshake_are_bare_frames() {
        let mut auth = authenticator();
        auth.on_request(SASL_HANDSHAKE, 0, Some("SCRAM-SHA-256"));
        let mut client =
            crate::scram::tests::Client::new(ScramMechanism::Sha256, "alice", "alice-secret");
        assert!(auth.expects_bare_token());
        let Step::Token(Ok(first)) = auth.on_token(&client.first()) else {
            panic!()
        };
        assert!(
            auth.expects_bare_token(),
            "the exchange goes on in bare frames"
        );
        assert!(matches!(
            auth.on_token(&client.final_message(&first)),
            Step::Token(Ok(_))
        ));
        assert!(!auth.expects_bare_token());
        assert_eq!(auth.principal().unwrap().to_string(), "User:alice");
    }

    #[test]
    fn plain_authenticates_a_known_user_and_names_the_principal() {
        let mut auth = authenticator();
        assert_eq!(auth.on_request(API_VERSIONS, 3, None), Step::Serve);
        assert_eq!(
            auth.on_request(SASL_HANDSHAKE, 1, Some("PLAIN")),
            Step::Handshake {
                error: ErrorCode::NONE
            }
        );
        assert_eq!(
            auth.on_request(SASL_AUTHENTICATE, 2, None),
            Step::Authenticate
        );
        assert_eq!(
            auth.on_token(b"\0admin\0admin-secret"),
            Step::Token(Ok(vec![]))
        );
        assert_eq!(auth.principal().unwrap().to_string(), "User:admin");
        assert_eq!(auth.on_request(0, 9, None), Step::Serve);
    }

    #[test]
    fn failures_say_nothing_about_which_part_was_wrong() {
        for token in [
            &b"\0admin\0wrong"[..],
            b"\0nobody\0admin-secret",
            b"\0admin\0admin-secre",
            b"\0admin\0admin-secret-",
        ] {
            let mut auth = authenticator();
            auth.on_request(SASL_HANDSHAKE, 1, Some("PLAIN"));
            let Step::Token(Err(failure)) = auth.on_token(token) else {
                panic!("{token:?} authenticated");
            };
            assert_eq!(failure.error, ErrorCode::SASL_AUTHENTICATION_FAILED);
            assert_eq!(
                failure.message,
                "Authentication failed: Invalid username or password"
            );
            assert!(auth.principal().is_none());
        }
        let mut auth = authenticator();
        auth.on_request(SASL_HANDSHAKE, 1, Some("PLAIN"));
        let Step::Token(Err(failure)) = auth.on_token(b"garbage") else {
            panic!()
        };
        assert_eq!(
            failure.message,
            "Invalid SASL/PLAIN response: expected 3 tokens, got 1"
        );
        let mut auth = authenticator();
        auth.on_request(SASL_HANDSHAKE, 1, Some("PLAIN"));
        let Step::Token(Err(failure)) = auth.on_token(b"alice\0admin\0admin-secret") else {
            panic!()
        };
        assert!(failure.message.contains("authorization id"));
    }

    #[test]
    fn requests_out_of_order_close_the_connection() {
        let mut auth = authenticator();
        assert!(matches!(auth.on_request(3, 12, None), Step::Close(_)));
        assert!(matches!(
            auth.on_request(SASL_AUTHENTICATE, 2, None),
            Step::Close(_)
        ));
        assert_eq!(
            auth.on_request(SASL_HANDSHAKE, 1, Some("GSSAPI")),
            Step::Handshake {
                error: ErrorCode::UNSUPPORTED_SASL_MECHANISM
            }
        );
        // Enabled by name but not served: refused the same way.
        assert_eq!(
            auth.on_request(SASL_HANDSHAKE, 1, Some("GSSAPI")),
            Step::Handshake {
                error: ErrorCode::UNSUPPORTED_SASL_MECHANISM
            }
        );
        auth.on_request(SASL_HANDSHAKE, 0, Some("PLAIN"));
        assert!(auth.expects_bare_token());
        assert!(matches!(auth.on_request(0, 9, None), Step::Close(_)));
        assert_eq!(
            auth.on_token(b"\0admin\0admin-secret"),
            Step::Token(Ok(vec![]))
        );
        assert!(matches!(
            auth.on_request(SASL_HANDSHAKE, 1, Some("PLAIN")),
            Step::Close(_)
        ));
    }
}
