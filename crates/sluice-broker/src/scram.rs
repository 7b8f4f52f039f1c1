//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka serves them
//! (`ScramSaslServer`, `ScramFormatter`, `ScramMessages`): the server side of the
//! exchange against the stored credentials of the metadata image
//! (`UserScramCredentialRecord`: salt, StoredKey, ServerKey, iterations; the password
//! is never kept), the credential derivation Kafka's controller and `kafka-storage
//! format --add-scram` perform, and the `--add-scram` syntax.
//!
//! Written on `sha2` and `hmac` rather than `rsasl`'s SCRAM server: rsasl 2.3.1's
//! message parser slices attributes without checking their length (a client-first
//! message `n,,n` panics in `ClientFirstMessage::parse`), does not unescape `=2C`/`=3D`
//! in user names, and answers an unknown user with a made-up challenge where Kafka
//! fails at once; the broker must answer all of these as Kafka does, never panic.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use sluice_metadata::UserScramCredentialRecord;

/// Kafka's `ScramControlManager.MAX_ITERATIONS`.
pub const MAX_ITERATIONS: i32 = 16384;
/// Kafka's `ScramMechanism.minIterations()` (both mechanisms).
pub const MIN_ITERATIONS: i32 = 4096;

/// A SCRAM mechanism, with Kafka's `ScramMechanism` type ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

impl ScramMechanism {
    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        match name {
            "SCRAM-SHA-256" => Some(ScramMechanism::Sha256),
            "SCRAM-SHA-512" => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    /// From Kafka's `ScramMechanism` type (1, 2; 0 is UNKNOWN).
    pub fn from_type(id: i8) -> Option<ScramMechanism> {
        match id {
            1 => Some(ScramMechanism::Sha256),
            2 => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    pub fn type_id(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut mac = Hmac::<Sha512>::new_from_slice(key).expect("HMAC takes any key");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// RFC 5802's `Hi(password, salt, iterations)` (PBKDF2 with one block).
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: i32) -> Vec<u8> {
        let mut block = salt.to_vec();
        block.extend_from_slice(&1u32.to_be_bytes());
        let mut u = self.hmac(password, &block);
        let mut result = u.clone();
        for _ in 1..iterations.max(1) {
            u = self.hmac(password, &u);
            result.iter_mut().zip(&u).for_each(|(r, x)| *r ^= x);
        }
        result
    }

    /// The stored credential for a salted password (what Kafka's controller keeps of an
    /// AlterUserScramCredentials upsertion).
    pub fn credential(
        self,
        name: &str,
        salt: &[u8],
        salted_password: &[u8],
        iterations: i32,
    ) -> UserScramCredentialRecord {
        let client_key = self.hmac(salted_password, b"Client Key");
        UserScramCredentialRecord {
            name: name.to_string(),
            mechanism: self.type_id(),
            salt: salt.to_vec(),
            stored_key: self.hash(&client_key),
            server_key: self.hmac(salted_password, b"Server Key"),
            iterations,
        }
    }

    /// The credential for a password, with a new random salt.
    pub fn credential_from_password(
        self,
        name: &str,
        password: &str,
        iterations: i32,
    ) -> UserScramCredentialRecord {
        let salt = random_printable(32).into_bytes();
        let salted = self.salted_password(password.as_bytes(), &salt, iterations);
        self.credential(name, &salt, &salted, iterations)
    }
}

/// Random characters from `[0-9a-z]`, as Kafka's `secureRandomString` gives.
fn random_printable(length: usize) -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut rng = rand::thread_rng();
    (0..length)
        .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
        .collect()
}

/// Why a SCRAM exchange failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScramFailure {
    /// Kafka's `SaslException`: the client is told only that its credentials were
    /// invalid; the reason is for the broker's log (it never holds a password).
    Invalid(String),
    /// Kafka's `SaslAuthenticationException`: this message goes to the client.
    Authentication(String),
}

enum State {
    ClientFirst,
    ClientFinal {
        client_first_bare: String,
        server_first: String,
        nonce: String,
        username: String,
        credential: UserScramCredentialRecord,
    },
    Done,
}

/// The server side of one SCRAM exchange.
pub struct ScramServer {
    mechanism: ScramMechanism,
    state: State,
}

impl std::fmt::Debug for ScramServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramServer")
            .field("mechanism", &self.mechanism)
            .finish_non_exhaustive()
    }
}

/// `[\x01-\x7F]` without `,` (Kafka's VALUE).
fn value_char(c: char) -> bool {
    ('\u{1}'..='\u{7f}').contains(&c) && c != ','
}

/// Kafka's SASLNAME: `(?:[\x01-\x7F&&[^=,]]|=2C|=3D)+`, unescaped.
fn sasl_name(text: &str) -> Option<String> {
    if text.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '=' {
            match rest.get(..3) {
                Some("=2C") => out.push(','),
                Some("=3D") => out.push('='),
                _ => return None,
            }
            rest = &rest[3..];
        } else if value_char(c) {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        } else {
            return None;
        }
    }
    Some(out)
}

/// Kafka's PRINTABLE nonce: `[\x21-\x7E]` without `,`.
fn valid_nonce(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b',')
}

/// Kafka's extensions: `(,[A-Za-z]+=[\x01-\x7F&&[^,]]+)*`, as (name, value) pairs.
fn extensions<'a>(parts: &[&'a str]) -> Option<Vec<(&'a str, &'a str)>> {
    parts
        .iter()
        .map(|part| {
            let (name, value) = part.split_once('=')?;
            let ok = !name.is_empty()
                && name.bytes().all(|b| b.is_ascii_alphabetic())
                && !value.is_empty()
                && value.chars().all(value_char);
            ok.then_some((name, value))
        })
        .collect()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

impl ScramServer {
    pub fn new(mechanism: ScramMechanism) -> ScramServer {
        ScramServer {
            mechanism,
            state: State::ClientFirst,
        }
    }

    /// Evaluates the client's next message: the server-first message after the
    /// client-first one, then `(user name, server-final message)` once the proof holds.
    pub fn evaluate(
        &mut self,
        message: &[u8],
        lookup: impl FnOnce(&str) -> Option<UserScramCredentialRecord>,
    ) -> Result<(Vec<u8>, Option<String>), ScramFailure> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::ClientFirst => self.client_first(message, lookup).map(|m| (m, None)),
            State::ClientFinal {
                client_first_bare,
                server_first,
                nonce,
                username,
                credential,
            } => {
                let reply = self.client_final(
                    message,
                    &client_first_bare,
                    &server_first,
                    &nonce,
                    &credential,
                )?;
                Ok((reply, Some(username)))
            }
            State::Done => Err(ScramFailure::Invalid(
                "SCRAM message after the exchange completed".into(),
            )),
        }
    }

    fn client_first(
        &mut self,
        message: &[u8],
        lookup: impl FnOnce(&str) -> Option<UserScramCredentialRecord>,
    ) -> Result<Vec<u8>, ScramFailure> {
        let invalid = || ScramFailure::Invalid("Invalid SCRAM client first message format".into());
        let text = std::str::from_utf8(message).map_err(|_| invalid())?;
        // gs2-header: only "n" (no channel binding), as Kafka's pattern allows.
        let rest = text.strip_prefix("n,").ok_or_else(invalid)?;
        let (authzid, bare) = rest.split_once(',').ok_or_else(invalid)?;
        let authzid = match authzid {
            "" => String::new(),
            other => {
                sasl_name(other.strip_prefix("a=").ok_or_else(invalid)?).ok_or_else(invalid)?
            }
        };
        let mut parts: Vec<&str> = bare.split(',').collect();
        // Kafka's reserved "m=" attribute is allowed before the name, and ignored.
        if parts.first().is_some_and(|p| p.starts_with("m=")) {
            parts.remove(0);
        }
        if parts.len() < 2 {
            return Err(invalid());
        }
        let username = parts[0]
            .strip_prefix("n=")
            .and_then(sasl_name)
            .ok_or_else(invalid)?;
        let client_nonce = parts[1].strip_prefix("r=").ok_or_else(invalid)?;
        if !valid_nonce(client_nonce) {
            return Err(invalid());
        }
        let extensions = extensions(&parts[2..]).ok_or_else(invalid)?;
        if extensions
            .iter()
            .any(|(name, value)| *name == "tokenauth" && value.eq_ignore_ascii_case("true"))
        {
            // Delegation tokens (KIP-48) are not served.
            return Err(ScramFailure::Invalid(format!(
                "Token Authentication failed: Invalid tokenId : {username}"
            )));
        }
        let credential = lookup(&username).ok_or_else(|| {
            ScramFailure::Invalid("Authentication failed: Invalid user credentials".into())
        })?;
        if !authzid.is_empty() && authzid != username {
            return Err(ScramFailure::Authentication(
                "Authentication failed: Client requested an authorization id that is different from username"
                    .into(),
            ));
        }
        if credential.iterations < MIN_ITERATIONS {
            return Err(ScramFailure::Invalid(format!(
                "Iterations {} is less than the minimum {MIN_ITERATIONS} for {}",
                credential.iterations,
                self.mechanism.name()
            )));
        }
        let nonce = format!("{client_nonce}{}", random_printable(32));
        let server_first = format!(
            "r={nonce},s={},i={}",
            B64.encode(&credential.salt),
            credential.iterations
        );
        self.state = State::ClientFinal {
            client_first_bare: bare.to_string(),
            server_first: server_first.clone(),
            nonce,
            username,
            credential,
        };
        Ok(server_first.into_bytes())
    }

    fn client_final(
        &self,
        message: &[u8],
        client_first_bare: &str,
        server_first: &str,
        nonce: &str,
        credential: &UserScramCredentialRecord,
    ) -> Result<Vec<u8>, ScramFailure> {
        let invalid = || ScramFailure::Invalid("Invalid SCRAM client final message format".into());
        let text = std::str::from_utf8(message).map_err(|_| invalid())?;
        let (without_proof, proof) = text.rsplit_once(",p=").ok_or_else(invalid)?;
        let parts: Vec<&str> = without_proof.split(',').collect();
        if parts.len() < 2 {
            return Err(invalid());
        }
        // The channel binding is not checked, as Kafka does not: it enters the signed
        // message, so a client that sent another one fails the proof anyway.
        let channel = parts[0].strip_prefix("c=").ok_or_else(invalid)?;
        B64.decode(channel).map_err(|_| invalid())?;
        let client_nonce = parts[1].strip_prefix("r=").ok_or_else(invalid)?;
        extensions(&parts[2..]).ok_or_else(invalid)?;
        let proof = B64.decode(proof).map_err(|_| invalid())?;
        if client_nonce != nonce {
            return Err(ScramFailure::Invalid(
                "Invalid client nonce in the final client message.".into(),
            ));
        }
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let client_signature = self
            .mechanism
            .hmac(&credential.stored_key, auth_message.as_bytes());
        if proof.len() != client_signature.len() {
            return Err(ScramFailure::Invalid("Invalid client credentials".into()));
        }
        let client_key: Vec<u8> = proof
            .iter()
            .zip(&client_signature)
            .map(|(p, s)| p ^ s)
            .collect();
        if !constant_time_eq(&self.mechanism.hash(&client_key), &credential.stored_key) {
            return Err(ScramFailure::Invalid("Invalid client credentials".into()));
        }
        let server_signature = self
            .mechanism
            .hmac(&credential.server_key, auth_message.as_bytes());
        Ok(format!("v={}", B64.encode(server_signature)).into_bytes())
    }
}

/// One `--add-scram` argument of `kafka-storage format`, parsed:
/// `SCRAM-SHA-256=[name=alice,password=alice-secret]`, with `iterations=` (default
/// 4096) and, instead of `password=`, `salt=` and `saltedpassword=` (base64), values
/// optionally in double quotes.
pub fn parse_add_scram(text: &str) -> Result<UserScramCredentialRecord, String> {
    let (mechanism_name, body) = text.split_once('=').ok_or_else(|| {
        format!(
            "Invalid --add-scram argument: expected MECHANISM=[...], got {}",
            text.split('[').next().unwrap_or("")
        )
    })?;
    let mechanism = ScramMechanism::from_name(mechanism_name.trim())
        .ok_or_else(|| format!("The add-scram mechanism {mechanism_name} is not supported."))?;
    let body = body.trim();
    let body = body
        .strip_prefix('[')
        .ok_or("Expected configuration string to start with [")?;
    let body = body
        .strip_suffix(']')
        .ok_or("Expected configuration string to end with ]")?;
    let mut name = None;
    let mut password = None;
    let mut salt = None;
    let mut salted_password = None;
    let mut iterations = MIN_ITERATIONS;
    for entry in body.split(',') {
        let (key, value) = entry.split_once('=').ok_or_else(|| {
            format!(
                "Invalid add-scram entry {:?}: expected key=value",
                entry.split('=').next().unwrap_or("")
            )
        })?;
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        match key.trim() {
            "name" => name = Some(value.to_string()),
            "password" => password = Some(value.to_string()),
            "salt" => {
                salt = Some(
                    B64.decode(value)
                        .map_err(|_| "add-scram salt is not base64".to_string())?,
                )
            }
            "saltedpassword" => {
                salted_password = Some(
                    B64.decode(value)
                        .map_err(|_| "add-scram saltedpassword is not base64".to_string())?,
                )
            }
            "iterations" => {
                iterations = value
                    .parse()
                    .map_err(|_| format!("add-scram iterations {value} is not a number"))?;
                if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
                    return Err(format!(
                        "add-scram iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}"
                    ));
                }
            }
            other => return Err(format!("Unknown add-scram key {other}")),
        }
    }
    let name = name.ok_or("You must supply 'name' to add-scram")?;
    if name.is_empty() {
        return Err("Username must not be empty".into());
    }
    match (password, salted_password, salt) {
        (_, Some(salted), Some(salt)) => {
            Ok(mechanism.credential(&name, &salt, &salted, iterations))
        }
        (_, Some(_), None) => {
            Err("You must supply 'salt' with 'saltedpassword' to add-scram".into())
        }
        (Some(password), None, Some(salt)) => {
            let salted = mechanism.salted_password(password.as_bytes(), &salt, iterations);
            Ok(mechanism.credential(&name, &salt, &salted, iterations))
        }
        (Some(password), None, None) => {
            Ok(mechanism.credential_from_password(&name, &password, iterations))
        }
        (None, None, _) => {
            Err("You must supply one of 'password' or 'saltedpassword' to add-scram".into())
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A SCRAM client as RFC 5802 describes it, for the server's tests.
    pub(crate) struct Client {
        pub mechanism: ScramMechanism,
        pub password: String,
        pub nonce: String,
        pub client_first_bare: String,
        pub server_signature: Vec<u8>,
    }

    impl Client {
        pub fn new(mechanism: ScramMechanism, user: &str, password: &str) -> Client {
            let nonce = "fyko+d2lbbFgONRv9qkxdawL".to_string();
            Client {
                mechanism,
                password: password.into(),
                client_first_bare: format!("n={user},r={nonce}"),
                nonce,
                server_signature: Vec::new(),
            }
        }

        pub fn first(&self) -> Vec<u8> {
            format!("n,,{}", self.client_first_bare).into_bytes()
        }

        pub fn final_message(&mut self, server_first: &[u8]) -> Vec<u8> {
            let server_first = std::str::from_utf8(server_first).unwrap();
            let mut nonce = "";
            let mut salt = Vec::new();
            let mut iterations = 0;
            for part in server_first.split(',') {
                let (key, value) = part.split_once('=').unwrap();
                match key {
                    "r" => nonce = value,
                    "s" => salt = B64.decode(value).unwrap(),
                    "i" => iterations = value.parse().unwrap(),
                    _ => {}
                }
            }
            assert!(nonce.starts_with(&self.nonce));
            let m = self.mechanism;
            let salted = m.salted_password(self.password.as_bytes(), &salt, iterations);
            let client_key = m.hmac(&salted, b"Client Key");
            let stored_key = m.hash(&client_key);
            let without_proof = format!("c=biws,r={nonce}");
            let auth = format!("{},{server_first},{without_proof}", self.client_first_bare);
            let signature = m.hmac(&stored_key, auth.as_bytes());
            let proof: Vec<u8> = client_key
                .iter()
                .zip(&signature)
                .map(|(a, b)| a ^ b)
                .collect();
            let server_key = m.hmac(&salted, b"Server Key");
            self.server_signature = m.hmac(&server_key, auth.as_bytes());
            format!("{without_proof},p={}", B64.encode(proof)).into_bytes()
        }
    }

    #[test]
    fn rfc_7677_test_vector_derives_the_same_keys() {
        // RFC 7677 section 3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==,
        // 4096 iterations; the server's signature in its final message is
        // 6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=.
        let m = ScramMechanism::Sha256;
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let salted = m.salted_password(b"pencil", &salt, 4096);
        let credential = m.credential("user", &salt, &salted, 4096);
        let auth = "n=user,r=rOprNGfwEbeRWgbNEkqO,\
                    r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,\
                    c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        assert_eq!(
            B64.encode(m.hmac(&credential.server_key, auth.as_bytes())),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
        // And the client's proof of that exchange verifies against the stored key.
        let client_key = m.hmac(&salted, b"Client Key");
        let signature = m.hmac(&credential.stored_key, auth.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        assert_eq!(
            B64.encode(proof),
            "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
    }

    fn exchange(
        mechanism: ScramMechanism,
        stored: &UserScramCredentialRecord,
        user: &str,
        password: &str,
    ) -> Result<String, ScramFailure> {
        let mut server = ScramServer::new(mechanism);
        let mut client = Client::new(mechanism, user, password);
        let lookup = |name: &str| (name == stored.name).then(|| stored.clone());
        let (server_first, done) = server.evaluate(&client.first(), lookup)?;
        assert!(done.is_none());
        let (server_final, done) =
            server.evaluate(&client.final_message(&server_first), |_| None)?;
        assert_eq!(
            server_final,
            format!("v={}", B64.encode(&client.server_signature)).into_bytes(),
            "the server proves it knows the key"
        );
        Ok(done.unwrap())
    }

    #[test]
    fn both_mechanisms_authenticate_the_right_password_only() {
        for m in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            let stored = m.credential_from_password("alice", "alice-secret", 4096);
            assert_eq!(
                stored.stored_key.len(),
                if m == ScramMechanism::Sha256 { 32 } else { 64 }
            );
            assert_eq!(
                exchange(m, &stored, "alice", "alice-secret").unwrap(),
                "alice"
            );
            assert_eq!(
                exchange(m, &stored, "alice", "wrong").unwrap_err(),
                ScramFailure::Invalid("Invalid client credentials".into())
            );
            // An unknown user fails at the first message, as in Kafka.
            let mut server = ScramServer::new(m);
            let client = Client::new(m, "mallory", "x");
            assert_eq!(
                server.evaluate(&client.first(), |_| None).unwrap_err(),
                ScramFailure::Invalid("Authentication failed: Invalid user credentials".into())
            );
        }
        // A credential of one mechanism does not answer for the other.
        let stored = ScramMechanism::Sha256.credential_from_password("alice", "pw", 4096);
        assert!(exchange(ScramMechanism::Sha512, &stored, "alice", "pw").is_err());
    }

    #[test]
    fn malformed_messages_fail_cleanly() {
        let stored = ScramMechanism::Sha256.credential_from_password("a,b=c", "pw", 4096);
        // Escaped names are unescaped before the lookup.
        let mut server = ScramServer::new(ScramMechanism::Sha256);
        let lookup = |name: &str| (name == "a,b=c").then(|| stored.clone());
        assert!(server.evaluate(b"n,,n=a=2Cb=3Dc,r=abc", lookup).is_ok());
        for first in [
            &b""[..],
            b"n",
            b"n,,n",
            b"n,,n=",
            b"n,,n=alice",
            b"n,,n=alice,r=",
            b"n,a,n=alice,r=x",
            b"y,,n=alice,r=x",
            b"p=tls-unique,,n=alice,r=x",
            b"n,,n=al=ice,r=x",
            b"n,,n=al\xffice,r=x",
            b"n,,n=alice,r=x,=",
            b"n,,n=alice,r=x,1=2",
            b"n,,r=x,n=alice",
        ] {
            let mut server = ScramServer::new(ScramMechanism::Sha256);
            assert!(
                matches!(
                    server.evaluate(first, |_| Some(stored.clone())),
                    Err(ScramFailure::Invalid(_))
                ),
                "{:?}",
                String::from_utf8_lossy(first)
            );
        }
        for last in [
            &b""[..],
            b"p=",
            b"c=biws,p=abc",
            b"c=biws,r=abc,p=!!",
            b"c=!!,r=abc,p=AAAA",
            b"c=biws,r=abc,p=AAAA",
        ] {
            let mut server = ScramServer::new(ScramMechanism::Sha256);
            server
                .evaluate(b"n,,n=a=2Cb=3Dc,r=abc", |_| Some(stored.clone()))
                .unwrap();
            assert!(
                matches!(
                    server.evaluate(last, |_| None),
                    Err(ScramFailure::Invalid(_))
                ),
                "{:?}",
                String::from_utf8_lossy(last)
            );
        }
    }

    #[test]
    fn every_prefix_and_byte_flip_of_a_real_exchange_fails_or_passes_without_panic() {
        use rand::{Rng, SeedableRng};
        let m = ScramMechanism::Sha512;
        let stored = m.credential_from_password("alice", "pw", 4096);
        let mut server = ScramServer::new(m);
        let mut client = Client::new(m, "alice", "pw");
        let first = client.first();
        let (server_first, _) = server.evaluate(&first, |_| Some(stored.clone())).unwrap();
        let last = client.final_message(&server_first);
        let mut rng = rand::rngs::StdRng::seed_from_u64(25);
        let mut variants: Vec<(Vec<u8>, bool)> = Vec::new();
        for message in [&first, &last] {
            let is_final = std::ptr::eq(message, &last);
            for end in 0..message.len() {
                variants.push((message[..end].to_vec(), is_final));
            }
            for _ in 0..200 {
                let mut flipped = message.clone();
                let at = rng.gen_range(0..flipped.len());
                flipped[at] = rng.r#gen();
                variants.push((flipped, is_final));
            }
        }
        for (message, is_final) in variants {
            let mut server = ScramServer::new(m);
            if is_final {
                // The same server nonce cannot be replayed: any final message here fails.
                server.evaluate(&first, |_| Some(stored.clone())).unwrap();
                assert!(server.evaluate(&message, |_| None).is_err());
            } else {
                let _ = server.evaluate(&message, |_| Some(stored.clone()));
            }
        }
    }

    #[test]
    fn kafkas_rules_for_authzid_tokens_and_iterations() {
        let stored = ScramMechanism::Sha256.credential_from_password("alice", "pw", 4096);
        let first = |message: &[u8], stored: &UserScramCredentialRecord| {
            ScramServer::new(ScramMechanism::Sha256).evaluate(message, |_| Some(stored.clone()))
        };
        assert_eq!(
            first(b"n,a=bob,n=alice,r=x", &stored).unwrap_err(),
            ScramFailure::Authentication(
                "Authentication failed: Client requested an authorization id that is different from username".into()
            )
        );
        assert!(first(b"n,a=alice,n=alice,r=x", &stored).is_ok());
        // Kafka's extensions: tokenauth asks for a delegation token, which is refused.
        assert!(first(b"n,,n=alice,r=x,tokenauth=true", &stored).is_err());
        assert!(first(b"n,,n=alice,r=x,other=1", &stored).is_ok());
        let weak = UserScramCredentialRecord {
            iterations: 4095,
            ..stored.clone()
        };
        assert!(first(b"n,,n=alice,r=x", &weak).is_err());
    }

    #[test]
    fn add_scram_follows_kafka_storage_syntax() {
        let record = parse_add_scram("SCRAM-SHA-256=[name=admin,password=admin-secret]").unwrap();
        assert_eq!(
            (record.name.as_str(), record.mechanism, record.iterations),
            ("admin", 1, 4096)
        );
        let mut server = ScramServer::new(ScramMechanism::Sha256);
        let mut client = Client::new(ScramMechanism::Sha256, "admin", "admin-secret");
        let (first, _) = server
            .evaluate(&client.first(), |_| Some(record.clone()))
            .unwrap();
        assert!(
            server
                .evaluate(&client.final_message(&first), |_| None)
                .is_ok()
        );
        let record = parse_add_scram(
            "SCRAM-SHA-512=[name=\"bob\",iterations=8192,salt=\"c2FsdA==\",password=pw]",
        )
        .unwrap();
        assert_eq!(
            (record.name.as_str(), record.mechanism, record.iterations),
            ("bob", 2, 8192)
        );
        assert_eq!(record.salt, b"salt");
        for (text, error) in [
            ("SCRAM-SHA-1=[name=a,password=b]", "not supported"),
            ("SCRAM-SHA-256=name=a,password=b]", "start with ["),
            ("SCRAM-SHA-256=[password=b]", "You must supply 'name'"),
            (
                "SCRAM-SHA-256=[name=a]",
                "one of 'password' or 'saltedpassword'",
            ),
            ("SCRAM-SHA-256=[name=a,saltedpassword=AAAA]", "'salt' with"),
            (
                "SCRAM-SHA-256=[name=a,password=b,iterations=100]",
                "between 4096 and 16384",
            ),
        ] {
            let refusal = parse_add_scram(text).unwrap_err();
            assert!(refusal.contains(error), "{text}: {refusal}");
            assert!(!refusal.contains("password=b"), "{refusal}");
        }
    }
}
