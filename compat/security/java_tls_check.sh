#!/usr/bin/env bash
# Kafka's kafka-topics (org.apache.kafka.tools.TopicCommand, from compat/kafka/libs) over
# TLS as a user runs it with --command-config: SSL with a PEM truststore
# (ssl.truststore.type=PEM), and mTLS with a PEM keystore (ssl.keystore.type=PEM).
#
#   compat/security/java_tls_check.sh SSL_BOOTSTRAP MTLS_BOOTSTRAP CERTS_DIR LIBS_DIR PLAIN_BOOTSTRAP
#
# The last check changes the SSL listener's key store: run it after the others.
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

# Certificates reloaded on a dynamic config change, as an operator rotates them:
# kafka-configs --alter --entity-type brokers of listener.name.ssl.ssl.keystore.location.
# Before: a client trusting only the second CA is refused; a key store that cannot be read
# is refused with INVALID_CONFIG; after the change the client gets through (and one
# trusting only the first CA no longer does).
probe() { # ca-file: exit 0 when a message is delivered over SSL trusting only ca-file
  python3 - "$ssl" "$1" <<'PY'
import sys
from confluent_kafka import Producer
delivered = []
p = Producer({"bootstrap.servers": sys.argv[1], "security.protocol": "SSL",
              "ssl.ca.location": sys.argv[2], "message.timeout.ms": 1500, "log_level": 0})
p.produce("java-tls", b"probe", on_delivery=lambda e, m: delivered.append(e))
p.flush(3)
sys.exit(0 if delivered == [None] else 1)
PY
}
configs() { # args...
  timeout 30 java -Xms64m -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData \
    "-Dlog4j2.configurationFile=$root/compat/kafka/log4j2.properties" \
    -cp "$libs/*" kafka.admin.ConfigCommand --bootstrap-server "$plain" \
    --entity-type brokers --entity-name 1 --alter "$@"
}
plain="${5:-}"
if [[ -z "$plain" ]]; then
  echo "FAIL java: no PLAINTEXT bootstrap given for the reload check"
  exit 1
fi
reload() {
  probe "$certs/ca2.pem" && { echo "the second CA was trusted before the change"; return 1; }
  local out
  if out="$(configs --add-config "listener.name.ssl.ssl.keystore.location=$certs/missing.pem" 2>&1)"; then
    echo "a key store that does not exist was accepted"; return 1
  fi
  grep -q "InvalidConfigurationException\|INVALID_CONFIG\|InvalidConfig" <<<"$out" \
    || { echo "unexpected refusal: $(echo "$out" | tr '\n' ' ' | cut -c1-400)"; return 1; }
  out="$(configs --add-config "listener.name.ssl.ssl.keystore.location=$certs/server2.pem" 2>&1)" \
    || { echo "the change was refused: $(echo "$out" | tr '\n' ' ' | cut -c1-400)"; return 1; }
  local i
  for i in $(seq 20); do
    probe "$certs/ca2.pem" && break
    [[ "$i" == 20 ]] && { echo "the new certificate is not served 20 tries after the change"; return 1; }
    sleep 0.25
  done
  probe "$certs/ca.pem" && { echo "the old certificate is still served"; return 1; }
  return 0
}
if why="$(reload)"; then
  echo "PASS java: kafka-configs --alter of listener.name.ssl.ssl.keystore.location reloads the certificate (a bad path is INVALID_CONFIG)"
else
  echo "FAIL java: certificate reload: $why"
  failed=1
fi
exit $failed
