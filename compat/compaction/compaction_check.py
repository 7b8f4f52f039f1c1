#!/usr/bin/env python3
"""Log compaction, retention and topic configs as real clients see them.

    compaction_check.py BOOTSTRAP LIBS_DIR (kafka|sluice) [SLUICE_BINARY]

librdkafka (confluent-kafka) produces and consumes; Kafka 4.1's own kafka-configs.sh
(kafka.admin.ConfigCommand from LIBS_DIR) alters and describes configs; against Sluice
also Sluice's CLI (`sluice topic alter-config` / `describe`). The broker must run with
log.cleaner.backoff.ms=100, log.retention.check.interval.ms=200 and
log.cleaner.min.compaction.lag.ms=0 (run.sh sets them).

One line per check, "PASS compaction: ..." / "FAIL compaction: ...: reason" (checklib),
plus "INFO ..." and "SKIP ..." lines that are not counted. Exits 1 if any check failed.
Every wait is bounded (at most WAIT seconds); see README.md for what each check proves.
"""

import logging
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "clients"))

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError,  # noqa: E402
                             Producer, TopicPartition)
from confluent_kafka.admin import (AdminClient, ConfigResource,  # noqa: E402
                                   NewTopic)

from checklib import CheckFailed, Checks, main_guard  # noqa: E402

WAIT = 30.0  # seconds: the bound on every wait for the broker's background work
T = 10  # seconds: the bound on a single client call
ROLL_GAP = 0.25  # seconds between the last record and the one that rolls (segment.ms=100)
COMPACT = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
           "segment.ms": "100"}
INVALID_RECORD = 87
EXPIRE_WAIT = 10  # seconds: retention.ms=1000 + log.retention.check.interval.ms=200, ample

# What Kafka 4.1.1's `kafka-configs.sh --describe --all` prints for topic "cfg" after
# `--alter --add-config cleanup.policy=compact,min.cleanable.dirty.ratio=0.01,segment.ms=100`
# on a broker started as run.sh starts it (log.cleaner.min.compaction.lag.ms=0 is a static
# broker config there). Captured from Kafka 4.1.1; check 5 verifies the same on --kafka.
KAFKA_DESCRIBE = {
    "cleanup.policy": "cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
                      "cleanup.policy=compact, DEFAULT_CONFIG:log.cleanup.policy=delete}",
    "delete.retention.ms": "delete.retention.ms=86400000 sensitive=false synonyms="
                           "{DEFAULT_CONFIG:log.cleaner.delete.retention.ms=86400000}",
    "min.cleanable.dirty.ratio": "min.cleanable.dirty.ratio=0.01 sensitive=false synonyms="
                                 "{DYNAMIC_TOPIC_CONFIG:min.cleanable.dirty.ratio=0.01, "
                                 "DEFAULT_CONFIG:log.cleaner.min.cleanable.ratio=0.5}",
    "segment.ms": "segment.ms=100 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.ms=100}",
    "min.compaction.lag.ms": "min.compaction.lag.ms=0 sensitive=false synonyms="
                             "{STATIC_BROKER_CONFIG:log.cleaner.min.compaction.lag.ms=0, "
                             "DEFAULT_CONFIG:log.cleaner.min.compaction.lag.ms=0}",
}
# Compared too, but only reported (INFO): Kafka's quirks rather than contracts.
KAFKA_DESCRIBE_INFO = {
    "retention.ms": "retention.ms=604800000 sensitive=false synonyms={}",
    "segment.bytes": "segment.bytes=1073741824 sensitive=false synonyms="
                     "{DEFAULT_CONFIG:log.segment.bytes=1073741824}",
    "max.compaction.lag.ms": "max.compaction.lag.ms=9223372036854775807 sensitive=false "
                             "synonyms={DEFAULT_CONFIG:log.cleaner.max.compaction.lag.ms="
                             "9223372036854775807}",
}
# Every key Kafka 4.1.1 lists under "All configs for topic".
KAFKA_ALL_KEYS = """cleanup.policy compression.gzip.level compression.lz4.level
compression.type compression.zstd.level delete.retention.ms file.delete.delay.ms
flush.messages flush.ms follower.replication.throttled.replicas index.interval.bytes
leader.replication.throttled.replicas local.retention.bytes local.retention.ms
max.compaction.lag.ms max.message.bytes message.timestamp.after.max.ms
message.timestamp.before.max.ms message.timestamp.type min.cleanable.dirty.ratio
min.compaction.lag.ms min.insync.replicas preallocate remote.log.copy.disable
remote.log.delete.on.disable remote.storage.enable retention.bytes retention.ms
segment.bytes segment.index.bytes segment.jitter.ms segment.ms
unclean.leader.election.enable""".split()


def info(line):
    print("INFO compaction: %s" % line, flush=True)


class Ctx:
    def __init__(self, bootstrap, libs, backend, sluice):
        self.bootstrap = bootstrap
        self.libs = libs
        self.backend = backend
        self.sluice = sluice
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                  "linger.ms": 0, "log_level": 3})

    # -- topics and records ---------------------------------------------------------------
    def create(self, topic, config):
        fs = self.admin.create_topics([NewTopic(topic, 1, 1, config=dict(config))],
                                      operation_timeout=T, request_timeout=T)
        for f in fs.values():
            f.result(timeout=T + 5)
        deadline = time.monotonic() + T
        while True:
            t = self.admin.list_topics(topic=topic, timeout=T).topics.get(topic)
            if t is not None and t.error is None and t.partitions and \
                    t.partitions[0].leader >= 0:
                return
            if time.monotonic() > deadline:
                raise CheckFailed("topic %s: metadata not ready after %ds" % (topic, T))
            time.sleep(0.1)

    def produce(self, topic, key, value, producer=None):
        """One record in its own batch, acks=all; returns (error or None, offset)."""
        p = producer or self.producer
        out = []
        p.produce(topic, key=key, value=value, partition=0,
                  on_delivery=lambda err, msg: out.append((err, msg.offset())))
        left = p.flush(T)
        if left or not out:
            raise CheckFailed("%s: no delivery report for %r within %ds" % (topic, key, T))
        return out[0]

    def produce_ok(self, topic, key, value, want_offset=None):
        err, off = self.produce(topic, key, value)
        if err is not None:
            raise CheckFailed("%s: produce %r=%r: %s" % (topic, key, value, err))
        if want_offset is not None and off != want_offset:
            raise CheckFailed("%s: %r=%r appended at offset %s, expected %d"
                              % (topic, key, value, off, want_offset))
        return off

    def watermarks(self, topic):
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "wm", "log_level": 3})
        try:
            return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=T)
        finally:
            c.close()

    def read_all(self, topic):
        """Every record from the log start to the high watermark: [(offset, key, value)]."""
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "read-all",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "log_level": 3})
        try:
            _, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=T)
            c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            out = []
            deadline = time.monotonic() + T
            while hi > 0 and (not out or out[-1][0] < hi - 1):
                if time.monotonic() > deadline:
                    raise CheckFailed("%s: read up to offset %s of high watermark %d in %ds"
                                      % (topic, out[-1][0] if out else None, hi, T))
                m = c.poll(0.5)
                if m is None:
                    continue
                if m.error():
                    raise CheckFailed("%s: consumer error: %s" % (topic, m.error()))
                out.append((m.offset(), dec(m.key()), dec(m.value())))
            return out
        finally:
            c.close()

    def wait_log(self, topic, want, bad=None, timeout=WAIT):
        """Reads the log until it equals want; returns the seconds it took. bad(records) may
        return a reason to stop at once."""
        t0 = time.monotonic()
        last = None
        while True:
            last = self.read_all(topic)
            if last == want:
                return time.monotonic() - t0
            if bad is not None:
                why = bad(last)
                if why:
                    raise CheckFailed("%s: %s; the log: %s" % (topic, why, fmt(last)))
            if time.monotonic() - t0 > timeout:
                raise CheckFailed("%s: after %.0fs the log is %s, expected %s"
                                  % (topic, timeout, fmt(last), fmt(want)))
            time.sleep(0.2)

    # -- tools ----------------------------------------------------------------------------
    def configs_tool(self, *args):
        """kafka-configs.sh as its script runs it; returns (exit code, stdout, stderr)."""
        props = os.path.join(os.environ.get("WORK", "/tmp"), "compaction-client.properties")
        with open(props, "w") as f:
            f.write("request.timeout.ms=8000\ndefault.api.timeout.ms=10000\n")
        cmd = ["java", "-Xms64m", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
               "-XX:-UsePerfData",
               "-Dlog4j2.configurationFile=" + os.path.join(HERE, "..", "kafka",
                                                            "log4j2.properties"),
               "-cp", os.path.join(self.libs, "*"), "kafka.admin.ConfigCommand",
               "--bootstrap-server", self.bootstrap, "--command-config", props] + list(args)
        return run(cmd, 20)


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           stdin=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CheckFailed("%s: no exit within %ds" % (" ".join(cmd[-8:]), timeout))
    return p.returncode, p.stdout, p.stderr


def dec(b):
    return None if b is None else b.decode("utf-8", "replace")


def fmt(records):
    return "[" + ", ".join("%d %s=%s" % (o, k, v) for o, k, v in records) + "]"


def short(text, n=400):
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("at ")]
    return " ".join(" ".join(lines).split())[-n:]


# -- the checks ---------------------------------------------------------------------------
def guide_example(ctx, checks):
    topic = "guide"
    rows = [("A", "v1"), ("B", "v1"), ("A", "v2"), ("C", "v1"), ("B", "v2"), ("A", "v3")]
    state = {}

    def produce():
        ctx.create(topic, COMPACT)
        for i, (k, v) in enumerate(rows):
            ctx.produce_ok(topic, k, v, want_offset=i)
        time.sleep(ROLL_GAP)
        ctx.produce_ok(topic, "D", "later", want_offset=6)
        state["t"] = time.monotonic()

    def compacted():
        want = [(3, "C", "v1"), (4, "B", "v2"), (5, "A", "v3"), (6, "D", "later")]
        took = ctx.wait_log(topic, want, timeout=WAIT - (time.monotonic() - state["t"]))
        lo, hi = ctx.watermarks(topic)
        if (lo, hi) != (0, 7):
            raise CheckFailed("watermarks (%d, %d), expected (0, 7): compaction must not "
                              "move the log start offset" % (lo, hi))
        info("guide: compacted within %.1fs of the rolling record" % took)

    a = "1a guide: A v1, B v1, A v2, C v1, B v2, A v3 at offsets 0-5 (acks=all), then " \
        "D=later at 6 after %dms" % (ROLL_GAP * 1000)
    checks.run(a, produce)
    checks.run("1b guide: a consumer from the beginning sees only 3 C=v1, 4 B=v2, 5 A=v3 "
               "(and 6 D=later); watermarks stay (0, 7)", compacted, deps=[a])


def tombstones(ctx, checks):
    topic = "tombstones"
    cfg = dict(COMPACT, **{"delete.retention.ms": "1000"})
    state = {}
    kept = [(1, "Y", "v1"), (2, "X", None), (3, "R1", "roll")]

    def produce():
        ctx.create(topic, cfg)
        ctx.produce_ok(topic, "X", "v1", 0)
        ctx.produce_ok(topic, "Y", "v1", 1)
        err, off = ctx.produce(topic, "X", None)
        if err is not None:
            raise CheckFailed("tombstone X: %s" % err)
        time.sleep(ROLL_GAP)
        ctx.produce_ok(topic, "R1", "roll", 3)
        if ctx.backend == "sluice":
            # the same records in a second topic that gets no new data afterwards (6b)
            ctx.create(topic + "-idle", cfg)
            for k, v in (("X", "v1"), ("Y", "v1"), ("X", None)):
                err, _ = ctx.produce(topic + "-idle", k, v)
                if err is not None:
                    raise CheckFailed("%s-idle: %s=%s: %s" % (topic, k, v, err))
            time.sleep(ROLL_GAP)
            ctx.produce_ok(topic + "-idle", "R1", "roll", 3)
            idle_thread.start()

    def first_pass():
        def bad(records):
            if (2, "X", None) not in records:
                return "the tombstone at offset 2 is gone before delete.retention.ms"
            return None
        took = ctx.wait_log(topic, kept, bad=bad)
        state["seen"] = time.monotonic()
        info("tombstones: X=v1 cleaned away %.1fs after the roll" % took)

    def second_pass():
        # Kafka 4.1.1 cleans a log again only when it has new dirty data (checked: the
        # tombstone was still there 12 s after its horizon without it), so after the
        # horizon one more record rolls the segment that holds R1 into the dirty range.
        time.sleep(max(0.0, state["seen"] + 1.2 - time.monotonic()))
        ctx.produce_ok(topic, "R2", "roll2", 4)
        took = ctx.wait_log(topic, [(1, "Y", "v1"), (3, "R1", "roll"), (4, "R2", "roll2")],
                            bad=lambda r: None if (1, "Y", "v1") in r else "Y=v1 is gone")
        info("tombstones: tombstone removed %.1fs after R2" % took)

    def watch_idle():
        # Sluice's KIP-534 claim: a log whose tombstone horizon has passed is cleaned
        # again without new dirty data. Watched from the start, as it may happen while
        # 2b and 2c run.
        t0 = time.monotonic()
        final = [(1, "Y", "v1"), (3, "R1", "roll")]
        while time.monotonic() - t0 < WAIT:
            try:
                log = ctx.read_all(topic + "-idle")
            except CheckFailed as e:
                idle_seen.append(("error", str(e), time.monotonic()))
                return
            if not idle_seen or idle_seen[-1][0] != log:
                idle_seen.append((log, None, time.monotonic()))
            if log == final:
                return
            time.sleep(0.2)

    idle_seen = []
    idle_thread = threading.Thread(target=watch_idle, daemon=True)

    def idle():
        idle_thread.join(WAIT + T)
        states = [s for s, _, _ in idle_seen]
        if idle_seen and idle_seen[-1][0] == "error":
            raise CheckFailed(idle_seen[-1][1])
        if kept not in states:
            raise CheckFailed("the tombstone was never seen kept after cleaning; logs seen: "
                              "%s" % "; ".join(fmt(s) for s in states))
        final = [(1, "Y", "v1"), (3, "R1", "roll")]
        if states[-1] != final:
            raise CheckFailed("after %.0fs the log is %s, expected %s" % (
                WAIT, fmt(states[-1]), fmt(final)))
        t_kept = idle_seen[states.index(kept)][2]
        info("tombstones: idle tombstone removed %.1fs after it was first seen kept "
             "(no new data)" % (idle_seen[-1][2] - t_kept))

    a = "2a tombstones: X v1, Y v1, X null at 0-2 (delete.retention.ms=1000), R1 at 3 " \
        "after %dms" % (ROLL_GAP * 1000)
    b = "2b tombstones: after cleaning the consumer sees 1 Y=v1, 2 X=null, 3 R1 (not X=v1)"
    c = "2c tombstones: after delete.retention.ms and one more roll (R2 at 4) the " \
        "tombstone is gone: 1 Y=v1, 3 R1, 4 R2"
    checks.run(a, produce)
    checks.run(b, first_pass, deps=[a])
    checks.run(c, second_pass, deps=[b])
    if ctx.backend == "sluice":
        checks.run("6b tombstones (Sluice only, KIP-534): the same log with no new data "
                   "after R1 loses the tombstone after delete.retention.ms", idle, deps=[a])
    else:
        print("SKIP compaction: 6b tombstone removal without new dirty data (Sluice only; "
              "Kafka 4.1.1 keeps such a tombstone until new dirty data arrives)", flush=True)


def retention(ctx, checks):
    topic = "retention"
    stop = threading.Event()
    produced = []
    errors = []

    def background():
        p = Producer({"bootstrap.servers": ctx.bootstrap, "acks": "all", "linger.ms": 0,
                      "log_level": 3})
        i = 0
        while not stop.is_set():
            p.produce(topic, key="k%d" % i, value="%d" % i, partition=0,
                      on_delivery=lambda e, m: (errors if e else produced).append(
                          e or m.offset()))
            p.poll(0)
            i += 1
            stop.wait(0.15)
        p.flush(T)

    thread = threading.Thread(target=background, daemon=True)
    resets = []  # librdkafka's OFFSET log lines ("offset reset (at offset N) to ...")

    class RdLog(logging.Handler):
        def emit(self, record):
            msg = record.getMessage()
            if "offset reset" in msg:
                resets.append(msg.split("]: ", 1)[-1])
    rdlog = logging.getLogger("compaction.rdkafka.%d" % id(resets))
    rdlog.propagate = False
    rdlog.setLevel(logging.DEBUG)
    rdlog.addHandler(RdLog())

    def advances():
        ctx.create(topic, {"cleanup.policy": "delete", "retention.ms": "1000",
                           "segment.ms": "100"})
        thread.start()
        t0 = time.monotonic()
        while True:
            lo, hi = ctx.watermarks(topic)
            if lo > 0:
                info("retention: log start offset %d (high watermark %d) after %.1fs"
                     % (lo, hi, time.monotonic() - t0))
                return
            if errors:
                raise CheckFailed("produce: %s" % errors[0])
            if time.monotonic() - t0 > WAIT:
                raise CheckFailed("low watermark still 0 after %.0fs (high watermark %d)"
                                  % (WAIT, hi))
            time.sleep(0.2)

    def consume(reset, n):
        """Assign at offset 0 with auto.offset.reset=reset; returns (watermarks before,
        [(offset, hi watermark when received) or ('error', KafkaError)], watermarks after)."""
        resets.clear()
        c = Consumer({"bootstrap.servers": ctx.bootstrap, "group.id": "retention-" + reset,
                      "enable.auto.commit": False, "auto.offset.reset": reset,
                      "log_level": 4, "logger": rdlog})
        try:
            before = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=T)
            c.assign([TopicPartition(topic, 0, 0)])
            got = []
            deadline = time.monotonic() + T
            while len(got) < n and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is None:
                    continue
                if m.error():
                    got.append(("error", m.error()))
                    if reset == "error":
                        break
                    continue
                got.append((m.offset(), None))
            after = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=T)
            return before, got, after
        finally:
            c.close()

    def earliest():
        (lo, _), got, (lo2, _) = consume("earliest", 1)
        if not got:
            raise CheckFailed("nothing received in %ds (log start offset %d before, %d after); "
                              "librdkafka's %d offset resets, the last: %s"
                              % (T, lo, lo2, len(resets), resets[-1] if resets else "-"))
        if got[0][0] == "error":
            raise CheckFailed("consumer error: %s" % got[0][1])
        f = got[0][0]
        if not (0 < lo <= f <= lo2):
            raise CheckFailed("first record at offset %d; the log start offset was %d before "
                              "and %d after" % (f, lo, lo2))
        info("retention: earliest: first record at %d (log start %d before, %d after)"
             % (f, lo, lo2))

    def latest():
        (lo, hi), got, _ = consume("latest", 3)
        if len(got) < 3:
            raise CheckFailed("received %r in %ds, expected 3 records" % (got, T))
        errs = [g for g in got if g[0] == "error"]
        if errs:
            raise CheckFailed("consumer error: %s" % errs[0][1])
        offs = [g[0] for g in got]
        if offs[0] < hi or offs != list(range(offs[0], offs[0] + 3)):
            raise CheckFailed("received offsets %s; the high watermark was %d before the "
                              "assignment (log start %d)" % (offs, hi, lo))
        info("retention: latest: records %s (high watermark %d before)" % (offs, hi))

    def error():
        (lo, _), got, _ = consume("error", 1)
        if not got:
            raise CheckFailed("no error and no record in %ds" % T)
        if got[0][0] != "error":
            raise CheckFailed("received a record at offset %d (log start was %d), expected "
                              "the _AUTO_OFFSET_RESET error" % (got[0][0], lo))
        e = got[0][1]
        if e.code() != KafkaError._AUTO_OFFSET_RESET:
            raise CheckFailed("error %s, expected _AUTO_OFFSET_RESET" % e)
        if "Offset out of range" not in e.str():
            raise CheckFailed("error %s does not name the broker's OFFSET_OUT_OF_RANGE" % e)
        info("retention: error: %s" % e.str())

    def all_expire():
        stop.set()
        thread.join(T + 5)
        t0 = time.monotonic()
        while True:
            lo, hi = ctx.watermarks(topic)
            if lo == hi:
                info("retention: all expired %.1fs after the last record: watermarks (%d, %d)"
                     % (time.monotonic() - t0, lo, hi))
                return
            if time.monotonic() - t0 > EXPIRE_WAIT:
                raise CheckFailed("%.0fs after the last record the watermarks are (%d, %d): "
                                  "%d record(s) older than retention.ms=1000 kept"
                                  % (EXPIRE_WAIT, lo, hi, hi - lo))
            time.sleep(0.2)

    a = "3a retention: retention.ms=1000, segment.ms=100, a record every 150ms: the log " \
        "start offset (low watermark) moves past 0"
    try:
        checks.run(a, advances)
        checks.run("3b retention: assigned at offset 0 with auto.offset.reset=earliest, the "
                   "first record is at the log start offset", earliest, deps=[a])
        checks.run("3c retention: with auto.offset.reset=latest only records produced after "
                   "the assignment (offsets >= the high watermark before)", latest, deps=[a])
        checks.run("3d retention: with auto.offset.reset=error the consumer gets "
                   "_AUTO_OFFSET_RESET (Offset out of range) and no record", error, deps=[a])
        checks.run("3e retention: once producing stops, every record expires (the active "
                   "segment too): low watermark = high watermark within %ds" % EXPIRE_WAIT,
                   all_expire, deps=[a])
    finally:
        stop.set()
        if thread.is_alive():
            thread.join(T + 5)


def keyless(ctx, checks):
    topic = "keyless"

    def rejected():
        ctx.create(topic, {"cleanup.policy": "compact"})
        err, _ = ctx.produce(topic, None, "no key")
        if err is None or err.code() != INVALID_RECORD:
            raise CheckFailed("delivery report error %s, expected INVALID_RECORD (87)" % err)
        lo, hi = ctx.watermarks(topic)
        if (lo, hi) != (0, 0):
            raise CheckFailed("watermarks (%d, %d) after the rejected record, expected (0, 0)"
                              % (lo, hi))
        ctx.produce_ok(topic, "k", "with key", want_offset=0)
        info("keyless: %s" % err)

    checks.run("4 keyless record to a compacted topic: delivery report INVALID_RECORD (87), "
               "nothing appended (watermarks (0, 0); a keyed record then gets offset 0)",
               rejected)


def configs(ctx, checks):
    topic = "cfg"
    state = {}

    def alter():
        ctx.create(topic, {})
        rc, out, err = ctx.configs_tool(
            "--alter", "--entity-type", "topics", "--entity-name", topic, "--add-config",
            "cleanup.policy=compact,min.cleanable.dirty.ratio=0.01,segment.ms=100")
        if rc != 0:
            raise CheckFailed("exit %d: %s %s" % (rc, short(err), short(out)))
        want = "Completed updating config for topic %s." % topic
        if out.strip() != want:
            raise CheckFailed("printed %r, expected %r" % (out.strip(), want))

    def describe():
        rc, out, err = ctx.configs_tool("--describe", "--all", "--entity-type", "topics",
                                        "--entity-name", topic)
        if rc != 0:
            raise CheckFailed("exit %d: %s %s" % (rc, short(err), short(out)))
        lines = {}
        for ln in out.splitlines():
            if ln.startswith("  ") and "=" in ln:
                lines[ln.strip().split("=", 1)[0]] = ln.strip()
        state["lines"] = lines
        head = out.splitlines()[0] if out else ""
        if head != "All configs for topic %s are:" % topic:
            raise CheckFailed("first line %r" % head)
        diffs = []
        for k in ("cleanup.policy", "delete.retention.ms"):
            if lines.get(k) != KAFKA_DESCRIBE[k]:
                diffs.append("%s: got %r, Kafka 4.1.1: %r" % (k, lines.get(k), KAFKA_DESCRIBE[k]))
        if diffs:
            raise CheckFailed("; ".join(diffs))

    def compare():
        lines = state["lines"]
        for k, want in KAFKA_DESCRIBE_INFO.items():
            if lines.get(k) != want:
                info("configs: %s differs from Kafka 4.1.1: got %r, Kafka prints %r"
                     % (k, lines.get(k), want))
        missing = [k for k in KAFKA_ALL_KEYS if k not in lines]
        extra = sorted(k for k in lines if k not in KAFKA_ALL_KEYS)
        if missing or extra:
            info("configs: keys Kafka 4.1.1 lists but this broker does not: %s; keys only "
                 "this broker lists: %s" % (" ".join(missing) or "-", " ".join(extra) or "-"))
        diffs = ["%s: got %r, Kafka 4.1.1: %r" % (k, lines.get(k), want)
                 for k, want in KAFKA_DESCRIBE.items() if lines.get(k) != want]
        if diffs:
            raise CheckFailed("; ".join(diffs))

    def compacts():
        p = Producer({"bootstrap.servers": ctx.bootstrap, "acks": "all", "linger.ms": 50,
                      "log_level": 3})
        reports = []
        for v in range(3):
            for k in range(4):
                p.produce(topic, key="k%d" % k, value="v%d" % v, partition=0,
                          on_delivery=lambda e, m: reports.append((e, m.offset())))
        p.flush(T)
        if len(reports) != 12 or any(e for e, _ in reports):
            raise CheckFailed("delivery reports %s" % reports)
        time.sleep(ROLL_GAP)
        ctx.produce_ok(topic, "roll", "r", want_offset=12)
        want = [(8 + k, "k%d" % k, "v2") for k in range(4)] + [(12, "roll", "r")]
        took = ctx.wait_log(topic, want)
        info("configs: compacted %.1fs after the roll" % took)

    a = "5a kafka-configs.sh --alter --add-config cleanup.policy=compact," \
        "min.cleanable.dirty.ratio=0.01,segment.ms=100 on a delete-policy topic"
    b = "5b kafka-configs.sh --describe --all: cleanup.policy=compact as DYNAMIC_TOPIC_CONFIG, " \
        "delete.retention.ms=86400000 as DEFAULT_CONFIG (Kafka 4.1.1's lines)"
    checks.run(a, alter)
    checks.run(b, describe, deps=[a])
    checks.run("5c kafka-configs.sh --describe --all: the lines for %s equal Kafka 4.1.1's"
               % ", ".join(KAFKA_DESCRIBE), compare, deps=[b])
    checks.run("5d after the alter, 4 keys x 3 values in one batch and a roll: the consumer "
               "sees only the latest value per key", compacts, deps=[a])


def sluice_cli(ctx, checks):
    topic = "cli"

    def alter_describe():
        ctx.create(topic, {})
        cli = [ctx.sluice, "topic", "--bootstrap-server", ctx.bootstrap]
        rc, out, err = run(cli + ["alter-config", "--topic", topic, "--set",
                                  "cleanup.policy=compact"], 20)
        if rc != 0:
            raise CheckFailed("alter-config: exit %d: %s %s" % (rc, short(err), short(out)))
        rc, out, err = run(cli + ["describe", topic], 20)
        if rc != 0:
            raise CheckFailed("describe: exit %d: %s %s" % (rc, short(err), short(out)))
        if "cleanup.policy=compact" not in out:
            raise CheckFailed("describe does not show cleanup.policy=compact: %s" % short(out))
        res = ConfigResource(ConfigResource.Type.TOPIC, topic)
        entry = ctx.admin.describe_configs([res])[res].result(timeout=T)["cleanup.policy"]
        if entry.value != "compact" or entry.source != 1:  # DYNAMIC_TOPIC_CONFIG
            raise CheckFailed("DescribeConfigs: cleanup.policy=%s source %s"
                              % (entry.value, entry.source))
        info("sluice topic describe: %s" % short(out, 300))

    if ctx.backend == "sluice":
        checks.run("6a sluice topic alter-config --set cleanup.policy=compact, then sluice "
                   "topic describe and DescribeConfigs show it (dynamic topic config)",
                   alter_describe)
    else:
        print("SKIP compaction: 6a sluice topic alter-config (Sluice only)", flush=True)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    bootstrap, libs, backend = sys.argv[1:4]
    sluice = sys.argv[4] if len(sys.argv) > 4 else "target/debug/sluice"
    checks = Checks("compaction")

    def body():
        ctx = Ctx(bootstrap, libs, backend, sluice)
        guide_example(ctx, checks)
        tombstones(ctx, checks)
        retention(ctx, checks)
        keyless(ctx, checks)
        configs(ctx, checks)
        sluice_cli(ctx, checks)
    return main_guard(checks, body)


if __name__ == "__main__":
    sys.exit(main())
