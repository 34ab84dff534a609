#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Capture the CM MADs of real RDMA CM traffic for the PV-CM replay.
#
# On the host:  tools/testing/replay/capture.sh [OUT.trace]
#   boots a guest with tools/testing/vm/vm-run, runs this same script in it
#   and writes the icm_* lines of its trace to OUT.trace (default
#   tools/testing/replay/data/rxe-cm.trace).
# In the guest (vm-run sets GUEST_LIB): enables the ib_cma trace events of
#   the distro ib_cm, runs rping -C 10, ucmatose with 3 connections, udaddy
#   with 2 SIDR lookups and one rping to a port nobody listens on (REJ) over
#   rdma_rxe, and leaves the trace in $VM_SHARED/cm.trace.

guest_capture() {
	local tr=/sys/kernel/tracing ip out=/tmp/capture.out srv rc=0

	# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
	. "$GUEST_LIB"
	ip=$MY_IP
	[ -e "$tr/trace" ] || mount -t tracefs nodev "$tr" || return 1
	modprobe rdma_ucm || return 1
	rxe_up || return 1
	if [ ! -d "$tr/events/ib_cma" ]; then
		echo "# no ib_cma trace events in this kernel"
		return 1
	fi
	echo "# events: $(cd "$tr/events/ib_cma" && echo icm_*)"
	echo 0 > "$tr/tracing_on"
	: > "$tr/trace"
	echo 1 > "$tr/events/ib_cma/enable" || return 1
	echo 1 > "$tr/tracing_on"

	# a connection with 10 verified ping-pongs, then a disconnect
	rping -s -a "$ip" -p 7174 -C 10 > /tmp/rping-s.out 2>&1 &
	srv=$!
	wait_cm_listening 30 7174 "$srv"
	connect_retry 10 "$out" run_with_timeout 60 \
		rping -c -a "$ip" -p 7174 -C 10 -v || rc=1
	run_with_timeout 30 tail --pid="$srv" -f /dev/null
	echo "# rping: $(grep -c '^ping data' "$out") pings"

	# three connections in parallel with 10 messages each
	ucmatose -b "$ip" -c 3 -C 10 > /tmp/ucma-s.out 2>&1 &
	srv=$!
	sleep 0.5
	connect_retry 10 "$out" run_with_timeout 60 \
		ucmatose -s "$ip" -c 3 -C 10 || rc=1
	run_with_timeout 30 tail --pid="$srv" -f /dev/null
	tail -n 3 "$out" | sed -e 's/^/# ucmatose: /'

	# two SIDR lookups (UD)
	udaddy -b "$ip" -c 2 -C 2 > /tmp/udaddy-s.out 2>&1 &
	srv=$!
	sleep 0.5
	connect_retry 10 "$out" run_with_timeout 60 \
		udaddy -s "$ip" -c 2 -C 2 || rc=1
	run_with_timeout 30 tail --pid="$srv" -f /dev/null
	tail -n 2 "$out" | sed -e 's/^/# udaddy: /'

	# a REQ for a service nobody listens on: the CM rejects it
	run_with_timeout 30 rping -c -a "$ip" -p 7999 -C 1 > "$out" 2>&1
	tail -n 1 "$out" | sed -e 's/^/# rping to no listener: /'

	sleep 1
	echo 0 > "$tr/tracing_on"
	echo 0 > "$tr/events/ib_cma/enable"
	cp "$tr/trace" "$VM_SHARED/cm.trace" || return 1
	echo "# $(grep -c ': icm_' "$VM_SHARED/cm.trace") icm events"
	grep ': icm_' "$VM_SHARED/cm.trace" | sed -e 's/^/# /'
	return $rc
}

host_capture() {
	local top out log run krel

	top=$(cd "$(dirname "$0")/../../.." && pwd) || exit 1
	out=${1:-$top/tools/testing/replay/data/rxe-cm.trace}
	krel=${KREL:-6.1.0-57-amd64}
	log=$(mktemp) || exit 1
	"$top/tools/testing/vm/vm-run" --krel "$krel" --timeout 900 \
		--test "$top/tools/testing/replay/capture.sh" | tee "$log"
	run=$(sed -n 's/^# results: //p' "$log" | tail -n 1)
	rm -f "$log"
	if [ -z "$run" ] || [ ! -s "$run/shared/cm.trace" ]; then
		echo "capture.sh: no trace from the guest" >&2
		exit 1
	fi
	{
		echo "# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB"
		echo "# PV-CM replay capture: ib_cma trace events of $krel"
		echo "# rping -C 10, ucmatose -c 3, udaddy -c 2, rping to no listener"
		echo "# over rdma_rxe; made by tools/testing/replay/capture.sh"
		grep ': icm_' "$run/shared/cm.trace"
	} > "$out" || exit 1
	echo "capture.sh: $(grep -c ': icm_' "$out") events in $out"
}

if [ -n "${GUEST_LIB:-}" ]; then
	guest_capture
	exit $?
fi
host_capture "$@"
