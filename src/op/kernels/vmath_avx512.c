/*
 * The AVX-512F path of vmath.h: vmath_body.h over 16-lane vectors with
 * lane masks in mask registers. As in vmath_avx2.c, only this file's
 * functions carry the target (a pragma below) and sw_vmath_impl_avx512
 * hands them out only where cpuid reports AVX-512F; elsewhere, and in a
 * reference build, it returns NULL.
 */
#include <stddef.h>

#include "op/kernels/vmath.h"

#if !defined(SW_REFERENCE_KERNELS) && defined(__x86_64__) &&                   \
    (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))),      \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#endif

#define VM_INLINE __attribute__((always_inline)) inline
#define VM_W 16
#define VM_NAME "avx512"

typedef __m512 vf;
typedef __m512i vi;
typedef __mmask16 vm;

static inline vf vf_set(float f) {
    return _mm512_set1_ps(f);
}
static inline vi vi_set(int32_t i) {
    return _mm512_set1_epi32(i);
}
static inline vf vf_load(const float *p) {
    return _mm512_loadu_ps(p);
}
static inline void vf_store(float *p, vf v) {
    _mm512_storeu_ps(p, v);
}
static inline vf vf_add(vf a, vf b) {
    return _mm512_add_ps(a, b);
}
static inline vf vf_sub(vf a, vf b) {
    return _mm512_sub_ps(a, b);
}
static inline vf vf_mul(vf a, vf b) {
    return _mm512_mul_ps(a, b);
}
static inline vf vf_div(vf a, vf b) {
    return _mm512_div_ps(a, b);
}
static inline vf vf_fma(vf a, vf b, vf c) {
    return _mm512_fmadd_ps(a, b, c);
}
static inline vf vf_fnma(vf a, vf b, vf c) {
    return _mm512_fnmadd_ps(a, b, c);
}
/* vmaxps/vminps return the second operand on NaN, as the scalar forms do. */
static inline vf vf_max(vf a, vf b) {
    return _mm512_max_ps(a, b);
}
static inline vf vf_min(vf a, vf b) {
    return _mm512_min_ps(a, b);
}
static inline vi vf_bits(vf a) {
    return _mm512_castps_si512(a);
}
static inline vf vi_as_f(vi a) {
    return _mm512_castsi512_ps(a);
}
static inline vf vf_abs(vf a) {
    return vi_as_f(_mm512_and_epi32(vf_bits(a), _mm512_set1_epi32(0x7fffffff)));
}
static inline vf vf_neg(vf a) {
    return vi_as_f(_mm512_xor_epi32(vf_bits(a), _mm512_set1_epi32(INT32_MIN)));
}
static inline vf vf_copysign(vf mag, vf sign) {
    /* Bits from mag where the mask is set (all but the sign), else sign. */
    return vi_as_f(_mm512_ternarylogic_epi32(
        _mm512_set1_epi32(0x7fffffff), vf_bits(mag), vf_bits(sign), 0xca));
}
static inline vm vf_lt(vf a, vf b) {
    return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ);
}
static inline vm vf_gt(vf a, vf b) {
    return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ);
}
static inline vm vf_ge(vf a, vf b) {
    return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ);
}
static inline vm vf_eq(vf a, vf b) {
    return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ);
}
static inline vf vf_sel(vm m, vf a, vf b) {
    return _mm512_mask_blend_ps(m, b, a);
}
static inline vi vi_add(vi a, vi b) {
    return _mm512_add_epi32(a, b);
}
static inline vi vi_sub(vi a, vi b) {
    return _mm512_sub_epi32(a, b);
}
static inline vi vi_max(vi a, vi b) {
    return _mm512_max_epi32(a, b);
}
static inline vi vi_sll23(vi a) {
    return _mm512_slli_epi32(a, 23);
}
/* vpermt2ps reads the low five bits of each index, bit 4 choosing the
 * second register. */
static inline vf vf_lookup32(const float *t, vi i) {
    return _mm512_permutex2var_ps(_mm512_loadu_ps(t), i,
                                  _mm512_loadu_ps(t + 16));
}
static inline int vm_any(vm m) {
    return m != 0;
}
static inline vm vf_signbit(vf a) {
    return _mm512_cmplt_epi32_mask(vf_bits(a), _mm512_setzero_si512());
}
static inline vf vf_fms(vf a, vf b, vf c) {
    return _mm512_fmsub_ps(a, b, c);
}
static inline vf vf_fnms(vf a, vf b, vf c) {
    return _mm512_fnmsub_ps(a, b, c);
}

/* y * 2^floor(e) with one rounding (vscalefps), as the two products of
 * the other paths; e an integer here. */
#define VM_HAVE_SCALE 1
static inline vf vf_scalef(vf y, vf e) {
    return _mm512_scalef_ps(y, e);
}
static inline vf vf_scale(vf y, vi n) {
    return vf_scalef(y, _mm512_cvtepi32_ps(n));
}

#include "op/kernels/vmath_body.h"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const sw_vmath_impl *sw_vmath_impl_avx512(void) {
    if (__builtin_cpu_supports("avx512f"))
        return &vm_impl;
    return NULL;
}

#else

const sw_vmath_impl *sw_vmath_impl_avx512(void) {
    return NULL;
}

#endif
