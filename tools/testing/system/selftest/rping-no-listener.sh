#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Self-test of the rig: rping.sh with the client sent to a port nobody
# listens on.  It must FAIL; make check expects this point to be "not ok".
# It also shows the time scale the guest got (run-vm-tests checks it).
echo "# guest time scale: ${VM_TIME_SCALE:-unset}"
export RPING_CLIENT_PORT=7999
exec "$(dirname "$0")/../rping.sh"
