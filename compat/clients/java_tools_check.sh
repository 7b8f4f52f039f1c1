#!/usr/bin/env bash
# Kafka 4.1's own command-line tools (from compat/kafka/libs) against a broker, each run
# as its kafka-*.sh script would run it (`java -cp "$libs/*" <main class> ...`):
#
#   compat/clients/java_tools_check.sh BOOTSTRAP LIBS_DIR
#
#   kafka-topics          org.apache.kafka.tools.TopicCommand       --create/--list/--alter/--describe/--delete
#   kafka-configs         kafka.admin.ConfigCommand                 --describe/--alter on a topic
#   kafka-console-producer org.apache.kafka.tools.ConsoleProducer   keys, headers, gzip
#   kafka-console-consumer org.apache.kafka.tools.consumer.ConsoleConsumer --partition 0 --offset earliest (no group)
#   kafka-get-offsets     org.apache.kafka.tools.GetOffsetShell
#   kafka-metadata-quorum org.apache.kafka.tools.MetadataQuorumCommand
#   kafka-transactions    org.apache.kafka.tools.TransactionsCommand describe-producers
#
# Every output is compared exactly (a new topic's random TopicId and the broker-wide part
# of the Configs: column excepted). One PASS/FAIL line per check; exits 1 if any failed.
set -uo pipefail
bootstrap="$1"
libs="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
T=16 # seconds: bound on every tool run (JVM start included)
topic=tools-t
failed=0
: > "$work/status"

pass() { echo "PASS kafka-tools: $1"; echo "$1=ok" >> "$work/status"; }
fail() {
  echo "FAIL kafka-tools: $1: $(echo "$2" | tr '\n\t' '  ' | cut -c1-700)"
  failed=$((failed + 1))
}
ok() { grep -qxF -e "$1=ok" "$work/status"; }
skip_unless() {
  local name="$1"; shift
  for d in "$@"; do
    if ! ok "$d"; then fail "$name" "skipped (depends on $d)"; return 1; fi
  done
}
# Shorter client timeouts than the tools' defaults (60 s), so a broker that does not
# answer fails a check in seconds; nothing else is changed.
printf 'request.timeout.ms=8000\ndefault.api.timeout.ms=10000\n' > "$work/client.properties"
tool() { # tool CLASS ARGS... (stdout -> $work/out, stderr -> $work/err; returns the exit code)
  local cls="$1"; shift
  local -a bound
  case "$cls" in
    *ConsoleProducer) bound=(--producer-property max.block.ms=10000 --producer-property request.timeout.ms=8000
                             --producer-property delivery.timeout.ms=12000) ;;
    *ConsoleConsumer) bound=(--consumer-property default.api.timeout.ms=10000 --consumer-property request.timeout.ms=8000) ;;
    *) bound=(--command-config "$work/client.properties") ;;
  esac
  timeout "$T" java -Xms64m -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData \
    -Dlog4j2.configurationFile="$here/../kafka/log4j2.properties" -cp "$libs/*" \
    "$cls" --bootstrap-server "$bootstrap" "${bound[@]}" "$@" > "$work/out" 2> "$work/err" < "${TOOL_STDIN:-/dev/null}"
}
# run NAME "DEPS" EXPECTED CLASS ARGS...: runs the tool, compares stdout with EXPECTED
run() {
  local name="$1" deps="$2" want="$3"; shift 3
  local -a d=()
  [[ -n "$deps" ]] && IFS='|' read -r -a d <<< "$deps"
  skip_unless "$name" "${d[@]}" || return 0
  tool "$@"; local rc=$?
  if [[ "$rc" != 0 ]]; then
    fail "$name" "exit $rc: $(grep -v '^\s*at ' "$work/err" | tail -c 500) $(tail -c 200 "$work/out")"
    return 0
  fi
  if [[ -n "${FILTER:-}" ]]; then "$FILTER" < "$work/out" > "$work/out.f" || { fail "$name" "$(cat "$work/out.f")"; return 0; }; mv "$work/out.f" "$work/out"; fi
  printf '%s' "$want" > "$work/want"
  if diff -u "$work/want" "$work/out" > "$work/diff"; then pass "$name"
  else fail "$name" "output differs: $(sed -n '3,16p' "$work/diff")"; fi
}
TOPICS=org.apache.kafka.tools.TopicCommand
CONFIGS=kafka.admin.ConfigCommand

create="kafka-topics --create (retention.ms)"
run "$create" "" "Created topic $topic.
" $TOPICS --create --topic "$topic" --partitions 1 --replication-factor 1 --config retention.ms=86400000

run "kafka-topics --list" "$create" "$topic
" $TOPICS --list --topic 'tools-.*'

run "kafka-configs --describe (topic)" "$create" "Dynamic configs for topic $topic are:
  retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000}
" $CONFIGS --describe --entity-type topics --entity-name "$topic"

produce="kafka-console-producer (keys, headers, gzip)"
printf 'h1:v1,h2:v2\tk1:value one\nh1:x\tk2:value two\nh3:three\tk3:value, three\n' > "$work/in"
TOOL_STDIN="$work/in" run "$produce" "$create" "" \
  org.apache.kafka.tools.ConsoleProducer --topic "$topic" --compression-codec gzip \
  --property parse.key=true --property key.separator=: --property parse.headers=true

name="kafka-console-consumer --partition 0 --offset earliest --max-messages 3"
run "$name" "$produce" "Partition:0	Offset:0	h1:v1,h2:v2	k1	value one
Partition:0	Offset:1	h1:x	k2	value two
Partition:0	Offset:2	h3:three	k3	value, three
" org.apache.kafka.tools.consumer.ConsoleConsumer --topic "$topic" --partition 0 --offset earliest \
  --max-messages 3 --timeout-ms 10000 --property print.key=true --property print.headers=true \
  --property print.offset=true --property print.partition=true
if ok "$name" && ! grep -qx 'Processed a total of 3 messages' "$work/err"; then
  fail "$name (count on stderr)" "$(tail -c 300 "$work/err")"
fi

alter="kafka-configs --alter --add-config/--delete-config"
run "$alter" "$create" "Completed updating config for topic $topic.
" $CONFIGS --alter --entity-type topics --entity-name "$topic" \
  --add-config 'max.message.bytes=2000000,cleanup.policy=[delete,compact]' --delete-config retention.ms

run "kafka-configs --describe (after alter)" "$alter" "Dynamic configs for topic $topic are:
  cleanup.policy=delete,compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete,compact, DEFAULT_CONFIG:log.cleanup.policy=delete}
  max.message.bytes=2000000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:max.message.bytes=2000000, DEFAULT_CONFIG:message.max.bytes=1048588}
" $CONFIGS --describe --entity-type topics --entity-name "$topic"

partitions="kafka-topics --alter --partitions 3"
run "$partitions" "$create" "" $TOPICS --alter --topic "$topic" --partitions 3

# --describe: mask the TopicId (random) and keep only this topic's own settings from Configs:
# (the rest are broker-wide settings, which differ between brokers' server.properties)
describe_filter() {
  python3 -c '
import re, sys
out = []
for line in sys.stdin.read().splitlines():
    m = re.match(r"^(Topic: \S+\tTopicId: )(\S+)(\t.*\tConfigs: )(.*)$", line)
    if m:
        if len(m.group(2)) != 22:
            print("bad TopicId %r" % m.group(2)); sys.exit(1)
        configs = m.group(4)
        own = [c for c in ("cleanup.policy=delete,compact", "max.message.bytes=2000000") if c in configs]
        line = m.group(1) + "<id>" + m.group(3) + ",".join(own) + (" ..." if configs.replace("cleanup.policy=delete,compact", "").replace("max.message.bytes=2000000", "").strip(",") else "")
    out.append(line)
print("\n".join(out))'
}
FILTER=describe_filter run "kafka-topics --describe" "$partitions|$alter" "Topic: $topic	TopicId: <id>	PartitionCount: 3	ReplicationFactor: 1	Configs: cleanup.policy=delete,compact,max.message.bytes=2000000 ...
	Topic: $topic	Partition: 0	Leader: 1	Replicas: 1	Isr: 1	Elr: 	LastKnownElr: 
	Topic: $topic	Partition: 1	Leader: 1	Replicas: 1	Isr: 1	Elr: 	LastKnownElr: 
	Topic: $topic	Partition: 2	Leader: 1	Replicas: 1	Isr: 1	Elr: 	LastKnownElr: 
" $TOPICS --describe --topic "$topic"

run "kafka-get-offsets" "$partitions|$produce" "$topic:0:3
$topic:1:0
$topic:2:0
" org.apache.kafka.tools.GetOffsetShell --topic "$topic"

# kafka-transactions describe-producers (DescribeProducers): the console producer above
# is idempotent (Kafka's default), so the leader has its state: epoch 0, last sequence 2
# (3 records), no transaction. The producer id and timestamp vary and are left out.
producers_filter() {
  awk -F'\t' '{ for (i = 1; i <= NF; i++) gsub(/^ +| +$/, "", $i); print $2, $3, $4, $6 }'
}
FILTER=producers_filter run "kafka-transactions describe-producers" "$produce" "ProducerEpoch LatestCoordinatorEpoch LastSequence CurrentTransactionStartOffset
0 -1 2 None
" org.apache.kafka.tools.TransactionsCommand describe-producers --topic "$topic" --partition 0

# The metadata quorum as Kafka's kafka-metadata-quorum tool sees it (DescribeQuorum):
# a single node leads a quorum of one and has no observers.
quorum_filter() {
  grep -E '^(LeaderId|CurrentVoters|CurrentObservers):' \
    | sed -E 's/:[[:space:]]+/: /; s/^CurrentVoters: \[\{"id": ([0-9]+).*\]$/CurrentVoters: [\1]/'
}
FILTER=quorum_filter run "kafka-metadata-quorum describe --status" "" "LeaderId: 1
CurrentVoters: [1]
CurrentObservers: []
" org.apache.kafka.tools.MetadataQuorumCommand describe --status

delete="kafka-topics --delete"
run "$delete" "$create" "" $TOPICS --delete --topic "$topic"
# an empty list prints one empty line
run "kafka-topics --list (after delete)" "$delete" "
" $TOPICS --list --topic 'tools-.*'

[[ "$failed" == 0 ]]
