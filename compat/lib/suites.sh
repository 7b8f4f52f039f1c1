# Shared by compat/clients/run.sh and compat/groups/run.sh (sourced): one broker, check
# suites run at once against it, and their tally.
#
# The caller sets: name (the prefix of summary lines), work (a scratch dir), suites,
# serial (1: one suite at a time), keep, broker (sluice|kafka), broker_log, what,
# started (date +%s%N), here (the suites' dir), and defines suite_cmd (sets cmd=(...)
# for suite $1). A Kafka broker keeps its pid in $work/kafka/kafka.pid. For Sluice: sluice (the binary), port, cport,
# optionally sluice_settings=(key=value ...). Suites print "PASS <suite>: <check>" or
# "FAIL <suite>: <check>: <reason>" lines.

broker_pid=""
suite_pids=()
broker_died=0
passed=0
failed=0

# Two free ports on 127.0.0.1: "port cport".
free_ports() {
  python3 "$(dirname "${BASH_SOURCE[0]}")/ports.py" 2
}

# Starts Sluice on $port/$cport with log dir $work/data; returns 1 if it does not listen.
start_sluice() {
  local from=0 setting
  local sets=()
  for setting in "${sluice_settings[@]}"; do sets+=(--set "$setting"); done
  [[ -f "$broker_log" ]] && from=$(wc -l < "$broker_log")
  "$sluice" server \
    --set "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport" \
    --set "advertised.listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport" \
    --set "controller.quorum.bootstrap.servers=127.0.0.1:$cport" \
    --set "log.dirs=$work/data" \
    --set "group.initial.rebalance.delay.ms=0" \
    "${sets[@]}" \
    >> "$work/sluice.out" 2>> "$broker_log" < /dev/null &
  broker_pid=$!
  for _ in $(seq 300); do
    tail -n +$((from + 1)) "$broker_log" | grep -q "^sluice: listening on PLAINTEXT://127.0.0.1:$port" && return 0
    kill -0 "$broker_pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "run.sh: sluice did not start listening on 127.0.0.1:$port:" >&2
  # Its log since this start, without the backtrace's frames (the error is what counts).
  tail -n +$((from + 1)) "$broker_log" | grep -Ev '^ +([0-9]+: | *at )' | tail -30 >&2
  return 1
}

# SIGTERM, SIGKILL after 20 s; returns Sluice's exit code and sets stop_ms (how long the
# stop took).
stop_sluice() {
  local rc=0 t0
  stop_ms=0
  [[ -n "$broker_pid" ]] || return 0
  t0=$(date +%s%N)
  kill -TERM "$broker_pid" 2>/dev/null
  for _ in $(seq 200); do kill -0 "$broker_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$broker_pid" 2>/dev/null
  wait "$broker_pid" 2>/dev/null; rc=$?
  stop_ms=$((($(date +%s%N) - t0) / 1000000))
  broker_pid=""
  return $rc
}

# Whether the broker still runs.
broker_alive() {
  if [[ "$broker" == kafka ]]; then kill -0 "$(cat "$work/kafka/kafka.pid" 2>/dev/null)" 2>/dev/null
  else [[ -n "$broker_pid" ]] && kill -0 "$broker_pid" 2>/dev/null; fi
}

# Stops suites still running (cleanup and a dead broker).
stop_suites() {
  local s
  for s in $suites; do
    [[ -f "$work/$s.pid" && ! -f "$work/$s.rc" ]] && kill -TERM "$(cat "$work/$s.pid")" 2>/dev/null
  done
  for p in "${suite_pids[@]}"; do wait "$p" 2>/dev/null; done
  suite_pids=()
}

run_suite() {
  local s="$1" cmd
  suite_cmd "$s"
  # timeout(1) passes a SIGTERM on to the check, which stop_suites relies on
  (cd "$here" && exec "${cmd[@]}") > "$work/$s.out" 2> "$work/$s.err" < /dev/null &
  echo $! > "$work/$s.pid"
  wait $!
  echo $? > "$work/$s.rc"
}

# Runs every suite (at once unless $serial), printing a serial suite's lines as it ends
# (except those in $deferred_output); stops them all if the broker dies (broker_died=1).
run_suites() {
  local s left
  for s in $suites; do
    if [[ "$serial" == 1 ]]; then
      run_suite "$s"
      [[ " ${deferred_output:-} " == *" $s "* ]] || cat "$work/$s.out"
    else
      run_suite "$s" &
      suite_pids+=($!)
    fi
  done
  while :; do
    left=0
    for s in $suites; do [[ -f "$work/$s.rc" ]] || left=1; done
    [[ "$left" == 0 ]] && break
    if ! broker_alive; then
      broker_died=1
      stop_suites
      break
    fi
    sleep 0.2
  done
  for p in "${suite_pids[@]}"; do wait "$p"; done
  suite_pids=()
}

# Adds one suite's PASS/FAIL lines ($2: its output file, default $work/$1.out; $3: extra
# passes) to the tally, and a FAIL of its own when the script died or its exit code
# disagrees with its lines.
tally_suite() {
  local s="$1" out="${2:-$work/$1.out}" extra="${3:-0}" rc p f why
  rc="$(cat "$work/$s.rc" 2>/dev/null || echo '?')"
  p=$(($(grep -c '^PASS ' "$out") + extra))
  f=$(grep -c '^FAIL ' "$out")
  if [[ "$rc" != 0 && "$f" == 0 ]] || [[ "$rc" == 0 && "$f" != 0 ]] || [[ "$p$f" == 00 ]]; then
    why="exit $rc"; [[ "$rc" == 124 ]] && why="timed out"; [[ "$rc" == 143 ]] && why="stopped"
    echo "FAIL $s: (suite) $why: $(grep -v '^\s*at ' "$work/$s.err" | tail -c 400 | tr '\n' ' ')"
    f=$((f + 1))
  fi
  passed=$((passed + p)); failed=$((failed + f))
}

# The broker's own verdict, the hints on failure, the time and the summary; returns
# non-zero when anything failed.
finish_suites() {
  if [[ "$broker" == sluice ]]; then
    if broker_alive; then
      passed=$((passed + 1)); echo "PASS broker: sluice still running after all suites"
    else
      wait "$broker_pid" 2>/dev/null
      failed=$((failed + 1))
      echo "FAIL broker: sluice exited during the run (the suites were stopped): $(tail -c 600 "$broker_log" | tr '\n' ' ')"
      broker_pid=""
    fi
  elif [[ "$broker_died" == 1 ]]; then
    failed=$((failed + 1)); echo "FAIL broker: Kafka exited during the run (the suites were stopped)"
  fi
  if [[ "$failed" != 0 ]]; then
    if [[ "$broker" == sluice ]] && grep -qv '^sluice: listening on' "$broker_log"; then
      echo "$name: the broker's log (last lines):"
      grep -v '^sluice: listening on' "$broker_log" | tail -n 15 | sed 's/^/  /'
    fi
    if [[ "$keep" == 1 ]]; then
      echo "$name: each suite's stderr is in $work/SUITE.err, the broker's log in $broker_log"
    else
      echo "$name: rerun with --keep to keep each suite's stderr and the broker's log"
    fi
  fi
  local elapsed_ms=$((($(date +%s%N) - started) / 1000000))
  printf '%s: ran against %s in %d.%ds\n' "$name" "$what" $((elapsed_ms / 1000)) $((elapsed_ms % 1000 / 100))
  echo "$name: $passed passed, $failed failed"
  [[ "$failed" == 0 ]]
}
