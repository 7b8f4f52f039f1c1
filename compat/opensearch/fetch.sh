#!/usr/bin/env bash
# Resolve OpenSearch 2.19.6 (server jar, Netty4 transport/HTTP plugin, log4j backend)
# and all runtime dependencies from Maven Central into compat/opensearch/libs/, then
# print that directory. CI's install step runs this; start.sh runs it too.
#
# Idempotent: if libs/.stamp records the pom.xml checksum and the server jar is there,
# it does nothing (well under a second). Jars are cached in ~/.m2 by mvn.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
libs="$here/libs"
stamp="$libs/.stamp"
pom_sum="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$pom_sum" ]] && ls "$libs"/opensearch-2.*.jar >/dev/null 2>&1; then
  echo "$libs"
  exit 0
fi

command -v mvn >/dev/null || { echo "fetch.sh: mvn not found (install maven)" >&2; exit 1; }
command -v java >/dev/null || { echo "fetch.sh: java not found (need Java 17)" >&2; exit 1; }

tmp="$here/libs.tmp.$$"
log="$here/.mvn-$$.log"
trap 'rm -rf "$tmp" "$log"' EXIT
# Offline first: with the jars already in ~/.m2 this asks no registry.
resolve() {
  mvn -q -B -Dstyle.color=never "$@" -f "$here/pom.xml" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" > "$log" 2>&1
}
if ! resolve -o && ! resolve; then
  echo "fetch.sh: OpenSearch's jars did not resolve from Maven Central" >&2
  tail -n 20 "$log" >&2 || true
  exit 1
fi
ls "$tmp"/opensearch-2.*.jar "$tmp"/transport-netty4-client-*.jar >/dev/null
echo "$pom_sum" > "$tmp/.stamp"
rm -rf "$libs"
mv "$tmp" "$libs"
echo "$libs"
