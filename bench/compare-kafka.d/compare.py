#!/usr/bin/env python3
"""Driver of bench/compare-kafka: Apache Kafka 4.1 and Sluice, one after the other, under
the same load generators, on the same disk, in one run. See bench/compare-kafka for
usage and docs/benchmarks.md ("Against Apache Kafka") for what each figure means.

Run it through bench/compare-kafka, which builds Sluice, fetches Kafka's jars and
installs confluent-kafka first.
"""

import argparse
import base64
import datetime
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
COMPAT = os.path.join(REPO, "compat", "kafka")
LIBS = os.path.join(COMPAT, "libs")
TOOLS_LOG4J = os.path.join(COMPAT, "log4j2.properties")
CLK_TCK = os.sysconf("SC_CLK_TCK")

# kafka-server-start.sh: KAFKA_HEAP_OPTS="-Xmx1G -Xms1G"; kafka-run-class.sh:
# KAFKA_JVM_PERFORMANCE_OPTS and, for kafka-server-start.sh's `-loggc`, the GC log.
JVM_PERFORMANCE_OPTS = ["-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                        "-XX:InitiatingHeapOccupancyPercent=35",
                        "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true"]
KAFKA_HEAP_OPTS = ["-Xmx1G", "-Xms1G"]
# kafka-producer-perf-test.sh / kafka-consumer-perf-test.sh: KAFKA_HEAP_OPTS="-Xmx512M".
TOOL_JVM = ["-Xmx512M", *JVM_PERFORMANCE_OPTS, "-Dlog4j2.configurationFile=" + TOOLS_LOG4J]
# kafka-storage.sh: kafka-run-class.sh's default heap.
STORAGE_JVM = ["-Xmx256M", *JVM_PERFORMANCE_OPTS, "-Dlog4j2.configurationFile=" + TOOLS_LOG4J]

PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance"


def log(msg):
    print("compare-kafka: " + msg, file=sys.stderr, flush=True)


def env_int(name, default):
    v = os.environ.get(name)
    return int(v) if v else default


# ---------------------------------------------------------------------------- processes

def _die_with_parent():
    """preexec_fn: SIGKILL this child if the driver dies; own process group."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _sigterm_to_exit():
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, handler)


def proc_cpu_seconds(pid):
    """utime + stime of one process, in seconds (None if it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_status_kib(pid, key):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def system_busy_seconds():
    """CPU seconds spent by every process on the machine (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    vals = [int(x) for x in parts]
    # user nice system idle iowait irq softirq steal (guest time is inside user)
    busy = vals[0] + vals[1] + vals[2] + vals[5] + vals[6] + (vals[7] if len(vals) > 7 else 0)
    return busy / CLK_TCK


def children_cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def free_port(avoid=()):
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in avoid:
            return port


def metadata_broker_count(port, timeout=2.0):
    """Metadata v4 (all topics) over a raw socket; the number of brokers in the answer."""
    body = struct.pack(">i", -1) + b"\x00"
    client = b"compare-kafka"
    req = struct.pack(">hhih", 3, 4, 1, len(client)) + client + body
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(req)) + req)
        size = struct.unpack(">i", _recv_exact(s, 4))[0]
        resp = _recv_exact(s, size)
    return struct.unpack_from(">i", resp, 8)[0]


def _recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return buf


def tail(path, n=25):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no %s)" % path


# ---------------------------------------------------------------------------- brokers

class Broker:
    """One broker process. Alone (single-node mode) or, with node_id, ports and voters,
    one node of a Cluster (--cluster)."""
    label = "?"

    def __init__(self, workdir, node_id=None, ports=None, voters=None, cluster_id=None):
        self.workdir = workdir
        self.data_dir = os.path.join(workdir, "data")
        self.node_id = node_id
        self.cluster_id = cluster_id
        if ports:
            self.port, self.controller_port = ports
        else:
            self.port = free_port()
            self.controller_port = free_port(avoid=(self.port,))
        self.proc = None
        self.out_path = os.path.join(workdir, self.label.lower().replace(" ", "-") + ".out")
        os.makedirs(workdir, exist_ok=True)
        self.config = os.path.join(workdir, "server.properties")
        template = "server.properties.in" if node_id is None else "cluster.properties.in"
        text = (open(os.path.join(HERE, template)).read()
                .replace("@PORT@", str(self.port))
                .replace("@CONTROLLER_PORT@", str(self.controller_port))
                .replace("@LOG_DIRS@", self.data_dir)
                .replace("@NODE_ID@", str(node_id))
                .replace("@VOTERS@", voters or ""))
        with open(self.config, "w") as f:
            f.write(text + self.extra_config())

    def extra_config(self):
        return ""

    def started(self):
        return self.proc is not None

    def exit_status(self):
        return None if self.proc is None else self.proc.poll()

    def log_tail(self):
        return tail(self.out_path)

    def out_size(self):
        try:
            return os.path.getsize(self.out_path)
        except OSError:
            return 0

    @property
    def bootstrap(self):
        return "127.0.0.1:%d" % self.port

    @property
    def pid(self):
        return self.proc.pid

    def command(self):
        raise NotImplementedError

    def prepare(self):
        pass

    def launch(self):
        out = open(self.out_path, "wb")
        self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=self.workdir,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        out.close()

    def ready(self, brokers=1):
        """True once it answers Metadata listing at least `brokers` brokers; raises if the
        process has exited."""
        if self.proc.poll() is not None:
            raise RuntimeError("%s exited with %s during startup:\n%s"
                               % (self.label, self.proc.returncode, tail(self.out_path)))
        try:
            return metadata_broker_count(self.port) >= brokers
        except (OSError, struct.error):
            return False

    def start(self, timeout=120):
        self.prepare()
        self.launch()
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.ready():
                return time.monotonic() - t0
            time.sleep(0.1)
        raise RuntimeError("%s did not answer Metadata within %ss:\n%s"
                           % (self.label, timeout, tail(self.out_path)))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def cpu_seconds(self):
        return proc_cpu_seconds(self.pid)

    def peak_rss_mib(self):
        kib = proc_status_kib(self.pid, "VmHWM")
        return None if kib is None else kib / 1024

    def threads(self):
        return proc_status_kib(self.pid, "Threads")

    def stop(self, timeout=60):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log("%s did not stop within %ss; SIGKILL" % (self.label, timeout))
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()


def random_cluster_id():
    """What `kafka-storage.sh random-uuid` prints: a random UUID, URL-safe base64."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


class Kafka(Broker):
    label = "Kafka"

    def prepare(self):
        # A single node: `format --standalone` (a dynamic quorum of itself). A node of a
        # cluster: the cluster's id, and no --standalone / --initial-controllers, since
        # the quorum is static (controller.quorum.voters).
        cluster_id = self.cluster_id or random_cluster_id()
        standalone = ["--standalone"] if self.node_id is None else []
        fmt = subprocess.run(
            ["java", *STORAGE_JVM, "-cp", os.path.join(LIBS, "*"), "kafka.tools.StorageTool",
             "format", *standalone, "-t", cluster_id, "-c", self.config],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
        if fmt.returncode != 0:
            raise RuntimeError("kafka-storage format failed:\n" + fmt.stdout)
        os.makedirs(os.path.join(self.workdir, "logs"), exist_ok=True)

    def command(self):
        logs = os.path.join(self.workdir, "logs")
        return ["java", *KAFKA_HEAP_OPTS, *JVM_PERFORMANCE_OPTS,
                "-Xlog:gc*:file=%s:time,tags:filecount=10,filesize=100M"
                % os.path.join(logs, "kafkaServer-gc.log"),
                "-Dkafka.logs.dir=" + logs,
                "-Dlog4j2.configurationFile=" + os.path.join(HERE, "kafka-log4j2.properties"),
                "-cp", os.path.join(LIBS, "*"), "kafka.Kafka", self.config]


class Sluice(Broker):
    label = "Sluice"
    binary = None

    def command(self):
        return [self.binary, "server", "--config", self.config]

    def extra_config(self):
        # Sluice serves Prometheus metrics on metrics.listener (default 127.0.0.1:9404):
        # the nodes of a cluster would all want that port.
        return "" if self.node_id is None else "metrics.listener=127.0.0.1:0\n"


class Cluster:
    """`size` nodes of one implementation on this machine (process.roles=broker,controller,
    a static quorum of all of them), with the interface of one Broker: its CPU and peak
    RSS are the sums over the node processes."""

    def __init__(self, node_cls, workdir, size=3):
        self.label = node_cls.label
        self.workdir = workdir
        used = set()
        ports = []
        for _ in range(size):
            p = free_port(used)
            used.add(p)
            c = free_port(used)
            used.add(c)
            ports.append((p, c))
        voters = ",".join("%d@127.0.0.1:%d" % (i + 1, c) for i, (_, c) in enumerate(ports))
        cluster_id = random_cluster_id()
        self.nodes = [node_cls(os.path.join(workdir, "node%d" % (i + 1)), node_id=i + 1,
                               ports=ports[i], voters=voters, cluster_id=cluster_id)
                      for i in range(size)]
        for n in self.nodes:
            n.label = "%s node %d" % (self.label, n.node_id)
        # byte offsets in each node's output where a phase began: start-up before
        # "tests" (warm-up and measured tests), shut-down after "stop"
        self.marks = {}

    def mark(self, phase):
        self.marks[phase] = [n.out_size() for n in self.nodes]

    @property
    def bootstrap(self):
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def out_path(self):
        return self.nodes[0].out_path

    def start(self, timeout=180):
        for n in self.nodes:
            n.prepare()
        t0 = time.monotonic()
        for n in self.nodes:
            n.launch()
        # Ready when every node answers Metadata listing every node as a broker.
        while time.monotonic() - t0 < timeout:
            if all([n.ready(len(self.nodes)) for n in self.nodes]):
                return time.monotonic() - t0
            time.sleep(0.2)
        raise RuntimeError("%s: not every node listed %d brokers within %ss:\n%s"
                           % (self.label, len(self.nodes), timeout, self.log_tail()))

    def started(self):
        return any(n.started() for n in self.nodes)

    def alive(self):
        return all(n.alive() for n in self.nodes)

    def exit_status(self):
        dead = ["node %d: %s" % (n.node_id, n.exit_status()) for n in self.nodes
                if n.started() and n.exit_status() is not None]
        return "; ".join(dead) or None

    def log_tail(self):
        """The last lines of the nodes that exited (of every node if none did)."""
        started = [n for n in self.nodes if n.started()]
        dead = [n for n in started if n.exit_status() is not None]
        return "\n".join("-- %s:\n%s" % (n.label, tail(n.out_path)) for n in dead or started)

    def _sum(self, fn):
        vals = [fn(n) for n in self.nodes]
        return None if any(v is None for v in vals) else sum(vals)

    def cpu_seconds(self):
        return self._sum(lambda n: n.cpu_seconds())

    def peak_rss_mib(self):
        return self._sum(lambda n: n.peak_rss_mib())

    def threads(self):
        return self._sum(lambda n: n.threads())

    def per_node(self):
        return {str(n.node_id): {"cpu_s": n.cpu_seconds(), "peak_rss_mib": n.peak_rss_mib()}
                for n in self.nodes}

    def stop(self, timeout=60):
        if self.started():
            self.mark("stop")
        # SIGTERM to every node first (so none waits out the others' shut-down), then
        # Broker.stop each: wait, SIGKILL after the timeout.
        for n in self.nodes:
            if n.alive():
                try:
                    os.killpg(n.proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for n in self.nodes:
            n.stop(timeout)


# ---------------------------------------------------------------------------- load

class Failure(Exception):
    pass


PP_RE = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")


class Runner:
    """Runs the load generators against one broker and keeps their results."""

    def __init__(self, broker, all_brokers, results_dir, partitions, replication_factor=1,
                 topic_config=None):
        self.broker = broker
        self.all_brokers = all_brokers
        self.results_dir = results_dir
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.topic_config = topic_config or {}
        self.tests = {}      # name -> [per-round dict (metrics, or {"error": ...})]
        self.failed_start = None

    def create_topics(self, names, timeout=90):
        """Creates the topics; with RF > 1, waits (bounded) until every partition has a
        leader and a full ISR. Returns {topic: {leader node id: partitions it leads}}."""
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": self.broker.bootstrap, "log_level": 3})
        futures = admin.create_topics(
            [NewTopic(t, num_partitions=self.partitions,
                      replication_factor=self.replication_factor, config=self.topic_config)
             for t in names],
            operation_timeout=30, request_timeout=30)
        for f in futures.values():
            f.result(timeout=60)
        t0 = time.monotonic()
        while True:
            md = admin.list_topics(timeout=10)
            leaders, missing = {}, []
            for t in names:
                tm = md.topics.get(t)
                if tm is None or tm.error is not None or len(tm.partitions) != self.partitions:
                    missing.append(t)
                    continue
                for pm in tm.partitions.values():
                    if pm.leader < 0 or len(pm.isrs) < self.replication_factor:
                        missing.append("%s-%d" % (t, pm.id))
                    leaders.setdefault(t, {}).setdefault(pm.leader, 0)
                    leaders[t][pm.leader] += 1
            if not missing:
                return leaders
            if time.monotonic() - t0 > timeout:
                raise RuntimeError("after %ss, partitions without a leader or a full ISR: %s"
                                   % (timeout, ", ".join(missing[:10])))
            time.sleep(0.5)

    def log_end_records(self, topic):
        """Records in the topic's log: the sum over its partitions of high watermark minus
        log start (one offset per record: no transactions, no compaction)."""
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": "compare-kafka-unused",
                      "enable.auto.commit": False, "log_level": 3})
        try:
            md = c.list_topics(topic, timeout=30)
            total = 0
            for p in md.topics[topic].partitions:
                lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
                total += hi - lo
            return total
        finally:
            c.close()

    def checked_produce(self, topic, records, fn):
        """Runs a produce test, then compares the records in the topic's log with the
        records acknowledged. A difference is a failure of the test (the figures stay)."""
        res = fn()
        try:
            n = self.log_end_records(topic)
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            res["log_check_error"] = "%s: %s" % (type(e).__name__, e)
            return res
        res["log_records"] = n
        if n != records:
            res["log_mismatch"] = ("%d records acknowledged, the log of %s holds %d (high "
                                   "watermarks summed over its partitions)" % (records, topic, n))
        return res

    def _cpu(self):
        return {b.label: b.cpu_seconds() for b in self.all_brokers if b.started()}

    def run_tool(self, name, cmd, timeout):
        """Run one load generator; returns its stdout; records broker and machine CPU."""
        path = os.path.join(self.results_dir, "%s-%s.log" % (self.broker.label.lower(), name))
        if not self.broker.alive():
            raise Failure("%s is not running (exit status %s)"
                          % (self.broker.label, self.broker.exit_status()))
        b0, s0, c0, t0 = (self._cpu(), system_busy_seconds(), children_cpu_seconds(),
                          time.monotonic())
        with open(path, "w") as logf:
            logf.write("$ %s\n" % " ".join(cmd))
            logf.flush()
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, text=True, cwd=REPO,
                                 preexec_fn=_die_with_parent)
            try:
                out, _ = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
                logf.write(out)
                raise Failure("timed out after %ds; last output:\n%s"
                              % (timeout, "\n".join(out.splitlines()[-8:])))
            logf.write(out)
        wall = time.monotonic() - t0
        b1 = self._cpu()
        usage = {"wall_s": round(wall, 2),
                 "tool_cpu_s": round(children_cpu_seconds() - c0, 2),
                 "machine_cpu_s": round(system_busy_seconds() - s0, 2)}
        brokers_cpu = 0.0
        for label, v1 in b1.items():
            v0 = b0.get(label)
            if v0 is None or v1 is None:
                continue
            d = v1 - v0
            brokers_cpu += d
            if label == self.broker.label:
                usage["broker_cpu_s"] = round(d, 2)
            else:
                usage["idle_broker_cpu_s"] = round(d, 2)
        usage["other_cpu_s"] = round(usage["machine_cpu_s"] - brokers_cpu - usage["tool_cpu_s"], 2)
        hwm = self.broker.peak_rss_mib()
        if hwm is not None:
            usage["broker_peak_rss_mib"] = round(hwm, 1)
        self._usage = usage
        if not self.broker.alive():
            raise Failure("%s exited (status %s) during the test; its last output:\n%s"
                          % (self.broker.label, self.broker.exit_status(),
                             self.broker.log_tail()))
        if p.returncode != 0:
            raise Failure("exit status %d; last output:\n%s"
                          % (p.returncode, "\n".join(out.splitlines()[-8:])))
        return out

    def test(self, name, fn, record=True):
        log("%s: %s" % (self.broker.label, name))
        self._usage = {}
        try:
            res = fn()
            res.update(self._usage)
            log("%s: %s: %s" % (self.broker.label, name, json.dumps(res)))
        except Failure as e:
            res = {"error": str(e), **self._usage}
            log("%s: %s FAILED: %s" % (self.broker.label, name, e))
        if record:
            self.tests.setdefault(name, []).append(res)
        return res

    # -- the load generators

    def producer_perf(self, name, topic, records, size, acks, throughput=-1, timeout=300,
                      warmup_records=0):
        main = [PRODUCER_PERF]
        if warmup_records:
            main = [os.path.join(HERE, "WarmProducerPerformance.java"), str(warmup_records)]
        cmd = ["java", *TOOL_JVM, "-cp", os.path.join(LIBS, "*"), *main,
               "--topic", topic, "--num-records", str(records), "--record-size", str(size),
               "--throughput", str(throughput),
               "--producer-props", "bootstrap.servers=" + self.broker.bootstrap, "acks=" + acks]
        out = self.run_tool(name, cmd, timeout)
        m = None
        for line in out.splitlines():
            m = PP_RE.search(line) or m
        if not m:
            raise Failure("no summary line in the output:\n" + "\n".join(out.splitlines()[-8:]))
        sent = int(m.group(1))
        if sent != records:
            raise Failure("%d of %d records sent" % (sent, records))
        return {"records": sent, "records_per_sec": float(m.group(2)),
                "mb_per_sec": float(m.group(3)), "avg_ms": float(m.group(4)),
                "max_ms": float(m.group(5)), "p50_ms": int(m.group(6)),
                "p95_ms": int(m.group(7)), "p99_ms": int(m.group(8)),
                "p999_ms": int(m.group(9))}

    def assign_consumer(self, name, topic, records, timeout=300):
        cmd = ["java", *TOOL_JVM, "-cp", os.path.join(LIBS, "*"),
               os.path.join(HERE, "AssignConsumer.java"), self.broker.bootstrap, topic,
               str(records), "10000"]
        out = self.run_tool(name, cmd, timeout)
        for line in out.splitlines():
            if line.startswith("records="):
                kv = dict(x.split("=", 1) for x in line.split())
                return {"records": int(kv["records"]),
                        "records_per_sec": float(kv["records_per_sec"]),
                        "mb_per_sec": float(kv["mb_per_sec"]), "seconds": float(kv["seconds"])}
        raise Failure("no result line:\n" + "\n".join(out.splitlines()[-8:]))

    def rdkafka(self, name, args, timeout=300):
        cmd = [sys.executable, os.path.join(HERE, "rdkafka_bench.py"), *args]
        out = self.run_tool(name, cmd, timeout)
        for line in reversed(out.splitlines()):
            if line.startswith("{"):
                return json.loads(line)
        raise Failure("no result line:\n" + "\n".join(out.splitlines()[-8:]))

    def consumer_perf(self, name, topic, records, timeout=300):
        cmd = ["java", *TOOL_JVM, "-cp", os.path.join(LIBS, "*"), CONSUMER_PERF,
               "--bootstrap-server", self.broker.bootstrap, "--topic", topic,
               "--messages", str(records), "--timeout", "10000"]
        out = self.run_tool(name, cmd, timeout)
        lines = out.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("start.time"):
                for data in lines[i + 1:]:
                    cols = [c.strip() for c in data.split(",")]
                    if len(cols) == 10:
                        n = int(cols[4])
                        if n < records:
                            raise Failure("consumed %d of %d records:\n%s"
                                          % (n, records, "\n".join(lines[-6:])))
                        return {"records": n, "mb_per_sec": float(cols[3]),
                                "records_per_sec": float(cols[5]),
                                "rebalance_ms": int(cols[6]), "fetch_mb_per_sec": float(cols[8])}
        raise Failure("no result line:\n" + "\n".join(lines[-8:]))


def test_plan(cfg):
    """(name, function(runner, round)) for one round, in order."""
    r100, r1k = cfg["records_100b"], cfg["records_1k"]
    rate, secs = cfg["latency_rate"], cfg["latency_seconds"]

    def topic(base, rnd):
        return "%s-r%d" % (base, rnd + 1)

    def produce(size, acks, base, records):
        return lambda run, rnd, name: run.producer_perf(
            name, topic(base, rnd), records, size, acks)

    return [
        ("produce-100B-acks1", produce(100, "1", "p100-acks1", r100)),
        ("produce-100B-acksall", produce(100, "all", "p100-acksall", r100)),
        ("produce-1KiB-acks1", produce(1024, "1", "p1k-acks1", r1k)),
        ("produce-1KiB-acksall", produce(1024, "all", "p1k-acksall", r1k)),
        ("produce-1KiB-acksall-rdkafka", lambda run, rnd, name: run.rdkafka(
            name, ["produce", run.broker.bootstrap, topic("rdk-1k-acksall", rnd),
                   str(cfg["rdkafka_records"]), "1024", "all"])),
        ("consume-1KiB-java", lambda run, rnd, name: run.assign_consumer(
            name, topic("p1k-acks1", rnd), r1k)),
        ("consume-1KiB-rdkafka", lambda run, rnd, name: run.rdkafka(
            name, ["consume", run.broker.bootstrap, topic("p1k-acks1", rnd), str(r1k)])),
        ("consume-1KiB-perftest", lambda run, rnd, name: run.consumer_perf(
            name, topic("p1k-acks1", rnd), r1k)),
        ("latency-1KiB-acksall", lambda run, rnd, name: run.producer_perf(
            name, topic("latency", rnd), rate * secs, 1024, "all", throughput=rate,
            timeout=secs + 300, warmup_records=rate * cfg["latency_warmup_seconds"])),
    ]


TOPIC_BASES = ["p100-acks1", "p100-acksall", "p1k-acks1", "p1k-acksall", "rdk-1k-acksall",
               "latency"]


def cluster_test_plan(cfg):
    """--cluster: (name, function(runner, round, tag)) for one round, in order. Every
    topic has PARTITIONS partitions, RF=3, min.insync.replicas=2."""
    r1k = cfg["records_1k"]
    rdk = cfg["rdkafka_records"]
    rate, secs = cfg["latency_rate"], cfg["latency_seconds"]

    def topic(base, rnd):
        return "%s-r%d" % (base, rnd + 1)

    return [
        ("produce-1KiB-acksall", lambda run, rnd, name: run.checked_produce(
            topic("c-p1k-acksall", rnd), r1k, lambda: run.producer_perf(
                name, topic("c-p1k-acksall", rnd), r1k, 1024, "all"))),
        ("produce-1KiB-acksall-rdkafka", lambda run, rnd, name: run.checked_produce(
            topic("c-rdk-1k-acksall", rnd), rdk, lambda: run.rdkafka(
                name, ["produce", run.broker.bootstrap, topic("c-rdk-1k-acksall", rnd),
                       str(rdk), "1024", "all"]))),
        ("consume-1KiB-java", lambda run, rnd, name: run.assign_consumer(
            name, topic("c-p1k-acksall", rnd), r1k)),
        # WarmProducerPerformance's warm-up records go to the same topic
        ("latency-1KiB-acksall", lambda run, rnd, name: run.checked_produce(
            topic("c-latency", rnd), rate * (secs + cfg["latency_warmup_seconds"]),
            lambda: run.producer_perf(
                name, topic("c-latency", rnd), rate * secs, 1024, "all", throughput=rate,
                timeout=secs + 300, warmup_records=rate * cfg["latency_warmup_seconds"]))),
    ]


CLUSTER_TOPIC_BASES = ["c-p1k-acksall", "c-rdk-1k-acksall", "c-latency"]


def run_all(brokers, cfg, results_dir):
    """Start every broker, warm each up, then run the plan round by round, alternating
    the brokers test by test (and which goes first). Returns results per broker key."""
    keys = list(brokers)
    allb = list(brokers.values())
    cluster = cfg.get("cluster")
    if cluster:
        plan, bases = cluster_test_plan(cfg), CLUSTER_TOPIC_BASES
        runners = {k: Runner(b, allb, results_dir, cfg["partitions"], replication_factor=3,
                             topic_config={"min.insync.replicas": "2"})
                   for k, b in brokers.items()}
    else:
        plan, bases = test_plan(cfg), TOPIC_BASES
        runners = {k: Runner(b, allb, results_dir, cfg["partitions"]) for k, b in brokers.items()}
    results = {k: {"label": b.label} for k, b in brokers.items()}
    live = []
    for k in keys:
        b, res = brokers[k], results[k]
        try:
            log("starting %s (work dir %s)" % (b.label, b.workdir))
            res["startup_s"] = round(b.start(), 2)
            log("%s answers Metadata after %.1fs" % (b.label, res["startup_s"]))
            leaders = runners[k].create_topics(
                ["warmup"] + ["%s-r%d" % (t, r + 1) for t in bases for r in range(cfg["rounds"])])
            if cluster:
                # partitions led per node id, over every topic of the run
                per_node = {}
                for by_node in leaders.values():
                    for node, n in by_node.items():
                        per_node[str(node)] = per_node.get(str(node), 0) + n
                res["leaders"] = per_node
                log("%s: partitions led per node: %s" % (b.label, json.dumps(per_node)))
            live.append(k)
        except Exception as e:  # startup, storage format, topic creation
            res["error"] = "%s: %s" % (type(e).__name__, e)
            log("%s FAILED: %s" % (b.label, res["error"]))
            if b.started() and not b.alive():
                res["log_tail"] = b.log_tail()
    for k in live:
        if cluster:
            brokers[k].mark("tests")
    # Not reported: the broker's JIT warm-up and first segment files, for both.
    for k in live:
        w = runners[k].test("warmup", lambda: runners[k].producer_perf(
            "warmup", "warmup", cfg["warmup_records"], 1024, "all"), record=False)
        if "error" in w:
            results[k]["warmup_error"] = w["error"]
        results[k]["cpu_setup_s"] = brokers[k].cpu_seconds()

    t_start = time.monotonic()
    for rnd in range(cfg["rounds"]):
        for i, (name, fn) in enumerate(plan):
            order = live if (i + rnd) % 2 == 0 else live[::-1]
            for k in order:
                run = runners[k]
                tag = name if cfg["rounds"] == 1 else "%s-r%d" % (name, rnd + 1)
                run.test(name, lambda: fn(run, rnd, tag))
    results["tests_wall_s"] = round(time.monotonic() - t_start, 1)

    for k in keys:
        b, res = brokers[k], results[k]
        res["tests"] = runners[k].tests
        if b.alive():
            res["cpu_total_s"] = round(b.cpu_seconds(), 2)
            res["peak_rss_mib"] = round(b.peak_rss_mib(), 1)
            res["threads"] = b.threads()
            if cluster:
                res["nodes"] = b.per_node()
        elif b.started():
            res["exit"] = b.exit_status()
            res["log_tail"] = b.log_tail()
        # the broker's CPU over its own measured tests (not while the other one ran)
        cpu = [t.get("broker_cpu_s") for runs in res["tests"].values() for t in runs]
        if cpu and all(c is not None for c in cpu):
            res["cpu_tests_s"] = round(sum(cpu), 1)
        for key in ("tool_cpu_s", "other_cpu_s", "machine_cpu_s", "wall_s",
                    "idle_broker_cpu_s"):
            vals = [t.get(key) for runs in res["tests"].values() for t in runs]
            if vals and all(v is not None for v in vals):
                res["sum_" + key] = round(sum(vals), 1)
    return results


def stop_all(brokers, results_dir):
    for b in brokers.values():
        if isinstance(b, Cluster):
            stop_cluster(b, results_dir)
            continue
        b.stop()
        for name in ("kafka.out", "sluice.out", "server.properties"):
            p = os.path.join(b.workdir, name)
            if os.path.exists(p):
                shutil.copy(p, os.path.join(results_dir, "%s-%s" % (b.label.lower(), name)))
        logs = os.path.join(b.workdir, "logs")
        if os.path.isdir(logs):
            shutil.copytree(logs, os.path.join(results_dir, "kafka-logs"), dirs_exist_ok=True)
        shutil.rmtree(b.workdir, ignore_errors=True)


def stop_cluster(c, results_dir):
    c.stop()
    for n in c.nodes:
        prefix = os.path.join(results_dir, "%s-node%d-" % (c.label.lower(), n.node_id))
        if os.path.exists(n.out_path):
            shutil.copy(n.out_path, prefix + "out.log")
        shutil.copy(n.config, prefix + "server.properties")
        logs = os.path.join(n.workdir, "logs")
        if os.path.isdir(logs):
            shutil.copytree(logs, prefix + "logs", dirs_exist_ok=True)
    shutil.rmtree(c.workdir, ignore_errors=True)


LOG_PROBLEM_RE = re.compile(r"\b(WARN|ERROR|FATAL|panicked)\b")
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
PHASES = ("start-up", "tests", "shut-down")


def node_log_problems(results_dir, cluster):
    """{node id: {phase: [WARN/ERROR/panic lines]}} from a cluster's node outputs (copied
    into results_dir), split at the byte offsets of Cluster.mark."""
    out = {}
    for i, n in enumerate(cluster.nodes):
        path = os.path.join(results_dir, "%s-node%d-out.log" % (cluster.label.lower(), n.node_id))
        if not os.path.exists(path):
            continue
        data = open(path, "rb").read()
        cuts = [cluster.marks.get("tests", [len(data)] * 3)[i],
                cluster.marks.get("stop", [len(data)] * 3)[i]]
        parts = (data[:cuts[0]], data[cuts[0]:cuts[1]], data[cuts[1]:])
        out[n.node_id] = {
            phase: [l for l in (ANSI_RE.sub("", x) for x in
                                part.decode("utf-8", "replace").splitlines())
                    if LOG_PROBLEM_RE.search(l)]
            for phase, part in zip(PHASES, parts)}
    return out


# ---------------------------------------------------------------------------- table

def fmt_num(v, digits=None):
    if v is None:
        return "—"
    if digits is None:
        digits = 0 if abs(v) >= 1000 else (1 if abs(v) >= 10 else 2)
    return "{:,.{d}f}".format(v, d=digits)


def median(vals):
    vals = sorted(vals)
    n = len(vals)
    if n == 0:
        return None
    return vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2


def build_table(cfg, results):
    k, s = results.get("kafka"), results.get("sluice")
    rows = []

    def metric(res, test, key):
        """(median over the rounds that passed, error text if none passed)."""
        if not res:
            return None, None
        runs = res.get("tests", {}).get(test)
        if not runs:
            return None, ("failed" if res.get("error") else None)
        ok = [t[key] for t in runs if "error" not in t and t.get(key) is not None]
        if not ok:
            return None, "failed"
        v = median(ok)
        if len(ok) < len(runs):
            return v, fmt_num(v) + " (%d of %d rounds failed)" % (len(runs) - len(ok), len(runs))
        return v, None

    def row(label, test, key, goal=None, digits=None):
        kv, ke = metric(k, test, key)
        sv, se = metric(s, test, key)
        add(label, kv, ke, sv, se, goal, digits)

    def add(label, kv, ke, sv, se, goal, digits=None):
        ratio = None
        if kv and sv:
            ratio = sv / kv
        verdict = ""
        if goal is not None:
            op, target = goal
            verdict = "%s %s×" % ("≥" if op == ">=" else "≤", target)
            if ratio is not None:
                ok = ratio >= target if op == ">=" else ratio <= target
                verdict += " — " + ("met" if ok else "**not met**")
        rows.append("| %s | %s | %s | %s | %s |" % (
            label, ke or fmt_num(kv, digits), se or fmt_num(sv, digits),
            "%.2f×" % ratio if ratio is not None else "—", verdict))

    up = (">=", 1.5)
    rows.append("| metric | Kafka %s | Sluice | Sluice ÷ Kafka | goal |" % cfg["kafka_version"])
    rows.append("|---|---:|---:|---:|---|")
    for size, sz in (("100 B", "100B"), ("1 KiB", "1KiB")):
        for acks, ak in (("1", "acks1"), ("all", "acksall")):
            test = "produce-%s-%s" % (sz, ak)
            row("produce %s, acks=%s: records/s" % (size, acks), test, "records_per_sec", up)
            row("produce %s, acks=%s: MB/s" % (size, acks), test, "mb_per_sec", up, 1)
    row("produce 1 KiB, acks=all, librdkafka: MB/s", "produce-1KiB-acksall-rdkafka",
        "mb_per_sec", up, 1)
    row("consume 1 KiB, Java consumer (assign): MB/s", "consume-1KiB-java", "mb_per_sec", up, 1)
    row("consume 1 KiB, librdkafka (assign): MB/s", "consume-1KiB-rdkafka", "mb_per_sec", up, 1)
    row("consume 1 KiB, kafka-consumer-perf-test (group): MB/s", "consume-1KiB-perftest",
        "mb_per_sec", up, 1)
    lat = "produce latency at %s rec/s of 1 KiB, acks=all" % fmt_num(cfg["latency_rate"], 0)
    row(lat + ": p50 ms", "latency-1KiB-acksall", "p50_ms", None, 0)
    row(lat + ": p99 ms", "latency-1KiB-acksall", "p99_ms", ("<=", 0.5), 0)
    row(lat + ": p99.9 ms", "latency-1KiB-acksall", "p999_ms", None, 0)

    def whole(res, key):
        if not res:
            return None, None
        return res.get(key), (None if res.get(key) is not None else "failed")

    add("broker peak RSS (VmHWM), MiB", *whole(k, "peak_rss_mib"), *whole(s, "peak_rss_mib"),
        ("<=", 0.2), 1)
    add("broker CPU s over its measured tests", *whole(k, "cpu_tests_s"),
        *whole(s, "cpu_tests_s"), None, 1)
    add("broker CPU s for start-up + warm-up", *whole(k, "cpu_setup_s"),
        *whole(s, "cpu_setup_s"), None, 1)
    return "\n".join(rows)


def build_cluster_table(cfg, results):
    """--cluster: the same layout as build_table, for the cluster tests."""
    k, s = results.get("kafka"), results.get("sluice")
    rows = []

    def metric(res, test, key):
        if not res:
            return None, None
        runs = res.get("tests", {}).get(test)
        if not runs:
            return None, ("failed" if res.get("error") else None)
        ok = [t[key] for t in runs if "error" not in t and t.get(key) is not None]
        if not ok:
            return None, "failed"
        v = median(ok)
        if len(ok) < len(runs):
            return v, fmt_num(v) + " (%d of %d rounds failed)" % (len(runs) - len(ok), len(runs))
        return v, None

    def add(label, kv, ke, sv, se, goal=None, digits=None):
        ratio = sv / kv if kv and sv else None
        verdict = ""
        if goal is not None:
            op, target = goal
            verdict = "%s %s×" % ("≥" if op == ">=" else "≤", target)
            if ratio is not None:
                ok = ratio >= target if op == ">=" else ratio <= target
                verdict += " — " + ("met" if ok else "**not met**")
        rows.append("| %s | %s | %s | %s | %s |" % (
            label, ke or fmt_num(kv, digits), se or fmt_num(sv, digits),
            "%.2f×" % ratio if ratio is not None else "—", verdict))

    def row(label, test, key, goal=None, digits=None):
        add(label, *metric(k, test, key), *metric(s, test, key), goal, digits)

    def whole(res, key):
        if not res:
            return None, None
        return res.get(key), (None if res.get(key) is not None else "failed")

    up, down = (">=", 1.5), ("<=", 0.5)
    rows.append("| metric (3 nodes each, RF=3, min.insync.replicas=2, %d partitions) | "
                "Kafka %s | Sluice | Sluice ÷ Kafka | single-node goal |"
                % (cfg["partitions"], cfg["kafka_version"]))
    rows.append("|---|---:|---:|---:|---|")
    pp = "produce 1 KiB, acks=all, kafka-producer-perf-test"
    row(pp + ": records/s", "produce-1KiB-acksall", "records_per_sec", up)
    row(pp + ": MB/s", "produce-1KiB-acksall", "mb_per_sec", up, 1)
    row(pp + ": p50 ms", "produce-1KiB-acksall", "p50_ms", None, 0)
    row(pp + ": p99 ms", "produce-1KiB-acksall", "p99_ms", None, 0)
    rk = "produce 1 KiB, acks=all, librdkafka"
    row(rk + ": records/s", "produce-1KiB-acksall-rdkafka", "records_per_sec", up)
    row(rk + ": MB/s", "produce-1KiB-acksall-rdkafka", "mb_per_sec", up, 1)
    row("consume the perf-test topic, Java consumer (assign): MB/s", "consume-1KiB-java",
        "mb_per_sec", up, 1)
    lat = "produce latency at %s rec/s of 1 KiB, acks=all" % fmt_num(cfg["latency_rate"], 0)
    row(lat + ": p50 ms", "latency-1KiB-acksall", "p50_ms", None, 0)
    row(lat + ": p99 ms", "latency-1KiB-acksall", "p99_ms", down, 0)
    row(lat + ": p99.9 ms", "latency-1KiB-acksall", "p999_ms", None, 0)
    add("cluster peak RSS (sum of the 3 nodes' VmHWM), MiB", *whole(k, "peak_rss_mib"),
        *whole(s, "peak_rss_mib"), ("<=", 0.2), 1)
    add("cluster CPU s over its measured tests (3 nodes)", *whole(k, "cpu_tests_s"),
        *whole(s, "cpu_tests_s"), None, 1)
    add("cluster CPU s for start-up + warm-up (3 nodes)", *whole(k, "cpu_setup_s"),
        *whole(s, "cpu_setup_s"), None, 1)
    return "\n".join(rows)


def build_details(cfg, results):
    lines = ["| test | broker | wall s | broker CPU s (cores) | broker peak RSS so far, MiB | "
             "load generator CPU s | idle other broker CPU s | other processes' CPU s |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for key in ("kafka", "sluice"):
        res = results.get(key)
        if not res:
            continue
        for name, runs in res.get("tests", {}).items():
            for rnd, t in enumerate(runs):
                wall = t.get("wall_s")
                b = t.get("broker_cpu_s")
                cores = " (%.2f)" % (b / wall) if b is not None and wall else ""
                tag = name if len(runs) == 1 else "%s, round %d" % (name, rnd + 1)
                lines.append("| %s%s | %s | %s | %s%s | %s | %s | %s | %s |" % (
                    tag, " (failed)" if "error" in t else "", res["label"], fmt_num(wall, 1),
                    fmt_num(b, 1), cores, fmt_num(t.get("broker_peak_rss_mib"), 1),
                    fmt_num(t.get("tool_cpu_s"), 1),
                    fmt_num(t.get("idle_broker_cpu_s"), 1), fmt_num(t.get("other_cpu_s"), 1)))
    return "\n".join(lines)


def build_failures(results):
    out = []
    for key in ("kafka", "sluice"):
        res = results.get(key)
        if not res:
            continue
        for what in ("error", "warmup_error"):
            if res.get(what):
                out.append("- %s%s: %s" % (res["label"], ", warm-up" if what != "error" else "",
                                           res[what].strip().replace("\n", "\n    ")))
        seen = set()
        for name, runs in res.get("tests", {}).items():
            for rnd, t in enumerate(runs):
                if "error" in t:
                    msg = t["error"].strip()
                    if (name, msg) in seen:
                        continue
                    seen.add((name, msg))
                    out.append("- %s, %s%s: %s" % (
                        res["label"], name, "" if len(runs) == 1 else " (round %d)" % (rnd + 1),
                        msg.replace("\n", "\n    ")))
        for name, runs in res.get("tests", {}).items():
            for rnd, t in enumerate(runs):
                if t.get("log_mismatch"):
                    out.append("- %s, %s%s: %s" % (
                        res["label"], name, "" if len(runs) == 1 else " (round %d)" % (rnd + 1),
                        t["log_mismatch"]))
        if res.get("exit") is not None:
            out.append("- %s exited with status %s before the end; its last output:\n    %s"
                       % (res["label"], res["exit"],
                          res.get("log_tail", "").strip().replace("\n", "\n    ")))
    return "\n".join(out)


# ---------------------------------------------------------------------------- main

def cluster_conditions(args, cfg, results, brokers, started, cpu_model, load_start, load_end,
                       results_dir):
    rounds = cfg["rounds"]
    out = [
        "- command: `%s`" % args.command,
        "- started %s, %d s in all (measured tests %s s); %d CPUs (%s), Linux %s; "
        "load average at the start %s, at the end %s"
        % (started.strftime("%Y-%m-%d %H:%M"), (datetime.datetime.now() - started).seconds,
           fmt_num(results.get("tests_wall_s"), 0), os.cpu_count(), cpu_model,
           platform.release(), " ".join(load_start), " ".join(load_end)),
        "- %s; per round: %s × 1 KiB (kafka-producer-perf-test, then the Java consumer reads "
        "that topic), %s × 1 KiB (librdkafka), latency run %s rec/s for %s s (after %s s of "
        "the same in the same JVM); every topic %d partitions, RF=3, min.insync.replicas=2; "
        "warm-up %s × 1 KiB per cluster (not reported)"
        % ("1 round" if rounds == 1 else
           "%d rounds, the median of each figure (of 2: their mean)" % rounds
           if rounds == 2 else "%d rounds, the median of each figure" % rounds,
           fmt_num(cfg["records_1k"], 0), fmt_num(cfg["rdkafka_records"], 0),
           fmt_num(cfg["latency_rate"], 0), cfg["latency_seconds"],
           cfg["latency_warmup_seconds"], cfg["partitions"], fmt_num(cfg["warmup_records"], 0)),
    ]
    for key in ("kafka", "sluice"):
        r = results.get(key)
        if not r:
            continue
        nodes = r.get("nodes") or {}
        out.append("- %s: partitions led per node (all topics) %s; per node at the end: %s"
                   % (r["label"], json.dumps(r.get("leaders")), "; ".join(
                       "node %s %s MiB peak RSS, %s CPU s" % (
                           i, fmt_num(v.get("peak_rss_mib"), 1), fmt_num(v.get("cpu_s"), 1))
                       for i, v in sorted(nodes.items()))))
        if key not in brokers:
            continue
        problems = node_log_problems(results_dir, brokers[key])
        if problems:
            out.append("- %s node logs, WARN/ERROR/panic lines (start-up / warm-up and tests / "
                       "shut-down): %s" % (r["label"], ", ".join(
                           "node %d: %s" % (i, " / ".join(str(len(ph[p])) for p in PHASES))
                           for i, ph in sorted(problems.items()))))
            if key == "sluice":
                # the ones under load, in full (up to 20 per node)
                for i, ph in sorted(problems.items()):
                    lines = ph["tests"]
                    for line in lines[:20]:
                        out.append("    - node %d: `%s`" % (i, line[:400].replace("`", "'")))
                    if len(lines) > 20:
                        out.append("    - node %d: ... %d more" % (i, len(lines) - 20))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run of about 2 minutes")
    ap.add_argument("--only", choices=("kafka", "sluice"), help="run one broker only")
    ap.add_argument("--cluster", action="store_true",
                    help="3-node clusters, RF=3, acks=all (a separate set of tests)")
    ap.add_argument("--sluice-bin", required=True)
    ap.add_argument("--out", help="also write the report here")
    ap.add_argument("--command", default="bench/compare-kafka",
                    help="the command line to print in the report")
    args = ap.parse_args()
    _sigterm_to_exit()

    q = args.quick
    c = args.cluster
    cfg = {
        "rounds": env_int("ROUNDS", 1 if q else 3),
        "records_100b": env_int("RECORDS_100B", 500_000 if q else 3_000_000),
        "records_1k": env_int("RECORDS_1K", 100_000 if q else 600_000),
        "rdkafka_records": env_int("RDKAFKA_RECORDS", 100_000 if q else 600_000),
        "warmup_records": env_int("WARMUP_RECORDS", 50_000 if q else 300_000),
        "latency_rate": env_int("LATENCY_RATE", 5_000 if c else 20_000),
        "latency_seconds": env_int("LATENCY_SECONDS", 10 if q else 20),
        "latency_warmup_seconds": env_int("LATENCY_WARMUP_SECONDS", 3 if q else 5),
        "partitions": env_int("PARTITIONS", 6 if c else 1),
        "quick": q,
    }
    try:
        cfg["kafka_version"] = open(os.path.join(LIBS, "VERSION")).read().strip()
    except OSError:
        cfg["kafka_version"] = "?"
    if c:
        cfg["cluster"] = True
    Sluice.binary = os.path.abspath(args.sluice_bin)
    load_at_start = open("/proc/loadavg").read().split()[:3]

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = os.environ.get("BENCH_DIR") or os.path.join(REPO, "target", "compare-kafka")
    results_dir = os.path.join(base, stamp)
    os.makedirs(results_dir, exist_ok=True)
    work = os.path.join(base, "work-" + stamp)   # data dirs: same disk, removed at the end
    log("config %s; results in %s" % (json.dumps(cfg), results_dir))

    started = datetime.datetime.now()
    brokers = {}
    try:
        for key, cls in (("kafka", Kafka), ("sluice", Sluice)):
            if not args.only or args.only == key:
                path = os.path.join(work, key)
                brokers[key] = Cluster(cls, path) if c else cls(path)
        results = run_all(brokers, cfg, results_dir)
    finally:
        stop_all(brokers, results_dir)
        shutil.rmtree(work, ignore_errors=True)

    table = build_cluster_table(cfg, results) if c else build_table(cfg, results)
    details = build_details(cfg, results)
    failures = build_failures(results)
    cpu_model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = open("/proc/loadavg").read().split()[:3]
    rounds = cfg["rounds"]
    if c:
        conditions = cluster_conditions(args, cfg, results, brokers, started, cpu_model,
                                        load_at_start,
                                        load, results_dir)
    else:
        conditions = [
        "- command: `%s`" % args.command,
        "- started %s, %d s in all (measured tests %s s); %d CPUs (%s), Linux %s; "
        "load average at the end %s"
        % (started.strftime("%Y-%m-%d %H:%M"), (datetime.datetime.now() - started).seconds,
           fmt_num(results.get("tests_wall_s"), 0), os.cpu_count(), cpu_model,
           platform.release(), " ".join(load)),
        "- %s; per round: %s × 100 B and %s × 1 KiB per produce run, %s × 1 KiB for "
        "librdkafka, latency run %s rec/s for %s s (after %s s of the same in the same JVM); "
        "%d partition(s); broker warm-up %s × 1 KiB (not reported)"
        % ("1 round" if rounds == 1 else
           "%d rounds, the median of each figure (of 2: their mean)" % rounds
           if rounds == 2 else "%d rounds, the median of each figure" % rounds,
           fmt_num(cfg["records_100b"], 0), fmt_num(cfg["records_1k"], 0),
           fmt_num(cfg["rdkafka_records"], 0), fmt_num(cfg["latency_rate"], 0),
           cfg["latency_seconds"], cfg["latency_warmup_seconds"], cfg["partitions"],
           fmt_num(cfg["warmup_records"], 0)),
        ]
    for key in ("kafka", "sluice"):
        r = results.get(key)
        if r and "sum_wall_s" in r:
            conditions.append(
                "- %s: answered Metadata %.1f s after start; during its tests (%.0f s) the "
                "machine used %.0f CPU s = broker %s + load generators %s + idle other broker "
                "%s + other processes %s"
                % (r["label"], r.get("startup_s", 0), r["sum_wall_s"],
                   r.get("sum_machine_cpu_s", 0), fmt_num(r.get("cpu_tests_s"), 1),
                   fmt_num(r.get("sum_tool_cpu_s"), 1),
                   fmt_num(r.get("sum_idle_broker_cpu_s", 0.0), 1),
                   fmt_num(r.get("sum_other_cpu_s"), 1)))
    report = "\n".join([
        "## Kafka %s vs Sluice%s (%s)" % (cfg["kafka_version"],
                                           ", 3-node clusters" if c else "",
                                           "quick" if q else "full"), "",
        table, "", *conditions, "",
        "MB/s = 2^20 bytes of record keys and values per second, as Kafka's perf tools print "
        "it; latency percentiles are whole milliseconds (kafka-producer-perf-test).", "",
        "Per test:", "", details, ""])
    if failures:
        report += "\nFailures:\n\n" + failures + "\n"
    print(report, flush=True)
    with open(os.path.join(results_dir, "report.md"), "w") as f:
        f.write(report)
    with open(os.path.join(results_dir, "results.json"), "w") as f:
        json.dump({"config": cfg, "results": results}, f, indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)
    latest = os.path.join(base, "latest.md")
    with open(latest, "w") as f:
        f.write(report)
    log("report written to %s (and %s); logs in %s"
        % (os.path.join(results_dir, "report.md"), latest, results_dir))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
