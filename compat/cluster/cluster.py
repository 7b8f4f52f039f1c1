#!/usr/bin/env python3
"""A local multi-node cluster for fault injection: N node processes on 127.0.0.1, each
listener reached only through a harness-run TCP proxy, and faults (SIGKILL, restart,
SIGSTOP/SIGCONT, network partitions).

Two backends behind one interface:
  kafka   Apache Kafka 4.x from compat/kafka/libs (compat/kafka/fetch-kafka.sh), one JVM
          per node (`kafka.Kafka server.properties`), storage formatted with
          `kafka.tools.StorageTool format` and static `controller.quorum.voters`.
  sluice  $SLUICE_BIN or target/debug/sluice, `sluice server --config server.properties`
          with the same keys.

Two topologies:
  combined  3 nodes with process.roles=broker,controller (node ids 1..3)
  split     3 controllers (ids 1..3) + 3 brokers (ids 4..6)

Proxies. Every node listener (PLAINTEXT for brokers, CONTROLLER for controllers) binds a
real port that nobody is told about; `advertised.listeners` and `controller.quorum.voters`
name the port of a proxy that the harness runs (asyncio, in a thread of this process) and
that forwards to the real port. On every accepted connection the proxy finds out which
process opened it (the peer's ephemeral port -> /proc/net/tcp{,6} -> socket inode -> which
of the node PIDs holds that inode in /proc/PID/fd); connections from any other process
(the harness's own clients, the Java consumer) are labelled "client". A connection is
forwarded only while the link (source, destination, listener) is not cut, so a partition
cuts traffic in both directions of a node: inbound (others -> its listeners) and outbound
(its replica fetchers and controller/raft clients -> other nodes' listeners). See
README.md, "What a partition cuts".
"""

import asyncio
import atexit
import base64
import os
import shutil
import signal
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KAFKA_DIR = os.path.join(ROOT, "compat", "kafka")
LOG4J = os.path.join(KAFKA_DIR, "log4j2.properties")

# Small heap, C1 only, SerialGC: three or six of these on 2 cores.
JVM_FLAGS = [
    "-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData", "-XX:ActiveProcessorCount=2", "-Djava.awt.headless=true",
    "-Dlog4j2.configurationFile=" + LOG4J,
]

# Settings every node gets (Kafka's keys; the sluice backend writes the same file).
COMMON_PROPS = {
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "3",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "group.initial.rebalance.delay.ms": "0",
    "replica.lag.time.max.ms": "3000",
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "controller.quorum.election.timeout.ms": "1000",
    "controller.quorum.fetch.timeout.ms": "2000",
    "controller.quorum.request.timeout.ms": "2000",
    "min.insync.replicas": "2",
    "default.replication.factor": "3",
    "num.partitions": "3",
    "unclean.leader.election.enable": "false",
    "auto.create.topics.enable": "false",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "num.replica.fetchers": "1",
    "num.recovery.threads.per.data.dir": "1",
    "replica.socket.timeout.ms": "5000",
    "replica.fetch.wait.max.ms": "200",
    "controlled.shutdown.enable": "true",
    "log.message.timestamp.before.max.ms": str(2**63 - 1),
    "log.message.timestamp.after.max.ms": str(2**63 - 1),
}

CLIENT = "client"

# -- process bookkeeping ---------------------------------------------------------------
# Every process this module starts is in its own process group; all of them are killed
# at exit (atexit, and SIGTERM/SIGINT/SIGHUP turned into SystemExit so finally runs).
_STARTED = {}  # pid -> Popen
_STARTED_LOCK = threading.Lock()


def _die_with_parent():
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class _Spawner:
    """A thread that lives as long as the harness and forks for the threads that do not:
    PR_SET_PDEATHSIG follows the thread that forked, so a node started from a fault's
    thread (overlapping faults) would be killed when that thread ended."""

    def __init__(self):
        import queue
        self.requests = queue.Queue()
        threading.Thread(target=self._run, name="spawner", daemon=True).start()

    def _run(self):
        while True:
            args, done, forked = self.requests.get()
            try:
                done.append((_spawn_here(*args), None))
            except Exception as e:  # handed to the caller
                done.append((None, e))
            forked.set()

    def spawn(self, *args):
        done, forked = [], threading.Event()
        self.requests.put((args, done, forked))
        forked.wait()
        p, error = done[0]
        if error is not None:
            raise error
        return p


_SPAWNER = None
_SPAWNER_LOCK = threading.Lock()


def spawn(cmd, out_path, env=None, cwd=None):
    """Popen in a new process group, registered for kill-at-exit, dying with the harness
    (PR_SET_PDEATHSIG). From a thread other than the main one, the fork is done by a
    thread that lives as long as the harness."""
    global _SPAWNER
    if threading.current_thread() is threading.main_thread():
        return _spawn_here(cmd, out_path, env, cwd)
    with _SPAWNER_LOCK:
        if _SPAWNER is None:
            _SPAWNER = _Spawner()
    return _SPAWNER.spawn(cmd, out_path, env, cwd)


def _spawn_here(cmd, out_path, env=None, cwd=None):
    out = open(out_path, "ab")
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True, preexec_fn=_die_with_parent, env=env, cwd=cwd)
    out.close()
    with _STARTED_LOCK:
        _STARTED[p.pid] = p
    return p


def kill_proc(p, sig=signal.SIGKILL, wait=10):
    """Signal the process group of p (a group we created), then reap it."""
    if p is None:
        return
    try:
        os.killpg(p.pid, signal.SIGCONT)  # a stopped process does not act on SIGTERM
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass
    try:
        p.wait(wait)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(10)
    with _STARTED_LOCK:
        _STARTED.pop(p.pid, None)


def kill_all_started():
    with _STARTED_LOCK:
        procs = list(_STARTED.values())
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGCONT)
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            pass
    with _STARTED_LOCK:
        _STARTED.clear()


atexit.register(kill_all_started)


def exit_on_signals():
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, handler)


def free_port(avoid=()):
    """A free port below Linux's ephemeral range (32768-60999): a node restarted on it
    finds it free, since no outgoing connection takes it as its local port meanwhile."""
    while True:
        port = random.randrange(20000, 32000)
        if port in avoid:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


# -- who opened this connection? --------------------------------------------------------

def _socket_inode(peer_port, local_port):
    """Inode of the socket whose local port is peer_port and remote port local_port."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    lport = int(parts[1].rsplit(":", 1)[1], 16)
                    rport = int(parts[2].rsplit(":", 1)[1], 16)
                    if lport == peer_port and rport == local_port:
                        return parts[9]
        except OSError:
            pass
    return None


def _pid_holds_inode(pid, inode):
    target = "socket:[%s]" % inode
    fd_dir = "/proc/%d/fd" % pid
    try:
        for fd in os.listdir(fd_dir):
            try:
                if os.readlink(os.path.join(fd_dir, fd)) == target:
                    return True
            except OSError:
                pass
    except OSError:
        pass
    return False


# -- the proxy --------------------------------------------------------------------------

class ProxyNet:
    """All proxies, one asyncio loop in a daemon thread.

    Links are (src, dst, listener) with src a node id or CLIENT. `cut` is a set of such
    triples ('*' matches any listener); a connection is forwarded only while its link is
    not cut. mode 'reset' closes cut connections and accepts-then-closes new ones (peers
    see a connection reset at once); mode 'blackhole' holds them open without forwarding
    a byte (peers see requests time out), closing them at heal.
    """

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="proxy-loop", daemon=True)
        self.thread.start()
        self.proxies = {}  # (node, listener) -> dict(port, target, server)
        self.pid_of = {}  # node id -> pid (updated on each start)
        self.cuts = set()
        self.mode = "reset"
        self.conns = set()  # live connection records
        self.stats = {"accepted": 0, "refused": 0, "dropped": 0, "unknown_src": 0}

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def call(self, coro_fn, *args, timeout=10):
        fut = asyncio.run_coroutine_threadsafe(coro_fn(*args), self.loop)
        return fut.result(timeout)

    def add(self, node, listener, target_port):
        """Start a proxy for (node, listener) forwarding to target_port; return its port."""
        async def start():
            server = await asyncio.start_server(
                lambda r, w: self._handle(node, listener, r, w), "127.0.0.1", 0)
            return server
        server = self.call(start)
        port = server.sockets[0].getsockname()[1]
        self.proxies[(node, listener)] = {"port": port, "target": target_port, "server": server}
        return port

    def is_cut(self, src, dst, listener):
        if src == dst:
            return False
        return ((src, dst, listener) in self.cuts or (src, dst, "*") in self.cuts)

    def _identify(self, peer_port, proxy_port):
        inode = None
        for _ in range(3):
            inode = _socket_inode(peer_port, proxy_port)
            if inode:
                break
            time.sleep(0.005)
        if not inode:
            self.stats["unknown_src"] += 1
            return CLIENT
        for node, pid in list(self.pid_of.items()):
            if pid and _pid_holds_inode(pid, inode):
                return node
        return CLIENT

    async def _handle(self, node, listener, reader, writer):
        info = self.proxies[(node, listener)]
        peer = writer.get_extra_info("peername")
        src = await self.loop.run_in_executor(None, self._identify, peer[1], info["port"])
        rec = _Conn(src=src, dst=node, listener=listener, writers=[writer], tasks=[], held=False)
        if self.is_cut(src, node, listener):
            self.stats["refused"] += 1
            if self.mode == "blackhole":
                rec["held"] = True
                self.conns.add(rec)
            else:
                _abort(writer)
            return
        try:
            ur, uw = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", info["target"]), 5)
        except (OSError, asyncio.TimeoutError):
            _abort(writer)
            return
        if self.is_cut(src, node, listener):
            # Cut while connecting upstream: _apply did not see this connection (it is
            # registered below), so it is cut here, as it would have been at accept.
            self.stats["refused"] += 1
            _abort(uw)
            if self.mode == "blackhole":
                rec["held"] = True
                self.conns.add(rec)
            else:
                _abort(writer)
            return
        self.stats["accepted"] += 1
        rec["writers"].append(uw)
        self.conns.add(rec)
        rec["tasks"] = [asyncio.ensure_future(self._pump(reader, uw, rec)),
                        asyncio.ensure_future(self._pump(ur, writer, rec))]

    async def _pump(self, reader, writer, rec):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            if not rec["held"]:
                self._close(rec)

    def _close(self, rec):
        for w in rec["writers"]:
            _abort(w)
        for t in rec["tasks"]:
            t.cancel()
        self.conns.discard(rec)

    async def _apply(self, cuts, mode):
        self.cuts = set(cuts)
        self.mode = mode
        for rec in list(self.conns):
            if rec["held"]:
                if not self.is_cut(rec["src"], rec["dst"], rec["listener"]):
                    rec["held"] = False
                    self._close(rec)
                continue
            if self.is_cut(rec["src"], rec["dst"], rec["listener"]):
                self.stats["dropped"] += 1
                if mode == "blackhole":
                    rec["held"] = True
                    for t in rec["tasks"]:
                        t.cancel()
                else:
                    self._close(rec)

    def set_cuts(self, cuts, mode=None):
        self.call(self._apply, set(cuts), mode or self.mode)

    async def _retarget(self, node, listener, port):
        self.proxies[(node, listener)]["target"] = port
        for rec in list(self.conns):
            if rec["dst"] == node and rec["listener"] == listener:
                self._close(rec)

    def drop_node_conns(self, node):
        """Close every proxied connection to or from node (after it was killed)."""
        async def drop():
            for rec in list(self.conns):
                if node in (rec["src"], rec["dst"]):
                    rec["held"] = False
                    self._close(rec)
        self.call(drop)

    def close(self):
        async def stop():
            for rec in list(self.conns):
                rec["held"] = False
                self._close(rec)
            for p in self.proxies.values():
                p["server"].close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        try:
            self.call(stop)
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def proxy_self_test():
    """The partition proxy against loopback sockets, no node: a cut applied while the proxy
    is still connecting a new connection upstream must cut that connection too (it used to
    be registered only once connected, after the cut had been applied to the others, and
    was then forwarded through the cut for as long as it lived). Returns the failures."""
    failures = []
    for mode in ("reset", "blackhole"):
        net = ProxyNet()
        target = socket.socket()
        fillers, accepted, client = [], [], None
        try:
            target.bind(("127.0.0.1", 0))
            # Backlog 0 with a queued connection: the proxy's SYN is dropped and retried
            # about 1 s later, which holds its upstream connect open while the cut comes.
            target.listen(0)
            for _ in range(2):
                f = socket.socket()
                f.setblocking(False)
                f.connect_ex(target.getsockname())
                fillers.append(f)
            time.sleep(0.2)
            port = net.add(7, "PLAINTEXT", target.getsockname()[1])
            client = socket.create_connection(("127.0.0.1", port), timeout=5)
            client.sendall(b"sent-into-the-cut")
            time.sleep(0.4)  # identified, and connecting upstream
            net.set_cuts({(CLIENT, 7, "*")}, mode)
            # Accept everything queued: the fillers (silent), then the proxy's connection,
            # which must be closed without a byte, not forwarded.
            target.settimeout(0.1)
            got, ended = b"", False
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline and not got and not ended:
                try:
                    s, _ = target.accept()
                    s.settimeout(0.05)
                    accepted.append(s)
                except socket.timeout:
                    pass
                for s in accepted:
                    try:
                        data = s.recv(100)
                        got += data
                        ended |= not data
                    except socket.timeout:
                        pass
                    except OSError:
                        ended = True
            if b"sent-into-the-cut" in got:
                failures.append("proxy (%s): a connection still connecting upstream when the cut "
                                "came was forwarded through the cut" % mode)
                continue
            net.set_cuts(set())  # heal: a held connection is closed now
            client.settimeout(2)
            try:
                closed = client.recv(100) == b""
            except socket.timeout:
                closed = False
            except OSError:
                closed = True
            if not closed:
                failures.append("proxy (%s): a connection cut while connecting upstream was still "
                                "open after the heal" % mode)
        finally:
            for s in fillers + accepted + [target] + ([client] if client else []):
                s.close()
            net.close()
    for f in failures:
        print("proxy self-test FAILED: " + f)
    return failures

class _Conn(dict):
    """A proxied connection's record (a dict, hashable by identity)."""
    __hash__ = object.__hash__
    __eq__ = object.__eq__


def _abort(writer):
    try:
        writer.transport.abort()
    except Exception:
        pass


# -- Kafka wire: a bare Metadata request (readiness without any client library) ----------

def metadata_broker_ids(port, timeout=2.0):
    """Send Metadata v1 (no topics); return the list of broker ids in the answer."""
    body = struct.pack(">i", 0)  # topics: empty array
    client = b"sluice-cluster"
    header = struct.pack(">hhih", 3, 1, 7, len(client)) + client
    req = header + body
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(req)) + req)
        size = struct.unpack(">i", _recv_exact(s, 4))[0]
        resp = _recv_exact(s, size)
    pos = 4  # correlation id
    n = struct.unpack_from(">i", resp, pos)[0]
    pos += 4
    ids = []
    for _ in range(n):
        node_id = struct.unpack_from(">i", resp, pos)[0]
        pos += 4
        hlen = struct.unpack_from(">h", resp, pos)[0]
        pos += 2 + hlen + 4  # host, port
        rlen = struct.unpack_from(">h", resp, pos)[0]
        pos += 2 + max(rlen, 0)  # rack (nullable)
        ids.append(node_id)
    return ids


def _uvarint(buf, pos):
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def quorum_leader(port, timeout=3.0):
    """DescribeQuorum v0 (API 55, flexible) for __cluster_metadata-0, sent to a broker's
    port (the broker forwards it to the active controller); returns the Raft leader's id
    (-1 if none)."""
    client = b"sluice-cluster"
    header = struct.pack(">hhih", 55, 0, 9, len(client)) + client + b"\x00"
    topic = b"__cluster_metadata"
    body = (b"\x02" + bytes([len(topic) + 1]) + topic + b"\x02" + struct.pack(">i", 0)
            + b"\x00" + b"\x00" + b"\x00")
    req = header + body
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(req)) + req)
        size = struct.unpack(">i", _recv_exact(s, 4))[0]
        resp = _recv_exact(s, size)
    pos = 4  # correlation id
    _, pos = _uvarint(resp, pos)  # header tagged fields (assumed empty)
    err = struct.unpack_from(">h", resp, pos)[0]
    pos += 2
    if err:
        raise RuntimeError("DescribeQuorum error %d" % err)
    _n_topics, pos = _uvarint(resp, pos)
    name_len, pos = _uvarint(resp, pos)
    pos += name_len - 1
    _n_parts, pos = _uvarint(resp, pos)
    pos += 4  # partition index
    perr = struct.unpack_from(">h", resp, pos)[0]
    pos += 2
    if perr:
        raise RuntimeError("DescribeQuorum partition error %d" % perr)
    return struct.unpack_from(">i", resp, pos)[0]


def _recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return buf


def tcp_accepts(port, timeout=1.0):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


# -- nodes and the cluster ----------------------------------------------------------------

class Node:
    def __init__(self, node_id, roles, workdir):
        self.id = node_id
        self.roles = roles  # subset of ("broker", "controller")
        self.dir = os.path.join(workdir, "node%d" % node_id)
        self.data = os.path.join(self.dir, "data")
        self.config = os.path.join(self.dir, "server.properties")
        self.out = os.path.join(self.dir, "node.out")
        # Sluice's clock test hook (SLUICE_TEST_CLOCK_SKEW_FILE): milliseconds added to
        # the node's wall clock; see Cluster.jump_clock.
        self.skew_file = os.path.join(self.dir, "clock-skew-ms")
        self.proc = None
        self.paused = False
        self.real = {}  # listener -> real port
        self.proxy = {}  # listener -> proxy port

    @property
    def is_broker(self):
        return "broker" in self.roles

    @property
    def is_controller(self):
        return "controller" in self.roles

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n=30):
        try:
            with open(self.out, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return "(no output)"


class Cluster:
    def __init__(self, backend="kafka", topology="combined", workdir=None, keep=False,
                 start_timeout=180, extra_props=None):
        assert backend in ("kafka", "sluice"), backend
        assert topology in ("combined", "split"), topology
        self.backend = backend
        self.topology = topology
        self.keep = keep
        self.start_timeout = start_timeout
        self.extra_props = dict(extra_props or {})
        self.workdir = workdir or tempfile.mkdtemp(prefix="sluice-cluster-")
        os.makedirs(self.workdir, exist_ok=True)
        if topology == "combined":
            self.nodes = {i: Node(i, ("broker", "controller"), self.workdir) for i in (1, 2, 3)}
        else:
            self.nodes = {i: Node(i, ("controller",), self.workdir) for i in (1, 2, 3)}
            self.nodes.update({i: Node(i, ("broker",), self.workdir) for i in (4, 5, 6)})
        self.net = ProxyNet()
        self.cluster_id = _random_cluster_id()
        self.libs = None
        self.sluice_bin = None

    # -- layout
    @property
    def brokers(self):
        return [n for n in self.nodes.values() if n.is_broker]

    @property
    def controllers(self):
        return [n for n in self.nodes.values() if n.is_controller]

    def bootstrap(self, exclude=()):
        return ",".join("127.0.0.1:%d" % n.proxy["PLAINTEXT"]
                        for n in self.brokers if n.id not in exclude)

    def node_by_proxy_port(self, port):
        for n in self.nodes.values():
            if port in n.proxy.values():
                return n
        return None

    def _assign_ports(self):
        used = set()
        for n in self.nodes.values():
            for lst in (["PLAINTEXT"] if n.is_broker else []) + (["CONTROLLER"] if n.is_controller else []):
                p = free_port(used)
                used.add(p)
                n.real[lst] = p
                n.proxy[lst] = self.net.add(n.id, lst, p)
                used.add(n.proxy[lst])

    def _props(self, n):
        voters = ",".join("%d@127.0.0.1:%d" % (c.id, c.proxy["CONTROLLER"]) for c in self.controllers)
        listeners = ["%s://127.0.0.1:%d" % (l, n.real[l]) for l in ("PLAINTEXT", "CONTROLLER") if l in n.real]
        advertised = ["%s://127.0.0.1:%d" % (l, n.proxy[l]) for l in ("PLAINTEXT", "CONTROLLER") if l in n.proxy]
        props = {
            "node.id": str(n.id),
            "process.roles": ",".join(n.roles),
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(advertised),
            "controller.quorum.voters": voters,
            "log.dirs": n.data,
        }
        props.update(COMMON_PROPS)
        if self.backend == "sluice":
            # Sluice serves Prometheus metrics on metrics.listener (default 127.0.0.1:9404,
            # shared by every node on the host): give each node its own free port.
            if "metrics" not in n.real:
                n.real["metrics"] = free_port()
            props["metrics.listener"] = "127.0.0.1:%d" % n.real["metrics"]
        if not n.is_broker:
            props.pop("inter.broker.listener.name")
        props.update(self.extra_props)
        return props

    def _write_config(self, n):
        os.makedirs(n.dir, exist_ok=True)
        with open(n.config, "w") as f:
            for k, v in self._props(n).items():
                f.write("%s=%s\n" % (k, v))

    def _cmd(self, n):
        if self.backend == "kafka":
            return ["java", *JVM_FLAGS, "-cp", os.path.join(self.libs, "*"), "kafka.Kafka", n.config]
        return [self.sluice_bin, "server", "--config", n.config]

    def _prepare_backend(self):
        if self.backend == "kafka":
            out = subprocess.run([os.path.join(KAFKA_DIR, "fetch-kafka.sh")], check=True,
                                 stdout=subprocess.PIPE, text=True, timeout=1800).stdout
            self.libs = out.strip().splitlines()[-1]
        else:
            self.sluice_bin = os.environ.get("SLUICE_BIN") or os.path.join(ROOT, "target", "debug", "sluice")
            if not os.path.exists(self.sluice_bin):
                subprocess.run([os.path.join(ROOT, "compat", "build.sh")], cwd=ROOT, check=True, timeout=3600)

    def _format(self, n):
        if self.backend != "kafka":
            # Sluice stamps an empty log dir with a random cluster.id on first start and
            # accepts a meta.properties that is already there (as Kafka's format writes
            # it), so the harness writes one per node with the shared cluster id.
            os.makedirs(n.data, exist_ok=True)
            path = os.path.join(n.data, "meta.properties")
            if not os.path.exists(path):
                with open(path, "w") as f:
                    f.write("#\n#Written by the Sluice cluster harness\ncluster.id=%s\n"
                            "directory.id=%s\nnode.id=%d\nversion=1\n"
                            % (self.cluster_id, _random_cluster_id(), n.id))
            return
        r = subprocess.run(
            ["java", *JVM_FLAGS, "-cp", os.path.join(self.libs, "*"), "kafka.tools.StorageTool",
             "format", "--cluster-id", self.cluster_id, "--config", n.config, "--ignore-formatted"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("storage format of node %d failed:\n%s" % (n.id, r.stdout))

    # -- lifecycle
    def start(self):
        t0 = time.monotonic()
        self._prepare_backend()
        self._assign_ports()
        for n in self.nodes.values():
            self._write_config(n)
        # Formatting is one JVM each: run them side by side.
        errors = []
        threads = [threading.Thread(target=_collect, args=(errors, self._format, n), daemon=True)
                   for n in self.nodes.values()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(150)
        if errors:
            raise errors[0]
        for n in self.nodes.values():
            self.start_node(n.id, wait=False)
        self.wait_ready(timeout=self.start_timeout)
        log("cluster up (%s, %s, %d nodes) in %.1fs; bootstrap %s; work dir %s"
            % (self.backend, self.topology, len(self.nodes), time.monotonic() - t0,
               self.bootstrap(), self.workdir))
        return self

    def start_node(self, node_id, wait=True, timeout=90):
        """Start a node; with wait, until it is ready. A node that exits during startup
        is started again, as a supervisor would, until `timeout`: Kafka's broker gives up
        when no controller answers for a while (with two of three nodes down, under
        overlapping faults), and comes up once one does."""
        n = self.nodes[node_id]
        if n.alive():
            return
        deadline = time.monotonic() + timeout
        while True:
            self._spawn(n)
            if not wait:
                return
            try:
                self.wait_node_ready(n, max(1, deadline - time.monotonic()))
                return
            except RuntimeError:
                if n.alive() or time.monotonic() > deadline - 5:
                    raise
                print("[%s] node %d exited with %s during startup; starting it again"
                      % (time.strftime("%H:%M:%S"), n.id, n.proc.returncode), flush=True)
                time.sleep(1)

    def _spawn(self, n):
        self.net.drop_node_conns(n.id)
        env = None
        if self.backend == "sluice":
            env = dict(os.environ, SLUICE_TEST_CLOCK_SKEW_FILE=n.skew_file)
        n.proc = spawn(self._cmd(n), n.out, env=env)
        n.paused = False
        self.net.pid_of[n.id] = n.proc.pid

    def node_ready(self, n):
        if n.is_broker:
            try:
                ids = metadata_broker_ids(n.real["PLAINTEXT"])
            except (OSError, struct.error, ConnectionError):
                return False
            return n.id in ids
        return tcp_accepts(n.real["CONTROLLER"])

    def wait_node_ready(self, n, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not n.alive():
                raise RuntimeError("node %d exited with %s during startup:\n%s"
                                   % (n.id, n.proc.returncode if n.proc else None, n.log_tail()))
            if self.node_ready(n):
                return
            time.sleep(0.3)
        raise RuntimeError("node %d not ready in %ss:\n%s" % (n.id, timeout, n.log_tail()))

    def wait_ready(self, timeout=120):
        """Every node up, and every broker sees every broker registered."""
        deadline = time.monotonic() + timeout
        for n in self.nodes.values():
            self.wait_node_ready(n, max(1, deadline - time.monotonic()))
        want = sorted(b.id for b in self.brokers)
        while time.monotonic() < deadline:
            views = []
            for b in self.brokers:
                try:
                    views.append(sorted(metadata_broker_ids(b.real["PLAINTEXT"])))
                except (OSError, struct.error, ConnectionError):
                    views.append(None)
            if all(v == want for v in views):
                return
            time.sleep(0.3)
        raise RuntimeError("brokers do not all see each other in %ss: %s" % (timeout, views))

    def active_controller(self):
        """The Raft leader of the metadata quorum (DescribeQuorum through any live broker),
        or None."""
        for b in self.brokers:
            if b.alive() and not b.paused:
                try:
                    leader = quorum_leader(b.real["PLAINTEXT"])
                    return leader if leader >= 0 else None
                except (OSError, struct.error, RuntimeError, IndexError, ConnectionError):
                    continue
        return None

    def kill(self, node_id):
        n = self.nodes[node_id]
        if n.proc is not None:
            kill_proc(n.proc, signal.SIGKILL)
        n.proc = None
        n.paused = False
        self.net.pid_of.pop(node_id, None)
        self.net.drop_node_conns(node_id)

    def restart(self, node_id, timeout=90):
        self.kill(node_id)
        self.start_node(node_id, wait=True, timeout=timeout)

    @property
    def can_jump_clocks(self):
        """Only Sluice has the hook; Kafka's clock is the host's, shared by every node."""
        return self.backend == "sluice"

    def jump_clock(self, node_id, skew_ms):
        """Set node_id's wall clock to the host's plus skew_ms (0: back in step). The node
        reads the file every 100 ms; it keeps the skew across a restart until reset."""
        assert self.can_jump_clocks, "the clock hook is Sluice's"
        n = self.nodes[node_id]
        tmp = n.skew_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % skew_ms)
        os.replace(tmp, n.skew_file)
        time.sleep(0.3)  # two polls of the hook

    def pause(self, node_id):
        n = self.nodes[node_id]
        os.killpg(n.proc.pid, signal.SIGSTOP)
        n.paused = True

    def resume(self, node_id):
        n = self.nodes[node_id]
        if n.proc is not None and n.paused:
            os.killpg(n.proc.pid, signal.SIGCONT)
        n.paused = False

    # -- network faults
    def isolate(self, node_ids, clients=True, mode=None):
        """Cut every link into and out of each node in node_ids (both listeners), between
        it and every node outside the set; clients=True also cuts clients -> it."""
        node_ids = set(node_ids)
        cuts = set(self.net.cuts)
        others = [i for i in self.nodes if i not in node_ids]
        for x in node_ids:
            for o in others:
                cuts.add((x, o, "*"))
                cuts.add((o, x, "*"))
            if clients:
                cuts.add((CLIENT, x, "*"))
        self.net.set_cuts(cuts, mode)

    def cut(self, links, mode=None):
        """Add explicit (src, dst, listener) cuts."""
        self.net.set_cuts(set(self.net.cuts) | set(links), mode)

    def heal(self):
        self.net.set_cuts(set())

    def heal_all(self, timeout=120):
        """Heal the network, resume paused nodes, restart dead ones, wait for readiness."""
        self.heal()
        for n in self.nodes.values():
            self.resume(n.id)
            if self.can_jump_clocks and os.path.exists(n.skew_file):
                self.jump_clock(n.id, 0)
        for n in self.nodes.values():
            if not n.alive():
                self.start_node(n.id, wait=False)
        self.wait_ready(timeout)

    def stop(self, grace=10):
        """SIGTERM brokers first, then controllers (a broker's controlled shutdown needs a
        controller), each group bounded by `grace` seconds; SIGKILL whatever is left."""
        for group in ([n for n in self.nodes.values() if n.is_broker],
                      [n for n in self.nodes.values() if not n.is_broker]):
            live = [n for n in group if n.proc is not None]
            for n in live:
                try:
                    os.killpg(n.proc.pid, signal.SIGCONT)
                    os.killpg(n.proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + grace
            for n in live:
                try:
                    n.proc.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        for n in self.nodes.values():
            if n.proc is not None:
                kill_proc(n.proc, signal.SIGKILL)
                n.proc = None
        self.net.close()
        if not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)
        else:
            log("work dir kept: %s" % self.workdir)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.keep = True
            self.stop()
            raise

    def __exit__(self, exc_type, *exc):
        if exc_type is not None:
            self.keep = True
        self.stop()
        return False


def _collect(errors, fn, *args):
    try:
        fn(*args)
    except BaseException as e:
        errors.append(e)


def _random_cluster_id():
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


if __name__ == "__main__":
    # Smoke: start, print, wait for Enter or 60s, stop.
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="kafka")
    ap.add_argument("--topology", default="combined")
    ap.add_argument("--hold", type=float, default=5)
    a = ap.parse_args()
    exit_on_signals()
    with Cluster(a.backend, a.topology) as c:
        print(c.bootstrap())
        time.sleep(a.hold)
