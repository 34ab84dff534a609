// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * InfiniBand Communication Manager: connection state machine and the
 * ib_cm API used by rdma_cm, IPoIB CM, SRP and iSER.
 *
 * Structure:
 *  - cm_codec.c packs/unpacks messages, cm_port.c owns devices/ports and MAD
 *    agents, cm_timewait.c owns remote-identity records and TimeWait,
 *    cm_sysfs.c exports counters.  This file holds cm_ids and the protocol.
 *  - Anything that can sleep (path -> AH attribute resolution, AH creation
 *    from a work completion, GFP_KERNEL allocations) runs before the cm_id
 *    lock is taken, on a stack "draft", and the result is published under
 *    the lock.  Send buffers addressed by a cm_id's own AV are built under
 *    the lock with the non-sleeping rdma_create_ah() flags and GFP_ATOMIC.
 *  - Events reach the consumer one at a time, in order, through a per-ID
 *    queue (cm_deliver_locked()).
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/random.h>
#include <linux/delay.h>
#include <rdma/ib_cache.h>
#include <rdma/rdma_cm.h>

#include "cm_abi.h"
#include "cm_fault.h"
#include "cm_priv.h"
#ifdef IB_CM_TEST_HOOKS
#include "cm_test_hook.h"
#endif
#include "cm_trace.h"

MODULE_DESCRIPTION("InfiniBand communication manager");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_VERSION("6.1-ibcm");

struct cm_globals cmg = {
	.lock = __SPIN_LOCK_UNLOCKED(cmg.lock),
	.dev_lock = __RW_LOCK_UNLOCKED(cmg.dev_lock),
	.devices = LIST_HEAD_INIT(cmg.devices),
	.ids = XARRAY_INIT(cmg.ids, XA_FLAGS_ALLOC),
	.listen_tree = RB_ROOT,
	.sidr_tree = RB_ROOT,
	.tw = {
		.lock = &cmg.lock,
		.rid_tree = RB_ROOT,
		.rqpn_tree = RB_ROOT,
		.list = LIST_HEAD_INIT(cmg.tw.list),
		.expired = cm_tw_expired,
	},
};

/*
 * The text of each reject reason of IBTA table 112, for log messages:
 * worded as the distribution's ib_cm words it (6.1 and 6.12 have the same
 * table), since log watchers match these strings.
 */
static const struct {
	enum ib_cm_rej_reason reason;
	const char *text;
} cm_rej_text[] = {
	{ IB_CM_REJ_NO_QP, "no QP" },
	{ IB_CM_REJ_NO_EEC, "no EEC" },
	{ IB_CM_REJ_NO_RESOURCES, "no resources" },
	{ IB_CM_REJ_TIMEOUT, "timeout" },
	{ IB_CM_REJ_UNSUPPORTED, "unsupported" },
	{ IB_CM_REJ_INVALID_COMM_ID, "invalid comm ID" },
	{ IB_CM_REJ_INVALID_COMM_INSTANCE, "invalid comm instance" },
	{ IB_CM_REJ_INVALID_SERVICE_ID, "invalid service ID" },
	{ IB_CM_REJ_INVALID_TRANSPORT_TYPE, "invalid transport type" },
	{ IB_CM_REJ_STALE_CONN, "stale conn" },
	{ IB_CM_REJ_RDC_NOT_EXIST, "RDC not exist" },
	{ IB_CM_REJ_INVALID_GID, "invalid GID" },
	{ IB_CM_REJ_INVALID_LID, "invalid LID" },
	{ IB_CM_REJ_INVALID_SL, "invalid SL" },
	{ IB_CM_REJ_INVALID_TRAFFIC_CLASS, "invalid traffic class" },
	{ IB_CM_REJ_INVALID_HOP_LIMIT, "invalid hop limit" },
	{ IB_CM_REJ_INVALID_PACKET_RATE, "invalid packet rate" },
	{ IB_CM_REJ_INVALID_ALT_GID, "invalid alt GID" },
	{ IB_CM_REJ_INVALID_ALT_LID, "invalid alt LID" },
	{ IB_CM_REJ_INVALID_ALT_SL, "invalid alt SL" },
	{ IB_CM_REJ_INVALID_ALT_TRAFFIC_CLASS, "invalid alt traffic class" },
	{ IB_CM_REJ_INVALID_ALT_HOP_LIMIT, "invalid alt hop limit" },
	{ IB_CM_REJ_INVALID_ALT_PACKET_RATE, "invalid alt packet rate" },
	{ IB_CM_REJ_PORT_CM_REDIRECT, "port CM redirect" },
	{ IB_CM_REJ_PORT_REDIRECT, "port redirect" },
	{ IB_CM_REJ_INVALID_MTU, "invalid MTU" },
	{ IB_CM_REJ_INSUFFICIENT_RESP_RESOURCES,
	  "insufficient resp resources" },
	{ IB_CM_REJ_CONSUMER_DEFINED, "consumer defined" },
	{ IB_CM_REJ_INVALID_RNR_RETRY, "invalid RNR retry" },
	{ IB_CM_REJ_DUPLICATE_LOCAL_COMM_ID, "duplicate local comm ID" },
	{ IB_CM_REJ_INVALID_CLASS_VERSION, "invalid class version" },
	{ IB_CM_REJ_INVALID_FLOW_LABEL, "invalid flow label" },
	{ IB_CM_REJ_INVALID_ALT_FLOW_LABEL, "invalid alt flow label" },
	{ IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED,
	  "vendor option is not supported" },
};

const char *__attribute_const__ ibcm_reject_msg(int reason)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cm_rej_text); i++)
		if (cm_rej_text[i].reason == reason)
			return cm_rej_text[i].text;
	return "unrecognized reason";
}
EXPORT_SYMBOL(ibcm_reject_msg);

/*
 * Sets of connection states, as bit masks, for the decisions that several
 * handlers share.
 */
#define CM_ST(x)	BIT(IB_CM_##x)
/* Our REQ is out and not yet answered by a REP. */
#define CM_ST_REQ_OUT	(CM_ST(REQ_SENT) | CM_ST(MRA_REQ_RCVD))
/* We hold a REQ that we have not answered with a REP yet. */
#define CM_ST_REQ_IN	(CM_ST(REQ_RCVD) | CM_ST(MRA_REQ_SENT))
/* Our REP is out and not yet answered by an RTU. */
#define CM_ST_REP_OUT	(CM_ST(REP_SENT) | CM_ST(MRA_REP_RCVD))
/* We hold a REP that we have not answered with an RTU yet. */
#define CM_ST_REP_IN	(CM_ST(REP_RCVD) | CM_ST(MRA_REP_SENT))
/* Handshake states; the QP parameters are known in all but CM_ST_REQ_OUT. */
#define CM_ST_HANDSHAKE	(CM_ST_REQ_OUT | CM_ST_REQ_IN | CM_ST_REP_OUT | \
			 CM_ST_REP_IN)

static inline bool cm_state_is(enum ib_cm_state st, unsigned long set)
{
	return BIT(st) & set;
}

static inline struct cm_id_private *to_priv(struct ib_cm_id *id)
{
	return container_of(id, struct cm_id_private, id);
}

/* ------------------------------------------------------------------ */
/* cm_id references and lookup                                         */

static void cm_id_put(struct cm_id_private *priv)
{
	if (refcount_dec_and_test(&priv->refs))
		complete(&priv->released);
}

static u32 cm_id_index(__be32 local_id)
{
	return be32_to_cpu(local_id) ^ cmg.id_xor;
}

/*
 * Find a published cm_id by local ID and take a reference.  @remote_id must
 * match the ID's current remote ID (0 while it is still unknown).
 */
static struct cm_id_private *cm_id_lookup(__be32 local_id, __be32 remote_id)
{
	struct cm_id_private *priv;
	unsigned long flags;

	xa_lock_irqsave(&cmg.ids, flags);
	priv = xa_load(&cmg.ids, cm_id_index(local_id));
	if (priv && (priv->id.remote_id != remote_id ||
		     !refcount_inc_not_zero(&priv->refs)))
		priv = NULL;
	xa_unlock_irqrestore(&cmg.ids, flags);
	return priv;
}

/* ------------------------------------------------------------------ */
/* Address vectors                                                     */

static struct cm_port *cm_av_port(struct cm_id_private *priv,
				  struct cm_av *av)
{
	lockdep_assert_held(&priv->lock);
	return av->port;
}

static void cm_av_set_port(struct cm_id_private *priv, struct cm_av *av,
			   struct cm_port *port)
{
	lockdep_assert_held(&priv->lock);
	if (av->port == port)
		return;
	if (port)
		cm_dev_get(port->dev);
	if (av->port)
		cm_dev_put(av->port->dev);
	av->port = port;
}

/*
 * Drop @av's device reference and GID attribute, and forget the rest of
 * it too (DLID, data-path DLID, P_Key index, timeout): an empty av is one
 * that nothing reads a path from.
 */
static void cm_av_clear(struct cm_id_private *priv, struct cm_av *av)
{
	lockdep_assert_held(&priv->lock);
	cm_av_set_port(priv, av, NULL);
	rdma_destroy_ah_attr(&av->ah_attr);
	memset(av, 0, sizeof(*av));
}

/* Hand a draft's port reference and AH attributes to @av. */
static void cm_av_publish(struct cm_id_private *priv, struct cm_av *av,
			  struct cm_av_draft *d)
{
	lockdep_assert_held(&priv->lock);
	if (!d->valid)
		return;
	if (av->port)
		cm_dev_put(av->port->dev);
	av->port = d->port;
	d->port = NULL;
	rdma_move_ah_attr(&av->ah_attr, &d->ah_attr);
	av->pkey_index = d->pkey_index;
	av->timeout = d->timeout;
	d->valid = false;
}

static void cm_draft_release(struct cm_av_draft *d)
{
	if (!d->valid)
		return;
	rdma_destroy_ah_attr(&d->ah_attr);
	if (d->port)
		cm_dev_put(d->port->dev);
	d->port = NULL;
	d->valid = false;
}

/* May sleep: resolves @path into AH attributes for the port it leaves. */
static int cm_draft_from_path(struct sa_path_rec *path,
			      const struct ib_gid_attr *sgid_attr,
			      struct cm_av_draft *d)
{
	struct cm_port *port;
	u16 pkey_index;
	int ret;

	memset(d, 0, sizeof(*d));
	port = cm_port_for_gid(path, sgid_attr);
	if (!port)
		return -EINVAL;

	ret = ib_find_cached_pkey(port->dev->ibdev, port->num,
				  be16_to_cpu(path->pkey), &pkey_index);
	if (ret)
		goto put;
	if (cm_should_fail()) {
		ret = -ENOMEM;
		goto put;
	}
	ret = ib_init_ah_attr_from_path(port->dev->ibdev, port->num, path,
					&d->ah_attr, sgid_attr);
	if (ret)
		goto put;
	d->port = port;
	d->pkey_index = pkey_index;
	d->timeout = path->packet_life_time + 1;
	d->valid = true;
	return 0;

put:
	cm_dev_put(port->dev);
	return ret;
}

/* May sleep: AH attributes to answer whoever sent @rwc. */
static int cm_draft_from_wc(struct cm_port *port, struct ib_mad_recv_wc *rwc,
			    struct cm_av_draft *d)
{
	int ret;

	memset(d, 0, sizeof(*d));
	if (cm_should_fail())
		return -ENOMEM;
	ret = ib_init_ah_attr_from_wc(port->dev->ibdev, port->num, rwc->wc,
				      rwc->recv_buf.grh, &d->ah_attr);
	if (ret)
		return ret;
	cm_dev_get(port->dev);
	d->port = port;
	d->pkey_index = rwc->wc->pkey_index;
	d->valid = true;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Send buffers                                                        */

/*
 * Put @ah into a new send buffer on @agent, which the caller pinned on
 * @port.  On failure the AH is destroyed and the pin dropped; @gfp also
 * says whether that destruction may sleep.
 */
static struct ib_mad_send_buf *cm_msg_wrap(struct cm_port *port,
					   struct ib_mad_agent *agent,
					   struct ib_ah *ah, u32 rqpn,
					   u16 pkey_index, gfp_t gfp)
{
	struct ib_mad_send_buf *msg;

	if (IS_ERR(ah)) {
		cm_agent_unpin(port);
		return ERR_CAST(ah);
	}
	if (cm_should_fail()) {
		msg = ERR_PTR(-ENOMEM);
		goto err;
	}
	msg = ib_create_send_mad(agent, rqpn, pkey_index, 0, IB_MGMT_MAD_HDR,
				 IB_MGMT_MAD_DATA, gfp, IB_MGMT_BASE_VERSION);
	if (IS_ERR(msg))
		goto err;
	msg->ah = ah;
	msg->context[0] = NULL;
	msg->context[1] = NULL;
	return msg;

err:
	rdma_destroy_ah(ah, gfpflags_allow_blocking(gfp) ?
			RDMA_DESTROY_AH_SLEEPABLE : 0);
	cm_agent_unpin(port);
	return msg;
}

/*
 * Build a send buffer addressed by the ID's primary AV, on the port's REP
 * agent (cm_rep_agent_pin()) for @rep.  Called with the ID lock held, so
 * only non-sleeping AH creation and GFP_ATOMIC are used.  The MAD agent
 * stays pinned until cm_msg_send() or cm_msg_abandon().
 */
static struct ib_mad_send_buf *cm_id_msg_on(struct cm_id_private *priv,
					    bool rep)
{
	struct cm_port *port = cm_av_port(priv, &priv->av);
	struct ib_mad_send_buf *msg;
	struct ib_mad_agent *agent;
	struct ib_ah *ah;

	if (!port)
		return ERR_PTR(-EINVAL);
	agent = rep ? cm_rep_agent_pin(port) : cm_agent_pin(port);
	if (!agent)
		return ERR_PTR(-ENODEV);
	if (cm_should_fail()) {
		cm_agent_unpin(port);
		return ERR_PTR(-ENOMEM);
	}
	ah = rdma_create_ah(agent->qp->pd, &priv->av.ah_attr, 0);
	msg = cm_msg_wrap(port, agent, ah, priv->id.remote_cm_qpn,
			  priv->av.pkey_index, GFP_ATOMIC);
	if (IS_ERR(msg))
		return msg;
	msg->retries = priv->max_cm_retries;
	refcount_inc(&priv->refs);
	msg->context[0] = priv;
	msg->context[1] = (void *)(unsigned long)IB_CM_IDLE;
	return msg;
}

static struct ib_mad_send_buf *cm_id_msg(struct cm_id_private *priv)
{
	return cm_id_msg_on(priv, false);
}

/*
 * Build a send buffer answering the sender of @rwc, without any cm_id.
 * May sleep; call without spinlocks.  Pins the agent like cm_id_msg().
 * One that repeats an answer for a duplicate is marked so with
 * cm_msg_mark_repeat().
 */
static struct ib_mad_send_buf *cm_reply_msg(struct cm_port *port,
					    struct ib_mad_recv_wc *rwc)
{
	struct ib_mad_agent *agent;
	struct ib_ah *ah;

	agent = cm_agent_pin(port);
	if (!agent)
		return ERR_PTR(-ENODEV);
	if (cm_should_fail()) {
		cm_agent_unpin(port);
		return ERR_PTR(-ENOMEM);
	}
	ah = ib_create_ah_from_wc(agent->qp->pd, rwc->wc, rwc->recv_buf.grh,
				  port->num);
	return cm_msg_wrap(port, agent, ah, 1, rwc->wc->pkey_index, GFP_KERNEL);
}

/*
 * A reply without a cm_id that repeats an answer for a duplicate is never
 * retried by the MAD layer; it counts as one retry of that answer.  The
 * mark is in context[1], which holds a state for the sends of a cm_id.
 */
#define CM_MSG_REPEAT	((void *)~0UL)

static void cm_msg_mark_repeat(struct ib_mad_send_buf *msg)
{
	msg->context[1] = CM_MSG_REPEAT;
}

static struct cm_port *cm_msg_port(struct ib_mad_send_buf *msg)
{
	return msg->mad_agent->context;
}

/* Free a buffer that was never posted, or whose send completed. */
static void cm_msg_release(struct ib_mad_send_buf *msg)
{
	struct cm_id_private *priv = msg->context[0];

	if (msg->ah)
		rdma_destroy_ah(msg->ah, 0);
	ib_free_send_mad(msg);
	if (priv)
		cm_id_put(priv);
}

static void cm_msg_abandon(struct ib_mad_send_buf *msg)
{
	struct cm_port *port = cm_msg_port(msg);

	cm_msg_release(msg);
	cm_agent_unpin(port);
}

/* Post and drop the agent pin.  On failure the caller releases @msg. */
static int cm_msg_send(struct ib_mad_send_buf *msg)
{
	struct cm_port *port = cm_msg_port(msg);
	int ret;

	cm_test_sending(port, msg);
	ret = ib_post_send_mad(msg, NULL);
	cm_agent_unpin(port);
	return ret;
}

#ifdef HAVE_IB_PREPARE_CM_MRA
/*
 * The newer contract: a send that expects no answer holds no reference to
 * its cm_id, so that a completion that never comes (a function reset)
 * cannot hold up ib_destroy_cm_id().  The caller holds one of its own.
 */
static void cm_msg_unpin_id(struct ib_mad_send_buf *msg)
{
	struct cm_id_private *priv = msg->context[0];

	if (!priv)
		return;
	msg->context[0] = NULL;
	refcount_dec(&priv->refs);
}

#endif
/* Post an untracked send; a buffer the MAD layer refused is freed here. */
static int cm_msg_send_or_release(struct ib_mad_send_buf *msg)
{
	int err;

#ifdef HAVE_IB_PREPARE_CM_MRA
	cm_msg_unpin_id(msg);
#endif
	err = cm_msg_send(msg);

	if (err)
		cm_msg_release(msg);
	return err;
}

/*
 * The send verbs that take private data from their caller.  Each has a
 * fixed room for it in its MAD and, for the simple ones, a fixed set of
 * connection states it may be issued from.
 */
enum cm_verb {
	CM_VERB_REQ,
	CM_VERB_REP,
	CM_VERB_RTU,
	CM_VERB_DREQ,
	CM_VERB_DREP,
	CM_VERB_REJ,
	CM_VERB_MRA,
	CM_VERB_SIDR_REQ,
	CM_VERB_SIDR_REP,
};

static const struct {
	u8 room;	/* private data bytes the MAD carries */
	u32 from;	/* states it starts from; 0: the verb decides */
} cm_verb_rules[] = {
	[CM_VERB_REQ] = { IB_CM_REQ_PRIVATE_DATA_SIZE, CM_ST(IDLE) },
	[CM_VERB_REP] = { IB_CM_REP_PRIVATE_DATA_SIZE, CM_ST_REQ_IN },
	[CM_VERB_RTU] = { IB_CM_RTU_PRIVATE_DATA_SIZE, CM_ST_REP_IN },
	[CM_VERB_DREQ] = { IB_CM_DREQ_PRIVATE_DATA_SIZE, CM_ST(ESTABLISHED) },
	[CM_VERB_DREP] = { IB_CM_DREP_PRIVATE_DATA_SIZE, CM_ST(DREQ_RCVD) },
	[CM_VERB_REJ] = { IB_CM_REJ_PRIVATE_DATA_SIZE, 0 },
	[CM_VERB_MRA] = { IB_CM_MRA_PRIVATE_DATA_SIZE, 0 },
	[CM_VERB_SIDR_REQ] = { IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE,
			       CM_ST(IDLE) },
	[CM_VERB_SIDR_REP] = { IB_CM_SIDR_REP_PRIVATE_DATA_SIZE,
			       CM_ST(SIDR_REQ_RCVD) },
};

/* 0 if @len bytes at @pdata fit the verb's MAD, else -EINVAL. */
static int cm_verb_pdata(enum cm_verb verb, const void *pdata, u8 len)
{
	if (!pdata || len <= cm_verb_rules[verb].room)
		return 0;
	return -EINVAL;
}

static bool cm_verb_allowed(struct cm_id_private *priv, enum cm_verb verb)
{
	lockdep_assert_held(&priv->lock);
	return cm_verb_rules[verb].from & BIT(priv->id.state);
}

/*
 * The common start of a send: the ID must be in one of the verb's states;
 * then a MAD addressed along the primary path is built for it.
 */
static struct ib_mad_send_buf *cm_verb_msg(struct cm_id_private *priv,
					   enum cm_verb verb)
{
	if (!cm_verb_allowed(priv, verb))
		return ERR_PTR(-EINVAL);
	return cm_id_msg(priv);
}

static __be64 cm_new_tid(struct cm_id_private *priv,
			 struct ib_mad_send_buf *msg)
{
	u64 hi = msg->mad_agent->hi_tid;

	return cpu_to_be64((hi << 32) | be32_to_cpu(priv->id.local_id));
}

/* Stop retransmitting the ID's outstanding request, if any. */
static void cm_cancel_msg(struct cm_id_private *priv)
{
	lockdep_assert_held(&priv->lock);
	if (priv->msg)
		ib_cancel_mad(priv->msg);
}

static struct cm_job *cm_job_alloc(gfp_t gfp, unsigned int paths);

/*
 * The job that will report a tracked send's failure: the ID's own, unless
 * an earlier report still holds it (the consumer may send again from the
 * handler that is being told of the last failure).
 */
static struct cm_job *cm_send_err_reserve(struct cm_id_private *priv)
{
	lockdep_assert_held(&priv->lock);
	if (priv->send_err_busy)
		return cm_job_alloc(GFP_ATOMIC, 0);
	priv->send_err_busy = true;
	return &priv->send_err_job;
}

/* Give back a failure report that was reserved or delivered. */
static void cm_send_err_release(struct cm_id_private *priv,
				struct cm_job *job)
{
	lockdep_assert_held(&priv->lock);
	if (job == &priv->send_err_job)
		priv->send_err_busy = false;
	else
		kfree(job);
}

/* Post a send that expects an answer; it becomes priv->msg. */
static int cm_send_tracked(struct cm_id_private *priv,
			   struct ib_mad_send_buf *msg,
			   enum ib_cm_state waiting_in)
{
	int ret;

	lockdep_assert_held(&priv->lock);
	/* Reserve now what reporting a failed exchange needs later. */
	if (!priv->send_err)
		priv->send_err = cm_send_err_reserve(priv);
	if (!priv->send_err) {
		cm_msg_abandon(msg);
		return -ENOMEM;
	}
	msg->timeout_ms = priv->timeout_ms;
	msg->context[1] = (void *)(unsigned long)waiting_in;
	priv->msg = msg;
	ret = cm_msg_send(msg);
	if (ret) {
		priv->msg = NULL;
		cm_msg_release(msg);
	}
	return ret;
}

/* ------------------------------------------------------------------ */
/* Event delivery                                                      */

/*
 * A job with room for @paths path records (REQ: 2, LAP: 1, others: 0).
 * Only what is read before it is written starts cleared: the references
 * and the event.  The submitter initialises ->work and the IDs it uses;
 * queueing sets ->node; a handler clears each path record it fills.
 */
static struct cm_job *cm_job_alloc(gfp_t gfp, unsigned int paths)
{
	struct cm_job *job;

	if (cm_should_fail())
		return NULL;
	job = kmalloc(struct_size(job, path, paths), gfp);
	if (!job)
		return NULL;
	job->port = NULL;
	job->recv = NULL;
	memset(&job->ev, 0, sizeof(job->ev));
	return job;
}

/*
 * Give a received MAD back to whoever allocated it: the MAD layer, or
 * cm_test_inject() for a MAD no peer sent.
 */
static void cm_recv_free(struct ib_mad_recv_wc *rwc, bool injected)
{
	if (injected)
		cm_test_recv_free(rwc);
	else
		ib_free_recv_mad(rwc);
}

static void cm_job_free(struct cm_job *job)
{
	if (job->recv)
		cm_recv_free(job->recv, cm_job_injected(job));
	if (job->port)
		cm_dev_put(job->port->dev);
	kfree(job);
}

static void cm_destroy(struct cm_id_private *priv, int err);

/* Destroy an ID whose consumer gave it back, from cmg.wq. */
static void cm_destroy_work(struct work_struct *work)
{
	struct cm_id_private *priv = container_of(work, struct cm_id_private,
						  destroy_work);

	cm_destroy(priv, priv->destroy_err);
}

/*
 * Queue @job's event on @priv and, unless another thread is already
 * delivering, deliver the queue in order.  Consumes @job and the ID lock;
 * the caller's references on @priv are its own.
 *
 * Return: non-zero when the handler returned non-zero, which gives the ID
 * back to the CM together with the creation reference: the handler sees
 * no further event, and the caller must destroy the ID, with
 * cm_give_back() once it holds no reference of its own.
 */
static int cm_deliver_locked(struct cm_id_private *priv, struct cm_job *job)
	__releases(&priv->lock)
{
	int ret = 0;

	lockdep_assert_held(&priv->lock);
	list_add_tail(&job->node, &priv->events);
	if (priv->delivering || priv->abandoned) {
		spin_unlock_irq(&priv->lock);
		return 0;
	}
	priv->delivering = true;
	refcount_inc(&priv->refs);

	while (!ret) {
		job = list_first_entry_or_null(&priv->events, struct cm_job,
					       node);
		if (!job)
			break;
		list_del(&job->node);
		spin_unlock_irq(&priv->lock);

		ret = priv->id.cm_handler(&priv->id, &job->ev);
		if (job != &priv->send_err_job)
			cm_job_free(job);
		spin_lock_irq(&priv->lock);
		if (job == &priv->send_err_job)
			cm_send_err_release(priv, job);
	}
	priv->delivering = false;
	/* Events queued from now on wait for cm_destroy() to free them. */
	if (ret)
		priv->abandoned = true;
	spin_unlock_irq(&priv->lock);
	cm_id_put(priv);
	return ret;
}

/*
 * Destroy an ID that cm_deliver_locked() said was given back, with @err,
 * the handler's return.  The caller holds no reference: destruction waits
 * for all of them.  @defer: the caller is the MAD layer's send completion,
 * whose worker completes the sends that destruction may wait for, so the
 * destruction runs from cmg.wq instead.
 */
static void cm_give_back(struct cm_id_private *priv, int err, bool defer)
{
	if (!defer) {
		cm_destroy(priv, err);
		return;
	}
	priv->destroy_err = err;
	WARN_ON_ONCE(!queue_work(cmg.wq, &priv->destroy_work));
}

/* ------------------------------------------------------------------ */
/* What every receive handler does around its protocol rule            */

/* The outcome of a receive rule, decided with the ID locked. */
enum cm_rx_verdict {
	CM_RX_DROP,	/* the message does not fit the state: ignore it */
	CM_RX_DELIVER,	/* job->ev is filled in: queue it for the consumer */
	CM_RX_ANSWER,	/* ignore it after the rule's answer step has run */
};

/* The connection a message is about, named by the IDs it carries. */
static struct cm_id_private *cm_rx_lookup(u32 sender_id, u32 receiver_id)
{
	return cm_id_lookup(cpu_to_be32(receiver_id), cpu_to_be32(sender_id));
}

/* Forget @job and return the reference a handler's lookup took. */
static void cm_rx_done(struct cm_job *job, struct cm_id_private *priv)
{
	cm_id_put(priv);
	cm_job_free(job);
}

/*
 * Apply a message's protocol rule to the ID it is about.  @priv is the
 * handler's lookup result, referenced, or NULL when no ID owns the message.
 * @decide runs under priv->lock and must not sleep; for CM_RX_ANSWER,
 * @answer runs after the unlock, may sleep, and still has the reference.
 * On every path @job is consumed and the lookup's reference returned.
 */
static void cm_rx_apply(struct cm_job *job, struct cm_id_private *priv,
			enum cm_rx_verdict (*decide)(struct cm_id_private *priv,
						     struct cm_job *job,
						     void *msg),
			void (*answer)(struct cm_id_private *priv,
				       struct cm_job *job, void *msg),
			void *msg)
{
	enum cm_rx_verdict verdict;
	int ret;

	if (!priv) {
		cm_job_free(job);
		return;
	}
	spin_lock_irq(&priv->lock);
	verdict = decide(priv, job, msg);
	if (verdict != CM_RX_DELIVER) {
		spin_unlock_irq(&priv->lock);
		if (verdict == CM_RX_ANSWER)
			answer(priv, job, msg);
		cm_rx_done(job, priv);
		return;
	}
	ret = cm_deliver_locked(priv, job);
	cm_id_put(priv);
	if (ret)
		cm_give_back(priv, ret, false);
}

/* The last step of a rule that delivers: name the event. */
static enum cm_rx_verdict cm_rx_event(struct cm_job *job,
				      enum ib_cm_event_type type,
				      const void *pdata)
{
	job->ev.event = type;
	job->ev.private_data = (void *)pdata;
	return CM_RX_DELIVER;
}

/* ------------------------------------------------------------------ */
/* Listen tree                                                         */

static int cm_listen_cmp(struct ib_device *d1, __be64 s1,
			 struct ib_device *d2, __be64 s2)
{
	if (d1 != d2)
		return d1 < d2 ? -1 : 1;
	if (s1 != s2)
		return be64_to_cpu(s1) < be64_to_cpu(s2) ? -1 : 1;
	return 0;
}

/* The key of cm_listen_find(): what a REQ is addressed to. */
struct cm_listen_key {
	struct ib_device *device;
	__be64 service_id;
};

static int cm_listen_key_cmp(const void *key, const struct rb_node *n)
{
	const struct cm_listen_key *k = key;
	const struct cm_id_private *cur = rb_entry(n, struct cm_id_private,
						   listen_node);

	return cm_listen_cmp(k->device, k->service_id, cur->id.device,
			     cur->id.service_id);
}

static int cm_listen_node_cmp(struct rb_node *a, const struct rb_node *b)
{
	const struct cm_id_private *x = rb_entry(a, struct cm_id_private,
						 listen_node);
	const struct cm_id_private *y = rb_entry(b, struct cm_id_private,
						 listen_node);

	return cm_listen_cmp(x->id.device, x->id.service_id, y->id.device,
			     y->id.service_id);
}

static struct cm_id_private *cm_listen_find(struct ib_device *device,
					    __be64 service_id)
{
	const struct cm_listen_key key = {
		.device = device,
		.service_id = service_id,
	};
	struct cm_id_private *cur;
	struct rb_node *n;

	lockdep_assert_held(&cmg.lock);
	n = rb_find(&key, &cmg.listen_tree, cm_listen_key_cmp);
	if (!n)
		return NULL;
	cur = rb_entry(n, struct cm_id_private, listen_node);
	refcount_inc(&cur->refs);
	return cur;
}

/*
 * Insert @priv as listener; it is LISTEN before any sharer can find it
 * (cmg.lock is held from the insert until it is).  Returns @priv when
 * inserted, the existing listener when it may be shared with
 * @share_handler (a reference and a share are added), or NULL on conflict.
 */
static struct cm_id_private *cm_listen_insert(struct cm_id_private *priv,
					      ib_cm_handler share_handler)
{
	struct cm_id_private *cur;
	unsigned long flags;
	struct rb_node *dup;

	lockdep_assert_held(&priv->lock);
	spin_lock_irqsave(&cmg.lock, flags);
	dup = rb_find_add(&priv->listen_node, &cmg.listen_tree,
			  cm_listen_node_cmp);
	if (!dup) {
		priv->listen_shares = 1;
		priv->id.state = IB_CM_LISTEN;
		spin_unlock_irqrestore(&cmg.lock, flags);
		return priv;
	}
	cur = rb_entry(dup, struct cm_id_private, listen_node);
	if (!share_handler || cur->id.cm_handler != share_handler ||
	    cur->id.context) {
		cur = NULL;
	} else {
		cur->listen_shares++;
		refcount_inc(&cur->refs);
	}
	spin_unlock_irqrestore(&cmg.lock, flags);
	return cur;
}

static int cm_pick_service_id(struct cm_id_private *priv, __be64 service_id)
{
	if (service_id == IB_CM_ASSIGN_SERVICE_ID) {
		unsigned long flags;

		spin_lock_irqsave(&cmg.lock, flags);
		priv->id.service_id = cpu_to_be64(cmg.next_sid++);
		spin_unlock_irqrestore(&cmg.lock, flags);
		return 0;
	}
	if ((service_id & IB_SERVICE_ID_AGN_MASK) == IB_CM_ASSIGN_SERVICE_ID)
		return -EINVAL;
	priv->id.service_id = service_id;
	return 0;
}

/* ------------------------------------------------------------------ */
/* ID creation and destruction                                         */

/*
 * A cm_id from the cache, cleared up to its own report job only: that job
 * is set up when it is used (cm_send_finished()), and clearing it here
 * would cost every connection, so this is not kmem_cache_zalloc().
 */
static struct cm_id_private *cm_id_alloc(void)
{
	struct cm_id_private *priv;

	if (cm_should_fail())
		return NULL;
	priv = kmem_cache_alloc(cmg.id_cache, GFP_KERNEL);
	if (priv)
		memset(priv, 0, offsetof(struct cm_id_private, send_err_job));
	return priv;
}

static struct cm_id_private *cm_id_new(struct ib_device *device,
				       ib_cm_handler handler, void *context)
{
	struct cm_id_private *priv;
	u32 index;
	int ret;

	priv = cm_id_alloc();
	if (!priv)
		return ERR_PTR(-ENOMEM);

	/* The creation reference; ib_destroy_cm_id() waits out the rest. */
	refcount_set(&priv->refs, 1);
	init_completion(&priv->released);
	spin_lock_init(&priv->lock);
	priv->id = (struct ib_cm_id) {
		.device = device,
		.cm_handler = handler,
		.context = context,
		.state = IB_CM_IDLE,
		.remote_cm_qpn = 1,
	};
	INIT_LIST_HEAD(&priv->events);
	INIT_WORK(&priv->destroy_work, cm_destroy_work);
	RB_CLEAR_NODE(&priv->listen_node);
	RB_CLEAR_NODE(&priv->sidr_node);

	/* Reserve the index now; the ID becomes visible in cm_id_publish(). */
	if (cm_should_fail()) {
		ret = -ENOMEM;
		goto free;
	}
	ret = xa_alloc_cyclic(&cmg.ids, &index, NULL, xa_limit_32b,
			      &cmg.id_next, GFP_KERNEL);
	if (ret < 0)
		goto free;
	priv->id.local_id = cpu_to_be32(index ^ cmg.id_xor);
	return priv;

free:
	kmem_cache_free(cmg.id_cache, priv);
	return ERR_PTR(ret);
}

static void cm_id_publish(struct cm_id_private *priv)
{
	xa_store(&cmg.ids, cm_id_index(priv->id.local_id), priv, GFP_ATOMIC);
}

struct ib_cm_id *ib_create_cm_id(struct ib_device *device,
				 ib_cm_handler cm_handler, void *context)
{
	struct cm_id_private *priv = cm_id_new(device, cm_handler, context);

	if (IS_ERR(priv))
		return ERR_CAST(priv);
	cm_id_publish(priv);
	return &priv->id;
}
EXPORT_SYMBOL(ib_create_cm_id);

static void cm_keep_pdata(struct cm_id_private *priv, void *data, u8 len)
{
	lockdep_assert_held(&priv->lock);
	kfree(priv->pdata);
	priv->pdata = data;
	priv->pdata_len = data ? len : 0;
}

static void *cm_dup_pdata(const void *data, u8 len)
{
	void *copy;

	if (!data || !len)
		return NULL;
	if (cm_should_fail())
		return ERR_PTR(-ENOMEM);
	copy = kmemdup(data, len, GFP_KERNEL);
	return copy ? copy : ERR_PTR(-ENOMEM);
}

/* Check the caller's private data against the verb, then copy it. */
static void *cm_verb_copy_pdata(enum cm_verb verb, const void *data, u8 len)
{
	int err = cm_verb_pdata(verb, data, len);

	return err ? ERR_PTR(err) : cm_dup_pdata(data, len);
}

/* Forget the remote side without TimeWait (the connection never existed). */
static void cm_reset_to_idle(struct cm_id_private *priv)
{
	struct cm_tw *tw = priv->tw;

	lockdep_assert_held(&priv->lock);
	priv->id.state = IB_CM_IDLE;
	if (!tw)
		return;
	spin_lock(&cmg.lock);
	cm_tw_unlink(tw);
	spin_unlock(&cmg.lock);
	priv->tw = NULL;
	cm_tw_free(tw);
}

static void cm_enter_timewait(struct cm_id_private *priv)
{
	struct cm_tw *tw = priv->tw;

	lockdep_assert_held(&priv->lock);
	if (WARN_ON_ONCE(!tw)) {
		priv->id.state = IB_CM_IDLE;
		return;
	}
	priv->id.state = IB_CM_TIMEWAIT;
	priv->tw = NULL;
	spin_lock(&cmg.lock);
	cm_tw_start(tw, cmc_iba_time_to_ms(priv->av.timeout));
	spin_unlock(&cmg.lock);
}

static int cm_send_rej_locked(struct cm_id_private *priv,
			      enum ib_cm_rej_reason reason, void *ari,
			      u8 ari_len, const void *pdata, u8 pdata_len);
static int cm_send_dreq_locked(struct cm_id_private *priv,
			       const void *pdata, u8 pdata_len);
static void cm_put_dreq_for(struct cm_id_private *priv,
			    struct ib_mad_send_buf *msg,
			    const void *pdata, u8 pdata_len);
static int cm_send_drep_locked(struct cm_id_private *priv, void *pdata,
			       u8 pdata_len);
static int cm_send_sidr_rep_locked(struct cm_id_private *priv,
				   struct ib_cm_sidr_rep_param *param);

/* Take a served SIDR request out of the duplicate-detection tree. */
static void cm_sidr_unlink(struct cm_id_private *priv)
{
	lockdep_assert_held(&cmg.lock);
	if (RB_EMPTY_NODE(&priv->sidr_node))
		return;
	rb_erase(&priv->sidr_node, &cmg.sidr_tree);
	RB_CLEAR_NODE(&priv->sidr_node);
}

/*
 * Take a listener out of the listen tree.  Done in the same cmg.lock hold
 * that drops its last share, so that cm_listen_insert() never shares a
 * listener that is on its way out.
 */
static void cm_listen_unlink(struct cm_id_private *priv)
{
	lockdep_assert_held(&cmg.lock);
	priv->listen_shares = 0;
	if (RB_EMPTY_NODE(&priv->listen_node))
		return;
	rb_erase(&priv->listen_node, &cmg.listen_tree);
	RB_CLEAR_NODE(&priv->listen_node);
}

#ifdef HAVE_IB_PREPARE_CM_MRA
/*
 * The newer contract: a destroyed connection sends its DREQ once, as a
 * send that expects no answer, and goes to TimeWait; the destroy does not
 * wait for that send to complete.
 */
static void cm_leave_established(struct cm_id_private *priv)
{
	struct ib_mad_send_buf *msg;

	lockdep_assert_held(&priv->lock);
	msg = cm_id_msg(priv);
	if (!IS_ERR(msg)) {
		cm_put_dreq_for(priv, msg, NULL, 0);
		trace_icm_send_dreq(&priv->id);
		cm_msg_send_or_release(msg);
	}
	cm_enter_timewait(priv);
}
#else
/* A destroyed connection sends its DREQ as ib_send_cm_dreq() does. */
static void cm_leave_established(struct cm_id_private *priv)
{
	cm_send_dreq_locked(priv, NULL, 0);
}
#endif

/*
 * One step of leaving the current state, telling the peer what IBTA asks
 * for (DREQ, DREP, REJ, SIDR_REP).  Some steps end in TimeWait, which the
 * next step turns into IDLE.
 */
static void cm_leave_step(struct cm_id_private *priv, int err)
{
	struct ib_cm_sidr_rep_param sidr_rej = { .status = IB_SIDR_REJECT };
	enum ib_cm_state st = priv->id.state;
	__be64 guid;

	lockdep_assert_held(&priv->lock);
	if (st == IB_CM_ESTABLISHED) {
		/* XRC targets never disconnect themselves. */
		if (priv->qp_type == IB_QPT_XRC_TGT)
			priv->id.state = IB_CM_IDLE;
		else
			cm_leave_established(priv);
	} else if (st == IB_CM_DREQ_RCVD) {
		cm_send_drep_locked(priv, NULL, 0);
	} else if (st == IB_CM_DREQ_SENT) {
		cm_cancel_msg(priv);
		cm_enter_timewait(priv);
	} else if (st == IB_CM_TIMEWAIT) {
		/* The TimeWait record lives on; only the ID goes. */
		priv->id.state = IB_CM_IDLE;
	} else if (cm_state_is(st, CM_ST_REQ_OUT)) {
		/* Tell the peer we gave up; it finds us by our CA GUID. */
		guid = priv->id.device->node_guid;
		cm_cancel_msg(priv);
		cm_send_rej_locked(priv, IB_CM_REJ_TIMEOUT, &guid, sizeof(guid),
				   NULL, 0);
	} else if (st == IB_CM_REQ_RCVD && err == -ENOMEM) {
		/* Out of memory: stay silent so that the peer retries. */
		cm_reset_to_idle(priv);
	} else if (cm_state_is(st, CM_ST_HANDSHAKE)) {
		if (cm_state_is(st, CM_ST_REP_OUT))
			cm_cancel_msg(priv);
		cm_send_rej_locked(priv, IB_CM_REJ_CONSUMER_DEFINED, NULL, 0,
				   NULL, 0);
	} else if (st == IB_CM_SIDR_REQ_RCVD) {
		cm_send_sidr_rep_locked(priv, &sidr_rej);
		priv->id.state = IB_CM_IDLE;
	} else if (st == IB_CM_SIDR_REQ_SENT) {
		cm_cancel_msg(priv);
		priv->id.state = IB_CM_IDLE;
	} else if (st == IB_CM_LISTEN) {
		spin_lock(&cmg.lock);
		cm_listen_unlink(priv);
		spin_unlock(&cmg.lock);
		priv->id.state = IB_CM_IDLE;
	}
}

/*
 * Each cm_leave_step() moves the state on, a failed send included, and the
 * longest way to IDLE is ESTABLISHED, DREQ_SENT, TIMEWAIT.
 */
#define CM_LEAVE_MAX_STEPS	3

/* Bring the ID to IDLE. */
static void cm_leave_state(struct cm_id_private *priv, int err)
{
	int steps;

	lockdep_assert_held(&priv->lock);
	for (steps = 0; steps < CM_LEAVE_MAX_STEPS &&
	     priv->id.state != IB_CM_IDLE; steps++)
		cm_leave_step(priv, err);
	if (WARN_ON_ONCE(priv->id.state != IB_CM_IDLE))
		cm_reset_to_idle(priv);
}

/* The distribution's ib_cm waits this long, whatever the cm_id. */
#define CM_DESTROY_WAIT_MIN_MS	10000

/*
 * The longest wait before the first warning.  A passive cm_id takes
 * timeout_ms and max_cm_retries from the peer's REQ: up to 2^23 ms a send
 * and 16 sends, about 46 h with the quarter added.  No consumer that waits
 * in ib_destroy_cm_id() should go unreported that long.  Five minutes is
 * over three times what rdma_cm's own values need (16 sends of about 4.2 s,
 * 84 s with the quarter) and only delays the report: the destroy keeps
 * waiting, and warns again each time the wait runs out.
 */
#define CM_DESTROY_WAIT_MAX_MS	(5 * 60 * 1000)

#ifdef IB_CM_TEST_HOOKS
/*
 * Test builds only: a test harness caps the wait (at the distribution's
 * 10 s, times its time scale on a slow host), so that its kernel log check
 * still catches a destroy that waits longer than that.
 */
static unsigned int destroy_wait_cap_ms;
module_param(destroy_wait_cap_ms, uint, 0644);
MODULE_PARM_DESC(destroy_wait_cap_ms,
		 "test builds only: wait at most this long (ms) before each warning of a cm_id destruction (0: no cap)");

/*
 * How many times a destroy has warned, counted once the warning is made
 * (printk'd, unless the rate limit dropped it).
 */
static atomic_t cm_destroy_wait_timeouts = ATOMIC_INIT(0);
#endif

/*
 * How long cm_destroy() waits for the last reference before it warns.  A
 * send in flight holds a reference until the MAD layer gives up on it:
 * after the first send and max_cm_retries more, each waiting timeout_ms.
 * That, with a quarter to spare, as upstream bases it on the CM's own
 * values (upstream counts the retries only, and an ID that never sent
 * would wait 0 ms); never less than the distribution's fixed wait, nor
 * more than CM_DESTROY_WAIT_MAX_MS.
 *
 * An MRA from the peer lengthens an outstanding send beyond timeout_ms
 * (ib_modify_mad() gives it the MRA's service timeout), so a destroy
 * under an MRA may still warn before the send ends; upstream's as well.
 */
static unsigned int cm_destroy_wait_ms(struct cm_id_private *priv)
{
	u64 ms;

	lockdep_assert_held(&priv->lock);
	ms = (u64)(priv->max_cm_retries + 1) * max(priv->timeout_ms, 0);
	ms += ms / 4;
	ms = clamp_t(u64, ms, CM_DESTROY_WAIT_MIN_MS, CM_DESTROY_WAIT_MAX_MS);
#ifdef IB_CM_TEST_HOOKS
	if (READ_ONCE(destroy_wait_cap_ms))
		ms = min_t(u64, ms, READ_ONCE(destroy_wait_cap_ms));
#endif
	return ms;
}

/*
 * The destroy of @cm_id from @old_state still waits for references.  A
 * function of its own, never inlined, with the distribution's name and
 * arguments, for probes to attach to; its text is word for word the
 * distribution's, which log watchers match.
 */
static noinline void cm_destroy_id_wait_timeout(struct ib_cm_id *cm_id,
						enum ib_cm_state old_state)
{
	pr_err_ratelimited("%s: cm_id=%p timed out. state %d -> %d, refcnt=%d\n",
			   __func__, cm_id, old_state, READ_ONCE(cm_id->state),
			   refcount_read(&to_priv(cm_id)->refs));
#ifdef IB_CM_TEST_HOOKS
	atomic_inc(&cm_destroy_wait_timeouts);
#endif
}

static void cm_destroy(struct cm_id_private *priv, int err)
{
	struct cm_tw *tw = NULL;
	enum ib_cm_state old_state;
	struct cm_job *job, *tmp;
	unsigned long left, wait;

	spin_lock_irq(&priv->lock);
	old_state = priv->id.state;
	if (priv->id.state == IB_CM_LISTEN) {
		bool shared;

		spin_lock(&cmg.lock);
		shared = --priv->listen_shares > 0;
		if (!shared)
			cm_listen_unlink(priv);
		spin_unlock(&cmg.lock);
		if (shared) {
			spin_unlock_irq(&priv->lock);
			cm_id_put(priv);
			return;
		}
	}
	cm_leave_state(priv, err);
	wait = msecs_to_jiffies(cm_destroy_wait_ms(priv));

	spin_lock(&cmg.lock);
	if (priv->tw) {
		cm_tw_unlink(priv->tw);
		tw = priv->tw;
		priv->tw = NULL;
	}
	cm_sidr_unlink(priv);
	spin_unlock(&cmg.lock);
	spin_unlock_irq(&priv->lock);
	cm_tw_free(tw);

	xa_erase(&cmg.ids, cm_id_index(priv->id.local_id));
	cm_id_put(priv);
	for (;;) {
		left = wait_for_completion_timeout(&priv->released, wait);
		if (left)
			break;
		cm_destroy_id_wait_timeout(&priv->id, old_state);
	}

	/* The ID's own report is freed with the ID. */
	list_for_each_entry_safe(job, tmp, &priv->events, node) {
		list_del(&job->node);
		if (job != &priv->send_err_job)
			cm_job_free(job);
	}
	spin_lock_irq(&priv->lock);
	cm_av_clear(priv, &priv->av);
	cm_av_clear(priv, &priv->alt_av);
	cm_keep_pdata(priv, NULL, 0);
	if (priv->send_err)
		cm_send_err_release(priv, priv->send_err);
	priv->send_err = NULL;
	spin_unlock_irq(&priv->lock);
	kmem_cache_free(cmg.id_cache, priv);
}

void ib_destroy_cm_id(struct ib_cm_id *cm_id)
{
	struct cm_id_private *priv = to_priv(cm_id);

	/* Given back by a non-zero return: the CM destroys it. */
	if (WARN_ON_ONCE(READ_ONCE(priv->abandoned)))
		return;
	cm_destroy(priv, 0);
}
EXPORT_SYMBOL(ib_destroy_cm_id);

/* ------------------------------------------------------------------ */
/* Listening                                                           */

/* Give the ID its service ID and a place in the listen tree. */
static int cm_listen_claim(struct cm_id_private *priv, __be64 service_id)
{
	int err;

	lockdep_assert_held(&priv->lock);
	if (priv->id.state != IB_CM_IDLE)
		return -EINVAL;
	err = cm_pick_service_id(priv, service_id);
	if (err)
		return err;
	/* Someone else already listens on this exact service ID. */
	return cm_listen_insert(priv, NULL) == priv ? 0 : -EBUSY;
}

struct ib_cm_id *ib_cm_insert_listen(struct ib_device *device,
				     ib_cm_handler cm_handler,
				     __be64 service_id)
{
	struct cm_id_private *priv, *owner;
	int ret;

	priv = cm_id_new(device, cm_handler, NULL);
	if (IS_ERR(priv))
		return ERR_CAST(priv);
	ret = cm_pick_service_id(priv, service_id);
	if (ret)
		goto fail;

	spin_lock_irq(&priv->lock);
	owner = cm_listen_insert(priv, cm_handler);
	spin_unlock_irq(&priv->lock);
	if (owner == priv)
		return &priv->id;
	ret = -EINVAL;
	if (owner) {
		/* Shared: the caller now holds a share of @owner. */
		cm_destroy(priv, 0);
		return &owner->id;
	}
fail:
	cm_destroy(priv, 0);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL(ib_cm_insert_listen);

int ib_cm_listen(struct ib_cm_id *cm_id, __be64 service_id)
{
	struct cm_id_private *priv = to_priv(cm_id);
	int ret;
	unsigned long flags;

	spin_lock_irqsave(&priv->lock, flags);
	ret = cm_listen_claim(priv, service_id);
	spin_unlock_irqrestore(&priv->lock, flags);
	return ret;
}
EXPORT_SYMBOL(ib_cm_listen);

/* ------------------------------------------------------------------ */
/* REQ                                                                 */

static int cm_check_req_param(struct ib_cm_req_param *param)
{
	struct sa_path_rec *pri = param->primary_path;
	struct sa_path_rec *alt = param->alternate_path;

	if (!pri)
		return -EINVAL;
	switch (param->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_XRC_INI:
		break;
	default:
		return -EINVAL;
	}
	if (cm_verb_pdata(CM_VERB_REQ, param->private_data,
			  param->private_data_len))
		return -EINVAL;
	if (alt && (alt->pkey != pri->pkey || alt->mtu != pri->mtu))
		return -EINVAL;
	return 0;
}

/* Remember what the REQ asks for; the QP attributes are built from it. */
static void cm_req_commit(struct cm_id_private *priv,
			  const struct ib_cm_req_param *param)
{
	const struct sa_path_rec *path = param->primary_path;

	lockdep_assert_held(&priv->lock);
	priv->id.service_id = param->service_id;
	priv->qp_type = param->qp_type;
	priv->local_qpn = cpu_to_be32(param->qp_num & 0xffffff);
	priv->rq_psn = cpu_to_be32(param->starting_psn & 0xffffff);
	priv->pkey = path->pkey;
	priv->path_mtu = path->mtu;
	priv->responder_resources = param->responder_resources;
	priv->initiator_depth = param->initiator_depth;
	priv->retry_count = param->retry_count;
	/* Wait for an answer: a round trip plus the peer's response time. */
	priv->max_cm_retries = param->max_cm_retries;
	priv->timeout_ms = 2 * cmc_iba_time_to_ms(path->packet_life_time) +
		cmc_iba_time_to_ms(param->remote_cm_response_timeout);
}

/* The fields of the REQ @cm_id sends for @param. */
static void cm_req_fill(struct cmc_req *f, const struct ib_cm_id *cm_id,
			const struct ib_cm_req_param *param, u8 ack_delay)
{
	const struct sa_path_rec *in = param->primary_path_inbound;

	memset(f, 0, sizeof(*f));
	f->local_comm_id = be32_to_cpu(cm_id->local_id);
	f->vendor_id = param->ece.vendor_id;
	f->service_id = be64_to_cpu(param->service_id);
	f->local_ca_guid = be64_to_cpu(cm_id->device->node_guid);
	f->local_qpn = param->qp_num;
	f->init_depth = param->initiator_depth;
	f->remote_resp_timeout = param->remote_cm_response_timeout;
	cmc_qp_type_to_wire(param->qp_type, &f->transport, &f->ext_transport);
	f->flow_ctrl = param->flow_control;
	f->starting_psn = param->starting_psn;
	f->local_resp_timeout = param->local_cm_response_timeout;
	f->pkey = be16_to_cpu(param->primary_path->pkey);
	f->mtu = param->primary_path->mtu;
	f->max_cm_retries = param->max_cm_retries;
	if (param->qp_type != IB_QPT_XRC_INI) {
		f->resp_resources = param->responder_resources;
		f->retry_count = param->retry_count;
		f->rnr_retry = param->rnr_retry_count;
		f->srq = param->srq;
	}
	cmc_path_from_sa(&f->primary, param->primary_path,
			 in ? be16_to_cpu(in->ib.dlid) :
			 be16_to_cpu(IB_LID_PERMISSIVE), ack_delay);
	if (param->alternate_path)
		cmc_path_from_sa(&f->alt, param->alternate_path,
				 be16_to_cpu(IB_LID_PERMISSIVE), ack_delay);
	f->pdata = param->private_data;
	f->pdata_len = param->private_data_len;
}

int ib_send_cm_req(struct ib_cm_id *cm_id, struct ib_cm_req_param *param)
{
	struct cm_id_private *priv = to_priv(cm_id);
	struct cm_av_draft pri = {}, alt = {};
	struct ib_mad_send_buf *msg;
	struct cmc_req f;
	struct cm_tw *tw;
	unsigned long flags;
	u8 ack_delay;
	int ret;

	ret = cm_check_req_param(param);
	if (ret)
		return ret;

	tw = cm_tw_alloc(&cmg.tw, cm_id->local_id);
	if (!tw)
		return -ENOMEM;
	ret = cm_draft_from_path(param->primary_path, param->ppath_sgid_attr,
				 &pri);
	if (ret)
		goto free_tw;
	if (param->alternate_path) {
		ret = cm_draft_from_path(param->alternate_path, NULL, &alt);
		if (ret)
			goto drop_drafts;
	}

	spin_lock_irqsave(&priv->lock, flags);
	if (!cm_verb_allowed(priv, CM_VERB_REQ) || priv->tw) {
		spin_unlock_irqrestore(&priv->lock, flags);
		ret = -EINVAL;
		goto drop_drafts;
	}
	/*
	 * This REQ starts a connection with nothing of an earlier one of
	 * the ID (it reconnects after TimeWait): no alternate path and no
	 * data-path DLID unless the REQ has them; no LAP state (a migration
	 * or LAP would have ib_cm_init_qp_attr() load and re-arm a path this
	 * REQ never carried, instead of moving the QP to RTS); no peer (its
	 * REP is looked up as addressed to an ID without one).
	 */
	cm_av_clear(priv, &priv->alt_av);
	priv->av.dlid_datapath = 0;
	priv->id.lap_state = IB_CM_LAP_UNINIT;
	priv->id.remote_id = 0;
	priv->remote_qpn = 0;
	cm_av_publish(priv, &priv->av, &pri);
	if (param->primary_path_outbound)
		priv->av.dlid_datapath =
			be16_to_cpu(param->primary_path_outbound->ib.dlid);
	cm_av_publish(priv, &priv->alt_av, &alt);
	priv->tw = tw;
	tw = NULL;

	cm_req_commit(priv, param);

	msg = cm_id_msg(priv);
	if (IS_ERR(msg)) {
		ret = PTR_ERR(msg);
		goto unlock;
	}
	priv->tid = cm_new_tid(priv, msg);
	ack_delay = cm_av_port(priv, &priv->av)->dev->ack_delay;

	cm_req_fill(&f, cm_id, param, ack_delay);

	cmc_put_hdr(msg->mad, CM_REQ_ATTR_ID, priv->tid, param->ece.attr_mod);
	cmc_put_req(msg->mad, &f);

	trace_icm_send_req(cm_id);
	ret = cm_send_tracked(priv, msg, IB_CM_REQ_SENT);
	if (!ret)
		cm_id->state = IB_CM_REQ_SENT;
unlock:
	if (ret) {
		/* Not sent: the record was never indexed; allow a retry. */
		tw = priv->tw;
		priv->tw = NULL;
		/*
		 * Nor was any path announced: keep none of them, so that no
		 * later connection of this ID takes one for its own (an
		 * alternate path to load or migrate to) and no device stays
		 * referenced for them.
		 */
		cm_av_clear(priv, &priv->av);
		cm_av_clear(priv, &priv->alt_av);
	}
	spin_unlock_irqrestore(&priv->lock, flags);
	cm_tw_free(tw);
	return ret;

drop_drafts:
	cm_draft_release(&alt);
	cm_draft_release(&pri);
free_tw:
	cm_tw_free(tw);
	return ret;
}
EXPORT_SYMBOL(ib_send_cm_req);

/* Send a REJ straight back to the sender of @rwc (no cm_id involved). */
static void cm_issue_rej(struct cm_port *port, struct ib_mad_recv_wc *rwc,
			 enum ib_cm_rej_reason reason, enum cmc_msg_kind what)
{
	const struct cm_rej_msg *in = (void *)rwc->recv_buf.mad;
	struct ib_mad_send_buf *msg;
	struct cmc_rej in_ids, f = {};

	msg = cm_reply_msg(port, rwc);
	if (IS_ERR(msg))
		return;
	/* Every CM message starts with the sender's comm ID. */
	cmc_get_rej(in, &in_ids);
	f.remote_comm_id = in_ids.local_comm_id;
	f.local_comm_id = what == CMC_MSG_REQ ? 0 : in_ids.remote_comm_id;
	f.msg_rejected = what;
	f.reason = reason;
	trace_icm_issue_rej(in_ids.local_comm_id, in_ids.remote_comm_id);
	cmc_put_hdr(msg->mad, CM_REJ_ATTR_ID, in->hdr.tid, 0);
	cmc_put_rej(msg->mad, &f);
	cm_msg_send_or_release(msg);
}

/* Disconnect the older local connection @lid/@rid, if any.  May sleep. */
static void cm_end_stale(__be32 lid, __be32 rid)
{
	struct cm_id_private *old;

	old = cm_id_lookup(lid, rid);
	if (old) {
		ib_send_cm_dreq(&old->id, NULL, 0);
		cm_id_put(old);
	}
}

/*
 * The peer's QP is still bound to an older local connection (@lid/@rid)
 * that it seems to have forgotten: refuse the new message as stale and
 * disconnect the old connection.  May sleep.
 */
static void cm_refuse_stale(struct cm_job *job, enum cmc_msg_kind what,
			    __be32 lid, __be32 rid)
{
	cm_issue_rej(job->port, job->recv, IB_CM_REJ_STALE_CONN, what);
	cm_end_stale(lid, rid);
}

static void cm_put_mra_for(struct cm_id_private *priv, void *mad,
			   enum cmc_msg_kind what, u8 service_timeout,
			   const void *pdata, u8 pdata_len)
{
	struct cmc_mra f = {
		.local_comm_id = be32_to_cpu(priv->id.local_id),
		.remote_comm_id = be32_to_cpu(priv->id.remote_id),
		.msg_mraed = what,
		.service_timeout = service_timeout,
		.pdata = pdata,
		.pdata_len = pdata_len,
	};

	cmc_put_hdr(mad, CM_MRA_ATTR_ID, priv->tid, 0);
	cmc_put_mra(mad, &f);
}

static void cm_put_rej_for(struct cm_id_private *priv, void *mad,
			   enum ib_cm_state state, enum ib_cm_rej_reason reason,
			   const void *ari, u8 ari_len,
			   const void *pdata, u8 pdata_len)
{
	struct cmc_rej f = {
		.local_comm_id = be32_to_cpu(priv->id.local_id),
		.remote_comm_id = be32_to_cpu(priv->id.remote_id),
		.msg_rejected = CMC_MSG_OTHER,
		.reason = reason,
		.ari = ari,
		.ari_len = ari_len,
		.pdata = pdata,
		.pdata_len = pdata_len,
	};

	switch (state) {
	case IB_CM_REQ_RCVD:
		/* Peers match a REJ of their REQ by their own ID only. */
		f.local_comm_id = 0;
		f.msg_rejected = CMC_MSG_REQ;
		break;
	case IB_CM_MRA_REQ_SENT:
		f.msg_rejected = CMC_MSG_REQ;
		break;
	case IB_CM_REP_RCVD:
	case IB_CM_MRA_REP_SENT:
		f.msg_rejected = CMC_MSG_REP;
		break;
	default:
		break;
	}
	cmc_put_hdr(mad, CM_REJ_ATTR_ID, priv->tid, 0);
	cmc_put_rej(mad, &f);
}

/*
 * A REQ we already know: repeat our MRA.  A connection in TimeWait has left
 * the trees, so it is only seen here when it entered TimeWait after the
 * lookup: the REQ was a repeat of the old connection, REJ it as stale.
 */
static void cm_dup_req(struct cm_job *job, struct cm_id_private *other)
{
	struct ib_mad_send_buf *msg;
	enum ib_cm_state state;

	cm_ctr_add(job->port, CM_CTR_RX_DUPS, CM_REQ_ATTR_ID, 1);
	cm_test_dup_req_found(job, &other->id);
	spin_lock_irq(&other->lock);
	state = other->id.state;
	spin_unlock_irq(&other->lock);
	if (state != IB_CM_MRA_REQ_SENT && state != IB_CM_TIMEWAIT)
		return;

	msg = cm_reply_msg(job->port, job->recv);
	if (IS_ERR(msg))
		return;
	spin_lock_irq(&other->lock);
	state = other->id.state;
	if (state == IB_CM_MRA_REQ_SENT) {
		cm_put_mra_for(other, msg->mad, CMC_MSG_REQ,
			       other->service_timeout, other->pdata,
			       other->pdata_len);
		cm_msg_mark_repeat(msg);
	} else if (state == IB_CM_TIMEWAIT) {
		cm_put_rej_for(other, msg->mad, state, IB_CM_REJ_STALE_CONN,
			       NULL, 0, NULL, 0);
#ifdef HAVE_IB_PREPARE_CM_MRA
		/* The newer CM counts this REJ as a repeat as well. */
		cm_msg_mark_repeat(msg);
#endif
	}
	spin_unlock_irq(&other->lock);
	if (state == IB_CM_MRA_REQ_SENT || state == IB_CM_TIMEWAIT) {
		trace_icm_send_dup_req(&other->id);
		cm_msg_send_or_release(msg);
	} else {
		cm_msg_abandon(msg);
	}
}

/* Build a path record, as seen from this side, from a REQ path block. */
static void cm_path_from_req(const struct cmc_req *r, const struct cmc_path *w,
			     struct sa_path_rec *p, u32 dlid)
{
	/* Everything the peer proposed is taken as an exact match. */
	cmc_path_to_sa(w, p, dlid);
	p->service_id = cpu_to_be64(r->service_id);
	p->pkey = cpu_to_be16(r->pkey);
	p->mtu = r->mtu;
}

/* The record type of a path a peer proposed over IB (or OPA). */
static enum sa_path_rec_type cm_ib_path_type(struct cm_port *port,
					     const struct cmc_path *w)
{
	return cmc_path_type(&w->local_gid,
			     rdma_cap_opa_ah(port->dev->ibdev, port->num));
}

/*
 * ULPs match a REQ's source GID against their own: an OPA GID (which
 * carries a LID) in the event's path becomes the port's IB GID.
 */
static void cm_opa_event_sgid(struct cm_port *port, struct sa_path_rec *p)
{
	union ib_gid gid;

	if (p->rec_type != SA_PATH_REC_TYPE_OPA || !ib_is_opa_gid(&p->sgid))
		return;
	if (rdma_query_gid(port->dev->ibdev, port->num, 0, &gid))
		dev_warn_ratelimited(&port->dev->ibdev->dev,
				     "ib_cm: no GID 0 to show for an OPA path\n");
	else
		p->sgid = gid;
}

/* Inter-subnet REQs carry permissive LIDs; take them from the WC instead. */
static void cm_fix_routed_lids(struct cmc_path *w, struct ib_wc *wc)
{
	if (w->subnet_local)
		return;
	if (w->local_lid == be16_to_cpu(IB_LID_PERMISSIVE)) {
		w->local_lid = wc->slid;
		w->sl = wc->sl;
	}
	if (w->remote_lid == be16_to_cpu(IB_LID_PERMISSIVE))
		w->remote_lid = wc->dlid_path_bits;
}

static u16 cm_bth_pkey(struct cm_job *job)
{
	u16 pkey = 0;

	if (ib_get_cached_pkey(job->port->dev->ibdev, job->port->num,
			       job->recv->wc->pkey_index, &pkey))
		return 0;
	return pkey;
}

static void cm_fill_req_event(struct cm_job *job, const struct cmc_req *r,
			      struct ib_cm_id *listen_id,
			      const struct ib_gid_attr *sgid_attr, bool has_alt)
{
	struct ib_cm_req_event_param *ev = &job->ev.param.req_rcvd;

	job->ev.event = IB_CM_REQ_RECEIVED;
	job->ev.private_data = (void *)r->pdata;

	/* Where it came in and which listener matched. */
	ev->port = job->port->num;
	ev->bth_pkey = cm_bth_pkey(job);
	ev->listen_id = listen_id;
	ev->ppath_sgid_attr = sgid_attr;
	ev->primary_path = &job->path[0];
	ev->alternate_path = has_alt ? &job->path[1] : NULL;

	/* The peer's transport parameters, as offered. */
	ev->qp_type = cmc_qp_type_from_wire(r->transport, r->ext_transport);
	ev->remote_qpn = r->local_qpn;
	ev->remote_qkey = r->local_qkey;
	ev->remote_ca_guid = cpu_to_be64(r->local_ca_guid);
	ev->starting_psn = r->starting_psn;
	ev->srq = r->srq;
	ev->flow_control = r->flow_ctrl;
	ev->rnr_retry_count = r->rnr_retry;
	ev->retry_count = r->retry_count;

	/* Mirrored: the peer's initiator depth is our responder resources. */
	ev->initiator_depth = r->resp_resources;
	ev->responder_resources = r->init_depth;
	ev->remote_cm_response_timeout = r->local_resp_timeout;
	ev->local_cm_response_timeout = r->remote_resp_timeout;

	ev->ece.attr_mod = be32_to_cpu(job->recv->recv_buf.mad->mad_hdr.attr_mod);
	ev->ece.vendor_id = r->vendor_id;
}

/*
 * Match a new REQ against existing connections and listeners.  Returns the
 * listener (referenced) or NULL when the REQ was handled here.
 */
static struct cm_id_private *cm_req_match(struct cm_job *job,
					  struct cm_id_private *priv)
{
	struct cm_id_private *listener, *other;
	struct cm_tw *tw = priv->tw, *hit;
	__be32 lid, rid;

	spin_lock_irq(&cmg.lock);
	hit = cm_tw_insert_rid(tw);
	if (hit) {
		lid = hit->local_id;
		rid = hit->remote_id;
		spin_unlock_irq(&cmg.lock);
		other = cm_id_lookup(lid, rid);
		if (other) {
			cm_dup_req(job, other);
			cm_id_put(other);
		}
		return NULL;
	}
	hit = cm_tw_insert_rqpn(tw);
	if (hit) {
		lid = hit->local_id;
		rid = hit->remote_id;
		cm_tw_unlink(tw);
		spin_unlock_irq(&cmg.lock);
		cm_refuse_stale(job, CMC_MSG_REQ, lid, rid);
		return NULL;
	}
	listener = cm_listen_find(priv->id.device, priv->id.service_id);
	if (!listener) {
		cm_tw_unlink(tw);
		spin_unlock_irq(&cmg.lock);
		cm_issue_rej(job->port, job->recv, IB_CM_REJ_INVALID_SERVICE_ID,
			     CMC_MSG_REQ);
		return NULL;
	}
	spin_unlock_irq(&cmg.lock);
	return listener;
}

/* What a REQ says of its sender and of the connection, seen from here. */
static void cm_req_record(struct cm_id_private *priv, const struct cm_req_msg *m,
			  const struct cmc_req *r)
{
	/* Identity of the peer, also recorded for duplicate detection. */
	priv->tid = m->hdr.tid;
	priv->id.service_id = cpu_to_be64(r->service_id);
	priv->id.remote_id = cpu_to_be32(r->local_comm_id);
	priv->remote_qpn = cpu_to_be32(r->local_qpn);
	priv->tw->remote_qpn = priv->remote_qpn;
	priv->tw->remote_id = priv->id.remote_id;
	priv->tw->remote_ca_guid = cpu_to_be64(r->local_ca_guid);

	/* Connection parameters, seen from this side (depths mirrored). */
	priv->qp_type = cmc_qp_type_from_wire(r->transport, r->ext_transport);
	priv->pkey = cpu_to_be16(r->pkey);
	priv->path_mtu = r->mtu;
	priv->sq_psn = cpu_to_be32(r->starting_psn);
	priv->responder_resources = r->init_depth;
	priv->initiator_depth = r->resp_resources;
	priv->rnr_retry_count = r->rnr_retry;
	priv->retry_count = r->retry_count;
	priv->max_cm_retries = r->max_cm_retries;
	priv->timeout_ms = cmc_iba_time_to_ms(r->local_resp_timeout);
}

/*
 * The paths of a REQ as this side sees them (job->path[0], and [1] when
 * @has_alt); RoCE takes the record type from the GID the REQ came to.
 */
static void cm_req_paths(struct cm_job *job, struct cmc_req *r,
			 struct rdma_ah_attr *wc_ah, bool has_alt)
{
	bool roce = wc_ah->type == RDMA_AH_ATTR_TYPE_ROCE;

	memset(&job->path[0], 0, sizeof(job->path[0]) * (has_alt ? 2 : 1));
	if (roce) {
		enum ib_gid_type t = wc_ah->grh.sgid_attr->gid_type;

		job->path[0].rec_type = sa_conv_gid_to_pathrec_type(t);
		job->path[1].rec_type = job->path[0].rec_type;
	} else {
		cm_fix_routed_lids(&r->primary, job->recv->wc);
		cm_fix_routed_lids(&r->alt, job->recv->wc);
		job->path[0].rec_type = cm_ib_path_type(job->port, &r->primary);
		job->path[1].rec_type = cm_ib_path_type(job->port, &r->alt);
	}
	cm_path_from_req(r, &r->primary, &job->path[0], job->recv->wc->slid);
	if (has_alt)
		cm_path_from_req(r, &r->alt, &job->path[1], r->alt.local_lid);
	if (roce)
		sa_path_set_dmac(&job->path[0], wc_ah->roce.dmac);
	job->path[0].hop_limit = wc_ah->grh.hop_limit;
}

static void cm_req_rcvd(struct cm_job *job)
{
	struct cm_req_msg *m = (void *)job->recv->recv_buf.mad;
	struct cm_av_draft wcd = {}, pd = {}, ad = {};
	struct cm_id_private *priv, *listener;
	bool roce, has_alt, have_gid = false;
	union ib_gid gid;
	struct cmc_req r;
	int ret;

	cmc_get_req(m, &r);
	has_alt = cmc_req_has_alt(m);

	priv = cm_id_new(job->port->dev->ibdev, NULL, NULL);
	if (IS_ERR(priv))
		goto free_job;
	priv->tw = cm_tw_alloc(&cmg.tw, priv->id.local_id);
	if (!priv->tw)
		goto destroy;
	if (cm_draft_from_wc(job->port, job->recv, &wcd))
		goto destroy;

	/*
	 * @priv is not published until it has a listener's handler: no one
	 * else can reach it yet, so it is set up without its lock.  It is
	 * REQ_RCVD from here on, as the trace of a REQ without a listener
	 * shows, and IDLE again when it is dropped unanswered.
	 */
	cm_req_record(priv, m, &r);
	priv->id.state = IB_CM_REQ_RCVD;
	listener = cm_req_match(job, priv);
	if (!listener) {
		trace_icm_no_listener_err(&priv->id);
		priv->id.state = IB_CM_IDLE;
		cm_draft_release(&wcd);
		goto destroy;
	}

	cm_req_paths(job, &r, &wcd.ah_attr, has_alt);
	roce = wcd.ah_attr.type == RDMA_AH_ATTR_TYPE_ROCE;
	ret = cm_draft_from_path(&job->path[0], wcd.ah_attr.grh.sgid_attr, &pd);
	if (!ret && has_alt)
		ret = cm_draft_from_path(&job->path[1], NULL, &ad);
	if (ret) {
		have_gid = !rdma_query_gid(job->port->dev->ibdev,
					   job->port->num, 0, &gid);
	} else if (!roce) {
		/* The AVs are built: only the consumer's view changes. */
		cm_opa_event_sgid(job->port, &job->path[0]);
		if (has_alt)
			cm_opa_event_sgid(job->port, &job->path[1]);
	}

	spin_lock_irq(&priv->lock);
	cm_av_publish(priv, &priv->av, &wcd);
	if (ret) {
		/* Answer with the WC-derived AV, then drop the ID. */
		cm_send_rej_locked(priv, pd.valid ? IB_CM_REJ_INVALID_ALT_GID :
					 IB_CM_REJ_INVALID_GID,
				   have_gid ? &gid : NULL,
				   have_gid ? sizeof(gid) : 0, NULL, 0);
		spin_unlock_irq(&priv->lock);
		cm_draft_release(&pd);
		cm_draft_release(&ad);
		cm_id_put(listener);
		goto destroy;
	}
	cm_av_publish(priv, &priv->av, &pd);
	cm_av_publish(priv, &priv->alt_av, &ad);
	if (!roce)
		priv->av.dlid_datapath = r.primary.local_lid;
	priv->id.cm_handler = listener->id.cm_handler;
	priv->id.context = listener->id.context;
	cm_fill_req_event(job, &r, &listener->id,
			  priv->av.ah_attr.grh.sgid_attr, has_alt);
	cm_id_publish(priv);
	/* The new ID has no other deliverer: the event goes out right here. */
	ret = cm_deliver_locked(priv, job);
	cm_id_put(listener);
	if (ret)
		cm_give_back(priv, ret, false);
	return;

destroy:
	cm_destroy(priv, 0);
free_job:
	cm_job_free(job);
}

/* ------------------------------------------------------------------ */
/* REP / RTU                                                           */

/* An XRC target has no QP of its own: its number travels as the EECN. */
static void cm_rep_qp_fields(const struct ib_cm_rep_param *param,
			     bool xrc_tgt, struct cmc_rep *f)
{
	if (xrc_tgt) {
		f->local_eecn = param->qp_num;
		f->srq = 1;
		return;
	}
	f->local_qpn = param->qp_num;
	f->srq = param->srq;
	f->init_depth = param->initiator_depth;
	f->flow_ctrl = param->flow_control;
}

/* Remember what the REP promised; the QP attributes are built from it. */
static void cm_rep_commit(struct cm_id_private *priv,
			  const struct ib_cm_rep_param *param)
{
	u32 qpn = param->qp_num;

	WARN_ONCE(qpn & 0xff000000, "QPN 0x%x is wider than 24 bits\n", qpn);
	priv->local_qpn = cpu_to_be32(qpn & 0xffffff);
	priv->rq_psn = cpu_to_be32(param->starting_psn & 0xffffff);
	priv->responder_resources = param->responder_resources;
	priv->initiator_depth = param->initiator_depth;
	priv->id.state = IB_CM_REP_SENT;
}

int ib_send_cm_rep(struct ib_cm_id *cm_id, struct ib_cm_rep_param *param)
{
	struct cm_id_private *priv = to_priv(cm_id);
	struct ib_mad_send_buf *msg;
	struct cmc_rep f = {
		.starting_psn = param->starting_psn,
		.resp_resources = param->responder_resources,
		.failover = param->failover_accepted,
		.rnr_retry = param->rnr_retry_count,
		.vendor_id = param->ece.vendor_id,
		.pdata = param->private_data,
		.pdata_len = param->private_data_len,
	};
	unsigned long flags;
	int ret;

	ret = cm_verb_pdata(CM_VERB_REP, param->private_data,
			    param->private_data_len);
	if (ret)
		return ret;

	spin_lock_irqsave(&priv->lock, flags);
	if (!cm_verb_allowed(priv, CM_VERB_REP)) {
		trace_icm_send_rep_err(cm_id->local_id, cm_id->state);
		spin_unlock_irqrestore(&priv->lock, flags);
		return -EINVAL;
	}
	msg = cm_id_msg_on(priv, true);
	ret = PTR_ERR_OR_ZERO(msg);
	if (!ret) {
		f.local_comm_id = be32_to_cpu(cm_id->local_id);
		f.remote_comm_id = be32_to_cpu(cm_id->remote_id);
		f.local_ca_guid = be64_to_cpu(cm_id->device->node_guid);
		f.target_ack_delay =
			cm_av_port(priv, &priv->av)->dev->ack_delay;
		cm_rep_qp_fields(param, priv->qp_type == IB_QPT_XRC_TGT, &f);
		cmc_put_hdr(msg->mad, CM_REP_ATTR_ID, priv->tid,
			    param->ece.attr_mod);
		cmc_put_rep(msg->mad, &f);
		trace_icm_send_rep(cm_id);
		ret = cm_send_tracked(priv, msg, IB_CM_REP_SENT);
	}
	if (!ret)
		cm_rep_commit(priv, param);
	spin_unlock_irqrestore(&priv->lock, flags);
	return ret;
}
EXPORT_SYMBOL(ib_send_cm_rep);

/* RTU and DREP carry nothing but the two comm IDs and private data. */
static void cm_put_ids_for(struct cm_id_private *priv, void *mad,
			   __be16 attr_id, const void *pdata, u8 pdata_len)
{
	struct cmc_ids f = {
		.local_comm_id = be32_to_cpu(priv->id.local_id),
		.remote_comm_id = be32_to_cpu(priv->id.remote_id),
		.pdata = pdata,
		.pdata_len = pdata_len,
	};

	cmc_put_hdr(mad, attr_id, priv->tid, 0);
	if (attr_id == CM_RTU_ATTR_ID)
		cmc_put_rtu(mad, &f);
	else
		cmc_put_drep(mad, &f);
}

int ib_send_cm_rtu(struct ib_cm_id *cm_id, const void *private_data,
		   u8 private_data_len)
{
	struct cm_id_private *priv = to_priv(cm_id);
	struct ib_mad_send_buf *msg;
	unsigned long flags;
	void *copy;
	int ret;

	copy = cm_verb_copy_pdata(CM_VERB_RTU, private_data, private_data_len);
	if (IS_ERR(copy))
		return PTR_ERR(copy);

	spin_lock_irqsave(&priv->lock, flags);
	if (!cm_verb_allowed(priv, CM_VERB_RTU)) {
		trace_icm_send_cm_rtu_err(cm_id);
		spin_unlock_irqrestore(&priv->lock, flags);
		kfree(copy);
		return -EINVAL;
	}
	msg = cm_id_msg(priv);
	ret = PTR_ERR_OR_ZERO(msg);
	if (!ret) {
		cm_put_ids_for(priv, msg->mad, CM_RTU_ATTR_ID, private_data,
			       private_data_len);
		trace_icm_send_rtu(cm_id);
		ret = cm_msg_send_or_release(msg);
	}
	if (!ret) {
		cm_id->state = IB_CM_ESTABLISHED;
		cm_keep_pdata(priv, copy, private_data_len);
		copy = NULL;
	}
	spin_unlock_irqrestore(&priv->lock, flags);
	kfree(copy);
	return ret;
}
EXPORT_SYMBOL(ib_send_cm_rtu);

/* A REP for a connection past REP_RCVD: repeat RTU or MRA. */
static void cm_dup_rep(struct cm_job *job, const struct cmc_rep *r)
{
	struct cm_id_private *priv;
	struct ib_mad_send_buf *msg;
	bool send = true;

	priv = cm_rx_lookup(r->local_comm_id, r->remote_comm_id);
	if (!priv)
		return;
	cm_ctr_add(job->port, CM_CTR_RX_DUPS, CM_REP_ATTR_ID, 1);
	msg = cm_reply_msg(job->port, job->recv);
	if (IS_ERR(msg))
		goto put;

	spin_lock_irq(&priv->lock);
	if (priv->id.state == IB_CM_ESTABLISHED)
		cm_put_ids_for(priv, msg->mad, CM_RTU_ATTR_ID, priv->pdata,
			       priv->pdata_len);
	else if (priv->id.state == IB_CM_MRA_REP_SENT)
		cm_put_mra_for(priv, msg->mad, CMC_MSG_REP,
			       priv->service_timeout, priv->pdata,
			       priv->pdata_len);
	else
		send = false;
	spin_unlock_irq(&priv->lock);
	if (send) {
		trace_icm_send_dup_rep(&priv->id);
		cm_msg_mark_repeat(msg);
		cm_msg_send_or_release(msg);
	} else {
		cm_msg_abandon(msg);
	}
put:
	cm_id_put(priv);
}

/* A decoded REP and, if it is stale, the connection it collides with. */
struct cm_rep_rx {
	struct cmc_rep r;
	__be32 old_lid;
	__be32 old_rid;
};

static enum cm_rx_verdict cm_rep_decide(struct cm_id_private *priv,
					struct cm_job *job, void *msg)
{
	const struct cm_rep_msg *m = (void *)job->recv->recv_buf.mad;
	struct ib_cm_rep_event_param *ev = &job->ev.param.rep_rcvd;
	struct cm_rep_rx *x = msg;
	const struct cmc_rep *r = &x->r;
	struct cm_tw *hit;
	__be32 rqpn;

	lockdep_assert_held(&priv->lock);
	if (!cm_state_is(priv->id.state, CM_ST_REQ_OUT)) {
		trace_icm_rep_unknown_err(r->local_comm_id, r->remote_comm_id,
					  priv->id.state);
		return CM_RX_DROP;
	}
	rqpn = cpu_to_be32(priv->qp_type == IB_QPT_XRC_INI ? r->local_eecn :
							      r->local_qpn);
	priv->tw->remote_id = cpu_to_be32(r->local_comm_id);
	priv->tw->remote_ca_guid = cpu_to_be64(r->local_ca_guid);
	priv->tw->remote_qpn = rqpn;

	spin_lock(&cmg.lock);
	if (cm_tw_insert_rid(priv->tw)) {
		/* The peer's comm ID is taken already: a repeated REP. */
		spin_unlock(&cmg.lock);
		trace_icm_insert_failed_err(r->remote_comm_id);
		return CM_RX_DROP;
	}
	hit = cm_tw_insert_rqpn(priv->tw);
	if (hit) {
		x->old_lid = hit->local_id;
		x->old_rid = hit->remote_id;
		cm_tw_unlink(priv->tw);
	}
	spin_unlock(&cmg.lock);
	if (hit)
		return CM_RX_ANSWER;

	priv->id.state = IB_CM_REP_RCVD;
	priv->id.remote_id = cpu_to_be32(r->local_comm_id);
	priv->remote_qpn = rqpn;
	priv->sq_psn = cpu_to_be32(r->starting_psn);
	priv->target_ack_delay = r->target_ack_delay;
	priv->rnr_retry_count = r->rnr_retry;
	priv->responder_resources = r->init_depth;
	priv->initiator_depth = r->resp_resources;
	priv->av.timeout = cmc_ack_timeout(r->target_ack_delay,
					   priv->av.timeout - 1);
	priv->alt_av.timeout = cmc_ack_timeout(r->target_ack_delay,
					       priv->alt_av.timeout - 1);
	cm_cancel_msg(priv);

	ev->remote_qpn = be32_to_cpu(rqpn);
	ev->remote_qkey = r->local_qkey;
	ev->remote_ca_guid = cpu_to_be64(r->local_ca_guid);
	ev->starting_psn = r->starting_psn;
	ev->srq = r->srq;
	ev->flow_control = r->flow_ctrl;
	ev->failover_accepted = r->failover;
	ev->target_ack_delay = r->target_ack_delay;
	ev->rnr_retry_count = r->rnr_retry;
	/* Mirrored, as for the REQ. */
	ev->initiator_depth = r->resp_resources;
	ev->responder_resources = r->init_depth;
	ev->ece.attr_mod = be32_to_cpu(m->hdr.attr_mod);
	ev->ece.vendor_id = r->vendor_id;
	return cm_rx_event(job, IB_CM_REP_RECEIVED, r->pdata);
}

static void cm_rep_stale(struct cm_id_private *priv, struct cm_job *job,
			 void *msg)
{
	struct cm_rep_rx *x = msg;

	/* traced between the REJ and the old connection's DREQ, as ib_cm */
	cm_issue_rej(job->port, job->recv, IB_CM_REJ_STALE_CONN, CMC_MSG_REP);
	trace_icm_staleconn_err(x->r.local_comm_id, x->r.remote_comm_id);
	cm_end_stale(x->old_lid, x->old_rid);
}

static void cm_rep_rcvd(struct cm_job *job)
{
	struct cm_rep_rx x = {};
	struct cm_id_private *priv;

	cmc_get_rep((void *)job->recv->recv_buf.mad, &x.r);
	priv = cm_id_lookup(cpu_to_be32(x.r.remote_comm_id), 0);
	if (!priv) {
		cm_dup_rep(job, &x.r);
		trace_icm_remote_no_priv_err(x.r.remote_comm_id);
	}
	cm_rx_apply(job, priv, cm_rep_decide, cm_rep_stale, &x);
}

static enum cm_rx_verdict cm_rtu_decide(struct cm_id_private *priv,
					struct cm_job *job, void *msg)
{
	const struct cmc_ids *r = msg;

	lockdep_assert_held(&priv->lock);
	if (!cm_state_is(priv->id.state, CM_ST_REP_OUT)) {
		cm_ctr_add(job->port, CM_CTR_RX_DUPS, CM_RTU_ATTR_ID, 1);
		return CM_RX_DROP;
	}
	priv->id.state = IB_CM_ESTABLISHED;
	cm_cancel_msg(priv);
	return cm_rx_event(job, IB_CM_RTU_RECEIVED, r->pdata);
}

static void cm_rtu_rcvd(struct cm_job *job)
{
	struct cmc_ids r;

	cmc_get_rtu((void *)job->recv->recv_buf.mad, &r);
	cm_rx_apply(job, cm_rx_lookup(r.local_comm_id, r.remote_comm_id),
		    cm_rtu_decide, NULL, &r);
}

/* ------------------------------------------------------------------ */
/* DREQ / DREP                                                         */

/* Fill @msg as the ID's DREQ, with a new transaction ID. */
static void cm_put_dreq_for(struct cm_id_private *priv,
			    struct ib_mad_send_buf *msg,
			    const void *pdata, u8 pdata_len)
{
	struct cmc_dreq f = {
		.local_comm_id = be32_to_cpu(priv->id.local_id),
		.remote_comm_id = be32_to_cpu(priv->id.remote_id),
		.remote_qpn = be32_to_cpu(priv->remote_qpn),
		.pdata = pdata,
		.pdata_len = pdata_len,
	};

	lockdep_assert_held(&priv->lock);
	cmc_put_hdr(msg->mad, CM_DREQ_ATTR_ID, cm_new_tid(priv, msg), 0);
	cmc_put_dreq(msg->mad, &f);
}

/* Whatever happens to the DREQ, the connection goes to TimeWait. */
static int cm_send_dreq_locked(struct cm_id_private *priv,
			       const void *pdata, u8 pdata_len)
{
	struct ib_mad_send_buf *msg;
	int ret;

	lockdep_assert_held(&priv->lock);
	ret = cm_verb_pdata(CM_VERB_DREQ, pdata, pdata_len);
	if (ret)
		return ret;
	if (!cm_verb_allowed(priv, CM_VERB_DREQ)) {
		trace_icm_dreq_skipped(&priv->id);
		return -EINVAL;
	}

	msg = cm_id_msg(priv);
	ret = PTR_ERR_OR_ZERO(msg);
	if (!ret) {
		cm_put_dreq_for(priv, msg, pdata, pdata_len);
		trace_icm_send_dreq(&priv->id);
		ret = cm_send_tracked(priv, msg, IB_CM_DREQ_SENT);
	}
	if (ret)
		cm_enter_timewait(priv);
	else
		priv->id.state = IB_CM_DREQ_SENT;
	return ret;
}

int ib_send_cm_dreq(struct ib_cm_id *cm_id, const void *private_data,
		    u8 private_data_len)
{
	struct cm_id_private *priv = to_priv(cm_id);
	int ret;
	unsigned long flags;

	spin_lock_irqsave(&priv->lock, flags);
	ret = cm_send_dreq_locked(priv, private_data, private_data_len);
	spin_unlock_irqrestore(&priv->lock, flags);
	return ret;
}
EXPORT_SYMBOL(ib_send_cm_dreq);

/* Takes ownership of @pdata (kmalloc'ed or NULL). */
static int cm_send_drep_locked(struct cm_id_private *priv, void *pdata,
			       u8 pdata_len)
{
	struct ib_mad_send_buf *msg;
	int ret;

	lockdep_assert_held(&priv->lock);
	ret = cm_verb_pdata(CM_VERB_DREP, pdata, pdata_len);
	if (!ret && !cm_verb_allowed(priv, CM_VERB_DREP)) {
		trace_icm_send_drep_err(&priv->id);
		ret = -EINVAL;
	}
	if (ret) {
		kfree(pdata);
		return ret;
	}

	/* TimeWait starts now; the DREP itself is not retried. */
	cm_keep_pdata(priv, pdata, pdata_len);
	cm_enter_timewait(priv);
	msg = cm_id_msg(priv);
	if (IS_ERR(msg))
		return PTR_ERR(msg);
	cm_put_ids_for(priv, msg->mad, CM_DREP_ATTR_ID, priv->pdata,
		       priv->pdata_len);
	trace_icm_send_drep(&priv->id);
	return cm_msg_send_or_release(msg);
}

int ib_send_cm_drep(struct ib_cm_id *cm_id, const void *private_data,
		    u8 private_data_len)
{
	struct cm_id_private *priv = to_priv(cm_id);
	unsigned long flags;
	void *copy;
	int ret;

	copy = cm_verb_copy_pdata(CM_VERB_DREP, private_data,
				  private_data_len);
	ret = PTR_ERR_OR_ZERO(copy);
	if (!ret) {
		spin_lock_irqsave(&priv->lock, flags);
		ret = cm_send_drep_locked(priv, copy, private_data_len);
		spin_unlock_irqrestore(&priv->lock, flags);
	}
	return ret;
}
EXPORT_SYMBOL(ib_send_cm_drep);

/* DREQ for an ID we no longer have: answer so the peer can finish. */
static void cm_issue_drep(struct cm_port *port, struct ib_mad_recv_wc *rwc)
{
	const struct cm_dreq_msg *in = (void *)rwc->recv_buf.mad;
	struct ib_mad_send_buf *msg;
	struct cmc_dreq d;
	struct cmc_ids f = {};

	msg = cm_reply_msg(port, rwc);
	if (IS_ERR(msg))
		return;
	cmc_get_dreq(in, &d);
	f.local_comm_id = d.remote_comm_id;
	f.remote_comm_id = d.local_comm_id;
	trace_icm_issue_drep(d.local_comm_id, d.remote_comm_id);
	cmc_put_hdr(msg->mad, CM_DREP_ATTR_ID, in->hdr.tid, 0);
	cmc_put_drep(msg->mad, &f);
	cm_msg_mark_repeat(msg);
	cm_msg_send_or_release(msg);
}

/*
 * Repeat the DREP of a connection that is already in TimeWait: the answer
 * step of a duplicate DREQ.
 */
static void cm_redo_drep(struct cm_id_private *priv, struct cm_job *job,
			 void *msg)
{
	struct ib_mad_send_buf *rsp;
	bool send;

	rsp = cm_reply_msg(job->port, job->recv);
	if (IS_ERR(rsp))
		return;
	spin_lock_irq(&priv->lock);
	send = priv->id.state == IB_CM_TIMEWAIT;
	if (send)
		cm_put_ids_for(priv, rsp->mad, CM_DREP_ATTR_ID, priv->pdata,
			       priv->pdata_len);
	spin_unlock_irq(&priv->lock);
	if (send) {
		cm_msg_mark_repeat(rsp);
		cm_msg_send_or_release(rsp);
	} else {
		cm_msg_abandon(rsp);
	}
}

static enum cm_rx_verdict cm_dreq_decide(struct cm_id_private *priv,
					 struct cm_job *job, void *msg)
{
	const struct cmc_dreq *r = msg;
	enum ib_cm_state st = priv->id.state;

	lockdep_assert_held(&priv->lock);
	if (priv->local_qpn != cpu_to_be32(r->remote_qpn))
		return CM_RX_DROP;
	if (st == IB_CM_TIMEWAIT || st == IB_CM_DREQ_RCVD) {
		/* A repeat.  In TimeWait our DREP got lost: send it again. */
		cm_ctr_add(job->port, CM_CTR_RX_DUPS, CM_DREQ_ATTR_ID, 1);
		return st == IB_CM_TIMEWAIT ? CM_RX_ANSWER : CM_RX_DROP;
	}
	if (!cm_state_is(st, CM_ST(ESTABLISHED) | CM_ST_REP_OUT |
			     CM_ST(DREQ_SENT))) {
		trace_icm_dreq_unknown_err(&priv->id);
		return CM_RX_DROP;
	}
	/*
	 * A DREQ also ends a pending REP (the peer got it and used it) and
	 * crosses our own DREQ.  ESTABLISHED cancels nothing here, as in the
	 * stock module: this side sends no LAP, and a REP still pending after
	 * ib_cm_notify(COMM_EST) is cm_user_est_decide()'s to cancel.
	 */
	if (st != IB_CM_ESTABLISHED)
		cm_cancel_msg(priv);
	priv->id.state = IB_CM_DREQ_RCVD;
	priv->tid = job->recv->recv_buf.mad->mad_hdr.tid;
	return cm_rx_event(job, IB_CM_DREQ_RECEIVED, r->pdata);
}

static void cm_dreq_rcvd(struct cm_job *job)
{
	struct cm_id_private *priv;
	struct cmc_dreq r;

	cmc_get_dreq((void *)job->recv->recv_buf.mad, &r);
	priv = cm_rx_lookup(r.local_comm_id, r.remote_comm_id);
	if (!priv) {
		cm_ctr_add(job->port, CM_CTR_RX_DUPS, CM_DREQ_ATTR_ID, 1);
		cm_issue_drep(job->port, job->recv);
		trace_icm_no_priv_err(r.local_comm_id, r.remote_comm_id);
	}
	cm_rx_apply(job, priv, cm_dreq_decide, cm_redo_drep, &r);
}

static enum cm_rx_verdict cm_drep_decide(struct cm_id_private *priv,
					 struct cm_job *job, void *msg)
{
	const struct cmc_ids *r = msg;

	lockdep_assert_held(&priv->lock);
	if (!cm_state_is(priv->id.state, CM_ST(DREQ_SENT) | CM_ST(DREQ_RCVD)))
		return CM_RX_DROP;
	cm_enter_timewait(priv);
	cm_cancel_msg(priv);
	return cm_rx_event(job, IB_CM_DREP_RECEIVED, r->pdata);
}

static void cm_drep_rcvd(struct cm_job *job)
{
	struct cmc_ids r;

	cmc_get_drep((void *)job->recv->recv_buf.mad, &r);
	cm_rx_apply(job, cm_rx_lookup(r.local_comm_id, r.remote_comm_id),
		    cm_drep_decide, NULL, &r);
}

/* ------------------------------------------------------------------ */
/* REJ                                                                 */

static int cm_send_rej_locked(struct cm_id_private *priv,
			      enum ib_cm_rej_reason reason, void *ari,
			      u8 ari_len, const void *pdata, u8 pdata_len)
{
	enum ib_cm_state state = priv->id.state;
	struct ib_mad_send_buf *msg;
	int ret;

	lockdep_assert_held(&priv->lock);
	if (ari && ari_len > IB_CM_REJ_ARI_LENGTH)
		return -EINVAL;
	ret = cm_verb_pdata(CM_VERB_REJ, pdata, pdata_len);
	if (ret)
		return ret;

	/*
	 * Traced before anything changes, as the distribution's ib_cm does:
	 * in the state the REJ is sent from, also when it cannot be built
	 * or the state has nothing to reject.
	 */
	trace_icm_send_rej(&priv->id, reason);

	/*
	 * Once our REP is out the peer may already use the QP: go through
	 * TimeWait.  Earlier in the handshake nothing was used yet.
	 */
	if (cm_state_is(state, CM_ST_REP_OUT))
		cm_enter_timewait(priv);
	else if (cm_state_is(state, CM_ST_HANDSHAKE))
		cm_reset_to_idle(priv);
	else
		goto refused;

	msg = cm_id_msg(priv);
	if (IS_ERR(msg))
		return PTR_ERR(msg);
	cm_put_rej_for(priv, msg->mad, state, reason, ari, ari_len, pdata,
		       pdata_len);
	return cm_msg_send_or_release(msg);

refused:
	trace_icm_send_unknown_rej_err(&priv->id);
	return -EINVAL;
}

int ib_send_cm_rej(struct ib_cm_id *cm_id, enum ib_cm_rej_reason reason,
		   void *ari, u8 ari_length, const void *private_data,
		   u8 private_data_len)
{
	struct cm_id_private *priv = to_priv(cm_id);
	unsigned long flags;
	int ret;

	spin_lock_irqsave(&priv->lock, flags);
	ret = cm_send_rej_locked(priv, reason, ari, ari_length, private_data,
				 private_data_len);
	spin_unlock_irqrestore(&priv->lock, flags);
	return ret;
}
EXPORT_SYMBOL(ib_send_cm_rej);

static struct cm_id_private *cm_rej_target(const struct cmc_rej *r)
{
	struct cm_id_private *priv = NULL;
	__be32 lid = 0, rid = 0;
	struct cm_tw *tw;
	__be64 guid;

	if (r->reason == IB_CM_REJ_TIMEOUT) {
		/* The ARI of a timeout REJ is the sender's CA GUID. */
		memcpy(&guid, r->ari, sizeof(guid));
		spin_lock_irq(&cmg.lock);
		tw = cm_tw_find_rid(&cmg.tw, guid,
				    cpu_to_be32(r->local_comm_id));
		if (tw) {
			lid = tw->local_id;
			rid = tw->remote_id;
		}
		spin_unlock_irq(&cmg.lock);
		if (tw)
			priv = cm_id_lookup(lid, rid);
		return priv;
	}
	if (r->msg_rejected == CMC_MSG_REQ)
		return cm_id_lookup(cpu_to_be32(r->remote_comm_id), 0);
	return cm_rx_lookup(r->local_comm_id, r->remote_comm_id);
}

/*
 * Apply a received REJ to the ID's state.  Returns false when the REJ does
 * not fit the state and must be ignored.
 */
static bool cm_rej_applies(struct cm_id_private *priv, u16 reason)
{
	enum ib_cm_state st = priv->id.state;
	enum ib_cm_lap_state lap = priv->id.lap_state;

	lockdep_assert_held(&priv->lock);
	if (st == IB_CM_ESTABLISHED) {
		/*
		 * This side sends no LAP for a REJ to refuse: only a stray
		 * one from before any LAP counts.
		 */
		if (lap != IB_CM_LAP_UNINIT)
			return false;
		cm_enter_timewait(priv);
		return true;
	}
	if (!cm_state_is(st, CM_ST_HANDSHAKE | CM_ST(DREQ_SENT)))
		return false;

	/* Stop retransmitting whatever the peer has just refused. */
	if (cm_state_is(st, CM_ST_REQ_OUT | CM_ST_REP_OUT | CM_ST(DREQ_SENT)))
		cm_cancel_msg(priv);
	/*
	 * Until a REP from the peer was accepted its QP was not bound to
	 * the local one, so the IDs can be reused at once, unless the peer
	 * calls the connection stale.  After that (and after a DREQ) go via
	 * TimeWait.
	 */
	if (cm_state_is(st, CM_ST_REQ_OUT | CM_ST_REQ_IN | CM_ST_REP_OUT) &&
	    reason != IB_CM_REJ_STALE_CONN)
		cm_reset_to_idle(priv);
	else
		cm_enter_timewait(priv);
	return true;
}

static enum cm_rx_verdict cm_rej_decide(struct cm_id_private *priv,
					struct cm_job *job, void *msg)
{
	struct ib_cm_rej_event_param *ev = &job->ev.param.rej_rcvd;
	const struct cmc_rej *r = msg;

	lockdep_assert_held(&priv->lock);
	if (!cm_rej_applies(priv, r->reason)) {
		trace_icm_rej_unknown_err(&priv->id);
		return CM_RX_DROP;
	}
	ev->reason = r->reason;
	ev->ari = (void *)r->ari;
	ev->ari_length = r->ari_len;
	return cm_rx_event(job, IB_CM_REJ_RECEIVED, r->pdata);
}

static void cm_rej_rcvd(struct cm_job *job)
{
	struct cmc_rej r;

	cmc_get_rej((void *)job->recv->recv_buf.mad, &r);
	cm_rx_apply(job, cm_rej_target(&r), cm_rej_decide, NULL, &r);
}

/* ------------------------------------------------------------------ */
/* MRA                                                                 */

/*
 * Which received message an MRA acknowledges in the ID's present state, and
 * the states it leaves behind; -EINVAL when there is nothing to delay.
 */
static int cm_mra_plan(struct cm_id_private *priv, enum ib_cm_state *st,
		       enum ib_cm_lap_state *lap)
{
	lockdep_assert_held(&priv->lock);
	*st = priv->id.state;
	*lap = priv->id.lap_state;
	switch (*st) {
	case IB_CM_REQ_RCVD:
		*st = IB_CM_MRA_REQ_SENT;
		return CMC_MSG_REQ;
	case IB_CM_REP_RCVD:
		*st = IB_CM_MRA_REP_SENT;
		return CMC_MSG_REP;
	case IB_CM_ESTABLISHED:
		if (*lap != IB_CM_LAP_RCVD)
			break;
		*lap = IB_CM_MRA_LAP_SENT;
		return CMC_MSG_OTHER;
	default:
		break;
	}
	return -EINVAL;
}

#ifdef HAVE_IB_PREPARE_CM_MRA
/*
 * The service timeout of every MRA under the newer contract: about 68.7 s
 * (4.096 us * 2^24), whatever the consumer's handling takes.
 */
#define CM_MRA_DUP_TIMEOUT	24

/*
 * The newer contract: the consumer only says that it will answer late.  No
 * MRA goes out now; one goes out for each duplicate of the message that
 * is being handled (cm_dup_req(), cm_dup_rep(), cm_lap_mra_again()), with
 * CM_MRA_DUP_TIMEOUT and no private data.
 */
int ib_prepare_cm_mra(struct ib_cm_id *cm_id)
{
	struct cm_id_private *priv = to_priv(cm_id);
	enum ib_cm_lap_state lap_state;
	enum ib_cm_state state;
	unsigned long flags;
	int ret;

	spin_lock_irqsave(&priv->lock, flags);
	ret = min(cm_mra_plan(priv, &state, &lap_state), 0);
	if (ret) {
		trace_icm_prepare_mra_unknown_err(cm_id);
	} else {
		cm_id->state = state;
		cm_id->lap_state = lap_state;
		priv->service_timeout = CM_MRA_DUP_TIMEOUT;
		cm_keep_pdata(priv, NULL, 0);
	}
	spin_unlock_irqrestore(&priv->lock, flags);
	return ret;
}
EXPORT_SYMBOL(ib_prepare_cm_mra);
#else
int ib_send_cm_mra(struct ib_cm_id *cm_id, u8 service_timeout,
		   const void *private_data, u8 private_data_len)
{
	struct cm_id_private *priv = to_priv(cm_id);
	enum ib_cm_lap_state lap_state;
	struct ib_mad_send_buf *msg;
	enum ib_cm_state state;
	unsigned long flags;
	void *copy;
	int what, ret;

	copy = cm_verb_copy_pdata(CM_VERB_MRA, private_data, private_data_len);
	if (IS_ERR(copy))
		return PTR_ERR(copy);

	spin_lock_irqsave(&priv->lock, flags);
	what = cm_mra_plan(priv, &state, &lap_state);
	ret = min(what, 0);
	if (ret)
		trace_icm_send_mra_unknown_err(cm_id);
	/* With the delay flag the MRA only goes out for a duplicate. */
	if (!ret && !(service_timeout & IB_CM_MRA_FLAG_DELAY)) {
		msg = cm_id_msg(priv);
		ret = PTR_ERR_OR_ZERO(msg);
		if (!ret) {
			cm_put_mra_for(priv, msg->mad, what, service_timeout,
				       private_data, private_data_len);
			trace_icm_send_mra(cm_id);
			ret = cm_msg_send_or_release(msg);
		}
	}
	if (!ret) {
		cm_id->state = state;
		cm_id->lap_state = lap_state;
		priv->service_timeout = service_timeout;
		cm_keep_pdata(priv, copy, private_data_len);
		copy = NULL;
	}
	spin_unlock_irqrestore(&priv->lock, flags);
	kfree(copy);
	return ret;
}
EXPORT_SYMBOL(ib_send_cm_mra);
#endif

static enum cm_rx_verdict cm_mra_decide(struct cm_id_private *priv,
					struct cm_job *job, void *msg)
{
	const struct cmc_mra *r = msg;
	enum ib_cm_state st = priv->id.state;
	unsigned int wait_ms;
	int delayed;

	lockdep_assert_held(&priv->lock);
	/*
	 * An MRA delays our REQ or our REP.  An established connection has
	 * nothing to delay: this side sends no LAP.
	 */
	if (st == IB_CM_ESTABLISHED)
		return CM_RX_DROP;
	if (st != IB_CM_REQ_SENT && st != IB_CM_REP_SENT) {
		/*
		 * Delayed already: a repeat, counted.  Both it and anything
		 * else out of place are traced, as ib_cm traces them.
		 */
		if (cm_state_is(st, CM_ST(MRA_REQ_RCVD) | CM_ST(MRA_REP_RCVD)))
			cm_ctr_add(job->port, CM_CTR_RX_DUPS, CM_MRA_ATTR_ID,
				   1);
		trace_icm_mra_unknown_err(&priv->id);
		return CM_RX_DROP;
	}
	delayed = st == IB_CM_REQ_SENT ? CMC_MSG_REQ : CMC_MSG_REP;

	wait_ms = cmc_iba_time_to_ms(r->service_timeout) +
		  cmc_iba_time_to_ms(priv->av.timeout);
	if (r->msg_mraed != delayed || !priv->msg ||
	    ib_modify_mad(priv->msg, wait_ms))
		return CM_RX_DROP;
	if (st == IB_CM_REQ_SENT)
		priv->id.state = IB_CM_MRA_REQ_RCVD;
	else
		priv->id.state = IB_CM_MRA_REP_RCVD;
	priv->msg->context[1] = (void *)(unsigned long)priv->id.state;
	job->ev.param.mra_rcvd.service_timeout = r->service_timeout;
	return cm_rx_event(job, IB_CM_MRA_RECEIVED, r->pdata);
}

static void cm_mra_rcvd(struct cm_job *job)
{
	struct cm_id_private *priv = NULL;
	struct cmc_mra r;

	cmc_get_mra((void *)job->recv->recv_buf.mad, &r);
	/* Until the REP arrives our ID does not know the peer's comm ID. */
	if (r.msg_mraed == CMC_MSG_REQ)
		priv = cm_id_lookup(cpu_to_be32(r.remote_comm_id), 0);
	else if (r.msg_mraed <= CMC_MSG_OTHER)
		priv = cm_rx_lookup(r.local_comm_id, r.remote_comm_id);
	cm_rx_apply(job, priv, cm_mra_decide, NULL, &r);
}

/* ------------------------------------------------------------------ */
/* LAP / APR (receive side only; alternate paths are IB-only)          */

/*
 * Whether a LAP is taken on @port.  Like the stock ib_cm, this one
 * loads no alternate path on a RoCE port; a test build lets its
 * receive self-test switch one RoCE port over (cm_test_lap_on_roce()).
 */
static bool cm_port_takes_lap(struct cm_port *port)
{
	return !rdma_protocol_roce(port->dev->ibdev, port->num) ||
	       cm_test_lap_as_ib(port);
}

/* A decoded LAP and the address vectors prepared for it before locking. */
struct cm_lap_rx {
	struct cmc_lap r;
	struct cm_av_draft wcd;
	struct cm_av_draft ad;
};

/* The proposed alternate path, as a path record seen from this side. */
static void cm_path_from_lap(struct cm_port *port, const struct cmc_lap *r,
			     struct sa_path_rec *p)
{
	p->rec_type = cm_ib_path_type(port, &r->alt);
	cmc_path_to_sa(&r->alt, p, r->alt.local_lid);
}

static enum cm_rx_verdict cm_lap_decide(struct cm_id_private *priv,
					struct cm_job *job, void *msg)
{
	enum ib_cm_lap_state lap = priv->id.lap_state;
	struct cm_lap_rx *x = msg;

	lockdep_assert_held(&priv->lock);
	if (priv->id.state != IB_CM_ESTABLISHED)
		return CM_RX_DROP;
	if (lap == IB_CM_LAP_RCVD || lap == IB_CM_MRA_LAP_SENT) {
		/* A repeat of the LAP the consumer is working on. */
		cm_ctr_add(job->port, CM_CTR_RX_DUPS, CM_LAP_ATTR_ID, 1);
		return lap == IB_CM_MRA_LAP_SENT ? CM_RX_ANSWER : CM_RX_DROP;
	}
	if (lap != IB_CM_LAP_UNINIT && lap != IB_CM_LAP_IDLE)
		return CM_RX_DROP;
	/*
	 * The LAP's sender is answered where it spoke from, but the
	 * connection's ack timeout, which TimeWait lasts for, stays.
	 */
	x->wcd.timeout = priv->av.timeout;
	cm_av_publish(priv, &priv->av, &x->wcd);
	cm_av_publish(priv, &priv->alt_av, &x->ad);
	priv->id.lap_state = IB_CM_LAP_RCVD;
	priv->tid = job->recv->recv_buf.mad->mad_hdr.tid;
	job->ev.param.lap_rcvd.alternate_path = &job->path[0];
	return cm_rx_event(job, IB_CM_LAP_RECEIVED, x->r.pdata);
}

/* The answer step of a repeated LAP we sent an MRA for: repeat the MRA. */
static void cm_lap_mra_again(struct cm_id_private *priv, struct cm_job *job,
			     void *msg)
{
	struct ib_mad_send_buf *rsp;

	rsp = cm_reply_msg(job->port, job->recv);
	if (IS_ERR(rsp))
		return;
	spin_lock_irq(&priv->lock);
	cm_put_mra_for(priv, rsp->mad, CMC_MSG_OTHER, priv->service_timeout,
		       priv->pdata, priv->pdata_len);
	spin_unlock_irq(&priv->lock);
	cm_msg_mark_repeat(rsp);
	cm_msg_send_or_release(rsp);
}

static void cm_lap_rcvd(struct cm_job *job)
{
	struct sa_path_rec *p = &job->path[0];
	const struct ib_gid_attr *alt_attr;
	struct cm_id_private *priv;
	struct cm_lap_rx x = {};
	int ret;

	if (!cm_port_takes_lap(job->port)) {
		cm_job_free(job);
		return;
	}
	cmc_get_lap((void *)job->recv->recv_buf.mad, &x.r);
	priv = cm_rx_lookup(x.r.local_comm_id, x.r.remote_comm_id);
	if (!priv) {
		cm_job_free(job);
		return;
	}

	memset(p, 0, sizeof(*p));
	cm_path_from_lap(job->port, &x.r, p);
	spin_lock_irq(&priv->lock);
	p->pkey = priv->pkey;
	p->mtu = priv->path_mtu;
	spin_unlock_irq(&priv->lock);

	/*
	 * Both AVs may sleep to build; they are published by the rule.  The
	 * alternate path's source GID names its port; only a test build may
	 * give a GID attribute for it (cm_test_lap_sgid_attr()).
	 */
	ret = cm_draft_from_wc(job->port, job->recv, &x.wcd);
	if (!ret) {
		alt_attr = cm_test_lap_sgid_attr(job->port, &p->sgid,
						 x.wcd.ah_attr.grh.sgid_attr);
		ret = cm_draft_from_path(p, alt_attr, &x.ad);
	}
	if (ret)
		cm_rx_done(job, priv);
	else
		cm_rx_apply(job, priv, cm_lap_decide, cm_lap_mra_again, &x);
	cm_draft_release(&x.wcd);
	cm_draft_release(&x.ad);
}

/*
 * An APR answers a LAP, and this side sends none (no ib_cm call of this
 * API sends one): no APR is ever this side's to take.  cm_recv() has
 * counted it.
 */
static void cm_apr_rcvd(struct cm_job *job)
{
	cm_job_free(job);
}

/* ------------------------------------------------------------------ */
/* SIDR                                                                */

int ib_send_cm_sidr_req(struct ib_cm_id *cm_id,
			struct ib_cm_sidr_req_param *param)
{
	struct cm_id_private *priv = to_priv(cm_id);
	struct cmc_sidr_req f = {};
	struct ib_mad_send_buf *msg;
	struct cm_av_draft d;
	unsigned long flags;
	int ret;

	if (!param->path)
		return -EINVAL;
	ret = cm_verb_pdata(CM_VERB_SIDR_REQ, param->private_data,
			    param->private_data_len);
	if (ret)
		return ret;
	ret = cm_draft_from_path(param->path, param->sgid_attr, &d);
	if (ret)
		return ret;

	spin_lock_irqsave(&priv->lock, flags);
	if (!cm_verb_allowed(priv, CM_VERB_SIDR_REQ)) {
		spin_unlock_irqrestore(&priv->lock, flags);
		cm_draft_release(&d);
		return -EINVAL;
	}
	cm_av_publish(priv, &priv->av, &d);
	cm_id->service_id = param->service_id;
	priv->timeout_ms = param->timeout_ms;
	priv->max_cm_retries = param->max_cm_retries;

	msg = cm_id_msg(priv);
	if (IS_ERR(msg)) {
		ret = PTR_ERR(msg);
		goto out;
	}
	f.request_id = be32_to_cpu(cm_id->local_id);
	f.pkey = be16_to_cpu(param->path->pkey);
	f.service_id = be64_to_cpu(param->service_id);
	f.pdata = param->private_data;
	f.pdata_len = param->private_data_len;
	cmc_put_hdr(msg->mad, CM_SIDR_REQ_ATTR_ID, cm_new_tid(priv, msg), 0);
	cmc_put_sidr_req(msg->mad, &f);
	trace_icm_send_sidr_req(cm_id);
	ret = cm_send_tracked(priv, msg, IB_CM_SIDR_REQ_SENT);
	if (!ret)
		cm_id->state = IB_CM_SIDR_REQ_SENT;
out:
	spin_unlock_irqrestore(&priv->lock, flags);
	return ret;
}
EXPORT_SYMBOL(ib_send_cm_sidr_req);

static int cm_sidr_cmp(__be32 rid1, u32 slid1, __be32 rid2, u32 slid2)
{
	if (rid1 != rid2)
		return be32_to_cpu(rid1) < be32_to_cpu(rid2) ? -1 : 1;
	if (slid1 != slid2)
		return slid1 < slid2 ? -1 : 1;
	return 0;
}

static int cm_sidr_node_cmp(struct rb_node *a, const struct rb_node *b)
{
	const struct cm_id_private *x = rb_entry(a, struct cm_id_private,
						 sidr_node);
	const struct cm_id_private *y = rb_entry(b, struct cm_id_private,
						 sidr_node);

	return cm_sidr_cmp(x->id.remote_id, x->sidr_slid, y->id.remote_id,
			   y->sidr_slid);
}

/* Returns true if an identical SIDR REQ is already being served. */
static bool cm_sidr_insert(struct cm_id_private *priv)
{
	lockdep_assert_held(&cmg.lock);
	return rb_find_add(&priv->sidr_node, &cmg.sidr_tree,
			   cm_sidr_node_cmp) != NULL;
}

static int cm_send_sidr_rep_locked(struct cm_id_private *priv,
				   struct ib_cm_sidr_rep_param *param)
{
	struct ib_mad_send_buf *msg;
	struct cmc_sidr_rep f = {
		.status = param->status,
		.qpn = param->qp_num,
		.qkey = param->qkey,
		.vendor_id = param->ece.vendor_id,
		.info = param->info,
		.info_len = param->info_length,
		.pdata = param->private_data,
		.pdata_len = param->private_data_len,
	};
	int ret;

	lockdep_assert_held(&priv->lock);
	if (param->info && param->info_length > IB_CM_SIDR_REP_INFO_LENGTH)
		return -EINVAL;
	ret = cm_verb_pdata(CM_VERB_SIDR_REP, param->private_data,
			    param->private_data_len);
	if (ret)
		return ret;
	msg = cm_verb_msg(priv, CM_VERB_SIDR_REP);
	if (IS_ERR(msg))
		return PTR_ERR(msg);

	f.request_id = be32_to_cpu(priv->id.remote_id);
	f.service_id = be64_to_cpu(priv->id.service_id);
	cmc_put_hdr(msg->mad, CM_SIDR_REP_ATTR_ID, priv->tid,
		    param->ece.attr_mod);
	cmc_put_sidr_rep(msg->mad, &f);
	trace_icm_send_sidr_rep(&priv->id);
	ret = cm_msg_send_or_release(msg);
	if (ret)
		return ret;

	/* Answered: the request no longer counts as a duplicate. */
	priv->id.state = IB_CM_IDLE;
	spin_lock(&cmg.lock);
	cm_sidr_unlink(priv);
	spin_unlock(&cmg.lock);
	return 0;
}

int ib_send_cm_sidr_rep(struct ib_cm_id *cm_id,
			struct ib_cm_sidr_rep_param *param)
{
	struct cm_id_private *priv = to_priv(cm_id);
	int ret;
	unsigned long flags;

	spin_lock_irqsave(&priv->lock, flags);
	ret = cm_send_sidr_rep_locked(priv, param);
	spin_unlock_irqrestore(&priv->lock, flags);
	return ret;
}
EXPORT_SYMBOL(ib_send_cm_sidr_rep);

static void cm_sidr_req_rcvd(struct cm_job *job)
{
	struct cm_sidr_req_msg *m = (void *)job->recv->recv_buf.mad;
	struct ib_cm_sidr_req_event_param *ev = &job->ev.param.sidr_req_rcvd;
	struct ib_cm_sidr_rep_param unsupported = {
		.status = IB_SIDR_UNSUPPORTED,
	};
	struct cm_id_private *priv, *listener;
	struct cm_av_draft d;
	struct cmc_sidr_req r;
	bool dup;
	int ret;

	cmc_get_sidr_req(m, &r);
	priv = cm_id_new(job->port->dev->ibdev, NULL, NULL);
	if (IS_ERR(priv))
		goto free_job;
	priv->id.remote_id = cpu_to_be32(r.request_id);
	priv->id.service_id = cpu_to_be64(r.service_id);
	priv->tid = m->hdr.tid;
	priv->sidr_slid = job->recv->wc->slid;
	if (cm_draft_from_wc(job->port, job->recv, &d))
		goto destroy;

	spin_lock_irq(&priv->lock);
	cm_av_publish(priv, &priv->av, &d);
	spin_lock(&cmg.lock);
	dup = cm_sidr_insert(priv);
	if (dup) {
		spin_unlock(&cmg.lock);
		spin_unlock_irq(&priv->lock);
		cm_ctr_add(job->port, CM_CTR_RX_DUPS, CM_SIDR_REQ_ATTR_ID, 1);
		goto destroy;
	}
	priv->id.state = IB_CM_SIDR_REQ_RCVD;
	listener = cm_listen_find(priv->id.device, priv->id.service_id);
	spin_unlock(&cmg.lock);
	if (!listener) {
		cm_send_sidr_rep_locked(priv, &unsupported);
		spin_unlock_irq(&priv->lock);
		goto destroy;
	}
	priv->id.cm_handler = listener->id.cm_handler;
	priv->id.context = listener->id.context;

	job->ev.event = IB_CM_SIDR_REQ_RECEIVED;
	ev->listen_id = &listener->id;
	ev->service_id = priv->id.service_id;
	ev->sgid_attr = priv->av.ah_attr.grh.sgid_attr;
	ev->bth_pkey = cm_bth_pkey(job);
	ev->port = job->port->num;
	ev->pkey = r.pkey;
	job->ev.private_data = (void *)r.pdata;
	/* SIDR IDs never receive MADs, so they stay out of the ID table. */
	ret = cm_deliver_locked(priv, job);
	cm_id_put(listener);
	if (ret)
		cm_give_back(priv, ret, false);
	return;

destroy:
	cm_destroy(priv, 0);
free_job:
	cm_job_free(job);
}

static enum cm_rx_verdict cm_sidr_rep_decide(struct cm_id_private *priv,
					     struct cm_job *job, void *msg)
{
	struct ib_cm_sidr_rep_event_param *ev = &job->ev.param.sidr_rep_rcvd;
	const struct cmc_sidr_rep *r = msg;

	lockdep_assert_held(&priv->lock);
	if (priv->id.state != IB_CM_SIDR_REQ_SENT)
		return CM_RX_DROP;
	priv->id.state = IB_CM_IDLE;
	cm_cancel_msg(priv);
	ev->status = r->status;
	ev->qkey = r->qkey;
	ev->qpn = r->qpn;
	ev->info = (void *)r->info;
	ev->info_len = r->info_len;
	ev->sgid_attr = priv->av.ah_attr.grh.sgid_attr;
	return cm_rx_event(job, IB_CM_SIDR_REP_RECEIVED, r->pdata);
}

static void cm_sidr_rep_rcvd(struct cm_job *job)
{
	struct cmc_sidr_rep r;

	cmc_get_sidr_rep((void *)job->recv->recv_buf.mad, &r);
	cm_rx_apply(job, cm_id_lookup(cpu_to_be32(r.request_id), 0),
		    cm_sidr_rep_decide, NULL, &r);
}

/* ------------------------------------------------------------------ */
/* Notifications, TimeWait exit and QP attributes                      */

/*
 * ib_cm_notify(IB_EVENT_COMM_EST) moved the ID to ESTABLISHED before an RTU
 * came: stop resending our REP and tell the consumer.
 */
static enum cm_rx_verdict cm_user_est_decide(struct cm_id_private *priv,
					     struct cm_job *job, void *msg)
{
	lockdep_assert_held(&priv->lock);
	if (priv->id.state != IB_CM_ESTABLISHED)
		return CM_RX_DROP;
	cm_cancel_msg(priv);
	return cm_rx_event(job, IB_CM_USER_ESTABLISHED, NULL);
}

static void cm_user_established(struct cm_job *job)
{
	cm_rx_apply(job, cm_id_lookup(job->local_id, job->remote_id),
		    cm_user_est_decide, NULL, NULL);
}

static void cm_job_run(struct work_struct *work);

static int cm_establish(struct cm_id_private *priv)
{
	struct cm_port *port;
	struct cm_job *job;
	unsigned long flags;
	int ret = 0;

	job = cm_job_alloc(GFP_ATOMIC, 0);
	if (!job)
		return -ENOMEM;

	spin_lock_irqsave(&priv->lock, flags);
	switch (priv->id.state) {
	case IB_CM_REP_SENT:
	case IB_CM_MRA_REP_RCVD:
		priv->id.state = IB_CM_ESTABLISHED;
		break;
	case IB_CM_ESTABLISHED:
		ret = -EISCONN;
		break;
	default:
		ret = -EINVAL;
		break;
	}
	port = cm_av_port(priv, &priv->av);
	if (!ret && !port)
		ret = -ENODEV;
	if (ret) {
		trace_icm_establish_err(&priv->id);
		spin_unlock_irqrestore(&priv->lock, flags);
		kfree(job);
		return ret;
	}
	/* Look the ID up again in the worker rather than pinning it here. */
	INIT_WORK(&job->work, cm_job_run);
	job->local_id = priv->id.local_id;
	job->remote_id = priv->id.remote_id;
	job->ev.event = IB_CM_USER_ESTABLISHED;
	spin_lock(&cmg.lock);
	if (port->dev->going_down) {
		ret = -ENODEV;
	} else {
		cm_dev_get(port->dev);
		job->port = port;
		queue_work(cmg.wq, &job->work);
	}
	spin_unlock(&cmg.lock);
	spin_unlock_irqrestore(&priv->lock, flags);
	if (ret)
		kfree(job);
	return ret;
}

static int cm_migrate(struct cm_id_private *priv)
{
	struct rdma_ah_attr copy;
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&priv->lock, flags);
	if (priv->id.state == IB_CM_ESTABLISHED &&
	    (priv->id.lap_state == IB_CM_LAP_UNINIT ||
	     priv->id.lap_state == IB_CM_LAP_IDLE) &&
	    cm_av_port(priv, &priv->alt_av)) {
		priv->id.lap_state = IB_CM_LAP_IDLE;
		/* The primary AV becomes a referenced copy of the alternate. */
		cm_av_set_port(priv, &priv->av,
			       cm_av_port(priv, &priv->alt_av));
		rdma_copy_ah_attr(&copy, &priv->alt_av.ah_attr);
		rdma_destroy_ah_attr(&priv->av.ah_attr);
		priv->av.ah_attr = copy;
		priv->av.pkey_index = priv->alt_av.pkey_index;
		priv->av.timeout = priv->alt_av.timeout;
		priv->av.dlid_datapath = 0;
	} else {
		ret = -EINVAL;
	}
	spin_unlock_irqrestore(&priv->lock, flags);
	return ret;
}

int ib_cm_notify(struct ib_cm_id *cm_id, enum ib_event_type event)
{
	switch (event) {
	case IB_EVENT_COMM_EST:
		return cm_establish(to_priv(cm_id));
	case IB_EVENT_PATH_MIG:
		return cm_migrate(to_priv(cm_id));
	default:
		return -EINVAL;
	}
}
EXPORT_SYMBOL(ib_cm_notify);

/*
 * A connection's TimeWait ran out: its ID, if still in TimeWait with the
 * same peer, goes to IDLE and its consumer gets IB_CM_TIMEWAIT_EXIT.
 * Returns -ENOMEM, with nothing changed, when there is no memory for the
 * event; the TimeWait record then tries again later.
 */
int cm_tw_expired(__be32 local_id, __be32 remote_id, __be32 remote_qpn)
{
	struct cm_id_private *priv;
	struct cm_job *job;
	int ret;

	job = cm_job_alloc(GFP_KERNEL, 0);
	if (!job)
		return -ENOMEM;
	priv = cm_id_lookup(local_id, remote_id);
	if (!priv)
		goto free_job;
	spin_lock_irq(&priv->lock);
	if (priv->id.state != IB_CM_TIMEWAIT ||
	    priv->remote_qpn != remote_qpn) {
		spin_unlock_irq(&priv->lock);
		cm_id_put(priv);
		goto free_job;
	}
	priv->id.state = IB_CM_IDLE;
	job->ev.event = IB_CM_TIMEWAIT_EXIT;
	ret = cm_deliver_locked(priv, job);
	cm_id_put(priv);
	if (ret)
		cm_give_back(priv, ret, false);
	return 0;
free_job:
	cm_job_free(job);
	return 0;
}

/* Whether QP attributes can be derived in state @s. */
static bool cm_state_has_conn_params(enum ib_cm_state s, bool allow_active)
{
	unsigned long ok = (CM_ST_HANDSHAKE & ~CM_ST_REQ_OUT) |
			   CM_ST(ESTABLISHED);

	/* Before the REP, only INIT can be prepared by the active side. */
	if (allow_active)
		ok |= CM_ST_REQ_OUT;
	return cm_state_is(s, ok);
}

static void cm_fill_alt_path(struct cm_id_private *priv,
			     struct ib_qp_attr *a, int *mask)
{
	struct cm_port *alt = cm_av_port(priv, &priv->alt_av);

	*mask |= IB_QP_ALT_PATH;
	if (alt)
		a->alt_port_num = alt->num;
	a->alt_pkey_index = priv->alt_av.pkey_index;
	a->alt_timeout = priv->alt_av.timeout;
	a->alt_ah_attr = priv->alt_av.ah_attr;
}

static void cm_qp_init_attr(struct cm_id_private *priv, struct ib_qp_attr *a,
			    int *mask)
{
	struct cm_port *port = cm_av_port(priv, &priv->av);

	if (port)
		a->port_num = port->num;
	a->pkey_index = priv->av.pkey_index;
	a->qp_access_flags = IB_ACCESS_REMOTE_WRITE;
	/* RDMA reads and atomics only when we offered responder resources. */
	if (priv->responder_resources) {
		a->qp_access_flags |= IB_ACCESS_REMOTE_READ |
				      IB_ACCESS_REMOTE_ATOMIC;
#ifdef HAVE_IB_ACCESS_FLUSH
		/* Then FLUSH, both kinds, if the device has either. */
		if (priv->id.device->attrs.device_cap_flags &
		    (IB_DEVICE_FLUSH_GLOBAL | IB_DEVICE_FLUSH_PERSISTENT))
			a->qp_access_flags |= IB_ACCESS_FLUSH_GLOBAL |
					      IB_ACCESS_FLUSH_PERSISTENT;
#endif
	}
	*mask = IB_QP_STATE | IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX |
		IB_QP_PORT;
}

static void cm_qp_rtr_attr(struct cm_id_private *priv, struct ib_qp_attr *a,
			   int *mask)
{
	u16 dlid = priv->av.dlid_datapath;

	a->dest_qp_num = be32_to_cpu(priv->remote_qpn);
	a->rq_psn = be32_to_cpu(priv->rq_psn);
	a->path_mtu = priv->path_mtu;
	a->ah_attr = priv->av.ah_attr;
	/* An SA-provided data-path LID overrides the one the CM talks to. */
	if (a->ah_attr.type == RDMA_AH_ATTR_TYPE_IB && dlid && dlid != 0xffff)
		a->ah_attr.ib.dlid = dlid;
	*mask = IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
		IB_QP_RQ_PSN;
	if (priv->qp_type == IB_QPT_RC || priv->qp_type == IB_QPT_XRC_TGT) {
		*mask |= IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER;
		a->max_dest_rd_atomic = priv->responder_resources;
		a->min_rnr_timer = 0;
	}
	if (rdma_ah_get_dlid(&priv->alt_av.ah_attr) &&
	    cm_av_port(priv, &priv->alt_av))
		cm_fill_alt_path(priv, a, mask);
}

static void cm_qp_rts_attr(struct cm_id_private *priv, struct ib_qp_attr *a,
			   int *mask)
{
	if (priv->id.lap_state != IB_CM_LAP_UNINIT) {
		/* Only the alternate path is (re)armed once LAP ran. */
		*mask = 0;
		cm_fill_alt_path(priv, a, mask);
		*mask |= IB_QP_PATH_MIG_STATE;
		a->path_mig_state = IB_MIG_REARM;
		return;
	}
	*mask = IB_QP_STATE | IB_QP_SQ_PSN;
	a->sq_psn = be32_to_cpu(priv->sq_psn);
	if (priv->qp_type == IB_QPT_RC || priv->qp_type == IB_QPT_XRC_INI) {
		*mask |= IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
			 IB_QP_MAX_QP_RD_ATOMIC;
		a->retry_cnt = priv->retry_count;
		a->rnr_retry = priv->rnr_retry_count;
		a->max_rd_atomic = priv->initiator_depth;
	}
	if (priv->qp_type == IB_QPT_RC || priv->qp_type == IB_QPT_XRC_INI ||
	    priv->qp_type == IB_QPT_XRC_TGT) {
		*mask |= IB_QP_TIMEOUT;
		a->timeout = priv->av.timeout;
	}
	if (rdma_ah_get_dlid(&priv->alt_av.ah_attr)) {
		*mask |= IB_QP_PATH_MIG_STATE;
		a->path_mig_state = IB_MIG_REARM;
	}
}

int ib_cm_init_qp_attr(struct ib_cm_id *cm_id, struct ib_qp_attr *qp_attr,
		       int *qp_attr_mask)
{
	struct cm_id_private *priv = to_priv(cm_id);
	enum ib_qp_state to = qp_attr->qp_state;
	unsigned long flags;
	int ret = 0;

	if (to != IB_QPS_INIT && to != IB_QPS_RTR && to != IB_QPS_RTS)
		return -EINVAL;

	spin_lock_irqsave(&priv->lock, flags);
	if (!cm_state_has_conn_params(cm_id->state, to == IB_QPS_INIT)) {
		if (to == IB_QPS_INIT)
			trace_icm_qp_init_err(cm_id);
		else if (to == IB_QPS_RTR)
			trace_icm_qp_rtr_err(cm_id);
		else
			trace_icm_qp_rts_err(cm_id);
		ret = -EINVAL;
	} else if (to == IB_QPS_INIT) {
		cm_qp_init_attr(priv, qp_attr, qp_attr_mask);
	} else if (to == IB_QPS_RTR) {
		cm_qp_rtr_attr(priv, qp_attr, qp_attr_mask);
	} else {
		cm_qp_rts_attr(priv, qp_attr, qp_attr_mask);
	}
	spin_unlock_irqrestore(&priv->lock, flags);
	return ret;
}
EXPORT_SYMBOL(ib_cm_init_qp_attr);

/* ------------------------------------------------------------------ */
/* MAD agent callbacks                                                 */

/* Receive handlers indexed by attribute ID - CMC_ATTR_BASE. */
static void (*const cm_rx_handlers[CMC_ATTR_COUNT])(struct cm_job *job) = {
	cm_req_rcvd,		/* 0x10 REQ */
	cm_mra_rcvd,		/* 0x11 MRA */
	cm_rej_rcvd,		/* 0x12 REJ */
	cm_rep_rcvd,		/* 0x13 REP */
	cm_rtu_rcvd,		/* 0x14 RTU */
	cm_dreq_rcvd,		/* 0x15 DREQ */
	cm_drep_rcvd,		/* 0x16 DREP */
	cm_sidr_req_rcvd,	/* 0x17 SIDR_REQ */
	cm_sidr_rep_rcvd,	/* 0x18 SIDR_REP */
	cm_lap_rcvd,		/* 0x19 LAP */
	cm_apr_rcvd,		/* 0x1A APR */
};

/* Path records a received message's job needs room for. */
static const u8 cm_rx_paths[CMC_ATTR_COUNT] = {
	[0x10 - CMC_ATTR_BASE] = 2,	/* REQ */
	[0x19 - CMC_ATTR_BASE] = 1,	/* LAP */
};

static void cm_job_run(struct work_struct *work)
{
	struct cm_job *job = container_of(work, struct cm_job, work);
	unsigned int idx;

	if (!job->recv) {
		cm_user_established(job);
		return;
	}
	idx = be16_to_cpu(job->recv->recv_buf.mad->mad_hdr.attr_id) -
	      CMC_ATTR_BASE;
	if (idx < CMC_ATTR_COUNT)
		cm_rx_handlers[idx](job);
	else
		cm_job_free(job);
}

/*
 * Take @rwc, received on @port; @injected: from cm_test_inject().  Always
 * inlined, so that a fault in cm_job_alloc() is seen called from the MAD
 * agent's handler (or from cm_recv_injected()) in last_fault.
 */
static __always_inline void cm_recv(struct cm_port *port,
				    struct ib_mad_recv_wc *rwc, bool injected)
{
	__be16 attr = rwc->recv_buf.mad->mad_hdr.attr_id;
	unsigned int idx = be16_to_cpu(attr) - CMC_ATTR_BASE;
	struct cm_job *job;
	bool queued = false;

	if (idx >= CMC_ATTR_COUNT) {
		cm_recv_free(rwc, injected);
		return;
	}
	cm_ctr_add(port, CM_CTR_RX, attr, 1);

	job = cm_job_alloc(GFP_KERNEL, cm_rx_paths[idx]);
	if (!job) {
		cm_recv_free(rwc, injected);
		return;
	}
	INIT_WORK(&job->work, cm_job_run);
	job->recv = rwc;
	cm_job_set_injected(job, injected);

	spin_lock_irq(&cmg.lock);
	if (!port->dev->going_down) {
		cm_dev_get(port->dev);
		job->port = port;
		queued = queue_work(cmg.wq, &job->work);
	}
	spin_unlock_irq(&cmg.lock);
	if (!queued)
		cm_job_free(job);
}

void cm_mad_recv_handler(struct ib_mad_agent *agent,
			 struct ib_mad_send_buf *send_buf,
			 struct ib_mad_recv_wc *rwc)
{
	cm_recv(agent->context, rwc, false);
}

#ifdef IB_CM_TEST_HOOKS
/**
 * cm_test_av_is_clear() - Whether a cm_id's address vector holds nothing.
 * @cm_id: the cm_id
 * @alt: its alternate path's address vector, not the primary one
 *
 * Return: true if every byte of the address vector is zero: no port (nor
 * device reference), no AH attributes, no P_Key index, timeout or
 * data-path DLID.
 */
bool cm_test_av_is_clear(struct ib_cm_id *cm_id, bool alt)
{
	struct cm_id_private *priv = to_priv(cm_id);
	unsigned long flags;
	bool clear;

	spin_lock_irqsave(&priv->lock, flags);
	clear = !memchr_inv(alt ? &priv->alt_av : &priv->av, 0,
			    sizeof(struct cm_av));
	spin_unlock_irqrestore(&priv->lock, flags);
	return clear;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_av_is_clear);

/**
 * cm_test_id_hold() - Hold a reference on a cm_id, as a send in flight does.
 * @cm_id: the cm_id; ib_destroy_cm_id() waits for cm_test_id_release()
 */
void cm_test_id_hold(struct ib_cm_id *cm_id)
{
	refcount_inc(&to_priv(cm_id)->refs);
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_id_hold);

/**
 * cm_test_id_release() - Drop the reference of cm_test_id_hold().
 * @cm_id: the cm_id
 */
void cm_test_id_release(struct ib_cm_id *cm_id)
{
	cm_id_put(to_priv(cm_id));
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_id_release);

/**
 * cm_test_destroy_timeouts() - How many times destroying a cm_id warned.
 *
 * Return: the number of calls of cm_destroy_id_wait_timeout() that have
 * made their warning, since ib_cm was loaded.
 */
unsigned int cm_test_destroy_timeouts(void)
{
	return atomic_read(&cm_destroy_wait_timeouts);
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_destroy_timeouts);

/**
 * cm_test_destroy_wait_ms() - How long destroying a cm_id waits to warn.
 * @cm_id: the cm_id, in the state it would be destroyed from
 *
 * Return: the milliseconds ib_destroy_cm_id() waits for the cm_id's last
 * reference before each warning, with the test builds' cap if it is set.
 */
unsigned int cm_test_destroy_wait_ms(struct ib_cm_id *cm_id)
{
	struct cm_id_private *priv = to_priv(cm_id);
	unsigned long flags;
	unsigned int ms;

	spin_lock_irqsave(&priv->lock, flags);
	ms = cm_destroy_wait_ms(priv);
	spin_unlock_irqrestore(&priv->lock, flags);
	return ms;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_destroy_wait_ms);

/**
 * cm_test_destroy_wait_cap() - Set the test builds' cap on that wait.
 * @ms: the cap in milliseconds, 0 for none
 *
 * Return: the cap it replaces.
 */
unsigned int cm_test_destroy_wait_cap(unsigned int ms)
{
	return xchg(&destroy_wait_cap_ms, ms);
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_destroy_wait_cap);

/*
 * For cm_test_inject(): take @rwc as if the MAD layer had just received it
 * on @port.  It is given back with cm_test_recv_free(), never to the MAD
 * layer, which did not allocate it.
 */
void cm_recv_injected(struct cm_port *port, struct ib_mad_recv_wc *rwc)
{
	cm_recv(port, rwc, true);
}
#endif

/* The send a cm_id was waiting on finished without an answer. */
static void cm_send_finished(struct cm_id_private *priv,
			     struct ib_mad_send_buf *msg,
			     enum ib_cm_state sent_in,
			     enum ib_wc_status status)
{
	struct cm_job *job = NULL;
	enum ib_cm_event_type ev;
	int ret;

	/* Releasing @msg drops its reference; keep the ID alive meanwhile. */
	refcount_inc(&priv->refs);
	spin_lock_irq(&priv->lock);
	if (msg != priv->msg) {
		/*
		 * A superseded send, or (before 7.2) an untracked one: RTU,
		 * DREP, REJ, ...
		 */
		spin_unlock_irq(&priv->lock);
		cm_msg_release(msg);
		goto out;
	}
	priv->msg = NULL;
	cm_msg_release(msg);
	/* The exchange is over: its reserved report is used or freed. */
	job = priv->send_err;
	priv->send_err = NULL;
	if (!job || status == IB_WC_SUCCESS || status == IB_WC_WR_FLUSH_ERR ||
	    sent_in != priv->id.state)
		goto unlock;

	trace_icm_mad_send_err(sent_in, status);
	if (cm_state_is(sent_in, CM_ST_REQ_OUT | CM_ST_REP_OUT)) {
		/* The handshake died: forget the peer, report which side. */
		ev = cm_state_is(sent_in, CM_ST_REQ_OUT) ? IB_CM_REQ_ERROR :
							  IB_CM_REP_ERROR;
		cm_reset_to_idle(priv);
	} else if (sent_in == IB_CM_DREQ_SENT) {
		ev = IB_CM_DREQ_ERROR;
		cm_enter_timewait(priv);
	} else if (sent_in == IB_CM_SIDR_REQ_SENT) {
		ev = IB_CM_SIDR_REQ_ERROR;
		priv->id.state = IB_CM_IDLE;
	} else {
		goto unlock;
	}
	/* The ID's own report may have been delivered before: clear it. */
	memset(&job->ev, 0, sizeof(job->ev));
	job->ev.event = ev;
	job->ev.param.send_status = status;
	ret = cm_deliver_locked(priv, job);
	cm_id_put(priv);
	if (ret)
		cm_give_back(priv, ret, true);
	return;
unlock:
	if (job)
		cm_send_err_release(priv, job);
	spin_unlock_irq(&priv->lock);
out:
	cm_id_put(priv);
}

void cm_mad_send_handler(struct ib_mad_agent *agent,
			 struct ib_mad_send_wc *wc)
{
	struct ib_mad_send_buf *msg = wc->send_buf;
	struct cm_id_private *priv = msg->context[0];
	struct cm_port *port = agent->context;
	__be16 attr = ((struct ib_mad_hdr *)msg->mad)->attr_id;

	if (cm_test_park_send(agent, wc))
		return;
	if (!priv && msg->context[1] == CM_MSG_REPEAT)
		msg->retries = 1;
	cm_ctr_add(port, CM_CTR_TX, attr, 1 + msg->retries);
	if (msg->retries)
		cm_ctr_add(port, CM_CTR_TX_RETRIES, attr, msg->retries);

	if (priv)
		cm_send_finished(priv, msg,
				 (enum ib_cm_state)(unsigned long)msg->context[1],
				 wc->status);
	else
		cm_msg_release(msg);
}

/* ------------------------------------------------------------------ */
/* Module                                                              */

static int __init ib_cm_init(void)
{
	int ret;

	/* Locks, lists and trees are set up statically with cmg itself. */
	cmg.id_xor = get_random_u32();
	cmg.next_sid = be64_to_cpu(IB_CM_ASSIGN_SERVICE_ID);
	cm_sysfs_init();

	/*
	 * A cache of its own, so that a leaked cm_id shows up as "objects
	 * remaining" on rmmod.  SLAB_TYPESAFE_BY_RCU only delays returning
	 * slab pages; here it also keeps the cache from being merged with
	 * another one, which would hide such a leak.
	 */
	cmg.id_cache = kmem_cache_create("ib_cm_id",
					 sizeof(struct cm_id_private), 0,
					 SLAB_HWCACHE_ALIGN | SLAB_TYPESAFE_BY_RCU,
					 NULL);
	if (!cmg.id_cache)
		return -ENOMEM;
	cm_fault_init();
#ifdef HAVE_WQ_PERCPU
	cmg.wq = alloc_workqueue("ib_cm", WQ_PERCPU, 1);
#else
	cmg.wq = alloc_workqueue("ib_cm", 0, 1);
#endif
	cmg.tw.wq = cmg.wq;
	ret = cmg.wq ? cm_client_register() : -ENOMEM;
	if (!ret)
		return 0;

	cm_fault_exit();
	if (cmg.wq)
		destroy_workqueue(cmg.wq);
	kmem_cache_destroy(cmg.id_cache);
	return ret;
}

static void __exit ib_cm_exit(void)
{
	cm_fault_exit();
	cm_client_unregister();
	/* Destructions handed to the workqueue may still run. */
	flush_workqueue(cmg.wq);
	cm_tw_drain(&cmg.tw);
	destroy_workqueue(cmg.wq);
	WARN_ON(!xa_empty(&cmg.ids));
	kmem_cache_destroy(cmg.id_cache);
}

module_init(ib_cm_init);
module_exit(ib_cm_exit);
