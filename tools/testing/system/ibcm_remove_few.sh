#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make check's share of ibcm_remove_many.sh: 3 rounds (40 s to minutes
# each under TCG, by the host's load), leaving ib_cm loaded for
# ibcm_remove.sh, which unloads it.  The full 20 rounds run in
# run-vm-tests' suite "removal-stress" (--suites removal-stress; not part
# of make check).
export REMOVE_ROUNDS=${REMOVE_ROUNDS:-3} REMOVE_UNLOAD=${REMOVE_UNLOAD:-0}
exec "$(dirname "$0")/ibcm_remove_many.sh"
