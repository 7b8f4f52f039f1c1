#!/usr/bin/env python3
"""Start / SIGKILL / restart / stop the Apache Kafka that compat/txn/run.sh --kafka uses.

    kafka_ctl.py start WORKDIR     # new single-node KRaft Kafka (kafka_local.py) with the
                                   # transaction settings below; prints the bootstrap
    kafka_ctl.py kill WORKDIR      # SIGKILL (no clean shutdown) and wait until it is gone
    kafka_ctl.py restart WORKDIR   # start again with the same server.properties: same
                                   # ports, same log dir; waits until it serves Metadata
    kafka_ctl.py stop WORKDIR      # clean shutdown (SIGTERM)

Kafka runs in its own session and outlives this script; WORKDIR/kafka.pid names it.
"""

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kafka"))
from kafka_local import LocalKafka, _pid_is_our_kafka, java_cmd, stop_pid  # noqa: E402

# The settings both brokers get in compat/txn (Sluice through --set, see run.sh).
EXTRA = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
    # Kafka only: a broker restarted after a SIGKILL cannot register again until the old
    # registration's session expires (DuplicateBrokerRegistrationException); the default
    # 9 s would make each broker-kill restart take ~15 s
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}


def start(workdir):
    k = LocalKafka(workdir, extra_props=EXTRA)
    k.start(detach=True)
    try:
        k.wait_ready()
    except BaseException:
        k.stop()
        raise
    print(k.bootstrap)


def kill(workdir):
    pidfile = os.path.join(workdir, "kafka.pid")
    with open(pidfile) as f:
        pid = int(f.read().strip())
    if _pid_is_our_kafka(pid, workdir):
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _pid_is_our_kafka(pid, workdir) and time.monotonic() < deadline:
            time.sleep(0.05)
    os.unlink(pidfile)


def restart(workdir):
    k = LocalKafka(workdir)
    k.config = os.path.join(workdir, "server.properties")
    with open(k.config) as f:
        props = dict(l.strip().split("=", 1) for l in f if "=" in l)
    k.port = int(props["listeners"].split(",")[0].rsplit(":", 1)[1])
    with open(os.path.join(workdir, "kafka.out"), "ab") as out:
        k.proc = subprocess.Popen(java_cmd("kafka.Kafka", k.config), stdout=out,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  start_new_session=True)
    k.pid = k.proc.pid
    with open(os.path.join(workdir, "kafka.pid"), "w") as f:
        f.write("%d\n" % k.pid)
    k.wait_ready()
    print(k.bootstrap)


def main(argv):
    cmds = {"start": start, "kill": kill, "restart": restart, "stop": stop_pid}
    if len(argv) != 3 or argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    cmds[argv[1]](os.path.abspath(argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
