#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# perftest ib_send_bw over soft-RoCE to the guest's own address, connected
# through the RDMA CM (-R).  Passes when server and client both exit 0 and
# the client reports a bandwidth line.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

PORT=${SEND_BW_PORT:-18515}
ITERS=${SEND_BW_ITERS:-1000}
ARGS=(-d rxe0 -R -n "$ITERS" -s 4096 -p "$PORT")

rxe_up || exit 1

# The server's rdma_cm ID listens on the port.
ib_send_bw "${ARGS[@]}" > /tmp/send_bw-server.out 2>&1 &
server=$!
# A client that comes before the listener is rejected, and perftest's
# client has been seen to crash on that (SIGSEGV in librdmacm) on a busy
# host: start it only once the server listens.
if ! wait_until 60 cm_listening "$PORT"; then
	echo "# the server does not listen on port $PORT after 60 s"
fi

connect_retry 10 /tmp/send_bw-client.out run_with_timeout 60 \
	ib_send_bw "${ARGS[@]}" "$MY_IP"
crc=$?

# The server ends by itself after a good run; after a failed one, stop it.
[ "$crc" = 0 ] && run_with_timeout 30 tail --pid="$server" -f /dev/null
kill "$server" 2> /dev/null
wait "$server"
src=$?

# The result row: "4096  1000  peak  average  msg-rate" after the header.
bw=$(awk '/#bytes/ { getline; print; exit }' /tmp/send_bw-client.out)
echo "# client exit status $crc, server exit status $src"
echo "# bytes iterations BW-peak[MB/s] BW-average[MB/s] MsgRate[Mpps]: $bw"
if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
	sed -e 's/^/# client: /' /tmp/send_bw-client.out
	sed -e 's/^/# server: /' /tmp/send_bw-server.out
fi

tap_check "ib_send_bw client exit 0" test "$crc" = 0
tap_check "ib_send_bw server exit 0" test "$src" = 0
tap_check "ib_send_bw bandwidth line" test -n "$bw"
tap_done
