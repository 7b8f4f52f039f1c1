//! The guide's two programs (event-streaming-guide, "Flink DataStream API例" and
//! "Keyed State例"), written almost line for line, on hand-made inputs.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;

use super::deterministic_env;
use crate::{
    AggregateFunction, CollectSink, CollectionSource, Collector, Context, KeyedProcessFunction,
    ListState, ListStateDescriptor, MapState, MapStateDescriptor, RuntimeContext, StreamError,
    TumblingEventTimeWindows, ValueState, ValueStateDescriptor, WatermarkStrategy,
};

#[derive(Debug, Clone, PartialEq)]
struct Order {
    order_id: u32,
    region: String,
    amount: f64,
    status: String,
    created_at: i64,
}

#[derive(Debug, Clone, PartialEq)]
struct OrderStats {
    region: String,
    window_start: i64,
    window_end: i64,
    count: u64,
    total: f64,
}

/// Count and total amount of a window's orders.
struct OrderStatsAggregator;

impl AggregateFunction for OrderStatsAggregator {
    type In = Order;
    type Acc = (u64, f64);
    type Out = (u64, f64);
    fn create_accumulator(&self) -> (u64, f64) {
        (0, 0.0)
    }
    fn add(&self, order: Order, (count, total): (u64, f64)) -> (u64, f64) {
        (count + 1, total + order.amount)
    }
    fn get_result(&self, accumulator: &(u64, f64)) -> (u64, f64) {
        *accumulator
    }
    fn merge(&self, a: (u64, f64), b: (u64, f64)) -> (u64, f64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

const MINUTE_MS: i64 = 60_000;

/// filter(COMPLETED) → key_by(region) → 5-minute tumbling event-time windows →
/// aggregate, with 10 s bounded out-of-orderness. Amounts are exact in binary so the
/// sums are exact. Derivation (watermark = max created_at − 10 001):
///   [0, 5 min): EU 100 + 19.75 (o1, o4); US 50.5 + 9.5 (o2, o6, 5 s out of order);
///     o3 PENDING and o9 CANCELLED are filtered out; fires at o8 (watermark 589 998),
///     EU before US (timers of equal time fire in registration order);
///   [5, 10 min): EU 40 + 60 (o5, o8 at the last millisecond); APAC 7;
///   [10, 15 min): EU 5 (o10 at exactly 10 min);
///   o11 (US, 4:50) arrives after o10 pushed the watermark to 589 999: late, dropped.
#[test]
fn order_statistics_pipeline_gives_exact_window_sums() {
    let order = |order_id, region: &str, amount, status: &str, created_at| Order {
        order_id,
        region: region.to_string(),
        amount,
        status: status.to_string(),
        created_at,
    };
    let orders = vec![
        order(1, "EU", 100.0, "COMPLETED", 10_000),
        order(2, "US", 50.5, "COMPLETED", 20_000),
        order(3, "EU", 30.25, "PENDING", 30_000),
        order(4, "EU", 19.75, "COMPLETED", 295_000),
        order(5, "EU", 40.0, "COMPLETED", 305_000),
        order(6, "US", 9.5, "COMPLETED", 299_999),
        order(7, "APAC", 7.0, "COMPLETED", 301_000),
        order(8, "EU", 60.0, "COMPLETED", 599_999),
        order(9, "US", 1.0, "CANCELLED", 400_000),
        order(10, "EU", 5.0, "COMPLETED", 600_000),
        order(11, "US", 0.5, "COMPLETED", 290_000),
    ];
    let (env, _clock) = deterministic_env();
    let sink = CollectSink::new();

    let orders = env.from_source(
        CollectionSource::of(orders),
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(10))
            .with_timestamp_assigner(|order: &Order, _| order.created_at),
        "Order Source",
    );
    let stats = orders
        .filter(|order| order.status == "COMPLETED")
        .key_by(|order| order.region.clone())
        .window(TumblingEventTimeWindows::of(Duration::from_secs(5 * 60)))
        .aggregate_with(OrderStatsAggregator, |region, context, (count, total)| {
            OrderStats {
                region: region.clone(),
                window_start: context.window.start,
                window_end: context.window.end,
                count,
                total,
            }
        });
    stats.sink_to(sink.clone());
    let result = env.execute("Order Statistics Pipeline").unwrap();

    let stat = |region: &str, start_minute: i64, count, total| OrderStats {
        region: region.to_string(),
        window_start: start_minute * MINUTE_MS,
        window_end: (start_minute + 5) * MINUTE_MS,
        count,
        total,
    };
    assert_eq!(
        sink.records(),
        vec![
            stat("EU", 0, 2, 119.75),
            stat("US", 0, 2, 60.0),
            stat("EU", 5, 2, 100.0),
            stat("APAC", 5, 1, 7.0),
            stat("EU", 10, 1, 5.0)
        ]
    );
    assert_eq!(result.num_late_records_dropped(), 1);
    let filter = &result.operators[1];
    assert_eq!(
        (
            filter.name.as_str(),
            filter.num_records_in,
            filter.num_records_out
        ),
        ("Filter", 11, 9)
    );
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Transaction {
    customer_id: String,
    merchant: String,
    amount: f64,
    timestamp: i64,
}

#[derive(Debug, Clone, PartialEq)]
struct Alert {
    customer_id: String,
    kind: &'static str,
}

/// The guide's FraudDetector. Its `open` obtains the three states; `process_element`
/// alerts on a high amount after a small "probe" transaction flagged the customer, and a
/// timer one minute after the probe clears the flag. The guide declares the list and map
/// states without using them; here they record what their names say, so all three kinds
/// are exercised.
#[derive(Default)]
struct FraudDetector {
    flag_state: Option<ValueState<bool>>,
    recent_transactions: Option<ListState<Transaction>>,
    merchant_counts: Option<MapState<String, i32>>,
}

impl KeyedProcessFunction<String, Transaction, Alert> for FraudDetector {
    fn open(&mut self, runtime: &RuntimeContext) -> Result<(), StreamError> {
        let flag_descriptor = ValueStateDescriptor::<bool>::new("flag");
        self.flag_state = Some(runtime.get_state(&flag_descriptor)?);

        let list_descriptor = ListStateDescriptor::<Transaction>::new("recent-txns");
        self.recent_transactions = Some(runtime.get_list_state(&list_descriptor)?);

        let map_descriptor = MapStateDescriptor::<String, i32>::new("merchant-counts");
        self.merchant_counts = Some(runtime.get_map_state(&map_descriptor)?);
        Ok(())
    }

    fn process_element(
        &mut self,
        txn: Transaction,
        ctx: &mut Context<'_, String>,
        out: &mut Collector<'_, Alert>,
    ) -> Result<(), StreamError> {
        let flag_state = self.flag_state.as_ref().expect("opened");
        let flag = flag_state.value()?;

        if flag.is_some() && txn.amount > 10000.0 {
            out.collect(Alert {
                customer_id: txn.customer_id.clone(),
                kind: "HIGH_AMOUNT_AFTER_FLAG",
            });
        }

        if txn.amount < 1.0 {
            flag_state.update(true)?;
            ctx.timer_service()
                .register_event_time_timer(txn.timestamp + 60000);
        }

        let merchant_counts = self.merchant_counts.as_ref().expect("opened");
        let count = merchant_counts.get(&txn.merchant)?.unwrap_or(0);
        merchant_counts.put(txn.merchant.clone(), count + 1)?;
        self.recent_transactions
            .as_ref()
            .expect("opened")
            .add(txn)?;
        Ok(())
    }

    fn on_timer(
        &mut self,
        _timestamp: i64,
        _ctx: &mut Context<'_, String>,
        _out: &mut Collector<'_, Alert>,
    ) -> Result<(), StreamError> {
        self.flag_state.as_ref().expect("opened").clear()?;
        self.recent_transactions.as_ref().expect("opened").clear()?;
        Ok(())
    }
}

/// Scripted transactions (monotonous event time, watermark = max − 1):
///   c1 probe 0.5 @1 s (flag, timer @61 s); c1 20 000 @2 s → alert;
///   c2 20 000 @3 s (no flag) → nothing; c2 probe 0.1 @4 s (flag, timer @64 s);
///   c1 15 000 @30 s → alert (flag until 61 s); c1 5 000 @40 s → not above 10 000;
///   c3 50 000 @50 s → never flagged; c9 100 @70 s → watermark 69 999 fires both timers;
///   c1 12 000 @71 s and c2 99 999 @72 s → flags cleared, nothing;
///   c2 probe 0.5 @73 s, c2 10 000.01 @74 s → alert.
#[test]
fn fraud_detector_raises_the_expected_alerts() {
    let txn = |customer_id: &str, amount, seconds: i64| Transaction {
        customer_id: customer_id.to_string(),
        merchant: "shop".to_string(),
        amount,
        timestamp: seconds * 1000,
    };
    let transactions = vec![
        txn("c1", 0.5, 1),
        txn("c1", 20000.0, 2),
        txn("c2", 20000.0, 3),
        txn("c2", 0.1, 4),
        txn("c1", 15000.0, 30),
        txn("c1", 5000.0, 40),
        txn("c3", 50000.0, 50),
        txn("c9", 100.0, 70),
        txn("c1", 12000.0, 71),
        txn("c2", 99999.0, 72),
        txn("c2", 0.5, 73),
        txn("c2", 10000.01, 74),
    ];
    for backend in super::state_backends() {
        let (mut env, _clock) = deterministic_env();
        env.set_state_backend(backend.clone());
        let sink = CollectSink::new();
        env.from_source(
            CollectionSource::of(transactions.clone()),
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|txn: &Transaction, _| txn.timestamp),
            "transactions",
        )
        .key_by(|txn| txn.customer_id.clone())
        .process(FraudDetector::default())
        .sink_to(sink.clone());
        env.execute("Fraud Detection").unwrap();

        let alert = |customer_id: &str| Alert {
            customer_id: customer_id.to_string(),
            kind: "HIGH_AMOUNT_AFTER_FLAG",
        };
        let alerts: Vec<(Alert, Option<i64>)> = sink
            .events()
            .into_iter()
            .filter_map(|event| match event {
                crate::SinkEvent::Record { value, timestamp } => Some((value, timestamp)),
                crate::SinkEvent::Watermark(_) => None,
            })
            .collect();
        assert_eq!(
            alerts,
            vec![
                (alert("c1"), Some(2_000)),
                (alert("c1"), Some(30_000)),
                (alert("c2"), Some(74_000))
            ],
            "{backend:?}"
        );
    }
}

type WindowResult = (u8, i64, i64, u32);

/// Runs keyed tumbling windows summing values over `events` (key, timestamp, value) with
/// `bound` ms of out-of-orderness.
fn run_windows(events: Vec<(u8, i64, i64)>, bound: u64, size: u64) -> (Vec<WindowResult>, u64) {
    let (env, _clock) = deterministic_env();
    let sink = CollectSink::new();
    env.from_source(
        CollectionSource::of(events),
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(bound))
            .with_timestamp_assigner(|event: &(u8, i64, i64), _| event.1),
        "events",
    )
    .key_by(|event| event.0)
    .window(TumblingEventTimeWindows::of(Duration::from_millis(size)))
    .aggregate_with(SumCount, |key, context, (sum, count)| {
        (*key, context.window.start, sum, count)
    })
    .sink_to(sink.clone());
    let result = env.execute("shuffle").expect("valid job");
    let mut records = sink.records();
    records.sort();
    (records, result.num_late_records_dropped())
}

struct SumCount;

impl AggregateFunction for SumCount {
    type In = (u8, i64, i64);
    type Acc = (i64, u32);
    type Out = (i64, u32);
    fn create_accumulator(&self) -> (i64, u32) {
        (0, 0)
    }
    fn add(&self, event: (u8, i64, i64), (sum, count): (i64, u32)) -> (i64, u32) {
        (sum + event.2, count + 1)
    }
    fn get_result(&self, accumulator: &(i64, u32)) -> (i64, u32) {
        *accumulator
    }
    fn merge(&self, a: (i64, u32), b: (i64, u32)) -> (i64, u32) {
        (a.0 + b.0, a.1 + b.1)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Disorder within the bound changes nothing: arrival order is by `timestamp + jitter`
    /// with `jitter ∈ [0, bound]`, so every record is at most `bound` behind the largest
    /// timestamp before it and is never late. Both runs equal a batch computation.
    #[test]
    fn shuffle_within_the_bound_gives_the_sorted_results(
        events in prop::collection::vec((0_u8..3, -500_i64..500, -100_i64..100, 0_u64..=50), 1..60),
        size in 1_u64..200,
    ) {
        let bound = 50;
        let mut sorted: Vec<(u8, i64, i64)> = events.iter().map(|(key, ts, value, _)| (*key, *ts, *value)).collect();
        sorted.sort_by_key(|event| event.1);
        let mut shuffled = events.clone();
        shuffled.sort_by_key(|(_, ts, _, jitter)| ts + *jitter as i64);
        let shuffled: Vec<(u8, i64, i64)> = shuffled.into_iter().map(|(key, ts, value, _)| (key, ts, value)).collect();

        let mut batch: BTreeMap<(u8, i64), (i64, u32)> = BTreeMap::new();
        for (key, ts, value) in &sorted {
            let start = ts.div_euclid(size as i64) * size as i64;
            let entry = batch.entry((*key, start)).or_default();
            entry.0 += value;
            entry.1 += 1;
        }
        let batch: Vec<WindowResult> = batch.into_iter().map(|((key, start), (sum, count))| (key, start, sum, count)).collect();

        let (from_sorted, dropped_sorted) = run_windows(sorted, bound, size);
        let (from_shuffled, dropped_shuffled) = run_windows(shuffled, bound, size);
        prop_assert_eq!(dropped_sorted, 0);
        prop_assert_eq!(dropped_shuffled, 0);
        prop_assert_eq!(&from_sorted, &batch);
        prop_assert_eq!(&from_shuffled, &batch);
    }
}

/// Sessions per key, computed in batch: sorted timestamps, a new session whenever the next
/// timestamp is beyond the current session's end (`ts + gap` windows merge when they
/// overlap or touch). Returns (key, start, end, count).
fn batch_sessions(events: &[(u8, i64, i64)], gap: i64) -> Vec<(u8, i64, i64, u32)> {
    let mut by_key: BTreeMap<u8, Vec<i64>> = BTreeMap::new();
    for (key, ts, _) in events {
        by_key.entry(*key).or_default().push(*ts);
    }
    let mut sessions = Vec::new();
    for (key, mut timestamps) in by_key {
        timestamps.sort();
        let mut current: Option<(i64, i64, u32)> = None;
        for ts in timestamps {
            current = match current {
                Some((start, end, count)) if ts <= end => {
                    Some((start, end.max(ts + gap), count + 1))
                }
                Some(done) => {
                    sessions.push((key, done.0, done.1, done.2));
                    Some((ts, ts + gap, 1))
                }
                None => Some((ts, ts + gap, 1)),
            };
        }
        if let Some((start, end, count)) = current {
            sessions.push((key, start, end, count));
        }
    }
    sessions.sort();
    sessions
}

fn run_sessions(events: Vec<(u8, i64, i64)>, bound: u64, gap: u64) -> Vec<(u8, i64, i64, u32)> {
    let (env, _clock) = deterministic_env();
    let sink = CollectSink::new();
    env.from_source(
        CollectionSource::of(events),
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(bound))
            .with_timestamp_assigner(|event: &(u8, i64, i64), _| event.1),
        "events",
    )
    .key_by(|event| event.0)
    .window(crate::EventTimeSessionWindows::with_gap(
        Duration::from_millis(gap),
    ))
    .aggregate_with(SumCount, |key, context, (_, count)| {
        (*key, context.window.start, context.window.end, count)
    })
    .sink_to(sink.clone());
    env.execute("sessions").expect("valid job");
    let mut records = sink.records();
    records.sort();
    records
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Session merging on disordered input equals batch sessionization, provided the
    /// disorder stays strictly below the bound (jitter < bound). At exactly the bound a
    /// record with `ts = session end` may arrive after the watermark reached `end − 1`:
    /// it is not late, but the session it touches has fired and been purged, so it starts
    /// a new one, as in Flink (see `a_record_touching_a_fired_session_starts_a_new_one`).
    #[test]
    fn session_merging_matches_batch_sessions(
        events in prop::collection::vec((0_u8..3, -300_i64..300, 0_i64..1, 0_u64..50), 1..50),
        gap in 1_u64..40,
    ) {
        let bound = 50;
        let mut shuffled = events.clone();
        shuffled.sort_by_key(|(_, ts, _, jitter)| ts + *jitter as i64);
        let shuffled: Vec<(u8, i64, i64)> = shuffled.into_iter().map(|(key, ts, value, _)| (key, ts, value)).collect();
        let expected = batch_sessions(&shuffled, gap as i64);
        prop_assert_eq!(run_sessions(shuffled, bound, gap), expected);
    }
}

/// Gap 10, bound 5 (watermark = max − 6). Key 1: a record at 0 makes session [0,10).
/// Key 2's record at 15 moves the watermark to 9: [0,10) fires and is purged. Key 1's
/// record at 10 is within the bound (10 ≥ 15 − 5) so it is not late, and its window
/// [10,20) touches [0,10); but that session is gone, so it starts a new one. Batch
/// sessionization would have produced one session [0,20).
#[test]
fn a_record_touching_a_fired_session_starts_a_new_one() {
    let events = vec![(1_u8, 0_i64, 0_i64), (2, 15, 0), (1, 10, 0)];
    assert_eq!(
        run_sessions(events, 5, 10),
        vec![(1, 0, 10, 1), (1, 10, 20, 1), (2, 15, 25, 1)]
    );
}
