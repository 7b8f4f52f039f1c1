//! Parallel execution of `DataStream` jobs: `StreamExecutionEnvironment::execute_parallel`.
//!
//! The job graph is cut into stages at its keyed edges (the inputs of keyed operators
//! after `key_by`, Flink's hash-partitioned edges); the other edges are forward edges and
//! stay inside a stage, chained as Flink chains operators. A stage runs as many tasks as
//! its parallelism: `DataStream::set_parallelism` on any of its nodes (they must agree),
//! else `set_parallelism` of the environment for keyed stages and 1 for the source stage.
//! A source stage above 1 needs splittable sources: `KafkaSource` shares its partitions
//! out as Flink's enumerator does (`kafka::split_owner`); a `CollectionSource` (a script)
//! refuses. Each task is a thread running the executor (`executor::run_stage`) over its
//! stage's nodes only, with its own instance of each operator: the task builds the whole
//! graph itself by calling the job's builder function, so user functions need not be
//! `Send` (Rust cannot ship closures to a thread as Flink ships serialized functions;
//! building per task is the equivalent), only the records crossing a keyed edge are
//! (`key_by` requires `T: Send`).
//!
//! Keyed edges: the producing task computes each record's key group with the edge's key
//! selector and sends it to the task owning that group (`operator_index_for_key_group`,
//! the inverse of `key_group_range_for_operator`) over a bounded channel
//! (`std::sync::mpsc::sync_channel`, `channel_capacity` messages, one per producing task,
//! consuming task and edge), so a slow task blocks its producers and backpressure reaches
//! the sources. Watermarks, idleness, barriers and the end of input go to every consuming
//! task; an `ExchangeIn` combines the channels of one input as Flink's input gate does:
//! watermarks through a `StatusWatermarkValve` (minimum over active channels), barriers
//! aligned (a channel that delivered the barrier is not read until every live channel
//! has, an ended channel counts as aligned), the end once every channel ended.
//!
//! Checkpoints: the coordinator (the calling thread) triggers them every
//! `checkpoint_interval` under the `CheckpointConfig` bounds (`CheckpointCoordinator`:
//! minimum pause, timeout, concurrency) by telling the source tasks, which record their
//! sources' positions and inject the barrier; every task snapshots its nodes when the
//! barrier has passed them and reports; when every task reported, the coordinator merges
//! the snapshots (keyed state by key group: the union over tasks, each owning its range),
//! stores the result as one `CompletedCheckpoint` — the format the single-threaded
//! executor writes, so either can restore the other's checkpoints — and tells every task
//! to `notify_checkpoint_complete`. A job restores from the latest checkpoint at any
//! parallelism: task i of p takes the key groups `key_group_range_for_operator(max, p, i)`.
//! A failed task fails the job (every task stops: a cancel flag, and closed channels
//! unblock producers); the restart strategy runs it again from the latest checkpoint.
//!
//! Sinks: each instance learns its index (`Sink::set_subtask`) and keeps its checkpointed
//! state in the first key group it owns, so parallel `KafkaSink`s use transactional ids
//! of their own (`{prefix}-{subtask}-{checkpoint}`) and a rescaled job hands every former
//! instance's pending transaction to the instance owning that key group. A sink's
//! `finish` (its final commit) runs only once every task drained its input, so a job
//! that fails at its end commits nothing there.
//!
//! Split sources' positions: each instance records its partitions; the checkpoint holds
//! the concatenation, and every instance of a restored job, at any parallelism, takes the
//! entries of the partitions it owns.
//!
//! What it is not (yet): rebalance or broadcast edges, so operators joined by forward
//! edges share one parallelism (a node reading forward edges from two stages, or asking
//! for another parallelism than its stage, is rejected); the manual clock (each task
//! reads the system clock); unaligned checkpoints; checkpoints after a source task ended
//! (the end of input commits instead).

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, TryRecvError};

use crate::checkpoint::NodeSnapshot;
use crate::environment::{KeyedEdge, NodeId};
use crate::error::StreamError;
use crate::executor::{Event, OperatorMetrics};
use crate::key_group::operator_index_for_key_group;
use crate::valve::{StatusWatermarkValve, ValveOutput};

/// The most tasks per stage (each is a thread).
pub const PARALLELISM_MAX: u32 = 256;
/// Messages buffered per channel by default (Flink's buffers per channel, in records).
pub const CHANNEL_CAPACITY_DEFAULT: usize = 64;

/// What flows along a channel between tasks.
pub(crate) enum ExchangeMessage {
    Record(Box<dyn Any + Send>, Option<i64>),
    Watermark(i64),
    Idle(bool),
    Barrier(u64),
    End,
}

/// The error a task reports when a peer went away (its channel closed): a consequence
/// of the failure the peer reported, never the job's error.
pub(crate) fn peer_gone() -> StreamError {
    StreamError::Function("a parallel task of the job stopped".into())
}

/// The producing side of one keyed edge in one task: a channel per consuming task.
pub(crate) struct ExchangeOut {
    pub(crate) senders: Vec<SyncSender<ExchangeMessage>>,
    pub(crate) doorbells: Vec<SyncSender<()>>,
    pub(crate) edge: KeyedEdge,
    pub(crate) max_parallelism: u32,
}

impl ExchangeOut {
    fn send(&self, target: usize, message: ExchangeMessage) -> Result<(), StreamError> {
        self.senders[target]
            .send(message)
            .map_err(|_| peer_gone())?;
        // Full: a wake-up is pending already; closed: the next send reports it.
        let _ = self.doorbells[target].try_send(());
        Ok(())
    }

    /// Sends a record to the task owning its key group.
    pub(crate) fn record(
        &self,
        value: Box<dyn Any>,
        timestamp: Option<i64>,
    ) -> Result<(), StreamError> {
        let key_group = (self.edge.key_group)(value.as_ref(), self.max_parallelism);
        let target = operator_index_for_key_group(
            key_group,
            self.senders.len() as u32,
            self.max_parallelism,
        ) as usize;
        self.send(
            target,
            ExchangeMessage::Record((self.edge.into_send)(value), timestamp),
        )
    }

    /// Sends a watermark, idleness, barrier or end of input to every consuming task.
    pub(crate) fn broadcast(&self, event: &Event) -> Result<(), StreamError> {
        for target in 0..self.senders.len() {
            let message = match event {
                Event::Watermark(watermark) => ExchangeMessage::Watermark(*watermark),
                Event::Idle(idle) => ExchangeMessage::Idle(*idle),
                Event::Barrier(checkpoint_id) => ExchangeMessage::Barrier(*checkpoint_id),
                Event::End => ExchangeMessage::End,
                Event::Record(..) => unreachable!("records are routed by key group"),
            };
            self.send(target, message)?;
        }
        Ok(())
    }
}

/// The consuming side of one keyed input of a node in one task: a channel per producing
/// task, combined into the events of one input edge.
pub(crate) struct ExchangeIn {
    pub(crate) node: NodeId,
    pub(crate) input: usize,
    receivers: Vec<Receiver<ExchangeMessage>>,
    valve: StatusWatermarkValve,
    /// Channels that delivered the barrier being aligned.
    blocked: Vec<bool>,
    ended: Vec<bool>,
    aligning: Option<u64>,
    finished: bool,
}

impl ExchangeIn {
    pub(crate) fn new(
        node: NodeId,
        input: usize,
        receivers: Vec<Receiver<ExchangeMessage>>,
    ) -> Self {
        let channels = receivers.len();
        Self {
            node,
            input,
            receivers,
            valve: StatusWatermarkValve::new(channels),
            blocked: vec![false; channels],
            ended: vec![false; channels],
            aligning: None,
            finished: false,
        }
    }

    /// Every channel ended (and the end went out).
    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }

    /// Receives up to `budget` messages, turning them into events of this input; returns
    /// how many it received.
    pub(crate) fn poll(
        &mut self,
        budget: usize,
        events: &mut Vec<Event>,
    ) -> Result<usize, StreamError> {
        let mut received = 0;
        let mut decisions = Vec::new();
        'channels: for channel in 0..self.receivers.len() {
            while received < budget && !self.blocked[channel] && !self.ended[channel] {
                let message = match self.receivers[channel].try_recv() {
                    Ok(message) => message,
                    Err(TryRecvError::Empty) => continue 'channels,
                    Err(TryRecvError::Disconnected) => return Err(peer_gone()),
                };
                received += 1;
                match message {
                    ExchangeMessage::Record(value, timestamp) => {
                        events.push(Event::Record(value, timestamp));
                    }
                    ExchangeMessage::Watermark(watermark) => {
                        self.valve
                            .input_watermark(channel, watermark, &mut decisions);
                    }
                    ExchangeMessage::Idle(idle) => {
                        self.valve.input_idle(channel, idle, &mut decisions);
                    }
                    ExchangeMessage::Barrier(checkpoint_id) => {
                        self.aligning = Some(checkpoint_id);
                        self.blocked[channel] = true;
                    }
                    ExchangeMessage::End => self.ended[channel] = true,
                }
                for decision in decisions.drain(..) {
                    events.push(match decision {
                        ValveOutput::Watermark(watermark) => Event::Watermark(watermark),
                        ValveOutput::Idle => Event::Idle(true),
                        ValveOutput::Active => Event::Idle(false),
                    });
                }
                self.complete_alignment(events);
            }
        }
        Ok(received)
    }

    /// Once every live channel delivered the barrier: pass it on and read them all again.
    fn complete_alignment(&mut self, events: &mut Vec<Event>) {
        if let Some(checkpoint_id) = self.aligning {
            let aligned = self
                .blocked
                .iter()
                .zip(&self.ended)
                .all(|(blocked, ended)| *blocked || *ended);
            if aligned {
                events.push(Event::Barrier(checkpoint_id));
                self.aligning = None;
                self.blocked.fill(false);
            }
        }
        if !self.finished && self.ended.iter().all(|ended| *ended) {
            self.finished = true;
            events.push(Event::End);
        }
    }
}

/// What the coordinator tells a task.
pub(crate) enum Control {
    /// Source task: record positions and inject the barrier.
    Trigger {
        checkpoint_id: u64,
        timestamp_ms: i64,
    },
    /// The checkpoint is stored.
    Complete(u64),
    /// Every task drained its input: finish the sinks (commit) and stop.
    Finish,
}

/// What a task tells the coordinator.
pub(crate) enum Report {
    /// The task snapshotted every node of its stage for the checkpoint.
    Acknowledged {
        checkpoint_id: u64,
        snapshots: Vec<(NodeId, NodeSnapshot)>,
    },
    /// The source task could not take the checkpoint (its sources ended).
    Declined {
        checkpoint_id: u64,
    },
    /// The task's input ended; it waits for `Finish`.
    Drained {
        task: usize,
    },
    Finished {
        task: usize,
        metrics: Vec<(NodeId, OperatorMetrics)>,
    },
    Failed {
        task: usize,
        error: StreamError,
    },
}

/// One task's place in the job: which nodes it runs and how it talks to the others.
pub(crate) struct StageTask {
    /// The task's index among all tasks (for reports).
    pub(crate) task: usize,
    /// Its index among its stage's tasks, and their number.
    pub(crate) subtask: u32,
    pub(crate) parallelism: u32,
    /// `member[node]`: the node belongs to this task's stage.
    pub(crate) member: Vec<bool>,
    /// Keyed edges leaving the stage, by consuming (node, input).
    pub(crate) exchange_out: std::collections::HashMap<(NodeId, usize), ExchangeOut>,
    pub(crate) exchange_in: Vec<ExchangeIn>,
    pub(crate) control: Receiver<Control>,
    /// Rung by producers and the coordinator.
    pub(crate) doorbell: Receiver<()>,
    pub(crate) reports: Sender<Report>,
    pub(crate) cancel: Arc<AtomicBool>,
}

impl StageTask {
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}

/// What every task of a parallel run needs from the environment (all `Send`).
#[derive(Clone)]
pub(crate) struct TaskSettings {
    pub(crate) max_parallelism: u32,
    pub(crate) emission: crate::watermark::WatermarkEmission,
    pub(crate) state_backend: crate::state::StateBackendKind,
    pub(crate) work_queue_events_max: usize,
    pub(crate) channel_capacity: usize,
    /// Tasks of every stage but the source stage.
    pub(crate) parallelism: u32,
}

/// The stages of a job graph: `stage_of[node]`, and each stage's task count.
pub(crate) struct Plan {
    pub(crate) stage_of: Vec<usize>,
    pub(crate) stage_parallelism: Vec<u32>,
    pub(crate) names: Vec<String>,
    /// Keyed edges between stages: (consuming node, input, producing node).
    pub(crate) exchanges: Vec<(NodeId, usize, NodeId)>,
}

impl Plan {
    /// Cuts `graph` at its keyed edges (module docs); rejects what cannot run in parallel.
    pub(crate) fn of(
        graph: &crate::environment::StreamGraph,
        parallelism: u32,
    ) -> Result<Plan, StreamError> {
        let unsupported = |message: String| {
            Err(StreamError::InvalidConfiguration(format!(
                "parallel execution: {message}"
            )))
        };
        let mut stage_of = Vec::with_capacity(graph.nodes.len());
        // The source stage runs one task unless its nodes ask for more.
        let mut stage_parallelism = vec![1];
        // Whether a stage's parallelism was set on one of its nodes (and by which).
        let mut set_by: Vec<Option<NodeId>> = vec![None];
        let mut exchanges = Vec::new();
        for (node, spec) in graph.nodes.iter().enumerate() {
            let keyed: Vec<bool> = (0..spec.inputs.len())
                .map(|input| graph.keyed_edges.contains_key(&(node, input)))
                .collect();
            let stage = if spec.inputs.is_empty() {
                0
            } else if keyed.iter().all(|keyed| *keyed) {
                stage_parallelism.push(parallelism);
                set_by.push(None);
                for (input, (producer, _)) in spec.inputs.iter().enumerate() {
                    exchanges.push((node, input, *producer));
                }
                stage_parallelism.len() - 1
            } else if keyed.iter().any(|keyed| *keyed) {
                return unsupported(format!(
                    "node {node} ({}) reads keyed and non-keyed inputs",
                    spec.name
                ));
            } else {
                let first = stage_of[spec.inputs[0].0];
                if spec
                    .inputs
                    .iter()
                    .any(|(producer, _)| stage_of[*producer] != first)
                {
                    return unsupported(format!(
                        "node {node} ({}) reads forward edges of different stages (a union \
                         across a key_by); key both inputs instead",
                        spec.name
                    ));
                }
                first
            };
            stage_of.push(stage);
            if let Some(&wanted) = graph.parallelism.get(&node) {
                if wanted == 0 || wanted > PARALLELISM_MAX {
                    return unsupported(format!(
                        "node {node} ({}): parallelism must be in 1..={PARALLELISM_MAX}, got {wanted}",
                        spec.name
                    ));
                }
                match set_by[stage] {
                    Some(other) if stage_parallelism[stage] != wanted => {
                        return unsupported(format!(
                            "node {node} ({}) asks for parallelism {wanted} but shares a task \
                             (forward edges) with node {other} ({}) at {}; rebalancing \
                             between them is not supported yet",
                            spec.name, graph.nodes[other].name, stage_parallelism[stage]
                        ));
                    }
                    Some(_) => {}
                    None => {
                        stage_parallelism[stage] = wanted;
                        set_by[stage] = Some(node);
                    }
                }
            }
        }
        Ok(Plan {
            stage_of,
            stage_parallelism,
            names: graph.nodes.iter().map(|spec| spec.name.clone()).collect(),
            exchanges,
        })
    }

    /// (stage, subtask) of every task, stage by stage.
    fn tasks(&self) -> Vec<(usize, u32)> {
        self.stage_parallelism
            .iter()
            .enumerate()
            .flat_map(|(stage, parallelism)| (0..*parallelism).map(move |subtask| (stage, subtask)))
            .collect()
    }
}

/// A keyed edge leaving a task: (consuming node, input), a sender and a doorbell per
/// consuming task.
type OutgoingEdge = (
    (NodeId, usize),
    Vec<SyncSender<ExchangeMessage>>,
    Vec<SyncSender<()>>,
);

/// A task's channel ends, made on the coordinator's thread (the `StageTask` is assembled
/// on the task's own thread, around the graph it builds).
struct TaskWiring {
    task: usize,
    subtask: u32,
    parallelism: u32,
    member: Vec<bool>,
    /// (consuming node, input) → a sender and doorbell per consuming task.
    outs: Vec<OutgoingEdge>,
    ins: Vec<(NodeId, usize, Vec<Receiver<ExchangeMessage>>)>,
    control: Receiver<Control>,
    doorbell: Receiver<()>,
    reports: Sender<Report>,
    cancel: Arc<AtomicBool>,
}

/// Runs the job once on its tasks; the coordinator is the calling thread.
pub(crate) fn run(
    job_name: &str,
    build: &(dyn Fn(&crate::StreamExecutionEnvironment) + Sync),
    settings: &TaskSettings,
    checkpointing: Option<crate::executor::Checkpointing>,
) -> Result<crate::JobExecutionResult, StreamError> {
    use std::sync::mpsc;

    let planning = task_environment(settings);
    build(&planning);
    let graph = planning.take_graph();
    if let Some(error) = graph.errors.first() {
        return Err(StreamError::InvalidConfiguration(error.clone()));
    }
    let plan = Plan::of(&graph, settings.parallelism)?;
    drop(graph);
    let tasks = plan.tasks();
    let task_index = |stage: usize, subtask: u32| {
        tasks
            .iter()
            .position(|task| *task == (stage, subtask))
            .expect("every (stage, subtask) is a task")
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let (reports_sender, reports) = mpsc::channel();
    let mut doorbell_senders = Vec::with_capacity(tasks.len());
    let mut control_senders = Vec::with_capacity(tasks.len());
    let mut wirings: Vec<TaskWiring> = Vec::with_capacity(tasks.len());
    for (task, (stage, subtask)) in tasks.iter().enumerate() {
        let (doorbell_sender, doorbell) = mpsc::sync_channel(1);
        let (control_sender, control) = mpsc::channel();
        doorbell_senders.push(doorbell_sender);
        control_senders.push(control_sender);
        wirings.push(TaskWiring {
            task,
            subtask: *subtask,
            parallelism: plan.stage_parallelism[*stage],
            member: plan.stage_of.iter().map(|of| of == stage).collect(),
            outs: Vec::new(),
            ins: Vec::new(),
            control,
            doorbell,
            reports: reports_sender.clone(),
            cancel: cancel.clone(),
        });
    }
    drop(reports_sender);
    for &(consumer, input, producer) in &plan.exchanges {
        let (up_stage, down_stage) = (plan.stage_of[producer], plan.stage_of[consumer]);
        let (up, down) = (
            plan.stage_parallelism[up_stage],
            plan.stage_parallelism[down_stage],
        );
        // senders[i][j]: producer task i → consumer task j.
        let mut senders: Vec<Vec<SyncSender<ExchangeMessage>>> =
            (0..up).map(|_| Vec::new()).collect();
        for j in 0..down {
            let mut receivers = Vec::with_capacity(up as usize);
            for upstream in senders.iter_mut() {
                let (sender, receiver) = mpsc::sync_channel(settings.channel_capacity);
                upstream.push(sender);
                receivers.push(receiver);
            }
            wirings[task_index(down_stage, j)]
                .ins
                .push((consumer, input, receivers));
        }
        let doorbells: Vec<SyncSender<()>> = (0..down)
            .map(|j| doorbell_senders[task_index(down_stage, j)].clone())
            .collect();
        for (i, channels) in senders.into_iter().enumerate() {
            wirings[task_index(up_stage, i as u32)].outs.push((
                (consumer, input),
                channels,
                doorbells.clone(),
            ));
        }
    }
    let restore = checkpointing
        .as_ref()
        .and_then(|checkpointing| checkpointing.restore.clone());
    if let Some(checkpoint) = &restore
        && checkpoint.max_parallelism != settings.max_parallelism
    {
        return Err(StreamError::Checkpoint(format!(
            "checkpoint {} has max_parallelism {}, the job {}",
            checkpoint.checkpoint_id, checkpoint.max_parallelism, settings.max_parallelism
        )));
    }
    let names = plan.names.clone();
    std::thread::scope(|scope| {
        for wiring in wirings {
            let restore = restore.clone();
            let names = &names;
            std::thread::Builder::new()
                .name(format!("sluice-stream-task-{}", wiring.task))
                .spawn_scoped(scope, move || {
                    run_task(job_name, build, settings, wiring, names, restore.as_ref())
                })
                .map_err(|error| StreamError::Function(format!("cannot start a task: {error}")))?;
        }
        coordinate(
            job_name,
            settings,
            &plan,
            checkpointing,
            restore.as_ref().map(|checkpoint| checkpoint.checkpoint_id),
            Coordination {
                reports,
                control: control_senders,
                doorbells: doorbell_senders,
                cancel,
            },
        )
    })
}

/// A fresh environment with the job's settings, for one task (or the plan).
fn task_environment(settings: &TaskSettings) -> crate::StreamExecutionEnvironment {
    let mut env = crate::StreamExecutionEnvironment::new();
    env.set_max_parallelism(settings.max_parallelism)
        .set_watermark_emission(settings.emission)
        .set_state_backend(settings.state_backend.clone())
        .set_work_queue_events_max(settings.work_queue_events_max);
    env
}

/// One task's thread: builds the graph, checks it is the planned one, runs its stage.
fn run_task(
    job_name: &str,
    build: &(dyn Fn(&crate::StreamExecutionEnvironment) + Sync),
    settings: &TaskSettings,
    wiring: TaskWiring,
    names: &[String],
    restore: Option<&crate::checkpoint::CompletedCheckpoint>,
) {
    let env = task_environment(settings);
    build(&env);
    let graph = env.take_graph();
    let built: Vec<&str> = graph.nodes.iter().map(|spec| spec.name.as_str()).collect();
    if built != names.iter().map(String::as_str).collect::<Vec<_>>() {
        let _ = wiring.reports.send(Report::Failed {
            task: wiring.task,
            error: StreamError::InvalidConfiguration(format!(
                "parallel execution: the job builder built another graph on task {} \
                 ({built:?}, planned {names:?}); it must build the same graph every call",
                wiring.task
            )),
        });
        return;
    }
    let mut exchange_out = std::collections::HashMap::new();
    for (edge_key, senders, doorbells) in wiring.outs {
        let edge = graph
            .keyed_edges
            .get(&edge_key)
            .expect("the plan's exchanges are keyed edges")
            .clone();
        exchange_out.insert(
            edge_key,
            ExchangeOut {
                senders,
                doorbells,
                edge,
                max_parallelism: settings.max_parallelism,
            },
        );
    }
    let exchange_in = wiring
        .ins
        .into_iter()
        .map(|(node, input, receivers)| ExchangeIn::new(node, input, receivers))
        .collect();
    let stage = StageTask {
        task: wiring.task,
        subtask: wiring.subtask,
        parallelism: wiring.parallelism,
        member: wiring.member,
        exchange_out,
        exchange_in,
        control: wiring.control,
        doorbell: wiring.doorbell,
        reports: wiring.reports,
        cancel: wiring.cancel,
    };
    crate::executor::run_stage(
        job_name,
        graph,
        crate::executor::StateSettings {
            max_parallelism: settings.max_parallelism,
            backend: settings.state_backend.clone(),
        },
        settings.emission,
        crate::executor::Limits {
            work_queue_events_max: settings.work_queue_events_max,
        },
        stage,
        restore,
    );
}

/// The coordinator's ends of the channels.
struct Coordination {
    reports: Receiver<Report>,
    control: Vec<Sender<Control>>,
    doorbells: Vec<SyncSender<()>>,
    cancel: Arc<AtomicBool>,
}

impl Coordination {
    fn tell(&self, task: usize, control: Control) {
        // A task that ended has no use for it (module docs).
        if self.control[task].send(control).is_ok() {
            let _ = self.doorbells[task].try_send(());
        }
    }

    fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
        for doorbell in &self.doorbells {
            let _ = doorbell.try_send(());
        }
    }
}

/// A checkpoint collecting the tasks' snapshots.
struct PendingParallel {
    timestamp_ms: i64,
    acknowledged: usize,
    snapshots: Vec<Vec<NodeSnapshot>>,
}

/// How often the coordinator looks at the checkpoint timer without reports.
const COORDINATOR_TICK: std::time::Duration = std::time::Duration::from_millis(5);

/// The coordinator's loop: checkpoints, reports, failures; until every task ended.
fn coordinate(
    job_name: &str,
    settings: &TaskSettings,
    plan: &Plan,
    checkpointing: Option<crate::executor::Checkpointing>,
    restored_checkpoint_id: Option<u64>,
    channels: Coordination,
) -> Result<crate::JobExecutionResult, StreamError> {
    use crate::checkpoint::{CheckpointCoordinator, CompletedCheckpoint};
    use crate::time::Clock;
    use std::sync::mpsc::RecvTimeoutError;

    let clock = crate::time::SystemClock;
    let task_count = channels.control.len();
    let node_count = plan.names.len();
    let mut coordinator = checkpointing.as_ref().and_then(|checkpointing| {
        checkpointing.config.map(|config| {
            let next = restored_checkpoint_id.map_or(1, |id| id + 1);
            CheckpointCoordinator::new(config, next, clock.now_ms())
        })
    });
    let mut pending: std::collections::BTreeMap<u64, PendingParallel> = Default::default();
    let mut metrics: Vec<OperatorMetrics> = plan
        .names
        .iter()
        .map(|name| OperatorMetrics {
            name: name.clone(),
            ..OperatorMetrics::default()
        })
        .collect();
    let mut ended = 0;
    let mut drained = 0;
    // The source stage's tasks come first; checkpoints stop once one of them ended.
    let source_tasks = plan.stage_parallelism[0] as usize;
    let mut source_task_ended = false;
    let mut error: Option<StreamError> = None;
    let mut num_completed_checkpoints = 0;
    while ended < task_count {
        let now_ms = clock.now_ms();
        if let Some(coordinator) = coordinator.as_mut() {
            for expired in coordinator.expire(now_ms) {
                tracing::warn!(
                    job_name,
                    checkpoint_id = expired,
                    "checkpoint expired before completing"
                );
                pending.remove(&expired);
            }
            if error.is_none()
                && !source_task_ended
                && let Some(checkpoint_id) = coordinator.try_trigger(now_ms)
            {
                pending.insert(
                    checkpoint_id,
                    PendingParallel {
                        timestamp_ms: now_ms,
                        acknowledged: 0,
                        snapshots: vec![Vec::new(); node_count],
                    },
                );
                for task in 0..source_tasks {
                    channels.tell(
                        task,
                        Control::Trigger {
                            checkpoint_id,
                            timestamp_ms: now_ms,
                        },
                    );
                }
            }
        }
        let report = match channels.reports.recv_timeout(COORDINATOR_TICK) {
            Ok(report) => report,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        match report {
            Report::Acknowledged {
                checkpoint_id,
                snapshots,
            } => {
                let Some(entry) = pending.get_mut(&checkpoint_id) else {
                    continue;
                };
                entry.acknowledged += 1;
                for (node, snapshot) in snapshots {
                    entry.snapshots[node].push(snapshot);
                }
                if entry.acknowledged < task_count || error.is_some() {
                    continue;
                }
                let entry = pending.remove(&checkpoint_id).expect("looked up above");
                let nodes = match merge_snapshots(&plan.names, entry.snapshots) {
                    Ok(nodes) => nodes,
                    Err(merge_error) => {
                        error.get_or_insert(merge_error);
                        channels.cancel();
                        continue;
                    }
                };
                let checkpoint = CompletedCheckpoint {
                    checkpoint_id,
                    job_name: job_name.to_string(),
                    timestamp_ms: entry.timestamp_ms,
                    max_parallelism: settings.max_parallelism,
                    nodes,
                };
                let storage = &checkpointing
                    .as_ref()
                    .expect("checkpoints are triggered with checkpointing on")
                    .storage;
                if let Err(store_error) = storage.borrow_mut().store(&checkpoint) {
                    error.get_or_insert(store_error);
                    channels.cancel();
                    continue;
                }
                if let Some(coordinator) = coordinator.as_mut() {
                    coordinator.complete(checkpoint_id, clock.now_ms());
                }
                num_completed_checkpoints += 1;
                for task in 0..task_count {
                    channels.tell(task, Control::Complete(checkpoint_id));
                }
            }
            Report::Declined { checkpoint_id } => {
                pending.remove(&checkpoint_id);
                if let Some(coordinator) = coordinator.as_mut() {
                    coordinator.abort(checkpoint_id);
                }
                source_task_ended = true;
            }
            Report::Drained { task } => {
                drained += 1;
                source_task_ended |= task < source_tasks;
                if drained == task_count && error.is_none() {
                    for task in 0..task_count {
                        channels.tell(task, Control::Finish);
                    }
                }
            }
            Report::Finished {
                task,
                metrics: task_metrics,
            } => {
                ended += 1;
                source_task_ended |= task < source_tasks;
                for (node, node_metrics) in task_metrics {
                    let total = &mut metrics[node];
                    total.num_records_in += node_metrics.num_records_in;
                    total.num_records_out += node_metrics.num_records_out;
                    total.num_late_records_dropped += node_metrics.num_late_records_dropped;
                }
            }
            Report::Failed {
                task,
                error: task_error,
            } => {
                ended += 1;
                source_task_ended |= task < source_tasks;
                // The first failure is the cause; peers report that they lost it.
                let is_consequence = is_peer_gone(&task_error);
                if error.is_none() || (!is_consequence && error.as_ref().is_some_and(is_peer_gone))
                {
                    error = Some(task_error);
                }
                channels.cancel();
            }
        }
    }
    match error {
        Some(error) => Err(error),
        None => Ok(crate::JobExecutionResult {
            job_name: job_name.to_string(),
            operators: metrics,
            num_completed_checkpoints,
            restored_checkpoint_id,
            num_restarts: 0,
        }),
    }
}

fn is_peer_gone(error: &StreamError) -> bool {
    error.to_string() == peer_gone().to_string()
}

/// One snapshot per node from the tasks' parts: a source's position from its one task,
/// keyed state as the union of the tasks' key groups.
fn merge_snapshots(
    names: &[String],
    parts: Vec<Vec<NodeSnapshot>>,
) -> Result<Vec<NodeSnapshot>, StreamError> {
    let mut nodes = Vec::with_capacity(parts.len());
    for (node, parts) in parts.into_iter().enumerate() {
        let mut merged = NodeSnapshot {
            name: names[node].clone(),
            source_position: None,
            keyed_state: None,
        };
        for part in parts {
            // A split source's instances each record their part (a list): the
            // checkpoint holds their concatenation, which any split of a restored job
            // filters to what it owns.
            merged.source_position = match (merged.source_position.take(), part.source_position) {
                (
                    Some(serde_json::Value::Array(mut merged)),
                    Some(serde_json::Value::Array(more)),
                ) => {
                    merged.extend(more);
                    Some(serde_json::Value::Array(merged))
                }
                (merged, None) => merged,
                (_, position) => position,
            };
            if let Some(state) = part.keyed_state {
                let target = merged.keyed_state.get_or_insert_with(Default::default);
                for (key_group, group) in state.key_groups {
                    if target.key_groups.insert(key_group, group).is_some() {
                        return Err(StreamError::InvalidConfiguration(format!(
                            "parallel execution: node {node} ({}) has state in key group \
                             {key_group} on two tasks (each task writes only its own key groups)",
                            names[node]
                        )));
                    }
                }
            }
        }
        nodes.push(merged);
    }
    Ok(nodes)
}
