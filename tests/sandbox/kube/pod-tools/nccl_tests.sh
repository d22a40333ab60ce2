#!/bin/sh
# Stand-in for the NCCL test wrappers (run_nccl_tests.sh, demo-run-nccl-test-tcpxo-via-mpi.sh):
# prints a labelled nccl-tests-shaped report. The numbers are made up; no collective runs.
# The footer is nccl-tests' own (src/common.cu: "# Out of bounds values : %d %s", "# Avg bus bandwidth
# : %g %s" with an empty check word when NCCL_TESTS_MIN_BW is unset, then "#"), so parsers read it as a
# complete run; the synthetic label stays on its own "#" comment lines, above the table and the footer.
. "${STANDIN_TOOLS:?}/label"
echo "# $STANDIN_LABEL $(basename "$0") $*"
echo "# nccl-tests stand-in: no GPU, no NCCL; the table below is synthetic"
# NCCL's lines naming the network plugin of this wrapper (nccl-networks), as NCCL prints them (src/debug.cc): its INFO
# lines only at NCCL_DEBUG=INFO or TRACE, its version line from VERSION up; unset, nothing. NCCL_DEBUG_SUBSYS is not
# simulated: the lines are of its INIT and NET subsystems.
level=$(printf '%s' "${NCCL_DEBUG:-}" | tr '[:lower:]' '[:upper:]')
banner=$(awk -v wrapper="$0" '$1 == wrapper { $1 = ""; sub(/^ /, ""); print; exit }' "$STANDIN_TOOLS/nccl-networks")
network=${banner#NET/}
network=${network%% *}
case "$level" in INFO|TRACE) if [ -n "$banner" ]; then
    echo "${HOSTNAME:-host}:4100:4100 [0] NCCL INFO NET/Plugin: Loaded net plugin $network (v8)"
    echo "${HOSTNAME:-host}:4100:4100 [0] NCCL INFO $banner."
fi ;; esac
case "$level" in VERSION|WARN|INFO|TRACE) echo "NCCL version 2.21.5+cuda12.4" ;; esac
case "$level" in INFO|TRACE) if [ -n "$banner" ]; then
    echo "${HOSTNAME:-host}:4100:4231 [0] NCCL INFO Using network $network"
    echo "${HOSTNAME:-host}:4100:4231 [0] NCCL INFO Channel 00/0 : 15[7] -> 0[0] [receive] via NET/$network/0"
fi ;; esac
echo "#"
echo "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
echo "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"
# One row, at a size the verdict judges bandwidth at (64 MiB and up), with a made-up bandwidth far below any fabric's.
echo "   134217728      33554432     float    none      -1 13421772.8    0.01    0.01      0 13421772.8    0.01    0.01      0"
echo "# $STANDIN_LABEL the bandwidth below is synthetic"
echo "# Out of bounds values : 0 OK"
echo "# Avg bus bandwidth    : 0.01 "
echo "#"
