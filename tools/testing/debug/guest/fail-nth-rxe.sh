#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# fail-nth in the debug suite: first that the helper itself can fail (a
# command, and a link request, that fail without any fault must fail the
# helper), then fault sites of creating a soft-RoCE device, one per run.
# The RDMA netlink request of "rdma link add" runs the whole device
# registration (ib_core, every client such as ib_cm and the CM's port
# setup) in the calling task; fail-nth.sh --rdma-link-add sends it with
# the fault counter armed for that request only, not for the start-up of
# a program.  That request passes about 14,500 fault sites on the debug
# kernel (measured 2026-11-30), each run taking seconds under TCG, so the
# sweep takes the first FNTH_FIRST (default 20) and FNTH_SAMPLE (default
# 40) more spread over all of them, at an offset that changes from run to
# run (the seed is printed).  Each half-failed attempt is deleted again;
# the last, unfaulted request must give a working device.  Whatever breaks
# shows up in the kernel log, which the suite scans afterwards.

# shellcheck source-path=SCRIPTDIR/../../vm source=guest-lib.sh
. "$GUEST_LIB"

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
FAILNTH=$HERE/../fail-nth.sh
DEV=fnth0
LINK=rxe_fnth

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

# sweep: the fault sites of the request, counted and timed.
sweep() {
	local t0=$SECONDS rc

	"$FAILNTH" --quiet --sample "${FNTH_SAMPLE:-40}" --first "${FNTH_FIRST:-20}" \
		--after "rdma link delete $LINK >/dev/null 2>&1; true" \
		--rdma-link-add "$LINK" rxe "$DEV" 2>&1 | sed 's/^/# /'
	rc=${PIPESTATUS[0]}
	echo "# sweep took $((SECONDS - t0)) s"
	return "$rc"
}

# --start beyond every fault site of exec(): no fault is injected, the
# command's own status decides (sweeping exec's sites costs ~1.4 s each).
tap_check "fail-nth fails a failing command" \
	eval "! $FAILNTH --quiet --start 1000000 --max 1000000 -- false"
tap_check "dummy netdev and rdma_rxe" setup
tap_check "fail-nth fails a failing link request (no such netdev)" \
	eval "! $FAILNTH --quiet --rdma-link-add $LINK rxe ${DEV}_none"
tap_check "fail-nth: rdma link add (first and spread fault sites)" sweep
tap_check "the final device works" rxe_port_active "$LINK"
cleanup
ip link delete "$DEV"
tap_done
