/* CpuAcc thread pool: persistent pthreads, one range per thread per parallel_for. */
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "accel.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#if defined(__linux__)
#include <sched.h>
#endif

struct accel_pool {
    int num_threads;           /* total, caller included */
    pthread_t* threads;        /* num_threads - 1 workers */
    int started;               /* workers actually started */
    pthread_mutex_t submit;    /* one parallel_for at a time; others run inline */
    pthread_mutex_t lock;      /* guards everything below */
    pthread_cond_t wake;       /* workers wait for a new generation */
    pthread_cond_t done;       /* the caller waits for pending == 0 */
    uint64_t generation;
    int pending;               /* workers still running the current job */
    int stop;
    /* The current job. */
    accel_range_fn fn;
    void* ctx;
    int64_t n;
    int parts;                 /* ranges the job is split into (<= num_threads) */
};

/* Range `part` of `parts` over [0, n): contiguous and balanced. */
static void part_range(int64_t n, int parts, int part, int64_t* begin, int64_t* end) {
    int64_t base = n / parts, extra = n % parts;
    *begin = part * base + (part < extra ? part : extra);
    *end = *begin + base + (part < extra ? 1 : 0);
}

typedef struct worker_arg {
    accel_pool* pool;
    int index; /* 1..num_threads-1 (the caller is part 0) */
} worker_arg;

static void* worker_main(void* raw) {
    worker_arg arg = *(worker_arg*)raw;
    free(raw);
    accel_pool* p = arg.pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->generation == seen) {
            pthread_cond_wait(&p->wake, &p->lock);
        }
        if (p->stop) {
            break;
        }
        seen = p->generation;
        accel_range_fn fn = p->fn;
        void* ctx = p->ctx;
        int64_t n = p->n;
        int parts = p->parts;
        pthread_mutex_unlock(&p->lock);
        if (arg.index < parts) {
            int64_t b, e;
            part_range(n, parts, arg.index, &b, &e);
            if (b < e) {
                fn(ctx, b, e);
            }
        }
        pthread_mutex_lock(&p->lock);
        if (--p->pending == 0) {
            pthread_cond_signal(&p->done);
        }
    }
    pthread_mutex_unlock(&p->lock);
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
            worker_arg* arg = (worker_arg*)malloc(sizeof(*arg));
            if (arg == NULL) {
                accel_pool_destroy(p);
                return NULL;
            }
            arg->pool = p;
            arg->index = i;
            if (pthread_create(&p->threads[i - 1], NULL, worker_main, arg) != 0) {
                free(arg);
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
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
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
    int parts = p != NULL ? p->num_threads : 1;
    if (max_parts < parts) {
        parts = (int)max_parts;
    }
    if (parts <= 1 || pthread_mutex_trylock(&p->submit) != 0) {
        fn(ctx, 0, n); /* one range, or the pool is busy (another caller or a nested call) */
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->parts = parts;
    p->pending = p->num_threads - 1;
    p->generation += 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    int64_t b, e;
    part_range(n, parts, 0, &b, &e);
    fn(ctx, b, e);

    pthread_mutex_lock(&p->lock);
    while (p->pending > 0) {
        pthread_cond_wait(&p->done, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->submit);
}

void accel_parallel_for(accel_pool* pool, int64_t n, accel_range_fn fn, void* ctx) {
    accel_parallel_for_grain(pool, n, 1, fn, ctx);
}
