#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# A guest that keeps its host busy: rping rounds over soft-RoCE through the
# distribution's RDMA CM (with BUSY_SPIN=1 also a shell loop that keeps a
# vCPU busy), until the host creates the file BUSY_STOP names or
# BUSY_SECONDS pass.  The values come from busy.env next to this script
# (written by busy-guests).  The rounds are load, not a test of the CM:
# the one point says only that the guest kept working to the end.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"
# shellcheck source=/dev/null
. "$(dirname "$0")/busy.env"

PORT=7174

rxe_up || exit 1

end=$((SECONDS + BUSY_SECONDS))
running() {
	[ "$SECONDS" -lt "$end" ] && [ ! -e "$BUSY_STOP" ]
}

spin=
if [ "$BUSY_SPIN" = 1 ]; then
	# the stop file is on 9p: look at it once per 100000 turns
	(while running; do
		for ((i = 0; i < 100000; i++)); do :; done
	done) &
	spin=$!
fi

rounds=0 failed=0
while running; do
	rping -s -a "$MY_IP" -p "$PORT" -C 500 > /dev/null 2>&1 &
	server=$!
	if wait_cm_listening 30 "$PORT" "$server" &&
	   run_with_timeout 120 rping -c -a "$MY_IP" -p "$PORT" -C 500 \
		> /dev/null 2>&1; then
		rounds=$((rounds + 1))
	else
		failed=$((failed + 1))
	fi
	kill "$server" 2> /dev/null
	wait "$server" 2> /dev/null
done
[ -n "$spin" ] && wait "$spin"
echo "# $rounds rping rounds of 500 pings, $failed failed, ${SECONDS}s"
tap_check "kept busy to the end ($rounds rounds)" test "$rounds" -gt 0
tap_done
