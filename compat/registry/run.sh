#!/usr/bin/env bash
# Schema registry compat suite (issue 9): Sluice's Confluent-compatible registry (`sluice
# server --with-registry`) judged by Confluent's own clients, unchanged.
#
#   compat/registry/run.sh            # builds (compat/build.sh), then runs every suite
#
# Options: --no-build (use target/debug/sluice and target/debug/examples/registry_serde as
# they are; SLUICE=path / REGISTRY_SERDE=path pick other binaries), --serial (one suite at
# a time; default: all at once), --keep (keep the work dir with each suite's stderr and the
# broker's log), --only "SUITE ..." (some of: avro protobuf json errors npm rust-serde).
# There is no --kafka: Apache Kafka has no schema registry to compare with.
#
# Suites (details in each script's docstring and README.md), at once, against one node:
#   avro        avro_check.py        confluent-kafka's SchemaRegistryClient, AvroSerializer and
#                                    AvroDeserializer: the guide's Order v1 -> v2 (BACKWARD), a
#                                    field without default refused (409), a subject at NONE,
#                                    v1 and v2 records produced to and consumed from Sluice
#   protobuf    protobuf_check.py    .proto text and ?format=serialized, evolution and a 409,
#                                    ProtobufSerializer/Deserializer records (message indexes,
#                                    nested types, an import as a reference)
#   json        json_check.py        JSON Schema: register, evolve, 409, JSONSerializer and
#                                    JSONDeserializer records
#   errors      errors_check.py      bad input: 42201 (invalid schemas, unknown references),
#                                    40401, 40402, 40403, 42202, 42203, via the Python client
#                                    and raw HTTP
#   npm         npm_check.js         @confluentinc/schemaregistry (npm): register, fetch,
#                                    evolve, RestErrors, its AvroSerializer/Deserializer
#   rust-serde  rust_serde_check.py  Sluice's Rust serializer (examples/registry_serde) and
#                                    Python's: each reads what the other wrote through Sluice
# Each check prints "PASS registry: <check>" or "FAIL registry: <check>: <reason>"; the run
# ends with "registry: N passed, M failed" and exits 1 if anything failed. Installs what is
# missing: confluent-kafka's schema registry extras (pip) and @confluentinc/schemaregistry
# (npm, into compat/registry/node_modules/). About 10 s on 2 cores, plus the build.
set -uo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
here="$root/compat/registry"

broker=sluice build=1 serial=0 keep=0
all_suites="avro protobuf json errors npm rust-serde"
only="$all_suites"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) build=0 ;;
    --serial) serial=1 ;;
    --keep) keep=1 ;;
    --only) only="$2"; shift ;;
    --kafka) echo "run.sh: --kafka: Apache Kafka has no schema registry to run these against" >&2; exit 2 ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
for s in $only; do
  [[ " $all_suites " == *" $s "* ]] || { echo "run.sh: unknown suite $s (of: $all_suites)" >&2; exit 2; }
done
started=$(date +%s%N)

# -- tools -------------------------------------------------------------------------------
# confluent-kafka's serializers import fastavro, google.protobuf (+ googleapis-common-protos),
# jsonschema, and its SchemaRegistryClient httpx2 (httpx before Python 3.10), authlib,
# cachetools, attrs: the extras install them. An installed confluent-kafka keeps its version
# (the other suites run against its librdkafka).
python_ok() {
  python3 - 2>/dev/null <<'PY'
import attrs, authlib, cachetools, fastavro, google.protobuf, google.type, jsonschema
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
PY
}
if ! python_ok; then
  version="$(python3 -c 'import confluent_kafka; print(confluent_kafka.__version__)' 2>/dev/null)"
  python3 -m pip install -q "confluent-kafka[avro,json,protobuf,schemaregistry]${version:+==$version}" >&2
  python_ok || { echo "run.sh: confluent-kafka's schema registry extras do not import" >&2; exit 1; }
fi

# The npm client, pinned in package.json, installed once into compat/registry/node_modules/
# (git ignores it). Failing to install it fails the npm suite, not the run.
npm_problem=""
if [[ " $only " == *" npm "* ]]; then
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    npm_problem="node and npm are needed for the npm suite (not on PATH)"
  else
    pkg_version() { python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["dependencies"][sys.argv[2]] if sys.argv[2] else d["version"])' "$@" 2>/dev/null; }
    wanted="$(pkg_version "$here/package.json" @confluentinc/schemaregistry)"
    installed="$(pkg_version "$here/node_modules/@confluentinc/schemaregistry/package.json" "")"
    if [[ "$installed" != "$wanted" ]]; then
      echo "run.sh: npm install @confluentinc/schemaregistry@$wanted into $here/node_modules" >&2
      (cd "$here" && timeout 600 npm install --no-audit --no-fund --no-package-lock --loglevel=error) >&2 ||
        npm_problem="npm install of @confluentinc/schemaregistry@$wanted failed (exit $?)"
    fi
  fi
fi

if [[ "$build" == 1 && -z "${SLUICE:-}" ]]; then
  compat/build.sh || { echo "run.sh: compat/build.sh failed" >&2; exit 1; }
fi
sluice="${SLUICE:-target/debug/sluice}"
[[ -x "$sluice" ]] || { echo "run.sh: no $sluice (build it or set SLUICE)" >&2; exit 1; }
export REGISTRY_SERDE="${REGISTRY_SERDE:-$root/target/debug/examples/registry_serde}"

work="$(mktemp -d -t sluice-registry.XXXXXX)"
name=registry
suites=""
# suites.sh gives free_ports, stop_sluice, broker_alive, run_suites and stop_suites; its
# start_sluice cannot pass --with-registry, so start_sluice_with_registry below is a copy
# of it with the registry's flags and its readiness line.
source "$root/compat/lib/suites.sh"
cleanup() {
  stop_suites
  stop_sluice
  if [[ "$keep" == 1 ]]; then echo "registry: work dir kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# -- broker and registry -----------------------------------------------------------------
free_port() {
  python3 "$root/compat/lib/ports.py"
}

# Starts Sluice with its in-process registry on $port/$cport/$rport, log dir $work/data;
# returns 1 unless both the listener and the registry come up within 20 s.
start_sluice_with_registry() {
  "$sluice" server \
    --with-registry --registry-listen "127.0.0.1:$rport" \
    --set "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport" \
    --set "advertised.listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport" \
    --set "controller.quorum.bootstrap.servers=127.0.0.1:$cport" \
    --set "log.dirs=$work/data" \
    --set "group.initial.rebalance.delay.ms=0" \
    >> "$work/sluice.out" 2>> "$broker_log" < /dev/null &
  broker_pid=$!
  for _ in $(seq 400); do
    if grep -q "^sluice: listening on PLAINTEXT://127.0.0.1:$port" "$broker_log" &&
       grep -q "^sluice: schema registry listening on http://127.0.0.1:$rport" "$broker_log"; then
      return 0
    fi
    grep -q "^sluice: the schema registry did not start" "$broker_log" && break
    kill -0 "$broker_pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "run.sh: sluice did not start listening on 127.0.0.1:$port with its registry on 127.0.0.1:$rport:" >&2
  tail -30 "$broker_log" >&2
  return 1
}

read -r port cport < <(free_ports)
rport="$(free_port)"
mkdir -p "$work/data"
broker_log="$work/sluice.err"
start_sluice_with_registry || exit 1
bootstrap="127.0.0.1:$port"
registry="http://127.0.0.1:$rport"
what="Sluice ($sluice)"
echo "registry: against $what at $bootstrap, its registry at $registry"

# -- suites ------------------------------------------------------------------------------
suite_cmd() { # sets cmd=(...) for suite $1
  case "$1" in
    avro) cmd=(timeout 120 python3 "$here/avro_check.py" "$bootstrap" "$registry" "$work") ;;
    protobuf) cmd=(timeout 120 python3 "$here/protobuf_check.py" "$bootstrap" "$registry" "$work") ;;
    json) cmd=(timeout 90 python3 "$here/json_check.py" "$bootstrap" "$registry" "$work") ;;
    errors) cmd=(timeout 60 python3 "$here/errors_check.py" "$bootstrap" "$registry" "$work") ;;
    npm)
      if [[ -n "$npm_problem" ]]; then
        cmd=(sh -c 'echo "FAIL registry: npm: @confluentinc/schemaregistry: $1"; exit 1' sh "$npm_problem")
      else
        cmd=(timeout 90 node "$here/npm_check.js" "$registry")
      fi ;;
    rust-serde) cmd=(timeout 200 python3 "$here/rust_serde_check.py" "$bootstrap" "$registry" "$work") ;;
    *) cmd=(sh -c "echo 'FAIL registry: $1: (suite) unknown suite'; exit 1") ;;
  esac
}

suites="$only"
run_suites
if [[ "$serial" != 1 ]]; then
  for s in $suites; do cat "$work/$s.out"; done
fi

# -- tally -------------------------------------------------------------------------------
# Like suites.sh's tally_suite, with this suite's "registry:" prefix: a suite whose exit code
# disagrees with its lines, or that printed none, costs a FAIL of its own.
passed=0 failed=0
for s in $suites; do
  out="$work/$s.out"
  rc="$(cat "$work/$s.rc" 2>/dev/null || echo '?')"
  p=$(grep -c '^PASS ' "$out" 2>/dev/null); f=$(grep -c '^FAIL ' "$out" 2>/dev/null)
  p=${p:-0} f=${f:-0}
  if [[ "$rc" != 0 && "$f" == 0 ]] || [[ "$rc" == 0 && "$f" != 0 ]] || [[ "$p$f" == 00 ]]; then
    why="exit $rc"; [[ "$rc" == 124 ]] && why="timed out"; [[ "$rc" == 143 ]] && why="stopped"
    echo "FAIL registry: $s: (suite) $why: $(tail -c 400 "$work/$s.err" 2>/dev/null | tr '\n' ' ')"
    f=$((f + 1))
  fi
  passed=$((passed + p)); failed=$((failed + f))
done

# The node's own verdict: still running, and its registry still answers.
if broker_alive && python3 -c 'import sys, urllib.request
sys.exit(urllib.request.urlopen(sys.argv[1] + "/subjects", timeout=5).status != 200)' "$registry" 2>/dev/null; then
  passed=$((passed + 1)); echo "PASS registry: broker: sluice still running, its registry still answering, after all suites"
else
  failed=$((failed + 1))
  echo "FAIL registry: broker: sluice or its registry stopped during the run (the suites were stopped): $(tail -c 600 "$broker_log" | tr '\n' ' ')"
fi

if [[ "$failed" != 0 ]]; then
  if grep -qv '^sluice: \(schema registry \)\?listening on' "$broker_log"; then
    echo "registry: the broker's log (last lines):"
    grep -v '^sluice: \(schema registry \)\?listening on' "$broker_log" | tail -n 15 | sed 's/^/  /'
  fi
  if [[ "$keep" == 1 ]]; then
    echo "registry: each suite's stderr is in $work/SUITE.err, the broker's log in $broker_log"
  else
    echo "registry: rerun with --keep to keep each suite's stderr and the broker's log"
  fi
fi
elapsed_ms=$((($(date +%s%N) - started) / 1000000))
printf 'registry: ran against %s in %d.%ds\n' "$what" $((elapsed_ms / 1000)) $((elapsed_ms % 1000 / 100))
echo "registry: $passed passed, $failed failed"
[[ "$failed" == 0 ]]
