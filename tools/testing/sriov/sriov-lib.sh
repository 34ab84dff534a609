# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# shellcheck shell=bash
#
# Guest helpers for scripts run by tools/testing/sriov/run, sourced after
# guest-lib.sh:
#
#	. "$GUEST_LIB"
#	. "$SRIOV_LIB"
#
# The PF guest (index $PF_INDEX) only routes; the VFs and the remote carry
# the RDMA traffic.

# traffic_barrier NAME [SECONDS]: the VFs and the remote all got here (the
# PF runs other scripts, or none, in the same step).
traffic_barrier() {
	vm_barrier "$1" "${2:-60}" "$VF1_INDEX" "$VF2_INDEX" "$REMOTE_INDEX"
}

# step_done INDEX: guest INDEX has finished the current step.
step_done() {
	test -e "$VM_SHARED/../vm$1/test-$VM_TEST_INDEX.rc"
}

# wait_step_end [SECONDS]: for a PF script that watches a step: return
# once the VFs and the remote have finished their scripts of this step
# (or were killed: vm_kill_me).  SECONDS (of an idle host, as the
# guest-lib helpers') default to what is left of the step.
wait_step_end() {
	local end=$((SECONDS + $(scaled_secs "${1:-$(step_time_left 0)}"))) i

	for i in "$VF1_INDEX" "$VF2_INDEX" "$REMOTE_INDEX"; do
		while ! step_done "$i" && ! vm_wait "killed-vm$i" 0; do
			[ "$SECONDS" -lt "$end" ] || return 1
			vm_nap 0.5
		done
	done
}

# step_time_left MARGIN: the seconds this step's script has left before
# its time limit (VM_TEST_TIMEOUT, from the script's start), less MARGIN,
# and at least 1; in seconds of an idle host, as MARGIN and the SECONDS
# of the guest-lib helpers it is meant for.
step_time_left() {
	local left=$(((${VM_TEST_TIMEOUT:-300} - SECONDS) / ${VM_TIME_SCALE:-1} - $1))

	echo $((left > 0 ? left : 1))
}

# pf_watching: a PF script that counts a step's traffic tells the others
# that it is ready (after the step's barrier, before their first packet).
pf_watching() {
	vm_signal "pf-watching-$VM_TEST_INDEX"
}

# wait_pf_watching [SECONDS]: in a traffic script, before its first
# packet: when the PF runs a script in this step, wait up to SECONDS
# (default 60) for it to call pf_watching.  If it does not, its baseline
# would be taken in the middle of the traffic: one failed point, and the
# traffic runs all the same.
wait_pf_watching() {
	local pf_script

	pf_script=$(sed -n "${VM_TEST_INDEX}p" "$VM_SHARED/../vm$PF_INDEX/tests")
	[ "${pf_script##*/}" = idle.sh ] && return 0
	vm_wait "pf-watching-$VM_TEST_INDEX" "${1:-60}" && return 0
	tap_fail "the PF's ${pf_script##*/} was watching before the traffic"
	return 1
}

# rping_serve NAME PORT COUNT: an rping server on MY_IP:PORT in the
# background (its PID in RPING_PID, output in /tmp/NAME.out); tells the
# others "NAME-up".
# shellcheck disable=SC2034
rping_serve() {
	local name=$1 port=$2 count=$3

	bg_with_timeout 300 rping -s -a "$MY_IP" -p "$port" -C "$count" -v \
		> "/tmp/$name.out" 2>&1
	RPING_PID=$!
	wait_cm_listening 30 "$port" "$RPING_PID"
	vm_signal "$name-up"
}

# rping_served NAME PID COUNT: one TAP point, the server PID ended well
# after COUNT pings.
rping_served() {
	local name=$1 pid=$2 count=$3 rc

	rping_wait "$pid" "/tmp/$name.out" "$count"
	rc=$?
	echo "# $name: server exit status $rc"
	[ "$rc" = 0 ] || sed -e "s/^/# $name server: /" "/tmp/$name.out"
	tap_check "$name: server ($SRIOV_NAME) exit 0" test "$rc" = 0
}

# rping_client NAME IP PORT COUNT: an rping client once NAME is up
# (output in /tmp/NAME.out, status in /tmp/NAME.rc); no TAP point.
rping_client() {
	local name=$1 ip=$2 port=$3 count=$4 out=/tmp/$1.out rc

	if ! vm_wait "$name-up" 120; then
		echo "# $name: the server never started" > "$out"
		echo 1 > "/tmp/$name.rc"
		return 1
	fi
	connect_retry 15 "$out" run_with_timeout 240 \
		rping -c -a "$ip" -p "$port" -C "$count" -v
	rc=$?
	echo "$rc" > "/tmp/$name.rc"
	return "$rc"
}

# rping_checked NAME COUNT: TAP points for the client of rping_client.
rping_checked() {
	local name=$1 count=$2 out=/tmp/$1.out rc pings

	rc=$(cat "/tmp/$name.rc" 2> /dev/null)
	pings=$(grep -c '^ping data: rdma-ping-' "$out")
	echo "# $name: client exit status ${rc:-none}, $pings ping lines"
	# what rping said besides its pings: its error (stderr is not
	# buffered, stdout is: the error may stand before the last pings,
	# or inside one of them)
	[ "$rc" = 0 ] || grep -v '^ping data: rdma-ping-' "$out" | tail -n 8 |
		sed -e "s/^/# $name client: /"
	tap_check "$name: client ($SRIOV_NAME) exit 0" test "$rc" = 0
	tap_check "$name: $count pings" test "$pings" = "$count"
}
