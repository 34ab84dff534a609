/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Test-only fault injection for ib_cm's own allocation sites.
 *
 * With the test hooks (IB_CM_TEST_HOOKS, set by Kbuild for
 * CONFIG_INFINIBAND_CM_TEST_HOOKS) every site where ib_cm allocates on the
 * connect, accept, reject, disconnect and SIDR paths asks cm_should_fail()
 * first and, when it answers true, behaves as if the allocation had
 * failed.  So does each step of adding a device that can fail: the
 * device's allocation and, per port, its counter groups, its MAD agent
 * and the setting of its CM capability bit.  The kernel's own fail-nth
 * counts per task; ib_cm allocates in MAD handlers and its workqueue as
 * much as in the caller's task, so this counter is global.  Other builds
 * compile every call to "false".
 */
#ifndef _CM_FAULT_H
#define _CM_FAULT_H

#include <linux/types.h>

#ifdef IB_CM_TEST_HOOKS
bool cm_should_fail(void);
void cm_fault_init(void);
void cm_fault_exit(void);
#else
static inline bool cm_should_fail(void)
{
	return false;
}

static inline void cm_fault_init(void)
{
}

static inline void cm_fault_exit(void)
{
}
#endif

#endif /* _CM_FAULT_H */
