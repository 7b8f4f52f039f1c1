#!/usr/bin/env python3
"""Driver of bench/client: producer and consumer throughput of Sluice's native Rust client
beside librdkafka (C, and confluent-kafka Python), on Sluice and on Apache Kafka 4.1.1. See
bench/client for usage and docs/benchmarks.md ("Native client") for what each figure means.

The brokers are started, measured and stopped by bench/compare-kafka's driver
(bench/compare-kafka.d/compare.py: Kafka, Sluice, Runner.create_topics); this file adds the
load generators, the tests and the table.
"""

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(REPO, "bench", "compare-kafka.d"))
import compare as ck  # noqa: E402

PARTITIONS = 6
# The settings every producer gets (Kafka's names; librdkafka's where they differ).
COMMON = {"acks": "all", "linger.ms": "5", "batch.size": "16384", "enable.idempotence": "true"}
CLIENTS = ["rust", "rdkafka-c", "rdkafka-py"]
# The settings every consumer gets (Kafka's names; librdkafka's where they differ).
CONSUMER_COMMON = {"fetch.min.bytes": "1", "fetch.max.wait.ms": "100",
                   "max.partition.fetch.bytes": "1048576"}
CONSUMER_LABEL = {"rust": "Rust consumer (client_compat consume-perf)",
                  "rdkafka-c": "librdkafka 2.16 C (rdkafka_consume.c)",
                  "rdkafka-py": "confluent-kafka Python (rdkafka_consumer.py)"}
CLIENT_LABEL = {"rust": "Rust producer (client_compat perf)",
                "rdkafka-c": "librdkafka 2.16 C (rdkafka_perf.c)",
                "rdkafka-py": "confluent-kafka Python (librdkafka 2.16)"}


def log(msg):
    print("client-bench: " + msg, file=sys.stderr, flush=True)


def settings(client, codec):
    s = dict(COMMON)
    if client == "rust":
        s["compression.type"] = codec
    else:
        s["compression.codec"] = codec
        # librdkafka's producer queue defaults to 1 GiB / 100,000 messages; the Rust and
        # Java producers buffer buffer.memory = 32 MiB: the same bound for both.
        s["queue.buffering.max.kbytes"] = "32768"
        s["queue.buffering.max.messages"] = "1000000"
    return s


def command(args, client, bootstrap, topic, records, size, codec):
    s = settings(client, codec)
    if client == "rust":
        cmd = [args.example_bin, "perf", bootstrap, topic, str(records), str(size)]
    elif client == "rdkafka-c":
        cmd = [args.rdkafka_perf, bootstrap, topic, str(records), str(size)]
    else:
        cmd = [sys.executable, os.path.join(HERE, "rdkafka_producer.py"), bootstrap, topic,
               str(records), str(size)]
    for k, v in s.items():
        cmd += ["-X", "%s=%s" % (k, v)]
    return ["/usr/bin/time", "-v"] + cmd


def consumer_command(args, client, bootstrap, topic, records):
    s = dict(CONSUMER_COMMON)
    if client == "rust":
        cmd = [args.example_bin, "consume-perf", bootstrap, topic, str(PARTITIONS), str(records)]
    else:
        s["fetch.wait.max.ms"] = s.pop("fetch.max.wait.ms")
        if client == "rdkafka-c":
            cmd = [args.rdkafka_consume, bootstrap, topic, str(PARTITIONS), str(records)]
        else:
            cmd = [sys.executable, os.path.join(HERE, "rdkafka_consumer.py"), bootstrap, topic,
                   str(PARTITIONS), str(records)]
    for k, v in s.items():
        cmd += ["-X", "%s=%s" % (k, v)]
    return ["/usr/bin/time", "-v"] + cmd


def timed(cmd, broker, path):
    """Runs cmd (under /usr/bin/time -v); returns (RESULT json or None, error or None,
    client CPU s, client peak RSS KiB, broker CPU s, wall s)."""
    cpu0 = broker.cpu_seconds()
    t0 = time.monotonic()
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    cpu1 = broker.cpu_seconds()
    with open(path, "w") as f:
        f.write("$ %s\n%s\n%s" % (" ".join(cmd), run.stdout, run.stderr))
    m = [l for l in run.stdout.splitlines() if l.startswith("RESULT ")]
    result = json.loads(m[-1][len("RESULT "):]) if m else None
    error = None
    if run.returncode != 0 or not m:
        own = [l for l in run.stderr.splitlines()
               if l.strip() and not l.startswith("\t") and not l.startswith("Command ")]
        error = "exit %d: %s" % (run.returncode, " / ".join(own[:1] + own[-1:])[:300])
    tv = dict(re.findall(r"^\s*(User time \(seconds\)|System time \(seconds\)|Maximum resident "
                         r"set size \(kbytes\)): ([\d.]+)$", run.stderr, re.M))
    ccpu = float(tv.get("User time (seconds)", 0)) + float(tv.get("System time (seconds)", 0))
    rss = int(tv.get("Maximum resident set size (kbytes)", 0))
    bcpu = (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else None
    return result, error, ccpu, rss, bcpu, wall


def consume_topic(codec, size):
    return "consume-%s-%d" % (codec, size)


def prepare_consume_topics(args, broker, results_dir, cfg):
    """Writes one topic per codec and value size with the Rust producer (the producer
    settings of the producer tests), for every consumer to read from the beginning."""
    for codec in cfg["codecs"]:
        for size in cfg["sizes"]:
            records = cfg["records_100"] if size == 100 else cfg["records_1k"]
            topic = consume_topic(codec, size)
            runner = ck.Runner(broker, [broker], results_dir, PARTITIONS)
            runner.create_topics([topic])
            cmd = command(args, "rust", broker.bootstrap, topic, records, size, codec)
            path = os.path.join(results_dir, "%s-%s-produce.log" % (broker.label.lower(), topic))
            _, error, _, _, _, _ = timed(cmd, broker, path)
            n = runner.log_end_records(topic)
            if error or n != records:
                raise RuntimeError("writing %s: %s (the log holds %d of %d records)"
                                   % (topic, error, n, records))


def run_consumer(args, broker, results_dir, client, codec, size, records, rep):
    topic = consume_topic(codec, size)
    cmd = consumer_command(args, client, broker.bootstrap, topic, records)
    path = os.path.join(results_dir, "%s-%s-%s-r%d.log" % (broker.label.lower(), topic, client, rep))
    result, error, ccpu, rss, bcpu, wall = timed(cmd, broker, path)
    res = {"kind": "consume", "client": client, "codec": codec, "size": size, "rep": rep,
           "topic": topic}
    if result:
        res.update(result)
    if not error and result.get("value_bytes_total") != records * size:
        error = "read %s records, %s value bytes; expected %d and %d" % (
            result.get("records"), result.get("value_bytes_total"), records, records * size)
    if error:
        res["error"] = error
        return res
    res.update({"client_cpu_s": ccpu, "client_max_rss_kib": rss, "broker_cpu_s": bcpu,
                "process_wall_s": round(wall, 3)})
    return res


def run_one(args, broker, results_dir, client, codec, size, records, rep):
    topic = "client-%s-%s-%d-r%d" % (client, codec, size, rep)
    runner = ck.Runner(broker, [broker], results_dir, PARTITIONS)
    runner.create_topics([topic])
    cmd = command(args, client, broker.bootstrap, topic, records, size, codec)
    cpu0 = broker.cpu_seconds()
    t0 = time.monotonic()
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    cpu1 = broker.cpu_seconds()
    path = os.path.join(results_dir, "%s-%s.log" % (broker.label.lower(), topic))
    with open(path, "w") as f:
        f.write("$ %s\n%s\n%s" % (" ".join(cmd), run.stdout, run.stderr))
    res = {"client": client, "codec": codec, "size": size, "rep": rep, "topic": topic}
    m = [l for l in run.stdout.splitlines() if l.startswith("RESULT ")]
    if run.returncode != 0 or not m:
        # the tool's own stderr, without /usr/bin/time -v's report (indented lines)
        own = [l for l in run.stderr.splitlines()
               if l.strip() and not l.startswith("\t") and not l.startswith("Command ")]
        summary = ""
        if m:
            r = json.loads(m[-1][len("RESULT "):])
            summary = "%s of %s acknowledged in %ss; " % (r.get("acked"), records, r.get("seconds"))
        res["error"] = "exit %d: %s%s" % (run.returncode, summary, " / ".join(own[:1] + own[-1:])[:300])
        return res
    res.update(json.loads(m[-1][len("RESULT "):]))
    tv = dict(re.findall(r"^\s*(User time \(seconds\)|System time \(seconds\)|Maximum resident "
                         r"set size \(kbytes\)): ([\d.]+)$", run.stderr, re.M))
    res["client_cpu_s"] = float(tv.get("User time (seconds)", 0)) + float(
        tv.get("System time (seconds)", 0))
    res["client_max_rss_kib"] = int(tv.get("Maximum resident set size (kbytes)", 0))
    res["broker_cpu_s"] = (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else None
    res["process_wall_s"] = round(wall, 3)
    n = runner.log_end_records(topic)
    if n != records:
        res["error"] = "the log holds %d records, %d were acknowledged" % (n, records)
    return res


def median(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None and "error" not in r]
    return statistics.median(vals) if vals else None


def consumer_table(results, brokers, cfg):
    lines = []
    for b in brokers:
        lines.append("")
        lines.append("**%s**, consumers" % b)
        lines.append("")
        lines.append("| codec | value | consumer | records/s | MB/s | client CPU s / wall s | "
                     "broker CPU s / wall s | startup s | client peak RSS MiB |")
        lines.append("|---|---:|---|---:|---:|---:|---:|---:|---:|")
        for codec in cfg["codecs"]:
            for size in cfg["sizes"]:
                for client in CLIENTS:
                    rows = [r for r in results if r.get("kind") == "consume" and r["broker"] == b
                            and r["client"] == client and r["codec"] == codec
                            and r["size"] == size]
                    ok = [r for r in rows if "error" not in r]
                    if not ok:
                        err = rows[0].get("error") if rows else "not run"
                        lines.append("| %s | %d B | %s | failed: %s | | | | | |"
                                     % (codec, size, client, (err or "")[:80]))
                        continue
                    # the broker's and client's CPU are over the whole process (startup
                    # included), so set beside the process's wall time
                    pwall = median(ok, "process_wall_s")
                    lines.append("| %s | %d B | %s | %s | %.1f | %.2f / %.2f | %.2f / %.2f | "
                                 "%.2f | %.1f |"
                                 % (codec, size, client, format(int(median(ok, "records_per_s")), ","),
                                    median(ok, "mb_per_s"), median(ok, "client_cpu_s"), pwall,
                                    median(ok, "broker_cpu_s"), pwall, median(ok, "startup_s"),
                                    median(ok, "client_max_rss_kib") / 1024))
    return "\n".join(lines)


def table(results, brokers, cfg):
    results = [r for r in results if r.get("kind") != "consume"]
    lines = []
    for b in brokers:
        lines.append("")
        lines.append("**%s**" % b)
        lines.append("")
        lines.append("| codec | value | producer | records/s | MB/s | client CPU s / wall s | "
                     "broker CPU s / wall s | client peak RSS MiB |")
        lines.append("|---|---:|---|---:|---:|---:|---:|---:|")
        for codec in cfg["codecs"]:
            for size in cfg["sizes"]:
                for client in CLIENTS:
                    rows = [r for r in results if r["broker"] == b and r["client"] == client
                            and r["codec"] == codec and r["size"] == size]
                    ok = [r for r in rows if "error" not in r]
                    if not ok:
                        err = rows[0].get("error") if rows else "not run"
                        lines.append("| %s | %d B | %s | failed: %s | | | | |"
                                     % (codec, size, client, (err or "")[:80]))
                        continue
                    rps = median(ok, "records_per_s")
                    mbs = median(ok, "mb_per_s")
                    secs = median(ok, "seconds")
                    ccpu = median(ok, "client_cpu_s")
                    bcpu = median(ok, "broker_cpu_s")
                    rss = median(ok, "client_max_rss_kib")
                    lines.append("| %s | %d B | %s | %s | %.1f | %.2f / %.2f | %.2f / %.2f | %.1f |"
                                 % (codec, size, client, format(int(rps), ","), mbs, ccpu,
                                    secs, bcpu, secs, rss / 1024))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sluice-bin")
    ap.add_argument("--example-bin", required=True)
    ap.add_argument("--rdkafka-perf", required=True)
    ap.add_argument("--rdkafka-consume", required=True)
    ap.add_argument("--mode", choices=["both", "produce", "consume"], default="both",
                    help="producer tests, consumer tests, or both (the default)")
    ap.add_argument("--only", choices=["kafka", "sluice"])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--command", default="bench/client")
    args = ap.parse_args()
    cfg = {"reps": ck.env_int("REPS", 1 if args.quick else 3),
           "records_100": ck.env_int("RECORDS_100", 200000 if args.quick else 1000000),
           "records_1k": ck.env_int("RECORDS_1K", 50000 if args.quick else 200000),
           "codecs": ["none", "lz4"], "sizes": [100, 1024]}
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = os.environ.get("BENCH_DIR") or os.path.join(REPO, "target", "bench-client")
    results_dir = os.path.join(base, stamp)
    os.makedirs(results_dir, exist_ok=True)
    brokers = []
    if args.only != "kafka":
        ck.Sluice.binary = args.sluice_bin
        brokers.append(("Sluice", ck.Sluice))
    if args.only != "sluice":
        brokers.append(("Kafka 4.1.1", ck.Kafka))
    results = []
    failures = []
    load0 = os.getloadavg()[0]
    for label, cls in brokers:
        broker = cls(os.path.join(results_dir, label.split()[0].lower()))
        try:
            log("starting %s" % label)
            broker.start()
            for rep in range(cfg["reps"] if args.mode != "consume" else 0):
                for codec in cfg["codecs"]:
                    for size in cfg["sizes"]:
                        records = cfg["records_100"] if size == 100 else cfg["records_1k"]
                        # the order of the clients rotates with the repetition
                        order = CLIENTS[rep % 3:] + CLIENTS[:rep % 3]
                        for client in order:
                            if not broker.alive():
                                raise RuntimeError("%s exited:\n%s" % (label, broker.log_tail()))
                            res = run_one(args, broker, results_dir, client, codec, size,
                                          records, rep)
                            res["broker"] = label
                            results.append(res)
                            log("%s %s %s %dB rep %d: %s" % (
                                label, client, codec, size, rep + 1,
                                res.get("error") or "%d records/s, %.1f MB/s, client CPU %.2fs"
                                % (res["records_per_s"], res["mb_per_s"], res["client_cpu_s"])))
                            if "error" in res:
                                failures.append("%s %s %s %dB rep %d: %s" % (
                                    label, client, codec, size, rep + 1, res["error"]))
            if args.mode != "produce":
                prepare_consume_topics(args, broker, results_dir, cfg)
            for rep in range(cfg["reps"] if args.mode != "produce" else 0):
                for codec in cfg["codecs"]:
                    for size in cfg["sizes"]:
                        records = cfg["records_100"] if size == 100 else cfg["records_1k"]
                        order = CLIENTS[rep % 3:] + CLIENTS[:rep % 3]
                        for client in order:
                            if not broker.alive():
                                raise RuntimeError("%s exited:\n%s" % (label, broker.log_tail()))
                            res = run_consumer(args, broker, results_dir, client, codec, size,
                                               records, rep)
                            res["broker"] = label
                            results.append(res)
                            log("%s consume %s %s %dB rep %d: %s" % (
                                label, client, codec, size, rep + 1,
                                res.get("error") or "%d records/s, %.1f MB/s, client CPU %.2fs"
                                % (res["records_per_s"], res["mb_per_s"], res["client_cpu_s"])))
                            if "error" in res:
                                failures.append("%s consume %s %s %dB rep %d: %s" % (
                                    label, client, codec, size, rep + 1, res["error"]))
            broker_rss = broker.peak_rss_mib()
            results.append({"broker": label, "client": "-", "broker_peak_rss_mib": broker_rss})
        finally:
            broker.stop()
    report = ["# bench/client (%s)" % datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
              "",
              "`%s`: %d repetition(s), %s records of 100 B and %s of 1 KiB per test, %d "
              "partitions; medians. Machine: %s, %d CPUs, load average %.1f at the start."
              % (args.command, cfg["reps"], format(cfg["records_100"], ","),
                 format(cfg["records_1k"], ","), PARTITIONS, platform.machine(),
                 os.cpu_count(), load0),
              ""]
    if args.mode != "consume":
        report += ["Producers: " + ", ".join("%s=%s" % kv for kv in COMMON.items()) + ".",
                   table(results, [b for b, _ in brokers], cfg), ""]
    if args.mode != "produce":
        report += ["Consumers: assign all %d partitions, from the beginning, no group; %s "
                   "(librdkafka: fetch.wait.max.ms); topics written by the Rust producer with "
                   "the producer settings; records/s from the assign to the last record; startup s: to the first record." % (
                       PARTITIONS, ", ".join("%s=%s" % kv for kv in CONSUMER_COMMON.items())),
                   consumer_table(results, [b for b, _ in brokers], cfg), ""]
    if failures:
        report += ["Failed:", ""] + ["- " + f for f in failures]
    text = "\n".join(report)
    print(text)
    for name, content in (("report.md", text), ("results.json", json.dumps(results, indent=1))):
        with open(os.path.join(results_dir, name), "w") as f:
            f.write(content)
        with open(os.path.join(base, "latest." + name.split(".")[1]), "w") as f:
            f.write(content)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
