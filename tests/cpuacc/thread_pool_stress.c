/* Stress driver for CpuAcc's thread pool (plugins/accel/src/thread_pool.c), built and run by
 * test_thread_pool_race.py: usage `thread_pool_stress THREADS ITERATIONS`. Back-to-back parallel loops of
 * 1..500 items, alternating between two functions and two contexts on the caller's stack, and
 * between first-come loops (accel_parallel_for) and owned ones (accel_parallel_for_owned, with
 * cuts that leave some threads nothing, give some fewer items than parts, or give one thread
 * everything); every item must run exactly once, with its own loop's function and context,
 * and no part may run after its loop returned. Exit status 0 and "ok" on stdout, else a
 * message on stderr and abort(). */
#include "thread_pool.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_ITEMS 512
#define MAX_THREADS 64

typedef struct loop {
    atomic_int* hits;
    int tag; /* 0xA or 0xB while the loop runs, 0xDEAD after it returned */
} loop;

static void check_tag(const loop* l, int want) {
    if (l->tag != want) {
        fprintf(stderr, "a part ran with the context of another loop (tag %#x, want %#x)\n", l->tag, want);
        abort();
    }
}

static void run_a(void* ctx, int64_t begin, int64_t end) {
    loop* l = (loop*)ctx;
    check_tag(l, 0xA);
    for (int64_t i = begin; i < end; ++i) atomic_fetch_add(&l->hits[i], 1);
}

static void run_b(void* ctx, int64_t begin, int64_t end) {
    loop* l = (loop*)ctx;
    check_tag(l, 0xB);
    for (int64_t i = begin; i < end; ++i) atomic_fetch_add(&l->hits[i], 1);
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: thread_pool_stress THREADS ITERATIONS\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    long iterations = atol(argv[2]);
    if (threads < 1 || threads > MAX_THREADS || iterations < 1) {
        fprintf(stderr, "thread_pool_stress: THREADS in 1..%d, ITERATIONS >= 1\n", MAX_THREADS);
        return 2;
    }
    accel_threads* pool = accel_threads_create(threads);
    if (pool == NULL) {
        fprintf(stderr, "cannot create a pool of %d threads\n", threads);
        return 1;
    }
    atomic_int hits[MAX_ITEMS];
    for (long it = 0; it < iterations; ++it) {
        int64_t n = 1 + (it * 7919) % (MAX_ITEMS - 12);
        for (int64_t i = 0; i < n; ++i) atomic_store(&hits[i], 0);
        loop l = {hits, (it & 1) ? 0xA : 0xB};
        accel_range_fn fn = (it & 1) ? run_a : run_b;
        if ((it / 2) % 2 == 0) {
            accel_parallel_for(pool, n, fn, &l);
        } else {
            /* cuts: a pseudo-random nondecreasing split of [0, n); every 5th loop gives one
             * thread (a different one each time) all items */
            int64_t cuts[MAX_THREADS + 1];
            unsigned seed = (unsigned)it * 2654435761u;
            cuts[0] = 0;
            for (int t = 1; t < threads; ++t) {
                seed = seed * 1103515245u + 12345u;
                int64_t step = (int64_t)(seed >> 16) % (2 * n / threads + 2);
                cuts[t] = cuts[t - 1] + step < n ? cuts[t - 1] + step : n;
            }
            cuts[threads] = n;
            if (it % 5 == 0) {
                int owner = (int)((it / 5) % threads);
                for (int t = 0; t <= threads; ++t) cuts[t] = t <= owner ? 0 : n;
            }
            accel_parallel_for_owned(pool, n, 1 + (it % 3 == 0 ? n / 8 : 0), cuts, fn, &l);
        }
        l.tag = 0xDEAD;
        for (int64_t i = 0; i < n; ++i) {
            if (atomic_load(&hits[i]) != 1) {
                fprintf(stderr, "loop %ld: item %ld of %ld ran %d times\n", it, (long)i, (long)n,
                        atomic_load(&hits[i]));
                abort();
            }
        }
    }
    accel_threads_destroy(pool);
    printf("ok: %ld loops on %d threads\n", iterations, threads);
    return 0;
}
