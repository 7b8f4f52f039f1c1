#!/usr/bin/env bash
# Kafka's kafka-topics (org.apache.kafka.tools.TopicCommand, from compat/kafka/libs) over
# TLS as a user runs it with --command-config: SSL with a PEM truststore
# (ssl.truststore.type=PEM), and mTLS with a PEM keystore (ssl.keystore.type=PEM).
#
#   compat/security/java_tls_check.sh SSL_BOOTSTRAP MTLS_BOOTSTRAP CERTS_DIR LIBS_DIR
set -uo pipefail
ssl="$1" mtls="$2" certs="$3" libs="$4"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
failed=0
topics() { # bootstrap properties-file args...
  local bootstrap="$1" config="$2"; shift 2
  timeout 30 java -Xms64m -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData \
    "-Dlog4j2.configurationFile=$root/compat/kafka/log4j2.properties" \
    -cp "$libs/*" org.apache.kafka.tools.TopicCommand \
    --bootstrap-server "$bootstrap" --command-config "$config" "$@"
}
cat > "$work/ssl.properties" <<P
security.protocol=SSL
ssl.truststore.type=PEM
ssl.truststore.location=$certs/ca.pem
request.timeout.ms=8000
default.api.timeout.ms=10000
P
cp "$work/ssl.properties" "$work/mtls.properties"
cat >> "$work/mtls.properties" <<P
ssl.keystore.type=PEM
ssl.keystore.location=$certs/alice.pem
P

if out="$(topics "$ssl" "$work/ssl.properties" --create --topic java-tls --partitions 2 2>&1)" \
  && listed="$(topics "$ssl" "$work/ssl.properties" --list 2>&1)" && grep -qx java-tls <<<"$listed"; then
  echo "PASS java: kafka-topics --create/--list over SSL (ssl.truststore.type=PEM)"
else
  echo "FAIL java: kafka-topics over SSL: $(echo "${out:-} ${listed:-}" | tr '\n' ' ' | cut -c1-600)"
  failed=1
fi
if listed="$(topics "$mtls" "$work/mtls.properties" --list 2>&1)" && grep -qx java-tls <<<"$listed"; then
  echo "PASS java: kafka-topics --list over mTLS (ssl.keystore.type=PEM)"
else
  echo "FAIL java: kafka-topics over mTLS: $(echo "$listed" | tr '\n' ' ' | cut -c1-600)"
  failed=1
fi
exit $failed
