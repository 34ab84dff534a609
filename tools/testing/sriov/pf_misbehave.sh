#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# PF side of misbehave.sh (tools/testing/sriov/run --pf-test,
# mlx4_ib_pvcm_pf.ko loaded).  With VF 1's cap lowered to ABUSE_CAP
# entries: every MAD of cm_mad_abuse --malformed is refused and counted
# against VF 1; of the REQ flood exactly the cap is mapped and the rest
# refused and counted as cap hits; VF 1 never holds more than its cap;
# VF 2's connections map with nothing dropped or refused; the module's
# drop_mux counts the same refusals; and the cache drains.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"
# shellcheck source=SCRIPTDIR/pf-lib.sh
. "${SRIOV_LIB%/*}/pf-lib.sh"

CAP=${ABUSE_CAP:-200}
PARAM=/sys/module/mlx4_ib_pvcm_pf/parameters/pvcm_max_per_vf

pf_loaded
old_cap=$(cat "$PARAM")
echo "$CAP" > "$PARAM"
vm_signal abuse-cap-set
pf_watch_step 170
echo "$old_cap" > "$PARAM"

malformed=$(awk '/^malformed / { print $2 }' "$VM_SHARED/abuse.counts" 2> /dev/null)
flood=$(awk '/^flood / { print $2 }' "$VM_SHARED/abuse.counts" 2> /dev/null)
echo "# VF 1 sent ${malformed:-?} malformed MADs and ${flood:-?} REQs; its cap: $CAP"
tap_check "VF 1's tool reported what it sent" test -n "$malformed" -a -n "$flood"
malformed=${malformed:-0} flood=${flood:-0}

# What VF 1 held when the step began counts against its cap too, until
# its TimeWait ends during the step: at least the room left then, at
# most the cap.
room=$((CAP - CACHE0_S1[live] - CACHE0_S1[timewait]))
mapped=$(cache_delta slave1 allocated)
refused=$((flood - mapped))
tap_check "VF 1: REQs mapped up to its cap: $mapped ($room free at the start, cap $CAP)" \
	test "$mapped" -ge "$room" -a "$mapped" -le "$CAP"
tap_check "VF 1: never more than its cap held (peak ${PEAK[slave1.held]:-0})" \
	test "${PEAK[slave1.held]:-0}" -le "$CAP"
d=$(cache_delta slave1 cap_hits)
tap_check "VF 1: the rest of the flood hit the cap: $d of $refused" \
	test "$d" = "$refused"
d=$(cache_delta slave1 dropped)
tap_check "VF 1: every refused MAD counted: $d = $malformed + $refused" \
	test "$d" = $((malformed + refused))
d=$(pf_delta drop_mux)
tap_check "the PF dropped them: drop_mux $d" test "$d" = $((malformed + refused))
for k in dropped cap_hits; do
	d=$(cache_delta slave2 "$k")
	tap_check "VF 2: $k $d" test "$d" = 0
done
d=$(cache_delta slave2 allocated)
tap_check "VF 2: its connections mapped: $d" test "$d" -ge 2
d=$(pf_delta drop_fragment)
tap_check "VF 1's CM MAD in two IP fragments: both dropped, drop_fragment $d" \
	test "$d" = 2
for k in drop_malformed drop_bad_icrc drop_demux drop_misrouted \
	drop_off_path drop_queue drop_nomem drop_stale audit_own_id audit_unknown \
	audit_wrong; do
	d=$(pf_delta "$k")
	tap_check "$k: $d" test "$d" = 0
done
# The flood's REQs were rejected by the remote: TimeWait, then freed.
pf_check_drained 150
tap_done
