/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Tracepoints of ib_cm.ko.
 *
 * Tools written for the kernel's own connection manager read these events
 * by system, name and field, and parse their print formats.  The system
 * ("ib_cma") is the stock module's, and so are each event's name, fields
 * (name, type, order) and print format: its
 * /sys/kernel/tracing/events/ib_cma/<event>/format reads the same for
 * either module, but for the ID line.
 * tools/testing/system/ibcm_trace_parity.sh compares them.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM ib_cma

#if !defined(IB_CM_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define IB_CM_TRACE_H

#include <linux/tracepoint.h>
#include <rdma/ib_cm.h>
#include <trace/misc/rdma.h>

/*
 * The values of enum ib_cm_state, enum ib_cm_lap_state and enum
 * ib_cm_rej_reason: declared, so that a format file shows the numbers the
 * print format compares rather than the enumerators' names; then printed
 * by name.
 */
TRACE_DEFINE_ENUM(IB_CM_IDLE);
TRACE_DEFINE_ENUM(IB_CM_LISTEN);
TRACE_DEFINE_ENUM(IB_CM_REQ_SENT);
TRACE_DEFINE_ENUM(IB_CM_REQ_RCVD);
TRACE_DEFINE_ENUM(IB_CM_MRA_REQ_SENT);
TRACE_DEFINE_ENUM(IB_CM_MRA_REQ_RCVD);
TRACE_DEFINE_ENUM(IB_CM_REP_SENT);
TRACE_DEFINE_ENUM(IB_CM_REP_RCVD);
TRACE_DEFINE_ENUM(IB_CM_MRA_REP_SENT);
TRACE_DEFINE_ENUM(IB_CM_MRA_REP_RCVD);
TRACE_DEFINE_ENUM(IB_CM_ESTABLISHED);
TRACE_DEFINE_ENUM(IB_CM_DREQ_SENT);
TRACE_DEFINE_ENUM(IB_CM_DREQ_RCVD);
TRACE_DEFINE_ENUM(IB_CM_TIMEWAIT);
TRACE_DEFINE_ENUM(IB_CM_SIDR_REQ_SENT);
TRACE_DEFINE_ENUM(IB_CM_SIDR_REQ_RCVD);

TRACE_DEFINE_ENUM(IB_CM_LAP_UNINIT);
TRACE_DEFINE_ENUM(IB_CM_LAP_IDLE);
TRACE_DEFINE_ENUM(IB_CM_LAP_SENT);
TRACE_DEFINE_ENUM(IB_CM_LAP_RCVD);
TRACE_DEFINE_ENUM(IB_CM_MRA_LAP_SENT);
TRACE_DEFINE_ENUM(IB_CM_MRA_LAP_RCVD);

TRACE_DEFINE_ENUM(IB_CM_REJ_NO_QP);
TRACE_DEFINE_ENUM(IB_CM_REJ_NO_EEC);
TRACE_DEFINE_ENUM(IB_CM_REJ_NO_RESOURCES);
TRACE_DEFINE_ENUM(IB_CM_REJ_TIMEOUT);
TRACE_DEFINE_ENUM(IB_CM_REJ_UNSUPPORTED);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_COMM_ID);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_COMM_INSTANCE);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_SERVICE_ID);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_TRANSPORT_TYPE);
TRACE_DEFINE_ENUM(IB_CM_REJ_STALE_CONN);
TRACE_DEFINE_ENUM(IB_CM_REJ_RDC_NOT_EXIST);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_GID);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_LID);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_SL);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_TRAFFIC_CLASS);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_HOP_LIMIT);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_PACKET_RATE);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_ALT_GID);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_ALT_LID);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_ALT_SL);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_ALT_TRAFFIC_CLASS);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_ALT_HOP_LIMIT);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_ALT_PACKET_RATE);
TRACE_DEFINE_ENUM(IB_CM_REJ_PORT_CM_REDIRECT);
TRACE_DEFINE_ENUM(IB_CM_REJ_PORT_REDIRECT);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_MTU);
TRACE_DEFINE_ENUM(IB_CM_REJ_INSUFFICIENT_RESP_RESOURCES);
TRACE_DEFINE_ENUM(IB_CM_REJ_CONSUMER_DEFINED);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_RNR_RETRY);
TRACE_DEFINE_ENUM(IB_CM_REJ_DUPLICATE_LOCAL_COMM_ID);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_CLASS_VERSION);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_FLOW_LABEL);
TRACE_DEFINE_ENUM(IB_CM_REJ_INVALID_ALT_FLOW_LABEL);
TRACE_DEFINE_ENUM(IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED);

#define icm_show_state(x)						\
	__print_symbolic(x,						\
		{ IB_CM_IDLE, "IDLE" },					\
		{ IB_CM_LISTEN, "LISTEN" },				\
		{ IB_CM_REQ_SENT, "REQ_SENT" },				\
		{ IB_CM_REQ_RCVD, "REQ_RCVD" },				\
		{ IB_CM_MRA_REQ_SENT, "MRA_REQ_SENT" },			\
		{ IB_CM_MRA_REQ_RCVD, "MRA_REQ_RCVD" },			\
		{ IB_CM_REP_SENT, "REP_SENT" },				\
		{ IB_CM_REP_RCVD, "REP_RCVD" },				\
		{ IB_CM_MRA_REP_SENT, "MRA_REP_SENT" },			\
		{ IB_CM_MRA_REP_RCVD, "MRA_REP_RCVD" },			\
		{ IB_CM_ESTABLISHED, "ESTABLISHED" },			\
		{ IB_CM_DREQ_SENT, "DREQ_SENT" },			\
		{ IB_CM_DREQ_RCVD, "DREQ_RCVD" },			\
		{ IB_CM_TIMEWAIT, "TIMEWAIT" },				\
		{ IB_CM_SIDR_REQ_SENT, "SIDR_REQ_SENT" },		\
		{ IB_CM_SIDR_REQ_RCVD, "SIDR_REQ_RCVD" })

#define icm_show_lap_state(x)						\
	__print_symbolic(x,						\
		{ IB_CM_LAP_UNINIT, "LAP_UNINIT" },			\
		{ IB_CM_LAP_IDLE, "LAP_IDLE" },				\
		{ IB_CM_LAP_SENT, "LAP_SENT" },				\
		{ IB_CM_LAP_RCVD, "LAP_RCVD" },				\
		{ IB_CM_MRA_LAP_SENT, "MRA_LAP_SENT" },			\
		{ IB_CM_MRA_LAP_RCVD, "MRA_LAP_RCVD" })

#define icm_show_rej_reason(x)						\
	__print_symbolic(x,						\
		{ IB_CM_REJ_NO_QP, "REJ_NO_QP" },			\
		{ IB_CM_REJ_NO_EEC, "REJ_NO_EEC" },			\
		{ IB_CM_REJ_NO_RESOURCES, "REJ_NO_RESOURCES" },		\
		{ IB_CM_REJ_TIMEOUT, "REJ_TIMEOUT" },			\
		{ IB_CM_REJ_UNSUPPORTED, "REJ_UNSUPPORTED" },		\
		{ IB_CM_REJ_INVALID_COMM_ID, "REJ_INVALID_COMM_ID" },	\
		{ IB_CM_REJ_INVALID_COMM_INSTANCE, "REJ_INVALID_COMM_INSTANCE" },	\
		{ IB_CM_REJ_INVALID_SERVICE_ID, "REJ_INVALID_SERVICE_ID" },	\
		{ IB_CM_REJ_INVALID_TRANSPORT_TYPE, "REJ_INVALID_TRANSPORT_TYPE" },	\
		{ IB_CM_REJ_STALE_CONN, "REJ_STALE_CONN" },		\
		{ IB_CM_REJ_RDC_NOT_EXIST, "REJ_RDC_NOT_EXIST" },	\
		{ IB_CM_REJ_INVALID_GID, "REJ_INVALID_GID" },		\
		{ IB_CM_REJ_INVALID_LID, "REJ_INVALID_LID" },		\
		{ IB_CM_REJ_INVALID_SL, "REJ_INVALID_SL" },		\
		{ IB_CM_REJ_INVALID_TRAFFIC_CLASS, "REJ_INVALID_TRAFFIC_CLASS" },	\
		{ IB_CM_REJ_INVALID_HOP_LIMIT, "REJ_INVALID_HOP_LIMIT" },	\
		{ IB_CM_REJ_INVALID_PACKET_RATE, "REJ_INVALID_PACKET_RATE" },	\
		{ IB_CM_REJ_INVALID_ALT_GID, "REJ_INVALID_ALT_GID" },	\
		{ IB_CM_REJ_INVALID_ALT_LID, "REJ_INVALID_ALT_LID" },	\
		{ IB_CM_REJ_INVALID_ALT_SL, "REJ_INVALID_ALT_SL" },	\
		{ IB_CM_REJ_INVALID_ALT_TRAFFIC_CLASS, "REJ_INVALID_ALT_TRAFFIC_CLASS" },	\
		{ IB_CM_REJ_INVALID_ALT_HOP_LIMIT, "REJ_INVALID_ALT_HOP_LIMIT" },	\
		{ IB_CM_REJ_INVALID_ALT_PACKET_RATE, "REJ_INVALID_ALT_PACKET_RATE" },	\
		{ IB_CM_REJ_PORT_CM_REDIRECT, "REJ_PORT_CM_REDIRECT" },	\
		{ IB_CM_REJ_PORT_REDIRECT, "REJ_PORT_REDIRECT" },	\
		{ IB_CM_REJ_INVALID_MTU, "REJ_INVALID_MTU" },		\
		{ IB_CM_REJ_INSUFFICIENT_RESP_RESOURCES, "REJ_INSUFFICIENT_RESP_RESOURCES" },	\
		{ IB_CM_REJ_CONSUMER_DEFINED, "REJ_CONSUMER_DEFINED" },	\
		{ IB_CM_REJ_INVALID_RNR_RETRY, "REJ_INVALID_RNR_RETRY" },	\
		{ IB_CM_REJ_DUPLICATE_LOCAL_COMM_ID, "REJ_DUPLICATE_LOCAL_COMM_ID" },	\
		{ IB_CM_REJ_INVALID_CLASS_VERSION, "REJ_INVALID_CLASS_VERSION" },	\
		{ IB_CM_REJ_INVALID_FLOW_LABEL, "REJ_INVALID_FLOW_LABEL" },	\
		{ IB_CM_REJ_INVALID_ALT_FLOW_LABEL, "REJ_INVALID_ALT_FLOW_LABEL" },	\
		{ IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED, "REJ_VENDOR_OPTION_NOT_SUPPORTED" })

/*
 * A cm_id as it is when the event fires.  The pointer identifies the ID
 * to eBPF programs across events; the IDs are in host order.
 */
DECLARE_EVENT_CLASS(icm_id_class,
		    TP_PROTO(const struct ib_cm_id *cm_id),
		    TP_ARGS(cm_id),
		    TP_STRUCT__entry(__field(const void *, cm_id)
				     __field(unsigned int, local_id)
				     __field(unsigned int, remote_id)
				     __field(unsigned long, state)
				     __field(unsigned long, lap_state)),
		    TP_fast_assign(__entry->cm_id = cm_id;
				   __entry->local_id = be32_to_cpu(cm_id->local_id);
				   __entry->remote_id = be32_to_cpu(cm_id->remote_id);
				   __entry->state = cm_id->state;
				   __entry->lap_state = cm_id->lap_state;),
		    TP_printk("local_id=%u remote_id=%u state=%s lap_state=%s",
			      __entry->local_id, __entry->remote_id,
			      icm_show_state(__entry->state),
			      icm_show_lap_state(__entry->lap_state))
);

#define ICM_ID_EVENT(evname)						\
	DEFINE_EVENT(icm_id_class, evname,				\
		     TP_PROTO(const struct ib_cm_id *cm_id),		\
		     TP_ARGS(cm_id))

/* A message goes out for the ID (traced before the post). */
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

/* A verb refused in the ID's state. */
ICM_ID_EVENT(icm_send_cm_rtu_err);
ICM_ID_EVENT(icm_send_drep_err);
ICM_ID_EVENT(icm_send_unknown_rej_err);
#ifdef HAVE_IB_PREPARE_CM_MRA
ICM_ID_EVENT(icm_prepare_mra_unknown_err);
#else
ICM_ID_EVENT(icm_send_mra_unknown_err);
#endif
ICM_ID_EVENT(icm_establish_err);
ICM_ID_EVENT(icm_qp_init_err);
ICM_ID_EVENT(icm_qp_rtr_err);
ICM_ID_EVENT(icm_qp_rts_err);

/* A received message that does not fit the state of its cm_id. */
ICM_ID_EVENT(icm_no_listener_err);
ICM_ID_EVENT(icm_dreq_unknown_err);
ICM_ID_EVENT(icm_rej_unknown_err);
ICM_ID_EVENT(icm_mra_unknown_err);

/* ib_send_cm_dreq() in a state that has no connection to end. */
ICM_ID_EVENT(icm_dreq_skipped);

/* A REJ goes out for the ID: the state it was sent in and why. */
TRACE_EVENT(icm_send_rej,
	    TP_PROTO(const struct ib_cm_id *cm_id, enum ib_cm_rej_reason reason),
	    TP_ARGS(cm_id, reason),
	    TP_STRUCT__entry(__field(const void *, cm_id)
			     __field(u32, local_id)
			     __field(u32, remote_id)
			     __field(unsigned long, state)
			     __field(unsigned long, reason)),
	    TP_fast_assign(__entry->cm_id = cm_id;
			   __entry->local_id = be32_to_cpu(cm_id->local_id);
			   __entry->remote_id = be32_to_cpu(cm_id->remote_id);
			   __entry->state = cm_id->state;
			   __entry->reason = reason;),
	    TP_printk("local_id=%u remote_id=%u state=%s reason=%s",
		      __entry->local_id, __entry->remote_id,
		      icm_show_state(__entry->state),
		      icm_show_rej_reason(__entry->reason))
);

/*
 * Messages handled without a cm_id: the two comm IDs of the received
 * message (its sender's first), in host order.
 */
DECLARE_EVENT_CLASS(icm_local_class,
		    TP_PROTO(unsigned int local_id, unsigned int remote_id),
		    TP_ARGS(local_id, remote_id),
		    TP_STRUCT__entry(__field(unsigned int, local_id)
				     __field(unsigned int, remote_id)),
		    TP_fast_assign(__entry->local_id = local_id;
				   __entry->remote_id = remote_id;),
		    TP_printk("local_id=%u remote_id=%u",
			      __entry->local_id, __entry->remote_id)
);

#define ICM_LOCAL_EVENT(evname)						\
	DEFINE_EVENT(icm_local_class, evname,				\
		     TP_PROTO(unsigned int local_id,			\
			      unsigned int remote_id),			\
		     TP_ARGS(local_id, remote_id))

ICM_LOCAL_EVENT(icm_issue_rej);
ICM_LOCAL_EVENT(icm_issue_drep);
ICM_LOCAL_EVENT(icm_staleconn_err);
ICM_LOCAL_EVENT(icm_no_priv_err);

/* A REP dropped: only its receiver's comm ID, in host order. */
DECLARE_EVENT_CLASS(icm_remote_class,
		    TP_PROTO(u32 remote_id),
		    TP_ARGS(remote_id),
		    TP_STRUCT__entry(__field(u32, remote_id)),
		    TP_fast_assign(__entry->remote_id = remote_id;),
		    TP_printk("remote_id=%u", __entry->remote_id)
);

#define ICM_REMOTE_EVENT(evname)					\
	DEFINE_EVENT(icm_remote_class, evname,				\
		     TP_PROTO(u32 remote_id),				\
		     TP_ARGS(remote_id))

/* No ID has that comm ID; or the peer's comm ID is taken already. */
ICM_REMOTE_EVENT(icm_remote_no_priv_err);
ICM_REMOTE_EVENT(icm_insert_failed_err);

/* ib_send_cm_rep() refused in the ID's state. */
TRACE_EVENT(icm_send_rep_err,
	    TP_PROTO(__be32 local_id, enum ib_cm_state state),
	    TP_ARGS(local_id, state),
	    TP_STRUCT__entry(__field(unsigned int, local_id)
			     __field(unsigned long, state)),
	    TP_fast_assign(__entry->local_id = be32_to_cpu(local_id);
			   __entry->state = state;),
	    TP_printk("local_id=%u state=%s",
		      __entry->local_id, icm_show_state(__entry->state))
);

/* A REP for an ID that sent no REQ: the REP's comm IDs, the ID's state. */
TRACE_EVENT(icm_rep_unknown_err,
	    TP_PROTO(unsigned int local_id, unsigned int remote_id,
		     enum ib_cm_state state),
	    TP_ARGS(local_id, remote_id, state),
	    TP_STRUCT__entry(__field(unsigned int, local_id)
			     __field(unsigned int, remote_id)
			     __field(unsigned long, state)),
	    TP_fast_assign(__entry->local_id = local_id;
			   __entry->remote_id = remote_id;
			   __entry->state = state;),
	    TP_printk("local_id=%u remote_id=%u state=%s",
		      __entry->local_id, __entry->remote_id,
		      icm_show_state(__entry->state))
);

/* A queued event that no handler takes. */
TRACE_EVENT(icm_handler_err,
	    TP_PROTO(enum ib_cm_event_type event),
	    TP_ARGS(event),
	    TP_STRUCT__entry(__field(unsigned long, event)),
	    TP_fast_assign(__entry->event = event;),
	    TP_printk("unhandled event=%s",
		      rdma_show_ib_cm_event(__entry->event))
);

/* A tracked MAD failed to go out: the state it was sent in, the status. */
TRACE_EVENT(icm_mad_send_err,
	    TP_PROTO(enum ib_cm_state state, enum ib_wc_status wc_status),
	    TP_ARGS(state, wc_status),
	    TP_STRUCT__entry(__field(unsigned long, state)
			     __field(unsigned long, wc_status)),
	    TP_fast_assign(__entry->state = state;
			   __entry->wc_status = wc_status;),
	    TP_printk("state=%s completion status=%s",
		      icm_show_state(__entry->state),
		      rdma_show_wc_status(__entry->wc_status))
);

#endif /* IB_CM_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE cm_trace

#include <trace/define_trace.h>
