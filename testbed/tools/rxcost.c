// SPDX-License-Identifier: GPL-2.0
/*
 * rxcost: the cost of the receive path per packet, in guest time.
 *
 *   rxcost IFNAME COUNT
 *
 * Sends COUNT copies of a 54-byte Ethernet frame holding an IPv4 TCP ACK
 * (10.99.1.1:40000 -> 10.99.1.2:5001, a destination MAC no host owns)
 * out of IFNAME through a packet socket, and prints the guest's
 * CLOCK_MONOTONIC nanoseconds per frame.  Out of one end of a veth pair,
 * each frame is received on the other end in the sender's own context
 * (veth's xmit, then the backlog's softirq when the send re-enables
 * bottom halves): sender and receiver costs add up, and what changes
 * between runs that differ only in the receiving device's (or another
 * device's) configuration is the receive path's cost.  In virtual time
 * (QEMU icount, shift 0) a nanosecond is an instruction.  The frame is
 * for another host (PACKET_OTHERHOST), so IP drops it on arrival.
 */
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static unsigned short csum(const void *p, int len)
{
	const unsigned short *w = p;
	unsigned long s = 0;

	for (; len > 1; len -= 2)
		s += *w++;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return ~s;
}

int main(int argc, char **argv)
{
	unsigned char f[54] = {
		0x02, 0x00, 0x00, 0x00, 0x99, 0x99,	/* nobody's */
		0x02, 0x00, 0x00, 0x00, 0x99, 0x01,
		0x08, 0x00,
		0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0,
		10, 99, 1, 1, 10, 99, 1, 2,
		0x9c, 0x40, 0x13, 0x89, 0, 0, 0, 1, 0, 0, 0, 1,
		0x50, 0x10, 0x01, 0x00, 0, 0, 0, 0,
	};
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	struct timespec a, b;
	long i, n;
	int s;

	if (argc != 3) {
		fprintf(stderr, "usage: rxcost IFNAME COUNT\n");
		return 2;
	}
	n = atol(argv[2]);
	sll.sll_ifindex = if_nametoindex(argv[1]);
	sll.sll_protocol = htons(0x0800);
	s = socket(AF_PACKET, SOCK_RAW, 0);
	if (s < 0 || !sll.sll_ifindex) {
		perror("rxcost");
		return 1;
	}
	*(unsigned short *)(f + 24) = csum(f + 14, 20);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++)
		if (sendto(s, f, sizeof(f), 0, (struct sockaddr *)&sll,
			   sizeof(sll)) != sizeof(f)) {
			perror("sendto");
			return 1;
		}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%ld frames %.1f ns/frame\n", n,
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
