/*
 * kairos_trace: the function-entry/exit tracing runtime of `kairos collect trace`.
 *
 * Programs compiled with -finstrument-functions call __cyg_profile_func_enter(fn, site)
 * at the start and __cyg_profile_func_exit(fn, site) at the end of every function.
 * glibc exports no-op versions of both, so such a program runs untraced as built; this
 * runtime, preloaded (LD_PRELOAD=libkairos_trace.so) or linked in (libkairos_trace.a),
 * replaces them and records every entry and exit.
 *
 * Output (only when KAIROS_TRACE_DIR names a directory; otherwise the hooks return at
 * once): for each thread, $KAIROS_TRACE_DIR/PID-TID.ktr, a 48-byte header
 *     "KAIROSTR" u32 version=1 u32 record_size=24 u32 pid u32 tid u8 comm[16] u64 reserved
 * then 24-byte records { u64 time_ns | EXIT_BIT<<63, u64 function, u64 call_site },
 * in host byte order. $KAIROS_TRACE_DIR/PID.maps is a copy of /proc/self/maps made at
 * start and again at exit (to name code loaded later with dlopen).
 *
 * Clock: clock_gettime(CLOCK_MONOTONIC), through the vDSO (20-40 ns). rdtsc would be
 * faster, but a TSC calibrated against CLOCK_MONOTONIC drifts and is not guaranteed
 * invariant in VMs; the trace must share the time base of perf samples, which is
 * CLOCK_MONOTONIC, so that emulated and real recordings can be compared bucket by bucket.
 *
 * Hot path: thread-local buffer, no locks, no system calls but the clock. A buffer is
 * written out when full, when its thread ends (pthread key destructor), and at process
 * exit (atexit and a library destructor; both just flush what is there), and on SIGTERM
 * (how kairos ends a program it was told to stop) and SIGINT when the program left them at
 * their default action. Events lost: the buffers of a process killed by another signal or
 * ending in _exit/exec.
 *
 * Never traces itself: every function is no_instrument_function and the file is built
 * without -finstrument-functions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINSTR __attribute__((no_instrument_function))
/* initial-exec TLS: a plain %fs-relative access, no __tls_get_addr call per event. It is
 * allowed for preloaded libraries, which the loader places in static TLS. */
#define TLS __thread __attribute__((tls_model("initial-exec")))

#define KTR_VERSION 1
#define KTR_RECORDS (1u << 16) /* 1.5 MiB per thread between writes */
#define KTR_EXIT_BIT (1ull << 63)

/* Lets `kairos collect trace` see that a program already contains the runtime, so it does
 * not preload a second copy. */
const char kairos_trace_runtime_version[] = "kairos-trace 1";

struct ktr_rec {
    uint64_t time;
    uint64_t fn;
    uint64_t site;
};

struct ktr_thread {
    struct ktr_rec *buf;
    unsigned n;
    int fd;
    pid_t tid;
    struct ktr_thread *next;
};

static int enabled;
static char dir[4096];
static pthread_key_t key;
/* The list only changes at thread start/end and is walked at exit: never on the hot path. */
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ktr_thread *threads;

static TLS struct ktr_thread *self;
/* 1 while inside the runtime (malloc or a signal handler may call instrumented code),
 * 2 once this thread's buffer was released at thread end: later events are dropped. */
static TLS int state;

NOINSTR static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

NOINSTR static int write_all(int fd, const void *p, size_t len)
{
    const char *c = p;
    while (len > 0) {
        ssize_t w = write(fd, c, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        len -= (size_t)w;
    }
    return 0;
}

NOINSTR static void copy_maps(void)
{
    char path[4200], tmp[4210];
    snprintf(path, sizeof path, "%s/%d.maps", dir, (int)getpid());
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int in = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return;
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out >= 0) {
        char b[8192];
        ssize_t r;
        int ok = 1;
        while ((r = read(in, b, sizeof b)) != 0) {
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0 || write_all(out, b, (size_t)r) != 0) {
                ok = 0;
                break;
            }
        }
        close(out);
        /* rename: the decoder never sees a half-written copy. */
        if (ok)
            rename(tmp, path);
        else
            unlink(tmp);
    }
    close(in);
}

NOINSTR static void flush(struct ktr_thread *t)
{
    if (t->n == 0)
        return;
    if (t->fd < 0) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%d-%d.ktr", dir, (int)getpid(), (int)t->tid);
        t->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        if (t->fd < 0) {
            t->n = 0; /* nowhere to write: drop, rather than stop the program */
            return;
        }
        unsigned char h[48] = "KAIROSTR";
        uint32_t v[4] = {KTR_VERSION, (uint32_t)sizeof(struct ktr_rec), (uint32_t)getpid(), (uint32_t)t->tid};
        memcpy(h + 8, v, sizeof v);
        char comm[17] = {0};
        char cpath[64];
        snprintf(cpath, sizeof cpath, "/proc/self/task/%d/comm", (int)t->tid);
        int c = open(cpath, O_RDONLY | O_CLOEXEC);
        if (c >= 0) {
            ssize_t r = read(c, comm, 16);
            close(c);
            if (r > 0 && comm[r - 1] == '\n')
                comm[r - 1] = 0;
        }
        memcpy(h + 24, comm, 16);
        if (write_all(t->fd, h, sizeof h) != 0) {
            close(t->fd);
            t->fd = -1;
            t->n = 0;
            return;
        }
    }
    write_all(t->fd, t->buf, (size_t)t->n * sizeof(struct ktr_rec));
    t->n = 0;
}

NOINSTR static void thread_end(void *p)
{
    struct ktr_thread *t = p;
    state = 1;
    flush(t);
    pthread_mutex_lock(&list_lock);
    for (struct ktr_thread **q = &threads; *q; q = &(*q)->next) {
        if (*q == t) {
            *q = t->next;
            break;
        }
    }
    pthread_mutex_unlock(&list_lock);
    if (t->fd >= 0)
        close(t->fd);
    free(t->buf);
    free(t);
    self = NULL;
    state = 2;
}

NOINSTR static struct ktr_thread *thread_start(void)
{
    struct ktr_thread *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->buf = malloc(KTR_RECORDS * sizeof(struct ktr_rec));
    if (!t->buf) {
        free(t);
        return NULL;
    }
    t->fd = -1;
    t->tid = gettid_();
    pthread_mutex_lock(&list_lock);
    t->next = threads;
    threads = t;
    pthread_mutex_unlock(&list_lock);
    pthread_setspecific(key, t);
    return t;
}

NOINSTR static void flush_all(void)
{
    if (!enabled)
        return;
    pthread_mutex_lock(&list_lock);
    /* Other threads may still run; their buffers are written as they are now. */
    for (struct ktr_thread *t = threads; t; t = t->next)
        flush(t);
    pthread_mutex_unlock(&list_lock);
    copy_maps();
}

/* SIGTERM/SIGINT with the default action: write what the buffers hold, then let the
 * signal end the process as it would have. The interrupted code may hold list_lock (thread
 * start or end): then the list is walked without it, as the process is ending anyway. A
 * thread interrupted inside the runtime (state 1: possibly in the middle of writing its
 * buffer) is left as is, rather than have records written twice. */
NOINSTR static void on_fatal_signal(int sig)
{
    int saved = errno;
    int was = state;
    state = 1;
    if (enabled) {
        int locked = 0;
        for (int i = 0; i < 1000 && !(locked = pthread_mutex_trylock(&list_lock) == 0); i++)
            sched_yield();
        for (struct ktr_thread *t = threads; t; t = t->next)
            if (t != self || was == 0)
                flush(t);
        if (locked)
            pthread_mutex_unlock(&list_lock);
        copy_maps();
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    /* Pending until the handler returns (the signal is blocked in its own handler). */
    raise(sig);
    state = was;
    errno = saved;
}

NOINSTR static void flush_on_signals(void)
{
    int sigs[] = {SIGTERM, SIGINT};
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO))
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigfillset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

/* fork: the child's copy of this thread's buffer holds the parent's events, and the other
 * threads do not exist in the child. Start the child afresh with its own files. */
NOINSTR static void after_fork_child(void)
{
    if (!enabled)
        return;
    threads = NULL;
    pthread_mutex_init(&list_lock, NULL);
    if (self) {
        self->n = 0;
        self->fd = -1; /* the parent's fd: shared offset, not ours to close */
        self->tid = gettid_();
        self->next = NULL;
        threads = self;
    }
    copy_maps();
}

NOINSTR __attribute__((constructor(101))) static void init(void)
{
    const char *d = getenv("KAIROS_TRACE_DIR");
    if (!d || !*d || strlen(d) >= sizeof dir - 64)
        return;
    strcpy(dir, d);
    if (pthread_key_create(&key, thread_end) != 0)
        return;
    pthread_atfork(NULL, NULL, after_fork_child);
    atexit(flush_all);
    copy_maps();
    enabled = 1;
    flush_on_signals();
}

/* Runs after the program's own destructors (the runtime was loaded first), catching the
 * calls they make after the atexit flush. */
NOINSTR __attribute__((destructor)) static void fini(void) { flush_all(); }

NOINSTR static inline void record(void *fn, void *site, uint64_t exit_bit)
{
    if (__builtin_expect(!enabled || state != 0, 0))
        return;
    struct ktr_thread *t = self;
    if (__builtin_expect(t == NULL, 0)) {
        state = 1;
        t = self = thread_start();
        state = 0;
        if (!t)
            return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    struct ktr_rec *r = &t->buf[t->n];
    r->time = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) | exit_bit;
    r->fn = (uint64_t)(uintptr_t)fn;
    r->site = (uint64_t)(uintptr_t)site;
    if (__builtin_expect(++t->n == KTR_RECORDS, 0)) {
        state = 1;
        flush(t);
        state = 0;
    }
}

NOINSTR void __cyg_profile_func_enter(void *fn, void *site) { record(fn, site, 0); }
NOINSTR void __cyg_profile_func_exit(void *fn, void *site) { record(fn, site, KTR_EXIT_BIT); }
