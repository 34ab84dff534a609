// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * cm_mad_abuse: a misbehaving VF.  Sends CM MADs through ib_umad that a
 * well-behaved CM never sends, at a RoCE v2 destination, for the PV-CM
 * cache on the PF to refuse:
 *
 *   cm_mad_abuse -d DEV -i SGID_INDEX -D DEST_IPV4 --malformed
 *   cm_mad_abuse -d DEV -i SGID_INDEX -D DEST_IPV4 --flood N [-s SERVICE_ID]
 *
 * --malformed sends one MAD of each kind below, every one of which the
 * cache must drop on the way out (none names a connection of this VF):
 * a wrong class version, an unknown attribute, a DREQ, RTU, DREP and LAP
 * of no connection, a REP, an MRA and a REJ answering no REQ delivered to
 * this VF, a REJ of a REP of no connection, a SIDR_REP answering no
 * SIDR_REQ.  It prints "malformed N" with the number sent.
 *
 * --flood N sends N well-formed REQs with distinct local comm ids for a
 * service nobody listens on (the peer's CM answers each with a REJ); the
 * cache maps them up to its per-VF cap and drops the rest.  It prints
 * "flood N".
 *
 * --fuzz N [--seed S] sends N mutated CM MADs at a node's CM itself (no
 * cache in between): each starts from a well-formed message of a random
 * attribute (the eleven of IBTA vol 1 chapter 12 and an unknown one),
 * then one to four mutations at field boundaries (comm ids, the byte
 * that says which message an MRA or REJ answers, REJ reason and ARI
 * length, REQ GIDs, QPNs, timeouts and transport, private data, the MAD
 * header's class version and method, random bytes).  The same seed sends
 * the same MADs (xorshift64*, seeded from getrandom() when not given).
 * It prints "fuzz N seed S".
 *
 * The comm ids are random (getrandom()), so that two runs never collide.
 * Exit status 0 when every MAD was handed to the kernel, 1 otherwise.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <infiniband/umad.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define MAD_SIZE	256
#define HDR		24	/* the common MAD header; CM fields follow */
#define CM_CLASS	0x07
#define CM_VERSION	2
#define METHOD_SEND	0x03
#define QP1_QKEY	0x80010000

enum {
	ATTR_REQ = 0x10, ATTR_MRA, ATTR_REJ, ATTR_REP, ATTR_RTU, ATTR_DREQ,
	ATTR_DREP, ATTR_SIDR_REQ, ATTR_SIDR_REP, ATTR_LAP,
};

/* MRA and REJ: which message they answer (the top two bits of byte 8) */
#define MSG_REQ		0
#define MSG_REP		1

struct target {
	int fd, agent, gid_index;
	uint8_t sgid[16], dgid[16];
};

/* xorshift64* (Vigna) of --fuzz, so that a seed repeats a run; 0: off */
static uint64_t fuzz_state;

static uint64_t fuzz_next(void)
{
	fuzz_state ^= fuzz_state >> 12;
	fuzz_state ^= fuzz_state << 25;
	fuzz_state ^= fuzz_state >> 27;
	return fuzz_state * 0x2545f4914f6cdd1dull;
}

/* a non-zero random value: from the seed under --fuzz */
static uint32_t random32(void)
{
	uint32_t v = 0;

	if (fuzz_state) {
		while (!v)
			v = fuzz_next() >> 32;
		return v;
	}
	while (getrandom(&v, sizeof(v), 0) != sizeof(v) || !v)
		;
	return v;
}

static void put8(uint8_t *mad, int data_off, uint8_t v)
{
	mad[HDR + data_off] = v;
}

static void put16(uint8_t *mad, int data_off, uint16_t v)
{
	v = htobe16(v);
	memcpy(mad + HDR + data_off, &v, sizeof(v));
}

static void put32(uint8_t *mad, int data_off, uint32_t v)
{
	v = htobe32(v);
	memcpy(mad + HDR + data_off, &v, sizeof(v));
}

static void put64(uint8_t *mad, int data_off, uint64_t v)
{
	v = htobe64(v);
	memcpy(mad + HDR + data_off, &v, sizeof(v));
}

/* A CM MAD header, the rest zeroed. */
static void cm_header(uint8_t *mad, uint16_t attr, uint8_t class_version)
{
	uint32_t tid = random32();

	memset(mad, 0, MAD_SIZE);
	mad[0] = 1;			/* base version */
	mad[1] = CM_CLASS;
	mad[2] = class_version;
	mad[3] = METHOD_SEND;
	/* the low half of the TID; ib_umad sets the agent's high half */
	memcpy(mad + 12, &tid, sizeof(tid));
	attr = htobe16(attr);
	memcpy(mad + 16, &attr, sizeof(attr));
}

/* Two comm ids, local then remote: the layout of every message but REQ. */
static void cm_ids(uint8_t *mad, uint16_t attr)
{
	cm_header(mad, attr, CM_VERSION);
	put32(mad, 0, random32());
	put32(mad, 4, random32());
}

/* A REQ of an RC connection over RoCE v2, as the RDMA CM would send it. */
static void cm_req(uint8_t *mad, const struct target *t, uint64_t service)
{
	cm_header(mad, ATTR_REQ, CM_VERSION);
	put32(mad, 0, random32());		/* local comm id */
	put64(mad, 8, service);
	put64(mad, 16, 0x5254000000000000ull | random32()); /* CA GUID */
	put32(mad, 32, (random32() & 0xffffff) << 8 | 1); /* QPN, resp. res. */
	put32(mad, 36, 1);			/* initiator depth */
	put8(mad, 43, 20 << 3);			/* remote CM response timeout */
	put8(mad, 47, 20 << 3 | 1 << 2);	/* local timeout, retries 7/RNR */
	put16(mad, 48, 0xffff);			/* P_Key */
	put8(mad, 50, 3 << 4 | 0);		/* MTU 1024, no extended */
	put8(mad, 51, 3 << 4);			/* max CM retries */
	put16(mad, 52, 0xffff);			/* LIDs: none on RoCE */
	put16(mad, 54, 0xffff);
	memcpy(mad + HDR + 56, t->sgid, 16);
	memcpy(mad + HDR + 72, t->dgid, 16);
	put8(mad, 93, 64);			/* hop limit */
	put8(mad, 95, 18 << 3);			/* local ACK timeout */
}

static int send_mad(const struct target *t, const uint8_t *mad)
{
	static uint8_t buf[4096];
	struct ib_user_mad *umad = (struct ib_user_mad *)buf;
	int tries;

	memset(buf, 0, umad_size() + MAD_SIZE);
	umad_set_addr(umad, 0xffff, 1, 0, QP1_QKEY);
	/* umad_set_grh() leaves the GID index at 0: set the GRH here */
	umad->addr.grh_present = 1;
	umad->addr.gid_index = t->gid_index;
	umad->addr.hop_limit = 64;
	memcpy(umad->addr.gid, t->dgid, 16);
	memcpy(umad_get_mad(umad), mad, MAD_SIZE);
	/*
	 * The address handle needs the next hop's MAC: the first send to a
	 * destination whose neighbour entry is not valid starts its
	 * resolution and fails.  Try again for a second.
	 */
	for (tries = 0; tries < 20; tries++) {
		if (umad_send(t->fd, t->agent, umad, MAD_SIZE, 0, 0) >= 0)
			return 0;
		if (errno != ETIMEDOUT && errno != ENODATA)
			break;
		usleep(50000);
	}
	perror("umad_send");
	return -1;
}

/* send @mad: count it in *@sent if it left, in *@err if not */
static void emit(const struct target *t, const uint8_t *mad, int *sent,
		 int *err)
{
	if (send_mad(t, mad))
		(*err)++;
	else
		(*sent)++;
}

static int send_malformed(const struct target *t)
{
	uint8_t mad[MAD_SIZE];
	int sent = 0, err = 0;

	/* a CM class version the cache does not speak */
	cm_ids(mad, ATTR_DREQ);
	mad[2] = 1;
	emit(t, mad, &sent, &err);
	/* an attribute the CM does not define */
	cm_ids(mad, 0x0099);
	emit(t, mad, &sent, &err);
	/* messages of a connection this VF does not have */
	cm_ids(mad, ATTR_DREQ);
	emit(t, mad, &sent, &err);
	cm_ids(mad, ATTR_RTU);
	emit(t, mad, &sent, &err);
	cm_ids(mad, ATTR_DREP);
	emit(t, mad, &sent, &err);
	cm_ids(mad, ATTR_LAP);
	emit(t, mad, &sent, &err);
	/* answers to a REQ that was never delivered to this VF */
	cm_ids(mad, ATTR_REP);
	emit(t, mad, &sent, &err);
	cm_ids(mad, ATTR_MRA);
	put8(mad, 8, MSG_REQ << 6);
	emit(t, mad, &sent, &err);
	cm_ids(mad, ATTR_REJ);
	put8(mad, 8, MSG_REQ << 6);
	put16(mad, 10, 28);		/* consumer reject */
	emit(t, mad, &sent, &err);
	/* a REJ of a REP this VF never got */
	cm_ids(mad, ATTR_REJ);
	put8(mad, 8, MSG_REP << 6);
	put16(mad, 10, 28);
	emit(t, mad, &sent, &err);
	/* an answer to a SIDR_REQ nobody sent */
	cm_header(mad, ATTR_SIDR_REP, CM_VERSION);
	put32(mad, 0, random32());
	emit(t, mad, &sent, &err);

	printf("malformed %d\n", sent);
	if (err)
		fprintf(stderr, "%d malformed MADs could not be sent\n", err);
	return err ? 1 : 0;
}

static int send_flood(const struct target *t, int n, uint64_t service)
{
	uint8_t mad[MAD_SIZE];
	int i, sent = 0;

	for (i = 0; i < n; i++) {
		cm_req(mad, t, service);
		if (send_mad(t, mad))
			break;
		sent++;
	}
	printf("flood %d\n", sent);
	return sent == n ? 0 : 1;
}

static int ipv4_gid(const char *s, uint8_t *gid)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return -1;
	memset(gid, 0, 16);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, &a, 4);
	return 0;
}

/* a decimal int in [0, INT_MAX], or -1 */
static int parse_count(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > INT_MAX)
		return -1;
	return (int)v;
}

static uint32_t fuzz_below(uint32_t n)
{
	return (uint32_t)(fuzz_next() >> 32) % n;
}

/* offsets (in the CM data, after the MAD header) of fields worth hitting */
static const uint8_t fuzz_offsets[] = {
	0, 3, 4, 7, 8, 9, 10, 11, 12, 16, 24, 32, 35, 36, 39, 40, 43, 44,
	47, 48, 50, 51, 52, 54, 56, 71, 72, 87, 88, 92, 93, 95, 96, 99, 100,
	131, 132, 199, 200, 223, 231,
};

static const uint8_t fuzz_values[] = { 0, 1, 0x7f, 0x80, 0xfe, 0xff };

static void fuzz_template(uint8_t *mad, const struct target *t)
{
	static const uint16_t attrs[] = {
		ATTR_REQ, ATTR_MRA, ATTR_REJ, ATTR_REP, ATTR_RTU, ATTR_DREQ,
		ATTR_DREP, ATTR_SIDR_REQ, ATTR_SIDR_REP, ATTR_LAP, 0x1a, 0x20,
	};
	uint16_t attr = attrs[fuzz_below(ARRAY_SIZE(attrs))];

	if (attr == ATTR_REQ) {
		cm_req(mad, t, fuzz_next());
		return;
	}
	cm_ids(mad, attr);
	switch (attr) {
	case ATTR_MRA:
	case ATTR_REJ:
		put8(mad, 8, fuzz_below(4) << 6);
		put16(mad, 10, fuzz_below(40));
		break;
	case ATTR_SIDR_REQ:
		put64(mad, 8, fuzz_next());
		break;
	}
}

static void fuzz_mutate(uint8_t *mad)
{
	int n = 1 + fuzz_below(4), off;

	while (n--) {
		switch (fuzz_below(6)) {
		case 0:		/* a field boundary, an edge value */
			off = fuzz_offsets[fuzz_below(ARRAY_SIZE(fuzz_offsets))];
			put8(mad, off, fuzz_values[fuzz_below(ARRAY_SIZE(fuzz_values))]);
			break;
		case 1:		/* a field boundary, any value */
			off = fuzz_offsets[fuzz_below(ARRAY_SIZE(fuzz_offsets))];
			put8(mad, off, fuzz_below(256));
			break;
		case 2:		/* a comm id: 0, all ones, random */
			put32(mad, fuzz_below(2) * 4,
			      fuzz_below(3) == 0 ? 0 :
			      fuzz_below(2) ? 0xffffffff : (uint32_t)fuzz_next());
			break;
		case 3:		/* the header: class version, method */
			mad[2 + fuzz_below(2)] = fuzz_values[fuzz_below(ARRAY_SIZE(fuzz_values))];
			break;
		case 4:		/* one bit anywhere in the CM data */
			mad[HDR + fuzz_below(MAD_SIZE - HDR)] ^= 1 << fuzz_below(8);
			break;
		default:	/* a run of random bytes */
			off = fuzz_below(MAD_SIZE - HDR);
			for (int i = off; i < MAD_SIZE - HDR && i < off + 16; i++)
				put8(mad, i, fuzz_below(256));
			break;
		}
	}
}

static int send_fuzz(const struct target *t, int n, uint64_t seed)
{
	uint8_t mad[MAD_SIZE];
	int i, sent = 0, err = 0;

	fuzz_state = seed;
	for (i = 0; i < n; i++) {
		fuzz_template(mad, t);
		fuzz_mutate(mad);
		emit(t, mad, &sent, &err);
	}
	printf("fuzz %d seed %llu\n", sent, (unsigned long long)seed);
	if (err)
		fprintf(stderr, "%d fuzzed MADs could not be sent\n", err);
	return err ? 1 : 0;
}

static void print_usage(const char *me)
{
	fprintf(stderr,
		"usage: %s -d DEV -i SGID_INDEX -S SRC_IPV4 -D DEST_IPV4\n"
		"          (--malformed | --flood N [-s SERVICE_ID] |\n"
		"           --fuzz N [--seed S])\n", me);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "malformed", no_argument, NULL, 'm' },
		{ "flood", required_argument, NULL, 'f' },
		{ "fuzz", required_argument, NULL, 'z' },
		{ "seed", required_argument, NULL, 'e' },
		{ NULL, 0, NULL, 0 },
	};
	/* RDMA_PS_TCP, port 9: nobody listens there */
	uint64_t service = 0x0000000001060009ull;
	const char *dev = NULL, *src = NULL, *dst = NULL;
	struct target t = { .gid_index = -1 };
	uint64_t seed = 0;
	int c, mode = 0, n = 0, ret;

	while ((c = getopt_long(argc, argv, "d:i:S:D:s:", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'i':
			t.gid_index = parse_count(optarg);
			break;
		case 'S':
			src = optarg;
			break;
		case 'D':
			dst = optarg;
			break;
		case 's':
			service = strtoull(optarg, NULL, 0);
			break;
		case 'm':
			mode = 'm';
			break;
		case 'f':
		case 'z':
			mode = c;
			n = parse_count(optarg);
			break;
		case 'e':
			seed = strtoull(optarg, NULL, 0);
			break;
		default:
			print_usage(argv[0]);
			return 2;
		}
	}
	if (!dev || t.gid_index < 0 || !src || !dst || !mode ||
	    (mode != 'm' && n <= 0) || ipv4_gid(src, t.sgid) ||
	    ipv4_gid(dst, t.dgid)) {
		print_usage(argv[0]);
		return 2;
	}
	if (umad_init() < 0) {
		fprintf(stderr, "umad_init failed\n");
		return 1;
	}
	t.fd = umad_open_port(dev, 1);
	if (t.fd < 0) {
		fprintf(stderr, "umad_open_port(%s, 1): %d\n", dev, t.fd);
		return 1;
	}
	/* send only: no methods, so ib_cm keeps every incoming CM MAD */
	t.agent = umad_register(t.fd, CM_CLASS, CM_VERSION, 0, NULL);
	if (t.agent < 0) {
		fprintf(stderr, "umad_register: %d\n", t.agent);
		return 1;
	}
	if (mode == 'z' && !seed)
		while (getrandom(&seed, sizeof(seed), 0) != sizeof(seed) || !seed)
			;
	if (mode == 'm')
		ret = send_malformed(&t);
	else if (mode == 'f')
		ret = send_flood(&t, n, service);
	else
		ret = send_fuzz(&t, n, seed);
	umad_unregister(t.fd, t.agent);
	umad_close_port(t.fd);
	return ret;
}
