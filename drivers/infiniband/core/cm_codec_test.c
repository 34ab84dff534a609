// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KTAP self-test for the ib_cm message codec and TimeWait bookkeeping.
 *
 * Expected bytes are written out by hand from the IBTA vol 1 chapter 12
 * message tables (byte offset in the MAD = 24 byte MAD header + the offset
 * the table gives), not derived from the encoder.  The *_descriptors cases
 * check the codec a second way, against the kernel's own field descriptors
 * (<rdma/ibta_vol1_c12.h>, read with IBA_GET()).  Reports through the
 * shared harness (ib_selftest.h): KTAP from module_init, failing the load on
 * any failure, or one KUnit result per case on a kernel with KUnit.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/prandom.h>

#include "cm_priv.h"
#include "ib_selftest.h"

/* The codec and the TimeWait code under test are ib_cm.ko's own. */
MODULE_IMPORT_NS(IB_CM_TEST_NS);

/*
 * The TimeWait table under test: its own lock, trees, list and workqueue,
 * not ib_cm's, and expiries reported to tw_report_expiry().
 */
static DEFINE_SPINLOCK(tw_lock);
static struct cm_tw_table tws;

static struct {
	__be32 local_id;
	__be32 remote_id;
	__be32 remote_qpn;
	int calls;
	int enomem;	/* answer -ENOMEM to this many calls first */
} tw_seen;

static int tw_report_expiry(__be32 local_id, __be32 remote_id,
			    __be32 remote_qpn)
{
	tw_seen.calls++;
	if (tw_seen.enomem) {
		tw_seen.enomem--;
		return -ENOMEM;
	}
	tw_seen.local_id = local_id;
	tw_seen.remote_id = remote_id;
	tw_seen.remote_qpn = remote_qpn;
	return 0;
}

static u8 mad[256] __aligned(8);

static void reset_mad(void)
{
	memset(mad, 0, sizeof(mad));
}

/*
 * The MAD a case encoded or decodes, 16 bytes a row after its offset (in
 * decimal, as the checks give it), so that a failed check on one field
 * comes with its neighbours.  Rows of zeros are left out.
 */
static void dump_mad(void)
{
	unsigned int off;

	ibst_diag("the MAD, rows of zeros left out:");
	for (off = 0; off < sizeof(mad); off += 16)
		if (memchr_inv(mad + off, 0, 16))
			ibst_diag("%3u: %16ph", off, mad + off);
}

/* Compare @len bytes at MAD offset @off with @exp; count the mismatches. */
static unsigned int want(unsigned int off, const u8 *exp, unsigned int len)
{
	unsigned int i, bad = 0;

	for (i = 0; i < len; i++) {
		if (mad[off + i] == exp[i])
			continue;
		ibst_diag("byte %u: got 0x%02x, expected 0x%02x", off + i,
			  mad[off + i], exp[i]);
		bad++;
	}
	return bad;
}

#define WANT(off, ...) do {					\
	static const u8 __e[] = { __VA_ARGS__ };		\
	unsigned int __off = (off);				\
	unsigned int __bad = want(__off, __e, sizeof(__e));	\
								\
	if (__bad)						\
		IBST_FAIL("%u of %zu bytes differ from offset %u", \
			  __bad, sizeof(__e), __off);		\
} while (0)

static void mad_header(void)
{
	ibst_set_dump(dump_mad);
	reset_mad();
	cmc_put_hdr((struct ib_mad_hdr *)mad, CM_DREQ_ATTR_ID,
		    cpu_to_be64(0x1122334455667788ULL), 0xa0b0c0d0);
	/* BaseVersion, MgmtClass (CM = 0x07), ClassVersion 2, Send (0x03). */
	WANT(0, 0x01, 0x07, 0x02, 0x03);
	WANT(8, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88);
	WANT(16, 0x00, 0x15);
	WANT(20, 0xa0, 0xb0, 0xc0, 0xd0);
}

static void fill_path(struct cmc_path *p, u8 seed)
{
	unsigned int i;

	for (i = 0; i < 16; i++) {
		p->local_gid.raw[i] = seed + i;
		p->remote_gid.raw[i] = seed + 0x40 + i;
	}
	p->local_lid = 0x1234;
	p->remote_lid = 0x5678;
	p->flow_label = 0xabcde;
	p->rate = 0x2a;
	p->tclass = 0x9c;
	p->hop_limit = 0x3f;
	p->sl = 0xc;
	p->subnet_local = 1;
	p->ack_timeout = 0x11;
}

static const u8 req_pdata[IB_CM_REQ_PRIVATE_DATA_SIZE] = {
	[0] = 0xee, [91] = 0xdd,
};

static void fill_req(struct cmc_req *r)
{
	memset(r, 0, sizeof(*r));
	r->local_comm_id = 0x11223344;
	r->vendor_id = 0xabcdef;
	r->service_id = 0x0102030405060708ULL;
	r->local_ca_guid = 0x8877665544332211ULL;
	r->local_qkey = 0xcafebabe;
	r->local_qpn = 0x123456;
	r->resp_resources = 0x7f;
	r->init_depth = 0x05;
	r->remote_eecn = 0x000102;
	r->remote_resp_timeout = 0x15;
	r->transport = 1;
	r->flow_ctrl = 1;
	r->starting_psn = 0xabcdef;
	r->local_resp_timeout = 0x13;
	r->retry_count = 5;
	r->pkey = 0xffff;
	r->mtu = 4;
	r->rnr_retry = 7;
	r->max_cm_retries = 15;
	r->srq = 1;
	fill_path(&r->primary, 0x10);
	fill_path(&r->alt, 0x80);
	r->alt.local_lid = 0x9abc;
	r->alt.ack_timeout = 0x1f;
	r->sap_supported = 1;
	r->pdata = req_pdata;
	r->pdata_len = sizeof(req_pdata);
}

static void req_layout(void)
{
	struct cmc_req r;

	fill_req(&r);
	ibst_set_dump(dump_mad);
	reset_mad();
	cmc_put_req((struct cm_req_msg *)mad, &r);
	WANT(24, 0x11, 0x22, 0x33, 0x44);		/* Local Comm ID */
	WANT(28, 0x00, 0xab, 0xcd, 0xef);		/* rsvd, Vendor ID */
	WANT(32, 1, 2, 3, 4, 5, 6, 7, 8);		/* Service ID */
	WANT(40, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11);
	WANT(52, 0xca, 0xfe, 0xba, 0xbe);		/* Local Q_Key */
	WANT(56, 0x12, 0x34, 0x56, 0x7f);		/* QPN, resp. res. */
	WANT(60, 0x00, 0x00, 0x00, 0x05);		/* EECN, init depth */
	/* Remote EECN; timeout 0x15 << 3 | UC (1) << 1 | flow control. */
	WANT(64, 0x00, 0x01, 0x02, 0xab);
	/* Starting PSN; local timeout 0x13 << 3 | retry count 5. */
	WANT(68, 0xab, 0xcd, 0xef, 0x9d);
	WANT(72, 0xff, 0xff);				/* P_Key */
	WANT(74, 0x47);		/* MTU 4 << 4 | RDC 0 | RNR retry 7 */
	WANT(75, 0xf8);		/* max retries 15 << 4 | SRQ << 3 */
	WANT(76, 0x12, 0x34, 0x56, 0x78);		/* primary LIDs */
	WANT(80, 0x10, 0x11);				/* local GID start */
	WANT(95, 0x1f, 0x50);		/* local GID end, remote GID start */
	WANT(111, 0x5f);
	/* Flow label 0xabcde in 20 bits, 6 reserved bits, rate 0x2a. */
	WANT(112, 0xab, 0xcd, 0xe0, 0x2a);
	/* TClass, hop limit, SL 0xc << 4 | subnet local << 3, ACK 0x11 << 3 */
	WANT(116, 0x9c, 0x3f, 0xc8, 0x88);
	WANT(120, 0x9a, 0xbc, 0x56, 0x78);		/* alternate LIDs */
	WANT(124, 0x80);
	WANT(156, 0xab, 0xcd, 0xe0, 0x2a);		/* alternate flow/rate */
	/* Alternate ACK timeout 0x1f << 3 | SAP supported (bit 5). */
	WANT(163, 0xfc);
	WANT(164, 0xee);				/* private data */
	WANT(255, 0xdd);
	IBST_EXPECT(cmc_req_has_alt((struct cm_req_msg *)mad));
}

static void req_roundtrip(void)
{
	struct cmc_req r, back;

	fill_req(&r);
	ibst_set_dump(dump_mad);
	reset_mad();
	cmc_put_req((struct cm_req_msg *)mad, &r);
	cmc_get_req((struct cm_req_msg *)mad, &back);
	IBST_EXPECT_EQ(back.local_comm_id, r.local_comm_id);
	IBST_EXPECT_EQ(back.vendor_id, r.vendor_id);
	IBST_EXPECT_EQ(back.service_id, r.service_id);
	IBST_EXPECT_EQ(back.local_qpn, r.local_qpn);
	IBST_EXPECT_EQ(back.remote_resp_timeout, r.remote_resp_timeout);
	IBST_EXPECT_EQ(back.transport, 1);
	IBST_EXPECT_EQ(back.flow_ctrl, 1);
	IBST_EXPECT_EQ(back.local_resp_timeout, 0x13);
	IBST_EXPECT_EQ(back.retry_count, 5);
	IBST_EXPECT_EQ(back.mtu, 4);
	IBST_EXPECT_EQ(back.rnr_retry, 7);
	IBST_EXPECT_EQ(back.max_cm_retries, 15);
	IBST_EXPECT_EQ(back.srq, 1);
	IBST_EXPECT_EQ(back.primary.flow_label, 0xabcde);
	IBST_EXPECT_EQ(back.primary.rate, 0x2a);
	IBST_EXPECT_EQ(back.primary.sl, 0xc);
	IBST_EXPECT_EQ(back.primary.subnet_local, 1);
	IBST_EXPECT_EQ(back.primary.ack_timeout, 0x11);
	IBST_EXPECT_MEMEQ(&back.primary.remote_gid, &r.primary.remote_gid, 16);
	IBST_EXPECT_EQ(back.alt.local_lid, 0x9abc);
	IBST_EXPECT_EQ(back.sap_supported, 1);
	IBST_EXPECT_PTR_EQ(back.pdata, mad + 164);
	IBST_EXPECT_EQ(back.pdata_len, 92);
}

static void req_alternate_path_flag(void)
{
	ibst_set_dump(dump_mad);
	reset_mad();
	IBST_EXPECT(!cmc_req_has_alt((struct cm_req_msg *)mad));
	mad[24 + 97] = 1;	/* alternate local LID = 1 */
	IBST_EXPECT(cmc_req_has_alt((struct cm_req_msg *)mad));
}

/* A path between two ports of one subnet, as its sender sees it. */
static void fill_sa_path(struct sa_path_rec *p, enum sa_path_rec_type type,
			 u32 slid, u32 dlid)
{
	memset(p, 0, sizeof(*p));
	p->rec_type = type;
	p->sgid.global.subnet_prefix = cpu_to_be64(0xfe80000000000000ULL);
	p->sgid.global.interface_id = cpu_to_be64(0x0002c90300000001ULL);
	p->dgid.global.subnet_prefix = p->sgid.global.subnet_prefix;
	p->dgid.global.interface_id = cpu_to_be64(0x0002c90300000002ULL);
	if (type != SA_PATH_REC_TYPE_ROCE_V2) {
		sa_path_set_slid(p, slid);
		sa_path_set_dlid(p, dlid);
	}
	p->flow_label = cpu_to_be32(0x12345);
	p->rate = IB_RATE_100_GBPS;
	p->traffic_class = 0x20;
	p->sl = 3;
	p->packet_life_time = 14;
}

/* An IB path keeps its GIDs and 16-bit LIDs; routed, the LIDs are unknown. */
static void path_ib(void)
{
	struct sa_path_rec p;
	struct cmc_path w;

	fill_sa_path(&p, SA_PATH_REC_TYPE_IB, 0x12, 0x34);
	cmc_path_from_sa(&w, &p, 0x77, 15);
	IBST_EXPECT_EQ(w.subnet_local, 1);
	IBST_EXPECT_EQ(w.local_lid, 0x12);
	IBST_EXPECT_EQ(w.remote_lid, 0x34);
	IBST_EXPECT_MEMEQ(&w.local_gid, &p.sgid, sizeof(p.sgid));
	IBST_EXPECT_MEMEQ(&w.remote_gid, &p.dgid, sizeof(p.dgid));
	IBST_EXPECT_EQ(w.flow_label, 0x12345);
	IBST_EXPECT_EQ(w.sl, 3);
	IBST_EXPECT_EQ(w.tclass, 0x20);
	IBST_EXPECT_EQ(w.rate, IB_RATE_100_GBPS);
	IBST_EXPECT_EQ(w.ack_timeout, cmc_ack_timeout(15, 14));

	p.hop_limit = 2;
	cmc_path_from_sa(&w, &p, 0x77, 15);
	IBST_EXPECT_EQ(w.subnet_local, 0);
	IBST_EXPECT_EQ(w.hop_limit, 2);
	IBST_EXPECT_EQ(w.local_lid, 0x77);
	IBST_EXPECT_EQ(w.remote_lid, 0xffff);
}

/*
 * OPA: a 32-bit LID on either end moves both LIDs into the GIDs' interface
 * IDs (OPA OUI 00-06-6A, then the LID), the subnet prefix stays and the
 * LID fields are zero; 16-bit LIDs travel as on IB.
 */
static void path_opa_lids(void)
{
	static const u8 opa_slid[8] = { 0x00, 0x06, 0x6a, 0, 0, 0x01, 0, 0x05 };
	struct sa_path_rec p;
	struct cmc_path w;

	fill_sa_path(&p, SA_PATH_REC_TYPE_OPA, 0x10005, 0x20);
	cmc_path_from_sa(&w, &p, 0xffff, 15);
	IBST_EXPECT_EQ(w.subnet_local, 1);
	IBST_EXPECT_EQ(w.local_lid, 0);
	IBST_EXPECT_EQ(w.remote_lid, 0);
	IBST_EXPECT_MEMEQ(&w.local_gid.raw[8], opa_slid, 8);
	IBST_EXPECT(ib_is_opa_gid(&w.remote_gid));
	IBST_EXPECT_EQ(opa_get_lid_from_gid(&w.remote_gid), 0x20);
	IBST_EXPECT_EQ(w.local_gid.global.subnet_prefix,
		       p.sgid.global.subnet_prefix);

	fill_sa_path(&p, SA_PATH_REC_TYPE_OPA, 0x5, 0xbfff);
	cmc_path_from_sa(&w, &p, 0xffff, 15);
	IBST_EXPECT_EQ(w.local_lid, 0x5);
	IBST_EXPECT_EQ(w.remote_lid, 0xbfff);
	IBST_EXPECT_MEMEQ(&w.local_gid, &p.sgid, sizeof(p.sgid));
	IBST_EXPECT(!ib_is_opa_gid(&w.local_gid));
}

/*
 * The receiver's view of an OPA REQ: the alternate path exists although
 * its LIDs are zero, the GIDs make both paths OPA on a port with OPA
 * address handles (IB elsewhere), and the LIDs come back from the GIDs,
 * ends swapped.
 */
static void path_opa_req_received(void)
{
	struct sa_path_rec p, back;
	struct cmc_req r = {}, got;

	fill_sa_path(&p, SA_PATH_REC_TYPE_OPA, 0x10005, 0x20);
	cmc_path_from_sa(&r.primary, &p, 0xffff, 15);
	fill_sa_path(&p, SA_PATH_REC_TYPE_OPA, 0x20006, 0x30007);
	cmc_path_from_sa(&r.alt, &p, 0xffff, 15);
	ibst_set_dump(dump_mad);
	reset_mad();
	cmc_put_req((struct cm_req_msg *)mad, &r);
	cmc_get_req((struct cm_req_msg *)mad, &got);
	IBST_EXPECT(cmc_req_has_alt((struct cm_req_msg *)mad));
	IBST_EXPECT_EQ(got.alt.local_lid, 0);
	IBST_EXPECT_EQ(got.alt.remote_lid, 0);

	IBST_EXPECT_EQ(cmc_path_type(&got.primary.local_gid, true),
		       SA_PATH_REC_TYPE_OPA);
	IBST_EXPECT_EQ(cmc_path_type(&got.primary.local_gid, false),
		       SA_PATH_REC_TYPE_IB);
	IBST_EXPECT_EQ(cmc_path_type(&p.sgid, true), SA_PATH_REC_TYPE_IB);

	memset(&back, 0, sizeof(back));
	back.rec_type = SA_PATH_REC_TYPE_OPA;
	cmc_path_to_sa(&got.primary, &back, 0x99);
	IBST_EXPECT_EQ(be32_to_cpu(back.opa.dlid), 0x10005);
	IBST_EXPECT_EQ(be32_to_cpu(back.opa.slid), 0x20);
	IBST_EXPECT_MEMEQ(&back.dgid, &got.primary.local_gid, 16);
	IBST_EXPECT_EQ(back.packet_life_time, cmc_ack_timeout(15, 14) - 1);

	memset(&back, 0, sizeof(back));
	back.rec_type = SA_PATH_REC_TYPE_OPA;
	cmc_path_to_sa(&got.alt, &back, got.alt.local_lid);
	IBST_EXPECT_EQ(be32_to_cpu(back.opa.dlid), 0x20006);
	IBST_EXPECT_EQ(be32_to_cpu(back.opa.slid), 0x30007);
}

/* IB takes the destination LID from the caller; RoCE records carry none. */
static void path_to_sa_ib_roce(void)
{
	struct sa_path_rec p, back;
	struct cmc_path w;

	fill_sa_path(&p, SA_PATH_REC_TYPE_IB, 0x12, 0x34);
	cmc_path_from_sa(&w, &p, 0xffff, 15);
	memset(&back, 0, sizeof(back));
	back.rec_type = SA_PATH_REC_TYPE_IB;
	cmc_path_to_sa(&w, &back, 0x56);
	IBST_EXPECT_EQ(be16_to_cpu(back.ib.dlid), 0x56);
	IBST_EXPECT_EQ(be16_to_cpu(back.ib.slid), 0x34);
	IBST_EXPECT_MEMEQ(&back.sgid, &p.dgid, 16);
	IBST_EXPECT_MEMEQ(&back.dgid, &p.sgid, 16);
	IBST_EXPECT_EQ(back.sl, 3);
	IBST_EXPECT_EQ(back.traffic_class, 0x20);
	IBST_EXPECT_EQ(be32_to_cpu(back.flow_label), 0x12345);
	IBST_EXPECT_EQ(back.reversible, 1);
	IBST_EXPECT_EQ(back.mtu_selector, IB_SA_EQ);

	fill_sa_path(&p, SA_PATH_REC_TYPE_ROCE_V2, 0, 0);
	p.hop_limit = 64;
	cmc_path_from_sa(&w, &p, 0xffff, 15);
	IBST_EXPECT_EQ(w.subnet_local, 0);
	IBST_EXPECT_EQ(w.remote_lid, 0xffff);
	memset(&back, 0xa5, sizeof(back));
	back.rec_type = SA_PATH_REC_TYPE_ROCE_V2;
	cmc_path_to_sa(&w, &back, 0x56);
	IBST_EXPECT(!back.roce.route_resolved);
	IBST_EXPECT_EQ(back.hop_limit, 64);
}

static void rep_layout(void)
{
	struct cmc_rep r = {
		.local_comm_id = 0x01020304,
		.remote_comm_id = 0x05060708,
		.local_qkey = 0x0a0b0c0d,
		.local_qpn = 0xa1b2c3,
		.local_eecn = 0x000001,
		.vendor_id = 0x112233,
		.starting_psn = 0x445566,
		.resp_resources = 0x10,
		.init_depth = 0x20,
		.target_ack_delay = 0x1f,
		.failover = 2,
		.flow_ctrl = 1,
		.rnr_retry = 5,
		.srq = 1,
		.local_ca_guid = 0x0102030405060708ULL,
	}, back;
	static const u8 pd[] = { 0x5a, 0xa5 };

	r.pdata = pd;
	r.pdata_len = sizeof(pd);
	ibst_set_dump(dump_mad);
	reset_mad();
	cmc_put_rep((struct cm_rep_msg *)mad, &r);
	WANT(24, 1, 2, 3, 4, 5, 6, 7, 8);
	WANT(32, 0x0a, 0x0b, 0x0c, 0x0d);
	WANT(36, 0xa1, 0xb2, 0xc3, 0x11);	/* QPN, Vendor ID[23:16] */
	WANT(40, 0x00, 0x00, 0x01, 0x22);	/* EECN, Vendor ID[15:8] */
	WANT(44, 0x44, 0x55, 0x66, 0x33);	/* PSN, Vendor ID[7:0] */
	/* RR, depth, ACK delay 0x1f << 3 | failover 2 << 1 | flow ctrl */
	WANT(48, 0x10, 0x20, 0xfd);
	WANT(51, 0xb0);				/* RNR 5 << 5 | SRQ << 4 */
	WANT(52, 1, 2, 3, 4, 5, 6, 7, 8);
	WANT(60, 0x5a, 0xa5);
	cmc_get_rep((struct cm_rep_msg *)mad, &back);
	IBST_EXPECT_EQ(back.vendor_id, 0x112233);
	IBST_EXPECT_EQ(back.local_qpn, 0xa1b2c3);
	IBST_EXPECT_EQ(back.target_ack_delay, 0x1f);
	IBST_EXPECT_EQ(back.failover, 2);
	IBST_EXPECT_EQ(back.rnr_retry, 5);
	IBST_EXPECT_EQ(back.srq, 1);
	IBST_EXPECT_EQ(back.flow_ctrl, 1);
}

static void rej_layout(void)
{
	static const u8 ari[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct cmc_rej r = {
		.local_comm_id = 0xdeadbeef,
		.remote_comm_id = 0x0badf00d,
		.msg_rejected = CMC_MSG_OTHER,
		.reason = IB_CM_REJ_CONSUMER_DEFINED,
		.ari = ari,
		.ari_len = sizeof(ari),
	}, back;
	static const u8 pd[] = { 0x77 };

	r.pdata = pd;
	r.pdata_len = 1;
	ibst_set_dump(dump_mad);
	reset_mad();
	cmc_put_rej((struct cm_rej_msg *)mad, &r);
	WANT(24, 0xde, 0xad, 0xbe, 0xef, 0x0b, 0xad, 0xf0, 0x0d);
	WANT(32, 0x80);			/* Message REJected = 2, bits 0-1 */
	WANT(33, 0x10);			/* ARI length 8, bits 0-6 */
	WANT(34, 0x00, 0x1c);		/* Reason 28 */
	WANT(36, 1, 2, 3, 4, 5, 6, 7, 8);
	WANT(108, 0x77);
	cmc_get_rej((struct cm_rej_msg *)mad, &back);
	IBST_EXPECT_EQ(back.reason, 28);
	IBST_EXPECT_EQ(back.ari_len, 8);
	IBST_EXPECT_EQ(back.msg_rejected, CMC_MSG_OTHER);
}

static void mra_layout(void)
{
	struct cmc_mra r = {
		.local_comm_id = 1,
		.remote_comm_id = 2,
		.msg_mraed = CMC_MSG_REP,
		.service_timeout = 0x1a,
	}, back;

	ibst_set_dump(dump_mad);
	reset_mad();
	cmc_put_mra((struct cm_mra_msg *)mad, &r);
	WANT(24, 0, 0, 0, 1, 0, 0, 0, 2);
	WANT(32, 0x40, 0xd0);	/* MRAed 1 << 6; timeout 0x1a << 3 */
	cmc_get_mra((struct cm_mra_msg *)mad, &back);
	IBST_EXPECT_EQ(back.msg_mraed, CMC_MSG_REP);
	IBST_EXPECT_EQ(back.service_timeout, 0x1a);
	IBST_EXPECT_PTR_EQ(back.pdata, mad + 34);
}

static void rtu_dreq_drep_layout(void)
{
	static const u8 pd[] = { 0x42 };
	struct cmc_ids ids = {
		.local_comm_id = 0x0a0a0a0a,
		.remote_comm_id = 0x0b0b0b0b,
		.pdata = pd,
		.pdata_len = 1,
	};
	struct cmc_dreq dreq = {
		.local_comm_id = 3,
		.remote_comm_id = 4,
		.remote_qpn = 0xfedcba,
		.pdata = pd,
		.pdata_len = 1,
	}, dback;

	ibst_set_dump(dump_mad);
	reset_mad();
	cmc_put_rtu((struct cm_rtu_msg *)mad, &ids);
	WANT(24, 0x0a, 0x0a, 0x0a, 0x0a, 0x0b, 0x0b, 0x0b, 0x0b, 0x42);
	reset_mad();
	cmc_put_drep((struct cm_drep_msg *)mad, &ids);
	WANT(32, 0x42);
	reset_mad();
	cmc_put_dreq((struct cm_dreq_msg *)mad, &dreq);
	WANT(24, 0, 0, 0, 3, 0, 0, 0, 4);
	WANT(32, 0xfe, 0xdc, 0xba, 0x00, 0x42);	/* QPN/EECN, rsvd, data */
	cmc_get_dreq((struct cm_dreq_msg *)mad, &dback);
	IBST_EXPECT_EQ(dback.remote_qpn, 0xfedcba);
	IBST_EXPECT_PTR_EQ(dback.pdata, mad + 36);
}

static void sidr_layout(void)
{
	static const u8 info[2] = { 0x99, 0x88 };
	struct cmc_sidr_req q = {
		.request_id = 0x01020304,
		.pkey = 0x8001,
		.service_id = 0x1000000000000001ULL,
	};
	struct cmc_sidr_rep p = {
		.request_id = 0x0a0b0c0d,
		.status = IB_SIDR_NO_QP,
		.vendor_id = 0x123456,
		.qpn = 0x00abcd,
		.service_id = 0x2000000000000002ULL,
		.qkey = 0x11112222,
		.info = info,
		.info_len = 2,
	}, back;

	ibst_set_dump(dump_mad);
	reset_mad();
	cmc_put_sidr_req((struct cm_sidr_req_msg *)mad, &q);
	WANT(24, 1, 2, 3, 4, 0x80, 0x01, 0, 0);
	WANT(32, 0x10, 0, 0, 0, 0, 0, 0, 0x01);
	reset_mad();
	cmc_put_sidr_rep((struct cm_sidr_rep_msg *)mad, &p);
	WANT(24, 0x0a, 0x0b, 0x0c, 0x0d);
	WANT(28, 0x03, 0x02, 0x12, 0x34);	/* status, info len, VID hi */
	WANT(32, 0x00, 0xab, 0xcd, 0x56);	/* QPN, VID lo */
	WANT(36, 0x20, 0, 0, 0, 0, 0, 0, 0x02);
	WANT(44, 0x11, 0x11, 0x22, 0x22);
	WANT(48, 0x99, 0x88);
	cmc_get_sidr_rep((struct cm_sidr_rep_msg *)mad, &back);
	IBST_EXPECT_EQ(back.status, IB_SIDR_NO_QP);
	IBST_EXPECT_EQ(back.qpn, 0xabcd);
	IBST_EXPECT_EQ(back.vendor_id, 0x123456);
	IBST_EXPECT_EQ(back.info_len, 2);
	IBST_EXPECT_PTR_EQ(back.pdata, mad + 120);
}

static void lap_decode(void)
{
	struct cmc_lap l;

	ibst_set_dump(dump_mad);
	reset_mad();
	mad[24 + 3] = 7;			/* local comm ID */
	mad[24 + 7] = 9;			/* remote comm ID */
	mad[36] = 0x12;				/* remote QPN 0x123456 */
	mad[37] = 0x34;
	mad[38] = 0x56;
	mad[39] = 0x0e << 3;			/* remote CM timeout 14 */
	mad[44] = 0x00;				/* alt local LID 0x0042 */
	mad[45] = 0x42;
	mad[47] = 0x43;				/* alt remote LID */
	mad[48] = 0xfe;				/* alt local GID[0] */
	mad[79] = 0x01;				/* alt remote GID[15] */
	mad[80] = 0x12;				/* flow label 0x12345 */
	mad[81] = 0x34;
	mad[82] = 0x50;
	mad[83] = 0x07;				/* traffic class */
	mad[84] = 0x40;				/* hop limit */
	mad[85] = 0x03;				/* rate (low 6 bits) */
	mad[86] = 0x58;				/* SL 5, subnet local */
	mad[87] = 0x0c << 3;			/* ACK timeout 12 */
	mad[88] = 0xaa;				/* private data */
	cmc_get_lap((struct cm_lap_msg *)mad, &l);
	IBST_EXPECT_EQ(l.local_comm_id, 7);
	IBST_EXPECT_EQ(l.remote_comm_id, 9);
	IBST_EXPECT_EQ(l.remote_qpn, 0x123456);
	IBST_EXPECT_EQ(l.remote_resp_timeout, 14);
	IBST_EXPECT_EQ(l.alt.local_lid, 0x42);
	IBST_EXPECT_EQ(l.alt.remote_lid, 0x43);
	IBST_EXPECT_EQ(l.alt.local_gid.raw[0], 0xfe);
	IBST_EXPECT_EQ(l.alt.remote_gid.raw[15], 1);
	IBST_EXPECT_EQ(l.alt.flow_label, 0x12345);
	IBST_EXPECT_EQ(l.alt.tclass, 7);
	IBST_EXPECT_EQ(l.alt.hop_limit, 0x40);
	IBST_EXPECT_EQ(l.alt.rate, 3);
	IBST_EXPECT_EQ(l.alt.sl, 5);
	IBST_EXPECT_EQ(l.alt.subnet_local, 1);
	IBST_EXPECT_EQ(l.alt.ack_timeout, 12);
	IBST_EXPECT_EQ(*(u8 *)l.pdata, 0xaa);
}

/*
 * Against the kernel's descriptors.  Each round decodes a MAD of
 * pseudo-random bytes (the same on every run), then reads every field the
 * codec handles from a copy of it with IBA_GET() and its descriptor: each
 * must equal the member the codec decoded.  The decoded message is then
 * encoded into a zeroed MAD, each field is read back the same way,
 * compared with what was encoded and cleared; nothing may be left set
 * afterwards (no bit outside the fields, none in reserved space).
 */
#define DESC_ROUNDS	16

static u8 src[256] __aligned(8);	/* the random message */
static u8 seen[256] __aligned(8);	/* its copy, read field by field */
static unsigned int desc_round;

static void random_mad(unsigned int n)
{
	struct rnd_state rs;

	desc_round = n;
	prandom_seed_state(&rs, 0x1bca11ULL + n);
	prandom_bytes_state(&rs, src, sizeof(src));
	memcpy(seen, src, sizeof(seen));
	reset_mad();
}

static void take_field(const char *name, u64 got, u64 exp)
{
	if (got != exp)
		IBST_FAIL("round %u: CM_%s reads 0x%llx, expected 0x%llx",
			  desc_round, name, got, exp);
}

/*
 * A byte field holds @len bytes of @exp (at most its size): compare and
 * clear those; anything else in it must stay zero.
 */
static void take_mem(const char *name, u8 *field, unsigned int size,
		     const void *exp, unsigned int len)
{
	unsigned int n = exp ? min(len, size) : 0;

	if (n && memcmp(field, exp, n))
		IBST_FAIL("round %u: CM_%s differs from the %u bytes expected",
			  desc_round, name, n);
	memset(field, 0, n);
}

/* Read field CM_<name> of @msg with IBA_GET(), compare with @exp, clear. */
#define TAKE(msg, name, exp) do {					\
	typeof(msg) __m = (msg);					\
									\
	take_field(#name, IBA_GET(CM_##name, __m), (exp));		\
	IBA_SET(CM_##name, __m, 0);					\
} while (0)

#define TAKE_MEM(msg, name, exp, len) do {				\
	typeof(msg) __m = (msg);					\
									\
	take_mem(#name, (u8 *)IBA_GET_MEM_PTR(CM_##name, __m),		\
		 CMC_MEM_SIZE(CM_##name), (exp), (len));		\
} while (0)

/* @blk: REQ_PRIMARY, REQ_ALTERNATE or LAP_ALTERNATE. */
#define TAKE_PATH(msg, blk, path) do {					\
	typeof(msg) _pm = (msg);					\
	const struct cmc_path *_pp = (path);				\
									\
	TAKE(_pm, blk##_LOCAL_PORT_LID, _pp->local_lid);		\
	TAKE(_pm, blk##_REMOTE_PORT_LID, _pp->remote_lid);		\
	TAKE_MEM(_pm, blk##_LOCAL_PORT_GID, &_pp->local_gid, 16);	\
	TAKE_MEM(_pm, blk##_REMOTE_PORT_GID, &_pp->remote_gid, 16);	\
	TAKE(_pm, blk##_FLOW_LABEL, _pp->flow_label);			\
	TAKE(_pm, blk##_PACKET_RATE, _pp->rate);			\
	TAKE(_pm, blk##_TRAFFIC_CLASS, _pp->tclass);			\
	TAKE(_pm, blk##_HOP_LIMIT, _pp->hop_limit);			\
	TAKE(_pm, blk##_SL, _pp->sl);					\
	TAKE(_pm, blk##_SUBNET_LOCAL, _pp->subnet_local);		\
	TAKE(_pm, blk##_LOCAL_ACK_TIMEOUT, _pp->ack_timeout);		\
} while (0)

/* After an encoded MAD's fields were taken, no byte may be left set. */
static void expect_all_taken(void)
{
	unsigned int i, bad = 0;

	for (i = 0; i < sizeof(mad); i++) {
		if (!mad[i])
			continue;
		ibst_diag("byte %u: 0x%02x is in no field", i, mad[i]);
		bad++;
	}
	if (bad)
		IBST_FAIL("round %u: %u bytes set outside the fields",
			  desc_round, bad);
}

/* Private data of an encoded message: cut to the field, or none. */
#define PDATA_LEN(n)	((n) * 17 & 0xff)

static void take_req(struct cm_req_msg *m, const struct cmc_req *r)
{
	TAKE(m, REQ_LOCAL_COMM_ID, r->local_comm_id);
	TAKE(m, REQ_VENDOR_ID, r->vendor_id);
	TAKE(m, REQ_SERVICE_ID, r->service_id);
	TAKE(m, REQ_LOCAL_CA_GUID, r->local_ca_guid);
	TAKE(m, REQ_LOCAL_Q_KEY, r->local_qkey);
	TAKE(m, REQ_LOCAL_QPN, r->local_qpn);
	TAKE(m, REQ_RESPONDER_RESOURCES, r->resp_resources);
	TAKE(m, REQ_LOCAL_EECN, r->local_eecn);
	TAKE(m, REQ_INITIATOR_DEPTH, r->init_depth);
	TAKE(m, REQ_REMOTE_EECN, r->remote_eecn);
	TAKE(m, REQ_REMOTE_CM_RESPONSE_TIMEOUT, r->remote_resp_timeout);
	TAKE(m, REQ_TRANSPORT_SERVICE_TYPE, r->transport);
	TAKE(m, REQ_END_TO_END_FLOW_CONTROL, r->flow_ctrl);
	TAKE(m, REQ_STARTING_PSN, r->starting_psn);
	TAKE(m, REQ_LOCAL_CM_RESPONSE_TIMEOUT, r->local_resp_timeout);
	TAKE(m, REQ_RETRY_COUNT, r->retry_count);
	TAKE(m, REQ_PARTITION_KEY, r->pkey);
	TAKE(m, REQ_PATH_PACKET_PAYLOAD_MTU, r->mtu);
	TAKE(m, REQ_RDC_EXISTS, r->rdc_exists);
	TAKE(m, REQ_RNR_RETRY_COUNT, r->rnr_retry);
	TAKE(m, REQ_MAX_CM_RETRIES, r->max_cm_retries);
	TAKE(m, REQ_SRQ, r->srq);
	TAKE(m, REQ_EXTENDED_TRANSPORT_TYPE, r->ext_transport);
	TAKE_PATH(m, REQ_PRIMARY, &r->primary);
	TAKE_PATH(m, REQ_ALTERNATE, &r->alt);
	TAKE(m, REQ_SAP_SUPPORTED, r->sap_supported);
	TAKE_MEM(m, REQ_PRIVATE_DATA, r->pdata, r->pdata_len);
}

static void req_descriptors(void)
{
	struct cm_req_msg *s = (struct cm_req_msg *)src;
	struct cmc_req r;
	unsigned int n;

	for (n = 0; n < DESC_ROUNDS; n++) {
		random_mad(n);
		cmc_get_req(s, &r);
		IBST_EXPECT_PTR_EQ(r.pdata,
				   IBA_GET_MEM_PTR(CM_REQ_PRIVATE_DATA, s));
		IBST_EXPECT_EQ(r.pdata_len, CMC_MEM_SIZE(CM_REQ_PRIVATE_DATA));
		take_req((struct cm_req_msg *)seen, &r);
		r.pdata_len = PDATA_LEN(n);
		cmc_put_req((struct cm_req_msg *)mad, &r);
		take_req((struct cm_req_msg *)mad, &r);
		expect_all_taken();
	}
}

/* Whether a REQ has an alternate path, from its descriptors. */
static void req_alternate_path_descriptors(void)
{
	struct cm_req_msg *s = (struct cm_req_msg *)src;
	union ib_gid *gid = IBA_GET_MEM_PTR(CM_REQ_ALTERNATE_LOCAL_PORT_GID, s);

	random_mad(0);
	IBA_SET(CM_REQ_ALTERNATE_LOCAL_PORT_LID, s, 0x0001);
	IBST_EXPECT(cmc_req_has_alt(s));
	IBA_SET(CM_REQ_ALTERNATE_LOCAL_PORT_LID, s, 0);
	memset(gid, 0, sizeof(*gid));
	IBST_EXPECT(!cmc_req_has_alt(s));
	gid->global.interface_id = OPA_MAKE_ID(0x10005);
	IBST_EXPECT(cmc_req_has_alt(s));
}

static void take_rep(struct cm_rep_msg *m, const struct cmc_rep *r)
{
	TAKE(m, REP_LOCAL_COMM_ID, r->local_comm_id);
	TAKE(m, REP_REMOTE_COMM_ID, r->remote_comm_id);
	TAKE(m, REP_LOCAL_Q_KEY, r->local_qkey);
	TAKE(m, REP_LOCAL_QPN, r->local_qpn);
	TAKE(m, REP_VENDOR_ID_H, r->vendor_id >> 16);
	TAKE(m, REP_LOCAL_EE_CONTEXT_NUMBER, r->local_eecn);
	TAKE(m, REP_VENDOR_ID_M, (r->vendor_id >> 8) & 0xff);
	TAKE(m, REP_STARTING_PSN, r->starting_psn);
	TAKE(m, REP_VENDOR_ID_L, r->vendor_id & 0xff);
	TAKE(m, REP_RESPONDER_RESOURCES, r->resp_resources);
	TAKE(m, REP_INITIATOR_DEPTH, r->init_depth);
	TAKE(m, REP_TARGET_ACK_DELAY, r->target_ack_delay);
	TAKE(m, REP_FAILOVER_ACCEPTED, r->failover);
	TAKE(m, REP_END_TO_END_FLOW_CONTROL, r->flow_ctrl);
	TAKE(m, REP_RNR_RETRY_COUNT, r->rnr_retry);
	TAKE(m, REP_SRQ, r->srq);
	TAKE(m, REP_LOCAL_CA_GUID, r->local_ca_guid);
	TAKE_MEM(m, REP_PRIVATE_DATA, r->pdata, r->pdata_len);
}

static void rep_descriptors(void)
{
	struct cm_rep_msg *s = (struct cm_rep_msg *)src;
	struct cmc_rep r;
	unsigned int n;

	for (n = 0; n < DESC_ROUNDS; n++) {
		random_mad(n);
		cmc_get_rep(s, &r);
		IBST_EXPECT_PTR_EQ(r.pdata,
				   IBA_GET_MEM_PTR(CM_REP_PRIVATE_DATA, s));
		IBST_EXPECT_EQ(r.pdata_len, CMC_MEM_SIZE(CM_REP_PRIVATE_DATA));
		take_rep((struct cm_rep_msg *)seen, &r);
		r.pdata_len = PDATA_LEN(n);
		cmc_put_rep((struct cm_rep_msg *)mad, &r);
		take_rep((struct cm_rep_msg *)mad, &r);
		expect_all_taken();
	}
}

static void take_rej(struct cm_rej_msg *m, const struct cmc_rej *r)
{
	TAKE(m, REJ_LOCAL_COMM_ID, r->local_comm_id);
	TAKE(m, REJ_REMOTE_COMM_ID, r->remote_comm_id);
	TAKE(m, REJ_MESSAGE_REJECTED, r->msg_rejected);
	TAKE(m, REJ_REJECTED_INFO_LENGTH, r->ari_len);
	TAKE(m, REJ_REASON, r->reason);
	TAKE_MEM(m, REJ_ARI, r->ari, r->ari_len);
	TAKE_MEM(m, REJ_PRIVATE_DATA, r->pdata, r->pdata_len);
}

/*
 * The encoder writes the ARI length only with an ARI, and no more than
 * the field holds: odd rounds encode without one.
 */
static void rej_descriptors(void)
{
	struct cm_rej_msg *s = (struct cm_rej_msg *)src;
	struct cmc_rej r;
	unsigned int n;

	for (n = 0; n < DESC_ROUNDS; n++) {
		random_mad(n);
		cmc_get_rej(s, &r);
		IBST_EXPECT_PTR_EQ(r.ari, IBA_GET_MEM_PTR(CM_REJ_ARI, s));
		IBST_EXPECT_PTR_EQ(r.pdata,
				   IBA_GET_MEM_PTR(CM_REJ_PRIVATE_DATA, s));
		IBST_EXPECT_EQ(r.pdata_len, CMC_MEM_SIZE(CM_REJ_PRIVATE_DATA));
		take_rej((struct cm_rej_msg *)seen, &r);
		r.pdata_len = PDATA_LEN(n);
		if (n & 1)
			r.ari = NULL;
		cmc_put_rej((struct cm_rej_msg *)mad, &r);
		r.ari_len = r.ari ? min_t(u8, r.ari_len, CMC_MEM_SIZE(CM_REJ_ARI))
				  : 0;
		take_rej((struct cm_rej_msg *)mad, &r);
		expect_all_taken();
	}
}

static void take_mra(struct cm_mra_msg *m, const struct cmc_mra *r)
{
	TAKE(m, MRA_LOCAL_COMM_ID, r->local_comm_id);
	TAKE(m, MRA_REMOTE_COMM_ID, r->remote_comm_id);
	TAKE(m, MRA_MESSAGE_MRAED, r->msg_mraed);
	TAKE(m, MRA_SERVICE_TIMEOUT, r->service_timeout);
	TAKE_MEM(m, MRA_PRIVATE_DATA, r->pdata, r->pdata_len);
}

static void mra_descriptors(void)
{
	struct cm_mra_msg *s = (struct cm_mra_msg *)src;
	struct cmc_mra r;
	unsigned int n;

	for (n = 0; n < DESC_ROUNDS; n++) {
		random_mad(n);
		cmc_get_mra(s, &r);
		IBST_EXPECT_PTR_EQ(r.pdata,
				   IBA_GET_MEM_PTR(CM_MRA_PRIVATE_DATA, s));
		IBST_EXPECT_EQ(r.pdata_len, CMC_MEM_SIZE(CM_MRA_PRIVATE_DATA));
		take_mra((struct cm_mra_msg *)seen, &r);
		r.pdata_len = PDATA_LEN(n);
		cmc_put_mra((struct cm_mra_msg *)mad, &r);
		take_mra((struct cm_mra_msg *)mad, &r);
		expect_all_taken();
	}
}

static void take_rtu(struct cm_rtu_msg *m, const struct cmc_ids *r)
{
	TAKE(m, RTU_LOCAL_COMM_ID, r->local_comm_id);
	TAKE(m, RTU_REMOTE_COMM_ID, r->remote_comm_id);
	TAKE_MEM(m, RTU_PRIVATE_DATA, r->pdata, r->pdata_len);
}

static void take_drep(struct cm_drep_msg *m, const struct cmc_ids *r)
{
	TAKE(m, DREP_LOCAL_COMM_ID, r->local_comm_id);
	TAKE(m, DREP_REMOTE_COMM_ID, r->remote_comm_id);
	TAKE_MEM(m, DREP_PRIVATE_DATA, r->pdata, r->pdata_len);
}

static void take_dreq(struct cm_dreq_msg *m, const struct cmc_dreq *r)
{
	TAKE(m, DREQ_LOCAL_COMM_ID, r->local_comm_id);
	TAKE(m, DREQ_REMOTE_COMM_ID, r->remote_comm_id);
	TAKE(m, DREQ_REMOTE_QPN_EECN, r->remote_qpn);
	TAKE_MEM(m, DREQ_PRIVATE_DATA, r->pdata, r->pdata_len);
}

static void rtu_dreq_drep_descriptors(void)
{
	struct cmc_ids r;
	struct cmc_dreq d;
	unsigned int n;

	for (n = 0; n < DESC_ROUNDS; n++) {
		random_mad(n);
		cmc_get_rtu((struct cm_rtu_msg *)src, &r);
		IBST_EXPECT_PTR_EQ(r.pdata,
				   IBA_GET_MEM_PTR(CM_RTU_PRIVATE_DATA,
						   (struct cm_rtu_msg *)src));
		IBST_EXPECT_EQ(r.pdata_len, CMC_MEM_SIZE(CM_RTU_PRIVATE_DATA));
		take_rtu((struct cm_rtu_msg *)seen, &r);
		r.pdata_len = PDATA_LEN(n);
		cmc_put_rtu((struct cm_rtu_msg *)mad, &r);
		take_rtu((struct cm_rtu_msg *)mad, &r);
		expect_all_taken();

		random_mad(n);
		cmc_get_drep((struct cm_drep_msg *)src, &r);
		IBST_EXPECT_PTR_EQ(r.pdata,
				   IBA_GET_MEM_PTR(CM_DREP_PRIVATE_DATA,
						   (struct cm_drep_msg *)src));
		IBST_EXPECT_EQ(r.pdata_len, CMC_MEM_SIZE(CM_DREP_PRIVATE_DATA));
		take_drep((struct cm_drep_msg *)seen, &r);
		r.pdata_len = PDATA_LEN(n);
		cmc_put_drep((struct cm_drep_msg *)mad, &r);
		take_drep((struct cm_drep_msg *)mad, &r);
		expect_all_taken();

		random_mad(n);
		cmc_get_dreq((struct cm_dreq_msg *)src, &d);
		IBST_EXPECT_PTR_EQ(d.pdata,
				   IBA_GET_MEM_PTR(CM_DREQ_PRIVATE_DATA,
						   (struct cm_dreq_msg *)src));
		IBST_EXPECT_EQ(d.pdata_len, CMC_MEM_SIZE(CM_DREQ_PRIVATE_DATA));
		take_dreq((struct cm_dreq_msg *)seen, &d);
		d.pdata_len = PDATA_LEN(n);
		cmc_put_dreq((struct cm_dreq_msg *)mad, &d);
		take_dreq((struct cm_dreq_msg *)mad, &d);
		expect_all_taken();
	}
}

static void take_sidr_req(struct cm_sidr_req_msg *m,
			  const struct cmc_sidr_req *r)
{
	TAKE(m, SIDR_REQ_REQUESTID, r->request_id);
	TAKE(m, SIDR_REQ_PARTITION_KEY, r->pkey);
	TAKE(m, SIDR_REQ_SERVICEID, r->service_id);
	TAKE_MEM(m, SIDR_REQ_PRIVATE_DATA, r->pdata, r->pdata_len);
}

static void take_sidr_rep(struct cm_sidr_rep_msg *m,
			  const struct cmc_sidr_rep *r)
{
	TAKE(m, SIDR_REP_REQUESTID, r->request_id);
	TAKE(m, SIDR_REP_STATUS, r->status);
	TAKE(m, SIDR_REP_ADDITIONAL_INFORMATION_LENGTH, r->info_len);
	TAKE(m, SIDR_REP_VENDOR_ID_H, r->vendor_id >> 8);
	TAKE(m, SIDR_REP_QPN, r->qpn);
	TAKE(m, SIDR_REP_VENDOR_ID_L, r->vendor_id & 0xff);
	TAKE(m, SIDR_REP_SERVICEID, r->service_id);
	TAKE(m, SIDR_REP_Q_KEY, r->qkey);
	TAKE_MEM(m, SIDR_REP_ADDITIONAL_INFORMATION, r->info, r->info_len);
	TAKE_MEM(m, SIDR_REP_PRIVATE_DATA, r->pdata, r->pdata_len);
}

/* As for the REJ's ARI: odd rounds encode a SIDR_REP without its info. */
static void sidr_descriptors(void)
{
	struct cm_sidr_req_msg *sq = (struct cm_sidr_req_msg *)src;
	struct cm_sidr_rep_msg *sp = (struct cm_sidr_rep_msg *)src;
	struct cmc_sidr_req q;
	struct cmc_sidr_rep p;
	unsigned int n;

	for (n = 0; n < DESC_ROUNDS; n++) {
		random_mad(n);
		cmc_get_sidr_req(sq, &q);
		IBST_EXPECT_PTR_EQ(q.pdata,
				   IBA_GET_MEM_PTR(CM_SIDR_REQ_PRIVATE_DATA, sq));
		IBST_EXPECT_EQ(q.pdata_len,
			       CMC_MEM_SIZE(CM_SIDR_REQ_PRIVATE_DATA));
		take_sidr_req((struct cm_sidr_req_msg *)seen, &q);
		q.pdata_len = PDATA_LEN(n);
		cmc_put_sidr_req((struct cm_sidr_req_msg *)mad, &q);
		take_sidr_req((struct cm_sidr_req_msg *)mad, &q);
		expect_all_taken();

		random_mad(n);
		cmc_get_sidr_rep(sp, &p);
		IBST_EXPECT_PTR_EQ(p.info,
				   IBA_GET_MEM_PTR(CM_SIDR_REP_ADDITIONAL_INFORMATION, sp));
		IBST_EXPECT_PTR_EQ(p.pdata,
				   IBA_GET_MEM_PTR(CM_SIDR_REP_PRIVATE_DATA, sp));
		IBST_EXPECT_EQ(p.pdata_len,
			       CMC_MEM_SIZE(CM_SIDR_REP_PRIVATE_DATA));
		take_sidr_rep((struct cm_sidr_rep_msg *)seen, &p);
		p.pdata_len = PDATA_LEN(n);
		if (n & 1)
			p.info = NULL;
		cmc_put_sidr_rep((struct cm_sidr_rep_msg *)mad, &p);
		p.info_len = p.info ?
			min_t(u8, p.info_len,
			      CMC_MEM_SIZE(CM_SIDR_REP_ADDITIONAL_INFORMATION)) :
			0;
		take_sidr_rep((struct cm_sidr_rep_msg *)mad, &p);
		expect_all_taken();
	}
}

/* A LAP is only decoded. */
static void lap_descriptors(void)
{
	struct cm_lap_msg *sl = (struct cm_lap_msg *)src;
	struct cm_lap_msg *ml = (struct cm_lap_msg *)seen;
	struct cmc_lap l;
	unsigned int n;

	for (n = 0; n < DESC_ROUNDS; n++) {
		random_mad(n);
		cmc_get_lap(sl, &l);
		IBST_EXPECT_PTR_EQ(l.pdata,
				   IBA_GET_MEM_PTR(CM_LAP_PRIVATE_DATA, sl));
		TAKE(ml, LAP_LOCAL_COMM_ID, l.local_comm_id);
		TAKE(ml, LAP_REMOTE_COMM_ID, l.remote_comm_id);
		TAKE(ml, LAP_REMOTE_QPN_EECN, l.remote_qpn);
		TAKE(ml, LAP_REMOTE_CM_RESPONSE_TIMEOUT, l.remote_resp_timeout);
		TAKE_PATH(ml, LAP_ALTERNATE, &l.alt);
	}
}

static void qp_type_mapping(void)
{
	u8 t, e;

	reset_mad();
	IBST_EXPECT_EQ(cmc_qp_type_to_wire(IB_QPT_RC, &t, &e), 0);
	IBST_EXPECT_EQ(t, 0);
	IBST_EXPECT_EQ(e, 0);
	IBST_EXPECT_EQ(cmc_qp_type_to_wire(IB_QPT_UC, &t, &e), 0);
	IBST_EXPECT_EQ(t, 1);
	IBST_EXPECT_EQ(e, 0);
	IBST_EXPECT_EQ(cmc_qp_type_to_wire(IB_QPT_XRC_INI, &t, &e), 0);
	IBST_EXPECT_EQ(t, 3);
	IBST_EXPECT_EQ(e, 1);
	IBST_EXPECT_EQ(cmc_qp_type_to_wire(IB_QPT_UD, &t, &e), -EINVAL);
	IBST_EXPECT_EQ(cmc_qp_type_from_wire(0, 0), IB_QPT_RC);
	IBST_EXPECT_EQ(cmc_qp_type_from_wire(1, 0), IB_QPT_UC);
	IBST_EXPECT_EQ(cmc_qp_type_from_wire(3, 1), IB_QPT_XRC_TGT);
	IBST_EXPECT_EQ(cmc_qp_type_from_wire(2, 0), 0);
}

static void timeouts(void)
{
	reset_mad();
	/* 2^15 + 2^15 = 2^16 */
	IBST_EXPECT_EQ(cmc_ack_timeout(15, 14), 16);
	/* ACK delay negligible against 2 * 2^20 */
	IBST_EXPECT_EQ(cmc_ack_timeout(0, 20), 21);
	/* 2^20 + 2^19: rounded up */
	IBST_EXPECT_EQ(cmc_ack_timeout(20, 18), 21);
	/* 2^20 + 2^17: the larger term wins */
	IBST_EXPECT_EQ(cmc_ack_timeout(20, 16), 20);
	IBST_EXPECT_EQ(cmc_ack_timeout(31, 31), 31);
	IBST_EXPECT_EQ(cmc_iba_time_to_ms(0), 1);
	IBST_EXPECT_EQ(cmc_iba_time_to_ms(9), 2);
	IBST_EXPECT_EQ(cmc_iba_time_to_ms(18), 1024);
	IBST_EXPECT_EQ(cmc_iba_time_to_ms(40), 1U << 23);
}

static struct cm_tw *tw_make(u32 lid, u32 rid, u32 qpn, u64 guid)
{
	struct cm_tw *tw = cm_tw_alloc(&tws, cpu_to_be32(lid));

	if (tw) {
		tw->remote_id = cpu_to_be32(rid);
		tw->remote_qpn = cpu_to_be32(qpn);
		tw->remote_ca_guid = cpu_to_be64(guid);
	}
	return tw;
}

/* The record of remote ID @rid from CA @guid; under tw_lock. */
static struct cm_tw *tw_find(u64 guid, u32 rid)
{
	return cm_tw_find_rid(&tws, cpu_to_be64(guid), cpu_to_be32(rid));
}

/* Duplicate (same remote ID) and stale (same remote QPN) detection. */
static void timewait_conflicts(void)
{
	struct cm_tw *a, *b, *c, *d;

	reset_mad();
	a = tw_make(1, 100, 0x200, 0xaa);
	b = tw_make(2, 100, 0x300, 0xaa);	/* same remote ID as a */
	c = tw_make(3, 101, 0x200, 0xaa);	/* same remote QPN as a */
	d = tw_make(4, 100, 0x200, 0xbb);	/* other CA: no conflict */
	if (!a || !b || !c || !d) {
		IBST_FAIL("cannot allocate TimeWait records");
		goto out;
	}
	spin_lock_irq(&tw_lock);
	IBST_EXPECT_NULL(cm_tw_insert_rid(a));
	IBST_EXPECT_NULL(cm_tw_insert_rqpn(a));
	IBST_EXPECT_PTR_EQ(cm_tw_insert_rid(b), a);
	IBST_EXPECT_NULL(cm_tw_insert_rid(c));
	IBST_EXPECT_PTR_EQ(cm_tw_insert_rqpn(c), a);
	IBST_EXPECT_NULL(cm_tw_insert_rid(d));
	IBST_EXPECT_NULL(cm_tw_insert_rqpn(d));
	IBST_EXPECT_PTR_EQ(tw_find(0xaa, 100), a);
	IBST_EXPECT_PTR_EQ(tw_find(0xbb, 100), d);
	IBST_EXPECT_NULL(tw_find(0xcc, 100));
	cm_tw_unlink(a);
	IBST_EXPECT_NULL(tw_find(0xaa, 100));
	IBST_EXPECT_NULL(cm_tw_insert_rqpn(b));	/* QPN 0x300 is free */
	cm_tw_unlink(b);
	cm_tw_unlink(c);
	cm_tw_unlink(d);
	IBST_EXPECT(RB_EMPTY_ROOT(&tws.rid_tree));
	IBST_EXPECT(RB_EMPTY_ROOT(&tws.rqpn_tree));
	spin_unlock_irq(&tw_lock);
out:
	cm_tw_free(a);
	cm_tw_free(b);
	cm_tw_free(c);
	cm_tw_free(d);
}

/* After expiry: no record waits and @probe's remote QPN is free again. */
static void expect_tw_gone(struct cm_tw *probe)
{
	spin_lock_irq(&tw_lock);
	IBST_EXPECT(list_empty(&tws.list));
	IBST_EXPECT_NULL(cm_tw_insert_rqpn(probe));
	cm_tw_unlink(probe);
	spin_unlock_irq(&tw_lock);
}

/*
 * TimeWait: entering it frees the remote ID and QPN for a new connection
 * at once (the old one is no longer connected); on expiry the record
 * reports the connection it belonged to and leaves the list.
 */
static void timewait_expiry(void)
{
	struct cm_tw *tw, *probe;
	int i;

	reset_mad();
	memset(&tw_seen, 0, sizeof(tw_seen));
	tw = tw_make(7, 70, 0x700, 0x77);
	probe = tw_make(8, 80, 0x700, 0x77);
	if (!tw || !probe) {
		IBST_FAIL("cannot allocate TimeWait records");
		goto out;
	}
	spin_lock_irq(&tw_lock);
	IBST_EXPECT_NULL(cm_tw_insert_rid(tw));
	IBST_EXPECT_NULL(cm_tw_insert_rqpn(tw));
	cm_tw_start(tw, 50);
	IBST_EXPECT(!tw->in_rid);
	IBST_EXPECT(!tw->in_rqpn);
	IBST_EXPECT_NULL(cm_tw_insert_rqpn(probe));
	IBST_EXPECT_NULL(tw_find(0x77, 70));
	cm_tw_unlink(probe);
	spin_unlock_irq(&tw_lock);
	IBST_EXPECT_EQ(tw_seen.calls, 0);

	for (i = 0; i < 100 && !tw_seen.calls; i++)
		msleep(20);
	IBST_EXPECT_EQ(tw_seen.calls, 1);
	IBST_EXPECT_EQ(tw_seen.local_id, cpu_to_be32(7));
	IBST_EXPECT_EQ(tw_seen.remote_id, cpu_to_be32(70));
	IBST_EXPECT_EQ(tw_seen.remote_qpn, cpu_to_be32(0x700));
	expect_tw_gone(probe);
out:
	cm_tw_free(probe);
}

/*
 * No memory for the exit event: nothing changes, the record stays in
 * TimeWait and expires again later, until the event goes out.
 */
static void timewait_expiry_enomem(void)
{
	struct cm_tw *tw, *probe;
	int i;

	reset_mad();
	memset(&tw_seen, 0, sizeof(tw_seen));
	tw_seen.enomem = 2;
	tw = tw_make(5, 50, 0x500, 0x55);
	probe = tw_make(6, 60, 0x500, 0x55);
	if (!tw || !probe) {
		IBST_FAIL("cannot allocate TimeWait records");
		cm_tw_free(tw);
		goto out;
	}
	spin_lock_irq(&tw_lock);
	IBST_EXPECT_NULL(cm_tw_insert_rid(tw));
	IBST_EXPECT_NULL(cm_tw_insert_rqpn(tw));
	cm_tw_start(tw, 10);
	spin_unlock_irq(&tw_lock);

	for (i = 0; i < 100 && !tw_seen.calls; i++)
		msleep(20);
	IBST_EXPECT_GE(tw_seen.calls, 1);
	/* The retry comes a second later: still waiting. */
	spin_lock_irq(&tw_lock);
	IBST_EXPECT(!list_empty(&tws.list));
	spin_unlock_irq(&tw_lock);

	for (i = 0; i < 300 && tw_seen.calls < 3; i++)
		msleep(20);
	IBST_EXPECT_EQ(tw_seen.calls, 3);
	IBST_EXPECT_EQ(tw_seen.remote_qpn, cpu_to_be32(0x500));
	expect_tw_gone(probe);
out:
	cm_tw_free(probe);
}

/* A record still waiting at module exit is cancelled and freed. */
static void timewait_drain(void)
{
	struct cm_tw *tw;

	reset_mad();
	memset(&tw_seen, 0, sizeof(tw_seen));
	tw = tw_make(9, 90, 0x900, 0x99);
	if (!tw) {
		IBST_FAIL("cannot allocate a TimeWait record");
		return;
	}
	spin_lock_irq(&tw_lock);
	IBST_EXPECT_NULL(cm_tw_insert_rid(tw));
	cm_tw_start(tw, 60000);
	spin_unlock_irq(&tw_lock);
	cm_tw_drain(&tws);
	IBST_EXPECT(list_empty(&tws.list));
	IBST_EXPECT(RB_EMPTY_ROOT(&tws.rid_tree));
	IBST_EXPECT_EQ(tw_seen.calls, 0);
}

static const struct ibst_case cases[] = {
	IBST_CASE(mad_header),
	IBST_CASE(req_layout),
	IBST_CASE(req_roundtrip),
	IBST_CASE(req_alternate_path_flag),
	IBST_CASE(path_ib),
	IBST_CASE(path_opa_lids),
	IBST_CASE(path_opa_req_received),
	IBST_CASE(path_to_sa_ib_roce),
	IBST_CASE(rep_layout),
	IBST_CASE(rej_layout),
	IBST_CASE(mra_layout),
	IBST_CASE(rtu_dreq_drep_layout),
	IBST_CASE(sidr_layout),
	IBST_CASE(lap_decode),
	IBST_CASE(req_descriptors),
	IBST_CASE(req_alternate_path_descriptors),
	IBST_CASE(rep_descriptors),
	IBST_CASE(rej_descriptors),
	IBST_CASE(mra_descriptors),
	IBST_CASE(rtu_dreq_drep_descriptors),
	IBST_CASE(sidr_descriptors),
	IBST_CASE(lap_descriptors),
	IBST_CASE(qp_type_mapping),
	IBST_CASE(timeouts),
	IBST_CASE(timewait_conflicts),
	IBST_CASE(timewait_expiry),
	IBST_CASE(timewait_expiry_enomem),
	IBST_CASE(timewait_drain),
	{}
};

/* The TimeWait table, set up as ib_cm's init sets up its own. */
static int codec_setup(void)
{
	tws.lock = &tw_lock;
	tws.rid_tree = RB_ROOT;
	tws.rqpn_tree = RB_ROOT;
	INIT_LIST_HEAD(&tws.list);
	tws.expired = tw_report_expiry;
#ifdef HAVE_WQ_PERCPU
	tws.wq = alloc_workqueue("ib_cm_test", WQ_PERCPU, 1);
#else
	tws.wq = alloc_workqueue("ib_cm_test", 0, 1);
#endif
	return tws.wq ? 0 : -ENOMEM;
}

static void codec_teardown(void)
{
	cm_tw_drain(&tws);
	destroy_workqueue(tws.wq);
}

IBST_SUITE(ib_cm_codec, cases, codec_setup, codec_teardown);
MODULE_DESCRIPTION("ib_cm codec and TimeWait self-test");
MODULE_LICENSE("Dual BSD/GPL");
