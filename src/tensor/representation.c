/*
 * Tensor representations: storage schemas, the validation of a list of
 * subtensors and adjacent layouts, multi-subtensor tensors and the gate of
 * the entry points that refuse them (strideweave/representation.h).
 */
#include <string.h>

#include "carrier/internal.h"
#include "layout/internal.h"
#include "strideweave/interop.h"
#include "tensor/internal.h"

/* ------------------------------------------------------------ schemas */

struct sw_schema {
    sw_refcount ref;
    int is_static; /* a simple schema: never counted, never freed */
    int32_t nplanes;
    sw_dtype planes[SW_SCHEMA_MAX_PLANES];
    const char *name; /* static, or in the schema's block */
};

#define SIMPLE(d, n) {{0}, 1, 1, {d}, n}

static const sw_schema simple_schemas[SW_DTYPE_COUNT] = {
    SIMPLE(SW_DTYPE_ANY, "Any"),         SIMPLE(SW_DTYPE_FLOATING, "Floating"),
    SIMPLE(SW_DTYPE_FLOAT32, "Float32"), SIMPLE(SW_DTYPE_INT32, "Int32"),
    SIMPLE(SW_DTYPE_BOOL, "Bool"),
};

static int is_dtype(sw_dtype d) {
    return (int)d >= 0 && (int)d < SW_DTYPE_COUNT;
}

const sw_schema *sw_schema_simple(sw_dtype dtype) {
    return is_dtype(dtype) ? &simple_schemas[dtype] : NULL;
}

sw_status sw_schema_compound_new(const char *name, int32_t nplanes,
                                 const sw_dtype *planes, sw_schema **out) {
    if (!name)
        return sw_fail(SW_ETYPE, "a CompoundDType needs a name");
    if (!*name)
        return sw_fail(SW_EVALUE, "CompoundDType name must not be empty");
    if (nplanes < 2 || nplanes > SW_SCHEMA_MAX_PLANES || !planes)
        return sw_fail(SW_EVALUE,
                       "CompoundDType needs at least 2 planes and at most %d, "
                       "got %d",
                       SW_SCHEMA_MAX_PLANES, (int)nplanes);
    for (int32_t i = 0; i < nplanes; ++i)
        if (!is_dtype(planes[i]))
            return sw_fail(SW_EVALUE, "CompoundDType plane %d is not a dtype",
                           (int)i);
    size_t len = strlen(name) + 1;
    sw_schema *s = sw_malloc(sizeof *s + len);
    if (!s)
        return sw_oom();
    memset(s, 0, sizeof *s);
    sw_ref_init(&s->ref);
    s->nplanes = nplanes;
    memcpy(s->planes, planes, (size_t)nplanes * sizeof *planes);
    char *text = (char *)(s + 1);
    memcpy(text, name, len);
    s->name = text;
    *out = s;
    return SW_OK;
}

sw_schema *sw_schema_retain(const sw_schema *s) {
    sw_schema *m = (sw_schema *)s;
    if (m && !m->is_static)
        sw_ref_inc(&m->ref);
    return m;
}

void sw_schema_unref(const sw_schema *s) {
    sw_schema *m = (sw_schema *)s;
    if (m && !m->is_static && sw_ref_dec(&m->ref))
        sw_free(m);
}

const char *sw_schema_name(const sw_schema *s) {
    return s->name;
}

int sw_schema_is_compound(const sw_schema *s) {
    return !s->is_static;
}

int32_t sw_schema_nplanes(const sw_schema *s) {
    return s->nplanes;
}

sw_dtype sw_schema_plane(const sw_schema *s, int32_t i) {
    return i >= 0 && i < s->nplanes ? s->planes[i] : SW_DTYPE_COUNT;
}

/* ------------------------------------------------------- validation */

static const char *dtype_text(sw_dtype d) {
    const char *n = sw_dtype_name(d);
    return n ? n : "(not a dtype)";
}

/* A layout's text for a message (truncated past the buffer). */
static const char *layout_text(const sw_layout *l, char *buf, size_t n) {
    sw_layout_format(l, buf, (int64_t)n);
    return buf;
}

static const char *schema_kind(const sw_schema *s) {
    return s->is_static ? "DType" : "CompoundDType";
}

/* The schema's rules: counts and each subtensor's declared plane. */
static sw_status check_schema(const sw_schema *s, int32_t nsub,
                              const sw_dtype *storage, int32_t nadj) {
    if (nsub != s->nplanes)
        return sw_fail(SW_EVALUE, "%s '%s' requires %d subtensors, got %d",
                       schema_kind(s), s->name, (int)s->nplanes, (int)nsub);
    if (nadj != s->nplanes - 1)
        return sw_fail(
            SW_EVALUE, "%s '%s' requires %d adjacent layouts, got %d",
            schema_kind(s), s->name, (int)(s->nplanes - 1), (int)nadj);
    for (int32_t i = 0; i < nsub; ++i)
        if (storage[i] != s->planes[i])
            return sw_fail(
                SW_EVALUE, "subtensor %d must use storage dtype %s, not %s",
                (int)i, dtype_text(s->planes[i]), dtype_text(storage[i]));
    return SW_OK;
}

static sw_status check_subtensor(int32_t i, sw_dtype storage, sw_carrier *c,
                                 int64_t offset, const sw_layout *placement,
                                 sw_carrier *first) {
    if (!c || !placement)
        return sw_fail(SW_ETYPE,
                       "subtensor %d needs a carrier and a "
                       "placement layout",
                       (int)i);
    sw_dtype cd = sw_carrier_dtype(c);
    if (cd != storage)
        return sw_fail(SW_EVALUE,
                       "subtensor %d carrier dtype must be identical to its "
                       "storage dtype %s, not %s",
                       (int)i, dtype_text(storage), dtype_text(cd));
    sw_move_key k = sw_move_key_of(c), k0 = sw_move_key_of(first);
    if (k.id != k0.id)
        return sw_fail(SW_ETYPE,
                       "subtensor carriers must have one exact class: "
                       "subtensor %d is %s, subtensor 0 is %s",
                       (int)i, k.name, k0.name);
    if (offset < 0)
        return sw_fail(SW_EVALUE, "subtensor %d offset must be non-negative",
                       (int)i);
    int64_t size = sw_carrier_size(c), end;
    if (!sw_add_ok(offset, placement->cosize, &end) || end > size)
        return sw_fail(SW_EVALUE,
                       "subtensor %d placement storage exceeds carrier size: "
                       "offset %lld + cosize %lld > %lld",
                       (int)i, (long long)offset, (long long)placement->cosize,
                       (long long)size);
    return SW_OK;
}

static sw_status check_adjacent(int32_t i, const sw_layout *adj,
                                const sw_layout *from, const sw_layout *to) {
    if (!adj)
        return sw_fail(SW_ETYPE, "adjacent layout %d must be a Layout", (int)i);
    if (!sw_tree_equal(adj->shape, from->shape)) {
        char a[128], b[128];
        return sw_fail(SW_EVALUE,
                       "adjacent layout %d must have the source placement "
                       "shape: %s differs in shape from placement %s",
                       (int)i, layout_text(adj, a, sizeof a),
                       layout_text(from, b, sizeof b));
    }
    if (adj->cosize > to->size)
        return sw_fail(SW_EVALUE,
                       "adjacent layout %d reaches outside level %d shape "
                       "cardinality %lld: cosize %lld",
                       (int)i, (int)(i + 1), (long long)to->size,
                       (long long)adj->cosize);
    return SW_OK;
}

sw_status sw_representation_check(const sw_schema *dtype, int32_t nsub,
                                  const sw_dtype *storage_dtypes,
                                  sw_carrier *const *carriers,
                                  const int64_t *offsets,
                                  sw_layout *const *placements,
                                  int32_t nadjacent,
                                  sw_layout *const *adjacent) {
    if (!dtype)
        return sw_fail(SW_ETYPE, "a representation needs a logical dtype");
    if (nsub < 0 || nadjacent < 0)
        return sw_fail(SW_EVALUE, "subtensor and adjacent layout counts must "
                                  "be non-negative");
    if ((nsub && (!storage_dtypes || !carriers || !offsets || !placements)) ||
        (nadjacent && !adjacent))
        return sw_fail(SW_ETYPE, "a representation needs its subtensor and "
                                 "adjacent layout arrays");
    sw_status st = check_schema(dtype, nsub, storage_dtypes, nadjacent);
    for (int32_t i = 0; !st && i < nsub; ++i)
        st = check_subtensor(i, storage_dtypes[i], carriers[i], offsets[i],
                             placements[i], carriers[0]);
    for (int32_t i = 0; !st && i < nadjacent; ++i)
        st = check_adjacent(i, adjacent[i], placements[i], placements[i + 1]);
    return st;
}

/* ------------------------------------------------------------ tensors */

void sw_planes_free(sw_planes *p) {
    if (!p)
        return;
    for (int32_t k = 0; k < p->n - 1; ++k) {
        sw_layout_unref(p->plane[k].adjacent_in);
        sw_layout_unref(p->plane[k].placement);
        sw_carrier_unref(p->plane[k].carrier);
    }
    sw_schema_unref(p->dtype);
    sw_free(p);
}

sw_status sw_tensor_new_multi(const sw_schema *dtype, int32_t nsub,
                              const sw_dtype *storage_dtypes,
                              sw_carrier *const *carriers,
                              const int64_t *offsets,
                              sw_layout *const *placements, int32_t nadjacent,
                              sw_layout *const *adjacent, sw_tensor **out) {
    sw_status st =
        sw_representation_check(dtype, nsub, storage_dtypes, carriers, offsets,
                                placements, nadjacent, adjacent);
    if (st)
        return st;
    if (nsub == 1)
        return sw_tensor_new(carriers[0], offsets[0], placements[0], out);
    sw_planes *p = sw_malloc(sizeof *p + (size_t)(nsub - 1) * sizeof(sw_plane));
    if (!p)
        return sw_oom();
    sw_tensor *t = NULL;
    st = sw_tensor_new(carriers[0], offsets[0], placements[0], &t);
    if (st) {
        sw_free(p);
        return st;
    }
    p->dtype = sw_schema_retain(dtype);
    p->n = nsub;
    for (int32_t k = 1; k < nsub; ++k) {
        sw_plane *q = &p->plane[k - 1];
        q->carrier = sw_carrier_retain(carriers[k]);
        q->placement = sw_layout_retain(placements[k]);
        q->adjacent_in = sw_layout_retain(adjacent[k - 1]);
        q->offset = offsets[k];
    }
    t->planes = p;
    *out = t;
    return SW_OK;
}

sw_status sw_tensor_new_view_multi(const sw_tensor *t, int64_t offset,
                                   sw_layout *placement, sw_layout *adjacent,
                                   sw_tensor **out) {
    const sw_planes *p = t->planes;
    sw_dtype storage[SW_SCHEMA_MAX_PLANES];
    sw_carrier *carriers[SW_SCHEMA_MAX_PLANES];
    int64_t offsets[SW_SCHEMA_MAX_PLANES];
    sw_layout *placements[SW_SCHEMA_MAX_PLANES];
    sw_layout *adj[SW_SCHEMA_MAX_PLANES];
    for (int32_t i = 0; i < p->n; ++i) {
        const sw_plane *q = i ? &p->plane[i - 1] : NULL;
        carriers[i] = q ? q->carrier : t->carrier;
        storage[i] = sw_carrier_dtype(carriers[i]);
        offsets[i] = q ? q->offset : offset;
        placements[i] = q ? q->placement : placement;
        if (q)
            adj[i - 1] = i == 1 ? adjacent : q->adjacent_in;
    }
    return sw_tensor_new_multi(p->dtype, p->n, storage, carriers, offsets,
                               placements, p->n - 1, adj, out);
}

int32_t sw_tensor_nsubtensors(const sw_tensor *t) {
    return t->planes ? t->planes->n : 1;
}

const sw_schema *sw_tensor_schema(const sw_tensor *t) {
    return t->planes ? t->planes->dtype
                     : sw_schema_simple(sw_carrier_dtype(t->carrier));
}

sw_status sw_tensor_subtensor(const sw_tensor *t, int32_t i,
                              sw_carrier **carrier, int64_t *offset,
                              sw_layout **placement) {
    int32_t n = sw_tensor_nsubtensors(t);
    if (i < 0 || i >= n)
        return sw_fail(SW_EINDEX,
                       "subtensor index %d out of range for %d subtensors",
                       (int)i, (int)n);
    const sw_plane *q = i ? &t->planes->plane[i - 1] : NULL;
    if (carrier)
        *carrier = q ? q->carrier : t->carrier;
    if (offset)
        *offset = q ? q->offset : t->offset;
    if (placement)
        *placement = q ? q->placement : t->layout;
    return SW_OK;
}

sw_status sw_tensor_adjacent_layout(const sw_tensor *t, int32_t i,
                                    sw_layout **out) {
    int32_t n = sw_tensor_nsubtensors(t);
    if (i < 0 || i >= n - 1)
        return sw_fail(SW_EINDEX,
                       "adjacent layout index %d out of range for %d "
                       "adjacent layouts",
                       (int)i, (int)(n - 1));
    *out = t->planes->plane[i].adjacent_in;
    return SW_OK;
}

int32_t sw_tensor_version_token(const sw_tensor *t, int32_t cap,
                                sw_carrier **carriers, int64_t *versions) {
    int32_t n = sw_tensor_nsubtensors(t), count = 0;
    sw_carrier *seen[SW_SCHEMA_MAX_PLANES];
    for (int32_t i = 0; i < n; ++i) {
        sw_carrier *c = i ? t->planes->plane[i - 1].carrier : t->carrier;
        int dup = 0;
        for (int32_t j = 0; j < count && !dup; ++j)
            dup = seen[j] == c;
        if (dup)
            continue;
        if (count < cap) {
            carriers[count] = c;
            versions[count] = sw_carrier_version(c);
        }
        seen[count++] = c;
    }
    return count;
}

/* --------------------------------------------------------------- gate */

sw_status sw_tensor_refuse_multi(const sw_tensor *t, sw_entry entry) {
    static const char *const what[] = {
        [SW_ENTRY_INDEXING] = "indexing",
        [SW_ENTRY_MUTATION] = "mutation",
        [SW_ENTRY_OPERATION] = "operation execution",
        [SW_ENTRY_BACKWARD] = "backward",
        [SW_ENTRY_DLPACK] = "DLPack export",
        [SW_ENTRY_SCATTER] = "scatter",
        [SW_ENTRY_EVICTABLE] = "Evictable operation lowering",
    };
    const char *w = (int)entry >= 0 && (int)entry <= SW_ENTRY_EVICTABLE
                        ? what[entry]
                        : "operation execution";
    return sw_fail(SW_ENOTIMPL,
                   "Multi-subtensor Tensor %s is not implemented: the tensor "
                   "has %d subtensors (CompoundDType '%s'); only permute and "
                   "views whose every start is 0 take it",
                   w, (int)t->planes->n, t->planes->dtype->name);
}

sw_status sw_tensor_require_single(const sw_tensor *t, sw_entry entry) {
    return sw_tensor_single(t, entry);
}

sw_status sw_args_single(int32_t nargs, const sw_arg *args, sw_entry entry) {
    for (int32_t i = 0; i < nargs; ++i) {
        if (args[i].kind != SW_ARG_TENSOR)
            continue;
        sw_status st = sw_tensor_single(args[i].as.tensor, entry);
        if (st)
            return st;
    }
    return SW_OK;
}
