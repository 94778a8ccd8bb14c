#!/usr/bin/env bash
# Collector overhead: the same workload run plain and under `numascope record` (default rates),
# alternating, REPEAT times each; prints the median wall-time ratio, faults/s and the recorder's
# own peak memory (VmHWM, which `numascope record` prints in its summary; GNU time's %M would
# report the workload's, a waited-for child). The recorded run's workload time is the trace's
# capture.durationUs (the launched command's exec to its exit); plain is GNU time's wall time.
#
# Workload: numascope-testload, fixed work: THREADS threads each first-touch MIB MiB page by page
# (+ SHARED MiB by the main thread), then exit (--seconds 0: no time-boxed read phase, so the
# wall time measures work). Every 4 KiB page is one page fault, so this is the worst case for
# the page-fault sampler (period 1): its cost is per fault.
#
# PASSES=P adds fixed compute after the first touches: every thread reads its buffer P times
# (one byte per cache line), the typical "allocate, then work on it" program; PASSES=0 (the
# default) is the pure first-touch loop.
#
# The placement scan (every resident page, at most 2 % of the wall time by design) is on by
# default; EXTRA="--scan-max-pages 0" turns it off for a comparison. The script also prints what
# the scans took by the trace's own account (capture.pageScan.totalScanMs over the capture).
#
# Usage: bench/overhead.sh [REPEAT]   env: THREADS=2 MIB=256 SHARED=64 PASSES=0 EXTRA="--damon"
#        NS=path/to/numascope TL=path/to/numascope-testload: use these binaries, build nothing
#        COMPARE="--scan-max-pages 0": a third arm in the same loop, recorded with these options
#        instead of EXTRA; prints its median capture, the ratio of the two recorded arms and the
#        difference per sample in ns (COMPARE="--call-stack-depth 0": what the call stacks cost)
set -euo pipefail
cd "$(dirname "$0")/.."
REPEAT=${1:-5}
THREADS=${THREADS:-2}
MIB=${MIB:-256}
SHARED=${SHARED:-64}
EXTRA=${EXTRA:-}
COMPARE=${COMPARE:-}
PASSES=${PASSES:-0}
if [[ -z "${NS:-}" || -z "${TL:-}" ]]; then
  cargo build -j2 --release -q -p numascope-cli -p numascope-testload
  NS=target/release/numascope
  TL=target/release/numascope-testload
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
WL=("$TL" --threads "$THREADS" --mib "$MIB" --shared-mib "$SHARED" --seconds 0 --passes "$PASSES")
pages=$(( (THREADS * MIB + SHARED) * 256 ))
plain=() rec=() hwm=() samples=() cap=() scanms=() scans=() alt=()
"${WL[@]}" >/dev/null # warm-up (page cache, binary)
for i in $(seq "$REPEAT"); do
  /usr/bin/time -f '%e' -o "$TMP/p" "${WL[@]}" >/dev/null
  plain+=("$(cat "$TMP/p")")
  # shellcheck disable=SC2086
  /usr/bin/time -f '%e' -o "$TMP/r" "$NS" record $EXTRA -o "$TMP/run.numascope" -- "${WL[@]}" >/dev/null 2>"$TMP/log"
  read -r e <"$TMP/r"
  m=$(sed -n 's/.*collector peak memory \([0-9.]*\) \(KiB\|MiB\|GiB\).*/\1 \2/p' "$TMP/log" |
      awk '{f = $2 == "GiB" ? 1048576 : $2 == "MiB" ? 1024 : 1; printf "%d", $1 * f}')
  rec+=("$e"); hwm+=("$m")
  read -r s d sm sn < <(unzip -p "$TMP/run.numascope" manifest.json | python3 -c 'import json,sys; c=json.load(sys.stdin)["capture"]; p=c.get("pageScan") or {}; print(c["sampleCount"], c["durationUs"]/1e6, p.get("totalScanMs", 0), p.get("scans", 0))')
  samples+=("$s"); cap+=("$d"); scanms+=("$sm"); scans+=("$sn")
  if [[ -n "$COMPARE" ]]; then
    # shellcheck disable=SC2086
    "$NS" record -q $COMPARE -o "$TMP/alt.numascope" -- "${WL[@]}" >/dev/null 2>&1
    alt+=("$(unzip -p "$TMP/alt.numascope" manifest.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["capture"]["durationUs"]/1e6)')")
  fi
done
python3 - "$pages" "$PASSES" "${plain[*]}" "${rec[*]}" "${hwm[*]}" "${samples[*]}" "${cap[*]}" "${scanms[*]}" "${scans[*]}" "${alt[*]:-}" "$COMPARE" <<'PY'
import statistics as st, sys
pages = int(sys.argv[1])
passes = int(sys.argv[2])
plain, whole, hwm, samples, rec, scanms, scans = ([float(x) for x in a.split()] for a in sys.argv[3:10])
mp, mr = st.median(plain), st.median(rec)
print(f"workload: {pages} first-touch pages (4 KiB) per run, then {passes} read passes over each thread's memory, {len(plain)} runs each")
print(f"plain    wall s: {' '.join(f'{x:.3f}' for x in plain)}  median {mp:.3f}  ({pages/mp:,.0f} faults/s)")
print(f"numascope record end to end (startup + capture + trace write) s: {' '.join(f'{x:.3f}' for x in whole)}")
print(f"recorded (capture.durationUs: exec to exit) s: {' '.join(f'{x:.3f}' for x in rec)}  median {mr:.3f}  ({pages/mr:,.0f} faults/s)")
print(f"slowdown (median recorded / median plain): {mr/mp:.3f}  ({(mr/mp-1)*100:+.1f} %)")
print(f"samples per run: median {st.median(samples):,.0f}")
print(f"recorder peak memory (VmHWM): median {st.median(hwm)/1024:.1f} MiB, max {max(hwm)/1024:.1f} MiB")
share = [ms / 1e3 / r * 100 for ms, r in zip(scanms, rec)]
print(f"placement scans per run: median {st.median(scans):.0f}, their time {st.median(scanms):.1f} ms per run (median), {st.median(share):.2f} % of the capture (median; max {max(share):.2f} %)")
alt = [float(x) for x in sys.argv[10].split()]
if alt:
    ma = st.median(alt)
    print(f"recorded with {sys.argv[11]} (same loop) s: {' '.join(f'{x:.3f}' for x in alt)}  median {ma:.3f}  slowdown {ma/mp:.3f} ({(ma/mp-1)*100:+.1f} %)")
    print(f"default / compared arm (median capture): {mr/ma:.3f}  ({(mr/ma-1)*100:+.1f} %)")
    # Per sample of the default arm: what the compared options save or cost (e.g. the call
    # stacks, COMPARE="--call-stack-depth 0"; with EXTRA="--fault-period 1" every fault is one).
    ms_ = st.median(samples)
    if ms_ > 0:
        print(f"difference per sample of the default arm: {(mr - ma) / ms_ * 1e9:,.0f} ns ({ms_:,.0f} samples; paired medians, noise included)")
PY
