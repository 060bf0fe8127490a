/*
 * A minimal StrideWeave program: parse a layout, divide it by a tile, print
 * the result and one of its indices, then show what a rejected call reports.
 *
 * Every fallible call returns an sw_status; on failure sw_errmsg() names the
 * rule that was broken. Every layout the program receives is an owned
 * reference, released at the single exit label (release accepts NULL).
 *
 * Build against an installed library with
 *     cc layout_divide.c $(pkg-config --cflags --libs strideweave)
 */
#include <stdio.h>
#include <stdlib.h>

#include <strideweave/strideweave.h>

/* Reports a failed call and returns non-zero; returns 0 for SW_OK. */
static int failed(const char *what, sw_status st) {
    if (st == SW_OK)
        return 0;
    fprintf(stderr, "%s: %s: %s\n", what, sw_status_name(st), sw_errmsg());
    return 1;
}

/* Prints "label  shape:stride"; a first, empty call sizes the text. */
static int print_layout(const char *label, const sw_layout *layout) {
    int64_t len = sw_layout_format(layout, NULL, 0);
    char *text = malloc((size_t)len + 1);
    if (text == NULL)
        return failed("malloc", SW_ENOMEM);
    sw_layout_format(layout, text, len + 1);
    printf("%-8s %s\n", label, text);
    free(text);
    return 0;
}

int main(void) {
    sw_layout *a = NULL, *tile = NULL, *divided = NULL;
    sw_layout *twelve = NULL, *five = NULL, *never = NULL;
    static const int32_t recipe[] = {SW_TOK_LEAF, SW_TOK_LEAF};
    static const int64_t coord[] = {1, 2};
    int64_t by_coord = 0, by_int = 0;
    sw_status st;
    int rc = 1;

    /* A / B = A o (B, complement(B, size(A))): mode 0 walks one tile, mode 1
     * picks the tile. */
    if (failed("parse A", sw_layout_parse("(4,2,3):(2,1,8)", &a)) ||
        failed("parse B", sw_layout_parse("4:2", &tile)) ||
        failed("divide", sw_layout_divide(a, tile, &divided)))
        goto done;
    if (print_layout("A", a) || print_layout("B", tile) ||
        print_layout("A / B", divided))
        goto done;

    /* Element 1 of tile 2: the coordinate (1,2), or the integer 1 + 4*2. */
    if (failed("index (1,2)",
               sw_layout_index_coord(divided, 2, recipe, coord, &by_coord)) ||
        failed("index 9", sw_layout_index(divided, 9, &by_int)))
        goto done;
    printf("(A / B)((1,2)) = %lld, (A / B)(9) = %lld\n", (long long)by_coord,
           (long long)by_int);

    /* A call that breaks a rule returns a status, writes nothing and says
     * why: 5 does not divide 12. */
    if (failed("leaf 12:1", sw_layout_leaf(12, 1, &twelve)) ||
        failed("leaf 5:1", sw_layout_leaf(5, 1, &five)))
        goto done;
    st = sw_layout_divide(twelve, five, &never);
    printf("12:1 / 5:1 -> %s: %s\n", sw_status_name(st), sw_errmsg());
    if (st == SW_EVALUE && never == NULL && by_coord == by_int)
        rc = 0;

done:
    sw_layout_unref(never);
    sw_layout_unref(five);
    sw_layout_unref(twelve);
    sw_layout_unref(divided);
    sw_layout_unref(tile);
    sw_layout_unref(a);
    return rc;
}
