// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * IBTA vol 1 chapter 12 message layouts, written and read with explicit
 * byte offsets.  Offsets below are relative to the start of the CM payload,
 * i.e. they follow the 24 byte common MAD header, exactly as the tables in
 * the specification count them.  Bit positions use the specification's
 * Byte[Bit] notation: bit 0 is the most significant bit of the byte.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#ifdef HAVE_LINUX_UNALIGNED_H
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

#include <rdma/opa_addr.h>

#include "cm_codec.h"

#define CMC_HDR_LEN	sizeof(struct ib_mad_hdr)

static u8 *cmc_at(void *mad, unsigned int off)
{
	return (u8 *)mad + CMC_HDR_LEN + off;
}

static const u8 *cmc_cat(const void *mad, unsigned int off)
{
	return (const u8 *)mad + CMC_HDR_LEN + off;
}

/* Store @width bits of @val at byte @off, starting at spec bit @bit. */
static void cmc_wbits(void *mad, unsigned int off, unsigned int bit,
		      unsigned int width, u32 val)
{
	unsigned int shift = 8 - bit - width;
	u8 mask = ((1U << width) - 1) << shift;
	u8 *p = cmc_at(mad, off);

	*p = (*p & ~mask) | ((val << shift) & mask);
}

static u8 cmc_rbits(const void *mad, unsigned int off, unsigned int bit,
		    unsigned int width)
{
	unsigned int shift = 8 - bit - width;

	return (*cmc_cat(mad, off) >> shift) & ((1U << width) - 1);
}

static void cmc_w16(void *mad, unsigned int off, u16 val)
{
	put_unaligned_be16(val, cmc_at(mad, off));
}

static u16 cmc_r16(const void *mad, unsigned int off)
{
	return get_unaligned_be16(cmc_cat(mad, off));
}

/* 24 bit quantities (QPNs, PSNs, EECNs) occupy three whole bytes. */
static void cmc_w24(void *mad, unsigned int off, u32 val)
{
	u8 *p = cmc_at(mad, off);

	p[0] = (val >> 16) & 0xff;
	p[1] = (val >> 8) & 0xff;
	p[2] = val & 0xff;
}

static u32 cmc_r24(const void *mad, unsigned int off)
{
	const u8 *p = cmc_cat(mad, off);

	return (p[0] << 16) | (p[1] << 8) | p[2];
}

static void cmc_w32(void *mad, unsigned int off, u32 val)
{
	put_unaligned_be32(val, cmc_at(mad, off));
}

static u32 cmc_r32(const void *mad, unsigned int off)
{
	return get_unaligned_be32(cmc_cat(mad, off));
}

static void cmc_w64(void *mad, unsigned int off, u64 val)
{
	put_unaligned_be64(val, cmc_at(mad, off));
}

static u64 cmc_r64(const void *mad, unsigned int off)
{
	return get_unaligned_be64(cmc_cat(mad, off));
}

static void cmc_wmem(void *mad, unsigned int off, const void *src,
		     unsigned int len, unsigned int room)
{
	if (src && len)
		memcpy(cmc_at(mad, off), src, min(len, room));
}

/* 20 bit flow label in the upper bits of a 32 bit word. */
static void cmc_wflow(void *mad, unsigned int off, u32 flow)
{
	u32 word = cmc_r32(mad, off) & 0xfff;

	cmc_w32(mad, off, word | ((flow & 0xfffff) << 12));
}

static u32 cmc_rflow(const void *mad, unsigned int off)
{
	return cmc_r32(mad, off) >> 12;
}

void cmc_put_hdr(struct ib_mad_hdr *hdr, __be16 attr_id, __be64 tid,
		 u32 attr_mod)
{
	hdr->base_version = IB_MGMT_BASE_VERSION;
	hdr->mgmt_class = IB_MGMT_CLASS_CM;
	hdr->class_version = CMC_CLASS_VERSION;
	hdr->method = IB_MGMT_METHOD_SEND;
	hdr->attr_id = attr_id;
	hdr->attr_mod = cpu_to_be32(attr_mod);
	hdr->tid = tid;
}

int cmc_qp_type_to_wire(enum ib_qp_type qpt, u8 *transport, u8 *ext)
{
	*ext = 0;
	if (qpt == IB_QPT_RC) {
		*transport = 0;
	} else if (qpt == IB_QPT_UC) {
		*transport = 1;
	} else if (qpt == IB_QPT_XRC_INI || qpt == IB_QPT_XRC_TGT) {
		*transport = 3;
		*ext = 1;
	} else {
		return -EINVAL;
	}
	return 0;
}

enum ib_qp_type cmc_qp_type_from_wire(u8 transport, u8 ext)
{
	if (transport == 0)
		return IB_QPT_RC;
	if (transport == 1)
		return IB_QPT_UC;
	if (transport == 3 && ext == 1)
		return IB_QPT_XRC_TGT;
	return 0;
}

/*
 * A REQ path block is 44 bytes: two LIDs, two GIDs, flow label/rate word,
 * traffic class, hop limit, SL/subnet-local and the local ACK timeout.
 * The alternate block starts 44 bytes after the primary one.
 */
#define CMC_REQ_PRIMARY	52
#define CMC_REQ_ALT	96

static void cmc_put_path(void *mad, unsigned int base,
			 const struct cmc_path *p)
{
	cmc_w16(mad, base, p->local_lid);
	cmc_w16(mad, base + 2, p->remote_lid);
	memcpy(cmc_at(mad, base + 4), p->local_gid.raw, 16);
	memcpy(cmc_at(mad, base + 20), p->remote_gid.raw, 16);
	cmc_wflow(mad, base + 36, p->flow_label);
	cmc_wbits(mad, base + 39, 2, 6, p->rate);
	*cmc_at(mad, base + 40) = p->tclass;
	*cmc_at(mad, base + 41) = p->hop_limit;
	cmc_wbits(mad, base + 42, 0, 4, p->sl);
	cmc_wbits(mad, base + 42, 4, 1, p->subnet_local);
	cmc_wbits(mad, base + 43, 0, 5, p->ack_timeout);
}

static void cmc_get_path(const void *mad, unsigned int base,
			 struct cmc_path *p)
{
	p->local_lid = cmc_r16(mad, base);
	p->remote_lid = cmc_r16(mad, base + 2);
	memcpy(p->local_gid.raw, cmc_cat(mad, base + 4), 16);
	memcpy(p->remote_gid.raw, cmc_cat(mad, base + 20), 16);
	p->flow_label = cmc_rflow(mad, base + 36);
	p->rate = cmc_rbits(mad, base + 39, 2, 6);
	p->tclass = *cmc_cat(mad, base + 40);
	p->hop_limit = *cmc_cat(mad, base + 41);
	p->sl = cmc_rbits(mad, base + 42, 0, 4);
	p->subnet_local = cmc_rbits(mad, base + 42, 4, 1);
	p->ack_timeout = cmc_rbits(mad, base + 43, 0, 5);
}

void cmc_put_req(struct cm_req_msg *m, const struct cmc_req *f)
{
	cmc_w32(m, 0, f->local_comm_id);
	cmc_w24(m, 5, f->vendor_id);
	cmc_w64(m, 8, f->service_id);
	cmc_w64(m, 16, f->local_ca_guid);
	cmc_w32(m, 28, f->local_qkey);
	cmc_w24(m, 32, f->local_qpn);
	*cmc_at(m, 35) = f->resp_resources;
	cmc_w24(m, 36, f->local_eecn);
	*cmc_at(m, 39) = f->init_depth;
	cmc_w24(m, 40, f->remote_eecn);
	cmc_wbits(m, 43, 0, 5, f->remote_resp_timeout);
	cmc_wbits(m, 43, 5, 2, f->transport);
	cmc_wbits(m, 43, 7, 1, f->flow_ctrl);
	cmc_w24(m, 44, f->starting_psn);
	cmc_wbits(m, 47, 0, 5, f->local_resp_timeout);
	cmc_wbits(m, 47, 5, 3, f->retry_count);
	cmc_w16(m, 48, f->pkey);
	cmc_wbits(m, 50, 0, 4, f->mtu);
	cmc_wbits(m, 50, 4, 1, f->rdc_exists);
	cmc_wbits(m, 50, 5, 3, f->rnr_retry);
	cmc_wbits(m, 51, 0, 4, f->max_cm_retries);
	cmc_wbits(m, 51, 4, 1, f->srq);
	cmc_wbits(m, 51, 5, 3, f->ext_transport);
	cmc_put_path(m, CMC_REQ_PRIMARY, &f->primary);
	cmc_put_path(m, CMC_REQ_ALT, &f->alt);
	cmc_wbits(m, CMC_REQ_ALT + 43, 5, 1, f->sap_supported);
	cmc_wmem(m, 140, f->pdata, f->pdata_len, IB_CM_REQ_PRIVATE_DATA_SIZE);
}

void cmc_get_req(const struct cm_req_msg *m, struct cmc_req *f)
{
	f->local_comm_id = cmc_r32(m, 0);
	f->vendor_id = cmc_r24(m, 5);
	f->service_id = cmc_r64(m, 8);
	f->local_ca_guid = cmc_r64(m, 16);
	f->local_qkey = cmc_r32(m, 28);
	f->local_qpn = cmc_r24(m, 32);
	f->resp_resources = *cmc_cat(m, 35);
	f->local_eecn = cmc_r24(m, 36);
	f->init_depth = *cmc_cat(m, 39);
	f->remote_eecn = cmc_r24(m, 40);
	f->remote_resp_timeout = cmc_rbits(m, 43, 0, 5);
	f->transport = cmc_rbits(m, 43, 5, 2);
	f->flow_ctrl = cmc_rbits(m, 43, 7, 1);
	f->starting_psn = cmc_r24(m, 44);
	f->local_resp_timeout = cmc_rbits(m, 47, 0, 5);
	f->retry_count = cmc_rbits(m, 47, 5, 3);
	f->pkey = cmc_r16(m, 48);
	f->mtu = cmc_rbits(m, 50, 0, 4);
	f->rdc_exists = cmc_rbits(m, 50, 4, 1);
	f->rnr_retry = cmc_rbits(m, 50, 5, 3);
	f->max_cm_retries = cmc_rbits(m, 51, 0, 4);
	f->srq = cmc_rbits(m, 51, 4, 1);
	f->ext_transport = cmc_rbits(m, 51, 5, 3);
	cmc_get_path(m, CMC_REQ_PRIMARY, &f->primary);
	cmc_get_path(m, CMC_REQ_ALT, &f->alt);
	f->sap_supported = cmc_rbits(m, CMC_REQ_ALT + 43, 5, 1);
	f->pdata = cmc_cat(m, 140);
	f->pdata_len = IB_CM_REQ_PRIVATE_DATA_SIZE;
}

/*
 * A REQ carries an alternate path when its alternate local LID is set, or,
 * for OPA-style addressing without a LID, when the alternate GID is set.
 */
bool cmc_req_has_alt(const struct cm_req_msg *m)
{
	return cmc_r16(m, CMC_REQ_ALT) ||
	       ib_is_opa_gid((const union ib_gid *)cmc_cat(m, CMC_REQ_ALT + 4));
}

void cmc_put_rep(struct cm_rep_msg *m, const struct cmc_rep *f)
{
	cmc_w32(m, 0, f->local_comm_id);
	cmc_w32(m, 4, f->remote_comm_id);
	cmc_w32(m, 8, f->local_qkey);
	cmc_w24(m, 12, f->local_qpn);
	*cmc_at(m, 15) = (f->vendor_id >> 16) & 0xff;
	cmc_w24(m, 16, f->local_eecn);
	*cmc_at(m, 19) = (f->vendor_id >> 8) & 0xff;
	cmc_w24(m, 20, f->starting_psn);
	*cmc_at(m, 23) = f->vendor_id & 0xff;
	*cmc_at(m, 24) = f->resp_resources;
	*cmc_at(m, 25) = f->init_depth;
	cmc_wbits(m, 26, 0, 5, f->target_ack_delay);
	cmc_wbits(m, 26, 5, 2, f->failover);
	cmc_wbits(m, 26, 7, 1, f->flow_ctrl);
	cmc_wbits(m, 27, 0, 3, f->rnr_retry);
	cmc_wbits(m, 27, 3, 1, f->srq);
	cmc_w64(m, 28, f->local_ca_guid);
	cmc_wmem(m, 36, f->pdata, f->pdata_len, IB_CM_REP_PRIVATE_DATA_SIZE);
}

void cmc_get_rep(const struct cm_rep_msg *m, struct cmc_rep *f)
{
	f->local_comm_id = cmc_r32(m, 0);
	f->remote_comm_id = cmc_r32(m, 4);
	f->local_qkey = cmc_r32(m, 8);
	f->local_qpn = cmc_r24(m, 12);
	f->local_eecn = cmc_r24(m, 16);
	f->vendor_id = (*cmc_cat(m, 15) << 16) | (*cmc_cat(m, 19) << 8) |
		       *cmc_cat(m, 23);
	f->starting_psn = cmc_r24(m, 20);
	f->resp_resources = *cmc_cat(m, 24);
	f->init_depth = *cmc_cat(m, 25);
	f->target_ack_delay = cmc_rbits(m, 26, 0, 5);
	f->failover = cmc_rbits(m, 26, 5, 2);
	f->flow_ctrl = cmc_rbits(m, 26, 7, 1);
	f->rnr_retry = cmc_rbits(m, 27, 0, 3);
	f->srq = cmc_rbits(m, 27, 3, 1);
	f->local_ca_guid = cmc_r64(m, 28);
	f->pdata = cmc_cat(m, 36);
	f->pdata_len = IB_CM_REP_PRIVATE_DATA_SIZE;
}

void cmc_put_rej(struct cm_rej_msg *m, const struct cmc_rej *f)
{
	u8 ari_len = min_t(u8, f->ari_len, IB_CM_REJ_ARI_LENGTH);

	cmc_w32(m, 0, f->local_comm_id);
	cmc_w32(m, 4, f->remote_comm_id);
	cmc_wbits(m, 8, 0, 2, f->msg_rejected);
	if (f->ari && ari_len) {
		cmc_wbits(m, 9, 0, 7, ari_len);
		cmc_wmem(m, 12, f->ari, ari_len, IB_CM_REJ_ARI_LENGTH);
	}
	cmc_w16(m, 10, f->reason);
	cmc_wmem(m, 84, f->pdata, f->pdata_len, IB_CM_REJ_PRIVATE_DATA_SIZE);
}

void cmc_get_rej(const struct cm_rej_msg *m, struct cmc_rej *f)
{
	f->local_comm_id = cmc_r32(m, 0);
	f->remote_comm_id = cmc_r32(m, 4);
	f->msg_rejected = cmc_rbits(m, 8, 0, 2);
	f->ari_len = cmc_rbits(m, 9, 0, 7);
	f->reason = cmc_r16(m, 10);
	f->ari = cmc_cat(m, 12);
	f->pdata = cmc_cat(m, 84);
	f->pdata_len = IB_CM_REJ_PRIVATE_DATA_SIZE;
}

void cmc_put_mra(struct cm_mra_msg *m, const struct cmc_mra *f)
{
	cmc_w32(m, 0, f->local_comm_id);
	cmc_w32(m, 4, f->remote_comm_id);
	cmc_wbits(m, 8, 0, 2, f->msg_mraed);
	cmc_wbits(m, 9, 0, 5, f->service_timeout);
	cmc_wmem(m, 10, f->pdata, f->pdata_len, IB_CM_MRA_PRIVATE_DATA_SIZE);
}

void cmc_get_mra(const struct cm_mra_msg *m, struct cmc_mra *f)
{
	f->local_comm_id = cmc_r32(m, 0);
	f->remote_comm_id = cmc_r32(m, 4);
	f->msg_mraed = cmc_rbits(m, 8, 0, 2);
	f->service_timeout = cmc_rbits(m, 9, 0, 5);
	f->pdata = cmc_cat(m, 10);
	f->pdata_len = IB_CM_MRA_PRIVATE_DATA_SIZE;
}

static void cmc_put_ids(void *m, const struct cmc_ids *f, unsigned int room)
{
	cmc_w32(m, 0, f->local_comm_id);
	cmc_w32(m, 4, f->remote_comm_id);
	cmc_wmem(m, 8, f->pdata, f->pdata_len, room);
}

static void cmc_get_ids(const void *m, struct cmc_ids *f, unsigned int room)
{
	f->local_comm_id = cmc_r32(m, 0);
	f->remote_comm_id = cmc_r32(m, 4);
	f->pdata = cmc_cat(m, 8);
	f->pdata_len = room;
}

void cmc_put_rtu(struct cm_rtu_msg *m, const struct cmc_ids *f)
{
	cmc_put_ids(m, f, IB_CM_RTU_PRIVATE_DATA_SIZE);
}

void cmc_get_rtu(const struct cm_rtu_msg *m, struct cmc_ids *f)
{
	cmc_get_ids(m, f, IB_CM_RTU_PRIVATE_DATA_SIZE);
}

void cmc_put_drep(struct cm_drep_msg *m, const struct cmc_ids *f)
{
	cmc_put_ids(m, f, IB_CM_DREP_PRIVATE_DATA_SIZE);
}

void cmc_get_drep(const struct cm_drep_msg *m, struct cmc_ids *f)
{
	cmc_get_ids(m, f, IB_CM_DREP_PRIVATE_DATA_SIZE);
}

void cmc_put_dreq(struct cm_dreq_msg *m, const struct cmc_dreq *f)
{
	cmc_w32(m, 0, f->local_comm_id);
	cmc_w32(m, 4, f->remote_comm_id);
	cmc_w24(m, 8, f->remote_qpn);
	cmc_wmem(m, 12, f->pdata, f->pdata_len, IB_CM_DREQ_PRIVATE_DATA_SIZE);
}

void cmc_get_dreq(const struct cm_dreq_msg *m, struct cmc_dreq *f)
{
	f->local_comm_id = cmc_r32(m, 0);
	f->remote_comm_id = cmc_r32(m, 4);
	f->remote_qpn = cmc_r24(m, 8);
	f->pdata = cmc_cat(m, 12);
	f->pdata_len = IB_CM_DREQ_PRIVATE_DATA_SIZE;
}

void cmc_put_sidr_req(struct cm_sidr_req_msg *m, const struct cmc_sidr_req *f)
{
	cmc_w32(m, 0, f->request_id);
	cmc_w16(m, 4, f->pkey);
	cmc_w64(m, 8, f->service_id);
	cmc_wmem(m, 16, f->pdata, f->pdata_len,
		 IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE);
}

void cmc_get_sidr_req(const struct cm_sidr_req_msg *m, struct cmc_sidr_req *f)
{
	f->request_id = cmc_r32(m, 0);
	f->pkey = cmc_r16(m, 4);
	f->service_id = cmc_r64(m, 8);
	f->pdata = cmc_cat(m, 16);
	f->pdata_len = IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE;
}

void cmc_put_sidr_rep(struct cm_sidr_rep_msg *m, const struct cmc_sidr_rep *f)
{
	u8 info_len = min_t(u8, f->info_len, IB_CM_SIDR_REP_INFO_LENGTH);

	cmc_w32(m, 0, f->request_id);
	*cmc_at(m, 4) = f->status;
	cmc_w16(m, 6, (f->vendor_id >> 8) & 0xffff);
	cmc_w24(m, 8, f->qpn);
	*cmc_at(m, 11) = f->vendor_id & 0xff;
	cmc_w64(m, 12, f->service_id);
	cmc_w32(m, 20, f->qkey);
	if (f->info && info_len) {
		*cmc_at(m, 5) = info_len;
		cmc_wmem(m, 24, f->info, info_len, IB_CM_SIDR_REP_INFO_LENGTH);
	}
	cmc_wmem(m, 96, f->pdata, f->pdata_len,
		 IB_CM_SIDR_REP_PRIVATE_DATA_SIZE);
}

void cmc_get_sidr_rep(const struct cm_sidr_rep_msg *m, struct cmc_sidr_rep *f)
{
	f->request_id = cmc_r32(m, 0);
	f->status = *cmc_cat(m, 4);
	f->info_len = *cmc_cat(m, 5);
	f->vendor_id = (cmc_r16(m, 6) << 8) | *cmc_cat(m, 11);
	f->qpn = cmc_r24(m, 8);
	f->service_id = cmc_r64(m, 12);
	f->qkey = cmc_r32(m, 20);
	f->info = cmc_cat(m, 24);
	f->pdata = cmc_cat(m, 96);
	f->pdata_len = IB_CM_SIDR_REP_PRIVATE_DATA_SIZE;
}

void cmc_get_lap(const struct cm_lap_msg *m, struct cmc_lap *f)
{
	struct cmc_path *p = &f->alt;

	f->local_comm_id = cmc_r32(m, 0);
	f->remote_comm_id = cmc_r32(m, 4);
	f->remote_qpn = cmc_r24(m, 12);
	f->remote_resp_timeout = cmc_rbits(m, 15, 0, 5);
	p->local_lid = cmc_r16(m, 20);
	p->remote_lid = cmc_r16(m, 22);
	memcpy(p->local_gid.raw, cmc_cat(m, 24), 16);
	memcpy(p->remote_gid.raw, cmc_cat(m, 40), 16);
	p->flow_label = cmc_rflow(m, 56);
	p->tclass = *cmc_cat(m, 59);
	p->hop_limit = *cmc_cat(m, 60);
	p->rate = cmc_rbits(m, 61, 2, 6);
	p->sl = cmc_rbits(m, 62, 0, 4);
	p->subnet_local = cmc_rbits(m, 62, 4, 1);
	p->ack_timeout = cmc_rbits(m, 63, 0, 5);
	f->pdata = cmc_cat(m, 64);
}

void cmc_get_apr(const struct cm_apr_msg *m, struct cmc_apr *f)
{
	f->local_comm_id = cmc_r32(m, 0);
	f->remote_comm_id = cmc_r32(m, 4);
	f->info_len = *cmc_cat(m, 8);
	f->status = *cmc_cat(m, 9);
	f->info = cmc_cat(m, 12);
	f->pdata = cmc_cat(m, 84);
}

/*
 * Paths inside a REQ or LAP.  A path block names both ends by GID and LID
 * as its sender sees them.  OPA fabrics use 32-bit LIDs, which do not fit
 * the 16-bit LID fields: when either end's LID is extended, the sender
 * puts zero in the LID fields of a subnet-local path and carries each LID
 * in the low 32 bits of that end's GID interface ID, under the OPA OUI.
 */

/**
 * cmc_path_from_sa() - fill a REQ path block from the sender's path record
 * @w: the block to fill
 * @p: the path, from the sender (this side) to the peer
 * @inbound_dlid: on a routed path, our LID as the peer addresses us (from
 *	the inbound path record), or the permissive LID when unknown
 * @ack_delay: this CA's ACK delay, for the local ACK timeout
 *
 * A subnet-local path (hop limit 0 or 1) carries both LIDs; across routers
 * the peer's LID is not known here and the permissive LID stands for it.
 */
void cmc_path_from_sa(struct cmc_path *w, struct sa_path_rec *p,
		      u16 inbound_dlid, u8 ack_delay)
{
	bool ext = p->rec_type == SA_PATH_REC_TYPE_OPA &&
		   opa_is_extended_lid(p->opa.dlid, p->opa.slid);

	w->local_gid = p->sgid;
	w->remote_gid = p->dgid;
	if (ext) {
		w->local_gid.global.interface_id =
			OPA_MAKE_ID(be32_to_cpu(p->opa.slid));
		w->remote_gid.global.interface_id =
			OPA_MAKE_ID(be32_to_cpu(p->opa.dlid));
	}
	w->subnet_local = p->hop_limit <= 1;
	if (w->subnet_local) {
		w->local_lid = ext ? 0 :
			be32_to_cpu(sa_path_get_slid(p)) & 0xffff;
		w->remote_lid = ext ? 0 :
			be32_to_cpu(sa_path_get_dlid(p)) & 0xffff;
	} else {
		w->local_lid = inbound_dlid;
		w->remote_lid = be16_to_cpu(IB_LID_PERMISSIVE);
	}
	w->flow_label = be32_to_cpu(p->flow_label);
	w->rate = p->rate;
	w->tclass = p->traffic_class;
	w->hop_limit = p->hop_limit;
	w->sl = p->sl;
	w->ack_timeout = cmc_ack_timeout(ack_delay, p->packet_life_time);
}

/**
 * cmc_path_type() - the record type for a path a peer proposed over IB
 * @peer_gid: the peer's GID in the path block
 * @opa_ah: the receiving port builds OPA address handles
 *
 * Return: SA_PATH_REC_TYPE_OPA when the peer's GID carries an OPA LID and
 * this port can address it, else SA_PATH_REC_TYPE_IB.
 */
enum sa_path_rec_type cmc_path_type(const union ib_gid *peer_gid, bool opa_ah)
{
	return opa_ah && ib_is_opa_gid(peer_gid) ? SA_PATH_REC_TYPE_OPA :
						   SA_PATH_REC_TYPE_IB;
}

/**
 * cmc_path_to_sa() - the addressing of a received path block, seen from here
 * @w: the block, as its sender filled it
 * @p: the record to fill; its rec_type says what it is
 * @dlid: IB only: the peer's LID as we address it
 *
 * The sender's "local" end is our destination.  RoCE records carry no
 * LIDs; OPA ones take both from the GIDs; IB ones take the source LID from
 * the block and the destination LID from @dlid (the primary path's comes
 * from the work completion, which is right behind a router too).
 */
void cmc_path_to_sa(const struct cmc_path *w, struct sa_path_rec *p, u32 dlid)
{
	p->sgid = w->remote_gid;
	p->dgid = w->local_gid;
	p->flow_label = cpu_to_be32(w->flow_label);
	p->rate = w->rate;
	p->traffic_class = w->tclass;
	p->hop_limit = w->hop_limit;
	p->sl = w->sl;
	/* The ACK timeout covers a round trip: one lifetime less. */
	p->packet_life_time = w->ack_timeout ? w->ack_timeout - 1 : 0;
	p->reversible = 1;
	p->rate_selector = IB_SA_EQ;
	p->packet_life_time_selector = IB_SA_EQ;
	p->mtu_selector = IB_SA_EQ;

	if (sa_path_is_roce(p)) {
		p->roce.route_resolved = false;
	} else if (p->rec_type == SA_PATH_REC_TYPE_OPA) {
		sa_path_set_dlid(p, opa_get_lid_from_gid(&w->local_gid));
		sa_path_set_slid(p, opa_get_lid_from_gid(&w->remote_gid));
	} else {
		sa_path_set_dlid(p, dlid);
		sa_path_set_slid(p, w->remote_lid);
	}
}

/*
 * Local ACK timeout for a path: the wire value encodes 4.096us * 2^t and
 * must cover the remote CA's ACK delay plus a round trip (two packet
 * lifetimes, i.e. lifetime + 1).  The sum of two powers of two is
 * approximated by the larger exponent, bumped by one when the smaller term
 * is at least half of the larger one.
 */
u8 cmc_ack_timeout(u8 ca_ack_delay, u8 packet_life_time)
{
	unsigned int trip = packet_life_time + 1;
	unsigned int big = max_t(unsigned int, trip, ca_ack_delay);
	unsigned int small = min_t(unsigned int, trip, ca_ack_delay);

	if (small + 1 >= big)
		big++;
	return min_t(unsigned int, big, 31);
}

/* 4.096us * 2^t, rounded to milliseconds as 2^(t - 8) (at least 1 ms). */
unsigned int cmc_iba_time_to_ms(u8 iba_time)
{
	unsigned int t = min_t(unsigned int, iba_time, 31);

	return 1U << (t > 8 ? t - 8 : 0);
}
