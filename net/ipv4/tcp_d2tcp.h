/* SPDX-License-Identifier: GPL-2.0-only */
/* D2TCP fixed-point helpers, shared with the KUnit suite. */
#ifndef _TCP_D2TCP_H
#define _TCP_D2TCP_H

#include <linux/types.h>

/* alpha: fraction of CE-marked packets, scale 1024 (as DCTCP) */
#define D2TCP_ALPHA_SHIFT	10U
#define D2TCP_MAX_ALPHA		(1U << D2TCP_ALPHA_SHIFT)
/* d: deadline imminence factor, Q10 (1024 = 1.0) */
#define D2TCP_D_SHIFT		10U
#define D2TCP_D_ONE		(1U << D2TCP_D_SHIFT)
/* p = alpha^d: penalty, Q16 (65536 = 1.0) */
#define D2TCP_P_SHIFT		16U
#define D2TCP_P_ONE		(1U << D2TCP_P_SHIFT)
/* Largest cap n on d, d in [1/n, n] */
#define D2TCP_MAX_D_CAP		8U

#if IS_ENABLED(CONFIG_KUNIT)
u32 d2tcp_gamma(u32 alpha, u32 d);
u32 d2tcp_imminence(u64 bytes_left, u64 window_bytes, u32 srtt_us,
		    s64 time_left_us, u32 d_cap);
u32 d2tcp_reduced_cwnd(u32 cwnd, u32 p);
#endif

#endif /* _TCP_D2TCP_H */
