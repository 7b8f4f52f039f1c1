#!/usr/bin/env python3
"""Check record batches written by Sluice against real Kafka implementations.

    check.py DIR [--no-broker] [--no-java-consumer] [--keep]

DIR holds <codec>.batches for codec in none, gzip, snappy, lz4, zstd (concatenated
v2 record batches, offsets starting at 0) and expected.json (a list of
{"timestamp", "key", "value", "headers"}; record i must have offset i).

Checks, each ending in an "N passed, M failed" line (N counts files/topics):
  java-decode:   every file decodes with the Kafka Java client's record classes
                 (compat/java/DecodeBatches.java: CRC, sizes, counts, offsets) and
                 matches expected.json, with the file's codec on every batch.
  broker-append: a real single-node Apache Kafka (compat/kafka) accepts every batch,
                 sent in a raw Produce v8 request (acks=-1), one batch per request, to
                 topic sluice-<codec>; the broker validates the batch itself. Each
                 batch is sent verbatim except that its baseOffset is set to 0, as a
                 producer sends it (the broker requires that; baseOffset is outside
                 the CRC, so the batch is otherwise untouched).
  librdkafka:    confluent-kafka reads each topic back from offset 0 and gets
                 exactly expected.json (offsets, CreateTime timestamps, keys,
                 values, headers).
  java-consumer: the same with the Java KafkaConsumer.
Exit status 0 only if everything matched; otherwise 1 with a diff on stderr
(2 for usage errors).
"""

import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
COMPAT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(COMPAT, "kafka"))
import kafka_local  # noqa: E402

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
DECODE = os.path.join(COMPAT, "java", "DecodeBatches.java")
FIELDS = ("timestamp", "key", "value", "headers")

ERRORS = {
    0: "NONE", 2: "CORRUPT_MESSAGE", 3: "UNKNOWN_TOPIC_OR_PARTITION", 5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT", 10: "MESSAGE_TOO_LARGE",
    32: "INVALID_TIMESTAMP", 35: "UNSUPPORTED_VERSION", 42: "INVALID_REQUEST",
    45: "OUT_OF_ORDER_SEQUENCE_NUMBER", 46: "DUPLICATE_SEQUENCE_NUMBER",
    47: "INVALID_PRODUCER_EPOCH", 59: "UNKNOWN_PRODUCER_ID", 76: "UNSUPPORTED_COMPRESSION_TYPE",
    87: "INVALID_RECORD",
}
RETRIABLE = {3, 5, 6, 7}


def die(msg, code=1):
    print("check.py: " + msg, file=sys.stderr)
    sys.exit(code)


def ensure_confluent_kafka():
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "confluent-kafka"],
                       check=True, stdout=subprocess.DEVNULL)


def java(*args):
    return ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
            "-Dlog4j2.configurationFile=" + kafka_local.LOG4J,
            "-cp", os.path.join(kafka_local.LIBS, "*"), *args]


def record_view(r):
    return {k: r.get(k) for k in FIELDS}


class Report:
    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, 0

    def ok(self):
        self.passed += 1

    def fail(self, what, lines=()):
        self.failed += 1
        print("FAIL %s %s" % (self.name, what), file=sys.stderr)
        for line in list(lines)[:12]:
            print("    " + line, file=sys.stderr)

    def summary(self):
        print("%s: %d passed, %d failed" % (self.name, self.passed, self.failed))
        return self.failed == 0


def compare(expected, got_records, extra_check=None):
    """Return a list of human-readable differences (empty when equal)."""
    diffs = []
    for i, exp in enumerate(expected):
        if i >= len(got_records):
            diffs.append("missing records from offset %d on (got %d, expected %d)"
                         % (i, len(got_records), len(expected)))
            break
        got = got_records[i]
        if got.get("offset") != i:
            diffs.append("record #%d: offset %s, expected %d" % (i, got.get("offset"), i))
        gv = record_view(got)
        if gv != exp:
            for k in FIELDS:
                if gv[k] != exp[k]:
                    diffs.append("offset %d %s: got %s, expected %s"
                                 % (i, k, json.dumps(gv[k]), json.dumps(exp[k])))
        if extra_check:
            diffs.extend(extra_check(i, got))
    if len(got_records) > len(expected):
        diffs.append("%d extra records after offset %d"
                     % (len(got_records) - len(expected), len(expected) - 1))
    return diffs


# ---------------------------------------------------------------- raw protocol

def split_batches(data):
    """Split concatenated v2 batches (baseOffset int64, batchLength int32, ...)."""
    out, pos = [], 0
    while pos < len(data):
        if len(data) - pos < 12:
            raise ValueError("%d trailing bytes at %d" % (len(data) - pos, pos))
        length = struct.unpack_from(">i", data, pos + 8)[0]
        end = pos + 12 + length
        if length <= 0 or end > len(data):
            raise ValueError("bad batchLength %d at byte %d" % (length, pos))
        out.append(data[pos:end])
        pos = end
    return out


def _str(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _read_str(buf, pos):
    n = struct.unpack_from(">h", buf, pos)[0]
    pos += 2
    if n < 0:
        return None, pos
    return buf[pos:pos + n].decode(errors="replace"), pos + n


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.corr = 0

    def request(self, api_key, version, body):
        self.corr += 1
        req = struct.pack(">hhi", api_key, version, self.corr) + _str("sluice-compat-check") + body
        self.sock.sendall(struct.pack(">i", len(req)) + req)
        size = struct.unpack(">i", kafka_local._recv_exact(self.sock, 4))[0]
        resp = kafka_local._recv_exact(self.sock, size)
        corr = struct.unpack_from(">i", resp, 0)[0]
        if corr != self.corr:
            raise RuntimeError("correlation id %d != %d" % (corr, self.corr))
        return resp[4:]

    def produce(self, topic, batch, timeout_ms=30000):
        """Produce v8, one partition, one batch; returns (error_code, base_offset, message)."""
        body = (struct.pack(">hhi", -1, -1, timeout_ms)   # transactional_id=null, acks=-1
                + struct.pack(">i", 1) + _str(topic)
                + struct.pack(">i", 1) + struct.pack(">i", 0)
                + struct.pack(">i", len(batch)) + batch)
        r = self.request(0, 8, body)
        pos = 4                                        # responses array length (1)
        _, pos = _read_str(r, pos)                     # topic name
        pos += 4                                       # partitions array length (1)
        _, err, base, _, _ = struct.unpack_from(">ihqqq", r, pos)
        pos += 4 + 2 + 8 + 8 + 8
        msgs = []
        n = struct.unpack_from(">i", r, pos)[0]
        pos += 4
        for _ in range(max(n, 0)):
            idx = struct.unpack_from(">i", r, pos)[0]
            m, pos = _read_str(r, pos + 4)
            msgs.append("record %d: %s" % (idx, m))
        m, pos = _read_str(r, pos)
        if m:
            msgs.insert(0, m)
        return err, base, "; ".join(msgs)

    def close(self):
        self.sock.close()


# ---------------------------------------------------------------- checks

def decode_all(files, work, procs):
    """Decode every file with DecodeBatches.java: {codec: (records, error_text)}."""
    out = os.path.join(work, "decoded.jsonl")
    dec = Proc(java(DECODE, *[files[c] for c in CODECS]), out)
    procs.append(dec)
    result = {}
    if dec.wait() == 0:
        codec_of = {files[c]: c for c in CODECS}
        recs = {c: [] for c in CODECS}
        with open(out) as f:
            for line in f:
                r = json.loads(line)
                recs[codec_of[r["file"]]].append(r)
        return {c: (recs[c], None) for c in CODECS}
    # Some file is invalid (DecodeBatches stops at the first): one JVM per file.
    for c in CODECS:
        one_out = os.path.join(work, "decoded-%s.jsonl" % c)
        one = Proc(java(DECODE, files[c]), one_out)
        procs.append(one)
        if one.wait() != 0:
            result[c] = ([], one.stderr_text() or "DecodeBatches failed")
        else:
            with open(one_out) as f:
                result[c] = ([json.loads(line) for line in f], None)
    return result


def check_decode(decoded, expected):
    rep = Report("java-decode")
    for codec in CODECS:
        recs, error = decoded[codec]
        if error:
            rep.fail("%s.batches" % codec, error.splitlines())
            continue

        def codec_check(i, got, codec=codec):
            if got.get("compression") != codec and got.get("offset") == got.get("batch_base_offset"):
                return ["batch at offset %d: compression %s, expected %s (file %s.batches)"
                        % (i, got.get("compression"), codec, codec)]
            return []
        diffs = compare(expected, recs, codec_check)
        if diffs:
            rep.fail("%s.batches" % codec, diffs)
        else:
            rep.ok()
    return rep


def check_append(k, batches_by_codec):
    rep = Report("broker-append")
    appended = []
    conn = Conn(k.port)
    try:
        for codec in CODECS:
            topic = "sluice-" + codec
            next_offset, problems = 0, []
            if isinstance(batches_by_codec[codec], Exception):
                rep.fail(topic, ["%s.batches cannot be split into batches: %s"
                                 % (codec, batches_by_codec[codec])])
                continue
            for n, batch in enumerate(batches_by_codec[codec]):
                batch = struct.pack(">q", 0) + batch[8:]
                deadline = time.monotonic() + 30
                while True:
                    err, base, msg = conn.produce(topic, batch)
                    if err in RETRIABLE and time.monotonic() < deadline:
                        time.sleep(0.2)
                        continue
                    break
                if err != 0:
                    problems.append("batch #%d rejected: %s (%d) %s"
                                    % (n, ERRORS.get(err, "error"), err, msg))
                    problems.extend(broker_log_errors(k, topic))
                    break
                if base != next_offset:
                    problems.append("batch #%d appended at offset %d, expected %d"
                                    % (n, base, next_offset))
                count = struct.unpack_from(">i", batch, 57)[0]   # v2 header: records count
                next_offset = base + count
            if problems:
                rep.fail(topic, problems)
            else:
                rep.ok()
                appended.append(codec)
    finally:
        conn.close()
    return rep, appended


def broker_log_errors(k, topic):
    """The broker's own explanation of a rejected append (its log, WARN+)."""
    try:
        with open(os.path.join(k.workdir, "kafka.out"), errors="replace") as f:
            lines = [l.strip() for l in f if topic in l and "Exception" in l]
    except OSError:
        return []
    return ["broker: " + l[:500] for l in lines[-2:]]


def check_librdkafka(k, expected, appended):
    from confluent_kafka import (Consumer, KafkaError, TopicPartition, OFFSET_BEGINNING,
                                 TIMESTAMP_CREATE_TIME)
    rep = Report("librdkafka")
    topics = ["sluice-" + c for c in CODECS if c in appended]
    c = Consumer({"bootstrap.servers": k.bootstrap, "group.id": "sluice-compat-check",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "check.crcs": True, "client.id": "sluice-compat-librdkafka"})
    got = {t: [] for t in topics}
    eof = set()
    errors = {t: [] for t in topics}
    try:
        c.assign([TopicPartition(t, 0, OFFSET_BEGINNING) for t in topics])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(
                t in eof and len(got[t]) >= len(expected) for t in topics):
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.topic())
                    continue
                errors.setdefault(m.topic() or "?", []).append(str(m.error()))
                if not m.error().retriable():
                    break
                continue
            ts_type, ts = m.timestamp()
            got[m.topic()].append({
                "offset": m.offset(),
                "timestamp": ts if ts_type == TIMESTAMP_CREATE_TIME else ("not CreateTime", ts),
                "key": None if m.key() is None else m.key().decode("utf-8", "replace"),
                "value": None if m.value() is None else m.value().decode("utf-8", "replace"),
                "headers": [[hk, None if hv is None else hv.decode("utf-8", "replace")]
                            for hk, hv in (m.headers() or [])],
            })
    finally:
        c.close()
    for t in topics:
        diffs = ["consumer error: %s" % e for e in errors.get(t, [])] + compare(expected, got[t])
        if diffs:
            rep.fail(t, diffs)
        else:
            rep.ok()
    return rep


def check_java_consumer(proc, out_path, expected, appended):
    rep = Report("java-consumer")
    topics = ["sluice-" + c for c in CODECS if c in appended]
    rc = proc.wait()
    got = {t: [] for t in topics}
    with open(out_path) as f:
        for line in f:
            r = json.loads(line)
            got.setdefault(r["topic"], []).append(r)
    for t in topics:
        diffs = compare(expected, got[t])
        if rc != 0 and not diffs:
            diffs = ["DecodeBatches --consume exited with %d: %s" % (rc, proc.stderr_text())]
        if any(r.get("timestamp_type") != "CreateTime" for r in got[t]):
            diffs.append("a record's timestamp type is not CreateTime")
        if diffs:
            rep.fail(t, diffs)
        else:
            rep.ok()
    return rep


class Proc:
    """A subprocess with stdout to a file and stderr captured to a file."""

    def __init__(self, cmd, out_path):
        self.err_path = out_path + ".err"
        with open(out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)

    def wait(self):
        return self.p.wait()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    def stderr_text(self):
        with open(self.err_path, errors="replace") as f:
            return f.read().strip()[-3000:]


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    flags = {a for a in argv[1:] if a.startswith("--")}
    unknown = flags - {"--no-broker", "--no-java-consumer", "--keep"}
    if len(args) != 1 or unknown:
        print(__doc__, file=sys.stderr)
        return 2
    d = os.path.abspath(args[0])
    kafka_local.exit_on_signals()
    started = time.monotonic()
    try:
        with open(os.path.join(d, "expected.json")) as f:
            expected = [record_view(r) for r in json.load(f)]
    except (OSError, ValueError) as e:
        die("cannot read %s/expected.json: %s" % (d, e), 2)
    files = {c: os.path.join(d, c + ".batches") for c in CODECS}
    missing = [os.path.basename(p) for p in files.values() if not os.path.isfile(p)]
    if missing:
        die("missing in %s: %s" % (d, ", ".join(missing)), 2)

    kafka_local.ensure_libs()
    use_broker = "--no-broker" not in flags
    if use_broker:
        ensure_confluent_kafka()

    work = tempfile.mkdtemp(prefix="sluice-check-")
    k = kafka_local.LocalKafka(os.path.join(work, "kafka")) if use_broker else None
    procs = []
    reports = []
    try:
        if k:
            k.start()                       # boots while the files are decoded
        reports.append(check_decode(decode_all(files, work, procs), expected))

        if k:
            batches = {}
            for c in CODECS:
                with open(files[c], "rb") as f:
                    try:
                        batches[c] = split_batches(f.read())
                    except ValueError as e:
                        batches[c] = e
            k.wait_ready()
            kafka_local.create_topics(k.bootstrap, ["sluice-" + c for c in CODECS],
                                      {"compression.type": "producer"})
            rep, appended = check_append(k, batches)
            reports.append(rep)
            jout = os.path.join(work, "java-consume.jsonl")
            java_consumer = "--no-java-consumer" not in flags and appended
            if java_consumer:
                jc = Proc(java(DECODE, "--consume", k.bootstrap, str(len(expected)),
                               *["sluice-" + c for c in appended]), jout)
                procs.append(jc)
            if appended:
                reports.append(check_librdkafka(k, expected, appended))
            if java_consumer:
                reports.append(check_java_consumer(jc, jout, expected, appended))
    finally:
        for p in procs:
            p.kill()
        if k:
            k.stop()
        if "--keep" in flags:
            print("work dir kept: " + work, file=sys.stderr)
        else:
            import shutil
            shutil.rmtree(work, ignore_errors=True)

    ok = all([r.summary() for r in reports])
    total_pass = sum(r.passed for r in reports)
    total_fail = sum(r.failed for r in reports)
    print("compat: checked %s in %.1fs" % (d, time.monotonic() - started))
    print("compat: %d passed, %d failed" % (total_pass, total_fail))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
