#!/bin/sh
# Stand-in for the RxDM entrypoints (/fts/entrypoint_rxdm_container.sh, tcpgpudmarxd): says it
# would start, and serves until stopped.
. "${STANDIN_TOOLS:?}/label"
echo "$STANDIN_LABEL $(basename "$0") $*: RxDM stand-in running"
trap 'exit 0' TERM INT
while :; do sleep 3600 & wait $!; done
