#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Negative self-test of the rig (vm-run --selftest-splat): put a fake splat
# in the kernel log.  The script itself passes; the run as a whole must fail
# at the "kernel log clean" point, proving that the splat scan bites.
# An announced splat ("vm-run: expect once: " and its whole line), written
# once, must be let through; one written twice, and any line against an
# announcement of only a part of it, must not.

echo "WARNING: test splat from vm-run --selftest-splat" > /dev/kmsg || exit 1
echo "# wrote a fake WARNING to /dev/kmsg"
# and the line of a user-space fault, which must be listed, not failed
echo "traps: selftest-splat[1] general protection fault ip:0 sp:0 error:0 in selftest-splat[0+1000]" > /dev/kmsg || exit 1
echo "# wrote a fake user-space fault to /dev/kmsg"
# an expected splat, announced first: let through, not failed
line="WARNING: expected splat from vm-run --selftest-splat"
echo "vm-run: expect once: $line" > /dev/kmsg || exit 1
echo "$line" > /dev/kmsg || exit 1
echo "# wrote an announced WARNING to /dev/kmsg"
# announced once but logged twice: both listed as splats
line="WARNING: twice from vm-run --selftest-splat"
echo "vm-run: expect once: $line" > /dev/kmsg || exit 1
echo "$line" > /dev/kmsg || exit 1
echo "$line" > /dev/kmsg || exit 1
# a bare pattern announced covers no line (the test splat above stays)
echo "vm-run: expect once: WARNING:" > /dev/kmsg || exit 1
# nor does an announcement after its line
line="WARNING: early from vm-run --selftest-splat"
echo "$line" > /dev/kmsg || exit 1
echo "vm-run: expect once: $line" > /dev/kmsg || exit 1
echo "# wrote a WARNING announced once and logged twice, a bare announcement and a late one"
