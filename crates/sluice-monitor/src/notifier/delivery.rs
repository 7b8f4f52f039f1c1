//! Getting a rendered notification to its endpoint: one queue and one Tokio task per
//! notifier, retries with exponential backoff, and the bounds that keep an endpoint that
//! is down from growing memory or hiding a close.
//!
//! Burrow sends once and logs a failure; an alert lost to a webhook's restart, and above
//! all a close lost so the incident stays open in the paging system forever, is what this
//! module exists to prevent:
//! - a failed send is retried after `backoff_initial`, doubling up to `backoff_max`: an
//!   open up to `open_attempts_max` attempts (the coordinator repeats opens every
//!   `send-interval` anyway), a close up to `close_attempts_max` (defaults: 3 and 20, 1 s
//!   doubling to 60 s, so a close is retried for about 15 minutes). Connection errors,
//!   timeouts, HTTP 408, 429 and 5xx, and SMTP 4xx replies are retried; any other answer
//!   (a 400, an SMTP 550) would be the same next time and is given up at once. Every
//!   failure is logged with the attempt count; giving up is logged as an error;
//! - one group's notifications go out in order (an open before its close; a close before
//!   the next incident's open) and at most [`SENDS_IN_FLIGHT_MAX`] at a time per
//!   notifier, so a slow group does not hold the others;
//! - a new open for a group replaces one of the same incident still waiting (the newer
//!   status is the one worth sending), so a group has at most one open waiting;
//! - a close is always queued and never merged away, even behind an open not yet tried:
//!   the receiver hears of a short incident late rather than not at all;
//! - opens waiting past [`PENDING_OPENS_MAX`] are dropped (and counted): the coordinator
//!   sends them again at the next interval. Closes are not refused: the coordinator sends
//!   one only after an open of the incident, so they are no more than the opens admitted.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use super::coordinator::NotificationKind;
use super::email::{EmailMessage, EmailTransport};
use super::http::{HttpRequest, HttpTransport};

/// Sends one notifier makes at once.
pub const SENDS_IN_FLIGHT_MAX: usize = 4;
/// Opens one notifier keeps waiting; past this a new open is dropped.
pub const PENDING_OPENS_MAX: usize = 10_000;

/// How failed sends are retried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
    pub open_attempts_max: u32,
    pub close_attempts_max: u32,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            backoff_initial: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            open_attempts_max: 3,
            close_attempts_max: 20,
        }
    }
}

impl RetryPolicy {
    /// The wait after the `attempts`-th failed attempt.
    fn backoff(&self, attempts: u32) -> Duration {
        let factor = 1u32
            .checked_shl(attempts.saturating_sub(1))
            .unwrap_or(u32::MAX);
        self.backoff_initial
            .saturating_mul(factor)
            .min(self.backoff_max)
    }
}

/// What one notifier's queue has done since it started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeliveryStats {
    pub delivered: u64,
    /// Attempts that failed (each retry of one notification counts).
    pub failed_attempts: u64,
    /// Notifications given up after their last attempt or a permanent failure.
    pub abandoned: u64,
    /// Opens refused because [`PENDING_OPENS_MAX`] were waiting.
    pub dropped: u64,
    /// Waiting or being sent now.
    pub pending: usize,
}

/// What happened to a notification handed to a queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Submission {
    Queued,
    /// Replaced a waiting open of the same incident.
    Merged,
    /// An open refused: too many waiting.
    Dropped,
}

/// A rendered notification.
#[derive(Debug)]
pub(crate) enum Message {
    Http(HttpRequest),
    Email(EmailMessage),
}

pub(crate) enum Transport {
    Http(HttpTransport),
    Email(EmailTransport),
}

/// Why a send failed, and whether trying again could help.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DeliveryError {
    pub retryable: bool,
    pub message: String,
}

impl Transport {
    async fn send(&self, message: &Message) -> Result<(), DeliveryError> {
        match (self, message) {
            (Transport::Http(transport), Message::Http(request)) => transport.send(request).await,
            (Transport::Email(transport), Message::Email(email)) => transport.send(email).await,
            _ => Err(DeliveryError {
                retryable: false,
                message: "a message for another kind of notifier".to_string(),
            }),
        }
    }
}

pub(crate) struct Outgoing {
    pub cluster: String,
    pub group: String,
    pub event_id: String,
    pub kind: NotificationKind,
    pub message: Message,
}

struct Item {
    id: u64,
    cluster: String,
    group: String,
    event_id: String,
    kind: NotificationKind,
    message: Arc<Message>,
    attempts: u32,
    in_flight: bool,
    next_attempt_at: Instant,
}

impl Item {
    fn same_group(&self, other_cluster: &str, other_group: &str) -> bool {
        self.cluster == other_cluster && self.group == other_group
    }
}

struct State {
    items: VecDeque<Item>,
    next_item_id: u64,
    stopping: bool,
    stats: DeliveryStats,
}

impl State {
    /// Indexes of items that may be sent now: not in flight, due, and first of their
    /// group in the queue. Also the earliest time a waiting item becomes due.
    fn ready(&self, now: Instant, limit: usize) -> (Vec<usize>, Option<Instant>) {
        let mut blocked: HashSet<(&str, &str)> = HashSet::new();
        let mut ready = Vec::new();
        let mut next_due: Option<Instant> = None;
        for (index, item) in self.items.iter().enumerate() {
            let key = (item.cluster.as_str(), item.group.as_str());
            if !blocked.insert(key) || item.in_flight {
                continue;
            }
            if item.next_attempt_at <= now {
                if ready.len() < limit {
                    ready.push(index);
                }
            } else {
                next_due = Some(
                    next_due.map_or(item.next_attempt_at, |due| due.min(item.next_attempt_at)),
                );
            }
        }
        (ready, next_due)
    }
}

struct Shared {
    state: Mutex<State>,
    wake: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; carry on with it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One notifier's queue and its sending task.
pub(crate) struct DeliveryQueue {
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
}

impl DeliveryQueue {
    /// Starts the sending task on the current Tokio runtime.
    pub(crate) fn start(name: String, transport: Transport, policy: RetryPolicy) -> DeliveryQueue {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                items: VecDeque::new(),
                next_item_id: 0,
                stopping: false,
                stats: DeliveryStats::default(),
            }),
            wake: Notify::new(),
        });
        let task = tokio::spawn(run(name, shared.clone(), Arc::new(transport), policy));
        DeliveryQueue {
            shared,
            task: Some(task),
        }
    }

    pub(crate) fn submit(&self, outgoing: Outgoing) -> Submission {
        let submission = {
            let mut state = self.shared.lock();
            submit(&mut state, outgoing)
        };
        if matches!(submission, Submission::Queued | Submission::Merged) {
            self.shared.wake.notify_one();
        }
        submission
    }

    pub(crate) fn stats(&self) -> DeliveryStats {
        let state = self.shared.lock();
        DeliveryStats {
            pending: state.items.len(),
            ..state.stats.clone()
        }
    }

    /// Lets the task send what is waiting (retries included) for up to `deadline`, then
    /// stops it. Returns how many notifications were left unsent.
    pub(crate) async fn shutdown(mut self, deadline: Duration) -> usize {
        self.shared.lock().stopping = true;
        self.shared.wake.notify_one();
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(deadline, &mut task).await.is_err()
        {
            task.abort();
        }
        self.shared.lock().items.len()
    }
}

impl Drop for DeliveryQueue {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

fn submit(state: &mut State, outgoing: Outgoing) -> Submission {
    let Outgoing {
        cluster,
        group,
        event_id,
        kind,
        message,
    } = outgoing;
    match kind {
        NotificationKind::Open => {
            if let Some(waiting) = state.items.iter_mut().find(|item| {
                item.kind == NotificationKind::Open
                    && !item.in_flight
                    && item.event_id == event_id
                    && item.same_group(&cluster, &group)
            }) {
                // Keep its attempts and its place; send the newer status.
                waiting.message = Arc::new(message);
                return Submission::Merged;
            }
            let opens = state
                .items
                .iter()
                .filter(|item| item.kind == NotificationKind::Open)
                .count();
            if opens >= PENDING_OPENS_MAX {
                state.stats.dropped += 1;
                return Submission::Dropped;
            }
        }
        NotificationKind::Close => {}
    }
    let id = state.next_item_id;
    state.next_item_id += 1;
    state.items.push_back(Item {
        id,
        cluster,
        group,
        event_id,
        kind,
        message: Arc::new(message),
        attempts: 0,
        in_flight: false,
        next_attempt_at: Instant::now(),
    });
    Submission::Queued
}

async fn run(name: String, shared: Arc<Shared>, transport: Arc<Transport>, policy: RetryPolicy) {
    let mut in_flight: JoinSet<Result<(), DeliveryError>> = JoinSet::new();
    let mut tasks: HashMap<tokio::task::Id, u64> = HashMap::new();
    loop {
        let next_due = {
            let mut state = shared.lock();
            let now = Instant::now();
            let (ready, next_due) = state.ready(now, SENDS_IN_FLIGHT_MAX - in_flight.len());
            for index in ready {
                let item = &mut state.items[index];
                item.in_flight = true;
                item.attempts += 1;
                let (id, message) = (item.id, item.message.clone());
                let transport = transport.clone();
                let handle = in_flight.spawn(async move { transport.send(&message).await });
                tasks.insert(handle.id(), id);
            }
            if state.stopping && state.items.is_empty() && in_flight.is_empty() {
                return;
            }
            next_due
        };
        tokio::select! {
            () = shared.wake.notified() => {}
            Some(joined) = in_flight.join_next_with_id(), if !in_flight.is_empty() => {
                let (task, result) = match joined {
                    Ok((task, result)) => (task, result),
                    Err(error) => (error.id(), Err(DeliveryError {
                        retryable: true,
                        message: format!("the send task failed: {error}"),
                    })),
                };
                if let Some(item_id) = tasks.remove(&task) {
                    finish(&name, &mut shared.lock(), &policy, item_id, result);
                }
            }
            () = sleep_until(next_due), if next_due.is_some() => {}
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    if let Some(deadline) = deadline {
        tokio::time::sleep_until(deadline).await;
    }
}

fn finish(
    name: &str,
    state: &mut State,
    policy: &RetryPolicy,
    item_id: u64,
    result: Result<(), DeliveryError>,
) {
    let Some(index) = state.items.iter().position(|item| item.id == item_id) else {
        return;
    };
    let item = &mut state.items[index];
    item.in_flight = false;
    let (kind, attempts) = (item.kind, item.attempts);
    let (cluster, group, event_id) = (
        item.cluster.clone(),
        item.group.clone(),
        item.event_id.clone(),
    );
    let kind_name = match kind {
        NotificationKind::Open => "open",
        NotificationKind::Close => "close",
    };
    let error = match result {
        Ok(()) => {
            tracing::debug!(notifier = name, %cluster, %group, id = %event_id, kind = kind_name, attempts, "notification sent");
            state.stats.delivered += 1;
            state.items.remove(index);
            return;
        }
        Err(error) => error,
    };
    state.stats.failed_attempts += 1;
    let attempts_max = match kind {
        NotificationKind::Open => policy.open_attempts_max,
        NotificationKind::Close => policy.close_attempts_max,
    };
    if error.retryable && attempts < attempts_max {
        let wait = policy.backoff(attempts);
        // A policy with an absurd backoff means "much later", not a panic.
        let now = Instant::now();
        state.items[index].next_attempt_at = now
            .checked_add(wait)
            .unwrap_or(now + Duration::from_secs(86_400));
        tracing::warn!(
            notifier = name, %cluster, %group, id = %event_id, kind = kind_name, attempt = attempts,
            attempts_max, retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            "notification failed, will retry: {}", error.message
        );
        return;
    }
    tracing::error!(
        notifier = name, %cluster, %group, id = %event_id, kind = kind_name, attempts,
        "notification given up: {}", error.message
    );
    state.stats.abandoned += 1;
    state.items.remove(index);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outgoing(group: &str, event_id: &str, kind: NotificationKind) -> Outgoing {
        Outgoing {
            cluster: "local".to_string(),
            group: group.to_string(),
            event_id: event_id.to_string(),
            kind,
            message: Message::Http(HttpRequest {
                method: reqwest::Method::POST,
                url: format!("http://127.0.0.1:9/{group}/{event_id}"),
                body: String::new(),
            }),
        }
    }

    fn state() -> State {
        State {
            items: VecDeque::new(),
            next_item_id: 0,
            stopping: false,
            stats: DeliveryStats::default(),
        }
    }

    fn queue(state: &State) -> Vec<String> {
        state
            .items
            .iter()
            .map(|item| format!("{}:{:?}:{}", item.group, item.kind, item.event_id))
            .collect()
    }

    #[test]
    fn opens_merge_closes_queue_and_groups_keep_their_order() {
        use NotificationKind::{Close, Open};
        let mut state = state();
        assert_eq!(
            submit(&mut state, outgoing("a", "e1", Open)),
            Submission::Queued
        );
        assert_eq!(
            submit(&mut state, outgoing("a", "e1", Open)),
            Submission::Merged
        );
        submit(&mut state, outgoing("b", "e2", Open));
        // A close is queued even behind its open not yet tried.
        assert_eq!(
            submit(&mut state, outgoing("a", "e1", Close)),
            Submission::Queued
        );
        // The next incident's open does not merge into the close's incident.
        assert_eq!(
            submit(&mut state, outgoing("a", "e3", Open)),
            Submission::Queued
        );
        assert_eq!(
            queue(&state),
            ["a:Open:e1", "b:Open:e2", "a:Close:e1", "a:Open:e3"]
        );
        // Order within a group: a's close waits for a's open; b is independent.
        let now = Instant::now();
        assert_eq!(state.ready(now, 10).0, [0, 1]);
        state.items[0].in_flight = true;
        assert_eq!(state.ready(now, 10).0, [1]);
        assert_eq!(state.ready(now, 0).0, Vec::<usize>::new());
        // An open being sent is not merged into: the newer one waits behind it.
        assert_eq!(
            submit(&mut state, outgoing("a", "e1", Open)),
            Submission::Queued
        );
        // An item in backoff holds its group and says when it is due.
        state.items[0].in_flight = false;
        state.items[0].next_attempt_at = now + Duration::from_secs(5);
        let (ready, next_due) = state.ready(now, 10);
        assert_eq!(
            (ready, next_due),
            (vec![1], Some(now + Duration::from_secs(5)))
        );
    }

    #[test]
    fn waiting_opens_are_bounded_and_closes_are_not_refused() {
        let mut state = state();
        for index in 0..PENDING_OPENS_MAX {
            submit(
                &mut state,
                outgoing(&format!("g{index}"), "e", NotificationKind::Open),
            );
        }
        assert_eq!(
            submit(
                &mut state,
                outgoing("one-more", "e", NotificationKind::Open)
            ),
            Submission::Dropped
        );
        assert_eq!(state.stats.dropped, 1);
        assert_eq!(
            submit(&mut state, outgoing("g1", "e", NotificationKind::Close)),
            Submission::Queued
        );
    }

    #[test]
    fn backoff_doubles_to_its_cap() {
        let policy = RetryPolicy::default();
        let waits: Vec<u64> = (1..=9)
            .map(|attempt| policy.backoff(attempt).as_secs())
            .collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(policy.backoff(100), Duration::from_secs(60));
    }
}
