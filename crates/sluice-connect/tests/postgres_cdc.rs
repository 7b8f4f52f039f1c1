//! Debezium's PostgreSQL connector, native, against a real PostgreSQL 15 (wal_level
//! logical) and a real broker, through the worker's REST API: the snapshot and the
//! stream as Debezium's events, offsets in Debezium's shape, a restart that resumes
//! without gaps or repeats, the slot advancing only behind Kafka, REPLICA IDENTITY FULL
//! and TOAST, and the failures a user meets first (wrong plugin, wal_level, a database
//! that is down).

#[path = "support/cdc.rs"]
mod cdc;
#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;
#[path = "support/worker.rs"]
mod harness;
#[path = "support/postgres.rs"]
mod postgres;
#[path = "support/registry.rs"]
mod registry;

use std::time::{Duration, Instant};

use cdc::{ops, read_until};
use common::TestNode;
use harness::RunningWorker;
use postgres::Postgres;
use serde_json::{Value, json};
use sluice_client::TopicPartition;
use sluice_client::consumer::{Consumer, ConsumerConfig};

fn connector(pg: &Postgres, prefix: &str, extra: Value) -> Value {
    let mut config = json!({
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "127.0.0.1",
        "database.port": pg.port.to_string(),
        "database.user": "postgres",
        "database.password": "unused",
        "database.dbname": "shop",
        "topic.prefix": prefix,
        "plugin.name": "pgoutput",
        "slot.name": format!("{prefix}_slot"),
        "publication.name": format!("{prefix}_pub"),
        "table.include.list": "public.orders,public.notes",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "false",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    });
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    config
}

async fn shop(pg: &Postgres) -> tokio_postgres::Client {
    let admin = pg.client("postgres").await;
    admin.batch_execute("CREATE DATABASE shop").await.unwrap();
    let db = pg.client("shop").await;
    db.batch_execute(
        "CREATE TYPE state AS ENUM ('new', 'paid', 'shipped');
         CREATE TABLE orders (
             id integer PRIMARY KEY,
             customer text NOT NULL,
             amount numeric(10, 2),
             state state NOT NULL DEFAULT 'new',
             placed timestamptz,
             day date,
             tags text[],
             data jsonb
         );
         CREATE TABLE notes (id serial PRIMARY KEY, body text);
         ALTER TABLE notes REPLICA IDENTITY FULL;
         CREATE TABLE ignored (id integer PRIMARY KEY);
         INSERT INTO orders VALUES
           (1, 'ada', 10.50, 'new', '2024-01-15 10:00:00+02', '2024-01-15', '{a,b}', '{\"x\": 1}'),
           (2, 'bob', 20.00, 'paid', NULL, NULL, NULL, NULL);",
    )
    .await
    .unwrap();
    db
}

/// Waits until the connector's slot streams (the task's start is done: what commits
/// from now on is captured).
async fn wait_streaming(db: &tokio_postgres::Client, slot: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let active = db
            .query(
                "SELECT 1 FROM pg_replication_slots WHERE slot_name = $1 AND active",
                &[&slot],
            )
            .await
            .unwrap();
        if !active.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "slot {slot} never became active");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates connector `name` and waits until its task streams from `slot`.
async fn capture(
    worker: &RunningWorker,
    db: &tokio_postgres::Client,
    name: &str,
    config: Value,
    slot: &str,
) {
    worker.create(name, config).await;
    wait_running(worker, db, name, slot).await;
}

/// Waits until connector `name`'s task runs and streams from `slot`.
async fn wait_running(worker: &RunningWorker, db: &tokio_postgres::Client, name: &str, slot: &str) {
    worker
        .wait_task(name, "the task runs", |t| t["state"] == "RUNNING")
        .await;
    wait_streaming(db, slot).await;
}

/// The snapshot's rows as `op: r` (first and last marked), then inserts, updates and
/// deletes (with a tombstone) as Debezium writes them, with Debezium's offsets in the
/// offsets topic.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_snapshot_then_the_stream_as_debezium_writes_them() {
    let pg = Postgres::start_logical();
    let db = shop(&pg).await;
    let node = TestNode::start(&[]).await;
    let worker = RunningWorker::start(&node, "cdc-a", "").await;
    capture(
        &worker,
        &db,
        "inventory",
        connector(&pg, "dbz", json!({})),
        "dbz_slot",
    )
    .await;
    let snapshot = read_until(&node, "dbz.public.orders", |r| r.len() >= 2).await;
    assert_eq!(ops(&snapshot), ["r", "r"], "{snapshot:?}");
    let (key, first) = &snapshot[0];
    assert_eq!(key, &json!({"id": 1}));
    assert_eq!(first["before"], Value::Null);
    let after = &first["after"];
    assert_eq!(after["customer"], "ada");
    // numeric(10,2) is a Decimal: JsonConverter writes its unscaled bytes in base64
    // (1050 = 0x041a).
    assert_eq!(after["amount"], "BBo=");
    assert_eq!(after["state"], "new");
    assert_eq!(after["placed"], "2024-01-15T08:00:00.000000Z");
    assert_eq!(after["day"], 19_737);
    assert_eq!(after["tags"], json!(["a", "b"]));
    assert_eq!(after["data"], "{\"x\": 1}");
    let source = &first["source"];
    assert_eq!(source["connector"], "postgresql");
    assert_eq!(source["name"], "dbz");
    assert_eq!(source["db"], "shop");
    assert_eq!(source["schema"], "public");
    assert_eq!(source["table"], "orders");
    assert_eq!(source["snapshot"], "first");
    assert_eq!(snapshot[1].1["source"]["snapshot"], "last");

    db.batch_execute(
        "INSERT INTO orders (id, customer, amount) VALUES (3, 'cy', 5);
         UPDATE orders SET state = 'shipped' WHERE id = 2;
         DELETE FROM orders WHERE id = 1;
         INSERT INTO ignored VALUES (1);",
    )
    .await
    .unwrap();
    let all = read_until(&node, "dbz.public.orders", |r| r.len() >= 6).await;
    assert_eq!(ops(&all), ["r", "r", "c", "u", "d", "tombstone"], "{all:?}");
    let (_, insert) = &all[2];
    assert_eq!(insert["after"]["state"], "new", "the column default");
    assert_eq!(insert["source"]["snapshot"], "false");
    assert!(insert["source"]["txId"].as_i64().unwrap() > 0);
    assert!(insert["source"]["lsn"].as_i64().unwrap() > 0);
    let (_, update) = &all[3];
    assert_eq!(
        update["before"],
        Value::Null,
        "REPLICA IDENTITY DEFAULT: no old row"
    );
    assert_eq!(update["after"]["state"], "shipped");
    let (key, delete) = &all[4];
    assert_eq!(key, &json!({"id": 1}));
    assert_eq!(delete["before"]["id"], 1, "the key of the old row");
    assert_eq!(delete["after"], Value::Null);
    assert_eq!(all[5].0, json!({"id": 1}), "the tombstone keeps the key");

    // Debezium's offsets: partition {"server": prefix}, streaming offsets with lsn_proc,
    // lsn_commit, lsn, txId and ts_usec.
    let offsets = worker
        .wait_for(
            "/connectors/inventory/offsets",
            "the stream's offset",
            |b| b["offsets"][0]["offset"].get("lsn_proc").is_some(),
        )
        .await;
    let entry = &offsets["offsets"][0];
    assert_eq!(entry["partition"], json!({"server": "dbz"}));
    for k in ["lsn_proc", "lsn_commit", "lsn", "txId", "ts_usec"] {
        assert!(entry["offset"][k].is_number(), "{k} in {entry}");
    }
    worker.stop().await;
}

/// A worker stopped mid-stream and started again resumes from its committed offset:
/// every change made while it was down arrives once, nothing before it repeats, and the
/// slot's confirmed position advances only once the records are in Kafka.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_worker_resumes_without_gaps_or_repeats() {
    let pg = Postgres::start_logical();
    let db = shop(&pg).await;
    let node = TestNode::start(&[]).await;
    let worker = RunningWorker::start(&node, "cdc-b", "").await;
    capture(
        &worker,
        &db,
        "inventory",
        connector(&pg, "dbz", json!({})),
        "dbz_slot",
    )
    .await;
    for i in 10..20 {
        db.execute("INSERT INTO orders (id, customer) VALUES ($1, 'x')", &[&i])
            .await
            .unwrap();
    }
    let first = read_until(&node, "dbz.public.orders", |r| r.len() >= 12).await;
    assert_eq!(first.len(), 12, "{:?}", ops(&first));
    let flushed = || async {
        db.query_one(
            "SELECT (confirmed_flush_lsn - '0/0')::bigint FROM pg_replication_slots WHERE slot_name = 'dbz_slot'",
            &[],
        )
        .await
        .unwrap()
        .get::<_, i64>(0)
    };
    // The slot follows the committed offsets (200 ms flushes, 1 s status updates).
    let last_lsn =
        |records: &[(Value, Value)]| records.last().unwrap().1["source"]["lsn"].as_i64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while flushed().await < last_lsn(&first) {
        assert!(
            Instant::now() < deadline,
            "the slot did not advance past {}",
            last_lsn(&first)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    worker.stop().await;

    // Changes while no worker runs: a multi-row transaction and single ones.
    db.batch_execute(
        "BEGIN;
         INSERT INTO orders (id, customer) VALUES (20, 'y');
         UPDATE orders SET customer = 'z' WHERE id = 10;
         DELETE FROM orders WHERE id = 11;
         COMMIT;
         INSERT INTO orders (id, customer) VALUES (21, 'w');",
    )
    .await
    .unwrap();
    let worker = RunningWorker::start(&node, "cdc-b", "").await;
    wait_running(&worker, &db, "inventory", "dbz_slot").await;
    let all = read_until(&node, "dbz.public.orders", |r| r.len() >= 17).await;
    let tail: Vec<String> = ops(&all[12..]);
    assert_eq!(tail, ["c", "u", "d", "tombstone", "c"], "{all:?}");
    let ids: Vec<&Value> = all.iter().map(|(k, _)| &k["id"]).collect();
    assert_eq!(all.len(), 17, "nothing repeats: {ids:?}");
    worker.stop().await;
}

/// REPLICA IDENTITY FULL: updates and deletes carry the whole old row; an update that
/// leaves a TOASTed value alone carries Debezium's placeholder for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replica_identity_full_and_unchanged_toast_values() {
    let pg = Postgres::start_logical();
    let db = shop(&pg).await;
    let node = TestNode::start(&[]).await;
    let worker = RunningWorker::start(&node, "cdc-c", "").await;
    capture(
        &worker,
        &db,
        "notes",
        connector(
            &pg,
            "n",
            json!({"table.include.list": "public.orders", "snapshot.mode": "no_data"}),
        ),
        "n_slot",
    )
    .await;
    // A value stored out of line (TOAST): uncompressed and larger than a page allows.
    db.batch_execute(
        "ALTER TABLE orders ALTER COLUMN customer SET STORAGE EXTERNAL;
         INSERT INTO orders (id, customer) SELECT 50, string_agg(md5(i::text), '') FROM generate_series(1, 700) i;",
    )
    .await
    .unwrap();
    db.batch_execute("UPDATE orders SET state = 'paid' WHERE id = 50")
        .await
        .unwrap();
    let records = read_until(&node, "n.public.orders", |r| r.len() >= 2).await;
    assert_eq!(ops(&records), ["c", "u"], "no snapshot with no_data");
    assert_eq!(
        records[1].1["after"]["customer"],
        "__debezium_unavailable_value"
    );
    assert_eq!(records[1].1["after"]["state"], "paid");

    worker.call("DELETE", "/connectors/notes", None).await;
    capture(
        &worker,
        &db,
        "full",
        connector(&pg, "f", json!({"table.include.list": "public.notes"})),
        "f_slot",
    )
    .await;
    db.batch_execute(
        "INSERT INTO notes (body) VALUES ('one');
         UPDATE notes SET body = 'two';
         DELETE FROM notes;",
    )
    .await
    .unwrap();
    let records = read_until(&node, "f.public.notes", |r| r.len() >= 4).await;
    assert_eq!(ops(&records), ["c", "u", "d", "tombstone"]);
    assert_eq!(records[1].1["before"]["body"], "one");
    assert_eq!(records[1].1["after"]["body"], "two");
    assert_eq!(records[2].1["before"]["body"], "two");
    worker.stop().await;
}

/// The failures a user meets first: a decoder Sluice does not have (refused when the
/// connector is created, naming the fix), a server without logical WAL and a database
/// that is down (the task fails with the reason and runs once restarted).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wrong_plugin_wal_level_and_a_database_that_is_down() {
    let pg = Postgres::start();
    let admin = pg.client("postgres").await;
    admin.batch_execute("CREATE DATABASE shop").await.unwrap();
    let node = TestNode::start(&[]).await;
    let worker = RunningWorker::start(&node, "cdc-d", "").await;
    let mut config = connector(&pg, "e", json!({}));
    config.as_object_mut().unwrap().remove("plugin.name");
    let (status, body) = worker
        .call(
            "POST",
            "/connectors",
            Some(json!({"name": "e", "config": config})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("set plugin.name=pgoutput"),
        "{body}"
    );

    worker.create("e", connector(&pg, "e", json!({}))).await;
    let task = worker
        .wait_task("e", "the task fails", |t| t["state"] == "FAILED")
        .await;
    assert!(
        task["trace"]
            .as_str()
            .unwrap()
            .contains("wal_level property must be 'logical' but is: 'replica'"),
        "{task}"
    );
    worker.call("DELETE", "/connectors/e", None).await;

    let down = common::free_port();
    let mut config = connector(&pg, "f", json!({"database.connect.timeout.ms": "2000"}));
    config["database.port"] = json!(down.to_string());
    worker.create("f", config).await;
    let task = worker
        .wait_task("f", "the task fails", |t| t["state"] == "FAILED")
        .await;
    assert!(
        task["trace"]
            .as_str()
            .unwrap()
            .contains(&format!("failed to connect to 127.0.0.1:{down}/shop")),
        "{task}"
    );

    // Credentials the server refuses: the reason, once.
    let mut config = connector(&pg, "g", json!({}));
    config["database.user"] = json!("nobody");
    worker.create("g", config).await;
    let task = worker
        .wait_task("g", "the task fails", |t| t["state"] == "FAILED")
        .await;
    assert!(
        task["trace"]
            .as_str()
            .unwrap()
            .contains("role \"nobody\" does not exist"),
        "{task}"
    );
    worker.stop().await;
}

/// The database restarted under a streaming task: the task connects again and resumes
/// from its slot; every change arrives once. A slot dropped under a running task fails
/// it with the reason and what restarting does.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_restart_mid_stream_and_a_dropped_slot() {
    let pg = Postgres::start_logical();
    let db = shop(&pg).await;
    let node = TestNode::start(&[]).await;
    let worker = RunningWorker::start(&node, "cdc-e", "").await;
    capture(
        &worker,
        &db,
        "inventory",
        connector(&pg, "r", json!({})),
        "r_slot",
    )
    .await;
    for i in 100..105 {
        db.execute("INSERT INTO orders (id, customer) VALUES ($1, 'x')", &[&i])
            .await
            .unwrap();
    }
    read_until(&node, "r.public.orders", |r| r.len() >= 7).await;
    drop(db);
    pg.stop();
    pg.restart();
    let db = pg.client("shop").await;
    for i in 105..110 {
        db.execute("INSERT INTO orders (id, customer) VALUES ($1, 'y')", &[&i])
            .await
            .unwrap();
    }
    let all = read_until(&node, "r.public.orders", |r| r.len() >= 12).await;
    let ids: Vec<i64> = all.iter().map(|(k, _)| k["id"].as_i64().unwrap()).collect();
    let mut expected = vec![1, 2];
    expected.extend(100..110);
    assert_eq!(ids, expected, "every change once, in order");
    assert_eq!(worker.task_state("inventory").await["state"], "RUNNING");

    // Drop the slot under the running task.
    wait_streaming(&db, "r_slot").await;
    db.batch_execute(
        "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'r_slot'",
    )
    .await
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while db
        .batch_execute("SELECT pg_drop_replication_slot('r_slot')")
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the slot could not be dropped");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let task = worker
        .wait_task("inventory", "the task fails", |t| t["state"] == "FAILED")
        .await;
    let trace = task["trace"].as_str().unwrap();
    assert!(
        trace.contains("replication slot \"r_slot\" does not exist"),
        "{task}"
    );
    assert!(trace.contains("snapshot.mode=when_needed"), "{task}");
    worker.stop().await;
}

/// Debezium's events through Confluent's Avro converter and Sluice's registry: the key
/// and value schemas are registered under `<topic>-key` / `<topic>-value`, and what the
/// converter wrote reads back as Debezium's envelope, logical types included.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn debeziums_events_through_the_avro_converter() {
    let pg = Postgres::start_logical();
    let _db = shop(&pg).await;
    let url = registry::registry();
    let node = TestNode::start(&[]).await;
    let worker = RunningWorker::start(&node, "cdc-f", "").await;
    let avro = "io.confluent.connect.avro.AvroConverter";
    worker
        .create(
            "avro",
            connector(
                &pg,
                "a",
                json!({
                    "key.converter": avro,
                    "key.converter.schema.registry.url": url,
                    "value.converter": avro,
                    "value.converter.schema.registry.url": url,
                }),
            ),
        )
        .await;
    // Raw records: the converter's bytes.
    let mut config = ConsumerConfig::new([node.address.to_string()]);
    config.set("auto.offset.reset", "earliest").unwrap();
    let mut consumer = Consumer::new(config).await.unwrap();
    let tp = TopicPartition::new("a.public.orders", 0);
    consumer.assign([tp.clone()]).unwrap();
    consumer.seek(&tp, 0).unwrap();
    let mut records = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while records.len() < 2 && Instant::now() < deadline {
        records.extend(
            consumer
                .poll(Duration::from_millis(200))
                .await
                .unwrap_or_default(),
        );
    }
    assert_eq!(
        records.len(),
        2,
        "the snapshot's two rows: {}",
        worker.task_state("avro").await
    );
    let key_reader = registry::registry_converter(avro, &url, &[], true);
    let value_reader = registry::registry_converter(avro, &url, &[], false);
    let record = records.remove(0);
    let (key, value) = (record.key.unwrap(), record.value.unwrap());
    let (key, value) = tokio::task::spawn_blocking(move || {
        (
            key_reader
                .to_connect("a.public.orders", Some(&key))
                .unwrap(),
            value_reader
                .to_connect("a.public.orders", Some(&value))
                .unwrap(),
        )
    })
    .await
    .unwrap();
    let key = key.1.as_struct().unwrap().clone();
    assert_eq!(key.get("id"), Some(&sluice_connect::data::Value::Int32(1)));
    let (schema, value) = value;
    let schema = schema.unwrap();
    assert_eq!(schema.name.as_deref(), Some("a.public.orders.Envelope"));
    let envelope = value.as_struct().unwrap();
    let after = envelope.get("after").unwrap().as_struct().unwrap();
    assert_eq!(after.get("customer").unwrap().as_str(), Some("ada"));
    let state = after.schema.get_field("state").unwrap();
    assert_eq!(state.schema.name.as_deref(), Some("io.debezium.data.Enum"));
    assert_eq!(
        state.schema.parameters.get("allowed").map(String::as_str),
        Some("new,paid,shipped")
    );
    let amount = after.schema.get_field("amount").unwrap();
    assert_eq!(
        amount.schema.name.as_deref(),
        Some(sluice_connect::data::DECIMAL)
    );
    assert_eq!(
        after.get("amount"),
        Some(&sluice_connect::data::Value::Bytes(vec![0x04, 0x1a]))
    );
    assert_eq!(envelope.get("op").unwrap().as_str(), Some("r"));
    let subjects = registry::get(&url, "/subjects");
    for subject in ["a.public.orders-key", "a.public.orders-value"] {
        assert!(subjects.contains(subject), "{subject} not in {subjects}");
    }
    worker.stop().await;
}

/// A restart while the slot lags the committed offsets (the server heard no flush yet):
/// the stream replays transactions the offsets already cover, which are skipped, and the
/// transaction the offset names is skipped up to its change, not emitted again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restart_behind_the_slot_repeats_nothing() {
    let pg = Postgres::start_logical();
    let db = shop(&pg).await;
    let node = TestNode::start(&[]).await;
    // No status update reaches the server before the worker stops: the slot stays where
    // it was created.
    let config = connector(&pg, "s", json!({"status.update.interval.ms": "600000"}));
    let worker = RunningWorker::start(&node, "cdc-g", "").await;
    capture(&worker, &db, "lagging", config, "s_slot").await;
    for i in 200..204 {
        db.execute("INSERT INTO orders (id, customer) VALUES ($1, 'x')", &[&i])
            .await
            .unwrap();
    }
    assert_eq!(
        read_until(&node, "s.public.orders", |r| r.len() >= 6)
            .await
            .len(),
        6
    );
    worker
        .wait_for(
            "/connectors/lagging/offsets",
            "the last insert's offset",
            |b| b["offsets"][0]["offset"].get("lsn_proc").is_some(),
        )
        .await;
    worker.stop().await;
    let worker = RunningWorker::start(&node, "cdc-g", "").await;
    wait_running(&worker, &db, "lagging", "s_slot").await;
    db.execute("INSERT INTO orders (id, customer) VALUES (204, 'y')", &[])
        .await
        .unwrap();
    let all = read_until(&node, "s.public.orders", |r| r.len() >= 7).await;
    let ids: Vec<i64> = all.iter().map(|(k, _)| k["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [1, 2, 200, 201, 202, 203, 204], "nothing repeats");
    worker.stop().await;
}

/// Changes only to tables the connector does not capture still let the slot advance (the
/// server's keepalives report its WAL end, and nothing is in flight): no WAL is held for
/// a database nobody captures from.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_slot_advances_when_only_uncaptured_tables_change() {
    let pg = Postgres::start_logical();
    let db = shop(&pg).await;
    let node = TestNode::start(&[]).await;
    let worker = RunningWorker::start(&node, "cdc-h", "").await;
    let config = connector(&pg, "u", json!({"status.update.interval.ms": "500"}));
    capture(&worker, &db, "quiet", config, "u_slot").await;
    assert_eq!(
        read_until(&node, "u.public.orders", |r| r.len() >= 2)
            .await
            .len(),
        2
    );
    for i in 0..50 {
        db.execute("INSERT INTO ignored VALUES ($1)", &[&i])
            .await
            .unwrap();
    }
    let written: i64 = db
        .query_one("SELECT (pg_current_wal_lsn() - '0/0')::bigint", &[])
        .await
        .unwrap()
        .get(0);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let flushed: i64 = db
            .query_one(
                "SELECT (confirmed_flush_lsn - '0/0')::bigint FROM pg_replication_slots WHERE slot_name = 'u_slot'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if flushed >= written {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the slot stayed at {flushed}, behind {written}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    worker.stop().await;
}
