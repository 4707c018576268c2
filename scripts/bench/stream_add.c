/* The memory bandwidth of this machine, measured as STREAM's "add" measures it: the benchmark's
 * "% peak" for GB/s rows.
 *
 * Usage: stream_add THREADS MIB REPEATS. c[i] = a[i] + b[i] over three float32 arrays of MIB MiB
 * each, split into THREADS contiguous parts. Each thread first touches its own part (so its pages
 * are mapped before the clock starts) and waits at a barrier; a run lasts from the first thread's
 * start to the last one's end, as the threads saw them. Plain stores, as STREAM compiled with a
 * C compiler uses (built with -O3 -march=native by scripts/bench/machine.py, so the loop runs the
 * widest vectors; no non-temporal stores, so each written line is read first and that traffic is
 * not counted, as in STREAM). Prints the best of REPEATS runs as GB/s of bytes read + written
 * (3 x MIB MiB per run) and the check sum of c (2 x the element count when the adds are right).
 * Exit 2 on bad arguments, 1 if memory or a thread is missing. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct {
    float* restrict a;
    float* restrict b;
    float* restrict c;
    size_t lo, hi;
    int repeats;
    double* t0; /* per repeat: when this thread started its part */
    double* t1; /* per repeat: when it finished */
    pthread_barrier_t* start;
} job;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void add(float* restrict c, const float* restrict a, const float* restrict b, size_t n) {
    for (size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

static void* run(void* arg) {
    job* j = (job*)arg;
    for (size_t i = j->lo; i < j->hi; ++i) {
        j->a[i] = 1.0f;
        j->b[i] = 1.0f;
        j->c[i] = 0.0f;
    }
    for (int r = 0; r < j->repeats; ++r) {
        pthread_barrier_wait(j->start);
        j->t0[r] = now();
        add(j->c + j->lo, j->a + j->lo, j->b + j->lo, j->hi - j->lo);
        j->t1[r] = now();
    }
    return NULL;
}

int main(int argc, char** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s THREADS MIB REPEATS\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[1]), repeats = atoi(argv[3]);
    long mib = atol(argv[2]);
    if (threads < 1 || threads > 1024 || mib < 1 || mib > 65536 || repeats < 1 || repeats > 1000) {
        fprintf(stderr, "stream_add: THREADS in 1..1024, MIB in 1..65536, REPEATS in 1..1000\n");
        return 2;
    }
    const size_t n = (size_t)mib * 1024 * 1024 / sizeof(float);
    float* a = aligned_alloc(64, n * sizeof(float));
    float* b = aligned_alloc(64, n * sizeof(float));
    float* c = aligned_alloc(64, n * sizeof(float));
    pthread_t* tid = malloc(sizeof(pthread_t) * (size_t)threads);
    job* jobs = malloc(sizeof(job) * (size_t)threads);
    double* times = malloc(sizeof(double) * 2 * (size_t)threads * (size_t)repeats);
    if (a == NULL || b == NULL || c == NULL || tid == NULL || jobs == NULL || times == NULL) {
        fprintf(stderr, "stream_add: cannot allocate 3 x %ld MiB\n", mib);
        return 1;
    }
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int t = 0; t < threads; ++t) {
        double* mine = times + 2 * (size_t)t * (size_t)repeats;
        jobs[t] = (job){a, b, c, n * (size_t)t / (size_t)threads, n * (size_t)(t + 1) / (size_t)threads,
                        repeats, mine, mine + repeats, &start};
        if (pthread_create(&tid[t], NULL, run, &jobs[t]) != 0) {
            fprintf(stderr, "stream_add: cannot start thread %d\n", t);
            return 1;
        }
    }
    for (int t = 0; t < threads; ++t) pthread_join(tid[t], NULL);
    pthread_barrier_destroy(&start);
    double best = 0.0;
    for (int r = 0; r < repeats; ++r) {
        double t0 = jobs[0].t0[r], t1 = jobs[0].t1[r];
        for (int t = 1; t < threads; ++t) {
            if (jobs[t].t0[r] < t0) t0 = jobs[t].t0[r];
            if (jobs[t].t1[r] > t1) t1 = jobs[t].t1[r];
        }
        double gbs = 3.0 * (double)n * sizeof(float) / (t1 - t0) / 1e9;
        if (gbs > best) best = gbs;
    }
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += c[i];
    printf("%.1f %.0f\n", best, sum);
    free(a);
    free(b);
    free(c);
    free(tid);
    free(jobs);
    free(times);
    return 0;
}
