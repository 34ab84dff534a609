#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# rping between two guests (vm-run --vms 2): VM 0 serves, VM 1 connects to
# PEER_IP, retrying while the server is not up yet, and checks 100 pings.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

PORT=${RPING_PORT:-7175}
COUNT=100

if [ "${VM_COUNT:-1}" -lt 2 ]; then
	echo "# needs vm-run --vms 2"
	exit 1
fi

rxe_up || exit 1
vm_barrier rping-2vm-rxe 60 || { echo "# peer never brought rxe up"; exit 1; }

if [ "$VM_INDEX" = 0 ]; then
	rping -s -a "$MY_IP" -p "$PORT" -C "$COUNT" -v > /tmp/rping-server.out 2>&1 &
	server=$!
	wait_cm_listening 30 "$PORT" "$server"
	vm_signal rping-server-started
	run_with_timeout 120 tail --pid="$server" -f /dev/null
	kill "$server" 2> /dev/null
	rping_wait "$server" /tmp/rping-server.out "$COUNT"
	src=$?
	echo "# server exit status $src"
	tail -n 3 /tmp/rping-server.out | sed -e 's/^/# server: /'
	tap_check "rping server exit 0" test "$src" = 0
	tap_done
	exit $?
fi

vm_wait rping-server-started 60 || { echo "# server never started"; exit 1; }
OUT=/tmp/rping-client.out
connect_retry 15 "$OUT" run_with_timeout 60 \
	rping -c -a "$PEER_IP" -p "$PORT" -C "$COUNT" -v
crc=$?
pings=$(grep -c '^ping data: rdma-ping-' "$OUT")
echo "# client exit status $crc, $pings ping lines"
tail -n 2 "$OUT" | sed -e 's/^/# client: /'
tap_check "rping client exit 0" test "$crc" = 0
tap_check "rping client $COUNT pings" test "$pings" = "$COUNT"
tap_done
