/*
 * mallocs: N malloc/free pairs (default 2,000,000) of small varying sizes, for measuring
 * the per-call cost of allocation trackers (bench/memtrack_vs_heaptrack.sh).
 *
 * usage: mallocs [N]
 *
 * Each pair is malloc, one byte written (so the call cannot be optimised away), free.
 * Prints N and the elapsed time of the loop.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static char *volatile sink;

NOINLINE void pairs(long n)
{
    for (long i = 0; i < n; i++) {
        char *p = malloc(16 + (size_t)(i & 63));
        if (!p) exit(1);
        p[0] = (char)i;
        sink = p;
        free(p);
    }
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 2000000;
    if (n < 0) {
        fprintf(stderr, "usage: mallocs [N]\n");
        return 2;
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pairs(n);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("pairs=%ld seconds=%.6f\n", n, (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9);
    return 0;
}
