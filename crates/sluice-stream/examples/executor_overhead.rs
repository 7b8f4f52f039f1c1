//! What one operator costs per record on the single-threaded executor, apart from any
//! query: a chain of K identity `map`s between a `CollectionSource` of `u64`s and a sink
//! that only counts, for K = 0, 1, 2, 4, 8; the slope is the per-operator cost (the
//! record's `Box<dyn Any>`, the downcast, the work queue), the intercept the source and
//! sink. `bench/nexmark`'s reading of what bounds q0-q2 rests on these figures.
//!
//! ```text
//! cargo run --release -p sluice-stream --example executor_overhead -- [RECORDS]
//! ```
//!
//! Prints one line per chain length: `maps= records= seconds= ns_per_record=`, then the
//! least-squares slope (ns per record per operator) and intercept. Wall-clock time of
//! `execute` on one thread; run it on an idle machine.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use sluice_stream::{
    CollectionSource, Sink, StreamError, StreamExecutionEnvironment, WatermarkStrategy,
};

struct Count(Rc<Cell<u64>>);

impl Sink<u64> for Count {
    fn write(&mut self, _value: u64, _timestamp: Option<i64>) -> Result<(), StreamError> {
        self.0.set(self.0.get() + 1);
        Ok(())
    }
}

fn run(records: u64, maps: usize) -> f64 {
    let env = StreamExecutionEnvironment::new();
    let count = Rc::new(Cell::new(0));
    let mut stream = env.from_source(
        CollectionSource::of((0..records).collect()),
        WatermarkStrategy::no_watermarks(),
        "numbers",
    );
    for _ in 0..maps {
        stream = stream.map(|value: u64| std::hint::black_box(value));
    }
    stream.sink_to(Count(count.clone()));
    let started = Instant::now();
    env.execute("overhead").expect("the job runs");
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(count.get(), records, "every record reached the sink");
    seconds
}

fn main() {
    let records: u64 = std::env::args()
        .nth(1)
        .map(|text| text.parse().expect("RECORDS is a number"))
        .unwrap_or(5_000_000);
    // Warm-up: page in the allocator's arenas and the code.
    run(records / 10, 1);
    let mut points = Vec::new();
    for maps in [0_usize, 1, 2, 4, 8] {
        let seconds = run(records, maps);
        let ns_per_record = seconds * 1e9 / records as f64;
        println!(
            "maps={maps} records={records} seconds={seconds:.3} ns_per_record={ns_per_record:.1}"
        );
        points.push((maps as f64, ns_per_record));
    }
    let n = points.len() as f64;
    let mean_x = points.iter().map(|(x, _)| x).sum::<f64>() / n;
    let mean_y = points.iter().map(|(_, y)| y).sum::<f64>() / n;
    let slope = points
        .iter()
        .map(|(x, y)| (x - mean_x) * (y - mean_y))
        .sum::<f64>()
        / points
            .iter()
            .map(|(x, _)| (x - mean_x).powi(2))
            .sum::<f64>();
    println!(
        "per_operator_ns={slope:.1} source_and_sink_ns={:.1}",
        mean_y - slope * mean_x
    );
}
