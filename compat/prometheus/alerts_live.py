#!/usr/bin/env python3
"""A real Prometheus (Debian's `prometheus`) loads deploy/prometheus/alerts.yml unchanged
and scrapes a real 3-node Sluice cluster (compat/cluster/cluster.py, combined topology,
every node's `metrics.listener` on its own port from compat/lib/ports.py); scrape and
rule evaluation every 1 s. Then, through Prometheus's HTTP API:

  1 healthy (topic with RF=3, a few records): every target up, exactly one active
    controller, no alert pending or firing for 3 s;
  2 every dashboard expression evaluates, and returns data where it reads only broker
    metrics; every broker metric a rule or panel names is among those scraped;
  3 a node that is not the active controller is SIGKILLed: UnderReplicatedPartitions
    fires (within 30 s), the survivors count all 3 partitions, and no other alert fires;
  4 the node is restarted: the alert resolves (within 30 s) and nothing fires.

A step that times out prints Prometheus's view (targets, rules, alerts, the guide's
metrics per instance) and the run stops. Prints PASS/FAIL lines and
"prometheus: N passed, M failed in S s"; exit 1 on a FAIL. Everything started here
(nodes, proxies, Prometheus) is killed on exit; everything binds 127.0.0.1.

    SLUICE_BIN=target/debug/sluice python3 compat/prometheus/alerts_live.py [--keep]
"""
import argparse
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "compat", "cluster"))
sys.path.insert(0, os.path.join(ROOT, "compat", "lib"))
import cluster  # noqa: E402
import files_check  # noqa: E402
from ports import free_ports  # noqa: E402

RULES = os.path.join(ROOT, "deploy", "prometheus", "alerts.yml")
TOPIC = "guide-alerts"
PARTITIONS = 3
URP_ALERT = "UnderReplicatedPartitions"
URP = "kafka_server_replicamanager_underreplicatedpartitions"
ACTIVE = "kafka_controller_kafkacontroller_activecontrollercount"
OFFLINE = "kafka_controller_kafkacontroller_offlinepartitionscount"
# Bounds of the waits. Firing takes the cluster's broker.session.timeout.ms (3 s) to
# fence the node plus a scrape and an evaluation; resolving, a restart and a catch-up.
PROMETHEUS_START_S = 30
HEALTHY_S = 30
QUIET_S = 3
FIRE_S = 30
RESOLVE_S = 30


class Failed(Exception):
    pass


class Prometheus:
    def __init__(self, port, work):
        self.url = "http://127.0.0.1:%d" % port
        self.port = port
        self.log = os.path.join(work, "prometheus.log")
        self.config = os.path.join(work, "prometheus.yml")
        self.tsdb = os.path.join(work, "tsdb")
        self.proc = None

    def start(self, targets):
        with open(self.config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "  evaluation_interval: 1s\n"
                    "rule_files:\n  - %s\n"
                    "scrape_configs:\n  - job_name: sluice\n    static_configs:\n"
                    "      - targets: [%s]\n"
                    % (json.dumps(RULES), ", ".join("'%s'" % t for t in targets)))
        self.proc = cluster.spawn(
            ["prometheus", "--config.file=" + self.config, "--storage.tsdb.path=" + self.tsdb,
             "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"], self.log)
        deadline = time.monotonic() + PROMETHEUS_START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Failed("prometheus exited with %s:\n%s" % (self.proc.returncode, self.log_tail()))
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.2)
        raise Failed("prometheus not ready in %d s:\n%s" % (PROMETHEUS_START_S, self.log_tail()))

    def stop(self):
        cluster.kill_proc(self.proc, signal.SIGTERM)

    def log_tail(self, lines=20):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def api(self, path, **params):
        url = "%s/api/v1/%s" % (self.url, path)
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                body = json.load(response)
        except urllib.error.HTTPError as error:  # a bad query: 400 with the error in JSON
            body = json.load(error)
        if body.get("status") != "success":
            raise Failed("%s: %s: %s" % (path, body.get("errorType"), body.get("error")))
        return body["data"]

    def query(self, expr):
        return self.api("query", query=expr)["result"]

    def value(self, expr):
        """The single number an aggregating expression gives, or None without data."""
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else None

    def last_evaluation(self):
        """When the rules were last evaluated, as a Unix time (0: never)."""
        times = []
        for group in self.api("rules")["groups"]:
            # RFC 3339 with nanoseconds; Python reads microseconds.
            text = re.sub(r"(\.\d{6})\d+", r"\1", group["lastEvaluation"]).replace("Z", "+00:00")
            times.append(datetime.datetime.fromisoformat(text).timestamp())
        return min(times, default=0)

    def alerts(self):
        return self.api("alerts")["alerts"]

    def view(self):
        """What Prometheus sees, for a failure's report."""
        lines = []
        try:
            for target in self.api("targets")["activeTargets"]:
                lines.append("  target %s: %s %s" % (target["scrapeUrl"], target["health"],
                                                     target.get("lastError", "")))
            for group in self.api("rules")["groups"]:
                for rule in group["rules"]:
                    lines.append("  rule %s: %s (health %s%s, last evaluated %s)"
                                 % (rule["name"], rule.get("state"), rule["health"],
                                    ": " + rule["lastError"] if rule.get("lastError") else "",
                                    rule.get("lastEvaluation")))
            for alert in self.alerts():
                lines.append("  alert %s %s since %s, value %s, labels %s"
                             % (alert["labels"]["alertname"], alert["state"], alert["activeAt"],
                                alert["value"], alert["labels"]))
            for metric in (URP, ACTIVE, OFFLINE):
                samples = ["%s=%s" % (s["metric"].get("instance"), s["value"][1]) for s in self.query(metric)]
                lines.append("  %s: %s" % (metric, ", ".join(samples) or "no data"))
        except (Failed, OSError, urllib.error.URLError, ValueError) as error:
            lines.append("  (the API failed: %s)" % error)
        return "Prometheus's view:\n" + "\n".join(lines) + "\nits log:\n" + self.log_tail(10)


def wait_for(what, predicate, timeout_s, prometheus):
    """Poll `predicate` (True, or a falsy value) until it holds; seconds it took."""
    start = time.monotonic()
    while True:
        try:
            if predicate():
                return time.monotonic() - start
        except (OSError, urllib.error.URLError):
            pass  # Prometheus busy for a moment; the bound still holds
        if time.monotonic() - start > timeout_s:
            raise Failed("%s: not within %d s\n%s" % (what, timeout_s, prometheus.view()))
        time.sleep(0.25)


def firing(alerts, name=None):
    return [a for a in alerts if a["state"] == "firing" and name in (None, a["labels"]["alertname"])]


class Console:
    """`sluice console` against the 3-node cluster (the web console's pages over HTTP; the
    browser suite, compat/console, drives a single node): it must show the three brokers,
    the three voters, replication factor 3, and the URP signal the alert fires on."""

    def __init__(self, sluice, bootstrap, port, work):
        self.base = "http://127.0.0.1:%d" % port
        self.log = open(os.path.join(work, "console.log"), "w")
        self.proc = subprocess.Popen(
            [sluice, "console", "--bootstrap-server", bootstrap, "--listen", "127.0.0.1:%d" % port,
             "--set", "console.sample.interval.ms=1000"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def page(self, path):
        try:
            with urllib.request.urlopen(self.base + path, timeout=10) as response:
                return response.read().decode()
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return ""

    def card(self, page, card):
        found = re.search(r'<div class="card (\w+)" id="%s"[^>]*><div class="value">(\d+)</div>' % card, page)
        return (found.group(1), int(found.group(2))) if found else None

    def wait(self, what, predicate, timeout_s=30):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            page = self.page("/")
            if predicate(page):
                return page
            time.sleep(0.5)
        raise Failed("console: %s; the overview:\n%s" % (what, re.sub(r"<[^>]+>", " ", self.page("/"))[-3000:]))

    def check_healthy(self, report):
        page = self.wait("three brokers, three voters and green health signals", lambda p: (
            p.count("<td class=\"mono\">127.0.0.1:") == 3
            and p.count("<td>Voter</td>") + p.count("<td>Leader</td>") == 3
            and self.card(p, "under-replicated") == ("ok", 0)
            and self.card(p, "active-controllers") == ("ok", 1)
            and self.card(p, "offline") == ("ok", 0)))
        topic = self.page("/topics/" + TOPIC)
        isr_rows = re.findall(r"<tr><td>\d+</td><td>\d+</td><td>([\d, ]+)</td><td>([\d, ]+)</td>", topic)
        if len(isr_rows) != PARTITIONS or any(len(r.split(",")) != 3 or len(i.split(",")) != 3
                                              for r, i in isr_rows):
            raise Failed("console: the topic page does not show %d partitions with 3 replicas in sync: %s"
                         % (PARTITIONS, isr_rows))
        report(True, "sluice console on the 3-node cluster: 3 brokers, 3 voters, health signals green, "
               "%s with %d partitions of 3 replicas all in sync" % (TOPIC, PARTITIONS))

    def check_under_replicated(self, report, victim):
        self.wait("UnderReplicatedPartitions red with node %d down" % victim,
                  lambda p: self.card(p, "under-replicated") == ("err", PARTITIONS))
        report(True, "sluice console: UnderReplicatedPartitions shows %d, red, with node %d down"
               % (PARTITIONS, victim))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def run(work, keep, report):
    metrics_ports = free_ports(3)
    c = cluster.Cluster("sluice", "combined", workdir=os.path.join(work, "cluster"), keep=keep,
                        start_timeout=60)
    for node, port in zip(c.nodes.values(), metrics_ports):
        node.real["metrics"] = port
    prometheus = console = None
    try:
        c.start()
        instance_of = {n.id: "127.0.0.1:%d" % n.real["metrics"] for n in c.nodes.values()}
        sluice = c.sluice_bin
        subprocess.run([sluice, "topic", "create", TOPIC, "--partitions", str(PARTITIONS),
                        "--replication-factor", "3", "--bootstrap-server", c.bootstrap()],
                       check=True, timeout=30, stdout=subprocess.DEVNULL)
        subprocess.run([sluice, "produce", TOPIC, "-b", c.bootstrap()], input=b"a\nb\nc\n",
                       check=True, timeout=30)
        used = {p for n in c.nodes.values() for p in list(n.real.values()) + list(n.proxy.values())}
        prometheus_port, console_port = free_ports(2, avoid=used)
        console = Console(sluice, c.bootstrap(), console_port, work)
        prometheus = Prometheus(prometheus_port, work)
        prometheus.start(instance_of.values())
        report(True, "Prometheus %s loads deploy/prometheus/alerts.yml and scrapes %s"
               % (prometheus.url, ", ".join(instance_of.values())))

        # 1 healthy
        def healthy():
            targets = prometheus.api("targets")["activeTargets"]
            return (len(targets) == 3 and all(t["health"] == "up" for t in targets)
                    and prometheus.value("sum(%s)" % ACTIVE) == 1
                    and prometheus.value("count(%s)" % URP) == 3
                    and prometheus.value("sum(%s)" % URP) == 0)
        wait_for("3 targets up, 1 active controller, no under-replicated partition",
                 healthy, HEALTHY_S, prometheus)
        # Rules evaluated before the first scrapes saw no controller (pending, `for:
        # 30s`); judge only evaluations of the healthy cluster's samples.
        healthy_at = time.time()
        wait_for("two rule evaluations after the cluster was seen healthy",
                 lambda: prometheus.last_evaluation() > healthy_at + 1, HEALTHY_S, prometheus)
        quiet_until = time.monotonic() + QUIET_S
        while time.monotonic() < quiet_until:
            if prometheus.alerts():
                raise Failed("an alert on a healthy cluster\n" + prometheus.view())
            time.sleep(0.25)
        unhealthy_rules = [r["name"] for g in prometheus.api("rules")["groups"] for r in g["rules"]
                           if r["health"] != "ok"]
        if unhealthy_rules:
            raise Failed("rules that fail to evaluate: %s\n%s" % (unhealthy_rules, prometheus.view()))
        report(True, "healthy cluster: no alert pending or firing for %d s of 1 s evaluations" % QUIET_S)
        console.check_healthy(report)

        # 2 the dashboard's expressions and the rules' metrics, against real scrapes
        with open(files_check.DASHBOARD) as f:
            exprs = files_check.dashboard_exprs(json.load(f))
        scraped = set(prometheus.api("label/__name__/values"))
        named = set().union(*(files_check.metric_names(e) for _, e in exprs + files_check.rule_exprs()))
        missing = sorted(named - files_check.LAG_METRICS - scraped)
        if missing:
            raise Failed("broker metrics named in deploy/ but not scraped: %s" % missing)
        empty = []
        for where, expr in exprs:
            concrete = expr.replace("$__rate_interval", "5s").replace("$job", ".*")
            result = prometheus.query(concrete)  # a query Prometheus rejects raises
            if not result and not files_check.metric_names(expr) & files_check.LAG_METRICS:
                empty.append(where)
        if empty:
            raise Failed("dashboard queries without data on a live cluster: %s" % empty)
        report(True, "the dashboard's %d queries evaluate (data for every broker one), and every "
               "broker metric named in deploy/ (%d) is scraped" % (len(exprs), len(named - files_check.LAG_METRICS)))

        # 3 a follower down: URP fires
        controller = [s["metric"]["instance"] for s in prometheus.query("%s == 1" % ACTIVE)]
        victim = min(n for n, instance in instance_of.items() if instance not in controller)
        killed_at = time.monotonic()
        c.kill(victim)
        took = wait_for("%s firing after node %d was SIGKILLed" % (URP_ALERT, victim),
                        lambda: firing(prometheus.alerts(), URP_ALERT), FIRE_S, prometheus)
        wait_for("the survivors count all %d partitions under-replicated" % PARTITIONS,
                 lambda: prometheus.value("sum(%s)" % URP) == PARTITIONS,
                 FIRE_S - (time.monotonic() - killed_at), prometheus)
        alerts = prometheus.alerts()
        urp_instances = sorted(a["labels"]["instance"] for a in firing(alerts, URP_ALERT))
        if instance_of[victim] in urp_instances:
            raise Failed("the URP alert names the stopped node\n" + prometheus.view())
        others = [a["labels"]["alertname"] for a in alerts if a["labels"]["alertname"] != URP_ALERT]
        if others:
            raise Failed("alerts other than %s with one node of three down: %s\n%s"
                         % (URP_ALERT, others, prometheus.view()))
        report(True, "node %d (not the controller) SIGKILLed: %s firing after %.1f s on %s, "
               "all %d partitions counted, no other alert"
               % (victim, URP_ALERT, took, ", ".join(urp_instances), PARTITIONS))
        console.check_under_replicated(report, victim)

        # 4 back: URP resolves
        restarted_at = time.monotonic()
        c.start_node(victim, wait=True, timeout=RESOLVE_S)

        def resolved():
            return (not [a for a in prometheus.alerts() if a["labels"]["alertname"] == URP_ALERT]
                    and prometheus.value("count(%s)" % URP) == 3
                    and prometheus.value("sum(%s)" % URP) == 0)
        took = wait_for("%s resolved after node %d restarted" % (URP_ALERT, victim), resolved,
                        RESOLVE_S - (time.monotonic() - restarted_at), prometheus)
        if firing(prometheus.alerts()):
            raise Failed("alerts firing after the node returned\n" + prometheus.view())
        report(True, "node %d restarted: %s resolved %.1f s after the restart, nothing firing"
               % (victim, URP_ALERT, time.monotonic() - restarted_at))
    finally:
        if prometheus is not None:
            prometheus.stop()
        if console is not None:
            console.stop()
        c.stop(grace=5)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, TSDB)")
    args = parser.parse_args()
    cluster.exit_on_signals()
    started = time.monotonic()
    passed, failed = [0], [0]

    def report(ok, check, reason=""):
        (passed if ok else failed)[0] += 1
        print("PASS prometheus: %s" % check if ok else "FAIL prometheus: %s: %s" % (check, reason),
              flush=True)

    work = tempfile.mkdtemp(prefix="sluice-prometheus-")
    try:
        if shutil.which("prometheus") is None:
            raise Failed("no prometheus on PATH (Debian's package; scripts/test's install_tools installs it)")
        run(work, args.keep, report)
    except Failed as error:
        report(False, "the live alert check", error)
    except (subprocess.SubprocessError, RuntimeError, OSError) as error:
        report(False, "the live alert check (harness)", error)
    finally:
        if args.keep or failed[0]:
            print("prometheus: work dir kept: %s" % work, flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("prometheus: %d passed, %d failed in %.1f s" % (passed[0], failed[0], time.monotonic() - started),
          flush=True)
    return 1 if failed[0] else 0


if __name__ == "__main__":
    sys.exit(main())
