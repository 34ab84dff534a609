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

DBG=/sys/kernel/debug/mlx4_ib/pvcm_pf0
if [ "$SRIOV_ROLE" != pf ] || [ ! -r "$DBG/pf/stats" ]; then
	echo "# a PF script for a PF with mlx4_ib_pvcm_pf loaded"
	pf_watching
	exit 1
fi

declare -A PF CACHE
read_stats() {
	local name value who live tw alloc freed dropped cap routes
	PF=()
	while read -r name value; do
		PF[$name]=$value
	done < "$DBG/pf/stats"
	CACHE=()
	while read -r who live tw alloc freed dropped cap routes; do
		[ "$who" = total ] || continue
		CACHE=([live]=$live [timewait]=$tw [allocated]=$alloc
			[freed]=$freed [dropped]=$dropped [cap_hits]=$cap
			[routes]=$routes)
	done < "$DBG/pvcm/stats"
}

show() {
	sed -e "s/^/# $1: /" "$DBG/pf/stats" "$DBG/pvcm/stats"
}

read_stats
declare -A PF0
for k in "${!PF[@]}"; do
	PF0[$k]=${PF[$k]}
done
alloc0=${CACHE[allocated]:-0}
pf_watching
wait_step_end $((${VM_TEST_TIMEOUT:-300} - 75))
tap_check "the VFs and the remote finished the step" test $? = 0
read_stats
show "after the traffic"

delta() {
	echo $((${PF[$1]:-0} - ${PF0[$1]:-0}))
}

for k in cm_vf_to_wire cm_wire_to_vf cm_vf_to_vf rewritten; do
	tap_check "CM MADs $k: $(delta "$k")" test "$(delta "$k")" -gt 0
done
for k in drop_malformed drop_bad_icrc drop_mux drop_demux drop_misrouted \
	drop_off_path drop_queue drop_nomem audit_own_id; do
	tap_check "$k: $(delta "$k")" test "$(delta "$k")" = 0
done
tap_check "the cache mapped connections: $((CACHE[allocated] - alloc0))" \
	test $((CACHE[allocated] - alloc0)) -gt 0
tap_check "the cache dropped nothing: ${CACHE[dropped]}" \
	test "${CACHE[dropped]}" = 0

# The connections have ended: their ids are in TimeWait for 30 s, the
# requests' routes as long.
empty() {
	read_stats
	[ "${CACHE[live]}" = 0 ] && [ "${CACHE[timewait]}" = 0 ] &&
		[ "${CACHE[routes]}" = 0 ]
}
wait_until 60 empty
show "after TimeWait"
tap_check "nothing live, in TimeWait or routed after TimeWait" empty
tap_check "every entry freed: allocated ${CACHE[allocated]}, freed ${CACHE[freed]}" \
	test "${CACHE[allocated]}" = "${CACHE[freed]}"
tap_done
