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
 * Cases check with IBST_EXPECT(), IBST_EXPECT_EQ() and IBST_FAIL(); a
 * failed check marks the running case failed and the case goes on.  Only
 * the thread that runs the case may use them.
 *
 * This is not an interface: each test module includes it exactly once
 * (it defines static data and functions).  It sits beside ib_cm's tests;
 * mlx4_ib's test includes it by relative path.
 */
#ifndef IB_SELFTEST_H
#define IB_SELFTEST_H

#include <linux/init.h>
#include <linux/kernel.h>
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
#ifdef IBST_KUNIT
	struct kunit *test;	/* KUnit's context while KUnit runs a case */
	bool kunit_ran;		/* KUnit ran this module's suite */
#endif
} ibst;

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
		return;
	}
#endif
	pr_info("# %s:%d: %pV\n", func, line, &vaf);
	va_end(args);
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

/**
 * IBST_EXPECT_EQ() - fail the running case unless @got equals @want
 * @got: the value found, an integer (evaluated once)
 * @want: the value expected, an integer (evaluated once)
 */
#define IBST_EXPECT_EQ(got, want) do {					\
	long long _ibst_got = (got), _ibst_want = (want);		\
									\
	if (_ibst_got != _ibst_want)					\
		IBST_FAIL("%s == %lld, expected %lld", #got,		\
			  _ibst_got, _ibst_want);			\
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
		c->run();
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
	ibst.test = test;
	c->run();
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
