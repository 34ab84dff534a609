#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# build.sh: build (or reuse) the debug kernel of the project's VM rig.
#
# The kernel comes from the installed Debian linux-source-6.1 tarball:
# allnoconfig with tools/debug-kernel/guest.config (what the rig's guests
# use) and debug.config (KASAN, lockdep, ...) as its KCONFIG_ALLCONFIG,
# so that nothing else is built, then olddefconfig.  The result is cached
# outside the git tree, under a key made of the source package version and
# the SHA-256 of the base, the fragments and the compiler's version:
#
#   $CACHE/<key>/bzImage        the kernel image
#   $CACHE/<key>/linux/         the build directory, kept whole, so that
#                               "make -C $CACHE/<key>/linux M=..." works
#   $CACHE/<key>/modroot/       modules_install output (lib/modules/<krel>)
#   $CACHE/<key>/krel           the kernel release
#   $CACHE/<key>/timings        seconds spent per step
#   $CACHE/<key>/env            KEY, KDIR, KREL, KERNEL, MODROOT (shell)
#   $CACHE/<key>/done           written last: the cache entry is complete
#
# A new key starts from a copy of the newest complete entry of the same
# source package (its objects included), so a changed fragment rebuilds only
# what the changed options reach instead of the whole kernel.
#
# CACHE defaults to $MLX4_PVCM_CACHE/debug-kernel (the machine's caches:
# /var/cache/mlx4-pvcm unless the environment names another) where that
# can be written (so that every clone on the machine, CI's included,
# shares one build), else ${XDG_CACHE_HOME:-$HOME/.cache}/pvcm-debug-kernel.
# The machine is shared, so the build runs under "nice -n 19".
#
# A variant adds one more fragment on top of debug.config (--coverage:
# tools/debug-kernel/coverage.config, gcov for modules built with
# GCOV_PROFILE=y).  The key and the kernel release hash every fragment, so
# the two kernels never share a cache entry or /lib/modules/<krel>.
#
#   build.sh [--cache DIR] [--jobs N] [--coverage] [--config-only]
#            [--print-env] [--quiet]
#
# --coverage     build the coverage variant (debug.config + coverage.config)
# --config-only  stop after writing and checking .config
# --print-env    print the env file of the cache entry on stdout at the end
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
BASE=allnoconfig
FRAGMENTS=("$HERE/guest.config" "$HERE/debug.config")
TARBALL=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
CACHE=${PVCM_DEBUG_KERNEL_CACHE:-}
JOBS=2
CONFIG_ONLY=0
PRINT_ENV=0
QUIET=0

usage() {
	sed -n '/^#   build.sh \[/,/^# --print-env/s/^# \{0,1\}//p' "$0"
}

while [ $# -gt 0 ]; do
	case $1 in
	--cache) CACHE=$2; shift 2 ;;
	--jobs) JOBS=$2; shift 2 ;;
	--coverage) FRAGMENTS+=("$HERE/coverage.config"); shift ;;
	--config-only) CONFIG_ONLY=1; shift ;;
	--print-env) PRINT_ENV=1; shift ;;
	--quiet) QUIET=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "build.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
	esac
done
# shellcheck source=tools/cache-dir.sh
. "$HERE/../cache-dir.sh"
if [ -n "$CACHE" ]; then
	:
elif root=$(pvcm_cache_root); then
	CACHE=$root/debug-kernel
elif [ $? = 2 ]; then
	exit 2
else
	CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/pvcm-debug-kernel
fi

say() {
	[ "$QUIET" = 1 ] || echo "debug-kernel: $*" >&2
}

die() {
	echo "debug-kernel: $*" >&2
	exit 1
}

[ -r "$TARBALL" ] || die "no $TARBALL (apt-get install linux-source-6.1)"
for f in "${FRAGMENTS[@]}"; do
	[ -r "$f" ] || die "no $f"
done

# ------------------------------------------------------------------ key
if [ -n "${LINUX_SOURCE_TARBALL:-}" ]; then
	srcver=$(sha256sum "$TARBALL" | cut -c1-12)
else
	srcver=$(dpkg-query -W -f '${Version}' linux-source-6.1 2>/dev/null) ||
		srcver=$(sha256sum "$TARBALL" | cut -c1-12)
fi
# The fragments as read now: what is hashed is what gets built, even if a
# fragment changes while this waits for another build.
ALLCONFIG=$(mktemp)
trap 'rm -f "$ALLCONFIG"' EXIT
cat "${FRAGMENTS[@]}" > "$ALLCONFIG"
# What the .config and the objects are made of, besides the source: the
# base target, the fragments in merge order, the compiler and binutils.
fragsha=$({
	echo "$BASE"
	cat "$ALLCONFIG"
	gcc -dumpfullversion
	ld --version 2> /dev/null | sed -n 1p
} | sha256sum | cut -c1-12)
KEY=linux-source-6.1_${srcver}_${fragsha}
# The release names the whole key: two source revisions of one sublevel
# never share a /lib/modules/<krel> either.
relsha=$(echo "$KEY" | sha256sum | cut -c1-8)
DIR=$CACHE/$KEY
KDIR=$DIR/linux
MODROOT=$DIR/modroot

print_env() {
	[ "$PRINT_ENV" = 1 ] && cat "$DIR/env"
	return 0
}

if [ -e "$DIR/done" ]; then
	say "reusing $DIR ($(cat "$DIR/krel"))"
	print_env
	exit 0
fi

mkdir -p "$DIR"
# One builder per key; a second caller waits and then reuses.
exec 8> "$DIR.lock"
if ! flock -n 8; then
	say "another build of $KEY is running, waiting for it"
	flock 8
fi
if [ -e "$DIR/done" ]; then
	say "reusing $DIR ($(cat "$DIR/krel"))"
	print_env
	exit 0
fi

: > "$DIR/timings"
step_t0=0
step() {
	step_t0=$SECONDS
	say "$*"
}

step_done() {
	echo "$1 $((SECONDS - step_t0))" >> "$DIR/timings"
}

# Only the tree's own defaults: no toolchain or flags from the caller's
# environment, which the key does not see.
kmake() {
	nice -n 19 env -u LLVM -u CC -u KCFLAGS -u KCPPFLAGS -u KAFLAGS \
		-u KBUILD_OUTPUT -u ARCH -u CROSS_COMPILE \
		make -C "$KDIR" -j"$JOBS" "$@"
}

# -------------------------------------------------------------- extract
# A fragment that changed needs a new kernel, but most of its objects are
# those of the newest complete entry of the same source: start from a copy
# of that tree and let make rebuild what the new configuration touches.
seed=
if [ ! -e "$KDIR/.extracted" ]; then
	newest=0
	for d in "$CACHE/linux-source-6.1_${srcver}_"*/; do
		[ -e "$d/done" ] || continue
		t=$(stat -c %Y "$d/done")
		if [ "$t" -gt "$newest" ]; then
			newest=$t
			seed=${d%/}
		fi
	done
fi
if [ -n "$seed" ] && [ -e "$seed/linux/.extracted" ]; then
	step "seeding $KDIR from $seed/linux"
	rm -rf "$KDIR" "$DIR/seed.tmp"
	cp -a "$seed/linux" "$DIR/seed.tmp"
	mv "$DIR/seed.tmp" "$KDIR"
	step_done seed
fi
if [ ! -e "$KDIR/.extracted" ]; then
	step "extracting $TARBALL into $KDIR"
	rm -rf "$KDIR" "$DIR/extract.tmp"
	mkdir -p "$DIR/extract.tmp"
	tar -xf "$TARBALL" -C "$DIR/extract.tmp"
	mv "$DIR/extract.tmp"/linux-source-6.1 "$KDIR"
	rmdir "$DIR/extract.tmp"
	touch "$KDIR/.extracted"
	step_done extract
fi

# --------------------------------------------------------------- config
# The kernel release names the key, so that two debug kernels never share
# a /lib/modules/<krel> or a build/<krel> of the project.
step "configuring ($BASE with ${FRAGMENTS[*]##*/})"
cp "$ALLCONFIG" "$DIR/allconfig"
kmake -s KCONFIG_ALLCONFIG="$DIR/allconfig" "$BASE" > "$DIR/config.log" 2>&1 ||
	die "$BASE failed, see $DIR/config.log"
"$KDIR/scripts/config" --file "$KDIR/.config" \
	--set-str LOCALVERSION "-pvcmdbg-$relsha"
kmake -s olddefconfig

# Every line of the fragment must have survived olddefconfig: a symbol
# dropped for an unmet dependency would silently weaken the tier.
bad=0
while IFS= read -r line; do
	case $line in
	CONFIG_*=*)
		sym=${line%%=*}
		grep -qxF -- "$line" "$KDIR/.config" || {
			echo "debug-kernel: wanted $line, got:" \
				"$(grep -E "^(# )?${sym}[= ]" "$KDIR/.config" || echo unset)" >&2
			bad=1
		}
		;;
	"# CONFIG_"*" is not set")
		sym=${line#\# }
		sym=${sym%% *}
		if grep -qE "^$sym=" "$KDIR/.config"; then
			echo "debug-kernel: wanted $sym off, got:" \
				"$(grep -E "^$sym=" "$KDIR/.config")" >&2
			bad=1
		fi
		;;
	esac
done < "$DIR/allconfig"
[ "$bad" = 0 ] || die "the fragment did not apply cleanly ($KDIR/.config)"
# "make kernelrelease" only sees LOCALVERSION once the build has synced
# the config; the release is checked against the built one below.
KREL=$(kmake -s kernelversion)-pvcmdbg-$relsha
echo "$KREL" > "$DIR/krel"
step_done config
say "kernel release $KREL, config checked"
if [ "$CONFIG_ONLY" = 1 ]; then
	exit 0
fi

# ---------------------------------------------------------------- build
step "building bzImage and modules (nice -n 19 make -j$JOBS), log $DIR/build.log"
if ! kmake bzImage modules > "$DIR/build.log" 2>&1; then
	tail -n 30 "$DIR/build.log" >&2
	die "kernel build failed, see $DIR/build.log"
fi
step_done build
built=$(cat "$KDIR/include/config/kernel.release")
[ "$built" = "$KREL" ] || die "built release $built, expected $KREL"

step "installing modules into $MODROOT"
rm -rf "$MODROOT"
kmake -s INSTALL_MOD_PATH="$MODROOT" modules_install > "$DIR/install.log" 2>&1 ||
	die "modules_install failed, see $DIR/install.log"
# The rig's guest sees the host's / and modprobe follows these links; they
# would point at the build tree, which is not what a guest should load from.
rm -f "$MODROOT/lib/modules/$KREL/build" "$MODROOT/lib/modules/$KREL/source"
cp "$KDIR/arch/x86/boot/bzImage" "$DIR/bzImage"
step_done install

{
	printf 'KEY=%q\n' "$KEY"
	printf 'KDIR=%q\n' "$KDIR"
	printf 'KREL=%q\n' "$KREL"
	printf 'KERNEL=%q\n' "$DIR/bzImage"
	printf 'MODROOT=%q\n' "$MODROOT"
} > "$DIR/env"
date -u +%FT%TZ > "$DIR/done"
say "done: $DIR ($KREL); timings: $(tr '\n' ' ' < "$DIR/timings")"
print_env
