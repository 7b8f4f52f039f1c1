//! Burrow's notifiers: `[notifier.NAME]` sections that send a group's lag problems to an
//! HTTP endpoint (`class-name = "http"`, a webhook) or by email (`"email"`), with Burrow's
//! config keys, Burrow's Go templates and Burrow's rules for when to send.
//!
//! The caller owns the evaluation loop: it evaluates each group every
//! [`Notifiers::evaluation_interval`] and hands each [`GroupStatus`] to
//! [`Notifiers::observe`] with the time of the evaluation. That call decides (the
//! `coordinator`, no I/O, no clock), renders the templates ([`template`]) and queues
//! what is due; each notifier's queue (`delivery`) sends in the background with retries,
//! over `http` or `email` (`smtp`). [`Notifiers::shutdown`] lets the queues finish.
//!
//! ```no_run
//! # async fn example(sections: &std::collections::BTreeMap<String, serde_json::Value>,
//! #                  status: sluice_monitor::types::GroupStatus) -> Result<(), Box<dyn std::error::Error>> {
//! use sluice_monitor::notifier::{NotifierSettings, Notifiers, RetryPolicy};
//! let settings = NotifierSettings::from_configs(sections)?; // config::Config::notifiers
//! let mut notifiers = Notifiers::start(settings, RetryPolicy::default())?;
//! notifiers.observe(&status, std::time::SystemTime::now());
//! notifiers.shutdown(std::time::Duration::from_secs(10)).await;
//! # Ok(()) }
//! ```
//!
//! Not here: evaluating groups (the evaluator), choosing which groups exist (storage), and
//! Burrow's ZooKeeper lock that lets only one of several Burrows notify: Sluice's monitor
//! runs once per deployment.
//!
//! Cost: an evaluation is a hash lookup and a few comparisons per notifier. A notification
//! is one render (a few small allocations per partition listed; Burrow's templates render
//! a two-partition group in microseconds) and one queue entry holding the rendered body.
//! Sends happen on Tokio tasks, at most [`delivery::SENDS_IN_FLIGHT_MAX`] per notifier.

mod config;
mod coordinator;
mod default_templates;
mod delivery;
mod email;
mod http;
mod smtp;
pub mod template;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

pub use config::{
    Credentials, EVALUATION_INTERVAL_NONE_SECONDS, EmailSettings, HttpSettings, NotifierConfig,
    NotifierSettings, Recipients, Threshold, Transport,
};
pub use coordinator::{AlertRules, Coordinator, Decision, NotificationKind, TRACKED_GROUPS_MAX};
pub use delivery::{
    DeliveryStats, PENDING_OPENS_MAX, RetryPolicy, SENDS_IN_FLIGHT_MAX, Submission,
};
pub use template::{Template, TemplateData, TemplateError};

use crate::types::GroupStatus;
use delivery::{DeliveryQueue, Message, Outgoing};

#[derive(Debug, thiserror::Error)]
pub enum NotifierError {
    #[error("notifier.{name}: {message}")]
    Config { name: String, message: String },
    #[error("notifier.{name}: {source}")]
    Template {
        name: String,
        #[source]
        source: TemplateError,
    },
    #[error("notifier.{name}: {message}")]
    Start { name: String, message: String },
    #[error("notifiers send from a Tokio runtime, and there is none here: {0}")]
    NoRuntime(String),
}

/// A notification the coordinator decided on, and what became of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    pub notifier: String,
    pub kind: NotificationKind,
    pub event_id: String,
    pub outcome: Outcome,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Handed to the notifier's queue.
    Submitted(Submission),
    /// The template did not render (a nil offset, a bad email header); logged, not sent.
    NotRendered(String),
}

/// One running notifier.
struct Notifier {
    name: String,
    extras: BTreeMap<String, String>,
    template_open: Template,
    template_close: Option<Template>,
    transport: Transport,
    queue: DeliveryQueue,
}

impl Notifier {
    fn render(
        &self,
        decision: &Decision,
        status: &GroupStatus,
        now: SystemTime,
    ) -> Result<Message, String> {
        let data = TemplateData {
            cluster: &status.cluster,
            group: &status.group,
            id: &decision.event_id,
            start: decision.start,
            extras: &self.extras,
            result: status,
        };
        let template = match decision.kind {
            NotificationKind::Open => &self.template_open,
            NotificationKind::Close => self
                .template_close
                .as_ref()
                .ok_or("a close without a close template")?,
        };
        let text = template.render(&data).map_err(|error| error.to_string())?;
        match &self.transport {
            Transport::Http(settings) => {
                let (url, method) = match decision.kind {
                    NotificationKind::Open => (&settings.url_open, &settings.method_open),
                    NotificationKind::Close => (
                        settings
                            .url_close
                            .as_ref()
                            .ok_or("a close without url-close")?,
                        &settings.method_close,
                    ),
                };
                let url = url.render(&data).map_err(|error| error.to_string())?;
                Ok(Message::Http(http::HttpRequest {
                    method: method.clone(),
                    url: url.trim().to_string(),
                    body: text,
                }))
            }
            Transport::Email(settings) => email::compose(&text, settings, now).map(Message::Email),
        }
    }
}

/// The configured notifiers, running.
pub struct Notifiers {
    coordinator: Coordinator,
    notifiers: Vec<Notifier>,
    evaluation_interval: Duration,
}

impl Notifiers {
    /// Starts one sending task per notifier on the current Tokio runtime.
    pub fn start(
        settings: Vec<NotifierSettings>,
        retry: RetryPolicy,
    ) -> Result<Notifiers, NotifierError> {
        tokio::runtime::Handle::try_current()
            .map_err(|error| NotifierError::NoRuntime(error.to_string()))?;
        let evaluation_interval = settings
            .iter()
            .map(|notifier| notifier.interval)
            .min()
            .unwrap_or(Duration::from_secs(EVALUATION_INTERVAL_NONE_SECONDS));
        let mut rules = Vec::with_capacity(settings.len());
        let mut notifiers = Vec::with_capacity(settings.len());
        for notifier in settings {
            let transport = match &notifier.transport {
                Transport::Http(http_settings) => {
                    delivery::Transport::Http(http::HttpTransport::new(http_settings).map_err(
                        |message| NotifierError::Start {
                            name: notifier.name.clone(),
                            message,
                        },
                    )?)
                }
                Transport::Email(email_settings) => {
                    delivery::Transport::Email(email::EmailTransport::new(email_settings))
                }
            };
            let queue = DeliveryQueue::start(notifier.name.clone(), transport, retry.clone());
            rules.push(notifier.rules);
            notifiers.push(Notifier {
                name: notifier.name,
                extras: notifier.extras,
                template_open: notifier.template_open,
                template_close: notifier.template_close,
                transport: notifier.transport,
                queue,
            });
        }
        Ok(Notifiers {
            coordinator: Coordinator::new(rules),
            notifiers,
            evaluation_interval,
        })
    }

    /// How often each group should be evaluated and observed: the shortest `interval`
    /// of the notifiers, as Burrow's coordinator schedules it.
    pub fn evaluation_interval(&self) -> Duration {
        self.evaluation_interval
    }

    /// Applies one evaluation of a group, made at `now`: decides what is due, renders it
    /// and queues it. Returns what was decided and what became of each.
    pub fn observe(&mut self, status: &GroupStatus, now: SystemTime) -> Vec<Notification> {
        let decisions = self.coordinator.evaluate(status, now);
        let mut notifications = Vec::with_capacity(decisions.len());
        for decision in decisions {
            let Some(notifier) = self.notifiers.get(decision.notifier) else {
                continue;
            };
            let outcome = match notifier.render(&decision, status, now) {
                Ok(message) => Outcome::Submitted(notifier.queue.submit(Outgoing {
                    cluster: status.cluster.clone(),
                    group: status.group.clone(),
                    event_id: decision.event_id.clone(),
                    kind: decision.kind,
                    message,
                })),
                Err(message) => {
                    tracing::error!(
                        notifier = %notifier.name, cluster = %status.cluster, group = %status.group,
                        id = %decision.event_id, "notification not rendered: {message}"
                    );
                    Outcome::NotRendered(message)
                }
            };
            if outcome == Outcome::Submitted(Submission::Dropped) {
                tracing::warn!(
                    notifier = %notifier.name, cluster = %status.cluster, group = %status.group,
                    "open dropped: {PENDING_OPENS_MAX} notifications are already waiting"
                );
            }
            notifications.push(Notification {
                notifier: notifier.name.clone(),
                kind: decision.kind,
                event_id: decision.event_id,
                outcome,
            });
        }
        notifications
    }

    /// Forgets a deleted group (no close is sent, as in Burrow).
    pub fn forget_group(&mut self, cluster: &str, group: &str) {
        self.coordinator.forget_group(cluster, group);
    }

    /// The alert state: open incidents by group.
    pub fn coordinator(&self) -> &Coordinator {
        &self.coordinator
    }

    /// Each notifier's delivery counters, by name.
    pub fn stats(&self) -> BTreeMap<String, DeliveryStats> {
        self.notifiers
            .iter()
            .map(|notifier| (notifier.name.clone(), notifier.queue.stats()))
            .collect()
    }

    /// Gives every queue up to `deadline` (together) to send what is waiting, retries
    /// included, then stops them. Returns, by notifier, how many were left unsent.
    pub async fn shutdown(self, deadline: Duration) -> BTreeMap<String, usize> {
        let until = tokio::time::Instant::now() + deadline;
        let mut left = BTreeMap::new();
        for notifier in self.notifiers {
            let remaining = until.saturating_duration_since(tokio::time::Instant::now());
            left.insert(notifier.name, notifier.queue.shutdown(remaining).await);
        }
        left
    }
}
