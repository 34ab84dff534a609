#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test: the same ib_cm_conn_test.ko (RC, UC and XRC connections
# between two cm_ids over rxe0, through the exported API only) first over
# our ib_cm, which the rig insmodded, then over the distribution's ib_cm.
# Points per ib_cm: the module loads, prints a KTAP plan, each case passes,
# it unloads; our ib_cm unloads without a cm_id left; the ib_cm loaded for
# the second run is the distribution's file.  Last point: both ib_cm's
# give every case the same verdict, except the cases in which the
# distribution's ib_cm is known to depart from the IBTA layout (DEPARTS
# below): ours must pass them and the distro's must still fail them, so
# that the list cannot go stale.  Our ib_cm (and the CM users that were
# loaded) is put back at the end, so later scripts run on it again.
#
#   [CONN_TEST=/path/ib_cm_conn_test.ko] [PARITY_OURS_ONLY=1] ibcm_conn_parity.sh
#
# CONN_TEST defaults to the ib_cm_conn_test.ko beside the --insmod ib_cm.ko.
# PARITY_OURS_ONLY=1 runs the cases over our ib_cm only and leaves it in
# place: no swap, no comparison (the coverage run, tools/testing/coverage,
# measures ours only; on the debug kernel the distro's ib_cm has oopsed in
# drop_on_user_established, a GPF in its cm_process_work).

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

# Cases the distribution's ib_cm fails, with why; one per line.
DEPARTS="sidr_rep_additional_info its SIDR_REP copies the additional information but leaves AddInfoLen 0 (cm_format_sidr_rep), so the receiver never sees it"

# departs NAME: NAME is a known departure of the distro's; prints why.
departs() {
	local n why

	while read -r n why; do
		[ "$n" = "$1" ] && echo "$why" && return 0
	done <<< "$DEPARTS"
	return 1
}

rxe_up || exit 1

ours=$(insmod_file ib_cm)
if [ -z "$ours" ]; then
	echo "# no ib_cm.ko among the --insmod files: nothing to compare"
	tap_fail "our ib_cm.ko given to the rig"
	tap_done
	exit $?
fi
ko=${CONN_TEST:-$(dirname "$ours")/ib_cm_conn_test.ko}
# the distribution's own file, not a DKMS build in updates/
distro=$(inbox_module ib_cm drivers/infiniband/core)
echo "# ours:   $ours ($(module_id "$ours"))"
echo "# distro: $distro ($(module_id "$distro"))"
echo "# test:   $ko"

# run_conn LABEL: load the test module over the ib_cm in place, one point
# per case; its verdicts go to /tmp/conn-LABEL.verdicts, without the known
# departures of the distro's.
run_conn() {
	local label=$1 log=/tmp/conn-$1.log rc name line why others=0

	dmesg -C
	insmod "$ko"
	rc=$?
	dmesg | sed -e 's/^\[[^]]*\] //' > "$log"
	sed -n '/^ *KTAP version/,$p' "$log" | sed -e "s/^/# $label: /"
	tap_check "$label: KTAP plan printed" grep -qE '^ *1\.\.[0-9]+' "$log"
	# Case lines, flat (KTAP) or nested (KUnit); not the suite's own.
	grep -E '^ *(not )?ok [0-9]+ [a-z_]+$' "$log" |
		sed -E 's/^ *//; s/^(not ok|ok) [0-9]+ /\1 /' |
		grep -vE ' (ibst_table|ib_cm_conn)$' > "/tmp/conn-$label.all"
	: > "/tmp/conn-$label.verdicts"
	while read -r line; do
		name=${line##* }
		if [ "$label" = distro ] && why=$(departs "$name"); then
			case $line in
			"ok "*) tap_fail "distro: $name passes, yet it is listed as a departure: update DEPARTS" ;;
			*) tap_ok "distro: $name fails, a known departure: $why" ;;
			esac
			continue
		fi
		echo "$line" >> "/tmp/conn-$label.verdicts"
		case $line in
		"ok "*) tap_ok "$label: $name" ;;
		*) tap_fail "$label: $name"; others=$((others + 1)) ;;
		esac
	done < "/tmp/conn-$label.all"
	# Without KUnit a failed case fails the load; a known departure may.
	if [ "$rc" != 0 ] && [ "$label" = distro ] && [ "$others" = 0 ] &&
	   grep -q '^not ok ' "/tmp/conn-$label.all"; then
		tap_ok "$label: ib_cm_conn_test loads or fails only on known departures (insmod status $rc)"
	else
		tap_check "$label: ib_cm_conn_test loads (insmod status $rc)" \
			test "$rc" = 0
	fi
	if grep -q '^ib_cm_conn_test ' /proc/modules; then
		tap_check "$label: ib_cm_conn_test unloads" rmmod ib_cm_conn_test
	fi
}

# stack_down: unload the CM users and ib_cm; no cm_id may be left.
stack_down() {
	cm_stack_down || return 1
	! dmesg | grep -qi 'ib_cm_id.*\(objects remaining\|still has objects\)'
}

loaded_users=$(cm_users_loaded | paste -sd ' ')
echo "# CM users loaded: ${loaded_users:-none}"

tap_check "ib_cm in place is ours" module_is_file ib_cm "$ours"
run_conn ours
if [ "${PARITY_OURS_ONLY:-0}" = 1 ]; then
	echo "# PARITY_OURS_ONLY=1: the distro's ib_cm is not run"
	tap_done
	exit $?
fi

dmesg -C
tap_check "our ib_cm unloads, no cm_id left" stack_down
insmod "$distro"
tap_check "distro ib_cm loads" grep -q '^ib_cm ' /proc/modules
tap_check "ib_cm in place is the distro's file" module_is_file ib_cm "$distro"
tap_check "ib_cm in place is not ours" \
	test "$(loaded_module_id ib_cm)" != "$(module_id "$ours")"
run_conn distro

# The departures are compared above; ours must pass them like any case.
grep -v "$(printf '%s\n' "$DEPARTS" | awk '{ print " " $1 "$" }')" \
	/tmp/conn-ours.verdicts > /tmp/conn-ours.common
tap_check "same verdict for every other case on both ib_cm's" \
	cmp -s /tmp/conn-ours.common /tmp/conn-distro.verdicts
tap_check "both runs reported cases" test -s /tmp/conn-ours.verdicts -a \
	-s /tmp/conn-distro.verdicts
if ! cmp -s /tmp/conn-ours.common /tmp/conn-distro.verdicts; then
	diff /tmp/conn-ours.common /tmp/conn-distro.verdicts |
		sed -e 's/^/# ours<>distro: /'
fi

# Put our ib_cm back under the users that were loaded.
stack_down
# shellcheck disable=SC2086 # a list of module names
cm_stack_up "$ours" $loaded_users
tap_check "our ib_cm is back in place" module_is_file ib_cm "$ours"
tap_done
