#!/usr/bin/env python3
"""Driver of bench/groups: consumer-group rebalance times and offset commit/fetch rates,
Apache Kafka 4.1 and Sluice in one run. See bench/groups for usage and
docs/benchmarks.md ("Consumer groups") for what each figure means.

The brokers are started, configured, measured and stopped by bench/compare-kafka's
driver (bench/compare-kafka.d/compare.py: Kafka, Sluice, Runner.run_tool, stop_all, ...);
this file only adds the group settings, the tests and the table.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench", "compare-kafka.d"))
import compare as ck  # noqa: E402

# Appended to compare-kafka's server.properties (Kafka 4.1's shipped file) for both
# brokers. Sluice does not know group.consumer.min.heartbeat.interval.ms (it warns and
# ignores it); Kafka needs it, since its default (5000) is a floor for
# group.consumer.heartbeat.interval.ms.
GROUP_CONFIG = ("group.initial.rebalance.delay.ms=0\n"
                "group.consumer.heartbeat.interval.ms=100\n"
                "group.consumer.min.heartbeat.interval.ms=100\n")

MODES = [("range", "classic protocol, RangeAssignor"),
         ("cooperative-sticky", "classic protocol, CooperativeStickyAssignor"),
         ("consumer", "group.protocol=consumer (KIP-848), broker's default assignor")]
TOPIC_REBALANCE = "groups-rebalance"
TOPIC_COMMITS = "groups-commits"


def log(msg):
    print("groups: " + msg, file=sys.stderr, flush=True)


# KAFKA_EXTRA_CONFIG: more lines for Kafka's file only (e.g.
# "group.coordinator.append.linger.ms=0"), to see what one setting is worth; the report
# says so.
KAFKA_EXTRA_CONFIG = os.environ.get("KAFKA_EXTRA_CONFIG", "").replace(";", "\n").strip()


class GKafka(ck.Kafka):
    def extra_config(self):
        extra = KAFKA_EXTRA_CONFIG + "\n" if KAFKA_EXTRA_CONFIG else ""
        return super().extra_config() + GROUP_CONFIG + extra


class GSluice(ck.Sluice):
    def extra_config(self):
        return super().extra_config() + GROUP_CONFIG


def result_lines(out):
    res = []
    for line in out.splitlines():
        if line.startswith("RESULT "):
            res.append(json.loads(line[len("RESULT "):]))
    return res


# ---------------------------------------------------------------------------- tests

def rebalance(run, cfg, mode, name):
    cmd = ["java", *ck.TOOL_JVM, "-cp", os.path.join(ck.LIBS, "*"),
           os.path.join(HERE, "GroupRebalance.java"), run.broker.bootstrap, TOPIC_REBALANCE,
           str(cfg["partitions"]), str(cfg["members"]), mode, str(cfg["reps"]),
           str(cfg["warmup_reps"])]
    out = run.run_tool(name, cmd, timeout=300 + 200 * (cfg["reps"] + cfg["warmup_reps"]))
    reps = [r for r in result_lines(out) if not r.get("warmup")]
    warm = [r for r in result_lines(out) if r.get("warmup")]
    if not reps:
        raise ck.Failure("no result lines:\n" + "\n".join(out.splitlines()[-8:]))
    res = {"reps": reps}
    if any("error" in r for r in warm):
        res["warmup_errors"] = [r["error"] for r in warm if "error" in r]
    for key in ("join_ms", "add_ms", "leave_ms"):
        vals = [r[key] for r in reps if key in r]
        res[key] = ck.median(vals)
        res[key + "_n"] = len(vals)
    errs = [r["error"] for r in reps if "error" in r]
    if errs:
        res["rep_errors"] = errs
        if all("error" in r for r in reps):
            res["error"] = "every repetition failed; first: " + errs[0]
    return res


def commits(run, tool, op, count, threads, warmup, name):
    prefix = "bench-groups-%s-%s" % (name, time.strftime("%H%M%S"))
    args = [run.broker.bootstrap, TOPIC_COMMITS, str(100), op, str(count), str(threads),
            str(warmup), prefix]
    if tool == "java":
        cmd = ["java", *ck.TOOL_JVM, "-cp", os.path.join(ck.LIBS, "*"),
               os.path.join(HERE, "CommitBench.java"), *args]
    else:
        cmd = [sys.executable, os.path.join(HERE, "rdkafka_commits.py"), *args]
    out = run.run_tool(name, cmd, timeout=600)
    r = result_lines(out)
    if not r:
        raise ck.Failure("no result line:\n" + "\n".join(out.splitlines()[-8:]))
    return r[-1]


def commit_plan(cfg):
    n1, n8, nf, w = cfg["commits"], cfg["concurrent_commits"], cfg["fetches"], cfg["op_warmup"]
    plan = []
    for tool in ("java", "rdkafka"):
        plan += [
            ("commit100-%s-x1" % tool, tool, "commit100", n1, 1, w),
            ("commit1-%s-x1" % tool, tool, "commit1", n1, 1, w),
            ("commit100-%s-x8" % tool, tool, "commit100", n8, 8, max(1, w // 4)),
            ("fetch-%s-x1" % tool, tool, "fetch", nf, 1, w),
        ]
    return plan


def record(runner, store, name, fn):
    """Run one test against one broker; keep its result with the tool/broker CPU."""
    log("%s: %s" % (runner.broker.label, name))
    runner._usage = {}
    try:
        res = fn()
    except ck.Failure as e:
        res = {"error": str(e)}
        log("%s: %s FAILED: %s" % (runner.broker.label, name, e))
    except Exception as e:  # noqa: BLE001 - reported
        res = {"error": "%s: %s" % (type(e).__name__, e)}
        log("%s: %s FAILED: %s" % (runner.broker.label, name, res["error"]))
    res.update(runner._usage)
    short = {k: v for k, v in res.items() if k != "reps"}
    log("%s: %s: %s" % (runner.broker.label, name, json.dumps(short)))
    store.setdefault(name, []).append(res)
    return res


def run_all(brokers, cfg, results_dir):
    keys = list(brokers)
    allb = list(brokers.values())
    runners = {k: ck.Runner(b, allb, results_dir, cfg["partitions"]) for k, b in brokers.items()}
    results = {k: {"label": b.label, "tests": {}} for k, b in brokers.items()}
    live = []
    for k in keys:
        b, res = brokers[k], results[k]
        try:
            log("starting %s (work dir %s)" % (b.label, b.workdir))
            res["startup_s"] = round(b.start(), 2)
            log("%s answers Metadata after %.1fs" % (b.label, res["startup_s"]))
            runners[k].create_topics([TOPIC_REBALANCE, TOPIC_COMMITS])
            live.append(k)
        except Exception as e:  # noqa: BLE001 - startup, storage format, topic creation
            res["error"] = "%s: %s" % (type(e).__name__, e)
            log("%s FAILED: %s" % (b.label, res["error"]))
            if b.started() and not b.alive():
                res["log_tail"] = b.log_tail()
    # Not reported: the brokers' JIT, the offsets topic's creation, the client JVM.
    for k in live:
        w = record(runners[k], results[k].setdefault("warmup", {}), "warmup",
                   lambda: commits(runners[k], "java", "commit100", cfg["warmup_commits"], 1, 0,
                                   "warmup"))
        if "error" in w:
            results[k]["warmup_error"] = w["error"]
        results[k]["cpu_setup_s"] = brokers[k].cpu_seconds()

    t_start = time.monotonic()
    i = 0
    for mode, _ in MODES:
        name = "rebalance-" + mode
        order = live if i % 2 == 0 else live[::-1]
        i += 1
        for k in order:
            record(runners[k], results[k]["tests"], name,
                   lambda: rebalance(runners[k], cfg, mode, name))
    for rnd in range(cfg["commit_rounds"]):
        for name, tool, op, count, threads, warm in commit_plan(cfg):
            order = live if (i + rnd) % 2 == 0 else live[::-1]
            i += 1
            tag = name if cfg["commit_rounds"] == 1 else "%s-r%d" % (name, rnd + 1)
            for k in order:
                record(runners[k], results[k]["tests"], name,
                       lambda: commits(runners[k], tool, op, count, threads, warm, tag))
    results["tests_wall_s"] = round(time.monotonic() - t_start, 1)

    for k in keys:
        b, res = brokers[k], results[k]
        if b.alive():
            res["cpu_total_s"] = round(b.cpu_seconds(), 2)
            res["peak_rss_mib"] = round(b.peak_rss_mib(), 1)
            res["threads"] = b.threads()
        elif b.started():
            res["exit"] = b.exit_status()
            res["log_tail"] = b.log_tail()
        for key in ("broker_cpu_s", "wall_s", "tool_cpu_s", "other_cpu_s", "machine_cpu_s",
                    "idle_broker_cpu_s"):
            vals = [t.get(key) for runs in res["tests"].values() for t in runs]
            if vals and all(v is not None for v in vals):
                res["sum_" + key] = round(sum(vals), 1)
    return results


# ---------------------------------------------------------------------------- report

def build_table(cfg, results):
    k, s = results.get("kafka"), results.get("sluice")
    rows = ["| test | Kafka %s | Sluice | Sluice ÷ Kafka |" % cfg["kafka_version"],
            "|---|---:|---:|---:|"]

    def rebalance_metric(res, test, key):
        if not res:
            return None, None
        runs = res.get("tests", {}).get(test)
        if not runs:
            return None, "failed" if res.get("error") else None
        r = runs[-1]
        v, n = r.get(key), r.get(key + "_n", 0)
        total = len(r.get("reps", [])) or cfg["reps"]
        if v is None:
            return None, "failed"
        if n < total:
            return v, ck.fmt_num(v) + " (%d of %d reps failed)" % (total - n, total)
        return v, None

    def rounds_metric(res, test, key):
        if not res:
            return None, None
        runs = res.get("tests", {}).get(test)
        if not runs:
            return None, "failed" if res.get("error") else None
        ok = [t[key] for t in runs if "error" not in t and t.get(key) is not None]
        if not ok:
            return None, "failed"
        v = ck.median(ok)
        if len(ok) < len(runs):
            return v, ck.fmt_num(v) + " (%d of %d rounds failed)" % (len(runs) - len(ok), len(runs))
        return v, None

    def add(label, kv, ke, sv, se, digits=None):
        ratio = sv / kv if kv and sv else None
        rows.append("| %s | %s | %s | %s |" % (
            label, ke or ck.fmt_num(kv, digits), se or ck.fmt_num(sv, digits),
            "%.2f×" % ratio if ratio is not None else "—"))

    for mode, desc in MODES:
        test = "rebalance-" + mode
        for key, what in (("join_ms", "%d members join" % cfg["members"]),
                          ("add_ms", "member %d joins" % (cfg["members"] + 1)),
                          ("leave_ms", "member %d leaves (close)" % (cfg["members"] + 1))):
            add("rebalance, %s: %s, ms (lower is better)" % (desc, what),
                *rebalance_metric(k, test, key), *rebalance_metric(s, test, key), 0)
    names = {"java": "Java KafkaConsumer", "rdkafka": "librdkafka"}
    for name, tool, op, count, threads, _ in commit_plan(cfg):
        if op == "commit100":
            what = "commitSync of 100 partitions" if tool == "java" else \
                "commit(100 partitions, sync)"
            unit = "commits/s"
        elif op == "commit1":
            what = "commitSync of 1 partition" if tool == "java" else "commit(1 partition, sync)"
            unit = "commits/s"
        else:
            what = "committed() of 100 partitions"
            unit = "fetches/s"
        who = "1 client" if threads == 1 else "%d clients in %d groups, total" % (threads, threads)
        add("%s %s, %s: %s" % (names[tool], what, who, unit),
            *rounds_metric(k, name, "ops_per_sec"), *rounds_metric(s, name, "ops_per_sec"))
    for name, tool, op, count, threads, _ in commit_plan(cfg):
        if op == "commit100" and threads == 1:
            add("%s %s of 100 partitions, 1 client: p50 ms per call"
                % (names[tool], "commitSync" if tool == "java" else "commit(sync)"),
                *rounds_metric(k, name, "p50_ms"), *rounds_metric(s, name, "p50_ms"), 2)

    def whole(res, key):
        if not res:
            return None, None
        return res.get(key), (None if res.get(key) is not None else "failed")

    add("broker CPU s over its measured tests", *whole(k, "sum_broker_cpu_s"),
        *whole(s, "sum_broker_cpu_s"), 1)
    add("broker peak RSS (VmHWM), MiB", *whole(k, "peak_rss_mib"), *whole(s, "peak_rss_mib"), 1)
    return "\n".join(rows)


def build_failures(results):
    out = []
    for key in ("kafka", "sluice"):
        res = results.get(key)
        if not res:
            continue
        label = res["label"]
        for what in ("error", "warmup_error"):
            if res.get(what):
                out.append("- %s%s: %s" % (label, ", warm-up" if what != "error" else "",
                                           res[what].strip().replace("\n", "\n    ")))
        for name, runs in res.get("tests", {}).items():
            seen = set()
            for rnd, t in enumerate(runs):
                msgs = []
                if "error" in t:
                    msgs.append(t["error"])
                elif t.get("rep_errors"):
                    msgs += ["repetition failed: " + e for e in t["rep_errors"]]
                if t.get("warmup_errors"):
                    msgs += ["warm-up repetition failed: " + e for e in t["warmup_errors"]]
                for msg in msgs:
                    msg = msg.strip()
                    if msg in seen:
                        continue
                    seen.add(msg)
                    out.append("- %s, %s%s: %s" % (
                        label, name, "" if len(runs) == 1 else " (round %d)" % (rnd + 1),
                        msg.replace("\n", "\n    ")))
        if res.get("exit") is not None:
            out.append("- %s exited with status %s before the end; its last output:\n    %s"
                       % (label, res["exit"],
                          res.get("log_tail", "").strip().replace("\n", "\n    ")))
    return "\n".join(out)


def rebalance_reps(results):
    """Every repetition's figures, for the report."""
    lines = ["| test | broker | join ms per rep | add ms per rep | leave ms per rep |",
             "|---|---|---|---|---|"]
    for key in ("kafka", "sluice"):
        res = results.get(key)
        if not res:
            continue
        for mode, _ in MODES:
            for t in res.get("tests", {}).get("rebalance-" + mode, []):
                reps = t.get("reps", [])
                cols = []
                for k in ("join_ms", "add_ms", "leave_ms"):
                    cols.append(", ".join(ck.fmt_num(r[k], 0) if k in r else "✗" for r in reps)
                                or "—")
                lines.append("| rebalance-%s | %s | %s |" % (mode, res["label"], " | ".join(cols)))
    return "\n".join(lines)


def log_problems(results_dir):
    """WARN/ERROR/panic lines of each broker's output (copied into results_dir)."""
    out = {}
    for label, name in (("Kafka", "kafka-kafka.out"), ("Sluice", "sluice-sluice.out")):
        path = os.path.join(results_dir, name)
        if not os.path.exists(path):
            continue
        lines = [ck.ANSI_RE.sub("", l) for l in open(path, errors="replace").read().splitlines()]
        out[label] = [l for l in lines if ck.LOG_PROBLEM_RE.search(l)]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repetition, fewer commits")
    ap.add_argument("--only", choices=("kafka", "sluice"), help="run one broker only")
    ap.add_argument("--sluice-bin", required=True)
    ap.add_argument("--command", default="bench/groups")
    args = ap.parse_args()
    ck._sigterm_to_exit()

    q = args.quick
    cfg = {
        "reps": ck.env_int("REPS", 1 if q else 5),
        "warmup_reps": ck.env_int("WARMUP_REPS", 1),
        "members": ck.env_int("MEMBERS", 10),
        "partitions": 100,
        "commits": ck.env_int("COMMITS", 1000 if q else 1500),
        "concurrent_commits": ck.env_int("CONCURRENT_COMMITS", 300 if q else 500),
        "fetches": ck.env_int("FETCHES", 1000 if q else 3000),
        "op_warmup": ck.env_int("OP_WARMUP", 200 if q else 300),
        "warmup_commits": ck.env_int("WARMUP_COMMITS", 1000 if q else 2000),
        "commit_rounds": ck.env_int("COMMIT_ROUNDS", 1 if q else 3),
        "quick": q,
        "broker_config_added": GROUP_CONFIG.strip().splitlines(),
    }
    if KAFKA_EXTRA_CONFIG:
        cfg["kafka_extra_config"] = KAFKA_EXTRA_CONFIG.splitlines()
    try:
        cfg["kafka_version"] = open(os.path.join(ck.LIBS, "VERSION")).read().strip()
    except OSError:
        cfg["kafka_version"] = "?"
    ck.Sluice.binary = os.path.abspath(args.sluice_bin)
    load_start = open("/proc/loadavg").read().split()[:3]

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = os.environ.get("BENCH_DIR") or os.path.join(REPO, "target", "bench-groups")
    base = os.path.abspath(base)
    results_dir = os.path.join(base, stamp)
    os.makedirs(results_dir, exist_ok=True)
    work = os.path.join(base, "work-" + stamp)
    log("config %s; results in %s" % (json.dumps(cfg), results_dir))

    started = datetime.datetime.now()
    brokers = {}
    try:
        for key, cls in (("kafka", GKafka), ("sluice", GSluice)):
            if not args.only or args.only == key:
                brokers[key] = cls(os.path.join(work, key))
        results = run_all(brokers, cfg, results_dir)
    finally:
        ck.stop_all(brokers, results_dir)
        shutil.rmtree(work, ignore_errors=True)

    table = build_table(cfg, results)
    failures = build_failures(results)
    details = ck.build_details(cfg, results)
    problems = log_problems(results_dir)
    cpu_model = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu_model = line.split(":", 1)[1].strip()
            break
    load_end = open("/proc/loadavg").read().split()[:3]
    conditions = [
        "- command: `%s`" % args.command,
        "- started %s, %d s in all (measured tests %s s); %d CPUs (%s), Linux %s; load average "
        "at the start %s, at the end %s"
        % (started.strftime("%Y-%m-%d %H:%M"), (datetime.datetime.now() - started).seconds,
           ck.fmt_num(results.get("tests_wall_s"), 0), os.cpu_count(), cpu_model,
           platform.release(), " ".join(load_start), " ".join(load_end)),
        "- both brokers: compare-kafka's server.properties (Kafka 4.1's shipped file, single "
        "node) plus `%s`" % "`, `".join(cfg["broker_config_added"]),
        *(["- **Kafka only** (KAFKA_EXTRA_CONFIG): `%s`" % "`, `".join(cfg["kafka_extra_config"])]
          if KAFKA_EXTRA_CONFIG else []),
        "- rebalance: one topic of %d partitions (empty), %d (then %d) KafkaConsumer threads in one JVM "
        "per mode and broker, fresh group per repetition; %d repetition(s) after %d warm-up "
        "repetition(s), the median of each figure. Clients: enable.auto.commit=false, "
        "poll(20 ms) loop; classic: heartbeat.interval.ms=100, session.timeout.ms=45000, "
        "max.poll.interval.ms=300000 (default); KIP-848: heartbeat interval from the broker "
        "(group.consumer.heartbeat.interval.ms=100), server-side default assignor"
        % (cfg["partitions"], cfg["members"], cfg["members"] + 1, cfg["reps"],
           cfg["warmup_reps"]),
        "- offsets: topic of 100 partitions; simple consumers (assign(), no generation), "
        "enable.auto.commit=false; %s call(s) per client for 1 client (%s untimed first), %s per "
        "client for 8 clients, %s committed() calls; %d round(s), the median; broker warm-up "
        "%s × commitSync of 100 partitions (not reported)"
        % (ck.fmt_num(cfg["commits"], 0), ck.fmt_num(cfg["op_warmup"], 0),
           ck.fmt_num(cfg["concurrent_commits"], 0), ck.fmt_num(cfg["fetches"], 0),
           cfg["commit_rounds"], ck.fmt_num(cfg["warmup_commits"], 0)),
    ]
    for key in ("kafka", "sluice"):
        r = results.get(key)
        if r and "sum_wall_s" in r:
            conditions.append(
                "- %s: answered Metadata %.1f s after start; during its tests (%.0f s) the "
                "machine used %.0f CPU s = broker %s + load generators %s + idle other broker "
                "%s + other processes %s"
                % (r["label"], r.get("startup_s", 0), r["sum_wall_s"],
                   r.get("sum_machine_cpu_s", 0), ck.fmt_num(r.get("sum_broker_cpu_s"), 1),
                   ck.fmt_num(r.get("sum_tool_cpu_s"), 1),
                   ck.fmt_num(r.get("sum_idle_broker_cpu_s", 0.0), 1),
                   ck.fmt_num(r.get("sum_other_cpu_s"), 1)))
    for label, lines in problems.items():
        conditions.append("- %s log: %d WARN/ERROR/panic lines" % (label, len(lines)))
        for line in lines[:8]:
            conditions.append("    - `%s`" % line[:300].replace("`", "'"))
    report = "\n".join([
        "## Consumer groups: Kafka %s%s vs Sluice (%s)"
        % (cfg["kafka_version"], " (with %s)" % ", ".join(cfg["kafka_extra_config"])
           if KAFKA_EXTRA_CONFIG else "", "quick" if q else "full"), "",
        table, "", *conditions, "", "Rebalance repetitions:", "", rebalance_reps(results), "",
        "Per test:", "", details, ""])
    if failures:
        report += "\nFailures:\n\n" + failures + "\n"
    print(report, flush=True)
    for path in (os.path.join(results_dir, "report.md"), os.path.join(base, "latest.md")):
        with open(path, "w") as f:
            f.write(report)
    with open(os.path.join(results_dir, "results.json"), "w") as f:
        json.dump({"config": cfg, "results": results, "log_problems": problems}, f, indent=2)
    shutil.copy(os.path.join(results_dir, "results.json"), os.path.join(base, "latest.json"))
    log("report written to %s (and %s); logs in %s"
        % (os.path.join(results_dir, "report.md"), os.path.join(base, "latest.md"), results_dir))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
