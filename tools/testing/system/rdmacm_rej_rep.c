// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rdmacm_rej_rep: connect to an rdma_cm listener with a cm_id that has no
 * QP, so that librdmacm hands the REP to this program, and reject the REP
 * (a consumer REJ of the connection the listener's side accepted).
 *
 *   rdmacm_rej_rep ADDR PORT
 *
 * Prints each step; exits 0 once the REP was rejected, 1 when anything
 * else happened (the listener rejected the REQ, a timeout, an error).
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>

#define STEP_MS	5000

static struct rdma_event_channel *ch;

/* Wait for the next event; 0 when it is @want. */
static int expect(enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	int got, status;

	if (rdma_get_cm_event(ch, &ev)) {
		perror("rdma_get_cm_event");
		return -1;
	}
	got = ev->event;
	status = ev->status;
	rdma_ack_cm_event(ev);
	printf("event %s, status %d\n", rdma_event_str(got), status);
	if (got != (int)want) {
		fprintf(stderr, "expected %s\n", rdma_event_str(want));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_flags = AI_NUMERICHOST };
	struct rdma_conn_param cp = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
		.qp_num = 0x1234,
	};
	struct rdma_cm_id *id;
	struct addrinfo *ai;
	int ret = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: %s ADDR PORT\n", argv[0]);
		return 2;
	}
	if (getaddrinfo(argv[1], argv[2], &hints, &ai)) {
		fprintf(stderr, "bad address %s:%s\n", argv[1], argv[2]);
		return 2;
	}
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		perror("rdma_create_id");
		return 1;
	}
	if (rdma_resolve_addr(id, NULL, ai->ai_addr, STEP_MS) ||
	    expect(RDMA_CM_EVENT_ADDR_RESOLVED))
		goto out;
	if (rdma_resolve_route(id, STEP_MS) ||
	    expect(RDMA_CM_EVENT_ROUTE_RESOLVED))
		goto out;
	/* Without a QP the REP comes to us as CONNECT_RESPONSE. */
	if (rdma_connect(id, &cp) || expect(RDMA_CM_EVENT_CONNECT_RESPONSE))
		goto out;
	if (rdma_reject(id, NULL, 0)) {
		perror("rdma_reject");
		goto out;
	}
	printf("REP rejected\n");
	ret = 0;
out:
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	freeaddrinfo(ai);
	return ret;
}
