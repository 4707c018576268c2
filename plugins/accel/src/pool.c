/* CpuAcc thread pool: persistent pthreads; a parallel_for is split into up to
 * ACCEL_PARTS_PER_THREAD ranges ("parts") per thread, and the caller and the workers claim
 * parts until none is left, so a worker the OS has not scheduled yet delays nothing (its
 * parts run on whoever is free) and uneven parts balance. Workers and the caller spin
 * (bounded, ACCEL_SPIN_NS) before sleeping, so back-to-back parallel_for calls cost no
 * system call; a worker woken from its sleep on the caller's CPU moves off it (leave_cpu). */
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getaffinity, sched_getcpu, pthread_setaffinity_np, CPU_COUNT */
#endif
#include "accel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

/* Bound of the spin-waits before a thread sleeps on a condition variable (nanoseconds):
 * long enough to cover the gap between the parallel_for calls of one network run and between
 * runs called back to back (the caller's own code in between: tens of microseconds from
 * Python, more when a layer runs on the caller alone), short enough not to burn a core for
 * long when the pool goes idle (onnxruntime's pool threads spin 10-50 ms on this machine).
 * With 200 us, a two-thread 1x1 convolution run back to back took 1.0-1.3 ms instead of
 * 0.55 in 3 of 4 benchmark runs: the worker slept between runs and, woken, was put on the
 * caller's CPU (leave_cpu), and the two shared a core until it slept again. */
#define ACCEL_SPIN_NS 1000000

/* Parts per thread a parallel_for is split into (at most): threads that finish early claim
 * the parts of those that are slower or were descheduled, so uneven jobs still balance. */
#define ACCEL_PARTS_PER_THREAD 4
/* The part index of a claim no job reaches (parts <= 256 threads x 4 < 0xFFFF). */
#define CLAIM_NONE 0xFFFFu

/* Test builds only (tests/cpuacc/test_pool_race.py compiles this file with
 * -DACCEL_POOL_TEST_PREEMPT): a worker yields its CPU at the points where being descheduled
 * exposes a race in the protocol below, one time in three, so a stress loop meets them often. */
#if defined(ACCEL_POOL_TEST_PREEMPT)
static void preempt_point(void) {
    static atomic_uint calls;
    if (atomic_fetch_add(&calls, 1) % 3 == 0) {
        sched_yield();
    }
}
#else
#define preempt_point() ((void)0)
#endif

struct accel_pool {
    int num_threads;           /* total, caller included */
    pthread_t* threads;        /* num_threads - 1 workers */
    int started;               /* workers actually started */
    pthread_mutex_t submit;    /* one parallel_for at a time; others run inline */
    pthread_mutex_t lock;      /* guards the sleeps and wake-ups below */
    pthread_cond_t wake;       /* sleeping workers wait for a new generation */
    pthread_cond_t done;       /* a sleeping caller waits for every part to finish */
    /* Publication protocol (all seq_cst): the caller first makes `claim` unclaimable for the
     * new generation (CLAIM_NONE), then writes the job, resets `finished`, sets `claim` to the
     * new generation's part 0 and stores generation; a worker loads generation, then reads the
     * job, then claims parts with a compare-exchange on `claim`, which carries the generation
     * it is for, so a worker still looking at an older job claims nothing of a newer one (and
     * drops what it read): any field of a newer job it read was written after that job's
     * CLAIM_NONE, which its later load of `claim` therefore sees, or something newer. A thread going to sleep first counts itself in `sleepers` / sets
     * `caller_sleeping` under `lock`, then re-checks its condition; the other side changes
     * the condition, then looks at the counter and, if set, signals under `lock`. So a
     * wake-up is never lost and, when nobody sleeps, nobody takes `lock`. */
    atomic_uint_fast64_t generation;
    atomic_uint_fast64_t claim; /* generation << 16 | next unclaimed part */
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
};

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

/* Monotonic nanoseconds (for the spin bound). */
static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Spins up to ACCEL_SPIN_NS while the generation is still `seen` and stop is clear;
 * returns 1 once either changed, 0 on timeout. */
static int spin_until_generation(accel_pool* p, uint64_t seen) {
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

/* Claims and runs parts of job `gen` until none is left (or a newer job replaced it). */
static void run_parts(accel_pool* p, uint64_t gen, accel_range_fn fn, void* ctx, int64_t n,
                      int parts) {
    for (;;) {
        uint_fast64_t c = atomic_load(&p->claim);
        if ((c >> 16) != gen || (int)(c & 0xFFFFu) >= parts) {
            return;
        }
        preempt_point();
        if (!atomic_compare_exchange_weak(&p->claim, &c, c + 1)) {
            continue;
        }
        int64_t b, e;
        part_range(n, parts, (int)(c & 0xFFFFu), &b, &e);
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
    accel_pool* p = (accel_pool*)raw;
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
        run_parts(p, seen, fn, ctx, n, atomic_load(&p->parts));
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

accel_pool* accel_pool_create(int num_threads) {
    if (num_threads < 1) {
        num_threads = 1;
    }
    accel_pool* p = (accel_pool*)calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    p->num_threads = num_threads;
    atomic_init(&p->generation, 0);
    atomic_init(&p->claim, 0);
    atomic_init(&p->finished, 0);
    atomic_init(&p->fn, NULL);
    atomic_init(&p->ctx, NULL);
    atomic_init(&p->n, 0);
    atomic_init(&p->parts, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_cpu, -1);
    atomic_init(&p->caller_sleeping, 0);
    pthread_mutex_init(&p->submit, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (num_threads > 1) {
        p->threads = (pthread_t*)calloc((size_t)num_threads - 1, sizeof(pthread_t));
        if (p->threads == NULL) {
            accel_pool_destroy(p);
            return NULL;
        }
        for (int i = 1; i < num_threads; ++i) {
            if (pthread_create(&p->threads[i - 1], NULL, worker_main, p) != 0) {
                accel_pool_destroy(p);
                return NULL;
            }
            p->started = i;
        }
    }
    return p;
}

void accel_pool_destroy(accel_pool* p) {
    if (p == NULL) {
        return;
    }
    atomic_store(&p->stop, 1);
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->started; ++i) {
        pthread_join(p->threads[i], NULL);
    }
    free(p->threads);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->submit);
    free(p);
}

int accel_pool_size(const accel_pool* pool) { return pool != NULL ? pool->num_threads : 1; }

void accel_parallel_for_grain(accel_pool* p, int64_t n, int64_t grain, accel_range_fn fn,
                              void* ctx) {
    if (n <= 0) {
        return;
    }
    if (grain < 1) {
        grain = 1;
    }
    int64_t max_parts = (n + grain - 1) / grain;
    int parts = p != NULL ? p->num_threads * ACCEL_PARTS_PER_THREAD : 1;
    if (max_parts < parts) {
        parts = (int)max_parts;
    }
    if (p == NULL || p->num_threads <= 1 || parts <= 1 || pthread_mutex_trylock(&p->submit) != 0) {
        fn(ctx, 0, n); /* one range, or the pool is busy (another caller or a nested call) */
        return;
    }
    uint64_t gen = (atomic_load(&p->generation) + 1) & ((UINT64_C(1) << 48) - 1);
    /* No part of any job is claimable while the job's fields change: a worker that read the
     * previous generation and then some of these fields finds this claim (or the next), not
     * its generation's, and claims nothing (it would otherwise claim part k >= the previous
     * job's parts under the previous generation and run it with the new job's fields). */
    atomic_store(&p->claim, ((uint_fast64_t)gen << 16) | CLAIM_NONE);
    atomic_store(&p->fn, fn);
    atomic_store(&p->ctx, ctx);
    atomic_store(&p->n, n);
    atomic_store(&p->parts, parts);
    atomic_store(&p->finished, 0);
    atomic_store(&p->caller_cpu, current_cpu());
    atomic_store(&p->claim, (uint_fast64_t)gen << 16);
    atomic_store(&p->generation, gen); /* publishes the job */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
    }

    run_parts(p, gen, fn, ctx, n, parts);

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
}

void accel_parallel_for(accel_pool* pool, int64_t n, accel_range_fn fn, void* ctx) {
    accel_parallel_for_grain(pool, n, 1, fn, ctx);
}
