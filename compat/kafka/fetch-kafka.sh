#!/usr/bin/env bash
# Resolve Apache Kafka 4.x (server, tools, clients) and all runtime dependencies
# from Maven Central into compat/kafka/libs/, then print that directory.
#
# Idempotent: if libs/.stamp records the same version and pom.xml checksum, it
# does nothing (well under a second). Candidate versions are tried in order;
# set KAFKA_VERSION=x.y.z to force one. Jars are cached in ~/.m2 by mvn.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
libs="$here/libs"
stamp="$libs/.stamp"
candidates="${KAFKA_VERSION:-4.1.1 4.3.1 4.4.0}"
pom_sum="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"

if [[ -f "$stamp" ]]; then
  read -r have_version have_sum < "$stamp" || true
  for v in $candidates; do
    if [[ "$have_version" == "$v" && "$have_sum" == "$pom_sum" ]] && ls "$libs"/kafka-clients-*.jar >/dev/null 2>&1; then
      echo "$libs"
      exit 0
    fi
  done
fi

command -v mvn >/dev/null || { echo "fetch-kafka.sh: mvn not found (install maven)" >&2; exit 1; }
command -v java >/dev/null || { echo "fetch-kafka.sh: java not found (need Java 17+)" >&2; exit 1; }

tmp="$here/libs.tmp.$$"
trap 'rm -rf "$tmp" "$here/target"' EXIT
for v in $candidates; do
  rm -rf "$tmp"
  if mvn -q -B -Dstyle.color=never -f "$here/pom.xml" -Dkafka.version="$v" \
       dependency:copy-dependencies -DincludeScope=runtime \
       -DoutputDirectory="$tmp" > "$here/.mvn-$$.log" 2>&1 \
     && [[ -f "$tmp/kafka_2.13-$v.jar" && -f "$tmp/kafka-clients-$v.jar" ]]; then
    rm -f "$here/.mvn-$$.log"
    echo "$v $pom_sum" > "$tmp/.stamp"
    echo "$v" > "$tmp/VERSION"
    rm -rf "$libs"
    mv "$tmp" "$libs"
    echo "$libs"
    exit 0
  fi
  echo "fetch-kafka.sh: Kafka $v did not resolve; trying next candidate" >&2
  tail -n 15 "$here/.mvn-$$.log" >&2 || true
  rm -f "$here/.mvn-$$.log"
done
echo "fetch-kafka.sh: no Kafka version out of [$candidates] could be resolved" >&2
exit 1
