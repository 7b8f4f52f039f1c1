#!/usr/bin/env python3
"""A failover timeline, run by hand (docs/reliability.md, "Availability side by side").

    python3 compat/cluster/failover_timeline.py [kill-controller|isolate-controller|kill-leader|isolate-leader] [REPS]

Starts a 3-node combined cluster (BACKEND=sluice|kafka, SLUICE_BIN as for jepsen.py), one
idempotent acks=all producer on a 4-partition topic, and injects the fault REPS times
(6 s each, 8 s to settle). Prints every change of each partition's leader and ISR as a
metadata poll every 100 ms sees it, delivery errors, and each partition's longest gap
between acknowledged writes after each fault; the nodes' logs stay in the printed work
dir for the election and fencing times.
"""
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster as C  # noqa: E402
import jepsen as J  # noqa: E402
from confluent_kafka import Producer  # noqa: E402

fault = sys.argv[1] if len(sys.argv) > 1 else "kill-controller"
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
backend = os.environ.get("BACKEND", "sluice")
wd = os.path.join(tempfile.gettempdir(), "failover-timeline-%s-%s" % (backend, fault))
shutil.rmtree(wd, ignore_errors=True)
c = C.Cluster(backend=backend, topology="combined", workdir=wd, keep=True)
c.start()
adm = J.Admin(c)
adm.create_topic("t", 4, {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"})
acks = {p: [] for p in range(4)}
lock = threading.Lock()
stop = threading.Event()
T0 = time.time()
def run():
    p = Producer(dict(J.CLIENT_TIMEOUTS, **{"bootstrap.servers": c.bootstrap(), "acks": "all",
        "enable.idempotence": True, "message.timeout.ms": 30000, "linger.ms": 5,
        "request.timeout.ms": 5000}))
    def cb(err, msg):
        if err is None:
            with lock:
                acks[msg.partition()].append(time.time())
        else:
            print("%.3f   delivery error p%d %s" % (time.time() - T0, msg.partition(), err), flush=True)
    i = 0
    while not stop.is_set():
        for part in range(4):
            p.produce("t", value=b"%d" % i, partition=part, on_delivery=cb)
        i += 1
        p.poll(0.01)
    p.flush(30)
th = threading.Thread(target=run, daemon=True); th.start()
def monitor():
    from confluent_kafka.admin import AdminClient
    a = AdminClient(dict(J.CLIENT_TIMEOUTS, **{"bootstrap.servers": c.bootstrap()}))
    last = {}
    while not stop.is_set():
        try:
            md = a.list_topics("t", timeout=1)
            for p, pm in md.topics["t"].partitions.items():
                v = (pm.leader, tuple(pm.isrs))
                if last.get(p) != v:
                    last[p] = v
                    print("%.3f   md p%d leader %s isr %s" % (time.time() - T0, p, v[0], v[1]), flush=True)
        except Exception as e:
            pass
        time.sleep(0.1)
threading.Thread(target=monitor, daemon=True).start()
time.sleep(5)
res = []
for r in range(reps):
    ac = c.active_controller()
    parts = adm.partitions("t")
    if fault == "kill-controller" or fault == "isolate-controller":
        victim = ac
    else:
        victim = parts[0][0]
    led = [p for p, v in parts.items() if v[0] == victim]
    t = time.time()
    print("%.3f fault %s victim %s (active controller %s) leads %s" % (t - T0, fault, victim, ac, led), flush=True)
    if fault.startswith("kill"):
        c.kill(victim); time.sleep(6); c.start_node(victim, wait=False)
    else:
        c.isolate([victim]); time.sleep(6); c.heal()
    time.sleep(8)
    with lock:
        for p in range(4):
            ts = [x for x in acks[p] if x >= t - 0.5]
            before = [x for x in acks[p] if x < t]
            prev = before[-1] if before else t
            gaps = [(b - a, a) for a, b in zip([prev] + ts, ts)]
            g, a = max(gaps)
            print("   partition %d (leader %s): longest gap %.2fs from %.3f" % (p, parts[p][0], g, a - T0), flush=True)
            res.append(g)
    c.wait_ready(60)
    time.sleep(3)
stop.set(); th.join(40)
c.stop()
print("T0 (epoch s)", T0, "; work dir", wd)
