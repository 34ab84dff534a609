#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Load and unload mlx4_ib without hardware.  With the project's build the
# rig loads our mlx4_ib.ko (vm-run --insmod .../mlx4_ib.ko); this test checks
# that the loaded module is that file, then unloads and reloads it twice.
# Without --insmod it exercises the distro mlx4_ib instead.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

ours=
for ko in $VM_INSMOD; do
	[ "$(modinfo -F name "$ko")" = mlx4_ib ] && ours=$ko
done

load() {
	if [ -n "$ours" ]; then
		insmod "$ours"
	else
		modprobe mlx4_ib
	fi
}

is_ours() {
	echo "# file $(module_id "$ours") loaded $(loaded_module_id mlx4_ib)"
	module_is_file mlx4_ib "$ours"
}

tap_check "modprobe mlx4_core" modprobe mlx4_core
if [ -n "$ours" ]; then
	echo "# project module: $ours"
else
	echo "# no project mlx4_ib.ko given: testing the distro module"
	tap_check "modprobe mlx4_ib" load
fi
tap_check "mlx4_ib is loaded" test -d /sys/module/mlx4_ib
[ -n "$ours" ] && tap_check "loaded mlx4_ib is the project's" is_ours

for cycle in 1 2; do
	tap_check "rmmod mlx4_ib ($cycle)" rmmod mlx4_ib
	tap_check "mlx4_ib is gone ($cycle)" test ! -d /sys/module/mlx4_ib
	tap_check "reload mlx4_ib ($cycle)" load
	[ -n "$ours" ] && tap_check "reloaded mlx4_ib is the project's ($cycle)" is_ours
done
tap_check "final rmmod mlx4_ib" rmmod mlx4_ib
tap_check "rmmod mlx4_core" rmmod mlx4_core
tap_done
