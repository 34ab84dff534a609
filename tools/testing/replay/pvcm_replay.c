// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Replay of captured CM traffic through the mlx4_ib PV-CM id cache.
 *
 * capture.sh recorded, with the ib_cma trace events, the CM MADs that
 * rping, ucmatose and udaddy exchanged over rdma_rxe; gen-table.awk turned
 * the capture into replay_msgs[] at build time.  Every recorded connection
 * is played in three set-ups at once: its active end on a VF and its
 * passive end a remote node, the other way round, and both ends on VFs of
 * this device.  A MAD a VF sends goes through the multiplex handler, a MAD
 * for a VF through the demux handler, and a model of what each end knows
 * checks every rewrite.  Loading fails with -EINVAL when a check fails.
 * The cache is the cm.o of mlx4_ib.ko, linked in as built (run links a
 * mutant's cm.o instead); the test hooks that
 * CONFIG_MLX4_IB_PVCM_TEST_HOOKS builds into it set the timeouts.
 */
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/slab.h>

#include <rdma/ib_mad.h>
#include <rdma/ib_cm.h>
#include <rdma/ibta_vol1_c12.h>

#include "mlx4_ib.h"
/* the test hooks of the cm.o this module is linked with */
#include "pvcm_priv.h"

/* KTAP lines must start at the beginning of the message (not mlx4_ib.h's) */
#undef pr_fmt
#define pr_fmt(fmt) fmt

/**
 * struct replay_msg - one CM MAD of the capture
 * @attr: its CM attribute
 * @conn: its connection (or SIDR exchange), numbered in capture order
 * @end: its sender: 0 is the end that sent the first request, 1 the other
 * @local_id: the sender's comm id as ib_cm recorded it (unused in SIDR_REP)
 * @remote_id: the receiver's comm id as the sender knew it; the request id
 *	in a SIDR_REP
 * @reason: the REJ reason, 0 when the trace did not record it
 * @line: its line in the capture file
 */
struct replay_msg {
	__be16 attr;
	u8 conn;
	u8 end;
	u32 local_id;
	u32 remote_id;
	u16 reason;
	u16 line;
};

/* replay_msgs[], replay_conn_tool[], REPLAY_TRACE_NAME; made by the build */
#include "pvcm_replay_table.h"

#define R_NR_CONNS	ARRAY_SIZE(replay_conn_tool)
#define R_VFS		8	/* slaves 1..8 carry the traffic; 0 is the PF */
#define R_PORT		1
#define R_VF_GID	0x0002c90300b00000ULL	/* + slave: a VF's GID if id */
#define R_PEER_GID	0x0002c90300e00000ULL	/* + set-up: a remote node */
#define R_REPORTS	8	/* failure lines printed per KTAP point */
#define R_CM_CLASS_VERSION	2	/* IBTA vol 1, 12.6: CM class version */

/*
 * The test build's TimeWait, short but long enough that a stalled guest
 * (TCG on a busy host) does not end a connection's TimeWait before its
 * last MAD is replayed; and no idle expiry during the replay at all.
 */
#define R_TIMEWAIT	(4 * HZ)
#define R_PENDING	(600 * HZ)
#define R_DRAIN_SLACK	(30 * HZ)	/* wait this much beyond TimeWait */

enum r_role {
	R_REMOTE,	/* a node behind the wire: its ids are not mapped */
	R_VF,		/* a VF of this device: its ids go through the cache */
};

/*
 * How one set-up places the two ends of every connection.  The VF of an
 * end is 1 + (conn + shift) % R_VFS; the shifts make each end a different
 * VF in each set-up, so every comm id a VF uses is in use by another VF at
 * the same time.
 */
struct r_setup {
	const char *name;
	u8 role[2];
	u8 shift[2];
};

static const struct r_setup r_setups[] = {
	{ "replay_vf_active",	{ R_VF, R_REMOTE },	{ 0, 0 } },
	{ "replay_vf_passive",	{ R_REMOTE, R_VF },	{ 0, 3 } },
	{ "replay_vf_to_vf",	{ R_VF, R_VF },		{ 4, 5 } },
};

#define R_NR_SETUPS	ARRAY_SIZE(r_setups)

/* what the model knows of one end of one connection in one set-up */
struct r_end {
	int slave;	/* its VF, or -1 for a remote end */
	u32 sl_id;	/* a VF's own comm id, once it sent one */
	u32 pv_id;	/* its comm id on the wire once mapped, else 0 */
};

static struct mlx4_ib_dev *r_dev;
static struct r_end *r_ends;	/* [setup][conn][end] */
static unsigned int r_mapped;	/* ends the model saw mapped */
static unsigned int r_fails;	/* failures of the current KTAP point */
static unsigned int r_nr_mux, r_nr_demux;	/* handler calls made */

#define r_pv (&r_dev->sriov.pvcm)

static struct r_end *r_end_of(unsigned int s, unsigned int conn,
			      unsigned int end)
{
	return &r_ends[(s * R_NR_CONNS + conn) * 2 + end];
}

/* the mad.c functions cm.c calls: GID interface id -> slave */
int mlx4_ib_find_real_gid(struct ib_device *ibdev, u32 port, __be64 guid)
{
	u64 id = be64_to_cpu(guid);

	if (port != R_PORT || id <= R_VF_GID || id > R_VF_GID + R_VFS)
		return -1;
	return id - R_VF_GID;
}

/* and the partition check: one partition, every VF a member */
bool mlx4_ib_slave_has_pkey(struct mlx4_ib_dev *dev, int slave, u32 port,
			    u16 pkey_index)
{
	return pkey_index == 0;
}

/* count a failure; print the first few */
static __printf(2, 3) void r_fail(const struct replay_msg *m,
				  const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	if (r_fails++ >= R_REPORTS)
		return;
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	if (m)
		pr_info("    # %s:%u (connection %u, %s): %pV\n",
			REPLAY_TRACE_NAME, m->line, m->conn,
			replay_conn_tool[m->conn], &vaf);
	else
		pr_info("    # %pV\n", &vaf);
	va_end(args);
}

#define R_EXPECT_EQ(m, what, have, want)				\
	do {								\
		long long _h = (have), _w = (want);			\
		if (_h != _w)						\
			r_fail(m, "%s is %lld, expected %lld", what, _h, _w); \
	} while (0)

/* ---- CM MADs, fields as IBTA vol 1 chapter 12 places them -------------- */

static bool r_is_request(__be16 attr)
{
	return attr == CM_REQ_ATTR_ID || attr == CM_SIDR_REQ_ATTR_ID;
}

static void r_set_ids(struct ib_mad *mad, u32 local, u32 remote)
{
	void *msg = mad;

	switch (mad->mad_hdr.attr_id) {
	case CM_REQ_ATTR_ID:
		IBA_SET(CM_REQ_LOCAL_COMM_ID, (struct cm_req_msg *)msg, local);
		break;
	case CM_MRA_ATTR_ID:
		IBA_SET(CM_MRA_LOCAL_COMM_ID, (struct cm_mra_msg *)msg, local);
		IBA_SET(CM_MRA_REMOTE_COMM_ID, (struct cm_mra_msg *)msg, remote);
		break;
	case CM_REJ_ATTR_ID:
		IBA_SET(CM_REJ_LOCAL_COMM_ID, (struct cm_rej_msg *)msg, local);
		IBA_SET(CM_REJ_REMOTE_COMM_ID, (struct cm_rej_msg *)msg, remote);
		break;
	case CM_REP_ATTR_ID:
		IBA_SET(CM_REP_LOCAL_COMM_ID, (struct cm_rep_msg *)msg, local);
		IBA_SET(CM_REP_REMOTE_COMM_ID, (struct cm_rep_msg *)msg, remote);
		break;
	case CM_RTU_ATTR_ID:
		IBA_SET(CM_RTU_LOCAL_COMM_ID, (struct cm_rtu_msg *)msg, local);
		IBA_SET(CM_RTU_REMOTE_COMM_ID, (struct cm_rtu_msg *)msg, remote);
		break;
	case CM_DREQ_ATTR_ID:
		IBA_SET(CM_DREQ_LOCAL_COMM_ID, (struct cm_dreq_msg *)msg, local);
		IBA_SET(CM_DREQ_REMOTE_COMM_ID, (struct cm_dreq_msg *)msg,
			remote);
		break;
	case CM_DREP_ATTR_ID:
		IBA_SET(CM_DREP_LOCAL_COMM_ID, (struct cm_drep_msg *)msg, local);
		IBA_SET(CM_DREP_REMOTE_COMM_ID, (struct cm_drep_msg *)msg,
			remote);
		break;
	case CM_LAP_ATTR_ID:
		IBA_SET(CM_LAP_LOCAL_COMM_ID, (struct cm_lap_msg *)msg, local);
		IBA_SET(CM_LAP_REMOTE_COMM_ID, (struct cm_lap_msg *)msg, remote);
		break;
	case CM_APR_ATTR_ID:
		IBA_SET(CM_APR_LOCAL_COMM_ID, (struct cm_apr_msg *)msg, local);
		IBA_SET(CM_APR_REMOTE_COMM_ID, (struct cm_apr_msg *)msg, remote);
		break;
	case CM_SIDR_REQ_ATTR_ID:
		IBA_SET(CM_SIDR_REQ_REQUESTID, (struct cm_sidr_req_msg *)msg,
			local);
		break;
	case CM_SIDR_REP_ATTR_ID:
		/* the reply names the request only */
		IBA_SET(CM_SIDR_REP_REQUESTID, (struct cm_sidr_rep_msg *)msg,
			remote);
		break;
	}
}

/* the sender's id (0 in a SIDR_REP) and the receiver's (0 in requests) */
static void r_get_ids(const struct ib_mad *mad, u32 *local, u32 *remote)
{
	const void *msg = mad;

	*local = 0;
	*remote = 0;
	switch (mad->mad_hdr.attr_id) {
	case CM_REQ_ATTR_ID:
		*local = IBA_GET(CM_REQ_LOCAL_COMM_ID,
				 (const struct cm_req_msg *)msg);
		break;
	case CM_MRA_ATTR_ID:
		*local = IBA_GET(CM_MRA_LOCAL_COMM_ID,
				 (const struct cm_mra_msg *)msg);
		*remote = IBA_GET(CM_MRA_REMOTE_COMM_ID,
				  (const struct cm_mra_msg *)msg);
		break;
	case CM_REJ_ATTR_ID:
		*local = IBA_GET(CM_REJ_LOCAL_COMM_ID,
				 (const struct cm_rej_msg *)msg);
		*remote = IBA_GET(CM_REJ_REMOTE_COMM_ID,
				  (const struct cm_rej_msg *)msg);
		break;
	case CM_REP_ATTR_ID:
		*local = IBA_GET(CM_REP_LOCAL_COMM_ID,
				 (const struct cm_rep_msg *)msg);
		*remote = IBA_GET(CM_REP_REMOTE_COMM_ID,
				  (const struct cm_rep_msg *)msg);
		break;
	case CM_RTU_ATTR_ID:
		*local = IBA_GET(CM_RTU_LOCAL_COMM_ID,
				 (const struct cm_rtu_msg *)msg);
		*remote = IBA_GET(CM_RTU_REMOTE_COMM_ID,
				  (const struct cm_rtu_msg *)msg);
		break;
	case CM_DREQ_ATTR_ID:
		*local = IBA_GET(CM_DREQ_LOCAL_COMM_ID,
				 (const struct cm_dreq_msg *)msg);
		*remote = IBA_GET(CM_DREQ_REMOTE_COMM_ID,
				  (const struct cm_dreq_msg *)msg);
		break;
	case CM_DREP_ATTR_ID:
		*local = IBA_GET(CM_DREP_LOCAL_COMM_ID,
				 (const struct cm_drep_msg *)msg);
		*remote = IBA_GET(CM_DREP_REMOTE_COMM_ID,
				  (const struct cm_drep_msg *)msg);
		break;
	case CM_LAP_ATTR_ID:
		*local = IBA_GET(CM_LAP_LOCAL_COMM_ID,
				 (const struct cm_lap_msg *)msg);
		*remote = IBA_GET(CM_LAP_REMOTE_COMM_ID,
				  (const struct cm_lap_msg *)msg);
		break;
	case CM_APR_ATTR_ID:
		*local = IBA_GET(CM_APR_LOCAL_COMM_ID,
				 (const struct cm_apr_msg *)msg);
		*remote = IBA_GET(CM_APR_REMOTE_COMM_ID,
				  (const struct cm_apr_msg *)msg);
		break;
	case CM_SIDR_REQ_ATTR_ID:
		*local = IBA_GET(CM_SIDR_REQ_REQUESTID,
				 (const struct cm_sidr_req_msg *)msg);
		break;
	case CM_SIDR_REP_ATTR_ID:
		*remote = IBA_GET(CM_SIDR_REP_REQUESTID,
				  (const struct cm_sidr_rep_msg *)msg);
		break;
	}
}

/*
 * The MAD @m as its sender puts it on the wire (before the PF touches it):
 * @local and @remote are the ids as the sender knows them, @dst_gid the
 * interface id of the receiver's GID and @src_guid the sender's CA GUID
 * (both used by a REQ only).
 */
static void r_build(struct ib_mad *mad, const struct replay_msg *m, u32 local,
		    u32 remote, u64 dst_gid, u64 src_guid)
{
	struct cm_req_msg *req = (struct cm_req_msg *)mad;
	union ib_gid gid = {};

	memset(mad, 0, sizeof(*mad));
	mad->mad_hdr.base_version = IB_MGMT_BASE_VERSION;
	mad->mad_hdr.mgmt_class = IB_MGMT_CLASS_CM;
	mad->mad_hdr.class_version = R_CM_CLASS_VERSION;
	mad->mad_hdr.method = IB_MGMT_METHOD_SEND;
	mad->mad_hdr.attr_id = m->attr;
	mad->mad_hdr.tid = cpu_to_be64((u64)m->line << 32 | m->conn);
	r_set_ids(mad, local, remote);
	if (m->attr == CM_REJ_ATTR_ID)
		IBA_SET(CM_REJ_REASON, (struct cm_rej_msg *)mad, m->reason);
	if (m->attr == CM_REQ_ATTR_ID) {
		IBA_SET(CM_REQ_LOCAL_CA_GUID, req, src_guid);
		gid.global.subnet_prefix = cpu_to_be64(0xfe80000000000000ULL);
		gid.global.interface_id = cpu_to_be64(dst_gid);
		memcpy(IBA_GET_MEM_PTR(CM_REQ_PRIMARY_REMOTE_PORT_GID, req),
		       &gid, sizeof(gid));
	}
}

/* ---- the replay ---------------------------------------------------------- */

/* an end's id on the wire, as the other end knows it */
static u32 r_wire_id(const struct r_end *e, u32 traced)
{
	return e->slave < 0 ? traced : e->pv_id;
}

/* a pv id was handed out: it must be new */
static void r_note_pv(const struct replay_msg *m, struct r_end *from, u32 pv)
{
	unsigned int i;

	if (!pv)
		r_fail(m, "mapped to pv id 0");
	for (i = 0; i < R_NR_SETUPS * R_NR_CONNS * 2; i++)
		if (r_ends[i].pv_id == pv)
			r_fail(m, "pv id %u handed out twice (slaves %d and %d)",
			       pv, r_ends[i].slave, from->slave);
	from->pv_id = pv;
	r_mapped++;
}

/* the VF @from sends @m: the multiplexer must put a pv id on the wire */
static int r_send(const struct replay_msg *m, struct r_end *from,
		  struct r_end *to, struct ib_mad *mad)
{
	bool request = r_is_request(m->attr);
	struct ib_mad before;
	u32 local, remote;
	int ret;

	if (!request && !to->pv_id && to->slave >= 0 && m->remote_id) {
		r_fail(m, "the receiving VF has no pv id yet");
		return -EINVAL;
	}
	if (m->local_id)
		from->sl_id = m->local_id;
	r_build(mad, m, m->local_id, r_wire_id(to, m->remote_id),
		R_VF_GID + (to->slave < 0 ? 0 : to->slave), R_VF_GID);
	before = *mad;
	r_nr_mux++;
	ret = mlx4_ib_multiplex_cm_handler(&r_dev->ib_dev, R_PORT, from->slave,
					   mad);
	R_EXPECT_EQ(m, "multiplex status", ret, 0);
	if (ret)
		return ret;
	r_get_ids(mad, &local, &remote);
	R_EXPECT_EQ(m, "remote id after multiplex", remote,
		    r_wire_id(to, m->remote_id));

	if (m->attr == CM_SIDR_REP_ATTR_ID) {
		/* names the remote request only: nothing to map */
		if (memcmp(mad, &before, sizeof(before)))
			r_fail(m, "multiplex changed a SIDR_REP");
	} else if (from->pv_id) {
		R_EXPECT_EQ(m, "local id on the wire", local, from->pv_id);
	} else if (m->attr == CM_REJ_ATTR_ID &&
		   m->reason != IB_CM_REJ_TIMEOUT) {
		/* rejects a request the VF never answered: local id 0 */
		R_EXPECT_EQ(m, "local id of the VF's first REJ", local, 0);
	} else if (request || m->attr == CM_REP_ATTR_ID ||
		   m->attr == CM_MRA_ATTR_ID || m->attr == CM_REJ_ATTR_ID) {
		r_note_pv(m, from, local);
	} else {
		r_fail(m, "the VF sent attr 0x%x before any pv id was mapped",
		       be16_to_cpu(m->attr));
	}
	return 0;
}

/*
 * @mad, as it is on the wire, reaches the VF @to: the demultiplexer must
 * pick that VF and give it back its own id.
 */
static void r_recv(const struct replay_msg *m, struct r_end *to,
		   struct ib_mad *mad)
{
	bool request = r_is_request(m->attr);
	struct ib_mad before = *mad;
	u32 local, remote, wire_local;
	int slave, ret;

	/* a SIDR_REQ is routed by its GRH: the caller has picked the slave */
	slave = m->attr == CM_SIDR_REQ_ATTR_ID ? to->slave : -1;
	r_get_ids(mad, &wire_local, &remote);
	r_nr_demux++;
	ret = mlx4_ib_demux_cm_handler(&r_dev->ib_dev, R_PORT, &slave, 0, mad);
	R_EXPECT_EQ(m, "demux status", ret, 0);
	if (ret)
		return;
	R_EXPECT_EQ(m, "slave picked by demux", slave, to->slave);
	if (request) {
		if (memcmp(mad, &before, sizeof(before)))
			r_fail(m, "demux changed a request");
		return;
	}
	r_get_ids(mad, &local, &remote);
	R_EXPECT_EQ(m, "remote id the VF gets", remote, m->remote_id);
	R_EXPECT_EQ(m, "local id the VF gets", local, wire_local);
}

static void r_play(unsigned int s, const struct replay_msg *m)
{
	struct r_end *from = r_end_of(s, m->conn, m->end);
	struct r_end *to = r_end_of(s, m->conn, !m->end);
	struct ib_mad mad;

	if (from->slave >= 0) {
		if (r_send(m, from, to, &mad))
			return;
	} else {
		/* a remote node sends: it knows the VF by its pv id */
		if (!r_is_request(m->attr) && !to->pv_id) {
			r_fail(m, "a remote node answers a VF without pv id");
			return;
		}
		r_build(&mad, m, m->local_id, to->pv_id,
			R_VF_GID + to->slave, R_PEER_GID + s);
	}
	if (to->slave >= 0)
		r_recv(m, to, &mad);
}

static void r_place(void)
{
	unsigned int s, c, e;
	struct r_end *end;

	for (s = 0; s < R_NR_SETUPS; s++)
		for (c = 0; c < R_NR_CONNS; c++)
			for (e = 0; e < 2; e++) {
				end = r_end_of(s, c, e);
				end->slave = -1;
				if (r_setups[s].role[e] == R_VF)
					end->slave = 1 + (c + r_setups[s].shift[e]) %
						     R_VFS;
			}
}

/* ---- KTAP points ----------------------------------------------------------- */

static struct mlx4_ib_pvcm_stats r_stats(void)
{
	struct mlx4_ib_pvcm_stats st;

	mlx4_ib_pvcm_get_stats(r_dev, -1, &st);
	return st;
}

static void r_show_stats(const char *when)
{
	struct mlx4_ib_pvcm_stats st = r_stats();

	pr_info("# pvcm cache %s: live %llu timewait %llu allocated %llu freed %llu dropped %llu routes %llu\n",
		when, st.live, st.timewait, st.allocated, st.freed,
		st.dropped, st.routes);
}

/* the table must be a capture: requests open connections, ids are real */
static void r_check_table(void)
{
	bool opened[256] = {};
	const struct replay_msg *m;
	unsigned int i;

	if (!ARRAY_SIZE(replay_msgs) || !R_NR_CONNS)
		r_fail(NULL, "empty capture");
	for (i = 0; i < ARRAY_SIZE(replay_msgs); i++) {
		m = &replay_msgs[i];
		if (m->conn >= R_NR_CONNS || m->end > 1) {
			r_fail(m, "entry %u: no such connection end", i);
			continue;
		}
		if (be16_to_cpu(m->attr) < 0x10 || be16_to_cpu(m->attr) > 0x1a)
			r_fail(m, "entry %u: attr 0x%x is no CM message", i,
			       be16_to_cpu(m->attr));
		if (!opened[m->conn] &&
		    (!r_is_request(m->attr) || m->end != 0))
			r_fail(m, "entry %u: connection starts without request",
			       i);
		if (r_is_request(m->attr) && (!m->local_id || m->remote_id))
			r_fail(m, "entry %u: request with bad ids", i);
		opened[m->conn] = true;
	}
	pr_info("# %s: %zu MADs of %zu connections\n", REPLAY_TRACE_NAME,
		ARRAY_SIZE(replay_msgs), R_NR_CONNS);
}

/* interleave the set-ups: message by message, every set-up plays it */
static void r_replay(unsigned int *fails)
{
	unsigned int i, s, before;

	for (i = 0; i < ARRAY_SIZE(replay_msgs); i++) {
		if (replay_msgs[i].conn >= R_NR_CONNS || replay_msgs[i].end > 1)
			continue;
		for (s = 0; s < R_NR_SETUPS; s++) {
			before = r_fails;
			r_fails = fails[s];
			r_play(s, &replay_msgs[i]);
			fails[s] = r_fails;
			r_fails = before;
		}
	}
}

/* an id two VFs use at once must have two pv ids */
static void r_check_shared_ids(void)
{
	unsigned int i, j, n = R_NR_SETUPS * R_NR_CONNS * 2, pairs = 0;
	struct r_end *a, *b;

	for (i = 0; i < n; i++) {
		a = &r_ends[i];
		if (a->slave < 0 || !a->pv_id)
			continue;
		for (j = i + 1; j < n; j++) {
			b = &r_ends[j];
			if (b->slave < 0 || !b->pv_id || b->sl_id != a->sl_id)
				continue;
			pairs++;
			if (a->slave == b->slave)
				r_fail(NULL, "id %u twice on slave %d", a->sl_id,
				       a->slave);
			if (a->pv_id == b->pv_id)
				r_fail(NULL, "id %u of slaves %d and %d: both pv id %u",
				       a->sl_id, a->slave, b->slave, a->pv_id);
		}
	}
	pr_info("# %u comm ids in use by two VFs at once, %u ends mapped\n",
		pairs, r_mapped);
	if (!pairs)
		r_fail(NULL, "no comm id was shared: the check proves nothing");
}

/* every connection of the capture ends: its ids wait in TimeWait */
static void r_check_released(void)
{
	struct mlx4_ib_pvcm_stats st;
	unsigned int i, want;
	int slave;

	/* each VF is charged for its own ends only */
	for (slave = 0; slave <= R_VFS; slave++) {
		want = 0;
		for (i = 0; i < R_NR_SETUPS * R_NR_CONNS * 2; i++)
			if (r_ends[i].slave == slave && r_ends[i].pv_id)
				want++;
		mlx4_ib_pvcm_get_stats(r_dev, slave, &st);
		R_EXPECT_EQ(NULL, "entries allocated for a slave",
			    st.allocated, want);
		R_EXPECT_EQ(NULL, "entries in TimeWait for a slave",
			    st.timewait, want);
	}
	st = r_stats();
	r_show_stats("after the replay");
	R_EXPECT_EQ(NULL, "live entries", st.live, 0);
	R_EXPECT_EQ(NULL, "entries in TimeWait", st.timewait, r_mapped);
	R_EXPECT_EQ(NULL, "entries allocated", st.allocated, r_mapped);
	R_EXPECT_EQ(NULL, "MADs dropped", st.dropped, 0);
}

/* after TimeWait nothing is left */
static void r_check_drained(void)
{
	unsigned long until = jiffies + R_TIMEWAIT + R_DRAIN_SLACK;
	struct mlx4_ib_pvcm_stats st;

	for (;;) {
		st = r_stats();
		if (!st.live && !st.timewait && !st.routes)
			break;
		if (time_after(jiffies, until)) {
			r_fail(NULL, "TimeWait did not end");
			break;
		}
		msleep(50);
	}
	rcu_barrier();
	st = r_stats();
	r_show_stats("after TimeWait");
	R_EXPECT_EQ(NULL, "allocated - freed", st.allocated - st.freed, 0);
	R_EXPECT_EQ(NULL, "entries allocated", st.allocated, r_mapped);
	R_EXPECT_EQ(NULL, "pv ids indexed", !xa_empty(&r_pv->pv_ids), 0);
	R_EXPECT_EQ(NULL, "(slave, id) keys indexed",
		    atomic_read(&r_pv->sl_ids.nelems), 0);
	R_EXPECT_EQ(NULL, "REQ routes", atomic_read(&r_pv->routes.nelems), 0);
	R_EXPECT_EQ(NULL, "entry objects", atomic_long_read(&pvcm_objects), 0);
}

/* ids of ended connections are unknown now: their MADs are dropped */
static void r_check_stale(void)
{
	const struct replay_msg *m = NULL, *c;
	struct replay_msg dreq;
	struct r_end *vf = NULL, *e;
	long long dropped = r_stats().dropped;
	struct ib_mad mad;
	unsigned int i;
	int slave = -1;

	/* the last message to a mapped VF of the VF-to-VF set-up */
	for (i = 0; i < ARRAY_SIZE(replay_msgs); i++) {
		c = &replay_msgs[i];
		if (c->conn >= R_NR_CONNS || c->end > 1 ||
		    r_is_request(c->attr) || c->attr == CM_SIDR_REP_ATTR_ID)
			continue;
		e = r_end_of(R_NR_SETUPS - 1, c->conn, !c->end);
		if (e->pv_id && e->sl_id == c->remote_id) {
			m = c;
			vf = e;
		}
	}
	if (!m) {
		r_fail(NULL, "the capture has no message to a mapped VF");
		return;
	}
	/* the peer repeats it */
	r_build(&mad, m, m->local_id, vf->pv_id, 0, 0);
	R_EXPECT_EQ(m, "demux of an ended connection",
		    mlx4_ib_demux_cm_handler(&r_dev->ib_dev, R_PORT, &slave,
					     0, &mad), -ENOENT);
	/* the VF disconnects again */
	dreq = *m;
	dreq.attr = CM_DREQ_ATTR_ID;
	r_build(&mad, &dreq, vf->sl_id, m->local_id, 0, 0);
	R_EXPECT_EQ(m, "multiplex of an ended connection",
		    mlx4_ib_multiplex_cm_handler(&r_dev->ib_dev, R_PORT,
						 vf->slave, &mad), -ENOENT);
	R_EXPECT_EQ(NULL, "MADs dropped", r_stats().dropped - dropped, 2);
	r_show_stats("at the end");
}

/* ---- set up, run, tear down ---------------------------------------------- */

/* the master device the cache belongs to: just what cm.c looks at */
struct r_fake_dev {
	struct mlx4_ib_dev ibdev;
	struct mlx4_dev mdev;
};

static int r_setup_dev(void)
{
	struct r_fake_dev *fake;
	size_t nr_ends = R_NR_SETUPS * R_NR_CONNS * 2;

#ifdef HAVE_KMALLOC_OBJ
	fake = kzalloc_obj(*fake);
#else
	fake = kzalloc(sizeof(*fake), GFP_KERNEL);
#endif
	r_ends = kcalloc(nr_ends, sizeof(*r_ends), GFP_KERNEL);
	if (fake && r_ends && !mlx4_ib_cm_init()) {
		fake->mdev.flags = MLX4_FLAG_MASTER;
		fake->ibdev.dev = &fake->mdev;
		fake->ibdev.ib_dev.dev.init_name = "pvcm_replay0";
		r_dev = &fake->ibdev;
		mlx4_ib_cm_paravirt_init(r_dev);
		if (READ_ONCE(r_pv->ready))
			return 0;
		mlx4_ib_cm_destroy();
	}
	r_dev = NULL;
	kfree(r_ends);
	kfree(fake);
	return -ENOMEM;
}

static void r_teardown(void)
{
	mlx4_ib_cm_paravirt_destroy(r_dev);
	mlx4_ib_cm_destroy();
	kfree(container_of(r_dev, struct r_fake_dev, ibdev));
	kfree(r_ends);
}

static unsigned int r_point;
static unsigned int r_failed;

static void r_report(const char *name)
{
	r_point++;
	if (r_fails > R_REPORTS)
		pr_info("    # ... %u failures in all\n", r_fails);
	pr_info("%sok %u %s\n", r_fails ? "not " : "", r_point, name);
	if (r_fails)
		r_failed++;
	r_fails = 0;
}

static int __init pvcm_replay_init(void)
{
	unsigned int fails[R_NR_SETUPS] = {};
	unsigned int s;

	if (r_setup_dev())
		return -ENOMEM;
	pvcm_test_timewait = R_TIMEWAIT;
	pvcm_test_route_life = R_TIMEWAIT;
	pvcm_test_pending = R_PENDING;
	r_place();

	pr_info("KTAP version 1\n");
	pr_info("1..%zu\n", R_NR_SETUPS + 5);
	r_check_table();
	r_report("capture_table_sane");

	r_replay(fails);
	pr_info("# %u MADs through the multiplexer, %u through the demultiplexer\n",
		r_nr_mux, r_nr_demux);
	for (s = 0; s < R_NR_SETUPS; s++) {
		r_fails = fails[s];
		r_report(r_setups[s].name);
	}
	r_check_shared_ids();
	r_report("shared_sl_ids_get_distinct_pv_ids");
	r_check_released();
	r_report("every_connection_released_to_timewait");
	r_check_drained();
	r_report("timewait_ends_cache_empty");
	r_check_stale();
	r_report("ended_ids_dropped");

	r_teardown();
	pr_info("# pvcm replay: %u of %u points failed\n", r_failed, r_point);
	return r_failed ? -EINVAL : 0;
}

static void __exit pvcm_replay_exit(void)
{
}

module_init(pvcm_replay_init);
module_exit(pvcm_replay_exit);
MODULE_DESCRIPTION("mlx4_ib PV-CM id cache: replay of captured CM traffic");
MODULE_LICENSE("Dual BSD/GPL");
