#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# rping through the emulated PF (tools/testing/sriov/run --vf-test and
# --remote-test): from each VF to a server on the remote (both VFs at
# once), from the remote to a server on each VF (both at once), then VF1
# to VF2 and VF2 to VF1 at once.  Every path crosses the PF's IPv4
# forwarding: RoCEv2 with a routed hop.  RPING_COUNT pings (default 100).

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"

COUNT=${RPING_COUNT:-100}
BASE=${RPING_PORT:-7200}

if [ "$SRIOV_ROLE" = pf ]; then
	echo "# nothing to run on the PF"
	exit 0
fi

rxe_up || exit 1
gw=$(ip -4 route show default | awk '{ print $3; exit }')
tap_check "rxe0 has the RoCE v2 GID of $MY_IP" roce_v2_gid rxe0 "$MY_IP"
if [ "$SRIOV_ROLE" = vf ]; then
	tap_check "route to the remote via the PF ($gw)" \
		sh -c "ip route get $REMOTE_IP | grep -q ' via $gw '"
fi
wait_pf_watching 60
traffic_barrier rping-start 120 || { tap_fail "the others never got ready"; tap_done; exit 1; }

# 1: each VF to the remote.
if [ "$SRIOV_ROLE" = remote ]; then
	rping_serve vf1-to-remote $((BASE + 1)) "$COUNT"
	p1=$RPING_PID
	rping_serve vf2-to-remote $((BASE + 2)) "$COUNT"
	p2=$RPING_PID
	rping_served vf1-to-remote "$p1" "$COUNT"
	rping_served vf2-to-remote "$p2" "$COUNT"
else
	rping_client "$SRIOV_NAME-to-remote" "$REMOTE_IP" $((BASE + SRIOV_SLAVE)) "$COUNT"
	rping_checked "$SRIOV_NAME-to-remote" "$COUNT"
fi
traffic_barrier rping-to-remote 150

# 2: the remote to each VF.
if [ "$SRIOV_ROLE" = remote ]; then
	rping_client remote-to-vf1 "$VF1_IP" $((BASE + 11)) "$COUNT" &
	c1=$!
	rping_client remote-to-vf2 "$VF2_IP" $((BASE + 12)) "$COUNT" &
	c2=$!
	wait "$c1" "$c2"
	rping_checked remote-to-vf1 "$COUNT"
	rping_checked remote-to-vf2 "$COUNT"
else
	rping_serve "remote-to-$SRIOV_NAME" $((BASE + 10 + SRIOV_SLAVE)) "$COUNT"
	rping_served "remote-to-$SRIOV_NAME" "$RPING_PID" "$COUNT"
fi
traffic_barrier rping-from-remote 150

# 3: VF to VF through the PF, both directions at once.
if [ "$SRIOV_ROLE" = vf ]; then
	vm_signal "vf-to-vf-$VM_TEST_INDEX"
	other=vf$((3 - SRIOV_SLAVE))
	rping_serve "$other-to-$SRIOV_NAME" $((BASE + 20 + SRIOV_SLAVE)) "$COUNT"
	server=$RPING_PID
	rping_client "$SRIOV_NAME-to-$other" "$OTHER_VF_IP" \
		$((BASE + 20 + 3 - SRIOV_SLAVE)) "$COUNT"
	rping_checked "$SRIOV_NAME-to-$other" "$COUNT"
	rping_served "$other-to-$SRIOV_NAME" "$server" "$COUNT"
fi
traffic_barrier rping-vf-to-vf 150
tap_done
