#!/usr/bin/env bash
# Resolve the judge of the CDC compat suite from Maven Central into compat/cdc/libs/,
# then print that directory: Apache Kafka Connect's runtime (connect-runtime,
# connect-json, kafka-clients) at the Kafka version Debezium is built on, Debezium's
# PostgreSQL connector, their runtime dependencies and a log4j2 binding for slf4j 1.7.
#
# Idempotent: if libs/.stamp records the same versions and pom.xml checksum, it does
# nothing (well under a second). KAFKA_VERSION=x.y.z and DEBEZIUM_VERSION=x.y.z.Final
# pick others (defaults 4.3.0 and 3.6.1.Final). Jars are cached in ~/.m2 by mvn.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
libs="$here/libs"
stamp="$libs/.stamp"
kv="${KAFKA_VERSION:-4.3.0}"
dv="${DEBEZIUM_VERSION:-3.6.1.Final}"
pom_sum="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"

if [[ -f "$stamp" ]]; then
  read -r have_kafka have_dbz have_sum < "$stamp" || true
  if [[ "$have_kafka" == "$kv" && "$have_dbz" == "$dv" && "$have_sum" == "$pom_sum" ]] \
     && ls "$libs/connect-runtime-$kv.jar" "$libs/debezium-connector-postgres-$dv.jar" >/dev/null 2>&1; then
    echo "$libs"
    exit 0
  fi
fi

command -v mvn >/dev/null || { echo "fetch-debezium.sh: mvn not found (install maven)" >&2; exit 1; }
command -v java >/dev/null || { echo "fetch-debezium.sh: java not found (need Java 17+)" >&2; exit 1; }

tmp="$here/libs.tmp.$$"
log="$here/.mvn-$$.log"
trap 'rm -rf "$tmp" "$here/target" "$log"' EXIT
if mvn -q -B -Dstyle.color=never -f "$here/pom.xml" -Dkafka.version="$kv" -Ddebezium.version="$dv" \
     dependency:copy-dependencies -DincludeScope=runtime \
     -DoutputDirectory="$tmp" > "$log" 2>&1 \
   && [[ -f "$tmp/connect-runtime-$kv.jar" && -f "$tmp/connect-json-$kv.jar" \
         && -f "$tmp/kafka-clients-$kv.jar" && -f "$tmp/debezium-connector-postgres-$dv.jar" ]] \
   && ls "$tmp"/log4j-slf4j-impl-*.jar "$tmp"/log4j-core-*.jar >/dev/null 2>&1; then
  echo "$kv $dv $pom_sum" > "$tmp/.stamp"
  echo "kafka $kv debezium $dv" > "$tmp/VERSION"
  rm -rf "$libs"
  mv "$tmp" "$libs"
  echo "$libs"
  exit 0
fi
echo "fetch-debezium.sh: Connect $kv / Debezium $dv did not resolve:" >&2
tail -n 15 "$log" >&2 || true
exit 1
