//! The guide's CDC flow, its stream job: Debezium's change events of MariaDB's
//! `order_service.orders` and `order_service.order_items` (as Sluice's MySQL source, or
//! Debezium itself, writes them through Connect's JsonConverter with schemas) → the
//! envelope unwrapped → per-customer totals (orders and amount) kept in keyed state →
//! an exactly-once Kafka sink writing a changelog topic that the Elasticsearch and JDBC
//! sinks read (examples/cdc_orders/README.md).
//!
//! ```text
//! cargo run --release -p sluice-stream --example cdc_orders -- \
//!     --bootstrap HOST:PORT --checkpoint-dir DIR \
//!     [--prefix cdc] [--output customer_totals] [--checkpoint-interval-ms 1000]
//! ```
//!
//! Two keyed steps, as a Flink job would do it:
//! 1. by order id: each order's customer and the sum of its items' `quantity *
//!    unit_price`. An order created, deleted or moved to another customer, or an item
//!    added, changed or removed, becomes the change of one or two customers' totals.
//!    Items and orders come from two topics, so an item may be read before its order:
//!    its amount waits in the order's state until the order arrives.
//! 2. by customer: the number of orders and the total, written as the customer's new
//!    row (key `customer_id`), or a tombstone once the customer has no order left.
//!
//! The output is Connect's JSON with schemas (`{"schema":…,"payload":…}`): key an
//! int64, value a struct `customer_totals` of `customer_id` (int64), `orders` (int64)
//! and `total` (Connect's `Decimal`, scale 2), so the JDBC sink can create and upsert
//! its table and the Elasticsearch sink index its documents, both deleting on the
//! tombstone. Exactly once: state and source offsets are checkpointed every
//! `--checkpoint-interval-ms`, and the sink's transaction commits with the checkpoint;
//! killed and started again with the same arguments, the job resumes from its latest
//! checkpoint (read the output with `isolation.level=read_committed`).

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sluice_stream::kafka::{DeliveryGuarantee, KafkaSink, KafkaSource, StartingOffsets};
use sluice_stream::{
    Collector, Context, DirectoryCheckpointStorage, KeyedProcessFunction, RestartStrategy,
    RuntimeContext, StreamError, StreamExecutionEnvironment, ValueState, ValueStateDescriptor,
    WatermarkStrategy,
};

/// A row of `orders` or `order_items` as one change event leaves it (`None`: deleted).
#[derive(Debug, Clone, PartialEq)]
enum Change {
    Order {
        id: i64,
        customer: Option<i64>,
    },
    /// The item's order and amount (`quantity * unit_price`, in cents).
    Item {
        id: i64,
        line: Option<(i64, i64)>,
    },
}

impl Change {
    /// The row the change is of: the key of step 1.
    fn row(&self) -> (u8, i64) {
        match self {
            Change::Order { id, .. } => (0, *id),
            Change::Item { id, .. } => (1, *id),
        }
    }
}

/// What step 1 tells an order (step 2).
#[derive(Debug, Clone, Copy, PartialEq)]
enum OrderUpdate {
    /// The order's customer is now this (`None`: the order is gone).
    Customer {
        order_id: i64,
        customer: Option<i64>,
    },
    /// The order's items' amount changed by this much, in cents.
    Items { order_id: i64, cents: i64 },
}

impl OrderUpdate {
    fn order_id(&self) -> i64 {
        match self {
            OrderUpdate::Customer { order_id, .. } | OrderUpdate::Items { order_id, .. } => {
                *order_id
            }
        }
    }
}

/// A change of one customer's totals.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Delta {
    customer_id: i64,
    orders: i64,
    cents: i64,
}

/// A customer's totals; `orders == 0` deletes the customer's row downstream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct CustomerTotal {
    customer_id: i64,
    orders: i64,
    cents: i64,
}

/// Step 1, keyed by row: each row's last image, so that a change event delivered again
/// (Debezium delivers at least once: after a crash it resends what followed its last
/// committed offset) changes nothing, and a replayed stretch ends where the original did.
/// Only the difference to the image held goes on.
#[derive(Default)]
struct PerRow {
    state: Option<ValueState<RowImage>>,
}

/// A row's image in step 1: an order's customer, or an item's (order, cents).
type RowImage = (Option<i64>, Option<(i64, i64)>);

impl KeyedProcessFunction<(u8, i64), Change, OrderUpdate> for PerRow {
    fn open(&mut self, runtime: &RuntimeContext) -> Result<(), StreamError> {
        self.state = Some(runtime.get_state(&ValueStateDescriptor::new("row"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        change: Change,
        _ctx: &mut Context<'_, (u8, i64)>,
        out: &mut Collector<'_, OrderUpdate>,
    ) -> Result<(), StreamError> {
        let handle = self.state.as_ref().expect("opened");
        let (customer_was, line_was) = handle.value()?.unwrap_or((None, None));
        let image = match change {
            Change::Order { id, customer } => {
                if customer != customer_was {
                    out.collect(OrderUpdate::Customer {
                        order_id: id,
                        customer,
                    });
                }
                (customer, None)
            }
            Change::Item { line, .. } => {
                if line != line_was {
                    if let Some((order_id, cents)) = line_was {
                        out.collect(OrderUpdate::Items {
                            order_id,
                            cents: -cents,
                        });
                    }
                    if let Some((order_id, cents)) = line {
                        out.collect(OrderUpdate::Items { order_id, cents });
                    }
                }
                (None, line)
            }
        };
        if image == (None, None) {
            handle.clear()?;
        } else {
            handle.update(image)?;
        }
        Ok(())
    }
}

/// The state of one order (step 2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
struct OrderState {
    /// The order's customer while the order exists.
    customer: Option<i64>,
    /// The sum of its items' amounts, in cents (items read before the order included).
    cents: i64,
}

/// Step 2, keyed by order id: moves the order's count and amount between customers.
#[derive(Default)]
struct PerOrder {
    state: Option<ValueState<OrderState>>,
}

impl KeyedProcessFunction<i64, OrderUpdate, Delta> for PerOrder {
    fn open(&mut self, runtime: &RuntimeContext) -> Result<(), StreamError> {
        self.state = Some(runtime.get_state(&ValueStateDescriptor::new("order"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        update: OrderUpdate,
        _ctx: &mut Context<'_, i64>,
        out: &mut Collector<'_, Delta>,
    ) -> Result<(), StreamError> {
        let handle = self.state.as_ref().expect("opened");
        let mut order = handle.value()?.unwrap_or_default();
        match update {
            OrderUpdate::Customer { customer, .. } => {
                if let Some(customer_id) = order.customer {
                    out.collect(Delta {
                        customer_id,
                        orders: -1,
                        cents: -order.cents,
                    });
                }
                if let Some(customer_id) = customer {
                    out.collect(Delta {
                        customer_id,
                        orders: 1,
                        cents: order.cents,
                    });
                }
                order.customer = customer;
            }
            OrderUpdate::Items { cents, .. } => {
                order.cents += cents;
                if let Some(customer_id) = order.customer {
                    out.collect(Delta {
                        customer_id,
                        orders: 0,
                        cents,
                    });
                }
            }
        }
        if order == OrderState::default() {
            handle.clear()?;
        } else {
            handle.update(order)?;
        }
        Ok(())
    }
}

/// Step 3, keyed by customer id.
#[derive(Default)]
struct PerCustomer {
    state: Option<ValueState<(i64, i64)>>,
}

impl KeyedProcessFunction<i64, Delta, CustomerTotal> for PerCustomer {
    fn open(&mut self, runtime: &RuntimeContext) -> Result<(), StreamError> {
        self.state = Some(runtime.get_state(&ValueStateDescriptor::new("customer"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        delta: Delta,
        _ctx: &mut Context<'_, i64>,
        out: &mut Collector<'_, CustomerTotal>,
    ) -> Result<(), StreamError> {
        let handle = self.state.as_ref().expect("opened");
        let (orders, cents) = handle.value()?.unwrap_or((0, 0));
        let (orders, cents) = (orders + delta.orders, cents + delta.cents);
        if orders == 0 && cents == 0 {
            handle.clear()?;
        } else {
            handle.update((orders, cents))?;
        }
        out.collect(CustomerTotal {
            customer_id: delta.customer_id,
            orders,
            cents,
        });
        Ok(())
    }
}

/// The row a Debezium change event leaves (none for a tombstone).
fn changes(value: Option<&[u8]>) -> Result<Option<Change>, String> {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Ok(None); // the tombstone after a delete
    };
    let event: Value = serde_json::from_slice(value).map_err(|e| format!("not JSON ({e})"))?;
    // With schemas (JsonConverter's default) or without.
    let (schema, payload) = match event.get("payload") {
        Some(payload) if event.get("schema").is_some() => (event.get("schema"), payload),
        _ => (None, &event),
    };
    let op = payload["op"]
        .as_str()
        .ok_or("no `op`: not a Debezium change event")?;
    if !matches!(op, "c" | "r" | "u" | "d") {
        return Err(format!(
            "op {op:?} is not handled (a truncate needs a re-snapshot)"
        ));
    }
    let table = payload["source"]["table"].as_str().unwrap_or_default();
    let row = |side: &str| payload.get(side).filter(|row| !row.is_null());
    let (before, after) = (row("before"), row("after"));
    let integer = |row: &Value, field: &str| {
        row[field]
            .as_i64()
            .ok_or_else(|| format!("{table}.{field} is not an integer: {}", row[field]))
    };
    let id = integer(after.or(before).ok_or("neither before nor after")?, "id")?;
    match table {
        "orders" => Ok(Some(Change::Order {
            id,
            customer: after.map(|r| integer(r, "customer_id")).transpose()?,
        })),
        "order_items" => {
            let line = match after {
                None => None,
                Some(row) => {
                    let price_schema = schema.and_then(|schema| {
                        schema["fields"]
                            .as_array()?
                            .iter()
                            .find(|f| f["field"] == "after")?["fields"]
                            .as_array()?
                            .iter()
                            .find(|f| f["field"] == "unit_price")
                    });
                    let price = cents(&row["unit_price"], price_schema)
                        .map_err(|e| format!("{table}.unit_price: {e}"))?;
                    Some((integer(row, "order_id")?, integer(row, "quantity")? * price))
                }
            };
            Ok(Some(Change::Item { id, line }))
        }
        other => Err(format!(
            "a change of table {other:?}: only orders and order_items are read"
        )),
    }
}

/// A DECIMAL value in cents, as Debezium writes it under each `decimal.handling.mode`:
/// `precise` (Connect's `Decimal`: base64 of the unscaled big-endian two's complement,
/// the scale in the schema), `string`, or `double`.
fn cents(value: &Value, schema: Option<&Value>) -> Result<i64, String> {
    let decimal = schema.is_some_and(|s| s["name"] == "org.apache.kafka.connect.data.Decimal");
    match value {
        Value::String(text) if decimal => {
            let scale: u32 = schema
                .and_then(|s| s["parameters"]["scale"].as_str())
                .and_then(|s| s.parse().ok())
                .ok_or("a Decimal without its scale")?;
            let bytes = BASE64.decode(text).map_err(|e| format!("{text:?}: {e}"))?;
            if bytes.is_empty() || bytes.len() > 16 {
                return Err(format!("{text:?}: {} bytes of unscaled value", bytes.len()));
            }
            let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
            let mut wide = [fill; 16];
            wide[16 - bytes.len()..].copy_from_slice(&bytes);
            rescale(i128::from_be_bytes(wide), scale)
        }
        Value::String(text) => {
            let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
            let unscaled: i128 = format!("{whole}{fraction}")
                .parse()
                .map_err(|_| format!("{text:?} is not a decimal"))?;
            rescale(unscaled, fraction.len() as u32)
        }
        Value::Number(number) => number
            .as_f64()
            .map(|v| (v * 100.0).round() as i64)
            .ok_or_else(|| format!("{number} is not a number")),
        other => Err(format!("{other} is not a decimal")),
    }
}

/// `unscaled × 10^-scale` in hundredths; refuses a value with finer digits.
fn rescale(unscaled: i128, scale: u32) -> Result<i64, String> {
    let cents = if scale <= 2 {
        unscaled * 10i128.pow(2 - scale)
    } else {
        let divisor = 10i128.pow(scale - 2);
        if unscaled % divisor != 0 {
            return Err(format!("{unscaled}e-{scale} has digits below a cent"));
        }
        unscaled / divisor
    };
    i64::try_from(cents).map_err(|_| format!("{unscaled}e-{scale} is out of range"))
}

/// Connect's Decimal bytes of `cents` (scale 2): the shortest big-endian two's complement.
fn decimal_bytes(cents: i64) -> Vec<u8> {
    let bytes = cents.to_be_bytes();
    let mut start = 0;
    while start < 7 {
        let (byte, next) = (bytes[start], bytes[start + 1]);
        if (byte == 0 && next & 0x80 == 0) || (byte == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    bytes[start..].to_vec()
}

/// Key and value of a customer's row in Connect's JSON with schemas; a tombstone once
/// the customer has no order.
fn serialize(total: &CustomerTotal) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let key = json!({
        "schema": {"type": "int64", "optional": false},
        "payload": total.customer_id,
    });
    let value = (total.orders != 0).then(|| {
        json!({
            "schema": {
                "type": "struct",
                "name": "customer_totals",
                "optional": false,
                "fields": [
                    {"field": "customer_id", "type": "int64", "optional": false},
                    {"field": "orders", "type": "int64", "optional": false},
                    {"field": "total", "type": "bytes", "optional": false,
                     "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
                     "parameters": {"scale": "2", "connect.decimal.precision": "18"}},
                ],
            },
            "payload": {
                "customer_id": total.customer_id,
                "orders": total.orders,
                "total": BASE64.encode(decimal_bytes(total.cents)),
            },
        })
    });
    let bytes = |v: &Value| serde_json::to_vec(v).expect("JSON values serialize");
    (Some(bytes(&key)), value.as_ref().map(bytes))
}

struct Args {
    bootstrap: String,
    prefix: String,
    output: String,
    checkpoint_dir: String,
    checkpoint_interval_ms: u64,
}

fn parse_args(mut arguments: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        bootstrap: String::new(),
        prefix: "cdc".into(),
        output: "customer_totals".into(),
        checkpoint_dir: String::new(),
        checkpoint_interval_ms: 1000,
    };
    while let Some(flag) = arguments.next() {
        let value = arguments
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--bootstrap" => args.bootstrap = value,
            "--prefix" => args.prefix = value,
            "--output" => args.output = value,
            "--checkpoint-dir" => args.checkpoint_dir = value,
            "--checkpoint-interval-ms" => {
                args.checkpoint_interval_ms = value.parse().map_err(|e| format!("{flag}: {e}"))?
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.bootstrap.is_empty() || args.checkpoint_dir.is_empty() {
        return Err("--bootstrap and --checkpoint-dir are required".into());
    }
    Ok(args)
}

fn build(args: &Args) -> Result<StreamExecutionEnvironment, StreamError> {
    let mut env = StreamExecutionEnvironment::new();
    env.enable_checkpointing(Duration::from_millis(args.checkpoint_interval_ms))
        .set_checkpoint_storage(DirectoryCheckpointStorage::new(&args.checkpoint_dir, 3)?)
        .set_restart_strategy(RestartStrategy::fixed_delay(3, Duration::from_secs(1)));
    let topics = ["orders", "order_items"].map(|t| format!("{}.order_service.{t}", args.prefix));
    let source = KafkaSource::with_record_deserializer(args.bootstrap.clone(), topics, |record| {
        changes(record.value.as_deref()).map_err(|e| {
            format!(
                "{}-{}@{}: {e}",
                record.topic, record.partition, record.offset
            )
        })
    })
    .with_starting_offsets(StartingOffsets::Earliest);
    let sink = KafkaSink::with_tombstones(
        args.bootstrap.clone(),
        args.output.clone(),
        serialize,
        DeliveryGuarantee::ExactlyOnce {
            transactional_id_prefix: format!("cdc-orders-{}", args.output),
        },
    );
    env.from_kafka_source(
        source,
        WatermarkStrategy::no_watermarks(),
        "Debezium events",
    )
    .flat_map(|change| change)
    .key_by(Change::row)
    .process(PerRow::default())
    .name("per row")
    .key_by(OrderUpdate::order_id)
    .process(PerOrder::default())
    .name("per order")
    .key_by(|delta: &Delta| delta.customer_id)
    .process(PerCustomer::default())
    .name("per customer")
    .sink_to(sink);
    Ok(env)
}

fn main() {
    // The job's log on stderr (RUST_LOG, default info): a restore from a checkpoint, the
    // sink's transactions recovered.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!(
                "cdc_orders: {message}\nusage: cdc_orders --bootstrap HOST:PORT --checkpoint-dir DIR \
                 [--prefix cdc] [--output customer_totals] [--checkpoint-interval-ms MS]"
            );
            std::process::exit(2);
        }
    };
    match build(&args).and_then(|env| env.execute("CDC order totals")) {
        Ok(result) => println!(
            "cdc_orders: done after {} checkpoints",
            result.num_completed_checkpoints
        ),
        Err(error) => {
            eprintln!("cdc_orders: {error}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_in_every_handling_mode() {
        let schema = json!({"name": "org.apache.kafka.connect.data.Decimal",
                            "parameters": {"scale": "2"}});
        // 12.34 → unscaled 1234 = 0x04d2; -0.01 → -1 = 0xff.
        assert_eq!(cents(&json!("BNI="), Some(&schema)), Ok(1234));
        assert_eq!(cents(&json!("/w=="), Some(&schema)), Ok(-1));
        assert_eq!(cents(&json!("12.34"), None), Ok(1234));
        assert_eq!(cents(&json!("7"), None), Ok(700));
        assert_eq!(cents(&json!(12.34), None), Ok(1234));
        assert!(cents(&json!("1.234"), None).is_err());
        assert!(cents(&json!(null), None).is_err());
        for value in [
            0,
            1,
            -1,
            127,
            128,
            -128,
            -129,
            1234,
            99_999_999,
            -99_999_999,
        ] {
            let encoded = BASE64.encode(decimal_bytes(value));
            assert_eq!(cents(&json!(encoded), Some(&schema)), Ok(value), "{value}");
        }
        assert_eq!(decimal_bytes(127), vec![0x7f]);
        assert_eq!(decimal_bytes(128), vec![0x00, 0x80]);
        assert_eq!(decimal_bytes(-128), vec![0x80]);
    }

    #[test]
    fn events_become_row_images() {
        let event = json!({
            "op": "u", "source": {"table": "order_items"},
            "before": {"id": 1, "order_id": 5, "quantity": 2, "unit_price": "1.50"},
            "after": {"id": 1, "order_id": 6, "quantity": 3, "unit_price": "1.50"},
        });
        assert_eq!(
            changes(Some(event.to_string().as_bytes())),
            Ok(Some(Change::Item {
                id: 1,
                line: Some((6, 450))
            }))
        );
        let delete = json!({
            "op": "d", "source": {"table": "orders"},
            "before": {"id": 7, "customer_id": 3}, "after": null,
        });
        assert_eq!(
            changes(Some(delete.to_string().as_bytes())),
            Ok(Some(Change::Order {
                id: 7,
                customer: None
            }))
        );
        assert_eq!(changes(None), Ok(None));
        let truncate = json!({"op": "t", "source": {"table": "orders"}});
        assert!(changes(Some(truncate.to_string().as_bytes())).is_err());
    }

    /// Debezium's at-least-once redelivery: the same changes again, and a stretch
    /// replayed, leave the same totals.
    #[test]
    fn changes_delivered_again_leave_the_same_totals() {
        use sluice_stream::{CollectSink, CollectionSource};
        let order = |id, customer| Change::Order { id, customer };
        let item = |id, line| Change::Item { id, line };
        let first = vec![
            order(1, Some(10)),
            item(1, Some((1, 500))),
            item(2, Some((1, 250))),
            order(2, Some(20)),
            item(3, Some((2, 100))),
            item(2, Some((2, 250))), // moved to order 2
            order(1, Some(20)),      // moved to customer 20
            item(1, None),
            order(2, None),
        ];
        let mut replayed = first.clone();
        replayed.extend(first[3..].iter().cloned()); // the stretch after an offset, again
        replayed.extend(first[8..].iter().cloned());
        let totals = |changes: Vec<Change>| {
            let env = StreamExecutionEnvironment::new();
            let sink = CollectSink::new();
            let handle = sink.clone();
            env.from_source(
                CollectionSource::of(changes),
                WatermarkStrategy::no_watermarks(),
                "changes",
            )
            .key_by(Change::row)
            .process(PerRow::default())
            .key_by(OrderUpdate::order_id)
            .process(PerOrder::default())
            .key_by(|delta: &Delta| delta.customer_id)
            .process(PerCustomer::default())
            .sink_to(sink);
            env.execute("totals").unwrap();
            let mut last = std::collections::BTreeMap::new();
            for total in handle.records() {
                last.insert(total.customer_id, (total.orders, total.cents));
            }
            last
        };
        let once = totals(first);
        // Customer 10 lost its order; 20 has order 1 (item 2 moved away, item 1
        // deleted): one order, nothing in it.
        assert_eq!(once.get(&10), Some(&(0, 0)));
        assert_eq!(once.get(&20), Some(&(1, 0)));
        assert_eq!(totals(replayed), once);
    }
}
