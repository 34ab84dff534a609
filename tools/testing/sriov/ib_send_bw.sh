#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# perftest ib_send_bw -R (connected through the RDMA CM) from each VF to a
# server on the remote, one VF after the other, through the emulated PF
# (tools/testing/sriov/run --vf-test and --remote-test).  Two perftest
# servers started at once on the remote have rejected the second VF's
# REQ (REJ 8 while its cm_id showed LISTEN) and its client then crashed in
# librdmacm, with plain forwarding and the distro's ib_cm as well.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"

BASE=${SEND_BW_PORT:-18515}
ITERS=${SEND_BW_ITERS:-500}
ARGS=(-d rxe0 -R "$PERFTEST_F" -n "$ITERS" -s 4096)

if [ "$SRIOV_ROLE" = pf ]; then
	echo "# nothing to run on the PF"
	exit 0
fi
rxe_up || exit 1
wait_pf_watching 60
traffic_barrier send-bw-start 120 || { tap_fail "the others never got ready"; tap_done; exit 1; }

if [ "$SRIOV_ROLE" = remote ]; then
	for s in 1 2; do
		bg_with_timeout 150 ib_send_bw "${ARGS[@]}" -p $((BASE + s)) \
			> "/tmp/send_bw-server-vf$s.out" 2>&1
		pid=$!
		# perftest's client has been seen to crash when rejected: the
		# VF starts only once its server listens.
		wait_cm_listening 60 $((BASE + s))
		vm_signal "send-bw-up-$s"
		wait "$pid"
		rc=$?
		echo "# server for vf$s: exit status $rc"
		[ "$rc" = 0 ] || sed -e "s/^/# server vf$s: /" "/tmp/send_bw-server-vf$s.out"
		perftest_uncalibrated "/tmp/send_bw-server-vf$s.out"
		tap_check "ib_send_bw server for vf$s exit 0" test "$rc" = 0
	done
else
	out=/tmp/send_bw-client.out
	if vm_wait "send-bw-up-$SRIOV_SLAVE" 200; then
		connect_retry 10 "$out" run_with_timeout 120 \
			ib_send_bw "${ARGS[@]}" -p $((BASE + SRIOV_SLAVE)) "$REMOTE_IP"
		rc=$?
	else
		echo "# the server never started" > "$out"
		rc=1
	fi
	# The result row: "4096 ITERS peak average msg-rate" after the header.
	bw=$(awk '/#bytes/ { getline; print; exit }' "$out")
	echo "# $SRIOV_NAME to the remote: exit status $rc"
	echo "# bytes iterations BW-peak[MB/s] BW-average[MB/s] MsgRate[Mpps]: $bw"
	[ "$rc" = 0 ] || sed -e 's/^/# client: /' "$out"
	perftest_uncalibrated "$out"
	tap_check "ib_send_bw $SRIOV_NAME to the remote exit 0" test "$rc" = 0
	tap_check "ib_send_bw $SRIOV_NAME bandwidth line" test -n "$bw"
fi
traffic_barrier send-bw-done 200
tap_done
