#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# A VF guest dies in the middle of ucmatose (tools/testing/sriov/run
# --vf-test and --remote-test, pf_vf_kill.sh on the PF; the last step of a
# run, since VF 1 does not come back).  Both VFs run ucmatose -c 50 with
# many messages per connection to servers on the remote; once both have
# their connections up, VF 1 has the host kill its QEMU (vm_kill_me: no
# shutdown, no DREQ).  VF 2's ucmatose must carry on to its end, and a
# new rping from VF 2 must pass after the PF cleaned VF 1's ids.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"

CONNS=${UCMA_CONNS:-50}
MSGS=${KILL_MSGS:-100}
PORT=7481

if [ "$SRIOV_ROLE" = pf ]; then
	echo "# nothing to run on the PF"
	exit 0
fi
rxe_up || exit 1
wait_pf_watching 20
traffic_barrier kill-start 120 || { tap_fail "the others never got ready"; tap_done; exit 1; }

connected() {
	[ "$(rdma resource show cm_id 2> /dev/null | grep -c 'state CONNECT ')" -ge "$1" ]
}

case "$SRIOV_NAME" in
remote)
	for s in 1 2; do
		bg_with_timeout 280 ucmatose -b "$MY_IP" -p $((PORT + s)) \
			-c "$CONNS" -C "$MSGS" > "/tmp/ucma-vf$s.out" 2>&1
		eval "p$s=\$!"
	done
	for s in 1 2; do
		wait_until 60 cm_listening $((PORT + s)) || echo "# nothing listens on $((PORT + s))"
	done
	vm_signal kill-up
	# shellcheck disable=SC2154
	wait "$p2"
	rc=$?
	echo "# ucmatose server for vf2: exit status $rc"
	[ "$rc" = 0 ] || tail -n 8 /tmp/ucma-vf2.out | sed -e 's/^/# server vf2: /'
	tap_check "ucmatose server for vf2 exit 0" test "$rc" = 0
	# VF 1's server waits for a peer that is gone; it may fail
	# shellcheck disable=SC2154
	kill "$p1" 2> /dev/null
	wait "$p1"
	echo "# ucmatose server for the killed vf1: exit status $?"
	rping_serve after-kill 7491 100
	rping_served after-kill "$RPING_PID" 100
	;;
vf1)
	vm_wait kill-up 120 || echo "# the remote's servers never started"
	bg_with_timeout 280 ucmatose -s "$REMOTE_IP" -b "$MY_IP" -p $((PORT + 1)) \
		-c "$CONNS" -C "$MSGS" > /tmp/ucma.out 2>&1
	wait_until 120 connected "$CONNS"
	tap_check "vf1: $CONNS connections up" connected "$CONNS"
	vm_wait vf2-connected 120 || echo "# vf2 never connected"
	echo "# vf1: asking the host to kill this guest"
	vm_kill_me
	;;
vf2)
	vm_wait kill-up 120 || echo "# the remote's servers never started"
	bg_with_timeout 280 ucmatose -s "$REMOTE_IP" -b "$MY_IP" -p $((PORT + 2)) \
		-c "$CONNS" -C "$MSGS" > /tmp/ucma.out 2>&1
	pid=$!
	wait_until 120 connected "$CONNS"
	tap_check "vf2: $CONNS connections up" connected "$CONNS"
	vm_signal vf2-connected
	wait "$pid"
	rc=$?
	running=0
	vm_wait killed-vm"$VF1_INDEX" 0 && running=1
	echo "# vf2 ucmatose: exit status $rc"
	tail -n 4 /tmp/ucma.out | sed -e 's/^/# vf2 ucmatose: /'
	tap_check "vf2: ucmatose was still running when vf1 was killed" test "$running" = 1
	tap_check "vf2: ucmatose exit 0" test "$rc" = 0
	vm_wait vf1-cleaned 60 || echo "# the PF never cleaned vf1"
	rping_client after-kill "$REMOTE_IP" 7491 100
	rping_checked after-kill 100
	;;
esac
# VF 1 is gone: the barrier is the others'
vm_barrier kill-done 300 "$VF2_INDEX" "$REMOTE_INDEX"
tap_done
