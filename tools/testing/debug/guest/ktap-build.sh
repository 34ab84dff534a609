#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test for targeted debug runs (check-debug --test, mutate.sh): load
# every KTAP test module (*test*.ko, *fuzz*.ko) of the build whose modules
# the rig insmod'ed, one after the other, through tools/testing/system/
# ktap_module.sh, with soft-RoCE up for the modules that need a device.
# One point per module.

# shellcheck source-path=SCRIPTDIR/../../vm source=guest-lib.sh
. "$GUEST_LIB"

here=$(cd "$(dirname "$0")" && pwd)
ktap=$here/../../system/ktap_module.sh
tree=
for ko in ${VM_INSMOD:-}; do
	case $ko in
	*/drivers/infiniband/*) tree=${ko%%/drivers/infiniband/*}; break ;;
	esac
done
if [ -z "$tree" ]; then
	tap_fail "a project build was insmod'ed (VM_INSMOD)"
	tap_done
	exit 1
fi
rxe_up || echo "# no soft-RoCE device: device tests will fail"
mapfile -t mods < <(find "$tree" \( -name '*test*.ko' -o -name '*fuzz*.ko' \) |
	sort)
tap_check "the build has KTAP test modules" test ${#mods[@]} -gt 0
for m in "${mods[@]}"; do
	echo "# ---- ${m##*/}"
	KTAP_MODULE=$m KTAP_DEPS=ib_core bash "$ktap" 2>&1 | sed 's/^/# /'
	tap_check "${m##*/}" test "${PIPESTATUS[0]}" = 0
done
tap_done
