#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# PF side of a step of tools/testing/sriov/run (--pf-test): the PF guest
# forwards IPv4, has no RDMA device, and the VFs' and the remote's traffic
# of this step went through it: every NIC (vf1, vf2, wire) received and
# sent packets, and the forwarded datagram count grew.

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

nic_stat() {
	cat "/sys/class/net/$1/statistics/$2"
}

DEVS=("$PF_VF1_DEV" "$PF_VF2_DEV" "$PF_WIRE_DEV")
declare -A RX TX
for d in "${DEVS[@]}"; do
	RX[$d]=$(nic_stat "$d" rx_packets)
	TX[$d]=$(nic_stat "$d" tx_packets)
done
fwd0=$(forwarded)

tap_check "IPv4 forwarding on" test "$(cat /proc/sys/net/ipv4/ip_forward)" = 1
tap_check "no RDMA device on the PF" test -z "$(ls /sys/class/infiniband 2> /dev/null)"
wait_step_end $((${VM_TEST_TIMEOUT:-300} - 15))
tap_check "the VFs and the remote finished the step" test $? = 0

fwd=$(($(forwarded) - fwd0))
echo "# forwarded IPv4 datagrams in this step: $fwd"
tap_check "datagrams forwarded" test "$fwd" -gt 0
for d in "${DEVS[@]}"; do
	rx=$(($(nic_stat "$d" rx_packets) - RX[$d]))
	tx=$(($(nic_stat "$d" tx_packets) - TX[$d]))
	echo "# $d ($(ip -4 -o addr show dev "$d" | awk '{ print $4 }')): rx $rx tx $tx packets"
	tap_check "$d carried traffic both ways" test "$rx" -gt 0 -a "$tx" -gt 0
done
tap_done
