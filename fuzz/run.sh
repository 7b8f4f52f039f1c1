#!/usr/bin/env bash
# Fuzzes Sluice's decoders with cargo-fuzz (libFuzzer + AddressSanitizer).
#
#   fuzz/run.sh [SECONDS] [TARGET...]   run each target (default: all) for SECONDS (default 30)
#   fuzz/run.sh --regressions [TARGET...]  replay fuzz/regressions/<target>/* once each
#
# Installs cargo-fuzz from crates.io when it is missing. Uses the nightly toolchain when
# rustup has one; otherwise the default (stable) toolchain with RUSTC_BOOTSTRAP=1, which
# lets stable rustc take the -Z flags cargo-fuzz passes (the sanitizer runtimes ship
# with the stable std). Set SLUICE_FUZZ_TOOLCHAIN=<name> to force a toolchain.
#
# New corpus entries go to fuzz/corpus/<target>/ (not committed); the committed seeds in
# fuzz/seeds/<target>/ are read but never written. Crashes land in
# fuzz/artifacts/<target>/, logs in fuzz/logs/<target>.log. Exits non-zero when any
# target crashed (or, with --regressions, when any reproducer still fails).
set -uo pipefail

FUZZ_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$FUZZ_DIR"

ALL_TARGETS=(varint decompress record_batch builder_roundtrip checkpoints log_recovery request_frame consumer_protocol offsets_records txn_records txn_index registry_schemas registry_records connect_records)

mode=run
seconds=30
if [[ "${1:-}" == "--regressions" ]]; then
  mode=regressions
  shift
elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  seconds="$1"
  shift
fi
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${ALL_TARGETS[@]}")

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz from crates.io"
  cargo install cargo-fuzz --locked || exit 1
fi

toolchain="${SLUICE_FUZZ_TOOLCHAIN:-}"
if [[ -z "$toolchain" ]] && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  toolchain=nightly
fi
if [[ -n "$toolchain" ]]; then
  cargo_fuzz=(cargo "+$toolchain" fuzz)
else
  cargo_fuzz=(cargo fuzz)
fi
if [[ "$toolchain" != nightly* ]]; then
  export RUSTC_BOOTSTRAP=1
fi
echo "== toolchain: $(rustc ${toolchain:++$toolchain} --version)${RUSTC_BOOTSTRAP:+ (RUSTC_BOOTSTRAP=1)}"

echo "== building"
"${cargo_fuzz[@]}" build || exit 1

mkdir -p logs
failed=()

if [[ "$mode" == regressions ]]; then
  for target in "${targets[@]}"; do
    shopt -s nullglob
    inputs=(regressions/"$target"/*)
    shopt -u nullglob
    for input in "${inputs[@]}"; do
      [[ "$input" == *.md ]] && continue
      log="logs/$target.$(basename "$input").log"
      if "${cargo_fuzz[@]}" run "$target" "$input" -- -runs=1 >"$log" 2>&1; then
        echo "ok     $target $input"
      else
        echo "FAILS  $target $input: $(grep -m1 -A1 'panicked at' "$log" | tr '\n' ' ')"
        failed+=("$target:$input")
      fi
    done
  done
else
  printf '%-18s %12s %10s  %s\n' target executions exec/s result
  for target in "${targets[@]}"; do
    mkdir -p "corpus/$target" "seeds/$target" "artifacts/$target"
    log="logs/$target.log"
    dict=()
    case "$target" in
      varint) ;;
      checkpoints) dict=(-dict=dict/checkpoints.dict) ;;
      request_frame) dict=(-dict=dict/request.dict) ;;
      *) dict=(-dict=dict/batch.dict) ;;
    esac
    before=$(ls "artifacts/$target" | wc -l)
    # -fork=1 -ignore_crashes=1: one worker process at a time, and a crash is saved
    # without ending the run, so one known bug does not hide the next.
    "${cargo_fuzz[@]}" run "$target" "corpus/$target" "seeds/$target" -- \
      -max_total_time="$seconds" -timeout=20 -fork=1 -ignore_crashes=1 \
      "${dict[@]}" >"$log" 2>&1
    status=$?
    after=$(ls "artifacts/$target" | wc -l)
    last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1)
    runs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
    seconds_run=$(grep -oE 'time: [0-9]+s' <<<"$last" | grep -oE '[0-9]+')
    rate="?"
    [[ -n "$runs" && -n "$seconds_run" && "$seconds_run" -gt 0 ]] && rate=$((runs / seconds_run))
    if [[ $after -gt $before ]]; then
      result="CRASH: $((after - before)) new input(s) in fuzz/artifacts/$target/"
      failed+=("$target")
    elif [[ $status -ne 0 ]]; then
      result="FAILED (exit $status, see fuzz/$log)"
      failed+=("$target")
    else
      result=ok
    fi
    printf '%-18s %12s %10s  %s\n' "$target" "${runs:-?}" "$rate" "$result"
  done
fi

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "== failed: ${failed[*]}"
  exit 1
fi
echo "== all passed"
