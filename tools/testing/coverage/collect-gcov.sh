#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test of the coverage run (tools/testing/coverage/run), the last
# one in each guest: copies every gcov data file of the guest's kernel
# (/sys/kernel/debug/gcov/<build dir>/...*.gcda; only objects built with
# GCOV_PROFILE=y have one) to $VM_SHARED/gcov/vm<N>/, under the same
# path, for the host's report.py.
#
# The kernel keeps the counters of an unloaded module (gcov_persist=1,
# the default) and adds them to those of the module when it is loaded
# again, and it sums the objects linked into several modules (mlx4's
# cm.o is in mlx4_ib.ko and in both PV-CM test modules): so this runs
# after the suite's tests have unloaded what they unload, and one file
# per object holds the whole suite.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

root=/sys/kernel/debug/gcov
out=$VM_SHARED/gcov/vm$VM_INDEX

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
if [ ! -d "$root" ]; then
	echo "# no $root: the kernel has no CONFIG_GCOV_KERNEL"
	tap_fail "gcov data in debugfs"
	tap_done
	exit $?
fi
grep -q ' gcov_persist=0' /proc/cmdline &&
	echo "# gcov_persist=0: unloaded modules' counters are lost"

n=0 bad=0
while IFS= read -r -d '' f; do
	rel=${f#"$root"}
	mkdir -p "$out$(dirname "$rel")" || { bad=$((bad + 1)); continue; }
	# A seq file: its size is 0, so read it rather than cp it.
	if cat "$f" > "$out$rel" && [ -s "$out$rel" ]; then
		n=$((n + 1))
	else
		echo "# could not copy $f"
		bad=$((bad + 1))
	fi
done < <(find "$root" -name '*.gcda' -print0)

echo "# $n gcov data file(s) copied to $out; still loaded: $(awk '$1 ~ /^(ib_cm|mlx4_ib)/ { printf "%s ", $1 }' /proc/modules)"
find "$out" -name "*.gcda" -printf "#   %P %s bytes\n" 2> /dev/null | head -n 60
tap_check "gcov data of the instrumented objects copied ($n files)" test "$n" -gt 0
tap_check "every gcov data file read" test "$bad" = 0
tap_done
