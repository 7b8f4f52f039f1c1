"""Shared helpers of the consumer-group checks (librdkafka via confluent-kafka).

Member: one librdkafka group consumer polled by its own thread, recording every
assignment callback (with the group generation it belongs to), revoke/lost callback and
record it receives. ChildMember: the same member in a child process (member.py) that
prints those events as JSON lines, so that it can be killed with SIGKILL.
"""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "clients"))

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from checklib import CheckFailed  # noqa: E402

T = 10  # seconds: the bound on a single client call
PARTITIONS = 6
ALL = frozenset(range(PARTITIONS))
SESSION_MS = 6000
HEARTBEAT_MS = 500
RUN_ID = uuid.uuid4().hex[:6]  # topic/group names are unique per run


def name(prefix):
    return "%s-%s" % (prefix, RUN_ID)


def gen_of(cgmd):
    """The generation id inside librdkafka's serialized consumer group metadata
    ("CGMDv2:" + int32 generation id in host (little-endian) order + ...)."""
    if isinstance(cgmd, (bytes, bytearray)) and cgmd[:7] == b"CGMDv2:":
        return int.from_bytes(cgmd[7:11], "little", signed=True)
    return None


def admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": T * 1000,
                        "log_level": 3})


def create_topic(bootstrap, topic, partitions=PARTITIONS):
    a = admin(bootstrap)
    fs = a.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=T,
                         request_timeout=T)
    for f in fs.values():
        f.result(timeout=T + 5)
    # wait until the metadata shows every partition with a leader
    deadline = time.monotonic() + T
    while True:
        md = a.list_topics(topic=topic, timeout=T)
        t = md.topics.get(topic)
        if t is not None and t.error is None and len(t.partitions) == partitions and all(
                p.leader >= 0 for p in t.partitions.values()):
            return
        if time.monotonic() > deadline:
            raise CheckFailed("topic %s: metadata not ready" % topic)
        time.sleep(0.1)


def produce(bootstrap, topic, per_partition, partitions=PARTITIONS, tag="r"):
    """per_partition records into every partition; value 'tag-p-i'. Returns
    {partition: end offset}."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                  "message.timeout.ms": T * 1000, "log_level": 3})
    errors = []
    done = []

    def cb(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            done.append((msg.partition(), msg.offset()))

    for i in range(per_partition):
        for part in range(partitions):
            p.produce(topic, value=("%s-%d-%d" % (tag, part, i)).encode(),
                      key=("k%d" % i).encode(), partition=part, on_delivery=cb)
    left = p.flush(T * 1.5)
    if errors or left:
        raise CheckFailed("produce to %s: %d undelivered, errors %s" % (topic, left, errors[:3]))
    ends = {}
    for part, off in done:
        ends[part] = max(ends.get(part, 0), off + 1)
    return ends


class Ticker:
    """A producer thread: one record every `interval` s, round robin over partitions.
    sent() returns {(partition, offset)} of every delivered record."""

    def __init__(self, bootstrap, topic, interval=0.02, partitions=PARTITIONS):
        self.p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all",
                           "message.timeout.ms": T * 1000, "log_level": 3})
        self.topic, self.interval, self.partitions = topic, interval, partitions
        self._stop = threading.Event()
        self._sent = set()
        self.errors = []
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _cb(self, err, msg):
        if err is not None:
            self.errors.append(str(err))
        else:
            with self._lock:
                self._sent.add((msg.partition(), msg.offset()))

    def _run(self):
        i = 0
        while not self._stop.is_set():
            self.p.produce(self.topic, value=b"t%d" % i, partition=i % self.partitions,
                           on_delivery=self._cb)
            self.p.poll(0)
            i += 1
            time.sleep(self.interval)

    def stop(self):
        self._stop.set()
        self.thread.join(5)
        left = self.p.flush(T)
        if left or self.errors:
            raise CheckFailed("ticker: %d undelivered, errors %s" % (left, self.errors[:3]))
        with self._lock:
            return set(self._sent)


def consumer_conf(bootstrap, group, client_id, extra=None):
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
            "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS,
            "max.poll.interval.ms": 30000, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "fetch.wait.max.ms": 100,
            "socket.timeout.ms": T * 1000, "log_level": 3,
            "topic.metadata.refresh.interval.ms": 2000}
    conf.update(extra or {})
    return conf


class MemberState:
    """What one member saw: events [(t, kind, gen, data)], its assignment, generation."""

    def __init__(self, name, cooperative=False):
        self.name = name
        self.cooperative = cooperative
        self.lock = threading.Lock()
        self.events = []
        self.assignment = set()
        self.gen = None  # generation of the latest assignment callback
        self.live_gen = None  # generation librdkafka reports now
        self.member_id = None
        self.records = []  # (gen, partition, offset, value)
        self.strays = []  # records outside the current assignment
        self.commits = []  # on_commit callbacks: (err, {partition: offset})
        self.error = None
        self.closed = False

    def on_event(self, ev):
        """Apply one event dict (the format member.py prints)."""
        with self.lock:
            kind = ev["ev"]
            self.events.append((time.monotonic(), kind, ev.get("gen"), ev.get("parts")))
            if kind == "assign":
                parts = set(ev["parts"])
                if self.cooperative:
                    self.assignment |= parts
                else:
                    self.assignment = parts
                self.gen = ev["gen"]
                self.live_gen = ev["gen"]
                self.member_id = ev.get("member")
            elif kind in ("revoke", "lost"):
                parts = set(ev["parts"])
                if self.cooperative:
                    self.assignment -= parts
                else:
                    self.assignment = set()
            elif kind == "record":
                rec = (self.gen, ev["p"], ev["o"], ev.get("v"))
                self.records.append(rec)
                if ev["p"] not in self.assignment:
                    self.strays.append(rec)
            elif kind == "gen":
                self.live_gen = ev["gen"]
            elif kind == "commit":
                self.commits.append((ev.get("err"), {int(k): v for k, v in ev["offsets"].items()}))
            elif kind == "error":
                self.error = ev.get("msg")
            elif kind == "closed":
                self.closed = True

    def snapshot(self):
        with self.lock:
            return set(self.assignment), self.gen, self.live_gen

    def kinds(self, since=0.0, kinds=("assign", "revoke", "lost")):
        with self.lock:
            return [(k, g, p) for (t, k, g, p) in self.events if t >= since and k in kinds]


def rebalance_callbacks(consumer_state_emit, consumer_ref):
    """(on_assign, on_revoke, on_lost) that emit events through consumer_state_emit."""

    def parts_of(ps):
        return sorted(tp.partition for tp in ps)

    def on_assign(c, ps):
        consumer_state_emit({"ev": "assign", "gen": gen_of(c.consumer_group_metadata()),
                             "parts": parts_of(ps), "member": c.memberid()})

    def on_revoke(c, ps):
        consumer_state_emit({"ev": "revoke", "gen": gen_of(c.consumer_group_metadata()),
                             "parts": parts_of(ps)})

    def on_lost(c, ps):
        consumer_state_emit({"ev": "lost", "gen": gen_of(c.consumer_group_metadata()),
                             "parts": parts_of(ps)})

    return on_assign, on_revoke, on_lost


class Member(MemberState):
    """A librdkafka group member in a thread of this process."""

    def __init__(self, bootstrap, group, topic, name, extra=None, cooperative=None):
        extra = dict(extra or {})
        if cooperative is None:
            cooperative = "cooperative" in extra.get("partition.assignment.strategy", "")
        super().__init__(name, cooperative)
        conf = consumer_conf(bootstrap, group, name, extra)
        conf["on_commit"] = self._on_commit
        self.c = Consumer(conf)
        self.topic = topic
        self._calls = queue.Queue()
        self._stop = threading.Event()
        self._leave = True
        self.thread = threading.Thread(target=self._run, daemon=True, name=name)
        self.thread.start()

    def _on_commit(self, err, tps):
        self.on_event({"ev": "commit", "err": None if err is None else str(err),
                       "offsets": {tp.partition: tp.offset for tp in tps}})

    def _run(self):
        try:
            a, r, lost = rebalance_callbacks(self.on_event, None)
            self.c.subscribe([self.topic], on_assign=a, on_revoke=r, on_lost=lost)
            while not self._stop.is_set():
                while True:
                    try:
                        fn, box = self._calls.get_nowait()
                    except queue.Empty:
                        break
                    try:
                        box.put((True, fn(self.c)))
                    except Exception as e:  # noqa: BLE001
                        box.put((False, e))
                m = self.c.poll(0.05)
                g = gen_of(self.c.consumer_group_metadata())
                if g != self.live_gen:
                    with self.lock:
                        self.live_gen = g
                if m is None:
                    continue
                if m.error():
                    self.on_event({"ev": "error", "msg": str(m.error())})
                    continue
                self.on_event({"ev": "record", "p": m.partition(), "o": m.offset(),
                               "v": m.value().decode() if m.value() else None})
        except Exception as e:  # noqa: BLE001
            self.on_event({"ev": "error", "msg": "%s: %s" % (type(e).__name__, e)})
        finally:
            if self._leave:
                try:
                    self.c.close()
                except Exception:  # noqa: BLE001
                    pass
            self.on_event({"ev": "closed"})

    def call(self, fn, timeout=T * 2):
        """Run fn(consumer) on the member's thread; return its result."""
        box = queue.Queue()
        self._calls.put((fn, box))
        try:
            ok, v = box.get(timeout=timeout)
        except queue.Empty:
            raise CheckFailed("%s: call not served within %ss" % (self.name, timeout))
        if not ok:
            raise v
        return v

    def close(self, timeout=T * 2):
        self._stop.set()
        self.thread.join(timeout)


class ChildMember(MemberState):
    """A librdkafka member in a child process (member.py), killable with SIGKILL."""

    def __init__(self, bootstrap, group, topic, name, extra=None, mode=None):
        extra = dict(extra or {})
        super().__init__(name, "cooperative" in extra.get("partition.assignment.strategy", ""))
        spec = {"bootstrap": bootstrap, "group": group, "topic": topic, "name": name,
                "conf": extra, "mode": mode or {}}
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "member.py"), json.dumps(spec)],
            stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.strip()
            if line.startswith("{"):
                try:
                    self.on_event(json.loads(line))
                except ValueError:
                    pass
        self.on_event({"ev": "closed"})

    def kill(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(5)
        self.reader.join(5)

    def close(self, timeout=T * 2):
        """Ask the child to close its consumer cleanly (LeaveGroup) and exit."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.reader.join(5)


def wait_for(what, cond, timeout, interval=0.05):
    """Wait until cond() returns a truthy value; return it. CheckFailed on timeout, with
    what() (a callable) or what (a str) as the reason."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise CheckFailed("%s (after %.0fs)" % (what() if callable(what) else what, timeout))
        time.sleep(interval)


def group_state(members):
    return "; ".join("%s gen=%s/%s parts=%s%s" % (
        m.name, m.gen, m.live_gen, sorted(m.assignment),
        (" error=" + m.error) if m.error else "") for m in members)


def stable(members, parts=ALL):
    """True when every member has an assignment of the same generation, the generation
    librdkafka reports now, and the assignments are disjoint and cover parts."""
    snaps = [m.snapshot() for m in members]
    gens = {g for (_, g, lg) in snaps} | {lg for (_, g, lg) in snaps}
    if len(gens) != 1 or None in gens or -1 in gens:
        return False
    union = set()
    total = 0
    for a, _, _ in snaps:
        union |= a
        total += len(a)
    return union == set(parts) and total == len(parts)


def wait_stable(members, timeout=30, parts=ALL, settle=0.0):
    def ok():
        if not stable(members, parts):
            return False
        if settle:
            time.sleep(settle)
            return stable(members, parts)
        return True
    wait_for(lambda: "group not stable: " + group_state(members), ok, timeout)
    return {m.name: set(m.assignment) for m in members}


def check_disjoint_complete(assignments, parts=ALL):
    seen = {}
    for name_, a in assignments.items():
        for p in a:
            if p in seen:
                raise CheckFailed("partition %d assigned to both %s and %s: %s"
                                  % (p, seen[p], name_, assignments))
            seen[p] = name_
    if set(seen) != set(parts):
        raise CheckFailed("assignments %s cover %s, expected %s"
                          % (assignments, sorted(seen), sorted(parts)))


def committed(bootstrap, group, topic, partitions=PARTITIONS):
    """{partition: committed offset or None} read with AdminClient (OffsetFetch)."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    a = admin(bootstrap)
    fs = a.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])],
        request_timeout=T)
    res = fs[group].result(timeout=T + 5)
    out = {}
    for tp in res.topic_partitions:
        if tp.error is not None:
            raise CheckFailed("OffsetFetch %s/%d: %s" % (topic, tp.partition, tp.error))
        out[tp.partition] = tp.offset if tp.offset >= 0 else None
    return out


def close_all(members):
    for m in members:
        try:
            m.close()
        except Exception:  # noqa: BLE001
            pass
    for m in members:
        if isinstance(m, ChildMember):
            try:
                m.kill()
            except Exception:  # noqa: BLE001
                pass
