#!/usr/bin/env python3
"""Round trips with every codec: the native producer writes, third-party clients judge.

    python3 compat/client/roundtrip.py BOOTSTRAP WORKDIR LIBS DATA_DIR|- [SUITE]

For each codec (none, gzip, snappy, lz4, zstd): a 6-partition topic; client_compat produce
sends 400 records (-X compression.type=CODEC, batch.size=4096, linger.ms=5, idempotence
on by default): keys from a pool of ascii, UTF-8, binary and empty keys (and some null
keys), values of 0-3000 bytes (text, random bytes, empty, null), 0-3 headers (null header
values, repeated names), explicit CreateTime timestamps. Checks per codec:
  read back      a confluent-kafka (librdkafka, check.crcs) consumer reads every partition
                 from the beginning: each record is at the (partition, offset) the producer
                 reported, with the same key, value, headers and timestamp, and each
                 partition holds the records sent to it in send order, nothing else
  murmur2        every keyed record is on the partition librdkafka's murmur2_random
                 partitioner (Java-compatible murmur2) picks for its key (librdkafka
                 produces the key pool to a reference topic with as many partitions)
  on disk        (DATA_DIR given) Kafka's DumpLogSegments reads the partitions' segment
                 files: every batch carries the codec, a valid CRC and a producer id
"""

import os
import random
import re
import subprocess
import sys

sys.dont_write_bytecode = True
from common import (JVM, T, Checks, CheckFailed, create_topics, expect, main_guard, name,  # noqa: E402
                    rdkafka_partitions, read_all, rust_produce)

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PARTITIONS = 6
RECORDS = 400
BASE_TS = 1764460800000  # 2025-11-30T00:00:00Z


def key_pool():
    rnd = random.Random(7)
    keys = [b"", b"a", b"order-1", b"order-2", b"user-42", "東京リージョン".encode(),
            "Grüße".encode(), "😀".encode(), b"\x00", b"\xff", b"\x80\x00\x00\x00"]
    keys += [("key-%d" % i).encode() for i in range(25)]
    keys += [bytes(rnd.randrange(256) for _ in range(rnd.choice([1, 3, 8, 16, 64, 300])))
             for _ in range(14)]
    return keys


def records_for(codec, keys):
    rnd = random.Random("roundtrip-" + codec)
    out = []
    for i in range(RECORDS):
        key = None if i % 23 == 5 else rnd.choice(keys)
        kind = rnd.randrange(10)
        if kind == 0:
            value = None
        elif kind == 1:
            value = b""
        elif kind < 6:
            value = (("record %d of %s; " % (i, codec)) * rnd.randrange(1, 150)).encode()
        else:
            value = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 3000)))
        headers = []
        for h in range(rnd.randrange(4)):
            hname = rnd.choice(["trace-id", "content-type", "ключ", "h%d" % h])
            hval = None if rnd.randrange(5) == 0 else ("%s=%d" % (hname, i)).encode()
            headers.append((hname.encode(), hval))
        out.append((key, value, headers, BASE_TS + i * 17))
    return out


def compare(codec, sent, placed, got):
    """sent[i] placed at placed[i] = (partition, offset); got: Messages of the topic."""
    by_pos = {(m.partition(), m.offset()): m for m in got}
    expect(len(got), len(sent), "records read back")
    for i, ((key, value, headers, ts), pos) in enumerate(zip(sent, placed)):
        m = by_pos.get(pos)
        if m is None:
            raise CheckFailed("record %d: nothing at partition %d offset %d" % (i, pos[0], pos[1]))
        mh = [(n.encode(), v) for n, v in (m.headers() or [])]
        gkey = m.key()
        if key == b"" and gkey is None:
            gkey = b""  # see README: librdkafka may surface an empty key as NULL
        for what, g, w in (("key", gkey, key), ("value", m.value(), value), ("headers", mh, headers),
                           ("timestamp", m.timestamp(), (1, ts))):
            if g != w:
                raise CheckFailed("record %d at %d/%d %s: got %r, expected %r"
                                  % (i, pos[0], pos[1], what, g if g is None or len(repr(g)) < 80
                                     else repr(g)[:80] + "...", w if w is None or len(repr(w)) < 80
                                     else repr(w)[:80] + "..."))
    # send order per partition: offsets increase with the index
    last = {}
    for i, (p, o) in enumerate(placed):
        if p in last and o <= last[p][1]:
            raise CheckFailed("records %d and %d of partition %d: offsets %d then %d"
                              % (last[p][0], i, p, last[p][1], o))
        last[p] = (i, o)


def dump_codecs(libs, data_dir, topics):
    """{(topic, partition): [(codec, crcValid, producerId) per batch]} by DumpLogSegments."""
    files = []
    for t in topics:
        for p in range(PARTITIONS):
            d = os.path.join(data_dir, "%s-%d" % (t, p))
            files += [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".log")]
    run = subprocess.run(JVM + ["-cp", os.path.join(libs, "*"), "kafka.tools.DumpLogSegments",
                                "--files", ",".join(files)],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    if run.returncode != 0:
        raise CheckFailed("DumpLogSegments: exit %d: %s" % (run.returncode, run.stderr[-400:]))
    out, cur = {}, None
    for line in run.stdout.splitlines():
        m = re.match(r"Dumping (.*)$", line)
        if m:
            part = os.path.basename(os.path.dirname(m.group(1)))
            t, p = part.rsplit("-", 1)
            cur = out.setdefault((t, int(p)), [])
            continue
        if line.startswith("baseOffset:") and cur is not None:
            f = dict(re.findall(r"(\w+): (\S+)", line))
            cur.append((f.get("compresscodec"), f.get("isvalid"), f.get("producerId")))
    return out


def main(bootstrap, workdir, libs, data_dir, checks):
    keys = key_pool()
    topics = {c: name("rt-" + c) for c in CODECS}
    ref = name("rt-murmur2-ref")
    create_topics(bootstrap, dict({t: PARTITIONS for t in topics.values()}, **{ref: PARTITIONS}))
    sent, placed = {}, {}
    for c in CODECS:
        sent[c] = records_for(c, keys)

        def produce(c=c):
            placed[c] = rust_produce(bootstrap, topics[c], sent[c], workdir,
                                     ["compression.type=" + c, "batch.size=4096", "linger.ms=5"])
        checks.run("%s: the native producer sends %d keyed records with headers "
                   "(compression.type=%s)" % (c, RECORDS, c), produce)
    ok = [c for c in CODECS if c in placed]
    got = {}
    if ok:
        msgs = read_all(bootstrap, {topics[c]: PARTITIONS for c in ok},
                        sum(len(sent[c]) for c in ok))
        for m in msgs:
            got.setdefault(m.topic(), []).append(m)
    reference = {}

    def ref_partitions():
        parts = rdkafka_partitions(bootstrap, ref, keys)
        reference.update(zip(keys, parts))
    have_ref = checks.run("librdkafka murmur2_random places the key pool (%d keys, %d partitions)"
                          % (len(keys), PARTITIONS), ref_partitions)
    for c in ok:
        checks.run("%s: librdkafka reads every record back at the reported offset, in send "
                   "order per partition, keys/values/headers/CreateTime equal" % c,
                   lambda c=c: compare(c, sent[c], placed[c], got.get(topics[c], [])))
        if have_ref:
            def placement(c=c):
                bad = [(i, r[0], p[0], reference[r[0]]) for i, (r, p) in
                       enumerate(zip(sent[c], placed[c]))
                       if r[0] is not None and p[0] != reference[r[0]]]
                if bad:
                    i, k, got_p, want = bad[0]
                    raise CheckFailed("%d of %d keyed records elsewhere; first: record %d key %s "
                                      "on partition %d, librdkafka murmur2_random: %d"
                                      % (len(bad), sum(r[0] is not None for r in sent[c]), i,
                                         k.hex(), got_p, want))
            checks.run("%s: every keyed record is on librdkafka's murmur2_random partition" % c,
                       placement)
    if data_dir != "-" and ok:
        dumped = {}

        def dump():
            dumped.update(dump_codecs(libs, data_dir, [topics[c] for c in ok]))
        if checks.run("DumpLogSegments reads the segment files of every partition", dump):
            for c in ok:
                def codec_check(c=c):
                    batches = [b for p in range(PARTITIONS) for b in dumped.get((topics[c], p), [])]
                    if not batches:
                        raise CheckFailed("no batches")
                    for codec, crc, pid in batches:
                        expect(codec, c, "compresscodec")
                        expect(crc, "true", "isvalid (CRC)")
                        if pid is None or int(pid) < 0:
                            raise CheckFailed("producerId %s (idempotent producer expected)" % pid)
                checks.run("%s: every batch on disk has compresscodec %s, a valid CRC and a "
                           "producer id (DumpLogSegments)" % (c, c), codec_check)


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    checks = Checks(sys.argv[5] if len(sys.argv) > 5 else "roundtrip")
    sys.exit(main_guard(checks, lambda: main(*sys.argv[1:5], checks)))
