// SPDX-License-Identifier: GPL-2.0-only
/* Deadline-Aware Datacenter TCP (D2TCP) congestion control.
 *
 * Balajee Vamanan, Jahangir Hasan, T. N. Vijaykumar:
 * "Deadline-Aware Datacenter TCP (D2TCP)", SIGCOMM 2012.
 *
 * D2TCP is DCTCP with the window reduction bent by the flow's deadline.
 * Everything but the reduction is DCTCP's own code, from tcp_dctcp.c
 * (Daniel Borkmann, Florian Westphal, Glenn Judd; after the prototype of
 * Abdul Kabbani, Masato Yasuda and Mohammad Alizadeh), which exports it
 * for this module: alpha, the EWMA (g = 1/2^tcp_dctcp.dctcp_shift_g) of
 * the fraction of CE-marked packets per window of data, the CE state
 * machine of the receiver, the reaction to loss, PLB and the Reno
 * fallback without ECN.  On ECN feedback (once per window of data,
 * through TCP's CWR state) the window becomes W * (1 - p / 2) with the
 * gamma correction
 *
 *	p = alpha^d,	d = Tc / D, capped to [1/n, n],
 *
 * D the time left to the deadline and Tc = B / (3/4 W) round trips the
 * time needed for the B bytes not yet acknowledged.  As D goes to 0, d
 * goes to the cap n; a flow past its deadline keeps d = n (the paper's
 * "tighter deadlines get rounded down"; late_dctcp=1 gives such a flow
 * d = 1 instead).  Without a deadline (TCP_DEADLINE not set), and once
 * the declared bytes are all acknowledged, d = 1 and D2TCP computes
 * exactly DCTCP's windows.
 *
 * The deadline of TCP_DEADLINE lives in the private area after DCTCP's
 * state (struct d2tcp); core TCP sets and reads it through the deadline()
 * callback of the congestion ops.
 *
 * Fixed point: alpha in 1/1024 (as DCTCP), d in 1/1024, p in 1/65536.
 * alpha^d = 2^(-d * (10 - log2(alpha))): log2 with 20 fractional bits by
 * repeated squaring, 2^-y from a table of 2^(-2^-k).  The result is
 * within 1/65536 of the exact value for d in [1/8, 8] and is monotone in
 * alpha and d (tcp_d2tcp_kunit.c checks both).
 */

#include <linux/bits.h>
#include <linux/module.h>
#include <linux/math64.h>
#include <linux/log2.h>
#include <linux/inet_diag.h>
#include <net/tcp.h>
#include <kunit/visibility.h>
#include "tcp_dctcp.h"
#include "tcp_d2tcp.h"

#define D2TCP_LOG_FRAC	20U	/* fractional bits of log2() */
#define D2TCP_ONE_Q31	BIT_ULL(31)

/* The flow deadline set with TCP_DEADLINE */
struct d2tcp_deadline {
	u64	deadline_us;	/* absolute, tcp_clock_us() base; 0: none */
	u64	acked;		/* tp->bytes_acked when the deadline was set */
	u64	bytes;		/* bytes of the flow from acked */
};

/* The private area: DCTCP's state first, as DCTCP's helpers take it */
struct d2tcp {
	struct dctcp		dctcp;
	struct d2tcp_deadline	dl;
};

static unsigned int d2tcp_d_cap __read_mostly = 2;

static int d2tcp_d_cap_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, D2TCP_MAX_D_CAP);
}

static const struct kernel_param_ops d2tcp_d_cap_ops = {
	.set = d2tcp_d_cap_set,
	.get = param_get_uint,
};

module_param_cb(d_cap, &d2tcp_d_cap_ops, &d2tcp_d_cap, 0644);
MODULE_PARM_DESC(d_cap, "n: d is capped to [1/n, n], 1..8 (default 2; 1 makes D2TCP DCTCP)");

static bool d2tcp_late_dctcp __read_mostly;
module_param_named(late_dctcp, d2tcp_late_dctcp, bool, 0644);
MODULE_PARM_DESC(late_dctcp, "past its deadline a flow takes d = 1 (DCTCP) instead of the paper's d = n (default N)");

/* 2^(-2^(k - 20)) in Q31, k = 0..19 */
static const u32 d2tcp_exp2_tab[D2TCP_LOG_FRAC] = {
	2147482228, 2147480809, 2147477970, 2147472292,
	2147460935, 2147438222, 2147392798, 2147301951,
	2147120270, 2146756953, 2146030505, 2144578345,
	2141676973, 2135885998, 2124350982, 2101467502,
	2056437387, 1969251188, 1805811301, 1518500250,
};

/* log2(x) for x in [1, 2^20], D2TCP_LOG_FRAC fractional bits */
static u32 d2tcp_log2(u32 x)
{
	u32 ip = ilog2(x), frac = 0;
	u64 m = ((u64)x << 31) >> ip;	/* mantissa in [1, 2), Q31 */
	int b;

	for (b = D2TCP_LOG_FRAC - 1; b >= 0; b--) {
		m = (m * m) >> 31;
		if (m >= 2 * D2TCP_ONE_Q31) {
			m >>= 1;
			frac |= 1U << b;
		}
	}
	return (ip << D2TCP_LOG_FRAC) | frac;
}

/* p = alpha^d: alpha in 1/1024, d in Q10, p in Q16 */
VISIBLE_IF_KUNIT u32 d2tcp_gamma(u32 alpha, u32 d)
{
	u32 yi, yf, b;
	u64 y, r;

	if (!alpha)
		return 0;
	if (alpha >= D2TCP_MAX_ALPHA)
		return D2TCP_P_ONE;
	if (d == D2TCP_D_ONE)	/* exact, so that D2TCP is DCTCP at d = 1 */
		return alpha << (D2TCP_P_SHIFT - D2TCP_ALPHA_SHIFT);

	/* y = -log2(alpha^d) = d * (10 - log2(alpha)) */
	y = (D2TCP_ALPHA_SHIFT << D2TCP_LOG_FRAC) - d2tcp_log2(alpha);
	y = (y * d) >> D2TCP_D_SHIFT;
	yi = y >> D2TCP_LOG_FRAC;
	yf = y & ((1U << D2TCP_LOG_FRAC) - 1);
	if (yi >= 31)
		return 0;

	r = D2TCP_ONE_Q31;
	for (b = 0; b < D2TCP_LOG_FRAC; b++)
		if (yf & (1U << b))
			r = (r * d2tcp_exp2_tab[b]) >> 31;
	r >>= yi;
	/* Q31 -> Q16, rounded */
	return (r + (1U << (31 - D2TCP_P_SHIFT - 1))) >> (31 - D2TCP_P_SHIFT);
}
EXPORT_SYMBOL_IF_KUNIT(d2tcp_gamma);

/* d = Tc / D in Q10, capped to [1/d_cap, d_cap], where
 * Tc = B / (3/4 W) round trips of srtt_us and D = time_left_us.  As D goes
 * to 0 (and past it) d goes to the cap.  With no bytes left to deliver
 * the deadline has nothing more to say: d = 1.
 */
VISIBLE_IF_KUNIT u32 d2tcp_imminence(u64 bytes_left, u64 window_bytes,
				     u32 srtt_us, s64 time_left_us, u32 d_cap)
{
	u32 d_min, d_max;
	u64 tc, lim, d, dl;

	d_cap = clamp(d_cap, 1U, D2TCP_MAX_D_CAP);
	d_min = D2TCP_D_ONE / d_cap;
	d_max = D2TCP_D_ONE * d_cap;
	if (!bytes_left)
		return D2TCP_D_ONE;
	if (time_left_us <= 0)
		return d_max;
	if (!srtt_us)		/* no round trip measured: no Tc either */
		return D2TCP_D_ONE;

	bytes_left = min_t(u64, bytes_left, TCP_DEADLINE_MAX_BYTES);
	window_bytes = clamp_t(u64, window_bytes, 1, TCP_DEADLINE_MAX_BYTES);
	dl = min_t(u64, time_left_us, TCP_DEADLINE_MAX_US);

	/* Tc in round trips, Q10: B * 4 / (3 W); B < 2^49, so B << 12 fits */
	tc = div64_u64(bytes_left << (D2TCP_D_SHIFT + 2), 3 * window_bytes);

	/* d = Tc * srtt / D; saturate before the product can overflow:
	 * d_max * D < 2^13 * 2^32.
	 */
	lim = div64_u64((u64)d_max * dl, srtt_us);
	if (tc >= lim)
		return d_max;
	d = div64_u64(tc * srtt_us, dl);
	return clamp_t(u64, d, d_min, d_max);
}
EXPORT_SYMBOL_IF_KUNIT(d2tcp_imminence);

/* W * (1 - p / 2), at least 2 segments; p in Q16 */
VISIBLE_IF_KUNIT u32 d2tcp_reduced_cwnd(u32 cwnd, u32 p)
{
	u32 cut = ((u64)cwnd * p) >> (D2TCP_P_SHIFT + 1);

	return max(cwnd - cut, 2U);
}
EXPORT_SYMBOL_IF_KUNIT(d2tcp_reduced_cwnd);

/* Time left to the deadline of @sk (negative once it has passed) and
 * bytes of the flow not yet acknowledged, at @now_us (tcp_clock_us()
 * base, e.g. tp->tcp_mstamp).  False if no deadline is set.  Also called
 * without the socket lock (get_info, for inet_diag) while setsockopt()
 * and ACKs write these fields: every read is marked, and d2tcp_deadline()
 * marks its writes.
 */
static bool d2tcp_deadline_left(const struct sock *sk, u64 now_us,
				s64 *time_us, u64 *bytes)
{
	const struct d2tcp_deadline *dl = &((struct d2tcp *)inet_csk_ca(sk))->dl;
	u64 deadline, acked, total;

	deadline = READ_ONCE(dl->deadline_us);
	if (!deadline)
		return false;
	*time_us = (s64)(deadline - now_us);
	acked = READ_ONCE(tcp_sk(sk)->bytes_acked) - READ_ONCE(dl->acked);
	total = READ_ONCE(dl->bytes);
	*bytes = acked < total ? total - acked : 0;
	return true;
}

/* TCP_DEADLINE (tcp.c checked the request), under the socket lock */
static int d2tcp_deadline(struct sock *sk, struct tcp_deadline *d, bool set)
{
	struct d2tcp_deadline *dl = &((struct d2tcp *)inet_csk_ca(sk))->dl;
	s64 left;

	if (set) {
		if (!d->tcpd_deadline_us) {
			WRITE_ONCE(dl->deadline_us, 0);
			WRITE_ONCE(dl->acked, 0);
			WRITE_ONCE(dl->bytes, 0);
			return 0;
		}
		WRITE_ONCE(dl->acked, tcp_sk(sk)->bytes_acked);
		WRITE_ONCE(dl->bytes, d->tcpd_bytes);
		WRITE_ONCE(dl->deadline_us,
			   tcp_clock_us() + d->tcpd_deadline_us);
		return 0;
	}
	memset(d, 0, sizeof(*d));
	if (d2tcp_deadline_left(sk, tcp_clock_us(), &left, &d->tcpd_bytes)) {
		d->tcpd_flags = TCP_DEADLINE_F_SET;
		if (left > 0)
			d->tcpd_deadline_us = left;
		else
			d->tcpd_flags |= TCP_DEADLINE_F_EXPIRED;
	}
	return 0;
}

/* The deadline imminence factor of @sk at @now_us; get_info calls it
 * without the socket lock, so the socket's fields are read marked
 */
static u32 d2tcp_sk_imminence(const struct sock *sk, u64 now_us)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	s64 time_left;
	u64 bytes;

	if (!d2tcp_deadline_left(sk, now_us, &time_left, &bytes))
		return D2TCP_D_ONE;
	if (time_left <= 0 && bytes && READ_ONCE(d2tcp_late_dctcp))
		return D2TCP_D_ONE;
	return d2tcp_imminence(bytes, (u64)READ_ONCE(tp->snd_cwnd) *
				      READ_ONCE(tp->mss_cache),
			       READ_ONCE(tp->srtt_us) >> 3, time_left,
			       READ_ONCE(d2tcp_d_cap));
}

static struct tcp_congestion_ops d2tcp_reno;

static void d2tcp_init(struct sock *sk)
{
	if (dctcp_ca_init(sk))
		return;

	/* No ECN support? Fall back to Reno, as DCTCP does, and clear the
	 * ECT set on the socket during the handshake.  The fallback is
	 * D2TCP's own, so that the module reference stays this module's.
	 */
	WRITE_ONCE(inet_csk(sk)->icsk_ca_ops, &d2tcp_reno);
	INET_ECN_dontxmit(sk);
}

static u32 d2tcp_ssthresh(struct sock *sk)
{
	struct dctcp *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	u32 d = d2tcp_sk_imminence(sk, tp->tcp_mstamp);

	ca->loss_cwnd = tcp_snd_cwnd(tp);
	return d2tcp_reduced_cwnd(tcp_snd_cwnd(tp),
				  d2tcp_gamma(ca->dctcp_alpha, d));
}

/* DCTCP's block (ss -ti: alpha), then d, the time to the deadline and the
 * bytes left, in the DCTCP attribute (a longer payload: tools that know
 * only DCTCP's struct read its first part)
 */
static size_t d2tcp_get_info(struct sock *sk, u32 ext, int *attr,
			     union tcp_cc_info *info)
{
	struct tcp_d2tcp_info *d2 = &info->d2tcp;
	u64 now = tcp_clock_us();
	s64 left;

	if (!(ext & (1 << (INET_DIAG_DCTCPINFO - 1)) ||
	      ext & (1 << (INET_DIAG_VEGASINFO - 1))))
		return 0;

	memset(d2, 0, sizeof(*d2));
	if (READ_ONCE(inet_csk(sk)->icsk_ca_ops) != &d2tcp_reno)
		dctcp_fill_info(sk, &d2->dctcp);
	d2->d2tcp_d = d2tcp_sk_imminence(sk, now);
	if (d2tcp_deadline_left(sk, now, &left, &d2->d2tcp_bytes_left)) {
		d2->d2tcp_flags = TCP_DEADLINE_F_SET;
		if (left > 0)
			d2->d2tcp_time_left_us = left;
		else
			d2->d2tcp_flags |= TCP_DEADLINE_F_EXPIRED;
	}
	*attr = INET_DIAG_DCTCPINFO;
	return sizeof(*d2);
}

static struct tcp_congestion_ops d2tcp __read_mostly = {
	.init		= d2tcp_init,
	.in_ack_event	= dctcp_update_alpha,
	.cwnd_event	= dctcp_cwnd_event,
	.ssthresh	= d2tcp_ssthresh,
	.cong_avoid	= tcp_reno_cong_avoid,
	.undo_cwnd	= dctcp_cwnd_undo,
	.set_state	= dctcp_state,
	.get_info	= d2tcp_get_info,
	.deadline	= d2tcp_deadline,
	.flags		= TCP_CONG_NEEDS_ECN,
	.owner		= THIS_MODULE,
	.name		= "d2tcp",
};

/* Keeps the deadline callback: the deadline stays readable and settable */
static struct tcp_congestion_ops d2tcp_reno __read_mostly = {
	.ssthresh	= tcp_reno_ssthresh,
	.cong_avoid	= tcp_reno_cong_avoid,
	.undo_cwnd	= tcp_reno_undo_cwnd,
	.get_info	= d2tcp_get_info,
	.deadline	= d2tcp_deadline,
	.owner		= THIS_MODULE,
	.name		= "d2tcp-reno",
};

static int __init d2tcp_register(void)
{
	BUILD_BUG_ON(sizeof(struct d2tcp) > ICSK_CA_PRIV_SIZE);
	BUILD_BUG_ON(offsetof(struct d2tcp, dctcp) != 0);
	return tcp_register_congestion_control(&d2tcp);
}

static void __exit d2tcp_unregister(void)
{
	tcp_unregister_congestion_control(&d2tcp);
}

module_init(d2tcp_register);
module_exit(d2tcp_unregister);

MODULE_IMPORT_NS(TCP_DCTCP);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Deadline-Aware Datacenter TCP (D2TCP), over DCTCP");
MODULE_ALIAS("tcp-d2tcp");
