#!/usr/bin/env python3
"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 on a SASL_PLAINTEXT listener (issue 25).

    compat/security/scram_check.py PLAIN_BOOTSTRAP SASL_BOOTSTRAP KAFKA_LIBS

The broker was started with the SCRAM-SHA-256 user admin/admin-secret written at the
cluster's bootstrap (`sluice server --add-scram`, `kafka-storage format --add-scram`) and
PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 enabled on its SASL listener. Kafka's
kafka-configs (ConfigCommand), authenticated as admin over SCRAM, creates, describes and
deletes alice's credentials; librdkafka (confluent-kafka) and kafka-python authenticate
or fail accordingly. The same runs against Apache Kafka (compat/security/run.sh --kafka).
One PASS/FAIL line per check.
"""
import os
import subprocess
import sys
import tempfile
import time
import uuid

from confluent_kafka import Consumer, KafkaError, Producer

import kafka_python_login
from confluent_kafka.admin import AdminClient, NewTopic

PLAIN, SASL, LIBS = sys.argv[1], sys.argv[2], sys.argv[3]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOPIC = "scram-" + uuid.uuid4().hex[:8]
WORK = tempfile.mkdtemp(prefix="scram-check-")
FAILED_MESSAGE = ("Authentication failed during authentication due to invalid credentials "
                  "with SASL mechanism {}")
failed = 0


def check(name, fn):
    global failed
    started = time.monotonic()
    try:
        fn()
        print(f"PASS scram: {name} ({time.monotonic() - started:.1f} s)", flush=True)
    except Exception as error:  # noqa: BLE001 - every failure is reported
        failed += 1
        print(f"FAIL scram: {name}: {type(error).__name__}: {error}"[:900], flush=True)


def conf(mechanism, user, password, **extra):
    settings = {
        "bootstrap.servers": SASL,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
        "log_level": 0,
    }
    settings.update(extra)
    return settings


def configs(*args):
    """Kafka's kafka-configs, as admin over SCRAM-SHA-256 on the SASL listener."""
    properties = os.path.join(WORK, "admin.properties")
    with open(properties, "w") as f:
        f.write("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
                'required username="admin" password="admin-secret";\n'
                "request.timeout.ms=8000\ndefault.api.timeout.ms=10000\n")
    command = ["java", "-Xms64m", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
               "-XX:-UsePerfData",
               f"-Dlog4j2.configurationFile={ROOT}/compat/kafka/log4j2.properties",
               "-cp", f"{LIBS}/*", "kafka.admin.ConfigCommand",
               "--bootstrap-server", SASL, "--command-config", properties, *args]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=40)
    if done.returncode != 0:
        raise AssertionError(f"kafka-configs {' '.join(args)}: exit {done.returncode}: "
                             f"{done.stdout.strip()[-600:]}")
    return done.stdout


def authenticates(mechanism, user, password):
    """Produces one record and reads the topic's metadata as this user."""
    producer = Producer(conf(mechanism, user, password, **{"message.timeout.ms": 8000}))
    errors = []
    producer.produce(TOPIC, value=f"{mechanism}:{user}".encode(),
                     on_delivery=lambda e, m: errors.append(e))
    producer.flush(10)
    assert len(errors) == 1 and errors[0] is None, f"delivery: {[str(e) for e in errors]}"


def refused(mechanism, user, password):
    """The client's authentication error, with Kafka's message."""
    errors = []
    producer = Producer(conf(mechanism, user, password, **{
        "error_cb": errors.append, "message.timeout.ms": 2000}))
    producer.produce(TOPIC, value=b"never")
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline and not any(
            e.code() == KafkaError._AUTHENTICATION for e in errors):
        producer.poll(0.1)
    producer.purge()
    texts = [e.str() for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert texts, f"no authentication error: {[str(e) for e in errors]}"
    expected = FAILED_MESSAGE.format(mechanism)
    assert any(expected in t for t in texts), texts


def eventually(fn, seconds=10):
    """Retries until `fn` passes (a credential reaches every broker's image)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return fn()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def setup():
    admin = AdminClient({"bootstrap.servers": PLAIN, "log_level": 0})
    for future in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
        future.result(20)


def the_bootstrapped_admin_authenticates():
    authenticates("SCRAM-SHA-256", "admin", "admin-secret")


def kafka_configs_adds_both_mechanisms():
    # One user's two mechanisms in one request: Kafka 4.1's controller refuses the second
    # alteration of a user in a request (DUPLICATE_RESOURCE), so kafka-configs fails.
    try:
        configs("--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config",
                "SCRAM-SHA-256=[iterations=8192,password=alice-secret],"
                "SCRAM-SHA-512=[password=alice-512]")
    except AssertionError as error:
        assert ("DuplicateResourceException: A user credential cannot be altered twice in "
                "the same request") in str(error), error
    else:
        raise AssertionError("two alterations of one user in one request were accepted")
    for config in ["SCRAM-SHA-256=[iterations=8192,password=alice-secret]",
                   "SCRAM-SHA-512=[password=alice-512]"]:
        out = configs("--alter", "--entity-type", "users", "--entity-name", "alice",
                      "--add-config", config)
        assert "Completed updating config for user alice." in out, out


def kafka_configs_describes():
    out = configs("--describe", "--entity-type", "users")
    line = next((l for l in out.splitlines()
                 if l.startswith("SCRAM credential configs for user-principal 'alice' are ")), "")
    # Kafka lists the mechanisms in no fixed order.
    assert sorted(line.split(" are ", 1)[-1].split(", ")) == [
        "SCRAM-SHA-256=iterations=8192", "SCRAM-SHA-512=iterations=4096"], out
    assert "user-principal 'admin' are SCRAM-SHA-256=iterations=4096" in out, out


def librdkafka_produces_and_consumes(mechanism, password):
    eventually(lambda: authenticates(mechanism, "alice", password))
    consumer = Consumer(conf(mechanism, "alice", password, **{
        "group.id": "g-" + uuid.uuid4().hex[:6], "auto.offset.reset": "earliest"}))
    consumer.subscribe([TOPIC])
    values = []
    deadline = time.time() + 20
    while f"{mechanism}:alice".encode() not in values and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    assert f"{mechanism}:alice".encode() in values, f"read {values}"


def kafka_python_produces_and_consumes(mechanism, password):
    from kafka import KafkaConsumer, KafkaProducer
    common = dict(bootstrap_servers=SASL, security_protocol="SASL_PLAINTEXT",
                  sasl_mechanism=mechanism, sasl_plain_username="alice",
                  sasl_plain_password=password)
    producer = KafkaProducer(request_timeout_ms=10000, **common)
    value = f"kafka-python {mechanism}".encode()
    producer.send(TOPIC, value).get(timeout=15)
    producer.close()
    consumer = KafkaConsumer(TOPIC, auto_offset_reset="earliest", consumer_timeout_ms=2500,
                             **common)
    values = [m.value for m in consumer]
    consumer.close()
    assert value in values, f"{len(values)} values read"


def kafka_python_refused(mechanism, password):
    return kafka_python_login.refused(SASL, TOPIC, mechanism, "alice", password)


def kafka_configs_deletes_one_mechanism():
    out = configs("--alter", "--entity-type", "users", "--entity-name", "alice",
                  "--delete-config", "SCRAM-SHA-512")
    assert "Completed updating config for user alice." in out, out
    described = configs("--describe", "--entity-type", "users", "--entity-name", "alice")
    assert ("SCRAM credential configs for user-principal 'alice' are "
            "SCRAM-SHA-256=iterations=8192\n") in described, described
    eventually(lambda: refused("SCRAM-SHA-512", "alice", "alice-512"))
    authenticates("SCRAM-SHA-256", "alice", "alice-secret")


def the_admin_api_refuses_bad_alterations():
    """librdkafka's AlterUserScramCredentials and DescribeUserScramCredentials reach the
    server's checks (kafka-configs refuses too few iterations itself, before sending:
    "Iterations 1000 is less than the minimum 4096 required for SCRAM-SHA-256")."""
    from confluent_kafka.admin import (ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialDeletion,
                                       UserScramCredentialUpsertion)
    admin = AdminClient(conf("SCRAM-SHA-256", "admin", "admin-secret"))
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000)
    cases = {
        "weak": (UserScramCredentialUpsertion("weak", info, b"weak-secret"),
                 KafkaError.UNACCEPTABLE_CREDENTIAL),
        "nobody": (UserScramCredentialDeletion("nobody", ScramMechanism.SCRAM_SHA_512),
                   KafkaError.RESOURCE_NOT_FOUND),
    }
    futures = admin.alter_user_scram_credentials([alteration for alteration, _ in cases.values()])
    for user, (_, code) in cases.items():
        try:
            futures[user].result(15)
        except Exception as error:  # noqa: BLE001 - the error is the point
            assert error.args[0].code() == code, f"{user}: {error}"
        else:
            raise AssertionError(f"{user}: accepted")
    described = admin.describe_user_scram_credentials(["nobody", "alice"])
    alice = described["alice"].result(15)
    assert sorted((str(c.mechanism), c.iterations) for c in alice.scram_credential_infos) == [
        ("ScramMechanism.SCRAM_SHA_256", 8192)], alice
    try:
        described["nobody"].result(15)
    except Exception as error:  # noqa: BLE001
        assert error.args[0].code() == KafkaError.RESOURCE_NOT_FOUND, error
    else:
        raise AssertionError("nobody was described")


check("setup: a topic over the PLAINTEXT listener", setup)
check("the --add-scram user of the cluster's bootstrap authenticates (SCRAM-SHA-256)",
      the_bootstrapped_admin_authenticates)
check("librdkafka: an unknown SCRAM user fails with Kafka's message",
      lambda: refused("SCRAM-SHA-256", "alice", "alice-secret"))
check("kafka-configs --alter --add-config SCRAM-SHA-256, then -512, as admin over SCRAM",
      kafka_configs_adds_both_mechanisms)
check("kafka-configs --describe --entity-type users (alice, admin)", kafka_configs_describes)
check("librdkafka produces and consumes with SCRAM-SHA-256",
      lambda: librdkafka_produces_and_consumes("SCRAM-SHA-256", "alice-secret"))
check("librdkafka produces and consumes with SCRAM-SHA-512",
      lambda: librdkafka_produces_and_consumes("SCRAM-SHA-512", "alice-512"))
check("librdkafka: a wrong SCRAM-SHA-256 password fails with Kafka's message",
      lambda: refused("SCRAM-SHA-256", "alice", "wrong"))
check("librdkafka: the other mechanism's password fails (SCRAM-SHA-512)",
      lambda: refused("SCRAM-SHA-512", "alice", "alice-secret"))
check("kafka-python produces and consumes with SCRAM-SHA-256",
      lambda: kafka_python_produces_and_consumes("SCRAM-SHA-256", "alice-secret"))
check("kafka-python produces and consumes with SCRAM-SHA-512",
      lambda: kafka_python_produces_and_consumes("SCRAM-SHA-512", "alice-512"))
check("kafka-python: a wrong SCRAM password raises",
      lambda: print("  kafka-python raised", kafka_python_refused("SCRAM-SHA-512", "wrong")))
check("kafka-configs --delete-config SCRAM-SHA-512: that mechanism fails, the other works",
      kafka_configs_deletes_one_mechanism)
check("librdkafka admin: too few iterations UNACCEPTABLE_CREDENTIAL, unknown "
      "RESOURCE_NOT_FOUND", the_admin_api_refuses_bad_alterations)
sys.exit(1 if failed else 0)
