#!/bin/sh
# numascope testbed, tiers boot (testbed/host/tiers.sh): 2 cpu nodes + node 2, a cpu-less memory
# node (CXL-like), with HMAT latency and bandwidth. Run by /init as /scenarios.sh (busybox sh).
# Every scenario prints one line `NUMASCOPE-SCENARIO <name> PASS|FAIL <detail>`.

. /expected.env
N=/bin/numascope
T=/bin/numascope-testload
WI=/sys/kernel/mm/mempolicy/weighted_interleave
NODE=/sys/devices/system/node
cd /tmp

pass() { echo "NUMASCOPE-SCENARIO $1 PASS $2"; }
fail() { echo "NUMASCOPE-SCENARIO $1 FAIL $2"; }
now() { cut -d' ' -f1 /proc/uptime; }
dump() { echo "--- $1:"; sed 's/^/    /' "$2" | head -${3:-60}; }
wait_for() {
  i=0
  while n=$(grep -c "$2" "$1" 2>/dev/null); [ "${n:-0}" -lt "$3" ]; do
    i=$((i + 1)); [ $i -gt $(($4 * 10)) ] && return 1; sleep 0.1
  done
}
node_counts() {
  grep "^${2#0x} " /proc/$1/numa_maps | tr ' ' '\n' | grep '^N[0-9]*=' | tr '\n' ' ' | sed 's/ $//'
}
field() { sed -n "s/.*[ ]$2=\([^ ]*\).*/\1/p" "$1" | head -1; }
# every node's weighted-interleave weight and the auto mode file where there is one
wi_state() { for f in $WI/node* $WI/auto $WI/__auto_type; do [ -f "$f" ] && printf '%s=%s ' "${f##*/}" "$(cat "$f")"; done; }

# host channel (ttyS1, testbed/host/channel.mjs; the same helpers as guest/scenarios.sh)
CH=/dev/ttyS1
if [ -c $CH ] && stty -F $CH raw -echo clocal -crtscts 2>/dev/null; then exec 3<>$CH; else CH=""; fi
chan_read() { : > chan.reply; while IFS= read -r l <&3; do l=$(echo "$l" | tr -d '\r'); [ "$l" = END ] && return 0; echo "$l" >> chan.reply; done; return 1; }
chan() { [ -n "$CH" ] || { echo "ERROR no channel" > chan.reply; return 1; }; echo "$1" >&3; chan_read; }
chan_send() { [ -n "$CH" ] || return 1; { echo "PUT $1"; base64 "$2"; echo END; } >&3; chan_read && grep -q "^OK $1 " chan.reply; }

echo "--- tiers guest: kernel $(uname -r); has_cpu=$(cat $NODE/has_cpu) has_memory=$(cat $NODE/has_memory)"
for n in 0 1 2; do
  a=$NODE/node$n/access0/initiators
  [ -d $a ] && echo "--- node$n access0: initiators=$(ls -d $a/node* 2>/dev/null | sed 's#.*/##' | tr '\n' ' ')read_bandwidth=$(cat $a/read_bandwidth) read_latency=$(cat $a/read_latency)"
done
ls -d /sys/devices/virtual/memory_tiering/memory_tier* 2>/dev/null | while read -r t; do echo "--- ${t##*/}: nodes $(cat $t/nodelist)"; done
echo "--- weighted interleave: $(wi_state)"

# ------------------------------------------------------------------ t-probe
t0=$(now)
why=""
$N probe --json > tp.json 2> tp.err || why="$why rc=$?"
$N probe > tp.txt 2>&1
grep -A 20 '^PLACEMENT' tp.txt | sed 's/^/    /'
j=$(tr -d '\n' < tp.json | sed 's/": /":/g; s/, /,/g; s/  *//g')
echo "$j" | grep -q '"id":"cpu-less-nodes","state":"1","value":\[2\]' || why="$why cpu-less-node-2-not-seen"
echo "$j" | grep -q '"id":"weighted-interleave","state":"supported"' || why="$why weighted-interleave-not-supported"
# the kernel puts the slower cpu-less node in a tier of its own (6.12: tier 4 nodes 0-1, tier 56 node 2)
echo "$j" | grep -q '"id":"memory-tiers","state":"2tiers","value":{"[0-9]*":"0-1","[0-9]*":"2"}' || why="$why memory-tiers-not-0-1|2"
bw2=$(cat $NODE/node2/access0/initiators/read_bandwidth 2>/dev/null)
lat2=$(cat $NODE/node2/access0/initiators/read_latency 2>/dev/null)
[ "$bw2" = "$EXPECT_BW_2" ] || why="$why sysfs-node2-bandwidth=$bw2(qemu-gave-$EXPECT_BW_2)"
echo "$j" | grep -q "\"2\":{\"initiators\":\[0\],\"readBandwidthMBps\":$bw2,\"readLatencyNs\":$lat2," || why="$why probe-hmat-node2(sysfs:$bw2MB/s,${lat2}ns)"
grep -q "N2: read $bw2 MB/s $lat2 ns from node \[0\]" tp.txt || why="$why probe-text-hmat"
if [ -z "$why" ]; then
  pass t-probe "cpu-less node 2 seen, in a memory tier of its own; HMAT node2 $bw2 MB/s $lat2 ns from node 0; weighted interleave supported ($t0 -> $(now) s)"
else
  dump "probe" tp.txt 80; dump "probe --json" tp.json 200; dump stderr tp.err
  fail t-probe "$why"
fi

# ------------------------------------------------------------------ t-weighted-apply
# Weights from the guest's HMAT bandwidths (node 0 = DRAM, node 2 = the cpu-less node, each read
# from its nearest initiator), reduced by their gcd and scaled into 1-255.
t0=$(now)
why=""
gcd() { a=$1; b=$2; while [ $b -gt 0 ]; do r=$((a % b)); a=$b; b=$r; done; echo $a; }
bw0=$(cat $NODE/node0/access0/initiators/read_bandwidth 2>/dev/null)
w0=0; w2=0
if [ -n "$bw0" ] && [ -n "$bw2" ] && [ "$bw0" -gt 0 ] && [ "$bw2" -gt 0 ]; then
  g=$(gcd $bw0 $bw2); w0=$((bw0 / g)); w2=$((bw2 / g))
  m=$w0; [ $w2 -gt $m ] && m=$w2
  if [ $m -gt 255 ]; then
    w0=$(((w0 * 255 + m / 2) / m)); w2=$(((w2 * 255 + m / 2) / m))
    [ $w0 -lt 1 ] && w0=1; [ $w2 -lt 1 ] && w2=1
  fi
fi
echo "--- HMAT bandwidth node0 $bw0 MB/s, node2 $bw2 MB/s: weights $w0:$w2"
PAGES=2048
$T --pin --threads 0 --shared-mib 8 --seconds 0.1 --hold 300 > tw.out 2> tw.err &
tw=$!
if [ $w0 -gt 0 ] && wait_for tw.out '^holding' 1 60; then
  pid=$(field tw.out pid)
  addr=$(grep '^shared' tw.out | sed 's/.*addr=\([^ ]*\).*/\1/')
  end=$(printf '0x%x' $((addr + PAGES * 4096)))
  before=$(node_counts $pid $addr)
  wi_before=$(wi_state)
  echo "--- t: buffer $addr-$end before [$before]; weights before: $wi_before"
  cat > tw.plan.json <<PLAN
{"format":"numascope-plan","version":1,
 "source":{"policy":"weighted-interleave","summary":"HMAT bandwidth ratio node0:node2 = $bw0:$bw2"},
 "target":{"pid":$pid,"startTimeTicks":null,"machine":{"nodeIds":[0,1,2],"distances":null}},
 "pageRanges":[{"start":"$addr","end":"$end","action":"weighted-interleave","toNodes":[0,2],"weights":[$w0,$w2],
   "reason":"weights from the HMAT read bandwidths"}],
 "threads":[],
 "systemWeights":{"weights":{"0":$w0,"2":$w2},"reason":"HMAT read bandwidth ratio"}}
PLAN
  # the exact weighted distribution of PAGES pages from the range start: whole cycles, then the
  # first slots of the last one (node 0's come first)
  W=$((w0 + w2)); full=$((PAGES / W)); rem=$((PAGES % W))
  r0=$rem; [ $r0 -gt $w0 ] && r0=$w0
  want0=$((full * w0 + r0)); want2=$((PAGES - want0))
  # dry run: nothing changes
  $N apply tw.plan.json -p $pid --dry-run --set-system-weights > tw.dry.txt 2>&1 || why="$why dry-rc=$?"
  grep -q "status: dry-run" tw.dry.txt || why="$why dry-status"
  grep -q "weighted-interleave to nodes \[0, 2\]" tw.dry.txt || why="$why dry-range"
  grep -q "system weights (apply): before .* would write N0=$w0 N2=$w2" tw.dry.txt || why="$why dry-system-weights"
  [ "$(node_counts $pid $addr)" = "$before" ] || why="$why dry-run-moved-pages"
  [ "$(wi_state)" = "$wi_before" ] || why="$why dry-run-changed-weights"
  # apply, with the system weights
  $N apply tw.plan.json -p $pid --set-system-weights --json -q --rollback-output tw.rb.json > tw.report.json 2> tw.apply.err || why="$why apply-rc=$?"
  after=$(node_counts $pid $addr)
  echo "--- t: numa_maps after apply [$after] (weights $w0:$w2 over $PAGES pages: N0=$want0 N2=$want2); sysfs now: $(wi_state)"
  r=$(tr -d ' \n' < tw.report.json)
  echo "$r" | grep -q '"status":"complete"' || why="$why status"
  echo "$r" | grep -q '"found":{[^}]*},"ok":true' || why="$why weight-check"
  # per-node counts match the weights (within one page per weight cycle; move_pages gives the exact slots)
  n0=$(echo "$after" | tr ' ' '\n' | sed -n 's/^N0=//p'); n2=$(echo "$after" | tr ' ' '\n' | sed -n 's/^N2=//p')
  cycles=$(((PAGES + W - 1) / W))
  d0=$((${n0:-0} - PAGES * w0 / W)); d0=${d0#-}
  [ "${n0:-0}" -eq $want0 ] && [ "${n2:-0}" -eq $want2 ] || why="$why counts=[$after](want N0=$want0 N2=$want2)"
  [ $d0 -le $cycles ] || why="$why node0-off-by-$d0"
  [ "$(cat $WI/node0)" = $w0 ] && [ "$(cat $WI/node2)" = $w2 ] || why="$why sysfs-weights=[$(wi_state)]"
  grep -q '"systemWeights"' tw.rb.json 2>/dev/null || why="$why record-without-systemWeights"
else
  why="$why testload-not-ready-or-no-HMAT-bandwidth(bw0=$bw0,bw2=$bw2)"
fi
if [ -z "$why" ]; then
  pass t-weighted-apply "weights $w0:$w2 from HMAT ($bw0:$bw2 MB/s): dry run changed nothing; numa_maps [$after], weight check ok; sysfs N0=$w0 N2=$w2 ($t0 -> $(now) s)"
else
  dump testload tw.out; dump "dry run" tw.dry.txt; dump "apply report" tw.report.json 150; dump "apply stderr" tw.apply.err
  fail t-weighted-apply "$why"
fi

# ------------------------------------------------------------------ t-weighted-rollback
t0=$(now)
why=""
if [ -s tw.rb.json ]; then
  $N rollback tw.rb.json > tr.txt 2>&1 || why="$why rollback-rc=$?"
  back=$(node_counts $pid $addr)
  wi_after=$(wi_state)
  echo "--- t: after rollback numa_maps [$back]; weights [$wi_after] (before apply [$wi_before])"
  [ "$back" = "$before" ] || why="$why counts=[$back](before [$before])"
  [ "$wi_after" = "$wi_before" ] || why="$why weights=[$wi_after](before [$wi_before])"
  grep -q "status: complete" tr.txt || why="$why status"
  grep -q "system weights (restore)" tr.txt || why="$why no-system-weights-line"
else
  why="no rollback record from t-weighted-apply"
fi
kill $tw 2>/dev/null; wait $tw 2>/dev/null
if [ -z "$why" ]; then
  pass t-weighted-rollback "numa_maps back to [$back], system weights restored exactly [$wi_after] ($t0 -> $(now) s)"
else
  dump rollback tr.txt
  fail t-weighted-rollback "$why"
fi

# ------------------------------------------------------------------ t-run-weighted
# `numascope run --plan --set-system-weights`: scenario i's fixture (crates/cli/tests/fixtures/
# place.c) under the allocation shim; its site b (6 MiB: 1535 whole pages) gets MPOL_WEIGHTED_INTERLEAVE
# over nodes 0 and 2 with the HMAT weights; run writes those weights to sysfs for the run (the kernel
# takes them from there) and restores the previous ones after the program exits.
t0=$(now)
why=""
P=/bin/placeprog
SHIM=/lib/numascope/libnumascope_allocshim.so
maps_at() {
  a=$(printf '%x' $(( (0x$1 + 4095) & ~4095 )))
  grep "^NUMA_MAPS $a " tr.out | head -1
}
if [ ! -x $P ] || [ ! -f $SHIM ]; then
  fail t-run-weighted "the host did not put the shim and its fixture into the guest (no C compiler? shim build failed?)"
elif [ $w0 = 0 ]; then
  fail t-run-weighted "no HMAT weights (see t-weighted-apply)"
else
  wi_before=$(wi_state)
  mkdir -p /tmp/talloc
  LD_PRELOAD=$SHIM NUMASCOPE_ALLOC_DIR=/tmp/talloc NUMASCOPE_ALLOC_SAMPLE_BYTES=0 $P > tr.rec.out 2> tr.rec.err || why="$why recording-run-failed"
  $N debug alloc-frames /tmp/talloc --min-bytes 4194304 > tr.frames 2> tr.frames.err || why="$why alloc-frames-failed"
  fb=$(grep '"size":6291456' tr.frames | head -1 | sed 's/.*"frames":\(\[[^]]*\]\).*/\1/')
  case "$fb" in *'"offset"'*) ;; *) why="$why no-frames-for-site-b";; esac
  cat > tr.plan.json <<PLAN
{"format":"numascope-plan","version":1,"source":{"policy":"weighted-interleave"},
 "target":{"pid":1,"command":["$P"],"machine":{"nodeIds":[0,1,2]}},
 "objects":[{"site":"place.c alloc_b","frames":$fb,"size":{"min":6291456,"max":6291456},
   "policy":"weighted-interleave","nodes":[0,2],"weights":[$w0,$w2]}]}
PLAN
  # without the flag (weights 1 in sysfs) the run is refused, naming both ways out
  NUMASCOPE_ALLOC_SHIM=$SHIM $N run --plan tr.plan.json -- $P > /dev/null 2> tr.refused.err; rc=$?
  [ $rc = 125 ] && grep -q -- "--set-system-weights" tr.refused.err || why="$why no-refusal(rc=$rc)"
  NUMASCOPE_ALLOC_SHIM=$SHIM $N run --plan tr.plan.json --set-system-weights -o tr.report.json -- $P > tr.out 2> tr.err
  rc=$?
  [ $rc = 0 ] || why="$why run-rc=$rc"
  b=$(sed -n 's/^ADDR b \([0-9a-f]*\) .*/\1/p' tr.out)
  lb=$(maps_at "${b:-0}")
  echo "--- t: site b: $lb"
  echo "$lb" | grep -q ' weighted interleave:0,2 ' || why="$why b-not-weighted-0,2"
  n0=$(echo "$lb" | tr ' ' '\n' | sed -n 's/^N0=//p'); n2=$(echo "$lb" | tr ' ' '\n' | sed -n 's/^N2=//p')
  # the kernel's weighted round robin: per-node counts within one page per weight cycle of the
  # weights' share (its slot origin is the mapping's page offset, not ours)
  W=$((w0 + w2)); cycles=$(((1535 + W - 1) / W)); d0=$((${n0:-0} - 1535 * w0 / W)); d0=${d0#-}
  { [ "$(( ${n0:-0} + ${n2:-0} ))" = 1535 ] && [ $d0 -le $cycles ] && [ $d0 -le $w0 ]; } || why="$why b-split(N0=${n0:-0},N2=${n2:-0};weights $w0:$w2)"
  grep -q "wrote the system-wide weights N0=$w0 N2=$w2 for the run" tr.err || why="$why no-wrote-line"
  grep -q "system-wide weights were restored to" tr.err || why="$why no-restored-line"
  grep -q "numactl --weighted-interleave=0,2 -- /bin/placeprog  (with the kernel's system-wide weights" tr.err || why="$why no-numactl-line"
  wi_after=$(wi_state)
  [ "$wi_after" = "$wi_before" ] || why="$why weights-not-restored=[$wi_after](before [$wi_before])"
  if [ -z "$why" ]; then
    pass t-run-weighted "site b under MPOL_WEIGHTED_INTERLEAVE 0,2 with the HMAT weights $w0:$w2: N0=$n0 N2=$n2; sysfs weights written for the run and restored [$wi_after] ($t0 -> $(now) s)"
  else
    dump "run stderr" tr.err 40; dump "refused" tr.refused.err 10; dump "frames" tr.frames 10; dump "plan" tr.plan.json 10
    fail t-run-weighted "$why"
  fi
fi

# ------------------------------------------------------------------ t-engine-weights
# Issue 17's loop on the tiers guest: record the testload streaming over a buffer first-touched on
# node 0, with automatic NUMA balancing on for the recording (`record --numa-balancing on`) so that
# the kernel's hinting faults are its access samples (no PMU under TCG); the buffer is bound to node
# 0 with MPOL_F_NUMA_BALANCING, so the balancer samples it without moving it. The host's engine
# (channel WEIGHTS) plans weighted interleave with --system-weights from the recorded machine (its
# HMAT figures and tiers) and, as a cross-check, recommends weights from this guest's /sys loaded by
# machineFromSysfs; apply moves the pages to the plan's weights and writes the system weights,
# rollback restores both.
t0=$(now)
why=""
wi_before=$(wi_state)
NB=/sys/kernel/debug/sched/numa_balancing
[ -d /sys/kernel/debug/sched ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
# the hinting faults come from a tracepoint
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
# scan every 100-300 ms (the defaults, 1 s after a 1 s delay, would give a 3 s recording one pass)
if [ -d $NB ]; then echo 100 > $NB/scan_delay_ms; echo 100 > $NB/scan_period_min_ms; echo 300 > $NB/scan_period_max_ms; fi
nb0=$(cat /proc/sys/kernel/numa_balancing)
# one worker besides the main thread, both on node 0: the kernel does not mark the pages of a
# single-threaded process that already sit on the node it runs on (change_pte_range), so a lone
# thread on node 0 would take no hinting fault on its node-0 buffer
$T --pin --threads 1 --mib 1 --shared-mib 8 --seconds 4 --start-delay 1 --hold 300 --bind-shared-hinting > te.out 2> te.err &
te=$!
if [ -z "$CH" ]; then
  why="no host channel on ttyS1"
elif wait_for te.out '^ready' 1 30; then
  pid=$(field te.out pid)
  $N record -q --numa-balancing on -p $pid -d 3 -o te.numascope > te.rec.out 2> te.rec.err || why="$why record-rc=$?"
  nb1=$(cat /proc/sys/kernel/numa_balancing)
  [ "$nb1" = "$nb0" ] || why="$why numa_balancing-not-restored($nb0->$nb1)"
  wait_for te.out '^holding' 1 60 || why="$why testload-not-holding"
  addr=$(grep '^shared' te.out | sed 's/.*addr=\([^ ]*\).*/\1/')
  PAGES=2048
  before=$(node_counts $pid $addr)
  # this guest's /sys as the engine's sysfs loader reads it
  for f in $NODE/node[0-9]*/cpulist $NODE/node[0-9]*/meminfo $NODE/node[0-9]*/distance \
      $NODE/node[0-9]*/access0/initiators/read_* $NODE/node[0-9]*/access0/initiators/write_* \
      /sys/devices/virtual/memory_tiering/memory_tier*/nodelist; do
    [ -f "$f" ] && { echo "F ${f#/sys/}"; cat "$f"; }
  done > te.sys
  if chan_send te.numascope te.numascope && chan_send te.sys te.sys && chan "WEIGHTS te.numascope te.sys weighted-interleave:0,2 bandwidth-bound"; then
    grep -v '^B ' chan.reply | sed 's/^/    engine: /'
    grep '^B ' chan.reply | cut -c3- | base64 -d > te.plan.json
    sysw=$(sed -n 's/^WEIGHTS system=\([^ ]*\).*/\1/p' chan.reply)
    ranges=$(sed -n 's/^WEIGHTS .* ranges=\([^ ]*\).*/\1/p' chan.reply)
    recw=$(sed -n 's/^WEIGHTS .* recorded=\([^ ]*\).*/\1/p' chan.reply)
    sysfsw=$(sed -n 's/^WEIGHTS .* sysfs=\([^ ]*\).*/\1/p' chan.reply)
    rec=$(grep '^RECORDED ' chan.reply)
    # the recorded machine carries the guest's HMAT figures (MB/s / 1000) and tiers
    bw0=$(awk -v v=$EXPECT_BW_0 'BEGIN { print v / 1000 }'); bw2=$(awk -v v=$EXPECT_BW_2 'BEGIN { print v / 1000 }')
    echo "$rec" | grep -q "cpuless=2 tiers=0,0,1 bw=$bw0,$bw0,$bw2 hmat=documented bwprov=documented" || why="$why recorded-machine=[$rec]"
    # the plan's weights = the engine's recommendation on the recorded model = on this /sys
    [ -n "$sysw" ] && [ "$sysw" != none ] || why="$why no-system-weights"
    [ "$sysw" = "$recw" ] || why="$why plan=$sysw-vs-recorded=$recw"
    [ "$sysw" = "$sysfsw" ] || why="$why plan=$sysw-vs-sysfs-model=$sysfsw"
    [ "$ranges" = "$(echo "$sysw" | sed 's/=/:/g; s#,#/#g')" ] || why="$why range-weights=[$ranges](system $sysw)"
    # The access samples are hinting faults (not the placement-only estimate), which give no
    # rates: the testload streams, so the engine is told so (--access-rates bandwidth-bound: each
    # thread keeps its core's outstanding-miss limit in flight), and weights are asked for over
    # node 0 and its CXL node 2 (weighted-interleave:0,2, as numactl --weighted-interleave=0,2):
    # the DRAM node's HMAT bandwidth cannot carry that, so the recommendation is a DRAM:CXL ratio:
    # node 2 gets a weight, below node 0's (toward the faster node). Node 1 is left alone.
    grep -q '^SUMMARY ESTIMATED' chan.reply && why="$why engine-used-the-placement-estimate"
    grep -q '^SUMMARY ASSUMED bandwidth-bound' chan.reply || why="$why plan-summary-does-not-say-bandwidth-bound"
    grep -q '^SOURCE hinting-faults' chan.reply || why="$why access-source=[$(sed -n 's/^SOURCE //p' chan.reply)]"
    w2=$(echo "$sysw" | tr ',' '\n' | sed -n 's/^N2=//p')
    [ "${w2:-0}" -ge 1 ] || why="$why no-weight-on-the-cxl-node($sysw)"
    for kv in $(echo "$sysw" | tr ',' ' '); do
      k=${kv%%=*}; v=${kv#*=}
      [ "$k" = N2 ] || [ "${w2:-0}" -lt "$v" ] || why="$why not-toward-fast($sysw)"
    done
    # apply with the system weights
    $N apply te.plan.json -p $pid --set-system-weights --json -q --rollback-output te.rb.json > te.report.json 2> te.apply.err || why="$why apply-rc=$?"
    after=$(node_counts $pid $addr)
    r=$(tr -d ' \n' < te.report.json)
    echo "$r" | grep -q '"status":"complete"' || why="$why status"
    nwc=$(echo "$r" | grep -o '"weightCheck"' | wc -l); nok=$(echo "$r" | grep -o '"found":{[^}]*},"ok":true' | wc -l)
    [ "$nwc" -gt 0 ] && [ "$nwc" = "$nok" ] || why="$why weight-checks=$nok-ok-of-$nwc"
    echo "$r" | grep -q '"matched":true' || why="$why system-weights-not-matched"
    # numa_maps of the buffer: each node within one page per weight cycle of its weighted share
    W=0; for kv in $(echo "$sysw" | tr ',' ' '); do W=$((W + ${kv#*=})); done
    cycles=$(((PAGES + W - 1) / W))
    for kv in $(echo "$sysw" | tr ',' ' '); do
      k=${kv%%=*}; v=${kv#*=}
      [ "$(cat $WI/node${k#N} 2>/dev/null)" = "$v" ] || why="$why sysfs-$k=$(cat $WI/node${k#N} 2>/dev/null)(plan $v)"
      got=$(echo "$after" | tr ' ' '\n' | sed -n "s/^$k=//p"); d=$((${got:-0} - PAGES * v / W)); d=${d#-}
      [ $d -le $cycles ] || why="$why buffer-$k=${got:-0}(share $((PAGES * v / W)),cycles $cycles)"
    done
    # node 1 was not in the set: its system weight is as before
    n1b=$(echo "$wi_before" | tr ' ' '\n' | sed -n 's/^node1=//p')
    [ "$(cat $WI/node1 2>/dev/null)" = "$n1b" ] || why="$why node1-weight-changed($n1b->$(cat $WI/node1 2>/dev/null))"
    echo "--- t: engine weights $sysw: buffer before [$before] after [$after]; $nok of $nwc weight checks ok; sysfs $(wi_state)"
    # rollback: pages and system weights exactly back
    $N rollback te.rb.json > te.rb.txt 2>&1 || why="$why rollback-rc=$?"
    back=$(node_counts $pid $addr); wi_after=$(wi_state)
    grep -q "status: complete" te.rb.txt || why="$why rollback-status"
    [ "$back" = "$before" ] || why="$why rollback-counts=[$back](before [$before])"
    [ "$wi_after" = "$wi_before" ] || why="$why rollback-weights=[$wi_after](before [$wi_before])"
  else
    why="$why channel: $(head -c 300 chan.reply)"
  fi
else
  why="$why testload-not-ready"
fi
kill $te 2>/dev/null; wait $te 2>/dev/null
echo "$nb0" > /proc/sys/kernel/numa_balancing 2>/dev/null
if [ -z "$why" ]; then
  pass t-engine-weights "engine weights $sysw (node 2: ${w2:-0}; access samples: $(sed -n 's/^SOURCE //p' chan.reply)) from the recorded machine's HMAT figures and tiers (= the recommendation on the guest's /sys); apply: buffer [$after], $nok/$nwc weight checks ok, sysfs written; rollback: [$back], weights [$wi_after] ($t0 -> $(now) s)"
else
  dump testload te.out; dump "record stderr" te.rec.err; dump "channel" chan.reply 30; dump "apply report" te.report.json 120; dump "apply stderr" te.apply.err; dump rollback te.rb.txt
  fail t-engine-weights "$why"
fi

# ------------------------------------------------------------------ t-bench
# issue 15: `numascope bench --quick` measures the cpu-less node as a memory node from every cpu
# node (small arrays: node 2 has 256 MiB, and TCG is slow).
t0=$(now)
why=""
if [ "${T_BENCH:-1}" = 1 ]; then
  $N bench --quick --no-save --size 8388608 --chase-size 8388608 --max-seconds 120 > tb.txt 2> tb.err || why="$why rc=$?"
  sed 's/^/    /' tb.txt
  # the triad block: one row per cpu node, a value (not "-") in the mem 2 column
  rows=$(awk '/^triad GB\/s/ { t = 1; next } /^copy GB\/s/ { t = 0 } t && /^cpu node/ && $6 != "-" { n++ } END { print n + 0 }' tb.txt)
  [ "$rows" = 2 ] || why="$why triad-rows-with-node2=$rows(expected 2)"
  grep -q "loaded latency, memory node 2:" tb.txt || why="$why no-loaded-latency-for-node2"
  if [ -z "$why" ]; then
    pass t-bench "node 2 (cpu-less) measured as a memory node from cpu nodes 0 and 1 ($t0 -> $(now) s)"
  else
    dump "bench stderr" tb.err 40
    fail t-bench "$why"
  fi
else
  pass t-bench "skipped (TESTBED_TIERS_BENCH=0)"
fi
chan BYE >/dev/null 2>&1
