#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# REQs nobody listens for, both ways through the emulated PF
# (tools/testing/sriov/run --vf-test and --remote-test): each VF's rping
# client to a port of the remote where nothing listens (the remote's CM
# answers with a REJ from the wire), then the remote's rping client to
# such a port of each VF (the VF's CM answers with a REJ that leaves
# through the PF).  Each client must see the REJ, not a timeout.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"

PORT=${REJ_PORT:-7999}

if [ "$SRIOV_ROLE" = pf ]; then
	echo "# nothing to run on the PF"
	exit 0
fi
rxe_up || exit 1
wait_pf_watching 60
traffic_barrier rej-start 120 || { tap_fail "the others never got ready"; tap_done; exit 1; }

# rejected NAME IP: an rping client to IP:PORT is rejected; one TAP point.
rejected() {
	local name=$1 out=/tmp/$1.out rc

	run_with_timeout 60 rping -c -a "$2" -p "$PORT" -C 1 -v > "$out" 2>&1
	rc=$?
	echo "# $name: exit status $rc"
	sed -e "s/^/# $name: /" "$out" | tail -n 4
	tap_check "$name: rejected (REJ, not a timeout)" \
		grep -q 'RDMA_CM_EVENT_REJECTED' "$out"
}

if [ "$SRIOV_ROLE" = vf ]; then
	rejected "$SRIOV_NAME-to-remote" "$REMOTE_IP"
fi
traffic_barrier rej-from-wire 90
if [ "$SRIOV_ROLE" = remote ]; then
	rejected remote-to-vf1 "$VF1_IP"
	rejected remote-to-vf2 "$VF2_IP"
fi
traffic_barrier rej-from-vf 90
tap_done
