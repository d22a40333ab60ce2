#!/bin/sh
. "${STANDIN_TOOLS:?}/label"
echo "$STANDIN_LABEL $(basename "$0") $*: nothing to do in the stand-in"
