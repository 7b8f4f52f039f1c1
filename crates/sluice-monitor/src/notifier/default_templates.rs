//! The templates a notifier uses when its section names none: Sluice's own, built into
//! the binary from `templates/` beside this crate's Cargo.toml. Not Burrow's samples:
//! its http ones are for one alerting API and read its keys from `extras`, and its email
//! one fails on a partition that has no commit yet.
//!
//! Burrow refuses to start without `template-open`; the event-streaming guide's Slack
//! notifier (`class-name: http`, `url-open`, `send-close: true`, nothing else) sets none,
//! and its readers expect it to post. So:
//! - `http`: a JSON object with a one-line `"text"` (what a Slack incoming webhook shows)
//!   and the event's fields under Burrow's names (`id`, `cluster`, `group`, `status`,
//!   `start`, `complete`, `totallag`, `maxlag`, `partitions`, `extras`) for any other
//!   receiver; the close says the alert closed, with the incident's id;
//! - `email`: a `Subject:` line and a plain-text body with the same facts.
//!
//! The sources are checked against the notifier data like any template, at load: a
//! mistake in one is a failed test here, not a failed alert.

use super::NotifierError;
use super::coordinator::NotificationKind;
use super::template::Template;

const HTTP_OPEN: &str = include_str!("../../templates/default-http-open.tmpl");
const HTTP_CLOSE: &str = include_str!("../../templates/default-http-close.tmpl");
const EMAIL_OPEN: &str = include_str!("../../templates/default-email-open.tmpl");
const EMAIL_CLOSE: &str = include_str!("../../templates/default-email-close.tmpl");

/// Which notifier class a built-in template is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Http,
    Email,
}

/// The built-in template for `class` and `kind`, named after its file (error messages
/// and logs say which template failed).
pub(crate) fn default_template(
    notifier: &str,
    class: Class,
    kind: NotificationKind,
) -> Result<Template, NotifierError> {
    let (name, source) = match (class, kind) {
        (Class::Http, NotificationKind::Open) => ("default-http-open.tmpl", HTTP_OPEN),
        (Class::Http, NotificationKind::Close) => ("default-http-close.tmpl", HTTP_CLOSE),
        (Class::Email, NotificationKind::Open) => ("default-email-open.tmpl", EMAIL_OPEN),
        (Class::Email, NotificationKind::Close) => ("default-email-close.tmpl", EMAIL_CLOSE),
    };
    Template::parse(format!("(built-in) {name}"), source).map_err(|source| {
        NotifierError::Template {
            name: notifier.to_string(),
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use serde_json::{Value, json};

    use super::*;
    use crate::notifier::config::EmailSettings;
    use crate::notifier::email;
    use crate::notifier::template::TemplateData;
    use crate::types::{GroupStatus, PartitionStatus, Status};

    const ID: &str = "7f1c6b1e-2f6d-4e0a-9b1e-1f2a3b4c5d6e";

    /// The template tests' lagging group (a WARN partition and a STOP one of 4), with an
    /// OK partition added as the notifiers see it (they ask for every partition), and a
    /// partition of a topic whose name needs JSON escaping that never committed.
    fn lagging() -> GroupStatus {
        let (mut status, _) = crate::notifier::template::tests::fixture();
        let ok = PartitionStatus {
            topic: "orders".to_string(),
            partition: 1,
            status: Status::Ok,
            current_lag: 0,
            ..status.partitions[0].clone()
        };
        let never_committed = PartitionStatus {
            topic: "odd \"topic\" <name>".to_string(),
            partition: 0,
            status: Status::Stall,
            start: None,
            end: None,
            current_lag: 0,
            ..status.partitions[0].clone()
        };
        status.partitions.insert(1, ok);
        status.partitions.push(never_committed);
        status
    }

    fn healthy() -> GroupStatus {
        GroupStatus {
            status: Status::Ok,
            partitions: Vec::new(),
            maxlag: None,
            totallag: 0,
            ..lagging()
        }
    }

    fn render(
        class: Class,
        kind: NotificationKind,
        status: &GroupStatus,
        extras: &BTreeMap<String, String>,
    ) -> String {
        let data = TemplateData {
            cluster: &status.cluster,
            group: &status.group,
            id: ID,
            start: Some(crate::notifier::template::tests::start()),
            extras,
            result: status,
        };
        default_template("default", class, kind)
            .expect("the built-in template loads")
            .render(&data)
            .expect("the built-in template renders")
    }

    fn extras() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("app".to_string(), "billing".to_string()),
            ("tier".to_string(), "STG".to_string()),
        ])
    }

    #[test]
    fn http_open_is_a_slack_message_and_a_burrow_event() {
        let rendered = render(Class::Http, NotificationKind::Open, &lagging(), &extras());
        let body: Value = serde_json::from_str(&rendered)
            .unwrap_or_else(|error| panic!("{error}: not JSON:\n{rendered}"));
        assert_eq!(
            body["text"],
            "[ERR] group billing on cluster local: total lag 1300, 3 of 4 partitions \
             unhealthy (started 2012-11-01 22:08:41 UTC)"
        );
        assert_eq!(body["id"], ID);
        assert_eq!(
            (&body["cluster"], &body["group"], &body["status"]),
            (&json!("local"), &json!("billing"), &json!("ERR"))
        );
        assert_eq!(body["start"], "2012-11-01T22:08:41Z");
        assert_eq!(body["complete"], json!(0.5));
        assert_eq!(body["totallag"], json!(1300));
        assert_eq!(
            body["maxlag"],
            json!({"topic": "payments", "partition": 3, "lag": 1250})
        );
        let partitions = body["partitions"].as_array().expect("a list");
        let listed: Vec<(&str, i64, &str)> = partitions
            .iter()
            .map(|partition| {
                (
                    partition["topic"].as_str().expect("a topic"),
                    partition["partition"].as_i64().expect("a partition"),
                    partition["status"].as_str().expect("a status"),
                )
            })
            .collect();
        assert_eq!(
            listed,
            [
                ("orders", 0, "WARN"),
                ("payments", 3, "STOP"),
                ("odd \"topic\" <name>", 0, "STALL"),
            ],
            "only the partitions worse than OK"
        );
        assert_eq!(partitions[1]["current_lag"], json!(1250));
        assert_eq!(
            partitions[0]["start"],
            json!({"offset": 100, "timestamp": 1_351_807_000_000i64,
                   "observedAt": 1_351_807_000_005i64, "lag": 5})
        );
        assert_eq!(partitions[1]["end"]["offset"], json!(7));
        assert_eq!(partitions[1]["start"]["lag"], Value::Null);
        assert_eq!(
            (&partitions[2]["start"], &partitions[2]["end"]),
            (&Value::Null, &Value::Null)
        );
        assert_eq!(body["extras"], json!({"app": "billing", "tier": "STG"}));
    }

    /// A healthy group (a notifier with threshold OK notifies on it), no extras and no
    /// incident start: still valid JSON, with nothing listed.
    #[test]
    fn http_open_without_problems_or_extras_is_still_json() {
        let data = TemplateData {
            cluster: "local",
            group: "billing",
            id: "",
            start: None,
            extras: &BTreeMap::new(),
            result: &healthy(),
        };
        let rendered = default_template("default", Class::Http, NotificationKind::Open)
            .expect("loads")
            .render(&data)
            .expect("renders");
        let body: Value = serde_json::from_str(&rendered)
            .unwrap_or_else(|error| panic!("{error}: not JSON:\n{rendered}"));
        assert_eq!(body["partitions"], json!([]));
        assert_eq!(body["maxlag"], Value::Null);
        assert!(body.get("extras").is_none(), "{body}");
        assert_eq!(
            body["text"],
            "[OK] group billing on cluster local: total lag 0, 0 of 4 partitions unhealthy \
             (started 0001-01-01 00:00:00 UTC)"
        );
    }

    #[test]
    fn http_close_says_the_alert_closed() {
        for extras in [BTreeMap::new(), extras()] {
            let rendered = render(Class::Http, NotificationKind::Close, &healthy(), &extras);
            let body: Value = serde_json::from_str(&rendered)
                .unwrap_or_else(|error| panic!("{error}: not JSON:\n{rendered}"));
            assert_eq!(
                body["text"],
                "[CLOSED] group billing on cluster local: status OK, alert closed \
                 (started 2012-11-01 22:08:41 UTC)"
            );
            assert_eq!(body["id"], ID);
            assert_eq!(
                (&body["cluster"], &body["group"], &body["status"]),
                (&json!("local"), &json!("billing"), &json!("OK"))
            );
            assert_eq!(body.get("extras").is_some(), !extras.is_empty(), "{body}");
        }
    }

    fn email_settings() -> EmailSettings {
        EmailSettings {
            server: "127.0.0.1".to_string(),
            port: 25,
            plain_auth: None,
            from: "burrow@example.com".to_string(),
            to: vec!["ops@example.com".to_string()],
            timeout: Duration::from_secs(30),
        }
    }

    /// The message as sent, its quoted-printable soft breaks undone.
    fn email(rendered: &str) -> (String, String) {
        let sent_at: SystemTime = UNIX_EPOCH + Duration::from_secs(1_351_807_800);
        let message = email::compose(rendered, &email_settings(), sent_at).expect("a message");
        let (headers, body) = message
            .data
            .split_once("\r\n\r\n")
            .expect("headers, a blank line, a body");
        let subject = headers
            .lines()
            .find_map(|line| line.strip_prefix("Subject: "))
            .expect("a subject")
            .to_string();
        let body = body.replace("=\r\n", "").replace("\r\n", "\n");
        (subject, body)
    }

    #[test]
    fn email_open_has_a_subject_and_the_facts() {
        let rendered = render(Class::Email, NotificationKind::Open, &lagging(), &extras());
        let (subject, body) = email(&rendered);
        assert_eq!(
            subject,
            "[ERR] consumer group billing on cluster local: total lag 1300"
        );
        for fact in [
            "Consumer group billing on cluster local is ERR: 3 of 4 partitions unhealthy.",
            &format!("Incident:    {ID}"),
            "Started:     2012-11-01 22:08:41 UTC",
            "Total lag:   1300",
            "Largest lag: payments:3, 1250",
            "  WARN orders:0, lag 50, offsets 100 (2012-11-01 21:56:40 UTC) -> 160 \
             (2012-11-01 22:08:20 UTC)",
            "  STOP payments:3, lag 1250, offsets 7 (2012-11-01 21:40:00 UTC) -> 7 \
             (2012-11-01 21:48:20 UTC)",
            "  STALL odd \"topic\" <name>:0, lag 0, offsets - -> -",
            "app: billing\ntier: STG\n",
        ] {
            assert!(body.contains(fact), "{fact:?} is not in:\n{body}");
        }
        assert!(
            !body.contains("orders:1"),
            "an OK partition listed:\n{body}"
        );
    }

    #[test]
    fn email_close_has_a_subject_and_the_incident() {
        let rendered = render(
            Class::Email,
            NotificationKind::Close,
            &healthy(),
            &BTreeMap::new(),
        );
        let (subject, body) = email(&rendered);
        assert_eq!(
            subject,
            "[CLOSED] consumer group billing on cluster local: OK"
        );
        for fact in [
            "The lag alert for consumer group billing on cluster local is closed: its status is OK.",
            &format!("Incident:  {ID}"),
            "Started:   2012-11-01 22:08:41 UTC",
        ] {
            assert!(body.contains(fact), "{fact:?} is not in:\n{body}");
        }
    }
}
