#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# mutate.sh: prove that the debug tier bites.
#
#   mutate.sh [--expect REGEX] [--keep] [check-debug options] PATCH
#
# Copies the repository (tracked files plus untracked, not ignored ones:
# git ls-files) into a scratch directory under build/mutate/, applies PATCH
# there (a deliberate bug in the project's code), builds it against the
# debug kernel and runs the debug suite (the copy's tools/testing/check-debug).
# Succeeds only if that suite FAILS and one of the debug reports it found
# matches REGEX (extended, default: any report).  A mutation that builds
# and passes, or that fails for another reason (a build error, a test
# failure without a matching report), makes mutate.sh fail.
#
# The REGEX may also be given by a line "Expect: REGEX" in PATCH's header.
# Other options (--ci, --no-2vm, --no-fail-nth, --parity-ours-only,
# --test FILE, --timeout S, --suites LIST, --jobs N, --fuzz-iterations N,
# --cache DIR, --kernel-env FILE) are passed to check-debug.  --keep leaves
# the scratch directory for a look.
# The debug kernel itself is shared with the real tree (same cache key).
set -uo pipefail

top=$(cd "$(dirname "$0")/../../.." && pwd)
expect=
keep=0
pass=()
patch=

while [ $# -gt 0 ]; do
	case $1 in
	--expect) expect=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--test | --cache | --kernel-env) pass+=("$1" "$(readlink -f "$2")"); shift 2 ;;
	--timeout | --suites | --jobs | --fuzz-iterations) pass+=("$1" "$2"); shift 2 ;;
	--no-2vm | --no-fail-nth | --ci | --parity-ours-only) pass+=("$1"); shift ;;
	-h | --help)
		sed -n '/^#   mutate.sh/,/^# The debug kernel itself/s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	-*) echo "mutate.sh: unknown option $1" >&2; exit 2 ;;
	*) patch=$(readlink -f "$1"); shift ;;
	esac
done
if [ -z "$patch" ] || [ ! -r "$patch" ]; then
	echo "usage: mutate.sh [--expect REGEX] PATCH" >&2
	exit 2
fi
if [ -z "$expect" ]; then
	expect=$(sed -n 's/^Expect: //p' "$patch" | head -n 1)
fi
expect=${expect:-.}

name=$(basename "$patch" .patch)
scratch=$top/build/mutate/$name
rm -rf "$scratch"
mkdir -p "$scratch"
echo "mutate: $name, expecting a report matching /$expect/"
echo "mutate: copying the repository to $scratch"
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
	xargs -0 cp --parents -t "$scratch") || { echo "mutate: copy failed"; exit 1; }

# GNU patch, not git apply: the scratch copy lies inside this repository's
# (ignored) build/, where git apply would silently skip every path.
if ! (cd "$scratch" && patch -p1 --forward --batch --no-backup-if-mismatch \
	< "$patch" | sed 's/^/mutate: /'); then
	echo "mutate: $patch does not apply to the current tree; refresh the mutation"
	exit 1
fi

reports=$scratch/mutation-reports
"$scratch/tools/testing/check-debug" "${pass[@]}" --reports "$reports" \
	> "$scratch/check-debug.log" 2>&1
rc=$?
tail -n 1 "$scratch/check-debug.log" | sed 's/^/mutate: suite: /'
matched=$(grep -E -- "$expect" "$reports" 2>/dev/null | head -n 5)

result=1
if [ "$rc" = 0 ]; then
	echo "mutate: FAIL: the suite passed with the mutation applied"
elif [ -z "$matched" ]; then
	echo "mutate: FAIL: the suite failed (exit $rc) but no report matched /$expect/"
	grep -E '^not ok' "$scratch/check-debug.log" | sed 's/^/mutate:   /'
	sed 's/^/mutate:   report: /' "$reports" 2>/dev/null | head -n 10
else
	echo "mutate: PASS: the suite failed and reported:"
	printf '%s\n' "$matched" | awk '{ print "mutate:   " $0 }'
	result=0
fi
cp "$scratch/check-debug.log" "$scratch.log"
echo "mutate: full log $scratch.log"
[ "$keep" = 1 ] || [ "$result" != 0 ] || rm -rf "$scratch"
exit $result
