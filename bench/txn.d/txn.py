#!/usr/bin/env python3
"""Driver of bench/txn: transactional produce throughput and commit latency, Apache Kafka
4.1 and Sluice in one run. See bench/txn for usage and what each figure means.

The brokers are started, configured, measured and stopped by bench/compare-kafka's
driver (bench/compare-kafka.d/compare.py: Kafka, Sluice, Runner.run_tool, stop_all, ...);
this file only adds the transaction settings, the tests and the table.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True   # no __pycache__ beside compare.py
sys.path.insert(0, os.path.join(REPO, "bench", "compare-kafka.d"))
import compare as ck  # noqa: E402

# Appended to compare-kafka's server.properties (Kafka 4.1's shipped file, which has the
# first two lines already, with the same values) for both brokers.
TXN_CONFIG = ("transaction.state.log.replication.factor=1\n"
              "transaction.state.log.min.isr=1\n"
              "group.initial.rebalance.delay.ms=0\n")

VALUE_SIZE = 100
WARMUP_TOPIC = "txn-warmup"


def log(msg):
    print("txn: " + msg, file=sys.stderr, flush=True)


class TKafka(ck.Kafka):
    def extra_config(self):
        return super().extra_config() + TXN_CONFIG


class TSluice(ck.Sluice):
    def extra_config(self):
        return super().extra_config() + TXN_CONFIG


def result_line(out):
    res = None
    for line in out.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[len("RESULT "):])
    return res


def test_plan(cfg):
    """[(name, mode, transaction size)], in the order they run (and are tabled)."""
    plan = [("txn-%d" % n, "txn", n) for n in cfg["txn_sizes"]]
    plan.append(("idempotent", "idempotent", 0))
    return plan


def whole_txns(records, size):
    """records rounded up to whole transactions of `size` (0: no transactions)."""
    return records if size <= 0 else -(-records // size) * size


def topic_name(name, rep):
    return "%s-r%d" % (name, rep + 1)


# ---------------------------------------------------------------------------- tests

def produce(run, cfg, classes, name, topic, mode, size, records, warmup, tag):
    # A transactional.id of its own per run: a fresh producer id, no fencing of an
    # earlier run's producer.
    ident = "bench-txn-%s-%s-%s" % (tag, run.broker.label.lower(), time.strftime("%H%M%S"))
    cmd = ["java", *ck.TOOL_JVM, "-cp", classes + os.pathsep + os.path.join(ck.LIBS, "*"),
           "TxnBench", run.broker.bootstrap, topic, str(cfg["partitions"]), mode, str(size),
           str(records), str(warmup), str(VALUE_SIZE), ident]
    out = run.run_tool(tag, cmd, timeout=300 + records // 500)
    r = result_line(out)
    if not r:
        raise ck.Failure("no result line:\n" + "\n".join(out.splitlines()[-8:]))
    if r.get("records") != records:
        raise ck.Failure("%s of %d records produced" % (r.get("records"), records))
    if "offsets_error" in r:
        r["log_mismatch"] = "the log check (endOffsets) failed: " + r["offsets_error"]
    elif r["hw_sum"] != r["expected_offsets"] or r["lso_sum"] != r["hw_sum"]:
        r["log_mismatch"] = (
            "the partitions' high watermarks sum to %d, last stable offsets to %d; expected "
            "%d for both (%d records%s)" % (
                r["hw_sum"], r["lso_sum"], r["expected_offsets"], records + warmup,
                " + one commit marker per partition per transaction" if mode == "txn" else ""))
    return r


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
    log("%s: %s: %s" % (runner.broker.label, name, json.dumps(res)))
    store.setdefault(name, []).append(res)
    return res


def run_all(brokers, cfg, results_dir, classes):
    keys = list(brokers)
    allb = list(brokers.values())
    runners = {k: ck.Runner(b, allb, results_dir, cfg["partitions"]) for k, b in brokers.items()}
    results = {k: {"label": b.label, "tests": {}} for k, b in brokers.items()}
    plan = test_plan(cfg)
    topics = [WARMUP_TOPIC] + [topic_name(name, rep) for name, _, _ in plan
                               for rep in range(cfg["reps"])]
    live = []
    for k in keys:
        b, res = brokers[k], results[k]
        try:
            log("starting %s (work dir %s)" % (b.label, b.workdir))
            res["startup_s"] = round(b.start(), 2)
            log("%s answers Metadata after %.1fs" % (b.label, res["startup_s"]))
            runners[k].create_topics(topics)
            live.append(k)
        except Exception as e:  # noqa: BLE001 - startup, storage format, topic creation
            res["error"] = "%s: %s" % (type(e).__name__, e)
            log("%s FAILED: %s" % (b.label, res["error"]))
            if b.started() and not b.alive():
                res["log_tail"] = b.log_tail()
    # Not reported: the brokers' JIT, the transaction state topic's creation, the client.
    size0 = cfg["txn_sizes"][0]
    for k in live:
        w = record(runners[k], results[k].setdefault("warmup", {}), "warmup",
                   lambda: produce(runners[k], cfg, classes, "warmup", WARMUP_TOPIC, "txn",
                                   size0, whole_txns(cfg["broker_warmup_records"], size0), 0,
                                   "warmup"))
        if "error" in w:
            results[k]["warmup_error"] = w["error"]
        results[k]["cpu_setup_s"] = brokers[k].cpu_seconds()

    t_start = time.monotonic()
    i = 0
    for rep in range(cfg["reps"]):
        for name, mode, size in plan:
            order = live if i % 2 == 0 else live[::-1]
            i += 1
            records = whole_txns(cfg["records"], size)
            warmup = whole_txns(cfg["warmup_records"], size)
            tag = name if cfg["reps"] == 1 else "%s-r%d" % (name, rep + 1)
            for k in order:
                record(runners[k], results[k]["tests"], name,
                       lambda: produce(runners[k], cfg, classes, name, topic_name(name, rep),
                                       mode, size, records, warmup, tag))
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

    def metric(res, test, key):
        """(median over the repetitions that passed, text if not all did)."""
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
            return v, ck.fmt_num(v) + " (%d of %d reps failed)" % (len(runs) - len(ok), len(runs))
        return v, None

    def add(label, kv, ke, sv, se, digits=None):
        ratio = sv / kv if kv and sv else None
        rows.append("| %s | %s | %s | %s |" % (
            label, ke or ck.fmt_num(kv, digits), se or ck.fmt_num(sv, digits),
            "%.2f×" % ratio if ratio is not None else "—"))

    def row(label, test, key, digits=None):
        add(label, *metric(k, test, key), *metric(s, test, key), digits)

    for name, mode, size in test_plan(cfg):
        if mode == "txn":
            what = "transactions of %s records" % ck.fmt_num(size, 0)
        else:
            what = "idempotent, no transactions (baseline)"
        row("%s: records/s" % what, name, "records_per_sec")
        row("%s: MB/s" % what, name, "mb_per_sec", 1)
        if mode == "txn":
            row("%s: commitTransaction p50 ms (lower is better)" % what, name,
                "commit_p50_ms", 2)
            row("%s: commitTransaction p99 ms (lower is better)" % what, name,
                "commit_p99_ms", 2)

    def whole(res, key):
        if not res:
            return None, None
        return res.get(key), (None if res.get(key) is not None else "failed")

    add("broker CPU s over its measured tests", *whole(k, "sum_broker_cpu_s"),
        *whole(s, "sum_broker_cpu_s"), 1)
    add("broker peak RSS (VmHWM), MiB", *whole(k, "peak_rss_mib"), *whole(s, "peak_rss_mib"), 1)
    return "\n".join(rows)


def rep_table(cfg, results):
    """Every repetition's figures, for the report."""
    lines = ["| test | broker | records/s per rep | commit p50 ms per rep | commit p99 ms per rep "
             "| transaction p50 ms per rep (begin → commit returned) |",
             "|---|---|---|---|---|---|"]
    for key in ("kafka", "sluice"):
        res = results.get(key)
        if not res:
            continue
        for name, _, _ in test_plan(cfg):
            runs = res.get("tests", {}).get(name, [])
            cols = []
            for f, d in (("records_per_sec", 0), ("commit_p50_ms", 2), ("commit_p99_ms", 2),
                         ("txn_p50_ms", 2)):
                cols.append(", ".join("✗" if "error" in t else ck.fmt_num(t.get(f), d)
                                      for t in runs) or "—")
            lines.append("| %s | %s | %s |" % (name, res["label"], " | ".join(cols)))
    return "\n".join(lines)


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
            for rep, t in enumerate(runs):
                for msg in (t.get("error"), t.get("log_mismatch")):
                    if not msg or msg.strip() in seen:
                        continue
                    seen.add(msg.strip())
                    out.append("- %s, %s%s: %s" % (
                        label, name, "" if len(runs) == 1 else " (rep %d)" % (rep + 1),
                        msg.strip().replace("\n", "\n    ")))
        if res.get("exit") is not None:
            out.append("- %s exited with status %s before the end; its last output:\n    %s"
                       % (label, res["exit"],
                          res.get("log_tail", "").strip().replace("\n", "\n    ")))
    return "\n".join(out)


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


def compile_driver(dest):
    """javac TxnBench.java against Kafka's jars, once per run."""
    os.makedirs(dest, exist_ok=True)
    p = subprocess.run(["javac", "-nowarn", "-cp", os.path.join(ck.LIBS, "*"), "-d", dest,
                        os.path.join(HERE, "TxnBench.java")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise SystemExit("txn: javac TxnBench.java failed:\n" + p.stdout)
    return dest


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repetition, fewer records")
    ap.add_argument("--only", choices=("kafka", "sluice"), help="run one broker only")
    ap.add_argument("--sluice-bin", help="the Sluice binary (not needed with --only kafka)")
    ap.add_argument("--command", default="bench/txn")
    args = ap.parse_args()
    if args.only != "kafka" and not args.sluice_bin:
        ap.error("--sluice-bin is required unless --only kafka")
    ck._sigterm_to_exit()

    q = args.quick
    cfg = {
        "reps": ck.env_int("REPS", 1 if q else 3),
        "records": ck.env_int("RECORDS", 50_000 if q else 200_000),
        "warmup_records": ck.env_int("WARMUP_RECORDS", 10_000 if q else 50_000),
        "broker_warmup_records": ck.env_int("BROKER_WARMUP_RECORDS", 10_000 if q else 20_000),
        "txn_sizes": [int(x) for x in os.environ.get("TXN_SIZES", "100,1000").split(",") if x],
        "partitions": 6,
        "value_size": VALUE_SIZE,
        "quick": q,
        "broker_config_added": TXN_CONFIG.strip().splitlines(),
    }
    try:
        cfg["kafka_version"] = open(os.path.join(ck.LIBS, "VERSION")).read().strip()
    except OSError:
        cfg["kafka_version"] = "?"
    if args.sluice_bin:
        ck.Sluice.binary = os.path.abspath(args.sluice_bin)
    load_start = open("/proc/loadavg").read().split()[:3]

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = os.environ.get("BENCH_DIR") or os.path.join(REPO, "target", "bench-txn")
    base = os.path.abspath(base)
    results_dir = os.path.join(base, stamp)
    os.makedirs(results_dir, exist_ok=True)
    work = os.path.join(base, "work-" + stamp)
    log("config %s; results in %s" % (json.dumps(cfg), results_dir))
    classes = compile_driver(os.path.join(work, "classes"))

    started = datetime.datetime.now()
    brokers = {}
    try:
        for key, cls in (("kafka", TKafka), ("sluice", TSluice)):
            if not args.only or args.only == key:
                brokers[key] = cls(os.path.join(work, key))
        results = run_all(brokers, cfg, results_dir, classes)
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
    sizes = ", ".join(ck.fmt_num(n, 0) for n in cfg["txn_sizes"])
    conditions = [
        "- command: `%s`" % args.command,
        "- started %s, %d s in all (measured tests %s s); %d CPUs (%s), Linux %s; load average "
        "at the start %s, at the end %s"
        % (started.strftime("%Y-%m-%d %H:%M"), (datetime.datetime.now() - started).seconds,
           ck.fmt_num(results.get("tests_wall_s"), 0), os.cpu_count(), cpu_model,
           platform.release(), " ".join(load_start), " ".join(load_end)),
        "- both brokers: compare-kafka's server.properties (Kafka 4.1's shipped file, single "
        "node) plus `%s`" % "`, `".join(cfg["broker_config_added"]),
        "- one Java KafkaProducer per test (bench/txn.d/TxnBench.java): acks=all, "
        "enable.idempotence=true, linger.ms=5, batch.size default (16384); %d-byte values, no "
        "key; record i to partition i %% %d of a fresh topic of %d partitions; transactions "
        "of %s records (beginTransaction, sends, commitTransaction), baseline: the same "
        "records without transactional.id, flush() at the end"
        % (VALUE_SIZE, cfg["partitions"], cfg["partitions"], sizes),
        "- per test: %s records untimed (same producer), then %s timed records; %d "
        "repetition(s), the median of each figure; who goes first alternates test by test; "
        "broker warm-up %s records in transactions of %s (not reported)"
        % (ck.fmt_num(cfg["warmup_records"], 0), ck.fmt_num(cfg["records"], 0), cfg["reps"],
           ck.fmt_num(cfg["broker_warmup_records"], 0), ck.fmt_num(cfg["txn_sizes"][0], 0)),
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
        "## Transactions: Kafka %s vs Sluice (%s)" % (cfg["kafka_version"],
                                                      "quick" if q else "full"), "",
        table, "", *conditions, "",
        "MB/s = 2^20 bytes of record values per second (as Kafka's perf tools count); "
        "records/s from the first timed send to the return of the last commitTransaction() "
        "(baseline: of flush()); commit latency = one commitTransaction() call.", "",
        "Repetitions:", "", rep_table(cfg, results), "",
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
