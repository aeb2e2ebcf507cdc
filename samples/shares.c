/*
 * shares: spends known shares of its CPU time in three functions, for checking a profile's
 * function shares against the truth (the agent's test sends its windows through an
 * OpenTelemetry Collector and compares what came out).
 *
 * usage: shares [SECONDS] [A:B:C]   (5.0, 5:3:2)
 *
 * Each round runs share_a for A units, share_b for B units and share_c for C units of the thread's
 * CPU time (CLOCK_THREAD_CPUTIME_ID, what a cpu-clock profile samples), each a loop of
 * arithmetic calling only the clock, until SECONDS of wall time have passed. Prints
 *   shares: pid P rounds R share_a X share_b Y share_c Z
 * with each function's measured part of the CPU time the three took. A unit is 1.37 ms:
 * a round whose length is near a multiple of the sampling period would have its samples
 * fall at the same points of every round, and the shares seen would depend on where.
 * Exit status 0, 2 on a usage error.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

#define UNIT_MS 1.37

static double now(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Spins until `ms` of this thread's CPU time have passed; returns the time spent. The
 * clock is read every 4096 steps so that the reads are a negligible part of the time. */
#define SPIN(name, step)                                                      \
    __attribute__((noinline, noipa)) static double name(double ms)            \
    {                                                                         \
        double start = now(CLOCK_THREAD_CPUTIME_ID), t = start;               \
        unsigned long x = sink;                                               \
        while (t - start < ms / 1000) {                                       \
            for (int i = 0; i < 4096; i++)                                    \
                x = x * 6364136223846793005UL + (step);                        \
            t = now(CLOCK_THREAD_CPUTIME_ID);                                 \
        }                                                                     \
        sink = x;                                                             \
        return t - start;                                                     \
    }
/* Each with its own constant, and noipa: identical functions would be folded into one. */
SPIN(share_a, 1442695040888963407UL)
SPIN(share_b, 1442695040888963409UL)
SPIN(share_c, 1442695040888963411UL)

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 5.0;
    double a = 5, b = 3, c = 2;
    if (argc > 2 && sscanf(argv[2], "%lf:%lf:%lf", &a, &b, &c) != 3) {
        fprintf(stderr, "usage: shares [SECONDS] [A:B:C]\n");
        return 2;
    }
    if (seconds <= 0 || a < 0 || b < 0 || c < 0 || a + b + c <= 0) {
        fprintf(stderr, "usage: shares [SECONDS] [A:B:C]\n");
        return 2;
    }
    double ta = 0, tb = 0, tc = 0, end = now(CLOCK_MONOTONIC) + seconds;
    long rounds = 0;
    while (now(CLOCK_MONOTONIC) < end) {
        ta += share_a(a * UNIT_MS);
        tb += share_b(b * UNIT_MS);
        tc += share_c(c * UNIT_MS);
        rounds++;
    }
    double all = ta + tb + tc;
    printf("shares: pid %d rounds %ld share_a %.4f share_b %.4f share_c %.4f\n", (int)getpid(), rounds,
           ta / all, tb / all, tc / all);
    return 0;
}
