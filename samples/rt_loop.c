/*
 * rt_loop: the real-time loop of the cache-allocation recipe. Every PERIOD (10 ms) it
 * wakes at an absolute deadline and reads its whole buffer (128 KB, one 8-byte load per
 * 64-byte line, in read_buffer) and prints how long that read took: with the buffer in
 * cache the read is fast; when a neighbour evicted it between two periods, every line
 * misses and the read is slow. That latency is the figure the recipe watches.
 *
 * With $KAIROS_PSEUDO_LOCK set (kairos run --cache-ways N --lock) the buffer is mapped
 * from that pseudo-locked region (/dev/pseudo_lock/NAME) instead of malloc.
 *
 * usage: rt_loop [--iterations N] [--period-ms P] [--size BYTES] [--cpu C] [--quiet]
 *        (defaults: 300 iterations, 10 ms, 131072 bytes, no pinning)
 * Output: "rt_loop: iter I latency_ns L" per iteration (not with --quiet), then
 *         "rt_loop: buffer B bytes source malloc|PATH"
 *         "rt_loop: iterations N min_ns A median_ns B p99_ns C max_ns D mean_ns E"
 * Exit status: 0, 2 on a usage error, 1 on a run-time error.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

volatile uint64_t sink;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One load per cache line: the read the recipe times. */
NOINLINE uint64_t read_buffer(const volatile uint64_t *buf, size_t bytes) {
    uint64_t s = 0;
    for (size_t i = 0; i < bytes / 8; i += 8)
        s += buf[i];
    return s;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int usage(void) {
    fprintf(stderr, "usage: rt_loop [--iterations N] [--period-ms P] [--size BYTES] [--cpu C] [--quiet]\n");
    return 2;
}

int main(int argc, char **argv) {
    long iterations = 300, period_ms = 10, size = 131072, cpu = -1;
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        long *dst = NULL;
        if (!strcmp(argv[i], "--quiet")) { quiet = 1; continue; }
        if (!strcmp(argv[i], "--iterations")) dst = &iterations;
        else if (!strcmp(argv[i], "--period-ms")) dst = &period_ms;
        else if (!strcmp(argv[i], "--size")) dst = &size;
        else if (!strcmp(argv[i], "--cpu")) dst = &cpu;
        if (!dst || i + 1 >= argc) return usage();
        *dst = strtol(argv[++i], &end, 10);
        if (!end || *end) return usage();
    }
    if (iterations < 1 || period_ms < 1 || size < 4096 || (size & 63)) return usage();
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((int)cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set)) { perror("rt_loop: sched_setaffinity"); return 1; }
    }
    const char *lock = getenv("KAIROS_PSEUDO_LOCK");
    uint64_t *buf;
    if (lock && *lock) {
        int fd = open(lock, O_RDWR);
        if (fd < 0) { perror("rt_loop: open pseudo-lock device"); return 1; }
        buf = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (buf == MAP_FAILED) { perror("rt_loop: mmap pseudo-lock device"); return 1; }
    } else {
        buf = malloc((size_t)size);
        if (!buf) { fprintf(stderr, "rt_loop: out of memory\n"); return 1; }
        for (long i = 0; i < size / 8; i++) buf[i] = (uint64_t)i;
    }
    uint64_t *lat = calloc((size_t)iterations, sizeof *lat);
    if (!lat) return 1;
    sink = read_buffer(buf, (size_t)size); /* warm */
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (long it = 0; it < iterations; it++) {
        next.tv_nsec += period_ms * 1000000L;
        while (next.tv_nsec >= 1000000000L) { next.tv_nsec -= 1000000000L; next.tv_sec++; }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        uint64_t t0 = now_ns();
        sink += read_buffer(buf, (size_t)size);
        lat[it] = now_ns() - t0;
        if (!quiet) printf("rt_loop: iter %ld latency_ns %llu\n", it, (unsigned long long)lat[it]);
    }
    uint64_t sum = 0;
    for (long i = 0; i < iterations; i++) sum += lat[i];
    qsort(lat, (size_t)iterations, sizeof *lat, cmp_u64);
    printf("rt_loop: buffer %ld bytes source %s\n", size, lock && *lock ? lock : "malloc");
    printf("rt_loop: iterations %ld min_ns %llu median_ns %llu p99_ns %llu max_ns %llu mean_ns %llu\n", iterations,
           (unsigned long long)lat[0], (unsigned long long)lat[iterations / 2],
           (unsigned long long)lat[(iterations * 99) / 100 < iterations ? (iterations * 99) / 100 : iterations - 1],
           (unsigned long long)lat[iterations - 1], (unsigned long long)(sum / (uint64_t)iterations));
    return 0;
}
