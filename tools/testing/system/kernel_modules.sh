#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The guest runs the kernel it was meant to with that kernel's own modules.
# For a kernel that is not installed on the host (Debian sid's, vm-run
# --krel with the cache of tools/sid-kernel.sh) the rig names the module
# tree on the kernel command line (vm.modules=DIR) and the guest's init
# mounts DIR at /lib/modules/$(uname -r): modprobe must load from there,
# and the modules must be built for the running kernel.  For an installed
# kernel the tree is the host's own /lib/modules/$(uname -r).

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

krel=$(uname -r)
dir=$(sed -n 's/.*vm\.modules=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$dir" ]; then
	echo "# kernel $krel, modules from $dir"
else
	echo "# kernel $krel, modules from the host's /lib/modules/$krel"
fi

if [ -n "$dir" ]; then
	# mountinfo: field 4 is the mount's root within its file system
	# (the host's / over 9p), field 5 its mount point, symbolic links
	# resolved (/lib is usr/lib)
	mnt=$(readlink -f "/lib/modules/$krel")
	root=$(awk -v m="$mnt" '$5 == m { r = $4 } END { print r }' \
		/proc/self/mountinfo)
	echo "# $mnt is ${root:-not a mount point}"
	tap_check "/lib/modules/$krel is $dir" test "$root" = "$dir"
fi

f=$(modinfo -n rdma_rxe)
echo "# rdma_rxe: $f"
tap_check "rdma_rxe is in /lib/modules/$krel" \
	test "${f#/lib/modules/"$krel"/kernel/}" != "$f"
vermagic=$(modinfo -F vermagic rdma_rxe)
echo "# vermagic: $vermagic"
tap_check "rdma_rxe is built for $krel" test "${vermagic%% *}" = "$krel"
tap_check "modprobe rdma_rxe" modprobe rdma_rxe
tap_done
