#!/usr/bin/env python3
"""The fault test of issue 10 on `examples/order_stats` (see README.md).

    check.py BOOTSTRAP WORK ORDER_STATS [--orders N] [--kills K] [--seed S]

librdkafka (confluent-kafka) writes N JSON orders with bounded disorder into a
3-partition topic while `order_stats` runs as a child process and is SIGKILLed K times
(odd runs at a random moment, even runs once window results of their own sit in an open
transaction), each time restarted with the same arguments; trailing orders then push
every partition's watermark past the last window and a final run ends by itself
(`--exit-when-idle-ms`). The read_committed output must equal a batch computation over
the input, each window once.

Prints "PASS stream: <check>" / "FAIL stream: <check>: <reason>" lines and "# ..." details;
exits 1 if any check failed.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

SUITE = "stream"
WINDOW_MS = 5 * 60 * 1000
# order_stats' bounded out-of-orderness is 10 s; the input stays well inside it.
DISORDER_MS_MAX = 8_000
# Trailing orders: this far after the last order, so every partition's watermark
# (max timestamp - 10 s - 1 ms) passes the end of the last window holding an order.
TRAILING_AFTER_MS = 60 * 60 * 1000
PARTITIONS = 3
REGIONS = ["EU", "US", "APAC", "LATAM"]
# About two thirds COMPLETED; the rest must be filtered out.
STATUSES = ["COMPLETED"] * 7 + ["PENDING", "CANCELLED", "REFUNDED"]
# order_stats sums amounts as f64: cents are not exact in binary, so totals may differ
# in the last bits with the order of addition (which a restart may change); any missing
# or repeated order changes a total by at least 0.01 (and its count by 1).
TOTAL_TOLERANCE = 1e-6
# 2026-01-01T00:00:00Z, on a window boundary.
BASE_MS = 1_767_225_600_000

results = {"passed": 0, "failed": 0}


def check(name, ok, reason=""):
    if ok:
        results["passed"] += 1
        print(f"PASS {SUITE}: {name}", flush=True)
    else:
        results["failed"] += 1
        print(f"FAIL {SUITE}: {name}: {reason}", flush=True)
    return ok


def note(text):
    print(f"# {text}", flush=True)


def make_orders(count, rng):
    """(partition, order) in send order: created_at rises 500 ms per order on average,
    each shifted forward by up to DISORDER_MS_MAX, so any order is at most that much
    older than one sent before it."""
    orders = []
    for index in range(count):
        created_at = BASE_MS + index * 500 + rng.randrange(DISORDER_MS_MAX)
        order = {
            "order_id": f"o-{index:06d}",
            "customer_id": f"c-{rng.randrange(500):04d}",
            "amount": rng.randrange(100, 50_000) / 100,
            "currency": rng.choice(["EUR", "USD"]),
            "created_at": created_at,
            "status": rng.choice(STATUSES),
            "region": rng.choice(REGIONS),
        }
        orders.append((rng.randrange(PARTITIONS), order))
    return orders


def trailing_orders(orders):
    last = max(order["created_at"] for _, order in orders)
    return [
        (partition, {
            "order_id": f"trailing-{partition}", "customer_id": "c-none", "amount": 0.0,
            "currency": "EUR", "created_at": last + TRAILING_AFTER_MS,
            "status": "TRAILING", "region": "EU",
        })
        for partition in range(PARTITIONS)
    ]


def batch_stats(orders):
    """{(region, window_start): (count, total)} over COMPLETED orders."""
    stats = {}
    for _, order in orders:
        if order["status"] != "COMPLETED":
            continue
        start = order["created_at"] - order["created_at"] % WINDOW_MS
        count, total = stats.get((order["region"], start), (0, 0.0))
        stats[(order["region"], start)] = (count + 1, total + order["amount"])
    return stats


class Feeder(threading.Thread):
    """Produces orders in paced slices (idempotent, acks=all), counting acknowledgements."""

    def __init__(self, bootstrap, topic, orders, slice_size, pause_s):
        super().__init__(daemon=True)
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "linger.ms": 5,
        })
        self.topic, self.orders = topic, orders
        self.slice_size, self.pause_s = slice_size, pause_s
        self.acked, self.errors = 0, []
        self.done = threading.Event()

    def on_delivery(self, error, _message):
        if error is None:
            self.acked += 1
        else:
            self.errors.append(str(error))

    def send(self, orders):
        for partition, order in orders:
            self.producer.produce(self.topic, json.dumps(order).encode(),
                                  key=order["order_id"].encode(), partition=partition,
                                  on_delivery=self.on_delivery)
            self.producer.poll(0)
        return self.producer.flush(30)

    def run(self):
        try:
            for start in range(0, len(self.orders), self.slice_size):
                left = self.send(self.orders[start:start + self.slice_size])
                if left:
                    self.errors.append(f"{left} orders not acknowledged within 30 s")
                    return
                time.sleep(self.pause_s)
        except Exception as error:  # noqa: BLE001 (reported as a check)
            self.errors.append(repr(error))
        finally:
            self.done.set()


def read_output(bootstrap, topic, isolation, timeout_s=30):
    """Every record of `topic` up to its end (read_committed: the last stable offset)."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"stream-check-{time.time_ns()}",
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "isolation.level": isolation, "enable.partition.eof": True,
    })
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    at_end, values = set(), []
    deadline = time.monotonic() + timeout_s
    try:
        while len(at_end) < PARTITIONS:
            if time.monotonic() > deadline:
                raise TimeoutError(f"partitions {sorted(set(range(PARTITIONS)) - at_end)} "
                                   f"not read to their end within {timeout_s} s")
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                    continue
                raise RuntimeError(str(message.error()))
            at_end.discard(message.partition())
            values.append(message.value())
    finally:
        consumer.close()
    return values


class OpenTransactionWatcher:
    """Output records in an open transaction, per partition: the high watermark minus the
    last stable offset (librdkafka's ListOffsets carries the consumer's isolation level)."""

    def __init__(self, bootstrap, topic):
        self.topic = topic
        self.consumers = {
            isolation: Consumer({"bootstrap.servers": bootstrap, "group.id": "stream-watch",
                                 "isolation.level": isolation})
            for isolation in ("read_uncommitted", "read_committed")
        }

    def end(self, isolation, partition):
        return self.consumers[isolation].get_watermark_offsets(
            TopicPartition(self.topic, partition), timeout=5, cached=False)[1]

    def ends(self):
        """[(high watermark, last stable offset)] per partition; None when the broker did
        not answer in time."""
        try:
            return [(self.end("read_uncommitted", p), self.end("read_committed", p))
                    for p in range(PARTITIONS)]
        except Exception:  # noqa: BLE001 (a slow answer: nothing seen this time)
            return None

    def open_records_since(self, before):
        """Records in transactions opened after `before` (the ends when a run started), so
        neither a killed run's lingering transaction nor the markers that end it: a
        partition counts when its last stable offset is at or past its high watermark of
        `before` and behind its high watermark now."""
        now = self.ends()
        if now is None or before is None:
            return 0
        return sum(high - stable for (high, stable), (high_before, _) in zip(now, before)
                   if high_before <= stable < high)

    def close(self):
        for consumer in self.consumers.values():
            consumer.close()


def completed_checkpoints(directory):
    if not os.path.isdir(directory):
        return []
    return sorted(name for name in os.listdir(directory)
                  if name.startswith("chk-") and os.path.exists(os.path.join(directory, name, "_metadata")))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bootstrap")
    parser.add_argument("work")
    parser.add_argument("order_stats")
    parser.add_argument("--orders", type=int, default=5000)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--parallelism", type=int, default=1,
                        help="order_stats --parallelism (above 1: execute_parallel)")
    parser.add_argument("--topic-prefix", default="",
                        help="prefix of the input and output topics (suites sharing a broker)")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    global SUITE
    if args.parallelism > 1:
        SUITE = "stream-parallel"
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    note(f"seed {seed} (--seed {seed} repeats the input and the kill delays)")

    input_topic, output_topic = args.topic_prefix + "orders", args.topic_prefix + "order-stats"
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    futures = admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in (input_topic, output_topic)])
    try:
        for future in futures.values():
            future.result(30)
    except Exception as error:  # noqa: BLE001
        check("create the input and output topics (3 partitions each)", False, repr(error))
        return
    check("create the input and output topics (3 partitions each)", True)

    orders = make_orders(args.orders, rng)
    trailing = trailing_orders(orders)
    expected = batch_stats(orders)
    completed = sum(1 for _, o in orders if o["status"] == "COMPLETED")
    note(f"{len(orders)} orders ({completed} COMPLETED) over "
         f"{(max(o['created_at'] for _, o in orders) - BASE_MS) / 60000:.1f} min of event time, "
         f"disorder < {DISORDER_MS_MAX} ms; expected {len(expected)} window results")

    checkpoint_dir = os.path.join(args.work, "checkpoints")
    command = [args.order_stats, "--bootstrap", args.bootstrap, "--input", input_topic,
               "--output", output_topic, "--checkpoint-dir", checkpoint_dir,
               "--checkpoint-interval-ms", "500"]
    if args.parallelism > 1:
        command += ["--parallelism", str(args.parallelism)]
    note("runs: " + " ".join(command) + " (the final run adds --exit-when-idle-ms 3000)")

    # A first fifth before the first run, the rest paced across the killed runs.
    head = len(orders) // 5
    feeder = Feeder(args.bootstrap, input_topic, orders[head:], slice_size=100, pause_s=0.5)
    if feeder.send(orders[:head]):
        check("produce the orders", False, "the first orders were not acknowledged within 30 s")
        return
    feeder.start()

    # Odd runs die at a random moment; even runs as soon as window results sit in an open
    # transaction (the output's high watermark passed its last stable offset): the moment
    # where a wrong commit or abort after the restart loses or repeats output.
    watcher = OpenTransactionWatcher(args.bootstrap, output_topic)
    kills = []
    for run in range(1, args.kills + 1):
        targeted = run % 2 == 0
        delay_s = rng.uniform(1.5, 4.5)
        with open(os.path.join(args.work, f"run-{run}.err"), "wb") as err:
            process = subprocess.Popen(command, stdout=err, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL)
            started_run = time.monotonic()
            ends_before = watcher.ends()
            open_records = 0
            if targeted:
                deadline = started_run + 8.0
                while time.monotonic() < deadline and process.poll() is None:
                    open_records = watcher.open_records_since(ends_before)
                    if open_records:
                        break
                    time.sleep(0.02)
            else:
                time.sleep(delay_s)
                open_records = watcher.open_records_since(ends_before)
            running = process.poll() is None
            process.send_signal(signal.SIGKILL)
            process.wait()
        after_s = time.monotonic() - started_run
        kills.append((run, after_s, running, len(completed_checkpoints(checkpoint_dir)),
                      feeder.acked, open_records))
        how = ("once window results were in an open transaction" if targeted
               else "at a random moment")
        note(f"run {run}: SIGKILLed {how} after {after_s:.2f} s "
             f"({'running' if running else f'had exited with {process.returncode}'}; "
             f"{open_records} output records of its own uncommitted); {kills[-1][3]} completed "
             f"checkpoints retained; {kills[-1][4]} orders acknowledged")
    watcher.close()
    not_running = [k for k in kills if not k[2]]
    check(f"{args.kills} runs SIGKILLed while running (odd runs at a random moment, even runs "
          f"once their window results sat in an open transaction), each restarted with the "
          f"same arguments", not not_running,
          f"runs {[k[0] for k in not_running]} had exited before the SIGKILL "
          f"(see run-N.err with --keep): "
          + " | ".join(open(os.path.join(args.work, f"run-{k[0]}.err"), errors="replace").read()[-300:]
                       for k in not_running[:1]))

    feeder.done.wait(120)
    if not check(f"produce {len(orders)} orders and {PARTITIONS} trailing orders (librdkafka, "
                 f"idempotent, acks=all)",
                 not feeder.errors and feeder.done.is_set()
                 and feeder.acked == len(orders) and not feeder.send(trailing),
                 f"acknowledged {feeder.acked} of {len(orders)}: {feeder.errors[:3]}"):
        return

    # Before the final run: what the killed runs left.
    checkpoints_before = completed_checkpoints(checkpoint_dir)
    try:
        before = [json.loads(v) for v in read_output(args.bootstrap, output_topic, "read_committed")]
    except Exception as error:  # noqa: BLE001
        check("read the committed output before the final run", False, repr(error))
        return

    if os.environ.get("STREAM_SELF_TEST") == "drop-checkpoints":
        # A self-test of the checks: the final run starts over from the earliest offsets
        # and emits every window again, which "no duplicates" must catch.
        note("STREAM_SELF_TEST=drop-checkpoints: the checkpoint dir is removed before the final run")
        shutil.rmtree(checkpoint_dir, ignore_errors=True)

    started = time.monotonic()
    final_command = command + ["--exit-when-idle-ms", "3000"]
    final = subprocess.run(final_command, capture_output=True, timeout=120,
                           stdin=subprocess.DEVNULL)
    with open(os.path.join(args.work, "run-final.err"), "wb") as err:
        err.write(final.stdout + final.stderr)
    stdout = final.stdout.decode(errors="replace").strip()
    note(f"final run: exit {final.returncode} after {time.monotonic() - started:.1f} s: {stdout}")
    check("the final run (--exit-when-idle-ms 3000) ends by itself with exit 0",
          final.returncode == 0,
          f"exit {final.returncode}: {(final.stderr.decode(errors='replace'))[-400:]}")

    restored = "restored from Some(" in stdout
    on_open = [k[0] for k in kills if k[5] > 0]
    check("kills landed mid-run: before the final run checkpoints were completed and some but "
          "not all windows committed, at least one run died with window results in an open "
          "transaction, and the final run restored from a checkpoint",
          checkpoints_before and 0 < len(before) < len(expected) and restored and on_open,
          f"{len(checkpoints_before)} completed checkpoints ({checkpoints_before}), "
          f"{len(before)} of {len(expected)} window results committed, runs killed with an "
          f"open output transaction: {on_open}, final run said: {stdout!r}")
    note(f"before the final run: checkpoints {checkpoints_before}, {len(before)} of "
         f"{len(expected)} window results committed")

    try:
        values = read_output(args.bootstrap, output_topic, "read_committed")
        uncommitted = read_output(args.bootstrap, output_topic, "read_uncommitted")
    except Exception as error:  # noqa: BLE001
        check("read the output with isolation.level=read_committed", False, repr(error))
        return
    note(f"output: {len(values)} records read_committed, {len(uncommitted)} read_uncommitted "
         f"(the difference: records of aborted transactions of killed runs)")

    got, malformed = [], []
    for value in values:
        try:
            record = json.loads(value)
            fields = {"region", "window_start", "window_end", "count", "total"}
            assert set(record) == fields, f"fields {sorted(record)}"
            assert record["window_end"] - record["window_start"] == WINDOW_MS, "not 5 minutes"
            assert record["window_start"] % WINDOW_MS == 0, "window not aligned"
            got.append(record)
        except Exception as error:  # noqa: BLE001
            malformed.append(f"{value[:120]!r}: {error}")
    check("every output record is {region, window_start, window_end, count, total} of an "
          "aligned 5-minute window", not malformed, f"{len(malformed)} malformed: {malformed[:3]}")

    keys = Counter((r["region"], r["window_start"]) for r in got)
    duplicates = {k: n for k, n in keys.items() if n > 1}
    check("no duplicates: each (region, window) committed once", not duplicates,
          f"{len(duplicates)} windows more than once, e.g. "
          f"{sorted(duplicates.items())[:5]}")

    missing = sorted(set(expected) - set(keys))
    extra = sorted(set(keys) - set(expected))
    check(f"the set of (region, window) equals the batch computation's ({len(expected)})",
          not missing and not extra,
          f"missing {len(missing)} {missing[:5]}, unexpected {len(extra)} {extra[:5]}")

    by_key = {}
    for r in got:
        by_key.setdefault((r["region"], r["window_start"]), r)
    wrong_counts = [(k, by_key[k]["count"], expected[k][0]) for k in sorted(by_key)
                    if k in expected and by_key[k]["count"] != expected[k][0]]
    check("each window's count equals the batch count of its COMPLETED orders (exact)",
          not wrong_counts,
          f"{len(wrong_counts)} differ (window, got, expected): {wrong_counts[:5]}")
    wrong_totals = [(k, by_key[k]["total"], round(expected[k][1], 2)) for k in sorted(by_key)
                    if k in expected and abs(by_key[k]["total"] - expected[k][1]) > TOTAL_TOLERANCE]
    check(f"each window's total equals the batch sum of its amounts (f64 sums: within "
          f"{TOTAL_TOLERANCE})", not wrong_totals,
          f"{len(wrong_totals)} differ (window, got, expected): {wrong_totals[:5]}")
    got_sum = sum(r["count"] for r in got)
    note(f"{got_sum} COMPLETED orders counted in the output, {completed} in the input")


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # noqa: BLE001
        check("(suite)", False, repr(error))
    sys.exit(1 if results["failed"] else 0)
