#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test: remove the RDMA device under live connections.  An rping pair
# is running when rxe0 is deleted; device removal must not wait for cm_ids,
# must not splat (the rig checks the kernel log) and the CM must work again
# on a new device afterwards.  Finally ib_cm must unload without leaking a
# cm_id (its kmem_cache reports leftovers on rmmod).

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

rxe_up || exit 1

rping -s -a "$MY_IP" -p 7301 -C 100000 > /tmp/rm-server.out 2>&1 &
server=$!
# The client is not retried: start it once the server listens.
wait_cm_listening 30 7301 "$server"
rping -c -v -a "$MY_IP" -p 7301 -C 100000 > /tmp/rm-client.out 2>&1 &
client=$!
wait_until 60 grep -q 'ping data' /tmp/rm-client.out
sleep 2
started=$(grep -c 'ping data' /tmp/rm-client.out)
echo "# client made $started pings before removal"

# rxe cannot disassociate user contexts, so the verbs layer waits for the
# rping processes to go; kill them once removal is under way.
start=$(date +%s)
run_with_timeout 90 rdma link delete rxe0 &
deleter=$!
sleep 5
echo "# removal under way; killing rping"
kill -9 "$client" "$server" 2> /dev/null
wait "$client" "$server" 2> /dev/null
wait "$deleter"
drc=$?
took=$(($(date +%s) - start))
echo "# rdma link delete: status $drc after ${took}s"
tail -n 2 /tmp/rm-client.out | sed -e 's/^/# client: /'

tap_check "connection was up before removal" test "$started" -gt 0
tap_check "device removal completes" test "$drc" = 0
tap_check "removal did not hang (${took}s)" test "$took" -lt "$(scaled_secs 60)"

rxe_up
tap_check "rxe0 is back" rxe_port_active rxe0
rping -s -a "$MY_IP" -p 7302 -C 10 > /tmp/rm2-server.out 2>&1 &
server=$!
wait_cm_listening 30 7302 "$server"
connect_retry 3 /tmp/rm2-client.out \
	run_with_timeout 60 rping -c -a "$MY_IP" -p 7302 -C 10 -v
crc=$?
wait "$server"
tap_check "rping works on the new device" test "$crc" = 0

sleep 3
modprobe -r rdma_ucm ib_srpt ib_isert ib_iser ib_srp ib_ipoib rdma_cm iw_cm 2> /dev/null
rmmod ib_cm
tap_check "ib_cm unloads" test $? = 0
! dmesg | grep -qi 'ib_cm_id.*\(objects remaining\|still has objects\)'
tap_check "no cm_id left in the ib_cm_id cache" test $? = 0
tap_done
