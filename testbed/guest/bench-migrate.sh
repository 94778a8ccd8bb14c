# Scenario g-bench-migrate, sourced by scenarios.sh (uses its helpers: pass, fail, now, dump,
# wait_for, node_counts, field). busybox sh.
#
# The same 256 MiB (65536 pages, first-touched on node 0 by a testload that holds essentially
# nothing else) moved to node 1, again and again in one guest run, by three contenders:
#   mp     `migratepages PID 0 1` (numactl: the migrate_pages(2) system call, every page of the
#          process on node 0, so also its ~300 pages of stack, binary and heap);
#   apply  `numascope apply` of a plan moving the buffer's range to node 1 (default --jobs: one
#          move_pages thread per cpu);
#   apply1 the same with --jobs 1.
# $BENCH_ROUNDS rounds (default 5); before every timed move everything is moved back to node 0
# (`migratepages PID 1,2,3 0`, not timed), so each contender starts from the same placement; the
# order alternates (odd rounds mp, apply, apply1; even rounds apply1, apply, mp) so that neither
# always runs first. Each move is verified in numa_maps (buffer N1=65536) and each apply must
# report `complete`. Prints per-round lines, then
#   BENCH rounds=… migratepages_s=MEDIAN apply_s=MEDIAN ratio=… … (spreads: min-max)
#   BENCH-PHASES jobs=… total_ms=MEDIAN … (apply's --timings, medians over the rounds)
# With /bin/numascope-base in the guest (the host's TESTBED_BENCH_BASE_BIN: another build, e.g.
# the one before a change), two more contenders join the alternation: base and base1 (its apply
# with default --jobs and --jobs 1), so that before and after are compared in the same run.
# $BENCH_EXTRA adds contenders: `name:ARGS;name:ARGS` (numascope apply with ARGS, e.g.
# `b64k:--jobs 1 --batch 65536`), timed in every round after the three above, medians printed as
# `BENCH-EXTRA name=… s`. Fixed costs are printed once: `numascope --version` and a
# `migratepages PID 3 2` that finds nothing to move (process start, system call overhead).
# With BENCH_INTERLEAVE=1 (the host's TESTBED_BENCH_INTERLEAVE=1) every round also times an
# interleave: a plan dealing the buffer's first 16384 pages round-robin over nodes 1, 2 and 3
# (every page moves, the target changes from page to page), `numascope apply --jobs 1` (il1) and,
# with a base build, the base's (base_il1); everything back on node 0 before each; lines
# `BENCH-INTERLEAVE name=… median_s=…`. migratepages cannot interleave: no ratio.
# The ratios (median migratepages time / median apply time; ≥ 1: apply at least as fast) are
# reported figures, not a pass/fail gate: the host is shared and emulated.

ROUNDS=${BENCH_ROUNDS:-5}
NB=/bin/numascope-base
BUF_PAGES=65536
# sum_node PID NODE: pages of the whole process on NODE (all numa_maps lines)
sum_node() { tr ' ' '\n' < /proc/$1/numa_maps | sed -n "s/^N$2=//p" | awk '{ s += $1 } END { print s + 0 }'; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
# stats NUMBERS…: "median min max"
stats() {
  echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 }
    END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f %.3f %.3f", m, v[1], v[NR] }'
}
ratio() { awk -v m="$1" -v a="$2" 'BEGIN { if (a > 0) printf "%.2f", m / a; else print "inf" }'; }
# phase_medians FILE: medians of every key=value of the `numascope: timings` lines in FILE
phase_medians() {
  grep '^numascope: timings ' "$1" | sed 's/^numascope: timings //' | tr ' ' '\n' | awk -F= '
    NF == 2 { n[$1]++; v[$1, n[$1]] = $2; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
    END {
      for (i = 1; i <= k; i++) {
        key = order[i]; c = n[key]
        for (a = 1; a <= c; a++) s[a] = v[key, a] + 0
        for (a = 1; a <= c; a++) for (b = a + 1; b <= c; b++) if (s[b] < s[a]) { t = s[a]; s[a] = s[b]; s[b] = t }
        m = (c % 2) ? s[(c + 1) / 2] : (s[c / 2] + s[c / 2 + 1]) / 2
        if (v[key, 1] !~ /^[0-9.]+$/) { printf "%s%s=%s", (i > 1 ? " " : ""), key, v[key, 1]; continue }
        printf "%s%s=%g", (i > 1 ? " " : ""), key, m
      }
    }'
}

# back_to_0 WHAT: everything of the process back to node 0 (not timed), checked (from nodes 1-3:
# the interleave contenders leave pages on 2 and 3 too)
back_to_0() {
  migratepages $pid 1,2,3 0 > /dev/null 2>&1
  b=$(node_counts $pid $addr)
  [ "$b" = "N0=$BUF_PAGES" ] || why="$why back-before-$1=[$b]"
}

# run_mp ROUND: time `migratepages PID 0 1`
run_mp() {
  p1=$(sum_node $pid 1)
  ta=$(now)
  migratepages $pid 0 1 > g.mp.out 2>&1; rc=$?
  tb=$(now)
  after=$(node_counts $pid $addr)
  mpages=$(( $(sum_node $pid 1) - p1 ))
  [ $rc = 0 ] || why="$why round$1-migratepages-rc=$rc($(head -c 200 g.mp.out))"
  [ "$after" = "N1=$BUF_PAGES" ] || why="$why round$1-migratepages-after=[$after]"
  t_mp="$t_mp $(secs $ta $tb)"
  echo "--- g: round $1: migratepages rc=$rc in $(secs $ta $tb) s: buffer [$after], process pages moved to N1: $mpages"
}

# run_apply ROUND NAME BIN [ARGS…]: time `BIN apply` of the plan (NAME: apply, apply1, …; a
# base build may not know --timings)
run_apply() {
  r_=$1; name=$2; bin=$3; shift 3
  tm=--timings; [ "$bin" = "$N" ] || tm=""
  ta=$(now)
  $bin apply g.plan.json -p $pid -q --json $tm "$@" --rollback-out g.rollback.$name.json > g.report.$name.json 2> g.apply.$name.err; rc=$?
  tb=$(now)
  after=$(node_counts $pid $addr)
  r=$(tr -d ' \n' < g.report.$name.json)
  apages=$(echo "$r" | sed -n 's/^.*"pages":{"pages":[0-9]*,.*"moved":\([0-9]*\),.*$/\1/p' | head -1)
  ajobs=$(echo "$r" | sed -n 's/.*"jobs":\([0-9]*\).*/\1/p')
  [ $rc = 0 ] || why="$why round$r_-$name-rc=$rc"
  [ "$after" = "N1=$BUF_PAGES" ] || why="$why round$r_-$name-after=[$after]"
  echo "$r" | grep -q '"status":"complete"' || why="$why round$r_-$name-report-status"
  grep '^numascope: timings ' g.apply.$name.err >> g.timings.$name
  eval "t_$name=\"\$t_$name $(secs $ta $tb)\""
  eval "jobs_$name=$ajobs"
  echo "--- g: round $r_: $name rc=$rc in $(secs $ta $tb) s: buffer [$after], moved $apages, $ajobs jobs; $(grep '^numascope: timings ' g.apply.$name.err | sed 's/^numascope: //')"
}

# run_il ROUND NAME BIN: time `BIN apply --jobs 1` of the interleave plan (BENCH_INTERLEAVE)
run_il() {
  ta=$(now)
  $3 apply g.il.plan.json -p $pid -q --json --jobs 1 --rollback-out g.rollback.$2.json > g.report.$2.json 2> g.apply.$2.err; rc=$?
  tb=$(now)
  after=$(node_counts $pid $addr)
  [ $rc = 0 ] || why="$why round$1-$2-rc=$rc"
  [ "$after" = "N0=49152 N1=5462 N2=5461 N3=5461" ] || why="$why round$1-$2-after=[$after]"
  eval "t_$2=\"\$t_$2 $(secs $ta $tb)\""
  echo "--- g: round $1: $2 (interleave of 16384 pages over nodes 1-3, --jobs 1) rc=$rc in $(secs $ta $tb) s: buffer [$after]"
}

t0=$(now)
why=""
t_mp=""; t_apply=""; t_apply1=""
rm -f g.timings.*
if ! [ -x /bin/migratepages ]; then
  why="migratepages (numactl) is not in the guest"
else
  $T --pin --threads 0 --shared-mib 256 --seconds 0 --hold 600 > g.out 2> g.err &
  tp=$!
  if wait_for g.out '^holding' 1 90; then
    pid=$(field g.out pid)
    addr=$(grep '^shared' g.out | sed 's/.*addr=\([^ ]*\).*/\1/')
    end=$(printf '0x%x' $((addr + BUF_PAGES * 4096)))
    before=$(node_counts $pid $addr)
    echo "--- g: buffer [$before], process pages N0=$(sum_node $pid 0) N1=$(sum_node $pid 1) before; $ROUNDS rounds"
    [ "$before" = "N0=$BUF_PAGES" ] || why="$why before=[$before]"
    cat > g.plan.json <<PLAN
{"format":"numascope-plan","version":1,"target":{"pid":$pid,"startTimeTicks":null,"machine":{"nodeIds":[0,1,2,3],"distances":null}},
 "pageRanges":[{"start":"$addr","end":"$end","action":"move","toNodes":[1],"expectedNodes":{"0":$BUF_PAGES}}],"threads":[]}
PLAN
    # fixed costs (3 runs each): process start of numascope, a migratepages with nothing to move
    fx=""; fm=""
    for k in 1 2 3; do
      ta=$(now); $N --version > /dev/null 2>&1; tb=$(now); fx="$fx $(secs $ta $tb)"
      ta=$(now); migratepages $pid 3 2 > /dev/null 2>&1; tb=$(now); fm="$fm $(secs $ta $tb)"
    done
    fc=""
    for k in 1 2 3; do ta=$(now); cat /proc/cpuinfo > /dev/null; tb=$(now); fc="$fc $(secs $ta $tb)"; done
    echo "--- g: fixed costs (s): numascope --version:$fx; migratepages with nothing to move:$fm; reading /proc/cpuinfo:$fc"
    ilend=$(printf '0x%x' $((addr + 16384 * 4096)))
    cat > g.il.plan.json <<PLAN
{"format":"numascope-plan","version":1,"target":{"pid":$pid,"startTimeTicks":null,"machine":{"nodeIds":[0,1,2,3],"distances":null}},
 "pageRanges":[{"start":"$addr","end":"$ilend","action":"interleave","toNodes":[1,2,3]}],"threads":[]}
PLAN
    ils=""
    if [ "${BENCH_INTERLEAVE:-0}" = 1 ]; then ils="il1"; [ -x $NB ] && ils="il1 base_il1"; fi
    t_il1=""; t_base_il1=""
    bases=""; rbases=""
    if [ -x $NB ]; then bases="base base1"; rbases="base1 base"; fi
    extras=""
    if [ -n "${BENCH_EXTRA:-}" ]; then
      IFS=';'; for v in $BENCH_EXTRA; do extras="$extras ${v%%:*}"; done; unset IFS
    fi
    i=1
    while [ $i -le "$ROUNDS" ] && [ -z "$why" ]; do
      if [ $((i % 2)) = 1 ]; then order="mp apply apply1 $bases"; else order="$rbases apply1 apply mp"; fi
      for c in $order; do
        back_to_0 "$c-round$i"
        [ -n "$why" ] && break
        case $c in
          mp) run_mp $i ;;
          apply) run_apply $i apply $N ;;
          apply1) run_apply $i apply1 $N --jobs 1 ;;
          base) run_apply $i base $NB ;;
          base1) run_apply $i base1 $NB --jobs 1 ;;
        esac
      done
      for x in $extras; do
        [ -n "$why" ] && break
        back_to_0 "$x-round$i"
        [ -n "$why" ] && break
        args=$(echo ";$BENCH_EXTRA" | tr ';' '\n' | sed -n "s/^$x://p" | head -1)
        run_apply $i "x_$x" $N $args
      done
      for x in $ils; do
        [ -n "$why" ] && break
        migratepages $pid 1,2,3 0 > /dev/null 2>&1
        b=$(node_counts $pid $addr)
        [ "$b" = "N0=$BUF_PAGES" ] || { why="$why back-before-$x-round$i=[$b]"; break; }
        if [ $x = il1 ]; then run_il $i il1 $N; else run_il $i base_il1 $NB; fi
      done
      i=$((i + 1))
    done
    if [ -z "$why" ]; then
      set -- $(stats $t_mp); mp_med=$1; mp_min=$2; mp_max=$3
      set -- $(stats $t_apply); ap_med=$1; ap_min=$2; ap_max=$3
      set -- $(stats $t_apply1); a1_med=$1; a1_min=$2; a1_max=$3
      ratio=$(ratio $mp_med $ap_med); ratio1=$(ratio $mp_med $a1_med)
      # per-round ratios (migratepages and apply of the same round): their spread
      rr=""; rr1=""; k=1
      for m in $t_mp; do
        a=$(echo $t_apply | cut -d' ' -f$k); a1=$(echo $t_apply1 | cut -d' ' -f$k)
        rr="$rr $(ratio $m $a)"; rr1="$rr1 $(ratio $m $a1)"; k=$((k + 1))
      done
      set -- $(stats $rr); rr_min=$2; rr_max=$3
      set -- $(stats $rr1); rr1_min=$2; rr1_max=$3
      echo "BENCH rounds=$ROUNDS migratepages_s=$mp_med apply_s=$ap_med ratio=$ratio apply_jobs=$jobs_apply apply_jobs1_s=$a1_med ratio_jobs1=$ratio1 migratepages_spread=$mp_min-$mp_max apply_spread=$ap_min-$ap_max apply_jobs1_spread=$a1_min-$a1_max round_ratio_spread=$rr_min-$rr_max round_ratio_jobs1_spread=$rr1_min-$rr1_max round_ratios=$(echo $rr | tr ' ' ',') round_ratios_jobs1=$(echo $rr1 | tr ' ' ',') migratepages_pages=$mpages apply_pages=$apages buffer_pages=$BUF_PAGES"
      echo "BENCH-PHASES jobs=$jobs_apply $(phase_medians g.timings.apply)"
      echo "BENCH-PHASES jobs=1 $(phase_medians g.timings.apply1)"
      for b in $bases; do
        eval "tx=\$t_$b"
        set -- $(stats $tx)
        echo "BENCH-BASE $b median_s=$1 spread=$2-$3 ratio=$(ratio $mp_med $1) jobs=$(eval echo \$jobs_$b) (the base build's apply$([ $b = base1 ] && echo ' --jobs 1'))"
      done
      for x in $ils; do
        eval "tx=\$t_$x"
        set -- $(stats $tx)
        echo "BENCH-INTERLEAVE $x median_s=$1 spread=$2-$3 (16384 pages dealt over nodes 1-3, --jobs 1$([ $x = base_il1 ] && echo ', the base build'))"
      done
      for x in $extras; do
        eval "tx=\$t_x_$x"
        set -- $(stats $tx)
        echo "BENCH-EXTRA $x median_s=$1 spread=$2-$3 ratio=$(ratio $mp_med $1) args=[$(echo ";$BENCH_EXTRA" | tr ';' '\n' | sed -n "s/^$x://p" | head -1)] $(phase_medians g.timings.x_$x)"
      done
    fi
  else
    why="testload did not reach its hold phase"
  fi
  kill $tp 2>/dev/null; wait $tp 2>/dev/null
fi
if [ -z "$why" ]; then
  pass g-bench-migrate "256 MiB moved node 0 -> 1, $ROUNDS rounds (order alternating, back to node 0 before each): migratepages median $mp_med s ($mp_min-$mp_max), numascope apply median $ap_med s ($ap_min-$ap_max, $jobs_apply move_pages threads), --jobs 1 median $a1_med s ($a1_min-$a1_max); all verified N1=$BUF_PAGES; ratio $ratio (jobs 1: $ratio1; migratepages / apply medians; reported, not a gate) ($t0 -> $(now) s)"
else
  dump "testload stdout" g.out; dump "testload stderr" g.err; dump "migratepages" g.mp.out
  for n in apply apply1; do [ -f g.apply.$n.err ] && { dump "$n stderr" g.apply.$n.err; dump "$n report" g.report.$n.json 40; }; done
  grep -E 'MemFree|MemAvailable' /proc/meminfo | sed 's/^/    /'
  fail g-bench-migrate "$why"
fi
