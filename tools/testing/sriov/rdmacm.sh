#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The RDMA CM's own tools and perftest through the emulated PF
# (tools/testing/sriov/run --vf-test and --remote-test), both VFs at
# once, each against servers on the remote: ucmatose -c 50 (RC, 50
# connections), udaddy -c 20 (UD, SIDR), ib_send_bw -R and ib_write_bw -R.
# The remote's udaddy listens on its fixed port for the 40 requests of
# both VFs.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"

UCMA_CONNS=${UCMA_CONNS:-50}
UD_CONNS=${UD_CONNS:-20}
MSGS=5
UCMA_PORT=7471
WRITE_BW_PORT=19500
SEND_BW_PORT=19000

if [ "$SRIOV_ROLE" = pf ]; then
	echo "# nothing to run on the PF"
	exit 0
fi
rxe_up || exit 1
wait_pf_watching 60
traffic_barrier rdmacm-start 120 || { tap_fail "the others never got ready"; tap_done; exit 1; }

# server_done NAME PID: one TAP point, the server PID (output in
# /tmp/NAME.out) exited 0.
server_done() {
	local rc

	wait "$2"
	rc=$?
	echo "# $1 server: exit status $rc"
	[ "$rc" = 0 ] || tail -n 8 "/tmp/$1.out" | sed -e "s/^/# $1 server: /"
	perftest_uncalibrated "/tmp/$1.out"
	tap_check "$1 server exit 0" test "$rc" = 0
}

# client NAME CMD...: run the client CMD once the remote's servers are
# up (retrying while a server is not listening yet); one TAP point.
client() {
	local name=$1 rc

	shift
	connect_retry 10 "/tmp/$name.out" run_with_timeout 150 "$@"
	rc=$?
	echo "# $name: exit status $rc"
	# on failure all of it: stderr's lines come before stdout's buffer
	if [ "$rc" = 0 ]; then
		tail -n 4 "/tmp/$name.out"
	else
		tail -n 40 "/tmp/$name.out"
	fi | sed -e "s/^/# $name: /"
	perftest_uncalibrated "/tmp/$name.out"
	tap_check "$name exit 0" test "$rc" = 0
}

# perftest_phase TOOL BASE: the remote serves TOOL -R on BASE + 100 *
# slave for one VF after the other, each VF's client starts once its
# server listens.  Two perftest servers started at once on the remote
# have rejected the second VF's REQ (REJ 8, no listener, while its cm_id
# showed LISTEN) and its client then crashed in librdmacm, with the
# distro's ib_cm and without the PV-CM cache as well.
perftest_phase() {
	local tool=$1 base=$2 s p pid

	for s in 1 2; do
		p=$((base + 100 * s))
		traffic_barrier "$tool-$p-start" 120
		if [ "$SRIOV_ROLE" = remote ]; then
			bg_with_timeout 200 "$tool" -d rxe0 -R "$PERFTEST_F" -n 500 \
				-s 4096 -p "$p" > "/tmp/$tool-vf$s.out" 2>&1
			pid=$!
			wait_cm_listening 60 "$p"
			vm_signal "$tool-$p-up"
			server_done "$tool-vf$s" "$pid"
		elif [ "$SRIOV_SLAVE" = "$s" ]; then
			if vm_wait "$tool-$p-up" 120; then
				client "$SRIOV_NAME $tool -R" "$tool" -d rxe0 -R \
					"$PERFTEST_F" -n 500 -s 4096 -p "$p" "$REMOTE_IP"
			else
				tap_fail "the remote's $tool server never started"
			fi
		fi
	done
}

if [ "$SRIOV_ROLE" = remote ]; then
	pids=() names=()
	for s in 1 2; do
		bg_with_timeout 240 ucmatose -b "$MY_IP" -p $((UCMA_PORT + s)) \
			-c "$UCMA_CONNS" -C "$MSGS" > "/tmp/ucmatose-vf$s.out" 2>&1
		pids+=($!) names+=("ucmatose-vf$s")
	done
	bg_with_timeout 240 udaddy -b "$MY_IP" -c $((2 * UD_CONNS)) -C "$MSGS" \
		> /tmp/udaddy-both.out 2>&1
	pids+=($!) names+=(udaddy-both)
	for p in $((UCMA_PORT + 1)) $((UCMA_PORT + 2)); do
		wait_cm_listening 60 "$p"
	done
	vm_signal rdmacm-up
	for i in "${!pids[@]}"; do
		server_done "${names[i]}" "${pids[i]}"
	done
elif vm_wait rdmacm-up 120; then
	client "$SRIOV_NAME ucmatose -c $UCMA_CONNS" ucmatose -s "$REMOTE_IP" \
		-b "$MY_IP" -p $((UCMA_PORT + SRIOV_SLAVE)) -c "$UCMA_CONNS" -C "$MSGS"
	client "$SRIOV_NAME udaddy -c $UD_CONNS" udaddy -s "$REMOTE_IP" \
		-b "$MY_IP" -c "$UD_CONNS" -C "$MSGS"
else
	tap_fail "the remote's servers never started"
fi
perftest_phase ib_send_bw "$SEND_BW_PORT"
perftest_phase ib_write_bw "$WRITE_BW_PORT"
traffic_barrier rdmacm-done 240
tap_done
