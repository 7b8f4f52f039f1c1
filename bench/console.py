#!/usr/bin/env python3
"""The web console's page load times at scale (issue 23: "Pages load in under 200 ms for
1,000 topics and 10,000 partitions; the message browser streams, never loads a whole
partition"). A benchmark run by hand, not a timed test.

    bench/console.py                      # 1,000 topics x 10 partitions (2-4 minutes)
    bench/console.py --topics 100         # smaller
    bench/console.py --keep               # leave the server and its data dir running
    bench/console.py --sluice PATH        # another binary (default target/release/sluice)
    bench/console.py --interval-ms 100 --hold 300
                                          # fill the sampler's history (720 samples), then
                                          # RSS and the pages again

What it does:

1. Starts one release `sluice server` on free loopback ports with its own temporary data
   dir, the console (`--with-console`), the lag monitor (`--with-monitor`), the metrics
   listener, `console.sample.interval.ms=5000` (`--interval-ms`) and `num.partitions=P`.
2. Creates N topics (`bench-0000`...) of P partitions each, RF 1, in CreateTopics requests
   of 100 topics (confluent_kafka AdminClient), timing each request. Into `bench-0000`
   (the message browser's topic) it produces BROWSE_RECORDS records of ~90 bytes (key
   `k<i>`, JSON value); into every 10th other topic 10 records.
3. Groups (20 by default): 2 live consumer groups (`bench-live-0/1`, one member each,
   subscribed to 5 topics, auto-committing, polling in a thread throughout), 17
   offsets-only groups (`bench-group-NN`, offset 0 committed on all partitions of 5
   topics, so they lag where those topics hold records) and `bench-wide`, offsets-only,
   offset 0 committed on all partitions of 100 topics (1,000 partitions).
4. Waits until the sampler's snapshot covers every topic (`GET /topics` says "N topics
   shown") and reports how long after the last CreateTopics that was.
5. Sampler: polls `/` (every 200 ms, or a quarter of the interval) for four intervals and
   reads the snapshot's "read at" time (ms) as it advances. A refresh's duration is the
   gap between two snapshots minus the interval (the sampler sleeps the interval between
   refreshes). Also the server's CPU seconds between two snapshots (the whole server:
   broker, monitor, console).
6. Pages: REPS (20) GETs of each page, one at a time, a new connection each (wall time
   from connect to the last byte of the body), after one untimed GET: min / median /
   p95 / max, and the body size.
7. The message browser on `bench-0000`: `/api/topics/bench-0000/messages?from=earliest
   &limit=100`, `limit=1000` (the most a browse returns), `from=latest` (100 per
   partition) and a `value=` filter that matches nothing (it stops at the scan bound of
   10,000 records): time to the response headers, to the first record line, to the end;
   records; the server's RSS before and after.
8. The CPU seconds other processes on the machine used while 6 and 7 ran (from
   /proc/stat), so that a busy machine shows in the report.
9. With `--hold S`: the server samples on for S seconds (RSS every 30 s), then 6 again
   for the pages that read the sampler's history, and 5.

The table goes to stdout, a results.json to the work dir (kept, with the server's log,
only with --keep).
"""
import argparse
import calendar
import http.client
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "compat", "lib"))
from ports import free_ports  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print("# " + msg, file=sys.stderr, flush=True)


def wait_until(what, fn, timeout, interval=0.2):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = fn()
            if last:
                return last
        except (OSError, http.client.HTTPException, ValueError) as e:
            last = e
        time.sleep(interval)
    raise RuntimeError("%s: not within %ss (last: %r)" % (what, timeout, last))


def rss_kib(pid):
    """(VmRSS, VmHWM) of a process, KiB."""
    values = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0])
    return values["VmRSS"], values["VmHWM"]


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def machine_busy_seconds():
    """CPU seconds all processors spent busy since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / TICK


def others_meter(pid):
    """A function giving the CPU seconds used by processes other than the server and
    this script since the meter was made, and the seconds elapsed."""
    def snap():
        mine = os.times()
        return (machine_busy_seconds(), cpu_seconds(pid), mine.user + mine.system,
                time.time())
    start = snap()

    def read():
        now = snap()
        return (now[0] - start[0]) - (now[1] - start[1]) - (now[2] - start[2]), now[3] - start[3]
    return read


def pct(values, p):
    """The p-th percentile, nearest rank."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-p * len(ordered) // 100))))
    return ordered[rank - 1]


class Server:
    def __init__(self, binary, work, partitions, interval_ms):
        self.work = work
        kafka, controller, console, monitor, metrics = free_ports(5)
        self.bootstrap = "127.0.0.1:%d" % kafka
        self.log_path = os.path.join(work, "server.log")
        cmd = [
            binary, "server",
            "--set", "log.dirs=" + os.path.join(work, "data"),
            "--set", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
            % (kafka, controller),
            "--set", "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % kafka,
            "--set", "controller.quorum.voters=1@127.0.0.1:%d" % controller,
            "--set", "group.initial.rebalance.delay.ms=0",
            "--set", "num.partitions=%d" % partitions,
            "--with-console", "--console-listen", "127.0.0.1:%d" % console,
            "--with-monitor", "--monitor-listen", "127.0.0.1:%d" % monitor,
            "--set", "metrics.listener=127.0.0.1:%d" % metrics,
            "--set", "console.sample.interval.ms=%d" % interval_ms,
        ]
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdout=open(self.log_path, "w"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid
        self.console_port = console

        def console_up():
            if self.proc.poll() is not None:
                sys.exit("the server exited:\n" + self.tail())
            return "console on http://" in open(self.log_path).read()

        wait_until("the console", console_up, 60)

    def tail(self, n=30):
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-n:])

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.proc.wait()

    # ---- HTTP ------------------------------------------------------------------------
    def get(self, path, timeout=120):
        """(status, body bytes, seconds from connect to the last byte)."""
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", self.console_port, timeout=timeout)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            body = response.read()
        finally:
            conn.close()
        return response.status, body, time.perf_counter() - started

    def stream(self, path, timeout=120):
        """A streamed NDJSON answer: seconds to the headers, to the first record line, to
        the end; the lines."""
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", self.console_port, timeout=timeout)
        first_record = None
        lines = []
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            headers_at = time.perf_counter() - started
            if response.status != 200:
                raise RuntimeError("%s: %d %s" % (path, response.status, response.read()[:500]))
            while True:
                line = response.readline()
                if not line:
                    break
                if first_record is None and line.startswith(b'{"record"'):
                    first_record = time.perf_counter() - started
                lines.append(line)
        finally:
            conn.close()
        return headers_at, first_record, time.perf_counter() - started, lines


# ---- the cluster's contents ------------------------------------------------------------
def topic_name(i):
    return "bench-%04d" % i


def create_topics(admin, n, partitions):
    from confluent_kafka.admin import NewTopic
    names = [topic_name(i) for i in range(n)]
    batches = []
    for start in range(0, n, 100):
        t0 = time.perf_counter()
        batch = [NewTopic(t, partitions, 1) for t in names[start:start + 100]]
        futures = admin.create_topics(batch, operation_timeout=120, request_timeout=180)
        for name, future in futures.items():
            future.result(240)
        batches.append(time.perf_counter() - t0)
        log("created %d/%d topics (this request of %d: %.1f s)"
            % (min(start + 100, n), n, len(batch), batches[-1]))
    return names, batches


def produce(bootstrap, names, browse_records):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "queue.buffering.max.messages": 1_000_000, "acks": 1,
                  "log.connection.close": False})
    pad = "x" * 40
    for i in range(browse_records):
        while True:
            try:
                p.produce(names[0], key=b"k%d" % i,
                          value=b'{"id":%d,"name":"record-%09d","pad":"%s"}' % (i, i, pad.encode()))
                break
            except BufferError:
                p.poll(0.05)
        if i % 10_000 == 0:
            p.poll(0)
    for t in names[10::10]:
        for i in range(10):
            p.produce(t, key=b"k%d" % i, value=b'{"n":%d}' % i)
    left = p.flush(120)
    if left:
        raise RuntimeError("%d records not delivered" % left)


def commit_groups(bootstrap, admin, names, partitions, groups):
    """Offsets-only groups: offset 0 committed on every partition of 5 topics each; one
    of them (bench-wide) on 100 topics."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    made = []
    for g in range(groups):
        if g == groups - 1:
            group, topics = "bench-wide", names[:100]
        else:
            group = "bench-group-%02d" % g
            topics = [names[(g * 5 + k) % len(names)] for k in range(5)]
        tps = [TopicPartition(t, p, 0) for t in topics for p in range(partitions)]
        # On a fresh server the first commits can come back with COORDINATOR_LOAD_IN_PROGRESS
        # or NOT_COORDINATOR per partition (__consumer_offsets is being created), which
        # librdkafka's AlterConsumerGroupOffsets reports without retrying.
        for attempt in range(60):
            futures = admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group, tps)])
            errors = set()
            for future in futures.values():
                errors |= {tp.error for tp in future.result(60).topic_partitions if tp.error}
            if not errors:
                break
            if not all(e.retriable() or e.name() in ("COORDINATOR_LOAD_IN_PROGRESS",
                                                     "NOT_COORDINATOR",
                                                     "COORDINATOR_NOT_AVAILABLE")
                       for e in errors):
                raise RuntimeError("committing %s: %s" % (group, errors))
            time.sleep(0.5)
        else:
            raise RuntimeError("committing %s: still %s after 30 s" % (group, errors))
        made.append(group)
    return made


class LiveGroup:
    """One KafkaConsumer member in its own group, subscribed, committing, polling in a
    thread until stopped."""

    def __init__(self, bootstrap, group, topics):
        from confluent_kafka import Consumer
        self.group = group
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                  "auto.offset.reset": "earliest", "enable.auto.commit": True,
                                  "auto.commit.interval.ms": 1000,
                                  "log.connection.close": False})
        self.consumer.subscribe(topics)
        self.assigned = threading.Event()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping.is_set():
            self.consumer.poll(0.5)
            if self.consumer.assignment():
                self.assigned.set()
        self.consumer.close()

    def stop(self):
        self.stopping.set()
        self.thread.join(30)


# ---- measurements ----------------------------------------------------------------------
READ_AT = re.compile(r"read at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC")
SHOWN = re.compile(r"<p>(\d+) topics shown")


def read_at_ms(html):
    m = READ_AT.search(html)
    if not m:
        return None
    t = time.strptime(m.group(1)[:19], "%Y-%m-%d %H:%M:%S")
    return calendar.timegm(t) * 1000 + int(m.group(1)[20:23])


def topics_shown(server):
    status, body, _ = server.get("/topics")
    m = SHOWN.search(body.decode("utf-8", "replace"))
    return int(m.group(1)) if status == 200 and m else None


def sampler_refreshes(server, interval_ms, intervals):
    """Snapshot times seen on the Overview while polling it for `intervals` intervals;
    (refresh durations in s, server CPU s per refresh)."""
    seen = []
    deadline = time.time() + intervals * interval_ms / 1000 + 1
    while time.time() < deadline or len(seen) < 3:
        _, body, _ = server.get("/")
        t = read_at_ms(body.decode("utf-8", "replace"))
        if t is not None and (not seen or t != seen[-1][0]):
            seen.append((t, time.time(), cpu_seconds(server.pid)))
        time.sleep(min(0.2, interval_ms / 4000))
        if time.time() > deadline + 6 * interval_ms / 1000:
            break
    durations = [(b[0] - a[0] - interval_ms) / 1000 for a, b in zip(seen, seen[1:])]
    cpu = [(b[2] - a[2]) for a, b in zip(seen, seen[1:])]
    return durations, cpu


def time_page(server, path, reps):
    status, body, _ = server.get(path)  # untimed: warms any cache on the way
    if status != 200:
        raise RuntimeError("%s: %d %s" % (path, status, body[:500]))
    times = []
    for _ in range(reps):
        status, body, seconds = server.get(path)
        if status != 200:
            raise RuntimeError("%s: %d" % (path, status))
        times.append(seconds * 1000)
    return {"path": path, "ms": times, "bytes": len(body),
            "min": min(times), "median": statistics.median(times),
            "p95": pct(times, 95), "max": max(times)}


def time_browse(server, path, reps):
    runs = []
    for _ in range(reps):
        rss_before = rss_kib(server.pid)[0]
        headers, first, total, lines = server.stream(path)
        rss_after, hwm = rss_kib(server.pid)
        records = sum(1 for line in lines if line.startswith(b'{"record"'))
        end = json.loads(lines[-1]).get("end", {}) if lines else {}
        runs.append({"headers_ms": headers * 1000,
                     "first_record_ms": None if first is None else first * 1000,
                     "total_ms": total * 1000, "records": records,
                     "bytes": sum(len(line) for line in lines),
                     "scanned": end.get("scanned"), "reason": end.get("reason"),
                     "rss_before_kib": rss_before, "rss_after_kib": rss_after,
                     "hwm_kib": hwm})
    return {"path": path, "runs": runs}


def hold(server, args, browsed, topic):
    """The server left to sample for `--hold` seconds (its history of end offsets and
    committed offsets grows up to console.sample.history samples), its RSS every 30 s,
    then the pages that read that history timed again."""
    started = time.time()
    rss = []
    while time.time() - started < args.hold:
        time.sleep(min(30, args.hold - (time.time() - started)))
        rss.append((time.time() - started, rss_kib(server.pid)[0]))
        log("held %.0f s: RSS %.1f MiB" % (rss[-1][0], rss[-1][1] / 1024))
    pages = []
    for path, label in [("/", "Overview"), ("/topics", "Topics (all)"),
                        ("/topics/" + browsed, "Topic " + browsed),
                        ("/topics/" + topic, "Topic " + topic),
                        ("/groups", "Consumer groups"),
                        ("/groups/bench-wide", "Group bench-wide (1,000 partitions)")]:
        r = time_page(server, path, args.reps)
        r["label"] = label
        pages.append(r)
        log("after the hold: %-40s median %7.1f ms  p95 %7.1f ms"
            % (label, r["median"], r["p95"]))
    durations, cpu = sampler_refreshes(server, args.interval_ms, 4)
    return {"rss": rss, "pages": pages, "sampler_refresh_s": durations, "sampler_cpu_s": cpu,
            "rss_end_kib": rss_kib(server.pid)[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--groups", type=int, default=20)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--browse-records", type=int, default=200_000)
    ap.add_argument("--interval-ms", type=int, default=5000)
    ap.add_argument("--sluice", default=os.path.join(ROOT, "target", "release", "sluice"))
    ap.add_argument("--hold", type=int, default=0, metavar="SECONDS",
                    help="then let the sampler run this long and time the pages again")
    ap.add_argument("--keep", action="store_true",
                    help="leave the server running and its data dir in place")
    args = ap.parse_args()
    if args.topics < 1 or args.partitions < 1 or args.groups < 3:
        sys.exit("--topics and --partitions at least 1, --groups at least 3")
    if not os.access(args.sluice, os.X_OK):
        sys.exit("%s: not built (nice -n 19 cargo build --release)" % args.sluice)
    from confluent_kafka.admin import AdminClient

    work = tempfile.mkdtemp(prefix="bench-console-")
    log("work dir " + work)
    server = Server(args.sluice, work, args.partitions, args.interval_ms)
    log("server pid %d, console on http://127.0.0.1:%d/" % (server.pid, server.console_port))
    results = {"args": vars(args), "cmd": server.cmd, "started": time.strftime(
        "%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    live = []
    admin = None
    try:
        admin = AdminClient({"bootstrap.servers": server.bootstrap, "log.connection.close": False})
        results["rss_empty_kib"] = rss_kib(server.pid)[0]

        t0 = time.perf_counter()
        names, batches = create_topics(admin, args.topics, args.partitions)
        created = time.perf_counter()
        results["create_s"] = created - t0
        results["create_batches_s"] = batches
        log("%d topics in %.1f s; waiting for the sampler" % (args.topics, created - t0))
        wait_until("the sampler's snapshot of every topic",
                   lambda: topics_shown(server) == args.topics, 300, 0.1)
        results["snapshot_after_create_s"] = time.perf_counter() - created
        log("snapshot covers %d topics %.1f s after the last CreateTopics"
            % (args.topics, results["snapshot_after_create_s"]))

        t0 = time.perf_counter()
        produce(server.bootstrap, names, args.browse_records)
        results["produce_s"] = time.perf_counter() - t0
        log("produced %d records in %.1f s" % (args.browse_records, results["produce_s"]))

        live_topics = [names[(k * 7 + 3) % len(names)] for k in range(5)]
        for g in range(2):
            live.append(LiveGroup(server.bootstrap, "bench-live-%d" % g, live_topics))
        groups = commit_groups(server.bootstrap, admin, names, args.partitions, args.groups - 2)
        for member in live:
            if not member.assigned.wait(60):
                raise RuntimeError("%s: no assignment in 60 s" % member.group)
        log("%d groups; letting the sampler take two more snapshots" % (len(groups) + len(live)))
        time.sleep(2 * args.interval_ms / 1000 + 1)

        results["rss_loaded_kib"] = rss_kib(server.pid)[0]
        durations, cpu = sampler_refreshes(server, args.interval_ms, 4)
        results["sampler_refresh_s"] = durations
        results["sampler_cpu_s"] = cpu
        log("sampler refreshes: %s s" % ", ".join("%.2f" % d for d in durations))

        others = others_meter(server.pid)
        topic = names[min(500, len(names) - 1)]
        pages = [
            ("/", "Overview"),
            ("/topics", "Topics (all)"),
            ("/topics?q=bench-00", "Topics, search 'bench-00'"),
            ("/topics/" + names[0], "Topic %s (%s records)"
             % (names[0], format(args.browse_records, ","))),
            ("/topics/" + topic, "Topic %s" % topic),
            ("/topics/%s/messages" % names[0], "Message browser page"),
            ("/groups", "Consumer groups"),
            ("/groups/bench-live-0", "Group bench-live-0 (1 member, 5 topics)"),
            ("/groups/bench-group-00", "Group bench-group-00 (offsets only, 5 topics)"),
            ("/groups/bench-wide", "Group bench-wide (offsets only, 1,000 partitions)"),
            ("/plan?target=100MB/s", "Planner, target=100MB/s"),
            ("/plan?target=100MB/s&topic=" + names[0], "Planner, beside a topic"),
        ]
        results["pages"] = []
        for path, label in pages:
            r = time_page(server, path, args.reps)
            r["label"] = label
            results["pages"].append(r)
            log("%-50s median %7.1f ms  p95 %7.1f ms  %d B"
                % (label, r["median"], r["p95"], r["bytes"]))

        base = "/api/topics/%s/messages?" % urllib.parse.quote(names[0])
        browses = [
            ("from=earliest&limit=100", "from earliest, limit 100"),
            ("from=earliest&limit=1000", "from earliest, limit 1000 (the most)"),
            ("from=latest&limit=100", "from latest, limit 100 per partition"),
            ("from=earliest&limit=100&value=no-such-value", "filter matching nothing"),
        ]
        results["browse"] = []
        for query, label in browses:
            r = time_browse(server, base + query, max(3, args.reps // 4))
            r["label"] = label
            results["browse"].append(r)
            runs = r["runs"]
            first = runs[-1]["first_record_ms"]
            log("browse %-40s first record %s ms, total %.0f ms, %d records, scanned %s"
                % (label, "-" if first is None else "%.1f" % first, runs[-1]["total_ms"],
                   runs[-1]["records"], runs[-1]["scanned"]))
        results["others_cpu_s"], results["measured_s"] = others()
        results["rss_end_kib"], results["hwm_end_kib"] = rss_kib(server.pid)
        if args.hold:
            results["hold"] = hold(server, args, names[0], topic)
        results["data_bytes"] = int(subprocess.run(
            ["du", "-sb", os.path.join(work, "data")], capture_output=True,
            text=True).stdout.split()[0])
    except BaseException:
        log("server log:\n" + server.tail())
        log("the work dir stays for a look: " + work)
        raise
    finally:
        for member in live:
            member.stop()
        admin = None  # its connections close before the server stops
        if not args.keep:
            server.stop()
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    report(results, args)
    if args.keep:
        log("kept: server pid %d (kill %d), console http://127.0.0.1:%d/, dir %s"
            % (server.pid, server.pid, server.console_port, work))
    else:
        shutil.rmtree(work, ignore_errors=True)


def report(r, args):
    mib = lambda kib: kib / 1024  # noqa: E731
    print()
    print("%d topics x %d partitions = %d partitions, %d groups, %d records in the browsed "
          "topic; %d GETs per page" % (args.topics, args.partitions,
                                       args.topics * args.partitions, args.groups,
                                       args.browse_records, args.reps))
    print()
    print("| page | min ms | median ms | p95 ms | max ms | body |")
    print("|---|---:|---:|---:|---:|---:|")
    for p in r["pages"]:
        print("| `%s` (%s) | %.1f | %.1f | %.1f | %.1f | %s B |"
              % (p["path"], p["label"], p["min"], p["median"], p["p95"], p["max"],
                 format(p["bytes"], ",")))
    print()
    print("| message browser (`%s`) | headers ms | first record ms | total ms | records "
          "| scanned | ended by | RSS before → after MiB |" % "bench-0000")
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    for b in r["browse"]:
        runs = b["runs"]
        med = lambda k: statistics.median(x[k] for x in runs if x[k] is not None)  # noqa: E731
        firsts = [x["first_record_ms"] for x in runs if x["first_record_ms"] is not None]
        print("| %s | %.1f | %s | %.1f | %d | %s | %s | %.1f → %.1f |"
              % (b["label"], med("headers_ms"),
                 "%.1f" % statistics.median(firsts) if firsts else "—",
                 med("total_ms"), runs[-1]["records"], runs[-1]["scanned"],
                 runs[-1]["reason"], mib(runs[0]["rss_before_kib"]),
                 mib(runs[-1]["rss_after_kib"])))
    print("(medians of %d runs each)" % len(r["browse"][0]["runs"]))
    print()
    d = r["sampler_refresh_s"]
    print("sampler refresh: %s s (snapshot gaps minus the %d ms interval); server CPU per "
          "interval: %s s" % (", ".join("%.2f" % x for x in d), args.interval_ms,
                              ", ".join("%.2f" % x for x in r["sampler_cpu_s"])))
    print("CreateTopics of %d topics: %.1f s (requests of 100 topics: %s s); the console's "
          "/topics showed all of them %.1f s after the last"
          % (args.topics, r["create_s"], ", ".join("%.1f" % b for b in r["create_batches_s"]),
             r["snapshot_after_create_s"]))
    print("other processes on this machine used %.1f CPU s during the %.0f s of page and "
          "browse timings (%d processors)" % (max(0.0, r["others_cpu_s"]), r["measured_s"],
                                              os.cpu_count()))
    print("server RSS: %.1f MiB empty, %.1f MiB loaded, %.1f MiB at the end (peak %.1f MiB); "
          "data dir %.1f MiB" % (mib(r["rss_empty_kib"]), mib(r["rss_loaded_kib"]),
                                 mib(r["rss_end_kib"]), mib(r["hwm_end_kib"]),
                                 r["data_bytes"] / 2**20))

    h = r.get("hold")
    if h:
        print()
        print("After --hold %d s (RSS every 30 s: %s MiB):" % (
            args.hold, ", ".join("%.0f" % (k / 1024) for _, k in h["rss"])))
        print()
        print("| page | min ms | median ms | p95 ms | max ms | body |")
        print("|---|---:|---:|---:|---:|---:|")
        for p in h["pages"]:
            print("| `%s` | %.1f | %.1f | %.1f | %.1f | %s B |"
                  % (p["path"], p["min"], p["median"], p["p95"], p["max"],
                     format(p["bytes"], ",")))
        print()
        print("sampler refresh: %s s; server CPU per interval: %s s; RSS at the end %.1f MiB"
              % (", ".join("%.2f" % x for x in h["sampler_refresh_s"]),
                 ", ".join("%.2f" % x for x in h["sampler_cpu_s"]), mib(h["rss_end_kib"])))


if __name__ == "__main__":
    main()
