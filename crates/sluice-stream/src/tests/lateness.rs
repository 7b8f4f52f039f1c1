//! Allowed lateness, late firing and the late-data side output, at the exact boundaries.

use std::time::Duration;

use super::{deterministic_env, record, watermark};
use crate::{
    CollectSink, CollectionSource, Collector, OutputTag, StreamError, TumblingEventTimeWindows,
    WatermarkStrategy, WindowContext,
};

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Event {
    name: char,
    timestamp: i64,
}

fn names(
    _key: &char,
    _context: &WindowContext,
    events: &[Event],
    out: &mut Collector<'_, Vec<char>>,
) -> Result<(), StreamError> {
    out.collect(events.iter().map(|event| event.name).collect());
    Ok(())
}

/// Window [0,10) (max timestamp 9), allowed lateness 5 ms, so its state lives until the
/// watermark reaches end − 1 + 5 = 14. Monotonous timestamps: watermark = max − 1.
///   a@1 → W0 | b@10 → W9: fires [a] | c@3: late but allowed → re-fires [a,c] |
///   d@14 (an element at end − 1 + d) → W13 | e@4: still allowed → re-fires [a,c,e] |
///   f@15 (an element at end + d) → W14: cleanup, state gone |
///   g@5: too late for its only window → late side output (or dropped) |
///   end → MAX: [10,20) fires [b,d,f].
#[test]
fn allowed_lateness_refires_until_end_minus_one_plus_lateness_then_side_output() {
    let event = |name, timestamp| Event { name, timestamp };
    let events = vec![
        event('a', 1),
        event('b', 10),
        event('c', 3),
        event('d', 14),
        event('e', 4),
        event('f', 15),
        event('g', 5),
    ];
    for with_tag in [true, false] {
        let (env, _clock) = deterministic_env();
        let late_tag = OutputTag::<Event>::new("late-events");
        let main = CollectSink::new();
        let late = CollectSink::new();
        let windowed = env
            .from_source(
                CollectionSource::of(events.clone()),
                WatermarkStrategy::for_monotonous_timestamps()
                    .with_timestamp_assigner(|event: &Event, _| event.timestamp),
                "events",
            )
            .key_by(|_| 'k')
            .window(TumblingEventTimeWindows::of(Duration::from_millis(10)))
            .allowed_lateness(Duration::from_millis(5));
        let windowed = if with_tag {
            windowed.side_output_late_data(&late_tag)
        } else {
            windowed
        };
        let results = windowed.process(names);
        results.sink_to(main.clone());
        results.get_side_output(&late_tag).sink_to(late.clone());
        let result = env.execute("lateness").unwrap();

        assert_eq!(
            main.events(),
            vec![
                watermark(0),
                record(vec!['a'], 9),
                watermark(9),
                record(vec!['a', 'c'], 9),
                watermark(13),
                record(vec!['a', 'c', 'e'], 9),
                watermark(14),
                record(vec!['b', 'd', 'f'], 19),
                watermark(i64::MAX),
            ],
            "with_tag: {with_tag}"
        );
        if with_tag {
            // Late records keep their timestamp; side outputs carry the operator's watermarks.
            assert_eq!(
                late.events(),
                vec![
                    watermark(0),
                    watermark(9),
                    watermark(13),
                    watermark(14),
                    record(event('g', 5), 5),
                    watermark(i64::MAX)
                ]
            );
            assert_eq!(result.num_late_records_dropped(), 0);
        } else {
            assert_eq!(late.records(), vec![]);
            assert_eq!(result.num_late_records_dropped(), 1);
        }
    }
}

/// Without allowed lateness a record is late as soon as the watermark reaches its window's
/// max timestamp: b@10 gives W9, so a@9 is late, a@10 is not.
#[test]
fn zero_lateness_boundary() {
    let cases = [(9_i64, 1_u64), (10, 0)];
    for (late_timestamp, expected_dropped) in cases {
        let (env, _clock) = deterministic_env();
        env.from_source(
            CollectionSource::of(vec![10_i64, late_timestamp]),
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|ts: &i64, _| *ts),
            "events",
        )
        .key_by(|_| 'k')
        .window(TumblingEventTimeWindows::of(Duration::from_millis(10)))
        .reduce(|a: i64, b: i64| a + b)
        .sink_to(CollectSink::new());
        let result = env.execute("zero lateness").unwrap();
        assert_eq!(
            result.num_late_records_dropped(),
            expected_dropped,
            "record at {late_timestamp}"
        );
    }
}
