#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# sid-kernel.sh: the Debian sid kernel of the 7.2 track, fetched, verified,
# unpacked and prepared for out-of-tree modules, in a cache outside the
# clone.
#
# The version is the one tools/sid-version records (the one this tree was
# last validated on), never whatever sid carries today: sid drops a
# version once a newer one lands, so the packages are kept in the cache,
# keyed by that version, and a newer sid kernel is only reported, loudly.
# If the cache is cold and the archive no longer has the recorded version,
# this fails, naming both versions.
#
# The packages come from the archive's sid suite through apt-get with a
# private sources list and private lists and caches (the host's apt
# configuration is neither read for sources nor written; nothing is
# installed): apt checks the suite's signature against the host's Debian
# keyring and each package's SHA-256 against the signed index, and this
# script checks them once more against the index before unpacking.
#
#   $CACHE/apt/                      private apt state (sources.list, lists)
#   $CACHE/<version>/debs/           the packages as fetched, SHA256SUMS
#   $CACHE/<version>/root/           their contents: usr/lib/modules/<krel>/
#                                    (vmlinuz, the modules, depmod'ed),
#                                    usr/src/linux-source-<series>.tar.xz,
#                                    usr/src/linux-headers-<krel>/.config;
#                                    lib -> usr/lib (for modprobe -d, depmod -b)
#   $CACHE/<version>/build/          linux-source-<series> with the headers
#                                    package's .config and Module.symvers,
#                                    olddefconfig + modules_prepare with the
#                                    host's gcc: make -C build M=... works
#   $CACHE/<version>/env             SID_* variables of the entry (shell)
#   $CACHE/<version>/timings         seconds spent per step
#
# CACHE is $SID_CACHE, else /var/cache/mlx4-pvcm/sid where that can be
# written, else ${XDG_CACHE_HOME:-$HOME/.cache}/mlx4-pvcm-sid.
#
#   sid-kernel.sh [--cache DIR] [--refresh] [--no-prepare] [--quiet]
#   sid-kernel.sh [--cache DIR] --query
#   sid-kernel.sh [--cache DIR] --get NAME
#
# (no option)   fetch, unpack and prepare what is missing; with a warm
#               cache it only looks at the archive for a newer kernel, at
#               most every 6 hours (the lists are kept)
# --refresh     look at the archive now
# --no-prepare  stop after unpacking (no compiler run)
# --query       print the env of the cached entry; no network, no lock;
#               exit status 1 when the entry is not unpacked yet
# --get NAME    print one variable of it (SID_KREL, SID_KDIR, SID_KERNEL,
#               SID_MODROOT, SID_SOURCE); empty when not there
#
# Exit status 3: the cache has no entry and sid no longer carries the
# recorded version (nothing this machine can do; make deps goes on and
# make check reports the track as skipped).  1 for any other failure.
set -euo pipefail

ME=sid-kernel
TOP=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${SID_CACHE:-}
REFRESH=0
PREPARE=1
QUERY=
QUIET=0
# How old the private lists may get before a warm run reads the archive.
LISTS_MAX_AGE_MIN=360
JOBS=$(nproc)

usage() {
	sed -n '/^#   sid-kernel.sh \[/,/^#               SID_MODROOT/s/^# \{0,1\}//p' "$0"
}

while [ $# -gt 0 ]; do
	case $1 in
	--cache) CACHE=$2; shift 2 ;;
	--refresh) REFRESH=1; shift ;;
	--no-prepare) PREPARE=0; shift ;;
	--query) QUERY=all; shift ;;
	--get) QUERY=$2; shift 2 ;;
	--quiet) QUIET=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "$ME: unknown option $1" >&2; usage >&2; exit 2 ;;
	esac
done

say() {
	[ "$QUIET" = 1 ] || echo "$ME: $*" >&2
}

die() {
	echo "$ME: $*" >&2
	exit 1
}

# shellcheck source=tools/sid-version
. "$TOP/tools/sid-version"
if [ -z "${SID_VERSION:-}" ] || [ -z "${SID_KREL:-}" ] || [ -z "${SID_SERIES:-}" ]; then
	die "tools/sid-version must set SID_VERSION, SID_KREL and SID_SERIES"
fi

if [ -n "$CACHE" ]; then
	:
elif [ -w /var/cache/mlx4-pvcm/sid ] ||
	{ [ ! -e /var/cache/mlx4-pvcm/sid ] && [ -z "$QUERY" ] &&
		mkdir -p /var/cache/mlx4-pvcm/sid 2> /dev/null; }; then
	CACHE=/var/cache/mlx4-pvcm/sid
elif [ -n "$QUERY" ] && [ -d /var/cache/mlx4-pvcm/sid ]; then
	CACHE=/var/cache/mlx4-pvcm/sid
else
	CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/mlx4-pvcm-sid
fi

VDIR=$CACHE/$SID_VERSION
DEBS=$VDIR/debs
ROOT=$VDIR/root
KDIR=$VDIR/build
APTDIR=$CACHE/apt
KERNEL=$ROOT/usr/lib/modules/$SID_KREL/vmlinuz
SOURCE=$ROOT/usr/src/linux-source-$SID_SERIES.tar.xz
HEADERS=$ROOT/usr/src/linux-headers-$SID_KREL
PKGS="linux-source-$SID_SERIES linux-binary-$SID_KREL linux-modules-$SID_KREL
linux-base-$SID_KREL linux-headers-$SID_KREL"

# What the prepared tree is made of besides the packages: the compiler
# and binutils that ran olddefconfig and modules_prepare (a new gcc is a
# new .config: its CC_VERSION_TEXT and the options that depend on it).
toolchain() {
	echo "gcc $(gcc -dumpfullversion)"
	ld --version 2> /dev/null | sed -n 1p
}

write_env() {
	{
		echo "SID_VERSION=$SID_VERSION"
		echo "SID_KREL=$SID_KREL"
		echo "SID_SERIES=$SID_SERIES"
		echo "SID_KERNEL=$KERNEL"
		echo "SID_MODROOT=$ROOT"
		echo "SID_SOURCE=$SOURCE"
		if [ -e "$KDIR/.prepared" ]; then
			echo "SID_KDIR=$KDIR"
		else
			echo "SID_KDIR="
		fi
	} > "$VDIR/env.new"
	mv "$VDIR/env.new" "$VDIR/env"
}

# ---------------------------------------------------------------- query
if [ -n "$QUERY" ]; then
	[ -e "$ROOT/.unpacked" ] && [ -r "$VDIR/env" ] || exit 1
	if [ "$QUERY" = all ]; then
		cat "$VDIR/env"
	else
		sed -n "s/^$QUERY=//p" "$VDIR/env"
	fi
	exit 0
fi

# ------------------------------------------------------------------ apt
# apt-get and apt-cache on the private state: only the sid suite of the
# mirror the host uses, no dpkg status, no preferences, amd64 only.
mirror() {
	local m

	m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources 2> /dev/null |
		grep -v '^[[:space:]]*#' |
		grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security |
		head -n 1 | tr -d ' ')
	echo "${m:-http://deb.debian.org/debian}"
}

APT_OPTS=()
apt_setup() {
	local keyring=/usr/share/keyrings/debian-archive-keyring.gpg

	mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial"
	echo "deb [signed-by=$keyring] $(mirror) sid main" > "$APTDIR/sources.list.new"
	mv "$APTDIR/sources.list.new" "$APTDIR/sources.list"
	APT_OPTS=(-o "Dir::Etc::sourcelist=$APTDIR/sources.list"
		-o Dir::Etc::sourceparts=/dev/null
		-o Dir::Etc::preferences=/dev/null
		-o Dir::Etc::preferencesparts=/dev/null
		-o "Dir::State::lists=$APTDIR/lists"
		-o "Dir::Cache=$APTDIR/cache"
		-o Dir::State::status=/dev/null
		-o APT::Architecture=amd64 -o APT::Architectures=amd64
		-o Acquire::Languages=none
		-o Acquire::http::Timeout=20 -o Acquire::Retries=1
		-o APT::Sandbox::User=root)
}

apt_update() {
	say "reading sid's index ($(mirror) sid main)"
	apt-get "${APT_OPTS[@]}" -qq update > "$APTDIR/update.log" 2>&1 ||
		{ cat "$APTDIR/update.log" >&2; return 1; }
	touch "$APTDIR/updated"
}

# field PKG[=VERSION] FIELD: a field of a package in sid's index
field() {
	apt-cache "${APT_OPTS[@]}" show --no-all-versions "$1" 2> /dev/null |
		sed -n "s/^$2: //p" | head -n 1
}

# The kernel sid carries now: "VERSION KREL", from its linux-image-amd64.
sid_now() {
	local v krel

	v=$(field linux-image-amd64 Version)
	krel=$(field linux-image-amd64 Depends |
		grep -oE 'linux-image-[0-9][^ ,]*-amd64' | head -n 1)
	echo "$v ${krel#linux-image-}"
}

# Say loudly when sid's kernel is not the recorded one.
check_newer() {
	local now v krel

	now=$(sid_now)
	v=${now% *}
	krel=${now#* }
	[ -n "$v" ] || { say "sid's index names no linux-image-amd64"; return 0; }
	if [ "$v" = "$SID_VERSION" ]; then
		rm -f "$VDIR/newer"
		return 0
	fi
	{
		echo "$ME: ********************************************************************"
		if dpkg --compare-versions "$v" gt "$SID_VERSION"; then
			echo "$ME: Debian sid now carries a newer kernel: $v ($krel)."
		else
			echo "$ME: Debian sid now carries another kernel: $v ($krel)."
		fi
		echo "$ME: This tree is validated on $SID_VERSION ($SID_KREL), recorded in"
		echo "$ME: tools/sid-version, and keeps using that one.  The new kernel is a"
		echo "$ME: new version to validate: build, test, then record it there."
		echo "$ME: ********************************************************************"
	} | tee "$VDIR/newer" >&2
}

# ---------------------------------------------------------------- fetch
# The packages of the recorded version, checked against the signed index.
fetch() {
	local p f missing="" now tmp sum

	for p in $PKGS; do
		[ -n "$(field "$p=$SID_VERSION" Version)" ] ||
			missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		now=$(sid_now)
		cat >&2 <<-EOF
			$ME: sid no longer has the kernel this tree is validated on:
			$ME:   recorded (tools/sid-version): $SID_VERSION ($SID_KREL),
			$ME:   missing from the archive:$missing
			$ME:   sid carries now: ${now% *} (${now#* }).
			$ME: That one is a new version to validate: record it in
			$ME: tools/sid-version once it is (or copy $VDIR/debs
			$ME: from a machine that has it cached).
		EOF
		exit 3
	fi
	tmp=$VDIR/debs.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	for p in $PKGS; do
		sum=$(field "$p=$SID_VERSION" SHA256)
		[ -n "$sum" ] || die "no SHA256 for $p $SID_VERSION in sid's index"
		echo "$sum  ${p}_${SID_VERSION}.deb"
	done > "$tmp/SHA256SUMS.index"
	say "fetching $SID_VERSION: $(echo "$PKGS" | tr '\n' ' ')"
	# shellcheck disable=SC2046
	(cd "$tmp" && apt-get "${APT_OPTS[@]}" -qq download \
		$(for p in $PKGS; do echo "$p=$SID_VERSION"; done)) ||
		die "apt-get download failed"
	# apt names the files PKG_VERSION_ARCH.deb (the version's ':' as %3a)
	for p in $PKGS; do
		# shellcheck disable=SC2012
		f=$(cd "$tmp" && ls "${p}_"*.deb 2> /dev/null | head -n 1)
		[ -n "$f" ] || die "apt-get download left no $p"
		if [ "$(dpkg-deb -f "$tmp/$f" Package)" != "$p" ] ||
			[ "$(dpkg-deb -f "$tmp/$f" Version)" != "$SID_VERSION" ]; then
			die "$f is not $p $SID_VERSION"
		fi
		mv "$tmp/$f" "$tmp/${p}_${SID_VERSION}.deb"
	done
	(cd "$tmp" && sha256sum -c --quiet SHA256SUMS.index) ||
		die "the packages do not match sid's signed index"
	mv "$tmp/SHA256SUMS.index" "$tmp/SHA256SUMS"
	rm -rf "$DEBS"
	mv "$tmp" "$DEBS"
}

# --------------------------------------------------------------- unpack
unpack() {
	local tmp=$VDIR/root.tmp p f

	(cd "$DEBS" && sha256sum -c --quiet SHA256SUMS) ||
		die "$DEBS does not match its SHA256SUMS"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	for p in $PKGS; do
		say "unpacking ${p}_$SID_VERSION.deb"
		dpkg-deb -x "$DEBS/${p}_$SID_VERSION.deb" "$tmp"
	done
	ln -s usr/lib "$tmp/lib"
	for f in "$tmp/usr/lib/modules/$SID_KREL/vmlinuz" \
		"$tmp/usr/src/linux-source-$SID_SERIES.tar.xz" \
		"$tmp/usr/src/linux-headers-$SID_KREL/.config" \
		"$tmp/usr/src/linux-headers-$SID_KREL/Module.symvers"; do
		[ -r "$f" ] || die "the packages have no ${f#"$tmp"/}"
	done
	depmod -b "$tmp" "$SID_KREL" || die "depmod failed"
	rm -rf "$ROOT"
	mv "$tmp" "$ROOT"
	touch "$ROOT/.unpacked"
}

# -------------------------------------------------------------- prepare
# linux-source with the .config the distro built its kernel with, brought
# to the host's gcc (olddefconfig drops what gcc-12 cannot do, e.g. Rust),
# then modules_prepare.  The release is the distro's; module signing at
# install time is off (the distro's key is not in the package).
prepare() {
	local tmp=$VDIR/build.tmp rel

	rm -rf "$tmp" "$KDIR"
	mkdir -p "$tmp"
	say "extracting linux-source-$SID_SERIES into $KDIR"
	tar -xf "$SOURCE" -C "$tmp" --strip-components=1
	cp "$HEADERS/.config" "$tmp/.config"
	cp "$HEADERS/.config" "$tmp/.config.distro"
	"$tmp/scripts/config" --file "$tmp/.config" \
		--disable MODULE_SIG_ALL \
		--set-str MODULE_SIG_KEY certs/signing_key.pem
	say "olddefconfig and modules_prepare (gcc $(gcc -dumpfullversion), $JOBS jobs)"
	kmake "$tmp" olddefconfig > "$VDIR/prepare.log" 2>&1 ||
		{ tail -n 30 "$VDIR/prepare.log" >&2; die "olddefconfig failed"; }
	kmake "$tmp" modules_prepare >> "$VDIR/prepare.log" 2>&1 ||
		{ tail -n 30 "$VDIR/prepare.log" >&2; die "modules_prepare failed"; }
	rel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' \
		"$tmp/include/generated/utsrelease.h")
	[ "$rel" = "$SID_KREL" ] ||
		die "the prepared tree is release '$rel', not $SID_KREL"
	# The exports of the distro's vmlinux and modules, for modpost.
	cp "$HEADERS/Module.symvers" "$tmp/Module.symvers"
	# What olddefconfig changed, for whoever wonders why.
	"$tmp/scripts/diffconfig" "$tmp/.config.distro" "$tmp/.config" \
		> "$VDIR/config.diff" 2> /dev/null || true
	toolchain > "$tmp/.prepared"
	mv "$tmp" "$KDIR"
}

# The distro's release, the host's compiler, nothing from the caller's
# environment that the prepared tree would not see again.
kmake() {
	local dir=$1

	shift
	nice -n 10 env -u LLVM -u CC -u KCFLAGS -u KCPPFLAGS -u KAFLAGS \
		-u KBUILD_OUTPUT -u ARCH -u CROSS_COMPILE -u O \
		make -C "$dir" -j"$JOBS" KERNELRELEASE="$SID_KREL" "$@"
}

# ----------------------------------------------------------------- main
step_t0=0
step() {
	step_t0=$SECONDS
}

step_done() {
	echo "$1 $((SECONDS - step_t0))" >> "$VDIR/timings"
}

warm() {
	[ -e "$DEBS/SHA256SUMS" ] && [ -e "$ROOT/.unpacked" ] &&
		{ [ "$PREPARE" = 0 ] ||
			[ "$(cat "$KDIR/.prepared" 2> /dev/null)" = "$(toolchain)" ]; }
}

lists_fresh() {
	[ -n "$(find "$APTDIR/updated" -mmin -"$LISTS_MAX_AGE_MIN" 2> /dev/null)" ]
}

if warm && { [ "$REFRESH" = 0 ] && lists_fresh; }; then
	[ ! -e "$VDIR/newer" ] || cat "$VDIR/newer" >&2
	exit 0
fi

if ! mkdir -p "$VDIR" 2> /dev/null || [ ! -w "$VDIR" ]; then
	die "cannot write $VDIR (run as root, or set SID_CACHE)"
fi
exec 9> "$CACHE/.lock"
if ! flock -n 9; then
	say "another $ME is running, waiting for it"
	flock 9
fi

apt_setup
if warm; then
	# Only the look at the archive: a failure there is no reason to
	# stop a warm cache from being used.
	if apt_update; then
		check_newer
	else
		say "cannot read sid's index; using the cached $SID_VERSION"
	fi
	exit 0
fi

if [ ! -e "$DEBS/SHA256SUMS" ]; then
	step
	apt_update || die "cannot read sid's index"
	fetch
	check_newer
	step_done fetch
elif ! lists_fresh || [ "$REFRESH" = 1 ]; then
	if apt_update; then
		check_newer
	else
		say "cannot read sid's index; using the cached $SID_VERSION"
	fi
fi
if [ ! -e "$ROOT/.unpacked" ]; then
	step
	unpack
	step_done unpack
fi
if [ "$PREPARE" = 1 ] &&
	[ "$(cat "$KDIR/.prepared" 2> /dev/null)" != "$(toolchain)" ]; then
	step
	prepare
	step_done prepare
fi
write_env
say "$SID_VERSION ($SID_KREL) in $VDIR"
