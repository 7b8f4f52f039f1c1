#!/usr/bin/env bash
# Start one OpenSearch 2.19.6 node in the foreground: REST on http://127.0.0.1:PORT,
# home and data under DIR. Prints "opensearch ready on http://127.0.0.1:PORT" once the
# REST port answers; SIGTERM closes the node. Fetches the jars (fetch.sh) and compiles
# EmbeddedOpenSearch.java into target/classes on first use; both steps are idempotent.
#
#   compat/opensearch/start.sh PORT DIR
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 PORT DIR" >&2
  exit 2
fi
port="$1"
dir="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
libs="$("$here/fetch.sh")"

src="$here/src/main/java/dev/sluice/compat/opensearch/EmbeddedOpenSearch.java"
classes="$here/target/classes"
class="$classes/dev/sluice/compat/opensearch/EmbeddedOpenSearch.class"
if [[ ! -f "$class" || "$src" -nt "$class" || "$libs/.stamp" -nt "$class" ]]; then
  # Compile into a private directory and move it in whole, so that two tests starting
  # at once never run a half-written class.
  mkdir -p "$here/target"
  tmp="$(mktemp -d "$here/target/classes.tmp.XXXXXX")"
  # javac's only warning is about sun.misc.Signal (the SIGTERM handler): shown on failure.
  if ! out="$(javac -nowarn -d "$tmp" -cp "$libs/*" "$src" 2>&1)"; then
    echo "$out" >&2
    exit 1
  fi
  rm -rf "$classes"
  mv -T "$tmp" "$classes" 2>/dev/null || rm -rf "$tmp"
fi

mkdir -p "$dir"
# A small heap is plenty for a test node; the defaults would take a quarter of the
# machine. SerialGC keeps the JVM's own threads and memory down on a 2-core machine.
exec java -Xms256m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -Djava.awt.headless=true -Dfile.encoding=UTF-8 \
  -Dlog4j2.disable.jmx=true -Dlog4j.shutdownHookEnabled=false \
  -cp "$classes:$libs/*" dev.sluice.compat.opensearch.EmbeddedOpenSearch "$port" "$dir"
