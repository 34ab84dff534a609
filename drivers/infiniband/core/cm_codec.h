/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Stateless packing and unpacking of IBTA communication management MADs.
 *
 * Every structure here holds the fields of one message in host order; the
 * cmc_put_*() helpers write them into a zeroed 256 byte MAD and the
 * cmc_get_*() helpers read them back.  Nothing in the codec knows about
 * connection state, devices or locking, which keeps it testable on its own.
 */
#ifndef IB_CM_CODEC_H
#define IB_CM_CODEC_H

#include <linux/build_bug.h>
#include <linux/export.h>
#include <linux/types.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_sa.h>
#include <rdma/ibta_vol1_c12.h>

/*
 * ib_cm's self-tests link against the codec and the TimeWait code of
 * ib_cm.ko itself; with the test hooks (IB_CM_TEST_HOOKS, set by Kbuild
 * for CONFIG_INFINIBAND_CM_TEST_HOOKS) these are exported to them in the
 * IB_CM_TEST namespace.  Without the hooks ib_cm.ko exports nothing more
 * than the kernel's own ib_cm.
 */
#ifdef IB_CM_TEST_HOOKS
#define EXPORT_SYMBOL_FOR_CM_TEST(sym) EXPORT_SYMBOL_NS_GPL(sym, IB_CM_TEST_NS)
/*
 * The namespace as the export and import macros take it: a string since
 * 6.13, a bare word before.
 */
#ifdef HAVE_NS_STRING
#define IB_CM_TEST_NS "IB_CM_TEST"
#else
#define IB_CM_TEST_NS IB_CM_TEST
#endif
#else
/* nothing exported; a reference discarded at link time uses @sym */
#define EXPORT_SYMBOL_FOR_CM_TEST(sym) __ADDRESSABLE(sym)
#endif

/*
 * The size in bytes of a byte field (private data, ARI, GIDs) of
 * <rdma/ibta_vol1_c12.h>, which iba.h does not offer; checks at build time
 * that the field is inside its message.
 */
#define CMC_MEM_SIZE(field) _CMC_MEM_SIZE(field)
#define _CMC_MEM_SIZE(field_struct, field_offset, type, num_bits)	\
	((num_bits) / 8 +						\
	 BUILD_BUG_ON_ZERO((field_offset) >= sizeof(field_struct)))

/* Class version this CM speaks (IBTA 1.2 and later). */
#define CMC_CLASS_VERSION	2

/* First attribute ID of the CM class; counters are indexed from it. */
#define CMC_ATTR_BASE		0x0010
#define CMC_ATTR_COUNT		11

/* Which message a REJ or MRA refers to ("Message REJected/MRAed"). */
enum cmc_msg_kind {
	CMC_MSG_REQ = 0,
	CMC_MSG_REP = 1,
	CMC_MSG_OTHER = 2,
};

/* One path as carried inside a REQ (primary or alternate) or a LAP. */
struct cmc_path {
	union ib_gid local_gid;
	union ib_gid remote_gid;
	u16 local_lid;
	u16 remote_lid;
	u32 flow_label;
	u8 rate;
	u8 tclass;
	u8 hop_limit;
	u8 sl;
	u8 subnet_local;
	u8 ack_timeout;
};

struct cmc_req {
	u32 local_comm_id;
	u32 vendor_id;
	u64 service_id;
	u64 local_ca_guid;
	u32 local_qkey;
	u32 local_qpn;
	u8 resp_resources;
	u32 local_eecn;
	u8 init_depth;
	u32 remote_eecn;
	u8 remote_resp_timeout;
	u8 transport;
	u8 flow_ctrl;
	u32 starting_psn;
	u8 local_resp_timeout;
	u8 retry_count;
	u16 pkey;
	u8 mtu;
	u8 rdc_exists;
	u8 rnr_retry;
	u8 max_cm_retries;
	u8 srq;
	u8 ext_transport;
	struct cmc_path primary;
	struct cmc_path alt;
	u8 sap_supported;
	const void *pdata;
	u8 pdata_len;
};

struct cmc_rep {
	u32 local_comm_id;
	u32 remote_comm_id;
	u32 local_qkey;
	u32 local_qpn;
	u32 local_eecn;
	u32 vendor_id;
	u32 starting_psn;
	u8 resp_resources;
	u8 init_depth;
	u8 target_ack_delay;
	u8 failover;
	u8 flow_ctrl;
	u8 rnr_retry;
	u8 srq;
	u64 local_ca_guid;
	const void *pdata;
	u8 pdata_len;
};

struct cmc_rej {
	u32 local_comm_id;
	u32 remote_comm_id;
	u8 msg_rejected;
	u8 ari_len;
	u16 reason;
	const void *ari;
	const void *pdata;
	u8 pdata_len;
};

struct cmc_mra {
	u32 local_comm_id;
	u32 remote_comm_id;
	u8 msg_mraed;
	u8 service_timeout;
	const void *pdata;
	u8 pdata_len;
};

/* RTU and DREP carry only the two IDs and private data. */
struct cmc_ids {
	u32 local_comm_id;
	u32 remote_comm_id;
	const void *pdata;
	u8 pdata_len;
};

struct cmc_dreq {
	u32 local_comm_id;
	u32 remote_comm_id;
	u32 remote_qpn;
	const void *pdata;
	u8 pdata_len;
};

struct cmc_sidr_req {
	u32 request_id;
	u16 pkey;
	u64 service_id;
	const void *pdata;
	u8 pdata_len;
};

struct cmc_sidr_rep {
	u32 request_id;
	u8 status;
	u8 info_len;
	u32 vendor_id;
	u32 qpn;
	u64 service_id;
	u32 qkey;
	const void *info;
	const void *pdata;
	u8 pdata_len;
};

struct cmc_lap {
	u32 local_comm_id;
	u32 remote_comm_id;
	u32 remote_qpn;
	u8 remote_resp_timeout;
	struct cmc_path alt;
	const void *pdata;
};

void cmc_put_hdr(struct ib_mad_hdr *hdr, __be16 attr_id, __be64 tid,
		 u32 attr_mod);

int cmc_qp_type_to_wire(enum ib_qp_type qpt, u8 *transport, u8 *ext);
enum ib_qp_type cmc_qp_type_from_wire(u8 transport, u8 ext);

void cmc_put_req(struct cm_req_msg *m, const struct cmc_req *f);
void cmc_get_req(const struct cm_req_msg *m, struct cmc_req *f);
bool cmc_req_has_alt(const struct cm_req_msg *m);

void cmc_put_rep(struct cm_rep_msg *m, const struct cmc_rep *f);
void cmc_get_rep(const struct cm_rep_msg *m, struct cmc_rep *f);

void cmc_put_rej(struct cm_rej_msg *m, const struct cmc_rej *f);
void cmc_get_rej(const struct cm_rej_msg *m, struct cmc_rej *f);

void cmc_put_mra(struct cm_mra_msg *m, const struct cmc_mra *f);
void cmc_get_mra(const struct cm_mra_msg *m, struct cmc_mra *f);

void cmc_put_rtu(struct cm_rtu_msg *m, const struct cmc_ids *f);
void cmc_get_rtu(const struct cm_rtu_msg *m, struct cmc_ids *f);

void cmc_put_drep(struct cm_drep_msg *m, const struct cmc_ids *f);
void cmc_get_drep(const struct cm_drep_msg *m, struct cmc_ids *f);

void cmc_put_dreq(struct cm_dreq_msg *m, const struct cmc_dreq *f);
void cmc_get_dreq(const struct cm_dreq_msg *m, struct cmc_dreq *f);

void cmc_put_sidr_req(struct cm_sidr_req_msg *m, const struct cmc_sidr_req *f);
void cmc_get_sidr_req(const struct cm_sidr_req_msg *m, struct cmc_sidr_req *f);

void cmc_put_sidr_rep(struct cm_sidr_rep_msg *m, const struct cmc_sidr_rep *f);
void cmc_get_sidr_rep(const struct cm_sidr_rep_msg *m, struct cmc_sidr_rep *f);

void cmc_get_lap(const struct cm_lap_msg *m, struct cmc_lap *f);

void cmc_path_from_sa(struct cmc_path *w, struct sa_path_rec *p,
		      u16 inbound_dlid, u8 ack_delay);
enum sa_path_rec_type cmc_path_type(const union ib_gid *peer_gid, bool opa_ah);
void cmc_path_to_sa(const struct cmc_path *w, struct sa_path_rec *p, u32 dlid);

u8 cmc_ack_timeout(u8 ca_ack_delay, u8 packet_life_time);
unsigned int cmc_iba_time_to_ms(u8 iba_time);

#endif /* IB_CM_CODEC_H */
