#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test for vm-run --vms 2: our ib_cm against the distribution's.
# VM 1 swaps our module for the distro ib_cm; VM 0 keeps ours.  rping then
# runs both ways: ours active / distro passive, and distro active / ours
# passive.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

if [ "${VM_COUNT:-1}" -lt 2 ]; then
	echo "# needs vm-run --vms 2"
	exit 1
fi

if [ "$VM_INDEX" = 1 ]; then
	modprobe -r rdma_ucm ib_srpt ib_isert ib_iser ib_srp ib_ipoib rdma_cm iw_cm 2> /dev/null
	rmmod ib_cm 2> /dev/null
	modprobe rdma_ucm
fi
rxe_up || exit 1
srcfile=$(modinfo -F filename ib_cm)
if [ -d /sys/class/infiniband/rxe0/ports/1/cm_tx_msgs ] &&
   [ "$(cat /sys/module/ib_cm/srcversion 2> /dev/null)" != \
     "$(modinfo -F srcversion "$srcfile" 2> /dev/null)" ]; then
	which=ours
else
	which=distro
fi
echo "# vm$VM_INDEX runs the $which ib_cm"
if [ "$VM_INDEX" = 0 ]; then
	tap_check "VM 0 runs our ib_cm" test "$which" = ours
else
	tap_check "VM 1 runs the distro ib_cm" test "$which" = distro
fi
vm_barrier ibcm-io-rxe 90 || { echo "# peer never got ready"; exit 1; }

# serve_or_connect SERVER_VM PORT NAME
serve_or_connect() {
	local srv=$1 port=$2 name=$3 pid rc

	if [ "$VM_INDEX" = "$srv" ]; then
		rping -s -a "$MY_IP" -p "$port" -C 20 -v > "/tmp/$name.out" 2>&1 &
		pid=$!
		wait_cm_listening 30 "$port" "$pid"
		vm_signal "$name-up"
		run_with_timeout 120 tail --pid="$pid" -f /dev/null
		kill "$pid" 2> /dev/null
		rping_wait "$pid" "/tmp/$name.out" 20
		rc=$?
		tap_check "$name: server ($which) exit 0" test "$rc" = 0
	else
		vm_wait "$name-up" 90
		connect_retry 5 "/tmp/$name.out" run_with_timeout 60 \
			rping -c -a "$PEER_IP" -p "$port" -C 20 -v
		rc=$?
		tap_check "$name: client ($which) exit 0" test "$rc" = 0
		tap_check "$name: 20 pings" \
			test "$(grep -c 'ping data' "/tmp/$name.out")" = 20
	fi
	vm_barrier "$name-done" 150
}

serve_or_connect 1 7501 ours-to-distro
serve_or_connect 0 7502 distro-to-ours
tap_done
