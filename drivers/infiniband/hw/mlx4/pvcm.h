/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * PV-CM id cache of the mlx4_ib SR-IOV master.
 *
 * The master function proxies the CM MADs of every VF.  A VF picks its own
 * local communication ids, so the master maps (slave, sl_cm_id) to a
 * device-unique pv_cm_id on the way out and back on the way in.  See
 * Documentation/infiniband/mlx4-pvcm.rst for the design.
 */
#ifndef MLX4_IB_PVCM_H
#define MLX4_IB_PVCM_H

#include <linux/types.h>
#include <linux/atomic.h>
#include <linux/bitmap.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <linux/rhashtable-types.h>
#include <linux/mlx4/device.h>
#include <rdma/ib_verbs.h>

struct dentry;
struct mlx4_ib_dev;

/* per VF, one FIFO per kind of route: REQ, SIDR_REQ, a REQ's answer */
#define PVCM_ROUTE_LISTS	3

/**
 * struct mlx4_ib_pvcm_slave - per-VF part of the PV-CM id cache
 * @pending: entries whose connection is not established yet, oldest
 *	deadline first, but those on @loop; they are released when the
 *	deadline passes
 * @established: entries of established connections (no deadline)
 * @timewait: released entries, oldest deadline first; freed at the deadline
 * @loop: pending entries whose REQ went to another VF of this master
 *	and may still be answered by it (PVCM_F_ROUTED), oldest deadline
 *	first; the oldest is forgotten when @nr_loop is at pvcm_max_routes
 * @routes: the routes this VF pays for, oldest deadline first, one FIFO
 *	per list (see pvcm_route_list()); the oldest of a FIFO goes when it
 *	is at pvcm_max_routes
 * @nr_live: entries on @pending, @loop and @established
 * @nr_timewait: entries on @timewait
 * @nr_loop: entries on @loop
 * @nr_routes: routes on each of @routes
 * @nr_reset: entries on @timewait from before the last clean (of an epoch
 *	older than @reset_epoch); they do not count against the cap
 * @reset_epoch: the epoch the last clean of @timewait counted against
 * @allocated: entries ever created for this slave
 * @freed: entries of this slave whose memory was given back
 * @dropped: MADs of (or for) this slave that were dropped
 * @cap_hits: MADs dropped because the slave hit its entry cap
 * @epoch: bumped by a per-slave clean; entries of an older epoch are stale
 *
 * The lists, @reset_epoch and the counters other than @dropped and
 * @cap_hits are protected by &struct mlx4_ib_pvcm.lock; @dropped,
 * @cap_hits and @epoch are atomics.
 */
struct mlx4_ib_pvcm_slave {
	struct list_head pending;
	struct list_head established;
	struct list_head timewait;
	struct list_head loop;
	struct list_head routes[PVCM_ROUTE_LISTS];
	u32 nr_live;
	u32 nr_timewait;
	u32 nr_loop;
	u32 nr_routes[PVCM_ROUTE_LISTS];
	u32 nr_reset;
	u32 reset_epoch;
	u64 allocated;
	u64 freed;
	atomic_long_t dropped;
	atomic_long_t cap_hits;
	atomic_t epoch;
};

/**
 * struct mlx4_ib_pvcm - PV-CM id cache of one mlx4_ib device
 * @lock: protects the per-slave lists and counters, the state and
 *	deadlines of published entries, membership of entries in @sl_ids and
 *	of published ones in @pv_ids, membership of routes in @routes and the
 *	reaper bookkeeping below
 * @pv_ids: index (pv_cm_id XOR @id_xor) -> entry; read under RCU.  The
 *	creator stores a new entry with its index (xa_alloc_cyclic(),
 *	without @lock) in state PVCM_DEAD, which lookups skip, and makes it
 *	PVCM_PENDING (a release store, under @lock) once it is on its
 *	slave's list; if it gives up instead, it erases the entry without
 *	@lock.  A published entry is erased under @lock only
 * @pv_next: cyclic allocation cursor of @pv_ids (under the xa_lock)
 * @id_xor: random, bit 31 set; set at init, then only read
 * @sl_ids: (slave, sl_cm_id) -> current entry; read under RCU
 * @routes: what the VFs were asked: per incoming REQ, (port, remote comm
 *	id, remote CA GUID) -> slave, so that a REJ(timeout) without a
 *	remote id can be routed, and (port, remote comm id, slave), so that
 *	only that slave may answer it; per incoming SIDR_REQ, (request id,
 *	slave).  Read under RCU; each route is on its slave's @routes list.
 *	A REQ from a VF of this master has none: its entry carries both
 *	(PVCM_F_LOOP)
 * @bad_cleans: clean requests for a slave number out of range (atomic)
 * @slaves: MLX4_MFUNC_MAX per-slave structures
 * @reaper: the one delayed work that expires entries and routes
 * @reaper_at: jiffies the reaper is armed for, valid if @reaper_armed
 * @reaper_armed: @reaper is queued
 * @dying: set by the full clean; nothing is re-armed any more
 * @ready: set once init succeeded, the handlers drop MADs otherwise
 * @clean_work: performs the per-slave cleans requested in @clean_mask
 * @clean_mask: slaves whose clean was requested (atomic bitops)
 * @dropped: dropped MADs that cannot be charged to a slave
 * @debugfs: this device's debugfs directory
 */
struct mlx4_ib_pvcm {
	spinlock_t lock; /* lists, counters, index membership: see @lock */
	struct xarray pv_ids;
	u32 pv_next;
	u32 id_xor;
	struct rhashtable sl_ids;
	struct rhashtable routes;
	atomic_long_t bad_cleans;
	struct mlx4_ib_pvcm_slave *slaves;
	struct delayed_work reaper;
	u32 reaper_at;
	bool reaper_armed;
	bool dying;
	bool ready;
	struct work_struct clean_work;
	DECLARE_BITMAP(clean_mask, MLX4_MFUNC_MAX);
	atomic_long_t dropped;
	struct dentry *debugfs;
};

int mlx4_ib_pvcm_lookup(struct mlx4_ib_dev *dev, u32 pv_cm_id, int *slave,
			u32 *sl_cm_id);

/**
 * struct mlx4_ib_pvcm_stats - counters of the PV-CM id cache
 * @live: entries of connections not yet released
 * @timewait: released entries whose pv_cm_id is still reserved
 * @allocated: entries created
 * @freed: entries freed
 * @dropped: MADs dropped (malformed, unknown id, over cap, no memory)
 * @cap_hits: MADs dropped because a slave hit its cap
 * @routes: remembered requests (REQ and SIDR_REQ routes) charged to the
 *	VF: those delivered to it, and its REQs to another VF that VF may
 *	still answer
 */
struct mlx4_ib_pvcm_stats {
	u64 live;
	u64 timewait;
	u64 allocated;
	u64 freed;
	u64 dropped;
	u64 cap_hits;
	u64 routes;
};

int mlx4_ib_pvcm_get_stats(struct mlx4_ib_dev *dev, int slave,
			   struct mlx4_ib_pvcm_stats *st);

/* The device totals among the device's hardware counters, by index. */
enum {
	MLX4_IB_PVCM_HW_LIVE,
	MLX4_IB_PVCM_HW_TIMEWAIT,
	MLX4_IB_PVCM_HW_ALLOCATED,
	MLX4_IB_PVCM_HW_FREED,
	MLX4_IB_PVCM_HW_DROPPED,
	MLX4_IB_PVCM_HW_CAP_HITS,
	MLX4_IB_PVCM_HW_ROUTES,
	MLX4_IB_PVCM_HW_STATS
};

extern const struct rdma_stat_desc
	mlx4_ib_pvcm_hw_stat_descs[MLX4_IB_PVCM_HW_STATS];
void mlx4_ib_pvcm_hw_stats(struct mlx4_ib_dev *dev, u64 *value);

#endif /* MLX4_IB_PVCM_H */
