// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * IBTA vol 1 chapter 12 messages, written and read through the field
 * descriptors of <rdma/ibta_vol1_c12.h>: every field is named as the
 * specification's tables name it (CM_REQ_LOCAL_COMM_ID, ...), and its
 * byte offset, bit position and width are those the kernel defines for
 * it.  Every field this codec handles has a descriptor there, in 6.1 and
 * in 6.12 alike; the common MAD header has none and is written through
 * struct ib_mad_hdr.
 */
#include <linux/kernel.h>
#include <linux/string.h>

#include <rdma/opa_addr.h>

#include "cm_codec.h"

/*
 * Byte fields (private data, ARI, GIDs) as iba.h locates them, for what
 * iba.h does not offer: besides the field's size (CMC_MEM_SIZE()), a
 * read-only pointer into a const message, and a copy cut to the field's
 * size.  The pointer also checks at build time that the descriptor is of
 * a byte field.
 */
#define CMC_GET_MEM_CPTR(field, ptr) _CMC_GET_MEM_CPTR(field, ptr)
#define _CMC_GET_MEM_CPTR(field_struct, field_offset, type, num_bits, ptr) \
	({								\
		const typeof(field_struct) *_cptr = (ptr);		\
									\
		(const type *)((const u8 *)_cptr + (field_offset) +	\
			       BUILD_BUG_ON_ZERO((num_bits) % 8));	\
	})

#define CMC_SET_MEM(field, ptr, src, len) _CMC_SET_MEM(field, ptr, src, len)
#define _CMC_SET_MEM(field_struct, field_offset, type, num_bits, ptr, src, \
		     len)						\
	({								\
		typeof(field_struct) *_sptr = (ptr);			\
		const type *_src = (src);				\
									\
		cmc_copy_in((u8 *)_sptr + (field_offset), (num_bits) / 8, \
			    _src, len);					\
	})

/* Copy @len bytes of @src, at most @room, into a field; none without data. */
static void cmc_copy_in(void *field, unsigned int room, const void *src,
			unsigned int len)
{
	if (src && len)
		memcpy(field, src, min(len, room));
}

/* The API's sizes are those of the fields. */
static_assert(CMC_MEM_SIZE(CM_REQ_PRIVATE_DATA) == IB_CM_REQ_PRIVATE_DATA_SIZE);
static_assert(CMC_MEM_SIZE(CM_MRA_PRIVATE_DATA) == IB_CM_MRA_PRIVATE_DATA_SIZE);
static_assert(CMC_MEM_SIZE(CM_REJ_ARI) == IB_CM_REJ_ARI_LENGTH);
static_assert(CMC_MEM_SIZE(CM_REJ_PRIVATE_DATA) == IB_CM_REJ_PRIVATE_DATA_SIZE);
static_assert(CMC_MEM_SIZE(CM_REP_PRIVATE_DATA) == IB_CM_REP_PRIVATE_DATA_SIZE);
static_assert(CMC_MEM_SIZE(CM_RTU_PRIVATE_DATA) == IB_CM_RTU_PRIVATE_DATA_SIZE);
static_assert(CMC_MEM_SIZE(CM_DREQ_PRIVATE_DATA) ==
	      IB_CM_DREQ_PRIVATE_DATA_SIZE);
static_assert(CMC_MEM_SIZE(CM_DREP_PRIVATE_DATA) ==
	      IB_CM_DREP_PRIVATE_DATA_SIZE);
static_assert(CMC_MEM_SIZE(CM_LAP_PRIVATE_DATA) == IB_CM_LAP_PRIVATE_DATA_SIZE);
static_assert(CMC_MEM_SIZE(CM_APR_ADDITIONAL_INFORMATION) ==
	      IB_CM_APR_INFO_LENGTH);
static_assert(CMC_MEM_SIZE(CM_APR_PRIVATE_DATA) == IB_CM_APR_PRIVATE_DATA_SIZE);
static_assert(CMC_MEM_SIZE(CM_SIDR_REQ_PRIVATE_DATA) ==
	      IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE);
static_assert(CMC_MEM_SIZE(CM_SIDR_REP_ADDITIONAL_INFORMATION) ==
	      IB_CM_SIDR_REP_INFO_LENGTH);
static_assert(CMC_MEM_SIZE(CM_SIDR_REP_PRIVATE_DATA) ==
	      IB_CM_SIDR_REP_PRIVATE_DATA_SIZE);

/**
 * cmc_put_hdr() - write the common MAD header of a CM message
 * @hdr: the MAD's header
 * @attr_id: the message's attribute ID (CM_REQ_ATTR_ID, ...)
 * @tid: the transaction ID, as it goes on the wire
 * @attr_mod: the attribute modifier, in host order
 *
 * Sets the base and class versions, the CM class and the Send method too.
 */
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
EXPORT_SYMBOL_FOR_CM_TEST(cmc_put_hdr);

/**
 * cmc_qp_type_to_wire() - the transport service type a REQ gives a QP type
 * @qpt: the QP type of the connection
 * @transport: set to the Transport Service Type field
 * @ext: set to the Extended Transport Type field
 *
 * Return: 0, or -EINVAL for a QP type that makes no CM connection.
 */
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
EXPORT_SYMBOL_FOR_CM_TEST(cmc_qp_type_to_wire);

/**
 * cmc_qp_type_from_wire() - the QP type a received REQ asks for
 * @transport: its Transport Service Type field
 * @ext: its Extended Transport Type field
 *
 * Return: IB_QPT_RC, IB_QPT_UC, IB_QPT_XRC_TGT (the target side of an
 * XRC connection), or 0 for a transport the CM does not connect.
 */
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
EXPORT_SYMBOL_FOR_CM_TEST(cmc_qp_type_from_wire);

/*
 * A path block (the REQ's primary and alternate paths, the LAP's
 * alternate path) has the same fields under each of its three prefixes:
 * @blk is REQ_PRIMARY, REQ_ALTERNATE or LAP_ALTERNATE, pasted into the
 * descriptor names (CM_REQ_PRIMARY_SL, ...).
 */
#define CMC_PUT_PATH(msg, blk, path) do {				\
	typeof(msg) _m = (msg);						\
	const struct cmc_path *_p = (path);				\
									\
	IBA_SET(CM_##blk##_LOCAL_PORT_LID, _m, _p->local_lid);		\
	IBA_SET(CM_##blk##_REMOTE_PORT_LID, _m, _p->remote_lid);	\
	IBA_SET_MEM(CM_##blk##_LOCAL_PORT_GID, _m, &_p->local_gid,	\
		    sizeof(_p->local_gid));				\
	IBA_SET_MEM(CM_##blk##_REMOTE_PORT_GID, _m, &_p->remote_gid,	\
		    sizeof(_p->remote_gid));				\
	IBA_SET(CM_##blk##_FLOW_LABEL, _m, _p->flow_label);		\
	IBA_SET(CM_##blk##_PACKET_RATE, _m, _p->rate);			\
	IBA_SET(CM_##blk##_TRAFFIC_CLASS, _m, _p->tclass);		\
	IBA_SET(CM_##blk##_HOP_LIMIT, _m, _p->hop_limit);		\
	IBA_SET(CM_##blk##_SL, _m, _p->sl);				\
	IBA_SET(CM_##blk##_SUBNET_LOCAL, _m, _p->subnet_local);		\
	IBA_SET(CM_##blk##_LOCAL_ACK_TIMEOUT, _m, _p->ack_timeout);	\
} while (0)

#define CMC_GET_PATH(msg, blk, path) do {				\
	typeof(msg) _m = (msg);						\
	struct cmc_path *_p = (path);					\
									\
	_p->local_lid = IBA_GET(CM_##blk##_LOCAL_PORT_LID, _m);		\
	_p->remote_lid = IBA_GET(CM_##blk##_REMOTE_PORT_LID, _m);	\
	memcpy(&_p->local_gid,						\
	       CMC_GET_MEM_CPTR(CM_##blk##_LOCAL_PORT_GID, _m),		\
	       sizeof(_p->local_gid));					\
	memcpy(&_p->remote_gid,						\
	       CMC_GET_MEM_CPTR(CM_##blk##_REMOTE_PORT_GID, _m),	\
	       sizeof(_p->remote_gid));					\
	_p->flow_label = IBA_GET(CM_##blk##_FLOW_LABEL, _m);		\
	_p->rate = IBA_GET(CM_##blk##_PACKET_RATE, _m);			\
	_p->tclass = IBA_GET(CM_##blk##_TRAFFIC_CLASS, _m);		\
	_p->hop_limit = IBA_GET(CM_##blk##_HOP_LIMIT, _m);		\
	_p->sl = IBA_GET(CM_##blk##_SL, _m);				\
	_p->subnet_local = IBA_GET(CM_##blk##_SUBNET_LOCAL, _m);	\
	_p->ack_timeout = IBA_GET(CM_##blk##_LOCAL_ACK_TIMEOUT, _m);	\
} while (0)

/**
 * cmc_put_req() - write the fields of a REQ into a message
 * @m: the message, zeroed
 * @f: the fields, in host order; data longer than its field is cut
 */
void cmc_put_req(struct cm_req_msg *m, const struct cmc_req *f)
{
	IBA_SET(CM_REQ_LOCAL_COMM_ID, m, f->local_comm_id);
	IBA_SET(CM_REQ_VENDOR_ID, m, f->vendor_id);
	IBA_SET(CM_REQ_SERVICE_ID, m, f->service_id);
	IBA_SET(CM_REQ_LOCAL_CA_GUID, m, f->local_ca_guid);
	IBA_SET(CM_REQ_LOCAL_Q_KEY, m, f->local_qkey);
	IBA_SET(CM_REQ_LOCAL_QPN, m, f->local_qpn);
	IBA_SET(CM_REQ_RESPONDER_RESOURCES, m, f->resp_resources);
	IBA_SET(CM_REQ_LOCAL_EECN, m, f->local_eecn);
	IBA_SET(CM_REQ_INITIATOR_DEPTH, m, f->init_depth);
	IBA_SET(CM_REQ_REMOTE_EECN, m, f->remote_eecn);
	IBA_SET(CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT, m, f->remote_resp_timeout);
	IBA_SET(CM_REQ_TRANSPORT_SERVICE_TYPE, m, f->transport);
	IBA_SET(CM_REQ_END_TO_END_FLOW_CONTROL, m, f->flow_ctrl);
	IBA_SET(CM_REQ_STARTING_PSN, m, f->starting_psn);
	IBA_SET(CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT, m, f->local_resp_timeout);
	IBA_SET(CM_REQ_RETRY_COUNT, m, f->retry_count);
	IBA_SET(CM_REQ_PARTITION_KEY, m, f->pkey);
	IBA_SET(CM_REQ_PATH_PACKET_PAYLOAD_MTU, m, f->mtu);
	IBA_SET(CM_REQ_RDC_EXISTS, m, f->rdc_exists);
	IBA_SET(CM_REQ_RNR_RETRY_COUNT, m, f->rnr_retry);
	IBA_SET(CM_REQ_MAX_CM_RETRIES, m, f->max_cm_retries);
	IBA_SET(CM_REQ_SRQ, m, f->srq);
	IBA_SET(CM_REQ_EXTENDED_TRANSPORT_TYPE, m, f->ext_transport);
	CMC_PUT_PATH(m, REQ_PRIMARY, &f->primary);
	CMC_PUT_PATH(m, REQ_ALTERNATE, &f->alt);
	IBA_SET(CM_REQ_SAP_SUPPORTED, m, f->sap_supported);
	CMC_SET_MEM(CM_REQ_PRIVATE_DATA, m, f->pdata, f->pdata_len);
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_put_req);

/**
 * cmc_get_req() - read the fields of a received REQ
 * @m: the message
 * @f: filled with the fields, in host order; its data pointers point into @m
 */
void cmc_get_req(const struct cm_req_msg *m, struct cmc_req *f)
{
	f->local_comm_id = IBA_GET(CM_REQ_LOCAL_COMM_ID, m);
	f->vendor_id = IBA_GET(CM_REQ_VENDOR_ID, m);
	f->service_id = IBA_GET(CM_REQ_SERVICE_ID, m);
	f->local_ca_guid = IBA_GET(CM_REQ_LOCAL_CA_GUID, m);
	f->local_qkey = IBA_GET(CM_REQ_LOCAL_Q_KEY, m);
	f->local_qpn = IBA_GET(CM_REQ_LOCAL_QPN, m);
	f->resp_resources = IBA_GET(CM_REQ_RESPONDER_RESOURCES, m);
	f->local_eecn = IBA_GET(CM_REQ_LOCAL_EECN, m);
	f->init_depth = IBA_GET(CM_REQ_INITIATOR_DEPTH, m);
	f->remote_eecn = IBA_GET(CM_REQ_REMOTE_EECN, m);
	f->remote_resp_timeout = IBA_GET(CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT, m);
	f->transport = IBA_GET(CM_REQ_TRANSPORT_SERVICE_TYPE, m);
	f->flow_ctrl = IBA_GET(CM_REQ_END_TO_END_FLOW_CONTROL, m);
	f->starting_psn = IBA_GET(CM_REQ_STARTING_PSN, m);
	f->local_resp_timeout = IBA_GET(CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT, m);
	f->retry_count = IBA_GET(CM_REQ_RETRY_COUNT, m);
	f->pkey = IBA_GET(CM_REQ_PARTITION_KEY, m);
	f->mtu = IBA_GET(CM_REQ_PATH_PACKET_PAYLOAD_MTU, m);
	f->rdc_exists = IBA_GET(CM_REQ_RDC_EXISTS, m);
	f->rnr_retry = IBA_GET(CM_REQ_RNR_RETRY_COUNT, m);
	f->max_cm_retries = IBA_GET(CM_REQ_MAX_CM_RETRIES, m);
	f->srq = IBA_GET(CM_REQ_SRQ, m);
	f->ext_transport = IBA_GET(CM_REQ_EXTENDED_TRANSPORT_TYPE, m);
	CMC_GET_PATH(m, REQ_PRIMARY, &f->primary);
	CMC_GET_PATH(m, REQ_ALTERNATE, &f->alt);
	f->sap_supported = IBA_GET(CM_REQ_SAP_SUPPORTED, m);
	f->pdata = CMC_GET_MEM_CPTR(CM_REQ_PRIVATE_DATA, m);
	f->pdata_len = IB_CM_REQ_PRIVATE_DATA_SIZE;
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_get_req);

/**
 * cmc_req_has_alt() - whether a REQ carries an alternate path
 * @m: the REQ
 *
 * Return: true when its alternate local LID is set or, for OPA-style
 * addressing without a LID, when its alternate local GID is an OPA GID.
 */
bool cmc_req_has_alt(const struct cm_req_msg *m)
{
	return IBA_GET(CM_REQ_ALTERNATE_LOCAL_PORT_LID, m) ||
	       ib_is_opa_gid(CMC_GET_MEM_CPTR(CM_REQ_ALTERNATE_LOCAL_PORT_GID,
					      m));
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_req_has_alt);

/**
 * cmc_put_rep() - write the fields of a REP into a message
 * @m: the message, zeroed
 * @f: the fields, in host order; data longer than its field is cut
 *
 * The 24-bit Vendor ID is split into three bytes (H, M, L).
 */
void cmc_put_rep(struct cm_rep_msg *m, const struct cmc_rep *f)
{
	IBA_SET(CM_REP_LOCAL_COMM_ID, m, f->local_comm_id);
	IBA_SET(CM_REP_REMOTE_COMM_ID, m, f->remote_comm_id);
	IBA_SET(CM_REP_LOCAL_Q_KEY, m, f->local_qkey);
	IBA_SET(CM_REP_LOCAL_QPN, m, f->local_qpn);
	IBA_SET(CM_REP_VENDOR_ID_H, m, (f->vendor_id >> 16) & 0xff);
	IBA_SET(CM_REP_LOCAL_EE_CONTEXT_NUMBER, m, f->local_eecn);
	IBA_SET(CM_REP_VENDOR_ID_M, m, (f->vendor_id >> 8) & 0xff);
	IBA_SET(CM_REP_STARTING_PSN, m, f->starting_psn);
	IBA_SET(CM_REP_VENDOR_ID_L, m, f->vendor_id & 0xff);
	IBA_SET(CM_REP_RESPONDER_RESOURCES, m, f->resp_resources);
	IBA_SET(CM_REP_INITIATOR_DEPTH, m, f->init_depth);
	IBA_SET(CM_REP_TARGET_ACK_DELAY, m, f->target_ack_delay);
	IBA_SET(CM_REP_FAILOVER_ACCEPTED, m, f->failover);
	IBA_SET(CM_REP_END_TO_END_FLOW_CONTROL, m, f->flow_ctrl);
	IBA_SET(CM_REP_RNR_RETRY_COUNT, m, f->rnr_retry);
	IBA_SET(CM_REP_SRQ, m, f->srq);
	IBA_SET(CM_REP_LOCAL_CA_GUID, m, f->local_ca_guid);
	CMC_SET_MEM(CM_REP_PRIVATE_DATA, m, f->pdata, f->pdata_len);
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_put_rep);

/**
 * cmc_get_rep() - read the fields of a received REP
 * @m: the message
 * @f: filled with the fields, in host order; its data pointers point into @m
 */
void cmc_get_rep(const struct cm_rep_msg *m, struct cmc_rep *f)
{
	f->local_comm_id = IBA_GET(CM_REP_LOCAL_COMM_ID, m);
	f->remote_comm_id = IBA_GET(CM_REP_REMOTE_COMM_ID, m);
	f->local_qkey = IBA_GET(CM_REP_LOCAL_Q_KEY, m);
	f->local_qpn = IBA_GET(CM_REP_LOCAL_QPN, m);
	f->local_eecn = IBA_GET(CM_REP_LOCAL_EE_CONTEXT_NUMBER, m);
	f->vendor_id = IBA_GET(CM_REP_VENDOR_ID_H, m) << 16 |
		       IBA_GET(CM_REP_VENDOR_ID_M, m) << 8 |
		       IBA_GET(CM_REP_VENDOR_ID_L, m);
	f->starting_psn = IBA_GET(CM_REP_STARTING_PSN, m);
	f->resp_resources = IBA_GET(CM_REP_RESPONDER_RESOURCES, m);
	f->init_depth = IBA_GET(CM_REP_INITIATOR_DEPTH, m);
	f->target_ack_delay = IBA_GET(CM_REP_TARGET_ACK_DELAY, m);
	f->failover = IBA_GET(CM_REP_FAILOVER_ACCEPTED, m);
	f->flow_ctrl = IBA_GET(CM_REP_END_TO_END_FLOW_CONTROL, m);
	f->rnr_retry = IBA_GET(CM_REP_RNR_RETRY_COUNT, m);
	f->srq = IBA_GET(CM_REP_SRQ, m);
	f->local_ca_guid = IBA_GET(CM_REP_LOCAL_CA_GUID, m);
	f->pdata = CMC_GET_MEM_CPTR(CM_REP_PRIVATE_DATA, m);
	f->pdata_len = IB_CM_REP_PRIVATE_DATA_SIZE;
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_get_rep);

/**
 * cmc_put_rej() - write the fields of a REJ into a message
 * @m: the message, zeroed
 * @f: the fields, in host order; data longer than its field is cut
 */
void cmc_put_rej(struct cm_rej_msg *m, const struct cmc_rej *f)
{
	u8 ari_len = min_t(u8, f->ari_len, IB_CM_REJ_ARI_LENGTH);

	IBA_SET(CM_REJ_LOCAL_COMM_ID, m, f->local_comm_id);
	IBA_SET(CM_REJ_REMOTE_COMM_ID, m, f->remote_comm_id);
	IBA_SET(CM_REJ_MESSAGE_REJECTED, m, f->msg_rejected);
	if (f->ari && ari_len) {
		IBA_SET(CM_REJ_REJECTED_INFO_LENGTH, m, ari_len);
		CMC_SET_MEM(CM_REJ_ARI, m, f->ari, ari_len);
	}
	IBA_SET(CM_REJ_REASON, m, f->reason);
	CMC_SET_MEM(CM_REJ_PRIVATE_DATA, m, f->pdata, f->pdata_len);
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_put_rej);

/**
 * cmc_get_rej() - read the fields of a received REJ
 * @m: the message
 * @f: filled with the fields, in host order; its data pointers point into @m
 */
void cmc_get_rej(const struct cm_rej_msg *m, struct cmc_rej *f)
{
	f->local_comm_id = IBA_GET(CM_REJ_LOCAL_COMM_ID, m);
	f->remote_comm_id = IBA_GET(CM_REJ_REMOTE_COMM_ID, m);
	f->msg_rejected = IBA_GET(CM_REJ_MESSAGE_REJECTED, m);
	f->ari_len = IBA_GET(CM_REJ_REJECTED_INFO_LENGTH, m);
	f->reason = IBA_GET(CM_REJ_REASON, m);
	f->ari = CMC_GET_MEM_CPTR(CM_REJ_ARI, m);
	f->pdata = CMC_GET_MEM_CPTR(CM_REJ_PRIVATE_DATA, m);
	f->pdata_len = IB_CM_REJ_PRIVATE_DATA_SIZE;
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_get_rej);

/**
 * cmc_put_mra() - write the fields of a MRA into a message
 * @m: the message, zeroed
 * @f: the fields, in host order; data longer than its field is cut
 */
void cmc_put_mra(struct cm_mra_msg *m, const struct cmc_mra *f)
{
	IBA_SET(CM_MRA_LOCAL_COMM_ID, m, f->local_comm_id);
	IBA_SET(CM_MRA_REMOTE_COMM_ID, m, f->remote_comm_id);
	IBA_SET(CM_MRA_MESSAGE_MRAED, m, f->msg_mraed);
	IBA_SET(CM_MRA_SERVICE_TIMEOUT, m, f->service_timeout);
	CMC_SET_MEM(CM_MRA_PRIVATE_DATA, m, f->pdata, f->pdata_len);
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_put_mra);

/**
 * cmc_get_mra() - read the fields of a received MRA
 * @m: the message
 * @f: filled with the fields, in host order; its data pointers point into @m
 */
void cmc_get_mra(const struct cm_mra_msg *m, struct cmc_mra *f)
{
	f->local_comm_id = IBA_GET(CM_MRA_LOCAL_COMM_ID, m);
	f->remote_comm_id = IBA_GET(CM_MRA_REMOTE_COMM_ID, m);
	f->msg_mraed = IBA_GET(CM_MRA_MESSAGE_MRAED, m);
	f->service_timeout = IBA_GET(CM_MRA_SERVICE_TIMEOUT, m);
	f->pdata = CMC_GET_MEM_CPTR(CM_MRA_PRIVATE_DATA, m);
	f->pdata_len = IB_CM_MRA_PRIVATE_DATA_SIZE;
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_get_mra);

/**
 * cmc_put_rtu() - write the fields of a RTU into a message
 * @m: the message, zeroed
 * @f: the fields, in host order; data longer than its field is cut
 */
void cmc_put_rtu(struct cm_rtu_msg *m, const struct cmc_ids *f)
{
	IBA_SET(CM_RTU_LOCAL_COMM_ID, m, f->local_comm_id);
	IBA_SET(CM_RTU_REMOTE_COMM_ID, m, f->remote_comm_id);
	CMC_SET_MEM(CM_RTU_PRIVATE_DATA, m, f->pdata, f->pdata_len);
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_put_rtu);

/**
 * cmc_get_rtu() - read the fields of a received RTU
 * @m: the message
 * @f: filled with the fields, in host order; its data pointers point into @m
 */
void cmc_get_rtu(const struct cm_rtu_msg *m, struct cmc_ids *f)
{
	f->local_comm_id = IBA_GET(CM_RTU_LOCAL_COMM_ID, m);
	f->remote_comm_id = IBA_GET(CM_RTU_REMOTE_COMM_ID, m);
	f->pdata = CMC_GET_MEM_CPTR(CM_RTU_PRIVATE_DATA, m);
	f->pdata_len = IB_CM_RTU_PRIVATE_DATA_SIZE;
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_get_rtu);

/**
 * cmc_put_drep() - write the fields of a DREP into a message
 * @m: the message, zeroed
 * @f: the fields, in host order; data longer than its field is cut
 */
void cmc_put_drep(struct cm_drep_msg *m, const struct cmc_ids *f)
{
	IBA_SET(CM_DREP_LOCAL_COMM_ID, m, f->local_comm_id);
	IBA_SET(CM_DREP_REMOTE_COMM_ID, m, f->remote_comm_id);
	CMC_SET_MEM(CM_DREP_PRIVATE_DATA, m, f->pdata, f->pdata_len);
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_put_drep);

/**
 * cmc_get_drep() - read the fields of a received DREP
 * @m: the message
 * @f: filled with the fields, in host order; its data pointers point into @m
 */
void cmc_get_drep(const struct cm_drep_msg *m, struct cmc_ids *f)
{
	f->local_comm_id = IBA_GET(CM_DREP_LOCAL_COMM_ID, m);
	f->remote_comm_id = IBA_GET(CM_DREP_REMOTE_COMM_ID, m);
	f->pdata = CMC_GET_MEM_CPTR(CM_DREP_PRIVATE_DATA, m);
	f->pdata_len = IB_CM_DREP_PRIVATE_DATA_SIZE;
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_get_drep);

/**
 * cmc_put_dreq() - write the fields of a DREQ into a message
 * @m: the message, zeroed
 * @f: the fields, in host order; data longer than its field is cut
 */
void cmc_put_dreq(struct cm_dreq_msg *m, const struct cmc_dreq *f)
{
	IBA_SET(CM_DREQ_LOCAL_COMM_ID, m, f->local_comm_id);
	IBA_SET(CM_DREQ_REMOTE_COMM_ID, m, f->remote_comm_id);
	IBA_SET(CM_DREQ_REMOTE_QPN_EECN, m, f->remote_qpn);
	CMC_SET_MEM(CM_DREQ_PRIVATE_DATA, m, f->pdata, f->pdata_len);
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_put_dreq);

/**
 * cmc_get_dreq() - read the fields of a received DREQ
 * @m: the message
 * @f: filled with the fields, in host order; its data pointers point into @m
 */
void cmc_get_dreq(const struct cm_dreq_msg *m, struct cmc_dreq *f)
{
	f->local_comm_id = IBA_GET(CM_DREQ_LOCAL_COMM_ID, m);
	f->remote_comm_id = IBA_GET(CM_DREQ_REMOTE_COMM_ID, m);
	f->remote_qpn = IBA_GET(CM_DREQ_REMOTE_QPN_EECN, m);
	f->pdata = CMC_GET_MEM_CPTR(CM_DREQ_PRIVATE_DATA, m);
	f->pdata_len = IB_CM_DREQ_PRIVATE_DATA_SIZE;
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_get_dreq);

/**
 * cmc_put_sidr_req() - write the fields of a SIDR_REQ into a message
 * @m: the message, zeroed
 * @f: the fields, in host order; data longer than its field is cut
 */
void cmc_put_sidr_req(struct cm_sidr_req_msg *m, const struct cmc_sidr_req *f)
{
	IBA_SET(CM_SIDR_REQ_REQUESTID, m, f->request_id);
	IBA_SET(CM_SIDR_REQ_PARTITION_KEY, m, f->pkey);
	IBA_SET(CM_SIDR_REQ_SERVICEID, m, f->service_id);
	CMC_SET_MEM(CM_SIDR_REQ_PRIVATE_DATA, m, f->pdata, f->pdata_len);
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_put_sidr_req);

/**
 * cmc_get_sidr_req() - read the fields of a received SIDR_REQ
 * @m: the message
 * @f: filled with the fields, in host order; its data pointers point into @m
 */
void cmc_get_sidr_req(const struct cm_sidr_req_msg *m, struct cmc_sidr_req *f)
{
	f->request_id = IBA_GET(CM_SIDR_REQ_REQUESTID, m);
	f->pkey = IBA_GET(CM_SIDR_REQ_PARTITION_KEY, m);
	f->service_id = IBA_GET(CM_SIDR_REQ_SERVICEID, m);
	f->pdata = CMC_GET_MEM_CPTR(CM_SIDR_REQ_PRIVATE_DATA, m);
	f->pdata_len = IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE;
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_get_sidr_req);

/**
 * cmc_put_sidr_rep() - write the fields of a SIDR_REP into a message
 * @m: the message, zeroed
 * @f: the fields, in host order; data longer than its field is cut
 *
 * The 24-bit Vendor ID is split into 16 high and 8 low bits.
 */
void cmc_put_sidr_rep(struct cm_sidr_rep_msg *m, const struct cmc_sidr_rep *f)
{
	u8 info_len = min_t(u8, f->info_len, IB_CM_SIDR_REP_INFO_LENGTH);

	IBA_SET(CM_SIDR_REP_REQUESTID, m, f->request_id);
	IBA_SET(CM_SIDR_REP_STATUS, m, f->status);
	IBA_SET(CM_SIDR_REP_VENDOR_ID_H, m, (f->vendor_id >> 8) & 0xffff);
	IBA_SET(CM_SIDR_REP_QPN, m, f->qpn);
	IBA_SET(CM_SIDR_REP_VENDOR_ID_L, m, f->vendor_id & 0xff);
	IBA_SET(CM_SIDR_REP_SERVICEID, m, f->service_id);
	IBA_SET(CM_SIDR_REP_Q_KEY, m, f->qkey);
	if (f->info && info_len) {
		IBA_SET(CM_SIDR_REP_ADDITIONAL_INFORMATION_LENGTH, m, info_len);
		CMC_SET_MEM(CM_SIDR_REP_ADDITIONAL_INFORMATION, m, f->info,
			    info_len);
	}
	CMC_SET_MEM(CM_SIDR_REP_PRIVATE_DATA, m, f->pdata, f->pdata_len);
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_put_sidr_rep);

/**
 * cmc_get_sidr_rep() - read the fields of a received SIDR_REP
 * @m: the message
 * @f: filled with the fields, in host order; its data pointers point into @m
 */
void cmc_get_sidr_rep(const struct cm_sidr_rep_msg *m, struct cmc_sidr_rep *f)
{
	f->request_id = IBA_GET(CM_SIDR_REP_REQUESTID, m);
	f->status = IBA_GET(CM_SIDR_REP_STATUS, m);
	f->info_len = IBA_GET(CM_SIDR_REP_ADDITIONAL_INFORMATION_LENGTH, m);
	f->vendor_id = IBA_GET(CM_SIDR_REP_VENDOR_ID_H, m) << 8 |
		       IBA_GET(CM_SIDR_REP_VENDOR_ID_L, m);
	f->qpn = IBA_GET(CM_SIDR_REP_QPN, m);
	f->service_id = IBA_GET(CM_SIDR_REP_SERVICEID, m);
	f->qkey = IBA_GET(CM_SIDR_REP_Q_KEY, m);
	f->info = CMC_GET_MEM_CPTR(CM_SIDR_REP_ADDITIONAL_INFORMATION, m);
	f->pdata = CMC_GET_MEM_CPTR(CM_SIDR_REP_PRIVATE_DATA, m);
	f->pdata_len = IB_CM_SIDR_REP_PRIVATE_DATA_SIZE;
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_get_sidr_rep);

/**
 * cmc_get_lap() - read the fields of a received LAP
 * @m: the message
 * @f: filled with the fields, in host order; its data pointers point into @m
 */
void cmc_get_lap(const struct cm_lap_msg *m, struct cmc_lap *f)
{
	f->local_comm_id = IBA_GET(CM_LAP_LOCAL_COMM_ID, m);
	f->remote_comm_id = IBA_GET(CM_LAP_REMOTE_COMM_ID, m);
	f->remote_qpn = IBA_GET(CM_LAP_REMOTE_QPN_EECN, m);
	f->remote_resp_timeout = IBA_GET(CM_LAP_REMOTE_CM_RESPONSE_TIMEOUT, m);
	CMC_GET_PATH(m, LAP_ALTERNATE, &f->alt);
	f->pdata = CMC_GET_MEM_CPTR(CM_LAP_PRIVATE_DATA, m);
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_get_lap);

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
EXPORT_SYMBOL_FOR_CM_TEST(cmc_path_from_sa);

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
EXPORT_SYMBOL_FOR_CM_TEST(cmc_path_type);

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
EXPORT_SYMBOL_FOR_CM_TEST(cmc_path_to_sa);

/**
 * cmc_ack_timeout() - the local ACK timeout for a path
 * @ca_ack_delay: the remote CA's ACK delay, as 4.096us * 2^t
 * @packet_life_time: the path's packet lifetime, as 4.096us * 2^t
 *
 * The timeout must cover the ACK delay plus a round trip (two packet
 * lifetimes, i.e. lifetime + 1).  The sum of two powers of two is
 * approximated by the larger exponent, bumped by one when the smaller term
 * is at least half of the larger one.
 *
 * Return: the timeout as 4.096us * 2^t, at most 31.
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
EXPORT_SYMBOL_FOR_CM_TEST(cmc_ack_timeout);

/**
 * cmc_iba_time_to_ms() - an IBA time value in milliseconds
 * @iba_time: 4.096us * 2^@iba_time, 31 for anything larger
 *
 * Return: 2^(@iba_time - 8), rounded, at least 1.
 */
unsigned int cmc_iba_time_to_ms(u8 iba_time)
{
	unsigned int t = min_t(unsigned int, iba_time, 31);

	return 1U << (t > 8 ? t - 8 : 0);
}
EXPORT_SYMBOL_FOR_CM_TEST(cmc_iba_time_to_ms);
