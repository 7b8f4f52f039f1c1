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

ALL_TARGETS=(varint decompress record_batch builder_roundtrip checkpoints log_recovery)

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

echo "== building ${targets[*]}"
for target in "${targets[@]}"; do
  "${cargo_fuzz[@]}" build "$target" || exit 1
done

mkdir -p logs
failed=()

if [[ "$mode" == regressions ]]; then
  for target in "${targets[@]}"; do
    shopt -s nullglob
    inputs=(regressions/"$target"/*)
    shopt -u nullglob
    for input in "${inputs[@]}"; do
      [[ "$input" == *.md ]] && continue
      if "${cargo_fuzz[@]}" run "$target" "$input" -- -runs=1 >"logs/$target.regression.log" 2>&1; then
        echo "ok     $target $input"
      else
        echo "FAILS  $target $input (logs/$target.regression.log)"
        failed+=("$target:$input")
      fi
    done
  done
else
  printf '%-18s %12s %10s  %s\n' target executions exec/s result
  for target in "${targets[@]}"; do
    mkdir -p "corpus/$target" "seeds/$target"
    log="logs/$target.log"
    "${cargo_fuzz[@]}" run "$target" "corpus/$target" "seeds/$target" -- \
      -max_total_time="$seconds" -timeout=20 -print_final_stats=1 >"$log" 2>&1
    status=$?
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    [[ -z "$runs" ]] && runs=$(grep -o '^#[0-9]*' "$log" | tr -d '#' | tail -1)
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    if [[ $status -eq 0 ]]; then
      result=ok
    else
      artifact=$(grep -o 'Test unit written to [^ ]*' "$log" | tail -1 | sed 's/Test unit written to //')
      result="CRASH (exit $status) ${artifact:-see $log}"
      failed+=("$target")
    fi
    printf '%-18s %12s %10s  %s\n' "$target" "${runs:-?}" "${rate:-?}" "$result"
  done
fi

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "== failed: ${failed[*]}"
  exit 1
fi
echo "== all passed"
