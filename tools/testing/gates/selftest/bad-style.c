// SPDX-License-Identifier: GPL-2.0
/*
 * Deliberately broken sample for the gate self-test: checkpatch and
 * coccicheck must both report it.  Never built.
 */
#include <linux/slab.h>

void gate_selftest_free(void *p) {
	if (p)
		kfree(p);
}
