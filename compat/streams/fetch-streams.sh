#!/usr/bin/env bash
# Resolve Kafka Streams (org.apache.kafka:kafka-streams, with rocksdbjni and kafka-clients)
# and its runtime dependencies plus a log4j2 binding from Maven Central into
# compat/streams/libs/, then print that directory.
#
# Idempotent: if libs/.stamp records the same version and pom.xml checksum, it does
# nothing (well under a second). KAFKA_VERSION=x.y.z picks another version (default
# 4.1.1, the version compat/kafka/fetch-kafka.sh resolves). Jars are cached in ~/.m2.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
libs="$here/libs"
stamp="$libs/.stamp"
v="${KAFKA_VERSION:-4.1.1}"
pom_sum="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"

if [[ -f "$stamp" ]]; then
  read -r have_version have_sum < "$stamp" || true
  if [[ "$have_version" == "$v" && "$have_sum" == "$pom_sum" ]] \
     && ls "$libs"/kafka-streams-"$v".jar "$libs"/rocksdbjni-*.jar >/dev/null 2>&1; then
    echo "$libs"
    exit 0
  fi
fi

command -v mvn >/dev/null || { echo "fetch-streams.sh: mvn not found (install maven)" >&2; exit 1; }
command -v java >/dev/null || { echo "fetch-streams.sh: java not found (need Java 17+)" >&2; exit 1; }

tmp="$here/libs.tmp.$$"
log="$here/.mvn-$$.log"
trap 'rm -rf "$tmp" "$here/target" "$log"' EXIT
if mvn -q -B -Dstyle.color=never -f "$here/pom.xml" -Dkafka.version="$v" \
     dependency:copy-dependencies -DincludeScope=runtime \
     -DoutputDirectory="$tmp" > "$log" 2>&1 \
   && [[ -f "$tmp/kafka-streams-$v.jar" && -f "$tmp/kafka-clients-$v.jar" ]] \
   && ls "$tmp"/rocksdbjni-*.jar >/dev/null 2>&1; then
  echo "$v $pom_sum" > "$tmp/.stamp"
  echo "$v" > "$tmp/VERSION"
  rm -rf "$libs"
  mv "$tmp" "$libs"
  echo "$libs"
  exit 0
fi
echo "fetch-streams.sh: Kafka Streams $v did not resolve:" >&2
tail -n 15 "$log" >&2 || true
exit 1
