#!/usr/bin/env python3
"""CDC durability: Sluice's native Debezium PostgreSQL and MySQL/MariaDB sources
SIGKILLed mid-stream.

What the source promises: the replication slot's confirmed position moves only behind
offsets the worker committed for records Kafka acknowledged, so a worker killed at any
moment loses nothing committed in PostgreSQL; a restarted task resumes from the last
committed offset (at least once: the records after it may come again), and with
`exactly.once.source.support=enabled` records and offsets commit in one transaction, so a
read_committed consumer sees every change exactly once.

The check: one Sluice broker and one PostgreSQL 15 (wal_level=logical); rows are
inserted one transaction each, without pause, by a separate thread while a Sluice
Connect worker (a real process) streams them; the worker is SIGKILLed twice and started
again on the same internal topics; then the inserts stop. Every inserted id must be in
the topic (none lost), the slot may not be ahead of what the topic holds, and for the
exactly-once worker each id must be there once (read_committed).

MariaDB (the MySQL source): the same two cases against MariaDB 10.11 (the binlog is the
database's, not held for the connector: what is promised is that a restarted task
resumes from its last committed offset, so nothing committed in MariaDB is lost, and
with exactly-once support nothing is repeated).

Usage: kill_check.py --sluice target/debug/sluice [--keep]   (KILL_DBS=postgres,mariadb picks;
KILL_ONLY_EOS=1 runs only the exactly-once cases)
Prints PASS/FAIL lines and "cdc kill: N passed, M failed"; exits 1 on a failure.
"""
import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdc_check  # noqa: E402
from cdc_check import Postgres, free_port, http, start_broker, start_sluice, wait_rest, wait_until  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "mysql"))
import mysql_check  # noqa: E402

RESULTS = []


def check(name, ok, reason=""):
    RESULTS.append(ok)
    print(("PASS cdc kill: %s" % name) if ok else ("FAIL cdc kill: %s: %s" % (name, reason)), flush=True)
    return ok


class Inserter(threading.Thread):
    """Inserts ids 1, 2, ... one transaction each through one psql session until stopped;
    `committed` is the last id PostgreSQL confirmed."""

    def __init__(self, pg, table, mariadb=None):
        super().__init__(daemon=True)
        import subprocess
        command = ["psql", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres", "-d", "kill", "-q",
                   "-At", "-v", "ON_ERROR_STOP=1"] if mariadb is None else \
            mariadb.client("killdb") + ["--batch", "--skip-column-names", "-n"]
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.table = table
        self.stopped = threading.Event()
        self.committed = 0

    def run(self):
        i = 0
        while not self.stopped.is_set():
            i += 1
            # Each INSERT is its own transaction; the SELECT's echo confirms it committed.
            self.proc.stdin.write("INSERT INTO %s VALUES (%d, 'v%d'); SELECT %d;\n" % (self.table, i, i, i))
            self.proc.stdin.flush()
            line = self.proc.stdout.readline().strip()
            if line != str(i):
                raise RuntimeError("psql said %r" % line)
            self.committed = i
            time.sleep(0.005)

    def stop(self):
        self.stopped.set()
        self.join(30)
        self.proc.stdin.close()
        self.proc.wait(10)


def read_ids(broker, topic, isolation):
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
    c = Consumer({"bootstrap.servers": broker, "group.id": "kill-check-%f" % time.time(),
                  "enable.auto.commit": False, "isolation.level": isolation})
    try:
        _, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        ids, lsns, pos = [], [], 0
        detail = []
        deadline = time.time() + 60
        while pos < high and time.time() < deadline:
            msg = c.poll(0.5)
            if msg is None or msg.error():
                # Transaction markers are never returned: the position says how far.
                pos = max(pos, c.position([TopicPartition(topic, 0)])[0].offset)
                continue
            pos = msg.offset() + 1
            if msg.value():
                payload = json.loads(msg.value())["payload"]
                source = payload["source"]
                ids.append(payload["after"]["id"])
                lsns.append(source.get("lsn"))
                detail.append((payload["after"]["id"], payload["op"], source.get("txId", source.get("gtid")),
                               source.get("lsn", source.get("pos")), msg.offset()))
        read_ids.detail = detail
        return ids, lsns
    finally:
        c.close()


class PostgresSource:
    """The PostgreSQL side of a case: its table, connector config, slot and checks."""

    def __init__(self, pg):
        self.pg = pg

    def prepare(self, table, prefix):
        self.pg.query("CREATE TABLE %s (id integer PRIMARY KEY, v text)" % table, db="kill")
        self.slot = prefix + "_slot"

    def config(self, table, prefix, broker):
        return {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": "127.0.0.1", "database.port": str(self.pg.port), "database.user": "postgres",
            "database.dbname": "kill", "topic.prefix": prefix, "plugin.name": "pgoutput",
            "slot.name": self.slot, "publication.name": prefix + "_pub", "table.include.list": "public." + table,
        }

    def streaming(self):
        return self.pg.query("SELECT active FROM pg_replication_slots WHERE slot_name = '%s'" % self.slot,
                             db="kill") == "t"

    def topic(self, table, prefix):
        return "%s.public.%s" % (prefix, table)

    def inserter(self, table):
        return Inserter(self.pg, table)

    def after(self, name, lsns):
        flushed = self.pg.query("SELECT (confirmed_flush_lsn - '0/0')::bigint FROM pg_replication_slots "
                                "WHERE slot_name = '%s'" % self.slot, db="kill")
        check("%s: the slot is not ahead of the topic" % name,
              flushed and lsns and int(flushed) <= max(lsns) + 1024 * 1024,
              "confirmed_flush %s, last event lsn %s" % (flushed, max(lsns) if lsns else None))


class MariaDbSource:
    """The MariaDB side: the binlog is the server's, not held for the connector, so there
    is no slot to check; a killed worker's dump thread lingers until MariaDB notices, and
    the new one registers with the same server id and replaces it."""

    def __init__(self, db):
        self.db = db

    def prepare(self, table, prefix):
        self.db.script("CREATE TABLE %s (id INT PRIMARY KEY, v TEXT)" % table, "killdb")

    def config(self, table, prefix, broker):
        return {
            "connector.class": "io.debezium.connector.mysql.MySqlConnector",
            "database.hostname": "127.0.0.1", "database.port": str(self.db.port),
            "database.user": mysql_check.DBZ_USER, "database.password": mysql_check.DBZ_PASSWORD,
            "database.server.id": "5400", "topic.prefix": prefix, "database.include.list": "killdb",
            "table.include.list": "killdb." + table,
            "schema.history.internal.kafka.bootstrap.servers": broker,
            "schema.history.internal.kafka.topic": "history-" + prefix,
        }

    def streaming(self):
        return bool(self.db.dump_threads())

    def topic(self, table, prefix):
        return "%s.killdb.%s" % (prefix, table)

    def inserter(self, table):
        return Inserter(None, table, mariadb=self.db)

    def after(self, name, lsns):
        pass


def run_case(args, work, broker, source, name, exactly_once):
    """A worker streaming `source` while rows are inserted without pause, SIGKILLed twice
    and started again on the same internal topics; then every committed row must be in
    the topic (once each with exactly-once source support)."""
    table = name.replace("-", "_")
    prefix = "k" + table
    source.prepare(table, prefix)
    port = free_port()
    props = cdc_check.worker_props(work, name, broker, port)
    with open(props, "a") as f:
        f.write("group.id=cdc-kill-%s\noffset.storage.topic=%s-offsets\nconfig.storage.topic=%s-configs\n"
                "status.storage.topic=%s-status\noffset.flush.interval.ms=200\n"
                # A killed worker leaves the group after its session: the broker's minimum (6 s).
                "session.timeout.ms=6000\nheartbeat.interval.ms=1000\n" % (name, name, name, name))
        if exactly_once:
            f.write("exactly.once.source.support=enabled\n")
    url = "http://127.0.0.1:%d" % port
    config = source.config(table, prefix, broker)
    if exactly_once:
        config["exactly.once.support"] = "required"

    def start():
        w = start_sluice(work, "%s-worker" % name, props, args.sluice)
        wait_rest(url, w)
        return w

    worker = start()
    inserter = None
    try:
        status, body = http("POST", url + "/connectors", {"name": name, "config": config})
        if not check("%s: connector created" % name, status == 201, "%s %s" % (status, body)):
            return
        wait_until("%s streaming" % name, source.streaming, 60)
        inserter = source.inserter(table)
        inserter.start()
        for kill in (1, 2):
            time.sleep(1.5)
            os.killpg(worker.p.pid, signal.SIGKILL)
            killed = time.time()
            worker.p.wait()
            at = inserter.committed
            time.sleep(0.5)
            worker = start()
            wait_until("%s streaming again" % name, source.streaming, 60)
            print("cdc kill: %s: worker SIGKILLed (kill %d, %d rows committed), streaming again after %.0fs"
                  % (name, kill, at, time.time() - killed), flush=True)
        time.sleep(2.0)
        inserter.stop()
        last = inserter.committed
        inserter = None
        topic = source.topic(table, prefix)
        isolation = "read_committed" if exactly_once else "read_uncommitted"

        def all_in():
            ids, _ = read_ids(broker, topic, isolation)
            return set(range(1, last + 1)) <= set(ids)
        try:
            wait_until("every committed row in %s" % topic, all_in, 60)
        except RuntimeError:
            pass
        ids, lsns = read_ids(broker, topic, isolation)
        missing = sorted(set(range(1, last + 1)) - set(ids))
        check("%s: every one of %d committed rows is in the topic after 2 SIGKILLs" % (name, last),
              not missing and last > 100, "missing %d: %s" % (len(missing), missing[:20]))
        dupes = len(ids) - len(set(ids))
        if exactly_once:
            seen, again = set(), []
            for d in read_ids.detail:
                if d[0] in seen:
                    again.append(d)
                seen.add(d[0])
            first = {d[0]: d for d in reversed(read_ids.detail)}
            check("%s: each row exactly once (read_committed)" % name, dupes == 0,
                  "%d duplicates: %s" % (dupes, [(first[d[0]], d) for d in again[:5]]))
        else:
            print("cdc kill: %s: %d rows delivered again after the kills (at least once)" % (name, dupes),
                  flush=True)
        source.after(name, lsns)
    finally:
        if inserter:
            inserter.stop()
        worker.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sluice", required=True)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    args.sluice = os.path.abspath(args.sluice)
    work = tempfile.mkdtemp(prefix="sluice-cdc-kill-")
    procs, pg, db = [], None, None
    started = time.time()
    try:
        server, broker = start_broker(args.sluice, work)
        procs.append(server)
        which = os.environ.get("KILL_DBS", "postgres,mariadb").split(",")
        if "postgres" in which:
            pg = Postgres()
            pg.query("CREATE DATABASE kill", db="postgres")
            if not os.environ.get("KILL_ONLY_EOS"):
                run_case(args, work, broker, PostgresSource(pg), "alo", exactly_once=False)
            run_case(args, work, broker, PostgresSource(pg), "eos", exactly_once=True)
        if "mariadb" in which:
            db = mysql_check.MariaDB()
            db.script("CREATE DATABASE killdb; CREATE USER '%s'@'%%' IDENTIFIED BY '%s'; GRANT SELECT, RELOAD, "
                      "SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT, LOCK TABLES ON *.* TO '%s'@'%%';"
                      % (mysql_check.DBZ_USER, mysql_check.DBZ_PASSWORD, mysql_check.DBZ_USER), None)
            if not os.environ.get("KILL_ONLY_EOS"):
                run_case(args, work, broker, MariaDbSource(db), "mariadb-alo", exactly_once=False)
            run_case(args, work, broker, MariaDbSource(db), "mariadb-eos", exactly_once=True)
    except Exception as e:
        check("harness", False, "%s\n%s" % (e, "\n".join("--- %s\n%s" % (p.name, p.tail(25)) for p in procs)))
    finally:
        for p in reversed(procs):
            p.stop()
        if pg:
            pg.stop()
        if db:
            db.stop()
        if args.keep:
            print("cdc kill: work dir kept: " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("cdc kill: %d passed, %d failed (%.0fs)" % (RESULTS.count(True), RESULTS.count(False),
                                                     time.time() - started))
    return 1 if RESULTS.count(False) or not RESULTS else 0


if __name__ == "__main__":
    sys.exit(main())
