#!/usr/bin/env bash
# Kafka 4.1's own cluster tools against a 3-node Sluice cluster (separate processes,
# both roles each): kafka-reassign-partitions (--execute, --verify), kafka-leader-election
# (PREFERRED) and kafka-metadata-quorum (describe --status, --replication), each run as
# its kafka-*.sh script runs it, with the jars of compat/kafka/libs.
#
#   compat/cluster/tools_check.sh [path/to/sluice]
#
# Exit status: 0 when every check passed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
sluice="${1:-${SLUICE_BIN:-$root/target/debug/sluice}}"
libs="$root/compat/kafka/libs"
[ -x "$sluice" ] || { echo "tools: no sluice binary at $sluice" >&2; exit 2; }
[ -d "$libs" ] || "$root/compat/kafka/fetch-kafka.sh" >/dev/null
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

tool() {
  timeout 120 java -Dlog4j2.configurationFile="$root/compat/kafka/log4j2.properties" \
    -cp "$libs/*" "$@" 2>&1
}

passed=0
failed=0
check() {
  local name="$1" output="$2" expected="$3"
  if grep -qE -- "$expected" <<<"$output"; then
    echo "PASS tools: $name"
    passed=$((passed + 1))
  else
    echo "FAIL tools: $name: expected /$expected/ in:"
    sed 's/^/    /' <<<"$output" | tail -20
    failed=$((failed + 1))
  fi
}

# Six free ports: three broker listeners, three controller listeners.
read -r -a ports <<<"$(python3 "$(dirname "$0")/../lib/ports.py" 6)"
voters="1@127.0.0.1:${ports[3]},2@127.0.0.1:${ports[4]},3@127.0.0.1:${ports[5]}"
start_node() {
  local i="$1"
  "$sluice" server --config "$work/node-$i.properties" >>"$work/node-$i.log" 2>&1 &
  pids[i]=$!
  disown "${pids[i]}"
}
for i in 1 2 3; do
  cat >"$work/node-$i.properties" <<EOF
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:${ports[i-1]},CONTROLLER://127.0.0.1:${ports[i+2]}
advertised.listeners=PLAINTEXT://127.0.0.1:${ports[i-1]}
controller.listener.names=CONTROLLER
log.dirs=$work/data-$i
metrics.listener=
broker.heartbeat.interval.ms=200
broker.session.timeout.ms=2000
controller.quorum.election.timeout.ms=1000
replica.lag.time.max.ms=2000
leader.imbalance.check.interval.seconds=3600
EOF
  start_node "$i"
done
bootstrap="127.0.0.1:${ports[0]}"
for _ in $(seq 1 60); do
  status="$("$sluice" cluster status --bootstrap-server "$bootstrap" 2>&1 || true)"
  grep -q "CurrentVoters:.*\[1,2,3\]" <<<"$status" && break
  sleep 0.5
done

out="$(tool org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$bootstrap" describe --status)"
check "kafka-metadata-quorum describe --status (three voters)" "$out" '"id": 1.*"id": 2.*"id": 3'
out="$(tool org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$bootstrap" describe --replication)"
check "kafka-metadata-quorum describe --replication (a leader, two followers)" "$out" 'Leader'
check "kafka-metadata-quorum describe --replication (followers)" "$out" 'Follower'

out="$(tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create --topic moving --replica-assignment 1:2,2:1)"
check "kafka-topics --create --replica-assignment" "$out" 'Created topic moving'
echo '{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[3,2]},{"topic":"moving","partition":1,"replicas":[2,3]}]}' >"$work/move.json"
out="$(tool org.apache.kafka.tools.reassign.ReassignPartitionsCommand --bootstrap-server "$bootstrap" --reassignment-json-file "$work/move.json" --execute)"
check "kafka-reassign-partitions --execute" "$out" 'Successfully started partition reassignments for moving-0,moving-1'
for _ in $(seq 1 40); do
  out="$(tool org.apache.kafka.tools.reassign.ReassignPartitionsCommand --bootstrap-server "$bootstrap" --reassignment-json-file "$work/move.json" --verify)"
  grep -q "moving-0 is completed" <<<"$out" && grep -q "moving-1 is completed" <<<"$out" && break
  sleep 0.5
done
check "kafka-reassign-partitions --verify (both completed)" "$out" 'Reassignment of partition moving-1 is completed'
out="$(tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --describe --topic moving)"
check "kafka-topics --describe after the move" "$out" 'Partition: 0.*Replicas: 3,2'

# Node 3 stops: moving-0's leadership goes to node 2; back, node 3 is in sync again but
# does not lead until a preferred election.
kill -TERM "${pids[3]}"
for _ in $(seq 1 100); do kill -0 "${pids[3]}" 2>/dev/null || break; sleep 0.1; done
start_node 3
for _ in $(seq 1 60); do
  out="$(tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --describe --topic moving)"
  grep -qE 'Partition: 0.*Leader: 2.*Isr: (2,3|3,2)' <<<"$out" && break
  sleep 0.5
done
check "leadership moved off the stopped node, which rejoined the ISR" "$out" 'Partition: 0.*Leader: 2.*Isr: (2,3|3,2)'
out="$(tool org.apache.kafka.tools.LeaderElectionCommand --bootstrap-server "$bootstrap" --election-type PREFERRED --all-topic-partitions)"
check "kafka-leader-election --election-type PREFERRED" "$out" 'Successfully completed leader election \(PREFERRED\) for partitions moving-0'
out="$(tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --describe --topic moving)"
check "the preferred replica leads again" "$out" 'Partition: 0.*Leader: 3'

echo "tools: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
