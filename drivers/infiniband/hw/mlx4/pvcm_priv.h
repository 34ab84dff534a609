/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Internals of the mlx4_ib PV-CM id cache (cm.c): the entry and route
 * layouts cm.c works with.
 *
 * With MLX4_IB_PVCM_TEST_HOOKS (CONFIG_MLX4_IB_PVCM_TEST_HOOKS) cm.c also
 * gives the functions and variables declared at the end external linkage,
 * so that the test modules (pvcm_test.c, pvcm_fuzz.c), linked with the
 * very cm.o that goes into mlx4_ib.ko, can drive the cache from the
 * inside.  Without it they stay static and nothing but cm.c includes this
 * header.
 */
#ifndef MLX4_IB_PVCM_PRIV_H
#define MLX4_IB_PVCM_PRIV_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/hash.h>
#include <linux/list.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/rhashtable.h>
#include <linux/types.h>

struct dentry;
struct ib_mad;
struct workqueue_struct;
struct mlx4_ib_dev;
struct mlx4_ib_pvcm;
struct mlx4_ib_pvcm_slave;

#ifdef MLX4_IB_PVCM_TEST_HOOKS
#define VISIBLE_IF_PVCM_TEST
#else
#define VISIBLE_IF_PVCM_TEST static
#endif

#define PVCM_BATCH			256	/* entries per hold of the lock */
#define PVCM_CM_CLASS_VERSION		2

/* values of the REJ MsgRejected and MRA MsgMRAed fields */
#define PVCM_REJ_MSG_REQ	0	/* REJ: MsgRejected, the REQ was rejected */
#define PVCM_MRA_MSG_REQ	0	/* MRA: MsgMRAed, the REQ is delayed */

enum pvcm_state {
	PVCM_PENDING,		/* on slave->pending, expires if idle */
	PVCM_ESTABLISHED,	/* on slave->established */
	PVCM_TIMEWAIT,		/* on slave->timewait, freed at deadline */
	PVCM_DEAD,		/* not yet published, or unlinked for good */
};

struct pvcm_key {
	u32 sl_cm_id;
	u32 slave;
};

/*
 * One mapping.  @link is used while the entry sits on a slave list and
 * @rcu once it is off all lists; key, pv_cm_id and epoch never change.
 * @remote_id is the peer's comm id, 0 until known: set once, before the
 * entry is published when the VF's MAD that creates it carries it (as its
 * remote id), else later by cmpxchg() from the VF's MADs or from the
 * peer's REP, and read with READ_ONCE().  @sidr is set before the entry
 * is published when a SIDR_REQ creates it, so before any wire MAD can
 * find it.  @flags (PVCM_F_*) and @loop_slave are written before the
 * entry is published or under pv->lock, and read with READ_ONCE()
 * without it.  56 bytes on 64-bit.
 */
struct pvcm_entry {
	struct rhash_head hnode;
	union {
		struct list_head link;
		struct rcu_head rcu;
	};
	struct pvcm_key key;
	u32 pv_cm_id;
	refcount_t ref;
	u32 deadline;		/* jiffies, low 32 bits */
	u32 remote_id;
	u32 epoch;		/* the slave's epoch when it was published */
	u8 state;
	u8 sidr;		/* made by a SIDR_REQ, not a connection */
	u8 flags;
	u8 loop_slave;		/* with PVCM_F_LOOP: the VF the REQ went to */
};

/* &struct pvcm_entry.flags */
#define PVCM_F_INDEXED		BIT(0)	/* the entry is the one in pv->sl_ids */
#define PVCM_F_IDLE		BIT(1)	/* in TimeWait because it expired idle */
/*
 * The VF's REQ that created the entry went to another VF of this master,
 * @loop_slave, on port 2 (PVCM_F_LOOP_PORT2) or port 1: the entry carries
 * what the routes of a REQ from the wire carry (see "VF-to-VF requests"
 * in cm.c).  Set with @loop_slave before the entry is published, never
 * changed.
 */
#define PVCM_F_LOOP		BIT(2)
#define PVCM_F_LOOP_PORT2	BIT(3)
/*
 * @loop_slave may answer the REQ: the entry is on its slave's loop FIFO
 * and counted in its nr_loop.  Set and cleared under pv->lock.
 */
#define PVCM_F_ROUTED		BIT(4)

static inline bool pvcm_flag(const struct pvcm_entry *e, u8 flag)
{
	return READ_ONCE(e->flags) & flag;
}

/* under pv->lock, or before the entry is published */
static inline void pvcm_flags_set(struct pvcm_entry *e, u8 set, u8 clear)
{
	WRITE_ONCE(e->flags, (e->flags & ~clear) | set);
}

#ifdef MLX4_IB_PVCM_TEST_HOOKS
extern u64 pvcm_sl_mul;
#else
/* cm.c's, set once before the first table: only cm.c includes this header */
static u64 pvcm_sl_mul __read_mostly;
#endif

/*
 * The hash of a (slave, sl_cm_id) key: multiply-shift.  The key as one
 * number x (slave < 2^7 above the 32-bit id: below 2^39) times a random
 * odd multiplier a; rhashtable takes the low b bits of the result, bits
 * 32 to 32 + b - 1 of a * x, which are the top b bits of a * x modulo
 * 2^(32 + b).  The table has at least 2^10 buckets, so x < 2^(32 + b):
 * for any two keys, the chance that they share a bucket is at most
 * 2 / 2^b over the choice of a (Dietzfelbinger et al., 1997), whatever ids
 * the VFs pick.  That bounds the expected chain, not the longest: on one
 * VF's ids in arithmetic progression (ib_cm hands them out in sequence)
 * a times the step acts as a rotation, and for a few multipliers in a
 * thousand the buckets bunch up into a chain over rhashtable's 16
 * (tools/testing/bench/pvcm/README, "The hash of sl_ids").  The insert
 * that meets such a chain then allocates a table of the same size with a
 * new seed, GFP_ATOMIC under pv->lock, and goes into it; the worker moves
 * the rest, and the new seed makes another multiplier.  a is a random
 * number of the module (pvcm_sl_mul) XORed with the table's seed
 * spread over 64 bits.  One multiplication instead of jhash2()'s rounds,
 * on every lookup, insert and rehash move.
 */
static inline u32 pvcm_sl_hash(const void *data, u32 len, u32 seed)
{
	const struct pvcm_key *key = data;
	u64 x = (u64)key->slave << 32 | key->sl_cm_id;
	u64 a = (pvcm_sl_mul ^ ((u64)seed * GOLDEN_RATIO_64)) | 1;

	return (a * x) >> 32;
}

/* two word compares instead of the generic memcmp() of the key bytes */
static inline int pvcm_sl_cmp(struct rhashtable_compare_arg *arg,
			      const void *obj)
{
	const struct pvcm_entry *e = obj;
	const struct pvcm_key *key = arg->key;

	return e->key.sl_cm_id != key->sl_cm_id || e->key.slave != key->slave;
}

static const struct rhashtable_params pvcm_sl_params __maybe_unused = {
	.key_len = sizeof(struct pvcm_key),
	.key_offset = offsetof(struct pvcm_entry, key),
	.head_offset = offsetof(struct pvcm_entry, hnode),
	.hashfn = pvcm_sl_hash,
	.obj_cmpfn = pvcm_sl_cmp,
	/*
	 * 1024 buckets (8 KiB) from the start and at the least: a cache of
	 * a few hundred connections is not rehashed on its way up and down,
	 * and pvcm_sl_hash() needs 2^10 buckets or more.
	 */
	.min_size = 1024,
	.automatic_shrinking = true,
};

enum pvcm_route_kind {
	PVCM_ROUTE_REQ,		/* an incoming REQ, for REJ(timeout) */
	PVCM_ROUTE_SIDR,	/* an incoming SIDR_REQ, for the VF's SIDR_REP */
	PVCM_ROUTE_ANSWER,	/* an incoming REQ, for the VF's answer */
	PVCM_ROUTE_KINDS
};

/*
 * REQ: the peer's CA GUID and comm id and the port, @slave 0.
 * ANSWER: the peer's comm id, the port and the slave it went to.
 * SIDR: the request id and the slave it went to, the rest 0.
 */
struct pvcm_route_key {
	__be64 ca_guid;
	u32 comm_id;
	u16 port;
	u8 kind;
	u8 slave;
};

/*
 * Where an incoming REQ or SIDR_REQ went (@slave).  @payer owns the route:
 * it is on that slave's list and counts against its pvcm_max_routes.  The
 * payer is the slave the request went to; a repeated request keeps the
 * payer of the route it refreshes.  (A REQ from one VF of this master to
 * another has no route: the sender's entry carries it, PVCM_F_LOOP.)
 * @epoch is the payer's epoch when it took (or last refreshed) the route:
 * a clean of the payer forgets only routes of an older epoch.
 */
struct pvcm_route {
	struct rhash_head hnode;
	union {
		struct list_head link;
		struct rcu_head rcu;
	};
	struct pvcm_route_key key;
	u32 deadline;
	u32 slave;		/* WRITE_ONCE under pv->lock, read under RCU */
	u32 payer;		/* under pv->lock */
	u32 epoch;		/* under pv->lock */
};

static const struct rhashtable_params pvcm_route_params __maybe_unused = {
	.key_len = sizeof(struct pvcm_route_key),
	.key_offset = offsetof(struct pvcm_route, key),
	.head_offset = offsetof(struct pvcm_route, hnode),
	/*
	 * As sl_ids: a REQ from the wire notes two routes, and a table
	 * that starts at 64 buckets was rehashed four times before a
	 * thousand.
	 */
	.min_size = 1024,
	.automatic_shrinking = true,
};

enum pvcm_event {
	PVCM_EV_NONE,
	PVCM_EV_REFRESH,
	PVCM_EV_ESTABLISH,	/* also revives an idle-expired entry */
	PVCM_EV_RELEASE,
	PVCM_EV_REVIVE,		/* REP: refresh, or revive as pending */
};

#ifdef MLX4_IB_PVCM_TEST_HOOKS
extern unsigned int pvcm_max_per_vf;
extern unsigned int pvcm_pending_timeout;
extern unsigned int pvcm_max_routes;
extern const struct kernel_param_ops pvcm_pending_timeout_ops;

/* 0 keeps the production timeout */
extern unsigned long pvcm_test_timewait;
extern unsigned long pvcm_test_pending;
extern unsigned long pvcm_test_route_life;
extern atomic_t pvcm_test_fail_nth;
extern atomic_t pvcm_test_breaks;
extern void (*pvcm_test_after_publish)(struct mlx4_ib_pvcm *pv, u32 pv_cm_id);
extern void (*pvcm_test_before_insert)(struct mlx4_ib_pvcm *pv, u32 slave,
				       u32 sl_cm_id);

extern struct workqueue_struct *cm_wq;
extern atomic_long_t pvcm_objects;
extern struct dentry *pvcm_debugfs_root;

/* (a) CM MAD field helpers */
bool pvcm_rej_of_req(const struct ib_mad *mad);
bool pvcm_rej_timeout(const struct ib_mad *mad);
__be64 pvcm_rej_guid(const struct ib_mad *mad);
__be64 pvcm_req_dest_if_id(const struct ib_mad *mad);

/* (b) the id map */
struct mlx4_ib_pvcm_slave *pvcm_slave(struct mlx4_ib_pvcm *pv,
				      const struct pvcm_entry *e);
bool pvcm_stale(struct mlx4_ib_pvcm *pv, const struct pvcm_entry *e);
bool pvcm_usable(struct mlx4_ib_pvcm *pv, const struct pvcm_entry *e);
void pvcm_put(struct pvcm_entry *e);
u32 pvcm_index(const struct mlx4_ib_pvcm *pv, u32 pv_cm_id);
u32 pvcm_id_of(const struct mlx4_ib_pvcm *pv, u32 index);
struct pvcm_entry *pvcm_find_pv(struct mlx4_ib_pvcm *pv, u32 pv_cm_id);
struct pvcm_entry *pvcm_entry_new(struct mlx4_ib_pvcm *pv, u32 slave,
				  u32 sl_cm_id, u32 peer, bool sidr, u32 *id);
void pvcm_entry_abort(struct mlx4_ib_pvcm *pv, struct pvcm_entry *e, u32 id);
struct pvcm_entry *pvcm_pin_sl(struct mlx4_ib_pvcm *pv, u32 slave,
			       u32 sl_cm_id);
struct pvcm_entry *pvcm_pin_pv(struct mlx4_ib_pvcm *pv, u32 pv_cm_id);
void pvcm_arm(struct mlx4_ib_pvcm *pv, u32 deadline);
unsigned int pvcm_route_list(const struct pvcm_route *r);
int pvcm_route_lookup(struct mlx4_ib_pvcm *pv, int port, u32 comm_id,
		      __be64 ca_guid);
bool pvcm_req_delivered(struct mlx4_ib_pvcm *pv, int port, u32 comm_id,
			int slave);

/* (c) the policy */
void pvcm_event(struct mlx4_ib_pvcm *pv, struct pvcm_entry *e, u8 ev);
int pvcm_multiplex(struct mlx4_ib_dev *dev, int port, int slave,
		   struct ib_mad *mad, size_t len);
int pvcm_demux(struct mlx4_ib_dev *dev, int port, u16 pkey_index, int *slave,
	       bool fixed, struct ib_mad *mad, size_t len);

#endif /* MLX4_IB_PVCM_TEST_HOOKS */

#endif /* MLX4_IB_PVCM_PRIV_H */
