#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test: remove the RDMA device again and again under load, through
# our ib_cm.  Every round re-adds rxe0 and deletes it twice:
#   live   while REMOVE_CONNS (50) ucmatose connections are established
#          (client and server are stopped with SIGSTOP once both sides
#          have all of them, so nothing disconnects on its own);
#   setup  while cmtime is connecting REMOVE_SETUP (500) connections:
#          once 1, 51, 101, 151 or 201 (by round) of its REPs have come
#          in, polled every 50 ms by the shell at real-time priority (a
#          delay by the clock landed after the connect phase on a loaded
#          host, and a plain shell is starved by cmtime and the CM's work
#          under TCG); the REPs seen at the removal must be fewer than the
#          connections.
# rxe cannot take user contexts away (no disassociate), so the removal
# waits in the verbs layer for the processes; they are killed once rdma_cm
# has given up its ids, which is what removal must survive.  Rounds:
# REMOVE_ROUNDS (20).  Afterwards the CM must work on a new device and,
# unless REMOVE_UNLOAD=0, ib_cm must unload without a leaked cm_id; the
# rig's kernel-log check catches oopses, warnings and lockdep reports.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

ROUNDS=${REMOVE_ROUNDS:-20}
NLIVE=${REMOVE_CONNS:-50}
NSETUP=${REMOVE_SETUP:-500}
UNLOAD=${REMOVE_UNLOAD:-1}
P=/sys/class/infiniband/rxe0/ports/1
PORT=7310

# Results over all rounds: "round:reason" of every failure, per kind.
live_bad="" setup_bad="" del_bad="" up_bad=""
live_max=0 setup_max=0 del_max=0
DELETE_LIMIT=600

# count_reps: REPS = the REPs received that were not retransmissions,
# one per connection.  Polled every 50 ms, so without a new process (not
# even the fork of $(...)): each costs the host CPU under TCG.
count_reps() {
	local all dup

	read -r all 2> /dev/null < "$P/cm_rx_msgs/rep" || all=0
	read -r dup 2> /dev/null < "$P/cm_rx_duplicates/rep" || dup=0
	REPS=$((all - dup))
}


# wait_reps N PID: until N REPs were counted, while PID lives (300 s of an
# idle host at most, by the clock); polled often, so that the removal lands early in
# the connect phase however fast the guest runs.
wait_reps() {
	local end=$((SECONDS + $(scaled_secs 300)))

	while count_reps && [ "$REPS" -lt "$1" ]; do
		kill -0 "$2" 2> /dev/null || return 1
		[ "$SECONDS" -lt "$end" ] || return 1
		vm_nap 0.05
	done
}

# connected: cm_ids rdma_cm has in the connected state.
connected() {
	rdma resource show cm_id 2> /dev/null | grep -c 'state CONNECT '
}

# remove_rxe ROUND KIND PIDS...: delete rxe0 while PIDS hold it; kill
# them once the removal waits for their verbs contexts.  A removal that
# fails or does not finish within DELETE_LIMIT is recorded in $del_bad.
# (The limit is generous: on an overloaded host a TCG guest can stall for
# tens of seconds; a real hang still ends the test with a failure.)
remove_rxe() {
	local round=$1 kind=$2 deleter rdmapid waited start took drc

	shift 2
	start=$(date +%s)
	# At normal priority, whatever the calling shell's.
	chrt -o 0 timeout -k 5 "$(scaled_secs "$DELETE_LIMIT")" rdma link delete rxe0 &
	deleter=$!
	# Wait until the deleter blocks in ib_uverbs: rdma_cm and the other
	# clients that come before it are done then.
	waited=no
	while [ $(($(date +%s) - start)) -lt "$(scaled_secs 120)" ]; do
		rdmapid=$(pgrep -P "$deleter" -x rdma)
		if [ -n "$rdmapid" ] &&
		   grep -q uverbs "/proc/$rdmapid/stack" 2> /dev/null; then
			waited=yes
			break
		fi
		kill -0 "$deleter" 2> /dev/null || break
		vm_nap 0.2
	done
	kill -9 "$@" 2> /dev/null
	wait "$@" 2> /dev/null
	wait "$deleter"
	drc=$?
	took=$(($(date +%s) - start))
	echo "# round $round $kind: rdma link delete status $drc after" \
		"${took}s (waited in uverbs: $waited)"
	if [ "$drc" != 0 ]; then
		del_bad="$del_bad $round$kind:status$drc"
		return 1
	fi
	[ "$took" -gt "$del_max" ] && del_max=$took
	return 0
}

# by_clock SECS PID CMD...: retry CMD every half second while PID lives,
# for at most SECS of an idle host (as wait_until's): wait_until that
# gives up as soon as PID is gone.
by_clock() {
	local end=$((SECONDS + $(scaled_secs "$1"))) pid=$2

	shift 2
	while [ "$SECONDS" -lt "$end" ]; do
		"$@" && return 0
		kill -0 "$pid" 2> /dev/null || return 1
		vm_nap 0.5
	done
	return 1
}

# stop_when_said PID FILE: SIGSTOP PID once FILE says it has all its
# connections ("receiving data transfers").
stop_when_said() {
	by_clock 300 "$1" grep -q 'receiving data' "$2" && kill -STOP "$1"
}

# One removal under NLIVE established connections.
round_live() {
	local round=$1 port=$((PORT + 2 * $1)) spid cpid n

	# The server waits for 1 message per QP, the client for 2: neither
	# can finish, so the connections stay up until the device goes.
	stdbuf -oL ucmatose -b "$MY_IP" -p "$port" -c "$NLIVE" -C 1 \
		> /tmp/live-server.out 2>&1 &
	spid=$!
	by_clock 120 "$spid" cm_listening "$port" || live_bad="$live_bad $round:nolisten"
	stdbuf -oL ucmatose -s "$MY_IP" -p "$port" -c "$NLIVE" -C 2 \
		> /tmp/live-client.out 2>&1 &
	cpid=$!
	# Both busy-poll their CQs once connected: stop each as soon as it
	# says so, or the shell that watches them starves.
	if stop_when_said "$spid" /tmp/live-server.out &&
	   stop_when_said "$cpid" /tmp/live-client.out; then
		:
	else
		live_bad="$live_bad $round:notconnected"
		tail -n 2 /tmp/live-server.out /tmp/live-client.out |
			sed -e 's/^/# /'
	fi
	n=$(connected)
	echo "# round $round live: $n connected cm_ids (both ends)"
	[ "$n" -gt "$live_max" ] && live_max=$n
	[ "$n" -ge $((2 * NLIVE)) ] || live_bad="$live_bad $round:only$n"
	remove_rxe "$round" live "$spid" "$cpid"
}

# setup_try ROUND TRY WANT: start cmtime's server and client for TRY of
# ROUND and wait for WANT REPs; sets spid, cpid and n (the REPs counted).
# Returns 2 when the connect phase was over before the removal could
# land in it (the guest was not scheduled meanwhile), 1 when it made no
# progress, 0 when the removal is to come now.
setup_try() {
	local port=$((PORT + 2 * $1 + 1 + 100 * ($2 - 1))) rep0 rc=0

	count_reps
	rep0=$REPS
	cmtime -b "$MY_IP" -p "$port" > /tmp/setup-server.out 2>&1 &
	spid=$!
	by_clock 120 "$spid" cm_listening "$port" || setup_bad="$setup_bad $1:nolisten"
	stdbuf -oL cmtime -s "$MY_IP" -p "$port" -c "$NSETUP" \
		> /tmp/setup-client.out 2>&1 &
	cpid=$!
	wait_reps $((rep0 + $3)) "$cpid" || rc=1
	count_reps
	n=$((REPS - rep0))
	echo "# round $1 setup: removal after $n REPs (at $3 wanted)"
	if ! kill -0 "$cpid" 2> /dev/null || [ "$n" -ge "$NSETUP" ]; then
		rc=2
	fi
	return $rc
}

# One removal while cmtime is setting connections up.  A try whose
# connect phase ends before the removal is made again, removing at the
# first REP, up to three times: the point is observed progress, not a
# delay, but a host that stops the guest can outrun any watcher.
round_setup() {
	local round=$1 try=1 rc spid cpid want n

	# How far into the connect phase to pull the device, in REPs.
	want=$((1 + (round % 5) * NSETUP / 10))
	# Watch at real-time priority (cmtime, started before, and the
	# removal, which remove_rxe starts at normal priority, are not).
	chrt -f -p 10 $$
	while :; do
		setup_try "$round" "$try" "$want"
		rc=$?
		if [ "$rc" -ne 2 ] || [ "$try" -ge 3 ]; then
			break
		fi
		echo "# round $round setup: the connect phase was over first; again"
		kill "$spid" "$cpid" 2> /dev/null
		wait "$spid" "$cpid" 2> /dev/null
		try=$((try + 1)) want=1
	done
	# Back to normal priority before the removal: a real-time shell that
	# polls for the deleter (pgrep, /proc) can starve the CM's workers,
	# which drop the references the removal waits for (seen on the
	# coverage kernel: "RT throttling activated", then cm_ids waiting
	# more than 10 s in cm_destroy()).
	chrt -o -p 0 $$
	case $rc in
	1) setup_bad="$setup_bad $round:noprogress" ;;
	2) setup_bad="$setup_bad $round:setupover" ;;
	esac
	[ "$n" -gt "$setup_max" ] && setup_max=$n
	remove_rxe "$round" setup "$spid" "$cpid"
	grep -q '^connecting' /tmp/setup-client.out ||
		setup_bad="$setup_bad $round:noconnect"
	# cmtime 44's server may die of SIGSEGV here (bash reports it above):
	# once its event channel fails it frees a node array that only its
	# client has.  A user-space bug; the kernel log is what counts.
}

readd() {
	if ! rxe_up > /dev/null; then
		up_bad="$up_bad $1"
		return 1
	fi
}

start=$(date +%s)
rxe_up || exit 1
for round in $(seq 1 "$ROUNDS"); do
	round_live "$round"
	readd "$round" || break
	round_setup "$round"
	readd "$round" || break
done
took=$(($(date +%s) - start))
echo "# $ROUNDS rounds in ${took}s; most connected cm_ids $live_max," \
	"most REPs before a setup removal $setup_max"

tap_check "$ROUNDS removals with $NLIVE live connections each${live_bad:+:$live_bad}" \
	test -z "$live_bad"
tap_check "$ROUNDS removals during connection setup${setup_bad:+:$setup_bad}" \
	test -z "$setup_bad"
tap_check "every removal completed (longest ${del_max}s)${del_bad:+:$del_bad}" \
	test -z "$del_bad"
tap_check "rxe0 came back after every removal${up_bad:+:$up_bad}" \
	test -z "$up_bad"

# The CM works on the last new device.
rping -s -a "$MY_IP" -p 7309 -C 10 > /tmp/rm-after-server.out 2>&1 &
server=$!
wait_cm_listening 30 7309 "$server"
connect_retry 5 /tmp/rm-after-client.out \
	run_with_timeout 60 rping -c -a "$MY_IP" -p 7309 -C 10 -v
crc=$?
wait "$server"
tap_check "rping works on the new device" test "$crc" = 0

if [ "$UNLOAD" = 1 ]; then
	sleep 3
	modprobe -r rdma_ucm ib_srpt ib_isert ib_iser ib_srp ib_ipoib rdma_cm \
		iw_cm 2> /dev/null
	rmmod ib_cm
	tap_check "ib_cm unloads" test $? = 0
	! dmesg | grep -qi 'ib_cm_id.*\(objects remaining\|still has objects\)'
	tap_check "no cm_id left in the ib_cm_id cache" test $? = 0
fi
tap_done
