// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * PV-CM id cache: the SR-IOV master rewrites the communication ids of the
 * CM MADs it proxies for its VFs (slaves).
 *
 * The file has three layers:
 *   (a) MAD field helpers - the only code that knows where a CM MAD keeps
 *       its comm ids, the REJ reason, the REQ GUIDs;
 *   (b) the id map - create, look up, the one release path, reaping, cleaning;
 *   (c) the policy table - what each CM attribute does in each direction.
 *
 * Lifetime rules: an entry holds one reference for the map from creation
 * until the reaper (or the final device clean) unlinks it.  Memory goes back
 * to the cache one RCU grace period after the last reference is gone, so a
 * MAD handler that looks an entry up, copies its ids and applies its event
 * all inside one rcu_read_lock() section needs no reference, and a creator
 * does its event under the lock hold that publishes the entry.  A pin
 * (refcount_inc_not_zero()) is for a user outside RCU: the test module.
 * The only way out of the map is pvcm_release(): it puts the entry into
 * TimeWait, and the reaper frees it when TimeWait has passed.
 * Design notes: Documentation/infiniband/mlx4-pvcm.rst.
 */

#include <linux/debugfs.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/rhashtable.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#ifdef HAVE_LINUX_UNALIGNED_H
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

#include <rdma/ib_mad.h>
#include <rdma/ib_cm.h>
#include <rdma/ibta_vol1_c12.h>

#include "mlx4_ib.h"

#include "pvcm_priv.h"

#define CM_CLEANUP_CACHE_TIMEOUT	(30 * HZ)

VISIBLE_IF_PVCM_TEST unsigned int pvcm_max_per_vf = 32768;
module_param(pvcm_max_per_vf, uint, 0644);
MODULE_PARM_DESC(pvcm_max_per_vf,
		 "PV-CM: max live + TimeWait id entries per VF, 0 = no limit (default 32768)");

/* a day: far below the 2^31 jiffies a deadline compare can span */
#define PVCM_PENDING_TIMEOUT_MAX	(24 * 60 * 60)

VISIBLE_IF_PVCM_TEST unsigned int pvcm_pending_timeout = 120;

/* 0 would expire every connection at once; more than a day overflows */
static int pvcm_set_pending_timeout(const char *val,
				    const struct kernel_param *kp)
{
	unsigned int secs;

	if (kstrtouint(val, 0, &secs) || !secs ||
	    secs > PVCM_PENDING_TIMEOUT_MAX) {
		pr_warn_ratelimited("%s: '%s' is not 1..%u seconds\n",
				    kp->name, val, PVCM_PENDING_TIMEOUT_MAX);
		return -EINVAL;
	}
	*(unsigned int *)kp->arg = secs;
	return 0;
}

VISIBLE_IF_PVCM_TEST const struct kernel_param_ops pvcm_pending_timeout_ops = {
	.set = pvcm_set_pending_timeout,
	.get = param_get_uint,
};

module_param_cb(pvcm_pending_timeout, &pvcm_pending_timeout_ops,
		&pvcm_pending_timeout, 0444);
MODULE_PARM_DESC(pvcm_pending_timeout,
		 "PV-CM: seconds an unestablished connection id may stay idle, 1..86400 (default 120)");

VISIBLE_IF_PVCM_TEST unsigned int pvcm_max_routes = 4096;
module_param(pvcm_max_routes, uint, 0644);
MODULE_PARM_DESC(pvcm_max_routes,
		 "PV-CM: max remembered requests per VF and kind (REQ, its answer, SIDR_REQ, the VF's REQ to another VF), the VF's oldest of that kind is forgotten first, 0 = no limit (default 4096)");

#ifdef MLX4_IB_PVCM_TEST_HOOKS
/*
 * Test hooks (CONFIG_MLX4_IB_PVCM_TEST_HOOKS): a test module linked with
 * this object shortens the timeouts and injects faults.  A timeout of 0 is
 * the production value, so mlx4_ib.ko itself behaves as it does without
 * them.
 */
unsigned long pvcm_test_timewait;
unsigned long pvcm_test_pending;
unsigned long pvcm_test_route_life;
atomic_t pvcm_test_fail_nth = ATOMIC_INIT(0);

static u32 pvcm_timewait_jiffies(void)
{
	return pvcm_test_timewait ?: CM_CLEANUP_CACHE_TIMEOUT;
}

static u32 pvcm_route_jiffies(void)
{
	return pvcm_test_route_life ?: CM_CLEANUP_CACHE_TIMEOUT;
}

static u32 pvcm_pending_jiffies(void)
{
	return pvcm_test_pending ?: READ_ONCE(pvcm_pending_timeout) * HZ;
}

/* times a long walk let go of pv->lock between two batches */
atomic_t pvcm_test_breaks = ATOMIC_INIT(0);

static void pvcm_note_break(void)
{
	atomic_inc(&pvcm_test_breaks);
}

/*
 * Fail the allocation that brings the countdown from 1 to 0, and only
 * that one: a decrement and a separate read would let two concurrent
 * callers both see 0.
 */
static bool pvcm_fault(void)
{
	return atomic_dec_if_positive(&pvcm_test_fail_nth) == 0;
}

/*
 * Called by pvcm_create() with the cache @pv and the id of the entry it
 * just published, after pv->lock is dropped and before it returns: the
 * test module sends wire MADs from here, where a stranger's could come.
 */
void (*pvcm_test_after_publish)(struct mlx4_ib_pvcm *pv, u32 pv_cm_id);

static void pvcm_after_publish(struct mlx4_ib_pvcm *pv, u32 pv_cm_id)
{
	void (*hook)(struct mlx4_ib_pvcm *pv, u32 pv_cm_id) =
		READ_ONCE(pvcm_test_after_publish);

	if (hook)
		hook(pv, pv_cm_id);
}

/*
 * Called by pvcm_create() with the cache @pv and the VF's (slave,
 * sl_cm_id) once its entry is allocated, before pv->lock is taken to
 * insert it: the test module creates a concurrent creator's entry from
 * here.
 */
void (*pvcm_test_before_insert)(struct mlx4_ib_pvcm *pv, u32 slave,
				u32 sl_cm_id);

static void pvcm_before_insert(struct mlx4_ib_pvcm *pv, u32 slave,
			       u32 sl_cm_id)
{
	void (*hook)(struct mlx4_ib_pvcm *pv, u32 slave, u32 sl_cm_id) =
		READ_ONCE(pvcm_test_before_insert);

	if (hook)
		hook(pv, slave, sl_cm_id);
}
#else
static u32 pvcm_timewait_jiffies(void)
{
	return CM_CLEANUP_CACHE_TIMEOUT;
}

/* a request is remembered for as long as a released id stays reserved */
static u32 pvcm_route_jiffies(void)
{
	return CM_CLEANUP_CACHE_TIMEOUT;
}

static u32 pvcm_pending_jiffies(void)
{
	return READ_ONCE(pvcm_pending_timeout) * HZ;
}

static bool pvcm_fault(void)
{
	return false;
}

static void pvcm_note_break(void)
{
}

static void pvcm_after_publish(struct mlx4_ib_pvcm *pv, u32 pv_cm_id)
{
}

static void pvcm_before_insert(struct mlx4_ib_pvcm *pv, u32 slave,
			       u32 sl_cm_id)
{
}
#endif

VISIBLE_IF_PVCM_TEST struct workqueue_struct *cm_wq;
#ifdef MLX4_IB_PVCM_TEST_HOOKS
/* the random multiplier of pvcm_sl_hash(), odd once the seed is in */
u64 pvcm_sl_mul __read_mostly;
#endif
static struct kmem_cache *pvcm_cache;
/* entries taken from pvcm_cache and not yet given back (all devices) */
VISIBLE_IF_PVCM_TEST atomic_long_t pvcm_objects = ATOMIC_LONG_INIT(0);
VISIBLE_IF_PVCM_TEST struct dentry *pvcm_debugfs_root;

/* ------------------------------------------------------------------------
 * (a) CM MAD field helpers, on the IBTA field descriptors of
 * <rdma/ibta_vol1_c12.h> (IBTA vol 1, chapter 12).
 *
 * Every CM message starts with its sender's id (SIDR: the request id) and
 * every one that answers or continues a connection follows it with the
 * receiver's id.  The helpers read them through the REQ and REP fields;
 * the assertions hold every other message to the same places.
 */
#define PVCM_FIELD_OFF(...)			__PVCM_FIELD_OFF(__VA_ARGS__)
#define __PVCM_FIELD_OFF(type, off, ...)	(off)
#define PVCM_SAME_PLACE(a, b) \
	static_assert(PVCM_FIELD_OFF(a) == PVCM_FIELD_OFF(b))

PVCM_SAME_PLACE(CM_REQ_LOCAL_COMM_ID, CM_MRA_LOCAL_COMM_ID);
PVCM_SAME_PLACE(CM_REQ_LOCAL_COMM_ID, CM_REJ_LOCAL_COMM_ID);
PVCM_SAME_PLACE(CM_REQ_LOCAL_COMM_ID, CM_REP_LOCAL_COMM_ID);
PVCM_SAME_PLACE(CM_REQ_LOCAL_COMM_ID, CM_RTU_LOCAL_COMM_ID);
PVCM_SAME_PLACE(CM_REQ_LOCAL_COMM_ID, CM_DREQ_LOCAL_COMM_ID);
PVCM_SAME_PLACE(CM_REQ_LOCAL_COMM_ID, CM_DREP_LOCAL_COMM_ID);
PVCM_SAME_PLACE(CM_REQ_LOCAL_COMM_ID, CM_LAP_LOCAL_COMM_ID);
PVCM_SAME_PLACE(CM_REQ_LOCAL_COMM_ID, CM_APR_LOCAL_COMM_ID);
PVCM_SAME_PLACE(CM_REQ_LOCAL_COMM_ID, CM_SIDR_REQ_REQUESTID);
PVCM_SAME_PLACE(CM_REQ_LOCAL_COMM_ID, CM_SIDR_REP_REQUESTID);
PVCM_SAME_PLACE(CM_REP_REMOTE_COMM_ID, CM_MRA_REMOTE_COMM_ID);
PVCM_SAME_PLACE(CM_REP_REMOTE_COMM_ID, CM_REJ_REMOTE_COMM_ID);
PVCM_SAME_PLACE(CM_REP_REMOTE_COMM_ID, CM_RTU_REMOTE_COMM_ID);
PVCM_SAME_PLACE(CM_REP_REMOTE_COMM_ID, CM_DREQ_REMOTE_COMM_ID);
PVCM_SAME_PLACE(CM_REP_REMOTE_COMM_ID, CM_DREP_REMOTE_COMM_ID);
PVCM_SAME_PLACE(CM_REP_REMOTE_COMM_ID, CM_LAP_REMOTE_COMM_ID);
PVCM_SAME_PLACE(CM_REP_REMOTE_COMM_ID, CM_APR_REMOTE_COMM_ID);

static bool pvcm_is_attr(const struct ib_mad *mad, __be16 attr)
{
	return mad->mad_hdr.attr_id == attr;
}

/* the first id of any CM message */
static u32 pvcm_get_first(const struct ib_mad *mad)
{
	return IBA_GET(CM_REQ_LOCAL_COMM_ID, (struct cm_req_msg *)mad);
}

static void pvcm_set_first(struct ib_mad *mad, u32 id)
{
	IBA_SET(CM_REQ_LOCAL_COMM_ID, (struct cm_req_msg *)mad, id);
}

/*
 * The receiver's id, as its sender knows it, of a message that names one
 * (not REQ or SIDR_REQ): SIDR_REP (@sidr_rep) names it first, as the
 * request id; every other message where REP does.
 */
static u32 pvcm_get_receiver(const struct ib_mad *mad, bool sidr_rep)
{
	if (sidr_rep)
		return pvcm_get_first(mad);
	return IBA_GET(CM_REP_REMOTE_COMM_ID, (struct cm_rep_msg *)mad);
}

static void pvcm_set_receiver(struct ib_mad *mad, bool sidr_rep, u32 id)
{
	if (sidr_rep)
		pvcm_set_first(mad, id);
	else
		IBA_SET(CM_REP_REMOTE_COMM_ID, (struct cm_rep_msg *)mad, id);
}

/* a REJ that rejects a REQ: the rejecting side has no connection yet */
VISIBLE_IF_PVCM_TEST bool pvcm_rej_of_req(const struct ib_mad *mad)
{
	return IBA_GET(CM_REJ_MESSAGE_REJECTED, (struct cm_rej_msg *)mad) ==
	       PVCM_REJ_MSG_REQ;
}

VISIBLE_IF_PVCM_TEST bool pvcm_rej_timeout(const struct ib_mad *mad)
{
	return pvcm_is_attr(mad, CM_REJ_ATTR_ID) &&
	       IBA_GET(CM_REJ_REASON, (struct cm_rej_msg *)mad) ==
			IB_CM_REJ_TIMEOUT;
}

/* REJ(timeout) carries the rejecting CA's GUID as ARI; 0 when absent */
VISIBLE_IF_PVCM_TEST __be64 pvcm_rej_guid(const struct ib_mad *mad)
{
	__be64 guid;

	if (IBA_GET(CM_REJ_REJECTED_INFO_LENGTH, (struct cm_rej_msg *)mad) <
	    sizeof(guid))
		return 0;
	memcpy(&guid, IBA_GET_MEM_PTR(CM_REJ_ARI, (struct cm_rej_msg *)mad),
	       sizeof(guid));
	return guid;
}

static __be64 pvcm_req_guid(const struct ib_mad *mad)
{
	return cpu_to_be64(IBA_GET(CM_REQ_LOCAL_CA_GUID,
				   (struct cm_req_msg *)mad));
}

/* interface id of the REQ's destination port GID: selects the slave */
VISIBLE_IF_PVCM_TEST __be64 pvcm_req_dest_if_id(const struct ib_mad *mad)
{
	union ib_gid gid;

	memcpy(&gid, IBA_GET_MEM_PTR(CM_REQ_PRIMARY_REMOTE_PORT_GID,
				     (struct cm_req_msg *)mad), sizeof(gid));
	return gid.global.interface_id;
}

/*
 * A CM message is a Send of MAD base version 1 (ib_cm registers for no
 * other method).  Anything else is refused before its method can matter:
 * mad.c takes the slave of a MAD with the response bit from its TID.
 */
static int pvcm_check_mad(const struct ib_mad *mad, size_t len)
{
	if (len < sizeof(*mad))
		return -EMSGSIZE;
	if (mad->mad_hdr.base_version != IB_MGMT_BASE_VERSION ||
	    mad->mad_hdr.mgmt_class != IB_MGMT_CLASS_CM ||
	    mad->mad_hdr.class_version != PVCM_CM_CLASS_VERSION ||
	    mad->mad_hdr.method != IB_MGMT_METHOD_SEND)
		return -EPROTO;
	return 0;
}

/* ------------------------------------------------------------------------
 * (b) The id map.
 */
static bool pvcm_due(u32 deadline, u32 now)
{
	return (s32)(now - deadline) >= 0;
}

VISIBLE_IF_PVCM_TEST struct mlx4_ib_pvcm_slave *
pvcm_slave(struct mlx4_ib_pvcm *pv, const struct pvcm_entry *e)
{
	return &pv->slaves[e->key.slave];
}

/* an entry from before the last clean of its slave is no longer used */
VISIBLE_IF_PVCM_TEST bool
pvcm_stale(struct mlx4_ib_pvcm *pv, const struct pvcm_entry *e)
{
	return e->epoch != (u32)atomic_read(&pvcm_slave(pv, e)->epoch);
}

/*
 * The state of an entry found without pv->lock.  Acquire: an entry seen
 * published (not PVCM_DEAD) is seen with everything its creator wrote
 * before publishing it (pvcm_publish_locked()).
 */
static u8 pvcm_state(const struct pvcm_entry *e)
{
	/* pairs with the release in pvcm_publish_locked() */
	return smp_load_acquire(&e->state);
}

static bool pvcm_live(struct mlx4_ib_pvcm *pv, const struct pvcm_entry *e)
{
	u8 state = pvcm_state(e);

	return (state == PVCM_PENDING || state == PVCM_ESTABLISHED) &&
	       !pvcm_stale(pv, e);
}

VISIBLE_IF_PVCM_TEST bool
pvcm_usable(struct mlx4_ib_pvcm *pv, const struct pvcm_entry *e)
{
	return pvcm_state(e) != PVCM_DEAD && !pvcm_stale(pv, e);
}

static void pvcm_entry_free_rcu(struct rcu_head *head)
{
	struct pvcm_entry *e = container_of(head, struct pvcm_entry, rcu);

	kmem_cache_free(pvcm_cache, e);
	atomic_long_dec(&pvcm_objects);
}

/* give back an entry that was never published */
static void pvcm_discard(struct pvcm_entry *e)
{
	refcount_set(&e->ref, 0);	/* the state the constructor made */
	kmem_cache_free(pvcm_cache, e);
	atomic_long_dec(&pvcm_objects);
}

VISIBLE_IF_PVCM_TEST void pvcm_put(struct pvcm_entry *e)
{
	if (refcount_dec_and_test(&e->ref))
		call_rcu(&e->rcu, pvcm_entry_free_rcu);
}

/*
 * Lookups without a reference: the entry stays readable until the caller
 * leaves its RCU read-side section.  Its state may change meanwhile; events
 * re-check it under pv->lock.  Flattened so that the key hash is inlined
 * with the constant parameters instead of an indirect call.
 */
static __flatten struct pvcm_entry *
pvcm_find_sl(struct mlx4_ib_pvcm *pv, u32 slave, u32 sl_cm_id)
{
	struct pvcm_key key = { .sl_cm_id = sl_cm_id, .slave = slave };

	RCU_LOCKDEP_WARN(!rcu_read_lock_held(), "pvcm: lookup outside RCU");
	return rhashtable_lookup(&pv->sl_ids, &key, pvcm_sl_params);
}

/*
 * A pv_cm_id is the index of its entry in pv->pv_ids XORed with the
 * device's random pv->id_xor, as ib_cm makes its local comm ids: handed
 * out in sequence, the ids of one device cannot be guessed from a count.
 * Indices stay below 2^31 and id_xor has bit 31 set, so no id is 0 (the
 * "no id" of a REJ of a REQ).  XOR is its own inverse.
 */
VISIBLE_IF_PVCM_TEST u32 pvcm_index(const struct mlx4_ib_pvcm *pv, u32 pv_cm_id)
{
	return pv_cm_id ^ pv->id_xor;
}

VISIBLE_IF_PVCM_TEST u32 pvcm_id_of(const struct mlx4_ib_pvcm *pv, u32 index)
{
	return index ^ pv->id_xor;
}

VISIBLE_IF_PVCM_TEST __always_inline struct pvcm_entry *
pvcm_find_pv(struct mlx4_ib_pvcm *pv, u32 pv_cm_id)
{
	XA_STATE(xas, &pv->pv_ids, pvcm_index(pv, pv_cm_id));
	struct pvcm_entry *e;

	/*
	 * xa_load() without a read-side section of its own, inlined in the
	 * demux of every MAD from the wire.  Index 0 of an XA_FLAGS_ALLOC1
	 * array holds the zero entry, which xas_retry() would retry for
	 * ever: it is no entry.  An entry found may not be published yet:
	 * callers check pvcm_usable().
	 */
	RCU_LOCKDEP_WARN(!rcu_read_lock_held(), "pvcm: lookup outside RCU");
	do {
		e = xas_load(&xas);
		if (xa_is_zero(e))
			e = NULL;
	} while (xas_retry(&xas, e));
	return e;
}

#ifdef MLX4_IB_PVCM_TEST_HOOKS
/*
 * The handlers pin nothing; the test module pins entries it looked up to
 * hold them across a reap.  Pinned, an entry may be used outside RCU until
 * pvcm_put().  pvcm_pin_pv() also pins an entry that is not published
 * yet: its caller checks pvcm_usable() as the handlers do.
 */
static struct pvcm_entry *pvcm_pin(struct pvcm_entry *e)
{
	return e && refcount_inc_not_zero(&e->ref) ? e : NULL;
}

struct pvcm_entry *pvcm_pin_sl(struct mlx4_ib_pvcm *pv, u32 slave, u32 sl_cm_id)
{
	struct pvcm_entry *e;

	rcu_read_lock();
	e = pvcm_pin(pvcm_find_sl(pv, slave, sl_cm_id));
	rcu_read_unlock();
	return e;
}

struct pvcm_entry *pvcm_pin_pv(struct mlx4_ib_pvcm *pv, u32 pv_cm_id)
{
	struct pvcm_entry *e;

	rcu_read_lock();
	e = pvcm_pin(pvcm_find_pv(pv, pv_cm_id));
	rcu_read_unlock();
	return e;
}
#endif

/* make sure the reaper runs no later than @deadline */
VISIBLE_IF_PVCM_TEST void pvcm_arm(struct mlx4_ib_pvcm *pv, u32 deadline)
{
	u32 now = jiffies;
	s32 delay;

	lockdep_assert_held(&pv->lock);
	if (pv->dying)
		return;
	if (pv->reaper_armed && (s32)(deadline - pv->reaper_at) >= 0)
		return;
	/* a deadline already passed means "now" */
	delay = max_t(s32, deadline - now, 0);
	pv->reaper_armed = true;
	pv->reaper_at = deadline;
	mod_delayed_work(cm_wq, &pv->reaper, delay);
}

static void pvcm_unindex(struct mlx4_ib_pvcm *pv, struct pvcm_entry *e)
{
	lockdep_assert_held(&pv->lock);
	if (!(e->flags & PVCM_F_INDEXED))
		return;
	rhashtable_remove_fast(&pv->sl_ids, &e->hnode, pvcm_sl_params);
	pvcm_flags_set(e, 0, PVCM_F_INDEXED);
}

/*
 * The pending FIFO of @s that @e belongs on: entries their VF's REQ to
 * another VF of this master may still be answered for have one of their
 * own (see pvcm_loop_route()).
 */
static struct list_head *pvcm_pending_list(struct mlx4_ib_pvcm *pv,
					   struct mlx4_ib_pvcm_slave *s,
					   const struct pvcm_entry *e)
{
	lockdep_assert_held(&pv->lock);
	return e->flags & PVCM_F_ROUTED ? &s->loop : &s->pending;
}

/*
 * @e's REQ may no longer be answered through it: forget that, and leave
 * the entry wherever it is (the caller moves it off the loop FIFO).
 */
static void pvcm_unroute(struct mlx4_ib_pvcm *pv, struct pvcm_entry *e)
{
	lockdep_assert_held(&pv->lock);
	if (!(e->flags & PVCM_F_ROUTED))
		return;
	pvcm_flags_set(e, 0, PVCM_F_ROUTED);
	pvcm_slave(pv, e)->nr_loop--;
}

/* lifecycle event: a connection message passed, push the idle deadline */
static void pvcm_ev_refresh(struct mlx4_ib_pvcm *pv, struct pvcm_entry *e)
{
	lockdep_assert_held(&pv->lock);
	if (e->state != PVCM_PENDING)
		return;
	WRITE_ONCE(e->deadline, (u32)jiffies + pvcm_pending_jiffies());
	list_move_tail(&e->link, pvcm_pending_list(pv, pvcm_slave(pv, e), e));
	pvcm_arm(pv, e->deadline);
}

/*
 * An entry the reaper moved to TimeWait because it was idle may be brought
 * back while it is still the current entry of its (slave, sl_cm_id): the
 * connection was alive after all.  Entries ended by a teardown MAD or a
 * per-slave clean never come back.
 */
static bool pvcm_revivable(struct mlx4_ib_pvcm *pv, const struct pvcm_entry *e)
{
	return READ_ONCE(e->state) == PVCM_TIMEWAIT &&
	       pvcm_flag(e, PVCM_F_IDLE) && !pvcm_stale(pv, e);
}

/* move an idle-expired entry back from TimeWait to @state */
static bool pvcm_revive(struct mlx4_ib_pvcm *pv, struct pvcm_entry *e,
			u8 state)
{
	struct mlx4_ib_pvcm_slave *s = pvcm_slave(pv, e);

	lockdep_assert_held(&pv->lock);
	if (!pvcm_revivable(pv, e) || !(e->flags & PVCM_F_INDEXED))
		return false;
	s->nr_timewait--;
	s->nr_live++;
	pvcm_flags_set(e, 0, PVCM_F_IDLE);
	WRITE_ONCE(e->state, state);
	if (state == PVCM_ESTABLISHED) {
		list_move_tail(&e->link, &s->established);
		return true;
	}
	WRITE_ONCE(e->deadline, (u32)jiffies + pvcm_pending_jiffies());
	list_move_tail(&e->link, &s->pending);
	pvcm_arm(pv, e->deadline);
	return true;
}

/*
 * Lifecycle event: RTU, LAP or APR passed, the connection is established
 * and no longer expires; an idle-expired entry comes back for it.
 */
static void pvcm_ev_establish(struct mlx4_ib_pvcm *pv, struct pvcm_entry *e)
{
	lockdep_assert_held(&pv->lock);
	if (e->state == PVCM_TIMEWAIT) {
		pvcm_revive(pv, e, PVCM_ESTABLISHED);
		return;
	}
	if (e->state != PVCM_PENDING)
		return;
	pvcm_unroute(pv, e);
	WRITE_ONCE(e->state, PVCM_ESTABLISHED);
	list_move_tail(&e->link, &pvcm_slave(pv, e)->established);
}

/*
 * Lifecycle event: the connection ends.  This is the one delayed delete
 * path: the entry (still reachable for the teardown MADs) goes to the
 * TimeWait FIFO.  A second call does nothing: repeated teardown MADs must
 * not hold the entry in TimeWait for ever.  An entry already in TimeWait
 * because it expired idle stays there, but can no longer be brought back:
 * its connection has now ended for good.
 */
static void pvcm_release(struct mlx4_ib_pvcm *pv, struct pvcm_entry *e)
{
	struct mlx4_ib_pvcm_slave *s = pvcm_slave(pv, e);

	lockdep_assert_held(&pv->lock);
	if (e->state == PVCM_TIMEWAIT)
		pvcm_flags_set(e, 0, PVCM_F_IDLE);
	if (e->state == PVCM_DEAD || e->state == PVCM_TIMEWAIT)
		return;
	pvcm_unroute(pv, e);
	s->nr_live--;
	s->nr_timewait++;
	WRITE_ONCE(e->state, PVCM_TIMEWAIT);
	WRITE_ONCE(e->deadline, (u32)jiffies + pvcm_timewait_jiffies());
	list_move_tail(&e->link, &s->timewait);
	pvcm_arm(pv, e->deadline);
}

/*
 * Is @e one of the TimeWait entries that the last clean walk of its slave
 * counted in nr_reset (from before the VF's last reset)?
 */
static bool pvcm_before_reset(const struct mlx4_ib_pvcm_slave *s,
			      const struct pvcm_entry *e)
{
	return e->state == PVCM_TIMEWAIT &&
	       (s32)(e->epoch - s->reset_epoch) < 0;
}

/*
 * Over the per-VF cap?  TimeWait entries from before the VF's last reset
 * do not count: a VF at its cap that resets must not be locked out for
 * the TimeWait time.  All entries together stay below twice the cap.
 */
static bool pvcm_over_cap(const struct mlx4_ib_pvcm_slave *s,
			  unsigned int cap)
{
	u64 all = (u64)s->nr_live + s->nr_timewait;

	return cap && (all - s->nr_reset >= cap || all >= 2ULL * cap);
}

/* unlink for good and drop the map's reference (reaper and final clean) */
static void pvcm_final(struct mlx4_ib_pvcm *pv, struct pvcm_entry *e)
{
	struct mlx4_ib_pvcm_slave *s = pvcm_slave(pv, e);

	lockdep_assert_held(&pv->lock);
	list_del(&e->link);
	pvcm_unroute(pv, e);
	pvcm_unindex(pv, e);
	xa_erase(&pv->pv_ids, pvcm_index(pv, e->pv_cm_id));
	if (pvcm_before_reset(s, e))
		s->nr_reset--;
	if (e->state == PVCM_TIMEWAIT)
		s->nr_timewait--;
	else
		s->nr_live--;
	s->freed++;
	WRITE_ONCE(e->state, PVCM_DEAD);
	pvcm_put(e);
}

static inline bool pvcm_event_needed(const struct pvcm_entry *e, u8 ev);
static void pvcm_event_locked(struct mlx4_ib_pvcm *pv, struct pvcm_entry *e,
			      u8 ev);

static inline bool pvcm_note_out(struct pvcm_entry *e, u32 peer, bool sidr);

/*
 * A new entry for (slave, sl_cm_id), stored in pv->pv_ids under its index
 * (returned in @id) but not published: lookups skip it while it is
 * PVCM_DEAD.  pvcm_entry_abort() gives it back.
 */
VISIBLE_IF_PVCM_TEST struct pvcm_entry *
pvcm_entry_new(struct mlx4_ib_pvcm *pv, u32 slave, u32 sl_cm_id, u32 peer,
	       bool sidr, u32 *id)
{
	struct pvcm_entry *e;
	int ret;

	if (pvcm_fault())
		return ERR_PTR(-ENOMEM);
	e = kmem_cache_alloc(pvcm_cache, GFP_KERNEL);
	if (!e)
		return ERR_PTR(-ENOMEM);
	atomic_long_inc(&pvcm_objects);
	e->key.sl_cm_id = sl_cm_id;
	e->key.slave = slave;
	e->state = PVCM_DEAD;
	e->remote_id = peer;
	e->sidr = sidr;
	e->flags = 0;
	e->loop_slave = 0;
	refcount_set(&e->ref, 1);	/* the map's */

	/*
	 * The store publishes the fields above to lookups by id, which see
	 * the entry but skip it until pvcm_publish_locked().  pv_cm_id is
	 * only read from published entries.
	 */
	ret = -ENOMEM;
	if (!pvcm_fault())
		ret = xa_alloc_cyclic(&pv->pv_ids, id, e, XA_LIMIT(1, S32_MAX),
				      &pv->pv_next, GFP_KERNEL);
	if (ret < 0) {
		pvcm_discard(e);
		return ERR_PTR(ret);
	}
	e->pv_cm_id = pvcm_id_of(pv, *id);
	return e;
}

/*
 * Give back an entry of pvcm_entry_new() that was not published.  A
 * lookup by id may still hold it (skipping it): it is freed after a grace
 * period, and a pin (test builds) keeps it longer.
 */
VISIBLE_IF_PVCM_TEST void pvcm_entry_abort(struct mlx4_ib_pvcm *pv,
					   struct pvcm_entry *e, u32 id)
{
	xa_erase(&pv->pv_ids, id);
	pvcm_put(e);
}

/**
 * DOC: VF-to-VF requests
 *
 * A VF's REQ to another VF of this master (its destination GID is that
 * VF's) comes back in through the demux handler.  A REQ from the wire
 * gets two routes there, charged to the VF it goes to: one so that only
 * that VF may answer it, one so that a REJ(timeout) of it can be routed.
 * Charged to the target, a REQ flood from one VF would push out the
 * routes another VF needs for its answers; as routes charged to the
 * sender, two allocations and two inserts into pv->routes cost more than
 * the rest of the REQ.
 *
 * The sender's entry carries both instead, found by the REQ's comm id,
 * its pv_cm_id.  The REQ that creates the entry sets PVCM_F_LOOP (with
 * PVCM_F_LOOP_PORT2) and @loop_slave, which never change: the demux
 * takes a REQ with that comm id, to that VF on that port, for the
 * sender's and charges nobody.  PVCM_F_ROUTED lets the target answer:
 * the entry is then on its slave's loop FIFO, counted in nr_loop against
 * pvcm_max_routes.  That ends when the target answers, when the REQ
 * fails the target's partition check, when the entry leaves pending, and
 * for the sender's oldest when it is at its limit; a retry of a REQ that
 * no answer came back for brings it back.  A REJ(timeout) that matches
 * no route goes to the target only while the entry knows no peer: once
 * an answer came back, the REQ did not time out, and a stranger that
 * guessed the pv_cm_id cannot end the connection that way.
 *
 * A REQ its entry cannot carry, because the VF uses that id for something
 * else (a SIDR_REQ, a REQ to the wire, to another VF or on the other
 * port, an answer), is dropped at the multiplex with -EEXIST and counted
 * for the VF: ib_cm gives every REQ an id of its own, and let through,
 * the demux would take it for a REQ from the wire and charge its routes
 * to the target.
 *
 * The multiplex handler finds the target by the REQ's GID on the port
 * the REQ leaves by, as the demux handler does on that port.  A REQ to a
 * VF's GID of the other port, when both ports share a subnet, and any
 * REQ on RoCE (no GID tells the multiplex handler the target) reach the
 * demux handler as REQs from the wire and cost the target, as before
 * the sender's entry carried them.
 */

/**
 * struct pvcm_loop - where a VF's REQ goes, if to another VF of this master
 * @flags: PVCM_F_LOOP, with PVCM_F_LOOP_PORT2 on port 2; 0 when the MAD is
 *	no REQ to such a VF
 * @slave: the VF it goes to
 */
struct pvcm_loop {
	u8 flags;
	u8 slave;
};

/*
 * The VF @e's REQ went to on @port if @e has the flags @need (PVCM_F_LOOP,
 * or that and PVCM_F_ROUTED), else -1.  Without pv->lock, the caller
 * has checked that @e is published.
 */
static int pvcm_loop_target(const struct pvcm_entry *e, int port, u8 need)
{
	u8 flags = READ_ONCE(e->flags);
	u8 port2 = port == 2 ? PVCM_F_LOOP_PORT2 : 0;

	need |= PVCM_F_LOOP;
	if ((flags & need) != need || (flags & PVCM_F_LOOP_PORT2) != port2)
		return -1;
	return READ_ONCE(e->loop_slave);
}

/*
 * May the VF's MAD that goes to @loop use @e, published?  Any MAD that is
 * no REQ to another VF may; such a REQ only if @e carries its routes.
 */
static bool pvcm_loop_carries(const struct pvcm_entry *e,
			      struct pvcm_loop loop)
{
	int port = loop.flags & PVCM_F_LOOP_PORT2 ? 2 : 1;

	return !loop.flags || pvcm_loop_target(e, port, 0) == loop.slave;
}

/*
 * A concurrent creator's live entry @old holds (slave, sl_cm_id): it
 * answers for the new MAD too if that names the same peer.
 */
static int pvcm_join_live(struct mlx4_ib_pvcm *pv, struct pvcm_entry *old,
			  u32 peer, bool sidr, struct pvcm_loop loop,
			  u8 ev, u32 *pv_cm_id)
{
	lockdep_assert_held(&pv->lock);
	if (!pvcm_loop_carries(old, loop))
		return -EEXIST;	/* the id is in use for something else */
	if (!pvcm_note_out(old, peer, sidr))
		return -EPERM;	/* it answers another requester */
	*pv_cm_id = old->pv_cm_id;
	if (pvcm_event_needed(old, ev))
		pvcm_event_locked(pv, old, ev);
	return 0;
}

/*
 * Put @e, whose REQ its target may no longer answer, from the loop FIFO to
 * the pending FIFO of its slave.  That stays in deadline order: the entry
 * keeps its deadline unless the youngest there is younger, whose
 * deadline it then takes.  It lives longer, never shorter, and at most
 * one pending timeout longer than without the move: the youngest's
 * deadline is at most that far away.  During a clean's walk of the
 * pending FIFO the entries it set aside go back before this one, younger
 * or not: its expiry waits for theirs, one pending timeout at most.
 */
static void pvcm_loop_drop(struct mlx4_ib_pvcm *pv, struct pvcm_entry *e)
{
	struct mlx4_ib_pvcm_slave *s = pvcm_slave(pv, e);
	struct pvcm_entry *last;

	lockdep_assert_held(&pv->lock);
	pvcm_unroute(pv, e);
	if (!list_empty(&s->pending)) {
		last = list_last_entry(&s->pending, struct pvcm_entry, link);
		if ((s32)(last->deadline - e->deadline) > 0)
			WRITE_ONCE(e->deadline, last->deadline);
	}
	list_move_tail(&e->link, &s->pending);
}

/*
 * Let @e's target answer its REQ, charged to @s, @e's slave.  At its limit
 * the slave forgets its oldest such REQ, never another slave's, at most
 * two per new one (as pvcm_route_room()).  The caller puts @e at the tail
 * of @s->loop, with a deadline just set.
 */
static void pvcm_loop_route(struct mlx4_ib_pvcm *pv,
			    struct mlx4_ib_pvcm_slave *s, struct pvcm_entry *e)
{
	unsigned int max = READ_ONCE(pvcm_max_routes), n;

	lockdep_assert_held(&pv->lock);
	for (n = 0; n < 2 && max && s->nr_loop >= max &&
	     !list_empty(&s->loop); n++)
		pvcm_loop_drop(pv, list_first_entry(&s->loop,
						    struct pvcm_entry, link));
	pvcm_flags_set(e, PVCM_F_ROUTED, 0);
	s->nr_loop++;
}

/*
 * The VF sent @e's REQ again, to the same VF on @port (@target): if that
 * VF may no longer answer it and no answer came back yet, it may again,
 * as when the REQ first went out.
 */
static noinline void pvcm_loop_again(struct mlx4_ib_pvcm *pv,
				     struct pvcm_entry *e, int port, int target)
{
	struct mlx4_ib_pvcm_slave *s = pvcm_slave(pv, e);

	spin_lock(&pv->lock);
	if (e->state == PVCM_PENDING && !pvcm_stale(pv, e) &&
	    !(e->flags & PVCM_F_ROUTED) && !READ_ONCE(e->remote_id) &&
	    pvcm_loop_target(e, port, 0) == target) {
		pvcm_loop_route(pv, s, e);
		WRITE_ONCE(e->deadline, (u32)jiffies + pvcm_pending_jiffies());
		list_move_tail(&e->link, &s->loop);
		pvcm_arm(pv, e->deadline);
	}
	spin_unlock(&pv->lock);
}

/*
 * The VF's REQ to another VF, @loop, uses its entry @e: -EEXIST if @e
 * cannot carry it (the id is in use for something else), else 0, and
 * its target may answer it again if it no longer could.
 */
static noinline int pvcm_loop_use(struct mlx4_ib_pvcm *pv,
				  struct pvcm_entry *e, int port,
				  struct pvcm_loop loop)
{
	if (!pvcm_loop_carries(e, loop))
		return -EEXIST;
	if (!pvcm_flag(e, PVCM_F_ROUTED))
		pvcm_loop_again(pv, e, port, loop.slave);
	return 0;
}

/*
 * Put @e, indexed by (slave, sl_cm_id) already, on its slave's list and
 * make it usable to lookups by id.
 */
static void pvcm_publish_locked(struct mlx4_ib_pvcm *pv,
				struct mlx4_ib_pvcm_slave *s,
				struct pvcm_entry *e)
{
	lockdep_assert_held(&pv->lock);
	pvcm_flags_set(e, PVCM_F_INDEXED, 0);
	if (e->flags & PVCM_F_LOOP)
		pvcm_loop_route(pv, s, e);
	list_add_tail(&e->link, pvcm_pending_list(pv, s, e));
	s->nr_live++;
	s->allocated++;
	pvcm_arm(pv, e->deadline);
	/* last: pairs with the acquire of pvcm_state() */
	smp_store_release(&e->state, PVCM_PENDING);
}

/*
 * Create the entry for (slave, sl_cm_id) with the peer's comm id @peer
 * (0: not known yet), the SIDR flag @sidr and the VF of this master the
 * REQ goes to @loop (pvcm_loop_of()) of the VF's MAD that creates it,
 * apply @ev to it under the same hold of pv->lock and return its id in
 * @pv_cm_id; the caller keeps no reference.  They are set
 * before the entry is published: from then on a wire MAD that names the
 * (predictable) id is checked against them, and a stranger's REP would
 * otherwise become the peer.  An entry of a concurrent creator that is
 * still live wins and learns @peer and @sidr as from a later MAD (its own
 * REQ said where it goes); an entry on its way out is replaced in the
 * (slave, sl_cm_id) index only and keeps its release path; a REQ to
 * another VF joins it only if it carries the REQ's routes.  A join adds
 * no entry: the per-VF cap refuses only a new one.
 */
static int pvcm_create(struct mlx4_ib_pvcm *pv, u32 slave, u32 sl_cm_id,
		       u32 peer, bool sidr, struct pvcm_loop loop,
		       u8 ev, u32 *pv_cm_id)
{
	struct mlx4_ib_pvcm_slave *s = &pv->slaves[slave];
	unsigned int cap = READ_ONCE(pvcm_max_per_vf);
	struct pvcm_entry *e, *old;
	u32 id;
	int ret;

	e = pvcm_entry_new(pv, slave, sl_cm_id, peer, sidr, &id);
	if (IS_ERR(e))
		return PTR_ERR(e);
	pvcm_before_insert(pv, slave, sl_cm_id);

	spin_lock(&pv->lock);
	/*
	 * The epoch is read here, after the allocations that may sleep and
	 * under the lock that publishes the entry: a clean that bumps it
	 * after this read queues its work after it, and that work takes the
	 * lock after us and finds the entry stale.  Read before sleeping, an
	 * old epoch could be published after the work had run, and stay.
	 */
	e->epoch = (u32)atomic_read(&s->epoch);
	/* set before lookups can see it, in pending FIFO order */
	e->deadline = (u32)jiffies + pvcm_pending_jiffies();
	e->loop_slave = loop.slave;
	pvcm_flags_set(e, loop.flags, 0);
	if (pv->dying) {
		ret = -ESHUTDOWN;
		goto unlock;
	}
	/*
	 * At the cap only a concurrent creator's live entry may serve: a MAD
	 * that joins it adds no entry, while one that would replace an entry
	 * on its way out adds one.  Every insert into and removal from
	 * pv->sl_ids, and the put that frees an indexed entry, happen under
	 * pv->lock: @old is used here without a reference, and a miss or an
	 * entry that is not live stays so until the lock is dropped.
	 */
	if (pvcm_over_cap(s, cap)) {
		old = rhashtable_lookup_fast(&pv->sl_ids, &e->key,
					     pvcm_sl_params);
		if (old && pvcm_live(pv, old)) {
			ret = pvcm_join_live(pv, old, peer, sidr, loop, ev,
					     pv_cm_id);
		} else {
			atomic_long_inc(&s->cap_hits);
			ret = -EDQUOT;
		}
		goto unlock;
	}
	if (pvcm_fault()) {
		ret = -ENOMEM;
		goto unlock;
	}
	old = rhashtable_lookup_get_insert_fast(&pv->sl_ids, &e->hnode,
						pvcm_sl_params);
	if (IS_ERR(old)) {
		ret = PTR_ERR(old);
		goto unlock;
	}
	if (old && pvcm_live(pv, old)) {
		ret = pvcm_join_live(pv, old, peer, sidr, loop, ev, pv_cm_id);
		goto unlock;
	}
	if (old) {
		ret = rhashtable_replace_fast(&pv->sl_ids, &old->hnode,
					      &e->hnode, pvcm_sl_params);
		if (ret)
			goto unlock;
		pvcm_flags_set(old, 0, PVCM_F_INDEXED);
	}
	pvcm_publish_locked(pv, s, e);
	*pv_cm_id = e->pv_cm_id;
	if (pvcm_event_needed(e, ev))	/* not the refresh of a new entry */
		pvcm_event_locked(pv, e, ev);
	spin_unlock(&pv->lock);
	pvcm_after_publish(pv, *pv_cm_id);
	return 0;

unlock:
	spin_unlock(&pv->lock);
	pvcm_entry_abort(pv, e, id);
	return ret;
}

/* may a MAD of the VF use @e?  Only REJ(timeout) may reuse TimeWait */
static bool pvcm_accept(struct mlx4_ib_pvcm *pv, const struct pvcm_entry *e,
			bool accept_timewait)
{
	return accept_timewait ? pvcm_usable(pv, e) : pvcm_live(pv, e);
}

/*
 * The FIFO of a route: each kind has its own.  REQ routes (for
 * REJ(timeout), kept for every REQ, answered or not) do not push out the
 * routes a VF accepting many connections needs for its answers, nor do
 * SIDR_REQs, which another VF can send it through the wire (no GID of
 * theirs tells the multiplex handler whom they are for).
 */
VISIBLE_IF_PVCM_TEST unsigned int pvcm_route_list(const struct pvcm_route *r)
{
	BUILD_BUG_ON(PVCM_ROUTE_KINDS != PVCM_ROUTE_LISTS);
	return r->key.kind;
}

static void pvcm_route_free(struct mlx4_ib_pvcm *pv, struct pvcm_route *r)
{
	lockdep_assert_held(&pv->lock);
	list_del(&r->link);
	rhashtable_remove_fast(&pv->routes, &r->hnode, pvcm_route_params);
	pv->slaves[r->payer].nr_routes[pvcm_route_list(r)]--;
	kfree_rcu(r, rcu);
}

/*
 * Make room for one more route on @s's FIFO @list: at its limit the slave
 * forgets its own oldest request, never another slave's.  Requests
 * flooding one VF from the wire cost that VF only; a VF flooding another
 * pays itself.  At most two go per new route, so that lowering the limit
 * at run time does not free thousands in one hold of the lock: the count
 * comes down over the next requests.  The routes a clean of the slave has
 * set aside still count until it frees them.
 */
static void pvcm_route_room(struct mlx4_ib_pvcm *pv,
			    struct mlx4_ib_pvcm_slave *s, unsigned int list)
{
	unsigned int max = READ_ONCE(pvcm_max_routes), n;

	lockdep_assert_held(&pv->lock);
	for (n = 0; n < 2 && max && s->nr_routes[list] >= max &&
	     !list_empty(&s->routes[list]); n++)
		pvcm_route_free(pv, list_first_entry(&s->routes[list],
						     struct pvcm_route, link));
}

/* make @r @payer's, its life starting now */
static void pvcm_route_take(struct mlx4_ib_pvcm *pv, struct pvcm_route *r,
			    int payer)
{
	lockdep_assert_held(&pv->lock);
	r->payer = payer;
	r->epoch = (u32)atomic_read(&pv->slaves[payer].epoch);
	r->deadline = (u32)jiffies + pvcm_route_jiffies();
}

/* put @r, taken, at the tail of its payer's list */
static void pvcm_route_link(struct mlx4_ib_pvcm *pv, struct pvcm_route *r)
{
	struct mlx4_ib_pvcm_slave *s = &pv->slaves[r->payer];

	lockdep_assert_held(&pv->lock);
	list_add_tail(&r->link, &s->routes[pvcm_route_list(r)]);
	s->nr_routes[pvcm_route_list(r)]++;
	pvcm_arm(pv, r->deadline);
}

/*
 * Remember (or refresh) that an incoming request with @key went to
 * @slave; @payer is charged for a new route.  The route is allocated
 * first and goes in under one hold of pv->lock, complete but for its
 * place on the payer's list, which only holders of the lock walk, before
 * the insert makes it visible to lookups.  One walk of its bucket finds
 * the route of the key or inserts the new one; at its limit the payer's
 * oldest route goes after the insert, which is never that oldest: the
 * key was not in the table.
 */
static int pvcm_route_note(struct mlx4_ib_pvcm *pv,
			   const struct pvcm_route_key *key, int slave,
			   int payer)
{
	struct pvcm_route *r, *old;
	int ret = 0;

	if (pvcm_fault())
		return -ENOMEM;
#ifdef HAVE_KMALLOC_OBJ
	r = kzalloc_obj(*r);
#else
	r = kzalloc(sizeof(*r), GFP_KERNEL);
#endif
	if (!r)
		return -ENOMEM;
	r->key = *key;
	r->slave = slave;

	spin_lock(&pv->lock);
	if (pv->dying) {
		ret = -ESHUTDOWN;
		goto unlock;
	}
	pvcm_route_take(pv, r, payer);
	old = rhashtable_lookup_get_insert_fast(&pv->routes, &r->hnode,
						pvcm_route_params);
	if (IS_ERR(old)) {
		ret = PTR_ERR(old);
		goto unlock;
	}
	if (old) {
		/* a repeated request; a REQ route may change hands */
		list_del(&old->link);
		WRITE_ONCE(old->slave, slave);
		pv->slaves[old->payer].nr_routes[pvcm_route_list(old)]--;
		pvcm_route_take(pv, old, old->payer);
		pvcm_route_link(pv, old);
		goto unlock;
	}
	pvcm_route_room(pv, &pv->slaves[payer], pvcm_route_list(r));
	pvcm_route_link(pv, r);
	r = NULL;	/* the table's now */
unlock:
	spin_unlock(&pv->lock);
	kfree(r);
	return ret;
}

/*
 * The slave a REJ(timeout) from @comm_id, whose remote id names nothing,
 * goes to: the one its REQ's route names, or the target of a VF's REQ to
 * another VF that no answer came back for; else -ENOENT.
 */
VISIBLE_IF_PVCM_TEST int
pvcm_route_lookup(struct mlx4_ib_pvcm *pv, int port, u32 comm_id,
		  __be64 ca_guid)
{
	struct pvcm_route_key key = {
		.ca_guid = ca_guid, .comm_id = comm_id, .port = port,
	};
	struct pvcm_entry *e;
	struct pvcm_route *r;
	int slave = -ENOENT;

	rcu_read_lock();
	r = rhashtable_lookup(&pv->routes, &key, pvcm_route_params);
	if (r) {
		slave = READ_ONCE(r->slave);
	} else {
		/* a REQ of one of this master's VFs to another, unanswered */
		e = pvcm_find_pv(pv, comm_id);
		if (e && pvcm_usable(pv, e) && !READ_ONCE(e->remote_id))
			slave = pvcm_loop_target(e, port, 0);
		if (slave < 0)
			slave = -ENOENT;
	}
	rcu_read_unlock();
	return slave;
}

/*
 * The entry of a REQ of this master's, from @comm_id, to @slave on @port
 * with the flags @need (as pvcm_loop_target(); PVCM_F_ROUTED: @slave may
 * answer it), or NULL.  Under RCU.
 */
static struct pvcm_entry *pvcm_loop_find(struct mlx4_ib_pvcm *pv, int port,
					 u32 comm_id, int slave, u8 need)
{
	struct pvcm_entry *e = pvcm_find_pv(pv, comm_id);

	if (e && pvcm_usable(pv, e) &&
	    pvcm_loop_target(e, port, need) == slave)
		return e;
	return NULL;
}

/*
 * The answer to the REQ from @comm_id made @slave's entry learn its peer:
 * from now on the entry checks the VF's answers, and the route can go
 * (or the REQ did not reach @slave, which may not answer it then).
 */
static noinline void pvcm_route_forget(struct mlx4_ib_pvcm *pv, int port,
				       u32 comm_id, int slave)
{
	struct pvcm_route_key key = {
		.comm_id = comm_id, .port = port, .kind = PVCM_ROUTE_ANSWER,
		.slave = slave,
	};
	struct pvcm_entry *e;
	struct pvcm_route *r;

	rcu_read_lock();
	spin_lock(&pv->lock);
	e = pvcm_loop_find(pv, port, comm_id, slave, PVCM_F_ROUTED);
	if (e) {
		pvcm_loop_drop(pv, e);
	} else {
		r = rhashtable_lookup(&pv->routes, &key, pvcm_route_params);
		if (r)
			pvcm_route_free(pv, r);
	}
	spin_unlock(&pv->lock);
	rcu_read_unlock();
}

/*
 * was a REQ from comm id @comm_id delivered to @slave on @port?  Out of
 * line, as pvcm_route_forget() and pvcm_sidr_delivered(), which the
 * handlers call only for answers to requests: the lookup of every other
 * MAD stays free of their keys' stack frames.
 */
VISIBLE_IF_PVCM_TEST noinline bool
pvcm_req_delivered(struct mlx4_ib_pvcm *pv, int port, u32 comm_id, int slave)
{
	struct pvcm_route_key key = {
		.comm_id = comm_id, .port = port, .kind = PVCM_ROUTE_ANSWER,
		.slave = slave,
	};
	bool found;

	rcu_read_lock();
	found = pvcm_loop_find(pv, port, comm_id, slave, PVCM_F_ROUTED) ||
		rhashtable_lookup(&pv->routes, &key, pvcm_route_params);
	rcu_read_unlock();
	return found;
}

/* was a SIDR_REQ with request id @req_id delivered to @slave? */
static noinline bool pvcm_sidr_delivered(struct mlx4_ib_pvcm *pv, u32 req_id,
					 int slave)
{
	struct pvcm_route_key key = {
		.comm_id = req_id, .kind = PVCM_ROUTE_SIDR, .slave = slave,
	};
	bool found;

	rcu_read_lock();
	found = rhashtable_lookup(&pv->routes, &key, pvcm_route_params);
	rcu_read_unlock();
	return found;
}

/*
 * Expire what is due on @s's FIFOs, at most PVCM_BATCH entries or routes.
 * Return: false if the batch ran out with more possibly due.
 */
static bool pvcm_reap_slave(struct mlx4_ib_pvcm *pv,
			    struct mlx4_ib_pvcm_slave *s, u32 now)
{
	struct list_head *pending[] = { &s->loop, &s->pending };
	struct pvcm_route *r, *rtmp;
	struct pvcm_entry *e, *tmp;
	unsigned int i, n = 0;

	lockdep_assert_held(&pv->lock);
	for (i = 0; i < ARRAY_SIZE(pending); i++) {
		list_for_each_entry_safe(e, tmp, pending[i], link) {
			if (!pvcm_due(e->deadline, now))
				break;
			if (n++ == PVCM_BATCH)
				return false;
			pvcm_flags_set(e, PVCM_F_IDLE, 0);
			pvcm_release(pv, e);
		}
	}
	list_for_each_entry_safe(e, tmp, &s->timewait, link) {
		if (!pvcm_due(e->deadline, now))
			break;
		if (n++ == PVCM_BATCH)
			return false;
		pvcm_final(pv, e);
	}
	for (i = 0; i < PVCM_ROUTE_LISTS; i++) {
		list_for_each_entry_safe(r, rtmp, &s->routes[i], link) {
			if (!pvcm_due(r->deadline, now))
				break;
			if (n++ == PVCM_BATCH)
				return false;
			pvcm_route_free(pv, r);
		}
	}
	for (i = 0; i < ARRAY_SIZE(pending); i++) {
		e = list_first_entry_or_null(pending[i], struct pvcm_entry,
					     link);
		if (e)
			pvcm_arm(pv, e->deadline);
	}
	e = list_first_entry_or_null(&s->timewait, struct pvcm_entry, link);
	if (e)
		pvcm_arm(pv, e->deadline);
	for (i = 0; i < PVCM_ROUTE_LISTS; i++) {
		r = list_first_entry_or_null(&s->routes[i], struct pvcm_route,
					     link);
		if (r)
			pvcm_arm(pv, r->deadline);
	}
	return true;
}

/* let others have pv->lock between two batches */
static void pvcm_lock_break(struct mlx4_ib_pvcm *pv)
{
	lockdep_assert_held(&pv->lock);
	pvcm_note_break();
	spin_unlock(&pv->lock);
	cond_resched();
	spin_lock(&pv->lock);
}

/* expire what is due, PVCM_BATCH entries and routes per lock hold */
static void pvcm_reap(struct work_struct *work)
{
	struct mlx4_ib_pvcm *pv = container_of(to_delayed_work(work),
					       struct mlx4_ib_pvcm, reaper);
	u32 now = jiffies;
	int i;

	spin_lock(&pv->lock);
	pv->reaper_armed = false;
	spin_unlock(&pv->lock);

	for (i = 0; i < MLX4_MFUNC_MAX; i++) {
		spin_lock(&pv->lock);
		while (!pvcm_reap_slave(pv, &pv->slaves[i], now))
			pvcm_lock_break(pv);
		spin_unlock(&pv->lock);
		cond_resched();
	}
}

/*
 * Release the stale entries of one list of a slave (on its TimeWait list,
 * where they already are released, take them out of sl_ids), PVCM_BATCH
 * entries per hold of pv->lock.  The list is set aside on a private one
 * meanwhile: the reaper does not see those entries until they are back,
 * events may still move them elsewhere (a list_move_tail() off the private
 * list is fine), and a stale entry is only ever moved by its release (see
 * pvcm_event_locked()).  The entries kept go back to the head of @list in
 * their order; what joined @list meanwhile is younger, so a FIFO stays in
 * deadline order.  @fifo: @list is a FIFO the reaper watches.  @released:
 * @list is the TimeWait list; the walk also counts the entries from before
 * this clean in nr_reset (none of them can be freed while set aside).
 */
static void pvcm_clean_list(struct mlx4_ib_pvcm *pv,
			    struct mlx4_ib_pvcm_slave *s,
			    struct list_head *list, bool released, bool fifo)
{
	struct pvcm_entry *e, *tmp;
	LIST_HEAD(todo);
	LIST_HEAD(keep);
	unsigned int n;

	spin_lock(&pv->lock);
	list_splice_init(list, &todo);
	if (released) {
		s->reset_epoch = (u32)atomic_read(&s->epoch);
		s->nr_reset = 0;
	}
	for (;;) {
		n = 0;
		list_for_each_entry_safe(e, tmp, &todo, link) {
			if (n++ == PVCM_BATCH)
				break;
			if (!pvcm_stale(pv, e)) {
				list_move_tail(&e->link, &keep);
				continue;
			}
			pvcm_unindex(pv, e);
			if (!released) {
				pvcm_release(pv, e);
				continue;
			}
			if (pvcm_before_reset(s, e))
				s->nr_reset++;
			list_move_tail(&e->link, &keep);
		}
		if (list_empty(&todo))
			break;
		pvcm_lock_break(pv);
	}
	list_splice(&keep, list);
	e = list_first_entry_or_null(list, struct pvcm_entry, link);
	if (e && fifo)
		pvcm_arm(pv, e->deadline);
	spin_unlock(&pv->lock);
}

/*
 * Forget the requests the slave paid for before its clean (delivered to
 * it, or sent by it to another VF), PVCM_BATCH routes per hold of
 * pv->lock.  They are set aside first: the routes that join the list
 * meanwhile are of requests after the clean.  So are those of the current
 * epoch, taken after the clean was asked for but before this work ran:
 * they go back to the head of their list, in their order, as the entries
 * of pvcm_clean_list() do.  Routes to the slave that another VF paid for
 * live out their time: the restarted VF has no connection to answer them
 * with.
 */
static void pvcm_clean_routes(struct mlx4_ib_pvcm *pv,
			      struct mlx4_ib_pvcm_slave *s)
{
	struct list_head todo[PVCM_ROUTE_LISTS], keep[PVCM_ROUTE_LISTS];
	struct pvcm_route *r, *rtmp;
	unsigned int i, n;
	bool left;

	spin_lock(&pv->lock);
	for (i = 0; i < PVCM_ROUTE_LISTS; i++) {
		INIT_LIST_HEAD(&todo[i]);
		INIT_LIST_HEAD(&keep[i]);
		list_splice_init(&s->routes[i], &todo[i]);
	}
	for (;;) {
		n = 0;
		left = false;
		for (i = 0; i < PVCM_ROUTE_LISTS; i++) {
			list_for_each_entry_safe(r, rtmp, &todo[i], link) {
				if (n == PVCM_BATCH)
					break;
				n++;
				if (r->epoch == (u32)atomic_read(&s->epoch))
					list_move_tail(&r->link, &keep[i]);
				else
					pvcm_route_free(pv, r);
			}
			left |= !list_empty(&todo[i]);
		}
		if (!left)
			break;
		pvcm_lock_break(pv);
	}
	for (i = 0; i < PVCM_ROUTE_LISTS; i++) {
		list_splice(&keep[i], &s->routes[i]);
		r = list_first_entry_or_null(&s->routes[i], struct pvcm_route,
					     link);
		if (r)
			pvcm_arm(pv, r->deadline);
	}
	spin_unlock(&pv->lock);
}

/*
 * Release every entry of @slave older than its current epoch.  A stale
 * entry only moves by its release, so one pass over each list finds all;
 * but for one move: from the loop FIFO to the pending one, when the REQ
 * is answered or pushed out (pvcm_loop_drop()), and the pending FIFO is
 * walked after.  While a list is walked its entries are off it, between
 * batches too: a REQ of the slave's new epoch then finds the loop FIFO
 * short of them, and the slave's limit of routes may be passed by at
 * most their number until the walk has released the stale ones.
 */
static void pvcm_clean_slave(struct mlx4_ib_pvcm *pv, int slave)
{
	struct mlx4_ib_pvcm_slave *s = &pv->slaves[slave];

	pvcm_clean_list(pv, s, &s->loop, false, true);
	pvcm_clean_list(pv, s, &s->pending, false, true);
	pvcm_clean_list(pv, s, &s->established, false, false);
	pvcm_clean_list(pv, s, &s->timewait, true, true);
	pvcm_clean_routes(pv, s);
}

static void pvcm_clean_work(struct work_struct *work)
{
	struct mlx4_ib_pvcm *pv = container_of(work, struct mlx4_ib_pvcm,
					       clean_work);
	int slave;

	for_each_set_bit(slave, pv->clean_mask, MLX4_MFUNC_MAX) {
		if (test_and_clear_bit(slave, pv->clean_mask))
			pvcm_clean_slave(pv, slave);
	}
}

/* ------------------------------------------------------------------------
 * (c) Policy: what each CM attribute does.  OUT is VF -> wire (multiplex),
 * IN is wire -> VF (demux).
 */
enum pvcm_out_action {
	PVCM_OUT_DROP,		/* not a CM attribute we forward */
	PVCM_OUT_CREATE,	/* starts a connection: find or create */
	PVCM_OUT_LOOKUP,	/* must belong to a known connection */
	PVCM_OUT_REJ,		/* REJ: see pvcm_multiplex() */
	PVCM_OUT_ANSWER,	/* SIDR_REP: only to a request the VF got */
};

enum pvcm_in_action {
	PVCM_IN_DROP,
	PVCM_IN_NEW,		/* new request: pick the slave, no id yet */
	PVCM_IN_LOOKUP,		/* remote id is one of our pv_cm_ids */
};

struct pvcm_policy {
	u8 out;
	u8 out_ev;
	u8 in;
	u8 in_ev;
};

#define PVCM_ATTR_FIRST	0x10	/* REQ */
#define PVCM_ATTR_IDX(n)	((n) - PVCM_ATTR_FIRST)

static const struct pvcm_policy pvcm_policy[] = {
	[PVCM_ATTR_IDX(0x10)] = {	/* REQ */
		PVCM_OUT_CREATE, PVCM_EV_REFRESH, PVCM_IN_NEW, PVCM_EV_NONE },
	[PVCM_ATTR_IDX(0x11)] = {	/* MRA */
		PVCM_OUT_CREATE, PVCM_EV_REFRESH,
		PVCM_IN_LOOKUP, PVCM_EV_REFRESH },
	[PVCM_ATTR_IDX(0x12)] = {	/* REJ */
		PVCM_OUT_REJ, PVCM_EV_RELEASE, PVCM_IN_LOOKUP, PVCM_EV_RELEASE },
	[PVCM_ATTR_IDX(0x13)] = {	/* REP */
		PVCM_OUT_CREATE, PVCM_EV_REVIVE,
		PVCM_IN_LOOKUP, PVCM_EV_REVIVE },
	[PVCM_ATTR_IDX(0x14)] = {	/* RTU */
		PVCM_OUT_LOOKUP, PVCM_EV_ESTABLISH,
		PVCM_IN_LOOKUP, PVCM_EV_ESTABLISH },
	[PVCM_ATTR_IDX(0x15)] = {	/* DREQ */
		PVCM_OUT_LOOKUP, PVCM_EV_RELEASE,
		PVCM_IN_LOOKUP, PVCM_EV_RELEASE },
	[PVCM_ATTR_IDX(0x16)] = {	/* DREP */
		PVCM_OUT_LOOKUP, PVCM_EV_RELEASE,
		PVCM_IN_LOOKUP, PVCM_EV_RELEASE },
	[PVCM_ATTR_IDX(0x17)] = {	/* SIDR_REQ */
		PVCM_OUT_CREATE, PVCM_EV_REFRESH, PVCM_IN_NEW, PVCM_EV_NONE },
	[PVCM_ATTR_IDX(0x18)] = {	/* SIDR_REP */
		PVCM_OUT_ANSWER, PVCM_EV_NONE, PVCM_IN_LOOKUP, PVCM_EV_RELEASE },
	[PVCM_ATTR_IDX(0x19)] = {	/* LAP: only on an established one */
		PVCM_OUT_LOOKUP, PVCM_EV_ESTABLISH,
		PVCM_IN_LOOKUP, PVCM_EV_ESTABLISH },
	[PVCM_ATTR_IDX(0x1a)] = {	/* APR */
		PVCM_OUT_LOOKUP, PVCM_EV_ESTABLISH,
		PVCM_IN_LOOKUP, PVCM_EV_ESTABLISH },
};

static const struct pvcm_policy *pvcm_policy_of(const struct ib_mad *mad)
{
	unsigned int attr = be16_to_cpu(mad->mad_hdr.attr_id);

	if (attr < PVCM_ATTR_FIRST ||
	    attr >= PVCM_ATTR_FIRST + ARRAY_SIZE(pvcm_policy))
		return NULL;
	return &pvcm_policy[PVCM_ATTR_IDX(attr)];
}

/*
 * Whether @ev could change @e, read without pv->lock: an RTU on an
 * established entry or a refresh of a pending entry whose deadline was set
 * during the last 1/64 of the idle timeout has nothing to do.  A stale
 * answer only costs the lock: the event functions re-check under it.
 */
static inline bool pvcm_event_needed(const struct pvcm_entry *e, u8 ev)
{
	u8 state = READ_ONCE(e->state);
	u32 left, timeout;

	switch (ev) {
	case PVCM_EV_REVIVE:
		if (state == PVCM_TIMEWAIT)
			return pvcm_flag(e, PVCM_F_IDLE);
		fallthrough;
	case PVCM_EV_REFRESH:
		if (state != PVCM_PENDING)
			return false;
		timeout = pvcm_pending_jiffies();
		left = READ_ONCE(e->deadline) - (u32)jiffies;
		return left > timeout || left < timeout - (timeout >> 6);
	case PVCM_EV_ESTABLISH:
		return state == PVCM_PENDING ||
		       (state == PVCM_TIMEWAIT && pvcm_flag(e, PVCM_F_IDLE));
	case PVCM_EV_RELEASE:
		/* in TimeWait: only an idle-expired entry has to end */
		if (state == PVCM_TIMEWAIT)
			return pvcm_flag(e, PVCM_F_IDLE);
		return state != PVCM_DEAD;
	case PVCM_EV_NONE:
		return false;
	}
	return true;
}

/*
 * Apply a lifecycle event.  The caller keeps @e readable: it is inside the
 * RCU read-side section of its lookup or holds a pin.
 */
VISIBLE_IF_PVCM_TEST void
pvcm_event(struct mlx4_ib_pvcm *pv, struct pvcm_entry *e, u8 ev)
{
	if (!pvcm_event_needed(e, ev))
		return;
	spin_lock(&pv->lock);
	pvcm_event_locked(pv, e, ev);
	spin_unlock(&pv->lock);
}

static void pvcm_event_locked(struct mlx4_ib_pvcm *pv, struct pvcm_entry *e,
			      u8 ev)
{
	lockdep_assert_held(&pv->lock);
	/* a stale entry belongs to the per-slave clean: only released */
	if (ev != PVCM_EV_RELEASE && pvcm_stale(pv, e))
		return;
	switch (ev) {
	case PVCM_EV_REVIVE:
		if (e->state == PVCM_TIMEWAIT) {
			pvcm_revive(pv, e, PVCM_PENDING);
			break;
		}
		fallthrough;
	case PVCM_EV_REFRESH:
		pvcm_ev_refresh(pv, e);
		break;
	case PVCM_EV_ESTABLISH:
		pvcm_ev_establish(pv, e);
		break;
	case PVCM_EV_RELEASE:
		pvcm_release(pv, e);
		break;
	}
}

/* count a dropped MAD; slave < 0 charges the device */
static int pvcm_drop(struct mlx4_ib_dev *dev, int slave, int err,
		     const struct ib_mad *mad, const char *why)
{
	struct mlx4_ib_pvcm *pv = &dev->sriov.pvcm;

	if (slave >= 0 && slave < MLX4_MFUNC_MAX && pv->slaves)
		atomic_long_inc(&pv->slaves[slave].dropped);
	else
		atomic_long_inc(&pv->dropped);
	ibdev_warn_ratelimited(&dev->ib_dev,
			       "pvcm: drop CM attr 0x%x slave %d: %s (%d)\n",
			       be16_to_cpu(mad->mad_hdr.attr_id), slave, why,
			       err);
	return err;
}

/*
 * A REP, an MRA of a REQ and a REJ of a REQ answer a REQ: their remote id
 * names the requester.  They are the only MADs from which a VF's entry
 * learns its peer.
 */
static inline bool pvcm_answers_req(const struct ib_mad *mad)
{
	if (pvcm_is_attr(mad, CM_REP_ATTR_ID))
		return true;
	if (pvcm_is_attr(mad, CM_MRA_ATTR_ID))
		return IBA_GET(CM_MRA_MESSAGE_MRAED,
			       (const struct cm_mra_msg *)mad) ==
		       PVCM_MRA_MSG_REQ;
	return pvcm_is_attr(mad, CM_REJ_ATTR_ID) && pvcm_rej_of_req(mad);
}

/*
 * What a VF's MAD tells about its own entry, before the MAD leaves: the
 * peer's comm id if it answers a REQ (checked by pvcm_check_answer()
 * first), else 0.  Every answer to a REQ names its receiver where a REP
 * does.
 */
static inline u32 pvcm_out_peer(const struct ib_mad *mad, bool answers)
{
	return answers ? pvcm_get_receiver(mad, false) : 0;
}

/*
 * May @slave answer the REQ from @peer (@answers: the VF's MAD is an
 * answer to a REQ)?  Only one delivered to it on @port: the pv ids of
 * other VFs' pending REQs can be guessed, and the first answer to reach
 * one (over the wire, or looped back to this master) would take that
 * connection over or end it.  Once @e knows its peer, an answer must name
 * that peer.  Other MADs of the VF are left to the far end, which checks
 * the pair of ids they carry (pvcm_from_peer() here).
 * Return: 1 if a route of a delivered REQ allows the answer (the entry is
 * about to learn its peer from it), 0 if nothing needs a route, -EPERM.
 */
static inline int pvcm_check_answer(struct mlx4_ib_pvcm *pv, int port,
				    u32 slave, const struct pvcm_entry *e,
				    bool answers, u32 peer)
{
	u32 known;

	if (!answers)
		return 0;
	known = e ? READ_ONCE(e->remote_id) : 0;
	if (known)
		return peer == known ? 0 : -EPERM;
	return pvcm_req_delivered(pv, port, peer, slave) ? 1 : -EPERM;
}

static bool pvcm_out_sidr(const struct ib_mad *mad)
{
	return pvcm_is_attr(mad, CM_SIDR_REQ_ATTR_ID);
}

/*
 * Learn @peer and @sidr from a VF's MAD for an entry that exists.
 * Return: false if the entry already knows a peer other than @peer (a
 * concurrent answer to another requester won).
 */
static inline bool pvcm_note_out(struct pvcm_entry *e, u32 peer, bool sidr)
{
	u32 known;

	if (sidr) {
		if (!READ_ONCE(e->sidr))
			WRITE_ONCE(e->sidr, 1);
		return true;
	}
	if (!peer)
		return true;
	known = READ_ONCE(e->remote_id);
	if (!known)
		known = cmpxchg(&e->remote_id, 0, peer);
	return !known || known == peer;
}

/*
 * pvcm_out_map() for a MAD whose (slave, sl_cm_id) has no entry it may
 * use: none, or one that is stale, in TimeWait or cannot be revived,
 * which pvcm_create() replaces in the (slave, sl_cm_id) index.
 * Return: as pvcm_check_answer(), or the error of the creation.
 */
static noinline int pvcm_out_create(struct mlx4_ib_pvcm *pv, int port,
				    u32 slave, u32 sl_cm_id, struct ib_mad *mad,
				    u8 ev, bool answers, u32 peer,
				    struct pvcm_loop loop)
{
	int ret, routed;
	u32 pv_cm_id;

	/* the new entry is published knowing what this MAD tells */
	routed = pvcm_check_answer(pv, port, slave, NULL, answers, peer);
	if (routed < 0)
		return routed;
	ret = pvcm_create(pv, slave, sl_cm_id, peer, pvcm_out_sidr(mad), loop,
			  ev, &pv_cm_id);
	if (ret)
		return ret;
	pvcm_set_first(mad, pv_cm_id);
	return routed;
}

/* how pvcm_out_map() treats a MAD */
#define PVCM_MAP_CREATE		BIT(0)	/* make a missing entry */
#define PVCM_MAP_TIMEWAIT	BIT(1)	/* an entry in TimeWait may serve */

/*
 * Rewrite the VF's local id (sl_cm_id) of @mad to the pv_cm_id of
 * (@slave, sl_cm_id) and apply @ev.  An existing entry is used inside RCU;
 * with PVCM_MAP_CREATE in @flags a missing one is made (outside RCU:
 * creating may sleep).  No reference is taken either way.  @loop: where
 * the MAD goes if it is a REQ to a VF of this master (pvcm_loop_of()).
 * Return: 0, -ENOENT if there is no entry to use and none is to be made,
 * -EPERM for an answer to a REQ the VF did not get, -EEXIST for a REQ to
 * another VF on an id in use for something else, or the error of the
 * creation.
 */
static int pvcm_out_map(struct mlx4_ib_pvcm *pv, int port, u32 slave,
			struct ib_mad *mad, u8 ev, unsigned int flags,
			struct pvcm_loop loop)
{
	bool answers = pvcm_answers_req(mad);
	u32 peer = pvcm_out_peer(mad, answers);
	u32 sl_cm_id = pvcm_get_first(mad);
	struct pvcm_entry *e;
	int routed;

	rcu_read_lock();
	e = pvcm_find_sl(pv, slave, sl_cm_id);
	if (!e || !(pvcm_accept(pv, e, flags & PVCM_MAP_TIMEWAIT) ||
		    (ev == PVCM_EV_REVIVE && pvcm_revivable(pv, e)))) {
		rcu_read_unlock();
		if (!(flags & PVCM_MAP_CREATE))
			return -ENOENT;
		routed = pvcm_out_create(pv, port, slave, sl_cm_id, mad, ev,
					 answers, peer, loop);
		goto out;
	}
	routed = pvcm_check_answer(pv, port, slave, e, answers, peer);
	if (routed >= 0 && !pvcm_note_out(e, peer, pvcm_out_sidr(mad)))
		routed = -EPERM;
	/* (a REQ: no answer to check, no peer or SIDR flag to note) */
	if (unlikely(loop.flags) && routed >= 0)
		routed = pvcm_loop_use(pv, e, port, loop);
	if (routed >= 0) {
		pvcm_set_first(mad, e->pv_cm_id);
		pvcm_event(pv, e, ev);
	}
	rcu_read_unlock();
out:
	if (routed < 0)
		return routed;
	if (routed)	/* the entry knows its peer now */
		pvcm_route_forget(pv, port, peer, slave);
	return 0;
}

#define PVCM_NOT_ASKED	"answers a REQ this VF did not get"
#define PVCM_NOT_MEMBER	"slave not in the MAD's partition"
#define PVCM_ID_IN_USE	"REQ to a VF on an id in use"

/*
 * Where a VF's REQ goes, if to a VF of this master (see DOC: VF-to-VF
 * requests); flags 0 if not.  The target is found by the REQ's GID as
 * the demux finds it (IB); on RoCE the master cannot tell here, and the
 * demux charges the REQ's routes to the target as for a REQ from the
 * wire.
 */
static noinline struct pvcm_loop pvcm_loop_of(struct mlx4_ib_dev *dev,
					      int port,
					      const struct ib_mad *mad)
{
	struct pvcm_loop loop = {};
	int s;

	BUILD_BUG_ON(MLX4_MFUNC_MAX > 256);	/* a u8 in the entry */
	if (port != 1 && port != 2)
		return loop;
	s = mlx4_ib_find_real_gid(&dev->ib_dev, port,
				  pvcm_req_dest_if_id(mad));
	if (s < 0 || s >= MLX4_MFUNC_MAX)
		return loop;
	loop.flags = PVCM_F_LOOP | (port == 2 ? PVCM_F_LOOP_PORT2 : 0);
	loop.slave = s;
	return loop;
}

VISIBLE_IF_PVCM_TEST int
pvcm_multiplex(struct mlx4_ib_dev *dev, int port, int slave, struct ib_mad *mad,
	       size_t len)
{
	struct mlx4_ib_pvcm *pv = &dev->sriov.pvcm;
	const struct pvcm_policy *pol;
	unsigned int flags = 0;
	struct pvcm_loop loop = {};
	u32 peer;
	int ret;

	if (!READ_ONCE(pv->ready))
		return -ENODEV;
	if (slave < 0 || slave >= MLX4_MFUNC_MAX)
		return pvcm_drop(dev, -1, -EINVAL, mad, "bad slave");
	ret = pvcm_check_mad(mad, len);
	if (ret)
		return pvcm_drop(dev, slave, ret, mad, "malformed");
	pol = pvcm_policy_of(mad);
	if (!pol || pol->out == PVCM_OUT_DROP)
		return pvcm_drop(dev, slave, -EINVAL, mad, "unknown attribute");
	if (pol->out == PVCM_OUT_ANSWER) {
		/* the request id is the requester's: it must have asked us */
		if (!pvcm_sidr_delivered(pv, pvcm_get_first(mad),
					 slave))
			return pvcm_drop(dev, slave, -ENOENT, mad,
					 "answers no request of this VF");
		return 0;
	}
	/* from here on every message carries the VF's id first */
	switch (pol->out) {
	case PVCM_OUT_CREATE:
		/* an MRA of a REP or LAP needs the connection it delays */
		if (!pvcm_is_attr(mad, CM_MRA_ATTR_ID) || pvcm_answers_req(mad))
			flags = PVCM_MAP_CREATE;
		if (pvcm_is_attr(mad, CM_REQ_ATTR_ID))
			loop = pvcm_loop_of(dev, port, mad);
		ret = pvcm_out_map(pv, port, slave, mad, pol->out_ev, flags,
				   loop);
		if (ret)
			return pvcm_drop(dev, slave, ret, mad,
					 ret == -EDQUOT ? "over the per-VF cap" :
					 ret == -EPERM ? PVCM_NOT_ASKED :
					 ret == -EEXIST ? PVCM_ID_IN_USE :
					 "cannot map");
		return 0;
	case PVCM_OUT_REJ:
		/*
		 * A REJ of an unknown id can only reject a REQ the VF never
		 * answered: it has no id of the VF's to map, and the local id
		 * goes out as 0 so that it cannot name another VF's
		 * connection.  A REJ(timeout) of an unknown id is dropped: no
		 * peer knows a pv_cm_id for it, a new one would route nothing.
		 */
		ret = pvcm_out_map(pv, port, slave, mad, pol->out_ev,
				   PVCM_MAP_TIMEWAIT, loop);
		if (ret == -ENOENT && !pvcm_rej_timeout(mad)) {
			if (!pvcm_rej_of_req(mad))
				return pvcm_drop(dev, slave, ret, mad,
						 "REJ of no connection of this VF");
			peer = pvcm_out_peer(mad, true);
			ret = pvcm_check_answer(pv, port, slave, NULL, true,
						peer);
			if (ret < 0)
				return pvcm_drop(dev, slave, ret, mad,
						 PVCM_NOT_ASKED);
			pvcm_route_forget(pv, port, peer, slave);
			pvcm_set_first(mad, 0);
			return 0;
		}
		if (ret)
			return pvcm_drop(dev, slave, ret, mad,
					 ret == -EPERM ? PVCM_NOT_ASKED :
					 "cannot map");
		return 0;
	default:
		ret = pvcm_out_map(pv, port, slave, mad, pol->out_ev,
				   PVCM_MAP_TIMEWAIT, loop);
		if (ret)
			return pvcm_drop(dev, slave, ret, mad,
					 "unknown local id");
		return 0;
	}
}

/*
 * Is the REQ from @comm_id one a VF of this master sent to @slave on
 * @port?  Its entry then carries its routes (pvcm_loop_route()), also when
 * @slave may not answer it any more: the sender's newer REQs pushed it
 * out, and the sender's retry brings it back; a route charged to @slave
 * instead would let one VF's flood push out another's routes.  A wire
 * REQ with the same comm id, to the same VF, is taken for it.
 */
static bool pvcm_loop_req(struct mlx4_ib_pvcm *pv, int port, u32 comm_id,
			  int slave)
{
	bool loop;

	rcu_read_lock();
	loop = pvcm_loop_find(pv, port, comm_id, slave, 0);
	rcu_read_unlock();
	return loop;
}

static noinline int pvcm_demux_new(struct mlx4_ib_dev *dev, int port,
				   u16 pkey_index, int *slave, bool fixed,
				   struct ib_mad *mad)
{
	u32 comm_id = pvcm_get_first(mad);
	struct mlx4_ib_pvcm *pv = &dev->sriov.pvcm;
	struct pvcm_route_key key = {};
	__be64 if_id;
	int s, ret;

	/*
	 * A SIDR_REQ names no local port GID: it stays with the slave the
	 * caller picked from the GRH (or the master without one).  Only that
	 * slave may answer it.
	 */
	if (pvcm_is_attr(mad, CM_SIDR_REQ_ATTR_ID)) {
		if (*slave < 0 || *slave >= MLX4_MFUNC_MAX)
			return 0;
		if (!mlx4_ib_slave_has_pkey(dev, *slave, port, pkey_index))
			return pvcm_drop(dev, -1, -EPERM, mad, PVCM_NOT_MEMBER);
		key.comm_id = comm_id;
		key.kind = PVCM_ROUTE_SIDR;
		key.slave = *slave;
		ret = pvcm_route_note(pv, &key, *slave, *slave);
		if (ret)	/* the VF's answer will be dropped */
			ibdev_dbg(&dev->ib_dev,
				  "pvcm: SIDR_REQ route not kept (%d)\n", ret);
		return 0;
	}
	/* RoCE: mad.c chose the slave by GID; no REJ(timeout) route */
	if (fixed) {
		s = *slave;
	} else {
		if_id = pvcm_req_dest_if_id(mad);
		s = mlx4_ib_find_real_gid(&dev->ib_dev, port, if_id);
		if (s < 0 || s >= MLX4_MFUNC_MAX)
			return pvcm_drop(dev, -1, -ENOENT, mad,
					 "no slave owns the GID");
	}
	if (!mlx4_ib_slave_has_pkey(dev, s, port, pkey_index)) {
		/* a VF's REQ to it could be answered from its multiplex on */
		pvcm_route_forget(pv, port, comm_id, s);
		return pvcm_drop(dev, -1, -EPERM, mad, PVCM_NOT_MEMBER);
	}
	if (!fixed)
		*slave = s;
	/* a REQ of a VF of this master: its entry carries the routes */
	if (pvcm_loop_req(pv, port, comm_id, s))
		return 0;
	if (!fixed) {
		key.ca_guid = pvcm_req_guid(mad);
		key.comm_id = comm_id;
		key.port = port;
		ret = pvcm_route_note(pv, &key, s, s);
		if (ret)	/* only a REJ(timeout) of this REQ suffers */
			ibdev_dbg(&dev->ib_dev,
				  "pvcm: REQ route not kept (%d)\n", ret);
	}
	/* without this route the VF's answer is dropped; the REQ is resent */
	key = (struct pvcm_route_key) {
		.comm_id = comm_id, .port = port, .kind = PVCM_ROUTE_ANSWER,
		.slave = s,
	};
	ret = pvcm_route_note(pv, &key, s, s);
	if (ret)
		return pvcm_drop(dev, s, ret, mad, "REQ not remembered");
	return 0;
}

/*
 * May this MAD from the wire act on @e?  A SIDR_REP only on a SIDR entry.
 * A connection MAD only when it comes from the connection's peer: once
 * the peer's comm id is known, the MAD must carry it as the sender's id;
 * before that (the VF sent a REQ, nothing came back) only an answer to
 * the REQ is expected: the peer's REP, which makes its id known, an MRA
 * or a REJ of the REQ.
 */
static bool pvcm_from_peer(struct pvcm_entry *e, const struct ib_mad *mad,
			   bool sidr_rep)
{
	u32 sender, peer;

	if (sidr_rep)
		return READ_ONCE(e->sidr);
	if (READ_ONCE(e->sidr))
		return false;
	sender = pvcm_get_first(mad);
	peer = READ_ONCE(e->remote_id);
	if (!peer && pvcm_is_attr(mad, CM_REP_ATTR_ID)) {
		if (!sender)	/* a REP names its sender */
			return false;
		peer = cmpxchg(&e->remote_id, 0, sender) ?: sender;
	}
	if (peer)
		return sender == peer;
	return pvcm_answers_req(mad);
}

/*
 * A wire MAD whose remote id is no usable pv_cm_id: only a REJ(timeout)
 * of a REQ still has a route (IB: the REQ's GID chose the slave).
 */
static __cold int pvcm_demux_unknown(struct mlx4_ib_dev *dev, int port,
				     u16 pkey_index, int *slave, bool fixed,
				     const struct ib_mad *mad)
{
	int s;

	if (!fixed && pvcm_rej_timeout(mad)) {
		s = pvcm_route_lookup(&dev->sriov.pvcm, port,
				      pvcm_get_first(mad),
				      pvcm_rej_guid(mad));
		if (s >= 0) {
			if (!mlx4_ib_slave_has_pkey(dev, s, port, pkey_index))
				return pvcm_drop(dev, -1, -EPERM, mad,
						 PVCM_NOT_MEMBER);
			*slave = s;
			return 0;
		}
	}
	return pvcm_drop(dev, -1, -ENOENT, mad, "unknown remote id");
}

/*
 * @fixed: the caller chose *@slave (RoCE, by GID) and the MAD may only
 * reach an entry of that slave; otherwise *@slave is set from the entry.
 * @pkey_index: where the MAD's P_Key is in the port's table.  mad.c
 * delivers a MAD only to a member of its partition, and that is checked
 * after this handler: a MAD the VF would not get must not act on its
 * entries or routes either (a node of another partition could otherwise
 * take the VF's pending connection over, unseen by the VF).
 */
VISIBLE_IF_PVCM_TEST int
pvcm_demux(struct mlx4_ib_dev *dev, int port, u16 pkey_index, int *slave,
	   bool fixed, struct ib_mad *mad, size_t len)
{
	struct mlx4_ib_pvcm *pv = &dev->sriov.pvcm;
	const struct pvcm_policy *pol;
	struct pvcm_entry *e;
	const char *why;
	bool sidr_rep;
	u32 pv_cm_id;
	int ret;

	if (!READ_ONCE(pv->ready))
		return -ENODEV;
	ret = pvcm_check_mad(mad, len);
	if (ret)
		return pvcm_drop(dev, -1, ret, mad, "malformed");
	pol = pvcm_policy_of(mad);
	if (!pol || pol->in == PVCM_IN_DROP)
		return pvcm_drop(dev, -1, -EINVAL, mad, "unknown attribute");
	if (pol->in == PVCM_IN_NEW)
		return pvcm_demux_new(dev, port, pkey_index, slave, fixed, mad);

	/* every other message names its receiver */
	sidr_rep = pvcm_is_attr(mad, CM_SIDR_REP_ATTR_ID);
	pv_cm_id = pvcm_get_receiver(mad, sidr_rep);

	/* no reference: everything happens inside the RCU section */
	rcu_read_lock();
	e = pvcm_find_pv(pv, pv_cm_id);
	if (!e || !pvcm_usable(pv, e)) {
		rcu_read_unlock();
		return pvcm_demux_unknown(dev, port, pkey_index, slave, fixed,
					  mad);
	}
	if (fixed && e->key.slave != *slave) {
		why = "pv id of another slave";
	} else if (!mlx4_ib_slave_has_pkey(dev, e->key.slave, port,
					   pkey_index)) {
		why = PVCM_NOT_MEMBER;
	} else if (!pvcm_from_peer(e, mad, sidr_rep)) {
		why = "not from the connection's peer";
	} else {
		*slave = e->key.slave;
		pvcm_set_receiver(mad, sidr_rep, e->key.sl_cm_id);
		pvcm_event(pv, e, pol->in_ev);
		rcu_read_unlock();
		return 0;
	}
	rcu_read_unlock();
	return pvcm_drop(dev, -1, -EPERM, mad, why);
}

/**
 * mlx4_ib_multiplex_cm_handler() - map a VF's outgoing CM MAD
 * @ibdev: the master's IB device
 * @port: port the MAD leaves on
 * @slave_id: the sending VF
 * @mad: the MAD; its local comm id is rewritten in place
 *
 * Context: process context, may sleep.
 * Return: 0 to send the MAD, a negative errno to drop it.
 */
int mlx4_ib_multiplex_cm_handler(struct ib_device *ibdev, int port,
				 int slave_id, struct ib_mad *mad)
{
	return pvcm_multiplex(to_mdev(ibdev), port, slave_id, mad,
			      sizeof(*mad));
}

/**
 * mlx4_ib_demux_cm_handler() - map an incoming CM MAD to its VF
 * @ibdev: the master's IB device
 * @port: port the MAD arrived on
 * @slave: in: the VF mad.c picked from the GRH (used for a SIDR_REQ);
 *	out: the destination VF
 * @pkey_index: the P_Key index the MAD arrived with (the work
 *	completion's); a VF that is no member of that partition is not
 *	acted for (mlx4_ib_slave_has_pkey())
 * @mad: the MAD; its remote comm id is rewritten in place
 *
 * Context: process context, may sleep.
 * Return: 0 to deliver the MAD, a negative errno to drop it.
 */
int mlx4_ib_demux_cm_handler(struct ib_device *ibdev, int port, int *slave,
			     u16 pkey_index, struct ib_mad *mad)
{
	if (!slave)
		return pvcm_drop(to_mdev(ibdev), -1, -EINVAL, mad, "no slave");
	return pvcm_demux(to_mdev(ibdev), port, pkey_index, slave, false, mad,
			  sizeof(*mad));
}

/**
 * mlx4_ib_demux_cm_handler_to_slave() - map an incoming CM MAD for a VF
 * @ibdev: the master's IB device
 * @port: port the MAD arrived on
 * @slave: the VF the caller delivers the MAD to (RoCE: by destination GID)
 * @pkey_index: the P_Key index the MAD arrived with, as for
 *	mlx4_ib_demux_cm_handler()
 * @mad: the MAD; its remote comm id is rewritten in place
 *
 * A MAD whose pv_cm_id belongs to another VF is dropped unchanged.
 *
 * Context: process context, may sleep.
 * Return: 0 to deliver the MAD to @slave, a negative errno to drop it.
 */
int mlx4_ib_demux_cm_handler_to_slave(struct ib_device *ibdev, int port,
				      int slave, u16 pkey_index,
				      struct ib_mad *mad)
{
	if (slave < 0 || slave >= MLX4_MFUNC_MAX)
		return pvcm_drop(to_mdev(ibdev), -1, -EINVAL, mad, "bad slave");
	return pvcm_demux(to_mdev(ibdev), port, pkey_index, &slave, true, mad,
			  sizeof(*mad));
}

/**
 * mlx4_ib_pvcm_lookup() - the VF connection a pv_cm_id stands for
 * @dev: the master's device
 * @pv_cm_id: a local comm id the multiplexer put into a MAD
 * @slave: set to the VF the id belongs to, on success only
 * @sl_cm_id: set to that VF's own comm id, on success only
 *
 * For diagnostics: changes no state and takes no reference, so the
 * answer may be out of date as soon as it is returned.  An entry in
 * TimeWait is found, one of a VF that was cleaned since is not.
 *
 * Context: any context, but never concurrently with
 * mlx4_ib_cm_paravirt_destroy().
 * Return: 0, -ENODEV if the cache is not set up, -ENOENT if it holds no
 * entry for @pv_cm_id.
 */
int mlx4_ib_pvcm_lookup(struct mlx4_ib_dev *dev, u32 pv_cm_id, int *slave,
			u32 *sl_cm_id)
{
	struct mlx4_ib_pvcm *pv = &dev->sriov.pvcm;
	struct pvcm_entry *e;
	int ret = -ENOENT;

	if (!READ_ONCE(pv->ready))
		return -ENODEV;
	rcu_read_lock();
	e = pvcm_find_pv(pv, pv_cm_id);
	if (e && pvcm_usable(pv, e)) {
		*slave = e->key.slave;
		*sl_cm_id = e->key.sl_cm_id;
		ret = 0;
	}
	rcu_read_unlock();
	return ret;
}

/* ------------------------------------------------------------------------
 * Counters and debugfs.
 */
static void pvcm_slave_stats(struct mlx4_ib_pvcm *pv, int slave,
			     struct mlx4_ib_pvcm_stats *st)
{
	struct mlx4_ib_pvcm_slave *s = &pv->slaves[slave];
	int i;

	lockdep_assert_held(&pv->lock);
	st->live += s->nr_live;
	st->timewait += s->nr_timewait;
	st->allocated += s->allocated;
	st->freed += s->freed;
	st->routes += s->nr_loop;
	for (i = 0; i < PVCM_ROUTE_LISTS; i++)
		st->routes += s->nr_routes[i];
	st->dropped += atomic_long_read(&s->dropped);
	st->cap_hits += atomic_long_read(&s->cap_hits);
}

/**
 * mlx4_ib_pvcm_get_stats() - read the PV-CM counters
 * @dev: the device
 * @slave: a slave number, or -1 for the device totals
 * @st: filled with the counters
 *
 * May run at any time while the device is registered (its hardware
 * counters are read through here), teardown included: the counters are
 * read in one hold of pv->lock, and a cache that is being torn down
 * answers -ENODEV.
 *
 * Context: process context.
 * Return: 0, -ENODEV if the cache is not set up (or is going away),
 * -EINVAL for a bad @slave.
 */
int mlx4_ib_pvcm_get_stats(struct mlx4_ib_dev *dev, int slave,
			   struct mlx4_ib_pvcm_stats *st)
{
	struct mlx4_ib_pvcm *pv = &dev->sriov.pvcm;
	int i, ret = 0;

	memset(st, 0, sizeof(*st));
	/* pairs with the release in init: the lock and slaves are set up */
	if (!smp_load_acquire(&pv->ready))
		return -ENODEV;
	if (slave >= MLX4_MFUNC_MAX || slave < -1)
		return -EINVAL;
	spin_lock(&pv->lock);
	if (pv->dying || !pv->slaves) {
		ret = -ENODEV;
	} else if (slave >= 0) {
		pvcm_slave_stats(pv, slave, st);
	} else {
		for (i = 0; i < MLX4_MFUNC_MAX; i++)
			pvcm_slave_stats(pv, i, st);
		st->dropped += atomic_long_read(&pv->dropped);
	}
	spin_unlock(&pv->lock);
	return ret;
}

/* Names of the device totals among the device's hardware counters. */
const struct rdma_stat_desc mlx4_ib_pvcm_hw_stat_descs[MLX4_IB_PVCM_HW_STATS] = {
	[MLX4_IB_PVCM_HW_LIVE] = { .name = "pvcm_live" },
	[MLX4_IB_PVCM_HW_TIMEWAIT] = { .name = "pvcm_timewait" },
	[MLX4_IB_PVCM_HW_ALLOCATED] = { .name = "pvcm_allocated" },
	[MLX4_IB_PVCM_HW_FREED] = { .name = "pvcm_freed" },
	[MLX4_IB_PVCM_HW_DROPPED] = { .name = "pvcm_dropped" },
	[MLX4_IB_PVCM_HW_CAP_HITS] = { .name = "pvcm_cap_hits" },
	[MLX4_IB_PVCM_HW_ROUTES] = { .name = "pvcm_routes" },
};

/**
 * mlx4_ib_pvcm_hw_stats() - read the device totals as hardware counters
 * @dev: the device
 * @value: filled with MLX4_IB_PVCM_HW_STATS values, indexed as
 *	mlx4_ib_pvcm_hw_stat_descs
 *
 * All zero while the cache is not set up or is being torn down (see
 * mlx4_ib_pvcm_get_stats()).
 *
 * Context: process context, as the device's get_hw_stats op.
 */
void mlx4_ib_pvcm_hw_stats(struct mlx4_ib_dev *dev, u64 *value)
{
	struct mlx4_ib_pvcm_stats st;

	mlx4_ib_pvcm_get_stats(dev, -1, &st);
	value[MLX4_IB_PVCM_HW_LIVE] = st.live;
	value[MLX4_IB_PVCM_HW_TIMEWAIT] = st.timewait;
	value[MLX4_IB_PVCM_HW_ALLOCATED] = st.allocated;
	value[MLX4_IB_PVCM_HW_FREED] = st.freed;
	value[MLX4_IB_PVCM_HW_DROPPED] = st.dropped;
	value[MLX4_IB_PVCM_HW_CAP_HITS] = st.cap_hits;
	value[MLX4_IB_PVCM_HW_ROUTES] = st.routes;
}

static void pvcm_show_line(struct seq_file *m, const char *who,
			   const struct mlx4_ib_pvcm_stats *st)
{
	seq_printf(m, "%-8s %8llu %8llu %10llu %10llu %8llu %8llu %8llu\n",
		   who, st->live, st->timewait, st->allocated, st->freed,
		   st->dropped, st->cap_hits, st->routes);
}

static int pvcm_stats_show(struct seq_file *m, void *unused)
{
	struct mlx4_ib_dev *dev = m->private;
	struct mlx4_ib_pvcm_stats st;
	char who[16];
	int i;

	if (mlx4_ib_pvcm_get_stats(dev, -1, &st))
		return 0;
	seq_puts(m, "who          live timewait  allocated      freed  dropped cap_hits   routes\n");
	pvcm_show_line(m, "total", &st);
	for (i = 0; i < MLX4_MFUNC_MAX; i++) {
		mlx4_ib_pvcm_get_stats(dev, i, &st);
		if (!st.allocated && !st.dropped && !st.routes)
			continue;
		snprintf(who, sizeof(who), "slave%d", i);
		pvcm_show_line(m, who, &st);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(pvcm_stats);

static void pvcm_debugfs_init(struct mlx4_ib_dev *dev)
{
	struct mlx4_ib_pvcm *pv = &dev->sriov.pvcm;
	const char *name = dev_name(&dev->ib_dev.dev);
	struct dentry *dir;

	if (!pvcm_debugfs_root)
		return;
	pv->debugfs = debugfs_create_dir(name ? name : "unnamed",
					 pvcm_debugfs_root);
	dir = debugfs_create_dir("pvcm", pv->debugfs);
	debugfs_create_file("stats", 0444, dir, dev, &pvcm_stats_fops);
	debugfs_create_u32("max_per_vf", 0444, dir, &pvcm_max_per_vf);
}

/* ------------------------------------------------------------------------
 * Set up and tear down.
 */

/**
 * mlx4_ib_cm_paravirt_init() - set up the PV-CM id cache of a master
 * @dev: the device
 *
 * Does nothing on a VF.  If memory is short the cache stays off and the
 * handlers drop every CM MAD of the VFs.
 */
void mlx4_ib_cm_paravirt_init(struct mlx4_ib_dev *dev)
{
	struct mlx4_ib_pvcm *pv = &dev->sriov.pvcm;
	int i, j;

	/*
	 * The multiplier of pvcm_sl_hash(), once, before the first table:
	 * it never changes under one (pvcm_priv.h).
	 */
	get_random_once(&pvcm_sl_mul, sizeof(pvcm_sl_mul));
	memset(pv, 0, sizeof(*pv));
	spin_lock_init(&pv->lock);
	xa_init_flags(&pv->pv_ids, XA_FLAGS_ALLOC1);
	pv->id_xor = get_random_u32() | BIT(31);
	INIT_DELAYED_WORK(&pv->reaper, pvcm_reap);
	INIT_WORK(&pv->clean_work, pvcm_clean_work);
	if (!mlx4_is_master(dev->dev))
		return;

	pv->slaves = kvcalloc(MLX4_MFUNC_MAX, sizeof(*pv->slaves), GFP_KERNEL);
	if (!pv->slaves)
		goto err;
	for (i = 0; i < MLX4_MFUNC_MAX; i++) {
		INIT_LIST_HEAD(&pv->slaves[i].pending);
		INIT_LIST_HEAD(&pv->slaves[i].established);
		INIT_LIST_HEAD(&pv->slaves[i].timewait);
		INIT_LIST_HEAD(&pv->slaves[i].loop);
		for (j = 0; j < PVCM_ROUTE_LISTS; j++)
			INIT_LIST_HEAD(&pv->slaves[i].routes[j]);
	}
	if (rhashtable_init(&pv->sl_ids, &pvcm_sl_params))
		goto err_slaves;
	if (rhashtable_init(&pv->routes, &pvcm_route_params))
		goto err_sl_ids;
	pvcm_debugfs_init(dev);
	/* pairs with the acquire in mlx4_ib_pvcm_get_stats() */
	smp_store_release(&pv->ready, true);
	return;

err_sl_ids:
	rhashtable_destroy(&pv->sl_ids);
err_slaves:
	kvfree(pv->slaves);
	pv->slaves = NULL;
err:
	ibdev_err(&dev->ib_dev, "pvcm: no memory, VF CM traffic is dropped\n");
}

/*
 * Free up to PVCM_BATCH of @s's entries and routes at teardown.
 * Return: false if some are left.
 */
static bool pvcm_teardown_batch(struct mlx4_ib_pvcm *pv,
				struct mlx4_ib_pvcm_slave *s)
{
	struct list_head *lists[] = { &s->loop, &s->pending, &s->established,
				      &s->timewait };
	struct pvcm_route *r;
	unsigned int i, n = 0;

	lockdep_assert_held(&pv->lock);
	for (i = 0; i < ARRAY_SIZE(lists); i++) {
		while (!list_empty(lists[i])) {
			if (n++ == PVCM_BATCH)
				return false;
			pvcm_final(pv, list_first_entry(lists[i],
							struct pvcm_entry,
							link));
		}
	}
	for (i = 0; i < PVCM_ROUTE_LISTS; i++) {
		while ((r = list_first_entry_or_null(&s->routes[i],
						     struct pvcm_route, link))) {
			if (n++ == PVCM_BATCH)
				return false;
			pvcm_route_free(pv, r);
		}
	}
	return true;
}

static void pvcm_teardown(struct mlx4_ib_pvcm *pv)
{
	struct mlx4_ib_pvcm_slave *slaves;
	int i;

	/* the handlers take no more MADs before anything goes away */
	WRITE_ONCE(pv->ready, false);
	spin_lock(&pv->lock);
	pv->dying = true;
	spin_unlock(&pv->lock);
	cancel_delayed_work_sync(&pv->reaper);
	cancel_work_sync(&pv->clean_work);

	for (i = 0; i < MLX4_MFUNC_MAX; i++) {
		spin_lock(&pv->lock);
		while (!pvcm_teardown_batch(pv, &pv->slaves[i]))
			pvcm_lock_break(pv);
		spin_unlock(&pv->lock);
		cond_resched();
	}

	debugfs_remove(pv->debugfs);
	pv->debugfs = NULL;
	rhashtable_destroy(&pv->routes);
	rhashtable_destroy(&pv->sl_ids);
	WARN_ON(!xa_empty(&pv->pv_ids));
	xa_destroy(&pv->pv_ids);
	/* a counter reader that took the lock before ->dying is done */
	spin_lock(&pv->lock);
	slaves = pv->slaves;
	pv->slaves = NULL;
	spin_unlock(&pv->lock);
	kvfree(slaves);
}

/**
 * mlx4_ib_cm_paravirt_clean() - forget the id mappings of one VF
 * @dev: the device
 * @slave: the VF
 *
 * The VF's entries move to TimeWait (their pv_cm_ids stay reserved); the
 * work is deferred, so this may be called from the mlx4 event callback in
 * atomic context, including the EQ interrupt.  Entries the VF creates after
 * the call are kept.  A slave number out of range cleans nothing: it is
 * counted in &struct mlx4_ib_pvcm.bad_cleans and reported rate limited.
 * The full teardown is mlx4_ib_cm_paravirt_destroy(), which no slave
 * number reaches.
 *
 * Context: any context.
 */
void mlx4_ib_cm_paravirt_clean(struct mlx4_ib_dev *dev, int slave)
{
	struct mlx4_ib_pvcm *pv = &dev->sriov.pvcm;

	if (!READ_ONCE(pv->ready))
		return;
	if (slave < 0 || slave >= MLX4_MFUNC_MAX) {
		atomic_long_inc(&pv->bad_cleans);
		ibdev_warn_ratelimited(&dev->ib_dev,
				       "pvcm: clean of slave %d ignored: out of range\n",
				       slave);
		return;
	}
	atomic_inc(&pv->slaves[slave].epoch);
	set_bit(slave, pv->clean_mask);
	queue_work(cm_wq, &pv->clean_work);
}

/**
 * mlx4_ib_cm_paravirt_destroy() - tear the PV-CM id cache down
 * @dev: the device
 *
 * Frees every entry and route at once and destroys the cache; the handlers
 * drop MADs afterwards.  Called when the device goes away, after mlx4 core
 * stopped delivering events and the tunnel QPs that feed the handlers are
 * gone: no handler, mlx4_ib_pvcm_lookup() or mlx4_ib_cm_paravirt_clean()
 * call may still be running or start while this runs.  The cache's ready
 * flag only turns away the calls made before it was set up or after it
 * was destroyed.  mlx4_ib_pvcm_get_stats() is the exception: the device
 * is still registered, so its hardware counters may be read meanwhile;
 * such a read holds pv->lock, which the teardown takes before it frees
 * what the read looks at.  Does nothing if the cache is not set up.
 *
 * Context: process context, may sleep.
 */
void mlx4_ib_cm_paravirt_destroy(struct mlx4_ib_dev *dev)
{
	struct mlx4_ib_pvcm *pv = &dev->sriov.pvcm;

	might_sleep();
	if (!READ_ONCE(pv->ready))
		return;
	pvcm_teardown(pv);
}

/*
 * Entries are freed after a grace period (no SLAB_TYPESAFE_BY_RCU), so no
 * lookup depends on a constructed state.  The constructor is there because
 * a cache with one is never merged with another (the 6.1 slab allocators
 * have no SLAB_NO_MERGE): kmem_cache_destroy() then checks this cache for
 * entries left behind and reports them under its own name, and
 * /sys/kernel/slab shows only these entries.  Objects go back to the cache
 * in the state it makes, a zero reference count (see pvcm_discard()).
 */
static void pvcm_entry_ctor(void *obj)
{
	struct pvcm_entry *e = obj;

	refcount_set(&e->ref, 0);
}

/*
 * In mlx4_ib.ko the entry cache is "mlx4_ib_pvcm" and the debugfs
 * directory "mlx4_ib".  Any other module this object is linked into (the
 * test modules, the emulated master of tools/testing/sriov) names both
 * after itself, so that it loads next to mlx4_ib.ko: a second cache of one
 * name fails to register (a cache with a constructor is never merged, and
 * its sysfs directory takes the name).
 */
static const char *pvcm_owner(void)
{
#ifdef MODULE
	if (strcmp(THIS_MODULE->name, "mlx4_ib"))
		return THIS_MODULE->name;
#endif
	return NULL;
}

int mlx4_ib_cm_init(void)
{
	const char *owner = pvcm_owner();

#ifdef HAVE_WQ_PERCPU
	cm_wq = alloc_workqueue("mlx4_ib_cm", WQ_PERCPU, 0);
#else
	cm_wq = alloc_workqueue("mlx4_ib_cm", 0, 0);
#endif
	if (!cm_wq)
		return -ENOMEM;
	pvcm_cache = kmem_cache_create(owner ?: "mlx4_ib_pvcm",
				       sizeof(struct pvcm_entry), 0, 0,
				       pvcm_entry_ctor);
	if (!pvcm_cache) {
		destroy_workqueue(cm_wq);
		return -ENOMEM;
	}
	pvcm_debugfs_root = debugfs_create_dir(owner ?: "mlx4_ib", NULL);
	if (IS_ERR(pvcm_debugfs_root))
		pvcm_debugfs_root = NULL;
	return 0;
}

void mlx4_ib_cm_destroy(void)
{
	debugfs_remove(pvcm_debugfs_root);
	pvcm_debugfs_root = NULL;
	destroy_workqueue(cm_wq);
	rcu_barrier();		/* entries and routes freed by RCU callbacks */
	kmem_cache_destroy(pvcm_cache);
}
