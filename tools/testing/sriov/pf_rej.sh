#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# PF side of rej.sh (tools/testing/sriov/run --pf-test, mlx4_ib_pvcm_pf.ko
# loaded).  A REQ of a VF that the wire rejects ends its connection id,
# and every delete goes through the one delayed path: the entry must stay
# in TimeWait (30 s) before it is freed, so that a late or duplicate MAD
# of that connection still maps and its pv_cm_id is not reused at once.
# A REJ a VF sends for a REQ it never answered creates no entry (its local
# id leaves as 0).  Afterwards the cache drains as after any step.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"
# shellcheck source=SCRIPTDIR/pf-lib.sh
. "${SRIOV_LIB%/*}/pf-lib.sh"

pf_loaded
pf_watch_step 75
pf_check_clean_traffic
for s in slave1 slave2; do
	n_alloc=$(cache_delta "$s" allocated)
	tap_check "$s: one entry for its rejected REQ: $n_alloc" test "$n_alloc" = 1
	tap_check "$s: it went through TimeWait (peak ${PEAK[$s.timewait]:-0})" \
		test "${PEAK[$s.timewait]:-0}" -ge 1
done
# one REJ per VF, one more for each REQ the remote sent again (a slow
# machine can outlast its response timeout)
d=$(pf_delta audit_no_id)
tap_check "the VFs' REJs left with local id 0: $d" test "$d" -ge 2
pf_check_drained 60
tap_done
