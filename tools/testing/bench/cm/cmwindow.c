// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * cmwindow: time rdma_cm connection setup and teardown while N RC
 * connections are held at once, but never more than W operations of a
 * step are in flight.
 *
 *   cmwindow -b ADDR [-p PORT] [-n N] [-l BACKLOG]              (server)
 *   cmwindow -s ADDR [-p PORT] [-c N] [-w W] [-t SECONDS]       (client)
 *            [-r RESOLVE_MS]
 *
 * Why: a client that sends all N connect requests at once (cmtime) makes
 * the passive side's user space the bottleneck; under an emulated CPU it
 * cannot accept 10000 requests inside rdma_cm's MRA window, and what gets
 * measured is then REQ/REP retransmission.  Here the client keeps at most
 * W connects (or disconnects) outstanding and refills the window as each
 * one completes.  No connection is disconnected before every connect has
 * completed, so at the end of the connect step all N are live, and the
 * cost per connection can be compared between different N.
 *
 * The client runs the steps create_id, resolve_addr, resolve_route,
 * create_qp, connect (rdma_connect to ESTABLISHED), disconnect
 * (rdma_disconnect to DISCONNECTED) and destroy, one after the other, and
 * prints for each the wall time from its start to its last completion and
 * the maximum, mean and 99th percentile of the time of one operation:
 *
 *   step            :   total_ms     max_ms     avg_ms     p99_ms
 *   connect         :    2086.89      19.28      1.231      5.402
 *
 * plus "#" lines with the median and the number of connections live at
 * the end of the connect step.  A connection that fails prints
 * "event: <event>, error: <status>"; the exit status is then 1.  When the
 * time limit (-t, counted from the start) runs out, or on SIGINT/SIGTERM,
 * the client says what is outstanding and exits with 2.
 *
 * The server accepts every request with an RC QP, destroys a connection
 * when it is disconnected or fails ("error: <event> status <n>" for a
 * failure), and runs until SIGINT/SIGTERM or, with -n N, until N
 * connections have ended.  Its exit status is 1 if it saw any error.
 *
 * Neither side moves data: every QP has one send and one receive work
 * request of room and all QPs of a device share one CQ.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#define MAX_DEVICES	8
#define CQ_DEPTH	16
#define NSEC_PER_MSEC	1000000LL
#define NSEC_PER_SEC	1000000000LL

/**
 * struct devres - verbs objects that every QP on one device shares
 * @verbs: the device (an rdma_cm id's verbs context)
 * @pd: protection domain of all QPs on @verbs
 * @cq: send and receive CQ of all QPs on @verbs (nothing is ever posted)
 */
struct devres {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

/**
 * struct rig - what server and client both need
 * @chan: the event channel of every rdma_cm id of the process
 * @sigfd: signalfd that reports SIGINT and SIGTERM
 * @stopped: a signal came
 * @dev: shared verbs objects, one entry per device seen
 * @ndev: entries used in @dev
 * @deadline: CLOCK_MONOTONIC time in ns at which waiting gives up
 */
struct rig {
	struct rdma_event_channel *chan;
	int sigfd;
	bool stopped;
	struct devres dev[MAX_DEVICES];
	int ndev;
	long long deadline;
};

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static double ns_to_ms(long long ns)
{
	return (double)ns / NSEC_PER_MSEC;
}

static const char *event_name(enum rdma_cm_event_type type)
{
	return rdma_event_str(type);
}

static int rig_open(struct rig *r)
{
	sigset_t sigs;
	int flags;

	memset(r, 0, sizeof(*r));
	r->sigfd = -1;
	r->deadline = LLONG_MAX;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &sigs, NULL)) {
		perror("sigprocmask");
		return -1;
	}
	r->sigfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (r->sigfd < 0) {
		perror("signalfd");
		return -1;
	}
	r->chan = rdma_create_event_channel();
	if (!r->chan) {
		perror("rdma_create_event_channel");
		goto err_sig;
	}
	/* Events are fetched until EAGAIN, waits happen in poll(). */
	flags = fcntl(r->chan->fd, F_GETFL);
	if (flags < 0 || fcntl(r->chan->fd, F_SETFL, flags | O_NONBLOCK)) {
		perror("fcntl O_NONBLOCK on the event channel");
		goto err_chan;
	}
	return 0;

err_chan:
	rdma_destroy_event_channel(r->chan);
	r->chan = NULL;
err_sig:
	close(r->sigfd);
	r->sigfd = -1;
	return -1;
}

/* Only after every QP and id of the process is gone. */
static void rig_close(struct rig *r)
{
	struct devres *d;
	int i, ret;

	for (i = 0; i < r->ndev; i++) {
		d = &r->dev[i];
		ret = ibv_destroy_cq(d->cq);
		if (ret)
			fprintf(stderr, "ibv_destroy_cq: %s\n", strerror(ret));
		ret = ibv_dealloc_pd(d->pd);
		if (ret)
			fprintf(stderr, "ibv_dealloc_pd: %s\n", strerror(ret));
	}
	r->ndev = 0;
	if (r->chan)
		rdma_destroy_event_channel(r->chan);
	r->chan = NULL;
	if (r->sigfd >= 0)
		close(r->sigfd);
	r->sigfd = -1;
}

/* Returns true once SIGINT or SIGTERM has arrived. */
static bool rig_signalled(struct rig *r)
{
	struct signalfd_siginfo si;

	if (!r->stopped && read(r->sigfd, &si, sizeof(si)) == sizeof(si)) {
		fprintf(stderr, "cmwindow: signal %u\n", si.ssi_signo);
		r->stopped = true;
	}
	return r->stopped;
}

/* The PD and CQ for @verbs, made on first use; NULL with errno set. */
static struct devres *rig_device(struct rig *r, struct ibv_context *verbs)
{
	struct devres *d;
	int i, err;

	for (i = 0; i < r->ndev; i++)
		if (r->dev[i].verbs == verbs)
			return &r->dev[i];
	if (!verbs || r->ndev == MAX_DEVICES) {
		errno = ENODEV;
		return NULL;
	}
	d = &r->dev[r->ndev];
	d->pd = ibv_alloc_pd(verbs);
	if (!d->pd)
		return NULL;
	d->cq = ibv_create_cq(verbs, CQ_DEPTH, NULL, NULL, 0);
	if (!d->cq) {
		err = errno;
		ibv_dealloc_pd(d->pd);
		d->pd = NULL;
		errno = err;
		return NULL;
	}
	d->verbs = verbs;
	r->ndev++;
	return d;
}

/* Give @id an RC QP without room for data; 0 or a negative errno. */
static int rig_make_qp(struct rig *r, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr;
	struct devres *d;

	d = rig_device(r, id->verbs);
	if (!d)
		return -errno;
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = d->cq;
	attr.recv_cq = d->cq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = 1;
	attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, d->pd, &attr))
		return -errno;
	return 0;
}

/**
 * rig_next_event() - take the next CM event of the process
 * @r: the rig
 * @out: receives a copy of the event, which is acknowledged already (its
 *	private data must not be used)
 *
 * Waits until an event comes, a signal arrives or @r->deadline passes.
 *
 * Return: 1 with *@out filled, 0 on a signal or the deadline, or a
 * negative errno.
 */
static int rig_next_event(struct rig *r, struct rdma_cm_event *out)
{
	struct rdma_cm_event *ev;
	struct pollfd pfd[2];
	long long left;
	int ms;

	for (;;) {
		if (!rdma_get_cm_event(r->chan, &ev)) {
			*out = *ev;
			if (rdma_ack_cm_event(ev))
				perror("rdma_ack_cm_event");
			return 1;
		}
		if (errno != EAGAIN && errno != EINTR) {
			perror("rdma_get_cm_event");
			return -errno;
		}
		if (rig_signalled(r))
			return 0;
		left = r->deadline - now_ns();
		if (left <= 0)
			return 0;
		/* Wake up now and then; a deadline far away is no problem. */
		ms = 10000;
		if (left < 10000 * NSEC_PER_MSEC)
			ms = left / NSEC_PER_MSEC + 1;
		pfd[0].fd = r->chan->fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = r->sigfd;
		pfd[1].events = POLLIN;
		if (poll(pfd, 2, ms) < 0 && errno != EINTR) {
			perror("poll");
			return -errno;
		}
	}
}

static int parse_addr(const char *host, const char *port, bool passive,
		      struct addrinfo **res)
{
	struct addrinfo hints;
	int ret;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if (passive)
		hints.ai_flags |= AI_PASSIVE;
	ret = getaddrinfo(host, port, &hints, res);
	if (ret) {
		fprintf(stderr, "cmwindow: %s port %s: %s\n", host, port,
			gai_strerror(ret));
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- server */

/**
 * struct sconn - one passive connection of the server
 * @id: its rdma_cm id; @id->context points back here
 * @established: ESTABLISHED came
 * @prev: previous entry of &struct server.conns
 * @next: next entry of &struct server.conns
 */
struct sconn {
	struct rdma_cm_id *id;
	bool established;
	struct sconn *prev;
	struct sconn *next;
};

/**
 * struct server - state of the passive side
 * @rig: channel, signals, verbs objects
 * @listen_id: the listening id
 * @conns: list head of every connection not ended yet
 * @want: end after this many connections ended (0: never)
 * @requests: connect requests seen
 * @established: connections that reached ESTABLISHED
 * @ended: connections that were disconnected or failed
 * @errors: error events and failed calls
 */
struct server {
	struct rig rig;
	struct rdma_cm_id *listen_id;
	struct sconn conns;
	long want;
	long requests;
	long established;
	long ended;
	long errors;
};

/* Destroy @sc's QP and id and forget it. */
static void server_drop(struct server *s, struct sconn *sc)
{
	if (sc->id->qp)
		rdma_destroy_qp(sc->id);
	if (rdma_destroy_id(sc->id)) {
		perror("rdma_destroy_id");
		s->errors++;
	}
	sc->prev->next = sc->next;
	sc->next->prev = sc->prev;
	free(sc);
}

static void server_refuse(struct server *s, struct rdma_cm_id *id,
			  const char *what, int err)
{
	printf("error: %s: %s\n", what, strerror(err));
	s->errors++;
	s->ended++;
	if (rdma_reject(id, NULL, 0))
		perror("rdma_reject");
	if (id->qp)
		rdma_destroy_qp(id);
	if (rdma_destroy_id(id))
		perror("rdma_destroy_id");
}

static void server_request(struct server *s, struct rdma_cm_id *id)
{
	struct rdma_conn_param param;
	struct sconn *sc;
	int ret;

	s->requests++;
	sc = calloc(1, sizeof(*sc));
	if (!sc) {
		server_refuse(s, id, "calloc", ENOMEM);
		return;
	}
	ret = rig_make_qp(&s->rig, id);
	if (ret) {
		free(sc);
		server_refuse(s, id, "rdma_create_qp", -ret);
		return;
	}
	sc->id = id;
	id->context = sc;
	sc->next = s->conns.next;
	sc->prev = &s->conns;
	s->conns.next->prev = sc;
	s->conns.next = sc;

	memset(&param, 0, sizeof(param));
	param.rnr_retry_count = 7;
	if (rdma_accept(id, &param)) {
		printf("error: rdma_accept: %s\n", strerror(errno));
		s->errors++;
		s->ended++;
		server_drop(s, sc);
	}
}

static void server_event(struct server *s, const struct rdma_cm_event *ev)
{
	struct sconn *sc = ev->id ? ev->id->context : NULL;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		server_request(s, ev->id);
		return;
	}
	if (ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT ||
	    ev->event == RDMA_CM_EVENT_ADDR_CHANGE)
		return;
	if (!sc) {
		/* The listener, or an id this program never took over. */
		printf("error: %s status %d on %s\n", event_name(ev->event),
		       ev->status, ev->id == s->listen_id ?
		       "the listener" : "an unknown id");
		s->errors++;
		if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
			s->rig.stopped = true;
		return;
	}
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED && !ev->status) {
		if (!sc->established)
			s->established++;
		sc->established = true;
		return;
	}
	if (ev->event != RDMA_CM_EVENT_DISCONNECTED || ev->status) {
		printf("error: %s status %d\n", event_name(ev->event),
		       ev->status);
		s->errors++;
	}
	s->ended++;
	server_drop(s, sc);
}

static int server_run(const char *host, const char *port, long want,
		      int backlog)
{
	struct rdma_cm_event ev;
	struct addrinfo *ai;
	struct server s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.conns.next = &s.conns;
	s.conns.prev = &s.conns;
	s.want = want;
	if (parse_addr(host, port, true, &ai))
		return 1;
	if (rig_open(&s.rig)) {
		freeaddrinfo(ai);
		return 1;
	}
	if (rdma_create_id(s.rig.chan, &s.listen_id, NULL, RDMA_PS_TCP)) {
		perror("rdma_create_id");
		s.listen_id = NULL;
		s.errors++;
		goto out;
	}
	if (rdma_bind_addr(s.listen_id, ai->ai_addr)) {
		perror("rdma_bind_addr");
		s.errors++;
		goto out;
	}
	/* rdma_ucm caps the backlog at net.rdma_ucm.max_backlog. */
	if (rdma_listen(s.listen_id, backlog)) {
		perror("rdma_listen");
		s.errors++;
		goto out;
	}
	printf("# cmwindow server: %s port %s\n", host, port);

	while (!s.want || s.ended < s.want) {
		ret = rig_next_event(&s.rig, &ev);
		if (ret < 0)
			s.errors++;
		if (ret <= 0)
			break;
		server_event(&s, &ev);
		if (s.rig.stopped)
			break;
	}
out:
	while (s.conns.next != &s.conns)
		server_drop(&s, s.conns.next);
	if (s.listen_id && rdma_destroy_id(s.listen_id)) {
		perror("rdma_destroy_id");
		s.errors++;
	}
	rig_close(&s.rig);
	freeaddrinfo(ai);
	printf("# server: %ld requests, %ld established, ", s.requests,
	       s.established);
	printf("%ld ended, %ld errors\n", s.ended, s.errors);
	return s.errors ? 1 : 0;
}

/* ---------------------------------------------------------------- client */

enum step {
	ST_CREATE_ID,
	ST_RESOLVE_ADDR,
	ST_RESOLVE_ROUTE,
	ST_CREATE_QP,
	ST_CONNECT,
	ST_DISCONNECT,
	ST_DESTROY,
	ST_COUNT,
};

static const char * const step_names[ST_COUNT] = {
	[ST_CREATE_ID] = "create_id",
	[ST_RESOLVE_ADDR] = "resolve_addr",
	[ST_RESOLVE_ROUTE] = "resolve_route",
	[ST_CREATE_QP] = "create_qp",
	[ST_CONNECT] = "connect",
	[ST_DISCONNECT] = "disconnect",
	[ST_DESTROY] = "destroy",
};

/*
 * The event that completes an operation of each asynchronous step; the
 * others (create_id, create_qp, destroy) are plain calls.
 */
static const struct {
	bool async;
	enum rdma_cm_event_type done;
} step_kind[ST_COUNT] = {
	[ST_RESOLVE_ADDR] = { true, RDMA_CM_EVENT_ADDR_RESOLVED },
	[ST_RESOLVE_ROUTE] = { true, RDMA_CM_EVENT_ROUTE_RESOLVED },
	[ST_CONNECT] = { true, RDMA_CM_EVENT_ESTABLISHED },
	[ST_DISCONNECT] = { true, RDMA_CM_EVENT_DISCONNECTED },
};

enum cstate {
	CS_NONE,	/* no id */
	CS_IDLE,	/* between operations */
	CS_BUSY,	/* an operation of the current step is outstanding */
	CS_FAILED,	/* an error ended it; later steps only destroy it */
};

/**
 * struct conn - one active connection of the client
 * @id: its rdma_cm id; @id->context points back here
 * @state: &enum cstate
 * @live: ESTABLISHED came and no disconnect or error since
 * @started: CLOCK_MONOTONIC ns when the current operation began
 */
struct conn {
	struct rdma_cm_id *id;
	enum cstate state;
	bool live;
	long long started;
};

/**
 * struct stepstat - what one step measured
 * @ran: the step was run (to its end or until the time limit)
 * @start: ns when it began
 * @last: ns when its last operation completed
 * @lat: ms of each operation that succeeded
 * @nlat: entries in @lat
 * @failed: operations that failed
 */
struct stepstat {
	bool ran;
	long long start;
	long long last;
	double *lat;
	int nlat;
	int failed;
};

/**
 * struct client - state of the active side
 * @rig: channel, signals, verbs objects, time limit
 * @dst: the server's address
 * @conns: the N connections
 * @n: number of connections
 * @window: most operations in flight in a step
 * @resolve_ms: timeout of address and route resolution
 * @step: the step running now
 * @busy: operations of @step outstanding
 * @live: connections live now
 * @live_after_connect: @live at the end of the connect step
 * @failures: connections that failed
 * @stat: per step measurements
 */
struct client {
	struct rig rig;
	struct addrinfo *dst;
	struct conn *conns;
	int n;
	int window;
	int resolve_ms;
	enum step step;
	int busy;
	int live;
	int live_after_connect;
	int failures;
	struct stepstat stat[ST_COUNT];
};

/* Account the end of @cn's operation in the current step. */
static void client_complete(struct client *c, struct conn *cn, bool ok)
{
	struct stepstat *st = &c->stat[c->step];

	st->last = now_ns();
	if (ok)
		st->lat[st->nlat++] = ns_to_ms(st->last - cn->started);
	else
		st->failed++;
	if (cn->state == CS_BUSY)
		c->busy--;
	cn->state = ok ? CS_IDLE : CS_FAILED;
}

/* @cn is done for: account it once, and its operation if outstanding. */
static void client_fail(struct client *c, struct conn *cn)
{
	if (cn->state != CS_FAILED)
		c->failures++;
	if (cn->live)
		c->live--;
	cn->live = false;
	if (cn->state == CS_BUSY)
		client_complete(c, cn, false);
	cn->state = CS_FAILED;
}

static void client_event(struct client *c, const struct rdma_cm_event *ev)
{
	struct conn *cn = ev->id ? ev->id->context : NULL;

	if (ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT ||
	    ev->event == RDMA_CM_EVENT_ADDR_CHANGE)
		return;
	if (!cn) {
		printf("event: %s, error: %d (unknown id)\n",
		       event_name(ev->event), ev->status);
		c->failures++;
		return;
	}
	if (cn->state == CS_BUSY && ev->event == step_kind[c->step].done &&
	    !ev->status) {
		client_complete(c, cn, true);
		if (c->step == ST_CONNECT) {
			cn->live = true;
			c->live++;
		} else if (c->step == ST_DISCONNECT) {
			cn->live = false;
			c->live--;
		}
		return;
	}
	/* Anything else ends the connection. */
	printf("event: %s, error: %d\n", event_name(ev->event), ev->status);
	client_fail(c, cn);
}

/* Start @cn's operation of the current asynchronous step. */
static int client_start(struct client *c, struct conn *cn)
{
	struct rdma_conn_param param;
	int ret;

	cn->started = now_ns();
	switch (c->step) {
	case ST_RESOLVE_ADDR:
		ret = rdma_resolve_addr(cn->id, NULL, c->dst->ai_addr,
					c->resolve_ms);
		break;
	case ST_RESOLVE_ROUTE:
		ret = rdma_resolve_route(cn->id, c->resolve_ms);
		break;
	case ST_CONNECT:
		memset(&param, 0, sizeof(param));
		param.retry_count = 7;
		param.rnr_retry_count = 7;
		ret = rdma_connect(cn->id, &param);
		break;
	case ST_DISCONNECT:
		ret = rdma_disconnect(cn->id);
		break;
	default:
		errno = EINVAL;
		ret = -1;
	}
	return ret ? -errno : 0;
}

/* One operation of a synchronous step on @cn. */
static int client_call(struct client *c, struct conn *cn)
{
	int ret;

	switch (c->step) {
	case ST_CREATE_ID:
		if (rdma_create_id(c->rig.chan, &cn->id, cn, RDMA_PS_TCP)) {
			cn->id = NULL;
			return -errno;
		}
		return 0;
	case ST_CREATE_QP:
		return rig_make_qp(&c->rig, cn->id);
	case ST_DESTROY:
		if (cn->id->qp)
			rdma_destroy_qp(cn->id);
		ret = rdma_destroy_id(cn->id) ? -errno : 0;
		cn->id = NULL;
		return ret;
	default:
		return -EINVAL;
	}
}

/* Stop for the time limit or a signal (never while destroying). */
static bool client_halted(struct client *c)
{
	if (c->step == ST_DESTROY)
		return false;
	return rig_signalled(&c->rig) || now_ns() >= c->rig.deadline;
}

/* Does @cn take part in the current synchronous step? */
static bool client_sync_wants(struct client *c, struct conn *cn)
{
	switch (c->step) {
	case ST_CREATE_ID:
		return cn->state == CS_NONE;
	case ST_DESTROY:
		return cn->id;
	default:
		return cn->state == CS_IDLE;
	}
}

static int client_sync_step(struct client *c)
{
	struct stepstat *st = &c->stat[c->step];
	struct conn *cn;
	int i, ret;

	for (i = 0; i < c->n; i++) {
		cn = &c->conns[i];
		if (!client_sync_wants(c, cn))
			continue;
		if (client_halted(c))
			return -ETIMEDOUT;
		cn->started = now_ns();
		ret = client_call(c, cn);
		if (ret) {
			printf("%s: %s\n", step_names[c->step], strerror(-ret));
			client_fail(c, cn);
			st->failed++;
			st->last = now_ns();
			continue;
		}
		st->last = now_ns();
		st->lat[st->nlat++] = ns_to_ms(st->last - cn->started);
		if (c->step == ST_CREATE_ID)
			cn->state = CS_IDLE;
	}
	return 0;
}

static int client_async_step(struct client *c)
{
	struct rdma_cm_event ev;
	struct conn *cn;
	int window = c->window, next = 0, ret;

	if (window <= 0 || window > c->n)
		window = c->n;
	c->busy = 0;
	for (;;) {
		while (c->busy < window && next < c->n) {
			cn = &c->conns[next++];
			if (cn->state != CS_IDLE)
				continue;
			ret = client_start(c, cn);
			if (ret) {
				printf("%s: %s\n", step_names[c->step],
				       strerror(-ret));
				client_fail(c, cn);
				c->stat[c->step].failed++;
				continue;
			}
			cn->state = CS_BUSY;
			c->busy++;
		}
		if (!c->busy)
			return 0;
		ret = rig_next_event(&c->rig, &ev);
		if (ret < 0)
			return ret;
		if (!ret)
			return -ETIMEDOUT;
		client_event(c, &ev);
	}
}

/* Print what the time limit or a signal left undone. */
static void client_report_halt(struct client *c, long long t0)
{
	int busy = 0, idle = 0, shown = 0, i;
	long long now = now_ns();
	struct conn *cn;

	for (i = 0; i < c->n; i++) {
		cn = &c->conns[i];
		if (cn->state == CS_IDLE)
			idle++;
		if (cn->state != CS_BUSY)
			continue;
		busy++;
		if (shown++ < 10)
			printf("# outstanding: conn %d for %.0f ms\n", i,
			       ns_to_ms(now - cn->started));
	}
	printf("timeout: step %s after %.1f s (limit or signal): ",
	       step_names[c->step], ns_to_ms(now - t0) / 1000);
	printf("%d outstanding, %d not done, %d live, %d failed\n", busy,
	       idle, c->live, c->failures);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The @pct percentile (nearest rank) of the sorted @v[0..@n-1]. */
static double percentile(const double *v, int n, int pct)
{
	int k = (int)(((long long)n * pct + 99) / 100) - 1;

	if (k < 0)
		k = 0;
	return v[k];
}

static void client_print(struct client *c)
{
	struct stepstat *st;
	double sum, total;
	int s, i;

	printf("%-16s: %10s %10s %10s %10s\n", "step", "total_ms", "max_ms",
	       "avg_ms", "p99_ms");
	for (s = 0; s < ST_COUNT; s++) {
		st = &c->stat[s];
		if (!st->ran || !st->nlat)
			continue;
		qsort(st->lat, st->nlat, sizeof(*st->lat), cmp_double);
		sum = 0;
		for (i = 0; i < st->nlat; i++)
			sum += st->lat[i];
		total = ns_to_ms(st->last - st->start);
		printf("%-16s: %10.2f %10.2f %10.3f %10.3f\n", step_names[s],
		       total, st->lat[st->nlat - 1], sum / st->nlat,
		       percentile(st->lat, st->nlat, 99));
	}
	for (s = 0; s < ST_COUNT; s++) {
		st = &c->stat[s];
		if (!st->ran || !st->nlat)
			continue;
		printf("# latency_ms %s n=%d failed=%d min=%.3f",
		       step_names[s], st->nlat, st->failed, st->lat[0]);
		printf(" median=%.3f p99=%.3f max=%.3f wall_per_conn=%.3f\n",
		       percentile(st->lat, st->nlat, 50),
		       percentile(st->lat, st->nlat, 99),
		       st->lat[st->nlat - 1],
		       ns_to_ms(st->last - st->start) / c->n);
	}
	printf("# live connections at the end of connect: %d of %d\n",
	       c->live_after_connect, c->n);
}

static int client_run(const char *host, const char *port, int n, int window,
		      int limit_s, int resolve_ms)
{
	struct client c;
	long long t0 = now_ns();
	int s, ret = 0, rc = 0;

	memset(&c, 0, sizeof(c));
	c.n = n;
	c.window = window;
	c.resolve_ms = resolve_ms;
	if (parse_addr(host, port, false, &c.dst))
		return 1;
	c.conns = calloc(n, sizeof(*c.conns));
	for (s = 0; s < ST_COUNT && c.conns; s++) {
		c.stat[s].lat = calloc(n, sizeof(*c.stat[s].lat));
		if (!c.stat[s].lat)
			break;
	}
	if (!c.conns || s < ST_COUNT) {
		fprintf(stderr, "cmwindow: out of memory for %d connections\n",
			n);
		rc = 1;
		goto out_mem;
	}
	if (rig_open(&c.rig)) {
		rc = 1;
		goto out_mem;
	}
	c.rig.deadline = t0 + limit_s * NSEC_PER_SEC;
	printf("# cmwindow client: server %s port %s conns %d window %d\n",
	       host, port, n, window <= 0 || window > n ? n : window);

	for (s = 0; s < ST_DESTROY; s++) {
		c.step = s;
		c.stat[s].ran = true;
		c.stat[s].start = now_ns();
		c.stat[s].last = c.stat[s].start;
		if (step_kind[s].async)
			ret = client_async_step(&c);
		else
			ret = client_sync_step(&c);
		if (s == ST_CONNECT)
			c.live_after_connect = c.live;
		if (ret)
			break;
	}
	if (ret) {
		client_report_halt(&c, t0);
		rc = 2;
	}
	/* Destroy every id; after a halt without reporting the time. */
	c.step = ST_DESTROY;
	c.stat[ST_DESTROY].ran = !ret;
	c.stat[ST_DESTROY].start = now_ns();
	c.stat[ST_DESTROY].last = c.stat[ST_DESTROY].start;
	client_sync_step(&c);
	client_print(&c);
	if (!rc && c.failures)
		rc = 1;
	printf("# connections: %d, failed %d, exit %d\n", c.n, c.failures, rc);
	rig_close(&c.rig);
out_mem:
	for (s = 0; s < ST_COUNT; s++)
		free(c.stat[s].lat);
	free(c.conns);
	freeaddrinfo(c.dst);
	return rc;
}

/* ------------------------------------------------------------------ main */

static void print_help(FILE *f)
{
	fprintf(f,
		"cmwindow -b ADDR [-p PORT] [-n N] [-l BACKLOG]      server\n"
		"cmwindow -s ADDR [-p PORT] [-c N] [-w W] [-t SECONDS]\n"
		"         [-r MS]                                    client\n"
		"  -p PORT     port (default 7471)\n"
		"  -n N        server: exit after N connections ended\n"
		"  -l BACKLOG  server: listen backlog (default 65536; the\n"
		"              kernel caps it at net.rdma_ucm.max_backlog)\n"
		"  -c N        client: connections (default 100)\n"
		"  -w W        client: operations in flight per step\n"
		"              (default 64; 0: all at once)\n"
		"  -t SECONDS  client: time limit (default 1200), exit 2\n"
		"  -r MS       client: address/route resolve timeout (2000)\n");
}

static bool parse_num(const char *arg, long max, long *val)
{
	char *end;

	errno = 0;
	*val = strtol(arg, &end, 10);
	return !errno && end != arg && !*end && *val >= 0 && *val <= max;
}

int main(int argc, char **argv)
{
	const char *server = NULL, *client = NULL, *port = "7471";
	long conns = 100, window = 64, limit = 1200, resolve = 2000;
	long want = 0, backlog = 65536, *num;
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "b:s:p:c:w:t:r:n:l:h")) != -1) {
		switch (opt) {
		case 'b':
			server = optarg;
			continue;
		case 's':
			client = optarg;
			continue;
		case 'p':
			port = optarg;
			continue;
		case 'c':
			num = &conns;
			break;
		case 'w':
			num = &window;
			break;
		case 't':
			num = &limit;
			break;
		case 'r':
			num = &resolve;
			break;
		case 'n':
			num = &want;
			break;
		case 'l':
			num = &backlog;
			break;
		case 'h':
			print_help(stdout);
			return 0;
		default:
			print_help(stderr);
			return 1;
		}
		if (!parse_num(optarg, INT_MAX, num)) {
			fprintf(stderr, "cmwindow: bad number '%s' for -%c\n",
				optarg, opt);
			return 1;
		}
	}
	if (optind != argc || !server == !client || conns < 1 ||
	    limit < 1 || backlog < 1) {
		print_help(stderr);
		return 1;
	}
	if (server)
		return server_run(server, port, want, backlog);
	return client_run(client, port, conns, window, limit, resolve);
}
