/*
 * Layout command strings, an Evictable hierarchy and the profiler from C.
 *
 * A CPU tensor (2,3,2):(1,2,6) lives in an Evictable hierarchy whose
 * secondary tier is a temporary file. The program evicts it (an operation
 * is then refused), promotes it back, and runs a batched einsum under the
 * profiler: every step is an Evictable execution around the CPU execution
 * it lowers to. Finally it moves the result into a plain CPU carrier.
 */
#include <stdio.h>

#include <strideweave/strideweave.h>

#define CHECK(call)                                                            \
    do {                                                                       \
        sw_status st_ = (call);                                                \
        if (st_) {                                                             \
            fprintf(stderr, "%s: %s\n", #call, sw_errmsg());                   \
            goto done;                                                         \
        }                                                                      \
    } while (0)

/* The value of t at its logical index i (0 on failure). */
static double at(const sw_tensor *t, int64_t i) {
    sw_value v = sw_value_f64(0.0);
    return sw_tensor_get(t, i, &v) == SW_OK ? v.as.f : 0.0;
}

int main(void) {
    sw_layout *layout = NULL;
    sw_carrier *primary = NULL, *file = NULL, *hot = NULL, *dest = NULL;
    sw_tensor *a = NULL, *c = NULL, *r = NULL, *moved = NULL;
    sw_profiler *prof = NULL;
    int rc = 1;

    CHECK(sw_layout_parse("(2,3,2):(1,2,6)", &layout));
    CHECK(sw_cpu_new(12, SW_DTYPE_FLOAT32, 1, 0, &primary));
    for (int64_t i = 0; i < 12; ++i) {
        sw_value v = sw_value_f64((double)i);
        CHECK(sw_carrier_set(primary, i, &v));
    }
    CHECK(sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &file));
    CHECK(sw_evictable_new(primary, file, &hot)); /* CPU primary, file tier */
    CHECK(sw_tensor_new(hot, 0, layout, &a));

    /* Evicted, the hierarchy refuses to compute until it is promoted. */
    CHECK(sw_evictable_evict(hot));
    sw_status st = sw_einops_reduce(a, "a k b -> b", &r);
    printf("evicted: %s: %s\n", sw_status_name(st), sw_errmsg());
    CHECK(sw_evictable_promote(hot));

    CHECK(sw_profiler_new(&prof));
    CHECK(sw_profiler_start(prof));
    CHECK(sw_einops_einsum(a, a, "a k b, c k b -> a c b", &c));
    CHECK(sw_profiler_stop(prof));
    int64_t n = 0;
    CHECK(sw_profiler_event_count(prof, &n));
    for (int64_t i = 0; i < n; ++i) {
        sw_profile_event e;
        CHECK(sw_profiler_event(prof, i, &e));
        printf("event %lld  parent %2lld  %-14s %s\n", (long long)e.id,
               (long long)e.parent_id, e.name,
               e.carrier_tag == (const void *)sw_evictable_class() ? "Evictable"
                                                                   : "CPU");
    }

    /* A move copies the values into another carrier and releases the
     * source; c[1,0,1] is at logical index 1 + 0*2 + 1*4. */
    double before = at(c, 5);
    CHECK(sw_cpu_new(sw_layout_cosize(sw_tensor_layout(c)), SW_DTYPE_FLOAT32, 1,
                     0, &dest));
    CHECK(sw_move(c, dest, &moved));
    printf("c[1,0,1] = %g, after the move to CPU: %g\n", before, at(moved, 5));
    if (n == 8 && before == 224.0 && at(moved, 5) == before)
        rc = 0;

done:
    sw_profiler_unref(prof);
    sw_tensor_unref(moved);
    sw_tensor_unref(r);
    sw_tensor_unref(c);
    sw_tensor_unref(a);
    sw_carrier_unref(dest);
    sw_carrier_unref(hot);
    sw_carrier_unref(file);
    sw_carrier_unref(primary);
    sw_layout_unref(layout);
    return rc;
}
