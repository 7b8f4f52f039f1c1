#!/usr/bin/env python3
"""Targeted probes for issue 19's stalled producer (run by hand; docs/reliability.md,
"Sluice", failed deliveries).

    python3 compat/cluster/stall_probe.py [--probes a,b,...] [--mode reset|blackhole]
                                          [--producers 3] [--recover 15] [--keep]

One 3-node combined cluster (BACKEND=sluice|kafka, SLUICE_BIN as for jepsen.py), a
4-partition topic (RF 3, min.insync.replicas 2) and the workload's idempotent acks=all
producers (jepsen.ProducerPool's configuration, librdkafka `debug=eos,broker` logged to
the work dir). Each probe applies one fault for 6 s, undoes it, and then requires, within
--recover seconds of the undo:
  - every producer to have an acknowledged write on every partition (a producer that
    stays stalled while the others deliver is what issue 19 saw);
  - a fresh producer bootstrapped from each broker alone to deliver to every partition
    (a broker whose InitProducerId or Produce path stays wedged after the fault);
  - the partition proxy to hold no connection record that is held (blackhole) after the
    heal, nor one whose forwarding tasks have ended while the record stays (a
    connection neither end is told is dead).
Probes:
  isolate-leader      isolate the leader of partition 0 (clients too), heal
  isolate-connect     isolate a leader, start a new producer during the cut (its first
                      connections accepted while cut), heal
  pause-leader        SIGSTOP the leader of partition 0 with requests in flight, SIGCONT
  pause-follower      SIGSTOP a follower, SIGCONT
  kill-leader         SIGKILL the leader of partition 0, restart on the same ports
  isolate-controller  isolate the active controller, heal
  kill-controller     SIGKILL the active controller, restart
Exit status 1 if any probe's requirement failed.
"""
import argparse
import collections
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster as C  # noqa: E402
import jepsen as J  # noqa: E402

TOPIC = "stall-probe"
PARTS = 4
PROBES = ["isolate-leader", "isolate-connect", "pause-leader", "pause-follower", "kill-leader",
          "isolate-controller", "kill-controller"]


class Prod:
    """One idempotent acks=all producer thread, the workload's configuration, recording
    the time of each ack per partition and every failed delivery."""

    def __init__(self, c, name, rate, logdir):
        self.c, self.name, self.rate = c, name, rate
        self.last_ack = {}
        self.failed = collections.Counter()
        self.acked = 0
        self.fatal = []
        self.stop_ev = threading.Event()
        self.log_path = os.path.join(logdir, "%s.rdkafka.log" % name)
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def conf(self):
        pool = J.ProducerPool(self.c, None, TOPIC)
        conf = pool.conf()
        conf["debug"] = "eos,broker"
        conf["log_level"] = 7
        return conf

    def _run(self):
        from confluent_kafka import Producer
        import logging
        logger = logging.getLogger(self.name)
        logger.propagate = False
        handler = logging.FileHandler(self.log_path)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)

        def on_delivery(err, msg):
            if err is None:
                self.last_ack[msg.partition()] = time.monotonic()
                self.acked += 1
            else:
                self.failed[str(err)] += 1

        def on_error(err):
            if err.fatal():
                self.fatal.append(str(err))

        conf = self.conf()
        conf["error_cb"] = on_error
        p = Producer(conf, logger=logger)
        i = 0
        interval = 1.0 / self.rate
        while not self.stop_ev.is_set():
            # Round robin over the partitions, so a stall of any one partition shows.
            try:
                p.produce(TOPIC, value=b"%s-%d" % (self.name.encode(), i), partition=i % PARTS,
                          on_delivery=on_delivery)
            except BufferError:
                pass
            i += 1
            p.poll(interval)
        p.flush(40)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stop_ev.set()
        self.thread.join(60)


def proxy_state(c):
    """(held, dead-but-registered, live) connection records of the proxy, as seen on its loop."""
    async def look():
        held = dead = live = 0
        for rec in list(c.net.conns):
            if rec["held"]:
                held += 1
            elif rec["tasks"] and all(t.done() for t in rec["tasks"]):
                dead += 1
            else:
                live += 1
        return held, dead, live
    return c.net.call(look)


def fresh_delivery(c, broker, timeout):
    """A new idempotent producer bootstrapped from `broker` alone delivers one write to
    every partition within `timeout` s; returns the partitions not delivered and errors."""
    from confluent_kafka import Producer
    conf = J.ProducerPool(c, None, TOPIC).conf()
    conf["bootstrap.servers"] = "127.0.0.1:%d" % c.nodes[broker].proxy["PLAINTEXT"]
    conf["message.timeout.ms"] = int(timeout * 1000)
    done, errs = set(), collections.Counter()

    def cb(err, msg):
        if err is None:
            done.add(msg.partition())
        else:
            errs[str(err)] += 1
    p = Producer(conf)
    for part in range(PARTS):
        p.produce(TOPIC, value=b"fresh", partition=part, on_delivery=cb)
    p.flush(timeout + 5)
    return sorted(set(range(PARTS)) - done), dict(errs)


def leader_of(admin, part):
    info = admin.partitions(TOPIC)
    return info[part][0] if info else None


def follower_of(admin, part):
    info = admin.partitions(TOPIC)
    leader, _, isr = info[part]
    return [f for f in isr if f != leader][0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probes", default=",".join(PROBES))
    ap.add_argument("--mode", choices=["reset", "blackhole"], default="reset")
    ap.add_argument("--producers", type=int, default=3)
    ap.add_argument("--rate", type=float, default=80.0)
    ap.add_argument("--hold", type=float, default=6.0)
    ap.add_argument("--recover", type=float, default=15.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    C.exit_on_signals()
    backend = os.environ.get("BACKEND", "sluice")
    wd = tempfile.mkdtemp(prefix="stall-probe-")
    c = C.Cluster(backend=backend, topology="combined", workdir=wd, keep=True)
    failures = []
    try:
        c.start()
        C.log("work dir %s (librdkafka logs: p*.rdkafka.log)" % wd)
        admin = J.Admin(c)
        admin.create_topic(TOPIC, PARTS, {"min.insync.replicas": "2",
                                          "unclean.leader.election.enable": "false"})
        prods = [Prod(c, "p%d" % i, args.rate, wd).start() for i in range(args.producers)]
        time.sleep(3)
        for rnd in range(args.repeat):
            for probe in args.probes.split(","):
                admin.wait_healthy(TOPIC, PARTS, timeout=60)
                extra = None
                t_fault = time.monotonic()
                if probe == "isolate-leader":
                    node = leader_of(admin, 0)
                    c.isolate([node], mode=args.mode)
                    time.sleep(args.hold)
                    c.heal()
                elif probe == "isolate-connect":
                    node = leader_of(admin, 0)
                    c.isolate([node], mode=args.mode)
                    time.sleep(1)
                    extra = Prod(c, "late%d" % rnd, args.rate, wd).start()
                    time.sleep(args.hold - 1)
                    c.heal()
                elif probe == "pause-leader":
                    node = leader_of(admin, 0)
                    c.pause(node)
                    time.sleep(args.hold)
                    c.resume(node)
                elif probe == "pause-follower":
                    node = follower_of(admin, 0)
                    c.pause(node)
                    time.sleep(args.hold)
                    c.resume(node)
                elif probe in ("kill-leader", "kill-controller"):
                    node = leader_of(admin, 0) if probe == "kill-leader" else c.active_controller()
                    c.kill(node)
                    time.sleep(args.hold)
                    c.start_node(node, wait=True, timeout=90)
                elif probe == "isolate-controller":
                    node = c.active_controller()
                    c.isolate([node], mode=args.mode)
                    time.sleep(args.hold)
                    c.heal()
                else:
                    raise SystemExit("unknown probe %s" % probe)
                t_undo = time.monotonic()
                # Every producer delivers to every partition again.
                group = prods + ([extra] if extra else [])
                waiting = {(pr.name, part) for pr in group for part in range(PARTS)}
                while waiting and time.monotonic() < t_undo + args.recover:
                    waiting = {(n, part) for (n, part) in waiting
                               for pr in group if pr.name == n
                               if pr.last_ack.get(part, 0) <= t_undo}
                    time.sleep(0.1)
                took = time.monotonic() - t_undo
                held, dead, live = proxy_state(c)
                line = ("%s node %s: all producers delivering again %.1fs after the undo; proxy "
                        "records held %d, ended-but-registered %d, live %d"
                        % (probe, node, took, held, dead, live))
                bad = []
                if waiting:
                    bad.append("still stalled after %.0fs: %s" % (args.recover, sorted(waiting)))
                if held or dead:
                    bad.append("proxy left %d held and %d ended connection records" % (held, dead))
                for b in c.brokers:
                    missing, errs = fresh_delivery(c, b.id, args.recover)
                    if missing:
                        bad.append("a fresh producer from broker %d delivered nothing to partitions "
                                   "%s in %.0fs (%s)" % (b.id, missing, args.recover, errs))
                if extra:
                    extra.stop()
                C.log(line + ("; " + "; ".join(bad) if bad else "; ok"))
                failures += ["%s: %s" % (probe, b) for b in bad]
                time.sleep(2)
        for pr in prods:
            pr.stop()
            C.log("producer %s: %d acked, failed %s, fatal %s"
                  % (pr.name, pr.acked, dict(pr.failed) or 0, pr.fatal or "none"))
            if pr.failed:
                failures.append("producer %s failed deliveries %s" % (pr.name, dict(pr.failed)))
    finally:
        c.stop()
        if not failures and not args.keep:
            shutil.rmtree(wd, ignore_errors=True)
    C.log("stall probe: %s" % ("PASS" if not failures else "FAIL:\n  " + "\n  ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
