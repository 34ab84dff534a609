#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# One-guest stand-in for the emulated PF topology, sourced by pf_1vm.sh.
#
# rdma_rxe of 6.1 only works in the initial network namespace (its UDP
# socket and its route lookups are there), so the three rxe "nodes" stay
# in the root namespace and the PF is a namespace of its own:
#
#   root ns: vf1 10.1.0.2 --- pf ns: pfvf1 10.1.0.1 \
#            vf2 10.2.0.2 ---        pfvf2 10.2.0.1  +- IP forwarding
#            rem 10.3.0.2 ---        pfwire 10.3.0.1 /
#
# Policy routing makes every packet sent with one of these interfaces as
# its output device (rxe and rdma_cm always name one) go to the PF,
# although the destination is a local address; the local table is looked
# up after those rules, so what comes back in is delivered locally.

PF_NS=pf
PF_NODES="vf1:1 vf2:2 rem:3"

pf_sysctl() {
	sysctl -qw "$1=$2" || echo "# sysctl $1=$2 failed"
}

# pf_routes DEV N: the table of node DEV, whose rule sends what leaves
# through DEV to the PF (again after DEV was down: that removed them)
pf_routes() {
	local table=$((100 + $2))

	ip route replace "10.$2.0.0/24" dev "$1" table "$table" &&
		ip route replace default via "10.$2.0.1" dev "$1" table "$table"
}

# pf_topology_up: build it; returns non-zero on failure
pf_topology_up() {
	local node n dev table

	ip netns add "$PF_NS" || return 1
	ip netns exec "$PF_NS" ip link set lo up
	ip netns exec "$PF_NS" sysctl -qw net.ipv4.ip_forward=1 || return 1
	pf_sysctl net.ipv4.conf.all.rp_filter 0
	pf_sysctl net.ipv4.conf.default.rp_filter 0
	pf_sysctl net.ipv4.conf.all.accept_local 1
	for node in $PF_NODES; do
		dev=${node%%:*} n=${node##*:} table=$((100 + n))
		case $dev in
		rem) peer=pfwire ;;
		*) peer=pf$dev ;;
		esac
		ip link add "$dev" type veth peer name "$peer" || return 1
		ip link set "$peer" netns "$PF_NS" || return 1
		pf_sysctl "net.ipv4.conf.$dev.rp_filter" 0
		pf_sysctl "net.ipv4.conf.$dev.accept_local" 1
		ip addr add "10.$n.0.2/24" dev "$dev" || return 1
		ip link set "$dev" up || return 1
		ip netns exec "$PF_NS" ip addr add "10.$n.0.1/24" dev "$peer" ||
			return 1
		ip netns exec "$PF_NS" ip link set "$peer" up || return 1
		pf_routes "$dev" "$n" || return 1
		ip rule add pref "$n" oif "$dev" lookup "$table" || return 1
	done
	# the local table after the per-interface rules
	ip rule add pref 100 lookup local || return 1
	ip rule del pref 0 lookup local || return 1
	modprobe rdma_rxe || return 1
	for node in $PF_NODES; do
		dev=${node%%:*}
		rdma link add "rxe_$dev" type rxe netdev "$dev" || return 1
	done
	for node in $PF_NODES; do
		dev=${node%%:*}
		wait_until 10 rxe_port_active "rxe_$dev" || {
			echo "# rxe_$dev never became ACTIVE"
			return 1
		}
	done
}

# pf_ip NODE: the node's address
pf_ip() {
	local node

	for node in $PF_NODES; do
		[ "${node%%:*}" = "$1" ] && echo "10.${node##*:}.0.2"
	done
}

# pf_ns_pid: a process in the PF namespace, for the module's netns_pid
pf_ns_pid() {
	ip netns exec "$PF_NS" sleep 100000 > /dev/null 2>&1 &
	echo $!
}
