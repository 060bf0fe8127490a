/*
 * A new kind of storage from C: a definition-backed carrier whose values
 * live in a block of doubles the program manages, with a transfer route to
 * CPU, through the public API only (strideweave/extension.h).
 *
 * The program registers the definition for its own class tag, fills a
 * carrier of the class, moves a strided tensor on it to a CPU carrier
 * through the route (which copies the whole physical span, holes
 * included), and prints what arrived.
 */
#include <stdio.h>
#include <stdlib.h>

#include <strideweave/strideweave.h>

#define CHECK(call)                                                            \
    do {                                                                       \
        sw_status st_ = (call);                                                \
        if (st_) {                                                             \
            fprintf(stderr, "%s: %s\n", #call, sw_errmsg());                   \
            goto fail;                                                         \
        }                                                                      \
    } while (0)

/* The class tag: any address the program owns. */
static const char doubles_class = 0;

typedef struct doubles {
    int64_t n;
    double *v;
} doubles;

static sw_status supports(void *ctx, sw_carrier *c, sw_dtype d, int *out) {
    (void)ctx;
    (void)c;
    *out = d == SW_DTYPE_FLOAT32;
    return SW_OK;
}

static sw_status allocate(void *ctx, sw_carrier *c, int64_t slots) {
    (void)ctx;
    doubles *s = malloc(sizeof *s);
    double *v = calloc((size_t)(slots > 0 ? slots : 1), sizeof *v);
    if (!s || !v) {
        free(s);
        free(v);
        return sw_set_error(SW_ENOMEM, "out of memory");
    }
    s->n = slots;
    s->v = v;
    sw_carrier_defined_set_data(c, s);
    return SW_OK;
}

static sw_status store_size(void *ctx, sw_carrier *c, int64_t *out) {
    (void)ctx;
    *out = ((doubles *)sw_carrier_defined_data(c))->n;
    return SW_OK;
}

static sw_status release(void *ctx, sw_carrier *c) {
    (void)ctx;
    doubles *s = sw_carrier_defined_data(c);
    if (s) {
        free(s->v);
        free(s);
        sw_carrier_defined_set_data(c, NULL);
    }
    return SW_OK;
}

static sw_status store_read(void *ctx, sw_carrier *c, int64_t i,
                            sw_value *out) {
    (void)ctx;
    *out = sw_value_f64(((doubles *)sw_carrier_defined_data(c))->v[i]);
    return SW_OK;
}

static sw_status store_write(void *ctx, sw_carrier *c, int64_t i,
                             const sw_value *v) {
    (void)ctx;
    double x = v->kind == SW_VALUE_I64 ? (double)v->as.i : v->as.f;
    ((doubles *)sw_carrier_defined_data(c))->v[i] = x;
    return SW_OK;
}

/* The route to CPU: the request is all the work needs. */
static sw_status prepare(void *ctx, const sw_transfer_request *r, void **work,
                         int *unsupported, char *reason, size_t n) {
    (void)ctx;
    (void)unsupported;
    (void)reason;
    (void)n;
    *work = (void *)r;
    return SW_OK;
}

static sw_status run(void *ctx, void *work) {
    (void)ctx;
    const sw_transfer_request *r = work;
    const doubles *s = sw_carrier_defined_data(sw_tensor_carrier(r->tensor));
    float *out = sw_cpu_data(r->destination);
    for (int64_t i = 0; i < r->physical_span; ++i)
        out[i] = (float)s->v[r->offset + i];
    return SW_OK;
}

int main(void) {
    sw_transfer_route_decl to_cpu = {&doubles_class,
                                     sw_cpu_class(),
                                     "doubles-to-cpu",
                                     NULL,
                                     prepare,
                                     run,
                                     NULL,
                                     NULL};
    sw_carrier_definition def = {
        .version = SW_CARRIER_DEFINITION_VERSION,
        .name = "Doubles",
        .storage = {.version = SW_STORAGE_PROVIDER_VERSION,
                    .supports_dtype = supports,
                    .allocate = allocate,
                    .physical_size = store_size,
                    .release = release,
                    .read = store_read,
                    .write = store_write},
        .nroutes = 1,
        .routes = &to_cpu,
    };
    sw_carrier *store = NULL, *cpu = NULL;
    sw_layout *layout = NULL;
    sw_tensor *t = NULL, *moved = NULL;
    int rc = 1;
    CHECK(sw_carrier_define(&doubles_class, &def));
    CHECK(sw_carrier_defined_new(&doubles_class, &store));
    CHECK(sw_carrier_defined_allocate(store, 7, SW_DTYPE_FLOAT32, 1));
    for (int64_t i = 0; i < 7; ++i) {
        sw_value v = sw_value_f64(0.5 * (double)i);
        CHECK(sw_carrier_set(store, i, &v));
    }
    printf("Doubles carrier: size %lld, version %lld\n",
           (long long)sw_carrier_size(store),
           (long long)sw_carrier_version(store));
    CHECK(sw_layout_parse("4:2", &layout)); /* every other slot */
    CHECK(sw_tensor_new(store, 0, layout, &t));
    CHECK(sw_cpu_new(7, SW_DTYPE_FLOAT32, 1, 0, &cpu));
    sw_set_grad_enabled(0);
    CHECK(sw_move(t, cpu, &moved));
    printf("moved to CPU:");
    for (int64_t i = 0; i < 4; ++i) {
        sw_value v;
        CHECK(sw_tensor_get(moved, i, &v));
        printf(" %.1f", v.as.f);
    }
    printf("\nsource released: %s\n",
           sw_carrier_is_released(store) ? "yes" : "no");
    rc = 0;
fail:
    sw_tensor_unref(moved);
    sw_tensor_unref(t);
    sw_layout_unref(layout);
    sw_carrier_unref(cpu);
    sw_carrier_unref(store);
    return rc;
}
