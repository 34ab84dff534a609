#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# A misbehaving VF (tools/testing/sriov/run --vf-test and --remote-test,
# with pf_misbehave.sh on the PF): VF 1 sends, through ib_umad, CM MADs
# that name no connection of its own (cm_mad_abuse --malformed) and then
# a flood of REQs past its per-VF cap (--flood; the PF script lowers the
# cap to ABUSE_CAP first), while VF 2 runs rping to the remote: one
# connection that is up when the flood starts and one opened after it,
# with VF 1 at its cap.  Both must pass.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"

COUNT=${RPING_COUNT:-100}
BASE=${RPING_PORT:-7300}
FLOOD=${ABUSE_FLOOD:-300}

if [ "$SRIOV_ROLE" = pf ]; then
	echo "# nothing to run on the PF"
	exit 0
fi
rxe_up || exit 1
if [ "$SRIOV_NAME" = vf1 ]; then
	modprobe ib_umad || { tap_fail "modprobe ib_umad"; tap_done; exit 1; }
fi
wait_pf_watching 60
traffic_barrier abuse-start 120 || { tap_fail "the others never got ready"; tap_done; exit 1; }

pinging() {
	grep -q '^ping data: rdma-ping-' "/tmp/$1.out" 2> /dev/null
}

case "$SRIOV_NAME" in
remote)
	rping_serve during-flood $((BASE + 1)) "$COUNT"
	p1=$RPING_PID
	rping_served during-flood "$p1" "$COUNT"
	rping_serve after-flood $((BASE + 2)) "$COUNT"
	rping_served after-flood "$RPING_PID" "$COUNT"
	;;
vf2)
	rping_client during-flood "$REMOTE_IP" $((BASE + 1)) "$COUNT" &
	c1=$!
	wait_soon 60 pinging during-flood || echo "# no ping within 60 s"
	vm_signal vf2-pinging
	vm_wait abuse-done 120 || echo "# VF 1 never finished"
	wait "$c1"
	rping_checked during-flood "$COUNT"
	rping_client after-flood "$REMOTE_IP" $((BASE + 2)) "$COUNT"
	rping_checked after-flood "$COUNT"
	;;
vf1)
	vm_wait vf2-pinging 90 || echo "# VF 2 is not pinging; flooding anyway"
	vm_wait abuse-cap-set 30 || echo "# the PF did not lower the cap"
	if [ ! -x "$SRIOV_ABUSE" ]; then
		tap_fail "cm_mad_abuse built (SRIOV_ABUSE='$SRIOV_ABUSE')"
	elif ! idx=$(roce_v2_gid_index rxe0 "$MY_IP"); then
		tap_fail "rxe0 has a RoCE v2 GID of $MY_IP"
	else
		args=(-d rxe0 -i "$idx" -S "$MY_IP" -D "$REMOTE_IP")
		# an IPv4 datagram first: the gateway's MAC for the AH
		echo > "/dev/udp/$REMOTE_IP/9"
		"$SRIOV_ABUSE" "${args[@]}" --malformed > /tmp/abuse.out 2>&1
		tap_check "cm_mad_abuse --malformed sent its MADs" test $? = 0
		"$SRIOV_ABUSE" "${args[@]}" --flood "$FLOOD" >> /tmp/abuse.out 2>&1
		tap_check "cm_mad_abuse --flood $FLOOD sent its REQs" test $? = 0
		# a CM MAD in two IP fragments, for the PF to drop both
		"$(dirname "$0")/roce_cm.py" send eth0 "$MY_IP" "$REMOTE_IP" fragments
		tap_check "a CM MAD sent in two IP fragments" test $? = 0
		sed -e 's/^/# cm_mad_abuse: /' /tmp/abuse.out
		cp /tmp/abuse.out "$VM_SHARED/abuse.counts"
	fi
	vm_signal abuse-done
	;;
esac
traffic_barrier abuse-done 240
tap_done
