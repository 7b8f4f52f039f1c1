//! Sources: in-memory collections and scripts of records, watermarks, idleness and
//! processing-time moves.
//!
//! A `CollectionSource` is a bounded source. Its script lets a test say exactly what an
//! input does and when: records (with or without a timestamp of their own), explicit
//! watermarks, "this input is idle now", and "processing time is now t" (which moves the
//! environment's `ManualClock`). The source applies its `WatermarkStrategy` as Flink's
//! `SourceOperator` does: timestamps from the assigner (or the record's own), the
//! generator's `on_event` after each record, `on_periodic_emit` when the executor says so
//! (unless idle), watermarks only ever increasing, and at the end of the script
//! `MAX_WATERMARK` followed by end of input.
//!
//! Checkpoints: a source's position is the index of its next script step
//! (`snapshot_position`); a restored source skips the steps before it. Watermark generator
//! state is not checkpointed (Flink's is not either): it rebuilds from the replayed records.
//! `open` rewinds the source, so a restarted job replays from the start or the position;
//! a replayed "processing time is now t" step that is already in the past is skipped
//! (the clock never goes back), so a restarted script does not fail on it.
//!
//! The Kafka source (per-partition watermarks, offsets in checkpoints) is
//! `kafka::KafkaSource`, another `SourceRunner`.

use std::any::Any;

use crate::error::StreamError;
use crate::executor::Event;
use crate::time::{Clock, MAX_WATERMARK, MIN_WATERMARK};
use crate::watermark::{WatermarkGenerator, WatermarkStrategy};

/// One step of a source script.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceEvent<T> {
    /// A record; its timestamp comes from the strategy's assigner (or it has none).
    Record(T),
    /// A record that already carries a timestamp (as a Kafka record does); the assigner,
    /// if any, sees it as its second argument.
    RecordWithTimestamp(T, i64),
    /// An explicit watermark (ignored unless above the source's current watermark).
    Watermark(i64),
    /// The source is idle until its next record or watermark.
    Idle,
    /// Processing time becomes this (epoch ms); needs a `ManualClock`.
    ProcessingTime(i64),
    /// A poll that found nothing: no record, no progress, no activity (so
    /// `with_idleness` can notice the silence).
    NoData,
}

/// A bounded in-memory source.
#[derive(Debug, Clone)]
pub struct CollectionSource<T> {
    events: Vec<SourceEvent<T>>,
}

impl<T> CollectionSource<T> {
    /// Records without timestamps of their own.
    pub fn of(records: Vec<T>) -> Self {
        Self {
            events: records.into_iter().map(SourceEvent::Record).collect(),
        }
    }

    /// A full script.
    pub fn from_events(events: Vec<SourceEvent<T>>) -> Self {
        Self { events }
    }
}

/// The executor's view of a source.
pub(crate) trait SourceRunner {
    /// Before `open`: this instance's index among the source's parallel instances and
    /// their number. A source that cannot split its input refuses more than one.
    fn set_subtask(&mut self, _subtask: u32, parallelism: u32) -> Result<(), StreamError> {
        if parallelism > 1 {
            return Err(StreamError::InvalidConfiguration(format!(
                "this source cannot be split over {parallelism} parallel instances \
                 (set_parallelism above 1 needs a splittable source such as KafkaSource)"
            )));
        }
        Ok(())
    }
    /// Starts (or restarts) from the beginning.
    fn open(&mut self, clock: &dyn Clock);
    /// Where the source is: what checkpoint `checkpoint_id` stores.
    fn snapshot_position(&self, checkpoint_id: u64) -> serde_json::Value;
    /// After `open`: continue from a checkpointed position.
    fn restore_position(&mut self, position: &serde_json::Value) -> Result<(), StreamError>;
    /// Runs one script step; returns false once the source has ended.
    fn step(&mut self, clock: &dyn Clock, out: &mut Vec<Event>) -> Result<bool, StreamError>;
    /// A periodic watermark emission (and idleness check) at processing time `now_ms`.
    fn periodic_emit(&mut self, now_ms: i64, out: &mut Vec<Event>);
    /// Checkpoint `checkpoint_id` is durable (a Kafka source commits its offsets to the
    /// group, as Flink's `KafkaSourceReader.notifyCheckpointComplete` does).
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) -> Result<(), StreamError> {
        Ok(())
    }
}

pub(crate) struct CollectionSourceRunner<T> {
    name: String,
    events: Vec<SourceEvent<T>>,
    /// The next script step: the source's position.
    next_event: usize,
    /// The furthest step any attempt reached: steps before it are replays after a restart.
    furthest_event: usize,
    strategy: WatermarkStrategy<T>,
    generator: Option<Box<dyn WatermarkGenerator>>,
    current_watermark: i64,
    idle: bool,
    ended: bool,
    last_activity_ms: i64,
}

impl<T: Clone + 'static> CollectionSourceRunner<T> {
    pub(crate) fn new(
        name: String,
        source: CollectionSource<T>,
        strategy: WatermarkStrategy<T>,
    ) -> Self {
        Self {
            name,
            events: source.events,
            next_event: 0,
            furthest_event: 0,
            strategy,
            generator: None,
            current_watermark: MIN_WATERMARK,
            idle: false,
            ended: false,
            last_activity_ms: 0,
        }
    }

    fn become_active(&mut self, now_ms: i64, out: &mut Vec<Event>) {
        self.last_activity_ms = now_ms;
        if self.idle {
            self.idle = false;
            out.push(Event::Idle(false));
        }
    }

    fn emit_watermark(&mut self, watermark: i64, out: &mut Vec<Event>) {
        if watermark > self.current_watermark {
            self.current_watermark = watermark;
            out.push(Event::Watermark(watermark));
        }
    }

    fn emit_record(
        &mut self,
        value: T,
        own_timestamp: Option<i64>,
        now_ms: i64,
        out: &mut Vec<Event>,
    ) {
        self.become_active(now_ms, out);
        let timestamp = match &self.strategy.timestamp_assigner {
            Some(assigner) => Some(assigner(&value, own_timestamp)),
            None => own_timestamp,
        };
        out.push(Event::Record(Box::new(value) as Box<dyn Any>, timestamp));
        let punctuated = match (self.generator.as_mut(), timestamp) {
            (Some(generator), Some(timestamp)) => generator.on_event(timestamp),
            _ => None,
        };
        if let Some(watermark) = punctuated {
            self.emit_watermark(watermark, out);
        }
    }
}

impl<T: Clone + 'static> SourceRunner for CollectionSourceRunner<T> {
    fn open(&mut self, clock: &dyn Clock) {
        self.generator = self.strategy.generator.as_ref().map(|factory| factory());
        self.last_activity_ms = clock.now_ms();
        self.next_event = 0;
        self.current_watermark = MIN_WATERMARK;
        self.idle = false;
        self.ended = false;
    }

    fn snapshot_position(&self, _checkpoint_id: u64) -> serde_json::Value {
        serde_json::Value::from(self.next_event)
    }

    fn restore_position(&mut self, position: &serde_json::Value) -> Result<(), StreamError> {
        let next_event = position
            .as_u64()
            .and_then(|index| usize::try_from(index).ok())
            .filter(|index| *index <= self.events.len())
            .ok_or_else(|| {
                StreamError::Checkpoint(format!(
                    "source {}: position {position} is not an index into its {} steps",
                    self.name,
                    self.events.len()
                ))
            })?;
        self.next_event = next_event;
        Ok(())
    }

    fn step(&mut self, clock: &dyn Clock, out: &mut Vec<Event>) -> Result<bool, StreamError> {
        if self.ended {
            return Ok(false);
        }
        let now_ms = clock.now_ms();
        let replay = self.next_event < self.furthest_event;
        let event = self.events.get(self.next_event).cloned();
        self.next_event = (self.next_event + 1).min(self.events.len());
        self.furthest_event = self.furthest_event.max(self.next_event);
        match event {
            None => {
                // An idle input's watermark is ignored downstream, so wake up first.
                self.become_active(now_ms, out);
                self.emit_watermark(MAX_WATERMARK, out);
                out.push(Event::End);
                self.ended = true;
                return Ok(false);
            }
            Some(SourceEvent::Record(value)) => self.emit_record(value, None, now_ms, out),
            Some(SourceEvent::RecordWithTimestamp(value, timestamp)) => {
                self.emit_record(value, Some(timestamp), now_ms, out)
            }
            Some(SourceEvent::Watermark(watermark)) => {
                self.become_active(now_ms, out);
                self.emit_watermark(watermark, out);
            }
            Some(SourceEvent::Idle) => {
                if !self.idle {
                    self.idle = true;
                    out.push(Event::Idle(true));
                }
            }
            Some(SourceEvent::NoData) => {}
            Some(SourceEvent::ProcessingTime(to_ms)) => {
                let manual = clock
                    .as_manual()
                    .ok_or_else(|| StreamError::ManualClockRequired {
                        source_name: self.name.clone(),
                    })?;
                // Replayed after a restart, the clock has usually passed this step already:
                // processing time does not go back for a replay.
                if !manual.set_ms(to_ms) && !replay {
                    return Err(StreamError::ProcessingTimeBackwards {
                        source_name: self.name.clone(),
                        from_ms: now_ms,
                        to_ms,
                    });
                }
            }
        }
        Ok(true)
    }

    fn periodic_emit(&mut self, now_ms: i64, out: &mut Vec<Event>) {
        if self.ended || self.idle {
            return;
        }
        if let Some(timeout_ms) = self.strategy.idle_timeout_ms
            && now_ms.saturating_sub(self.last_activity_ms) >= timeout_ms
        {
            self.idle = true;
            out.push(Event::Idle(true));
            return;
        }
        let periodic = self
            .generator
            .as_mut()
            .and_then(|generator| generator.on_periodic_emit());
        if let Some(watermark) = periodic {
            self.emit_watermark(watermark, out);
        }
    }
}
