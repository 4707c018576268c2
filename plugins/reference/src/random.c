/* RANDOM (ONNX RandomUniform, RandomNormal, their -Like forms, Multinomial): counter-based
 * Philox4x64-10 values, the same on every backend that follows backend_api.h. */
#include "cpuref.h"

#include <math.h>
#include <stdlib.h>

/* ---- Philox4x64-10 (Salmon et al., SC 2011; the constants of Random123 and NumPy) --------- */

#define PHILOX_M0 UINT64_C(0xD2E7470EE14C6C93)
#define PHILOX_M1 UINT64_C(0xCA5A826395121157)
#define PHILOX_W0 UINT64_C(0x9E3779B97F4A7C15)
#define PHILOX_W1 UINT64_C(0xBB67AE8584CAA73B)

/* The 128-bit product of a and b as (hi, lo), in portable C99. */
static void mulhilo(uint64_t a, uint64_t b, uint64_t* hi, uint64_t* lo) {
    uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32, b_lo = b & 0xffffffffu, b_hi = b >> 32;
    uint64_t p0 = a_lo * b_lo, p1 = a_lo * b_hi, p2 = a_hi * b_lo, p3 = a_hi * b_hi;
    uint64_t mid = (p0 >> 32) + (p1 & 0xffffffffu) + (p2 & 0xffffffffu);
    *lo = a * b;
    *hi = p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
}

/* The block of counter c under key k: ten rounds, the key bumped between them. */
static void philox(const uint64_t counter[4], uint64_t k0, uint64_t k1, uint64_t out[4]) {
    uint64_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        uint64_t hi0, lo0, hi1, lo1;
        mulhilo(PHILOX_M0, c0, &hi0, &lo0);
        mulhilo(PHILOX_M1, c2, &hi1, &lo1);
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* ---- Values ------------------------------------------------------------------------------ */

typedef struct random_state {
    uint64_t runs; /* executions so far (PN_RANDOM_ADVANCE) */
} random_state;

static const double two_pi = 6.283185307179586476925286766559;
static const double two_to_minus_53 = 1.0 / 9007199254740992.0;

/* The four words of element i in execution r. */
static void block_of(const pn_random_desc* d, uint64_t i, uint64_t r, uint64_t w[4]) {
    const uint64_t counter[4] = {i, r, 0, 0};
    philox(counter, d->seed, 0, w);
}

static double uniform_of(const uint64_t w[4]) { return (double)(w[0] >> 11) * two_to_minus_53; }

static double normal_of(const uint64_t w[4]) {
    double u1 = (double)((w[0] >> 11) + 1) * two_to_minus_53;
    double u2 = (double)(w[1] >> 11) * two_to_minus_53;
    return sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
}

/* One row of MULTINOMIAL: `samples` class indices drawn from softmax(x[row]). */
static pn_status multinomial_row(const cpuref_op* op, const void* x, void* y, int64_t row,
                                 uint64_t r, double* cumulative, pn_string_out* message_out) {
    const pn_random_desc* d = &op->desc.random;
    pn_data_type t = op->inputs[0].dtype;
    int64_t classes = op->inputs[0].dims[1], samples = op->outputs[0].dims[1];
    double top = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) {
        double v = pn_load_double(t, x, row * classes + c);
        if (isnan(v) || v == INFINITY) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "Random: MULTINOMIAL logits row "
                           "%lld holds %g at class %lld", (long long)row, v, (long long)c);
        }
        top = v > top ? v : top;
    }
    if (top == -INFINITY) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "Random: MULTINOMIAL logits row %lld "
                       "is -inf for every class: no class can be drawn", (long long)row);
    }
    double total = 0.0;
    for (int64_t c = 0; c < classes; ++c) {
        total += exp(pn_load_double(t, x, row * classes + c) - top);
        cumulative[c] = total;
    }
    for (int64_t s = 0; s < samples; ++s) {
        uint64_t w[4];
        block_of(d, (uint64_t)(row * samples + s), r, w);
        double target = uniform_of(w) * total;
        int64_t pick = classes - 1;
        for (int64_t c = 0; c < classes; ++c) {
            if (target < cumulative[c]) {
                pick = c;
                break;
            }
        }
        pn_store_int64(op->outputs[0].dtype, y, row * samples + s, pick);
    }
    return PN_OK;
}

static pn_status random_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                               pn_string_out* message_out) {
    random_state* state = (random_state*)op->priv;
    const pn_random_desc* d = &op->desc.random;
    uint64_t r = (d->flags & PN_RANDOM_ADVANCE) ? state->runs++ : 0;
    const pn_tensor_info* y = &op->outputs[0];
    if (d->op == PN_RANDOM_MULTINOMIAL) {
        int64_t classes = op->inputs[0].dims[1];
        double* cumulative = (double*)malloc((size_t)classes * sizeof(double));
        if (cumulative == NULL) {
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef Random: out of memory for "
                           "%lld classes", (long long)classes);
        }
        pn_status s = PN_OK;
        for (int64_t row = 0; row < y->dims[0] && s == PN_OK; ++row) {
            s = multinomial_row(op, in[0], out[0], row, r, cumulative, message_out);
        }
        free(cumulative);
        return s;
    }
    int64_t count = pn_num_elements(y);
    for (int64_t i = 0; i < count; ++i) {
        uint64_t w[4];
        block_of(d, (uint64_t)i, r, w);
        double v = d->op == PN_RANDOM_UNIFORM ? d->a + (d->b - d->a) * uniform_of(w)
                                              : d->a + d->b * normal_of(w);
        pn_store_double(y->dtype, out[0], i, v);
    }
    return PN_OK;
}

pn_status cpuref_random_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                               pn_string_out* message_out) {
    (void)context;
    random_state* s = (random_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: out of memory creating a "
                       "Random workload");
    }
    return cpuref_typed_workload_new(layer, sizeof(pn_random_desc), NULL, random_kernel, s,
                                     workload_out, message_out);
}
