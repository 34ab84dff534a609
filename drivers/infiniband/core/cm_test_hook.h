/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Test-only entry points of ib_cm.ko, present only with
 * CONFIG_INFINIBAND_CM_TEST_HOOKS (never on a production system): let a
 * self-test module feed synthetic CM MADs into the receive path, observe
 * the per-port counters and read back what the CM sends, and arm the
 * allocation fault hook (cm_fault.h).  Exported in the IB_CM_TEST
 * namespace.
 */
#ifndef IB_CM_TEST_HOOK_H
#define IB_CM_TEST_HOOK_H

#include <rdma/ib_verbs.h>
#include <rdma/ib_cm.h>

#include "cm_codec.h"

int cm_test_inject(struct ib_device *ibdev, u32 port_num,
		   const union ib_gid *sgid, const union ib_gid *dgid,
		   const void *mad);
long cm_test_counter(struct ib_device *ibdev, u32 port_num,
		     unsigned int group, __be16 attr_id);
void cm_test_flush(void);
int cm_test_lap_on_roce(struct ib_device *ibdev, u32 port_num, bool on);
long cm_test_dev_refs(struct ib_device *ibdev, u32 port_num);
unsigned long cm_test_id_count(void);

/**
 * struct cm_test_rej_seen - what the icm_send_rej tracepoint recorded
 * @id: the cm_id watched; set by the test before cm_test_rej_watch()
 * @count: how many times the event fired for @id
 * @state: @id's state when it last fired
 * @reason: the reason it last carried
 */
struct cm_test_rej_seen {
	const struct ib_cm_id *id;
	unsigned int count;
	enum ib_cm_state state;
	int reason;
};

/**
 * struct cm_test_sent - the CM's MADs of one attribute on one port
 * @ibdev: the device watched; set by the test before cm_test_send_watch()
 * @port_num: its port watched; set likewise
 * @attr_id: the attribute watched; set likewise
 * @count: how many such MADs the CM posted since (the MAD layer's
 *	   retransmissions of a post are not counted)
 * @mad: a copy of the last one
 */
struct cm_test_sent {
	const struct ib_device *ibdev;
	u32 port_num;
	__be16 attr_id;
	unsigned int count;
	struct ib_mad mad;
};

int cm_test_send_watch(struct cm_test_sent *w);
void cm_test_send_unwatch(struct cm_test_sent *w);

bool cm_test_av_is_clear(struct ib_cm_id *cm_id, bool alt);
void cm_test_id_hold(struct ib_cm_id *cm_id);
void cm_test_id_release(struct ib_cm_id *cm_id);
unsigned int cm_test_destroy_timeouts(void);
unsigned int cm_test_destroy_wait_ms(struct ib_cm_id *cm_id);
unsigned int cm_test_destroy_wait_cap(unsigned int ms);

unsigned int cm_test_park_sends(bool on);
unsigned int cm_test_parked_sends(void);

void cm_test_on_dup_req(void (*fn)(struct ib_cm_id *cm_id));

int cm_test_rej_watch(struct cm_test_rej_seen *seen);
void cm_test_rej_unwatch(struct cm_test_rej_seen *seen);
void cm_fault_arm(int nth);
int cm_fault_disarm(void);

#endif /* IB_CM_TEST_HOOK_H */
