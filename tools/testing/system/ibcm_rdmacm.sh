#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test: librdmacm tools over soft-RoCE through our ib_cm (which the
# rig insmods before rdma_cm is pulled in): ucmatose (RC connect/transfer/
# disconnect), udaddy (UD via SIDR_REQ/SIDR_REP), rdma_server/rdma_client,
# ib_send_bw -R; then counters, a REJ for a port nobody listens on, and a
# clean unload of ib_cm (no cm_id left in its kmem_cache).  Each client
# starts once its server listens.  A server that waits for the ACK that
# rdma_rxe lost (rxe_lost_last_ack, seen with rdma_server on 7.2) after a
# client that passed is stopped and passes; any other server still running
# after its client fails, and is shown (its stacks, the CM IDs and QPs).

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

rxe_up || exit 1
PORTDIR=/sys/class/infiniband/rxe0/ports/1

ctr() {
	cat "$PORTDIR/$1/$2" 2> /dev/null || echo 0
}

# gone PID: PID has ended.
gone() {
	! kill -0 "$1" 2> /dev/null
}

# server_lost_ack: server_client's server (the child of timeout PID
# $spid) waits for the ACK that rdma_rxe lost (rxe_lost_last_ack): show
# it, stop it (which also answers the client's DREQ), and set lost.
server_lost_ack() {
	local pid=''

	# read, not pgrep: no program started on each try (where the kernel
	# has the file)
	read -r pid _ < "/proc/$spid/task/$spid/children" 2> /dev/null
	[ -n "$pid" ] || pid=$(pgrep -P "$spid")
	rxe_lost_last_ack "$pid" rxe0 || return 1
	echo "# $name: rdma_rxe lost the ACK of the server's last send" \
		"(more than $RXE_RETRY_MAX retries), after rdma_cm recorded" \
		"the disconnect: server stopped"
	show_stuck "$name" "$pid"
	lost=1
	kill "$spid" 2> /dev/null
	return 0
}

# gone_or_lost_ack PID: PID (server_client's client or server) has ended,
# or the server waits for a lost ACK.
gone_or_lost_ack() {
	gone "$1" || server_lost_ack
}

# server_client NAME PORT SERVER_CMD -- CLIENT_CMD: the client starts once
# the server listens on PORT; both must exit 0.  The one exception is a
# server that waits for the ACK of its last send that rdma_rxe lost
# (server_lost_ack), after a client that passed: shown, stopped and said.
# Any other server still running a minute (scaled) after its client ended
# is shown (what it waits for, the CM IDs, the QPs), then stopped.
server_client() {
	local name=$1 port=$2 srv=() cli=() spid cpid src crc lost=0

	shift 2
	while [ "$1" != "--" ]; do
		srv+=("$1")
		shift
	done
	shift
	cli=("$@")
	bg_with_timeout 90 "${srv[@]}" > "/tmp/$name-server.out" 2>&1
	spid=$!
	wait_cm_listening 30 "$port" "$spid"
	RXE_SEEN=
	connect_retry 5 "/tmp/$name-client.out" \
		run_with_timeout 60 "${cli[@]}" &
	cpid=$!
	# The client's own limits end this wait.
	wait_until 400 gone_or_lost_ack "$cpid"
	wait "$cpid"
	crc=$?
	if [ "$lost" = 0 ] && ! wait_until 60 gone_or_lost_ack "$spid"; then
		echo "# $name: the server still runs $(scaled_secs 60) s after its client ended"
		# shellcheck disable=SC2046 # timeout's child, the server
		show_stuck "$name" $(pgrep -P "$spid")
		kill "$spid" 2> /dev/null
	fi
	wait "$spid"
	src=$?
	echo "# $name: client exit $crc, server exit $src"
	tail -n 3 "/tmp/$name-client.out" | sed -e "s/^/# $name client: /"
	tail -n 3 "/tmp/$name-server.out" | sed -e "s/^/# $name server: /"
	tap_check "$name client" test "$crc" = 0
	# stopped for the lost ACK: only after a client that passed
	tap_check "$name server" test "$src" = 0 -o \
		\( "$lost" = 1 -a "$src" = 143 -a "$crc" = 0 \)
}

grep -q '^ib_cm ' /proc/modules
tap_check "ib_cm loaded" test $? = 0
# The distro ib_cm publishes the same counters: compare the module itself.
ours=
for ko in $VM_INSMOD; do
	[ "$(modinfo -F name "$ko")" = ib_cm ] && ours=$ko
done
tap_check "ib_cm is ours (the --insmod file)" \
	test -n "$ours" -a -d "$PORTDIR/cm_tx_msgs"
tap_check "loaded ib_cm has the srcversion of $ours" module_is_file ib_cm "$ours"

req0=$(ctr cm_rx_msgs req)
server_client ucmatose 7471 ucmatose -b "$MY_IP" -c 4 -C 20 -- \
	ucmatose -s "$MY_IP" -c 4 -C 20
server_client udaddy 7174 udaddy -b "$MY_IP" -c 2 -C 10 -- \
	udaddy -s "$MY_IP" -c 2 -C 10
server_client rdma_xserver 7471 rdma_server -s "$MY_IP" -- \
	rdma_client -s "$MY_IP"
server_client ib_send_bw 18515 ib_send_bw -R "$PERFTEST_F" -n 200 -- \
	ib_send_bw -R "$PERFTEST_F" -n 200 "$MY_IP"
perftest_uncalibrated /tmp/ib_send_bw-client.out /tmp/ib_send_bw-server.out

req1=$(ctr cm_rx_msgs req)
sreq=$(ctr cm_rx_msgs sidr_req)
dreq=$(ctr cm_tx_msgs dreq)
echo "# counters: rx req $req0 -> $req1, rx sidr_req $sreq, tx dreq $dreq"
tap_check "REQs counted" test "$req1" -ge $((req0 + 6))
tap_check "SIDR_REQs counted" test "$sreq" -ge 2
tap_check "DREQs counted" test "$dreq" -ge 1

# Nobody listens on this port: rdma_cm must see a REJ (not a timeout).
rej0=$(ctr cm_tx_msgs rej)
run_with_timeout 30 rping -c -a "$MY_IP" -p 7999 -C 1 > /tmp/rej.out 2>&1
rej1=$(ctr cm_tx_msgs rej)
echo "# tx rej $rej0 -> $rej1"
tap_check "REQ to an unused service is rejected" test "$rej1" -gt "$rej0"

sleep 3
modprobe -r rdma_ucm ib_srpt ib_isert ib_iser ib_srp ib_ipoib rdma_cm iw_cm 2> /dev/null
rmmod ib_cm
rc=$?
tap_check "ib_cm unloads" test "$rc" = 0
! dmesg | grep -qi 'ib_cm_id.*\(objects remaining\|still has objects\)'
tap_check "no cm_id left in the ib_cm_id cache" test $? = 0
tap_done
