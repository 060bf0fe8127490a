/*
 * Times the layout functions of the C library: nanoseconds per call, the
 * minimum over several repeats of a timed loop (the minimum is the run least
 * disturbed by the rest of the machine). Not a test: nothing is asserted
 * about speed; a failing call stops the program with its message.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <strideweave/strideweave.h>

enum { REPEATS = 7, TARGET_NS = 20000000 };

/* Inputs shared by every case; set up once in main. */
static sw_layout *hier;       /* (2,(3,4),5,(2,2)):(1,(2,6),24,(120,240)) */
static sw_layout *mat;        /* (6,2):(8,2) */
static sw_layout *mat_b;      /* (4,3):(3,1) */
static sw_layout *big;        /* (9,(4,8)):(59,(13,1)) */
static sw_layout *tiler[2];   /* 3:3, (2,4):(1,8) */
static sw_layout *lin;        /* 24:1 */
static sw_layout *tile;       /* 4:2 */
static sw_layout *nested;     /* ((2,(3,4)),(3,2),1):((4,(8,24)),(2,6),12) */
static sw_layout *blocks;     /* (2,4):(1,6) */
static sw_layout *perm;       /* (2,4,6):(4,1,8) */
static volatile int64_t sink; /* keeps the compiler from dropping calls */

static void die(const char *what, sw_status st) {
    fprintf(stderr, "%s failed: %s: %s\n", what, sw_status_name(st),
            sw_errmsg());
    exit(1);
}

static void check(const char *what, sw_status st) {
    if (st != SW_OK)
        die(what, st);
}

/* One case runs its call n times; calls that make a layout release it. */
typedef void (*bench_fn)(int64_t n);

static void run_index(int64_t n) {
    int64_t acc = 0, v;
    for (int64_t i = 0; i < n; i++) {
        check("sw_layout_index", sw_layout_index(hier, 173, &v));
        acc += v;
    }
    sink = acc;
}

static void run_index_coord(int64_t n) {
    /* (1,(2,3),4,(1,0)) */
    static const int32_t recipe[] = {
        SW_TOK_LEAF, SW_TOK_PUSH, SW_TOK_LEAF, SW_TOK_LEAF, SW_TOK_POP,
        SW_TOK_LEAF, SW_TOK_PUSH, SW_TOK_LEAF, SW_TOK_LEAF, SW_TOK_POP};
    static const int64_t values[] = {1, 2, 3, 4, 1, 0};
    int64_t acc = 0, v;
    for (int64_t i = 0; i < n; i++) {
        check("sw_layout_index_coord",
              sw_layout_index_coord(hier, 10, recipe, values, &v));
        acc += v;
    }
    sink = acc;
}

static void run_compose(int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        sw_layout *r = NULL;
        check("sw_layout_compose", sw_layout_compose(mat, mat_b, &r));
        sw_layout_unref(r);
    }
}

static void run_divide(int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        sw_layout *r = NULL;
        check("sw_layout_divide", sw_layout_divide(lin, tile, &r));
        sw_layout_unref(r);
    }
}

static void run_zipped_divide(int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        sw_layout *r = NULL;
        check("sw_layout_zipped_divide",
              sw_layout_zipped_divide(big, 2, tiler, &r));
        sw_layout_unref(r);
    }
}

static void run_coalesce(int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        sw_layout *r = NULL;
        check("sw_layout_coalesce", sw_layout_coalesce(nested, &r));
        sw_layout_unref(r);
    }
}

static void run_complement(int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        sw_layout *r = NULL;
        check("sw_layout_complement", sw_layout_complement(blocks, 24, &r));
        sw_layout_unref(r);
    }
}

static void run_right_inverse(int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        sw_layout *r = NULL;
        check("sw_layout_right_inverse", sw_layout_right_inverse(perm, &r));
        sw_layout_unref(r);
    }
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Grows the loop until one run takes about TARGET_NS, then keeps the best of
 * REPEATS runs of that length. */
static double time_case(bench_fn fn) {
    int64_t n = 1;
    for (;;) {
        int64_t t0 = now_ns();
        fn(n);
        int64_t dt = now_ns() - t0;
        if (dt >= TARGET_NS / 10 || n >= ((int64_t)1 << 40))
            break;
        n *= 10;
    }
    double best = -1.0;
    for (int r = 0; r < REPEATS; r++) {
        int64_t t0 = now_ns();
        fn(n);
        double per = (double)(now_ns() - t0) / (double)n;
        if (best < 0.0 || per < best)
            best = per;
    }
    return best;
}

static sw_layout *parse(const char *text) {
    sw_layout *l = NULL;
    check(text, sw_layout_parse(text, &l));
    return l;
}

int main(void) {
    hier = parse("(2,(3,4),5,(2,2)):(1,(2,6),24,(120,240))");
    mat = parse("(6,2):(8,2)");
    mat_b = parse("(4,3):(3,1)");
    big = parse("(9,(4,8)):(59,(13,1))");
    tiler[0] = parse("3:3");
    tiler[1] = parse("(2,4):(1,8)");
    lin = parse("24:1");
    tile = parse("4:2");
    nested = parse("((2,(3,4)),(3,2),1):((4,(8,24)),(2,6),12)");
    blocks = parse("(2,4):(1,6)");
    perm = parse("(2,4,6):(4,1,8)");

    static const struct {
        const char *name;
        const char *args;
        bench_fn fn;
    } cases[] = {
        {"sw_layout_index", "rank-4 hierarchical, i = 173", run_index},
        {"sw_layout_index_coord", "same, (1,(2,3),4,(1,0))", run_index_coord},
        {"sw_layout_compose", "(6,2):(8,2) o (4,3):(3,1)", run_compose},
        {"sw_layout_divide", "24:1 / 4:2", run_divide},
        {"sw_layout_zipped_divide", "(9,(4,8)):(59,(13,1)), 2 tiles",
         run_zipped_divide},
        {"sw_layout_coalesce", "((2,(3,4)),(3,2),1):...", run_coalesce},
        {"sw_layout_complement", "(2,4):(1,6), cotarget 24", run_complement},
        {"sw_layout_right_inverse", "(2,4,6):(4,1,8)", run_right_inverse},
    };

    printf("StrideWeave %s, C layout functions (min of %d repeats)\n\n",
           sw_version(), REPEATS);
    printf("%-24s %-34s %10s\n", "function", "arguments", "ns/call");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        printf("%-24s %-34s %10.1f\n", cases[i].name, cases[i].args,
               time_case(cases[i].fn));

    sw_layout *all[] = {hier, mat,  mat_b,  big,    tiler[0], tiler[1],
                        lin,  tile, nested, blocks, perm};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sw_layout_unref(all[i]);
    return 0;
}
