#!/bin/sh
# Stand-in for the NCCL test wrappers (run_nccl_tests.sh, demo-run-nccl-test-tcpxo-via-mpi.sh):
# prints a labelled nccl-tests-shaped report. The numbers are the stand-in's own (nccl-figures); no collective runs.
# The footer is nccl-tests' own (src/common.cu: "# Out of bounds values : %d %s", "# Avg bus bandwidth
# : %g %s" with an empty check word when NCCL_TESTS_MIN_BW is unset, then "#"), so parsers read it as a
# complete run; the synthetic label stays on its own "#" comment lines, above the table and the footer.
. "${STANDIN_TOOLS:?}/label"
echo "# $STANDIN_LABEL $(basename "$0") $*"
echo "# nccl-tests stand-in: no GPU, no NCCL; the table below is synthetic"
# NCCL's lines naming the network plugin of this wrapper (nccl-networks), as NCCL prints them (src/debug.cc): its INFO
# lines only at NCCL_DEBUG=INFO or TRACE, each with its host's name ("HOST:PID:TID [RANK] NCCL INFO ..."), for every host
# of the run (exec.py's STANDIN_RUN_HOSTS, this Pod's first: rank 0); the version line of rank 0 only (NCCL's init.cc:
# "if (myrank == 0) showVersion()"), an INFO line at INFO or TRACE, a bare one at VERSION or WARN; unset, nothing.
# NCCL_DEBUG_SUBSYS is not simulated: the lines are of its INIT and NET subsystems.
level=$(printf '%s' "${NCCL_DEBUG:-}" | tr '[:lower:]' '[:upper:]')
banner=$(awk -v wrapper="$0" '$1 == wrapper { $1 = ""; sub(/^ /, ""); print; exit }' "$STANDIN_TOOLS/nccl-networks")
network=${banner#NET/}
network=${network%% *}
gdrdma=$(awk -v wrapper="$0" '$1 == "GDRDMA" && $2 == wrapper { print $3; exit }' "$STANDIN_TOOLS/nccl-networks")
own_version=$(awk '$1 == "NCCL_VERSION" { print $2; exit }' "$STANDIN_TOOLS/nccl-figures")
run_hosts=${STANDIN_RUN_HOSTS:-${HOSTNAME:-host}}
versions=""
pid=4100
for entry in $run_hosts; do
    host=${entry%%=*}
    version=$own_version
    case "$entry" in *=*) version=${entry#*=} ;; esac
    case " $versions " in *" $version "*) ;; *) versions="$versions $version" ;; esac
    case "$level" in INFO|TRACE) if [ -n "$banner" ]; then
        echo "$host:$pid:$pid [0] NCCL INFO NET/Plugin: Loaded net plugin $network (v8)"
        echo "$host:$pid:$pid [0] NCCL INFO $banner$(case "$banner" in *" ver. "*) printf . ;; esac)"
    fi ;; esac
    if [ "$pid" = 4100 ]; then
        case "$level" in
            INFO|TRACE) echo "$host:$pid:$pid [0] NCCL INFO NCCL version $version" ;;
            VERSION|WARN) echo "NCCL version $version" ;;
        esac
    fi
    case "$level" in INFO|TRACE) if [ -n "$banner" ]; then
        echo "$host:$pid:$((pid + 131)) [0] NCCL INFO Using network $network"
        echo "$host:$pid:$((pid + 131)) [0] NCCL INFO Channel 00/0 : 15[7] -> 0[0] [receive] via NET/$network/0$gdrdma"
    fi ;; esac
    pid=$((pid + 1))
done
# The figure: the stand-in's own (nccl-figures, its sources beside it) for this wrapper on this machine type (exec.py's
# STANDIN_MACHINE_TYPE, the node's label; a line for the wrapper alone serves any), scaled to the data NICs or HCAs the
# run may use (the plugin's NIC list, or NCCL_IB_HCA, in the environment: a per-NIC run), and slowed when the run touches
# a node or a NIC marked slow (exec.py's runtime names them in STANDIN_SLOW_NODES and STANDIN_SLOW_NICS from the Nodes'
# annotations), or hosts of different NCCL versions (real: mixed versions hang).
# A wrapper without a line keeps one row at 128 MiB with a made-up bandwidth far below any fabric's.
figures=$(awk -v wrapper="$0" -v typed="$0@${STANDIN_MACHINE_TYPE:-}" '$1 == typed { print $2, $3, $4; found = 1; exit }
    $1 == wrapper && !any { any = $2 " " $3 " " $4 } END { if (!found && any) print any }' "$STANDIN_TOOLS/nccl-figures")
slow_fraction=$(awk '$1 == "SLOW_FRACTION" { print $2; exit }' "$STANDIN_TOOLS/nccl-figures")
nics_in_use=${NCCL_FASTRAK_IFNAME:-${NCCL_GPUDIRECTTCPX_SOCKET_IFNAME:-${NCCL_IB_HCA:-}}}
slow_nics=""
for nic in ${STANDIN_SLOW_NICS:-}; do
    case ",${nics_in_use}," in ,,|*",$nic,"*) slow_nics="$slow_nics $nic" ;; esac
done
set -- $versions
if [ -n "${STANDIN_SLOW_NODES:-}" ] || [ -n "$slow_nics" ] || [ $# -gt 1 ]; then
    echo "# $STANDIN_LABEL slow run: it touches nodes marked slow [${STANDIN_SLOW_NODES:-}], NICs marked slow [${slow_nics# }], NCCL versions [${versions# }]"
    slow=1
else
    slow=0
fi
set -- $figures
if [ $# -eq 3 ]; then
    row=$(awk -v nics="$1" -v size="$2" -v busbw="$3" -v used="$nics_in_use" -v slow="$slow" -v fraction="${slow_fraction:-0.1}" 'BEGIN {
        if (used != "") busbw = busbw * split(used, parts, ",") / nics
        if (slow == 1) busbw = busbw * fraction
        algbw = busbw * 16 / 15
        time = size / algbw / 1000
        printf "%12.0f  %12.0f     float    none      -1  %9.1f  %6.2f  %6.2f      0  %9.1f  %6.2f  %6.2f      0\n", size, size / 4, time, algbw, busbw, time, algbw, busbw
        printf "%.2f\n", busbw }')
else
    row="   134217728      33554432     float    none      -1 13421772.8    0.01    0.01      0 13421772.8    0.01    0.01      0
0.01"
fi
echo "#"
echo "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
echo "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"
printf '%s\n' "$row" | sed -n 1p
echo "# $STANDIN_LABEL the bandwidth below is synthetic"
echo "# Out of bounds values : 0 OK"
echo "# Avg bus bandwidth    : $(printf '%s\n' "$row" | sed -n 2p) "
echo "#"
