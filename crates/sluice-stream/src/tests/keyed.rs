//! Keyed process functions: timers and keyed state with TTL.

use std::time::Duration;

use super::{deterministic_env, record, watermark};
use crate::{
    AggregateFunction, AggregatingState, AggregatingStateDescriptor, CollectSink, CollectionSource,
    Collector, Context, KeyedProcessFunction, ListState, ListStateDescriptor, MapState,
    MapStateDescriptor, ReducingState, ReducingStateDescriptor, RuntimeContext, SourceEvent,
    StateError, StateTtlConfig, StreamError, TimeDomain, TtlUpdateType, ValueState,
    ValueStateDescriptor, WatermarkEmission, WatermarkStrategy,
};

/// Registers the event-time timers a record asks for, plus a processing-time timer for
/// key "p"; reports each firing as (key, time, domain).
struct TimerProbe;

impl KeyedProcessFunction<char, (char, Vec<i64>), (char, i64, TimeDomain)> for TimerProbe {
    fn process_element(
        &mut self,
        (key, times): (char, Vec<i64>),
        ctx: &mut Context<'_, char>,
        _out: &mut Collector<'_, (char, i64, TimeDomain)>,
    ) -> Result<(), StreamError> {
        for time in times {
            if key == 'p' {
                ctx.timer_service().register_processing_time_timer(time);
            } else {
                ctx.timer_service().register_event_time_timer(time);
            }
        }
        Ok(())
    }

    fn on_timer(
        &mut self,
        timestamp: i64,
        ctx: &mut Context<'_, char>,
        out: &mut Collector<'_, (char, i64, TimeDomain)>,
    ) -> Result<(), StreamError> {
        let domain = ctx.time_domain().expect("inside on_timer");
        let key = *ctx.get_current_key();
        out.collect((key, timestamp, domain));
        // A timer registered while firing that is already due fires in the same advance.
        if key == 'a' && timestamp == 10 {
            ctx.timer_service().register_event_time_timer(12);
        }
        Ok(())
    }
}

/// Timers: a@30, a@10, b@10, b@20, then duplicates a@10 and b@20 (kept once), p@5000
/// (processing time). Watermark 15 fires (a,10), (b,10) in registration order, then (a,12)
/// registered by the (a,10) firing; the clock reaching 6000 fires (p,5000); watermark 25
/// fires (b,20); the end fires (a,30).
#[test]
fn timers_fire_in_timestamp_order_deduplicated() {
    let (mut env, _clock) = deterministic_env();
    env.set_watermark_emission(WatermarkEmission::Disabled);
    let sink = CollectSink::new();
    let script = vec![
        SourceEvent::Record(('a', vec![30, 10])),
        SourceEvent::Record(('b', vec![10, 20])),
        SourceEvent::Record(('a', vec![10])),
        SourceEvent::Record(('b', vec![20])),
        SourceEvent::Record(('p', vec![5000])),
        SourceEvent::Watermark(15),
        SourceEvent::ProcessingTime(6000),
        SourceEvent::Watermark(25),
    ];
    env.from_source(
        CollectionSource::from_events(script),
        WatermarkStrategy::no_watermarks(),
        "timers",
    )
    .key_by(|(key, _)| *key)
    .process(TimerProbe)
    .sink_to(sink.clone());
    env.execute("timers").unwrap();
    let event = TimeDomain::EventTime;
    assert_eq!(
        sink.events(),
        vec![
            record(('a', 10, event), 10),
            record(('b', 10, event), 10),
            record(('a', 12, event), 12),
            watermark(15),
            crate::SinkEvent::Record {
                value: ('p', 5000, TimeDomain::ProcessingTime),
                timestamp: None
            },
            record(('b', 20, event), 20),
            watermark(25),
            record(('a', 30, event), 30),
            watermark(i64::MAX),
        ]
    );
}

#[derive(Debug, Clone, PartialEq)]
enum Command {
    Write(i64),
    Read,
}

type Snapshot = (Option<i64>, Vec<i64>, Vec<(i64, i64)>);

type TtlStates = (ValueState<i64>, ListState<i64>, MapState<i64, i64>);

/// Writes a value, a list element and a map entry; reads all three back.
struct TtlProbe {
    ttl: StateTtlConfig,
    states: Option<TtlStates>,
}

impl KeyedProcessFunction<char, Command, Snapshot> for TtlProbe {
    fn open(&mut self, runtime: &RuntimeContext) -> Result<(), StreamError> {
        let value =
            runtime.get_state(&ValueStateDescriptor::new("value").enable_time_to_live(self.ttl))?;
        let list = runtime
            .get_list_state(&ListStateDescriptor::new("list").enable_time_to_live(self.ttl))?;
        let map =
            runtime.get_map_state(&MapStateDescriptor::new("map").enable_time_to_live(self.ttl))?;
        // No record is being processed: there is no current key.
        assert!(matches!(
            value.value(),
            Err(StateError::NoKeyContext { .. })
        ));
        self.states = Some((value, list, map));
        Ok(())
    }

    fn process_element(
        &mut self,
        command: Command,
        _ctx: &mut Context<'_, char>,
        out: &mut Collector<'_, Snapshot>,
    ) -> Result<(), StreamError> {
        let (value, list, map) = self.states.as_ref().expect("opened");
        match command {
            Command::Write(number) => {
                value.update(number)?;
                list.add(number)?;
                map.put(number, number * 10)?;
            }
            Command::Read => {
                let mut entries = map.entries()?;
                entries.sort();
                out.collect((value.value()?, list.get()?, entries));
            }
        }
        Ok(())
    }
}

/// TTL 1000 ms, state expired once now ≥ last access + 1000.
/// Script (processing time, command): (0, write 1), (600, write 2), (900, read),
/// (1100, read), (1700, read).
///   OnCreateAndWrite: at 900 all there; at 1100 element/entry 1 (written at 0) expired;
///     at 1700 everything (last written at 600) expired.
///   OnReadAndWrite: the read at 900 refreshes everything to 900, the read at 1100 to
///     1100, so at 1700 everything is still there.
#[test]
fn state_ttl_expires_with_the_injected_clock() {
    let script = vec![
        SourceEvent::Record(Command::Write(1)),
        SourceEvent::ProcessingTime(600),
        SourceEvent::Record(Command::Write(2)),
        SourceEvent::ProcessingTime(900),
        SourceEvent::Record(Command::Read),
        SourceEvent::ProcessingTime(1100),
        SourceEvent::Record(Command::Read),
        SourceEvent::ProcessingTime(1700),
        SourceEvent::Record(Command::Read),
    ];
    let all: Snapshot = (Some(2), vec![1, 2], vec![(1, 10), (2, 20)]);
    let cases: Vec<(TtlUpdateType, Vec<Snapshot>)> = vec![
        (
            TtlUpdateType::OnCreateAndWrite,
            vec![
                all.clone(),
                (Some(2), vec![2], vec![(2, 20)]),
                (None, vec![], vec![]),
            ],
        ),
        (
            TtlUpdateType::OnReadAndWrite,
            vec![all.clone(), all.clone(), all.clone()],
        ),
    ];
    for ((update_type, expected), backend) in cases
        .iter()
        .flat_map(|case| super::state_backends().map(move |backend| (case, backend)))
    {
        let update_type = *update_type;
        let (mut env, _clock) = deterministic_env();
        env.set_state_backend(backend.clone());
        let sink = CollectSink::new();
        let probe = TtlProbe {
            ttl: StateTtlConfig::new(Duration::from_millis(1000)).with_update_type(update_type),
            states: None,
        };
        env.from_source(
            CollectionSource::from_events(script.clone()),
            WatermarkStrategy::no_watermarks(),
            "commands",
        )
        .key_by(|_| 'k')
        .process(probe)
        .sink_to(sink.clone());
        env.execute("ttl").unwrap();
        assert_eq!(&sink.records(), expected, "{update_type:?} {backend:?}");
    }
}

struct Average;

impl AggregateFunction for Average {
    type In = i64;
    type Acc = (i64, i64);
    type Out = f64;
    fn create_accumulator(&self) -> (i64, i64) {
        (0, 0)
    }
    fn add(&self, value: i64, (sum, count): (i64, i64)) -> (i64, i64) {
        (sum + value, count + 1)
    }
    fn get_result(&self, (sum, count): &(i64, i64)) -> f64 {
        *sum as f64 / *count as f64
    }
    fn merge(&self, a: (i64, i64), b: (i64, i64)) -> (i64, i64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

/// Running maximum (ReducingState) and average (AggregatingState) per key.
#[derive(Default)]
struct RunningStats {
    states: Option<(ReducingState<i64>, AggregatingState<Average>)>,
}

impl KeyedProcessFunction<char, (char, i64), (char, i64, f64)> for RunningStats {
    fn open(&mut self, runtime: &RuntimeContext) -> Result<(), StreamError> {
        let max = runtime
            .get_reducing_state(&ReducingStateDescriptor::new("max", |a: i64, b: i64| {
                a.max(b)
            }))?;
        let average =
            runtime.get_aggregating_state(&AggregatingStateDescriptor::new("average", Average))?;
        // The same name with another type is refused.
        assert!(matches!(
            runtime.get_state(&ValueStateDescriptor::<String>::new("max")),
            Err(StateError::TypeMismatch { .. })
        ));
        self.states = Some((max, average));
        Ok(())
    }

    fn process_element(
        &mut self,
        (key, value): (char, i64),
        _ctx: &mut Context<'_, char>,
        out: &mut Collector<'_, (char, i64, f64)>,
    ) -> Result<(), StreamError> {
        let (max, average) = self.states.as_ref().expect("opened");
        max.add(value)?;
        average.add(value)?;
        out.collect((
            key,
            max.get()?.expect("just added"),
            average.get()?.expect("just added"),
        ));
        Ok(())
    }
}

#[test]
fn reducing_and_aggregating_state_are_per_key() {
    let (env, _clock) = deterministic_env();
    let sink = CollectSink::new();
    env.from_collection(vec![('x', 4), ('y', 10), ('x', 2), ('x', 9), ('y', 1)])
        .key_by(|(key, _)| *key)
        .process(RunningStats::default())
        .sink_to(sink.clone());
    env.execute("running stats").unwrap();
    assert_eq!(
        sink.records(),
        vec![
            ('x', 4, 4.0),
            ('y', 10, 10.0),
            ('x', 4, 3.0),
            ('x', 9, 5.0),
            ('y', 10, 5.5)
        ]
    );
}
