#!/usr/bin/env python3
"""Burrow-compatible lag monitoring, judged on real brokers with real clients.

Scenarios (one group and one topic each, run side by side, committed offsets written by
librdkafka through confluent-kafka) must reach the status Burrow's rules give them:

  healthy   commits the log end offset every interval             -> OK
  lagging   commits advance slower than the producer writes        -> WARN
  stopped   commits with lag, then none                             -> STOP
  stuck     commits one offset again and again while lag grows      -> STALL
  rewound   commits 10, 20, 30, then 5 again and again              -> REWIND
  deleted   commits, then the group is deleted (DeleteGroups)       -> gone (404, unlisted)

on Sluice (`sluice server --with-monitor`) and on Apache Kafka 4.1 (`sluice monitor
--config`, standalone). On Sluice also:
  - the http notifier posts an open to a webhook and a close (DELETE) when the group
    recovers; the webhook is down at first (retried, nothing lost); the email notifier
    delivers the open to a local SMTP server (aiosmtpd);
  - the lag metrics are on the node's /metrics (kafka_consumergroup_lag, Burrow's status);
  - `sluice group lag` prints Burrow's view, from the monitor and one-shot;
  - a deleted topic leaves the monitor's topics and the group's partitions;
  - bad input: a malformed config names its key; an unreachable cluster keeps the API up
    (ready: STARTING) without crashing.

    python3 compat/monitor/check.py [--backend sluice|kafka|both] [--keep]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "compat", "lib"))
sys.path.insert(0, os.path.join(ROOT, "compat", "kafka"))
from ports import free_ports  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

SLUICE = os.path.join(ROOT, "target", "debug", "sluice")
INTERVAL = 1.2  # between commits: above the storage's min-distance of 1 s
WAIT = 40  # seconds a scenario may take to show its status

failures = []
started = []


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ((": " + detail) if detail and not ok else ""), flush=True)
    if not ok:
        failures.append(name)
    return ok


def http(method, url, timeout=5):
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        return None, str(error)


def spawn(cmd, log_path):
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    started.append(proc)
    return proc


def stop_all():
    for proc in started:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def wait_until(what, predicate, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit(f"timed out after {timeout}s waiting for {what}")


# --- the things notifiers talk to -------------------------------------------------------

class Webhook:
    """A webhook receiver that records every request; bound only when `start` is called,
    so the notifier first finds it down."""

    def __init__(self, port):
        self.port = port
        self.requests = []
        self.server = None

    def start(self):
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def _record(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode(errors="replace")
                hook.requests.append((self.command, self.path, body))
                self.send_response(200)
                self.end_headers()

            do_POST = do_DELETE = do_PUT = _record

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        if self.server:
            self.server.shutdown()


def start_smtp(port):
    from aiosmtpd.controller import Controller

    class Handler:
        def __init__(self):
            self.messages = []

        async def handle_DATA(self, server, session, envelope):
            self.messages.append((envelope.mail_from, list(envelope.rcpt_tos),
                                  envelope.content.decode(errors="replace")))
            return "250 OK"

    handler = Handler()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    return controller, handler


# --- scenarios --------------------------------------------------------------------------

class Scenarios:
    """Drives one producer and one committing client per scenario on `bootstrap`."""

    NAMES = ["healthy", "lagging", "stopped", "stuck", "rewound", "deleted"]
    # Subscribed members (not only commits): owners come from the group's membership
    # records, classic (GroupMetadata) and KIP-848 (ConsumerGroup*) alike.
    MEMBERS = {"classic-members": "classic", "kip848-members": "consumer"}

    def __init__(self, bootstrap, api, cluster, extra=()):
        self.bootstrap = bootstrap
        self.api = api
        self.cluster = cluster
        self.names = list(self.NAMES) + list(self.MEMBERS) + list(extra)
        self.stop = threading.Event()
        self.watching = threading.Event()
        self.threads = []
        self.phase = {}

    def topic(self, name):
        return "lag-" + name

    def create_topics(self, extra=()):
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        topics = [NewTopic(self.topic(n), 1, 1) for n in self.names] + [NewTopic(t, 1, 1) for t in extra]
        for topic, future in admin.create_topics(topics).items():
            future.result()

    def produce(self):
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        while not self.stop.is_set():
            for name in self.names:
                for _ in range(4):
                    producer.produce(self.topic(name), b"x" * 16)
            producer.poll(0)
            time.sleep(0.2)  # 20 records per second per topic
        producer.flush(10)

    def committer(self, group):
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group,
                             "enable.auto.commit": False})
        return consumer

    def end(self, consumer, name):
        _, high = consumer.get_watermark_offsets(TopicPartition(self.topic(name), 0), timeout=5, cached=False)
        return high

    def commit(self, consumer, name, offset):
        consumer.commit(offsets=[TopicPartition(self.topic(name), 0, offset)], asynchronous=False)

    def run(self, name, body):
        def wrapped():
            consumer = self.committer(name)
            try:
                body(consumer)
            finally:
                consumer.close()
        thread = threading.Thread(target=wrapped, name=name, daemon=True)
        thread.start()
        self.threads.append(thread)

    def pace(self):
        return not self.stop.wait(INTERVAL)

    def healthy(self, consumer):
        while self.pace():
            self.commit(consumer, "healthy", self.end(consumer, "healthy"))

    def lagging(self, consumer):
        offset = 0
        while self.pace():
            offset += 5  # 5 per interval against the producer's ~24
            self.commit(consumer, "lagging", offset)

    def stopped(self, consumer):
        for offset in (5, 10, 15, 20):
            self.commit(consumer, "stopped", offset)
            if not self.pace():
                return

    def stuck(self, consumer):
        while self.pace():
            self.commit(consumer, "stuck", 5)

    def rewound(self, consumer):
        # Advances until the checker watches (a rewind is visible only while the window
        # still holds an offset above the new one: `intervals` commits).
        offset = 0
        while not self.watching.is_set() or offset < 30:
            offset += 10
            self.commit(consumer, "rewound", offset)
            if not self.pace():
                return
        while self.pace():
            self.commit(consumer, "rewound", 5)

    def deleted(self, consumer):
        for offset in (5, 10, 15):
            self.commit(consumer, "deleted", offset)
            if not self.pace():
                return

    def notify(self, consumer):
        """Lags (WARN) until told to recover, then commits the end (OK)."""
        offset = 0
        while self.phase.get("notify") != "recover" and self.pace():
            offset += 2
            self.commit(consumer, "notify", offset)
        while self.pace():
            self.commit(consumer, "notify", self.end(consumer, "notify"))

    def member(self, group, protocol):
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group,
                             "group.protocol": protocol, "client.id": group + "-app",
                             "auto.offset.reset": "earliest", "enable.auto.commit": True,
                             "auto.commit.interval.ms": 1000}
                            # Session settings are the broker's under KIP-848 (librdkafka
                            # refuses them with group.protocol=consumer).
                            | ({"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000}
                               if protocol == "classic" else {}))
        consumer.subscribe([self.topic(group)])
        try:
            while not self.stop.is_set():
                consumer.poll(0.2)
        finally:
            consumer.close()

    def start(self):
        threading.Thread(target=self.produce, daemon=True).start()
        time.sleep(1.5)  # log end offsets above the offsets the scenarios commit
        for name in self.names:
            if name in self.MEMBERS:
                thread = threading.Thread(target=self.member, args=(name, self.MEMBERS[name]), daemon=True)
                thread.start()
                self.threads.append(thread)
            else:
                self.run(name, getattr(self, name))

    def status(self, group):
        code, body = http("GET", f"{self.api}/v3/kafka/{self.cluster}/consumer/{group}/lag")
        try:
            return code, json.loads(body)
        except ValueError:
            return code, {"raw": body}

    def wait_status(self, group, expected, timeout=WAIT):
        """Waits for the scenario's partition to have status `expected` (a group's own
        status is its worst partition's, capped at ERR, as in Burrow)."""
        seen = []
        deadline = time.time() + timeout
        while time.time() < deadline:
            code, body = self.status(group)
            partitions = body.get("status", {}).get("partitions", [])
            mine = next((p for p in partitions if p["topic"] == self.topic(group)), None)
            status = mine["status"] if mine else body.get("status", {}).get("status")
            if not seen or seen[-1] != status:
                seen.append(status)
            if status == expected:
                return body["status"]
            time.sleep(0.3)
        check(f"{group}: status {expected}", False,
              f"saw {seen}; last answer {json.dumps(self.status(group)[1])[:1500]}")
        return None


def offsets_records(bootstrap, group):
    """(partition, offset, key type, value length or None) of the records in
    __consumer_offsets whose key names `group`: what a failure report needs."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "check-reader",
                       "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    reader.assign([TopicPartition("__consumer_offsets", p, 0) for p in range(50)])
    found, idle, deadline = [], 0, time.time() + 15
    while idle < 5 and time.time() < deadline:
        message = reader.poll(0.5)
        if message is None or message.error():
            idle += 1
            continue
        idle = 0
        key = message.key() or b""
        if group in key:
            value = message.value()
            found.append((message.partition(), message.offset(), int.from_bytes(key[:2], "big"),
                          None if value is None else len(value)))
    reader.close()
    return found


def scenario_checks(sc, label):
    """Each scenario's status, checked against the window Burrow's rule read."""
    expectations = [("healthy", "OK"), ("lagging", "WARN"), ("stuck", "STALL"), ("rewound", "REWIND"),
                    ("stopped", "STOP")]
    results = {}
    threads = []
    sc.watching.set()

    def watch(group, expected):
        results[group] = sc.wait_status(group, expected)

    for group, expected in expectations:
        thread = threading.Thread(target=watch, args=(group, expected))
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    for group, expected in expectations:
        status = results.get(group)
        if status is None:
            continue
        partition = next((p for p in status["partitions"] if p["topic"] == sc.topic(group)), None)
        detail = json.dumps(status)[:800]
        if expected == "OK":
            ok = partition is not None and partition["status"] == "OK"
        elif expected == "WARN":
            ok = partition["status"] == "WARN" and partition["end"]["offset"] > partition["start"]["offset"]
        elif expected == "STALL":
            ok = partition["status"] == "STALL" and partition["end"]["offset"] == partition["start"]["offset"] == 5
        elif expected == "REWIND":
            ok = partition["status"] == "REWIND" and partition["end"]["offset"] == 5
        else:
            ok = partition["status"] == "STOP" and partition["end"]["offset"] == 20
        capped = {"OK": "OK", "WARN": "WARN"}.get(expected, "ERR")
        ok = ok and status["status"] == capped
        check(f"{label}: {group} -> {expected} (group status {status['status']}, lag {status['totallag']})", ok, detail)
    # Owners: a member's host and client id, from classic and KIP-848 membership records.
    for group in Scenarios.MEMBERS:
        def owned():
            partitions = sc.status(group)[1].get("status", {}).get("partitions", [])
            return partitions and all(p["client_id"] == group + "-app" and p["owner"] for p in partitions) and partitions
        deadline = time.time() + WAIT
        partitions = None
        while time.time() < deadline and not partitions:
            partitions = owned()
            time.sleep(0.3)
        check(f"{label}: {group} (a subscribed {Scenarios.MEMBERS[group]} member) has its owner and client id, status OK",
              bool(partitions) and all(p["status"] == "OK" for p in partitions),
              json.dumps(sc.status(group)[1].get("status"))[:800])
    # Group deletion: listed while it commits, gone once deleted.
    listed = lambda: "deleted" in json.loads(http("GET", f"{sc.api}/v3/kafka/{sc.cluster}/consumer")[1]).get("consumers", [])  # noqa: E731
    wait_until("the deleted scenario's group to be listed", listed, WAIT)
    while any(t.name == "deleted" and t.is_alive() for t in sc.threads):
        time.sleep(0.2)
    admin = AdminClient({"bootstrap.servers": sc.bootstrap})
    admin.delete_consumer_groups(["deleted"])["deleted"].result()
    deadline = time.time() + WAIT
    while time.time() < deadline and listed():
        time.sleep(0.3)
    code, body = sc.status("deleted")
    if not check(f"{label}: a deleted group is gone (unlisted, status 404 NOTFOUND)",
                 not listed() and code == 404 and body.get("status", {}).get("status") == "NOTFOUND",
                 f"code {code} body {body}"):
        print("__consumer_offsets records of the group:", offsets_records(sc.bootstrap, b"deleted"))


# --- Sluice -----------------------------------------------------------------------------

def monitor_config(path, cluster, servers, http_address, webhook=None, smtp=None):
    lines = [
        "[general]",
        'access-control-allow-origin="*"',
        f"[cluster.{cluster}]",
        'class-name="kafka"',
        f"servers=[{', '.join(json.dumps(s) for s in servers)}]",
        "topic-refresh=2",
        "offset-refresh=1",
        "[storage.default]",
        'class-name="inmemory"',
        "intervals=5",
        "min-distance=1",
        "[evaluator.default]",
        'class-name="caching"',
        "expire-cache=1",
        "[httpserver.default]",
        f'address="{http_address}"',
    ]
    if webhook:
        lines += [
            "[notifier.webhook]",
            'class-name="http"',
            f'url-open="http://127.0.0.1:{webhook}/v1/event"',
            f'url-close="http://127.0.0.1:{webhook}/v1/event"',
            'method-close="DELETE"',
            'group-allowlist="^notify$"',
            "threshold=2",
            "interval=1",
            "timeout=2",
            "send-close=true",
            'extras={ app="sluice-check" }',
        ]
    if smtp:
        lines += [
            "[notifier.mail]",
            'class-name="email"',
            'server="127.0.0.1"',
            f"port={smtp}",
            'from="burrow@example.com"',
            'to="oncall@example.com"',
            'group-allowlist="^notify$"',
            "threshold=2",
            "interval=60",
            "send-close=false",
        ]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def run_sluice(work):
    broker, controller, metrics, api, webhook_port, smtp_port = free_ports(6)
    webhook = Webhook(webhook_port)
    smtp, mail = start_smtp(smtp_port)
    config = os.path.join(work, "monitor.toml")
    monitor_config(config, "local", [f"127.0.0.1:{broker}"], f"127.0.0.1:{api}", webhook_port, smtp_port)
    log = os.path.join(work, "sluice.log")
    spawn([SLUICE, "server",
           "--set", f"log.dirs={work}/data",
           "--set", f"listeners=PLAINTEXT://127.0.0.1:{broker},CONTROLLER://127.0.0.1:{controller}",
           "--set", f"advertised.listeners=PLAINTEXT://127.0.0.1:{broker}",
           "--set", f"controller.quorum.voters=1@127.0.0.1:{controller}",
           "--set", f"metrics.listener=127.0.0.1:{metrics}",
           "--set", "group.initial.rebalance.delay.ms=0",
           "--with-monitor", "--monitor-listen", f"127.0.0.1:{api}", "--monitor-config", config], log)
    wait_until("the broker and its monitor", lambda: "Burrow's API on" in open(log).read(), 60)
    bootstrap = f"127.0.0.1:{broker}"
    base = f"http://127.0.0.1:{api}"
    sc = Scenarios(bootstrap, base, "local", extra=["notify"])
    sc.create_topics(extra=["doomed"])
    sc.start()

    # A topic that is deleted leaves the monitor, and its group's partitions with it.
    doomed = Consumer({"bootstrap.servers": bootstrap, "group.id": "doomed-reader", "enable.auto.commit": False})
    producer = Producer({"bootstrap.servers": bootstrap})
    for _ in range(10):
        producer.produce("doomed", b"y")
    producer.flush(10)
    wait_until("the doomed topic's offsets", lambda: http("GET", f"{base}/v3/kafka/local/topic/doomed")[0] == 200, WAIT)
    doomed.commit(offsets=[TopicPartition("doomed", 0, 4)], asynchronous=False)
    doomed.close()

    # The notifier: WARN opens an alert while the webhook is down; it comes up later.
    wait_until("the notify group to warn", lambda: sc.status("notify")[1].get("status", {}).get("status") == "WARN", WAIT)
    time.sleep(3)
    webhook.start()

    scenario_checks(sc, "sluice")

    code, _ = http("GET", f"{base}/v3/kafka/local/topic/doomed")
    check("sluice: the doomed topic is listed before its deletion", code == 200)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics(["doomed"])["doomed"].result()
    gone = lambda: http("GET", f"{base}/v3/kafka/local/topic/doomed")[0] == 404  # noqa: E731
    deadline = time.time() + WAIT
    while time.time() < deadline and not gone():
        time.sleep(0.3)
    code, body = sc.status("doomed-reader")
    partitions = body.get("status", {}).get("partitions", [])
    check("sluice: a deleted topic leaves the monitor and its group's partitions",
          gone() and not any(p["topic"] == "doomed" for p in partitions), f"{code} {body}")

    # Lag metrics on the node's /metrics, Burrow's status as a gauge.
    text = http("GET", f"http://127.0.0.1:{metrics}/metrics")[1]
    check("sluice: kafka_consumergroup_lag on the node's /metrics",
          'kafka_consumergroup_lag{cluster="local",consumergroup="lagging",topic="lag-lagging",partition="0"}' in text,
          text[:400])
    check("sluice: Burrow's status gauges on the node's /metrics (group ERR = 3, its partition STALL = 5)",
          'burrow_kafka_consumer_status{cluster="local",consumer_group="stuck"} 3' in text
          and 'burrow_kafka_topic_partition_status{cluster="local",consumer_group="stuck",topic="lag-stuck",partition="0"} 5' in text,
          "\n".join(line for line in text.splitlines() if "_status{" in line))
    check("sluice: kafka_consumergroup_lag_sum on the node's /metrics", "kafka_consumergroup_lag_sum{" in text)

    # Notifiers: open then close on the webhook, no duplicate open per interval; mail.
    wait_until("the webhook's open", lambda: any(m == "POST" for m, _, _ in webhook.requests), WAIT)
    sc.phase["notify"] = "recover"
    wait_until("the webhook's close", lambda: any(m == "DELETE" for m, _, _ in webhook.requests), WAIT)
    opens = [json.loads(b) for m, _, b in webhook.requests if m == "POST"]
    closes = [(p, b) for m, p, b in webhook.requests if m == "DELETE"]
    first = opens[0]
    check("sluice: the http notifier posted the open (default template: Slack's text and the event) "
          "though the webhook was down at first",
          first.get("group") == "notify" and first.get("cluster") == "local" and first.get("status") == "WARN"
          and "notify" in first.get("text", "") and first.get("extras", {}).get("app") == "sluice-check",
          json.dumps(first)[:600])
    ids = {o.get("id") for o in opens}
    check("sluice: repeated opens of one alert carry one event id", len(ids) == 1, str(ids))
    check("sluice: the http notifier sent the close (DELETE) once the group recovered", len(closes) >= 1,
          str(webhook.requests[-3:]))
    methods = [m for m, _, _ in webhook.requests]
    check("sluice: no open after the close", "POST" not in methods[methods.index("DELETE"):], str(methods))
    wait_until("the open e-mail", lambda: mail.messages, WAIT)
    sender, recipients, content = mail.messages[0]
    check("sluice: the email notifier delivered the open to the SMTP server",
          sender == "burrow@example.com" and recipients == ["oncall@example.com"] and "notify" in content,
          content[:600])
    webhook.close()
    smtp.stop()

    # `sluice group lag`: from the monitor, and one-shot from the cluster.
    out = subprocess.run([SLUICE, "group", "lag", "--bootstrap-server", bootstrap, "--monitor", base, "--json", "stuck"],
                         capture_output=True, text=True, timeout=60)
    try:
        statuses = json.loads(out.stdout)
    except ValueError:
        statuses = []
    check("sluice group lag --monitor: Burrow's view of a group (ERR, its partition STALL)",
          out.returncode == 0 and statuses and statuses[0]["status"] == "ERR"
          and statuses[0]["partitions"][0]["status"] == "STALL", out.stdout[:500] + out.stderr[:500])
    out = subprocess.run([SLUICE, "group", "lag", "--bootstrap-server", bootstrap], capture_output=True, text=True, timeout=90)
    groups = {line.split()[0]: line.split()[1] for line in out.stdout.splitlines()
              if line.split() and line.split()[0] in Scenarios.NAMES}
    partitions = {line.split()[0]: line.split()[2] for line in out.stdout.splitlines()
                  if line.split() and line.split()[0].startswith("lag-")}
    check("sluice group lag (one-shot): every live group with Burrow's status per the cluster's history",
          out.returncode == 0 and groups.get("healthy") == "OK" and groups.get("stuck") == "ERR"
          and partitions.get("lag-stuck") == "STALL" and partitions.get("lag-stopped") == "STOP"
          and "deleted" not in groups,
          out.stdout[:3000] + out.stderr[-500:])
    sc.stop.set()


def run_kafka(work):
    from kafka_local import LocalKafka
    api = free_ports(1)[0]
    kafka = LocalKafka(workdir=os.path.join(work, "kafka"),
                       extra_props={"group.initial.rebalance.delay.ms": "0"})
    kafka.start()
    kafka.wait_ready()
    started_kafka = kafka
    try:
        config = os.path.join(work, "kafka-monitor.toml")
        monitor_config(config, "apache", [kafka.bootstrap], f"127.0.0.1:{api}")
        log = os.path.join(work, "monitor-kafka.log")
        monitor = spawn([SLUICE, "monitor", "--config", config], log)
        base = f"http://127.0.0.1:{api}"
        wait_until("the standalone monitor's API", lambda: http("GET", f"{base}/burrow/admin")[0] == 200, 30)
        sc = Scenarios(kafka.bootstrap, base, "apache")
        sc.create_topics()
        sc.start()
        scenario_checks(sc, "Apache Kafka 4.1 + sluice monitor")
        console_on_kafka(work, kafka.bootstrap, config)
        sc.stop.set()
        monitor.send_signal(signal.SIGTERM)
        check("sluice monitor stops on SIGTERM", monitor.wait(20) == 0)
    finally:
        started_kafka.stop()


def console_on_kafka(work, bootstrap, config):
    """The web console (`sluice console`) with Apache Kafka 4.1 as its backend, while the
    scenarios run: the cluster, topics, a KIP-848 group shown as such (not Dead), Burrow's
    WARN on the lagging group, and the message browser's stream. compat/console drives the
    console in a browser on Sluice."""
    port = free_ports(1)[0]
    log = os.path.join(work, "console-kafka.log")
    proc = spawn([SLUICE, "console", "--bootstrap-server", bootstrap, "--listen", f"127.0.0.1:{port}",
                  "--monitor-config", config, "--set", "console.monitor.cluster=apache",
                  "--set", "console.sample.interval.ms=1000"], log)
    base = f"http://127.0.0.1:{port}"
    wait_until("the console on Kafka", lambda: http("GET", base + "/")[0] == 200, 30)
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until its answer
    cluster_id = admin.describe_cluster().result(timeout=10).cluster_id
    page = http("GET", base + "/")[1]
    check("console on Apache Kafka: the overview shows Kafka's cluster id, its broker and quorum leader",
          f'id="cluster-id">{cluster_id}<' in page and bootstrap in page and 'id="quorum-leader">' in page,
          page[-2000:])

    def row(group):
        page = http("GET", base + "/groups")[1]
        start = page.find(f'<a href="/groups/{group}">')
        return page[start:page.find("</tr>", start)] if start >= 0 else ""
    kip848 = wait_until("the KIP-848 group in the console", lambda: "Stable" in row("kip848-members")
                        and row("kip848-members"), WAIT)
    check("console on Apache Kafka: a KIP-848 group is shown as a consumer group, Stable (not Dead)",
          "KIP-848" in kip848 and "Dead" not in kip848, kip848)
    warn = wait_until("Burrow's WARN on the lagging group in the console",
                      lambda: "WARN" in row("lagging") and row("lagging"), WAIT)
    check("console on Apache Kafka: the lagging group is marked WARN", "WARN" in warn, warn)
    status, page = http("GET", base + "/groups/kip848-members")
    check("console on Apache Kafka: the KIP-848 group's page lists its member and assignment",
          status == 200 and 'id="members-table"' in page and "lag-kip848-members" in page, page[-2000:])
    status, page = http("GET", base + "/topics/lag-lagging")
    check("console on Apache Kafka: a topic's page with its partition",
          status == 200 and 'id="partitions"' in page and "1 partitions" in page, page[-1500:])
    status, stream = http("GET", base + "/api/topics/lag-healthy/messages?from=earliest&limit=3")
    records = [json.loads(line) for line in stream.splitlines() if line.strip()]
    check("console on Apache Kafka: the message browser streams records",
          status == 200 and sum(1 for r in records if "record" in r) == 3 and "end" in records[-1],
          stream[:1000])
    proc.send_signal(signal.SIGTERM)
    check("sluice console stops on SIGTERM", proc.wait(20) == 0)


def bad_input(work):
    bad = os.path.join(work, "bad.toml")
    with open(bad, "w") as f:
        f.write('[cluster.local]\nservers=["127.0.0.1:9"]\noffset-refrsh=1\n')
    out = subprocess.run([SLUICE, "monitor", "--config", bad], capture_output=True, text=True, timeout=30)
    check("a malformed config is refused naming its key",
          out.returncode == 1 and "cluster.local: unknown field `offset-refrsh`" in out.stderr, out.stderr)

    closed, api = free_ports(2)
    config = os.path.join(work, "unreachable.toml")
    monitor_config(config, "down", [f"127.0.0.1:{closed}"], f"127.0.0.1:{api}")
    proc = spawn([SLUICE, "monitor", "--config", config], os.path.join(work, "unreachable.log"))
    base = f"http://127.0.0.1:{api}"
    wait_until("the API of a monitor whose cluster is down", lambda: http("GET", f"{base}/burrow/admin")[0] == 200, 30)
    time.sleep(3)
    ready = http("GET", f"{base}/burrow/admin/ready")
    clusters = json.loads(http("GET", f"{base}/v3/kafka")[1])
    check("an unreachable cluster: the monitor keeps serving (ready: 503 STARTING) and does not exit",
          proc.poll() is None and ready == (503, "STARTING") and clusters["clusters"] == ["down"],
          f"{ready} {clusters} exit {proc.poll()}")
    proc.send_signal(signal.SIGTERM)
    proc.wait(20)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=["sluice", "kafka", "both"], default="both")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="sluice-monitor-check-")
    start = time.time()
    try:
        bad_input(work)
        if args.backend in ("sluice", "both"):
            run_sluice(work)
        if args.backend in ("kafka", "both"):
            run_kafka(work)
    finally:
        stop_all()
        if failures:
            for name in os.listdir(work):
                if name.endswith(".log"):
                    print(f"--- {name} (tail)")
                    with open(os.path.join(work, name), errors="replace") as f:
                        print("".join(f.readlines()[-30:]))
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'FAILED' if failures else 'ok'}: {len(failures)} failure(s) in {time.time() - start:.0f}s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
