#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test for vm-run --vms 2: a REQ that is never answered.  VM 1 drops
# its outgoing RoCE v2 packets (UDP 4791) with tc, so its CM retransmits the
# REQ (rdma_cm asks for 15 retries) and finally reports IB_CM_REQ_ERROR,
# which rdma_cm turns into RDMA_CM_EVENT_UNREACHABLE.  Then the filter goes,
# the client connects to VM 0, and ib_cm unloads without a leaked cm_id.
# (A single guest cannot do this: rxe loops local traffic back internally.)

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

PORT=7401
if [ "${VM_COUNT:-1}" -lt 2 ]; then
	echo "# needs vm-run --vms 2"
	exit 1
fi
rxe_up || exit 1
vm_barrier ibcm-to-rxe 90 || { echo "# peer never brought rxe up"; exit 1; }

if [ "$VM_INDEX" = 0 ]; then
	rping -s -a "$MY_IP" -p "$PORT" -C 5 -v > /tmp/to-server.out 2>&1 &
	server=$!
	wait_cm_listening 30 "$PORT" "$server"
	vm_signal ibcm-to-server-up
	vm_wait ibcm-to-client-done 400
	run_with_timeout 20 tail --pid="$server" -f /dev/null
	kill "$server" 2> /dev/null
	rping_wait "$server" /tmp/to-server.out 5
	src=$?
	tail -n 2 /tmp/to-server.out | sed -e 's/^/# server: /'
	tap_check "server served the second attempt" test "$src" = 0
	tap_done
	exit $?
fi

P=/sys/class/infiniband/rxe0/ports/1
vm_wait ibcm-to-server-up 90 || { echo "# server never started"; exit 1; }

tc qdisc add dev "$VM_NETDEV" root handle 1: prio &&
	tc filter add dev "$VM_NETDEV" parent 1: protocol ip prio 1 u32 \
		match ip protocol 17 0xff match ip dport 4791 0xffff action drop
tap_check "outgoing RoCE traffic blocked" test $? = 0

retr0=$(cat $P/cm_tx_retries/req)
start=$(date +%s)
# the CM's retry timers give up on the clock: timeout(1), not scaled
timeout -k 5 300 rping -c -a "$PEER_IP" -p "$PORT" -C 5 -v > /tmp/to-client.out 2>&1
crc=$?
took=$(($(date +%s) - start))
retr1=$(cat $P/cm_tx_retries/req)
echo "# client status $crc after ${took}s; REQ retries $retr0 -> $retr1"
tail -n 3 /tmp/to-client.out | sed -e 's/^/# client: /'
tap_check "client gave up by itself" \
	test "$crc" != 0 -a "$crc" != 124 -a "$crc" != 137
tap_check "rdma_cm reported the peer unreachable" \
	grep -q UNREACHABLE /tmp/to-client.out
tap_check "the REQ was retransmitted" test "$retr1" -gt "$retr0"

tc qdisc del dev "$VM_NETDEV" root
connect_retry 3 /tmp/to-client2.out \
	run_with_timeout 60 rping -c -a "$PEER_IP" -p "$PORT" -C 5 -v
crc=$?
vm_signal ibcm-to-client-done
tap_check "connection works once traffic flows again" test "$crc" = 0

sleep 3
modprobe -r rdma_ucm ib_srpt ib_isert ib_iser ib_srp ib_ipoib rdma_cm iw_cm 2> /dev/null
rmmod ib_cm
tap_check "ib_cm unloads" test $? = 0
! dmesg | grep -qi 'ib_cm_id.*\(objects remaining\|still has objects\)'
tap_check "no cm_id left in the ib_cm_id cache" test $? = 0
tap_done
