#!/usr/bin/env bash
# kcat (librdkafka's command-line producer/consumer) against a broker.
#
#   compat/clients/kcat_check.sh BOOTSTRAP
#
# Creates topic kcat-t (3 partitions) with confluent-kafka's AdminClient (kcat cannot
# create topics), then: -L metadata; -P from files (-l, -K key delimiter, -H headers,
# gzip/zstd); -C with -o beginning/-e, -o <offset>, -o -N, -c N, -o s@<ts>, -o e@<ts>,
# -o end; -Q offset for a timestamp. Every output is compared exactly. Prints one
# PASS/FAIL line per check; exits 1 if any failed.
set -uo pipefail
bootstrap="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
T=10 # seconds: bound on every kcat call
topic=kcat-t
failed=0
status_file="$work/status"
: > "$status_file"

pass() { echo "PASS kcat: $1"; echo "$1=ok" >> "$status_file"; }
fail() {
  echo "FAIL kcat: $1: $(echo "$2" | tr '\n' ' ' | cut -c1-600)"
  failed=$((failed + 1))
}
ok() { grep -qxF -e "$1=ok" "$status_file"; }
skip_unless() { # skip_unless NAME DEP...: prints FAIL and returns 1 if a DEP did not pass
  local name="$1"; shift
  for d in "$@"; do
    if ! ok "$d"; then fail "$name" "skipped (depends on $d)"; return 1; fi
  done
}
# compare NAME EXPECTED_FILE ACTUAL_FILE RC STDERR_FILE
compare() {
  if [[ "$4" != 0 ]]; then
    fail "$1" "exit $4: $(tail -c 400 "$5")"
  elif diff -u "$2" "$3" > "$work/diff"; then
    pass "$1"
  else
    fail "$1" "output differs: $(sed -n '3,14p' "$work/diff" | tr '\t' ' ')"
  fi
}
kc() { timeout "$T" kcat -b "$bootstrap" -m 5 -q "$@"; }

# -- topic -----------------------------------------------------------------------------
if timeout 20 python3 - "$bootstrap" "$topic" > "$work/create.err" 2>&1 <<'EOF'
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1], "log_level": 3})
try:
    for f in a.create_topics([NewTopic(sys.argv[2], 3, 1)], operation_timeout=8, request_timeout=8).values():
        f.result(timeout=10)
except Exception as e:
    sys.exit("create_topics: %s %s" % (type(e).__name__, e))
EOF
then pass "create topic (AdminClient)"; else fail "create topic (AdminClient)" "$(tail -c 400 "$work/create.err")"; fi

# -- metadata ------------------------------------------------------------------------------
name="-L metadata"
if skip_unless "$name" "create topic (AdminClient)"; then
  port="${bootstrap##*:}"
  host="${bootstrap%:*}"
  cat > "$work/L.want" <<EOF
 1 brokers:
  broker 1 at $host:$port (controller)
 1 topics:
  topic "$topic" with 3 partitions:
    partition 0, leader 1, replicas: 1, isrs: 1
    partition 1, leader 1, replicas: 1, isrs: 1
    partition 2, leader 1, replicas: 1, isrs: 1
EOF
  # librdkafka may get a new topic's metadata a moment after CreateTopics returns
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    kc -L -t "$topic" > "$work/L.raw" 2> "$work/L.err"; rc=$?
    # first line names whichever broker connection answered: "Metadata for T (from broker 1: ...)"
    head -1 "$work/L.raw" | grep -q "^Metadata for $topic (from broker " || rc="bad first line: $(head -1 "$work/L.raw")"
    tail -n +2 "$work/L.raw" > "$work/L.got"
    [[ "$rc" == 0 ]] && cmp -s "$work/L.want" "$work/L.got" && break
    sleep 0.3
  done
  compare "$name" "$work/L.want" "$work/L.got" "$rc" "$work/L.err"
fi

# -- produce -------------------------------------------------------------------------------
printf 'k1:v1\nk2:value two\nk3:third, with a comma\nk4:\n:no key\nk6:six\n' > "$work/in1"
printf 'g7:seven\ng8:eight\ng9:nine\n' > "$work/in2"
printf 'z10:ten\nz11:eleven\n' > "$work/in3"
printf 'p1a:one in p1\np1b:two in p1\n' > "$work/in4"
produce() { # produce NAME FILE ARGS...
  local name="$1" file="$2"; shift 2
  if skip_unless "$name" "create topic (AdminClient)"; then
    if kc -P -t "$topic" -K : -l "$file" "$@" 2> "$work/P.err"; then pass "$name"
    else fail "$name" "exit $?: $(tail -c 400 "$work/P.err")"; fi
  fi
}
produce "-P -l -K: -H (partition 0, 6 records)" "$work/in1" -p 0 -H src=kcat -H n=1
sleep 0.05 # the next batch must get later CreateTime timestamps
produce "-P gzip (partition 0, 3 records)" "$work/in2" -p 0 -z gzip
sleep 0.05
produce "-P zstd (partition 0, 2 records)" "$work/in3" -p 0 -X compression.codec=zstd
produce "-P lz4 (partition 1, 2 records)" "$work/in4" -p 1 -z lz4
produced=("-P -l -K: -H (partition 0, 6 records)" "-P gzip (partition 0, 3 records)"
          "-P zstd (partition 0, 2 records)")

# -- consume -------------------------------------------------------------------------------
fmt='%p|%o|%k|%s|%h\n'
cat > "$work/all.want" <<'EOF'
0|0|k1|v1|src=kcat,n=1
0|1|k2|value two|src=kcat,n=1
0|2|k3|third, with a comma|src=kcat,n=1
0|3|k4|NULL|src=kcat,n=1
0|4|NULL|no key|src=kcat,n=1
0|5|k6|six|src=kcat,n=1
0|6|g7|seven|
0|7|g8|eight|
0|8|g9|nine|
0|9|z10|ten|
0|10|z11|eleven|
EOF
consume() { # consume NAME EXPECTED_LINES(sed range or "") ARGS...
  local name="$1" range="$2"; shift 2
  if skip_unless "$name" "${produced[@]}"; then
    kc -C -t "$topic" -Z -f "$fmt" "$@" > "$work/C.got" 2> "$work/C.err"; local rc=$?
    if [[ -n "$range" ]]; then sed -n "$range" "$work/all.want" > "$work/C.want"; else : > "$work/C.want"; fi
    compare "$name" "$work/C.want" "$work/C.got" "$rc" "$work/C.err"
  fi
}
consume "-C -o beginning -e (keys, values, headers, offsets)" 1,11p -p 0 -o beginning -e
consume "-C -o 4 -e (absolute offset)" 5,11p -p 0 -o 4 -e
consume "-C -o -3 -e (last 3)" 9,11p -p 0 -o -3 -e
consume "-C -o beginning -c 2" 1,2p -p 0 -o beginning -c 2
consume "-C -o 7 -c 3 (across batches)" 8,10p -p 0 -o 7 -c 3

name="-C partition 1 (lz4)"
if skip_unless "$name" "-P lz4 (partition 1, 2 records)"; then
  printf '1|0|p1a|one in p1|\n1|1|p1b|two in p1|\n' > "$work/p1.want"
  kc -C -t "$topic" -p 1 -o beginning -e -Z -f "$fmt" > "$work/p1.got" 2> "$work/p1.err"
  compare "$name" "$work/p1.want" "$work/p1.got" $? "$work/p1.err"
fi

# timestamps: the first record of each produce run starts a later CreateTime
name="timestamps (CreateTime, non-decreasing, later per produce run)"
if skip_unless "$name" "${produced[@]}"; then
  kc -C -t "$topic" -p 0 -o beginning -e -f '%o %T\n' > "$work/ts" 2> "$work/ts.err"; rc=$?
  read -r _ t1 < <(sed -n 1p "$work/ts")
  read -r _ t_last1 < <(sed -n 6p "$work/ts")
  read -r _ t2 < <(sed -n 7p "$work/ts")
  read -r _ t_last2 < <(sed -n 9p "$work/ts")
  read -r _ t3 < <(sed -n 10p "$work/ts")
  now=$(($(date +%s%3N)))
  if [[ "$rc" != 0 ]]; then fail "$name" "exit $rc: $(tail -c 300 "$work/ts.err")"
  elif [[ "$(wc -l < "$work/ts")" != 11 ]]; then fail "$name" "$(wc -l < "$work/ts") records: $(cat "$work/ts")"
  elif ! sort -s -n -k2,2 -c "$work/ts" 2>/dev/null; then fail "$name" "decreasing: $(cat "$work/ts")"
  elif ! (( t_last1 < t2 && t_last2 < t3 && t1 > now - 120000 && t3 <= now )); then
    fail "$name" "timestamps not separated per produce run or not recent: $(cat "$work/ts")"
  else pass "$name"; fi
fi

name="-C -o s@<ts> -e (from timestamp)"
if skip_unless "$name" "timestamps (CreateTime, non-decreasing, later per produce run)"; then
  kc -C -t "$topic" -p 0 -o "s@$t2" -e -Z -f "$fmt" > "$work/s.got" 2> "$work/s.err"; rc=$?
  sed -n 7,11p "$work/all.want" > "$work/s.want"
  compare "$name" "$work/s.want" "$work/s.got" "$rc" "$work/s.err"
fi
name="-C -o beginning -o e@<ts> -e (until timestamp)"
if skip_unless "$name" "timestamps (CreateTime, non-decreasing, later per produce run)"; then
  kc -C -t "$topic" -p 0 -o beginning -o "e@$t3" -e -Z -f "$fmt" > "$work/e.got" 2> "$work/e.err"; rc=$?
  sed -n 1,9p "$work/all.want" > "$work/e.want"
  compare "$name" "$work/e.want" "$work/e.got" "$rc" "$work/e.err"
fi
name="-Q offset for timestamp"
if skip_unless "$name" "timestamps (CreateTime, non-decreasing, later per produce run)"; then
  # one partition per call (kcat keeps only the last -t of a partition); a timestamp
  # after the last record gets offset -1 (Kafka's "no such offset", kcat prints it as is)
  { kc -Q -t "$topic:0:$t2" && kc -Q -t "$topic:0:$((t1 - 1))" && kc -Q -t "$topic:0:$((t3 + 1))"; } \
    > "$work/Q.got" 2> "$work/Q.err"; rc=$?
  printf '%s [0] offset 6\n%s [0] offset 0\n%s [0] offset -1\n' "$topic" "$topic" "$topic" > "$work/Q.want"
  compare "$name" "$work/Q.want" "$work/Q.got" "$rc" "$work/Q.err"
fi

# -o end: a consumer started at the end sees only records produced after it started.
# Produce late-N records until it has one; it must be late-N at offset 11+N.
name="-C -o end -c 1 (only new records)"
if skip_unless "$name" "${produced[@]}"; then
  timeout "$T" kcat -b "$bootstrap" -m 5 -q -C -t "$topic" -p 0 -o end -c 1 -Z -f "$fmt" \
    > "$work/end.got" 2> "$work/end.err" &
  end_pid=$!
  n=0
  while kill -0 "$end_pid" 2>/dev/null && (( n < 15 )); do
    sleep 0.4
    echo "late$n:late-$n" | kc -P -t "$topic" -p 0 -K : 2>> "$work/end.err"
    n=$((n + 1))
  done
  wait "$end_pid"; rc=$?
  got="$(cat "$work/end.got")"
  if [[ "$rc" != 0 ]]; then fail "$name" "exit $rc after $n late records: $(tail -c 300 "$work/end.err")"
  elif [[ "$got" =~ ^0\|([0-9]+)\|late([0-9]+)\|late-([0-9]+)\|$ ]] \
       && [[ "${BASH_REMATCH[1]}" == $((11 + BASH_REMATCH[2])) && "${BASH_REMATCH[2]}" == "${BASH_REMATCH[3]}" ]]; then
    pass "$name"
  else
    fail "$name" "got '$got' after $n late records"
  fi
fi

[[ "$failed" == 0 ]]
