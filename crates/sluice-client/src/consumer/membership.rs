//! The consumer's group membership as [`Consumer::poll`] drives it (Java's
//! `ConsumerCoordinator.onJoinPrepare`/`onJoinComplete` and the reconciliation of its
//! `ConsumerMembershipManager`), for both group protocols: the classic JoinGroup and
//! SyncGroup rounds (with the leader's assignment), the KIP-848 target assignment
//! reconciled, leaving the group, and the rebalance listener's calls, which run in the
//! caller's task. The requests and the background heartbeat tasks are `coordinator`'s
//! (classic) and `consumer_membership`'s (KIP-848).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use sluice_protocol::consumer_protocol::{
    Assignment, Subscription, decode_assignment, decode_subscription, encode_assignment,
    encode_subscription,
};

use super::assignor::{self, Assignor, MemberSubscription, RebalanceProtocol};
use super::config::{ConsumerConfig, GroupProtocol};
use super::coordinator::{self, Group, JoinError, MemberState};
use super::metrics::CoordinatorMetrics;
use super::{Consumer, ConsumerHeartbeatTopic, SubscriptionKind, consumer_membership};
use crate::client::Client;
use crate::error::Error;
use crate::groups::{OffsetAndMetadata, TopicPartition};
use crate::metrics::network::NetworkSensors;

/// The group of a consumer with a `group.id`, not joined yet, with a connection of its
/// own.
pub(super) async fn connect_group(
    config: &ConsumerConfig,
    group_id: &str,
    metrics: &Arc<CoordinatorMetrics>,
    network: Option<Arc<NetworkSensors>>,
) -> Result<Arc<Group>, Error> {
    // JoinGroup waits up to the rebalance timeout: its connection must wait
    // as long (Java: rebalance timeout + 5 s).
    let group_client = Client::connect_observed(
        config.client_config(config.max_poll_interval_ms + 5_000),
        network,
    )
    .await?;
    Ok(Arc::new(Group {
        client: Arc::new(group_client),
        metrics: metrics.clone(),
        group_id: group_id.to_string(),
        group_instance_id: config.group_instance_id.clone(),
        session_timeout_ms: config.session_timeout_ms,
        rebalance_timeout_ms: config.max_poll_interval_ms,
        heartbeat_interval_ms: config.heartbeat_interval_ms,
        retry_backoff_ms: config.retry_backoff_ms,
        default_api_timeout_ms: config.default_api_timeout_ms,
        remote_assignor: config.group_remote_assignor.clone(),
        wake: tokio::sync::Notify::new(),
        state: std::sync::Mutex::new(MemberState {
            coordinator: None,
            // KIP-1082: a consumer-protocol member names itself.
            member_id: match config.group_protocol {
                GroupProtocol::Classic => String::new(),
                GroupProtocol::Consumer => consumer_membership::new_member_id(),
            },
            generation: match config.group_protocol {
                GroupProtocol::Classic => -1,
                GroupProtocol::Consumer => 0,
            },
            protocol_name: None,
            stable: false,
            rejoin_needed: true,
            lost: false,
            last_poll: Instant::now(),
            fatal: None,
            pending_assignment: None,
            heartbeat_owned: Vec::new(),
            heartbeat_topics: Vec::new(),
            heartbeat_interval_ms: config.heartbeat_interval_ms,
            sent_owned: None,
            sent_topics: None,
        }),
    }))
}

impl Consumer {
    pub(super) fn is_group_member(&self) -> bool {
        self.group.is_some()
            && matches!(
                self.subscription,
                SubscriptionKind::Topics(_) | SubscriptionKind::Pattern(_)
            )
    }

    pub(super) fn touch_poll_timer(&self) {
        if let Some(group) = &self.group {
            group.lock().last_poll = Instant::now();
        }
    }

    /// The rebalance protocol: cooperative only when every configured assignor is
    /// (Java picks the highest protocol all assignors support).
    fn rebalance_protocol(&self) -> RebalanceProtocol {
        if self
            .config
            .partition_assignment_strategy
            .iter()
            .all(|assignor| assignor.rebalance_protocol() == RebalanceProtocol::Cooperative)
        {
            RebalanceProtocol::Cooperative
        } else {
            RebalanceProtocol::Eager
        }
    }

    /// Joins (or rejoins) the group if a rebalance is due.
    pub(super) async fn ensure_group(&mut self) -> Result<(), Error> {
        let group = self.group.clone().expect("only group members call this");
        if let Some(fatal) = group.lock().fatal.take() {
            return Err(Error::Api(fatal));
        }
        if self.metadata_stale
            || matches!(self.subscription, SubscriptionKind::Pattern(_))
                && self.joined_topics.is_empty()
        {
            self.refresh_metadata().await?;
        }
        let topics = self.subscribed_topics();
        {
            let mut state = group.lock();
            if topics != self.joined_topics {
                state.rejoin_needed = true;
            }
            if !state.rejoin_needed && state.stable {
                return Ok(());
            }
        }
        let deadline = Instant::now()
            + Duration::from_millis(
                self.config.default_api_timeout_ms + self.config.max_poll_interval_ms,
            );
        self.prepare_join(&group).await;
        loop {
            let topics = self.subscribed_topics();
            let protocols = self.join_protocols(&group, &topics);
            let joined = group.join(&protocols).await;
            if joined.is_err() {
                group.metrics.rebalance_failed();
            }
            let joined = match joined {
                Ok(joined) => joined,
                Err(JoinError::Retry) if Instant::now() < deadline => continue,
                Err(JoinError::Retry) => {
                    return Err(Error::Config(format!(
                        "could not join group {} before the deadline",
                        group.group_id
                    )));
                }
                Err(JoinError::Fatal(error)) => return Err(error),
            };
            {
                let mut state = group.lock();
                state.member_id = joined.member_id.clone();
                state.generation = joined.generation;
                state.protocol_name = Some(joined.protocol_name.clone());
            }
            let assignments = if joined.leader {
                self.leader_assign(&joined).await?
            } else {
                self.assignment_snapshot = None;
                Vec::new()
            };
            let assignment = group.sync(&joined, assignments).await;
            if assignment.is_err() {
                group.metrics.rebalance_failed();
            }
            let assignment = match assignment {
                Ok(assignment) => assignment,
                Err(JoinError::Retry) if Instant::now() < deadline => {
                    self.lose_partitions_if_lost(&group);
                    continue;
                }
                Err(JoinError::Retry) => {
                    return Err(Error::Config(format!(
                        "could not sync group {} before the deadline",
                        group.group_id
                    )));
                }
                Err(JoinError::Fatal(error)) => return Err(error),
            };
            self.joined_topics = topics;
            self.complete_join(&group, joined.generation, &assignment);
            if self.assignment_snapshot.is_some() {
                // The leader looks again: a topic created (or grown) while the group
                // assigned would otherwise wait for `metadata.max.age.ms`.
                self.refresh_metadata().await?;
            }
            if self.heartbeat.is_none() {
                let max_poll_interval = Duration::from_millis(self.config.max_poll_interval_ms);
                self.heartbeat = Some(tokio::spawn(coordinator::heartbeat_loop(
                    group.clone(),
                    max_poll_interval,
                )));
            }
            let again = group.lock().rejoin_needed;
            if !again {
                return Ok(());
            }
            // A cooperative revocation: rejoin at once so the partitions move.
            self.prepare_join(&group).await;
        }
    }

    /// Before JoinGroup (Java's `onJoinPrepare`): lost partitions are reported lost;
    /// with auto-commit the positions are committed; under the eager protocol every
    /// partition is revoked.
    async fn prepare_join(&mut self, group: &Arc<Group>) {
        self.lose_partitions_if_lost(group);
        let generation = group.lock().generation;
        if self.config.enable_auto_commit && generation >= 0 && !self.assignment.is_empty() {
            let offsets = self.consumed_offsets();
            if let Err(error) = group.commit(&offsets, true).await {
                tracing::warn!(group = %group.group_id, %error, "commit before rebalance failed");
            }
        }
        {
            let mut state = group.lock();
            state.stable = false;
            state.rejoin_needed = false;
        }
        match self.rebalance_protocol() {
            RebalanceProtocol::Eager => {
                let revoked = self.assignment();
                self.drop_partitions(&revoked);
                if let Some(listener) = self.listener.as_mut() {
                    listener.on_partitions_revoked(&revoked);
                }
            }
            RebalanceProtocol::Cooperative => {
                // Partitions of topics no longer subscribed go now.
                let topics = self.subscribed_topics();
                let revoked: BTreeSet<TopicPartition> = self
                    .assignment
                    .keys()
                    .filter(|partition| !topics.contains(&partition.topic))
                    .cloned()
                    .collect();
                if !revoked.is_empty() {
                    self.drop_partitions(&revoked);
                    if let Some(listener) = self.listener.as_mut() {
                        listener.on_partitions_revoked(&revoked);
                    }
                }
            }
        }
    }

    /// group.protocol=consumer: releases lost partitions, reconciles a new target
    /// assignment, and tells the heartbeat task what to send.
    pub(super) async fn reconcile_consumer_group(&mut self) -> Result<(), Error> {
        let group = self.group.clone().expect("only group members call this");
        if let Some(fatal) = group.lock().fatal.take() {
            return Err(Error::Api(fatal));
        }
        if self.metadata_stale
            || matches!(self.subscription, SubscriptionKind::Pattern(_))
                && self.joined_topics.is_empty()
        {
            self.refresh_metadata().await?;
        }
        let mut changed = false;
        let lost = group.lock().lost;
        if lost {
            self.lose_partitions_if_lost(&group);
            changed = true;
        }
        let pending = group.lock().pending_assignment.take();
        if let Some(pending) = pending {
            if pending
                .iter()
                .any(|(id, _)| !self.topic_ids.contains_key(id))
            {
                self.refresh_metadata_for_ids().await?;
            }
            if pending
                .iter()
                .any(|(id, _)| !self.topic_ids.contains_key(id))
            {
                // A topic this client cannot name yet: try again at the next poll.
                group.lock().pending_assignment.get_or_insert(pending);
            } else {
                let target: BTreeSet<TopicPartition> = pending
                    .iter()
                    .flat_map(|(id, partitions)| {
                        let topic = self.topic_ids[id].clone();
                        partitions
                            .iter()
                            .map(move |p| TopicPartition::new(topic.clone(), *p))
                    })
                    .collect();
                // The same assignment again (a response to a full heartbeat) is no
                // change: nothing to revoke, add or tell the listener.
                if target != self.assignment() {
                    self.reconcile(&group, target).await;
                    changed = true;
                }
            }
        }
        let topics = self.subscribed_topics();
        if topics != self.joined_topics {
            self.joined_topics = topics;
            changed = true;
        }
        if changed {
            let mut owned: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            for partition in self.assignment.keys() {
                owned
                    .entry(partition.topic.clone())
                    .or_default()
                    .push(partition.partition);
            }
            let owned = consumer_membership::owned_partitions(&owned, &self.topic_templates);
            let topics: Vec<String> = self.joined_topics.iter().cloned().collect();
            let mut state = group.lock();
            let news = state.heartbeat_owned != owned || state.heartbeat_topics != topics;
            state.heartbeat_owned = owned;
            state.heartbeat_topics = topics;
            drop(state);
            if news {
                group.wake.notify_one();
            }
        }
        if self.heartbeat.is_none() {
            let max_poll_interval = Duration::from_millis(self.config.max_poll_interval_ms);
            self.heartbeat = Some(tokio::spawn(consumer_membership::heartbeat_loop(
                group.clone(),
                max_poll_interval,
            )));
        }
        Ok(())
    }

    /// Metadata for every topic: an assignment named a topic id this client has not
    /// seen (a topic created after the last refresh).
    async fn refresh_metadata_for_ids(&mut self) -> Result<(), Error> {
        let response = self.client.metadata(None).await?;
        for topic in response.topics {
            if let Some(name) = topic.name.map(|name| name.to_string()) {
                self.topic_ids
                    .insert(*topic.topic_id.as_bytes(), name.clone());
                self.topic_templates.insert(
                    name,
                    ConsumerHeartbeatTopic::default().with_topic_id(topic.topic_id),
                );
            }
        }
        self.metadata_stale = true;
        Ok(())
    }

    /// Moves the assignment to `target`: revokes (committing first, with auto-commit)
    /// what is no longer assigned, adds what is new, runs the listener.
    async fn reconcile(&mut self, group: &Arc<Group>, target: BTreeSet<TopicPartition>) {
        let owned = self.assignment();
        let revoked: BTreeSet<TopicPartition> = owned.difference(&target).cloned().collect();
        let added: BTreeSet<TopicPartition> = target.difference(&owned).cloned().collect();
        if !revoked.is_empty() {
            if self.config.enable_auto_commit {
                let offsets: BTreeMap<TopicPartition, OffsetAndMetadata> = self
                    .consumed_offsets()
                    .into_iter()
                    .filter(|(partition, _)| revoked.contains(partition))
                    .collect();
                if let Err(error) = group.commit(&offsets, true).await {
                    tracing::warn!(group = %group.group_id, %error, "commit before revocation failed");
                }
            }
            self.drop_partitions(&revoked);
            if let Some(listener) = self.listener.as_mut() {
                listener.on_partitions_revoked(&revoked);
            }
        }
        for partition in &added {
            self.assignment.entry(partition.clone()).or_default();
        }
        self.assignment_changed();
        self.metadata_stale = true;
        tracing::debug!(group = %group.group_id, ?target, "reconciled");
        // Called after every reconciliation, possibly empty, as Java does.
        if let Some(listener) = self.listener.as_mut() {
            listener.on_partitions_assigned(&added);
        }
    }

    fn lose_partitions_if_lost(&mut self, group: &Arc<Group>) {
        let lost = std::mem::take(&mut group.lock().lost);
        if lost && !self.assignment.is_empty() {
            let partitions = self.assignment();
            self.drop_partitions(&partitions);
            if let Some(listener) = self.listener.as_mut() {
                listener.on_partitions_lost(&partitions);
            }
        }
    }

    fn drop_partitions(&mut self, partitions: &BTreeSet<TopicPartition>) {
        for partition in partitions {
            self.assignment.remove(partition);
            self.buffered.remove(partition);
        }
        self.assignment_changed();
    }

    /// (assignor name, subscription bytes) for every configured assignor.
    fn join_protocols(&self, group: &Group, topics: &BTreeSet<String>) -> Vec<(String, Vec<u8>)> {
        let owned: Vec<TopicPartition> = self.assignment.keys().cloned().collect();
        let generation = group.lock().generation;
        self.config
            .partition_assignment_strategy
            .iter()
            .map(|assignor| {
                let subscription = Subscription {
                    version: 3,
                    topics: topics.iter().cloned().collect(),
                    user_data: assignor.subscription_user_data(
                        &self.previous_assignment,
                        self.previous_generation,
                    ),
                    owned_partitions: assignor::by_topic(&owned),
                    generation_id: generation,
                    rack_id: Some(self.config.client_rack.clone()).filter(|rack| !rack.is_empty()),
                };
                (
                    assignor.name().to_string(),
                    encode_subscription(&subscription),
                )
            })
            .collect()
    }

    /// The leader's work: decode every member's subscription, learn the partition
    /// counts of every subscribed topic, run the chosen assignor.
    async fn leader_assign(
        &mut self,
        joined: &coordinator::Joined,
    ) -> Result<Vec<(String, Vec<u8>)>, Error> {
        let assignor = Assignor::from_name(&joined.protocol_name).ok_or_else(|| {
            Error::Config(format!(
                "the coordinator chose assignor {:?}, which this consumer does not know",
                joined.protocol_name
            ))
        })?;
        let mut members = Vec::new();
        for (member_id, instance_id, metadata) in &joined.members {
            let subscription = decode_subscription(metadata).map_err(|error| Error::Protocol {
                address: "the group coordinator".to_string(),
                reason: format!("member {member_id}'s subscription does not decode: {error}"),
            })?;
            let (owned_partitions, generation) = assignor.member_data(&subscription);
            members.push(MemberSubscription {
                member_id: member_id.clone(),
                group_instance_id: instance_id.clone(),
                topics: subscription.topics,
                owned_partitions,
                generation,
            });
        }
        let topics: Vec<String> = members
            .iter()
            .flat_map(|member| member.topics.iter().cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let metadata = self.client.metadata(Some(&topics)).await?;
        let mut partitions_per_topic = BTreeMap::new();
        for topic in metadata.topics {
            if topic.error_code != 0 {
                continue;
            }
            if let Some(name) = topic.name {
                partitions_per_topic.insert(name.to_string(), topic.partitions.len() as i32);
            }
        }
        let assignment = assignor.assign(&partitions_per_topic, &members);
        tracing::debug!(assignor = assignor.name(), ?assignment, "leader assigned");
        self.assignment_snapshot = Some(
            topics
                .iter()
                .map(|t| (t.clone(), partitions_per_topic.get(t).copied()))
                .collect(),
        );
        Ok(assignment
            .into_iter()
            .map(|(member, partitions)| {
                let bytes = encode_assignment(&Assignment {
                    version: 3,
                    partitions: assignor::by_topic(&partitions),
                    user_data: None,
                });
                (member, bytes)
            })
            .collect())
    }

    /// After SyncGroup (Java's `onJoinComplete`): apply the assignment; under the
    /// cooperative protocol revoke what was taken away and rejoin if anything was.
    fn complete_join(&mut self, group: &Arc<Group>, generation: i32, assignment: &Bytes) {
        let assigned: BTreeSet<TopicPartition> = match decode_assignment(assignment) {
            Ok(decoded) => decoded
                .partitions
                .iter()
                .flat_map(|(topic, partitions)| {
                    partitions
                        .iter()
                        .map(|p| TopicPartition::new(topic.clone(), *p))
                })
                .collect(),
            Err(error) => {
                tracing::warn!(group = %group.group_id, %error, "assignment does not decode; rejoining");
                group.lock().rejoin_needed = true;
                BTreeSet::new()
            }
        };
        let owned = self.assignment();
        let revoked: BTreeSet<TopicPartition> = owned.difference(&assigned).cloned().collect();
        let added: BTreeSet<TopicPartition> = assigned.difference(&owned).cloned().collect();
        if !revoked.is_empty() {
            self.drop_partitions(&revoked);
            if let Some(listener) = self.listener.as_mut() {
                listener.on_partitions_revoked(&revoked);
            }
            if self.rebalance_protocol() == RebalanceProtocol::Cooperative {
                group.lock().rejoin_needed = true;
            }
        }
        for partition in &added {
            self.assignment.entry(partition.clone()).or_default();
        }
        self.assignment_changed();
        self.previous_assignment = assigned.iter().cloned().collect();
        self.previous_generation = generation;
        self.metadata_stale = true;
        {
            let mut state = group.lock();
            state.stable = true;
            state.last_poll = Instant::now();
        }
        tracing::debug!(group = %group.group_id, generation, ?assigned, "joined");
        if let Some(listener) = self.listener.as_mut() {
            listener.on_partitions_assigned(&added);
        }
    }

    /// Before leaving: commit (auto-commit) and revoke everything through the listener.
    pub(super) async fn revoke_all_for_leave(&mut self) {
        let Some(group) = self.group.clone() else {
            return;
        };
        if self.config.enable_auto_commit && group.lock().generation >= 0 {
            let offsets = self.consumed_offsets();
            if let Err(error) = group.commit(&offsets, true).await {
                tracing::warn!(group = %group.group_id, %error, "commit before leaving failed");
            }
        }
        let partitions = self.assignment();
        if !partitions.is_empty() {
            let lost = group.lock().generation < 0;
            self.drop_partitions(&partitions);
            if let Some(listener) = self.listener.as_mut() {
                if lost {
                    listener.on_partitions_lost(&partitions);
                } else {
                    listener.on_partitions_revoked(&partitions);
                }
            }
        }
    }
}
