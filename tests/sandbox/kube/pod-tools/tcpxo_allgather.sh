#!/bin/sh
# Stand-in for /scripts/allgather.sh of seed 003's GPUDirect-TCPXO test Pods. The real file is written by the
# nccl-test container's own start command (manifests/gpudirect-tcpxo/nccl-test-latest.yaml: cat >/scripts/allgather.sh
# <<EOF): it runs /scripts/init_ssh.sh with the hosts, then /scripts/demo-run-nccl-test-tcpxo-via-mpi.sh. No container
# command runs here, so this file stands for what it writes, calling the stand-ins of those two scripts.
. "${STANDIN_TOOLS:?}/label"
echo "# $STANDIN_LABEL $0 $*: init_ssh, then the TCPXO NCCL test wrapper"
sh -c '. "$STANDIN_TOOLS/noop.sh"' /scripts/init_ssh.sh "$@" >/dev/null
exec sh -c '. "$STANDIN_TOOLS/nccl_tests.sh"' /scripts/demo-run-nccl-test-tcpxo-via-mpi.sh
