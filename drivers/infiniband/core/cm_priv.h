/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Internal state shared by the files of ib_cm.ko.
 *
 * Lifetime summary (see Documentation/infiniband/ib_cm.rst):
 *  - struct cm_device (with its ports embedded) is freed by its kref.  The
 *    client holds one reference from add until remove; every cm_av that
 *    points at one of its ports holds one more; so does every queued job.
 *  - struct cm_id_private is refcounted; ib_destroy_cm_id() drops the
 *    creation reference and waits for the others to go away.
 */
#ifndef IB_CM_PRIV_H
#define IB_CM_PRIV_H

#include <linux/kref.h>
#include <linux/refcount.h>
#include <linux/completion.h>
#include <linux/rbtree.h>
#include <linux/xarray.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_cm.h>

#include "cm_codec.h"

enum cm_ctr_group {
	CM_CTR_TX,
	CM_CTR_TX_RETRIES,
	CM_CTR_RX,
	CM_CTR_RX_DUPS,
	CM_CTR_GROUPS,
};

struct cm_device;

struct cm_port {
	struct cm_device *dev;
	u32 num;
	/* The port runs a CM (IB or RoCE) and has been set up. */
	bool active;
	bool groups_added;
	/* Protected by dev->agent_lock; NULL once removal started. */
	struct ib_mad_agent *agent;
#ifdef HAVE_IB_PREPARE_CM_MRA
	/*
	 * The newer MAD layer holds back sends that expect an answer once
	 * an agent has many outstanding; REPs go out through this send-only
	 * agent, which it does not hold back, so that a REP never waits
	 * behind REQs.  Protected and pinned as ->agent.
	 */
	struct ib_mad_agent *rep_agent;
#endif
	/*
	 * Senders that found ->agent set under the read lock and are still
	 * using it (creating an AH / send buffer, posting).  Removal waits for
	 * this to reach zero before unregistering the agent.
	 */
	atomic_t agent_users;
	atomic_long_t ctr[CM_CTR_GROUPS][CMC_ATTR_COUNT];
};

struct cm_device {
	struct kref ref;
	/* Entry in cmg.devices, protected by cmg.dev_lock. */
	struct list_head node;
	struct ib_device *ibdev;
	u8 ack_delay;
	/* Set once by removal; protected by cmg.lock. */
	bool going_down;
	/* Protects port[].agent: senders read-lock, removal write-locks. */
	rwlock_t agent_lock;
	/*
	 * port[i] is port number first_port + i: every port from
	 * rdma_start_port() (0 on a switch, else 1) to rdma_end_port().
	 */
	u32 first_port;
	u32 nports;
	struct cm_port port[];
};

/* Port number @num of @dev, or NULL if the device has no such port. */
static inline struct cm_port *cm_dev_port(struct cm_device *dev, u32 num)
{
	if (num < dev->first_port || num - dev->first_port >= dev->nports)
		return NULL;
	return &dev->port[num - dev->first_port];
}

/*
 * Address vector of a cm_id.  ->port holds a reference on port->dev.
 * Only touched under the owning cm_id_private's lock, via the cm_av_*()
 * accessors in cm.c.
 */
struct cm_av {
	u8 timeout;
	u16 pkey_index;
	u16 dlid_datapath;
	struct rdma_ah_attr ah_attr;
	struct cm_port *port;
};

/*
 * An address vector under construction on the stack of a thread that may
 * sleep.  It owns a device reference through ->port; cm_av_publish() hands
 * both that reference and the AH attributes to a cm_av under the lock.
 */
struct cm_av_draft {
	bool valid;
	u8 timeout;
	u16 pkey_index;
	struct rdma_ah_attr ah_attr;
	struct cm_port *port;
};

/*
 * The TimeWait records of one CM: indexed by remote ID and by remote QPN
 * while their connection is up, listed once it entered TimeWait.  ib_cm
 * has one, cmg.tw, under cmg.lock; its self-test sets up another one, so
 * that it can check this code without touching live connections.
 */
struct cm_tw_table {
	/* Protects both trees and the list. */
	spinlock_t *lock;
	struct rb_root rid_tree;
	struct rb_root rqpn_tree;
	struct list_head list;
	/* Runs the expiries. */
	struct workqueue_struct *wq;
	/* Ends the connection of an expired record; see cm_tw_expired(). */
	int (*expired)(__be32 local_id, __be32 remote_id, __be32 remote_qpn);
};

/* TimeWait record; see cm_timewait.c for its ownership rules. */
struct cm_tw {
	struct delayed_work dwork;
	struct cm_tw_table *table;
	/* On table->list (under table->lock) once TimeWait was entered. */
	struct list_head node;
	struct rb_node rid_node;
	struct rb_node rqpn_node;
	bool in_rid;
	bool in_rqpn;
	bool queued;
	__be32 local_id;
	__be32 remote_id;
	__be32 remote_qpn;
	__be64 remote_ca_guid;
};

/* Received MAD being processed, later an event waiting for delivery. */
struct cm_job {
	struct work_struct work;
	struct list_head node;
	/* Holds a reference on port->dev while non-NULL. */
	struct cm_port *port;
	struct ib_mad_recv_wc *recv;
#ifdef IB_CM_TEST_HOOKS
	/* @recv came from cm_test_inject(), not from the MAD layer. */
	bool injected;
#endif
	__be32 local_id;
	__be32 remote_id;
	struct ib_cm_event ev;
	/* REQ: primary and alternate path; LAP: alternate; others: none. */
	struct sa_path_rec path[];
};

struct cm_id_private {
	struct ib_cm_id id;

	/* Lifetime: the last put completes ->released. */
	refcount_t refs;
	struct completion released;

	/*
	 * Protects id.state, id.lap_state, av, alt_av, msg, tw, events,
	 * delivering, abandoned and all negotiated connection parameters
	 * below.
	 * Never taken inside cmg.lock; cmg.lock may be taken inside it.
	 */
	spinlock_t lock;

	/* Where the ID sits in the global trees; protected by cmg.lock. */
	struct rb_node listen_node;
	struct rb_node sidr_node;
	int listen_shares;
	u32 sidr_slid;

	/* The exchange in flight and the events it produced. */
	struct ib_mad_send_buf *msg;
	/*
	 * Reserved with @msg for the event that reports its failure, so
	 * that a timed-out exchange is always reported (lock: ->lock):
	 * &send_err_job, or an allocated job while that one is busy.
	 */
	struct cm_job *send_err;
	__be64 tid;
	int timeout_ms;
	u8 max_cm_retries;
	u8 service_timeout;
	struct cm_tw *tw;
	struct list_head events;
	bool delivering;
	/*
	 * Set (lock: ->lock) when the handler returned non-zero: the
	 * consumer has given the ID back and no event reaches the handler
	 * any more.  Whoever delivered that event destroys the ID, at once
	 * or, from a send completion, through destroy_work, queued once with
	 * destroy_err written before.
	 */
	bool abandoned;
	int destroy_err;
	struct work_struct destroy_work;

	/* Paths to the peer. */
	struct cm_av av;
	struct cm_av alt_av;
	enum ib_mtu path_mtu;
	__be16 pkey;
	u8 target_ack_delay;

	/* QP attributes agreed with the peer. */
	enum ib_qp_type qp_type;
	__be32 local_qpn;
	__be32 remote_qpn;
	__be32 sq_psn;
	__be32 rq_psn;
	u8 responder_resources;
	u8 initiator_depth;
	u8 retry_count;
	u8 rnr_retry_count;
	struct rdma_ucm_ece ece;

	/* Private data of our last answer, sent again for duplicates. */
	void *pdata;
	u8 pdata_len;

	/*
	 * The ID's own failure report, so that reserving one costs no
	 * allocation.  send_err_busy (lock: ->lock) is true from its
	 * reservation until it is given back unused or has been delivered;
	 * a send posted meanwhile reserves an allocated job instead.
	 * Last member: its path[] is empty, and cm_id_new() clears the
	 * cm_id only up to here (cm_send_finished() sets up what it uses).
	 */
	bool send_err_busy;
	struct cm_job send_err_job;
};

struct cm_globals {
	/*
	 * Protects listen_tree, sidr_tree, the TimeWait table (tw),
	 * cm_id_private.listen_shares and cm_device.going_down.
	 */
	spinlock_t lock;
	/* Protects devices. */
	rwlock_t dev_lock;
	struct list_head devices;
	struct rb_root listen_tree;
	struct rb_root sidr_tree;
	struct cm_tw_table tw;
	/* Local communication IDs; lookups run under the xarray's lock. */
	struct xarray ids;
	u32 id_next;
	u32 id_xor;
	u64 next_sid;
	struct workqueue_struct *wq;
	struct kmem_cache *id_cache;
};

extern struct cm_globals cmg;

/*
 * Exported by ib_core but declared only in its private header, which is
 * not installed: the two calls that attach per-port sysfs groups.
 */
int ib_port_register_client_groups(struct ib_device *ibdev, u32 port_num,
				   const struct attribute_group **groups);
void ib_port_unregister_client_groups(struct ib_device *ibdev, u32 port_num,
				      const struct attribute_group **groups);
extern struct ib_client cm_ib_client;
extern const struct attribute_group *cm_counter_groups[];

/* cm_port.c */
int cm_client_register(void);
void cm_client_unregister(void);
void cm_dev_release(struct kref *ref);
struct cm_port *cm_port_for_gid(struct sa_path_rec *path,
				const struct ib_gid_attr *sgid_attr);
struct ib_mad_agent *cm_agent_pin(struct cm_port *port);
#ifdef HAVE_IB_PREPARE_CM_MRA
struct ib_mad_agent *cm_rep_agent_pin(struct cm_port *port);
#else
/* Without the MAD layer's flow control REPs use the CM's own agent. */
static inline struct ib_mad_agent *cm_rep_agent_pin(struct cm_port *port)
{
	return cm_agent_pin(port);
}
#endif

/* Called for every message and reference: inline. */
static inline void cm_dev_get(struct cm_device *dev)
{
	kref_get(&dev->ref);
}

static inline void cm_dev_put(struct cm_device *dev)
{
	kref_put(&dev->ref, cm_dev_release);
}

/* Done with the agent that cm_agent_pin() returned. */
static inline void cm_agent_unpin(struct cm_port *port)
{
	if (atomic_dec_and_test(&port->agent_users))
		wake_up_var(&port->agent_users);
}

static inline void cm_ctr_add(struct cm_port *port, enum cm_ctr_group grp,
			      __be16 attr_id, long n)
{
	unsigned int idx = be16_to_cpu(attr_id) - CMC_ATTR_BASE;

	if (idx < CMC_ATTR_COUNT)
		atomic_long_add(n, &port->ctr[grp][idx]);
}

/* cm_sysfs.c */
void cm_sysfs_init(void);

/* cm_timewait.c */
struct cm_tw *cm_tw_alloc(struct cm_tw_table *t, __be32 local_id);
void cm_tw_free(struct cm_tw *tw);
struct cm_tw *cm_tw_insert_rid(struct cm_tw *tw);
struct cm_tw *cm_tw_insert_rqpn(struct cm_tw *tw);
struct cm_tw *cm_tw_find_rid(struct cm_tw_table *t, __be64 remote_ca_guid,
			     __be32 remote_id);
void cm_tw_unlink(struct cm_tw *tw);
void cm_tw_start(struct cm_tw *tw, unsigned int ms);
void cm_tw_drain(struct cm_tw_table *t);

/*
 * cm_test_hook.c, called by cm.c:
 *  - when a LAP arrives on a RoCE port, and for the GID attribute to
 *    build a LAP's alternate path with (cm_test_lap_on_roce());
 *  - on the receive side of cm_test_inject(), whose MADs cm.c gives back
 *    with cm_test_recv_free();
 *  - to ask whether a send completion is held back (cm_test_park_sends());
 *  - where a repeated REQ has found its connection, to run a test's
 *    function (cm_test_on_dup_req());
 *  - with each MAD the CM posts, copied for a test that watches
 *    (cm_test_send_watch()).
 * Only ib_cm.ko built with its test hooks (IB_CM_TEST_HOOKS, set by
 * Kbuild for CONFIG_INFINIBAND_CM_TEST_HOOKS) has them; in any other
 * build the answers are constants: "no" and "none", no job holds an
 * injected MAD, no test function runs and no MAD is copied.
 */
#ifdef IB_CM_TEST_HOOKS
bool cm_test_lap_as_ib(const struct cm_port *port);
const struct ib_gid_attr *
cm_test_lap_sgid_attr(const struct cm_port *port, const union ib_gid *sgid,
		      const struct ib_gid_attr *arrived);
void cm_recv_injected(struct cm_port *port, struct ib_mad_recv_wc *rwc);
void cm_test_recv_free(struct ib_mad_recv_wc *rwc);
bool cm_test_park_send(struct ib_mad_agent *agent, struct ib_mad_send_wc *wc);
void cm_test_dup_req_found(struct cm_job *job, struct ib_cm_id *other);
void cm_test_sending(const struct cm_port *port,
		     const struct ib_mad_send_buf *msg);

static inline bool cm_job_injected(const struct cm_job *job)
{
	return job->injected;
}

static inline void cm_job_set_injected(struct cm_job *job, bool injected)
{
	job->injected = injected;
}
#else
static inline bool cm_test_lap_as_ib(const struct cm_port *port)
{
	return false;
}

static inline const struct ib_gid_attr *
cm_test_lap_sgid_attr(const struct cm_port *port, const union ib_gid *sgid,
		      const struct ib_gid_attr *arrived)
{
	return NULL;
}

static inline void cm_test_recv_free(struct ib_mad_recv_wc *rwc)
{
}

static inline bool cm_test_park_send(struct ib_mad_agent *agent,
				     struct ib_mad_send_wc *wc)
{
	return false;
}

static inline void cm_test_dup_req_found(struct cm_job *job,
					 struct ib_cm_id *other)
{
}

static inline void cm_test_sending(const struct cm_port *port,
				   const struct ib_mad_send_buf *msg)
{
}

static inline bool cm_job_injected(const struct cm_job *job)
{
	return false;
}

static inline void cm_job_set_injected(struct cm_job *job, bool injected)
{
}
#endif

/* cm.c */
int cm_tw_expired(__be32 local_id, __be32 remote_id, __be32 remote_qpn);
void cm_mad_send_handler(struct ib_mad_agent *agent,
			 struct ib_mad_send_wc *wc);
void cm_mad_recv_handler(struct ib_mad_agent *agent,
			 struct ib_mad_send_buf *send_buf,
			 struct ib_mad_recv_wc *wc);

#endif /* IB_CM_PRIV_H */
