#!/usr/bin/env bash
# STAND-IN for the vendor's run-allgather.sh GPUS_PER_NODE NICS MIN MAX ITERATIONS: synthetic output.
# NICS is the list the vendor's script gives NCCL as NCCL_GPUDIRECTTCPX_SOCKET_IFNAME (the GPUDirect-TCPX data NICs).
export NCCL_GPUDIRECTTCPX_SOCKET_IFNAME="${2:-${NCCL_GPUDIRECTTCPX_SOCKET_IFNAME:-}}"
exec /scripts/standin-nccl-tests all_gather_perf "${1:-8}"
