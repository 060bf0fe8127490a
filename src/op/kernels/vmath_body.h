/*
 * The algorithms of vmath.h, written once over a small vector vocabulary
 * and compiled once per path: vmath.c (scalar), vmath_avx2.c and
 * vmath_avx512.c each define the vocabulary below and then include this
 * file, which defines static functions only and the path's table
 * `vm_impl`.
 *
 * Vocabulary (all static inline in the including file):
 *   VM_W                    lanes per vector
 *   vf, vi, vm              float lanes, int32 lanes, lane mask
 *   vf_set(f), vi_set(i)    broadcast
 *   vf_load(p), vf_store(p, v)   VM_W unaligned floats
 *   vf_add, vf_sub, vf_mul, vf_div   IEEE, rounded to nearest
 *   vf_fma(a, b, c)         a*b + c rounded once
 *   vf_fnma(a, b, c)        c - a*b rounded once
 *   vf_max(a, b), vf_min(a, b)   a > b ? a : b and a < b ? a : b (so a
 *                           NaN in b comes out, as x86 maxps does)
 *   vf_abs, vf_neg, vf_copysign(mag, sign)   sign-bit operations
 *   vf_lt, vf_gt, vf_ge, vf_eq   quiet ordered compares (false on NaN)
 *   vf_sel(m, a, b)         m ? a : b per lane
 *   vf_bits, vi_as_f        reinterpretation
 *   vi_add, vi_sub, vi_min, vi_max, vi_sll23, vi_srl22, and vi_sra1
 *   (arithmetic >> 1, only without VM_HAVE_SCALE)
 *                           int32 lane arithmetic (two's complement wrap)
 *   vf_lookup8(t, i)        t[i] per lane for i in [0, 7]
 *   VM_INLINE, VM_NAME      the forced-inline keyword, the path's name
 *
 * Only operations that IEEE 754 defines exactly appear, so every path
 * gives the same bits (for NaN results: some NaN). Rounding to an integer uses
 * the 1.5*2**23 trick (x + 0x1.8p23 - 0x1.8p23 is x rounded to nearest even for
 * |x| < 2**22), which also leaves the integer in the low bits of the sum.
 *
 * The coefficients come from tools/vmath_fit.py: weighted least-squares
 * fits on Chebyshev nodes against the functions in double, weighted so
 * that the error is relative to the final result, with the coefficients
 * rounded to float one at a time and the others refitted after each
 * rounding. The error of each fit (with float coefficients) is given in
 * units of 2**-24 relative.
 */

/* ---------------------------------------------------------- constants */

#define VM_MAGIC 0x1.8p23f
#define VM_LOG2E 1.44269502f
#define VM_LN2_HI 0x1.62e43p-1f      /* ln 2 rounded to float */
#define VM_LN2_LO -1.90465421e-09f   /* ln 2 - VM_LN2_HI */
#define VM_INV_SQRT_2PI 0.398942280f /* 1/sqrt(2 pi) */
#define VM_SQRT2 1.41421354f

/* e^r = 1 + r + r^2 P(r) on |r| <= 0.3467; 0.0021 x 2^-24. */
static const float vm_exp_p[6] = {0.5f,           0.166666642f,
                                  0.0416664593f,  0.00833389536f,
                                  0.00139354216f, 0.00019570296f};

/* tanh x = x + x^3 P(x^2) on |x| <= 0.5625; 0.0245 x 2^-24. */
static const float vm_tanh_p[5] = {-0.333333164f, 0.133325189f, -0.0538431518f,
                                   0.0210274216f, -0.00620427728f};

/* log(1+f) = f - f^2/2 + f^3 Q(f) on [sqrt(2)/2 - 1, sqrt(2) - 1];
 * 0.0149 x 2^-24. */
static const float vm_log1p_q[9] = {0.333333105f, -0.250000149f, 0.200022399f,
                                    -0.16667752f, 0.142171264f,  -0.124086805f,
                                    0.119084269f, -0.116650186f, 0.0668957382f};

/* gelu x = x/2 + x^2 P(x^2) on |x| <= 0.5 (relative to |gelu| of the
 * negative side); 0.0390 x 2^-24. */
static const float vm_gelu_p[4] = {0.398942262f, -0.0664894804f, 0.00996119156f,
                                   -0.00112288818f};

/*
 * h(a) = erfc(a/sqrt 2)/2 = e^(-a^2/2) H(a) for a >= 0.5, H on eight
 * intervals [0.5,1) [1,1.5) [1.5,2) [2,3) [3,4) [4,6) [6,8) [8,16), each
 * a degree-9 polynomial in u = a - c (c the interval's centre; u is exact
 * by Sterbenz's lemma); 0.8384 x 2^-24 relative, most of it the rounding
 * of H(c) to float. Row k holds the u^k coefficients of the intervals.
 */
static const float vm_gelu_c[8] = {0.75f, 1.25f, 1.75f, 2.5f,
                                   3.5f,  5.0f,  7.0f,  12.0f};
static const float vm_gelu_h[10][8] = {
    {0.30023247f, 0.230760321f, 0.185231671f, 0.14133133f, 0.106345154f,
     0.0769193023f, 0.0558934808f, 0.0330189727f},
    {-0.173767939f, -0.110491879f, -0.0747868717f, -0.045613952f,
     -0.0267342422f, -0.0143457549f, -0.00768790301f, -0.00271462742f},
    {0.0849516094f, 0.0463227965f, 0.0271760281f, 0.0136483032f, 0.00638761418f,
     0.00259529892f, 0.00103910186f, 0.000221717259f},
    {-0.0366829447f, -0.0175294224f, -0.00907453988f, -0.00383114209f,
     -0.00145916606f, -0.000456489041f, -0.000138120027f, -1.79929812e-05f},
    {0.0144550735f, 0.00609927299f, 0.00289851683f, 0.00101647968f,
     0.000320700725f, 7.80900882e-05f, 1.79877497e-05f, 1.45251113e-06f},
    {-0.00526765734f, -0.00198274106f, -0.000883726927f, -0.000257149106f,
     -6.76171476e-05f, -1.30408807e-05f, -2.31011177e-06f, -1.16358748e-07f},
    {-0.000286343886f, 0.000677958538f, -0.00136630784f, 6.83302278e-05f,
     1.09330786e-05f, 2.30575506e-06f, 4.0272397e-07f, 9.00965258e-09f},
    {0.00131497683f, -0.000134658912f, 0.00116230594f, -1.62536271e-05f,
     -3.08651329e-06f, -3.93500983e-07f, -6.1266924e-08f, -7.17605808e-10f},
    {0.0146356439f, -0.000472780986f, 0.0113722831f, -7.36418315e-06f,
     5.73289026e-06f, -1.96065386e-08f, -4.30309477e-08f, 7.45235193e-11f},
    {-0.0136053571f, -0.000237663844f, -0.00873825885f, 2.68695817e-06f,
     2.4585097e-07f, 1.4904888e-08f, 1.0406227e-08f, -5.70866488e-12f}};

/* ------------------------------------------------------------ helpers */

/* sum c[k] t^k by Horner's rule with fused steps. */
static inline vf vm_poly(vf t, const float *c, int n) {
    vf p = vf_set(c[n - 1]);
    for (int k = n - 2; k >= 0; --k)
        p = vf_fma(p, t, vf_set(c[k]));
    return p;
}

/* 2^n as a float for n in [-126, 127]. */
static inline vf vm_pow2i(vi n) {
    return vi_as_f(vi_sll23(vi_add(n, vi_set(127))));
}

/*
 * y * 2^n rounded once, for n in [-252, 254] and y * 2^(n>>1) normal:
 * the first product is exact, the second rounds (to a subnormal, zero or
 * infinity where the result is out of range). vm_ldexp is the same for n
 * in [-126, 127], with one product. A path with an instruction for this
 * (AVX-512's vscalefps rounds y * 2^n once, as these do) defines
 * VM_HAVE_SCALE and vf_scale(y, n) instead.
 */
#if defined(VM_HAVE_SCALE)
static inline vf vm_scale(vf y, vi n) {
    return vf_scale(y, n);
}
static inline vf vm_ldexp(vf y, vi n) {
    return vf_scale(y, n);
}
#else
static inline vf vm_scale(vf y, vi n) {
    vi h = vi_sra1(n);
    return vf_mul(vf_mul(y, vm_pow2i(h)), vm_pow2i(vi_sub(n, h)));
}
static inline vf vm_ldexp(vf y, vi n) {
    return vf_mul(y, vm_pow2i(n));
}
#endif

/*
 * e^x = 2^n (a + b) for x in [-110, 89] (callers clamp): a is e^r
 * rounded to float, b the rest (|b| <= 2^-24 a), with a + b within about
 * 2^-29 of e^r. kf is n as a float.
 *
 * n = round(x log2 e), found with one fused step so that the product is
 * not rounded first; r1 = x - n ln2_hi is exact (the product is exact
 * inside the fused step, and the difference fits: for |n| >= 2 both
 * operands are multiples of 2^-24 and |r1| < 0.5; for |n| = 1 Sterbenz's
 * lemma applies; n = 0 gives x). r = r1 - n ln2_lo rounds, and dr is what
 * that rounding lost (r1 - r is exact). e^(r+dr) = (1 + r + r^2 P(r))
 * (1 + dr) to well below 2^-30, and 1 + r is split into a and the exact
 * remainder (1 - a) + r (Fast2Sum: |1| >= |r|); the sum of the three
 * parts is then renormalised into a + b (Fast2Sum again).
 */
static inline void vm_exp_core(vf x, vf *pa, vf *pb, vi *pn, vf *pkf) {
    vf magic = vf_set(VM_MAGIC);
    vf k = vf_fma(x, vf_set(VM_LOG2E), magic);
    vf kf = vf_sub(k, magic);
    vf r1 = vf_fnma(kf, vf_set(VM_LN2_HI), x);
    vf r = vf_fnma(kf, vf_set(VM_LN2_LO), r1);
    vf dr = vf_fnma(kf, vf_set(VM_LN2_LO), vf_sub(r1, r));
    vf p = vm_poly(r, vm_exp_p, 6);
    vf u = vf_fma(vf_mul(r, r), p, vf_fma(dr, r, dr));
    vf one = vf_set(1.0f);
    vf a = vf_add(one, r);
    vf b = vf_add(vf_add(vf_sub(one, a), r), u);
    vf s = vf_add(a, b);
    *pa = s;
    *pb = vf_add(vf_sub(a, s), b);
    *pn = vi_sub(vf_bits(k), vf_bits(magic));
    *pkf = kf;
}

/* x clamped to [lo, hi], NaN kept (vf_max and vf_min return b on NaN). */
static inline vf vm_clamp(vf x, float lo, float hi) {
    return vf_min(vf_set(hi), vf_max(vf_set(lo), x));
}

/*
 * The pieces of 1/(1+t) for t = e^v, v in [-110, 0]: t = ta + tb (ta =
 * a 2^n, tb = b 2^n, exact for n >= -100; lanes below that only need t as
 * a negligible addend, and 2^-100 keeps both parts normal), q = 1/(1+t) rounded
 * and e with q + e within about 2^-46 of 1/(1+t). d = 1 + ta is split exactly
 * into d + dl (Fast2Sum, ta <= 1), and e = q * rem with rem = 1 - q (d + dl),
 * whose first part fma(-q, d, 1) is the exact remainder of the division.
 */
typedef struct vm_recip {
    vf ta, tb, q, e;
    vf a, b; /* e^v = 2^n (a + b), as vm_exp_core gives it */
    vi n;
} vm_recip;

static inline vm_recip vm_recip_1pexp(vf v) {
    vm_recip s;
    vf kf;
    vm_exp_core(v, &s.a, &s.b, &s.n, &kf);
    vi m = vi_max(s.n, vi_set(-100));
    s.ta = vm_ldexp(s.a, m);
    s.tb = vm_ldexp(s.b, m);
    vf one = vf_set(1.0f);
    vf d = vf_add(one, s.ta);
    vf dl = vf_add(vf_add(vf_sub(one, d), s.ta), s.tb);
    s.q = vf_div(one, d);
    vf rem = vf_fnma(s.q, dl, vf_fnma(s.q, d, one));
    s.e = vf_mul(rem, s.q);
    return s;
}

/* ---------------------------------------------------------- functions */

/*
 * Lanes below -104 (result +0) compute on 0 instead, so that no lane
 * underflows without need: a subnormal or underflowing product costs a
 * microcode assist on many x86 CPUs, and half of all bit patterns lie
 * there.
 */
static inline vf vm_exp(vf x) {
    vf a, b, kf;
    vi n;
    vf zero = vf_set(0.0f);
    vm under = vf_lt(x, vf_set(-104.0f));
    vm_exp_core(vf_min(vf_set(89.0f), vf_sel(under, zero, x)), &a, &b, &n, &kf);
    return vf_sel(under, zero, vm_scale(a, n));
}

/*
 * e^x = 2^n a for x in [-110, 89] (callers clamp), a = e^r rounded once
 * from 1 + (r + r^2 P(r)): within about 0.7 units of its last place, the
 * leading part of vm_exp_core without its compensated remainder, for
 * functions whose own roundings dominate.
 */
static inline vf vm_exp_lead(vf x, vi *pn) {
    vf magic = vf_set(VM_MAGIC);
    vf k = vf_fma(x, vf_set(VM_LOG2E), magic);
    vf kf = vf_sub(k, magic);
    vf r = vf_fnma(kf, vf_set(VM_LN2_LO), vf_fnma(kf, vf_set(VM_LN2_HI), x));
    vf p = vm_poly(r, vm_exp_p, 6);
    *pn = vi_sub(vf_bits(k), vf_bits(magic));
    return vf_add(vf_set(1.0f), vf_fma(vf_mul(r, r), p, r));
}

/*
 * One division: with t = e^-|x| rounded once (to a subnormal or zero far
 * out) and d = 1 + t, x >= 0 gives 1/d and x < 0 gives t/d. t, d and the
 * quotient each round once. Far below zero d is 1 and the result is t,
 * the exponential with its gradual underflow.
 */
static inline vf vm_sigmoid(vf x) {
    vi n;
    vf a = vm_exp_lead(vf_max(vf_set(-110.0f), vf_neg(vf_abs(x))), &n);
    vf t = vm_scale(a, n);
    vf one = vf_set(1.0f);
    return vf_div(vf_sel(vf_ge(x, vf_set(0.0f)), one, t), vf_add(one, t));
}

/*
 * x * sigmoid(x) with one division: x >= 0 gives x/d and x < 0 gives
 * (x t)/d, with t and d as in sigmoid. Below -69 it is x e^x from the
 * exponential's parts, scaled last (no double rounding into the
 * subnormals); x is clamped to -110 first so that -inf gives -0. +inf,
 * the signed zeros and NaN come through x/d.
 */
static inline vf vm_silu(vf x) {
    vf xc = vf_max(vf_set(-110.0f), x);
    vi n;
    vf a = vm_exp_lead(vf_max(vf_set(-110.0f), vf_neg(vf_abs(xc))), &n);
    vf t = vm_scale(a, n);
    vf num = vf_sel(vf_ge(xc, vf_set(0.0f)), xc, vf_mul(xc, t));
    vf y = vf_div(num, vf_add(vf_set(1.0f), t));
    return vf_sel(vf_lt(xc, vf_set(-69.0f)), vm_scale(vf_mul(xc, a), n), y);
}

/*
 * |x| < 0.5625: x + x^3 P(x^2). Otherwise 1 - 2 t/(1+t) with t =
 * e^(-2|x|) <= 0.33, where 2 t/(1+t) <= 0.49 is formed as in sigmoid and
 * the one subtraction from 1 rounds; the sign is copied from x.
 */
static inline vf vm_tanh(vf x) {
    vf ax = vf_abs(x);
    vf x2 = vf_mul(x, x);
    vf small = vf_fma(vf_mul(x, x2), vm_poly(x2, vm_tanh_p, 5), x);
    small = vf_sel(vf_eq(x, vf_set(0.0f)), x, small); /* -0 * P > 0 */
    vf v = vf_max(vf_set(-110.0f), vf_mul(vf_set(-2.0f), ax));
    vm_recip s = vm_recip_1pexp(v);
    vf w = vf_fma(s.ta, s.q, vf_fma(s.ta, s.e, vf_mul(s.tb, s.q)));
    vf big = vf_copysign(vf_fnma(vf_set(2.0f), w, vf_set(1.0f)), x);
    return vf_sel(vf_lt(ax, vf_set(0.5625f)), small, big);
}

/*
 * x > 0: x. Otherwise expm1(x) = 2^n (r + u) + (2^n - 1) with r + u =
 * (a - 1) + b (a - 1 exact): one fused step, exact 2^n - 1 for n >= -24;
 * below that 2^n (a + b) - 1. x is clamped to -87 (expm1 is -1 in float
 * well before), so 2^n stays normal.
 */
static inline vf vm_elu(vf x) {
    vf a, b, kf;
    vi n;
    vm_exp_core(vf_max(vf_set(-87.0f), x), &a, &b, &n, &kf);
    vf one = vf_set(1.0f);
    vf t = vm_pow2i(n);
    vf near = vf_fma(t, vf_add(vf_sub(a, one), b), vf_sub(t, one));
    vf far = vf_fma(t, vf_add(a, b), vf_set(-1.0f));
    vf y = vf_sel(vf_ge(kf, vf_set(-24.0f)), near, far);
    vf zero = vf_set(0.0f);
    return vf_sel(vf_gt(x, zero), x, vf_sel(vf_eq(x, zero), x, y));
}

/*
 * max(x, 0) + log1p(t), t = e^-|x| = ta + tb in (0, 1]. log1p(t) =
 * k ln2 + log1p(f) + fl/(1+f): k = 0 and f = ta, fl = tb for t <= sqrt 2
 * - 1; else k = 1, f = (t - 1)/2 with t - 1 split exactly (Fast2Sum), so
 * f is in [sqrt(2)/2 - 1, sqrt(2) - 1] either way. 1/(1+f) is needed only
 * roughly (fl is below 2^-23 f) and is 1 - f + f^2. Below -69 the result
 * is t itself, from the exponential with its gradual underflow.
 */
static inline vf vm_softplus(vf x) {
    vf ax = vf_abs(x);
    vf v = vf_max(vf_set(-110.0f), vf_neg(ax));
    vf a, b, kf;
    vi n;
    vm_exp_core(v, &a, &b, &n, &kf);
    vi nm = vi_max(n, vi_set(-100));
    vf ta = vm_ldexp(a, nm), tb = vm_ldexp(b, nm);
    vf one = vf_set(1.0f), half = vf_set(0.5f);
    vf d = vf_sub(ta, one);
    vf dl = vf_sub(ta, vf_add(d, one));
    vm big = vf_gt(ta, vf_set(VM_SQRT2 - 1.0f));
    vf f = vf_sel(big, vf_mul(half, d), ta);
    vf fl = vf_sel(big, vf_mul(half, vf_add(dl, tb)), tb);
    vf kh = vf_sel(big, vf_set(VM_LN2_HI), vf_set(0.0f));
    vf kl = vf_sel(big, vf_set(VM_LN2_LO), vf_set(0.0f));
    vf f2 = vf_mul(f, f);
    vf inv = vf_fma(f, f, vf_sub(one, f));
    vf rpoly = vf_fma(f, vm_poly(f, vm_log1p_q, 9), vf_set(-0.5f));
    vf rest = vf_fma(f2, rpoly, vf_fma(fl, inv, kl));
    /* kh + f exactly as s + se (Fast2Sum, |kh| >= |f| or kh = 0), then
     * max(x, 0) + s exactly as y + ye (TwoSum); one rounding at the end. */
    vf s = vf_add(kh, f);
    vf se = vf_add(vf_sub(kh, s), f);
    vf m = vf_max(x, vf_set(0.0f));
    vf y = vf_add(m, s);
    vf bb = vf_sub(y, m);
    vf ye = vf_add(vf_sub(m, vf_sub(y, bb)), vf_sub(s, bb));
    y = vf_add(y, vf_add(vf_add(ye, se), rest));
    y = vf_sel(vf_eq(x, vf_set((float)INFINITY)), x, y); /* inf - inf */
    vf tiny = vm_scale(a, n);
    return vf_sel(vf_lt(x, vf_set(-69.0f)), tiny, y);
}

/*
 * The pieces of gelu for one vector: xs = x clamped to |x| <= 14.5,
 * h = erfc(|xs|/sqrt 2)/2 = e^(-xs^2/2) H(|xs|) in the form 2^n (a + b) H2
 * (H2 = H (1 + zl) folds in the low part of -xs^2/2, which is exact as
 * xs*xs + fma(xs, xs, -xs*xs) halved), and the small-|x| polynomial.
 */
typedef struct vm_gelu_parts {
    vf xs, h, zl, h2, a, b, poly;
    vi n;
} vm_gelu_parts;

static inline vm_gelu_parts vm_gelu_pieces(vf x) {
    vm_gelu_parts g;
    vf ac = vf_min(vf_set(14.5f), vf_abs(x));
    g.xs = vf_copysign(ac, x);
    vi idx = vi_sub(vi_srl22(vf_bits(ac)), vi_set(253));
    idx = vi_min(vi_max(idx, vi_set(0)), vi_set(7));
    vf u = vf_sub(ac, vf_lookup8(vm_gelu_c, idx));
    vf h = vf_lookup8(vm_gelu_h[9], idx);
    for (int k = 8; k >= 0; --k)
        h = vf_fma(h, u, vf_lookup8(vm_gelu_h[k], idx));
    vf sh = vf_mul(ac, ac);
    vf sl = vf_fnma(vf_neg(ac), ac, vf_neg(sh));
    vf mhalf = vf_set(-0.5f);
    vf z = vf_mul(mhalf, sh);
    vf zl = vf_mul(mhalf, sl);
    vf kf;
    vm_exp_core(z, &g.a, &g.b, &g.n, &kf);
    g.h = h;
    g.zl = zl;
    g.h2 = vf_fma(h, zl, h);
    g.poly = vm_poly(vf_mul(x, x), vm_gelu_p, 4);
    return g;
}

/*
 * |x| < 0.5: x/2 + x^2 P(x^2) (-0 kept). Otherwise c = x h = 2^n xs H (a
 * + b)(1 + zl) = 2^n ((p + pl) a + p (a zl + b)) with p + pl = xs H
 * exactly (a fused step gives pl), one rounding before the scaling, and
 * the result is
 * c for x < 0, x - c for x >= 0 (with the unclamped x, so large x and +inf
 * come out as themselves; -inf gives -0).
 */
static inline vf vm_gelu(vf x) {
    vm_gelu_parts g = vm_gelu_pieces(x);
    vf small = vf_fma(vf_mul(x, x), g.poly, vf_mul(vf_set(0.5f), x));
    vf zero = vf_set(0.0f);
    small = vf_sel(vf_eq(x, zero), x, small);
    vf p = vf_mul(g.xs, g.h);
    vf pl = vf_fnma(vf_neg(g.xs), g.h, vf_neg(p));
    vf lo = vf_fma(g.a, g.zl, g.b);
    vf c = vm_scale(vf_fma(p, g.a, vf_fma(pl, g.a, vf_mul(p, lo))), g.n);
    vf big = vf_sel(vf_lt(x, zero), c, vf_sub(x, c));
    /* Beyond 14.5, x h is below half the smallest subnormal. */
    big = vf_sel(vf_lt(x, vf_set(-14.5f)), vf_set(-0.0f), big);
    return vf_sel(vf_lt(vf_abs(x), vf_set(0.5f)), small, big);
}

/* ---------------------------------------------------------- gradients */

static inline vf vm_exp_grad(vf g, vf x) {
    return vf_mul(g, vm_exp(x));
}

static inline vf vm_sigmoid_grad(vf g, vf x) {
    vf s = vm_sigmoid(x);
    return vf_mul(vf_mul(g, s), vf_sub(vf_set(1.0f), s));
}

static inline vf vm_tanh_grad(vf g, vf x) {
    vf t = vm_tanh(x);
    return vf_mul(g, vf_sub(vf_set(1.0f), vf_mul(t, t)));
}

static inline vf vm_silu_grad(vf g, vf x) {
    vf s = vm_sigmoid(x);
    vf xs1 = vf_mul(vf_mul(x, s), vf_sub(vf_set(1.0f), s));
    return vf_mul(g, vf_add(s, xs1));
}

static inline vf vm_softplus_grad(vf g, vf x) {
    return vf_mul(g, vm_sigmoid(x));
}

static inline vf vm_elu_grad(vf g, vf x) {
    return vf_sel(vf_gt(x, vf_set(0.0f)), g, vf_mul(g, vm_exp(x)));
}

/*
 * g (Phi(x) + x phi(x)): Phi = 1/2 + x P(x^2) for |x| < 0.5, else h (x <
 * 0) or 1 - h, with h = 2^n (a + b) H2; phi = e^(-x^2/2)/sqrt(2 pi) from
 * the same exponential (x clamped, so that +-inf give 1 and 0).
 */
static inline vf vm_gelu_grad(vf g, vf x) {
    vm_gelu_parts q = vm_gelu_pieces(x);
    vf e = vm_scale(q.a, q.n);
    vf h = vm_scale(vf_mul(q.a, q.h2), q.n);
    vf one = vf_set(1.0f), zero = vf_set(0.0f);
    vf phi_big = vf_sel(vf_lt(x, zero), h, vf_sub(one, h));
    vf phi_small = vf_fma(x, q.poly, vf_set(0.5f));
    vf cdf = vf_sel(vf_lt(vf_abs(x), vf_set(0.5f)), phi_small, phi_big);
    vf pdf = vf_mul(e, vf_set(VM_INV_SQRT_2PI));
    return vf_mul(g, vf_fma(q.xs, pdf, cdf));
}

/* ------------------------------------------------------- array loops */

/*
 * Whole vectors, then the tail through a VM_W-element buffer, so that the
 * tail runs the same vector code (lanes past n compute on zeros). Forced
 * inline so that fn is a direct call into each array function below.
 */
static VM_INLINE void vm_run1(vf (*fn)(vf), const float *x, float *o,
                              int64_t n) {
    int64_t i = 0;
    for (; i + VM_W <= n; i += VM_W)
        vf_store(o + i, fn(vf_load(x + i)));
    if (i < n) {
        float buf[VM_W] = {0};
        for (int64_t j = i; j < n; ++j)
            buf[j - i] = x[j];
        vf_store(buf, fn(vf_load(buf)));
        for (int64_t j = i; j < n; ++j)
            o[j] = buf[j - i];
    }
}

static VM_INLINE void vm_run2(vf (*fn)(vf, vf), const float *g, const float *x,
                              float *o, int64_t n) {
    int64_t i = 0;
    for (; i + VM_W <= n; i += VM_W)
        vf_store(o + i, fn(vf_load(g + i), vf_load(x + i)));
    if (i < n) {
        float bg[VM_W] = {0}, bx[VM_W] = {0};
        for (int64_t j = i; j < n; ++j) {
            bg[j - i] = g[j];
            bx[j - i] = x[j];
        }
        vf_store(bx, fn(vf_load(bg), vf_load(bx)));
        for (int64_t j = i; j < n; ++j)
            o[j] = bx[j - i];
    }
}

static void vm_exp_array(const float *x, float *o, int64_t n) {
    vm_run1(vm_exp, x, o, n);
}
static void vm_tanh_array(const float *x, float *o, int64_t n) {
    vm_run1(vm_tanh, x, o, n);
}
static void vm_sigmoid_array(const float *x, float *o, int64_t n) {
    vm_run1(vm_sigmoid, x, o, n);
}
static void vm_gelu_array(const float *x, float *o, int64_t n) {
    vm_run1(vm_gelu, x, o, n);
}
static void vm_silu_array(const float *x, float *o, int64_t n) {
    vm_run1(vm_silu, x, o, n);
}
static void vm_softplus_array(const float *x, float *o, int64_t n) {
    vm_run1(vm_softplus, x, o, n);
}
static void vm_elu_array(const float *x, float *o, int64_t n) {
    vm_run1(vm_elu, x, o, n);
}

static void vm_exp_grad_array(const float *g, const float *x, float *o,
                              int64_t n) {
    vm_run2(vm_exp_grad, g, x, o, n);
}
static void vm_tanh_grad_array(const float *g, const float *x, float *o,
                               int64_t n) {
    vm_run2(vm_tanh_grad, g, x, o, n);
}
static void vm_sigmoid_grad_array(const float *g, const float *x, float *o,
                                  int64_t n) {
    vm_run2(vm_sigmoid_grad, g, x, o, n);
}
static void vm_gelu_grad_array(const float *g, const float *x, float *o,
                               int64_t n) {
    vm_run2(vm_gelu_grad, g, x, o, n);
}
static void vm_silu_grad_array(const float *g, const float *x, float *o,
                               int64_t n) {
    vm_run2(vm_silu_grad, g, x, o, n);
}
static void vm_softplus_grad_array(const float *g, const float *x, float *o,
                                   int64_t n) {
    vm_run2(vm_softplus_grad, g, x, o, n);
}
static void vm_elu_grad_array(const float *g, const float *x, float *o,
                              int64_t n) {
    vm_run2(vm_elu_grad, g, x, o, n);
}

static const sw_vmath_impl vm_impl = {
    VM_NAME,
    {vm_exp_array, vm_tanh_array, vm_sigmoid_array, vm_gelu_array,
     vm_silu_array, vm_softplus_array, vm_elu_array},
    {vm_exp_grad_array, vm_tanh_grad_array, vm_sigmoid_grad_array,
     vm_gelu_grad_array, vm_silu_grad_array, vm_softplus_grad_array,
     vm_elu_grad_array}};
