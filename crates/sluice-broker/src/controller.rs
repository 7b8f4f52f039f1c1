//! The active controller's duties beyond storing metadata, run on whichever voter is
//! the Raft leader, and the broker side of them:
//!
//! - liveness: brokers heartbeat (`broker.heartbeat.interval.ms`, tracked in
//!   [`crate::liveness`]); one silent for `broker.session.timeout.ms` is fenced
//!   (BrokerRegistrationChangeRecord), and a fenced broker that heartbeats again is
//!   unfenced;
//! - leader election: a partition whose leader is fenced, gone or shutting down gets the
//!   first live member of its ISR as leader; with none, a live eligible leader replica
//!   where the cluster tracks them (KIP-966, [`crate::elr`]); with none, it goes offline
//!   (leader -1) unless `unclean.leader.election.enable` lets an out-of-sync replica
//!   lead; brokers that cannot lead leave the ISRs they were in (never the last member);
//! - controlled shutdown: a broker that asks to stop has its leaderships moved away
//!   first and is told it may stop once it leads nothing that could move;
//! - preferred leader election (`auto.leader.rebalance.enable`): every
//!   `leader.imbalance.check.interval.seconds`, leadership returns to the first replica
//!   when it is alive and in sync;
//! - reassignments: the replica set becomes the target followed by the leaving
//!   replicas, and the leaving ones are dropped once every adding replica is in the ISR;
//! - AlterPartition: a leader's ISR change, checked against the partition's leader
//!   epoch and partition epoch;
//! - unclean shutdown: a broker that restarts after one leaves the ISRs (and ELRs) it
//!   shares with other replicas until it has caught up (KIP-966).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use sluice_metadata::{MetadataImage, MetadataRecord, PartitionChangeRecord};
use sluice_protocol::ErrorCode;
use tokio::sync::watch;

use crate::broker::{Broker, BrokerError, TOPIC_RESOURCE};
use crate::errors;
use crate::quorum::rpc::{AlterPartition, Heartbeat, HeartbeatReply};
use crate::quorum::{NodeId, QuorumError, RpcRequest, RpcResponse};

pub use crate::liveness::Liveness;

/// Whether a broker can lead: registered, unfenced, not shutting down.
pub fn can_lead(image: &MetadataImage, broker_id: i32) -> bool {
    image
        .broker(broker_id)
        .is_some_and(|b| !b.fenced && !b.in_controlled_shutdown)
}

/// The partition changes that take `broker_id` out of every ISR it shares with another
/// replica, after it started from an unclean shutdown (Kafka's unclean-shutdown
/// registration, KIP-966): what its logs held past the last flush may be gone, so it
/// must not count towards acknowledgements, nor lead, until it has caught up again (it
/// rejoins through the leaders' ISR expansion). Where it led, the first other in-sync
/// replica that can lead takes over; a partition where none can stays as it is.
///
/// Where the cluster tracks eligible leader replicas (KIP-966), it also leaves every
/// ELR, and where it is the ISR alone, an ELR member that can lead takes over (it holds
/// everything committed; this broker may not). `min_isr` gives a topic's
/// `min.insync.replicas`.
pub fn leave_isrs(
    image: &MetadataImage,
    broker_id: i32,
    min_isr: &dyn Fn(&str) -> i32,
) -> Vec<MetadataRecord> {
    let elr_enabled = crate::elr::enabled(image);
    let mut changes = Vec::new();
    for topic in image.topics() {
        for (index, partition) in &topic.partitions {
            let in_elr = elr_enabled && partition.eligible_leader_replicas.contains(&broker_id);
            let mut change = PartitionChangeRecord::new(topic.topic_id, *index);
            if partition.isr.contains(&broker_id) && partition.isr.len() >= 2 {
                let isr: Vec<i32> = partition
                    .isr
                    .iter()
                    .copied()
                    .filter(|r| *r != broker_id)
                    .collect();
                if partition.leader == broker_id {
                    let Some(&next) = partition
                        .replicas
                        .iter()
                        .find(|r| isr.contains(r) && can_lead(image, **r))
                    else {
                        continue;
                    };
                    change.leader = next;
                }
                change.isr = Some(isr);
            } else if elr_enabled && partition.isr == [broker_id] {
                let Some(&eligible) = partition.replicas.iter().find(|r| {
                    **r != broker_id
                        && partition.eligible_leader_replicas.contains(r)
                        && can_lead(image, **r)
                }) else {
                    continue;
                };
                change.leader = eligible;
                change.isr = Some(vec![eligible]);
            } else if !in_elr {
                continue;
            }
            if elr_enabled {
                let target_isr = change.isr.as_deref().unwrap_or(&partition.isr);
                let (elr, last_known) =
                    crate::elr::target(partition, target_isr, min_isr(&topic.name), &[broker_id]);
                change.eligible_leader_replicas = Some(elr);
                change.last_known_elr = Some(last_known);
            }
            changes.push(MetadataRecord::PartitionChange(change));
        }
    }
    changes
}

/// `unclean.leader.election.enable` for `topic`: the topic's own value, else the
/// broker's (its dynamic layers over the static configuration, as Kafka resolves it).
fn unclean_allowed(broker: &Broker, image: &MetadataImage, topic: &str) -> bool {
    match image
        .configs(TOPIC_RESOURCE, topic)
        .and_then(|c| c.get("unclean.leader.election.enable"))
    {
        Some(value) => value.trim() == "true",
        None => {
            crate::config::DynamicSettings::from_image(&broker.config, image)
                .unclean_leader_election
        }
    }
}

/// The partition changes that give every partition a live leader where one is
/// eligible, and drop brokers that cannot lead from ISRs (keeping at least one member).
/// `preferred`: also move leadership back to the first replica where it is eligible.
pub fn elect_leaders(
    image: &MetadataImage,
    preferred: bool,
    unclean: &dyn Fn(&str) -> bool,
) -> Vec<MetadataRecord> {
    let mut changes = Vec::new();
    let elr_enabled = crate::elr::enabled(image);
    for topic in image.topics() {
        for (index, partition) in &topic.partitions {
            let alive = |id: &i32| can_lead(image, *id);
            let live_isr: Vec<i32> = partition.isr.iter().copied().filter(alive).collect();
            let leader_ok = partition.leader >= 0 && alive(&partition.leader);
            let mut change = PartitionChangeRecord::new(topic.topic_id, *index);
            if !leader_ok {
                if let Some(&first) = partition.replicas.iter().find(|r| live_isr.contains(r)) {
                    change.leader = first;
                    if live_isr != partition.isr {
                        change.isr = Some(live_isr.clone());
                    }
                } else if let Some(&eligible) = partition.replicas.iter().find(|r| {
                    elr_enabled && partition.eligible_leader_replicas.contains(r) && alive(r)
                }) {
                    // KIP-966: no ISR member can lead, but a replica that left the ISR
                    // while it was below min ISR holds everything committed.
                    change.leader = eligible;
                    change.isr = Some(vec![eligible]);
                } else if unclean(&topic.name)
                    && let Some(&any) = partition.replicas.iter().find(|r| alive(r))
                {
                    change.leader = any;
                    change.isr = Some(vec![any]);
                    change.leader_recovery_state = 1;
                } else if partition.leader >= 0
                    && image
                        .broker(partition.leader)
                        .is_some_and(|b| !b.fenced && b.in_controlled_shutdown)
                {
                    // A stopping leader nobody can replace keeps leading until it
                    // is gone (Kafka's controlled shutdown does not take a partition
                    // offline early).
                } else if partition.leader != -1 {
                    // No eligible leader: offline rather than lose acknowledged writes.
                    change.leader = -1;
                    if partition.isr.len() > 1 && partition.isr.contains(&partition.leader) {
                        change.isr = Some(vec![partition.leader]);
                    }
                }
            } else {
                if !live_isr.is_empty() && live_isr != partition.isr {
                    change.isr = Some(live_isr.clone());
                }
                let first = partition.replicas.first().copied().unwrap_or(-1);
                if preferred
                    && first != partition.leader
                    && alive(&first)
                    && partition.isr.contains(&first)
                {
                    change.leader = first;
                }
            }
            if change.leader != -2 || change.isr.is_some() {
                changes.push(MetadataRecord::PartitionChange(change));
            }
        }
    }
    changes
}

/// The active controller's loop: fences silent brokers, elects leaders, balances
/// leadership. Runs on every voter; acts only while this node leads the quorum.
pub async fn run(broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    let settings = broker.config.settings().controller;
    let session = settings.broker_session_timeout;
    let rebalance_every = settings.leader_imbalance_check_interval;
    let rebalance = settings.auto_leader_rebalance;
    let tick = (session / 8).clamp(Duration::from_millis(50), Duration::from_millis(500));
    let mut last_rebalance = Instant::now();
    // When a majority last confirmed this node as the active controller.
    let mut last_confirmed = Instant::now();
    loop {
        let asleep = Instant::now();
        tokio::select! {
            _ = shutdown.changed() => {
                if *shutdown.borrow() {
                    return;
                }
            }
            _ = tokio::time::sleep(tick) => {}
        }
        if asleep.elapsed() > tick * 2 + Duration::from_secs(1) {
            tracing::warn!(
                overslept_ms = asleep.elapsed().as_millis() as u64,
                "the controller did not run for a while: every broker gets a new session"
            );
            broker.liveness.restart();
        }
        let Ok(quorum) = broker.quorum().cloned() else {
            continue;
        };
        if !quorum.is_active_controller() {
            continue;
        }
        let term = quorum.raft.metrics().borrow().current_term;
        // A controller that was paused or cut off still believes it leads: a majority
        // confirms it before it plans on its image, and the image then holds every
        // committed change. (Outside the controller lock: heartbeats wait on it.)
        if !quorum
            .confirm_active_controller(tick.max(Duration::from_secs(1)))
            .await
        {
            continue;
        }
        // Confirmed again after a while without a majority (cut off, yet still the
        // leader when the cut healed, as openraft's followers wait out a leader lease
        // before electing): the brokers' heartbeats could not reach it either, so their
        // silence is not theirs.
        if last_confirmed.elapsed() > tick * 2 + Duration::from_secs(1) {
            tracing::warn!(
                unconfirmed_ms = last_confirmed.elapsed().as_millis() as u64,
                "the controller was out of touch with its quorum: every broker gets a new session"
            );
            broker.liveness.restart();
        }
        last_confirmed = Instant::now();
        let _controller = broker.controller_lock().await;
        let image = broker.image();
        let mut records = Vec::new();
        for broker_id in broker.liveness.silent(&image, session, term) {
            let Some(registration) = image.broker(broker_id) else {
                continue;
            };
            tracing::warn!(broker_id, "fencing a broker whose heartbeats stopped");
            records.push(MetadataRecord::BrokerRegistrationChange {
                broker_id,
                broker_epoch: registration.broker_epoch,
                fenced: 1,
                in_controlled_shutdown: 0,
            });
        }
        let mut next = (*image).clone();
        for record in &records {
            let _ = next.apply(record);
        }
        let preferred = rebalance && last_rebalance.elapsed() >= rebalance_every;
        if preferred {
            last_rebalance = Instant::now();
        }
        records.extend(elect_leaders(&next, preferred, &|topic| {
            unclean_allowed(&broker, &next, topic)
        }));
        if records.is_empty() {
            // Leadership settled: finish the reassignments that can finish.
            records = complete_reassignments(&next);
        }
        if records.is_empty() {
            continue;
        }
        // A write in progress (no quorum: it retries until its deadline) does not
        // hold up a shutdown.
        tokio::select! {
            written = broker.write_as_controller(&records, &image) => {
                if let Err(error) = written {
                    tracing::warn!(%error, "controller change not written");
                }
            }
            _ = shutdown.changed() => {
                if *shutdown.borrow() {
                    return;
                }
            }
        }
    }
}

/// After an unclean shutdown: leaves every ISR this broker shares with another
/// replica ([`leave_isrs`]), planned on the current image with
/// its partition epochs and re-planned when a partition moved on meanwhile.
/// Returns how many partitions it left.
pub async fn leave_isrs_after_unclean_shutdown(broker: &Broker) -> Result<usize, BrokerError> {
    for _ in 0..10 {
        let image = broker.image();
        let records = leave_isrs(&image, broker.node_id, &|topic| {
            crate::replication::topic_min_insync_replicas(&broker.config, &image, topic)
        });
        if records.is_empty() {
            return Ok(0);
        }
        match broker.write_metadata(&records).await {
            Ok(()) => return Ok(records.len()),
            Err(BrokerError::Quorum(crate::quorum::QuorumError::StalePartition(reason))) => {
                tracing::debug!(%reason, "ISR changes planned on a stale image; planning again");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(error) => return Err(error),
        }
    }
    Err(BrokerError::Quorum(crate::quorum::QuorumError::Refused(
        "the partitions kept changing under the ISR changes".into(),
    )))
}

/// Asks the active controller to change a partition's ISR, as its leader does with
/// Kafka's AlterPartition: `leader_epoch` and `partition_epoch` are what the leader
/// last saw (stale ones are fenced). Returns the partition as the controller now has
/// it, or Kafka's error code (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION,
/// INELIGIBLE_REPLICA, NOT_CONTROLLER, ...).
pub async fn alter_partition(
    broker: &Arc<Broker>,
    topic_id: sluice_metadata::Uuid,
    partition: i32,
    leader_epoch: i32,
    partition_epoch: i32,
    new_isr: Vec<i32>,
) -> Result<sluice_metadata::PartitionImage, ErrorCode> {
    let quorum = broker
        .quorum()
        .map_err(|_| ErrorCode::NOT_CONTROLLER)?
        .clone();
    let change = crate::quorum::rpc::AlterPartition {
        broker_id: broker.node_id,
        topic_id,
        partition,
        leader_epoch,
        partition_epoch,
        new_isr,
    };
    let index = if quorum.is_active_controller() {
        alter_partition_as_controller(broker, change).await?
    } else {
        let (_, address) = quorum.leader().ok_or(ErrorCode::NOT_CONTROLLER)?;
        let request = crate::quorum::RpcRequest::AlterPartition(change);
        match crate::quorum::rpc::call(&address, &request, std::time::Duration::from_secs(10)).await
        {
            Ok(crate::quorum::RpcResponse::AlterPartition(result)) => result?,
            _ => return Err(ErrorCode::NOT_CONTROLLER),
        }
    };
    quorum
        .wait_applied(index, std::time::Duration::from_secs(10))
        .await
        .map_err(|_| ErrorCode::REQUEST_TIMED_OUT)?;
    broker
        .image()
        .topic_by_id(&topic_id)
        .and_then(|t| t.partitions.get(&partition))
        .cloned()
        .ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
}

/// The quorum's state from its leader (here, or asked over the network).
pub async fn quorum_status(broker: &Broker) -> Option<crate::quorum::QuorumStatus> {
    let quorum = broker.quorum().ok()?.clone();
    if let Some(status) = quorum.status() {
        return Some(status);
    }
    let (_, address) = quorum.leader()?;
    match crate::quorum::rpc::call(&address, &RpcRequest::Status, Duration::from_secs(5)).await {
        Ok(RpcResponse::Status(status)) => status,
        _ => None,
    }
}

/// A broker's heartbeat, on the active controller.
pub async fn heartbeat_as_controller(broker: &Arc<Broker>, heartbeat: Heartbeat) -> HeartbeatReply {
    let refuse = |error| HeartbeatReply {
        error,
        fenced: true,
        should_shut_down: false,
    };
    let Ok(quorum) = broker.quorum() else {
        return refuse(errors::NOT_CONTROLLER);
    };
    if !quorum.is_active_controller() {
        return refuse(errors::NOT_CONTROLLER);
    }
    // The heartbeat counts from its arrival, not from when the controller is free to
    // act on it (a write in progress holds the controller lock for a while).
    if broker
        .image()
        .broker(heartbeat.broker_id)
        .is_some_and(|r| r.broker_epoch == heartbeat.broker_epoch)
    {
        broker
            .liveness
            .saw(heartbeat.broker_id, heartbeat.broker_epoch);
    }
    let _controller = broker.controller_lock().await;
    let image = broker.image();
    let Some(registration) = image.broker(heartbeat.broker_id) else {
        return refuse(errors::BROKER_ID_NOT_REGISTERED);
    };
    if registration.broker_epoch != heartbeat.broker_epoch {
        return refuse(errors::STALE_BROKER_EPOCH);
    }
    let mut records = Vec::new();
    if registration.fenced && !heartbeat.want_shutdown {
        tracing::info!(
            broker_id = heartbeat.broker_id,
            "unfencing a broker that heartbeats again"
        );
        records.push(MetadataRecord::BrokerRegistrationChange {
            broker_id: heartbeat.broker_id,
            broker_epoch: registration.broker_epoch,
            fenced: -1,
            in_controlled_shutdown: 0,
        });
    }
    if heartbeat.want_shutdown && !registration.in_controlled_shutdown && !registration.fenced {
        tracing::info!(
            broker_id = heartbeat.broker_id,
            "controlled shutdown: moving leaderships away"
        );
        records.push(MetadataRecord::BrokerRegistrationChange {
            broker_id: heartbeat.broker_id,
            broker_epoch: registration.broker_epoch,
            fenced: 0,
            in_controlled_shutdown: 1,
        });
    }
    let mut next = (*image).clone();
    for record in &records {
        let _ = next.apply(record);
    }
    if !records.is_empty() {
        records.extend(elect_leaders(&next, false, &|topic| {
            unclean_allowed(broker, &next, topic)
        }));
        if let Err(error) = broker.write_as_controller(&records, &image).await {
            tracing::warn!(%error, "heartbeat change not written");
            return refuse(error.code());
        }
    }
    let image = broker.image();
    let registration = image.broker(heartbeat.broker_id);
    // The broker may stop once it leads no partition that another replica could take.
    let should_shut_down = heartbeat.want_shutdown
        && image.topics().all(|t| {
            t.partitions.values().all(|p| {
                p.leader != heartbeat.broker_id
                    || !p
                        .isr
                        .iter()
                        .any(|r| *r != heartbeat.broker_id && can_lead(&image, *r))
            })
        });
    HeartbeatReply {
        error: errors::NONE,
        fenced: registration.is_none_or(|r| r.fenced),
        should_shut_down,
    }
}

/// A leader's ISR change, on the active controller.
pub async fn alter_partition_as_controller(
    broker: &Arc<Broker>,
    change: AlterPartition,
) -> Result<u64, ErrorCode> {
    let quorum = broker
        .quorum()
        .map_err(|_| ErrorCode::NOT_CONTROLLER)?
        .clone();
    if !quorum.is_active_controller() {
        return Err(ErrorCode::NOT_CONTROLLER);
    }
    let _controller = broker.controller_lock().await;
    let image = broker.image();
    let partition = image
        .topic_by_id(&change.topic_id)
        .and_then(|t| t.partitions.get(&change.partition))
        .ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)?;
    if partition.leader != change.broker_id {
        return Err(ErrorCode::NOT_LEADER_OR_FOLLOWER);
    }
    if change.leader_epoch != partition.leader_epoch {
        return Err(ErrorCode::FENCED_LEADER_EPOCH);
    }
    if change.partition_epoch != partition.partition_epoch {
        return Err(ErrorCode::INVALID_UPDATE_VERSION);
    }
    if change.new_isr.is_empty()
        || change
            .new_isr
            .iter()
            .any(|r| !partition.replicas.contains(r))
    {
        return Err(ErrorCode::INVALID_REQUEST);
    }
    // A replica may join the ISR only while it can lead (Kafka: not fenced, not in
    // controlled shutdown).
    if change
        .new_isr
        .iter()
        .any(|r| !partition.isr.contains(r) && !can_lead(&image, *r))
    {
        return Err(ErrorCode::INELIGIBLE_REPLICA);
    }
    let mut record = PartitionChangeRecord::new(change.topic_id, change.partition);
    record.isr = Some(change.new_isr.clone());
    let mut records = [MetadataRecord::PartitionChange(record)];
    crate::elr::fill(&image, &mut records, &|topic| {
        crate::replication::topic_min_insync_replicas(&broker.config, &image, topic)
    });
    match quorum
        .propose_as_controller(crate::quorum::Proposal::planned(&records, &image))
        .await
    {
        Ok(index) => Ok(index),
        Err(QuorumError::StalePartition(_) | QuorumError::Refused(_)) => {
            Err(ErrorCode::INVALID_UPDATE_VERSION)
        }
        Err(QuorumError::NotController) => Err(ErrorCode::NOT_CONTROLLER),
        Err(_) => Err(ErrorCode::REQUEST_TIMED_OUT),
    }
}

/// The broker side: heartbeats to the active controller every
/// `broker.heartbeat.interval.ms`, re-registering when the controller no longer knows
/// this registration. Returns when `shutdown` turns true.
pub async fn run_heartbeats(
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
    reregister: impl Fn() -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<(), BrokerError>> + Send>,
    > + Send,
) {
    let every = broker
        .config
        .settings()
        .controller
        .broker_heartbeat_interval;
    loop {
        tokio::select! {
            _ = shutdown.changed() => {
                if *shutdown.borrow() {
                    return;
                }
            }
            _ = tokio::time::sleep(every) => {}
        }
        let beat = async {
            match heartbeat(&broker, false).await {
                Some(reply)
                    if reply.error == errors::STALE_BROKER_EPOCH
                        || reply.error == errors::BROKER_ID_NOT_REGISTERED =>
                {
                    tracing::warn!(
                        error = reply.error,
                        "the controller does not know this registration; registering again"
                    );
                    if let Err(error) = reregister().await {
                        tracing::warn!(%error, "registration failed");
                    }
                }
                _ => {}
            }
        };
        // A heartbeat (or a registration) in progress does not hold up a shutdown.
        tokio::select! {
            _ = beat => {}
            _ = shutdown.changed() => {
                if *shutdown.borrow() {
                    return;
                }
            }
        }
    }
}

/// Sends one heartbeat to the active controller (locally when this node is it).
pub async fn heartbeat(broker: &Arc<Broker>, want_shutdown: bool) -> Option<HeartbeatReply> {
    let quorum = broker.quorum().ok()?.clone();
    let request = Heartbeat {
        broker_id: broker.node_id,
        broker_epoch: broker.broker_epoch.load(Ordering::Acquire),
        want_shutdown,
    };
    if quorum.is_leader() {
        return Some(heartbeat_as_controller(broker, request).await);
    }
    let (_, address) = quorum.leader()?;
    // A controller that does not answer within half a session is given up on for the
    // next heartbeat (to whoever leads then) while the session still runs.
    let timeout = (broker.config.settings().controller.broker_session_timeout / 2)
        .clamp(Duration::from_millis(500), Duration::from_secs(5));
    match crate::quorum::rpc::call(&address, &RpcRequest::Heartbeat(request), timeout).await {
        Ok(RpcResponse::Heartbeat(reply)) => Some(reply),
        Ok(other) => {
            tracing::debug!(?other, "unexpected heartbeat answer");
            None
        }
        Err(error) => {
            tracing::debug!(%error, "heartbeat not delivered");
            None
        }
    }
}

/// Controlled shutdown: asks the controller to move this broker's leaderships away and
/// waits (at most `timeout`) until it says the broker may stop.
/// Gives up early when no controller answers for two seconds (the whole cluster is
/// stopping, or this node is cut off): nobody would move the leaderships anyway.
pub async fn controlled_shutdown(broker: &Arc<Broker>, timeout: Duration) -> bool {
    const SILENCE: Duration = Duration::from_secs(2);
    let deadline = Instant::now() + timeout;
    let mut last_answer = Instant::now();
    while Instant::now() < deadline && last_answer.elapsed() < SILENCE {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .min(SILENCE);
        if let Ok(Some(reply)) = tokio::time::timeout(left, heartbeat(broker, true)).await {
            last_answer = Instant::now();
            if reply.error == errors::NONE && reply.should_shut_down {
                return true;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// Asks the quorum (through any voter) to send this broker-only node the log.
pub async fn join_as_learner(
    voters: &std::collections::BTreeMap<NodeId, String>,
    node_id: NodeId,
    address: String,
    timeout: Duration,
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let mut last = String::from("no voter configured");
    while Instant::now() < deadline {
        for voter in voters.values() {
            let request = RpcRequest::Join {
                node_id,
                address: address.clone(),
            };
            match crate::quorum::rpc::call(voter, &request, Duration::from_secs(5)).await {
                Ok(RpcResponse::Join(Ok(()))) => return Ok(()),
                Ok(RpcResponse::Join(Err(error))) => last = error,
                Ok(other) => last = format!("{other:?}"),
                Err(error) => last = error.to_string(),
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(last)
}

/// The partition change a reassignment to `target` makes (or, with `None`, its
/// cancellation), as Kafka's controller makes it: the replica set becomes the target
/// followed by the replicas leaving, with the difference in `adding_replicas` and
/// `removing_replicas`; once every adding replica is in the ISR,
/// [`complete_reassignments`] drops the leaving ones. `Ok(None)`: nothing to change.
pub fn reassign(
    image: &MetadataImage,
    topic_id: sluice_metadata::Uuid,
    partition_index: i32,
    target: Option<&[i32]>,
    allow_replication_factor_change: bool,
) -> Result<Option<PartitionChangeRecord>, (i16, String)> {
    let partition = image
        .topic_by_id(&topic_id)
        .and_then(|t| t.partitions.get(&partition_index))
        .ok_or((
            errors::UNKNOWN_TOPIC_OR_PARTITION,
            "Unknown topic or partition".to_string(),
        ))?;
    let ongoing = !partition.adding_replicas.is_empty() || !partition.removing_replicas.is_empty();
    // The replicas before any reassignment in progress.
    let original: Vec<i32> = partition
        .replicas
        .iter()
        .copied()
        .filter(|r| !partition.adding_replicas.contains(r))
        .collect();
    let Some(target) = target else {
        if !ongoing {
            return Err((
                errors::NO_REASSIGNMENT_IN_PROGRESS,
                "No ongoing reassignment for this partition".into(),
            ));
        }
        return Ok(Some(finish(
            image,
            topic_id,
            partition_index,
            partition,
            &original,
        )));
    };
    if target.is_empty() {
        return Err((
            errors::INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.".into(),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(duplicate) = target.iter().find(|r| !seen.insert(**r)) {
        return Err((
            errors::INVALID_REPLICA_ASSIGNMENT,
            format!(
                "The manual partition assignment includes the replica {duplicate} more than once."
            ),
        ));
    }
    if let Some(unknown) = target.iter().find(|r| image.broker(**r).is_none()) {
        return Err((
            errors::INVALID_REPLICA_ASSIGNMENT,
            format!(
                "The manual partition assignment includes broker {unknown}, but no such broker is registered."
            ),
        ));
    }
    if !allow_replication_factor_change && target.len() != original.len() {
        return Err((
            errors::INVALID_REPLICATION_FACTOR,
            format!(
                "The replication factor is changed from {} to {} but allowReplicationFactorChange is false",
                original.len(),
                target.len()
            ),
        ));
    }
    if !ongoing && target == original.as_slice() {
        return Ok(None);
    }
    let adding: Vec<i32> = target
        .iter()
        .copied()
        .filter(|r| !original.contains(r))
        .collect();
    if adding.is_empty() {
        // Only removals (or a new order): nothing to wait for.
        return Ok(Some(finish(
            image,
            topic_id,
            partition_index,
            partition,
            target,
        )));
    }
    let removing: Vec<i32> = original
        .iter()
        .copied()
        .filter(|r| !target.contains(r))
        .collect();
    let mut replicas = target.to_vec();
    replicas.extend(removing.iter().copied());
    let mut change = PartitionChangeRecord::new(topic_id, partition_index);
    change.replicas = Some(replicas);
    change.adding_replicas = Some(adding);
    change.removing_replicas = Some(removing);
    Ok(Some(change))
}

/// The change that leaves a partition on exactly `replicas`: the ISR keeps only those
/// (never emptied), and a leader outside them hands over to the first eligible one.
fn finish(
    image: &MetadataImage,
    topic_id: sluice_metadata::Uuid,
    partition_index: i32,
    partition: &sluice_metadata::PartitionImage,
    replicas: &[i32],
) -> PartitionChangeRecord {
    let mut change = PartitionChangeRecord::new(topic_id, partition_index);
    let isr: Vec<i32> = partition
        .isr
        .iter()
        .copied()
        .filter(|r| replicas.contains(r))
        .collect();
    change.replicas = Some(replicas.to_vec());
    change.adding_replicas = Some(Vec::new());
    change.removing_replicas = Some(Vec::new());
    if !isr.is_empty() && isr != partition.isr {
        change.isr = Some(isr.clone());
    }
    let isr = if isr.is_empty() {
        partition.isr.clone()
    } else {
        isr
    };
    if !replicas.contains(&partition.leader) || !isr.contains(&partition.leader) {
        change.leader = replicas
            .iter()
            .copied()
            .find(|r| isr.contains(r) && can_lead(image, *r))
            .unwrap_or(-1);
    }
    change
}

/// Completes the reassignments whose adding replicas have all joined the ISR.
pub fn complete_reassignments(image: &MetadataImage) -> Vec<MetadataRecord> {
    let mut records = Vec::new();
    for topic in image.topics() {
        for (index, partition) in &topic.partitions {
            if partition.adding_replicas.is_empty() && partition.removing_replicas.is_empty() {
                continue;
            }
            if !partition
                .adding_replicas
                .iter()
                .all(|r| partition.isr.contains(r))
            {
                continue;
            }
            let target: Vec<i32> = partition
                .replicas
                .iter()
                .copied()
                .filter(|r| !partition.removing_replicas.contains(r))
                .collect();
            tracing::info!(topic = %topic.name, partition = index, replicas = ?target, "reassignment complete");
            records.push(MetadataRecord::PartitionChange(finish(
                image,
                topic.topic_id,
                *index,
                partition,
                &target,
            )));
        }
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_metadata::{BrokerEndpoint, PartitionRecord, RegisterBrokerRecord, TopicRecord};

    const TOPIC: sluice_metadata::Uuid = [7; 16];

    fn broker(id: i32, fenced: bool, in_controlled_shutdown: bool) -> MetadataRecord {
        MetadataRecord::RegisterBroker(RegisterBrokerRecord {
            broker_id: id,
            is_migrating_zk_broker: false,
            incarnation_id: [id as u8; 16],
            broker_epoch: 10,
            endpoints: vec![BrokerEndpoint {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9000 + id as u16,
                security_protocol: 0,
            }],
            features: vec![],
            rack: None,
            fenced,
            in_controlled_shutdown,
            log_dirs: vec![],
        })
    }

    /// One partition with `replicas`, `isr` and `leader`, on brokers 1-3 whose
    /// (fenced, in controlled shutdown) states are given.
    fn image(
        replicas: &[i32],
        isr: &[i32],
        leader: i32,
        states: [(bool, bool); 3],
    ) -> MetadataImage {
        let mut image = MetadataImage::default();
        for (i, (fenced, shutdown)) in states.into_iter().enumerate() {
            image
                .apply(&broker(i as i32 + 1, fenced, shutdown))
                .unwrap();
        }
        image
            .apply(&MetadataRecord::Topic(TopicRecord {
                name: "t".into(),
                topic_id: TOPIC,
            }))
            .unwrap();
        let mut partition = PartitionRecord::new_partition(
            TOPIC,
            0,
            replicas.to_vec(),
            vec![[0; 16]; replicas.len()],
        );
        partition.isr = isr.to_vec();
        partition.leader = leader;
        image.apply(&MetadataRecord::Partition(partition)).unwrap();
        image
    }

    #[test]
    fn a_new_registration_is_contact_and_gets_a_full_session() {
        // A clock of the test's own: no sleeping, no timing flakes.
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let liveness = Liveness::default();
        let session = Duration::from_millis(9000);
        let mut image = image(&[1, 2, 3], &[1, 2, 3], 1, [(false, false); 3]);
        assert!(liveness.silent_at(&image, session, 1, at(0)).is_empty());
        liveness.saw_at(2, 10, at(1000));
        assert!(
            liveness.silent_at(&image, session, 1, at(9000)).is_empty(),
            "a full session is not past yet"
        );
        liveness.saw_at(2, 10, at(9000));
        assert_eq!(liveness.silent_at(&image, session, 1, at(9001)), vec![1, 3]);
        // Broker 3 restarts and registers again (a new epoch) before its first
        // heartbeat: it was fenced at once before.
        let MetadataRecord::RegisterBroker(mut again) = broker(3, false, false) else {
            unreachable!()
        };
        again.broker_epoch = 11;
        image.apply(&MetadataRecord::RegisterBroker(again)).unwrap();
        assert_eq!(liveness.silent_at(&image, session, 1, at(9002)), vec![1]);
        assert_eq!(
            liveness.silent_at(&image, session, 1, at(18_001)),
            vec![1, 2],
            "broker 3's new session runs from its registration"
        );
        assert_eq!(
            liveness.silent_at(&image, session, 1, at(18_003)),
            vec![1, 2, 3]
        );
        // A new term: every broker gets a full session from the new leadership.
        assert!(
            liveness
                .silent_at(&image, session, 2, at(18_004))
                .is_empty()
        );
        assert_eq!(
            liveness.silent_at(&image, session, 2, at(27_005)),
            vec![1, 2, 3]
        );
    }

    fn single_change(records: Vec<MetadataRecord>) -> Option<PartitionChangeRecord> {
        assert!(records.len() <= 1, "{records:?}");
        records.into_iter().next().map(|r| match r {
            MetadataRecord::PartitionChange(change) => change,
            other => panic!("{other:?}"),
        })
    }

    const MIN_ISR_2: fn(&str) -> i32 = |_| 2;

    /// `image`, with eligible leader replicas tracked and the partition's ELR `elr`.
    fn image_with_elr(
        replicas: &[i32],
        isr: &[i32],
        leader: i32,
        elr: &[i32],
        states: [(bool, bool); 3],
    ) -> MetadataImage {
        let mut image = image(replicas, isr, leader, states);
        image
            .apply(&MetadataRecord::FeatureLevel {
                name: crate::elr::FEATURE.into(),
                level: 1,
            })
            .unwrap();
        let mut change = PartitionChangeRecord::new(TOPIC, 0);
        change.eligible_leader_replicas = Some(elr.to_vec());
        image
            .apply(&MetadataRecord::PartitionChange(change))
            .unwrap();
        image
    }

    #[test]
    fn with_no_isr_member_able_to_lead_an_eligible_leader_replica_is_elected() {
        // ISR = [1] (fenced); 2 left the ISR while it was below min ISR (ELR), 3 did not.
        let states = [FENCED, ALIVE, ALIVE];
        let with_elr = image_with_elr(&[1, 2, 3], &[1], -1, &[2], states);
        let change = single_change(elect_leaders(&with_elr, false, &|_| false)).unwrap();
        assert_eq!((change.leader, change.isr.clone()), (2, Some(vec![2])));
        // Without ELR tracking (or with the ELR member fenced too): offline.
        let without = image(&[1, 2, 3], &[1], -1, states);
        assert!(elect_leaders(&without, false, &|_| false).is_empty());
        let fenced = image_with_elr(&[1, 2, 3], &[1], -1, &[2], [FENCED, FENCED, ALIVE]);
        assert!(elect_leaders(&fenced, false, &|_| false).is_empty());
        // The change then moves 1 to the ELR and takes 2 out of it.
        let mut records = vec![MetadataRecord::PartitionChange(change)];
        crate::elr::fill(&with_elr, &mut records, &MIN_ISR_2);
        let change = single_change(records).unwrap();
        assert_eq!(change.eligible_leader_replicas, Some(vec![1]));
    }

    #[test]
    fn after_an_unclean_shutdown_a_broker_leaves_the_elr_and_hands_over_to_it() {
        // Alone in the ISR with an eligible replica alive: the eligible one leads.
        let alone = image_with_elr(&[1, 2, 3], &[1], 1, &[2], [ALIVE, ALIVE, ALIVE]);
        let change = single_change(leave_isrs(&alone, 1, &MIN_ISR_2)).unwrap();
        assert_eq!((change.leader, change.isr.clone()), (2, Some(vec![2])));
        assert_eq!(change.eligible_leader_replicas, Some(vec![]));
        assert_eq!(change.last_known_elr, Some(vec![1]));
        // In the ELR only: it leaves it.
        let eligible = image_with_elr(&[1, 2, 3], &[2], 2, &[1, 3], [ALIVE, ALIVE, ALIVE]);
        let change = single_change(leave_isrs(&eligible, 1, &MIN_ISR_2)).unwrap();
        assert_eq!((change.leader, change.isr.clone()), (-2, None));
        assert_eq!(change.eligible_leader_replicas, Some(vec![3]));
        assert_eq!(change.last_known_elr, Some(vec![1]));
    }

    const ALIVE: (bool, bool) = (false, false);
    const FENCED: (bool, bool) = (true, false);
    const STOPPING: (bool, bool) = (false, true);

    #[test]
    fn after_an_unclean_shutdown_a_broker_leaves_every_isr_it_shares() {
        // It led: the next in-sync replica that can lead takes over.
        let led = single_change(leave_isrs(
            &image(&[1, 2, 3], &[1, 2, 3], 1, [ALIVE, ALIVE, ALIVE]),
            1,
            &MIN_ISR_2,
        ))
        .unwrap();
        assert_eq!((led.leader, led.isr), (2, Some(vec![2, 3])));
        // It followed: only the ISR changes.
        let followed = single_change(leave_isrs(
            &image(&[1, 2, 3], &[1, 2, 3], 2, [ALIVE, ALIVE, ALIVE]),
            1,
            &MIN_ISR_2,
        ))
        .unwrap();
        assert_eq!((followed.leader, followed.isr), (-2, Some(vec![2, 3])));
        // Alone in the ISR, or with nobody else able to lead: nothing changes.
        assert!(
            leave_isrs(
                &image(&[1, 2], &[1], 1, [ALIVE, ALIVE, ALIVE]),
                1,
                &MIN_ISR_2
            )
            .is_empty()
        );
        assert!(
            leave_isrs(
                &image(&[1, 2], &[1, 2], 1, [ALIVE, FENCED, ALIVE]),
                1,
                &MIN_ISR_2
            )
            .is_empty()
        );
        // Not in the ISR: nothing to leave.
        assert!(
            leave_isrs(
                &image(&[1, 2, 3], &[2, 3], 2, [ALIVE, ALIVE, ALIVE]),
                1,
                &MIN_ISR_2
            )
            .is_empty()
        );
    }

    #[test]
    fn a_fenced_leader_hands_over_to_the_live_isr_and_leaves_it() {
        let image = image(&[1, 2, 3], &[1, 2, 3], 1, [FENCED, ALIVE, ALIVE]);
        let change = single_change(elect_leaders(&image, false, &|_| false)).unwrap();
        assert_eq!(change.leader, 2);
        assert_eq!(change.isr, Some(vec![2, 3]));
    }

    #[test]
    fn without_a_live_isr_member_the_partition_goes_offline_unless_unclean_is_allowed() {
        // The ISR is node 3 alone, which is fenced; node 2 is alive but out of sync.
        let image = image(&[3, 2], &[3], 3, [ALIVE, ALIVE, FENCED]);
        let offline = single_change(elect_leaders(&image, false, &|_| false)).unwrap();
        assert_eq!((offline.leader, offline.isr), (-1, None));
        let unclean = single_change(elect_leaders(&image, false, &|_| true)).unwrap();
        assert_eq!(unclean.leader, 2);
        assert_eq!(unclean.isr, Some(vec![2]));
        assert_eq!(
            unclean.leader_recovery_state, 1,
            "RECOVERING after an unclean election"
        );
    }

    #[test]
    fn a_stopping_leader_nobody_can_replace_keeps_leading() {
        let image = image(&[3], &[3], 3, [ALIVE, ALIVE, STOPPING]);
        assert!(elect_leaders(&image, false, &|_| false).is_empty());
        // With an in-sync replica to take over, leadership moves.
        let image = image_with_two();
        let change = single_change(elect_leaders(&image, false, &|_| false)).unwrap();
        assert_eq!(change.leader, 2);
    }

    fn image_with_two() -> MetadataImage {
        image(&[3, 2], &[3, 2], 3, [ALIVE, ALIVE, STOPPING])
    }

    #[test]
    fn preferred_election_returns_leadership_to_the_first_replica_in_sync() {
        let in_sync = image(&[1, 2, 3], &[1, 2, 3], 2, [ALIVE, ALIVE, ALIVE]);
        assert!(elect_leaders(&in_sync, false, &|_| false).is_empty());
        assert_eq!(
            single_change(elect_leaders(&in_sync, true, &|_| false))
                .unwrap()
                .leader,
            1
        );
        let out_of_sync = image(&[1, 2, 3], &[2, 3], 2, [ALIVE, ALIVE, ALIVE]);
        assert!(elect_leaders(&out_of_sync, true, &|_| false).is_empty());
    }

    #[test]
    fn reassignments_add_first_and_remove_once_in_sync() {
        let before = image(&[1, 2], &[1, 2], 1, [ALIVE, ALIVE, ALIVE]);
        let change = reassign(&before, TOPIC, 0, Some(&[3, 2]), true)
            .unwrap()
            .unwrap();
        assert_eq!(change.replicas, Some(vec![3, 2, 1]));
        assert_eq!(change.adding_replicas, Some(vec![3]));
        assert_eq!(change.removing_replicas, Some(vec![1]));
        let mut during = before.clone();
        during
            .apply(&MetadataRecord::PartitionChange(change))
            .unwrap();
        // Not yet: node 3 is not in the ISR.
        assert!(complete_reassignments(&during).is_empty());
        let mut caught_up = PartitionChangeRecord::new(TOPIC, 0);
        caught_up.isr = Some(vec![1, 2, 3]);
        during
            .apply(&MetadataRecord::PartitionChange(caught_up))
            .unwrap();
        let done = match complete_reassignments(&during).pop() {
            Some(MetadataRecord::PartitionChange(change)) => change,
            other => panic!("{other:?}"),
        };
        assert_eq!(done.replicas, Some(vec![3, 2]));
        assert_eq!(done.isr, Some(vec![2, 3]));
        assert_eq!(
            done.leader, 3,
            "the old leader left: the first remaining replica leads"
        );
        // A factor change is refused when not allowed, and cancelling needs a reassignment.
        assert_eq!(
            reassign(&before, TOPIC, 0, Some(&[3]), false)
                .unwrap_err()
                .0,
            errors::INVALID_REPLICATION_FACTOR
        );
        assert_eq!(
            reassign(&before, TOPIC, 0, None, true).unwrap_err().0,
            errors::NO_REASSIGNMENT_IN_PROGRESS
        );
    }
}

/// The controller as replication reaches it: AlterPartition from this node's leaders.
#[derive(Debug)]
pub struct IsrChannel(pub std::sync::Weak<Broker>);

impl crate::replication::AlterPartitionChannel for IsrChannel {
    fn alter_partition(
        &self,
        change: crate::replication::IsrChange,
    ) -> crate::replication::AlterPartitionReply {
        let broker = self.0.clone();
        Box::pin(async move {
            let broker = broker.upgrade().ok_or(errors::NOT_CONTROLLER)?;
            alter_partition(
                &broker,
                change.topic_id,
                change.partition,
                change.leader_epoch,
                change.partition_epoch,
                change.new_isr,
            )
            .await
        })
    }
}
