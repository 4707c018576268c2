/* The float32 FMA peak of this machine, measured: the benchmark's "% peak" for GFLOP/s rows.
 *
 * Usage: fma_peak THREADS ITERATIONS REPEATS. Each of THREADS threads runs ITERATIONS rounds of
 * ACC independent multiply-add chains on vectors as wide as the compiler targets (built with
 * -O2 -march=native by scripts/bench/machine.py: 512-bit on AVX-512 machines, 256-bit on AVX2);
 * enough chains to cover the FMA latency on every pipe (4 cycles x 2 pipes needs 8). Prints the
 * best of REPEATS runs as GFLOP/s (2 per lane per FMA) and the vector width in floats. Exit 2 on
 * bad arguments, 1 if a thread cannot start. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__AVX512F__)
#define LANES 16
#define ACC 12
#elif defined(__AVX__)
#define LANES 8
#define ACC 10
#else
#define LANES 4
#define ACC 8
#endif

typedef float vec __attribute__((vector_size(LANES * sizeof(float))));

typedef struct {
    long iterations;
    float mul, add; /* read at run time, so the compiler cannot fold the chains */
    float sink;     /* a sum of the results, so the chains are not dead code */
    double t0, t1;  /* when this thread started and finished its chains */
    pthread_barrier_t* start;
} job;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ACC chains in named registers: an array of vectors indexed in a loop ends up on the stack. */
#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) CHAINS_MORE(X)
#if ACC == 12
#define CHAINS_MORE(X) X(8) X(9) X(10) X(11)
#elif ACC == 10
#define CHAINS_MORE(X) X(8) X(9)
#else
#define CHAINS_MORE(X)
#endif

static void* run(void* arg) {
    job* j = (job*)arg;
    const long iterations = j->iterations;
    vec m, a;
    for (int l = 0; l < LANES; ++l) {
        m[l] = j->mul;
        a[l] = j->add;
    }
#define INIT(i) vec acc##i = a * (float)((i) + 1);
    CHAINS(INIT)
    pthread_barrier_wait(j->start);
    j->t0 = now();
    for (long it = 0; it < iterations; ++it) {
#define STEP(i) acc##i = acc##i * m + a; /* contracted to one FMA */
        CHAINS(STEP)
    }
    vec total = a - a;
#define SUM(i) total += acc##i;
    CHAINS(SUM)
    j->t1 = now();
    float s = 0.0f;
    for (int l = 0; l < LANES; ++l) s += total[l];
    j->sink = s;
    return NULL;
}

int main(int argc, char** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s THREADS ITERATIONS REPEATS\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[1]), repeats = atoi(argv[3]);
    long iterations = atol(argv[2]);
    if (threads < 1 || threads > 1024 || iterations < 1 || repeats < 1) {
        fprintf(stderr, "fma_peak: THREADS in 1..1024, ITERATIONS and REPEATS >= 1\n");
        return 2;
    }
    pthread_t* tid = malloc(sizeof(pthread_t) * (size_t)threads);
    job* jobs = malloc(sizeof(job) * (size_t)threads);
    if (tid == NULL || jobs == NULL) return 1;
    pthread_barrier_t start;
    double best = 0.0;
    float sink = 0.0f;
    for (int r = 0; r < repeats; ++r) {
        pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
        for (int t = 0; t < threads; ++t) {
            jobs[t] = (job){iterations, 0.999999f, 1e-6f * (float)(t + 1), 0.0f, 0.0, 0.0, &start};
            if (pthread_create(&tid[t], NULL, run, &jobs[t]) != 0) {
                fprintf(stderr, "fma_peak: cannot start thread %d\n", t);
                return 1;
            }
        }
        pthread_barrier_wait(&start);
        /* From the first thread's start to the last one's end, as the threads saw them (this
         * thread may be descheduled past the barrier, and on a small machine often is). */
        double t0 = 0.0, t1 = 0.0;
        for (int t = 0; t < threads; ++t) {
            pthread_join(tid[t], NULL);
            sink += jobs[t].sink;
            if (t == 0 || jobs[t].t0 < t0) t0 = jobs[t].t0;
            if (t == 0 || jobs[t].t1 > t1) t1 = jobs[t].t1;
        }
        double seconds = t1 - t0;
        pthread_barrier_destroy(&start);
        double gflops = 2.0 * ACC * LANES * (double)iterations * threads / seconds / 1e9;
        if (gflops > best) best = gflops;
    }
    printf("%.1f %d %g\n", best, LANES, (double)(sink != sink)); /* the last field keeps sink live: 0 */
    free(tid);
    free(jobs);
    return 0;
}
