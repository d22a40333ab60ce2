#!/bin/sh
# Stand-in for /configs/allgather.sh of seed 003's GPUDirect-TCPX test Pods (the ConfigMap nccl-configs,
# manifests/gpudirect-tcpx/nccl-config.yaml): it copies /configs/* to /scripts, runs init_ssh.sh and gen_hostfiles.sh
# with the hosts, then /scripts/run-allgather.sh 8 eth1,eth2,eth3,eth4 1M 512M <number of hosts>. This file stands
# for it, calling the stand-ins of those scripts.
. "${STANDIN_TOOLS:?}/label"
echo "# $STANDIN_LABEL $0 $*: init_ssh, gen_hostfiles, then the TCPX NCCL test wrapper"
sh -c '. "$STANDIN_TOOLS/noop.sh"' /scripts/init_ssh.sh "$@" >/dev/null
sh -c '. "$STANDIN_TOOLS/noop.sh"' /scripts/gen_hostfiles.sh "$@" >/dev/null
exec sh -c '. "$STANDIN_TOOLS/nccl_tests.sh"' /scripts/run-allgather.sh 8 eth1,eth2,eth3,eth4 1M 512M "$#"
