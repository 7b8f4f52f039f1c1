//! `nexmark-dump N [SEED] [EVENTS_PER_SECOND]`: the first N events of Sluice's generator
//! (max_events = N, other fields at their defaults) as JSON lines on stdout.
use std::io::{BufWriter, Write};

use sluice_stream::nexmark::{Generator, GeneratorConfig};

fn main() {
    let arguments: Vec<u64> = std::env::args()
        .skip(1)
        .map(|argument| argument.parse().expect("arguments are numbers"))
        .collect();
    let events = *arguments
        .first()
        .expect("usage: nexmark-dump N [SEED] [EVENTS_PER_SECOND]");
    let defaults = GeneratorConfig::default();
    let config = GeneratorConfig {
        seed: arguments.get(1).copied().unwrap_or(defaults.seed),
        events_per_second: arguments
            .get(2)
            .copied()
            .unwrap_or(defaults.events_per_second),
        max_events: events.max(1),
        ..defaults
    };
    let generator = Generator::new(config).expect("valid config");
    let mut out = BufWriter::new(std::io::stdout().lock());
    for event in generator.take(events as usize) {
        writeln!(out, "{}", event.to_json()).expect("stdout");
    }
    out.flush().expect("stdout");
}
