/*
 * three_arrays: reads three arrays of one size for known shares of its run, to check the
 * memory-object attribution of address samples against the truth.
 *
 * usage: three_arrays [SECONDS] [A:B:C]   (2.0, 5:3:2)
 *
 * heap_array comes from malloc, bss_array is a zero-initialised static (.bss) and
 * data_array an initialised global (.data), so one run has a heap block and two static
 * variables. Each round reads heap_array 200 A times, bss_array 200 B times and data_array 200 C
 * times through one function, read_array, so every array is read by the same code at
 * the same cost per element. Runs rounds for SECONDS of wall time and prints
 *   three_arrays: heap_array 0xADDR bss_array 0xADDR data_array 0xADDR bytes N
 *   three_arrays: rounds R share heap_array P bss_array P data_array P
 * where each share is that array's part of the thread's CPU time spent reading them
 * (CLOCK_THREAD_CPUTIME_ID, which is what a cpu-clock profile samples).
 * Exit status 0, 2 on a usage error, 1 when malloc fails.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* 8 KiB of longs each: the three fit in L1 together, so every pass costs the same. */
#define ELEMS 1024
/* Passes per share unit: long calls keep the clock reads a negligible part of the time. */
#define PASSES 200

static long bss_array[ELEMS];
long data_array[ELEMS] = { 1 };
static volatile long sink;

static double clock_s(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CPU time of this thread: what a cpu-clock profile samples, whatever else the machine runs. */
static double cpu_s(void)
{
    return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

/* volatile: every element is loaded from memory, on each pass. Integer sums, so the loop
 * waits on its loads rather than on a floating-point add chain. */
static long read_array(const volatile long *a, long n)
{
    /* Four loads into four independent sums per iteration: the loop is paced by its loads,
     * not by a chain of additions, and most of its instructions touch the array. */
    long s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (long i = 0; i + 3 < n; i += 4) {
        s0 += a[i];
        s1 += a[i + 1];
        s2 += a[i + 2];
        s3 += a[i + 3];
    }
    return s0 + s1 + s2 + s3;
}

static long read_times(const volatile long *a, int times, double *spent)
{
    double t0 = cpu_s();
    long s = 0;
    for (int k = 0; k < times * PASSES; k++)
        s += read_array(a, ELEMS);
    *spent += cpu_s() - t0;
    return s;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? strtod(argv[1], NULL) : 2.0;
    int a = 5, b = 3, c = 2;
    if (argc > 2 && sscanf(argv[2], "%d:%d:%d", &a, &b, &c) != 3)
        a = -1;
    if (argc > 3 || !(seconds > 0) || a < 0 || b < 0 || c < 0 || a + b + c == 0) {
        fprintf(stderr, "usage: three_arrays [SECONDS] [A:B:C]\n");
        return 2;
    }
    long *heap_array = malloc(sizeof(long) * ELEMS);
    if (!heap_array) {
        perror("three_arrays: malloc");
        return 1;
    }
    for (long i = 0; i < ELEMS; i++) {
        heap_array[i] = i;
        bss_array[i] = i;
        data_array[i] = i;
    }
    printf("three_arrays: heap_array %p bss_array %p data_array %p bytes %zu\n",
           (void *)heap_array, (void *)bss_array, (void *)data_array, sizeof bss_array);
    fflush(stdout);

    double spent[3] = { 0, 0, 0 }, end = clock_s(CLOCK_MONOTONIC) + seconds;
    long rounds = 0;
    while (clock_s(CLOCK_MONOTONIC) < end) {
        sink += read_times(heap_array, a, &spent[0]);
        sink += read_times(bss_array, b, &spent[1]);
        sink += read_times(data_array, c, &spent[2]);
        rounds++;
    }
    double total = spent[0] + spent[1] + spent[2];
    printf("three_arrays: rounds %ld share heap_array %.1f bss_array %.1f data_array %.1f\n", rounds,
           100 * spent[0] / total, 100 * spent[1] / total, 100 * spent[2] / total);
    free(heap_array);
    return 0;
}
