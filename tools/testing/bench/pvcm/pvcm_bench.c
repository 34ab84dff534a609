// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Benchmark of an mlx4_ib PV-CM id cache implementation.
 *
 * The module is built once per implementation: CM_SOURCE names the cm.c to
 * compile in (the distro's or ours, each next to the mlx4_ib.h it was
 * written for) and PVCM_BENCH_IMPL names the variant in the output.  Only
 * the entry points both implementations export are used, on a fake master
 * device that has just the fields both need.
 *
 * For every size n: n connections spread over the slaves are opened, the
 * memory this costs is measured, then 1..k kthreads replay multiplex +
 * demux pairs on random existing connections for a fixed time (or number
 * of pairs), and everything is torn down the way the driver does it.  A
 * fill is interleaved (fill=interleaved: each connection is opened
 * completely, REQ, the peer's REP, the VF's RTU, before the next one) or a
 * burst (fill=burst: all n REQs are multiplexed first, timed as a whole,
 * as a VF that starts many connections at once sends them; then, untimed
 * as a whole, each peer's REP and the VF's RTU).  With loopback=1 each
 * REQ goes to another VF of the master and comes back in through the
 * demux handler, in the REQ's time.  One line per fill and one per
 * measurement are printed:
 *
 *   pvcm-bench impl=ours n=100000 fill=burst fill_per_s=... ...
 *   pvcm-bench impl=ours n=100000 threads=2 op=rtu ops_per_s=... ...
 *
 * ops_per_s counts pairs (one multiplex and one demux, both checked) per
 * second over all threads; fill_per_s is connections opened per second
 * (a burst: REQs per second).  Memory per entry is given twice:
 * bytes_per_entry is the slab + vmalloc growth of the fill divided by n,
 * free_bytes_per_entry the drop of the free pages (the buddy's and those
 * on the per-cpu lists) divided by n.
 *
 * This measures, it asserts nothing about speed.  By default the load
 * fails with -EAGAIN once the results are printed, so nothing stays
 * loaded.  With hold=1 the module fills the first size and stays loaded;
 * each write of a thread count to /sys/module/<name>/parameters/run does
 * one measurement (so two implementations can be measured in alternating
 * slices), and rmmod tears the cache down.
 */
#ifndef CM_SOURCE
#error "build with -DCM_SOURCE='\"/path/to/cm.c\"'"
#endif
#ifndef PVCM_BENCH_IMPL
#define PVCM_BENCH_IMPL "unknown"
#endif

#include CM_SOURCE

#undef pr_fmt
#define pr_fmt(fmt) "pvcm-bench impl=" PVCM_BENCH_IMPL " " fmt

#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/vmalloc.h>
#include <linux/vmstat.h>

#define PB_PORT		1
#define PB_MAX_SIZES	8
#define PB_MAX_THREADS	8
#define PB_PEER_BASE	0x40000000u	/* remote comm ids of the peers */
#define PB_SL_SCRAMBLE	0x2c5a9e31u	/* VF ids look random, as ib_cm's */

static unsigned int n_list[PB_MAX_SIZES] = { 1000, 100000, 1000000 };
static int n_count = 3;
module_param_array_named(n, n_list, uint, &n_count, 0444);
MODULE_PARM_DESC(n, "connection counts to run, comma separated (default 1000,100000,1000000)");

static unsigned int thread_list[PB_MAX_THREADS] = { 1, 2 };
static int thread_count = 2;
module_param_array_named(threads, thread_list, uint, &thread_count, 0444);
MODULE_PARM_DESC(threads, "kthread counts to run, comma separated (default 1,2)");

static unsigned int duration_ms = 2000;
module_param(duration_ms, uint, 0444);
MODULE_PARM_DESC(duration_ms, "time per measurement when ops is 0 (default 2000)");

static unsigned long ops;
module_param(ops, ulong, 0444);
MODULE_PARM_DESC(ops, "pairs per measurement, split over the threads; 0 = run for duration_ms");

static unsigned int slaves = 64;
module_param(slaves, uint, 0444);
MODULE_PARM_DESC(slaves, "VFs the connections are spread over (default 64)");

static char *op = "rtu";
module_param(op, charp, 0444);
MODULE_PARM_DESC(op, "messages of the measured pairs: rtu, mra, apr (each both ways) or lap (the VF's RTU out, the peer's LAP in) (default rtu)");

static char *fill = "interleaved";
module_param(fill, charp, 0444);
MODULE_PARM_DESC(fill, "how connections are opened: interleaved (REQ, REP, RTU, then the next) or burst (every REQ first) (default interleaved)");

/* the messages of a measured pair: the VF's, then the peer's */
struct pb_op {
	const char *name;
	__be16 out;
	__be16 in;
};

static const struct pb_op pb_ops[] = {
	{ "rtu", CM_RTU_ATTR_ID, CM_RTU_ATTR_ID },
	{ "mra", CM_MRA_ATTR_ID, CM_MRA_ATTR_ID },
	{ "apr", CM_APR_ATTR_ID, CM_APR_ATTR_ID },	/* no lifecycle event */
	{ "lap", CM_RTU_ATTR_ID, CM_LAP_ATTR_ID },
};

static const struct pb_op *pb_op_find(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(pb_ops); i++)
		if (sysfs_streq(name, pb_ops[i].name))
			return &pb_ops[i];
	return NULL;
}

/* one run: the fake device and what the fill phase learnt */
struct pb_run {
	struct mlx4_ib_dev *dev;
	u32 n;
	u32 *pv_ids;		/* pv_cm_id the cache gave connection i */
	const struct pb_op *op;	/* messages of the measured pairs */
	bool burst;		/* filled by a burst of REQs */
	unsigned int slices;	/* measurements done */
	long total;		/* bytes the fill took: slab + vmalloc */
	long slab;		/* bytes the fill took in slab pages */
	long free;		/* free pages the fill took, per-cpu lists too */
	long buddy;		/* free pages the fill took, the buddy's only */
	u64 fill_rate;		/* connections opened per second */
	u64 msg_ns[3];		/* fill time in REQ mux, REP demux, RTU mux */
};

struct pb_thread {
	struct pb_run *run;
	const struct pb_op *op;
	struct task_struct *task;
	struct completion *go;
	struct completion done;
	unsigned long quota;	/* pairs to do, 0 = until @end */
	unsigned long end;	/* jiffies */
	u32 seed;
	u64 pairs;
	u64 errors;
};

static bool loopback;
module_param(loopback, bool, 0444);
MODULE_PARM_DESC(loopback, "the REQs go to another VF of the master (VF i + 1), not to a remote node (default 0)");

#define PB_GUID_BASE	0x0002c90300a1b200ULL	/* VF s has GUID base + s */

/*
 * The mad.c function that finds the VF owning a port GUID: the distro's
 * cm.c asks it for the demux of a REQ, ours also for the multiplex of a
 * REQ (the VF's REQ to another VF).  Only the bench's own GUIDs belong to
 * a VF, and only when the REQs are meant to go to one.
 */
int mlx4_ib_find_real_gid(struct ib_device *ibdev, u32 port, __be64 guid)
{
	u64 s = be64_to_cpu(guid) - PB_GUID_BASE;

	return loopback && s < slaves ? s : -1;
}

/*
 * Connection i belongs to VF (i % slaves) and has a per-VF unique id; in
 * a burst the VF's id is i itself, as a VF handing out ids in sequence.
 */
static int pb_slave(u32 i)
{
	return i % slaves;
}

static u32 pb_sl_id(const struct pb_run *run, u32 i)
{
	if (run->burst)
		return i;
	return (i / slaves + 1) ^ PB_SL_SCRAMBLE;
}

static void pb_mad_init(struct ib_mad *mad)
{
	memset(mad, 0, sizeof(*mad));
	mad->mad_hdr.base_version = IB_MGMT_BASE_VERSION;
	mad->mad_hdr.mgmt_class = IB_MGMT_CLASS_CM;
	mad->mad_hdr.class_version = 2;
	mad->mad_hdr.method = IB_MGMT_METHOD_SEND;
}

/* only the fields the caches read change between messages */
static void pb_mad_set(struct ib_mad *mad, __be16 attr, u32 local, u32 remote)
{
	mad->mad_hdr.attr_id = attr;
	put_unaligned_be32(local, mad->data);
	put_unaligned_be32(remote, mad->data + 4);
}

static int pb_mux(struct pb_run *run, int slave, struct ib_mad *mad)
{
	return mlx4_ib_multiplex_cm_handler(&run->dev->ib_dev, PB_PORT, slave,
					    mad);
}

/* ours is also told the P_Key index, and asks mad.c about it */
#ifdef PVCM_CM_CLASS_VERSION
bool mlx4_ib_slave_has_pkey(struct mlx4_ib_dev *dev, int slave, u32 port,
			    u16 pkey_index)
{
	return true;
}

static int pb_demux(struct pb_run *run, int *slave, struct ib_mad *mad)
{
	return mlx4_ib_demux_cm_handler(&run->dev->ib_dev, PB_PORT, slave, 0,
					mad);
}
#else
static int pb_demux(struct pb_run *run, int *slave, struct ib_mad *mad)
{
	return mlx4_ib_demux_cm_handler(&run->dev->ib_dev, PB_PORT, slave,
					mad);
}
#endif

/*
 * One measured pair on connection i: the VF's message goes out (looked up
 * by (slave, sl_cm_id)), the peer's answer comes in (looked up by
 * pv_cm_id).  Both rewrites are checked, a wrong answer is an error.
 */
static bool pb_pair(struct pb_run *run, const struct pb_op *op,
		    struct ib_mad *mad, u32 i)
{
	u32 sl = pb_sl_id(run, i), pv = run->pv_ids[i];
	int slave = pb_slave(i), to = -1;

	pb_mad_set(mad, op->out, sl, PB_PEER_BASE + i);
	if (pb_mux(run, slave, mad) || get_unaligned_be32(mad->data) != pv)
		return false;
	pb_mad_set(mad, op->in, PB_PEER_BASE + i, pv);
	if (pb_demux(run, &to, mad) || to != slave ||
	    get_unaligned_be32(mad->data + 4) != sl)
		return false;
	return true;
}

static u32 pb_next(u32 *seed)
{
	u32 x = *seed;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*seed = x;
	return x;
}

static int pb_thread_fn(void *arg)
{
	struct pb_thread *t = arg;
	struct pb_run *run = t->run;
	struct ib_mad *mad;

#ifdef HAVE_KMALLOC_OBJ
	mad = kmalloc_obj(*mad);
#else
	mad = kmalloc(sizeof(*mad), GFP_KERNEL);
#endif
	if (mad)
		pb_mad_init(mad);
	wait_for_completion(t->go);
	while (mad) {
		if (!pb_pair(run, t->op, mad,
			     reciprocal_scale(pb_next(&t->seed), run->n)))
			t->errors++;
		t->pairs++;
		if (t->quota ? t->pairs >= t->quota :
		    !(t->pairs & 63) && time_after(jiffies, t->end))
			break;
		if (!(t->pairs & 255))
			cond_resched();
	}
	if (!mad)
		t->errors++;
	kfree(mad);
	complete(&t->done);
	while (!kthread_should_stop())
		schedule_timeout_interruptible(HZ / 10);
	return 0;
}

/* pairs per second with @nthreads kthreads, or 0 if they did not start */
static u64 pb_measure(struct pb_run *run, const struct pb_op *op,
		      unsigned int nthreads, u64 *errors)
{
	DECLARE_COMPLETION_ONSTACK(go);
	struct pb_thread *t;
	u64 pairs = 0, wall;
	unsigned int i, started = 0;
	ktime_t t0;

	*errors = 0;
	t = kcalloc(nthreads, sizeof(*t), GFP_KERNEL);
	if (!t)
		return 0;
	for (i = 0; i < nthreads; i++) {
		t[i].run = run;
		t[i].op = op;
		t[i].go = &go;
		t[i].seed = 0x9e3779b9u * (i + 1);
		t[i].quota = ops ? max(ops / nthreads, 1UL) : 0;
		init_completion(&t[i].done);
		t[i].task = kthread_create(pb_thread_fn, &t[i], "pvcm_bench/%u",
					   i);
		if (IS_ERR(t[i].task))
			break;
		kthread_bind(t[i].task, i % num_online_cpus());
		wake_up_process(t[i].task);
		started++;
	}
	t0 = ktime_get();
	for (i = 0; i < started; i++)
		t[i].end = jiffies + msecs_to_jiffies(duration_ms);
	complete_all(&go);
	for (i = 0; i < started; i++)
		wait_for_completion(&t[i].done);
	wall = ktime_to_ns(ktime_sub(ktime_get(), t0));
	for (i = 0; i < started; i++) {
		kthread_stop(t[i].task);
		pairs += t[i].pairs;
		*errors += t[i].errors;
	}
	kfree(t);
	if (started < nthreads || !wall)
		return 0;
	return div64_u64(pairs * NSEC_PER_SEC, wall);
}

/*
 * Memory held by the kernel for the caches, measured two ways.  What the
 * allocators say they hold: slab pages (entries, xarray nodes, small and
 * large kmallocs) plus vmalloc'ed bytes (big hash tables).  And what the
 * page allocator no longer has free, whoever took it: the free pages of
 * the buddy lists plus those on the per-cpu lists (pages freed there are
 * free, but not counted in NR_FREE_PAGES until a drain; a module cannot
 * drain them, it counts them instead).  The per-cpu counter deltas are
 * folded first through vm.stat_refresh ("cat /proc/sys/vm/stat_refresh");
 * VmallocUsed is read from /proc/meminfo.
 */
struct pb_mem {
	long slab;		/* bytes */
	long vmalloc;		/* bytes */
	long buddy;		/* bytes free in the buddy lists */
	long pcp;		/* bytes on the per-cpu free lists */
	bool exact;		/* folded and VmallocUsed read */
};

static bool pb_vmstat_fold(void)
{
	struct file *f;
	loff_t pos = 0;
	bool ok;

	f = filp_open("/proc/sys/vm/stat_refresh", O_WRONLY, 0);
	if (IS_ERR(f))
		return false;
	ok = kernel_write(f, "1\n", 2, &pos) == 2;
	filp_close(f, NULL);
	return ok;
}

static bool pb_vmalloc_used(long *bytes)
{
	const size_t size = 8192;
	unsigned long kb;
	struct file *f;
	loff_t pos = 0;
	char *buf, *line;
	ssize_t len;
	bool ok = false;

	buf = kmalloc(size, GFP_KERNEL);
	if (!buf)
		return false;
	f = filp_open("/proc/meminfo", O_RDONLY, 0);
	if (IS_ERR(f))
		goto out;
	len = kernel_read(f, buf, size - 1, &pos);
	filp_close(f, NULL);
	if (len <= 0)
		goto out;
	buf[len] = '\0';
	line = strstr(buf, "VmallocUsed:");
	if (line && sscanf(line, "VmallocUsed: %lu kB", &kb) == 1) {
		*bytes = kb * 1024;
		ok = true;
	}
out:
	kfree(buf);
	return ok;
}

/* pages on the per-cpu free lists of every populated zone */
static long pb_pcp_pages(void)
{
	struct zone *zone;
	long pages = 0;
	int nid, z, cpu;

	for_each_online_node(nid) {
		for (z = 0; z < MAX_NR_ZONES; z++) {
			zone = &NODE_DATA(nid)->node_zones[z];
			if (!populated_zone(zone) || !zone->per_cpu_pageset)
				continue;
			for_each_possible_cpu(cpu)
				pages += READ_ONCE(per_cpu_ptr(zone->per_cpu_pageset,
							       cpu)->count);
		}
	}
	return pages;
}

static void pb_mem_read(struct pb_mem *m)
{
	bool folded = pb_vmstat_fold();

	m->vmalloc = 0;
	m->exact = pb_vmalloc_used(&m->vmalloc) && folded;
	m->slab = (global_node_page_state_pages(NR_SLAB_RECLAIMABLE_B) +
		   global_node_page_state_pages(NR_SLAB_UNRECLAIMABLE_B)) *
		  PAGE_SIZE;
	m->buddy = global_zone_page_state(NR_FREE_PAGES) * PAGE_SIZE;
	m->pcp = pb_pcp_pages() * PAGE_SIZE;
}

/* what the fill from @b to @a took, by each measure */
static void pb_mem_took(struct pb_run *run, const struct pb_mem *b,
			const struct pb_mem *a)
{
	run->slab = a->slab - b->slab;
	run->total = run->slab + a->vmalloc - b->vmalloc;
	run->buddy = b->buddy - a->buddy;
	run->free = run->buddy + b->pcp - a->pcp;
}

static long pb_per_entry(long bytes, u32 n)
{
	return div_s64(bytes, n);
}

/*
 * The destination port GID of a REQ: VF i + 1's in loopback mode, else a
 * remote node's.  Ours reads it when multiplexing, both when the REQ
 * comes back in (loopback).  The MAD's bytes 0x60 on: the distro's
 * cm.c calls them primary_path_sgid.
 */
static void pb_req_dest(struct ib_mad *mad, u32 i)
{
	union ib_gid gid = {};

	gid.global.subnet_prefix = cpu_to_be64(0xfe80000000000000ULL);
	gid.global.interface_id = cpu_to_be64(PB_GUID_BASE + slaves +
					      (i % slaves));
	if (loopback)
		gid.global.interface_id =
			cpu_to_be64(PB_GUID_BASE + (i + 1) % slaves);
	BUILD_BUG_ON(offsetof(struct ib_mad, data) + 72 != 0x60);
	memcpy(mad->data + 72, &gid, sizeof(gid));
}

/*
 * The VF's REQ of connection i creates its mapping.  In loopback mode
 * the REQ then comes back in to its target, VF i + 1, through the demux
 * handler, as it does from the wire: that is part of the REQ's time,
 * for both implementations (each does some of a VF-to-VF REQ's work
 * there: the distro's remembers the REQ for a REJ(timeout)).
 */
static int pb_req(struct pb_run *run, struct ib_mad *mad, u32 i)
{
	int ret, to = -1;
	u64 t0;

	pb_mad_set(mad, CM_REQ_ATTR_ID, pb_sl_id(run, i), 0);
	pb_req_dest(mad, i);
	t0 = ktime_get_ns();
	ret = pb_mux(run, pb_slave(i), mad);
	if (!ret && loopback)
		ret = pb_demux(run, &to, mad);
	run->msg_ns[0] += ktime_get_ns() - t0;
	if (ret)
		return ret;
	if (loopback && to != pb_slave(i + 1))
		return -EIO;
	run->pv_ids[i] = get_unaligned_be32(mad->data);
	return 0;
}

/* the peer's REP makes the peer known, the VF's RTU establishes it */
static int pb_rep_rtu(struct pb_run *run, struct ib_mad *mad, u32 i)
{
	int slave = pb_slave(i), to = -1, ret;
	u32 sl = pb_sl_id(run, i);
	u64 t0;

	pb_mad_set(mad, CM_REP_ATTR_ID, PB_PEER_BASE + i, run->pv_ids[i]);
	t0 = ktime_get_ns();
	ret = pb_demux(run, &to, mad);
	run->msg_ns[1] += ktime_get_ns() - t0;
	if (ret)
		return ret;
	if (to != slave || get_unaligned_be32(mad->data + 4) != sl)
		return -EIO;
	pb_mad_set(mad, CM_RTU_ATTR_ID, sl, PB_PEER_BASE + i);
	t0 = ktime_get_ns();
	ret = pb_mux(run, slave, mad);
	run->msg_ns[2] += ktime_get_ns() - t0;
	if (ret)
		return ret;
	return get_unaligned_be32(mad->data) == run->pv_ids[i] ? 0 : -EIO;
}

/*
 * Open the n connections, interleaved or as a burst; @took is set to the
 * time of the fill, or of the burst of REQs alone, and @after to the
 * memory then.  Returns 0 or the error of connection *@failed.
 */
static int pb_open_all(struct pb_run *run, u64 *took, struct pb_mem *after,
		       u32 *failed)
{
	struct ib_mad *mad;
	ktime_t t0;
	int ret = 0;
	u32 i;

#ifdef HAVE_KMALLOC_OBJ
	mad = kmalloc_obj(*mad);
#else
	mad = kmalloc(sizeof(*mad), GFP_KERNEL);
#endif
	*failed = 0;
	if (!mad)
		return -ENOMEM;
	pb_mad_init(mad);
	t0 = ktime_get();
	for (i = 0; i < run->n && !ret; i++) {
		ret = pb_req(run, mad, i);
		if (!ret && !run->burst)
			ret = pb_rep_rtu(run, mad, i);
		if (!(i & 255))
			cond_resched();
	}
	*took = ktime_to_ns(ktime_sub(ktime_get(), t0));
	pb_mem_read(after);
	for (i = 0; run->burst && i < run->n && !ret; i++) {
		ret = pb_rep_rtu(run, mad, i);
		if (!(i & 255))
			cond_resched();
	}
	kfree(mad);
	if (ret)
		*failed = i - 1;
	return ret;
}

static struct mlx4_ib_dev *pb_dev_alloc(void)
{
	struct mlx4_ib_dev *dev;

#ifdef HAVE_KMALLOC_OBJ
	dev = kzalloc_obj(*dev);
#else
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
#endif
	if (!dev)
		return NULL;
#ifdef HAVE_KMALLOC_OBJ
	dev->dev = kzalloc_obj(*dev->dev);
#else
	dev->dev = kzalloc(sizeof(*dev->dev), GFP_KERNEL);
#endif
	if (!dev->dev) {
		kfree(dev);
		return NULL;
	}
	dev->dev->flags = MLX4_FLAG_MASTER;
	spin_lock_init(&dev->sriov.going_down_lock);
	dev->sriov.is_going_down = 0;
	return dev;
}

static void pb_dev_free(struct mlx4_ib_dev *dev)
{
	kfree(dev->dev);
	kfree(dev);
}

/*
 * What the driver does when the master goes away: ours has a teardown
 * function of its own, the distro's cm.c reads slave -1 as "all".
 */
#ifdef PVCM_CM_CLASS_VERSION
#define pb_paravirt_teardown(dev)	mlx4_ib_cm_paravirt_destroy(dev)
#else
#define pb_paravirt_teardown(dev)	mlx4_ib_cm_paravirt_clean(dev, -1)
#endif

/* fill n connections, measure, tear down; false if the harness failed */
/* what the driver does when the master goes away, then the harness */
static void pb_teardown(struct pb_run *run)
{
	if (!run)
		return;
	pb_paravirt_teardown(run->dev);
	pb_dev_free(run->dev);
	vfree(run->pv_ids);
	kfree(run);
}

/*
 * Set up a fake master and open n connections on it; prints the fill rate
 * and the memory.  Returns NULL (after cleaning up) if that failed, or
 * ERR_PTR(-EAGAIN) if n does not fit the free memory.
 */
static struct pb_run *pb_fill(u32 n, const struct pb_op *op, bool burst,
			      bool warm)
{
	struct pb_mem before, after;
	struct pb_run *run;
	struct sysinfo si;
	u64 fill_ns;
	u32 failed;
	int ret;

	/* about 4x the distro's entry plus the id array must stay free */
	si_meminfo(&si);
	if ((u64)n * 1024 > (u64)si.freeram * si.mem_unit) {
		pr_info("n=%u skipped: needs about %llu MiB, %llu MiB free\n",
			n, ((u64)n * 1024) >> 20,
			((u64)si.freeram * si.mem_unit) >> 20);
		return ERR_PTR(-EAGAIN);
	}

#ifdef HAVE_KMALLOC_OBJ
	run = kzalloc_obj(*run);
#else
	run = kzalloc(sizeof(*run), GFP_KERNEL);
#endif
	if (!run)
		goto nomem;
	run->n = n;
	run->op = op;
	run->burst = burst;
	run->pv_ids = vzalloc(array_size(n, sizeof(*run->pv_ids)));
	run->dev = pb_dev_alloc();
	if (!run->pv_ids || !run->dev)
		goto nomem;

	pb_mem_read(&before);
	mlx4_ib_cm_paravirt_init(run->dev);
	ret = pb_open_all(run, &fill_ns, &after, &failed);
	if (ret) {
		pr_info("n=%u error: opening connection %u failed (%d)\n",
			n, failed, ret);
		pb_teardown(run);
		return NULL;
	}

	pb_mem_took(run, &before, &after);
	run->fill_rate = fill_ns ?
			 div64_u64((u64)n * NSEC_PER_SEC, fill_ns) : 0;
	/*
	 * req_ns: a burst's time per REQ, everything the burst ran (deferred
	 * work too); req_call_ns: the time inside the REQ's multiplex call
	 * and, in loopback mode, its demux call at the target.
	 */
	pr_info("n=%u %sfill=%s fill_per_s=%llu bytes_per_entry=%ld slab_bytes_per_entry=%ld free_bytes_per_entry=%ld buddy_bytes_per_entry=%ld exact=%d req_ns=%llu req_call_ns=%llu rep_ns=%llu rtu_ns=%llu\n",
		n, warm ? "warmup " : "", burst ? "burst" : "interleaved",
		run->fill_rate, pb_per_entry(run->total, n),
		pb_per_entry(run->slab, n), pb_per_entry(run->free, n),
		pb_per_entry(run->buddy, n), before.exact && after.exact,
		div_u64(burst ? fill_ns : run->msg_ns[0], n),
		div_u64(run->msg_ns[0], n), div_u64(run->msg_ns[1], n),
		div_u64(run->msg_ns[2], n));
	return run;

nomem:
	pr_info("n=%u error: no memory for the harness\n", n);
	if (run) {
		if (run->dev)
			pb_dev_free(run->dev);
		vfree(run->pv_ids);
		kfree(run);
	}
	return NULL;
}

/* one measurement of @op with @nthreads; false if it failed or saw errors */
static bool pb_report(struct pb_run *run, const struct pb_op *op,
		      unsigned int nthreads)
{
	u64 rate, errors;

	rate = pb_measure(run, op, nthreads, &errors);
	pr_info("n=%u threads=%u op=%s fill=%s slice=%u ops_per_s=%llu errors=%llu\n",
		run->n, nthreads, op->name,
		run->burst ? "burst" : "interleaved", run->slices++, rate,
		errors);
	return rate && !errors;
}

static const struct pb_op *pb_op;
static bool pb_burst;
static bool hold;
module_param(hold, bool, 0444);
MODULE_PARM_DESC(hold, "fill the first size and stay loaded; measure by writing a thread count to the run parameter; rmmod cleans up");

static bool warmup;
module_param(warmup, bool, 0444);
MODULE_PARM_DESC(warmup, "hold mode: fill and tear down once before the measured fill, so that it finds the slabs of a cache that has been used");

/* the hold mode's connections; pb_run_set() runs under the param lock */
static struct pb_run *pb_held;

/* "THREADS" measures the op of the load, "THREADS OP" another */
static int pb_run_set(const char *val, const struct kernel_param *kp)
{
	const struct pb_op *o = pb_op;
	unsigned int nthreads;
	char name[8] = "";

	if (sscanf(val, "%u %7s", &nthreads, name) < 1)
		return -EINVAL;
	if (name[0])
		o = pb_op_find(name);
	if (!o || !nthreads || nthreads > 64)
		return -EINVAL;
	if (!pb_held)
		return -ENODEV;
	return pb_report(pb_held, o, nthreads) ? 0 : -EIO;
}

static const struct kernel_param_ops pb_run_ops = {
	.set = pb_run_set,
};
module_param_cb(run, &pb_run_ops, NULL, 0200);
MODULE_PARM_DESC(run, "hold mode: write a thread count, optionally followed by an op, to measure once");

static int __init pvcm_bench_init(void)
{
	struct pb_run *run;
	bool ok = true;
	unsigned int k;
	int i, ret;

	pb_op = pb_op_find(op);
	if (!pb_op) {
		pr_info("error: op=%s is not rtu, mra, apr or lap\n", op);
		return -EINVAL;
	}
	if (sysfs_streq(fill, "burst") || sysfs_streq(fill, "interleaved")) {
		pb_burst = sysfs_streq(fill, "burst");
	} else {
		pr_info("error: fill=%s is not interleaved or burst\n", fill);
		return -EINVAL;
	}
	if (!slaves || slaves > MLX4_MFUNC_MAX) {
		pr_info("error: slaves=%u is not 1..%d\n", slaves,
			MLX4_MFUNC_MAX);
		return -EINVAL;
	}

	ret = mlx4_ib_cm_init();
	if (ret) {
		pr_info("error: mlx4_ib_cm_init() = %d\n", ret);
		return ret;
	}
	pr_info("start sizes=%d threads=%d duration_ms=%u ops=%lu slaves=%u cpus=%u hold=%d fill=%s loopback=%d\n",
		n_count, thread_count, duration_ms, ops, slaves,
		num_online_cpus(), hold, fill, loopback);

	if (hold) {
		if (warmup && n_count) {
			run = pb_fill(n_list[0], pb_op, pb_burst, true);
			if (IS_ERR_OR_NULL(run)) {
				mlx4_ib_cm_destroy();
				return run ? PTR_ERR(run) : -EIO;
			}
			pb_teardown(run);
		}
		run = n_count ? pb_fill(n_list[0], pb_op, pb_burst, false) :
				NULL;
		if (!IS_ERR_OR_NULL(run)) {
			pb_held = run;
			pr_info("holding n=%u\n", run->n);
			return 0;
		}
		mlx4_ib_cm_destroy();
		return run ? PTR_ERR(run) : -EIO;
	}

	for (i = 0; i < n_count; i++) {
		if (!n_list[i])
			continue;
		run = pb_fill(n_list[i], pb_op, pb_burst, false);
		if (IS_ERR(run))
			continue;
		if (!run) {
			ok = false;
			continue;
		}
		for (k = 0; k < thread_count; k++)
			ok &= pb_report(run, pb_op, thread_list[k]);
		pb_teardown(run);
	}
	mlx4_ib_cm_destroy();
	pr_info("done %s\n", ok ? "ok" : "with errors");
	/* the results are in the log: do not stay loaded */
	return -EAGAIN;
}
module_init(pvcm_bench_init);

static void __exit pvcm_bench_exit(void)
{
	/* only the hold mode stays loaded */
	pb_teardown(pb_held);
	pb_held = NULL;
	mlx4_ib_cm_destroy();
	pr_info("done ok\n");
}
module_exit(pvcm_bench_exit);

MODULE_DESCRIPTION("mlx4_ib PV-CM id cache benchmark (" PVCM_BENCH_IMPL ")");
MODULE_LICENSE("Dual BSD/GPL");
