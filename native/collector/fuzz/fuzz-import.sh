#!/usr/bin/env bash
# On-demand mutation fuzzing of `numascope import` (docs/robustness.md, "perf.data import
# (Rust)"): a release build of the fuzz harness in crates/cli/tests/import_harness, run on
# COUNT mutated perf.data files from SEED.
#
#   native/collector/fuzz/fuzz-import.sh [COUNT [SEED]]      (default 10000 inputs, seed 1)
#
# Needs the real perf.data files in shared/data/perfdata (NUMASCOPE_SHARED=path/to/shared if
# they are not at ../shared from the repository root). Prints the outcome counts, the peak
# RSS and the slowest input; exits non-zero if any input panicked, aborted, died of a
# signal, hung, went over 1 GiB, left files behind or gave an untyped error. Failing
# inputs are saved in native/collector/target/tmp/import-fuzz-failures/.
# NUMASCOPE_FUZZ_LOG=FILE writes one line per input.
set -euo pipefail
cd "$(dirname "$0")/.."
export NUMASCOPE_FUZZ_COUNT="${1:-10000}"
export NUMASCOPE_FUZZ_SEED="${2:-1}"
export RUST_BACKTRACE=0
exec cargo test --release -p numascope-cli --test import_fuzz -- --ignored import_fuzz_long --nocapture
