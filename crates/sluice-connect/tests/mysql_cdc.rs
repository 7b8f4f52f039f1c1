//! Debezium's MySQL connector, native, against a real MariaDB 10.11 (binlog in ROW
//! format) and a real broker, through the worker's REST API: the snapshot and the binlog
//! as Debezium's events, the schema history and schema change topics, offsets in
//! Debezium's shape, a restart that resumes without gaps or repeats (its schema rebuilt
//! from the history, across an ALTER TABLE), and the failures a user meets first (wrong
//! credentials, a database that is down, a binlog purged past the offset); every
//! MariaDB type through the registry's Avro converter, read back as through JsonConverter.
//! `compat/cdc/mysql` compares the events with Debezium's own, field by field.

#[path = "support/cdc.rs"]
mod cdc;
#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;
#[path = "support/worker.rs"]
mod harness;
#[path = "support/mariadb.rs"]
mod mariadb;
#[path = "support/registry.rs"]
mod registry;

use std::time::{Duration, Instant};

use cdc::{ops, raw_values, read_until};
use common::TestNode;
use harness::RunningWorker;
use mariadb::MariaDb;
use serde_json::{Value, json};

fn connector(db: &MariaDb, node: &TestNode, prefix: &str, extra: Value) -> Value {
    let mut config = json!({
        "connector.class": "io.debezium.connector.mysql.MySqlConnector",
        "database.hostname": "127.0.0.1",
        "database.port": db.port.to_string(),
        "database.user": "cdc",
        "database.password": "secret",
        "database.server.id": "184054",
        "topic.prefix": prefix,
        "database.include.list": "shop",
        "table.include.list": "shop.orders,shop.items",
        "schema.history.internal.kafka.bootstrap.servers": node.address.to_string(),
        "schema.history.internal.kafka.topic": format!("history.{prefix}"),
        "include.schema.changes": "true",
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

fn shop(db: &MariaDb) {
    db.sql(
        "CREATE DATABASE shop;
         USE shop;
         CREATE TABLE orders (
             id INT AUTO_INCREMENT PRIMARY KEY,
             customer VARCHAR(32) NOT NULL,
             amount DECIMAL(10,2),
             state ENUM('new','paid','shipped') NOT NULL DEFAULT 'new',
             placed TIMESTAMP(6) NULL,
             day DATE
         );
         CREATE TABLE items (order_id INT NOT NULL, line_no SMALLINT NOT NULL, sku CHAR(8), PRIMARY KEY (order_id, line_no));
         CREATE TABLE ignored (id INT PRIMARY KEY);
         INSERT INTO orders VALUES
           (1, 'ada', 10.50, 'new', '2024-01-15 10:00:00.5', '2024-01-15'),
           (2, 'bob', 20.00, 'paid', NULL, NULL);
         INSERT INTO items VALUES (1, 1, 'SKU-1');",
    );
}

/// Waits until the connector's task runs and its binlog dump thread is connected (what
/// commits from now on is captured).
async fn wait_streaming(worker: &RunningWorker, db: &MariaDb, name: &str) {
    worker
        .wait_task(name, "the task runs", |t| t["state"] == "RUNNING")
        .await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let dumps = db.sql(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'cdc' AND COMMAND LIKE 'Binlog Dump%'",
        );
        if dumps.trim() != "0" {
            return;
        }
        let task = worker.task_state(name).await;
        assert_ne!(task["state"], "FAILED", "{task}");
        assert!(Instant::now() < deadline, "no binlog dump thread: {task}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the worker committed the offset of `event` (a streamed change): Debezium's
/// offset names the GTIDs completed before its transaction and the rows of its rows event
/// done, `row` + 1.
async fn wait_committed(worker: &RunningWorker, name: &str, event: &Value) {
    let source = &event["source"];
    let gtid = source["gtid"].as_str().expect("a streamed event's GTID");
    let (prefix, sequence) = gtid.rsplit_once('-').expect("domain-server-sequence");
    let before = format!("{prefix}-{}", sequence.parse::<u64>().unwrap() - 1);
    let row = source["row"].as_i64().unwrap() + 1;
    worker
        .wait_for(
            &format!("/connectors/{name}/offsets"),
            "the last event's offset committed",
            |body| {
                let offset = &body["offsets"][0]["offset"];
                offset["gtids"] == before.as_str() && offset["row"] == row
            },
        )
        .await;
}

/// Deletes connector `name` and waits until it is gone and its binlog reader too.
async fn delete(worker: &RunningWorker, db: &MariaDb, name: &str) {
    worker
        .call("DELETE", &format!("/connectors/{name}"), None)
        .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _) = worker
            .call("GET", &format!("/connectors/{name}"), None)
            .await;
        let dumps = db.sql(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'cdc' AND COMMAND LIKE 'Binlog Dump%'",
        );
        if status == 404 && dumps.trim() == "0" {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name} still there ({status}, {dumps} dump threads)"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The snapshot's rows as `op: r` with Debezium's markers, then inserts, updates (one
/// changing the primary key: delete, tombstone, create) and deletes, an ALTER TABLE the
/// later events follow, the schema change and history topics, and the offsets.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_snapshot_then_the_binlog_as_debezium_writes_them() {
    let db = MariaDb::start();
    shop(&db);
    let node = TestNode::start(&[]).await;
    let worker = RunningWorker::start(&node, "mysql-a", "").await;
    worker
        .create("shop", connector(&db, &node, "dbz", json!({})))
        .await;
    wait_streaming(&worker, &db, "shop").await;
    let snapshot = read_until(&node, "dbz.shop.orders", |r| r.len() >= 2).await;
    assert_eq!(ops(&snapshot), ["r", "r"], "{snapshot:?}");
    let (key, first) = &snapshot[0];
    assert_eq!(key, &json!({"id": 1}));
    assert_eq!(first["after"]["customer"], "ada");
    assert_eq!(first["after"]["amount"], "BBo=", "10.50 as Decimal bytes");
    assert_eq!(first["after"]["state"], "new");
    assert_eq!(first["after"]["placed"], "2024-01-15T10:00:00.5Z");
    assert_eq!(first["after"]["day"], 19737);
    assert_eq!(first["source"]["snapshot"], "first");
    assert_eq!(first["source"]["connector"], "mysql");
    assert_eq!(first["source"]["server_id"], 0);
    assert_eq!(
        snapshot[1].1["source"]["snapshot"],
        "last_in_data_collection"
    );
    let lines = read_until(&node, "dbz.shop.items", |r| !r.is_empty()).await;
    assert_eq!(lines[0].1["source"]["snapshot"], "last");
    assert_eq!(lines[0].0, json!({"order_id": 1, "line_no": 1}));

    db.sql(
        "USE shop;
         INSERT INTO orders (customer, amount, placed) VALUES ('cy', 5.25, '2024-02-01 00:00:00');
         UPDATE orders SET state = 'shipped' WHERE id = 1;
         UPDATE orders SET id = 102 WHERE id = 2;
         DELETE FROM orders WHERE id = 3;
         ALTER TABLE orders ADD COLUMN channel VARCHAR(16) DEFAULT 'web';
         INSERT INTO orders (customer) VALUES ('dee');
         INSERT INTO ignored VALUES (1);",
    );
    let all = read_until(&node, "dbz.shop.orders", |r| r.len() >= 10).await;
    assert_eq!(
        ops(&all[2..]),
        ["c", "u", "d", "tombstone", "c", "d", "tombstone", "c"],
        "{all:?}"
    );
    let insert = &all[2].1;
    assert_eq!(insert["after"]["customer"], "cy");
    assert_eq!(insert["after"]["placed"], "2024-02-01T00:00:00.000000Z");
    assert_eq!(insert["source"]["snapshot"], "false");
    assert_eq!(insert["source"]["server_id"], 1);
    let gtid = insert["source"]["gtid"].as_str().unwrap();
    assert!(gtid.starts_with("0-1-"), "a MariaDB GTID: {gtid}");
    let update = &all[3].1;
    assert_eq!(update["before"]["state"], "new");
    assert_eq!(update["after"]["state"], "shipped");
    assert_eq!(all[4].0, json!({"id": 2}));
    assert_eq!(all[6].0, json!({"id": 102}));
    let last = &all[9].1;
    assert_eq!(last["after"]["customer"], "dee");
    assert_eq!(last["after"]["channel"], "web", "the ALTER is followed");

    // The schema change topic: the snapshot's DDL, then the ALTER.
    let changes = read_until(&node, "dbz", |r| {
        r.iter().any(|(_, v)| {
            v["ddl"]
                .as_str()
                .is_some_and(|d| d.starts_with("ALTER TABLE orders"))
        })
    })
    .await;
    assert_eq!(
        changes[0].1["ddl"],
        "SET character_set_server=utf8mb4, collation_server=utf8mb4_general_ci"
    );
    let alter = changes
        .iter()
        .find(|(_, v)| v["ddl"].as_str().unwrap_or("").starts_with("ALTER"))
        .unwrap();
    assert_eq!(alter.0, json!({"databaseName": "shop"}));
    assert_eq!(alter.1["tableChanges"][0]["type"], "ALTER");
    let columns = alter.1["tableChanges"][0]["table"]["columns"]
        .as_array()
        .unwrap();
    assert_eq!(columns.last().unwrap()["name"], "channel");
    // The history topic holds the same DDL, as Debezium's pretty-printed documents.
    let history = read_until(&node, "history.dbz", |r| r.len() >= changes.len()).await;
    assert_eq!(history.len(), changes.len());
    assert!(
        history
            .iter()
            .all(|(k, v)| k.is_null() && v["position"].is_object())
    );
    worker.stop().await;
}

/// A worker stopped while changes keep coming (and an ALTER TABLE among them) resumes
/// from its offset: nothing is lost or repeated, and its schema is rebuilt from the
/// history topic up to the offset.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_worker_resumes_without_gaps_or_repeats() {
    let db = MariaDb::start();
    shop(&db);
    let node = TestNode::start(&[]).await;
    let worker = RunningWorker::start(&node, "mysql-b", "").await;
    worker
        .create("shop", connector(&db, &node, "dbz", json!({})))
        .await;
    wait_streaming(&worker, &db, "shop").await;
    for i in 10..20 {
        db.sql(&format!(
            "INSERT INTO shop.orders (id, customer) VALUES ({i}, 'x')"
        ));
    }
    let first = read_until(&node, "dbz.shop.orders", |r| r.len() >= 12).await;
    assert_eq!(first.len(), 12, "{:?}", ops(&first));
    wait_committed(&worker, "shop", &first[11].1).await;
    worker.stop().await;

    db.sql(
        "USE shop;
         BEGIN;
         INSERT INTO orders (id, customer) VALUES (20, 'y');
         UPDATE orders SET customer = 'z' WHERE id = 10;
         DELETE FROM orders WHERE id = 11;
         COMMIT;
         ALTER TABLE orders ADD COLUMN note TEXT;
         INSERT INTO orders (id, customer, note) VALUES (21, 'w', 'after the alter');",
    );
    let worker = RunningWorker::start(&node, "mysql-b", "").await;
    wait_streaming(&worker, &db, "shop").await;
    let all = read_until(&node, "dbz.shop.orders", |r| r.len() >= 17).await;
    assert_eq!(
        ops(&all[12..]),
        ["c", "u", "d", "tombstone", "c"],
        "{all:?}"
    );
    assert_eq!(all.len(), 17, "nothing repeats: {:?}", ops(&all));
    assert_eq!(all[16].1["after"]["note"], "after the alter");
    assert!(all[12].1["after"].get("note").is_none(), "before the alter");
    worker.stop().await;
}

/// The failures a user meets first: wrong credentials and a database that is down fail
/// the task with the reason (no retry storm), a restart runs once the database is back;
/// the database killed mid-stream is reconnected to without a loss; a binlog purged past
/// the stored offset names `snapshot.mode=when_needed`, which then takes a new snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wrong_credentials_a_database_down_and_a_purged_binlog() {
    let mut db = MariaDb::start();
    shop(&db);
    let node = TestNode::start(&[]).await;
    let worker = RunningWorker::start(&node, "mysql-c", "").await;
    worker
        .create(
            "wrong",
            connector(&db, &node, "w", json!({"database.password": "nope"})),
        )
        .await;
    let task = worker
        .wait_task("wrong", "the task fails", |t| t["state"] == "FAILED")
        .await;
    assert!(
        task["trace"].as_str().unwrap().contains("Access denied"),
        "{task}"
    );
    worker.call("DELETE", "/connectors/wrong", None).await;

    db.kill();
    worker
        .create("shop", connector(&db, &node, "dbz", json!({})))
        .await;
    let task = worker
        .wait_task("shop", "the task fails", |t| t["state"] == "FAILED")
        .await;
    assert!(
        task["trace"]
            .as_str()
            .unwrap()
            .contains("Unable to connect"),
        "{task}"
    );
    db.restart();
    worker
        .call("POST", "/connectors/shop/tasks/0/restart", None)
        .await;
    wait_streaming(&worker, &db, "shop").await;
    db.sql("INSERT INTO shop.orders (id, customer) VALUES (30, 'back')");
    let records = read_until(&node, "dbz.shop.orders", |r| r.len() >= 3).await;
    assert_eq!(ops(&records), ["r", "r", "c"]);

    // The database killed and started again mid-stream: the binlog reader reconnects
    // from the last event it handed over; nothing is lost or repeated.
    db.kill();
    db.restart();
    for i in 40..45 {
        db.sql(&format!(
            "INSERT INTO shop.orders (id, customer) VALUES ({i}, 'after the restart')"
        ));
    }
    let records = read_until(&node, "dbz.shop.orders", |r| r.len() >= 8).await;
    assert_eq!(
        ops(&records[2..]),
        ["c", "c", "c", "c", "c", "c"],
        "{records:?}"
    );
    let task = worker.task_state("shop").await;
    assert_eq!(task["state"], "RUNNING", "{task}");
    wait_committed(&worker, "shop", &records[7].1).await;
    delete(&worker, &db, "shop").await;

    // The binlog the offset names is purged while the connector is away.
    db.sql("FLUSH BINARY LOGS; INSERT INTO shop.orders (id, customer) VALUES (31, 'gone'); FLUSH BINARY LOGS;");
    let current = db.sql("SHOW MASTER STATUS");
    let current = current.split_whitespace().next().unwrap().to_string();
    db.sql(&format!("PURGE BINARY LOGS TO '{current}'"));
    worker
        .create("shop", connector(&db, &node, "dbz", json!({})))
        .await;
    let task = worker
        .wait_task("shop", "the task fails", |t| t["state"] == "FAILED")
        .await;
    assert!(
        task["trace"]
            .as_str()
            .unwrap()
            .contains("snapshot.mode=when_needed"),
        "{task}"
    );
    delete(&worker, &db, "shop").await;
    worker
        .create(
            "shop",
            connector(&db, &node, "dbz", json!({"snapshot.mode": "when_needed"})),
        )
        .await;
    wait_streaming(&worker, &db, "shop").await;
    let records = read_until(&node, "dbz.shop.orders", |r| r.len() >= 17).await;
    assert_eq!(
        ops(&records[8..]),
        ["r"; 9],
        "a new snapshot of the 9 rows: {records:?}"
    );
    worker.stop().await;
}

/// Every MariaDB column type a typical schema uses, captured twice at once: through
/// JsonConverter with schemas and through Confluent's Avro converter with Sluice's
/// registry. Read back with each converter, the `after` of each event (a snapshot row and
/// a streamed one) is the same Connect data, logical types and parameters included: a
/// Debezium consumer may use either.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_type_through_the_avro_converter_reads_back_as_through_json() {
    let db = MariaDb::start();
    let insert = "INSERT INTO shop.types (c_tinyint, c_tinyint_u, c_mediumint, c_bigint_u, \
                  c_bool, c_decimal, c_float, c_double, c_bit, c_year, c_char, c_text, c_binary, \
                  c_varbinary, c_enum, c_set, c_json, c_date, c_time, c_datetime, c_timestamp) VALUES";
    let row = "(-5, 200, 70000, 18446744073709551615, 1, -1234.5678, 1.5, -2.25, b'101', \
               2024, 'ab', 'text ü', x'00ff', x'c0ffee', 'paid', 'a,c', '{\"k\": [1, null]}', \
               '2024-02-29', '-12:30:00.25', '2024-02-29 13:45:56.123456', '2024-02-29 13:45:56')";
    db.sql(&format!(
        "CREATE DATABASE shop;
         CREATE TABLE shop.types (
             id INT AUTO_INCREMENT PRIMARY KEY,
             c_tinyint TINYINT, c_tinyint_u TINYINT UNSIGNED, c_mediumint MEDIUMINT,
             c_bigint_u BIGINT UNSIGNED, c_bool BOOLEAN, c_decimal DECIMAL(12,4),
             c_float FLOAT, c_double DOUBLE, c_bit BIT(3), c_year YEAR, c_char CHAR(2),
             c_text TEXT, c_binary BINARY(2), c_varbinary VARBINARY(8),
             c_enum ENUM('new','paid'), c_set SET('a','b','c'), c_json JSON, c_date DATE,
             c_time TIME(6), c_datetime DATETIME(6), c_timestamp TIMESTAMP NULL
         );
         {insert} {row};"
    ));
    let url = registry::registry();
    let node = TestNode::start(&[]).await;
    let worker = RunningWorker::start(&node, "mysql-avro", "").await;
    let json_converter = "org.apache.kafka.connect.json.JsonConverter";
    let avro = "io.confluent.connect.avro.AvroConverter";
    let base = |prefix: &str, id: &str, converter: &str| {
        connector(
            &db,
            &node,
            prefix,
            json!({
                "database.server.id": id,
                "table.include.list": "shop.types",
                "key.converter": converter,
                "key.converter.schemas.enable": "true",
                "key.converter.schema.registry.url": url,
                "value.converter": converter,
                "value.converter.schemas.enable": "true",
                "value.converter.schema.registry.url": url,
            }),
        )
    };
    worker
        .create("json", base("j", "5501", json_converter))
        .await;
    worker.create("avro", base("a", "5502", avro)).await;
    wait_streaming(&worker, &db, "json").await;
    wait_streaming(&worker, &db, "avro").await;
    db.sql(&format!(
        "{insert} {row}, (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
             NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);"
    ));
    let mut events = Vec::new();
    for (topic, class) in [("j.shop.types", json_converter), ("a.shop.types", avro)] {
        let raw = raw_values(&node, topic, 3).await;
        assert_eq!(raw.len(), 3, "{topic}: {}", worker.task_state(class).await);
        let reader =
            registry::registry_converter(class, &url, &[("schemas.enable", "true")], false);
        let topic = topic.to_string();
        let decoded = tokio::task::spawn_blocking(move || {
            raw.iter()
                .map(|value| reader.to_connect(&topic, Some(value)).unwrap())
                .collect::<Vec<_>>()
        })
        .await
        .unwrap();
        events.push(decoded);
    }
    let (json_events, avro_events) = (&events[0], &events[1]);
    for (index, ((_, json_value), (_, avro_value))) in
        json_events.iter().zip(avro_events).enumerate()
    {
        let (from_json, from_avro) = (after(json_value), after(avro_value));
        assert_eq!(from_json.schema.fields.len(), 22);
        for field in &from_json.schema.fields {
            let other = from_avro
                .schema
                .get_field(&field.name)
                .unwrap_or_else(|| panic!("event {index}: {} missing through Avro", field.name));
            assert_eq!(
                other.schema, field.schema,
                "event {index}: {}'s schema through Avro",
                field.name
            );
            assert_eq!(
                from_avro.get(&field.name),
                from_json.get(&field.name),
                "event {index}: {} through Avro",
                field.name
            );
        }
    }
    // The snapshot row and the streamed copy of it carry the same values.
    let values = |event: &(
        Option<sluice_connect::data::SchemaRef>,
        sluice_connect::data::Value,
    )| after(&event.1).values[1..].to_vec();
    assert_eq!(values(&json_events[0]), values(&json_events[1]));
    let subjects = registry::get(&url, "/subjects");
    assert!(subjects.contains("a.shop.types-value"), "{subjects}");
    worker.stop().await;
}

/// The `after` struct of a change event read back through a converter.
fn after(event: &sluice_connect::data::Value) -> sluice_connect::data::Struct {
    event
        .as_struct()
        .and_then(|envelope| envelope.get("after"))
        .and_then(|after| after.as_struct())
        .expect("an envelope with an after struct")
        .clone()
}
