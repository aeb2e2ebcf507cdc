/*
 * matrix: dense NUM x NUM double matrix multiply, two loop orders.
 *
 * The program of the VTune page-fault recipe (seeds/000): three matrices allocated
 * with malloc, initialised, multiplied.  The naive (i,j,k) order walks matrix b
 * column-wise (one cache line and, for large NUM, one page per step); the
 * interchanged (i,k,j) order walks b and c row-wise.
 *
 * usage: matrix [NUM] [naive|interchange|both]      (defaults: 512 both)
 *
 * Built by crates/cli/build.rs with frame pointers and without inlining, so
 * init_matrices, multiply_naive and multiply_interchange are real functions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* a[i][j] = i + j, b[i][j] = i - j (scaled), c = 0; touching every page here is
 * where the first-touch page faults happen. */
NOINLINE void init_matrices(size_t n, double *a, double *b, double *c)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            a[i * n + j] = (double)(i + j) / (double)n;
            b[i * n + j] = ((double)i - (double)j) / (double)n;
            c[i * n + j] = 0.0;
        }
    }
}

NOINLINE void clear_matrix(size_t n, double *c)
{
    memset(c, 0, n * n * sizeof(double));
}

/* c += a * b, loop order i, j, k: the inner loop strides through b by n doubles. */
NOINLINE void multiply_naive(size_t n, const double *a, const double *b, double *c)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            double sum = c[i * n + j];
            for (size_t k = 0; k < n; k++)
                sum += a[i * n + k] * b[k * n + j];
            c[i * n + j] = sum;
        }
    }
}

/* c += a * b, loop order i, k, j: unit stride on b and c.  Every c[i][j] receives
 * its products in the same k order as in multiply_naive, so both checksums agree. */
NOINLINE void multiply_interchange(size_t n, const double *a, const double *b, double *c)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < n; k++) {
            double aik = a[i * n + k];
            for (size_t j = 0; j < n; j++)
                c[i * n + j] += aik * b[k * n + j];
        }
    }
}

NOINLINE double checksum(size_t n, const double *c)
{
    double s = 0.0;
    for (size_t i = 0; i < n * n; i++)
        s += c[i];
    return s;
}

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [NUM] [naive|interchange|both]   (default: 512 both)\n", argv0);
}

int main(int argc, char **argv)
{
    size_t n = 512;
    const char *variant = "both";

    if (argc > 1) {
        if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
            usage(argv[0]);
            return 0;
        }
        char *end = NULL;
        errno = 0;
        unsigned long v = strtoul(argv[1], &end, 10);
        if (errno != 0 || end == argv[1] || *end != '\0' || v == 0 || v > 65536) {
            fprintf(stderr, "matrix: NUM must be an integer in 1..65536, got '%s'\n", argv[1]);
            usage(argv[0]);
            return 2;
        }
        n = (size_t)v;
    }
    if (argc > 2)
        variant = argv[2];
    int do_naive = strcmp(variant, "naive") == 0 || strcmp(variant, "both") == 0;
    int do_inter = strcmp(variant, "interchange") == 0 || strcmp(variant, "both") == 0;
    if (!do_naive && !do_inter) {
        fprintf(stderr, "matrix: variant must be naive, interchange or both, got '%s'\n", variant);
        usage(argv[0]);
        return 2;
    }

    size_t bytes = n * n * sizeof(double);
    printf("matrix: pid %d NUM %zu variant %s\n", (int)getpid(), n, variant);
    printf("matrix: 3 matrices of %zu bytes each, %zu bytes in total (malloc)\n", bytes, 3 * bytes);
    fflush(stdout);

    double *a = malloc(bytes);
    double *b = malloc(bytes);
    double *c = malloc(bytes);
    if (a == NULL || b == NULL || c == NULL) {
        fprintf(stderr, "matrix: cannot allocate 3 x %zu bytes\n", bytes);
        return 1;
    }
    printf("matrix: a=%p b=%p c=%p\n", (void *)a, (void *)b, (void *)c);

    double t0 = now_s();
    init_matrices(n, a, b, c);
    printf("matrix: init %.6f s\n", now_s() - t0);

    double sum_naive = 0.0, sum_inter = 0.0;
    if (do_naive) {
        t0 = now_s();
        multiply_naive(n, a, b, c);
        double t = now_s() - t0;
        sum_naive = checksum(n, c);
        printf("matrix: naive (i,j,k) %.6f s checksum %.6e\n", t, sum_naive);
        fflush(stdout);
    }
    if (do_inter) {
        clear_matrix(n, c);
        t0 = now_s();
        multiply_interchange(n, a, b, c);
        double t = now_s() - t0;
        sum_inter = checksum(n, c);
        printf("matrix: interchange (i,k,j) %.6f s checksum %.6e\n", t, sum_inter);
    }
    if (do_naive && do_inter) {
        double diff = sum_naive - sum_inter;
        if (diff < 0)
            diff = -diff;
        double scale = sum_naive < 0 ? -sum_naive : sum_naive;
        int same = diff <= 1e-9 * (scale > 1.0 ? scale : 1.0);
        printf("matrix: checksums %s\n", same ? "match" : "DIFFER");
        if (!same) {
            free(a); free(b); free(c);
            return 1;
        }
    }
    free(a);
    free(b);
    free(c);
    return 0;
}
