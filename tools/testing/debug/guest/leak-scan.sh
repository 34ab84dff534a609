#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Last guest test of the debug suite (tools/testing/check-debug).
#
# Deletes the soft-RoCE links and unloads the project modules the rig loaded
# (with whatever holds them), so that leaks in teardown paths are caught
# too, then scans for leaks twice and fails on any unreferenced object
# (the baseline was cleared by boot-clean.sh).  Lockdep switches itself off
# after its first report, so "debug_locks: 1" is checked last.

# shellcheck source-path=SCRIPTDIR/../../vm source=guest-lib.sh
. "$GUEST_LIB"

KML=/sys/kernel/debug/kmemleak
INSMOD_LIST=/run/vm-results/vm$VM_INDEX/insmod

# unload NAME: unload NAME after everything that holds it.
unload() {
	local h

	[ -d "/sys/module/$1" ] || return 0
	for h in /sys/module/"$1"/holders/*; do
		[ -e "$h" ] || continue
		unload "$(basename "$h")" || return 1
	done
	if ! rmmod "$1"; then
		echo "# rmmod $1 failed (refcount $(cat "/sys/module/$1/refcnt"))"
		return 1
	fi
	echo "# unloaded $1"
}

unload_ours() {
	local links l names m

	links=$(rdma link show 2>/dev/null |
		awk '$1 == "link" { sub("/.*", "", $2); print $2 }' | sort -u)
	for l in $links; do
		rdma link delete "$l" || return 1
	done
	[ -r "$INSMOD_LIST" ] || return 0
	names=$(while read -r ko; do
		[ -n "$ko" ] && modinfo -F name "$ko"
	done < "$INSMOD_LIST" | tac)
	for m in $names; do
		unload "$m" || return 1
	done
}
tap_check "project modules unloaded" unload_ours

scan() {
	# Objects younger than 5 s are never reported; RCU frees need a moment.
	sleep 6
	echo scan > "$KML" || return 1
	sleep 1
	echo scan > "$KML" || return 1
	if grep -q '^unreferenced object' "$KML"; then
		echo "# kmemleak: $(grep -c '^unreferenced object' "$KML") leak(s):"
		head -n 80 "$KML" | sed -e 's/^/#   /'
		return 1
	fi
	echo "# kmemleak: no leaks"
}
tap_check "kmemleak: no leaks" scan
tap_check "lockdep still on (debug_locks 1)" grep -qE "debug_locks: +1" /proc/lockdep_stats
tap_done
