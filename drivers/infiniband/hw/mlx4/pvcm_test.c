// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * White-box test of the mlx4_ib PV-CM id cache.
 *
 * The module links the cm.o of mlx4_ib.ko, whose test hooks and
 * internals (pvcm_priv.h) CONFIG_MLX4_IB_PVCM_TEST_HOOKS exposes, sets
 * short timeouts and injects faults, and drives the cache with synthetic
 * CM MADs through a fake master device.  Every case ends by proving the
 * cache empty.  It
 * reports through the harness shared with ib_cm's tests
 * (drivers/infiniband/core/ib_selftest.h): KTAP from module_init, failing
 * the load on any failure, or one KUnit result per case on a kernel with
 * KUnit.
 */
#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/rhashtable.h>
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
#include "../../core/ib_selftest.h"

#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/random.h>

#define T_SLAVES	16
#define T_PORT		1
#define T_GID_BASE	0x0002c90300a00000ULL	/* + slave = a VF's GID */
#define T_PEER_GUID_A	cpu_to_be64(0x0002c90300f0000aULL)
#define T_PEER_GUID_B	cpu_to_be64(0x0002c90300f0000bULL)

#define PVCM_T_PORT	T_PORT
#define PVCM_T_GID_BASE	T_GID_BASE
#define PVCM_T_SLAVES	T_SLAVES
#include "pvcm_test_util.h"

/* ---- synthetic MADs ---------------------------------------------------- */

static void t_mad(struct ib_mad *mad, __be16 attr, u32 local, u32 remote)
{
	memset(mad, 0, sizeof(*mad));
	mad->mad_hdr.base_version = IB_MGMT_BASE_VERSION;
	mad->mad_hdr.mgmt_class = IB_MGMT_CLASS_CM;
	mad->mad_hdr.class_version = PVCM_CM_CLASS_VERSION;
	mad->mad_hdr.method = IB_MGMT_METHOD_SEND;
	mad->mad_hdr.attr_id = attr;
	put_unaligned_be32(local, mad->data);
	if (attr != CM_SIDR_REQ_ATTR_ID && attr != CM_SIDR_REP_ATTR_ID &&
	    attr != CM_REQ_ATTR_ID)
		put_unaligned_be32(remote, mad->data + 4);
}

/* a REQ from a remote peer with CA GUID @guid to the VF @slave */
static void t_req_in(struct ib_mad *mad, u32 local, __be64 guid, int slave)
{
	union ib_gid dgid = {};

	t_mad(mad, CM_REQ_ATTR_ID, local, 0);
	memcpy(mad->data + 16, &guid, sizeof(guid));
	dgid.global.interface_id = cpu_to_be64(T_GID_BASE + slave);
	memcpy(mad->data + 72, &dgid, sizeof(dgid));
}

static void t_rej(struct ib_mad *mad, u32 local, u32 remote, u16 reason,
		  const __be64 *ari_guid)
{
	struct cm_rej_msg *rej = (struct cm_rej_msg *)mad;

	t_mad(mad, CM_REJ_ATTR_ID, local, remote);
	IBA_SET(CM_REJ_REASON, rej, reason);
	if (ari_guid) {
		IBA_SET(CM_REJ_REJECTED_INFO_LENGTH, rej, sizeof(*ari_guid));
		memcpy(IBA_GET_MEM_PTR(CM_REJ_ARI, rej), ari_guid,
		       sizeof(*ari_guid));
	}
}

static u32 t_local(const struct ib_mad *mad)
{
	return get_unaligned_be32(mad->data);
}

static u32 t_remote(const struct ib_mad *mad)
{
	if (mad->mad_hdr.attr_id == CM_SIDR_REP_ATTR_ID)
		return get_unaligned_be32(mad->data);
	return get_unaligned_be32(mad->data + 4);
}

static int t_mux(int slave, struct ib_mad *mad)
{
	return mlx4_ib_multiplex_cm_handler(&t_dev->ib_dev, T_PORT, slave,
					    mad);
}

static int t_dmx(struct ib_mad *mad, int *slave)
{
	*slave = -1;
	return mlx4_ib_demux_cm_handler(&t_dev->ib_dev, T_PORT, slave, 0, mad);
}

/* a MAD for which the caller (mad.c, from the GRH) already chose @slave */
static int t_dmx_to(struct ib_mad *mad, int slave)
{
	int to = slave, err;

	err = mlx4_ib_demux_cm_handler(&t_dev->ib_dev, T_PORT, &to, 0, mad);
	IBST_EXPECT_EQ(to, slave);
	return err;
}

/* a MAD that arrived with the P_Key at @pkey_index of the port's table */
static int t_dmx_pkey(struct ib_mad *mad, int *slave, u16 pkey_index)
{
	return mlx4_ib_demux_cm_handler(&t_dev->ib_dev, T_PORT, slave,
					pkey_index, mad);
}

/* RoCE: mad.c delivers to the slave of the destination GID */
static int t_dmx_roce(struct ib_mad *mad, int slave)
{
	return mlx4_ib_demux_cm_handler_to_slave(&t_dev->ib_dev, T_PORT,
						 slave, 0, mad);
}

static struct mlx4_ib_pvcm_stats t_stats(int slave)
{
	struct mlx4_ib_pvcm_stats st;

	mlx4_ib_pvcm_get_stats(t_dev, slave, &st);
	return st;
}

/* VF @slave sends @attr for its id @sl; returns the pv id on the wire */
static u32 t_out(int slave, __be16 attr, u32 sl, u32 remote, int *err)
{
	struct ib_mad mad;

	t_mad(&mad, attr, sl, remote);
	*err = t_mux(slave, &mad);
	return t_local(&mad);
}

/*
 * End the life of every route now.  Routes live long in this module (a
 * case that delivers a REQ and answers it must not depend on how fast a
 * loaded machine runs it), so each case ends them here and the reaper
 * frees them, as it would once their time is over.
 */
static void t_expire_routes(void)
{
	struct pvcm_route *r;
	u32 now = jiffies;
	int i, j;

	spin_lock(&t_pv->lock);
	for (i = 0; i < MLX4_MFUNC_MAX; i++)
		for (j = 0; j < PVCM_ROUTE_LISTS; j++)
			list_for_each_entry(r, &t_pv->slaves[i].routes[j], link)
				r->deadline = now;
	pvcm_arm(t_pv, now);
	spin_unlock(&t_pv->lock);
}

/*
 * Wait until nothing is live, in TimeWait or routed, then prove the cache
 * empty: counters balance, no index holds anything, every object is back.
 */
static void t_settle(void)
{
	unsigned long until = jiffies + 5 * HZ;
	struct mlx4_ib_pvcm_stats st;

	t_expire_routes();
	for (;;) {
		flush_work(&t_pv->clean_work);
		st = t_stats(-1);
		if (!st.live && !st.timewait && !st.routes)
			break;
		if (time_after(jiffies, until)) {
			IBST_FAIL("settle: live %llu timewait %llu routes %llu",
				  st.live, st.timewait, st.routes);
			return;
		}
		msleep(20);
	}
	rcu_barrier();
	IBST_EXPECT_EQ(st.allocated, st.freed);
	IBST_EXPECT(xa_empty(&t_pv->pv_ids));
	IBST_EXPECT_EQ(atomic_read(&t_pv->sl_ids.nelems), 0);
	IBST_EXPECT_EQ(atomic_read(&t_pv->routes.nelems), 0);
	IBST_EXPECT_EQ(atomic_long_read(&pvcm_objects), 0);
}

static bool t_wait_freed(u32 pv_cm_id)
{
	unsigned long until = jiffies + 3 * HZ;

	while (xa_load(&t_pv->pv_ids, pvcm_index(t_pv, pv_cm_id))) {
		if (time_after(jiffies, until))
			return false;
		msleep(20);
	}
	return true;
}

/* wait until the entry of @pv_cm_id is in @state (polled, 3 s at most) */
static bool t_wait_state(u32 pv_cm_id, u8 state)
{
	unsigned long until = jiffies + 3 * HZ;
	struct pvcm_entry *e;
	bool in;

	for (;;) {
		rcu_read_lock();
		e = xa_load(&t_pv->pv_ids, pvcm_index(t_pv, pv_cm_id));
		in = e && READ_ONCE(e->state) == state;
		rcu_read_unlock();
		if (in)
			return true;
		if (time_after(jiffies, until))
			return false;
		usleep_range(500, 1000);
	}
}

static u8 t_state(u32 pv_cm_id)
{
	struct pvcm_entry *e;
	u8 state = PVCM_DEAD;

	rcu_read_lock();
	e = xa_load(&t_pv->pv_ids, pvcm_index(t_pv, pv_cm_id));
	if (e)
		state = READ_ONCE(e->state);
	rcu_read_unlock();
	return state;
}

/* ---- cases --------------------------------------------------------------- */

/* the VF opens and closes a connection; the remote answers */
static void conn_active_round_trip(void)
{
	const int s = 1;
	struct ib_mad mad;
	int err, to;
	u32 pv;

	pv = t_out(s, CM_REQ_ATTR_ID, 0x111, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_NE(pv, 0);
	IBST_EXPECT_EQ(t_stats(s).live, 1);

	t_mad(&mad, CM_REP_ATTR_ID, 0xaaa, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, s);
	IBST_EXPECT_EQ(t_remote(&mad), 0x111);
	IBST_EXPECT_EQ(t_local(&mad), 0xaaa);

	IBST_EXPECT_EQ(t_out(s, CM_RTU_ATTR_ID, 0x111, 0xaaa, &err), pv);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_EQ(t_out(s, CM_DREQ_ATTR_ID, 0x111, 0xaaa, &err), pv);
	IBST_EXPECT_EQ(t_stats(s).live, 0);
	IBST_EXPECT_EQ(t_stats(s).timewait, 1);

	/* the reply still finds its way back during TimeWait */
	t_mad(&mad, CM_DREP_ATTR_ID, 0xaaa, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, s);
	IBST_EXPECT_EQ(t_remote(&mad), 0x111);
	t_settle();
}

/* a remote peer connects to the VF and disconnects */
static void conn_passive_round_trip(void)
{
	const int s = 2;
	struct ib_mad mad;
	int err, to;
	u32 pv;

	t_req_in(&mad, 0xbbb, T_PEER_GUID_A, s);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, s);
	IBST_EXPECT_EQ(t_local(&mad), 0xbbb);

	pv = t_out(s, CM_REP_ATTR_ID, 0x222, 0xbbb, &err);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_NE(pv, 0);

	t_mad(&mad, CM_RTU_ATTR_ID, 0xbbb, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, s);
	IBST_EXPECT_EQ(t_remote(&mad), 0x222);

	t_mad(&mad, CM_DREQ_ATTR_ID, 0xbbb, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(t_remote(&mad), 0x222);
	IBST_EXPECT_EQ(t_stats(s).timewait, 1);

	IBST_EXPECT_EQ(t_out(s, CM_DREP_ATTR_ID, 0x222, 0xbbb, &err), pv);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_EQ(t_stats(s).allocated, 1);
	t_settle();
}

/*
 * pv ids are not a count: each device XORs its indices with its own random
 * operand, so a second device hands out other ids for the same indices,
 * and no id is 0.
 */
static void pv_ids_differ_per_device(void)
{
	struct mlx4_dev *mdev2 = kzalloc(sizeof(*mdev2), GFP_KERNEL);
	struct mlx4_ib_dev *dev2 = kzalloc(sizeof(*dev2), GFP_KERNEL);
	struct ib_mad mad;
	u32 pv2;

	IBST_EXPECT_NOT_NULL(mdev2);
	IBST_EXPECT_NOT_NULL(dev2);
	if (!mdev2 || !dev2)
		goto out;
	mdev2->flags = MLX4_FLAG_MASTER;
	dev2->dev = mdev2;
	mlx4_ib_cm_paravirt_init(dev2);
	IBST_EXPECT(dev2->sriov.pvcm.ready);
	t_mad(&mad, CM_REQ_ATTR_ID, 0x123, 0);
	IBST_EXPECT_EQ(mlx4_ib_multiplex_cm_handler(&dev2->ib_dev, T_PORT, 1,
						    &mad), 0);
	pv2 = t_local(&mad);
	IBST_EXPECT_EQ(pvcm_index(&dev2->sriov.pvcm, pv2), 1);
	IBST_EXPECT_NE(pv2, pvcm_id_of(t_pv, 1));
	IBST_EXPECT_NE(pv2 & BIT(31), 0);
	mlx4_ib_cm_paravirt_destroy(dev2);
out:
	kfree(dev2);
	kfree(mdev2);
}

/* a released pv id stays reserved for TimeWait, then becomes free again */
static void timewait_reserves_pv_id(void)
{
	unsigned long timewait = pvcm_test_timewait;
	const int s = 3;
	int err;
	u32 pv, pv2, pv3;

	/* long enough to outlast the next allocation on a loaded guest */
	pvcm_test_timewait = HZ;
	pv = t_out(s, CM_REQ_ATTR_ID, 0x301, 0, &err);
	t_out(s, CM_DREQ_ATTR_ID, 0x301, 0, &err);
	IBST_EXPECT_NOT_NULL(xa_load(&t_pv->pv_ids, pvcm_index(t_pv, pv)));

	/* point the cyclic allocator at the reserved id */
	t_pv->pv_next = pvcm_index(t_pv, pv);
	pv2 = t_out(s, CM_REQ_ATTR_ID, 0x302, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_NE(pv2, pv);

	pvcm_test_timewait = timewait;
	IBST_EXPECT(t_wait_freed(pv));
	t_pv->pv_next = pvcm_index(t_pv, pv);
	pv3 = t_out(s, CM_REQ_ATTR_ID, 0x303, 0, &err);
	IBST_EXPECT_EQ(pv3, pv);

	t_out(s, CM_DREQ_ATTR_ID, 0x302, 0, &err);
	t_out(s, CM_DREQ_ATTR_ID, 0x303, 0, &err);
	t_settle();
}

/*
 * A new entry sits in pv_ids before its creator publishes it: until then
 * a wire MAD that names its id, a stranger's REP included, finds nothing
 * and leaves it as it was, and a lookup does not report it.
 */
static void unpublished_entry_is_no_entry(void)
{
	const int s = 6;
	struct mlx4_ib_pvcm_stats st = t_stats(s);
	struct pvcm_entry *e;
	struct ib_mad mad;
	int to, slave;
	u32 idx, pv, sl;

	e = pvcm_entry_new(t_pv, s, 0x3f0, 0, false, &idx);
	IBST_EXPECT_NOT_ERR(e);
	if (IS_ERR(e))
		return;
	pv = pvcm_id_of(t_pv, idx);
	rcu_read_lock();
	IBST_EXPECT_PTR_EQ(pvcm_find_pv(t_pv, pv), e);
	IBST_EXPECT(!pvcm_usable(t_pv, e));
	rcu_read_unlock();
	to = -1;
	t_mad(&mad, CM_REP_ATTR_ID, 0x3f1, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -ENOENT);
	IBST_EXPECT_EQ(to, -1);
	t_mad(&mad, CM_RTU_ATTR_ID, 0x3f1, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -ENOENT);
	IBST_EXPECT_EQ(t_dmx_to(&mad, s), -ENOENT);
	IBST_EXPECT_EQ(mlx4_ib_pvcm_lookup(t_dev, pv, &slave, &sl), -ENOENT);
	IBST_EXPECT_EQ(READ_ONCE(e->remote_id), 0);
	IBST_EXPECT_EQ(READ_ONCE(e->state), PVCM_DEAD);
	IBST_EXPECT_EQ(t_stats(s).live, st.live);
	IBST_EXPECT_EQ(t_stats(s).allocated, st.allocated);
	pvcm_entry_abort(t_pv, e, idx);
	rcu_read_lock();
	IBST_EXPECT_NULL(pvcm_find_pv(t_pv, pv));
	rcu_read_unlock();
}

/*
 * An allocating xarray keeps index 0 busy with its zero entry once it has
 * a node: the pv id that maps to index 0 is a wire MAD's id like any other
 * unknown one, and neither a lookup nor a demux may spin on it.
 */
static void pv_id_of_index_zero_is_no_entry(void)
{
	const int s = 12;
	struct ib_mad mad;
	int err, to, slave;
	u32 pv, pv0 = pvcm_id_of(t_pv, 0), sl;

	/* two entries: the array has a node, slot 0 of which is busy */
	pv = t_out(s, CM_REQ_ATTR_ID, 0x3e1, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	t_out(s, CM_REQ_ATTR_ID, 0x3e2, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_NE(pv, pv0);
	rcu_read_lock();
	IBST_EXPECT_NULL(pvcm_find_pv(t_pv, pv0));
	rcu_read_unlock();
	to = -1;
	t_mad(&mad, CM_REP_ATTR_ID, 0x3e3, pv0);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -ENOENT);
	IBST_EXPECT_EQ(to, -1);
	t_mad(&mad, CM_RTU_ATTR_ID, 0x3e3, pv0);
	IBST_EXPECT_EQ(t_dmx_to(&mad, s), -ENOENT);
	IBST_EXPECT_EQ(mlx4_ib_pvcm_lookup(t_dev, pv0, &slave, &sl), -ENOENT);
	t_out(s, CM_DREQ_ATTR_ID, 0x3e1, 0, &err);
	t_out(s, CM_DREQ_ATTR_ID, 0x3e2, 0, &err);
	t_settle();
}

/* old leak: the remote rejects the VF's REQ */
static void remote_rej_releases(void)
{
	const int s = 4;
	struct ib_mad mad;
	int err, to;
	u32 pv;

	pv = t_out(s, CM_REQ_ATTR_ID, 0x401, 0, &err);
	t_rej(&mad, 0xccc, pv, IB_CM_REJ_CONSUMER_DEFINED, NULL);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, s);
	IBST_EXPECT_EQ(t_remote(&mad), 0x401);
	IBST_EXPECT_EQ(t_stats(s).timewait, 1);
	t_settle();
}

/* the VF rejects after REQ/REP: its REJ ends the mapping */
static void vf_rej_after_req_rep_releases(void)
{
	const int s = 5;
	struct ib_mad mad;
	int err, to;
	u32 pv;

	/* VF was active: REQ, the peer's REP, then the VF rejects it */
	pv = t_out(s, CM_REQ_ATTR_ID, 0x501, 0, &err);
	t_mad(&mad, CM_REP_ATTR_ID, 0xddd, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	t_rej(&mad, 0x501, 0xddd, IB_CM_REJ_CONSUMER_DEFINED, NULL);
	IBA_SET(CM_REJ_MESSAGE_REJECTED, (struct cm_rej_msg *)&mad, 1);
	IBST_EXPECT_EQ(t_mux(s, &mad), 0);
	IBST_EXPECT_EQ(t_local(&mad), pv);

	/* VF was passive: remote REQ, VF REP, then VF REJ */
	t_req_in(&mad, 0xeee, T_PEER_GUID_A, s);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	pv = t_out(s, CM_REP_ATTR_ID, 0x502, 0xeee, &err);
	t_rej(&mad, 0x502, 0xeee, IB_CM_REJ_CONSUMER_DEFINED, NULL);
	IBST_EXPECT_EQ(t_mux(s, &mad), 0);
	IBST_EXPECT_EQ(t_local(&mad), pv);
	IBST_EXPECT_EQ(t_stats(s).live, 0);
	IBST_EXPECT_EQ(t_stats(s).timewait, 2);

	/* a REJ of a REQ the VF never answered maps nothing, local id 0 */
	t_req_in(&mad, 0xfff, T_PEER_GUID_A, s);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	t_rej(&mad, 0x503, 0xfff, IB_CM_REJ_CONSUMER_DEFINED, NULL);
	IBST_EXPECT_EQ(t_mux(s, &mad), 0);
	IBST_EXPECT_EQ(t_local(&mad), 0);
	IBST_EXPECT_EQ(t_stats(s).allocated, 2);
	t_settle();
}

/* old race: DREQ, DREP, then the VF reuses its id for a new connection */
static void dreq_drep_id_reuse(void)
{
	const int s = 6;
	struct ib_mad mad;
	int err, to;
	u32 pv1, pv2;

	pv1 = t_out(s, CM_REQ_ATTR_ID, 0x601, 0, &err);
	t_mad(&mad, CM_REP_ATTR_ID, 0x1, pv1);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	t_out(s, CM_RTU_ATTR_ID, 0x601, 0x1, &err);
	t_out(s, CM_DREQ_ATTR_ID, 0x601, 0x1, &err);
	t_mad(&mad, CM_DREP_ATTR_ID, 0x1, pv1);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);

	pv2 = t_out(s, CM_REQ_ATTR_ID, 0x601, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_NE(pv2, pv1);
	t_mad(&mad, CM_REP_ATTR_ID, 0x2, pv2);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	t_out(s, CM_RTU_ATTR_ID, 0x601, 0x2, &err);

	/* the old connection's TimeWait ends: the new one must survive */
	IBST_EXPECT(t_wait_freed(pv1));
	IBST_EXPECT_EQ(t_out(s, CM_LAP_ATTR_ID, 0x601, 0x2, &err), pv2);
	IBST_EXPECT_EQ(err, 0);
	t_mad(&mad, CM_APR_ATTR_ID, 0x2, pv2);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(t_remote(&mad), 0x601);

	t_out(s, CM_DREQ_ATTR_ID, 0x601, 0x2, &err);
	IBST_EXPECT_EQ(err, 0);
	t_settle();
	IBST_EXPECT_EQ(t_stats(s).freed, 2);
}

/* a reader's pin keeps the memory while the reaper frees the entry */
static void pinned_entry_outlives_reap(void)
{
	const int s = 4;
	struct pvcm_entry *e;
	int err;
	u32 pv;

	pv = t_out(s, CM_REQ_ATTR_ID, 0xe01, 0, &err);
	e = pvcm_pin_pv(t_pv, pv);
	IBST_EXPECT_NOT_NULL(e);
	if (!e)
		return;
	t_out(s, CM_DREQ_ATTR_ID, 0xe01, 0, &err);
	IBST_EXPECT(t_wait_freed(pv));

	/* unlinked, but not freed: the pin is the last reference */
	rcu_barrier();
	IBST_EXPECT_EQ(READ_ONCE(e->state), PVCM_DEAD);
	IBST_EXPECT_EQ(refcount_read(&e->ref), 1);
	IBST_EXPECT_EQ(atomic_long_read(&pvcm_objects), 1);
	IBST_EXPECT_NULL(pvcm_pin_pv(t_pv, pv));
	IBST_EXPECT_NULL(pvcm_pin_sl(t_pv, s, 0xe01));

	/* a late event on the dead entry changes nothing */
	pvcm_event(t_pv, e, PVCM_EV_RELEASE);
	IBST_EXPECT_EQ(t_stats(s).timewait, 0);
	IBST_EXPECT_NULL(xa_load(&t_pv->pv_ids, pvcm_index(t_pv, pv)));

	pvcm_put(e);
	t_settle();
}

/* connections that never reach RTU expire */
static void never_rtu_expires(void)
{
	const int s = 7;
	struct ib_mad mad;
	int err, to;
	u32 pv, pv2;

	t_req_in(&mad, 0x9, T_PEER_GUID_A, s);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	pv = t_out(s, CM_REP_ATTR_ID, 0x701, 0x9, &err);
	pv2 = t_out(s, CM_REP_ATTR_ID, 0x701, 0x9, &err);	/* duplicate */
	IBST_EXPECT_EQ(pv2, pv);
	t_out(s, CM_REQ_ATTR_ID, 0x702, 0, &err);
	IBST_EXPECT_EQ(t_stats(s).allocated, 2);
	IBST_EXPECT_EQ(t_stats(s).live, 2);
	IBST_EXPECT(t_wait_freed(pv));
	t_settle();
}

/*
 * An entry that expired idle while its connection was alive comes back:
 * a REP (the peer answering late after an MRA, or the VF repeating its
 * REP) makes it pending again; an RTU, LAP or APR makes it established.
 */
static void idle_expired_entry_revives(void)
{
	const int s = 13;
	struct ib_mad mad;
	u32 pv, pv2, pv3;
	int err, to;

	/* active VF: REQ, the peer's MRA, its REP after the idle timeout */
	pv = t_out(s, CM_REQ_ATTR_ID, 0x8a1, 0, &err);
	t_mad(&mad, CM_MRA_ATTR_ID, 0xab1, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT(t_wait_state(pv, PVCM_TIMEWAIT));
	t_mad(&mad, CM_REP_ATTR_ID, 0xab1, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(t_state(pv), PVCM_PENDING);
	IBST_EXPECT_EQ(t_out(s, CM_RTU_ATTR_ID, 0x8a1, 0xab1, &err), pv);
	IBST_EXPECT_EQ(t_state(pv), PVCM_ESTABLISHED);

	/* passive VF, RTU lost: the peer's LAP proves the connection */
	t_req_in(&mad, 0xab2, T_PEER_GUID_A, s);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	pv2 = t_out(s, CM_REP_ATTR_ID, 0x8a2, 0xab2, &err);
	IBST_EXPECT(t_wait_state(pv2, PVCM_TIMEWAIT));
	t_mad(&mad, CM_LAP_ATTR_ID, 0xab2, pv2);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(t_state(pv2), PVCM_ESTABLISHED);

	/* passive VF repeating its REP keeps its pv id */
	t_req_in(&mad, 0xab3, T_PEER_GUID_A, s);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	pv3 = t_out(s, CM_REP_ATTR_ID, 0x8a3, 0xab3, &err);
	IBST_EXPECT(t_wait_state(pv3, PVCM_TIMEWAIT));
	IBST_EXPECT_EQ(t_out(s, CM_REP_ATTR_ID, 0x8a3, 0xab3, &err), pv3);
	IBST_EXPECT_EQ(t_state(pv3), PVCM_PENDING);
	t_mad(&mad, CM_APR_ATTR_ID, 0xab3, pv3);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(t_state(pv3), PVCM_ESTABLISHED);

	/* established now: they outlive the idle timeout and TimeWait */
	msleep(400);
	IBST_EXPECT_EQ(t_stats(s).live, 3);
	IBST_EXPECT_EQ(t_stats(s).allocated, 3);
	t_out(s, CM_DREQ_ATTR_ID, 0x8a1, 0xab1, &err);
	IBST_EXPECT_EQ(err, 0);
	t_out(s, CM_DREQ_ATTR_ID, 0x8a2, 0xab2, &err);
	IBST_EXPECT_EQ(err, 0);
	t_out(s, CM_DREQ_ATTR_ID, 0x8a3, 0xab3, &err);
	IBST_EXPECT_EQ(err, 0);
	t_settle();
}

/*
 * An idle-expired entry whose connection then ends (the peer's DREQ, the
 * VF's DREP) stays ended: a late LAP or RTU does not bring it back.
 */
static void ended_idle_entry_stays_ended(void)
{
	const int s = 13;
	struct ib_mad mad;
	int err, to;
	u32 pv;

	t_req_in(&mad, 0xac1, T_PEER_GUID_A, s);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	pv = t_out(s, CM_REP_ATTR_ID, 0x8b1, 0xac1, &err);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT(t_wait_state(pv, PVCM_TIMEWAIT));
	t_mad(&mad, CM_DREQ_ATTR_ID, 0xac1, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	t_out(s, CM_DREP_ATTR_ID, 0x8b1, 0xac1, &err);
	IBST_EXPECT_EQ(err, 0);
	t_mad(&mad, CM_LAP_ATTR_ID, 0xac1, pv);
	t_dmx(&mad, &to);
	IBST_EXPECT_EQ(t_state(pv), PVCM_TIMEWAIT);
	t_mad(&mad, CM_RTU_ATTR_ID, 0xac1, pv);
	t_dmx(&mad, &to);
	IBST_EXPECT_EQ(t_state(pv), PVCM_TIMEWAIT);
	IBST_EXPECT_EQ(t_stats(s).live, 0);
	t_settle();
}

/* SIDR: the request maps, the reply releases; the VF's replies pass */
static void sidr_rep_releases(void)
{
	const int s = 8;
	struct ib_mad mad;
	int err, to;
	u32 pv;

	pv = t_out(s, CM_SIDR_REQ_ATTR_ID, 0x801, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_EQ(t_stats(s).live, 1);
	t_mad(&mad, CM_SIDR_REP_ATTR_ID, pv, 0);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, s);
	IBST_EXPECT_EQ(t_remote(&mad), 0x801);
	IBST_EXPECT_EQ(t_stats(s).live, 0);
	IBST_EXPECT_EQ(t_stats(s).timewait, 1);

	/* the VF answers a remote SIDR_REQ delivered to it: nothing to map */
	t_mad(&mad, CM_SIDR_REQ_ATTR_ID, 0x5151, 0);
	IBST_EXPECT_EQ(t_dmx_to(&mad, s), 0);
	t_mad(&mad, CM_SIDR_REP_ATTR_ID, 0x5151, 0);
	IBST_EXPECT_EQ(t_mux(s, &mad), 0);
	IBST_EXPECT_EQ(t_local(&mad), 0x5151);
	IBST_EXPECT_EQ(t_stats(s).allocated, 1);
	t_settle();
}

/*
 * A VF's REJ with no mapping only passes as the rejection of a REQ, and
 * with local id 0: it cannot carry another VF's pv id to the peer.
 */
static void vf_rej_unmapped_only_rejects_req(void)
{
	struct mlx4_ib_pvcm_stats before;
	const int a = 6, b = 7;
	struct ib_mad mad, orig;
	int err, to;
	u32 pv;

	pv = t_out(a, CM_REQ_ATTR_ID, 0x661, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	before = t_stats(b);

	/* b "rejects a REP" naming a's pv id as its own: dropped as is */
	t_rej(&mad, pv, 0x9, IB_CM_REJ_CONSUMER_DEFINED, NULL);
	IBA_SET(CM_REJ_MESSAGE_REJECTED, (struct cm_rej_msg *)&mad, 1);
	orig = mad;
	IBST_EXPECT_EQ(t_mux(b, &mad), -ENOENT);
	IBST_EXPECT_MEMEQ(&mad, &orig, sizeof(mad));
	IBA_SET(CM_REJ_MESSAGE_REJECTED, (struct cm_rej_msg *)&mad, 2);
	IBST_EXPECT_EQ(t_mux(b, &mad), -ENOENT);
	IBST_EXPECT_EQ(t_local(&mad), pv);

	/* b rejects a REQ it got: passes, without a's pv id */
	t_req_in(&mad, 0x9, T_PEER_GUID_A, b);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	t_rej(&mad, pv, 0x9, IB_CM_REJ_CONSUMER_DEFINED, NULL);
	IBST_EXPECT_EQ(t_mux(b, &mad), 0);
	IBST_EXPECT_EQ(t_local(&mad), 0);

	IBST_EXPECT_EQ(t_stats(a).live, 1);
	IBST_EXPECT_EQ(t_stats(b).dropped - before.dropped, 2);
	IBST_EXPECT_EQ(t_stats(b).allocated, before.allocated);
	t_out(a, CM_DREQ_ATTR_ID, 0x661, 0, &err);
	t_settle();
}

/*
 * A VF answers only the REQs delivered to it.  A REP, an MRA or a REJ of
 * a REQ naming another VF's pending REQ (whose pv id is easy to guess)
 * would, looped back through this master or sent to the requester's
 * peer, take that connection over or end it: each is dropped unchanged,
 * whether it would create an entry or use one of the VF's own that knows
 * no peer yet.  Once delivered, the REQ can be answered, and later
 * answers must name the same requester.
 */
static void vf_answers_only_delivered_req(void)
{
	struct mlx4_ib_pvcm_stats before;
	const int a = 11, b = 12;
	struct ib_mad mad, orig;
	u32 pv, pvb;
	int err, to;

	pv = t_out(a, CM_REQ_ATTR_ID, 0xa11, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	before = t_stats(b);

	/* as b's first MAD of a connection: REP, MRA, REJ of the REQ */
	t_mad(&mad, CM_REP_ATTR_ID, 0xb11, pv);
	orig = mad;
	IBST_EXPECT_EQ(t_mux(b, &mad), -EPERM);
	IBST_EXPECT_MEMEQ(&mad, &orig, sizeof(mad));
	t_mad(&mad, CM_MRA_ATTR_ID, 0xb12, pv);
	IBST_EXPECT_EQ(t_mux(b, &mad), -EPERM);
	t_rej(&mad, 0xb13, pv, IB_CM_REJ_CONSUMER_DEFINED, NULL);
	IBST_EXPECT_EQ(t_mux(b, &mad), -EPERM);
	IBST_EXPECT_EQ(t_local(&mad), 0xb13);
	/* an MRA of a REP needs a connection of b's: none, so no entry */
	t_mad(&mad, CM_MRA_ATTR_ID, 0xb16, pv);
	IBA_SET(CM_MRA_MESSAGE_MRAED, (struct cm_mra_msg *)&mad, 1);
	IBST_EXPECT_EQ(t_mux(b, &mad), -ENOENT);
	/* nor does one from the wire reach a's entry before its peer is known */
	t_mad(&mad, CM_MRA_ATTR_ID, 0xbad, pv);
	IBA_SET(CM_MRA_MESSAGE_MRAED, (struct cm_mra_msg *)&mad, 1);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -EPERM);

	/* on an entry of b's own (its REQ) that knows no peer yet */
	t_out(b, CM_REQ_ATTR_ID, 0xb14, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	t_rej(&mad, 0xb14, pv, IB_CM_REJ_CONSUMER_DEFINED, NULL);
	IBST_EXPECT_EQ(t_mux(b, &mad), -EPERM);
	t_mad(&mad, CM_REP_ATTR_ID, 0xb14, pv);
	IBST_EXPECT_EQ(t_mux(b, &mad), -EPERM);
	/* another MAD naming that REQ does not make it b's peer either */
	t_out(b, CM_RTU_ATTR_ID, 0xb14, pv, &err);
	t_mad(&mad, CM_REP_ATTR_ID, 0xb14, pv);
	IBST_EXPECT_EQ(t_mux(b, &mad), -EPERM);
	IBST_EXPECT_EQ(t_stats(b).dropped - before.dropped, 7);
	IBST_EXPECT_EQ(t_stats(b).allocated - before.allocated, 1);
	IBST_EXPECT_EQ(t_state(pv), PVCM_PENDING);

	/* a connects to b: the REQ loops back to b, b answers, a learns b */
	t_req_in(&mad, pv, T_PEER_GUID_A, b);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, b);
	t_mad(&mad, CM_REP_ATTR_ID, 0xb15, pv);
	IBST_EXPECT_EQ(t_mux(b, &mad), 0);
	pvb = t_local(&mad);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, a);
	IBST_EXPECT_EQ(t_remote(&mad), 0xa11);

	/* b's connection answers that REQ only: not another one it got */
	t_req_in(&mad, 0xc0c, T_PEER_GUID_B, b);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	t_mad(&mad, CM_REP_ATTR_ID, 0xb15, 0xc0c);
	IBST_EXPECT_EQ(t_mux(b, &mad), -EPERM);
	IBST_EXPECT_EQ(t_out(b, CM_REP_ATTR_ID, 0xb15, pv, &err), pvb);
	IBST_EXPECT_EQ(err, 0);

	t_out(a, CM_DREQ_ATTR_ID, 0xa11, pvb, &err);
	IBST_EXPECT_EQ(err, 0);
	t_out(b, CM_DREQ_ATTR_ID, 0xb15, pv, &err);
	IBST_EXPECT_EQ(err, 0);
	t_out(b, CM_DREQ_ATTR_ID, 0xb14, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	t_settle();
}

/*
 * Requests delivered to one VF cost that VF only, and those a VF sends to
 * another VF of the master cost the sender (one route each, which its
 * entry carries): at pvcm_max_routes a VF forgets its own oldest, while
 * another VF's requests are still kept, answered and routed.  An answer
 * that teaches the entry its peer frees the route it needed; a lower
 * limit set at run time is reached two routes per new one.
 */
static void t_expire(u32 pv_cm_id);

static void routes_cost_their_vf_only(void)
{
	unsigned long timewait = pvcm_test_timewait, pending = pvcm_test_pending;
	unsigned int max = READ_ONCE(pvcm_max_routes);
	const int a = 1, b = 2, c = 3, d = 4;
	__be64 ga = T_PEER_GUID_A, gb = T_PEER_GUID_B;
	int i, err, to, errs = 0;
	u32 pvc = 0, pvc0 = 0;
	struct ib_mad mad;

	/* c's REQs route while they are pending: none expires here */
	pvcm_test_pending = 10 * HZ;
	WRITE_ONCE(pvcm_max_routes, 8);
	t_req_in(&mad, 0xb0b, gb, b);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	for (i = 0; i < 100; i++) {
		t_req_in(&mad, 0x5000 + i, T_PEER_GUID_A, a);
		errs += t_dmx(&mad, &to) != 0 || to != a;
	}
	IBST_EXPECT_EQ(errs, 0);
	/* 8 on each FIFO: REQ routes, and the routes of answers */
	IBST_EXPECT_EQ(t_stats(a).routes, 16);
	IBST_EXPECT_EQ(t_stats(b).routes, 2);

	/* a's newest request can be answered, its oldest no longer */
	t_out(a, CM_REP_ATTR_ID, 0xa01, 0x5000 + 99, &err);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_EQ(t_stats(a).routes, 15);
	t_out(a, CM_REP_ATTR_ID, 0xa02, 0x5000, &err);
	IBST_EXPECT_EQ(err, -EPERM);

	/*
	 * c's requests to b cost c, not b; b answers the newest, not the
	 * oldest, which c forgot at its limit, and no other VF answers them
	 */
	for (i = 0; i < 10; i++) {
		t_req_in(&mad, 0x3000 + i, ga, b);
		errs += t_mux(c, &mad) != 0;
		pvc = t_local(&mad);
		pvc0 = pvc0 ?: pvc;
		errs += t_dmx(&mad, &to) != 0 || to != b;
	}
	IBST_EXPECT_EQ(errs, 0);
	IBST_EXPECT_EQ(t_stats(c).routes, 8);
	IBST_EXPECT_EQ(t_stats(b).routes, 2);
	/* a wire REQ naming c's pv id, to b, costs neither: c's entry routes */
	t_req_in(&mad, pvc, gb, b);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(t_stats(c).routes, 8);
	IBST_EXPECT_EQ(t_stats(b).routes, 2);
	t_rej(&mad, pvc, 0, IB_CM_REJ_TIMEOUT, &gb);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, b);
	t_out(a, CM_REP_ATTR_ID, 0xa03, pvc, &err);
	IBST_EXPECT_EQ(err, -EPERM);
	t_out(b, CM_REP_ATTR_ID, 0xb04, pvc0, &err);
	IBST_EXPECT_EQ(err, -EPERM);
	t_out(b, CM_REP_ATTR_ID, 0xb03, pvc, &err);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_EQ(t_stats(c).routes, 7);
	/* c's REJ(timeout) of its oldest REQ (as ib_cm sends it) reaches b */
	t_rej(&mad, 0x3000, 0, IB_CM_REJ_TIMEOUT, &ga);
	IBA_SET(CM_REJ_MESSAGE_REJECTED, (struct cm_rej_msg *)&mad, 2);
	pvcm_test_timewait = 10 * HZ;
	IBST_EXPECT_EQ(t_mux(c, &mad), 0);
	pvcm_test_timewait = timewait;
	IBST_EXPECT_EQ(t_local(&mad), pvc0);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, b);
	t_expire(pvc0);

	/* many accepted REQs do not push out the route of a pending one */
	t_req_in(&mad, 0xd00, T_PEER_GUID_A, d);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	for (i = 1; i <= 20; i++) {
		t_req_in(&mad, 0xd00 + i, T_PEER_GUID_A, d);
		errs += t_dmx(&mad, &to) != 0;
		t_out(d, CM_REP_ATTR_ID, 0xd00 + i, 0xd00 + i, &err);
		errs += !!err;
	}
	IBST_EXPECT_EQ(errs, 0);
	t_out(d, CM_REP_ATTR_ID, 0xd00, 0xd00, &err);
	IBST_EXPECT_EQ(err, 0);
	mlx4_ib_cm_paravirt_clean(t_dev, d);

	/* b's requests, old and new, are kept */
	t_req_in(&mad, 0xb0c, gb, b);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(t_stats(b).routes, 4);
	t_out(b, CM_REP_ATTR_ID, 0xb01, 0xb0b, &err);
	IBST_EXPECT_EQ(err, 0);
	t_rej(&mad, 0xb02, 0xb0c, IB_CM_REJ_CONSUMER_DEFINED, NULL);
	IBST_EXPECT_EQ(t_mux(b, &mad), 0);
	IBST_EXPECT_EQ(t_stats(b).routes, 2);
	t_rej(&mad, 0xb0c, 0, IB_CM_REJ_TIMEOUT, &gb);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, b);

	/* a lower limit: two of a FIFO's routes go per new one */
	WRITE_ONCE(pvcm_max_routes, 2);
	t_req_in(&mad, 0x5100, T_PEER_GUID_A, a);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(t_stats(a).routes, 13);
	WRITE_ONCE(pvcm_max_routes, max);

	t_out(a, CM_DREQ_ATTR_ID, 0xa01, 0x5000 + 99, &err);
	IBST_EXPECT_EQ(err, 0);
	t_out(b, CM_DREQ_ATTR_ID, 0xb01, 0xb0b, &err);
	IBST_EXPECT_EQ(err, 0);
	t_out(b, CM_DREQ_ATTR_ID, 0xb03, pvc, &err);
	IBST_EXPECT_EQ(err, 0);
	mlx4_ib_cm_paravirt_clean(t_dev, c);
	pvcm_test_pending = pending;
	t_settle();
}

/*
 * A VF's REQ to another VF of this master on an id the VF uses for
 * something else (a SIDR_REQ, a REQ to the wire, a REQ to a third VF, an
 * answer) finds an entry that cannot carry its routes: it is dropped and
 * counted for the sender, charges nobody and leaves the entry as it was.
 */
static void loop_req_on_id_in_use_dropped(void)
{
	static const char *const ways[] = {
		"SIDR_REQ", "wire REQ", "REQ to d", "REP",
	};
	const int b = 5, c = 6, d = 7;
	struct mlx4_ib_pvcm_stats sb, sc, sd;
	struct ib_mad mad;
	int i, err, to;
	u32 id, pv;

	for (i = 0; i < ARRAY_SIZE(ways); i++) {
		id = 0x6100 + i;
		if (i == 0) {
			t_mad(&mad, CM_SIDR_REQ_ATTR_ID, id, 0);
		} else if (i == 3) {
			/* c answers d's REQ: c's id is its REP's */
			t_req_in(&mad, 0xd63, T_PEER_GUID_A, c);
			IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
			t_mad(&mad, CM_REP_ATTR_ID, id, 0xd63);
		} else {
			/* past the last slave: a GID that is no VF's */
			t_req_in(&mad, id, T_PEER_GUID_A,
				 i == 1 ? T_SLAVES + 1 : d);
		}
		IBST_EXPECT_EQ(t_mux(c, &mad), 0);
		pv = t_local(&mad);
		if (i == 2) {
			IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
			IBST_EXPECT_EQ(to, d);
		}
		sb = t_stats(b);
		sc = t_stats(c);
		sd = t_stats(d);
		t_req_in(&mad, id, T_PEER_GUID_A, b);
		err = t_mux(c, &mad);
		IBST_EXPECT_EQ(err, -EEXIST);
		if (!err)	/* it went out: it comes back in to b */
			t_dmx(&mad, &to);
		IBST_EXPECT_EQ(t_stats(c).dropped, sc.dropped + 1);
		IBST_EXPECT_EQ(t_stats(b).routes, sb.routes);
		IBST_EXPECT_EQ(t_stats(c).routes, sc.routes);
		IBST_EXPECT_EQ(t_stats(c).live, sc.live);
		/* b was not asked; the id's first use stands */
		t_out(b, CM_REP_ATTR_ID, 0xb61 + i, pv, &err);
		IBST_EXPECT_EQ(err, -EPERM);
		if (i == 2) {
			t_out(d, CM_REP_ATTR_ID, 0xd61, pv, &err);
			IBST_EXPECT_EQ(err, 0);
			IBST_EXPECT_EQ(t_stats(d).routes, sd.routes);
		}
		if (ibst_case_failed()) {
			ibst_diag("the id's first use: %s", ways[i]);
			break;
		}
	}
	mlx4_ib_cm_paravirt_clean(t_dev, b);
	mlx4_ib_cm_paravirt_clean(t_dev, c);
	mlx4_ib_cm_paravirt_clean(t_dev, d);
	t_settle();
}

/*
 * A REJ(timeout) with no remote id is routed by the sender's entry of a
 * VF-to-VF REQ only while no answer came back: after it, the REQ did not
 * time out, and a node on the wire that guessed the sender's pv_cm_id
 * must not end the target's connection with one.
 */
static void loop_rej_timeout_only_unanswered(void)
{
	const __be64 guid = T_PEER_GUID_B;
	const int b = 14, c = 15;
	struct ib_mad mad;
	int to;
	u32 pv;

	t_req_in(&mad, 0x6200, T_PEER_GUID_A, b);
	IBST_EXPECT_EQ(t_mux(c, &mad), 0);
	pv = t_local(&mad);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, b);
	IBST_EXPECT_EQ(t_stats(b).routes, 0);
	t_rej(&mad, pv, 0, IB_CM_REJ_TIMEOUT, &guid);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, b);

	/* b's REP reaches c: c's entry knows its peer */
	t_mad(&mad, CM_REP_ATTR_ID, 0xb62, pv);
	IBST_EXPECT_EQ(t_mux(b, &mad), 0);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, c);
	t_rej(&mad, pv, 0, IB_CM_REJ_TIMEOUT, &guid);
	IBST_EXPECT_NE(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, -1);

	mlx4_ib_cm_paravirt_clean(t_dev, b);
	mlx4_ib_cm_paravirt_clean(t_dev, c);
	t_settle();
}

/*
 * SIDR_REQs to a VF, from the wire or from another VF through the wire
 * (the multiplex handler cannot tell a SIDR_REQ's receiver: it names no
 * GID), push out only that VF's older SIDR routes: the route a REQ still
 * waiting for the VF's answer needs is kept.
 */
static void sidr_requests_keep_answer_routes(void)
{
	unsigned int max = READ_ONCE(pvcm_max_routes);
	const int b = 12, c = 13;
	int i, err, errs = 0;
	struct ib_mad mad;
	u32 pv, first = 0;

	WRITE_ONCE(pvcm_max_routes, 8);
	t_req_in(&mad, 0xc0b, T_PEER_GUID_B, b);
	IBST_EXPECT_EQ(t_dmx_to(&mad, b), 0);
	for (i = 0; i < 20; i++) {
		pv = t_out(c, CM_SIDR_REQ_ATTR_ID, 0x7000 + i, 0, &err);
		errs += !!err;
		first = first ?: pv;
		t_mad(&mad, CM_SIDR_REQ_ATTR_ID, pv, 0);
		errs += t_dmx_to(&mad, b) != 0;
	}
	IBST_EXPECT_EQ(errs, 0);
	/* a REQ route, the REQ's answer route and 8 SIDR routes */
	IBST_EXPECT_EQ(t_stats(b).routes, 10);
	t_out(b, CM_REP_ATTR_ID, 0xc01, 0xc0b, &err);
	IBST_EXPECT_EQ(err, 0);
	/* the newest SIDR_REQ can still be answered, the oldest no longer */
	t_mad(&mad, CM_SIDR_REP_ATTR_ID, pv, 0);
	IBST_EXPECT_EQ(t_mux(b, &mad), 0);
	t_mad(&mad, CM_SIDR_REP_ATTR_ID, first, 0);
	IBST_EXPECT_EQ(t_mux(b, &mad), -ENOENT);
	WRITE_ONCE(pvcm_max_routes, max);

	t_out(b, CM_DREQ_ATTR_ID, 0xc01, 0xc0b, &err);
	IBST_EXPECT_EQ(err, 0);
	mlx4_ib_cm_paravirt_clean(t_dev, c);
	t_settle();
}

/* a VF's SIDR_REP only answers a SIDR_REQ that was delivered to it */
static void vf_sidr_rep_only_for_delivered_req(void)
{
	const int a = 8, b = 9;
	struct ib_mad mad;
	int err, to;
	u32 pv;

	/* a's own request: its request id on the wire is a pv id */
	pv = t_out(a, CM_SIDR_REQ_ATTR_ID, 0x881, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	t_mad(&mad, CM_SIDR_REP_ATTR_ID, pv, 0);
	IBST_EXPECT_EQ(t_mux(b, &mad), -ENOENT);
	IBST_EXPECT_EQ(t_mux(a, &mad), -ENOENT);

	/* a remote request delivered to a: b cannot answer it */
	t_mad(&mad, CM_SIDR_REQ_ATTR_ID, 0x5252, 0);
	IBST_EXPECT_EQ(t_dmx_to(&mad, a), 0);
	t_mad(&mad, CM_SIDR_REP_ATTR_ID, 0x5252, 0);
	IBST_EXPECT_EQ(t_mux(b, &mad), -ENOENT);
	IBST_EXPECT_EQ(t_mux(a, &mad), 0);
	IBST_EXPECT_EQ(t_local(&mad), 0x5252);

	/* the wire's answer to a's request still reaches a */
	t_mad(&mad, CM_SIDR_REP_ATTR_ID, pv, 0);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, a);
	IBST_EXPECT_EQ(t_remote(&mad), 0x881);
	t_settle();
}

/*
 * mad.c delivers a MAD only to a member of its partition, and checks
 * that after the handler: a MAD of a partition the VF is not in must not
 * bind the VF's pending connection to a stranger, end it, or leave a
 * route the VF could answer, in IB or RoCE mode.
 */
static void foreign_partition_acts_not(void)
{
	/* even slaves are members of PVCM_T_PKEY_EVEN, odd ones not */
	const int a = 14, b = 15, c = 16;
	struct mlx4_ib_pvcm_stats before = t_stats(b);
	struct ib_mad mad, orig;
	int err, to = -1;
	u32 pv;

	pv = t_out(a, CM_REQ_ATTR_ID, 0xe01, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	t_mad(&mad, CM_REP_ATTR_ID, 0xbad, pv);
	orig = mad;
	IBST_EXPECT_EQ(t_dmx_pkey(&mad, &to, PVCM_T_PKEY_FOREIGN), -EPERM);
	IBST_EXPECT_MEMEQ(&mad, &orig, sizeof(mad));
	t_rej(&mad, 0xbad, pv, IB_CM_REJ_CONSUMER_DEFINED, NULL);
	IBST_EXPECT_EQ(t_dmx_pkey(&mad, &to, PVCM_T_PKEY_FOREIGN), -EPERM);
	t_mad(&mad, CM_MRA_ATTR_ID, 0xbad, pv);
	IBST_EXPECT_EQ(mlx4_ib_demux_cm_handler_to_slave(&t_dev->ib_dev,
							 T_PORT, a,
							 PVCM_T_PKEY_FOREIGN,
							 &mad), -EPERM);
	/* the peer's REP, in a partition of a's, still makes the connection */
	t_mad(&mad, CM_REP_ATTR_ID, 0x9e1, pv);
	IBST_EXPECT_EQ(t_dmx_pkey(&mad, &to, PVCM_T_PKEY_EVEN), 0);
	IBST_EXPECT_EQ(to, a);
	IBST_EXPECT_EQ(t_remote(&mad), 0xe01);

	/* a REQ and a SIDR_REQ for b from outside its partitions */
	t_req_in(&mad, 0xe02, T_PEER_GUID_A, b);
	IBST_EXPECT_EQ(t_dmx_pkey(&mad, &to, PVCM_T_PKEY_EVEN), -EPERM);
	t_mad(&mad, CM_SIDR_REQ_ATTR_ID, 0xe03, 0);
	to = b;
	IBST_EXPECT_EQ(t_dmx_pkey(&mad, &to, PVCM_T_PKEY_EVEN), -EPERM);
	IBST_EXPECT_EQ(t_stats(b).routes, before.routes);
	t_out(b, CM_REP_ATTR_ID, 0xb0e, 0xe02, &err);
	IBST_EXPECT_EQ(err, -EPERM);
	t_mad(&mad, CM_SIDR_REP_ATTR_ID, 0xe03, 0);
	IBST_EXPECT_EQ(t_mux(b, &mad), -ENOENT);

	/* nor one from c, a VF of the master, whose multiplex saw it first */
	t_req_in(&mad, 0xe04, T_PEER_GUID_A, b);
	IBST_EXPECT_EQ(t_mux(c, &mad), 0);
	pv = t_local(&mad);
	IBST_EXPECT_EQ(t_dmx_pkey(&mad, &to, PVCM_T_PKEY_EVEN), -EPERM);
	t_out(b, CM_REP_ATTR_ID, 0xb0f, pv, &err);
	IBST_EXPECT_EQ(err, -EPERM);
	mlx4_ib_cm_paravirt_clean(t_dev, c);

	t_out(a, CM_DREQ_ATTR_ID, 0xe01, 0x9e1, &err);
	IBST_EXPECT_EQ(err, 0);
	t_settle();
}

/*
 * REQ and SIDR_REQ name no receiver: a pv id in the bytes where other
 * messages carry one is neither looked up nor rewritten, and the entry it
 * names stays as it was.
 */
static void request_names_no_receiver(void)
{
	const int a = 10, b = 11;
	struct mlx4_ib_pvcm_stats before, after;
	struct ib_mad mad;
	int err, to;
	u32 pv;

	pv = t_out(a, CM_REQ_ATTR_ID, 0x991, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	before = t_stats(a);

	t_req_in(&mad, 0x7777, T_PEER_GUID_A, b);
	put_unaligned_be32(pv, mad.data + 4);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, b);
	IBST_EXPECT_EQ(get_unaligned_be32(mad.data + 4), pv);

	t_mad(&mad, CM_SIDR_REQ_ATTR_ID, 0x7778, 0);
	put_unaligned_be32(pv, mad.data + 4);
	IBST_EXPECT_EQ(t_dmx_to(&mad, b), 0);
	IBST_EXPECT_EQ(get_unaligned_be32(mad.data + 4), pv);

	after = t_stats(a);
	IBST_EXPECT_EQ(after.live, before.live);
	IBST_EXPECT_EQ(after.dropped, before.dropped);
	IBST_EXPECT_EQ(t_state(pv), PVCM_PENDING);

	/* a's peer is still the first to answer its REQ */
	t_mad(&mad, CM_REP_ATTR_ID, 0x5151, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, a);
	IBST_EXPECT_EQ(t_remote(&mad), 0x991);
	t_settle();
}

/*
 * From the wire only the connection's peer, known by the comm id of its
 * REP (active VF) or REQ (passive VF), ends or changes a mapping, and a
 * repeated DREQ does not push the end of TimeWait out.
 */
static void wire_teardown_only_from_peer(void)
{
	static const __be16 attrs[] = {
		CM_DREQ_ATTR_ID, CM_DREP_ATTR_ID, CM_REJ_ATTR_ID,
		CM_RTU_ATTR_ID, CM_LAP_ATTR_ID,
	};
	struct pvcm_entry *e;
	const int s = 10;
	struct ib_mad mad;
	unsigned int i;
	u32 pv, deadline;
	int err, to;

	/* active VF: before the REP only a REJ of the REQ may end it */
	pv = t_out(s, CM_REQ_ATTR_ID, 0x7a1, 0, &err);
	t_mad(&mad, CM_REP_ATTR_ID, 0, pv);	/* a REP names its sender */
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -EPERM);
	t_mad(&mad, CM_DREQ_ATTR_ID, 0xbad, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -EPERM);
	t_rej(&mad, 0xbad, pv, IB_CM_REJ_CONSUMER_DEFINED, NULL);
	IBA_SET(CM_REJ_MESSAGE_REJECTED, (struct cm_rej_msg *)&mad, 1);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -EPERM);
	t_mad(&mad, CM_REP_ATTR_ID, 0xaa1, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	t_out(s, CM_RTU_ATTR_ID, 0x7a1, 0xaa1, &err);

	/* a stranger's teardown MADs: dropped, not rewritten */
	for (i = 0; i < ARRAY_SIZE(attrs); i++) {
		t_mad(&mad, attrs[i], 0xbad, pv);
		IBST_EXPECT_EQ(t_dmx(&mad, &to), -EPERM);
		IBST_EXPECT_EQ(t_remote(&mad), pv);
	}
	IBST_EXPECT_EQ(t_stats(s).live, 1);

	/* the peer's DREQ ends it; repeats do not extend TimeWait */
	t_mad(&mad, CM_DREQ_ATTR_ID, 0xaa1, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(t_stats(s).timewait, 1);
	e = pvcm_pin_pv(t_pv, pv);
	IBST_EXPECT_NOT_NULL(e);
	if (e) {
		deadline = READ_ONCE(e->deadline);
		msleep(20);
		t_mad(&mad, CM_DREQ_ATTR_ID, 0xaa1, pv);
		IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
		t_out(s, CM_DREP_ATTR_ID, 0x7a1, 0xaa1, &err);
		IBST_EXPECT_EQ(err, 0);
		IBST_EXPECT_EQ(READ_ONCE(e->deadline), deadline);
		pvcm_put(e);
	}

	/* passive VF: the peer is the sender of the REQ */
	t_req_in(&mad, 0xaa2, T_PEER_GUID_A, s);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	pv = t_out(s, CM_REP_ATTR_ID, 0x7a2, 0xaa2, &err);
	t_mad(&mad, CM_RTU_ATTR_ID, 0xbad, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -EPERM);
	t_mad(&mad, CM_RTU_ATTR_ID, 0xaa2, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	t_mad(&mad, CM_DREQ_ATTR_ID, 0xbad, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -EPERM);
	/* a SIDR_REP cannot end a connection either */
	t_mad(&mad, CM_SIDR_REP_ATTR_ID, pv, 0);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -EPERM);
	IBST_EXPECT_EQ(t_stats(s).live, 1);
	t_out(s, CM_DREQ_ATTR_ID, 0x7a2, 0xaa2, &err);
	t_settle();
}

/* a stranger's MAD, sent from inside pvcm_create() once it published */
static struct ib_mad t_window_mad;
static u32 t_window_pv;
static int t_window_err;

static void t_stranger_in_window(struct mlx4_ib_pvcm *pv, u32 pv_cm_id)
{
	int to;

	if (pv != t_pv)	/* another device's creation */
		return;
	t_window_pv = pv_cm_id;
	put_unaligned_be32(pv_cm_id, t_window_mad.data + 4);
	t_window_err = t_dmx(&t_window_mad, &to);
}

/* VF @slave sends @attr; a stranger's REP for the new pv id races it */
static u32 t_out_raced(int slave, __be16 attr, u32 sl, u32 remote, int *err)
{
	u32 pv;

	t_mad(&t_window_mad, CM_REP_ATTR_ID, 0xbad, 0);
	t_window_pv = 0;
	t_window_err = 1;
	WRITE_ONCE(pvcm_test_after_publish, t_stranger_in_window);
	pv = t_out(slave, attr, sl, remote, err);
	WRITE_ONCE(pvcm_test_after_publish, NULL);
	IBST_EXPECT_EQ(t_window_pv, pv);
	return pv;
}

/*
 * An entry is published knowing its peer's comm id and whether it is a
 * SIDR one: a stranger's REP that names the new (predictable) pv id before
 * the VF's MAD has left must not become the peer.
 */
static void peer_known_before_published(void)
{
	const int s = 11;
	struct ib_mad mad;
	int err, to;
	u32 pv;

	/* passive VF: its REP creates the entry */
	t_req_in(&mad, 0xcc1, T_PEER_GUID_A, s);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	pv = t_out_raced(s, CM_REP_ATTR_ID, 0x7c1, 0xcc1, &err);
	IBST_EXPECT_EQ(err, 0);
	ibst_diag("stranger's REP inside pvcm_create(): %d", t_window_err);
	IBST_EXPECT_EQ(t_window_err, -EPERM);
	t_mad(&mad, CM_RTU_ATTR_ID, 0xbad, pv);
	err = t_dmx(&mad, &to);
	ibst_diag("stranger's RTU: %d", err);
	IBST_EXPECT_EQ(err, -EPERM);
	t_mad(&mad, CM_RTU_ATTR_ID, 0xcc1, pv);
	err = t_dmx(&mad, &to);
	ibst_diag("peer's RTU: %d", err);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_EQ(to, s);
	IBST_EXPECT_EQ(t_remote(&mad), 0x7c1);
	t_mad(&mad, CM_DREQ_ATTR_ID, 0xbad, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -EPERM);
	t_mad(&mad, CM_DREQ_ATTR_ID, 0xcc1, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	t_out(s, CM_DREP_ATTR_ID, 0x7c1, 0xcc1, &err);
	IBST_EXPECT_EQ(err, 0);

	/* SIDR: no connection MAD acts on the new entry, the SIDR_REP does */
	pv = t_out_raced(s, CM_SIDR_REQ_ATTR_ID, 0x7c2, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	ibst_diag("stranger's REP to a SIDR_REQ's id: %d", t_window_err);
	IBST_EXPECT_EQ(t_window_err, -EPERM);
	t_mad(&mad, CM_SIDR_REP_ATTR_ID, pv, 0);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, s);
	IBST_EXPECT_EQ(t_remote(&mad), 0x7c2);
	IBST_EXPECT_EQ(t_stats(s).live, 0);
	t_settle();
}

/* the VF's own MAD for the same id, sent from inside pvcm_create() */
static struct ib_mad t_rival_mad;
static int t_rival_slave;
static u32 t_rival_key[2];
static int t_rival_err;
/* if not 0, the pending timeout from the rival's publication on */
static unsigned long t_rival_pending;

static void t_rival_creates(struct mlx4_ib_pvcm *pv, u32 slave,
			    u32 sl_cm_id)
{
	if (pv != t_pv)	/* another device's creation */
		return;
	/* once: the rival's own creation passes here too */
	WRITE_ONCE(pvcm_test_before_insert, NULL);
	t_rival_key[0] = slave;
	t_rival_key[1] = sl_cm_id;
	t_rival_err = t_mux(t_rival_slave, &t_rival_mad);
	if (t_rival_pending)
		pvcm_test_pending = t_rival_pending;
}

/*
 * VF @slave sends @mad for an id with no entry; its @rival for the same id,
 * sent while @mad's new entry waits for its insert, publishes first.
 * Returns what the multiplex handler made of @mad.
 */
static int t_mux_raced(int slave, struct ib_mad *mad,
		       const struct ib_mad *rival)
{
	u32 sl = t_local(mad);
	int err;

	t_rival_mad = *rival;
	t_rival_slave = slave;
	t_rival_key[0] = U32_MAX;
	t_rival_key[1] = U32_MAX;
	t_rival_err = 1;
	WRITE_ONCE(pvcm_test_before_insert, t_rival_creates);
	err = t_mux(slave, mad);
	WRITE_ONCE(pvcm_test_before_insert, NULL);
	t_rival_pending = 0;
	IBST_EXPECT_EQ(t_rival_key[0], slave);
	IBST_EXPECT_EQ(t_rival_key[1], sl);
	IBST_EXPECT_EQ(t_rival_err, 0);
	return err;
}

/* jiffies until the pending entry of @pv_cm_id expires; 0 if none */
static long t_pending_left(u32 pv_cm_id)
{
	struct pvcm_entry *e = pvcm_pin_pv(t_pv, pv_cm_id);
	long left = 0;

	if (e && READ_ONCE(e->state) == PVCM_PENDING)
		left = (s32)(READ_ONCE(e->deadline) - (u32)jiffies);
	if (e)
		pvcm_put(e);
	return left;
}

/*
 * Two MADs of one VF connection that found no entry race to create it.
 * The first insert wins; the other MAD uses the winner's entry as if it
 * had found it by lookup: it refreshes it, teaches it its peer, and is
 * refused where the entry answers another peer or cannot carry a REQ to
 * another VF.  The loser's entry is freed (t_settle()).
 */
static void concurrent_creator_joins_live_entry(void)
{
	unsigned long pending = pvcm_test_pending;
	/* realloc_no_orphan() counts slave 9's frees from 0 */
	const int a = 8, b = 10, c = 11;
	struct mlx4_ib_pvcm_stats sa, sb, sc;
	struct ib_mad mad, rival;
	int err, to;
	u32 pv;

	/* no entry expires while the outcomes are read */
	pvcm_test_pending = 10 * HZ;

	/*
	 * A retried REQ to the wire: both copies go out with the winner's
	 * id, and the retry refreshes it (published with a 10 s timeout, the
	 * entry gets the 60 s one from then on).
	 */
	sa = t_stats(a);
	t_req_in(&mad, 0x6400, T_PEER_GUID_A, T_SLAVES + 1);
	rival = mad;
	t_rival_pending = 60 * HZ;
	IBST_EXPECT_EQ(t_mux_raced(a, &mad, &rival), 0);
	pv = t_local(&mad);
	IBST_EXPECT_EQ(pv, t_local(&t_rival_mad));
	IBST_EXPECT_GT(t_pending_left(pv), 30 * HZ);
	pvcm_test_pending = 10 * HZ;
	IBST_EXPECT_EQ(t_stats(a).live, sa.live + 1);
	IBST_EXPECT_EQ(t_stats(a).allocated, sa.allocated + 1);

	/* a retransmitted answer: both copies go out with the winner's id */
	t_req_in(&mad, 0xd74, T_PEER_GUID_A, a);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	t_mad(&mad, CM_REP_ATTR_ID, 0x6401, 0xd74);
	rival = mad;
	IBST_EXPECT_EQ(t_mux_raced(a, &mad, &rival), 0);
	IBST_EXPECT_EQ(t_local(&mad), t_local(&t_rival_mad));

	/*
	 * An answer joins the entry of the VF's REQ on that id: the entry
	 * learns its peer, as from a lookup, and the answer's route goes.
	 */
	t_req_in(&mad, 0xd73, T_PEER_GUID_B, a);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	sa = t_stats(a);
	t_mad(&mad, CM_REP_ATTR_ID, 0x6402, 0xd73);
	t_req_in(&rival, 0x6402, T_PEER_GUID_A, T_SLAVES + 1);
	IBST_EXPECT_EQ(t_mux_raced(a, &mad, &rival), 0);
	pv = t_local(&mad);
	IBST_EXPECT_EQ(pv, t_local(&t_rival_mad));
	IBST_EXPECT_EQ(t_stats(a).routes, sa.routes - 1);
	t_mad(&mad, CM_RTU_ATTR_ID, 0xbad, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -EPERM);
	t_mad(&mad, CM_RTU_ATTR_ID, 0xd73, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, a);

	/*
	 * Answers to two peers' REQs on one id: the loser's answer is
	 * dropped, and the entry keeps the winner's peer.
	 */
	t_req_in(&mad, 0xd71, T_PEER_GUID_A, a);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	t_req_in(&mad, 0xd72, T_PEER_GUID_B, a);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	sa = t_stats(a);
	t_mad(&mad, CM_REP_ATTR_ID, 0x6410, 0xd71);
	t_mad(&rival, CM_REP_ATTR_ID, 0x6410, 0xd72);
	IBST_EXPECT_EQ(t_mux_raced(a, &mad, &rival), -EPERM);
	IBST_EXPECT_EQ(t_stats(a).dropped, sa.dropped + 1);
	IBST_EXPECT_EQ(t_stats(a).live, sa.live + 1);
	pv = t_local(&t_rival_mad);
	t_mad(&mad, CM_RTU_ATTR_ID, 0xd71, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -EPERM);
	t_mad(&mad, CM_RTU_ATTR_ID, 0xd72, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, a);

	/* a REQ to VF b on an id whose SIDR_REQ won: dropped, b not asked */
	sb = t_stats(b);
	sc = t_stats(c);
	t_req_in(&mad, 0x6420, T_PEER_GUID_A, b);
	t_mad(&rival, CM_SIDR_REQ_ATTR_ID, 0x6420, 0);
	err = t_mux_raced(c, &mad, &rival);
	IBST_EXPECT_EQ(err, -EEXIST);
	if (!err)	/* it went out: it comes back in to b */
		t_dmx(&mad, &to);
	IBST_EXPECT_EQ(t_stats(c).dropped, sc.dropped + 1);
	IBST_EXPECT_EQ(t_stats(c).live, sc.live + 1);
	IBST_EXPECT_EQ(t_stats(b).routes, sb.routes);
	t_out(b, CM_REP_ATTR_ID, 0xb71, t_local(&t_rival_mad), &err);
	IBST_EXPECT_EQ(err, -EPERM);

	/* a retried REQ to b: the winner carries it, and b may answer */
	t_req_in(&mad, 0x6430, T_PEER_GUID_A, b);
	rival = mad;
	IBST_EXPECT_EQ(t_mux_raced(c, &mad, &rival), 0);
	pv = t_local(&mad);
	IBST_EXPECT_EQ(pv, t_local(&t_rival_mad));
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, b);
	IBST_EXPECT_EQ(t_stats(b).routes, sb.routes);
	t_out(b, CM_REP_ATTR_ID, 0xb72, pv, &err);
	IBST_EXPECT_EQ(err, 0);

	pvcm_test_pending = pending;
	mlx4_ib_cm_paravirt_clean(t_dev, a);
	mlx4_ib_cm_paravirt_clean(t_dev, b);
	mlx4_ib_cm_paravirt_clean(t_dev, c);
	t_settle();
}

/*
 * A MAD that joins a concurrent creator's live entry adds no entry: a VF
 * that the winner brought to its cap is not refused the join, and no cap
 * hit is counted for it.
 */
static void join_at_cap_is_no_cap_hit(void)
{
	unsigned long pending = pvcm_test_pending;
	unsigned int cap = READ_ONCE(pvcm_max_per_vf);
	struct mlx4_ib_pvcm_stats st;
	struct ib_mad mad, rival;
	const int s = 7;
	int err;

	pvcm_test_pending = 10 * HZ;
	WRITE_ONCE(pvcm_max_per_vf, 1);
	st = t_stats(s);
	IBST_EXPECT_EQ(st.live + st.timewait, 0);
	t_req_in(&mad, 0x6500, T_PEER_GUID_A, T_SLAVES + 1);
	rival = mad;
	IBST_EXPECT_EQ(t_mux_raced(s, &mad, &rival), 0);
	IBST_EXPECT_EQ(t_local(&mad), t_local(&t_rival_mad));
	IBST_EXPECT_EQ(t_stats(s).cap_hits, st.cap_hits);
	IBST_EXPECT_EQ(t_stats(s).dropped, st.dropped);
	IBST_EXPECT_EQ(t_stats(s).live, 1);
	IBST_EXPECT_EQ(t_stats(s).allocated, st.allocated + 1);
	/* the cap still holds for a new id */
	t_out(s, CM_REQ_ATTR_ID, 0x6501, 0, &err);
	IBST_EXPECT_EQ(err, -EDQUOT);
	IBST_EXPECT_EQ(t_stats(s).cap_hits, st.cap_hits + 1);

	WRITE_ONCE(pvcm_max_per_vf, cap);
	pvcm_test_pending = pending;
	mlx4_ib_cm_paravirt_clean(t_dev, s);
	t_settle();
}

/*
 * A VF at its cap that sends a REQ again on an id in TimeWait needs a new
 * entry for it: the REQ is refused, and the TimeWait entry keeps the
 * (slave, sl_cm_id) index.
 */
static void cap_refuses_reuse_of_timewait_id(void)
{
	unsigned long timewait = pvcm_test_timewait, pending = pvcm_test_pending;
	unsigned int cap = READ_ONCE(pvcm_max_per_vf);
	struct mlx4_ib_pvcm_stats st;
	struct pvcm_entry *e;
	const int s = 7;
	int err;
	u32 pv;

	/* the entries outlast the case's steps on a loaded guest */
	pvcm_test_timewait = 2 * HZ;
	pvcm_test_pending = 10 * HZ;
	WRITE_ONCE(pvcm_max_per_vf, 1);
	st = t_stats(s);
	IBST_EXPECT_EQ(st.live + st.timewait, 0);
	pv = t_out(s, CM_REQ_ATTR_ID, 0x6510, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	t_out(s, CM_DREQ_ATTR_ID, 0x6510, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_EQ(t_stats(s).timewait, 1);

	t_out(s, CM_REQ_ATTR_ID, 0x6510, 0, &err);
	IBST_EXPECT_EQ(err, -EDQUOT);
	IBST_EXPECT_EQ(t_stats(s).cap_hits, st.cap_hits + 1);
	IBST_EXPECT_EQ(t_stats(s).live, 0);
	IBST_EXPECT_EQ(t_stats(s).allocated, st.allocated + 1);
	e = pvcm_pin_sl(t_pv, s, 0x6510);
	IBST_EXPECT_NOT_NULL(e);
	if (e) {
		IBST_EXPECT_EQ(e->pv_cm_id, pv);
		IBST_EXPECT_EQ(READ_ONCE(e->state), PVCM_TIMEWAIT);
		IBST_EXPECT(pvcm_flag(e, PVCM_F_INDEXED));
		pvcm_put(e);
	}

	WRITE_ONCE(pvcm_max_per_vf, cap);
	pvcm_test_timewait = timewait;
	pvcm_test_pending = pending;
	mlx4_ib_cm_paravirt_clean(t_dev, s);
	t_settle();
}

/* RoCE: a MAD for the slave of its GID never acts on another's entry */
static void roce_demux_stays_with_gid_slave(void)
{
	const int a = 11, b = 12;
	struct ib_mad mad, orig;
	int err;
	u32 pv;

	pv = t_out(a, CM_REQ_ATTR_ID, 0x7b1, 0, &err);
	t_mad(&mad, CM_REP_ATTR_ID, 0xab1, pv);
	orig = mad;
	IBST_EXPECT_EQ(t_dmx_roce(&mad, b), -EPERM);
	IBST_EXPECT_MEMEQ(&mad, &orig, sizeof(mad));
	IBST_EXPECT_EQ(t_dmx_roce(&mad, a), 0);
	IBST_EXPECT_EQ(t_remote(&mad), 0x7b1);
	t_out(a, CM_RTU_ATTR_ID, 0x7b1, 0xab1, &err);

	t_mad(&mad, CM_DREQ_ATTR_ID, 0xab1, pv);
	IBST_EXPECT_EQ(t_dmx_roce(&mad, b), -EPERM);
	IBST_EXPECT_EQ(t_stats(a).live, 1);
	IBST_EXPECT_EQ(t_dmx_roce(&mad, a), 0);
	IBST_EXPECT_EQ(t_stats(a).timewait, 1);

	/* a SIDR_REQ for b: only b may answer it */
	t_mad(&mad, CM_SIDR_REQ_ATTR_ID, 0x5353, 0);
	IBST_EXPECT_EQ(t_dmx_roce(&mad, b), 0);
	t_mad(&mad, CM_SIDR_REP_ATTR_ID, 0x5353, 0);
	IBST_EXPECT_EQ(t_mux(a, &mad), -ENOENT);
	IBST_EXPECT_EQ(t_mux(b, &mad), 0);
	t_settle();
}

/* a (slave, sl_cm_id) allocated again: the old entry keeps its release */
static void realloc_no_orphan(void)
{
	const int s = 9;
	struct pvcm_entry *e;
	int err;
	u32 pv1, pv2;

	pv1 = t_out(s, CM_REQ_ATTR_ID, 0x901, 0, &err);
	t_out(s, CM_DREQ_ATTR_ID, 0x901, 0, &err);
	pv2 = t_out(s, CM_REQ_ATTR_ID, 0x901, 0, &err);
	IBST_EXPECT_NE(pv1, pv2);
	IBST_EXPECT_EQ(t_stats(s).live, 1);
	IBST_EXPECT_EQ(t_stats(s).timewait, 1);

	e = xa_load(&t_pv->pv_ids, pvcm_index(t_pv, pv1));
	IBST_EXPECT_NOT_NULL(e);
	if (e) {
		IBST_EXPECT(!pvcm_flag(e, PVCM_F_INDEXED));
		IBST_EXPECT_EQ(e->state, PVCM_TIMEWAIT);
	}
	e = xa_load(&t_pv->pv_ids, pvcm_index(t_pv, pv2));
	IBST_EXPECT_NOT_NULL(e);
	if (e) {
		IBST_EXPECT(pvcm_flag(e, PVCM_F_INDEXED));
		IBST_EXPECT_EQ(e->state, PVCM_PENDING);
	}

	/* the next DREQ ends the new connection, not the old one again */
	IBST_EXPECT_EQ(t_out(s, CM_DREQ_ATTR_ID, 0x901, 0, &err), pv2);
	IBST_EXPECT_EQ(t_stats(s).timewait, 2);
	t_settle();
	IBST_EXPECT_EQ(t_stats(s).freed, 2);
}

/* a VF reset cleans that VF only, and not what it creates afterwards */
static void per_slave_clean(void)
{
	const int a = 10, b = 11;
	unsigned long flags;
	int err, i;
	u32 pv, pvn;

	for (i = 0; i < 3; i++)
		t_out(a, CM_REQ_ATTR_ID, 0xa00 + i, 0, &err);
	pv = t_out(b, CM_REQ_ATTR_ID, 0xb00, 0, &err);
	t_out(b, CM_RTU_ATTR_ID, 0xb00, 1, &err);
	t_out(b, CM_REQ_ATTR_ID, 0xb01, 0, &err);
	t_out(b, CM_RTU_ATTR_ID, 0xb01, 1, &err);

	/* the mlx4 event calls this with interrupts off */
	local_irq_save(flags);
	mlx4_ib_cm_paravirt_clean(t_dev, a);
	local_irq_restore(flags);
	/* the restarted VF reuses one of its ids before the clean work ran */
	pvn = t_out(a, CM_REQ_ATTR_ID, 0xa00, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	flush_work(&t_pv->clean_work);

	IBST_EXPECT_EQ(t_stats(a).live, 1);
	IBST_EXPECT_EQ(t_stats(a).timewait, 3);
	IBST_EXPECT_EQ(t_stats(b).live, 2);
	IBST_EXPECT_EQ(t_out(b, CM_LAP_ATTR_ID, 0xb00, 1, &err), pv);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_EQ(t_out(a, CM_RTU_ATTR_ID, 0xa00, 1, &err), pvn);
	IBST_EXPECT_EQ(err, 0);
	/* a stale id of the old VF instance is gone */
	t_out(a, CM_RTU_ATTR_ID, 0xa01, 1, &err);
	IBST_EXPECT_EQ(err, -ENOENT);

	mlx4_ib_cm_paravirt_clean(t_dev, a);
	mlx4_ib_cm_paravirt_clean(t_dev, b);
	t_settle();
}

/* the diagnostic lookup names the VF and its own id, TimeWait included */
static void lookup_names_vf_and_id(void)
{
	const int a = 12, b = 13;
	int err, slave = -1;
	u32 pva, pvb, sl = 0;

	pva = t_out(a, CM_REQ_ATTR_ID, 0xc00, 0, &err);
	pvb = t_out(b, CM_REQ_ATTR_ID, 0xc00, 0, &err);
	IBST_EXPECT_EQ(mlx4_ib_pvcm_lookup(t_dev, pva, &slave, &sl), 0);
	IBST_EXPECT_EQ(slave, a);
	IBST_EXPECT_EQ(sl, 0xc00);
	IBST_EXPECT_EQ(mlx4_ib_pvcm_lookup(t_dev, pvb, &slave, &sl), 0);
	IBST_EXPECT_EQ(slave, b);
	IBST_EXPECT_EQ(sl, 0xc00);
	/* no index has bit 30 set this early, none is id 0's */
	slave = -1;
	sl = 0;
	IBST_EXPECT_EQ(mlx4_ib_pvcm_lookup(t_dev, pva ^ BIT(30), &slave, &sl),
		       -ENOENT);
	IBST_EXPECT_EQ(mlx4_ib_pvcm_lookup(t_dev, 0, &slave, &sl), -ENOENT);
	/* a miss leaves the answer alone */
	IBST_EXPECT_EQ(slave, -1);
	IBST_EXPECT_EQ(sl, 0);

	t_out(a, CM_DREQ_ATTR_ID, 0xc00, 0, &err);
	IBST_EXPECT(t_wait_state(pva, PVCM_TIMEWAIT));
	slave = -1;
	IBST_EXPECT_EQ(mlx4_ib_pvcm_lookup(t_dev, pva, &slave, &sl), 0);
	IBST_EXPECT_EQ(slave, a);

	mlx4_ib_cm_paravirt_clean(t_dev, a);
	slave = -1;
	IBST_EXPECT_EQ(mlx4_ib_pvcm_lookup(t_dev, pva, &slave, &sl), -ENOENT);
	flush_work(&t_pv->clean_work);
	IBST_EXPECT_EQ(mlx4_ib_pvcm_lookup(t_dev, pva, &slave, &sl), -ENOENT);
	IBST_EXPECT_EQ(slave, -1);
	IBST_EXPECT_EQ(mlx4_ib_pvcm_lookup(t_dev, pvb, &slave, &sl), 0);
	IBST_EXPECT_EQ(slave, b);
	mlx4_ib_cm_paravirt_clean(t_dev, b);
	t_settle();
}

/*
 * A request delivered to a VF after its clean was asked for, but before
 * the clean's work ran, is one for the restarted VF: the work must not
 * forget it, or the VF's answer is dropped.  Found by the fuzzer.
 */
static void clean_keeps_later_routes(void)
{
	const int s = 13;
	struct ib_mad mad;
	int err, to;
	u32 pv;

	t_req_in(&mad, 0xc01, T_PEER_GUID_A, s);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	/* mlx4_ib_cm_paravirt_clean() in two halves, the REQs in between */
	atomic_inc(&t_pv->slaves[s].epoch);
	t_req_in(&mad, 0xc02, T_PEER_GUID_A, s);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	t_mad(&mad, CM_SIDR_REQ_ATTR_ID, 0x5c03, 0);
	IBST_EXPECT_EQ(t_dmx_to(&mad, s), 0);
	set_bit(s, t_pv->clean_mask);
	queue_work(cm_wq, &t_pv->clean_work);
	flush_work(&t_pv->clean_work);

	/* the request from before the clean is forgotten, the new ones not */
	t_out(s, CM_REP_ATTR_ID, 0xd01, 0xc01, &err);
	IBST_EXPECT_EQ(err, -EPERM);
	pv = t_out(s, CM_REP_ATTR_ID, 0xd02, 0xc02, &err);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_NE(pv, 0xd02);
	t_mad(&mad, CM_SIDR_REP_ATTR_ID, 0x5c03, 0);
	IBST_EXPECT_EQ(t_mux(s, &mad), 0);
	t_out(s, CM_DREQ_ATTR_ID, 0xd02, 0xc02, &err);
	IBST_EXPECT_EQ(err, 0);
	t_settle();
}

/* a VF at its cap is refused; the other VFs are not */
static void per_vf_cap(void)
{
	struct mlx4_ib_pvcm_stats st, before = t_stats(12);
	const int a = 12, b = 13;
	unsigned int old = pvcm_max_per_vf;
	int err, i;

	pvcm_max_per_vf = 4;
	for (i = 0; i < 4; i++) {
		t_out(a, CM_REQ_ATTR_ID, 0xc00 + i, 0, &err);
		IBST_EXPECT_EQ(err, 0);
	}
	t_out(a, CM_REQ_ATTR_ID, 0xc10, 0, &err);
	IBST_EXPECT_EQ(err, -EDQUOT);
	t_out(b, CM_REQ_ATTR_ID, 0xc10, 0, &err);
	IBST_EXPECT_EQ(err, 0);

	/* TimeWait entries still count */
	t_out(a, CM_DREQ_ATTR_ID, 0xc00, 0, &err);
	t_out(a, CM_REQ_ATTR_ID, 0xc11, 0, &err);
	IBST_EXPECT_EQ(err, -EDQUOT);
	st = t_stats(a);
	IBST_EXPECT_EQ(st.cap_hits - before.cap_hits, 2);
	IBST_EXPECT_EQ(st.dropped - before.dropped, 2);
	IBST_EXPECT_EQ(st.allocated - before.allocated, 4);
	IBST_EXPECT_EQ(t_stats(b).cap_hits, 0);

	mlx4_ib_cm_paravirt_clean(t_dev, a);
	mlx4_ib_cm_paravirt_clean(t_dev, b);
	t_settle();
	t_out(a, CM_REQ_ATTR_ID, 0xc12, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	t_out(a, CM_DREQ_ATTR_ID, 0xc12, 0, &err);
	pvcm_max_per_vf = old;
	t_settle();
}

/*
 * A VF at its cap that resets gets its cap back at once: the TimeWait
 * entries of its earlier life do not count, up to twice the cap.
 */
static void cap_fresh_after_vf_reset(void)
{
	unsigned long timewait = pvcm_test_timewait, pending = pvcm_test_pending;
	unsigned int old = pvcm_max_per_vf;
	const int a = 12;
	int err, i;

	pvcm_max_per_vf = 4;
	pvcm_test_timewait = 2 * HZ;
	pvcm_test_pending = 10 * HZ;
	for (i = 0; i < 4; i++) {
		t_out(a, CM_REQ_ATTR_ID, 0xd00 + i, 0, &err);
		IBST_EXPECT_EQ(err, 0);
	}
	t_out(a, CM_REQ_ATTR_ID, 0xd10, 0, &err);
	IBST_EXPECT_EQ(err, -EDQUOT);

	mlx4_ib_cm_paravirt_clean(t_dev, a);
	flush_work(&t_pv->clean_work);
	IBST_EXPECT_EQ(t_stats(a).timewait, 4);
	for (i = 0; i < 4; i++) {
		t_out(a, CM_REQ_ATTR_ID, 0xd20 + i, 0, &err);
		IBST_EXPECT_EQ(err, 0);
	}
	/* twice the cap in all: the next one waits for TimeWait */
	t_out(a, CM_REQ_ATTR_ID, 0xd30, 0, &err);
	IBST_EXPECT_EQ(err, -EDQUOT);
	mlx4_ib_cm_paravirt_clean(t_dev, a);
	flush_work(&t_pv->clean_work);
	IBST_EXPECT_EQ(t_stats(a).timewait, 8);
	t_out(a, CM_REQ_ATTR_ID, 0xd40, 0, &err);
	IBST_EXPECT_EQ(err, -EDQUOT);

	pvcm_test_pending = pending;
	pvcm_test_timewait = timewait;
	t_settle();
	pvcm_max_per_vf = old;
	IBST_EXPECT_EQ(t_pv->slaves[a].nr_reset, 0);
}

/* REJ(timeout) from two remote peers that use the same comm id */
static void rej_timeout_two_peers(void)
{
	const int a = 14, b = 15;
	__be64 ga = T_PEER_GUID_A, gb = T_PEER_GUID_B;
	__be64 gx = cpu_to_be64(0x1234);
	struct ib_mad mad;
	int to;

	t_req_in(&mad, 0x999, ga, a);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, a);
	t_req_in(&mad, 0x999, gb, b);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, b);
	/* per REQ: one route for REJ(timeout), one for the VF's answer */
	IBST_EXPECT_EQ(t_stats(-1).routes, 4);
	IBST_EXPECT_EQ(t_stats(a).routes, 2);

	t_rej(&mad, 0x999, 0, IB_CM_REJ_TIMEOUT, &gb);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, b);
	t_rej(&mad, 0x999, 0, IB_CM_REJ_TIMEOUT, &ga);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, a);
	t_rej(&mad, 0x999, 0, IB_CM_REJ_TIMEOUT, &gx);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -ENOENT);
	/* remote id 0 never matches a pv id */
	t_rej(&mad, 0x998, 0, IB_CM_REJ_CONSUMER_DEFINED, NULL);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -ENOENT);

	/* a REQ for a GID no VF owns is dropped */
	t_req_in(&mad, 0x997, ga, T_SLAVES + 3);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -ENOENT);
	t_settle();
}

/*
 * pvcm_pending_timeout takes 1 s up to a day: 0 would expire every
 * connection at once, and larger values overflow the jiffies deadline.
 */
static void pending_timeout_param_validated(void)
{
	static const char * const bad[] = {
		"0", "86401", "4294967295", "99999999999", "-1", "x", "",
	};
	unsigned int v = 120;
	const struct kernel_param kp = {
		.name = "pvcm_pending_timeout", .arg = &v,
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		IBST_EXPECT_EQ(pvcm_pending_timeout_ops.set(bad[i], &kp),
			       -EINVAL);
		IBST_EXPECT_EQ(v, 120);
	}
	IBST_EXPECT_EQ(pvcm_pending_timeout_ops.set("1", &kp), 0);
	IBST_EXPECT_EQ(v, 1);
	IBST_EXPECT_EQ(pvcm_pending_timeout_ops.set("86400", &kp), 0);
	IBST_EXPECT_EQ(v, 86400);
}

/*
 * A VF's REJ(timeout) for an id that has no mapping creates none: no peer
 * knows a pv id for it, so nothing could route it back.
 */
static void vf_rej_timeout_unmapped_maps_nothing(void)
{
	struct mlx4_ib_pvcm_stats before;
	__be64 guid = T_PEER_GUID_A;
	struct ib_mad mad;
	const int s = 15;

	before = t_stats(s);
	t_rej(&mad, 0xa51, 0, IB_CM_REJ_TIMEOUT, &guid);
	IBST_EXPECT_EQ(t_mux(s, &mad), -ENOENT);
	IBST_EXPECT_EQ(t_local(&mad), 0xa51);
	IBST_EXPECT_EQ(t_stats(s).allocated, before.allocated);
	IBST_EXPECT_EQ(t_stats(s).dropped - before.dropped, 1);
	t_settle();
}

/* malformed and unexpected MADs are dropped with an error and counted */
static void malformed_dropped_counted(void)
{
	const int s = 3;
	struct mlx4_ib_pvcm_stats before = t_stats(s), after;
	long dev_before = atomic_long_read(&t_pv->dropped);
	struct ib_mad mad, orig;
	int to;

	t_mad(&mad, cpu_to_be16(0x30), 0x1, 0x2);
	orig = mad;
	IBST_EXPECT_EQ(t_mux(s, &mad), -EINVAL);
	IBST_EXPECT_MEMEQ(&mad, &orig, sizeof(mad));
	t_mad(&mad, cpu_to_be16(0x01), 0x1, 0x2);	/* ClassPortInfo */
	IBST_EXPECT_EQ(t_mux(s, &mad), -EINVAL);

	t_mad(&mad, CM_REQ_ATTR_ID, 0x1, 0);
	IBST_EXPECT_EQ(pvcm_multiplex(t_dev, T_PORT, s, &mad, 64), -EMSGSIZE);
	mad.mad_hdr.class_version = 1;
	IBST_EXPECT_EQ(t_mux(s, &mad), -EPROTO);
	mad.mad_hdr.class_version = PVCM_CM_CLASS_VERSION;
	mad.mad_hdr.mgmt_class = IB_MGMT_CLASS_SUBN_ADM;
	IBST_EXPECT_EQ(t_mux(s, &mad), -EPROTO);

	/* ids not in the cache */
	t_mad(&mad, CM_DREQ_ATTR_ID, 0x4242, 0x1);
	IBST_EXPECT_EQ(t_mux(s, &mad), -ENOENT);
	IBST_EXPECT_EQ(t_local(&mad), 0x4242);
	t_mad(&mad, CM_RTU_ATTR_ID, 0x1, 0x7fff0001);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -ENOENT);
	IBST_EXPECT_EQ(t_remote(&mad), 0x7fff0001);

	/* a slave number out of range */
	t_mad(&mad, CM_REQ_ATTR_ID, 0x1, 0);
	IBST_EXPECT_EQ(t_mux(MLX4_MFUNC_MAX, &mad), -EINVAL);

	after = t_stats(s);
	IBST_EXPECT_EQ(after.dropped - before.dropped, 6);
	IBST_EXPECT_EQ(after.allocated, before.allocated);
	IBST_EXPECT_EQ(atomic_long_read(&t_pv->dropped) - dev_before, 2);
	t_settle();
}

/*
 * Every CM message is a Send of MAD base version 1: a GetResp-looking
 * SIDR_REQ from the wire (whose TID byte would pick any slave, mad.c
 * reading it as a response's) and a VF's REQ of another method or base
 * version are dropped before they map anything or leave a route.
 */
static void cm_mad_is_a_send(void)
{
	const int s = 4, far = 100;
	struct mlx4_ib_pvcm_stats before = t_stats(s), far_before = t_stats(far);
	long dev_before = atomic_long_read(&t_pv->dropped);
	struct ib_mad mad, orig;

	t_mad(&mad, CM_SIDR_REQ_ATTR_ID, 0x5d1, 0);
	mad.mad_hdr.method = IB_MGMT_METHOD_GET_RESP;
	orig = mad;
	IBST_EXPECT_EQ(t_dmx_to(&mad, far), -EPROTO);
	IBST_EXPECT_MEMEQ(&mad, &orig, sizeof(mad));
	IBST_EXPECT_EQ(t_stats(far).routes, far_before.routes);
	t_mad(&mad, CM_SIDR_REQ_ATTR_ID, 0x5d2, 0);
	mad.mad_hdr.method = IB_MGMT_METHOD_SEND | IB_MGMT_METHOD_RESP;
	IBST_EXPECT_EQ(t_dmx_to(&mad, s), -EPROTO);
	IBST_EXPECT_EQ(t_stats(s).routes, before.routes);

	t_mad(&mad, CM_REQ_ATTR_ID, 0x5d3, 0);
	mad.mad_hdr.method = IB_MGMT_METHOD_GET;
	IBST_EXPECT_EQ(t_mux(s, &mad), -EPROTO);
	IBST_EXPECT_EQ(t_local(&mad), 0x5d3);
	t_mad(&mad, CM_REQ_ATTR_ID, 0x5d4, 0);
	mad.mad_hdr.base_version = OPA_MGMT_BASE_VERSION;
	IBST_EXPECT_EQ(t_mux(s, &mad), -EPROTO);
	IBST_EXPECT_EQ(t_stats(s).allocated, before.allocated);
	/* a wire MAD refused before its slave is known counts for the device */
	IBST_EXPECT_EQ(t_stats(s).dropped - before.dropped, 2);
	IBST_EXPECT_EQ(atomic_long_read(&t_pv->dropped) - dev_before, 2);
	t_settle();
}

/* ------------------------------------------------------------------ */
/* Fail-nth sweeps                                                     */

/* The PV-CM cache's own allocation sites (pvcm_test_fail_nth). */
static void t_nth_arm_cache(unsigned int nth)
{
	atomic_set(&pvcm_test_fail_nth, nth);
}

static bool t_nth_disarm_cache(void)
{
	return !atomic_xchg(&pvcm_test_fail_nth, 0);
}

static const struct ibst_nth_kind t_nth_cache = {
	.name = "pvcm_test_fail_nth",
	.arm = t_nth_arm_cache,
	.disarm = t_nth_disarm_cache,
};

/* A REQ from a VF, multiplexed while allocations fail in turn. */
struct t_nth_mux {
	struct ibst_nth t;
	int slave;
	unsigned int failures;
	u32 pv;
};

static void t_nth_mux_cache_step(struct ibst_nth *t)
{
	struct t_nth_mux *m = container_of(t, struct t_nth_mux, t);
	struct ib_mad mad;
	int err;

	t_mad(&mad, CM_REQ_ATTR_ID, 0xf00 + t->nth, 0);
	err = IBST_NTH_ARMED(t, t_mux(m->slave, &mad));
	if (!t->injected) {
		/* fewer allocation sites than nth: it must succeed */
		IBST_EXPECT_EQ(err, 0);
		m->pv = t_local(&mad);
		return;
	}
	m->failures++;
	IBST_EXPECT_EQ(err, -ENOMEM);
	IBST_EXPECT_EQ(t_local(&mad), 0xf00 + t->nth);
	IBST_EXPECT_EQ(t_stats(m->slave).live, 0);
	rcu_barrier();
	IBST_EXPECT_EQ(atomic_long_read(&pvcm_objects), 0);
	IBST_EXPECT(xa_empty(&t_pv->pv_ids));
}

/* fail every allocation of the multiplex and demux paths in turn */
static void fail_nth_multiplex(void)
{
	struct t_nth_mux m = {
		.t = { .kind = &t_nth_cache, .step = t_nth_mux_cache_step,
		       .max = 10 },
		.slave = 2,
	};
	const int s = m.slave;
	struct ib_mad mad;
	unsigned int n;
	int err, to;

	n = ibst_fail_nth_sweep(&m.t);
	IBST_EXPECT_EQ(m.failures, 3);	/* entry, pv id, index */
	IBST_EXPECT_NE(m.pv, 0);
	t_out(s, CM_DREQ_ATTR_ID, 0xf00 + n, 0, &err);
	IBST_EXPECT_EQ(err, 0);

	/* the REJ(timeout) route is best effort: the REQ is delivered */
	atomic_set(&pvcm_test_fail_nth, 1);
	t_req_in(&mad, 0xf77, T_PEER_GUID_A, s);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), 0);
	IBST_EXPECT_EQ(to, s);
	IBST_EXPECT_EQ(atomic_read(&pvcm_test_fail_nth), 0);
	IBST_EXPECT_EQ(t_stats(-1).routes, 1);

	/* the answer's is not: without it the VF could not answer */
	atomic_set(&pvcm_test_fail_nth, 2);
	t_req_in(&mad, 0xf78, T_PEER_GUID_A, s);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -ENOMEM);
	IBST_EXPECT_EQ(atomic_read(&pvcm_test_fail_nth), 0);
	IBST_EXPECT_EQ(t_stats(-1).routes, 2);
	t_settle();
}

#ifdef CONFIG_FAULT_INJECTION
/*
 * The same sweeps with the kernel's own fail-nth (current->fail_nth, the
 * counter behind /proc/<pid>/fail-nth): every allocation the multiplex
 * path makes, including the XArray's and the rhashtable's internal ones,
 * fails in turn until a REQ gets through with nothing injected.  Sleeping
 * allocations only take part when failslab/fail_page_alloc have
 * ignore-gfp-wait off (the debug tier's KTAP wrapper sets that).  A step
 * either fails the REQ and leaves nothing behind, or, when the failed
 * allocation had a fallback, passes it with a complete entry.
 */
static void t_nth_arm_kernel(unsigned int nth)
{
	current->fail_nth = nth;
}

static bool t_nth_disarm_kernel(void)
{
	bool injected = !current->fail_nth;

	current->fail_nth = 0;
	return injected;
}

static const struct ibst_nth_kind t_nth_kernel = {
	.name = "current->fail_nth",
	.arm = t_nth_arm_kernel,
	.disarm = t_nth_disarm_kernel,
};

static void t_nth_mux_kernel_step(struct ibst_nth *t)
{
	struct t_nth_mux *m = container_of(t, struct t_nth_mux, t);
	struct ib_mad mad;
	int err;

	t_mad(&mad, CM_REQ_ATTR_ID, 0xe000 + t->nth, 0);
	err = IBST_NTH_ARMED(t, t_mux(m->slave, &mad));
	if (!t->injected) {
		IBST_EXPECT_EQ(err, 0);
		IBST_EXPECT_EQ(t_stats(m->slave).live, 1);
		return;
	}
	if (err) {
		m->failures++;
		IBST_EXPECT_EQ(t_local(&mad), 0xe000 + t->nth);
		IBST_EXPECT_EQ(t_stats(m->slave).live, 0);
	} else {
		IBST_EXPECT_EQ(t_stats(m->slave).live, 1);
		mlx4_ib_cm_paravirt_clean(t_dev, m->slave);
		t_settle();
	}
}

/*
 * An incoming REQ: its REJ(timeout) route is best effort, the route of
 * its answer is not.  A REQ is delivered exactly when the VF will be able
 * to answer it; otherwise it is dropped (and sent again).
 */
struct t_nth_dmx {
	struct ibst_nth t;
	int slave;
	unsigned int failures;
	int err;
};

static void t_nth_dmx_kernel_step(struct ibst_nth *t)
{
	struct t_nth_dmx *d = container_of(t, struct t_nth_dmx, t);
	struct ib_mad mad;
	int to;

	t_req_in(&mad, 0xe800 + t->nth, T_PEER_GUID_A, d->slave);
	d->err = IBST_NTH_ARMED(t, t_dmx(&mad, &to));
	if (d->err) {
		d->failures++;
		IBST_EXPECT_EQ(d->err, -ENOMEM);
	}
	IBST_EXPECT_EQ(pvcm_req_delivered(t_pv, T_PORT, 0xe800 + t->nth,
					  d->slave),
		       !d->err);
}

static void kernel_fail_nth_mux_demux(void)
{
	struct t_nth_mux m = {
		.t = { .kind = &t_nth_kernel, .step = t_nth_mux_kernel_step,
		       .max = 1000 },
		.slave = 3,
	};
	struct t_nth_dmx d = {
		.t = { .kind = &t_nth_kernel, .step = t_nth_dmx_kernel_step,
		       .max = 1000 },
		.slave = 3,
	};
	unsigned int n;

	n = ibst_fail_nth_sweep(&m.t);
	ibst_diag("%u allocation(s) on the path, %u failed the REQ", n - 1,
		  m.failures);
	IBST_EXPECT_GT(n, 1);
	IBST_EXPECT_LE(n, 1000);
	mlx4_ib_cm_paravirt_clean(t_dev, m.slave);
	t_settle();

	n = ibst_fail_nth_sweep(&d.t);
	ibst_diag("%u allocation(s) on the REQ's path, %u dropped it", n - 1,
		  d.failures);
	IBST_EXPECT_EQ(d.err, 0);
	IBST_EXPECT_LE(n, 1000);
	mlx4_ib_cm_paravirt_clean(t_dev, d.slave);
	t_settle();
	rcu_barrier();
	IBST_EXPECT_EQ(atomic_long_read(&pvcm_objects), 0);
	IBST_EXPECT(xa_empty(&t_pv->pv_ids));
}
#endif

/* end the TimeWait of @pv_cm_id now (the test stretched it) */
static void t_expire(u32 pv_cm_id)
{
	struct pvcm_entry *e;

	spin_lock(&t_pv->lock);
	e = xa_load(&t_pv->pv_ids, pvcm_index(t_pv, pv_cm_id));
	if (e && e->state == PVCM_TIMEWAIT) {
		WRITE_ONCE(e->deadline, (u32)jiffies);
		list_move(&e->link, &pvcm_slave(t_pv, e)->timewait);
		pvcm_arm(t_pv, e->deadline);
	}
	spin_unlock(&t_pv->lock);
}

/*
 * End every TimeWait of @slave now, in one step: the reaper then finds all
 * of them due in one run, however long the test took to release them.
 */
static void t_expire_slave(int slave)
{
	struct mlx4_ib_pvcm_slave *s = &t_pv->slaves[slave];
	u32 now = jiffies;
	struct pvcm_entry *e;

	spin_lock(&t_pv->lock);
	list_for_each_entry(e, &s->timewait, link)
		WRITE_ONCE(e->deadline, now);
	pvcm_arm(t_pv, now);
	spin_unlock(&t_pv->lock);
}

/*
 * A clean makes the slave's entries stale for good: 256 cleans in all (a
 * u8 epoch wraps there) do not bring its entry in TimeWait back to life.
 */
static void epoch_wrap_keeps_stale(void)
{
	unsigned long timewait = pvcm_test_timewait;
	struct ib_mad mad;
	const int s = 14;
	int err, to, i;
	u32 pv;

	pvcm_test_timewait = 10 * HZ;	/* no expiry during the case */
	pv = t_out(s, CM_REQ_ATTR_ID, 0x9e1, 0, &err);
	t_out(s, CM_RTU_ATTR_ID, 0x9e1, 0xae1, &err);
	IBST_EXPECT_EQ(err, 0);
	for (i = 0; i < 256; i++) {
		mlx4_ib_cm_paravirt_clean(t_dev, s);
		if (!i)
			flush_work(&t_pv->clean_work);
	}
	flush_work(&t_pv->clean_work);
	pvcm_test_timewait = timewait;
	IBST_EXPECT_EQ(t_stats(s).timewait, 1);

	t_mad(&mad, CM_DREQ_ATTR_ID, 0xae1, pv);
	IBST_EXPECT_EQ(t_dmx(&mad, &to), -ENOENT);
	IBST_EXPECT_EQ(t_remote(&mad), pv);
	t_out(s, CM_DREP_ATTR_ID, 0x9e1, 0xae1, &err);
	IBST_EXPECT_EQ(err, -ENOENT);
	t_expire(pv);
	t_settle();
}

/*
 * The VF-shutdown event hands over a slave number from the firmware: one
 * out of range (negative, as an int, for 2^31 and up) cleans nothing, is
 * counted and never reaches the full teardown, even with interrupts off.
 */
static void clean_bad_slave_cleans_nothing(void)
{
	static const int bad[] = { -1, INT_MIN, MLX4_MFUNC_MAX, INT_MAX };
	long before = atomic_long_read(&t_pv->bad_cleans);
	unsigned long flags;
	const int s = 5;
	unsigned int i;
	int err;
	u32 pv;

	pv = t_out(s, CM_REQ_ATTR_ID, 0x551, 0, &err);
	IBST_EXPECT_EQ(err, 0);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		local_irq_save(flags);
		mlx4_ib_cm_paravirt_clean(t_dev, bad[i]);
		local_irq_restore(flags);
	}
	flush_work(&t_pv->clean_work);
	IBST_EXPECT(READ_ONCE(t_pv->ready));
	IBST_EXPECT_EQ(t_stats(s).live, 1);
	IBST_EXPECT_EQ(t_out(s, CM_RTU_ATTR_ID, 0x551, 1, &err), pv);
	IBST_EXPECT_EQ(err, 0);
	IBST_EXPECT_EQ(atomic_long_read(&t_pv->bad_cleans) - before,
		       ARRAY_SIZE(bad));
	t_out(s, CM_DREQ_ATTR_ID, 0x551, 1, &err);
	t_settle();
}

/*
 * A clean and the reaper walk hundreds of entries of one slave: they let
 * go of pv->lock every PVCM_BATCH entries and still handle every one.
 */
static void clean_and_reap_in_batches(void)
{
	unsigned long timewait = pvcm_test_timewait, pending = pvcm_test_pending;
	int breaks = atomic_read(&pvcm_test_breaks);
	const int s = 3, n = 3 * PVCM_BATCH + 7;
	unsigned long until;
	int err, i, errs = 0;
	u32 pvn;

	pvcm_test_pending = 60 * HZ;
	pvcm_test_timewait = 60 * HZ;
	for (i = 0; i < n; i++) {
		t_out(s, CM_REQ_ATTR_ID, 0x10000 + i, 0, &err);
		errs += !!err;
		if (i & 1)
			t_out(s, CM_RTU_ATTR_ID, 0x10000 + i, 0x20000 + i, &err);
		errs += !!err;
	}
	IBST_EXPECT_EQ(errs, 0);
	mlx4_ib_cm_paravirt_clean(t_dev, s);
	pvn = t_out(s, CM_REQ_ATTR_ID, 0x30000, 0, &err);
	flush_work(&t_pv->clean_work);
	pvcm_test_pending = pending;
	pvcm_test_timewait = timewait;
	IBST_EXPECT_EQ(t_stats(s).live, 1);
	IBST_EXPECT_EQ(t_stats(s).timewait, n);
	IBST_EXPECT_GE(atomic_read(&pvcm_test_breaks) - breaks, 2);

	/*
	 * The reaper frees them, in batches too; the new entry stays.  Their
	 * deadlines are spread over the time the clean took (long under
	 * KASAN), so they are ended together for one run to find them all.
	 */
	breaks = atomic_read(&pvcm_test_breaks);
	t_expire_slave(s);
	until = jiffies + 5 * HZ;
	while (t_stats(s).timewait && time_before(jiffies, until))
		msleep(20);
	IBST_EXPECT_EQ(t_stats(s).timewait, 0);
	IBST_EXPECT_GE(atomic_read(&pvcm_test_breaks) - breaks, 2);
	IBST_EXPECT_EQ(t_out(s, CM_RTU_ATTR_ID, 0x30000, 1, &err), pvn);
	IBST_EXPECT_EQ(err, 0);
	t_out(s, CM_DREQ_ATTR_ID, 0x30000, 1, &err);
	t_settle();
}

/* counters per slave and per device, and their debugfs home */
static void counters_and_debugfs(void)
{
	struct mlx4_ib_pvcm_stats st;
	struct dentry *d;
	int err;

	t_out(1, CM_REQ_ATTR_ID, 0xd01, 0, &err);
	t_out(2, CM_REQ_ATTR_ID, 0xd02, 0, &err);
	t_out(2, CM_DREQ_ATTR_ID, 0xd02, 0, &err);
	st = t_stats(2);
	IBST_EXPECT_EQ(st.live, 0);
	IBST_EXPECT_EQ(st.timewait, 1);
	st = t_stats(-1);
	IBST_EXPECT_EQ(st.live, 1);
	IBST_EXPECT_EQ(st.timewait, 1);
	IBST_EXPECT_EQ(st.allocated - st.freed, 2);
	IBST_EXPECT_EQ(mlx4_ib_pvcm_get_stats(t_dev, MLX4_MFUNC_MAX, &st),
		       -EINVAL);

	d = debugfs_lookup("pvcm_test0", pvcm_debugfs_root);
	IBST_EXPECT(!IS_ERR_OR_NULL(d));
	dput(d);
	IBST_EXPECT(!IS_ERR_OR_NULL(t_pv->debugfs));

	t_out(1, CM_DREQ_ATTR_ID, 0xd01, 0, &err);
	t_settle();
}

/*
 * The device's hardware counters are the device totals, under the names
 * the descriptor table gives them, and a cache being torn down reads as
 * gone, not as whatever its slaves hold.
 */
static void hw_counters_are_the_totals(void)
{
	u64 v[MLX4_IB_PVCM_HW_STATS];
	struct mlx4_ib_pvcm_stats st;
	int i, j, err;

	for (i = 0; i < MLX4_IB_PVCM_HW_STATS; i++) {
		const char *name = mlx4_ib_pvcm_hw_stat_descs[i].name;

		IBST_EXPECT_NOT_NULL(name);
		if (!name)
			continue;
		IBST_EXPECT_EQ(strncmp(name, "pvcm_", 5), 0);
		for (j = 0; j < i; j++)
			IBST_EXPECT_STRNE(name,
					  mlx4_ib_pvcm_hw_stat_descs[j].name);
	}

	t_out(1, CM_REQ_ATTR_ID, 0xe01, 0, &err);
	t_out(2, CM_REQ_ATTR_ID, 0xe02, 0, &err);
	t_out(2, CM_DREQ_ATTR_ID, 0xe02, 0, &err);
	mlx4_ib_pvcm_hw_stats(t_dev, v);
	st = t_stats(-1);
	IBST_EXPECT_EQ(v[MLX4_IB_PVCM_HW_LIVE], st.live);
	IBST_EXPECT_EQ(v[MLX4_IB_PVCM_HW_TIMEWAIT], st.timewait);
	IBST_EXPECT_EQ(v[MLX4_IB_PVCM_HW_ALLOCATED], st.allocated);
	IBST_EXPECT_EQ(v[MLX4_IB_PVCM_HW_FREED], st.freed);
	IBST_EXPECT_EQ(v[MLX4_IB_PVCM_HW_DROPPED], st.dropped);
	IBST_EXPECT_EQ(v[MLX4_IB_PVCM_HW_CAP_HITS], st.cap_hits);
	IBST_EXPECT_EQ(v[MLX4_IB_PVCM_HW_ROUTES], st.routes);
	IBST_EXPECT_EQ(v[MLX4_IB_PVCM_HW_LIVE], 1);
	IBST_EXPECT_EQ(v[MLX4_IB_PVCM_HW_TIMEWAIT], 1);

	/* what a sysfs read sees once teardown has begun */
	spin_lock(&t_pv->lock);
	t_pv->dying = true;
	spin_unlock(&t_pv->lock);
	IBST_EXPECT_EQ(mlx4_ib_pvcm_get_stats(t_dev, -1, &st), -ENODEV);
	mlx4_ib_pvcm_hw_stats(t_dev, v);
	IBST_EXPECT_EQ(v[MLX4_IB_PVCM_HW_LIVE], 0);
	IBST_EXPECT_EQ(v[MLX4_IB_PVCM_HW_ALLOCATED], 0);
	spin_lock(&t_pv->lock);
	t_pv->dying = false;
	/* a reaper run meanwhile could not re-arm itself */
	pvcm_arm(t_pv, jiffies);
	spin_unlock(&t_pv->lock);

	t_out(1, CM_DREQ_ATTR_ID, 0xe01, 0, &err);
	t_settle();
}

/* ---- stress ---------------------------------------------------------- */

struct t_worker {
	struct task_struct *task;
	int slave;
	unsigned long cycles;
	unsigned long misses;
	unsigned long bad;
};

/* full connection cycles with consistency checks on every rewrite */
static int t_conn_thread(void *arg)
{
	struct t_worker *w = arg;
	struct ib_mad mad;
	int err, to;
	u32 sl, pv;

	while (!kthread_should_stop()) {
		sl = get_random_u32() | 1;
		pv = t_out(w->slave, CM_REQ_ATTR_ID, sl, 0, &err);
		if (err) {
			w->misses++;
			goto next;
		}
		t_mad(&mad, CM_REP_ATTR_ID, 0x77, pv);
		err = t_dmx(&mad, &to);
		if (!err && (to != w->slave || t_remote(&mad) != sl))
			w->bad++;
		if (t_out(w->slave, CM_RTU_ATTR_ID, sl, 0x77, &err) != pv && !err)
			w->bad++;
		t_out(w->slave, CM_DREQ_ATTR_ID, sl, 0x77, &err);
		if (err)
			w->misses++;
		t_mad(&mad, CM_DREP_ATTR_ID, 0x77, pv);
		err = t_dmx(&mad, &to);
		if (!err && (to != w->slave || t_remote(&mad) != sl))
			w->bad++;
		w->cycles++;
next:
		cond_resched();
	}
	return 0;
}

/* demultiplex random and recent ids; APR changes no state */
static int t_probe_thread(void *arg)
{
	struct t_worker *w = arg;
	struct pvcm_entry *e;
	struct ib_mad mad;
	int to;
	u32 id;

	while (!kthread_should_stop()) {
		id = pvcm_id_of(t_pv, READ_ONCE(t_pv->pv_next) -
				(get_random_u32() % 8));
		rcu_read_lock();
		e = pvcm_find_pv(t_pv, id);
		w->cycles += e ? 1 : 0;
		rcu_read_unlock();
		t_mad(&mad, CM_APR_ATTR_ID, 0x1, id);
		if (!t_dmx(&mad, &to) && (to < 1 || to > 3))
			w->bad++;
		cond_resched();
	}
	return 0;
}

static int t_clean_thread(void *arg)
{
	struct t_worker *w = arg;

	while (!kthread_should_stop()) {
		mlx4_ib_cm_paravirt_clean(t_dev, 1 + get_random_u32() % 3);
		w->cycles++;
		msleep(30);
	}
	return 0;
}

static void stress_mux_demux_clean(void)
{
	struct t_worker w[5] = {
		{ .slave = 1 }, { .slave = 2 }, { .slave = 3 },
	};
	int i;

	atomic_set(&pvcm_test_fail_nth, 0);
	for (i = 0; i < 3; i++)
		w[i].task = kthread_run(t_conn_thread, &w[i], "pvcm_conn%d", i);
	w[3].task = kthread_run(t_probe_thread, &w[3], "pvcm_probe");
	w[4].task = kthread_run(t_clean_thread, &w[4], "pvcm_clean");
	for (i = 0; i < 5; i++)
		if (IS_ERR(w[i].task)) {
			IBST_EXPECT_NOT_ERR(w[i].task);
			w[i].task = NULL;
		}
	msleep(2000);
	for (i = 0; i < 5; i++)
		if (w[i].task)
			kthread_stop(w[i].task);
	for (i = 0; i < 5; i++) {
		IBST_EXPECT_EQ(w[i].bad, 0);
		ibst_diag("stress worker %d: %lu cycles, %lu misses", i,
			  w[i].cycles, w[i].misses);
	}
	IBST_EXPECT_GT(w[0].cycles, 0);
	IBST_EXPECT_GT(w[4].cycles, 0);
	for (i = 1; i <= 3; i++)
		mlx4_ib_cm_paravirt_clean(t_dev, i);
	t_settle();
}

/* ---- runner ------------------------------------------------------------ */

static const struct ibst_case t_cases[] = {
	IBST_CASE(conn_active_round_trip),
	IBST_CASE(conn_passive_round_trip),
	IBST_CASE(pv_ids_differ_per_device),
	IBST_CASE(timewait_reserves_pv_id),
	IBST_CASE(unpublished_entry_is_no_entry),
	IBST_CASE(pv_id_of_index_zero_is_no_entry),
	IBST_CASE(remote_rej_releases),
	IBST_CASE(vf_rej_after_req_rep_releases),
	IBST_CASE(dreq_drep_id_reuse),
	IBST_CASE(pinned_entry_outlives_reap),
	IBST_CASE(never_rtu_expires),
	IBST_CASE(idle_expired_entry_revives),
	IBST_CASE(ended_idle_entry_stays_ended),
	IBST_CASE(sidr_rep_releases),
	IBST_CASE(vf_rej_unmapped_only_rejects_req),
	IBST_CASE(vf_answers_only_delivered_req),
	IBST_CASE(routes_cost_their_vf_only),
	IBST_CASE(loop_req_on_id_in_use_dropped),
	IBST_CASE(loop_rej_timeout_only_unanswered),
	IBST_CASE(sidr_requests_keep_answer_routes),
	IBST_CASE(vf_sidr_rep_only_for_delivered_req),
	IBST_CASE(request_names_no_receiver),
	IBST_CASE(foreign_partition_acts_not),
	IBST_CASE(wire_teardown_only_from_peer),
	IBST_CASE(peer_known_before_published),
	IBST_CASE(concurrent_creator_joins_live_entry),
	IBST_CASE(join_at_cap_is_no_cap_hit),
	IBST_CASE(cap_refuses_reuse_of_timewait_id),
	IBST_CASE(roce_demux_stays_with_gid_slave),
	IBST_CASE(realloc_no_orphan),
	IBST_CASE(per_slave_clean),
	IBST_CASE(lookup_names_vf_and_id),
	IBST_CASE(clean_keeps_later_routes),
	IBST_CASE(per_vf_cap),
	IBST_CASE(cap_fresh_after_vf_reset),
	IBST_CASE(rej_timeout_two_peers),
	IBST_CASE(malformed_dropped_counted),
	IBST_CASE(cm_mad_is_a_send),
	IBST_CASE(pending_timeout_param_validated),
	IBST_CASE(vf_rej_timeout_unmapped_maps_nothing),
	IBST_CASE(fail_nth_multiplex),
#ifdef CONFIG_FAULT_INJECTION
	IBST_CASE(kernel_fail_nth_mux_demux),
#endif
	IBST_CASE(counters_and_debugfs),
	IBST_CASE(hw_counters_are_the_totals),
	IBST_CASE(clean_and_reap_in_batches),
	IBST_CASE(epoch_wrap_keeps_stale),
	IBST_CASE(clean_bad_slave_cleans_nothing),
	IBST_CASE(stress_mux_demux_clean),
	{}
};

/* How many entries of the cache a failed case prints. */
#define T_DUMP_MAX	16

/*
 * The suite's dump, at a case's first failed check: the cache's
 * counters and its first T_DUMP_MAX entries by pv_cm_id (read under RCU,
 * which keeps them from being freed; a case may be changing them).
 */
static void t_dump(void)
{
	static const char *const states[] = {
		[PVCM_PENDING] = "PENDING",
		[PVCM_ESTABLISHED] = "ESTABLISHED",
		[PVCM_TIMEWAIT] = "TIMEWAIT",
		[PVCM_DEAD] = "DEAD",
	};
	struct {
		u32 pv, slave, sl, remote;
		u8 state, flags, sidr, loop_slave;
	} d[T_DUMP_MAX];
	struct mlx4_ib_pvcm_stats st = t_stats(-1);
	unsigned int i, n = 0, total = 0;
	struct pvcm_entry *e;
	unsigned long idx;

	ibst_diag("dump: cache: %llu live, %llu in TimeWait, %llu routes",
		  st.live, st.timewait, st.routes);
	ibst_diag("dump: %llu allocated, %llu freed, %llu dropped, %llu at a cap",
		  st.allocated, st.freed, st.dropped, st.cap_hits);
	rcu_read_lock();
	xa_for_each(&t_pv->pv_ids, idx, e) {
		if (n < T_DUMP_MAX) {
			/* an unpublished entry has no pv_cm_id yet */
			d[n].pv = pvcm_id_of(t_pv, idx);
			d[n].slave = READ_ONCE(e->key.slave);
			d[n].sl = READ_ONCE(e->key.sl_cm_id);
			d[n].remote = READ_ONCE(e->remote_id);
			d[n].state = READ_ONCE(e->state);
			d[n].flags = READ_ONCE(e->flags);
			d[n].sidr = READ_ONCE(e->sidr);
			d[n].loop_slave = READ_ONCE(e->loop_slave);
			n++;
		}
		total++;
	}
	rcu_read_unlock();
	ibst_diag("dump: %u entr%s by pv_cm_id%s", total,
		  total == 1 ? "y" : "ies", total > n ? ", the first ones:" : "");
	for (i = 0; i < n; i++)
		ibst_diag("dump: pv %#x: VF %u id %#x, remote %#x, %s%s%s%s, REQ to VF %d%s",
			  d[i].pv, d[i].slave, d[i].sl, d[i].remote,
			  d[i].state < ARRAY_SIZE(states) ?
			  states[d[i].state] : "?",
			  d[i].flags & PVCM_F_INDEXED ? ", indexed" : "",
			  d[i].sidr ? ", SIDR" : "",
			  d[i].flags & PVCM_F_IDLE ? ", idle" : "",
			  d[i].flags & PVCM_F_LOOP ? d[i].loop_slave : -1,
			  d[i].flags & PVCM_F_ROUTED ? ", it may answer" : "");
}

static int t_setup(void)
{
	int ret;

	BUILD_BUG_ON(sizeof(struct pvcm_entry) > 56);
	/* the production timeouts are 0 here: the cases need short ones */
	pvcm_test_timewait = HZ / 10;
	pvcm_test_pending = HZ / 5;
	pvcm_test_route_life = 60 * HZ;	/* t_settle() ends them */
	ret = pvcm_t_master_add("pvcm_test0");
	if (ret)
		return ret;
	ibst_set_dump(t_dump);
	return 0;
}

/* entries left for the final clean must be freed by it */
static void t_teardown(void)
{
	int err;

	t_out(1, CM_REQ_ATTR_ID, 0x1, 0, &err);
	pvcm_t_master_del();
}

IBST_SUITE(mlx4_ib_pvcm, t_cases, t_setup, t_teardown);
MODULE_DESCRIPTION("mlx4_ib PV-CM id cache test");
MODULE_LICENSE("Dual BSD/GPL");
