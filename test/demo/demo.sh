#!/usr/bin/env bash
# Drives a running plugin (make run) with csc, the CSI command-line client,
# through the lifecycle the README shows: stage → publish → write a file →
# unpublish → unstage → stage → publish → read the file back.
#
# Usage: test/demo/demo.sh [run-dir]   (default: _output/run, as make run uses)
set -euo pipefail

RUN_DIR=${1:-_output/run}
RUN_DIR=$(cd "$RUN_DIR" && pwd)
CSC=${CSC:-.bin/csc}
export CSI_ENDPOINT="unix://$RUN_DIR/csi.sock"
KUBELET="$RUN_DIR/kubelet"
VOL=demo-vol-1
STAGING="$KUBELET/plugins/kubernetes.io/csi/sim.csi.wincsi.io/$VOL/globalmount"
TARGET="$KUBELET/pods/demo-pod/volumes/kubernetes.io~csi/$VOL/mount"
CAP=1,mount,ntfs

step() { printf '\n== %s\n' "$*"; }

mkdir -p "$STAGING" "$(dirname "$TARGET")"
step "identity";             "$CSC" identity plugin-info
step "node info";            "$CSC" node get-info
step "stage $VOL";           "$CSC" node stage --staging-target-path "$STAGING" --cap "$CAP" "$VOL"
step "publish $VOL";         "$CSC" node publish --staging-target-path "$STAGING" --target-path "$TARGET" --cap "$CAP" "$VOL"
step "write a file";         echo "written at $(date -u +%FT%TZ)" > "$TARGET/hello.txt"; cat "$TARGET/hello.txt"
step "stats";                "$CSC" node stats "$VOL:$TARGET"
step "unpublish";            "$CSC" node unpublish --target-path "$TARGET" "$VOL"
step "unstage";              "$CSC" node unstage --staging-target-path "$STAGING" "$VOL"
step "stage again";          "$CSC" node stage --staging-target-path "$STAGING" --cap "$CAP" "$VOL"
step "publish again";        "$CSC" node publish --staging-target-path "$STAGING" --target-path "$TARGET" --cap "$CAP" "$VOL"
step "read the file back";   cat "$TARGET/hello.txt"
step "clean up";             "$CSC" node unpublish --target-path "$TARGET" "$VOL"
                             "$CSC" node unstage --staging-target-path "$STAGING" "$VOL"
printf '\ndemo passed\n'
