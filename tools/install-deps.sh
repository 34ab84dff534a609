#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Install every Debian package that building, running and testing the
# project needs, for both kernel tracks: Debian 12's 6.1 and the 6.12 it
# also ships (Debian 13's kernel).  Idempotent: when everything is
# present it only runs dpkg-query and exits.
#
# Needs root (apt-get).  Without root it prints the command to run and
# fails if anything is missing.
set -eu

PKGS="build-essential bc bison flex libelf-dev libssl-dev dwarves kmod cpio
busybox-static linux-headers-amd64 linux-image-amd64 linux-source-6.1
linux-headers-6.12-amd64 linux-image-6.12-amd64 linux-source-6.12
qemu-system-x86 qemu-utils rdma-core rdmacm-utils perftest ibverbs-utils
ibverbs-providers iproute2 sparse coccinelle python3 perl git xz-utils
dkms debhelper dh-dkms fakeroot lintian shellcheck python3-docutils
librdmacm-dev libibverbs-dev libibumad-dev ccache trace-cmd"

# Each linux-source must be the version of the kernel its headers
# metapackage installs: mlx4_ib is assembled from it, and the DKMS build
# refuses a source that is not the running kernel's.  The archive may
# already carry a newer source than kernel (a security upload whose
# image is not out yet); the kernel's own version is then installed.
# Prints "linux-source-S=VERSION" for each one that does not match.
source_pins() {
	for pair in linux-headers-amd64:linux-source-6.1 \
		linux-headers-6.12-amd64:linux-source-6.12; do
		hv=$(dpkg-query -W -f='${Version}' "${pair%%:*}" 2>/dev/null || true)
		sv=$(dpkg-query -W -f='${Version}' "${pair#*:}" 2>/dev/null || true)
		[ -n "$hv" ] && [ "$hv" != "$sv" ] && echo "${pair#*:}=$hv"
	done
	return 0
}

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	case "$st" in
	ii*) ;;
	*) missing="$missing $p" ;;
	esac
done

[ -z "$missing" ] && [ -z "$(source_pins)" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages:$missing" >&2
	echo "install-deps: run as root: apt-get install$missing" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ -n "$missing" ]; then
	echo "install-deps: installing:$missing"
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
pins=$(source_pins | tr '\n' ' ')
if [ -n "$pins" ]; then
	echo "install-deps: the kernels' own sources: $pins"
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends --allow-downgrades \
		$pins >/dev/null ||
		echo "install-deps: the archive has no $pins; mlx4_ib would be" \
			"built from another version of the driver" >&2
fi
