#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# PF side of a step of tools/testing/sriov/run (--pf-test): the PF guest
# forwards IPv4, has no RDMA device, and the VFs' and the remote's traffic
# of this step went through it: RoCEv2 packets, CM MADs (GSI) among them,
# entered and left every NIC (vf1, vf2, wire; counted by roce_count.py on
# a packet socket), and the forwarded datagram count grew.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=SCRIPTDIR/sriov-lib.sh
. "$SRIOV_LIB"

if [ "$SRIOV_ROLE" != pf ]; then
	echo "# a PF script"
	exit 1
fi

forwarded() {
	awk '/^Ip:/ { if (!n++) { for (i = 1; i <= NF; i++) if ($i == "ForwDatagrams") f = i }
		else print $f }' /proc/net/snmp
}

# Builtins only after the traffic: under TCG every program started over
# 9p costs the PF (and the next step) a good part of a second.
nic_stat() {
	echo "$(< "/sys/class/net/$1/statistics/$2")"
}

DEVS=("$PF_VF1_DEV" "$PF_VF2_DEV" "$PF_WIRE_DEV")
declare -A ADDR=([$PF_VF1_DEV]=$PF_VF1_IP [$PF_VF2_DEV]=$PF_VF2_IP
	[$PF_WIRE_DEV]=$PF_WIRE_IP)
declare -A RX TX
for d in "${DEVS[@]}"; do
	RX[$d]=$(nic_stat "$d" rx_packets)
	TX[$d]=$(nic_stat "$d" tx_packets)
done
fwd0=$(forwarded)
COUNTS=/tmp/roce-count.$VM_TEST_INDEX
python3 "$(dirname "$SRIOV_LIB")/roce_count.py" "$COUNTS" "${DEVS[@]}" \
	> /tmp/roce-count.out 2>&1 &
counter=$!
if wait_until 30 grep -qs listening /tmp/roce-count.out; then
	tap_ok "RoCEv2 packet counter started"
else
	tap_fail "RoCEv2 packet counter started"
	sed -e 's/^/# roce_count.py: /' /tmp/roce-count.out
fi
pf_watching

tap_check "IPv4 forwarding on" test "$(cat /proc/sys/net/ipv4/ip_forward)" = 1
tap_check "no RDMA device on the PF" test -z "$(ls /sys/class/infiniband 2> /dev/null)"
wait_step_end "$(step_time_left 15)"
tap_check "the VFs and the remote finished the step" test $? = 0
echo "# the others finished after $SECONDS s"

kill -TERM "$counter" 2> /dev/null
wait "$counter"
echo "# counter stopped after $SECONDS s"
declare -A CNT
if [ -r "$COUNTS" ]; then
	while read -r dev way kind n; do
		CNT[$dev.$way.$kind]=$n
	done < "$COUNTS"
fi
fwd=$(($(forwarded) - fwd0))
echo "# forwarded IPv4 datagrams in this step: $fwd"
tap_check "datagrams forwarded" test "$fwd" -gt 0
for d in "${DEVS[@]}"; do
	rx=$(($(nic_stat "$d" rx_packets) - RX[$d]))
	tx=$(($(nic_stat "$d" tx_packets) - TX[$d]))
	echo "# $d (${ADDR[$d]}): rx $rx tx $tx packets"
	if [ ! -r "$COUNTS" ]; then
		tap_fail "RoCEv2 packets counted on $d"
		continue
	fi
	for way in in out; do
		roce=${CNT[$d.$way.roce]:-}
		gsi=${CNT[$d.$way.gsi]:-}
		echo "# $d $way: ${roce:-?} RoCEv2 packets, ${gsi:-?} of them GSI (CM MADs)"
		tap_check "RoCEv2 $way of $d" test "${roce:-0}" -gt 0
		tap_check "CM MADs $way of $d" test "${gsi:-0}" -gt 0
	done
done
tap_done
