//! The job's entry point: `StreamExecutionEnvironment` and the logical job graph.
//!
//! As Flink's environment, it collects the graph the typed API builds (sources, operators,
//! sinks and the edges between their output ports) and runs it on `execute`, which drains
//! the graph (an environment can build and run another job afterwards). Configuration
//! that Flink puts in `ExecutionConfig` lives here: the processing-time clock, periodic
//! watermark emission and `max_parallelism`.
//!
//! Fault tolerance, as Flink configures it: `enable_checkpointing(interval)` /
//! `set_checkpoint_config` (see `checkpoint`), `set_checkpoint_storage` (memory by
//! default), and `set_restart_strategy` (Flink's `fixed-delay` strategy with bounded
//! attempts, or none). `execute` starts from the storage's latest completed checkpoint,
//! if there is one, and every restart again from the latest.
//!
//! State: `set_state_backend` picks the heap (`HashMapStateBackend`, the default) or
//! fjall (`FjallStateBackend`, one scratch directory per keyed operator).
//!
//! Parallelism: `execute` runs one instance of each operator on the calling thread (the
//! deterministic executor); `execute_parallel` runs a job on parallel tasks
//! (`set_parallelism`, `set_channel_capacity`; see `parallel`), taking the job as a
//! function that builds it, because each task builds its own operator instances.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;
use std::time::Duration;

use crate::checkpoint::{CheckpointConfig, CheckpointStorage, InMemoryCheckpointStorage};
use crate::datastream::DataStream;
use crate::error::StreamError;
use crate::executor::{
    self, Checkpointing, JobExecutionResult, Limits, StateSettings, WORK_QUEUE_EVENTS_MAX,
};
use crate::key_group::{DEFAULT_MAX_PARALLELISM, UPPER_BOUND_MAX_PARALLELISM, assign_to_key_group};
use crate::operator::{Operator, Port};
use crate::parallel::{self, CHANNEL_CAPACITY_DEFAULT, PARALLELISM_MAX, TaskSettings};
use crate::source::{CollectionSource, CollectionSourceRunner, SourceRunner};
use crate::state::{StateBackendKind, StateKey};
use crate::time::{Clock, SystemClock};
use crate::watermark::{WatermarkEmission, WatermarkStrategy};

pub(crate) type NodeId = usize;
/// Copies a record of a port's type (fan-out to several consumers).
pub(crate) type Cloner = fn(&dyn Any) -> Box<dyn Any>;

pub(crate) fn clone_boxed<T: Clone + 'static>(value: &dyn Any) -> Box<dyn Any> {
    Box::new(
        value
            .downcast_ref::<T>()
            .expect("a port's cloner is registered for the port's type")
            .clone(),
    )
}

/// (record, max_parallelism) → the record's key group.
pub(crate) type KeyGroupOf = Rc<dyn Fn(&dyn Any, u32) -> u32>;

/// A keyed edge (after `key_by`): how the parallel runtime routes its records to the
/// task owning their key group.
#[derive(Clone)]
pub(crate) struct KeyedEdge {
    /// The record's key group, for `max_parallelism` key groups.
    pub(crate) key_group: KeyGroupOf,
    /// Moves a record of the edge's type into a box that may cross threads.
    pub(crate) into_send: fn(Box<dyn Any>) -> Box<dyn Any + Send>,
}

pub(crate) fn keyed_edge<T: Send + 'static, K: StateKey>(
    key_selector: Rc<dyn Fn(&T) -> K>,
) -> KeyedEdge {
    KeyedEdge {
        key_group: Rc::new(move |record, max_parallelism| {
            let record = record
                .downcast_ref::<T>()
                .expect("a keyed edge carries the type its key selector reads");
            assign_to_key_group(&key_selector(record), max_parallelism)
        }),
        into_send: |record| Box::new(crate::operator::unbox::<T>(record)),
    }
}

pub(crate) enum NodeKind {
    Source(Box<dyn SourceRunner>),
    Operator(Box<dyn Operator>),
}

pub(crate) struct NodeSpec {
    pub(crate) name: String,
    pub(crate) kind: NodeKind,
    pub(crate) inputs: Vec<(NodeId, Port)>,
}

/// The logical job graph, in creation order (which is a topological order: a node's
/// inputs always exist before it).
#[derive(Default)]
pub(crate) struct StreamGraph {
    pub(crate) nodes: Vec<NodeSpec>,
    pub(crate) cloners: HashMap<(NodeId, Port), Cloner>,
    /// The keyed inputs of keyed operators, by (node, input index).
    pub(crate) keyed_edges: HashMap<(NodeId, usize), KeyedEdge>,
    /// Parallelism set on a node (`DataStream::set_parallelism`).
    pub(crate) parallelism: HashMap<NodeId, u32>,
    pub(crate) errors: Vec<String>,
}

impl StreamGraph {
    pub(crate) fn add_node(
        &mut self,
        name: String,
        kind: NodeKind,
        inputs: Vec<(NodeId, Port)>,
    ) -> NodeId {
        debug_assert!(inputs.iter().all(|(input, _)| *input < self.nodes.len()));
        self.nodes.push(NodeSpec { name, kind, inputs });
        self.nodes.len() - 1
    }
}

/// What to do when a job fails (Flink's `RestartStrategies`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestartStrategy {
    /// Fail the job on the first failure (Flink's default without checkpointing).
    #[default]
    NoRestart,
    /// Restart from the latest completed checkpoint up to `attempts` times, waiting
    /// `delay` before each.
    FixedDelay { attempts: u32, delay: Duration },
}

impl RestartStrategy {
    pub fn fixed_delay(attempts: u32, delay: Duration) -> Self {
        Self::FixedDelay { attempts, delay }
    }
}

/// Configuration and graph of a streaming job.
pub struct StreamExecutionEnvironment {
    graph: Rc<RefCell<StreamGraph>>,
    clock: Rc<dyn Clock>,
    max_parallelism: u32,
    watermark_emission: WatermarkEmission,
    work_queue_events_max: usize,
    checkpoint_config: Option<CheckpointConfig>,
    checkpoint_storage: Option<Rc<RefCell<dyn CheckpointStorage>>>,
    restart_strategy: RestartStrategy,
    state_backend: StateBackendKind,
    parallelism: u32,
    channel_capacity: usize,
}

impl fmt::Debug for StreamExecutionEnvironment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamExecutionEnvironment")
            .field("nodes", &self.graph.borrow().nodes.len())
            .field("clock", &self.clock)
            .field("max_parallelism", &self.max_parallelism)
            .field("watermark_emission", &self.watermark_emission)
            .field("checkpoint_config", &self.checkpoint_config)
            .field("restart_strategy", &self.restart_strategy)
            .finish()
    }
}

impl Default for StreamExecutionEnvironment {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamExecutionEnvironment {
    /// Flink's `getExecutionEnvironment()`: system clock, periodic watermarks every 200 ms,
    /// `max_parallelism` 128.
    pub fn new() -> Self {
        Self {
            graph: Rc::default(),
            clock: Rc::new(SystemClock),
            max_parallelism: DEFAULT_MAX_PARALLELISM,
            watermark_emission: WatermarkEmission::default(),
            work_queue_events_max: WORK_QUEUE_EVENTS_MAX,
            checkpoint_config: None,
            checkpoint_storage: None,
            restart_strategy: RestartStrategy::NoRestart,
            state_backend: StateBackendKind::HashMap,
            parallelism: 1,
            channel_capacity: CHANNEL_CAPACITY_DEFAULT,
        }
    }

    /// Flink's `setParallelism`, for `execute_parallel`: the tasks of every keyed stage.
    pub fn set_parallelism(&mut self, parallelism: u32) -> &mut Self {
        self.parallelism = parallelism;
        self
    }

    /// Messages buffered per channel between two tasks of `execute_parallel` before the
    /// producer blocks (Flink's network buffers, counted in records).
    pub fn set_channel_capacity(&mut self, capacity: usize) -> &mut Self {
        self.channel_capacity = capacity;
        self
    }

    /// Drains the graph built so far (a task of `execute_parallel` runs what it built).
    pub(crate) fn take_graph(&self) -> StreamGraph {
        std::mem::take(&mut *self.graph.borrow_mut())
    }

    /// Where keyed operators keep their state (Flink's `setStateBackend`): the heap by
    /// default, or fjall on disk.
    pub fn set_state_backend(&mut self, backend: StateBackendKind) -> &mut Self {
        self.state_backend = backend;
        self
    }

    /// Flink's `enableCheckpointing(interval)`: `CheckpointConfig::new(interval)`.
    pub fn enable_checkpointing(&mut self, interval: Duration) -> &mut Self {
        self.checkpoint_config = Some(CheckpointConfig::new(interval));
        self
    }

    pub fn set_checkpoint_config(&mut self, config: CheckpointConfig) -> &mut Self {
        self.checkpoint_config = Some(config);
        self
    }

    /// Where completed checkpoints go and where `execute` restores from (default: memory,
    /// the newest one kept). Clones of `InMemoryCheckpointStorage` share their contents.
    pub fn set_checkpoint_storage(
        &mut self,
        storage: impl CheckpointStorage + 'static,
    ) -> &mut Self {
        self.checkpoint_storage = Some(Rc::new(RefCell::new(storage)));
        self
    }

    pub fn set_restart_strategy(&mut self, strategy: RestartStrategy) -> &mut Self {
        self.restart_strategy = strategy;
        self
    }

    /// The processing-time clock (tests pass a `ManualClock`).
    pub fn set_processing_time_clock(&mut self, clock: impl Clock + 'static) -> &mut Self {
        self.clock = Rc::new(clock);
        self
    }

    /// Flink's `setAutoWatermarkInterval`; zero disables periodic watermarks.
    pub fn set_auto_watermark_interval(&mut self, interval: Duration) -> &mut Self {
        self.watermark_emission = if interval.is_zero() {
            WatermarkEmission::Disabled
        } else {
            WatermarkEmission::Periodic(interval)
        };
        self
    }

    pub fn set_watermark_emission(&mut self, emission: WatermarkEmission) -> &mut Self {
        self.watermark_emission = emission;
        self
    }

    /// The number of key groups (1..=32768); fixed for the lifetime of a job's state.
    pub fn set_max_parallelism(&mut self, max_parallelism: u32) -> &mut Self {
        self.max_parallelism = max_parallelism;
        self
    }

    /// The most events the executor holds in flight after one source step; more fails
    /// the job with `WorkQueueFull`.
    pub fn set_work_queue_events_max(&mut self, events_max: usize) -> &mut Self {
        self.work_queue_events_max = events_max;
        self
    }

    /// Flink's `fromSource(source, watermarkStrategy, sourceName)`.
    pub fn from_source<T: Clone + 'static>(
        &self,
        source: CollectionSource<T>,
        strategy: WatermarkStrategy<T>,
        name: &str,
    ) -> DataStream<T> {
        let runner = CollectionSourceRunner::new(name.to_string(), source, strategy);
        let node = self.graph.borrow_mut().add_node(
            name.to_string(),
            NodeKind::Source(Box::new(runner)),
            Vec::new(),
        );
        DataStream::new(self.graph.clone(), node, Port::Main)
    }

    /// Adds a source node run by `runner` (a connector's source, e.g. `kafka::KafkaSource`).
    pub(crate) fn add_source_runner<T: Clone + 'static>(
        &self,
        name: &str,
        runner: Box<dyn SourceRunner>,
    ) -> DataStream<T> {
        let node = self.graph.borrow_mut().add_node(
            name.to_string(),
            NodeKind::Source(runner),
            Vec::new(),
        );
        DataStream::new(self.graph.clone(), node, Port::Main)
    }

    /// Flink's `fromCollection`/`fromData`: records without timestamps, no watermarks but
    /// the final one.
    pub fn from_collection<T: Clone + 'static>(&self, records: Vec<T>) -> DataStream<T> {
        self.from_source(
            CollectionSource::of(records),
            WatermarkStrategy::no_watermarks(),
            "Collection Source",
        )
    }

    /// Runs the job `build` describes on parallel tasks (`set_parallelism` tasks per keyed
    /// stage; see the `parallel` module docs), to completion, with this environment's
    /// checkpointing, storage, restart strategy, state backend and watermark settings:
    /// from the latest completed checkpoint in the storage, at any parallelism, and after
    /// a failure again from the latest one, as often as the restart strategy allows.
    ///
    /// `build` adds the job's sources, operators and sinks to the environment it is given;
    /// it is called once to plan the job and once per task on the task's thread, and must
    /// build the same graph every time. Sinks that collect results must share them across
    /// calls (`CollectSink` clones do). The environment's own graph is not used. The
    /// processing-time clock is the system's (a `ManualClock` is rejected).
    pub fn execute_parallel(
        &self,
        job_name: &str,
        build: impl Fn(&StreamExecutionEnvironment) + Sync,
    ) -> Result<JobExecutionResult, StreamError> {
        self.validate()?;
        if self.parallelism == 0
            || self.parallelism > PARALLELISM_MAX
            || self.parallelism > self.max_parallelism
        {
            return Err(StreamError::InvalidConfiguration(format!(
                "parallelism must be in 1..={PARALLELISM_MAX} and at most max_parallelism {}, got {}",
                self.max_parallelism, self.parallelism
            )));
        }
        if self.channel_capacity == 0 {
            return Err(StreamError::InvalidConfiguration(
                "channel_capacity must be positive".into(),
            ));
        }
        if self.clock.as_manual().is_some() {
            return Err(StreamError::InvalidConfiguration(
                "execute_parallel reads the system clock: a ManualClock is not supported".into(),
            ));
        }
        let settings = TaskSettings {
            max_parallelism: self.max_parallelism,
            emission: self.watermark_emission,
            state_backend: self.state_backend.clone(),
            work_queue_events_max: self.work_queue_events_max,
            channel_capacity: self.channel_capacity,
            parallelism: self.parallelism,
        };
        self.run_with_restarts(job_name, |checkpointing| {
            parallel::run(job_name, &build, &settings, checkpointing)
        })
    }

    /// Runs the job to completion (all sources end) and returns its metrics: from the
    /// latest completed checkpoint in the checkpoint storage, if any, and after a failure
    /// again from the latest one, as often as the restart strategy allows.
    pub fn execute(&self, job_name: &str) -> Result<JobExecutionResult, StreamError> {
        let graph = std::mem::take(&mut *self.graph.borrow_mut());
        if let Some(error) = graph.errors.first() {
            return Err(StreamError::InvalidConfiguration(error.clone()));
        }
        self.validate()?;
        // Each attempt runs the graph and gets it back (`open` resets every node).
        let mut graph = Some(graph);
        self.run_with_restarts(job_name, |checkpointing| {
            let (result, returned) = executor::run(
                job_name,
                graph.take().expect("every attempt returns the graph"),
                self.clock.clone(),
                StateSettings {
                    max_parallelism: self.max_parallelism,
                    backend: self.state_backend.clone(),
                },
                self.watermark_emission,
                Limits {
                    work_queue_events_max: self.work_queue_events_max,
                },
                checkpointing,
            );
            graph = Some(returned);
            result
        })
    }

    /// What `execute` and `execute_parallel` both check.
    fn validate(&self) -> Result<(), StreamError> {
        if !(1..=UPPER_BOUND_MAX_PARALLELISM).contains(&self.max_parallelism) {
            return Err(StreamError::InvalidConfiguration(format!(
                "max_parallelism must be in 1..={UPPER_BOUND_MAX_PARALLELISM}, got {}",
                self.max_parallelism
            )));
        }
        if let WatermarkEmission::Periodic(interval) = self.watermark_emission
            && interval.is_zero()
        {
            return Err(StreamError::InvalidConfiguration(
                "a periodic watermark interval must be positive".into(),
            ));
        }
        if let Some(config) = &self.checkpoint_config {
            config.validate()?;
        }
        Ok(())
    }

    /// Runs `attempt` (one run of the job, from the checkpoint it is given) until it
    /// succeeds, again from the latest checkpoint after each failure, as often as the
    /// restart strategy allows; a configuration error is never retried.
    fn run_with_restarts(
        &self,
        job_name: &str,
        mut attempt: impl FnMut(Option<Checkpointing>) -> Result<JobExecutionResult, StreamError>,
    ) -> Result<JobExecutionResult, StreamError> {
        let storage = self.checkpoint_storage.clone().or_else(|| {
            self.checkpoint_config.map(|_| {
                Rc::new(RefCell::new(InMemoryCheckpointStorage::new(1)))
                    as Rc<RefCell<dyn CheckpointStorage>>
            })
        });
        let (attempts_max, delay) = match self.restart_strategy {
            RestartStrategy::NoRestart => (0, Duration::ZERO),
            RestartStrategy::FixedDelay { attempts, delay } => (attempts, delay),
        };
        let mut num_restarts = 0;
        loop {
            let checkpointing = match &storage {
                Some(storage) => Some(Checkpointing {
                    config: self.checkpoint_config,
                    storage: storage.clone(),
                    restore: storage.borrow().latest()?,
                }),
                None => None,
            };
            match attempt(checkpointing) {
                Ok(mut result) => {
                    result.num_restarts = num_restarts;
                    return Ok(result);
                }
                Err(error)
                    if num_restarts < attempts_max
                        && !matches!(error, StreamError::InvalidConfiguration(_)) =>
                {
                    num_restarts += 1;
                    tracing::warn!(
                        job_name,
                        %error,
                        attempt = num_restarts,
                        attempts_max,
                        "job failed; restarting from the latest checkpoint"
                    );
                    std::thread::sleep(delay);
                }
                Err(error) => return Err(error),
            }
        }
    }
}
