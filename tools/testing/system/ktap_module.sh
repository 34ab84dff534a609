#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Load an in-kernel KTAP test module and report its verdict.  On a kernel
# without KUnit the module runs its checks in its init function and fails
# the load when one fails.  On a kernel with KUnit, KUnit runs the same
# cases as a suite while the module loads and the load itself succeeds; a
# failure then shows only as a "not ok" line, indented (nested KTAP).
#
#   KTAP_MODULE=/path/to/test.ko [KTAP_DEPS="ib_core"] [KTAP_ARGS="p=v ..."] \
#   ktap_module.sh
#
# KTAP_ARGS are module parameters for the load.
#
# Points: the load succeeded, the module printed a KTAP plan, no case (or
# KUnit suite) said "not ok", and it unloads.  The KTAP lines are shown as
# diagnostics.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

ko=${KTAP_MODULE:?KTAP_MODULE not set}
name=$(modinfo -F name "$ko")
out=/tmp/ktap-$name.log

for dep in ${KTAP_DEPS:-}; do
	modprobe "$dep" || echo "# modprobe $dep failed"
done

# On a kernel with fault injection (the debug tier), let the test modules'
# fail-nth sweeps reach sleeping allocations too, and keep the injected
# failures quiet; nothing is injected unless a module arms its own
# task's fail-nth counter.  The old values come back after the load.
knobs=()
for f in /sys/kernel/debug/failslab /sys/kernel/debug/fail_page_alloc; do
	[ -w "$f/ignore-gfp-wait" ] || continue
	knobs+=("$f/ignore-gfp-wait=$(cat "$f/ignore-gfp-wait")")
	knobs+=("$f/verbose=$(cat "$f/verbose")")
	echo N > "$f/ignore-gfp-wait"
	echo 0 > "$f/verbose"
	echo "# ${f##*/}: fail-nth reaches sleeping allocations during the load"
done

read -ra args <<<"${KTAP_ARGS:-}"
echo "# loading $ko${args[*]:+ ${args[*]}}"
dmesg -C
insmod "$ko" "${args[@]}"
rc=$?
for kv in "${knobs[@]}"; do
	echo "${kv#*=}" > "${kv%%=*}"
done
# The module's own lines, without timestamps: KTAP from its first
# (possibly indented, as KUnit's are) header on.
dmesg | sed -e 's/^\[[^]]*\] //' >"$out"
sed -n '/^ *KTAP version/,$p' "$out" | sed -e 's/^/# /'

tap_check "$name loads (insmod status $rc)" test "$rc" = 0
tap_check "$name printed a KTAP plan" grep -qE '^ *1\.\.[0-9]+' "$out"
tap_check "$name has no failed case" bash -c "! grep -qE '^ *not ok ' '$out'"
if grep -q "^$name " /proc/modules; then
	tap_check "$name unloads" rmmod "$name"
fi
tap_done
