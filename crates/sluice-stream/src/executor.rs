//! The deterministic single-threaded executor.
//!
//! Runs a job graph to completion on the calling thread:
//! 1. every operator is opened (keyed operators create their state store and call the
//!    user function's `open`);
//! 2. sources take turns, one script step each in graph order (round robin), so the
//!    interleaving of several inputs is fixed and tests can reason about it;
//! 3. everything a step emits is delivered through the graph before the next step
//!    (a FIFO work queue, so each edge sees records and watermarks in emission order);
//! 4. after each step every operator gets `advance_processing_time(now)` (in graph order)
//!    to fire due processing-time timers, and sources emit their periodic watermarks when
//!    `WatermarkEmission` says so;
//! 5. a node's input watermarks and idleness go through a `StatusWatermarkValve`; when the
//!    combined watermark advances the operator fires its due timers, then the watermark is
//!    forwarded to all its outputs (side outputs included); a node ends when all its inputs
//!    have ended.
//!
//! Nothing runs concurrently, so a timer never fires while a record is being processed.
//!
//! Checkpoints (see `checkpoint`): before each round of source steps the coordinator may
//! trigger one; every source then records its position and emits a `Barrier` event; a node
//! that has the barrier on all its inputs snapshots and forwards it, a node without
//! consumers (a sink) acknowledges, and the last acknowledgement completes the checkpoint:
//! stored, then `notify_checkpoint_complete` to every operator in graph order. A job
//! restored from a checkpoint opens every node, then restores it before the first step.
//!
//! One task of a parallel job (`run_stage`, driven by `parallel`): the same runtime over
//! the nodes of one stage only. Edges to nodes of other stages go through an
//! `ExchangeOut` (records by key group, the rest to every consuming task; a full channel
//! blocks), keyed inputs from other stages come from an `ExchangeIn` (the input gate:
//! valve, barrier alignment, end); the loop takes the coordinator's messages (trigger a
//! checkpoint at the sources, a checkpoint completed, finish), steps its sources, polls its
//! gates and fires processing-time timers, and sleeps on a doorbell when nothing moved. A
//! task reports its nodes' snapshots once the barrier passed all of them; its sinks'
//! `finish` (their commit) waits until every task drained, so a failing job commits
//! nothing at its end.
//!
//! Bounds: the work queue holds what one source step produces, transitively, and at most
//! `work_queue_events_max` events (default `WORK_QUEUE_EVENTS_MAX`); a step that produces more (a `flat_map` exploding a
//! record, a watermark firing a million windows at once) fails the job with
//! `WorkQueueFull` instead of growing without limit. Between the tasks of a parallel job
//! the channels are bounded and block instead.

use std::any::Any;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;

use crate::checkpoint::{
    CheckpointConfig, CheckpointCoordinator, CheckpointStorage, CompletedCheckpoint, NodeSnapshot,
};
use crate::environment::{Cloner, NodeId, NodeKind, NodeSpec, StreamGraph};
use crate::error::StreamError;
use crate::key_group::key_group_range_for_operator;
use crate::operator::{Emitted, OperatorSetup, Output, Port};
use crate::parallel::{Control, Report, StageTask, peer_gone};
use crate::state::StateBackendKind;
use crate::time::Clock;
use crate::valve::{StatusWatermarkValve, ValveOutput};
use crate::watermark::WatermarkEmission;
use std::sync::mpsc::{RecvTimeoutError, TryRecvError};

/// The default for the most events in flight between two source steps
/// (`StreamExecutionEnvironment::set_work_queue_events_max`).
pub const WORK_QUEUE_EVENTS_MAX: usize = 1 << 22;
/// Messages a parallel task takes from one keyed input before turning to the others.
const EXCHANGE_POLL_BUDGET: usize = 256;
/// How long an idle parallel task waits for input before checking its timers again.
const STAGE_IDLE_WAIT: std::time::Duration = std::time::Duration::from_millis(5);

/// What flows along an edge.
pub(crate) enum Event {
    Record(Box<dyn Any>, Option<i64>),
    Watermark(i64),
    /// `true`: the sender became idle; `false`: active again.
    Idle(bool),
    /// Checkpoint barrier: everything before it belongs to the checkpoint's state.
    Barrier(u64),
    End,
}

/// Counters of one operator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorMetrics {
    pub name: String,
    pub num_records_in: u64,
    pub num_records_out: u64,
    /// Flink's `numLateRecordsDropped` of a window operator without a late-data tag.
    pub num_late_records_dropped: u64,
}

/// The outcome of a finished job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobExecutionResult {
    pub job_name: String,
    /// One entry per node, in graph order (sources included).
    pub operators: Vec<OperatorMetrics>,
    /// Checkpoints completed by the successful attempt.
    pub num_completed_checkpoints: u64,
    /// The checkpoint the successful attempt started from, if any.
    pub restored_checkpoint_id: Option<u64>,
    /// Restarts before the successful attempt (filled in by the environment).
    pub num_restarts: u32,
}

impl JobExecutionResult {
    /// Late records dropped by all window operators.
    pub fn num_late_records_dropped(&self) -> u64 {
        self.operators
            .iter()
            .map(|operator| operator.num_late_records_dropped)
            .sum()
    }
}

struct Runtime {
    job_name: String,
    max_parallelism: u32,
    clock: Rc<dyn Clock>,
    nodes: Vec<RuntimeNode>,
    /// Consumers of each (node, port), as (node, input index).
    consumers: HashMap<(NodeId, Port), Vec<(NodeId, usize)>>,
    /// `consumers` of each node's main port, and its cloner: the per-record path looks
    /// them up by index rather than by hashing (node, port).
    main_consumers: Vec<Vec<(NodeId, usize)>>,
    main_cloners: Vec<Option<Cloner>>,
    /// An emptied `Output` whose buffers the next operator call reuses (one allocation
    /// saved per record per operator).
    spare_output: Output,
    /// Consumers of any port of a node: where its watermarks and barriers go.
    all_consumers: Vec<Vec<(NodeId, usize)>>,
    cloners: HashMap<(NodeId, Port), Cloner>,
    queue: VecDeque<(NodeId, usize, Event)>,
    work_queue_events_max: usize,
    checkpointing: Option<CheckpointRuntime>,
    /// Triggered checkpoints collecting their snapshots.
    pending: BTreeMap<u64, PendingCheckpoint>,
    num_completed_checkpoints: u64,
    state_backend: StateBackendKind,
    /// Parallel execution: the one task of one stage this runtime is (`parallel`).
    stage: Option<StageTask>,
    /// Parallel execution: sinks whose input ended, finished when the job is.
    deferred_finish: Vec<NodeId>,
}

struct RuntimeNode {
    kind: NodeKind,
    inputs: Vec<(NodeId, Port)>,
    valve: StatusWatermarkValve,
    inputs_ended: Vec<bool>,
    source_finished: bool,
    next_periodic_emit_ms: i64,
    metrics: OperatorMetrics,
}

struct CheckpointRuntime {
    coordinator: CheckpointCoordinator,
    storage: Rc<RefCell<dyn CheckpointStorage>>,
}

/// A triggered checkpoint collecting its snapshots.
struct PendingCheckpoint {
    timestamp_ms: i64,
    nodes: Vec<Option<NodeSnapshot>>,
    /// Barriers received per node (aligned when equal to its number of inputs).
    barriers_received: Vec<usize>,
    acknowledgements_missing: usize,
}

/// What the runtime does not use of a graph but hands back with it.
type GraphExtras = (
    HashMap<(NodeId, usize), crate::environment::KeyedEdge>,
    HashMap<NodeId, u32>,
);

/// How keyed state is partitioned and kept.
pub(crate) struct StateSettings {
    pub(crate) max_parallelism: u32,
    pub(crate) backend: StateBackendKind,
}

/// The executor's bounds.
pub(crate) struct Limits {
    pub(crate) work_queue_events_max: usize,
}

/// Checkpointing of one run: when, where, and what to start from.
pub(crate) struct Checkpointing {
    pub(crate) config: Option<CheckpointConfig>,
    pub(crate) storage: Rc<RefCell<dyn CheckpointStorage>>,
    pub(crate) restore: Option<CompletedCheckpoint>,
}

/// Runs the job once. The graph comes back whatever the outcome, so a restart strategy
/// can run it again (`open` resets every node).
pub(crate) fn run(
    job_name: &str,
    graph: StreamGraph,
    clock: Rc<dyn Clock>,
    state: StateSettings,
    emission: WatermarkEmission,
    limits: Limits,
    checkpointing: Option<Checkpointing>,
) -> (Result<JobExecutionResult, StreamError>, StreamGraph) {
    let (mut runtime, (keyed_edges, parallelism)) =
        Runtime::new(job_name, graph, clock, state, limits, None);
    let result = runtime.run(emission, checkpointing);
    let operators = runtime.operator_metrics();
    let num_completed_checkpoints = runtime.num_completed_checkpoints;
    let graph = StreamGraph {
        nodes: runtime
            .nodes
            .into_iter()
            .map(|node| NodeSpec {
                name: node.metrics.name,
                kind: node.kind,
                inputs: node.inputs,
            })
            .collect(),
        cloners: runtime.cloners,
        keyed_edges,
        parallelism,
        errors: Vec::new(),
    };
    let result = result.map(|restored_checkpoint_id| JobExecutionResult {
        job_name: job_name.to_string(),
        operators,
        num_completed_checkpoints,
        restored_checkpoint_id,
        num_restarts: 0,
    });
    (result, graph)
}

/// Runs one task of a parallel job (`parallel`): the nodes of its stage, restored from
/// `restore` (its key-group range), until its inputs end; reports to the coordinator.
/// The task reads the system clock (`execute_parallel` rejects a manual one).
pub(crate) fn run_stage(
    job_name: &str,
    graph: StreamGraph,
    state: StateSettings,
    emission: WatermarkEmission,
    limits: Limits,
    stage: StageTask,
    restore: Option<&CompletedCheckpoint>,
) {
    let reports = stage.reports.clone();
    let task = stage.task;
    let clock: Rc<dyn Clock> = Rc::new(crate::time::SystemClock);
    let (mut runtime, _) = Runtime::new(job_name, graph, clock, state, limits, Some(stage));
    let result = runtime
        .open_nodes()
        .and_then(|()| match restore {
            Some(checkpoint) => runtime.restore(checkpoint),
            None => Ok(()),
        })
        .and_then(|()| runtime.run_stage_loop(emission));
    let report = match result {
        Ok(()) => {
            let member = &runtime.stage.as_ref().expect("a stage task").member;
            let metrics = runtime
                .operator_metrics()
                .into_iter()
                .enumerate()
                .filter(|(node, _)| member[*node])
                .collect();
            Report::Finished { task, metrics }
        }
        Err(error) => Report::Failed { task, error },
    };
    // The coordinator gone: the job is over anyway.
    let _ = reports.send(report);
}

impl Runtime {
    fn new(
        job_name: &str,
        graph: StreamGraph,
        clock: Rc<dyn Clock>,
        state: StateSettings,
        limits: Limits,
        stage: Option<StageTask>,
    ) -> (Runtime, GraphExtras) {
        let StateSettings {
            max_parallelism,
            backend: state_backend,
        } = state;
        let StreamGraph {
            nodes,
            cloners,
            keyed_edges,
            parallelism,
            ..
        } = graph;
        let mut consumers: HashMap<(NodeId, Port), Vec<(NodeId, usize)>> = HashMap::new();
        let mut all_consumers = vec![Vec::new(); nodes.len()];
        for (node, spec) in nodes.iter().enumerate() {
            for (input, (producer, port)) in spec.inputs.iter().enumerate() {
                consumers
                    .entry((*producer, port.clone()))
                    .or_default()
                    .push((node, input));
                all_consumers[*producer].push((node, input));
            }
        }
        let runtime_nodes = nodes
            .into_iter()
            .map(|spec| {
                let is_source = matches!(spec.kind, NodeKind::Source(_));
                RuntimeNode {
                    kind: spec.kind,
                    // A source has no inputs; give it a one-input valve it never uses.
                    valve: StatusWatermarkValve::new(spec.inputs.len().max(1)),
                    inputs_ended: vec![false; spec.inputs.len()],
                    inputs: spec.inputs,
                    source_finished: !is_source,
                    next_periodic_emit_ms: clock.now_ms(),
                    metrics: OperatorMetrics {
                        name: spec.name,
                        ..OperatorMetrics::default()
                    },
                }
            })
            .collect();
        let main_consumers = (0..all_consumers.len())
            .map(|node| {
                consumers
                    .get(&(node, Port::Main))
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        let main_cloners = (0..all_consumers.len())
            .map(|node| cloners.get(&(node, Port::Main)).copied())
            .collect();
        let runtime = Runtime {
            job_name: job_name.to_string(),
            max_parallelism,
            clock: clock.clone(),
            nodes: runtime_nodes,
            consumers,
            main_consumers,
            main_cloners,
            spare_output: Output::default(),
            all_consumers,
            cloners,
            queue: VecDeque::new(),
            work_queue_events_max: limits.work_queue_events_max,
            checkpointing: None,
            pending: BTreeMap::new(),
            num_completed_checkpoints: 0,
            state_backend,
            stage,
            deferred_finish: Vec::new(),
        };
        (runtime, (keyed_edges, parallelism))
    }

    fn operator_metrics(&self) -> Vec<OperatorMetrics> {
        self.nodes
            .iter()
            .map(|node| {
                let mut metrics = node.metrics.clone();
                if let NodeKind::Operator(operator) = &node.kind {
                    metrics.num_late_records_dropped = operator.num_late_records_dropped();
                }
                metrics
            })
            .collect()
    }

    /// Whether `node` runs here (always, unless this is one task of a parallel job).
    fn is_member(&self, node: NodeId) -> bool {
        self.stage.as_ref().is_none_or(|stage| stage.member[node])
    }

    fn open_nodes(&mut self) -> Result<(), StreamError> {
        let subtask = self.stage.as_ref().map(|stage| stage.subtask);
        let (parallelism, subtask_index) = self
            .stage
            .as_ref()
            .map_or((1, 0), |stage| (stage.parallelism, stage.subtask));
        let key_groups =
            key_group_range_for_operator(self.max_parallelism, parallelism, subtask_index);
        for index in 0..self.nodes.len() {
            if !self.is_member(index) {
                continue;
            }
            let node = &mut self.nodes[index];
            match &mut node.kind {
                NodeKind::Source(source) => {
                    source.set_subtask(subtask_index, parallelism)?;
                    source.open(self.clock.as_ref())
                }
                NodeKind::Operator(operator) => operator.open(&OperatorSetup {
                    clock: self.clock.clone(),
                    max_parallelism: self.max_parallelism,
                    state_backend: self.state_backend.clone(),
                    // Unique within the job (and task); stable across restarts.
                    operator_id: match subtask {
                        None => format!("{index}-{}", node.metrics.name),
                        Some(subtask) => format!("{index}-{}-{subtask}", node.metrics.name),
                    },
                    key_groups: key_groups.clone(),
                    subtask: subtask_index,
                    parallelism,
                })?,
            }
        }
        Ok(())
    }

    /// Opens, restores and runs; returns the id of the checkpoint restored from.
    fn run(
        &mut self,
        emission: WatermarkEmission,
        checkpointing: Option<Checkpointing>,
    ) -> Result<Option<u64>, StreamError> {
        self.open_nodes()?;
        let mut restored_checkpoint_id = None;
        if let Some(checkpointing) = checkpointing {
            let mut next_checkpoint_id = 1;
            if let Some(checkpoint) = &checkpointing.restore {
                self.restore(checkpoint)?;
                // As Flink's "Restoring job … from Checkpoint N".
                tracing::info!(
                    checkpoint_id = checkpoint.checkpoint_id,
                    "restored the job from checkpoint {}",
                    checkpoint.checkpoint_id
                );
                restored_checkpoint_id = Some(checkpoint.checkpoint_id);
                next_checkpoint_id = checkpoint.checkpoint_id + 1;
            }
            if let Some(config) = checkpointing.config {
                self.checkpointing = Some(CheckpointRuntime {
                    coordinator: CheckpointCoordinator::new(
                        config,
                        next_checkpoint_id,
                        self.clock.now_ms(),
                    ),
                    storage: checkpointing.storage,
                });
            }
        }
        let clock = self.clock.clone();
        self.run_sources(clock.as_ref(), emission)?;
        Ok(restored_checkpoint_id)
    }

    /// Puts every node back where `checkpoint` found it. Nodes are matched by position
    /// and name (Flink matches by operator uid); this instance owns every key group
    /// (parallelism 1: `key_group_range_for_operator(max, 1, 0)`).
    fn restore(&mut self, checkpoint: &CompletedCheckpoint) -> Result<(), StreamError> {
        if checkpoint.max_parallelism != self.max_parallelism {
            return Err(StreamError::Checkpoint(format!(
                "checkpoint {} has max_parallelism {}, the job {}",
                checkpoint.checkpoint_id, checkpoint.max_parallelism, self.max_parallelism
            )));
        }
        let names: Vec<&str> = self
            .nodes
            .iter()
            .map(|node| node.metrics.name.as_str())
            .collect();
        let checkpoint_names: Vec<&str> = checkpoint
            .nodes
            .iter()
            .map(|node| node.name.as_str())
            .collect();
        if names != checkpoint_names {
            return Err(StreamError::Checkpoint(format!(
                "checkpoint {} is of another job graph: {checkpoint_names:?}, job {names:?}",
                checkpoint.checkpoint_id
            )));
        }
        let (parallelism, subtask) = self
            .stage
            .as_ref()
            .map_or((1, 0), |stage| (stage.parallelism, stage.subtask));
        let key_groups = key_group_range_for_operator(self.max_parallelism, parallelism, subtask);
        let member: Vec<bool> = (0..self.nodes.len())
            .map(|node| self.is_member(node))
            .collect();
        for ((node, snapshot), member) in self.nodes.iter_mut().zip(&checkpoint.nodes).zip(member) {
            if !member {
                continue;
            }
            match (
                &mut node.kind,
                &snapshot.source_position,
                &snapshot.keyed_state,
            ) {
                (NodeKind::Source(source), Some(position), _) => {
                    source.restore_position(position)?;
                }
                (NodeKind::Operator(operator), _, Some(state)) => {
                    operator.restore_state(state, key_groups.clone())?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Triggers a checkpoint if the coordinator says one is due: positions of the
    /// sources, then a barrier from each.
    fn maybe_trigger_checkpoint(
        &mut self,
        sources: &[NodeId],
        now_ms: i64,
    ) -> Result<(), StreamError> {
        let Some(checkpointing) = self.checkpointing.as_mut() else {
            return Ok(());
        };
        for expired in checkpointing.coordinator.expire(now_ms) {
            tracing::warn!(
                checkpoint_id = expired,
                "checkpoint expired before completing"
            );
            self.pending.remove(&expired);
        }
        if sources
            .iter()
            .any(|source| self.nodes[*source].source_finished)
        {
            return Ok(());
        }
        let Some(checkpoint_id) = checkpointing.coordinator.try_trigger(now_ms) else {
            return Ok(());
        };
        self.trigger_checkpoint(sources, checkpoint_id, now_ms)
    }

    /// Records the sources' positions and injects the barrier of `checkpoint_id`.
    fn trigger_checkpoint(
        &mut self,
        sources: &[NodeId],
        checkpoint_id: u64,
        now_ms: i64,
    ) -> Result<(), StreamError> {
        let sinks = self
            .all_consumers
            .iter()
            .filter(|consumers| consumers.is_empty())
            .count();
        let mut pending = PendingCheckpoint {
            timestamp_ms: now_ms,
            nodes: vec![None; self.nodes.len()],
            barriers_received: vec![0; self.nodes.len()],
            acknowledgements_missing: sinks,
        };
        for &source in sources {
            let node = &self.nodes[source];
            let NodeKind::Source(runner) = &node.kind else {
                unreachable!("filtered to sources");
            };
            pending.nodes[source] = Some(NodeSnapshot {
                name: node.metrics.name.clone(),
                source_position: Some(runner.snapshot_position(checkpoint_id)),
                keyed_state: None,
            });
        }
        self.pending.insert(checkpoint_id, pending);
        for &source in sources {
            self.broadcast(source, Event::Barrier(checkpoint_id))?;
        }
        if self.stage.is_some() {
            self.drain()?;
            return self.report_if_snapshotted(checkpoint_id);
        }
        // A source without consumers is a sink of itself.
        for &source in sources {
            if self.all_consumers[source].is_empty() {
                self.acknowledge(checkpoint_id)?;
            }
        }
        self.drain()
    }

    /// A barrier arrived at `node` on one input; snapshot and forward once aligned.
    fn on_barrier(&mut self, node: NodeId, checkpoint_id: u64) -> Result<(), StreamError> {
        if self.stage.is_some() && !self.pending.contains_key(&checkpoint_id) {
            // A task downstream of the sources learns of a checkpoint by its barrier.
            let nodes = self.nodes.len();
            self.pending.insert(
                checkpoint_id,
                PendingCheckpoint {
                    timestamp_ms: self.clock.now_ms(),
                    nodes: vec![None; nodes],
                    barriers_received: vec![0; nodes],
                    acknowledgements_missing: 0,
                },
            );
        }
        let Some(pending) = self.pending.get_mut(&checkpoint_id) else {
            // Expired or aborted: nothing to do, nothing to forward.
            return Ok(());
        };
        pending.barriers_received[node] += 1;
        let runtime_node = &mut self.nodes[node];
        if pending.barriers_received[node] < runtime_node.inputs.len() {
            return Ok(());
        }
        let NodeKind::Operator(operator) = &mut runtime_node.kind else {
            unreachable!("sources receive no barriers");
        };
        let keyed_state = operator.snapshot_state(checkpoint_id)?;
        pending.nodes[node] = Some(NodeSnapshot {
            name: runtime_node.metrics.name.clone(),
            source_position: None,
            keyed_state,
        });
        if self.stage.is_some() {
            self.broadcast(node, Event::Barrier(checkpoint_id))?;
            self.report_if_snapshotted(checkpoint_id)
        } else if self.all_consumers[node].is_empty() {
            self.acknowledge(checkpoint_id)
        } else {
            self.broadcast(node, Event::Barrier(checkpoint_id))
        }
    }

    /// A parallel task: once every node of its stage snapshotted the checkpoint, send the
    /// snapshots to the coordinator.
    fn report_if_snapshotted(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        let Some(pending) = self.pending.get(&checkpoint_id) else {
            return Ok(());
        };
        let stage = self.stage.as_ref().expect("parallel tasks report");
        let done = (0..self.nodes.len())
            .filter(|node| stage.member[*node])
            .all(|node| pending.nodes[node].is_some());
        if !done {
            return Ok(());
        }
        let pending = self
            .pending
            .remove(&checkpoint_id)
            .expect("looked up above");
        let snapshots = pending
            .nodes
            .into_iter()
            .enumerate()
            .filter_map(|(node, snapshot)| snapshot.map(|snapshot| (node, snapshot)))
            .collect();
        stage
            .reports
            .send(Report::Acknowledged {
                checkpoint_id,
                snapshots,
            })
            .map_err(|_| peer_gone())
    }

    /// A sink acknowledged; the last acknowledgement completes the checkpoint.
    fn acknowledge(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        let checkpointing = self
            .checkpointing
            .as_mut()
            .expect("barriers only flow with checkpointing on");
        let pending = self
            .pending
            .get_mut(&checkpoint_id)
            .expect("acknowledged checkpoints are pending");
        pending.acknowledgements_missing -= 1;
        if pending.acknowledgements_missing > 0 {
            return Ok(());
        }
        let pending = self
            .pending
            .remove(&checkpoint_id)
            .expect("looked up above");
        let nodes = pending
            .nodes
            .into_iter()
            .map(|snapshot| {
                // Every node lies downstream of a source, and every sink acknowledged.
                snapshot.expect("a completed checkpoint has a snapshot of every node")
            })
            .collect();
        let checkpoint = CompletedCheckpoint {
            checkpoint_id,
            job_name: self.job_name.clone(),
            timestamp_ms: pending.timestamp_ms,
            max_parallelism: self.max_parallelism,
            nodes,
        };
        checkpointing.storage.borrow_mut().store(&checkpoint)?;
        checkpointing
            .coordinator
            .complete(checkpoint_id, self.clock.now_ms());
        self.num_completed_checkpoints += 1;
        self.notify_checkpoint_complete(checkpoint_id)
    }

    /// `notify_checkpoint_complete` to every node (of this task), in graph order.
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        for index in 0..self.nodes.len() {
            if !self.is_member(index) {
                continue;
            }
            let node = &mut self.nodes[index];
            match &mut node.kind {
                NodeKind::Operator(operator) => {
                    operator.notify_checkpoint_complete(checkpoint_id)?
                }
                NodeKind::Source(source) => source.notify_checkpoint_complete(checkpoint_id)?,
            }
        }
        Ok(())
    }

    fn run_sources(
        &mut self,
        clock: &dyn Clock,
        emission: WatermarkEmission,
    ) -> Result<(), StreamError> {
        let sources: Vec<NodeId> = (0..self.nodes.len())
            .filter(|node| matches!(self.nodes[*node].kind, NodeKind::Source(_)))
            .collect();
        let mut events = Vec::new();
        while sources
            .iter()
            .any(|source| !self.nodes[*source].source_finished)
        {
            self.maybe_trigger_checkpoint(&sources, clock.now_ms())?;
            for &source in &sources {
                if self.nodes[source].source_finished {
                    continue;
                }
                let NodeKind::Source(runner) = &mut self.nodes[source].kind else {
                    unreachable!("filtered to sources above");
                };
                let more = runner.step(clock, &mut events)?;
                self.nodes[source].source_finished = !more;
                self.emit_source_events(source, &mut events)?;

                // Every step, not only when the clock moved: a processing-time timer
                // registered for a time already passed fires at the next step, as Flink
                // fires such timers as soon as the task is free.
                let now_ms = clock.now_ms();
                self.advance_processing_time(now_ms)?;
                self.periodic_watermarks(&sources, now_ms, emission, &mut events)?;
            }
        }
        Ok(())
    }

    fn stage(&self) -> &StageTask {
        self.stage.as_ref().expect("a parallel task")
    }

    /// A parallel task's loop: the coordinator's messages, its sources (the source task)
    /// and its keyed inputs, processing time; until every input of its stage ended.
    fn run_stage_loop(&mut self, emission: WatermarkEmission) -> Result<(), StreamError> {
        let clock = self.clock.clone();
        let sources: Vec<NodeId> = (0..self.nodes.len())
            .filter(|node| {
                self.is_member(*node) && matches!(self.nodes[*node].kind, NodeKind::Source(_))
            })
            .collect();
        let mut events = Vec::new();
        loop {
            if self.stage().cancelled() {
                return Err(peer_gone());
            }
            let mut progressed = false;
            loop {
                let control = match self.stage().control.try_recv() {
                    Ok(control) => control,
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return Err(peer_gone()),
                };
                progressed = true;
                match control {
                    Control::Trigger {
                        checkpoint_id,
                        timestamp_ms,
                    } => {
                        if sources
                            .iter()
                            .any(|source| self.nodes[*source].source_finished)
                        {
                            self.stage()
                                .reports
                                .send(Report::Declined { checkpoint_id })
                                .map_err(|_| peer_gone())?;
                        } else {
                            self.trigger_checkpoint(&sources, checkpoint_id, timestamp_ms)?;
                        }
                    }
                    Control::Complete(checkpoint_id) => {
                        self.notify_checkpoint_complete(checkpoint_id)?
                    }
                    // Sent only once every task drained, this one included.
                    Control::Finish => {
                        return Err(StreamError::Function(
                            "parallel task told to finish before its input ended".into(),
                        ));
                    }
                }
            }
            for &source in &sources {
                if self.nodes[source].source_finished {
                    continue;
                }
                let NodeKind::Source(runner) = &mut self.nodes[source].kind else {
                    unreachable!("filtered to sources above");
                };
                let more = runner.step(clock.as_ref(), &mut events)?;
                self.nodes[source].source_finished = !more;
                self.emit_source_events(source, &mut events)?;
                progressed = true;
            }
            for index in 0..self.stage().exchange_in.len() {
                // One message at a time, each processed before the next is taken: the
                // channel is all the buffer there is, so backpressure stays tight.
                for _ in 0..EXCHANGE_POLL_BUDGET {
                    let stage = self.stage.as_mut().expect("a parallel task");
                    let exchange = &mut stage.exchange_in[index];
                    if exchange.is_finished() || exchange.poll(1, &mut events)? == 0 {
                        break;
                    }
                    progressed = true;
                    let (node, input) = (exchange.node, exchange.input);
                    for event in events.drain(..) {
                        self.queue.push_back((node, input, event));
                    }
                    self.drain()?;
                }
            }
            let now_ms = clock.now_ms();
            self.advance_processing_time(now_ms)?;
            self.periodic_watermarks(&sources, now_ms, emission, &mut events)?;
            let sources_done = sources
                .iter()
                .all(|source| self.nodes[*source].source_finished);
            if sources_done
                && self
                    .stage()
                    .exchange_in
                    .iter()
                    .all(|input| input.is_finished())
            {
                return self.await_job_end();
            }
            if !progressed {
                // Woken by a producer or the coordinator; the timeout bounds how late
                // processing-time timers fire and a cancellation is noticed.
                match self.stage().doorbell.recv_timeout(STAGE_IDLE_WAIT) {
                    Ok(()) | Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return Err(peer_gone()),
                }
            }
        }
    }

    /// A parallel task whose input ended: tells the coordinator, then finishes its sinks
    /// once every task has drained (the job succeeded), or stops if the job failed.
    fn await_job_end(&mut self) -> Result<(), StreamError> {
        let task = self.stage().task;
        self.stage()
            .reports
            .send(Report::Drained { task })
            .map_err(|_| peer_gone())?;
        loop {
            if self.stage().cancelled() {
                return Err(peer_gone());
            }
            match self.stage().control.try_recv() {
                Ok(Control::Complete(checkpoint_id)) => {
                    self.notify_checkpoint_complete(checkpoint_id)?;
                    continue;
                }
                Ok(Control::Trigger { checkpoint_id, .. }) => {
                    self.stage()
                        .reports
                        .send(Report::Declined { checkpoint_id })
                        .map_err(|_| peer_gone())?;
                    continue;
                }
                Ok(Control::Finish) => {
                    for node in std::mem::take(&mut self.deferred_finish) {
                        let NodeKind::Operator(operator) = &mut self.nodes[node].kind else {
                            unreachable!("deferred nodes are sinks");
                        };
                        operator.finish(&mut Output::default())?;
                    }
                    return Ok(());
                }
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => return Err(peer_gone()),
            }
            match self.stage().doorbell.recv_timeout(STAGE_IDLE_WAIT) {
                Ok(()) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(peer_gone()),
            }
        }
    }

    fn periodic_watermarks(
        &mut self,
        sources: &[NodeId],
        now_ms: i64,
        emission: WatermarkEmission,
        events: &mut Vec<Event>,
    ) -> Result<(), StreamError> {
        for &source in sources {
            let node = &mut self.nodes[source];
            if node.source_finished {
                continue;
            }
            let due = match emission {
                WatermarkEmission::Disabled => false,
                WatermarkEmission::AfterEveryEvent => true,
                WatermarkEmission::Periodic(_) => now_ms >= node.next_periodic_emit_ms,
            };
            if !due {
                continue;
            }
            if let WatermarkEmission::Periodic(interval) = emission {
                node.next_periodic_emit_ms =
                    now_ms.saturating_add(crate::time::duration_ms(interval));
            }
            if let NodeKind::Source(runner) = &mut node.kind {
                runner.periodic_emit(now_ms, events);
            }
            self.emit_source_events(source, events)?;
        }
        Ok(())
    }

    fn emit_source_events(
        &mut self,
        source: NodeId,
        events: &mut Vec<Event>,
    ) -> Result<(), StreamError> {
        for event in events.drain(..) {
            match event {
                Event::Record(value, timestamp) => {
                    self.nodes[source].metrics.num_records_out += 1;
                    self.route_record(source, Port::Main, value, timestamp)?;
                }
                other => self.broadcast(source, other)?,
            }
        }
        self.drain()
    }

    fn advance_processing_time(&mut self, now_ms: i64) -> Result<(), StreamError> {
        for node in 0..self.nodes.len() {
            if !self.is_member(node) {
                continue;
            }
            let NodeKind::Operator(operator) = &mut self.nodes[node].kind else {
                continue;
            };
            let mut out = std::mem::take(&mut self.spare_output);
            operator.advance_processing_time(now_ms, &mut out)?;
            if out.main.is_empty() && out.side.is_empty() {
                // The common case: no timer was due.
                self.spare_output = out;
                continue;
            }
            self.route_output(node, out)?;
            self.drain()?;
        }
        Ok(())
    }

    fn route_record(
        &mut self,
        from: NodeId,
        port: Port,
        value: Box<dyn Any>,
        timestamp: Option<i64>,
    ) -> Result<(), StreamError> {
        let key = (from, port);
        let (targets, cloner) = if key.1 == Port::Main {
            (&self.main_consumers[from], self.main_cloners[from])
        } else {
            match self.consumers.get(&key) {
                Some(targets) => (targets, self.cloners.get(&key).copied()),
                None => return Ok(()),
            }
        };
        // Nobody reads this port (e.g. an unused side output): dropped, as in Flink.
        let Some((last, rest)) = targets.split_last() else {
            return Ok(());
        };
        for &(node, input) in rest {
            let cloner = cloner.expect("every consumed port has a cloner");
            let copy = cloner(value.as_ref());
            match self
                .stage
                .as_ref()
                .and_then(|stage| stage.exchange_out.get(&(node, input)))
            {
                Some(exchange) => exchange.record(copy, timestamp)?,
                None => self
                    .queue
                    .push_back((node, input, Event::Record(copy, timestamp))),
            }
        }
        let &(node, input) = last;
        match self
            .stage
            .as_ref()
            .and_then(|stage| stage.exchange_out.get(&(node, input)))
        {
            Some(exchange) => exchange.record(value, timestamp)?,
            None => self
                .queue
                .push_back((node, input, Event::Record(value, timestamp))),
        }
        Ok(())
    }

    fn broadcast(&mut self, from: NodeId, event: Event) -> Result<(), StreamError> {
        let targets = &self.all_consumers[from];
        for &(node, input) in targets {
            if let Some(exchange) = self
                .stage
                .as_ref()
                .and_then(|stage| stage.exchange_out.get(&(node, input)))
            {
                exchange.broadcast(&event)?;
                continue;
            }
            let copy = match &event {
                Event::Watermark(watermark) => Event::Watermark(*watermark),
                Event::Idle(idle) => Event::Idle(*idle),
                Event::Barrier(checkpoint_id) => Event::Barrier(*checkpoint_id),
                Event::End => Event::End,
                Event::Record(..) => unreachable!("records are routed by port"),
            };
            self.queue.push_back((node, input, copy));
        }
        Ok(())
    }

    /// Routes what an operator call emitted, then keeps the emptied buffers for the next
    /// call (`spare_output`).
    fn route_output(&mut self, from: NodeId, mut out: Output) -> Result<(), StreamError> {
        self.nodes[from].metrics.num_records_out += (out.main.len() + out.side.len()) as u64;
        let mut result = Ok(());
        for Emitted {
            port,
            value,
            timestamp,
        } in out.main.drain(..).chain(out.side.drain(..))
        {
            if result.is_ok() {
                result = self.route_record(from, port, value, timestamp);
            }
        }
        self.spare_output = out;
        result
    }

    fn drain(&mut self) -> Result<(), StreamError> {
        while let Some((node, input, event)) = self.queue.pop_front() {
            if self.queue.len() >= self.work_queue_events_max {
                return Err(StreamError::WorkQueueFull {
                    events_max: self.work_queue_events_max,
                });
            }
            self.deliver(node, input, event)?;
        }
        Ok(())
    }

    fn deliver(&mut self, node: NodeId, input: usize, event: Event) -> Result<(), StreamError> {
        let runtime_node = &mut self.nodes[node];
        let NodeKind::Operator(operator) = &mut runtime_node.kind else {
            unreachable!("sources have no inputs");
        };
        match event {
            Event::Record(value, timestamp) => {
                runtime_node.metrics.num_records_in += 1;
                let mut out = std::mem::take(&mut self.spare_output);
                operator.process_record(input, value, timestamp, &mut out)?;
                self.route_output(node, out)?;
            }
            Event::Watermark(watermark) => {
                let mut decisions = Vec::new();
                runtime_node
                    .valve
                    .input_watermark(input, watermark, &mut decisions);
                self.apply_valve(node, decisions)?;
            }
            Event::Idle(idle) => {
                let mut decisions = Vec::new();
                runtime_node.valve.input_idle(input, idle, &mut decisions);
                self.apply_valve(node, decisions)?;
            }
            Event::Barrier(checkpoint_id) => self.on_barrier(node, checkpoint_id)?,
            Event::End => {
                runtime_node.inputs_ended[input] = true;
                if runtime_node.inputs_ended.iter().all(|ended| *ended) {
                    if self.stage.is_some() && operator.commits_on_finish() {
                        self.deferred_finish.push(node);
                        return Ok(());
                    }
                    let mut out = Output::default();
                    operator.finish(&mut out)?;
                    self.route_output(node, out)?;
                    self.broadcast(node, Event::End)?;
                }
            }
        }
        Ok(())
    }

    fn apply_valve(
        &mut self,
        node: NodeId,
        decisions: Vec<ValveOutput>,
    ) -> Result<(), StreamError> {
        for decision in decisions {
            match decision {
                ValveOutput::Watermark(watermark) => {
                    let NodeKind::Operator(operator) = &mut self.nodes[node].kind else {
                        unreachable!("sources have no valve input");
                    };
                    let mut out = std::mem::take(&mut self.spare_output);
                    operator.advance_watermark(watermark, &mut out)?;
                    self.route_output(node, out)?;
                    self.broadcast(node, Event::Watermark(watermark))?;
                }
                ValveOutput::Idle => self.broadcast(node, Event::Idle(true))?,
                ValveOutput::Active => self.broadcast(node, Event::Idle(false))?,
            }
        }
        Ok(())
    }
}
