"""Shared by compat/client's checks: names, topics, the Rust example, librdkafka readers.

The native producer is driven through crates/sluice-client/examples/client_compat.rs
(`client_compat produce|stream|txn ...`); everything that judges what it wrote is a
third-party client: confluent-kafka (librdkafka), Kafka's Java producer, Kafka's tools.
"""

import os
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "compat", "clients"))
sys.dont_write_bytecode = True

from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from checklib import Checks, CheckFailed, expect, main_guard  # noqa: E402,F401

T = 10  # seconds: the bound on one client call
RUN_ID = uuid.uuid4().hex[:6]
JVM = ["java", "-Xms64m", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
       "-XX:-UsePerfData", "-Dlog4j2.configurationFile=%s/compat/kafka/log4j2.properties" % ROOT]


def name(prefix):
    return "%s-%s" % (prefix, RUN_ID)


def example():
    """The client_compat binary (CLIENT_COMPAT overrides target/debug/examples/...)."""
    return os.environ.get("CLIENT_COMPAT",
                          os.path.join(ROOT, "target", "debug", "examples", "client_compat"))


def run_example(args, timeout=60):
    """Runs client_compat; returns its stdout lines; raises CheckFailed on failure."""
    run = subprocess.run([example()] + list(args), capture_output=True, text=True,
                         timeout=timeout, stdin=subprocess.DEVNULL)
    if run.returncode != 0:
        raise CheckFailed("client_compat %s: exit %d: %s" % (
            args[0], run.returncode, (run.stderr + run.stdout)[-600:]))
    return run.stdout.splitlines()


def admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": T * 1000,
                        "log_level": 3})


def create_topics(bootstrap, topics):
    """topics: {name: partitions}; waits until every partition has a leader."""
    a = admin(bootstrap)
    fs = a.create_topics([NewTopic(t, n, 1) for t, n in topics.items()],
                         operation_timeout=T, request_timeout=T)
    for f in fs.values():
        f.result(timeout=T + 5)
    deadline = time.monotonic() + T
    for t, n in topics.items():
        while True:
            md = a.list_topics(topic=t, timeout=T).topics.get(t)
            if md is not None and md.error is None and len(md.partitions) == n and all(
                    p.leader >= 0 for p in md.partitions.values()):
                break
            if time.monotonic() > deadline:
                raise CheckFailed("topic %s: metadata not ready" % t)
            time.sleep(0.1)


def read_all(bootstrap, topics, want, isolation="read_uncommitted", linger=0.7, timeout=20):
    """Every record of {topic: partitions} from the beginning, as confluent-kafka Messages
    in (topic, partition, offset) order: polls until `want` arrived (or timeout), then
    `linger` s more for extra ones."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": name("reader"),
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "enable.partition.eof": False, "fetch.wait.max.ms": 100,
                  "check.crcs": True, "socket.timeout.ms": T * 1000, "log_level": 3})
    try:
        c.assign([TopicPartition(t, p, OFFSET_BEGINNING)
                  for t, n in topics.items() for p in range(n)])
        out = []
        deadline = time.monotonic() + timeout
        until = None
        while True:
            now = time.monotonic()
            if until is None and len(out) >= want:
                until = now + linger
            if (until is not None and now > until) or now > deadline:
                break
            for m in c.consume(500, 0.1):
                if m.error():
                    raise CheckFailed("%s consumer: %s" % (isolation, m.error()))
                out.append(m)
        out.sort(key=lambda m: (m.topic(), m.partition(), m.offset()))
        return out
    finally:
        c.close()


def rdkafka_partitions(bootstrap, topic, keys):
    """The partition librdkafka's murmur2_random partitioner (Java's) picks for each key,
    read from the delivery reports of producing them to `topic`."""
    p = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
                  "linger.ms": 5, "log_level": 3})
    got = {}
    errors = []

    def cb(err, msg, i):
        if err is not None:
            errors.append("key %d: %s" % (i, err))
        else:
            got[i] = msg.partition()

    for i, k in enumerate(keys):
        p.produce(topic, key=k, value=str(i).encode(),
                  on_delivery=lambda err, msg, i=i: cb(err, msg, i))
    if p.flush(T) or errors:
        raise CheckFailed("librdkafka producer: %s" % (errors[:3] or "not delivered"))
    return [got[i] for i in range(len(keys))]


def java_partitions(bootstrap, topic, keys, libs, workdir):
    """The same with Kafka's Java producer (JavaPartitions.java, kafka-clients)."""
    path = os.path.join(workdir, "java-keys-%s.hex" % topic)
    with open(path, "w") as f:
        for k in keys:
            f.write(k.hex() + "\n")
    run = subprocess.run(JVM + ["-cp", os.path.join(libs, "*"),
                                os.path.join(HERE, "JavaPartitions.java"), bootstrap, topic, path],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    if run.returncode != 0:
        raise CheckFailed("JavaPartitions: exit %d: %s" % (
            run.returncode, "\n".join(l for l in (run.stderr + run.stdout).splitlines()
                                      if not l.lstrip().startswith("at "))[-600:]))
    parts = {}
    for line in run.stdout.splitlines():
        i, p = line.split("\t")
        parts[int(i)] = int(p)
    expect(len(parts), len(keys), "Java producer: delivered records")
    return [parts[i] for i in range(len(keys))]


def hexfield(b):
    return "-" if b is None else b.hex()


def write_records(path, records):
    """records: [(key, value, [(name, value)], timestamp)] in client_compat's format."""
    with open(path, "w") as f:
        for key, value, headers, ts in records:
            h = ",".join("%s:%s" % (n.hex(), hexfield(v)) for n, v in headers)
            f.write("%s\t%s\t%s\t%s\n" % (hexfield(key), hexfield(value), h,
                                          "-" if ts is None else ts))


def rust_produce(bootstrap, topic, records, workdir, settings=()):
    """Sends records with client_compat produce; returns [(partition, offset)] per record."""
    path = os.path.join(workdir, "records-%s.tsv" % topic)
    write_records(path, records)
    args = ["produce", bootstrap, topic, path]
    for s in settings:
        args += ["-X", s]
    placed = {}
    for line in run_example(args):
        i, p, o = line.split("\t")
        placed[int(i)] = (int(p), int(o))
    expect(len(placed), len(records), "client_compat produce: acknowledged records")
    return [placed[i] for i in range(len(records))]


def tool(bootstrap, libs, main_class, *args, timeout=30):
    """A Kafka tool's stdout (org.apache.kafka.tools.X ...)."""
    cmd = JVM + ["-cp", os.path.join(libs, "*"), main_class, "--bootstrap-server",
                 bootstrap] + list(args)
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                         stdin=subprocess.DEVNULL)
    if run.returncode != 0:
        raise CheckFailed("%s %s: exit %d: %s" % (main_class.rsplit(".", 1)[-1], " ".join(args),
                                                   run.returncode, (run.stderr or run.stdout)[-500:]))
    return run.stdout


def table(text):
    """A tool's tab-separated table as dicts (header row first)."""
    rows = [[c.strip() for c in line.split("\t")] for line in text.splitlines() if line.strip()]
    if not rows:
        raise CheckFailed("empty output")
    return [dict(zip(rows[0], r)) for r in rows[1:]]
