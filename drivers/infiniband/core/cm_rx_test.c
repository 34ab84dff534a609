// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KTAP self-test of ib_cm's receive side on a real RoCE port (rdma_rxe in
 * the test guests): how the connection state machine answers messages
 * that a well-behaved peer sends once, and a lossy or restarted one sends
 * again or too late.  Covered: duplicate REQ, REP, RTU and DREQ, stale
 * connections (REQ or REP reusing a connected QP), REQs in TimeWait, MRA
 * receipt and the timeout it extends, REJ and DREP receipt, TimeWait exit,
 * LAP/APR (ignored on RoCE, as the kernel's ib_cm does), ib_cm_notify()
 * and the private data and ECE values carried to the consumer; for service
 * ID resolution: SIDR_REQ without a listener, with one (and its answer),
 * duplicate SIDR_REQs, and SIDR_REP receipt.
 *
 * The LAP receive rules themselves (alternate path event, duplicates, MRA
 * for a LAP, states that drop a LAP, a path that cannot be addressed) run
 * with the test build's switch that makes ib_cm take LAPs on this RoCE
 * port (cm_test_lap_on_roce()); an APR, which answers a LAP and this side
 * sends none, is dropped with the switch on too.
 *
 * Messages from the "peer" are built here and handed to ib_cm's receive
 * handler through the test hook (cm_test_hook.c).  They claim to come from
 * the port's own GID, so whatever the CM answers comes back to the CM
 * itself, which drops it (no cm_id carries the peer's made-up IDs).  The
 * connections this side starts use a path to a made-up GID and MAC, so
 * their MADs leave on the wire and are never answered.  Observed: the
 * events our handler records, cm_id states, the per-port counters
 * (cm_tx_msgs, cm_rx_duplicates, ... in sysfs), and the REJs the CM
 * sends, read back from its send buffers (cm_test_send_watch()).
 *
 * A SIDR_REP carries no communication ID, only the request ID of the
 * SIDR_REQ it answers.  So when an injected SIDR_REQ names as its request
 * ID the local ID of one of our IDs that itself waits for a SIDR_REP (its
 * own SIDR_REQ went to the made-up GID), the SIDR_REP the CM sends back
 * to our GID is delivered to that ID: what the CM put on the wire shows up
 * as an IB_CM_SIDR_REP_RECEIVED event, field by field.
 *
 * receive_path_fuzzed sends fuzz_iterations mutated MADs of every kind
 * (and of unknown attributes) at cm_ids held in every state, listeners
 * and SIDR included, from the seed fuzz_seed; see receive_path_fuzzed().
 *
 * Load after ib_cm.ko (built with the hook) with an active RoCE port that
 * runs a CM; init fails when any check fails.  The module runs its cases
 * in KTAP on every kernel, KUnit or not, so that its parameters apply.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/kprobes.h>
#include <linux/wait.h>
#include <net/ipv6.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_cache.h>

/* The message packing helpers are ib_cm's own (IB_CM_TEST exports). */
#include "cm_codec.h"
#include "cm_priv.h"
#include "cm_test_hook.h"
/* KUnit would run the cases before fuzz_iterations and fuzz_seed are set */
#define IBST_KTAP_ONLY
#include "ib_selftest.h"
#include "cm_test_utils.h"

#include <linux/prandom.h>
#include <linux/fs.h>

MODULE_IMPORT_NS(IB_CM_TEST_NS);

#define RX_MAD_SIZE	256
#define RX_PDATA	CMT_PDATA
#define RX_MAX_EVENTS	32
/* How long answers and late events are waited for. */
#define RX_WAIT_MS	5000
/* How long "nothing happens" is watched. */
#define RX_QUIET_MS	300

static struct ib_device *rx_dev;
static u32 rx_port;
static const struct ib_gid_attr *rx_gid;
static union ib_gid rx_far_gid;
static const u8 rx_far_mac[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x99 };
static u32 rx_serial;
/*
 * Set by the fuzzing case only (the cases run one at a time): rx_inject()
 * copies the message here instead of sending it.
 */
static u8 *rx_capture;

/* ------------------------------------------------------------------ */
/* What the consumer saw                                               */

struct rx_event {
	struct ib_cm_id *id;
	enum ib_cm_event_type type;
	/* the cm_id's state while the handler ran */
	enum ib_cm_state state;
	bool has_pdata;
	u8 pdata[RX_PDATA];
	struct ib_cm_id *listen_id;
	u32 remote_qpn;
	u32 starting_psn;
	__be64 ca_guid;
	u32 ece_vendor;
	u32 ece_attr;
	u16 rej_reason;
	u8 service_timeout;
	/* REQ/REP/DREQ/SIDR_REQ_ERROR: the failed send's status */
	int send_status;
	/* SIDR_REQ_RECEIVED */
	__be64 service_id;
	u16 sidr_pkey;
	u16 bth_pkey;
	u8 port;
	/* SIDR_REP_RECEIVED (and remote_qpn) */
	u8 sidr_status;
	u32 qkey;
	/* LAP_RECEIVED: the alternate path as the consumer got it */
	struct sa_path_rec alt;
};

#define RX_MAX_NEW	8

/*
 * Protects rx_events, rx_nevents, rx_unclaimed and rx_nunclaimed; the
 * CM's handler calls fill them.
 */
static DEFINE_SPINLOCK(rx_lock);
static struct rx_event rx_events[RX_MAX_EVENTS];
static unsigned int rx_nevents;
/* IDs that (SIDR) REQs created and that no check took over (yet). */
static struct ib_cm_id *rx_unclaimed[RX_MAX_NEW];
static unsigned int rx_nunclaimed;
static DECLARE_WAIT_QUEUE_HEAD(rx_wq);
/*
 * Also under rx_lock: the next event of type rx_drop_type is answered
 * with a non-zero return, which gives its cm_id back to the CM to
 * destroy; rx_dropped is that cm_id and rx_drop_at its event's index.
 */
static int rx_drop_type = -1;
static struct ib_cm_id *rx_dropped;
static unsigned int rx_drop_at;

static void rx_note(struct rx_event *e, const struct ib_cm_event *ev)
{
	const struct ib_cm_req_event_param *req = &ev->param.req_rcvd;
	const struct ib_cm_rep_event_param *rep = &ev->param.rep_rcvd;

	lockdep_assert_held(&rx_lock);
	cmt_note_pdata(&e->has_pdata, e->pdata, ev);
	cmt_note_params(e, ev);
	switch (ev->event) {
	case IB_CM_REQ_RECEIVED:
		e->listen_id = req->listen_id;
		e->remote_qpn = req->remote_qpn;
		e->starting_psn = req->starting_psn;
		e->ca_guid = req->remote_ca_guid;
		e->ece_vendor = req->ece.vendor_id;
		e->ece_attr = req->ece.attr_mod;
		break;
	case IB_CM_REP_RECEIVED:
		e->remote_qpn = rep->remote_qpn;
		e->starting_psn = rep->starting_psn;
		e->ca_guid = rep->remote_ca_guid;
		e->ece_vendor = rep->ece.vendor_id;
		e->ece_attr = rep->ece.attr_mod;
		break;
	case IB_CM_LAP_RECEIVED:
		e->alt = *ev->param.lap_rcvd.alternate_path;
		break;
	default:
		break;
	}
}

static int rx_handler(struct ib_cm_id *id, const struct ib_cm_event *ev)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&rx_lock, flags);
	if (rx_nevents < RX_MAX_EVENTS) {
		struct rx_event *e = &rx_events[rx_nevents++];

		memset(e, 0, sizeof(*e));
		e->id = id;
		e->type = ev->event;
		e->state = cmt_state(id);
		rx_note(e, ev);
	}
	if (ev->event == rx_drop_type) {
		rx_drop_type = -1;
		rx_dropped = id;
		/* The event's own index (the last slot when the log is full). */
		rx_drop_at = rx_nevents - 1;
		ret = -ECONNABORTED;
	} else if (ev->event == IB_CM_REQ_RECEIVED ||
	    ev->event == IB_CM_SIDR_REQ_RECEIVED) {
		/* No room to track it: let the CM destroy it. */
		if (rx_nunclaimed < RX_MAX_NEW)
			rx_unclaimed[rx_nunclaimed++] = id;
		else
			ret = -ENOMEM;
	}
	spin_unlock_irqrestore(&rx_lock, flags);
	wake_up(&rx_wq);
	return ret;
}

/* The check owns @id from now on and destroys it itself. */
static void rx_claim(struct ib_cm_id *id)
{
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&rx_lock, flags);
	for (i = 0; i < rx_nunclaimed; i++) {
		if (rx_unclaimed[i] == id) {
			rx_unclaimed[i] = rx_unclaimed[--rx_nunclaimed];
			break;
		}
	}
	spin_unlock_irqrestore(&rx_lock, flags);
}

/*
 * Forget the events of the check that ended, and destroy the IDs that REQs
 * created against its expectations (e.g. a stale REQ that got through).
 */
static void rx_forget_events(void)
{
	struct ib_cm_id *left[RX_MAX_NEW];
	unsigned long flags;
	unsigned int i, n;

	spin_lock_irqsave(&rx_lock, flags);
	rx_nevents = 0;
	n = rx_nunclaimed;
	memcpy(left, rx_unclaimed, n * sizeof(left[0]));
	rx_nunclaimed = 0;
	spin_unlock_irqrestore(&rx_lock, flags);
	for (i = 0; i < n; i++)
		ib_destroy_cm_id(left[i]);
}

/* How many @type events @id got (any ID when NULL); copy the last one. */
static unsigned int rx_count(struct ib_cm_id *id, enum ib_cm_event_type type,
			     struct rx_event *last)
{
	unsigned int i, n = 0;
	unsigned long flags;

	spin_lock_irqsave(&rx_lock, flags);
	for (i = 0; i < rx_nevents; i++) {
		if (rx_events[i].type != type || (id && rx_events[i].id != id))
			continue;
		n++;
		if (last)
			*last = rx_events[i];
	}
	spin_unlock_irqrestore(&rx_lock, flags);
	return n;
}

/* Wait for a @type event of @id; true when it came. */
static bool rx_wait_event(struct ib_cm_id *id, enum ib_cm_event_type type,
			  struct rx_event *e)
{
	wait_event_timeout(rx_wq, rx_count(id, type, NULL),
			   msecs_to_jiffies(RX_WAIT_MS));
	return rx_count(id, type, e) > 0;
}

/* Let queued receive work and answers looping back to the CM finish. */
static void rx_quiesce(void)
{
	cm_test_flush();
	msleep(RX_QUIET_MS);
	cm_test_flush();
}

static long rx_ctr(unsigned int group, __be16 attr)
{
	return cm_test_counter(rx_dev, rx_port, group, attr);
}

/* Wait until a counter exceeds @old (sends are counted on completion). */
static bool rx_ctr_rises(unsigned int group, __be16 attr, long old)
{
	unsigned int ms;

	for (ms = 0; ms < RX_WAIT_MS; ms += 20) {
		if (rx_ctr(group, attr) > old)
			return true;
		msleep(20);
	}
	return false;
}

/*
 * The REJs the CM posts between rx_rej_watch() and rx_rej_sent(), read
 * back from its send buffers (cm_test_send_watch()).
 */
static struct cm_test_sent rx_rej_out;

static int rx_rej_watch(void)
{
	rx_rej_out.ibdev = rx_dev;
	rx_rej_out.port_num = rx_port;
	rx_rej_out.attr_id = CM_REJ_ATTR_ID;
	return cm_test_send_watch(&rx_rej_out);
}

/* Stop watching: how many REJs were posted, and the last one's fields. */
static unsigned int rx_rej_sent(struct cmc_rej *f, __be64 *tid)
{
	cm_test_send_unwatch(&rx_rej_out);
	cmc_get_rej((const struct cm_rej_msg *)&rx_rej_out.mad, f);
	*tid = rx_rej_out.mad.mad_hdr.tid;
	return rx_rej_out.count;
}

/*
 * One REJ was posted since rx_rej_watch(), for the message @what of the
 * transaction @tid, for the reason @why, with our comm ID @lid and the
 * peer's @rid.
 */
#define RX_EXPECT_ONE_REJ(what, tid, why, lid, rid) do {		\
	struct cmc_rej __rx_f;						\
	__be64 __rx_tid;						\
	unsigned int __rx_n = rx_rej_sent(&__rx_f, &__rx_tid);		\
									\
	IBST_EXPECT_EQ(__rx_n, 1);					\
	if (__rx_n == 1) {						\
		IBST_EXPECT_EQ(__rx_f.msg_rejected, (what));		\
		IBST_EXPECT_EQ(be64_to_cpu(__rx_tid), be64_to_cpu((tid)));\
		IBST_EXPECT_EQ(__rx_f.reason, (why));			\
		IBST_EXPECT_EQ(__rx_f.local_comm_id, (lid));		\
		IBST_EXPECT_EQ(__rx_f.remote_comm_id, (rid));		\
		IBST_EXPECT_EQ(__rx_f.ari_len, 0);			\
	}								\
} while (0)

static enum ib_cm_state rx_state(struct ib_cm_id *id)
{
	return cmt_state(id);
}

/* Wait until @id is no longer in @st; true when it left. */
static bool rx_leaves(struct ib_cm_id *id, enum ib_cm_state st)
{
	unsigned int ms;

	for (ms = 0; ms < RX_WAIT_MS; ms += 20) {
		if (rx_state(id) != st)
			return true;
		msleep(20);
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* The made-up peer and its messages                                   */

struct rx_peer {
	u32 comm_id;
	u64 guid;
	u32 qpn;
	__be64 tid;
};

static void rx_new_peer(struct rx_peer *p)
{
	u32 n = ++rx_serial;

	p->comm_id = 0x5ac00000 + n;
	p->guid = 0x0002c903fe000000ULL + n;
	p->qpn = 0x500000 + n;
	p->tid = cpu_to_be64(0x7e57000000000000ULL + n);
}

static __be64 rx_sid(void)
{
	return cpu_to_be64(0x52580000ULL + ++rx_serial);
}

/* Eight bytes of private data that say which message carried them. */
static void rx_pdata(u8 *buf, char tag)
{
	cmt_tag(buf, "rx-test", tag);
}

static int rx_inject(const void *mad)
{
	if (rx_capture) {
		memcpy(rx_capture, mad, RX_MAD_SIZE);
		return 0;
	}
	return cm_test_inject(rx_dev, rx_port, &rx_gid->gid, &rx_gid->gid,
			      mad);
}

static int rx_send_req(const struct rx_peer *p, __be64 sid, char tag,
		       u32 vendor, u32 attr_mod)
{
	u8 mad[RX_MAD_SIZE] = {}, pd[RX_PDATA];
	struct cmc_req f = {
		.local_comm_id = p->comm_id,
		.vendor_id = vendor,
		.service_id = be64_to_cpu(sid),
		.local_ca_guid = p->guid,
		.local_qpn = p->qpn,
		.resp_resources = 4,
		.init_depth = 4,
		/* Long: our REP must not time out while a check runs. */
		.remote_resp_timeout = 20,
		.local_resp_timeout = 22,
		.starting_psn = 0x123456,
		.retry_count = 7,
		.rnr_retry = 7,
		.pkey = 0xffff,
		.mtu = IB_MTU_1024,
		.max_cm_retries = 15,
		.pdata = pd,
		.pdata_len = sizeof(pd),
	};

	rx_pdata(pd, tag);
	cmc_qp_type_to_wire(IB_QPT_RC, &f.transport, &f.ext_transport);
	f.primary.local_gid = rx_gid->gid;
	f.primary.remote_gid = rx_gid->gid;
	f.primary.hop_limit = 64;
	f.primary.subnet_local = 1;
	/* About 4 s of TimeWait once the connection ends. */
	f.primary.ack_timeout = 20;
	cmc_put_hdr((struct ib_mad_hdr *)mad, CM_REQ_ATTR_ID, p->tid, attr_mod);
	cmc_put_req((struct cm_req_msg *)mad, &f);
	return rx_inject(mad);
}

static int rx_send_rep(const struct rx_peer *p, struct ib_cm_id *to, char tag,
		       u32 vendor, u32 attr_mod)
{
	u8 mad[RX_MAD_SIZE] = {}, pd[RX_PDATA];
	struct cmc_rep f = {
		.local_comm_id = p->comm_id,
		.remote_comm_id = be32_to_cpu(to->local_id),
		.local_qpn = p->qpn,
		.vendor_id = vendor,
		.starting_psn = 0x654321,
		.resp_resources = 2,
		.init_depth = 3,
		.target_ack_delay = 10,
		.rnr_retry = 6,
		.local_ca_guid = p->guid,
		.pdata = pd,
		.pdata_len = sizeof(pd),
	};

	rx_pdata(pd, tag);
	cmc_put_hdr((struct ib_mad_hdr *)mad, CM_REP_ATTR_ID, p->tid, attr_mod);
	cmc_put_rep((struct cm_rep_msg *)mad, &f);
	return rx_inject(mad);
}

static int rx_send_ids(__be16 attr, const struct rx_peer *p,
		       struct ib_cm_id *to, char tag)
{
	u8 mad[RX_MAD_SIZE] = {}, pd[RX_PDATA];
	struct cmc_ids f = {
		.local_comm_id = p->comm_id,
		.remote_comm_id = be32_to_cpu(to->local_id),
		.pdata = pd,
		.pdata_len = sizeof(pd),
	};

	rx_pdata(pd, tag);
	cmc_put_hdr((struct ib_mad_hdr *)mad, attr, p->tid, 0);
	if (attr == CM_RTU_ATTR_ID)
		cmc_put_rtu((struct cm_rtu_msg *)mad, &f);
	else
		cmc_put_drep((struct cm_drep_msg *)mad, &f);
	return rx_inject(mad);
}

/* A DREQ from @p to @local_id, naming @qpn as our QP. */
static int rx_send_dreq(const struct rx_peer *p, __be32 local_id, u32 qpn,
			char tag)
{
	u8 mad[RX_MAD_SIZE] = {}, pd[RX_PDATA];
	struct cmc_dreq f = {
		.local_comm_id = p->comm_id,
		.remote_comm_id = be32_to_cpu(local_id),
		.remote_qpn = qpn,
		.pdata = pd,
		.pdata_len = sizeof(pd),
	};

	rx_pdata(pd, tag);
	cmc_put_hdr((struct ib_mad_hdr *)mad, CM_DREQ_ATTR_ID, p->tid, 0);
	cmc_put_dreq((struct cm_dreq_msg *)mad, &f);
	return rx_inject(mad);
}

static int rx_send_rej(const struct rx_peer *p, struct ib_cm_id *to,
		       u8 what, u16 reason, char tag)
{
	u8 mad[RX_MAD_SIZE] = {}, pd[RX_PDATA];
	__be64 guid = cpu_to_be64(p->guid);
	struct cmc_rej f = {
		.local_comm_id = p->comm_id,
		.remote_comm_id = to ? be32_to_cpu(to->local_id) : 0,
		.msg_rejected = what,
		.reason = reason,
		.pdata = pd,
		.pdata_len = sizeof(pd),
	};

	/* A peer that gave up names itself by its CA GUID (IBTA 12.6.7). */
	if (reason == IB_CM_REJ_TIMEOUT) {
		f.ari = &guid;
		f.ari_len = sizeof(guid);
	}
	rx_pdata(pd, tag);
	cmc_put_hdr((struct ib_mad_hdr *)mad, CM_REJ_ATTR_ID, p->tid, 0);
	cmc_put_rej((struct cm_rej_msg *)mad, &f);
	return rx_inject(mad);
}

static int rx_send_mra(const struct rx_peer *p, struct ib_cm_id *to,
		       u8 what, u8 service_timeout, char tag)
{
	u8 mad[RX_MAD_SIZE] = {}, pd[RX_PDATA];
	struct cmc_mra f = {
		.local_comm_id = p->comm_id,
		.remote_comm_id = be32_to_cpu(to->local_id),
		.msg_mraed = what,
		.service_timeout = service_timeout,
		.pdata = pd,
		.pdata_len = sizeof(pd),
	};

	rx_pdata(pd, tag);
	cmc_put_hdr((struct ib_mad_hdr *)mad, CM_MRA_ATTR_ID, p->tid, 0);
	cmc_put_mra((struct cm_mra_msg *)mad, &f);
	return rx_inject(mad);
}

/*
 * LAP and APR: the codec only reads a LAP and ib_cm no APR, so they are
 * built here; both start with the two IDs.
 */
static int rx_send_lap_apr(__be16 attr, const struct rx_peer *p,
			   struct ib_cm_id *to)
{
	u8 mad[RX_MAD_SIZE] = {};
	u8 *body = mad + sizeof(struct ib_mad_hdr);

	cmc_put_hdr((struct ib_mad_hdr *)mad, attr, p->tid, 0);
	put_unaligned_be32(p->comm_id, body);
	put_unaligned_be32(be32_to_cpu(to->local_id), body + 4);
	return rx_inject(mad);
}

/*
 * A whole LAP from @p proposing @alt for our QP @qpn, written byte by byte
 * at the offsets of the specification's LAP layout (not with the codec,
 * which only reads LAPs), so that the CM's decoding is checked too.
 */
static int rx_send_lap(const struct rx_peer *p, struct ib_cm_id *to,
		       u32 qpn, const struct cmc_path *alt, char tag)
{
	u8 mad[RX_MAD_SIZE] = {};
	u8 *lap = mad + sizeof(struct ib_mad_hdr);

	cmc_put_hdr((struct ib_mad_hdr *)mad, CM_LAP_ATTR_ID, p->tid, 0);
	put_unaligned_be32(p->comm_id, lap);
	put_unaligned_be32(be32_to_cpu(to->local_id), lap + 4);
	/* QPN (24 bits), then a remote CM response timeout of 20. */
	put_unaligned_be32(qpn << 8 | 20 << 3, lap + 12);
	put_unaligned_be16(alt->local_lid, lap + 20);
	put_unaligned_be16(alt->remote_lid, lap + 22);
	memcpy(lap + 24, alt->local_gid.raw, sizeof(alt->local_gid.raw));
	memcpy(lap + 40, alt->remote_gid.raw, sizeof(alt->remote_gid.raw));
	/* Flow label (20 bits), 4 reserved, traffic class. */
	put_unaligned_be32(alt->flow_label << 12 | alt->tclass, lap + 56);
	lap[60] = alt->hop_limit;
	lap[61] = alt->rate & 0x3f;
	lap[62] = alt->sl << 4 | (alt->subnet_local ? 0x08 : 0);
	lap[63] = alt->ack_timeout << 3;
	rx_pdata(lap + 64, tag);
	return rx_inject(mad);
}

/*
 * The alternate path the peer proposes, from its end ("local") to this
 * side ("remote"): the peer's made-up GID, our GID, and distinct values in
 * every field so that each can be told apart where it comes out.
 */
static void rx_lap_path(struct cmc_path *w)
{
	memset(w, 0, sizeof(*w));
	w->local_gid = rx_far_gid;
	w->remote_gid = rx_gid->gid;
	w->local_lid = 0x1234;
	w->remote_lid = 0x0056;
	w->flow_label = 0x54321;
	w->tclass = 0x1c;
	w->hop_limit = 3;
	w->rate = IB_RATE_10_GBPS;
	w->sl = 5;
	w->ack_timeout = 17;
}

/* A SIDR_REQ from the peer; a SIDR_REP will go back to our own GID. */
static int rx_send_sidr_req(u32 request_id, __be64 sid, u16 pkey, char tag)
{
	u8 mad[RX_MAD_SIZE] = {}, pd[RX_PDATA];
	struct cmc_sidr_req f = {
		.request_id = request_id,
		.pkey = pkey,
		.service_id = be64_to_cpu(sid),
		.pdata = pd,
		.pdata_len = sizeof(pd),
	};

	rx_pdata(pd, tag);
	cmc_put_hdr((struct ib_mad_hdr *)mad, CM_SIDR_REQ_ATTR_ID,
		    cpu_to_be64(0x51d0000000000000ULL + request_id), 0);
	cmc_put_sidr_req((struct cm_sidr_req_msg *)mad, &f);
	return rx_inject(mad);
}

static int rx_send_sidr_rep(u32 request_id, u8 status, u32 qpn, u32 qkey,
			    char tag)
{
	u8 mad[RX_MAD_SIZE] = {}, pd[RX_PDATA];
	struct cmc_sidr_rep f = {
		.request_id = request_id,
		.status = status,
		.qpn = qpn,
		.qkey = qkey,
		.pdata = pd,
		.pdata_len = sizeof(pd),
	};

	rx_pdata(pd, tag);
	cmc_put_hdr((struct ib_mad_hdr *)mad, CM_SIDR_REP_ATTR_ID,
		    cpu_to_be64(0x51d1000000000000ULL + request_id), 0);
	cmc_put_sidr_rep((struct cm_sidr_rep_msg *)mad, &f);
	return rx_inject(mad);
}

static bool rx_pdata_is(const struct rx_event *e, char tag)
{
	return cmt_tagged(e->has_pdata, e->pdata, "rx-test", tag);
}

/* ------------------------------------------------------------------ */
/* Connections this side accepts (passive)                             */

/*
 * @lap and @dev_refs are set by rx_established() only: LAPs were
 * switched on for the connection, and the device references held before
 * it was made.
 */
struct rx_passive {
	struct rx_peer peer;
	__be64 sid;
	struct ib_cm_id *listen;
	struct ib_cm_id *id;
	u32 qpn;
	bool lap;
	long dev_refs;
};

/* Listen and receive the peer's REQ; ->id is the new cm_id. */
static bool rx_passive_req(struct rx_passive *c)
{
	struct rx_event e = {};

	memset(c, 0, sizeof(*c));
	rx_new_peer(&c->peer);
	c->sid = rx_sid();
	c->qpn = 0x600000 + rx_serial;
	c->listen = ib_create_cm_id(rx_dev, rx_handler, NULL);
	if (IS_ERR(c->listen)) {
		c->listen = NULL;
		return false;
	}
	if (ib_cm_listen(c->listen, c->sid))
		return false;
	if (rx_send_req(&c->peer, c->sid, 'q', 0, 0))
		return false;
	cm_test_flush();
	if (!rx_wait_event(NULL, IB_CM_REQ_RECEIVED, &e) ||
	    e.listen_id != c->listen)
		return false;
	c->id = e.id;
	rx_claim(c->id);
	return rx_state(c->id) == IB_CM_REQ_RCVD;
}

/*
 * The consumer will answer late.  ib_send_cm_mra() sends the MRA at once;
 * the newer CM's ib_prepare_cm_mra() only has one sent for each repeat of
 * the message (with its own timeout and no private data).  RX_MRA_AT_ONCE
 * says which.
 */
#ifdef HAVE_IB_PREPARE_CM_MRA
#define RX_MRA_AT_ONCE	false
static int rx_mra(struct ib_cm_id *id, u8 service_timeout, const void *pd,
		  u8 len)
{
	return ib_prepare_cm_mra(id);
}
#else
#define RX_MRA_AT_ONCE	true
static int rx_mra(struct ib_cm_id *id, u8 service_timeout, const void *pd,
		  u8 len)
{
	return ib_send_cm_mra(id, service_timeout, pd, len);
}
#endif

static int rx_passive_rep(struct rx_passive *c)
{
	struct ib_cm_rep_param rep = {
		.qp_num = c->qpn,
		.starting_psn = 0x0abcde,
		.responder_resources = 4,
		.initiator_depth = 4,
		.flow_control = 1,
		.rnr_retry_count = 7,
	};

	return ib_send_cm_rep(c->id, &rep);
}

/* REQ, REP, RTU: the connection is ESTABLISHED. */
static bool rx_passive_connect(struct rx_passive *c)
{
	if (!rx_passive_req(c) || rx_passive_rep(c))
		return false;
	if (rx_send_ids(CM_RTU_ATTR_ID, &c->peer, c->id, 'u'))
		return false;
	cm_test_flush();
	return rx_wait_event(c->id, IB_CM_RTU_RECEIVED, NULL) &&
	       rx_state(c->id) == IB_CM_ESTABLISHED;
}

/*
 * Let the peer disconnect first, so that destroying the ID sends no DREQ
 * (it would come back to the CM and count as a duplicate).
 */
static void rx_passive_end(struct rx_passive *c)
{
	if (c->id && rx_state(c->id) == IB_CM_ESTABLISHED &&
	    !rx_send_dreq(&c->peer, c->id->local_id, c->qpn, 'x')) {
		cm_test_flush();
		if (rx_state(c->id) == IB_CM_DREQ_RCVD)
			ib_send_cm_drep(c->id, NULL, 0);
	}
	if (c->id)
		ib_destroy_cm_id(c->id);
	if (c->listen)
		ib_destroy_cm_id(c->listen);
	c->id = NULL;
	c->listen = NULL;
	rx_quiesce();
	rx_forget_events();
}

/*
 * ib_cm drops LAP and APR on RoCE ports; the test build's switch lets it
 * take them on the test's port.  Off again at the end of each case, so
 * that the other cases (lap_apr_dropped_on_roce) see the port as it
 * normally is.
 */
static bool rx_lap_switch(bool on)
{
	return !cm_test_lap_on_roce(rx_dev, rx_port, on);
}

static long rx_dev_refs(void)
{
	return cm_test_dev_refs(rx_dev, rx_port);
}

/* ------------------------------------------------------------------ */
/* What a failed case prints                                           */

/* The connection of the running case's fixture (rx_established()). */
static struct rx_passive *rx_fx;

/* A cm_id of the fixture, unless it was given back to the CM. */
static void rx_dump_id(const char *what, struct ib_cm_id *id)
{
	unsigned long flags;
	bool given;

	if (!id)
		return;
	spin_lock_irqsave(&rx_lock, flags);
	given = id == rx_dropped;
	spin_unlock_irqrestore(&rx_lock, flags);
	if (given) {
		ibst_diag("dump: fixture %s %p: given back to the CM", what, id);
		return;
	}
	ibst_diag("dump: fixture %s %p: %s, lap_state %d, local id %#x, remote id %#x",
		  what, id, cmt_state_name(rx_state(id)), id->lap_state,
		  be32_to_cpu(id->local_id), be32_to_cpu(id->remote_id));
}

/*
 * The suite's dump, at a case's first failed check: the events the
 * consumer got so far (with the cm_id's state when it got each), the
 * cm_ids of the case's fixture, how many cm_ids ib_cm has and how many
 * references its device holds, and the port's counters that are not 0.
 */
static void rx_dump(void)
{
	struct {
		struct ib_cm_id *id;
		u8 type;
		u8 state;
	} ev[RX_MAX_EVENTS];
	long tx, retries, rx, dups;
	unsigned long flags;
	unsigned int i, n;
	__be16 attr;

	spin_lock_irqsave(&rx_lock, flags);
	n = rx_nevents;
	for (i = 0; i < n; i++) {
		ev[i].id = rx_events[i].id;
		ev[i].type = rx_events[i].type;
		ev[i].state = rx_events[i].state;
	}
	spin_unlock_irqrestore(&rx_lock, flags);
	ibst_diag("dump: %u event(s)", n);
	for (i = 0; i < n; i++)
		ibst_diag("dump: event %u: %s to %p in %s", i,
			  cmt_event_name(ev[i].type), ev[i].id,
			  cmt_state_name(ev[i].state));
	if (rx_fx) {
		rx_dump_id("listener", rx_fx->listen);
		rx_dump_id("cm_id", rx_fx->id);
	}
	ibst_diag("dump: ib_cm has %lu cm_id(s); %ld device reference(s)",
		  cm_test_id_count(), cm_test_dev_refs(rx_dev, rx_port));
	for (i = 0; i < CMC_ATTR_COUNT; i++) {
		attr = cpu_to_be16(CMC_ATTR_BASE + i);
		tx = rx_ctr(CM_CTR_TX, attr);
		retries = rx_ctr(CM_CTR_TX_RETRIES, attr);
		rx = rx_ctr(CM_CTR_RX, attr);
		dups = rx_ctr(CM_CTR_RX_DUPS, attr);
		if (tx || retries || rx || dups)
			ibst_diag("dump: %s: sent %ld, resent %ld, received %ld, duplicates %ld",
				  cmt_msg_names[i], tx, retries, rx, dups);
	}
}

/* ------------------------------------------------------------------ */
/* Fixture: a connection the peer established                          */

/*
 * Most cases start from a connection the peer set up with this side (its
 * REQ, our REP, its RTU), the LAP/APR cases with the port switched to take
 * LAPs (@lap).  True when it is ESTABLISHED and the case can go on; a
 * case ends it with rx_established_end() whether or not it was.
 */
static bool rx_established(struct rx_passive *c, bool lap)
{
	long refs;

	if (lap)
		IBST_EXPECT(rx_lap_switch(true));
	refs = rx_dev_refs();
	IBST_EXPECT(rx_passive_connect(c));
	c->lap = lap;
	c->dev_refs = refs;
	rx_fx = c;
	return !ibst_case_failed();
}

/* Undo rx_established(), however far it got. */
static void rx_established_end(struct rx_passive *c)
{
	bool lap = c->lap;

	rx_fx = NULL;
	rx_passive_end(c);
	if (lap)
		IBST_EXPECT(rx_lap_switch(false));
}

/* ------------------------------------------------------------------ */
/* Connections this side starts (active), towards a GID nobody has     */

struct rx_active {
	struct rx_peer peer;
	struct ib_cm_id *id;
	struct sa_path_rec path;
	struct sa_path_rec alt;
};

static void rx_far_path(struct sa_path_rec *p, u8 life)
{
	memset(p, 0, sizeof(*p));
	p->rec_type = sa_conv_gid_to_pathrec_type(rx_gid->gid_type);
	p->sgid = rx_gid->gid;
	p->dgid = rx_far_gid;
	p->pkey = cpu_to_be16(0xffff);
	p->mtu = IB_MTU_1024;
	p->rate = IB_RATE_10_GBPS;
	p->packet_life_time = life;
	p->hop_limit = 64;
	p->reversible = 1;
	/* Resolved already: no neighbour lookup for the made-up peer. */
	p->roce.route_resolved = true;
	sa_path_set_dmac(p, (u8 *)rx_far_mac);
}

/* A new peer, paths to it (@with_alt: two) and a new ->id; true if made. */
static bool rx_active_init(struct rx_active *c, bool with_alt)
{
	memset(c, 0, sizeof(*c));
	rx_new_peer(&c->peer);
	rx_far_path(&c->path, 14);
	if (with_alt)
		rx_far_path(&c->alt, 14);
	c->id = ib_create_cm_id(rx_dev, rx_handler, NULL);
	if (IS_ERR(c->id)) {
		c->id = NULL;
		return false;
	}
	return true;
}

/*
 * ib_send_cm_req() on ->id, with the alternate path if @with_alt;
 * @resp_timeout and @retries bound how long it waits for an answer.
 */
static int rx_active_send_req(struct rx_active *c, u8 resp_timeout,
			      u8 retries, bool with_alt)
{
	struct ib_cm_req_param req = {
		.primary_path = &c->path,
		.alternate_path = with_alt ? &c->alt : NULL,
		.ppath_sgid_attr = rx_gid,
		.qp_num = 0x700000 + rx_serial,
		.qp_type = IB_QPT_RC,
		.starting_psn = 0x111111,
		.responder_resources = 4,
		.initiator_depth = 4,
		.remote_cm_response_timeout = resp_timeout,
		.local_cm_response_timeout = 20,
		.flow_control = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
		.max_cm_retries = retries,
	};

	req.service_id = rx_sid();
	return ib_send_cm_req(c->id, &req);
}

/*
 * Send a REQ; @resp_timeout and @retries bound how long it waits for an
 * answer.  ->id is REQ_SENT on success.
 */
static bool rx_active_req(struct rx_active *c, u8 resp_timeout, u8 retries,
			  bool with_alt)
{
	return rx_active_init(c, with_alt) &&
	       !rx_active_send_req(c, resp_timeout, retries, with_alt) &&
	       rx_state(c->id) == IB_CM_REQ_SENT;
}

/*
 * REQ (with rx_active_req()'s @resp_timeout and @retries), the peer's REP,
 * our RTU: ESTABLISHED.
 */
static bool rx_active_connect_timed(struct rx_active *c, u8 resp_timeout,
				    u8 retries, bool with_alt)
{
	if (!rx_active_req(c, resp_timeout, retries, with_alt))
		return false;
	if (rx_send_rep(&c->peer, c->id, 'p', 0, 0))
		return false;
	cm_test_flush();
	if (!rx_wait_event(c->id, IB_CM_REP_RECEIVED, NULL))
		return false;
	return !ib_send_cm_rtu(c->id, NULL, 0) &&
	       rx_state(c->id) == IB_CM_ESTABLISHED;
}

/* The same, with timeouts long enough for any check. */
static bool rx_active_connect(struct rx_active *c, bool with_alt)
{
	return rx_active_connect_timed(c, 20, 15, with_alt);
}

/*
 * Destroy the connection's cm_id, if it has one; for a case's second
 * connection, which rx_active_end() of the first cleans up after.
 */
static void rx_active_destroy(struct rx_active *c)
{
	if (c->id)
		ib_destroy_cm_id(c->id);
	c->id = NULL;
}

static void rx_active_end(struct rx_active *c)
{
	rx_active_destroy(c);
	rx_quiesce();
	rx_forget_events();
}

/* ------------------------------------------------------------------ */
/* Service ID resolution this side asks for                            */

struct rx_asker {
	struct ib_cm_id *id;
	struct sa_path_rec path;
};

/*
 * Send a SIDR_REQ towards the made-up GID, where nobody answers it: ->id
 * waits in SIDR_REQ_SENT for a SIDR_REP naming its local ID.
 */
static bool rx_sidr_ask(struct rx_asker *a)
{
	struct ib_cm_sidr_req_param req = {
		.path = &a->path,
		.sgid_attr = rx_gid,
		.service_id = rx_sid(),
		/* Far longer than a check lasts. */
		.timeout_ms = 60000,
		.max_cm_retries = 0,
	};

	memset(a, 0, sizeof(*a));
	rx_far_path(&a->path, 14);
	a->id = ib_create_cm_id(rx_dev, rx_handler, NULL);
	if (IS_ERR(a->id)) {
		a->id = NULL;
		return false;
	}
	return !ib_send_cm_sidr_req(a->id, &req) &&
	       rx_state(a->id) == IB_CM_SIDR_REQ_SENT;
}

/* The request ID that SIDR_REPs for @a carry. */
static u32 rx_asker_rid(const struct rx_asker *a)
{
	return be32_to_cpu(a->id->local_id);
}

static void rx_sidr_end(struct rx_asker *a, struct ib_cm_id *listen)
{
	if (a && a->id)
		ib_destroy_cm_id(a->id);
	if (a)
		a->id = NULL;
	if (listen && !IS_ERR(listen))
		ib_destroy_cm_id(listen);
	rx_quiesce();
	rx_forget_events();
}

/* ------------------------------------------------------------------ */
/* Checks that several cases make                                      */

/*
 * These are macros, like IBST_EXPECT() and friends, so that a failed
 * check names the case and the line it was made from.
 */

/*
 * The peer sends a message again (@send, an injection that returns 0)
 * that is a duplicate: the CM counts it (@attr's duplicates are then
 * @dups) and no more.
 */
#define RX_EXPECT_DUP_COUNTED(send, attr, dups) do {			\
	IBST_EXPECT_EQ(send, 0);					\
	rx_quiesce();							\
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX_DUPS, attr), dups);		\
} while (0)

/*
 * The same for a duplicate of a message this side has answered with an
 * @answer message: the CM counts it and sends its @answer again.
 */
#define RX_EXPECT_DUP_ANSWERED(send, attr, dups, answer) do {		\
	__be16 __rx_answer = (answer);					\
	long __rx_sent, __rx_retried;					\
									\
	rx_quiesce();							\
	__rx_sent = rx_ctr(CM_CTR_TX, __rx_answer);			\
	__rx_retried = rx_ctr(CM_CTR_TX_RETRIES, __rx_answer);		\
	IBST_EXPECT_EQ(send, 0);					\
	cm_test_flush();						\
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX_DUPS, attr), dups);		\
	IBST_EXPECT(rx_ctr_rises(CM_CTR_TX, __rx_answer, __rx_sent));	\
	/* a repeated answer counts as one retry of it */		\
	rx_quiesce();							\
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_TX_RETRIES, __rx_answer),		\
		       __rx_retried + 1);				\
} while (0)

/*
 * The peer's DREQ (private data @tag) reaches the established passive
 * connection @c, as event @e (or NULL): DREQ_RCVD.
 */
#define RX_EXPECT_PEER_DREQ(c, tag, e) do {				\
	struct rx_passive *__rx_c = (c);				\
									\
	IBST_EXPECT_EQ(rx_send_dreq(&__rx_c->peer, __rx_c->id->local_id, \
				    __rx_c->qpn, tag), 0);		\
	cm_test_flush();						\
	IBST_EXPECT(rx_wait_event(__rx_c->id, IB_CM_DREQ_RECEIVED, e));	\
	IBST_EXPECT_EQ(rx_state(__rx_c->id), IB_CM_DREQ_RCVD);		\
} while (0)

/*
 * @id, disconnected, goes through TimeWait: TIMEWAIT_EXIT, then IDLE,
 * with @dreq_errors DREQ_ERROR events on the way.
 */
#define RX_EXPECT_TIMEWAIT_EXIT(id, dreq_errors) do {			\
	struct ib_cm_id *__rx_id = (id);				\
									\
	IBST_EXPECT(rx_wait_event(__rx_id, IB_CM_TIMEWAIT_EXIT, NULL));	\
	IBST_EXPECT_EQ(rx_state(__rx_id), IB_CM_IDLE);			\
	IBST_EXPECT_EQ(rx_count(__rx_id, IB_CM_DREQ_ERROR, NULL),	\
		       dreq_errors);					\
} while (0)

/*
 * The peer's REJ reaches @id as event @e: with @reason, and @id is in
 * @state.
 */
#define RX_EXPECT_REJECTED(id, e, reason, state) do {			\
	struct ib_cm_id *__rx_id = (id);				\
	struct rx_event *__rx_e = (e);					\
									\
	IBST_EXPECT(rx_wait_event(__rx_id, IB_CM_REJ_RECEIVED, __rx_e));	\
	IBST_EXPECT_EQ(__rx_e->rej_reason, reason);			\
	IBST_EXPECT_EQ(rx_state(__rx_id), state);			\
} while (0)

/*
 * The SIDR_REP for our asker @a arrives as event @e, with @status: @a is
 * IDLE again.
 */
#define RX_EXPECT_SIDR_ANSWERED(a, e, status) do {			\
	struct ib_cm_id *__rx_id = (a)->id;				\
	struct rx_event *__rx_e = (e);					\
									\
	IBST_EXPECT(rx_wait_event(__rx_id, IB_CM_SIDR_REP_RECEIVED,	\
				  __rx_e));				\
	IBST_EXPECT_EQ(__rx_e->sidr_status, status);			\
	IBST_EXPECT_EQ(rx_state(__rx_id), IB_CM_IDLE);			\
} while (0)

/* ------------------------------------------------------------------ */
/* Checks                                                              */

/* A REQ reaches the listener with everything the peer put in it. */
static void req_event_fields(void)
{
	long rx = rx_ctr(CM_CTR_RX, CM_REQ_ATTR_ID);
	struct ib_cm_id *listen;
	struct rx_peer peer;
	struct rx_event e = {};
	__be64 sid = rx_sid();
	u8 want[RX_PDATA];

	rx_new_peer(&peer);
	listen = ib_create_cm_id(rx_dev, rx_handler, NULL);
	IBST_EXPECT_NOT_ERR(listen);
	if (IS_ERR(listen))
		return;
	IBST_EXPECT_EQ(ib_cm_listen(listen, sid), 0);
	IBST_EXPECT_EQ(rx_send_req(&peer, sid, 'R', 0xabcdef, 0x5a5a0001), 0);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(NULL, IB_CM_REQ_RECEIVED, &e));
	IBST_EXPECT_EQ(rx_count(NULL, IB_CM_REQ_RECEIVED, NULL), 1);
	IBST_EXPECT_PTR_EQ(e.listen_id, listen);
	IBST_EXPECT_NOT_NULL(e.id);
	IBST_EXPECT_PTR_NE(e.id, listen);
	IBST_EXPECT_EQ(e.remote_qpn, peer.qpn);
	IBST_EXPECT_EQ(e.starting_psn, 0x123456);
	IBST_EXPECT_EQ(e.ca_guid, cpu_to_be64(peer.guid));
	IBST_EXPECT_EQ(e.ece_vendor, 0xabcdef);
	IBST_EXPECT_EQ(e.ece_attr, 0x5a5a0001);
	rx_pdata(want, 'R');
	IBST_EXPECT(e.has_pdata);
	IBST_EXPECT_MEMEQ(e.pdata, want, RX_PDATA);
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX, CM_REQ_ATTR_ID), rx + 1);
	if (e.id) {
		IBST_EXPECT_EQ(rx_state(e.id), IB_CM_REQ_RCVD);
		IBST_EXPECT_EQ(e.id->remote_id, cpu_to_be32(peer.comm_id));
		IBST_EXPECT_EQ(e.id->service_id, sid);
		rx_claim(e.id);
		ib_destroy_cm_id(e.id);
	}
	ib_destroy_cm_id(listen);
	rx_quiesce();
	rx_forget_events();
}

/* A REQ for a service nobody listens to is refused, never delivered. */
static void req_without_listener_rejected(void)
{
	long rej = rx_ctr(CM_CTR_TX, CM_REJ_ATTR_ID);
	struct rx_peer peer;

	rx_new_peer(&peer);
	IBST_EXPECT_EQ(rx_rej_watch(), 0);
	IBST_EXPECT_EQ(rx_send_req(&peer, rx_sid(), 'r', 0, 0), 0);
	cm_test_flush();
	IBST_EXPECT(rx_ctr_rises(CM_CTR_TX, CM_REJ_ATTR_ID, rej));
	/* it names the REQ's comm ID only: no local one was given out */
	RX_EXPECT_ONE_REJ(CMC_MSG_REQ, peer.tid, IB_CM_REJ_INVALID_SERVICE_ID,
			  0, peer.comm_id);
	IBST_EXPECT_EQ(rx_count(NULL, IB_CM_REQ_RECEIVED, NULL), 0);
	rx_quiesce();
	rx_forget_events();
}

/*
 * A peer that timed out waiting for our REP rejects with reason TIMEOUT
 * and only its CA GUID to go by: the ID is found through its TimeWait
 * record and goes back to IDLE.
 */
static void rej_timeout_found_by_ca_guid(void)
{
	struct rx_passive c;
	struct rx_event e = {};

	IBST_EXPECT(rx_passive_req(&c));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT_EQ(rx_send_rej(&c.peer, NULL, CMC_MSG_OTHER,
				   IB_CM_REJ_TIMEOUT, 'T'), 0);
	cm_test_flush();
	RX_EXPECT_REJECTED(c.id, &e, IB_CM_REJ_TIMEOUT, IB_CM_IDLE);
	IBST_EXPECT(rx_pdata_is(&e, 'T'));
out:
	rx_passive_end(&c);
}

/*
 * A repeated REQ is counted, not delivered; after the consumer's MRA it
 * gets the MRA.
 */
static void dup_req_counted_and_mra_repeated(void)
{
	struct rx_passive c;
	long dups, mra;

	IBST_EXPECT(rx_passive_req(&c));
	if (ibst_case_failed())
		goto out;
	rx_quiesce();
	dups = rx_ctr(CM_CTR_RX_DUPS, CM_REQ_ATTR_ID);
	mra = rx_ctr(CM_CTR_TX, CM_MRA_ATTR_ID);

	/* REQ_RCVD: nothing to repeat yet. */
	RX_EXPECT_DUP_COUNTED(rx_send_req(&c.peer, c.sid, 'q', 0, 0),
			      CM_REQ_ATTR_ID, dups + 1);
	IBST_EXPECT_EQ(rx_count(NULL, IB_CM_REQ_RECEIVED, NULL), 1);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_REQ_RCVD);
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_TX, CM_MRA_ATTR_ID), mra);

	/* MRA_REQ_SENT: the duplicate is answered with an MRA (again). */
	IBST_EXPECT_EQ(rx_mra(c.id, 20, NULL, 0), 0);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_MRA_REQ_SENT);
	if (RX_MRA_AT_ONCE) {
		IBST_EXPECT(rx_ctr_rises(CM_CTR_TX, CM_MRA_ATTR_ID, mra));
	} else {
		rx_quiesce();
		IBST_EXPECT_EQ(rx_ctr(CM_CTR_TX, CM_MRA_ATTR_ID), mra);
	}
	RX_EXPECT_DUP_ANSWERED(rx_send_req(&c.peer, c.sid, 'q', 0, 0),
			       CM_REQ_ATTR_ID, dups + 2, CM_MRA_ATTR_ID);
	IBST_EXPECT_EQ(rx_count(NULL, IB_CM_REQ_RECEIVED, NULL), 1);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_MRA_REQ_SENT);
out:
	rx_passive_end(&c);
}

/* RTU establishes once; a second RTU is only counted. */
static void rtu_establishes_once(void)
{
	struct rx_passive c;
	struct rx_event e = {};
	long dups;

	IBST_EXPECT(rx_passive_req(&c));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT_EQ(rx_passive_rep(&c), 0);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_REP_SENT);
	IBST_EXPECT_EQ(rx_send_ids(CM_RTU_ATTR_ID, &c.peer, c.id, 'U'), 0);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(c.id, IB_CM_RTU_RECEIVED, &e));
	IBST_EXPECT(rx_pdata_is(&e, 'U'));
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_ESTABLISHED);

	dups = rx_ctr(CM_CTR_RX_DUPS, CM_RTU_ATTR_ID);
	RX_EXPECT_DUP_COUNTED(rx_send_ids(CM_RTU_ATTR_ID, &c.peer, c.id, 'V'),
			      CM_RTU_ATTR_ID, dups + 1);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_RTU_RECEIVED, NULL), 1);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_ESTABLISHED);
out:
	rx_passive_end(&c);
}

/*
 * DREQ: one with the wrong QPN is dropped; the right one is delivered once;
 * repeats are counted, and in TimeWait answered with our DREP again.
 */
static void dreq_rcvd_dups_and_drep_repeated(void)
{
	struct rx_passive c;
	struct rx_event e = {};
	long dups;

	if (!rx_established(&c, false))
		goto out;
	rx_quiesce();
	dups = rx_ctr(CM_CTR_RX_DUPS, CM_DREQ_ATTR_ID);

	IBST_EXPECT_EQ(rx_send_dreq(&c.peer, c.id->local_id, c.qpn + 1, 'w'),
		       0);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_ESTABLISHED);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_DREQ_RECEIVED, NULL), 0);

	RX_EXPECT_PEER_DREQ(&c, 'D', &e);
	IBST_EXPECT(rx_pdata_is(&e, 'D'));

	RX_EXPECT_DUP_COUNTED(rx_send_dreq(&c.peer, c.id->local_id, c.qpn, 'E'),
			      CM_DREQ_ATTR_ID, dups + 1);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_DREQ_RECEIVED, NULL), 1);

	IBST_EXPECT_EQ(ib_send_cm_drep(c.id, NULL, 0), 0);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_TIMEWAIT);
	RX_EXPECT_DUP_ANSWERED(rx_send_dreq(&c.peer, c.id->local_id, c.qpn, 'F'),
			       CM_DREQ_ATTR_ID, dups + 2, CM_DREP_ATTR_ID);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_DREQ_RECEIVED, NULL), 1);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_TIMEWAIT);
out:
	rx_established_end(&c);
}

/* A DREQ for an ID that does not exist is answered with a DREP. */
static void dreq_unknown_id_gets_drep(void)
{
	struct rx_peer peer;
	long dups, drep;

	rx_new_peer(&peer);
	rx_quiesce();
	dups = rx_ctr(CM_CTR_RX_DUPS, CM_DREQ_ATTR_ID);
	drep = rx_ctr(CM_CTR_TX, CM_DREP_ATTR_ID);
	/* Nobody uses IDs with this value: the peer made it up. */
	IBST_EXPECT_EQ(rx_send_dreq(&peer, cpu_to_be32(~peer.comm_id), 0x1234,
				    'n'), 0);
	cm_test_flush();
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX_DUPS, CM_DREQ_ATTR_ID), dups + 1);
	IBST_EXPECT(rx_ctr_rises(CM_CTR_TX, CM_DREP_ATTR_ID, drep));
	rx_quiesce();
	rx_forget_events();
}

/*
 * A connection in TimeWait is over: a REQ from the same peer, with the same
 * communication ID and QPN, is a new connection (no duplicate, no stale
 * REJ), while the old ID stays in TimeWait.
 */
static void req_in_timewait_is_new_connection(void)
{
	struct rx_passive c;
	struct rx_event e = {};
	long dups, rej;

	if (!rx_established(&c, false))
		goto out;
	RX_EXPECT_PEER_DREQ(&c, 'D', NULL);
	IBST_EXPECT_EQ(ib_send_cm_drep(c.id, NULL, 0), 0);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_TIMEWAIT);
	rx_quiesce();
	dups = rx_ctr(CM_CTR_RX_DUPS, CM_REQ_ATTR_ID);
	rej = rx_ctr(CM_CTR_TX, CM_REJ_ATTR_ID);

	IBST_EXPECT_EQ(rx_send_req(&c.peer, c.sid, 'n', 0, 0), 0);
	cm_test_flush();
	wait_event_timeout(rx_wq, rx_count(NULL, IB_CM_REQ_RECEIVED, NULL) > 1,
			   msecs_to_jiffies(RX_WAIT_MS));
	IBST_EXPECT_EQ(rx_count(NULL, IB_CM_REQ_RECEIVED, &e), 2);
	IBST_EXPECT_PTR_NE(e.id, c.id);
	IBST_EXPECT_PTR_EQ(e.listen_id, c.listen);
	IBST_EXPECT(rx_pdata_is(&e, 'n'));
	rx_quiesce();
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX_DUPS, CM_REQ_ATTR_ID), dups);
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_TX, CM_REJ_ATTR_ID), rej);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_TIMEWAIT);
out:
	rx_established_end(&c);
}

/*
 * The consumer's DREP, sent where the REQ below has found its connection
 * (cm_test_on_dup_req()): the connection enters TimeWait after the lookup
 * and before the CM looks at its state.
 */
static struct ib_cm_id *rx_dup_req_id;
static int rx_dup_req_drep = -EINPROGRESS;

static void rx_drep_on_dup_req(struct ib_cm_id *id)
{
	if (id == rx_dup_req_id)
		rx_dup_req_drep = ib_send_cm_drep(id, NULL, 0);
}

/*
 * A REJ(stale connection) that answers a duplicate counts as a repeat of
 * that answer under the newer contract, like the MRA does, and as a
 * first send under the older one.
 */
#ifdef HAVE_IB_PREPARE_CM_MRA
#define RX_STALE_REJ_REPEATS	1
#else
#define RX_STALE_REJ_REPEATS	0
#endif

/*
 * A repeat of the REQ that met the connection before it entered TimeWait
 * and its state after: the REQ belongs to the old connection, and is
 * answered with a REJ(stale connection).  Nothing reaches the consumer.
 */
static void dup_req_racing_timewait_gets_stale_rej(void)
{
	long dups, rej, retried, rej_in;
	__be64 req_tid, dreq_tid;
	struct rx_passive c;

	if (!rx_established(&c, false))
		goto out;
	/* the DREQ in a transaction of its own, the REQ's repeat in the REQ's */
	req_tid = c.peer.tid;
	dreq_tid = cpu_to_be64(be64_to_cpu(req_tid) + 0x10000);
	c.peer.tid = dreq_tid;
	RX_EXPECT_PEER_DREQ(&c, 'D', NULL);
	c.peer.tid = req_tid;
	rx_quiesce();
	dups = rx_ctr(CM_CTR_RX_DUPS, CM_REQ_ATTR_ID);
	rej = rx_ctr(CM_CTR_TX, CM_REJ_ATTR_ID);
	retried = rx_ctr(CM_CTR_TX_RETRIES, CM_REJ_ATTR_ID);
	rej_in = rx_ctr(CM_CTR_RX, CM_REJ_ATTR_ID);

	rx_dup_req_id = c.id;
	rx_dup_req_drep = -EINPROGRESS;
	cm_test_on_dup_req(rx_drep_on_dup_req);
	IBST_EXPECT_EQ(rx_rej_watch(), 0);
	IBST_EXPECT_EQ(rx_send_req(&c.peer, c.sid, 'q', 0, 0), 0);
	cm_test_flush();
	cm_test_on_dup_req(NULL);
	rx_dup_req_id = NULL;
	IBST_EXPECT_EQ(rx_dup_req_drep, 0);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_TIMEWAIT);
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX_DUPS, CM_REQ_ATTR_ID), dups + 1);
	IBST_EXPECT(rx_ctr_rises(CM_CTR_TX, CM_REJ_ATTR_ID, rej));
	/*
	 * The connection's REJ, with both comm IDs.  As the kernel's CM does,
	 * it is formatted from the connection as it stands: in the
	 * transaction of the last message it took (the DREQ's), and from
	 * TimeWait it rejects "other", not the REQ.
	 */
	RX_EXPECT_ONE_REJ(CMC_MSG_OTHER, dreq_tid, IB_CM_REJ_STALE_CONN,
			  be32_to_cpu(c.id->local_id), c.peer.comm_id);
	/* one REJ, sent to the port's own GID, comes back */
	IBST_EXPECT(rx_ctr_rises(CM_CTR_RX, CM_REJ_ATTR_ID, rej_in));
	rx_quiesce();
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_TX, CM_REJ_ATTR_ID),
		       rej + 1 + RX_STALE_REJ_REPEATS);
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_TX_RETRIES, CM_REJ_ATTR_ID),
		       retried + RX_STALE_REJ_REPEATS);
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX, CM_REJ_ATTR_ID), rej_in + 1);
	IBST_EXPECT_EQ(rx_count(NULL, IB_CM_REQ_RECEIVED, NULL), 1);
out:
	rx_established_end(&c);
}

/* The peer's REP with its private data and ECE; repeats get our RTU. */
static void rep_event_fields_and_dups(void)
{
	struct rx_active c;
	struct rx_event e = {};
	long dups, rtu;

	IBST_EXPECT(rx_active_req(&c, 20, 15, false));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT_EQ(rx_send_rep(&c.peer, c.id, 'P', 0x00fedc, 0x5a5a0002),
		       0);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(c.id, IB_CM_REP_RECEIVED, &e));
	IBST_EXPECT(rx_pdata_is(&e, 'P'));
	IBST_EXPECT_EQ(e.ece_vendor, 0x00fedc);
	IBST_EXPECT_EQ(e.ece_attr, 0x5a5a0002);
	IBST_EXPECT_EQ(e.remote_qpn, c.peer.qpn);
	IBST_EXPECT_EQ(e.starting_psn, 0x654321);
	IBST_EXPECT_EQ(e.ca_guid, cpu_to_be64(c.peer.guid));
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_REP_RCVD);
	IBST_EXPECT_EQ(c.id->remote_id, cpu_to_be32(c.peer.comm_id));

	/* REP_RCVD: the consumer has not answered; only count it. */
	dups = rx_ctr(CM_CTR_RX_DUPS, CM_REP_ATTR_ID);
	rtu = rx_ctr(CM_CTR_TX, CM_RTU_ATTR_ID);
	RX_EXPECT_DUP_COUNTED(rx_send_rep(&c.peer, c.id, 'Q', 0, 0),
			      CM_REP_ATTR_ID, dups + 1);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_REP_RECEIVED, NULL), 1);
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_TX, CM_RTU_ATTR_ID), rtu);

	/* ESTABLISHED: our RTU got lost, send it again. */
	IBST_EXPECT_EQ(ib_send_cm_rtu(c.id, NULL, 0), 0);
	IBST_EXPECT(rx_ctr_rises(CM_CTR_TX, CM_RTU_ATTR_ID, rtu));
	RX_EXPECT_DUP_ANSWERED(rx_send_rep(&c.peer, c.id, 'Q', 0, 0),
			       CM_REP_ATTR_ID, dups + 2, CM_RTU_ATTR_ID);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_REP_RECEIVED, NULL), 1);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_ESTABLISHED);
out:
	rx_active_end(&c);
}

/*
 * A REP from a peer comm ID (and CA GUID) that another of our connections
 * has already taken is a repeat meant for that connection: dropped,
 * whichever of our cm_ids it names, and that cm_id is left as it was.
 */
static void rep_with_taken_peer_id_dropped(void)
{
	struct rx_active a, b, c;
	struct rx_peer b_own;

	IBST_EXPECT(rx_active_req(&a, 20, 15, false));
	IBST_EXPECT(rx_active_req(&b, 20, 15, false));
	IBST_EXPECT(rx_active_req(&c, 20, 15, false));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT_EQ(rx_send_rep(&a.peer, a.id, 'P', 0, 0), 0);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(a.id, IB_CM_REP_RECEIVED, NULL));

	b_own = b.peer;
	b.peer.comm_id = a.peer.comm_id;
	b.peer.guid = a.peer.guid;
	c.peer.comm_id = a.peer.comm_id;
	c.peer.guid = a.peer.guid;
	IBST_EXPECT_EQ(rx_send_rep(&b.peer, b.id, 'Q', 0, 0), 0);
	IBST_EXPECT_EQ(rx_send_rep(&c.peer, c.id, 'Q', 0, 0), 0);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_count(b.id, IB_CM_REP_RECEIVED, NULL), 0);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_REP_RECEIVED, NULL), 0);
	IBST_EXPECT_EQ(rx_state(b.id), IB_CM_REQ_SENT);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_REQ_SENT);
	IBST_EXPECT_EQ(rx_state(a.id), IB_CM_REP_RCVD);
	IBST_EXPECT_EQ(a.id->remote_id, cpu_to_be32(a.peer.comm_id));

	/* Destroyed after the drop, c must leave a's entry in place. */
	rx_active_destroy(&c);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_send_rep(&b.peer, b.id, 'Q', 0, 0), 0);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_count(b.id, IB_CM_REP_RECEIVED, NULL), 0);
	IBST_EXPECT_EQ(rx_state(b.id), IB_CM_REQ_SENT);
	/* b's own peer still connects it. */
	IBST_EXPECT_EQ(rx_send_rep(&b_own, b.id, 'R', 0, 0), 0);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(b.id, IB_CM_REP_RECEIVED, NULL));
	IBST_EXPECT_EQ(b.id->remote_id, cpu_to_be32(b_own.comm_id));
	IBST_EXPECT_EQ(rx_count(a.id, IB_CM_REP_RECEIVED, NULL), 1);
out:
	rx_active_destroy(&c);
	rx_active_destroy(&b);
	rx_active_end(&a);
}

/*
 * An MRA for our REQ stretches its timeout: a REQ without one times out
 * (REQ_ERROR) while the MRAed one, sent at the same time, keeps waiting.
 */
static void mra_extends_req_timeout(void)
{
	struct rx_active slow, plain;
	struct rx_event e = {};
	long dups;

	/* No retries, about 0.4 s each (2 x 67 ms + 268 ms). */
	IBST_EXPECT(rx_active_req(&slow, 16, 0, false));
	IBST_EXPECT(rx_active_req(&plain, 16, 0, false));
	if (ibst_case_failed())
		goto out;
	/* Service timeout 21: about 8.6 s more. */
	IBST_EXPECT_EQ(rx_send_mra(&slow.peer, slow.id, CMC_MSG_REQ, 21, 'M'),
		       0);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(slow.id, IB_CM_MRA_RECEIVED, &e));
	IBST_EXPECT_EQ(e.service_timeout, 21);
	IBST_EXPECT(rx_pdata_is(&e, 'M'));
	IBST_EXPECT_EQ(rx_state(slow.id), IB_CM_MRA_REQ_RCVD);

	IBST_EXPECT(rx_wait_event(plain.id, IB_CM_REQ_ERROR, NULL));
	IBST_EXPECT_EQ(rx_state(plain.id), IB_CM_IDLE);
	msleep(500);
	IBST_EXPECT_EQ(rx_count(slow.id, IB_CM_REQ_ERROR, NULL), 0);
	IBST_EXPECT_EQ(rx_state(slow.id), IB_CM_MRA_REQ_RCVD);

	dups = rx_ctr(CM_CTR_RX_DUPS, CM_MRA_ATTR_ID);
	RX_EXPECT_DUP_COUNTED(rx_send_mra(&slow.peer, slow.id, CMC_MSG_REQ, 21,
					  'N'),
			      CM_MRA_ATTR_ID, dups + 1);
	IBST_EXPECT_EQ(rx_count(slow.id, IB_CM_MRA_RECEIVED, NULL), 1);
out:
	rx_active_destroy(&plain);
	rx_active_end(&slow);
}

/*
 * An MRA delays only the message the state says is outstanding: one naming
 * another message, or one for an established connection (which has sent
 * no LAP), is dropped and changes nothing; the right MRA still counts.
 */
static void mra_out_of_place_dropped(void)
{
	struct rx_active a, q;
	struct rx_passive c;
	struct rx_peer anon;
	struct rx_event e = {};
	long dups;

	IBST_EXPECT(rx_active_connect(&a, false));
	IBST_EXPECT(rx_active_req(&q, 20, 15, false));
	IBST_EXPECT(rx_passive_req(&c));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT_EQ(rx_passive_rep(&c), 0);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_REP_SENT);
	dups = rx_ctr(CM_CTR_RX_DUPS, CM_MRA_ATTR_ID);

	/*
	 * Our REP is outstanding, not a LAP; nor our REQ, and an MRA for a
	 * REQ is looked up as one sent before our REP, by remote ID 0, so it
	 * does not even find c.
	 */
	IBST_EXPECT_EQ(rx_send_mra(&c.peer, c.id, CMC_MSG_OTHER, 20, 'm'), 0);
	IBST_EXPECT_EQ(rx_send_mra(&c.peer, c.id, CMC_MSG_REQ, 20, 'm'), 0);
	/*
	 * Our REQ is outstanding, not a REP; before the REP the cm_id's
	 * remote ID is 0, and a peer may name itself so.
	 */
	anon = q.peer;
	anon.comm_id = 0;
	IBST_EXPECT_EQ(rx_send_mra(&anon, q.id, CMC_MSG_REP, 20, 'n'), 0);
	/* Established and no LAP sent: nothing to delay. */
	IBST_EXPECT_EQ(rx_send_mra(&a.peer, a.id, CMC_MSG_OTHER, 20, 'o'), 0);
	IBST_EXPECT_EQ(rx_send_mra(&a.peer, a.id, CMC_MSG_REP, 20, 'o'), 0);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_count(NULL, IB_CM_MRA_RECEIVED, NULL), 0);
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX_DUPS, CM_MRA_ATTR_ID), dups);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_REP_SENT);
	IBST_EXPECT_EQ(rx_state(q.id), IB_CM_REQ_SENT);
	IBST_EXPECT_EQ(rx_state(a.id), IB_CM_ESTABLISHED);
	IBST_EXPECT_EQ(a.id->lap_state, IB_CM_LAP_UNINIT);

	IBST_EXPECT_EQ(rx_send_mra(&c.peer, c.id, CMC_MSG_REP, 20, 'p'), 0);
	IBST_EXPECT_EQ(rx_send_mra(&q.peer, q.id, CMC_MSG_REQ, 20, 'q'), 0);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(c.id, IB_CM_MRA_RECEIVED, &e));
	IBST_EXPECT(rx_pdata_is(&e, 'p'));
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_MRA_REP_RCVD);
	IBST_EXPECT(rx_wait_event(q.id, IB_CM_MRA_RECEIVED, &e));
	IBST_EXPECT(rx_pdata_is(&e, 'q'));
	IBST_EXPECT_EQ(rx_state(q.id), IB_CM_MRA_REQ_RCVD);
out:
	rx_passive_end(&c);
	rx_active_destroy(&q);
	rx_active_end(&a);
}

/* REJ ends the handshake; "stale connection" sends the ID to TimeWait. */
static void rej_received(void)
{
	struct rx_active a, b;
	struct rx_event e = {};

	IBST_EXPECT(rx_active_req(&a, 20, 15, false));
	IBST_EXPECT(rx_active_req(&b, 20, 15, false));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT_EQ(rx_send_rej(&a.peer, a.id, CMC_MSG_REQ,
				   IB_CM_REJ_CONSUMER_DEFINED, 'J'), 0);
	IBST_EXPECT_EQ(rx_send_rej(&b.peer, b.id, CMC_MSG_REQ,
				   IB_CM_REJ_STALE_CONN, 'K'), 0);
	cm_test_flush();
	RX_EXPECT_REJECTED(a.id, &e, IB_CM_REJ_CONSUMER_DEFINED, IB_CM_IDLE);
	IBST_EXPECT(rx_pdata_is(&e, 'J'));
	RX_EXPECT_REJECTED(b.id, &e, IB_CM_REJ_STALE_CONN, IB_CM_TIMEWAIT);

	/* A second REJ finds nothing left to reject. */
	IBST_EXPECT_EQ(rx_send_rej(&a.peer, a.id, CMC_MSG_REQ,
				   IB_CM_REJ_CONSUMER_DEFINED, 'J'), 0);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_count(a.id, IB_CM_REJ_RECEIVED, NULL), 1);
out:
	rx_active_destroy(&b);
	rx_active_end(&a);
}

/*
 * ib_send_cm_rej() on @id (@destroy: ib_destroy_cm_id(), which sends the
 * REJ itself), watched through the icm_send_rej tracepoint: its return,
 * with @w filled in by what the tracepoint saw.  With @nth, the nth
 * allocation of the call fails.
 */
static int rx_rej_watched(struct ib_cm_id *id, bool destroy,
			  struct cm_test_rej_seen *w, int nth)
{
	int ret;

	memset(w, 0, sizeof(*w));
	w->id = id;
	w->state = -1;
	ret = cm_test_rej_watch(w);
	if (ret) {
		IBST_FAIL("cannot attach to icm_send_rej: %d", ret);
		if (destroy)
			ib_destroy_cm_id(id);
		return ret;
	}
	if (nth)
		cm_fault_arm(nth);
	if (destroy)
		ib_destroy_cm_id(id);
	else
		ret = ib_send_cm_rej(id, IB_CM_REJ_INVALID_SERVICE_ID, NULL, 0,
				     NULL, 0);
	if (nth)
		cm_fault_disarm();
	cm_test_rej_unwatch(w);
	return ret;
}

/*
 * A tracer of icm_send_rej sees the state the REJ was sent from, as with
 * the distribution's ib_cm: not the IDLE or TimeWait the REJ moves the
 * cm_id to.  The event also fires when no message can be built for the
 * REJ, and when the cm_id's state has no REJ to send.
 */
static void send_rej_traced_before_state_changes(void)
{
	struct cm_test_rej_seen w;
	struct rx_passive c;
	struct ib_cm_id *idle;

	/* A REQ we hold: the REJ resets the ID to IDLE. */
	if (rx_passive_req(&c)) {
		IBST_EXPECT_EQ(rx_rej_watched(c.id, false, &w, 0), 0);
		IBST_EXPECT_EQ(w.count, 1);
		IBST_EXPECT_EQ(w.state, IB_CM_REQ_RCVD);
		IBST_EXPECT_EQ(w.reason, IB_CM_REJ_INVALID_SERVICE_ID);
		IBST_EXPECT_EQ(rx_state(c.id), IB_CM_IDLE);
	} else {
		IBST_FAIL("no REQ to reject");
	}
	rx_passive_end(&c);

	/*
	 * Our REP is out: the REJ takes the ID to TimeWait.  Destroying the
	 * ID sends it, so that the REP is cancelled too (ib_send_cm_rej()
	 * leaves it to be sent again until its retries run out, as the
	 * distribution's does, and the ID's destruction would wait for that).
	 */
	if (rx_passive_req(&c) && !rx_passive_rep(&c)) {
		rx_rej_watched(c.id, true, &w, 0);
		c.id = NULL;
		IBST_EXPECT_EQ(w.count, 1);
		IBST_EXPECT_EQ(w.state, IB_CM_REP_SENT);
		IBST_EXPECT_EQ(w.reason, IB_CM_REJ_CONSUMER_DEFINED);
	} else {
		IBST_FAIL("no REP to reject");
	}
	rx_passive_end(&c);

	/* No send buffer for the REJ: still traced, from REQ_RCVD. */
	if (rx_passive_req(&c)) {
		IBST_EXPECT_EQ(rx_rej_watched(c.id, false, &w, 1), -ENOMEM);
		IBST_EXPECT_EQ(w.count, 1);
		IBST_EXPECT_EQ(w.state, IB_CM_REQ_RCVD);
	} else {
		IBST_FAIL("no REQ to reject");
	}
	rx_passive_end(&c);

	/* Nothing to reject in IDLE: traced, then refused. */
	idle = ib_create_cm_id(rx_dev, rx_handler, NULL);
	IBST_EXPECT_NOT_ERR(idle);
	if (IS_ERR(idle))
		return;
	IBST_EXPECT_EQ(rx_rej_watched(idle, false, &w, 0), -EINVAL);
	IBST_EXPECT_EQ(w.count, 1);
	IBST_EXPECT_EQ(w.state, IB_CM_IDLE);
	ib_destroy_cm_id(idle);
}

/* Our DREQ answered by DREP: TimeWait, then TIMEWAIT_EXIT and IDLE. */
static void drep_timewait_exit(void)
{
	struct rx_active c;
	struct rx_event e = {};

	IBST_EXPECT(rx_active_connect(&c, false));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_dreq(c.id, NULL, 0), 0);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_DREQ_SENT);
	IBST_EXPECT_EQ(rx_send_ids(CM_DREP_ATTR_ID, &c.peer, c.id, 'Z'), 0);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(c.id, IB_CM_DREP_RECEIVED, &e));
	IBST_EXPECT(rx_pdata_is(&e, 'Z'));
	RX_EXPECT_TIMEWAIT_EXIT(c.id, 0);
out:
	rx_active_end(&c);
}

/*
 * Our DREQ that the peer never answers: once its tries are used up the
 * consumer gets DREQ_ERROR with the send's status, and the ID still goes
 * through TimeWait (TIMEWAIT_EXIT, then IDLE).  The report was reserved
 * with the DREQ, after the REQ's reservation had been given back unused.
 */
static void dreq_unanswered(void)
{
	struct rx_active c;
	struct rx_event e = {};

	/* No retries: about 0.4 s per exchange (2 x 67 ms + 268 ms). */
	IBST_EXPECT(rx_active_connect_timed(&c, 16, 0, false));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT_EQ(ib_send_cm_dreq(c.id, NULL, 0), 0);
	IBST_EXPECT(rx_wait_event(c.id, IB_CM_DREQ_ERROR, &e));
	IBST_EXPECT_EQ(e.send_status, IB_WC_RESP_TIMEOUT_ERR);
	RX_EXPECT_TIMEWAIT_EXIT(c.id, 1);
out:
	rx_active_end(&c);
}

/* ib_cm_notify(COMM_EST) establishes from REP_SENT and MRA_REP_RCVD. */
static void notify_comm_est(void)
{
	struct rx_passive c, d;
	struct rx_event e = {};
	long dups;

	IBST_EXPECT(rx_passive_req(&c));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT_EQ(ib_cm_notify(c.id, IB_EVENT_COMM_EST), -EINVAL);
	IBST_EXPECT_EQ(rx_passive_rep(&c), 0);
	IBST_EXPECT_EQ(ib_cm_notify(c.id, IB_EVENT_QP_FATAL), -EINVAL);
	IBST_EXPECT_EQ(ib_cm_notify(c.id, IB_EVENT_COMM_EST), 0);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_ESTABLISHED);
	IBST_EXPECT_EQ(ib_cm_notify(c.id, IB_EVENT_COMM_EST), -EISCONN);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(c.id, IB_CM_USER_ESTABLISHED, NULL));
	/* The RTU arriving late changes nothing. */
	dups = rx_ctr(CM_CTR_RX_DUPS, CM_RTU_ATTR_ID);
	RX_EXPECT_DUP_COUNTED(rx_send_ids(CM_RTU_ATTR_ID, &c.peer, c.id, 'U'),
			      CM_RTU_ATTR_ID, dups + 1);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_RTU_RECEIVED, NULL), 0);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_USER_ESTABLISHED, NULL), 1);
	rx_passive_end(&c);

	IBST_EXPECT(rx_passive_req(&d));
	if (ibst_case_failed()) {
		rx_passive_end(&d);
		goto out;
	}
	IBST_EXPECT_EQ(rx_passive_rep(&d), 0);
	IBST_EXPECT_EQ(rx_send_mra(&d.peer, d.id, CMC_MSG_REP, 20, 'm'), 0);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(d.id, IB_CM_MRA_RECEIVED, &e));
	IBST_EXPECT_EQ(rx_state(d.id), IB_CM_MRA_REP_RCVD);
	IBST_EXPECT_EQ(ib_cm_notify(d.id, IB_EVENT_COMM_EST), 0);
	IBST_EXPECT_EQ(rx_state(d.id), IB_CM_ESTABLISHED);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(d.id, IB_CM_USER_ESTABLISHED, NULL));
	rx_passive_end(&d);
out:
	rx_forget_events();
}

/* PATH_MIG needs an alternate path and an established connection. */
static void notify_path_mig(void)
{
	struct rx_active a, b;

	IBST_EXPECT(rx_active_connect(&a, true));
	IBST_EXPECT(rx_active_connect(&b, false));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT_EQ(ib_cm_notify(a.id, IB_EVENT_PATH_MIG), 0);
	IBST_EXPECT_EQ(a.id->lap_state, IB_CM_LAP_IDLE);
	IBST_EXPECT_EQ(rx_state(a.id), IB_CM_ESTABLISHED);
	IBST_EXPECT_EQ(ib_cm_notify(b.id, IB_EVENT_PATH_MIG), -EINVAL);
	IBST_EXPECT_EQ(b.id->lap_state, IB_CM_LAP_UNINIT);
out:
	rx_active_destroy(&b);
	rx_active_end(&a);
}

/*
 * A REQ that could not be sent announced no path, whichever of
 * ib_send_cm_req()'s allocations failed: the cm_id holds no device
 * reference for the paths it was given, and the connection that a later
 * REQ without an alternate path makes has no alternate path to migrate
 * to.  (On an IB port ib_cm_init_qp_attr() would also give that path as
 * IB_QP_ALT_PATH; RoCE address vectors have no DLID, which it needs.)
 */
static void failed_req_leaves_no_path(void)
{
	unsigned int nth, failed = 0;
	struct rx_active c;
	long refs;
	int ret;

	rx_quiesce();
	refs = rx_dev_refs();
	for (nth = 1; nth <= 16; nth++) {
		if (!rx_active_init(&c, true)) {
			IBST_FAIL("cannot create a cm_id");
			return;
		}
		cm_fault_arm(nth);
		ret = rx_active_send_req(&c, 20, 15, true);
		cm_fault_disarm();
		if (!ret) {
			/* every allocation was made: the REQ went out */
			rx_active_end(&c);
			break;
		}
		failed++;
		IBST_EXPECT_EQ(rx_state(c.id), IB_CM_IDLE);
		if (!cm_test_av_is_clear(c.id, false) ||
		    !cm_test_av_is_clear(c.id, true))
			IBST_FAIL("allocation %u failed: the paths stay: primary %s, alternate %s",
				  nth,
				  cm_test_av_is_clear(c.id, false) ? "clear" : "kept",
				  cm_test_av_is_clear(c.id, true) ? "clear" : "kept");
		if (rx_dev_refs() != refs)
			IBST_FAIL("allocation %u failed: %ld device references, %ld before",
				  nth, rx_dev_refs(), refs);
		/* The same ID connects, this time without an alternate path. */
		IBST_EXPECT_EQ(rx_active_send_req(&c, 20, 15, false), 0);
		IBST_EXPECT_EQ(rx_send_rep(&c.peer, c.id, 'p', 0, 0), 0);
		cm_test_flush();
		IBST_EXPECT(rx_wait_event(c.id, IB_CM_REP_RECEIVED, NULL));
		IBST_EXPECT_EQ(ib_send_cm_rtu(c.id, NULL, 0), 0);
		IBST_EXPECT_EQ(rx_state(c.id), IB_CM_ESTABLISHED);
		ret = ib_cm_notify(c.id, IB_EVENT_PATH_MIG);
		if (ret != -EINVAL)
			IBST_FAIL("allocation %u failed: path migration: %d",
				  nth, ret);
		IBST_EXPECT_EQ(c.id->lap_state, IB_CM_LAP_UNINIT);
		rx_active_end(&c);
	}
	ibst_diag("%u of ib_send_cm_req()'s allocations failed in turn",
		  failed);
	IBST_EXPECT_GT(failed, 0);
	IBST_EXPECT_LE(nth, 16);
}

/* Our DREQ, the peer's DREP, TimeWait run out: the ID is IDLE again. */
static bool rx_active_disconnect(struct rx_active *c)
{
	IBST_EXPECT_EQ(ib_send_cm_dreq(c->id, NULL, 0), 0);
	IBST_EXPECT_EQ(rx_send_ids(CM_DREP_ATTR_ID, &c->peer, c->id, 'Z'), 0);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(c->id, IB_CM_DREP_RECEIVED, NULL));
	RX_EXPECT_TIMEWAIT_EXIT(c->id, 0);
	return !ibst_case_failed();
}

/*
 * An ID that reconnects after TimeWait with a REQ without an alternate
 * path keeps none of its first connection's: its alternate address vector
 * is empty (no port, DLID, P_Key index or timeout for ib_cm_init_qp_attr()
 * to load or re-arm), while its primary one is the new REQ's.
 */
static void reconnect_drops_old_alt_path(void)
{
	struct rx_active c;

	IBST_EXPECT(rx_active_connect(&c, true));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT(!cm_test_av_is_clear(c.id, true));
	if (!rx_active_disconnect(&c))
		goto out;
	IBST_EXPECT_EQ(rx_active_send_req(&c, 20, 15, false), 0);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_REQ_SENT);
	IBST_EXPECT(!cm_test_av_is_clear(c.id, false));
	IBST_EXPECT(cm_test_av_is_clear(c.id, true));
out:
	rx_active_end(&c);
}

/*
 * An ID that migrated to its alternate path, disconnected, and connected
 * again with a REQ without one starts its LAP state over: for RTS,
 * ib_cm_init_qp_attr() moves the QP to RTS instead of loading and
 * re-arming an alternate path (all zero by now) that this REQ never
 * carried.
 */
static void reconnect_starts_lap_state_over(void)
{
	struct ib_qp_attr qa = { .qp_state = IB_QPS_RTS };
	struct rx_active c;
	int mask = 0;

	IBST_EXPECT(rx_active_connect(&c, true));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT_EQ(ib_cm_notify(c.id, IB_EVENT_PATH_MIG), 0);
	IBST_EXPECT_EQ(c.id->lap_state, IB_CM_LAP_IDLE);
	if (!rx_active_disconnect(&c))
		goto out;
	/* The second connection, to another peer, with events of its own. */
	rx_forget_events();
	rx_new_peer(&c.peer);
	IBST_EXPECT_EQ(rx_active_send_req(&c, 20, 15, false), 0);
	IBST_EXPECT_EQ(c.id->lap_state, IB_CM_LAP_UNINIT);
	IBST_EXPECT_EQ(rx_send_rep(&c.peer, c.id, 'q', 0, 0), 0);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(c.id, IB_CM_REP_RECEIVED, NULL));
	IBST_EXPECT_EQ(ib_send_cm_rtu(c.id, NULL, 0), 0);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_ESTABLISHED);
	IBST_EXPECT_EQ(ib_cm_init_qp_attr(c.id, &qa, &mask), 0);
	IBST_EXPECT_EQ(mask & (IB_QP_STATE | IB_QP_ALT_PATH), IB_QP_STATE);
out:
	rx_active_end(&c);
}

/*
 * Alternate path messages are not supported on RoCE: counted, dropped.
 * The LAP is one that the lap_* cases below, with the port switched to
 * take LAPs, see delivered.
 */
static void lap_apr_dropped_on_roce(void)
{
	struct rx_passive c;
	struct cmc_path alt;
	long lap, apr;

	if (!rx_established(&c, false))
		goto out;
	lap = rx_ctr(CM_CTR_RX, CM_LAP_ATTR_ID);
	apr = rx_ctr(CM_CTR_RX, CM_APR_ATTR_ID);
	rx_lap_path(&alt);
	IBST_EXPECT_EQ(rx_send_lap(&c.peer, c.id, c.qpn, &alt, 'L'), 0);
	IBST_EXPECT_EQ(rx_send_lap_apr(CM_APR_ATTR_ID, &c.peer, c.id), 0);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX, CM_LAP_ATTR_ID), lap + 1);
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX, CM_APR_ATTR_ID), apr + 1);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_LAP_RECEIVED, NULL), 0);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_APR_RECEIVED, NULL), 0);
	IBST_EXPECT_EQ(c.id->lap_state, IB_CM_LAP_UNINIT);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_ESTABLISHED);
out:
	rx_established_end(&c);
}

/* ------------------------------------------------------------------ */
/* LAP/APR with the port switched to take them                         */

static unsigned int rx_id_refs(struct ib_cm_id *id)
{
	return refcount_read(&container_of(id, struct cm_id_private, id)->refs);
}

/* The peer's first LAP on the established @c, delivered. */
static bool rx_lap_first(struct rx_passive *c, struct rx_event *e)
{
	struct cmc_path alt;

	rx_lap_path(&alt);
	if (rx_send_lap(&c->peer, c->id, c->qpn, &alt, 'L'))
		return false;
	cm_test_flush();
	return rx_wait_event(c->id, IB_CM_LAP_RECEIVED, e) &&
	       c->id->lap_state == IB_CM_LAP_RCVD;
}

/*
 * A LAP on an established connection: the consumer gets the alternate
 * path as seen from this side (the sender's local end is our destination,
 * the ACK timeout becomes a packet lifetime), the ID is in LAP_RCVD, and
 * ib_cm_init_qp_attr() for RTS loads and re-arms that path.  The alternate
 * AV holds one device reference, which destroying the ID returns.
 *
 * The port is RoCE (rdma_rxe), which has no IB-type GID for the IB path
 * of the LAP: the test build lets the GID the LAP arrived on stand in, and
 * the path becomes RoCE AH attributes with a GRH from the GIDs but no LID
 * and no MAC.  This covers ib_cm's rules, its decoding and conversion of
 * the path and the AV's lifetime, not an alternate path on a real IB link
 * (LIDs in an AH, a QP migrating to it).
 */
static void lap_event_alt_path_and_qp_attr(void)
{
	struct ib_qp_attr qa = { .qp_state = IB_QPS_RTS };
	const struct ib_global_route *grh;
	struct rx_passive c = {};
	struct rx_event e = {};
	long refs = -1;
	int mask = 0;

	if (!rx_established(&c, true))
		goto out;
	rx_quiesce();
	refs = rx_dev_refs();
	IBST_EXPECT(rx_lap_first(&c, &e));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT(rx_pdata_is(&e, 'L'));
	IBST_EXPECT_EQ(e.alt.rec_type, SA_PATH_REC_TYPE_IB);
	IBST_EXPECT_MEMEQ(e.alt.sgid.raw, rx_gid->gid.raw, 16);
	IBST_EXPECT_MEMEQ(e.alt.dgid.raw, rx_far_gid.raw, 16);
	IBST_EXPECT_EQ(be32_to_cpu(sa_path_get_dlid(&e.alt)), 0x1234);
	IBST_EXPECT_EQ(be32_to_cpu(sa_path_get_slid(&e.alt)), 0x0056);
	IBST_EXPECT_EQ(be32_to_cpu(e.alt.flow_label), 0x54321);
	IBST_EXPECT_EQ(e.alt.traffic_class, 0x1c);
	IBST_EXPECT_EQ(e.alt.hop_limit, 3);
	IBST_EXPECT_EQ(e.alt.rate, IB_RATE_10_GBPS);
	IBST_EXPECT_EQ(e.alt.sl, 5);
	IBST_EXPECT_EQ(e.alt.packet_life_time, 16);
	IBST_EXPECT_EQ(be16_to_cpu(e.alt.pkey), 0xffff);
	IBST_EXPECT_EQ(e.alt.mtu, IB_MTU_1024);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_ESTABLISHED);

	IBST_EXPECT_EQ(ib_cm_init_qp_attr(c.id, &qa, &mask), 0);
	IBST_EXPECT_EQ(mask, IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE);
	IBST_EXPECT_EQ(qa.path_mig_state, IB_MIG_REARM);
	IBST_EXPECT_EQ(qa.alt_port_num, rx_port);
	IBST_EXPECT_EQ(qa.alt_timeout, 17);
	IBST_EXPECT_EQ(rdma_ah_get_sl(&qa.alt_ah_attr), 5);
	IBST_EXPECT_NE(rdma_ah_get_ah_flags(&qa.alt_ah_attr) & IB_AH_GRH, 0);
	grh = rdma_ah_read_grh(&qa.alt_ah_attr);
	IBST_EXPECT_MEMEQ(grh->dgid.raw, rx_far_gid.raw, 16);
	IBST_EXPECT_EQ(grh->flow_label, 0x54321);
	IBST_EXPECT_EQ(grh->traffic_class, 0x1c);
	IBST_EXPECT_EQ(grh->hop_limit, 3);
	IBST_EXPECT_EQ(rx_dev_refs(), refs + 1);
out:
	rx_passive_end(&c);
	/* Without the ID, neither its AV nor its alternate AV holds the device. */
	if (refs >= 0)
		IBST_EXPECT_EQ(rx_dev_refs(), refs - 1);
	IBST_EXPECT(rx_lap_switch(false));
}

/* @id's primary ack timeout, the one its TimeWait lasts for. */
static u8 rx_av_timeout(struct ib_cm_id *id)
{
	struct cm_id_private *priv = container_of(id, struct cm_id_private, id);
	u8 timeout;

	spin_lock_irq(&priv->lock);
	timeout = priv->av.timeout;
	spin_unlock_irq(&priv->lock);
	return timeout;
}

/*
 * A LAP moves the primary AV to the port and source the LAP came from,
 * but not its ack timeout: after the peer's DREQ and our DREP the ID
 * stays in TimeWait for as long as it would have without the LAP (about
 * 4 s for the REQ's ack timeout of 20), not for 1 ms.
 */
static void lap_keeps_timewait_length(void)
{
	struct rx_passive c = {};
	struct rx_event e = {};
	u8 timeout;

	if (!rx_established(&c, true))
		goto out;
	timeout = rx_av_timeout(c.id);
	IBST_EXPECT_EQ(timeout, 20);
	IBST_EXPECT(rx_lap_first(&c, &e));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT_EQ(rx_av_timeout(c.id), timeout);
	RX_EXPECT_PEER_DREQ(&c, 'D', NULL);
	IBST_EXPECT_EQ(ib_send_cm_drep(c.id, NULL, 0), 0);
	msleep(RX_QUIET_MS);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_TIMEWAIT);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_TIMEWAIT_EXIT, NULL), 0);
out:
	rx_established_end(&c);
}

/* A LAP repeated while the consumer works on the first is only counted. */
static void lap_repeat_counted_and_dropped(void)
{
	struct rx_passive c = {};
	struct rx_event e = {};
	struct cmc_path alt;
	long dups, mra;

	if (!rx_established(&c, true))
		goto out;
	IBST_EXPECT(rx_lap_first(&c, &e));
	if (ibst_case_failed())
		goto out;
	rx_quiesce();
	dups = rx_ctr(CM_CTR_RX_DUPS, CM_LAP_ATTR_ID);
	mra = rx_ctr(CM_CTR_TX, CM_MRA_ATTR_ID);
	rx_lap_path(&alt);
	RX_EXPECT_DUP_COUNTED(rx_send_lap(&c.peer, c.id, c.qpn, &alt, 'M'),
			      CM_LAP_ATTR_ID, dups + 1);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_LAP_RECEIVED, NULL), 1);
	IBST_EXPECT_EQ(c.id->lap_state, IB_CM_LAP_RCVD);
	/* Nothing to repeat: the consumer sent no MRA. */
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_TX, CM_MRA_ATTR_ID), mra);
out:
	rx_established_end(&c);
}

/*
 * The consumer's MRA for a LAP: refused before any LAP, sent (it comes
 * back over rdma_rxe, so it was on the wire) in LAP_RCVD, or on a newer CM
 * only prepared there, and sent (again) for a repeated LAP; a second one
 * has nothing left to delay.
 */
static void lap_mra_sent_and_repeated(void)
{
	struct rx_passive c = {};
	struct rx_event e = {};
	u8 pd[RX_PDATA];
	struct cmc_path alt;
	long dups, mra, back;

	if (!rx_established(&c, true))
		goto out;
	IBST_EXPECT_EQ(rx_mra(c.id, 18, NULL, 0), -EINVAL);
	IBST_EXPECT(rx_lap_first(&c, &e));
	if (ibst_case_failed())
		goto out;
	rx_quiesce();
	mra = rx_ctr(CM_CTR_TX, CM_MRA_ATTR_ID);
	back = rx_ctr(CM_CTR_RX, CM_MRA_ATTR_ID);
	rx_pdata(pd, 'm');
	IBST_EXPECT_EQ(rx_mra(c.id, 18, pd, sizeof(pd)), 0);
	IBST_EXPECT_EQ(c.id->lap_state, IB_CM_MRA_LAP_SENT);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_ESTABLISHED);
	if (RX_MRA_AT_ONCE) {
		IBST_EXPECT(rx_ctr_rises(CM_CTR_TX, CM_MRA_ATTR_ID, mra));
		IBST_EXPECT(rx_ctr_rises(CM_CTR_RX, CM_MRA_ATTR_ID, back));
	} else {
		rx_quiesce();
		IBST_EXPECT_EQ(rx_ctr(CM_CTR_TX, CM_MRA_ATTR_ID), mra);
	}
	IBST_EXPECT_EQ(rx_mra(c.id, 18, NULL, 0), -EINVAL);
	IBST_EXPECT_EQ(c.id->lap_state, IB_CM_MRA_LAP_SENT);

	rx_quiesce();
	dups = rx_ctr(CM_CTR_RX_DUPS, CM_LAP_ATTR_ID);
	rx_lap_path(&alt);
	RX_EXPECT_DUP_ANSWERED(rx_send_lap(&c.peer, c.id, c.qpn, &alt, 'N'),
			       CM_LAP_ATTR_ID, dups + 1, CM_MRA_ATTR_ID);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_LAP_RECEIVED, NULL), 1);
	IBST_EXPECT_EQ(c.id->lap_state, IB_CM_MRA_LAP_SENT);
out:
	rx_established_end(&c);
}

/*
 * A LAP is for an established connection only: before the RTU and after
 * the peer's DREQ it is dropped, and nothing it would have set up stays
 * (no event, no LAP state, no device reference).  A LAP the consumer has
 * not answered does not hold off the peer's DREQ.
 */
static void lap_outside_established_dropped(void)
{
	struct rx_passive c = {};
	struct rx_event e = {};
	struct cmc_path alt;
	long refs;

	IBST_EXPECT(rx_lap_switch(true));
	IBST_EXPECT(rx_passive_req(&c));
	if (ibst_case_failed())
		goto out;
	IBST_EXPECT_EQ(rx_passive_rep(&c), 0);
	rx_quiesce();
	refs = rx_dev_refs();
	rx_lap_path(&alt);
	IBST_EXPECT_EQ(rx_send_lap(&c.peer, c.id, c.qpn, &alt, 'S'), 0);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_LAP_RECEIVED, NULL), 0);
	IBST_EXPECT_EQ(c.id->lap_state, IB_CM_LAP_UNINIT);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_REP_SENT);
	IBST_EXPECT_EQ(rx_dev_refs(), refs);

	IBST_EXPECT_EQ(rx_send_ids(CM_RTU_ATTR_ID, &c.peer, c.id, 'u'), 0);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(c.id, IB_CM_RTU_RECEIVED, NULL));
	IBST_EXPECT_EQ(rx_send_lap(&c.peer, c.id, c.qpn, &alt, 'L'), 0);
	cm_test_flush();
	IBST_EXPECT(rx_wait_event(c.id, IB_CM_LAP_RECEIVED, &e));
	IBST_EXPECT(rx_pdata_is(&e, 'L'));
	RX_EXPECT_PEER_DREQ(&c, 'D', NULL);
	IBST_EXPECT_EQ(rx_send_lap(&c.peer, c.id, c.qpn, &alt, 'T'), 0);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_LAP_RECEIVED, NULL), 1);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_DREQ_RCVD);
out:
	rx_passive_end(&c);
	IBST_EXPECT(rx_lap_switch(false));
}

/*
 * A LAP whose alternate path starts at a GID this host does not have
 * cannot become an address vector: it is dropped, and neither the ID nor
 * the device keeps a reference the handler took on the way (the AV it had
 * built to answer the sender included).  The connection still takes a
 * good LAP after it (so the bad one did reach the LAP rules), and the ID
 * can still be destroyed.
 */
static void lap_unaddressable_path_leaves_no_ref(void)
{
	struct rx_passive c = {};
	struct rx_event e = {};
	struct cmc_path alt;
	unsigned int id_refs;
	long refs = -1, rx;

	if (!rx_established(&c, true))
		goto out;
	rx_quiesce();
	refs = rx_dev_refs();
	id_refs = rx_id_refs(c.id);
	rx = rx_ctr(CM_CTR_RX, CM_LAP_ATTR_ID);
	rx_lap_path(&alt);
	alt.remote_gid = rx_far_gid;
	IBST_EXPECT_EQ(rx_send_lap(&c.peer, c.id, c.qpn, &alt, 'B'), 0);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX, CM_LAP_ATTR_ID), rx + 1);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_LAP_RECEIVED, NULL), 0);
	IBST_EXPECT_EQ(c.id->lap_state, IB_CM_LAP_UNINIT);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_ESTABLISHED);
	IBST_EXPECT_EQ(rx_dev_refs(), refs);
	IBST_EXPECT_EQ(rx_id_refs(c.id), id_refs);
	if (rx_id_refs(c.id) != id_refs) {
		/* Destroying it would wait for ever: leave it (and leak). */
		ibst_diag("cm_id %p kept a reference; not destroyed", c.id);
		c.id = NULL;
		refs = -1;
		goto out;
	}
	IBST_EXPECT(rx_lap_first(&c, &e));
out:
	rx_passive_end(&c);
	if (refs >= 0)
		IBST_EXPECT_EQ(rx_dev_refs(), refs - 1);
	IBST_EXPECT(rx_lap_switch(false));
}

/*
 * An APR answers a LAP sent by this side, which never sends one (the API
 * has no LAP): before any LAP and after the peer's own LAP it is dropped.
 */
static void apr_without_our_lap_dropped(void)
{
	struct rx_passive c = {};
	struct rx_event e = {};
	long rx;

	if (!rx_established(&c, true))
		goto out;
	rx = rx_ctr(CM_CTR_RX, CM_APR_ATTR_ID);
	IBST_EXPECT_EQ(rx_send_lap_apr(CM_APR_ATTR_ID, &c.peer, c.id), 0);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX, CM_APR_ATTR_ID), rx + 1);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_APR_RECEIVED, NULL), 0);
	IBST_EXPECT_EQ(c.id->lap_state, IB_CM_LAP_UNINIT);

	IBST_EXPECT(rx_lap_first(&c, &e));
	IBST_EXPECT_EQ(rx_send_lap_apr(CM_APR_ATTR_ID, &c.peer, c.id), 0);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX, CM_APR_ATTR_ID), rx + 2);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_APR_RECEIVED, NULL), 0);
	IBST_EXPECT_EQ(c.id->lap_state, IB_CM_LAP_RCVD);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_ESTABLISHED);
out:
	rx_established_end(&c);
}

/* ------------------------------------------------------------------ */
/* A consumer that gives its cm_id back                                */

/* Answer the next @type event with a non-zero return. */
static void rx_drop_on(enum ib_cm_event_type type)
{
	unsigned long flags;

	spin_lock_irqsave(&rx_lock, flags);
	rx_drop_type = type;
	rx_dropped = NULL;
	spin_unlock_irqrestore(&rx_lock, flags);
}

static struct ib_cm_id *rx_dropped_id(void)
{
	struct ib_cm_id *id;
	unsigned long flags;

	spin_lock_irqsave(&rx_lock, flags);
	id = rx_dropped;
	spin_unlock_irqrestore(&rx_lock, flags);
	return id;
}

/*
 * @id was given back with @type: the CM destroys it without further help,
 * while the thread that delivered the event goes on.  Seen from here: the
 * device references of its address vectors come back (down to @refs) and
 * no later event reaches it.  Only then are ib_cm's workers flushed, which
 * would wait for ever on a destruction stuck in one of them.
 */
static bool rx_drop_done(struct ib_cm_id *id, enum ib_cm_event_type type,
			 long refs)
{
	unsigned int i, later = 0, ms;
	unsigned long flags;
	bool full;
	long now;

	wait_event_timeout(rx_wq, rx_dropped_id() == id,
			   msecs_to_jiffies(RX_WAIT_MS));
	if (rx_dropped_id() != id) {
		IBST_FAIL("no event %d to give the cm_id back with", type);
		rx_drop_on(-1);
		/* Still the check's own: the caller destroys it. */
		return false;
	}
	for (ms = 0; ms < RX_WAIT_MS; ms += 20) {
		now = rx_dev_refs();
		if (now <= refs)
			break;
		msleep(20);
	}
	IBST_EXPECT_EQ(now, refs);
	if (now != refs)
		return true;
	rx_quiesce();
	spin_lock_irqsave(&rx_lock, flags);
	full = rx_nevents >= RX_MAX_EVENTS;
	for (i = rx_drop_at + 1; i < rx_nevents; i++)
		later += rx_events[i].id == id;
	spin_unlock_irqrestore(&rx_lock, flags);
	if (full)
		IBST_FAIL("more than %d events: later ones not seen",
			  RX_MAX_EVENTS);
	IBST_EXPECT_EQ(later, 0);
	return true;
}

/* Given back at the RTU that establishes it (the CM then disconnects). */
static void drop_on_rtu_destroys_and_disconnects(void)
{
	long refs = rx_dev_refs(), dreqs = rx_ctr(CM_CTR_TX, CM_DREQ_ATTR_ID);
	struct rx_passive c;

	IBST_EXPECT(rx_passive_req(&c) && !rx_passive_rep(&c));
	if (ibst_case_failed())
		goto out;
	rx_drop_on(IB_CM_RTU_RECEIVED);
	IBST_EXPECT_EQ(rx_send_ids(CM_RTU_ATTR_ID, &c.peer, c.id, 'u'), 0);
	if (rx_drop_done(c.id, IB_CM_RTU_RECEIVED, refs))
		c.id = NULL;
	IBST_EXPECT(rx_ctr_rises(CM_CTR_TX, CM_DREQ_ATTR_ID, dreqs));
out:
	rx_passive_end(&c);
}

/* Given back at the peer's DREQ (the CM answers it with a DREP). */
static void drop_on_dreq_destroys_and_answers(void)
{
	long refs = rx_dev_refs(), dreps = rx_ctr(CM_CTR_TX, CM_DREP_ATTR_ID);
	struct rx_passive c;

	if (!rx_established(&c, false))
		goto out;
	rx_drop_on(IB_CM_DREQ_RECEIVED);
	IBST_EXPECT_EQ(rx_send_dreq(&c.peer, c.id->local_id, c.qpn, 'x'), 0);
	if (rx_drop_done(c.id, IB_CM_DREQ_RECEIVED, refs))
		c.id = NULL;
	IBST_EXPECT(rx_ctr_rises(CM_CTR_TX, CM_DREP_ATTR_ID, dreps));
out:
	rx_established_end(&c);
}

/* Given back at a LAP (the LAP rules run through the test switch). */
static void drop_on_lap_destroys(void)
{
	struct rx_passive c;
	struct cmc_path alt;

	if (!rx_established(&c, true))
		goto out;
	rx_drop_on(IB_CM_LAP_RECEIVED);
	rx_lap_path(&alt);
	IBST_EXPECT_EQ(rx_send_lap(&c.peer, c.id, c.qpn, &alt, 'L'), 0);
	if (rx_drop_done(c.id, IB_CM_LAP_RECEIVED, c.dev_refs))
		c.id = NULL;
out:
	rx_established_end(&c);
}

/* Given back when ib_cm_notify() establishes it. */
static void drop_on_user_established_destroys(void)
{
	long refs = rx_dev_refs();
	struct rx_passive c;

	IBST_EXPECT(rx_passive_req(&c) && !rx_passive_rep(&c));
	if (ibst_case_failed())
		goto out;
	rx_drop_on(IB_CM_USER_ESTABLISHED);
	IBST_EXPECT_EQ(ib_cm_notify(c.id, IB_EVENT_COMM_EST), 0);
	if (rx_drop_done(c.id, IB_CM_USER_ESTABLISHED, refs))
		c.id = NULL;
out:
	rx_passive_end(&c);
}

/* Given back when TimeWait ends (reported by the TimeWait timer). */
static void drop_on_timewait_exit_destroys(void)
{
	long refs = rx_dev_refs();
	struct rx_active c;

	IBST_EXPECT(rx_active_connect(&c, false));
	if (ibst_case_failed())
		goto out;
	rx_drop_on(IB_CM_TIMEWAIT_EXIT);
	IBST_EXPECT_EQ(ib_send_cm_dreq(c.id, NULL, 0), 0);
	IBST_EXPECT_EQ(rx_send_ids(CM_DREP_ATTR_ID, &c.peer, c.id, 'Z'), 0);
	if (rx_drop_done(c.id, IB_CM_TIMEWAIT_EXIT, refs))
		c.id = NULL;
out:
	rx_active_end(&c);
}

/*
 * Given back when the DREQ times out: reported from the MAD layer's send
 * completion, whose worker completes the sends the destruction waits for.
 */
static void drop_on_dreq_error_destroys(void)
{
	long refs = rx_dev_refs();
	struct rx_active c;

	IBST_EXPECT(rx_active_connect_timed(&c, 16, 0, false));
	if (ibst_case_failed())
		goto out;
	rx_drop_on(IB_CM_DREQ_ERROR);
	IBST_EXPECT_EQ(ib_send_cm_dreq(c.id, NULL, 0), 0);
	if (rx_drop_done(c.id, IB_CM_DREQ_ERROR, refs))
		c.id = NULL;
out:
	rx_active_end(&c);
}

/* ------------------------------------------------------------------ */
/* Shared listeners                                                    */

#define RX_SHARE_ROUNDS	20000

struct rx_sharer {
	atomic_t *ready;
	struct completion done;
	__be64 sid;
	unsigned int shared;
	unsigned int not_listening;
	int err;
};

static int rx_share_handler(struct ib_cm_id *id, const struct ib_cm_event *ev)
{
	return 0;
}

/*
 * Take a share of the service ID's listener and give it back, again and
 * again; every listener handed out must be listening.
 */
static int rx_sharer_fn(void *arg)
{
	struct rx_sharer *s = arg;
	struct ib_cm_id *id;
	unsigned int i;

	/* Start together, so that the two loops overlap. */
	atomic_inc(s->ready);
	while (atomic_read(s->ready) < 2)
		cond_resched();
	for (i = 0; i < RX_SHARE_ROUNDS && !s->err; i++) {
		id = ib_cm_insert_listen(rx_dev, rx_share_handler, s->sid);
		if (IS_ERR(id)) {
			s->err = PTR_ERR(id);
			break;
		}
		if (READ_ONCE(id->state) != IB_CM_LISTEN)
			s->not_listening++;
		if (refcount_read(&container_of(id, struct cm_id_private,
						id)->refs) > 1)
			s->shared++;
		ib_destroy_cm_id(id);
		cond_resched();
	}
	complete(&s->done);
	return 0;
}

/*
 * ib_cm_insert_listen() from two threads on one service ID: a thread
 * either creates the listener or shares the other's, and the last share
 * takes it out of the listen tree in the same step that drops the share,
 * so a listener on its way out is never shared (it would get no REQ, and
 * its sharer's destroy would destroy it a second time).  Afterwards the
 * service ID is free for an exclusive listener again.
 */
static void shared_listener_race(void)
{
	struct rx_sharer s[2] = {};
	struct task_struct *t[2];
	atomic_t ready = ATOMIC_INIT(0);
	struct ib_cm_id *id;
	__be64 sid = rx_sid();
	int i;

	for (i = 0; i < 2; i++) {
		s[i].ready = &ready;
		init_completion(&s[i].done);
		s[i].sid = sid;
		t[i] = kthread_run(rx_sharer_fn, &s[i], "cm_rx_share%d", i);
		if (IS_ERR(t[i])) {
			IBST_FAIL("kthread_run: %pe", t[i]);
			s[i].err = PTR_ERR(t[i]);
			atomic_inc(&ready);
			complete(&s[i].done);
		}
	}
	for (i = 0; i < 2; i++) {
		wait_for_completion(&s[i].done);
		ibst_diag("thread %d: %u of %u rounds shared", i, s[i].shared,
			  RX_SHARE_ROUNDS);
		IBST_EXPECT_EQ(s[i].err, 0);
		IBST_EXPECT_EQ(s[i].not_listening, 0);
	}
	id = ib_create_cm_id(rx_dev, rx_handler, NULL);
	if (IS_ERR(id)) {
		IBST_FAIL("ib_create_cm_id: %pe", id);
		return;
	}
	IBST_EXPECT_EQ(ib_cm_listen(id, sid), 0);
	ib_destroy_cm_id(id);
}

/* ------------------------------------------------------------------ */
/* Destroying a cm_id whose references do not come back                */

/* The distribution's ib_cm waits this long in every case. */
#define RX_DESTROY_WAIT_MIN_MS	10000
/* This ib_cm waits at most this long before the first warning. */
#define RX_DESTROY_WAIT_MAX_MS	(5 * 60 * 1000)

/* A cm_id's timeout_ms and max_cm_retries, read under its lock. */
static void rx_cm_timeouts(struct ib_cm_id *id, int *timeout_ms,
			   unsigned int *retries)
{
	struct cm_id_private *priv = container_of(id, struct cm_id_private, id);
	unsigned long flags;

	spin_lock_irqsave(&priv->lock, flags);
	*timeout_ms = priv->timeout_ms;
	*retries = priv->max_cm_retries;
	spin_unlock_irqrestore(&priv->lock, flags);
}

/*
 * ib_destroy_cm_id() waits for the cm_id's last reference, warning each
 * time this wait runs out.  A send in flight holds a reference until the
 * MAD layer gives up on it: the first send and max_cm_retries more, each
 * waiting timeout_ms, which the wait covers with a quarter to spare; never
 * shorter than the distribution's fixed wait, never longer than five
 * minutes, and in test builds no longer than the cap the harness sets.
 */
static void destroy_wait_follows_cm_timeouts(void)
{
	struct cm_id_private *priv;
	unsigned int ms, retries, cap;
	struct rx_active a, b;
	unsigned long flags;
	int timeout_ms;

	/* The harness's cap (10 s or more) would hide the longer waits. */
	cap = cm_test_destroy_wait_cap(0);
	ibst_diag("the harness's cap: %u ms", cap);

	/* Nothing was ever sent. */
	IBST_EXPECT(rx_active_init(&a, false));
	if (a.id)
		IBST_EXPECT_EQ(cm_test_destroy_wait_ms(a.id),
			       RX_DESTROY_WAIT_MIN_MS);
	rx_active_destroy(&a);

	/* 16 sends of about 4.4 s each. */
	IBST_EXPECT(rx_active_req(&a, 20, 15, false));
	/* 3 sends of about 0.1 s each. */
	IBST_EXPECT(rx_active_req(&b, 8, 2, false));
	if (ibst_case_failed())
		goto out;
	rx_cm_timeouts(a.id, &timeout_ms, &retries);
	ms = cm_test_destroy_wait_ms(a.id);
	ibst_diag("REQ: %d ms a send, %u retries: the wait is %u ms",
		  timeout_ms, retries, ms);
	IBST_EXPECT_EQ(ms, 16 * timeout_ms * 5 / 4);
	IBST_EXPECT_GT(ms, RX_DESTROY_WAIT_MIN_MS);
	rx_cm_timeouts(b.id, &timeout_ms, &retries);
	IBST_EXPECT_LT(3 * timeout_ms * 5 / 4, RX_DESTROY_WAIT_MIN_MS);
	IBST_EXPECT_EQ(cm_test_destroy_wait_ms(b.id), RX_DESTROY_WAIT_MIN_MS);

	/* The test builds' cap shortens even the distribution's 10 s. */
	cm_test_destroy_wait_cap(RX_DESTROY_WAIT_MIN_MS);
	IBST_EXPECT_EQ(cm_test_destroy_wait_ms(a.id), RX_DESTROY_WAIT_MIN_MS);
	cm_test_destroy_wait_cap(1000);
	IBST_EXPECT_EQ(cm_test_destroy_wait_ms(b.id), 1000);
	cm_test_destroy_wait_cap(0);

	/*
	 * The largest values a peer's REQ can give a passive ID: 2^23 ms a
	 * send, 15 retries (about 46 h).  Set here on an active ID, which
	 * has sent nothing else since.
	 */
	priv = container_of(a.id, struct cm_id_private, id);
	spin_lock_irqsave(&priv->lock, flags);
	priv->timeout_ms = 1 << 23;
	priv->max_cm_retries = 15;
	spin_unlock_irqrestore(&priv->lock, flags);
	IBST_EXPECT_EQ(cm_test_destroy_wait_ms(a.id), RX_DESTROY_WAIT_MAX_MS);
out:
	cm_test_destroy_wait_cap(cap);
	rx_active_destroy(&b);
	rx_active_end(&a);
}

/*
 * What a probe on cm_destroy_id_wait_timeout() saw of the watched ID:
 * its arguments and the ID as the warning was made (on entry), and
 * whether the call has returned, its warning logged (done).
 */
static struct {
	struct ib_cm_id *id;
	bool entered;
	unsigned int done;
	unsigned long first_at;
	int old_state;
	int state;
	unsigned int refs;
} rx_dwt;

#if IS_ENABLED(CONFIG_KRETPROBES) && \
	IS_ENABLED(CONFIG_HAVE_REGS_AND_STACK_ACCESS_API)
static int rx_dwt_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct ib_cm_id *id = (void *)regs_get_kernel_argument(regs, 0);

	/* Not the watched ID, or not its first call: no return handler. */
	if (id != READ_ONCE(rx_dwt.id) || rx_dwt.entered)
		return 1;
	rx_dwt.old_state = (int)regs_get_kernel_argument(regs, 1);
	rx_dwt.state = id->state;
	rx_dwt.refs = refcount_read(&container_of(id, struct cm_id_private,
						  id)->refs);
	rx_dwt.first_at = jiffies;
	rx_dwt.entered = true;
	return 0;
}

static int rx_dwt_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	WRITE_ONCE(rx_dwt.done, 1);
	return 0;
}

static struct kretprobe rx_dwt_probe = {
	.kp.symbol_name = "cm_destroy_id_wait_timeout",
	.entry_handler = rx_dwt_entry,
	.handler = rx_dwt_return,
	.maxactive = 2,
};

static int rx_dwt_attach(void)
{
	/* As register_kretprobe() wants it, even after an earlier run. */
	rx_dwt_probe.kp.addr = NULL;
	rx_dwt_probe.kp.flags = 0;
	return register_kretprobe(&rx_dwt_probe);
}

static void rx_dwt_detach(void)
{
	unregister_kretprobe(&rx_dwt_probe);
}
#else
static int rx_dwt_attach(void)
{
	return -EOPNOTSUPP;
}

static void rx_dwt_detach(void)
{
}
#endif

struct rx_destroyer {
	struct ib_cm_id *id;
	struct completion done;
};

static int rx_destroyer_fn(void *arg)
{
	struct rx_destroyer *d = arg;

	ib_destroy_cm_id(d->id);
	kthread_complete_and_exit(&d->done, 0);
}

/*
 * The test harness fails a run whose kernel log has a splat; a line of
 * RX_EXPECT_ONCE followed by a text lets exactly one line with that text
 * (tools/testing/vm/splat-patterns) through.
 */
#define RX_EXPECT_ONCE "vm-run: expect once: "

/*
 * A destroy that waits too long is reported as the distribution's ib_cm
 * reports it: by a call of cm_destroy_id_wait_timeout(), never inlined,
 * which a probe can attach to, with the ID and the state it was destroyed
 * from, and in the kernel log in the distribution's words, with the state
 * it is in and the references still held.  The test builds' cap makes the
 * wait short; the one warning is announced to the harness.  A kernel
 * without kretprobes (the debug tier's) checks the warning, its time and
 * its text, not what a probe sees.
 */
static void destroy_timeout_reports_old_state_and_refs(void)
{
	struct rx_destroyer d = { .id = NULL };
	unsigned int ms, cap, warned;
	unsigned long start, seen = 0;
	struct task_struct *t;
	bool probed;
	int ret;

	d.id = ib_create_cm_id(rx_dev, rx_handler, NULL);
	IBST_EXPECT_NOT_ERR(d.id);
	if (IS_ERR(d.id))
		return;
	IBST_EXPECT_EQ(ib_cm_listen(d.id, rx_sid()), 0);
	/* Seconds, not the 10 s of a listener: the case runs everywhere. */
	cap = cm_test_destroy_wait_cap(2000);
	ms = cm_test_destroy_wait_ms(d.id);
	IBST_EXPECT_EQ(ms, 2000);
	memset(&rx_dwt, 0, sizeof(rx_dwt));
	WRITE_ONCE(rx_dwt.id, d.id);
	ret = rx_dwt_attach();
	probed = !ret;
	if (ret == -EOPNOTSUPP)
		ibst_diag("no kretprobes: a probe's view of the call is not checked");
	else if (ret)
		IBST_FAIL("cannot probe cm_destroy_id_wait_timeout(): %d", ret);
	warned = cm_test_destroy_timeouts();

	/*
	 * A reference the destroy has to wait for.  The warning its wait
	 * ends with is announced, word for word: the distribution's text,
	 * with the listener's state as the old one and the reference held
	 * here.  A warning worded otherwise fails the harness's log check.
	 */
	cm_test_id_hold(d.id);
	pr_info(RX_EXPECT_ONCE "cm_destroy_id_wait_timeout: cm_id=%p timed out. state %d -> %d, refcnt=%d\n",
		d.id, IB_CM_LISTEN, IB_CM_IDLE, 1);
	init_completion(&d.done);
	start = jiffies;
	t = kthread_run(rx_destroyer_fn, &d, "cm_rx_destroy");
	if (IS_ERR(t)) {
		IBST_FAIL("kthread_run: %pe", t);
		cm_test_id_release(d.id);
		ib_destroy_cm_id(d.id);
		goto detach;
	}
	/*
	 * Its first wait runs out.  The reference goes only once the call
	 * that warns has logged its warning, with the reference counted.
	 */
	while (cm_test_destroy_timeouts() == warned &&
	       time_before(jiffies, start + msecs_to_jiffies(ms + RX_WAIT_MS)))
		msleep(20);
	seen = jiffies;
	cm_test_id_release(d.id);
	wait_for_completion(&d.done);
detach:
	cm_test_destroy_wait_cap(cap);
	if (probed)
		rx_dwt_detach();
	if (cm_test_destroy_timeouts() == warned) {
		IBST_FAIL("no warning of the destroy in %u ms", ms + RX_WAIT_MS);
		return;
	}
	IBST_EXPECT_EQ(cm_test_destroy_timeouts() - warned, 1);
	IBST_EXPECT_GE(jiffies_to_msecs(seen - start) + 20, ms);
	if (!probed)
		return;
	/* The destroy has returned: so has the call the probe saw. */
	IBST_EXPECT_EQ(READ_ONCE(rx_dwt.done), 1);
	IBST_EXPECT_EQ(rx_dwt.old_state, IB_CM_LISTEN);
	IBST_EXPECT_EQ(rx_dwt.state, IB_CM_IDLE);
	IBST_EXPECT_EQ(rx_dwt.refs, 1);
	IBST_EXPECT_GE(jiffies_to_msecs(rx_dwt.first_at - start) + 20, ms);
}

/*
 * Destroy @id from a kthread while send completions are held back
 * (cm_test_park_sends()), at least @parked of them once the destroy has
 * sent what it sends (a DREQ that loops back to this CM is answered, and
 * that answer is held too): as a device that lost them in a function
 * reset.  The newer
 * CM's sends that expect no answer hold no reference to their cm_id, and
 * the destroy returns at once.  On 6.1 and 6.12, as the distribution's
 * there, each send holds one and the destroy waits for its completion:
 * still waiting a second later (well inside its first 10 s wait), it
 * returns once the completions are given back.
 */
static void rx_destroy_while_parked(struct ib_cm_id *id, unsigned int parked)
{
	struct rx_destroyer d = { .id = id };
	struct task_struct *t;
	unsigned long until;
	bool returned;

	init_completion(&d.done);
	t = kthread_run(rx_destroyer_fn, &d, "cm_rx_destroy");
	if (IS_ERR(t)) {
		IBST_FAIL("kthread_run: %pe", t);
		cm_test_park_sends(false);
		ib_destroy_cm_id(id);
		return;
	}
	until = jiffies + msecs_to_jiffies(RX_WAIT_MS);
	while (cm_test_parked_sends() < parked && time_before(jiffies, until))
		msleep(20);
	IBST_EXPECT_GE(cm_test_parked_sends(), parked);
#ifdef HAVE_IB_PREPARE_CM_MRA
	returned = wait_for_completion_timeout(&d.done,
					       msecs_to_jiffies(RX_WAIT_MS));
	IBST_EXPECT(returned);
#else
	returned = wait_for_completion_timeout(&d.done,
					       msecs_to_jiffies(1000));
	IBST_EXPECT(!returned);
#endif
	IBST_EXPECT_GE(cm_test_park_sends(false), parked);
	if (!returned)
		wait_for_completion(&d.done);
}

/* The DREP that answered the peer's DREQ is lost; the ID is destroyed. */
static void destroy_and_lost_untracked_send(void)
{
	struct rx_passive c = {};
	struct ib_cm_id *id;
	unsigned int cap;

	/* No cap from the harness: the destroy's first wait is its own. */
	cap = cm_test_destroy_wait_cap(0);
	if (!rx_established(&c, false))
		goto out;
	RX_EXPECT_PEER_DREQ(&c, 'd', NULL);
	if (ibst_case_failed())
		goto out;
	rx_quiesce();
	cm_test_park_sends(true);
	IBST_EXPECT_EQ(ib_send_cm_drep(c.id, NULL, 0), 0);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_TIMEWAIT);
	id = c.id;
	c.id = NULL;
	rx_destroy_while_parked(id, 1);
out:
	cm_test_park_sends(false);
	cm_test_destroy_wait_cap(cap);
	rx_established_end(&c);
}

/*
 * An ESTABLISHED ID is destroyed and the DREQ it sends is lost: on the
 * newer CM that DREQ expects no answer; on 6.1 and 6.12 it is tracked,
 * then cancelled, and its completion is waited for.
 */
static void destroy_established_and_lost_dreq(void)
{
	struct rx_passive c = {};
	struct ib_cm_id *id;
	unsigned int cap;
	long dreqs;

	cap = cm_test_destroy_wait_cap(0);
	if (!rx_established(&c, false))
		goto out;
	rx_quiesce();
	dreqs = rx_ctr(CM_CTR_TX, CM_DREQ_ATTR_ID);
	cm_test_park_sends(true);
	id = c.id;
	c.id = NULL;
	rx_destroy_while_parked(id, 1);
	/* the one DREQ went out, and was never retried */
	rx_quiesce();
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_TX, CM_DREQ_ATTR_ID), dreqs + 1);
out:
	cm_test_park_sends(false);
	cm_test_destroy_wait_cap(cap);
	rx_established_end(&c);
}

/* ------------------------------------------------------------------ */
/* The MAD layer's flow control                                        */

/*
 * 7.2's MAD layer holds back a CM agent's sends that expect an answer
 * once a quarter of ib_core's recv_queue_size of them wait for one; each
 * waits in the agent's backlog until an earlier one ends.  6.1 and 6.12
 * have no such limit.  (The blocks of 7.2's CM contract below stand for
 * that MAD layer: of the kernels this builds against, 7.2 has both.)
 */
#define RX_RECVQ_PARAM	"/sys/module/ib_core/parameters/recv_queue_size"

/* ib_core's recv_queue_size, or 0 when it cannot be read. */
static unsigned int rx_mad_recvq_size(void)
{
	char buf[16] = {};
	struct file *f;
	loff_t pos = 0;
	unsigned int n;
	ssize_t len;

	f = filp_open(RX_RECVQ_PARAM, O_RDONLY, 0);
	if (IS_ERR(f))
		return 0;
	len = kernel_read(f, buf, sizeof(buf) - 1, &pos);
	filp_close(f, NULL);
	if (len <= 0 || kstrtouint(strim(buf), 10, &n))
		return 0;
	return n;
}

/*
 * A REP expects the peer's RTU, so it is such a send, and a burst of
 * REQs to peers that do not answer must not hold up the answer to a
 * peer that asked: the newer CM sends REPs on a second agent of the
 * port, which has no flow control.  With the limit's worth of REQs out
 * to the GID nobody has (their answer timeout far beyond the case, so
 * that none is retried meanwhile), a DREQ to ourselves is held (on 6.1
 * and 6.12 it goes out) while a REP to ourselves, sent after it on the
 * same QP, is not; the DREQ goes out once the REQs are destroyed.
 */
static void rep_not_held_by_solicited_sends(void)
{
	struct rx_passive c = {}, p = {};
	struct rx_active *fill = NULL;
	unsigned int n, limit;
	long dreqs, reps;

	limit = rx_mad_recvq_size() / 4;
	if (!limit) {
		IBST_FAIL("cannot read %s", RX_RECVQ_PARAM);
		return;
	}
	fill = kcalloc(limit, sizeof(*fill), GFP_KERNEL);
	if (!fill) {
		IBST_FAIL("no memory for %u connections", limit);
		return;
	}
	if (!rx_established(&c, false))
		goto out;
	/* 4.096 us << 26: each REQ waits over four minutes for an answer */
	for (n = 0; n < limit; n++)
		if (!rx_active_req(&fill[n], 26, 1, false))
			break;
	IBST_EXPECT_EQ(n, limit);
	if (ibst_case_failed())
		goto out;
	rx_quiesce();
	dreqs = rx_ctr(CM_CTR_RX, CM_DREQ_ATTR_ID);
	reps = rx_ctr(CM_CTR_RX, CM_REP_ATTR_ID);
	IBST_EXPECT_EQ(ib_send_cm_dreq(c.id, NULL, 0), 0);
	if (!rx_passive_req(&p)) {
		IBST_FAIL("no REQ to answer");
		goto out;
	}
	IBST_EXPECT_EQ(rx_passive_rep(&p), 0);
	IBST_EXPECT(rx_ctr_rises(CM_CTR_RX, CM_REP_ATTR_ID, reps));
	/* the CM counts what QP1 delivers in order: a DREQ sent is in */
#ifdef HAVE_IB_PREPARE_CM_MRA
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX, CM_DREQ_ATTR_ID), dreqs);
#else
	IBST_EXPECT_GT(rx_ctr(CM_CTR_RX, CM_DREQ_ATTR_ID), dreqs);
#endif
	for (n = 0; n < limit; n++)
		rx_active_destroy(&fill[n]);
	IBST_EXPECT(rx_ctr_rises(CM_CTR_RX, CM_DREQ_ATTR_ID, dreqs));
out:
	for (n = 0; n < limit; n++)
		rx_active_destroy(&fill[n]);
	kfree(fill);
	rx_passive_end(&p);
	rx_established_end(&c);
}

/*
 * A new REQ from a peer QP that is still connected to us: refuse it as
 * stale and disconnect the old connection.
 */
static void stale_req_rejected(void)
{
	struct rx_passive c;
	struct rx_peer again;
	long rej;

	if (!rx_established(&c, false))
		goto out;
	rx_quiesce();
	rej = rx_ctr(CM_CTR_TX, CM_REJ_ATTR_ID);
	/* Same CA and QP, new communication ID: the peer restarted. */
	again = c.peer;
	again.comm_id += 0x10000;
	again.tid = cpu_to_be64(be64_to_cpu(again.tid) + 0x10000);
	IBST_EXPECT_EQ(rx_rej_watch(), 0);
	IBST_EXPECT_EQ(rx_send_req(&again, c.sid, 's', 0, 0), 0);
	cm_test_flush();
	IBST_EXPECT(rx_ctr_rises(CM_CTR_TX, CM_REJ_ATTR_ID, rej));
	RX_EXPECT_ONE_REJ(CMC_MSG_REQ, again.tid, IB_CM_REJ_STALE_CONN, 0,
			  again.comm_id);
	IBST_EXPECT_EQ(rx_count(NULL, IB_CM_REQ_RECEIVED, NULL), 1);
	/*
	 * Our DREQ goes to our own GID, where the CM finds no such ID and
	 * answers with a DREP for it: DREQ_SENT, then TimeWait.
	 */
	IBST_EXPECT(rx_leaves(c.id, IB_CM_ESTABLISHED));
	IBST_EXPECT(rx_state(c.id) == IB_CM_DREQ_SENT ||
		    rx_state(c.id) == IB_CM_TIMEWAIT);
	IBST_EXPECT(rx_state(c.id) == IB_CM_DREQ_SENT ||
		    rx_count(c.id, IB_CM_DREP_RECEIVED, NULL) == 1);
out:
	rx_established_end(&c);
}

/* The same for a REP: refuse it, disconnect the old connection. */
static void stale_rep_rejected(void)
{
	struct rx_active old, c;
	long rej;

	IBST_EXPECT(rx_active_connect(&old, false));
	IBST_EXPECT(rx_active_req(&c, 20, 15, false));
	if (ibst_case_failed())
		goto out;
	rx_quiesce();
	rej = rx_ctr(CM_CTR_TX, CM_REJ_ATTR_ID);
	c.peer.guid = old.peer.guid;
	c.peer.qpn = old.peer.qpn;
	IBST_EXPECT_EQ(rx_rej_watch(), 0);
	IBST_EXPECT_EQ(rx_send_rep(&c.peer, c.id, 's', 0, 0), 0);
	cm_test_flush();
	IBST_EXPECT(rx_ctr_rises(CM_CTR_TX, CM_REJ_ATTR_ID, rej));
	RX_EXPECT_ONE_REJ(CMC_MSG_REP, c.peer.tid, IB_CM_REJ_STALE_CONN,
			  be32_to_cpu(c.id->local_id), c.peer.comm_id);
	IBST_EXPECT_EQ(rx_count(c.id, IB_CM_REP_RECEIVED, NULL), 0);
	IBST_EXPECT_EQ(rx_state(c.id), IB_CM_REQ_SENT);
	IBST_EXPECT(rx_leaves(old.id, IB_CM_ESTABLISHED));
	IBST_EXPECT_EQ(rx_state(old.id), IB_CM_DREQ_SENT);
out:
	rx_active_destroy(&old);
	rx_active_end(&c);
}

/* ------------------------------------------------------------------ */
/* Service ID resolution                                               */

/* Wait until @n @type events arrived (of any ID); true when they did. */
static bool rx_wait_n(enum ib_cm_event_type type, unsigned int n)
{
	wait_event_timeout(rx_wq, rx_count(NULL, type, NULL) >= n,
			   msecs_to_jiffies(RX_WAIT_MS));
	return rx_count(NULL, type, NULL) >= n;
}

static struct ib_cm_id *rx_sidr_listen(__be64 sid)
{
	struct ib_cm_id *id = ib_create_cm_id(rx_dev, rx_handler, NULL);

	if (IS_ERR(id))
		return NULL;
	if (ib_cm_listen(id, sid)) {
		ib_destroy_cm_id(id);
		return NULL;
	}
	return id;
}

/* The ID the listener got for the SIDR_REQ in @e, taken over; or NULL. */
static struct ib_cm_id *rx_sidr_claim(const struct rx_event *e)
{
	if (e->id)
		rx_claim(e->id);
	return e->id;
}

/*
 * The peer's SIDR_REQ (request ID @rid, for @sid, P_Key @pkey, private
 * data @tag) reaches a listener as event @e: the new ID it got, taken
 * over, or NULL.
 */
static struct ib_cm_id *rx_sidr_req_delivered(u32 rid, __be64 sid, u16 pkey,
					      char tag, struct rx_event *e)
{
	if (rx_send_sidr_req(rid, sid, pkey, tag))
		return NULL;
	cm_test_flush();
	if (!rx_wait_event(NULL, IB_CM_SIDR_REQ_RECEIVED, e))
		return NULL;
	return rx_sidr_claim(e);
}

/* Nobody listens: the CM itself answers "unsupported", tells nobody. */
static void sidr_req_without_listener_unsupported(void)
{
	struct rx_event e = {};
	struct rx_asker a;
	long tx;

	IBST_EXPECT(rx_sidr_ask(&a));
	if (ibst_case_failed())
		goto out;
	rx_quiesce();
	tx = rx_ctr(CM_CTR_TX, CM_SIDR_REP_ATTR_ID);
	IBST_EXPECT_EQ(rx_send_sidr_req(rx_asker_rid(&a), rx_sid(), 0xffff, 'u'),
		       0);
	cm_test_flush();
	IBST_EXPECT(rx_ctr_rises(CM_CTR_TX, CM_SIDR_REP_ATTR_ID, tx));
	RX_EXPECT_SIDR_ANSWERED(&a, &e, IB_SIDR_UNSUPPORTED);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_count(NULL, IB_CM_SIDR_REQ_RECEIVED, NULL), 0);
	IBST_EXPECT_EQ(rx_count(NULL, IB_CM_SIDR_REP_RECEIVED, NULL), 1);
out:
	rx_sidr_end(&a, NULL);
}

/*
 * The listener gets the request's fields on a new ID; its SIDR_REP goes
 * out with the request ID, status, QPN, Q_Key and private data it gave.
 */
static void sidr_req_event_fields_and_rep_sent(void)
{
	struct ib_cm_sidr_rep_param rep = {
		.status = IB_SIDR_SUCCESS,
		.qp_num = 0xc0ffee,
		.qkey = 0x13572468,
	};
	struct ib_cm_id *listen, *n = NULL;
	struct rx_event e = {};
	__be64 sid = rx_sid();
	u8 pd[RX_PDATA];
	struct rx_asker a;
	long rx, tx;

	rx_pdata(pd, 'T');
	rep.private_data = pd;
	rep.private_data_len = sizeof(pd);
	listen = rx_sidr_listen(sid);
	IBST_EXPECT_NOT_NULL(listen);
	IBST_EXPECT(rx_sidr_ask(&a));
	if (ibst_case_failed())
		goto out;
	rx_quiesce();
	rx = rx_ctr(CM_CTR_RX, CM_SIDR_REQ_ATTR_ID);
	n = rx_sidr_req_delivered(rx_asker_rid(&a), sid, 0x8abc, 'S', &e);
	IBST_EXPECT_NOT_NULL(n);
	if (!n)
		goto out;
	IBST_EXPECT_PTR_NE(n, listen);
	IBST_EXPECT_PTR_EQ(e.listen_id, listen);
	IBST_EXPECT_EQ(e.service_id, sid);
	IBST_EXPECT_EQ(e.sidr_pkey, 0x8abc);
	IBST_EXPECT_EQ(e.bth_pkey, 0xffff);
	IBST_EXPECT_EQ(e.port, rx_port);
	IBST_EXPECT(rx_pdata_is(&e, 'S'));
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX, CM_SIDR_REQ_ATTR_ID), rx + 1);
	IBST_EXPECT_EQ(rx_state(n), IB_CM_SIDR_REQ_RCVD);
	IBST_EXPECT_EQ(n->remote_id, a.id->local_id);
	IBST_EXPECT_EQ(n->service_id, sid);

	tx = rx_ctr(CM_CTR_TX, CM_SIDR_REP_ATTR_ID);
	IBST_EXPECT_EQ(ib_send_cm_sidr_rep(n, &rep), 0);
	IBST_EXPECT_EQ(rx_state(n), IB_CM_IDLE);
	/* One answer per request. */
	IBST_EXPECT_EQ(ib_send_cm_sidr_rep(n, &rep), -EINVAL);
	IBST_EXPECT(rx_ctr_rises(CM_CTR_TX, CM_SIDR_REP_ATTR_ID, tx));
	RX_EXPECT_SIDR_ANSWERED(&a, &e, IB_SIDR_SUCCESS);
	IBST_EXPECT_EQ(e.remote_qpn, 0xc0ffee);
	IBST_EXPECT_EQ(e.qkey, 0x13572468);
	IBST_EXPECT(rx_pdata_is(&e, 'T'));
	rx_quiesce();
	IBST_EXPECT_EQ(rx_count(a.id, IB_CM_SIDR_REP_RECEIVED, NULL), 1);
	IBST_EXPECT_EQ(rx_count(NULL, IB_CM_SIDR_REQ_RECEIVED, NULL), 1);
out:
	if (n)
		ib_destroy_cm_id(n);
	rx_sidr_end(&a, listen);
}

/* A request the consumer drops without answering is rejected. */
static void sidr_req_unanswered_rejected(void)
{
	struct ib_cm_id *listen, *n;
	struct rx_event e = {};
	__be64 sid = rx_sid();
	struct rx_asker a;

	listen = rx_sidr_listen(sid);
	IBST_EXPECT_NOT_NULL(listen);
	IBST_EXPECT(rx_sidr_ask(&a));
	if (ibst_case_failed())
		goto out;
	n = rx_sidr_req_delivered(rx_asker_rid(&a), sid, 0xffff, 'd', &e);
	IBST_EXPECT_NOT_NULL(n);
	if (!n)
		goto out;
	ib_destroy_cm_id(n);
	RX_EXPECT_SIDR_ANSWERED(&a, &e, IB_SIDR_REJECT);
out:
	rx_sidr_end(&a, listen);
}

/*
 * The peer repeats a SIDR_REQ the listener has not answered yet: counted
 * as a duplicate, not delivered again.  Once answered, a new request with
 * the same ID is served afresh.
 */
static void dup_sidr_req_counted_and_dropped(void)
{
	struct ib_cm_sidr_rep_param rep = {
		.status = IB_SIDR_NO_QP,
	};
	struct ib_cm_id *listen, *n = NULL;
	struct rx_event e = {};
	__be64 sid = rx_sid();
	struct rx_peer peer;
	long dups, rx;
	u32 rid;

	rx_new_peer(&peer);
	/* Nobody uses IDs with this value: the SIDR_REP finds no asker. */
	rid = ~peer.comm_id;
	listen = rx_sidr_listen(sid);
	IBST_EXPECT_NOT_NULL(listen);
	if (!listen)
		goto out;
	rx_quiesce();
	dups = rx_ctr(CM_CTR_RX_DUPS, CM_SIDR_REQ_ATTR_ID);
	rx = rx_ctr(CM_CTR_RX, CM_SIDR_REQ_ATTR_ID);
	n = rx_sidr_req_delivered(rid, sid, 0xffff, 'a', &e);
	IBST_EXPECT_NOT_NULL(n);
	if (!n)
		goto out;
	IBST_EXPECT_EQ(rx_send_sidr_req(rid, sid, 0xffff, 'b'), 0);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX, CM_SIDR_REQ_ATTR_ID), rx + 2);
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX_DUPS, CM_SIDR_REQ_ATTR_ID), dups + 1);
	IBST_EXPECT_EQ(rx_count(NULL, IB_CM_SIDR_REQ_RECEIVED, NULL), 1);
	IBST_EXPECT_EQ(rx_state(n), IB_CM_SIDR_REQ_RCVD);

	/* The answer, not the end of the ID, ends the duplicate window. */
	IBST_EXPECT_EQ(ib_send_cm_sidr_rep(n, &rep), 0);
	IBST_EXPECT_EQ(rx_send_sidr_req(rid, sid, 0xffff, 'c'), 0);
	cm_test_flush();
	IBST_EXPECT(rx_wait_n(IB_CM_SIDR_REQ_RECEIVED, 2));
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX_DUPS, CM_SIDR_REQ_ATTR_ID), dups + 1);
	IBST_EXPECT_EQ(rx_count(NULL, IB_CM_SIDR_REQ_RECEIVED, &e), 2);
	IBST_EXPECT(rx_pdata_is(&e, 'c'));
out:
	if (n)
		ib_destroy_cm_id(n);
	rx_sidr_end(NULL, listen);
}

/*
 * The answer to our SIDR_REQ reaches us once with its fields; repeats and
 * answers to a request ID that is gone find nobody.
 */
static void sidr_rep_event_fields_and_unknown_dropped(void)
{
	struct rx_asker a, gone;
	struct rx_event e = {};
	long rx;
	u32 rid;

	IBST_EXPECT(rx_sidr_ask(&a));
	IBST_EXPECT(rx_sidr_ask(&gone));
	if (ibst_case_failed())
		goto out;
	rid = rx_asker_rid(&gone);
	ib_destroy_cm_id(gone.id);
	gone.id = NULL;
	rx_quiesce();
	rx = rx_ctr(CM_CTR_RX, CM_SIDR_REP_ATTR_ID);
	/* The CM passes the status on as it is, whatever it says. */
	IBST_EXPECT_EQ(rx_send_sidr_rep(rx_asker_rid(&a), IB_SIDR_REDIRECT,
					0xabcdef, 0x0badcafe, 'R'), 0);
	cm_test_flush();
	RX_EXPECT_SIDR_ANSWERED(&a, &e, IB_SIDR_REDIRECT);
	IBST_EXPECT_EQ(e.remote_qpn, 0xabcdef);
	IBST_EXPECT_EQ(e.qkey, 0x0badcafe);
	IBST_EXPECT(rx_pdata_is(&e, 'R'));

	IBST_EXPECT_EQ(rx_send_sidr_rep(rx_asker_rid(&a), IB_SIDR_REJECT, 1, 2,
					'r'), 0);
	IBST_EXPECT_EQ(rx_send_sidr_rep(rid, IB_SIDR_SUCCESS, 3, 4, 'g'), 0);
	rx_quiesce();
	IBST_EXPECT_EQ(rx_ctr(CM_CTR_RX, CM_SIDR_REP_ATTR_ID), rx + 3);
	IBST_EXPECT_EQ(rx_count(NULL, IB_CM_SIDR_REP_RECEIVED, NULL), 1);
	IBST_EXPECT_EQ(rx_state(a.id), IB_CM_IDLE);
out:
	rx_sidr_end(&gone, NULL);
	rx_sidr_end(&a, NULL);
}

/* ------------------------------------------------------------------ */
/* Mutation fuzzing                                                    */

static unsigned long fuzz_iterations = 100000;
module_param(fuzz_iterations, ulong, 0444);
MODULE_PARM_DESC(fuzz_iterations,
		 "mutated MADs of the receive_path_fuzzed case (default 100000)");

static unsigned long fuzz_seed;
module_param(fuzz_seed, ulong, 0444);
MODULE_PARM_DESC(fuzz_seed,
		 "PRNG seed of that case, 0 = pick one (the seed used is printed)");

/* Injections between two waits for the CM's receive jobs. */
#define RX_FUZZ_FLUSH	256
/* A long run says how far it got this often. */
#define RX_FUZZ_REPORT	100000
#define RX_FUZZ_PASSIVE	5
#define RX_FUZZ_ACTIVE	3
/* How long the fixtures' TimeWait and retries may take to end. */
#define RX_FUZZ_DRAIN_MS	60000

/* cm_ids held in every state while the mutated MADs arrive */
struct rx_fuzz {
	struct rnd_state rnd;
	/* REQ_RCVD, MRA_REQ_SENT, REP_SENT, ESTABLISHED, TIMEWAIT */
	struct rx_passive pas[RX_FUZZ_PASSIVE];
	/* REQ_SENT, ESTABLISHED, DREQ_SENT */
	struct rx_active act[RX_FUZZ_ACTIVE];
	struct rx_asker sidr;			/* SIDR_REQ_SENT */
	struct ib_cm_id *sidr_listen;		/* LISTEN, for SIDR_REQs */
	__be64 sidr_sid;
	unsigned long by_attr[CMC_ATTR_COUNT + 1];
};

static u32 rx_fuzz_u32(struct rx_fuzz *f)
{
	return prandom_u32_state(&f->rnd);
}

static u32 rx_fuzz_below(struct rx_fuzz *f, u32 n)
{
	return rx_fuzz_u32(f) % n;
}

/* The held connections; false (with a diagnostic) when one is missing. */
static bool rx_fuzz_hold(struct rx_fuzz *f)
{
	struct rx_passive *p = f->pas;
	struct rx_active *a = f->act;
	bool ok;

	ok = rx_passive_req(&p[0]);
	ok = ok && rx_passive_req(&p[1]) && !rx_mra(p[1].id, 20, NULL, 0);
	ok = ok && rx_passive_req(&p[2]) && !rx_passive_rep(&p[2]);
	ok = ok && rx_passive_connect(&p[3]);
	/* the peer disconnects, we answer: TIMEWAIT (about 4 s) */
	ok = ok && rx_passive_connect(&p[4]) &&
	     !rx_send_dreq(&p[4].peer, p[4].id->local_id, p[4].qpn, 'x');
	cm_test_flush();
	ok = ok && rx_state(p[4].id) == IB_CM_DREQ_RCVD &&
	     !ib_send_cm_drep(p[4].id, NULL, 0);
	ok = ok && rx_active_req(&a[0], 20, 15, false);
	ok = ok && rx_active_connect(&a[1], false);
	ok = ok && rx_active_connect(&a[2], false) &&
	     !ib_send_cm_dreq(a[2].id, NULL, 0);
	ok = ok && rx_sidr_ask(&f->sidr);
	f->sidr_sid = rx_sid();
	f->sidr_listen = ok ? rx_sidr_listen(f->sidr_sid) : NULL;
	ok = ok && f->sidr_listen;
	rx_quiesce();
	rx_forget_events();
	if (!ok)
		ibst_diag("fuzz: a held connection could not be set up");
	return ok;
}

static void rx_fuzz_release(struct rx_fuzz *f)
{
	unsigned int i;

	for (i = 0; i < RX_FUZZ_PASSIVE; i++)
		rx_passive_end(&f->pas[i]);
	for (i = 0; i < RX_FUZZ_ACTIVE; i++)
		rx_active_end(&f->act[i]);
	rx_sidr_end(&f->sidr, f->sidr_listen);
	f->sidr_listen = NULL;
}

/* A held (peer, cm_id) pair, passive or active, as a message's target. */
static void rx_fuzz_target(struct rx_fuzz *f, const struct rx_peer **peer,
			   struct ib_cm_id **id, u32 *qpn)
{
	u32 i = rx_fuzz_below(f, RX_FUZZ_PASSIVE + RX_FUZZ_ACTIVE);

	if (i < RX_FUZZ_PASSIVE) {
		*peer = &f->pas[i].peer;
		*id = f->pas[i].id;
		*qpn = f->pas[i].qpn;
	} else {
		i -= RX_FUZZ_PASSIVE;
		*peer = &f->act[i].peer;
		*id = f->act[i].id;
		*qpn = 0x700000 + i;
	}
}

/* A well-formed message of a random kind at a held connection, in @mad. */
static void rx_fuzz_template(struct rx_fuzz *f, u8 *mad)
{
	const struct rx_peer *peer;
	struct rx_peer stranger;
	struct cmc_path alt;
	struct ib_cm_id *to;
	u32 qpn;

	rx_fuzz_target(f, &peer, &to, &qpn);
	rx_capture = mad;
	switch (rx_fuzz_below(f, 12)) {
	case 0:		/* a listener's, the held peer's again, or neither */
		rx_new_peer(&stranger);
		rx_send_req(rx_fuzz_below(f, 2) ? peer : &stranger,
			    rx_fuzz_below(f, 4) ?
			    f->pas[rx_fuzz_below(f, RX_FUZZ_PASSIVE)].sid :
			    rx_sid(), 'z', 0, 0);
		break;
	case 1:
		rx_send_mra(peer, to, rx_fuzz_below(f, 4), rx_fuzz_below(f, 32),
			    'z');
		break;
	case 2:
		rx_send_rej(peer, to, rx_fuzz_below(f, 4),
			    1 + rx_fuzz_below(f, 40), 'z');
		break;
	case 3:
		rx_send_rep(peer, to, 'z', 0, 0);
		break;
	case 4:
		rx_send_ids(CM_RTU_ATTR_ID, peer, to, 'z');
		break;
	case 5:
		rx_send_dreq(peer, to->local_id, qpn, 'z');
		break;
	case 6:
		rx_send_ids(CM_DREP_ATTR_ID, peer, to, 'z');
		break;
	case 7:
		rx_send_sidr_req(rx_fuzz_u32(f), rx_fuzz_below(f, 2) ?
				 f->sidr_sid : rx_sid(), 0xffff, 'z');
		break;
	case 8:
		rx_send_sidr_rep(rx_fuzz_below(f, 2) ? rx_asker_rid(&f->sidr) :
				 rx_fuzz_u32(f), rx_fuzz_below(f, 8),
				 rx_fuzz_u32(f) & 0xffffff, rx_fuzz_u32(f), 'z');
		break;
	case 9:
		rx_lap_path(&alt);
		rx_send_lap(peer, to, qpn, &alt, 'z');
		break;
	case 10:
		rx_send_lap_apr(CM_APR_ATTR_ID, peer, to);
		break;
	default:	/* an attribute the CM does not define */
		rx_send_ids(CM_RTU_ATTR_ID, peer, to, 'z');
		put_unaligned_be16(rx_fuzz_below(f, 2) ? 0x1b + rx_fuzz_below(f, 8) :
				   rx_fuzz_u32(f), mad + 16);
		break;
	}
	rx_capture = NULL;
}

/*
 * Byte offsets of field boundaries in a CM MAD (IBTA vol 1, 12.6): the
 * MAD header's attribute ID and modifier and TID, the comm ids, REQ's
 * service ID, CA GUID, QPN and timeouts, transport, P_Key, MTU, retries,
 * LIDs and GIDs, REJ's and MRA's message and reason bytes and the ARI
 * length, and the ends of the private data of each message.
 */
static const u8 rx_fuzz_offsets[] = {
	0, 1, 2, 3, 4, 5, 8, 15, 16, 17, 20, 23, 24, 27, 28, 31, 32, 33, 34,
	35, 36, 39, 40, 47, 48, 56, 59, 60, 63, 64, 67, 68, 71, 72, 74, 75,
	76, 78, 80, 96, 112, 116, 117, 118, 119, 120, 128, 136, 152, 168,
	172, 176, 180, 184, 200, 216, 224, 232, 248, 255,
};

static const u8 rx_fuzz_edges[] = { 0, 1, 0x7f, 0x80, 0xfe, 0xff };

static void rx_fuzz_mutate(struct rx_fuzz *f, u8 *mad)
{
	const struct rx_peer *peer;
	struct ib_cm_id *to;
	u32 n, off, v, qpn;

	/* one in eight stays well-formed: the state machine's own paths */
	n = rx_fuzz_below(f, 8) ? 1 + rx_fuzz_below(f, 4) : 0;
	while (n--) {
		off = rx_fuzz_offsets[rx_fuzz_below(f, ARRAY_SIZE(rx_fuzz_offsets))];
		switch (rx_fuzz_below(f, 6)) {
		case 0:
			mad[off] = rx_fuzz_edges[rx_fuzz_below(f, ARRAY_SIZE(rx_fuzz_edges))];
			break;
		case 1:
			mad[off] = rx_fuzz_u32(f);
			break;
		case 2:		/* a comm id aimed at a live cm_id, or none */
			rx_fuzz_target(f, &peer, &to, &qpn);
			switch (rx_fuzz_below(f, 4)) {
			case 0:
				v = be32_to_cpu(to->local_id);
				break;
			case 1:
				v = peer->comm_id;
				break;
			case 2:
				v = 0;
				break;
			default:
				v = rx_fuzz_u32(f);
				break;
			}
			put_unaligned_be32(v, mad + 24 + 4 * rx_fuzz_below(f, 2));
			break;
		case 3:		/* one bit */
			mad[rx_fuzz_below(f, RX_MAD_SIZE)] ^= 1 << rx_fuzz_below(f, 8);
			break;
		case 4:		/* a run of random bytes from a boundary */
			for (v = off; v < RX_MAD_SIZE && v < off + 16; v++)
				mad[v] = rx_fuzz_u32(f);
			break;
		default:	/* a random place of the CM data */
			mad[24 + rx_fuzz_below(f, RX_MAD_SIZE - 24)] = rx_fuzz_u32(f);
			break;
		}
	}
}

/*
 * The states each end of a connection can be in.  No MAD moves a cm_id to
 * a state of the other end (an active id to REQ_RCVD, say), nor a SIDR
 * asker out of SIDR.
 */
#define RX_CONN_STATES	(BIT(IB_CM_IDLE) | BIT(IB_CM_ESTABLISHED) |	\
			 BIT(IB_CM_DREQ_SENT) | BIT(IB_CM_DREQ_RCVD) |	\
			 BIT(IB_CM_TIMEWAIT))
#define RX_PASSIVE_STATES (RX_CONN_STATES | BIT(IB_CM_REQ_RCVD) |	\
			   BIT(IB_CM_MRA_REQ_SENT) | BIT(IB_CM_REP_SENT) |	\
			   BIT(IB_CM_MRA_REP_RCVD))
#define RX_ACTIVE_STATES (RX_CONN_STATES | BIT(IB_CM_REQ_SENT) |	\
			  BIT(IB_CM_MRA_REQ_RCVD) | BIT(IB_CM_REP_RCVD) |	\
			  BIT(IB_CM_MRA_REP_SENT))
#define RX_SIDR_STATES	(BIT(IB_CM_IDLE) | BIT(IB_CM_SIDR_REQ_SENT))

static void rx_expect_state_in(struct ib_cm_id *id, unsigned long states,
			       const char *who, unsigned int k)
{
	enum ib_cm_state st = rx_state(id);

	if (!(BIT(st) & states))
		IBST_FAIL("fuzz: %s %u is in state %d, not one of %#lx",
			  who, k, st, states);
}

/* the cm_ids that hold a local comm id (TimeWait included) */
static long rx_id_count(void)
{
	return cm_test_id_count();
}

/* Wait until @count() is @want again; true when it is. */
static bool rx_fuzz_back(long (*count)(void), long want)
{
	unsigned int ms;

	for (ms = 0; ms < RX_FUZZ_DRAIN_MS; ms += 100) {
		if (count() == want)
			return true;
		msleep(100);
	}
	return false;
}

/*
 * Mutated MADs of every kind, aimed at cm_ids held in every state (and
 * at listeners, SIDR and ids nobody has), through the receive entry the
 * MAD layer calls.  Afterwards: every held cm_id in a legal state, all
 * of them torn down, the device's references back where they were, and
 * a new connection each way.  LAP/APR are taken on this RoCE port for
 * the run.  The seed (fuzz_seed, printed) repeats a run.
 */
static void receive_path_fuzzed(void)
{
	struct rx_active a = {};
	struct rx_passive c = {};
	unsigned long i, rx0, rx1;
	u8 mad[RX_MAD_SIZE];
	struct rx_fuzz *f;
	unsigned int k;
	long refs, ids;
	u64 seed;

#ifdef HAVE_KMALLOC_OBJ
	f = kzalloc_obj(*f);
#else
	f = kzalloc(sizeof(*f), GFP_KERNEL);
#endif
	if (!f) {
		IBST_FAIL("no memory for the fuzzer");
		return;
	}
	seed = fuzz_seed ?: (get_random_u64() ?: 1);
	prandom_seed_state(&f->rnd, seed);
	ibst_diag("fuzz: %lu MADs, seed %llu", fuzz_iterations, seed);
	rx_quiesce();
	refs = rx_dev_refs();
	ids = rx_id_count();
	rx0 = 0;
	for (k = 0; k < CMC_ATTR_COUNT; k++)
		rx0 += rx_ctr(CM_CTR_RX, cpu_to_be16(CMC_ATTR_BASE + k));
	IBST_EXPECT(rx_lap_switch(true));
	IBST_EXPECT(rx_fuzz_hold(f));
	if (ibst_case_failed())
		goto out;

	for (i = 0; i < fuzz_iterations; i++) {
		memset(mad, 0, sizeof(mad));
		rx_fuzz_template(f, mad);
		rx_fuzz_mutate(f, mad);
		k = get_unaligned_be16(mad + 16) - CMC_ATTR_BASE;
		f->by_attr[min_t(unsigned int, k, CMC_ATTR_COUNT)]++;
		IBST_EXPECT_EQ(rx_inject(mad), 0);
		if (ibst_case_failed())
			break;
		if (!(i % RX_FUZZ_FLUSH)) {
			cm_test_flush();
			cond_resched();
		}
		if (i && !(i % RX_FUZZ_REPORT))
			ibst_diag("fuzz: %lu MADs sent", i);
	}
	rx_quiesce();
	rx1 = 0;
	for (k = 0; k < CMC_ATTR_COUNT; k++)
		rx1 += rx_ctr(CM_CTR_RX, cpu_to_be16(CMC_ATTR_BASE + k));
	/* the answers that loop back to the CM are counted too */
	ibst_diag("fuzz: %lu MADs sent (%lu of unknown attributes), %lu received",
		  i, f->by_attr[CMC_ATTR_COUNT], rx1 - rx0);
	/* every defined message but the unknown ones reached the CM */
	IBST_EXPECT_GE(rx1 - rx0, i - f->by_attr[CMC_ATTR_COUNT]);
	for (k = 0; k < RX_FUZZ_PASSIVE; k++)
		rx_expect_state_in(f->pas[k].id, RX_PASSIVE_STATES, "passive", k);
	for (k = 0; k < RX_FUZZ_ACTIVE; k++)
		rx_expect_state_in(f->act[k].id, RX_ACTIVE_STATES, "active", k);
	rx_expect_state_in(f->sidr.id, RX_SIDR_STATES, "SIDR asker", 0);
	rx_expect_state_in(f->sidr_listen, BIT(IB_CM_LISTEN), "listener", 0);
out:
	rx_fuzz_release(f);
	IBST_EXPECT(rx_lap_switch(false));
	IBST_EXPECT(rx_fuzz_back(rx_dev_refs, refs));
	IBST_EXPECT_EQ(rx_dev_refs(), refs);
	/* no cm_id the fuzzer made the CM create outlives its TimeWait */
	IBST_EXPECT(rx_fuzz_back(rx_id_count, ids));
	IBST_EXPECT_EQ(rx_id_count(), ids);
	/* the CM still connects, both ways */
	IBST_EXPECT(rx_passive_connect(&c));
	rx_passive_end(&c);
	IBST_EXPECT(rx_active_connect(&a, false));
	rx_active_end(&a);
	if (ibst_case_failed())
		ibst_diag("fuzz: repeat with fuzz_seed=%llu", seed);
	kfree(f);
}

/* ------------------------------------------------------------------ */
/* Device                                                              */

static int cm_rx_setup(void)
{
	int ret = cmt_port_get("ib_cm_rx_test");

	if (ret)
		return ret;
	rx_dev = cmt_port.dev;
	rx_port = cmt_port.port;
	rx_gid = cmt_port.gid;
	ibst_diag("%s port %u, GID %pI6", dev_name(&rx_dev->dev), rx_port,
		  rx_gid->gid.raw);
	/* The made-up peer: our GID with another last byte. */
	rx_far_gid = rx_gid->gid;
	rx_far_gid.raw[15] ^= 0x5a;
	ibst_set_dump(rx_dump);
	return 0;
}

static void cm_rx_teardown(void)
{
	/* Drops the device reference a case that stopped half-way left on. */
	cm_test_lap_on_roce(rx_dev, rx_port, false);
	cm_test_on_dup_req(NULL);
	cm_test_send_unwatch(&rx_rej_out);
	rx_gid = NULL;
	cmt_port_put();
	rx_dev = NULL;
}

static const struct ibst_case cm_rx_cases[] = {
	IBST_CASE(req_event_fields),
	IBST_CASE(req_without_listener_rejected),
	IBST_CASE(dup_req_counted_and_mra_repeated),
	IBST_CASE(rtu_establishes_once),
	IBST_CASE(dreq_rcvd_dups_and_drep_repeated),
	IBST_CASE(dreq_unknown_id_gets_drep),
	IBST_CASE(req_in_timewait_is_new_connection),
	IBST_CASE(dup_req_racing_timewait_gets_stale_rej),
	IBST_CASE(rep_event_fields_and_dups),
	IBST_CASE(rep_with_taken_peer_id_dropped),
	IBST_CASE(mra_extends_req_timeout),
	IBST_CASE(mra_out_of_place_dropped),
	IBST_CASE(rej_received),
	IBST_CASE(rej_timeout_found_by_ca_guid),
	IBST_CASE(send_rej_traced_before_state_changes),
	IBST_CASE(drep_timewait_exit),
	IBST_CASE(dreq_unanswered),
	IBST_CASE(notify_comm_est),
	IBST_CASE(notify_path_mig),
	IBST_CASE(failed_req_leaves_no_path),
	IBST_CASE(reconnect_drops_old_alt_path),
	IBST_CASE(reconnect_starts_lap_state_over),
	IBST_CASE(lap_apr_dropped_on_roce),
	IBST_CASE(lap_event_alt_path_and_qp_attr),
	IBST_CASE(lap_keeps_timewait_length),
	IBST_CASE(lap_repeat_counted_and_dropped),
	IBST_CASE(lap_mra_sent_and_repeated),
	IBST_CASE(lap_outside_established_dropped),
	IBST_CASE(lap_unaddressable_path_leaves_no_ref),
	IBST_CASE(apr_without_our_lap_dropped),
	IBST_CASE(stale_req_rejected),
	IBST_CASE(stale_rep_rejected),
	IBST_CASE(sidr_req_without_listener_unsupported),
	IBST_CASE(sidr_req_event_fields_and_rep_sent),
	IBST_CASE(sidr_req_unanswered_rejected),
	IBST_CASE(dup_sidr_req_counted_and_dropped),
	IBST_CASE(sidr_rep_event_fields_and_unknown_dropped),
	IBST_CASE(drop_on_rtu_destroys_and_disconnects),
	IBST_CASE(drop_on_dreq_destroys_and_answers),
	IBST_CASE(drop_on_lap_destroys),
	IBST_CASE(drop_on_user_established_destroys),
	IBST_CASE(drop_on_timewait_exit_destroys),
	IBST_CASE(drop_on_dreq_error_destroys),
	IBST_CASE(shared_listener_race),
	IBST_CASE(destroy_wait_follows_cm_timeouts),
	IBST_CASE(destroy_timeout_reports_old_state_and_refs),
	IBST_CASE(destroy_and_lost_untracked_send),
	IBST_CASE(destroy_established_and_lost_dreq),
	IBST_CASE(rep_not_held_by_solicited_sends),
	IBST_CASE(receive_path_fuzzed),
	{}
};

IBST_SUITE(ib_cm_rx, cm_rx_cases, cm_rx_setup, cm_rx_teardown);
MODULE_DESCRIPTION("ib_cm receive-side self-test on a RoCE port");
MODULE_LICENSE("Dual BSD/GPL");
