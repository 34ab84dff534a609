// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Device and port lifetime for ib_cm.ko.
 *
 * A cm_device is created by the ib_client add callback and lives as long as
 * its kref: the client's own reference is dropped at the end of remove, and
 * every cm_av / queued job that points at one of its ports holds another.
 * Removal never waits for cm_ids; an ID that still points at a removed
 * device simply finds no MAD agent when it tries to send.
 *
 * MAD agent access: a sender read-locks dev->agent_lock, reads port->agent
 * and, if set, pins it by raising port->agent_users before unlocking.  The
 * AH and send buffer are then created and the MAD is posted with only the
 * pin held, so no driver callback and no allocation runs under the rwlock.
 * Removal write-locks, clears port->agent, waits for the pins to drain and
 * only then unregisters the agent.  Built against 7.2, a port has a second,
 * send-only agent for REPs (port->rep_agent), pinned, cleared and
 * unregistered together with the first.
 */
#include <linux/slab.h>
#include <linux/wait_bit.h>

#include "cm_fault.h"
#include "cm_priv.h"

static int cm_add_one(struct ib_device *ibdev);
static void cm_remove_one(struct ib_device *ibdev, void *client_data);

struct ib_client cm_ib_client = {
	.name = "cm",
	.add = cm_add_one,
	.remove = cm_remove_one,
};

void cm_dev_release(struct kref *ref)
{
	kfree(container_of(ref, struct cm_device, ref));
}

/* Pin the agent in @slot, port->agent or port->rep_agent, if it is set. */
static struct ib_mad_agent *cm_agent_pin_slot(struct cm_port *port,
					      struct ib_mad_agent *const *slot)
{
	struct ib_mad_agent *agent;
	unsigned long flags;

	read_lock_irqsave(&port->dev->agent_lock, flags);
	agent = *slot;
	if (agent)
		atomic_inc(&port->agent_users);
	read_unlock_irqrestore(&port->dev->agent_lock, flags);
	return agent;
}

struct ib_mad_agent *cm_agent_pin(struct cm_port *port)
{
	return cm_agent_pin_slot(port, &port->agent);
}

#ifdef HAVE_IB_PREPARE_CM_MRA
/* cm_agent_pin() for the agent that sends REPs. */
struct ib_mad_agent *cm_rep_agent_pin(struct cm_port *port)
{
	return cm_agent_pin_slot(port, &port->rep_agent);
}

#endif
static struct cm_port *cm_port_of(struct cm_device *dev, u32 num)
{
	struct cm_port *port = cm_dev_port(dev, num);

	return port && port->active ? port : NULL;
}

/*
 * Find the CM port a path leaves from, by its SGID attribute when known or
 * else by searching every device for the path's SGID.  The returned port
 * carries a new reference on its device.
 */
struct cm_port *cm_port_for_gid(struct sa_path_rec *path,
				const struct ib_gid_attr *sgid_attr)
{
	const struct ib_gid_attr *found = NULL;
	struct cm_port *port = NULL;
	struct cm_device *dev;
	unsigned long flags;

	read_lock_irqsave(&cmg.dev_lock, flags);
	list_for_each_entry(dev, &cmg.devices, node) {
		if (sgid_attr) {
			if (dev->ibdev != sgid_attr->device)
				continue;
			port = cm_port_of(dev, sgid_attr->port_num);
		} else {
			found = rdma_find_gid(dev->ibdev, &path->sgid,
					      sa_conv_pathrec_to_gid_type(path),
					      NULL);
			if (IS_ERR(found)) {
				found = NULL;
				continue;
			}
			port = cm_port_of(dev, found->port_num);
		}
		if (port)
			cm_dev_get(dev);
		break;
	}
	read_unlock_irqrestore(&cmg.dev_lock, flags);
	if (found)
		rdma_put_gid_attr(found);
	return port;
}

/* Stop the CM on @port, if it got as far as its MAD agent. */
static void cm_port_teardown(struct cm_port *port)
{
	struct ib_port_modify clear = { .clr_port_cap_mask = IB_PORT_CM_SUP };
	struct ib_mad_agent *agent, *rep_agent = NULL;

	if (!port->active)
		return;
	ib_modify_port(port->dev->ibdev, port->num, 0, &clear);

	write_lock_irq(&port->dev->agent_lock);
	agent = port->agent;
	port->agent = NULL;
#ifdef HAVE_IB_PREPARE_CM_MRA
	rep_agent = port->rep_agent;
	port->rep_agent = NULL;
#endif
	write_unlock_irq(&port->dev->agent_lock);

	wait_var_event(&port->agent_users, !atomic_read(&port->agent_users));
	if (rep_agent)
		ib_unregister_mad_agent(rep_agent);
	if (agent)
		ib_unregister_mad_agent(agent);
}

static void cm_port_drop_groups(struct cm_port *port)
{
	if (port->groups_added)
		ib_port_unregister_client_groups(port->dev->ibdev, port->num,
						 cm_counter_groups);
	port->groups_added = false;
}

/*
 * Start the CM on @port.  On failure the port is left part set up, as
 * ->groups_added and ->active say, for cm_dev_undo_ports() to undo.
 */
static int cm_port_setup(struct cm_port *port)
{
	struct ib_device *ibdev = port->dev->ibdev;
	struct ib_port_modify set = { .set_port_cap_mask = IB_PORT_CM_SUP };
	struct ib_mad_reg_req reg = {
		.mgmt_class = IB_MGMT_CLASS_CM,
		.mgmt_class_version = CMC_CLASS_VERSION,
	};
	struct ib_mad_agent *agent;
	int ret;

	set_bit(IB_MGMT_METHOD_SEND, reg.method_mask);

	if (cm_should_fail())
		return -ENOMEM;
	ret = ib_port_register_client_groups(ibdev, port->num,
					     cm_counter_groups);
	if (ret)
		return ret;
	port->groups_added = true;

	if (cm_should_fail())
		return -ENOMEM;
	agent = ib_register_mad_agent(ibdev, port->num, IB_QPT_GSI, &reg, 0,
				      cm_mad_send_handler, cm_mad_recv_handler,
				      port, 0);
	if (IS_ERR(agent))
		return PTR_ERR(agent);
	write_lock_irq(&port->dev->agent_lock);
	port->agent = agent;
	write_unlock_irq(&port->dev->agent_lock);
	port->active = true;

#ifdef HAVE_IB_PREPARE_CM_MRA
	if (cm_should_fail())
		return -ENOMEM;
	agent = ib_register_mad_agent(ibdev, port->num, IB_QPT_GSI, NULL, 0,
				      cm_mad_send_handler, NULL, port, 0);
	if (IS_ERR(agent))
		return PTR_ERR(agent);
	write_lock_irq(&port->dev->agent_lock);
	port->rep_agent = agent;
	write_unlock_irq(&port->dev->agent_lock);

#endif
	if (cm_should_fail())
		return -EIO;
	return ib_modify_port(ibdev, port->num, 0, &set);
}

/* Put @dev on cmg.devices, or take it off again. */
static void cm_dev_list(struct cm_device *dev, bool add)
{
	unsigned long flags;

	write_lock_irqsave(&cmg.dev_lock, flags);
	if (add)
		list_add_tail(&dev->node, &cmg.devices);
	else
		list_del_init(&dev->node);
	write_unlock_irqrestore(&cmg.dev_lock, flags);
}

/*
 * Set up every port that runs a CM, stopping at the first failure: how
 * many there are, or the error.  Either way cm_dev_undo_ports() undoes it.
 */
static int cm_dev_setup_ports(struct cm_device *dev)
{
	int usable = 0;
	int err;
	u32 i;

	for (i = 0; i < dev->nports; i++) {
		struct cm_port *port = &dev->port[i];

		if (!rdma_cap_ib_cm(dev->ibdev, port->num))
			continue;
		err = cm_port_setup(port);
		if (err)
			return err;
		usable++;
	}
	return usable;
}

/*
 * Undo cm_dev_setup_ports(), all of it or as far as it got: on removal,
 * and when the add fails.  Each step looks only at what its port says was
 * set up, so ports never reached are left alone.
 */
static void cm_dev_undo_ports(struct cm_device *dev)
{
	bool had_agent = false;
	u32 i;

	for (i = 0; i < dev->nports; i++) {
		had_agent |= dev->port[i].active;
		cm_port_teardown(&dev->port[i]);
	}

	/*
	 * Jobs queued before this finish; they can no longer send.  Only a
	 * port with a MAD agent can have queued any: a device that never got
	 * one (no CM port, or the first agent failed) waits for nothing.
	 */
	if (had_agent)
		flush_workqueue(cmg.wq);

	for (i = 0; i < dev->nports; i++)
		cm_port_drop_groups(&dev->port[i]);
}

static int cm_add_one(struct ib_device *ibdev)
{
	u32 i, first = rdma_start_port(ibdev);
	u32 nports = rdma_end_port(ibdev) - first + 1;
	struct cm_device *dev;
	int ret;

	if (cm_should_fail())
		return -ENOMEM;
	dev = kzalloc(struct_size(dev, port, nports), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	dev->ibdev = ibdev;
	dev->first_port = first;
	dev->nports = nports;
	dev->ack_delay = ibdev->attrs.local_ca_ack_delay;
	INIT_LIST_HEAD(&dev->node);
	rwlock_init(&dev->agent_lock);
	kref_init(&dev->ref);
	/* Every port is valid before any is set up, for the undo. */
	for (i = 0; i < nports; i++) {
		dev->port[i].dev = dev;
		dev->port[i].num = first + i;
		atomic_set(&dev->port[i].agent_users, 0);
	}
	ib_set_client_data(ibdev, &cm_ib_client, dev);

	ret = cm_dev_setup_ports(dev);
	if (ret > 0) {
		cm_dev_list(dev, true);
		return 0;
	}

	/* No port runs a CM, or one failed: undo whatever was set up. */
	cm_dev_undo_ports(dev);
	cm_dev_put(dev);
	return ret ?: -EOPNOTSUPP;
}

static void cm_remove_one(struct ib_device *ibdev, void *client_data)
{
	struct cm_device *dev = client_data;
	unsigned long flags;

	cm_dev_list(dev, false);

	/* No new jobs from the receive path or ib_cm_notify() after this. */
	spin_lock_irqsave(&cmg.lock, flags);
	dev->going_down = true;
	spin_unlock_irqrestore(&cmg.lock, flags);

	cm_dev_undo_ports(dev);
	cm_dev_put(dev);
}

int cm_client_register(void)
{
	return ib_register_client(&cm_ib_client);
}

void cm_client_unregister(void)
{
	ib_unregister_client(&cm_ib_client);
}
