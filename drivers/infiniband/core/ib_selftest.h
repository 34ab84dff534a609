/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Harness shared by the self-test modules of ib_cm and mlx4_ib.
 *
 * A test file includes this header after the code it tests, lists its
 * cases in an array of struct ibst_case ended by an empty entry, and ends
 * with IBST_SUITE().  The one table then runs in one of two ways:
 *
 * - Kernel without KUnit (the stock Debian kernel): module_init runs the
 *   cases in order and prints KTAP ("KTAP version 1", "1..N", then
 *   "ok N name" or "not ok N name" per case); the load fails with -EINVAL
 *   when a case failed.
 * - Kernel with KUnit: the table is a single parameterised KUnit case,
 *   one parameter per entry, so KUnit runs it while the module is coming
 *   up (before module_init) and prints one nested result per entry.
 *   module_init then runs nothing and returns 0; a failure shows as
 *   "not ok" in KUnit's output and in its debugfs results.  When KUnit
 *   skips the suite (kunit.enable=0), or the module defines
 *   IBST_KTAP_ONLY (below), module_init runs the KTAP form.
 *
 * Cases check with IBST_EXPECT(), the comparisons IBST_EXPECT_EQ() and
 * friends (which print both expressions and both values when they fail)
 * and IBST_FAIL(); a failed check marks the running case failed and the
 * case goes on.  Only the thread that runs the case may use them.  A
 * suite, or a case, can name a function that prints the state it tests
 * (ibst_set_dump()): it runs once per case, at the case's first failed
 * check, so that the failure comes with what the code under test held.
 * IBST_CASE() makes a table entry named after the case's function, so
 * that the name in the results is the one in the source.
 *
 * This is not an interface: each test module includes it exactly once
 * (it defines static data and functions).  It sits beside ib_cm's tests;
 * mlx4_ib's test includes it by relative path.
 */
#ifndef IB_SELFTEST_H
#define IB_SELFTEST_H

#include <linux/err.h>
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/kstrtox.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/stdarg.h>
#include <linux/string.h>

/*
 * A test module that takes module parameters defines IBST_KTAP_ONLY
 * before it includes this header: KUnit runs a module's suites while the
 * module is coming up, before the kernel has parsed its parameters
 * (load_module() notifies MODULE_STATE_COMING before parse_args()), so
 * such a module runs its cases from module_init, in KTAP, on every
 * kernel.
 */
#if IS_ENABLED(CONFIG_KUNIT) && !defined(IBST_KTAP_ONLY)
#define IBST_KUNIT 1
#include <kunit/test.h>
#endif

/* KTAP lines must start the line: no prefix of the code under test. */
#undef pr_fmt
#define pr_fmt(fmt) fmt

/**
 * struct ibst_case - one named case of a test module
 * @name: case name for the result line (no spaces); NULL ends the table
 * @run: the case; reports failures with IBST_EXPECT() and friends
 */
struct ibst_case {
	const char *name;
	void (*run)(void);
};

/**
 * IBST_CASE() - a case table entry named after its function
 * @fn: the case's function, void (*)(void); its name is the case's name
 */
#define IBST_CASE(fn) { .name = #fn, .run = fn }

/**
 * struct ibst_suite - the cases of a test module and their fixture
 * @name: suite name, for the KTAP summary line
 * @cases: the case table, ended by an entry without a name
 * @setup: makes what the cases share, before the first case; returns 0 or
 *	a negative errno (and then cleans up after itself).  May be NULL.
 * @teardown: undoes @setup after the last case.  May be NULL.
 */
struct ibst_suite {
	const char *name;
	const struct ibst_case *cases;
	int (*setup)(void);
	void (*teardown)(void);
};

/* The test module's suite, defined by IBST_SUITE() at the end of the file. */
static const struct ibst_suite ibst_this;

/*
 * The case being run.  Cases run strictly one after the other (in
 * module_init, or in KUnit's runner, one parameter after the other) and
 * only the thread running a case touches this, so it needs no lock.
 */
static struct {
	unsigned int failures;	/* failed checks of the running case */
	const char *skip;	/* why the running case was skipped, or NULL */
	bool in_case;		/* a case is running (not setup or teardown) */
	bool dumping;		/* a dump function is running */
	void (*suite_dump)(void);	/* ibst_set_dump() outside a case */
	void (*case_dump)(void);	/* ibst_set_dump() in the running case */
#ifdef IBST_KUNIT
	struct kunit *test;	/* KUnit's context while KUnit runs a case */
	bool kunit_ran;		/* KUnit ran this module's suite */
#endif
} ibst;

/**
 * ibst_set_dump() - name the function that prints the tested state
 * @dump: prints what the cases work on (with ibst_diag()), or NULL
 *
 * Called outside a case (in the suite's setup, say), @dump serves every
 * case; called in a case, it serves the rest of that case instead.  It
 * runs at the first failed check of a case, once per case, right after
 * that check's message; checks it makes itself are not counted as the
 * case's.  It must not sleep for long: it runs where the check failed.
 */
static __maybe_unused void ibst_set_dump(void (*dump)(void))
{
	if (ibst.in_case)
		ibst.case_dump = dump;
	else
		ibst.suite_dump = dump;
}

/* At a case's first failed check: print the state the case tests. */
static void ibst_dump_once(void)
{
	void (*dump)(void) = ibst.case_dump ?: ibst.suite_dump;
	unsigned int failures = ibst.failures;

	if (failures != 1 || !dump || ibst.dumping)
		return;
	ibst.dumping = true;
	dump();
	ibst.dumping = false;
	/* A check that failed in the dump is not the case's. */
	ibst.failures = failures;
}

static __printf(4, 5) void ibst_failed(const char *file, const char *func,
				       int line, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	ibst.failures++;
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
#ifdef IBST_KUNIT
	if (ibst.test) {
		kunit_set_failure(ibst.test);
		kunit_err(ibst.test, "EXPECTATION FAILED at %s:%d", file, line);
		kunit_err(ibst.test, "%s: %pV", func, &vaf);
		va_end(args);
		ibst_dump_once();
		return;
	}
#endif
	pr_info("# %s:%d: %pV\n", func, line, &vaf);
	va_end(args);
	ibst_dump_once();
}

/**
 * ibst_diag() - print a diagnostic line of the running case
 * @fmt: printf format, without the trailing newline
 * @...: its arguments
 */
static __printf(1, 2) __maybe_unused void ibst_diag(const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
#ifdef IBST_KUNIT
	if (ibst.test)
		kunit_info(ibst.test, "%pV", &vaf);
	else
#endif
		pr_info("# %pV\n", &vaf);
	va_end(args);
}

/**
 * ibst_case_failed() - tell whether a check of the running case failed
 *
 * For cases that cannot go on after a failed step.
 *
 * Return: true when a check of the running case has failed so far.
 */
static __maybe_unused bool ibst_case_failed(void)
{
	return ibst.failures;
}

/**
 * ibst_skip() - mark the running case skipped
 * @why: the reason, for the result line ("ok N name # SKIP why")
 *
 * For a case that cannot run on this system; the case returns right
 * after.  A skipped case counts as neither passed nor failed.
 */
static __maybe_unused void ibst_skip(const char *why)
{
	ibst.skip = why;
#ifdef IBST_KUNIT
	if (ibst.test)
		kunit_mark_skipped(ibst.test, "%s", why);
#endif
}

/**
 * IBST_FAIL() - fail the running case with a message
 * @fmt: printf format of the message, without the trailing newline
 * @...: its arguments
 */
#define IBST_FAIL(fmt, ...)						\
	ibst_failed(__FILE__, __func__, __LINE__, fmt, ##__VA_ARGS__)

/**
 * IBST_EXPECT() - fail the running case unless @cond holds
 * @cond: the condition that must be true
 */
#define IBST_EXPECT(cond) do {						\
	if (!(cond))							\
		IBST_FAIL("expected %s", #cond);			\
} while (0)

/*
 * A failed comparison of two integers: @a and @b are the expressions as
 * written, @va and @vb their values (as 64 bits, sign-extended when they
 * were signed).  Prints both, in decimal and in hex.
 */
static __maybe_unused void
ibst_cmp_failed(const char *file, const char *func, int line,
		const char *a, const char *op, const char *b,
		u64 va, u64 vb)
{
	long long lit;

	/* A number as written needs no value. */
	if (!kstrtoll(b, 0, &lit))
		ibst_failed(file, func, line,
			    "expected %s %s %s, but %s is %lld (%#llx)",
			    a, op, b, a, (long long)va, va);
	else
		ibst_failed(file, func, line,
			    "expected %s %s %s, but %s is %lld (%#llx), %s is %lld (%#llx)",
			    a, op, b, a, (long long)va, va, b, (long long)vb,
			    vb);
}

/**
 * IBST_EXPECT_CMP() - fail the running case unless @a @op @b holds
 * @a: an integer expression (evaluated once)
 * @op: a C comparison operator: ==, !=, <, <=, > or >=
 * @b: an integer expression (evaluated once)
 *
 * The comparison is C's own, on the types of @a and @b, so it holds
 * exactly when "@a @op @b" would.  On failure both expressions and both
 * values are printed.  Use IBST_EXPECT_EQ() and friends; for pointers
 * IBST_EXPECT_PTR_EQ() and friends (an integer check refuses a pointer).
 */
#define IBST_EXPECT_CMP(a, op, b) do {					\
	typeof(a) __ibst_a = (a);					\
	typeof(b) __ibst_b = (b);					\
									\
	/* Integers only: & refuses pointers. */			\
	(void)(__ibst_a & 0);						\
	(void)(__ibst_b & 0);						\
	if (!(__ibst_a op __ibst_b))					\
		ibst_cmp_failed(__FILE__, __func__, __LINE__, #a, #op,	\
				#b, (__force u64)__ibst_a,		\
				(__force u64)__ibst_b);			\
} while (0)

/**
 * IBST_EXPECT_EQ() - fail the running case unless @a == @b
 * @a: the value found, an integer (evaluated once)
 * @b: the value expected, an integer (evaluated once)
 */
#define IBST_EXPECT_EQ(a, b) IBST_EXPECT_CMP(a, ==, b)

/**
 * IBST_EXPECT_NE() - fail the running case unless @a != @b
 * @a: an integer (evaluated once)
 * @b: an integer (evaluated once)
 */
#define IBST_EXPECT_NE(a, b) IBST_EXPECT_CMP(a, !=, b)

/**
 * IBST_EXPECT_LT() - fail the running case unless @a < @b
 * @a: an integer (evaluated once)
 * @b: an integer (evaluated once)
 */
#define IBST_EXPECT_LT(a, b) IBST_EXPECT_CMP(a, <, b)

/**
 * IBST_EXPECT_LE() - fail the running case unless @a <= @b
 * @a: an integer (evaluated once)
 * @b: an integer (evaluated once)
 */
#define IBST_EXPECT_LE(a, b) IBST_EXPECT_CMP(a, <=, b)

/**
 * IBST_EXPECT_GT() - fail the running case unless @a > @b
 * @a: an integer (evaluated once)
 * @b: an integer (evaluated once)
 */
#define IBST_EXPECT_GT(a, b) IBST_EXPECT_CMP(a, >, b)

/**
 * IBST_EXPECT_GE() - fail the running case unless @a >= @b
 * @a: an integer (evaluated once)
 * @b: an integer (evaluated once)
 */
#define IBST_EXPECT_GE(a, b) IBST_EXPECT_CMP(a, >=, b)

/* A failed comparison of two pointers (printed hashed, as %p does). */
static __maybe_unused void
ibst_ptr_failed(const char *file, const char *func, int line,
		const char *a, const char *op, const char *b,
		const void *va, const void *vb)
{
	ibst_failed(file, func, line, "expected %s %s %s, but %s is %p, %s is %p",
		    a, op, b, a, va, b, vb);
}

/**
 * IBST_EXPECT_PTR_CMP() - fail the running case unless @a @op @b holds
 * @a: a pointer (evaluated once)
 * @op: == or !=
 * @b: a pointer (evaluated once)
 *
 * On failure both pointers are printed with %p: hashed, but the same
 * pointer prints the same, so equal and different ones can be told.
 */
#define IBST_EXPECT_PTR_CMP(a, op, b) do {				\
	typeof(a) __ibst_pa = (a);					\
	typeof(b) __ibst_pb = (b);					\
									\
	if (!(__ibst_pa op __ibst_pb))					\
		ibst_ptr_failed(__FILE__, __func__, __LINE__, #a, #op,	\
				#b, __ibst_pa, __ibst_pb);		\
} while (0)

/**
 * IBST_EXPECT_PTR_EQ() - fail the running case unless @a == @b
 * @a: a pointer (evaluated once)
 * @b: a pointer (evaluated once)
 */
#define IBST_EXPECT_PTR_EQ(a, b) IBST_EXPECT_PTR_CMP(a, ==, b)

/**
 * IBST_EXPECT_PTR_NE() - fail the running case unless @a != @b
 * @a: a pointer (evaluated once)
 * @b: a pointer (evaluated once)
 */
#define IBST_EXPECT_PTR_NE(a, b) IBST_EXPECT_PTR_CMP(a, !=, b)

/**
 * IBST_EXPECT_NULL() - fail the running case unless @p is NULL
 * @p: a pointer (evaluated once)
 */
#define IBST_EXPECT_NULL(p) IBST_EXPECT_PTR_CMP(p, ==, NULL)

/**
 * IBST_EXPECT_NOT_NULL() - fail the running case when @p is NULL
 * @p: a pointer (evaluated once)
 */
#define IBST_EXPECT_NOT_NULL(p) IBST_EXPECT_PTR_CMP(p, !=, NULL)

/**
 * IBST_EXPECT_NOT_ERR() - fail the running case when @p is an ERR_PTR()
 * @p: a pointer (evaluated once); the errno it carries is printed
 */
#define IBST_EXPECT_NOT_ERR(p) do {					\
	const void *__ibst_ep = (p);					\
									\
	if (IS_ERR(__ibst_ep))						\
		IBST_FAIL("expected !IS_ERR(%s), but it is %pe", #p,	\
			  __ibst_ep);					\
} while (0)

/* A failed comparison of two strings; either may be NULL. */
static __maybe_unused void
ibst_str_failed(const char *file, const char *func, int line,
		const char *a, const char *op, const char *b,
		const char *va, const char *vb)
{
	ibst_failed(file, func, line,
		    "expected %s %s %s, but %s is \"%s\", %s is \"%s\"",
		    a, op, b, a, va, b, vb);
}

/* strcmp() that takes NULL (before every string) */
static __maybe_unused int ibst_strcmp(const char *a, const char *b)
{
	if (!a || !b)
		return !!a - !!b;
	return strcmp(a, b);
}

/*
 * IBST_EXPECT_STR_CMP() - fail the running case unless two strings are
 * equal (@eq true) or differ (@eq false); either may be NULL.
 */
#define IBST_EXPECT_STR_CMP(a, eq, op, b) do {				\
	const char *__ibst_sa = (a), *__ibst_sb = (b);			\
									\
	if ((ibst_strcmp(__ibst_sa, __ibst_sb) == 0) != (eq))		\
		ibst_str_failed(__FILE__, __func__, __LINE__, #a, op,	\
				#b, __ibst_sa, __ibst_sb);		\
} while (0)

/**
 * IBST_EXPECT_STREQ() - fail the running case unless two strings are equal
 * @a: a string, or NULL (evaluated once)
 * @b: a string, or NULL (evaluated once)
 */
#define IBST_EXPECT_STREQ(a, b) IBST_EXPECT_STR_CMP(a, true, "==", b)

/**
 * IBST_EXPECT_STRNE() - fail the running case unless two strings differ
 * @a: a string, or NULL (evaluated once)
 * @b: a string, or NULL (evaluated once)
 */
#define IBST_EXPECT_STRNE(a, b) IBST_EXPECT_STR_CMP(a, false, "!=", b)

/**
 * struct ibst_nth_kind - the fault points a fail-nth sweep arms
 * @name: what the messages call them
 * @arm: make the @nth fault point met from now on fail
 * @disarm: disarm them; returns true when the armed point was met
 */
struct ibst_nth_kind {
	const char *name;
	void (*arm)(unsigned int nth);
	bool (*disarm)(void);
};

/**
 * struct ibst_nth - one fail-nth sweep
 * @kind: the fault points it arms
 * @step: one step: makes its input, runs the operation under test with
 *	IBST_NTH_ARMED() and checks what the step must leave behind
 *	(nothing, after a failure)
 * @max: the sweep gives up, failing the case, after this many steps
 * @nth: the running step's number: its @nth fault point fails
 * @injected: the running step's operation met its fault point
 *
 * A sweep embeds this in a struct of its own, which @step gets back with
 * container_of().  A step that cannot go on (its fixture failed, and
 * said so) sets @injected to false: the sweep stops there.
 */
struct ibst_nth {
	const struct ibst_nth_kind *kind;
	void (*step)(struct ibst_nth *t);
	unsigned int max;
	unsigned int nth;
	bool injected;
};

/**
 * IBST_NTH_ARMED() - evaluate an operation with the step's fault point armed
 * @t: the sweep
 * @op: the operation under test (evaluated once); its value is returned
 *
 * Only @op runs armed, not what the step does to set it up or to check
 * it.  Records in @t whether the fault point was met.
 */
#define IBST_NTH_ARMED(t, op) ({					\
	struct ibst_nth *__ibst_t = (t);				\
	typeof(op) __ibst_ret;						\
									\
	__ibst_t->kind->arm(__ibst_t->nth);				\
	__ibst_ret = (op);						\
	__ibst_t->injected = __ibst_t->kind->disarm();			\
	__ibst_ret;							\
})

/**
 * ibst_fail_nth_sweep() - fail each fault point of an operation in turn
 * @t: the sweep
 *
 * Runs @t's step for nth = 1, 2, ... until a step's operation meets no
 * armed fault point, as tools/testing/selftests' fail-nth loops do: nth
 * is then one more than the fault points on its path.
 *
 * Return: that nth, or @t->max + 1 (the case failed) when every step met
 * one.
 */
static __maybe_unused unsigned int ibst_fail_nth_sweep(struct ibst_nth *t)
{
	for (t->nth = 1; t->nth <= t->max; t->nth++) {
		t->injected = false;
		t->step(t);
		if (!t->injected)
			return t->nth;
	}
	IBST_FAIL("%s: a fault met at each of %u steps", t->kind->name,
		  t->max);
	return t->nth;
}

/* How many bytes of a differing buffer are printed, from the first one. */
#define IBST_MEM_SHOWN	16

/*
 * @a and @b differ in their @len bytes: print the offset of the first
 * byte that differs and up to IBST_MEM_SHOWN bytes of each from there.
 */
static __maybe_unused void
ibst_mem_failed(const char *file, const char *func, int line,
		const char *a, const char *b, const u8 *va,
		const u8 *vb, size_t len)
{
	size_t at = 0, n;

	while (at < len && va[at] == vb[at])
		at++;
	n = min_t(size_t, len - at, IBST_MEM_SHOWN);
	ibst_failed(file, func, line,
		    "expected %s == %s (%zu bytes), but at byte %zu %s has %*ph, %s has %*ph",
		    a, b, len, at, a, (int)n, va + at, b, (int)n, vb + at);
}

/**
 * IBST_EXPECT_MEMEQ() - fail the running case unless two buffers are equal
 * @a: the first buffer (evaluated once)
 * @b: the second buffer (evaluated once)
 * @len: how many bytes to compare (evaluated once)
 */
#define IBST_EXPECT_MEMEQ(a, b, len) do {				\
	const u8 *__ibst_ma = (const u8 *)(a);				\
	const u8 *__ibst_mb = (const u8 *)(b);				\
	size_t __ibst_len = (len);					\
									\
	if (memcmp(__ibst_ma, __ibst_mb, __ibst_len))			\
		ibst_mem_failed(__FILE__, __func__, __LINE__, #a, #b,	\
				__ibst_ma, __ibst_mb, __ibst_len);	\
} while (0)

/* Runs every case of @s, printing KTAP; -EINVAL when a case failed. */
static int ibst_run_ktap(const struct ibst_suite *s)
{
	const struct ibst_case *c;
	unsigned int n = 0, failed = 0, skipped = 0;
	int err;

	if (s->setup) {
		err = s->setup();
		if (err) {
			pr_info("# %s: setup failed (%d)\n", s->name, err);
			return err;
		}
	}
	for (c = s->cases; c->name; c++)
		n++;
	pr_info("KTAP version 1\n");
	pr_info("1..%u\n", n);
	for (n = 1, c = s->cases; c->name; c++, n++) {
		ibst.failures = 0;
		ibst.skip = NULL;
		ibst.case_dump = NULL;
		ibst.in_case = true;
		c->run();
		ibst.in_case = false;
		if (ibst.failures)
			failed++;
		else if (ibst.skip)
			skipped++;
		if (ibst.skip && !ibst.failures)
			pr_info("ok %u %s # SKIP %s\n", n, c->name, ibst.skip);
		else
			pr_info("%s %u %s\n", ibst.failures ? "not ok" : "ok",
				n, c->name);
	}
	if (s->teardown)
		s->teardown();
	pr_info("# %s: %u passed, %u failed, %u skipped\n", s->name,
		n - 1 - failed - skipped, failed, skipped);
	return failed ? -EINVAL : 0;
}

#ifdef IBST_KUNIT
/* KUnit parameter generator: the entry after @prev, named into @desc. */
static const void *ibst_kunit_gen(const void *prev, char *desc)
{
	const struct ibst_case *c = prev;

	c = c ? c + 1 : ibst_this.cases;
	if (!c->name)
		return NULL;
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
	return c;
}

static void ibst_table(struct kunit *test)
{
	const struct ibst_case *c = test->param_value;

	ibst.failures = 0;
	ibst.skip = NULL;
	ibst.case_dump = NULL;
	ibst.test = test;
	ibst.in_case = true;
	c->run();
	ibst.in_case = false;
	ibst.test = NULL;
}

static int ibst_kunit_init(struct kunit_suite *suite)
{
	ibst.kunit_ran = true;
	return ibst_this.setup ? ibst_this.setup() : 0;
}

static void ibst_kunit_exit(struct kunit_suite *suite)
{
	if (ibst_this.teardown)
		ibst_this.teardown();
}

/* The whole table is one KUnit case, with one parameter per entry. */
static struct kunit_case ibst_kunit_cases[] = {
	KUNIT_CASE_PARAM(ibst_table, ibst_kunit_gen),
	{}
};

#define IBST_KUNIT_SUITE(_suite)					\
static struct kunit_suite ibst_kunit_suite = {				\
	.name = #_suite,						\
	.suite_init = ibst_kunit_init,					\
	.suite_exit = ibst_kunit_exit,					\
	.test_cases = ibst_kunit_cases,					\
};									\
kunit_test_suite(ibst_kunit_suite)
#else
#define IBST_KUNIT_SUITE(_suite) static_assert(sizeof(#_suite) > 1)
#endif

static int __init ibst_module_init(void)
{
#ifdef IBST_KUNIT
	if (ibst.kunit_ran) {
		pr_info("# %s: run by KUnit\n", ibst_this.name);
		return 0;
	}
#endif
	return ibst_run_ktap(&ibst_this);
}

static void __exit ibst_module_exit(void)
{
}

/**
 * IBST_SUITE() - make a test module of a case table
 * @_suite: suite name, an identifier (also the KUnit suite's name)
 * @_cases: array of struct ibst_case, ended by an empty entry
 * @_setup: int (*)(void) run before the first case, or NULL
 * @_teardown: void (*)(void) run after the last case, or NULL
 *
 * Defines the module's suite, its init and exit functions and, on a
 * kernel with KUnit, its KUnit suite.  Use once, at the end of the file.
 */
#define IBST_SUITE(_suite, _cases, _setup, _teardown)			\
static const struct ibst_suite ibst_this = {				\
	.name = #_suite,						\
	.cases = _cases,						\
	.setup = _setup,						\
	.teardown = _teardown,						\
};									\
IBST_KUNIT_SUITE(_suite);						\
module_init(ibst_module_init);						\
module_exit(ibst_module_exit)

#endif /* IB_SELFTEST_H */
