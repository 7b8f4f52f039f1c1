#!/usr/bin/env python3
"""Start / restart / stop the Apache Kafka that compat/groups/run.sh --kafka uses.

    kafka_ctl.py start WORKDIR     # new single-node KRaft Kafka (kafka_local.py); prints the bootstrap
    kafka_ctl.py restart WORKDIR   # SIGTERM (clean shutdown), then start again with the same
                                   # server.properties: same ports, same log dir
    kafka_ctl.py stop WORKDIR

Kafka runs in its own session and outlives this script; WORKDIR/kafka.pid names it.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kafka"))
from kafka_local import LocalKafka, java_cmd, stop_pid  # noqa: E402

EXTRA = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.replication.factor": "1"}


def start(workdir):
    k = LocalKafka(workdir, extra_props=EXTRA)
    k.start(detach=True)
    try:
        k.wait_ready()
    except BaseException:
        k.stop()
        raise
    print(k.bootstrap)


def restart(workdir):
    stop_pid(workdir)
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
    if len(argv) != 3 or argv[1] not in ("start", "restart", "stop"):
        print(__doc__, file=sys.stderr)
        return 2
    workdir = os.path.abspath(argv[2])
    {"start": start, "restart": restart, "stop": stop_pid}[argv[1]](workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
