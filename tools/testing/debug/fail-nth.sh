#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# fail-nth.sh: systematic fault injection for guest tests.
#
#   fail-nth.sh [--start N] [--max N] [--after CMD] [--log FILE] [--quiet]
#               [--sample K [--first F] [--seed S]] -- COMMAND [ARG...]
#   fail-nth.sh [options] --rdma-link-add NAME TYPE NETDEV
#
# Runs COMMAND again and again with the n-th fault site of its task set to
# fail, n = START, START+1, ... (the /proc/<pid>/fail-nth interface of
# Documentation/fault-injection/fault-injection.rst).  The loop ends at the
# first run in which no fault was injected: the command then got past every
# fault site it has, and it must have succeeded.  Runs with an injected
# fault may fail (that is the point) but must not crash the kernel; the
# kernel log is checked by the rig afterwards.
#
# The counter belongs to one task and is not inherited by children, so a
# small Python parent forks, the child arms its own counter and execs
# COMMAND, and the parent reads the child's counter while it is still a
# zombie (waitid WNOWAIT): 0 means the fault was injected.  The first fault
# sites are those of execve(), of the dynamic loader and of COMMAND's own
# start-up (thousands for a program like rdma(8), each a whole run under a
# debug kernel); --start skips some of them.
#
# --rdma-link-add does without them: instead of running a command, the
# Python process itself sends the RDMA netlink request that "rdma link add
# NAME type TYPE netdev NETDEV" sends (RDMA_NLDEV_CMD_NEWLINK), with its
# own counter armed from just before the request to just after the
# kernel's answer.  Only the fault sites of that one request count: the
# netlink message, the device's registration in ib_core and in every
# client (ib_cm among them).  The run succeeded when the answer is 0.
#
# While it runs, failslab and fail_page_alloc also cover sleeping
# allocations (ignore-gfp-wait = N), and they and ib_cm's fail_ib_cm (when
# ib_cm has its test hooks) print nothing (verbose = 0, so the injected
# faults do not look like splats); all are restored on exit.
#
# --log FILE   append the output of every COMMAND run to FILE (default:
#              discarded)
# --after CMD  shell command run after every iteration (e.g. to undo what a
#              half-failed COMMAND left behind); its failure stops the loop
# --rdma-link-add NAME TYPE NETDEV
#              the operation swept is that netlink request (see above)
# --sample K   for operations with too many fault sites to fail each in
#              turn (registering an rxe device under the debug kernel:
#              about 14,500 sites at several seconds each): one run
#              without a fault counts the sites T (it must succeed), then
#              sites 1..F (--first, default 20) and K more, evenly spaced
#              over F+1..T and shifted by --seed S (default: from the
#              clock; printed, so a run can be repeated), then a last run
#              without a fault, which must succeed.  --start/--max do not
#              apply.
# Exit status: 0 when the final, uninjected run succeeded; 1 when it failed
# or --max (default 5000) was reached first; 2 on usage errors.
set -u

START=1
MAX=5000
AFTER=
QUIET=0
LOG=/dev/null
LINK=()
SAMPLE=0
FIRST=20
SEED=$(date +%s)

usage() {
	sed -n '/^#   fail-nth.sh/,/^#$/p' "$0" | sed 's/^# \{0,3\}//'
}

while [ $# -gt 0 ]; do
	case $1 in
	--start) START=$2; shift 2 ;;
	--max) MAX=$2; shift 2 ;;
	--after) AFTER=$2; shift 2 ;;
	--quiet) QUIET=1; shift ;;
	--log) LOG=$2; shift 2 ;;
	--sample) SAMPLE=$2; shift 2 ;;
	--first) FIRST=$2; shift 2 ;;
	--seed) SEED=$2; shift 2 ;;
	--rdma-link-add)
		[ $# -ge 4 ] || { usage >&2; exit 2; }
		LINK=("$2" "$3" "$4"); shift 4 ;;
	--) shift; break ;;
	-h | --help) usage; exit 0 ;;
	*) break ;;
	esac
done
if [ ${#LINK[@]} -gt 0 ]; then
	[ $# -eq 0 ] || { usage >&2; exit 2; }
	set -- --rdma-link-add "${LINK[@]}"
fi
[ $# -gt 0 ] || { usage >&2; exit 2; }
case "$START$MAX$SAMPLE$FIRST$SEED" in
*[!0-9]*) echo "fail-nth: --start, --max, --sample, --first and --seed take numbers" >&2; exit 2 ;;
esac
[ -e /proc/thread-self/fail-nth ] || {
	echo "fail-nth: no /proc/thread-self/fail-nth (kernel without CONFIG_FAULT_INJECTION)" >&2
	exit 2
}

DBG=/sys/kernel/debug
SAVED=()
# set_knob FILE VALUE: remember the old value, write the new one.
set_knob() {
	[ -w "$1" ] || return 0
	SAVED+=("$1=$(cat "$1")")
	echo "$2" > "$1"
}

restore_knobs() {
	local kv

	for kv in "${SAVED[@]}"; do
		echo "${kv#*=}" > "${kv%%=*}"
	done
}
trap restore_knobs EXIT

# fail_ib_cm: ib_cm's own sites (with its test hooks), which the task's
# fail-nth reaches through should_fail() as it reaches failslab's.
for t in failslab fail_page_alloc fail_ib_cm; do
	set_knob "$DBG/$t/ignore-gfp-wait" N
	set_knob "$DBG/$t/verbose" 0
done

# The loop runs in one Python process: a Python start per iteration would
# cost more than most commands under test.
python3 - "$START" "$MAX" "$QUIET" "$LOG" "$AFTER" "$SAMPLE" "$FIRST" "$SEED" "$@" <<'EOF'
import errno
import os
import socket
import struct
import subprocess
import sys

start, limit, quiet = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
log, after = sys.argv[4], sys.argv[5]
sample, first, seed = int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
cmd = sys.argv[9:]
# Armed beyond any operation's fault sites: nothing fails, and what is
# left of the counter afterwards tells how many sites the run passed.
UNARMED = 1 << 31


def run_exec(nth):
    """Run cmd with its nth fault site armed; return (left, status)."""
    pid = os.fork()
    if pid == 0:
        try:
            out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.dup2(out, 1)
            os.dup2(out, 2)
            fd = os.open("/proc/thread-self/fail-nth", os.O_WRONLY)
            os.write(fd, str(nth).encode())
            os.close(fd)
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    # Read the counter while the child is a zombie: 0 = the fault fired.
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    with open("/proc/%d/fail-nth" % pid) as f:
        left = int(f.read())
    _, status = os.waitpid(pid, 0)
    return left, os.waitstatus_to_exitcode(status)


# RDMA netlink ABI (include/uapi/rdma/rdma_netlink.h, linux/netlink.h).
NETLINK_RDMA = 20
NLDEV_NEWLINK = (5 << 10) + 3       # RDMA_NL_GET_TYPE(NLDEV, CMD_NEWLINK)
ATTR_DEV_NAME, ATTR_NDEV_NAME, ATTR_LINK_TYPE = 2, 51, 65
NLM_F_REQUEST, NLM_F_ACK, NLMSG_ERROR = 1, 4, 2


def nla_str(kind, text):
    """A NUL-terminated string attribute, padded to 4 bytes."""
    data = text.encode() + b"\0"
    attr = struct.pack("=HH", 4 + len(data), kind) + data
    return attr + b"\0" * (-len(attr) % 4)


def newlink_request(name, ltype, ndev):
    body = (nla_str(ATTR_DEV_NAME, name) + nla_str(ATTR_LINK_TYPE, ltype) +
            nla_str(ATTR_NDEV_NAME, ndev))
    return struct.pack("=IHHII", 16 + len(body), NLDEV_NEWLINK,
                       NLM_F_REQUEST | NLM_F_ACK, 1, 0) + body


class LinkAdd:
    """The NEWLINK request, armed around the two system calls only."""

    def __init__(self, name, ltype, ndev):
        self.req = newlink_request(name, ltype, ndev)
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW,
                                  NETLINK_RDMA)
        # An answer lost to a fault (netlink_ack's allocation) is reported
        # as ENOBUFS on the socket; the limit is for anything else.
        self.sock.settimeout(600)
        self.ctl = os.open("/proc/thread-self/fail-nth", os.O_RDWR)
        self.buf = bytearray(65536)

    def __call__(self, nth):
        err = 0
        os.write(self.ctl, b"%d" % nth)
        try:
            self.sock.send(self.req)
            size = self.sock.recv_into(self.buf)
        except socket.timeout:
            err = -errno.ETIMEDOUT
        except OSError as e:
            err = -e.errno
        left = int(os.pread(self.ctl, 32, 0))
        os.write(self.ctl, b"0")
        if err == 0:
            _, kind = struct.unpack_from("=IH", self.buf)
            err = struct.unpack_from("=i", self.buf, 16)[0] \
                if kind == NLMSG_ERROR and size >= 20 else -errno.EPROTO
        if err and not quiet:
            print("fail-nth: n=%d: %s" % (nth, os.strerror(-err)), flush=True)
        return left, 0 if err == 0 else 1


if cmd[0] == "--rdma-link-add":
    run = LinkAdd(*cmd[1:4])
else:
    run = run_exec


def progress(msg):
    """A line in the kernel log: it outlives a test that times out."""
    try:
        with open("/dev/kmsg", "w") as kmsg:
            kmsg.write(msg + "\n")
    except OSError:
        pass


def after_run(n):
    """The --after command; stop the sweep when it fails."""
    if after and subprocess.call(["bash", "-c", after]) != 0:
        print("fail-nth: --after failed at n=%d" % n, file=sys.stderr)
        sys.exit(1)


def sweep_all():
    """n = start, start + 1, ... until a run meets no fault."""
    counts = {True: 0, False: 0}
    for n in range(start, limit + 1):
        if n % 100 == 0:
            progress("fail-nth: n=%d (%d runs failed, %d succeeded under "
                     "a fault)" % (n, counts[False], counts[True]))
        left, rc = run(n)
        if left:
            print("fail-nth: n=%d: no fault injected, exit status %d "
                  "(%d runs failed and %d succeeded under a fault)"
                  % (n, rc, counts[False], counts[True]), flush=True)
            sys.exit(0 if rc == 0 else 1)
        counts[rc == 0] += 1
        if not quiet:
            print("fail-nth: n=%d: fault injected, exit status %d" % (n, rc),
                  flush=True)
        after_run(n)
    print("fail-nth: still injecting at n=%d (--max); giving up" % limit,
          file=sys.stderr)
    sys.exit(1)


def sweep_sample():
    """Count the sites, fail 1..first and a spread of the others."""
    left, rc = run(UNARMED)
    total = UNARMED - left
    print("fail-nth: %d fault sites in a run without a fault, exit status "
          "%d" % (total, rc), flush=True)
    if rc != 0:
        sys.exit(1)
    after_run(0)
    stride = max(1, (total - first) // max(sample, 1))
    sites = list(range(1, min(first, total) + 1))
    sites += list(range(first + 1 + seed % stride, total + 1, stride))
    counts = {True: 0, False: 0}
    missed = 0
    for i, n in enumerate(sites):
        if i % 10 == 0:
            progress("fail-nth: sample %d of %d, n=%d" % (i, len(sites), n))
        left, rc = run(n)
        if left:
            # Fewer sites this time (they vary by a few between runs): a
            # run without a fault, which must succeed like any other.
            missed += 1
            if rc != 0:
                print("fail-nth: n=%d: no fault injected, exit status %d"
                      % (n, rc), flush=True)
                sys.exit(1)
        else:
            counts[rc == 0] += 1
        if not quiet:
            print("fail-nth: n=%d: %s, exit status %d"
                  % (n, "no fault" if left else "fault injected", rc),
                  flush=True)
        after_run(n)
    left, rc = run(UNARMED)
    print("fail-nth: swept n=1..%d and every %d-th site from %d (seed %d): "
          "%d runs, %d failed and %d succeeded under a fault, %d met no "
          "fault; last run without a fault: exit status %d"
          % (min(first, total), stride, first + 1 + seed % stride, seed,
             len(sites), counts[False], counts[True], missed, rc),
          flush=True)
    sys.exit(0 if rc == 0 else 1)


if sample:
    sweep_sample()
sweep_all()
EOF
