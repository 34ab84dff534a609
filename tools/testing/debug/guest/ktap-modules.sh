#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Loads each KTAP test module of $KTAP_MODULES (space-separated .ko paths,
# set by the wrapper tools/testing/check-debug generates), one TAP point per
# module: the load must succeed (a test module fails its init when any of
# its checks fails), its KTAP must report no "not ok", and it must unload.

# shellcheck source-path=SCRIPTDIR/../../vm source=guest-lib.sh
. "$GUEST_LIB"

ktap_one() {
	local ko=$1 name dep log=/tmp/ktap.$$ rc=0 before

	name=$(modinfo -F name "$ko") || return 1
	for dep in $(modinfo -F depends "$ko" | tr ',' ' '); do
		[ -d "/sys/module/$dep" ] || modprobe "$dep" || return 1
	done
	# Only this module's part of the log (the log is never cleared: the
	# suite scans all of it at the end).
	before=$(dmesg | wc -l)
	insmod "$ko" || rc=1
	dmesg | tail -n +"$((before + 1))" > "$log"
	sed -n -e '/KTAP version/,$p' "$log" | sed -e 's/^/#   /' | head -n 200
	grep -q 'not ok' "$log" && rc=1
	grep -qE '(^|\] *)ok [0-9]+' "$log" || { echo "# $name printed no KTAP result"; rc=1; }
	if [ -d "/sys/module/$name" ]; then
		rmmod "$name" || rc=1
	fi
	return $rc
}

[ -n "${KTAP_MODULES:-}" ] || { echo "# no KTAP modules given"; exit 1; }
for ko in $KTAP_MODULES; do
	tap_check "KTAP $(basename "$ko")" ktap_one "$ko"
done
tap_done
