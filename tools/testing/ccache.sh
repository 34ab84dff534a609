# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by make check (tools/testing/check) and check-debug: compile
# through ccache when make deps installed it.  Each run compiles the
# modules of both tracks, every step of both patch series, each mutant
# of cm.c and the modules for the debug kernel, almost always from the
# same inputs as the run before it.  The cache lives outside the clone,
# beside the coccicheck results, and ccache keys an object by the
# compiler, its arguments (the clone's path among them: a run reuses
# what an earlier run at the same path made) and every file it read, so
# a change anywhere is a miss, and a hit replays the compiler's
# warnings.  MLX4_PVCM_CCACHE=0 compiles without it, and without a
# ccache the caller's PATH may name.  The counts are the cache's own,
# which every user of the cache moves: another run beside this one
# shows in them.
#
#   ccache_on          put ccache's compiler links first in PATH (or
#                      take them out of it); status 2 when
#                      MLX4_PVCM_CACHE names a directory it cannot write
#   ccache_off         take them out of PATH
#   ccache_counts      print "HITS MISSES" of the cache so far
#   ccache_summary H M print a comment with the hits and misses since a
#                      ccache_counts that printed "H M"

MLX4_PVCM_CCACHE_ON=0
# shellcheck source=tools/cache-dir.sh
. "$(dirname "${BASH_SOURCE[0]}")/../cache-dir.sh"

ccache_off() {
	local p=:$PATH:

	while [[ $p == *:/usr/lib/ccache:* ]]; do
		p=${p/:\/usr\/lib\/ccache:/:}
	done
	p=${p#:}
	PATH=${p%:}
	MLX4_PVCM_CCACHE_ON=0
}

ccache_on() {
	local dir=${CCACHE_DIR:-} root

	ccache_off
	[ "${MLX4_PVCM_CCACHE:-1}" = 1 ] && [ -x /usr/lib/ccache/gcc ] ||
		return 0
	if [ -z "$dir" ]; then
		root=$(pvcm_cache_root) || return $(($? == 2 ? 2 : 0))
		dir=$root/ccache
	fi
	mkdir -p "$dir" 2> /dev/null && [ -w "$dir" ] || return 0
	export CCACHE_DIR=$dir PATH=/usr/lib/ccache:$PATH
	MLX4_PVCM_CCACHE_ON=1
}

ccache_counts() {
	if [ "$MLX4_PVCM_CCACHE_ON" != 1 ]; then
		echo "- -"
		return 0
	fi
	ccache --print-stats 2> /dev/null | awk '
		/^(direct|preprocessed)_cache_hit\t/ { h += $2 }
		/^cache_miss\t/ { m += $2 }
		END { print h + 0, m + 0 }'
}

ccache_summary() {
	local h m

	[ "$1" != - ] || { echo "# ccache: off"; return 0; }
	read -r h m < <(ccache_counts)
	echo "# ccache: $((h - $1)) hits, $((m - $2)) misses (${CCACHE_DIR:-})"
}
