// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KTAP test of whole connections through ib_cm over a RoCE port (rdma_rxe
 * in the test guests): RC, UC and XRC connections between two cm_ids of
 * this host, consumer REJs of the REQ and of the REP, an MRA that holds
 * off the active side's timeout, a REQ nobody answers, the REQ's private
 * data limit, the disconnection rules of XRC targets, and SIDR.
 *
 * Both ends live here.  A listener takes the REQ that an active cm_id
 * sends on a path to the port's own GID and MAC; rdma_rxe loops every MAD
 * back to the same CM.  No QP is created (the CM only carries QP numbers,
 * and rdma_rxe has no XRC), so what is checked is what the CM tells its
 * consumers: the events on both sides with their fields, the cm_id states,
 * the attributes that ib_cm_init_qp_attr() gives for INIT, RTR and RTS,
 * and the per-port message counters in sysfs.
 *
 * Only the exported interfaces of ib_cm and ib_core are used, so the very
 * same module loads over this ib_cm and over the stock one it replaces
 * (the symbol CRCs are the same) and must pass on both.  Every expectation
 * is a rule of the CM protocol (IBTA vol 1 chapter 12, annex A14 for XRC),
 * of the verbs QP state table (ib_modify_qp_is_ok()) or a documented
 * behaviour of the stock ib_cm; none is a detail of one
 * implementation.
 *
 * Load with an active RoCE port that runs a CM; init fails when a check
 * fails.
 */
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/etherdevice.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/wait.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>

#include "ib_selftest.h"
#include "cm_test_utils.h"

/* How long an event that must come is waited for (TCG guests are slow). */
#define CC_WAIT_MS		15000
/* How long "nothing happens" is watched. */
#define CC_QUIET_MS		1500
/*
 * Packet life time of the connection cases.  TimeWait lasts about the
 * local ACK timeout, 2^(plt + 1 - 8) ms here: one second, long enough to
 * see both sides in TimeWait, short enough to watch them leave it.
 */
#define CC_PLT			17
/*
 * The REQ timeout cases: each try waits 2 packet life times plus the
 * remote CM response time, 2 * 4 ms + 256 ms, and there are 3 tries.
 */
#define CC_FAST_PLT		10
#define CC_FAST_RESP		16
#define CC_FAST_RETRIES		2
/* Response timeout and retries of the other cases: 4 s, 15 tries. */
#define CC_RESP			20
#define CC_RETRIES		15
/* The MRA's service timeout: 2^(20 - 8) ms, about 4 s. */
#define CC_MRA_TIMEOUT		20
#ifdef HAVE_IB_PREPARE_CM_MRA
/*
 * The newer CM sends an MRA only for a repeated REQ, always with 2^24
 * times 4.096 us (about 68.7 s) and without private data.
 */
#define CC_MRA_SEEN_TIMEOUT	24
/* The REQ's repeats in the MRA cases: 9 tries, about 2.5 s. */
#define CC_MRA_RETRIES		8
#else
#define CC_MRA_SEEN_TIMEOUT	CC_MRA_TIMEOUT
#endif
#define CC_PDATA		CMT_PDATA
#define CC_ARI_LEN		5
#define CC_MAX_EVENTS		48
#define CC_ANY			(-1)

static struct ib_device *cc_dev;
static u32 cc_port;
static const struct ib_gid_attr *cc_gid;
static u8 cc_mac[ETH_ALEN];
static u16 cc_pkey_index;
static u32 cc_serial;

/* ------------------------------------------------------------------ */
/* One connection and what its consumers saw                           */

/**
 * struct cc_conn - the two ends of one connection under test
 * @type: QP type of the active side (RC, UC or XRC_INI)
 * @plt: packet life time of the path, IBTA time exponent
 * @mra_on_req: the passive side answers the REQ with an MRA from its
 *	event handler (on a newer CM: prepares one there, which goes out for
 *	the REQ's repeats)
 * @req_again: the active side sends its REQ again from the handler of
 *	the first IB_CM_REQ_ERROR
 * @path: path to this port's own GID and MAC
 * @req: what the active side asks for
 * @rep: what the passive side answers
 * @pd_req: private data of the REQ
 * @pd_rep: private data of the REP
 * @listen: the listener
 * @act: the active cm_id
 * @pas: the cm_id the REQ created; set by cc_handler() under cc_lock
 * @drop: the next @drop_event of the @drop_active side is answered with
 *	a non-zero return, which asks the CM to destroy that cm_id
 * @drop_active: @drop is for the active cm_id, not the passive one
 * @drop_event: the event @drop waits for
 * @dropped: the cm_id given back to the CM that way (the test no longer
 *	owns it)
 */
struct cc_conn {
	enum ib_qp_type type;
	u8 plt;
	bool mra_on_req;
	bool req_again;
	struct sa_path_rec path;
	struct ib_cm_req_param req;
	struct ib_cm_rep_param rep;
	u8 pd_req[CC_PDATA];
	u8 pd_rep[CC_PDATA];
	struct ib_cm_id *listen;
	struct ib_cm_id *act;
	struct ib_cm_id *pas;
	bool drop;
	bool drop_active;
	enum ib_cm_event_type drop_event;
	struct ib_cm_id *dropped;
};

/**
 * struct cc_event - one event as its handler saw it
 * @conn: the connection (the cm_id's context)
 * @id: the cm_id it was delivered to
 * @type: the event
 * @state: the cm_id's state while the handler ran
 * @at: when the handler ran
 * @has_pdata: the event carried private data
 * @pdata: its first bytes
 * @listen_id: REQ: the listener
 * @qp_type: REQ: the QP type the passive side must use
 * @remote_qpn: REQ, REP: the peer's QP number
 * @starting_psn: REQ, REP: the starting PSN of the message
 * @resp_res: REQ, REP: responder resources for this side
 * @init_depth: REQ, REP: initiator depth for this side
 * @local_resp: REQ: CM response timeout of this side
 * @remote_resp: REQ: CM response timeout of the peer
 * @flow_control: REQ, REP: end-to-end flow control
 * @retry: REQ: retry count
 * @rnr_retry: REQ, REP: RNR retry count
 * @srq: REQ, REP: the sender uses an SRQ
 * @port: REQ: port it came in on
 * @bth_pkey: REQ: P_Key of the MAD
 * @ca_guid: REQ, REP: the peer's CA GUID
 * @has_path: REQ: a primary path was given
 * @has_alt: REQ: an alternate path was given
 * @path_sgid: REQ: primary path SGID
 * @path_dgid: REQ: primary path DGID
 * @path_pkey: REQ: primary path P_Key
 * @path_mtu: REQ: primary path MTU
 * @sgid_ok: REQ: the SGID attribute is the port's GID
 * @ack_delay: REP: the target's ACK delay
 * @failover: REP: failover accepted
 * @rej_reason: REJ: the reason
 * @ari_len: REJ: length of the additional rejection information
 * @ari: REJ: the additional rejection information
 * @service_timeout: MRA: the service timeout
 * @send_status: *_ERROR: status of the failed send
 * @mra_ret: REQ with @mra_on_req: what ib_send_cm_mra() (or, on a newer
 *	CM, ib_prepare_cm_mra()) returned
 * @again_ret: REQ_ERROR with @req_again: what ib_send_cm_req() returned
 * @dropped: the handler returned non-zero for this event
 * @req_pdata: REQ: the whole private data field
 * @service_id: SIDR_REQ: the service ID asked for
 * @sidr_pkey: SIDR_REQ: the P_Key the asker named
 * @sidr_status: SIDR_REP: the status
 * @qkey: SIDR_REP: the Q_Key of the service's QP
 * @info_len: SIDR_REP: length of the additional information
 * @info: SIDR_REP: the additional information
 */
struct cc_event {
	struct cc_conn *conn;
	struct ib_cm_id *id;
	enum ib_cm_event_type type;
	enum ib_cm_state state;
	ktime_t at;
	bool has_pdata;
	u8 pdata[CC_PDATA];
	struct ib_cm_id *listen_id;
	enum ib_qp_type qp_type;
	u32 remote_qpn;
	u32 starting_psn;
	u8 resp_res;
	u8 init_depth;
	u8 local_resp;
	u8 remote_resp;
	u8 flow_control;
	u8 retry;
	u8 rnr_retry;
	u8 srq;
	u8 port;
	u16 bth_pkey;
	__be64 ca_guid;
	bool has_path;
	bool has_alt;
	union ib_gid path_sgid;
	union ib_gid path_dgid;
	__be16 path_pkey;
	enum ib_mtu path_mtu;
	bool sgid_ok;
	u8 ack_delay;
	u8 failover;
	int rej_reason;
	u8 ari_len;
	u8 ari[IB_CM_REJ_ARI_LENGTH];
	u8 service_timeout;
	int send_status;
	int mra_ret;
	int again_ret;
	bool dropped;
	u8 req_pdata[IB_CM_REQ_PRIVATE_DATA_SIZE];
	__be64 service_id;
	u16 sidr_pkey;
	int sidr_status;
	u32 qkey;
	u8 info_len;
	u8 info[CC_ARI_LEN];
};

/*
 * cc_lock protects cc_events, cc_nevents, cc_lost and every cc_conn.pas,
 * .req_again, .drop and .dropped:
 * the CM's handler threads fill them, the case's thread reads them.
 */
static DEFINE_SPINLOCK(cc_lock);
static struct cc_event cc_events[CC_MAX_EVENTS];
static unsigned int cc_nevents;
static bool cc_lost;
static DECLARE_WAIT_QUEUE_HEAD(cc_wq);
/* The connections of the running case (cases run one at a time). */
static struct cc_conn cc_conns[2];

/* Eight bytes of private data that say which message carried them. */
static void cc_tag(u8 *buf, char tag)
{
	cmt_tag(buf, "cc-test", tag);
}

static bool cc_pdata_is(const struct cc_event *e, char tag)
{
	return cmt_tagged(e->has_pdata, e->pdata, "cc-test", tag);
}

static void cc_note_req(struct cc_event *e,
			const struct ib_cm_req_event_param *p)
{
	const struct sa_path_rec *path = p->primary_path;

	e->listen_id = p->listen_id;
	e->qp_type = p->qp_type;
	e->remote_qpn = p->remote_qpn;
	e->starting_psn = p->starting_psn;
	e->resp_res = p->responder_resources;
	e->init_depth = p->initiator_depth;
	e->local_resp = p->local_cm_response_timeout;
	e->remote_resp = p->remote_cm_response_timeout;
	e->flow_control = p->flow_control;
	e->retry = p->retry_count;
	e->rnr_retry = p->rnr_retry_count;
	e->srq = p->srq;
	e->port = p->port;
	e->bth_pkey = p->bth_pkey;
	e->ca_guid = p->remote_ca_guid;
	e->has_alt = !!p->alternate_path;
	e->sgid_ok = p->ppath_sgid_attr &&
		     !memcmp(p->ppath_sgid_attr->gid.raw, cc_gid->gid.raw,
			     sizeof(union ib_gid));
	if (path) {
		e->has_path = true;
		e->path_sgid = path->sgid;
		e->path_dgid = path->dgid;
		e->path_pkey = path->pkey;
		e->path_mtu = path->mtu;
	}
}

static void cc_note_rep(struct cc_event *e,
			const struct ib_cm_rep_event_param *p)
{
	e->remote_qpn = p->remote_qpn;
	e->starting_psn = p->starting_psn;
	e->resp_res = p->responder_resources;
	e->init_depth = p->initiator_depth;
	e->ack_delay = p->target_ack_delay;
	e->failover = p->failover_accepted;
	e->flow_control = p->flow_control;
	e->rnr_retry = p->rnr_retry_count;
	e->srq = p->srq;
	e->ca_guid = p->remote_ca_guid;
}

/* Copy what the event says; its pointers die when the handler returns. */
static void cc_note(struct cc_event *e, struct ib_cm_id *id,
		    const struct ib_cm_event *ev)
{
	const struct ib_cm_sidr_req_event_param *sreq =
		&ev->param.sidr_req_rcvd;
	const struct ib_cm_sidr_rep_event_param *srep =
		&ev->param.sidr_rep_rcvd;
	const struct ib_cm_rej_event_param *rej = &ev->param.rej_rcvd;

	e->conn = id->context;
	e->id = id;
	e->type = ev->event;
	e->state = READ_ONCE(id->state);
	e->at = ktime_get();
	cmt_note_pdata(&e->has_pdata, e->pdata, ev);
	cmt_note_params(e, ev);
	switch (ev->event) {
	case IB_CM_REQ_RECEIVED:
		cc_note_req(e, &ev->param.req_rcvd);
		/* A REQ always carries its whole private data field. */
		memcpy(e->req_pdata, ev->private_data, sizeof(e->req_pdata));
		break;
	case IB_CM_SIDR_REQ_RECEIVED:
		e->sgid_ok = sreq->sgid_attr &&
			     !memcmp(sreq->sgid_attr->gid.raw,
				     cc_gid->gid.raw, sizeof(union ib_gid));
		break;
	case IB_CM_SIDR_REP_RECEIVED:
		e->info_len = srep->info_len;
		if (srep->info)
			memcpy(e->info, srep->info,
			       min_t(size_t, srep->info_len, sizeof(e->info)));
		break;
	case IB_CM_REP_RECEIVED:
		cc_note_rep(e, &ev->param.rep_rcvd);
		break;
	case IB_CM_REJ_RECEIVED:
		e->ari_len = rej->ari_length;
		if (rej->ari)
			memcpy(e->ari, rej->ari,
			       min_t(size_t, rej->ari_length, sizeof(e->ari)));
		break;
	default:
		break;
	}
}

/*
 * The handler of every cm_id here.  A REQ's new cm_id becomes its
 * connection's passive side; a second one is refused (a non-zero return
 * makes the CM destroy it) and shows as a second REQ event.
 */
static int cc_handler(struct ib_cm_id *id, const struct ib_cm_event *ev)
{
	struct cc_conn *c = id->context;
	bool req = ev->event == IB_CM_REQ_RECEIVED ||
		   ev->event == IB_CM_SIDR_REQ_RECEIVED;
	struct cc_event e = {};
	bool claimed = false;
	bool again = false;
	bool is_act;
	unsigned long flags;
#ifndef HAVE_IB_PREPARE_CM_MRA
	u8 pd[CC_PDATA];
#endif

	cc_note(&e, id, ev);
	if (ev->event == IB_CM_REQ_ERROR && c) {
		spin_lock_irqsave(&cc_lock, flags);
		again = c->req_again;
		c->req_again = false;
		spin_unlock_irqrestore(&cc_lock, flags);
		if (again)
			e.again_ret = ib_send_cm_req(id, &c->req);
	}
	if (req) {
		spin_lock_irqsave(&cc_lock, flags);
		if (c && !c->pas) {
			c->pas = id;
			claimed = true;
		}
		spin_unlock_irqrestore(&cc_lock, flags);
		if (claimed && c->mra_on_req &&
		    ev->event == IB_CM_REQ_RECEIVED) {
#ifdef HAVE_IB_PREPARE_CM_MRA
			e.mra_ret = ib_prepare_cm_mra(id);
#else
			cc_tag(pd, 'M');
			e.mra_ret = ib_send_cm_mra(id, CC_MRA_TIMEOUT, pd,
						   sizeof(pd));
#endif
		}
	}
	spin_lock_irqsave(&cc_lock, flags);
	is_act = c && id == c->act;
	if (c && c->drop && ev->event == c->drop_event &&
	    is_act == c->drop_active) {
		c->drop = false;
		c->dropped = id;
		if (id == c->pas)
			c->pas = NULL;
		e.dropped = true;
	}
	if (cc_nevents < CC_MAX_EVENTS)
		cc_events[cc_nevents++] = e;
	else
		cc_lost = true;
	spin_unlock_irqrestore(&cc_lock, flags);
	wake_up_all(&cc_wq);
	if (e.dropped)
		return -ECONNABORTED;
	return req && !claimed ? -EBUSY : 0;
}

/*
 * How many events of @type (or CC_ANY) reached @id (any cm_id of @c when
 * NULL) from the @from-th event on; the last one is copied to @last.
 */
static unsigned int cc_count(const struct cc_conn *c,
			     const struct ib_cm_id *id, int type,
			     unsigned int from, struct cc_event *last)
{
	const struct cc_event *e;
	unsigned long flags;
	unsigned int i, n = 0;

	spin_lock_irqsave(&cc_lock, flags);
	for (i = from; i < cc_nevents; i++) {
		e = &cc_events[i];
		if (e->conn != c || (id && e->id != id) ||
		    (type != CC_ANY && e->type != type))
			continue;
		n++;
		if (last)
			*last = *e;
	}
	spin_unlock_irqrestore(&cc_lock, flags);
	return n;
}

/* The number of events so far, to count from later. */
static unsigned int cc_mark(void)
{
	unsigned long flags;
	unsigned int n;

	spin_lock_irqsave(&cc_lock, flags);
	n = cc_nevents;
	spin_unlock_irqrestore(&cc_lock, flags);
	return n;
}

/* Wait for a @type event of @id (of any cm_id of @c when NULL). */
static bool cc_wait(const struct cc_conn *c, const struct ib_cm_id *id,
		    enum ib_cm_event_type type, struct cc_event *e)
{
	wait_event_timeout(cc_wq, cc_count(c, id, type, 0, NULL),
			   msecs_to_jiffies(CC_WAIT_MS));
	if (cc_count(c, id, type, 0, e))
		return true;
	IBST_FAIL("no event %d on the %s side within %d ms", type,
		  id && id == c->act ? "active" : "passive", CC_WAIT_MS);
	return false;
}

static enum ib_cm_state cc_state(const struct ib_cm_id *id)
{
	return cmt_state(id);
}

static struct ib_cm_id *cc_passive(struct cc_conn *c)
{
	struct ib_cm_id *id;
	unsigned long flags;

	spin_lock_irqsave(&cc_lock, flags);
	id = c->pas;
	spin_unlock_irqrestore(&cc_lock, flags);
	return id;
}

/* IBTA time exponent to milliseconds: 4.096 us * 2^t, about 2^(t - 8) ms. */
static unsigned int cc_iba_ms(unsigned int t)
{
	return 1U << (t > 8 ? t - 8 : 0);
}

/*
 * The local ACK timeout of the connection, as an exponent range.  IBTA:
 * it covers a round trip (2 packet life times, 2^(plt + 1)) plus the
 * responder's ACK delay; the CM approximates the sum by the larger term,
 * one more when the two are close.  Both sides compute it from the same
 * path and the same device here.
 */
static void cc_ack_timeout_range(const struct cc_conn *c, u8 *lo, u8 *hi)
{
	*lo = max_t(u8, c->plt + 1, cc_dev->attrs.local_ca_ack_delay);
	*hi = min_t(u8, *lo + 1, 31);
}

/* ------------------------------------------------------------------ */
/* Per-port CM counters (both ib_cm's publish them)                    */

static long cc_counter(const char *group, const char *msg)
{
	char path[128], buf[32];
	struct file *f;
	loff_t pos = 0;
	ssize_t n;
	long v;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/%s/%s",
		 dev_name(&cc_dev->dev), cc_port, group, msg);
	f = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(f))
		return PTR_ERR(f);
	n = kernel_read(f, buf, sizeof(buf) - 1, &pos);
	filp_close(f, NULL);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	if (kstrtol(strim(buf), 10, &v))
		return -EINVAL;
	return v;
}

/*
 * Wait until a counter reaches @want (sends count when they complete) and
 * check that it does not go beyond.
 */
static void cc_counter_is(const char *group, const char *msg, long want)
{
	unsigned int ms;
	long v = 0;

	for (ms = 0; ms < CC_WAIT_MS; ms += 20) {
		v = cc_counter(group, msg);
		if (v < 0 || v >= want)
			break;
		msleep(20);
	}
	if (v != want)
		IBST_FAIL("%s/%s is %ld, expected %ld", group, msg, v, want);
}

/* ------------------------------------------------------------------ */
/* What a failed case prints                                           */

/*
 * The cm_ids of @c, unless one may be the CM's to destroy (a drop is
 * armed or happened): then only where they were.
 */
static void cc_dump_conn(unsigned int k, struct cc_conn *c)
{
	struct ib_cm_id *ids[3];
	static const char *const what[] = { "listener", "active", "passive" };
	unsigned long flags;
	bool dropping;
	int i;

	spin_lock_irqsave(&cc_lock, flags);
	ids[0] = c->listen;
	ids[1] = c->act;
	ids[2] = c->pas;
	dropping = c->drop || c->dropped;
	spin_unlock_irqrestore(&cc_lock, flags);
	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		if (!ids[i])
			continue;
		if (dropping)
			ibst_diag("dump: conn %u %s %p (a drop is armed or done)",
				  k, what[i], ids[i]);
		else
			ibst_diag("dump: conn %u %s %p: %s", k, what[i], ids[i],
				  cmt_state_name(cc_state(ids[i])));
	}
}

/*
 * The suite's dump, at a case's first failed check: the events so far
 * (which side of which connection, the cm_id's state when it got it),
 * the connections' cm_ids and the port's counters that are not 0.
 */
static void cc_dump(void)
{
	static const char *const groups[] = {
		"cm_tx_msgs", "cm_tx_retries", "cm_rx_msgs", "cm_rx_duplicates",
	};
	struct {
		const struct cc_conn *conn;
		const struct ib_cm_id *id;
		u8 type;
		u8 state;
		bool dropped;
	} ev[CC_MAX_EVENTS];
	long v[ARRAY_SIZE(groups)];
	unsigned int i, j, n;
	unsigned long flags;
	bool lost, any;

	spin_lock_irqsave(&cc_lock, flags);
	n = cc_nevents;
	lost = cc_lost;
	for (i = 0; i < n; i++) {
		ev[i].conn = cc_events[i].conn;
		ev[i].id = cc_events[i].id;
		ev[i].type = cc_events[i].type;
		ev[i].state = cc_events[i].state;
		ev[i].dropped = cc_events[i].dropped;
	}
	spin_unlock_irqrestore(&cc_lock, flags);
	ibst_diag("dump: %u event(s)%s", n, lost ? ", later ones lost" : "");
	for (i = 0; i < n; i++)
		ibst_diag("dump: event %u: %s to conn %d %s %p in %s%s", i,
			  cmt_event_name(ev[i].type),
			  ev[i].conn ? (int)(ev[i].conn - cc_conns) : -1,
			  ev[i].conn && ev[i].id == ev[i].conn->act ?
			  "active" : "other", ev[i].id,
			  cmt_state_name(ev[i].state),
			  ev[i].dropped ? ", given back" : "");
	for (i = 0; i < ARRAY_SIZE(cc_conns); i++)
		cc_dump_conn(i, &cc_conns[i]);
	for (i = 0; i < ARRAY_SIZE(cmt_msg_names); i++) {
		any = false;
		for (j = 0; j < ARRAY_SIZE(groups); j++) {
			v[j] = cc_counter(groups[j], cmt_msg_names[i]);
			any |= v[j] != 0;
		}
		if (any)
			ibst_diag("dump: %s: sent %ld, resent %ld, received %ld, duplicates %ld",
				  cmt_msg_names[i], v[0], v[1], v[2], v[3]);
	}
}

/* ------------------------------------------------------------------ */
/* QP attributes                                                       */

/* QPs of this type issue requests that RDMA reads and atomics may answer. */
static bool cc_requester(enum ib_qp_type t)
{
	return t == IB_QPT_RC || t == IB_QPT_XRC_INI;
}

/* QPs of this type answer RDMA reads and atomics and send RNR NAKs. */
static bool cc_responder(enum ib_qp_type t)
{
	return t == IB_QPT_RC || t == IB_QPT_XRC_TGT;
}

/*
 * The mask ib_cm_init_qp_attr() must give for a move to @to: exactly what
 * the verbs state table requires of a @t QP for that transition (the
 * CM's values make the optional attributes unnecessary, and a RoCE
 * connection has no alternate path).  INIT: port, P_Key index, access.
 * RTR: the path, MTU, peer QPN and receive PSN; a responder also its
 * inbound RDMA read depth and minimum RNR timer.  RTS: the send PSN; a
 * requester also its retry counts and outbound read depth; every
 * reliable type (XRC_TGT too, which the table asks for it) the ACK
 * timeout.
 */
static int cc_want_mask(enum ib_qp_type t, enum ib_qp_state to)
{
	int mask = IB_QP_STATE;

	switch (to) {
	case IB_QPS_INIT:
		mask |= IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS;
		break;
	case IB_QPS_RTR:
		mask |= IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
			IB_QP_RQ_PSN;
		if (cc_responder(t))
			mask |= IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER;
		break;
	default:
		mask |= IB_QP_SQ_PSN;
		if (cc_requester(t))
			mask |= IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
				IB_QP_MAX_QP_RD_ATOMIC;
		if (t != IB_QPT_UC)
			mask |= IB_QP_TIMEOUT;
		break;
	}
	return mask;
}

/**
 * struct cc_qp_want - the QP attributes one side must be given
 * @side: "active" or "passive", for the messages
 * @type: its QP type
 * @access: INIT access flags
 * @dest_qpn: RTR: the peer's QP number
 * @rq_psn: RTR: the first PSN it receives
 * @max_dest_rd_atomic: RTR (responders): inbound RDMA reads/atomics
 * @sq_psn: RTS: the first PSN it sends
 * @max_rd_atomic: RTS (requesters): outbound RDMA reads/atomics
 * @retry: RTS (requesters): transport retry count
 * @rnr_retry: RTS (requesters): RNR retry count
 * @timeout: RTS: the ACK timeout found (output)
 */
struct cc_qp_want {
	const char *side;
	enum ib_qp_type type;
	int access;
	u32 dest_qpn;
	u32 rq_psn;
	u8 max_dest_rd_atomic;
	u32 sq_psn;
	u8 max_rd_atomic;
	u8 retry;
	u8 rnr_retry;
	u8 timeout;
};

#define CC_EQ(w, got, want) do {					\
	long long _g = (got), _w = (want);				\
									\
	if (_g != _w)							\
		IBST_FAIL("%s: expected %s == %s, but %s is %lld, %s is %lld", \
			  (w)->side, #got, #want, #got, _g, #want, _w);	\
} while (0)

#define CC_TRUE(w, cond) do {						\
	if (!(cond))							\
		IBST_FAIL("%s: expected %s", (w)->side, #cond);		\
} while (0)

/* RTR: the path back to this port's own GID and MAC. */
static void cc_check_av(struct cc_qp_want *w, const struct rdma_ah_attr *ah)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(ah);

	CC_EQ(w, ah->type, RDMA_AH_ATTR_TYPE_ROCE);
	CC_EQ(w, rdma_ah_get_port_num(ah), cc_port);
	CC_TRUE(w, rdma_ah_get_ah_flags(ah) & IB_AH_GRH);
	CC_TRUE(w, !memcmp(grh->dgid.raw, cc_gid->gid.raw, 16));
	CC_TRUE(w, grh->sgid_attr);
	if (grh->sgid_attr)
		CC_TRUE(w, !memcmp(grh->sgid_attr->gid.raw, cc_gid->gid.raw,
				   16));
	CC_TRUE(w, ether_addr_equal(ah->roce.dmac, cc_mac));
}

/*
 * ib_cm_init_qp_attr() for INIT, RTR and RTS: success, the exact mask,
 * a mask the verbs layer accepts for that transition, and the values.
 */
static void cc_check_qp(const struct cc_conn *c, struct ib_cm_id *id,
			struct cc_qp_want *w)
{
	static const enum ib_qp_state to[] = {
		IB_QPS_INIT, IB_QPS_RTR, IB_QPS_RTS
	};
	enum ib_qp_state from = IB_QPS_RESET;
	struct ib_qp_attr a;
	int mask, want, ret;
	unsigned int i;
	u8 lo, hi;

	for (i = 0; i < ARRAY_SIZE(to); from = to[i++]) {
		memset(&a, 0, sizeof(a));
		a.qp_state = to[i];
		mask = 0;
		ret = ib_cm_init_qp_attr(id, &a, &mask);
		CC_EQ(w, ret, 0);
		if (ret)
			continue;
		want = cc_want_mask(w->type, to[i]);
		if (mask != want)
			IBST_FAIL("%s: state %d mask %#x, expected %#x (missing %#x, extra %#x)",
				  w->side, to[i], mask, want, want & ~mask,
				  mask & ~want);
		CC_TRUE(w, ib_modify_qp_is_ok(from, to[i], w->type,
					      (enum ib_qp_attr_mask)mask));
		switch (to[i]) {
		case IB_QPS_INIT:
			CC_EQ(w, a.qp_access_flags, w->access);
			CC_EQ(w, a.pkey_index, cc_pkey_index);
			CC_EQ(w, a.port_num, cc_port);
			break;
		case IB_QPS_RTR:
			cc_check_av(w, &a.ah_attr);
			CC_EQ(w, a.path_mtu, IB_MTU_1024);
			CC_EQ(w, a.dest_qp_num, w->dest_qpn);
			CC_EQ(w, a.rq_psn, w->rq_psn);
			if (!cc_responder(w->type))
				break;
			CC_EQ(w, a.max_dest_rd_atomic, w->max_dest_rd_atomic);
			/* No CM message carries it: the CM asks for none. */
			CC_EQ(w, a.min_rnr_timer, 0);
			break;
		default:
			CC_EQ(w, a.sq_psn, w->sq_psn);
			if (cc_requester(w->type)) {
				CC_EQ(w, a.retry_cnt, w->retry);
				CC_EQ(w, a.rnr_retry, w->rnr_retry);
				CC_EQ(w, a.max_rd_atomic, w->max_rd_atomic);
			}
			if (w->type == IB_QPT_UC)
				break;
			cc_ack_timeout_range(c, &lo, &hi);
			w->timeout = a.timeout;
			CC_TRUE(w, a.timeout >= lo && a.timeout <= hi);
			break;
		}
	}
}

/* Only INIT, for a side that has not seen the peer's answer yet. */
static void cc_check_init(struct ib_cm_id *id, struct cc_qp_want *w)
{
	struct ib_qp_attr a = { .qp_state = IB_QPS_INIT };
	int mask = 0;

	CC_EQ(w, ib_cm_init_qp_attr(id, &a, &mask), 0);
	if (mask != cc_want_mask(w->type, IB_QPS_INIT))
		IBST_FAIL("%s: INIT mask %#x, expected %#x", w->side, mask,
			  cc_want_mask(w->type, IB_QPS_INIT));
	CC_EQ(w, a.qp_access_flags, w->access);
	CC_EQ(w, a.port_num, cc_port);
}

/* An idle cm_id has no connection to give QP attributes of. */
static bool cc_no_qp_attr(struct ib_cm_id *id)
{
	struct ib_qp_attr a = { .qp_state = IB_QPS_INIT };
	int mask = 0;

	return ib_cm_init_qp_attr(id, &a, &mask) == -EINVAL;
}

/* Remote writes always; reads and atomics with responder resources. */
static int cc_access(u8 responder_resources)
{
	int access = IB_ACCESS_REMOTE_WRITE;

	if (!responder_resources)
		return access;
	access |= IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC;
#ifdef HAVE_IB_ACCESS_FLUSH
	/* and both FLUSH kinds if the device has either (rxe has both) */
	if (cc_dev->attrs.device_cap_flags &
	    (IB_DEVICE_FLUSH_GLOBAL | IB_DEVICE_FLUSH_PERSISTENT))
		access |= IB_ACCESS_FLUSH_GLOBAL | IB_ACCESS_FLUSH_PERSISTENT;
#endif
	return access;
}

/*
 * XRC (annex A14): an initiator never answers RDMA reads and the target
 * always receives through an SRQ, so a REQ from an XRC initiator carries
 * no responder resources, retry counts or SRQ bit, and the target's REP
 * no initiator depth, flow control or QPN (its QPN goes in the local
 * EECN field) but the SRQ bit set.
 */
static bool cc_xrc(const struct cc_conn *c)
{
	return c->type == IB_QPT_XRC_INI;
}

/* The REP's initiator depth as it arrives at the active side. */
static u8 cc_rep_init_depth(const struct cc_conn *c)
{
	return cc_xrc(c) ? 0 : c->rep.initiator_depth;
}

/*
 * The passive side: it responds with what its REP offered and sends with
 * the PSN the REQ named; it retries as the REQ asked.
 */
static void cc_want_passive(const struct cc_conn *c, struct cc_qp_want *w)
{
	memset(w, 0, sizeof(*w));
	w->side = "passive";
	w->type = cc_xrc(c) ? IB_QPT_XRC_TGT : c->type;
	w->access = cc_access(c->rep.responder_resources);
	w->dest_qpn = c->req.qp_num;
	w->rq_psn = c->rep.starting_psn;
	w->max_dest_rd_atomic = c->rep.responder_resources;
	w->sq_psn = c->req.starting_psn;
	w->max_rd_atomic = c->rep.initiator_depth;
	w->retry = c->req.retry_count;
	w->rnr_retry = c->req.rnr_retry_count;
}

/*
 * The active side, once the REP came: it sends with the PSN the REP named
 * and as many reads as the REP's responder resources allow; its RNR retry
 * count is the one the REP asked for.
 */
static void cc_want_active(const struct cc_conn *c, struct cc_qp_want *w)
{
	memset(w, 0, sizeof(*w));
	w->side = "active";
	w->type = c->type;
	w->access = cc_access(cc_rep_init_depth(c));
	w->dest_qpn = c->rep.qp_num;
	w->rq_psn = c->req.starting_psn;
	w->max_dest_rd_atomic = cc_rep_init_depth(c);
	w->sq_psn = c->rep.starting_psn;
	w->max_rd_atomic = c->rep.responder_resources;
	w->retry = c->req.retry_count;
	w->rnr_retry = c->rep.rnr_retry_count;
}

/* ------------------------------------------------------------------ */
/* Setting connections up and down                                    */

/* A path to this port's own GID and MAC: rdma_rxe loops it back. */
static void cc_self_path(struct sa_path_rec *p, u8 plt)
{
	memset(p, 0, sizeof(*p));
	p->rec_type = sa_conv_gid_to_pathrec_type(cc_gid->gid_type);
	p->sgid = cc_gid->gid;
	p->dgid = cc_gid->gid;
	p->pkey = cpu_to_be16(0xffff);
	p->mtu = IB_MTU_1024;
	p->rate = IB_RATE_10_GBPS;
	p->packet_life_time = plt;
	p->hop_limit = 64;
	p->reversible = 1;
	p->roce.route_resolved = true;
	sa_path_set_dmac(p, cc_mac);
}

/*
 * A fresh connection of @type: new service ID, QP numbers and PSNs (a QP
 * number in use by a connection in TimeWait would make the REQ stale).
 * The RC-only parameters are left at 0 for UC, and set for XRC where
 * they must not be carried.
 */
static void cc_conn_init(struct cc_conn *c, enum ib_qp_type type, u8 plt)
{
	u32 n = ++cc_serial;
	bool rc = type != IB_QPT_UC;

	memset(c, 0, sizeof(*c));
	c->type = type;
	c->plt = plt;
	cc_self_path(&c->path, plt);
	cc_tag(c->pd_req, 'Q');
	cc_tag(c->pd_rep, 'P');

	c->req.primary_path = &c->path;
	c->req.ppath_sgid_attr = cc_gid;
	c->req.service_id = cpu_to_be64(0x00000000cc000000ULL + n);
	c->req.qp_num = 0x310000 + 2 * n;
	c->req.qp_type = type;
	c->req.starting_psn = 0x100000 + 0x111 * n;
	c->req.private_data = c->pd_req;
	c->req.private_data_len = CC_PDATA;
	c->req.responder_resources = rc ? 4 : 0;
	c->req.initiator_depth = rc ? 3 : 0;
	c->req.remote_cm_response_timeout = CC_RESP;
	c->req.local_cm_response_timeout = CC_RESP - 1;
	c->req.flow_control = rc;
	c->req.retry_count = rc ? 5 : 0;
	c->req.rnr_retry_count = rc ? 6 : 0;
	c->req.max_cm_retries = CC_RETRIES;
	c->req.srq = type == IB_QPT_XRC_INI;

	c->rep.qp_num = 0x310001 + 2 * n;
	c->rep.starting_psn = 0x200000 + 0x111 * n;
	c->rep.private_data = c->pd_rep;
	c->rep.private_data_len = CC_PDATA;
	c->rep.responder_resources = rc ? 2 : 0;
	c->rep.initiator_depth = rc ? 1 : 0;
	c->rep.flow_control = rc;
	c->rep.rnr_retry_count = rc ? 4 : 0;
	c->rep.srq = type == IB_QPT_XRC_INI;
}

static bool cc_listen(struct cc_conn *c)
{
	c->listen = ib_create_cm_id(cc_dev, cc_handler, c);
	if (IS_ERR(c->listen)) {
		c->listen = NULL;
		IBST_FAIL("ib_create_cm_id failed");
		return false;
	}
	if (ib_cm_listen(c->listen, c->req.service_id)) {
		IBST_FAIL("ib_cm_listen failed");
		return false;
	}
	return true;
}

static bool cc_send_req(struct cc_conn *c)
{
	int ret;

	c->act = ib_create_cm_id(cc_dev, cc_handler, c);
	if (IS_ERR(c->act)) {
		c->act = NULL;
		IBST_FAIL("ib_create_cm_id failed");
		return false;
	}
	ret = ib_send_cm_req(c->act, &c->req);
	if (ret)
		IBST_FAIL("ib_send_cm_req: %d", ret);
	return !ret;
}

/* The REQ event: everything the active side put in its REQ. */
static void cc_check_req_event(const struct cc_conn *c,
			       const struct cc_event *e)
{
	bool xrc = cc_xrc(c);

	IBST_EXPECT_PTR_EQ(e->listen_id, c->listen);
	IBST_EXPECT_EQ(e->state, IB_CM_REQ_RCVD);
	IBST_EXPECT_EQ(e->qp_type, xrc ? IB_QPT_XRC_TGT : c->type);
	IBST_EXPECT_EQ(e->remote_qpn, c->req.qp_num);
	IBST_EXPECT_EQ(e->starting_psn, c->req.starting_psn);
	IBST_EXPECT_EQ(e->resp_res, c->req.initiator_depth);
	IBST_EXPECT_EQ(e->init_depth, xrc ? 0 : c->req.responder_resources);
	IBST_EXPECT_EQ(e->retry, xrc ? 0 : c->req.retry_count);
	IBST_EXPECT_EQ(e->rnr_retry, xrc ? 0 : c->req.rnr_retry_count);
	IBST_EXPECT_EQ(e->srq, xrc ? 0 : c->req.srq);
	IBST_EXPECT_EQ(e->flow_control, c->req.flow_control);
	/* The peer's "remote" timeout is this side's own, and back. */
	IBST_EXPECT_EQ(e->local_resp, c->req.remote_cm_response_timeout);
	IBST_EXPECT_EQ(e->remote_resp, c->req.local_cm_response_timeout);
	IBST_EXPECT_EQ(e->ca_guid, cc_dev->node_guid);
	IBST_EXPECT_EQ(e->port, cc_port);
	IBST_EXPECT_EQ(e->bth_pkey, 0xffff);
	IBST_EXPECT(e->sgid_ok);
	IBST_EXPECT(e->has_path);
	IBST_EXPECT(!e->has_alt);
	if (e->has_path) {
		/* Seen from the passive side: both ends are this GID. */
		IBST_EXPECT_MEMEQ(e->path_sgid.raw, cc_gid->gid.raw, 16);
		IBST_EXPECT_MEMEQ(e->path_dgid.raw, cc_gid->gid.raw, 16);
		IBST_EXPECT_EQ(e->path_pkey, cpu_to_be16(0xffff));
		IBST_EXPECT_EQ(e->path_mtu, IB_MTU_1024);
	}
	IBST_EXPECT(cc_pdata_is(e, 'Q'));
}

/* The REP event: everything the passive side put in its REP. */
static void cc_check_rep_event(const struct cc_conn *c,
			       const struct cc_event *e)
{
	bool xrc = cc_xrc(c);

	IBST_EXPECT_EQ(e->state, IB_CM_REP_RCVD);
	/* For XRC the target's QPN travels as the REP's local EECN. */
	IBST_EXPECT_EQ(e->remote_qpn, c->rep.qp_num);
	IBST_EXPECT_EQ(e->starting_psn, c->rep.starting_psn);
	IBST_EXPECT_EQ(e->resp_res, cc_rep_init_depth(c));
	IBST_EXPECT_EQ(e->init_depth, c->rep.responder_resources);
	IBST_EXPECT_EQ(e->ack_delay, cc_dev->attrs.local_ca_ack_delay);
	IBST_EXPECT_EQ(e->failover, c->rep.failover_accepted);
	IBST_EXPECT_EQ(e->flow_control, xrc ? 0 : c->rep.flow_control);
	IBST_EXPECT_EQ(e->rnr_retry, c->rep.rnr_retry_count);
	IBST_EXPECT_EQ(e->srq, xrc ? 1 : c->rep.srq);
	IBST_EXPECT_EQ(e->ca_guid, cc_dev->node_guid);
	IBST_EXPECT(cc_pdata_is(e, 'P'));
}

/*
 * REQ, REP, RTU with every event, state and QP attribute checked on both
 * sides.  True when both ends are ESTABLISHED.
 */
static bool cc_connect_checked(struct cc_conn *c)
{
	struct cc_qp_want wa, wp;
	struct cc_event e;
	u8 pd[CC_PDATA];
	int ret;

	if (!cc_listen(c) || !cc_send_req(c))
		return false;
	IBST_EXPECT_EQ(cc_state(c->act), IB_CM_REQ_SENT);
	/* Before the REP the active side offers what its REQ offered. */
	cc_want_active(c, &wa);
	wa.access = cc_access(c->req.responder_resources);
	cc_check_init(c->act, &wa);

	if (!cc_wait(c, NULL, IB_CM_REQ_RECEIVED, &e))
		return false;
	cc_check_req_event(c, &e);
	if (!cc_passive(c))
		return false;
	IBST_EXPECT_EQ(cc_count(c, NULL, IB_CM_REQ_RECEIVED, 0, NULL), 1);
	ret = ib_send_cm_rep(c->pas, &c->rep);
	IBST_EXPECT_EQ(ret, 0);
	if (ret)
		return false;
	IBST_EXPECT_EQ(cc_state(c->pas), IB_CM_REP_SENT);
	cc_want_passive(c, &wp);
	cc_check_qp(c, c->pas, &wp);

	if (!cc_wait(c, c->act, IB_CM_REP_RECEIVED, &e))
		return false;
	cc_check_rep_event(c, &e);
	cc_want_active(c, &wa);
	cc_check_qp(c, c->act, &wa);
	/* Same path, same device: both sides wait as long for ACKs. */
	if (c->type != IB_QPT_UC)
		IBST_EXPECT_EQ(wa.timeout, wp.timeout);

	cc_tag(pd, 'U');
	IBST_EXPECT_EQ(ib_send_cm_rtu(c->act, pd, sizeof(pd)), 0);
	IBST_EXPECT_EQ(cc_state(c->act), IB_CM_ESTABLISHED);
	if (!cc_wait(c, c->pas, IB_CM_RTU_RECEIVED, &e))
		return false;
	IBST_EXPECT_EQ(e.state, IB_CM_ESTABLISHED);
	IBST_EXPECT(cc_pdata_is(&e, 'U'));
	/* Established: the attributes do not change. */
	cc_check_qp(c, c->pas, &wp);
	cc_check_qp(c, c->act, &wa);
	return cc_state(c->act) == IB_CM_ESTABLISHED &&
	       cc_state(c->pas) == IB_CM_ESTABLISHED;
}

/* REQ, REP, RTU; only checks that each step happens. */
static bool cc_establish(struct cc_conn *c)
{
	if (!cc_listen(c) || !cc_send_req(c))
		return false;
	if (!cc_wait(c, NULL, IB_CM_REQ_RECEIVED, NULL) || !cc_passive(c))
		return false;
	if (ib_send_cm_rep(c->pas, &c->rep)) {
		IBST_FAIL("ib_send_cm_rep failed");
		return false;
	}
	if (!cc_wait(c, c->act, IB_CM_REP_RECEIVED, NULL))
		return false;
	if (ib_send_cm_rtu(c->act, NULL, 0)) {
		IBST_FAIL("ib_send_cm_rtu failed");
		return false;
	}
	if (!cc_wait(c, c->pas, IB_CM_RTU_RECEIVED, NULL))
		return false;
	IBST_EXPECT_EQ(cc_state(c->act), IB_CM_ESTABLISHED);
	IBST_EXPECT_EQ(cc_state(c->pas), IB_CM_ESTABLISHED);
	return !ibst_case_failed();
}

/*
 * @id entered TimeWait at @since: it must leave it with one
 * TIMEWAIT_EXIT, to IDLE, not before the local ACK timeout (IBTA 12.9.8:
 * TimeWait lets the packets of the old connection drain), and then have
 * no QP attributes to give.
 */
static void cc_check_timewait(const struct cc_conn *c, struct ib_cm_id *id,
			      ktime_t since, const char *side)
{
	struct cc_event e;
	unsigned int ms;
	u8 lo, hi;

	if (!cc_wait(c, id, IB_CM_TIMEWAIT_EXIT, &e))
		return;
	cc_ack_timeout_range(c, &lo, &hi);
	ms = ktime_ms_delta(e.at, since);
	ibst_diag("%s side: TimeWait %u ms (ACK timeout exponent %u..%u)",
		  side, ms, lo, hi);
	if (e.state != IB_CM_IDLE)
		IBST_FAIL("%s: state %d at TIMEWAIT_EXIT", side, e.state);
	if (ms < cc_iba_ms(lo) * 4 / 5)
		IBST_FAIL("%s: TimeWait of %u ms, shorter than %u ms", side,
			  ms, cc_iba_ms(lo));
	if (!cc_no_qp_attr(id))
		IBST_FAIL("%s: QP attributes after TimeWait", side);
	msleep(100);
	IBST_EXPECT_EQ(cc_count(c, id, IB_CM_TIMEWAIT_EXIT, 0, NULL), 1);
	IBST_EXPECT_EQ(cc_state(id), IB_CM_IDLE);
}

/*
 * DREQ from one side, DREP from the other, both through TimeWait; the
 * private data of both messages reaches the peer.
 */
static void cc_disconnect_checked(struct cc_conn *c, bool from_active)
{
	struct ib_cm_id *from = from_active ? c->act : c->pas;
	struct ib_cm_id *to = from_active ? c->pas : c->act;
	const char *fs = from_active ? "active" : "passive";
	const char *ts = from_active ? "passive" : "active";
	long dreqs = cc_counter("cm_tx_msgs", "dreq");
	struct cc_event e;
	u8 pd[CC_PDATA];
	ktime_t t_to;

	cc_tag(pd, 'D');
	IBST_EXPECT_EQ(ib_send_cm_dreq(from, pd, sizeof(pd)), 0);
	IBST_EXPECT_EQ(cc_state(from), IB_CM_DREQ_SENT);
	if (!cc_wait(c, to, IB_CM_DREQ_RECEIVED, &e))
		return;
	IBST_EXPECT_EQ(e.state, IB_CM_DREQ_RCVD);
	IBST_EXPECT(cc_pdata_is(&e, 'D'));

	cc_tag(pd, 'R');
	t_to = ktime_get();
	IBST_EXPECT_EQ(ib_send_cm_drep(to, pd, sizeof(pd)), 0);
	IBST_EXPECT_EQ(cc_state(to), IB_CM_TIMEWAIT);
	if (!cc_wait(c, from, IB_CM_DREP_RECEIVED, &e))
		return;
	IBST_EXPECT_EQ(e.state, IB_CM_TIMEWAIT);
	IBST_EXPECT(cc_pdata_is(&e, 'R'));
	cc_counter_is("cm_tx_msgs", "dreq", dreqs + 1);

	cc_check_timewait(c, to, t_to, ts);
	cc_check_timewait(c, from, e.at, fs);
}

/*
 * Destroy what a case left.  An established connection is taken down
 * first (DREQ, DREP) so that no message of it is still on its way.
 */
static void cc_end(struct cc_conn *c)
{
	struct ib_cm_id *pas;
	unsigned long flags;
	bool lost;

	if (c->listen)
		ib_destroy_cm_id(c->listen);
	/* A cm_id given back to the CM is the CM's to destroy. */
	spin_lock_irqsave(&cc_lock, flags);
	if (c->act && c->act == c->dropped)
		c->act = NULL;
	c->drop = false;
	c->dropped = NULL;
	spin_unlock_irqrestore(&cc_lock, flags);
	pas = cc_passive(c);
	if (c->act && pas && cc_state(c->act) == IB_CM_ESTABLISHED &&
	    cc_state(pas) == IB_CM_ESTABLISHED &&
	    !ib_send_cm_dreq(c->act, NULL, 0)) {
		wait_event_timeout(cc_wq, cc_state(pas) == IB_CM_DREQ_RCVD,
				   msecs_to_jiffies(CC_WAIT_MS));
		if (!ib_send_cm_drep(pas, NULL, 0))
			wait_event_timeout(cc_wq,
					   cc_state(c->act) != IB_CM_DREQ_SENT,
					   msecs_to_jiffies(CC_WAIT_MS));
	}
	if (c->act)
		ib_destroy_cm_id(c->act);
	spin_lock_irqsave(&cc_lock, flags);
	pas = c->pas;
	c->pas = NULL;
	spin_unlock_irqrestore(&cc_lock, flags);
	if (pas)
		ib_destroy_cm_id(pas);
	c->listen = NULL;
	c->act = NULL;
	/* Let answers to the last messages come back and be dropped. */
	msleep(300);
	spin_lock_irqsave(&cc_lock, flags);
	lost = cc_lost;
	cc_lost = false;
	cc_nevents = 0;
	spin_unlock_irqrestore(&cc_lock, flags);
	if (lost)
		IBST_FAIL("more than %d events in one case", CC_MAX_EVENTS);
}

/* ------------------------------------------------------------------ */
/* Cases                                                               */

/* RC: every field of REQ and REP, RTU, DREQ/DREP and TimeWait. */
static void rc_connect_disconnect(void)
{
	struct cc_conn *c = &cc_conns[0];

	cc_conn_init(c, IB_QPT_RC, CC_PLT);
	if (cc_connect_checked(c))
		cc_disconnect_checked(c, true);
	cc_end(c);
}

/*
 * UC: no RDMA reads, no ACKs, no retries, so the QP attributes have no
 * read depths, RNR timer, ACK timeout or retry counts.  The passive side
 * disconnects this time.
 */
static void uc_connect(void)
{
	struct cc_conn *c = &cc_conns[0];

	cc_conn_init(c, IB_QPT_UC, CC_PLT);
	if (cc_connect_checked(c))
		cc_disconnect_checked(c, false);
	cc_end(c);
}

/*
 * XRC: the initiator's REQ arrives as an XRC_TGT REQ, the target answers
 * with its QPN in the REP (local EECN field), the initiator's attributes
 * are those of a sender (timeout, retries, read depth at RTS; no inbound
 * read depth or RNR timer at RTR) and the target's those of a receiver.
 */
static void xrc_connect(void)
{
	struct cc_conn *c = &cc_conns[0];

	cc_conn_init(c, IB_QPT_XRC_INI, CC_PLT);
	cc_connect_checked(c);
	cc_end(c);
}

/*
 * Destroying an established connection's cm_id sends a DREQ (IBTA
 * 12.9.7): the control for the XRC target case below.
 */
static void rc_destroy_sends_dreq(void)
{
	struct cc_conn *c = &cc_conns[0];
	struct ib_cm_id *pas;
	unsigned long flags;
	struct cc_event e;
	long dreqs;

	cc_conn_init(c, IB_QPT_RC, CC_PLT);
	if (!cc_establish(c))
		goto out;
	dreqs = cc_counter("cm_tx_msgs", "dreq");
	spin_lock_irqsave(&cc_lock, flags);
	pas = c->pas;
	c->pas = NULL;
	spin_unlock_irqrestore(&cc_lock, flags);
	ib_destroy_cm_id(pas);
	if (!cc_wait(c, c->act, IB_CM_DREQ_RECEIVED, &e))
		goto out;
	IBST_EXPECT_EQ(e.state, IB_CM_DREQ_RCVD);
	cc_counter_is("cm_tx_msgs", "dreq", dreqs + 1);
	IBST_EXPECT_EQ(ib_send_cm_drep(c->act, NULL, 0), 0);
	cc_check_timewait(c, c->act, ktime_get(), "active");
out:
	cc_end(c);
}

/*
 * An XRC target never disconnects (annex A14: only the initiator sends a
 * DREQ): destroying its established cm_id sends nothing, the initiator
 * stays ESTABLISHED.  The initiator's DREQ then finds no cm_id, and the
 * CM answers it with a DREP itself (IBTA 12.9.6), which takes the
 * initiator through TimeWait.
 */
static void xrc_tgt_destroy_sends_no_dreq(void)
{
	struct cc_conn *c = &cc_conns[0];
	long dreqs, dups;
	struct ib_cm_id *pas;
	unsigned int mark;
	unsigned long flags;
	struct cc_event e;

	cc_conn_init(c, IB_QPT_XRC_INI, CC_PLT);
	if (!cc_establish(c))
		goto out;
	dreqs = cc_counter("cm_tx_msgs", "dreq");
	dups = cc_counter("cm_rx_duplicates", "dreq");
	mark = cc_mark();
	spin_lock_irqsave(&cc_lock, flags);
	pas = c->pas;
	c->pas = NULL;
	spin_unlock_irqrestore(&cc_lock, flags);
	ib_destroy_cm_id(pas);
	msleep(CC_QUIET_MS);
	IBST_EXPECT_EQ(cc_count(c, c->act, CC_ANY, mark, NULL), 0);
	IBST_EXPECT_EQ(cc_state(c->act), IB_CM_ESTABLISHED);
	IBST_EXPECT_EQ(cc_counter("cm_tx_msgs", "dreq"), dreqs);

	IBST_EXPECT_EQ(ib_send_cm_dreq(c->act, NULL, 0), 0);
	if (!cc_wait(c, c->act, IB_CM_DREP_RECEIVED, &e))
		goto out;
	IBST_EXPECT_EQ(e.state, IB_CM_TIMEWAIT);
	cc_counter_is("cm_tx_msgs", "dreq", dreqs + 1);
	/* The stock CM counts a DREQ for no cm_id as a duplicate. */
	cc_counter_is("cm_rx_duplicates", "dreq", dups + 1);
	cc_check_timewait(c, c->act, e.at, "active");
out:
	cc_end(c);
}

/* XRC: the initiator's DREQ reaches the target, whose DREP ends it. */
static void xrc_ini_disconnect(void)
{
	struct cc_conn *c = &cc_conns[0];

	cc_conn_init(c, IB_QPT_XRC_INI, CC_PLT);
	if (cc_establish(c))
		cc_disconnect_checked(c, true);
	cc_end(c);
}

/*
 * A consumer REJ (reason 28) of the REQ carries its additional rejection
 * information and private data to the active side; both sides are IDLE
 * after it (a REJ of a REQ enters no TimeWait).
 */
static void rej_consumer_ari(void)
{
	struct cc_conn *c = &cc_conns[0];
	u8 ari[CC_ARI_LEN] = { 'a', 'r', 'i', 0x5a, 0xa5 };
	long rejs = cc_counter("cm_tx_msgs", "rej");
	struct cc_event e;
	u8 pd[CC_PDATA];

	cc_conn_init(c, IB_QPT_RC, CC_PLT);
	if (!cc_listen(c) || !cc_send_req(c) ||
	    !cc_wait(c, NULL, IB_CM_REQ_RECEIVED, NULL) || !cc_passive(c))
		goto out;
	cc_tag(pd, 'J');
	IBST_EXPECT_EQ(ib_send_cm_rej(c->pas, IB_CM_REJ_CONSUMER_DEFINED, ari,
				      sizeof(ari), pd, sizeof(pd)), 0);
	IBST_EXPECT_EQ(cc_state(c->pas), IB_CM_IDLE);
	if (!cc_wait(c, c->act, IB_CM_REJ_RECEIVED, &e))
		goto out;
	IBST_EXPECT_EQ(e.rej_reason, IB_CM_REJ_CONSUMER_DEFINED);
	IBST_EXPECT_EQ(e.ari_len, sizeof(ari));
	IBST_EXPECT_MEMEQ(e.ari, ari, sizeof(ari));
	IBST_EXPECT(cc_pdata_is(&e, 'J'));
	IBST_EXPECT_EQ(e.state, IB_CM_IDLE);
	IBST_EXPECT_EQ(cc_state(c->act), IB_CM_IDLE);
	IBST_EXPECT(cc_no_qp_attr(c->act));
	cc_counter_is("cm_tx_msgs", "rej", rejs + 1);
out:
	cc_end(c);
}

/* How long an unanswered REQ of the fast cases lives, in ms. */
static unsigned int cc_req_ms(unsigned int retries)
{
	return (retries + 1) *
	       (2 * cc_iba_ms(CC_FAST_PLT) + cc_iba_ms(CC_FAST_RESP));
}

static unsigned int cc_fast_req_ms(void)
{
	return cc_req_ms(CC_FAST_RETRIES);
}

static void cc_conn_init_fast(struct cc_conn *c)
{
	cc_conn_init(c, IB_QPT_RC, CC_FAST_PLT);
	c->req.remote_cm_response_timeout = CC_FAST_RESP;
	c->req.max_cm_retries = CC_FAST_RETRIES;
}

/*
 * A fast REQ for the MRA cases.  On a newer CM the MRA goes out for a
 * repeat of the REQ only: leave room for several repeats after the
 * passive side's handler has prepared it, however slow the guest.
 */
static void cc_conn_init_mra(struct cc_conn *c)
{
	cc_conn_init_fast(c);
#ifdef HAVE_IB_PREPARE_CM_MRA
	c->req.max_cm_retries = CC_MRA_RETRIES;
#endif
}

/*
 * A REQ nobody answers is sent 1 + max_cm_retries times, each try waiting
 * the remote CM response timeout plus a round trip, then fails with
 * IB_CM_REQ_ERROR and the active side is IDLE.  The control for the MRA
 * case below.
 */
static void req_unanswered_times_out(void)
{
	struct cc_conn *c = &cc_conns[0];
	long retries = cc_counter("cm_tx_retries", "req");
	long dups = cc_counter("cm_rx_duplicates", "req");
	unsigned int ms;
	struct cc_event e;
	ktime_t t0;

	cc_conn_init_fast(c);
	if (!cc_listen(c))
		goto out;
	t0 = ktime_get();
	if (!cc_send_req(c) || !cc_wait(c, c->act, IB_CM_REQ_ERROR, &e))
		goto out;
	ms = ktime_ms_delta(e.at, t0);
	ibst_diag("REQ failed after %u ms (%u ms expected)", ms,
		  cc_fast_req_ms());
	IBST_EXPECT_GE(ms, cc_fast_req_ms() * 4 / 5);
	IBST_EXPECT_EQ(e.send_status, IB_WC_RESP_TIMEOUT_ERR);
	IBST_EXPECT_EQ(e.state, IB_CM_IDLE);
	IBST_EXPECT_EQ(cc_count(c, NULL, IB_CM_REQ_RECEIVED, 0, NULL), 1);
	cc_counter_is("cm_tx_retries", "req", retries + CC_FAST_RETRIES);
	cc_counter_is("cm_rx_duplicates", "req", dups + CC_FAST_RETRIES);
	if (cc_count(c, NULL, IB_CM_REJ_RECEIVED, 0, NULL))
		ibst_diag("the passive side got a REJ after the timeout");
out:
	cc_end(c);
}

/*
 * The cm_id is IDLE when its REQ's timeout is reported, so the consumer
 * may send the REQ again from that very handler; the new REQ's timeout
 * is reported in turn.  (The report of a send is reserved when it is
 * posted; here the cm_id's own report is still being delivered, so the
 * new REQ's must find another one.)
 */
static void req_again_from_error_handler(void)
{
	struct cc_conn *c = &cc_conns[0];
	unsigned long flags;
	struct cc_event e;

	cc_conn_init_fast(c);
	spin_lock_irqsave(&cc_lock, flags);
	c->req_again = true;
	spin_unlock_irqrestore(&cc_lock, flags);
	if (!cc_listen(c))
		goto out;
	if (!cc_send_req(c) || !cc_wait(c, c->act, IB_CM_REQ_ERROR, &e))
		goto out;
	IBST_EXPECT_EQ(e.again_ret, 0);
	IBST_EXPECT_EQ(e.state, IB_CM_IDLE);
	wait_event_timeout(cc_wq,
			   cc_count(c, c->act, IB_CM_REQ_ERROR, 0, NULL) > 1,
			   msecs_to_jiffies(CC_WAIT_MS));
	IBST_EXPECT_EQ(cc_count(c, c->act, IB_CM_REQ_ERROR, 0, &e), 2);
	IBST_EXPECT_EQ(e.send_status, IB_WC_RESP_TIMEOUT_ERR);
	IBST_EXPECT_EQ(e.state, IB_CM_IDLE);
	IBST_EXPECT_EQ(cc_state(c->act), IB_CM_IDLE);
out:
	cc_end(c);
}

/*
 * An MRA for the REQ (sent from the passive side's REQ handler; on a newer
 * CM, prepared there and sent for the REQ's first repeat) makes the
 * active side wait the MRA's service timeout instead (IBTA 12.6.6): it
 * is still waiting long after the REQ alone would have failed, and the
 * late REP completes the connection.
 */
static void mra_delays_req_timeout(void)
{
	struct cc_conn *c = &cc_conns[0];
	struct cc_event e;
	u8 pd[CC_PDATA];

	cc_conn_init_mra(c);
	c->mra_on_req = true;
	if (!cc_listen(c) || !cc_send_req(c) ||
	    !cc_wait(c, NULL, IB_CM_REQ_RECEIVED, &e) || !cc_passive(c))
		goto out;
	IBST_EXPECT_EQ(e.mra_ret, 0);
	IBST_EXPECT_EQ(cc_state(c->pas), IB_CM_MRA_REQ_SENT);
	if (!cc_wait(c, c->act, IB_CM_MRA_RECEIVED, &e))
		goto out;
	IBST_EXPECT_EQ(e.service_timeout, CC_MRA_SEEN_TIMEOUT);
	IBST_EXPECT_EQ(e.state, IB_CM_MRA_REQ_RCVD);
#ifdef HAVE_IB_PREPARE_CM_MRA
	/* no private data: the MAD's field is all zero */
	IBST_EXPECT(!e.has_pdata || !memchr_inv(e.pdata, 0, sizeof(e.pdata)));
#else
	IBST_EXPECT(cc_pdata_is(&e, 'M'));
#endif

	/* Twice what the REQ alone lives, well inside the service timeout. */
	msleep(2 * cc_req_ms(c->req.max_cm_retries));
	IBST_EXPECT_EQ(cc_count(c, c->act, IB_CM_REQ_ERROR, 0, NULL), 0);
	IBST_EXPECT_EQ(cc_state(c->act), IB_CM_MRA_REQ_RCVD);
	IBST_EXPECT_EQ(cc_count(c, NULL, IB_CM_REQ_RECEIVED, 0, NULL), 1);

	IBST_EXPECT_EQ(ib_send_cm_rep(c->pas, &c->rep), 0);
	if (!cc_wait(c, c->act, IB_CM_REP_RECEIVED, &e))
		goto out;
	cc_check_rep_event(c, &e);
	cc_tag(pd, 'U');
	IBST_EXPECT_EQ(ib_send_cm_rtu(c->act, pd, sizeof(pd)), 0);
	if (cc_wait(c, c->pas, IB_CM_RTU_RECEIVED, &e))
		IBST_EXPECT_EQ(e.state, IB_CM_ESTABLISHED);
out:
	cc_end(c);
}

/* Wait until @c's new REQ was either delivered or rejected. */
static bool cc_req_answered(const struct cc_conn *c)
{
	return cc_count(c, NULL, IB_CM_REQ_RECEIVED, 0, NULL) ||
	       cc_count(c, c->act, IB_CM_REJ_RECEIVED, 0, NULL);
}

/*
 * IBTA 12.9.8.3.1: a REQ is stale (REJ reason 10, then a DREQ for the old
 * connection) when its QPN and CA GUID name a QP that the CM considers
 * connected.  A connection in TimeWait is no longer connected (its DREQ
 * and DREP are done), so a REQ from the same remote QPN is a new
 * connection: it reaches the listener.  The stock CM forgets a
 * connection's remote QPN when it enters TimeWait.
 */
static void req_reuses_qpn_in_timewait(void)
{
	struct cc_conn *old = &cc_conns[0], *c = &cc_conns[1];
	struct cc_event ans, tw;
	bool rejected;

	/* A longer TimeWait (4 s) for the old one: the REQ lands inside. */
	cc_conn_init(old, IB_QPT_RC, CC_PLT + 2);
	cc_conn_init(c, IB_QPT_RC, CC_PLT);
	c->req.qp_num = old->req.qp_num;
	if (!cc_establish(old))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_dreq(old->act, NULL, 0), 0);
	if (!cc_wait(old, old->pas, IB_CM_DREQ_RECEIVED, NULL))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_drep(old->pas, NULL, 0), 0);
	if (!cc_wait(old, old->act, IB_CM_DREP_RECEIVED, NULL))
		goto out;

	if (!cc_listen(c) || !cc_send_req(c))
		goto out;
	wait_event_timeout(cc_wq, cc_req_answered(c),
			   msecs_to_jiffies(CC_WAIT_MS));
	rejected = cc_count(c, c->act, IB_CM_REJ_RECEIVED, 0, &ans);
	if (!rejected && !cc_count(c, NULL, IB_CM_REQ_RECEIVED, 0, &ans)) {
		IBST_FAIL("the REQ got no answer");
		goto out;
	}
	if (rejected)
		IBST_FAIL("REQ from a QPN whose old connection is in TimeWait rejected, reason %d",
			  ans.rej_reason);
	/* Meaningful only while the old passive side was in TimeWait. */
	if (cc_count(old, old->pas, IB_CM_TIMEWAIT_EXIT, 0, &tw) &&
	    ktime_before(tw.at, ans.at))
		IBST_FAIL("TimeWait ended before the REQ was answered");
	IBST_EXPECT_EQ(cc_count(c, NULL, IB_CM_REQ_RECEIVED, 0, NULL), 1);
	IBST_EXPECT_EQ(cc_count(old, NULL, IB_CM_DREQ_RECEIVED, 0, NULL), 1);
out:
	cc_end(c);
	cc_end(old);
}

/*
 * REP answered with a consumer REJ by the active side (IBTA 12.6.7: the
 * active side may reject the REP).  The REJ carries its reason, ARI and
 * private data to the passive side; neither side enters TimeWait, as no
 * connection was established: both are IDLE at once and no TIMEWAIT_EXIT
 * follows (the stock CM resets both to IDLE).
 */
static void rep_rejected_by_active(void)
{
	struct cc_conn *c = &cc_conns[0];
	u8 ari[CC_ARI_LEN] = { 'r', 'e', 'p', 0x33, 0xcc };
	long rejs = cc_counter("cm_tx_msgs", "rej");
	struct cc_event e;
	u8 pd[CC_PDATA];

	cc_conn_init(c, IB_QPT_RC, CC_PLT);
	if (!cc_listen(c) || !cc_send_req(c) ||
	    !cc_wait(c, NULL, IB_CM_REQ_RECEIVED, NULL) || !cc_passive(c))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_rep(c->pas, &c->rep), 0);
	if (!cc_wait(c, c->act, IB_CM_REP_RECEIVED, NULL))
		goto out;
	cc_tag(pd, 'K');
	IBST_EXPECT_EQ(ib_send_cm_rej(c->act, IB_CM_REJ_CONSUMER_DEFINED, ari,
				      sizeof(ari), pd, sizeof(pd)), 0);
	IBST_EXPECT_EQ(cc_state(c->act), IB_CM_IDLE);
	if (!cc_wait(c, c->pas, IB_CM_REJ_RECEIVED, &e))
		goto out;
	IBST_EXPECT_EQ(e.rej_reason, IB_CM_REJ_CONSUMER_DEFINED);
	IBST_EXPECT_EQ(e.ari_len, sizeof(ari));
	IBST_EXPECT_MEMEQ(e.ari, ari, sizeof(ari));
	IBST_EXPECT(cc_pdata_is(&e, 'K'));
	IBST_EXPECT_EQ(e.state, IB_CM_IDLE);
	cc_counter_is("cm_tx_msgs", "rej", rejs + 1);
	/* Longer than the one-second TimeWait this path would give. */
	msleep(CC_QUIET_MS);
	IBST_EXPECT_EQ(cc_count(c, NULL, IB_CM_TIMEWAIT_EXIT, 0, NULL), 0);
	IBST_EXPECT_EQ(cc_state(c->act), IB_CM_IDLE);
	IBST_EXPECT_EQ(cc_state(c->pas), IB_CM_IDLE);
	IBST_EXPECT(cc_no_qp_attr(c->act));
	IBST_EXPECT(cc_no_qp_attr(c->pas));
out:
	cc_end(c);
}

/*
 * The REQ's private data field is 92 bytes (IBTA 12.6.5): that much
 * arrives whole, one byte more is refused by ib_send_cm_req() with
 * -EINVAL and leaves the cm_id IDLE.
 */
static void req_private_data_limits(void)
{
	u8 big[IB_CM_REQ_PRIVATE_DATA_SIZE + 1];
	struct cc_conn *c = &cc_conns[0];
	struct cc_event e;
	unsigned int i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = 0x5a ^ (u8)(7 * i);
	cc_conn_init(c, IB_QPT_RC, CC_PLT);
	c->req.private_data = big;
	c->req.private_data_len = sizeof(big);
	if (!cc_listen(c))
		goto out;
	c->act = ib_create_cm_id(cc_dev, cc_handler, c);
	if (IS_ERR(c->act)) {
		c->act = NULL;
		IBST_FAIL("ib_create_cm_id failed");
		goto out;
	}
	IBST_EXPECT_EQ(ib_send_cm_req(c->act, &c->req), -EINVAL);
	IBST_EXPECT_EQ(cc_state(c->act), IB_CM_IDLE);
	msleep(CC_QUIET_MS);
	IBST_EXPECT_EQ(cc_count(c, NULL, CC_ANY, 0, NULL), 0);

	c->req.private_data_len = IB_CM_REQ_PRIVATE_DATA_SIZE;
	IBST_EXPECT_EQ(ib_send_cm_req(c->act, &c->req), 0);
	if (!cc_wait(c, NULL, IB_CM_REQ_RECEIVED, &e))
		goto out;
	IBST_EXPECT_MEMEQ(e.req_pdata, big, IB_CM_REQ_PRIVATE_DATA_SIZE);
out:
	cc_end(c);
}

/* SIDR: how long the asker waits for each try, and how often it retries. */
#define CC_SIDR_MS		2000
#define CC_SIDR_RETRIES		3

/* Ask for @c's service ID with a SIDR_REQ that carries @c's REQ data. */
static bool cc_sidr_ask(struct cc_conn *c)
{
	struct ib_cm_sidr_req_param p = {
		.path = &c->path,
		.sgid_attr = cc_gid,
		.service_id = c->req.service_id,
		.timeout_ms = CC_SIDR_MS,
		.private_data = c->pd_req,
		.private_data_len = CC_PDATA,
		.max_cm_retries = CC_SIDR_RETRIES,
	};
	int ret;

	c->act = ib_create_cm_id(cc_dev, cc_handler, c);
	if (IS_ERR(c->act)) {
		c->act = NULL;
		IBST_FAIL("ib_create_cm_id failed");
		return false;
	}
	ret = ib_send_cm_sidr_req(c->act, &p);
	if (ret)
		IBST_FAIL("ib_send_cm_sidr_req: %d", ret);
	return !ret;
}

/*
 * The SIDR_REQ as the listener saw it; true once @c->pas holds the new
 * cm_id.
 */
static bool cc_sidr_asked(struct cc_conn *c)
{
	struct cc_event e;

	if (!cc_wait(c, NULL, IB_CM_SIDR_REQ_RECEIVED, &e) || !cc_passive(c))
		return false;
	IBST_EXPECT_PTR_EQ(e.listen_id, c->listen);
	IBST_EXPECT_EQ(e.state, IB_CM_SIDR_REQ_RCVD);
	IBST_EXPECT_EQ(e.service_id, c->req.service_id);
	IBST_EXPECT_EQ(c->pas->service_id, c->req.service_id);
	IBST_EXPECT_EQ(e.sidr_pkey, 0xffff);
	IBST_EXPECT_EQ(e.bth_pkey, 0xffff);
	IBST_EXPECT_EQ(e.port, cc_port);
	IBST_EXPECT(e.sgid_ok);
	IBST_EXPECT(cc_pdata_is(&e, 'Q'));
	return true;
}

/* The asker's SIDR_REP event: one answer, the cm_id IDLE again. */
static bool cc_sidr_answer(struct cc_conn *c, int status, struct cc_event *e)
{
	if (!cc_wait(c, c->act, IB_CM_SIDR_REP_RECEIVED, e))
		return false;
	IBST_EXPECT_EQ(e->sidr_status, status);
	IBST_EXPECT_EQ(e->state, IB_CM_IDLE);
	IBST_EXPECT_EQ(cc_state(c->act), IB_CM_IDLE);
	/* Answered: the SIDR_REQ is not sent again, nothing else comes. */
	msleep(CC_SIDR_MS + CC_QUIET_MS);
	IBST_EXPECT_EQ(cc_count(c, c->act, CC_ANY, 0, NULL), 1);
	IBST_EXPECT_LE(cc_count(c, NULL, IB_CM_SIDR_REQ_RECEIVED, 0, NULL), 1);
	return true;
}

/*
 * SIDR (IBTA 12.11): the listener of a service ID gets the SIDR_REQ with
 * the service ID, P_Key, port and private data; its SIDR_REP gives the
 * asker the status, QPN, Q_Key and private data.  A SIDR_REQ is answered
 * once: the answered cm_id is IDLE and refuses a second SIDR_REP.  The
 * ECE is set too (this kernel's SIDR_REP event does not report it): it
 * must not disturb the rest.
 */
static void sidr_resolve(void)
{
	struct cc_conn *c = &cc_conns[0];
	struct ib_cm_sidr_rep_param rp = {
		.qp_num = 0x4a5b6c,
		.qkey = 0x1234abcd,
		.status = IB_SIDR_SUCCESS,
		.private_data = c->pd_rep,
		.private_data_len = CC_PDATA,
		.ece = { .vendor_id = 0x15b3, .attr_mod = 0x5 },
	};
	long reps = cc_counter("cm_tx_msgs", "sidr_rep");
	struct cc_event e;

	cc_conn_init(c, IB_QPT_UD, CC_PLT);
	if (!cc_listen(c) || !cc_sidr_ask(c) || !cc_sidr_asked(c))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_sidr_rep(c->pas, &rp), 0);
	IBST_EXPECT_EQ(cc_state(c->pas), IB_CM_IDLE);
	IBST_EXPECT_EQ(ib_send_cm_sidr_rep(c->pas, &rp), -EINVAL);
	if (!cc_sidr_answer(c, IB_SIDR_SUCCESS, &e))
		goto out;
	IBST_EXPECT_EQ(e.remote_qpn, rp.qp_num);
	IBST_EXPECT_EQ(e.qkey, rp.qkey);
	IBST_EXPECT(cc_pdata_is(&e, 'P'));
	cc_counter_is("cm_tx_msgs", "sidr_rep", reps + 1);
out:
	cc_end(c);
}

/*
 * The SIDR_REP's additional information (IBTA 12.11; the message's
 * AddInfoLen field says how many of its 72 bytes are valid) reaches the
 * asker with its length.
 */
static void sidr_rep_additional_info(void)
{
	u8 info[CC_ARI_LEN] = { 's', 'i', 'd', 0x3c, 0xc3 };
	struct cc_conn *c = &cc_conns[0];
	struct ib_cm_sidr_rep_param rp = {
		.qp_num = 0x4a5b6d,
		.qkey = 0x1234abce,
		.status = IB_SIDR_SUCCESS,
		.info = info,
		.info_length = sizeof(info),
	};
	struct cc_event e;

	cc_conn_init(c, IB_QPT_UD, CC_PLT);
	if (!cc_listen(c) || !cc_sidr_ask(c) || !cc_sidr_asked(c))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_sidr_rep(c->pas, &rp), 0);
	if (!cc_sidr_answer(c, IB_SIDR_SUCCESS, &e))
		goto out;
	IBST_EXPECT_EQ(e.remote_qpn, rp.qp_num);
	IBST_EXPECT_EQ(e.info_len, sizeof(info));
	IBST_EXPECT_MEMEQ(e.info, info, sizeof(info));
out:
	cc_end(c);
}

/*
 * A SIDR_REQ for a service ID nobody listens on: the CM itself answers
 * with status "service ID not supported" (IBTA 12.11), no QPN, Q_Key or
 * additional information.
 */
static void sidr_no_listener(void)
{
	struct cc_conn *c = &cc_conns[0];
	struct cc_event e;

	cc_conn_init(c, IB_QPT_UD, CC_PLT);
	if (!cc_sidr_ask(c) || !cc_sidr_answer(c, IB_SIDR_UNSUPPORTED, &e))
		goto out;
	IBST_EXPECT_EQ(e.remote_qpn, 0);
	IBST_EXPECT_EQ(e.qkey, 0);
	IBST_EXPECT_EQ(e.info_len, 0);
out:
	cc_end(c);
}

/* A listener that turns the SIDR_REQ down with "rejected" and data. */
static void sidr_listener_rejects(void)
{
	struct cc_conn *c = &cc_conns[0];
	struct ib_cm_sidr_rep_param rp = { .status = IB_SIDR_REJECT };
	struct cc_event e;
	u8 pd[CC_PDATA];

	cc_tag(pd, 'J');
	rp.private_data = pd;
	rp.private_data_len = sizeof(pd);
	cc_conn_init(c, IB_QPT_UD, CC_PLT);
	if (!cc_listen(c) || !cc_sidr_ask(c) || !cc_sidr_asked(c))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_sidr_rep(c->pas, &rp), 0);
	if (!cc_sidr_answer(c, IB_SIDR_REJECT, &e))
		goto out;
	IBST_EXPECT_EQ(e.remote_qpn, 0);
	IBST_EXPECT(cc_pdata_is(&e, 'J'));
out:
	cc_end(c);
}

/*
 * A SIDR_REQ's cm_id destroyed unanswered: the CM answers "rejected"
 * for its consumer (the stock ib_destroy_cm_id() does so for a
 * cm_id in SIDR_REQ_RCVD), so the asker does not wait out its retries.
 */
static void sidr_destroy_rejects(void)
{
	struct cc_conn *c = &cc_conns[0];
	struct ib_cm_id *pas;
	unsigned long flags;
	struct cc_event e;

	cc_conn_init(c, IB_QPT_UD, CC_PLT);
	if (!cc_listen(c) || !cc_sidr_ask(c) || !cc_sidr_asked(c))
		goto out;
	spin_lock_irqsave(&cc_lock, flags);
	pas = c->pas;
	c->pas = NULL;
	spin_unlock_irqrestore(&cc_lock, flags);
	ib_destroy_cm_id(pas);
	cc_sidr_answer(c, IB_SIDR_REJECT, &e);
out:
	cc_end(c);
}

/* ------------------------------------------------------------------ */
/* A consumer that gives its cm_id back                                */

/*
 * Answer the next @ev of @c's active (or passive) cm_id with a non-zero
 * return, which asks the CM to destroy that cm_id for its consumer
 * (rdma_cm does so for its own consumers, on any event).
 */
static void cc_drop_on(struct cc_conn *c, bool active,
		       enum ib_cm_event_type ev)
{
	unsigned long flags;

	spin_lock_irqsave(&cc_lock, flags);
	c->drop = true;
	c->drop_active = active;
	c->drop_event = ev;
	spin_unlock_irqrestore(&cc_lock, flags);
}

/* Where in cc_events @c's cm_id was given back, or -1. */
static int cc_drop_index(const struct cc_conn *c)
{
	unsigned long flags;
	unsigned int i;
	int at = -1;

	spin_lock_irqsave(&cc_lock, flags);
	for (i = 0; i < cc_nevents && at < 0; i++)
		if (cc_events[i].conn == c && cc_events[i].dropped)
			at = i;
	spin_unlock_irqrestore(&cc_lock, flags);
	return at;
}

static bool cc_wait_dropped(const struct cc_conn *c)
{
	wait_event_timeout(cc_wq, cc_drop_index(c) >= 0,
			   msecs_to_jiffies(CC_WAIT_MS));
	if (cc_drop_index(c) >= 0)
		return true;
	IBST_FAIL("no event %d on the %s side within %d ms", c->drop_event,
		  c->drop_active ? "active" : "passive", CC_WAIT_MS);
	return false;
}

/*
 * After a cm_id was given back: it gets no further event, and the CM is
 * still at work (neither its workers nor the MAD layer's wait on the
 * destruction): a new connection on the port is made, taken down and
 * leaves TimeWait.
 */
static void cc_after_drop(struct cc_conn *c, bool timeouts)
{
	struct cc_conn *probe = &cc_conns[1];
	int at = cc_drop_index(c);
	struct ib_cm_id *id;
	unsigned long flags;

	if (at < 0)
		return;
	msleep(CC_QUIET_MS);
	spin_lock_irqsave(&cc_lock, flags);
	id = cc_events[at].id;
	spin_unlock_irqrestore(&cc_lock, flags);
	IBST_EXPECT_EQ(cc_count(c, id, CC_ANY, at + 1, NULL), 0);

	cc_conn_init(probe, IB_QPT_RC, CC_PLT);
	if (cc_establish(probe))
		cc_disconnect_checked(probe, true);
	cc_end(probe);
	if (!timeouts)
		return;
	/*
	 * The ID was given back from the MAD layer's send completion: that
	 * worker also reports timeouts, so one more must come through.
	 */
	cc_conn_init_fast(probe);
	if (cc_listen(probe) && cc_send_req(probe))
		cc_wait(probe, probe->act, IB_CM_REQ_ERROR, NULL);
	cc_end(probe);
}

/* Listen and send the REQ; true once the passive side has its cm_id. */
static bool cc_req_delivered(struct cc_conn *c)
{
	return cc_listen(c) && cc_send_req(c) &&
	       cc_wait(c, NULL, IB_CM_REQ_RECEIVED, NULL) && cc_passive(c);
}

/* The same, then the REP; true once the active side has the REP. */
static bool cc_rep_delivered(struct cc_conn *c)
{
	if (!cc_req_delivered(c))
		return false;
	IBST_EXPECT_EQ(ib_send_cm_rep(c->pas, &c->rep), 0);
	return cc_wait(c, c->act, IB_CM_REP_RECEIVED, NULL);
}

/* The passive side gives its cm_id back at the REQ: it is rejected. */
static void drop_on_req(void)
{
	struct cc_conn *c = &cc_conns[0];
	struct cc_event e;

	cc_conn_init(c, IB_QPT_RC, CC_PLT);
	cc_drop_on(c, false, IB_CM_REQ_RECEIVED);
	if (!cc_listen(c) || !cc_send_req(c) || !cc_wait_dropped(c) ||
	    !cc_wait(c, c->act, IB_CM_REJ_RECEIVED, &e))
		goto out;
	IBST_EXPECT_EQ(e.rej_reason, IB_CM_REJ_CONSUMER_DEFINED);
	cc_after_drop(c, false);
out:
	cc_end(c);
}

/* The active side gives its cm_id back at the REP: the REP is rejected. */
static void drop_on_rep(void)
{
	struct cc_conn *c = &cc_conns[0];
	struct cc_event e;

	cc_conn_init(c, IB_QPT_RC, CC_PLT);
	cc_drop_on(c, true, IB_CM_REP_RECEIVED);
	if (!cc_req_delivered(c))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_rep(c->pas, &c->rep), 0);
	if (!cc_wait_dropped(c) ||
	    !cc_wait(c, c->pas, IB_CM_REJ_RECEIVED, &e))
		goto out;
	IBST_EXPECT_EQ(e.rej_reason, IB_CM_REJ_CONSUMER_DEFINED);
	cc_after_drop(c, false);
out:
	cc_end(c);
}

/*
 * The passive side gives its cm_id back when the RTU establishes it: the
 * CM disconnects for it.
 */
static void drop_on_rtu(void)
{
	struct cc_conn *c = &cc_conns[0];

	cc_conn_init(c, IB_QPT_RC, CC_PLT);
	cc_drop_on(c, false, IB_CM_RTU_RECEIVED);
	if (!cc_rep_delivered(c))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_rtu(c->act, NULL, 0), 0);
	if (!cc_wait_dropped(c) ||
	    !cc_wait(c, c->act, IB_CM_DREQ_RECEIVED, NULL))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_drep(c->act, NULL, 0), 0);
	cc_after_drop(c, false);
out:
	cc_end(c);
}

/*
 * The passive side gives its cm_id back when it is established by the
 * QP's first packet (ib_cm_notify()) instead of the RTU.
 */
static void drop_on_user_established(void)
{
	struct cc_conn *c = &cc_conns[0];

	cc_conn_init(c, IB_QPT_RC, CC_PLT);
	cc_drop_on(c, false, IB_CM_USER_ESTABLISHED);
	if (!cc_rep_delivered(c))
		goto out;
	IBST_EXPECT_EQ(ib_cm_notify(c->pas, IB_EVENT_COMM_EST), 0);
	if (cc_wait_dropped(c))
		cc_after_drop(c, false);
out:
	cc_end(c);
}

/* The active side gives its cm_id back at the peer's DREQ: DREP for it. */
static void drop_on_dreq(void)
{
	struct cc_conn *c = &cc_conns[0];

	cc_conn_init(c, IB_QPT_RC, CC_PLT);
	cc_drop_on(c, true, IB_CM_DREQ_RECEIVED);
	if (!cc_establish(c))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_dreq(c->pas, NULL, 0), 0);
	if (cc_wait_dropped(c) &&
	    cc_wait(c, c->pas, IB_CM_DREP_RECEIVED, NULL))
		cc_after_drop(c, false);
out:
	cc_end(c);
}

/*
 * The active side disconnects, the passive side answers, and the active
 * side gives its cm_id back at @ev: the DREP (in TimeWait) or the end of
 * TimeWait.
 */
static void cc_drop_after_disconnect(enum ib_cm_event_type ev)
{
	struct cc_conn *c = &cc_conns[0];

	cc_conn_init(c, IB_QPT_RC, CC_PLT);
	cc_drop_on(c, true, ev);
	if (!cc_establish(c))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_dreq(c->act, NULL, 0), 0);
	if (!cc_wait(c, c->pas, IB_CM_DREQ_RECEIVED, NULL))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_drep(c->pas, NULL, 0), 0);
	if (cc_wait_dropped(c))
		cc_after_drop(c, false);
out:
	cc_end(c);
}

static void drop_on_drep(void)
{
	cc_drop_after_disconnect(IB_CM_DREP_RECEIVED);
}

static void drop_on_timewait_exit(void)
{
	cc_drop_after_disconnect(IB_CM_TIMEWAIT_EXIT);
}

/* The active side gives its cm_id back when its REQ is rejected. */
static void drop_on_rej(void)
{
	struct cc_conn *c = &cc_conns[0];

	cc_conn_init(c, IB_QPT_RC, CC_PLT);
	cc_drop_on(c, true, IB_CM_REJ_RECEIVED);
	if (!cc_req_delivered(c))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_rej(c->pas, IB_CM_REJ_CONSUMER_DEFINED,
				      NULL, 0, NULL, 0), 0);
	if (cc_wait_dropped(c))
		cc_after_drop(c, false);
out:
	cc_end(c);
}

/*
 * The active side gives its cm_id back at the MRA for its REQ: the CM
 * tells the passive side that the active one stopped waiting.
 */
static void drop_on_mra(void)
{
	struct cc_conn *c = &cc_conns[0];
	struct cc_event e;

	cc_conn_init_mra(c);
	c->mra_on_req = true;
	cc_drop_on(c, true, IB_CM_MRA_RECEIVED);
	if (!cc_listen(c) || !cc_send_req(c) || !cc_wait_dropped(c) ||
	    !cc_wait(c, c->pas, IB_CM_REJ_RECEIVED, &e))
		goto out;
	IBST_EXPECT_EQ(e.rej_reason, IB_CM_REJ_TIMEOUT);
	cc_after_drop(c, false);
out:
	cc_end(c);
}

/*
 * The active side gives its cm_id back when its REQ times out (reported
 * from the MAD layer's send completion, like the other *_ERROR events).
 */
static void drop_on_req_error(void)
{
	struct cc_conn *c = &cc_conns[0];

	cc_conn_init_fast(c);
	cc_drop_on(c, true, IB_CM_REQ_ERROR);
	if (cc_listen(c) && cc_send_req(c) && cc_wait_dropped(c))
		cc_after_drop(c, true);
	cc_end(c);
}

/* The passive side gives its cm_id back when its REP times out. */
static void drop_on_rep_error(void)
{
	struct cc_conn *c = &cc_conns[0];

	cc_conn_init_fast(c);
	c->req.local_cm_response_timeout = CC_FAST_RESP;
	cc_drop_on(c, false, IB_CM_REP_ERROR);
	if (!cc_req_delivered(c))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_rep(c->pas, &c->rep), 0);
	/* The active side leaves the REP unanswered. */
	if (cc_wait_dropped(c))
		cc_after_drop(c, true);
out:
	cc_end(c);
}

/* The active side gives its cm_id back when its DREQ times out. */
static void drop_on_dreq_error(void)
{
	struct cc_conn *c = &cc_conns[0];

	cc_conn_init_fast(c);
	cc_drop_on(c, true, IB_CM_DREQ_ERROR);
	if (!cc_establish(c))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_dreq(c->act, NULL, 0), 0);
	/* The passive side leaves the DREQ unanswered. */
	if (cc_wait(c, c->pas, IB_CM_DREQ_RECEIVED, NULL) &&
	    cc_wait_dropped(c))
		cc_after_drop(c, true);
out:
	cc_end(c);
}

/* The asker gives its cm_id back at the SIDR_REP. */
static void drop_on_sidr_rep(void)
{
	struct cc_conn *c = &cc_conns[0];
	struct ib_cm_sidr_rep_param rp = {
		.qp_num = 0x4a5b6e,
		.qkey = 0x1234abcf,
		.status = IB_SIDR_SUCCESS,
	};

	cc_conn_init(c, IB_QPT_UD, CC_PLT);
	cc_drop_on(c, true, IB_CM_SIDR_REP_RECEIVED);
	if (!cc_listen(c) || !cc_sidr_ask(c) || !cc_sidr_asked(c))
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_sidr_rep(c->pas, &rp), 0);
	if (cc_wait_dropped(c))
		cc_after_drop(c, false);
out:
	cc_end(c);
}

/* The asker gives its cm_id back when its SIDR_REQ times out. */
static void drop_on_sidr_req_error(void)
{
	struct cc_conn *c = &cc_conns[0];

	cc_conn_init(c, IB_QPT_UD, CC_PLT);
	cc_drop_on(c, true, IB_CM_SIDR_REQ_ERROR);
	/* The listener's new cm_id leaves the SIDR_REQ unanswered. */
	if (cc_listen(c) && cc_sidr_ask(c) && cc_sidr_asked(c) &&
	    cc_wait_dropped(c))
		cc_after_drop(c, true);
	cc_end(c);
}

/* ------------------------------------------------------------------ */
/* Device                                                              */

static void cc_teardown(void)
{
	cc_gid = NULL;
	cmt_port_put();
	cc_dev = NULL;
}

static int cc_setup(void)
{
	int ret = cmt_port_get("ib_cm_conn_test");

	if (ret)
		return ret;
	cc_dev = cmt_port.dev;
	cc_port = cmt_port.port;
	cc_gid = cmt_port.gid;
	ret = rdma_read_gid_l2_fields(cc_gid, NULL, cc_mac);
	if (!ret)
		ret = ib_find_cached_pkey(cc_dev, cc_port, 0xffff,
					  &cc_pkey_index);
	if (ret) {
		ibst_diag("no MAC or default P_Key on the port (%d)", ret);
		goto fail;
	}
	ibst_diag("%s port %u, GID %pI6, MAC %pM, ACK delay %u",
		  dev_name(&cc_dev->dev), cc_port, cc_gid->gid.raw, cc_mac,
		  cc_dev->attrs.local_ca_ack_delay);
	ibst_set_dump(cc_dump);
	return 0;
fail:
	cc_teardown();
	return ret;
}

static const struct ibst_case cc_cases[] = {
	IBST_CASE(rc_connect_disconnect),
	IBST_CASE(uc_connect),
	IBST_CASE(xrc_connect),
	IBST_CASE(rc_destroy_sends_dreq),
	IBST_CASE(xrc_tgt_destroy_sends_no_dreq),
	IBST_CASE(xrc_ini_disconnect),
	IBST_CASE(rej_consumer_ari),
	IBST_CASE(req_unanswered_times_out),
	IBST_CASE(req_again_from_error_handler),
	IBST_CASE(mra_delays_req_timeout),
	IBST_CASE(req_reuses_qpn_in_timewait),
	IBST_CASE(rep_rejected_by_active),
	IBST_CASE(req_private_data_limits),
	IBST_CASE(sidr_resolve),
	IBST_CASE(sidr_rep_additional_info),
	IBST_CASE(sidr_no_listener),
	IBST_CASE(sidr_listener_rejects),
	IBST_CASE(sidr_destroy_rejects),
	IBST_CASE(drop_on_req),
	IBST_CASE(drop_on_rep),
	IBST_CASE(drop_on_rtu),
	IBST_CASE(drop_on_user_established),
	IBST_CASE(drop_on_dreq),
	IBST_CASE(drop_on_drep),
	IBST_CASE(drop_on_timewait_exit),
	IBST_CASE(drop_on_rej),
	IBST_CASE(drop_on_mra),
	IBST_CASE(drop_on_req_error),
	IBST_CASE(drop_on_rep_error),
	IBST_CASE(drop_on_dreq_error),
	IBST_CASE(drop_on_sidr_rep),
	IBST_CASE(drop_on_sidr_req_error),
	{}
};

IBST_SUITE(ib_cm_conn, cc_cases, cc_setup, cc_teardown);
MODULE_DESCRIPTION("ib_cm connection test over a RoCE port (RC, UC, XRC)");
MODULE_LICENSE("Dual BSD/GPL");
