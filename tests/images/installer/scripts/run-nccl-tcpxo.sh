#!/usr/bin/env bash
# STAND-IN for the vendor's run-nccl-tcpxo.sh BENCHMARK LD_LIBRARY_PATH GPUS_PER_NODE NICS MIN MAX ...: synthetic output.
# NICS is the list the vendor's script gives NCCL as NCCL_FASTRAK_IFNAME (the GPUDirect-TCPXO plugin's data NICs).
export LD_LIBRARY_PATH="${2:-$LD_LIBRARY_PATH}"
export NCCL_FASTRAK_IFNAME="${4:-${NCCL_FASTRAK_IFNAME:-}}"
exec /scripts/standin-nccl-tests "${1:-all_gather_perf}" "${3:-8}"
