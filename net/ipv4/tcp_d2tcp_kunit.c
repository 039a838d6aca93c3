// SPDX-License-Identifier: GPL-2.0-only
/* KUnit tests of D2TCP: the fixed-point gamma correction p = alpha^d, the
 * deadline imminence factor d, and the equivalence with DCTCP when a flow
 * has no deadline (both modules driven through the same ACK/CE trace on
 * real kernel sockets).
 */

#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/net.h>
#include <linux/inet_diag.h>
#include <linux/sockptr.h>
#include <net/sock.h>
#include <net/tcp.h>
#include "tcp_d2tcp.h"

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);

struct d2tcp_gamma_ref {
	u16 alpha;
	u16 d;
	u32 p;
};

/* round(65536 * (alpha / 1024)^(d / 1024)), computed in double precision */
static const struct d2tcp_gamma_ref d2tcp_gamma_refs[] = {
	{ 1, 128, 27554 }, { 1, 256, 11585 }, { 1, 341, 6517 },
	{ 1, 512, 2048 }, { 1, 640, 861 }, { 1, 768, 362 },
	{ 1, 896, 152 }, { 1, 1000, 75 }, { 1, 1024, 64 },
	{ 1, 1100, 38 }, { 1, 1280, 11 }, { 1, 1536, 2 },
	{ 1, 1792, 0 }, { 1, 2048, 0 }, { 1, 3072, 0 },
	{ 1, 4096, 0 }, { 1, 8192, 0 },
	{ 2, 128, 30048 }, { 2, 256, 13777 }, { 2, 341, 8209 },
	{ 2, 512, 2896 }, { 2, 640, 1328 }, { 2, 768, 609 },
	{ 2, 896, 279 }, { 2, 1000, 148 }, { 2, 1024, 128 },
	{ 2, 1100, 81 }, { 2, 1280, 27 }, { 2, 1536, 6 },
	{ 2, 1792, 1 }, { 2, 2048, 0 }, { 2, 3072, 0 },
	{ 2, 4096, 0 }, { 2, 8192, 0 },
	{ 3, 128, 31611 }, { 3, 256, 15247 }, { 3, 341, 9395 },
	{ 3, 512, 3547 }, { 3, 640, 1711 }, { 3, 768, 825 },
	{ 3, 896, 398 }, { 3, 1000, 220 }, { 3, 1024, 192 },
	{ 3, 1100, 125 }, { 3, 1280, 45 }, { 3, 1536, 10 },
	{ 3, 1792, 2 }, { 3, 2048, 1 }, { 3, 3072, 0 },
	{ 3, 4096, 0 }, { 3, 8192, 0 },
	{ 5, 128, 33695 }, { 5, 256, 17324 }, { 5, 341, 11138 },
	{ 5, 512, 4579 }, { 5, 640, 2355 }, { 5, 768, 1211 },
	{ 5, 896, 622 }, { 5, 1000, 363 }, { 5, 1024, 320 },
	{ 5, 1100, 216 }, { 5, 1280, 85 }, { 5, 1536, 22 },
	{ 5, 1792, 6 }, { 5, 2048, 2 }, { 5, 3072, 0 },
	{ 5, 4096, 0 }, { 5, 8192, 0 },
	{ 8, 128, 35734 }, { 8, 256, 19484 }, { 8, 341, 13025 },
	{ 8, 512, 5793 }, { 8, 640, 3158 }, { 8, 768, 1722 },
	{ 8, 896, 939 }, { 8, 1000, 574 }, { 8, 1024, 512 },
	{ 8, 1100, 357 }, { 8, 1280, 152 }, { 8, 1536, 45 },
	{ 8, 1792, 13 }, { 8, 2048, 4 }, { 8, 3072, 0 },
	{ 8, 4096, 0 }, { 8, 8192, 0 },
	{ 16, 128, 38968 }, { 16, 256, 23170 }, { 16, 341, 16406 },
	{ 16, 512, 8192 }, { 16, 640, 4871 }, { 16, 768, 2896 },
	{ 16, 896, 1722 }, { 16, 1000, 1129 }, { 16, 1024, 1024 },
	{ 16, 1100, 752 }, { 16, 1280, 362 }, { 16, 1536, 128 },
	{ 16, 1792, 45 }, { 16, 2048, 16 }, { 16, 3072, 0 },
	{ 16, 4096, 0 }, { 16, 8192, 0 },
	{ 32, 128, 42495 }, { 32, 256, 27554 }, { 32, 341, 20666 },
	{ 32, 512, 11585 }, { 32, 640, 7512 }, { 32, 768, 4871 },
	{ 32, 896, 3158 }, { 32, 1000, 2221 }, { 32, 1024, 2048 },
	{ 32, 1100, 1584 }, { 32, 1280, 861 }, { 32, 1536, 362 },
	{ 32, 1792, 152 }, { 32, 2048, 64 }, { 32, 3072, 2 },
	{ 32, 4096, 0 }, { 32, 8192, 0 },
	{ 64, 128, 46341 }, { 64, 256, 32768 }, { 64, 341, 26031 },
	{ 64, 512, 16384 }, { 64, 640, 11585 }, { 64, 768, 8192 },
	{ 64, 896, 5793 }, { 64, 1000, 4371 }, { 64, 1024, 4096 },
	{ 64, 1100, 3334 }, { 64, 1280, 2048 }, { 64, 1536, 1024 },
	{ 64, 1792, 512 }, { 64, 2048, 256 }, { 64, 3072, 16 },
	{ 64, 4096, 1 }, { 64, 8192, 0 },
	{ 100, 128, 49000 }, { 100, 256, 36636 }, { 100, 341, 30202 },
	{ 100, 512, 20480 }, { 100, 640, 15312 }, { 100, 768, 11449 },
	{ 100, 896, 8560 }, { 100, 1000, 6759 }, { 100, 1024, 6400 },
	{ 100, 1100, 5385 }, { 100, 1280, 3578 }, { 100, 1536, 2000 },
	{ 100, 1792, 1118 }, { 100, 2048, 625 }, { 100, 3072, 61 },
	{ 100, 4096, 6 }, { 100, 8192, 0 },
	{ 128, 128, 50535 }, { 128, 256, 38968 }, { 128, 341, 32790 },
	{ 128, 512, 23170 }, { 128, 640, 17867 }, { 128, 768, 13777 },
	{ 128, 896, 10624 }, { 128, 1000, 8601 }, { 128, 1024, 8192 },
	{ 128, 1100, 7020 }, { 128, 1280, 4871 }, { 128, 1536, 2896 },
	{ 128, 1792, 1722 }, { 128, 2048, 1024 }, { 128, 3072, 128 },
	{ 128, 4096, 16 }, { 128, 8192, 0 },
	{ 200, 128, 53434 }, { 200, 256, 43567 }, { 200, 341, 38044 },
	{ 200, 512, 28963 }, { 200, 640, 23615 }, { 200, 768, 19254 },
	{ 200, 896, 15699 }, { 200, 1000, 13299 }, { 200, 1024, 12800 },
	{ 200, 1100, 11339 }, { 200, 1280, 8509 }, { 200, 1536, 5657 },
	{ 200, 1792, 3761 }, { 200, 2048, 2500 }, { 200, 3072, 488 },
	{ 200, 4096, 95 }, { 200, 8192, 0 },
	{ 256, 128, 55109 }, { 256, 256, 46341 }, { 256, 341, 41304 },
	{ 256, 512, 32768 }, { 256, 640, 27554 }, { 256, 768, 23170 },
	{ 256, 896, 19484 }, { 256, 1000, 16925 }, { 256, 1024, 16384 },
	{ 256, 1100, 14782 }, { 256, 1280, 11585 }, { 256, 1536, 8192 },
	{ 256, 1792, 5793 }, { 256, 2048, 4096 }, { 256, 3072, 1024 },
	{ 256, 4096, 256 }, { 256, 8192, 1 },
	{ 300, 128, 56212 }, { 300, 256, 48215 }, { 300, 341, 43544 },
	{ 300, 512, 35472 }, { 300, 640, 30426 }, { 300, 768, 26097 },
	{ 300, 896, 22385 }, { 300, 1000, 19760 }, { 300, 1024, 19200 },
	{ 300, 1100, 17528 }, { 300, 1280, 14126 }, { 300, 1536, 10392 },
	{ 300, 1792, 7646 }, { 300, 2048, 5625 }, { 300, 3072, 1648 },
	{ 300, 4096, 483 }, { 300, 8192, 4 },
	{ 384, 128, 57974 }, { 384, 256, 51285 }, { 384, 341, 47275 },
	{ 384, 512, 40132 }, { 384, 640, 35502 }, { 384, 768, 31405 },
	{ 384, 896, 27782 }, { 384, 1000, 25148 }, { 384, 1024, 24576 },
	{ 384, 1100, 22851 }, { 384, 1280, 19232 }, { 384, 1536, 15050 },
	{ 384, 1792, 11777 }, { 384, 2048, 9216 }, { 384, 3072, 3456 },
	{ 384, 4096, 1296 }, { 384, 8192, 26 },
	{ 450, 128, 59135 }, { 450, 256, 53359 }, { 450, 341, 49839 },
	{ 450, 512, 43445 }, { 450, 640, 39201 }, { 450, 768, 35372 },
	{ 450, 896, 31917 }, { 450, 1000, 29360 }, { 450, 1024, 28800 },
	{ 450, 1100, 27095 }, { 450, 1280, 23449 }, { 450, 1536, 19092 },
	{ 450, 1792, 15545 }, { 450, 2048, 12656 }, { 450, 3072, 5562 },
	{ 450, 4096, 2444 }, { 450, 8192, 91 },
	{ 512, 128, 60097 }, { 512, 256, 55109 }, { 512, 341, 52028 },
	{ 512, 512, 46341 }, { 512, 640, 42495 }, { 512, 768, 38968 },
	{ 512, 896, 35734 }, { 512, 1000, 33305 }, { 512, 1024, 32768 },
	{ 512, 1100, 31125 }, { 512, 1280, 27554 }, { 512, 1536, 23170 },
	{ 512, 1792, 19484 }, { 512, 2048, 16384 }, { 512, 3072, 8192 },
	{ 512, 4096, 4096 }, { 512, 8192, 256 },
	{ 600, 128, 61300 }, { 600, 256, 57338 }, { 600, 341, 54849 },
	{ 600, 512, 50166 }, { 600, 640, 46923 }, { 600, 768, 43890 },
	{ 600, 896, 41053 }, { 600, 1000, 38884 }, { 600, 1024, 38400 },
	{ 600, 1100, 36906 }, { 600, 1280, 33597 }, { 600, 1536, 29394 },
	{ 600, 1792, 25717 }, { 600, 2048, 22500 }, { 600, 3072, 13184 },
	{ 600, 4096, 7725 }, { 600, 8192, 911 },
	{ 640, 128, 61797 }, { 640, 256, 58271 }, { 640, 341, 56041 },
	{ 640, 512, 51811 }, { 640, 640, 48855 }, { 640, 768, 46067 },
	{ 640, 896, 43439 }, { 640, 1000, 41414 }, { 640, 1024, 40960 },
	{ 640, 1100, 39556 }, { 640, 1280, 36419 }, { 640, 1536, 32382 },
	{ 640, 1792, 28792 }, { 640, 2048, 25600 }, { 640, 3072, 16000 },
	{ 640, 4096, 10000 }, { 640, 8192, 1526 },
	{ 700, 128, 62493 }, { 700, 256, 59591 }, { 700, 341, 57739 },
	{ 700, 512, 54185 }, { 700, 640, 51669 }, { 700, 768, 49270 },
	{ 700, 896, 46982 }, { 700, 1000, 45201 }, { 700, 1024, 44800 },
	{ 700, 1100, 43553 }, { 700, 1280, 40736 }, { 700, 1536, 37041 },
	{ 700, 1792, 33680 }, { 700, 2048, 30625 }, { 700, 3072, 20935 },
	{ 700, 4096, 14311 }, { 700, 8192, 3125 },
	{ 768, 128, 63221 }, { 768, 256, 60988 }, { 768, 341, 59549 },
	{ 768, 512, 56756 }, { 768, 640, 54751 }, { 768, 768, 52817 },
	{ 768, 896, 50952 }, { 768, 1000, 49485 }, { 768, 1024, 49152 },
	{ 768, 1100, 48114 }, { 768, 1280, 45741 }, { 768, 1536, 42567 },
	{ 768, 1792, 39613 }, { 768, 2048, 36864 }, { 768, 3072, 27648 },
	{ 768, 4096, 20736 }, { 768, 8192, 6561 },
	{ 800, 128, 63545 }, { 800, 256, 61614 }, { 800, 341, 60364 },
	{ 800, 512, 57926 }, { 800, 640, 56166 }, { 800, 768, 54459 },
	{ 800, 896, 52805 }, { 800, 1000, 51497 }, { 800, 1024, 51200 },
	{ 800, 1100, 50270 }, { 800, 1280, 48136 }, { 800, 1536, 45255 },
	{ 800, 1792, 42546 }, { 800, 2048, 40000 }, { 800, 3072, 31250 },
	{ 800, 4096, 24414 }, { 800, 8192, 9095 },
	{ 900, 128, 64487 }, { 900, 256, 63455 }, { 900, 341, 62779 },
	{ 900, 512, 61440 }, { 900, 640, 60457 }, { 900, 768, 59489 },
	{ 900, 896, 58537 }, { 900, 1000, 57775 }, { 900, 1024, 57600 },
	{ 900, 1100, 57051 }, { 900, 1280, 55771 }, { 900, 1536, 54000 },
	{ 900, 1792, 52285 }, { 900, 2048, 50625 }, { 900, 3072, 44495 },
	{ 900, 4096, 39107 }, { 900, 8192, 23336 },
	{ 960, 128, 65009 }, { 960, 256, 64487 }, { 960, 341, 64143 },
	{ 960, 512, 63455 }, { 960, 640, 62945 }, { 960, 768, 62439 },
	{ 960, 896, 61938 }, { 960, 1000, 61533 }, { 960, 1024, 61440 },
	{ 960, 1100, 61146 }, { 960, 1280, 60457 }, { 960, 1536, 59489 },
	{ 960, 1792, 58537 }, { 960, 2048, 57600 }, { 960, 3072, 54000 },
	{ 960, 4096, 50625 }, { 960, 8192, 39107 },
	{ 1000, 128, 65342 }, { 1000, 256, 65149 }, { 1000, 341, 65020 },
	{ 1000, 512, 64763 }, { 1000, 640, 64572 }, { 1000, 768, 64381 },
	{ 1000, 896, 64190 }, { 1000, 1000, 64036 }, { 1000, 1024, 64000 },
	{ 1000, 1100, 63887 }, { 1000, 1280, 63622 }, { 1000, 1536, 63246 },
	{ 1000, 1792, 62872 }, { 1000, 2048, 62500 }, { 1000, 3072, 61035 },
	{ 1000, 4096, 59605 }, { 1000, 8192, 54210 },
	{ 1020, 128, 65504 }, { 1020, 256, 65472 }, { 1020, 341, 65451 },
	{ 1020, 512, 65408 }, { 1020, 640, 65376 }, { 1020, 768, 65344 },
	{ 1020, 896, 65312 }, { 1020, 1000, 65286 }, { 1020, 1024, 65280 },
	{ 1020, 1100, 65261 }, { 1020, 1280, 65216 }, { 1020, 1536, 65152 },
	{ 1020, 1792, 65089 }, { 1020, 2048, 65025 }, { 1020, 3072, 64771 },
	{ 1020, 4096, 64518 }, { 1020, 8192, 63516 },
	{ 1023, 128, 65528 }, { 1023, 256, 65520 }, { 1023, 341, 65515 },
	{ 1023, 512, 65504 }, { 1023, 640, 65496 }, { 1023, 768, 65488 },
	{ 1023, 896, 65480 }, { 1023, 1000, 65473 }, { 1023, 1024, 65472 },
	{ 1023, 1100, 65467 }, { 1023, 1280, 65456 }, { 1023, 1536, 65440 },
	{ 1023, 1792, 65424 }, { 1023, 2048, 65408 }, { 1023, 3072, 65344 },
	{ 1023, 4096, 65280 }, { 1023, 8192, 65026 },
};

/* Largest error of p against the exact value, in 1/65536 */
#define D2TCP_GAMMA_MAX_ERR	1

static void d2tcp_gamma_reference(struct kunit *test)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(d2tcp_gamma_refs); i++) {
		const struct d2tcp_gamma_ref *r = &d2tcp_gamma_refs[i];
		u32 p = d2tcp_gamma(r->alpha, r->d);

		KUNIT_EXPECT_LE_MSG(test, abs((s32)p - (s32)r->p),
				    D2TCP_GAMMA_MAX_ERR,
				    "alpha=%u/1024 d=%u/1024: p=%u expected %u",
				    r->alpha, r->d, p, r->p);
	}
}

static void d2tcp_gamma_limits(struct kunit *test)
{
	u32 alpha, d;

	for (d = D2TCP_D_ONE / D2TCP_MAX_D_CAP; d <= D2TCP_D_ONE * D2TCP_MAX_D_CAP; d += 7) {
		KUNIT_EXPECT_EQ(test, d2tcp_gamma(0, d), 0U);
		KUNIT_EXPECT_EQ(test, d2tcp_gamma(D2TCP_MAX_ALPHA, d), D2TCP_P_ONE);
	}
	/* d = 1 is DCTCP exactly: p = alpha */
	for (alpha = 0; alpha <= D2TCP_MAX_ALPHA; alpha++)
		KUNIT_EXPECT_EQ(test, d2tcp_gamma(alpha, D2TCP_D_ONE), alpha << 6);
}

/* p grows with alpha and shrinks with d, over every alpha */
static void d2tcp_gamma_monotone(struct kunit *test)
{
	u32 alpha, d, p, prev;
	int bad = 0;

	for (d = D2TCP_D_ONE / D2TCP_MAX_D_CAP; d <= D2TCP_D_ONE * D2TCP_MAX_D_CAP; d += 13) {
		prev = 0;
		for (alpha = 0; alpha <= D2TCP_MAX_ALPHA; alpha++) {
			p = d2tcp_gamma(alpha, d);
			if (p < prev && bad++ < 5)
				KUNIT_FAIL(test, "not monotone in alpha at alpha=%u d=%u",
					   alpha, d);
			prev = p;
		}
	}
	for (alpha = 1; alpha < D2TCP_MAX_ALPHA; alpha += 3) {
		prev = D2TCP_P_ONE;
		for (d = D2TCP_D_ONE / D2TCP_MAX_D_CAP; d <= D2TCP_D_ONE * D2TCP_MAX_D_CAP;
		     d += 5) {
			p = d2tcp_gamma(alpha, d);
			if (p > prev && bad++ < 5)
				KUNIT_FAIL(test, "not monotone in d at alpha=%u d=%u", alpha, d);
			prev = p;
		}
	}
	KUNIT_EXPECT_EQ(test, bad, 0);
}

static void d2tcp_imminence_factor(struct kunit *test)
{
	/* W = 100 KB, srtt = 100 us: Tc = B / 75 KB round trips */
	const u64 w = 100000;

	/* B = 750 KB: Tc = 10 RTT = 1 ms */
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(750000, w, 100, 1000, 2), D2TCP_D_ONE);
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(750000, w, 100, 1250, 2), 819U);
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(750000, w, 100, 800, 2), 1280U);
	/* clamped to [1/n, n] */
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(750000, w, 100, 100, 2), 2048U);
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(750000, w, 100, 100000, 2), 512U);
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(750000, w, 100, 100, 4), 4096U);
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(750000, w, 100, 100000, 4), 256U);
	/* n = 1: always DCTCP */
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(750000, w, 100, 100, 1), D2TCP_D_ONE);
	/* the declared bytes all acknowledged: DCTCP, not the hardest cut */
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(0, w, 100, 1000, 2), D2TCP_D_ONE);
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(0, w, 100, -1000, 2), D2TCP_D_ONE);
	/* D -> 0 and past the deadline: d goes to the cap n (Sec. 3.2.3) */
	/* 7.5 KB: Tc = 0.1 RTT = 10 us; d = 10 at D = 1 us */
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(7500, w, 100, 1, 2), 2048U);
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(7500, w, 100, 1, 8), 8192U);
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(750000, w, 100, 0, 2), 2048U);
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(750000, w, 100, -1, 2), 2048U);
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(1, w, 100, -5000000, 4), 4096U);
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(750000, w, 0, -1, 2), 2048U);
	/* no RTT sample yet: no Tc, neutral */
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(750000, w, 0, 1000, 2), D2TCP_D_ONE);
	/* extremes do not overflow */
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(U64_MAX, 1, U32_MAX, 1, 8), 8192U);
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(1, U64_MAX, 1, S64_MAX, 8), 128U);
	KUNIT_EXPECT_EQ(test, d2tcp_imminence(U64_MAX, 0, 1, S64_MAX, 8), 8192U);
}

static void d2tcp_reduction(struct kunit *test)
{
	u32 cwnd, alpha;

	/* p = alpha << 6 gives DCTCP's cwnd - cwnd * alpha / 2048 exactly */
	for (cwnd = 2; cwnd < 5000; cwnd += 37)
		for (alpha = 0; alpha <= D2TCP_MAX_ALPHA; alpha += 11)
			KUNIT_EXPECT_EQ(test, d2tcp_reduced_cwnd(cwnd, alpha << 6),
					max(cwnd - ((cwnd * alpha) >> 11U), 2U));
	KUNIT_EXPECT_EQ(test, d2tcp_reduced_cwnd(100, D2TCP_P_ONE), 50U);
	KUNIT_EXPECT_EQ(test, d2tcp_reduced_cwnd(100, 0), 100U);
	KUNIT_EXPECT_EQ(test, d2tcp_reduced_cwnd(3, D2TCP_P_ONE), 2U);
}

/* Sockets driven by hand through a trace of ACK and CE events */

static struct socket *d2tcp_test_socket(struct kunit *test, const char *cc)
{
	struct socket *sock;
	int err;

	err = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP, &sock);
	KUNIT_ASSERT_EQ(test, err, 0);
	err = sock->ops->setsockopt(sock, SOL_TCP, TCP_CONGESTION,
				    KERNEL_SOCKPTR((char *)cc), strlen(cc));
	if (err)
		sock_release(sock);
	KUNIT_ASSERT_EQ_MSG(test, err, 0, "cannot select %s", cc);
	KUNIT_ASSERT_STREQ(test, inet_csk(sock->sk)->icsk_ca_ops->name, cc);
	return sock;
}

static u32 d2tcp_test_alpha(struct sock *sk)
{
	const struct tcp_congestion_ops *ops = inet_csk(sk)->icsk_ca_ops;
	union tcp_cc_info info = {};
	int attr = 0;

	ops->get_info(sk, 1 << (INET_DIAG_DCTCPINFO - 1), &attr, &info);
	return info.dctcp.dctcp_alpha;
}

/* One window of data: @acked packets delivered, @marked of them CE */
static void d2tcp_test_window(struct sock *sk, u32 acked, u32 marked)
{
	const struct tcp_congestion_ops *ops = inet_csk(sk)->icsk_ca_ops;
	struct tcp_sock *tp = tcp_sk(sk);

	tp->snd_nxt += acked * tp->mss_cache;
	tp->snd_una = tp->snd_nxt;
	tp->delivered += acked;
	tp->delivered_ce += marked;
	tp->bytes_acked += (u64)acked * tp->mss_cache;
	ops->in_ack_event(sk, marked ? CA_ACK_ECE : 0);
}

/* A window of data, then a window reduction at @cwnd; returns ssthresh */
static u32 d2tcp_test_step(struct sock *sk, u32 acked, u32 marked, u32 cwnd)
{
	u32 ssthresh;

	lock_sock(sk);
	if (acked)
		d2tcp_test_window(sk, acked, marked);
	tcp_snd_cwnd_set(tcp_sk(sk), cwnd);
	tcp_sk(sk)->tcp_mstamp = tcp_clock_us();
	ssthresh = inet_csk(sk)->icsk_ca_ops->ssthresh(sk);
	release_sock(sk);
	return ssthresh;
}

static void d2tcp_test_prepare(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	tp->mss_cache = 1448;
	tp->srtt_us = 100 << 3;
	tp->tcp_mstamp = tcp_clock_us();
}

static void d2tcp_equals_dctcp_without_deadline(struct kunit *test)
{
	struct socket *a = d2tcp_test_socket(test, "dctcp");
	struct socket *b = d2tcp_test_socket(test, "d2tcp");
	struct sock *ska = a->sk, *skb = b->sk;
	u32 seed = 12345, i, cwnd, acked, marked, ssa, ssb;

	d2tcp_test_prepare(ska);
	d2tcp_test_prepare(skb);
	for (i = 0; i < 4000; i++) {
		seed = seed * 1103515245 + 12345;
		acked = 1 + (seed >> 8) % 64;
		/* bursts of congestion and quiet periods */
		marked = ((seed >> 20) % 4) ? 0 : (seed >> 12) % (acked + 1);
		if ((i / 500) % 2)
			marked = (seed >> 14) % (acked + 1);
		cwnd = 2 + (seed >> 4) % 400;

		ssa = d2tcp_test_step(ska, acked, marked, cwnd);
		ssb = d2tcp_test_step(skb, acked, marked, cwnd);

		KUNIT_ASSERT_EQ_MSG(test, d2tcp_test_alpha(skb), d2tcp_test_alpha(ska),
				    "alpha differs at window %u", i);
		KUNIT_ASSERT_EQ_MSG(test, ssb, ssa, "ssthresh differs at window %u", i);
		KUNIT_ASSERT_EQ(test, inet_csk(skb)->icsk_ca_ops->undo_cwnd(skb),
				inet_csk(ska)->icsk_ca_ops->undo_cwnd(ska));
	}
	/* the trace did move alpha away from both ends */
	KUNIT_EXPECT_GT(test, d2tcp_test_alpha(skb), 0U);
	KUNIT_EXPECT_LT(test, d2tcp_test_alpha(skb), 1024U);
	sock_release(b);
	sock_release(a);
}

static int d2tcp_test_set_deadline(struct socket *sock, u64 us, u64 bytes)
{
	struct tcp_deadline d = { .tcpd_deadline_us = us, .tcpd_bytes = bytes };

	return sock->ops->setsockopt(sock, SOL_TCP, TCP_DEADLINE,
				     KERNEL_SOCKPTR(&d), sizeof(d));
}

/* ssthresh of the D2TCP socket and of the DCTCP one at the same state */
static void d2tcp_test_cut(struct kunit *test, struct sock *ska, struct sock *skb,
			   u32 *ssa, u32 *ssb)
{
	*ssa = d2tcp_test_step(ska, 0, 0, 100);
	*ssb = d2tcp_test_step(skb, 0, 0, 100);
	KUNIT_ASSERT_EQ(test, d2tcp_test_alpha(skb), d2tcp_test_alpha(ska));
}

static void d2tcp_deadline_bends_the_cut(struct kunit *test)
{
	struct socket *a = d2tcp_test_socket(test, "dctcp");
	struct socket *b = d2tcp_test_socket(test, "d2tcp");
	struct sock *ska = a->sk, *skb = b->sk;
	u32 ssa, ssb, i;

	d2tcp_test_prepare(ska);
	d2tcp_test_prepare(skb);
	/* alpha settles near one half */
	for (i = 0; i < 64; i++) {
		d2tcp_test_step(ska, 40, 20, 100);
		d2tcp_test_step(skb, 40, 20, 100);
	}

	/* 10 GB in 1 s at W = 100 x 1448 B and srtt 100 us: Tc = 9.2 s, so
	 * d = 2 (the cap).  A deadline of 1 ms, as this once was, passed
	 * before the cut in a debug kernel under TCG, and d fell back to 1.
	 */
	KUNIT_ASSERT_EQ(test, d2tcp_test_set_deadline(b, 1000000, 10000000000ULL), 0);
	d2tcp_test_cut(test, ska, skb, &ssa, &ssb);
	KUNIT_EXPECT_GT(test, ssb, ssa);
	/* p = alpha^2: the cut is about alpha / 2 of DCTCP's */
	KUNIT_EXPECT_LE(test, abs((int)(100 - ssb) - (int)(100 - ssa) / 2), 1);

	/* 1 KB in one second: d = 1/2, a deeper cut than DCTCP's */
	KUNIT_ASSERT_EQ(test, d2tcp_test_set_deadline(b, 1000000, 1000), 0);
	d2tcp_test_cut(test, ska, skb, &ssa, &ssb);
	KUNIT_EXPECT_LT(test, ssb, ssa);

	/* cleared: DCTCP */
	KUNIT_ASSERT_EQ(test, d2tcp_test_set_deadline(b, 0, 0), 0);
	d2tcp_test_cut(test, ska, skb, &ssa, &ssb);
	KUNIT_EXPECT_EQ(test, ssb, ssa);

	/* nonsense is refused */
	KUNIT_EXPECT_EQ(test, d2tcp_test_set_deadline(b, 1000, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, d2tcp_test_set_deadline(b, 0, 1000), -EINVAL);
	KUNIT_EXPECT_EQ(test, d2tcp_test_set_deadline(b, TCP_DEADLINE_MAX_US + 1, 1), -EINVAL);
	KUNIT_EXPECT_EQ(test, d2tcp_test_set_deadline(b, 1, TCP_DEADLINE_MAX_BYTES + 1), -EINVAL);

	sock_release(b);
	sock_release(a);
}

/* D2TCP's block of the DCTCP attribute */
static struct tcp_d2tcp_info d2tcp_test_info(struct kunit *test, struct sock *sk)
{
	const struct tcp_congestion_ops *ops = inet_csk(sk)->icsk_ca_ops;
	union tcp_cc_info info = {};
	int attr = 0;
	size_t len;

	len = ops->get_info(sk, 1 << (INET_DIAG_VEGASINFO - 1), &attr, &info);
	KUNIT_EXPECT_EQ(test, attr, INET_DIAG_DCTCPINFO);
	KUNIT_EXPECT_EQ(test, len, sizeof(struct tcp_d2tcp_info));
	KUNIT_EXPECT_EQ(test, info.d2tcp.dctcp.dctcp_enabled, 1);
	return info.d2tcp;
}

static void d2tcp_past_deadline_and_done(struct kunit *test)
{
	struct socket *a = d2tcp_test_socket(test, "dctcp");
	struct socket *b = d2tcp_test_socket(test, "d2tcp");
	struct sock *ska = a->sk, *skb = b->sk;
	struct tcp_d2tcp_info info;
	u32 ssa, ssb, i;

	d2tcp_test_prepare(ska);
	d2tcp_test_prepare(skb);
	for (i = 0; i < 64; i++) {
		d2tcp_test_step(ska, 40, 20, 100);
		d2tcp_test_step(skb, 40, 20, 100);
	}

	info = d2tcp_test_info(test, skb);
	KUNIT_EXPECT_EQ(test, info.d2tcp_d, D2TCP_D_ONE);
	KUNIT_EXPECT_EQ(test, info.d2tcp_flags, 0U);

	/* past the deadline: D -> 0 gives the cap, d = 2, the gentlest cut
	 * (p = alpha^2, half of DCTCP's cut or less), not DCTCP's d = 1
	 */
	KUNIT_ASSERT_EQ(test, d2tcp_test_set_deadline(b, 1, 10000000), 0);
	udelay(20);
	d2tcp_test_cut(test, ska, skb, &ssa, &ssb);
	KUNIT_EXPECT_GT(test, ssb, ssa);
	KUNIT_EXPECT_LE(test, abs((int)(100 - ssb) - (int)(100 - ssa) / 2), 1);
	info = d2tcp_test_info(test, skb);
	KUNIT_EXPECT_EQ(test, info.d2tcp_d, 2U * D2TCP_D_ONE);
	KUNIT_EXPECT_EQ(test, info.d2tcp_flags,
			(u32)(TCP_DEADLINE_F_SET | TCP_DEADLINE_F_EXPIRED));
	KUNIT_EXPECT_EQ(test, info.d2tcp_time_left_us, 0ULL);
	KUNIT_EXPECT_EQ(test, info.d2tcp_bytes_left, 10000000ULL);

	/* 20 KB due in one second, 10 KB of it acknowledged: d = 1/2 */
	KUNIT_ASSERT_EQ(test, d2tcp_test_set_deadline(b, 1000000, 20000), 0);
	d2tcp_test_step(ska, 7, 0, 100);
	d2tcp_test_step(skb, 7, 0, 100);
	d2tcp_test_cut(test, ska, skb, &ssa, &ssb);
	KUNIT_EXPECT_LT(test, ssb, ssa);
	info = d2tcp_test_info(test, skb);
	KUNIT_EXPECT_EQ(test, info.d2tcp_d, D2TCP_D_ONE / 2);
	KUNIT_EXPECT_EQ(test, info.d2tcp_bytes_left, 20000ULL - 7 * 1448);
	KUNIT_EXPECT_GT(test, info.d2tcp_time_left_us, 0ULL);
	KUNIT_EXPECT_LE(test, info.d2tcp_time_left_us, 1000000ULL);

	/* all of it acknowledged, the flow goes on sending before the
	 * deadline: DCTCP's cut, not the hardest one (d = 1/2)
	 */
	d2tcp_test_step(ska, 7, 0, 100);
	d2tcp_test_step(skb, 7, 0, 100);
	d2tcp_test_cut(test, ska, skb, &ssa, &ssb);
	KUNIT_EXPECT_EQ(test, ssb, ssa);
	info = d2tcp_test_info(test, skb);
	KUNIT_EXPECT_EQ(test, info.d2tcp_d, D2TCP_D_ONE);
	KUNIT_EXPECT_EQ(test, info.d2tcp_bytes_left, 0ULL);
	KUNIT_EXPECT_EQ(test, info.d2tcp_flags, (u32)TCP_DEADLINE_F_SET);

	sock_release(b);
	sock_release(a);
}

static int d2tcp_test_setsockopt(struct socket *sock, const void *buf,
				 unsigned int len)
{
	return sock->ops->setsockopt(sock, SOL_TCP, TCP_DEADLINE,
				     KERNEL_SOCKPTR((void *)buf), len);
}

static bool d2tcp_test_has_deadline(struct sock *sk)
{
	const struct tcp_congestion_ops *ca = inet_csk(sk)->icsk_ca_ops;
	struct tcp_deadline d = {};

	return ca->deadline && !ca->deadline(sk, &d, false) &&
	       (d.tcpd_flags & TCP_DEADLINE_F_SET);
}

static void d2tcp_deadline_option(struct kunit *test)
{
	struct socket *a = d2tcp_test_socket(test, "dctcp");
	struct socket *b = d2tcp_test_socket(test, "d2tcp");
	struct {
		struct tcp_deadline d;
		u64 tail;
	} big = { .d = { .tcpd_deadline_us = 1000000, .tcpd_bytes = 1000 } };

	/* only a deadline aware congestion control keeps a deadline */
	KUNIT_EXPECT_EQ(test, d2tcp_test_set_deadline(a, 1000000, 1000), -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, d2tcp_test_set_deadline(a, 0, 0), 0);
	KUNIT_EXPECT_FALSE(test, d2tcp_test_has_deadline(a->sk));

	/* longer with a zero tail is accepted, a non-zero tail is not (E2BIG) */
	KUNIT_EXPECT_EQ(test, d2tcp_test_setsockopt(b, &big, sizeof(big)), 0);
	KUNIT_EXPECT_TRUE(test, d2tcp_test_has_deadline(b->sk));
	KUNIT_EXPECT_EQ(test, d2tcp_test_set_deadline(b, 0, 0), 0);
	big.tail = 1ULL << 56;	/* in the last byte */
	KUNIT_EXPECT_EQ(test, d2tcp_test_setsockopt(b, &big, sizeof(big)), -E2BIG);
	KUNIT_EXPECT_EQ(test, d2tcp_test_setsockopt(b, &big, sizeof(big.d) + 1), 0);
	KUNIT_EXPECT_EQ(test, d2tcp_test_setsockopt(b, &big, sizeof(big.d) - 1), -EINVAL);
	KUNIT_EXPECT_TRUE(test, d2tcp_test_has_deadline(b->sk));

	/* changing the congestion control clears it */
	KUNIT_ASSERT_EQ(test, b->ops->setsockopt(b, SOL_TCP, TCP_CONGESTION,
						 KERNEL_SOCKPTR((char *)"dctcp"), 5), 0);
	KUNIT_EXPECT_FALSE(test, d2tcp_test_has_deadline(b->sk));
	KUNIT_ASSERT_EQ(test, b->ops->setsockopt(b, SOL_TCP, TCP_CONGESTION,
						 KERNEL_SOCKPTR((char *)"d2tcp"), 5), 0);
	KUNIT_EXPECT_FALSE(test, d2tcp_test_has_deadline(b->sk));

	sock_release(b);
	sock_release(a);
}

static struct kunit_case d2tcp_test_cases[] = {
	KUNIT_CASE(d2tcp_gamma_reference),
	KUNIT_CASE(d2tcp_gamma_limits),
	KUNIT_CASE(d2tcp_gamma_monotone),
	KUNIT_CASE(d2tcp_imminence_factor),
	KUNIT_CASE(d2tcp_reduction),
	KUNIT_CASE(d2tcp_equals_dctcp_without_deadline),
	KUNIT_CASE(d2tcp_deadline_bends_the_cut),
	KUNIT_CASE(d2tcp_past_deadline_and_done),
	KUNIT_CASE(d2tcp_deadline_option),
	{}
};

static struct kunit_suite d2tcp_test_suite = {
	.name = "tcp_d2tcp",
	.test_cases = d2tcp_test_cases,
};

kunit_test_suite(d2tcp_test_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests for D2TCP");
