#!/usr/bin/env bash
# Overhead of the allocation-site shim (see overhead.rs for the workloads; `npm run bench:allocshim`). Not part of the test
# suite. Usage: bench/overhead.sh [small|mixed|large]; BENCH_RUNS=N (default 7, at least 5);
# NUMASCOPE_ALLOC_* variables pass through to the shim.
set -euo pipefail
cd "$(dirname "$0")/../../.."
cargo build -j 2 --release --locked -p numascope-allocshim --lib --bin numascope-allocshim-bench
exec target/release/numascope-allocshim-bench "$@"
