#!/usr/bin/env bash
# Kafka's kafka-topics (org.apache.kafka.tools.TopicCommand, from compat/kafka/libs) over
# a SASL_PLAINTEXT listener with PLAIN, as a user runs it with --command-config:
#
#   compat/security/java_check.sh SASL_BOOTSTRAP LIBS_DIR
set -uo pipefail
bootstrap="$1" libs="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
failed=0
properties() { # user password
  cat <<P
security.protocol=SASL_PLAINTEXT
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="$1" password="$2";
request.timeout.ms=8000
default.api.timeout.ms=10000
P
}
topics() { # properties-file args...
  local config="$1"; shift
  timeout 30 java -Xms64m -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData \
    "-Dlog4j2.configurationFile=$root/compat/kafka/log4j2.properties" \
    -cp "$libs/*" org.apache.kafka.tools.TopicCommand \
    --bootstrap-server "$bootstrap" --command-config "$config" "$@"
}
properties alice alice-secret > "$work/alice.properties"
properties alice wrong > "$work/wrong.properties"

if out="$(topics "$work/alice.properties" --create --topic java-secured --partitions 2 2>&1)" \
  && listed="$(topics "$work/alice.properties" --list 2>&1)" && grep -qx java-secured <<<"$listed"; then
  echo "PASS java: kafka-topics --create/--list with --command-config (PLAIN as alice)"
else
  echo "FAIL java: kafka-topics as alice: $(echo "$out $listed" | tr '\n' ' ' | cut -c1-600)"
  failed=1
fi
if out="$(topics "$work/wrong.properties" --list 2>&1)"; then
  echo "FAIL java: kafka-topics with a wrong password succeeded: $(echo "$out" | tr '\n' ' ' | cut -c1-300)"
  failed=1
elif grep -q "SaslAuthenticationException: Authentication failed: Invalid username or password" <<<"$out"; then
  echo "PASS java: a wrong password fails with SaslAuthenticationException (Kafka's message)"
else
  echo "FAIL java: wrong password: unexpected error: $(echo "$out" | tr '\n' ' ' | cut -c1-600)"
  failed=1
fi
exit $failed
