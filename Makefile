# SPDX-License-Identifier: GPL-2.0
#
# Build driver for the project's out-of-tree RDMA modules: our ib_cm.ko and
# an mlx4_ib.ko assembled from the installed Debian linux-source of the
# kernel's series (6.1 or 6.12) with our PV-CM cache
# (drivers/infiniband/hw/mlx4/cm.c) and small patches.
#
#   make              build the modules for KDIR into build/<kernel-release>/
#   make check        everything: build, static gates, VM tests (TAP, one
#                     closing "N passed, N failed" line)
#   make help         all targets
#
# Every output lives under build/; the source tree is never written to.

TOP := $(CURDIR)

# The kernel to build for.  KVER=<release> picks an installed one (its
# /lib/modules/<release>/build or /usr/src/linux-headers-<release>), or
# Debian sid's kernel of the 7.2 track (tools/sid-version's SID_KREL: the
# tree tools/sid-kernel.sh prepared in its cache), KDIR any build
# directory.  By default the newest Debian 6.1 headers, else the newest
# 6.12 ones: installing another track changes nothing.  (-include: the
# DKMS package has no tools/.)
newest_headers = $(lastword $(shell ls -d /usr/src/linux-headers-$(1).*-amd64 \
	2>/dev/null | grep -vE -- '-(rt|cloud)-amd64$$' | sort -V))
-include $(TOP)/tools/sid-version
ifneq ($(KVER),)
ifeq ($(KVER),$(SID_KREL))
SID_KDIR := $(shell $(TOP)/tools/sid-kernel.sh --get SID_KDIR)
endif
KDIR ?= $(firstword $(wildcard /lib/modules/$(KVER)/build \
	/usr/src/linux-headers-$(KVER)) $(SID_KDIR) \
	/nonexistent/linux-headers-$(KVER))
else
KDIR ?= $(firstword $(call newest_headers,6.1) $(call newest_headers,6.12))
endif
KREL := $(shell sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' \
	$(KDIR)/include/generated/utsrelease.h 2>/dev/null)
# The kernel series (6.1, 6.12): mlx4_ib comes from its linux-source.
KSERIES := $(shell echo '$(KREL)' | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')

SRC := $(TOP)/build/src/linux-source-$(KSERIES)
BUILD ?= $(TOP)/build/$(KREL)
TREE = $(BUILD)/tree
# The emulated SR-IOV master module (tools/testing/sriov), TEST=1 only,
# and only for a kernel with netfilter (both the Debian and the debug kernel).
SRIOV_OUT = $(BUILD)/sriov
HAVE_NETFILTER := $(shell grep -qs '^CONFIG_NETFILTER=y' \
	$(KDIR)/include/config/auto.conf && echo 1)

# Module directories: "distro:" ones start from the distro's sources.
MODDIRS := drivers/infiniband/core distro:drivers/infiniband/hw/mlx4
# Test-only modules and hooks; DKMS and installs build with TEST=0.
TEST ?= 1
ifeq ($(TEST),1)
TEST_CONFIG := CONFIG_MLX4_IB_PVCM_TEST=m CONFIG_MLX4_IB_PVCM_TEST_HOOKS=y \
	CONFIG_INFINIBAND_CM_TEST=m CONFIG_INFINIBAND_CM_TEST_HOOKS=y
endif
KBUILD_FLAGS ?=

# Only directories that hold a Kbuild or come from the distro build.
build_dirs = $(foreach d,$(MODDIRS),$(if $(or $(findstring distro:,$(d)),\
	$(wildcard $(TOP)/$(d)/Kbuild)),$(d)))

.PHONY: all modules deps deps-sid source check gates vm-test main help clean distclean \
	patches dkms-deb bench-pvcm bench-cm mutants replay check-debug coverage sriov pf-1vm

all: modules

help:
	@echo 'make [KVER=...]   build the modules into build/<krel>/tree (default: the'
	@echo '                  newest 6.1 headers; KVER=<release> or KDIR=<dir> for another)'
	@echo 'make deps         install the Debian packages the project needs, then'
	@echo '                  make deps-sid'
	@echo 'make deps-sid     fetch and prepare the Debian sid kernel of the 7.2 track'
	@echo '                  (tools/sid-version) in its cache; KVER=$(SID_KREL)'
	@echo '                  builds for it (SID_ARGS: e.g. --refresh)'
	@echo 'make check        build, static gates and VM tests; ends "N passed, N failed"'
	@echo 'make gates        static gates only (checkpatch, sparse, W=1, kernel-doc, coccicheck)'
	@echo 'make vm-test      VM tests only (VM_TEST_ARGS: run-vm-tests options, e.g.'
	@echo '                  "--suites removal"; KVER= for another track)'
	@echo 'make main         the main job: build, boot a VM, run rping/ib_send_bw, report'
	@echo 'make patches      the kernel-style patch series, one per installed'
	@echo '                  linux-source (6.1, 6.12, sid 7.2), in build/patches/<series>'
	@echo 'make dkms-deb     the DKMS package: Debian source and binary packages'
	@echo '                  (dpkg-buildpackage), in build/dkms'
	@echo 'make bench-pvcm   benchmark: our PV-CM cache against the distro one'
	@echo 'make bench-cm     benchmark: our ib_cm against the distro one (cmtime, ucmatose;'
	@echo '                  BENCH_CM_ARGS="--conns 1000,10000 --passes 1" by default;'
	@echo '                  ours built TEST=0 into $$(BUILD)/bench-prod)'
	@echo 'make mutants      cm.c mutants the PV-CM test module must kill'
	@echo 'make replay       replay captured CM traffic through the PV-CM cache'
	@echo 'make pf-1vm       live rxe connections through the emulated SR-IOV master,'
	@echo '                  one guest (tools/testing/sriov/README)'
	@echo 'make check-debug  the VM suites on a KASAN/lockdep/kmemleak kernel (slow first build)'
	@echo 'make coverage     gcov line/branch coverage of our sources: the stack suite on the'
	@echo '                  debug kernel with GCOV_KERNEL (COVERAGE_ARGS: more options of'
	@echo '                  tools/testing/coverage/run; not part of make check)'
	@echo 'make sriov        rping/ib_send_bw from two VF guests through an emulated PF guest'
	@echo '                  (SRIOV_ARGS: more tools/testing/sriov/run options)'
	@echo 'make clean        remove build/<krel>; distclean removes build/'
	@echo "KDIR=$(KDIR) KREL=$(KREL) KSERIES=$(KSERIES)"

# NODEPS=1 (DKMS on a production host) never runs apt-get: the package's
# Depends: bring what the build needs.  deps ends with deps-sid: sid's
# kernel cannot be installed on Debian 12, so its packages are fetched and
# prepared in a cache outside the clone (tools/sid-kernel.sh), once; with
# the cache warm that costs a fraction of a second (and a look at sid's
# index, a few seconds, every 6 hours).  deps-sid alone fetches or
# refreshes that track without apt-get install.  When sid no longer
# carries the recorded version and the cache has none (exit status 3),
# deps goes on: make check then skips that track and says so.
SID_ARGS ?=
deps:
ifneq ($(NODEPS),1)
	@$(TOP)/tools/install-deps.sh
	@$(TOP)/tools/sid-kernel.sh $(SID_ARGS) || [ $$? = 3 ]
endif

deps-sid:
	@$(TOP)/tools/sid-kernel.sh $(SID_ARGS)

# The distro source, extracted once per clone and kernel series (about
# 15 s each).
source:
	@test -n "$(KSERIES)" || { echo "no kernel build directory (KDIR=$(KDIR)): make deps, or KVER=<release>"; exit 1; }
	@$(MAKE) --no-print-directory $(SRC)/.extracted
$(TOP)/build/src/linux-source-%/.extracted: | deps
	@t=$$(ls /usr/src/linux-source-$*.tar.* 2>/dev/null | head -n 1); \
	if [ -z "$$t" ] && [ '$*' = '$(SID_SERIES)' ]; then \
		t=$$($(TOP)/tools/sid-kernel.sh --get SID_SOURCE); \
	fi; \
	test -n "$$t" || { echo 'linux-source-$* not installed (make deps)'; exit 1; }; \
	echo "  EXTRACT $$t"; \
	rm -rf $(@D) && mkdir -p $(dir $(@D)) && tar -xf $$t -C $(dir $(@D))
	@touch $@

modules: source
	@test -n "$(KREL)" || { echo "no kernel build directory (KDIR=$(KDIR)); make deps"; exit 1; }
	@echo "  KERNEL  $(KREL) ($(KDIR)$(if $(KVER),,; KVER=<release> for another))"
	@$(TOP)/tools/build/assemble.sh $(SRC) $(TREE) $(build_dirs)
	@set -e; for d in $(build_dirs:distro:%=%); do \
		$(MAKE) -C $(KDIR) M=$(TREE)/$$d $(TEST_CONFIG) $(KBUILD_FLAGS) modules; \
	done
	@$(TOP)/tools/build/check-exports $(KDIR) $(TREE)
ifeq ($(TEST)$(HAVE_NETFILTER),1)
	@echo "not building mlx4_ib_pvcm_pf: $(KDIR) has no CONFIG_NETFILTER"
endif
ifeq ($(TEST)$(HAVE_NETFILTER),11)
	@mkdir -p $(SRIOV_OUT)
	@set -e; for f in Kbuild pvcm_pf.c; do \
		cmp -s $(TOP)/tools/testing/sriov/$$f $(SRIOV_OUT)/$$f || \
			cp $(TOP)/tools/testing/sriov/$$f $(SRIOV_OUT)/$$f; \
	done
	@cmp -s $(TREE)/drivers/infiniband/hw/mlx4/cm.o \
		$(SRIOV_OUT)/mlx4_ib_cm.o_shipped || \
		cp $(TREE)/drivers/infiniband/hw/mlx4/cm.o \
			$(SRIOV_OUT)/mlx4_ib_cm.o_shipped
	@cp $(TREE)/drivers/infiniband/hw/mlx4/.cm.o.cmd \
		$(SRIOV_OUT)/.mlx4_ib_cm.o.cmd
	@$(MAKE) -C $(KDIR) M=$(SRIOV_OUT) \
		PVCM_MLX4_TREE=$(TREE)/drivers/infiniband/hw/mlx4 \
		$(KBUILD_FLAGS) modules
endif

gates: modules
	@$(TOP)/tools/testing/gates/run-gates --src $(SRC) --kdir $(KDIR) --tree $(TREE)

# The VM suites of make check on one track; VM_TEST_ARGS picks suites
# and limits (tools/testing/run-vm-tests: --suites, --timeout-scale).
VM_TEST_ARGS ?=
vm-test: modules
	@$(TOP)/tools/testing/run-vm-tests --build $(BUILD) $(VM_TEST_ARGS)

main: modules
	@$(TOP)/tools/testing/main-job --build $(BUILD) --kdir $(KDIR)

# The kernel-style patch series, one per installed linux-source (6.1,
# 6.12) and sid's 7.2 when its cache holds the source, in
# build/patches/<series>.
SERIES_SRCS = $(sort $(patsubst /usr/src/linux-source-%,%,$(basename \
	$(basename $(wildcard /usr/src/linux-source-*.tar.*)))) \
	$(if $(shell $(TOP)/tools/sid-kernel.sh --get SID_SOURCE 2>/dev/null),$(SID_SERIES)))
patches: $(foreach s,$(SERIES_SRCS),$(TOP)/build/src/linux-source-$(s)/.extracted)
	@test -n "$(SERIES_SRCS)" || { echo 'no linux-source installed (make deps)'; exit 1; }
	@set -e; for s in $(SERIES_SRCS); do \
		out=$$($(TOP)/tools/series/mkseries \
			--src $(TOP)/build/src/linux-source-$$s) || exit 1; \
		echo "$$out" | tail -n 1; \
	done

# The DKMS package for running hosts: the Debian source package of
# tools/dkms/debian built by dpkg-buildpackage, in build/dkms.
dkms-deb:
	@$(TOP)/tools/dkms/mkdeb --out $(TOP)/build/dkms

# Benchmark (not a test): our PV-CM cache against the distro's, one guest.
bench-pvcm: modules
	@KDIR=$(KDIR) KREL=$(KREL) $(TOP)/tools/testing/bench/pvcm/run --skip-modules

# Benchmark (not a test): our ib_cm against the distro's, one guest.  It
# measures the ib_cm.ko users get: the run script builds it with TEST=0
# (no fault-injection or test hooks) into $(BUILD)/bench-prod; results
# go to $(BUILD)/bench-cm.
BENCH_CM_ARGS ?=
bench-cm: source
	@KREL=$(KREL) $(TOP)/tools/testing/bench/cm/run --build $(BUILD) \
		$(BENCH_CM_ARGS)

# Mutants of cm.c that the PV-CM test module must kill.
mutants: modules
	@$(TOP)/tools/testing/mutants/run --build $(BUILD) --kdir $(KDIR)

# The same suites on a debug kernel (KASAN, lockdep, kmemleak, fail-nth),
# built once from linux-source-6.1 and cached in /var/cache/mlx4-pvcm
# (MLX4_PVCM_CACHE, tools/cache-dir.sh).
# .ci/run runs its subset (check-debug --ci) after make check.
check-debug: deps source
	@$(TOP)/tools/testing/check-debug

# Line and branch coverage of our sources (tools/testing/coverage/run): the
# debug kernel with CONFIG_GCOV_KERNEL (tools/debug-kernel/build.sh
# --coverage), our modules built with GCOV_PROFILE=y into
# build/<krel>-gcov, the stack suite there, a report per owned file.
# Too slow for make check (a cold kernel build alone is 40-95 min).
COVERAGE_ARGS ?=
coverage: deps source
	@$(TOP)/tools/testing/coverage/run $(COVERAGE_ARGS)

# The emulated SR-IOV topology (tools/testing/sriov/README): two VF guests
# and a remote guest, rping and ib_send_bw through a PF guest that
# forwards IPv4 (make check's sriov suite also loads the PV-CM cache
# there).  SRIOV_ARGS adds options, e.g. --pf-insmod "KO ARGS",
# --remote-insmod KO, --pf-krel KREL.
SRIOV_ARGS ?=
SRIOV_T := $(TOP)/tools/testing/sriov
sriov: modules
	@$(SRIOV_T)/run \
		--vf-test $(SRIOV_T)/rping.sh --remote-test $(SRIOV_T)/rping.sh \
		--pf-test $(SRIOV_T)/pf_forward.sh \
		--vf-test $(SRIOV_T)/ib_send_bw.sh --remote-test $(SRIOV_T)/ib_send_bw.sh \
		--pf-test $(SRIOV_T)/pf_forward.sh \
		$(SRIOV_ARGS)

# Replay of captured rping/ucmatose/udaddy CM traffic through the cache.
replay: modules
	@$(TOP)/tools/testing/replay/run --kdir $(KDIR) --vm

# Live rxe connections through the emulated SR-IOV master, in one guest.
pf-1vm: modules
	@$(TOP)/tools/testing/vm/vm-run --krel $(KREL) \
		--modprobe "ib_core rdma_rxe" \
		--test $(TOP)/tools/testing/sriov/pf_1vm.sh --timeout 1200

check: deps source
	@$(TOP)/tools/testing/check --kdir $(KDIR)

clean:
	rm -rf $(BUILD)

distclean:
	rm -rf $(TOP)/build

# Variables for the scripts under tools/testing (eval'ed by them).
.PHONY: print-vars
print-vars:
	@echo "KDIR='$(KDIR)' KREL='$(KREL)' SRC='$(SRC)' BUILD='$(BUILD)' TREE='$(TREE)'"
