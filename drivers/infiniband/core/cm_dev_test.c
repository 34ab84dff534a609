// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KTAP self-test of ib_cm's device add and removal on devices no soft RDMA
 * driver provides: a two-port InfiniBand HCA, and a switch whose only CM
 * port is port 0.
 *
 * The module registers a device of its own ("cmdevt<n>") whose verbs do
 * just enough for the MAD layer to open its ports: PD, CQ and QP calls
 * succeed and do nothing, receives are taken and never complete, sends are
 * refused.  Nothing is ever sent or received on it.  Knobs make the MAD
 * layer give up on the device (its QP creation fails, so ib_cm cannot
 * register a MAD agent) or make the setting of the CM capability bit fail
 * on one port; a sweep fails each of the add's steps in turn through
 * ib_cm's fault hook (cm_fault_arm()).  Each case then checks that ib_cm
 * holds exactly the ports it should (cm_test_dev_refs()), that no CM MAD
 * agent is left on a port ib_cm gave up (registering one for the same
 * class and method succeeds), and that the CM capability bit is set only
 * on a port ib_cm uses, and cleared again on removal.
 *
 * Needs ib_cm.ko built with CONFIG_INFINIBAND_CM_TEST_HOOKS; load after it.
 * Reports through the shared harness (ib_selftest.h).
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_mad.h>

#include "cm_test_hook.h"
#include "ib_selftest.h"

MODULE_IMPORT_NS(IB_CM_TEST_NS);

#define MOCK_PORTS	2
/* No port fails the setting of IB_PORT_CM_SUP. */
#define MOCK_NO_PORT	U32_MAX
/* Bound of the fail-nth sweep: far more steps than a two-port add has. */
#define MOCK_SWEEP_MAX	64

struct mock_dev {
	struct ib_device ibdev;
	/* QP creation fails: the MAD layer does not take the device. */
	bool fail_qp;
	/* Setting IB_PORT_CM_SUP on this port fails. */
	u32 fail_set_port;
	/* By port number (0 is a switch's port). */
	u32 cap_mask[MOCK_PORTS + 1];
	unsigned int cm_sets[MOCK_PORTS + 1];
	unsigned int cm_clears[MOCK_PORTS + 1];
};

struct mock_pd {
	struct ib_pd ibpd;
};

struct mock_cq {
	struct ib_cq ibcq;
};

struct mock_qp {
	struct ib_qp ibqp;
};

static struct mock_dev *to_mock(struct ib_device *ibdev)
{
	return container_of(ibdev, struct mock_dev, ibdev);
}

static int mock_query_device(struct ib_device *ibdev,
			     struct ib_device_attr *attr,
			     struct ib_udata *udata)
{
	attr->kernel_cap_flags = IBK_LOCAL_DMA_LKEY;
	attr->max_qp = 4;
	attr->max_qp_wr = 1024;
	attr->max_send_sge = 4;
	attr->max_recv_sge = 4;
	attr->max_cq = 4;
	attr->max_cqe = 4096;
	attr->max_pd = 4;
	attr->max_pkeys = 1;
	attr->sys_image_guid = ibdev->node_guid;
	return 0;
}

static int mock_query_port(struct ib_device *ibdev, u32 port,
			   struct ib_port_attr *attr)
{
	attr->state = IB_PORT_DOWN;
	attr->phys_state = IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = IB_MTU_2048;
	attr->active_mtu = IB_MTU_256;
	attr->gid_tbl_len = 1;
	attr->pkey_tbl_len = 1;
	attr->port_cap_flags = to_mock(ibdev)->cap_mask[port];
	attr->max_msg_sz = 1 << 20;
	attr->active_width = IB_WIDTH_1X;
	attr->active_speed = IB_SPEED_SDR;
	return 0;
}

static int mock_modify_port(struct ib_device *ibdev, u32 port, int mask,
			    struct ib_port_modify *props)
{
	struct mock_dev *m = to_mock(ibdev);

	if (props->set_port_cap_mask & IB_PORT_CM_SUP) {
		m->cm_sets[port]++;
		if (port == m->fail_set_port)
			return -EIO;
	}
	if (props->clr_port_cap_mask & IB_PORT_CM_SUP)
		m->cm_clears[port]++;
	m->cap_mask[port] |= props->set_port_cap_mask;
	m->cap_mask[port] &= ~props->clr_port_cap_mask;
	return 0;
}

static int mock_get_port_immutable(struct ib_device *ibdev, u32 port,
				   struct ib_port_immutable *imm)
{
	imm->core_cap_flags = RDMA_CORE_CAP_PROT_IB | RDMA_CORE_CAP_IB_MAD |
			      RDMA_CORE_CAP_IB_CM;
	imm->pkey_tbl_len = 1;
	imm->gid_tbl_len = 1;
	imm->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static int mock_query_gid(struct ib_device *ibdev, u32 port, int index,
			  union ib_gid *gid)
{
	gid->global.subnet_prefix = cpu_to_be64(0xfe80000000000000ULL);
	gid->global.interface_id = cpu_to_be64(be64_to_cpu(ibdev->node_guid) +
					       port);
	return 0;
}

static int mock_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			   u16 *pkey)
{
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static int mock_alloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	return 0;
}

static int mock_dealloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	return 0;
}

#ifdef HAVE_CREATE_CQ_ATTR_BUNDLE
static int mock_create_cq(struct ib_cq *cq, const struct ib_cq_init_attr *attr,
			  struct uverbs_attr_bundle *attrs)
#else
static int mock_create_cq(struct ib_cq *cq, const struct ib_cq_init_attr *attr,
			  struct ib_udata *udata)
#endif
{
	cq->cqe = attr->cqe;
	return 0;
}

static int mock_destroy_cq(struct ib_cq *cq, struct ib_udata *udata)
{
	return 0;
}

static int mock_poll_cq(struct ib_cq *cq, int num, struct ib_wc *wc)
{
	return 0;
}

static int mock_req_notify_cq(struct ib_cq *cq, enum ib_cq_notify_flags flags)
{
	return 0;
}

static int mock_create_qp(struct ib_qp *qp, struct ib_qp_init_attr *attr,
			  struct ib_udata *udata)
{
	if (to_mock(qp->device)->fail_qp)
		return -EIO;
	qp->qp_num = attr->qp_type == IB_QPT_SMI ? 0 : 1;
	return 0;
}

static int mock_modify_qp(struct ib_qp *qp, struct ib_qp_attr *attr,
			  int mask, struct ib_udata *udata)
{
	return 0;
}

static int mock_destroy_qp(struct ib_qp *qp, struct ib_udata *udata)
{
	return 0;
}

static int mock_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			  const struct ib_send_wr **bad)
{
	*bad = wr;
	return -EOPNOTSUPP;
}

/* Taken and never completed; the MAD layer frees them when it closes. */
static int mock_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad)
{
	return 0;
}

static struct ib_mr *mock_get_dma_mr(struct ib_pd *pd, int access)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static struct ib_mr *mock_reg_user_mr(struct ib_pd *pd, u64 start, u64 len,
				      u64 virt, int access,
#ifdef HAVE_IB_DMAH
				      struct ib_dmah *dmah,
#endif
				      struct ib_udata *udata)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static int mock_dereg_mr(struct ib_mr *mr, struct ib_udata *udata)
{
	return 0;
}

/* each verb of the mock device is mock_<verb>() */
#define MOCK_OP(verb)	.verb = mock_##verb

/*
 * What ib_core, ib_mad and ib_cm call on a device, grouped by the object
 * they act on; each object's size entry sits with its verbs.
 */
static const struct ib_device_ops mock_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = 1,

	/* device and ports */
	MOCK_OP(query_device),
	MOCK_OP(query_port),
	MOCK_OP(modify_port),
	MOCK_OP(get_port_immutable),
	MOCK_OP(query_gid),
	MOCK_OP(query_pkey),

	/* protection domain and memory */
	INIT_RDMA_OBJ_SIZE(ib_pd, mock_pd, ibpd),
	MOCK_OP(alloc_pd),
	MOCK_OP(dealloc_pd),
	MOCK_OP(get_dma_mr),
	MOCK_OP(reg_user_mr),
	MOCK_OP(dereg_mr),

	/* completion queues */
	INIT_RDMA_OBJ_SIZE(ib_cq, mock_cq, ibcq),
	MOCK_OP(create_cq),
	MOCK_OP(destroy_cq),
	MOCK_OP(poll_cq),
	MOCK_OP(req_notify_cq),

	/* queue pairs: the MAD layer's QP0/QP1 */
	INIT_RDMA_OBJ_SIZE(ib_qp, mock_qp, ibqp),
	MOCK_OP(create_qp),
	MOCK_OP(modify_qp),
	MOCK_OP(destroy_qp),
	MOCK_OP(post_send),
	MOCK_OP(post_recv),
};

static u64 mock_guid = 0x0002c90300c0de00ULL;

/* A new unregistered device; a switch has port 0 only. */
static struct mock_dev *mock_alloc(bool is_switch)
{
	struct mock_dev *m = ib_alloc_device(mock_dev, ibdev);

	if (!m)
		return NULL;
	ib_set_device_ops(&m->ibdev, &mock_ops);
	m->fail_set_port = MOCK_NO_PORT;
	m->ibdev.node_guid = cpu_to_be64(mock_guid);
	mock_guid += 0x100;
	m->ibdev.num_comp_vectors = 1;
	if (is_switch) {
		m->ibdev.node_type = RDMA_NODE_IB_SWITCH;
		m->ibdev.is_switch = true;
		m->ibdev.phys_port_cnt = 1;
	} else {
		m->ibdev.node_type = RDMA_NODE_IB_CA;
		m->ibdev.phys_port_cnt = MOCK_PORTS;
	}
	return m;
}

static void mock_free(struct mock_dev *m, bool registered)
{
	if (registered)
		ib_unregister_device(&m->ibdev);
	ib_dealloc_device(&m->ibdev);
}

/*
 * A registered device (ib_cm's add has run on it): setting IB_PORT_CM_SUP
 * fails on @fail_set_port, QP creation fails if @fail_qp.  NULL, with the
 * case failed, when it cannot be made.
 */
static struct mock_dev *mock_add(bool is_switch, u32 fail_set_port,
				 bool fail_qp)
{
	struct mock_dev *m = mock_alloc(is_switch);
	int ret;

	if (!m) {
		IBST_FAIL("no memory for a device");
		return NULL;
	}
	m->fail_set_port = fail_set_port;
	m->fail_qp = fail_qp;
	ret = ib_register_device(&m->ibdev, "cmdevt%d", NULL);
	if (ret) {
		IBST_FAIL("ib_register_device() = %d", ret);
		mock_free(m, false);
		return NULL;
	}
	return m;
}

static void mock_send_done(struct ib_mad_agent *agent,
			   struct ib_mad_send_wc *wc)
{
}

static void mock_recv(struct ib_mad_agent *agent, struct ib_mad_send_buf *buf,
		      struct ib_mad_recv_wc *wc)
{
	ib_free_recv_mad(wc);
}

/*
 * Nobody serves the CM class on @port: an agent for the CM's class,
 * version and method registers (and is unregistered again at once).
 * When ib_cm's agent is there, the MAD layer refuses this one and logs
 * "Method 3 already in use".
 */
static bool mock_cm_class_free(struct mock_dev *m, u32 port)
{
	struct ib_mad_reg_req reg = {
		.mgmt_class = IB_MGMT_CLASS_CM,
		.mgmt_class_version = 2,
	};
	struct ib_mad_agent *agent;

	set_bit(IB_MGMT_METHOD_SEND, reg.method_mask);
	agent = ib_register_mad_agent(&m->ibdev, port, IB_QPT_GSI, &reg, 0,
				      mock_send_done, mock_recv, NULL, 0);
	if (IS_ERR(agent))
		return false;
	ib_unregister_mad_agent(agent);
	return true;
}

/* ib_cm runs a CM on @port of @m. */
static bool mock_cm_holds(struct mock_dev *m, u32 port)
{
	return cm_test_dev_refs(&m->ibdev, port) >= 1;
}

/* ib_cm gave @m up: no port held, no agent left, no CM_SUP set. */
static void mock_expect_given_up(struct mock_dev *m, bool mad_works)
{
	u32 p;

	rdma_for_each_port(&m->ibdev, p) {
		IBST_EXPECT(!mock_cm_holds(m, p));
		IBST_EXPECT_EQ(m->cap_mask[p] & IB_PORT_CM_SUP, 0);
		if (mad_works)
			IBST_EXPECT(mock_cm_class_free(m, p));
	}
}

/* ib_cm runs a CM on every port of @m. */
static void mock_expect_taken(struct mock_dev *m)
{
	u32 p;

	rdma_for_each_port(&m->ibdev, p) {
		IBST_EXPECT(mock_cm_holds(m, p));
		IBST_EXPECT_NE(m->cap_mask[p] & IB_PORT_CM_SUP, 0);
	}
}

/* Unregister @m, which ib_cm had taken, and check that it let go. */
static void mock_remove_taken(struct mock_dev *m)
{
	u32 p;

	ib_unregister_device(&m->ibdev);
	rdma_for_each_port(&m->ibdev, p) {
		IBST_EXPECT(!mock_cm_holds(m, p));
		IBST_EXPECT_EQ(m->cap_mask[p] & IB_PORT_CM_SUP, 0);
		IBST_EXPECT_EQ(m->cm_clears[p], 1);
	}
	mock_free(m, false);
}

static void two_ports_add_remove(void)
{
	struct mock_dev *m = mock_add(false, MOCK_NO_PORT, false);

	if (!m)
		return;
	mock_expect_taken(m);
	IBST_EXPECT(!mock_cm_class_free(m, 1));
	IBST_EXPECT(!mock_cm_class_free(m, 2));
	mock_remove_taken(m);
}

/* The MAD layer is not on the device: port 1's agent fails, 2 is left. */
static void mad_agent_fails_on_port1(void)
{
	struct mock_dev *m = mock_add(false, MOCK_NO_PORT, true);

	if (!m)
		return;
	mock_expect_given_up(m, false);
	IBST_EXPECT_EQ(m->cm_sets[1], 0);
	IBST_EXPECT_EQ(m->cm_sets[2] + m->cm_clears[2], 0);
	mock_free(m, true);
}

/* Port 1 fails its last step, after its agent: port 2 is never set up. */
static void port1_fails_port2_untouched(void)
{
	struct mock_dev *m = mock_add(false, 1, false);

	if (!m)
		return;
	mock_expect_given_up(m, true);
	IBST_EXPECT_EQ(m->cm_sets[1], 1);
	IBST_EXPECT_EQ(m->cm_sets[2] + m->cm_clears[2], 0);
	mock_free(m, true);
}

/* Port 2 fails after port 1 was fully set up: port 1 is undone. */
static void port2_fails_port1_undone(void)
{
	struct mock_dev *m = mock_add(false, 2, false);

	if (!m)
		return;
	mock_expect_given_up(m, true);
	IBST_EXPECT_EQ(m->cm_sets[1], 1);
	IBST_EXPECT_EQ(m->cm_clears[1], 1);
	IBST_EXPECT_EQ(m->cm_sets[2], 1);
	mock_free(m, true);
}

/* ib_cm's fault hook: its allocations and each step of adding a device */
static void dev_nth_arm(unsigned int nth)
{
	cm_fault_arm(nth);
}

static bool dev_nth_disarm(void)
{
	return !cm_fault_disarm();
}

static const struct ibst_nth_kind dev_nth_cm = {
	.name = "cm_fault",
	.arm = dev_nth_arm,
	.disarm = dev_nth_disarm,
};

/* The add of a two-port device, with its n-th step failed. */
struct dev_nth_add {
	struct ibst_nth t;
	unsigned int on_port1;
	unsigned int after_port1;
	bool broken;
};

static void dev_nth_add_step(struct ibst_nth *t)
{
	struct dev_nth_add *d = container_of(t, struct dev_nth_add, t);
	struct mock_dev *m;

	m = IBST_NTH_ARMED(t, mock_add(false, MOCK_NO_PORT, false));
	if (!m) {
		/* the mock itself failed, and said so */
		d->broken = true;
		t->injected = false;
		return;
	}
	if (!t->injected) {
		/* fewer steps than nth: both ports are taken */
		mock_expect_taken(m);
		mock_remove_taken(m);
		return;
	}
	mock_expect_given_up(m, true);
	/* Port 1's CM_SUP was set: the failed step came after it. */
	if (m->cm_sets[1])
		d->after_port1++;
	else
		d->on_port1++;
	if (m->cm_sets[1] && !m->cm_clears[1])
		IBST_FAIL("fail_nth %u: port 1 set up, not undone", t->nth);
	mock_free(m, true);
}

/*
 * Fail the n-th step of ib_cm's add of a two-port device, n = 1, 2, ...,
 * until an add meets no fault: each failed add must leave nothing behind,
 * the one without a fault must take both ports.
 */
static void fail_nth_sweep_two_ports(void)
{
	struct dev_nth_add d = {
		.t = { .kind = &dev_nth_cm, .step = dev_nth_add_step,
		       .max = MOCK_SWEEP_MAX },
	};
	unsigned int n;

	n = ibst_fail_nth_sweep(&d.t);
	if (d.broken)
		return;
	ibst_diag("%u fault point(s) on the add: %u before port 1 was set up, %u after",
		  n - 1, d.on_port1, d.after_port1);
	IBST_EXPECT_LE(n, MOCK_SWEEP_MAX);
	IBST_EXPECT_GT(d.on_port1, 0);
	IBST_EXPECT_GT(d.after_port1, 0);
}

/*
 * The SA client of ib_core (6.1 and 6.12 alike) reads the capabilities
 * of port 1 of every device it is added to (ib_sa_add_one() asks
 * rdma_cap_ib_sa() about port i + 1 instead of i + rdma_start_port()):
 * beyond the port data of a switch, whose only port is 0, which KASAN
 * reports.  So the switch cases run only when asked for.
 */
static bool switch_dev;
module_param(switch_dev, bool, 0444);
MODULE_PARM_DESC(switch_dev,
		 "also register mock switches (ib_core's SA client reads past their port data)");

static bool mock_switch_wanted(void)
{
	if (!switch_dev)
		ibst_skip("switch_dev=0: ib_core's SA client reads past a switch's port data");
	return switch_dev;
}

/* A switch runs its CM on port 0, its only port. */
static void switch_port0_add_remove(void)
{
	struct mock_dev *m;

	if (!mock_switch_wanted())
		return;
	m = mock_add(true, MOCK_NO_PORT, false);
	if (!m)
		return;
	IBST_EXPECT_EQ(rdma_start_port(&m->ibdev), 0);
	IBST_EXPECT_EQ(rdma_end_port(&m->ibdev), 0);
	mock_expect_taken(m);
	IBST_EXPECT(!mock_cm_class_free(m, 0));
	mock_remove_taken(m);
}

/* The same failure on a switch: port 0 is undone. */
static void switch_port0_fails(void)
{
	struct mock_dev *m;

	if (!mock_switch_wanted())
		return;
	m = mock_add(true, 0, false);
	if (!m)
		return;
	mock_expect_given_up(m, true);
	IBST_EXPECT_EQ(m->cm_sets[0], 1);
	IBST_EXPECT_EQ(m->cm_clears[0], 1);
	mock_free(m, true);
}

static const struct ibst_case cases[] = {
	IBST_CASE(two_ports_add_remove),
	IBST_CASE(mad_agent_fails_on_port1),
	IBST_CASE(port1_fails_port2_untouched),
	IBST_CASE(port2_fails_port1_undone),
	IBST_CASE(fail_nth_sweep_two_ports),
	IBST_CASE(switch_port0_add_remove),
	IBST_CASE(switch_port0_fails),
	{}
};

IBST_SUITE(ib_cm_dev, cases, NULL, NULL);
MODULE_DESCRIPTION("ib_cm device add/removal self-test on mock devices");
MODULE_LICENSE("Dual BSD/GPL");
