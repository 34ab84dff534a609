#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# PF side of vf_kill.sh (tools/testing/sriov/run --pf-test,
# mlx4_ib_pvcm_pf.ko loaded).  When the host has killed VF 1's guest, the
# PF takes VF 1's interface down, as mlx4_core reports a VF's shutdown
# (MLX4_DEV_EVENT_SLAVE_SHUTDOWN, patches/0002): the module cleans slave 1.
# As documented (mlx4-pvcm.rst, "Per-VF cap and cleanup"), lookups treat
# its ids as absent at once and the clean's work moves them, live ones
# included (it never disconnected), to TimeWait and drops its routes: no
# live id or route within seconds, nothing at all after TimeWait (30 s),
# while slave 2's connections stay mapped; the remote's DREQs for the
# dead VF's connections are refused.  Afterwards the cache drains.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"
# shellcheck source=SCRIPTDIR/pf-lib.sh
. "${SRIOV_LIB%/*}/pf-lib.sh"

# the clean is a work item queued at once; then TimeWait
CLEAN_SECS=${CLEAN_SECS:-20}
TIMEWAIT_SECS=30

pf_loaded
pf_baseline
pf_sample_start
pf_watching
vm_wait "killed-vm$VF1_INDEX" 240
tap_check "the host killed vf1" test $? = 0
pf_read
s1_live=${CACHE_S1[live]}
s2_held=$((CACHE_S2[live] + CACHE_S2[timewait]))
echo "# when vf1 died: slave1 live $s1_live, slave2 live or in TimeWait $s2_held"
tap_check "vf1 died with live connections: $s1_live" test "$s1_live" -gt 0
tap_check "vf2 had its connections then: $s2_held" test "$s2_held" -gt 0
t0=$SECONDS
ip link set "$PF_VF1_DEV" down
s1_cleaned() {
	pf_read
	[ "$((CACHE_S1[live] + CACHE_S1[routes]))" = 0 ]
}
s1_gone() {
	pf_read
	[ "$((CACHE_S1[live] + CACHE_S1[timewait] + CACHE_S1[routes]))" = 0 ]
}
wait_until "$CLEAN_SECS" s1_cleaned
tap_check "slave1: nothing live or routed within $CLEAN_SECS s ($((SECONDS - t0)) s)" s1_cleaned
# VF 2 opens nothing new before vf1-cleaned; its ids leave TimeWait
# only 30 s after its connections end
tap_check "slave2 kept its ids: $((CACHE_S2[live] + CACHE_S2[timewait])) of $s2_held" \
	test $((CACHE_S2[live] + CACHE_S2[timewait])) = "$s2_held"
vm_signal vf1-cleaned
pf_read
d=$(pf_delta vf_cleans)
tap_check "one VF clean: $d" test "$d" = 1
wait_until $((TIMEWAIT_SECS + CLEAN_SECS)) s1_gone
tap_check "slave1: nothing in TimeWait either within $((TIMEWAIT_SECS + CLEAN_SECS)) s ($((SECONDS - t0)) s)" s1_gone

wait_step_end $((${VM_TEST_TIMEOUT:-300} - 75))
pf_sample_stop
pf_read
pf_show "after the traffic"
tap_check "slave1: every entry freed: allocated ${CACHE_S1[allocated]}, freed ${CACHE_S1[freed]}" \
	test "${CACHE_S1[allocated]}" = "${CACHE_S1[freed]}"
for k in dropped cap_hits; do
	d=$(cache_delta slave2 "$k")
	tap_check "slave2: $k $d" test "$d" = 0
done
for k in drop_malformed drop_bad_icrc drop_mux drop_misrouted drop_queue \
	drop_nomem audit_own_id; do
	d=$(pf_delta "$k")
	tap_check "$k: $d" test "$d" = 0
done
echo "# refused for the dead vf1 (its peer's DREQs and retries): drop_demux $(pf_delta drop_demux)"
pf_check_drained 60
tap_done
