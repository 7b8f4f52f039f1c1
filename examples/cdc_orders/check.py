#!/usr/bin/env python3
"""The guide's CDC flow end to end, with real systems at each end, and two SIGKILLs.

MariaDB 10.11 (`order_service.orders`, `order_service.order_items`, schema.sql)
  → Sluice's Connect worker running the guide's `MySqlConnector` JSON
    (mysql-source-orders.json, verbatim but for host and ports)
  → topics `cdc.order_service.orders`, `cdc.order_service.order_items`
  → the `cdc_orders` stream job (job.rs: the envelope unwrapped, per-customer totals in
    keyed state, exactly-once Kafka sink) → topic `customer_totals`
  → the Elasticsearch sink into OpenSearch 2.19 (opensearch-sink-totals.json)
    and the JDBC sink into PostgreSQL 15 (postgres-sink-totals.json).

A random workload of inserts, updates (quantities, prices, an item moved to another
order, an order moved to another customer, multi-row updates) and deletes runs in
transactions; meanwhile the Connect worker (source and both sinks) is SIGKILLed and
started again, then the stream job is SIGKILLed and started again. When the workload
stops, the OpenSearch documents, the Postgres rows and the topic's latest committed value
per customer must all equal totals.sql run on MariaDB, customer for customer and cent for
cent (a customer whose last order was deleted must be gone from both: the job's tombstone
deleted the document and the row); the snapshot must not have been taken twice (the worker resumed from its offsets);
the job must have restored a checkpoint after its kill.

Usage: check.py --sluice target/debug/sluice --job target/debug/examples/cdc_orders
                [--transactions 600] [--seed N] [--keep]
Prints PASS/FAIL lines and "cdc_orders: N passed, M failed"; exits 1 on a failure.
"""
import argparse
import decimal
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
for sub in ("compat/cdc", "compat/cdc/mysql", "compat/connect"):
    sys.path.insert(0, os.path.join(ROOT, sub))
import cdc_check  # noqa: E402
import mysql_check  # noqa: E402
from connect_check import Proc, free_port, http, start_sluice, wait_rest, wait_until  # noqa: E402

RESULTS = []
TOTALS_TOPIC = "customer_totals"
CUSTOMERS = 12
# Gets one order after the workload, which is then deleted.
LEAVING_CUSTOMER = 1000


def check(name, ok, reason=""):
    RESULTS.append(ok)
    print(("PASS cdc_orders: %s" % name) if ok else ("FAIL cdc_orders: %s: %s" % (name, reason)), flush=True)
    return ok


def log(message):
    print("cdc_orders: %s" % message, flush=True)


def connector(file, **overrides):
    """A connector JSON of this directory with the keys that name hosts replaced."""
    with open(os.path.join(HERE, file)) as f:
        spec = json.load(f)
    for key, value in overrides.items():
        assert key.replace("_", ".") in spec["config"], key
        spec["config"][key.replace("_", ".")] = value
    return spec


def cents(text):
    return int(decimal.Decimal(str(text)) * 100)


# ------------------------------------------------------------------------ workload

def seed_rows(db, rng):
    """Orders and items present before the connector starts (the snapshot)."""
    sql = []
    for order in range(1, 31):
        sql.append("INSERT INTO orders (id, customer_id, status) VALUES (%d, %d, 'PAID');"
                   % (order, rng.randint(1, CUSTOMERS)))
        for line in range(rng.randint(0, 3)):
            sql.append("INSERT INTO order_items (order_id, sku, quantity, unit_price) VALUES (%d, 'SKU-%d', %d, %s);"
                       % (order, rng.randint(1, 99), rng.randint(1, 5), price(rng)))
    db.script("\n".join(sql), db="order_service")
    return 30


def price(rng):
    return "%d.%02d" % (rng.randint(0, 120), rng.randint(0, 99))


RANDOM_ORDER = "(SELECT id FROM (SELECT id FROM orders ORDER BY RAND() LIMIT 1) o)"
RANDOM_ITEM = "(SELECT id FROM (SELECT id FROM order_items ORDER BY RAND() LIMIT 1) i)"


def operation(rng):
    """One transaction of the workload, as SQL."""
    kind = rng.choices(
        ["new order", "add item", "change item", "move item", "move order", "status", "delete item",
         "delete order", "reprice order"],
        weights=[5, 3, 4, 1, 1, 2, 2, 2, 1])[0]
    if kind == "new order":
        items = ", ".join("(@o, 'SKU-%d', %d, %s)" % (rng.randint(1, 99), rng.randint(1, 5), price(rng))
                          for _ in range(rng.randint(1, 3)))
        return ("START TRANSACTION; INSERT INTO orders (customer_id) VALUES (%d); SET @o = LAST_INSERT_ID(); "
                "INSERT INTO order_items (order_id, sku, quantity, unit_price) VALUES %s; COMMIT;"
                % (rng.randint(1, CUSTOMERS), items))
    if kind == "add item":
        return ("INSERT INTO order_items (order_id, sku, quantity, unit_price) SELECT id, 'SKU-%d', %d, %s "
                "FROM orders ORDER BY RAND() LIMIT 1;" % (rng.randint(1, 99), rng.randint(1, 5), price(rng)))
    if kind == "change item":
        return "UPDATE order_items SET quantity = %d, unit_price = %s WHERE id = %s;" % (
            rng.randint(1, 9), price(rng), RANDOM_ITEM)
    if kind == "move item":
        return "UPDATE order_items SET order_id = %s WHERE id = %s;" % (RANDOM_ORDER, RANDOM_ITEM)
    if kind == "move order":
        return "UPDATE orders SET customer_id = %d WHERE id = %s;" % (rng.randint(1, CUSTOMERS), RANDOM_ORDER)
    if kind == "status":
        return "UPDATE orders SET status = '%s' WHERE id = %s;" % (
            rng.choice(["NEW", "PAID", "SHIPPED", "CANCELLED"]), RANDOM_ORDER)
    if kind == "delete item":
        return "DELETE FROM order_items WHERE id = %s;" % RANDOM_ITEM
    if kind == "delete order":
        return ("START TRANSACTION; SELECT id INTO @o FROM orders ORDER BY RAND() LIMIT 1; "
                "DELETE FROM order_items WHERE order_id = @o; DELETE FROM orders WHERE id = @o; COMMIT;")
    # A multi-row update: every item of an order.
    return "UPDATE order_items SET unit_price = unit_price + 0.01 WHERE order_id = %s;" % RANDOM_ORDER


class Workload(threading.Thread):
    def __init__(self, db, seed):
        super().__init__(daemon=True)
        self.db = db
        self.rng = random.Random(seed)
        self.stopped = threading.Event()
        self.done = 0
        self.error = None

    def run(self):
        try:
            while not self.stopped.is_set():
                self.db.script(operation(self.rng), db="order_service")
                self.done += 1
                time.sleep(0.02)
        except Exception as error:  # reported by the main thread
            self.error = error

    def stop(self):
        self.stopped.set()
        self.join(60)


# ------------------------------------------------------------------------ the views

def expected(db):
    with open(os.path.join(HERE, "totals.sql")) as f:
        rows = db.rows(f.read())
    return {int(r["customer_id"]): (int(r["orders"]), cents(r["total"])) for r in rows}


def opensearch_view(url):
    http("POST", url + "/%s/_refresh" % TOTALS_TOPIC)
    status, body = http("GET", url + "/%s/_search?size=1000" % TOTALS_TOPIC)
    if status != 200:
        return None
    hits = body["hits"]["hits"]
    return {int(h["_id"]): (int(h["_source"]["orders"]), cents(h["_source"]["total"])) for h in hits}


def postgres_view(pg):
    try:
        rows = pg.rows("SELECT customer_id, orders, total::text AS total FROM %s" % TOTALS_TOPIC, db="reporting")
    except ValueError:
        return None  # the table is not there yet
    return {int(r["customer_id"]): (int(r["orders"]), cents(r["total"])) for r in rows}


def topic_view(bootstrap):
    """The latest committed value per customer in the job's output (a tombstone removes)."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cdc-orders-check-%d" % time.time_ns(),
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(TOTALS_TOPIC, 0), timeout=10)
        consumer.assign([TopicPartition(TOTALS_TOPIC, 0, 0)])
        view, deadline = {}, time.time() + 30
        while time.time() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                if consumer.position([TopicPartition(TOTALS_TOPIC, 0)])[0].offset >= high:
                    break
                continue
            if message.error():
                continue
            key = json.loads(message.key())["payload"]
            if message.value() is None:
                view.pop(key, None)
            else:
                payload = json.loads(message.value())["payload"]
                view[key] = (payload["orders"], decimal_cents(payload["total"]))
            if message.offset() + 1 >= high:
                break
        return view
    finally:
        consumer.close()


def decimal_cents(encoded):
    import base64
    raw = base64.b64decode(encoded)
    return int.from_bytes(raw, "big", signed=True)


def count_ops(bootstrap, topic, op):
    records = cdc_check.read_all(bootstrap, topic=topic)
    return sum(1 for r in records if r.get("value") and cdc_check.payload(r).get("op") == op)


def difference(want, got):
    if got is None:
        return "nothing to read"
    lines = []
    for customer in sorted(set(want) | set(got)):
        if want.get(customer) != got.get(customer):
            lines.append("customer %d: MariaDB says %s, got %s" % (customer, want.get(customer), got.get(customer)))
    return "; ".join(lines[:8]) + ("" if len(lines) <= 8 else " (%d more)" % (len(lines) - 8))


# ------------------------------------------------------------------------ the run

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sluice", default=os.path.join(ROOT, "target/debug/sluice"))
    parser.add_argument("--job", default=os.path.join(ROOT, "target/debug/examples/cdc_orders"))
    parser.add_argument("--transactions", type=int, default=600, help="how many the workload commits")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    log("seed %d (--seed %d repeats the workload)" % (seed, seed))
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="sluice-cdc-orders-")
    started = time.time()
    procs, db, pg = [], None, None
    try:
        # OpenSearch's JVM takes longest: it starts first and the rest comes up meanwhile.
        os_port = free_port()
        opensearch = Proc("opensearch", [os.path.join(ROOT, "compat/opensearch/start.sh"), str(os_port),
                                         os.path.join(work, "opensearch")], work)
        procs.append(opensearch)
        server, bootstrap = cdc_check.start_broker(args.sluice, work)
        procs.append(server)
        # The guide's JSON says database.server.id 1: the database gets another id.
        db = mysql_check.MariaDB(server_id=2)
        with open(os.path.join(HERE, "schema.sql")) as f:
            db.script(f.read(), db=None)
        initial_orders = seed_rows(db, rng)
        pg = cdc_check.Postgres()
        pg.query("CREATE DATABASE reporting", db="postgres")

        port = free_port()
        props = cdc_check.worker_props(work, "orders-worker", bootstrap, port)
        with open(props, "a") as f:
            f.write("session.timeout.ms=6000\nheartbeat.interval.ms=1000\n")
        url = "http://127.0.0.1:%d" % port

        def start_worker(n):
            worker = start_sluice(work, "worker-%d" % n, props, args.sluice)
            procs.append(worker)
            wait_rest(url, worker)
            return worker

        def start_job(n):
            job = Proc("job-%d" % n, [args.job, "--bootstrap", bootstrap, "--checkpoint-dir",
                                      os.path.join(work, "checkpoints"), "--checkpoint-interval-ms", "500"], work)
            procs.append(job)
            return job

        worker = start_worker(1)
        source = connector("mysql-source-orders.json", database_hostname="127.0.0.1", database_port=str(db.port),
                           schema_history_internal_kafka_bootstrap_servers=bootstrap)
        status, body = http("POST", url + "/connectors", source)
        check("the guide's MySqlConnector JSON is accepted", status == 201, "%s %s" % (status, body))
        wait_until("the snapshot of orders",
                   lambda: count_ops(bootstrap, "cdc.order_service.orders", "r") >= initial_orders, 90)
        job = start_job(1)

        wait_until("OpenSearch", lambda: "opensearch ready" in open(opensearch.log).read()
                   or (opensearch.p.poll() is not None and sys.exit("OpenSearch exited:\n" + opensearch.tail())), 180)
        os_url = "http://127.0.0.1:%d" % os_port
        for spec in (connector("opensearch-sink-totals.json", connection_url=os_url),
                     connector("postgres-sink-totals.json",
                               connection_url="jdbc:postgresql://127.0.0.1:%d/reporting" % pg.port)):
            status, body = http("POST", url + "/connectors", spec)
            check("%s created" % spec["name"], status == 201, "%s %s" % (status, body))

        workload = Workload(db, rng.randrange(1 << 30))
        workload.start()
        # The kills come a third and two thirds of the way through the workload.
        phase = args.transactions // 3

        def reached(n):
            wait_until("%d transactions" % n, lambda: workload.done >= n or workload.error is not None, 300)

        reached(phase)
        os.killpg(worker.p.pid, signal.SIGKILL)
        worker.p.wait()
        log("Connect worker SIGKILLed after %d transactions" % workload.done)
        worker = start_worker(2)
        reached(2 * phase)
        os.killpg(job.p.pid, signal.SIGKILL)
        job.p.wait()
        log("stream job SIGKILLed after %d transactions" % workload.done)
        job = start_job(2)
        reached(args.transactions)
        workload.stop()
        check("the workload ran (%d transactions)" % workload.done, workload.error is None and workload.done > 50,
              repr(workload.error))
        views = {"OpenSearch": lambda: opensearch_view(os_url), "Postgres": lambda: postgres_view(pg)}
        # A customer whose only order goes: the job writes a tombstone, OpenSearch deletes
        # the document and Postgres the row.
        db.script("START TRANSACTION; INSERT INTO orders (customer_id) VALUES (%d); "
                  "INSERT INTO order_items (order_id, sku, quantity, unit_price) VALUES (LAST_INSERT_ID(), 'SKU-0', 2, 5.25); "
                  "COMMIT;" % LEAVING_CUSTOMER, db="order_service")
        for name, view in views.items():
            try:
                wait_until("customer %d in %s" % (LEAVING_CUSTOMER, name),
                           lambda: (view() or {}).get(LEAVING_CUSTOMER) == (1, 1050), 120)
            except RuntimeError:
                pass
            check("%s shows a new customer's order" % name, (view() or {}).get(LEAVING_CUSTOMER) == (1, 1050),
                  str((view() or {}).get(LEAVING_CUSTOMER)))
        db.script("START TRANSACTION; SELECT id INTO @o FROM orders WHERE customer_id = %d; "
                  "DELETE FROM order_items WHERE order_id = @o; DELETE FROM orders WHERE id = @o; COMMIT;"
                  % LEAVING_CUSTOMER, db="order_service")
        want = expected(db)
        log("MariaDB: %d customers with orders, %d orders" % (len(want), sum(o for o, _ in want.values())))
        for name, view in views.items():
            try:
                wait_until("%s to equal MariaDB" % name, lambda: view() == want, 120)
            except RuntimeError:
                pass
            got = view()
            check("%s documents equal totals.sql on MariaDB (%d customers)" % (name, len(want)),
                  got == want, difference(want, got))
        got = topic_view(bootstrap)
        check("the job's output topic (read_committed, latest per key) equals totals.sql", got == want,
              difference(want, got))
        check("the snapshot was taken once (the restarted worker resumed from its offsets)",
              count_ops(bootstrap, "cdc.order_service.orders", "r") == initial_orders,
              "%d snapshot events for %d rows" % (count_ops(bootstrap, "cdc.order_service.orders", "r"),
                                                  initial_orders))
        with open(job.log) as f:
            restarted = f.read()
        check("the killed job restarted from its checkpoint", "restored the job from checkpoint" in restarted,
              restarted[-800:])
        for name in ("mysql-source-orders", "opensearch-sink-totals", "postgres-sink-totals"):
            status, body = http("GET", url + "/connectors/%s/status" % name)
            states = [body["connector"]["state"]] + [t["state"] for t in body.get("tasks", [])] if status == 200 else []
            check("%s RUNNING after the kills" % name, states and set(states) == {"RUNNING"}, "%s %s" % (status, body))
    finally:
        for proc in reversed(procs):
            proc.stop()
        for server in (db, pg):
            if server:
                server.stop()
        if args.keep or not all(RESULTS):
            log("work dir kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    passed = sum(RESULTS)
    log("ran in %.0fs" % (time.time() - started))
    print("cdc_orders: %d passed, %d failed" % (passed, len(RESULTS) - passed), flush=True)
    return 0 if RESULTS and all(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
