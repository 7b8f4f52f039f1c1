//! A small SMTP client (RFC 5321) on Tokio: one message per connection, EHLO (HELO if
//! the server does not know EHLO), AUTH PLAIN (RFC 4954) when configured, MAIL, RCPT for
//! each recipient, DATA with dot-stuffing, QUIT.
//!
//! Why not `lettre`: it is pure Rust without TLS, but then it adds nothing this ~200-line
//! client lacks for Burrow's two auth modes (plain and none), and with TLS it brings in
//! rustls's C/assembly crypto provider (ring or aws-lc-rs) and a dozen crates. Without
//! TLS there is no STARTTLS either, which is why [`super::config`] refuses plain auth to a
//! server that is not on this host.
//!
//! Bounded: the whole exchange has one timeout (`timeout`, 30 s by default); a reply line
//! longer than [`REPLY_LINE_BYTES_MAX`] or a reply of more than [`REPLY_LINES_MAX`] lines
//! is a protocol error.

use std::time::Duration;

use base64::Engine;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// RFC 5321 allows 512 bytes per reply line; servers stay well under this.
pub(crate) const REPLY_LINE_BYTES_MAX: u64 = 4096;
pub(crate) const REPLY_LINES_MAX: usize = 64;
/// The name given in EHLO, as Go's gomail (Burrow's mailer) gives it.
const CLIENT_NAME: &str = "localhost";

#[derive(Debug, thiserror::Error)]
pub(crate) enum SmtpError {
    #[error("SMTP connection: {0}")]
    Io(#[from] std::io::Error),
    #[error("SMTP exchange took longer than {0:?}")]
    Timeout(Duration),
    #[error("SMTP server answered {code} to {stage}: {text}")]
    Rejected {
        stage: &'static str,
        code: u16,
        text: String,
    },
    #[error("SMTP protocol: {0}")]
    Protocol(String),
    #[error("the SMTP server does not offer AUTH PLAIN")]
    NoPlainAuth,
}

impl SmtpError {
    /// A 4xx reply or a broken connection may pass; a 5xx reply will not.
    pub(crate) fn retryable(&self) -> bool {
        match self {
            SmtpError::Io(_) | SmtpError::Timeout(_) | SmtpError::Protocol(_) => true,
            SmtpError::Rejected { code, .. } => *code < 500,
            SmtpError::NoPlainAuth => false,
        }
    }
}

/// One message to send.
pub(crate) struct Envelope<'a> {
    pub from: &'a str,
    pub to: &'a [String],
    /// The message, headers and body, lines ending in CRLF.
    pub data: &'a str,
}

pub(crate) struct Server<'a> {
    pub host: &'a str,
    pub port: u16,
    pub plain_auth: Option<(&'a str, &'a str)>,
    pub timeout: Duration,
}

pub(crate) async fn send(server: &Server<'_>, envelope: &Envelope<'_>) -> Result<(), SmtpError> {
    let exchange = async {
        let stream = TcpStream::connect((server.host, server.port)).await?;
        let (reader, writer) = stream.into_split();
        let mut session = Session {
            reader: BufReader::new(reader),
            writer,
        };
        session.deliver(server.plain_auth, envelope).await
    };
    tokio::time::timeout(server.timeout, exchange)
        .await
        .map_err(|_| SmtpError::Timeout(server.timeout))?
}

struct Reply {
    code: u16,
    lines: Vec<String>,
}

impl Reply {
    fn text(&self) -> String {
        self.lines.join(" / ")
    }
}

struct Session<R, W> {
    reader: BufReader<R>,
    writer: W,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    async fn deliver(
        &mut self,
        plain_auth: Option<(&str, &str)>,
        envelope: &Envelope<'_>,
    ) -> Result<(), SmtpError> {
        self.expect("the greeting", &[220]).await?;
        self.write(&format!("EHLO {CLIENT_NAME}\r\n")).await?;
        let ehlo = self.reply().await?;
        let capabilities = if ehlo.code == 250 {
            ehlo.lines
        } else {
            self.command(&format!("HELO {CLIENT_NAME}\r\n"), "HELO", &[250])
                .await?;
            Vec::new()
        };
        if let Some((username, password)) = plain_auth {
            let offers_plain = capabilities.iter().any(|line| {
                let mut words = line.split_whitespace();
                words
                    .next()
                    .is_some_and(|word| word.eq_ignore_ascii_case("AUTH"))
                    && words.any(|mechanism| mechanism.eq_ignore_ascii_case("PLAIN"))
            });
            if !offers_plain {
                return Err(SmtpError::NoPlainAuth);
            }
            let token = base64::engine::general_purpose::STANDARD
                .encode(format!("\0{username}\0{password}"));
            self.command(&format!("AUTH PLAIN {token}\r\n"), "AUTH PLAIN", &[235])
                .await?;
        }
        self.command(
            &format!("MAIL FROM:<{}>\r\n", envelope.from),
            "MAIL FROM",
            &[250],
        )
        .await?;
        for recipient in envelope.to {
            self.command(
                &format!("RCPT TO:<{recipient}>\r\n"),
                "RCPT TO",
                &[250, 251],
            )
            .await?;
        }
        self.command("DATA\r\n", "DATA", &[354]).await?;
        self.write(&dot_stuff(envelope.data)).await?;
        self.expect("the message", &[250]).await?;
        // The message is accepted; a server that drops the line now changes nothing.
        let _ = self.write("QUIT\r\n").await;
        Ok(())
    }

    async fn write(&mut self, text: &str) -> Result<(), SmtpError> {
        self.writer.write_all(text.as_bytes()).await?;
        self.writer.flush().await?;
        Ok(())
    }

    async fn command(
        &mut self,
        line: &str,
        stage: &'static str,
        accepted: &[u16],
    ) -> Result<Reply, SmtpError> {
        self.write(line).await?;
        self.expect(stage, accepted).await
    }

    async fn expect(&mut self, stage: &'static str, accepted: &[u16]) -> Result<Reply, SmtpError> {
        let reply = self.reply().await?;
        if accepted.contains(&reply.code) {
            Ok(reply)
        } else {
            Err(SmtpError::Rejected {
                stage,
                code: reply.code,
                text: reply.text(),
            })
        }
    }

    /// A reply: lines `250-...` continued until `250 ...`.
    async fn reply(&mut self) -> Result<Reply, SmtpError> {
        let mut lines = Vec::new();
        loop {
            let mut raw = Vec::new();
            (&mut self.reader)
                .take(REPLY_LINE_BYTES_MAX)
                .read_until(b'\n', &mut raw)
                .await?;
            if raw.last() != Some(&b'\n') {
                return Err(SmtpError::Protocol(if raw.is_empty() {
                    "the server closed the connection".to_string()
                } else {
                    format!("a reply line without an end within {REPLY_LINE_BYTES_MAX} bytes")
                }));
            }
            let line = String::from_utf8_lossy(&raw);
            let line = line.trim_end_matches(['\r', '\n']);
            let code = line
                .get(..3)
                .and_then(|digits| digits.parse::<u16>().ok())
                .filter(|code| (200..600).contains(code))
                .ok_or_else(|| SmtpError::Protocol(format!("not a reply line: {line:?}")))?;
            let separator = line.as_bytes().get(3).copied();
            lines.push(line.get(4..).unwrap_or_default().to_string());
            if lines.len() > REPLY_LINES_MAX {
                return Err(SmtpError::Protocol(format!(
                    "a reply of more than {REPLY_LINES_MAX} lines"
                )));
            }
            if separator != Some(b'-') {
                return Ok(Reply { code, lines });
            }
        }
    }
}

/// The DATA payload: a line starting with `.` gets another, then the `.` line ends it.
fn dot_stuff(data: &str) -> String {
    let mut out = String::with_capacity(data.len() + 8);
    for line in data.split_inclusive("\r\n") {
        if line.starts_with('.') {
            out.push('.');
        }
        out.push_str(line);
    }
    if !out.ends_with("\r\n") {
        out.push_str("\r\n");
    }
    out.push_str(".\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a session against a scripted server: `script` is the server's whole output,
    /// read by the client as it goes; returns what the client wrote.
    async fn converse(
        script: &str,
        plain_auth: Option<(&str, &str)>,
    ) -> (Result<(), SmtpError>, String) {
        let (client_side, mut server_side) = tokio::io::duplex(64 * 1024);
        let (reader, writer) = tokio::io::split(client_side);
        let mut session = Session {
            reader: BufReader::new(reader),
            writer,
        };
        server_side
            .write_all(script.as_bytes())
            .await
            .expect("scripted");
        // The script is all the server says: then the client reads the end of the stream.
        server_side.shutdown().await.expect("shut down");
        let to = vec!["ops@example.com".to_string(), "dba@example.com".to_string()];
        let envelope = Envelope {
            from: "burrow@example.com",
            to: &to,
            data: "Subject: x\r\n\r\n.hidden\r\nbody\r\n",
        };
        let result = session.deliver(plain_auth, &envelope).await;
        drop(session);
        let mut written = String::new();
        server_side
            .read_to_string(&mut written)
            .await
            .expect("read back");
        (result, written)
    }

    #[tokio::test]
    async fn a_message_goes_through_with_plain_auth() {
        let script = "220 hello\r\n250-mx greets localhost\r\n250-SIZE 100\r\n250 AUTH LOGIN PLAIN\r\n\
                      235 ok\r\n250 ok\r\n250 ok\r\n251 forwarded\r\n354 go\r\n250 queued\r\n221 bye\r\n";
        let (result, written) = converse(script, Some(("user", "secret"))).await;
        result.expect("delivered");
        assert_eq!(
            written,
            "EHLO localhost\r\nAUTH PLAIN AHVzZXIAc2VjcmV0\r\nMAIL FROM:<burrow@example.com>\r\n\
             RCPT TO:<ops@example.com>\r\nRCPT TO:<dba@example.com>\r\nDATA\r\n\
             Subject: x\r\n\r\n..hidden\r\nbody\r\n.\r\nQUIT\r\n"
        );
    }

    #[tokio::test]
    async fn refusals_say_where_and_whether_to_retry() {
        /// The server's script, the credentials, the error expected, whether to retry.
        type Case<'a> = (&'a str, Option<(&'a str, &'a str)>, &'a str, bool);
        let cases: &[Case<'_>] = &[
            (
                "554 go away\r\n",
                None,
                "554 to the greeting: go away",
                false,
            ),
            (
                "220 hi\r\n250 mx\r\n",
                Some(("u", "p")),
                "does not offer AUTH PLAIN",
                false,
            ),
            (
                "220 hi\r\n250 mx\r\n451 try later\r\n",
                None,
                "451 to MAIL FROM: try later",
                true,
            ),
            (
                "220 hi\r\n250 mx\r\n250 ok\r\n550 no such user\r\n",
                None,
                "550 to RCPT TO",
                false,
            ),
            ("220 hi\r\n", None, "closed the connection", true),
            ("220 hi\r\nxyz\r\n", None, "not a reply line", true),
            // No EHLO: HELO, then on.
            (
                "220 hi\r\n500 what\r\n250 hello\r\n452 full\r\n",
                None,
                "452 to MAIL FROM",
                true,
            ),
        ];
        for (script, auth, expected, retryable) in cases {
            let (result, _) = converse(script, *auth).await;
            let error = result.expect_err(script);
            assert!(error.to_string().contains(expected), "{script:?}: {error}");
            assert_eq!(error.retryable(), *retryable, "{script:?}");
        }
    }

    #[tokio::test]
    async fn long_replies_are_refused() {
        let line = format!("220 {}\r\n", "x".repeat(REPLY_LINE_BYTES_MAX as usize));
        let (result, _) = converse(&line, None).await;
        assert!(
            result
                .expect_err("too long")
                .to_string()
                .contains("without an end")
        );
        let many = "220-x\r\n".repeat(REPLY_LINES_MAX + 1) + "220 x\r\n";
        let (result, _) = converse(&many, None).await;
        assert!(
            result
                .expect_err("too many")
                .to_string()
                .contains("more than")
        );
    }

    #[test]
    fn dot_stuffing_doubles_leading_dots_and_ends_the_data() {
        assert_eq!(dot_stuff("a\r\n.b\r\n..c"), "a\r\n..b\r\n...c\r\n.\r\n");
    }
}
