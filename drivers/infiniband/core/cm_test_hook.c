// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Test hooks of ib_cm.ko, linked in only with CONFIG_INFINIBAND_CM_TEST_HOOKS.
 *
 * cm_test_inject() hands a CM MAD built by a test to the port's receive
 * handler as if the MAD layer had just received it over RoCE, so that the
 * duplicate, stale-connection and late-message rules can be driven without
 * a peer that misbehaves on purpose.  The answers the CM sends go out on
 * the real device.  cm_test_counter() reads the per-port counters that the
 * sysfs files show, and cm_test_flush() waits for queued receive work.
 * cm_test_lap_on_roce() lets the LAP receive rules run on a RoCE port,
 * and cm_test_dev_refs() shows the references held on a CM device.
 * cm_test_rej_watch() attaches to the icm_send_rej tracepoint the way a
 * tracing tool would, and records what it saw of one cm_id.
 * cm_test_on_dup_req() runs a test's function between the lookup of a
 * repeated REQ's connection and the CM's look at its state.
 * cm_test_send_watch() keeps a copy of the MADs of one attribute that the
 * CM posts on one port, so that a test can read back the fields of what
 * it sent.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <net/ipv6.h>

#include "cm_priv.h"
#include "cm_test_hook.h"
#include "cm_trace.h"

/*
 * A received MAD that no peer sent: the single-segment completion the MAD
 * layer would hand the CM, in one allocation.  It is not the MAD layer's
 * and never goes to it: the CM takes it through cm_recv_injected(), which
 * marks the job that holds it, and gives it back with cm_test_recv_free()
 * where it would call ib_free_recv_mad() for a MAD from the wire.  So it
 * is freed at the same points as a real one, and one the CM forgets to
 * free is a leak that kmemleak reports.
 */
struct cm_test_rx {
	struct ib_mad_recv_wc rwc;
	struct ib_wc wc;
	union rdma_network_hdr hdr;
	struct ib_mad mad;
};

/* The CM port of @ibdev/@num with a reference on its device, or NULL. */
static struct cm_port *cm_test_port_get(struct ib_device *ibdev, u32 num)
{
	struct cm_port *port = NULL;
	struct cm_device *dev;
	unsigned long flags;

	read_lock_irqsave(&cmg.dev_lock, flags);
	list_for_each_entry(dev, &cmg.devices, node) {
		if (dev->ibdev != ibdev)
			continue;
		port = cm_dev_port(dev, num);
		if (port && port->active)
			cm_dev_get(dev);
		else
			port = NULL;
		break;
	}
	read_unlock_irqrestore(&cmg.dev_lock, flags);
	return port;
}

/* The network header RoCE v2 would have delivered from @sgid to @dgid. */
static void cm_test_net_hdr(struct cm_test_rx *rx, const union ib_gid *sgid,
			    const union ib_gid *dgid)
{
	const struct in6_addr *s6 = (const void *)sgid->raw;
	const struct in6_addr *d6 = (const void *)dgid->raw;
	struct iphdr *ip4 = &rx->hdr.roce4grh;
	struct ib_grh *grh = &rx->hdr.ibgrh;

	if (ipv6_addr_v4mapped(s6) && ipv6_addr_v4mapped(d6)) {
		ip4->version = 4;
		ip4->ihl = 5;
		ip4->ttl = 64;
		ip4->protocol = IPPROTO_UDP;
		ip4->tot_len = htons(sizeof(*ip4) + sizeof(rx->mad));
		ip4->saddr = s6->s6_addr32[3];
		ip4->daddr = d6->s6_addr32[3];
		rx->wc.network_hdr_type = RDMA_NETWORK_IPV4;
		return;
	}
	grh->version_tclass_flow = cpu_to_be32(6U << 28);
	grh->paylen = cpu_to_be16(sizeof(rx->mad));
	grh->next_hdr = IPPROTO_UDP;
	grh->hop_limit = 64;
	grh->sgid = *sgid;
	grh->dgid = *dgid;
	rx->wc.network_hdr_type = RDMA_NETWORK_IPV6;
}

/**
 * cm_test_inject() - Receive a CM MAD that no peer sent.
 * @ibdev: device whose CM gets the MAD
 * @port_num: port it arrives on; must be a RoCE port
 * @sgid: GID it claims to come from (answers are sent there)
 * @dgid: GID it was sent to, one of the port's own
 * @mad: the 256 bytes of the MAD, header included
 *
 * The MAD goes through the same receive handler and work queue as one from
 * the wire; call cm_test_flush() to wait until it was processed.
 *
 * Return: 0 when handed over, -EOPNOTSUPP for a non-RoCE port, -ENODEV
 * when the port has no CM agent, -ENOMEM.
 */
int cm_test_inject(struct ib_device *ibdev, u32 port_num,
		   const union ib_gid *sgid, const union ib_gid *dgid,
		   const void *mad)
{
	struct ib_mad_agent *agent;
	struct cm_test_rx *rx;
	struct cm_port *port;
	int ret = 0;

	if (!rdma_protocol_roce(ibdev, port_num))
		return -EOPNOTSUPP;
	port = cm_test_port_get(ibdev, port_num);
	if (!port)
		return -ENODEV;
	agent = cm_agent_pin(port);
	if (!agent) {
		ret = -ENODEV;
		goto put;
	}
#ifdef HAVE_KMALLOC_OBJ
	rx = kzalloc_obj(*rx);
#else
	rx = kzalloc(sizeof(*rx), GFP_KERNEL);
#endif
	if (!rx) {
		ret = -ENOMEM;
		goto unpin;
	}
	memcpy(&rx->mad, mad, sizeof(rx->mad));
	cm_test_net_hdr(rx, sgid, dgid);

	rx->wc.status = IB_WC_SUCCESS;
	rx->wc.opcode = IB_WC_RECV;
	rx->wc.byte_len = sizeof(rx->hdr) + sizeof(rx->mad);
	rx->wc.qp = agent->qp;
	rx->wc.src_qp = 1;
	rx->wc.pkey_index = 0;
	rx->wc.port_num = port_num;
	rx->wc.wc_flags = IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE;

	rx->rwc.wc = &rx->wc;
	rx->rwc.recv_buf.mad = &rx->mad;
	rx->rwc.recv_buf.grh = &rx->hdr.ibgrh;
	rx->rwc.mad_len = sizeof(rx->mad);
	rx->rwc.mad_seg_size = sizeof(rx->mad);
	INIT_LIST_HEAD(&rx->rwc.rmpp_list);
	list_add(&rx->rwc.recv_buf.list, &rx->rwc.rmpp_list);

	/* From here on the CM owns @rx and frees it with cm_test_recv_free(). */
	cm_recv_injected(port, &rx->rwc);
unpin:
	cm_agent_unpin(port);
put:
	cm_dev_put(port->dev);
	return ret;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_inject);

/* Free a MAD made by cm_test_inject(), once the CM is done with it. */
void cm_test_recv_free(struct ib_mad_recv_wc *rwc)
{
	kfree(container_of(rwc, struct cm_test_rx, rwc));
}

/*
 * Send completions held back, as a device that lost them would hold them:
 * each with the agent it came from.  Protected by cm_test_park_lock.
 */
struct cm_test_parked {
	struct list_head node;
	struct ib_mad_agent *agent;
	struct ib_mad_send_wc wc;
};

static DEFINE_SPINLOCK(cm_test_park_lock);
static bool cm_test_parking;
static LIST_HEAD(cm_test_parked_list);
static unsigned int cm_test_parked_n;

/* Called first by cm_mad_send_handler(): true if it keeps @wc. */
bool cm_test_park_send(struct ib_mad_agent *agent, struct ib_mad_send_wc *wc)
{
	struct cm_test_parked *p;
	unsigned long flags;

	if (!READ_ONCE(cm_test_parking))
		return false;
#ifdef HAVE_KMALLOC_OBJ
	p = kmalloc_obj(*p, GFP_ATOMIC);
#else
	p = kmalloc(sizeof(*p), GFP_ATOMIC);
#endif
	if (!p)
		return false;
	p->agent = agent;
	p->wc = *wc;
	spin_lock_irqsave(&cm_test_park_lock, flags);
	if (!cm_test_parking) {
		spin_unlock_irqrestore(&cm_test_park_lock, flags);
		kfree(p);
		return false;
	}
	list_add_tail(&p->node, &cm_test_parked_list);
	cm_test_parked_n++;
	spin_unlock_irqrestore(&cm_test_park_lock, flags);
	return true;
}

/**
 * cm_test_park_sends() - Hold back, or give back, every send completion.
 * @on: hold back from now on; false gives the held ones to the CM, in
 *	the order they came, and stops holding back
 *
 * A held completion is one a device has not reported yet: its send buffer,
 * and whatever the send holds (a cm_id, the MAD agent), stays as it is.
 * Every completion held must be given back before the device or ib_cm
 * goes away.  Completions that come while held ones are given back are
 * handled at once, before the rest of those.
 *
 * Context: process context, interrupts enabled (the CM's send handler
 * takes its locks with spin_lock_irq()).
 *
 * Return: how many were held when called.
 */
unsigned int cm_test_park_sends(bool on)
{
	struct cm_test_parked *p, *tmp;
	unsigned long flags;
	unsigned int n;
	LIST_HEAD(back);

	spin_lock_irqsave(&cm_test_park_lock, flags);
	WRITE_ONCE(cm_test_parking, on);
	n = cm_test_parked_n;
	if (!on) {
		list_splice_init(&cm_test_parked_list, &back);
		cm_test_parked_n = 0;
	}
	spin_unlock_irqrestore(&cm_test_park_lock, flags);
	list_for_each_entry_safe(p, tmp, &back, node) {
		list_del(&p->node);
		cm_mad_send_handler(p->agent, &p->wc);
		kfree(p);
	}
	return n;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_park_sends);

/**
 * cm_test_parked_sends() - How many send completions are held back.
 *
 * Return: the count.
 */
unsigned int cm_test_parked_sends(void)
{
	unsigned long flags;
	unsigned int n;

	spin_lock_irqsave(&cm_test_park_lock, flags);
	n = cm_test_parked_n;
	spin_unlock_irqrestore(&cm_test_park_lock, flags);
	return n;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_parked_sends);

/**
 * cm_test_counter() - Read one per-port CM counter.
 * @ibdev: device
 * @port_num: port
 * @group: enum cm_ctr_group (sent, retries, received, duplicates)
 * @attr_id: CM attribute ID of the message kind
 *
 * Return: the counter, or -EINVAL / -ENODEV.
 */
long cm_test_counter(struct ib_device *ibdev, u32 port_num,
		     unsigned int group, __be16 attr_id)
{
	unsigned int idx = be16_to_cpu(attr_id) - CMC_ATTR_BASE;
	struct cm_port *port;
	long val;

	if (group >= CM_CTR_GROUPS || idx >= CMC_ATTR_COUNT)
		return -EINVAL;
	port = cm_test_port_get(ibdev, port_num);
	if (!port)
		return -ENODEV;
	val = atomic_long_read(&port->ctr[group][idx]);
	cm_dev_put(port->dev);
	return val;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_counter);

/**
 * cm_test_flush() - Wait until every queued CM receive job has run.
 *
 * Events a job delivers have reached the consumer when this returns, and
 * the cm_ids given back from send completions are destroyed.  TimeWait
 * timers that have not fired yet are not waited for.
 */
void cm_test_flush(void)
{
	flush_workqueue(cmg.wq);
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_flush);

/*
 * The one port on which LAPs are taken as on an IB link, or NULL.
 * Holds a reference on the port's device, so that the pointer cannot come
 * to name another port while it is set.  Protected by cm_test_lap_lock.
 */
static struct cm_port *cm_test_lap_port;
static DEFINE_SPINLOCK(cm_test_lap_lock);

/**
 * cm_test_lap_on_roce() - Take LAPs on a RoCE port, for a self-test.
 * @ibdev: device
 * @port_num: a RoCE port of @ibdev
 * @on: true to switch the port on (any other port goes off), false for off
 *
 * ib_cm drops alternate path messages on RoCE ports, as the stock ib_cm
 * does, and the test setup has only RoCE ports (rdma_rxe).  This switch
 * exists so that ib_cm_rx_test.ko can drive the LAP receive rules
 * (states, duplicates, MRA for a LAP, the alternate address vector and
 * what becomes of its references) on such a port: LAPs are taken there
 * as on an IB link, and a LAP's path is read as an IB path.  Nothing
 * else changes: the port stays RoCE for every other message and for the
 * address vectors, so the alternate path becomes RoCE AH attributes with a
 * GRH but no destination MAC (see cm_test_lap_sgid_attr()).  Those must
 * not be used for a QP: the switch may not be used to run alternate paths
 * over RoCE.  It exists only in test builds and is off until a test turns
 * it on; the test turns it off before it unloads, which drops the device
 * reference the switch holds.
 *
 * Return: 0, -EOPNOTSUPP for a port that is not RoCE, -ENODEV.
 */
int cm_test_lap_on_roce(struct ib_device *ibdev, u32 port_num, bool on)
{
	struct cm_port *port = NULL, *old;

	if (on) {
		if (!rdma_protocol_roce(ibdev, port_num))
			return -EOPNOTSUPP;
		port = cm_test_port_get(ibdev, port_num);
		if (!port)
			return -ENODEV;
	}
	spin_lock(&cm_test_lap_lock);
	old = cm_test_lap_port;
	cm_test_lap_port = port;
	spin_unlock(&cm_test_lap_lock);
	if (old)
		cm_dev_put(old->dev);
	return 0;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_lap_on_roce);

/* Whether cm_test_lap_on_roce() switched @port on. */
bool cm_test_lap_as_ib(const struct cm_port *port)
{
	bool on;

	spin_lock(&cm_test_lap_lock);
	on = cm_test_lap_port == port;
	spin_unlock(&cm_test_lap_lock);
	return on;
}

/*
 * The GID attribute a LAP's alternate path is built with on a switched
 * port.  On IB the path's source GID names the port and no attribute is
 * given; rdma_rxe has only RoCE v2 GIDs, none of the type an IB path looks
 * for, so a path leaving from the GID the LAP arrived on (@arrived) is built
 * with that GID's attribute instead.  A path from any other GID still gets
 * none and fails as it would on IB.  Not switched: none, as in production.
 */
const struct ib_gid_attr *
cm_test_lap_sgid_attr(const struct cm_port *port, const union ib_gid *sgid,
		      const struct ib_gid_attr *arrived)
{
	if (!arrived || !cm_test_lap_as_ib(port) ||
	    memcmp(sgid->raw, arrived->gid.raw, sizeof(sgid->raw)))
		return NULL;
	return arrived;
}

/**
 * cm_test_dev_refs() - How many references a CM device has right now.
 * @ibdev: device
 * @port_num: one of its ports
 *
 * Counts the ib_client's reference, one per address vector pointing at the
 * device, one per queued job and the one cm_test_lap_on_roce() may hold;
 * not the one this call takes while it looks.
 *
 * Return: the count, or -ENODEV.
 */
long cm_test_dev_refs(struct ib_device *ibdev, u32 port_num)
{
	struct cm_port *port = cm_test_port_get(ibdev, port_num);
	long refs;

	if (!port)
		return -ENODEV;
	refs = kref_read(&port->dev->ref) - 1;
	cm_dev_put(port->dev);
	return refs;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_dev_refs);

/**
 * cm_test_id_count() - How many cm_ids hold a local communication ID.
 *
 * Every cm_id from creation until it leaves TimeWait, on every device.
 *
 * Return: the count.
 */
unsigned long cm_test_id_count(void)
{
	unsigned long index, n = 0;
	void *entry;

	xa_for_each(&cmg.ids, index, entry)
		n++;
	return n;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_id_count);

/* Runs where the event fires, with the cm_id's lock held. */
static void cm_test_rej_probe(void *data, const struct ib_cm_id *cm_id,
			      enum ib_cm_rej_reason reason)
{
	struct cm_test_rej_seen *seen = data;

	if (cm_id != seen->id)
		return;
	WRITE_ONCE(seen->state, cm_id->state);
	WRITE_ONCE(seen->reason, reason);
	WRITE_ONCE(seen->count, seen->count + 1);
}

/**
 * cm_test_rej_watch() - Record the icm_send_rej events of one cm_id.
 * @seen: ->id names the cm_id; the other fields are filled in as the
 *	  event fires, until cm_test_rej_unwatch()
 *
 * Return: 0, or the error of attaching to the tracepoint.
 */
int cm_test_rej_watch(struct cm_test_rej_seen *seen)
{
	return register_trace_icm_send_rej(cm_test_rej_probe, seen);
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_rej_watch);

/**
 * cm_test_rej_unwatch() - Stop recording for cm_test_rej_watch().
 * @seen: what was given to cm_test_rej_watch()
 *
 * Returns once no probe call can touch @seen any more.
 */
void cm_test_rej_unwatch(struct cm_test_rej_seen *seen)
{
	unregister_trace_icm_send_rej(cm_test_rej_probe, seen);
	tracepoint_synchronize_unregister();
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_rej_unwatch);

/*
 * The watch of cm_test_send_watch(), or NULL; written under the lock, and
 * read without it only to skip the lock while it is NULL.
 */
static DEFINE_SPINLOCK(cm_test_send_lock);
static struct cm_test_sent *cm_test_send_w;

/*
 * Called by cm.c with every MAD it hands to the MAD layer on @port, before
 * it does: once posted, the send buffer may complete and be freed at any
 * time.  Any context; the CM may hold a cm_id's lock with IRQs off.
 */
void cm_test_sending(const struct cm_port *port,
		     const struct ib_mad_send_buf *msg)
{
	const struct ib_mad_hdr *hdr = msg->mad;
	struct cm_test_sent *w;
	unsigned long flags;

	/* no shared lock on every send while nothing watches */
	if (!READ_ONCE(cm_test_send_w))
		return;
	spin_lock_irqsave(&cm_test_send_lock, flags);
	w = cm_test_send_w;
	if (w && w->ibdev == port->dev->ibdev && w->port_num == port->num &&
	    hdr->attr_id == w->attr_id) {
		w->count++;
		memcpy(&w->mad, msg->mad, sizeof(w->mad));
	}
	spin_unlock_irqrestore(&cm_test_send_lock, flags);
}

/**
 * cm_test_send_watch() - Keep a copy of the CM's MADs of one attribute.
 * @w: ->ibdev, ->port_num and ->attr_id name what to watch; ->count and
 *     ->mad are reset here and filled in as the CM posts such MADs on
 *     that port, until cm_test_send_unwatch()
 *
 * Only one watch at a time: a test reads what its own steps made the CM
 * send.
 *
 * Context: process context.
 * Return: 0, or -EBUSY while a watch is set (@w is then left as it was).
 */
int cm_test_send_watch(struct cm_test_sent *w)
{
	int ret = -EBUSY;

	spin_lock_irq(&cm_test_send_lock);
	if (!cm_test_send_w) {
		w->count = 0;
		memset(&w->mad, 0, sizeof(w->mad));
		WRITE_ONCE(cm_test_send_w, w);
		ret = 0;
	}
	spin_unlock_irq(&cm_test_send_lock);
	return ret;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_send_watch);

/**
 * cm_test_send_unwatch() - End cm_test_send_watch().
 * @w: what was given to cm_test_send_watch(); nothing happens if it is not
 *     the watch set
 *
 * Once it returns, the CM no longer writes to @w, and @w holds the count
 * and the last copy.
 *
 * Context: process context.
 */
void cm_test_send_unwatch(struct cm_test_sent *w)
{
	spin_lock_irq(&cm_test_send_lock);
	if (cm_test_send_w == w)
		WRITE_ONCE(cm_test_send_w, NULL);
	spin_unlock_irq(&cm_test_send_lock);
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_send_unwatch);

/*
 * The function of cm_test_on_dup_req(), or NULL.  Written there only; read
 * without a lock by the receive path, which runs it for injected MADs.
 */
static void (*cm_test_dup_req_fn)(struct ib_cm_id *cm_id);

/* Called by cm.c when a repeated REQ of @job has found @other. */
void cm_test_dup_req_found(struct cm_job *job, struct ib_cm_id *other)
{
	void (*fn)(struct ib_cm_id *cm_id) = READ_ONCE(cm_test_dup_req_fn);

	if (fn && cm_job_injected(job))
		fn(other);
}

/**
 * cm_test_on_dup_req() - Run a function where a repeated REQ found its cm_id.
 * @fn: called with that cm_id, referenced, in the receive job, after the
 *	lookup and before the CM reads the cm_id's state; NULL stops it
 *
 * Only REQs from cm_test_inject() run @fn, so that a test can make the
 * connection change state in the window between the two, as a consumer's
 * call on another CPU would.  @fn may call the CM's send and state
 * functions for the cm_id.  It must not destroy the cm_id (the receive
 * job's reference would keep the destroy waiting), nor wait for receive
 * work (cm_test_flush()), nor call this function.
 *
 * Context: process context.  With NULL it returns once no call of the
 * old function can still be running, so that its module may go away.
 */
void cm_test_on_dup_req(void (*fn)(struct ib_cm_id *cm_id))
{
	WRITE_ONCE(cm_test_dup_req_fn, fn);
	if (!fn)
		cm_test_flush();
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_test_on_dup_req);
