// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Mutation fuzzer of the mlx4_ib PV-CM id cache.
 *
 * Like pvcm_test.c, the module links the cm.o of mlx4_ib.ko (test hooks
 * and pvcm_priv.h internals included), sets short timeouts and drives the
 * cache through a fake master device.  It
 * sends valid CM MADs of every attribute (and unknown ones) mutated at
 * their field boundaries through the multiplex path, from 64 VFs and from
 * slave numbers out of range, and through the demultiplex path in IB and
 * RoCE mode, interleaved with valid connections whose every step is
 * checked and with per-VF cleans.  Every MAD is checked against what the
 * handlers promise: a dropped MAD is unchanged and counted once, a passed
 * one only has its comm id rewritten, to the id of an entry of the right
 * slave; malformed MADs, short ones and those naming another
 * connection's pv id are dropped with the right errno.  Afterwards the
 * connections opened before the run still map, and after their teardown
 * and TimeWait the cache is empty.
 *
 * The sequence comes from its own PRNG: "seed" (printed as a diagnostic,
 * 0 picks one) repeats a run, "iterations" sets its length.  It reports
 * through drivers/infiniband/core/ib_selftest.h and fails the load on a
 * failed check.
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
/* KUnit would run the cases before "iterations" and "seed" are set */
#define IBST_KTAP_ONLY
#include "../../core/ib_selftest.h"

#include <linux/delay.h>
#include <linux/prandom.h>

static unsigned long iterations = 100000;
module_param(iterations, ulong, 0444);
MODULE_PARM_DESC(iterations, "MADs and steps to run (default 100000)");

static unsigned long seed;
module_param(seed, ulong, 0444);
MODULE_PARM_DESC(seed, "PRNG seed, 0 = pick one (the seed used is printed)");

#define F_SLAVES	64		/* VFs with a GID */
#define F_PORT		1
#define F_GID_BASE	0x0002c90300b00000ULL	/* + slave = a VF's GID */
#define F_KEEP_SLAVES	4		/* slaves 0..3 are never cleaned */
#define F_SLOTS		16		/* valid connections in flight */
#define F_POOL		64
#define F_NR_GUIDS	8
/* the comm ids of valid connections: the mutations never make them */
#define F_TAG		0x5a000000
#define F_TAG_MASK	0xff000000
#define F_REPORT_MAX	10		/* failures printed in full */
#define F_AUDIT_EVERY	4096
#define F_REAP_EVERY	16384
#define F_ANY		1		/* an expectation: any result */
#define F_LONG		(600 * HZ)	/* nothing expires by itself */

#define PVCM_T_PORT	F_PORT
#define PVCM_T_GID_BASE	F_GID_BASE
#define PVCM_T_SLAVES	F_SLAVES
#include "pvcm_test_util.h"

/* ---- state of the run -------------------------------------------------- */

static struct rnd_state f_rnd;
static u64 f_seed;
static unsigned long f_iter;
static unsigned long f_failures;	/* failed checks of the running case */

/* drops the handlers must have counted, per slave and for the device */
static unsigned long f_drops[MLX4_MFUNC_MAX];
static unsigned long f_drops_dev;
static long f_base_dropped[MLX4_MFUNC_MAX];
static long f_base_dev_dropped;
static long f_base_bad_cleans;
static unsigned long f_bad_cleans;

/* what the last handler call was given, for the failure messages */
static struct {
	const char *op;
	int slave;
	int port;
	size_t len;
	u16 attr;
	u32 w0, w1;
} f_ctx;

/* recent ids, to aim mutations at */
static u32 f_pool_pv[F_POOL];		/* pv ids the multiplex handed out */
static u32 f_pool_wire[F_POOL];		/* comm ids of the far ends */
static struct { u32 slave, id; } f_pool_sl[F_POOL];	/* VFs' own ids */
static struct { u32 pv, peer; } f_pool_conn[F_POOL];	/* pv id, far end */
static __be64 f_guids[F_NR_GUIDS];

static unsigned long f_stat_mux, f_stat_dmx, f_stat_pass, f_stat_steps;
static unsigned long f_stat_seqs, f_stat_cleans, f_stat_audits;

static u32 f_u32(void)
{
	return prandom_u32_state(&f_rnd);
}

static u32 f_below(u32 n)
{
	return f_u32() % n;
}

static bool f_chance(u32 percent)
{
	return f_below(100) < percent;
}

static __printf(2, 3) void f_fail(int line, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	if (++f_failures > F_REPORT_MAX)
		return;		/* counted, reported by f_case_end() */
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	IBST_FAIL("seed %llu iter %lu line %d: %pV", f_seed, f_iter, line,
		  &vaf);
	ibst_diag("last call: %s slave %d port %d len %zu attr 0x%x ids 0x%x 0x%x",
		  f_ctx.op, f_ctx.slave, f_ctx.port, f_ctx.len, f_ctx.attr,
		  f_ctx.w0, f_ctx.w1);
	va_end(args);
}

#define F_CHECK(cond, fmt, ...) do {					\
	if (unlikely(!(cond)))						\
		f_fail(__LINE__, "%s: " fmt, #cond, ##__VA_ARGS__);	\
} while (0)

static u32 f_get(const struct ib_mad *mad, unsigned int off)
{
	return get_unaligned_be32(mad->data + off);
}

static void f_put(struct ib_mad *mad, unsigned int off, u32 val)
{
	put_unaligned_be32(val, mad->data + off);
}

static bool f_tagged(u32 id)
{
	return (id & F_TAG_MASK) == F_TAG;
}

static u32 f_tag_id(void)
{
	return F_TAG | (f_u32() & ~F_TAG_MASK) | 1;
}

static bool f_attr_is(const struct ib_mad *mad, __be16 attr)
{
	return mad->mad_hdr.attr_id == attr;
}

static bool f_cm_attr(const struct ib_mad *mad)
{
	u16 attr = be16_to_cpu(mad->mad_hdr.attr_id);

	return attr >= 0x10 && attr <= 0x1a;
}

/* where the receiver's id sits, -1 for a MAD that names none */
static int f_remote_off(const struct ib_mad *mad)
{
	if (f_attr_is(mad, CM_REQ_ATTR_ID) || f_attr_is(mad, CM_SIDR_REQ_ATTR_ID))
		return -1;
	return f_attr_is(mad, CM_SIDR_REP_ATTR_ID) ? 0 : 4;
}

static void f_set_gid_slave(struct ib_mad *mad, u64 if_id)
{
	union ib_gid gid;

	gid.global.subnet_prefix = cpu_to_be64(0xfe80000000000000ULL);
	gid.global.interface_id = cpu_to_be64(if_id);
	memcpy(IBA_GET_MEM_PTR(CM_REQ_PRIMARY_REMOTE_PORT_GID,
			       (struct cm_req_msg *)mad), &gid, sizeof(gid));
}

static void f_set_req_guid(struct ib_mad *mad, __be64 guid)
{
	IBA_SET(CM_REQ_LOCAL_CA_GUID, (struct cm_req_msg *)mad,
		be64_to_cpu(guid));
}

static int f_gid_slave(int port, const struct ib_mad *mad)
{
	return mlx4_ib_find_real_gid(NULL, port, pvcm_req_dest_if_id(mad));
}

/* a valid CM MAD; the caller fills in what the attribute needs */
static void f_mad(struct ib_mad *mad, __be16 attr, u32 local, u32 remote)
{
	memset(mad, 0, sizeof(*mad));
	mad->mad_hdr.base_version = IB_MGMT_BASE_VERSION;
	mad->mad_hdr.mgmt_class = IB_MGMT_CLASS_CM;
	mad->mad_hdr.class_version = PVCM_CM_CLASS_VERSION;
	mad->mad_hdr.method = IB_MGMT_METHOD_SEND;
	mad->mad_hdr.attr_id = attr;
	mad->mad_hdr.tid = cpu_to_be64((u64)f_u32() << 32 | f_u32());
	f_put(mad, 0, local);
	if (f_remote_off(mad) == 4)
		f_put(mad, 4, remote);
}

static void f_req(struct ib_mad *mad, u32 local, __be64 guid, int slave)
{
	f_mad(mad, CM_REQ_ATTR_ID, local, 0);
	f_set_req_guid(mad, guid);
	f_set_gid_slave(mad, F_GID_BASE + slave);
}

static void f_mra(struct ib_mad *mad, u32 local, u32 remote, u8 msg)
{
	f_mad(mad, CM_MRA_ATTR_ID, local, remote);
	IBA_SET(CM_MRA_MESSAGE_MRAED, (struct cm_mra_msg *)mad, msg);
}

static void f_rej(struct ib_mad *mad, u32 local, u32 remote, u8 msg,
		  u16 reason, const __be64 *guid)
{
	struct cm_rej_msg *rej = (struct cm_rej_msg *)mad;

	f_mad(mad, CM_REJ_ATTR_ID, local, remote);
	IBA_SET(CM_REJ_MESSAGE_REJECTED, rej, msg);
	IBA_SET(CM_REJ_REASON, rej, reason);
	if (guid) {
		IBA_SET(CM_REJ_REJECTED_INFO_LENGTH, rej, sizeof(*guid));
		memcpy(IBA_GET_MEM_PTR(CM_REJ_ARI, rej), guid, sizeof(*guid));
	}
}

/* the bytes of @a and @b other than the 4 at data offset @off differ */
static bool f_differs_but(const struct ib_mad *a, const struct ib_mad *b,
			  int off)
{
	size_t at = offsetof(struct ib_mad, data) + off;

	if (off < 0)
		return memcmp(a, b, sizeof(*a));
	return memcmp(a, b, at) ||
	       memcmp((const u8 *)a + at + 4, (const u8 *)b + at + 4,
		      sizeof(*a) - at - 4);
}

static void f_pool_add(u32 *pool, u32 id)
{
	pool[f_below(F_POOL)] = id;
}

static void f_pool_add_conn(u32 pv, u32 peer)
{
	unsigned int i = f_below(F_POOL);

	f_pool_conn[i].pv = pv;
	f_pool_conn[i].peer = peer;
}

/* ---- counted calls ------------------------------------------------------- */

/* the header of a CM message: a Send of class version 2, base version 1 */
static bool f_cm_header_ok(const struct ib_mad *mad)
{
	return mad->mad_hdr.base_version == IB_MGMT_BASE_VERSION &&
	       mad->mad_hdr.mgmt_class == IB_MGMT_CLASS_CM &&
	       mad->mad_hdr.class_version == PVCM_CM_CLASS_VERSION &&
	       mad->mad_hdr.method == IB_MGMT_METHOD_SEND;
}

static bool f_errno_ok(int ret)
{
	switch (ret) {
	case 0:
	case -EMSGSIZE:
	case -EPROTO:
	case -EINVAL:
	case -ENOENT:
	case -EPERM:
	case -EEXIST:
	case -EDQUOT:
	case -ENOMEM:
		return true;
	}
	return false;
}

static void f_note_ctx(const char *op, int slave, int port,
		       const struct ib_mad *mad, size_t len)
{
	f_ctx.op = op;
	f_ctx.slave = slave;
	f_ctx.port = port;
	f_ctx.len = len;
	f_ctx.attr = be16_to_cpu(mad->mad_hdr.attr_id);
	/* a short MAD's caller fills them in: the buffer ends before */
	if (len >= sizeof(*mad)) {
		f_ctx.w0 = f_get(mad, 0);
		f_ctx.w1 = f_get(mad, 4);
	}
}

/*
 * Every handler call goes through these: each error return is one drop,
 * charged to the sending slave when it is in range, else to the device.
 */
static int f_call_mux(int slave, int port, struct ib_mad *mad, size_t len,
		      bool public)
{
	int ret;

	f_note_ctx("mux", slave, port, mad, len);
	if (public)
		ret = mlx4_ib_multiplex_cm_handler(&t_dev->ib_dev, port, slave,
						   mad);
	else
		ret = pvcm_multiplex(t_dev, port, slave, mad, len);
	f_stat_mux++;
	if (ret < 0) {
		if (slave >= 0 && slave < MLX4_MFUNC_MAX)
			f_drops[slave]++;
		else
			f_drops_dev++;
	}
	return ret;
}

/*
 * IB (@roce false): *@slave in is the GRH's choice, out the VF.  Drops
 * count for the device, but a REQ whose route could not be kept: that
 * one counts for the VF it was for.
 */
static int f_call_dmx(bool roce, int *slave, int port, u16 pkey_index,
		      struct ib_mad *mad, size_t len, bool public)
{
	bool req = len >= sizeof(*mad) && f_attr_is(mad, CM_REQ_ATTR_ID) &&
		   f_cm_header_ok(mad);
	int ret;

	f_note_ctx(roce ? "demux-roce" : "demux-ib", *slave, port, mad, len);
	/* only the handler checks a RoCE caller's slave number */
	if (roce && (*slave < 0 || *slave >= MLX4_MFUNC_MAX))
		public = true;
	if (public && roce)
		ret = mlx4_ib_demux_cm_handler_to_slave(&t_dev->ib_dev, port,
							*slave, pkey_index,
							mad);
	else if (public)
		ret = mlx4_ib_demux_cm_handler(&t_dev->ib_dev, port, slave,
					       pkey_index, mad);
	else
		ret = pvcm_demux(t_dev, port, pkey_index, slave, roce, mad,
				 len);
	f_stat_dmx++;
	/* a REQ for a VF outside its partition counts for the device */
	if (ret < 0 && req && ret != -ENOENT && ret != -EPERM &&
	    *slave >= 0 && *slave < MLX4_MFUNC_MAX)
		f_drops[*slave]++;
	else if (ret < 0)
		f_drops_dev++;
	return ret;
}

/* ---- connections that must survive: opened first, checked, closed last */

struct f_keeper {
	int slave;
	bool roce;
	u32 sl;		/* the VF's comm id */
	u32 pv;		/* its pv id */
	u32 peer;	/* the far end's comm id, as wire MADs carry it */
};

enum { K_ACTIVE, K_PASSIVE, K_ROCE, K_LOOP_A, K_LOOP_B, F_NR_KEEPERS };

static struct f_keeper f_keep[F_NR_KEEPERS];

/* valid connections in flight, advanced one step at a time */
enum f_kind {
	F_NONE, F_ACTIVE, F_PASSIVE, F_LOOP, F_SIDR_IN, F_SIDR_OUT,
	F_SIDR_LOOP, F_NR_KINDS
};

struct f_slot {
	u8 kind;
	u8 step;
	bool roce;
	u8 cleaned;		/* bit 0: a was cleaned, bit 1: b */
	u32 variant;
	int a, b;		/* the VF, and a loopback's answering VF */
	u32 sl_a, sl_b;		/* their comm ids */
	u32 pv_a, pv_b;		/* their pv ids once mapped */
	u32 peer;		/* the far end's comm id, or a SIDR request id */
	__be64 guid;		/* the far end's CA GUID */
};

static struct f_slot f_slot[F_SLOTS];

/* is @id the pv id of a keeper or of a connection in flight? */
static bool f_protected_pv(u32 id, bool keepers)
{
	int i;

	if (!id)	/* not mapped yet */
		return false;
	if (keepers)
		for (i = 0; i < F_NR_KEEPERS; i++)
			if (f_keep[i].pv == id)
				return true;
	for (i = 0; i < F_SLOTS; i++)
		if (f_slot[i].kind != F_NONE &&
		    (f_slot[i].pv_a == id || f_slot[i].pv_b == id))
			return true;
	return false;
}

/*
 * Keep a mutated MAD from acting on a valid connection in a way its
 * protocol allows (its own far end's comm id as the sender, or a
 * stranger's first answer to a pending REQ): those are not faults.  A
 * sender id never carries the tag of valid ids nor a protected pv id (a
 * loopback's far end is a pv id), and a receiver id never names a
 * connection in flight.  Keepers may be named: they know their peer.
 */
static void f_guard_id(struct ib_mad *mad, int off, bool sender)
{
	u32 id = f_get(mad, off);
	int i;

	for (i = 0; i < 8; i++) {
		if (!f_tagged(id) && !f_protected_pv(id, sender))
			break;
		id ^= BIT(24 + i);
	}
	f_put(mad, off, id);
}

static void f_guard(struct ib_mad *mad, bool out)
{
	int roff = f_remote_off(mad);

	if (out) {
		/* a VF's own ids and the far ends it names */
		f_guard_id(mad, 0, false);
		f_guard_id(mad, 4, false);
		return;
	}
	if (roff != 0)
		f_guard_id(mad, 0, true);
	if (roff >= 0)
		f_guard_id(mad, roff, false);
}

/* ---- checked steps of valid connections --------------------------------- */

/*
 * VF @slave sends @mad: it must pass with only its local id rewritten,
 * to @want (0: any new non-zero id, F_ANY: not checked).  Return: the id
 * on the wire.
 */
static u32 f_vf_send(int slave, struct ib_mad *mad, u32 want)
{
	struct ib_mad orig = *mad;
	int off = f_attr_is(mad, CM_SIDR_REP_ATTR_ID) ? -1 : 0;
	int ret;
	u32 id;

	ret = f_call_mux(slave, F_PORT, mad, sizeof(*mad), true);
	id = f_get(mad, 0);
	F_CHECK(ret == 0, "valid VF MAD dropped (%d)", ret);
	F_CHECK(!f_differs_but(mad, &orig, off), "VF MAD changed beyond its id");
	if (off < 0 || want == F_ANY)
		return id;
	if (want)
		F_CHECK(id == want, "VF id 0x%x mapped to 0x%x, not 0x%x",
			f_get(&orig, 0), id, want);
	else
		F_CHECK(id && id != f_get(&orig, 0),
			"VF id 0x%x mapped to 0x%x", f_get(&orig, 0), id);
	if (!ret && id)
		f_pool_add(f_pool_pv, id);
	return id;
}

/*
 * A MAD from the wire for VF @slave: it must reach that VF with its
 * remote id rewritten to @sl (a MAD that names no pv id: unchanged).
 */
static void f_wire_send(struct ib_mad *mad, bool roce, int slave, u32 sl)
{
	struct ib_mad orig = *mad;
	int off = f_remote_off(mad);
	int to = slave, ret;

	ret = f_call_dmx(roce, &to, F_PORT, 0, mad, sizeof(*mad), true);
	F_CHECK(ret == 0, "valid wire MAD dropped (%d)", ret);
	F_CHECK(to == slave, "delivered to slave %d, not %d", to, slave);
	if (off >= 0 && sl != F_ANY)
		F_CHECK(f_get(mad, off) == sl, "remote id 0x%x, not 0x%x",
			f_get(mad, off), sl);
	F_CHECK(!f_differs_but(mad, &orig, off),
		"wire MAD changed beyond its remote id");
}

/* a VF's MAD of a connection that a clean ended: dropped, unchanged */
static void f_vf_refused(int slave, struct ib_mad *mad, int want)
{
	struct ib_mad orig = *mad;
	int ret;

	ret = f_call_mux(slave, F_PORT, mad, sizeof(*mad), true);
	F_CHECK(ret == want, "VF MAD gave %d, not %d", ret, want);
	F_CHECK(!memcmp(mad, &orig, sizeof(*mad)), "refused MAD changed");
}

static void f_wire_refused(struct ib_mad *mad, bool roce, int slave, int want)
{
	struct ib_mad orig = *mad;
	int ret;

	ret = f_call_dmx(roce, &slave, F_PORT, 0, mad, sizeof(*mad), true);
	F_CHECK(ret == want, "wire MAD gave %d, not %d", ret, want);
	F_CHECK(!memcmp(mad, &orig, sizeof(*mad)), "refused MAD changed");
}

/* the connection of @k is established and still maps both ways */
static void f_keeper_check(const struct f_keeper *k)
{
	struct pvcm_entry *e;
	struct ib_mad mad;

	f_mad(&mad, CM_LAP_ATTR_ID, k->sl, k->peer);
	f_vf_send(k->slave, &mad, k->pv);
	f_mad(&mad, CM_APR_ATTR_ID, k->peer, k->pv);
	f_wire_send(&mad, k->roce, k->slave, k->sl);
	rcu_read_lock();
	e = pvcm_find_pv(t_pv, k->pv);
	F_CHECK(e && READ_ONCE(e->state) == PVCM_ESTABLISHED &&
		!pvcm_stale(t_pv, e) && e->key.slave == k->slave &&
		e->key.sl_cm_id == k->sl && READ_ONCE(e->remote_id) == k->peer,
		"keeper of slave %d (pv 0x%x) lost", k->slave, k->pv);
	rcu_read_unlock();
}

static void f_keepers_open(void)
{
	struct f_keeper *k;
	struct ib_mad mad;
	int i;

	for (i = 0; i < F_NR_KEEPERS; i++) {
		k = &f_keep[i];
		k->sl = f_tag_id();
		k->peer = f_tag_id();
	}
	/* slave 0 connects to the far end */
	k = &f_keep[K_ACTIVE];
	k->slave = 0;
	f_mad(&mad, CM_REQ_ATTR_ID, k->sl, 0);
	k->pv = f_vf_send(k->slave, &mad, 0);
	f_mad(&mad, CM_REP_ATTR_ID, k->peer, k->pv);
	f_wire_send(&mad, false, k->slave, k->sl);
	f_mad(&mad, CM_RTU_ATTR_ID, k->sl, k->peer);
	f_vf_send(k->slave, &mad, k->pv);

	/* the far end connects to slave 1 (IB) and to slave 2 (RoCE) */
	for (i = K_PASSIVE; i <= K_ROCE; i++) {
		k = &f_keep[i];
		k->slave = i;
		k->roce = i == K_ROCE;
		f_req(&mad, k->peer, f_guids[i], k->slave);
		f_wire_send(&mad, k->roce, k->slave, F_ANY);
		f_mad(&mad, CM_REP_ATTR_ID, k->sl, k->peer);
		k->pv = f_vf_send(k->slave, &mad, 0);
		f_mad(&mad, CM_RTU_ATTR_ID, k->peer, k->pv);
		f_wire_send(&mad, k->roce, k->slave, k->sl);
	}

	/* slave 3 connects to slave 0 through this master */
	k = &f_keep[K_LOOP_A];
	k->slave = 3;
	f_keep[K_LOOP_B].slave = 0;
	f_mad(&mad, CM_REQ_ATTR_ID, k->sl, 0);
	f_set_gid_slave(&mad, F_GID_BASE + f_keep[K_LOOP_B].slave);
	k->pv = f_vf_send(k->slave, &mad, 0);
	f_wire_send(&mad, false, f_keep[K_LOOP_B].slave, F_ANY);
	f_keep[K_LOOP_B].peer = k->pv;
	k = &f_keep[K_LOOP_B];
	f_mad(&mad, CM_REP_ATTR_ID, k->sl, k->peer);
	k->pv = f_vf_send(k->slave, &mad, 0);
	f_keep[K_LOOP_A].peer = k->pv;
	f_wire_send(&mad, false, f_keep[K_LOOP_A].slave, f_keep[K_LOOP_A].sl);
	k = &f_keep[K_LOOP_A];
	f_mad(&mad, CM_RTU_ATTR_ID, k->sl, k->peer);
	f_vf_send(k->slave, &mad, k->pv);
	f_wire_send(&mad, false, f_keep[K_LOOP_B].slave, f_keep[K_LOOP_B].sl);

	for (i = 0; i < F_NR_KEEPERS; i++)
		f_keeper_check(&f_keep[i]);
}

/* each keeper ends its connection, from the VF or from the far end */
static void f_keepers_close(void)
{
	struct f_keeper *k, *b;
	struct ib_mad mad;
	int i;

	for (i = 0; i < F_NR_KEEPERS; i++) {
		k = &f_keep[i];
		if (i == K_LOOP_A) {
			b = &f_keep[K_LOOP_B];
			f_mad(&mad, CM_DREQ_ATTR_ID, k->sl, k->peer);
			f_vf_send(k->slave, &mad, k->pv);
			f_wire_send(&mad, false, b->slave, b->sl);
			f_mad(&mad, CM_DREP_ATTR_ID, b->sl, b->peer);
			f_vf_send(b->slave, &mad, b->pv);
			f_wire_send(&mad, false, k->slave, k->sl);
			break;
		}
		if (i & 1) {
			f_mad(&mad, CM_DREQ_ATTR_ID, k->peer, k->pv);
			f_wire_send(&mad, k->roce, k->slave, k->sl);
			f_mad(&mad, CM_DREP_ATTR_ID, k->sl, k->peer);
			f_vf_send(k->slave, &mad, k->pv);
		} else {
			f_mad(&mad, CM_DREQ_ATTR_ID, k->sl, k->peer);
			f_vf_send(k->slave, &mad, k->pv);
			f_mad(&mad, CM_DREP_ATTR_ID, k->peer, k->pv);
			f_wire_send(&mad, k->roce, k->slave, k->sl);
		}
	}
}

static void f_slot_start(struct f_slot *c, u8 kind)
{
	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->variant = f_u32();
	c->a = f_below(F_SLAVES);
	c->b = f_below(F_SLAVES);
	c->roce = c->variant & 1;
	c->sl_a = f_tag_id();
	c->sl_b = f_tag_id();
	c->peer = f_tag_id();
	c->guid = cpu_to_be64(0x5a00000000000000ULL | f_u32());
	f_stat_seqs++;
}

/* teardown of a two-sided connection, step 0 and 1 */
static bool f_close(struct f_slot *c, unsigned int step)
{
	bool vf_first = c->variant & 2;
	struct ib_mad mad;

	if (step == 0 && vf_first) {
		f_mad(&mad, CM_DREQ_ATTR_ID, c->sl_a, c->peer);
		f_vf_send(c->a, &mad, c->pv_a);
	} else if (step == 0) {
		f_mad(&mad, CM_DREQ_ATTR_ID, c->peer, c->pv_a);
		f_wire_send(&mad, c->roce, c->a, c->sl_a);
	} else if (vf_first) {
		f_mad(&mad, CM_DREP_ATTR_ID, c->peer, c->pv_a);
		f_wire_send(&mad, c->roce, c->a, c->sl_a);
	} else {
		f_mad(&mad, CM_DREP_ATTR_ID, c->sl_a, c->peer);
		f_vf_send(c->a, &mad, c->pv_a);
	}
	return step == 1;
}

/* the VF connects to the far end; return: the connection is over */
static bool f_step_active(struct f_slot *c)
{
	struct ib_mad mad;

	switch (c->step) {
	case 0:
		f_mad(&mad, CM_REQ_ATTR_ID, c->sl_a, 0);
		c->pv_a = f_vf_send(c->a, &mad, 0);
		return false;
	case 1:
		if (c->variant & 4) {	/* the far end rejects the REQ */
			f_rej(&mad, c->peer, c->pv_a, PVCM_REJ_MSG_REQ,
			      IB_CM_REJ_CONSUMER_DEFINED, NULL);
			f_wire_send(&mad, c->roce, c->a, c->sl_a);
			return true;
		}
		f_mra(&mad, c->peer, c->pv_a, PVCM_MRA_MSG_REQ);
		f_wire_send(&mad, c->roce, c->a, c->sl_a);
		return false;
	case 2:
		f_mad(&mad, CM_REP_ATTR_ID, c->peer, c->pv_a);
		f_wire_send(&mad, c->roce, c->a, c->sl_a);
		return false;
	case 3:
		f_mad(&mad, CM_RTU_ATTR_ID, c->sl_a, c->peer);
		f_vf_send(c->a, &mad, c->pv_a);
		return false;
	case 4:
		f_mad(&mad, CM_LAP_ATTR_ID, c->sl_a, c->peer);
		f_vf_send(c->a, &mad, c->pv_a);
		f_mad(&mad, CM_APR_ATTR_ID, c->peer, c->pv_a);
		f_wire_send(&mad, c->roce, c->a, c->sl_a);
		return false;
	}
	return f_close(c, c->step - 5);
}

/* the far end connects to the VF */
static bool f_step_passive(struct f_slot *c)
{
	struct ib_mad mad;

	switch (c->step) {
	case 0:
		f_req(&mad, c->peer, c->guid, c->a);
		f_wire_send(&mad, c->roce, c->a, F_ANY);
		return false;
	case 1:
		if (c->variant & 4) {	/* the VF delays the REQ */
			f_mra(&mad, c->sl_a, c->peer, PVCM_MRA_MSG_REQ);
			c->pv_a = f_vf_send(c->a, &mad, 0);
		}
		if (c->variant & 8) {	/* then rejects it */
			f_rej(&mad, c->sl_a, c->peer, PVCM_REJ_MSG_REQ,
			      IB_CM_REJ_CONSUMER_DEFINED, NULL);
			if (!c->pv_a) {
				/* nothing to map: its local id goes out as 0 */
				f_vf_send(c->a, &mad, F_ANY);
				F_CHECK(f_get(&mad, 0) == 0,
					"unmapped REJ of a REQ carries 0x%x",
					f_get(&mad, 0));
			} else {
				f_vf_send(c->a, &mad, c->pv_a);
			}
			return true;
		}
		if (!c->roce && (c->variant & 16)) {
			/* the far end's REQ timed out: routed by its GUID */
			f_rej(&mad, c->peer, 0, PVCM_REJ_MSG_REQ,
			      IB_CM_REJ_TIMEOUT, &c->guid);
			f_wire_send(&mad, false, c->a, F_ANY);
			F_CHECK(f_get(&mad, 4) == 0, "REJ(timeout) rewritten");
			return !c->pv_a;
		}
		return false;
	case 2:
		f_mad(&mad, CM_REP_ATTR_ID, c->sl_a, c->peer);
		c->pv_a = f_vf_send(c->a, &mad, c->pv_a);
		return false;
	case 3:
		f_mad(&mad, CM_RTU_ATTR_ID, c->peer, c->pv_a);
		f_wire_send(&mad, c->roce, c->a, c->sl_a);
		return false;
	}
	return f_close(c, c->step - 4);
}

/* VF a connects to VF b through this master: mux output fed to demux */
static bool f_step_loop(struct f_slot *c)
{
	bool a_first = c->variant & 2;
	struct ib_mad mad;

	switch (c->step) {
	case 0:
		f_mad(&mad, CM_REQ_ATTR_ID, c->sl_a, 0);
		f_set_gid_slave(&mad, F_GID_BASE + c->b);
		c->pv_a = f_vf_send(c->a, &mad, 0);
		f_wire_send(&mad, c->roce, c->b, F_ANY);
		return false;
	case 1:
		f_mad(&mad, CM_REP_ATTR_ID, c->sl_b, c->pv_a);
		c->pv_b = f_vf_send(c->b, &mad, 0);
		f_wire_send(&mad, c->roce, c->a, c->sl_a);
		F_CHECK(f_get(&mad, 0) == c->pv_b, "loopback REP lost its id");
		return false;
	case 2:
		f_mad(&mad, CM_RTU_ATTR_ID, c->sl_a, c->pv_b);
		f_vf_send(c->a, &mad, c->pv_a);
		f_wire_send(&mad, c->roce, c->b, c->sl_b);
		return false;
	case 3:
		if (a_first) {
			f_mad(&mad, CM_DREQ_ATTR_ID, c->sl_a, c->pv_b);
			f_vf_send(c->a, &mad, c->pv_a);
			f_wire_send(&mad, c->roce, c->b, c->sl_b);
		} else {
			f_mad(&mad, CM_DREQ_ATTR_ID, c->sl_b, c->pv_a);
			f_vf_send(c->b, &mad, c->pv_b);
			f_wire_send(&mad, c->roce, c->a, c->sl_a);
		}
		return false;
	}
	if (a_first) {
		f_mad(&mad, CM_DREP_ATTR_ID, c->sl_b, c->pv_a);
		f_vf_send(c->b, &mad, c->pv_b);
		f_wire_send(&mad, c->roce, c->a, c->sl_a);
	} else {
		f_mad(&mad, CM_DREP_ATTR_ID, c->sl_a, c->pv_b);
		f_vf_send(c->a, &mad, c->pv_a);
		f_wire_send(&mad, c->roce, c->b, c->sl_b);
	}
	return true;
}

static bool f_step_sidr(struct f_slot *c)
{
	struct ib_mad mad;
	int other;

	switch (c->kind) {
	case F_SIDR_IN:		/* a far end asks VF a */
		if (c->step == 0) {
			f_mad(&mad, CM_SIDR_REQ_ATTR_ID, c->peer, 0);
			f_wire_send(&mad, c->roce, c->a, F_ANY);
			return false;
		}
		other = (c->a + 1 + f_below(F_SLAVES - 1)) % F_SLAVES;
		f_mad(&mad, CM_SIDR_REP_ATTR_ID, c->peer, 0);
		f_vf_refused(other, &mad, -ENOENT);
		f_vf_send(c->a, &mad, F_ANY);
		return true;
	case F_SIDR_OUT:	/* VF a asks a far end */
		if (c->step == 0) {
			f_mad(&mad, CM_SIDR_REQ_ATTR_ID, c->sl_a, 0);
			c->pv_a = f_vf_send(c->a, &mad, 0);
			return false;
		}
		f_mad(&mad, CM_SIDR_REP_ATTR_ID, c->pv_a, 0);
		f_wire_send(&mad, c->roce, c->a, c->sl_a);
		return true;
	}
	/* VF a asks VF b */
	if (c->step == 0) {
		f_mad(&mad, CM_SIDR_REQ_ATTR_ID, c->sl_a, 0);
		c->pv_a = f_vf_send(c->a, &mad, 0);
		f_wire_send(&mad, c->roce, c->b, F_ANY);
		return false;
	}
	f_mad(&mad, CM_SIDR_REP_ATTR_ID, c->pv_a, 0);
	f_vf_send(c->b, &mad, F_ANY);
	f_wire_send(&mad, c->roce, c->a, c->sl_a);
	return true;
}

/*
 * A clean of one of its slaves ended the connection at once: the slave's
 * MADs for it and those naming its pv id are dropped.
 */
static void f_step_cleaned(struct f_slot *c)
{
	struct ib_mad mad;
	int i;

	for (i = 0; i < 2; i++) {
		int s = i ? c->b : c->a;
		u32 sl = i ? c->sl_b : c->sl_a, pv = i ? c->pv_b : c->pv_a;

		if (!pv || !(c->cleaned & BIT(i)))
			continue;
		f_mad(&mad, CM_DREQ_ATTR_ID, sl, c->peer);
		f_vf_refused(s, &mad, -ENOENT);
		f_mad(&mad, CM_RTU_ATTR_ID, c->peer, pv);
		f_wire_refused(&mad, false, s, -ENOENT);
	}
}

static void f_slot_step(struct f_slot *c)
{
	unsigned long failures = f_failures;
	bool done;

	if (c->kind == F_NONE)
		f_slot_start(c, 1 + f_below(F_NR_KINDS - 1));
	f_stat_steps++;
	if (c->cleaned) {
		f_step_cleaned(c);
		c->kind = F_NONE;
		return;
	}
	switch (c->kind) {
	case F_ACTIVE:
		done = f_step_active(c);
		break;
	case F_PASSIVE:
		done = f_step_passive(c);
		break;
	case F_LOOP:
		done = f_step_loop(c);
		break;
	default:
		done = f_step_sidr(c);
		break;
	}
	c->step++;
	/* a failed step is reported once, not by every later step */
	if (done || f_failures != failures)
		c->kind = F_NONE;
}

/* ---- mutated MADs ---------------------------------------------------------- */

static const __be16 f_attrs[] = {
	CM_REQ_ATTR_ID, CM_MRA_ATTR_ID, CM_REJ_ATTR_ID, CM_REP_ATTR_ID,
	CM_RTU_ATTR_ID, CM_DREQ_ATTR_ID, CM_DREP_ATTR_ID, CM_SIDR_REQ_ATTR_ID,
	CM_SIDR_REP_ATTR_ID, CM_LAP_ATTR_ID, CM_APR_ATTR_ID,
};

static __be16 f_attr(void)
{
	static const u16 unknown[] = { 0x0001, 0x000f, 0x001b, 0x0020, 0xffff };

	if (f_chance(90))
		return f_attrs[f_below(ARRAY_SIZE(f_attrs))];
	if (f_chance(50))
		return cpu_to_be16(unknown[f_below(ARRAY_SIZE(unknown))]);
	return cpu_to_be16(f_u32());
}

static int f_pick_slave(void)
{
	static const int bad[] = { -1, INT_MIN, MLX4_MFUNC_MAX, INT_MAX };
	u32 r = f_below(100);

	if (r < 90)
		return f_below(F_SLAVES);
	if (r < 97)	/* in range, without a GID */
		return F_SLAVES + f_below(MLX4_MFUNC_MAX - F_SLAVES);
	if (r < 99)
		return bad[f_below(ARRAY_SIZE(bad))];
	return MLX4_MFUNC_MAX + f_below(1000);
}

/* a pv id: recent, of a keeper, near the allocator (other slaves' too) */
static u32 f_pv_id(void)
{
	u32 r = f_below(100);

	if (r < 35)
		return f_pool_pv[f_below(F_POOL)];
	if (r < 50)
		return f_keep[f_below(F_NR_KEEPERS)].pv;
	if (r < 70)
		return pvcm_id_of(t_pv, READ_ONCE(t_pv->pv_next) - f_below(64));
	if (r < 80)
		return 0;
	return f_u32();
}

/* a VF's own id: new, recent (maybe another slave's), or small */
static u32 f_sl_id(void)
{
	u32 r = f_below(100);

	if (r < 40)
		return f_pool_sl[f_below(F_POOL)].id;
	if (r < 60)
		return 1 + f_below(16);
	return f_u32();
}

/* a far end's id: recent, another VF's pv id (loopback), new */
static u32 f_wire_id(void)
{
	u32 r = f_below(100);

	if (r < 40)
		return f_pool_wire[f_below(F_POOL)];
	if (r < 60)
		return f_pool_pv[f_below(F_POOL)];
	if (r < 70)
		return 0;
	return f_u32();
}

static __be64 f_guid(void)
{
	if (f_chance(85))
		return f_guids[f_below(F_NR_GUIDS)];
	return cpu_to_be64((u64)f_u32() << 32 | f_u32());
}

static u32 f_any_id(void)
{
	switch (f_below(6)) {
	case 0:
		return f_pv_id();
	case 1:
		return f_sl_id();
	case 2:
		return f_wire_id();
	case 3:
		return 0;
	case 4:
		return ~0U;
	}
	return f_u32();
}

/* a valid MAD of @attr as a VF (@out) or the wire would send it */
static void f_template(struct ib_mad *mad, __be16 attr, bool out, int slave)
{
	u32 local = out ? f_sl_id() : f_wire_id();
	u32 remote = out ? f_wire_id() : f_pv_id();
	__be64 guid;

	/* a VF often uses an id it used before */
	if (out && f_chance(60)) {
		unsigned int i, n;

		for (n = 0; n < 16; n++) {
			i = f_below(F_POOL);
			if (f_pool_sl[i].slave == slave) {
				local = f_pool_sl[i].id;
				break;
			}
		}
	}
	/* the far end of a connection the fuzzer saw, in its own words */
	if (!out && f_chance(40)) {
		unsigned int i = f_below(F_POOL);

		local = f_pool_conn[i].peer;
		remote = f_pool_conn[i].pv;
	}
	f_mad(mad, attr, local, remote);
	if (attr == CM_REQ_ATTR_ID) {
		guid = f_guid();
		f_set_req_guid(mad, guid);
		f_set_gid_slave(mad, F_GID_BASE + f_below(F_SLAVES + 4));
	} else if (attr == CM_MRA_ATTR_ID) {
		IBA_SET(CM_MRA_MESSAGE_MRAED, (struct cm_mra_msg *)mad,
			f_below(3));
	} else if (attr == CM_REJ_ATTR_ID) {
		guid = f_guid();
		f_rej(mad, local, remote, f_below(3),
		      f_chance(40) ? IB_CM_REJ_TIMEOUT :
		      IB_CM_REJ_CONSUMER_DEFINED, f_chance(70) ? &guid : NULL);
		if (!out && f_chance(50))
			f_put(mad, 4, 0);	/* REJ(timeout): no remote id */
	} else if (attr == CM_SIDR_REP_ATTR_ID) {
		f_put(mad, 0, out ? f_wire_id() : f_pv_id());
	}
}

/* mutate at field boundaries; *@len may become short */
static void f_mutate(struct ib_mad *mad, size_t *len)
{
	struct cm_rej_msg *rej = (struct cm_rej_msg *)mad;
	unsigned int n = f_chance(30) ? 0 : 1 + f_below(4), i, k;
	__be64 guid;

	while (n--) {
		switch (f_below(15)) {
		case 0:
		case 1:
			f_put(mad, 0, f_any_id());
			break;
		case 2:
		case 3:
			f_put(mad, 4, f_any_id());
			break;
		case 4:
			IBA_SET(CM_MRA_MESSAGE_MRAED, (struct cm_mra_msg *)mad,
				f_below(4));
			break;
		case 5:
			IBA_SET(CM_REJ_MESSAGE_REJECTED, rej, f_below(4));
			break;
		case 6:
			IBA_SET(CM_REJ_REASON, rej, f_chance(50) ?
				IB_CM_REJ_TIMEOUT : f_below(0x10000));
			IBA_SET(CM_REJ_REJECTED_INFO_LENGTH, rej,
				f_chance(50) ? 8 : f_below(128));
			break;
		case 7:
			guid = f_guid();
			memcpy(IBA_GET_MEM_PTR(CM_REJ_ARI, rej), &guid,
			       sizeof(guid));
			break;
		case 8:
			if (f_chance(50))
				f_set_gid_slave(mad, F_GID_BASE +
						f_below(F_SLAVES + 8));
			else
				f_set_gid_slave(mad, (u64)f_u32() << 32 |
						f_u32());
			guid = f_guid();
			f_set_req_guid(mad, guid);
			break;
		case 9:
			mad->mad_hdr.class_version = f_chance(50) ?
				f_below(4) : f_u32();
			break;
		case 10:
			if (f_chance(50))
				mad->mad_hdr.base_version = f_u32();
			else
				mad->mad_hdr.method = f_chance(50) ?
					IB_MGMT_METHOD_SEND |
					IB_MGMT_METHOD_RESP : f_u32();
			break;
		case 11:
			mad->mad_hdr.mgmt_class = f_chance(50) ?
				IB_MGMT_CLASS_SUBN_ADM : f_u32();
			break;
		case 12:
			mad->mad_hdr.attr_id = f_attr();
			break;
		case 13:
			*len = f_below(sizeof(*mad));
			break;
		default:
			k = 1 + f_below(8);
			for (i = 0; i < k; i++)
				((u8 *)mad)[f_below(sizeof(*mad))] = f_u32();
			break;
		}
	}
}

/*
 * What the handlers must answer, as far as the MAD alone tells:
 * malformed MADs in the order they are checked, REQs without a VF,
 * requests delivered to a VF, and MADs naming a keeper's pv id that are
 * not from its far end (or, on RoCE, are for another VF).  F_ANY when it
 * depends on the cache's state.
 */
static int f_expect(const struct ib_mad *mad, bool out, bool roce, int slave,
		    int port, size_t len, bool fault)
{
	int roff = f_remote_off(mad), i;
	u32 id;

	if ((out || roce) && (slave < 0 || slave >= MLX4_MFUNC_MAX))
		return -EINVAL;
	if (len < sizeof(*mad))
		return -EMSGSIZE;
	if (!f_cm_header_ok(mad))
		return -EPROTO;
	if (!f_cm_attr(mad))
		return -EINVAL;
	if (out)
		return F_ANY;
	if (f_attr_is(mad, CM_SIDR_REQ_ATTR_ID))
		return 0;
	if (f_attr_is(mad, CM_REQ_ATTR_ID)) {
		if (!roce && f_gid_slave(port, mad) < 0)
			return -ENOENT;
		return fault ? F_ANY : 0;
	}
	id = f_get(mad, roff);
	for (i = 0; i < F_NR_KEEPERS; i++) {
		const struct f_keeper *k = &f_keep[i];

		if (id != k->pv)
			continue;
		if ((roce && slave != k->slave) || roff == 0 ||
		    f_get(mad, 0) != k->peer)
			return -EPERM;
	}
	return F_ANY;
}

/* a passed VF MAD: only its own id changed, to its own entry's pv id */
static void f_check_mux_pass(const struct ib_mad *mad,
			     const struct ib_mad *orig, int slave)
{
	u32 sl = f_get(orig, 0), pv = f_get(mad, 0);
	struct pvcm_entry *e;
	unsigned int i;

	if (f_attr_is(orig, CM_SIDR_REP_ATTR_ID)) {
		F_CHECK(!memcmp(mad, orig, sizeof(*mad)),
			"passed SIDR_REP changed");
		return;
	}
	F_CHECK(!f_differs_but(mad, orig, 0), "passed MAD changed beyond its id");
	if (!pv) {
		F_CHECK(f_attr_is(orig, CM_REJ_ATTR_ID) && pvcm_rej_of_req(orig),
			"local id 0 on a MAD other than a REJ of a REQ");
		return;
	}
	rcu_read_lock();
	e = pvcm_find_pv(t_pv, pv);
	F_CHECK(e, "VF id 0x%x went out as 0x%x, which maps nothing", sl, pv);
	if (e) {
		F_CHECK(e->key.slave == slave && e->key.sl_cm_id == sl,
			"slave %d id 0x%x went out as 0x%x of slave %u id 0x%x",
			slave, sl, pv, e->key.slave, e->key.sl_cm_id);
		F_CHECK(!pvcm_stale(t_pv, e), "a stale entry was used");
		F_CHECK(READ_ONCE(e->state) != PVCM_DEAD, "a dead entry was used");
	}
	rcu_read_unlock();
	f_pool_add(f_pool_pv, pv);
	if (f_remote_off(orig) == 4 && f_get(orig, 4))
		f_pool_add_conn(pv, f_get(orig, 4));
	i = f_below(F_POOL);
	f_pool_sl[i].slave = slave;
	f_pool_sl[i].id = sl;
}

/*
 * A passed wire MAD: a request is unchanged and goes to the VF of its GID
 * (IB REQ) or the one the caller chose; any other only has its remote id
 * rewritten, to the VF's id of the entry of that pv id, which is usable,
 * of the slave it went to and whose far end sent the MAD.  Only an IB
 * REJ(timeout) passes without an entry, routed by its GUID.
 */
static void f_check_dmx_pass(const struct ib_mad *mad,
			     const struct ib_mad *orig, bool roce, int in,
			     int to, int port)
{
	int roff = f_remote_off(orig);
	u32 pv, sl, sender = f_get(orig, 0), peer;
	struct pvcm_entry *e;

	if (roff < 0) {
		F_CHECK(!memcmp(mad, orig, sizeof(*mad)), "passed request changed");
		if (roce || f_attr_is(orig, CM_SIDR_REQ_ATTR_ID))
			F_CHECK(to == in, "request went to %d, not %d", to, in);
		else
			F_CHECK(to == f_gid_slave(port, orig),
				"REQ went to %d, its GID is slave %d", to,
				f_gid_slave(port, orig));
		if (sender)
			f_pool_add(f_pool_wire, sender);
		return;
	}
	F_CHECK(!f_differs_but(mad, orig, roff),
		"passed MAD changed beyond its remote id");
	F_CHECK(to >= 0 && to < MLX4_MFUNC_MAX, "delivered to slave %d", to);
	if (roce)
		F_CHECK(to == in, "RoCE MAD went to %d, not %d", to, in);
	pv = f_get(orig, roff);
	sl = f_get(mad, roff);
	rcu_read_lock();
	e = pvcm_find_pv(t_pv, pv);
	if (e && pvcm_usable(t_pv, e)) {
		F_CHECK(e->key.slave == to && e->key.sl_cm_id == sl,
			"pv 0x%x went to slave %d as 0x%x, entry of slave %u id 0x%x",
			pv, to, sl, e->key.slave, e->key.sl_cm_id);
		if (roff == 0) {
			F_CHECK(READ_ONCE(e->sidr), "SIDR_REP ended a connection");
		} else {
			peer = READ_ONCE(e->remote_id);
			F_CHECK(!READ_ONCE(e->sidr), "CM MAD on a SIDR entry");
			F_CHECK(!peer || peer == sender,
				"MAD from 0x%x acted on the entry of peer 0x%x",
				sender, peer);
		}
	} else {
		F_CHECK(!roce && pvcm_rej_timeout(orig) && sl == pv,
			"unknown pv id 0x%x passed as 0x%x", pv, sl);
		F_CHECK(to == pvcm_route_lookup(t_pv, port, sender,
						pvcm_rej_guid(orig)),
			"REJ(timeout) went to %d, not its route", to);
	}
	rcu_read_unlock();
	if (sender && roff) {
		f_pool_add(f_pool_wire, sender);
		if (f_attr_is(orig, CM_REP_ATTR_ID))
			f_pool_add_conn(pv, sender);
	}
}

/* one mutated MAD through multiplex or demultiplex, checked */
static void f_fuzz_one(void)
{
	const size_t hdr = sizeof(struct ib_mad_hdr);
	u32 r = f_below(100);
	bool out = r < 50, roce = !out && r < 75;
	int port = f_chance(97) ? F_PORT : F_PORT + 1;
	bool public = f_chance(20), fault = f_chance(2);
	int slave = f_pick_slave(), to = slave, ret, exp;
	u16 pkey_index = f_chance(3) ? PVCM_T_PKEY_FOREIGN : 0;
	struct ib_mad mad, orig, *buf = &mad;
	size_t len = sizeof(mad), cmp;
	bool foreign;

	f_template(&mad, f_attr(), out, slave);
	f_mutate(&mad, &len);
	f_guard(&mad, out);
	orig = mad;
	exp = f_expect(&mad, out, roce, slave, port, len, fault);
	/*
	 * A well-formed MAD of a partition no VF is in acts for none: it is
	 * dropped, but a SIDR_REQ mad.c gave no slave to, which the handler
	 * passes untouched (mad.c drops it).
	 */
	foreign = !out && pkey_index && (exp == F_ANY || exp == 0) &&
		  !(f_attr_is(&mad, CM_SIDR_REQ_ATTR_ID) &&
		    (slave < 0 || slave >= MLX4_MFUNC_MAX));
	cmp = sizeof(mad);
	if (len < sizeof(mad)) {
		/*
		 * A short MAD in a buffer of its length (KASAN sees a read
		 * past it); at least a header, which the drop message reads.
		 */
		public = false;
		cmp = max(len, hdr);
		buf = kmemdup(&mad, cmp, GFP_KERNEL);
		if (!buf)
			return;
	}
	if (fault)
		atomic_set(&pvcm_test_fail_nth, 1 + f_below(3));
	if (out)
		ret = f_call_mux(slave, port, buf, len, public);
	else
		ret = f_call_dmx(roce, &to, port, pkey_index, buf, len,
				 public);
	atomic_set(&pvcm_test_fail_nth, 0);
	f_ctx.w0 = f_get(&orig, 0);
	f_ctx.w1 = f_get(&orig, 4);

	F_CHECK(f_errno_ok(ret), "unexpected errno %d", ret);
	if (foreign)
		F_CHECK(ret == -EPERM || ret == -ENOENT,
			"a MAD for no member of its partition gave %d", ret);
	else if (exp != F_ANY)
		F_CHECK(ret == exp, "gave %d, not %d", ret, exp);
	if (ret || buf != &mad)
		F_CHECK(!memcmp(buf, &orig, cmp), "dropped MAD changed (%d)",
			ret);
	if (buf != &mad) {
		kfree(buf);
		return;
	}
	if (ret)
		return;
	f_stat_pass++;
	if (out)
		f_check_mux_pass(&mad, &orig, slave);
	else
		f_check_dmx_pass(&mad, &orig, roce, slave, to, port);
}

/* clean a VF (never a keeper's), or ask for a slave out of range */
static void f_clean(void)
{
	static const int bad[] = { -1, INT_MIN, MLX4_MFUNC_MAX, INT_MAX };
	struct f_slot *c;
	int s, i;

	f_stat_cleans++;
	if (f_chance(10)) {
		mlx4_ib_cm_paravirt_clean(t_dev, bad[f_below(ARRAY_SIZE(bad))]);
		f_bad_cleans++;
		return;
	}
	if (f_chance(90))
		s = F_KEEP_SLAVES + f_below(F_SLAVES - F_KEEP_SLAVES);
	else
		s = F_SLAVES + f_below(MLX4_MFUNC_MAX - F_SLAVES);
	mlx4_ib_cm_paravirt_clean(t_dev, s);
	for (i = 0; i < F_SLOTS; i++) {
		c = &f_slot[i];
		if (c->kind == F_NONE)
			continue;
		if (c->a == s)
			c->cleaned |= BIT(0);
		if (c->b == s && (c->kind == F_LOOP || c->kind == F_SIDR_LOOP))
			c->cleaned |= BIT(1);
	}
}

/* ---- the cache's own consistency ------------------------------------------ */

static void f_audit_list(struct list_head *list, u8 state, u32 slave,
			 bool fifo, bool routed, u32 *count,
			 unsigned long *indexed)
{
	struct pvcm_entry *e;
	bool first = true;
	u32 prev = 0;

	lockdep_assert_held(&t_pv->lock);
	list_for_each_entry(e, list, link) {
		(*count)++;
		F_CHECK(e->state == state && e->key.slave == slave,
			"entry 0x%x of slave %u in state %u on a list of slave %u state %u",
			e->pv_cm_id, e->key.slave, e->state, slave, state);
		F_CHECK(xa_load(&t_pv->pv_ids, pvcm_index(t_pv, e->pv_cm_id)) == e,
			"entry 0x%x not at its index", e->pv_cm_id);
		F_CHECK(!!(e->flags & PVCM_F_ROUTED) == routed,
			"entry 0x%x of slave %u state %u, flags %#x, on a list %s the loop FIFO",
			e->pv_cm_id, slave, state, e->flags,
			routed ? "that is" : "other than");
		if (e->flags & PVCM_F_INDEXED) {
			(*indexed)++;
			F_CHECK(rhashtable_lookup_fast(&t_pv->sl_ids, &e->key,
						       pvcm_sl_params) == e,
				"indexed entry 0x%x not found by its key",
				e->pv_cm_id);
		}
		if (fifo && !first)
			F_CHECK((s32)(e->deadline - prev) >= 0,
				"FIFO of slave %u state %u out of order", slave,
				state);
		prev = e->deadline;
		first = false;
	}
}

/* every list, counter, index and FIFO order agrees */
static void f_audit(void)
{
	unsigned long indexed = 0, routes = 0, total = 0, in_xa = 0, idx;
	struct mlx4_ib_pvcm_slave *s;
	struct pvcm_route *r;
	struct pvcm_entry *x;
	u32 live, tw, nr, nl, prev, loop;
	unsigned int j;
	int i;

	f_stat_audits++;
	flush_work(&t_pv->clean_work);	/* no walk sets lists aside now */
	spin_lock(&t_pv->lock);
	for (i = 0; i < MLX4_MFUNC_MAX; i++) {
		s = &t_pv->slaves[i];
		live = 0;
		tw = 0;
		nr = 0;
		loop = 0;
		f_audit_list(&s->pending, PVCM_PENDING, i, true, false, &live,
			     &indexed);
		f_audit_list(&s->loop, PVCM_PENDING, i, true, true, &loop,
			     &indexed);
		f_audit_list(&s->established, PVCM_ESTABLISHED, i, false,
			     false, &live, &indexed);
		f_audit_list(&s->timewait, PVCM_TIMEWAIT, i, true, false, &tw,
			     &indexed);
		F_CHECK(loop == s->nr_loop, "slave %d loop FIFO holds %u, counter %u",
			i, loop, s->nr_loop);
		live += loop;
		for (j = 0; j < PVCM_ROUTE_LISTS; j++) {
			prev = 0;
			nl = 0;
			list_for_each_entry(r, &s->routes[j], link) {
				F_CHECK(r->payer == i,
					"route of payer %u on slave %d",
					r->payer, i);
				F_CHECK(pvcm_route_list(r) == j,
					"route of list %u on list %u",
					pvcm_route_list(r), j);
				F_CHECK(rhashtable_lookup_fast(&t_pv->routes,
							       &r->key,
							       pvcm_route_params) == r,
					"route of slave %d not found by its key",
					i);
				F_CHECK(!nl || (s32)(r->deadline - prev) >= 0,
					"routes of slave %d out of order", i);
				prev = r->deadline;
				nl++;
			}
			F_CHECK(nl == s->nr_routes[j],
				"slave %d route list %u holds %u, counter %u",
				i, j, nl, s->nr_routes[j]);
			nr += nl;
		}
		F_CHECK(live == s->nr_live && tw == s->nr_timewait,
			"slave %d lists %u/%u, counters %u/%u", i, live, tw,
			s->nr_live, s->nr_timewait);
		F_CHECK(s->allocated - s->freed == live + tw,
			"slave %d allocated %llu freed %llu holds %u", i,
			s->allocated, s->freed, live + tw);
		F_CHECK(s->nr_reset <= s->nr_timewait, "slave %d nr_reset %u",
			i, s->nr_reset);
		total += live + tw;
		routes += nr;
	}
	F_CHECK(atomic_read(&t_pv->sl_ids.nelems) == indexed,
		"sl_ids holds %d, %lu indexed", atomic_read(&t_pv->sl_ids.nelems),
		indexed);
	F_CHECK(atomic_read(&t_pv->routes.nelems) == routes,
		"routes holds %d, %lu listed", atomic_read(&t_pv->routes.nelems),
		routes);
	xa_for_each(&t_pv->pv_ids, idx, x)
		in_xa++;
	F_CHECK(in_xa == total, "pv_ids holds %lu, lists %lu", in_xa, total);
	spin_unlock(&t_pv->lock);
}

/* end the deadlines of @list now, but those of connections in flight */
static void f_expire_list(struct list_head *list, u32 now, bool all)
{
	struct pvcm_entry *e, *tmp;
	LIST_HEAD(due);

	list_for_each_entry_safe(e, tmp, list, link) {
		if (!all && f_protected_pv(e->pv_cm_id, true))
			continue;
		WRITE_ONCE(e->deadline, now);
		list_move_tail(&e->link, &due);
	}
	list_splice(&due, list);	/* due first: the FIFO stays ordered */
}

static void f_expire_routes(struct list_head *list, u32 now, bool all)
{
	struct pvcm_route *r, *tmp;
	LIST_HEAD(due);

	list_for_each_entry_safe(r, tmp, list, link) {
		if (!all && (f_tagged(r->key.comm_id) ||
			     f_protected_pv(r->key.comm_id, false)))
			continue;
		r->deadline = now;
		list_move_tail(&r->link, &due);
	}
	list_splice(&due, list);
}

/*
 * Nothing expires by itself during the run (a check after a call must
 * find what the call used); here idle entries, TimeWait and routes end,
 * but those of connections in flight, and the reaper runs once.
 */
static void f_reap(bool all)
{
	struct mlx4_ib_pvcm_slave *s;
	u32 now = jiffies;
	int i, j;

	flush_work(&t_pv->clean_work);
	spin_lock(&t_pv->lock);
	for (i = 0; i < MLX4_MFUNC_MAX; i++) {
		s = &t_pv->slaves[i];
		f_expire_list(&s->pending, now, all);
		f_expire_list(&s->loop, now, all);
		f_expire_list(&s->timewait, now, all);
		for (j = 0; j < PVCM_ROUTE_LISTS; j++)
			f_expire_routes(&s->routes[j], now, all);
	}
	pvcm_arm(t_pv, now);
	spin_unlock(&t_pv->lock);
	flush_delayed_work(&t_pv->reaper);
}

static struct mlx4_ib_pvcm_stats f_stats(int slave)
{
	struct mlx4_ib_pvcm_stats st;

	mlx4_ib_pvcm_get_stats(t_dev, slave, &st);
	return st;
}

/*
 * Clean every slave, end every TimeWait and route, then prove the cache
 * empty: per slave and for the device nothing live, in TimeWait or
 * routed, allocated == freed, no index holds anything, every object back.
 */
static void f_settle(void)
{
	unsigned long until = jiffies + 10 * HZ;
	struct mlx4_ib_pvcm_stats st;
	int i;

	for (i = 0; i < MLX4_MFUNC_MAX; i++)
		mlx4_ib_cm_paravirt_clean(t_dev, i);
	for (;;) {
		f_reap(true);
		st = f_stats(-1);
		if (!st.live && !st.timewait && !st.routes)
			break;
		if (time_after(jiffies, until))
			break;
		msleep(20);
	}
	rcu_barrier();
	for (i = 0; i < MLX4_MFUNC_MAX; i++) {
		st = f_stats(i);
		F_CHECK(!st.live && !st.timewait && !st.routes &&
			st.allocated == st.freed,
			"slave %d: live %llu timewait %llu routes %llu allocated %llu freed %llu",
			i, st.live, st.timewait, st.routes, st.allocated,
			st.freed);
	}
	st = f_stats(-1);
	F_CHECK(!st.live && !st.timewait && !st.routes &&
		st.allocated == st.freed,
		"device: live %llu timewait %llu routes %llu allocated %llu freed %llu",
		st.live, st.timewait, st.routes, st.allocated, st.freed);
	F_CHECK(xa_empty(&t_pv->pv_ids), "pv_ids not empty");
	F_CHECK(!atomic_read(&t_pv->sl_ids.nelems), "sl_ids not empty");
	F_CHECK(!atomic_read(&t_pv->routes.nelems), "routes not empty");
	F_CHECK(!atomic_long_read(&pvcm_objects), "%ld entries not freed",
		atomic_long_read(&pvcm_objects));
	ibst_diag("settled: %llu entries allocated and freed", st.freed);
}

/* ---- cases ------------------------------------------------------------------ */

/* the failed checks not printed count too */
static void f_case_end(void)
{
	if (f_failures > F_REPORT_MAX)
		IBST_FAIL("%lu more failed checks not shown",
			  f_failures - F_REPORT_MAX);
	f_failures = 0;
}

static void fuzz_keepers_open(void)
{
	int i;

	f_seed = seed ?: (get_random_u64() ?: 1);
	prandom_seed_state(&f_rnd, f_seed);
	ibst_diag("seed %llu, %lu iterations (repeat: seed=%llu iterations=%lu)",
		  f_seed, iterations, f_seed, iterations);
	for (i = 0; i < F_NR_GUIDS; i++)
		f_guids[i] = cpu_to_be64(0x0002c90300c00000ULL | f_below(1 << 20));
	for (i = 0; i < F_POOL; i++) {
		f_pool_wire[i] = f_u32();
		f_pool_pv[i] = pvcm_id_of(t_pv, 1 + i);
		f_pool_sl[i].slave = f_below(F_SLAVES);
		f_pool_sl[i].id = f_u32();
	}
	for (i = 0; i < MLX4_MFUNC_MAX; i++)
		f_base_dropped[i] = atomic_long_read(&t_pv->slaves[i].dropped);
	f_base_dev_dropped = atomic_long_read(&t_pv->dropped);
	f_base_bad_cleans = atomic_long_read(&t_pv->bad_cleans);
	f_keepers_open();
	f_case_end();
}

static void fuzz_mux_demux_clean(void)
{
	unsigned long start = jiffies, next_slot = 0;
	u32 r;

	for (f_iter = 0; f_iter < iterations; f_iter++) {
		r = f_below(1000);
		if (r < 120)
			f_slot_step(&f_slot[next_slot++ % F_SLOTS]);
		else if (r < 124)
			f_clean();
		else if (r < 125)
			f_keeper_check(&f_keep[f_below(F_NR_KEEPERS)]);
		else
			f_fuzz_one();
		if (f_iter % F_AUDIT_EVERY == F_AUDIT_EVERY - 1)
			f_audit();
		if (f_iter % F_REAP_EVERY == F_REAP_EVERY - 1)
			f_reap(false);
		cond_resched();
	}
	f_audit();
	ibst_diag("%lu iterations in %u ms: %lu mux, %lu demux, %lu passed",
		  iterations, jiffies_to_msecs(jiffies - start), f_stat_mux,
		  f_stat_dmx, f_stat_pass);
	ibst_diag("%lu steps of %lu connections, %lu cleans, %lu audits",
		  f_stat_steps, f_stat_seqs, f_stat_cleans, f_stat_audits);
	f_case_end();
}

static void fuzz_keepers_still_mapped(void)
{
	int i;

	for (i = 0; i < F_NR_KEEPERS; i++)
		f_keeper_check(&f_keep[i]);
	f_keepers_close();
	f_case_end();
}

/* each drop was counted once, for its slave or the device */
static void fuzz_drops_counted_once(void)
{
	unsigned long slaves = 0;
	long got;
	int i;

	flush_work(&t_pv->clean_work);
	for (i = 0; i < MLX4_MFUNC_MAX; i++) {
		got = atomic_long_read(&t_pv->slaves[i].dropped) -
		      f_base_dropped[i];
		F_CHECK(got == f_drops[i], "slave %d counted %ld drops, not %lu",
			i, got, f_drops[i]);
		slaves += f_drops[i];
	}
	got = atomic_long_read(&t_pv->dropped) - f_base_dev_dropped;
	F_CHECK(got == f_drops_dev, "device counted %ld drops, not %lu", got,
		f_drops_dev);
	got = atomic_long_read(&t_pv->bad_cleans) - f_base_bad_cleans;
	F_CHECK(got == f_bad_cleans, "%ld bad cleans counted, not %lu", got,
		f_bad_cleans);
	F_CHECK(slaves && f_drops_dev, "drops: slaves %lu, device %lu", slaves,
		f_drops_dev);
	ibst_diag("drops: %lu of slaves, %lu of the device, %lu bad cleans",
		  slaves, f_drops_dev, f_bad_cleans);
	f_case_end();
}

static void fuzz_cache_empty_after_timewait(void)
{
	memset(f_slot, 0, sizeof(f_slot));
	pvcm_test_timewait = HZ / 10;
	f_settle();
	f_case_end();
}

/* after all that, new connections of every kind still map */
static void fuzz_new_connections_map(void)
{
	struct f_slot *c = &f_slot[0];
	int kind, n;

	pvcm_test_timewait = F_LONG;
	for (kind = F_ACTIVE; kind < F_NR_KINDS; kind++) {
		f_slot_start(c, kind);
		for (n = 0; c->kind != F_NONE && n < 16; n++)
			f_slot_step(c);
		F_CHECK(c->kind == F_NONE, "connection of kind %d never ended",
			kind);
		c->kind = F_NONE;
	}
	pvcm_test_timewait = HZ / 10;
	f_settle();
	f_case_end();
}

static const struct ibst_case f_cases[] = {
	IBST_CASE(fuzz_keepers_open),
	IBST_CASE(fuzz_mux_demux_clean),
	IBST_CASE(fuzz_keepers_still_mapped),
	IBST_CASE(fuzz_drops_counted_once),
	IBST_CASE(fuzz_cache_empty_after_timewait),
	IBST_CASE(fuzz_new_connections_map),
	{}
};

static int f_setup(void)
{
	/* f_reap() ends them; a check after a call finds what it used */
	pvcm_test_timewait = F_LONG;
	pvcm_test_route_life = F_LONG;
	pvcm_test_pending = 10 * HZ;
	return pvcm_t_master_add("pvcm_fuzz0");
}

static void f_teardown(void)
{
	pvcm_t_master_del();
}

IBST_SUITE(mlx4_ib_pvcm_fuzz, f_cases, f_setup, f_teardown);
MODULE_DESCRIPTION("mlx4_ib PV-CM id cache mutation fuzzer");
MODULE_LICENSE("Dual BSD/GPL");
