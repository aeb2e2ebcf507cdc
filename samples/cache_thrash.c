/*
 * cache_thrash: the noisy neighbour of the cache-allocation recipe. It streams through a
 * large buffer (64 MiB, far larger than any L2/L3), reading and writing one 8-byte word
 * per 64-byte line in stream_pass, so it keeps filling every cache way it may use and
 * evicts whatever a neighbour on the same cache left there.
 *
 * usage: cache_thrash [--size BYTES] [--seconds S] [--cpu C]   (64 MiB, 10 s, no pinning)
 * Output: "cache_thrash: passes P bytes B seconds S gbs G" (G = lines touched x 64 / s)
 * Stops early, still printing the line, on SIGINT or SIGTERM.
 * Exit status: 0, 2 on a usage error, 1 on a run-time error.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

NOINLINE void stream_pass(volatile uint64_t *buf, size_t bytes) {
    for (size_t i = 0; i < bytes / 8; i += 8)
        buf[i] += 1;
}

int main(int argc, char **argv) {
    long size = 64L << 20, cpu = -1;
    double seconds = 10.0;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (i + 1 >= argc) goto usage;
        if (!strcmp(argv[i], "--size")) size = strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--cpu")) cpu = strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--seconds")) seconds = strtod(argv[++i], &end);
        else goto usage;
        if (!end || *end) goto usage;
    }
    if (size < 4096 || seconds <= 0) goto usage;
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((int)cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set)) { perror("cache_thrash: sched_setaffinity"); return 1; }
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    uint64_t *buf = calloc(1, (size_t)size);
    if (!buf) { fprintf(stderr, "cache_thrash: out of memory\n"); return 1; }
    double t0 = now_s(), t = t0;
    long passes = 0;
    while (!stop && t - t0 < seconds) {
        stream_pass(buf, (size_t)size);
        passes++;
        t = now_s();
    }
    printf("cache_thrash: passes %ld bytes %ld seconds %.3f gbs %.2f\n", passes, size, t - t0,
           (double)passes * (double)size / (t - t0) / 1e9);
    return 0;
usage:
    fprintf(stderr, "usage: cache_thrash [--size BYTES] [--seconds S] [--cpu C]\n");
    return 2;
}
