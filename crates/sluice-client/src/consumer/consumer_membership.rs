//! `group.protocol=consumer` (KIP-848): the member's side of ConsumerGroupHeartbeat,
//! as Java's `ConsumerMembershipManager` and `ConsumerHeartbeatRequestManager` do it.
//!
//! The coordinator assigns partitions (its `uniform` or `range` assignor, or
//! `group.remote.assignor`); the member only reconciles. A background task sends the
//! heartbeat every `heartbeat_interval_ms` the coordinator asks for, carrying the
//! member's subscription and the partitions it owns (the full state every time, which
//! the protocol allows and which makes a lost response harmless). A new target
//! assignment in a response is left for `poll`, which revokes what is no longer
//! assigned (after committing, with auto-commit), adds what is new, runs the rebalance
//! listener, and wakes the task so the next heartbeat acknowledges the new ownership at
//! once. The coordinator hands a partition to its new owner only after the old owner
//! acknowledged its release, so there is no stop-the-world rebalance.
//!
//! Errors: UNKNOWN_MEMBER_ID and FENCED_MEMBER_EPOCH lose every partition (the listener's
//! `on_partitions_lost`) and rejoin at epoch 0 once `poll` has released them; a poll
//! loop slower than `max.poll.interval.ms` leaves (epoch -1) and rejoins at the next
//! `poll`, as in Java; a moved coordinator is looked up again; UNRELEASED_INSTANCE_ID,
//! UNSUPPORTED_ASSIGNOR, GROUP_MAX_SIZE_REACHED and authorization errors are fatal
//! and surface from `poll`.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::client::Target;
use crate::consumer::coordinator::Group;
use crate::error::{ApiError, Error, ErrorCode};

/// The epoch a member leaves with (-2 for a static member, which may come back).
const LEAVE_EPOCH: i32 = -1;
const STATIC_LEAVE_EPOCH: i32 = -2;

/// A new member id: 16 random bytes in URL-safe base64, the form of Java's
/// `Uuid.randomUuid().toString()` (KIP-1082: the client generates it).
pub(crate) fn new_member_id() -> String {
    use base64::Engine;
    let mut bytes = [0u8; 16];
    for half in bytes.chunks_mut(8) {
        // RandomState is seeded from the OS's randomness per instance.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos()),
        );
        half.copy_from_slice(&hasher.finish().to_be_bytes());
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl Group {
    /// One ConsumerGroupHeartbeat with the member's current state; the response's
    /// epoch, interval and assignment are stored for `poll`.
    async fn consumer_heartbeat(&self, leaving: bool) -> Result<(), Error> {
        let node = self.coordinator().await?;
        let (member_id, epoch, topics, owned) = {
            let state = self.lock();
            let epoch = if leaving {
                if self.group_instance_id.is_some() {
                    STATIC_LEAVE_EPOCH
                } else {
                    LEAVE_EPOCH
                }
            } else {
                state.generation.max(0)
            };
            // A joining member owns nothing, by the protocol's rule, and sends its
            // whole state; later heartbeats leave out (null) what the coordinator
            // already has, so that it answers with an assignment only on a change.
            let owned = if epoch == 0 {
                Some(Vec::new())
            } else {
                Some(state.heartbeat_owned.clone())
                    .filter(|owned| state.sent_owned.as_ref() != Some(owned))
            };
            let topics = Some(state.heartbeat_topics.clone())
                .filter(|topics| epoch == 0 || state.sent_topics.as_ref() != Some(topics));
            (state.member_id.clone(), epoch, topics, owned)
        };
        self.metrics.heartbeat_sent();
        let started = std::time::Instant::now();
        let response = self
            .client
            .send(Target::Node(node), |_| {
                ConsumerGroupHeartbeatRequest::default()
                    .with_group_id(GroupId(StrBytes::from_string(self.group_id.clone())))
                    .with_member_id(StrBytes::from_string(member_id.clone()))
                    .with_member_epoch(epoch)
                    .with_instance_id(self.group_instance_id.clone().map(StrBytes::from_string))
                    .with_rebalance_timeout_ms(
                        i32::try_from(self.rebalance_timeout_ms).unwrap_or(i32::MAX),
                    )
                    .with_server_assignor(self.remote_assignor.clone().map(StrBytes::from_string))
                    .with_subscribed_topic_names(topics.as_ref().map(|topics| {
                        topics
                            .iter()
                            .map(|topic| TopicName(StrBytes::from_string(topic.clone())))
                            .collect()
                    }))
                    .with_topic_partitions(owned.clone())
            })
            .await;
        if response.is_ok() {
            self.metrics.heartbeat_response(started.elapsed());
        }
        let response = match response {
            Ok(response) if response.error_code == 0 => response,
            other => {
                // The next heartbeat sends the whole state again.
                let mut state = self.lock();
                state.sent_owned = None;
                state.sent_topics = None;
                drop(state);
                other?
            }
        };
        let code = ErrorCode(response.error_code);
        if code != ErrorCode::NONE {
            return Err(Error::Api(ApiError {
                code,
                message: response.error_message.map(|m| m.to_string()),
            }));
        }
        if leaving {
            return Ok(());
        }
        let mut state = self.lock();
        if let Some(owned) = owned {
            state.sent_owned = Some(owned);
        }
        if let Some(topics) = topics {
            state.sent_topics = Some(topics);
        }
        if let Some(id) = response.member_id.filter(|id| !id.is_empty()) {
            state.member_id = id.to_string();
        }
        state.generation = response.member_epoch;
        state.stable = true;
        if response.heartbeat_interval_ms > 0 {
            state.heartbeat_interval_ms = response.heartbeat_interval_ms as u64;
        }
        if let Some(assignment) = response.assignment {
            state.pending_assignment = Some(
                assignment
                    .topic_partitions
                    .into_iter()
                    .map(|topic| (*topic.topic_id.as_bytes(), topic.partitions))
                    .collect(),
            );
        }
        Ok(())
    }

    /// Leaves a consumer group (epoch -1, or -2 for a static member).
    pub(crate) async fn leave_consumer_group(&self) {
        let joined = {
            let state = self.lock();
            state.generation > 0
        };
        if joined && let Err(error) = self.consumer_heartbeat(true).await {
            tracing::debug!(group = %self.group_id, %error, "leaving the group failed");
        }
        let mut state = self.lock();
        state.generation = 0;
        state.stable = false;
        state.heartbeat_owned.clear();
        // An assignment of the left membership must not be reconciled later.
        state.pending_assignment = None;
    }
}

/// The owned partitions in ConsumerGroupHeartbeat's form (topic ids, from `template`s
/// that carry each topic's id).
pub(crate) fn owned_partitions(
    owned: &std::collections::BTreeMap<String, Vec<i32>>,
    templates: &std::collections::BTreeMap<String, TopicPartitions>,
) -> Vec<TopicPartitions> {
    owned
        .iter()
        .filter_map(|(topic, partitions)| {
            templates
                .get(topic)
                .map(|template| template.clone().with_partitions(partitions.clone()))
        })
        .collect()
}

/// The heartbeat task of a consumer-protocol member; runs until aborted.
pub(crate) async fn heartbeat_loop(group: Arc<Group>, max_poll_interval: Duration) {
    loop {
        let (interval, paused, joined, last_poll) = {
            let state = group.lock();
            (
                Duration::from_millis(state.heartbeat_interval_ms.max(1)),
                state.lost || state.fatal.is_some(),
                state.generation > 0,
                state.last_poll,
            )
        };
        if paused {
            // `poll` must release the lost partitions first; it wakes us.
            let _ = tokio::time::timeout(Duration::from_millis(100), group.wake.notified()).await;
            continue;
        }
        if joined && last_poll.elapsed() > max_poll_interval {
            tracing::warn!(
                group = %group.group_id,
                "consumer poll timeout has expired (max.poll.interval.ms={}): leaving the group",
                max_poll_interval.as_millis()
            );
            group.leave_consumer_group().await;
            group.lock().lost = true;
            continue;
        }
        match group.consumer_heartbeat(false).await {
            Ok(()) => {}
            Err(error) => match error.code() {
                Some(code)
                    if code == ErrorCode::UNKNOWN_MEMBER_ID
                        || code == ErrorCode::FENCED_MEMBER_EPOCH =>
                {
                    tracing::debug!(group = %group.group_id, %code, "fenced: partitions lost, rejoining");
                    let mut state = group.lock();
                    state.generation = 0;
                    state.stable = false;
                    state.lost = true;
                    state.pending_assignment = None;
                }
                Some(code) if !code.is_retriable() => {
                    let mut state = group.lock();
                    state.fatal = Some(ApiError {
                        code,
                        message: match &error {
                            Error::Api(api) => api.message.clone(),
                            _ => None,
                        },
                    });
                }
                _ => {
                    group.coordinator_failed(&error);
                    tracing::debug!(group = %group.group_id, %error, "heartbeat failed");
                    tokio::time::sleep(Duration::from_millis(group.retry_backoff_ms)).await;
                    continue;
                }
            },
        }
        // Sleep until the next heartbeat is due, the poll timer runs out (checked
        // apart from the coordinator's interval, as Java does), or `poll` has news.
        let (joined, last_poll) = {
            let state = group.lock();
            (state.generation > 0, state.last_poll)
        };
        let mut wait = interval;
        if joined {
            let poll_deadline = (last_poll + max_poll_interval)
                .saturating_duration_since(Instant::now())
                + Duration::from_millis(1);
            wait = wait.min(poll_deadline);
        }
        let _ = tokio::time::timeout(wait, group.wake.notified()).await;
    }
}
