//! The `email` notifier: one message per notification to every `to` address, as
//! Burrow's `EmailNotifier` sends it. The template writes the headers it controls at the
//! top, Burrow's way: it must begin with `Subject: `; a `Content-Type: ` line sets the
//! body's type (text/plain otherwise) and a `MIME-version: ` line the MIME version; every
//! other line is the body. From, To and Date come from the configuration and the clock.
//!
//! The body goes out quoted-printable in UTF-8 (as gomail, Burrow's mailer, sends it), a
//! non-ASCII subject as an RFC 2047 encoded word. Unlike Burrow, a `Content-Type` line's
//! parameters (`text/html; charset=...`) are dropped rather than glued onto the type with
//! the semicolon removed: the body is always sent as UTF-8.

use std::time::SystemTime;

use base64::Engine;

use super::config::EmailSettings;
use super::delivery::DeliveryError;
use super::smtp;
use super::template::rfc5322_date;

/// Longest subject kept; RFC 5322 caps a header line at 998 bytes.
const SUBJECT_BYTES_MAX: usize = 900;
/// Quoted-printable lines are at most 76 characters, the soft break's `=` included.
const QUOTED_PRINTABLE_LINE_MAX: usize = 76;

/// A message ready for DATA: headers and body, lines ending in CRLF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EmailMessage {
    pub data: String,
}

/// Builds the message from a rendered template, or says why the template's output is
/// not a message.
pub(crate) fn compose(
    rendered: &str,
    settings: &EmailSettings,
    date: SystemTime,
) -> Result<EmailMessage, String> {
    const SUBJECT: &str = "Subject: ";
    const CONTENT_TYPE: &str = "Content-Type: ";
    const MIME_VERSION: &str = "MIME-version: ";
    if !rendered.starts_with(SUBJECT) {
        return Err(
            "the email template's output does not begin with a \"Subject: \" line".to_string(),
        );
    }
    let mut subject = String::new();
    let mut content_type = "text/plain".to_string();
    let mut mime_version = "1.0".to_string();
    let mut body = String::with_capacity(rendered.len());
    for line in rendered.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(value) = line.strip_prefix(SUBJECT)
            && subject.is_empty()
        {
            subject = value.to_string();
        } else if let Some(value) = line.strip_prefix(CONTENT_TYPE) {
            content_type = media_type(value);
        } else if let Some(value) = line.strip_prefix(MIME_VERSION) {
            let version: String = value
                .chars()
                .filter(|character| character.is_ascii_digit() || *character == '.')
                .collect();
            if !version.is_empty() {
                mime_version = version;
            }
        } else {
            body.push_str(line);
            body.push('\n');
        }
    }
    let mut data = String::with_capacity(body.len() * 2 + 512);
    data.push_str(&format!("From: {}\r\n", settings.from));
    data.push_str(&format!("To: {}\r\n", settings.to.join(", ")));
    data.push_str(&format!("Subject: {}\r\n", encode_subject(&subject)));
    data.push_str(&format!("Date: {}\r\n", rfc5322_date(date)));
    data.push_str(&format!("MIME-Version: {mime_version}\r\n"));
    data.push_str(&format!("Content-Type: {content_type}; charset=UTF-8\r\n"));
    data.push_str("Content-Transfer-Encoding: quoted-printable\r\n\r\n");
    data.push_str(&quoted_printable(&body));
    Ok(EmailMessage { data })
}

/// `text/html; charset=x` to `text/html`; anything that is not a media type to
/// `text/plain`.
fn media_type(value: &str) -> String {
    let media = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let valid = media.split_once('/').is_some_and(|(kind, sub)| {
        let token = |part: &str| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&byte))
        };
        token(kind) && token(sub)
    });
    if valid {
        media
    } else {
        "text/plain".to_string()
    }
}

fn encode_subject(subject: &str) -> String {
    let mut end = subject.len().min(SUBJECT_BYTES_MAX);
    while !subject.is_char_boundary(end) {
        end -= 1;
    }
    let subject = &subject[..end];
    if subject.bytes().all(|byte| (0x20..0x7f).contains(&byte)) {
        return subject.to_string();
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(subject);
    format!("=?UTF-8?B?{encoded}?=")
}

/// RFC 2045 quoted-printable of a `\n`-separated text, CRLF line ends.
fn quoted_printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let lines: Vec<&str> = text.split('\n').collect();
    for (index, line) in lines.iter().enumerate() {
        let mut width = 0;
        let bytes = line.as_bytes();
        for (position, &byte) in bytes.iter().enumerate() {
            let last = position + 1 == bytes.len();
            let literal = (byte == b' ' || byte == b'\t') && !last
                || (33..=126).contains(&byte) && byte != b'=';
            let piece_width = if literal { 1 } else { 3 };
            // Leave room for the soft break's `=`.
            if width + piece_width > QUOTED_PRINTABLE_LINE_MAX - 1 {
                out.push_str("=\r\n");
                width = 0;
            }
            if literal {
                out.push(byte as char);
            } else {
                out.push_str(&format!("={byte:02X}"));
            }
            width += piece_width;
        }
        if index + 1 < lines.len() {
            out.push_str("\r\n");
        }
    }
    out
}

pub(crate) struct EmailTransport {
    settings: EmailSettings,
}

impl EmailTransport {
    pub(crate) fn new(settings: &EmailSettings) -> EmailTransport {
        EmailTransport {
            settings: settings.clone(),
        }
    }

    pub(crate) async fn send(&self, message: &EmailMessage) -> Result<(), DeliveryError> {
        let server =
            smtp::Server {
                host: &self.settings.server,
                port: self.settings.port,
                plain_auth: self.settings.plain_auth.as_ref().map(|credentials| {
                    (credentials.username.as_str(), credentials.password.as_str())
                }),
                timeout: self.settings.timeout,
            };
        let envelope = smtp::Envelope {
            from: &self.settings.from,
            to: &self.settings.to,
            data: &message.data,
        };
        smtp::send(&server, &envelope)
            .await
            .map_err(|error| DeliveryError {
                retryable: error.retryable(),
                message: format!("{}:{}: {error}", self.settings.server, self.settings.port),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn settings() -> EmailSettings {
        EmailSettings {
            server: "127.0.0.1".to_string(),
            port: 25,
            plain_auth: None,
            from: "burrow@example.com".to_string(),
            to: vec!["ops@example.com".to_string(), "dba@example.com".to_string()],
            timeout: Duration::from_secs(30),
        }
    }

    /// Burrow's email tests' templates, rendered: the subject and MIME version are taken
    /// out; the blank line after the subject and the one the final newline leaves stay in
    /// the body, as in Burrow.
    #[test]
    fn burrows_header_lines_become_headers() {
        let date = UNIX_EPOCH + Duration::from_secs(1_351_807_721);
        let rendered =
            "Subject: [Burrow] Kafka Consumer Lag Alert\n\nMIME-version: 1.0\nCluster:  local\n";
        let message = compose(rendered, &settings(), date).expect("a message");
        assert_eq!(
            message.data,
            "From: burrow@example.com\r\nTo: ops@example.com, dba@example.com\r\n\
             Subject: [Burrow] Kafka Consumer Lag Alert\r\nDate: Thu, 01 Nov 2012 22:08:41 +0000\r\n\
             MIME-Version: 1.0\r\nContent-Type: text/plain; charset=UTF-8\r\n\
             Content-Transfer-Encoding: quoted-printable\r\n\r\n\r\nCluster:  local\r\n\r\n"
        );
        let close = "Subject: [Burrow] Kafka Consumer Healthy\n\nContent-Type: text/html; charset=ISO-8859-1\nConsumer is now in a healthy state";
        let message = compose(close, &settings(), date).expect("a message");
        assert!(
            message
                .data
                .contains("Content-Type: text/html; charset=UTF-8\r\n"),
            "{}",
            message.data
        );
        assert!(
            message
                .data
                .ends_with("\r\n\r\n\r\nConsumer is now in a healthy state\r\n"),
            "{}",
            message.data
        );
        let error =
            compose("Hello\nSubject: late\n", &settings(), date).expect_err("no subject first");
        assert!(error.contains("Subject"), "{error}");
    }

    #[test]
    fn subjects_and_bodies_are_encoded() {
        assert_eq!(
            encode_subject("Lag on café"),
            "=?UTF-8?B?TGFnIG9uIGNhZsOp?="
        );
        assert_eq!(encode_subject(&"x".repeat(2000)).len(), SUBJECT_BYTES_MAX);
        assert_eq!(
            quoted_printable("a=b café \nnext\t"),
            "a=3Db caf=C3=A9=20\r\nnext=09"
        );
        let long = quoted_printable(&"y".repeat(200));
        assert!(
            long.split("\r\n")
                .all(|line| line.len() <= QUOTED_PRINTABLE_LINE_MAX),
            "{long}"
        );
        assert_eq!(long.replace("=\r\n", ""), "y".repeat(200));
        let accents = quoted_printable(&"é".repeat(40));
        assert!(
            accents
                .split("\r\n")
                .all(|line| line.len() <= QUOTED_PRINTABLE_LINE_MAX)
        );
        assert_eq!(media_type(" text/HTML ; x"), "text/html");
        assert_eq!(media_type("text/plain\r\nBcc: x"), "text/plain");
        assert_eq!(media_type("nonsense"), "text/plain");
    }
}
