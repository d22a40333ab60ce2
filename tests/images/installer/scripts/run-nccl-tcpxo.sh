#!/usr/bin/env bash
# STAND-IN for the vendor's run-nccl-tcpxo.sh BENCHMARK LD_LIBRARY_PATH GPUS_PER_NODE NICS MIN MAX ...: synthetic output.
export LD_LIBRARY_PATH="${2:-$LD_LIBRARY_PATH}"
exec /scripts/standin-nccl-tests "${1:-all_gather_perf}" "${3:-8}"
