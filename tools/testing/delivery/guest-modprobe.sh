#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest side of test-dkms: with the DKMS package installed in the root the
# guest boots from, a plain `modprobe` must load our modules from
# updates/dkms, and what is loaded must be that module (out-of-tree
# taint, the file's srcversion or build id).

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

for m in ib_cm mlx4_ib; do
	file=$(modinfo -F filename "$m" 2>/dev/null)
	echo "# $m resolves to $file"
	tap_check "modprobe $m" modprobe "$m"
	tap_check "$m resolves to updates/dkms" \
		grep -q '/updates/dkms/' <<<"$file"
	# The in-box modules are built in-tree; a DKMS build is not, so the
	# kernel marks it out-of-tree ("O" taint).  The loaded module must
	# also be the file's: its srcversion, or its GNU build id where the
	# kernel gives modules no srcversion (Debian's do not).
	want=$(module_id "$file")
	have=$(loaded_module_id "$m")
	taint=$(cat "/sys/module/$m/taint" 2>/dev/null)
	echo "# $m: taint '$taint', loaded '$have', file '$want'"
	tap_check "loaded $m is the DKMS one" \
		test "${taint#*O}" != "$taint" -a -n "$want" -a "$have" = "$want"
done
exit "$TAP_FAILED"
