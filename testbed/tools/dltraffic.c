// SPDX-License-Identifier: GPL-2.0
/*
 * dltraffic - traffic generator for deadline aware TCP (D2TCP) experiments
 *
 * Sub-commands:
 *   server  accept connections, serve UPLOAD and RR requests
 *   flow    one upload flow, optionally with a deadline (TCP_DEADLINE)
 *   fanin   partition/aggregate root: RR queries to many leaves at once
 *   bulk    periodic background upload flows
 *   sched   upload flows of given sizes to given hosts at given times
 *   now     print CLOCK_MONOTONIC in microseconds (for --start-at-us)
 *
 * Wire protocol (network byte order), client to server, 32 bytes:
 *   u32 magic 0x444c5446 ("DLTF"), u32 op (1 UPLOAD, 2 RR),
 *   u64 req_bytes, u64 resp_bytes, u32 resp_deadline_us, u32 reserved (0)
 * followed by req_bytes of payload.  UPLOAD is answered with a u64 holding
 * the bytes received, RR with resp_bytes of payload, sent after the server
 * set TCP_DEADLINE {resp_deadline_us, resp_bytes} on its socket (when
 * resp_deadline_us is not 0).  A connection carries requests until EOF.
 *
 * Results are JSON objects, one per line, on stdout.  Times are
 * CLOCK_MONOTONIC microseconds, so processes on one host share a time base.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <linux/inet_diag.h>
#include <linux/tcp.h>

#ifndef TCP_DEADLINE
#define TCP_DEADLINE		0xd200	/* out of tree: far above upstream's */
struct tcp_deadline {
	__u64	tcpd_deadline_us;	/* time to the deadline, usec */
	__u64	tcpd_bytes;		/* bytes of the flow */
	__u32	tcpd_flags;		/* TCP_DEADLINE_F_* (get only) */
	__u32	tcpd_reserved;		/* must be zero */
};
#endif
#ifndef TCP_DEADLINE_F_SET
#define TCP_DEADLINE_F_SET	(1 << 0)
#define TCP_DEADLINE_F_EXPIRED	(1 << 1)
#endif

/* D2TCP's TCP_CC_INFO: DCTCP's struct, then the deadline state (the
 * patched linux/inet_diag.h has it as struct tcp_d2tcp_info)
 */
struct dlt_d2tcp_info {
	struct tcp_dctcp_info	dctcp;
	__u32	d2tcp_d;		/* deadline imminence d, 1024 = 1.0 */
	__u32	d2tcp_flags;		/* TCP_DEADLINE_F_* */
	__u64	d2tcp_time_left_us;
	__u64	d2tcp_bytes_left;
};

#define DLT_MAGIC	0x444c5446u
#define DLT_OP_UPLOAD	1
#define DLT_OP_RR	2
#define DLT_HDR_LEN	32
#define DLT_DONE_LEN	8
#define DEFAULT_PORT	"5301"
#define BUF_SIZE	(64 * 1024)

#define EXIT_USAGE	2
#define EXIT_KERNEL	3

typedef uint64_t u64;
typedef uint32_t u32;
typedef uint16_t u16;

static char sendbuf[BUF_SIZE];		/* payload, never written to */
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *prog = "dltraffic";

struct req {
	u32 op;
	u64 req_bytes;
	u64 resp_bytes;
	u32 resp_deadline_us;
	u32 reserved;
};

struct target {
	char host[256];
	char port[16];
	char peer[300];			/* "host:port", "[v6]:port" */
	struct sockaddr_storage addr;
	socklen_t alen;
};

struct cfg {
	const char *host;
	const char *port;
	const char *bind;
	int family;
	const char *cc;
	const char *id;
	const char *id_prefix;
	const char *leaves;
	u64 bytes;
	bool have_bytes;
	u64 deadline_us, deadline_max;
	u64 resp_min, resp_max;
	bool have_resp;
	u64 req_bytes;
	u64 sample_ms;
	u64 start_at_us;
	u64 queries;
	u64 interval_us;
	u64 seed;
	bool have_seed;
	u64 every_us;
	bool have_every;
	u64 count;
	/* 0: the kernel picks; else the schedule's k-th flow and fanin's
	 * k-th leaf (k from 0) leave from source port sport_base + k */
	u64 sport_base;
};

/* ---------------------------------------------------------------- util */

static u64 now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000 + (u64)ts.tv_nsec / 1000;
}

static void sleep_until_us(u64 t)
{
	struct timespec ts = {
		.tv_sec = t / 1000000,
		.tv_nsec = (t % 1000000) * 1000,
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void __attribute__((format(printf, 1, 2))) warnmsg(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", prog, line);
}

static void __attribute__((format(printf, 2, 3), noreturn))
die(int code, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", prog, line);
	fflush(stdout);
	exit(code);
}

/* Print one JSON line atomically with respect to other threads, flushed. */
static void __attribute__((format(printf, 1, 2))) emit(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	pthread_mutex_lock(&out_lock);
	fwrite(line, 1, n, stdout);
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

/* JSON string body (without quotes) of s into out. */
static const char *json_str(char *out, size_t len, const char *s)
{
	size_t o = 0;

	for (; *s && o + 7 < len; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = c;
		} else if (c < 0x20) {
			o += snprintf(out + o, len - o, "\\u%04x", c);
		} else {
			out[o++] = c;
		}
	}
	out[o] = '\0';
	return out;
}

static const char *met_str(u64 deadline_us, u64 fct_us)
{
	if (!deadline_us)
		return "null";
	return fct_us <= deadline_us ? "true" : "false";
}

static void put_be32(unsigned char *p, u32 v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static void put_be64(unsigned char *p, u64 v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static u32 get_be32(const unsigned char *p)
{
	u32 v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static u64 get_be64(const unsigned char *p)
{
	u64 v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

static void encode_req(unsigned char *h, const struct req *r)
{
	put_be32(h, DLT_MAGIC);
	put_be32(h + 4, r->op);
	put_be64(h + 8, r->req_bytes);
	put_be64(h + 16, r->resp_bytes);
	put_be32(h + 24, r->resp_deadline_us);
	put_be32(h + 28, 0);
}

/* splitmix64: small, deterministic, good enough for workloads. */
static u64 rng_next(u64 *s)
{
	u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static u64 rng_range(u64 *s, u64 lo, u64 hi)
{
	u64 span = hi - lo + 1;

	if (!span)			/* the full 64-bit range */
		return rng_next(s);
	return lo + (u64)(((unsigned __int128)rng_next(s) * span) >> 64);
}

/* ----------------------------------------------------------------- I/O */

/* Read exactly len bytes.  Returns len, fewer at EOF, -1 on error. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = read(fd, (char *)buf + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (!n)
			break;
		off += n;
	}
	return off;
}

/* Read and drop n bytes.  0 on success, -1 on error, -2 at early EOF. */
static int discard(int fd, u64 n, char *buf, size_t len)
{
	while (n) {
		size_t want = n < len ? n : len;
		ssize_t r = read(fd, buf, want);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (!r)
			return -2;
		n -= r;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(fd, (const char *)buf + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		off += n;
	}
	return 0;
}

/*
 * One writev of what is left of the header (*hoff..hlen) and up to
 * BUF_SIZE bytes of payload (*left), so a small request leaves in one
 * segment.  Returns bytes written, -1 on error (EAGAIN included).
 */
static ssize_t send_some(int fd, const unsigned char *hdr, size_t hlen,
			 size_t *hoff, u64 *left)
{
	struct iovec iov[2];
	int cnt = 0;
	ssize_t n;
	size_t h;

	if (hdr && *hoff < hlen) {
		iov[cnt].iov_base = (void *)(hdr + *hoff);
		iov[cnt++].iov_len = hlen - *hoff;
	}
	if (*left) {
		iov[cnt].iov_base = sendbuf;
		iov[cnt++].iov_len = *left < BUF_SIZE ? *left : BUF_SIZE;
	}
	if (!cnt)
		return 0;
	do {
		n = writev(fd, iov, cnt);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	h = 0;
	if (hdr && *hoff < hlen) {
		h = hlen - *hoff;
		if ((size_t)n < h)
			h = n;
		*hoff += h;
	}
	*left -= n - h;
	return n;
}

/* Blocking: send header (may be NULL) then n bytes of payload. */
static int send_msg(int fd, const unsigned char *hdr, size_t hlen, u64 n)
{
	size_t hoff = 0;

	while ((hdr && hoff < hlen) || n)
		if (send_some(fd, hdr, hlen, &hoff, &n) < 0)
			return -1;
	return 0;
}

/* ------------------------------------------------------------- sockets */

static void set_cc(int fd, const char *cc)
{
	if (cc && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, strlen(cc)) < 0)
		die(EXIT_KERNEL, "cannot set congestion control \"%s\": %s", cc,
		    strerror(errno));
}

static const char *get_cc(int fd, char *buf, size_t len)
{
	socklen_t l = len - 1;

	memset(buf, 0, len);
	if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, buf, &l) < 0)
		snprintf(buf, len, "?");
	return buf;
}

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Only a deadline aware congestion control (d2tcp) keeps a deadline; with
 * any other the kernel answers EOPNOTSUPP, and the deadline is only
 * measured against (the same workload under DCTCP or TCP).
 */
static int set_deadline(int fd, u64 deadline_us, u64 bytes)
{
	struct tcp_deadline d;

	memset(&d, 0, sizeof(d));
	d.tcpd_deadline_us = deadline_us;
	d.tcpd_bytes = bytes;
	if (setsockopt(fd, IPPROTO_TCP, TCP_DEADLINE, &d, sizeof(d)) < 0)
		return errno == EOPNOTSUPP ? 0 : -1;
	return 0;
}

static void __attribute__((noreturn)) die_no_deadline(void)
{
	die(EXIT_KERNEL, "kernel lacks TCP_DEADLINE (socket option %d): %s; "
	    "run without --deadline-us or boot the patched kernel with "
	    "CONFIG_TCP_DEADLINE=y", TCP_DEADLINE, strerror(ENOPROTOOPT));
}

/* Fail early, before connecting, if this kernel has no TCP_DEADLINE. */
static void probe_deadline(int family)
{
	struct tcp_deadline d;
	socklen_t len = sizeof(d);
	int fd = socket(family, SOCK_STREAM, 0);

	if (fd < 0)
		die(1, "socket: %s", strerror(errno));
	if (getsockopt(fd, IPPROTO_TCP, TCP_DEADLINE, &d, &len) < 0 &&
	    errno == ENOPROTOOPT)
		die_no_deadline();
	close(fd);
}

/* "host:port", "[v6]:port" or "host" (then the default port). */
static int parse_hostport(struct target *t, const char *s, const char *defport)
{
	const char *c, *h = s;
	size_t hl;

	if (*s == '[') {
		const char *e = strchr(s, ']');

		if (!e || (e[1] && e[1] != ':'))
			return -1;
		h = s + 1;
		hl = e - h;
		c = e[1] ? e + 1 : NULL;
	} else {
		c = strrchr(s, ':');
		if (c && strchr(s, ':') != c)	/* bare IPv6 address */
			c = NULL;
		hl = c ? (size_t)(c - s) : strlen(s);
	}
	if (!hl || hl >= sizeof(t->host))
		return -1;
	memcpy(t->host, h, hl);
	t->host[hl] = '\0';
	snprintf(t->port, sizeof(t->port), "%s", c ? c + 1 : defport);
	return *t->port ? 0 : -1;
}

static void resolve(struct target *t, int family, bool passive)
{
	struct addrinfo hints, *ai;
	int err;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	err = getaddrinfo(passive && !*t->host ? NULL : t->host, t->port,
			  &hints, &ai);
	if (err)
		die(1, "cannot resolve %s port %s (%s): %s%s", *t->host ?
		    t->host : "*", t->port, family == AF_INET6 ? "IPv6" : "IPv4",
		    gai_strerror(err), family == AF_INET && strchr(t->host, ':') ?
		    " (use -6 for IPv6)" : "");
	memcpy(&t->addr, ai->ai_addr, ai->ai_addrlen);
	t->alen = ai->ai_addrlen;
	freeaddrinfo(ai);
	snprintf(t->peer, sizeof(t->peer), strchr(t->host, ':') ? "[%s]:%s" :
		 "%s:%s", t->host, t->port);
}

/* Source port sport (0: the kernel's pick), bound on the wildcard address
 * with SO_REUSEADDR.  A port that cannot be bound is warned about and left
 * to the kernel: the flow runs, only its 5-tuple is not the fixed one.
 */
static void bind_sport(int fd, int family, u16 sport, const char *id)
{
	struct sockaddr_storage ss = { .ss_family = family };
	int one = 1;

	if (!sport)
		return;
	if (family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(sport);
	else
		((struct sockaddr_in *)&ss)->sin_port = htons(sport);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, family == AF_INET6 ?
		 sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in)) < 0)
		warnmsg("%s: source port %u: %s (the kernel picks one)",
			id ? id : "flow", sport, strerror(errno));
}

/* The socket's local port, 0 if unknown */
static u16 local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* Connect with cc and TCP_NODELAY set (from source port sport, 0: any);
 * -1 with errno on failure.
 */
static int tcp_connect(const struct target *t, const char *cc, u16 sport,
		       const char *id)
{
	int fd = socket(t->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int err;

	if (fd < 0)
		return -1;
	set_cc(fd, cc);
	set_nodelay(fd);
	bind_sport(fd, t->addr.ss_family, sport, id);
	while (connect(fd, (const struct sockaddr *)&t->addr, t->alen) < 0) {
		if (errno == EINTR)
			continue;
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* -------------------------------------------------------------- server */

struct conn {
	int fd;
	u64 sample_us;				/* --sample-ms, 0: off */
	char peer[INET6_ADDRSTRLEN + 16];	/* "[addr]:port" */
};

/*
 * --sample-ms: the congestion state of the socket sending one response,
 * every period from right after TCP_DEADLINE is set until the response is
 * all acknowledged (or 60 s): cwnd, srtt, packets in flight and, under
 * DCTCP/D2TCP, alpha; under D2TCP also d, the deadline flags, the time
 * left and the bytes left.  "resp" counts the responses on the connection
 * from 0 (the fanin root's query number).
 */
struct rsampler {
	int fd;
	u64 resp, bytes, deadline_us, period_us, start_us;
	bool dctcp, d2tcp;			/* TCP_CC_INFO is DCTCP's (D2TCP's) */
	atomic_bool sent;			/* the last byte is written */
	pthread_t th;
};

/* One sample; returns true once the response is all acknowledged */
static bool rsample(struct rsampler *s)
{
	struct tcp_info ti;
	union {
		union tcp_cc_info u;
		struct dlt_d2tcp_info d2;
	} ci;
	socklen_t len = sizeof(ti), clen = sizeof(ci);
	int alpha = -1, d = -1, flags = -1;
	unsigned long long tleft = 0, bleft = 0;
	bool sent = atomic_load(&s->sent);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return true;
	memset(&ci, 0, sizeof(ci));
	if ((s->dctcp || s->d2tcp) &&
	    !getsockopt(s->fd, IPPROTO_TCP, TCP_CC_INFO, &ci, &clen)) {
		if (clen >= sizeof(ci.u.dctcp) && ci.u.dctcp.dctcp_enabled)
			alpha = ci.u.dctcp.dctcp_alpha;
		if (s->d2tcp && clen >= sizeof(ci.d2)) {
			d = ci.d2.d2tcp_d;
			flags = ci.d2.d2tcp_flags;
			tleft = ci.d2.d2tcp_time_left_us;
			bleft = ci.d2.d2tcp_bytes_left;
		}
	}
	emit("{\"type\":\"rsample\",\"resp\":%" PRIu64 ",\"bytes\":%" PRIu64
	     ",\"deadline_us\":%" PRIu64 ",\"t_us\":%" PRIu64 ",\"cwnd\":%u"
	     ",\"srtt_us\":%u,\"unacked\":%u,\"notsent\":%u,\"sent\":%d"
	     ",\"alpha\":%d,\"d\":%d,\"flags\":%d,\"time_left_us\":%llu"
	     ",\"bytes_left\":%llu,\"retrans\":%u}", s->resp, s->bytes,
	     s->deadline_us, now_us() - s->start_us, ti.tcpi_snd_cwnd,
	     ti.tcpi_rtt, ti.tcpi_unacked, ti.tcpi_notsent_bytes, sent,
	     alpha, d, flags, tleft, bleft, ti.tcpi_total_retrans);
	return sent && !ti.tcpi_unacked && !ti.tcpi_notsent_bytes;
}

static void *rsampler_thread(void *arg)
{
	struct rsampler *s = arg;
	u64 next = s->start_us;

	do {
		next += s->period_us;
		if (now_us() >= next)	/* fell behind: skip, not burst */
			next = now_us() + s->period_us;
		sleep_until_us(next);
	} while (!rsample(s) && now_us() - s->start_us < 60000000);
	return NULL;
}

static void *conn_thread(void *arg)
{
	struct conn *c = arg;
	unsigned char h[DLT_HDR_LEN], done[DLT_DONE_LEN];
	bool dl_set = false, smp;
	char *buf = malloc(BUF_SIZE);
	struct rsampler rs;
	u64 nresp = 0;
	char ccname[16];
	struct req r;
	ssize_t n;
	int err;

	if (!buf) {
		warnmsg("%s: out of memory", c->peer);
		goto out;
	}
	for (;;) {
		n = read_full(c->fd, h, sizeof(h));
		if (n == 0)
			break;			/* clean end of the connection */
		if (n < 0) {
			warnmsg("%s: read: %s", c->peer, strerror(errno));
			break;
		}
		if (n < DLT_HDR_LEN) {
			warnmsg("%s: truncated request header (%zd bytes)",
				c->peer, n);
			break;
		}
		r.op = get_be32(h + 4);
		r.req_bytes = get_be64(h + 8);
		r.resp_bytes = get_be64(h + 16);
		r.resp_deadline_us = get_be32(h + 24);
		r.reserved = get_be32(h + 28);
		if (get_be32(h) != DLT_MAGIC ||
		    (r.op != DLT_OP_UPLOAD && r.op != DLT_OP_RR) || r.reserved) {
			warnmsg("%s: bad request header (magic 0x%08x op %u), closing",
				c->peer, get_be32(h), r.op);
			break;
		}
		err = discard(c->fd, r.req_bytes, buf, BUF_SIZE);
		if (err) {
			warnmsg("%s: reading %" PRIu64 " request bytes: %s",
				c->peer, r.req_bytes, err == -2 ?
				"connection closed early" : strerror(errno));
			break;
		}
		if (r.op == DLT_OP_UPLOAD) {
			put_be64(done, r.req_bytes);
			if (write_all(c->fd, done, sizeof(done)) < 0) {
				warnmsg("%s: write: %s", c->peer, strerror(errno));
				break;
			}
			continue;
		}
		if (r.resp_deadline_us && r.resp_bytes) {
			if (set_deadline(c->fd, r.resp_deadline_us, r.resp_bytes) < 0) {
				warnmsg("%s: TCP_DEADLINE: %s, closing", c->peer,
					errno == ENOPROTOOPT ? "kernel lacks TCP_DEADLINE" :
					strerror(errno));
				break;
			}
			dl_set = true;
		} else if (dl_set) {
			set_deadline(c->fd, 0, 0);	/* clear the old one */
			dl_set = false;
		}
		smp = false;
		if (c->sample_us && r.resp_bytes) {
			memset(&rs, 0, sizeof(rs));
			rs.fd = c->fd;
			rs.resp = nresp;
			rs.bytes = r.resp_bytes;
			rs.deadline_us = r.resp_deadline_us;
			rs.period_us = c->sample_us;
			rs.start_us = now_us();
			get_cc(c->fd, ccname, sizeof(ccname));
			rs.dctcp = !strcmp(ccname, "dctcp");
			rs.d2tcp = !strcmp(ccname, "d2tcp");
			atomic_init(&rs.sent, false);
			rsample(&rs);		/* before the first byte */
			smp = !pthread_create(&rs.th, NULL, rsampler_thread, &rs);
		}
		nresp++;
		err = send_msg(c->fd, NULL, 0, r.resp_bytes);
		if (smp) {
			atomic_store(&rs.sent, true);
			pthread_join(rs.th, NULL);
		}
		if (err < 0) {
			warnmsg("%s: write: %s", c->peer, strerror(errno));
			break;
		}
	}
out:
	close(c->fd);
	free(buf);
	free(c);
	return NULL;
}

struct server {
	int lfd;
	const char *cc;
	u64 sample_us;
};

static void *accept_thread(void *arg)
{
	struct server *s = arg;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char host[INET6_ADDRSTRLEN], port[8];
		struct conn *c;
		pthread_t th;
		int fd, err;

		fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			warnmsg("accept: %s", strerror(errno));
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				usleep(100000);
				continue;
			}
			exit(1);
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->sample_us = s->sample_us;
		if (getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host),
				port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV))
			snprintf(c->peer, sizeof(c->peer), "?");
		else
			snprintf(c->peer, sizeof(c->peer), strchr(host, ':') ?
				 "[%s]:%s" : "%s:%s", host, port);
		if (s->cc && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, s->cc,
					strlen(s->cc)) < 0)
			warnmsg("%s: setting congestion control %s: %s", c->peer,
				s->cc, strerror(errno));
		set_nodelay(fd);
		err = pthread_create(&th, &attr, conn_thread, c);
		if (err) {
			warnmsg("pthread_create: %s", strerror(err));
			close(fd);
			free(c);
		}
	}
	return NULL;
}

static int run_server(const struct cfg *cfg)
{
	struct server s = { .cc = cfg->cc, .sample_us = cfg->sample_ms * 1000 };
	struct target t;
	sigset_t set;
	pthread_t th;
	int one = 1, sig, err;

	memset(&t, 0, sizeof(t));
	snprintf(t.host, sizeof(t.host), "%s", cfg->bind ? cfg->bind : "");
	snprintf(t.port, sizeof(t.port), "%s", cfg->port);
	resolve(&t, cfg->family, true);

	s.lfd = socket(cfg->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s.lfd < 0)
		die(1, "socket: %s", strerror(errno));
	setsockopt(s.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (cfg->family == AF_INET6)	/* let an IPv4 server share the port */
		setsockopt(s.lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	set_cc(s.lfd, cfg->cc);		/* inherited by accepted sockets */
	if (bind(s.lfd, (struct sockaddr *)&t.addr, t.alen) < 0)
		die(1, "bind %s port %s: %s", cfg->bind ? cfg->bind : "*",
		    cfg->port, strerror(errno));
	if (listen(s.lfd, 1024) < 0)
		die(1, "listen: %s", strerror(errno));
	warnmsg("listening on %s port %s (%s)%s%s", cfg->bind ? cfg->bind : "*",
		cfg->port, cfg->family == AF_INET6 ? "IPv6" : "IPv4",
		cfg->cc ? ", cc " : "", cfg->cc ? cfg->cc : "");

	/* Every thread inherits the blocked mask; main waits for the signal. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	err = pthread_create(&th, NULL, accept_thread, &s);
	if (err)
		die(1, "pthread_create: %s", strerror(err));
	do {
		err = sigwait(&set, &sig);
	} while (err == EINTR);
	warnmsg("signal %d, exiting", sig);
	close(s.lfd);
	fflush(stdout);
	_exit(0);
}

/* ---------------------------------------------------------------- flow */

struct sampler {
	int fd;
	u64 start_us;
	u64 period_us;
	const char *id;			/* JSON-escaped */
	bool stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t th;
};

static void *sampler_thread(void *arg)
{
	struct sampler *s = arg;
	u64 next = s->start_us;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		struct tcp_info ti;
		union tcp_cc_info ci;
		socklen_t len = sizeof(ti), clen;
		struct timespec ts;
		int alpha;
		u64 t;

		next += s->period_us;
		ts.tv_sec = next / 1000000;
		ts.tv_nsec = (next % 1000000) * 1000;
		while (!s->stop &&
		       pthread_cond_timedwait(&s->cond, &s->lock, &ts) != ETIMEDOUT)
			;
		if (s->stop)
			break;
		memset(&ti, 0, sizeof(ti));
		if (getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
			continue;
		/* DCTCP and D2TCP report alpha (of 1024) through TCP_CC_INFO */
		memset(&ci, 0, sizeof(ci));
		clen = sizeof(ci);
		alpha = -1;
		if (!getsockopt(s->fd, IPPROTO_TCP, TCP_CC_INFO, &ci, &clen) &&
		    clen >= sizeof(ci.dctcp) && ci.dctcp.dctcp_enabled)
			alpha = ci.dctcp.dctcp_alpha;
		t = now_us();
		emit("{\"type\":\"sample\",\"id\":\"%s\",\"t_us\":%" PRIu64
		     ",\"bytes_acked\":%llu,\"cwnd\":%u,\"srtt_us\":%u"
		     ",\"alpha\":%d}", s->id, t - s->start_us,
		     (unsigned long long)ti.tcpi_bytes_acked, ti.tcpi_snd_cwnd,
		     ti.tcpi_rtt, alpha);
		if (t >= next + s->period_us)	/* fell behind: skip, not burst */
			next += (t - next) / s->period_us * s->period_us;
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static int sampler_start(struct sampler *s)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	s->stop = false;
	return pthread_create(&s->th, NULL, sampler_thread, s);
}

static void sampler_stop(struct sampler *s)
{
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->th, NULL);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
}

/*
 * One upload flow on its own connection.  The flow starts once connected,
 * right before TCP_DEADLINE is set, and ends when the server's "done"
 * arrives.  Returns 0, or -1 after printing an error.
 */
static int upload_flow(const struct target *t, u64 bytes, u64 deadline_us,
		       const char *cc, const char *id, u64 sample_ms, u16 sport)
{
	unsigned char h[DLT_HDR_LEN], done[DLT_DONE_LEN];
	struct req r = { .op = DLT_OP_UPLOAD, .req_bytes = bytes };
	struct sampler smp;
	char eid[256], ecc[64], ccname[32];
	u64 t_conn, start, end, got;
	ssize_t n;
	int fd;

	json_str(eid, sizeof(eid), id);
	t_conn = now_us();
	fd = tcp_connect(t, cc, sport, id);
	if (fd < 0) {
		warnmsg("%s: connect to %s: %s", id, t->peer, strerror(errno));
		return -1;
	}
	start = now_us();
	/* the deadline covers everything sent from now: header + payload */
	if (deadline_us && set_deadline(fd, deadline_us, bytes + DLT_HDR_LEN) < 0) {
		if (errno == ENOPROTOOPT)
			die_no_deadline();
		warnmsg("%s: setting TCP_DEADLINE {%" PRIu64 " us, %" PRIu64
			" bytes}: %s", id, deadline_us, bytes + DLT_HDR_LEN,
			strerror(errno));
		close(fd);
		return -1;
	}
	if (sample_ms) {
		smp.fd = fd;
		smp.start_us = start;
		smp.period_us = sample_ms * 1000;
		smp.id = eid;
		if (sampler_start(&smp))
			die(1, "cannot start the sampler thread");
	}
	encode_req(h, &r);
	if (send_msg(fd, h, sizeof(h), bytes) < 0) {
		warnmsg("%s: send to %s: %s", id, t->peer, strerror(errno));
		goto fail;
	}
	n = read_full(fd, done, sizeof(done));
	if (n != sizeof(done)) {
		warnmsg("%s: waiting for %s: %s", id, t->peer, n < 0 ?
			strerror(errno) : "connection closed by the server");
		goto fail;
	}
	end = now_us();
	if (sample_ms)
		sampler_stop(&smp);
	got = get_be64(done);
	if (got != bytes) {
		warnmsg("%s: server counted %" PRIu64 " bytes, sent %" PRIu64,
			id, got, bytes);
		close(fd);
		return -1;
	}
	get_cc(fd, ccname, sizeof(ccname));
	sport = local_port(fd);
	close(fd);
	emit("{\"type\":\"flow\",\"id\":\"%s\",\"op\":\"upload\",\"peer\":\"%s\","
	     "\"bytes\":%" PRIu64 ",\"start_us\":%" PRIu64 ",\"end_us\":%" PRIu64
	     ",\"fct_us\":%" PRIu64 ",\"deadline_us\":%" PRIu64 ",\"met\":%s,"
	     "\"cc\":\"%s\",\"connect_us\":%" PRIu64 ",\"sport\":%u}",
	     eid, t->peer, bytes, start, end, end - start, deadline_us,
	     met_str(deadline_us, end - start), json_str(ecc, sizeof(ecc), ccname),
	     start - t_conn, sport);
	return 0;
fail:
	if (sample_ms)
		sampler_stop(&smp);
	close(fd);
	return -1;
}

static int run_flow(const struct cfg *cfg)
{
	struct target t;

	memset(&t, 0, sizeof(t));
	if (parse_hostport(&t, cfg->host, cfg->port) < 0)
		die(EXIT_USAGE, "bad host \"%s\"", cfg->host);
	resolve(&t, cfg->family, false);
	if (cfg->deadline_us)
		probe_deadline(cfg->family);
	if (cfg->start_at_us)
		sleep_until_us(cfg->start_at_us);
	return upload_flow(&t, cfg->bytes, cfg->deadline_us, cfg->cc,
			   cfg->id ? cfg->id : "flow", cfg->sample_ms, 0) ? 1 : 0;
}

/* ---------------------------------------------------------------- bulk */

struct bulk_job {
	const struct target *t;
	const struct cfg *cfg;
	char id[128];
	pthread_t th;
	int ret;
};

static void *bulk_thread(void *arg)
{
	struct bulk_job *j = arg;

	j->ret = upload_flow(j->t, j->cfg->bytes, 0, j->cfg->cc, j->id, 0, 0);
	return NULL;
}

static int run_bulk(const struct cfg *cfg)
{
	struct bulk_job *jobs;
	struct target t;
	u64 i, t0, started = 0;
	int ret = 0, err;

	memset(&t, 0, sizeof(t));
	if (parse_hostport(&t, cfg->host, cfg->port) < 0)
		die(EXIT_USAGE, "bad host \"%s\"", cfg->host);
	resolve(&t, cfg->family, false);
	jobs = calloc(cfg->count, sizeof(*jobs));
	if (!jobs)
		die(1, "out of memory");
	t0 = cfg->start_at_us ? cfg->start_at_us : now_us();
	for (i = 0; i < cfg->count; i++) {
		struct bulk_job *j = &jobs[i];

		sleep_until_us(t0 + i * cfg->every_us);
		j->t = &t;
		j->cfg = cfg;
		snprintf(j->id, sizeof(j->id), "%s%" PRIu64,
			 cfg->id_prefix ? cfg->id_prefix : "bulk", i);
		err = pthread_create(&j->th, NULL, bulk_thread, j);
		if (err) {
			warnmsg("pthread_create: %s", strerror(err));
			ret = 1;
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++) {
		pthread_join(jobs[i].th, NULL);
		if (jobs[i].ret)
			ret = 1;
	}
	free(jobs);
	return ret;
}

/* --------------------------------------------------------------- sched */

#define SCHED_FIELDS	4
#define SCHED_WANT	"want ID HOST[:PORT] BYTES AT_US|+"

struct sched_job {
	struct target t;
	const struct cfg *cfg;
	u64 bytes, at_us;
	bool after;		/* starts when the flow before it ends */
	bool joined;
	char id[64];
	size_t lineno;		/* of the schedule, from 1 */
	u16 sport;		/* --sport-base + its index among the flows */
	pthread_t th;
	int ret;
};

/* A schedule's number: decimal digits only (no sign, blank or unit) within
 * u64.  NULL on success, else what is wrong with it.  strtoull() alone
 * would take "-1" as 2^64 - 1, " 1" and "1x" as 1.
 */
static const char *sched_u64(const char *s, u64 *out)
{
	unsigned long long v;
	char *end;

	if (*s == '-')
		return "is negative";
	if (*s < '0' || *s > '9')
		return "is not a decimal number";
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return "is not a decimal number";
	if (errno == ERANGE)
		return "overflows (above 2^64 - 1)";
	if (errno)
		return strerror(errno);
	*out = v;
	return NULL;
}

static void __attribute__((format(printf, 3, 4), noreturn))
sched_bad(size_t lineno, const char *line, const char *fmt, ...)
{
	char why[256];
	size_t len = strcspn(line, "\r\n");
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	die(EXIT_USAGE, "bad schedule line %zu \"%.*s%s\": %s (" SCHED_WANT ")",
	    lineno, (int)(len < 160 ? len : 160), line, len > 160 ? "..." : "",
	    why);
}

static void *sched_thread(void *arg)
{
	struct sched_job *j = arg;

	j->ret = upload_flow(&j->t, j->bytes, 0, j->cfg->cc, j->id, 0,
			      j->sport);
	return NULL;
}

/* A flow schedule on stdin, one flow per line, "ID HOST[:PORT] BYTES AT_US"
 * with AT_US relative to --start-at-us (or to the start), in order of
 * AT_US; "+" for AT_US starts a flow when the one before it has ended
 * (a shuffle's sequence), and holds the lines after it until then.  Each
 * flow is an UPLOAD on its own connection, in its own thread from its
 * start on, so that a slow flow never delays the next one.
 *
 * The whole schedule is read and checked before the first flow starts: a
 * malformed line (a field missing or too many, BYTES or AT_US negative, 0
 * bytes, not decimal or above 2^64 - 1, a start beyond the clock, an ID of
 * more than 63 characters, an empty host, a port not in 1-65535) exits 2
 * naming the line by its number.
 */
static int run_sched(const struct cfg *cfg)
{
	struct sched_job *jobs = NULL;
	size_t n = 0, i, started = 0, lineno = 0;
	char line[512], raw[512], *f[SCHED_FIELDS + 1], *tok, *save;
	const char *why;
	u64 bytes, at_us, port, t0;
	int ret = 0, err, nf;
	bool after;

	while (fgets(line, sizeof(line), stdin)) {
		struct sched_job *j;

		lineno++;
		if (!strchr(line, '\n') && !feof(stdin))
			sched_bad(lineno, line, "longer than %zu characters",
				  sizeof(line) - 2);
		memcpy(raw, line, strlen(line) + 1);
		nf = 0;
		for (tok = strtok_r(line, " \t\r\n", &save);
		     tok && nf <= SCHED_FIELDS;
		     tok = strtok_r(NULL, " \t\r\n", &save))
			f[nf++] = tok;
		if (!nf)
			continue;
		if (nf > SCHED_FIELDS)
			sched_bad(lineno, raw, "junk \"%.*s\" after the %d fields",
				  (int)strcspn(raw + (f[SCHED_FIELDS] - line), "\r\n"),
				  raw + (f[SCHED_FIELDS] - line), SCHED_FIELDS);
		if (nf < SCHED_FIELDS)
			sched_bad(lineno, raw, "%d field%s, not %d", nf,
				  nf == 1 ? "" : "s", SCHED_FIELDS);
		if (strlen(f[0]) >= sizeof(jobs->id))
			sched_bad(lineno, raw, "ID longer than %zu characters",
				  sizeof(jobs->id) - 1);
		why = sched_u64(f[2], &bytes);
		if (why)
			sched_bad(lineno, raw, "BYTES \"%s\" %s", f[2], why);
		if (!bytes)
			sched_bad(lineno, raw, "BYTES is 0 (a flow sends at least 1)");
		after = !strcmp(f[3], "+");
		at_us = 0;
		if (!after) {
			why = sched_u64(f[3], &at_us);
			if (why)
				sched_bad(lineno, raw, "AT_US \"%s\" %s", f[3], why);
		}
		jobs = realloc(jobs, (n + 1) * sizeof(*jobs));
		if (!jobs)
			die(1, "out of memory");
		j = &jobs[n++];
		memset(j, 0, sizeof(*j));
		if (parse_hostport(&j->t, f[1], cfg->port) < 0)
			sched_bad(lineno, raw, "bad HOST[:PORT] \"%s\"", f[1]);
		if (sched_u64(j->t.port, &port) || !port || port > 65535)
			sched_bad(lineno, raw, "bad port \"%s\": not in 1-65535",
				  j->t.port);
		resolve(&j->t, cfg->family, false);
		j->cfg = cfg;
		j->bytes = bytes;
		j->after = after && n > 1;
		j->at_us = at_us;
		j->lineno = lineno;
		if (cfg->sport_base) {
			if (cfg->sport_base + n - 1 > 65535)
				sched_bad(lineno, raw, "flow %zu of the schedule "
					  "needs source port %" PRIu64 " (--sport-base"
					  " %" PRIu64 "), above 65535", n,
					  cfg->sport_base + n - 1, cfg->sport_base);
			j->sport = cfg->sport_base + n - 1;
		}
		snprintf(j->id, sizeof(j->id), "%s", f[0]);
	}
	if (ferror(stdin))
		die(1, "reading the schedule: %s", strerror(errno));
	t0 = cfg->start_at_us ? cfg->start_at_us : now_us();
	for (i = 0; i < n; i++)
		if (jobs[i].at_us > UINT64_MAX - t0)
			die(EXIT_USAGE, "bad schedule line %zu: AT_US %" PRIu64
			    " overflows the clock (start at %" PRIu64 " us)",
			    jobs[i].lineno, jobs[i].at_us, t0);
	for (i = 0; i < n; i++) {
		if (jobs[i].after) {
			pthread_join(jobs[i - 1].th, NULL);
			jobs[i - 1].joined = true;
		} else {
			sleep_until_us(t0 + jobs[i].at_us);
		}
		err = pthread_create(&jobs[i].th, NULL, sched_thread, &jobs[i]);
		if (err) {
			warnmsg("pthread_create: %s", strerror(err));
			ret = 1;
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++) {
		if (!jobs[i].joined)
			pthread_join(jobs[i].th, NULL);
		if (jobs[i].ret)
			ret = 1;
	}
	free(jobs);
	return ret;
}

/* --------------------------------------------------------------- fanin */

struct leaf {
	struct target t;
	int fd;
	unsigned char hdr[DLT_HDR_LEN];
	size_t hoff;
	u64 req_left, resp_left;
	u64 resp_bytes;
	u32 deadline_us;
	u64 start, end;
	bool done;
};

static void fanin_send(struct leaf *l)
{
	while (l->hoff < DLT_HDR_LEN || l->req_left) {
		if (send_some(l->fd, l->hdr, DLT_HDR_LEN, &l->hoff, &l->req_left) < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			die(1, "send to %s: %s", l->t.peer, strerror(errno));
		}
	}
}

static void fanin_recv(struct leaf *l, char *buf)
{
	while (l->resp_left) {
		size_t want = l->resp_left < BUF_SIZE ? l->resp_left : BUF_SIZE;
		ssize_t n = read(l->fd, buf, want);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			die(1, "receive from %s: %s", l->t.peer, strerror(errno));
		}
		if (!n)
			die(1, "%s closed the connection with %" PRIu64 " response "
			    "bytes missing (see the server's log)", l->t.peer,
			    l->resp_left);
		l->resp_left -= n;
	}
	l->end = now_us();
	l->done = true;
}

static int run_fanin(const struct cfg *cfg)
{
	static char rxbuf[BUF_SIZE];
	struct leaf *lv = NULL;
	struct pollfd *pfd;
	char *list, *tok, *save, eid[48];
	size_t n = 0, i;
	u64 q, seed = cfg->seed, prev = 0;

	list = strdup(cfg->leaves);
	if (!list)
		die(1, "out of memory");
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		lv = realloc(lv, (n + 1) * sizeof(*lv));
		if (!lv)
			die(1, "out of memory");
		memset(&lv[n], 0, sizeof(lv[n]));
		if (parse_hostport(&lv[n].t, tok, cfg->port) < 0)
			die(EXIT_USAGE, "bad leaf \"%s\" (want HOST:PORT or [V6]:PORT)", tok);
		resolve(&lv[n].t, cfg->family, false);
		n++;
	}
	free(list);
	if (!n)
		die(EXIT_USAGE, "--leaves lists no leaf");
	if (cfg->sport_base && cfg->sport_base + n - 1 > 65535)
		die(EXIT_USAGE, "leaf %zu needs source port %" PRIu64
		    " (--sport-base %" PRIu64 "), above 65535", n,
		    cfg->sport_base + n - 1, cfg->sport_base);
	if (cfg->deadline_max)
		probe_deadline(cfg->family);
	pfd = calloc(n, sizeof(*pfd));
	if (!pfd)
		die(1, "out of memory");

	for (i = 0; i < n; i++) {
		lv[i].fd = tcp_connect(&lv[i].t, cfg->cc, cfg->sport_base ?
				       cfg->sport_base + i : 0, lv[i].t.peer);
		if (lv[i].fd < 0)
			die(1, "connect to %s: %s", lv[i].t.peer, strerror(errno));
		if (fcntl(lv[i].fd, F_SETFL, fcntl(lv[i].fd, F_GETFL) | O_NONBLOCK) < 0)
			die(1, "fcntl: %s", strerror(errno));
	}
	if (cfg->start_at_us)
		sleep_until_us(cfg->start_at_us);

	for (q = 0; q < cfg->queries; q++) {
		u64 qstart, fct = 0;
		size_t pending = n, missed = 0;

		if (q && cfg->interval_us)
			sleep_until_us(prev + cfg->interval_us);
		qstart = prev = now_us();
		for (i = 0; i < n; i++) {
			struct leaf *l = &lv[i];
			struct req r = { .op = DLT_OP_RR, .req_bytes = cfg->req_bytes };

			r.resp_bytes = rng_range(&seed, cfg->resp_min, cfg->resp_max);
			r.resp_deadline_us = rng_range(&seed, cfg->deadline_us,
						       cfg->deadline_max);
			encode_req(l->hdr, &r);
			l->hoff = 0;
			l->req_left = r.req_bytes;
			l->resp_left = l->resp_bytes = r.resp_bytes;
			l->deadline_us = r.resp_deadline_us;
			l->done = false;
			l->start = now_us();
			fanin_send(l);
		}
		while (pending) {
			size_t k = 0;

			for (i = 0; i < n; i++) {
				if (lv[i].done)
					continue;
				pfd[k].fd = lv[i].fd;
				pfd[k].events = POLLIN;
				if (lv[i].hoff < DLT_HDR_LEN || lv[i].req_left)
					pfd[k].events |= POLLOUT;
				pfd[k++].revents = 0;
			}
			if (poll(pfd, k, -1) < 0) {
				if (errno == EINTR)
					continue;
				die(1, "poll: %s", strerror(errno));
			}
			for (i = 0, k = 0; i < n; i++) {
				struct leaf *l = &lv[i];
				short ev;

				if (l->done)
					continue;
				ev = pfd[k++].revents;
				if (ev & (POLLOUT | POLLERR | POLLHUP))
					fanin_send(l);
				if (ev & (POLLIN | POLLERR | POLLHUP))
					fanin_recv(l, rxbuf);
				if (l->done)
					pending--;
			}
		}
		for (i = 0; i < n; i++) {
			struct leaf *l = &lv[i];
			u64 f = l->end - l->start;

			if (l->deadline_us && f > l->deadline_us)
				missed++;
			if (l->end - qstart > fct)
				fct = l->end - qstart;
			snprintf(eid, sizeof(eid), "q%" PRIu64 "-l%zu", q, i);
			emit("{\"type\":\"flow\",\"op\":\"rr\",\"query\":%" PRIu64
			     ",\"id\":\"%s\",\"peer\":\"%s\",\"bytes\":%" PRIu64
			     ",\"start_us\":%" PRIu64 ",\"end_us\":%" PRIu64
			     ",\"fct_us\":%" PRIu64 ",\"deadline_us\":%u,\"met\":%s}",
			     q, eid, l->t.peer, l->resp_bytes, l->start, l->end, f,
			     l->deadline_us, met_str(l->deadline_us, f));
		}
		emit("{\"type\":\"query\",\"query\":%" PRIu64 ",\"leaves\":%zu,"
		     "\"missed\":%zu,\"fct_us\":%" PRIu64 ",\"start_us\":%" PRIu64 "}",
		     q, n, missed, fct, qstart);
	}
	for (i = 0; i < n; i++)
		close(lv[i].fd);
	free(lv);
	free(pfd);
	return 0;
}

/* ----------------------------------------------------------- arguments */

static void usage(FILE *f)
{
	fprintf(f,
"usage:\n"
"  %1$s server [-p PORT] [-B ADDR] [-6] [--cc NAME] [--sample-ms MS]\n"
"  %1$s flow   -c HOST [-p PORT] [-6] --bytes N [--deadline-us D] [--cc NAME]\n"
"                 [--id ID] [--sample-ms MS] [--start-at-us T]\n"
"  %1$s fanin  --leaves H1:P1,H2:P2,... [-p PORT] [-6] --queries Q\n"
"                 --resp-bytes MIN[-MAX] [--deadline-us MIN[-MAX]] [--req-bytes R]\n"
"                 [--interval-us I] [--cc NAME] [--seed S] [--start-at-us T]\n"
"                 [--sport-base B] (leaf k, from 0, connected from port B + k)\n"
"  %1$s bulk   -c HOST [-p PORT] [-6] --bytes N --every-us P --count C\n"
"                 [--cc NAME] [--id-prefix X] [--start-at-us T]\n"
"  %1$s sched  [-p PORT] [-6] [--cc NAME] [--start-at-us T] [--sport-base B]\n"
"                 < SCHEDULE (lines \"ID HOST[:PORT] BYTES AT_US|+\", AT_US\n"
"                 from T; flow k of the schedule, from 0, from port B + k)\n"
"  %1$s now    (print CLOCK_MONOTONIC in microseconds)\n"
"\n"
"Default port %2$s.  Sizes take K/M/G/T (powers of 1000) or Ki/Mi/Gi/Ti\n"
"(powers of 1024).  IPv6 leaves are written [ADDR]:PORT.  Times are\n"
"CLOCK_MONOTONIC microseconds.  Output: one JSON object per line on stdout.\n"
"Exit status: 0 ok, 1 error, 2 bad arguments, 3 kernel lacks TCP_DEADLINE\n"
"or the congestion control cannot be set.\n", prog, DEFAULT_PORT);
}

static void __attribute__((noreturn, format(printf, 1, 2))) bad_args(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	usage(stderr);
	exit(EXIT_USAGE);
}

/* Decimal with optional K/M/G/T (1000^n) or Ki/Mi/Gi/Ti (1024^n). */
static int parse_size(const char *s, u64 *out)
{
	static const char units[] = "KMGT";
	unsigned long long v;
	const char *u;
	char *end;
	u64 mul = 1;
	int i;

	if (!*s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end) {
		u = strchr(units, end[0] >= 'a' ? end[0] - 'a' + 'A' : end[0]);
		if (!u || !*u)
			return -1;
		if (end[1] == 'i' && !end[2]) {
			for (i = 0; i <= u - units; i++)
				mul *= 1024;
		} else if (!end[1]) {
			for (i = 0; i <= u - units; i++)
				mul *= 1000;
		} else {
			return -1;
		}
	}
	if (v && mul > UINT64_MAX / v)
		return -1;
	*out = v * mul;
	return 0;
}

static void parse_range(const char *opt, const char *s, u64 *lo, u64 *hi)
{
	char buf[64];
	char *dash;

	snprintf(buf, sizeof(buf), "%s", s);
	dash = strchr(buf + (*buf ? 1 : 0), '-');
	if (dash)
		*dash = '\0';
	if (parse_size(buf, lo) < 0 || (dash && parse_size(dash + 1, hi) < 0))
		bad_args("bad value for --%s: \"%s\"", opt, s);
	if (!dash)
		*hi = *lo;
	if (*hi < *lo)
		bad_args("--%s: MAX is below MIN in \"%s\"", opt, s);
}

static u64 parse_num(const char *opt, const char *s)
{
	u64 v;

	if (parse_size(s, &v) < 0)
		bad_args("bad value for %s: \"%s\"", opt, s);
	return v;
}

enum {
	O_BYTES = 256, O_DEADLINE, O_CC, O_ID, O_SAMPLE, O_START_AT, O_LEAVES,
	O_QUERIES, O_RESP, O_REQ, O_INTERVAL, O_SEED, O_EVERY, O_COUNT,
	O_ID_PREFIX, O_SPORT_BASE,
};

#define OPT_COMMON { "port", required_argument, NULL, 'p' }, \
		   { "ipv6", no_argument, NULL, '6' }, \
		   { "cc", required_argument, NULL, O_CC }, \
		   { "help", no_argument, NULL, 'h' }

static const struct option server_opts[] = {
	OPT_COMMON,
	{ "bind", required_argument, NULL, 'B' },
	{ "sample-ms", required_argument, NULL, O_SAMPLE },
	{ NULL, 0, NULL, 0 }
};

static const struct option flow_opts[] = {
	OPT_COMMON,
	{ "client", required_argument, NULL, 'c' },
	{ "bytes", required_argument, NULL, O_BYTES },
	{ "deadline-us", required_argument, NULL, O_DEADLINE },
	{ "id", required_argument, NULL, O_ID },
	{ "sample-ms", required_argument, NULL, O_SAMPLE },
	{ "start-at-us", required_argument, NULL, O_START_AT },
	{ NULL, 0, NULL, 0 }
};

static const struct option fanin_opts[] = {
	OPT_COMMON,
	{ "leaves", required_argument, NULL, O_LEAVES },
	{ "queries", required_argument, NULL, O_QUERIES },
	{ "resp-bytes", required_argument, NULL, O_RESP },
	{ "req-bytes", required_argument, NULL, O_REQ },
	{ "deadline-us", required_argument, NULL, O_DEADLINE },
	{ "interval-us", required_argument, NULL, O_INTERVAL },
	{ "seed", required_argument, NULL, O_SEED },
	{ "start-at-us", required_argument, NULL, O_START_AT },
	{ "sport-base", required_argument, NULL, O_SPORT_BASE },
	{ NULL, 0, NULL, 0 }
};

static const struct option bulk_opts[] = {
	OPT_COMMON,
	{ "client", required_argument, NULL, 'c' },
	{ "bytes", required_argument, NULL, O_BYTES },
	{ "every-us", required_argument, NULL, O_EVERY },
	{ "count", required_argument, NULL, O_COUNT },
	{ "id-prefix", required_argument, NULL, O_ID_PREFIX },
	{ "start-at-us", required_argument, NULL, O_START_AT },
	{ NULL, 0, NULL, 0 }
};

static const struct option sched_opts[] = {
	OPT_COMMON,
	{ "start-at-us", required_argument, NULL, O_START_AT },
	{ "sport-base", required_argument, NULL, O_SPORT_BASE },
	{ NULL, 0, NULL, 0 }
};

static void parse_args(int argc, char **argv, const struct option *opts,
		       const char *shortopts, struct cfg *cfg)
{
	u64 v;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			v = parse_num("-p", optarg);
			if (!v || v > 65535)
				bad_args("bad port \"%s\"", optarg);
			cfg->port = optarg;
			break;
		case '6':
			cfg->family = AF_INET6;
			break;
		case 'B':
			cfg->bind = optarg;
			break;
		case 'c':
			cfg->host = optarg;
			break;
		case O_CC:
			if (!*optarg || strlen(optarg) >= 16)
				bad_args("bad congestion control name \"%s\"", optarg);
			cfg->cc = optarg;
			break;
		case O_BYTES:
			cfg->bytes = parse_num("--bytes", optarg);
			cfg->have_bytes = true;
			break;
		case O_DEADLINE:
			parse_range("deadline-us", optarg, &cfg->deadline_us,
				    &cfg->deadline_max);
			break;
		case O_ID:
			cfg->id = optarg;
			break;
		case O_SAMPLE:
			cfg->sample_ms = parse_num("--sample-ms", optarg);
			if (!cfg->sample_ms)
				bad_args("--sample-ms must be at least 1");
			break;
		case O_START_AT:
			cfg->start_at_us = parse_num("--start-at-us", optarg);
			break;
		case O_SPORT_BASE:
			cfg->sport_base = parse_num("--sport-base", optarg);
			if (!cfg->sport_base || cfg->sport_base > 65535)
				bad_args("--sport-base must be in 1-65535");
			break;
		case O_LEAVES:
			cfg->leaves = optarg;
			break;
		case O_QUERIES:
			cfg->queries = parse_num("--queries", optarg);
			break;
		case O_RESP:
			parse_range("resp-bytes", optarg, &cfg->resp_min, &cfg->resp_max);
			cfg->have_resp = true;
			break;
		case O_REQ:
			cfg->req_bytes = parse_num("--req-bytes", optarg);
			break;
		case O_INTERVAL:
			cfg->interval_us = parse_num("--interval-us", optarg);
			break;
		case O_SEED:
			cfg->seed = parse_num("--seed", optarg);
			cfg->have_seed = true;
			break;
		case O_EVERY:
			cfg->every_us = parse_num("--every-us", optarg);
			cfg->have_every = true;
			break;
		case O_COUNT:
			cfg->count = parse_num("--count", optarg);
			break;
		case O_ID_PREFIX:
			cfg->id_prefix = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case ':':
			bad_args("option %s needs a value", argv[optind - 1]);
		default:
			bad_args("unknown option %s for \"%s\"", argv[optind - 1], argv[0]);
		}
	}
	if (optind < argc)
		bad_args("unexpected argument \"%s\"", argv[optind]);
}

int main(int argc, char **argv)
{
	struct cfg cfg = {
		.port = DEFAULT_PORT,
		.family = AF_INET,
		.req_bytes = 64,
	};
	const char *mode;

	signal(SIGPIPE, SIG_IGN);
	if (argc < 2)
		bad_args("missing sub-command");
	mode = argv[1];
	argc--;
	argv++;

	if (!strcmp(mode, "server")) {
		parse_args(argc, argv, server_opts, ":p:B:6h", &cfg);
		return run_server(&cfg);
	}
	if (!strcmp(mode, "flow")) {
		parse_args(argc, argv, flow_opts, ":c:p:6h", &cfg);
		if (!cfg.host || !cfg.have_bytes)
			bad_args("flow needs -c HOST and --bytes N");
		if (cfg.deadline_us != cfg.deadline_max)
			bad_args("flow takes a single --deadline-us value");
		return run_flow(&cfg);
	}
	if (!strcmp(mode, "fanin")) {
		parse_args(argc, argv, fanin_opts, ":p:6h", &cfg);
		if (!cfg.leaves || !cfg.queries || !cfg.have_resp)
			bad_args("fanin needs --leaves, --queries and --resp-bytes");
		if (!cfg.resp_min)
			bad_args("--resp-bytes must be at least 1");
		if (cfg.deadline_max > UINT32_MAX)
			bad_args("--deadline-us must fit in 32 bits");
		if (!cfg.deadline_us && cfg.deadline_max)
			bad_args("--deadline-us MIN must be at least 1 (or give 0 for none)");
		if (!cfg.have_seed)
			cfg.seed = now_us() ^ ((u64)getpid() << 32);
		return run_fanin(&cfg);
	}
	if (!strcmp(mode, "bulk")) {
		parse_args(argc, argv, bulk_opts, ":c:p:6h", &cfg);
		if (!cfg.host || !cfg.have_bytes || !cfg.have_every || !cfg.count)
			bad_args("bulk needs -c HOST, --bytes N, --every-us P and --count C");
		return run_bulk(&cfg);
	}
	if (!strcmp(mode, "sched")) {
		parse_args(argc, argv, sched_opts, ":p:6h", &cfg);
		return run_sched(&cfg);
	}
	if (!strcmp(mode, "now")) {
		if (argc > 1)
			bad_args("\"now\" takes no arguments");
		printf("%" PRIu64 "\n", now_us());
		return 0;
	}
	if (!strcmp(mode, "-h") || !strcmp(mode, "--help") || !strcmp(mode, "help")) {
		usage(stdout);
		return 0;
	}
	bad_args("unknown sub-command \"%s\"", mode);
}
