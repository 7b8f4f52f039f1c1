//! Kafka's statistics (`org.apache.kafka.common.metrics.stats`), with the same arithmetic:
//! `Avg`, `Max`, `Min`, `WindowedSum` and `WindowedCount` over sampled windows, `Rate`
//! over them, `CumulativeSum`, `CumulativeCount` and `Value`.
//!
//! A sampled statistic keeps `metrics.num.samples` + 1 samples (Kafka keeps one extra so a
//! sample that began before the monitored span but overlaps it still counts). A record
//! goes to the current sample; once that sample is `metrics.sample.window.ms` old, the
//! next one (the oldest, recycled) begins at the record's time. Before measuring, every
//! sample whose last event is `samples × window` old or more is reset to start now.
//! A rate is the windowed sum divided by the time since the oldest sample began, counted
//! as at least `samples − 1` whole windows (so a young rate is not inflated) and at least
//! 1 ms. With no events in the window, `Avg`, `Max` and `Min` report NaN and a rate 0,
//! as Kafka does (Kafka's `Max` once reported -Infinity; today it reports NaN).
//!
//! Times are milliseconds on one clock per registry; nothing here reads a clock.

use super::MetricConfig;

/// One sample of a sampled statistic (Kafka's `SampledStat.Sample`).
#[derive(Debug, Clone, Copy)]
struct Sample {
    value: f64,
    event_count: u64,
    start_ms: i64,
    last_event_ms: i64,
}

impl Sample {
    fn new(initial: f64, now_ms: i64) -> Sample {
        Sample {
            value: initial,
            event_count: 0,
            start_ms: now_ms,
            last_event_ms: now_ms,
        }
    }

    fn reset(&mut self, initial: f64, now_ms: i64) {
        *self = Sample::new(initial, now_ms);
    }

    fn is_complete(&self, now_ms: i64, config: &MetricConfig) -> bool {
        now_ms - self.start_ms >= config.time_window_ms || self.event_count >= config.event_window
    }
}

/// What a sampled statistic combines its samples into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SampledKind {
    Avg,
    Max,
    Min,
    /// Kafka's `WindowedSum`.
    Sum,
    /// Kafka's `WindowedCount`: every record counts 1.
    Count,
}

impl SampledKind {
    fn initial(self) -> f64 {
        match self {
            SampledKind::Avg | SampledKind::Sum | SampledKind::Count => 0.0,
            SampledKind::Max => f64::NEG_INFINITY,
            // Kafka starts Min at Double.MAX_VALUE.
            SampledKind::Min => f64::MAX,
        }
    }
}

/// Kafka's `SampledStat`.
#[derive(Debug, Clone)]
pub(crate) struct SampledStat {
    kind: SampledKind,
    /// Created with room for `samples + 1`, so recording never allocates.
    samples: Vec<Sample>,
    current: usize,
}

impl SampledStat {
    pub(crate) fn new(kind: SampledKind, config: &MetricConfig) -> SampledStat {
        SampledStat {
            kind,
            samples: Vec::with_capacity(config.samples + 1),
            current: 0,
        }
    }

    pub(crate) fn record(&mut self, config: &MetricConfig, value: f64, now_ms: i64) {
        let initial = self.kind.initial();
        if self.samples.is_empty() {
            self.samples.push(Sample::new(initial, now_ms));
        }
        if self.samples[self.current].is_complete(now_ms, config) {
            self.advance(config, now_ms);
        }
        let sample = &mut self.samples[self.current];
        match self.kind {
            SampledKind::Avg | SampledKind::Sum => sample.value += value,
            SampledKind::Count => sample.value += 1.0,
            SampledKind::Max => sample.value = sample.value.max(value),
            SampledKind::Min => sample.value = sample.value.min(value),
        }
        sample.event_count += 1;
        sample.last_event_ms = now_ms;
    }

    fn advance(&mut self, config: &MetricConfig, now_ms: i64) {
        let initial = self.kind.initial();
        self.current = (self.current + 1) % (config.samples + 1);
        if self.current >= self.samples.len() {
            debug_assert_eq!(self.current, self.samples.len());
            self.samples.push(Sample::new(initial, now_ms));
        } else {
            self.samples[self.current].reset(initial, now_ms);
        }
    }

    /// Resets the samples whose last event is older than the monitored span.
    fn purge_obsolete(&mut self, config: &MetricConfig, now_ms: i64) {
        let expire_age_ms = config.samples as i64 * config.time_window_ms;
        let initial = self.kind.initial();
        for sample in &mut self.samples {
            if now_ms - sample.last_event_ms >= expire_age_ms {
                sample.reset(initial, now_ms);
            }
        }
    }

    /// The start of the oldest sample (creating one at `now_ms` if there is none, as
    /// Kafka's `oldest` does).
    fn oldest_start_ms(&mut self, now_ms: i64) -> i64 {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(self.kind.initial(), now_ms));
        }
        self.samples
            .iter()
            .map(|sample| sample.start_ms)
            .min()
            .unwrap_or(now_ms)
    }

    pub(crate) fn measure(&mut self, config: &MetricConfig, now_ms: i64) -> f64 {
        self.purge_obsolete(config, now_ms);
        let events: u64 = self.samples.iter().map(|sample| sample.event_count).sum();
        let values = self.samples.iter().map(|sample| sample.value);
        match self.kind {
            SampledKind::Sum | SampledKind::Count => values.sum(),
            _ if events == 0 => f64::NAN,
            SampledKind::Avg => values.sum::<f64>() / events as f64,
            SampledKind::Max => values.fold(f64::NEG_INFINITY, f64::max),
            SampledKind::Min => values.fold(f64::MAX, f64::min),
        }
    }
}

/// Kafka's `Rate`: a windowed sum (or count) per unit of time.
#[derive(Debug, Clone)]
pub(crate) struct Rate {
    stat: SampledStat,
    /// Milliseconds per unit: 1000 for per second, 3 600 000 for per hour.
    unit_ms: f64,
}

impl Rate {
    /// `kind` is [`SampledKind::Sum`] (the rate of the recorded values) or
    /// [`SampledKind::Count`] (the rate of recordings).
    pub(crate) fn new(kind: SampledKind, unit_ms: f64, config: &MetricConfig) -> Rate {
        debug_assert!(matches!(kind, SampledKind::Sum | SampledKind::Count));
        Rate {
            stat: SampledStat::new(kind, config),
            unit_ms,
        }
    }

    pub(crate) fn record(&mut self, config: &MetricConfig, value: f64, now_ms: i64) {
        self.stat.record(config, value, now_ms);
    }

    pub(crate) fn measure(&mut self, config: &MetricConfig, now_ms: i64) -> f64 {
        let value = self.stat.measure(config, now_ms);
        value / (self.window_size_ms(config, now_ms) as f64 / self.unit_ms)
    }

    /// Kafka's `Rate.windowSize`: the time since the oldest sample began, at least
    /// `samples − 1` whole windows, at least 1 ms.
    fn window_size_ms(&mut self, config: &MetricConfig, now_ms: i64) -> i64 {
        self.stat.purge_obsolete(config, now_ms);
        let mut elapsed_ms = now_ms - self.stat.oldest_start_ms(now_ms);
        let full_windows = elapsed_ms / config.time_window_ms;
        let min_full_windows = config.samples as i64 - 1;
        if full_windows < min_full_windows {
            elapsed_ms += (min_full_windows - full_windows) * config.time_window_ms;
        }
        elapsed_ms.max(1)
    }
}

/// One measurable statistic of a sensor.
#[derive(Debug, Clone)]
pub(crate) enum Stat {
    Sampled(SampledStat),
    Rate(Rate),
    /// Kafka's `CumulativeSum`.
    CumulativeSum(f64),
    /// Kafka's `CumulativeCount`: every record counts 1.
    CumulativeCount(f64),
    /// Kafka's `Value`: the last recorded value (0 before any).
    Value(f64),
}

impl Stat {
    pub(crate) fn record(&mut self, config: &MetricConfig, value: f64, now_ms: i64) {
        match self {
            Stat::Sampled(stat) => stat.record(config, value, now_ms),
            Stat::Rate(rate) => rate.record(config, value, now_ms),
            Stat::CumulativeSum(total) => *total += value,
            Stat::CumulativeCount(total) => *total += 1.0,
            Stat::Value(last) => *last = value,
        }
    }

    pub(crate) fn measure(&mut self, config: &MetricConfig, now_ms: i64) -> f64 {
        match self {
            Stat::Sampled(stat) => stat.measure(config, now_ms),
            Stat::Rate(rate) => rate.measure(config, now_ms),
            Stat::CumulativeSum(total) | Stat::CumulativeCount(total) => *total,
            Stat::Value(last) => *last,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kafka's defaults: 2 samples of 30 s.
    fn config() -> MetricConfig {
        MetricConfig::default()
    }

    fn small(samples: usize, window_ms: i64) -> MetricConfig {
        MetricConfig {
            samples,
            time_window_ms: window_ms,
            event_window: u64::MAX,
        }
    }

    /// (time in ms, value) recordings.
    type Recorded = &'static [(i64, f64)];

    /// (kind, recorded, measured at, expected)
    #[test]
    fn sampled_stats_combine_their_windows_as_kafkas() {
        let nan = f64::NAN;
        let cases: &[(SampledKind, Recorded, i64, f64)] = &[
            // No events: NaN for Avg, Max and Min (Kafka's `count == 0 ? NaN`), 0 for sums.
            (SampledKind::Avg, &[], 0, nan),
            (SampledKind::Max, &[], 0, nan),
            (SampledKind::Min, &[], 0, nan),
            (SampledKind::Sum, &[], 0, 0.0),
            (SampledKind::Count, &[], 0, 0.0),
            // Events in one window.
            (
                SampledKind::Avg,
                &[(0, 10.0), (10, 20.0), (20, 60.0)],
                30,
                30.0,
            ),
            (
                SampledKind::Max,
                &[(0, 10.0), (10, 60.0), (20, 20.0)],
                30,
                60.0,
            ),
            (
                SampledKind::Min,
                &[(0, 10.0), (10, 60.0), (20, 20.0)],
                30,
                10.0,
            ),
            (SampledKind::Sum, &[(0, 10.0), (10, 60.0)], 30, 70.0),
            (SampledKind::Count, &[(0, 10.0), (10, 60.0)], 30, 2.0),
            // Negative values are kept as they are (a lag below zero, say).
            (SampledKind::Max, &[(0, -5.0), (1, -3.0)], 2, -3.0),
            // Across two windows (0-30 s and 30-60 s): both count.
            (SampledKind::Avg, &[(0, 10.0), (31_000, 30.0)], 40_000, 20.0),
            (SampledKind::Max, &[(0, 90.0), (31_000, 30.0)], 40_000, 90.0),
            // The first sample's last event (0) is 60 s old at 60 s: purged.
            (SampledKind::Max, &[(0, 90.0), (31_000, 30.0)], 60_000, 30.0),
            (SampledKind::Sum, &[(0, 90.0), (31_000, 30.0)], 60_000, 30.0),
            // A sample that began before the span but had an event inside it stays.
            (SampledKind::Max, &[(0, 90.0), (29_000, 80.0)], 60_000, 90.0),
            // Everything 60 s old or more: no events, NaN.
            (SampledKind::Avg, &[(0, 10.0), (5_000, 20.0)], 65_000, nan),
            (SampledKind::Max, &[(0, 10.0), (5_000, 20.0)], 65_000, nan),
        ];
        for (kind, records, at, expected) in cases {
            let config = config();
            let mut stat = SampledStat::new(*kind, &config);
            for (time, value) in *records {
                stat.record(&config, *value, *time);
            }
            let measured = stat.measure(&config, *at);
            assert!(
                measured == *expected || (measured.is_nan() && expected.is_nan()),
                "{kind:?} {records:?} at {at}: {measured} != {expected}"
            );
        }
    }

    #[test]
    fn samples_are_recycled_in_a_ring_of_samples_plus_one() {
        // 2 samples of 10 ms: the ring holds 3; the fourth window reuses the first.
        let config = small(2, 10);
        let mut stat = SampledStat::new(SampledKind::Max, &config);
        for (time, value) in [(0, 100.0), (10, 50.0), (19, 45.0), (20, 40.0), (30, 30.0)] {
            stat.record(&config, value, time);
        }
        assert_eq!(stat.samples.len(), 3);
        assert_eq!(stat.samples.capacity(), 3, "the ring never grows");
        // The 100 at 0 was overwritten by the window starting at 30.
        assert_eq!(stat.measure(&config, 30), 50.0);
        // At 39 the sample whose last event was at 19 is 20 ms old (>= 2 × 10): purged.
        assert_eq!(stat.measure(&config, 39), 40.0);
    }

    #[test]
    fn an_event_window_completes_a_sample_too() {
        let config = MetricConfig {
            event_window: 2,
            ..small(2, 1_000)
        };
        let mut stat = SampledStat::new(SampledKind::Sum, &config);
        for time in 0..4 {
            stat.record(&config, 1.0, time);
        }
        // Samples of two events each.
        assert_eq!(
            stat.samples
                .iter()
                .map(|sample| sample.event_count)
                .collect::<Vec<_>>(),
            vec![2, 2]
        );
    }

    /// (records, measured at, expected rate per second) with Kafka's defaults.
    #[test]
    fn rates_divide_by_the_elapsed_windows_as_kafkas() {
        let cases: &[(Recorded, i64, f64)] = &[
            // Nothing recorded: 0 over the minimum span.
            (&[], 0, 0.0),
            (&[], 10_000, 0.0),
            // A young rate counts as samples − 1 = 1 whole window (30 s) plus what
            // elapsed: 60 over 30 s + 10 s.
            (&[(0, 60.0)], 10_000, 60.0 / 40.0),
            // Measured at the instant of the first record: 30 s + 0.
            (&[(0, 30.0)], 0, 1.0),
            // Past one window: elapsed only (45 s holds one full window already).
            (&[(0, 45.0), (31_000, 45.0)], 45_000, 90.0 / 45.0),
            // The first sample is purged at 60 s (its last event at 0); the second began
            // at 31 s: 29 s elapsed, less than one full window, so 30 s + 29 s.
            (&[(0, 45.0), (31_000, 59.0)], 60_000, 59.0 / 59.0),
        ];
        for (records, at, expected) in cases {
            let config = config();
            let mut rate = Rate::new(SampledKind::Sum, 1_000.0, &config);
            for (time, value) in *records {
                rate.record(&config, *value, *time);
            }
            let measured = rate.measure(&config, *at);
            assert!(
                (measured - expected).abs() < 1e-9,
                "{records:?} at {at}: {measured} != {expected}"
            );
        }
    }

    #[test]
    fn a_count_rate_counts_recordings_and_per_hour_scales() {
        let config = config();
        let mut per_second = Rate::new(SampledKind::Count, 1_000.0, &config);
        let mut per_hour = Rate::new(SampledKind::Count, 3_600_000.0, &config);
        for time in [0, 1_000, 2_000] {
            per_second.record(&config, 500.0, time);
            per_hour.record(&config, 500.0, time);
        }
        // 3 events over 30 s + 10 s.
        assert!((per_second.measure(&config, 10_000) - 3.0 / 40.0).abs() < 1e-12);
        assert!((per_hour.measure(&config, 10_000) - 3.0 / 40.0 * 3600.0).abs() < 1e-9);
    }

    #[test]
    fn measuring_an_empty_rate_starts_its_span_as_kafkas_oldest_does() {
        // Kafka's `oldest()` creates a sample when there is none, so a rate measured
        // before its first record counts its span from that measurement.
        let config = config();
        let mut measured_early = Rate::new(SampledKind::Sum, 1_000.0, &config);
        assert_eq!(measured_early.measure(&config, 0), 0.0);
        measured_early.record(&config, 51.0, 50_000);
        // The sample begun at 0 is complete at 50 s: the record opens one at 50 s; the
        // one from 0 (last event 0) is not yet 60 s old: the span is 51 s.
        assert!((measured_early.measure(&config, 51_000) - 1.0).abs() < 1e-12);

        let mut fresh = Rate::new(SampledKind::Sum, 1_000.0, &config);
        fresh.record(&config, 31.0, 50_000);
        assert!((fresh.measure(&config, 51_000) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn cumulative_and_value_stats() {
        let config = config();
        let mut sum = Stat::CumulativeSum(0.0);
        let mut count = Stat::CumulativeCount(0.0);
        let mut value = Stat::Value(0.0);
        assert_eq!(value.measure(&config, 0), 0.0);
        for (time, recorded) in [(0, 5.0), (100_000, 7.0), (900_000, -2.0)] {
            sum.record(&config, recorded, time);
            count.record(&config, recorded, time);
            value.record(&config, recorded, time);
        }
        // Never windowed: nothing expires.
        assert_eq!(sum.measure(&config, 10_000_000), 10.0);
        assert_eq!(count.measure(&config, 10_000_000), 3.0);
        assert_eq!(value.measure(&config, 10_000_000), -2.0);
    }
}
