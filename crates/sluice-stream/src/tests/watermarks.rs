//! Watermark generation and propagation.

use std::time::Duration;

use super::{deterministic_env, record, watermark};
use crate::{
    CollectSink, CollectionSource, SourceEvent, TumblingEventTimeWindows, WatermarkStrategy,
};

/// The guide's example: events t = 10, 12, 11, 15, 13 s with 5 s out-of-orderness. The
/// guide rounds the watermark to max − 5 s (W(5), W(7), W(7), W(10), W(10)); Flink, and
/// Sluice, emit max − 5 s − 1 ms, and only when it increases.
#[test]
fn bounded_out_of_orderness_watermark_values() {
    let (env, _clock) = deterministic_env();
    let sink = CollectSink::new();
    let seconds = [10_i64, 12, 11, 15, 13];
    env.from_source(
        CollectionSource::of(seconds.iter().map(|s| s * 1000).collect()),
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(5))
            .with_timestamp_assigner(|ts: &i64, _| *ts),
        "events",
    )
    .sink_to(sink.clone());
    env.execute("watermarks").unwrap();
    assert_eq!(sink.watermarks(), vec![4_999, 6_999, 9_999, i64::MAX]);
}

/// Out-of-order input, 5 ms bound, 10 ms tumbling windows summing timestamps.
/// watermark = max − 6:
///   3 → −3 | 12 → 6 | 8 → (6) | 15 → 9: fires [0,10) = 3+8 | 13 → (9) | 21 → 15 |
///   9 → late for [0,10) (cleanup 9 ≤ 15): dropped | 30 → 24: fires [10,20) = 12+15+13 |
///   end → MAX: fires [20,30) = 21, [30,40) = 30.
#[test]
fn out_of_order_events_fire_windows_when_the_watermark_passes() {
    let (env, _clock) = deterministic_env();
    let sink = CollectSink::new();
    env.from_source(
        CollectionSource::of(vec![3_i64, 12, 8, 15, 13, 21, 9, 30]),
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(5))
            .with_timestamp_assigner(|ts: &i64, _| *ts),
        "events",
    )
    .key_by(|_| 'a')
    .window(TumblingEventTimeWindows::of(Duration::from_millis(10)))
    .reduce(|a: i64, b: i64| a + b)
    .sink_to(sink.clone());
    let result = env.execute("out of order").unwrap();
    assert_eq!(
        sink.events(),
        vec![
            watermark(-3),
            watermark(6),
            record(11, 9),
            watermark(9),
            watermark(15),
            record(40, 19),
            watermark(24),
            record(21, 29),
            record(30, 39),
            watermark(i64::MAX),
        ]
    );
    assert_eq!(result.num_late_records_dropped(), 1);
}

/// Two inputs into a union, both with monotonous timestamps (watermark = max − 1).
/// Input A: records at 100..500 while processing time moves 1000 ms between them.
/// Input B: one record at 50, then silence. Round robin, one script step each.
///   - B never idle: the union waits for B at 49 until B ends;
///   - B marks itself idle (explicit marker, second step): the union follows A from then on;
///   - B idle by `with_idleness(2500 ms)`: at processing time 3000 B has been silent for
///     3000 ms ≥ 2500 ms (A has not: its last record was at 2000), so the union jumps to A's
///     299 and follows A.
#[test]
fn idle_input_does_not_hold_back_the_union_watermark() {
    let input_a: Vec<SourceEvent<i64>> = vec![
        SourceEvent::Record(100),
        SourceEvent::ProcessingTime(1000),
        SourceEvent::Record(200),
        SourceEvent::ProcessingTime(2000),
        SourceEvent::Record(300),
        SourceEvent::ProcessingTime(3000),
        SourceEvent::Record(400),
        SourceEvent::ProcessingTime(4000),
        SourceEvent::Record(500),
    ];
    let silence = || std::iter::repeat_n(SourceEvent::NoData, 7);
    type Case = (
        &'static str,
        Vec<SourceEvent<i64>>,
        Option<Duration>,
        Vec<i64>,
    );
    let cases: Vec<Case> = vec![
        (
            "never idle",
            [SourceEvent::Record(50), SourceEvent::NoData]
                .into_iter()
                .chain(silence())
                .collect(),
            None,
            vec![49, i64::MAX],
        ),
        (
            "explicit idle marker",
            [SourceEvent::Record(50), SourceEvent::Idle]
                .into_iter()
                .chain(silence())
                .collect(),
            None,
            vec![49, 99, 199, 299, 399, 499, i64::MAX],
        ),
        (
            "with_idleness",
            [SourceEvent::Record(50), SourceEvent::NoData]
                .into_iter()
                .chain(silence())
                .collect(),
            Some(Duration::from_millis(2500)),
            vec![49, 299, 399, 499, i64::MAX],
        ),
    ];
    for (name, input_b, idleness, expected) in cases {
        let (env, _clock) = deterministic_env();
        let strategy = |idleness: Option<Duration>| {
            let strategy = WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|ts: &i64, _| *ts);
            match idleness {
                Some(timeout) => strategy.with_idleness(timeout),
                None => strategy,
            }
        };
        let a = env.from_source(
            CollectionSource::from_events(input_a.clone()),
            strategy(idleness),
            "a",
        );
        let b = env.from_source(
            CollectionSource::from_events(input_b),
            strategy(idleness),
            "b",
        );
        let sink = CollectSink::new();
        a.union(&[b]).sink_to(sink.clone());
        env.execute(name).unwrap();
        assert_eq!(sink.watermarks(), expected, "{name}");
        let mut records = sink.records();
        records.sort();
        assert_eq!(records, vec![50, 100, 200, 300, 400, 500], "{name}");
    }
}

/// Explicit watermarks in a script pass through unchanged, but never backwards.
#[test]
fn explicit_watermarks_only_increase() {
    let (env, _clock) = deterministic_env();
    let sink = CollectSink::new();
    env.from_source(
        CollectionSource::from_events(vec![
            SourceEvent::Watermark(10),
            SourceEvent::Watermark(5),
            SourceEvent::Watermark(20),
        ]),
        WatermarkStrategy::<i64>::no_watermarks(),
        "script",
    )
    .map(|x| x + 1)
    .sink_to(sink.clone());
    env.execute("explicit").unwrap();
    assert_eq!(sink.watermarks(), vec![10, 20, i64::MAX]);
}

/// When every input of the union is idle the union is idle: it emits the largest
/// watermark an input announced (A's 99; Flink's valve does the same) and then makes no
/// progress, though nothing holds it back, until an input is active again (the ends).
#[test]
fn all_inputs_idle_means_no_progress() {
    let (env, _clock) = deterministic_env();
    let script = |timestamp| {
        vec![
            SourceEvent::Record(timestamp),
            SourceEvent::Idle,
            SourceEvent::NoData,
            SourceEvent::NoData,
        ]
    };
    let strategy = || {
        WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|ts: &i64, _| *ts)
    };
    let a = env.from_source(CollectionSource::from_events(script(100)), strategy(), "a");
    let b = env.from_source(CollectionSource::from_events(script(50)), strategy(), "b");
    let sink = CollectSink::new();
    a.union(&[b]).sink_to(sink.clone());
    env.execute("all idle").unwrap();
    assert_eq!(sink.watermarks(), vec![49, 99, i64::MAX]);
}

/// Periodic emission every 200 ms of processing time (Flink's default mode): the first
/// check is due at the start, the next 200 ms later. Monotonous timestamps.
///   PT 0: record 1000 → due: W999 (next at 200) | PT 100 | record 2000: not due |
///   PT 250: due → W1999 (next at 450) | record 3000: not due | end → MAX.
#[test]
fn periodic_watermarks_follow_the_processing_time_interval() {
    let (mut env, _clock) = deterministic_env();
    env.set_auto_watermark_interval(Duration::from_millis(200));
    let sink = CollectSink::new();
    let script = vec![
        SourceEvent::Record(1000_i64),
        SourceEvent::ProcessingTime(100),
        SourceEvent::Record(2000),
        SourceEvent::ProcessingTime(250),
        SourceEvent::Record(3000),
    ];
    env.from_source(
        CollectionSource::from_events(script),
        WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|ts: &i64, _| *ts),
        "events",
    )
    .sink_to(sink.clone());
    env.execute("periodic").unwrap();
    assert_eq!(sink.watermarks(), vec![999, 1999, i64::MAX]);
}
