#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# fail-nth.sh: systematic fault injection for guest tests.
#
#   fail-nth.sh [--start N] [--max N] [--after CMD] [--log FILE] [--quiet]
#               -- COMMAND [ARG...]
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
# sites are those of execve() itself; --start skips them.
#
# While it runs, failslab and fail_page_alloc also cover sleeping
# allocations (ignore-gfp-wait = N) and print nothing (verbose = 0, so the
# injected faults do not look like splats); both are restored on exit.
#
# --log FILE   append the output of every COMMAND run to FILE (default:
#              discarded)
# --after CMD  shell command run after every iteration (e.g. to undo what a
#              half-failed COMMAND left behind); its failure stops the loop
# Exit status: 0 when the final, uninjected run succeeded; 1 when it failed
# or --max (default 5000) was reached first; 2 on usage errors.
set -u

START=1
MAX=5000
AFTER=
QUIET=0
LOG=/dev/null

usage() {
	sed -n '/^#   fail-nth.sh/,/^#  *--/p' "$0" | sed 's/^# \{0,3\}//'
}

while [ $# -gt 0 ]; do
	case $1 in
	--start) START=$2; shift 2 ;;
	--max) MAX=$2; shift 2 ;;
	--after) AFTER=$2; shift 2 ;;
	--quiet) QUIET=1; shift ;;
	--log) LOG=$2; shift 2 ;;
	--) shift; break ;;
	-h | --help) usage; exit 0 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { usage >&2; exit 2; }
case "$START$MAX" in
*[!0-9]*) echo "fail-nth: --start and --max take numbers" >&2; exit 2 ;;
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

for t in failslab fail_page_alloc; do
	set_knob "$DBG/$t/ignore-gfp-wait" N
	set_knob "$DBG/$t/verbose" 0
done

# The loop runs in one Python process: a Python start per iteration would
# cost more than most commands under test.
python3 - "$START" "$MAX" "$QUIET" "$LOG" "$AFTER" "$@" <<'EOF'
import os
import subprocess
import sys

start, limit, quiet = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
log, after, cmd = sys.argv[4], sys.argv[5], sys.argv[6:]


def run(nth):
    """Run cmd with its nth fault site armed; return (injected, status)."""
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
    return left == 0, os.waitstatus_to_exitcode(status)


def progress(msg):
    """A line in the kernel log: it outlives a test that times out."""
    try:
        with open("/dev/kmsg", "w") as kmsg:
            kmsg.write(msg + "\n")
    except OSError:
        pass


counts = {True: 0, False: 0}
for n in range(start, limit + 1):
    if n % 100 == 0:
        progress("fail-nth: n=%d (%d runs failed, %d succeeded under a fault)"
                 % (n, counts[False], counts[True]))
    injected, rc = run(n)
    if not injected:
        print("fail-nth: n=%d: no fault injected, exit status %d "
              "(%d runs failed and %d succeeded under a fault)"
              % (n, rc, counts[False], counts[True]), flush=True)
        sys.exit(0 if rc == 0 else 1)
    counts[rc == 0] += 1
    if not quiet:
        print("fail-nth: n=%d: fault injected, exit status %d" % (n, rc),
              flush=True)
    if after and subprocess.call(["bash", "-c", after]) != 0:
        print("fail-nth: --after failed at n=%d" % n, file=sys.stderr)
        sys.exit(1)
print("fail-nth: still injecting at n=%d (--max); giving up" % limit,
      file=sys.stderr)
sys.exit(1)
EOF
