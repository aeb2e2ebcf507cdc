/* threads: several threads with different, changing work, for timelines with one lane per
 * thread. Thread k (0..N-1) runs phases of about 100 ms; in each phase it spins in one of
 * compute_a/compute_b/compute_c (chosen by (k + phase) % 3) or sleeps in idle_wait when
 * (k + phase) % 4 == 3. Usage: threads [N] [SECONDS] (4, 1.0). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 1.0;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The three kinds of work differ only in name and a constant; the loop is a macro so that
 * each is its own leaf function in samples. volatile keeps the loops from being folded. */
#define SPIN(K)                                 \
    volatile double x = 1.0;                    \
    while (now() < until)                       \
        for (int i = 0; i < 1000; i++)          \
            x = x * (K) + 1e-9;                 \
    return x;
double compute_a(double until) { SPIN(1.0000001) }
double compute_b(double until) { SPIN(0.9999999) }
double compute_c(double until) { SPIN(1.0000002) }

void idle_wait(double until) {
    while (now() < until) {
        struct timespec d = {0, 5 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
}

static void *worker(void *arg) {
    long k = (long)arg;
    double start = now(), end = start + seconds;
    for (int phase = 0; now() < end; phase++) {
        double until = start + (phase + 1) * 0.1;
        if (until > end)
            until = end;
        int pick = (int)((k + phase) % 4);
        if (pick == 3)
            idle_wait(until);
        else if (pick == 0)
            compute_a(until);
        else if (pick == 1)
            compute_b(until);
        else
            compute_c(until);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2)
        seconds = atof(argv[2]);
    if (n < 1 || n > 256 || !(seconds > 0)) {
        fprintf(stderr, "usage: threads [N (1-256)] [SECONDS]\n");
        return 2;
    }
    pthread_t *t = calloc(n, sizeof *t);
    if (!t)
        return 1;
    for (long k = 1; k < n; k++)
        if (pthread_create(&t[k], NULL, worker, (void *)k) != 0)
            return 1;
    worker((void *)0);
    for (int k = 1; k < n; k++)
        pthread_join(t[k], NULL);
    printf("%d threads ran %.2f s\n", n, seconds);
    free(t);
    return 0;
}
