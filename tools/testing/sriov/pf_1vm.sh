#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The emulated SR-IOV master in one guest: live rdma_rxe connections
# through mlx4_ib_pvcm_pf.ko (see pf-netns-lib.sh for the topology).
#
#   vm-run --modprobe "ib_core rdma_rxe" --test tools/testing/sriov/pf_1vm.sh
#
# PF_KO overrides the module (default build/<krel>/sriov/ of this tree),
# PF_MODES the demultiplexer modes to run (default "roce ib"),
# PF_QUICK=1 skips the TimeWait drain, VF-down and failure cases.
#
# Per mode: rping from VF 1 to the remote node, from the remote node to
# VF 2 (the VF passive: its REQ demultiplexed), VF 1 to VF 2 (both
# paths); udaddy (SIDR) and ucmatose in roce mode.  The module's counters
# must show CM MADs in each direction, rewrites, no bad ICRC, no drop and
# a clean wire audit (no VF's own comm id on the wire, no unknown id); the
# cache's must show every connection released to TimeWait and, 30 s
# later, freed.  A VF interface going down must clean its slave.  Loaded
# with rewrite=N or fix_icrc=N, rping must fail.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/pf-netns-lib.sh
. "$(dirname "$0")/pf-netns-lib.sh"

top=$(cd "$(dirname "$0")/../../.." && pwd)
KO=${PF_KO:-$top/build/$(uname -r)/sriov/mlx4_ib_pvcm_pf.ko}
MODES=${PF_MODES:-roce ib}
DBG=/sys/kernel/debug/mlx4_ib_pvcm_pf/pvcm_pf0
ROCE_CM=$(dirname "$0")/roce_cm.py
COUNT=10
PORT=7400
NSPID=

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug

# pf_load ARGS...: load the module into the PF namespace
pf_load() {
	insmod "$KO" vf_ifaces=pfvf1,pfvf2 wire_iface=pfwire \
		netns_pid="$NSPID" "$@"
}

pf_unload() {
	rmmod mlx4_ib_pvcm_pf
}

# pf_stat NAME: a counter of the module
pf_stat() {
	awk -v n="$1" '$1 == n { print $2 }' "$DBG/pf/stats"
}

# pvcm_stat WHO FIELD: a counter of the cache (WHO total, slave1, ...)
pvcm_stat() {
	awk -v w="$1" -v f="$2" '
		NR == 1 { for (i = 2; i <= NF; i++) col[$i] = i }
		$1 == w { v = $col[f] }
		END { print v + 0 }' "$DBG/pvcm/stats"
}

show_stats() {
	echo "# --- $1"
	sed 's/^/#   /' "$DBG/pvcm/stats"
	grep -v ' 0$' "$DBG/pf/stats" | sed 's/^/#   pf: /'
}

# rping_pair NAME SERVER CLIENT [SECS]: rping server on SERVER's address,
# client from CLIENT's; returns the client's status
rping_pair() {
	local name=$1 srv cli secs=${4:-60} out=/tmp/rping-$1.out rc spid

	srv=$(pf_ip "$2") cli=$(pf_ip "$3")
	PORT=$((PORT + 1))
	bg_with_timeout $((secs + 10)) rping -s -a "$srv" -p "$PORT" \
		-C "$COUNT" > "/tmp/rping-$name-srv.out" 2>&1
	spid=$!
	sleep 0.5
	connect_retry 5 "$out" run_with_timeout "$secs" \
		rping -c -a "$srv" -I "$cli" -p "$PORT" -C "$COUNT" -v
	rc=$?
	echo "# rping $name ($3 -> $2): status $rc," \
		"$(grep -c '^ping data' "$out") pings"
	[ "$rc" = 0 ] || tail -n 3 "$out" | sed 's/^/#   client: /'
	kill "$spid" 2> /dev/null
	wait "$spid" 2> /dev/null
	return "$rc"
}

# udaddy_pair SERVER CLIENT
udaddy_pair() {
	local srv cli rc spid

	srv=$(pf_ip "$1") cli=$(pf_ip "$2")
	bg_with_timeout 70 udaddy -b "$srv" -c 2 -C 5 > /tmp/udaddy-srv.out 2>&1
	spid=$!
	sleep 0.5
	connect_retry 5 /tmp/udaddy.out run_with_timeout 60 \
		udaddy -s "$srv" -b "$cli" -c 2 -C 5
	rc=$?
	echo "# udaddy ($2 -> $1): status $rc"
	sed 's/^/#   udaddy: /' /tmp/udaddy.out | tail -n 4
	kill "$spid" 2> /dev/null
	wait "$spid" 2> /dev/null
	return "$rc"
}

# ucmatose_pair SERVER CLIENT
ucmatose_pair() {
	local srv cli rc spid

	srv=$(pf_ip "$1") cli=$(pf_ip "$2")
	bg_with_timeout 100 ucmatose -b "$srv" -c 5 -C 5 > /tmp/ucma-srv.out 2>&1
	spid=$!
	sleep 0.5
	connect_retry 5 /tmp/ucma.out run_with_timeout 90 \
		ucmatose -s "$srv" -b "$cli" -c 5 -C 5
	rc=$?
	echo "# ucmatose ($2 -> $1): status $rc"
	sed 's/^/#   ucmatose: /' /tmp/ucma.out | tail -n 4
	kill "$spid" 2> /dev/null
	wait "$spid" 2> /dev/null
	return "$rc"
}

zero() {
	[ "$(pf_stat "$1")" = 0 ]
}

# every VF id the audit saw on the wire is one the cache holds for it
audit_ids_held() {
	zero audit_unknown && zero audit_wrong
}

positive() {
	[ "${1:-0}" -gt 0 ]
}

no_drops() {
	local c

	for c in drop_malformed drop_bad_icrc drop_mux drop_demux \
		drop_misrouted drop_off_path drop_queue drop_nomem; do
		zero "$c" || { echo "# $c = $(pf_stat "$c")"; return 1; }
	done
}

both_slaves_mapped() {
	positive "$(pvcm_stat slave1 allocated)" &&
		positive "$(pvcm_stat slave2 allocated)"
}

slave1_live() {
	positive "$(pvcm_stat slave1 live)"
}

slave1_idle() {
	[ "$(pvcm_stat slave1 live)" = 0 ]
}

# vf1_cleaned LIVE_BEFORE CLEANS
vf1_cleaned() {
	positive "$1" && [ "$(pf_stat vf_cleans)" = "$2" ] && slave1_idle
}

# counter_above NAME VALUE
counter_above() {
	[ "$(pf_stat "$1")" -gt "$2" ]
}

# inject KIND COUNTER: a crafted DREQ from vf1 to the remote node must be
# dropped and counted in COUNTER, and only there
inject() {
	local before drops

	before=$(pf_stat "$2")
	drops=$(pvcm_stat total dropped)
	# shellcheck disable=SC2086 # LOCAL: none, or one word
	"$ROCE_CM" send vf1 "$(pf_ip vf1)" "$(pf_ip rem)" "$1" ${3:-} || return 1
	wait_until 10 counter_above "$2" "$before" || return 1
	case $2 in
	drop_mux) [ "$(pvcm_stat total dropped)" -gt "$drops" ] ;;
	*) [ "$(pvcm_stat total dropped)" = "$drops" ] ;;
	esac
}

# inject KIND COUNTER [LOCAL]: as above, with the local comm id LOCAL
# (hex) when given
# late_drep KIND [LOCAL]: inject KIND (refused by the cache, as inject
# checks) and say whether it counted in late_drep_slave1: refused DREPs
# of an id whose DREQ passed the cache at least TimeWait before (which
# the sriov suite's drop checks leave out)
late_drep() {
	local before

	before=$(pf_stat late_drep_slave1)
	inject "$1" drop_mux "${2:-}" || return 2
	wait_until 5 counter_above late_drep_slave1 "$before"
}

# vf1_dreq_id: a comm id of vf1 that a DREQ carried, either way (the
# capture of the run, /tmp/cap.txt)
vf1_dreq_id() {
	awk -v ip="$(pf_ip vf1)" '$1 == "vf1" && $5 == "DREQ" {
		if ($3 == ip) { print $6; exit }
		if ($4 == ip) { print $7; exit }
	}' /tmp/cap.txt
}

# long_rping_up PORT: a long rping from vf1 to the remote node, connected
# (sets srv and cli)
long_rping_up() {
	local i

	bg_with_timeout 200 rping -s -a "$(pf_ip rem)" -p "$1" -C 1000000 \
		> /dev/null 2>&1
	srv=$!
	for i in 1 2 3 4 5; do
		sleep 1
		bg_with_timeout 150 rping -c -a "$(pf_ip rem)" \
			-I "$(pf_ip vf1)" -p "$1" -C 1000000 > /dev/null 2>&1
		cli=$!
		wait_until 20 slave1_live && return 0
		kill "$cli" 2> /dev/null
		wait "$cli" 2> /dev/null
		echo "# long rping: try $i did not connect"
	done
	return 1
}

timewait_drained() {
	[ "$(pvcm_stat total live)" = 0 ] &&
		[ "$(pvcm_stat total timewait)" = 0 ] &&
		[ "$(pvcm_stat total routes)" = 0 ]
}

# a module rxe node in a namespace of its own: does 6.1's rxe work there?
probe_rxe_netns() {
	local out=/tmp/rxe-netns.out

	ip netns add rxeprobe || return
	ip link add rxp0 type veth peer name rxp1
	ip link set rxp1 netns rxeprobe
	ip addr add 10.9.0.1/24 dev rxp0
	ip link set rxp0 up
	ip netns exec rxeprobe ip addr add 10.9.0.2/24 dev rxp1
	ip netns exec rxeprobe ip link set rxp1 up
	rdma link add rxe_rxp0 type rxe netdev rxp0
	if ! ip netns exec rxeprobe rdma link add rxe_rxp1 type rxe \
		netdev rxp1 > "$out" 2>&1; then
		echo "# rxe in a netns: rdma link add failed: $(cat "$out")"
	else
		bg_with_timeout 30 ip netns exec rxeprobe rping -s -a 10.9.0.2 \
			-C 2 > /dev/null 2>&1
		sleep 1
		run_with_timeout 20 rping -c -a 10.9.0.2 -C 2 > "$out" 2>&1
		rc=$?
		if [ "$rc" = 0 ]; then
			echo "# rxe in a netns: rping into it works"
		else
			echo "# rxe in a netns: rping into it fails (status $rc):" \
				"$(tr '\n' ' ' < "$out")"
		fi
		rdma link delete rxe_rxp1
	fi
	rdma link delete rxe_rxp0
	ip link del rxp0
	ip netns del rxeprobe
}

[ -r "$KO" ] || { tap_fail "module $KO exists"; tap_done; exit 1; }
[ -n "${PF_QUICK:-}" ] || probe_rxe_netns
pf_topology_up
tap_check "one-guest PF topology up (rxe on vf1, vf2, rem)" test $? = 0
NSPID=$(pf_ns_pid)

for mode in $MODES; do
	pf_load mode="$mode"
	tap_check "$mode: module loads" test $? = 0 || continue
	cap=
	if [ "$mode" = roce ]; then
		bg_with_timeout 900 "$ROCE_CM" capture vf1 vf2 rem > /tmp/cap.txt
		cap=$!
		wait_until 20 grep -q '^ready$' /tmp/cap.txt ||
			echo "# the capture did not start"
	fi
	tap_check "$mode: rping vf1 -> remote" rping_pair "$mode-vf1" rem vf1
	tap_check "$mode: rping remote -> vf2 (VF passive)" \
		rping_pair "$mode-vf2" vf2 rem
	tap_check "$mode: rping vf1 -> vf2 (VF to VF)" \
		rping_pair "$mode-vf2vf" vf2 vf1
	if [ "$mode" = roce ]; then
		tap_check "$mode: udaddy vf2 -> remote (SIDR)" udaddy_pair rem vf2
		tap_check "$mode: ucmatose vf1 -> remote" ucmatose_pair rem vf1
	fi
	show_stats "$mode: after the run"
	if [ -n "$cap" ]; then
		kill "$cap"
		wait "$cap" 2> /dev/null
		"$ROCE_CM" audit "$(pf_ip vf1)" "$(pf_ip vf2)" < /tmp/cap.txt > \
			/tmp/audit.txt
		rc=$?
		tap_check "$mode: capture: ICRCs good, no VF id on the wire, own ids back" \
			test "$rc" = 0
		sed 's/^/#   /' /tmp/audit.txt | tail -n 5
	fi
	tap_check "$mode: CM MADs from the VFs to the wire" \
		positive "$(pf_stat cm_vf_to_wire)"
	tap_check "$mode: CM MADs from the wire to the VFs" \
		positive "$(pf_stat cm_wire_to_vf)"
	tap_check "$mode: CM MADs from VF to VF" \
		positive "$(pf_stat cm_vf_to_vf)"
	tap_check "$mode: MADs rewritten" positive "$(pf_stat rewritten)"
	tap_check "$mode: no drop, no bad ICRC" no_drops
	tap_check "$mode: wire audit covered MADs" positive "$(pf_stat audited)"
	tap_check "$mode: no VF's own comm id on the wire" zero audit_own_id
	tap_check "$mode: every VF id on the wire is the cache's for it" \
		audit_ids_held
	tap_check "$mode: entries made for slave 1 and 2" both_slaves_mapped
	tap_check "$mode: no live entry after the run" \
		test "$(pvcm_stat total live)" = 0
	tap_check "$mode: released entries in TimeWait" \
		positive "$(pvcm_stat total timewait)"
	if [ "$mode" = roce ]; then
		late_drep good
		tap_check "$mode: crafted DREQ, good ICRC: refused by the cache, no late DREP" \
			test $? = 1
		late_drep drep
		tap_check "$mode: crafted DREP of an id no DREQ carried: refused, no late DREP" \
			test $? = 1
		tap_check "$mode: crafted DREQ, bad ICRC: dropped before it" \
			inject bad-icrc drop_bad_icrc
		tap_check "$mode: crafted short MAD: dropped as malformed" \
			inject short drop_malformed
	fi
	if [ "$mode" = roce ] && [ -z "${PF_QUICK:-}" ]; then
		echo "# waiting for TimeWait (30 s) to pass"
		wait_until_clock "$(part_scaled_secs 30 60)" timewait_drained
		tap_check "$mode: TimeWait over: no live, TimeWait or route entry" \
			timewait_drained
		tap_check "$mode: every entry freed" test \
			"$(pvcm_stat total allocated)" = \
			"$(pvcm_stat total freed)"
		show_stats "$mode: after TimeWait"
		# vf1's DREP of a connection whose DREQ passed, TimeWait ago
		id=$(vf1_dreq_id)
		echo "# vf1's id of a DREQ in the capture: ${id:-none}"
		tap_check "$mode: vf1's DREP of $id after its DREQ's TimeWait: refused, a late DREP" \
			late_drep drep "${id:-x}"

		# a VF whose link goes away in the middle of a connection
		long_rping_up 7398
		live=$(pvcm_stat slave1 live)
		ip netns exec "$PF_NS" ip link set pfvf1 down
		wait_until 10 slave1_idle
		show_stats "$mode: pfvf1 down"
		tap_check "$mode: vf1 link down cleans slave 1 ($live live before)" \
			vf1_cleaned "$live" 1
		kill "$cli" "$srv" 2> /dev/null
		wait "$cli" "$srv" 2> /dev/null
		ip netns exec "$PF_NS" ip link set pfvf1 up
		wait_until 20 rxe_port_active rxe_vf1
	fi
	pf_unload
	tap_check "$mode: module unloads" test $? = 0
done

if [ -z "${PF_QUICK:-}" ]; then
	# it can fail: what the cache did must reach the wire, checksummed
	for arg in rewrite=N fix_icrc=N; do
		pf_load "$arg"
		tap_check "$arg: module loads" test $? = 0 || continue
		rping_pair "$arg" rem vf1 20
		rc=$?
		show_stats "$arg"
		tap_check "$arg: rping vf1 -> remote fails" test "$rc" != 0
		# and it failed for the fault: the MADs reached the module
		tap_check "$arg: the module saw CM MADs from the VF" \
			positive "$(pf_stat cm_vf_to_wire)"
		if [ "$arg" = rewrite=N ]; then
			tap_check "$arg: the audit sees the VF's own id" \
				positive "$(pf_stat audit_own_id)"
		else
			tap_check "$arg: MADs were rewritten (with the old ICRC)" \
				positive "$(pf_stat rewritten)"
		fi
		pf_unload
		tap_check "$arg: module unloads" test $? = 0
	done
fi
if [ -z "${PF_QUICK:-}" ]; then
	# a VF whose VM went away: the PF's interface loses its carrier.
	# Last: rxe_vf1 does not carry connections again after its own
	# link went down and up.
	pf_load
	tap_check "carrier: module loads" test $? = 0 &&
		long_rping_up 7399
	live=$(pvcm_stat slave1 live)
	ip link set vf1 down
	wait_until 10 slave1_idle
	show_stats "vf1 down: pfvf1 carrier lost"
	tap_check "pfvf1 carrier lost cleans slave 1 ($live live before)" \
		vf1_cleaned "$live" 1
	kill "$cli" "$srv" 2> /dev/null
	wait "$cli" "$srv" 2> /dev/null
	pf_unload
	tap_check "carrier: module unloads" test $? = 0
fi
kill "$NSPID" 2> /dev/null
tap_done
