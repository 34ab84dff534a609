/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The fake SR-IOV master of the PV-CM test modules (pvcm_test.c,
 * pvcm_fuzz.c), which drive the cache of the cm.o they are linked with
 * through it.  Include once per module, after defining:
 *
 *	PVCM_T_PORT	the port the VFs' GIDs are on
 *	PVCM_T_GID_BASE	the GID interface id of slave 0; slave n has + n
 *	PVCM_T_SLAVES	how many slaves have a GID
 */
#ifndef MLX4_IB_PVCM_TEST_UTIL_H
#define MLX4_IB_PVCM_TEST_UTIL_H

#include <linux/slab.h>

#include "mlx4_ib.h"
#include "pvcm_priv.h"

static struct mlx4_ib_dev *t_dev;
static struct mlx4_dev *t_mdev;

#define t_pv (&t_dev->sriov.pvcm)

/*
 * The mad.c functions cm.c calls, for the linker: the module that
 * includes this has no mad.o.  GID interface id -> slave here, the
 * partition check below.
 */
int mlx4_ib_find_real_gid(struct ib_device *ibdev, u32 port, __be64 guid)
{
	u64 id = be64_to_cpu(guid);

	if (port != PVCM_T_PORT || id < PVCM_T_GID_BASE ||
	    id >= PVCM_T_GID_BASE + PVCM_T_SLAVES)
		return -1;
	return id - PVCM_T_GID_BASE;
}

/*
 * mad.c's partition check: on every port, each slave is a member of the
 * partition at P_Key index 0, none of the one at PVCM_T_PKEY_FOREIGN,
 * and those of even number of the one at PVCM_T_PKEY_EVEN.
 */
#define PVCM_T_PKEY_FOREIGN	1
#define PVCM_T_PKEY_EVEN	2

bool mlx4_ib_slave_has_pkey(struct mlx4_ib_dev *dev, int slave, u32 port,
			    u16 pkey_index)
{
	switch (pkey_index) {
	case 0:
		return true;
	case PVCM_T_PKEY_EVEN:
		return !(slave & 1);
	default:
		return false;
	}
}

/*
 * Bring up the cache of a master device named @name: its slab cache and
 * debugfs directory are named after this module.  The caller sets the
 * test timeouts first.
 */
static int pvcm_t_master_add(const char *name)
{
#ifdef HAVE_KMALLOC_OBJ
	t_mdev = kzalloc_obj(*t_mdev);
	t_dev = kzalloc_obj(*t_dev);
#else
	t_mdev = kzalloc(sizeof(*t_mdev), GFP_KERNEL);
	t_dev = kzalloc(sizeof(*t_dev), GFP_KERNEL);
#endif
	if (!t_mdev || !t_dev)
		goto err;
	t_mdev->flags = MLX4_FLAG_MASTER;
	t_dev->dev = t_mdev;
	if (dev_set_name(&t_dev->ib_dev.dev, "%s", name))
		goto err;
	if (mlx4_ib_cm_init())
		goto err;
	mlx4_ib_cm_paravirt_init(t_dev);
	if (!t_pv->ready) {
		mlx4_ib_cm_destroy();
		goto err;
	}
	return 0;
err:
	if (t_dev)
		kfree_const(t_dev->ib_dev.dev.kobj.name);
	kfree(t_dev);
	kfree(t_mdev);
	return -ENOMEM;
}

static void pvcm_t_master_del(void)
{
	mlx4_ib_cm_paravirt_destroy(t_dev);
	mlx4_ib_cm_destroy();
	kfree_const(t_dev->ib_dev.dev.kobj.name);
	kfree(t_dev);
	kfree(t_mdev);
}

#endif /* MLX4_IB_PVCM_TEST_UTIL_H */
