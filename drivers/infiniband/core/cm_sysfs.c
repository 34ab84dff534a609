// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Per-port message counters, published by ib_core under
 * /sys/class/infiniband/<dev>/ports/<n>/cm_{tx_msgs,tx_retries,rx_msgs,
 * rx_duplicates}/<message> through ib_port_register_client_groups().
 */
#include <linux/sysfs.h>
#include <rdma/ib_sysfs.h>

#include "cm_priv.h"

struct cm_ctr_attr {
	struct ib_port_attribute pattr;
	u8 grp;
	u8 idx;
};

static ssize_t cm_ctr_show(struct ib_device *ibdev, u32 port_num,
			   struct ib_port_attribute *pattr, char *buf)
{
	struct cm_ctr_attr *a = container_of(pattr, struct cm_ctr_attr, pattr);
	struct cm_device *dev = ib_get_client_data(ibdev, &cm_ib_client);
	struct cm_port *port = dev ? cm_dev_port(dev, port_num) : NULL;

	if (!port)
		return -ENODEV;
	return sysfs_emit(buf, "%ld\n",
			  atomic_long_read(&port->ctr[a->grp][a->idx]));
}

/* File names in attribute ID order, starting at REQ (0x10). */
#define CM_CTR_ONE(n, i) \
	{ .pattr = __ATTR(n, 0444, cm_ctr_show, NULL), .idx = (i) }
#define CM_CTR_ROW							\
	{ CM_CTR_ONE(req, 0), CM_CTR_ONE(mra, 1), CM_CTR_ONE(rej, 2),	\
	  CM_CTR_ONE(rep, 3), CM_CTR_ONE(rtu, 4), CM_CTR_ONE(dreq, 5),	\
	  CM_CTR_ONE(drep, 6), CM_CTR_ONE(sidr_req, 7),			\
	  CM_CTR_ONE(sidr_rep, 8), CM_CTR_ONE(lap, 9),			\
	  CM_CTR_ONE(apr, 10) }

/* One row per counter group; cm_sysfs_init() fills in ->grp. */
static struct cm_ctr_attr cm_ctr_table[CM_CTR_GROUPS][CMC_ATTR_COUNT] = {
	CM_CTR_ROW, CM_CTR_ROW, CM_CTR_ROW, CM_CTR_ROW,
};

static struct attribute *cm_ctr_ptrs[CM_CTR_GROUPS][CMC_ATTR_COUNT + 1];

static struct attribute_group cm_ctr_groups[CM_CTR_GROUPS] = {
	[CM_CTR_TX] = { .name = "cm_tx_msgs" },
	[CM_CTR_TX_RETRIES] = { .name = "cm_tx_retries" },
	[CM_CTR_RX] = { .name = "cm_rx_msgs" },
	[CM_CTR_RX_DUPS] = { .name = "cm_rx_duplicates" },
};

const struct attribute_group *cm_counter_groups[CM_CTR_GROUPS + 1];

/* Wire the tables together; called once from module init. */
void cm_sysfs_init(void)
{
	unsigned int g, i;

	for (g = 0; g < CM_CTR_GROUPS; g++) {
		for (i = 0; i < CMC_ATTR_COUNT; i++) {
			cm_ctr_table[g][i].grp = g;
			cm_ctr_ptrs[g][i] = &cm_ctr_table[g][i].pattr.attr;
		}
		cm_ctr_ptrs[g][CMC_ATTR_COUNT] = NULL;
		cm_ctr_groups[g].attrs = cm_ctr_ptrs[g];
		cm_counter_groups[g] = &cm_ctr_groups[g];
	}
	cm_counter_groups[CM_CTR_GROUPS] = NULL;
}
