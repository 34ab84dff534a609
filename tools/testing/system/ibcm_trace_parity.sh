#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test: ib_cm's trace events read as the distribution's ib_cm's do.
# Tools written for the stock module (perf, trace-cmd, bpftrace scripts)
# find its events by system and name, read their fields by name and
# parse their print formats.  Under our ib_cm, which the rig insmodded,
# then under the distribution's:
#
#   - the events of the ib_cma system, each format file (fields with their
#     names, types, offsets and sizes, and the print format) without its
#     ID line, which the kernel numbers as modules load;
#   - one rping connection recorded with trace-cmd and read back with
#     trace-cmd report: the events in order, each with its fields, the
#     comm IDs renamed id1, id2, ... in the order they first appear (so
#     that which event names which ID still counts, not the values).
#
# The two must be equal.  Events that only retransmissions cause
# (duplicates, MRAs) are taken out of the sequences first, and listed:
# a loaded host may retry a MAD in either run.  Our ib_cm (and the CM
# users that were loaded) is put back at the end.

# shellcheck source=SCRIPTDIR/../vm/guest-lib.sh
. "$GUEST_LIB"

TRACING=/sys/kernel/tracing
PORT=7191
# The CM's counters of rxe0's port (both modules have them).
PORT_DIR=/sys/class/infiniband/${RXE_DEV:-rxe0}/ports/1
# Connections made under each ib_cm to find one that no resent MAD or
# duplicate disturbed.
TRIES=3
# What a resent MAD or a duplicate can add to a connection's events:
# taken out of both sequences when either ib_cm had no clean connection.
RESEND_EVENTS='icm_send_dup_req|icm_send_dup_rep|icm_send_mra|icm_mra_unknown_err|icm_remote_no_priv_err|icm_no_priv_err|icm_issue_drep|icm_issue_rej'

rxe_up || exit 1

ours=$(insmod_file ib_cm)
# the distribution's own file: modprobe would prefer a DKMS build in
# updates/ (make check installs one on the host while guests run)
distro=$(inbox_module ib_cm drivers/infiniband/core)
if [ -z "$ours" ] || [ -z "$distro" ] || ! command -v trace-cmd > /dev/null; then
	tap_check "our ib_cm.ko given to the rig" test -n "$ours"
	tap_check "the distribution's ib_cm.ko found" test -n "$distro"
	tap_check "trace-cmd installed (make deps)" command -v trace-cmd
	tap_done
	exit $?
fi
echo "# ours:   $ours ($(module_id "$ours"))"
echo "# distro: $distro ($(module_id "$distro"))"
mountpoint -q "$TRACING" || mount -t tracefs tracefs "$TRACING" || exit 1

# normalize: trace-cmd report lines on stdin, the event and its fields on
# stdout, each comm ID (local_id=, remote_id=; 0 stays 0) renamed by the
# order in which it first appeared.
normalize() {
	awk '
	{
		line = $0
		sub(/^.*[0-9]+\.[0-9]+: +/, "", line)
		n = split(line, w, / +/)
		out = ""
		for (i = 1; i <= n; i++) {
			if (match(w[i], /^(local_id|remote_id)=[0-9]+$/)) {
				split(w[i], kv, "=")
				if (kv[2] != 0) {
					if (!(kv[2] in id))
						id[kv[2]] = "id" (++ids)
					w[i] = kv[1] "=" id[kv[2]]
				}
			}
			out = out (i > 1 ? " " : "") w[i]
		}
		print out
	}'
}

# cm_resends: the CM's retried sends and received duplicates on the port,
# in all (a connection that needed neither records only its own events);
# nothing when the port has no such counters.
cm_resends() {
	[ -d "$PORT_DIR/cm_tx_retries" ] || return 0
	cat "$PORT_DIR"/cm_tx_retries/* "$PORT_DIR"/cm_rx_duplicates/* \
		2> /dev/null | awk '{ n += $1 } END { print n + 0 }'
}

# connect_once DIR: one rping connection, traced by trace-cmd, its
# report in DIR/try.report; true if both ends succeeded.
connect_once() {
	local dir=$1 server crc src

	trace-cmd clear > /dev/null 2>&1 || : > "$TRACING/trace"
	echo 1 > "$TRACING/tracing_on"
	bg_with_timeout 120 rping -s -a "$MY_IP" -p "$PORT" -C 1 -v \
		> "$dir/server.out" 2>&1
	server=$!
	wait_cm_listening 30 "$PORT" "$server"
	run_with_timeout 60 rping -c -a "$MY_IP" -p "$PORT" -C 1 -v \
		> "$dir/client.out" 2>&1
	crc=$?
	rping_exit_race "$crc" "$dir/client.out" rping -v -C 1 && crc=0
	[ "$crc" = 0 ] && run_with_timeout 30 tail --pid="$server" -f /dev/null
	kill "$server" 2> /dev/null
	rping_wait "$server" "$dir/server.out" 1
	src=$?
	echo 0 > "$TRACING/tracing_on"
	run_with_timeout 120 trace-cmd extract -o "$dir/trace.dat" \
		> "$dir/extract.out" 2>&1
	run_with_timeout 120 trace-cmd report -i "$dir/trace.dat" \
		2> "$dir/report.err" | grep -E ' icm_[a-z_]+: ' > "$dir/try.report"
	echo "# $LABEL: rping client $crc, server $src"
	[ "$crc" = 0 ] && [ "$src" = 0 ]
}

# record LABEL: the ib_cma formats of the ib_cm in place, then one rping
# connection's events under it, in /tmp/trace-LABEL/: the first of up to
# TRIES connections that no retried send or duplicate disturbed.
record() {
	local dir=/tmp/trace-$1 try r0 ok=0 clean=0 t0

	LABEL=$1
	rm -rf "$dir"
	mkdir -p "$dir/format"
	# one program for all the files: a spawn costs under TCG
	awk -v d="$dir/format" '
		FNR == 1 {
			if (out != "")
				close(out)
			n = split(FILENAME, p, "/")
			out = d "/" p[n - 1]
			print p[n - 1] > (d "/../events")
		}
		!/^ID: / { print > out }' "$TRACING"/events/ib_cma/*/format
	echo "# $1: $(wc -l < "$dir/events") ib_cma events"

	modprobe rdma_ucm
	t0=$SECONDS
	# the monotonic clock orders the two ends' events across CPUs
	run_with_timeout 120 trace-cmd start -C mono -e ib_cma \
		> "$dir/start.out" 2>&1 ||
		sed -e "s/^/# $1: trace-cmd start: /" "$dir/start.out"
	for ((try = 1; try <= TRIES; try++)); do
		r0=$(cm_resends)
		connect_once "$dir" || continue
		ok=1
		mv "$dir/try.report" "$dir/report"
		normalize < "$dir/report" > "$dir/sequence"
		if [ -n "$r0" ] && [ "$(cm_resends)" = "$r0" ]; then
			clean=1
			break
		fi
		echo "# $1: try $try: the CM resent or got duplicates: not compared"
		sed -e "s/^/# $1: try $try: /" "$dir/sequence"
	done
	echo "# $1: $((try > TRIES ? TRIES : try)) connection(s) in $((SECONDS - t0)) s"
	sed -e "s/^/# $1: /" "$dir/sequence"
	[ "$clean" = 1 ] && : > "$dir/clean"
	tap_check "$1: rping connects and ends" test "$ok" = 1
	tap_check "$1: trace-cmd recorded the connection's events" \
		test -s "$dir/sequence"
	tap_check "$1: trace-cmd parses every event" \
		sh -c "! grep -q 'FAILED TO PARSE' '$dir/report'"
}

# same_tree A B: the files under A and under B are the same.
same_tree() {
	diff -r "$1" "$2" > /dev/null
}

loaded_users=$(cm_users_loaded | paste -sd ' ')

tap_check "ib_cm in place is ours" module_is_file ib_cm "$ours"
record ours
tap_check "our ib_cm unloads" cm_stack_down
insmod "$distro"
tap_check "ib_cm in place is the distro's file" module_is_file ib_cm "$distro"
record distro

tap_check "the same ib_cma events: $(wc -l < /tmp/trace-distro/events)" \
	sh -c 'test -s /tmp/trace-distro/events &&
		cmp -s /tmp/trace-ours/events /tmp/trace-distro/events'
diff /tmp/trace-ours/events /tmp/trace-distro/events |
	sed -n -e 's/^< /# only ours: /p' -e 's/^> /# only the distro'"'"'s: /p'
tap_check "every ib_cma format is the distro's (fields, print format)" \
	same_tree /tmp/trace-ours/format /tmp/trace-distro/format
diff -r /tmp/trace-ours/format /tmp/trace-distro/format | head -n 40 |
	sed -e 's/^/# ours<>distro: /'
what="one rping connection: the same events with the same fields"
for l in ours distro; do
	if [ -e "/tmp/trace-$l/clean" ]; then
		cp "/tmp/trace-$l/sequence" "/tmp/trace-$l/compared"
	else
		echo "# $l: no connection without resent MADs or duplicates in $TRIES"
		what="$what, but for what resent MADs and duplicates add"
	fi
done
if [ "$what" != "${what%add}" ]; then
	for l in ours distro; do
		# before the IDs are renamed: an event left out must not
		# shift the names of the others
		grep -vE " ($RESEND_EVENTS): " "/tmp/trace-$l/report" |
			normalize > "/tmp/trace-$l/compared"
	done
fi
tap_check "$what" cmp -s /tmp/trace-ours/compared /tmp/trace-distro/compared
diff /tmp/trace-ours/compared /tmp/trace-distro/compared |
	sed -e 's/^/# ours<>distro: /'

# Put our ib_cm back under the users that were loaded.
run_with_timeout 120 trace-cmd reset > /dev/null 2>&1
cm_stack_down
# shellcheck disable=SC2086 # a list of module names
cm_stack_up "$ours" $loaded_users
tap_check "our ib_cm is back in place" module_is_file ib_cm "$ours"
tap_done
