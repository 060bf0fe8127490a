/*
 * Unit tests of multi-subtensor tensors (strideweave/representation.h),
 * rule by rule: storage schemas, the representation's validation in its
 * order, the accessors and the version token, the views that take such
 * tensors, the gate every other entry point calls (each rejected before it
 * changes a version, a release state or a destination) and allocation
 * failures injected into every allocation the representation makes.
 */
#include <stdio.h>
#include <string.h>

#include "strideweave/strideweave.h"
#include "check.h"

/* Stops the program: a fixture could not be made. */
static void fatal(const char *what) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s: %s", what, sw_errmsg());
    bail_out(buf);
}

static sw_layout *L(const char *text) {
    sw_layout *l = NULL;
    if (sw_layout_parse(text, &l) != SW_OK)
        fatal(text);
    return l;
}

static sw_carrier *cpu(int64_t n, sw_dtype d) {
    sw_carrier *c = NULL;
    if (sw_cpu_new(n, d, 1, 0, &c) != SW_OK)
        fatal("a CPU carrier");
    return c;
}

/* A rejected call whose message starts with prefix. */
static void expect_prefix(sw_status st, sw_status want, const char *prefix,
                          const char *name) {
    is_int(st, want, "%s fails with %s (got %s)", name, S(want), S(st));
    ok(strncmp(sw_errmsg(), prefix, strlen(prefix)) == 0,
       "%s: message starts with '%s' ('%s')", name, prefix, sw_errmsg());
    sw_clear_error();
}

/* --------------------------------------------------------- fixture */

/*
 * A value plane of 6 Float32 values (2x3, column-major) and a scale plane
 * of 2 Float32 scales, one per row: adjacent layout (2,3):(1,0).
 */
typedef struct fixture {
    sw_schema *mx;
    sw_carrier *values, *scales;
    sw_layout *placement0, *placement1, *adjacent0;
    sw_tensor *t;
} fixture;

static void fixture_make(fixture *f) {
    memset(f, 0, sizeof *f);
    sw_dtype planes[2] = {SW_DTYPE_FLOAT32, SW_DTYPE_FLOAT32};
    if (sw_schema_compound_new("mx", 2, planes, &f->mx) != SW_OK)
        fatal("the schema");
    f->values = cpu(6, SW_DTYPE_FLOAT32);
    f->scales = cpu(2, SW_DTYPE_FLOAT32);
    float *v = sw_cpu_data(f->values);
    for (int i = 0; i < 6; ++i)
        v[i] = (float)i;
    float *s = sw_cpu_data(f->scales);
    s[0] = 0.5f;
    s[1] = 2.0f;
    f->placement0 = L("(2,3):(1,2)");
    f->placement1 = L("2:1");
    f->adjacent0 = L("(2,3):(1,0)");
    sw_dtype storage[2] = {SW_DTYPE_FLOAT32, SW_DTYPE_FLOAT32};
    sw_carrier *carriers[2] = {f->values, f->scales};
    int64_t offsets[2] = {0, 0};
    sw_layout *placements[2] = {f->placement0, f->placement1};
    if (sw_tensor_new_multi(f->mx, 2, storage, carriers, offsets, placements, 1,
                            &f->adjacent0, &f->t) != SW_OK)
        fatal("the multi-subtensor tensor");
}

static void fixture_free(fixture *f) {
    sw_tensor_unref(f->t);
    sw_layout_unref(f->adjacent0);
    sw_layout_unref(f->placement1);
    sw_layout_unref(f->placement0);
    sw_carrier_unref(f->scales);
    sw_carrier_unref(f->values);
    sw_schema_unref(f->mx);
}

/* ----------------------------------------------------------- schemas */

static void test_schemas(void) {
    int64_t base = sw_debug_live_allocs();
    const sw_schema *f32 = sw_schema_simple(SW_DTYPE_FLOAT32);
    ok(f32 != NULL && !sw_schema_is_compound(f32),
       "a simple dtype has a simple schema");
    is_int(sw_schema_nplanes(f32), 1, "a simple schema has one plane");
    is_int(sw_schema_plane(f32, 0), SW_DTYPE_FLOAT32, "the plane is the dtype");
    is_str(sw_schema_name(f32), "Float32", "its name is the dtype's");
    is_int(sw_schema_plane(f32, 1), SW_DTYPE_COUNT, "no plane 1");
    ok(sw_schema_simple(SW_DTYPE_COUNT) == NULL, "no schema for a non-dtype");
    ok(sw_schema_retain(f32) == f32, "retaining a simple schema returns it");
    sw_schema_unref(f32);
    sw_schema_unref(NULL);

    sw_dtype planes[3] = {SW_DTYPE_FLOAT32, SW_DTYPE_INT32, SW_DTYPE_BOOL};
    sw_schema *s = NULL;
    sw_status st = sw_schema_compound_new(NULL, 2, planes, &s);
    expect_fail(st, SW_ETYPE, "a CompoundDType needs a name", "NULL name");
    st = sw_schema_compound_new("", 2, planes, &s);
    expect_fail(st, SW_EVALUE, "CompoundDType name must not be empty",
                "empty name");
    st = sw_schema_compound_new("one", 1, planes, &s);
    expect_fail(st, SW_EVALUE,
                "CompoundDType needs at least 2 planes and at most 16, got 1",
                "one plane");
    st = sw_schema_compound_new("many", SW_SCHEMA_MAX_PLANES + 1, planes, &s);
    expect_prefix(st, SW_EVALUE, "CompoundDType needs at least 2 planes",
                  "too many planes");
    sw_dtype bad[2] = {SW_DTYPE_FLOAT32, SW_DTYPE_COUNT};
    st = sw_schema_compound_new("bad", 2, bad, &s);
    expect_fail(st, SW_EVALUE, "CompoundDType plane 1 is not a dtype",
                "a plane that is not a dtype");
    ok(s == NULL, "no schema was written on failure");

    st = sw_schema_compound_new("mixed", 3, planes, &s);
    if (expect_ok(st, "a compound of three planes")) {
        ok(sw_schema_is_compound(s), "it is compound");
        is_str(sw_schema_name(s), "mixed", "its name is copied");
        is_int(sw_schema_nplanes(s), 3, "three planes");
        is_int(sw_schema_plane(s, 1), SW_DTYPE_INT32, "in order");
        ok(sw_schema_retain(s) == s, "retain returns it");
        sw_schema_unref(s);
        sw_schema_unref(s);
    }
    leak_check(base, "schemas");
}

/* ---------------------------------------------------- construction */

typedef struct rep {
    const sw_schema *dtype;
    int32_t n, nadj;
    sw_dtype storage[3];
    sw_carrier *carriers[3];
    int64_t offsets[3];
    sw_layout *placements[3];
    sw_layout *adjacent[3];
} rep;

static sw_status rep_check(const rep *r) {
    return sw_representation_check(r->dtype, r->n, r->storage, r->carriers,
                                   r->offsets, r->placements, r->nadj,
                                   r->adjacent);
}

static void test_validation(void) {
    int64_t base = sw_debug_live_allocs();
    fixture f;
    fixture_make(&f);
    sw_carrier *ints = cpu(2, SW_DTYPE_INT32);
    sw_layout *wrong_shape = L("(3,2):(1,0)");
    sw_layout *too_far = L("(2,3):(1,1)");
    sw_layout *four = L("4:1");

    rep good = {f.mx,
                2,
                1,
                {SW_DTYPE_FLOAT32, SW_DTYPE_FLOAT32},
                {f.values, f.scales},
                {0, 0},
                {f.placement0, f.placement1},
                {f.adjacent0}};
    sw_status st = rep_check(&good);
    expect_ok(st, "a valid representation");

    /* 10.2: the schema. */
    rep r = good;
    r.n = 1;
    st = rep_check(&r);
    expect_fail(st, SW_EVALUE,
                "CompoundDType 'mx' requires 2 subtensors, "
                "got 1",
                "one subtensor for two planes");
    r = good;
    r.nadj = 0;
    st = rep_check(&r);
    expect_fail(st, SW_EVALUE,
                "CompoundDType 'mx' requires 1 adjacent layouts, got 0",
                "no adjacent layout");
    r = good;
    r.storage[0] = SW_DTYPE_INT32;
    r.carriers[0] = ints;
    st = rep_check(&r);
    expect_fail(st, SW_EVALUE,
                "subtensor 0 must use storage dtype Float32, "
                "not Int32",
                "a subtensor of another plane dtype");
    r = good;
    r.dtype = sw_schema_simple(SW_DTYPE_FLOAT32);
    st = rep_check(&r);
    expect_fail(st, SW_EVALUE, "DType 'Float32' requires 1 subtensors, got 2",
                "a simple dtype has one subtensor");

    /* 10.3: universal validation, in order. */
    r = good;
    r.carriers[1] = ints;
    st = rep_check(&r);
    expect_fail(st, SW_EVALUE,
                "subtensor 1 carrier dtype must be identical to its storage "
                "dtype Float32, not Int32",
                "a carrier of another dtype than its subtensor's");
    sw_carrier *file0 = NULL, *gen32 = NULL;
    st = sw_file_new_in(NULL, NULL, SW_DTYPE_FLOAT32, 1, &file0);
    if (!st)
        st = sw_carrier_allocate_like(file0, 2, 1, SW_DTYPE_COUNT, 0, &gen32);
    sw_carrier_unref(file0);
    if (expect_ok(st, "a FileBacked Float32 carrier")) {
        r = good;
        r.carriers[1] = gen32;
        st = rep_check(&r);
        expect_fail(st, SW_ETYPE,
                    "subtensor carriers must have one exact class: subtensor "
                    "1 is FileBacked, subtensor 0 is CPU",
                    "carriers of two classes");
    }
    r = good;
    r.offsets[1] = -1;
    st = rep_check(&r);
    expect_fail(st, SW_EVALUE, "subtensor 1 offset must be non-negative",
                "a negative offset");
    r = good;
    r.offsets[1] = 1;
    st = rep_check(&r);
    expect_fail(st, SW_EVALUE,
                "subtensor 1 placement storage exceeds carrier size: offset "
                "1 + cosize 2 > 2",
                "a placement past the carrier");
    r = good;
    r.offsets[0] = INT64_MAX;
    st = rep_check(&r);
    expect_prefix(st, SW_EVALUE,
                  "subtensor 0 placement storage exceeds carrier size",
                  "an offset whose end overflows");
    r = good;
    r.adjacent[0] = wrong_shape;
    st = rep_check(&r);
    expect_fail(st, SW_EVALUE,
                "adjacent layout 0 must have the source placement shape: "
                "(3,2):(1,0) differs in shape from placement (2,3):(1,2)",
                "an adjacent layout of another shape");
    r = good;
    r.adjacent[0] = too_far;
    st = rep_check(&r);
    expect_fail(st, SW_EVALUE,
                "adjacent layout 0 reaches outside level 1 shape cardinality "
                "2: cosize 4",
                "an adjacent layout past the next level");
    /* The next level's size counts, not its carrier's. */
    sw_carrier *big = cpu(8, SW_DTYPE_FLOAT32);
    r = good;
    r.carriers[1] = big;
    r.adjacent[0] = too_far;
    st = rep_check(&r);
    expect_prefix(st, SW_EVALUE, "adjacent layout 0 reaches outside level 1",
                  "a large carrier does not widen the level");
    r = good;
    r.carriers[1] = big;
    r.placements[1] = four;
    r.adjacent[0] = too_far;
    st = rep_check(&r);
    expect_ok(st, "a larger next level admits it");
    /* Schema errors come before universal ones. */
    r = good;
    r.nadj = 0;
    r.offsets[1] = -1;
    st = rep_check(&r);
    expect_prefix(st, SW_EVALUE, "CompoundDType 'mx' requires 1 adjacent",
                  "the schema is checked first");
    r = good;
    r.carriers[1] = NULL;
    st = rep_check(&r);
    expect_fail(st, SW_ETYPE,
                "subtensor 1 needs a carrier and a placement layout",
                "a NULL carrier");
    st = sw_representation_check(NULL, 0, NULL, NULL, NULL, NULL, 0, NULL);
    expect_fail(st, SW_ETYPE, "a representation needs a logical dtype",
                "no logical dtype");

    sw_tensor *out = (sw_tensor *)&out;
    r = good;
    r.offsets[1] = -1;
    st = sw_tensor_new_multi(r.dtype, r.n, r.storage, r.carriers, r.offsets,
                             r.placements, r.nadj, r.adjacent, &out);
    expect_fail(st, SW_EVALUE, "subtensor 1 offset must be non-negative",
                "sw_tensor_new_multi validates");
    ok(out == (sw_tensor *)&out, "and writes nothing on failure");

    /* A simple dtype gives a plain tensor. */
    rep simple = {sw_schema_simple(SW_DTYPE_FLOAT32),
                  1,
                  0,
                  {SW_DTYPE_FLOAT32},
                  {f.values},
                  {0},
                  {f.placement0},
                  {NULL}};
    st = sw_tensor_new_multi(simple.dtype, 1, simple.storage, simple.carriers,
                             simple.offsets, simple.placements, 0, NULL, &out);
    if (expect_ok(st, "a simple representation")) {
        is_int(sw_tensor_nsubtensors(out), 1, "has one subtensor");
        ok(sw_tensor_schema(out) == sw_schema_simple(SW_DTYPE_FLOAT32),
           "its schema is the simple one");
        ok(sw_tensor_require_single(out, SW_ENTRY_INDEXING) == SW_OK,
           "the gate lets it pass");
        ok(sw_tensor_is_differentiable(out), "Float32 stays differentiable");
        sw_tensor_unref(out);
    }
    ok(sw_tensor_require_single(NULL, SW_ENTRY_OPERATION) == SW_OK,
       "the gate lets NULL pass (the entry point reports it)");

    sw_layout_unref(four);
    sw_layout_unref(too_far);
    sw_layout_unref(wrong_shape);
    sw_carrier_unref(big);
    sw_carrier_unref(gen32);
    sw_carrier_unref(ints);
    fixture_free(&f);
    leak_check(base, "validation");
}

/* -------------------------------------------------------- accessors */

static void test_accessors(void) {
    int64_t base = sw_debug_live_allocs();
    fixture f;
    fixture_make(&f);
    sw_tensor *t = f.t;
    is_int(sw_tensor_nsubtensors(t), 2, "two subtensors");
    ok(sw_tensor_schema(t) == f.mx, "the logical dtype is the compound");
    ok(sw_tensor_carrier(t) == f.values, "the carrier is subtensor 0's");
    ok(sw_tensor_layout(t) == f.placement0, "the layout is subtensor 0's");
    is_int(sw_tensor_offset(t), 0, "the offset is subtensor 0's");
    is_int(sw_tensor_size(t), 6, "the size is subtensor 0's logical size");
    is_int(sw_tensor_dtype(t), SW_DTYPE_FLOAT32,
           "the C dtype is subtensor 0's storage dtype");
    ok(!sw_tensor_is_differentiable(t), "a compound is not differentiable");
    sw_carrier *c = NULL;
    sw_layout *l = NULL;
    int64_t off = -1;
    sw_status st = sw_tensor_subtensor(t, 1, &c, &off, &l);
    if (expect_ok(st, "subtensor 1"))
        ok(c == f.scales && l == f.placement1 && off == 0,
           "subtensor 1 is the scale plane");
    st = sw_tensor_subtensor(t, 0, &c, &off, &l);
    if (expect_ok(st, "subtensor 0"))
        ok(c == f.values && l == f.placement0, "subtensor 0 is the primary");
    st = sw_tensor_subtensor(t, 2, &c, &off, &l);
    expect_fail(st, SW_EINDEX,
                "subtensor index 2 out of range for 2 "
                "subtensors",
                "subtensor 2");
    st = sw_tensor_adjacent_layout(t, 0, &l);
    if (expect_ok(st, "adjacent layout 0"))
        ok(l == f.adjacent0, "it is the one given");
    st = sw_tensor_adjacent_layout(t, 1, &l);
    expect_fail(st, SW_EINDEX,
                "adjacent layout index 1 out of range for 1 adjacent layouts",
                "adjacent layout 1");

    /* The version token: one pair per unique carrier, by first use. */
    sw_carrier *cs[2] = {NULL, NULL};
    int64_t vs[2] = {-1, -1};
    int32_t n = sw_tensor_version_token(t, 2, cs, vs);
    is_int(n, 2, "two unique carriers");
    ok(cs[0] == f.values && cs[1] == f.scales, "in order of first appearance");
    is_int(vs[1], sw_carrier_version(f.scales), "with their versions");
    sw_value one = sw_value_f64(1.0);
    sw_carrier_set(f.scales, 0, &one);
    n = sw_tensor_version_token(t, 2, cs, vs);
    is_int(vs[1], sw_carrier_version(f.scales), "a write shows in the token");
    is_int(sw_tensor_version_token(t, 0, NULL, NULL), 2,
           "the count alone with no room");

    /* Two planes on one carrier: one pair. */
    sw_carrier *both = cpu(8, SW_DTYPE_FLOAT32);
    sw_dtype storage[2] = {SW_DTYPE_FLOAT32, SW_DTYPE_FLOAT32};
    sw_carrier *carriers[2] = {both, both};
    int64_t offsets[2] = {0, 6};
    sw_layout *placements[2] = {f.placement0, f.placement1};
    sw_tensor *shared = NULL;
    st = sw_tensor_new_multi(f.mx, 2, storage, carriers, offsets, placements, 1,
                             &f.adjacent0, &shared);
    if (expect_ok(st, "two planes in one carrier")) {
        n = sw_tensor_version_token(shared, 2, cs, vs);
        is_int(n, 1, "one unique carrier, one pair");
        ok(cs[0] == both, "the shared carrier");
        sw_tensor_unref(shared);
    }
    sw_carrier_unref(both);

    /* The tensor holds its carriers and layouts. */
    int64_t refs = sw_carrier_refcount(f.scales);
    sw_tensor *again = NULL;
    sw_dtype st2[2] = {SW_DTYPE_FLOAT32, SW_DTYPE_FLOAT32};
    sw_carrier *cr[2] = {f.values, f.scales};
    int64_t of[2] = {0, 0};
    sw_layout *pl[2] = {f.placement0, f.placement1};
    st = sw_tensor_new_multi(f.mx, 2, st2, cr, of, pl, 1, &f.adjacent0, &again);
    if (expect_ok(st, "a second tensor")) {
        is_int(sw_carrier_refcount(f.scales), refs + 1,
               "it holds a reference to the scale carrier");
        sw_tensor_unref(again);
        is_int(sw_carrier_refcount(f.scales), refs, "and lets it go");
    }
    ok(!sw_carrier_is_released(f.scales), "no carrier is released by it");
    fixture_free(&f);
    leak_check(base, "accessors");
}

/* ------------------------------------------------------------ views */

static void test_views(void) {
    int64_t base = sw_debug_live_allocs();
    fixture f;
    fixture_make(&f);
    sw_tensor *p = NULL;
    int32_t order[2] = {1, 0};
    sw_status st = sw_permute(f.t, 2, order, &p);
    if (expect_ok(st, "permute of a multi-subtensor tensor")) {
        char text[64];
        sw_layout_format(sw_tensor_layout(p), text, sizeof text);
        is_str(text, "(3,2):(2,1)", "the placement is permuted");
        sw_layout *adj = NULL;
        sw_tensor_adjacent_layout(p, 0, &adj);
        sw_layout_format(adj, text, sizeof text);
        is_str(text, "(3,2):(0,1)", "adjacent layout 0 too");
        sw_carrier *c = NULL;
        sw_layout *l = NULL;
        int64_t off;
        sw_tensor_subtensor(p, 1, &c, &off, &l);
        ok(c == f.scales && l == f.placement1,
           "the scale plane is shared unchanged");
        ok(sw_tensor_schema(p) == f.mx, "the logical dtype stays");
        ok(sw_tensor_autograd_ctx(p) == NULL, "no autograd node is recorded");
        sw_tensor_unref(p);
    }
    sw_view_key keys[2] = {{SW_VIEW_SLICE, 0, 0, 0, 0, 0, 0, 0},
                           {SW_VIEW_SLICE, 0, 1, 1, 0, 0, 2, 0}};
    st = sw_view(f.t, 2, keys, &p);
    if (expect_ok(st, "a view with starts 0")) {
        char text[64];
        sw_layout_format(sw_tensor_layout(p), text, sizeof text);
        is_str(text, "(2,2):(1,2)", "the placement is sliced");
        sw_layout *adj = NULL;
        sw_tensor_adjacent_layout(p, 0, &adj);
        sw_layout_format(adj, text, sizeof text);
        is_str(text, "(2,2):(1,0)", "adjacent layout 0 alike");
        is_int(sw_tensor_offset(p), 0, "the offset stays");
        sw_tensor_unref(p);
    }
    sw_view_key first[2] = {{SW_VIEW_INDEX, 0, 0, 0, 0, 0, 0, 0},
                            {SW_VIEW_SLICE, 0, 0, 0, 0, 0, 0, 0}};
    st = sw_view(f.t, 2, first, &p);
    if (expect_ok(st, "an integer key 0")) {
        is_int(sw_tensor_nsubtensors(p), 2, "keeps both subtensors");
        sw_layout *adj = NULL;
        sw_tensor_adjacent_layout(p, 0, &adj);
        char text[64];
        sw_layout_format(adj, text, sizeof text);
        is_str(text, "3:0", "adjacent layout 0 loses the mode");
        sw_tensor_unref(p);
    }
    p = (sw_tensor *)&p;
    sw_view_key late[2] = {{SW_VIEW_SLICE, 0, 1, 0, 0, 1, 0, 0},
                           {SW_VIEW_SLICE, 0, 0, 0, 0, 0, 0, 0}};
    st = sw_view(f.t, 2, late, &p);
    expect_fail(st, SW_ENOTIMPL,
                "Multi-subtensor Tensor views take only keys of normalized "
                "start 0: mode 0 starts at 1",
                "a slice starting at 1");
    sw_view_key neg[2] = {{SW_VIEW_SLICE, 0, 0, 0, 0, 0, 0, 0},
                          {SW_VIEW_SLICE, 0, 1, 0, 0, -1, 0, 0}};
    st = sw_view(f.t, 2, neg, &p);
    expect_prefix(st, SW_ENOTIMPL,
                  "Multi-subtensor Tensor views take only "
                  "keys of normalized start 0: mode 1 "
                  "starts at 2",
                  "a negative start normalizes to 2");
    sw_view_key idx[2] = {{SW_VIEW_INDEX, 1, 0, 0, 0, 0, 0, 0},
                          {SW_VIEW_SLICE, 0, 0, 0, 0, 0, 0, 0}};
    st = sw_view(f.t, 2, idx, &p);
    expect_prefix(st, SW_ENOTIMPL, "Multi-subtensor Tensor views take only",
                  "an integer key 1");
    sw_view_key bad[1] = {{SW_VIEW_SLICE, 0, 0, 0, 0, 0, 0, 0}};
    st = sw_view(f.t, 1, bad, &p);
    expect_prefix(st, SW_EVALUE, "View keys must include exactly one key",
                  "view errors stay as they are");
    ok(p == (sw_tensor *)&p, "no view was written on failure");
    fixture_free(&f);
    leak_check(base, "views");
}

/* ------------------------------------------------------------- gate */

typedef struct state {
    int64_t v0, v1, size1;
    int released0, released1;
} state;

static state state_of(const fixture *f) {
    state s = {sw_carrier_version(f->values), sw_carrier_version(f->scales),
               sw_carrier_size(f->scales), sw_carrier_is_released(f->values),
               sw_carrier_is_released(f->scales)};
    return s;
}

static void unchanged(const fixture *f, state before, const char *what) {
    state now = state_of(f);
    ok(now.v0 == before.v0 && now.v1 == before.v1 &&
           now.released0 == before.released0 &&
           now.released1 == before.released1 && now.size1 == before.size1,
       "%s: versions and release states unchanged", what);
}

#define GATE(words) "Multi-subtensor Tensor " words " is not implemented"

static void test_gate(void) {
    int64_t base = sw_debug_live_allocs();
    fixture f;
    fixture_make(&f);
    sw_tensor *t = f.t;
    state s0 = state_of(&f);
    sw_value v = sw_value_f64(0.0);
    sw_status st = sw_tensor_get(t, 0, &v);
    expect_prefix(st, SW_ENOTIMPL, GATE("indexing"), "sw_tensor_get");
    static const int32_t recipe[] = {SW_TOK_LEAF, SW_TOK_LEAF};
    static const int64_t coord[] = {0, 0};
    st = sw_tensor_get_coord(t, 2, recipe, coord, &v);
    expect_prefix(st, SW_ENOTIMPL, GATE("indexing"), "sw_tensor_get_coord");
    sw_value one = sw_value_f64(1.0);
    st = sw_tensor_set(t, 0, &one);
    expect_prefix(st, SW_ENOTIMPL, GATE("mutation"), "sw_tensor_set");
    st = sw_tensor_set_coord(t, 2, recipe, coord, &one);
    expect_prefix(st, SW_ENOTIMPL, GATE("mutation"), "sw_tensor_set_coord");
    unchanged(&f, s0, "element access");

    sw_tensor *out = (sw_tensor *)&out;
    st = sw_add(t, t, &out);
    expect_prefix(st, SW_ENOTIMPL, GATE("operation execution"), "sw_add");
    sw_carrier *plain_c = cpu(6, SW_DTYPE_FLOAT32);
    sw_tensor *plain = NULL;
    sw_tensor_new(plain_c, 0, f.placement0, &plain);
    st = sw_add(plain, t, &out);
    expect_prefix(st, SW_ENOTIMPL, GATE("operation execution"),
                  "sw_add with the multi-subtensor tensor second");
    st = sw_unary("relu", t, &out);
    expect_prefix(st, SW_ENOTIMPL, GATE("operation execution"), "relu");
    st = sw_einops_rearrange(t, "a b -> b a", &out);
    expect_prefix(st, SW_ENOTIMPL, GATE("operation execution"), "rearrange");
    st = sw_tensor_axpy(plain, 1.0, t);
    expect_prefix(st, SW_ENOTIMPL, GATE("operation execution"), "axpy");
    sw_adam h = {0.1, 0.9, 0.99, 1e-8, 0.0, 1};
    st = sw_tensor_adam_step(plain, t, plain, plain, &h);
    expect_prefix(st, SW_ENOTIMPL, GATE("operation execution"), "adam");
    ok(out == (sw_tensor *)&out, "no result was written");
    is_int(sw_carrier_version(plain_c), 0, "the plain operand is untouched");
    unchanged(&f, s0, "operations");

    sw_carrier *dest = NULL;
    sw_cpu_new(0, SW_DTYPE_FLOAT32, 1, 1, &dest);
    st = sw_move(t, dest, &out);
    expect_prefix(st, SW_ENOTIMPL, GATE("operation execution"), "sw_move");
    sw_move_request *req = NULL;
    st = sw_move_async(t, dest, &req);
    expect_prefix(st, SW_ENOTIMPL, GATE("operation execution"),
                  "sw_move_async");
    ok(req == NULL, "no move request");
    is_int(sw_carrier_size(dest), 0, "the destination keeps its size");
    is_int(sw_carrier_version(dest), 0, "and its version");
    unchanged(&f, s0, "moves");

    st = sw_tensor_backward(t, NULL);
    expect_prefix(st, SW_ENOTIMPL, GATE("backward"), "backward");
    st = sw_tensor_backward(plain, t);
    expect_prefix(st, SW_ENOTIMPL, GATE("backward"),
                  "backward with a multi-subtensor gradient");

    int32_t dt = -1, did = -1;
    st = sw_tensor_dlpack_device(t, &dt, &did);
    expect_prefix(st, SW_ENOTIMPL, GATE("DLPack export"), "DLPack device");
    void *m = NULL;
    st = sw_tensor_to_dlpack(t, 1, &m);
    expect_prefix(st, SW_ENOTIMPL, GATE("DLPack export"),
                  "sw_tensor_to_dlpack");
    st = sw_tensor_dlpack_export(t, NULL, NULL, &m);
    expect_prefix(st, SW_ENOTIMPL, GATE("DLPack export"),
                  "sw_tensor_dlpack_export");
    ok(m == NULL && dt == -1, "nothing exported");

    st = sw_carrier_scatter(plain_c, t, plain, f.placement0, 0);
    expect_prefix(st, SW_ENOTIMPL, GATE("scatter"), "scatter from it");
    st = sw_carrier_scatter(f.values, plain, t, f.placement0, 0);
    expect_prefix(st, SW_ENOTIMPL, GATE("scatter"), "scatter onto it");
    is_int(sw_carrier_version(plain_c), 0, "the scatter target is untouched");
    unchanged(&f, s0, "everything rejected");

    st = sw_tensor_require_single(t, (sw_entry)99);
    expect_prefix(st, SW_ENOTIMPL, GATE("operation execution"),
                  "an unknown entry reads as an operation");
    st = sw_tensor_require_single(t, SW_ENTRY_EVICTABLE);
    expect_fail(st, SW_ENOTIMPL,
                "Multi-subtensor Tensor Evictable operation lowering is not "
                "implemented: the tensor has 2 subtensors (CompoundDType "
                "'mx'); only permute and views whose every start is 0 take it",
                "the whole message");

    sw_tensor_unref(plain);
    sw_carrier_unref(plain_c);
    sw_carrier_unref(dest);
    fixture_free(&f);
    sw_einops_cache_clear(); /* it keeps the command it compiled */
    leak_check(base, "gate");
}

/* Views of Evictable planes lower to the primary tier: refused there. */
static void test_evictable(void) {
    int64_t base = sw_debug_live_allocs();
    fixture f;
    fixture_make(&f);
    sw_carrier *e0 = NULL, *e1 = NULL, *sec0 = NULL, *sec1 = NULL;
    sw_carrier *p0 = cpu(6, SW_DTYPE_FLOAT32), *p1 = cpu(2, SW_DTYPE_FLOAT32);
    sw_cpu_new(0, SW_DTYPE_FLOAT32, 1, 1, &sec0);
    sw_cpu_new(0, SW_DTYPE_FLOAT32, 1, 1, &sec1);
    sw_status st = sw_evictable_new(p0, sec0, &e0);
    if (!st)
        st = sw_evictable_new(p1, sec1, &e1);
    sw_tensor *t = NULL;
    if (expect_ok(st, "two Evictable carriers")) {
        sw_dtype storage[2] = {SW_DTYPE_FLOAT32, SW_DTYPE_FLOAT32};
        sw_carrier *carriers[2] = {e0, e1};
        int64_t offsets[2] = {0, 0};
        sw_layout *placements[2] = {f.placement0, f.placement1};
        st = sw_tensor_new_multi(f.mx, 2, storage, carriers, offsets,
                                 placements, 1, &f.adjacent0, &t);
    }
    if (expect_ok(st, "a multi-subtensor tensor over Evictable planes")) {
        int64_t v0 = sw_carrier_version(e0), pv = sw_carrier_version(p0);
        sw_tensor *out = NULL;
        int32_t order[2] = {1, 0};
        st = sw_permute(t, 2, order, &out);
        expect_prefix(st, SW_ENOTIMPL, GATE("Evictable operation lowering"),
                      "permute of Evictable planes");
        sw_view_key keys[2] = {{SW_VIEW_SLICE, 0, 0, 0, 0, 0, 0, 0},
                               {SW_VIEW_SLICE, 0, 0, 0, 0, 0, 0, 0}};
        st = sw_view(t, 2, keys, &out);
        expect_prefix(st, SW_ENOTIMPL, GATE("Evictable operation lowering"),
                      "a view of Evictable planes");
        st = sw_unary("relu", t, &out);
        expect_prefix(st, SW_ENOTIMPL, GATE("operation execution"),
                      "other operations on Evictable planes");
        ok(out == NULL, "no result");
        ok(sw_carrier_version(e0) == v0 && sw_carrier_version(p0) == pv,
           "the Evictable and its tier are untouched");
        ok(!sw_evictable_is_evicted(e0), "and still promoted");
        sw_tensor_unref(t);
    }
    sw_carrier_unref(e1);
    sw_carrier_unref(e0);
    sw_carrier_unref(sec1);
    sw_carrier_unref(sec0);
    sw_carrier_unref(p1);
    sw_carrier_unref(p0);
    fixture_free(&f);
    leak_check(base, "evictable");
}

/* ----------------------------------------------------- fault injection */

typedef sw_status (*fi_fn)(fixture *f, sw_tensor **out);

static sw_status fi_new_multi(fixture *f, sw_tensor **out) {
    sw_dtype storage[2] = {SW_DTYPE_FLOAT32, SW_DTYPE_FLOAT32};
    sw_carrier *carriers[2] = {f->values, f->scales};
    int64_t offsets[2] = {0, 0};
    sw_layout *placements[2] = {f->placement0, f->placement1};
    return sw_tensor_new_multi(f->mx, 2, storage, carriers, offsets, placements,
                               1, &f->adjacent0, out);
}

static sw_status fi_permute(fixture *f, sw_tensor **out) {
    int32_t order[2] = {1, 0};
    return sw_permute(f->t, 2, order, out);
}

static sw_status fi_view(fixture *f, sw_tensor **out) {
    sw_view_key keys[2] = {{SW_VIEW_SLICE, 0, 0, 0, 0, 0, 0, 0},
                           {SW_VIEW_SLICE, 0, 0, 1, 0, 0, 2, 0}};
    return sw_view(f->t, 2, keys, out);
}

static sw_status fi_schema(fixture *f, sw_tensor **out) {
    (void)f;
    sw_dtype planes[2] = {SW_DTYPE_FLOAT32, SW_DTYPE_INT32};
    sw_schema *s = NULL;
    sw_status st = sw_schema_compound_new("scaled", 2, planes, &s);
    sw_schema_unref(s);
    if (!st)
        *out = NULL;
    return st;
}

static void fault_walk(const char *name, fi_fn run) {
    fixture f;
    fixture_make(&f);
    state s0 = state_of(&f);
    int64_t base = sw_debug_live_allocs();
    int failures = 0, steps = 0;
    for (int64_t n = 0; n < 64; ++n) {
        sw_tensor *out = (sw_tensor *)&out;
        sw_clear_error();
        sw_debug_fail_alloc_after(n);
        sw_status st = run(&f, &out);
        sw_debug_fail_alloc_after(-1);
        ++steps;
        if (st == SW_OK) {
            if (out != (sw_tensor *)&out)
                sw_tensor_unref(out);
            break;
        }
        if (st != SW_ENOMEM || out != (sw_tensor *)&out ||
            sw_debug_live_allocs() != base) {
            diag("%s, n=%lld: %s (%s), out %s, live %lld vs %lld", name,
                 (long long)n, S(st), sw_errmsg(),
                 out == (sw_tensor *)&out ? "untouched" : "written",
                 (long long)sw_debug_live_allocs(), (long long)base);
            ++failures;
        }
    }
    ok(failures == 0 && steps > 1,
       "%s: each of %d injected allocation failures is a clean SW_ENOMEM", name,
       steps - 1);
    is_int(sw_debug_live_allocs(), base, "%s: nothing leaked", name);
    unchanged(&f, s0, name);
    fixture_free(&f);
}

static void test_fault_injection(void) {
    fault_walk("sw_tensor_new_multi", fi_new_multi);
    fault_walk("permute of a multi-subtensor tensor", fi_permute);
    fault_walk("view of a multi-subtensor tensor", fi_view);
    fault_walk("sw_schema_compound_new", fi_schema);
}

int main(void) {
    int64_t base = sw_debug_live_allocs();
    test_schemas();
    test_validation();
    test_accessors();
    test_views();
    test_gate();
    test_evictable();
    test_fault_injection();
    is_int(sw_debug_live_allocs(), base, "no allocation is live at the end");
    return done_testing();
}
