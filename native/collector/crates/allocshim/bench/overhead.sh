#!/usr/bin/env bash
# Overhead of the allocation-site shim (see overhead.rs for the workloads; `npm run bench:allocshim`). Not part of the test
# suite. Usage: bench/overhead.sh [small|mixed|strings|threads|large]; BENCH_RUNS=N (default 7, at least 5);
# BENCH_PEERS="name=/path/lib.so,..." adds other shims (e.g. an older build) to every round;
# NUMASCOPE_ALLOC_* variables pass through to the shim.
set -euo pipefail
cd "$(dirname "$0")/../../.."
cargo build -j 2 --release --locked -p numascope-allocshim --lib --bin numascope-allocshim-bench
# The floor peers (floor.c): a pass-through interposer and one with a check per call, built
# when a C compiler is at hand.
if command -v cc >/dev/null; then
  cc -O2 -shared -fPIC -o target/release/libnumascope_allocshim_floor.so crates/allocshim/bench/floor.c
  cc -O2 -shared -fPIC -DCHECK -o target/release/libnumascope_allocshim_check.so crates/allocshim/bench/floor.c
else
  echo "no C compiler (cc): the floor peers are left out" >&2
  rm -f target/release/libnumascope_allocshim_floor.so target/release/libnumascope_allocshim_check.so
fi
exec target/release/numascope-allocshim-bench "$@"
