#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test: a failing-allocation sweep through our ib_cm (test build:
# <debugfs>/ib_cm/fail_nth, drivers/infiniband/core/cm_fault.c).  For each
# scenario the n-th allocation ib_cm attempts fails, n = 1, 2, ..., until
# a run meets no fault:
#
#   connect   rping server and client: REQ, REP, RTU, data, DREQ, DREP
#             (connect, accept and disconnect on both sides)
#   reject    rping to a port nobody listens on: REQ, REJ
#   sidr      udaddy server and client: SIDR_REQ, SIDR_REP, UD data
#
# Every run must end with the failure reported to the consumer (an error
# from a call or an error event) or recovered by the protocol's retries,
# never in silence and never with a thread stuck in the kernel; the run
# that met no fault must do what the scenario does without faults; after
# each run no cm_id is left (<debugfs>/ib_cm/cm_ids).  The rig fails the
# test on any splat.
#
# FAIL_NTH_MAX (default 200) bounds each sweep.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

KNOB=/sys/kernel/debug/ib_cm
MAX=${FAIL_NTH_MAX:-200}

[ -d /sys/kernel/debug/ib_cm ] || mount -t debugfs none /sys/kernel/debug 2> /dev/null
if [ ! -w "$KNOB/fail_nth" ]; then
	tap_fail "ib_cm has the test fault hook ($KNOB/fail_nth)"
	tap_done
	exit 1
fi
rxe_up || exit 1

# The consumer was told: rping/udaddy print these when a call fails or an
# error event arrives.
REPORTED='(connect|accept|listen|bind|resolve|rdma_[a-z_]*)[ :].*(error|fail|Cannot)|RDMA_CM_EVENT_(REJECTED|UNREACHABLE|CONNECT_ERROR|ADDR_ERROR|ROUTE_ERROR)|error -?[0-9]+'

# reported OUT: OUT has a line that says the consumer was told, read in
# the shell itself: this runs every 0.2 s of every run of the sweep, and
# a grep each time cost the host more CPU than the runs themselves.
reported() {
	local line

	# (a last line without its newline too, as grep reads it)
	while IFS= read -r line || [ -n "$line" ]; do
		[[ $line =~ $REPORTED ]] && return 0
	done < "$1"
	return 1
}

# bounded SECS OUT CMD...: CMD with output to OUT.  Status: CMD's own;
# 125 when CMD reported an error (REPORTED) but did not exit within 1 s
# after (rping does not always exit after a failed connect: its main
# thread joins a completion thread that waits for events forever); 124
# when it neither finished nor reported anything within SECS (times
# VM_TIME_SCALE, as the guest-lib helpers' SECONDS), counted in polls of
# 0.2 s, which stretch on a busy guest.  Before a kill, where each
# thread waits (user space or kernel, and its state) is appended to OUT,
# so that a thread stuck in the kernel (state D) shows.
bounded() {
	local polls=$(($(scaled_secs "$1") * 5)) out=$2 pid t i grace=-1 rc=124

	shift 2
	# emptied here, not by the child's redirection: the first poll may
	# come before the child runs, and must not read the last run's lines
	: > "$out"
	"$@" > "$out" 2>&1 &
	pid=$!
	for ((i = 0; i < polls; i++)); do
		kill -0 "$pid" 2> /dev/null || break
		if [ "$grace" -lt 0 ] && reported "$out"; then
			grace=5
		fi
		if [ "$grace" -ge 0 ]; then
			grace=$((grace - 1))
			[ "$grace" -ge 0 ] || { rc=125; break; }
		fi
		vm_nap 0.2
	done
	if kill -0 "$pid" 2> /dev/null; then
		for t in /proc/"$pid"/task/*; do
			echo "# left $1 thread ${t##*/}: state" \
				"$(awk '{ print $3 }' "$t/stat" 2> /dev/null)" \
				"in $(cat "$t/wchan" 2> /dev/null)"
		done >> "$out"
		kill -9 "$pid" 2> /dev/null
		wait "$pid" 2> /dev/null
		return "$rc"
	fi
	wait "$pid"
}

# stuck_in_kernel OUT: a thread was left in uninterruptible sleep.
stuck_in_kernel() {
	grep -q '^# left .* state D ' "$1"
}

port=7400
# run_connect OUT: an rping pair on a new port; status 0 = 3 pings done.
run_connect() {
	local out=$1 server rc

	port=$((port + 1))
	bg_with_timeout 90 rping -s -a "$MY_IP" -p "$port" -C 3 > "$out.s" 2>&1
	server=$!
	wait_until 10 cm_listening_or_gone "$port" "$server"
	bounded 60 "$out" rping -c -v -a "$MY_IP" -p "$port" -C 3
	rc=$?
	rping_exit_race "$rc" "$out" rping -v -C 3 && rc=0
	kill "$server" 2> /dev/null
	wait "$server" 2> /dev/null
	[ "$rc" = 0 ] && [ "$(grep -c 'ping data' "$out")" = 3 ] && return 0
	return "$rc"
}

# run_reject OUT: status 0 = the REQ was refused with a REJ.
run_reject() {
	local rc

	bounded 60 "$1" rping -c -v -a "$MY_IP" -p 7399 -C 1
	rc=$?
	# Refused as it should be (rping then exits with an error).
	grep -q 'RDMA_CM_EVENT_REJECTED' "$1" && return 0
	[ "$rc" = 0 ] && return 1
	return "$rc"
}

# run_sidr OUT: status 0 = the UD client resolved and exchanged data.
run_sidr() {
	local out=$1 server rc

	bg_with_timeout 90 udaddy -b "$MY_IP" -c 1 -C 3 > "$out.s" 2>&1
	server=$!
	wait_until 10 cm_listening_or_gone 7174 "$server"
	bounded 60 "$out" udaddy -s "$MY_IP" -c 1 -C 3
	rc=$?
	kill "$server" 2> /dev/null
	wait "$server" 2> /dev/null
	[ "$rc" = 0 ] && grep -q 'test complete' "$out" && return 0
	[ "$rc" = 0 ] && return 1
	return "$rc"
}

# cm_ids: local communication IDs ib_cm holds (the hook's count).
cm_ids() {
	cat "$KNOB/cm_ids"
}

# no_cm_ids: none is left.  Polled after every run of the sweep, so
# read by the shell itself (no program), as no_pins below.
no_cm_ids() {
	local n

	read -r n < "$KNOB/cm_ids" && [ "$n" = 0 ]
}

# no_pins: no MAD agent pin is held (a kept one blocks device removal).
no_pins() {
	local n

	read -r n < "$KNOB/agent_pins" && [ "$n" = 0 ]
}

# fault_site: where the allocation failed last, as "site <- caller <- ...".
fault_site() {
	sed -e 's/+0x.*//' -e 's/ \[.*//' "$KNOB/last_fault" 2> /dev/null |
		head -n 4 | paste -sd ' ' | sed 's/ / <- /g'
}

# now_ms: wall clock in milliseconds (bash's EPOCHREALTIME).
now_ms() {
	local us=${EPOCHREALTIME/[.,]/}

	echo $((us / 1000))
}

# secs_since MS: seconds since now_ms said MS, one decimal.
secs_since() {
	local d=$(($(now_ms) - $1))

	printf '%d.%d' $((d / 1000)) $((d % 1000 / 100))
}

# sweep NAME: the fail-nth sweep of run_NAME.
sweep() {
	local name=$1 out=/tmp/fnth-$1.out n rc left final=1 t0 t1 took
	local silent=0 dstate=0 leaks=0 late=0 reported=0 stayed=0 recovered=0
	local pins=0

	for ((n = 1; n <= MAX; n++)); do
		echo "$n" > "$KNOB/fail_nth"
		t0=$(now_ms)
		"run_$name" "$out"
		rc=$?
		took=$(secs_since "$t0")
		t1=$(now_ms)
		left=$(cat "$KNOB/fail_nth")
		echo 0 > "$KNOB/fail_nth"
		if stuck_in_kernel "$out"; then
			dstate=$((dstate + 1))
			echo "# $name: n=$n: a thread was stuck in the kernel"
		fi
		if [ "$rc" = 124 ]; then
			silent=$((silent + 1))
			echo "# $name: n=$n: no result and no error within the limit"
		fi
		if [ "$rc" = 124 ] || stuck_in_kernel "$out"; then
			grep -v '^# ' "$out" | tail -n 3 | sed 's/^/#   /'
			grep '^# left ' "$out" | sed 's/^/#   /'
		fi
		if [ "$left" != 0 ]; then
			final=$rc
			break
		fi
		case $rc in
		0) recovered=$((recovered + 1)) ;;
		125) stayed=$((stayed + 1)); reported=$((reported + 1)) ;;
		124) ;;
		*) reported=$((reported + 1)) ;;
		esac
		# What a failed run left behind must go once the protocol's own
		# timers have run out: an ID whose consumer is gone may still
		# wait for its last MAD's retries (up to 16 sends) or TimeWait.
		if ! wait_until_clock 30 no_cm_ids; then
			late=$((late + 1))
			echo "# $name: n=$n: $(cm_ids) cm_id(s) still there 30 s after the run"
			if ! wait_until_clock 150 no_cm_ids; then
				leaks=$((leaks + 1))
				echo "# $name: n=$n: $(cm_ids) cm_id(s) left 180 s after the run"
			fi
		fi
		if ! wait_until 10 no_pins; then
			pins=$((pins + 1))
			echo "# $name: n=$n: $(cat "$KNOB/agent_pins") MAD agent" \
				"pin(s) still held after the run"
		fi
		# Where the sweep's time goes: the run, then the wait for
		# what it left to go.
		echo "# $name: n=$n: $(fault_site): status $rc after $took s," \
			"then $(secs_since "$t1") s of waiting for its cm_ids"
	done
	echo "# $name: $((n - 1)) allocation(s) failed in turn: $reported" \
		"reported to the consumer ($stayed of them left the tool waiting)," \
		"$recovered recovered by the protocol, $silent silent;" \
		"$late released late, $leaks never; final run status $final"
	tap_check "$name: sweep ends before $MAX" test "$n" -le "$MAX"
	tap_check "$name: every failure reported or recovered" test "$silent" = 0
	tap_check "$name: no thread stuck in the kernel" test "$dstate" = 0
	tap_check "$name: no cm_id left after any run" test "$leaks" = 0
	tap_check "$name: no MAD agent pin left after any run" test "$pins" = 0
	tap_check "$name: the run without a fault succeeds" test "$final" = 0
	tap_check "$name: some allocation was failed" test "$n" -gt 1
}

before=$(cat "$KNOB/faults")
sweep connect
sweep reject
sweep sidr
after=$(cat "$KNOB/faults")
echo "# $((after - before)) allocation(s) failed on purpose in all"
tap_done
