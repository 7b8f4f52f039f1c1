#!/usr/bin/env bash
# Security compat suite (issue 25): SASL/PLAIN and SCRAM-SHA-256/512 on SASL_PLAINTEXT, TLS
# (SSL, mTLS) and SASL_SSL listeners, checked by librdkafka (confluent-kafka), kafka-python,
# raw frames and Kafka's own kafka-topics and kafka-configs.
#
#   compat/security/run.sh            # against Sluice (target/debug/sluice, built first)
#   compat/security/run.sh --kafka    # the same checks against Apache Kafka 4.1.1
#
# Options: --no-build (use target/debug/sluice as it is; SLUICE=path picks another),
# --keep (keep the work dir). The broker has three listeners: PLAINTEXT (setup), SASL
# (SASL_PLAINTEXT, PLAIN for alice and bob, SCRAM-SHA-256/512 with admin from --add-scram)
# and CONTROLLER, with the same keys for both brokers. Ends with "security: N passed, M
# failed".
# TLS: three more listeners, SSL (client auth requested), MTLS (required) and SASLSSL
# (SASL_SSL with PLAIN), with certificates made at start by openssl; checked by
# tls_check.py (librdkafka, kafka-python, raw) and java_tls_check.sh (kafka-topics,
# kafka-configs). The whole suite takes about 90 s against Sluice (scram_check.py about
# 20 s of it, the TLS checks about 45 s).
set -uo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
here="$root/compat/security"

broker=sluice build=1 keep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kafka) broker=kafka ;;
    --no-build) build=0 ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
started=$(date +%s)
libs="$(compat/kafka/fetch-kafka.sh)" || { echo "run.sh: fetch-kafka.sh failed" >&2; exit 1; }
python3 -c 'import kafka' 2>/dev/null || python3 -m pip install -q kafka-python >&2
python3 -c 'import confluent_kafka' 2>/dev/null || python3 -m pip install -q confluent-kafka >&2

work="$(mktemp -d -t sluice-security.XXXXXX)"
pid=""
cleanup() {
  if [[ "$broker" == kafka ]]; then
    compat/kafka/run-kafka.sh stop "$work/kafka" >/dev/null 2>&1
  elif [[ -n "$pid" ]]; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
  fi
  if [[ "$keep" == 1 ]]; then echo "security: work dir kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

read -r port sport cport < <(python3 compat/lib/ports.py 3)
jaas='org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="bob-secret";'
settings=(
  "listeners=PLAINTEXT://127.0.0.1:$port,SASL://127.0.0.1:$sport,CONTROLLER://127.0.0.1:$cport"
  "advertised.listeners=PLAINTEXT://127.0.0.1:$port,SASL://127.0.0.1:$sport"
  "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"
  "inter.broker.listener.name=PLAINTEXT"
  "listener.name.sasl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
  "listener.name.sasl.plain.sasl.jaas.config=$jaas"
  # SCRAM's users are credentials in the metadata log; Kafka wants a login module
  # named per mechanism anyway (Sluice reads none).
  "listener.name.sasl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
  "listener.name.sasl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
)
# The cluster's first SCRAM user, written when it is bootstrapped.
add_scram='SCRAM-SHA-256=[name=admin,password=admin-secret]'


# -- TLS (SSL and SASL_SSL listeners) ------------------------------------------------------
# Certificates made now with openssl: a CA, the server's (SAN 127.0.0.1), clients alice and
# bob signed by the CA, mallory self-signed. Three more listeners: SSL (client auth
# requested), MTLS (required, bob's OU mapped to his CN) and SASLSSL (PLAIN inside TLS, the
# key and chain given inline on one line, as a properties file holds them). Encrypted keys
# are left to the unit tests: Kafka on Java 17 reads PBES1/PKCS#12-PBE ones only ("PBES2
# SecretKeyFactory not available"), Sluice PBES2 ones only.
certs="$work/tls"
mkdir -p "$certs"
tls_certs() (
  set -e
  cd "$certs"
  quiet() { "$@" >/dev/null 2>&1 || { echo "run.sh: failed: $*" >&2; return 1; }; }
  quiet openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
    -subj "/CN=Sluice Security Suite CA"
  sign() { # name subject extensions
    quiet openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
    printf '%s\n' "$3" > "$1.ext"
    quiet openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -out "$1.crt" -extfile "$1.ext"
    cat "$1.key" "$1.crt" > "$1.pem"
  }
  sign server "/CN=localhost" "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
  sign alice "/C=US/O=Acme, Inc./OU=eng/CN=alice" "extendedKeyUsage=clientAuth"
  sign bob "/C=US/O=Acme/OU=ops/CN=Bob" "extendedKeyUsage=clientAuth"
  # A second CA and the same server identity signed by it: the key store a dynamic
  # config change (java_tls_check.sh) moves the SSL listener to.
  mkdir ca2
  (cd ca2 && quiet openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
    -subj "/CN=Sluice Security Suite CA 2" && cp ../server.ext . && cp ../server.key . \
    && quiet openssl req -new -key server.key -out server.csr -subj "/CN=localhost" \
    && quiet openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -out server.crt -extfile server.ext && cat server.key server.crt > server.pem)
  cp ca2/ca.pem ca2.pem
  cp ca2/server.pem server2.pem
  quiet openssl req -x509 -newkey rsa:2048 -nodes -keyout mallory.key -out mallory.crt -days 2 \
    -subj "/CN=mallory" -addext "extendedKeyUsage=clientAuth,serverAuth"
  cp mallory.crt mallory.pem
  # What the principals must be: Java's X500Principal.getName() of each subject, bob's
  # through the MTLS listener's rule.
  mapfile -t dns < <(java "$here/SubjectDn.java" alice.crt bob.crt)
  [[ "${#dns[@]}" == 2 ]] || { echo "run.sh: SubjectDn.java failed" >&2; return 1; }
  printf 'alice %s\nbob bob\nbob-dn %s\n' "${dns[0]}" "${dns[1]}" > expected-principals
)
tls_certs || { echo "run.sh: making the TLS certificates failed" >&2; exit 1; }
echo "security: TLS certificates made in $(( $(date +%s) - started )) s" >&2
read -r tport mport ssport < <(python3 -c 'import sys; sys.path.insert(0, "compat/lib")
from ports import free_ports; print(*free_ports(3, avoid={int(p) for p in sys.argv[1:]}))' \
  "$port" "$sport" "$cport")
one_line() { tr '\n' ' ' < "$1"; }
tls_append() { # key value: appends ",value" to the settings entry of key
  local i
  for i in "${!settings[@]}"; do
    [[ "${settings[$i]}" == "$1="* ]] && settings[$i]+=",$2"
  done
}
tls_append listeners "SSL://127.0.0.1:$tport,MTLS://127.0.0.1:$mport,SASLSSL://127.0.0.1:$ssport"
tls_append advertised.listeners "SSL://127.0.0.1:$tport,MTLS://127.0.0.1:$mport,SASLSSL://127.0.0.1:$ssport"
tls_append listener.security.protocol.map "SSL:SSL,MTLS:SSL,SASLSSL:SASL_SSL"
settings+=(
  "ssl.keystore.type=PEM"
  "listener.name.ssl.ssl.keystore.location=$certs/server.pem"
  "listener.name.mtls.ssl.keystore.location=$certs/server.pem"
  "ssl.truststore.type=PEM"
  "ssl.truststore.location=$certs/ca.pem"
  "listener.name.ssl.ssl.client.auth=requested"
  "listener.name.mtls.ssl.client.auth=required"
  "listener.name.mtls.ssl.principal.mapping.rules=RULE:^CN=([^,]*),OU=ops,.*\$/\$1/L,DEFAULT"
  "listener.name.saslssl.ssl.keystore.certificate.chain=$(one_line "$certs/server.crt")"
  "listener.name.saslssl.ssl.keystore.key=$(one_line "$certs/server.key")"
  "listener.name.saslssl.sasl.enabled.mechanisms=PLAIN"
  "listener.name.saslssl.plain.sasl.jaas.config=$jaas"
)
# The broker logs each TLS client's principal at debug (the checks read it).
export RUST_LOG="${RUST_LOG:-warn,sluice_broker::network=debug}"

if [[ "$broker" == kafka ]]; then
  mkdir -p "$work/kafka"
  python3 - "$work/kafka" "$port" "$cport" "${settings[@]}" "$add_scram" > "$work/bootstrap" <<'PY' || {
import sys
sys.path.insert(0, "compat/kafka")
import kafka_local
workdir, port, cport, *settings = sys.argv[1:]
# kafka_local picks the PLAINTEXT and CONTROLLER ports; these are the suite's.
ports = iter([int(port), int(cport)])
kafka_local.free_port = lambda: next(ports)
add_scram = settings.pop()
k = kafka_local.LocalKafka(workdir, extra_props=dict(s.split("=", 1) for s in settings),
                           format_args=["--add-scram", add_scram])
k.start(detach=True)
try:
    k.wait_ready()
except BaseException:
    k.stop()
    raise
print(k.bootstrap)
PY
    echo "run.sh: Kafka did not start" >&2; tail -30 "$work/kafka/kafka.out" >&2; exit 1; }
  what="Apache Kafka $(cat "$libs/VERSION" 2>/dev/null)"
else
  sluice="${SLUICE:-target/debug/sluice}"
  if [[ "$build" == 1 && -z "${SLUICE:-}" ]]; then
    compat/build.sh || { echo "run.sh: compat/build.sh failed" >&2; exit 1; }
  fi
  sets=()
  for s in "${settings[@]}"; do sets+=(--set "$s"); done
  "$sluice" server "${sets[@]}" --add-scram "$add_scram" \
    --set "controller.quorum.bootstrap.servers=127.0.0.1:$cport" \
    --set "log.dirs=$work/data" --set "group.initial.rebalance.delay.ms=0" \
    > "$work/sluice.out" 2> "$work/sluice.err" < /dev/null &
  pid=$!
  for _ in $(seq 300); do
    grep -q "^sluice: listening on SASL://127.0.0.1:$sport" "$work/sluice.err" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  grep -q "^sluice: listening on SASL://127.0.0.1:$sport" "$work/sluice.err" || {
    echo "run.sh: sluice did not start" >&2; tail -30 "$work/sluice.err" >&2; exit 1; }
  what="Sluice ($sluice)"
fi
plain="127.0.0.1:$port" sasl="127.0.0.1:$sport"
echo "security: against $what, PLAINTEXT $plain, SASL_PLAINTEXT $sasl"

out="$work/checks.out"
timeout 150 python3 "$here/sasl_check.py" "$plain" "$sasl" | tee "$out"
timeout 60 "$here/java_check.sh" "$sasl" "$libs" | tee -a "$out"
timeout 150 python3 "$here/scram_check.py" "$plain" "$sasl" "$libs" | tee -a "$out" \
  || echo "FAIL scram: scram_check.py exited with a failure" | tee -a "$out"
broker_log=""
[[ "$broker" == sluice ]] && broker_log="$work/sluice.err"
tls_started=$(date +%s)
timeout 150 python3 "$here/tls_check.py" "$plain" "127.0.0.1:$tport" "127.0.0.1:$mport" \
  "127.0.0.1:$ssport" "$certs" "$broker_log" | tee -a "$out" \
  || echo "FAIL tls: tls_check.py exited with a failure" | tee -a "$out"
tls_java=$(date +%s)
timeout 120 "$here/java_tls_check.sh" "127.0.0.1:$tport" "127.0.0.1:$mport" "$certs" "$libs" \
  "$plain" | tee -a "$out" \
  || echo "FAIL java: java_tls_check.sh exited with a failure" | tee -a "$out"
echo "security: TLS checks $(( tls_java - tls_started )) s (clients), $(( $(date +%s) - tls_java )) s (Java tools)"
passed=$(grep -c '^PASS' "$out") failed=$(grep -c '^FAIL' "$out")
echo "security: $passed passed, $failed failed ($(( $(date +%s) - started )) s)"
[[ "$failed" == 0 && "$passed" -gt 0 ]]
