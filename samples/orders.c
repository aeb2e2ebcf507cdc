/*
 * orders: an order-processing service whose slow requests have known causes.
 *
 * The truth that request-latency analyses are scored against: the program runs REQUESTS
 * requests of ~30 us on one thread and delays about 1 in 250 of them by each of four
 * causes, one cause at most per request, chosen per request by a PRNG seeded with SEED:
 *
 *   slow-path    process_order calls rebuild_index(), ~400 us of compute;
 *   lock         before the request begins, the compactor thread takes book_lock and
 *                holds it for ~400 us (compact_book); the request waits in lock_book();
 *   page-faults  process_order calls touch_new_pages(), which maps 4 MiB of fresh
 *                anonymous memory and writes one byte per 4 KiB page (1024 faults);
 *   preemption   the hog thread, pinned to the worker's CPU, runs hog_spin() (~400 us)
 *                while the request runs; the worker is runnable but off the CPU.
 *
 * Every request is marked three ways: the Kairos request markers (kairos_requests.h,
 * found through the ELF section "kairos_requests"), USDT probes orders:request_begin(id)
 * and orders:request_end (when <sys/sdt.h> is there and KAIROS_NO_SDT is not defined),
 * and the function process_order(id) for uprobes. LOGFILE gets what the program itself
 * measured, one line per request after a '#' header:
 *     id tid start_ns end_ns cause measured_us
 * (CLOCK_MONOTONIC ns; cause one of normal, slow-path, lock, page-faults, preemption;
 * measured_us the delay measured for that cause, or the request's duration when normal),
 * so the file is also a request log for `kairos collect latency -k requests-from=LOGFILE`.
 *
 * The hog cannot simply be woken before the request: a woken thread that preempts does
 * so at once, before the request has begun, and one that does not preempt waits for the
 * next tick, delaying some later request. So before the request the worker arms a
 * one-shot timer (timerfd) that wakes the hog ~12 us into the request (wake_hog_soon).
 * The hog runs SCHED_FIFO priority 1 where that is permitted, so its wake-up preempts the
 * worker at once; otherwise nice -5 (or the worker at nice +5), whose wake-up may or may
 * not preempt (on a 6.18 kernel about 50-80% of the planned requests were delayed), which
 * the output says. The output also counts how many hog runs started inside their request.
 *
 * Nothing in the loop sleeps or writes: the gap between requests is a ~20 us busy wait
 * (idle_between) and the log is written at the end.
 *
 * usage: orders LOGFILE [REQUESTS] [SEED]     (defaults: 20000 requests, seed 1)
 * env:   KAIROS_ORDERS_HOG=nice    the hog at nice -5 even where SCHED_FIFO is permitted
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define KAIROS_REQUESTS_IMPLEMENTATION
#include "../runtime/requests/kairos_requests.h"

#if !defined(KAIROS_NO_SDT) && defined(__has_include)
#if __has_include(<sys/sdt.h>)
#include <sys/sdt.h>
#define ORDERS_HAVE_SDT 1
#endif
#endif
#ifndef ORDERS_HAVE_SDT
#define ORDERS_HAVE_SDT 0
#define DTRACE_PROBE(provider, name) do { } while (0)
#define DTRACE_PROBE1(provider, name, a) do { (void)(a); } while (0)
#endif

#define NOINLINE __attribute__((noinline))

#define MATCH_US 30          /* match_order: every request */
#define DELAY_US 400         /* rebuild_index, compact_book, hog_spin */
#define GAP_US 20            /* idle_between */
#define FAULT_BYTES (4u << 20)
#define PAGE_BYTES 4096u
#define HOG_LEAD_NS 60000    /* the hog's timer expires this long after it is armed, */
#define HOG_INTO_NS 12000    /* about this long into the request */
#define THRESHOLD_NS 100000  /* a lock wait or lost CPU time above this is a cause */
#define ONE_IN 250           /* each cause's share of the requests */

enum cause { NORMAL, SLOW_PATH, LOCK, PAGE_FAULTS, PREEMPTION, NCAUSES };
static const char *const cause_name[NCAUSES] = {"normal", "slow-path", "lock", "page-faults",
                                                "preemption"};

pthread_mutex_t book_lock = PTHREAD_MUTEX_INITIALIZER;
volatile uint64_t sink;
static uint64_t iters_per_us = 1;
static unsigned char *plan; /* plan[id]: the cause planned for request id */

/* Measured inside a request by process_order and lock_book. */
static uint64_t lock_wait_ns, slow_path_ns, page_fault_ns;

/* Worker <-> compactor and start-up handshakes. */
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ctl_cond = PTHREAD_COND_INITIALIZER;
static int compact_wanted, compact_holding, stopping, threads_ready;
static pid_t hog_tid, compactor_tid;
static int hog_cpu = -1;
static cpu_set_t start_cpus; /* the CPUs the process may use, before any pinning */
static int hog_timer = -1;
static char hog_policy[128] = "none";

/* Hog runs, for the check that it ran inside the requests it was meant for. */
static uint64_t *hog_starts;
static size_t hog_runs, hog_cap;

/* A macro, not a function: debug info would otherwise name the inlined loop as a frame
 * of its own. */
#define busy(n)                                                                \
    do {                                                                       \
        uint64_t n_ = (n), x_ = n_ | 1;                                        \
        for (uint64_t i_ = 0; i_ < n_; i_++) {                                 \
            x_ = x_ * 6364136223846793005ULL + 1442695040888963407ULL;         \
            __asm__ volatile("" : "+r"(x_));                                   \
        }                                                                      \
        sink = x_;                                                             \
    } while (0)

static inline __attribute__((always_inline)) uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}
#define now_ns() clock_ns(CLOCK_MONOTONIC)

static pid_t current_tid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

/* splitmix64: the request plan is a pure function of SEED. */
static uint64_t splitmix(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Measures the busy loop's speed against CLOCK_MONOTONIC, so that N us of compute is N us
 * anywhere: the fastest of ten ~10 ms rounds, as a round in which the thread lost the CPU
 * (to a build next door, say) reads slow. */
NOINLINE void calibrate(void)
{
    uint64_t n = 1000, best = 0;
    for (;;) {
        uint64_t t0 = now_ns();
        busy(n);
        uint64_t dt = now_ns() - t0;
        if (dt >= 10000000ULL || n >= (1ULL << 40))
            break;
        n *= 2;
    }
    for (int round = 0; round < 10; round++) {
        uint64_t t0 = now_ns();
        busy(n);
        uint64_t dt = now_ns() - t0;
        uint64_t rate = dt ? n * 1000ULL / dt : n;
        if (rate > best)
            best = rate;
    }
    iters_per_us = best ? best : 1;
    /* A fixed amount of work per request whatever slows the process (a profiler does,
     * and a calibration under it would shrink the work): for overhead measurements. */
    const char *fixed = getenv("ORDERS_ITERS_PER_US");
    if (fixed != NULL && strtoull(fixed, NULL, 10) > 0)
        iters_per_us = strtoull(fixed, NULL, 10);
}

/* Measures the wait only when the lock is taken: a preemption during an uncontended
 * lock is not a lock wait. */
NOINLINE void lock_book(void)
{
    if (pthread_mutex_trylock(&book_lock) == 0) {
        lock_wait_ns = 0;
        return;
    }
    uint64_t t0 = now_ns();
    pthread_mutex_lock(&book_lock);
    lock_wait_ns = now_ns() - t0;
}

NOINLINE void unlock_book(void)
{
    pthread_mutex_unlock(&book_lock);
}

/* The request's own work, ~30 us. */
NOINLINE void match_order(uint64_t id)
{
    busy(MATCH_US * iters_per_us + (id & 1));
}

/* The rare slow code path, ~400 us. */
NOINLINE void rebuild_index(void)
{
    busy(DELAY_US * iters_per_us);
}

/* Fresh anonymous memory, one write per page: 1024 minor faults, each zeroing a page. */
NOINLINE void touch_new_pages(void)
{
    volatile unsigned char *p =
        mmap(NULL, FAULT_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == (volatile unsigned char *)MAP_FAILED)
        return;
#ifdef MADV_NOHUGEPAGE
    /* One fault per 4 KiB page, also where transparent huge pages are on for all. */
    madvise((void *)p, FAULT_BYTES, MADV_NOHUGEPAGE);
#endif
    for (size_t off = 0; off < FAULT_BYTES; off += PAGE_BYTES)
        p[off] = (unsigned char)off | 1;
    munmap((void *)p, FAULT_BYTES);
}

/* One request. The function to probe with uprobes; its argument is the request id. */
NOINLINE void process_order(uint64_t id)
{
    int planned = plan[id];
    lock_book();
    match_order(id);
    if (planned == SLOW_PATH) {
        uint64_t t0 = now_ns();
        rebuild_index();
        slow_path_ns = now_ns() - t0;
    }
    unlock_book();
    if (planned == PAGE_FAULTS) {
        uint64_t t0 = now_ns();
        touch_new_pages();
        page_fault_ns = now_ns() - t0;
    }
}

/* The gap between two requests: a busy wait, so that the worker never sleeps. */
NOINLINE void idle_between(void)
{
    busy(GAP_US * iters_per_us);
}

/* The compactor's work, done while it holds book_lock. */
NOINLINE void compact_book(void)
{
    busy(DELAY_US * iters_per_us);
}

/* A job that ends its own thread: pthread_exit inside it, so it never returns (a request
 * that never ends, for `-k request=audit_books`). */
NOINLINE void audit_books(void)
{
    busy(DELAY_US * iters_per_us);
    pthread_exit(NULL);
}

static void *audit_main(void *arg)
{
    (void)arg;
    audit_books();
    return NULL;
}

/* The hog's work on the worker's CPU. */
NOINLINE void hog_spin(void)
{
    busy(DELAY_US * iters_per_us);
}

static void thread_ready(pid_t *tid_slot)
{
    pthread_mutex_lock(&ctl_lock);
    *tid_slot = current_tid();
    threads_ready++;
    pthread_cond_broadcast(&ctl_cond);
    pthread_mutex_unlock(&ctl_lock);
}

/* Waits for a request to compact; takes book_lock, reports that it has it, works, and
 * lets go. */
static void *compactor_main(void *arg)
{
    (void)arg;
    /* Anywhere but the worker's CPU: there it would run before the worker saw that it
     * holds the lock, and the request would find the lock free. */
    cpu_set_t set = start_cpus;
    if (CPU_COUNT(&set) > 1)
        CPU_CLR(hog_cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
    thread_ready(&compactor_tid);
    pthread_mutex_lock(&ctl_lock);
    for (;;) {
        while (!compact_wanted && !stopping)
            pthread_cond_wait(&ctl_cond, &ctl_lock);
        if (stopping)
            break;
        compact_wanted = 0;
        pthread_mutex_unlock(&ctl_lock);

        pthread_mutex_lock(&book_lock);
        pthread_mutex_lock(&ctl_lock);
        compact_holding = 1;
        pthread_cond_broadcast(&ctl_cond);
        pthread_mutex_unlock(&ctl_lock);
        compact_book();
        pthread_mutex_unlock(&book_lock);

        pthread_mutex_lock(&ctl_lock);
    }
    pthread_mutex_unlock(&ctl_lock);
    return NULL;
}

/* The worker's side: returns once the compactor holds book_lock. */
static void start_compaction(void)
{
    pthread_mutex_lock(&ctl_lock);
    compact_wanted = 1;
    compact_holding = 0;
    pthread_cond_broadcast(&ctl_cond);
    while (!compact_holding)
        pthread_cond_wait(&ctl_cond, &ctl_lock);
    pthread_mutex_unlock(&ctl_lock);
}

static int pin_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set);
}

/* The hog's priority over the worker: SCHED_FIFO 1 where allowed (its wake-up preempts
 * the worker at once), else nice -5, else the worker at nice +5 (same weights). */
static void hog_set_policy(pid_t worker)
{
    const char *want = getenv("KAIROS_ORDERS_HOG");
    int fifo = want == NULL || strcmp(want, "nice") != 0;
    if (fifo) {
        struct sched_param sp = {.sched_priority = 1};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0) {
            snprintf(hog_policy, sizeof(hog_policy), "SCHED_FIFO 1");
            return;
        }
    }
    if (setpriority(PRIO_PROCESS, 0, -5) == 0) {
        snprintf(hog_policy, sizeof(hog_policy), "nice -5%s, may not preempt at once",
                 fifo ? " (SCHED_FIFO not permitted)" : "");
        return;
    }
    if (setpriority(PRIO_PROCESS, (id_t)worker, 5) == 0) {
        snprintf(hog_policy, sizeof(hog_policy), "nice 0, worker nice +5%s, may not preempt at once",
                 fifo ? " (SCHED_FIFO and nice -5 not permitted)" : " (nice -5 not permitted)");
        return;
    }
    snprintf(hog_policy, sizeof(hog_policy), "nice 0 (no priority change permitted), may not preempt");
}

/* Pinned to the worker's CPU; each timer expiry runs hog_spin once. */
static void *hog_main(void *arg)
{
    pid_t worker = *(pid_t *)arg;
    if (pin_to(hog_cpu) != 0)
        fprintf(stderr, "orders: cannot pin the hog to CPU %d: %s\n", hog_cpu, strerror(errno));
    hog_set_policy(worker);
    thread_ready(&hog_tid);
    for (;;) {
        uint64_t expirations;
        ssize_t n = read(hog_timer, &expirations, sizeof(expirations));
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof(expirations) || __atomic_load_n(&stopping, __ATOMIC_ACQUIRE))
            break;
        if (hog_runs < hog_cap)
            hog_starts[hog_runs++] = now_ns();
        hog_spin();
    }
    return NULL;
}

static void arm_hog_timer(uint64_t deadline_ns)
{
    struct itimerspec its;
    memset(&its, 0, sizeof(its));
    its.it_value.tv_sec = (time_t)(deadline_ns / 1000000000ULL);
    its.it_value.tv_nsec = (long)(deadline_ns % 1000000000ULL);
    timerfd_settime(hog_timer, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Arms the hog's timer, then waits until it is due in HOG_INTO_NS: arming takes several
 * microseconds (tens in some virtual machines), so the request starts at a known time
 * before the hog wakes, whatever that cost. */
NOINLINE void wake_hog_soon(void)
{
    uint64_t armed = now_ns();
    arm_hog_timer(armed + HOG_LEAD_NS);
    while (now_ns() < armed + HOG_LEAD_NS - HOG_INTO_NS)
        __asm__ volatile("" ::: "memory");
}

/* The last CPU this process may run on: the worker's and the hog's. */
static int last_allowed_cpu(void)
{
    CPU_ZERO(&start_cpus);
    if (sched_getaffinity(0, sizeof(start_cpus), &start_cpus) != 0)
        return -1;
    for (int c = CPU_SETSIZE - 1; c >= 0; c--)
        if (CPU_ISSET(c, &start_cpus))
            return c;
    return -1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* q-th quantile (nearest rank) of n sorted values. */
static uint64_t quantile(const uint64_t *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    size_t rank = (size_t)(q * (double)n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return v[rank - 1];
}

struct request {
    uint64_t start_ns, end_ns, measured_ns;
    int cause;
};

static int parse_u64(const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        fprintf(stderr, "usage: %s LOGFILE [REQUESTS] [SEED]   (defaults: 20000 requests, seed 1)\n",
                argv[0]);
        return argc >= 2 && argc <= 4 ? 0 : 2;
    }
    const char *logfile = argv[1];
    uint64_t nreq = 20000, seed = 1;
    if (argc > 2 && (parse_u64(argv[2], &nreq) != 0 || nreq == 0 || nreq > 100000000)) {
        fprintf(stderr, "orders: REQUESTS must be an integer in [1, 100000000], got '%s'\n", argv[2]);
        return 2;
    }
    if (argc > 3 && parse_u64(argv[3], &seed) != 0) {
        fprintf(stderr, "orders: SEED must be an unsigned integer, got '%s'\n", argv[3]);
        return 2;
    }

    FILE *log = fopen(logfile, "w");
    if (log == NULL) {
        fprintf(stderr, "orders: cannot create %s: %s\n", logfile, strerror(errno));
        return 1;
    }
    plan = calloc(nreq + 1, 1);
    struct request *reqs = calloc(nreq + 1, sizeof(*reqs));
    uint64_t *durations = malloc(nreq * sizeof(uint64_t));
    uint64_t *normal_durations = malloc(nreq * sizeof(uint64_t));
    hog_cap = nreq / 50 + 64;
    hog_starts = malloc(hog_cap * sizeof(uint64_t));
    if (plan == NULL || reqs == NULL || durations == NULL || normal_durations == NULL ||
        hog_starts == NULL) {
        fprintf(stderr, "orders: out of memory\n");
        return 1;
    }

    /* The plan: each cause on 1 request in ONE_IN, never two on one request. */
    uint64_t rng = seed;
    uint64_t planned[NCAUSES] = {0};
    for (uint64_t id = 1; id <= nreq; id++) {
        uint64_t r = splitmix(&rng) % ONE_IN;
        plan[id] = r < NCAUSES - 1 ? (unsigned char)(r + 1) : NORMAL;
        planned[plan[id]]++;
    }

    pid_t worker = current_tid();
    int cpu = last_allowed_cpu();
    if (cpu < 0 || pin_to(cpu) != 0) {
        fprintf(stderr, "orders: cannot pin the worker to a CPU: %s\n", strerror(errno));
        return 1;
    }
    hog_cpu = cpu;
    calibrate();

    hog_timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (hog_timer < 0) {
        fprintf(stderr, "orders: timerfd_create: %s\n", strerror(errno));
        return 1;
    }
    pthread_t hog, compactor, audit;
    if (pthread_create(&hog, NULL, hog_main, &worker) != 0 ||
        pthread_create(&compactor, NULL, compactor_main, NULL) != 0 ||
        pthread_create(&audit, NULL, audit_main, NULL) != 0) {
        fprintf(stderr, "orders: cannot start the threads\n");
        return 1;
    }
    pthread_mutex_lock(&ctl_lock);
    while (threads_ready < 2)
        pthread_cond_wait(&ctl_cond, &ctl_lock);
    pthread_mutex_unlock(&ctl_lock);

    printf("orders: pid %d worker_tid %d hog_tid %d compactor_tid %d cpu %d requests %llu seed %llu\n",
           (int)getpid(), (int)worker, (int)hog_tid, (int)compactor_tid, cpu,
           (unsigned long long)nreq, (unsigned long long)seed);
    printf("orders: hog %s; usdt %s; calibration %llu iterations per us\n", hog_policy,
           ORDERS_HAVE_SDT ? "orders:request_begin orders:request_end" : "none",
           (unsigned long long)iters_per_us);
    fflush(stdout);

    long faults_min = -1, faults_max = 0;
    for (uint64_t id = 1; id <= nreq; id++) {
        int p = plan[id];
        struct rusage ru0, ru1;
        if (p == LOCK)
            start_compaction();
        else if (p == PAGE_FAULTS)
            getrusage(RUSAGE_THREAD, &ru0);
        lock_wait_ns = slow_path_ns = page_fault_ns = 0;

        if (p == PREEMPTION)
            wake_hog_soon();
        uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        uint64_t t0 = now_ns();
        kairos_request_begin(id);
        DTRACE_PROBE1(orders, request_begin, id);
        process_order(id);
        DTRACE_PROBE(orders, request_end);
        kairos_request_end();
        uint64_t t1 = now_ns();
        uint64_t cpu1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

        if (p == PAGE_FAULTS) {
            getrusage(RUSAGE_THREAD, &ru1);
            long f = ru1.ru_minflt - ru0.ru_minflt;
            if (faults_min < 0 || f < faults_min)
                faults_min = f;
            if (f > faults_max)
                faults_max = f;
        }

        /* The cause is the largest delay measured; none above the thresholds: normal. */
        uint64_t wall = t1 - t0, used = cpu1 - cpu0;
        uint64_t off_cpu = wall > used ? wall - used : 0;
        uint64_t lost = off_cpu > lock_wait_ns ? off_cpu - lock_wait_ns : 0;
        struct request *rq = &reqs[id];
        rq->start_ns = t0;
        rq->end_ns = t1;
        rq->cause = NORMAL;
        rq->measured_ns = wall;
        uint64_t best = 0;
        if (slow_path_ns > best)
            best = slow_path_ns, rq->cause = SLOW_PATH;
        if (page_fault_ns > best)
            best = page_fault_ns, rq->cause = PAGE_FAULTS;
        if (lock_wait_ns > THRESHOLD_NS && lock_wait_ns > best)
            best = lock_wait_ns, rq->cause = LOCK;
        if (lost > THRESHOLD_NS && lost > best)
            best = lost, rq->cause = PREEMPTION;
        if (rq->cause != NORMAL)
            rq->measured_ns = best;

        idle_between();
    }

    /* Stop the helpers. */
    pthread_mutex_lock(&ctl_lock);
    __atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&ctl_cond);
    pthread_mutex_unlock(&ctl_lock);
    arm_hog_timer(now_ns() + 1000);
    pthread_join(compactor, NULL);
    pthread_join(audit, NULL);
    pthread_join(hog, NULL);

    fprintf(log, "# orders: clock=CLOCK_MONOTONIC columns: id tid start_ns end_ns cause measured_us\n");
    uint64_t count[NCAUSES] = {0};
    size_t nnormal = 0, hog_inside = 0, planned_hit = 0;
    for (uint64_t id = 1; id <= nreq; id++) {
        const struct request *rq = &reqs[id];
        fprintf(log, "%llu %d %llu %llu %s %.1f\n", (unsigned long long)id, (int)worker,
                (unsigned long long)rq->start_ns, (unsigned long long)rq->end_ns,
                cause_name[rq->cause], (double)rq->measured_ns / 1e3);
        count[rq->cause]++;
        durations[id - 1] = rq->end_ns - rq->start_ns;
        if (rq->cause == NORMAL)
            normal_durations[nnormal++] = rq->end_ns - rq->start_ns;
        if (plan[id] != NORMAL && rq->cause == plan[id])
            planned_hit++;
    }
    if (fclose(log) != 0) {
        fprintf(stderr, "orders: cannot write %s: %s\n", logfile, strerror(errno));
        return 1;
    }
    /* Did each hog run start inside a request planned for preemption? */
    for (size_t h = 0, id = 1; h < hog_runs; h++) {
        while (id <= nreq && reqs[id].end_ns < hog_starts[h])
            id++;
        if (id <= nreq && plan[id] == PREEMPTION && reqs[id].start_ns <= hog_starts[h])
            hog_inside++;
    }

    qsort(durations, nreq, sizeof(uint64_t), cmp_u64);
    qsort(normal_durations, nnormal, sizeof(uint64_t), cmp_u64);
    printf("orders: requests %llu normal %llu slow-path %llu lock %llu page-faults %llu preemption %llu\n",
           (unsigned long long)nreq, (unsigned long long)count[NORMAL],
           (unsigned long long)count[SLOW_PATH], (unsigned long long)count[LOCK],
           (unsigned long long)count[PAGE_FAULTS], (unsigned long long)count[PREEMPTION]);
    printf("orders: p50_us %.1f p99_us %.1f max_us %.1f\n",
           (double)quantile(durations, nreq, 0.50) / 1e3, (double)quantile(durations, nreq, 0.99) / 1e3,
           (double)durations[nreq - 1] / 1e3);
    /* Checks of the run itself, after the results (their keys differ from those above). */
    printf("orders: normal_p50_us %.1f normal_p99_us %.1f normal_max_us %.1f\n",
           (double)quantile(normal_durations, nnormal, 0.50) / 1e3,
           (double)quantile(normal_durations, nnormal, 0.99) / 1e3,
           nnormal ? (double)normal_durations[nnormal - 1] / 1e3 : 0.0);
    printf("orders: planned_slow_path %llu planned_lock %llu planned_page_faults %llu "
           "planned_preemption %llu measured_as_planned %zu\n",
           (unsigned long long)planned[SLOW_PATH], (unsigned long long)planned[LOCK],
           (unsigned long long)planned[PAGE_FAULTS], (unsigned long long)planned[PREEMPTION],
           planned_hit);
    printf("orders: hog_runs %zu hog_runs_inside_request %zu faults_per_touch_min %ld "
           "faults_per_touch_max %ld\n",
           hog_runs, hog_inside, faults_min < 0 ? 0 : faults_min, faults_max);
    printf("orders: wrote %s\n", logfile);
    free(plan);
    free(reqs);
    free(durations);
    free(normal_durations);
    free(hog_starts);
    return 0;
}
