# Sourced by testbed/run-scenarios.sh after the 4-node boot: a second, separate boot with a
# cpu-less memory node and HMAT figures (README: "Tiers boot"), running guest/tiers.sh (the `t-`
# scenarios). It reuses run-scenarios.sh's kernel, binaries and boot(); its serial log is appended
# to the main one so that the result loop finds the `t-` lines.
#
# Topology: node 0 (cpu 0, 512 MiB), node 1 (cpu 1, 512 MiB), node 2 (no cpu, 256 MiB, its
# initiator node 0: a CXL-like expander). HMAT (-machine hmat=on) per initiator -> target:
#   latency ns:  0->0 80   0->1 130  0->2 250   1->0 130  1->1 80   1->2 300
#   bandwidth:   0->0 2G   0->1 1G   0->2 512M  1->0 1G   1->1 2G   1->2 400M
# so the guest's sysfs shows node2/access0/initiators -> node0, read_bandwidth 512 MB/s, and
# node0's read_bandwidth 2048: the HMAT bandwidth ratio DRAM:CXL is 4:1. The figures are of the
# order this TCG guest really delivers (t-bench measures 1-3.6 GB/s triad and copy on every node),
# so that a one-thread streaming program is bandwidth-bound on the model as it would be on the
# machine the firmware describes (t-engine-weights).
T_MIB=(512 512 256)
T_LAT=("80 130 250" "130 80 300")
T_BW=("2G 1G 512M" "1G 2G 400M")
T_DIST=("10 20 28" "20 10 28" "28 28 10")
QARGS=(-machine hmat=on -smp 2 -m $((T_MIB[0] + T_MIB[1] + T_MIB[2]))M)
for i in 0 1 2; do
  QARGS+=(-object "memory-backend-ram,id=m$i,size=${T_MIB[$i]}M")
  if [ $i -lt 2 ]; then QARGS+=(-numa "node,nodeid=$i,cpus=$i,memdev=m$i"); else QARGS+=(-numa "node,nodeid=$i,memdev=m$i,initiator=0"); fi
done
for s in 0 1 2; do
  read -r -a row <<< "${T_DIST[$s]}"
  for d in 0 1 2; do [ $s != $d ] && QARGS+=(-numa "dist,src=$s,dst=$d,val=${row[$d]}"); done
done
for s in 0 1; do
  read -r -a lat <<< "${T_LAT[$s]}"; read -r -a bw <<< "${T_BW[$s]}"
  for d in 0 1 2; do
    QARGS+=(-numa "hmat-lb,initiator=$s,target=$d,hierarchy=memory,data-type=access-latency,latency=${lat[$d]}")
    QARGS+=(-numa "hmat-lb,initiator=$s,target=$d,hierarchy=memory,data-type=access-bandwidth,bandwidth=${bw[$d]}")
  done
done

t=$(date +%s.%N)
RT=$WORK/rootfs-tiers
rm -rf "$RT" && mkdir -p "$RT"/{bin,proc,sys,dev,tmp}
cp "$BUSYBOX" "$RT/bin/busybox"
cp "$BIN/numascope" "$BIN/numascope-testload" "$RT/bin/"
cp "$HERE/guest/init" "$RT/init" && cp "$HERE/guest/tiers.sh" "$RT/scenarios.sh" && chmod +x "$RT/init"
# t-run-weighted: the allocation shim and scenario i's C fixture, with the libraries they load
if [ -n "$SHIM" ] && [ -f "$SHIM" ] && [ -x "$PLACE_BIN" ]; then
  mkdir -p "$RT/lib/numascope" && cp "$SHIM" "$RT/lib/numascope/" && cp "$PLACE_BIN" "$RT/bin/placeprog"
  for lib in $( (ldd "$SHIM"; ldd "$PLACE_BIN") 2>/dev/null | grep -oE '/[^ ]+' | sort -u); do
    mkdir -p "$RT$(dirname "$lib")" && cp -L "$lib" "$RT$lib"
  done
fi
{
  echo "EXPECT_CPULESS=2"
  echo "EXPECT_BW_0=2048"; echo "EXPECT_BW_2=512"; echo "EXPECT_LAT_2=250"
  echo "T_BENCH=${TESTBED_TIERS_BENCH:-1}"
} > "$RT/expected.env"
(cd "$RT" && find . | cpio -o -H newc 2>/dev/null | gzip -1 > "$WORK/initrd-tiers.gz") || setup_failed "building the tiers initramfs failed"
say "tiers initramfs $(($(stat -c %s "$WORK/initrd-tiers.gz") / 1024)) KiB in $(el "$t") s"

MAIN_LOG=$LOG; MAIN_QRC=$qrc
LOG=$WORK/serial-tiers.log INITRD=$WORK/initrd-tiers.gz
boot
if grep -aq 'Kernel panic - not syncing' "$LOG" && [ "${TESTBED_PANIC_RETRY:-1}" != 0 ]; then
  say "the tiers guest kernel panicked (log kept as $LOG.panic): booting once more"
  cp "$LOG" "$LOG.panic"
  boot
fi
T_BOOT_S=$BOOT_S
{ echo "=== tiers boot (testbed/host/tiers.sh), qemu rc=$qrc"; cat "$LOG"; } >> "$MAIN_LOG"
LOG=$MAIN_LOG
# a timeout of either boot is reported for the scenarios without a line
[ "$MAIN_QRC" = 124 ] || [ "$MAIN_QRC" = 137 ] && qrc=$MAIN_QRC
unset INITRD
