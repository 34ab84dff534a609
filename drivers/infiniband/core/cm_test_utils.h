/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Helpers shared by ib_cm's tests on a RoCE port, ib_cm_rx_test.ko
 * (cm_rx_test.c) and ib_cm_conn_test.ko (cm_conn_test.c): finding the
 * port the cases run on, the private data that says which message
 * carried it, and names for the states and events a failed case prints.
 *
 * Only ib_core's and ib_cm's exported interfaces are used here, so the
 * connection test still loads over the stock ib_cm.  Each test includes
 * this header once, after ib_selftest.h (it defines static data and
 * functions).
 */
#ifndef CM_TEST_UTILS_H
#define CM_TEST_UTILS_H

#include <linux/compiler.h>
#include <linux/err.h>
#include <linux/string.h>
#include <net/ipv6.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>

/* How many bytes of private data the tests send and look at. */
#define CMT_PDATA	8

/* ------------------------------------------------------------------ */
/* The port                                                            */

/**
 * struct cmt_port - the port the cases run on
 * @client: registered with ib_core to be shown the devices
 * @dev: the device, or NULL before one was found
 * @port: its port
 * @gid: the RoCE v2 GID of @port the cases use (a reference is held)
 */
static struct cmt_port {
	struct ib_client client;
	struct ib_device *dev;
	u32 port;
	const struct ib_gid_attr *gid;
} cmt_port;

/*
 * The first active RoCE v2 port of @dev with a CM, and its IPv4 GID when
 * it has one (that is the address the guests' tools use).
 */
static int cmt_pick_port(struct ib_device *dev)
{
	const struct ib_gid_attr *attr, *best = NULL;
	struct ib_port_attr pa;
	u32 p;
	int i;

	rdma_for_each_port(dev, p) {
		if (!rdma_protocol_roce(dev, p) || !rdma_cap_ib_cm(dev, p) ||
		    ib_query_port(dev, p, &pa) || pa.state != IB_PORT_ACTIVE)
			continue;
		for (i = 0; i < pa.gid_tbl_len; i++) {
			attr = rdma_get_gid_attr(dev, p, i);
			if (IS_ERR(attr))
				continue;
			if (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
			    (!best ||
			     (ipv6_addr_v4mapped((void *)attr->gid.raw) &&
			      !ipv6_addr_v4mapped((void *)best->gid.raw))))
				swap(attr, best);
			if (attr)
				rdma_put_gid_attr(attr);
		}
		if (best) {
			cmt_port.dev = dev;
			cmt_port.port = p;
			cmt_port.gid = best;
			return 0;
		}
	}
	return -EOPNOTSUPP;
}

static int cmt_add_one(struct ib_device *dev)
{
	return cmt_port.dev ? -EOPNOTSUPP : cmt_pick_port(dev);
}

static void cmt_remove_one(struct ib_device *dev, void *data)
{
}

/**
 * cmt_port_get() - find the port the cases run on
 * @name: the ib_client's name (the test module's)
 *
 * On success cmt_port says which port, until cmt_port_put().
 *
 * Return: 0, -ENODEV when no device has such a port, or the error of
 * ib_register_client().
 */
static int cmt_port_get(const char *name)
{
	int ret;

	cmt_port.client.name = name;
	cmt_port.client.add = cmt_add_one;
	cmt_port.client.remove = cmt_remove_one;
	ret = ib_register_client(&cmt_port.client);
	if (ret)
		return ret;
	if (!cmt_port.dev) {
		ibst_diag("no active RoCE port with a CM (modprobe rdma_rxe; rdma link add)");
		ib_unregister_client(&cmt_port.client);
		return -ENODEV;
	}
	return 0;
}

/* Undo cmt_port_get(). */
static void cmt_port_put(void)
{
	if (cmt_port.gid)
		rdma_put_gid_attr(cmt_port.gid);
	cmt_port.gid = NULL;
	ib_unregister_client(&cmt_port.client);
	cmt_port.dev = NULL;
}

/* ------------------------------------------------------------------ */
/* Private data                                                        */

/*
 * CMT_PDATA bytes that say who sent them and in which message: @who, 7
 * characters, then @tag.
 */
static void cmt_tag(u8 *buf, const char *who, char tag)
{
	memcpy(buf, who, CMT_PDATA - 1);
	buf[CMT_PDATA - 1] = tag;
}

/* @has says an event carried @pdata: is it what cmt_tag() wrote? */
static bool cmt_tagged(bool has, const u8 *pdata, const char *who, char tag)
{
	u8 want[CMT_PDATA];

	cmt_tag(want, who, tag);
	return has && !memcmp(pdata, want, CMT_PDATA);
}

/*
 * What every note of an event records first: whether it carried private
 * data, and its first CMT_PDATA bytes (the pointer dies when the handler
 * returns).
 */
static void cmt_note_pdata(bool *has, u8 *pdata, const struct ib_cm_event *ev)
{
	if (ev->private_data) {
		*has = true;
		memcpy(pdata, ev->private_data, CMT_PDATA);
	}
}

/*
 * The parameters that every note of an event records the same way, into
 * @note, which has fields of these names: a REJ's reason, an MRA's
 * service timeout, the status of a failed send, what a SIDR_REQ asked
 * for and what a SIDR_REP answered.  A macro, as each test has its own
 * type of note; the test's own switch adds what else it records.
 */
#define cmt_note_params(note, cm_ev) do {				\
	const struct ib_cm_sidr_req_event_param *__cmt_sreq;		\
	const struct ib_cm_sidr_rep_event_param *__cmt_srep;		\
	const struct ib_cm_event *__cmt_ev = (cm_ev);			\
	typeof(note) __cmt_e = (note);					\
									\
	__cmt_sreq = &__cmt_ev->param.sidr_req_rcvd;			\
	__cmt_srep = &__cmt_ev->param.sidr_rep_rcvd;			\
	switch (__cmt_ev->event) {					\
	case IB_CM_REJ_RECEIVED:					\
		__cmt_e->rej_reason = __cmt_ev->param.rej_rcvd.reason;	\
		break;							\
	case IB_CM_MRA_RECEIVED:					\
		__cmt_e->service_timeout =				\
			__cmt_ev->param.mra_rcvd.service_timeout;	\
		break;							\
	case IB_CM_REQ_ERROR:						\
	case IB_CM_REP_ERROR:						\
	case IB_CM_DREQ_ERROR:						\
	case IB_CM_SIDR_REQ_ERROR:					\
		__cmt_e->send_status = __cmt_ev->param.send_status;	\
		break;							\
	case IB_CM_SIDR_REQ_RECEIVED:					\
		__cmt_e->listen_id = __cmt_sreq->listen_id;		\
		__cmt_e->service_id = __cmt_sreq->service_id;		\
		__cmt_e->sidr_pkey = __cmt_sreq->pkey;			\
		__cmt_e->bth_pkey = __cmt_sreq->bth_pkey;		\
		__cmt_e->port = __cmt_sreq->port;			\
		break;							\
	case IB_CM_SIDR_REP_RECEIVED:					\
		__cmt_e->sidr_status = __cmt_srep->status;		\
		__cmt_e->remote_qpn = __cmt_srep->qpn;			\
		__cmt_e->qkey = __cmt_srep->qkey;			\
		break;							\
	default:							\
		break;							\
	}								\
} while (0)

/* ------------------------------------------------------------------ */
/* States and events, for what a failed case prints                    */

/*
 * The CM messages in the order of their attribute IDs (IBTA 0x0010 on),
 * named as the port's counters in sysfs are.
 */
static const char *const cmt_msg_names[] __maybe_unused = {
	"req", "mra", "rej", "rep", "rtu", "dreq", "drep",
	"sidr_req", "sidr_rep", "lap", "apr",
};

static enum ib_cm_state cmt_state(const struct ib_cm_id *id)
{
	return READ_ONCE(id->state);
}

static __maybe_unused const char *cmt_state_name(unsigned int st)
{
	static const char *const names[] = {
		[IB_CM_IDLE] = "IDLE",
		[IB_CM_LISTEN] = "LISTEN",
		[IB_CM_REQ_SENT] = "REQ_SENT",
		[IB_CM_REQ_RCVD] = "REQ_RCVD",
		[IB_CM_MRA_REQ_SENT] = "MRA_REQ_SENT",
		[IB_CM_MRA_REQ_RCVD] = "MRA_REQ_RCVD",
		[IB_CM_REP_SENT] = "REP_SENT",
		[IB_CM_REP_RCVD] = "REP_RCVD",
		[IB_CM_MRA_REP_SENT] = "MRA_REP_SENT",
		[IB_CM_MRA_REP_RCVD] = "MRA_REP_RCVD",
		[IB_CM_ESTABLISHED] = "ESTABLISHED",
		[IB_CM_DREQ_SENT] = "DREQ_SENT",
		[IB_CM_DREQ_RCVD] = "DREQ_RCVD",
		[IB_CM_TIMEWAIT] = "TIMEWAIT",
		[IB_CM_SIDR_REQ_SENT] = "SIDR_REQ_SENT",
		[IB_CM_SIDR_REQ_RCVD] = "SIDR_REQ_RCVD",
	};

	return st < ARRAY_SIZE(names) && names[st] ? names[st] : "?";
}

static __maybe_unused const char *cmt_event_name(unsigned int ev)
{
	static const char *const names[] = {
		[IB_CM_REQ_ERROR] = "REQ_ERROR",
		[IB_CM_REQ_RECEIVED] = "REQ_RECEIVED",
		[IB_CM_REP_ERROR] = "REP_ERROR",
		[IB_CM_REP_RECEIVED] = "REP_RECEIVED",
		[IB_CM_RTU_RECEIVED] = "RTU_RECEIVED",
		[IB_CM_USER_ESTABLISHED] = "USER_ESTABLISHED",
		[IB_CM_DREQ_ERROR] = "DREQ_ERROR",
		[IB_CM_DREQ_RECEIVED] = "DREQ_RECEIVED",
		[IB_CM_DREP_RECEIVED] = "DREP_RECEIVED",
		[IB_CM_TIMEWAIT_EXIT] = "TIMEWAIT_EXIT",
		[IB_CM_MRA_RECEIVED] = "MRA_RECEIVED",
		[IB_CM_REJ_RECEIVED] = "REJ_RECEIVED",
		[IB_CM_LAP_ERROR] = "LAP_ERROR",
		[IB_CM_LAP_RECEIVED] = "LAP_RECEIVED",
		[IB_CM_APR_RECEIVED] = "APR_RECEIVED",
		[IB_CM_SIDR_REQ_ERROR] = "SIDR_REQ_ERROR",
		[IB_CM_SIDR_REQ_RECEIVED] = "SIDR_REQ_RECEIVED",
		[IB_CM_SIDR_REP_RECEIVED] = "SIDR_REP_RECEIVED",
	};

	return ev < ARRAY_SIZE(names) && names[ev] ? names[ev] : "?";
}

#endif /* CM_TEST_UTILS_H */
