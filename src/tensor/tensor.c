/* Tensors: construction, element access and scatter. */
#include <string.h>

#include "carrier/defined.h"
#include "carrier/internal.h"
#include "layout/internal.h"
#include "op/kernels/kernels.h"
#include "strideweave/evictable.h"
#include "strideweave/opencl.h"
#include "strideweave/tiled.h"
#include "tensor/internal.h"

static void tensor_destroy(sw_object *o) {
    sw_tensor *t = (sw_tensor *)o;
    sw_carrier *c = t->carrier;
    sw_op_unref(t->ctx);
    sw_tensor_unref(t->grad);
    sw_grad_hooks_free(t);
    sw_layout_unref(t->layout);
    sw_planes_free(t->planes);
    /* Last: a tensor in its carrier's block may go with the carrier (the
     * carrier is destroyed after this returns, see sw_object_unref). */
    if (!t->in_carrier)
        sw_free(t);
    sw_carrier_unref(c);
}

static sw_status check_new(sw_carrier *carrier, int64_t offset,
                           sw_layout *layout) {
    if (!carrier || !layout)
        return sw_fail(SW_ETYPE, "a tensor needs a carrier and a layout");
    if (offset < 0)
        return sw_fail(SW_EVALUE, "Tensor offset must be non-negative");
    int64_t size = sw_carrier_size(carrier);
    if (offset > size || layout->cosize > size - offset)
        return sw_fail(SW_EVALUE, "Tensor storage exceeds carrier size");
    return SW_OK;
}

static void init_tensor(sw_tensor *t, sw_carrier *carrier, int64_t offset,
                        sw_layout *layout, int in_carrier) {
    sw_object_init(&t->obj, tensor_destroy);
    t->carrier = sw_carrier_retain(carrier);
    t->layout = sw_layout_retain(layout);
    t->offset = offset;
    t->planes = NULL;
    t->ctx = NULL;
    t->grad = NULL;
    t->retain_grad = 0;
    t->constant = 0;
    t->hooks = NULL;
    t->in_carrier = in_carrier;
}

sw_status sw_tensor_new(sw_carrier *carrier, int64_t offset, sw_layout *layout,
                        sw_tensor **out) {
    sw_status st = check_new(carrier, offset, layout);
    if (st)
        return st;
    /* A fresh carrier's first tensor lives in the carrier's block. */
    sw_tensor *t = sw_carrier_take_tensor_room(carrier);
    int in_carrier = t != NULL;
    if (!t && !(t = sw_malloc(sizeof *t)))
        return sw_oom();
    init_tensor(t, carrier, offset, layout, in_carrier);
    *out = t;
    return SW_OK;
}

sw_tensor *sw_tensor_retain(sw_tensor *t) {
    if (t)
        sw_object_retain(&t->obj);
    return t;
}

void sw_tensor_unref(sw_tensor *t) {
    if (t)
        sw_object_unref(&t->obj);
}

void sw_tensor_set_peer(sw_tensor *t, void *peer, const sw_peer_hooks *hooks) {
    sw_object_set_peer(&t->obj, peer, hooks);
}

void *sw_tensor_get_peer(const sw_tensor *t) {
    return t->obj.peer;
}

int64_t sw_tensor_refcount(const sw_tensor *t) {
    return sw_object_refcount(&t->obj);
}

sw_carrier *sw_tensor_carrier(const sw_tensor *t) {
    return t->carrier;
}
sw_layout *sw_tensor_layout(const sw_tensor *t) {
    return t->layout;
}
int64_t sw_tensor_offset(const sw_tensor *t) {
    return t->offset;
}
int64_t sw_tensor_size(const sw_tensor *t) {
    return t->layout->size;
}
sw_dtype sw_tensor_dtype(const sw_tensor *t) {
    return sw_carrier_dtype(t->carrier);
}
int64_t sw_tensor_version(const sw_tensor *t) {
    return sw_carrier_version(t->carrier);
}
int sw_tensor_is_mutable(const sw_tensor *t) {
    return sw_carrier_is_mutable(t->carrier);
}
int sw_tensor_is_differentiable(const sw_tensor *t) {
    /* Compound dtypes are not differentiable, nor are constants. */
    return !t->planes && !t->constant &&
           sw_dtype_is_differentiable(sw_carrier_dtype(t->carrier));
}

sw_status sw_tensor_get(const sw_tensor *t, int64_t i, sw_value *out) {
    int64_t idx;
    sw_status st = sw_tensor_single(t, SW_ENTRY_INDEXING);
    if (!st)
        st = sw_layout_index(t->layout, i, &idx);
    if (st)
        return st;
    return sw_carrier_get(t->carrier, t->offset + idx, out);
}

sw_status sw_tensor_get_coord(const sw_tensor *t, int32_t ntok,
                              const int32_t *recipe, const int64_t *values,
                              sw_value *out) {
    int64_t idx;
    sw_status st = sw_tensor_single(t, SW_ENTRY_INDEXING);
    if (!st)
        st = sw_layout_index_coord(t->layout, ntok, recipe, values, &idx);
    if (st)
        return st;
    return sw_carrier_get(t->carrier, t->offset + idx, out);
}

sw_status sw_tensor_set(sw_tensor *t, int64_t i, const sw_value *v) {
    int64_t idx;
    sw_status st = sw_tensor_single(t, SW_ENTRY_MUTATION);
    if (!st)
        st = sw_layout_index(t->layout, i, &idx);
    if (st)
        return st;
    return sw_carrier_set(t->carrier, t->offset + idx, v);
}

sw_status sw_tensor_set_coord(sw_tensor *t, int32_t ntok, const int32_t *recipe,
                              const int64_t *values, const sw_value *v) {
    int64_t idx;
    sw_status st = sw_tensor_single(t, SW_ENTRY_MUTATION);
    if (!st)
        st = sw_layout_index_coord(t->layout, ntok, recipe, values, &idx);
    if (st)
        return st;
    return sw_carrier_set(t->carrier, t->offset + idx, v);
}

/* ----------------------------------------------------------------- scatter */

/*
 * Copies src (read through its layout) into dst at mapping positions, for
 * two CPU carriers. An odometer over the flattened leaves of both layouts
 * (the shapes are equal, so the leaves pair up) keeps the inner step to
 * two additions. A leaf along which both have stride 0 only repeats the
 * same copy, so it is left out: a scatter of Shape(2**62):Stride(0) costs
 * one element, with the same result (the last write to each element is
 * still the one of the largest logical index that reaches it).
 */
static void scatter_cpu(sw_carrier *dst, int64_t dst_base,
                        const sw_layout *mapping, const sw_tensor *src) {
    const sw_layout *sl = src->layout;
    int64_t ext[64], dstr[64], sstr[64];
    int32_t n = 0;
    int64_t total = 1;
    for (int32_t j = 0; j < mapping->nleaf; ++j) {
        int64_t e = mapping->shape->val[j], ds = mapping->stride->val[j];
        int64_t ss = sl->stride->val[j];
        if (e == 1 || (ds == 0 && ss == 0))
            continue;
        ext[n] = e;
        dstr[n] = ds;
        sstr[n] = ss;
        total *= e;
        n++;
    }
    sw_dtype dt = sw_carrier_dtype(dst), st = sw_carrier_dtype(src->carrier);
    char *d = sw_cpu_storage(dst);
    const char *s = sw_cpu_storage(src->carrier);
    int64_t di = dst_base, si = src->offset;
    int64_t ctr[64] = {0};
    for (int64_t k = 0; k < total; ++k) {
        double x;
        if (st == SW_DTYPE_FLOAT32)
            x = ((const float *)s)[si];
        else if (st == SW_DTYPE_INT32)
            x = ((const int32_t *)s)[si];
        else
            x = ((const uint8_t *)s)[si];
        if (dt == SW_DTYPE_FLOAT32)
            ((float *)d)[di] = (float)x;
        else if (dt == SW_DTYPE_INT32)
            ((int32_t *)d)[di] = (int32_t)x;
        else
            ((uint8_t *)d)[di] = x != 0.0;
        for (int32_t j = 0; j < n; ++j) {
            if (++ctr[j] < ext[j]) {
                di += dstr[j];
                si += sstr[j];
                break;
            }
            di -= (ext[j] - 1) * dstr[j];
            si -= (ext[j] - 1) * sstr[j];
            ctr[j] = 0;
        }
    }
}

/*
 * Non-zero when a CPU scatter is a plain copy that the copy kernel does
 * with the same result (vectorised and over the thread pool, where
 * scatter_cpu walks one element at a time): the same dtype on both sides
 * (no conversion) and an injective mapping (no element written twice, so
 * no question of which write is last). Gradient accumulation scatters
 * whole parameter-sized sums this way.
 */
static int scatter_is_plain_copy(sw_carrier *dst, const sw_layout *mapping,
                                 const sw_tensor *src) {
    sw_dtype dt = sw_carrier_dtype(dst);
    if (dt != sw_carrier_dtype(src->carrier) ||
        (dt != SW_DTYPE_FLOAT32 && dt != SW_DTYPE_INT32))
        return 0;
    int injective = 0;
    if (sw_layout_is_injective(mapping, &injective) != SW_OK) {
        sw_clear_error();
        return 0;
    }
    return injective;
}

static sw_status scatter_pinned(sw_carrier *c, const sw_tensor *src,
                                const sw_tensor *onto, const sw_layout *mapping,
                                int64_t mapping_offset) {
    if (mapping_offset < 0)
        return sw_fail(SW_EVALUE, "mapping_offset must be non-negative");
    if (onto->carrier != c)
        return sw_fail(SW_EVALUE, "scatter_onto must be backed by this "
                                  "carrier");
    if (sw_carrier_is_released(c))
        return sw_fail(SW_ERUNTIME, "scatter_onto carrier is released");
    if (!sw_carrier_is_mutable(c))
        return sw_carrier_fail_immutable();
    sw_status moving = sw_carrier_check_move(c);
    if (moving)
        return moving;
    if (sw_carrier_is_released(src->carrier))
        return sw_fail(SW_ERUNTIME, "to_scatter carrier is released");
    if (!sw_tree_equal(mapping->shape, src->layout->shape))
        return sw_fail(SW_EVALUE,
                       "mapping shape must match to_scatter layout shape");
    int bulk = sw_carrier_is_cpu(c) && sw_carrier_is_cpu(src->carrier);
    if (bulk && sw_carrier_dtype(c) == SW_DTYPE_INT32 &&
        sw_carrier_dtype(src->carrier) == SW_DTYPE_FLOAT32)
        return sw_fail(SW_ETYPE, "cannot scatter Float32 values into an "
                                 "Int32 CPU carrier");
    int64_t base, end;
    if (!sw_add_ok(onto->offset, mapping_offset, &base) ||
        !sw_add_ok(base, mapping->cosize, &end) || end > sw_carrier_size(c))
        return sw_fail(SW_EVALUE,
                       "scatter mapping exceeds destination carrier size");
    /* OpenCL's own scatter is one confirmed write (a kernel for an OpenCL
     * source), atomic, and bumps the version once. */
    if (sw_carrier_is_opencl(c))
        return sw_opencl_scatter(c, src, onto, mapping, mapping_offset);
    if (bulk) {
        if (mapping->nleaf > 64)
            return sw_fail(SW_ENOTIMPL, "scatter supports at most 64 leaves");
        sw_status st = SW_OK;
        if (scatter_is_plain_copy(c, mapping, src)) {
            sw_karg to = {sw_cpu_storage(c), sw_carrier_dtype(c), base,
                          mapping};
            sw_karg from = {sw_cpu_storage(src->carrier),
                            sw_carrier_dtype(src->carrier), src->offset,
                            src->layout};
            st = sw_kernel_copy(to, from);
        } else {
            scatter_cpu(c, base, mapping, src);
        }
        /* An interrupted copy has written part of the target. */
        sw_status bumped = sw_carrier_bump_version(c);
        return st ? st : bumped;
    }
    /* A TiledEvictable's whole array from a tensor laid out as it is
     * goes in one block. */
    if (sw_carrier_is_tiled(c)) {
        int done = 0;
        sw_status st = sw_tiled_assign(c, src, base, mapping, &done);
        if (st || done)
            return st;
    }
    int64_t v0 = sw_carrier_version(c);
    for (int64_t i = 0; i < mapping->size; ++i) {
        int64_t idx;
        sw_value v;
        sw_status st = sw_layout_index(mapping, i, &idx);
        if (!st)
            st = sw_tensor_get(src, i, &v);
        if (st)
            return st;
        st = sw_carrier_set(c, base + idx, &v);
        sw_value_clear(&v);
        if (st)
            return st;
    }
    /* A definition-backed carrier's scatter is one write: its version
     * rises once, whatever the element writes counted. */
    if (sw_carrier_is_defined(c) && mapping->size > 0)
        sw_carrier_version_restore(c, v0 + 1);
    return SW_OK;
}

/* Both carriers stay readable while the copy runs (see sw_carrier_pin);
 * released ones are refused by the checks. */
sw_status sw_carrier_scatter(sw_carrier *c, const sw_tensor *src,
                             const sw_tensor *onto, const sw_layout *mapping,
                             int64_t mapping_offset) {
    sw_status gate = sw_tensor_single(src, SW_ENTRY_SCATTER);
    if (!gate)
        gate = sw_tensor_single(onto, SW_ENTRY_SCATTER);
    if (gate)
        return gate;
    if (c && c->cls == sw_evictable_class())
        return sw_evictable_scatter(c, src, onto, mapping, mapping_offset);
    if (!src || !onto || !mapping)
        return sw_fail(SW_ETYPE, "scatter needs a source, a target and a "
                                 "mapping");
    int pinned_c = sw_carrier_pin(c) == SW_OK;
    int pinned_s = sw_carrier_pin(src->carrier) == SW_OK;
    sw_status st = scatter_pinned(c, src, onto, mapping, mapping_offset);
    if (pinned_s)
        sw_carrier_unpin(src->carrier);
    if (pinned_c)
        sw_carrier_unpin(c);
    return st;
}
