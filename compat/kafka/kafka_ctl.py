#!/usr/bin/env python3
"""Start / SIGKILL / restart / stop the Apache Kafka a compat suite's --kafka mode uses
(compat/groups, compat/txn).

    kafka_ctl.py start WORKDIR [KEY=VALUE ...]  # new single-node KRaft Kafka (kafka_local.py)
                                                # with these extra server settings; prints
                                                # the bootstrap
    kafka_ctl.py kill WORKDIR      # SIGKILL (no clean shutdown) and wait until it is gone
    kafka_ctl.py restart WORKDIR   # SIGTERM if it runs, then start again with the same
                                   # server.properties: same ports, same log dir; waits
                                   # until it serves Metadata; prints the bootstrap
    kafka_ctl.py stop WORKDIR      # clean shutdown (SIGTERM)

Kafka runs in its own session and outlives this script; WORKDIR/kafka.pid names it.
"""

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kafka_local import LocalKafka, _pid_is_our_kafka, java_cmd, stop_pid  # noqa: E402


def start(workdir, settings):
    extra = dict(s.split("=", 1) for s in settings)
    k = LocalKafka(workdir, extra_props=extra)
    k.start(detach=True)
    try:
        k.wait_ready()
    except BaseException:
        k.stop()
        raise
    print(k.bootstrap)


def kill(workdir, _settings):
    pidfile = os.path.join(workdir, "kafka.pid")
    with open(pidfile) as f:
        pid = int(f.read().strip())
    if _pid_is_our_kafka(pid, workdir):
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _pid_is_our_kafka(pid, workdir) and time.monotonic() < deadline:
            time.sleep(0.05)
    os.unlink(pidfile)


def restart(workdir, _settings):
    stop_pid(workdir)  # nothing to do after a kill
    k = LocalKafka(workdir)
    k.config = os.path.join(workdir, "server.properties")
    with open(k.config) as f:
        props = dict(line.strip().split("=", 1) for line in f if "=" in line)
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
    cmds = {"start": start, "kill": kill, "restart": restart,
            "stop": lambda workdir, _settings: stop_pid(workdir)}
    if len(argv) < 3 or argv[1] not in cmds or (argv[1] != "start" and len(argv) != 3):
        print(__doc__, file=sys.stderr)
        return 2
    cmds[argv[1]](os.path.abspath(argv[2]), argv[3:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
