#!/usr/bin/env python3
"""SASL/PLAIN on a SASL_PLAINTEXT listener, judged by real clients (issue 25).

    compat/security/sasl_check.py PLAIN_BOOTSTRAP SASL_BOOTSTRAP

The broker has a PLAINTEXT listener (for the topic's setup) and a SASL_PLAINTEXT one
enabling PLAIN for users alice/alice-secret and bob/bob-secret. Runs the same against
Sluice and Apache Kafka (compat/security/run.sh [--kafka]). One PASS/FAIL line per check.
"""
import socket
import struct
import sys
import time
import uuid

from confluent_kafka import Consumer, KafkaError, Producer

import kafka_python_login
from confluent_kafka.admin import AdminClient, NewTopic

PLAIN, SASL = sys.argv[1], sys.argv[2]
TOPIC = "secured-" + uuid.uuid4().hex[:8]
failed = 0


def check(name, fn):
    global failed
    try:
        fn()
        print(f"PASS sasl: {name}", flush=True)
    except Exception as error:  # noqa: BLE001 - every failure is reported
        failed += 1
        print(f"FAIL sasl: {name}: {type(error).__name__}: {error}"[:700], flush=True)


def sasl_conf(user, password, **extra):
    conf = {
        "bootstrap.servers": SASL,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
        "log_level": 0,
    }
    conf.update(extra)
    return conf


def setup():
    admin = AdminClient({"bootstrap.servers": PLAIN, "log_level": 0})
    for future in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
        future.result(20)


def librdkafka_produces_and_consumes():
    producer = Producer(sasl_conf("alice", "alice-secret"))
    delivered = []
    for i in range(50):
        producer.produce(TOPIC, value=b"v%d" % i, on_delivery=lambda e, m: delivered.append(e))
    assert producer.flush(20) == 0, "undelivered messages"
    assert delivered == [None] * 50, f"delivery errors: {[e for e in delivered if e]}"
    consumer = Consumer(sasl_conf("bob", "bob-secret", **{
        "group.id": "g-" + TOPIC, "auto.offset.reset": "earliest"}))
    consumer.subscribe([TOPIC])
    values = []
    deadline = time.time() + 30
    while len(values) < 50 and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    assert values == [b"v%d" % i for i in range(50)], f"read {len(values)} of 50"


def librdkafka_refused(user, password):
    errors = []
    producer = Producer(sasl_conf(user, password, **{
        "error_cb": errors.append, "message.timeout.ms": 2000}))
    producer.produce(TOPIC, value=b"never")
    producer.flush(4)
    codes = {e.code() for e in errors}
    assert KafkaError._AUTHENTICATION in codes, f"errors: {[str(e) for e in errors]}"
    text = " ".join(e.str() for e in errors if e.code() == KafkaError._AUTHENTICATION)
    assert "Invalid username or password" in text, text


def kafka_python_authenticates():
    from kafka import KafkaConsumer, KafkaProducer
    producer = KafkaProducer(bootstrap_servers=SASL, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="PLAIN", sasl_plain_username="alice",
                             sasl_plain_password="alice-secret", request_timeout_ms=10000)
    producer.send(TOPIC, b"from-kafka-python").get(timeout=15)
    producer.close()
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=SASL, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="PLAIN", sasl_plain_username="bob",
                             sasl_plain_password="bob-secret", auto_offset_reset="earliest",
                             consumer_timeout_ms=4000)
    values = [m.value for m in consumer]
    consumer.close()
    assert b"from-kafka-python" in values, f"{len(values)} values read"


def kafka_python_refused():
    return kafka_python_login.refused(SASL, TOPIC, "PLAIN", "alice", "wrong")


# -- raw frames ----------------------------------------------------------------------------

def host_port(bootstrap):
    host, port = bootstrap.rsplit(":", 1)
    return host, int(port)


def frame(api_key, version, correlation, body, client="raw"):
    header = struct.pack(">hhih", api_key, version, correlation, len(client)) + client.encode()
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def string(text):
    return struct.pack(">h", len(text)) + text.encode()


def read_frame(sock):
    size = sock.recv(4, socket.MSG_WAITALL)
    if len(size) < 4:
        return None
    (n,) = struct.unpack(">i", size)
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def connect(bootstrap=None):
    sock = socket.create_connection(host_port(bootstrap or SASL), timeout=10)
    return sock


def metadata_v1():
    return frame(3, 1, 7, struct.pack(">i", -1))


def closed(sock):
    try:
        return read_frame(sock) is None
    except (ConnectionResetError, socket.timeout):
        return True


def a_request_before_authentication_closes_the_connection():
    sock = connect()
    sock.sendall(metadata_v1())
    assert closed(sock), "Metadata was answered before authentication"


def handshake(sock, version, mechanism):
    sock.sendall(frame(17, version, 1, string(mechanism)))
    reply = read_frame(sock)
    (correlation, error, count) = struct.unpack(">ihi", reply[:10])
    mechanisms, rest = [], reply[10:]
    for _ in range(count):
        (n,) = struct.unpack(">h", rest[:2])
        mechanisms.append(rest[2:2 + n].decode())
        rest = rest[2 + n:]
    return error, mechanisms


def an_unknown_mechanism_gets_the_enabled_list():
    sock = connect()
    error, mechanisms = handshake(sock, 1, "SCRAM-SHA-999")
    # Kafka lists them in its own order (PLAIN, SCRAM-SHA-512, SCRAM-SHA-256 here).
    assert (error, sorted(mechanisms)) == (33, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]), (
        error, mechanisms)


def a_v0_handshake_takes_a_bare_token():
    sock = connect()
    error, _ = handshake(sock, 0, "PLAIN")
    assert error == 0, error
    token = b"\0alice\0alice-secret"
    sock.sendall(struct.pack(">i", len(token)) + token)
    assert read_frame(sock) == b"", "expected an empty token reply"
    sock.sendall(metadata_v1())
    reply = read_frame(sock)
    assert reply is not None and struct.unpack(">i", reply[:4])[0] == 7, "Metadata unanswered"


def authenticate(sock, token, version=1):
    sock.sendall(frame(36, version, 2, struct.pack(">i", len(token)) + token))
    reply = read_frame(sock)
    if reply is None:
        return None
    (correlation, error) = struct.unpack(">ih", reply[:6])
    (n,) = struct.unpack(">h", reply[6:8])
    message = reply[8:8 + n].decode() if n >= 0 else None
    return error, message


def a_failed_authentication_is_answered_late_then_closed():
    sock = connect()
    assert handshake(sock, 1, "PLAIN")[0] == 0
    started = time.monotonic()
    error, message = authenticate(sock, b"\0alice\0nope")
    elapsed = time.monotonic() - started
    assert (error, message) == (58, "Authentication failed: Invalid username or password"), (error, message)
    # connection.failed.authentication.delay.ms, Kafka's 100 ms default.
    assert elapsed >= 0.09, f"answered after {elapsed:.3f} s"
    assert closed(sock), "connection left open after a failed authentication"


def an_oversized_token_closes_the_connection_and_nothing_else():
    sock = connect()
    assert handshake(sock, 1, "PLAIN")[0] == 0
    token = b"\0alice\0" + b"x" * (1 << 20)
    try:
        answer = authenticate(sock, token)
    except (ConnectionResetError, BrokenPipeError):
        answer = None
    assert answer is None, f"a 1 MiB token was answered: {answer}"
    # The listener still authenticates others.
    other = connect()
    assert handshake(other, 1, "PLAIN")[0] == 0
    answer = authenticate(other, b"\0bob\0bob-secret")
    assert answer == (0, ""), answer


def sasl_after_authentication_is_an_illegal_state():
    sock = connect()
    assert handshake(sock, 1, "PLAIN")[0] == 0
    answer = authenticate(sock, b"\0alice\0alice-secret")
    assert answer == (0, ""), answer
    error, _ = handshake(sock, 1, "PLAIN")
    assert error == 34, f"error {error}, expected ILLEGAL_SASL_STATE (34)"


def the_plaintext_listener_still_serves_without_authentication():
    sock = connect(PLAIN)
    sock.sendall(metadata_v1())
    reply = read_frame(sock)
    assert reply is not None and struct.unpack(">i", reply[:4])[0] == 7


check("setup: a topic over the PLAINTEXT listener", setup)
check("librdkafka produces as alice and consumes as bob", librdkafka_produces_and_consumes)
check("librdkafka: a wrong password fails with _AUTHENTICATION",
      lambda: librdkafka_refused("alice", "wrong"))
check("librdkafka: an unknown user fails the same way",
      lambda: librdkafka_refused("mallory", "alice-secret"))
check("kafka-python produces and consumes", kafka_python_authenticates)
check("kafka-python: a wrong password raises", lambda: print("  kafka-python raised", kafka_python_refused()))
check("raw: a request before authentication closes the connection",
      a_request_before_authentication_closes_the_connection)
check("raw: an unknown mechanism gets UNSUPPORTED_SASL_MECHANISM and the enabled list",
      an_unknown_mechanism_gets_the_enabled_list)
check("raw: a v0 handshake takes a bare token", a_v0_handshake_takes_a_bare_token)
check("raw: a failed authentication is answered after the delay, then closed",
      a_failed_authentication_is_answered_late_then_closed)
check("raw: a 1 MiB token closes its connection only",
      an_oversized_token_closes_the_connection_and_nothing_else)
check("raw: SaslHandshake after authentication is ILLEGAL_SASL_STATE",
      sasl_after_authentication_is_an_illegal_state)
check("raw: the PLAINTEXT listener serves without authentication",
      the_plaintext_listener_still_serves_without_authentication)
sys.exit(1 if failed else 0)
