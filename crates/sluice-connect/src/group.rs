//! Workers sharing connectors and tasks through a Kafka group (protocol type `connect`),
//! with Connect's eager protocol (`default`, version 0) and its binary formats, so an
//! Apache Kafka Connect worker configured with `connect.protocol=eager` and a Sluice
//! worker can form one cluster. The group's leader assigns every connector and task
//! round-robin over the members by member id (Connect's `EagerAssignor`); every
//! rebalance first takes everything away from every member (eager), so nothing runs
//! twice.
//!
//! Metadata: `int16 version=0, string url, int64 config_offset`. Assignment: `int16
//! version=0, int16 error, string leader, string leader_url, int64 config_offset,
//! [string connector, [int32 task]]` (task -1 is the connector itself). Strings are an
//! int16 length and UTF-8, arrays an int32 count (Kafka's `Struct` encoding).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use sluice_client::membership::{GroupMember, MemberConfig, leave_group};
use tokio::sync::watch;

const PROTOCOL_TYPE: &str = "connect";
const EAGER: &str = "default";
/// The connector itself, in an assignment's task list.
pub const CONNECTOR_TASK: i32 = -1;

/// What the group gave this worker.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assignment {
    pub error: i16,
    pub leader: String,
    pub leader_url: String,
    pub config_offset: i64,
    /// connector -> task ids (-1: the connector).
    pub work: BTreeMap<String, BTreeSet<i32>>,
    /// This worker's member id in the generation (not part of the wire format).
    pub member_id: String,
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

pub fn encode_metadata(url: &str, config_offset: i64) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i16(0);
    put_string(&mut out, url);
    out.put_i64(config_offset);
    out.freeze()
}

pub fn decode_metadata(bytes: &[u8]) -> Result<(String, i64), String> {
    let mut buf = bytes;
    if buf.remaining() < 2 {
        return Err("empty metadata".into());
    }
    let _version = buf.get_i16();
    let url = get_string(&mut buf)?;
    if buf.remaining() < 8 {
        return Err("truncated config offset".into());
    }
    Ok((url, buf.get_i64()))
}

pub fn encode_assignment(a: &Assignment) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i16(0);
    out.put_i16(a.error);
    put_string(&mut out, &a.leader);
    put_string(&mut out, &a.leader_url);
    out.put_i64(a.config_offset);
    out.put_i32(a.work.len() as i32);
    for (connector, tasks) in &a.work {
        put_string(&mut out, connector);
        out.put_i32(tasks.len() as i32);
        for t in tasks {
            out.put_i32(*t);
        }
    }
    out.freeze()
}

pub fn decode_assignment(bytes: &[u8]) -> Result<Assignment, String> {
    let mut buf = bytes;
    if buf.remaining() < 4 {
        return Err("truncated assignment header".into());
    }
    let _version = buf.get_i16();
    let error = buf.get_i16();
    let leader = get_string(&mut buf)?;
    let leader_url = get_string(&mut buf)?;
    if buf.remaining() < 8 {
        return Err("truncated config offset".into());
    }
    let config_offset = buf.get_i64();
    let count = get_i32(&mut buf)?;
    let mut work = BTreeMap::new();
    // Each entry takes at least 6 bytes: a count beyond that is malformed, not an
    // allocation to make.
    if count < 0 || count as usize > buf.remaining() / 6 {
        if count <= 0 {
            return Ok(Assignment {
                error,
                leader,
                leader_url,
                config_offset,
                work,
                member_id: String::new(),
            });
        }
        return Err(format!("assignment count {count} exceeds its bytes"));
    }
    for _ in 0..count {
        let connector = get_string(&mut buf)?;
        let n = get_i32(&mut buf)?;
        if n < 0 || n as usize > buf.remaining() / 4 {
            return Err(format!("task count {n} exceeds its bytes"));
        }
        let mut tasks = BTreeSet::new();
        for _ in 0..n {
            tasks.insert(get_i32(&mut buf)?);
        }
        work.insert(connector, tasks);
    }
    Ok(Assignment {
        error,
        leader,
        leader_url,
        config_offset,
        work,
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

pub struct GroupConfig {
    pub bootstrap_servers: Vec<String>,
    pub group_id: String,
    pub url: String,
    pub session_timeout: Duration,
    pub rebalance_timeout: Duration,
    pub heartbeat_interval: Duration,
}

/// What the membership loop needs from the worker.
pub trait Members: Send + Sync + 'static {
    /// The config topic offset this worker has read to.
    fn config_offset(&self) -> i64;
    /// Every connector and its task count (the work to assign).
    fn work(&self) -> BTreeMap<String, u32>;
}

/// The member's loop: join, sync, heartbeat; rejoin on a rebalance, and (as the leader)
/// when the work changed since it assigned; leave on stop. `assignment` is None while
/// no generation's assignment holds (everything stopped, as eager revocation requires).
pub async fn run(
    config: GroupConfig,
    members: std::sync::Arc<dyn Members>,
    assignment: watch::Sender<Option<Assignment>>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut member_id = String::new();
    loop {
        if *stopped.borrow() {
            return;
        }
        assignment.send_replace(None);
        let outcome = tokio::select! {
            outcome = one_generation(&config, members.as_ref(), &mut member_id, &assignment) => outcome,
            _ = stopped.changed() => Ok(()),
        };
        if *stopped.borrow() {
            assignment.send_replace(None);
            leave(&config, &member_id).await;
            return;
        }
        if let Err(e) = outcome {
            // A rebalance is the group working; anything else (a session timeout the
            // broker refuses, no coordinator) is said, and retried more slowly.
            if e.contains("REBALANCE_IN_PROGRESS") || e.contains("rebalancing") {
                tracing::debug!("connect group {}: {e}; rejoining", config.group_id);
                tokio::time::sleep(Duration::from_millis(100)).await;
            } else {
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
    member_id: &mut String,
    assignment: &watch::Sender<Option<Assignment>>,
) -> Result<(), String> {
    let mut member = GroupMember::connect(member_config(config), member_id.clone()).await?;
    let outcome = generation_in(config, members, &mut member, member_id, assignment).await;
    *member_id = member.member_id().to_string();
    outcome
}

async fn generation_in(
    config: &GroupConfig,
    members: &dyn Members,
    member: &mut GroupMember,
    member_id: &mut String,
    assignment: &watch::Sender<Option<Assignment>>,
) -> Result<(), String> {
    let metadata = encode_metadata(&config.url, members.config_offset());
    let generation = member.join(&[(EAGER, metadata)]).await;
    // Kept at once: a stop while this generation runs leaves with it.
    *member_id = member.member_id().to_string();
    let generation = generation?;
    let leading = generation.leading();
    let work = members.work();
    let assignments = if leading {
        let ids: Vec<String> = generation
            .members
            .iter()
            .map(|(id, _)| id.clone())
            .collect();
        let leader_url = generation
            .members
            .iter()
            .find(|(id, _)| *id == generation.leader)
            .and_then(|(_, metadata)| decode_metadata(metadata).ok())
            .map(|(url, _)| url)
            .unwrap_or_default();
        assign(&ids, &work)
            .into_iter()
            .map(|(id, work)| {
                let bytes = encode_assignment(&Assignment {
                    error: 0,
                    leader: generation.leader.clone(),
                    leader_url: leader_url.clone(),
                    config_offset: members.config_offset(),
                    work,
                    member_id: String::new(),
                });
                (id, bytes)
            })
            .collect()
    } else {
        Vec::new()
    };
    let bytes = member.sync(&generation, EAGER, assignments).await?;
    let mut mine = decode_assignment(&bytes)?;
    mine.member_id = generation.member_id.clone();
    tracing::info!(
        group = %config.group_id,
        generation = generation.generation_id,
        leader = leading,
        work = ?mine.work,
        "connect group assignment"
    );
    assignment.send_replace(Some(mine));
    let mut last_heartbeat = tokio::time::Instant::now();
    loop {
        // The leader looks for new work often; heartbeats go at their interval.
        tokio::time::sleep(config.heartbeat_interval.min(Duration::from_millis(200))).await;
        if leading && members.work() != work {
            // New or removed connectors or tasks: a new generation assigns them.
            return Err("the work changed; rebalancing".into());
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

    #[test]
    fn formats_round_trip_and_bad_bytes_are_errors() {
        let meta = encode_metadata("http://127.0.0.1:8083/", 42);
        assert_eq!(
            decode_metadata(&meta).unwrap(),
            ("http://127.0.0.1:8083/".to_string(), 42)
        );
        let a = Assignment {
            error: 0,
            leader: "w-1".into(),
            leader_url: "http://a/".into(),
            config_offset: 7,
            work: [("src".to_string(), [-1, 0, 2].into_iter().collect())]
                .into_iter()
                .collect(),
            member_id: String::new(),
        };
        let bytes = encode_assignment(&a);
        assert_eq!(decode_assignment(&bytes).unwrap(), a);
        for cut in 0..bytes.len() {
            assert!(decode_assignment(&bytes[..cut]).is_err(), "{cut}");
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
}
