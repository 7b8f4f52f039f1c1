//! Sinks: where a stream's records leave the job.
//!
//! `Sink` is the interface (Flink's `Sink`/`SinkWriter` reduced to a writer without
//! checkpoint hooks for now); `CollectSink` keeps everything in memory, records and the
//! watermarks between them, so tests can assert not only what a job produced but when
//! (which window fired before which watermark). The Kafka sink with delivery guarantees
//! comes with the client (issue 8) and checkpoints.

use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;

use crate::error::StreamError;
use crate::operator::{Operator, Output, unbox};

/// Receives a stream's records.
pub trait Sink<T>: 'static {
    fn write(&mut self, value: T, timestamp: Option<i64>) -> Result<(), StreamError>;
    /// The sink's input watermark advanced.
    fn on_watermark(&mut self, _watermark: i64) -> Result<(), StreamError> {
        Ok(())
    }
    /// The input ended.
    fn finish(&mut self) -> Result<(), StreamError> {
        Ok(())
    }
}

/// What a `CollectSink` saw, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkEvent<T> {
    Record { value: T, timestamp: Option<i64> },
    Watermark(i64),
}

/// Collects records and watermarks in memory. Clones share the collection: keep one,
/// give another to `sink_to`.
#[derive(Debug)]
pub struct CollectSink<T> {
    events: Rc<RefCell<Vec<SinkEvent<T>>>>,
}

impl<T> Clone for CollectSink<T> {
    fn clone(&self) -> Self {
        Self {
            events: self.events.clone(),
        }
    }
}

impl<T> Default for CollectSink<T> {
    fn default() -> Self {
        Self {
            events: Rc::default(),
        }
    }
}

impl<T: Clone> CollectSink<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records and watermarks in arrival order.
    pub fn events(&self) -> Vec<SinkEvent<T>> {
        self.events.borrow().clone()
    }

    /// Records only, in arrival order.
    pub fn records(&self) -> Vec<T> {
        self.events
            .borrow()
            .iter()
            .filter_map(|event| match event {
                SinkEvent::Record { value, .. } => Some(value.clone()),
                SinkEvent::Watermark(_) => None,
            })
            .collect()
    }

    /// Watermarks only, in arrival order.
    pub fn watermarks(&self) -> Vec<i64> {
        self.events
            .borrow()
            .iter()
            .filter_map(|event| match event {
                SinkEvent::Watermark(watermark) => Some(*watermark),
                SinkEvent::Record { .. } => None,
            })
            .collect()
    }
}

impl<T: 'static> Sink<T> for CollectSink<T> {
    fn write(&mut self, value: T, timestamp: Option<i64>) -> Result<(), StreamError> {
        self.events
            .borrow_mut()
            .push(SinkEvent::Record { value, timestamp });
        Ok(())
    }

    fn on_watermark(&mut self, watermark: i64) -> Result<(), StreamError> {
        self.events
            .borrow_mut()
            .push(SinkEvent::Watermark(watermark));
        Ok(())
    }
}

pub(crate) struct SinkOperator<T, S> {
    pub(crate) sink: S,
    pub(crate) _type: PhantomData<fn(T)>,
}

impl<T: 'static, S: Sink<T>> Operator for SinkOperator<T, S> {
    fn process_record(
        &mut self,
        _input: usize,
        value: Box<dyn Any>,
        timestamp: Option<i64>,
        _out: &mut Output,
    ) -> Result<(), StreamError> {
        self.sink.write(unbox::<T>(value), timestamp)
    }

    fn advance_watermark(&mut self, watermark: i64, _out: &mut Output) -> Result<(), StreamError> {
        self.sink.on_watermark(watermark)
    }

    fn finish(&mut self, _out: &mut Output) -> Result<(), StreamError> {
        self.sink.finish()
    }
}
