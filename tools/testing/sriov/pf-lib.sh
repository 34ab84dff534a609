# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# shellcheck shell=bash
#
# Helpers for PF scripts of tools/testing/sriov/run that watch the PV-CM
# cache of mlx4_ib_pvcm_pf.ko (--pf-insmod), sourced after guest-lib.sh
# and sriov-lib.sh:
#
#	. "$GUEST_LIB"
#	. "$SRIOV_LIB"
#	. "${SRIOV_LIB%/*}/pf-lib.sh"
#
# PF[name]            the module's counters (pf/stats)
# CACHE[field]        the cache's totals (pvcm/stats "total" row)
# CACHE_S1/CACHE_S2   the same for slave 1 and slave 2 (0 when absent)
# fields: live timewait allocated freed dropped cap_hits routes

PF_DBG=/sys/kernel/debug/mlx4_ib_pvcm_pf/pvcm_pf0
declare -A PF CACHE CACHE_S1 CACHE_S2 PF0 CACHE0 CACHE0_S1 CACHE0_S2
PF_FIELDS=(live timewait allocated freed dropped cap_hits routes)

# pf_loaded: this is the PF and the module is loaded; otherwise one
# failing point (the others would wait for pf_watching in vain: signal).
pf_loaded() {
	[ "$SRIOV_ROLE" = pf ] && [ -r "$PF_DBG/pf/stats" ] && return 0
	echo "# a PF script for a PF with mlx4_ib_pvcm_pf loaded"
	pf_watching
	tap_fail "mlx4_ib_pvcm_pf loaded"
	tap_done
	exit 1
}

# _cache_row NAME ROW...: fill the associative array NAME from one row.
_cache_row() {
	local -n a=$1
	local i

	shift
	a=()
	for i in "${!PF_FIELDS[@]}"; do
		a[${PF_FIELDS[i]}]=${2:-0}
		shift
	done
}

pf_read() {
	local name value who rest

	PF=()
	while read -r name value; do
		PF[$name]=$value
	done < "$PF_DBG/pf/stats"
	_cache_row CACHE total
	_cache_row CACHE_S1 slave1
	_cache_row CACHE_S2 slave2
	while read -r who rest; do
		# shellcheck disable=SC2086
		case "$who" in
		total) _cache_row CACHE "$who" $rest ;;
		slave1) _cache_row CACHE_S1 "$who" $rest ;;
		slave2) _cache_row CACHE_S2 "$who" $rest ;;
		esac
	done < "$PF_DBG/pvcm/stats"
}

# pf_baseline: remember the counters at the start of the step.
pf_baseline() {
	local k

	pf_read
	PF0=() CACHE0=() CACHE0_S1=() CACHE0_S2=()
	for k in "${!PF[@]}"; do PF0[$k]=${PF[$k]}; done
	for k in "${PF_FIELDS[@]}"; do
		CACHE0[$k]=${CACHE[$k]}
		CACHE0_S1[$k]=${CACHE_S1[$k]}
		CACHE0_S2[$k]=${CACHE_S2[$k]}
	done
}

# pf_delta NAME: the module counter NAME since pf_baseline; a counter
# the module does not have prints "no-NAME", which no check takes for a
# number.
pf_delta() {
	if [ -z "${PF[$1]+set}" ]; then
		echo "# pf_delta: the module has no counter $1" >&2
		echo "no-$1"
		return 1
	fi
	echo $((PF[$1] - ${PF0[$1]:-0}))
}

# pf_late_dreps [slaveN]: the DREPs of that VF (of every VF) refused since
# the baseline for an id the cache no longer held, whose DREQ had passed
# the cache at least TimeWait before (pvcm_pf.c's pf_late_drep): that
# DREQ released the id, TimeWait ended, the id was freed as designed.
# Not refusals of a connection the cache should hold: the checks of what
# was dropped leave them out, and say how many there were.
# shellcheck disable=SC2120 # pf_vf_kill.sh names a VF
pf_late_dreps() {
	local k n=0

	for k in "${!PF[@]}"; do
		case $k in late_drep_slave*) ;; *) continue ;; esac
		[ $# -eq 0 ] || [ "$k" = "late_drep_$1" ] || continue
		n=$((n + PF[$k] - ${PF0[$k]:-0}))
	done
	echo "$n"
}

# cache_delta WHO FIELD: WHO is total, slave1 or slave2.
cache_delta() {
	local a=CACHE b=CACHE0

	case "$1" in
	slave1) a=CACHE_S1 b=CACHE0_S1 ;;
	slave2) a=CACHE_S2 b=CACHE0_S2 ;;
	esac
	local -n now=$a then=$b
	echo $((${now[$2]:-0} - ${then[$2]:-0}))
}

pf_show() {
	sed -e "s/^/# $1: /" "$PF_DBG/pf/stats" "$PF_DBG/pvcm/stats"
}

# pf_sample_start / pf_sample_stop: the peaks of live, timewait and
# live + timewait (total and per slave) while the traffic runs, read every
# 0.2 s (without starting a program: vm_nap); pf_sample_stop sets
# PEAK[total.live], PEAK[slave1.timewait], ... and fails a point when no
# sample was taken (every peak would read 0).
declare -A PEAK
pf_sample_start() {
	rm -f /tmp/pf-sample.out /tmp/pf-sample.stop
	(
		declare -A p
		n=0
		while [ ! -e /tmp/pf-sample.stop ]; do
			# a sample: a "total" row read (not a stats file that
			# could not be opened or read nothing)
			while read -r who n_live n_tw _; do
				case "$who" in
				total) n=$((n + 1)) ;;
				slave[0-9]*) ;;
				*) continue ;;
				esac
				[ "$n_live" -gt "${p[$who.live]:-0}" ] && p[$who.live]=$n_live
				[ "$n_tw" -gt "${p[$who.timewait]:-0}" ] && p[$who.timewait]=$n_tw
				[ $((n_live + n_tw)) -gt "${p[$who.held]:-0}" ] &&
					p[$who.held]=$((n_live + n_tw))
			done < "$PF_DBG/pvcm/stats"
			vm_nap 0.2
		done
		# read once the sampler has ended (pf_sample_stop waits)
		{
			echo "samples $n"
			for k in "${!p[@]}"; do
				echo "$k ${p[$k]}"
			done
		} > /tmp/pf-sample.out
	) &
	PF_SAMPLER=$!
}

pf_sample_stop() {
	local k v

	: > /tmp/pf-sample.stop
	wait "$PF_SAMPLER"
	rm -f /tmp/pf-sample.stop
	PEAK=()
	while read -r k v; do
		PEAK[$k]=$v
	done < /tmp/pf-sample.out 2> /dev/null
	echo "# peaks: $(for k in "${!PEAK[@]}"; do printf '%s=%s ' "$k" "${PEAK[$k]}"; done)"
	[ "${PEAK[samples]:-0}" -gt 0 ] || tap_fail "the PF's peak sampler took no sample"
}

# pf_empty: nothing live, in TimeWait or routed.
pf_empty() {
	pf_read
	[ "${CACHE[live]}" = 0 ] && [ "${CACHE[timewait]}" = 0 ] &&
		[ "${CACHE[routes]}" = 0 ]
}

# pf_no_leak: on a kernel with kmemleak (the debug tier), no unreferenced
# object allocated from the module (its backtrace names
# [mlx4_ib_pvcm_pf]); two scans, the reports are then cleared.  On other
# kernels: true.
pf_no_leak() {
	local k=/sys/kernel/debug/kmemleak n

	[ -w "$k" ] || return 0
	echo scan > "$k"
	sleep 1
	echo scan > "$k"
	n=$(grep -c '\[mlx4_ib_pvcm_pf\]' "$k")
	if [ "$n" != 0 ]; then
		echo "# kmemleak: $n backtrace lines in mlx4_ib_pvcm_pf:"
		sed -e 's/^/#   /' "$k" | head -n 60
	fi
	echo clear > "$k"
	[ "$n" = 0 ]
}

# pf_queue_empty: every packet the module stole was sent or freed.
pf_queue_empty() {
	pf_read
	[ "${PF[stolen]}" = $((PF[sent] + PF[freed])) ]
}

# pf_check_drained SECONDS: TAP points: within SECONDS (TimeWait's 30 of
# the clock, the rest scaled) the cache is empty and every entry it ever
# allocated was freed, in total and per VF; every packet the module took
# was sent on or freed; no leak (pf_no_leak).
pf_check_drained() {
	local secs

	secs=$(part_scaled_secs 30 "$1")
	wait_until_clock "$secs" pf_empty
	wait_until 10 pf_queue_empty
	pf_show "after TimeWait"
	tap_check "every packet stolen was sent or freed: ${PF[stolen]} = ${PF[sent]} + ${PF[freed]}" \
		test "${PF[stolen]}" = $((PF[sent] + PF[freed]))
	tap_check "nothing live, in TimeWait or routed within $secs s" pf_empty
	tap_check "every entry freed: allocated ${CACHE[allocated]}, freed ${CACHE[freed]}" \
		test "${CACHE[allocated]}" = "${CACHE[freed]}"
	tap_check "VF 1: allocated ${CACHE_S1[allocated]}, freed ${CACHE_S1[freed]}" \
		test "${CACHE_S1[allocated]}" = "${CACHE_S1[freed]}"
	tap_check "VF 2: allocated ${CACHE_S2[allocated]}, freed ${CACHE_S2[freed]}" \
		test "${CACHE_S2[allocated]}" = "${CACHE_S2[freed]}"
	if [ -w /sys/kernel/debug/kmemleak ]; then
		tap_check "kmemleak: nothing of mlx4_ib_pvcm_pf unreferenced" pf_no_leak
	fi
}

# pf_watch_step [MARGIN]: baseline, sampler, pf_watching, wait for the
# step's end (one TAP point), sampler stopped, counters read.  MARGIN
# (default 75) is the time the script needs after the step's end, out of
# its time limit.
pf_watch_step() {
	pf_baseline
	pf_sample_start
	pf_watching
	wait_step_end "$(step_time_left "${1:-75}")"
	tap_check "the VFs and the remote finished the step" test $? = 0
	pf_sample_stop
	pf_read
	pf_show "after the traffic"
}

# pf_check_clean_traffic: TAP points: CM MADs went both ways between the
# VFs and the wire, and between the VFs if a traffic script of the step
# said so (vm_signal vf-to-vf-$VM_TEST_INDEX), and were rewritten;
# nothing was dropped, no VF's own id left for the wire.
pf_check_clean_traffic() {
	local k d late dirs=(cm_vf_to_wire cm_wire_to_vf rewritten)

	vm_wait "vf-to-vf-$VM_TEST_INDEX" 0 && dirs+=(cm_vf_to_vf)
	for k in "${dirs[@]}"; do
		d=$(pf_delta "$k")
		tap_check "CM MADs $k: $d" test "$d" -gt 0
	done
	late=$(pf_late_dreps)
	[ "$late" = 0 ] ||
		echo "# DREPs after their id's TimeWait, refused: $late (left out below)"
	for k in drop_malformed drop_fragment drop_bad_icrc drop_mux drop_demux \
		drop_misrouted drop_off_path drop_queue drop_nomem drop_stale \
		audit_own_id audit_unknown audit_wrong; do
		d=$(pf_delta "$k")
		[ "$k" != drop_mux ] || d=$((d - late))
		tap_check "$k: $d" test "$d" = 0
	done
	d=$(cache_delta total allocated)
	tap_check "the cache mapped connections: $d" test "$d" -gt 0
	d=$(($(cache_delta total dropped) - late))
	tap_check "the cache dropped nothing: $d" test "$d" = 0
}
