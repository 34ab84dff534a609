// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Remote-identity bookkeeping and the CM TimeWait state.
 *
 * A struct cm_tw records who is on the other end of a connection: the
 * remote communication ID and the remote QPN, each qualified by the remote
 * CA GUID.  Two trees index these records so that a duplicate REQ/REP (same
 * remote ID) and a stale connection (same remote QPN) can be detected.
 *
 * Ownership: a record belongs to its cm_id (cm_id_private.tw) until the
 * connection enters TimeWait.  cm_tw_start() then takes it out of both
 * trees, moves it onto its table's list and arms its timer; from that
 * point the list owns it.  Invariant: a listed record is in no tree.
 * A REQ is stale only when its QPN is one the CM considers connected
 * (IBTA vol 1, ch. 12): a connection in TimeWait is over, its local QP is
 * not reused before the timer runs out, so the peer may reconnect from
 * the same QPN, or with the same communication ID, at once.  This is also
 * what the stock ib_cm does.  The expiry work ends the connection's
 * TimeWait, then frees the record; at module exit cm_tw_drain() does that
 * instead.
 */
#include <linux/slab.h>

#include "cm_fault.h"
#include "cm_priv.h"

static int cm_key_cmp(__be32 a32, __be64 a64, __be32 b32, __be64 b64)
{
	u32 x = be32_to_cpu(a32), y = be32_to_cpu(b32);
	u64 p = be64_to_cpu(a64), q = be64_to_cpu(b64);

	if (x != y)
		return x < y ? -1 : 1;
	if (p != q)
		return p < q ? -1 : 1;
	return 0;
}

/* Short of memory for the exit event: wait this much longer, then retry. */
#define CM_TW_RETRY_MS 1000

/* Whether the list still owns @tw (cm_tw_drain() has not taken it). */
static bool cm_tw_listed(struct cm_tw *tw)
{
	spinlock_t *lock = tw->table->lock;
	unsigned long flags;
	bool listed;

	spin_lock_irqsave(lock, flags);
	listed = !list_empty(&tw->node);
	spin_unlock_irqrestore(lock, flags);
	return listed;
}

/*
 * The connection leaves TimeWait first, the record the list after.  When
 * the exit event cannot be allocated nothing has changed yet: the record
 * stays in TimeWait and tries again.  A TimeWait a little longer is
 * harmless; a lost exit event would leave the consumer's ID in TimeWait
 * for good.
 */
static void cm_tw_timeout(struct work_struct *work)
{
	struct cm_tw *tw = container_of(to_delayed_work(work), struct cm_tw,
					dwork);
	struct cm_tw_table *t = tw->table;
	unsigned long flags;
	bool listed;

	/* If cm_tw_drain() took it, it frees it after us. */
	if (!cm_tw_listed(tw))
		return;
	if (t->expired(tw->local_id, tw->remote_id, tw->remote_qpn)) {
		spin_lock_irqsave(t->lock, flags);
		if (!list_empty(&tw->node))
			queue_delayed_work(t->wq, &tw->dwork,
					   msecs_to_jiffies(CM_TW_RETRY_MS));
		spin_unlock_irqrestore(t->lock, flags);
		return;
	}
	spin_lock_irqsave(t->lock, flags);
	listed = !list_empty(&tw->node);
	if (listed)
		list_del_init(&tw->node);
	spin_unlock_irqrestore(t->lock, flags);
	if (listed)
		kfree(tw);
}

/**
 * cm_tw_alloc() - a new record for a connection of a TimeWait table
 * @t: the table the record is to be indexed in
 * @local_id: the connection's local communication ID
 *
 * The caller fills in the remote identity before indexing it.
 *
 * Return: the record, in no tree and no list, or NULL without memory (or
 * when the fault hook fails the allocation).
 */
struct cm_tw *cm_tw_alloc(struct cm_tw_table *t, __be32 local_id)
{
	struct cm_tw *tw;

	if (cm_should_fail())
		return NULL;
#ifdef HAVE_KMALLOC_OBJ
	tw = kzalloc_obj(*tw);
#else
	tw = kzalloc(sizeof(*tw), GFP_KERNEL);
#endif
	if (!tw)
		return NULL;
	tw->table = t;
	tw->local_id = local_id;
	INIT_LIST_HEAD(&tw->node);
	RB_CLEAR_NODE(&tw->rid_node);
	RB_CLEAR_NODE(&tw->rqpn_node);
	INIT_DELAYED_WORK(&tw->dwork, cm_tw_timeout);
	return tw;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_tw_alloc);

/**
 * cm_tw_free() - free a record that never entered TimeWait
 * @tw: the record, unlinked from both trees, or NULL
 */
void cm_tw_free(struct cm_tw *tw)
{
	if (!tw)
		return;
	WARN_ON(tw->in_rid || tw->in_rqpn || tw->queued);
	kfree(tw);
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_tw_free);

static int cm_tw_rid_cmp(struct rb_node *a, const struct rb_node *b)
{
	const struct cm_tw *x = rb_entry(a, struct cm_tw, rid_node);
	const struct cm_tw *y = rb_entry(b, struct cm_tw, rid_node);

	return cm_key_cmp(x->remote_id, x->remote_ca_guid, y->remote_id,
			  y->remote_ca_guid);
}

static int cm_tw_rqpn_cmp(struct rb_node *a, const struct rb_node *b)
{
	const struct cm_tw *x = rb_entry(a, struct cm_tw, rqpn_node);
	const struct cm_tw *y = rb_entry(b, struct cm_tw, rqpn_node);

	return cm_key_cmp(x->remote_qpn, x->remote_ca_guid, y->remote_qpn,
			  y->remote_ca_guid);
}

/**
 * cm_tw_insert_rid() - index a record by remote ID
 * @tw: the record, with its remote ID and CA GUID set
 *
 * Called with the table's lock held.
 *
 * Return: the record that already holds that remote ID (a duplicate), or
 * NULL once @tw is inserted.
 */
struct cm_tw *cm_tw_insert_rid(struct cm_tw *tw)
{
	struct rb_node *dup;

	lockdep_assert_held(tw->table->lock);
	dup = rb_find_add(&tw->rid_node, &tw->table->rid_tree, cm_tw_rid_cmp);
	if (dup)
		return rb_entry(dup, struct cm_tw, rid_node);
	tw->in_rid = true;
	return NULL;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_tw_insert_rid);

/**
 * cm_tw_insert_rqpn() - index a record by remote QPN
 * @tw: the record, with its remote QPN and CA GUID set
 *
 * Same as cm_tw_insert_rid(), for the detection of stale connections.
 * Called with the table's lock held.
 *
 * Return: the record that already holds that remote QPN, or NULL once @tw
 * is inserted.
 */
struct cm_tw *cm_tw_insert_rqpn(struct cm_tw *tw)
{
	struct rb_node *dup;

	lockdep_assert_held(tw->table->lock);
	dup = rb_find_add(&tw->rqpn_node, &tw->table->rqpn_tree,
			  cm_tw_rqpn_cmp);
	if (dup)
		return rb_entry(dup, struct cm_tw, rqpn_node);
	tw->in_rqpn = true;
	return NULL;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_tw_insert_rqpn);

/* The key of cm_tw_find_rid(): what a REQ names of its sender. */
struct cm_tw_rid_key {
	__be32 remote_id;
	__be64 remote_ca_guid;
};

static int cm_tw_rid_key_cmp(const void *key, const struct rb_node *n)
{
	const struct cm_tw_rid_key *k = key;
	const struct cm_tw *y = rb_entry(n, struct cm_tw, rid_node);

	return cm_key_cmp(k->remote_id, k->remote_ca_guid, y->remote_id,
			  y->remote_ca_guid);
}

/**
 * cm_tw_find_rid() - look a record up by remote ID
 * @t: the table
 * @remote_ca_guid: the remote CA GUID
 * @remote_id: the remote communication ID
 *
 * Called with the table's lock held.
 *
 * Return: the record indexed under that remote ID, or NULL.
 */
struct cm_tw *cm_tw_find_rid(struct cm_tw_table *t, __be64 remote_ca_guid,
			     __be32 remote_id)
{
	const struct cm_tw_rid_key key = {
		.remote_id = remote_id,
		.remote_ca_guid = remote_ca_guid,
	};
	struct rb_node *n;

	lockdep_assert_held(t->lock);
	n = rb_find(&key, &t->rid_tree, cm_tw_rid_key_cmp);
	return n ? rb_entry(n, struct cm_tw, rid_node) : NULL;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_tw_find_rid);

/**
 * cm_tw_unlink() - take a record out of the trees it is in
 * @tw: the record
 *
 * Called with the table's lock held.
 */
void cm_tw_unlink(struct cm_tw *tw)
{
	struct cm_tw_table *t = tw->table;

	lockdep_assert_held(t->lock);
	if (tw->in_rid) {
		rb_erase(&tw->rid_node, &t->rid_tree);
		RB_CLEAR_NODE(&tw->rid_node);
		tw->in_rid = false;
	}
	if (tw->in_rqpn) {
		rb_erase(&tw->rqpn_node, &t->rqpn_tree);
		RB_CLEAR_NODE(&tw->rqpn_node);
		tw->in_rqpn = false;
	}
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_tw_unlink);

/**
 * cm_tw_start() - enter TimeWait
 * @tw: the record of the connection
 * @ms: how long TimeWait lasts, in milliseconds
 *
 * The remote ID and QPN are free for new connections at once, the table's
 * list takes ownership of @tw and the timer is armed.  The record does not
 * reference any device, so it is armed even while a device is going away.
 * Called with the table's lock held.
 */
void cm_tw_start(struct cm_tw *tw, unsigned int ms)
{
	struct cm_tw_table *t = tw->table;

	lockdep_assert_held(t->lock);
	cm_tw_unlink(tw);
	tw->queued = true;
	list_add_tail(&tw->node, &t->list);
	queue_delayed_work(t->wq, &tw->dwork, msecs_to_jiffies(ms));
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_tw_start);

/**
 * cm_tw_drain() - cancel and free every record still in TimeWait
 * @t: the table
 *
 * For the owner's exit: no record may enter TimeWait in @t meanwhile.
 */
void cm_tw_drain(struct cm_tw_table *t)
{
	struct cm_tw *tw;

	for (;;) {
		spin_lock_irq(t->lock);
		tw = list_first_entry_or_null(&t->list, struct cm_tw, node);
		if (tw)
			list_del_init(&tw->node);
		spin_unlock_irq(t->lock);
		if (!tw)
			break;
		cancel_delayed_work_sync(&tw->dwork);
		kfree(tw);
	}
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_tw_drain);
