#!/usr/bin/env bash
# Security compat suite (issue 25): SASL/PLAIN and SCRAM-SHA-256/512 on a SASL_PLAINTEXT
# listener, checked by librdkafka (confluent-kafka), kafka-python, raw frames and Kafka's
# own kafka-topics and kafka-configs (scram_check.py).
#
#   compat/security/run.sh            # against Sluice (target/debug/sluice, built first)
#   compat/security/run.sh --kafka    # the same checks against Apache Kafka 4.1.1
#
# Options: --no-build (use target/debug/sluice as it is; SLUICE=path picks another),
# --keep (keep the work dir). The broker has three listeners: PLAINTEXT (setup), SASL
# (SASL_PLAINTEXT, PLAIN for alice and bob, SCRAM-SHA-256/512 with admin from --add-scram)
# and CONTROLLER, with the same keys for both brokers. Ends with "security: N passed, M
# failed"; about 70 s against Sluice (scram_check.py about 20 s of it).
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
timeout 150 python3 "$here/scram_check.py" "$plain" "$sasl" "$libs" | tee -a "$out"
passed=$(grep -c '^PASS' "$out") failed=$(grep -c '^FAIL' "$out")
echo "security: $passed passed, $failed failed ($(( $(date +%s) - started )) s)"
[[ "$failed" == 0 && "$passed" -gt 0 ]]
