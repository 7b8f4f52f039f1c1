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
//! Cost: a `BTreeMap` insert and a `HashMap` insert per new timer; the key is cloned twice.
//! Not yet: snapshots per key group (timers are part of a checkpoint in Flink).

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use crate::functions::TimeDomain;
use crate::state::Namespace;

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
}
