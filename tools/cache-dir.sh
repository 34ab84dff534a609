# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by the tools that keep caches outside the clone (the debug
# kernel, ccache's objects, the gates' clean verdicts), so that they all
# agree on where the machine's caches are.
#
# pvcm_cache_root: print that directory.  With MLX4_PVCM_CACHE set, it
# is that directory, made absolute (the tools run in directories of
# their own); when it cannot be written, say so and return 2: whoever
# set it measures a machine with those caches, and a tool that quietly
# used others would measure something else.  Unset, it is
# /var/cache/mlx4-pvcm when that can be written, else return 1 and print
# nothing: the caller picks a cache of its own user.
pvcm_cache_root() {
	local d

	if [ -n "${MLX4_PVCM_CACHE:-}" ]; then
		if ! d=$(realpath -m -- "$MLX4_PVCM_CACHE") ||
			! mkdir -p "$d" 2> /dev/null || [ ! -w "$d" ]; then
			echo "MLX4_PVCM_CACHE=$MLX4_PVCM_CACHE cannot be written" >&2
			return 2
		fi
	else
		d=/var/cache/mlx4-pvcm
		mkdir -p "$d" 2> /dev/null && [ -w "$d" ] || return 1
	fi
	echo "$d"
}
