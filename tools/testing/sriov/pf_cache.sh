#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# PF side of a step of tools/testing/sriov/run (--pf-test) with
# mlx4_ib_pvcm_pf.ko loaded (--pf-insmod): the VF guests' CM MADs of this
# step went through the PV-CM cache, every one was rewritten and none was
# refused, no VF's own comm id left for the wire, and once the connections
# have ended and TimeWait (30 s) has passed the cache is empty again:
# nothing live, nothing in TimeWait, no route, every entry freed.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"
# shellcheck source=SCRIPTDIR/pf-lib.sh
. "${SRIOV_LIB%/*}/pf-lib.sh"

pf_loaded
pf_watch_step 75
pf_check_clean_traffic
# The connections have ended: their ids are in TimeWait for 30 s, the
# requests' routes as long.
pf_check_drained 60
tap_done
