//! The typed DataStream API: `DataStream`, `KeyedStream`, `WindowedStream`.
//!
//! Mirrors Flink's API so the guide's Java reads almost line for line:
//! `filter` → `key_by` → `window(assigner)` → `allowed_lateness` / `side_output_late_data`
//! → `aggregate` / `reduce` / `process`, and `key_by(..).process(KeyedProcessFunction)`,
//! `union`, `get_side_output(tag)`, `sink_to(sink)`; two-input operators (`connect`,
//! `co_group`) are in `join`. Each call adds a node to the
//! environment's graph and returns a handle typed by the records that node emits, so the
//! compiler checks every edge. Stream elements must be `Clone` because a stream may feed
//! several consumers (Flink copies records between operators for the same reason) and
//! keys `Clone + Eq + Hash`.
//!
//! `key_by` attaches the key selector the next keyed operator uses to scope state and
//! timers; that operator's input becomes a keyed edge, which `execute_parallel` routes by
//! key group to the task owning the key (hence `T: Send` there).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;
use std::time::Duration;

use crate::environment::{KeyedEdge, NodeId, NodeKind, StreamGraph, clone_boxed, keyed_edge};
use crate::functions::{
    AggregateFunction, KeyedProcessFunction, OutputTag, ProcessWindowFunction, ReduceFunction,
    WindowContext,
};
use crate::join::{CoGroupedStreams, ConnectedStreams};
use crate::keyed_process::KeyedProcessOperator;
use crate::operator::{
    FilterOperator, FlatMapOperator, MapOperator, Operator, Port, UnionOperator,
};
use crate::sink::{Sink, SinkOperator};
use crate::state::{StateKey, StateValue};
use crate::time::duration_ms;
use crate::window::WindowAssigner;
use crate::window::operator::{
    AggregateAdapter, ProcessAdapter, ReduceAdapter, WindowFunctionAdapter, WindowOperator,
};

/// A stream of `T` records.
pub struct DataStream<T> {
    graph: Rc<RefCell<StreamGraph>>,
    node: NodeId,
    port: Port,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for DataStream<T> {
    fn clone(&self) -> Self {
        Self {
            graph: self.graph.clone(),
            node: self.node,
            port: self.port.clone(),
            _type: PhantomData,
        }
    }
}

impl<T: Clone + 'static> DataStream<T> {
    pub(crate) fn new(graph: Rc<RefCell<StreamGraph>>, node: NodeId, port: Port) -> Self {
        graph
            .borrow_mut()
            .cloners
            .insert((node, port.clone()), clone_boxed::<T>);
        Self {
            graph,
            node,
            port,
            _type: PhantomData,
        }
    }

    fn input(&self) -> (NodeId, Port) {
        (self.node, self.port.clone())
    }

    fn add_operator<U: Clone + 'static>(
        &self,
        name: &str,
        operator: Box<dyn Operator>,
        inputs: Vec<(NodeId, Port)>,
    ) -> DataStream<U> {
        let node = self.graph.borrow_mut().add_node(
            name.to_string(),
            NodeKind::Operator(operator),
            inputs,
        );
        DataStream::new(self.graph.clone(), node, Port::Main)
    }

    /// Adds a keyed operator whose inputs are keyed edges (`edges[i]` for input i).
    pub(crate) fn add_keyed_operator<U: Clone + 'static>(
        &self,
        name: &str,
        operator: Box<dyn Operator>,
        inputs: Vec<(NodeId, Port)>,
        edges: Vec<KeyedEdge>,
    ) -> DataStream<U> {
        let stream: DataStream<U> = self.add_operator(name, operator, inputs);
        let mut graph = self.graph.borrow_mut();
        for (input, edge) in edges.into_iter().enumerate() {
            graph.keyed_edges.insert((stream.node, input), edge);
        }
        drop(graph);
        stream
    }

    /// Adds a keyed operator reading this stream as input 0 and `second` as input 1.
    pub(crate) fn add_keyed_two_input_operator<U: Clone + 'static, I2: Clone + 'static>(
        &self,
        name: &str,
        operator: Box<dyn Operator>,
        second: &DataStream<I2>,
        edges: Vec<KeyedEdge>,
    ) -> DataStream<U> {
        self.add_keyed_operator(name, operator, vec![self.input(), second.input()], edges)
    }

    /// Flink's `connect`: pairs this stream with `other` for a two-input operator
    /// (`key_by(..).process(KeyedCoProcessFunction)`), whose watermark is the minimum of
    /// both inputs'.
    pub fn connect<I2: Clone + 'static>(&self, other: &DataStream<I2>) -> ConnectedStreams<T, I2> {
        ConnectedStreams {
            first: self.clone(),
            second: other.clone(),
        }
    }

    /// Flink's `coGroup`: `.where_key(..).equal_to(..).window(..).apply(CoGroupFunction)`,
    /// or `.join(JoinFunction)` instead of `apply` for Flink's window `join`.
    pub fn co_group<I2: Clone + 'static>(&self, other: &DataStream<I2>) -> CoGroupedStreams<T, I2> {
        CoGroupedStreams::new(self.clone(), other.clone())
    }

    /// A configuration error found while building: `execute` fails with it.
    pub(crate) fn report_error(&self, error: String) {
        self.graph.borrow_mut().errors.push(error);
    }

    /// Renames the operator that produces this stream (shown in metrics).
    pub fn name(self, name: &str) -> Self {
        self.graph.borrow_mut().nodes[self.node].name = name.to_string();
        self
    }

    /// Flink's `setParallelism` on the operator producing this stream, for
    /// `execute_parallel` (the single-threaded `execute` ignores it). Operators joined by
    /// forward edges share a task, so they must agree; a source above 1 must be
    /// splittable (`KafkaSource` splits its partitions).
    pub fn set_parallelism(self, parallelism: u32) -> Self {
        self.graph
            .borrow_mut()
            .parallelism
            .insert(self.node, parallelism);
        self
    }

    pub fn map<U: Clone + 'static>(&self, function: impl FnMut(T) -> U + 'static) -> DataStream<U> {
        let operator = MapOperator {
            function,
            _types: PhantomData,
        };
        self.add_operator("Map", Box::new(operator), vec![self.input()])
    }

    pub fn filter(&self, predicate: impl FnMut(&T) -> bool + 'static) -> DataStream<T> {
        let operator = FilterOperator {
            predicate,
            _types: PhantomData,
        };
        self.add_operator("Filter", Box::new(operator), vec![self.input()])
    }

    /// Each record becomes the items of what `function` returns.
    pub fn flat_map<I>(&self, function: impl FnMut(T) -> I + 'static) -> DataStream<I::Item>
    where
        I: IntoIterator + 'static,
        I::Item: Clone + 'static,
    {
        let operator = FlatMapOperator {
            function,
            _types: PhantomData,
        };
        self.add_operator("Flat Map", Box::new(operator), vec![self.input()])
    }

    /// Merges this stream with others of the same type; the result's watermark is the
    /// minimum over its non-idle inputs.
    pub fn union(&self, others: &[DataStream<T>]) -> DataStream<T> {
        let inputs = std::iter::once(self.input())
            .chain(others.iter().map(DataStream::input))
            .collect();
        self.add_operator("Union", Box::new(UnionOperator), inputs)
    }

    /// Flink's `keyBy(KeySelector)`.
    /// Keys are checkpointed with the state and timers they scope, hence `StateKey`.
    pub fn key_by<K>(&self, key_selector: impl Fn(&T) -> K + 'static) -> KeyedStream<T, K>
    where
        K: StateKey,
        T: Send,
    {
        KeyedStream {
            stream: self.clone(),
            key_selector: Rc::new(key_selector),
        }
    }

    /// The records the producing operator emitted to `tag` (Flink's `getSideOutput`).
    pub fn get_side_output<U: Clone + 'static>(&self, tag: &OutputTag<U>) -> DataStream<U> {
        DataStream::new(self.graph.clone(), self.node, tag.port())
    }

    /// Flink's `sinkTo`.
    pub fn sink_to(&self, sink: impl Sink<T>) {
        let operator = SinkOperator {
            sink,
            state_key_group: 0,
            _type: PhantomData,
        };
        self.graph.borrow_mut().add_node(
            "Sink".to_string(),
            NodeKind::Operator(Box::new(operator)),
            vec![self.input()],
        );
    }
}

/// A stream partitioned by key: keyed state and timers are scoped to each key.
pub struct KeyedStream<T, K> {
    stream: DataStream<T>,
    key_selector: Rc<dyn Fn(&T) -> K>,
}

impl<T: Clone + Send + 'static, K: StateKey> KeyedStream<T, K> {
    /// Flink's `KeyedStream.process(KeyedProcessFunction)`.
    pub fn process<O: Clone + 'static>(
        &self,
        function: impl KeyedProcessFunction<K, T, O>,
    ) -> DataStream<O> {
        let operator = KeyedProcessOperator {
            key_selector: self.key_selector.clone(),
            function,
            runtime: None,
            _types: PhantomData,
        };
        self.stream.add_keyed_operator(
            "KeyedProcess",
            Box::new(operator),
            vec![self.stream.input()],
            vec![keyed_edge(self.key_selector.clone())],
        )
    }

    /// Flink's `KeyedStream.window(WindowAssigner)`.
    pub fn window(&self, assigner: impl WindowAssigner) -> WindowedStream<T, K> {
        if let Err(error) = assigner.validate() {
            self.stream.graph.borrow_mut().errors.push(error);
        }
        WindowedStream {
            keyed: KeyedStream {
                stream: self.stream.clone(),
                key_selector: self.key_selector.clone(),
            },
            assigner: Box::new(assigner),
            allowed_lateness_ms: 0,
            late_data_port: None,
        }
    }
}

/// A keyed stream cut into windows, waiting for its window function.
pub struct WindowedStream<T, K> {
    keyed: KeyedStream<T, K>,
    assigner: Box<dyn WindowAssigner>,
    allowed_lateness_ms: i64,
    late_data_port: Option<Port>,
}

impl<T: Clone + Send + 'static, K: StateKey> WindowedStream<T, K> {
    /// Keeps window state `lateness` past the window's end so late records re-fire it.
    pub fn allowed_lateness(mut self, lateness: Duration) -> Self {
        self.allowed_lateness_ms = duration_ms(lateness);
        self
    }

    /// Records too late for every window they belong to go to `tag` instead of being
    /// dropped.
    pub fn side_output_late_data(mut self, tag: &OutputTag<T>) -> Self {
        self.late_data_port = Some(tag.port());
        self
    }

    fn build<F>(self, name: &str, function: F) -> DataStream<F::Out>
    where
        F: WindowFunctionAdapter<K, T>,
        F::Out: Clone,
    {
        let edge = keyed_edge(self.keyed.key_selector.clone());
        let operator = WindowOperator::new(
            name.to_string(),
            self.keyed.key_selector.clone(),
            self.assigner,
            self.allowed_lateness_ms,
            self.late_data_port,
            function,
        );
        let stream = &self.keyed.stream;
        stream.add_keyed_operator(name, Box::new(operator), vec![stream.input()], vec![edge])
    }

    /// Incrementally reduces each window's records (the partial result is checkpointed,
    /// hence `StateValue`).
    pub fn reduce(self, function: impl ReduceFunction<T> + 'static) -> DataStream<T>
    where
        T: StateValue,
    {
        self.build(
            "Window(Reduce)",
            ReduceAdapter {
                function,
                _type: PhantomData,
            },
        )
    }

    /// Incrementally aggregates each window's records.
    pub fn aggregate<A>(self, aggregate: A) -> DataStream<A::Out>
    where
        A: AggregateFunction<In = T>,
        A::Out: Clone + 'static,
    {
        self.build(
            "Window(Aggregate)",
            AggregateAdapter {
                aggregate,
                window_function: |_: &K, _: &WindowContext, result: A::Out| result,
                _type: PhantomData,
            },
        )
    }

    /// Aggregates, then turns (key, window, result) into the output (Flink's
    /// `aggregate(AggregateFunction, ProcessWindowFunction)`).
    pub fn aggregate_with<A, O>(
        self,
        aggregate: A,
        window_function: impl FnMut(&K, &WindowContext, A::Out) -> O + 'static,
    ) -> DataStream<O>
    where
        A: AggregateFunction<In = T>,
        O: Clone + 'static,
    {
        self.build(
            "Window(Aggregate)",
            AggregateAdapter {
                aggregate,
                window_function,
                _type: PhantomData,
            },
        )
    }

    /// Computes each window's output from all its records (which are checkpointed, hence
    /// `StateValue`).
    pub fn process<O: Clone + 'static>(
        self,
        function: impl ProcessWindowFunction<K, T, O>,
    ) -> DataStream<O>
    where
        T: StateValue,
    {
        self.build(
            "Window(Process)",
            ProcessAdapter {
                function,
                _type: PhantomData,
            },
        )
    }
}
