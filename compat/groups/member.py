#!/usr/bin/env python3
"""One librdkafka group member in its own process, for checks that kill it (SIGKILL).

    member.py '{"bootstrap": B, "group": G, "topic": T, "name": N, "conf": {...},
                "mode": {"commit_every": 5, "delay": 0.01}}'

Subscribes to T in group G and prints one JSON line per event, flushed at once:
  {"ev": "assign"|"revoke"|"lost", "gen": <generation>, "parts": [...], "member": id}
  {"ev": "gen", "gen": g}                        the generation librdkafka reports changed
  {"ev": "record", "p": partition, "o": offset, "v": value}   (printed = "processed")
  {"ev": "commit", "err": null, "offsets": {"p": next offset}} after a synchronous commit
  {"ev": "error", "msg": ...}
mode.commit_every=n: after every n records, commit (synchronously) the next offset of
every partition consumed so far. mode.delay: seconds of "processing" per record.
Closes the consumer (leaving the group, unless it is static) when stdin reaches EOF, then
exits. A parent that dies takes this process with it (PR_SET_PDEATHSIG).
"""

import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import consumer_conf, gen_of, rebalance_callbacks  # noqa: E402
from confluent_kafka import Consumer, TopicPartition  # noqa: E402


def die_with_parent():
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except Exception:  # noqa: BLE001
        pass


def main():
    die_with_parent()
    spec = json.loads(sys.argv[1])
    mode = spec.get("mode", {})
    out_lock = threading.Lock()

    def emit(ev):
        with out_lock:
            sys.stdout.write(json.dumps(ev) + "\n")
            sys.stdout.flush()

    stop = threading.Event()

    def watch_stdin():
        try:
            sys.stdin.read()
        finally:
            stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    c = Consumer(consumer_conf(spec["bootstrap"], spec["group"], spec["name"], spec.get("conf")))
    a, r, lost = rebalance_callbacks(emit, c)
    c.subscribe([spec["topic"]], on_assign=a, on_revoke=r, on_lost=lost)
    every = mode.get("commit_every", 0)
    delay = mode.get("delay", 0)
    consumed = {}
    since_commit = 0
    gen = None
    try:
        while not stop.is_set():
            m = c.poll(0.05)
            g = gen_of(c.consumer_group_metadata())
            if g != gen:
                gen = g
                emit({"ev": "gen", "gen": g})
            if m is None:
                continue
            if m.error():
                emit({"ev": "error", "msg": str(m.error())})
                continue
            if delay:
                time.sleep(delay)
            emit({"ev": "record", "p": m.partition(), "o": m.offset(),
                  "v": m.value().decode() if m.value() else None})
            consumed[m.partition()] = m.offset() + 1
            since_commit += 1
            if every and since_commit >= every:
                offs = [TopicPartition(spec["topic"], p, o) for p, o in sorted(consumed.items())]
                try:
                    res = c.commit(offsets=offs, asynchronous=False)
                except Exception as e:  # noqa: BLE001 - e.g. a rebalance: retried later
                    emit({"ev": "error", "msg": "commit: %s" % e})
                else:
                    emit({"ev": "commit", "err": None,
                          "offsets": {str(tp.partition): tp.offset for tp in res}})
                    since_commit = 0
    except Exception as e:  # noqa: BLE001
        emit({"ev": "error", "msg": "%s: %s" % (type(e).__name__, e)})
    finally:
        c.close()
        emit({"ev": "closed"})


if __name__ == "__main__":
    main()
