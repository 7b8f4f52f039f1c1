//! Debezium's JDBC sink against a real PostgreSQL, through a real broker and a worker's
//! REST API: JSON-with-schema records in, rows out. One broker, one PostgreSQL and one
//! worker serve every check, each check on a topic and table of its own.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;
#[path = "support/worker.rs"]
mod harness;
#[path = "support/postgres.rs"]
mod postgres;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::TestNode;
use harness::RunningWorker;
use postgres::Postgres;
use serde_json::{Value, json};
use sluice_client::consumer::{Consumer, ConsumerConfig};
use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};
use sluice_client::{Admin, ClientConfig, NewTopic, TopicPartition};

const JSON_CONVERTER: &str = "org.apache.kafka.connect.json.JsonConverter";

/// Connect's JSON with schema: `{"schema":..., "payload":...}`.
fn with_schema(schema: Value, payload: Value) -> Bytes {
    Bytes::from(json!({"schema": schema, "payload": payload}).to_string())
}

fn field(name: &str, ty: &str, optional: bool) -> Value {
    json!({"field": name, "type": ty, "optional": optional})
}

fn key_schema() -> Value {
    json!({"type": "struct", "optional": false, "name": "people.Key", "fields": [field("id", "int32", false)]})
}

fn row_schema(extra: &[Value]) -> Value {
    let mut fields = vec![field("id", "int32", false), field("name", "string", true)];
    fields.extend_from_slice(extra);
    json!({"type": "struct", "optional": true, "name": "people.Value", "fields": fields})
}

fn key(id: i32) -> Bytes {
    with_schema(key_schema(), json!({"id": id}))
}

fn flat(id: i32, name: &str) -> Bytes {
    with_schema(row_schema(&[]), json!({"id": id, "name": name}))
}

/// A Debezium change event for the `people` row `id`.
fn envelope(op: &str, id: i32, after: Option<&str>) -> Bytes {
    let schema = json!({
        "type": "struct", "optional": false, "name": "server.public.people.Envelope",
        "fields": [
            {"field": "before", "type": "struct", "optional": true, "name": "people.Value", "fields": row_schema(&[])["fields"]},
            {"field": "after", "type": "struct", "optional": true, "name": "people.Value", "fields": row_schema(&[])["fields"]},
            {"field": "source", "type": "struct", "optional": false, "name": "io.debezium.connector.postgresql.Source",
             "fields": [field("db", "string", false), field("table", "string", false)]},
            field("op", "string", false),
            field("ts_ms", "int64", true),
        ]
    });
    let row = |name: &str| json!({"id": id, "name": name});
    let payload = json!({
        "before": if after.is_none() { row("gone") } else { Value::Null },
        "after": after.map(row),
        "source": {"db": "app", "table": "people"},
        "op": op,
        "ts_ms": 1_700_000_000_000i64,
    });
    with_schema(schema, payload)
}

async fn produce(producer: &Producer, topic: &str, records: Vec<(Option<Bytes>, Option<Bytes>)>) {
    let mut deliveries = Vec::new();
    for (key, value) in records {
        let mut record = ProducerRecord::new(topic, Bytes::new()).with_partition(0);
        record.key = key;
        record.value = value;
        deliveries.push(producer.send(record).await.unwrap());
    }
    for delivery in deliveries {
        delivery.await.unwrap();
    }
}

/// Polls `sql` until it answers `expected` (rows as text, in the query's order).
async fn wait_rows(db: &tokio_postgres::Client, sql: &str, expected: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let rows: Vec<String> = match db.query(sql, &[]).await {
            Ok(rows) => rows.iter().map(|r| r.get::<_, String>(0)).collect(),
            Err(e) => vec![format!("error: {e}")],
        };
        if rows == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{sql}: expected {expected:?}, have {rows:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn debeziums_jdbc_sink_writes_postgres_rows() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let pg = Postgres::start();
    let db = pg.client("postgres").await;
    let node = TestNode::start(&[("group.initial.rebalance.delay.ms", "0")]).await;
    let producer = Producer::connect(
        ProducerConfig::builder(vec![node.address.to_string()])
            .linger_ms(1)
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let worker = RunningWorker::start(
        &node,
        "connect-jdbc-test",
        &format!(
            "key.converter={JSON_CONVERTER}\n\
             value.converter={JSON_CONVERTER}\n\
             key.converter.schemas.enable=true\n\
             value.converter.schemas.enable=true\n"
        ),
    )
    .await;
    let base = |topics: &str| {
        json!({
            "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
            "tasks.max": "1",
            "topics": topics,
            "connection.url": pg.jdbc_url("postgres"),
            "connection.username": "postgres",
            "flush.retry.delay.ms": "100",
        })
    };
    let merge = |mut a: Value, b: Value| {
        for (k, v) in b.as_object().unwrap() {
            a[k] = v.clone();
        }
        a
    };

    // config/validate answers per key, with Debezium's wording.
    let (status, body) = worker
        .call(
            "PUT",
            "/connector-plugins/JdbcSinkConnector/config/validate",
            Some(merge(
                base("x"),
                json!({"insert.mode": "merge", "delete.enabled": "true"}),
            )),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["error_count"], 2, "{body}");
    let errors_of = |name: &str| -> Value {
        body["configs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["value"]["name"] == name)
            .map(|c| c["value"]["errors"].clone())
            .unwrap_or(Value::Null)
    };
    assert_eq!(
        errors_of("insert.mode"),
        json!(["The 'insert.mode' value is invalid: Value must be one of insert, upsert, update"])
    );
    assert_eq!(
        errors_of("delete.enabled"),
        json!([
            "The 'delete.enabled' value is invalid: When 'delete.enabled' is set to 'true', the 'primary.key.mode' option must be set to 'record_key'."
        ])
    );
    let (status, body) = worker
        .call("POST", "/connectors", Some(json!({"name": "bad", "config": merge(base("x"), json!({"insert.mode": "upsert"}))})))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or("")
            .contains("When using UPSERT"),
        "{body}"
    );

    // Every connector runs before any record can fail one of them: a rebalance restarts
    // a failed task, and its consumer's group then waits out a session timeout.
    let admin = Admin::connect(ClientConfig::new([node.address.to_string()]))
        .await
        .unwrap();
    let topics: Vec<NewTopic> = ["ledger", "people", "unreachable", "tolerant", "outage"]
        .iter()
        .map(|name| NewTopic {
            name: name.to_string(),
            num_partitions: Some(1),
            replication_factor: Some(1),
            configs: Vec::new(),
        })
        .collect();
    admin.create_topics(&topics, false).await.unwrap();
    db.batch_execute("CREATE TABLE ledger (id integer NOT NULL, name text, CHECK (id > 0))")
        .await
        .unwrap();
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    worker.create("ledger-sink", base("ledger")).await;
    worker
        .create(
            "people-sink",
            merge(
                base("people"),
                json!({
                    "insert.mode": "upsert",
                    "primary.key.mode": "record_key",
                    "delete.enabled": "true",
                    "schema.evolution": "basic",
                }),
            ),
        )
        .await;
    worker
        .create(
            "unreachable-sink",
            merge(
                base("unreachable"),
                json!({
                    "connection.url": format!("jdbc:postgresql://127.0.0.1:{closed_port}/postgres"),
                    "flush.max.retries": "1",
                }),
            ),
        )
        .await;
    // errors.tolerance=all with a dead letter queue: a refused row goes there, with
    // Connect's context headers, and the task goes on.
    worker
        .create(
            "tolerant-sink",
            merge(
                base("tolerant"),
                json!({
                    "collection.name.format": "ledger",
                    "errors.tolerance": "all",
                    "errors.deadletterqueue.topic.name": "tolerant-dlq",
                    "errors.deadletterqueue.topic.replication.factor": "1",
                    "errors.deadletterqueue.context.headers.enable": "true",
                }),
            ),
        )
        .await;
    // A database that goes away for a while: retried (Connect's RetriableException)
    // until it is back, nothing lost or skipped.
    worker
        .create(
            "outage-sink",
            merge(
                base("outage"),
                json!({
                    "flush.max.retries": "1000",
                    "flush.retry.delay.ms": "100",
                    "schema.evolution": "basic",
                }),
            ),
        )
        .await;
    for name in [
        "ledger-sink",
        "people-sink",
        "unreachable-sink",
        "tolerant-sink",
        "outage-sink",
    ] {
        worker
            .wait_task(name, "the task runs", |t| t["state"] == "RUNNING")
            .await;
    }

    // upsert by record_key, deletes, schema evolution, flat and Debezium values.
    produce(
        &producer,
        "people",
        vec![
            (Some(key(1)), Some(flat(1, "Ann"))),
            (Some(key(2)), Some(flat(2, "Bob"))),
            (Some(key(1)), Some(flat(1, "Anna"))),
            (Some(key(3)), Some(envelope("c", 3, Some("Cy")))),
            (Some(key(2)), Some(envelope("u", 2, Some("Bobby")))),
            (Some(key(5)), Some(envelope("r", 5, Some("Eve")))),
        ],
    )
    .await;
    wait_rows(
        &db,
        "SELECT id || ':' || name FROM people ORDER BY id",
        &["1:Anna", "2:Bobby", "3:Cy", "5:Eve"],
    )
    .await;
    // The table was created with the key as its primary key.
    wait_rows(
        &db,
        "SELECT a.attname::text FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid \
         AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'people'::regclass AND i.indisprimary",
        &["id"],
    )
    .await;
    // A tombstone and a Debezium delete remove rows; a later record with a new optional
    // field adds its column.
    produce(
        &producer,
        "people",
        vec![
            (Some(key(3)), None),
            (Some(key(1)), Some(envelope("d", 1, None))),
            (
                Some(key(4)),
                Some(with_schema(
                    row_schema(&[field("email", "string", true)]),
                    json!({"id": 4, "name": "Dee", "email": "dee@example.com"}),
                )),
            ),
        ],
    )
    .await;
    wait_rows(
        &db,
        "SELECT id || ':' || name || ':' || coalesce(email, '-') FROM people ORDER BY id",
        &["2:Bobby:-", "4:Dee:dee@example.com", "5:Eve:-"],
    )
    .await;
    let task = worker
        .wait_task("people-sink", "the people sink runs", |t| {
            t["state"] == "RUNNING"
        })
        .await;
    assert_eq!(task["state"], "RUNNING", "{task}");

    // insert into a table that exists (schema.evolution=none): a row the table's CHECK
    // refuses is reported as an errant record; the rows around it are written.
    produce(
        &producer,
        "ledger",
        vec![
            (None, Some(flat(1, "a"))),
            (None, Some(flat(1, "a again"))),
            (None, Some(flat(2, "b"))),
            (None, Some(flat(-3, "refused"))),
        ],
    )
    .await;
    wait_rows(
        &db,
        "SELECT id || ':' || name FROM ledger ORDER BY id, name",
        &["1:a", "1:a again", "2:b"],
    )
    .await;
    // Without errors.tolerance=all the errant record fails the task, with Postgres's
    // reason in its trace.
    let task = worker
        .wait_task("ledger-sink", "the refused row fails the task", |t| {
            t["state"] == "FAILED"
        })
        .await;
    assert!(
        task["trace"]
            .as_str()
            .unwrap_or("")
            .contains("ledger_id_check"),
        "{task}"
    );

    produce(
        &producer,
        "tolerant",
        vec![
            (None, Some(flat(20, "t1"))),
            (None, Some(flat(-5, "refused"))),
            (None, Some(flat(21, "t2"))),
        ],
    )
    .await;
    wait_rows(
        &db,
        "SELECT id || ':' || name FROM ledger WHERE id >= 20 ORDER BY id",
        &["20:t1", "21:t2"],
    )
    .await;
    let mut dlq_config = ConsumerConfig::new([node.address.to_string()]);
    dlq_config.set("auto.offset.reset", "earliest").unwrap();
    let mut dlq = Consumer::new(dlq_config).await.unwrap();
    let tp = TopicPartition::new("tolerant-dlq", 0);
    dlq.assign([tp.clone()]).unwrap();
    dlq.seek(&tp, 0).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut dead = Vec::new();
    while dead.is_empty() && Instant::now() < deadline {
        dead.extend(dlq.poll(Duration::from_millis(200)).await.unwrap());
    }
    assert_eq!(dead.len(), 1, "the refused row is dead-lettered");
    assert_eq!(dead[0].value.as_ref(), Some(&flat(-5, "refused")));
    let header = |k: &str| {
        dead[0]
            .headers
            .iter()
            .find(|h| h.key.as_ref() == k.as_bytes())
            .and_then(|h| h.value.as_ref())
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_else(|| panic!("no header {k}"))
    };
    assert_eq!(header("__connect.errors.stage"), "TASK_PUT");
    assert_eq!(header("__connect.errors.offset"), "1");
    assert_eq!(
        header("__connect.errors.class.name"),
        "io.debezium.connector.jdbc.JdbcSinkConnectorTask"
    );
    assert!(
        header("__connect.errors.exception.message").contains("ledger_id_check"),
        "{}",
        header("__connect.errors.exception.message")
    );
    let (_, status) = worker
        .call("GET", "/connectors/tolerant-sink/status", None)
        .await;
    assert_eq!(status["tasks"][0]["state"], "RUNNING", "{status}");

    // A database that cannot be reached: retried, then the task fails saying why.
    produce(&producer, "unreachable", vec![(None, Some(flat(1, "x")))]).await;
    let task = worker
        .wait_task("unreachable-sink", "the unreachable sink fails", |t| {
            t["state"] == "FAILED"
        })
        .await;
    assert!(
        task["trace"]
            .as_str()
            .unwrap_or("")
            .contains("Cannot connect to PostgreSQL"),
        "{task}"
    );

    // The database goes down with records arriving: the task retries (still RUNNING)
    // and writes them all once it is back.
    pg.stop();
    produce(
        &producer,
        "outage",
        vec![
            (None, Some(flat(1, "during"))),
            (None, Some(flat(2, "the"))),
            (None, Some(flat(3, "outage"))),
        ],
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (_, status) = worker
        .call("GET", "/connectors/outage-sink/status", None)
        .await;
    assert_eq!(status["tasks"][0]["state"], "RUNNING", "{status}");
    pg.restart();
    let db = pg.client("postgres").await;
    wait_rows(
        &db,
        "SELECT id || ':' || name FROM outage ORDER BY id",
        &["1:during", "2:the", "3:outage"],
    )
    .await;

    worker.stop().await;
    node.stop().await;
}
