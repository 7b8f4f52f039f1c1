//! Timers of a keyed operator: event-time and processing-time queues.
//!
//! Follows Flink's `InternalTimerService`: a timer is (key, namespace, timestamp) and is
//! de-duplicated on that triple; timers fire in timestamp order (ties in registration
//! order) when the watermark (event time) or the clock (processing time) reaches their
//! timestamp, i.e. `timestamp <= watermark`. Firing pops one timer at a time, so a timer
//! registered while firing that is already due fires in the same advance, as in Flink.
//! Timers are fired by the operator between records, never during one: the executor is
//! single-threaded and an operator handles one record, watermark or clock advance at a time.
//!
//! Timers are part of a checkpoint, as in Flink: `snapshot_into` files each timer under
//! its key's key group, `restore` takes the timers of a key-group range back in their
//! original firing order (timestamp, then registration sequence).
//!
//! Cost: a `BTreeMap` insert and a `HashMap` insert per new timer; the key is cloned twice.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use std::ops::Range;

use crate::checkpoint::{KeyedStateSnapshot, TimerSnapshot};
use crate::error::StateError;
use crate::functions::TimeDomain;
use crate::key_group::assign_to_key_group;
use crate::state::{Namespace, StateKey, decode_key, encode_key};

/// The name timers go under in serialization errors.
const TIMERS: &str = "timers";

#[derive(Debug)]
struct TimerQueue<K> {
    by_time: BTreeMap<(i64, u64), (K, Namespace)>,
    registered: HashMap<(K, Namespace, i64), u64>,
    next_sequence: u64,
}

impl<K> Default for TimerQueue<K> {
    fn default() -> Self {
        Self {
            by_time: BTreeMap::new(),
            registered: HashMap::new(),
            next_sequence: 0,
        }
    }
}

impl<K: Clone + Eq + Hash> TimerQueue<K> {
    fn register(&mut self, key: &K, namespace: Namespace, time: i64) {
        let entry = (key.clone(), namespace, time);
        if self.registered.contains_key(&entry) {
            return;
        }
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        self.registered.insert(entry, sequence);
        self.by_time
            .insert((time, sequence), (key.clone(), namespace));
    }

    fn delete(&mut self, key: &K, namespace: Namespace, time: i64) {
        if let Some(sequence) = self.registered.remove(&(key.clone(), namespace, time)) {
            self.by_time.remove(&(time, sequence));
        }
    }

    fn pop_due(&mut self, up_to: i64) -> Option<(i64, K, Namespace)> {
        let (&(time, _), _) = self.by_time.first_key_value()?;
        if time > up_to {
            return None;
        }
        let ((time, _), (key, namespace)) = self.by_time.pop_first()?;
        self.registered.remove(&(key.clone(), namespace, time));
        Some((time, key, namespace))
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        debug_assert_eq!(self.by_time.len(), self.registered.len());
        self.by_time.len()
    }
}

/// Event- and processing-time timers of one keyed operator instance.
#[derive(Debug)]
pub(crate) struct InternalTimerService<K> {
    event_time: TimerQueue<K>,
    processing_time: TimerQueue<K>,
}

impl<K> Default for InternalTimerService<K> {
    fn default() -> Self {
        Self {
            event_time: TimerQueue::default(),
            processing_time: TimerQueue::default(),
        }
    }
}

impl<K: Clone + Eq + Hash> InternalTimerService<K> {
    fn queue(&mut self, domain: TimeDomain) -> &mut TimerQueue<K> {
        match domain {
            TimeDomain::EventTime => &mut self.event_time,
            TimeDomain::ProcessingTime => &mut self.processing_time,
        }
    }

    pub(crate) fn register(
        &mut self,
        domain: TimeDomain,
        key: &K,
        namespace: Namespace,
        time: i64,
    ) {
        self.queue(domain).register(key, namespace, time);
    }

    pub(crate) fn delete(&mut self, domain: TimeDomain, key: &K, namespace: Namespace, time: i64) {
        self.queue(domain).delete(key, namespace, time);
    }

    /// The next timer with `timestamp <= up_to`, removed from the queue.
    pub(crate) fn pop_due(
        &mut self,
        domain: TimeDomain,
        up_to: i64,
    ) -> Option<(i64, K, Namespace)> {
        self.queue(domain).pop_due(up_to)
    }

    /// Adds every timer to `snapshot`, under its key's key group.
    pub(crate) fn snapshot_into(
        &self,
        max_parallelism: u32,
        snapshot: &mut KeyedStateSnapshot,
    ) -> Result<(), StateError>
    where
        K: StateKey,
    {
        for (domain, queue) in [
            (TimeDomain::EventTime, &self.event_time),
            (TimeDomain::ProcessingTime, &self.processing_time),
        ] {
            for (&(timestamp, sequence), (key, namespace)) in &queue.by_time {
                snapshot
                    .key_groups
                    .entry(assign_to_key_group(key, max_parallelism))
                    .or_default()
                    .timers
                    .push(TimerSnapshot {
                        domain,
                        key: encode_key(TIMERS, key)?,
                        namespace: *namespace,
                        timestamp,
                        sequence,
                    });
            }
        }
        Ok(())
    }

    /// Registers the timers of the key groups in `key_groups`, in their original order.
    pub(crate) fn restore(
        &mut self,
        snapshot: &KeyedStateSnapshot,
        key_groups: Range<u32>,
        max_parallelism: u32,
    ) -> Result<(), StateError>
    where
        K: StateKey,
    {
        let mut timers = Vec::new();
        for (&key_group, group) in snapshot.key_groups.range(key_groups) {
            for timer in &group.timers {
                let key: K = decode_key(TIMERS, &timer.key)?;
                let actual = assign_to_key_group(&key, max_parallelism);
                if actual != key_group {
                    return Err(StateError::KeyGroupMismatch {
                        state: TIMERS.to_string(),
                        expected: key_group,
                        actual,
                    });
                }
                timers.push((
                    timer.timestamp,
                    timer.sequence,
                    timer.domain,
                    key,
                    timer.namespace,
                ));
            }
        }
        timers.sort_by_key(|(timestamp, sequence, ..)| (*timestamp, *sequence));
        for (timestamp, _, domain, key, namespace) in timers {
            self.register(domain, &key, namespace, timestamp);
        }
        Ok(())
    }

    #[cfg(test)]
    pub(crate) fn len(&self, domain: TimeDomain) -> usize {
        match domain {
            TimeDomain::EventTime => self.event_time.len(),
            TimeDomain::ProcessingTime => self.processing_time.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_fire_in_order_deduplicated_and_deletable() {
        let mut timers = InternalTimerService::<&str>::default();
        let event = TimeDomain::EventTime;
        for (key, time) in [
            ("a", 30),
            ("b", 10),
            ("a", 10),
            ("a", 30),
            ("b", 20),
            ("c", 20),
        ] {
            timers.register(event, &key, Namespace::Void, time);
        }
        timers.delete(event, &"c", Namespace::Void, 20);
        assert_eq!(timers.len(event), 4, "(a, 30) once, (c, 20) deleted");
        assert_eq!(timers.len(TimeDomain::ProcessingTime), 0);
        let mut fired = Vec::new();
        while let Some((time, key, _)) = timers.pop_due(event, 25) {
            fired.push((time, key));
        }
        assert_eq!(fired, vec![(10, "b"), (10, "a"), (20, "b")]);
        assert_eq!(
            timers
                .pop_due(event, i64::MAX)
                .map(|(time, key, _)| (time, key)),
            Some((30, "a"))
        );
        assert!(timers.pop_due(event, i64::MAX).is_none());
    }

    #[test]
    fn a_snapshot_restores_timers_in_order_by_key_group() {
        let max_parallelism = 128;
        let mut timers = InternalTimerService::<String>::default();
        // "EU" is in key group 94, "US" in 91 (pinned in `key_group`).
        for (domain, key, time) in [
            (TimeDomain::EventTime, "EU", 20),
            (TimeDomain::EventTime, "US", 10),
            (TimeDomain::EventTime, "EU", 10),
            (TimeDomain::ProcessingTime, "US", 5),
        ] {
            timers.register(domain, &key.to_string(), Namespace::Void, time);
        }
        let mut snapshot = KeyedStateSnapshot::default();
        timers
            .snapshot_into(max_parallelism, &mut snapshot)
            .unwrap();
        assert_eq!(
            snapshot.key_groups.keys().copied().collect::<Vec<_>>(),
            vec![91, 94]
        );

        let drain = |timers: &mut InternalTimerService<String>, domain| {
            let mut fired = Vec::new();
            while let Some((time, key, _)) = timers.pop_due(domain, i64::MAX) {
                fired.push((time, key));
            }
            fired
        };
        let mut all = InternalTimerService::<String>::default();
        all.restore(&snapshot, 0..max_parallelism, max_parallelism)
            .unwrap();
        assert_eq!(
            drain(&mut all, TimeDomain::EventTime),
            vec![(10, "US".into()), (10, "EU".into()), (20, "EU".into())]
        );
        assert_eq!(
            drain(&mut all, TimeDomain::ProcessingTime),
            vec![(5, "US".into())]
        );

        let mut only_eu = InternalTimerService::<String>::default();
        only_eu
            .restore(&snapshot, 92..128, max_parallelism)
            .unwrap();
        assert_eq!(
            drain(&mut only_eu, TimeDomain::EventTime),
            vec![(10, "EU".into()), (20, "EU".into())]
        );
        assert!(drain(&mut only_eu, TimeDomain::ProcessingTime).is_empty());
    }
}
