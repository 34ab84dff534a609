#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Assemble the build tree for the project's modules.
#
#   assemble.sh SRC TREE [distro:]DIR...
#
# SRC   extracted Debian linux-source-<series> tree (read only), 6.1 or 6.12
# TREE  build tree root (build/<krel>/tree)
# DIR   module directory relative to the kernel root; "distro:DIR" takes
#       the distro's sources of DIR as the base (mlx4: we own cm.c, the
#       rest of the driver comes from the installed source).
#
# The project's own *.c, *.h and Kbuild are laid over the base, then
# DIR/patches/*.patch are applied in name order with patch -p1 from the
# tree root.  Where the code differs between the series, a patch has
# versions in DIR/patches/<series>/NAME.patch: a version holds from its
# series up to the next one's, so the tree's series takes the version of
# the newest <series> directory not newer than itself, else NAME.patch
# (6.1).  Files are only rewritten when their content changed, so
# kbuild's incremental builds keep working; the source tree is never
# written to.
set -euo pipefail

src=$1 tree=$2
shift 2
# the kernel series of SRC (build/src/linux-source-6.1: 6.1)
series=$(basename "$src")
series=${series#linux-source-}
top=$(cd "$(dirname "$0")/../.." && pwd)

# patch_for PATCHES NAME: the version of NAME for $series
patch_for() {
	local v best

	# the series directories holding NAME, and $series itself, in
	# version order: the one just before $series is the version
	best=$({
		for v in "$1"/*/"$2"; do
			[ -f "$v" ] && basename "$(dirname "$v")"
		done
		echo "$series ="
	} | sort -V | sed -n "/^$series =\$/{x;p;q};h")
	if [ -n "$best" ] && [ "$best" != "$series =" ]; then
		echo "$1/$best/$2"
	else
		echo "$1/$2"
	fi
}

for arg in "$@"; do
	dir=${arg#distro:}
	stage=$(mktemp -d)
	trap 'rm -rf "$stage"' EXIT
	mkdir -p "$stage/$dir"

	if [ "$dir" != "$arg" ]; then
		[ -d "$src/$dir" ] || { echo "assemble: $src/$dir missing" >&2; exit 1; }
		find "$src/$dir" -maxdepth 1 -type f \
			\( -name '*.[ch]' -o -name Makefile -o -name Kbuild \) \
			-exec cp -p {} "$stage/$dir/" \;
	fi
	for f in "$top/$dir"/*.[ch] "$top/$dir/Kbuild"; do
		[ -f "$f" ] && cp -p "$f" "$stage/$dir/"
	done
	# Our Kbuild replaces the distro's Makefile outright.
	[ -f "$top/$dir/Kbuild" ] && rm -f "$stage/$dir/Makefile"
	for p in "$top/$dir"/patches/*.patch; do
		[ -f "$p" ] || continue
		p=$(patch_for "$top/$dir/patches" "$(basename "$p")")
		if ! patch -p1 -s -N --no-backup-if-mismatch -d "$stage" <"$p"; then
			echo "assemble: $p does not apply" >&2
			exit 1
		fi
	done

	mkdir -p "$tree/$dir"
	for f in "$stage/$dir"/*; do
		dst="$tree/$dir/$(basename "$f")"
		# A changed file gets a fresh mtime, so make always sees it.
		cmp -s "$f" "$dst" || cp "$f" "$dst"
	done
	# Drop sources that no longer exist in the assembly.
	for f in "$tree/$dir"/*.[ch] "$tree/$dir/Kbuild" "$tree/$dir/Makefile"; do
		[ -f "$f" ] || continue
		[ -e "$stage/$dir/$(basename "$f")" ] || rm -f "$f"
	done
	rm -rf "$stage"
	trap - EXIT
done
