//! Workers sharing connectors and tasks through a Kafka group (protocol type `connect`),
//! with Connect's protocols and binary formats, so Apache Kafka Connect workers and
//! Sluice workers can form one cluster:
//!
//! - `compatible` (version 1, KIP-415, the default here): incremental cooperative
//!   rebalancing. Each member reports what it runs; the leader keeps everything where
//!   it runs, hands out new work to the least loaded, revokes only what must move (a
//!   deleted connector, a duplicate, load a new worker should take), and holds back the
//!   work of a worker that left for `scheduled.rebalance.max.delay.ms` in case it comes
//!   back (a new worker joining meanwhile gets it at once). A member stops what was
//!   revoked before it rejoins, so nothing runs twice; nothing else stops.
//! - `default` (version 0, `connect.protocol=eager`): every rebalance takes everything
//!   away from every member, then assigns round-robin (Connect's `EagerAssignor`).
//!
//! Apache's `sessioned` (version 2) adds request signing with a session key in the
//! config topic, which Sluice does not implement: a Sluice worker offers `compatible`
//! and `default`, so a group with Apache workers (which also offer those) agrees on
//! `compatible`.
//!
//! Metadata: `int16 version, string url, int64 config_offset` and, from version 1,
//! `nullable bytes allocation` (the member's whole current assignment, serialized as
//! below). Assignment: `int16 version, int16 error, string leader, string leader_url,
//! int64 config_offset, [string connector, [int32 task]]` (task -1 is the connector
//! itself) and, from version 1, `[string connector, [int32 task]] revoked, int32
//! delay`; in version 1 the first list is what this round adds. Strings are an int16
//! length and UTF-8, arrays an int32 count, -1 for null (Kafka's `Struct` encoding).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use sluice_client::membership::{GroupMember, MemberConfig, leave_group};
use tokio::sync::watch;

const PROTOCOL_TYPE: &str = "connect";
const EAGER: &str = "default";
const COMPATIBLE: &str = "compatible";
/// The connector itself, in an assignment's task list.
pub const CONNECTOR_TASK: i32 = -1;

/// What the group gave this worker.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assignment {
    pub error: i16,
    pub leader: String,
    pub leader_url: String,
    pub config_offset: i64,
    /// connector -> task ids (-1: the connector). On the wire in version 1, what this
    /// round adds; as the worker holds it, everything it runs.
    pub work: Work,
    /// What this member must stop (version 1).
    pub revoked: Work,
    /// Milliseconds after which to rejoin, when the leader holds lost work back
    /// (version 1).
    pub delay: i32,
    /// This worker's member id in the generation (not part of the wire format).
    pub member_id: String,
}

/// connector -> task ids (-1: the connector).
pub type Work = BTreeMap<String, BTreeSet<i32>>;

/// `connect.protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `eager`: Connect's protocol `default`, version 0.
    Eager,
    /// `compatible` (and `sessioned`, which Sluice serves as `compatible`): version 1.
    Compatible,
}

impl Protocol {
    pub fn from_config(value: &str) -> Option<Protocol> {
        match value.trim().to_ascii_lowercase().as_str() {
            "eager" => Some(Protocol::Eager),
            "compatible" | "sessioned" => Some(Protocol::Compatible),
            _ => None,
        }
    }
}

impl Assignment {
    /// Whether this worker is the group's leader.
    pub fn leading(&self) -> bool {
        !self.member_id.is_empty() && self.member_id == self.leader
    }
}

impl Assignment {
    pub fn runs_connector(&self, connector: &str) -> bool {
        self.work
            .get(connector)
            .is_some_and(|t| t.contains(&CONNECTOR_TASK))
    }

    pub fn runs_task(&self, connector: &str, task: u32) -> bool {
        self.work
            .get(connector)
            .is_some_and(|t| t.contains(&(task as i32)))
    }
}

fn put_string(out: &mut BytesMut, s: &str) {
    out.put_i16(s.len() as i16);
    out.put_slice(s.as_bytes());
}

fn get_string(buf: &mut &[u8]) -> Result<String, String> {
    if buf.remaining() < 2 {
        return Err("truncated string length".into());
    }
    let len = buf.get_i16();
    if len < 0 {
        return Ok(String::new());
    }
    let len = len as usize;
    if buf.remaining() < len {
        return Err("truncated string".into());
    }
    let s = String::from_utf8(buf[..len].to_vec()).map_err(|e| e.to_string())?;
    buf.advance(len);
    Ok(s)
}

fn get_i32(buf: &mut &[u8]) -> Result<i32, String> {
    if buf.remaining() < 4 {
        return Err("truncated int32".into());
    }
    Ok(buf.get_i32())
}

/// A member's metadata: version 0 (eager) or 1 with its current work as allocation.
pub fn encode_metadata(url: &str, config_offset: i64, allocation: Option<&Work>) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i16(if allocation.is_some() { 1 } else { 0 });
    put_string(&mut out, url);
    out.put_i64(config_offset);
    if let Some(work) = allocation {
        if work.is_empty() {
            out.put_i32(-1);
        } else {
            let bytes = encode_assignment(
                &Assignment {
                    config_offset,
                    work: work.clone(),
                    ..Assignment::default()
                },
                1,
            );
            out.put_i32(bytes.len() as i32);
            out.put_slice(&bytes);
        }
    }
    out.freeze()
}

/// What a member's metadata says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerState {
    pub url: String,
    pub config_offset: i64,
    /// Its current work (version 1; empty for version 0 or a null allocation).
    pub allocation: Work,
}

pub fn decode_metadata(bytes: &[u8]) -> Result<WorkerState, String> {
    let mut buf = bytes;
    if buf.remaining() < 2 {
        return Err("empty metadata".into());
    }
    let version = buf.get_i16();
    if version < 0 {
        return Err(format!("Unsupported subscription version: {version}"));
    }
    let url = get_string(&mut buf)?;
    if buf.remaining() < 8 {
        return Err("truncated config offset".into());
    }
    let config_offset = buf.get_i64();
    let mut allocation = Work::new();
    // Version 1 tolerates a missing allocation (Kafka's TOLERATE_MISSING_FIELDS).
    if version >= 1 && buf.remaining() >= 4 {
        let len = buf.get_i32();
        if len >= 0 {
            let len = len as usize;
            if buf.remaining() < len {
                return Err("truncated allocation".into());
            }
            allocation = decode_assignment(&buf[..len])?.work;
        }
    }
    Ok(WorkerState {
        url,
        config_offset,
        allocation,
    })
}

fn put_work(out: &mut BytesMut, work: &Work) {
    out.put_i32(work.len() as i32);
    for (connector, tasks) in work {
        put_string(out, connector);
        out.put_i32(tasks.len() as i32);
        for t in tasks {
            out.put_i32(*t);
        }
    }
}

fn get_work(buf: &mut &[u8]) -> Result<Work, String> {
    let count = get_i32(buf)?;
    let mut work = Work::new();
    if count <= 0 {
        // -1: a null array.
        return Ok(work);
    }
    // Each entry takes at least 6 bytes: a count beyond that is malformed, not an
    // allocation to make.
    if count as usize > buf.remaining() / 6 {
        return Err(format!("assignment count {count} exceeds its bytes"));
    }
    for _ in 0..count {
        let connector = get_string(buf)?;
        let n = get_i32(buf)?;
        if n < 0 || n as usize > buf.remaining() / 4 {
            return Err(format!("task count {n} exceeds its bytes"));
        }
        let mut tasks = BTreeSet::new();
        for _ in 0..n {
            tasks.insert(get_i32(buf)?);
        }
        work.insert(connector, tasks);
    }
    Ok(work)
}

pub fn encode_assignment(a: &Assignment, version: i16) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i16(version);
    out.put_i16(a.error);
    put_string(&mut out, &a.leader);
    put_string(&mut out, &a.leader_url);
    out.put_i64(a.config_offset);
    put_work(&mut out, &a.work);
    if version >= 1 {
        put_work(&mut out, &a.revoked);
        out.put_i32(a.delay);
    }
    out.freeze()
}

pub fn decode_assignment(bytes: &[u8]) -> Result<Assignment, String> {
    let mut buf = bytes;
    if buf.remaining() < 4 {
        return Err("truncated assignment header".into());
    }
    let version = buf.get_i16();
    let error = buf.get_i16();
    let leader = get_string(&mut buf)?;
    let leader_url = get_string(&mut buf)?;
    if buf.remaining() < 8 {
        return Err("truncated config offset".into());
    }
    let config_offset = buf.get_i64();
    let work = get_work(&mut buf)?;
    let (mut revoked, mut delay) = (Work::new(), 0);
    // Version 1's fields may be missing (Kafka's TOLERATE_MISSING_FIELDS_WITH_DEFAULTS).
    if version >= 1 && buf.remaining() >= 4 {
        revoked = get_work(&mut buf)?;
        if buf.remaining() >= 4 {
            delay = buf.get_i32();
        }
    }
    Ok(Assignment {
        error,
        leader,
        leader_url,
        config_offset,
        work,
        revoked,
        delay,
        member_id: String::new(),
    })
}

/// Connect's eager assignment: connectors, then tasks, round-robin over the members in
/// member id order.
pub fn assign(
    members: &[String],
    work: &BTreeMap<String, u32>,
) -> BTreeMap<String, BTreeMap<String, BTreeSet<i32>>> {
    let mut out: BTreeMap<String, BTreeMap<String, BTreeSet<i32>>> = members
        .iter()
        .map(|m| (m.clone(), BTreeMap::new()))
        .collect();
    let mut sorted = members.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return out;
    }
    let mut next = 0usize;
    for connector in work.keys() {
        let member = &sorted[next % sorted.len()];
        next += 1;
        out.get_mut(member)
            .expect("every member has an entry")
            .entry(connector.clone())
            .or_default()
            .insert(CONNECTOR_TASK);
    }
    for (connector, tasks) in work {
        for t in 0..*tasks {
            let member = &sorted[next % sorted.len()];
            next += 1;
            out.get_mut(member)
                .expect("every member has an entry")
                .entry(connector.clone())
                .or_default()
                .insert(t as i32);
        }
    }
    out
}

type Item = (String, i32);

fn items(work: &Work) -> impl Iterator<Item = Item> + '_ {
    work.iter()
        .flat_map(|(c, tasks)| tasks.iter().map(move |t| (c.clone(), *t)))
}

fn work_of(items: &BTreeSet<Item>) -> Work {
    let mut work = Work::new();
    for (c, t) in items {
        work.entry(c.clone()).or_default().insert(*t);
    }
    work
}

/// What the leader of incremental rounds remembers between them.
#[derive(Debug, Default)]
pub struct LeaderState {
    /// Everything assigned after the last round (what members run or were given).
    previous: Option<BTreeSet<Item>>,
    /// Members of the last round.
    previous_members: BTreeSet<String>,
    /// Work of a departed worker held back, and until when.
    lost: BTreeSet<Item>,
    deadline: Option<tokio::time::Instant>,
}

/// One incremental round's answer for each member.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// member -> (added, revoked).
    pub members: BTreeMap<String, (Work, Work)>,
    /// When lost work is held back: how long until the round that reassigns it.
    pub delay: Duration,
}

/// The leader's incremental cooperative assignment (KIP-415), from what each member
/// reports it runs and the configured work.
pub fn assign_incremental(
    reported: &BTreeMap<String, Work>,
    configured: &BTreeMap<String, u32>,
    state: &mut LeaderState,
    now: tokio::time::Instant,
    max_delay: Duration,
) -> Round {
    let mut all: BTreeSet<Item> = BTreeSet::new();
    for (c, n) in configured {
        all.insert((c.clone(), CONNECTOR_TASK));
        all.extend((0..*n as i32).map(|t| (c.clone(), t)));
    }
    // Keep what runs where it runs; revoke what is gone or runs twice.
    let mut kept: BTreeMap<String, BTreeSet<Item>> = BTreeMap::new();
    let mut revoked: BTreeMap<String, BTreeSet<Item>> = BTreeMap::new();
    let mut owned: BTreeSet<Item> = BTreeSet::new();
    for (member, work) in reported {
        kept.entry(member.clone()).or_default();
        for item in items(work) {
            if all.contains(&item) && owned.insert(item.clone()) {
                kept.get_mut(member).expect("entry").insert(item);
            } else {
                revoked.entry(member.clone()).or_default().insert(item);
            }
        }
    }
    // Work a departed member ran: held back until the deadline, unless a new member
    // can take it now.
    let mut lost: BTreeSet<Item> = state
        .previous
        .iter()
        .flatten()
        .chain(state.lost.iter())
        .filter(|i| all.contains(*i) && !owned.contains(*i))
        .cloned()
        .collect();
    let newcomers: Vec<&String> = reported
        .iter()
        .filter(|(m, w)| w.is_empty() && !state.previous_members.contains(*m))
        .map(|(m, _)| m)
        .collect();
    let mut delay = Duration::ZERO;
    if lost.is_empty() || max_delay.is_zero() || !newcomers.is_empty() {
        state.deadline = None;
        state.lost.clear();
    } else {
        let deadline = *state.deadline.get_or_insert(now + max_delay);
        if now >= deadline {
            state.deadline = None;
            state.lost.clear();
        } else {
            delay = deadline - now;
            state.lost = std::mem::take(&mut lost);
        }
    }
    // New (and no longer held) work to the least loaded, connectors and tasks counted
    // apart as Connect balances them; newcomers first among equals.
    let held = &state.lost;
    let mut added: BTreeMap<String, BTreeSet<Item>> = BTreeMap::new();
    let load = |kept: &BTreeMap<String, BTreeSet<Item>>,
                added: &BTreeMap<String, BTreeSet<Item>>,
                m: &String,
                connector: bool| {
        kept[m]
            .iter()
            .chain(added.get(m).into_iter().flatten())
            .filter(|(_, t)| (*t == CONNECTOR_TASK) == connector)
            .count()
    };
    let unassigned: Vec<Item> = all
        .iter()
        .filter(|i| !owned.contains(*i) && !held.contains(*i))
        .cloned()
        .collect();
    for connector_pass in [true, false] {
        for item in unassigned
            .iter()
            .filter(|(_, t)| (*t == CONNECTOR_TASK) == connector_pass)
        {
            let Some(member) = kept
                .keys()
                .min_by_key(|m| {
                    (
                        load(&kept, &added, m, connector_pass),
                        !newcomers.contains(m),
                        (*m).clone(),
                    )
                })
                .cloned()
            else {
                break;
            };
            added.entry(member).or_default().insert(item.clone());
        }
    }
    // Balance: a member with more than one above the least loaded gives up what it
    // kept (it rejoins once stopped, and the next round places it with the least
    // loaded). Not while work is held back, nor while other revocations are under way:
    // the members are not settled.
    if held.is_empty() && revoked.is_empty() {
        for connector_pass in [true, false] {
            // What the least loaded will get next round, counted now.
            let mut promised: BTreeMap<String, usize> = BTreeMap::new();
            loop {
                let loads: Vec<(usize, String)> = kept
                    .keys()
                    .map(|m| {
                        let l = load(&kept, &added, m, connector_pass)
                            + promised.get(m).copied().unwrap_or(0);
                        (l, m.clone())
                    })
                    .collect();
                let (Some(max), Some(min)) = (loads.iter().max(), loads.iter().min()) else {
                    break;
                };
                if max.0 <= min.0 + 1 {
                    break;
                }
                let from = max.1.clone();
                let Some(item) = kept[&from]
                    .iter()
                    .rev()
                    .find(|(_, t)| (*t == CONNECTOR_TASK) == connector_pass)
                    .cloned()
                else {
                    break;
                };
                kept.get_mut(&from).expect("entry").remove(&item);
                revoked.entry(from).or_default().insert(item);
                *promised.entry(min.1.clone()).or_default() += 1;
            }
        }
    }
    let mut next: BTreeSet<Item> = BTreeSet::new();
    let mut round = Round {
        members: BTreeMap::new(),
        delay,
    };
    for member in reported.keys() {
        let add = added.remove(member).unwrap_or_default();
        let revoke = revoked.remove(member).unwrap_or_default();
        next.extend(kept[member].iter().cloned());
        next.extend(add.iter().cloned());
        round
            .members
            .insert(member.clone(), (work_of(&add), work_of(&revoke)));
    }
    state.previous = Some(next);
    state.previous_members = reported.keys().cloned().collect();
    round
}

pub struct GroupConfig {
    pub bootstrap_servers: Vec<String>,
    pub group_id: String,
    pub url: String,
    pub session_timeout: Duration,
    pub rebalance_timeout: Duration,
    pub heartbeat_interval: Duration,
    pub protocol: Protocol,
    /// `scheduled.rebalance.max.delay.ms`.
    pub scheduled_rebalance_max_delay: Duration,
}

/// What the membership loop needs from the worker.
pub trait Members: Send + Sync + 'static {
    /// The config topic offset this worker has read to.
    fn config_offset(&self) -> i64;
    /// Every connector and its task count (the work to assign).
    fn work(&self) -> BTreeMap<String, u32>;
    /// The tasks running or still stopping here, as (connector, task).
    fn active(&self) -> BTreeSet<(String, i32)>;
}

/// How long a member waits for revoked tasks to stop before it rejoins anyway
/// (Connect's `task.shutdown.graceful.timeout.ms` default).
const REVOCATION_TIMEOUT: Duration = Duration::from_secs(5);

/// What a member carries from one generation to the next.
#[derive(Default)]
struct MemberState {
    member_id: String,
    /// What it runs (incremental protocol).
    current: Work,
    leader: LeaderState,
}

/// The member's loop: join, sync, heartbeat; rejoin on a rebalance, and (as the leader)
/// when the work changed since it assigned; leave on stop. `assignment` is None while
/// no assignment holds: before the first, and, under the eager protocol, during every
/// rebalance (everything stopped, as eager revocation requires).
pub async fn run(
    config: GroupConfig,
    members: std::sync::Arc<dyn Members>,
    assignment: watch::Sender<Option<Assignment>>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut state = MemberState::default();
    loop {
        if *stopped.borrow() {
            return;
        }
        if config.protocol == Protocol::Eager || state.current.is_empty() {
            assignment.send_replace(None);
        }
        let outcome = tokio::select! {
            outcome = one_generation(&config, members.as_ref(), &mut state, &assignment) => outcome,
            _ = stopped.changed() => Ok(()),
        };
        if *stopped.borrow() {
            assignment.send_replace(None);
            leave(&config, &state.member_id).await;
            return;
        }
        if let Err(e) = outcome {
            // A rebalance is the group working; anything else (a session timeout the
            // broker refuses, no coordinator) is said, and retried more slowly.
            if e.contains("REBALANCE_IN_PROGRESS") || e.contains("rebalancing") {
                tracing::debug!("connect group {}: {e}; rejoining", config.group_id);
                tokio::time::sleep(Duration::from_millis(100)).await;
            } else {
                // Out of the group (its session expired, or fenced): what it ran may
                // be given to others already, so it stops everything, as Connect does.
                if e.contains("UNKNOWN_MEMBER_ID") || e.contains("ILLEGAL_GENERATION") {
                    state.current.clear();
                    assignment.send_replace(None);
                }
                tracing::warn!("connect group {}: {e}; rejoining", config.group_id);
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

fn member_config(config: &GroupConfig) -> MemberConfig {
    MemberConfig {
        bootstrap_servers: config.bootstrap_servers.clone(),
        client_id: "sluice-connect-group".to_string(),
        group_id: config.group_id.clone(),
        protocol_type: PROTOCOL_TYPE.to_string(),
        session_timeout: config.session_timeout,
        rebalance_timeout: config.rebalance_timeout,
    }
}

async fn one_generation(
    config: &GroupConfig,
    members: &dyn Members,
    state: &mut MemberState,
    assignment: &watch::Sender<Option<Assignment>>,
) -> Result<(), String> {
    let mut member = GroupMember::connect(member_config(config), state.member_id.clone()).await?;
    let outcome = generation_in(config, members, &mut member, state, assignment).await;
    state.member_id = member.member_id().to_string();
    outcome
}

async fn generation_in(
    config: &GroupConfig,
    members: &dyn Members,
    member: &mut GroupMember,
    state: &mut MemberState,
    assignment: &watch::Sender<Option<Assignment>>,
) -> Result<(), String> {
    let offset = members.config_offset();
    let eager = (EAGER, encode_metadata(&config.url, offset, None));
    let protocols = match config.protocol {
        Protocol::Eager => vec![eager],
        Protocol::Compatible => vec![
            (
                COMPATIBLE,
                encode_metadata(&config.url, offset, Some(&state.current)),
            ),
            eager,
        ],
    };
    let generation = member.join(&protocols).await;
    // Kept at once: a stop while this generation runs leaves with it.
    state.member_id = member.member_id().to_string();
    let generation = generation?;
    let incremental = match generation.protocol.as_str() {
        COMPATIBLE => true,
        EAGER => false,
        // JoinGroup before v7 does not name it: the first offered in common.
        _ => config.protocol == Protocol::Compatible,
    };
    let protocol = if incremental { COMPATIBLE } else { EAGER };
    let leading = generation.leading();
    let work = members.work();
    let assignments = if leading {
        let states: BTreeMap<String, WorkerState> = generation
            .members
            .iter()
            .filter_map(|(id, metadata)| {
                decode_metadata(metadata)
                    .map_err(|e| tracing::warn!(member = %id, "connect group metadata: {e}"))
                    .ok()
                    .map(|s| (id.clone(), s))
            })
            .collect();
        let leader_url = states
            .get(&generation.leader)
            .map(|s| s.url.clone())
            .unwrap_or_default();
        let header = Assignment {
            error: 0,
            leader: generation.leader.clone(),
            leader_url,
            config_offset: offset,
            ..Assignment::default()
        };
        if incremental {
            let reported: BTreeMap<String, Work> = states
                .iter()
                .map(|(id, s)| (id.clone(), s.allocation.clone()))
                .collect();
            let round = assign_incremental(
                &reported,
                &work,
                &mut state.leader,
                tokio::time::Instant::now(),
                config.scheduled_rebalance_max_delay,
            );
            let delay = round.delay.as_millis().min(i32::MAX as u128) as i32;
            round
                .members
                .into_iter()
                .map(|(id, (work, revoked))| {
                    let a = Assignment {
                        work,
                        revoked,
                        delay,
                        ..header.clone()
                    };
                    (id, encode_assignment(&a, 1))
                })
                .collect()
        } else {
            let ids: Vec<String> = states.keys().cloned().collect();
            assign(&ids, &work)
                .into_iter()
                .map(|(id, work)| {
                    (
                        id,
                        encode_assignment(
                            &Assignment {
                                work,
                                ..header.clone()
                            },
                            0,
                        ),
                    )
                })
                .collect()
        }
    } else {
        // A leader's memory is only good for the rounds it leads in a row.
        state.leader = LeaderState::default();
        Vec::new()
    };
    let bytes = member.sync(&generation, protocol, assignments).await?;
    let received = decode_assignment(&bytes)?;
    let mut mine = received.clone();
    mine.member_id = generation.member_id.clone();
    if incremental {
        for (c, tasks) in &received.revoked {
            if let Some(held) = state.current.get_mut(c) {
                held.retain(|t| !tasks.contains(t));
                if held.is_empty() {
                    state.current.remove(c);
                }
            }
        }
        for (c, tasks) in &received.work {
            state.current.entry(c.clone()).or_default().extend(tasks);
        }
        mine.work = state.current.clone();
    } else {
        state.current = received.work.clone();
    }
    tracing::info!(
        group = %config.group_id,
        generation = generation.generation_id,
        protocol,
        leader = leading,
        added = ?received.work,
        revoked = ?received.revoked,
        delay_ms = received.delay,
        "connect group assignment"
    );
    assignment.send_replace(Some(mine));
    if !received.revoked.is_empty() {
        // What moves stops here before anyone else is given it.
        let revoked: BTreeSet<(String, i32)> = items(&received.revoked).collect();
        let deadline = tokio::time::Instant::now() + REVOCATION_TIMEOUT;
        while members.active().iter().any(|t| revoked.contains(t))
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        return Err("revoked work stopped; rebalancing".into());
    }
    let rejoin_at = (received.delay > 0)
        .then(|| tokio::time::Instant::now() + Duration::from_millis(received.delay as u64));
    let mut last_heartbeat = tokio::time::Instant::now();
    loop {
        // The leader looks for new work often; heartbeats go at their interval.
        tokio::time::sleep(config.heartbeat_interval.min(Duration::from_millis(200))).await;
        if leading && members.work() != work {
            // New or removed connectors or tasks: a new generation assigns them.
            return Err("the work changed; rebalancing".into());
        }
        if rejoin_at.is_some_and(|at| tokio::time::Instant::now() >= at) {
            // The scheduled rebalance: lost work is reassigned now.
            return Err("scheduled rebalance; rebalancing".into());
        }
        if last_heartbeat.elapsed() < config.heartbeat_interval {
            continue;
        }
        last_heartbeat = tokio::time::Instant::now();
        member.heartbeat(&generation).await?;
    }
}

async fn leave(config: &GroupConfig, member_id: &str) {
    leave_group(&member_config(config), member_id).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(pairs: &[(&str, &[i32])]) -> Work {
        pairs
            .iter()
            .map(|(c, t)| (c.to_string(), t.iter().copied().collect()))
            .collect()
    }

    fn configured(pairs: &[(&str, u32)]) -> BTreeMap<String, u32> {
        pairs.iter().map(|(c, n)| (c.to_string(), *n)).collect()
    }

    #[test]
    fn formats_round_trip_and_bad_bytes_are_errors() {
        let meta = encode_metadata("http://127.0.0.1:8083/", 42, None);
        assert_eq!(
            decode_metadata(&meta).unwrap(),
            WorkerState {
                url: "http://127.0.0.1:8083/".to_string(),
                config_offset: 42,
                allocation: Work::new(),
            }
        );
        let running = work(&[("src", &[-1, 0])]);
        let meta = encode_metadata("http://a/", 7, Some(&running));
        assert_eq!(decode_metadata(&meta).unwrap().allocation, running);
        for cut in 0..meta.len() - 4 {
            // Cut inside the allocation or before: an error, never a panic. (Cut
            // exactly before the allocation is version 1's tolerated missing field.)
            let _ = decode_metadata(&meta[..cut]);
        }
        let empty = encode_metadata("http://a/", 7, Some(&Work::new()));
        assert_eq!(decode_metadata(&empty).unwrap().allocation, Work::new());

        let a = Assignment {
            error: 0,
            leader: "w-1".into(),
            leader_url: "http://a/".into(),
            config_offset: 7,
            work: work(&[("src", &[-1, 0, 2])]),
            revoked: work(&[("old", &[1])]),
            delay: 2500,
            member_id: String::new(),
        };
        let v1 = encode_assignment(&a, 1);
        assert_eq!(decode_assignment(&v1).unwrap(), a);
        let v0 = encode_assignment(&a, 0);
        let eager = decode_assignment(&v0).unwrap();
        assert_eq!(
            (eager.work, eager.revoked, eager.delay),
            (a.work.clone(), Work::new(), 0)
        );
        for cut in 0..v0.len() {
            assert!(decode_assignment(&v0[..cut]).is_err(), "{cut}");
        }
        for cut in 0..v1.len() {
            let _ = decode_assignment(&v1[..cut]);
        }
        // A count far beyond the bytes is refused, not allocated.
        let mut huge = BytesMut::new();
        huge.put_i16(0);
        huge.put_i16(0);
        put_string(&mut huge, "");
        put_string(&mut huge, "");
        huge.put_i64(0);
        huge.put_i32(i32::MAX);
        assert!(decode_assignment(&huge).is_err());
    }

    #[test]
    fn eager_assignment_spreads_connectors_then_tasks_round_robin() {
        let members = vec!["b".to_string(), "a".to_string()];
        let work: BTreeMap<String, u32> = [("x".to_string(), 2), ("y".to_string(), 1)]
            .into_iter()
            .collect();
        let out = assign(&members, &work);
        // In order: connector x -> a, connector y -> b, x-0 -> a, x-1 -> b, y-0 -> a.
        assert_eq!(out["a"]["x"], [-1, 0].into_iter().collect());
        assert_eq!(out["a"]["y"], [0].into_iter().collect());
        assert_eq!(out["b"]["y"], [-1].into_iter().collect());
        assert_eq!(out["b"]["x"], [1].into_iter().collect());
        let total: usize = out.values().flat_map(|w| w.values()).map(|t| t.len()).sum();
        assert_eq!(total, 5);
    }

    /// Applies a round to the members as they would (minus revoked, plus added).
    fn apply(reported: &mut BTreeMap<String, Work>, round: &Round) {
        for (m, (added, revoked)) in &round.members {
            let w = reported.get_mut(m).unwrap();
            for (c, tasks) in revoked {
                let t = w.get_mut(c).unwrap();
                t.retain(|x| !tasks.contains(x));
                if t.is_empty() {
                    w.remove(c);
                }
            }
            for (c, tasks) in added {
                w.entry(c.clone()).or_default().extend(tasks);
            }
        }
    }

    fn count(w: &Work) -> usize {
        w.values().map(BTreeSet::len).sum()
    }

    #[test]
    fn incremental_rounds_keep_work_in_place_and_hold_a_departed_workers_work() {
        let max = Duration::from_secs(10);
        let t0 = tokio::time::Instant::now();
        let mut state = LeaderState::default();
        let config = configured(&[("x", 3), ("y", 1)]);
        // First round: everything new, spread over a and b (connectors apart).
        let mut reported: BTreeMap<String, Work> = [
            ("a".to_string(), Work::new()),
            ("b".to_string(), Work::new()),
        ]
        .into();
        let round = assign_incremental(&reported, &config, &mut state, t0, max);
        assert_eq!(round.delay, Duration::ZERO);
        apply(&mut reported, &round);
        assert_eq!(count(&reported["a"]), 3);
        assert_eq!(count(&reported["b"]), 3);
        assert!(
            reported["a"]
                .values()
                .flatten()
                .filter(|t| **t == -1)
                .count()
                == 1
        );
        // Nothing changed: nothing moves.
        let round = assign_incremental(&reported, &config, &mut state, t0, max);
        assert!(
            round
                .members
                .values()
                .all(|(a, r)| a.is_empty() && r.is_empty())
        );
        // A new connector goes where the least runs, and nothing else moves.
        let config = configured(&[("x", 3), ("y", 1), ("z", 0)]);
        let round = assign_incremental(&reported, &config, &mut state, t0, max);
        let added: usize = round.members.values().map(|(a, _)| count(a)).sum();
        assert_eq!(added, 1);
        assert!(round.members.values().all(|(_, r)| r.is_empty()));
        apply(&mut reported, &round);

        // b leaves: its work is held back for the delay, not given to a.
        let b_work = reported.remove("b").unwrap();
        let round = assign_incremental(&reported, &config, &mut state, t0, max);
        assert_eq!(round.delay, max);
        assert!(round.members["a"].0.is_empty());
        // Still held at the next round before the deadline, with the time left.
        let t1 = t0 + Duration::from_secs(4);
        let round = assign_incremental(&reported, &config, &mut state, t1, max);
        assert_eq!(round.delay, Duration::from_secs(6));
        assert!(round.members["a"].0.is_empty());
        // At the deadline, a takes it all.
        let t2 = t0 + Duration::from_secs(10);
        let round = assign_incremental(&reported, &config, &mut state, t2, max);
        assert_eq!(round.delay, Duration::ZERO);
        assert_eq!(round.members["a"].0, b_work);
        apply(&mut reported, &round);
        assert_eq!(count(&reported["a"]), 7);
    }

    #[test]
    fn a_worker_joining_while_work_is_held_takes_it_at_once() {
        let max = Duration::from_secs(300);
        let t0 = tokio::time::Instant::now();
        let mut state = LeaderState::default();
        let config = configured(&[("x", 2)]);
        let mut reported: BTreeMap<String, Work> = [
            ("a".to_string(), Work::new()),
            ("b".to_string(), Work::new()),
        ]
        .into();
        let round = assign_incremental(&reported, &config, &mut state, t0, max);
        apply(&mut reported, &round);
        let b_work = reported.remove("b").unwrap();
        let round = assign_incremental(&reported, &config, &mut state, t0, max);
        assert_eq!(round.delay, max);
        // b restarts with a new member id (c): it gets b's work without waiting.
        reported.insert("c".to_string(), Work::new());
        let round = assign_incremental(&reported, &config, &mut state, t0, max);
        assert_eq!(round.delay, Duration::ZERO);
        assert_eq!(round.members["c"].0, b_work);
        assert!(round.members["a"].0.is_empty() && round.members["a"].1.is_empty());
    }

    #[test]
    fn a_new_worker_gets_its_share_by_revocation_then_assignment() {
        let max = Duration::from_secs(300);
        let t0 = tokio::time::Instant::now();
        let mut state = LeaderState::default();
        let config = configured(&[("x", 4), ("y", 2)]);
        let mut reported: BTreeMap<String, Work> = [("a".to_string(), Work::new())].into();
        let round = assign_incremental(&reported, &config, &mut state, t0, max);
        apply(&mut reported, &round);
        assert_eq!(count(&reported["a"]), 8);
        // b joins: a gives up half of its connectors and tasks; nothing is assigned
        // twice meanwhile.
        reported.insert("b".to_string(), Work::new());
        let round = assign_incremental(&reported, &config, &mut state, t0, max);
        let (added, revoked) = &round.members["a"];
        assert!(added.is_empty());
        assert_eq!(count(revoked), 4);
        assert!(round.members["b"].0.is_empty());
        apply(&mut reported, &round);
        // a rejoins once they stopped: b is given them.
        let round = assign_incremental(&reported, &config, &mut state, t0, max);
        assert_eq!(round.members["b"].0, *revoked);
        assert!(round.members["a"].1.is_empty());
        apply(&mut reported, &round);
        assert_eq!(count(&reported["a"]), 4);
        assert_eq!(count(&reported["b"]), 4);
    }

    #[test]
    fn deleted_and_duplicated_work_is_revoked() {
        let t0 = tokio::time::Instant::now();
        let mut state = LeaderState::default();
        let config = configured(&[("x", 1)]);
        let reported: BTreeMap<String, Work> = [
            (
                "a".to_string(),
                work(&[("x", &[-1, 0]), ("gone", &[-1, 0])]),
            ),
            ("b".to_string(), work(&[("x", &[0])])),
        ]
        .into();
        let round = assign_incremental(&reported, &config, &mut state, t0, Duration::ZERO);
        assert_eq!(round.members["a"].1, work(&[("gone", &[-1, 0])]));
        assert_eq!(round.members["b"].1, work(&[("x", &[0])]));
        assert!(round.members.values().all(|(a, _)| a.is_empty()));
    }
}
