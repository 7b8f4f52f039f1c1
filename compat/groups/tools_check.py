#!/usr/bin/env python3
"""Kafka's kafka-consumer-groups.sh (org.apache.kafka.tools.consumer.group.ConsumerGroupCommand
from compat/kafka/libs, run as the script runs it) against a broker.

    python3 compat/groups/tools_check.py BOOTSTRAP LIBS_DIR

Setup: a 6-partition topic with 10 records per partition; a group of two librdkafka
members (range: 3 partitions each) that commits offset p+2 for partition p.
Checks (suite "kafka-tools"):
  --list                               the group is listed
  --describe --group (active)          per partition CURRENT-OFFSET p+2, LOG-END-OFFSET 10,
                                       LAG 8-p, CLIENT-ID of the member that owns it
  --describe --members                 two rows: the two client ids, #PARTITIONS 3 and 3
  --describe --group (no members)      after both members left: the same offsets, no
                                       consumer, and the "has no active members" note
  --reset-offsets --to-earliest --execute --topic T: NEW-OFFSET 0 for each partition;
                                       OffsetFetch then reads 0 everywhere
  --delete --group                     "successful"; --list no longer lists it and
                                       OffsetFetch returns no offsets
"""

import os
import subprocess
import sys

from common import (ALL, Member, T, close_all, committed, create_topic, name, produce,
                    wait_stable)
from confluent_kafka import TopicPartition
from checklib import Checks, CheckFailed, expect, main_guard

BOOTSTRAP = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
LIBS = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "kafka", "libs")
HERE = os.path.dirname(os.path.abspath(__file__))
checks = Checks("kafka-tools")
TOPIC, GROUP = name("tg"), name("gtg")
CLS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
PROPS = os.path.join(os.environ.get("TMPDIR", "/tmp"), "groups-tools-%s.properties" % GROUP)


def tool(*args, timeout=25):
    """Run the tool; return stdout (raise CheckFailed on a non-zero exit)."""
    cmd = ["java", "-Xms64m", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
           "-XX:-UsePerfData",
           "-Dlog4j2.configurationFile=" + os.path.join(HERE, "..", "kafka", "log4j2.properties"),
           "-cp", os.path.join(LIBS, "*"), CLS, "--bootstrap-server", BOOTSTRAP,
           "--command-config", PROPS, *args]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise CheckFailed("%s: no exit within %ss" % (" ".join(args), timeout))
    if p.returncode != 0:
        err = " ".join(l for l in p.stderr.splitlines() if not l.strip().startswith("at "))
        raise CheckFailed("exit %d: %s %s" % (p.returncode, err[-400:], p.stdout[-200:]))
    LAST_ERR[0] = p.stderr
    return p.stdout


LAST_ERR = [""]


def table(out, first_col="GROUP"):
    """Rows of the tool's table output as dicts keyed by the header's columns."""
    rows, header = [], None
    for line in out.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == first_col:
            header = f
            continue
        if header and len(f) == len(header):
            rows.append(dict(zip(header, f)))
    if header is None:
        raise CheckFailed("no table header in output: %r" % out[-300:])
    return rows


def by_partition(rows):
    return {int(r["PARTITION"]): r for r in rows if r.get("TOPIC") == TOPIC}


def main():
    with open(PROPS, "w") as f:
        f.write("request.timeout.ms=8000\ndefault.api.timeout.ms=10000\n")
    create_topic(BOOTSTRAP, TOPIC)
    produce(BOOTSTRAP, TOPIC, 10)
    conf = {"partition.assignment.strategy": "range"}
    members = [Member(BOOTSTRAP, GROUP, TOPIC, "tools-a", conf),
               Member(BOOTSTRAP, GROUP, TOPIC, "tools-b", conf)]
    owner = {}
    try:
        def setup():
            got = wait_stable(members, timeout=30, settle=0.3)
            for m in members:
                for p in got[m.name]:
                    owner[p] = m.name
                offs = [TopicPartition(TOPIC, p, p + 2) for p in sorted(got[m.name])]
                m.call(lambda c, offs=offs: c.commit(offsets=offs, asynchronous=False))
            expect(committed(BOOTSTRAP, GROUP, TOPIC), {p: p + 2 for p in ALL}, "OffsetFetch")
        checks.run("setup: 2 members, commits p+2", setup)
        S = ["setup: 2 members, commits p+2"]

        def list_():
            out = tool("--list", "--timeout", "10000")
            if GROUP not in out.split():
                raise CheckFailed("%s not in --list output %r" % (GROUP, out[-300:]))
        checks.run("--list", list_, deps=S)

        def describe_active():
            rows = by_partition(table(tool("--describe", "--group", GROUP, "--timeout", "10000")))
            expect(sorted(rows), sorted(ALL), "partitions described")
            for p, r in rows.items():
                got = (r["GROUP"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"], r["CLIENT-ID"])
                expect(got, (GROUP, str(p + 2), "10", str(8 - p), owner[p]),
                       "partition %d (GROUP, CURRENT-OFFSET, LOG-END-OFFSET, LAG, CLIENT-ID)" % p)
                if not r["CONSUMER-ID"].startswith(owner[p]):
                    raise CheckFailed("partition %d CONSUMER-ID %r" % (p, r["CONSUMER-ID"]))
        checks.run("--describe --group (active group)", describe_active, deps=S)

        def describe_members():
            rows = table(tool("--describe", "--members", "--group", GROUP, "--timeout", "10000"))
            got = sorted((r["GROUP"], r["CLIENT-ID"], r["#PARTITIONS"]) for r in rows)
            expect(got, [(GROUP, "tools-a", "3"), (GROUP, "tools-b", "3")],
                   "--members rows (GROUP, CLIENT-ID, #PARTITIONS)")
            ids = {r["CONSUMER-ID"] for r in rows}
            expect(ids, {m.member_id for m in members}, "CONSUMER-IDs")
        checks.run("--describe --members", describe_members, deps=S)

        def describe_empty():
            close_all(members)
            out = tool("--describe", "--group", GROUP, "--timeout", "10000")
            rows = by_partition(table(out))
            expect(sorted(rows), sorted(ALL), "partitions described")
            for p, r in rows.items():
                got = (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"], r["CONSUMER-ID"],
                       r["HOST"], r["CLIENT-ID"])
                expect(got, (str(p + 2), "10", str(8 - p), "-", "-", "-"),
                       "partition %d (CURRENT-OFFSET, LOG-END-OFFSET, LAG, CONSUMER-ID, HOST, "
                       "CLIENT-ID)" % p)
            note = "Consumer group '%s' has no active members." % GROUP
            if note not in LAST_ERR[0] + out:  # Kafka 4.1 prints it to stderr
                raise CheckFailed("no %r note: %r" % (note, (LAST_ERR[0] + out)[:300]))
        checks.run("--describe --group (after the members left)", describe_empty, deps=S)

        def reset():
            rows = by_partition(table(tool("--reset-offsets", "--to-earliest", "--execute",
                                           "--group", GROUP, "--topic", TOPIC)))
            expect({p: r["NEW-OFFSET"] for p, r in rows.items()}, {p: "0" for p in ALL},
                   "NEW-OFFSET per partition")
            expect(committed(BOOTSTRAP, GROUP, TOPIC), {p: 0 for p in ALL},
                   "OffsetFetch after the reset")
        checks.run("--reset-offsets --to-earliest --execute --topic",
                   reset, deps=["--describe --group (after the members left)"])

        def delete():
            out = tool("--delete", "--group", GROUP)
            want = "Deletion of requested consumer groups ('%s') was successful." % GROUP
            if want not in out:
                raise CheckFailed("output %r, expected %r" % (out[-300:], want))
            out = tool("--list", "--timeout", "10000")
            if GROUP in out.split():
                raise CheckFailed("%s still listed after --delete" % GROUP)
            expect(committed(BOOTSTRAP, GROUP, TOPIC), {p: None for p in ALL},
                   "OffsetFetch after --delete")
        checks.run("--delete --group", delete, deps=["--describe --group (after the members left)"])
    finally:
        close_all(members)
        try:
            os.unlink(PROPS)
        except OSError:
            pass


if __name__ == "__main__":
    sys.exit(main_guard(checks, main))
