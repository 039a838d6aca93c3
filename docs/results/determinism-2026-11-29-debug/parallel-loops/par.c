// SPDX-License-Identifier: GPL-2.0
/*
 * One or two threads (argv[1] given: two, pinned to CPUs 0 and 1) count
 * clock_gettime() loop iterations for 200 ms of guest time.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static uint64_t cnt[2];

static uint64_t now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

static void *spin(void *arg)
{
	long i = (long)arg;
	uint64_t end, c = 0;
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(i, &s);
	sched_setaffinity(0, sizeof(s), &s);
	end = now() + 200000000ull;
	while (now() < end)
		c++;
	cnt[i] = c;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? 2 : 1;
	pthread_t t[2];
	long i;

	(void)argv;
	for (i = 0; i < n; i++)
		pthread_create(&t[i], NULL, spin, (void *)i);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("threads %d: %llu %llu\n", n, (unsigned long long)cnt[0],
	       (unsigned long long)cnt[1]);
	return 0;
}
