# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# shellcheck shell=bash
#
# Host side of the VM rig, sourced by its front ends: tools/testing/vm/vm-run
# (one guest, or two on one link) and tools/testing/sriov/run (an emulated
# SR-IOV PF between VF guests and a remote guest).  It defines functions
# only; a front end parses its options, sets the variables below, writes
# each guest's config, insmod and tests files, then calls
#
#	vmlib_boot      build the initramfs/boot images, start QEMU, watch
#	vmlib_report    TAP on stdout; sets FAILED
#
# Set by the front end (defaults from vmlib_defaults):
#   ME RIG_DIR TOP    name, this directory, the project's top
#   KREL KERNEL       the kernel of the run directory and of the KVM probe
#   MODROOT           where KREL's modules are: MODROOT/lib/modules/KREL
#                     (default: the host's /lib/modules/KREL, or the cache
#                     of tools/sid-kernel.sh for Debian sid's kernel)
#   VMS               number of guests, vm0..vm(VMS-1)
#   VM_KREL[i] VM_KERNEL[i] VM_MODROOT[i]  kernel of guest i (default
#                     KREL, KERNEL and MODROOT; another release:
#                     /boot/vmlinuz-VM_KREL[i] and the host's modules, or
#                     sid's kernel from the cache)
#   VM_NAME[i]        label of guest i in the report (default vmI)
#   VM_SMP[i]         vCPUs of guest i (default SMP)
#   LINKS[k]          "A B": an emulated Ethernet link between guests A and
#                     B (A < B; A listens on a 127.0.0.1 TCP port, B
#                     connects).  Guest i's NIC on link k has the MAC
#                     52:54:00:0b:KK:II+1 (hex).  No links and one guest:
#                     restricted user networking.
#   IDLE_TEST         a test script that is no TAP point (padding)
#   LOG TIMEOUT BOOT_TIMEOUT HANG_FIRST HANG_BOOT_TIMEOUT DIE_BOOTS ACCEL
#   ICOUNT MEM SMP EXTRA_CMDLINE
#   KEEP_RUNS         see vm-run --help
#   TIME_SCALE        vm-run --time-scale: vmlib_check multiplies TIMEOUT
#                     by it, the caller its own limits (and writes
#                     VM_TIME_SCALE into each guest's config); not
#                     BOOT_TIMEOUT, the watchdog for a boot that never
#                     gets anywhere
#
# The guest side is guest-run (started by initramfs-init), which reads
# $RUN/vmI/{config,insmod,tests}.

vmlib_defaults() {
	KREL=6.1.0-57-amd64
	KERNEL=
	MODROOT=
	VMS=1
	LOG=
	TIMEOUT=600
	BOOT_TIMEOUT=600
	EXTRA_CMDLINE=
	HANG_FIRST=0
	HANG_BOOT_TIMEOUT=30
	DIE_BOOTS=0
	ACCEL=auto
	ICOUNT=
	MEM=2G
	SMP=2
	KEEP_RUNS=30
	TIME_SCALE=1
	IDLE_TEST=
	LINKS=()
	VM_KREL=()
	VM_KERNEL=()
	VM_MODROOT=()
	VM_MODDIR=()
	VM_NAME=()
	VM_SMP=()
}

die() {
	echo "$ME: $*" >&2
	exit 2
}

need_arg() {
	[ "$2" -ge 2 ] || die "$1 needs an argument"
}

# Paths must be absolute: the guest sees the host's / at /.
abspath() {
	readlink -f "$1" || die "no such file: $1"
}

now() {
	date +%s.%N
}

# host_nap SECONDS: sleep in the shell itself.  The wait loop below polls
# for as long as the guests run, five times a second: with a sleep(1)
# and a date(1) per round, the forks took a tenth of a host core per
# guest run, as much as an idle guest costs in QEMU several times over
# (measured on 2 busy cores).  read's time limit on a FIFO nobody writes
# to waits without a process (as the guests' vm_nap).  The FIFO is made
# in the run directory and unlinked once open: nothing that later reads
# the directory can block on it, and the guests, which can write there,
# never see it.  host_nap_end closes it.
host_nap() {
	local rc=0 f=$RUN/.nap

	if [ -z "${_host_nap_fd:-}" ]; then
		_host_nap_fd=-
		if mkfifo "$f" && exec {_host_nap_fd}<> "$f"; then
			:
		fi 2> /dev/null
		rm -f "$f"
	fi
	if [ "$_host_nap_fd" != - ]; then
		read -r -t "$1" -u "$_host_nap_fd" _ || rc=$?
		[ "$rc" -gt 128 ] && return 0
		_host_nap_fd=-
	fi
	sleep "$1"
}

host_nap_end() {
	if [ -n "${_host_nap_fd:-}" ] && [ "$_host_nap_fd" != - ]; then
		exec {_host_nap_fd}<&-
	fi
	_host_nap_fd=
}

elapsed() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'
}

# locate_kernel KREL: the image and the module root of KREL in LOC_KERNEL
# and LOC_MODROOT.  An installed kernel: /boot/vmlinuz-KREL and no root
# (the host's /lib/modules/KREL).  Debian sid's kernel of the 7.2 track
# cannot be installed on the host: its image and module tree are those
# tools/sid-kernel.sh unpacked in its cache (make deps), and the guest
# mounts that tree at /lib/modules/KREL (initramfs-init).
locate_kernel() {
	local env

	LOC_KERNEL=/boot/vmlinuz-$1
	LOC_MODROOT=
	[ -d "/lib/modules/$1" ] && return 0
	env=$("$TOP/tools/sid-kernel.sh" --query 2> /dev/null) || return 0
	[ "$(sed -n 's/^SID_KREL=//p' <<< "$env")" = "$1" ] || return 0
	LOC_KERNEL=$(sed -n 's/^SID_KERNEL=//p' <<< "$env")
	LOC_MODROOT=$(sed -n 's/^SID_MODROOT=//p' <<< "$env")
}

# vmlib_check: validate the common options, fill the per-guest defaults.
vmlib_check() {
	local i

	locate_kernel "$KREL"
	KERNEL=${KERNEL:-$LOC_KERNEL}
	MODROOT=${MODROOT:-$LOC_MODROOT}
	case "$TIMEOUT$BOOT_TIMEOUT" in
	*[!0-9]*) die "timeouts are whole seconds" ;;
	esac
	case "$TIME_SCALE" in
	'' | *[!0-9]* | 0*) die "--time-scale takes a whole number from 1" ;;
	esac
	# (10#: a limit given as 0100 is 100 s, not octal)
	TIMEOUT=$((10#$TIMEOUT * TIME_SCALE))
	if [ -n "$ICOUNT" ]; then
		[[ $ICOUNT =~ ^([0-9]|10)$ ]] || die "--icount SHIFT must be 0..10"
		[ "$ACCEL" != kvm ] || die "--icount needs TCG"
		ACCEL=tcg
		# QEMU 7.2's icount does not get the second vCPU of this
		# kernel up (the boot stops at "x86: Booting SMP
		# configuration"), and under icount the vCPUs would take
		# turns on one clock anyway.
		SMP=1
		VM_SMP=()
	fi
	for i in $(seq 0 $((VMS - 1))); do
		VM_SMP[i]=${VM_SMP[i]:-$SMP}
		[[ ${VM_SMP[i]} =~ ^[1-9][0-9]*$ ]] || die "vCPUs must be a whole number from 1"
		VM_KREL[i]=${VM_KREL[i]:-$KREL}
		# --kernel FILE goes with --krel: a guest of that release
		# boots FILE, one of another release its own image.
		if [ "${VM_KREL[i]}" = "$KREL" ]; then
			VM_KERNEL[i]=${VM_KERNEL[i]:-$KERNEL}
			VM_MODROOT[i]=${VM_MODROOT[i]:-$MODROOT}
		else
			locate_kernel "${VM_KREL[i]}"
			VM_KERNEL[i]=${VM_KERNEL[i]:-$LOC_KERNEL}
			VM_MODROOT[i]=${VM_MODROOT[i]:-$LOC_MODROOT}
		fi
		VM_NAME[i]=${VM_NAME[i]:-vm$i}
		[ -r "${VM_KERNEL[i]}" ] || die "no kernel image ${VM_KERNEL[i]}"
		[ -d "${VM_MODROOT[i]}/lib/modules/${VM_KREL[i]}" ] ||
			die "no modules in ${VM_MODROOT[i]}/lib/modules/${VM_KREL[i]}"
		VM_MODDIR[i]=
		[ -n "${VM_MODROOT[i]}" ] || continue
		# The guest sees the host's / (less the tmpfs directories)
		# and mounts this at /lib/modules/KREL; it goes on the
		# kernel command line.
		VM_MODDIR[i]=$(readlink -f "${VM_MODROOT[i]}/lib/modules/${VM_KREL[i]}")
		case "${VM_MODDIR[i]}" in
		/tmp/* | /run/* | /var/tmp/* | /root/* | /dev/* | *[[:space:]]*)
			die "the guest cannot see modules in ${VM_MODDIR[i]}" ;;
		esac
	done
	command -v qemu-system-x86_64 > /dev/null || die "qemu-system-x86_64 missing"
}

# vmlib_run_dir: create the run directory $RUN under build/$KREL/vm/runs,
# with one result directory per guest and the shared directory.
vmlib_run_dir() {
	local i

	VMDIR=$TOP/build/$KREL/vm
	mkdir -p "$VMDIR/runs" || die "cannot create $VMDIR"
	RUN=$VMDIR/runs/$(date +%Y%m%d-%H%M%S)-$$
	mkdir -p "$RUN/shared" "$RUN/files" || die "cannot create $RUN"
	chmod 0777 "$RUN/shared"
	for i in $(seq 0 $((VMS - 1))); do
		mkdir -p "$RUN/vm$i"
	done
}

# guest_path FILE: FILE as the guest sees it.  The guest hides some host
# directories under tmpfs; files given from there are copied into the run
# directory first, unless they are in the project tree, which the guest
# mounts at its host path.
guest_path() {
	local f d

	f=$(abspath "$1")
	case "$f" in
	"$TOP"/*) ;;
	/tmp/* | /run/* | /var/tmp/* | /root/* | /dev/*)
		d=$(mktemp -d "$RUN/files/XXXXXX") || die "mktemp"
		cp "$f" "$d/" || die "cannot copy $f"
		f=$d/$(basename "$f")
		;;
	esac
	echo "$f"
}

# ---------------------------------------------------------------- initramfs
# busybox-static plus the modules needed to mount 9p over virtio-pci, in
# dependency order.  Built-in (=y) ones are skipped by modprobe itself.
initramfs_modules() {
	local root=()

	[ -n "$MODROOT" ] && root=(-d "$MODROOT")
	modprobe "${root[@]}" -S "$KREL" --show-depends -a virtio_pci 9pnet_virtio 9p |
		awk '$1 == "insmod" && !seen[$2]++ { print $2 }'
}

build_initramfs() {
	local out=$VMDIR/initramfs.cpio.gz mods stamp tmp m base

	mods=$(initramfs_modules) || die "modprobe --show-depends failed"
	[ -n "$mods" ] || die "no 9p modules found for $KREL"
	# shellcheck disable=SC2086
	stamp=$( {
		echo "$KREL $MODROOT"
		sha256sum "$RIG_DIR/initramfs-init" /bin/busybox $mods
	} | sha256sum | cut -d' ' -f1)
	if [ -r "$out" ] && [ "$(cat "$VMDIR/initramfs.stamp" 2>/dev/null)" = "$stamp" ]; then
		INITRAMFS=$out
		return
	fi
	tmp=$(mktemp -d "$VMDIR/initramfs.XXXXXX") || die "mktemp"
	mkdir -p "$tmp/bin" "$tmp/proc" "$tmp/sys" "$tmp/dev" "$tmp/lib/modules"
	cp /bin/busybox "$tmp/bin/busybox" || die "busybox-static missing"
	ln -s busybox "$tmp/bin/sh"
	install -m 0755 "$RIG_DIR/initramfs-init" "$tmp/init"
	: > "$tmp/modules.list"
	for m in $mods; do
		base=$(basename "$m")
		case "$m" in
		*.ko.xz) xz -dc "$m" > "$tmp/lib/modules/${base%.xz}"; base=${base%.xz} ;;
		*.ko.zst) zstd -qdc "$m" > "$tmp/lib/modules/${base%.zst}"; base=${base%.zst} ;;
		*) cp "$m" "$tmp/lib/modules/$base" ;;
		esac
		echo "$base" >> "$tmp/modules.list"
	done
	(cd "$tmp" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) \
		> "$out.new" || die "cpio failed"
	mv "$out.new" "$out"
	echo "$stamp" > "$VMDIR/initramfs.stamp"
	rm -rf "$tmp"
	echo "$ME: built $out ($(tr '\n' ' ' < "$VMDIR/initramfs.stamp" | cut -c1-12))" >&2
	INITRAMFS=$out
}

# ----------------------------------------------------------------- kernel
# Under TCG, decompressing the bzImage costs ~6 s per boot.  With CONFIG_PVH
# QEMU boots the plain vmlinux ELF directly, so unpack it once and cache it.
boot_image() {
	local sum out tmp off magic tool

	BOOT_KERNEL=$KERNEL
	is_elf "$KERNEL" && return
	sum=$(sha256sum "$KERNEL" | cut -c1-16)
	out=$VMDIR/vmlinux-$sum
	[ -e "$out.nopvh" ] && return
	if [ -r "$out" ]; then
		BOOT_KERNEL=$out
		return
	fi
	for magic in xz gzip zstd; do
		case $magic in
		xz) off=$(grep -abo $'\xfd7zXZ' "$KERNEL"); tool="xz -dc --single-stream" ;;
		gzip) off=$(grep -abo $'\x1f\x8b\x08' "$KERNEL"); tool="gzip -dc" ;;
		zstd) off=$(grep -abo $'\x28\xb5\x2f\xfd' "$KERNEL"); tool="zstd -qdc" ;;
		esac
		off=$(echo "$off" | head -n 1 | cut -d: -f1)
		[ -n "$off" ] || continue
		tmp=$(mktemp "$VMDIR/vmlinux.XXXXXX")
		# shellcheck disable=SC2086
		tail -c +$((off + 1)) "$KERNEL" | $tool > "$tmp" 2> /dev/null
		if is_elf "$tmp"; then
			# XEN_ELFNOTE_PHYS32_ENTRY (18): the PVH entry point.
			if readelf -n "$tmp" | grep -q 'note type: (0x00000012)'; then
				mv "$tmp" "$out"
				BOOT_KERNEL=$out
				return
			fi
			rm -f "$tmp"
			break
		fi
		rm -f "$tmp"
	done
	: > "$out.nopvh"
}

is_elf() {
	[ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = 177ELF ]
}

# prepare_kernel KREL KERNEL MODROOT: the initramfs and boot image of one
# kernel, cached in build/KREL/vm/ (INITRAMFS, BOOT_KERNEL).
prepare_kernel() {
	local KREL=$1 KERNEL=$2 MODROOT=$3 VMDIR=$TOP/build/$1/vm

	mkdir -p "$VMDIR" || die "cannot create $VMDIR"
	exec 9> "$VMDIR/.initramfs.lock"
	flock 9
	build_initramfs
	boot_image
	flock -u 9
	exec 9>&-
}

# ------------------------------------------------------------------ accel
# /dev/kvm may exist yet not run guests (nested setups); probe once per
# host boot and cache the answer.
kvm_works() {
	local cache=$VMDIR/kvm-probe boot log

	[ -r /dev/kvm ] && [ -w /dev/kvm ] || return 1
	boot=$(cat /proc/sys/kernel/random/boot_id)
	if [ -r "$cache" ] && [ "$(head -1 "$cache")" = "$boot" ]; then
		[ "$(sed -n 2p "$cache")" = yes ]
		return
	fi
	log=$(mktemp)
	{
		timeout 15 qemu-system-x86_64 -accel kvm -cpu host -m 256 \
			-nodefaults -display none -no-reboot -kernel "$KERNEL" \
			-append "console=ttyS0 panic=-1 loglevel=1" \
			-serial "file:$log" < /dev/null > /dev/null 2>&1
	} 2> /dev/null
	if grep -q "Kernel panic" "$log"; then
		printf '%s\nyes\n' "$boot" > "$cache"
	else
		printf '%s\nno\n' "$boot" > "$cache"
	fi
	rm -f "$log"
	[ "$(sed -n 2p "$cache")" = yes ]
}

vmlib_accel() {
	case "$ACCEL" in
	auto) if kvm_works; then ACCEL=kvm; else ACCEL=tcg; fi ;;
	kvm | tcg) ;;
	*) die "--accel must be auto, kvm or tcg" ;;
	esac
	# No 5-level paging in the guests.  A 6.1 kernel reads "LA57 on?"
	# from the boot CPU's feature bits, which identify_cpu() clears and
	# refills during boot; a KASAN check in an interrupt taken inside
	# that window sees the 4-level shadow bounds, takes a 5-level
	# direct-map address for wild and reports "BUG: KASAN:
	# wild-memory-access" (seen once in do_raw_spin_lock from
	# handle_edge_irq, during cpu_detect()).  The rig's guests need no
	# more than 4-level paging, and TCG walks 4-level tables faster.
	# With --icount the guest's clocks run on instructions executed, not
	# on the host's time, and QEMU allows only single-threaded TCG.
	# sleep=on: an idle guest's clock follows the host's.  With sleep=off
	# it would jump to the next timer at once, also while the guest only
	# waits for the host (9p): seen, the guest clock at 482 s when the
	# guest booted after 18 s of host time, and a 1068 s test timeout
	# firing after 58 s.
	if [ "$ACCEL" = kvm ]; then
		ACCEL_ARGS=(-accel kvm -cpu "host,la57=off")
	elif [ -n "$ICOUNT" ]; then
		ACCEL_ARGS=(-accel "tcg,thread=single" -cpu "max,la57=off"
			-icount "shift=$ICOUNT,align=off,sleep=on")
	else
		ACCEL_ARGS=(-accel "tcg,thread=multi" -cpu "max,la57=off")
	fi
}

# host_tsc_khz: the host's TSC rate in kHz, or nothing when unknown.
host_tsc_khz() {
	local mhz

	mhz=$(dmesg 2> /dev/null | sed -n \
		-e 's/.*tsc: Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p' \
		-e 's/.*tsc: Detected \([0-9.]*\) MHz processor.*/\1/p' | tail -n 1)
	if [ -z "$mhz" ] && grep -q ' tsc_known_freq' /proc/cpuinfo; then
		mhz=$(awk '/^cpu MHz/ { print $4; exit }' /proc/cpuinfo)
	fi
	[ -n "$mhz" ] && awk -v m="$mhz" 'BEGIN { printf "%d\n", m * 1000 }'
}

vmlib_cmdline() {
	local khz

	# qboot skips SeaBIOS' probing and saves about a second per boot.
	BIOS_ARGS=()
	[ -r /usr/share/qemu/qboot.rom ] && BIOS_ARGS=(-bios /usr/share/qemu/qboot.rom)

	# no_timer_check: on a starved TCG host the guest's IO-APIC timer
	# check can miss its window and panic the boot ("IO-APIC + timer
	# doesn't work").
	CMDLINE="console=ttyS0 quiet panic=-1 8250.nr_uarts=1 tsc=reliable no_timer_check"

	# Under TCG the guest's TSC runs at the host's rate.  Tell the guest
	# that rate instead of letting it calibrate: on a starved host the
	# calibration can be far off (seen: "tsc: Detected 109.270 MHz" for
	# a 2445 MHz TSC), the guest clock then runs 20 times fast and every
	# timeout in the guest expires early.
	# Under --icount the TSC counts virtual nanoseconds whatever the
	# shift: 1 GHz.
	if [ -n "$ICOUNT" ]; then
		CMDLINE="$CMDLINE tsc_early_khz=1000000"
	elif [ "$ACCEL" = tcg ] && khz=$(host_tsc_khz) && [ -n "$khz" ]; then
		CMDLINE="$CMDLINE tsc_early_khz=$khz"
	fi
}

# -------------------------------------------------------------------- run
console_log() {
	if [ -z "$LOG" ]; then
		echo "$RUN/console-vm$1.log"
	elif [ "$1" = 0 ]; then
		echo "$LOG"
	else
		echo "$LOG.vm$1"
	fi
}

free_port() {
	local p

	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 20000))
		case " ${LINK_PORT[*]} " in *" $p "*) continue ;; esac
		if ! ss -Htan "( sport = :$p )" | grep -q .; then
			echo "$p"
			return
		fi
	done
	die "no free TCP port"
}

# A port for every link.
link_ports() {
	local k p

	LINK_PORT=()
	for k in "${!LINKS[@]}"; do
		p=$(free_port)
		LINK_PORT[k]=$p
	done
}

PIDS=()
cleanup() {
	local p

	for p in "${PIDS[@]}"; do
		kill "$p" 2> /dev/null
	done
}

# net_args I: the -netdev/-device arguments of guest I in NET_ARGS.
net_args() {
	local i=$1 k a b mode mac

	NET_ARGS=()
	if [ "${#LINKS[@]}" = 0 ]; then
		NET_ARGS=(-netdev "user,id=n0,restrict=on"
			-device "virtio-net-pci,netdev=n0,romfile=,mac=52:54:00:0b:00:0$((i + 1))")
		return
	fi
	for k in "${!LINKS[@]}"; do
		read -r a b <<< "${LINKS[k]}"
		if [ "$i" = "$a" ]; then
			mode=listen
		elif [ "$i" = "$b" ]; then
			mode=connect
		else
			continue
		fi
		mac=$(printf '52:54:00:0b:%02x:%02x' "$k" $((i + 1)))
		NET_ARGS+=(-netdev "socket,id=n$k,$mode=127.0.0.1:${LINK_PORT[k]}"
			-device "virtio-net-pci,netdev=n$k,romfile=,mac=$mac")
	done
}

start_vm() {
	local i=$1 log kernel stopped=()

	log=$(console_log "$i")
	mkdir -p "$(dirname "$log")"
	: > "$log"
	net_args "$i"
	[ "$HANG_FIRST" = 1 ] && [ "$BOOTS" = 1 ] && stopped=(-S)
	# the self-test of a boot that dies: QEMU finds no kernel and exits
	kernel=${VM_BOOT[i]}
	[ "$DIE_BOOTS" = 1 ] && kernel=$RUN/selftest-no-such-kernel
	qemu-system-x86_64 "${ACCEL_ARGS[@]}" "${BIOS_ARGS[@]}" "${stopped[@]}" -machine q35 -m "$MEM" -smp "${VM_SMP[i]}" \
		-nographic -nodefaults -no-reboot -monitor none \
		-serial "file:$log" \
		-kernel "$kernel" -initrd "${VM_INITRD[i]}" \
		-append "$CMDLINE vm.index=$i vm.project=$TOP${VM_MODDIR[i]:+ vm.modules=${VM_MODDIR[i]}} $EXTRA_CMDLINE" \
		-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=root,mount_tag=hostroot \
		-fsdev local,id=res,path="$RUN",security_model=none,multidevs=remap \
		-device virtio-9p-pci,fsdev=res,mount_tag=results \
		-fsdev local,id=proj,path="$TOP",security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=proj,mount_tag=project \
		"${NET_ARGS[@]}" \
		< /dev/null > "$RUN/qemu-vm$i.err" 2>&1 &
	PIDS+=($!)
}

# wait_listening I: the QEMU of guest I listens on the ports of its links.
wait_listening() {
	local i=$1 k a b

	for k in "${!LINKS[@]}"; do
		read -r a b <<< "${LINKS[k]}"
		[ "$a" = "$i" ] || continue
		for _ in $(seq 100); do
			ss -Hltn "( sport = :${LINK_PORT[k]} )" | grep -q . && break
			sleep 0.1
		done
	done
}

start_vms() {
	local i

	T0=$(now)
	echo "$ME: $VMS VM(s), $ACCEL${ICOUNT:+ icount shift=$ICOUNT}, kernel $KERNEL, run dir $RUN" >&2
	for i in $(seq 0 $((VMS - 1))); do
		[ "${VM_KERNEL[i]}" = "$KERNEL" ] ||
			echo "$ME: ${VM_NAME[i]} boots ${VM_KERNEL[i]}" >&2
		[ -z "${VM_MODDIR[i]}" ] ||
			echo "$ME: ${VM_NAME[i]}'s modules: ${VM_MODDIR[i]}" >&2
		# A listening QEMU must be up before a connecting one starts.
		start_vm "$i"
		wait_listening "$i"
	done
	BOOT_T=()
	DEADLINE=$(awk -v t="$T0" -v d="$TIMEOUT" 'BEGIN { printf "%d", t + d }')
	BOOT_DEADLINE=0
	BOOT_WAIT=$BOOT_TIMEOUT
	# The self-test's first boot never starts its CPUs, and no time makes
	# it boot: its watchdog fires after HANG_BOOT_TIMEOUT, while the boot
	# after it gets the whole BOOT_TIMEOUT, as any boot does.
	[ "$HANG_FIRST" = 1 ] && [ "$BOOTS" = 1 ] && [ "$BOOT_TIMEOUT" -gt 0 ] &&
		[ "$HANG_BOOT_TIMEOUT" -lt "$BOOT_TIMEOUT" ] &&
		BOOT_WAIT=$HANG_BOOT_TIMEOUT
	[ "$BOOT_WAIT" -gt 0 ] &&
		BOOT_DEADLINE=$(awk -v t="$T0" -v d="$BOOT_WAIT" 'BEGIN { printf "%d", t + d }')
}

kill_vms() {
	local p

	cleanup
	sleep 1
	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2> /dev/null
	done
	wait 2> /dev/null
}

# A guest that does not reach the test driver in time (seen with the debug
# kernel under heavy host load: an empty console for 20 minutes while
# other boots of the same kernel took two) is taken for a hung boot.  Its
# console log is kept as console-vmN.log.boot1 and the run is started once
# more from scratch: the guests' result directories are emptied of
# anything the guests wrote.
reboot_vms() {
	local i log f

	kill_vms
	PIDS=()
	for i in $(seq 0 $((VMS - 1))); do
		log=$(console_log "$i")
		mv "$log" "$log.boot1" 2> /dev/null
		mv "$RUN/qemu-vm$i.err" "$RUN/qemu-vm$i.err.boot1" 2> /dev/null
		for f in "$RUN/vm$i"/*; do
			case ${f##*/} in
			config | insmod | tests) ;;
			*) rm -rf "$f" ;;
			esac
		done
	done
	find "$RUN/shared" -mindepth 1 -delete
	link_ports
	start_vms
}

# A guest's script may ask to die as a VM dies, without shutting down
# (guest-lib.sh's vm_kill_me): it writes its test slot to
# shared/kill-request.vmN, and the host kills that QEMU with SIGKILL.  The
# host then says so to the others (shared/signal.killed-vmN), stands in
# for the dead guest at the barriers of the later slots and of the end,
# and notes the slot in vmN/killed for the report.  The guests can write
# where these files are: the request is read only from a regular file, a
# few bytes of it, and what the host writes there replaces whatever is in
# the way (host_put) instead of following it.
kill_requested() {
	local i slot m f ntests

	for i in "${!PIDS[@]}"; do
		f=$RUN/shared/kill-request.vm$i
		if [ ! -f "$f" ] || [ -L "$f" ]; then
			continue
		fi
		[ -e "$RUN/vm$i/killed" ] && continue
		slot=$(head -c 8 "$f")
		ntests=$(wc -l < "$RUN/vm$i/tests")
		# not yet visible in full: the next poll reads it again
		case "$slot" in '' | *[!0-9]*) continue ;; esac
		slot=$((10#$slot))
		if [ "$slot" -lt 1 ] || [ "$slot" -gt "$ntests" ]; then
			continue
		fi
		kill -9 "${PIDS[$i]}" 2> /dev/null
		host_put "$RUN/vm$i/killed" "$slot"
		echo "$ME: killed ${VM_NAME[i]} in test $slot, as its script asked" >&2
		for ((m = slot + 1; m <= ntests; m++)); do
			host_put "$RUN/shared/barrier.test-$m.vm$i"
		done
		host_put "$RUN/shared/barrier.end.vm$i"
		host_put "$RUN/shared/signal.killed-vm$i"
	done
}

# host_put FILE [LINE]: FILE holds LINE (or nothing), written beside it and
# renamed over it: a link or FIFO a guest left there is replaced, not
# followed.
host_put() {
	local tmp

	tmp=$(mktemp "$1.host.XXXXXX") || return 1
	[ $# -lt 2 ] || echo "$2" > "$tmp"
	mv -f -T "$tmp" "$1"
}

# died_how: for the boot watchdog's note, how the guests that died before
# the test driver ended (the loop's $died): each one's first panic or Oops
# line, else the last line QEMU printed.  The crash is not failed by
# itself (no module under test is loaded before the driver), but it must
# not go unseen once the boot's log is kept aside.
died_how() {
	local i v line

	for i in "${!PIDS[@]}"; do
		v=${VM_NAME[i]}
		case " $died " in *" $v "*) ;; *) continue ;; esac
		line=$(grep -a -m 1 -E 'Kernel panic|BUG:|Oops' "$(console_log "$i")" 2> /dev/null |
			tr -d '\r')
		[ -n "$line" ] || line=$(tail -n 1 "$RUN/qemu-vm$i.err" 2> /dev/null)
		[ -z "$line" ] || printf ' (%s: %s)' "$v" "$line"
	done
}

# vmlib_boot: boot every guest, wait until all have stopped (or the boot
# watchdog or the run's timeout gave up on them).
vmlib_boot() {
	local i alive up unbooted died note t

	vmlib_accel
	vmlib_cmdline
	VM_BOOT=()
	VM_INITRD=()
	for i in $(seq 0 $((VMS - 1))); do
		prepare_kernel "${VM_KREL[i]}" "${VM_KERNEL[i]}" "${VM_MODROOT[i]}"
		VM_INITRD[i]=$INITRAMFS
		VM_BOOT[i]=$BOOT_KERNEL
	done

	echo "$RIG_DIR/guest-run" > "$RUN/driver"

	# Drop old runs, keep the newest few.
	find "$VMDIR/runs" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort -r |
		tail -n +$((KEEP_RUNS + 1)) | while read -r old; do
		rm -rf "${VMDIR:?}/runs/$old"
	done

	trap cleanup EXIT
	trap 'exit 130' INT TERM

	declare -gA BOOT_T
	BOOT_NOTES=()
	TIMED_OUT=0
	BOOTS=1
	link_ports
	start_vms
	while :; do
		alive=0
		unbooted=
		died=
		# bash's own strftime: no date(1) per round
		printf -v t '%(%s)T' -1
		for i in "${!PIDS[@]}"; do
			up=0
			kill -0 "${PIDS[$i]}" 2> /dev/null && alive=1 up=1
			if [ -z "${BOOT_T[$i]:-}" ] && [ -e "$RUN/vm$i/booted" ]; then
				BOOT_T[$i]=$(elapsed "$T0" "$(now)")
				echo "$ME: ${VM_NAME[i]} booted in ${BOOT_T[$i]} s" >&2
			fi
			[ -n "${BOOT_T[$i]:-}" ] && continue
			unbooted="$unbooted ${VM_NAME[i]}"
			# (looked at after "booted": a guest that got there and
			# then ended is not one that died on the way)
			[ "$up" = 1 ] || died="$died ${VM_NAME[i]}"
		done
		# A QEMU that exited before its guest reached the test driver
		# (a guest kernel that panicked while booting: an "Oops: int3"
		# in sched_clock_cpu has been seen under TCG) is a failed boot
		# now: no watchdog needs to wait for it.
		note=
		if [ -n "$died" ]; then
			note="boot $BOOTS:$died: QEMU exited before the test driver"
			note="$note$(died_how)"
		elif [ "$alive" = 0 ]; then
			break
		elif [ -n "$unbooted" ] && [ "$BOOT_DEADLINE" -gt 0 ] &&
			[ "$t" -ge "$BOOT_DEADLINE" ]; then
			note="boot $BOOTS:$unbooted not at the test driver after $BOOT_WAIT s"
		fi
		kill_requested
		if [ -n "$note" ]; then
			if [ "$BOOTS" = 1 ]; then
				note="$note; booting again (console log: *.boot1)"
				BOOT_NOTES+=("$note")
				echo "$ME: $note" >&2
				BOOTS=2
				reboot_vms
				continue
			fi
			BOOT_NOTES+=("$note; giving up")
			echo "$ME: $note; giving up" >&2
			TIMED_OUT=1
			BOOTS=gave-up
			kill_vms
			break
		fi
		if [ "$t" -ge "$DEADLINE" ]; then
			TIMED_OUT=1
			echo "$ME: timeout after $TIMEOUT s, killing QEMU" >&2
			kill_vms
			break
		fi
		host_nap 0.2
	done
	host_nap_end
	wait 2> /dev/null
	T1=$(now)
}

# ------------------------------------------------------------------ report
point() {
	local ok=$1 name=$2

	POINT=$((POINT + 1))
	if [ "$ok" = 1 ]; then
		echo "ok $POINT - $name"
	else
		echo "not ok $POINT - $name"
		FAILED=1
		if [ -n "${RECAP:-}" ]; then
			echo "not ok $POINT - $name" >> "$RECAP"
		fi
	fi
}

# recap_excerpt PREFIX FILE: for the recap, the first five failed points
# of a test's output FILE, at any depth (the nested TAP of a KTAP module
# too), each with the three lines before it, "--" between lines that are
# not adjacent; without one, the last three lines of FILE (a test's or a
# guest's setup output).  Indented by two blanks and PREFIX (the guest's
# name when there are several).
recap_excerpt() {
	if [ ! -r "$2" ]; then
		echo "  ${1}(no output)"
		return
	fi
	awk -v p="$1" '
	{ line[NR] = $0 }
	/^(# *)*not ok/ && ++k <= 5 {
		for (j = NR - 3; j <= NR; j++)
			if (j > 0)
				keep[j] = 1
	}
	END {
		if (!k)
			for (j = NR - 2; j <= NR; j++)
				if (j > 0)
					keep[j] = 1
		last = 0
		for (j = 1; j <= NR; j++) {
			if (!(j in keep))
				continue
			if (last && j > last + 1)
				print "  " p "--"
			print "  " p line[j]
			last = j
		}
	}' "$2"
}

# Show a guest-side output file as TAP diagnostics.
diag() {
	local prefix=$1 file=$2

	[ -r "$file" ] || return
	sed -e 's/^# //' -e "s/^/# $prefix/" "$file"
}

# Why a guest produced no result: the tail of its console log.
why_dead() {
	local i=$1 log v=${VM_NAME[$1]}

	log=$(console_log "$i")
	if [ "$BOOTS" = gave-up ] && [ -e "$RUN/vm$i/booted" ]; then
		echo "# $v: no result, the run was given up: another guest's boot failed (boot watchdog, above)"
	elif [ "$BOOTS" = gave-up ]; then
		echo "# $v: no result, no boot reached the test driver (boot watchdog, above)"
	elif [ "$TIMED_OUT" = 1 ]; then
		echo "# $v: no result, the run timed out after $TIMEOUT s (hang?)"
	elif [ ! -e "$RUN/vm$i/booted" ]; then
		echo "# $v: no result, the guest never reached the test driver"
	else
		echo "# $v: no result, the guest died (panic?)"
	fi
	grep -a -m 5 -E 'Kernel panic|BUG:|Oops|general protection' "$log" |
		tr -d '\r' | sed -e "s/^/# $v: /"
	echo "# $v: last console lines ($log):"
	tail -n 15 "$log" | sed -e 's/^/#   /'
	if [ -s "$RUN/qemu-vm$i.err" ]; then
		sed -e "s/^/# $v qemu: /" "$RUN/qemu-vm$i.err"
	fi
}

# vm_prefix I: how diagnostics of guest I start ("" with one guest).
vm_prefix() {
	[ "$VMS" = 1 ] || echo "${VM_NAME[$1]}: "
}

# test_name FILE: a test script as the report names it.
test_name() {
	local name=${1#"$RUN"/files/*/}

	echo "${name#"$TOP"/}"
}

# Test points: slot N of every guest's tests file runs at the same time
# (guest-run puts a barrier before each).  The guests that run the same
# script in a slot make one point; IDLE_TEST is no point.
# test_groups: TEST_GROUPS[] of "N script vm vm...", in order.
test_groups() {
	local n i t g found

	TEST_GROUPS=()
	NSLOTS=$(wc -l < "$RUN/vm0/tests")
	for n in $(seq 1 "$NSLOTS"); do
		local slot=()
		for i in $(seq 0 $((VMS - 1))); do
			t=$(sed -n "${n}p" "$RUN/vm$i/tests")
			[ -n "$t" ] || continue
			[ -n "$IDLE_TEST" ] && [ "$t" = "$IDLE_TEST" ] && continue
			found=0
			for g in "${!slot[@]}"; do
				if [ "${slot[g]%% *}" = "$t" ]; then
					slot[g]="${slot[g]} $i"
					found=1
					break
				fi
			done
			[ "$found" = 1 ] || slot+=("$t $i")
		done
		for g in "${slot[@]}"; do
			TEST_GROUPS+=("$n $g")
		done
	done
}

# vmlib_report: the TAP report of the run; FAILED=1 if a point failed.
# shellcheck disable=SC2034
vmlib_report() {
	local i n t p ok rc times name g vms hits log files f label PATTERNS boot killed
	local USER_FAULTS found user excerpt

	FAILED=0
	POINT=0
	RECAP=$RUN/recap
	: > "$RECAP"
	DEAD_SHOWN=()
	test_groups

	echo "TAP version 13"
	echo "1..$((${#TEST_GROUPS[@]} + 2))"
	for note in "${BOOT_NOTES[@]}"; do
		echo "# boot watchdog: $note"
	done

	ok=1
	for i in $(seq 0 $((VMS - 1))); do
		p=$(vm_prefix "$i")
		diag "$p" "$RUN/vm$i/setup.out"
		[ -r "$RUN/vm$i/setup.time" ] && echo "# ${p}setup time: $(cat "$RUN/vm$i/setup.time")s"
		if [ "$(cat "$RUN/vm$i/setup.rc" 2>/dev/null)" != 0 ]; then
			ok=0
			if [ ! -e "$RUN/vm$i/setup.rc" ]; then
				why_dead "$i"
				DEAD_SHOWN[i]=1
			fi
		fi
	done
	point "$ok" "setup (network, modprobe, insmod)"
	if [ "$ok" = 0 ]; then
		for i in $(seq 0 $((VMS - 1))); do
			recap_excerpt "$(vm_prefix "$i")" "$RUN/vm$i/setup.out"
		done >> "$RECAP"
	fi
	for g in "${TEST_GROUPS[@]}"; do
		read -r n t vms <<< "$g"
		name=$(test_name "$t")
		ok=1
		times=""
		label=""
		for i in $vms; do
			p=$(vm_prefix "$i")
			label="$label,${VM_NAME[i]}"
			diag "$p" "$RUN/vm$i/test-$n.out"
			rc=$(cat "$RUN/vm$i/test-$n.rc" 2>/dev/null)
			killed=$(cat "$RUN/vm$i/killed" 2>/dev/null)
			if [ -z "$rc" ] && [ "$killed" = "$n" ]; then
				# killed as asked: what it printed until then
				# counts, and it must have printed a point
				echo "# ${p}killed by the host during this test, as it asked"
				rc=0
				grep -q '^not ok' "$RUN/vm$i/test-$n.out" 2>/dev/null && rc=1
				if ! grep -q '^ok' "$RUN/vm$i/test-$n.out" 2>/dev/null; then
					echo "# ${p}no point passed before the kill"
					rc=1
				fi
			elif [ -z "$rc" ] && [ -n "$killed" ] && [ "$killed" -lt "$n" ]; then
				echo "# ${p}not run: killed in test $killed"
				ok=0
				continue
			fi
			if [ -z "$rc" ]; then
				ok=0
				if [ -z "${DEAD_SHOWN[$i]:-}" ]; then
					why_dead "$i"
					DEAD_SHOWN[i]=1
				fi
				continue
			fi
			[ "$rc" = 0 ] || { ok=0; echo "# ${p}exit status $rc"; }
			times="$times ${p}$(cat "$RUN/vm$i/test-$n.time" 2>/dev/null)s"
		done
		# The failed points again, last: a log that shows only the
		# lines before this point's (a CI excerpt) still says which.
		if [ "$ok" = 0 ]; then
			for i in $vms; do
				grep -h '^not ok' "$RUN/vm$i/test-$n.out" 2>/dev/null |
					awk -v p="# failed: $(vm_prefix "$i")" '
					NR <= 5 { print p $0 }
					END { if (NR > 5) print p "... and " NR - 5 " more" }'
			done
			excerpt=$(for i in $vms; do
				recap_excerpt "$(vm_prefix "$i")" "$RUN/vm$i/test-$n.out"
			done)
		fi
		[ -n "$times" ] && echo "# time:$times"
		# Name the guests unless all of them ran it.
		[ "$(echo "$vms" | wc -w)" = "$VMS" ] || name="${label#,}: $name"
		point "$ok" "$name"
		[ "$ok" = 1 ] || echo "$excerpt" >> "$RECAP"
	done

	# expect_once I: a test that provokes a splat on purpose announces it
	# first, with a kernel log line "vm-run: expect once: TEXT", TEXT
	# being the whole splat line as the kernel logs it, without its time
	# stamp.  Every log of guest I must then hold TEXT exactly once,
	# after exactly one announcement of it, or neither: that line is
	# taken out of $found.  Anything else fails and lets nothing of TEXT
	# through: the line missing, logged twice, or logged before its
	# announcement or in a log without one; a text announced twice; an
	# empty one.  A line that only holds TEXT is not TEXT: no
	# announcement lets through a splat that it does not spell out in
	# full.  The announcements are taken out of $found too (they hold
	# their text).
	expect_once() {
		local i=$1 mark='vm-run: expect once: ' f k verdict ret=0
		local announced=() keep=()
		local -A bad=()

		mapfile -t announced < <(for f in "${files[@]}"; do
				tr -d '\r' < "$f" | awk -v mark="$mark" '
				{ sub(/^\[[ 0-9.]*\] /, "") }
				index($0, mark) == 1 { print substr($0, length(mark) + 1) }'
			done | sort -u)
		[ ${#announced[@]} -gt 0 ] || return 0
		# each log's verdict on each text, by its index in $announced
		# (a text itself may end in blanks that read would drop)
		while IFS=$'\t' read -r k verdict; do
			bad[$k]=1
			ret=1
			echo "# ${VM_NAME[i]}: expected once, but $verdict: ${announced[k]}"
			excerpt+="  ${VM_NAME[i]}: expected once, but $verdict: ${announced[k]}"$'\n'
		done < <(for f in "${files[@]}"; do
				tr -d '\r' < "$f" |
				ANN=$(printf '%s\n' "${announced[@]}") awk -v mark="$mark" \
					-v n="${#announced[@]}" '
				BEGIN { split(ENVIRON["ANN"], t, "\n")
					for (k = 1; k <= n; k++) want[t[k]] = k - 1 }
				{ line = $0; sub(/^\[[ 0-9.]*\] /, "", line) }
				index(line, mark) == 1 { a[substr(line, length(mark) + 1)]++; next }
				line in want { if (line in a) after[line]++; else before[line]++ }
				END {
					for (x in want) {
						if (x == "") {
							if (x in a)
								print want[x] "\tthe announcement is empty"
							continue
						}
						if (!(x in a) && !(x in before))
							continue
						if (a[x] == 1 && after[x] == 1 && !(x in before))
							continue
						print want[x] "\tannounced " a[x] + 0 ", seen " \
							after[x] + 0 " times after and " before[x] + 0 \
							" before"
					}
				}'
			done | sort -u)
		for k in "${!announced[@]}"; do
			[ -n "${bad[$k]:-}" ] && continue
			keep+=("${announced[k]}")
			echo "# ${VM_NAME[i]}: expected once and seen: ${announced[k]}"
		done
		found=$(LET=$(printf '%s\n' "${keep[@]}") awk -v mark="$mark" \
			-v n="${#keep[@]}" '
			BEGIN { split(ENVIRON["LET"], t, "\n")
				for (k = 1; k <= n; k++) let[t[k]] = 1 }
			{ line = $0; sub(/^\[[ 0-9.]*\] /, "", line) }
			index(line, mark) == 1 || line in let { next }
			{ print }' <<< "$found")
		return $ret
	}

	# The kernel log check covers the console (panics, early boot) and
	# the full dmesg dump (quiet hides low levels on the console until
	# the driver runs).
	PATTERNS=$RUN/splat-patterns USER_FAULTS=$RUN/splat-user-faults
	grep -v -e '^#' -e '^$' -e '^!' "$RIG_DIR/splat-patterns" > "$PATTERNS"
	sed -n 's/^!//p' "$RIG_DIR/splat-patterns" > "$USER_FAULTS"
	[ -s "$PATTERNS" ] || die "no patterns in $RIG_DIR/splat-patterns"
	ok=1
	excerpt=""
	for i in $(seq 0 $((VMS - 1))); do
		log=$(console_log "$i")
		files=("$log")
		for f in dmesg.boot dmesg; do
			[ -r "$RUN/vm$i/$f" ] && files+=("$RUN/vm$i/$f")
		done
		if [ -e "$RUN/vm$i/killed" ]; then
			echo "# ${VM_NAME[i]}: killed in test $(cat "$RUN/vm$i/killed"); its log up to then is scanned"
		elif [ ! -e "$RUN/vm$i/done" ]; then
			ok=0
			echo "# ${VM_NAME[i]}: the guest did not finish; its log cannot be called clean"
			excerpt+="  ${VM_NAME[i]}: the guest did not finish"$'\n'
		fi
		found=$(grep -hF -f "$PATTERNS" "${files[@]}" | tr -d '\r' | sort -u)
		expect_once "$i" || ok=0
		user=$(grep -F -f "$USER_FAULTS" <<< "$found")
		hits=$(grep -vF -f "$USER_FAULTS" <<< "$found")
		if [ -n "$user" ]; then
			echo "# ${VM_NAME[i]}: a user-space program faulted (not a kernel splat):"
			echo "$user" | head -n 5 | sed -e 's/^/#   /'
		fi
		if [ -n "$hits" ]; then
			ok=0
			echo "# ${VM_NAME[i]}: kernel log has splats ($log):"
			echo "$hits" | head -n 20 | sed -e 's/^/#   /'
			excerpt+=$(echo "$hits" | head -n 3 |
				sed -e "s/^/  ${VM_NAME[i]}: /")$'\n'
		fi
	done
	point "$ok" "kernel log clean"
	[ -z "$excerpt" ] || printf '%s' "$excerpt" >> "$RECAP"

	boot=""
	for i in "${!PIDS[@]}"; do
		if [ -n "${BOOT_T[$i]:-}" ]; then
			boot="$boot ${VM_NAME[i]}=${BOOT_T[$i]}s"
		else
			boot="$boot ${VM_NAME[i]}: never"
		fi
	done
	echo "# boot time (QEMU start to test driver):$boot; total $(elapsed "$T0" "$T1") s"
	[ "$TIME_SCALE" = 1 ] ||
		echo "# time scale x$TIME_SCALE: the run and step limits and the guests' waits"
	for i in $(seq 0 $((VMS - 1))); do
		echo "# console log ${VM_NAME[i]}: $(console_log "$i")"
	done
	echo "# results: $RUN"
	# Last, what failed: an excerpt of the lines before the suite's
	# own point (what CI keeps) then names it even when the failing
	# test ran long before the end.
	if [ "$FAILED" = 1 ]; then
		echo "# recap of the failed points:"
		sed 's/^/# recap | /' "$RECAP"
	fi
}
