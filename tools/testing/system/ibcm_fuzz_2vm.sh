#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test for vm-run --vms 2, after ibcm_interop_2vm.sh (VM 0 runs our
# ib_cm, VM 1 the distribution's): mutated CM MADs from another node.
# VM 1 runs cm_mad_abuse --fuzz (CM_FUZZ, built by run-vm-tests) at VM 0
# while an rping that runs until stopped is connected between the two;
# the rping must go on pinging after the fuzzing, VM 0's CM must have
# received the MADs, a new rping must pass afterwards, and VM 0's ib_cm
# must unload with no cm_id left.  Any splat on either side fails the
# run.  FUZZ_MADS (default 20000) and FUZZ_SEED (default: random,
# printed) choose the MADs; the same seed sends the same ones.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

FUZZ=${CM_FUZZ:?CM_FUZZ not set}
MADS=${FUZZ_MADS:-20000}
SEED=${FUZZ_SEED:-0}
PORT=7185
COUNT=200
PORTDIR=/sys/class/infiniband/rxe0/ports/1

if [ "${VM_COUNT:-1}" -lt 2 ]; then
	echo "# needs vm-run --vms 2"
	exit 1
fi
rxe_up || exit 1

# rx_total: CM MADs this node's ib_cm counted as received
rx_total() {
	local f n=0

	for f in "$PORTDIR"/cm_rx_msgs/*; do
		n=$((n + $(cat "$f" 2> /dev/null || echo 0)))
	done
	echo "$n"
}

vm_barrier ibcm-fuzz-rxe 90 || { echo "# peer never got ready"; exit 1; }

if [ "$VM_INDEX" = 0 ]; then
	rx0=$(rx_total)
	# during: until the client stops; after: COUNT pings
	rping -s -a "$MY_IP" -p "$PORT" -v > /tmp/fuzz-rping-during.out 2>&1 &
	server=$!
	wait_cm_listening 20 "$PORT" "$server"
	vm_signal fuzz-server-during
	vm_wait fuzz-done 600
	run_with_timeout 60 tail --pid="$server" -f /dev/null
	kill "$server" 2> /dev/null
	wait "$server"
	echo "# server during the fuzzing: exit status $?, $(rping_pings /tmp/fuzz-rping-during.out) pings"
	# a MAD whose class version or method the fuzzer changed, or of an
	# unknown attribute, is not counted: about half are
	rx1=$(rx_total)
	echo "# CM MADs received: $rx0 -> $rx1"
	tap_check "the CM received the fuzzed MADs: $((rx1 - rx0)) of $MADS" \
		test $((rx1 - rx0)) -ge $((MADS / 4))

	rping -s -a "$MY_IP" -p "$PORT" -C "$COUNT" -v > /tmp/fuzz-rping-after.out 2>&1 &
	server=$!
	wait_cm_listening 20 "$PORT" "$server"
	vm_signal fuzz-server-after
	run_with_timeout 300 tail --pid="$server" -f /dev/null
	kill "$server" 2> /dev/null
	rping_wait "$server" /tmp/fuzz-rping-after.out "$COUNT"
	rc=$?
	tail -n 2 /tmp/fuzz-rping-after.out | sed -e "s/^/# server after: /"
	tap_check "rping server after the fuzzing exit 0" test "$rc" = 0

	# what the fuzzing left behind ends with its TimeWait; then unload
	vm_wait fuzz-client-done 120
	modprobe -r rdma_ucm ib_srpt ib_isert ib_iser ib_srp ib_ipoib rdma_cm iw_cm 2> /dev/null
	wait_until 60 rmmod ib_cm
	rc=$?
	tap_check "ib_cm unloads" test "$rc" = 0
	! dmesg | grep -qi 'ib_cm_id.*\(objects remaining\|still has objects\)'
	tap_check "no cm_id left in the ib_cm_id cache" test $? = 0
	tap_done
	exit $?
fi

# pinging N: the held rping runs and has made N pings
pinging() {
	kill -0 "$client" 2> /dev/null && [ "$(rping_pings /tmp/fuzz-rping-during.out)" -ge "$1" ]
}

modprobe ib_umad || echo "# modprobe ib_umad failed"
idx=$(roce_v2_gid_index rxe0 "$MY_IP")
tap_check "rxe0 has the RoCE v2 GID of $MY_IP" test -n "$idx"
vm_wait fuzz-server-during 60 || { echo "# server never started"; exit 1; }
# line buffered: pings() counts as they come
bg_with_timeout 600 stdbuf -oL rping -c -a "$PEER_IP" -p "$PORT" -v \
	> /tmp/fuzz-rping-during.out 2>&1
client=$!
wait_until 60 pinging 10
tap_check "rping connected before the fuzzing" pinging 10
"$FUZZ" -d rxe0 -i "${idx:-0}" -S "$MY_IP" -D "$PEER_IP" --fuzz "$MADS" \
	--seed "$SEED" > /tmp/fuzz.out 2>&1
frc=$?
sed -e 's/^/# cm_mad_abuse: /' /tmp/fuzz.out
tap_check "cm_mad_abuse --fuzz $MADS sent its MADs" test "$frc" = 0
n0=$(rping_pings /tmp/fuzz-rping-during.out)
wait_until 60 pinging $((n0 + 20))
tap_check "the rping went on after the fuzzing: $n0 -> $(rping_pings /tmp/fuzz-rping-during.out) pings" \
	pinging $((n0 + 20))
kill "$client" 2> /dev/null
wait "$client"
vm_signal fuzz-done

vm_wait fuzz-server-after 60 || { echo "# server never started again"; exit 1; }
connect_retry 15 /tmp/fuzz-rping-after.out run_with_timeout 120 \
	rping -c -a "$PEER_IP" -p "$PORT" -C "$COUNT" -v
crc=$?
pings=$(rping_pings /tmp/fuzz-rping-after.out)
tap_check "rping after the fuzzing: $pings of $COUNT pings, exit 0" \
	test "$crc" = 0 -a "$pings" = "$COUNT"
vm_signal fuzz-client-done
tap_done
