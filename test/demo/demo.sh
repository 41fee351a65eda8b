#!/usr/bin/env bash
# Drives a running plugin (make run) with csc, the CSI command-line client,
# through the lifecycle the README shows, for a volume of each backend: a
# disk, an SMB share and an iSCSI LUN, as declared by docs/sim-config.yaml.
# Each goes stage → publish → write a file → (expand the disk) → stats →
# unpublish → unstage → stage → publish → read the file back → unpublish →
# unstage.
#
# Usage: test/demo/demo.sh [run-dir]   (default: _output/run, as make run uses)
set -euo pipefail

RUN_DIR=${1:-_output/run}
RUN_DIR=$(cd "$RUN_DIR" && pwd)
CSC=${CSC:-.bin/csc}
export CSI_ENDPOINT="unix://$RUN_DIR/csi.sock"
KUBELET="$RUN_DIR/kubelet"

step() { printf '\n== %s\n' "$*"; }

# lifecycle VOLUME CAPABILITY [csc flags...]: the walk-through for one
# volume. X_CSI_SECRETS, when set, goes with the stage calls (node-stage
# secrets) only.
lifecycle() {
	local vol=$1 cap=$2
	shift 2
	local staging="$KUBELET/plugins/kubernetes.io/csi/sim.csi.wincsi.io/$vol/globalmount"
	local target="$KUBELET/pods/demo-pod/volumes/kubernetes.io~csi/$vol/mount"
	local secrets=${X_CSI_SECRETS:-}
	local stage=(env X_CSI_SECRETS="$secrets" "$CSC" node stage --staging-target-path "$staging" --cap "$cap" "$@" "$vol")
	local publish=(env -u X_CSI_SECRETS "$CSC" node publish --staging-target-path "$staging" --target-path "$target" --cap "$cap" "$@" "$vol")
	local unpublish=(env -u X_CSI_SECRETS "$CSC" node unpublish --target-path "$target" "$vol")
	local unstage=(env -u X_CSI_SECRETS "$CSC" node unstage --staging-target-path "$staging" "$vol")

	mkdir -p "$staging" "$(dirname "$target")"
	step "$vol: stage";              "${stage[@]}"
	step "$vol: publish";            "${publish[@]}"
	local written="$vol written at $(date -u +%FT%TZ)"
	step "$vol: write a file";       echo "$written" > "$target/hello.txt"; cat "$target/hello.txt"
	if [ -n "${EXPAND_TO:-}" ]; then
		step "$vol: expand to $EXPAND_TO bytes"; env -u X_CSI_SECRETS "$CSC" node expand --req-bytes "$EXPAND_TO" "$vol" "$target"
	fi
	step "$vol: stats";              env -u X_CSI_SECRETS "$CSC" node stats "$vol:$target"
	step "$vol: unpublish";          "${unpublish[@]}"
	step "$vol: unstage";            "${unstage[@]}"
	step "$vol: stage again";        "${stage[@]}"
	step "$vol: publish again";      "${publish[@]}"
	step "$vol: read the file back"; cat "$target/hello.txt"
	if [ "$(cat "$target/hello.txt")" != "$written" ]; then
		echo "demo: $vol: the file read back is not the one written" >&2
		exit 1
	fi
	step "$vol: clean up";           "${unpublish[@]}"; "${unstage[@]}"
}

step "identity"; "$CSC" identity plugin-info
step "node info"; "$CSC" node get-info

# A disk: the stand-in for the controller (pkg/sim/controller) names it by
# the volume ID and attaches a blank one (1 GiB) for a volume it has not
# seen (--sim-auto-attach); the expansion to 5 GiB grows that disk first.
X_CSI_SECRETS= EXPAND_TO=5368709120 lifecycle demo-disk 1,mount,ntfs

# SMB: the share //files/data of docs/sim-config.yaml, mapped as alice.
X_CSI_SECRETS=username=alice,password=alice-password \
	lifecycle demo-smb 5,mount,cifs --vol-context source=//files/data

# iSCSI: LUN 0 of the target of docs/sim-config.yaml, with session CHAP.
X_CSI_SECRETS=node.session.auth.username=node1,node.session.auth.password=node1-secret12 \
	lifecycle demo-iscsi 1,mount,ntfs \
	--vol-context targetPortal=127.0.0.1:3260,iqn=iqn.2026-01.io.example:storage,lun=0,sessionCHAPAuth=true

printf '\ndemo passed: a disk, an SMB and an iSCSI volume staged, published, written and read back\n'
