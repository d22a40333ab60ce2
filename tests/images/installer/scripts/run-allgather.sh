#!/usr/bin/env bash
# STAND-IN for the vendor's run-allgather.sh GPUS_PER_NODE NICS MIN MAX ITERATIONS: synthetic output.
exec /scripts/standin-nccl-tests all_gather_perf "${1:-8}"
