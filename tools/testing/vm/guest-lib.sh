# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# shellcheck shell=bash
#
# Helpers for test scripts run by vm-run inside the guest.  A test script
# starts with
#
#	. "$GUEST_LIB"
#
# and exits 0 on success.  Environment set by the rig:
#   VM_INDEX   0 or 1            VM_COUNT   number of guests
#   MY_IP      this guest        PEER_IP    the other guest (2 VMs only)
#   VM_SHARED  a directory all guests of the run share (9p on the host)
#   VM_NETDEV  the virtio NIC (after net_up, normally eth0)
# Guests with several NICs (tools/testing/sriov/run) also get
#   VM_NICS    "NAME=MAC=ADDR/LEN ...": net_up renames the NIC of each MAC
#              to NAME and gives it ADDR; VM_NETDEV is the first of them
#   VM_GATEWAY the default route, VM_FORWARD=1: the guest routes IPv4
#   VM_TIME_SCALE  how many times slower than an idle host the host runs
#              (vm-run --time-scale, default 1)
#
# The SECONDS that the helpers below take (run_with_timeout,
# bg_with_timeout, wait_until and those built on it) are whole seconds of
# an idle host: each lasts VM_TIME_SCALE seconds of the clock.  A wait
# sized for an idle host then holds on a loaded one, where every step
# takes longer.  scaled_secs and unscaled_secs convert.

TAP_N=0
TAP_FAILED=0
# a whole number from 1, or 1 (a bad value must not become "no limit")
case ${VM_TIME_SCALE:-} in
'' | *[!0-9]* | 0*) VM_TIME_SCALE=1 ;;
esac

# Nested TAP: vm-run shows these lines as diagnostics of the test point.
tap_ok() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $*"
}

tap_fail() {
	TAP_N=$((TAP_N + 1))
	TAP_FAILED=1
	echo "not ok $TAP_N - $*"
}

# tap_check NAME CMD...: one TAP point from the status of CMD.
tap_check() {
	local name=$1

	shift
	if "$@"; then
		tap_ok "$name"
	else
		tap_fail "$name"
	fi
}

# Print the plan; return non-zero if any point failed.  Use it last:
#	tap_done; exit $?
tap_done() {
	echo "1..$TAP_N"
	return $TAP_FAILED
}

# scaled_secs SECONDS: SECONDS of an idle host in seconds of the clock.
scaled_secs() {
	echo $(($1 * ${VM_TIME_SCALE:-1}))
}

# unscaled_secs CLOCK_SECONDS: the seconds of an idle host that last at
# least CLOCK_SECONDS, for a helper's SECONDS.
unscaled_secs() {
	local s=${VM_TIME_SCALE:-1}

	echo $((($1 + s - 1) / s))
}

# part_scaled_secs CLOCK SECONDS: a bound of SECONDS of an idle host of
# which CLOCK are the protocol's own (TimeWait), in seconds of the clock:
# the rest is scaled, CLOCK is not.
part_scaled_secs() {
	echo $(($(scaled_secs $(($2 - $1))) + $1))
}

# run_with_timeout SECONDS CMD...: status 124 when the time ran out.
run_with_timeout() {
	local secs=$(($1 * ${VM_TIME_SCALE:-1}))

	shift
	timeout -k 5 "$secs" "$@"
}

# bg_with_timeout SECONDS CMD...: start CMD in the background under
# timeout(1).  $! is then timeout's own PID, and a signal sent to it
# reaches CMD; "run_with_timeout ... &" would give the PID of a subshell
# that does not pass it on (CMD would live until its time limit).
bg_with_timeout() {
	local secs=$(($1 * ${VM_TIME_SCALE:-1}))

	shift
	timeout -k 5 "$secs" "$@" &
}

# debug_kernel: the guest runs the debug tier's kernel (lockdep, KASAN,
# kmemleak; tools/debug-kernel), which is several times slower.
debug_kernel() {
	[ -e /proc/lockdep ]
}

# vm_nap SECONDS: sleep in the shell itself (SECONDS may be a fraction).
# Under TCG every program the guest starts costs the host tens of
# milliseconds of CPU: a loop of "sleep 0.2" took a fifth of a host core
# (measured with a guest doing nothing else), and four guests waiting at
# a barrier that way took most of one.  read's time limit on a FIFO that
# nobody writes to waits without a new process; one FIFO serves every
# shell of the guest, so only the first makes it.  (A FIFO, not a
# process substitution: that would set $! under a caller's
# "cmd & pid=$!".)  Where that does not work, sleep(1) it is.  Safe
# under set -e; a nap of 0 returns at once.
vm_nap() {
	local f=${TMPDIR:-/tmp}/vm-nap rc=0

	case $1 in
	0 | 0.0 | 0.00) return 0 ;;
	esac
	if [ -z "${_vm_nap_fd:-}" ]; then
		[ -p "$f" ] || mkfifo "$f" 2> /dev/null || :
		if [ -p "$f" ] && exec {_vm_nap_fd}<> "$f"; then
			:
		else
			_vm_nap_fd=-
		fi 2> /dev/null
	fi
	if [ "$_vm_nap_fd" != - ]; then
		read -r -t "$1" -u "$_vm_nap_fd" _ || rc=$?
		# more than 128: the time limit, as it should
		[ "$rc" -le 128 ] || return 0
		_vm_nap_fd=-
	fi
	sleep "$1"
}

# wait_paced MAXNAP SECONDS CMD...: retry CMD until it succeeds, for
# SECONDS (scaled) of wall time (however long each try takes): every
# 0.2 s for the first ten tries, then a tenth of a second later each
# time, up to MAXNAP tenths of a second apart.  The locals have names no
# caller's CMD would read (CMD may be a function of the caller's that
# reads the caller's own variables).
wait_paced() {
	local _wp_max=$1 _wp_end=$((SECONDS + $2 * ${VM_TIME_SCALE:-1}))
	local _wp_tries=0 _wp_nap=2

	shift 2
	while ! "$@"; do
		[ "$SECONDS" -lt "$_wp_end" ] || return 1
		_wp_tries=$((_wp_tries + 1))
		[ "$_wp_tries" -le 10 ] || [ "$_wp_nap" -ge "$_wp_max" ] ||
			_wp_nap=$((_wp_nap + 1))
		vm_nap "$((_wp_nap / 10)).$((_wp_nap % 10))"
	done
}

# wait_until SECONDS CMD...: wait_paced, slowing down to one try a
# second.  A try that starts a program costs the host tens of
# milliseconds of CPU under TCG: a guest running grep every 0.2 s for a
# minute took the host 18 CPU seconds more than an idle one, and
# "rdma resource show | grep" 29.  The rig's waits are for something
# that stays once it happened, so a long one loses nothing by looking
# less often, and at most a second and one try when it ends.
wait_until() {
	wait_paced 10 "$@"
}

# wait_soon SECONDS CMD...: wait_paced, trying every 0.2 s throughout,
# for a wait whose end must be acted on at once, or whose try starts no
# program (a shell test of a file: the barriers and signals between the
# guests, which hand a step on from one guest to the next).
wait_soon() {
	wait_paced 2 "$@"
}

# wait_until_clock SECONDS CMD...: wait_until for a bound the protocol
# sets (TimeWait, the CM's retry timers): SECONDS of the clock, not scaled.
wait_until_clock() {
	VM_TIME_SCALE=1 wait_until "$@"
}

# rig_module_args FILE.ko: the parameters the rig adds when it loads one
# of our modules.  Our ib_cm built with the test hooks has
# destroy_wait_cap_ms: the rig caps its wait for a destroyed cm_id's last
# reference at the distribution's 10 s, so that a destroy that waits
# longer reaches the kernel log check (cm_destroy_id_wait_timeout) in
# every run, as it did before that wait followed the cm_id's timeouts.
# On a slow host the 10 s are stretched by VM_TIME_SCALE, as the rig's
# other waits are: a DREQ that has to go out and be answered before the
# last reference goes took more than 10 s on a busy host (2026-12-06,
# 6.12's removal suite at load average 13), and a destroy that hangs
# still warns.
RIG_DESTROY_WAIT_CAP_MS=$((10000 * VM_TIME_SCALE))
rig_module_args() {
	if modinfo -F parm "$1" 2> /dev/null | grep -q '^destroy_wait_cap_ms:'; then
		echo "destroy_wait_cap_ms=$RIG_DESTROY_WAIT_CAP_MS"
	fi
}

# insmod_file NAME: the file among the rig's --insmod files (VM_INSMOD)
# whose module is NAME; false if there is none.
insmod_file() {
	local ko

	for ko in $VM_INSMOD; do
		[ "$(modinfo -F name "$ko")" = "$1" ] && echo "$ko" && return 0
	done
	return 1
}

# The modules above ib_cm, taken out for a swap of ib_cm and put back.
CM_USERS="rdma_ucm ib_srpt ib_isert ib_iser ib_srp ib_ipoib rdma_cm iw_cm"

# cm_users_loaded: those of CM_USERS that are loaded, in that order.
cm_users_loaded() {
	local m

	for m in $CM_USERS; do
		grep -q "^$m " /proc/modules && echo "$m"
	done
	return 0
}

# cm_stack_down: unload the CM users and ib_cm (each step limited in
# time); false, and a comment, if a user stays or ib_cm does not go.
cm_stack_down() {
	local m left

	for m in $(cm_users_loaded); do
		run_with_timeout 60 modprobe -r "$m" 2> /dev/null
	done
	left=$(cm_users_loaded | tr '\n' ' ')
	if [ -n "$left" ]; then
		echo "# still loaded: $left"
		return 1
	fi
	run_with_timeout 60 rmmod ib_cm
}

# cm_stack_up KO USERS...: load ib_cm from KO (with the rig's parameters
# for it), then the CM users USERS.
cm_stack_up() {
	local ko=$1 m

	shift
	# shellcheck disable=SC2046 # the parameters are words
	insmod "$ko" $(rig_module_args "$ko")
	for m in "$@"; do
		modprobe "$m" || echo "# modprobe $m failed"
	done
}

# inbox_module NAME DIR: the distribution's own file of module NAME,
# under /lib/modules/<release>/kernel/DIR: not a DKMS build of the same
# module in updates/, which modprobe and modinfo -k would prefer (the
# delivery test installs one on the host while other guests run).
inbox_module() {
	local f

	for f in "/lib/modules/$(uname -r)/kernel/$2/$1.ko"{,.xz,.zst}; do
		[ -e "$f" ] && echo "$f" && return 0
	done
	return 1
}

# module_id FILE.ko: its srcversion, or "build-id:<hex>" when it has none
# (modpost only adds a srcversion with MODULE_VERSION() or
# CONFIG_MODULE_SRCVERSION_ALL, which the Debian kernel does not set).
# FILE may be compressed, as 6.12's in-box modules are (.ko.xz).
module_id() {
	local src bid tmp

	src=$(modinfo -F srcversion "$1" 2> /dev/null)
	if [ -n "$src" ]; then
		echo "$src"
		return
	fi
	case $1 in
	*.xz | *.gz | *.zst)
		# readelf reads ordinary files only
		tmp=$(mktemp)
		case $1 in
		*.xz) xz -dc "$1" ;;
		*.gz) gzip -dc "$1" ;;
		*) zstd -qdc "$1" ;;
		esac > "$tmp" 2> /dev/null
		bid=$(readelf -n "$tmp" 2> /dev/null)
		rm -f "$tmp"
		;;
	*) bid=$(readelf -n "$1" 2> /dev/null) ;;
	esac
	bid=$(awk '/Build ID:/ { print $3; exit }' <<< "$bid")
	[ -n "$bid" ] && echo "build-id:$bid"
}

# loaded_module_id NAME: the same for the module the kernel has loaded.
loaded_module_id() {
	local m=/sys/module/$1 note=/sys/module/$1/notes/.note.gnu.build-id

	if [ -r "$m/srcversion" ]; then
		cat "$m/srcversion"
	elif [ -r "$note" ]; then
		# Elf64_Nhdr (12 bytes) and "GNU\0" precede the id.
		echo "build-id:$(od -An -tx1 -v -j16 "$note" | tr -d ' \n')"
	fi
}

# module_is_file NAME FILE.ko: the loaded module NAME was built as FILE.ko.
module_is_file() {
	local want have

	want=$(module_id "$2")
	have=$(loaded_module_id "$1")
	[ -n "$want" ] && [ "$want" = "$have" ]
}

# rping_exit_race STATUS OUT CMD...: CMD (a wrapper such as
# run_with_timeout, then "rping ... -C COUNT -v", client or server) wrote
# OUT and ended with STATUS, and that is rping's exit race: status 255,
# "rdma_get_cm_event: Bad file descriptor", and all COUNT pings.  rping's
# CM thread loops on the event channel, which main destroys once the
# test is over; a thread that reads it after that exits the process with
# -1 (fixed in rdma-core in 2025, "rping: Fix spurious failure return
# codes"; Debian 12's rping has it).  Its stdout goes out in blocks, the
# message at once: it can stand anywhere in OUT, even inside a ping line;
# the pings are counted with it taken out.
rping_exit_race() {
	local rc=$1 out=$2 is_rping=0 verbose=0 count='' text rest
	local msg='rdma_get_cm_event: Bad file descriptor'

	shift 2
	[ "$rc" = 255 ] || return 1
	while [ $# -gt 0 ]; do
		case $1 in
		rping | */rping) is_rping=1 ;;
		-v) verbose=1 ;;
		-C) count=${2-}; shift ;;
		esac
		shift
	done
	[ "$is_rping" = 1 ] && [ "$verbose" = 1 ] || return 1
	case $count in '' | *[!0-9]* | 0) return 1 ;; esac
	text=$(cat "$out" 2> /dev/null; echo .)
	rest=${text/"$msg"$'\n'/}
	[ "$rest" != "$text" ] || return 1
	[ "$(grep -c -E '^(server )?ping data: rdma-ping-' <<< "$rest")" = "$count" ]
}

# rping_wait PID OUT COUNT: wait for the "rping -v -C COUNT" PID (a server,
# or a client not run by connect_retry) writing OUT; its status, but 0
# (and a comment) for rping's exit race after all its pings.
rping_wait() {
	local rc

	wait "$1"
	rc=$?
	rping_exit_race "$rc" "$2" rping -v -C "$3" || return "$rc"
	echo "# rping made its $3 pings, then lost its exit race (status $rc): taken as 0"
}

# show_stuck LABEL PID...: what each thread of each PID waits for in the
# kernel (its state, wait channel and stack), then the RDMA CM IDs and
# the QPs as the kernel holds them: the diagnosis of a tool that did not
# end.
show_stuck() {
	local label=$1 p t

	shift
	for p in "$@"; do
		for t in /proc/"$p"/task/*; do
			[ -d "$t" ] || continue
			echo "# $label: $(cat "/proc/$p/comm" 2> /dev/null)" \
				"$p thread ${t##*/}: state" \
				"$(awk '{ print $3 }' "$t/stat" 2> /dev/null)" \
				"in $(cat "$t/wchan" 2> /dev/null)"
			sed -e "s/^/#   /" "$t/stack" 2> /dev/null
		done
	done
	rdma resource show cm_id 2> /dev/null | sed -e "s/^/# $label: /"
	rdma resource show qp 2> /dev/null | sed -e "s/^/# $label: /"
}

# RIG_PROC, RIG_IB_SYSFS: where the judges below read /proc and the RDMA
# devices' sysfs (selftest-guest-lib points them at fakes).
RIG_PROC=${RIG_PROC:-/proc}
RIG_IB_SYSFS=${RIG_IB_SYSFS:-/sys/class/infiniband}

# rxe_ack_retries DEV: how many times DEV's requesters have sent again for
# want of an ACK (rdma_rxe's completer_retry_err); 0 without that counter.
rxe_ack_retries() {
	local n=''

	read -r n < "$RIG_IB_SYSFS/$1/ports/1/hw_counters/completer_retry_err"
	echo "${n:-0}"
} 2> /dev/null

# rxe_unacked_wait PID DEV: the RDMA CM server PID may be waiting for the
# ACK of its last send, which rdma_rxe lost.  rdma_rxe posts a receive's
# completion before it sends the ACK, and sends no ACK once the QP is in
# the error state: a client that moves its QP there as soon as it has its
# reply (rdma_client: its rdma_disconnect() does so before the DREQ) can
# leave the server's last send without one.  True when PID waits for a
# completion event, rdma_cm recorded a disconnect of its connection on
# DEV, and its QP there is the only RC QP of DEV in RTS (a QP in the error
# state sends nothing again: only PID's can be retrying).
rxe_unacked_wait() {
	local pid=$1 dev=$2 w='' rts

	[ -n "$pid" ] || return 1
	read -r w < "$RIG_PROC/$pid/wchan" 2> /dev/null
	case $w in
	ib_uverbs_event_read*) ;;
	*) return 1 ;;
	esac
	rdma resource show cm_id 2> /dev/null |
		grep -q "^link $dev/.* state DISCONNECT .* pid $pid " || return 1
	rts=$(rdma resource show qp 2> /dev/null |
		grep "^link $dev/.* type RC state RTS ")
	[ "$(grep -c . <<< "$rts")" = 1 ] && [[ $rts == *" pid $pid "* ]]
}

# RXE_RETRY_MAX: IBTA's largest transport retry count.  On any other RC
# device a send retried more often than that has ended in an error
# completion; rdma_rxe reads the count 7 that librdmacm asks for as "retry
# for ever" (rxe_comp.c) and goes on.
RXE_RETRY_MAX=7

# rxe_lost_last_ack PID DEV: the RDMA CM server PID waits for the ACK that
# rdma_rxe lost, after the CM did its part: it has stayed in
# rxe_unacked_wait's state while DEV sent again more than RXE_RETRY_MAX
# times.  The first call that finds the state notes DEV's count in
# RXE_SEEN, one that does not clears it; clear it before the first call.
rxe_lost_last_ack() {
	local n

	if ! rxe_unacked_wait "$1" "$2"; then
		RXE_SEEN=
		return 1
	fi
	n=$(rxe_ack_retries "$2")
	if [ -z "${RXE_SEEN:-}" ]; then
		RXE_SEEN=$n
		return 1
	fi
	[ $((n - RXE_SEEN)) -gt "$RXE_RETRY_MAX" ]
}

# crashed STATUS: STATUS is that of a program killed by a fault of its own
# (SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV), not by a limit or a kill.
crashed() {
	case $1 in 132 | 134 | 135 | 136 | 139) return 0 ;; esac
	return 1
}

# connect_retry TRIES OUT CMD...: run the RDMA CM client CMD (output to
# OUT) again while it fails without having connected: under TCG the server
# may not listen yet.  Each try that is made again leaves its last lines
# as comments.  A client that crashed is not tried again: what it left of
# its connection may still hold a server that serves one.  Returns the
# status of the last try; 0 for an rping that did all its pings and then
# lost its exit race (rping_exit_race).
connect_retry() {
	local tries=$1 out=$2 rc i

	shift 2
	for ((i = 1; i <= tries; i++)); do
		"$@" > "$out" 2>&1
		rc=$?
		[ "$rc" = 0 ] && return 0
		if rping_exit_race "$rc" "$out" "$@"; then
			echo "# rping made all its pings, then lost its exit" \
				"race (status $rc): taken as 0"
			return 0
		fi
		grep -qE -e 'REJECTED|UNREACHABLE|ADDR_ERROR|ROUTE_ERROR' \
			-e 'Unable to perform rdma_client' "$out" || return $rc
		if crashed "$rc"; then
			echo "# try $i: not connected, and the client crashed" \
				"(status $rc): not tried again"
			tail -n 3 "$out" | sed -e 's/^/#   /'
			return $rc
		fi
		echo "# try $i: not connected (status $rc)"
		tail -n 2 "$out" | sed -e 's/^/#   /'
		vm_nap "$VM_TIME_SCALE"
	done
	return $rc
}

# roce_v2_gid_index DEV IP: print the index of DEV port 1's RoCE v2 GID for
# IPv4 address IP (::ffff:IP, the form rdma_rxe derives from the netdev's
# address); false if it has none.
roce_v2_gid_index() {
	local dev=$1 want g n o

	IFS=. read -r -a o <<< "$2"
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
		"${o[0]}" "${o[1]}" "${o[2]}" "${o[3]}")
	for g in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
		n=${g##*/}
		[ "$(cat "$g" 2> /dev/null)" = "$want" ] || continue
		if [ "$(cat "/sys/class/infiniband/$dev/ports/1/gid_attrs/types/$n" 2> /dev/null)" = "RoCE v2" ]; then
			echo "$n"
			return 0
		fi
	done
	return 1
}

# roce_v2_gid DEV IP: DEV port 1 has a RoCE v2 GID for IPv4 address IP.
roce_v2_gid() {
	roce_v2_gid_index "$1" "$2" > /dev/null
}

# cm_listening PORT: an RDMA CM id of this guest listens on PORT.
cm_listening() {
	rdma resource show cm_id 2> /dev/null | grep -q "state LISTEN .*:$1 "
}

# wait_cm_listening SECONDS PORT [PID]: wait (SECONDS, scaled) until a
# server of this guest listens on PORT, so that its client is not sent
# too early; no longer once the server PID is gone.  False, and a comment
# saying so, when none listens.
wait_cm_listening() {
	local pid=${3:-}

	wait_until "$1" cm_listening_or_gone "$2" "$pid"
	cm_listening "$2" && return 0
	if [ -n "$pid" ] && ! kill -0 "$pid" 2> /dev/null; then
		echo "# no listener on port $2: its server (PID $pid) ended"
	else
		echo "# no listener on port $2 after $(scaled_secs "$1") s"
	fi
	return 1
}

# cm_listening_or_gone PORT PID: PORT has a listener, or PID (if given) has
# ended.
cm_listening_or_gone() {
	cm_listening "$1" || { [ -n "$2" ] && ! kill -0 "$2" 2> /dev/null; }
}

# PERFTEST_F: the option every perftest run (ib_send_bw, ib_write_bw) of
# the rig takes.  Before it reports, perftest fits its cycle counter
# against the clock, and when the fit is poor (r^2 < 0.9, as under TCG on
# a busy host) it prints "Can't produce a report" and exits 1: after the
# transfer, but before its last exchange with the peer, which then waits
# until its own time limit.  With -F (--CPU-freq) it reports anyway; its
# figures then read 0 or inf.  The rig judges the connection and the
# transfer, never the figures; perftest_uncalibrated says when they are
# meaningless.
# shellcheck disable=SC2034 # for the scripts that source this file
PERFTEST_F=-F

# perftest_uncalibrated FILE...: a comment when perftest said in FILE
# that it could not fit its cycle counter.  Always true.
perftest_uncalibrated() {
	grep -q 'Correlation coefficient' "$@" 2> /dev/null || return 0
	echo "# perftest could not fit its cycle counter: its figures are not" \
		"measurements"
}

# rping_pings FILE: the pings an "rping -v" has printed into FILE.
rping_pings() {
	grep -c '^ping data: rdma-ping-' "$1" 2> /dev/null
}

# nic_by_mac MAC: the name of the NIC with that address.
nic_by_mac() {
	local dev

	for dev in /sys/class/net/*; do
		[ "$(cat "$dev/address" 2>/dev/null)" = "$1" ] || continue
		echo "${dev##*/}"
		return 0
	done
	return 1
}

# net_up_nics: the NICs of $VM_NICS, named, addressed and up; the default
# route and forwarding of VM_GATEWAY and VM_FORWARD.  Idempotent.
net_up_nics() {
	local nic name mac addr dev

	VM_NETDEV=
	ip link set lo up
	for nic in $VM_NICS; do
		IFS='=' read -r name mac addr <<< "$nic"
		[ -n "$VM_NETDEV" ] || VM_NETDEV=$name
		if ! dev=$(wait_until 10 nic_by_mac "$mac"); then
			echo "# net_up: no NIC with MAC $mac (for $name)"
			return 1
		fi
		if [ "$dev" != "$name" ]; then
			ip link set "$dev" down || return 1
			ip link set "$dev" name "$name" || return 1
		fi
		ip link set "$name" up || return 1
		if ! ip -4 addr show dev "$name" | grep -q "inet $addr "; then
			ip addr add "$addr" dev "$name" || return 1
			echo "# $name ($mac) up with $addr"
		fi
	done
	export VM_NETDEV
	if [ "${VM_FORWARD:-0}" = 1 ] &&
		[ "$(cat /proc/sys/net/ipv4/ip_forward)" != 1 ]; then
		echo 1 > /proc/sys/net/ipv4/ip_forward || return 1
		# a router takes from each link only its own subnet's
		# sources (RFC 3704 strict): no guest forwards with another
		# guest's address (an SR-IOV VF cannot use another's GID)
		sysctl -qw net.ipv4.conf.all.rp_filter=1 || return 1
		echo "# IPv4 forwarding on, strict reverse path filter"
	fi
	if [ -n "${VM_GATEWAY:-}" ] &&
		! ip -4 route show default | grep -q "via $VM_GATEWAY "; then
		ip route replace default via "$VM_GATEWAY" || return 1
		echo "# default route via $VM_GATEWAY"
	fi
}

# Find the virtio NIC, give it $MY_IP/24 and bring it up.  Idempotent.
net_up() {
	local dev drv

	modprobe virtio_net || return 1
	if [ -n "${VM_NICS:-}" ]; then
		net_up_nics
		return
	fi
	VM_NETDEV=
	for dev in /sys/class/net/*; do
		drv=$(readlink "$dev/device/driver" 2>/dev/null)
		case "$drv" in
		*virtio_net) VM_NETDEV=${dev##*/}; break ;;
		esac
	done
	if [ -z "$VM_NETDEV" ]; then
		echo "# net_up: no virtio NIC found"
		return 1
	fi
	export VM_NETDEV
	ip link set lo up
	ip link set "$VM_NETDEV" up || return 1
	if ! ip -4 addr show dev "$VM_NETDEV" | grep -q "inet $MY_IP/"; then
		ip addr add "$MY_IP/24" dev "$VM_NETDEV" || return 1
		echo "# $VM_NETDEV up with $MY_IP/24"
	fi
}

rxe_port_active() {
	ibv_devinfo -d "$1" 2>/dev/null | grep -q 'state:.*PORT_ACTIVE'
}

# rxe_up: a soft-RoCE device named $RXE_DEV (default rxe0) on the virtio NIC;
# waits until its port is ACTIVE.  Idempotent.
rxe_up() {
	local rxe=${RXE_DEV:-rxe0}

	net_up || return 1
	modprobe rdma_rxe || return 1
	if ! rdma link show "$rxe/1" > /dev/null 2>&1; then
		rdma link add "$rxe" type rxe netdev "$VM_NETDEV" || return 1
	fi
	if ! wait_until 10 rxe_port_active "$rxe"; then
		echo "# rxe_up: $rxe port never became ACTIVE"
		rdma link show
		return 1
	fi
	echo "# $rxe active on $VM_NETDEV"
}

# vm_barrier NAME [SECONDS [INDEX...]]: return once every guest of the run
# (or the guests INDEX...) got here.
vm_barrier() {
	local name=$1 secs=${2:-60} i guests

	shift 2 2> /dev/null || shift $#
	guests=${*:-$(seq 0 $((VM_COUNT - 1)))}
	mkdir -p "$VM_SHARED" 2>/dev/null
	: > "$VM_SHARED/barrier.$name.vm$VM_INDEX" || return 1
	for i in $guests; do
		wait_soon "$secs" test -e "$VM_SHARED/barrier.$name.vm$i" || return 1
	done
}

# vm_kill_me: ask the host to kill this guest's QEMU (SIGKILL), as a VM
# dies: no shutdown, no goodbye on the network.  Does not return.  The
# others learn it from vm_wait killed-vm$VM_INDEX; the host stands in for
# this guest at later barriers.  What the test printed so far is its
# result (vm-lib.sh: kill_requested).
vm_kill_me() {
	sync
	# renamed into place: the host must never read it half written
	echo "$VM_TEST_INDEX" > "$VM_SHARED/kill-request.vm$VM_INDEX.new"
	mv "$VM_SHARED/kill-request.vm$VM_INDEX.new" \
		"$VM_SHARED/kill-request.vm$VM_INDEX"
	while :; do
		vm_nap 1
	done
}

# vm_signal NAME / vm_wait NAME [SECONDS]: one guest tells the others.
vm_signal() {
	: > "$VM_SHARED/signal.$1"
}

vm_wait() {
	wait_soon "${2:-60}" test -e "$VM_SHARED/signal.$1"
}
