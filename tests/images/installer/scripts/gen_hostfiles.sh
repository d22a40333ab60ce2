#!/usr/bin/env bash
# STAND-IN for the vendor's gen_hostfiles.sh: writes the VM names where the run scripts read them.
[ "$#" -ge 2 ] || { echo "usage: gen_hostfiles.sh VM_NAME_1 VM_NAME_2..." >&2; exit 2; }
mkdir -p /scripts/hostfiles2
printf '%s\n' "$@" >/scripts/hostfiles2/hostfile
echo "[aiinfra stand-in] gen_hostfiles.sh: wrote /scripts/hostfiles2/hostfile ($# hosts)"
