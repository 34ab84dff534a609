#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# PF side of a step of make main's live part (tools/testing/main-job):
# the PV-CM cache's counters before the step's traffic, their peaks during
# it and after it, as "REPORT:" lines, and a TAP point that the traffic
# went through the cache without a drop.  In the run's last step it also
# waits out TimeWait and reports the cache drained.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"
# shellcheck source=SCRIPTDIR/pf-lib.sh
. "${SRIOV_LIB%/*}/pf-lib.sh"

# report WHEN: one line of the cache's totals and one per slave.
report() {
	local who

	echo "# REPORT: PV-CM $1: live ${CACHE[live]}, TimeWait ${CACHE[timewait]}, allocated ${CACHE[allocated]}, freed ${CACHE[freed]}, dropped ${CACHE[dropped]}"
	for who in 1 2; do
		local -n c=CACHE_S$who
		echo "# REPORT:   VF $who: live ${c[live]}, TimeWait ${c[timewait]}, allocated ${c[allocated]}, freed ${c[freed]}"
	done
}

pf_loaded
step=$(sed -n "${VM_TEST_INDEX}p" "$VM_SHARED/../vm$VF1_INDEX/tests")
step=${step##*/}
pf_read
report "before $step"
pf_watch_step 75
echo "# REPORT: PV-CM during $step: peak live ${PEAK[total.live]:-0} (VF 1 ${PEAK[slave1.live]:-0}, VF 2 ${PEAK[slave2.live]:-0}), peak TimeWait ${PEAK[total.timewait]:-0}"
echo "# REPORT: PF during $step: CM MADs VF->wire $(pf_delta cm_vf_to_wire), wire->VF $(pf_delta cm_wire_to_vf), VF->VF $(pf_delta cm_vf_to_vf), rewritten $(pf_delta rewritten), dropped $(($(pf_delta drop_mux) + $(pf_delta drop_demux)))"
report "after $step"
pf_check_clean_traffic
if [ "$VM_TEST_INDEX" = "$(wc -l < "$VM_SHARED/../vm$PF_INDEX/tests")" ]; then
	pf_check_drained 60
	report "after TimeWait"
fi
tap_done
