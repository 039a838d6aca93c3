// SPDX-License-Identifier: GPL-2.0
/*
 * vtprobe: what of a guest's run repeats from one boot to the next.
 *
 * Run inside a virtual-time guest (QEMU icount) from a tmpfs copy, so
 * that nothing it does waits on the host.  Each phase prints "key value"
 * lines; two boots of the same kernel and command are compared line by
 * line (bench/determinism.py).  The phases go from the most to the least
 * isolated:
 *
 *   start_ns       CLOCK_MONOTONIC when the probe starts: how long boot
 *                  and setup took in guest time
 *   boot_id        /proc/sys/kernel/random/boot_id: the kernel's RNG
 *   getrandom      8 bytes of getrandom(2)
 *   loop_iters     iterations of a clock_gettime() loop in 50 ms: the
 *                  instructions interrupts and other tasks took
 *   lo_bytes       bytes one TCP connection over loopback moves in 100 ms
 *   lo_sport       the source port the kernel picked for it
 *   flowN_bytes    bytes each of two TCP connections moves in 1 s through
 *   flowN_retrans  the bottleneck the caller set up (TCP_INFO's
 *                  total_retrans): timing amplified by drops
 *
 * Usage: vtprobe SERVER_ADDR CLIENT_NETNS_PATH
 *   The server listens on SERVER_ADDR (in the caller's namespace); the
 *   two bottleneck flows connect to it from CLIENT_NETNS_PATH.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PORT_LO		40001
#define PORT_NET	40002
#define NFLOWS		2

static char buf[65536];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static int listen_on(const char *addr, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, fd;

	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		die("inet_pton");
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, 16))
		die("bind/listen");
	return fd;
}

static int connect_to(const char *addr, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd;

	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		die("inet_pton");
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		die("connect");
	return fd;
}

struct sender {
	const char *addr;
	const char *netns;
	int port;
	uint64_t until;
	int fd;
	unsigned int retrans;
	uint64_t sent;
};

/* Send until the deadline, then report what TCP_INFO says. */
static void *send_loop(void *arg)
{
	struct sender *s = arg;
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (s->netns) {
		int ns = open(s->netns, O_RDONLY);

		if (ns < 0 || setns(ns, CLONE_NEWNET))
			die("setns");
		close(ns);
	}
	s->fd = connect_to(s->addr, s->port);
	while (now_ns() < s->until) {
		ssize_t n = send(s->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0) {
			s->sent += n;
		} else {
			struct timespec ts = { 0, 100000 };

			nanosleep(&ts, NULL);
		}
	}
	memset(&ti, 0, sizeof(ti));
	getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &ti, &len);
	s->retrans = ti.tcpi_total_retrans;
	shutdown(s->fd, SHUT_WR);
	return NULL;
}

/* Accept n connections and count what each delivers until its EOF. */
static void receive(int lfd, int n, uint64_t *bytes)
{
	int fds[NFLOWS], open_fds = n, i;

	for (i = 0; i < n; i++) {
		fds[i] = accept(lfd, NULL, NULL);
		if (fds[i] < 0)
			die("accept");
		bytes[i] = 0;
	}
	while (open_fds) {
		for (i = 0; i < n; i++) {
			ssize_t r;

			if (fds[i] < 0)
				continue;
			r = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT);
			if (r > 0) {
				bytes[i] += r;
			} else if (r == 0) {
				close(fds[i]);
				fds[i] = -1;
				open_fds--;
			} else if (errno != EAGAIN) {
				die("recv");
			}
		}
		if (open_fds) {
			struct timespec ts = { 0, 50000 };

			nanosleep(&ts, NULL);
		}
	}
}

int main(int argc, char **argv)
{
	struct sender s[NFLOWS];
	pthread_t th[NFLOWS];
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	uint64_t t, end, iters = 0, bytes[NFLOWS];
	unsigned char rnd[8];
	char id[64] = "";
	FILE *f;
	int lfd, i;

	if (argc != 3) {
		fprintf(stderr, "usage: %s SERVER_ADDR CLIENT_NETNS_PATH\n", argv[0]);
		return 2;
	}
	printf("start_ns %llu\n", (unsigned long long)now_ns());

	f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f && fgets(id, sizeof(id), f))
		id[strcspn(id, "\n")] = 0;
	if (f)
		fclose(f);
	printf("boot_id %s\n", id);
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		die("getrandom");
	printf("getrandom ");
	for (i = 0; i < 8; i++)
		printf("%02x", rnd[i]);
	printf("\n");

	end = now_ns() + 50000000ull;
	while (now_ns() < end)
		iters++;
	printf("loop_iters %llu\n", (unsigned long long)iters);

	/* one connection over loopback, 100 ms */
	lfd = listen_on("127.0.0.1", PORT_LO);
	s[0] = (struct sender){ .addr = "127.0.0.1", .port = PORT_LO,
				.until = now_ns() + 100000000ull };
	if (pthread_create(&th[0], NULL, send_loop, &s[0]))
		die("pthread_create");
	receive(lfd, 1, bytes);
	pthread_join(th[0], NULL);
	if (getsockname(s[0].fd, (struct sockaddr *)&sin, &slen))
		die("getsockname");
	printf("lo_bytes %llu\nlo_sport %u\n", (unsigned long long)bytes[0],
	       ntohs(sin.sin_port));
	close(s[0].fd);
	close(lfd);

	/* two connections through the caller's bottleneck, 1 s */
	lfd = listen_on(argv[1], PORT_NET);
	t = now_ns() + 1000000000ull;
	for (i = 0; i < NFLOWS; i++) {
		s[i] = (struct sender){ .addr = argv[1], .netns = argv[2],
					.port = PORT_NET, .until = t };
		if (pthread_create(&th[i], NULL, send_loop, &s[i]))
			die("pthread_create");
	}
	receive(lfd, NFLOWS, bytes);
	for (i = 0; i < NFLOWS; i++) {
		pthread_join(th[i], NULL);
		printf("flow%d_bytes %llu\nflow%d_retrans %u\n", i,
		       (unsigned long long)bytes[i], i, s[i].retrans);
		close(s[i].fd);
	}
	printf("end_ns %llu\n", (unsigned long long)now_ns());
	return 0;
}
