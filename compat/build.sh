#!/usr/bin/env bash
# The one debug build every compat suite runs against: the whole workspace's binaries and
# examples, resolved with the same features `cargo test --workspace` uses, so after the
# unit and integration tests nothing is compiled a second time (a per-package
# `cargo build -p sluice` resolves features differently and rebuilt the broker, costing
# minutes and gigabytes on CI).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --workspace --bins --examples
