//! `sluice plan`: how many partitions a topic needs, reasoned as the guide's partition-count
//! formula (event-streaming-guide, "パーティション数の決定式") reasons, step by step.
//!
//! The guide: a target of 100 MB/s, a partition carrying ~10 MB/s for a producer and
//! ~5 MB/s for a consumer, so 100/10 = 10 partitions from the producer's side and
//! 100/5 = 20 from the consumer's: at least 20. Then: no fewer partitions than consumer
//! instances (a partition is read by one member of a group, so extra members sit idle);
//! partitions can be added but never removed; too many cost metadata and slow rebalances;
//! 6–50 per topic. The plan is those steps in that order, every figure shown:
//!
//! 1. producer view: ⌈target ÷ producer rate⌉;
//! 2. consumer view: ⌈target ÷ consumer rate⌉;
//! 3. the larger of the two;
//! 4. growth (`--growth 2x` over the horizon, or `--growth 30% --years 2` compounded
//!    yearly): the same two views at the horizon's throughput. Growth scales the data, not
//!    the consumer count, which is why it comes before step 5: a group of 30 consumers
//!    does not need 60 partitions because the data doubles — pass the consumer count you
//!    expect at the horizon in `--consumers`;
//! 5. at least `--consumers`;
//! 6. the guide's 6–50: below 6 is raised to 6 and says so; above 50 is kept (a smaller
//!    count would not carry the target) and warned about, with what to do instead.
//!
//! The per-partition rates are the guide's figures unless given (`--producer-rate`,
//! `--consumer-rate`) or measured (`--measure`): a short produce-then-consume run against
//! a real cluster through `sluice-client`, on partition 0 of a 1-partition scratch topic
//! (deleted afterwards) or of `--topic` (kept, with the test's records in it). The run is
//! bounded: `--duration-secs` (at most [`MEASURE_DURATION_SECS_MAX`]) and
//! [`MEASURE_BYTES_MAX`] bytes of producing, [`READ_BACK_TIMEOUT`] of reading back.
//! What it measures is one client's rate into and out of one partition with acks=all; a
//! consuming application's own work per record is not in it.
//!
//! Rates take decimal (`kB`, `MB`, `GB`, `TB`: powers of 1000, as the guide's MB/s) or
//! binary (`KiB`, `MiB`, `GiB`, `TiB`) units, `/s` optional; a bare number is bytes per
//! second. Units are bytes: `Mb/s` (bits) is refused rather than guessed at.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::{Args, ValueEnum};
use serde_json::json;
use sluice_client::consumer::{Consumer, ConsumerConfig};
use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};
use sluice_client::{Admin, ClientConfig, ErrorCode, NewTopic, TopicPartition};

/// The guide's "~10MB/s (Producer)" per partition.
pub const GUIDE_PRODUCER_RATE_BYTES_PER_SECOND: u64 = 10_000_000;
/// The guide's "~5MB/s (Consumer)" per partition.
pub const GUIDE_CONSUMER_RATE_BYTES_PER_SECOND: u64 = 5_000_000;
/// The guide's "推奨: トピックあたり6-50個": the low end.
pub const RECOMMENDED_PARTITIONS_MIN: u64 = 6;
/// The guide's recommended range: the high end.
pub const RECOMMENDED_PARTITIONS_MAX: u64 = 50;

/// The largest rate taken: 1 PB/s, far beyond any topic, and small enough that a rate
/// times the largest growth stays well within a `u64`.
const RATE_BYTES_PER_SECOND_MAX: u64 = 1_000_000_000_000_000;
/// The largest growth over the horizon.
const GROWTH_FACTOR_MAX: f64 = 1000.0;
/// The longest horizon for a yearly growth.
const GROWTH_YEARS_MAX: u32 = 50;

/// The longest `--duration-secs` of producing.
pub const MEASURE_DURATION_SECS_MAX: u64 = 60;
/// The most bytes one measurement writes, whatever the duration: a fast cluster must not
/// fill a disk because someone asked for a minute.
pub const MEASURE_BYTES_MAX: u64 = 1 << 30;
/// The largest `--record-size`: half the producer's default `max.request.size`.
pub const MEASURE_RECORD_SIZE_MAX: u64 = 512 * 1024;
/// How long reading the measured records back may take.
pub const READ_BACK_TIMEOUT: Duration = Duration::from_secs(30);
/// Deliveries awaited at most at once while producing; beyond it the oldest is waited for.
const PENDING_DELIVERIES_MAX: usize = 100_000;
/// Bytes of distinct random values the measurement cycles through, so that no codec on
/// the way (a topic's `compression.type`) finds repeats within a batch.
const PAYLOAD_POOL_BYTES: usize = 4 * 1024 * 1024;
/// Partition of the topic the measurement writes to and reads from.
const MEASURED_PARTITION: i32 = 0;

/// The producer's settings for a measurement, printed with it: the guide's
/// "Producer性能最適化", without compression so that the bytes counted are the bytes that
/// travelled.
const MEASURE_PRODUCER_SETTINGS: &[(&str, &str)] = &[
    ("acks", "all"),
    ("batch.size", "65536"),
    ("linger.ms", "10"),
    ("buffer.memory", "67108864"),
    ("compression.type", "none"),
    ("max.in.flight.requests.per.connection", "5"),
];
/// Timeouts short enough to keep a measurement bounded.
const MEASURE_PRODUCER_TIMEOUTS: &[(&str, &str)] = &[
    ("max.block.ms", "15000"),
    ("request.timeout.ms", "15000"),
    ("delivery.timeout.ms", "30000"),
];

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// The topic's target throughput: `100MB/s`, `100MiB/s`, `2.5GB/s`, or a number of
    /// bytes per second.
    #[arg(
        long,
        value_name = "RATE",
        value_parser = parse_rate,
        allow_hyphen_values = true
    )]
    target_throughput: ByteRate,
    /// What one partition carries for a producer (default: the guide's 10 MB/s, or the
    /// measured rate with --measure).
    #[arg(
        long,
        value_name = "RATE",
        value_parser = parse_rate,
        allow_hyphen_values = true
    )]
    producer_rate: Option<ByteRate>,
    /// What one partition carries for a consumer (default: the guide's 5 MB/s, or the
    /// measured rate with --measure).
    #[arg(
        long,
        value_name = "RATE",
        value_parser = parse_rate,
        allow_hyphen_values = true
    )]
    consumer_rate: Option<ByteRate>,
    /// Consumer instances in the largest group reading the topic, at the horizon.
    #[arg(
        long,
        value_name = "N",
        value_parser = parse_consumers,
        allow_hyphen_values = true
    )]
    consumers: Option<u64>,
    /// Expected growth of the throughput: a factor over the whole horizon (`2x`, `1.5`)
    /// or a percentage a year (`30%`, compounded over --years).
    #[arg(
        long,
        value_name = "FACTOR|PERCENT",
        value_parser = parse_growth,
        allow_hyphen_values = true
    )]
    growth: Option<GrowthRate>,
    /// Years of a percentage --growth (default 1).
    #[arg(
        long,
        requires = "growth",
        value_parser = clap::value_parser!(u32).range(1..=i64::from(GROWTH_YEARS_MAX))
    )]
    years: Option<u32>,
    /// `text` (the reasoning) or `json` (every figure).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Measure the per-partition rates on a running cluster first: produce to a
    /// 1-partition scratch topic for --duration-secs with acks=all, read it back, delete it.
    #[arg(long)]
    measure: bool,
    /// The cluster to measure, `host:port` addresses, comma-separated.
    #[arg(
        short = 'b',
        long = "bootstrap-server",
        default_value = "127.0.0.1:9092",
        value_delimiter = ',',
        requires = "measure"
    )]
    bootstrap: Vec<String>,
    /// Measure on partition 0 of this existing topic (its replication and configs) instead
    /// of a scratch topic; the test's records stay in it.
    #[arg(long, requires = "measure")]
    topic: Option<String>,
    /// Seconds of producing.
    #[arg(
        long,
        default_value_t = 5,
        requires = "measure",
        value_parser = clap::value_parser!(u64).range(1..=MEASURE_DURATION_SECS_MAX)
    )]
    duration_secs: u64,
    /// Bytes of each test record's value.
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = 1024,
        requires = "measure",
        value_parser = clap::value_parser!(u64).range(1..=MEASURE_RECORD_SIZE_MAX)
    )]
    record_size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// How a rate is written: in powers of 1000 (MB) or of 1024 (MiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitSystem {
    Decimal,
    Binary,
}

/// Bytes per second, remembering the unit system it was given in, to be shown in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRate {
    pub bytes_per_second: u64,
    pub units: UnitSystem,
}

impl ByteRate {
    pub fn decimal(bytes_per_second: u64) -> ByteRate {
        ByteRate {
            bytes_per_second,
            units: UnitSystem::Decimal,
        }
    }
}

const RATE_UNITS: &[(&str, u64, UnitSystem)] = &[
    ("B", 1, UnitSystem::Decimal),
    ("kB", 1_000, UnitSystem::Decimal),
    ("KB", 1_000, UnitSystem::Decimal),
    ("MB", 1_000_000, UnitSystem::Decimal),
    ("GB", 1_000_000_000, UnitSystem::Decimal),
    ("TB", 1_000_000_000_000, UnitSystem::Decimal),
    ("KiB", 1 << 10, UnitSystem::Binary),
    ("MiB", 1 << 20, UnitSystem::Binary),
    ("GiB", 1 << 30, UnitSystem::Binary),
    ("TiB", 1 << 40, UnitSystem::Binary),
];

/// Reads `100MB/s`, `100 MiB/s`, `2.5GB`, `1048576` (bytes per second).
pub fn parse_rate(text: &str) -> Result<ByteRate, String> {
    let trimmed = text.trim();
    let rate = trimmed.strip_suffix("/s").unwrap_or(trimmed);
    let number_end = rate
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+')))
        .unwrap_or(rate.len());
    let (number, unit) = rate.split_at(number_end);
    let unit = unit.trim();
    if number.is_empty() {
        return Err("not a rate: give a number and a unit, like 100MB/s".to_string());
    }
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{number}' is not a number"))?;
    let (multiplier, units) = match RATE_UNITS.iter().find(|(name, ..)| *name == unit) {
        Some((_, multiplier, units)) => (*multiplier, *units),
        None if unit.is_empty() => (1, UnitSystem::Decimal),
        None if unit.ends_with('b') || unit.ends_with("bps") => {
            return Err(format!(
                "'{unit}' reads as bits: give bytes, like 100MB/s (8 bits to the byte)"
            ));
        }
        None => {
            return Err(format!(
                "unknown unit '{unit}': use B, kB, MB, GB, TB (powers of 1000) or KiB, MiB, \
                 GiB, TiB (powers of 1024), /s optional; a bare number is bytes per second"
            ));
        }
    };
    if value.is_nan() || value <= 0.0 {
        return Err("a rate must be greater than zero".to_string());
    }
    let bytes_per_second = (value * multiplier as f64).round();
    if bytes_per_second < 1.0 {
        return Err("less than 1 byte per second".to_string());
    }
    if bytes_per_second > RATE_BYTES_PER_SECOND_MAX as f64 {
        return Err("above 1 PB/s, the largest rate the planner takes".to_string());
    }
    Ok(ByteRate {
        bytes_per_second: bytes_per_second as u64,
        units,
    })
}

fn parse_consumers(text: &str) -> Result<u64, String> {
    let count: i64 = text
        .trim()
        .parse()
        .map_err(|_| "not a number of consumer instances".to_string())?;
    if count < 1 {
        return Err("a topic is read by at least 1 consumer instance".to_string());
    }
    if count > i64::from(i32::MAX) {
        return Err(format!(
            "more consumer instances than a topic can have partitions ({})",
            i32::MAX
        ));
    }
    Ok(count as u64)
}

/// `--growth` as written, before `--years` is applied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GrowthRate {
    /// Over the whole horizon.
    Factor(f64),
    /// Compounded yearly.
    PercentPerYear(f64),
}

/// Reads `2x`, `1.5`, `30%`.
pub fn parse_growth(text: &str) -> Result<GrowthRate, String> {
    let trimmed = text.trim();
    let shrinking =
        "partitions cannot be removed, so size for today's throughput: leave --growth out";
    if let Some(percent) = trimmed.strip_suffix('%') {
        let percent: f64 = percent
            .trim()
            .parse()
            .ok()
            .filter(|p: &f64| p.is_finite())
            .ok_or_else(|| "not a percentage a year, like 30%".to_string())?;
        if percent < 0.0 {
            return Err(format!("a shrinking load; {shrinking}"));
        }
        return Ok(GrowthRate::PercentPerYear(percent));
    }
    let factor = trimmed
        .strip_suffix(['x', 'X', '×'])
        .unwrap_or(trimmed)
        .trim();
    let factor: f64 = factor
        .parse()
        .ok()
        .filter(|f: &f64| f.is_finite())
        .ok_or_else(|| "neither a factor (2x, 1.5) nor a percentage a year (30%)".to_string())?;
    if factor < 1.0 {
        return Err(format!("a factor below 1 is a shrinking load; {shrinking}"));
    }
    if factor > GROWTH_FACTOR_MAX {
        return Err(format!(
            "more than the largest growth taken, x{GROWTH_FACTOR_MAX}"
        ));
    }
    Ok(GrowthRate::Factor(factor))
}

/// The growth the plan sizes for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Growth {
    Factor(f64),
    PercentPerYear { percent: f64, years: u32 },
}

impl Growth {
    /// `--growth` with `--years`: a percentage defaults to one year; a factor is already
    /// the whole horizon, so `--years` with it is a mistake worth saying.
    pub fn new(rate: GrowthRate, years: Option<u32>) -> anyhow::Result<Growth> {
        let growth = match (rate, years) {
            (GrowthRate::Factor(_), Some(_)) => bail!(
                "--years applies to a percentage a year (--growth 30% --years 2); \
                 a factor (--growth 2x) is already the growth over the whole horizon"
            ),
            (GrowthRate::Factor(factor), None) => Growth::Factor(factor),
            (GrowthRate::PercentPerYear(percent), years) => Growth::PercentPerYear {
                percent,
                years: years.unwrap_or(1),
            },
        };
        let factor = growth.factor();
        if factor > GROWTH_FACTOR_MAX {
            bail!(
                "{} is x{} over the horizon, more than the largest growth taken, \
                 x{GROWTH_FACTOR_MAX}",
                growth.describe(),
                format_decimal(factor, 2)
            );
        }
        Ok(growth)
    }

    pub fn factor(self) -> f64 {
        match self {
            Growth::Factor(factor) => factor,
            Growth::PercentPerYear { percent, years } => (1.0 + percent / 100.0).powi(years as i32),
        }
    }

    fn describe(self) -> String {
        match self {
            Growth::Factor(factor) => format!("x{} over the horizon", format_decimal(factor, 4)),
            Growth::PercentPerYear { percent, years } => format!(
                "{}% a year for {years} year{}",
                format_decimal(percent, 4),
                if years == 1 { "" } else { "s" }
            ),
        }
    }
}

/// Where a per-partition rate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateSource {
    /// The guide's figure, nothing given.
    Assumed,
    /// `--producer-rate` / `--consumer-rate`.
    Given,
    /// `--measure`.
    Measured,
}

impl RateSource {
    fn name(self) -> &'static str {
        match self {
            RateSource::Assumed => "assumed",
            RateSource::Given => "given",
            RateSource::Measured => "measured",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionRate {
    pub rate: ByteRate,
    pub source: RateSource,
}

/// What the plan starts from.
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    pub target: ByteRate,
    pub producer: PartitionRate,
    pub consumer: PartitionRate,
    pub consumers: Option<u64>,
    pub growth: Option<Growth>,
}

/// Where the count stands against the guide's 6–50.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeCheck {
    Within,
    /// Raised to the minimum.
    BelowMinimum,
    /// Kept, with a warning.
    AboveMaximum,
}

impl RangeCheck {
    fn name(self) -> &'static str {
        match self {
            RangeCheck::Within => "within",
            RangeCheck::BelowMinimum => "raised_to_minimum",
            RangeCheck::AboveMaximum => "above_maximum",
        }
    }
}

/// Every figure of the reasoning, in its order.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub inputs: Inputs,
    /// Step 1.
    pub producer_view_partitions: u64,
    /// Step 2.
    pub consumer_view_partitions: u64,
    /// Step 3.
    pub throughput_partitions: u64,
    /// Step 4 (1 without growth).
    pub growth_factor: f64,
    pub horizon_throughput: ByteRate,
    pub horizon_producer_view_partitions: u64,
    pub horizon_consumer_view_partitions: u64,
    pub horizon_partitions: u64,
    /// Step 5.
    pub partitions_for_consumers: u64,
    /// Step 6.
    pub range: RangeCheck,
    /// The recommendation.
    pub partitions: u64,
}

/// The guide's reasoning over `inputs`.
pub fn plan(inputs: Inputs) -> Plan {
    let views = |throughput: u64| {
        (
            throughput.div_ceil(inputs.producer.rate.bytes_per_second),
            throughput.div_ceil(inputs.consumer.rate.bytes_per_second),
        )
    };
    let target = inputs.target.bytes_per_second;
    let (producer_view_partitions, consumer_view_partitions) = views(target);
    let throughput_partitions = producer_view_partitions.max(consumer_view_partitions);
    let growth_factor = inputs.growth.map_or(1.0, Growth::factor);
    // Rounded to a whole byte per second before dividing, so that 100 MB/s x1.1 is
    // 110 MB/s and 11 partitions at 10 MB/s, not 12 from 110.00000000000001.
    let horizon_throughput = ByteRate {
        bytes_per_second: (target as f64 * growth_factor).round() as u64,
        units: inputs.target.units,
    };
    let (horizon_producer_view_partitions, horizon_consumer_view_partitions) =
        views(horizon_throughput.bytes_per_second);
    let horizon_partitions = horizon_producer_view_partitions
        .max(horizon_consumer_view_partitions)
        .max(throughput_partitions);
    let partitions_for_consumers = horizon_partitions.max(inputs.consumers.unwrap_or(0));
    let (range, partitions) = if partitions_for_consumers < RECOMMENDED_PARTITIONS_MIN {
        (RangeCheck::BelowMinimum, RECOMMENDED_PARTITIONS_MIN)
    } else if partitions_for_consumers > RECOMMENDED_PARTITIONS_MAX {
        (RangeCheck::AboveMaximum, partitions_for_consumers)
    } else {
        (RangeCheck::Within, partitions_for_consumers)
    };
    Plan {
        inputs,
        producer_view_partitions,
        consumer_view_partitions,
        throughput_partitions,
        growth_factor,
        horizon_throughput,
        horizon_producer_view_partitions,
        horizon_consumer_view_partitions,
        horizon_partitions,
        partitions_for_consumers,
        range,
        partitions,
    }
}

impl Plan {
    /// What the operator should hear about beyond the count.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.range == RangeCheck::AboveMaximum {
            warnings.push(format!(
                "{} partitions is above the guide's {RECOMMENDED_PARTITIONS_MAX} per topic: \
                 too many partitions cost metadata overhead and slow rebalances. Fewer would \
                 not carry the target, so rather than lowering the count, split the topic \
                 (by event type or tenant) or raise the per-partition rates (measure them \
                 with --measure; tune the producer's batch.size, linger.ms and compression \
                 and the consumers' fetch sizes and per-record work)",
                self.partitions
            ));
        }
        warnings
    }
}

fn partitions_word(count: u64) -> &'static str {
    if count == 1 {
        "partition"
    } else {
        "partitions"
    }
}

/// `value` with up to `decimals` decimals, trailing zeros dropped.
fn format_decimal(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// `bytes` in the largest unit of `units` it reaches: `12.35 MB`, `100 MiB`, `999 B`.
fn format_bytes(bytes: u64, units: UnitSystem) -> String {
    let sizes: &[(&str, u64)] = match units {
        UnitSystem::Decimal => &[
            ("TB", 1_000_000_000_000),
            ("GB", 1_000_000_000),
            ("MB", 1_000_000),
            ("kB", 1_000),
        ],
        UnitSystem::Binary => &[
            ("TiB", 1 << 40),
            ("GiB", 1 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
        ],
    };
    match sizes.iter().find(|(_, size)| bytes >= *size) {
        Some((name, size)) => format!("{} {name}", format_decimal(bytes as f64 / *size as f64, 2)),
        None => format!("{bytes} B"),
    }
}

impl std::fmt::Display for ByteRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/s", format_bytes(self.bytes_per_second, self.units))
    }
}

/// `100 MB/s ÷ 10 MB/s = 10`, or `= 3.33, rounded up: 4`.
fn division(throughput: ByteRate, rate: ByteRate, partitions: u64) -> String {
    let (numerator, denominator) = (throughput.bytes_per_second, rate.bytes_per_second);
    if numerator % denominator == 0 {
        format!("{throughput} ÷ {rate} = {partitions}")
    } else {
        let quotient = numerator as f64 / denominator as f64;
        format!("{throughput} ÷ {rate} = {quotient:.2}, rounded up: {partitions}")
    }
}

fn rate_origin(rate: PartitionRate, guide: &str) -> String {
    match rate.source {
        RateSource::Assumed => format!("assumed: the guide's ~{guide}"),
        RateSource::Given => "given".to_string(),
        RateSource::Measured => "measured above".to_string(),
    }
}

/// The reasoning, as the guide reasons.
pub fn render_text(plan: &Plan) -> String {
    let inputs = &plan.inputs;
    let (target, producer, consumer) = (inputs.target, inputs.producer, inputs.consumer);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Partitions for a target throughput of {target}, by the guide's partition-count formula:"
    );
    let _ = writeln!(
        out,
        "  per-partition rates: producer {} ({}), consumer {} ({})",
        producer.rate,
        rate_origin(producer, "10 MB/s"),
        consumer.rate,
        rate_origin(consumer, "5 MB/s"),
    );
    if producer.source == RateSource::Assumed || consumer.source == RateSource::Assumed {
        let _ = writeln!(
            out,
            "  (give --producer-rate/--consumer-rate, or --measure them on your cluster)"
        );
    }
    let _ = writeln!(
        out,
        "  1. producer view: {} {}",
        division(target, producer.rate, plan.producer_view_partitions),
        partitions_word(plan.producer_view_partitions)
    );
    let _ = writeln!(
        out,
        "  2. consumer view: {} {}",
        division(target, consumer.rate, plan.consumer_view_partitions),
        partitions_word(plan.consumer_view_partitions)
    );
    let _ = writeln!(
        out,
        "  3. the larger of the two: at least {} {}",
        plan.throughput_partitions,
        partitions_word(plan.throughput_partitions)
    );
    let (horizon_count, horizon_word) = (
        plan.horizon_partitions,
        partitions_word(plan.horizon_partitions),
    );
    match inputs.growth {
        None => {
            let _ = writeln!(
                out,
                "  4. growth: none given (--growth 2x, or --growth 30% --years 2): \
                 {horizon_count} {horizon_word}"
            );
        }
        Some(growth) => {
            let horizon = plan.horizon_throughput;
            let _ = writeln!(
                out,
                "  4. growth: {}, so {horizon} at the horizon: {horizon_count} {horizon_word}",
                match growth {
                    Growth::Factor(_) => growth.describe(),
                    Growth::PercentPerYear { .. } => format!(
                        "{} = x{}",
                        growth.describe(),
                        format_decimal(plan.growth_factor, 4)
                    ),
                },
            );
            let _ = writeln!(
                out,
                "     producer view {}; consumer view {}",
                division(
                    horizon,
                    producer.rate,
                    plan.horizon_producer_view_partitions
                ),
                division(
                    horizon,
                    consumer.rate,
                    plan.horizon_consumer_view_partitions
                ),
            );
        }
    }
    let _ = writeln!(
        out,
        "     (partitions can be added, never removed, and adding them later moves keys to \
         other partitions: size for the horizon)"
    );
    let count = plan.partitions_for_consumers;
    let count_word = partitions_word(count);
    let _ = match inputs.consumers {
        None => writeln!(
            out,
            "  5. consumers: none given (--consumers N): {count} {count_word}"
        ),
        Some(consumers) if consumers > plan.horizon_partitions => writeln!(
            out,
            "  5. consumers: {consumers}, more than {horizon_count}: raised to {count} {count_word}"
        ),
        Some(consumers) => writeln!(
            out,
            "  5. consumers: {consumers}, covered by {horizon_count} {horizon_word}: \
             {count} {count_word}"
        ),
    };
    let _ = writeln!(
        out,
        "     (partitions >= consumer instances: a partition goes to one member of a group, \
         and members beyond the partitions idle)"
    );
    let range = format!(
        "the guide's recommended {RECOMMENDED_PARTITIONS_MIN}-{RECOMMENDED_PARTITIONS_MAX} \
         partitions per topic"
    );
    let _ = match plan.range {
        RangeCheck::Within => writeln!(out, "  6. range: {count} is within {range}"),
        RangeCheck::BelowMinimum => writeln!(
            out,
            "  6. range: {count} is below {range}: raised to {RECOMMENDED_PARTITIONS_MIN}\n     \
             (the guide recommends at least {RECOMMENDED_PARTITIONS_MIN} per topic, which also \
             leaves room for more consumers without adding partitions later)"
        ),
        RangeCheck::AboveMaximum => writeln!(
            out,
            "  6. range: {count} is above {range}: kept, since fewer would not carry the \
             target (see the warning)"
        ),
    };
    for warning in plan.warnings() {
        let _ = writeln!(out, "warning: {warning}");
    }
    let _ = writeln!(
        out,
        "Recommendation: {} {}",
        plan.partitions,
        partitions_word(plan.partitions)
    );
    out
}

/// Every figure of the plan (and of the measurement, if any).
pub fn render_json(plan: &Plan, measurement: Option<&Measurement>) -> serde_json::Value {
    let inputs = &plan.inputs;
    let growth = inputs.growth.map(|growth| match growth {
        Growth::Factor(factor) => json!({ "factor": factor }),
        Growth::PercentPerYear { percent, years } => json!({
            "factor": growth.factor(),
            "percent_per_year": percent,
            "years": years,
        }),
    });
    json!({
        "target_throughput_bytes_per_second": inputs.target.bytes_per_second,
        "producer_rate_bytes_per_second": inputs.producer.rate.bytes_per_second,
        "producer_rate_source": inputs.producer.source.name(),
        "consumer_rate_bytes_per_second": inputs.consumer.rate.bytes_per_second,
        "consumer_rate_source": inputs.consumer.source.name(),
        "producer_view_partitions": plan.producer_view_partitions,
        "consumer_view_partitions": plan.consumer_view_partitions,
        "throughput_partitions": plan.throughput_partitions,
        "growth": growth,
        "growth_factor": plan.growth_factor,
        "horizon_throughput_bytes_per_second": plan.horizon_throughput.bytes_per_second,
        "horizon_producer_view_partitions": plan.horizon_producer_view_partitions,
        "horizon_consumer_view_partitions": plan.horizon_consumer_view_partitions,
        "horizon_partitions": plan.horizon_partitions,
        "consumers": inputs.consumers,
        "partitions_for_consumers": plan.partitions_for_consumers,
        "recommended_partitions_min": RECOMMENDED_PARTITIONS_MIN,
        "recommended_partitions_max": RECOMMENDED_PARTITIONS_MAX,
        "range_check": plan.range.name(),
        "partitions": plan.partitions,
        "warnings": plan.warnings(),
        "measurement": measurement.map(Measurement::to_json),
    })
}

/// One side of a measurement: what went through partition 0, and in how long.
#[derive(Debug, Clone, Copy)]
pub struct Leg {
    pub records: u64,
    pub bytes: u64,
    pub elapsed: Duration,
}

impl Leg {
    fn rate(&self) -> ByteRate {
        let seconds = self.elapsed.as_secs_f64().max(1e-6);
        ByteRate::decimal(((self.bytes as f64 / seconds) as u64).max(1))
    }

    fn to_json(self) -> serde_json::Value {
        json!({
            "records": self.records,
            "bytes": self.bytes,
            "elapsed_ms": self.elapsed.as_millis() as u64,
            "rate_bytes_per_second": self.rate().bytes_per_second,
        })
    }
}

/// A `--measure` run.
#[derive(Debug, Clone)]
pub struct Measurement {
    pub bootstrap_servers: String,
    pub topic: String,
    /// A scratch topic made for the run (and deleted after it).
    pub scratch_topic: bool,
    pub duration_secs: u64,
    pub record_size_bytes: u64,
    pub producer: Leg,
    pub consumer: Leg,
}

impl Measurement {
    fn to_json(&self) -> serde_json::Value {
        json!({
            "bootstrap_servers": self.bootstrap_servers,
            "topic": self.topic,
            "scratch_topic": self.scratch_topic,
            "topic_deleted": self.scratch_topic,
            "partition": MEASURED_PARTITION,
            "duration_secs": self.duration_secs,
            "record_size_bytes": self.record_size_bytes,
            "producer_settings": MEASURE_PRODUCER_SETTINGS
                .iter()
                .map(|(key, value)| (key.to_string(), json!(value)))
                .collect::<serde_json::Map<_, _>>(),
            "producer": self.producer.to_json(),
            "consumer": self.consumer.to_json(),
        })
    }

    fn render_text(&self) -> String {
        let leg = |leg: &Leg| {
            format!(
                "{} records, {} in {:.2} s = {}",
                leg.records,
                format_bytes(leg.bytes, UnitSystem::Decimal),
                leg.elapsed.as_secs_f64(),
                leg.rate()
            )
        };
        let topic = if self.scratch_topic {
            format!("scratch topic {} (deleted)", self.topic)
        } else {
            format!("topic {} (kept, with the test's records)", self.topic)
        };
        let settings: Vec<String> = MEASURE_PRODUCER_SETTINGS
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        format!(
            "Measured on {}, partition {MEASURED_PARTITION} of {topic}:\n  \
             {} s of {}-byte records; producer {}\n  \
             producer: {}\n  \
             consumer: {}\n  \
             (the consumer's is the rate of reading back: an application's own work per record \
             lowers it; --consumer-rate overrides it)\n",
            self.bootstrap_servers,
            self.duration_secs,
            self.record_size_bytes,
            settings.join(", "),
            leg(&self.producer),
            leg(&self.consumer),
        )
    }
}

pub fn run(args: PlanArgs) -> anyhow::Result<()> {
    let growth = args
        .growth
        .map(|rate| Growth::new(rate, args.years))
        .transpose()?;
    let measurement = if args.measure {
        Some(measure(&args)?)
    } else {
        None
    };
    let rate =
        |given: Option<ByteRate>, measured: Option<ByteRate>, guide: u64| match (given, measured) {
            (Some(rate), _) => PartitionRate {
                rate,
                source: RateSource::Given,
            },
            (None, Some(rate)) => PartitionRate {
                rate,
                source: RateSource::Measured,
            },
            (None, None) => PartitionRate {
                rate: ByteRate::decimal(guide),
                source: RateSource::Assumed,
            },
        };
    // Measured rates are shown in the target's units, to read against it.
    let in_target_units = |leg: &Leg| ByteRate {
        units: args.target_throughput.units,
        ..leg.rate()
    };
    let inputs = Inputs {
        target: args.target_throughput,
        producer: rate(
            args.producer_rate,
            measurement.as_ref().map(|m| in_target_units(&m.producer)),
            GUIDE_PRODUCER_RATE_BYTES_PER_SECOND,
        ),
        consumer: rate(
            args.consumer_rate,
            measurement.as_ref().map(|m| in_target_units(&m.consumer)),
            GUIDE_CONSUMER_RATE_BYTES_PER_SECOND,
        ),
        consumers: args.consumers,
        growth,
    };
    let plan = plan(inputs);
    match args.format {
        Format::Text => {
            if let Some(measurement) = &measurement {
                print!("{}", measurement.render_text());
            }
            print!("{}", render_text(&plan));
        }
        Format::Json => {
            let json = render_json(&plan, measurement.as_ref());
            println!(
                "{}",
                serde_json::to_string_pretty(&json).context("writing the plan as JSON")?
            );
        }
    }
    Ok(())
}

/// Runs the measurement: a scratch topic (or `--topic`), producing, reading back, and the
/// scratch topic deleted whatever happened in between (Ctrl-C included).
fn measure(args: &PlanArgs) -> anyhow::Result<Measurement> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let bootstrap_servers = args.bootstrap.join(",");
    runtime.block_on(async {
        let admin = Admin::connect(ClientConfig {
            client_id: "sluice-plan".to_string(),
            ..ClientConfig::new(args.bootstrap.iter().cloned())
        })
        .await
        .with_context(|| format!("cannot reach the cluster at {bootstrap_servers}"))?;
        let (topic, scratch_topic) = match &args.topic {
            Some(topic) => {
                check_topic(&admin, topic).await?;
                (topic.clone(), false)
            }
            None => (create_scratch_topic(&admin).await?, true),
        };
        eprintln!(
            "sluice plan: measuring on partition {MEASURED_PARTITION} of {topic} for {} s",
            args.duration_secs
        );
        let legs = tokio::select! {
            legs = measure_legs(args, &topic) => legs,
            _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
        };
        if scratch_topic {
            let deleted = admin
                .delete_topics(std::slice::from_ref(&topic))
                .await
                .map_err(anyhow::Error::from)
                .and_then(|mut results| match results.remove(&topic) {
                    Some(Ok(())) => Ok(()),
                    Some(Err(error)) => Err(error.into()),
                    None => bail!("no answer for the topic"),
                });
            if let Err(error) = deleted {
                let also = legs
                    .err()
                    .map_or(String::new(), |e| format!(" (and: {e:#})"));
                bail!(
                    "cannot delete the scratch topic {topic}: {error:#}; delete it with \
                     `sluice topic delete {topic}`{also}"
                );
            }
        }
        let (producer, consumer) = legs?;
        Ok(Measurement {
            bootstrap_servers: bootstrap_servers.clone(),
            topic,
            scratch_topic,
            duration_secs: args.duration_secs,
            record_size_bytes: args.record_size,
            producer,
            consumer,
        })
    })
}

async fn check_topic(admin: &Admin, topic: &str) -> anyhow::Result<()> {
    let described = admin
        .describe_topics(&[topic.to_string()])
        .await?
        .remove(topic)
        .context("no answer for the topic")?;
    match described {
        Ok(_) => Ok(()),
        Err(error) if error.code == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION => bail!(
            "topic '{topic}' does not exist: create it with the settings to measure, or leave \
             --topic out for a scratch topic"
        ),
        Err(error) => bail!("topic '{topic}': {error}"),
    }
}

async fn create_scratch_topic(admin: &Admin) -> anyhow::Result<String> {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis());
    let name = format!("sluice-plan-{}-{millis}", std::process::id());
    let topic = NewTopic {
        name: name.clone(),
        num_partitions: Some(1),
        // The cluster's default.replication.factor: acks=all then waits for the
        // replication the cluster's topics get.
        replication_factor: None,
        configs: Vec::new(),
    };
    let mut results = admin.create_topics(&[topic], false).await?;
    match results.remove(&name) {
        Some(Ok(_)) => Ok(name),
        Some(Err(error)) => bail!("cannot create the scratch topic {name}: {error}"),
        None => bail!("cannot create the scratch topic {name}: no answer"),
    }
}

async fn measure_legs(args: &PlanArgs, topic: &str) -> anyhow::Result<(Leg, Leg)> {
    let (producer, first_offset, last_offset) = produce_leg(args, topic).await?;
    let consumer = consume_leg(args, topic, first_offset, last_offset).await?;
    Ok((producer, consumer))
}

/// Distinct random values of `record_size` bytes, cut from one buffer.
fn payloads(record_size: usize) -> Vec<Bytes> {
    let count = (PAYLOAD_POOL_BYTES / record_size).max(1);
    let mut pool = Vec::with_capacity(count * record_size + 8);
    // xorshift64: incompressible enough, and no dependency for it.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    while pool.len() < count * record_size {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        pool.extend_from_slice(&state.to_le_bytes());
    }
    pool.truncate(count * record_size);
    let pool = Bytes::from(pool);
    (0..count)
        .map(|i| pool.slice(i * record_size..(i + 1) * record_size))
        .collect()
}

/// Produces to the partition for `--duration-secs` (or [`MEASURE_BYTES_MAX`]); returns the
/// leg and the first and last offsets written.
async fn produce_leg(args: &PlanArgs, topic: &str) -> anyhow::Result<(Leg, i64, i64)> {
    let mut settings: Vec<(&str, String)> = MEASURE_PRODUCER_SETTINGS
        .iter()
        .chain(MEASURE_PRODUCER_TIMEOUTS)
        .map(|(key, value)| (*key, value.to_string()))
        .collect();
    settings.push(("bootstrap.servers", args.bootstrap.join(",")));
    settings.push(("client.id", "sluice-plan".to_string()));
    let producer = Producer::connect(ProducerConfig::from_iter(settings)?)
        .await
        .context("starting the producer")?;
    // The topic's metadata before the clock starts: the rate is the partition's, not the
    // lookup's.
    producer
        .partitions_for(topic)
        .await
        .with_context(|| format!("looking up topic {topic}"))?;
    let record_size = args.record_size as usize;
    let payloads = payloads(record_size);
    let mut pending = VecDeque::new();
    let mut offsets: Option<(i64, i64)> = None;
    let mut record_offset = |offset: i64| {
        offsets = Some(match offsets {
            None => (offset, offset),
            Some((first, last)) => (first.min(offset), last.max(offset)),
        });
    };
    let (mut records, mut bytes) = (0u64, 0u64);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.duration_secs);
    while Instant::now() < deadline && bytes + args.record_size <= MEASURE_BYTES_MAX {
        let value = payloads[records as usize % payloads.len()].clone();
        let record = ProducerRecord::new(topic, value).with_partition(MEASURED_PARTITION);
        pending.push_back(producer.send(record).await.context("producing")?);
        records += 1;
        bytes += args.record_size;
        while let Some(result) = pending.front().and_then(|d| d.try_result()) {
            record_offset(result.context("producing")?.offset);
            pending.pop_front();
        }
        if pending.len() >= PENDING_DELIVERIES_MAX
            && let Some(oldest) = pending.pop_front()
        {
            record_offset(oldest.wait().await.context("producing")?.offset);
        }
    }
    producer.flush().await.context("producing")?;
    for delivery in pending {
        record_offset(delivery.wait().await.context("producing")?.offset);
    }
    let elapsed = started.elapsed();
    producer.close().await.context("closing the producer")?;
    let Some((first_offset, last_offset)) = offsets.filter(|(first, _)| *first >= 0) else {
        bail!("the cluster acknowledged no record with its offset in {elapsed:.1?}");
    };
    let leg = Leg {
        records,
        bytes,
        elapsed,
    };
    Ok((leg, first_offset, last_offset))
}

/// Reads the partition from `first_offset` through `last_offset`, within
/// [`READ_BACK_TIMEOUT`].
async fn consume_leg(
    args: &PlanArgs,
    topic: &str,
    first_offset: i64,
    last_offset: i64,
) -> anyhow::Result<Leg> {
    let config = ConsumerConfig {
        client_id: "sluice-plan".to_string(),
        enable_auto_commit: false,
        ..ConsumerConfig::new(args.bootstrap.iter().cloned())
    };
    let mut consumer = Consumer::new(config)
        .await
        .context("starting the consumer")?;
    let partition = TopicPartition::new(topic, MEASURED_PARTITION);
    consumer.assign([partition.clone()])?;
    consumer.seek(&partition, first_offset)?;
    let (mut records, mut bytes) = (0u64, 0u64);
    let started = Instant::now();
    let deadline = started + READ_BACK_TIMEOUT;
    let mut read_through = first_offset - 1;
    while read_through < last_offset {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            bail!(
                "read back only offsets {first_offset}..={read_through} of \
                 {first_offset}..={last_offset} in {READ_BACK_TIMEOUT:?}"
            );
        }
        for record in consumer.poll(left.min(Duration::from_millis(500))).await? {
            if record.offset > last_offset {
                continue;
            }
            records += 1;
            let length = |b: &Option<Bytes>| b.as_ref().map_or(0, |b| b.len() as u64);
            bytes += length(&record.value) + length(&record.key);
            read_through = read_through.max(record.offset);
        }
    }
    let elapsed = started.elapsed();
    consumer.close().await.context("closing the consumer")?;
    Ok(Leg {
        records,
        bytes,
        elapsed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(text: &str) -> ByteRate {
        parse_rate(text).unwrap()
    }

    fn inputs(
        target: &str,
        producer: Option<&str>,
        consumer: Option<&str>,
        consumers: Option<u64>,
        growth: Option<Growth>,
    ) -> Inputs {
        let partition_rate = |given: Option<&str>, guide: u64| match given {
            Some(text) => PartitionRate {
                rate: rate(text),
                source: RateSource::Given,
            },
            None => PartitionRate {
                rate: ByteRate::decimal(guide),
                source: RateSource::Assumed,
            },
        };
        Inputs {
            target: rate(target),
            producer: partition_rate(producer, GUIDE_PRODUCER_RATE_BYTES_PER_SECOND),
            consumer: partition_rate(consumer, GUIDE_CONSUMER_RATE_BYTES_PER_SECOND),
            consumers,
            growth,
        }
    }

    #[test]
    fn the_guides_reasoning_as_a_table() {
        let percent = |percent, years| Some(Growth::PercentPerYear { percent, years });
        // (case, inputs, producer view, consumer view, after growth, after consumers,
        //  range, recommendation)
        let cases = [
            (
                "the guide's example",
                inputs("100MB/s", None, None, None, None),
                (10, 20, 20, 20),
                RangeCheck::Within,
                20,
            ),
            (
                "more consumers than the throughput needs",
                inputs("100MB/s", None, None, Some(30), None),
                (10, 20, 20, 30),
                RangeCheck::Within,
                30,
            ),
            (
                "fewer consumers than the throughput needs",
                inputs("100MB/s", None, None, Some(8), None),
                (10, 20, 20, 20),
                RangeCheck::Within,
                20,
            ),
            (
                "a small target is raised to the guide's 6",
                inputs("1MB/s", None, None, None, None),
                (1, 1, 1, 1),
                RangeCheck::BelowMinimum,
                6,
            ),
            (
                "rates that do not divide evenly round up",
                inputs("100MB/s", Some("30MB/s"), Some("7MB/s"), None, None),
                (4, 15, 15, 15),
                RangeCheck::Within,
                15,
            ),
            (
                "doubling over the horizon",
                inputs("100MB/s", None, None, None, Some(Growth::Factor(2.0))),
                (10, 20, 40, 40),
                RangeCheck::Within,
                40,
            ),
            (
                "30% a year for 2 years: 169 MB/s",
                inputs("100MB/s", None, None, None, percent(30.0, 2)),
                (10, 20, 34, 34),
                RangeCheck::Within,
                34,
            ),
            (
                "x1.1 is 11 partitions at 10 MB/s, not 12",
                inputs(
                    "100MB/s",
                    Some("10MB/s"),
                    Some("10MB/s"),
                    None,
                    Some(Growth::Factor(1.1)),
                ),
                (10, 10, 11, 11),
                RangeCheck::Within,
                11,
            ),
            (
                "growth scales the data, not the consumers",
                inputs("100MB/s", None, None, Some(40), Some(Growth::Factor(1.5))),
                (10, 20, 30, 40),
                RangeCheck::Within,
                40,
            ),
            (
                "above 50 is kept, not clamped",
                inputs("1GB/s", None, None, None, None),
                (100, 200, 200, 200),
                RangeCheck::AboveMaximum,
                200,
            ),
            (
                "growth past 50",
                inputs("100MB/s", None, None, None, percent(50.0, 3)),
                (10, 20, 68, 68),
                RangeCheck::AboveMaximum,
                68,
            ),
            (
                "binary units",
                inputs("100MiB/s", Some("10MiB/s"), Some("5MiB/s"), None, None),
                (10, 20, 20, 20),
                RangeCheck::Within,
                20,
            ),
        ];
        for (case, inputs, (producer, consumer, horizon, for_consumers), range, partitions) in cases
        {
            let plan = plan(inputs);
            let got = (
                plan.producer_view_partitions,
                plan.consumer_view_partitions,
                plan.horizon_partitions,
                plan.partitions_for_consumers,
                plan.range,
                plan.partitions,
            );
            assert_eq!(
                got,
                (
                    producer,
                    consumer,
                    horizon,
                    for_consumers,
                    range,
                    partitions
                ),
                "{case}"
            );
            assert_eq!(
                plan.warnings().is_empty(),
                range != RangeCheck::AboveMaximum,
                "{case}"
            );
        }
    }

    #[test]
    fn the_text_reasons_as_the_guide_does() {
        let guide = render_text(&plan(inputs("100MB/s", None, None, None, None)));
        for expected in [
            "producer 10 MB/s (assumed: the guide's ~10 MB/s), \
             consumer 5 MB/s (assumed: the guide's ~5 MB/s)",
            "1. producer view: 100 MB/s ÷ 10 MB/s = 10 partitions",
            "2. consumer view: 100 MB/s ÷ 5 MB/s = 20 partitions",
            "3. the larger of the two: at least 20 partitions",
            "partitions can be added, never removed",
            "6. range: 20 is within the guide's recommended 6-50 partitions per topic",
            "Recommendation: 20 partitions",
        ] {
            assert!(guide.contains(expected), "{expected:?} in:\n{guide}");
        }
        assert!(!guide.contains("warning"), "{guide}");

        let small = render_text(&plan(inputs("1MB/s", None, None, Some(2), None)));
        assert!(
            small.contains("the guide recommends at least 6") && small.contains("raised to 6"),
            "{small}"
        );
        assert!(small.ends_with("Recommendation: 6 partitions\n"), "{small}");

        let large = render_text(&plan(inputs("1GB/s", None, None, None, None)));
        assert!(large.contains("warning: 200 partitions is above the guide's 50"));
        assert!(large.contains("split the topic"), "{large}");
        assert!(large.contains("raise the per-partition rates"), "{large}");
        assert!(
            large.ends_with("Recommendation: 200 partitions\n"),
            "{large}"
        );

        let grown = render_text(&plan(inputs(
            "100MB/s",
            None,
            None,
            None,
            Some(Growth::PercentPerYear {
                percent: 30.0,
                years: 2,
            }),
        )));
        assert!(
            grown.contains("4. growth: 30% a year for 2 years = x1.69")
                && grown.contains("169 MB/s ÷ 5 MB/s = 33.80, rounded up: 34"),
            "{grown}"
        );
    }

    #[test]
    fn the_json_carries_every_figure() {
        let json = render_json(&plan(inputs("100MB/s", None, None, Some(3), None)), None);
        assert_eq!(json["target_throughput_bytes_per_second"], 100_000_000);
        assert_eq!(json["producer_rate_bytes_per_second"], 10_000_000);
        assert_eq!(json["producer_rate_source"], "assumed");
        assert_eq!(json["consumer_rate_bytes_per_second"], 5_000_000);
        assert_eq!(json["producer_view_partitions"], 10);
        assert_eq!(json["consumer_view_partitions"], 20);
        assert_eq!(json["throughput_partitions"], 20);
        assert_eq!(json["growth_factor"], 1.0);
        assert_eq!(json["horizon_partitions"], 20);
        assert_eq!(json["consumers"], 3);
        assert_eq!(json["partitions_for_consumers"], 20);
        assert_eq!(json["range_check"], "within");
        assert_eq!(json["partitions"], 20);
        assert_eq!(json["warnings"], json!([]));
        assert!(json["measurement"].is_null());
    }

    #[test]
    fn rates_parse_with_units() {
        for (text, bytes_per_second, units) in [
            ("100MB/s", 100_000_000, UnitSystem::Decimal),
            ("100 MB/s", 100_000_000, UnitSystem::Decimal),
            ("100MB", 100_000_000, UnitSystem::Decimal),
            ("100MiB/s", 100 << 20, UnitSystem::Binary),
            ("2.5GB/s", 2_500_000_000, UnitSystem::Decimal),
            ("1.5KiB/s", 1536, UnitSystem::Binary),
            ("64kB/s", 64_000, UnitSystem::Decimal),
            ("64KB/s", 64_000, UnitSystem::Decimal),
            ("1TB/s", 1_000_000_000_000, UnitSystem::Decimal),
            ("1048576", 1_048_576, UnitSystem::Decimal),
            ("500B/s", 500, UnitSystem::Decimal),
            ("500/s", 500, UnitSystem::Decimal),
        ] {
            assert_eq!(
                parse_rate(text),
                Ok(ByteRate {
                    bytes_per_second,
                    units
                }),
                "{text}"
            );
        }
    }

    #[test]
    fn bad_rates_are_refused_with_the_reason() {
        for (text, reason) in [
            ("0MB/s", "greater than zero"),
            ("0", "greater than zero"),
            ("-5MB/s", "greater than zero"),
            ("100XB/s", "unknown unit 'XB'"),
            ("100 parsecs", "unknown unit 'parsecs'"),
            ("100Mb/s", "reads as bits"),
            ("100Mbps", "reads as bits"),
            ("MB/s", "not a rate"),
            ("", "not a rate"),
            ("1.2.3MB/s", "is not a number"),
            ("0.1B/s", "less than 1 byte per second"),
            ("2000TB/s", "above 1 PB/s"),
        ] {
            let error = parse_rate(text).unwrap_err();
            assert!(error.contains(reason), "{text}: {error}");
        }
    }

    #[test]
    fn rates_print_in_their_units() {
        for (rate, printed) in [
            (ByteRate::decimal(100_000_000), "100 MB/s"),
            (ByteRate::decimal(12_345_678), "12.35 MB/s"),
            (ByteRate::decimal(999), "999 B/s"),
            (ByteRate::decimal(1_500), "1.5 kB/s"),
            (parse_rate("100MiB/s").unwrap(), "100 MiB/s"),
            (parse_rate("2GiB/s").unwrap(), "2 GiB/s"),
        ] {
            assert_eq!(rate.to_string(), printed);
        }
    }

    #[test]
    fn growth_and_consumers_parse() {
        assert_eq!(parse_growth("2x"), Ok(GrowthRate::Factor(2.0)));
        assert_eq!(parse_growth("1.5"), Ok(GrowthRate::Factor(1.5)));
        assert_eq!(parse_growth("30%"), Ok(GrowthRate::PercentPerYear(30.0)));
        assert_eq!(parse_growth("0%"), Ok(GrowthRate::PercentPerYear(0.0)));
        for (text, reason) in [
            ("0.5x", "shrinking load"),
            ("-10%", "shrinking load"),
            ("fast", "neither a factor"),
            ("lots%", "not a percentage"),
            ("5000x", "largest growth"),
        ] {
            let error = parse_growth(text).unwrap_err();
            assert!(error.contains(reason), "{text}: {error}");
        }
        let compounded = Growth::new(GrowthRate::PercentPerYear(30.0), Some(2)).unwrap();
        assert!((compounded.factor() - 1.69).abs() < 1e-9);
        assert_eq!(
            Growth::new(GrowthRate::PercentPerYear(30.0), None).unwrap(),
            Growth::PercentPerYear {
                percent: 30.0,
                years: 1
            }
        );
        let error = Growth::new(GrowthRate::Factor(2.0), Some(2)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("--years applies to a percentage")
        );
        let error = Growth::new(GrowthRate::PercentPerYear(100.0), Some(20)).unwrap_err();
        assert!(error.to_string().contains("largest growth"), "{error}");

        assert_eq!(parse_consumers("30"), Ok(30));
        assert!(parse_consumers("0").unwrap_err().contains("at least 1"));
        assert!(parse_consumers("-2").unwrap_err().contains("at least 1"));
        assert!(parse_consumers("many").is_err());
    }

    #[test]
    fn measurement_values_are_distinct_and_sized() {
        let values = payloads(1024);
        assert_eq!(values.len(), PAYLOAD_POOL_BYTES / 1024);
        assert!(values.iter().all(|v| v.len() == 1024));
        assert_ne!(values[0], values[1]);
        let large = payloads(MEASURE_RECORD_SIZE_MAX as usize);
        assert!(large.len() >= 8);
    }
}
