//! Window assignment, firing and merging.

use std::time::Duration;

use super::{deterministic_env, record, watermark};
use crate::{
    AggregateFunction, CollectSink, CollectionSource, Collector, EventTimeSessionWindows,
    SlidingEventTimeWindows, SlidingProcessingTimeWindows, SourceEvent, StreamError, TimeWindow,
    TumblingEventTimeWindows, TumblingProcessingTimeWindows, WatermarkEmission, WatermarkStrategy,
    WindowContext,
};

/// A window's bounds and its elements, as a `ProcessWindowFunction` sees them.
type Contents = (i64, i64, Vec<i64>);

fn list_contents(
    _key: &char,
    context: &WindowContext,
    elements: &[i64],
    out: &mut Collector<'_, Contents>,
) -> Result<(), StreamError> {
    out.collect((context.window.start, context.window.end, elements.to_vec()));
    Ok(())
}

/// Size 10, slide 5: each element is in two windows.
///   3 → [−5,5), [0,10); 7 → [0,10), [5,15); 12 → [5,15), [10,20).
/// Monotonous watermarks (max − 1): 2, 6 (fires [−5,5)), 11 (fires [0,10)), then MAX.
#[test]
fn sliding_windows_overlap() {
    let (env, _clock) = deterministic_env();
    let sink = CollectSink::new();
    env.from_source(
        CollectionSource::of(vec![3_i64, 7, 12]),
        WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|ts: &i64, _| *ts),
        "events",
    )
    .key_by(|_| 'k')
    .window(SlidingEventTimeWindows::of(
        Duration::from_millis(10),
        Duration::from_millis(5),
    ))
    .process(list_contents)
    .sink_to(sink.clone());
    env.execute("sliding").unwrap();
    assert_eq!(
        sink.events(),
        vec![
            watermark(2),
            record((-5, 5, vec![3]), 4),
            watermark(6),
            record((0, 10, vec![3, 7]), 9),
            watermark(11),
            record((5, 15, vec![7, 12]), 14),
            record((10, 20, vec![12]), 19),
            watermark(i64::MAX),
        ]
    );
}

/// Windows before the epoch: size 10 puts −15 in [−20,−10), −10 and −1 in [−10,0), 0 and
/// 9 in [0,10) (Java's `%` would have put −1 in [0,10)). Everything fires at the end.
#[test]
fn negative_timestamps_fall_into_the_right_windows() {
    let (mut env, _clock) = deterministic_env();
    env.set_watermark_emission(WatermarkEmission::Disabled);
    let sink = CollectSink::new();
    env.from_source(
        CollectionSource::of(vec![-1_i64, -15, 0, -10, 9]),
        WatermarkStrategy::no_watermarks().with_timestamp_assigner(|ts: &i64, _| *ts),
        "events",
    )
    .key_by(|_| 'k')
    .window(TumblingEventTimeWindows::of(Duration::from_millis(10)))
    .process(list_contents)
    .sink_to(sink.clone());
    env.execute("negative").unwrap();
    assert_eq!(
        sink.records(),
        vec![
            (-20, -10, vec![-15]),
            (-10, 0, vec![-1, -10]),
            (0, 10, vec![0, 9])
        ]
    );
}

#[derive(Debug, Clone, PartialEq)]
struct Click {
    user: &'static str,
    value: i64,
    timestamp: i64,
}

/// Sum and count, mergeable.
struct SumCount;

impl AggregateFunction for SumCount {
    type In = Click;
    type Acc = (i64, u32);
    type Out = (i64, u32);
    fn create_accumulator(&self) -> (i64, u32) {
        (0, 0)
    }
    fn add(&self, click: Click, (sum, count): (i64, u32)) -> (i64, u32) {
        (sum + click.value, count + 1)
    }
    fn get_result(&self, accumulator: &(i64, u32)) -> (i64, u32) {
        *accumulator
    }
    fn merge(&self, a: (i64, u32), b: (i64, u32)) -> (i64, u32) {
        (a.0 + b.0, a.1 + b.1)
    }
}

/// Sessions with a 10 ms gap, 20 ms out-of-orderness (watermark = max − 21).
///   u: 0 → [0,10); 5 → [5,15) merges into [0,15); 20 → [20,30) (15 < 20: separate);
///      12 arrives late in processing order → [12,22) touches both → one session [0,30),
///      accumulators merged: sum 1+2+3+4 = 10, count 4.
///   v: 0 → [0,10); 10 → [10,20) touches → [0,20): sum 15, count 2.
///   u: 50 → watermark 29 fires v [0,20) (timer 19) then u [0,30) (timer 29);
///   end → u [50,60).
#[test]
fn session_windows_merge_when_bridged_by_a_late_arriving_element() {
    let (env, _clock) = deterministic_env();
    let sink = CollectSink::new();
    let click = |user, value, timestamp| Click {
        user,
        value,
        timestamp,
    };
    let clicks = vec![
        click("u", 1, 0),
        click("u", 2, 5),
        click("v", 7, 0),
        click("v", 8, 10),
        click("u", 3, 20),
        click("u", 4, 12),
        click("u", 5, 50),
    ];
    env.from_source(
        CollectionSource::of(clicks),
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(20))
            .with_timestamp_assigner(|click: &Click, _| click.timestamp),
        "clicks",
    )
    .key_by(|click| click.user.to_string())
    .window(EventTimeSessionWindows::with_gap(Duration::from_millis(10)))
    .aggregate_with(SumCount, |user, context, (sum, count)| {
        (user.clone(), context.window, sum, count)
    })
    .sink_to(sink.clone());
    env.execute("sessions").unwrap();
    assert_eq!(
        sink.records(),
        vec![
            ("v".to_string(), TimeWindow::new(0, 20), 15, 2),
            ("u".to_string(), TimeWindow::new(0, 30), 10, 4),
            ("u".to_string(), TimeWindow::new(50, 60), 5, 1)
        ]
    );
}

/// Processing-time windows use the clock at arrival, not record timestamps: 1 s tumbling
/// windows; a, b at 1000 and c at 1500 go to [1000,2000), which fires when the clock
/// reaches 1999 (here 2000); d at 2000 goes to [2000,3000), fired at 3500; e at 3500 is
/// pending at the end of input and discarded, as Flink does.
/// Sliding 2 s / 1 s: a, b, c are in [0,2000) and [1000,3000); d in [1000,3000) and
/// [2000,4000); at 2000 [0,2000) fires, at 3500 [1000,3000); [2000,4000) is pending.
#[test]
fn processing_time_windows_fire_on_the_clock() {
    let script = vec![
        SourceEvent::ProcessingTime(1000),
        SourceEvent::Record('a'),
        SourceEvent::Record('b'),
        SourceEvent::ProcessingTime(1500),
        SourceEvent::Record('c'),
        SourceEvent::ProcessingTime(2000),
        SourceEvent::Record('d'),
        SourceEvent::ProcessingTime(3500),
        SourceEvent::Record('e'),
    ];
    type Assigner = Box<dyn Fn() -> Box<dyn crate::WindowAssigner>>;
    type Case = (&'static str, Assigner, Vec<(i64, i64, String)>);
    let cases: Vec<Case> = vec![
        (
            "tumbling",
            Box::new(|| Box::new(TumblingProcessingTimeWindows::of(Duration::from_secs(1)))),
            vec![(1000, 2000, "abc".into()), (2000, 3000, "d".into())],
        ),
        (
            "sliding",
            Box::new(|| {
                Box::new(SlidingProcessingTimeWindows::of(
                    Duration::from_secs(2),
                    Duration::from_secs(1),
                ))
            }),
            vec![(0, 2000, "abc".into()), (1000, 3000, "abcd".into())],
        ),
    ];
    for (name, assigner, expected) in cases {
        let (env, _clock) = deterministic_env();
        let sink = CollectSink::new();
        env.from_source(
            CollectionSource::from_events(script.clone()),
            WatermarkStrategy::no_watermarks(),
            "letters",
        )
        .key_by(|_| 'k')
        .window(BoxedAssigner(assigner()))
        .process(
            |_: &char,
             context: &WindowContext,
             letters: &[char],
             out: &mut Collector<'_, (i64, i64, String)>| {
                out.collect((
                    context.window.start,
                    context.window.end,
                    letters.iter().collect::<String>(),
                ));
                Ok(())
            },
        )
        .sink_to(sink.clone());
        env.execute(name).unwrap();
        assert_eq!(sink.records(), expected, "{name}");
    }
}

/// Lets a test pick an assigner at run time.
struct BoxedAssigner(Box<dyn crate::WindowAssigner>);

impl crate::WindowAssigner for BoxedAssigner {
    fn assign_windows(&self, timestamp: i64) -> Vec<TimeWindow> {
        self.0.assign_windows(timestamp)
    }
    fn is_event_time(&self) -> bool {
        self.0.is_event_time()
    }
    fn is_merging(&self) -> bool {
        self.0.is_merging()
    }
    fn validate(&self) -> Result<(), String> {
        self.0.validate()
    }
}

#[test]
fn invalid_window_parameters_fail_the_job() {
    let (env, _clock) = deterministic_env();
    env.from_collection(vec![1_i64])
        .key_by(|_| 0)
        .window(TumblingEventTimeWindows::with_offset(
            Duration::from_millis(10),
            10,
        ))
        .reduce(|a: i64, b: i64| a + b)
        .sink_to(CollectSink::new());
    assert!(matches!(
        env.execute("invalid"),
        Err(StreamError::InvalidConfiguration(_))
    ));
}

#[test]
fn event_time_windows_need_timestamps() {
    let (env, _clock) = deterministic_env();
    env.from_collection(vec![1_i64])
        .key_by(|_| 0)
        .window(TumblingEventTimeWindows::of(Duration::from_millis(10)))
        .reduce(|a: i64, b: i64| a + b)
        .sink_to(CollectSink::new());
    assert!(matches!(
        env.execute("no timestamps"),
        Err(StreamError::MissingTimestamp { .. })
    ));
}
