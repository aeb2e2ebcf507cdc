/*
 * spikes: a service loop with rare, short, known delays.
 *
 * service_work() does one unit of work of 100-300 us (calibrated busy loop).  At random
 * moments, a few times per 100 ms on average (exponential gaps, mean 25 ms), the loop
 * calls rare_delay(), which busy-spins for a random 50-195 us.  The true start and end
 * of every delay (CLOCK_MONOTONIC, ns) are written to OUTFILE, one "start_ns end_ns"
 * line each after a '#' header line, so that a profile's time series can be checked
 * against the truth: an ordinary sampler at 1 ms sees few of these delays at all.
 *
 * The loop makes as few calls as a real service's hot path would: service_work and
 * rare_delay are the only calls, and time is read with the TSC (an instruction, not a
 * call) converted to CLOCK_MONOTONIC with a calibration taken at start and at exit.  So
 * a 16-entry branch record (user calls and returns) spans more than a millisecond of
 * history, as the LBR time-series method expects of a latency-critical loop.
 *
 * usage: spikes OUTFILE [SECONDS] [SEED]     (defaults: 2 s, seed 1)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
/* Helpers that must never become calls, also in -finstrument-functions builds. */
#define INLINE static inline __attribute__((always_inline, no_instrument_function))

#define WORK_MIN_US 100
#define WORK_MAX_US 300
#define DELAY_MIN_US 50
#define DELAY_MAX_US 195 /* 200 minus room for the last clock check */
#define MEAN_GAP_US 25000.0

volatile uint64_t sink;
static uint64_t iters_per_us = 1;
static uint64_t rng_state;

/* A macro, not a function: debug info would otherwise name the inlined loop as a
 * frame of its own. */
#define busy(n)                                                                \
    do {                                                                       \
        uint64_t n_ = (n), x_ = n_ | 1;                                        \
        for (uint64_t i_ = 0; i_ < n_; i_++) {                                 \
            x_ = x_ * 6364136223846793005ULL + 1442695040888963407ULL;         \
            __asm__ volatile("" : "+r"(x_));                                   \
        }                                                                      \
        sink = x_;                                                             \
    } while (0)

static uint64_t mono_ns(void) /* a real clock read; only outside the hot loop */
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
INLINE uint64_t ticks(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}
#else
INLINE uint64_t ticks(void)
{
    return mono_ns();
}
#endif

/* Linear map from ticks to CLOCK_MONOTONIC ns, from two (ticks, ns) pairs. */
static uint64_t cal_ticks0, cal_ns0;
static double ns_per_tick = 1.0;

INLINE uint64_t ticks_to_ns(uint64_t t)
{
    return cal_ns0 + (uint64_t)((double)(t - cal_ticks0) * ns_per_tick);
}

INLINE uint64_t now_ns(void)
{
    return ticks_to_ns(ticks());
}

/* xorshift64* */
INLINE uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

INLINE uint64_t rnd_range(uint64_t lo, uint64_t hi) /* inclusive */
{
    return lo + rnd() % (hi - lo + 1);
}

INLINE double rnd_unit(void) /* (0, 1] */
{
    return ((double)(rnd() >> 11) + 1.0) / 9007199254740992.0;
}

/* Measures the busy loop's speed and the tick rate over the same ~50 ms. */
NOINLINE void calibrate(void)
{
    cal_ticks0 = ticks();
    cal_ns0 = mono_ns();
    uint64_t n = 1000;
    for (;;) {
        uint64_t t0 = mono_ns();
        busy(n);
        uint64_t t1 = mono_ns();
        uint64_t dt = t1 - t0;
        if (dt >= 50000000ULL || n >= (1ULL << 40)) {
            iters_per_us = dt ? n * 1000ULL / dt : n;
            if (iters_per_us == 0)
                iters_per_us = 1;
            uint64_t dticks = ticks() - cal_ticks0;
            ns_per_tick = dticks ? (double)(mono_ns() - cal_ns0) / (double)dticks : 1.0;
            return;
        }
        n *= 2;
    }
}

/* Refits the tick rate over the whole run so that converted times stay within a few
 * hundred ns of CLOCK_MONOTONIC however long the run; returns the new ns per tick. */
static void recalibrate(void)
{
    uint64_t t = ticks(), ns = mono_ns();
    if (t > cal_ticks0)
        ns_per_tick = (double)(ns - cal_ns0) / (double)(t - cal_ticks0);
}

/* One request's worth of work, 100-300 us. */
NOINLINE void service_work(uint64_t us)
{
    busy(us * iters_per_us);
}

/* The rare delay: spin until `us` microseconds have passed.  Returns the true start
 * and end in ticks (converted once the run's calibration is final). */
NOINLINE void rare_delay(uint64_t us, uint64_t *start, uint64_t *end)
{
    uint64_t t0 = ticks();
    uint64_t deadline = t0 + (uint64_t)((double)us * 1000.0 / ns_per_tick);
    uint64_t t = t0;
    uint64_t chunk = iters_per_us / 4 + 1;
    while (t < deadline) {
        busy(chunk);
        t = ticks();
    }
    *start = t0;
    *end = t;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        fprintf(stderr, "usage: %s OUTFILE [SECONDS] [SEED]   (defaults: 2 s, seed 1)\n", argv[0]);
        return argc < 2 ? 2 : 0;
    }
    const char *outfile = argv[1];
    double seconds = 2.0;
    unsigned long long seed = 1;
    if (argc > 2) {
        char *end = NULL;
        errno = 0;
        seconds = strtod(argv[2], &end);
        if (errno != 0 || end == argv[2] || *end != '\0' || !(seconds > 0.0) || seconds > 86400.0) {
            fprintf(stderr, "spikes: SECONDS must be a number in (0, 86400], got '%s'\n", argv[2]);
            return 2;
        }
    }
    if (argc > 3) {
        char *end = NULL;
        errno = 0;
        seed = strtoull(argv[3], &end, 10);
        if (errno != 0 || end == argv[3] || *end != '\0') {
            fprintf(stderr, "spikes: SEED must be an unsigned integer, got '%s'\n", argv[3]);
            return 2;
        }
    }
    rng_state = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
    if (rng_state == 0)
        rng_state = 1;

    FILE *out = fopen(outfile, "w");
    if (out == NULL) {
        fprintf(stderr, "spikes: cannot create %s: %s\n", outfile, strerror(errno));
        return 1;
    }

    calibrate();
    /* Room for twice the expected count plus slack; extra delays beyond it are not run. */
    size_t cap = (size_t)(seconds * 1e6 / MEAN_GAP_US * 2.0) + 64;
    uint64_t *starts = malloc(cap * sizeof(uint64_t));
    uint64_t *ends = malloc(cap * sizeof(uint64_t));
    if (starts == NULL || ends == NULL) {
        fprintf(stderr, "spikes: out of memory\n");
        fclose(out);
        return 1;
    }

    printf("spikes: pid %d seconds %.3f seed %llu outfile %s\n", (int)getpid(), seconds, seed, outfile);
    printf("spikes: calibration %llu busy-loop iterations per us\n", (unsigned long long)iters_per_us);
    printf("spikes: service_work %d-%d us per unit, rare_delay %d-%d us, mean gap %.0f us\n",
           WORK_MIN_US, WORK_MAX_US, DELAY_MIN_US, DELAY_MAX_US, MEAN_GAP_US);
    fflush(stdout);

    uint64_t begin = now_ns();
    uint64_t stop = begin + (uint64_t)(seconds * 1e9);
    uint64_t next_delay = begin + (uint64_t)(-log(rnd_unit()) * MEAN_GAP_US * 1000.0);
    size_t ndelays = 0;
    uint64_t units = 0, delay_total_ns = 0, dmin = UINT64_MAX, dmax = 0;
    uint64_t t = begin;
    while (t < stop) {
        service_work(rnd_range(WORK_MIN_US, WORK_MAX_US));
        units++;
        t = now_ns();
        if (t >= next_delay && t < stop) {
            if (ndelays < cap) {
                rare_delay(rnd_range(DELAY_MIN_US, DELAY_MAX_US), &starts[ndelays], &ends[ndelays]);
                uint64_t d = (uint64_t)((double)(ends[ndelays] - starts[ndelays]) * ns_per_tick);
                delay_total_ns += d;
                if (d < dmin) dmin = d;
                if (d > dmax) dmax = d;
                ndelays++;
                t = now_ns();
            }
            next_delay = t + (uint64_t)(-log(rnd_unit()) * MEAN_GAP_US * 1000.0);
        }
    }
    uint64_t elapsed = now_ns() - begin;
    recalibrate();
    for (size_t i = 0; i < ndelays; i++) {
        starts[i] = ticks_to_ns(starts[i]);
        ends[i] = ticks_to_ns(ends[i]);
    }

    fprintf(out, "# kairos spikes: true rare_delay intervals, CLOCK_MONOTONIC ns, pid %d seed %llu; columns: start_ns end_ns\n",
            (int)getpid(), seed);
    for (size_t i = 0; i < ndelays; i++)
        fprintf(out, "%llu %llu\n", (unsigned long long)starts[i], (unsigned long long)ends[i]);
    if (fclose(out) != 0) {
        fprintf(stderr, "spikes: cannot write %s: %s\n", outfile, strerror(errno));
        return 1;
    }

    printf("spikes: elapsed %.6f s, %llu service units\n", (double)elapsed * 1e-9, (unsigned long long)units);
    printf("spikes: delays %zu\n", ndelays);
    if (ndelays > 0)
        printf("spikes: delay min %.1f us max %.1f us mean %.1f us total %.3f ms\n",
               (double)dmin / 1e3, (double)dmax / 1e3, (double)delay_total_ns / 1e3 / (double)ndelays,
               (double)delay_total_ns / 1e6);
    printf("spikes: wrote %s\n", outfile);
    free(starts);
    free(ends);
    return 0;
}
