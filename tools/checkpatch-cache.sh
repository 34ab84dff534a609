# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by the static gates (tools/testing/gates/run-gates) and the
# series check (tools/series/check-series): checkpatch.pl with its clean
# verdicts kept outside the clone, so that a file or a patch that was
# clean is not checked again.
#
# A verdict depends on the file, its path (the rules differ by directory
# and kind), the options, checkpatch.pl with the data files it reads
# beside it, the .checkpatch.conf it would add options from (in the
# current directory, in $HOME or in .scripts), perl, and what else the
# caller names (the kernel tree checkpatch reads, when it reads one): a
# clean verdict is kept under the SHA-256 of all of them, as an empty
# file in the cache (CP_CACHE, else the machine's: tools/cache-dir.sh).
# Findings are never kept.  A patch in mbox form (git format-patch) is
# keyed without its "From <commit id>" line and its Date: header, which
# checkpatch does not read: the series' patches are made anew for every
# commit of the tree, and keep their verdicts while their text stays
# the same.
#
#   cp_init SRC [WHAT]   the checkpatch.pl of the kernel source SRC, run
#                        from the current directory; WHAT is folded into
#                        every key; status 2 when MLX4_PVCM_CACHE cannot
#                        be written
#   cp_run FILE ARG OPTION...
#                        checkpatch.pl OPTIONs on ARG (FILE, or a path
#                        that names it) unless FILE's clean verdict under
#                        them is kept; status 0 when clean, else 1 with
#                        the findings on stdout.  Clean means status 0
#                        and no output at all: pass --quiet and
#                        --no-summary.
#   cp_hits              how many cp_run calls found a kept verdict

# shellcheck source=tools/cache-dir.sh
. "$(dirname "${BASH_SOURCE[0]}")/cache-dir.sh"

cp_src="" cp_cache="" cp_tool="" cp_hits=0

cp_init() {
	local root

	cp_src=$1
	cp_cache=${CP_CACHE:-}
	if [ -z "$cp_cache" ]; then
		root=$(pvcm_cache_root)
		case $? in
		0) cp_cache=$root/checkpatch ;;
		2) return 2 ;;
		*) cp_cache=${XDG_CACHE_HOME:-$HOME/.cache}/mlx4-pvcm/checkpatch ;;
		esac
	fi
	# absolute: the callers check some files from other directories
	case $cp_cache in /*) ;; *) cp_cache=$PWD/$cp_cache ;; esac
	cp_tool=$({
		cat "$cp_src/scripts/checkpatch.pl" "$cp_src/scripts/spelling.txt" \
			"$cp_src/scripts/const_structs.checkpatch" 2>/dev/null
		for c in .checkpatch.conf "${HOME:-}/.checkpatch.conf" \
			.scripts/.checkpatch.conf; do
			[ -r "$c" ] && printf '%s\n' "$c" && cat "$c"
		done
		perl -e 'print "$^V\n"'
		[ -z "${2:-}" ] || printf '%s\n' "$2"
	} | sha256sum)
	cp_tool=${cp_tool%% *}
	cp_hits=0
}

# cp_key FILE OPTION...: the key of FILE's verdict under those options
# (FILE's path is part of it).
cp_key() {
	local h

	h=$({
		printf '%s\n' "$cp_tool" "$*"
		if head -n 1 "$1" | grep -qE '^From [0-9a-f]{40} Mon Sep 17 00:00:00 2001$'; then
			awk 'NR == 1 { next }
				head && /^Date: / { next }
				/^$/ { head = 0 }
				{ print }' head=1 "$1"
		else
			cat "$1"
		fi
	} | sha256sum)
	echo "${h%% *}"
}

cp_run() {
	local f=$1 arg=$2 key out

	shift 2
	key=$(cp_key "$f" "$@")
	if [ -e "$cp_cache/$key" ]; then
		cp_hits=$((cp_hits + 1))
		return 0
	fi
	if out=$(perl "$cp_src/scripts/checkpatch.pl" "$@" "$arg" 2>&1) &&
		[ -z "$out" ]; then
		# kept only for the content checked, not for a file edited since
		[ "$(cp_key "$f" "$@")" = "$key" ] &&
			mkdir -p "$cp_cache" 2>/dev/null && touch "$cp_cache/$key"
		return 0
	fi
	printf '%s\n' "${out:-checkpatch.pl failed on $arg}"
	return 1
}
