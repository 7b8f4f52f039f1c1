#!/usr/bin/env python3
"""CDC compat for MariaDB: Debezium's MySQL connector (io.debezium.connector.mysql.MySqlConnector)
on Apache Kafka Connect 3.7.0 is the judge of a native MySQL/MariaDB source, capturing
MariaDB 10.11 (Debian's) into a Sluice broker. Which Debezium: VARIANTS, each a Debezium
version, Connect version and connector config; the default run captures four:
  debezium-mariadb         2.7.4.Final, the guide's config (2.7.4 has no connector.adapter;
                           it reads MariaDB as a MySQL without GTIDs: source.gtid null, and
                           the first row after a restart is lost: a sanity check expects it)
  debezium-mariadb-tx      the same + provide.transaction.metadata=true, skipped.operations=none
                           (2.7.4 emits no transaction metadata on MariaDB)
  debezium-2.6-adapter     2.6.2.Final + connector.adapter=mariadb: MariaDB GTIDs, no loss
  debezium-2.6-adapter-tx  the same + provide.transaction.metadata=true, skipped.operations=none
Others, for the record: debezium-mariadb-adapter (2.7.4 ignores connector.adapter),
debezium-mariadb-connect4 (2.7.4 on Connect 4.1.1: the task fails at its restart with
NoSuchMethodError KafkaConsumer.poll(long)), debezium-3.6-mysql (3.6.1 refuses MariaDB).
See /work/notes/dbz-mariadb-format.md.

One variant's run (`capture_variant`):
  1. a Sluice broker (cdc_check.start_broker) and MariaDB 10.11 (`MariaDB`: its own
     mariadbd in a temp dir, 127.0.0.1 on a free port, unix socket in the temp dir,
     --log-bin --binlog-format=ROW --binlog-row-image=FULL --server-id=1, general log on);
  2. `prepare_database`: database order_service (orders, order_items as in the guide; all_types:
     every common column type; events_nopk: no primary key; not_captured: left out of
     table.include.list) and database other_db (left out of database.include.list), rows in
     each before the connector starts; user debezium with the grants Debezium documents;
  3. a Connect worker (Apache's ConnectDistributed from fetch-debezium-mysql.sh's libs) with
     JsonConverter schemas.enable=true for keys and values (cdc_check.worker_props);
  4. `workload`: POSTs the guide's connector JSON (`connector_config`, plus the variant's
     extra keys), waits for the snapshot (op r) and the binlog dump thread, then inserts,
     updates (one changing the primary key), deletes (tombstones), a multi-row multi-table
     transaction, every type streamed, ALTER TABLE orders ADD COLUMN channel and rows using
     it, changes to a table without a primary key, TRUNCATE TABLE of two tables, changes
     to tables not captured, a connector restart (POST /restart?includeTasks=true), more
     changes (and a CREATE TABLE), an end marker;
  5. `capture`: every topic `order-service*` (data topics order-service.order_service.<table>,
     the schema change topic order-service, order-service.transaction when enabled) and the
     schema history topic schema-changes.order-service, read from the beginning once quiet,
     as JSON lines (topic, partition, offset, key, value, headers, and key_raw/value_raw:
     the exact bytes) in OUT/<variant>/topics/<topic>.jsonl; the connector's records in the
     worker's offsets topic (offsets.jsonl); MariaDB's state (mariadb.json: version, GTID
     positions, binary logs, SHOW BINLOG EVENTS, the debezium user's grants); its general
     log (mariadb-general.log, and connector-sql.log: only the debezium user's sessions);
     the connector's REST status/offsets/topics (connector.json); the worker's log;
  6. `sanity`: PASS/FAIL checks that the capture holds what the workload must produce.

`compare(a_dir, b_dir)` compares two captures record by record (key, exact key bytes, value
with its schema, headers; the history topic; the offsets topic's keys and last values),
ignoring ts_ms/ts_us/ts_ns (top level and in source; the history records' ts_ms and
position.ts_sec; the offsets' ts_sec), source.version, and numbering source.thread (a
connection id) and the __debezium.context.runId header (3.x only) by appearance.

Usage:
  mysql_check.py --sluice target/debug/sluice --out DIR                # default variants
  mysql_check.py --sluice target/debug/sluice --out DIR --variants debezium-mariadb-tx
  mysql_check.py --compare DIR/debezium-mariadb OTHER/debezium-mariadb
Options: --libs (default: fetch-debezium-mysql.sh's output for the variant's versions),
--keep (work dirs), --bootstrap HOST:PORT (a running, empty broker instead of Sluice's).
A variant takes about a minute (MariaDB's install + start: about 4 s). Prints
"PASS mariadb: ..." / "FAIL mariadb: ..." and "mariadb: N passed, M failed"; exits 1 on a
failure.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ left in compat/
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "connect"))
import cdc_check  # noqa: E402
from cdc_check import (Watcher, diff, payload, read_all, read_jsonl, start_apache,  # noqa: E402
                       start_broker, wait_quiet, worker_props, write_jsonl)
from connect_check import free_port, http, start_sluice, wait_rest, wait_until  # noqa: E402

RESULTS = []
CONNECTOR = "order-service-cdc"
PREFIX = "order-service"            # topic.prefix: data topics PREFIX.<db>.<table>, schema changes PREFIX
DATABASE = "order_service"
HISTORY_TOPIC = "schema-changes.order-service"
OFFSETS_TOPIC = cdc_check.OFFSETS_TOPIC  # the worker's offset.storage.topic (cdc_check.worker_props)
DBZ_USER, DBZ_PASSWORD = "debezium", "dbz"
# In table.include.list order.
TABLES = ["orders", "order_items", "all_types", "events_nopk"]
SNAPSHOT_ROWS = {"orders": 3, "order_items": 3, "all_types": 3, "events_nopk": 2}
MARIADBD = "/usr/sbin/mariadbd"

# Debezium versions and connector configs tried; the default run captures DEFAULT_VARIANTS.
# kafka/debezium pick fetch-debezium-mysql.sh's libs; extra is added to connector_config().
VARIANTS = {
    # The guide's config as it is, on Connect 3.7.0: Debezium 2.7's Kafka (on Connect 4.x its
    # KafkaSchemaHistory.recoverRecords calls KafkaConsumer.poll(long), gone in Kafka 4, so
    # every task start after the first fails with NoSuchMethodError: "debezium-mariadb-connect4").
    # 2.7.4 reads MariaDB as a MySQL without GTIDs: source.gtid null, no gtids in offsets,
    # and the first row after a restart is lost (skips_first_row_after_restart).
    "debezium-mariadb": {"kafka": "3.7.0", "debezium": "2.7.4.Final", "extra": {},
                         "skips_first_row_after_restart": True},
    # Transaction metadata (topic order-service.transaction, the transaction block) and
    # TRUNCATE events (Debezium skips them by default: skipped.operations=t).
    "debezium-mariadb-tx": {"kafka": "3.7.0", "debezium": "2.7.4.Final",
                            "extra": {"provide.transaction.metadata": "true", "skipped.operations": "none"},
                            "skips_first_row_after_restart": True},
    # The config: 2.7.4 has no connector.adapter (it went when
    # debezium-connector-binlog was split out): ignored, the capture is debezium-mariadb's.
    "debezium-mariadb-adapter": {"kafka": "3.7.0", "debezium": "2.7.4.Final",
                                 "extra": {"connector.adapter": "mariadb"},
                                 "skips_first_row_after_restart": True},
    # 2.6.2.Final's MySqlConnector still has connector.adapter=mariadb (mariadb-java-client,
    # MariaDB GTIDs in source.gtid and the offsets, restarts by GTID): the one that
    # captures MariaDB 10.11 correctly here.
    "debezium-2.6-adapter": {"kafka": "3.7.0", "debezium": "2.6.2.Final",
                             "extra": {"connector.adapter": "mariadb"}},
    "debezium-2.6-adapter-tx": {"kafka": "3.7.0", "debezium": "2.6.2.Final",
                                "extra": {"connector.adapter": "mariadb", "provide.transaction.metadata": "true",
                                          "skipped.operations": "none"}},
    # The first candidate as it stood: 2.7.4 on Connect 4.1.1 (fails at the restart).
    "debezium-mariadb-connect4": {"kafka": "4.1.1", "debezium": "2.7.4.Final", "extra": {},
                                  "skips_first_row_after_restart": True},
    # Debezium 3.6.1's MySqlConnector (the PG harness's version) on Connect 4.3.0: refuses
    # MariaDB (takes 10.11 for MySQL >= 8.4, SHOW BINARY LOG STATUS fails; POST gives 500).
    "debezium-3.6-mysql": {"kafka": "4.3.0", "debezium": "3.6.1.Final", "extra": {}},
}
# Sluice's native connector on Sluice's Connect worker, with the judge's config.
VARIANTS["sluice"] = {"debezium": None, "extra": dict(VARIANTS["debezium-2.6-adapter"]["extra"]),
                      "sluice_worker": True}
VARIANTS["sluice-tx"] = {"debezium": None, "extra": dict(VARIANTS["debezium-2.6-adapter-tx"]["extra"]),
                         "sluice_worker": True}
# --side-by-side: each judge beside Sluice's capture of the same workload.
SIDE_BY_SIDE = [("debezium-2.6-adapter", "sluice"), ("debezium-2.6-adapter-tx", "sluice-tx")]
DEFAULT_VARIANTS = ["debezium-mariadb", "debezium-mariadb-tx", "debezium-2.6-adapter", "debezium-2.6-adapter-tx"]


def check(name, ok, reason=""):
    RESULTS.append(ok)
    print(("PASS mariadb: %s" % name) if ok else ("FAIL mariadb: %s: %s" % (name, reason)), flush=True)
    return ok


cdc_check.check = check  # Watcher.wait_for reports through it


def log(msg):
    print("mariadb: %s" % msg, flush=True)


# --------------------------------------------------------------------------- MariaDB

class MariaDB:
    """MariaDB 10.11 from Debian's packages (mariadbd, mariadb-install-db), in a temp dir,
    as the mysql user when run as root: 127.0.0.1 on a free port, its unix socket in the
    temp dir, binlog in ROW format with full row images, server id 1 unless told
    (MariaDB's GTIDs are always on: domain 0, server 1), the general log on (every statement and command the
    connector sends), the time zone UTC and utf8mb4 as in Debian's config (--no-defaults
    would otherwise give latin1). root@localhost has no password (socket only)."""

    def __init__(self, server_id=1):
        t0 = time.time()
        self.dir = tempfile.mkdtemp(prefix="sluice-cdc-mariadb-")
        os.chmod(self.dir, 0o755)
        self.user = "mysql" if os.geteuid() == 0 else None
        if self.user:
            subprocess.run(["chown", "-R", "mysql:mysql", self.dir], check=True)
        self.data = os.path.join(self.dir, "data")
        self.sock = os.path.join(self.dir, "mysqld.sock")
        self.general_log = os.path.join(self.dir, "general.log")
        self.error_log = os.path.join(self.dir, "error.log")
        self.port = free_port()
        user = ["--user=" + self.user] if self.user else []
        out = subprocess.run(["mariadb-install-db", "--no-defaults", "--datadir=" + self.data,
                              "--auth-root-authentication-method=normal", "--skip-test-db"] + user,
                             capture_output=True, text=True, cwd=self.dir)
        if out.returncode != 0:
            raise RuntimeError("mariadb-install-db: %s %s" % (out.stdout[-2000:], out.stderr[-2000:]))
        self.installed = time.time() - t0
        self.proc = subprocess.Popen(
            [MARIADBD, "--no-defaults", *user, "--datadir=" + self.data,
             "--port=%d" % self.port, "--bind-address=127.0.0.1", "--socket=" + self.sock,
             "--pid-file=" + os.path.join(self.dir, "mysqld.pid"),
             "--log-bin=" + os.path.join(self.data, "binlog"), "--binlog-format=ROW",
             "--binlog-row-image=FULL", "--server-id=%d" % server_id,
             "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
             "--default-time-zone=+00:00", "--skip-name-resolve",
             "--general-log=1", "--general-log-file=" + self.general_log,
             "--log-error=" + self.error_log,
             "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M", "--innodb-flush-log-at-trx-commit=2"],
            stdout=open(os.path.join(self.dir, "mariadbd.out"), "w"), stderr=subprocess.STDOUT,
            cwd=self.dir, start_new_session=True)

        def up():
            if self.proc.poll() is not None:
                raise SystemExit("mariadbd exited: %s" % self.tail())
            return subprocess.run(self.client() + ["-e", "SELECT 1"], capture_output=True).returncode == 0
        wait_until("mariadbd", up, 60)
        self.started = time.time() - t0

    def tail(self, n=20):
        try:
            with open(self.error_log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def client(self, db=None):
        return ["mariadb", "--no-defaults", "-S", self.sock, "-uroot", "--default-character-set=utf8mb4"] + \
            (["-D", db] if db else [])

    def script(self, sql, db=DATABASE):
        """Runs a multi-statement script (autocommit unless it says START TRANSACTION/COMMIT)."""
        out = subprocess.run(self.client(db) + ["--batch"], input=sql, capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise ValueError("mariadb: %s: %s" % (sql.strip()[:200], out.stderr.strip()))
        return out.stdout

    def rows(self, sql, db=None):
        """The rows of one statement as dicts (batch output: tab-separated, \\-escaped, NULL)."""
        text = self.script(sql, db)
        lines = text.split("\n")
        if not lines or not lines[0]:
            return []
        cols = lines[0].split("\t")

        def unescape(v):
            if v == "NULL":
                return None
            return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "0": "\0", "\\": "\\"}.get(m.group(1), m.group(1)), v)
        return [dict(zip(cols, map(unescape, line.split("\t")))) for line in lines[1:] if line]

    def value(self, sql):
        r = self.rows(sql)
        return list(r[0].values())[0] if r else None

    def dump_threads(self):
        """Connection ids of the connector's binlog dump threads (COM_BINLOG_DUMP[_GTID])."""
        return [int(r["ID"]) for r in self.rows(
            "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = '%s' AND COMMAND LIKE 'Binlog Dump%%'" % DBZ_USER)]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


SCHEMA = r"""
CREATE DATABASE order_service;
USE order_service;
CREATE TABLE orders (
  id INT AUTO_INCREMENT PRIMARY KEY,
  customer_id INT NOT NULL,
  status ENUM('NEW','PAID','SHIPPED') NOT NULL DEFAULT 'NEW',
  total DECIMAL(10,2),
  created_at DATETIME(3),
  updated_at TIMESTAMP(6) DEFAULT CURRENT_TIMESTAMP(6),
  note TEXT,
  data JSON
);
CREATE TABLE order_items (
  order_id INT,
  line_no SMALLINT,
  sku VARCHAR(32),
  qty INT,
  price DECIMAL(8,2),
  PRIMARY KEY (order_id, line_no)
);
CREATE TABLE all_types (
  id INT AUTO_INCREMENT PRIMARY KEY,
  c_tinyint TINYINT, c_tinyint_u TINYINT UNSIGNED,
  c_smallint SMALLINT, c_smallint_u SMALLINT UNSIGNED,
  c_mediumint MEDIUMINT, c_mediumint_u MEDIUMINT UNSIGNED,
  c_int INT NOT NULL DEFAULT 42, c_int_u INT UNSIGNED,
  c_bigint BIGINT, c_bigint_u BIGINT UNSIGNED,
  c_bool BOOLEAN,
  c_decimal DECIMAL(12,4), c_decimal0 DECIMAL(5), c_float FLOAT, c_double DOUBLE,
  c_bit1 BIT(1), c_bit8 BIT(8), c_bit12 BIT(12),
  c_char CHAR(3), c_varchar VARCHAR(50) NOT NULL DEFAULT 'dflt', c_text TEXT, c_blob BLOB,
  c_binary BINARY(4), c_varbinary VARBINARY(16),
  c_enum ENUM('sad','ok','happy'), c_set SET('a','b','c'),
  c_json JSON,
  c_date DATE, c_time TIME(6), c_time0 TIME, c_datetime DATETIME, c_datetime6 DATETIME(6),
  c_timestamp TIMESTAMP NULL, c_year YEAR
);
CREATE TABLE events_nopk (
  kind VARCHAR(16),
  payload JSON,
  at DATETIME(6)
);
CREATE TABLE not_captured (
  id INT PRIMARY KEY,
  v TEXT
);
CREATE DATABASE other_db;
CREATE TABLE other_db.t (id INT PRIMARY KEY, v VARCHAR(10));
"""

TYPE_COLUMNS = ("c_tinyint, c_tinyint_u, c_smallint, c_smallint_u, c_mediumint, c_mediumint_u, c_int, c_int_u, "
                "c_bigint, c_bigint_u, c_bool, c_decimal, c_decimal0, c_float, c_double, c_bit1, c_bit8, c_bit12, "
                "c_char, c_varchar, c_text, c_blob, c_binary, c_varbinary, c_enum, c_set, c_json, c_date, c_time, "
                "c_time0, c_datetime, c_datetime6, c_timestamp, c_year")

# Every column set; and the edges: minimums and maximums, the zero date, empty values.
ALL_TYPES_FULL = (
    "INSERT INTO all_types (" + TYPE_COLUMNS + ") VALUES (127, 0, 32767, 0, 8388607, 0, 2147483647, 0, "
    "9223372036854775807, 0, TRUE, 12345678.9012, 99999, 1.5, 2.718281828459045, b'1', b'10100101', b'101010101010', "
    "'abc', 'hello', 'some text', x'0102ff', 'ab', x'deadbeef', 'happy', 'a,c', '{\"a\": 1, \"b\": [1, 2]}', "
    "'2024-02-29', '13:45:56.123456', '13:45:56', '2024-02-29 13:45:56', '2024-02-29 13:45:56.123456', "
    "'2024-02-29 13:45:56', 2024);\n")
ALL_TYPES_EDGES = (
    "INSERT INTO all_types (" + TYPE_COLUMNS + ") VALUES (-128, 255, -32768, 65535, -8388608, 16777215, "
    "-2147483648, 4294967295, -9223372036854775808, 18446744073709551615, FALSE, -99999999.9999, -1, "
    "-3.40282e38, 1e-300, b'0', b'10000001', b'111111111111', '', '', '', x'', x'00', x'', 'sad', '', '[]', "
    "'0000-00-00', '-838:59:59.000000', '838:59:59', '1000-01-01 00:00:00', '9999-12-31 23:59:59.999999', "
    "'1970-01-01 00:00:01', 1901);\n")
# Streamed: other shapes of the same types (non-ASCII and escapes, the epoch, a BIGINT
# UNSIGNED past the signed range, a negative fraction of a second).
ALL_TYPES_STREAM = (
    "INSERT INTO all_types (" + TYPE_COLUMNS + ") VALUES (1, 1, -1, 1, -1, 1, 7, 1, 70000000000, "
    "9223372036854775808, NULL, 0.5, 0, 3.25e38, -1.5, NULL, b'0', b'1', 'ab', 'streamed', "
    "'say \"hi\" \\\\ back\\\\slash, ünïcödé €, tab\\there', x'00ff00', 'xyz\\0', x'00', 'ok', 'a,b,c', "
    "'{\"nested\": {\"k\": [true, null]}}', '1970-01-01', '-00:00:01.500000', '00:00:00', "
    "'1970-01-01 00:00:00', '1969-12-31 23:59:59.999999', '2038-01-19 03:14:07', 2155);\n")


def prepare_database(db):
    """The schema, the rows each table holds before the connector starts, the user."""
    db.script(SCHEMA, db=None)
    db.script(
        "INSERT INTO orders (customer_id, status, total, created_at, updated_at, note, data) VALUES "
        "(1001, 'NEW', 99.90, '2024-03-01 10:00:00.123', '2024-03-01 10:00:00.123456', 'first order', "
        "'{\"gift\": false}'), "
        "(1002, 'PAID', 12.50, '2024-03-02 11:30:00.000', '2024-03-02 11:30:00.500000', NULL, NULL), "
        "(1003, 'SHIPPED', 0.01, '2024-03-03 12:00:00.999', '2024-03-03 12:00:00.000001', 'ünïcödé', '[1, 2]');\n"
        "INSERT INTO order_items VALUES (1, 1, 'SKU-1', 2, 9.99), (1, 2, 'SKU-2', 1, 24.50), (2, 1, 'SKU-3', 5, 1.25);\n"
        + ALL_TYPES_FULL
        + "INSERT INTO all_types () VALUES ();\n"  # defaults only
        + ALL_TYPES_EDGES
        + "INSERT INTO events_nopk VALUES ('boot', '{\"v\": 1}', '2024-01-01 00:00:00'), "
          "('login', NULL, '2024-01-01 00:00:01.5');\n"
        + "INSERT INTO not_captured VALUES (1, 'x');\n"
        + "INSERT INTO other_db.t VALUES (1, 'x');\n")
    # Debezium's documented grants (MySQL connector); on MariaDB 10.5+ REPLICATION CLIENT
    # is BINLOG MONITOR (needed for SHOW MASTER STATUS / SHOW BINARY LOGS).
    db.script("CREATE USER '%s'@'%%' IDENTIFIED BY '%s';\n"
              "GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT, LOCK TABLES "
              "ON *.* TO '%s'@'%%';\n" % (DBZ_USER, DBZ_PASSWORD, DBZ_USER), db=None)


def connector_config(db, extra=None):
    """The guide's connector JSON (table.include.list extended by the types table and the
    table without a primary key), plus the variant's keys."""
    config = {
        "connector.class": "io.debezium.connector.mysql.MySqlConnector",
        "database.hostname": "127.0.0.1",
        "database.port": str(db.port),
        "database.user": DBZ_USER,
        "database.password": DBZ_PASSWORD,
        "database.server.id": "184054",
        "topic.prefix": PREFIX,
        "database.include.list": DATABASE,
        "table.include.list": ",".join("%s.%s" % (DATABASE, t) for t in TABLES),
        "schema.history.internal.kafka.bootstrap.servers": None,  # set by the caller
        "schema.history.internal.kafka.topic": HISTORY_TOPIC,
        "include.schema.changes": "true",
    }
    config.update(extra or {})
    return config


# --------------------------------------------------------------------------- workload

def topic_of(table):
    return "%s.%s.%s" % (PREFIX, DATABASE, table)


def event(table, op, **fields):
    """A predicate: a change event on `table` with op `op` whose after (before for d)
    image has the given column values."""
    def pred(r):
        if r["topic"] != topic_of(table):
            return False
        p = payload(r)
        if not p or p.get("op") != op:
            return False
        image = p.get("before") if op == "d" else p.get("after")
        return all(image.get(k) == v for k, v in fields.items())
    return pred


def connector_state(url, name):
    _, s = http("GET", url + "/connectors/%s/status" % name)
    tasks = [t["state"] for t in (s or {}).get("tasks", [])]
    return (s or {}).get("connector", {}).get("state"), tasks, s


def wait_streaming(db, url, name, what, not_ids=(), timeout=120):
    """The task RUNNING and a binlog dump thread of the connector's user (not one of not_ids)."""
    def ready():
        state, tasks, s = connector_state(url, name)
        if state == "FAILED" or "FAILED" in tasks:
            raise RuntimeError("connector failed: %s" % json.dumps(s)[:3000])
        ids = [i for i in db.dump_threads() if i not in not_ids]
        return ids[0] if state == "RUNNING" and tasks == ["RUNNING"] and ids else None
    return wait_until(what, ready, timeout)


def offsets_settled(url, name, quiet=2.0, timeout=30):
    """Waits until the connector's committed streaming offset (one with `row` or `event`:
    past the snapshot) stayed the same for `quiet` seconds, so a restart resumes after
    what was read. Its pos is a transaction's start (2.6 with connector.adapter=mariadb) or
    the end of the last rows event read (2.7.4 on MariaDB), hence no comparison with events."""
    state = {"off": None, "since": time.time()}

    def settled():
        _, o = http("GET", url + "/connectors/%s/offsets" % name)
        offs = [e.get("offset") for e in (o or {}).get("offsets", []) if e.get("offset")]
        off = {k: v for k, v in offs[0].items() if k != "ts_sec"} if offs else None
        if off != state["off"]:
            state["off"], state["since"] = off, time.time()
            return None
        return off if off and ("row" in off or "event" in off) and time.time() - state["since"] >= quiet else None
    try:
        return wait_until("the committed offset settled", settled, timeout)
    except RuntimeError as e:
        log("warning: %s" % e)
        return None


def workload(db, url, config, watch, name=CONNECTOR, truncate_events=False):
    """POSTs `config` as connector `name` to the Connect worker at `url`, then makes the
    scripted changes to `db` (a MariaDB: .script(sql), .dump_threads()), each step waiting
    for the event it must produce (read by `watch`, a cdc_check.Watcher following every
    topic that starts with PREFIX). The database must hold prepare_database's rows.
    truncate_events: the config emits TRUNCATE events (skipped.operations=none)."""
    status, body = http("POST", url + "/connectors", {"name": name, "config": config})
    check("workload: POST the connector", status == 201, "%s %s" % (status, body))
    if status != 201:
        raise RuntimeError("connector not created")
    for table, n in SNAPSHOT_ROWS.items():
        watch.wait_for("snapshot of %s" % table, lambda r, t=table, n=n: sum(
            1 for x in watch.records if x["topic"] == topic_of(t)
            and (payload(x) or {}).get("op") == "r") >= n, timeout=180)
    thread = wait_streaming(db, url, name, "the connector streaming after its snapshot")
    log("snapshot done, streaming (binlog dump thread %d)" % thread)

    steps = [
        ("insert",
         "INSERT INTO orders (customer_id, status, total, created_at, updated_at, note, data) VALUES "
         "(1004, 'NEW', 250.00, '2024-04-01 09:00:00.000', '2024-04-01 09:00:00.000000', 'streamed', "
         "'{\"items\": 3}');",
         event("orders", "c", id=4)),
        ("update",
         "UPDATE orders SET status = 'PAID', updated_at = '2024-04-01 09:05:00.250000' WHERE id = 1;",
         event("orders", "u", id=1, status="PAID")),
        ("update of the primary key", "UPDATE orders SET id = 102 WHERE id = 2;",
         event("orders", "c", id=102)),
        ("delete", "DELETE FROM orders WHERE id = 3;",
         lambda r: r["topic"] == topic_of("orders") and r["value"] is None and r["key"]["payload"]["id"] == 3),
        ("every type: insert, update, delete",
         ALL_TYPES_STREAM + "UPDATE all_types SET c_text = 'changed', c_json = '{\"z\": 0}', c_decimal = 0.5, "
         "c_set = 'b', c_bit8 = b'11111111' WHERE id = 1;\nDELETE FROM all_types WHERE id = 3;\n",
         event("all_types", "d", id=3)),
        ("a multi-row multi-table transaction",
         "START TRANSACTION;\n"
         "INSERT INTO orders (id, customer_id, status, total, created_at, updated_at, note, data) VALUES "
         "(5, 1005, 'NEW', 10.00, '2024-04-02 08:00:00.000', '2024-04-02 08:00:00.000000', 'tx a', NULL), "
         "(6, 1006, 'NEW', 20.00, '2024-04-02 08:00:01.000', '2024-04-02 08:00:01.000000', 'tx b', NULL);\n"
         "INSERT INTO order_items VALUES (5, 1, 'SKU-5', 1, 10.00), (6, 1, 'SKU-6a', 1, 15.00), (6, 2, 'SKU-6b', 2, 2.50);\n"
         "UPDATE order_items SET qty = qty + 1 WHERE order_id = 1;\n"
         "DELETE FROM order_items WHERE order_id = 2;\n"
         "UPDATE orders SET status = 'PAID' WHERE id IN (5, 6);\n"
         "COMMIT;\n",
         event("orders", "u", id=6, status="PAID")),
        ("ALTER TABLE ADD COLUMN, then rows using it",
         "ALTER TABLE orders ADD COLUMN channel VARCHAR(16) DEFAULT 'web';\n"
         "INSERT INTO orders (customer_id, total, created_at, updated_at, channel) VALUES "
         "(1007, 5.00, '2024-04-03 07:00:00.000', '2024-04-03 07:00:00.000000', 'mobile');\n"
         "INSERT INTO orders (customer_id, total, created_at, updated_at) VALUES "
         "(1008, 6.00, '2024-04-03 07:00:01.000', '2024-04-03 07:00:01.000000');\n"
         "UPDATE orders SET channel = 'store' WHERE id = 1;\n",
         event("orders", "u", id=1, channel="store")),
        ("a table without a primary key: insert, update, delete",
         "INSERT INTO events_nopk VALUES ('logout', '{\"v\": [1, {\"x\": null}]}', '2024-01-02 10:00:00');\n"
         "UPDATE events_nopk SET kind = 'login2' WHERE kind = 'login';\n"
         "DELETE FROM events_nopk WHERE kind = 'boot';\n",
         event("events_nopk", "d", kind="boot")),
        ("TRUNCATE TABLE of a table with and one without a primary key, then inserts",
         "TRUNCATE TABLE events_nopk;\nTRUNCATE TABLE order_items;\n"
         "INSERT INTO order_items VALUES (7, 1, 'SKU-7', 3, 3.00);\n"
         "INSERT INTO events_nopk VALUES ('after-truncate', NULL, NULL);\n",
         event("events_nopk", "c", kind="after-truncate")),
        ("tables not captured, then a captured change",
         "INSERT INTO not_captured VALUES (2, 'y');\nUPDATE not_captured SET v = 'z';\n"
         "INSERT INTO other_db.t VALUES (2, 'y');\nALTER TABLE other_db.t ADD COLUMN w INT;\n"
         "ALTER TABLE not_captured ADD COLUMN w INT;\n"
         "INSERT INTO order_items VALUES (8, 1, 'after-uncaptured', 1, 100.00);\n",
         event("order_items", "c", order_id=8)),
    ]
    for what, sql, pred in steps:
        db.script(sql)
        watch.wait_for(what, pred)
        log("step done: %s" % what)
    if truncate_events:
        watch.wait_for("TRUNCATE events (op t)", lambda r: r["topic"] == topic_of("order_items")
                       and (payload(r) or {}).get("op") == "t", timeout=10)

    # A restart mid-stream: once the offsets cover what was read, so it resumes after it.
    off = offsets_settled(url, name)
    log("committed offset before the restart: %s" % json.dumps(off))
    status, body = http("POST", url + "/connectors/%s/restart?includeTasks=true" % name)
    check("workload: restart the connector and its task", status in (202, 204), "%s %s" % (status, body))
    new_thread = wait_streaming(db, url, name, "the connector streaming again after its restart", not_ids=(thread,))
    log("restarted (binlog dump thread now %d)" % new_thread)
    steps = [
        ("changes after the restart",
         "INSERT INTO orders (customer_id, status, total, created_at, updated_at, note, data, channel) VALUES "
         "(1009, 'NEW', 7.77, '2024-04-04 06:00:00.000', '2024-04-04 06:00:00.000000', 'after restart', "
         "'{\"r\": true}', 'api');\n"
         "UPDATE all_types SET c_year = 2000, c_time = '01:02:03.000004' WHERE id = 1;\n"
         "DELETE FROM order_items WHERE order_id = 7;\n",
         lambda r: r["topic"] == topic_of("order_items") and r["value"] is None and r["key"]["payload"]["order_id"] == 7),
        ("CREATE TABLE in the captured database (not in table.include.list), DROP of an uncaptured one",
         "CREATE TABLE later_table (id INT PRIMARY KEY);\nDROP TABLE not_captured;\n"
         "INSERT INTO order_items VALUES (9, 1, 'after-create', 1, 1.00);\n",
         event("order_items", "c", order_id=9)),
        ("the end marker",
         "INSERT INTO orders (customer_id, status, total, created_at, updated_at, note) VALUES "
         "(1999, 'NEW', 0, '2024-12-31 23:59:59.999', '2024-12-31 23:59:59.999999', 'end marker');",
         event("orders", "c", customer_id=1999)),
    ]
    for what, sql, pred in steps:
        db.script(sql)
        watch.wait_for(what, pred)
        log("step done: %s" % what)


# --------------------------------------------------------------------------- capture

def connector_sessions(general_log, user=DBZ_USER):
    """The general log's lines of `user`'s connections (their ids from the Connect lines)."""
    ids, out = set(), []
    cur = None
    line_re = re.compile(r"^(?:\d{6}\s+[\d:]+\s+|\t\t)\s*(\d+)\s+(\w+(?: \w+)*?)\t(.*)$")
    with open(general_log, errors="replace") as f:
        for line in f:
            m = line_re.match(line.rstrip("\n"))
            if m:
                cid, cmd, arg = int(m.group(1)), m.group(2), m.group(3)
                if cmd == "Connect" and arg.startswith(user + "@"):
                    ids.add(cid)
                cur = cid
                if cid in ids:
                    out.append(line)
            elif cur in ids:  # a statement's continuation line
                out.append(line)
    return "".join(out)


def mariadb_state(db):
    state = {
        "version": db.value("SELECT VERSION()"),
        "variables": db.rows("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('server_id', 'log_bin', "
                             "'binlog_format', 'binlog_row_image', 'binlog_checksum', 'binlog_annotate_row_events', "
                             "'gtid_domain_id', 'gtid_strict_mode', 'gtid_current_pos', 'gtid_binlog_pos', "
                             "'gtid_slave_pos', 'log_bin_basename', 'time_zone', 'character_set_server', "
                             "'collation_server', 'sql_mode', 'explicit_defaults_for_timestamp', "
                             "'binlog_row_metadata', 'lower_case_table_names')"),
        "master_status": db.rows("SHOW MASTER STATUS"),
        "binary_logs": db.rows("SHOW BINARY LOGS"),
        "grants": db.rows("SHOW GRANTS FOR '%s'@'%%'" % DBZ_USER),
        "binlog_events": {},
    }
    for b in state["binary_logs"]:
        state["binlog_events"][b["Log_name"]] = db.rows("SHOW BINLOG EVENTS IN '%s'" % b["Log_name"])
    return state


def capture(broker, db, url, out, worker_log=None, name=CONNECTOR):
    """Writes the capture of a finished run into `out` (replaced)."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "topics"))
    wait_quiet(broker, PREFIX)
    records = read_all(broker, topics_prefix=PREFIX) + read_all(broker, topic=HISTORY_TOPIC)
    by_topic = {}
    for r in records:
        by_topic.setdefault(r["topic"], []).append(r)
    for topic, rs in sorted(by_topic.items()):
        rs.sort(key=lambda r: (r["partition"], r["offset"]))
        write_jsonl(os.path.join(out, "topics", topic + ".jsonl"), rs)
    offsets = [r for r in read_all(broker, topic=OFFSETS_TOPIC)
               if isinstance(r["key"], list) and r["key"] and r["key"][0] == name]
    offsets.sort(key=lambda r: (r["partition"], r["offset"]))
    write_jsonl(os.path.join(out, "offsets.jsonl"), offsets)
    with open(os.path.join(out, "mariadb.json"), "w") as f:
        json.dump(mariadb_state(db), f, indent=1)
    if os.path.exists(db.general_log):
        shutil.copy(db.general_log, os.path.join(out, "mariadb-general.log"))
        with open(os.path.join(out, "connector-sql.log"), "w") as f:
            f.write(connector_sessions(db.general_log))
    if os.path.exists(db.error_log):
        shutil.copy(db.error_log, os.path.join(out, "mariadb-error.log"))
    rest = {}
    for what in ("", "/config", "/status", "/tasks", "/offsets", "/topics"):
        rest[what or "/"] = http("GET", url + "/connectors/%s%s" % (name, what))
    with open(os.path.join(out, "connector.json"), "w") as f:
        json.dump(rest, f, indent=1)
    if worker_log and os.path.exists(worker_log):
        shutil.copy(worker_log, os.path.join(out, "worker.log"))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"topics": {t: len(rs) for t, rs in sorted(by_topic.items())},
                   "offsets_records": len(offsets)}, f, indent=1)
    return by_topic, offsets


def load_capture(d):
    topics = {}
    tdir = os.path.join(d, "topics")
    for fname in sorted(os.listdir(tdir)):
        if fname.endswith(".jsonl"):
            topics[fname[:-6]] = read_jsonl(os.path.join(tdir, fname))
    return topics, read_jsonl(os.path.join(d, "offsets.jsonl"))


# --------------------------------------------------------------------------- sanity

def sanity(out, variant):
    """What the workload must have produced, whoever captured it."""
    topics, offsets = load_capture(out)
    extra = VARIANTS.get(variant, {}).get("extra", {})
    tx_asked = extra.get("provide.transaction.metadata") == "true"
    # Debezium 2.7.4 sees no transaction boundaries on MariaDB (it handles neither MariaDB's
    # GTID events nor are there BEGIN query events): no transaction topic nor blocks.
    tx = tx_asked and not VARIANTS.get(variant, {}).get("skips_first_row_after_restart")
    want = {topic_of(t) for t in TABLES} | {PREFIX, HISTORY_TOPIC} | ({PREFIX + ".transaction"} if tx else set())
    check("%s: topics: one per captured table, %s, %s%s, no other" % (variant, PREFIX, HISTORY_TOPIC,
          ", %s.transaction" % PREFIX if tx else ""), set(topics) == want, "got %s" % sorted(topics))

    def events(table):
        return topics.get(topic_of(table), [])

    def ops(table):
        return [(payload(r) or {}).get("op") if r["value"] is not None else None for r in events(table)]

    for table, n in SNAPSHOT_ROWS.items():
        check("%s: snapshot: %d reads (op r) of %s" % (variant, n, table), ops(table).count("r") == n,
              "ops %s" % ops(table))
    snap = [payload(r)["source"]["snapshot"] for t in TABLES for r in events(t)
            if r["value"] is not None and payload(r)["op"] == "r"]
    check("%s: snapshot: source.snapshot marks the first and last record" % variant,
          snap and snap[0] == "first" and "last" in snap, repr(snap))
    orders = events("orders")
    check("%s: orders: creates, updates, a delete and its tombstone" % variant,
          {"c", "u", "d", None} <= set(ops("orders")), repr(ops("orders")))
    tomb = [i for i, r in enumerate(orders) if r["value"] is None]
    check("%s: orders: each delete followed by a tombstone with the same key" % variant,
          tomb and all(i > 0 and orders[i - 1]["value"] and payload(orders[i - 1])["op"] == "d"
                       and orders[i - 1]["key_raw"] == orders[i]["key_raw"] for i in tomb), repr(tomb))
    headers = {h[0] for r in orders for h in r["headers"]}
    check("%s: orders: a key change is a delete with __debezium.newkey and a create with __debezium.oldkey" % variant,
          {"__debezium.newkey", "__debezium.oldkey"} <= headers, repr(headers))
    upd = [payload(r) for r in orders if r["value"] is not None and payload(r)["op"] == "u"]
    check("%s: orders: updates carry the full before image (binlog_row_image=FULL)" % variant,
          upd and all(p["before"] and p["before"].get("customer_id") is not None for p in upd), repr(upd[:1]))
    after = [payload(r)["after"] for r in orders if r["value"] is not None and payload(r)["after"]]
    check("%s: orders: the added column in later events" % variant,
          any(a.get("channel") == "mobile" for a in after) and any(a.get("channel") == "web" for a in after),
          repr(after[-3:]))
    n1009 = len([a for a in after if a.get("customer_id") == 1009])
    check("%s: restart: no change read twice (at most one create of customer 1009)" % variant, n1009 <= 1,
          repr(after[-3:]))
    if VARIANTS.get(variant, {}).get("skips_first_row_after_restart"):
        # Debezium 2.7.4 on MariaDB: its offset after a transaction is {pos: end of the last
        # rows event, row: n}; restarted, it skips n rows of the next transaction.
        check("%s: restart: the first row after the restart is lost (Debezium 2.7.4's defect on "
              "MariaDB, reproduced: no create of customer 1009)" % variant, n1009 == 0, repr(after[-3:]))
    else:
        check("%s: restart: no change lost (the create of customer 1009)" % variant, n1009 == 1, repr(after[-3:]))
    rows = [payload(r)["source"]["row"] for r in events("order_items") if r["value"] is not None
            and payload(r)["op"] == "c" and payload(r)["after"]["order_id"] in (5, 6)]
    check("%s: a multi-row insert numbers its rows in source.row" % variant, rows == [0, 1, 2], repr(rows))
    nopk = events("events_nopk")
    check("%s: no primary key: null keys" % variant, nopk and all(r["key"] is None for r in nopk),
          repr([r["key"] for r in nopk]))
    changes = [payload(r) for r in topics.get(PREFIX, [])]
    ddls = [p.get("ddl") for p in changes]
    check("%s: schema change topic: the snapshot's DDL and the ALTER TABLE" % variant,
          any("ADD COLUMN channel" in (d or "") for d in ddls) and any((d or "").startswith("CREATE TABLE") for d in ddls),
          repr(ddls))
    hist = [r["value"] for r in topics.get(HISTORY_TOPIC, [])]
    check("%s: schema history: records with source, position, ddl, tableChanges" % variant,
          hist and all(isinstance(h, dict) and {"source", "position", "ddl", "tableChanges"} <= set(h) for h in hist),
          repr(hist[:2])[:500])
    check("%s: offsets: committed under [%s, {server: %s}]" % (variant, CONNECTOR, PREFIX),
          offsets and all(r["key"] == [CONNECTOR, {"server": PREFIX}] for r in offsets),
          repr([r["key"] for r in offsets][:3]))
    if extra.get("skipped.operations") == "none":
        check("%s: TRUNCATE: an op t event for each table" % variant,
              "t" in ops("order_items") and "t" in ops("events_nopk"), repr((ops("order_items"), ops("events_nopk"))))
    data = [payload(r) for t in TABLES for r in events(t) if r["value"] is not None]
    if tx:
        txs = [payload(r) for r in topics.get(PREFIX + ".transaction", [])]
        ends = [i for i, p in enumerate(txs) if p["status"] == "END"]
        # A DDL's GTID (no BEGIN flag) opens a transaction that no END closes.
        check("%s: transactions: each END right after the BEGIN of the same id" % variant,
              ends and all(i > 0 and txs[i - 1]["status"] == "BEGIN" and txs[i - 1]["id"] == txs[i]["id"]
                           for i in ends), repr([(p["status"], p["id"]) for p in txs])[:600])
        multi = [p for p in txs if p["status"] == "END" and len(p["data_collections"] or []) > 1]
        check("%s: transactions: the multi-table one counts its events per table" % variant,
              multi and multi[0]["event_count"] == sum(d["event_count"] for d in multi[0]["data_collections"]),
              repr(multi))
        check("%s: transactions: every streamed event has a transaction block" % variant,
              all((p["transaction"] is None) == (p["op"] == "r") for p in data if p["op"] != "t"),
              repr([p["transaction"] for p in data][:5]))
    elif tx_asked:
        check("%s: transactions: none emitted (no %s.transaction topic, transaction blocks null)" % (variant, PREFIX),
              PREFIX + ".transaction" not in topics and all(p["transaction"] is None for p in data),
              repr([p["transaction"] for p in data if p["transaction"]][:3]))


# --------------------------------------------------------------------------- compare

IGNORED_TS = ("ts_ms", "ts_us", "ts_ns")


ENVELOPE_ORDER = ["before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]


class Normalizer:
    """What differs between two runs on fresh servers whatever the implementation: times,
    the Debezium version string, connection ids, the runId header."""

    def __init__(self, topics):
        self.runs, self.threads = {}, {}
        for topic in sorted(topics):
            for r in topics[topic]:
                for k, v in r.get("headers") or []:
                    if k == "__debezium.context.runId" and v not in self.runs:
                        self.runs[v] = "RUN%d" % len(self.runs)
                p = payload(r)
                src = p.get("source") if isinstance(p, dict) else None
                if isinstance(src, dict) and src.get("thread") is not None and src["thread"] not in self.threads:
                    self.threads[src["thread"]] = len(self.threads)

    def record(self, r):
        r = json.loads(json.dumps(r))
        value = r.get("value")
        schema = value.get("schema") if isinstance(value, dict) else None
        if isinstance(schema, dict) and str(schema.get("name", "")).endswith(".Envelope"):
            # Debezium 2.6 puts `transaction` last, 2.7 and 3.x before `op`: one envelope
            # field order for both (an accepted difference, docs/cdc.md).
            schema["fields"] = sorted(schema.get("fields") or [], key=lambda f: ENVELOPE_ORDER.index(f.get("field"))
                                      if f.get("field") in ENVELOPE_ORDER else len(ENVELOPE_ORDER))
            p = value.get("payload")
            if isinstance(p, dict):
                value["payload"] = {k: p[k] for k in sorted(p, key=lambda k: ENVELOPE_ORDER.index(k)
                                                            if k in ENVELOPE_ORDER else len(ENVELOPE_ORDER))}
        r["headers"] = [[k, self.runs.get(v, v) if k == "__debezium.context.runId" else v]
                        for k, v in r.get("headers") or []]
        r.pop("offset", None)
        p = payload(r)
        if isinstance(p, dict):
            for k in IGNORED_TS:
                p.pop(k, None)
            src = p.get("source")
            if isinstance(src, dict):
                for k in IGNORED_TS + ("version",):
                    src.pop(k, None)
                if src.get("thread") is not None:
                    src["thread"] = "THREAD%d" % self.threads.get(src["thread"], -1)
                if isinstance(src.get("ts_sec"), int):  # the history topic's source
                    src.pop("ts_sec")
            pos = p.get("position")
            if isinstance(pos, dict):
                pos.pop("ts_sec", None)
        return r


def compare(a_dir, b_dir, names=("A", "B")):
    a_topics, a_offsets = load_capture(a_dir)
    b_topics, b_offsets = load_capture(b_dir)
    na, nb = Normalizer(a_topics), Normalizer(b_topics)
    out, notes = [], []
    for t in sorted(set(a_topics) | set(b_topics)):
        if t not in b_topics or t not in a_topics:
            out.append("topic %s only in %s" % (t, names[0] if t in a_topics else names[1]))
            continue
        parts = sorted({r["partition"] for r in a_topics[t]} | {r["partition"] for r in b_topics[t]})
        for p in parts:
            ra = [na.record(r) for r in a_topics[t] if r["partition"] == p]
            rb = [nb.record(r) for r in b_topics[t] if r["partition"] == p]
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
    ka = {json.dumps(r["key"]) for r in a_offsets}
    kb = {json.dumps(r["key"]) for r in b_offsets}
    if ka != kb:
        out.append("offsets: keys %s: %s, %s: %s" % (names[0], sorted(ka), names[1], sorted(kb)))
    for k in sorted(ka & kb):
        la = dict([r["value"] for r in a_offsets if json.dumps(r["key"]) == k][-1] or {})
        lb = dict([r["value"] for r in b_offsets if json.dumps(r["key"]) == k][-1] or {})
        for v in (la, lb):
            v.pop("ts_sec", None)
        diff(dict(sorted(la.items())), dict(sorted(lb.items())), "offsets[%s] last value" % k, out, names)
        sa = {tuple(sorted(r["value"] or {})) for r in a_offsets if json.dumps(r["key"]) == k}
        sb = {tuple(sorted(r["value"] or {})) for r in b_offsets if json.dumps(r["key"]) == k}
        for s in sorted(sa ^ sb):
            notes.append("offsets: value with keys %s only in %s" % (list(s), names[0] if s in sa else names[1]))
    return out, notes


def report_compare(a_dir, b_dir, names):
    diffs, notes = compare(a_dir, b_dir, names)
    for line in notes:
        print("  note: " + line)
    for line in diffs[:400]:
        print("  " + line)
    if len(diffs) > 400:
        print("  ... and %d more" % (len(diffs) - 400))
    check("compare: %s and %s captures match" % names, not diffs, "%d differences (above)" % len(diffs))


# --------------------------------------------------------------------------- a variant's run

def fetch_libs(variant):
    v = VARIANTS[variant]
    if v.get("sluice_worker"):
        return None
    env = dict(os.environ, KAFKA_VERSION=v["kafka"], DEBEZIUM_VERSION=v["debezium"])
    return subprocess.run([os.path.join(HERE, "fetch-debezium-mysql.sh")], check=True, env=env,
                          stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]


def capture_variant(variant, args, out, libs, sluice_worker=False):
    """One run from nothing to its capture in `out`; every process and temp dir it
    started is gone when it returns (or raises). sluice_worker: Sluice's Connect worker
    (`sluice connect`) instead of Apache's."""
    work = tempfile.mkdtemp(prefix="sluice-cdc-mariadb-%s-" % variant)
    procs, db, watch = [], None, None
    started = time.time()
    try:
        if args.bootstrap:
            broker = args.bootstrap
        else:
            server, broker = start_broker(args.sluice, work)
            procs.append(server)
        t0 = time.time()
        db = MariaDB()
        log("MariaDB %s up on 127.0.0.1:%d (install %.1fs, install + start %.1fs)"
            % (db.value("SELECT VERSION()"), db.port, db.installed, db.started))
        prepare_database(db)
        log("database prepared (%.1fs since MariaDB's install began)" % (time.time() - t0))
        port = free_port()
        props = worker_props(work, "worker", broker, port)
        worker = start_sluice(work, "worker", props, args.sluice) if sluice_worker \
            else start_apache(work, "worker", props, libs)
        procs.append(worker)
        url = "http://127.0.0.1:%d" % port
        wait_rest(url, worker)
        log("%s worker up at %s (%.0fs)" % (variant, url, time.time() - started))
        watch = Watcher(broker, PREFIX)
        config = connector_config(db, VARIANTS[variant]["extra"])
        config["schema.history.internal.kafka.bootstrap.servers"] = broker
        failed = None
        try:
            workload(db, url, config, watch,
                     truncate_events=VARIANTS[variant]["extra"].get("skipped.operations") == "none")
        except (Exception, SystemExit) as e:  # still capture what there is
            failed = e
        try:
            capture(broker, db, url, out, worker.log)
        except Exception as e:
            if failed is None:
                raise
            log("capture after the failure failed too: %s" % e)
        if failed is not None:
            raise failed
        log("%s capture in %s (%.0fs)" % (variant, out, time.time() - started))
        return True
    except (Exception, SystemExit) as e:  # a harness failure is a failure, with the logs' tails
        check("%s: harness" % variant, False, "%s\n%s\n--- mariadb error log\n%s" % (e, "\n".join(
            "--- %s\n%s" % (p.name, p.tail(25)) for p in procs), db.tail() if db else ""))
        return False
    finally:
        if watch:
            watch.close()
        for p in reversed(procs):
            p.stop()
        if db:
            if args.keep:
                shutil.copytree(db.dir, os.path.join(work, "mariadb"), dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("*.sock", "*.pid"))
            db.stop()
        if args.keep:
            log("work dir kept: " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sluice", help="the sluice binary (its broker)")
    ap.add_argument("--out", help="captures go to OUT/<variant>")
    ap.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                    help="comma-separated, of: %s (default %s)" % (", ".join(VARIANTS), ",".join(DEFAULT_VARIANTS)))
    ap.add_argument("--libs", help="Connect + Debezium jars (default: fetch-debezium-mysql.sh's, per variant)")
    ap.add_argument("--compare", nargs=2, metavar=("A_DIR", "B_DIR"), help="only compare two captures")
    ap.add_argument("--bootstrap", help="use this running broker instead of starting Sluice's")
    ap.add_argument("--side-by-side", action="store_true",
                    help="capture %s and compare each pair" % ", ".join("%s + %s" % p for p in SIDE_BY_SIDE))
    ap.add_argument("--keep", action="store_true", help="keep the work dirs (and MariaDB's data dir)")
    args = ap.parse_args()
    if args.compare:
        report_compare(args.compare[0], args.compare[1], ("A", "B"))
        return finish()
    if not args.out or not (args.sluice or args.bootstrap):
        ap.error("--out and --sluice are needed (or --compare)")
    if args.sluice:
        args.sluice = os.path.abspath(args.sluice)
    out = os.path.abspath(args.out)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        if v not in VARIANTS:
            ap.error("unknown variant %s" % v)
    if args.side_by_side:
        variants = [v for pair in SIDE_BY_SIDE for v in pair]
    for variant in variants:
        t0 = time.time()
        libs = os.path.abspath(args.libs) if args.libs else fetch_libs(variant)
        if capture_variant(variant, args, os.path.join(out, variant), libs,
                           sluice_worker=bool(VARIANTS[variant].get("sluice_worker"))):
            sanity(os.path.join(out, variant), variant)
        log("%s: %.0fs" % (variant, time.time() - t0))
    if args.side_by_side:
        for judge, ours in SIDE_BY_SIDE:
            report_compare(os.path.join(out, judge), os.path.join(out, ours), (judge, ours))
    return finish()


def finish():
    failed = RESULTS.count(False)
    print("mariadb: %d passed, %d failed" % (RESULTS.count(True), failed))
    return 1 if failed or not RESULTS else 0


if __name__ == "__main__":
    sys.exit(main())
