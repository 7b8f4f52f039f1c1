//! The notifiers against real endpoints: an HTTP receiver started here (a stand-in for a
//! webhook such as an alerting service's event API or Slack's), an HTTPS one in Python
//! with a CA made for the test, and Python's aiosmtpd as the mail server. Each test builds
//! notifiers from Burrow-style config sections (the guide's block among them) with
//! Burrow's shipped templates or Sluice's built-in ones, feeds evaluations with explicit
//! times, and checks what arrived.
//!
//! Run: `cargo test -p sluice-monitor --test notifier`. The email test needs `python3`
//! with `aiosmtpd` (`python3 -m pip install aiosmtpd`); without python3 it says so and
//! passes. The https tests serve with Python's `ssl` and `http.server` and make their
//! certificates with the `openssl` command (Debian's `openssl` package); without either
//! they say so and pass.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use serde_json::{Value, json};
use sluice_monitor::notifier::{
    NotificationKind, NotifierSettings, Notifiers, Outcome, RetryPolicy, Submission,
};
use sluice_monitor::types::{ConsumerOffset, GroupStatus, PartitionStatus, Status};

/// How long a test waits for something to arrive before failing.
const ARRIVAL_WAIT: Duration = Duration::from_secs(20);

fn burrow_templates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/burrow-templates")
}

fn offset(offset: i64, timestamp: i64, lag: Option<u64>) -> Option<ConsumerOffset> {
    Some(ConsumerOffset {
        offset,
        order: offset,
        timestamp,
        observed_at: timestamp + 5,
        lag,
    })
}

/// The status the template tests use (src/notifier/template/mod.rs), at a given group
/// status: a partition falling behind and a stopped one.
fn lagging(status: Status) -> GroupStatus {
    let warn = PartitionStatus {
        topic: "orders".to_string(),
        partition: 0,
        owner: "consumer-1/10.0.0.1".to_string(),
        client_id: "client-1".to_string(),
        status: Status::Warning,
        start: offset(100, 1_351_807_000_000, Some(5)),
        end: offset(160, 1_351_807_700_000, Some(45)),
        current_lag: 50,
        complete: 1.0,
    };
    let stop = PartitionStatus {
        topic: "payments".to_string(),
        partition: 3,
        owner: String::new(),
        client_id: String::new(),
        status: Status::Stop,
        start: offset(7, 1_351_806_000_000, None),
        end: offset(7, 1_351_806_500_000, Some(1200)),
        current_lag: 1250,
        complete: 0.7,
    };
    GroupStatus {
        cluster: "local".to_string(),
        group: "billing".to_string(),
        status,
        complete: 0.5,
        partitions: vec![warn, stop.clone()],
        total_partitions: 4,
        maxlag: Some(stop),
        totallag: 1300,
    }
}

fn healthy() -> GroupStatus {
    GroupStatus {
        status: Status::Ok,
        partitions: Vec::new(),
        maxlag: None,
        totallag: 0,
        ..lagging(Status::Ok)
    }
}

/// Burrow's coordinator tests' start time, 2012-11-01T22:08:41Z, plus `seconds`.
fn at(seconds: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_351_807_721 + seconds)
}

/// A port of our own: a socket bound to 127.0.0.1:0 and not yet listening, so a
/// connection to it is refused (the endpoint is down) until [`Receiver::start`] listens
/// on it, and no other socket can take the port meanwhile.
fn reserve_port() -> (tokio::net::TcpSocket, u16) {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket
        .bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .expect("bound to 127.0.0.1:0");
    let port = socket.local_addr().expect("bound").port();
    (socket, port)
}

fn start(sections: Value, retry: RetryPolicy) -> Notifiers {
    let sections: BTreeMap<String, Value> =
        serde_json::from_value(sections).expect("a table of sections");
    let settings = NotifierSettings::from_configs(&sections).expect("valid notifier sections");
    Notifiers::start(settings, retry).expect("started")
}

/// Burrow's close template asks for `.Id`, which its data lacks; this is it with `.ID`.
fn mended_close_template(directory: &Path) -> PathBuf {
    let text = std::fs::read_to_string(burrow_templates().join("default-http-delete.tmpl"))
        .expect("Burrow's close template")
        .replace(".Id", ".ID");
    let path = directory.join("default-http-delete.tmpl");
    std::fs::write(&path, text).expect("written");
    path
}

fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        backoff_initial: Duration::from_millis(50),
        backoff_max: Duration::from_millis(400),
        open_attempts_max: 100,
        close_attempts_max: 100,
    }
}

// ---------------------------------------------------------------------------------------
// HTTP

#[derive(Clone, Debug)]
struct Received {
    method: Method,
    uri: String,
    headers: HeaderMap,
    body: String,
}

/// A webhook receiver on `port`: records every request; answers the first `failures`
/// with 503, then with `status`.
struct Receiver {
    received: Arc<Mutex<Vec<Received>>>,
    server: tokio::task::JoinHandle<()>,
}

impl Receiver {
    fn start(socket: tokio::net::TcpSocket, failures: usize, status: StatusCode) -> Receiver {
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let record = received.clone();
        let answered = Arc::new(Mutex::new(0usize));
        let handler = move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let record = record.clone();
            let answered = answered.clone();
            async move {
                record.lock().expect("not poisoned").push(Received {
                    method,
                    uri: uri.to_string(),
                    headers,
                    body: String::from_utf8_lossy(&body).into_owned(),
                });
                let mut count = answered.lock().expect("not poisoned");
                *count += 1;
                if *count <= failures {
                    StatusCode::SERVICE_UNAVAILABLE
                } else {
                    status
                }
            }
        };
        let router = axum::Router::new().fallback(handler);
        let listener = socket.listen(64).expect("listening");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Receiver { received, server }
    }

    fn requests(&self) -> Vec<Received> {
        self.received.lock().expect("not poisoned").clone()
    }

    /// Waits until `count` requests have arrived.
    async fn wait_for(&self, count: usize) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + ARRIVAL_WAIT;
        loop {
            let requests = self.requests();
            if requests.len() >= count {
                return requests;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} of {count} requests arrived: {requests:?}",
                requests.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn http_section(port: u16, directory: &Path) -> Value {
    json!({
        "alerts": {
            "class-name": "http",
            "url-open": format!("http://127.0.0.1:{port}/v1/event?id={{{{.ID}}}}"),
            "url-close": format!("http://127.0.0.1:{port}/v1/event/{{{{.ID}}}}"),
            "method-close": "DELETE",
            "send-close": true,
            "interval": 60,
            "headers": { "Token": "testtoken" },
            "username": "burrow",
            "password": "secret",
            "extras": { "api_key": "REDACTED", "app": "burrow", "tier": "STG" },
            "template-open": burrow_templates().join("default-http-post.tmpl"),
            "template-close": mended_close_template(directory),
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_notifier_sends_open_then_close_with_burrows_bodies() {
    let directory = tempfile::tempdir().expect("a temp dir");
    let (socket, port) = reserve_port();
    let receiver = Receiver::start(socket, 0, StatusCode::OK);
    let mut notifiers = start(http_section(port, directory.path()), RetryPolicy::default());
    assert_eq!(notifiers.evaluation_interval(), Duration::from_secs(60));

    let opened = notifiers.observe(&lagging(Status::Warning), at(0));
    assert_eq!(opened.len(), 1, "{opened:?}");
    assert_eq!(
        (opened[0].kind, &opened[0].outcome),
        (
            NotificationKind::Open,
            &Outcome::Submitted(Submission::Queued)
        )
    );
    let id = opened[0].event_id.clone();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    // Still lagging within the interval: nothing; then OK: the close.
    assert!(
        notifiers
            .observe(&lagging(Status::Error), at(30))
            .is_empty()
    );
    let closed = notifiers.observe(&healthy(), at(45));
    assert_eq!(closed.len(), 1, "{closed:?}");
    assert_eq!(
        (closed[0].kind, closed[0].event_id.as_str()),
        (NotificationKind::Close, id.as_str())
    );
    // Decided microseconds after the open, maybe before the open was even tried: queued
    // behind it all the same.
    assert_eq!(closed[0].outcome, Outcome::Submitted(Submission::Queued));

    let requests = receiver.wait_for(2).await;
    let (open, close) = (&requests[0], &requests[1]);
    assert_eq!(open.method, Method::POST);
    assert_eq!(open.uri, format!("/v1/event?id={id}"));
    assert_eq!(open.headers["content-type"], "application/json");
    assert_eq!(open.headers["token"], "testtoken");
    assert_eq!(open.headers["authorization"], "Basic YnVycm93OnNlY3JldA==");
    let body: Value = serde_json::from_str(&open.body).expect("the open body is JSON");
    assert_eq!(body["api_key"], "REDACTED");
    let event = &body["events"][0];
    assert_eq!(event["id"], id.as_str());
    assert_eq!(event["event"]["severity"], "WARN");
    assert_eq!(event["event"]["tier"], "STG");
    assert_eq!(event["event"]["group"], "billing");
    assert_eq!(event["event"]["start"], "Nov 01, 2012 22:08:41 UTC");
    assert_eq!(event["event"]["complete"], json!(0.5));
    assert_eq!(event["event"]["partitions"][1]["status"], "STOP");
    assert_eq!(event["event"]["partitions"][1]["start"]["lag"], Value::Null);
    assert_eq!(
        event["event"]["partitions"][0]["end"]["observedAt"],
        json!(1_351_807_700_005i64)
    );

    assert_eq!(close.method, Method::DELETE);
    assert_eq!(close.uri, format!("/v1/event/{id}"));
    assert_eq!(
        close.body,
        format!(
            "{{\"api_key\":\"REDACTED\",\"app\":\"burrow\",\"block\":false,\"ids\":[\"{id}\"]}}\n"
        )
    );

    let left = notifiers.shutdown(Duration::from_secs(5)).await;
    assert_eq!(left["alerts"], 0);
    assert_eq!(receiver.requests().len(), 2, "nothing more was sent");
}

/// The endpoint is down when the incident opens and closes, then comes up answering 503
/// twice: both notifications are retried, arrive in order, and nothing is given up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_notifier_retries_until_the_endpoint_is_up_and_keeps_the_close() {
    let directory = tempfile::tempdir().expect("a temp dir");
    let (socket, port) = reserve_port();
    let mut notifiers = start(http_section(port, directory.path()), fast_retries());

    let opened = notifiers.observe(&lagging(Status::Error), at(0));
    let id = opened[0].event_id.clone();
    // Let the open fail against the closed port at least once, then close the incident.
    let deadline = tokio::time::Instant::now() + ARRIVAL_WAIT;
    while notifiers.stats()["alerts"].failed_attempts == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the open was never tried"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let closed = notifiers.observe(&healthy(), at(20));
    assert_eq!(
        closed[0].outcome,
        Outcome::Submitted(Submission::Queued),
        "{closed:?}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(notifiers.stats()["alerts"].pending, 2);

    let receiver = Receiver::start(socket, 2, StatusCode::OK);
    receiver.wait_for(4).await;
    let deadline = tokio::time::Instant::now() + ARRIVAL_WAIT;
    while notifiers.stats()["alerts"].pending > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still pending: {:?}",
            notifiers.stats()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let methods: Vec<(Method, String)> = receiver
        .requests()
        .into_iter()
        .map(|request| (request.method, request.uri))
        .collect();
    // The two 503s went to the open (a group's notifications go in order), then the
    // open and the close got through.
    assert_eq!(
        methods,
        [
            (Method::POST, format!("/v1/event?id={id}")),
            (Method::POST, format!("/v1/event?id={id}")),
            (Method::POST, format!("/v1/event?id={id}")),
            (Method::DELETE, format!("/v1/event/{id}")),
        ]
    );
    let stats = &notifiers.stats()["alerts"];
    assert_eq!(
        (stats.delivered, stats.abandoned, stats.pending),
        (2, 0, 0),
        "{stats:?}"
    );
    assert!(stats.failed_attempts >= 3, "{stats:?}");
    notifiers.shutdown(Duration::from_secs(1)).await;
}

/// A 400 will be a 400 next time too: the open is given up after one attempt. The close
/// is still sent (the receiver may have acted on the open).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_notifier_gives_up_on_a_refusal_but_still_sends_the_close() {
    let directory = tempfile::tempdir().expect("a temp dir");
    let (socket, port) = reserve_port();
    let receiver = Receiver::start(socket, 0, StatusCode::BAD_REQUEST);
    let mut notifiers = start(http_section(port, directory.path()), fast_retries());
    notifiers.observe(&lagging(Status::Warning), at(0));
    receiver.wait_for(1).await;
    let deadline = tokio::time::Instant::now() + ARRIVAL_WAIT;
    while notifiers.stats()["alerts"].abandoned == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            notifiers.stats()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(notifiers.stats()["alerts"].failed_attempts, 1);
    let closed = notifiers.observe(&healthy(), at(10));
    assert_eq!(closed[0].outcome, Outcome::Submitted(Submission::Queued));
    let requests = receiver.wait_for(2).await;
    assert_eq!(requests[1].method, Method::DELETE);
    notifiers.shutdown(Duration::from_secs(1)).await;
    assert_eq!(receiver.requests().len(), 2);
}

/// The event-streaming guide's `burrow_config` block as written but for its hosts (the
/// brokers are not reached here; Slack's webhook is the local receiver): no templates,
/// no url-close, so Sluice's built-in templates post to the webhook's URL, a Slack
/// message (`text`) that also carries the event.
const GUIDE_BLOCK: &str = r#"
burrow_config:
  general:
    pidfile: "/var/run/burrow.pid"
    stdout-logfile: "/var/log/burrow.log"

  cluster:
    kafka-prod:
      class-name: kafka
      servers: ["127.0.0.1:9092", "127.0.0.1:9093", "127.0.0.1:9094"]
      topic-refresh: 120
      offset-refresh: 30

  notifier:
    slack:
      class-name: http
      url-open: "https://hooks.slack.com/services/xxx/yyy/zzz"
      send-close: true
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guides_slack_notifier_posts_a_text_open_and_close() {
    let (socket, port) = reserve_port();
    let receiver = Receiver::start(socket, 0, StatusCode::OK);
    let yaml = GUIDE_BLOCK.replace(
        "https://hooks.slack.com",
        &format!("http://127.0.0.1:{port}"),
    );
    let config = sluice_monitor::config::Config::from_yaml(&yaml, "guide.yaml")
        .expect("the guide's block reads");
    let settings =
        NotifierSettings::from_configs(&config.notifiers).expect("the guide's notifier loads");
    let mut notifiers = Notifiers::start(settings, fast_retries()).expect("started");

    let opened = notifiers.observe(&lagging(Status::Warning), at(0));
    assert_eq!(opened.len(), 1, "{opened:?}");
    let id = opened[0].event_id.clone();
    let closed = notifiers.observe(&healthy(), at(45));
    assert_eq!(closed[0].kind, NotificationKind::Close, "{closed:?}");

    let requests = receiver.wait_for(2).await;
    for request in &requests {
        assert_eq!(
            (&request.method, request.uri.as_str()),
            (&Method::POST, "/services/xxx/yyy/zzz")
        );
        assert_eq!(request.headers["content-type"], "application/json");
    }
    let open: Value = serde_json::from_str(&requests[0].body).expect("the open is JSON");
    assert_eq!(
        open["text"],
        "[WARN] group billing on cluster local: total lag 1300, 2 of 4 partitions unhealthy \
         (started 2012-11-01 22:08:41 UTC)"
    );
    assert_eq!(
        (
            &open["id"],
            &open["group"],
            &open["status"],
            &open["totallag"]
        ),
        (&json!(id), &json!("billing"), &json!("WARN"), &json!(1300))
    );
    assert_eq!(open["partitions"][1]["topic"], "payments");
    let close: Value = serde_json::from_str(&requests[1].body).expect("the close is JSON");
    assert_eq!(
        close["text"],
        "[CLOSED] group billing on cluster local: status OK, alert closed \
         (started 2012-11-01 22:08:41 UTC)"
    );
    assert_eq!((&close["id"], &close["status"]), (&json!(id), &json!("OK")));

    let left = notifiers.shutdown(Duration::from_secs(5)).await;
    assert_eq!(left["slack"], 0);
}

// ---------------------------------------------------------------------------------------
// Email

/// A mail server that records each message it accepts as JSON in a directory, and
/// accepts AUTH PLAIN for one user without TLS. It listens on 127.0.0.1:0 itself and
/// prints the port, so no other socket can take the port between a pick and a bind.
const SMTP_RECORDER: &str = r#"
import asyncio, email, json, os, sys
from email import policy
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

out_dir, user, password = sys.argv[1], sys.argv[2], sys.argv[3]

class Recorder:
    count = 0

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=policy.default)
        Recorder.count += 1
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "authenticated": bool(session.authenticated),
            "login": session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else None,
            "headers": {key: str(value) for key, value in message.items()},
            "content_type": message.get_content_type(),
            "charset": message.get_content_charset(),
            "body": message.get_content(),
        }
        path = os.path.join(out_dir, "message-%d.json" % Recorder.count)
        with open(path + ".tmp", "w") as out:
            json.dump(record, out)
        os.rename(path + ".tmp", path)
        return "250 OK"

def authenticator(server, session, envelope, mechanism, auth_data):
    ok = isinstance(auth_data, LoginPassword) and auth_data.login == user.encode() and auth_data.password == password.encode()
    return AuthResult(success=ok, handled=False, auth_data=auth_data)

async def main():
    loop = asyncio.get_running_loop()
    handler = Recorder()
    server = await loop.create_server(
        lambda: SMTP(handler, hostname="localhost", authenticator=authenticator,
                     auth_require_tls=False, auth_required=True),
        host="127.0.0.1", port=0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await loop.run_in_executor(None, sys.stdin.read)  # until the test ends
    server.close()

asyncio.run(main())
"#;

/// A server process a test started (the mail server, the https receiver); killed and
/// reaped when dropped.
struct ServerProcess {
    child: Child,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn python3_present() -> bool {
    Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Starts the recorder; returns it and the port it listens on.
fn start_mail_server(directory: &Path) -> (ServerProcess, u16) {
    let has_aiosmtpd = Command::new("python3")
        .args(["-c", "import aiosmtpd"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    assert!(
        has_aiosmtpd,
        "the email notifier test needs Python's aiosmtpd: python3 -m pip install aiosmtpd"
    );
    // aiosmtpd warns that AUTH without TLS is unsafe: this server is the test's own.
    start_python_server(
        directory,
        "smtp",
        SMTP_RECORDER,
        &["-W", "ignore"],
        &[directory.as_os_str(), "sluice".as_ref(), "hunter2".as_ref()],
    )
}

/// Runs `script` with python3 (`options` before the script, `arguments` after it),
/// its stderr in `NAME.log` in `directory`. The script listens on 127.0.0.1:0 itself
/// and prints the port, so no other socket can take the port between a pick and a
/// bind; it runs until its stdin closes or it is killed.
fn start_python_server(
    directory: &Path,
    name: &str,
    script: &str,
    options: &[&str],
    arguments: &[&std::ffi::OsStr],
) -> (ServerProcess, u16) {
    let script_path = directory.join(format!("{name}_server.py"));
    std::fs::write(&script_path, script).expect("script written");
    let log_path = directory.join(format!("{name}.log"));
    let mut child = Command::new("python3")
        .args(options)
        .arg(&script_path)
        .args(arguments)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log_path).expect("a log file"))
        .spawn()
        .expect("python3 starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let (ready_sender, ready) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = ready_sender.send(line);
    });
    let server = ServerProcess { child };
    let line = ready
        .recv_timeout(ARRIVAL_WAIT)
        .unwrap_or_else(|_| panic!("the {name} server did not say where it listens"));
    let port = line.trim().parse().unwrap_or_else(|_| {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        panic!("the {name} server did not start ({line:?}); its log:\n{log}")
    });
    (server, port)
}

async fn wait_for_message(directory: &Path, number: usize) -> Value {
    let path = directory.join(format!("message-{number}.json"));
    let deadline = tokio::time::Instant::now() + ARRIVAL_WAIT;
    loop {
        if let Ok(text) = std::fs::read_to_string(&path) {
            return serde_json::from_str(&text).expect("the recorder writes JSON");
        }
        if tokio::time::Instant::now() > deadline {
            let log = std::fs::read_to_string(directory.join("smtp.log")).unwrap_or_default();
            panic!("message {number} never arrived; the mail server's log:\n{log}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What Go's text/template printed for Burrow's email template and this status
/// (tests/data/go-template-cases.json).
fn go_rendered_email() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/go-template-cases.json");
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("cases")).expect("JSON");
    cases["burrow:default-email.tmpl"]["go"]
        .as_str()
        .expect("rendered text")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn email_notifier_delivers_open_and_close_to_an_smtp_server() {
    if !python3_present() {
        eprintln!(
            "SKIPPED email_notifier_delivers_open_and_close_to_an_smtp_server: no python3 on this machine"
        );
        return;
    }
    let directory = tempfile::tempdir().expect("a temp dir");
    let (_server, port) = start_mail_server(directory.path());
    let close_template = directory.path().join("close.tmpl");
    let mut file = std::fs::File::create(&close_template).expect("created");
    write!(
        file,
        "Subject: [Burrow] Kafka Consumer Healthy\n\nContent-Type: text/html\n\
         <p>{{{{.Group}}}} in {{{{.Cluster}}}} is healthy again (incident {{{{.ID}}}}).</p>\n"
    )
    .expect("written");
    let mut notifiers = start(
        json!({
            "mail": {
                "class-name": "email",
                "server": "127.0.0.1",
                "port": port,
                "auth-type": "plain",
                "username": "sluice",
                "password": "hunter2",
                "from": "burrow@example.com",
                "to": "ops@example.com, dba@example.com",
                "send-close": true,
                "template-open": burrow_templates().join("default-email.tmpl"),
                "template-close": close_template,
            }
        }),
        fast_retries(),
    );

    let opened = notifiers.observe(&lagging(Status::Error), at(0));
    let id = opened[0].event_id.clone();
    let open = wait_for_message(directory.path(), 1).await;
    assert_eq!(open["mail_from"], "burrow@example.com");
    assert_eq!(
        open["rcpt_tos"],
        json!(["ops@example.com", "dba@example.com"])
    );
    assert_eq!(
        (open["authenticated"].clone(), open["login"].clone()),
        (json!(true), json!("sluice"))
    );
    assert_eq!(
        open["headers"]["Subject"],
        "[Burrow] Kafka Consumer Lag Alert"
    );
    assert_eq!(open["headers"]["From"], "burrow@example.com");
    assert_eq!(open["headers"]["To"], "ops@example.com, dba@example.com");
    assert_eq!(open["headers"]["Date"], "Thu, 01 Nov 2012 22:08:41 +0000");
    assert_eq!(
        (open["content_type"].clone(), open["charset"].clone()),
        (json!("text/plain"), json!("utf-8"))
    );
    // The body is Go's rendering of Burrow's template less its Subject line (in mail's
    // CRLF line ends).
    let go = go_rendered_email();
    let expected_body = go
        .split_once('\n')
        .map(|(_, rest)| rest)
        .expect("a subject line");
    let body = open["body"].as_str().expect("a body").replace("\r\n", "\n");
    assert_eq!(body.trim_end(), expected_body.trim_end());
    assert!(
        expected_body
            .contains("STOP payments:3 (1351806000000, 7, <nil>) -> (1351806500000, 7, {1200})")
    );

    notifiers.observe(&healthy(), at(120));
    let close = wait_for_message(directory.path(), 2).await;
    assert_eq!(
        close["headers"]["Subject"],
        "[Burrow] Kafka Consumer Healthy"
    );
    assert_eq!(close["content_type"], "text/html");
    assert_eq!(
        close["body"].as_str().expect("a body").trim(),
        format!("<p>billing in local is healthy again (incident {id}).</p>")
    );
    let stats = &notifiers.stats()["mail"];
    assert_eq!((stats.delivered, stats.abandoned), (2, 0), "{stats:?}");
    notifiers.shutdown(Duration::from_secs(5)).await;
}

// ---------------------------------------------------------------------------------------
// HTTPS

/// A webhook receiver over TLS: Python's `http.server` behind `ssl`, with the
/// certificate and key given; records each request as JSON in a directory and answers
/// 200. A client that refuses the certificate ends the handshake: the server logs it and
/// goes on.
const HTTPS_RECORDER: &str = r#"
import http.server, json, os, ssl, sys, threading

out_dir, certificate, key = sys.argv[1], sys.argv[2], sys.argv[3]

class Recorder(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    count = 0
    lock = threading.Lock()

    def record(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        with Recorder.lock:
            Recorder.count += 1
            path = os.path.join(out_dir, "request-%d.json" % Recorder.count)
        with open(path + ".tmp", "w") as out:
            json.dump({"method": self.command, "path": self.path, "body": body,
                       "content_type": self.headers.get("Content-Type")}, out)
        os.rename(path + ".tmp", path)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_PUT = do_DELETE = record

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(certificate, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.server_address[1], flush=True)
sys.stdin.read()  # until the test ends
"#;

fn openssl_present() -> bool {
    Command::new("openssl")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Runs `openssl` in `directory`, failing the test with its output if it fails.
fn openssl(directory: &Path, arguments: &[&str]) {
    let output = Command::new("openssl")
        .args(arguments)
        .current_dir(directory)
        .output()
        .expect("openssl runs");
    assert!(
        output.status.success(),
        "openssl {arguments:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A CA of the test's own (`ca.pem`, what `extra-ca` names) and a certificate it signed
/// for 127.0.0.1 and localhost (`server.pem`, `server.key`), in `directory`.
fn make_certificates(directory: &Path) {
    let p256 = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec![
        "req",
        "-x509",
        "-days",
        "2",
        "-subj",
        "/CN=Sluice notifier test CA",
    ];
    ca.extend(p256);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    openssl(directory, &ca);
    let mut request = vec!["req", "-new", "-subj", "/CN=localhost"];
    request.extend(p256);
    request.extend(["-keyout", "server.key", "-out", "server.csr"]);
    openssl(directory, &request);
    std::fs::write(
        directory.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .expect("written");
    openssl(
        directory,
        &[
            "x509",
            "-req",
            "-days",
            "2",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    );
}

/// Certificates and an https receiver using them; None (the test skips) without python3
/// or openssl.
fn start_https_receiver(directory: &Path) -> Option<(ServerProcess, u16)> {
    if !python3_present() || !openssl_present() {
        return None;
    }
    make_certificates(directory);
    Some(start_python_server(
        directory,
        "https",
        HTTPS_RECORDER,
        &[],
        &[
            directory.as_os_str(),
            directory.join("server.pem").as_os_str(),
            directory.join("server.key").as_os_str(),
        ],
    ))
}

async fn wait_for_request(directory: &Path, number: usize) -> Value {
    let path = directory.join(format!("request-{number}.json"));
    let deadline = tokio::time::Instant::now() + ARRIVAL_WAIT;
    loop {
        if let Ok(text) = std::fs::read_to_string(&path) {
            return serde_json::from_str(&text).expect("the recorder writes JSON");
        }
        if tokio::time::Instant::now() > deadline {
            let log = std::fs::read_to_string(directory.join("https.log")).unwrap_or_default();
            panic!("request {number} never arrived; the https server's log:\n{log}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The guide's kind of notifier (built-in templates, send-close), at an https URL.
fn https_section(port: u16, tls: Value) -> Value {
    let mut section = json!({
        "class-name": "http",
        "url-open": format!("https://127.0.0.1:{port}/services/xxx/yyy/zzz"),
        "send-close": true,
    });
    let table = section.as_object_mut().expect("an object");
    for (key, value) in tls.as_object().expect("an object") {
        table.insert(key.clone(), value.clone());
    }
    json!({ "hook": section })
}

/// What the notifiers log while a test runs, as text. The tests using it run on a
/// current-thread runtime, so the sending tasks log on the thread the capture is set on.
#[derive(Clone, Default)]
struct CapturedLog(Arc<Mutex<Vec<u8>>>);

impl CapturedLog {
    fn install(&self) -> tracing::subscriber::DefaultGuard {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(self.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::DEBUG)
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("not poisoned")).into_owned()
    }
}

impl Write for CapturedLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .expect("not poisoned")
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for CapturedLog {
    type Writer = CapturedLog;

    fn make_writer(&'a self) -> CapturedLog {
        self.clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_extra_ca_delivers_open_and_close() {
    let directory = tempfile::tempdir().expect("a temp dir");
    let Some((_server, port)) = start_https_receiver(directory.path()) else {
        eprintln!("SKIPPED https_with_extra_ca_delivers_open_and_close: no python3 or openssl");
        return;
    };
    let extra_ca = directory.path().join("ca.pem");
    let mut notifiers = start(
        https_section(port, json!({ "extra-ca": extra_ca })),
        fast_retries(),
    );
    let opened = notifiers.observe(&lagging(Status::Error), at(0));
    let id = opened[0].event_id.clone();
    notifiers.observe(&healthy(), at(60));

    let open = wait_for_request(directory.path(), 1).await;
    assert_eq!(
        (&open["method"], &open["path"], &open["content_type"]),
        (
            &json!("POST"),
            &json!("/services/xxx/yyy/zzz"),
            &json!("application/json")
        )
    );
    let body: Value = serde_json::from_str(open["body"].as_str().expect("a body"))
        .expect("the open body is JSON");
    assert_eq!((&body["id"], &body["status"]), (&json!(id), &json!("ERR")));
    let close = wait_for_request(directory.path(), 2).await;
    let body: Value = serde_json::from_str(close["body"].as_str().expect("a body"))
        .expect("the close body is JSON");
    assert_eq!((&body["id"], &body["status"]), (&json!(id), &json!("OK")));

    let left = notifiers.shutdown(Duration::from_secs(5)).await;
    assert_eq!(left["hook"], 0);
}

/// Without `extra-ca` the test CA is not trusted: every attempt fails on the certificate,
/// is logged saying so and retried; nothing reaches the receiver and nothing panics.
#[tokio::test]
async fn https_without_extra_ca_refuses_the_certificate_and_retries() {
    let directory = tempfile::tempdir().expect("a temp dir");
    let Some((_server, port)) = start_https_receiver(directory.path()) else {
        eprintln!(
            "SKIPPED https_without_extra_ca_refuses_the_certificate_and_retries: no python3 or openssl"
        );
        return;
    };
    let log = CapturedLog::default();
    let _capture = log.install();
    let mut notifiers = start(https_section(port, json!({})), fast_retries());
    notifiers.observe(&lagging(Status::Warning), at(0));
    let deadline = tokio::time::Instant::now() + ARRIVAL_WAIT;
    while notifiers.stats()["hook"].failed_attempts < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not retried: {:?}\n{}",
            notifiers.stats(),
            log.text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stats = notifiers.stats()["hook"].clone();
    assert_eq!(
        (stats.delivered, stats.abandoned, stats.pending),
        (0, 0, 1),
        "{stats:?}"
    );
    let text = log.text();
    let refusal = text
        .lines()
        .find(|line| line.contains("notification failed, will retry"))
        .unwrap_or_else(|| panic!("no failure logged:\n{text}"));
    assert!(
        refusal.contains("WARN") && refusal.contains("invalid peer certificate: UnknownIssuer"),
        "{refusal}"
    );
    let left = notifiers.shutdown(Duration::from_millis(100)).await;
    assert_eq!(left["hook"], 1);
    assert!(
        !directory.path().join("request-1.json").exists(),
        "a request got through"
    );
}

/// `noverify` accepts the certificate no root vouches for, and says so when loaded.
#[tokio::test]
async fn https_with_noverify_delivers_and_warns_at_load() {
    let directory = tempfile::tempdir().expect("a temp dir");
    let Some((_server, port)) = start_https_receiver(directory.path()) else {
        eprintln!("SKIPPED https_with_noverify_delivers_and_warns_at_load: no python3 or openssl");
        return;
    };
    let log = CapturedLog::default();
    let _capture = log.install();
    let mut notifiers = start(
        https_section(port, json!({ "noverify": true })),
        fast_retries(),
    );
    let text = log.text();
    assert!(
        text.lines()
            .any(|line| line.contains("WARN") && line.contains("noverify is set")),
        "no warning at load:\n{text}"
    );
    notifiers.observe(&lagging(Status::Warning), at(0));
    let open = wait_for_request(directory.path(), 1).await;
    assert_eq!(open["method"], "POST");
    assert_eq!(notifiers.shutdown(Duration::from_secs(5)).await["hook"], 0);
}
