/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Symbol-version (modversions) compatibility with the kernel's own ib_cm.
 *
 * The CRC of each exported symbol is computed from the full layout of every
 * structure reachable from its prototype, as far as the exporting
 * translation unit can see it.  A structure that is only forward-declared
 * hashes differently from a fully defined one, so this file makes the same
 * set of structures complete in cm.c as in the kernel's cm.c; then
 * rdma_cm, ib_ipoib, ib_srp and friends load against this module unchanged.
 *
 * Include only from cm.c (the file holding the EXPORT_SYMBOLs).
 */
#ifndef IB_CM_ABI_H
#define IB_CM_ABI_H

#include <linux/static_call.h>
#include <linux/tracepoint.h>
#include <linux/xarray.h>
#include <net/netns/generic.h>

/*
 * Reachable from struct ib_device, but defined in an ib_core header that
 * is not installed.  Layout of the 6.1 kernel: the resource-tracking
 * xarray and its cyclic allocation cursor.
 */
struct rdma_restrack_root {
	struct xarray xa;
	u32 next_id;
};

#endif /* IB_CM_ABI_H */
