#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test: the RDMA CM tools at scale over soft-RoCE through our ib_cm
# (the rig insmods it before rdma_cm):
#   ib_write_bw -R          RDMA writes on a CM-connected RC QP
#   ucmatose -c 100         100 RC connections, 10 messages each way
#   udaddy -c 50            50 UD "connections", i.e. 50 SIDR exchanges
#   cmtime -c 1000          1000 connect/disconnect cycles
# A tool's exit status alone proves little (cmtime's server never exits,
# ucmatose only says "complete"), so every run is also checked against
# the CM message counters of rxe0: each connection must have been seen by
# our ib_cm as a new REQ (or SIDR_REQ), a REP and an RTU (or a SIDR_REP),
# and each RC connection must have been closed with a DREQ.
#
# Counts: SCALE_UCMATOSE (100), SCALE_UDADDY (50), SCALE_CMTIME (1000;
# 100 on the debug tier's kernel, where 200 already needed up to 56 s per
# connection at host load 7).  cmtime sends all its REQs at once; on
# a kernel with KASAN and lockdep under TCG the server cannot accept 1000
# of them within rdma_cm's MRA window (about 65 s), and the REQ/REP
# retries that follow fail both ib_cms alike.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

NUCMA=${SCALE_UCMATOSE:-100}
NUD=${SCALE_UDADDY:-50}
NCMT=${SCALE_CMTIME:-1000}
debug_kernel && NCMT=${SCALE_CMTIME:-100}
P=/sys/class/infiniband/rxe0/ports/1

rxe_up || exit 1

# ctr GROUP MSG: one counter of our ib_cm, 0 when it has none.
ctr() {
	cat "$P/$1/$2" 2> /dev/null || echo 0
}

# snap: all rx/dup counters of interest, as "name=value ..." for eval.
snap() {
	local m

	for m in req rep rtu dreq sidr_req sidr_rep rej; do
		echo "rx_$m=$(ctr cm_rx_msgs $m) dup_$m=$(ctr cm_rx_duplicates $m)"
	done
}

# new MSG BEFORE: messages MSG received since snapshot BEFORE that were
# not duplicates (retransmissions the CM recognised).
new() {
	local msg=$1 before=$2 rx0 dup0 rx1 dup1

	rx0=$(sed -n "s/.*\<rx_$msg=\([0-9]*\).*/\1/p" <<< "$before")
	dup0=$(sed -n "s/.*\<dup_$msg=\([0-9]*\).*/\1/p" <<< "$before")
	rx1=$(ctr cm_rx_msgs "$msg")
	dup1=$(ctr cm_rx_duplicates "$msg")
	echo $(((rx1 - rx0) - (dup1 - dup0)))
}

# pair NAME SECS PORT SERVER_CMD -- CLIENT_CMD: run a server and a client
# with a time limit, the client once the server listens on PORT (rdma_cm);
# sets $src and $crc, output in /tmp/NAME-{server,client}.out.
pair() {
	local name=$1 secs=$2 port=$3 srv=() spid t0

	shift 3
	while [ "$1" != "--" ]; do
		srv+=("$1")
		shift
	done
	shift
	t0=$(date +%s)
	run_with_timeout "$secs" "${srv[@]}" > "/tmp/$name-server.out" 2>&1 &
	spid=$!
	# Under TCG a server can take seconds to reach its listen.
	wait_cm_listening 60 "$port" "$spid"
	connect_retry 5 "/tmp/$name-client.out" \
		run_with_timeout "$secs" "$@"
	crc=$?
	wait "$spid"
	src=$?
	echo "# $name: client exit $crc, server exit $src, $(($(date +%s) - t0))s"
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		tail -n 5 "/tmp/$name-client.out" | sed -e "s/^/# $name client: /"
		tail -n 5 "/tmp/$name-server.out" | sed -e "s/^/# $name server: /"
	fi
}

# pair_checks LABEL OUT WHAT: the pair just run exited 0 on both sides and
# OUT says the data went over every WHAT.
pair_checks() {
	tap_check "$1 client exit 0" test "$crc" = 0
	tap_check "$1 server exit 0" test "$src" = 0
	tap_check "$1: data on every $3" grep -q 'data transfers complete' "$2"
}

# ib_cm in use must be the project's module (vm-run --insmod).
ours=
for ko in $VM_INSMOD; do
	[ "$(modinfo -F name "$ko")" = ib_cm ] && ours=$ko
done
tap_check "an ib_cm.ko was given to the rig" test -n "$ours"
tap_check "rxe0 publishes CM message counters" test -d "$P/cm_rx_duplicates"

# --- ib_write_bw -R -------------------------------------------------------
before=$(snap)
pair write_bw 120 18516 ib_write_bw -d rxe0 -R "$PERFTEST_F" -n 1000 -s 4096 \
	-p 18516 -- \
	ib_write_bw -d rxe0 -R "$PERFTEST_F" -n 1000 -s 4096 -p 18516 "$MY_IP"
bw=$(awk '/#bytes/ { getline; print; exit }' /tmp/write_bw-client.out)
echo "# ib_write_bw: bytes iterations peak average rate: $bw"
perftest_uncalibrated /tmp/write_bw-client.out /tmp/write_bw-server.out
tap_check "ib_write_bw -R client exit 0" test "$crc" = 0
tap_check "ib_write_bw -R server exit 0" test "$src" = 0
tap_check "ib_write_bw -R bandwidth line" test -n "$bw"
tap_check "ib_write_bw -R connected through ib_cm" test "$(new rtu "$before")" -ge 1
# rdma_cm holds ib_cm now: it must be ours.
tap_check "ib_cm in use is the project's" module_is_file ib_cm "$ours"
tap_check "rdma_cm runs on it" test -e /sys/module/ib_cm/holders/rdma_cm

# --- ucmatose -c N: connections with data ------------------------------------
before=$(snap)
pair ucmatose 240 7472 ucmatose -b "$MY_IP" -p 7472 -c "$NUCMA" -- \
	ucmatose -s "$MY_IP" -p 7472 -c "$NUCMA"
req=$(new req "$before") rtu=$(new rtu "$before") dreq=$(new dreq "$before")
echo "# ucmatose: new REQs $req, RTUs $rtu, DREQs $dreq"
# The server polls a send and a receive completion per message on every
# connected QP before it says its data transfers are complete.
pair_checks "ucmatose -c $NUCMA" /tmp/ucmatose-server.out connection
tap_check "ucmatose -c $NUCMA: $NUCMA REQs and RTUs through ib_cm" \
	test "$req" -ge "$NUCMA" -a "$rtu" -ge "$NUCMA"
tap_check "ucmatose -c $NUCMA: $NUCMA connections closed by DREQ" \
	test "$dreq" -ge "$NUCMA"

# --- udaddy -c N: SIDR --------------------------------------------------------
before=$(snap)
# (udaddy's port is fixed: 7174; its -p is the port space.)
pair udaddy 240 7174 udaddy -b "$MY_IP" -c "$NUD" -- \
	udaddy -s "$MY_IP" -c "$NUD"
sreq=$(new sidr_req "$before") srep=$(new sidr_rep "$before")
echo "# udaddy: new SIDR_REQs $sreq, SIDR_REPs $srep"
pair_checks "udaddy -c $NUD" /tmp/udaddy-client.out "UD QP"
tap_check "udaddy -c $NUD: $NUD SIDR_REQs and SIDR_REPs through ib_cm" \
	test "$sreq" -ge "$NUD" -a "$srep" -ge "$NUD"

# --- cmtime -c N ----------------------------------------------------------
# The cmtime server runs until it is stopped.
before=$(snap)
t0=$(date +%s)
cmtime -b "$MY_IP" -p 7474 > /tmp/cmtime-server.out 2>&1 &
spid=$!
wait_cm_listening 30 7474 "$spid"
connect_retry 3 /tmp/cmtime-client.out \
	run_with_timeout 600 cmtime -s "$MY_IP" -p 7474 -c "$NCMT"
crc=$?
kill "$spid" 2> /dev/null
wait "$spid" 2> /dev/null
req=$(new req "$before") rtu=$(new rtu "$before") dreq=$(new dreq "$before")
echo "# cmtime -c $NCMT: client exit $crc after $(($(date +%s) - t0))s;" \
	"new REQs $req, RTUs $rtu, DREQs $dreq"
sed -n '/^step/,$p' /tmp/cmtime-client.out | sed -e 's/^/# cmtime: /'
[ "$crc" = 0 ] || tail -n 5 /tmp/cmtime-client.out | sed -e 's/^/# cmtime client: /'
tap_check "cmtime -c $NCMT exit 0" test "$crc" = 0
# cmtime 44 exits 0 even when connections fail; it prints an event line.
tap_check "cmtime -c $NCMT: no connection failed" \
	bash -c "! grep -qE '^event: |_ERROR' /tmp/cmtime-client.out"
tap_check "cmtime -c $NCMT: connect timed" \
	grep -qE '^connect +: +[0-9.]+ ' /tmp/cmtime-client.out
tap_check "cmtime -c $NCMT: disconnect timed" \
	grep -qE '^disconnect +: +[0-9.]+ ' /tmp/cmtime-client.out
tap_check "cmtime -c $NCMT: $NCMT REQs and RTUs through ib_cm" \
	test "$req" -ge "$NCMT" -a "$rtu" -ge "$NCMT"
tap_check "cmtime -c $NCMT: $NCMT connections closed by DREQ" \
	test "$dreq" -ge "$NCMT"
tap_check "no REJ on the way" test "$(new rej "$before")" = 0
tap_done
