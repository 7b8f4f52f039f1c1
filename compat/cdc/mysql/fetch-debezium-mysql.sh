#!/usr/bin/env bash
# Resolve the judge of the MariaDB CDC compat harness from Maven Central into
# compat/cdc/mysql/libs/, then print that directory: Apache Kafka Connect's runtime
# (connect-runtime, connect-json, kafka-clients) at 3.7.0, the Kafka Debezium 2.7 is built
# on (Debezium 2.x's schema history calls KafkaConsumer.poll(long), gone in Kafka 4),
# Debezium's MySQL connector (io.debezium.connector.mysql.MySqlConnector, with
# debezium-connector-binlog, mysql-binlog-connector-java and mysql-connector-j), their
# runtime dependencies and log4j2's binding for slf4j 1.7 (the slf4j-api connect-runtime
# brings).
#
# Idempotent: if the libs dir's .stamp records the same versions and pom.xml checksum,
# it does nothing (well under a second). KAFKA_VERSION=x.y.z and
# DEBEZIUM_VERSION=x.y.z.Final pick others (defaults 3.7.0 and 2.7.4.Final); any other
# pair goes to libs-<kafka>-<debezium>/ so the default's stays (e.g.
# DEBEZIUM_VERSION=2.6.2.Final, whose MySqlConnector still has connector.adapter=mariadb;
# mysql_check.py asks for the pairs its variants need). Jars are cached in ~/.m2 by mvn.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kv="${KAFKA_VERSION:-3.7.0}"
dv="${DEBEZIUM_VERSION:-2.7.4.Final}"
if [[ "$kv" == 3.7.0 && "$dv" == 2.7.4.Final ]]; then
  libs="$here/libs"
else
  libs="$here/libs-$kv-$dv"
fi
stamp="$libs/.stamp"
pom_sum="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"

if [[ -f "$stamp" ]]; then
  read -r have_kafka have_dbz have_sum < "$stamp" || true
  if [[ "$have_kafka" == "$kv" && "$have_dbz" == "$dv" && "$have_sum" == "$pom_sum" ]] \
     && ls "$libs/connect-runtime-$kv.jar" "$libs/debezium-connector-mysql-$dv.jar" >/dev/null 2>&1; then
    echo "$libs"
    exit 0
  fi
fi

command -v mvn >/dev/null || { echo "fetch-debezium-mysql.sh: mvn not found (install maven)" >&2; exit 1; }
command -v java >/dev/null || { echo "fetch-debezium-mysql.sh: java not found (need Java 17+)" >&2; exit 1; }

tmp="$here/libs.tmp.$$"
log="$here/.mvn-$$.log"
trap 'rm -rf "$tmp" "$here/target" "$log"' EXIT
if mvn -q -B -Dstyle.color=never -f "$here/pom.xml" -Dkafka.version="$kv" -Ddebezium.version="$dv" \
     dependency:copy-dependencies -DincludeScope=runtime \
     -DoutputDirectory="$tmp" > "$log" 2>&1 \
   && [[ -f "$tmp/connect-runtime-$kv.jar" && -f "$tmp/connect-json-$kv.jar" \
         && -f "$tmp/kafka-clients-$kv.jar" && -f "$tmp/debezium-connector-mysql-$dv.jar" ]] \
   && ls "$tmp"/log4j-core-*.jar >/dev/null 2>&1; then
  # The binding must match the slf4j-api that resolved, or Connect logs nothing:
  # slf4j 1.7 finds log4j-slf4j-impl, slf4j 2.x needs log4j-slf4j2-impl.
  if ls "$tmp"/slf4j-api-2.*.jar >/dev/null 2>&1 && ! ls "$tmp"/log4j-slf4j2-impl-*.jar >/dev/null 2>&1; then
    echo "fetch-debezium-mysql.sh: slf4j-api 2.x resolved but no log4j-slf4j2-impl binding" >&2
    exit 1
  fi
  if ls "$tmp"/slf4j-api-1.*.jar >/dev/null 2>&1 && ! ls "$tmp"/log4j-slf4j-impl-*.jar >/dev/null 2>&1; then
    echo "fetch-debezium-mysql.sh: slf4j-api 1.7 resolved but no log4j-slf4j-impl binding" >&2
    exit 1
  fi
  echo "$kv $dv $pom_sum" > "$tmp/.stamp"
  echo "kafka $kv debezium $dv" > "$tmp/VERSION"
  rm -rf "$libs"
  mv "$tmp" "$libs"
  echo "$libs"
  exit 0
fi
echo "fetch-debezium-mysql.sh: Connect $kv / Debezium $dv did not resolve:" >&2
tail -n 15 "$log" >&2 || true
exit 1
