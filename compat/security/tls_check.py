#!/usr/bin/env python3
"""SSL and SASL_SSL listeners judged by real clients (issue 25).

    compat/security/tls_check.py PLAIN SSL MTLS SASLSSL CERTS_DIR [BROKER_LOG]

The broker (compat/security/run.sh [--kafka]) has, beside its PLAINTEXT listener:
  SSL      SSL, ssl.client.auth=requested, the server's certificate signed by CERTS_DIR/ca.pem
  MTLS     SSL, ssl.client.auth=required, ssl.principal.mapping.rules mapping OU=ops to the CN
  SASLSSL  SASL_SSL with PLAIN (alice/alice-secret, bob/bob-secret), key and chain given
           inline (ssl.keystore.certificate.chain / ssl.keystore.key)
CERTS_DIR holds the CA (ca.pem), client certificates alice.* and bob.* signed by it,
mallory.* self-signed, and expected-principals (Java's X500Principal.getName() of
alice's and bob's subjects, mapped by the rules). BROKER_LOG, when given (Sluice), is
where the broker logs each TLS client's principal; Kafka's principal is not observable
here (no authorizer in these checks) and those three checks print SKIP on Kafka. One
PASS/FAIL/SKIP line per check.
"""
import os
import re
import socket
import ssl
import struct
import sys
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PLAIN, SSL_, MTLS, SASLSSL, CERTS = sys.argv[1:6]
LOG = sys.argv[6] if len(sys.argv) > 6 and sys.argv[6] else None
TOPIC = "tls-" + uuid.uuid4().hex[:8]
failed = 0


def cert(name, ext):
    return os.path.join(CERTS, f"{name}.{ext}")


def check(name, fn):
    global failed
    try:
        result = fn()
        if result == "skip":
            print(f"SKIP tls: {name}", flush=True)
        else:
            print(f"PASS tls: {name}", flush=True)
    except Exception as error:  # noqa: BLE001 - every failure is reported
        failed += 1
        print(f"FAIL tls: {name}: {type(error).__name__}: {error}"[:700], flush=True)


def conf(bootstrap, protocol, client=None, ca="ca", **extra):
    c = {"bootstrap.servers": bootstrap, "security.protocol": protocol,
         "ssl.ca.location": cert(ca, "pem"), "log_level": 0}
    if client:
        c["ssl.certificate.location"] = cert(client, "crt")
        c["ssl.key.location"] = cert(client, "key")
    c.update(extra)
    return c


def setup():
    admin = AdminClient({"bootstrap.servers": PLAIN, "log_level": 0})
    for future in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
        future.result(20)


def produce(config, values):
    producer = Producer(config)
    delivered = []
    for value in values:
        producer.produce(TOPIC, value=value, on_delivery=lambda e, m: delivered.append(e))
    assert producer.flush(20) == 0, "undelivered messages"
    assert delivered == [None] * len(values), f"delivery errors: {[e for e in delivered if e]}"


def consume(config, wanted):
    consumer = Consumer(dict(config, **{"group.id": "g-" + uuid.uuid4().hex[:6],
                                        "enable.auto.commit": False}))
    # Assigned, not subscribed: no group join to wait for.
    consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    values = []
    deadline = time.time() + 30
    while not set(wanted) <= set(values) and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    missing = [v for v in wanted if v not in values]
    assert not missing, f"not read: {missing[:5]} ({len(values)} read)"


def refused(config):
    """A client that must not get through: an error is reported, nothing is delivered."""
    errors, delivered = [], []
    producer = Producer(dict(config, error_cb=errors.append, **{"message.timeout.ms": 1000}))
    producer.produce(TOPIC, value=b"never", on_delivery=lambda e, m: delivered.append(e))
    producer.flush(4)
    assert delivered and delivered[0] is not None, "a message was delivered"
    assert errors, "no error reported"
    return errors


def librdkafka_over_ssl_verifying_the_server():
    values = [b"ssl-%d" % i for i in range(20)]
    produce(conf(SSL_, "SSL"), values)
    consume(conf(SSL_, "SSL"), values)


def librdkafka_refuses_a_server_it_does_not_trust():
    errors = refused(conf(SSL_, "SSL", ca="mallory"))
    text = " ".join(str(e) for e in errors)
    assert "certificate verify failed" in text or "SSL handshake failed" in text, text


def mtls_without_a_certificate_is_refused():
    refused(conf(MTLS, "SSL"))


def mtls_with_an_untrusted_certificate_is_refused():
    refused(conf(MTLS, "SSL", client="mallory"))


def expected_principals():
    with open(os.path.join(CERTS, "expected-principals")) as f:
        return dict(line.rstrip("\n").split(" ", 1) for line in f if line.strip())


def principal_logged(principal, since, listener):
    """Whether the broker logged `principal` for a connection to `listener` after byte
    offset `since` (the line ends with the principal)."""
    if LOG is None:
        return "skip"
    deadline = time.time() + 5
    needle = f"principal=User:{principal}"
    where = f"listener={listener} "
    while time.time() < deadline:
        with open(LOG, errors="replace") as f:
            f.seek(since)
            lines = (re.sub(r"\x1b\[[0-9;]*m", "", line) for line in f)
            if any(line.rstrip("\n").endswith(needle) and where in line
                   and "authenticated" in line for line in lines):
                return None
        time.sleep(0.1)
    raise AssertionError(f"the broker log has no connection authenticated as User:{principal}")


def log_size():
    return os.path.getsize(LOG) if LOG else 0


# Where the broker log stood before each client's connections (principal checks).
marks = {}


def mtls_client(client):
    marks[client] = log_size()
    values = [b"%s-mtls-%d" % (client.encode(), i) for i in range(10)]
    produce(conf(MTLS, "SSL", client=client), values)
    consume(conf(MTLS, "SSL", client=client), values)


def requested_client_auth_takes_a_certificate_when_offered():
    marks["bob-dn"] = log_size()
    produce(conf(SSL_, "SSL", client="bob"), [b"bob-on-ssl"])


def principal_of(client, key=None, listener="MTLS"):
    return principal_logged(expected_principals()[key or client],
                            marks[client if key is None else key], listener)


def sasl_ssl_plain():
    sasl = {"sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"}
    values = [b"sasl-ssl-%d" % i for i in range(20)]
    produce(conf(SASLSSL, "SASL_SSL", **sasl), values)
    consume(conf(SASLSSL, "SASL_SSL", **dict(sasl, **{
        "sasl.username": "bob", "sasl.password": "bob-secret"})), values)


def sasl_ssl_wrong_password():
    errors = refused(conf(SASLSSL, "SASL_SSL", **{
        "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "wrong"}))
    codes = {e.code() for e in errors}
    assert KafkaError._AUTHENTICATION in codes, f"errors: {[str(e) for e in errors]}"
    text = " ".join(e.str() for e in errors if e.code() == KafkaError._AUTHENTICATION)
    assert "Invalid username or password" in text, text


def kafka_python_over_ssl():
    from kafka import KafkaConsumer, KafkaProducer
    producer = KafkaProducer(bootstrap_servers=SSL_, security_protocol="SSL",
                             ssl_cafile=cert("ca", "pem"), request_timeout_ms=10000)
    producer.send(TOPIC, b"kafka-python-ssl").get(timeout=15)
    producer.close()
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=MTLS, security_protocol="SSL",
                             ssl_cafile=cert("ca", "pem"), ssl_certfile=cert("bob", "crt"),
                             ssl_keyfile=cert("bob", "key"), auto_offset_reset="earliest",
                             consumer_timeout_ms=4000)
    values = [m.value for m in consumer]
    consumer.close()
    assert b"kafka-python-ssl" in values, f"{len(values)} values read"


def raw_garbage_closes_only_its_connection():
    host, port = SSL_.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    # A Kafka ApiVersions request where a TLS ClientHello belongs.
    body = struct.pack(">hhih", 18, 0, 1, 3) + b"raw"
    sock.sendall(struct.pack(">i", len(body)) + body)
    try:
        data = sock.recv(1024)
    except (ConnectionResetError, socket.timeout):
        data = b""
    # No Kafka answer (a TLS alert at most, record type 21).
    assert data == b"" or data[0] == 21, f"answered {data[:16]!r}"
    sock.close()
    context = ssl.create_default_context(cafile=cert("ca", "pem"))
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=host) as tls:
            tls.sendall(struct.pack(">i", len(body)) + body)
            size = struct.unpack(">i", tls.recv(4))[0]
            assert size > 4, size


check("setup: a topic over the PLAINTEXT listener", setup)
check("librdkafka produces and consumes over SSL, verifying the server (ssl.ca.location)",
      librdkafka_over_ssl_verifying_the_server)
check("librdkafka refuses a server whose CA it does not trust",
      librdkafka_refuses_a_server_it_does_not_trust)
check("mTLS required: a client without a certificate is refused",
      mtls_without_a_certificate_is_refused)
check("mTLS required: a certificate from an untrusted CA is refused",
      mtls_with_an_untrusted_certificate_is_refused)
check("mTLS: alice's certificate produces and consumes", lambda: mtls_client("alice"))
check("mTLS: alice's principal is User:<her subject DN as Java's X500Principal.getName()>",
      lambda: principal_of("alice"))
check("mTLS: bob's certificate produces and consumes", lambda: mtls_client("bob"))
check("mTLS: bob's DN is mapped by ssl.principal.mapping.rules to User:bob",
      lambda: principal_of("bob"))
check("ssl.client.auth=requested: a client offering a certificate is served",
      requested_client_auth_takes_a_certificate_when_offered)
check("ssl.client.auth=requested: its principal is its DN (the DEFAULT rule)",
      lambda: principal_of("bob", "bob-dn", "SSL"))
check("SASL_SSL: librdkafka with PLAIN produces as alice and consumes as bob", sasl_ssl_plain)
check("SASL_SSL: a wrong password fails with _AUTHENTICATION", sasl_ssl_wrong_password)
check("kafka-python produces over SSL and consumes over mTLS", kafka_python_over_ssl)
check("raw: a Kafka request where TLS belongs gets no answer; TLS still served",
      raw_garbage_closes_only_its_connection)
sys.exit(1 if failed else 0)
