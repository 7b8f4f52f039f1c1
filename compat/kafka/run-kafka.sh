#!/usr/bin/env bash
# Start or stop a single-node KRaft Apache Kafka (from compat/kafka/libs) whose
# config, data and logs live in WORKDIR. Listeners bind to 127.0.0.1 on free ports.
#
#   bootstrap=$(compat/kafka/run-kafka.sh start "$work")   # returns once Kafka answers
#   trap 'compat/kafka/run-kafka.sh stop "$work"' EXIT     # SIGTERM, waits for clean exit
#
# Python code can use kafka_local.LocalKafka directly (a context manager).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec python3 "$here/kafka_local.py" "$@"
