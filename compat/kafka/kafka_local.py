#!/usr/bin/env python3
"""Start/stop a throwaway single-node KRaft Apache Kafka from compat/kafka/libs.

Library use (stdlib only):

    from kafka_local import LocalKafka
    with LocalKafka() as k:          # formats storage, starts, waits until ready
        print(k.bootstrap)           # "127.0.0.1:<port>"
    # stopped with SIGTERM (clean shutdown), SIGKILL after a timeout

Command line (used by run-kafka.sh / capture.sh):

    kafka_local.py start WORKDIR    # prints the bootstrap address; Kafka keeps running
    kafka_local.py stop WORKDIR     # clean shutdown of the Kafka started in WORKDIR

WORKDIR holds server.properties, data/ (log.dirs), kafka.out (the broker's
stdout/stderr) and kafka.pid. Both listeners bind to 127.0.0.1 on free ports.
"""

import base64
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
LIBS = os.path.join(HERE, "libs")
LOG4J = os.path.join(HERE, "log4j2.properties")

# Small heap + C1-only JIT + SerialGC: noticeably faster start on 2 cores.
JVM_FLAGS = [
    "-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData", "-Djava.awt.headless=true",
    "-Dlog4j2.configurationFile=" + LOG4J,
]


def _die_with_parent():
    """preexec_fn: SIGTERM this child when the Python process that started it dies."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def exit_on_signals():
    """Turn SIGTERM/SIGHUP into SystemExit so `finally`/`with` cleanup stops Kafka."""
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def ensure_libs():
    """Run fetch-kafka.sh (fast no-op when already done); return the libs dir."""
    out = subprocess.run([os.path.join(HERE, "fetch-kafka.sh")], check=True,
                         stdout=subprocess.PIPE, text=True).stdout.strip()
    return out.splitlines()[-1]


def kafka_version():
    try:
        with open(os.path.join(LIBS, "VERSION")) as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def java_cmd(main_class, *args):
    return ["java", *JVM_FLAGS, "-cp", os.path.join(LIBS, "*"), main_class, *args]


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ports import free_port  # noqa: E402,F401  (below the ephemeral range: compat/lib/ports.py)


def random_cluster_id():
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def create_topics(bootstrap, topics, config=None, partitions=1):
    """Create topics with confluent-kafka's AdminClient (imported lazily)."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    futures = admin.create_topics(
        [NewTopic(t, num_partitions=partitions, replication_factor=1, config=dict(config or {}))
         for t in topics], operation_timeout=30, request_timeout=30)
    for f in futures.values():
        f.result(timeout=60)


def _metadata_brokers(port, timeout=2.0):
    """Send a Metadata v4 request (all topics); return the number of live brokers."""
    body = struct.pack(">i", -1) + b"\x00"  # topics=null (all), allow_auto_topic_creation=false
    client = b"sluice-compat"
    header = struct.pack(">hhih", 3, 4, 1, len(client)) + client
    req = header + body
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(req)) + req)
        size = struct.unpack(">i", _recv_exact(s, 4))[0]
        resp = _recv_exact(s, size)
    # correlation_id int32, throttle_time_ms int32, brokers array
    return struct.unpack_from(">i", resp, 8)[0]


def _recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return buf


class LocalKafka:
    def __init__(self, workdir=None, extra_props=None, start_timeout=90, format_args=()):
        self._own_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="sluice-kafka-")
        self.extra_props = extra_props or {}
        self.start_timeout = start_timeout
        # More `kafka-storage format` arguments (e.g. --add-scram ...).
        self.format_args = list(format_args)
        self.proc = None
        self.pid = None
        self.port = None
        self.controller_port = None

    @property
    def bootstrap(self):
        return "127.0.0.1:%d" % self.port

    @property
    def data_dir(self):
        return os.path.join(self.workdir, "data")

    def _write_config(self):
        self.port = free_port()
        self.controller_port = free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": "1@127.0.0.1:%d" % self.controller_port,
            "listeners": "PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                         % (self.port, self.controller_port),
            "advertised.listeners": "PLAINTEXT://127.0.0.1:%d" % self.port,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": self.data_dir,
            "num.partitions": "1",
            "default.replication.factor": "1",
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "log.message.timestamp.before.max.ms": str(2**63 - 1),
            "log.message.timestamp.after.max.ms": str(2**63 - 1),
            "controlled.shutdown.enable": "true",
        }
        props.update({k: str(v) for k, v in self.extra_props.items()})
        os.makedirs(self.workdir, exist_ok=True)
        self.config = os.path.join(self.workdir, "server.properties")
        with open(self.config, "w") as f:
            for k, v in props.items():
                f.write("%s=%s\n" % (k, v))

    def _log_tail(self, n=40):
        try:
            with open(os.path.join(self.workdir, "kafka.out"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return "(no kafka.out)"

    def start(self, detach=False):
        ensure_libs()
        self._write_config()
        fmt = subprocess.run(
            java_cmd("kafka.tools.StorageTool", "format", "--cluster-id", random_cluster_id(),
                     "--config", self.config, "--ignore-formatted", *self.format_args),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if fmt.returncode != 0:
            raise RuntimeError("kafka storage format failed:\n" + fmt.stdout)
        out = open(os.path.join(self.workdir, "kafka.out"), "wb")
        self.proc = subprocess.Popen(
            java_cmd("kafka.Kafka", self.config), stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=detach,
            preexec_fn=None if detach else _die_with_parent)
        out.close()
        self.pid = self.proc.pid
        with open(os.path.join(self.workdir, "kafka.pid"), "w") as f:
            f.write("%d\n" % self.pid)
        return self

    def wait_ready(self):
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("Kafka exited with %s during startup:\n%s"
                                   % (self.proc.returncode, self._log_tail()))
            try:
                if _metadata_brokers(self.port) > 0:
                    return self
            except (OSError, struct.error):
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("Kafka did not become ready in %ss:\n%s"
                           % (self.start_timeout, self._log_tail()))

    def stop(self, timeout=60):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        try:
            os.unlink(os.path.join(self.workdir, "kafka.pid"))
        except OSError:
            pass

    def cleanup(self):
        if self._own_workdir:
            import shutil
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        try:
            return self.start().wait_ready()
        except BaseException:
            self.stop()
            self.cleanup()
            raise

    def __exit__(self, *exc):
        self.stop()
        self.cleanup()
        return False


def _pid_is_our_kafka(pid, workdir):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read().decode(errors="replace")
    except OSError:
        return False
    return "kafka.Kafka" in cmd and os.path.join(workdir, "server.properties") in cmd


def stop_pid(workdir, timeout=60):
    pidfile = os.path.join(workdir, "kafka.pid")
    try:
        with open(pidfile) as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return
    if _pid_is_our_kafka(pid, workdir):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _pid_is_our_kafka(pid, workdir):
            time.sleep(0.1)
        if _pid_is_our_kafka(pid, workdir):
            os.kill(pid, signal.SIGKILL)
            while _pid_is_our_kafka(pid, workdir):
                time.sleep(0.1)
    os.unlink(pidfile)


def main(argv):
    if len(argv) != 3 or argv[1] not in ("start", "stop"):
        print("usage: kafka_local.py start|stop WORKDIR", file=sys.stderr)
        return 2
    workdir = os.path.abspath(argv[2])
    if argv[1] == "start":
        k = LocalKafka(workdir)
        k.start(detach=True)
        try:
            k.wait_ready()
        except BaseException:
            k.stop()
            raise
        # The broker is in its own session: it keeps running after we exit.
        print(k.bootstrap)
    else:
        stop_pid(workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
