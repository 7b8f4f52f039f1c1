"""Interop of Sluice's Rust Avro serializer with Confluent's Python one, through Sluice.

    python3 rust_serde_check.py BOOTSTRAP REGISTRY_URL WORK_DIR

Drives crates/sluice-registry/examples/registry_serde.rs (REGISTRY_SERDE overrides
target/debug/examples/registry_serde):

    registry_serde avro-produce --bootstrap B --registry URL --topic T --schema FILE --count N
        reads N JSON lines on stdin, writes each as an Avro record (Confluent's wire format,
        the schema registered under T-value)
    registry_serde avro-consume --bootstrap B --registry URL --topic T --count N
        reads N records of T from the start and prints each decoded value as a JSON line

1. Python's AvroSerializer writes Order v2 records; avro-consume must print each value.
2. avro-produce writes Order v2 records; Python's AvroDeserializer must decode each value,
   and each record must carry the id the registry gave the schema under T-value.

Values are plain JSON objects both ways. For the nullable `note` (["null","string"]) a
printed value may be the bare string or Avro's JSON encoding {"string": ...}; both are
read as the string. A missing binary is a FAIL with the reason, never a pass.
"""

import json
import os
import subprocess
import sys

import common
from common import Checks, CheckFailed, expect, main_guard
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

bootstrap, url, work = common.args()
checks = Checks("registry")
BINARY = os.environ.get("REGISTRY_SERDE") or os.path.join(
    common.ROOT, "target", "debug", "examples", "registry_serde")
RUN_TIMEOUT = 60  # seconds for one registry_serde run
COUNT = 12


def binary():
    if not (os.path.isfile(BINARY) and os.access(BINARY, os.X_OK)):
        raise CheckFailed(
            "no registry_serde binary at %s (crates/sluice-registry/examples/registry_serde.rs "
            "not written or not built yet: run compat/build.sh, or set REGISTRY_SERDE)" % BINARY)
    return BINARY


def run_serde(args, stdin_text, what):
    command = [binary()] + args
    try:
        run = subprocess.run(command, input=stdin_text, capture_output=True, text=True,
                             timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        err = e.stderr or ""
        if isinstance(err, bytes):
            err = err.decode(errors="replace")
        raise CheckFailed("%s: no exit within %ds; stderr: %s" % (what, RUN_TIMEOUT, err[-400:]))
    if run.returncode != 0:
        raise CheckFailed("%s: exit %d: %s" % (what, run.returncode,
                                                (run.stderr + run.stdout)[-600:]))
    return run.stdout


def unwrap_union(value):
    """Avro's JSON encoding writes a non-null union branch as {"type": value}."""
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in (
            "string", "double", "long", "int", "boolean", "float", "bytes"):
        return next(iter(value.values()))
    return value


def python_writes_rust_reads():
    exe = binary()  # fail first, before producing anything, if it is missing
    topic = "rust-serde-py-to-rs"
    common.create_topic(bootstrap, topic)
    values = common.orders_v2(COUNT, "py")
    write = AvroSerializer(common.registry_client(url), common.ORDER_V2)
    ctx = common.value_context(topic)
    common.produce(bootstrap, topic, [write(v, ctx) for v in values])
    out = run_serde(["avro-consume", "--bootstrap", bootstrap, "--registry", url,
                     "--topic", topic, "--count", str(COUNT)], "",
                    "%s avro-consume" % os.path.basename(exe))
    lines = [line for line in out.splitlines() if line.strip()]
    if len(lines) != COUNT:
        raise CheckFailed("avro-consume printed %d lines, expected %d: %r" % (
            len(lines), COUNT, out[-400:]))
    got = []
    for i, line in enumerate(lines):
        try:
            value = json.loads(line)
        except ValueError as e:
            raise CheckFailed("avro-consume line %d is not JSON (%s): %r" % (i, e, line[:200]))
        if not isinstance(value, dict):
            raise CheckFailed("avro-consume line %d is not an object: %r" % (i, line[:200]))
        got.append({k: unwrap_union(v) for k, v in value.items()})
    common.expect_values(got, values, "the values avro-consume printed")


def rust_writes_python_reads():
    exe = binary()
    topic = "rust-serde-rs-to-py"
    common.create_topic(bootstrap, topic)
    schema_file = os.path.join(work, "order-v2.avsc")
    with open(schema_file, "w") as f:
        f.write(common.ORDER_V2)
    values = common.orders_v2(COUNT, "rs")
    stdin_text = "".join(json.dumps(v) + "\n" for v in values)
    run_serde(["avro-produce", "--bootstrap", bootstrap, "--registry", url, "--topic", topic,
               "--schema", schema_file, "--count", str(COUNT)], stdin_text,
              "%s avro-produce" % os.path.basename(exe))
    subject = topic + "-value"
    latest = common.registry_client(url).get_latest_version(subject)
    expect((latest.version, latest.schema.schema_type), (1, "AVRO"),
           "%s after avro-produce (version, schemaType)" % subject)
    expect(json.loads(latest.schema.schema_str), json.loads(common.ORDER_V2),
           "the schema avro-produce registered")
    messages = common.consume(bootstrap, topic, COUNT)
    for i, m in enumerate(messages):
        expect(common.wire_schema_id(m.value(), "record %d" % i), latest.schema_id,
               "record %d's schema id" % i)
    read = AvroDeserializer(common.registry_client(url))
    ctx = common.value_context(topic)
    common.expect_values([read(m.value(), ctx) for m in messages], values,
                         "values AvroDeserializer decoded from avro-produce's records")


def body():
    checks.run("rust-serde: Python AvroSerializer writes Order v2, registry_serde avro-consume "
               "prints each value", python_writes_rust_reads)
    checks.run("rust-serde: registry_serde avro-produce writes Order v2, Python AvroDeserializer "
               "decodes each value", rust_writes_python_reads)


if __name__ == "__main__":
    sys.exit(main_guard(checks, body))
