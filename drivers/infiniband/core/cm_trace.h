/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Tracepoints of ib_cm.ko.  They keep the trace system and event names of
 * the stock connection manager ("ib_cma", icm_*), so existing tracing
 * recipes keep working; the recorded fields are not the same.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM ib_cma

#if !defined(IB_CM_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define IB_CM_TRACE_H

#include <linux/tracepoint.h>
#include <rdma/ib_cm.h>

/* Snapshot of a cm_id: IDs in host order, service ID and both states. */
DECLARE_EVENT_CLASS(icm_id_class,
		    TP_PROTO(const struct ib_cm_id *cm_id),
		    TP_ARGS(cm_id),
		    TP_STRUCT__entry(__field(u32, lid)
				     __field(u32, rid)
				     __field(u64, sid)
				     __field(u8, st)
				     __field(u8, lap)),
		    TP_fast_assign(__entry->lid = be32_to_cpu(cm_id->local_id);
				   __entry->rid = be32_to_cpu(cm_id->remote_id);
				   __entry->sid = be64_to_cpu(cm_id->service_id);
				   __entry->st = cm_id->state;
				   __entry->lap = cm_id->lap_state;),
		    TP_printk("cm_id %08x<->%08x sid 0x%016llx state %u lap %u",
			      __entry->lid, __entry->rid, __entry->sid, __entry->st,
			      __entry->lap)
);

#define ICM_ID_EVENT(evname)						\
	DEFINE_EVENT(icm_id_class, evname,				\
		     TP_PROTO(const struct ib_cm_id *cm_id),		\
		     TP_ARGS(cm_id))

ICM_ID_EVENT(icm_send_req);
ICM_ID_EVENT(icm_send_rep);
ICM_ID_EVENT(icm_send_dup_req);
ICM_ID_EVENT(icm_send_dup_rep);
ICM_ID_EVENT(icm_send_rtu);
ICM_ID_EVENT(icm_send_mra);
ICM_ID_EVENT(icm_send_sidr_req);
ICM_ID_EVENT(icm_send_sidr_rep);
ICM_ID_EVENT(icm_send_dreq);
ICM_ID_EVENT(icm_send_drep);
ICM_ID_EVENT(icm_no_listener_err);
ICM_ID_EVENT(icm_establish_err);
ICM_ID_EVENT(icm_dreq_skipped);
ICM_ID_EVENT(icm_qp_init_err);
ICM_ID_EVENT(icm_qp_rtr_err);
ICM_ID_EVENT(icm_qp_rts_err);

/* Messages answered without a cm_id: the IDs as carried on the wire. */
DECLARE_EVENT_CLASS(icm_wire_class,
		    TP_PROTO(u32 sender_id, u32 receiver_id),
		    TP_ARGS(sender_id, receiver_id),
		    TP_STRUCT__entry(__field(u32, snd)
				     __field(u32, rcv)),
		    TP_fast_assign(__entry->snd = sender_id;
				   __entry->rcv = receiver_id;),
		    TP_printk("sender %08x receiver %08x", __entry->snd, __entry->rcv)
);

#define ICM_WIRE_EVENT(evname)						\
	DEFINE_EVENT(icm_wire_class, evname,				\
		     TP_PROTO(u32 sender_id, u32 receiver_id),		\
		     TP_ARGS(sender_id, receiver_id))

ICM_WIRE_EVENT(icm_issue_rej);
ICM_WIRE_EVENT(icm_issue_drep);
ICM_WIRE_EVENT(icm_staleconn_err);
ICM_WIRE_EVENT(icm_no_priv_err);

/* A MAD of the CM class with an attribute no handler knows. */
TRACE_EVENT(icm_handler_err,
	    TP_PROTO(u16 attr_id),
	    TP_ARGS(attr_id),
	    TP_STRUCT__entry(__field(u16, attr)),
	    TP_fast_assign(__entry->attr = attr_id;),
	    TP_printk("no handler for attribute 0x%04x", __entry->attr)
);

/* A REP whose addressee is unknown, or that we already accepted. */
ICM_WIRE_EVENT(icm_remote_no_priv_err);
ICM_WIRE_EVENT(icm_insert_failed_err);

TRACE_EVENT(icm_mad_send_err,
	    TP_PROTO(enum ib_cm_state state, enum ib_wc_status wc_status),
	    TP_ARGS(state, wc_status),
	    TP_STRUCT__entry(__field(u8, st)
			     __field(u8, wc)),
	    TP_fast_assign(__entry->st = state;
			   __entry->wc = wc_status;),
	    TP_printk("send failed in state %u, completion status %u",
		      __entry->st, __entry->wc)
);

/* A received message that does not fit the state of its cm_id. */
ICM_ID_EVENT(icm_rep_unknown_err);
ICM_ID_EVENT(icm_dreq_unknown_err);
ICM_ID_EVENT(icm_rej_unknown_err);
ICM_ID_EVENT(icm_mra_unknown_err);

/*
 * A cm_id and one number: the reason of a REJ we send, or the error of a
 * send verb refused in the ID's state (or failing to go out).
 */
DECLARE_EVENT_CLASS(icm_id_num_class,
		    TP_PROTO(const struct ib_cm_id *cm_id, int num),
		    TP_ARGS(cm_id, num),
		    TP_STRUCT__entry(__field(u32, lid)
				     __field(u32, rid)
				     __field(u8, st)
				     __field(int, num)),
		    TP_fast_assign(__entry->lid = be32_to_cpu(cm_id->local_id);
				   __entry->rid = be32_to_cpu(cm_id->remote_id);
				   __entry->st = cm_id->state;
				   __entry->num = num;),
		    TP_printk("cm_id %08x<->%08x state %u error %d",
			      __entry->lid, __entry->rid, __entry->st,
			      __entry->num)
);

DEFINE_EVENT_PRINT(icm_id_num_class, icm_send_rej,
		   TP_PROTO(const struct ib_cm_id *cm_id, int num),
		   TP_ARGS(cm_id, num),
		   TP_printk("cm_id %08x<->%08x state %u reason %d",
			     __entry->lid, __entry->rid, __entry->st,
			     __entry->num));

#define ICM_SEND_ERR_EVENT(evname)					\
	DEFINE_EVENT(icm_id_num_class, evname,				\
		     TP_PROTO(const struct ib_cm_id *cm_id, int num),	\
		     TP_ARGS(cm_id, num))

ICM_SEND_ERR_EVENT(icm_send_rep_err);
ICM_SEND_ERR_EVENT(icm_send_cm_rtu_err);
ICM_SEND_ERR_EVENT(icm_send_drep_err);
ICM_SEND_ERR_EVENT(icm_send_unknown_rej_err);
ICM_SEND_ERR_EVENT(icm_send_mra_unknown_err);

#endif /* IB_CM_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE cm_trace

#include <trace/define_trace.h>
