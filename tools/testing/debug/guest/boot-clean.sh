#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# First guest test of the debug suite (tools/testing/check-debug).
#
# Proves the guest runs the debug kernel (KASAN, lockdep, kmemleak, debug
# objects, fail-nth all live), checks the boot log with ../scan-log, then
# makes a kmemleak baseline: objects leaked during boot are listed here as
# diagnostics and cleared, so the final scan (leak-scan.sh) only reports
# what leaked while the suite ran.  Last it clears the ring buffer: the
# rig's own log check must not see kmemleak's harmless start-up banner; the
# boot log it would have scanned was scanned here.

# shellcheck source-path=SCRIPTDIR/../../vm source=guest-lib.sh
. "$GUEST_LIB"

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
KML=/sys/kernel/debug/kmemleak
BOOTLOG=/tmp/debug-boot-dmesg

echo "# kernel $(uname -r)"
dmesg > "$BOOTLOG"
tap_check "KASAN initialized" grep -q "KernelAddressSanitizer initialized" "$BOOTLOG"
tap_check "lockdep on (debug_locks 1)" grep -qE "debug_locks: +1" /proc/lockdep_stats
tap_check "kmemleak present" test -w "$KML"
tap_check "fail-nth present" test -w /proc/thread-self/fail-nth
tap_check "debug objects on" test -r /sys/kernel/debug/debug_objects/stats

grep -v "kmemleak: Kernel memory leak detector initialized" "$BOOTLOG" \
	> "$BOOTLOG.filtered"
tap_check "boot log clean" "$HERE/../scan-log" "$BOOTLOG.filtered"

baseline() {
	local leaks

	# Objects younger than 5 s are never reported: let boot settle.
	sleep 6
	echo scan > "$KML" || return 1
	leaks=$(grep -c '^unreferenced object' "$KML")
	echo "# kmemleak baseline: $leaks object(s) leaked during boot, cleared"
	grep -A4 "^unreferenced object" "$KML" | head -n 40 |
		sed -e "s/^unreferenced object/boot-time object/" -e "s/^/#   /"
	echo clear > "$KML"
}
tap_check "kmemleak baseline" baseline
dmesg -C
tap_done
