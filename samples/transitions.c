/*
 * transitions: the function-transition patterns of the LBR paper (seeds/004).
 *
 *   Figure 10: p3 loops 100 times calling p3_A -> p3_f1 -> p3_f2 -> (p3_B, p3_C);
 *              p3_B and p3_C do a little busy work (about 1 us and 2 us).
 *   Figure 8:  F1, F2, F3 are called in turn with run-time shares 10:30:10.
 *
 * main alternates the two patterns ITER times.  The busy loops are calibrated once at
 * start (loop iterations per microsecond), so the shares hold on any machine: one p3()
 * call takes about 300 us and one F1,F2,F3 round about 300 us too (60, 180, 60 us),
 * which makes F1, F2, F3 10%, 30% and 10% of the whole run, as in the paper's example.
 *
 * usage: transitions [ITER]        (default 3300, about 2 s)
 *
 * Compiled with frame pointers and without inlining; every function below is
 * noinline, and the busy loop is a macro so it adds no call of its own: the
 * only user-mode calls and returns are the ones of the pattern (plus the time
 * stamps, which on x86-64 are the rdtsc instruction, not a call).
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

/* Busy-work sizes in microseconds. */
#define P3_LOOPS 100
#define P3_B_US 1.0
#define P3_C_US 2.0

static const double f_share[3] = {10.0, 30.0, 10.0};

static uint64_t iters_per_us_x1000; /* calibrated loop iterations per microsecond, x1000 */
static uint64_t iters_b, iters_c, iters_f[3];
volatile uint64_t sink;

/* A macro, not an inline function: debug info would otherwise name the inlined loop
 * as a frame of its own, and every sample's innermost function would be "busy". */
#define busy(n)                                                                \
    do {                                                                       \
        uint64_t n_ = (n), x_ = n_ | 1;                                        \
        for (uint64_t i_ = 0; i_ < n_; i_++) {                                 \
            x_ = x_ * 6364136223846793005ULL + 1442695040888963407ULL;         \
            __asm__ volatile("" : "+r"(x_));                                   \
        }                                                                      \
        sink = x_;                                                             \
    } while (0)

static inline __attribute__((always_inline)) uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
#endif
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

NOINLINE void calibrate(void)
{
    uint64_t n = 1000;
    for (;;) {
        uint64_t t0 = now_ns();
        busy(n);
        uint64_t dt = now_ns() - t0;
        if (dt >= 50000000ULL || n >= (1ULL << 40)) {
            if (dt == 0)
                dt = 1;
            iters_per_us_x1000 = n * 1000000ULL / dt;
            if (iters_per_us_x1000 == 0)
                iters_per_us_x1000 = 1;
            return;
        }
        n *= 2;
    }
}

static uint64_t iters_for_us(double us)
{
    double n = us * (double)iters_per_us_x1000 / 1000.0;
    return n < 1.0 ? 1 : (uint64_t)n;
}

/* ---- figure 10 ---- */
NOINLINE void p3_B(void) { busy(iters_b); }
NOINLINE void p3_C(void) { busy(iters_c); }
NOINLINE void p3_f2(void)
{
    p3_B();
    p3_C();
}
NOINLINE void p3_f1(void) { p3_f2(); }
NOINLINE void p3_A(void) { p3_f1(); }
NOINLINE void p3(void)
{
    for (int i = 0; i < P3_LOOPS; i++)
        p3_A();
}

/* ---- figure 8 ---- */
NOINLINE void F1(void) { busy(iters_f[0]); }
NOINLINE void F2(void) { busy(iters_f[1]); }
NOINLINE void F3(void) { busy(iters_f[2]); }

static uint64_t f_ticks[3], p3_ticks;

NOINLINE void fig8(void)
{
    uint64_t t0 = ticks();
    F1();
    uint64_t t1 = ticks();
    F2();
    uint64_t t2 = ticks();
    F3();
    uint64_t t3 = ticks();
    f_ticks[0] += t1 - t0;
    f_ticks[1] += t2 - t1;
    f_ticks[2] += t3 - t2;
}

NOINLINE void fig10(void)
{
    uint64_t t0 = ticks();
    p3();
    p3_ticks += ticks() - t0;
}

int main(int argc, char **argv)
{
    unsigned long iter = 3300;
    if (argc > 1) {
        if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
            fprintf(stderr, "usage: %s [ITER]   (default 3300, about 2 s)\n", argv[0]);
            return 0;
        }
        char *end = NULL;
        errno = 0;
        iter = strtoul(argv[1], &end, 10);
        if (errno != 0 || end == argv[1] || *end != '\0' || iter == 0) {
            fprintf(stderr, "transitions: ITER must be a positive integer, got '%s'\n", argv[1]);
            return 2;
        }
    }

    calibrate();
    iters_b = iters_for_us(P3_B_US);
    iters_c = iters_for_us(P3_C_US);
    /* One F round lasts as long as one p3() call: 100 * (1 + 2) us = 300 us,
     * split 10:30:10 -> 60, 180, 60 us. */
    double round_us = P3_LOOPS * (P3_B_US + P3_C_US);
    double share_sum = f_share[0] + f_share[1] + f_share[2];
    double f_us[3];
    for (int i = 0; i < 3; i++) {
        f_us[i] = round_us * f_share[i] / share_sum;
        iters_f[i] = iters_for_us(f_us[i]);
    }

    printf("transitions: pid %d ITER %lu\n", (int)getpid(), iter);
    printf("transitions: calibration %.3f busy-loop iterations per us\n",
           (double)iters_per_us_x1000 / 1000.0);
    printf("transitions: fig10 p3: %d x p3_A->p3_f1->p3_f2->(p3_B %.1f us, p3_C %.1f us)\n",
           P3_LOOPS, P3_B_US, P3_C_US);
    printf("transitions: fig8 F1 %.1f us, F2 %.1f us, F3 %.1f us per call (10:30:10)\n",
           f_us[0], f_us[1], f_us[2]);
    fflush(stdout);

    uint64_t w0 = now_ns();
    uint64_t tk0 = ticks();
    for (unsigned long i = 0; i < iter; i++) {
        fig10();
        fig8();
    }
    uint64_t total_ticks = ticks() - tk0;
    uint64_t wall = now_ns() - w0;
    if (total_ticks == 0)
        total_ticks = 1;

    uint64_t f_total = f_ticks[0] + f_ticks[1] + f_ticks[2];
    if (f_total == 0)
        f_total = 1;
    printf("transitions: elapsed %.6f s\n", (double)wall * 1e-9);
    static const char *names[3] = {"F1", "F2", "F3"};
    for (int i = 0; i < 3; i++) {
        printf("transitions: %s share of run %.4f (expected %.4f), of F1+F2+F3 %.4f (expected %.4f)\n",
               names[i], (double)f_ticks[i] / (double)total_ticks, f_share[i] / 100.0,
               (double)f_ticks[i] / (double)f_total, f_share[i] / share_sum);
    }
    printf("transitions: p3 share of run %.4f (expected 0.5000)\n",
           (double)p3_ticks / (double)total_ticks);
    printf("transitions: checksum %llu\n", (unsigned long long)(sink & 0xffff));
    return 0;
}
