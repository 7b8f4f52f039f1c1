#!/usr/bin/env python3
"""CDC compat: Debezium 3.6.1's PostgreSQL connector, on Apache Kafka Connect 4.3.0 (the
Kafka version Debezium 3.6 is built on), is the judge of Sluice's native Postgres source
(the same connector class, io.debezium.connector.postgresql.PostgresConnector, in
`sluice connect worker.properties`). Both write into a Sluice broker.

One side's run (`capture_side`):
  1. a Sluice broker (`sluice server --set ...`, as compat/connect/connect_check.py), and
     PostgreSQL 15 (Debian's, wal_level=logical) in a temp dir, both on 127.0.0.1;
  2. database `inventory` (`prepare_database`): one table of every common column type, a
     composite key, REPLICA IDENTITY FULL, no primary key, a TOASTed text/bytea table, a
     table left out of table.include.list; rows in each before the connector starts;
  3. a Connect worker (Apache's ConnectDistributed from compat/cdc/libs, or Sluice's) with
     JsonConverter schemas.enable=true for keys and values;
  4. `workload`: POSTs the connector (`connector_config`), waits for the snapshot (op r)
     and streaming, then inserts, updates (one changing the key), deletes (tombstones), a
     multi-table transaction, REPLICA IDENTITY FULL changes, a TOAST value left unchanged
     by an update (__debezium_unavailable_value), ALTER TABLE ADD COLUMN and rows using
     it, a TRUNCATE (skipped.operations=none), changes to a table not captured, a
     connector restart (POST /restart?includeTasks=true), more changes, an end marker;
  5. `capture`: every topic `dbz.*` (data topics dbz.public.<table>, dbz.transaction)
     read from the beginning once quiet, as JSON lines (topic, partition, offset, key,
     value, headers, and key_raw/value_raw: the exact bytes) in
     OUT/<side>/topics/<topic>.jsonl; the connector's records in the worker's offsets
     topic (offsets.jsonl); pg_replication_slots, pg_publication(_tables)
     (postgres.json); the connector's REST status/offsets/topics (connector.json); the
     worker's log and PostgreSQL's (every statement and replication command);
  6. `sanity`: PASS/FAIL checks that the capture holds what the workload must produce.

`compare(a_dir, b_dir)` then compares two captures field by field: per topic and
partition, record by record in order (key, the key's exact bytes, value with its
schema, headers), ignoring ts_ms/ts_us/ts_ns (top level, in source, in transaction
records), source.version and offsets' ts_usec. LSNs and transaction ids may differ
between two databases, so by default each is replaced by its place among the LSNs
(txIds) of the capture's own data events ("L3" = the 4th distinct event LSN, "L3+" =
between that and the next), and the __debezium.context.runId header by its order of
appearance: an implementation that emits the LSN of the right change matches (--exact
compares raw values: two Debezium runs on fresh databases often agree even so, but a
background WAL record now and then shifts LSNs by a few bytes).
The offsets topic is compared by its keys and each key's last value (which values were
flushed on the way depends on timing: reported as notes); the replication slot and
publication by their rows (where the slot stands: a note).

Usage:
  cdc_check.py --sluice target/debug/sluice --side debezium --out DIR   # the judge
  cdc_check.py --sluice target/debug/sluice --side sluice --out DIR     # + compare with DIR/debezium
  cdc_check.py --sluice target/debug/sluice --side both --out DIR
  cdc_check.py --compare DIR/debezium DIR/sluice
Options: --libs (default: compat/cdc/fetch-debezium.sh's output), --keep (work dir),
--bootstrap HOST:PORT (use a running, empty broker instead of starting Sluice's; for
debugging the harness), --exact. One side takes about a minute. Prints "PASS cdc: ..." / "FAIL cdc: ..." and
"cdc: N passed, M failed"; exits 1 on a failure.
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "connect"))
sys.dont_write_bytecode = True  # no __pycache__ left in compat/connect
from connect_check import PG_BIN, Proc, free_port, http, start_sluice, wait_rest, wait_until  # noqa: E402

RESULTS = []
CONNECTOR = "dbz-pg"
PREFIX = "dbz"
SLOT = "dbz_slot"
PUBLICATION = "dbz_pub"
DATABASE = "inventory"
OFFSETS_TOPIC = "cdc-offsets"
# In table.include.list order, which is the snapshot's order.
TABLES = ["all_types", "customers", "singleton", "order_lines", "audit_full", "events_nopk", "documents"]
# Rows each captured table holds when the connector starts: its snapshot (op r).
SNAPSHOT_ROWS = {"all_types": 3, "customers": 3, "singleton": 1, "order_lines": 3, "audit_full": 2,
                 "events_nopk": 2, "documents": 1}
UNAVAILABLE = "__debezium_unavailable_value"
PSQL_ENV = dict(os.environ, PGCLIENTENCODING="UTF8", PGTZ="UTC")


def check(name, ok, reason=""):
    RESULTS.append(ok)
    print(("PASS cdc: %s" % name) if ok else ("FAIL cdc: %s: %s" % (name, reason)), flush=True)
    return ok


def log(msg):
    print("cdc: %s" % msg, flush=True)


# --------------------------------------------------------------------------- PostgreSQL

class Postgres:
    """PostgreSQL 15 from Debian's packages on a free port with logical decoding on
    (initdb/pg_ctl as the postgres user when run as root, which initdb refuses). Trust
    auth; initdb's pg_hba.conf with -A trust already has `host replication all
    127.0.0.1/32 trust`, which the replication connection needs (checked, added if not)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sluice-cdc-pg-")
        os.chmod(self.dir, 0o755)
        self.pre = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.pre:
            subprocess.run(["chown", "-R", "postgres:postgres", self.dir], check=True)
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        self.run("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8",
                 "--locale=C", "--no-sync")
        hba = os.path.join(self.data, "pg_hba.conf")
        with open(hba) as f:
            rules = [line.split() for line in f if line.strip() and not line.startswith("#")]
        if ["host", "replication", "all", "127.0.0.1/32", "trust"] not in rules:
            with open(hba, "a") as f:
                f.write("host replication all 127.0.0.1/32 trust\n")
        self.run("pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "log"), "-o",
                 "-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c wal_level=logical "
                 "-c max_replication_slots=10 -c max_wal_senders=10 -c TimeZone=UTC "
                 # What the connector asks of the server, kept with the capture.
                 "-c log_replication_commands=on -c log_statement=all "
                 "-c log_line_prefix='%%m [%%p] %%a: '"
                 % (self.port, self.dir), "-w", "start")

    def run(self, program, *args):
        subprocess.run(self.pre + [os.path.join(PG_BIN, program), *args], check=True,
                       capture_output=True, cwd=self.dir)

    def query(self, sql, db=DATABASE):
        out = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                              "-d", db, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql],
                             capture_output=True, text=True, timeout=60, env=PSQL_ENV)
        if out.returncode != 0:
            raise ValueError("psql: %s: %s" % (sql[:200], out.stderr.strip()))
        return out.stdout.strip()

    def script(self, sql, db=DATABASE):
        """Runs a multi-statement script (each statement its own transaction unless the
        script says BEGIN/COMMIT)."""
        out = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                              "-d", db, "-v", "ON_ERROR_STOP=1", "-q", "-At"],
                             input=sql, capture_output=True, text=True, timeout=60, env=PSQL_ENV)
        if out.returncode != 0:
            raise ValueError("psql: %s: %s" % (sql.strip()[:200], out.stderr.strip()))
        return out.stdout.strip()

    def rows(self, sql, db=DATABASE):
        """Each row of `sql` as a JSON object."""
        text = self.query("SELECT row_to_json(q) FROM (%s) q" % sql, db)
        return [json.loads(line) for line in text.splitlines() if line]

    def stop(self):
        subprocess.run(self.pre + [os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-m",
                                   "immediate", "-w", "stop"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


SCHEMA = r"""
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE all_types (
  id serial PRIMARY KEY,
  c_smallint smallint,
  c_integer integer NOT NULL DEFAULT 42,
  c_bigint bigint,
  c_numeric numeric(10,2),
  c_numeric_var numeric,
  c_real real,
  c_double double precision,
  c_bool boolean,
  c_char char(3),
  c_varchar varchar(50) DEFAULT 'dflt',
  c_text text,
  c_enum mood,
  c_json json,
  c_jsonb jsonb,
  c_date date,
  c_time time,
  c_timetz time with time zone,
  c_timestamp timestamp,
  c_timestamptz timestamptz,
  c_interval interval,
  c_bytea bytea,
  c_uuid uuid,
  c_int_array int[],
  c_text_array text[]
);
CREATE TABLE customers (
  id integer PRIMARY KEY,
  first_name varchar(255) NOT NULL,
  last_name varchar(255) NOT NULL,
  email varchar(255) UNIQUE
);
CREATE TABLE order_lines (
  order_id integer,
  line_no smallint,
  product text NOT NULL,
  quantity integer NOT NULL DEFAULT 1,
  unit_price numeric(8,2) NOT NULL,
  weight_g integer NOT NULL,
  PRIMARY KEY (order_id, line_no)
);
CREATE TABLE singleton (
  id integer PRIMARY KEY,
  v text
);
CREATE TABLE audit_full (
  id integer PRIMARY KEY,
  status text NOT NULL,
  amount numeric(8,3),
  updated date
);
ALTER TABLE audit_full REPLICA IDENTITY FULL;
CREATE TABLE events_nopk (
  kind text,
  payload jsonb,
  at timestamptz
);
CREATE TABLE documents (
  id integer PRIMARY KEY,
  title text,
  body text,
  blob bytea
);
CREATE TABLE not_captured (
  id serial PRIMARY KEY,
  v text
);
"""

COLUMNS = ("c_smallint, c_integer, c_bigint, c_numeric, c_numeric_var, c_real, c_double, c_bool, "
           "c_char, c_varchar, c_text, c_enum, c_json, c_jsonb, c_date, c_time, c_timetz, "
           "c_timestamp, c_timestamptz, c_interval, c_bytea, c_uuid, c_int_array, c_text_array")

# Every column set; and the edges: minimums, before the epoch, infinity, NaN, empty arrays.
ALL_TYPES_FULL = (
    "INSERT INTO all_types (" + COLUMNS + ") VALUES (-32768, 2147483647, 9223372036854775807, "
    "12345678.91, 3.14159265358979323846, 1.5, 2.718281828459045, true, 'abc', 'hello', 'some text', "
    "'happy', '{\"a\": 1, \"b\": [1, 2]}', '{\"b\": [1, 2], \"a\": 1}', '2024-02-29', '13:45:56.123456', "
    "'13:45:56.123456+02', '2024-02-29 13:45:56.123456', '2024-02-29 13:45:56.123456+02', "
    "'1 year 2 mons 3 days 04:05:06.789', '\\x0102ff', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', "
    "'{1,2,3}', '{\"a\",\"b c\",NULL}');\n")
ALL_TYPES_EDGES = (
    "INSERT INTO all_types (" + COLUMNS + ") VALUES (32767, -2147483648, -9223372036854775808, "
    "-0.01, 'NaN', -0.0, 1e-300, false, 'x', '', '', 'sad', '[]', '{}', '1900-01-01', '00:00:00', "
    "'23:59:59.999999-11:30', '1969-12-31 23:59:59.999999', 'infinity', '-1 day -00:00:01', '\\x', "
    "'00000000-0000-0000-0000-000000000000', '{}', '{}');\n")

# Streamed: other shapes of the same types (whole numbers, scale 0, zero fractions, the
# epoch, quotes and non-ASCII text, a large float).
ALL_TYPES_STREAM = (
    "INSERT INTO all_types (" + COLUMNS + ") VALUES (1, 7, 70000000000, 5, 100, 3.25e38, -1.5, "
    "true, 'ab', 'streamed', 'say \"hi\" \\ back\\slash, ünïcödé €', 'ok', "
    "'{\"nested\": {\"k\": [true, null]}}', '[1, \"two\", 3.0]', '1970-01-01', '12:00:00', "
    "'08:00:00+00', '2000-01-01 00:00:00', '2000-01-01 00:00:00+00', '0', '\\xdeadbeef', "
    "'123e4567-e89b-12d3-a456-426614174000', '{-1,NULL,2147483647}', '{\"x\"}');\n")


def prepare_database(pg):
    """The schema and the rows each table holds before the connector starts."""
    pg.query("CREATE DATABASE " + DATABASE, db="postgres")
    pg.script(SCHEMA)
    pg.script(
        ALL_TYPES_FULL
        + "INSERT INTO all_types (c_text) VALUES (NULL);\n"  # defaults only
        + ALL_TYPES_EDGES
        + "INSERT INTO customers VALUES (1001, 'Sally', 'Thomas', 'sally.thomas@acme.com'), "
          "(1002, 'George', 'Bailey', 'gbailey@foobar.com'), (1003, 'Edward', 'Walker', 'ed@walker.com');\n"
        + "INSERT INTO order_lines VALUES (1, 1, 'widget', 2, 9.99, 120), (1, 2, 'gadget', 1, 24.5, 300), "
          "(2, 1, 'doohickey', 5, 1.25, 15);\n"
        + "INSERT INTO singleton VALUES (1, 'only row');\n"
        + "INSERT INTO audit_full VALUES (1, 'new', 10.5, '2024-01-01'), (2, 'new', 20.25, '2024-01-02');\n"
        + "INSERT INTO events_nopk VALUES ('boot', '{\"v\": 1}', '2024-01-01 00:00:00+00'), "
          "('login', NULL, '2024-01-01 00:00:01.5+00');\n"
        + "INSERT INTO documents VALUES (1, 'small', 'short body', '\\x00ff');\n"
        + "INSERT INTO not_captured (v) VALUES ('x');\n")


def connector_config(pg):
    """The connector config POSTed to either worker."""
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        "plugin.name": "pgoutput",
        "database.hostname": "127.0.0.1",
        "database.port": str(pg.port),
        "database.user": "postgres",
        "database.password": "postgres",
        "database.dbname": DATABASE,
        "topic.prefix": PREFIX,
        "slot.name": SLOT,
        "publication.name": PUBLICATION,
        "publication.autocreate.mode": "filtered",
        "table.include.list": ",".join("public." + t for t in TABLES),
        "provide.transaction.metadata": "true",
        # Debezium skips truncates by default (skipped.operations=t).
        "skipped.operations": "none",
        "snapshot.mode": "initial",
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "1",
    }


# --------------------------------------------------------------------------- Kafka side

def consumer(broker):
    from confluent_kafka import Consumer
    return Consumer({"bootstrap.servers": broker, "group.id": "cdc-capture-" + uuid.uuid4().hex,
                     "enable.auto.commit": False, "auto.offset.reset": "earliest",
                     "enable.partition.eof": False, "topic.metadata.refresh.interval.ms": 1000})


def decode_json(raw):
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return {"_raw_base64": base64.b64encode(raw).decode()}


def decode_header(raw):
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"_raw_base64": base64.b64encode(raw).decode()}


def record(msg):
    """A record as captured: key and value parsed, and as the exact bytes (UTF-8 text)
    the converter wrote, which is what partitioning and compaction see."""
    return {"topic": msg.topic(), "partition": msg.partition(), "offset": msg.offset(),
            "key": decode_json(msg.key()), "value": decode_json(msg.value()),
            "headers": [[k, decode_header(v)] for k, v in (msg.headers() or [])],
            "key_raw": decode_header(msg.key()), "value_raw": decode_header(msg.value())}


class Watcher:
    """Follows every topic whose name starts with `prefix` from its beginning (new topics
    picked up within a second) so the workload can wait for the event a step produces."""

    def __init__(self, broker, prefix):
        from confluent_kafka import TopicPartition, OFFSET_BEGINNING
        self._tp, self._begin = TopicPartition, OFFSET_BEGINNING
        self.c = consumer(broker)
        self.prefix = prefix
        self.assigned = set()
        self.records = []
        self.last_refresh = 0
        self.misses = 0

    def refresh(self):
        md = self.c.list_topics(timeout=5)
        new = [self._tp(t, p, self._begin) for t, tm in md.topics.items() if t.startswith(self.prefix)
               for p in tm.partitions if (t, p) not in self.assigned]
        if new:
            self.c.incremental_assign(new)
            self.assigned |= {(tp.topic, tp.partition) for tp in new}
        self.last_refresh = time.time()

    def pump(self, seconds):
        end = time.time() + seconds
        while time.time() < end:
            if time.time() - self.last_refresh > 1:
                self.refresh()
            msg = self.c.poll(0.2)
            if msg is not None and not msg.error():
                self.records.append(record(msg))

    def wait_for(self, what, pred, timeout=90):
        """Waits until some record satisfies pred; a FAIL (not an exception) when none does.
        After two such misses, waits only briefly: the capture then shows what came."""
        if self.misses >= 2:
            timeout = 5
        deadline = time.time() + timeout
        while True:
            if any(safe(pred, r) for r in self.records):
                return True
            if time.time() > deadline:
                check("workload: %s" % what, False, "not seen within %ds (%d records so far)"
                      % (timeout, len(self.records)))
                self.misses += 1
                return False
            self.pump(0.3)

    def close(self):
        self.c.close()


def safe(pred, r):
    try:
        return bool(pred(r))
    except (KeyError, TypeError, IndexError, AttributeError):
        return False


def payload(r):
    v = r.get("value")
    return v.get("payload") if isinstance(v, dict) and "payload" in v else v


def event(table, op, **fields):
    """A predicate: a change event on `table` with op `op` whose after (before for d)
    image has the given column values."""
    def pred(r):
        if r["topic"] != "%s.public.%s" % (PREFIX, table):
            return False
        p = payload(r)
        if not p or p.get("op") != op:
            return False
        image = p.get("before") if op == "d" else p.get("after")
        return all(image.get(k) == v for k, v in fields.items())
    return pred


def max_event_lsn(records):
    return max((payload(r)["source"]["lsn"] for r in records
                if r["topic"].startswith(PREFIX + ".public.") and safe(lambda x: payload(x)["source"]["lsn"], r)),
               default=None)


def end_offsets(broker, prefix):
    """{(topic, partition): high watermark} of every topic starting with prefix."""
    from confluent_kafka import TopicPartition
    c = consumer(broker)
    try:
        md = c.list_topics(timeout=10)
        out = {}
        for t, tm in md.topics.items():
            if t.startswith(prefix):
                for p in tm.partitions:
                    out[(t, p)] = c.get_watermark_offsets(TopicPartition(t, p), timeout=10)[1]
        return out
    finally:
        c.close()


def read_all(broker, topics_prefix=None, topic=None):
    """Every record of the matching topics, from the beginning to their current end."""
    from confluent_kafka import TopicPartition, OFFSET_BEGINNING
    ends = end_offsets(broker, topic if topic else topics_prefix)
    if topic:
        ends = {tp: e for tp, e in ends.items() if tp[0] == topic}
    c = consumer(broker)
    try:
        c.assign([TopicPartition(t, p, OFFSET_BEGINNING) for (t, p) in ends])
        got, pos = [], {tp: 0 for tp in ends}
        deadline = time.time() + 120
        while any(pos[tp] < e for tp, e in ends.items()) and time.time() < deadline:
            msg = c.poll(0.5)
            if msg is None or msg.error():
                continue
            tp = (msg.topic(), msg.partition())
            if msg.offset() < ends[tp]:
                got.append(record(msg))
            pos[tp] = msg.offset() + 1
        short = {"%s/%d" % tp: (pos[tp], e) for tp, e in ends.items() if pos[tp] < e}
        if short:
            raise RuntimeError("read_all: could not read to the end of %r" % short)
        return got
    finally:
        c.close()


def wait_quiet(broker, prefix, quiet=4, timeout=120):
    """Waits until no topic starting with prefix grew for `quiet` seconds."""
    deadline = time.time() + timeout
    last, since = None, time.time()
    while time.time() < deadline:
        now = end_offsets(broker, prefix)
        if now != last:
            last, since = now, time.time()
        elif time.time() - since >= quiet:
            return now
        time.sleep(0.5)
    return last


# --------------------------------------------------------------------------- workload

def connector_state(url):
    _, s = http("GET", url + "/connectors/%s/status" % CONNECTOR)
    tasks = [t["state"] for t in (s or {}).get("tasks", [])]
    return (s or {}).get("connector", {}).get("state"), tasks, s


def slot_pid(pg):
    got = pg.query("SELECT active_pid FROM pg_replication_slots WHERE slot_name = '%s' AND active" % SLOT)
    return int(got) if got else None


def wait_streaming(pg, url, what, not_pid=None, timeout=120):
    """The task RUNNING and the slot in use by a replication connection (not `not_pid`)."""
    def ready():
        state, tasks, s = connector_state(url)
        if state == "FAILED" or "FAILED" in tasks:
            raise RuntimeError("connector failed: %s" % json.dumps(s)[:3000])
        pid = slot_pid(pg)
        return pid if state == "RUNNING" and tasks == ["RUNNING"] and pid and pid != not_pid else None
    return wait_until(what, ready, timeout)


def wait_offsets_flushed(url, lsn, timeout=30):
    """The connector's committed offset past `lsn` (so a restart resumes after it)."""
    def flushed():
        _, o = http("GET", url + "/connectors/%s/offsets" % CONNECTOR)
        for entry in (o or {}).get("offsets", []):
            off = entry.get("offset") or {}
            if max(int(off.get(k) or 0) for k in ("lsn", "lsn_proc", "lsn_commit")) >= lsn:
                return off
        return None
    try:
        return wait_until("offsets committed past LSN %s" % lsn, flushed, timeout)
    except RuntimeError as e:
        log("warning: %s" % e)
        return None


def big_text(n):
    # Deterministic and barely compressible: stored out of line (TOAST) at this size.
    return "(SELECT string_agg(md5(i::text), '') FROM generate_series(1, %d) i)" % n


def big_bytes(n):
    return "(SELECT decode(string_agg(md5((i * 7)::text), ''), 'hex') FROM generate_series(1, %d) i)" % n


def workload(pg, url, config, watch, name=CONNECTOR):
    """POSTs `config` as connector `name` to the Connect worker at `url`, then makes the
    scripted changes to `pg`, each step waiting for the event it must produce (read by
    `watch`, a Watcher on the broker). The database must hold prepare_database's rows."""
    status, body = http("POST", url + "/connectors", {"name": name, "config": config})
    check("workload: POST the connector", status == 201, "%s %s" % (status, body))
    if status != 201:
        raise RuntimeError("connector not created")
    pid = wait_streaming(pg, url, "the connector streaming after its snapshot")
    log("snapshot done, streaming (slot used by pid %d)" % pid)
    for table, n in SNAPSHOT_ROWS.items():
        watch.wait_for("snapshot of %s" % table, lambda r, t=table, n=n: sum(
            1 for x in watch.records if x["topic"] == "%s.public.%s" % (PREFIX, t)
            and (payload(x) or {}).get("op") == "r") >= n)

    steps = [
        ("insert", "INSERT INTO customers VALUES (1004, 'Anne', 'Kretchmar', 'annek@noanswer.org');",
         event("customers", "c", id=1004)),
        ("update", "UPDATE customers SET email = 'sally@example.com' WHERE id = 1001;",
         event("customers", "u", id=1001, email="sally@example.com")),
        ("update of the primary key", "UPDATE customers SET id = 2002 WHERE id = 1002;",
         event("customers", "c", id=2002)),
        ("delete", "DELETE FROM customers WHERE id = 1003;",
         lambda r: r["topic"] == PREFIX + ".public.customers" and r["value"] is None
         and r["key"]["payload"]["id"] == 1003),
        ("every type: insert, update, delete",
         ALL_TYPES_STREAM + "UPDATE all_types SET c_text = 'changed', c_jsonb = '{\"z\": 0}', "
         "c_numeric = 0.5 WHERE id = 1;\nDELETE FROM all_types WHERE id = 3;\n",
         event("all_types", "d", id=3)),
        ("a multi-table transaction",
         "BEGIN;\nINSERT INTO order_lines VALUES (3, 1, 'sprocket', 1, 0.5, 10), (3, 2, 'flange', 4, 2, 20), "
         "(3, 3, 'grommet', 9, 0.01, 1);\n"
         "UPDATE order_lines SET quantity = quantity + 1 WHERE order_id = 1;\n"
         "DELETE FROM order_lines WHERE order_id = 2;\n"
         "INSERT INTO customers VALUES (1005, 'Kenneth', 'Anderson', 'kander@acme.com');\nCOMMIT;\n",
         event("customers", "c", id=1005)),
        ("REPLICA IDENTITY FULL: update, delete, key change",
         "UPDATE audit_full SET status = 'paid', amount = 11.5 WHERE id = 1;\n"
         "DELETE FROM audit_full WHERE id = 2;\n"
         "UPDATE audit_full SET id = 3 WHERE id = 1;\n",
         event("audit_full", "c", id=3)),
        ("a TOASTed value, then an update of another column",
         "INSERT INTO documents VALUES (2, 'big', %s, %s);\n"
         "UPDATE documents SET title = 'big, renamed' WHERE id = 2;\n" % (big_text(1250), big_bytes(1250)),
         event("documents", "u", id=2, title="big, renamed")),
        ("ALTER TABLE ADD COLUMN, then rows using it",
         "ALTER TABLE customers ADD COLUMN phone varchar(20);\n"
         "ALTER TABLE customers ADD COLUMN tier integer NOT NULL DEFAULT 1;\n"
         "INSERT INTO customers VALUES (1006, 'Hugo', 'Strange', 'hugo@asylum.org', '555-0106', 3);\n"
         "UPDATE customers SET phone = '555-0101' WHERE id = 1001;\n",
         event("customers", "u", id=1001, phone="555-0101")),
        ("a table without a primary key, and TRUNCATE of it and a table with one",
         "INSERT INTO events_nopk VALUES ('logout', '{\"v\": [1, {\"x\": null}]}', '2024-01-02 10:00:00+00');\n"
         "TRUNCATE events_nopk, singleton;\n",
         lambda r: r["topic"] == PREFIX + ".public.singleton" and payload(r)["op"] == "t"),
        ("a table not captured, then a captured change",
         "INSERT INTO not_captured (v) VALUES ('y');\nUPDATE not_captured SET v = 'z';\n"
         "INSERT INTO order_lines VALUES (4, 1, 'after-uncaptured', 1, 100, 1000);\n",
         event("order_lines", "c", order_id=4)),
    ]
    for what, sql, pred in steps:
        pg.script(sql)
        watch.wait_for(what, pred)
        log("step done: %s" % what)

    # A restart mid-stream: once the offsets cover what was read, so it resumes after it.
    lsn = max_event_lsn(watch.records)
    if lsn is not None:
        wait_offsets_flushed(url, lsn)
    status, body = http("POST", url + "/connectors/%s/restart?includeTasks=true" % name)
    check("workload: restart the connector and its task", status in (202, 204), "%s %s" % (status, body))
    new_pid = wait_streaming(pg, url, "the connector streaming again after its restart", not_pid=pid)
    log("restarted (slot now used by pid %d)" % new_pid)
    steps = [
        ("changes after the restart",
         "INSERT INTO customers VALUES (1007, 'Selina', 'Kyle', 'selina@cats.org', NULL, 2);\n"
         "UPDATE all_types SET c_int_array = '{4,5}', c_text_array = '{}' WHERE id = 1;\n"
         "DELETE FROM documents WHERE id = 1;\n",
         event("documents", "d", id=1)),
        ("the end marker", "INSERT INTO customers VALUES (1999, 'End', 'Marker', NULL, NULL, 9);",
         event("customers", "c", id=1999)),
    ]
    for what, sql, pred in steps:
        pg.script(sql)
        watch.wait_for(what, pred)
        log("step done: %s" % what)


# --------------------------------------------------------------------------- capture

def write_jsonl(path, rows):
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=False) + "\n")


def capture(broker, pg, url, out, worker_log=None):
    """Writes the capture of a finished run into `out` (replaced)."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "topics"))
    wait_quiet(broker, PREFIX + ".")
    records = read_all(broker, topics_prefix=PREFIX + ".")
    by_topic = {}
    for r in records:
        by_topic.setdefault(r["topic"], []).append(r)
    for topic, rs in sorted(by_topic.items()):
        rs.sort(key=lambda r: (r["partition"], r["offset"]))
        write_jsonl(os.path.join(out, "topics", topic + ".jsonl"), rs)
    offsets = [r for r in read_all(broker, topic=OFFSETS_TOPIC)
               if isinstance(r["key"], list) and r["key"] and r["key"][0] == CONNECTOR]
    offsets.sort(key=lambda r: (r["partition"], r["offset"]))
    write_jsonl(os.path.join(out, "offsets.jsonl"), offsets)
    with open(os.path.join(out, "postgres.json"), "w") as f:
        json.dump({
            "pg_replication_slots": pg.rows("SELECT * FROM pg_replication_slots"),
            "pg_publication": pg.rows("SELECT * FROM pg_publication"),
            "pg_publication_tables": pg.rows("SELECT * FROM pg_publication_tables ORDER BY schemaname, tablename"),
            "pg_current_wal_lsn": pg.query("SELECT pg_current_wal_lsn()"),
        }, f, indent=1)
    rest = {}
    for what in ("", "/config", "/status", "/tasks", "/offsets", "/topics"):
        rest[what or "/"] = http("GET", url + "/connectors/%s%s" % (CONNECTOR, what))
    with open(os.path.join(out, "connector.json"), "w") as f:
        json.dump(rest, f, indent=1)
    pg_log = os.path.join(pg.dir, "log")
    if os.path.exists(pg_log):
        shutil.copy(pg_log, os.path.join(out, "postgres.log"))
    if worker_log and os.path.exists(worker_log):
        shutil.copy(worker_log, os.path.join(out, "worker.log"))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"topics": {t: len(rs) for t, rs in sorted(by_topic.items())},
                   "offsets_records": len(offsets)}, f, indent=1)
    return by_topic, offsets


def load_capture(d):
    topics = {}
    tdir = os.path.join(d, "topics")
    for name in sorted(os.listdir(tdir)):
        if name.endswith(".jsonl"):
            topics[name[:-6]] = read_jsonl(os.path.join(tdir, name))
    offsets = read_jsonl(os.path.join(d, "offsets.jsonl"))
    try:
        with open(os.path.join(d, "postgres.json")) as f:
            pgstate = json.load(f)
    except FileNotFoundError:
        pgstate = {}
    return topics, offsets, pgstate


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


# --------------------------------------------------------------------------- sanity

def sanity(out):
    """What the workload must have produced, whoever captured it."""
    topics, offsets, pgstate = load_capture(out)
    want = {"%s.public.%s" % (PREFIX, t) for t in TABLES} | {PREFIX + ".transaction"}
    check("topics: one per captured table and %s.transaction, no other" % PREFIX, set(topics) == want,
          "got %s" % sorted(topics))

    def events(table):
        return topics.get("%s.public.%s" % (PREFIX, table), [])

    def ops(table):
        return [(payload(r) or {}).get("op") if r["value"] is not None else None for r in events(table)]

    for table, n in SNAPSHOT_ROWS.items():
        check("snapshot: %d reads (op r) of %s" % (n, table), ops(table).count("r") == n,
              "ops %s" % ops(table))
    snap = [payload(r)["source"]["snapshot"] for t in TABLES for r in events(t)
            if r["value"] is not None and payload(r)["op"] == "r"]
    check("snapshot: source.snapshot marks the first and last record", "first" in str(snap)
          and "last" in snap, repr(snap))
    cust = events("customers")
    check("customers: creates, updates, a delete and its tombstone",
          {"c", "u", "d", None} <= set(ops("customers")), repr(ops("customers")))
    tomb = [i for i, r in enumerate(cust) if r["value"] is None]
    check("customers: each delete followed by a tombstone with the same key",
          all(i > 0 and cust[i - 1]["value"] and payload(cust[i - 1])["op"] == "d"
              and cust[i - 1]["key"] == cust[i]["key"] for i in tomb) and tomb, repr(tomb))
    headers = {h[0] for r in cust for h in r["headers"]}
    check("customers: a key change is a delete with __debezium.newkey and a create with __debezium.oldkey",
          {"__debezium.newkey", "__debezium.oldkey"} <= headers, repr(headers))
    after = [payload(r)["after"] for r in cust if r["value"] is not None and payload(r)["after"]]
    check("customers: the added columns in later events",
          any(a.get("phone") == "555-0106" and a.get("tier") == 3 for a in after), repr(after[-3:]))
    creates_1007 = [a for a in after if a.get("id") == 1007]
    check("restart: no change read twice (one create of 1007)", len(creates_1007) == 1, repr(creates_1007))
    full = [payload(r) for r in events("audit_full") if r["value"] is not None and payload(r)["op"] in ("u", "d")]
    check("REPLICA IDENTITY FULL: updates and deletes carry the whole before image",
          full and all(p["before"] and p["before"].get("status") is not None for p in full), repr(full))
    nopk = events("events_nopk")
    check("no primary key: null keys", nopk and all(r["key"] is None for r in nopk), repr([r["key"] for r in nopk]))
    check("TRUNCATE: an op t event for each table", "t" in ops("events_nopk") and "t" in ops("singleton"),
          repr((ops("events_nopk"), ops("singleton"))))
    docs = [payload(r) for r in events("documents") if r["value"] is not None]
    upd = [p for p in docs if p["op"] == "u" and p["after"]["id"] == 2]
    check("TOAST: the unchanged value is %s" % UNAVAILABLE,
          upd and upd[0]["after"]["body"] == UNAVAILABLE, repr(upd and {k: str(v)[:60] for k, v in upd[0]["after"].items()}))
    tx = topics.get(PREFIX + ".transaction", [])
    statuses = [payload(r)["status"] for r in tx]
    check("transactions: a BEGIN and an END each", statuses and statuses.count("BEGIN") == statuses.count("END"),
          repr(statuses))
    multi = [payload(r) for r in tx if payload(r)["status"] == "END" and len(payload(r)["data_collections"] or []) > 1]
    check("transactions: the multi-table one counts its events per table", multi and multi[0]["event_count"] == sum(
        d["event_count"] for d in multi[0]["data_collections"]), repr(multi))
    check("offsets: committed under [%s, {server: %s}]" % (CONNECTOR, PREFIX),
          offsets and all(r["key"] == [CONNECTOR, {"server": PREFIX}] for r in offsets),
          repr([r["key"] for r in offsets][:3]))
    slots = pgstate.get("pg_replication_slots", [])
    check("replication slot %s (pgoutput, logical) on %s" % (SLOT, DATABASE),
          [(s["slot_name"], s["plugin"], s["slot_type"], s["database"]) for s in slots]
          == [(SLOT, "pgoutput", "logical", DATABASE)], repr(slots))
    pub = sorted(t["tablename"] for t in pgstate.get("pg_publication_tables", []))
    check("publication %s: the captured tables" % PUBLICATION, pub == sorted(TABLES), repr(pub))


# --------------------------------------------------------------------------- compare

IGNORED_TS = ("ts_ms", "ts_us", "ts_ns")


def lsn_value(v):
    if v is None:
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and "/" in v:
        hi, lo = v.split("/")
        return (int(hi, 16) << 32) + int(lo, 16)
    return int(v)


class Normalizer:
    """LSNs and transaction ids as their place among the capture's own event LSNs/txIds."""

    def __init__(self, topics, exact=False):
        self.exact = exact
        lsns, txids = set(), set()
        for topic, rs in topics.items():
            for r in rs:
                p = payload(r)
                src = p.get("source") if isinstance(p, dict) else None
                if isinstance(src, dict):
                    if src.get("lsn") is not None:
                        lsns.add(int(src["lsn"]))
                    if src.get("txId") is not None:
                        txids.add(int(src["txId"]))
        self.lsns, self.txids = sorted(lsns), sorted(txids)
        # Debezium's __debezium.context.runId header: a new id per task start.
        self.runs = {}
        for topic in sorted(topics):
            for r in topics[topic]:
                for k, v in r.get("headers") or []:
                    if k == "__debezium.context.runId" and v not in self.runs:
                        self.runs[v] = "RUN%d" % len(self.runs)

    @staticmethod
    def place(v, known, tag):
        import bisect
        i = bisect.bisect_left(known, v)
        if i < len(known) and known[i] == v:
            return "%s%d" % (tag, i)
        return "%s%d+" % (tag, i - 1) if i > 0 else "%s<0" % tag

    def lsn(self, v):
        if self.exact or v is None:
            return v
        try:
            return self.place(lsn_value(v), self.lsns, "L")
        except (ValueError, TypeError):
            return v

    def commit(self, v):
        """A commit's end LSN as the event it precedes: the first event LSN at or after
        it ("L<=8"). Whether a background WAL record (a checkpoint, RUNNING_XACTS) falls
        between a commit's end and the next change differs between two databases, so
        "between L7 and L8" and "at L8" are the same place here."""
        if self.exact or v is None:
            return v
        import bisect
        try:
            i = bisect.bisect_left(self.lsns, lsn_value(v))
        except (ValueError, TypeError):
            return v
        return "L<=%d" % i if i < len(self.lsns) else "L%d+" % (len(self.lsns) - 1)

    def txid(self, v):
        if self.exact or v is None:
            return v
        try:
            return self.place(int(v), self.txids, "T")
        except (ValueError, TypeError):
            return v

    def tx_lsn(self, v, commit=False):
        """Debezium's transaction id, "<txId>:<lsn>" (an END record's LSN is its commit's)."""
        if self.exact or not isinstance(v, str) or ":" not in v:
            return v
        t, l = v.split(":", 1)
        return "%s:%s" % (self.txid(t), self.commit(l) if commit else self.lsn(l))

    def sequence(self, v):
        """source.sequence: a JSON array of LSN strings, as a string."""
        if self.exact or not isinstance(v, str):
            return v
        try:
            # [the previous transaction's commit, this event]
            items = json.loads(v)
            return json.dumps([self.commit(x) if i == 0 else self.lsn(x) for i, x in enumerate(items)])
        except (ValueError, TypeError):
            return v

    def headers(self, r):
        if not self.exact:
            r["headers"] = [[k, self.runs.get(v, v) if k == "__debezium.context.runId" else v]
                            for k, v in r.get("headers") or []]

    def data_record(self, r):
        r = json.loads(json.dumps(r))
        self.headers(r)
        p = payload(r)
        if isinstance(p, dict):
            for k in IGNORED_TS:
                p.pop(k, None)
            src = p.get("source")
            if isinstance(src, dict):
                for k in IGNORED_TS + ("version",):
                    src.pop(k, None)
                for k in ("lsn",):
                    if k in src:
                        src[k] = self.lsn(src[k])
                for k in ("txId", "xmin"):
                    if k in src:
                        src[k] = self.txid(src[k])
                if "sequence" in src:
                    src["sequence"] = self.sequence(src["sequence"])
            tx = p.get("transaction")
            if isinstance(tx, dict) and "id" in tx:
                tx["id"] = self.tx_lsn(tx["id"])
        return r

    def transaction_record(self, r):
        r = json.loads(json.dumps(r))
        self.headers(r)
        status = payload({"value": r.get("value")})
        end = isinstance(status, dict) and status.get("status") == "END"
        for part in ("key", "value"):
            p = payload({"value": r.get(part)})
            if isinstance(p, dict):
                for k in IGNORED_TS:
                    p.pop(k, None)
                if "id" in p:
                    if part == "key" and isinstance(r.get("key_raw"), str):
                        r["key_raw"] = r["key_raw"].replace(json.dumps(p["id"]), json.dumps(self.tx_lsn(p["id"], end)))
                    p["id"] = self.tx_lsn(p["id"], end)
        return r

    def offset_value(self, v):
        if not isinstance(v, dict):
            return v
        v = dict(v)
        v.pop("ts_usec", None)
        committed = v.get("messageType") == "COMMIT"
        for k in ("lsn", "lsn_proc", "lsn_commit"):
            if k in v:
                v[k] = self.commit(v[k]) if committed or k == "lsn_commit" else self.lsn(v[k])
        if "txId" in v:
            v["txId"] = self.txid(v["txId"])
        if isinstance(v.get("transaction_id"), str):
            t = v["transaction_id"]
            v["transaction_id"] = self.tx_lsn(t) if ":" in t else self.txid(t)
        return dict(sorted(v.items()))  # a HashMap's order in Debezium: not compared

    def slot(self, s):
        s = dict(s)
        for k in ("active_pid", "safe_wal_size", "spill_txns", "spill_count", "spill_bytes"):
            s.pop(k, None)
        for k in ("restart_lsn", "confirmed_flush_lsn"):
            if k in s:
                s[k] = self.lsn(s[k])
        for k in ("xmin", "catalog_xmin"):
            if k in s:
                s[k] = self.txid(s[k])
        return s


def diff(a, b, path, out, names):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in b:
                out.append("%s.%s only in %s" % (path, k, names[0]))
            elif k not in a:
                out.append("%s.%s only in %s" % (path, k, names[1]))
            else:
                diff(a[k], b[k], path + "." + k, out, names)
        if [k for k in a if k in b] != [k for k in b if k in a]:
            out.append("%s: field order %s: %s, %s: %s" % (path, names[0], list(a), names[1], list(b)))
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append("%s: %d items in %s, %d in %s" % (path, len(a), names[0], len(b), names[1]))
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, "%s[%d]" % (path, i), out, names)
    elif a != b or type(a) is not type(b):
        out.append("%s: %s %s, %s %s" % (path, names[0], short(a), names[1], short(b)))


def short(v):
    s = json.dumps(v)
    return s if len(s) <= 120 else s[:117] + "..."


def compare(a_dir, b_dir, names=("debezium", "sluice"), exact=False):
    """Differences between two captures, as readable lines (empty: they match), and
    notes: differences that depend on timing (which offsets were committed)."""
    a_topics, a_offsets, a_pg = load_capture(a_dir)
    b_topics, b_offsets, b_pg = load_capture(b_dir)
    na, nb = Normalizer(a_topics, exact), Normalizer(b_topics, exact)
    out, notes = [], []
    for t in sorted(set(a_topics) | set(b_topics)):
        if t not in b_topics or t not in a_topics:
            out.append("topic %s only in %s" % (t, names[0] if t in a_topics else names[1]))
            continue
        norm = (lambda n: n.transaction_record) if t == PREFIX + ".transaction" else (lambda n: n.data_record)
        parts = sorted({r["partition"] for r in a_topics[t]} | {r["partition"] for r in b_topics[t]})
        for p in parts:
            ra = [norm(na)(r) for r in a_topics[t] if r["partition"] == p]
            rb = [norm(nb)(r) for r in b_topics[t] if r["partition"] == p]
            if len(ra) != len(rb):
                out.append("%s/%d: %d records in %s, %d in %s" % (t, p, len(ra), names[0], len(rb), names[1]))
            seen = {}
            for i, (x, y) in enumerate(zip(ra, rb)):
                d = []
                for part in ("key", "key_raw", "value", "headers"):
                    diff(x.get(part), y.get(part), part, d, names)
                for line in d:
                    seen.setdefault(line, []).append(i)
            for line, idx in seen.items():
                out.append("%s/%d #%s: %s" % (t, p, idx[0] if len(idx) == 1 else "%d (and %d more)"
                                                % (idx[0], len(idx) - 1), line))
            if len(ra) != len(rb):
                extra, who = (ra, names[0]) if len(ra) > len(rb) else (rb, names[1])
                for i in range(min(len(ra), len(rb)), min(len(extra), min(len(ra), len(rb)) + 3)):
                    out.append("%s/%d #%d only in %s: %s" % (t, p, i, who, short(extra[i])[:300]))
    # Offsets: when they are committed varies with timing; compare keys, value shapes, last values.
    ka = {json.dumps(r["key"]) for r in a_offsets}
    kb = {json.dumps(r["key"]) for r in b_offsets}
    if ka != kb:
        out.append("offsets: keys %s: %s, %s: %s" % (names[0], sorted(ka), names[1], sorted(kb)))
    def shape(v):
        return tuple(sorted(v)) if isinstance(v, dict) else repr(v)
    sa = {shape(r["value"]) for r in a_offsets}
    sb = {shape(r["value"]) for r in b_offsets}
    for s in sorted(sa - sb, key=str):
        notes.append("offsets: value with keys %s only in %s" % (list(s) if isinstance(s, tuple) else s, names[0]))
    for s in sorted(sb - sa, key=str):
        notes.append("offsets: value with keys %s only in %s" % (list(s) if isinstance(s, tuple) else s, names[1]))
    for k in sorted(ka & kb):
        la = [r["value"] for r in a_offsets if json.dumps(r["key"]) == k][-1]
        lb = [r["value"] for r in b_offsets if json.dumps(r["key"]) == k][-1]
        diff(na.offset_value(la), nb.offset_value(lb), "offsets[%s] last value" % k, out, names)
    # The slot and the publication.
    # Where the slot stands (restart_lsn, confirmed_flush_lsn, xmins) follows when the
    # connector flushed: a note; the rest must match.
    moving = ("restart_lsn", "confirmed_flush_lsn", "xmin", "catalog_xmin")
    sla = [na.slot(s) for s in a_pg.get("pg_replication_slots", [])]
    slb = [nb.slot(s) for s in b_pg.get("pg_replication_slots", [])]
    diff([{k: v for k, v in s.items() if k not in moving} for s in sla],
         [{k: v for k, v in s.items() if k not in moving} for s in slb], "pg_replication_slots", out, names)
    diff([{k: v for k, v in s.items() if k in moving} for s in sla],
         [{k: v for k, v in s.items() if k in moving} for s in slb], "pg_replication_slots", notes, names)
    for key in ("pg_publication_tables",):
        diff(a_pg.get(key), b_pg.get(key), key, out, names)
    pa = [{k: v for k, v in p.items() if k != "oid"} for p in a_pg.get("pg_publication", [])]
    pb = [{k: v for k, v in p.items() if k != "oid"} for p in b_pg.get("pg_publication", [])]
    diff(pa, pb, "pg_publication", out, names)
    return out, notes


def report_compare(a_dir, b_dir, names, exact):
    diffs, notes = compare(a_dir, b_dir, names, exact)
    for line in notes:
        print("  note: " + line)
    for line in diffs[:400]:
        print("  " + line)
    if len(diffs) > 400:
        print("  ... and %d more" % (len(diffs) - 400))
    check("compare: %s and %s captures match" % names, not diffs, "%d differences (above)" % len(diffs))


# --------------------------------------------------------------------------- a side's run

def worker_props(work, name, broker, port):
    path = os.path.join(work, name + ".properties")
    with open(path, "w") as f:
        f.write("""bootstrap.servers=%s
group.id=cdc-%s
key.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter=org.apache.kafka.connect.json.JsonConverter
value.converter.schemas.enable=true
offset.storage.topic=%s
offset.storage.replication.factor=1
config.storage.topic=cdc-configs
config.storage.replication.factor=1
status.storage.topic=cdc-status
status.storage.replication.factor=1
offset.flush.interval.ms=500
listeners=http://127.0.0.1:%d
rest.advertised.host.name=127.0.0.1
plugin.discovery=only_scan
scheduled.rebalance.max.delay.ms=0
""" % (broker, name, OFFSETS_TOPIC, port))
    return path


def start_apache(work, name, props, libs):
    """Apache Connect's ConnectDistributed with Debezium on its class path; Debezium and
    Connect's worker at INFO (the log is kept with the capture), the rest at WARN."""
    log4j = os.path.join(work, "log4j2-cdc.properties")
    with open(log4j, "w") as f:
        f.write("rootLogger.level = WARN\nrootLogger.appenderRef.out.ref = OUT\n"
                "appender.out.type = Console\nappender.out.name = OUT\n"
                "appender.out.layout.type = PatternLayout\n"
                "appender.out.layout.pattern = [%d] %p %m (%c)%n\n"
                "logger.dbz.name = io.debezium\nlogger.dbz.level = INFO\n"
                "logger.worker.name = org.apache.kafka.connect.runtime\nlogger.worker.level = INFO\n"
                "logger.cfg.name = org.apache.kafka.connect.runtime.ConnectorConfig\nlogger.cfg.level = WARN\n"
                "logger.cfg2.name = org.apache.kafka.connect.runtime.SourceConnectorConfig\nlogger.cfg2.level = WARN\n"
                "logger.cfg3.name = org.apache.kafka.connect.runtime.TaskConfig\nlogger.cfg3.level = WARN\n")
    return Proc(name, ["java", "-Xmx512m", "-Duser.timezone=UTC", "-Dlog4j2.configurationFile=" + log4j,
                       "-cp", os.path.join(libs, "*"),
                       "org.apache.kafka.connect.cli.ConnectDistributed", props], work)


def start_broker(sluice, work):
    broker_port, ctl_port, registry_port = free_port(), free_port(), free_port()
    server = Proc("server", [sluice, "server",
                             "--set", "log.dirs=" + os.path.join(work, "logs"),
                             "--set", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (broker_port, ctl_port),
                             "--set", "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % broker_port,
                             "--set", "controller.quorum.voters=1@127.0.0.1:%d" % ctl_port,
                             "--set", "group.initial.rebalance.delay.ms=0",
                             "--with-registry", "--registry-listen", "127.0.0.1:%d" % registry_port], work)
    wait_until("the broker", lambda: server.p.poll() is None and "listening on PLAINTEXT" in open(server.log).read(), 60)
    return server, "127.0.0.1:%d" % broker_port


def capture_side(side, args, out):
    """One side's run from nothing to its capture in `out`; every process and temp dir
    it started is gone when it returns (or raises)."""
    work = tempfile.mkdtemp(prefix="sluice-cdc-%s-" % side)
    procs, pg, watch = [], None, None
    started = time.time()
    try:
        if args.bootstrap:
            broker = args.bootstrap
        else:
            server, broker = start_broker(args.sluice, work)
            procs.append(server)
        pg = Postgres()
        prepare_database(pg)
        port = free_port()
        props = worker_props(work, side, broker, port)
        worker = (start_apache(work, "worker", props, args.libs) if side == "debezium"
                  else start_sluice(work, "worker", props, args.sluice))
        procs.append(worker)
        url = "http://127.0.0.1:%d" % port
        wait_rest(url, worker)
        log("%s worker up at %s (%.0fs)" % (side, url, time.time() - started))
        watch = Watcher(broker, PREFIX + ".")
        failed = None
        try:
            workload(pg, url, connector_config(pg), watch)
        except Exception as e:  # still capture what there is
            failed = e
        try:
            capture(broker, pg, url, out, worker.log)
        except Exception as e:
            if failed is None:
                raise
            log("capture after the failure failed too: %s" % e)
        if failed is not None:
            raise failed
        log("%s capture in %s (%.0fs)" % (side, out, time.time() - started))
        return True
    except Exception as e:  # a harness failure is a failure, with the logs' tails
        check("%s: harness" % side, False, "%s\n%s" % (e, "\n".join(
            "--- %s\n%s" % (p.name, p.tail(25)) for p in procs)))
        return False
    finally:
        if watch:
            watch.close()
        for p in reversed(procs):
            p.stop()
        if pg:
            pg.stop()
        if args.keep:
            log("work dir kept: " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sluice", help="the sluice binary (its broker; and its worker for --side sluice)")
    ap.add_argument("--side", choices=("debezium", "sluice", "both"), default="debezium")
    ap.add_argument("--out", help="captures go to OUT/debezium and OUT/sluice")
    ap.add_argument("--libs", help="Connect + Debezium jars (default: compat/cdc/fetch-debezium.sh)")
    ap.add_argument("--against", help="for --side sluice: the Debezium capture to compare with "
                                      "(default OUT/debezium when it exists)")
    ap.add_argument("--compare", nargs=2, metavar=("A_DIR", "B_DIR"), help="only compare two captures")
    ap.add_argument("--bootstrap", help="use this running broker instead of starting Sluice's")
    ap.add_argument("--exact", action="store_true", help="compare LSNs and txIds as they are")
    ap.add_argument("--keep", action="store_true", help="keep the work dirs")
    args = ap.parse_args()
    if args.compare:
        report_compare(args.compare[0], args.compare[1], ("A", "B"), args.exact)
        return finish()
    if not args.out or not (args.sluice or args.bootstrap):
        ap.error("--out and --sluice are needed (or --compare)")
    if args.sluice:
        args.sluice = os.path.abspath(args.sluice)
    out = os.path.abspath(args.out)
    if args.side in ("debezium", "both") and not args.libs:
        args.libs = subprocess.run([os.path.join(HERE, "fetch-debezium.sh")], check=True,
                                   stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
    sides = ["debezium", "sluice"] if args.side == "both" else [args.side]
    for side in sides:
        t0 = time.time()
        if capture_side(side, args, os.path.join(out, side)):
            sanity(os.path.join(out, side))
        log("%s side: %.0fs" % (side, time.time() - t0))
    if "sluice" in sides:
        against = args.against or os.path.join(out, "debezium")
        if os.path.isdir(os.path.join(against, "topics")) and os.path.isdir(os.path.join(out, "sluice", "topics")):
            report_compare(against, os.path.join(out, "sluice"), ("debezium", "sluice"), args.exact)
        else:
            check("compare", False, "no capture to compare (%s, %s)" % (against, os.path.join(out, "sluice")))
    return finish()


def finish():
    failed = RESULTS.count(False)
    print("cdc: %d passed, %d failed" % (RESULTS.count(True), failed))
    return 1 if failed or not RESULTS else 0


if __name__ == "__main__":
    sys.exit(main())
