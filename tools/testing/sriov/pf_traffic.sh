#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# pf_cache.sh without the wait for TimeWait at the end: the step's CM
# MADs went through the PV-CM cache, every one was rewritten and none was
# refused, no VF's own comm id left for the wire.  For a step that a
# pf_cache.sh step follows, which then finds the cache drained of both.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"
# shellcheck source=SCRIPTDIR/pf-lib.sh
. "${SRIOV_LIB%/*}/pf-lib.sh"

pf_loaded
pf_watch_step 75
pf_check_clean_traffic
tap_done
