/* CpuAcc thread pool: persistent pthreads; a parallel loop is split into up to
 * ACCEL_PARTS_PER_THREAD ranges ("parts") per thread, held in one share per thread. A
 * first-come loop (accel_parallel_for[_grain]) puts every part in share 0 and the caller and
 * the workers take the next one until none is left, so a worker the OS has not scheduled yet
 * delays nothing (its parts run on whoever is free) and uneven parts balance. An owned loop
 * (accel_parallel_for_owned) gives thread t (the caller is 0, workers 1..) the parts of its
 * own stretch of items; it runs those from the front, then takes what is left of the others'
 * from their back. So back-to-back owned loops with matching stretches run the same items on
 * the same thread (what it wrote is in its own caches) while a late thread still delays
 * nothing. Workers and the caller spin (bounded, ACCEL_SPIN_NS) before sleeping, so
 * back-to-back loops cost no system call; a worker woken from its sleep on the caller's CPU
 * moves off it (leave_cpu). After fork() the child has none of the workers: the pthread_atfork
 * handlers at the end of this file quiesce every pool around the fork and mark the child's
 * pools as having no workers; the first parallel loop in the child starts them again. */
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getaffinity, sched_getcpu, pthread_setaffinity_np, CPU_COUNT */
#endif
#include "thread_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

/* Bound of the spin-waits before a thread sleeps on a condition variable (nanoseconds):
 * long enough to cover the gap between the parallel_for calls of one network run and between
 * runs called back to back (the caller's own code in between: tens of microseconds from
 * Python, more when a layer runs on the caller alone), short enough not to burn a core for
 * long when the pool goes idle (onnxruntime's pool threads spin 10-50 ms on this machine).
 * With 200 us, a two-thread 1x1 convolution run back to back took 1.0-1.3 ms instead of
 * 0.55 in 3 of 4 benchmark runs: the worker slept between runs and, woken, was put on the
 * caller's CPU (leave_cpu), and the two shared a core until it slept again. */
#define ACCEL_SPIN_NS 1000000

/* Parts per thread a loop is split into (at most; an owned loop always has this many per
 * share, some possibly empty): threads that finish early take the parts of those that are
 * slower or were descheduled, so uneven jobs still balance. */
#define ACCEL_PARTS_PER_THREAD 4
/* A thread's share of a job's parts: one atomic word on a cache line of its own,
 * (generation mod 2^32) << 32 | front << 16 | back, the parts [front, back) of the share not
 * claimed yet (parts <= 256 threads x 4 < 2^16). */
typedef struct accel_share {
    _Alignas(64) atomic_uint_fast64_t word;
} accel_share;

static uint_fast64_t share_word(uint64_t gen, int front, int back) {
    return ((uint_fast64_t)(gen & 0xFFFFFFFFu) << 32) | ((uint_fast64_t)front << 16) | (uint_fast64_t)back;
}

/* A worker's start argument: its thread pool and its thread index (1..num_threads-1). */
typedef struct accel_worker {
    struct accel_threads* pool;
    int index;
} accel_worker;

/* Test builds only (tests/cpuacc/test_thread_pool_race.py compiles this file with
 * -DACCEL_THREADS_TEST_PREEMPT): a worker yields its CPU at the points where being descheduled
 * exposes a race in the protocol below, one time in three, so a stress loop meets them often. */
#if defined(ACCEL_THREADS_TEST_PREEMPT)
static void preempt_point(void) {
    static atomic_uint calls;
    if (atomic_fetch_add(&calls, 1) % 3 == 0) {
        sched_yield();
    }
}
#else
#define preempt_point() ((void)0)
#endif

struct accel_threads {
    int num_threads;           /* total, caller included */
    pthread_t* threads;        /* num_threads - 1 workers */
    int started;               /* workers running in this process (0 in a forked child until restarted) */
    struct accel_threads* next_pool; /* the list of live pools (fork handlers) */
    pthread_mutex_t submit;    /* one parallel_for at a time; others run inline */
    pthread_mutex_t lock;      /* guards the sleeps and wake-ups below */
    pthread_cond_t wake;       /* sleeping workers wait for a new generation */
    pthread_cond_t done;       /* a sleeping caller waits for every part to finish */
    /* Publication protocol (all seq_cst): the caller writes the job, resets `finished`, fills
     * each share with its parts, tagged with the new generation, and stores generation; a
     * worker loads generation, then reads the job, then claims parts with compare-exchanges on
     * the shares, which succeed only on a share tagged with the generation it loaded and only
     * while that share has parts left. A new job is published only after every part of the
     * previous one ran, so every share of an older generation is empty: a worker that loaded
     * an older generation claims nothing, whatever fields of the newer job it read (the claim
     * never depends on them; the first protocol compared its claim index with the job's part
     * count, and a worker that read the newer, larger count could run a part of the newer job
     * under the older generation). A thread going to sleep first counts itself in `sleepers` /
     * sets `caller_sleeping` under `lock`, then re-checks its condition; the other side
     * changes the condition, then looks at the counter and, if set, signals under `lock`. So a
     * wake-up is never lost and, when nobody sleeps, nobody takes `lock`. */
    atomic_uint_fast64_t generation;
    accel_share* shares;        /* num_threads shares, 64-byte aligned */
    accel_worker* workers;      /* num_threads - 1 start arguments */
    atomic_int finished;        /* parts of the current job done */
    atomic_int stop;
    atomic_int sleepers;        /* workers blocked (or about to block) on `wake` */
    atomic_int caller_cpu;      /* the CPU the caller published the current job from (-1: unknown) */
    atomic_int caller_sleeping;
    /* The current job (stored before generation is published). */
    _Atomic(accel_range_fn) fn;
    _Atomic(void*) ctx;
    _Atomic(int64_t) n;
    atomic_int parts;           /* ranges the job is split into (<= num_threads * 4) */
    _Atomic(const int64_t*) cuts; /* an owned loop's num_threads + 1 cuts; NULL: first come */
    /* Floating-point mode: every thread of a job runs with the caller's control bits (x86:
     * MXCSR's rounding and masks), plus flush-to-zero and denormals-are-zero when `flush`. */
    atomic_int flush;
    atomic_uint fp_control;     /* the current job's control bits (stored before generation) */
};

/* ---- Floating-point mode ------------------------------------------------------------------------
 * Subnormal results make x86 cores from Intel take a microcode assist of about a hundred cycles
 * per instruction (AMD's cores handle them at full speed): a network whose activations reach
 * the subnormals (SiLU of large negative inputs, exp's tail) ran 2x slower on a Xeon for it,
 * every layer after paying for the subnormals it read. With flush set, loops run with MXCSR's
 * FTZ bit: subnormal results are 0, so none reaches the next layer. Not DAZ: inputs are read as
 * they are (a subnormal compares unequal to 0 and casts to True, as ONNX asks; DAZ would also
 * spare the assist on subnormal inputs, 9.2 against 9.9 ms on that network, at that price). The
 * caller's MXCSR is restored when the loop returns. */

#if defined(__x86_64__) || defined(__i386__)
#define ACCEL_FP_FLUSH 0x8000u    /* MXCSR FTZ (bit 15) */
#define ACCEL_FP_STATUS 0x003Fu   /* MXCSR's sticky exception flags: not a mode */
static unsigned fp_get(void) { return _mm_getcsr(); }
static void fp_set(unsigned csr) { _mm_setcsr(csr); }
#else
#define ACCEL_FP_FLUSH 0u
#define ACCEL_FP_STATUS 0u
static unsigned fp_get(void) { return 0u; }
static void fp_set(unsigned csr) { (void)csr; }
#endif

/* The caller's mode made the job's; returns the caller's to restore. */
static unsigned fp_enter(accel_threads* p, unsigned* job) {
    const unsigned saved = fp_get();
    unsigned want = saved & ~ACCEL_FP_STATUS;
    if (p != NULL && atomic_load(&p->flush)) {
        want |= ACCEL_FP_FLUSH;
    }
    if (want != (saved & ~ACCEL_FP_STATUS)) {
        fp_set(want | (saved & ACCEL_FP_STATUS));
    }
    *job = want;
    return saved;
}

static void fp_leave(unsigned saved) {
    if ((fp_get() & ~ACCEL_FP_STATUS) != (saved & ~ACCEL_FP_STATUS)) {
        fp_set((saved & ~ACCEL_FP_STATUS) | (fp_get() & ACCEL_FP_STATUS));
    }
}

/* A worker takes the job's mode. */
static void fp_adopt(unsigned job) {
    const unsigned now = fp_get();
    if ((now & ~ACCEL_FP_STATUS) != job) {
        fp_set(job | (now & ACCEL_FP_STATUS));
    }
}

void accel_threads_set_flush_denormals(accel_threads* p, int flush) {
    if (p != NULL) {
        atomic_store(&p->flush, flush != 0);
    }
}

/* Range `part` of `parts` over [0, n): contiguous and balanced. */
static void part_range(int64_t n, int parts, int part, int64_t* begin, int64_t* end) {
    int64_t base = n / parts, extra = n % parts;
    *begin = part * base + (part < extra ? part : extra);
    *end = *begin + base + (part < extra ? 1 : 0);
}

/* One step of a spin-wait: tells the core this is a spin loop. */
static void spin_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Monotonic nanoseconds (the spin bound; profiled runs: thread_pool.h). */
int64_t accel_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t now_ns(void) { return accel_now_ns(); }

/* Spins up to ACCEL_SPIN_NS while the generation is still `seen` and stop is clear;
 * returns 1 once either changed, 0 on timeout. */
static int spin_until_generation(accel_threads* p, uint64_t seen) {
    int64_t deadline = 0;
    for (unsigned i = 0;; ++i) {
        if (atomic_load(&p->generation) != seen || atomic_load(&p->stop)) {
            return 1;
        }
        if ((i & 63u) == 0) {
            int64_t t = now_ns();
            if (deadline == 0) {
                deadline = t + ACCEL_SPIN_NS;
            } else if (t > deadline) {
                return 0;
            }
        }
        spin_pause();
    }
}

/* Takes one part of share `t` of job `gen`, from its front (its owner) or its back (a thief);
 * returns the part's index, or -1 when the share holds none (or belongs to another job). */
static int take_part(accel_threads* p, uint64_t gen, int t, int from_front) {
    accel_share* sh = &p->shares[t];
    for (;;) {
        uint_fast64_t w = atomic_load(&sh->word);
        int front = (int)((w >> 16) & 0xFFFFu), back = (int)(w & 0xFFFFu);
        if ((w >> 32) != (gen & 0xFFFFFFFFu) || front >= back) {
            return -1;
        }
        preempt_point();
        uint_fast64_t next = from_front ? share_word(gen, front + 1, back) : share_word(gen, front, back - 1);
        if (atomic_compare_exchange_weak(&sh->word, &w, next)) {
            return from_front ? front : back - 1;
        }
    }
}

/* The items of part `part` of a job: with cuts, part t * ACCEL_PARTS_PER_THREAD + i is piece i
 * of thread t's share [cuts[t], cuts[t + 1]); without, piece `part` of [0, n). */
static void part_items(int64_t n, int parts, const int64_t* cuts, int part, int64_t* begin, int64_t* end) {
    if (cuts == NULL) {
        part_range(n, parts, part, begin, end);
        return;
    }
    int t = part / ACCEL_PARTS_PER_THREAD;
    part_range(cuts[t + 1] - cuts[t], ACCEL_PARTS_PER_THREAD, part % ACCEL_PARTS_PER_THREAD, begin, end);
    *begin += cuts[t];
    *end += cuts[t];
}

/* Thread `self` runs parts of job `gen` until none is left (or a newer job replaced it). With
 * owned shares, its own from the front, then the others', each from the back; first come,
 * every thread takes the next part of share 0. */
static void run_parts(accel_threads* p, uint64_t gen, accel_range_fn fn, void* ctx, int64_t n,
                      int parts, const int64_t* cuts, int self) {
    for (int k = 0; k < (cuts != NULL ? p->num_threads : 1); ++k) {
        int t = cuts != NULL ? (self + k) % p->num_threads : 0;
        for (int part; (part = take_part(p, gen, t, cuts == NULL || k == 0)) >= 0;) {
            int64_t b, e;
            part_items(n, parts, cuts, part, &b, &e);
            if (b < e) {
                fn(ctx, b, e);
            }
            if (atomic_fetch_add(&p->finished, 1) + 1 == parts && atomic_load(&p->caller_sleeping)) {
                pthread_mutex_lock(&p->lock);
                pthread_cond_signal(&p->done);
                pthread_mutex_unlock(&p->lock);
            }
        }
    }
}

/* The CPU the calling thread runs on, -1 when unknown. */
static int current_cpu(void) {
#if defined(__linux__)
    return sched_getcpu();
#else
    return -1;
#endif
}

/* Moves the calling thread off CPU `cpu` when it runs there and may run elsewhere (its
 * affinity is left as it was). A worker woken from its sleep is often placed by the kernel on
 * the CPU of the thread that woke it (the caller, which then goes on running its own parts),
 * and the two share one core for the job. Measured on this VM, two-thread 1x1 convolution
 * 256 -> 1024 on 14x14 run every 5-20 ms (so the worker sleeps between runs): 1.60-1.77 ms
 * per run without this, 1.44-1.55 with it (0.55 back to back). */
static void leave_cpu(int cpu) {
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t all, others;
    if (cpu < 0 || current_cpu() != cpu || pthread_getaffinity_np(pthread_self(), sizeof(all), &all) != 0 ||
        !CPU_ISSET(cpu, &all) || CPU_COUNT(&all) < 2) {
        return;
    }
    others = all;
    CPU_CLR(cpu, &others);
    if (pthread_setaffinity_np(pthread_self(), sizeof(others), &others) == 0) { /* migrates now */
        pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
    }
#else
    (void)cpu;
#endif
}

/* A worker: waits for each new generation (spinning, then sleeping) and claims parts of
 * that job; after a sleep, it first leaves the caller's CPU (leave_cpu). */
static void* worker_main(void* raw) {
    accel_threads* p = ((accel_worker*)raw)->pool;
    const int self = ((accel_worker*)raw)->index;
    uint64_t seen = 0;
    for (;;) {
        if (!spin_until_generation(p, seen)) {
            pthread_mutex_lock(&p->lock);
            atomic_fetch_add(&p->sleepers, 1);
            while (!atomic_load(&p->stop) && atomic_load(&p->generation) == seen) {
                pthread_cond_wait(&p->wake, &p->lock);
            }
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->lock);
            leave_cpu(atomic_load(&p->caller_cpu));
        }
        if (atomic_load(&p->stop)) {
            break;
        }
        seen = atomic_load(&p->generation);
        preempt_point();
        accel_range_fn fn = atomic_load(&p->fn);
        preempt_point();
        void* ctx = atomic_load(&p->ctx);
        preempt_point();
        int64_t n = atomic_load(&p->n);
        preempt_point();
        const int64_t* cuts = atomic_load(&p->cuts);
        preempt_point();
        fp_adopt(atomic_load(&p->fp_control));
        run_parts(p, seen, fn, ctx, n, atomic_load(&p->parts), cuts, self);
    }
    return NULL;
}

int accel_available_cpus(void) {
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n >= 1) {
            return n;
        }
    }
#endif
#if defined(_SC_NPROCESSORS_ONLN)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n >= 1) {
        return n > 256 ? 256 : (int)n;
    }
#endif
    return 1;
}

/* Every live pool, for the fork handlers: pools_lock guards the list. */
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static accel_threads* pools = NULL;
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

/* Before fork: no pool is mid-loop (each one's submit is held, so a loop in flight on another
 * thread finishes first and later ones run inline until the fork is done) and no thread holds
 * a pool's lock. */
static void before_fork(void) {
    pthread_mutex_lock(&pools_lock);
    for (accel_threads* p = pools; p != NULL; p = p->next_pool) {
        pthread_mutex_lock(&p->submit);
        pthread_mutex_lock(&p->lock);
    }
}

static void after_fork_in_parent(void) {
    for (accel_threads* p = pools; p != NULL; p = p->next_pool) {
        pthread_mutex_unlock(&p->lock);
        pthread_mutex_unlock(&p->submit);
    }
    pthread_mutex_unlock(&pools_lock);
}

/* In the child (whose one thread is the one that took the locks in before_fork): the workers
 * are gone. Each pool gets new condition variables (the old ones may count waiters that do not
 * exist here) and no started workers; parallel_run starts them again (start_workers) on its
 * first loop. */
static void after_fork_in_child(void) {
    for (accel_threads* p = pools; p != NULL; p = p->next_pool) {
        pthread_cond_init(&p->wake, NULL);
        pthread_cond_init(&p->done, NULL);
        p->started = 0;
        atomic_store(&p->sleepers, 0);
        atomic_store(&p->caller_sleeping, 0);
        pthread_mutex_unlock(&p->lock);
        pthread_mutex_unlock(&p->submit);
    }
    pthread_mutex_unlock(&pools_lock);
}

static void register_fork_handlers(void) {
    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
}

/* Starts the workers not running (all at creation; again in a forked child). Returns 0 when
 * every worker runs; on failure the ones started keep running (started counts them). */
static int start_workers(accel_threads* p) {
    for (int i = p->started + 1; i < p->num_threads; ++i) {
        p->workers[i - 1] = (accel_worker){p, i};
        if (pthread_create(&p->threads[i - 1], NULL, worker_main, &p->workers[i - 1]) != 0) {
            return -1;
        }
        p->started = i;
    }
    return 0;
}

accel_threads* accel_threads_create(int num_threads) {
    if (num_threads < 1) {
        num_threads = 1;
    }
    accel_threads* p = (accel_threads*)calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    p->num_threads = num_threads;
    atomic_init(&p->generation, 0);
    atomic_init(&p->finished, 0);
    atomic_init(&p->fn, NULL);
    atomic_init(&p->ctx, NULL);
    atomic_init(&p->n, 0);
    atomic_init(&p->parts, 0);
    atomic_init(&p->cuts, NULL);
    atomic_init(&p->flush, 0);
    atomic_init(&p->fp_control, 0u);
    atomic_init(&p->stop, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_cpu, -1);
    atomic_init(&p->caller_sleeping, 0);
    pthread_mutex_init(&p->submit, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->shares = (accel_share*)aligned_alloc(64, sizeof(accel_share) * (size_t)num_threads);
    if (p->shares == NULL) {
        accel_threads_destroy(p);
        return NULL;
    }
    for (int t = 0; t < num_threads; ++t) {
        atomic_init(&p->shares[t].word, share_word(0, 0, 0));
    }
    if (num_threads > 1) {
        p->threads = (pthread_t*)calloc((size_t)num_threads - 1, sizeof(pthread_t));
        p->workers = (accel_worker*)calloc((size_t)num_threads - 1, sizeof(accel_worker));
        if (p->threads == NULL || p->workers == NULL) {
            accel_threads_destroy(p);
            return NULL;
        }
        if (start_workers(p) != 0) {
            accel_threads_destroy(p);
            return NULL;
        }
    }
    pthread_once(&fork_handlers_once, register_fork_handlers);
    pthread_mutex_lock(&pools_lock);
    p->next_pool = pools;
    pools = p;
    pthread_mutex_unlock(&pools_lock);
    return p;
}

void accel_threads_destroy(accel_threads* p) {
    if (p == NULL) {
        return;
    }
    pthread_mutex_lock(&pools_lock);
    for (accel_threads** at = &pools; *at != NULL; at = &(*at)->next_pool) {
        if (*at == p) {
            *at = p->next_pool;
            break;
        }
    }
    pthread_mutex_unlock(&pools_lock);
    atomic_store(&p->stop, 1);
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->started; ++i) {
        pthread_join(p->threads[i], NULL);
    }
    free(p->threads);
    free(p->workers);
    free(p->shares);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->submit);
    free(p);
}

int accel_threads_count(const accel_threads* threads) { return threads != NULL ? threads->num_threads : 1; }

/* The parallel loop of both entry points: cuts NULL (first come) or num_threads + 1 cuts. */
static void parallel_run(accel_threads* p, int64_t n, int64_t grain, const int64_t* cuts, accel_range_fn fn,
                         void* ctx) {
    if (n <= 0) {
        return;
    }
    if (grain < 1) {
        grain = 1;
    }
    int64_t max_parts = (n + grain - 1) / grain;
    int parts = p != NULL ? p->num_threads * ACCEL_PARTS_PER_THREAD : 1;
    if (max_parts < parts && cuts == NULL) {
        parts = (int)max_parts;
    }
    unsigned job_fp = 0;
    const unsigned caller_fp = fp_enter(p, &job_fp);
    if (p == NULL || p->num_threads <= 1 || max_parts <= 1 || pthread_mutex_trylock(&p->submit) != 0) {
        fn(ctx, 0, n); /* one range, or the pool is busy (another caller or a nested call) */
        fp_leave(caller_fp);
        return;
    }
    if (p->started < p->num_threads - 1 && start_workers(p) != 0 && p->started == 0) {
        pthread_mutex_unlock(&p->submit); /* a forked child that cannot start threads runs inline */
        fn(ctx, 0, n);
        fp_leave(caller_fp);
        return;
    }
    atomic_store(&p->fp_control, job_fp);
    uint64_t gen = (atomic_load(&p->generation) + 1) & ((UINT64_C(1) << 48) - 1);
    atomic_store(&p->fn, fn);
    atomic_store(&p->ctx, ctx);
    atomic_store(&p->n, n);
    atomic_store(&p->parts, parts);
    atomic_store(&p->cuts, cuts);
    atomic_store(&p->finished, 0);
    atomic_store(&p->caller_cpu, current_cpu());
    for (int t = 0; t < p->num_threads; ++t) { /* first come: every part in share 0 */
        int front = cuts != NULL ? t * ACCEL_PARTS_PER_THREAD : t == 0 ? 0 : parts;
        int back = cuts != NULL ? front + ACCEL_PARTS_PER_THREAD : parts;
        atomic_store(&p->shares[t].word, share_word(gen, front, back));
    }
    atomic_store(&p->generation, gen); /* publishes the job */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
    }

    run_parts(p, gen, fn, ctx, n, parts, cuts, 0);

    int64_t deadline = 0;
    for (unsigned i = 0; atomic_load(&p->finished) < parts; ++i) {
        if ((i & 63u) == 0) {
            int64_t t = now_ns();
            if (deadline == 0) {
                deadline = t + ACCEL_SPIN_NS;
            } else if (t > deadline) {
                pthread_mutex_lock(&p->lock);
                atomic_store(&p->caller_sleeping, 1);
                while (atomic_load(&p->finished) < parts) {
                    pthread_cond_wait(&p->done, &p->lock);
                }
                atomic_store(&p->caller_sleeping, 0);
                pthread_mutex_unlock(&p->lock);
                break;
            }
        }
        spin_pause();
    }
    pthread_mutex_unlock(&p->submit);
    fp_leave(caller_fp);
}

void accel_parallel_for_grain(accel_threads* p, int64_t n, int64_t grain, accel_range_fn fn,
                              void* ctx) {
    parallel_run(p, n, grain, NULL, fn, ctx);
}

void accel_parallel_for_owned(accel_threads* p, int64_t n, int64_t grain, const int64_t* cuts,
                              accel_range_fn fn, void* ctx) {
    parallel_run(p, n, grain, cuts, fn, ctx);
}

void accel_parallel_for(accel_threads* threads, int64_t n, accel_range_fn fn, void* ctx) {
    accel_parallel_for_grain(threads, n, 1, fn, ctx);
}
