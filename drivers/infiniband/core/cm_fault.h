/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Fault injection for ib_cm's own allocation sites, for its self-tests.
 *
 * With the test hooks (IB_CM_TEST_HOOKS, set by Kbuild for
 * CONFIG_INFINIBAND_CM_TEST_HOOKS) every site where ib_cm allocates on
 * the connect, accept, reject, disconnect and SIDR paths asks
 * cm_should_fail() first and, when it answers true, behaves as if the
 * allocation had failed.  So does each step of adding a device that can
 * fail: the device's allocation and, per port, its counter groups, its
 * MAD agent and the setting of its CM capability bit.  Without the hooks
 * every call is a constant false.
 *
 * Two engines answer, in this order:
 *
 * - A countdown of ib_cm's own (<debugfs>/ib_cm/fail_nth,
 *   cm_fault_arm()): the n-th attempt from now on fails, exactly once,
 *   whichever task or context makes it.  The fail-nth sweeps need that:
 *   ib_cm allocates in the MAD layer's receive handler and on its own
 *   workqueue as much as in the consumer's task.  The kernel's
 *   should_fail() cannot take its place there: its per-task fail-nth
 *   counts only the attempts of the task that armed it, and only in
 *   task context; the global knobs of a fault_attr count with a read
 *   followed by a separate update ("space") or with a plain increment
 *   ("interval"), so attempts made at the same time in several contexts
 *   can pass over the n-th or fail two; what is left cannot be read
 *   back; and they can be limited to one task only through that task's
 *   make-it-fail flag, which its children inherit and which arms every
 *   other task-filtered attribute as well.
 *
 * - With CONFIG_FAULT_INJECTION, when the countdown does not fire, the
 *   kernel's should_fail() on the fault_attr "fail_ib_cm"
 *   (<debugfs>/fail_ib_cm/ with CONFIG_FAULT_INJECTION_DEBUG_FS): the
 *   usual probability, interval, times, space, task-filter and
 *   stack-trace knobs, and /proc/<pid>/fail-nth of the task that makes
 *   the attempt, so that ib_cm's sites count like failslab's.
 *
 * A failure from either engine is counted in <debugfs>/ib_cm/faults and
 * its call chain kept in <debugfs>/ib_cm/last_fault.
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
