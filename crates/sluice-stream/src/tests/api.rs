//! The stateless part of the API and graph shapes: flat_map, fan-out, diamonds, side
//! outputs of a process function.

use super::deterministic_env;
use crate::{CollectSink, Collector, Context, KeyedProcessFunction, OutputTag, StreamError};

/// One stream feeding two branches that meet again in a union (a diamond): every record
/// reaches both branches (copied), and the union sees both copies.
#[test]
fn fan_out_and_diamond() {
    let (env, _clock) = deterministic_env();
    let words = env
        .from_collection(vec!["a b", "c"])
        .flat_map(|line: &str| line.split(' ').map(str::to_string).collect::<Vec<_>>());
    let upper = words.map(|word| word.to_uppercase());
    let doubled = words.map(|word| word.repeat(2));
    let all = CollectSink::new();
    let lower = CollectSink::new();
    upper.union(&[doubled]).sink_to(all.clone());
    words.sink_to(lower.clone());
    let result = env.execute("diamond").unwrap();
    let mut merged = all.records();
    merged.sort();
    assert_eq!(merged, vec!["A", "B", "C", "aa", "bb", "cc"]);
    assert_eq!(lower.records(), vec!["a", "b", "c"]);
    let flat_map = &result.operators[1];
    assert_eq!(
        (
            flat_map.name.as_str(),
            flat_map.num_records_in,
            flat_map.num_records_out
        ),
        ("Flat Map", 2, 3)
    );
}

/// Routes negative numbers to a side output, keeps the rest.
struct SplitNegatives {
    negatives: OutputTag<i64>,
}

impl KeyedProcessFunction<bool, i64, i64> for SplitNegatives {
    fn process_element(
        &mut self,
        value: i64,
        ctx: &mut Context<'_, bool>,
        out: &mut Collector<'_, i64>,
    ) -> Result<(), StreamError> {
        if value < 0 {
            ctx.output(&self.negatives, value);
        } else {
            out.collect(value);
        }
        Ok(())
    }
}

#[test]
fn process_function_side_output() {
    let (env, _clock) = deterministic_env();
    let negatives = OutputTag::<i64>::new("negatives");
    let positives_sink = CollectSink::new();
    let negatives_sink = CollectSink::new();
    let other_type_sink = CollectSink::new();
    let main = env
        .from_collection(vec![3_i64, -1, 4, -5])
        .key_by(|value| *value >= 0)
        .process(SplitNegatives {
            negatives: negatives.clone(),
        });
    main.sink_to(positives_sink.clone());
    main.get_side_output(&negatives)
        .sink_to(negatives_sink.clone());
    // Same id, other type: a different output, which nothing writes to.
    main.get_side_output(&OutputTag::<String>::new("negatives"))
        .sink_to(other_type_sink.clone());
    env.execute("side output").unwrap();
    assert_eq!(positives_sink.records(), vec![3, 4]);
    assert_eq!(negatives_sink.records(), vec![-1, -5]);
    assert_eq!(other_type_sink.records(), Vec::<String>::new());
}

/// A record that explodes past the executor's bound fails the job instead of exhausting
/// memory.
#[test]
fn work_queue_is_bounded() {
    let (mut env, _clock) = deterministic_env();
    env.set_work_queue_events_max(100);
    env.from_collection(vec![101_usize])
        .flat_map(|count| std::iter::repeat_n(0_u8, count))
        .sink_to(CollectSink::new());
    assert!(matches!(
        env.execute("explode"),
        Err(StreamError::WorkQueueFull { .. })
    ));
}
