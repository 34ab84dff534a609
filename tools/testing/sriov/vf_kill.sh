#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# A VF guest dies in the middle of ucmatose (tools/testing/sriov/run
# --vf-test and --remote-test, pf_vf_kill.sh on the PF; the last step of a
# run, since VF 1 does not come back).  Both VFs run ucmatose -c 50 and an
# rping that runs until it is stopped, to servers on the remote.
#
# VF 1's connections must be up when it dies, however slow the machine:
# its ucmatose client waits for twice the messages its server sends.  A
# ucmatose client answers only once it has all its messages, and the
# server disconnects only once it has all the answers, so neither side
# ever gets to its disconnect: the hold needs no timing.  (It used to rely
# on the remote stopping the server before the data phase ended, a race
# that a starved guest could lose.)  Each side is stopped (SIGSTOP) once
# its connect phase is over, so that it does not spin in its poll for
# the rest of the step.  The server's stop also closes the one way left
# to a disconnect: ucmatose counts flushed completions as done, so a
# server all of whose 50 QPs failed (their sends out of retries, on a
# machine starved for seconds) would end its poll and disconnect; stopped
# within a second of its data phase, it cannot.
#
# Once both VFs have everything up, VF 1 has the host kill its QEMU
# (vm_kill_me: no shutdown, no DREQ).  VF 2's rping must go on pinging
# after the PF cleaned VF 1's ids, its ucmatose must end well, and a new
# rping from VF 2 must pass.  The remote then closes VF 1's connections:
# its DREQs for the dead VF are for the PF to refuse.
#
# Every wait is for something seen to happen (a line of ucmatose's, a
# ping), bounded only by the step's time: never a transient state that a
# poll on a loaded machine can miss.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"

CONNS=${UCMA_CONNS:-50}
# What each server sends per connection.  Few: ucmatose asks for only 5
# transport retries and never looks at a send's completion, so a burst of
# messages on a guest slowed down far enough (a debug-kernel PF beside
# other guests) can end a connection's QP with its peer left spinning on
# receives that never come, a data-path stall the CM and the cache have
# no part in.  Holding VF 1's connections does not depend on the count.
MSGS=${KILL_MSGS:-10}
PORT=7481
HOLD=7483	# + slave: the rping that runs until it is stopped
AFTER=10	# pings VF 2's rping must make after VF 1's clean

if [ "$SRIOV_ROLE" = pf ]; then
	echo "# nothing to run on the PF"
	exit 0
fi
rxe_up || exit 1
wait_pf_watching 60
traffic_barrier kill-start 120 || { tap_fail "the others never got ready"; tap_done; exit 1; }

connected() {
	[ "$(rdma resource show cm_id 2> /dev/null | grep -c 'state CONNECT ')" -ge "$1" ]
}

# ucma_up FILE: the ucmatose writing FILE (line buffered) had all its
# connections established: it prints its "... data transfers" lines only
# once its connect phase is over, and the file only grows.
ucma_up() {
	grep -q 'data transfers' "$1" 2> /dev/null
}

# ucma_child PID: the ucmatose that timeout(1) PID runs
ucma_child() {
	pgrep -P "$1"
}

pings() {
	rping_pings /tmp/hold.out
}

# client_msgs: what this VF's ucmatose client waits for per connection;
# VF 1's more than its server sends, so that it never answers (above)
client_msgs() {
	if [ "$SRIOV_SLAVE" = 1 ]; then echo $((2 * MSGS)); else echo "$MSGS"; fi
}

# pinging N: the held rping runs and has made N pings
pinging() {
	# shellcheck disable=SC2154
	kill -0 "$hold" 2> /dev/null && [ "$(pings)" -ge "$1" ]
}

# clients_up: start_clients' ucmatose and held rping are both up
clients_up() {
	ucma_up /tmp/ucma.out && pinging 1
}

# start_clients: ucmatose and the held rping to the remote's servers of
# this VF; PIDs in ucma and hold
start_clients() {
	vm_wait kill-up 120 || echo "# the remote's servers never started"
	# line buffered: pings() counts as they come
	bg_with_timeout 280 stdbuf -oL rping -c -a "$REMOTE_IP" \
		-p $((HOLD + SRIOV_SLAVE)) -v > /tmp/hold.out 2>&1
	hold=$!
	bg_with_timeout 280 stdbuf -oL ucmatose -s "$REMOTE_IP" -b "$MY_IP" \
		-p $((PORT + SRIOV_SLAVE)) -c "$CONNS" -C "$(client_msgs)" \
		> /tmp/ucma.out 2>&1
	ucma=$!
	wait_until "$(step_time_left 150)" clients_up
	tap_check "$SRIOV_NAME: $CONNS connections and an rping up" clients_up
	clients_up || tail -n 8 /tmp/ucma.out | sed -e 's/^/# ucmatose: /'
}

case "$SRIOV_NAME" in
remote)
	for s in 1 2; do
		bg_with_timeout 280 stdbuf -oL ucmatose -b "$MY_IP" -p $((PORT + s)) \
			-c "$CONNS" -C "$MSGS" > "/tmp/ucma-vf$s.out" 2>&1
		eval "p$s=\$!"
		bg_with_timeout 280 rping -s -a "$MY_IP" -p $((HOLD + s)) -v \
			> "/tmp/hold-vf$s.out" 2>&1
		eval "h$s=\$!"
	done
	for s in 1 2; do
		for p in $((PORT + s)) $((HOLD + s)); do
			wait_cm_listening 60 "$p"
		done
	done
	vm_signal kill-up
	# the server for VF 1 waits for answers that never come: stop it
	# once it has its connections, so that it neither spins meanwhile
	# nor, should all its QPs fail, disconnects (above)
	wait_until "$(step_time_left 150)" ucma_up /tmp/ucma-vf1.out
	if ucma_up /tmp/ucma-vf1.out; then
		tap_ok "the server for vf1 has its connections"
	else
		tap_fail "the server for vf1 has its connections"
		tail -n 8 /tmp/ucma-vf1.out | sed -e 's/^/# server vf1: /'
	fi
	# shellcheck disable=SC2154
	c1=$(ucma_child "$p1")
	tap_check "the server for vf1 is stopped" kill -STOP "$c1"
	vm_signal vf1-held
	# shellcheck disable=SC2154
	wait "$p2"
	rc=$?
	echo "# ucmatose server for vf2: exit status $rc"
	[ "$rc" = 0 ] || tail -n 8 /tmp/ucma-vf2.out | sed -e 's/^/# server vf2: /'
	tap_check "ucmatose server for vf2 exit 0" test "$rc" = 0
	# its client is stopped by vf2; the server may not notice at once
	vm_wait vf2-hold-stopped 120 || echo "# vf2 never stopped its rping"
	# shellcheck disable=SC2154
	kill "$h2" 2> /dev/null
	wait "$h2"
	echo "# held rping server for vf2: exit status $?"
	# VF 1's servers wait for a peer that is gone: closing their
	# connections sends DREQs that the PF must refuse
	# shellcheck disable=SC2154
	kill "$p1" "$h1" 2> /dev/null
	kill -CONT "$c1" 2> /dev/null
	wait "$p1" "$h1"
	echo "# the servers for the killed vf1 are closed"
	vm_signal vf1-servers-closed
	rping_serve after-kill 7491 100
	rping_served after-kill "$RPING_PID" 100
	;;
vf1)
	start_clients
	# waiting for messages that never come: no need to spin meanwhile
	tap_check "vf1: its ucmatose is stopped" kill -STOP "$(ucma_child "$ucma")"
	vm_wait vf1-held "$(step_time_left 120)" || echo "# the remote never stopped vf1's server"
	# all of them held, and the rping's
	tap_check "vf1: its connections held: $CONNS and the rping's" \
		connected $((CONNS + 1))
	vm_wait vf2-connected "$(step_time_left 90)" || echo "# vf2 never connected"
	running=no
	if kill -0 "$ucma" 2> /dev/null; then
		running=yes
	else
		# its connections are gone with it: say how it ended
		wait "$ucma"
		echo "# vf1: ucmatose ended before the kill: exit status $?"
		tail -n 8 /tmp/ucma.out | sed -e 's/^/# vf1 ucmatose: /'
	fi
	echo "# vf1: ucmatose running: $running, $(pings) pings so far;" \
		"asking the host to kill this guest, $SECONDS s into the step"
	vm_kill_me
	;;
vf2)
	start_clients
	vm_signal vf2-connected
	vm_wait "killed-vm$VF1_INDEX" 240
	tap_check "vf2: the host killed vf1" test $? = 0
	vm_wait vf1-cleaned 60
	tap_check "vf2: the PF cleaned vf1" test $? = 0
	n0=$(pings)
	wait_until "$(step_time_left 120)" pinging $((n0 + AFTER))
	tap_check "vf2: its rping went on after vf1's clean: $n0 -> $(pings) pings" \
		pinging $((n0 + AFTER))
	# shellcheck disable=SC2154
	kill "$hold" 2> /dev/null
	wait "$hold"
	vm_signal vf2-hold-stopped
	# shellcheck disable=SC2154
	wait "$ucma"
	rc=$?
	echo "# vf2 ucmatose: exit status $rc"
	tail -n 4 /tmp/ucma.out | sed -e 's/^/# vf2 ucmatose: /'
	tap_check "vf2: ucmatose exit 0" test "$rc" = 0
	rping_client after-kill "$REMOTE_IP" 7491 100
	rping_checked after-kill 100
	;;
esac
# VF 1 is gone: the barrier is the others'
vm_barrier kill-done 300 "$VF2_INDEX" "$REMOTE_INDEX"
tap_done
