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
# live id or route within CLEAN_SECS (20 s, times VM_TIME_SCALE) of the
# link going down, nothing at all within that + TimeWait, while slave 2's
# held connection stays mapped and nothing of it is dropped.  The PF
# then brings the interface up again, as for a VF that restarts: the
# DREQs the remote sends when it closes the dead VF's connections reach
# the cache and are refused.  Afterwards the cache drains.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"
# shellcheck source=SCRIPTDIR/pf-lib.sh
. "${SRIOV_LIB%/*}/pf-lib.sh"

# the clean is a work item queued at once; then TimeWait
CLEAN_SECS=${CLEAN_SECS:-20}
CONNS=${UCMA_CONNS:-50}	# vf_kill.sh's ucmatose connections per VF
TIMEWAIT_SECS=30

pf_loaded
pf_baseline
pf_sample_start
pf_watching
# after the kill: the clean, TimeWait, the others' end, the drain
vm_wait "killed-vm$VF1_INDEX" "$(step_time_left 170)"
tap_check "the host killed vf1" test $? = 0
pf_read
s1_live=${CACHE_S1[live]}
echo "# when vf1 died: slave1 live $s1_live, slave2 live ${CACHE_S2[live]}"
# its rping and all its ucmatose connections (vf_kill.sh holds them)
tap_check "vf1 died in the middle of ucmatose: $s1_live live, $((CONNS + 1)) wanted" \
	test "$s1_live" -ge $((CONNS + 1))
tap_check "vf2 had its connections then: ${CACHE_S2[live]}" test "${CACHE_S2[live]}" -gt 0
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
tap_check "slave1: nothing live or routed within $(scaled_secs "$CLEAN_SECS") s ($((SECONDS - t0)) s)" s1_cleaned
# Up again, as for a VF that restarts: what the remote still sends for
# the dead instance's connections reaches the cache, which must refuse
# it (down, the route would drop it before the cache saw it).
ip link set "$PF_VF1_DEV" up
# VF 2's held rping is connected until VF 2 saw it ping on after this
tap_check "slave2 kept its held connection: ${CACHE_S2[live]} live" \
	test "${CACHE_S2[live]}" -gt 0
vm_signal vf1-cleaned
d=$(pf_delta vf_cleans)
tap_check "one VF clean: $d" test "$d" = 1
# from the link's fall: the clean (as slow as the host) and TimeWait
gone=$(part_scaled_secs "$TIMEWAIT_SECS" $((CLEAN_SECS + TIMEWAIT_SECS)))
left=$((t0 + gone - SECONDS))
wait_until_clock $((left > 0 ? left : 0)) s1_gone
tap_check "slave1: nothing in TimeWait either within $gone s ($((SECONDS - t0)) s)" s1_gone

wait_step_end "$(step_time_left 70)"
tap_check "the VFs and the remote finished the step" test $? = 0
pf_sample_stop
pf_read
pf_show "after the traffic"
tap_check "slave1: every entry freed: allocated ${CACHE_S1[allocated]}, freed ${CACHE_S1[freed]}" \
	test "${CACHE_S1[allocated]}" = "${CACHE_S1[freed]}"
# VF 2's DREPs after their id's TimeWait (pf_late_dreps) are no refusal
# of a connection the cache holds: left out.  A DREP sooner than that,
# or of an id no DREQ carried, stays a drop.
late=$(pf_late_dreps slave2)
[ "$late" = 0 ] ||
	echo "# vf2's DREPs after their id's TimeWait, refused: $late (left out below)"
d=$(($(cache_delta slave2 dropped) - late))
tap_check "slave2: dropped $d" test "$d" = 0
d=$(cache_delta slave2 cap_hits)
tap_check "slave2: cap_hits $d" test "$d" = 0
for k in drop_malformed drop_fragment drop_bad_icrc drop_mux drop_misrouted \
	drop_queue drop_nomem audit_own_id audit_unknown audit_wrong; do
	d=$(pf_delta "$k")
	[ "$k" != drop_mux ] || d=$((d - late))
	tap_check "$k: $d" test "$d" = 0
done
# the remote closed vf1's connections before it ended its script
d=$(pf_delta drop_demux)
tap_check "the remote's DREQs for the dead vf1 refused: drop_demux $d" \
	test "$d" -gt 0
echo "# vf1's MADs queued before its link went: drop_stale $(pf_delta drop_stale)"
pf_check_drained 60
tap_done
