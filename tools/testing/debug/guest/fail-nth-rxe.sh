#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# fail-nth in the debug suite: first that the helper itself can fail (a
# command that fails without any fault must fail the helper), then every
# fault site of creating a soft-RoCE device, one at a time: "rdma link add"
# runs the whole device registration (ib_core, every client such as ib_cm
# and the CM's port setup) in the calling task.  Each half-failed attempt
# is deleted again.  Whatever breaks shows up in the kernel log, which the
# suite scans afterwards.

# shellcheck source-path=SCRIPTDIR/../../vm source=guest-lib.sh
. "$GUEST_LIB"

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
FAILNTH=$HERE/../fail-nth.sh
DEV=fnth0
LINK=rxe_fnth

tap_check "fail-nth fails a failing command" \
	eval "! $FAILNTH --quiet -- false"

setup() {
	modprobe dummy || return 1
	modprobe rdma_rxe || return 1
	ip link add "$DEV" type dummy 2>/dev/null
	ip link set "$DEV" up
}

cleanup() {
	rdma link delete "$LINK" > /dev/null 2>&1
	return 0
}

tap_check "dummy netdev and rdma_rxe" setup
tap_check "fail-nth: rdma link add (every fault site)" \
	"$FAILNTH" --quiet --max 20000 --after "rdma link delete $LINK >/dev/null 2>&1; true" \
	-- rdma link add "$LINK" type rxe netdev "$DEV"
tap_check "the final device works" rxe_port_active "$LINK"
cleanup
ip link delete "$DEV"
tap_done
