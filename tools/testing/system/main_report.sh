#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The main job's guest side: run rping and ib_send_bw over rdma_rxe
# through the loaded stack and report, as "REPORT:" lines, which module
# file each part of the stack was loaded from and what ran through it.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

here=$(dirname "$0")
report() { echo "REPORT: $*"; }

# origin NAME: "project <file>" when the loaded module is one of the
# --insmod files of this run, else the distro's file.
origin() {
	local ko

	for ko in $VM_INSMOD; do
		if [ "$(modinfo -F name "$ko")" = "$1" ] &&
		   module_is_file "$1" "$ko"; then
			echo "project $ko"
			return
		fi
	done
	if [ -d "/sys/module/$1" ]; then
		echo "distro $(modinfo -F filename "$1" 2>/dev/null)"
	else
		echo "not loaded"
	fi
}

# cm_counters DEV: the CM messages the port's counters saw, when ib_cm
# publishes them.
cm_counters() {
	local d=/sys/class/infiniband/$1/ports/1 g f line=""

	for g in cm_tx_msgs cm_rx_msgs; do
		[ -d "$d/$g" ] || continue
		for f in req rep rtu dreq drep rej; do
			[ -r "$d/$g/$f" ] && line="$line $g/$f=$(cat "$d/$g/$f")"
		done
	done
	echo "${line:- (no CM counters published)}"
}

report "kernel $(uname -r)"
rxe_up || exit 1
"$here/rping.sh" > /tmp/main-rping.out 2>&1
rrc=$?
"$here/ib_send_bw.sh" > /tmp/main-bw.out 2>&1
brc=$?
# rdma_cm and ib_cm are loaded by now (rping pulled them in).
for m in ib_core ib_cm rdma_cm rdma_ucm rdma_rxe mlx4_core mlx4_ib; do
	report "module $m: $(origin "$m")"
done
report "rping -C 100 over rxe0: $([ $rrc = 0 ] && echo passed || echo FAILED)" \
	"($(grep -c 'ok .* - rping' /tmp/main-rping.out) checks)"
report "ib_send_bw -R over rxe0: $([ $brc = 0 ] && echo passed || echo FAILED)," \
	"$(sed -n 's/.*MsgRate\[Mpps\]: *\([0-9]*\) *\([0-9]*\) *\([0-9.]*\) *\([0-9.]*\).*/\2 iterations of \1 bytes, avg \4 MB\/s/p' /tmp/main-bw.out)" \
	"$(grep -q '^# perftest could not fit' /tmp/main-bw.out && echo '(perftest could not time it)')"
report "ib_cm counters of rxe0:$(cm_counters rxe0)"
sed 's/^/# /' /tmp/main-rping.out /tmp/main-bw.out

[ $rrc = 0 ] && [ $brc = 0 ]
