// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Emulated ConnectX-3 SR-IOV master for the mlx4_ib PV-CM id cache.
 *
 * A host that forwards IPv4 between "VF" interfaces and a "wire" interface
 * plays the master (PF) of an SR-IOV device: every RoCEv2 GSI packet that
 * carries a CM MAD and is forwarded from a VF interface goes through
 * mlx4_ib_multiplex_cm_handler() as that VF's slave, every one forwarded to
 * a VF interface through the demultiplexer, a VF-to-VF one through both.
 * The cache is the object file cm.o that the build compiles for
 * mlx4_ib.ko from drivers/infiniband/hw/mlx4/cm.c, linked into this
 * module unchanged: the production code, its timeouts and module
 * parameters included (the test hooks that
 * CONFIG_MLX4_IB_PVCM_TEST_HOOKS builds into it stay unset).  Its
 * debugfs directory and slab cache are named after this module.  The
 * demultiplexer is called as mad.c calls it:
 *
 *   mode=roce  the slave is the one the destination address is routed to
 *              (mad.c: the slave of the GRH's destination GID; here the IP
 *              header is the GRH) and mlx4_ib_demux_cm_handler_to_slave()
 *              is given that slave;
 *   mode=ib    mlx4_ib_demux_cm_handler() picks the slave (a REQ by its
 *              destination GID through mlx4_ib_find_real_gid(), the rest by
 *              pv_cm_id); a MAD for another slave than the one its packet
 *              is routed to is dropped.
 *
 * The handlers may sleep, and so does mad.c's caller: the netfilter hook
 * (softirq) only steals the packet and queues it for an ordered work
 * item, which checks the ICRC, runs the handlers, rewrites the MAD,
 * recomputes the ICRC and sends the packet on with dst_output(), as the
 * forwarding code would have.  A MAD the cache refuses is dropped.  What
 * differs from a real PF is only the way in and out: there, the tunnel
 * QPs of mad.c; here, IPv4 forwarding.
 */
#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#ifdef HAVE_LINUX_UNALIGNED_H
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif
#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/netdevice.h>
#include <linux/netfilter.h>
#include <linux/netfilter_ipv4.h>
#include <linux/udp.h>
#include <net/checksum.h>
#include <net/dst.h>
#include <net/ip.h>
#include <net/net_namespace.h>
#include <net/route.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_pack.h>
#include <rdma/ib_verbs.h>

#include "mlx4_ib.h"

/* mlx4_ib.h sets mlx4_ib's prefix */
#undef pr_fmt
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#define PF_PORT		1	/* the IB port of the emulated device */
#define PF_MAX_VFS	16	/* slaves 1..PF_MAX_VFS; slave 0 is the PF */
#define PF_WIRE		PF_MAX_VFS	/* index of the wire in pf_ifindex[] */
#define PF_QUEUE_MAX	1024	/* packets of one source waiting for the work */
#define PF_ICRC_LEN	4
#define PF_MAD_LEN	sizeof(struct ib_mad)
/* UDP payload of a GSI MAD: BTH, DETH, the MAD, the ICRC */
#define PF_GSI_LEN	(IB_BTH_BYTES + IB_DETH_BYTES + PF_MAD_LEN + PF_ICRC_LEN)
#define PF_BTH_RESV8A	4	/* BTH byte masked in the ICRC */
#define PF_BTH_PAD(b)	(((b)[1] >> 4) & 3)	/* BTH PadCnt */
#define PF_BTH_QPN(b)	get_unaligned_be24((b) + 5)
#define PF_GSI_QPN	1

static char *vf_ifaces = "";
module_param(vf_ifaces, charp, 0444);
MODULE_PARM_DESC(vf_ifaces,
		 "interfaces facing the VFs, comma separated, in slave order from slave 1");

static char *wire_iface = "";
module_param(wire_iface, charp, 0444);
MODULE_PARM_DESC(wire_iface,
		 "the wire interface; empty: every interface that is not a VF's");

static char *mode = "roce";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode,
		 "roce: the demultiplexer is told the slave the packet is routed to; ib: it picks the slave (default roce)");

static int netns_pid;
module_param(netns_pid, int, 0444);
MODULE_PARM_DESC(netns_pid,
		 "forward in the network namespace of this process (default 0: the initial one)");

static bool rewrite = true;
module_param(rewrite, bool, 0444);
MODULE_PARM_DESC(rewrite,
		 "put the rewritten MAD into the packet (default Y; N breaks every VF connection)");

static bool fix_icrc = true;
module_param(fix_icrc, bool, 0444);
MODULE_PARM_DESC(fix_icrc,
		 "recompute the ICRC of a rewritten packet (default Y; N breaks every VF connection)");

enum pf_counter {
	PF_SEEN,		/* packets the hook saw */
	PF_GSI,			/* RoCEv2 GSI packets from or to a VF */
	PF_GSI_NOT_CM,		/* of those, not the CM class: passed */
	PF_CM_VF_TO_WIRE,	/* CM MADs multiplexed only */
	PF_CM_WIRE_TO_VF,	/* CM MADs demultiplexed only */
	PF_CM_VF_TO_VF,		/* CM MADs through both */
	PF_REWRITTEN,		/* packets whose MAD changed */
	PF_DROP_MALFORMED,	/* GSI packets that are not one UD MAD */
	PF_DROP_FRAGMENT,	/* UDP fragments from or to a VF */
	PF_DROP_BAD_ICRC,
	PF_DROP_MUX,		/* the multiplexer refused the MAD */
	PF_DROP_DEMUX,		/* the demultiplexer refused the MAD */
	PF_DROP_MISROUTED,	/* ib: the handler's slave is not the route's */
	PF_DROP_OFF_PATH,	/* between a VF and neither the wire nor a VF */
	PF_DROP_QUEUE,		/* the source's queue was full */
	PF_DROP_NOMEM,
	PF_DROP_STALE,		/* a VF's MAD queued before its interface went */
	PF_STOLEN,		/* packets queued for the work item */
	PF_SENT,		/* ... of those, sent on */
	PF_FREED,		/* ... of those, dropped by the work item */
	PF_AUDITED,		/* MADs of a VF that left on the wire */
	PF_AUDIT_OWN_ID,	/* ... carrying the VF's own local comm id */
	PF_AUDIT_NO_ID,		/* ... carrying local comm id 0 */
	PF_AUDIT_UNKNOWN,	/* ... carrying an id the cache does not hold */
	PF_AUDIT_WRONG,		/* ... one the cache holds for another VF id */
	PF_VF_CLEANS,		/* VF interface went down: slave cleaned */
	PF_NR_COUNTERS
};

static const char * const pf_counter_names[PF_NR_COUNTERS] = {
	[PF_SEEN] = "seen",
	[PF_GSI] = "gsi",
	[PF_GSI_NOT_CM] = "gsi_not_cm",
	[PF_CM_VF_TO_WIRE] = "cm_vf_to_wire",
	[PF_CM_WIRE_TO_VF] = "cm_wire_to_vf",
	[PF_CM_VF_TO_VF] = "cm_vf_to_vf",
	[PF_REWRITTEN] = "rewritten",
	[PF_DROP_MALFORMED] = "drop_malformed",
	[PF_DROP_FRAGMENT] = "drop_fragment",
	[PF_DROP_BAD_ICRC] = "drop_bad_icrc",
	[PF_DROP_MUX] = "drop_mux",
	[PF_DROP_DEMUX] = "drop_demux",
	[PF_DROP_MISROUTED] = "drop_misrouted",
	[PF_DROP_OFF_PATH] = "drop_off_path",
	[PF_DROP_QUEUE] = "drop_queue",
	[PF_DROP_NOMEM] = "drop_nomem",
	[PF_DROP_STALE] = "drop_stale",
	[PF_STOLEN] = "stolen",
	[PF_SENT] = "sent",
	[PF_FREED] = "freed",
	[PF_AUDITED] = "audited",
	[PF_AUDIT_OWN_ID] = "audit_own_id",
	[PF_AUDIT_NO_ID] = "audit_no_id",
	[PF_AUDIT_UNKNOWN] = "audit_unknown",
	[PF_AUDIT_WRONG] = "audit_wrong",
	[PF_VF_CLEANS] = "vf_cleans",
};

static atomic_long_t pf_counters[PF_NR_COUNTERS];
/*
 * Per VF, of its MADs the multiplexer refused: late DREPs, for an id the
 * cache no longer holds and whose DREQ passed the cache, either way, at
 * least the cache's TimeWait before.  That DREQ released the id, which
 * the cache then holds for TimeWait and frees: the refusal is the
 * design's, not one of a connection the cache should still hold.  Over
 * rdma_cm a DREP goes out when the application answers the DISCONNECTED
 * event (rdma_disconnect()) or destroys the id, which may be that late
 * (seen: 41 of ucmatose's, through a PF on a debug kernel).
 */
static atomic_long_t pf_late_drep[PF_MAX_VFS];

static void pf_count(enum pf_counter c)
{
	atomic_long_inc(&pf_counters[c]);
}

/* one packet stolen from the forwarding path */
struct pf_pkt {
	struct list_head link;
	struct sk_buff *skb;
	struct net_device *in;	/* held: the output path still uses it */
	netdevice_tracker in_tracker;
	int from;		/* sending slave, or -1 for the wire */
	int to;			/* receiving slave, or -1 for the wire */
	int gen;		/* from's clean count when it was queued */
};

/* the master device the cache belongs to: what cm.c looks at */
struct pf_fake_dev {
	struct mlx4_ib_dev ibdev;
	struct mlx4_dev mdev;
};

static struct mlx4_ib_dev *pf_dev;
static struct net *pf_net;
static bool pf_ib_mode;
static unsigned int pf_nr_vfs;
static char pf_names[PF_MAX_VFS + 1][IFNAMSIZ];
static int pf_ifindex[PF_MAX_VFS + 1];	/* 0: not present */
static bool pf_cleaned[PF_MAX_VFS];	/* under RTNL */
/*
 * A VF's clean against the MADs it sent: pf_clean_lock orders each clean
 * (pf_clean_gen[] bumped, the cache told) against each stolen packet's
 * check, mapping and audit, so that no MAD of the VF's old instance is
 * mapped after the clean.  pf_clean_gen[] is written under it; the hook
 * reads it without, to stamp a packet (either count is right for a
 * packet that raced the clean).
 */
static DEFINE_MUTEX(pf_clean_lock);
static int pf_clean_gen[PF_MAX_VFS];	/* cleans asked per slave */
static bool pf_stopping;		/* under RTNL */
static struct workqueue_struct *pf_wq;
static struct dentry *pf_debugfs;

static LIST_HEAD(pf_queue);
/* per source (slave - 1, or PF_WIRE): so that no VF fills it for all */
static unsigned int pf_queue_len[PF_MAX_VFS + 1];
static DEFINE_SPINLOCK(pf_queue_lock);	/* pf_queue, pf_queue_len[] */

/*
 * When the first DREQ of each VF connection passed the cache, either
 * way.  Index: pf_conn_index(); value: the u32 jiffies of that DREQ.  A
 * REQ or REP of the VF with the id (a new connection) forgets it.  Used
 * by pf_handle() only, under pf_clean_lock.  One entry per VF id that
 * was disconnected: a few thousand at most in a test run.
 */
static DEFINE_XARRAY(pf_dreqs);
#define PF_TIMEWAIT	(30 * HZ)	/* cm.c's CM_CLEANUP_CACHE_TIMEOUT */
static_assert(BITS_PER_LONG == 64, "pf_conn_index() needs 64 bits");

static unsigned long pf_conn_index(int slave, u32 vf_id)
{
	return (unsigned long)(slave - 1) << 32 | vf_id;
}

/* a CM MAD of VF @slave with its id @vf_id passed the cache */
static void pf_note_conn(int slave, u32 vf_id, __be16 attr)
{
	unsigned long i = pf_conn_index(slave, vf_id);

	lockdep_assert_held(&pf_clean_lock);
	if (attr == CM_REQ_ATTR_ID || attr == CM_REP_ATTR_ID) {
		xa_erase(&pf_dreqs, i);
	} else if (attr == CM_DREQ_ATTR_ID) {
		/*
		 * The first one's time stays (-EBUSY for the others).  Without
		 * memory the id's late DREP counts as a drop: a check fails
		 * rather than passes.
		 */
		if (xa_insert(&pf_dreqs, i, xa_mk_value((u32)jiffies),
			      GFP_KERNEL) == -ENOMEM)
			pr_warn_ratelimited("no memory to note a DREQ\n");
	}
}

/* a DREQ of VF @slave's connection @vf_id passed TimeWait ago or more */
static bool pf_dreq_timewait_ago(int slave, u32 vf_id)
{
	void *v;

	lockdep_assert_held(&pf_clean_lock);
	v = xa_load(&pf_dreqs, pf_conn_index(slave, vf_id));
	return xa_is_value(v) &&
	       (u32)jiffies - (u32)xa_to_value(v) >= PF_TIMEWAIT;
}

/* the slave of a VF interface, -1 for any other */
static int pf_slave_of(const struct net_device *dev)
{
	unsigned int i;

	if (!dev)
		return -1;
	for (i = 0; i < pf_nr_vfs; i++)
		if (READ_ONCE(pf_ifindex[i]) == dev->ifindex)
			return i + 1;
	return -1;
}

static bool pf_is_wire(const struct net_device *dev)
{
	if (!pf_names[PF_WIRE][0])
		return pf_slave_of(dev) < 0;
	return dev && READ_ONCE(pf_ifindex[PF_WIRE]) == dev->ifindex;
}

/*
 * mad.c's partition check: rdma_rxe has the default partition only, at
 * P_Key index 0, and every VF is a member of it.
 */
bool mlx4_ib_slave_has_pkey(struct mlx4_ib_dev *dev, int slave, u32 port,
			    u16 pkey_index)
{
	return pkey_index == 0;
}

/*
 * The other mad.c function cm.c calls: the slave that owns a GID of the
 * port.  A VF's RoCEv2 GID over IPv4 is ::ffff:a.b.c.d, its interface id
 * 0000:ffff:aabb:ccdd; the slave is the VF whose interface the address
 * is routed to.
 */
int mlx4_ib_find_real_gid(struct ib_device *ibdev, u32 port, __be64 guid)
{
	u64 id = be64_to_cpu(guid);
	struct flowi4 fl4 = {};
	struct rtable *rt;
	int slave;

	if (port != PF_PORT || id >> 32 != 0xffff)
		return -1;
	fl4.daddr = cpu_to_be32(lower_32_bits(id));
	rt = ip_route_output_key(pf_net, &fl4);
	if (IS_ERR(rt))
		return -1;
	slave = pf_slave_of(rt->dst.dev);
	ip_rt_put(rt);
	return slave;
}

/*
 * The ICRC of a RoCEv2 packet over IPv4 (IBTA vol 1, annex A17.3.3): the
 * CRC-32 of Ethernet, started with eight bytes of ones (the masked LRH
 * of the IB ICRC), over the IP header, the UDP header and the BTH with
 * their variant fields set to ones (IP: type of service, TTL, header
 * checksum; UDP: checksum; BTH: the reserved byte after the P_Key), then
 * the rest of the packet up to the ICRC.  It goes on the wire least
 * significant byte first.  @bth points at the BTH of a packet whose IP
 * header has no options; @len counts the bytes from the BTH up to the
 * ICRC.
 */
static u32 pf_icrc(const struct iphdr *iph, const struct udphdr *uh,
		   const u8 *bth, unsigned int len)
{
	static const u8 lrh[8] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
	};
	struct iphdr ip = *iph;
	struct udphdr udp = *uh;
	u8 hdr[IB_BTH_BYTES];
	u32 crc;

	ip.tos = 0xff;
	ip.ttl = 0xff;
	ip.check = (__force __sum16)0xffff;
	udp.check = (__force __sum16)0xffff;
	memcpy(hdr, bth, sizeof(hdr));
	hdr[PF_BTH_RESV8A] = 0xff;

	crc = crc32_le(~0, lrh, sizeof(lrh));
	crc = crc32_le(crc, (u8 *)&ip, sizeof(ip));
	crc = crc32_le(crc, (u8 *)&udp, sizeof(udp));
	crc = crc32_le(crc, hdr, sizeof(hdr));
	crc = crc32_le(crc, bth + IB_BTH_BYTES, len - IB_BTH_BYTES);
	return ~crc;
}

/*
 * Keep the UDP checksum right after the payload changed.  rdma_rxe sends
 * 0 (no checksum), which stays; a partial checksum is finished by the
 * output path from the new payload.
 */
static void pf_fix_udp_csum(struct sk_buff *skb, struct iphdr *iph,
			    struct udphdr *uh)
{
	unsigned int len = ntohs(uh->len);

	if (skb->ip_summed == CHECKSUM_PARTIAL || !uh->check)
		return;
	uh->check = 0;
	uh->check = csum_tcpudp_magic(iph->saddr, iph->daddr, len, IPPROTO_UDP,
				      csum_partial(uh, len, 0));
	if (!uh->check)
		uh->check = CSUM_MANGLED_0;
	skb->ip_summed = CHECKSUM_NONE;
}

/* the sender's comm id of a CM MAD (IBTA vol 1, 12.6); a SIDR_REP has none */
static bool pf_local_id(const struct ib_mad *mad, u32 *id)
{
	if (mad->mad_hdr.attr_id == CM_SIDR_REP_ATTR_ID)
		return false;
	*id = get_unaligned_be32(mad->data);
	return true;
}

/*
 * A VF's MAD as it leaves on the wire must carry a pv_cm_id that the
 * cache holds for this VF's own local comm id, never the VF's id itself;
 * or 0, in a VF's REJ of a REQ it holds no mapping for (mlx4-pvcm.rst).
 * Id 0 names no connection, so it is counted apart, whatever the VF sent.
 * The entry cannot be gone yet: a released one stays in TimeWait, and no
 * clean of the VF runs between the mapping and the audit (pf_clean_lock).
 * Only an entry whose TimeWait ends in that window could be reaped, 30 s
 * after its last use.
 */
static void pf_audit(int from, const struct ib_mad *own,
		     const struct ib_mad *wire)
{
	u32 own_id, id, sl_cm_id;
	int slave, ret;

	lockdep_assert_held(&pf_clean_lock);
	if (!pf_local_id(own, &own_id) || !pf_local_id(wire, &id))
		return;
	ret = id && id != own_id ?
		mlx4_ib_pvcm_lookup(pf_dev, id, &slave, &sl_cm_id) : 0;
	pf_count(PF_AUDITED);
	if (!id)
		pf_count(PF_AUDIT_NO_ID);
	else if (id == own_id)
		pf_count(PF_AUDIT_OWN_ID);
	else if (ret)
		pf_count(PF_AUDIT_UNKNOWN);
	else if (slave != from || sl_cm_id != own_id)
		pf_count(PF_AUDIT_WRONG);
}

/* run the CM MAD of @p through the cache; false: drop the packet */
static bool pf_handle(struct pf_pkt *p, struct ib_mad *mad)
{
	struct ib_device *ibdev = &pf_dev->ib_dev;
	int slave, ret;
	__be16 attr;
	u32 vf_id;

	lockdep_assert_held(&pf_clean_lock);
	/*
	 * A VF's MAD from before its interface went down belongs to the
	 * instance the clean was for; the real master loses it with the
	 * VF's tunnel QP.
	 */
	if (p->from > 0 && pf_clean_gen[p->from - 1] != p->gen) {
		pf_count(PF_DROP_STALE);
		return false;
	}
	if (p->from > 0 && p->to > 0)
		pf_count(PF_CM_VF_TO_VF);
	else if (p->from > 0)
		pf_count(PF_CM_VF_TO_WIRE);
	else
		pf_count(PF_CM_WIRE_TO_VF);

	attr = mad->mad_hdr.attr_id;
	if (p->from > 0) {
		/* the VF's own id, before the cache puts its pv_cm_id there */
		vf_id = get_unaligned_be32(mad->data);
		ret = mlx4_ib_multiplex_cm_handler(ibdev, PF_PORT, p->from, mad);
		if (ret) {
			pf_count(PF_DROP_MUX);
			if (ret == -ENOENT && attr == CM_DREP_ATTR_ID &&
			    pf_dreq_timewait_ago(p->from, vf_id))
				atomic_long_inc(&pf_late_drep[p->from - 1]);
			return false;
		}
		pf_note_conn(p->from, vf_id, attr);
	}
	if (p->to < 0)
		return true;
	if (!pf_ib_mode) {
		ret = mlx4_ib_demux_cm_handler_to_slave(ibdev, PF_PORT, p->to,
							0, mad);
	} else {
		/* mad.c's GRH guess, used for a SIDR_REQ */
		slave = p->to;
		ret = mlx4_ib_demux_cm_handler(ibdev, PF_PORT, &slave, 0, mad);
		if (!ret && slave != p->to) {
			pf_count(PF_DROP_MISROUTED);
			return false;
		}
	}
	if (ret) {
		pf_count(PF_DROP_DEMUX);
		return false;
	}
	/* the receiver's id is the VF's now */
	pf_note_conn(p->to, get_unaligned_be32(mad->data + 4), attr);
	return true;
}

/*
 * Check, map and rewrite one packet the hook stole.  The hook checked
 * that it is an unfragmented IPv4 UDP datagram to the RoCEv2 port.
 * Return: false to drop it.
 */
static bool pf_process(struct pf_pkt *p)
{
	struct sk_buff *skb = p->skb;
	struct ib_mad own, mad;
	struct udphdr *uh;
	struct iphdr *iph;
	u8 *bth, *wire;
	u32 icrc;

	if (skb_is_gso(skb) ||
	    skb_ensure_writable(skb, skb_network_offset(skb) +
				sizeof(*iph) + sizeof(*uh) + PF_GSI_LEN))
		goto malformed;
	iph = ip_hdr(skb);
	uh = (struct udphdr *)(iph + 1);
	bth = (u8 *)(uh + 1);
	if (iph->ihl != 5 || ntohs(iph->tot_len) != skb->len ||
	    ntohs(uh->len) != sizeof(*uh) + PF_GSI_LEN ||
	    ntohs(iph->tot_len) != sizeof(*iph) + ntohs(uh->len) ||
	    bth[0] != IB_OPCODE_UD_SEND_ONLY || PF_BTH_PAD(bth))
		goto malformed;
	wire = bth + IB_BTH_BYTES + IB_DETH_BYTES;
	if (((struct ib_mad_hdr *)wire)->mgmt_class != IB_MGMT_CLASS_CM) {
		pf_count(PF_GSI_NOT_CM);
		return true;
	}
	icrc = pf_icrc(iph, uh, bth, PF_GSI_LEN - PF_ICRC_LEN);
	if (get_unaligned_le32(bth + PF_GSI_LEN - PF_ICRC_LEN) != icrc) {
		pf_count(PF_DROP_BAD_ICRC);
		return false;
	}

	memcpy(&mad, wire, PF_MAD_LEN);
	memcpy(&own, wire, PF_MAD_LEN);
	if (!pf_handle(p, &mad))
		return false;
	if (rewrite && memcmp(&mad, wire, PF_MAD_LEN)) {
		memcpy(wire, &mad, PF_MAD_LEN);
		pf_count(PF_REWRITTEN);
		if (fix_icrc)
			put_unaligned_le32(pf_icrc(iph, uh, bth,
						   PF_GSI_LEN - PF_ICRC_LEN),
					   bth + PF_GSI_LEN - PF_ICRC_LEN);
		pf_fix_udp_csum(skb, iph, uh);
	}
	if (p->from > 0 && p->to < 0)
		pf_audit(p->from, &own, (struct ib_mad *)wire);
	return true;

malformed:
	pf_count(PF_DROP_MALFORMED);
	return false;
}

/* what ip_forward_finish() does for a packet without IP options */
static void pf_output(struct sk_buff *skb)
{
	IP_INC_STATS(pf_net, IPSTATS_MIB_OUTFORWDATAGRAMS);
	IP_ADD_STATS(pf_net, IPSTATS_MIB_OUTOCTETS, skb->len);
	skb_clear_tstamp(skb);
	local_bh_disable();
	dst_output(pf_net, NULL, skb);
	local_bh_enable();
}

static void pf_work_fn(struct work_struct *work)
{
	struct pf_pkt *p, *next;
	LIST_HEAD(list);
	bool ok;

	spin_lock_bh(&pf_queue_lock);
	list_splice_init(&pf_queue, &list);
	memset(pf_queue_len, 0, sizeof(pf_queue_len));
	spin_unlock_bh(&pf_queue_lock);

	list_for_each_entry_safe(p, next, &list, link) {
		mutex_lock(&pf_clean_lock);
		ok = pf_process(p);
		mutex_unlock(&pf_clean_lock);
		if (ok) {
			pf_count(PF_SENT);
			pf_output(p->skb);
		} else {
			pf_count(PF_FREED);
			kfree_skb_reason(p->skb, SKB_DROP_REASON_NETFILTER_DROP);
		}
		netdev_put(p->in, &p->in_tracker);
		kfree(p);
		cond_resched();
	}
}

static DECLARE_WORK(pf_work, pf_work_fn);

static unsigned int pf_queue_pkt(struct sk_buff *skb,
				 const struct nf_hook_state *state,
				 int from, int to)
{
	unsigned int src = from > 0 ? from - 1 : PF_WIRE;
	struct pf_pkt *p;
	bool full;

#ifdef HAVE_KMALLOC_OBJ
	p = kmalloc_obj(*p, GFP_ATOMIC);
#else
	p = kmalloc(sizeof(*p), GFP_ATOMIC);
#endif
	if (!p || !skb_dst_force(skb)) {
		kfree(p);
		pf_count(PF_DROP_NOMEM);
		return NF_DROP;
	}
	p->skb = skb;
	p->in = state->in;
	p->from = from;
	p->to = to;
	/* the clean's count first, then what the VF sent after it */
	p->gen = from > 0 ? READ_ONCE(pf_clean_gen[from - 1]) : 0;
	netdev_hold(p->in, &p->in_tracker, GFP_ATOMIC);

	spin_lock_bh(&pf_queue_lock);
	full = pf_queue_len[src] >= PF_QUEUE_MAX;
	if (!full) {
		list_add_tail(&p->link, &pf_queue);
		pf_queue_len[src]++;
	}
	spin_unlock_bh(&pf_queue_lock);
	if (full) {
		netdev_put(p->in, &p->in_tracker);
		kfree(p);
		pf_count(PF_DROP_QUEUE);
		return NF_DROP;
	}
	pf_count(PF_STOLEN);
	queue_work(pf_wq, &pf_work);
	return NF_STOLEN;
}

/* an unfragmented IPv4 UDP datagram to the RoCEv2 port, BTH to QP1 */
static bool pf_is_gsi(struct sk_buff *skb)
{
	const struct iphdr *iph = ip_hdr(skb);
	u8 buf[sizeof(struct udphdr) + IB_BTH_BYTES];
	const struct udphdr *uh;
	const u8 *bth;

	if (iph->protocol != IPPROTO_UDP)
		return false;
	uh = skb_header_pointer(skb, skb_network_offset(skb) + iph->ihl * 4,
				sizeof(buf), buf);
	if (!uh || uh->dest != htons(ROCE_V2_UDP_DPORT))
		return false;
	bth = (const u8 *)(uh + 1);
	return PF_BTH_QPN(bth) == PF_GSI_QPN;
}

static unsigned int pf_hook(void *priv, struct sk_buff *skb,
			    const struct nf_hook_state *state)
{
	int from = pf_slave_of(state->in), to = pf_slave_of(state->out);

	pf_count(PF_SEEN);
	if (from < 0 && to < 0)
		return NF_ACCEPT;
	/*
	 * Nothing reassembles in FORWARD: a fragment after the first has
	 * no UDP header to tell a CM MAD by, and RoCEv2 sets DF.  A VF's
	 * path carries no UDP fragment, or a MAD could pass unmapped.
	 */
	if (ip_hdr(skb)->protocol == IPPROTO_UDP && ip_is_fragment(ip_hdr(skb))) {
		pf_count(PF_DROP_FRAGMENT);
		return NF_DROP;
	}
	if (!pf_is_gsi(skb))
		return NF_ACCEPT;
	pf_count(PF_GSI);
	if ((from < 0 && !pf_is_wire(state->in)) ||
	    (to < 0 && !pf_is_wire(state->out))) {
		pf_count(PF_DROP_OFF_PATH);
		return NF_DROP;
	}
	return pf_queue_pkt(skb, state, from, to);
}

/* last in FORWARD: what the hook steals skips no other hook */
static const struct nf_hook_ops pf_nf_ops = {
	.hook = pf_hook,
	.pf = NFPROTO_IPV4,
	.hooknum = NF_INET_FORWARD,
	.priority = NF_IP_PRI_LAST,
};

/* pf_names[] index of an interface name, -1 if none */
static int pf_iface_of(const char *name)
{
	unsigned int i;

	for (i = 0; i <= PF_WIRE; i++)
		if (pf_names[i][0] && !strcmp(pf_names[i], name))
			return i;
	return -1;
}

/*
 * A VF's interface went down, lost its carrier (its VM's link went away)
 * or was removed: release the VF's ids, as on SLAVE_SHUTDOWN.  Once per
 * loss, until the interface is up again.
 */
static void pf_vf_gone(int i)
{
	ASSERT_RTNL();
	if (i >= PF_WIRE || pf_cleaned[i] || pf_stopping)
		return;
	pf_cleaned[i] = true;
	pf_count(PF_VF_CLEANS);
	pr_info("%s down: cleaning slave %d\n", pf_names[i], i + 1);
	mutex_lock(&pf_clean_lock);
	WRITE_ONCE(pf_clean_gen[i], pf_clean_gen[i] + 1);
	mlx4_ib_cm_paravirt_clean(pf_dev, i + 1);
	mutex_unlock(&pf_clean_lock);
}

static int pf_netdev_event(struct notifier_block *nb, unsigned long event,
			   void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	int i;

	ASSERT_RTNL();
	for (i = 0; i <= PF_WIRE; i++) {
		if (READ_ONCE(pf_ifindex[i]) != dev->ifindex)
			continue;
		if (event == NETDEV_DOWN ||
		    (event == NETDEV_CHANGE && !netif_oper_up(dev)))
			pf_vf_gone(i);
		if (event == NETDEV_CHANGE && netif_oper_up(dev) && i < PF_WIRE)
			pf_cleaned[i] = false;
		if (event == NETDEV_UNREGISTER || event == NETDEV_CHANGENAME) {
			pf_vf_gone(i);
			WRITE_ONCE(pf_ifindex[i], 0);
		}
	}
	i = pf_iface_of(dev->name);
	if (i < 0)
		return NOTIFY_DONE;
	switch (event) {
	case NETDEV_REGISTER:
	case NETDEV_CHANGENAME:
		WRITE_ONCE(pf_ifindex[i], dev->ifindex);
		if (i < PF_WIRE)
			pf_cleaned[i] = !(dev->flags & IFF_UP);
		break;
	case NETDEV_UP:
		if (i < PF_WIRE)
			pf_cleaned[i] = false;
		break;
	}
	return NOTIFY_DONE;
}

static struct notifier_block pf_netdev_nb = {
	.notifier_call = pf_netdev_event,
};

static int pf_stats_show(struct seq_file *m, void *unused)
{
	unsigned int i;

	seq_printf(m, "mode %s rewrite %d fix_icrc %d\n",
		   pf_ib_mode ? "ib" : "roce", rewrite, fix_icrc);
	for (i = 0; i < pf_nr_vfs; i++)
		seq_printf(m, "slave%u %s ifindex %d\n", i + 1, pf_names[i],
			   READ_ONCE(pf_ifindex[i]));
	seq_printf(m, "wire %s ifindex %d\n",
		   pf_names[PF_WIRE][0] ? pf_names[PF_WIRE] : "(any other)",
		   READ_ONCE(pf_ifindex[PF_WIRE]));
	for (i = 0; i < PF_NR_COUNTERS; i++)
		seq_printf(m, "%s %ld\n", pf_counter_names[i],
			   atomic_long_read(&pf_counters[i]));
	for (i = 0; i < pf_nr_vfs; i++)
		seq_printf(m, "late_drep_slave%u %ld\n", i + 1,
			   atomic_long_read(&pf_late_drep[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(pf_stats);

static int pf_parse_params(void)
{
	char *names, *s, *name;
	int ret = 0;

	if (!strcmp(mode, "ib"))
		pf_ib_mode = true;
	else if (strcmp(mode, "roce"))
		return -EINVAL;
	if (strscpy(pf_names[PF_WIRE], wire_iface, IFNAMSIZ) < 0)
		return -EINVAL;
	names = kstrdup(vf_ifaces, GFP_KERNEL);
	if (!names)
		return -ENOMEM;
	s = names;
	while ((name = strsep(&s, ","))) {
		if (!*name)
			continue;
		if (pf_nr_vfs == PF_MAX_VFS || pf_iface_of(name) >= 0 ||
		    strscpy(pf_names[pf_nr_vfs], name, IFNAMSIZ) < 0) {
			ret = -EINVAL;
			break;
		}
		pf_nr_vfs++;
	}
	kfree(names);
	if (!ret && !pf_nr_vfs)
		ret = -EINVAL;
	return ret;
}

static int pf_setup_dev(void)
{
	struct pf_fake_dev *fake;

#ifdef HAVE_KMALLOC_OBJ
	fake = kzalloc_obj(*fake);
#else
	fake = kzalloc(sizeof(*fake), GFP_KERNEL);
#endif
	if (!fake)
		return -ENOMEM;
	fake->mdev.flags = MLX4_FLAG_MASTER;
	fake->ibdev.dev = &fake->mdev;
	if (dev_set_name(&fake->ibdev.ib_dev.dev, "pvcm_pf0"))
		goto err_free;
	if (mlx4_ib_cm_init())
		goto err_name;
	pf_dev = &fake->ibdev;
	mlx4_ib_cm_paravirt_init(pf_dev);
	if (READ_ONCE(pf_dev->sriov.pvcm.ready))
		return 0;
	mlx4_ib_cm_destroy();
	pf_dev = NULL;
err_name:
	kfree_const(fake->ibdev.ib_dev.dev.kobj.name);
err_free:
	kfree(fake);
	return -ENOMEM;
}

static void pf_teardown_dev(void)
{
	struct pf_fake_dev *fake = container_of(pf_dev, struct pf_fake_dev,
						ibdev);

	mlx4_ib_cm_paravirt_destroy(pf_dev);
	mlx4_ib_cm_destroy();
	kfree_const(fake->ibdev.ib_dev.dev.kobj.name);
	kfree(fake);
	pf_dev = NULL;
}

static int __init pvcm_pf_init(void)
{
	int ret;

	ret = pf_parse_params();
	if (ret) {
		pr_err("bad vf_ifaces, wire_iface or mode\n");
		return ret;
	}
	pf_net = netns_pid ? get_net_ns_by_pid(netns_pid) : get_net(&init_net);
	if (IS_ERR(pf_net))
		return PTR_ERR(pf_net);
	ret = pf_setup_dev();
	if (ret)
		goto err_net;
	ret = -ENOMEM;
	pf_wq = alloc_ordered_workqueue(KBUILD_MODNAME, 0);
	if (!pf_wq)
		goto err_dev;
	pf_debugfs = debugfs_create_dir("pf", pf_dev->sriov.pvcm.debugfs);
	debugfs_create_file("stats", 0444, pf_debugfs, NULL, &pf_stats_fops);

	ret = register_netdevice_notifier_net(pf_net, &pf_netdev_nb);
	if (ret)
		goto err_wq;
	ret = nf_register_net_hook(pf_net, &pf_nf_ops);
	if (ret)
		goto err_nb;
	pr_info("%s mode, %u VFs, wire %s\n", pf_ib_mode ? "ib" : "roce",
		pf_nr_vfs, pf_names[PF_WIRE][0] ? pf_names[PF_WIRE] : "any");
	return 0;

err_nb:
	rtnl_lock();
	pf_stopping = true;
	rtnl_unlock();
	unregister_netdevice_notifier_net(pf_net, &pf_netdev_nb);
err_wq:
	debugfs_remove(pf_debugfs);
	destroy_workqueue(pf_wq);
err_dev:
	pf_teardown_dev();
err_net:
	put_net(pf_net);
	return ret;
}

static void __exit pvcm_pf_exit(void)
{
	nf_unregister_net_hook(pf_net, &pf_nf_ops);	/* waits for the hooks */
	destroy_workqueue(pf_wq);	/* sends what was queued */
	rtnl_lock();
	pf_stopping = true;
	rtnl_unlock();
	unregister_netdevice_notifier_net(pf_net, &pf_netdev_nb);
	debugfs_remove(pf_debugfs);
	pf_teardown_dev();
	put_net(pf_net);
	xa_destroy(&pf_dreqs);
}

module_init(pvcm_pf_init);
module_exit(pvcm_pf_exit);
MODULE_DESCRIPTION("mlx4_ib PV-CM id cache behind an emulated SR-IOV master");
MODULE_LICENSE("Dual BSD/GPL");
