#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test: a kernel rdma_cm consumer that gives its cm_id back.  A LIO
# iSCSI target listens for iSER on rxe0 (ib_isert over rdma_cm over the
# ib_cm in place).  A client with no QP (rdmacm_rej_rep) connects and
# rejects the REP the target sent; ib_isert answers the REJECTED event
# with -1, which rdma_cm passes on to ib_cm as "destroy this cm_id for
# me", from the CM's receive work.  Several rounds, so that each CPU's
# worker gets one.  Points: every round's REP was rejected and the target
# saw each REJ; no cm_destroy_id_wait_timeout report (ib_cm waiting
# for itself); the target comes down and ib_isert unloads; rping
# still connects afterwards.
#
#   REJ_REP=/path/to/rdmacm_rej_rep ibcm_isert_drop.sh

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

REJ_REP=${REJ_REP:?REJ_REP not set}
ROUNDS=6
CFG=/sys/kernel/config/target/iscsi
IQN=iqn.2026-12.org.kernel.test:ibcm-drop
NP=$CFG/$IQN/tpgt_1/np/$MY_IP:3260

rxe_up || exit 1

# A kernel built without the LIO iSCSI target cannot run this.
if ! modinfo iscsi_target_mod ib_isert > /dev/null 2>&1; then
	tap_ok "iSER target # SKIP no iscsi_target_mod/ib_isert in $(uname -r)"
	tap_done
	exit $?
fi

target_up() {
	modprobe iscsi_target_mod || return 1
	modprobe ib_isert || return 1
	echo 2 > /sys/module/ib_isert/parameters/debug_level
	mountpoint -q /sys/kernel/config ||
		mount -t configfs none /sys/kernel/config || return 1
	mkdir -p "$NP" && echo 1 > "$NP/iser" &&
		echo 1 > "$CFG/$IQN/tpgt_1/enable"
}

target_down() {
	echo 0 > "$CFG/$IQN/tpgt_1/enable" 2> /dev/null
	rmdir "$NP" "$CFG/$IQN/tpgt_1" "$CFG/$IQN" 2> /dev/null
	! test -e "$CFG/$IQN"
}

dmesg -C
tap_check "iSER target listening on $MY_IP:3260" target_up

ok=0
for r in $(seq 1 "$ROUNDS"); do
	if run_with_timeout 60 "$REJ_REP" "$MY_IP" 3260 \
		> "/tmp/rej-rep-$r.out" 2>&1; then
		ok=$((ok + 1))
	else
		sed -e "s/^/# round $r: /" "/tmp/rej-rep-$r.out"
	fi
done
tap_check "$ROUNDS REPs of the target rejected by the client" \
	test "$ok" = "$ROUNDS"

# The target's side of each round: REJECTED delivered, -1 returned.
seen() {
	[ "$(dmesg | grep -c 'isert_cma_handler: rejected (8)')" -ge "$ROUNDS" ]
}
wait_until 30 seen
echo "# target saw $(dmesg | grep -c 'isert_cma_handler: rejected (8)') REJs"
tap_check "ib_isert got every REJ" seen
dmesg | grep -m 2 'Connection rejected' | sed -e 's/^/# /'

# A destruction that waits for itself says so after 10 s (times the
# rig's time scale): the wait that the rig caps there (rig_module_args)
# in our test builds.
cap=/sys/module/ib_cm/parameters/destroy_wait_cap_ms
if [ -e "$cap" ]; then
	tap_check "ib_cm warns of a destroy that waits $((RIG_DESTROY_WAIT_CAP_MS / 1000)) s" \
		grep -qx "$RIG_DESTROY_WAIT_CAP_MS" "$cap"
fi
sleep $((RIG_DESTROY_WAIT_CAP_MS / 1000 + 2))
tap_check "no cm_id destruction waits for its references" \
	sh -c "! dmesg | grep -q 'cm_destroy_id_wait_timeout: cm_id='"

tap_check "target taken down" target_down
tap_check "ib_isert unloads" run_with_timeout 60 modprobe -r ib_isert

rping -s -a "$MY_IP" -p 7175 -C 5 > /tmp/rping-drop-server.out 2>&1 &
server=$!
wait_cm_listening 30 7175 "$server"
connect_retry 10 /tmp/rping-drop-client.out run_with_timeout 60 \
	rping -c -a "$MY_IP" -p 7175 -C 5 -v
tap_check "rping connects afterwards" test $? = 0
kill "$server" 2> /dev/null
wait "$server"
tap_done
