#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Negative self-test of the rig (vm-run --selftest-splat): put a fake splat
# in the kernel log.  The script itself passes; the run as a whole must fail
# at the "kernel log clean" point, proving that the splat scan bites.

echo "WARNING: test splat from vm-run --selftest-splat" > /dev/kmsg || exit 1
echo "# wrote a fake WARNING to /dev/kmsg"
# and the line of a user-space fault, which must be listed, not failed
echo "traps: selftest-splat[1] general protection fault ip:0 sp:0 error:0 in selftest-splat[0+1000]" > /dev/kmsg || exit 1
echo "# wrote a fake user-space fault to /dev/kmsg"
