#!/usr/bin/env python3
"""Kafka Connect compat (issue 20): Apache Kafka Connect 4.1.1 is the judge of Sluice's
worker, on one Sluice broker.

1. rest:  the same sequence of REST calls against an Apache Connect worker and a Sluice
          worker (FileStream source and sink, errors, pause/resume/stop/delete,
          config/validate) gives the same status codes and JSON shapes, field by field
          (worker ids, cluster ids, commits, file paths and traces aside); and both
          pipelines carry the same lines.
2. apache-on-sluice: the Apache worker's connectors ran on the Sluice broker (its group
          protocol, compacted internal topics): checked by 1's pipeline.
3. cross: a Sluice worker started on the Apache worker's topics (after it stopped)
          lists its connectors with their configs and resumes its file source from the
          offset the Apache worker committed (no line read twice); an Apache worker
          started on the Sluice worker's topics lists the Sluice connectors, their task
          configs and committed offsets.
4. kill:  three Sluice worker processes in one group (incremental cooperative,
          scheduled.rebalance.max.delay.ms=2000, exactly.once.source.support=enabled)
          run an exactly-once file source, an at-least-once one on the same file and a
          file sink; the worker running the exactly-once task is SIGKILLed mid-stream.
          Its work runs elsewhere within session.timeout.ms + the delay + heartbeats;
          restarted, it rejoins. Then: the exactly-once topic (read_committed) holds
          every line once, in order; the at-least-once topic every line (duplicates
          counted); the sink's file every line.
5. pipeline: the guide's flow with real targets, configured by POSTing JSON to two
          Sluice workers: a file source (lines hoisted into a struct, keyed by
          ValueToKey) writes Avro through Sluice's schema registry; Debezium's JDBC sink
          upserts into PostgreSQL 15 and Confluent's Elasticsearch sink into OpenSearch
          2.19.6. The worker running the source is SIGKILLed mid-stream and restarted:
          every line arrives, one row and one document per key (at-least-once
          duplicates collapse on the key), and the registry holds the subjects.
6. converters: Confluent's own Python serializers judge Sluice's JsonSchemaConverter and
          ProtobufConverter on one Sluice worker: records they wrote are read by a
          FileStream sink (each line the Connect value as Kafka's Struct.toString prints
          it), and what a FileStream source wrote through the converter is read by their
          deserializers, with the schema Sluice registered checked (see
          jsonschema_interop.py and protobuf_interop.py).

Prints "PASS connect: <check>" / "FAIL connect: <check>: <reason>" and
"connect: N passed, M failed"; exits 1 on a failure. Usage:
  connect_check.py --sluice target/debug/sluice --libs compat/kafka/libs [--keep]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

RESULTS = []
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def check(name, ok, reason=""):
    RESULTS.append(ok)
    print(("PASS connect: %s" % name) if ok else ("FAIL connect: %s: %s" % (name, reason)), flush=True)
    return ok


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ports import free_port  # noqa: E402,F401  (below the ephemeral range: compat/lib/ports.py)


def http(method, url, body=None, timeout=30):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            text = r.read().decode()
            return r.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as e:
        text = e.read().decode()
        try:
            return e.code, json.loads(text) if text else None
        except ValueError:
            return e.code, text


def wait_until(what, fn, timeout=60):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = fn()
            if last:
                return last
        except (OSError, urllib.error.URLError, ValueError, KeyError, IndexError, TypeError) as e:
            last = e
        time.sleep(0.2)
    raise RuntimeError("%s: not within %ss (last: %r)" % (what, timeout, last))


class Proc:
    def __init__(self, name, cmd, work, env=None):
        self.name = name
        self.log = os.path.join(work, name + ".log")
        self.p = subprocess.Popen(cmd, stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
                                  cwd=work, env=env, start_new_session=True)

    def stop(self, timeout=30):
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGTERM)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()

    def tail(self, n=30):
        with open(self.log, errors="replace") as f:
            return "".join(f.readlines()[-n:])


def worker_props(work, name, broker, port, prefix, group, extra=""):
    path = os.path.join(work, name + ".properties")
    with open(path, "w") as f:
        f.write("""bootstrap.servers=%s
group.id=%s
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.storage.StringConverter
offset.storage.topic=%s-offsets
offset.storage.replication.factor=1
config.storage.topic=%s-configs
config.storage.replication.factor=1
status.storage.topic=%s-status
status.storage.replication.factor=1
offset.flush.interval.ms=500
listeners=http://127.0.0.1:%d
rest.advertised.host.name=127.0.0.1
plugin.discovery=only_scan
%s""" % (broker, group, prefix, prefix, prefix, port,
        extra if extra else "scheduled.rebalance.max.delay.ms=0\n"))
    return path


def start_apache(work, name, props, libs):
    cp = os.path.join(libs, "*")
    log4j = os.path.join(work, "log4j2.properties")
    if not os.path.exists(log4j):
        with open(log4j, "w") as f:
            f.write("rootLogger.level = WARN\nrootLogger.appenderRef.out.ref = OUT\n"
                    "appender.out.type = Console\nappender.out.name = OUT\n"
                    "appender.out.layout.type = PatternLayout\n"
                    "appender.out.layout.pattern = %d %p %c: %m%n\n")
    return Proc(name, ["java", "-Xmx384m", "-Dlog4j2.configurationFile=" + log4j, "-cp", cp,
                       "org.apache.kafka.connect.cli.ConnectDistributed", props], work)


def kill_checks(sluice, work, broker, procs):
    lines = 300000
    src = os.path.join(work, "k-in.txt")
    with open(src, "w") as f:
        f.write("".join("k line %d\n" % i for i in range(lines)))
    size = os.path.getsize(src)
    expected = ["k line %d" % i for i in range(lines)]
    extra = ("exactly.once.source.support=enabled\nscheduled.rebalance.max.delay.ms=2000\n"
             "session.timeout.ms=6000\nheartbeat.interval.ms=1000\n")
    workers = {}
    for n in ("k1", "k2", "k3"):
        port = free_port()
        props = worker_props(work, n, broker, port, "k", "connect-k", extra)
        workers[n] = (port, props, start_sluice(work, n, props, sluice))
        procs.append(workers[n][2])
    for n, (port, _, proc) in workers.items():
        wait_rest("http://127.0.0.1:%d" % port, proc)
    url = "http://127.0.0.1:%d" % workers["k1"][0]
    sink_out = os.path.join(work, "k-out.txt")
    for name, config in [
        ("eos", {"connector.class": "FileStreamSource", "file": src, "topic": "eos-lines",
                 "batch.size": "1000", "exactly.once.support": "required"}),
        ("alo", {"connector.class": "FileStreamSource", "file": src, "topic": "alo-lines",
                 "batch.size": "1000"}),
        ("ksink", {"connector.class": "FileStreamSink", "file": sink_out, "topics": "eos-lines",
                   "consumer.override.isolation.level": "read_committed"}),
    ]:
        status, body = http("POST", url + "/connectors", {"name": name, "config": config})
        check("kill: create %s" % name, status == 201, repr(body))
    # The worker running the exactly-once task, once it is part way through the file.
    def eos_owner():
        _, s = http("GET", url + "/connectors/eos/status")
        _, o = http("GET", url + "/connectors/eos/offsets")
        pos = o["offsets"][0]["offset"]["position"] if o and o.get("offsets") else 0
        if s and s["tasks"] and s["tasks"][0]["state"] == "RUNNING" and 0 < pos:
            return s["tasks"][0]["worker_id"], pos
        return None
    owner, pos_at_kill = wait_until("the eos task under way", eos_owner, 60)
    victim = next(n for n, (port, _, _) in workers.items() if owner.endswith(":%d" % port))
    workers[victim][2].p.send_signal(signal.SIGKILL)
    workers[victim][2].p.wait()
    killed_at = time.time()
    check("kill: SIGKILLed mid-stream", pos_at_kill < size, "position %d of %d" % (pos_at_kill, size))
    alive = next(n for n in workers if n != victim)
    url = "http://127.0.0.1:%d" % workers[alive][0]

    def moved():
        _, s = http("GET", url + "/connectors/eos/status")
        return s and s["tasks"] and s["tasks"][0]["state"] == "RUNNING" and s["tasks"][0]["worker_id"] != owner
    wait_until("the eos task elsewhere", moved, 60)
    took = time.time() - killed_at
    # session.timeout.ms 6 s + scheduled delay 2 s + a heartbeat, and slack for a debug
    # build on 2 cores.
    check("kill: its work runs elsewhere within session + delay + heartbeat (%.1f s)" % took,
          took < 6 + 2 + 1 + 6, "%.1f s" % took)
    port, props, _ = workers[victim]
    restarted = start_sluice(work, victim + "-again", props, sluice)
    procs.append(restarted)
    wait_rest("http://127.0.0.1:%d" % port, restarted)

    def done():
        for c in ("eos", "alo"):
            _, o = http("GET", url + "/connectors/%s/offsets" % c)
            if not (o and o.get("offsets") and o["offsets"][0]["offset"]["position"] == size):
                return False
        return True
    wait_until("both sources through the file", done, 180)
    eos = topic_values(sluice, broker, "eos-lines", lines, ["-X", "isolation.level=read_committed"])
    check("kill: exactly-once source: every line once, in order (read_committed)", eos == expected,
          "%d values, %d distinct, first difference at %s" % (
              len(eos), len(set(eos)), next((i for i, (a, b) in enumerate(zip(eos, expected)) if a != b), None)))
    alo = topic_values(sluice, broker, "alo-lines", lines)
    check("kill: at-least-once source: every line (%d duplicates)" % (len(alo) - len(set(alo))),
          set(alo) == set(expected), "%d values, %d distinct" % (len(alo), len(set(alo))))

    def sink_done():
        with open(sink_out) as f:
            got = f.read().splitlines()
        return got if set(got) >= set(expected) else None
    try:
        got = wait_until("the sink's file", sink_done, 120)
        check("kill: file sink: every line (%d duplicates)" % (len(got) - len(set(got))),
              set(got) == set(expected), "%d lines" % len(got))
    except RuntimeError as e:
        check("kill: file sink: every line", False, str(e))
    for n, (_, _, proc) in workers.items():
        if n != victim:
            proc.stop()
    restarted.stop()


PG_BIN = "/usr/lib/postgresql/15/bin"


class Postgres:
    """PostgreSQL 15 from Debian's packages on a free port (initdb/pg_ctl as the
    postgres user when run as root, which initdb refuses)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sluice-connect-pg-")
        os.chmod(self.dir, 0o755)
        self.pre = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.pre:
            subprocess.run(["chown", "-R", "postgres:postgres", self.dir], check=True)
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        self.run("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8",
                 "--locale=C", "--no-sync")
        self.run("pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "log"), "-o",
                 "-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off" % (self.port, self.dir),
                 "-w", "start")

    def run(self, program, *args):
        subprocess.run(self.pre + [os.path.join(PG_BIN, program), *args], check=True,
                       capture_output=True, cwd=self.dir)

    def query(self, sql):
        out = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                              "-At", "-c", sql], capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            raise ValueError(out.stderr.strip())
        return out.stdout.strip()

    def stop(self):
        subprocess.run(self.pre + [os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-m",
                                   "immediate", "-w", "stop"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def pipeline_checks(sluice, work, broker, registry, procs):
    pg = Postgres()
    try:
        pipeline(sluice, work, broker, registry, procs, pg)
    finally:
        pg.stop()


def pipeline(sluice, work, broker, registry, procs, pg):
    os_port = free_port()
    opensearch = Proc("opensearch", ["bash", os.path.join(ROOT, "compat/opensearch/start.sh"), str(os_port),
                                     os.path.join(work, "opensearch")], work)
    procs.append(opensearch)
    lines = 20000
    src = os.path.join(work, "orders.txt")
    with open(src, "w") as f:
        f.write("".join("order-%05d\n" % i for i in range(lines)))
    size = os.path.getsize(src)
    extra = ("scheduled.rebalance.max.delay.ms=2000\nsession.timeout.ms=6000\n"
             "heartbeat.interval.ms=1000\n")
    workers = {}
    for n in ("p1", "p2"):
        port = free_port()
        props = worker_props(work, n, broker, port, "p", "connect-p", extra)
        workers[n] = (port, props, start_sluice(work, n, props, sluice))
        procs.append(workers[n][2])
    for n, (port, _, proc) in workers.items():
        wait_rest("http://127.0.0.1:%d" % port, proc)
    wait_until("OpenSearch", lambda: "opensearch ready" in open(opensearch.log).read(), 120)
    url = "http://127.0.0.1:%d" % workers["p1"][0]
    avro = {"key.converter": "io.confluent.connect.avro.AvroConverter",
            "key.converter.schema.registry.url": registry,
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": registry}
    connectors = [
        ("orders-src", dict(avro, **{
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file": src, "topic": "orders", "batch.size": "200",
            "transforms": "hoist,key",
            "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
            "transforms.hoist.field": "line",
            "transforms.key.type": "org.apache.kafka.connect.transforms.ValueToKey",
            "transforms.key.fields": "line"})),
        ("orders-pg", dict(avro, **{
            "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
            "topics": "orders",
            "connection.url": "jdbc:postgresql://127.0.0.1:%d/postgres" % pg.port,
            "connection.username": "postgres",
            "insert.mode": "upsert", "primary.key.mode": "record_key",
            "schema.evolution": "basic", "collection.name.format": "orders"})),
        ("orders-os", dict(avro, **{
            "connector.class": "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector",
            "topics": "orders", "connection.url": "http://127.0.0.1:%d" % os_port,
            "key.ignore": "false", "schema.ignore": "false",
            "transforms": "id",
            "transforms.id.type": "org.apache.kafka.connect.transforms.ExtractField$Key",
            "transforms.id.field": "line"})),
    ]
    for name, config in connectors:
        status, body = http("POST", url + "/connectors", {"name": name, "config": config})
        check("pipeline: POST %s" % name, status == 201, repr(body))

    def source_owner():
        _, s = http("GET", url + "/connectors/orders-src/status")
        _, o = http("GET", url + "/connectors/orders-src/offsets")
        pos = o["offsets"][0]["offset"]["position"] if o and o.get("offsets") else 0
        # As soon as it runs: the file takes it well under a second, so waiting for a
        # committed offset could miss the middle. Killed before it committed the end,
        # it reads again from what it committed.
        if s and s["tasks"] and s["tasks"][0]["state"] == "RUNNING":
            return s["tasks"][0]["worker_id"], pos
        return None
    owner, pos = wait_until("the source under way", source_owner, 90)
    victim = next(n for n, (port, _, _) in workers.items() if owner.endswith(":%d" % port))
    workers[victim][2].p.send_signal(signal.SIGKILL)
    workers[victim][2].p.wait()
    check("pipeline: source's worker SIGKILLed mid-stream", pos < size, "position %d of %d" % (pos, size))
    port, props, _ = workers[victim]
    restarted = start_sluice(work, victim + "-again", props, sluice)
    procs.append(restarted)
    wait_rest("http://127.0.0.1:%d" % port, restarted)
    alive = "http://127.0.0.1:%d" % workers[next(n for n in workers if n != victim)][0]

    def rows():
        got = pg.query("SELECT count(*), count(DISTINCT line) FROM orders")
        return got if got == "%d|%d" % (lines, lines) else None
    try:
        wait_until("every row in PostgreSQL", rows, 180)
        check("pipeline: PostgreSQL has one row per key, every key", True)
    except RuntimeError as e:
        check("pipeline: PostgreSQL has one row per key, every key", False, str(e))

    os_url = "http://127.0.0.1:%d" % os_port

    def docs():
        http("POST", os_url + "/orders/_refresh")
        _, c = http("GET", os_url + "/orders/_count")
        return c if c and c.get("count") == lines else None
    try:
        wait_until("every document in OpenSearch", docs, 180)
        _, doc = http("GET", os_url + "/orders/_doc/order-00042")
        check("pipeline: OpenSearch has one document per key, _id from the key",
              doc.get("found") and doc["_source"] == {"line": "order-00042"}, repr(doc))
    except RuntimeError as e:
        check("pipeline: OpenSearch has one document per key, _id from the key", False, str(e))
    _, subjects = http("GET", registry + "/subjects")
    check("pipeline: Avro schemas registered in Sluice's registry",
          sorted(subjects or []) == ["orders-key", "orders-value"], repr(subjects))
    _, statuses = http("GET", alive + "/connectors?expand=status")
    states = {n: [t["state"] for t in s["status"]["tasks"]] for n, s in (statuses or {}).items()}
    check("pipeline: every task RUNNING after the kill", all(st == ["RUNNING"] for st in states.values())
          and len(states) == 3, repr(states))
    for n, (_, _, proc) in workers.items():
        if n != victim:
            proc.stop()
    restarted.stop()
    opensearch.stop()


def converter_checks(sluice, work, broker, registry, procs):
    import jsonschema_interop
    import protobuf_interop
    port = free_port()
    proc = start_sluice(work, "converters", worker_props(work, "converters", broker, port, "c", "connect-c"), sluice)
    procs.append(proc)
    url = "http://127.0.0.1:%d" % port
    wait_rest(url, proc)
    for module in (jsonschema_interop, protobuf_interop):
        module.run(check, http, wait_until, url, broker, registry, work, sluice)
    proc.stop()


def start_sluice(work, name, props, sluice):
    return Proc(name, [sluice, "connect", props], work)


def wait_rest(url, proc, timeout=120):
    def up():
        if proc.p.poll() is not None:
            raise SystemExit("%s exited:\n%s" % (proc.name, proc.tail()))
        status, body = http("GET", url + "/")
        return status == 200 and body
    return wait_until("%s's REST API" % proc.name, up, timeout)


def shape(v):
    """A JSON value's shape: key sets and types, recursively (lists by their first item)."""
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [shape(v[0])] if v else []
    return type(v).__name__


IGNORED = {"worker_id", "kafka_cluster_id", "commit", "trace", "file", "filename", "topic", "topics",
           "kafka_topic", "last_modified"}


def same(a, b, path=""):
    """Differences between two answers: shapes everywhere, values except IGNORED keys."""
    out = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append("%s.%s only in %s" % (path, k, "apache" if k in a else "sluice"))
            elif k not in IGNORED:
                out.extend(same(a[k], b[k], path + "." + k))
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append("%s: %d items vs %d" % (path, len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            out.extend(same(x, y, "%s[%d]" % (path, i)))
    elif a != b:
        out.append("%s: apache %r, sluice %r" % (path, a, b))
    return out


def lines(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def rest_sequence(url, work, tag):
    """The REST calls, in order; returns [(label, status, body)] and the pipeline's output."""
    src_in = os.path.join(work, tag + "-in.txt")
    sink_out = os.path.join(work, tag + "-out.txt")
    with open(src_in, "w") as f:
        f.write("".join("%s line %d\n" % ("x", i) for i in range(20)))
    topic = tag + "-lines"
    calls = []

    def call(label, method, path, body=None):
        status, answer = http(method, url + path, body)
        calls.append((label, status, answer))
        return status, answer

    call("list empty", "GET", "/connectors")
    source = {"name": "src", "config": {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1", "file": src_in, "topic": topic}}
    call("create source", "POST", "/connectors", source)
    call("create source again", "POST", "/connectors", source)
    call("unknown connector", "GET", "/connectors/nope")
    call("unknown connector status", "GET", "/connectors/nope/status")
    wait_until("%s source running" % tag, lambda: http("GET", url + "/connectors/src/status")[1]
               .get("tasks", [{}])[0].get("state") == "RUNNING")
    call("source info", "GET", "/connectors/src")
    call("source config", "GET", "/connectors/src/config")
    call("source status", "GET", "/connectors/src/status")
    call("source tasks", "GET", "/connectors/src/tasks")
    call("source task status", "GET", "/connectors/src/tasks/0/status")
    wait_until("%s offsets" % tag, lambda: http("GET", url + "/connectors/src/offsets")[1]["offsets"])
    call("source offsets", "GET", "/connectors/src/offsets")
    sink = {"name": "sink", "config": {"connector.class": "FileStreamSink", "tasks.max": "1",
                                       "file": sink_out, "topics": topic}}
    call("create sink", "POST", "/connectors", sink)
    wait_until("%s sink output" % tag, lambda: len(lines(sink_out)) >= 20)
    call("list", "GET", "/connectors")
    call("list expanded", "GET", "/connectors?expand=status&expand=info")
    call("pause", "PUT", "/connectors/src/pause")
    wait_until("%s paused" % tag, lambda: http("GET", url + "/connectors/src/status")[1]
               ["tasks"][0]["state"] == "PAUSED")
    call("paused status", "GET", "/connectors/src/status")
    call("resume", "PUT", "/connectors/src/resume")
    wait_until("%s resumed" % tag, lambda: http("GET", url + "/connectors/src/status")[1]
               ["tasks"][0]["state"] == "RUNNING")
    call("stop", "PUT", "/connectors/sink/stop")
    wait_until("%s stopped" % tag, lambda: (lambda st: st["connector"]["state"] == "STOPPED" and all(
        t["state"] != "RUNNING" for t in st["tasks"]))(http("GET", url + "/connectors/sink/status")[1]))
    call("stopped status", "GET", "/connectors/sink/status")
    call("stopped tasks", "GET", "/connectors/sink/tasks")
    # KIP-875 on the stopped sink: its group's offsets, bad bodies, alter, reset.
    call("stopped sink offsets", "GET", "/connectors/sink/offsets")
    call("alter offsets without offsets", "PATCH", "/connectors/sink/offsets", {})
    call("alter offsets, partition without its keys", "PATCH", "/connectors/sink/offsets",
         {"offsets": [{"partition": {"kafka_topic": topic}, "offset": None}]})
    call("alter offsets, offset without kafka_offset", "PATCH", "/connectors/sink/offsets",
         {"offsets": [{"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {}}]})
    call("alter sink offsets", "PATCH", "/connectors/sink/offsets",
         {"offsets": [{"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 5}}]})
    call("altered sink offsets", "GET", "/connectors/sink/offsets")
    call("reset sink offsets", "DELETE", "/connectors/sink/offsets")
    call("reset a running connector's offsets", "DELETE", "/connectors/src/offsets")
    # KIP-558: the topics a connector used, and their reset.
    call("source topics", "GET", "/connectors/src/topics")
    call("reset source topics", "PUT", "/connectors/src/topics/reset")
    call("source topics after reset", "GET", "/connectors/src/topics")
    call("unknown connector topics", "GET", "/connectors/nope/topics")
    # KIP-495: log levels.
    call("loggers", "GET", "/admin/loggers")
    call("set a logger", "PUT", "/admin/loggers/org.apache.kafka.connect.runtime.WorkerSinkTask", {"level": "DEBUG"})
    call("the logger set", "GET", "/admin/loggers/org.apache.kafka.connect.runtime.WorkerSinkTask")
    call("set a logger without a level", "PUT", "/admin/loggers/org.apache.kafka.connect.runtime.WorkerSinkTask", {})
    call("set a logger to a bad level", "PUT", "/admin/loggers/org.apache.kafka.connect.runtime.WorkerSinkTask",
         {"level": "LOUD"})
    call("an unknown logger", "GET", "/admin/loggers/com.example.none")
    # Error handling's keys, validated as Connect does.
    call("a bad errors.tolerance", "POST", "/connectors", {"name": "bad-tolerance", "config": {
        "connector.class": "FileStreamSink", "topics": topic, "file": sink_out + ".2",
        "errors.tolerance": "most"}})
    call("a DLQ among its own topics", "POST", "/connectors", {"name": "bad-dlq", "config": {
        "connector.class": "FileStreamSink", "topics": "dlq-check", "file": sink_out + ".2",
        "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "dlq-check"}})
    call("delete", "DELETE", "/connectors/sink")
    call("deleted", "GET", "/connectors/sink")
    call("bad class", "POST", "/connectors", {"name": "bad", "config": {"connector.class": "com.example.Nope"}})
    call("restart connector", "POST", "/connectors/src/restart")
    call("restart unknown", "POST", "/connectors/nope/restart")
    return calls, lines(sink_out)


# Where Sluice's answer is known to differ in a value and why; a difference listed here is
# reported, not failed. (Empty: every difference fails.)
KNOWN = {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sluice", required=True)
    ap.add_argument("--libs", required=True)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="sluice-connect-compat-")
    procs = []
    try:
        broker_port, ctl_port, registry_port = free_port(), free_port(), free_port()
        server = Proc("server", [args.sluice, "server",
                                 "--set", "log.dirs=" + os.path.join(work, "logs"),
                                 "--set", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (broker_port, ctl_port),
                                 "--set", "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % broker_port,
                                 "--set", "controller.quorum.voters=1@127.0.0.1:%d" % ctl_port,
                                 "--set", "group.initial.rebalance.delay.ms=0",
                                 "--with-registry", "--registry-listen", "127.0.0.1:%d" % registry_port], work)
        procs.append(server)
        broker = "127.0.0.1:%d" % broker_port
        wait_until("the broker", lambda: "listening on PLAINTEXT" in open(server.log).read(), 60)

        a_port, s_port = free_port(), free_port()
        apache = start_apache(work, "apache", worker_props(work, "apache", broker, a_port, "a", "connect-a"), args.libs)
        sluice = start_sluice(work, "sluice", worker_props(work, "sluice", broker, s_port, "s", "connect-s"), args.sluice)
        procs += [apache, sluice]
        a_url, s_url = "http://127.0.0.1:%d" % a_port, "http://127.0.0.1:%d" % s_port
        a_root = wait_rest(a_url, apache)
        s_root = wait_rest(s_url, sluice)
        check("GET / shape", shape(a_root) == shape(s_root) and a_root["version"] == s_root["version"]
              and a_root["kafka_cluster_id"] == s_root["kafka_cluster_id"],
              "apache %r, sluice %r" % (a_root, s_root))

        a_calls, a_out = rest_sequence(a_url, work, "a")
        s_calls, s_out = rest_sequence(s_url, work, "s")
        expected = ["x line %d" % i for i in range(20)]
        check("apache-on-sluice: Apache's FileStream pipeline on the Sluice broker", a_out == expected, repr(a_out[:5]))
        check("sluice pipeline carries the same lines", s_out == expected, repr(s_out[:5]))
        for (label, a_status, a_body), (_, s_status, s_body) in zip(a_calls, s_calls):
            diffs = []
            if a_status != s_status:
                diffs.append("status apache %s, sluice %s" % (a_status, s_status))
            if label in ("bad class",):
                # Connect's message lists every plugin on its class path: compare the start.
                prefix = "Failed to find any class that implements Connector and which name matches com.example.Nope"
                if not (isinstance(s_body, dict) and prefix in s_body.get("message", "")):
                    diffs.append("message %r" % (s_body,))
                a_body = {"error_code": a_body.get("error_code")} if isinstance(a_body, dict) else a_body
                s_body = {"error_code": s_body.get("error_code")} if isinstance(s_body, dict) else s_body
            if label == "loggers" and isinstance(a_body, dict) and isinstance(s_body, dict):
                # Log4j lists every logger the JVM created (one per class that logs);
                # Sluice lists the root and those set. Compare the ones both name.
                both = set(a_body) & set(s_body)
                if not both:
                    diffs.append("no logger in common: apache %r, sluice %r" % (sorted(a_body)[:5], sorted(s_body)))
                a_body = {k: a_body[k] for k in both}
                s_body = {k: s_body[k] for k in both}
            if label == "list":
                # Connect's list is a set: no order.
                a_body, s_body = sorted(a_body or []), sorted(s_body or [])
            diffs += same(a_body, s_body)
            known = [d for d in diffs if KNOWN.get((label, d.split(":")[0]))]
            failing = [d for d in diffs if d not in known]
            check("rest: %s" % label, not failing, "; ".join(failing) + " | apache %s %s | sluice %s %s"
                  % (a_status, json.dumps(a_body)[:300], s_status, json.dumps(s_body)[:300]))

        # 3. Each reads the other's topics.
        apache.stop()
        sluice.stop()
        a_in = os.path.join(work, "a-in.txt")
        with open(a_in, "a") as f:
            f.write("".join("x line %d\n" % i for i in range(20, 30)))
        cross_port = free_port()
        s_on_a = start_sluice(work, "sluice-on-apache-topics",
                              worker_props(work, "sluice-on-a", broker, cross_port, "a", "connect-a"), args.sluice)
        procs.append(s_on_a)
        url = "http://127.0.0.1:%d" % cross_port
        wait_rest(url, s_on_a)
        status, names = http("GET", url + "/connectors")
        check("cross: Sluice lists the Apache worker's connectors", status == 200 and names == ["src"], repr(names))
        status, config = http("GET", url + "/connectors/src/config")
        check("cross: with the config Apache wrote", status == 200 and config.get("file") == a_in
              and config.get("topic") == "a-lines", repr(config))
        status, offsets = http("GET", url + "/connectors/src/offsets")
        check("cross: and the offset Apache committed", status == 200 and offsets["offsets"]
              and offsets["offsets"][0]["offset"]["position"] == len("".join("x line %d\n" % i for i in range(20))),
              repr(offsets))
        # Sluice's source resumes where Apache's stopped: the topic ends with lines 20-29, once.
        values = topic_values(args.sluice, broker, "a-lines", 30)
        check("cross: Sluice resumes Apache's source without reading a line twice",
              values == ["x line %d" % i for i in range(30)], repr(values[-12:]))
        s_on_a.stop()

        cross_port = free_port()
        a_on_s = start_apache(work, "apache-on-sluice-topics",
                              worker_props(work, "apache-on-s", broker, cross_port, "s", "connect-s"), args.libs)
        procs.append(a_on_s)
        url = "http://127.0.0.1:%d" % cross_port
        wait_rest(url, a_on_s)
        names = wait_until("apache lists sluice's connectors", lambda: http("GET", url + "/connectors")[1])
        check("cross: Apache lists the Sluice worker's connectors", names == ["src"], repr(names))
        status, tasks = http("GET", url + "/connectors/src/tasks")
        check("cross: with the task configs Sluice wrote", status == 200 and len(tasks) == 1
              and tasks[0]["config"].get("task.class") == "org.apache.kafka.connect.file.FileStreamSourceTask",
              repr(tasks))
        status, offsets = http("GET", url + "/connectors/src/offsets")
        check("cross: and the offset Sluice committed", status == 200 and offsets["offsets"]
              and offsets["offsets"][0]["offset"]["position"] == len("".join("x line %d\n" % i for i in range(20))),
              repr(offsets))
        a_on_s.stop()

        # 4. A worker SIGKILLed mid-stream.
        kill_checks(args.sluice, work, broker, procs)
        # 5. file -> Avro topic -> PostgreSQL and OpenSearch, through a kill.
        pipeline_checks(args.sluice, work, broker, "http://127.0.0.1:%d" % registry_port, procs)
        # 6. JSON Schema and Protobuf converters, judged by Confluent's Python client.
        converter_checks(args.sluice, work, broker, "http://127.0.0.1:%d" % registry_port, procs)
    except Exception as e:  # a harness failure is a failure, with the logs' tails
        check("harness", False, "%s\n%s" % (e, "\n".join("--- %s\n%s" % (p.name, p.tail(15)) for p in procs)))
    finally:
        for p in reversed(procs):
            p.stop()
        if args.keep:
            print("work dir kept: " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    failed = RESULTS.count(False)
    print("connect: %d passed, %d failed" % (RESULTS.count(True), failed))
    return 1 if failed or not RESULTS else 0


def topic_values(sluice, broker, topic, count, options=()):
    out = subprocess.run([sluice, "consume", topic, "--bootstrap-server", broker, "-c", str(count), "-f", "%s\n",
                          *options], capture_output=True, text=True, timeout=120)
    values = out.stdout.splitlines()
    # Anything past `count` (a line read twice) shows up in a second read to the end.
    extra = subprocess.run([sluice, "consume", topic, "--bootstrap-server", broker, "-e", "-f", "%s\n",
                            *options], capture_output=True, text=True, timeout=120)
    return extra.stdout.splitlines() if len(extra.stdout.splitlines()) > len(values) else values


if __name__ == "__main__":
    sys.exit(main())
