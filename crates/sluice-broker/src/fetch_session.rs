//! Incremental fetch sessions (KIP-227).
//!
//! A consumer or follower that sends SessionEpoch 0 opens a session: the broker keeps
//! the partitions of that full fetch under a new session id. Later fetches name the id
//! and the next epoch and carry only the partitions whose fetch position changed (plus
//! `ForgottenTopicsData` to drop some); the response carries only the partitions with
//! something new (records, an error, or a changed high watermark / log start offset).
//! SessionEpoch -1 is a sessionless full fetch (and closes the named session).
//!
//! The cache holds at most `max.incremental.fetch.session.cache.slots` sessions; when
//! full, the least recently used one is evicted (its owner gets FETCH_SESSION_ID_NOT_FOUND
//! on its next incremental fetch and starts over with a full one, as with Kafka).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

use sluice_metadata::Uuid;
use sluice_protocol::ErrorCode;

/// A partition of a session: where the client fetches from, and what it was last told.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPartition {
    pub topic_id: Uuid,
    pub fetch_offset: i64,
    pub partition_max_bytes: i32,
    pub current_leader_epoch: i32,
    /// (high watermark, log start offset) last sent; `None` before the first response.
    pub last_sent: Option<(i64, i64)>,
}

/// (topic name, partition) → state.
pub type SessionPartitions = BTreeMap<(String, i32), SessionPartition>;

#[derive(Debug)]
struct Session {
    epoch: i32,
    partitions: SessionPartitions,
    last_used: u64,
}

/// What a fetch request resolved to.
#[derive(Debug)]
pub enum SessionUse {
    /// No session: a full fetch with a full response (epoch -1, or no slot was free).
    Sessionless,
    /// A full fetch that opened session `id`: a full response.
    New { id: i32 },
    /// An incremental fetch in session `id`: the response holds only changed partitions.
    Incremental { id: i32 },
}

#[derive(Debug)]
pub struct FetchSessions {
    slots: usize,
    sessions: Mutex<(HashMap<i32, Session>, u64)>,
}

impl FetchSessions {
    pub fn new(slots: usize) -> FetchSessions {
        FetchSessions {
            slots,
            sessions: Mutex::new((HashMap::new(), 0)),
        }
    }

    /// Resolves a request's session fields. For a full fetch, `requested` is every
    /// partition; for an incremental one, the changed ones, and `forgotten` those to drop.
    /// Returns the session use and the partitions to fetch, or a top-level error code.
    pub fn begin(
        &self,
        session_id: i32,
        epoch: i32,
        requested: SessionPartitions,
        forgotten: &[(String, i32)],
    ) -> Result<(SessionUse, SessionPartitions), ErrorCode> {
        let mut guard = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let (sessions, clock) = &mut *guard;
        *clock += 1;
        let now = *clock;
        match epoch {
            -1 => {
                if session_id != 0 {
                    sessions.remove(&session_id);
                }
                Ok((SessionUse::Sessionless, requested))
            }
            0 => {
                if session_id != 0 {
                    sessions.remove(&session_id);
                }
                if self.slots == 0 {
                    return Ok((SessionUse::Sessionless, requested));
                }
                if sessions.len() >= self.slots {
                    let oldest = sessions
                        .iter()
                        .min_by_key(|(_, s)| s.last_used)
                        .map(|(id, _)| *id);
                    if let Some(oldest) = oldest {
                        sessions.remove(&oldest);
                    }
                }
                let id = loop {
                    let candidate = rand::random::<i32>() & i32::MAX;
                    if candidate != 0 && !sessions.contains_key(&candidate) {
                        break candidate;
                    }
                };
                sessions.insert(
                    id,
                    Session {
                        epoch: 1,
                        partitions: requested.clone(),
                        last_used: now,
                    },
                );
                Ok((SessionUse::New { id }, requested))
            }
            _ => {
                let session = sessions
                    .get_mut(&session_id)
                    .ok_or(ErrorCode::FETCH_SESSION_ID_NOT_FOUND)?;
                if session.epoch != epoch {
                    return Err(ErrorCode::INVALID_FETCH_SESSION_EPOCH);
                }
                session.epoch = session.epoch.wrapping_add(1).max(1);
                session.last_used = now;
                for key in forgotten {
                    session.partitions.remove(key);
                }
                for (key, partition) in requested {
                    let last_sent = session.partitions.get(&key).and_then(|p| p.last_sent);
                    session.partitions.insert(
                        key,
                        SessionPartition {
                            last_sent,
                            ..partition
                        },
                    );
                }
                Ok((
                    SessionUse::Incremental { id: session_id },
                    session.partitions.clone(),
                ))
            }
        }
    }

    /// Records what a response told the client about a partition of session `id`, and
    /// says whether an incremental response must include it: it must when it has
    /// records or an error, or its high watermark or log start offset changed.
    pub fn note_sent(
        &self,
        id: i32,
        key: &(String, i32),
        high_watermark: i64,
        log_start_offset: i64,
        has_news: bool,
    ) -> bool {
        let mut guard = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(partition) = guard.0.get_mut(&id).and_then(|s| s.partitions.get_mut(key)) else {
            return true;
        };
        let now = (high_watermark, log_start_offset);
        let changed = partition.last_sent != Some(now);
        partition.last_sent = Some(now);
        has_news || changed
    }

    pub fn len(&self) -> usize {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partitions(offsets: &[(&str, i32, i64)]) -> SessionPartitions {
        offsets
            .iter()
            .map(|(t, p, o)| {
                (
                    (t.to_string(), *p),
                    SessionPartition {
                        topic_id: [0; 16],
                        fetch_offset: *o,
                        partition_max_bytes: 1024,
                        current_leader_epoch: -1,
                        last_sent: None,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn a_session_opens_increments_and_forgets() {
        let cache = FetchSessions::new(10);
        let (use_, all) = cache
            .begin(0, 0, partitions(&[("a", 0, 0), ("a", 1, 0)]), &[])
            .unwrap();
        let SessionUse::New { id } = use_ else {
            panic!("a full fetch with epoch 0 opens a session: {use_:?}")
        };
        assert_eq!(all.len(), 2);
        assert!(
            cache.note_sent(id, &("a".into(), 0), 5, 0, false),
            "first response"
        );
        assert!(
            !cache.note_sent(id, &("a".into(), 0), 5, 0, false),
            "nothing new"
        );
        assert!(
            cache.note_sent(id, &("a".into(), 0), 6, 0, false),
            "HW moved"
        );

        let (use_, all) = cache
            .begin(id, 1, partitions(&[("a", 0, 5)]), &[("a".into(), 1)])
            .unwrap();
        assert!(matches!(use_, SessionUse::Incremental { .. }));
        assert_eq!(all.len(), 1, "partition 1 forgotten");
        assert_eq!(all[&("a".to_string(), 0)].fetch_offset, 5);
        assert_eq!(
            all[&("a".to_string(), 0)].last_sent,
            Some((6, 0)),
            "what was sent survives an update of the fetch offset"
        );
        assert_eq!(
            cache
                .begin(id, 1, SessionPartitions::new(), &[])
                .unwrap_err(),
            ErrorCode::INVALID_FETCH_SESSION_EPOCH
        );
        assert_eq!(
            cache
                .begin(id + 1, 1, SessionPartitions::new(), &[])
                .unwrap_err(),
            ErrorCode::FETCH_SESSION_ID_NOT_FOUND
        );
        let (use_, _) = cache.begin(id, -1, partitions(&[]), &[]).unwrap();
        assert!(matches!(use_, SessionUse::Sessionless));
        assert!(cache.is_empty(), "epoch -1 closes the session");
    }

    #[test]
    fn a_full_cache_evicts_the_least_recently_used() {
        let cache = FetchSessions::new(2);
        let open = |cache: &FetchSessions| match cache.begin(0, 0, partitions(&[]), &[]).unwrap().0
        {
            SessionUse::New { id } => id,
            other => panic!("{other:?}"),
        };
        let first = open(&cache);
        let second = open(&cache);
        cache.begin(first, 1, partitions(&[]), &[]).unwrap();
        let _third = open(&cache);
        assert_eq!(cache.len(), 2);
        assert_eq!(
            cache.begin(second, 1, partitions(&[]), &[]).unwrap_err(),
            ErrorCode::FETCH_SESSION_ID_NOT_FOUND,
            "the least recently used session went"
        );
        assert!(cache.begin(first, 2, partitions(&[]), &[]).is_ok());
    }
}
