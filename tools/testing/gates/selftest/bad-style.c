// SPDX-License-Identifier: GPL-2.0
/*
 * Deliberately broken sample for the gate self-test: checkpatch,
 * kernel-doc and coccicheck must each report it.  Never built.
 */
#include <linux/slab.h>

/**
 * gate_selftest_free() - free a buffer
 *
 * Return: nothing.
 */
void gate_selftest_free(void *p) {
	if (p)
		kfree(p);
}
