// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KTAP self-test of the ib_cm API state machine that needs no RDMA device:
 * listen/share/unlisten transitions, service ID assignment, and the
 * rejection of every call that the current state does not allow.  The
 * cm_ids are bound to a dummy ib_device that is only used as a key, so
 * nothing is ever sent.  Load after ib_cm.ko.  Reports through the
 * shared harness (ib_selftest.h): KTAP from module_init, failing the load on
 * any failure, or one KUnit result per case on a kernel with KUnit.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <rdma/ib_cm.h>

#include "ib_selftest.h"

static struct ib_device *fake_dev;

static int handler_a(struct ib_cm_id *id, const struct ib_cm_event *ev)
{
	return 0;
}

static int handler_b(struct ib_cm_id *id, const struct ib_cm_event *ev)
{
	return 0;
}

static void idle_id_rejects_every_call(void)
{
	struct ib_cm_rep_param rep = {};
	struct ib_qp_attr attr = {};
	struct ib_cm_id *id;
	int mask = 0;

	id = ib_create_cm_id(fake_dev, handler_a, NULL);
	IBST_EXPECT_NOT_ERR(id);
	if (IS_ERR(id))
		return;
	IBST_EXPECT_EQ(id->state, IB_CM_IDLE);
	IBST_EXPECT_EQ(id->remote_id, cpu_to_be32(0));
	IBST_EXPECT_EQ(id->lap_state, IB_CM_LAP_UNINIT);
	IBST_EXPECT_EQ(id->remote_cm_qpn, 1);
	IBST_EXPECT_EQ(ib_send_cm_rep(id, &rep), -EINVAL);
	IBST_EXPECT_EQ(ib_send_cm_rtu(id, NULL, 0), -EINVAL);
	IBST_EXPECT_EQ(ib_send_cm_dreq(id, NULL, 0), -EINVAL);
	IBST_EXPECT_EQ(ib_send_cm_drep(id, NULL, 0), -EINVAL);
	IBST_EXPECT_EQ(ib_send_cm_rej(id, IB_CM_REJ_CONSUMER_DEFINED, NULL, 0,
				      NULL, 0), -EINVAL);
#ifdef HAVE_IB_PREPARE_CM_MRA
	IBST_EXPECT_EQ(ib_prepare_cm_mra(id), -EINVAL);
#else
	IBST_EXPECT_EQ(ib_send_cm_mra(id, 10, NULL, 0), -EINVAL);
#endif
	IBST_EXPECT_EQ(ib_cm_notify(id, IB_EVENT_COMM_EST), -EINVAL);
	IBST_EXPECT_EQ(ib_cm_notify(id, IB_EVENT_PATH_MIG), -EINVAL);
	IBST_EXPECT_EQ(ib_cm_notify(id, IB_EVENT_QP_FATAL), -EINVAL);
	attr.qp_state = IB_QPS_INIT;
	IBST_EXPECT_EQ(ib_cm_init_qp_attr(id, &attr, &mask), -EINVAL);
	attr.qp_state = IB_QPS_RTR;
	IBST_EXPECT_EQ(ib_cm_init_qp_attr(id, &attr, &mask), -EINVAL);
	attr.qp_state = IB_QPS_RTS;
	IBST_EXPECT_EQ(ib_cm_init_qp_attr(id, &attr, &mask), -EINVAL);
	attr.qp_state = IB_QPS_SQD;
	IBST_EXPECT_EQ(ib_cm_init_qp_attr(id, &attr, &mask), -EINVAL);
	IBST_EXPECT_EQ(id->state, IB_CM_IDLE);
	ib_destroy_cm_id(id);
}

static void parameter_limits(void)
{
	static u8 big[256];
	struct sa_path_rec path = {};
	struct ib_cm_req_param req = {
		.qp_type = IB_QPT_RC,
	};
	struct ib_cm_sidr_req_param sidr = {};
	struct ib_cm_id *id;

	id = ib_create_cm_id(fake_dev, handler_a, NULL);
	IBST_EXPECT_NOT_ERR(id);
	if (IS_ERR(id))
		return;
	/* No primary path. */
	IBST_EXPECT_EQ(ib_send_cm_req(id, &req), -EINVAL);
	/* UD is not a connected service. */
	req.primary_path = &path;
	req.qp_type = IB_QPT_UD;
	IBST_EXPECT_EQ(ib_send_cm_req(id, &req), -EINVAL);
	/* Private data beyond the 92 bytes a REQ carries. */
	req.qp_type = IB_QPT_RC;
	req.private_data = big;
	req.private_data_len = IB_CM_REQ_PRIVATE_DATA_SIZE + 1;
	IBST_EXPECT_EQ(ib_send_cm_req(id, &req), -EINVAL);
	/* Alternate path with a different P_Key. */
	req.private_data_len = 0;
	req.alternate_path = &path;
	path.pkey = cpu_to_be16(0xffff);
	req.primary_path = kmemdup(&path, sizeof(path), GFP_KERNEL);
	if (req.primary_path) {
		req.primary_path->pkey = cpu_to_be16(0x8001);
		IBST_EXPECT_EQ(ib_send_cm_req(id, &req), -EINVAL);
		kfree(req.primary_path);
	}
	IBST_EXPECT_EQ(ib_send_cm_rtu(id, big, IB_CM_RTU_PRIVATE_DATA_SIZE + 1),
		       -EINVAL);
#ifndef HAVE_IB_PREPARE_CM_MRA
	IBST_EXPECT_EQ(ib_send_cm_mra(id, 1, big,
				      IB_CM_MRA_PRIVATE_DATA_SIZE + 1),
		       -EINVAL);
#endif
	IBST_EXPECT_EQ(ib_send_cm_sidr_req(id, &sidr), -EINVAL);
	IBST_EXPECT_EQ(id->state, IB_CM_IDLE);
	ib_destroy_cm_id(id);
}

static void listen_transitions(void)
{
	__be64 sid = cpu_to_be64(0x0000000001000123ULL);
	struct ib_cm_id *a, *b;

	a = ib_create_cm_id(fake_dev, handler_a, NULL);
	b = ib_create_cm_id(fake_dev, handler_b, NULL);
	if (IS_ERR(a) || IS_ERR(b)) {
		IBST_FAIL("cannot create the cm_ids");
		goto out;
	}
	IBST_EXPECT_EQ(ib_cm_listen(a, sid), 0);
	IBST_EXPECT_EQ(a->state, IB_CM_LISTEN);
	IBST_EXPECT_EQ(a->service_id, sid);
	/* A second listener on the same service ID and device: busy. */
	IBST_EXPECT_EQ(ib_cm_listen(b, sid), -EBUSY);
	IBST_EXPECT_EQ(b->state, IB_CM_IDLE);
	/* Listening twice is not allowed. */
	IBST_EXPECT_EQ(ib_cm_listen(a, cpu_to_be64(0x42)), -EINVAL);
	/* A listener cannot connect. */
	IBST_EXPECT_EQ(ib_send_cm_dreq(a, NULL, 0), -EINVAL);
	ib_destroy_cm_id(a);
	a = NULL;
	/* Destroying the listener frees the service ID. */
	IBST_EXPECT_EQ(ib_cm_listen(b, sid), 0);
out:
	if (!IS_ERR_OR_NULL(a))
		ib_destroy_cm_id(a);
	if (!IS_ERR_OR_NULL(b))
		ib_destroy_cm_id(b);
}

static void service_id_assignment(void)
{
	struct ib_cm_id *a, *b;

	a = ib_create_cm_id(fake_dev, handler_a, NULL);
	b = ib_create_cm_id(fake_dev, handler_a, NULL);
	if (IS_ERR(a) || IS_ERR(b)) {
		IBST_FAIL("cannot create the cm_ids");
		goto out;
	}
	/* The locally administered range is reserved for assignment. */
	IBST_EXPECT_EQ(ib_cm_listen(a, cpu_to_be64(0x0200000000000001ULL)),
		       -EINVAL);
	IBST_EXPECT_EQ(ib_cm_listen(a, IB_CM_ASSIGN_SERVICE_ID), 0);
	IBST_EXPECT_EQ(ib_cm_listen(b, IB_CM_ASSIGN_SERVICE_ID), 0);
	IBST_EXPECT_EQ(a->service_id & IB_SERVICE_ID_AGN_MASK,
		       IB_CM_ASSIGN_SERVICE_ID);
	IBST_EXPECT_NE(a->service_id, b->service_id);
out:
	if (!IS_ERR(a))
		ib_destroy_cm_id(a);
	if (!IS_ERR(b))
		ib_destroy_cm_id(b);
}

static void shared_listen(void)
{
	__be64 sid = cpu_to_be64(0x0000000001000456ULL);
	struct ib_cm_id *x, *y, *z, *w;

	x = ib_cm_insert_listen(fake_dev, handler_a, sid);
	IBST_EXPECT_NOT_ERR(x);
	if (IS_ERR(x))
		return;
	IBST_EXPECT_EQ(x->state, IB_CM_LISTEN);
	/* Same handler, no context: the listener is shared. */
	y = ib_cm_insert_listen(fake_dev, handler_a, sid);
	IBST_EXPECT_PTR_EQ(y, x);
	/* Another handler cannot share it. */
	z = ib_cm_insert_listen(fake_dev, handler_b, sid);
	IBST_EXPECT_EQ(PTR_ERR_OR_ZERO(z), -EINVAL);
	/* One share gone: still listening. */
	ib_destroy_cm_id(x);
	w = ib_create_cm_id(fake_dev, handler_b, NULL);
	if (!IS_ERR(w)) {
		IBST_EXPECT_EQ(ib_cm_listen(w, sid), -EBUSY);
		/* Last share gone: the service ID is free again. */
		if (!IS_ERR(y))
			ib_destroy_cm_id(y);
		IBST_EXPECT_EQ(ib_cm_listen(w, sid), 0);
		ib_destroy_cm_id(w);
	}
}

static void reject_reason_text(void)
{
	IBST_EXPECT_GT(strlen(ibcm_reject_msg(IB_CM_REJ_INVALID_SERVICE_ID)),
		       0);
	IBST_EXPECT_STRNE(ibcm_reject_msg(IB_CM_REJ_STALE_CONN),
			  ibcm_reject_msg(IB_CM_REJ_TIMEOUT));
	IBST_EXPECT_STREQ(ibcm_reject_msg(0), ibcm_reject_msg(1000));
	IBST_EXPECT_STRNE(ibcm_reject_msg(1000),
			  ibcm_reject_msg(IB_CM_REJ_NO_QP));
}

/*
 * The text of every reason, as the distribution's ib_cm of 6.1 and 6.12
 * words it (the two have the same table): log parsers written for that
 * module match these strings.  Reason 34, 0 and anything out of range
 * have no text of their own.
 */
static const struct {
	int reason;
	const char *text;
} distro_rej_text[] = {
	{ 0, "unrecognized reason" },
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
	{ 34, "unrecognized reason" },
	{ IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED,
	  "vendor option is not supported" },
	{ 36, "unrecognized reason" },
	{ -1, "unrecognized reason" },
	{ 1000, "unrecognized reason" },
};

static void reject_reason_text_is_distro_text(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(distro_rej_text); i++) {
		if (strcmp(ibcm_reject_msg(distro_rej_text[i].reason),
			   distro_rej_text[i].text))
			IBST_FAIL("reason %d: \"%s\", the distribution says \"%s\"",
				  distro_rej_text[i].reason,
				  ibcm_reject_msg(distro_rej_text[i].reason),
				  distro_rej_text[i].text);
	}
}

static const struct ibst_case cases[] = {
	IBST_CASE(idle_id_rejects_every_call),
	IBST_CASE(parameter_limits),
	IBST_CASE(listen_transitions),
	IBST_CASE(service_id_assignment),
	IBST_CASE(shared_listen),
	IBST_CASE(reject_reason_text),
	IBST_CASE(reject_reason_text_is_distro_text),
	{}
};

static int api_setup(void)
{
#ifdef HAVE_KMALLOC_OBJ
	fake_dev = kzalloc_obj(*fake_dev);
#else
	fake_dev = kzalloc(sizeof(*fake_dev), GFP_KERNEL);
#endif
	return fake_dev ? 0 : -ENOMEM;
}

static void api_teardown(void)
{
	kfree(fake_dev);
}

IBST_SUITE(ib_cm_api, cases, api_setup, api_teardown);
MODULE_DESCRIPTION("ib_cm API state-machine self-test");
MODULE_LICENSE("Dual BSD/GPL");
