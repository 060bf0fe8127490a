/*
 * The AVX2 + FMA path of vmath.h: vmath_body.h over 8-lane vectors. The
 * file is compiled for the baseline ISA like the rest of the library;
 * only its functions carry the AVX2/FMA target (a pragma below), and
 * sw_vmath_impl_avx2 hands them out only where cpuid reports both, so the
 * library still runs on any x86-64 CPU. Elsewhere, and in a reference
 * build, the file defines only sw_vmath_impl_avx2, returning NULL.
 */
#include <stddef.h>

#include "op/kernels/vmath.h"

#if !defined(SW_REFERENCE_KERNELS) && defined(__x86_64__) &&                   \
    (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))),              \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

#define VM_INLINE __attribute__((always_inline)) inline
#define VM_W 8
#define VM_NAME "avx2-fma"

typedef __m256 vf;
typedef __m256i vi;
typedef __m256 vm;

static inline vf vf_set(float f) {
    return _mm256_set1_ps(f);
}
static inline vi vi_set(int32_t i) {
    return _mm256_set1_epi32(i);
}
static inline vf vf_load(const float *p) {
    return _mm256_loadu_ps(p);
}
static inline void vf_store(float *p, vf v) {
    _mm256_storeu_ps(p, v);
}
static inline vf vf_add(vf a, vf b) {
    return _mm256_add_ps(a, b);
}
static inline vf vf_sub(vf a, vf b) {
    return _mm256_sub_ps(a, b);
}
static inline vf vf_mul(vf a, vf b) {
    return _mm256_mul_ps(a, b);
}
static inline vf vf_div(vf a, vf b) {
    return _mm256_div_ps(a, b);
}
static inline vf vf_fma(vf a, vf b, vf c) {
    return _mm256_fmadd_ps(a, b, c);
}
static inline vf vf_fnma(vf a, vf b, vf c) {
    return _mm256_fnmadd_ps(a, b, c);
}
/* maxps/minps return the second operand on NaN, as the scalar forms do. */
static inline vf vf_max(vf a, vf b) {
    return _mm256_max_ps(a, b);
}
static inline vf vf_min(vf a, vf b) {
    return _mm256_min_ps(a, b);
}
static inline vi vf_bits(vf a) {
    return _mm256_castps_si256(a);
}
static inline vf vi_as_f(vi a) {
    return _mm256_castsi256_ps(a);
}
static inline vf vf_abs(vf a) {
    return vi_as_f(_mm256_and_si256(vf_bits(a), _mm256_set1_epi32(0x7fffffff)));
}
static inline vf vf_neg(vf a) {
    return vi_as_f(_mm256_xor_si256(vf_bits(a), _mm256_set1_epi32(INT32_MIN)));
}
static inline vf vf_copysign(vf mag, vf sign) {
    vi m = _mm256_and_si256(vf_bits(mag), _mm256_set1_epi32(0x7fffffff));
    vi s = _mm256_and_si256(vf_bits(sign), _mm256_set1_epi32(INT32_MIN));
    return vi_as_f(_mm256_or_si256(m, s));
}
static inline vm vf_lt(vf a, vf b) {
    return _mm256_cmp_ps(a, b, _CMP_LT_OQ);
}
static inline vm vf_gt(vf a, vf b) {
    return _mm256_cmp_ps(a, b, _CMP_GT_OQ);
}
static inline vm vf_ge(vf a, vf b) {
    return _mm256_cmp_ps(a, b, _CMP_GE_OQ);
}
static inline vm vf_eq(vf a, vf b) {
    return _mm256_cmp_ps(a, b, _CMP_EQ_OQ);
}
static inline vf vf_sel(vm m, vf a, vf b) {
    return _mm256_blendv_ps(b, a, m);
}
static inline vi vi_add(vi a, vi b) {
    return _mm256_add_epi32(a, b);
}
static inline vi vi_sub(vi a, vi b) {
    return _mm256_sub_epi32(a, b);
}
static inline vi vi_max(vi a, vi b) {
    return _mm256_max_epi32(a, b);
}
static inline vi vi_sra1(vi a) {
    return _mm256_srai_epi32(a, 1);
}
static inline vi vi_sll23(vi a) {
    return _mm256_slli_epi32(a, 23);
}
/* Four eight-entry permutes, blended on bit 3 and then on bit 4. */
static inline vf vf_lookup32(const float *t, vi i) {
    vf m3 = _mm256_castsi256_ps(_mm256_slli_epi32(i, 28));
    vf m4 = _mm256_castsi256_ps(_mm256_slli_epi32(i, 27));
    vf l0 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(t), i);
    vf l1 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(t + 8), i);
    vf l2 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(t + 16), i);
    vf l3 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(t + 24), i);
    return _mm256_blendv_ps(_mm256_blendv_ps(l0, l1, m3),
                            _mm256_blendv_ps(l2, l3, m3), m4);
}
static inline int vm_any(vm m) {
    return _mm256_movemask_ps(m) != 0;
}
/* blendv reads only the sign bit of the mask: a itself is the mask. */
static inline vm vf_signbit(vf a) {
    return a;
}
static inline vf vf_fms(vf a, vf b, vf c) {
    return _mm256_fmsub_ps(a, b, c);
}
static inline vf vf_fnms(vf a, vf b, vf c) {
    return _mm256_fnmsub_ps(a, b, c);
}

#include "op/kernels/vmath_body.h"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const sw_vmath_impl *sw_vmath_impl_avx2(void) {
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return &vm_impl;
    return NULL;
}

#else

const sw_vmath_impl *sw_vmath_impl_avx2(void) {
    return NULL;
}

#endif
