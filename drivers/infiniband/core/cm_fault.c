// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The allocation fault hook of ib_cm's test hooks (see cm_fault.h).
 *
 * debugfs, in <debugfs>/ib_cm/:
 *   fail_nth  write N: the N-th allocation ib_cm attempts from now on, in
 *             any task or context, fails; reading gives what is left of
 *             the countdown (0: it fired, or nothing is armed)
 *   faults    how many allocations were failed since the module loaded,
 *             by the countdown or by should_fail()
 *   cm_ids    how many local communication IDs exist (published or still
 *             being created): 0 once every consumer has gone, so a sweep
 *             can tell a leaked cm_id right after the step that leaked it
 *   last_fault  the call chain of the allocation failed last, innermost
 *             first, so that a sweep can say which site each step hit
 *   agent_pins  MAD agent pins held right now, over every port of every
 *             device: 0 when no send is being built or posted, so that a
 *             sweep can tell an error path that kept one (device removal
 *             would wait for it for ever)
 *
 * A sweep writes N = 1, 2, ... and runs a scenario each time, until a run
 * ends with the countdown unfired: that run met no fault and must succeed.
 * A test module sweeps the same way with cm_fault_arm() and
 * cm_fault_disarm() (cm_test_hook.h).
 *
 * With CONFIG_FAULT_INJECTION_DEBUG_FS the fault_attr behind
 * should_fail() is <debugfs>/fail_ib_cm/ (fault-injection.rst).
 */
#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/export.h>
#include <linux/fault-inject.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/stacktrace.h>
#include <linux/xarray.h>

#include "cm_fault.h"
#include "cm_priv.h"
#include "cm_test_hook.h"

/* countdown to the failing allocation; 0 = disarmed */
static atomic_t cm_fail_nth = ATOMIC_INIT(0);
/* the only task whose attempts count, or NULL for every context */
static struct task_struct *cm_fault_task;
/* allocations failed on purpose since load */
static atomic_t cm_faults = ATOMIC_INIT(0);
static struct dentry *cm_fault_dir;

#define CM_FAULT_FRAMES 8

/* protects cm_fault_stack and cm_fault_frames */
static DEFINE_SPINLOCK(cm_fault_lock);
/* return addresses of the last failed allocation's callers */
static unsigned long cm_fault_stack[CM_FAULT_FRAMES];
static unsigned int cm_fault_frames;

static noinline void cm_fault_record(void)
{
	unsigned long flags;

	spin_lock_irqsave(&cm_fault_lock, flags);
	/* Skip cm_fault_record() and cm_should_fail(): start at the site. */
	cm_fault_frames = stack_trace_save(cm_fault_stack, CM_FAULT_FRAMES, 2);
	spin_unlock_irqrestore(&cm_fault_lock, flags);
}

/* Count an attempt against the countdown: true when it fires. */
static bool cm_countdown_fires(void)
{
	struct task_struct *only = READ_ONCE(cm_fault_task);
	int left = atomic_read(&cm_fail_nth);

	if (left > 0 && only && only != current)
		return false;
	while (left > 0) {
		if (!atomic_try_cmpxchg(&cm_fail_nth, &left, left - 1))
			continue;
		return left == 1;
	}
	return false;
}

#ifdef CONFIG_FAULT_INJECTION
static DECLARE_FAULT_ATTR(fail_ib_cm);
static struct dentry *cm_fault_attr_dir;

static bool cm_kernel_fails(void)
{
	return should_fail(&fail_ib_cm, 1);
}

static void cm_fault_attr_init(void)
{
	struct dentry *dir = fault_create_debugfs_attr("fail_ib_cm", NULL,
						       &fail_ib_cm);

	cm_fault_attr_dir = IS_ERR(dir) ? NULL : dir;
}

static void cm_fault_attr_exit(void)
{
	debugfs_remove(cm_fault_attr_dir);
	cm_fault_attr_dir = NULL;
}
#else
static bool cm_kernel_fails(void)
{
	return false;
}

static void cm_fault_attr_init(void)
{
}

static void cm_fault_attr_exit(void)
{
}
#endif

/**
 * cm_should_fail() - ask whether this allocation attempt is to fail
 *
 * Counts the attempt against the armed countdown and, when that does not
 * fire, asks should_fail() (with CONFIG_FAULT_INJECTION).  Safe in any
 * context.  Not inlined, so that last_fault starts at the site.
 *
 * Return: true for the attempt that takes the countdown from 1 to 0, or
 * that should_fail() picks.
 */
noinline bool cm_should_fail(void)
{
	if (!cm_countdown_fires() && !cm_kernel_fails())
		return false;
	atomic_inc(&cm_faults);
	cm_fault_record();
	return true;
}

/**
 * cm_fault_arm() - arm the countdown for the calling task
 * @nth: the allocation to fail, counting from 1 from now on; 0 disarms
 *
 * The countdown of <debugfs>/ib_cm/fail_nth, but only the caller's own
 * attempts count (a test module adding a device: the add runs in its
 * task), so that ib_cm's work for other consumers meanwhile cannot use
 * the fault up.
 */
void cm_fault_arm(int nth)
{
	WRITE_ONCE(cm_fault_task, current);
	atomic_set(&cm_fail_nth, nth);
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_fault_arm);

/**
 * cm_fault_disarm() - disarm the countdown
 *
 * Return: what was left of it: 0 when the armed allocation failed (or
 * nothing was armed), else how many more attempts it would have let pass.
 */
int cm_fault_disarm(void)
{
	int left = atomic_xchg(&cm_fail_nth, 0);

	WRITE_ONCE(cm_fault_task, NULL);
	return left;
}
EXPORT_SYMBOL_FOR_CM_TEST(cm_fault_disarm);

static int cm_fault_ids_get(void *data, u64 *val)
{
	unsigned long index = 0;
	u64 n = 0;

	while (xa_find(&cmg.ids, &index, ULONG_MAX, XA_PRESENT)) {
		n++;
		if (index == ULONG_MAX)
			break;
		index++;
	}
	*val = n;
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(cm_fault_ids_fops, cm_fault_ids_get, NULL, "%llu\n");

static int cm_fault_pins_get(void *data, u64 *val)
{
	struct cm_device *dev;
	unsigned long flags;
	u32 i;

	*val = 0;
	read_lock_irqsave(&cmg.dev_lock, flags);
	list_for_each_entry(dev, &cmg.devices, node)
		for (i = 0; i < dev->nports; i++)
			*val += atomic_read(&dev->port[i].agent_users);
	read_unlock_irqrestore(&cmg.dev_lock, flags);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(cm_fault_pins_fops, cm_fault_pins_get, NULL, "%llu\n");

static int last_fault_show(struct seq_file *m, void *unused)
{
	unsigned long stack[CM_FAULT_FRAMES];
	unsigned int i, n;

	spin_lock_irq(&cm_fault_lock);
	n = cm_fault_frames;
	memcpy(stack, cm_fault_stack, sizeof(stack));
	spin_unlock_irq(&cm_fault_lock);
	for (i = 0; i < n; i++)
		seq_printf(m, "%pS\n", (void *)stack[i]);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(last_fault);

/**
 * cm_fault_init() - publish the knobs in debugfs
 *
 * A missing debugfs only leaves the hook disarmed.
 */
void cm_fault_init(void)
{
	cm_fault_dir = debugfs_create_dir("ib_cm", NULL);
	debugfs_create_atomic_t("fail_nth", 0600, cm_fault_dir, &cm_fail_nth);
	debugfs_create_atomic_t("faults", 0400, cm_fault_dir, &cm_faults);
	debugfs_create_file_unsafe("cm_ids", 0400, cm_fault_dir, NULL,
				   &cm_fault_ids_fops);
	debugfs_create_file("last_fault", 0400, cm_fault_dir, NULL,
			    &last_fault_fops);
	debugfs_create_file_unsafe("agent_pins", 0400, cm_fault_dir, NULL,
				   &cm_fault_pins_fops);
	cm_fault_attr_init();
}

/**
 * cm_fault_exit() - remove the knobs and disarm
 */
void cm_fault_exit(void)
{
	cm_fault_attr_exit();
	debugfs_remove(cm_fault_dir);
	atomic_set(&cm_fail_nth, 0);
}
