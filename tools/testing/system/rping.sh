#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# rping over soft-RoCE to the guest's own address: an rping server and a
# client doing 100 verified ping-pongs through the RDMA CM (ib_cm, rdma_cm).
# RPING_PORT / RPING_CLIENT_PORT override the ports (a wrong client port must
# make the test fail).

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

PORT=${RPING_PORT:-7174}
CPORT=${RPING_CLIENT_PORT:-$PORT}
COUNT=100
OUT=/tmp/rping-client.out

rxe_up || exit 1

rping -s -a "$MY_IP" -p "$PORT" -C "$COUNT" -v > /tmp/rping-server.out 2>&1 &
server=$!
wait_cm_listening 30 "$PORT" "$server"

connect_retry 10 "$OUT" run_with_timeout 60 \
	rping -c -a "$MY_IP" -p "$CPORT" -C "$COUNT" -v
crc=$?
pings=$(grep -c '^ping data: rdma-ping-' "$OUT")
echo "# client exit status $crc, $pings ping lines"
head -n 2 "$OUT" | sed -e 's/^/# client: /'
tail -n 2 "$OUT" | sed -e 's/^/# client: /'

# The server ends by itself after a good run; after a failed one, stop it.
[ "$crc" = 0 ] && run_with_timeout 30 tail --pid="$server" -f /dev/null
kill "$server" 2> /dev/null
rping_wait "$server" /tmp/rping-server.out "$COUNT"
src=$?
echo "# server exit status $src"
tail -n 2 /tmp/rping-server.out | sed -e 's/^/# server: /'

tap_check "rping client exit 0" test "$crc" = 0
tap_check "rping client $COUNT pings" test "$pings" = "$COUNT"
tap_check "rping server exit 0" test "$src" = 0

# With the project's ib_cm.ko (vm-run --insmod), the CM that rdma_cm used
# must be that file.
for ko in $VM_INSMOD; do
	[ "$(modinfo -F name "$ko")" = ib_cm ] || continue
	holders=(/sys/module/ib_cm/holders/*)
	echo "# ib_cm holders: ${holders[*]##*/}"
	tap_check "ib_cm in use is the project's" module_is_file ib_cm "$ko"
	tap_check "rdma_cm runs on it" test -e /sys/module/ib_cm/holders/rdma_cm
done
tap_done
