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
//! What it is not: parallel. The plan for the parallel runtime: each node becomes
//! `parallelism` tasks, each on a worker thread with its own operator instance (built by a
//! factory, so user functions become `Clone + Send`) and state store holding its key-group
//! range; edges become bounded channels (forward, or hash-partitioned by key group after
//! `key_by`), so a slow sink backpressures the sources; the valve moves to each task's
//! input gate, which also aligns checkpoint barriers before the task snapshots its key
//! groups. The operator interface (`process_record`, `advance_watermark`,
//! `advance_processing_time`, `finish`) is already what a task loop calls.
//!
//! Bounds: the work queue holds what one source step produces, transitively, and at most
//! `work_queue_events_max` events (default `WORK_QUEUE_EVENTS_MAX`); a step that produces more (a `flat_map` exploding a
//! record, a watermark firing a million windows at once) fails the job with
//! `WorkQueueFull` instead of growing without limit. Bounded channels with backpressure
//! replace this with the parallel runtime.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use crate::environment::{Cloner, NodeId, NodeKind, StreamGraph};
use crate::error::StreamError;
use crate::operator::{Emitted, OperatorSetup, Output, Port};
use crate::time::Clock;
use crate::valve::{StatusWatermarkValve, ValveOutput};
use crate::watermark::WatermarkEmission;

/// The default for the most events in flight between two source steps
/// (`StreamExecutionEnvironment::set_work_queue_events_max`).
pub const WORK_QUEUE_EVENTS_MAX: usize = 1 << 22;

/// What flows along an edge.
pub(crate) enum Event {
    Record(Box<dyn Any>, Option<i64>),
    Watermark(i64),
    /// `true`: the sender became idle; `false`: active again.
    Idle(bool),
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
    nodes: Vec<RuntimeNode>,
    /// Consumers of each (node, port), as (node, input index).
    consumers: HashMap<(NodeId, Port), Vec<(NodeId, usize)>>,
    /// Consumers of any port of a node: where its watermarks go.
    all_consumers: Vec<Vec<(NodeId, usize)>>,
    cloners: HashMap<(NodeId, Port), Cloner>,
    queue: VecDeque<(NodeId, usize, Event)>,
    work_queue_events_max: usize,
}

struct RuntimeNode {
    kind: NodeKind,
    valve: StatusWatermarkValve,
    inputs_ended: Vec<bool>,
    source_finished: bool,
    next_periodic_emit_ms: i64,
    metrics: OperatorMetrics,
}

/// The executor's bounds.
pub(crate) struct Limits {
    pub(crate) work_queue_events_max: usize,
}

pub(crate) fn run(
    job_name: &str,
    graph: StreamGraph,
    clock: Rc<dyn Clock>,
    max_parallelism: u32,
    emission: WatermarkEmission,
    limits: Limits,
) -> Result<JobExecutionResult, StreamError> {
    let StreamGraph { nodes, cloners, .. } = graph;
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
    let setup = OperatorSetup {
        clock: clock.clone(),
        max_parallelism,
    };
    let mut runtime_nodes = Vec::with_capacity(nodes.len());
    for spec in nodes {
        let mut kind = spec.kind;
        match &mut kind {
            NodeKind::Source(source) => source.open(clock.as_ref()),
            NodeKind::Operator(operator) => operator.open(&setup)?,
        }
        let is_source = matches!(kind, NodeKind::Source(_));
        runtime_nodes.push(RuntimeNode {
            kind,
            // A source has no inputs; give it a one-input valve it never uses.
            valve: StatusWatermarkValve::new(spec.inputs.len().max(1)),
            inputs_ended: vec![false; spec.inputs.len()],
            source_finished: !is_source,
            next_periodic_emit_ms: clock.now_ms(),
            metrics: OperatorMetrics {
                name: spec.name,
                ..OperatorMetrics::default()
            },
        });
    }
    let mut runtime = Runtime {
        nodes: runtime_nodes,
        consumers,
        all_consumers,
        cloners,
        queue: VecDeque::new(),
        work_queue_events_max: limits.work_queue_events_max,
    };
    runtime.run_sources(clock.as_ref(), emission)?;
    let operators = runtime
        .nodes
        .into_iter()
        .map(|node| {
            let mut metrics = node.metrics;
            if let NodeKind::Operator(operator) = &node.kind {
                metrics.num_late_records_dropped = operator.num_late_records_dropped();
            }
            metrics
        })
        .collect();
    Ok(JobExecutionResult {
        job_name: job_name.to_string(),
        operators,
    })
}

impl Runtime {
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
                    self.route_record(source, Port::Main, value, timestamp);
                }
                other => self.broadcast(source, other),
            }
        }
        self.drain()
    }

    fn advance_processing_time(&mut self, now_ms: i64) -> Result<(), StreamError> {
        for node in 0..self.nodes.len() {
            let NodeKind::Operator(operator) = &mut self.nodes[node].kind else {
                continue;
            };
            let mut out = Output::default();
            operator.advance_processing_time(now_ms, &mut out)?;
            self.route_output(node, out);
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
    ) {
        let key = (from, port);
        let Some(targets) = self.consumers.get(&key) else {
            // Nobody reads this port (e.g. an unused side output): dropped, as in Flink.
            return;
        };
        let (last, rest) = targets
            .split_last()
            .expect("consumer lists are never empty");
        for &(node, input) in rest {
            let cloner = self
                .cloners
                .get(&key)
                .expect("every consumed port has a cloner");
            self.queue.push_back((
                node,
                input,
                Event::Record(cloner(value.as_ref()), timestamp),
            ));
        }
        self.queue
            .push_back((last.0, last.1, Event::Record(value, timestamp)));
    }

    fn broadcast(&mut self, from: NodeId, event: Event) {
        let targets = &self.all_consumers[from];
        for &(node, input) in targets {
            let copy = match &event {
                Event::Watermark(watermark) => Event::Watermark(*watermark),
                Event::Idle(idle) => Event::Idle(*idle),
                Event::End => Event::End,
                Event::Record(..) => unreachable!("records are routed by port"),
            };
            self.queue.push_back((node, input, copy));
        }
    }

    fn route_output(&mut self, from: NodeId, out: Output) {
        let Output { main, side } = out;
        self.nodes[from].metrics.num_records_out += (main.len() + side.len()) as u64;
        for Emitted {
            port,
            value,
            timestamp,
        } in main.into_iter().chain(side)
        {
            self.route_record(from, port, value, timestamp);
        }
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
                let mut out = Output::default();
                operator.process_record(input, value, timestamp, &mut out)?;
                self.route_output(node, out);
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
            Event::End => {
                runtime_node.inputs_ended[input] = true;
                if runtime_node.inputs_ended.iter().all(|ended| *ended) {
                    let mut out = Output::default();
                    operator.finish(&mut out)?;
                    self.route_output(node, out);
                    self.broadcast(node, Event::End);
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
                    let mut out = Output::default();
                    operator.advance_watermark(watermark, &mut out)?;
                    self.route_output(node, out);
                    self.broadcast(node, Event::Watermark(watermark));
                }
                ValveOutput::Idle => self.broadcast(node, Event::Idle(true)),
                ValveOutput::Active => self.broadcast(node, Event::Idle(false)),
            }
        }
        Ok(())
    }
}
