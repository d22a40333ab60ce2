#!/bin/sh
# Stand-in for the NCCL plugin installer images' /scripts/container_entry.sh.
# install: writes a labelled placeholder library where the real one copies the plugin, so the
# manifests' follow-up steps (mkdir, cp -r /var/lib/tcpxo/lib64/.) work; shell: nothing.
. "${STANDIN_TOOLS:?}/label"
case "$1" in
install)
    for dir in /var/lib/tcpxo/lib64 /var/lib/tcpx/lib64 /usr/local/nvidia/lib64; do
        mkdir -p "$dir" && echo "$STANDIN_LABEL placeholder, not a library" >"$dir/libnccl-net.so.standin"
    done
    echo "$STANDIN_LABEL container_entry.sh $*: placeholder plugin files written"
    ;;
*)
    echo "$STANDIN_LABEL container_entry.sh $*"
    ;;
esac
