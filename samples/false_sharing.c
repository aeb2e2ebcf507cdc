/*
 * false_sharing: the memory-access recipe's program. N threads each increment a counter
 * inside one 512-byte struct from malloc.
 *
 * usage: false_sharing [--padded|--shared] [THREADS] [ITERATIONS]   (2, 1000000000)
 *
 *   (default)  thread k increments counts[k]: 8 bytes apart, so up to 8 counters share
 *              one 64-byte cache line and the line bounces between cores (false sharing);
 *   --padded   thread k increments counts[8 * k]: each counter on its own line;
 *   --shared   every thread increments counts[0] (true sharing; the total is racy on
 *              purpose, as plain increments are).
 *
 * THREADS is 1-8 (8 padded counters fill the 512 bytes). Prints one line per thread,
 *   false_sharing: thread K tid T offset O
 * then
 *   false_sharing: mode M threads N iterations I object 0xADDR size 512 elapsed_s S
 * so a test knows the object, every thread's byte offset and the run time.
 * Exit status 0, 2 on a usage error, 1 when malloc or pthread_create fails.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LINE_LONGS 8 /* 64-byte line / sizeof(long) */

struct counters {
    long counts[64]; /* 512 bytes: the recipe's object */
};

struct worker {
    volatile long *counter;
    long iterations;
    int index;
    pid_t tid;
    pthread_barrier_t *start;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The hot loop: a load and a store of the thread's counter per iteration. */
static void increment(volatile long *counter, long iterations)
{
    for (long i = 0; i < iterations; i++)
        (*counter)++;
}

static void *run_worker(void *arg)
{
    struct worker *w = arg;
    w->tid = (pid_t)syscall(SYS_gettid);
    pthread_barrier_wait(w->start);
    increment(w->counter, w->iterations);
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: false_sharing [--padded|--shared] [THREADS 1-8] [ITERATIONS]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *mode = "unpadded";
    int arg = 1;
    if (arg < argc && argv[arg][0] == '-') {
        if (!strcmp(argv[arg], "--padded"))
            mode = "padded";
        else if (!strcmp(argv[arg], "--shared"))
            mode = "shared";
        else
            return usage();
        arg++;
    }
    int threads = arg < argc ? atoi(argv[arg++]) : 2;
    long iterations = arg < argc ? atol(argv[arg++]) : 1000000000L;
    if (threads < 1 || threads > 8 || iterations < 1 || arg < argc)
        return usage();

    struct counters *object = malloc(sizeof *object);
    if (!object) {
        perror("false_sharing: malloc");
        return 1;
    }
    memset(object, 0, sizeof *object);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    struct worker workers[8];
    pthread_t ids[8];
    for (int k = 0; k < threads; k++) {
        int slot = !strcmp(mode, "padded") ? k * LINE_LONGS : !strcmp(mode, "shared") ? 0 : k;
        workers[k] = (struct worker){ &object->counts[slot], iterations, k, 0, &start };
        if (pthread_create(&ids[k], NULL, run_worker, &workers[k])) {
            perror("false_sharing: pthread_create");
            return 1;
        }
    }
    pthread_barrier_wait(&start);
    double t0 = now_s();
    for (int k = 0; k < threads; k++)
        pthread_join(ids[k], NULL);
    double elapsed = now_s() - t0;

    long total = 0;
    for (int i = 0; i < 64; i++)
        total += object->counts[i];
    for (int k = 0; k < threads; k++)
        printf("false_sharing: thread %d tid %d offset %ld\n", k, (int)workers[k].tid,
               (long)((char *)workers[k].counter - (char *)object));
    printf("false_sharing: mode %s threads %d iterations %ld object %p size %zu elapsed_s %.3f total %ld\n",
           mode, threads, iterations, (void *)object, sizeof *object, elapsed, total);
    free(object);
    return 0;
}
