/* SPECTRAL (ONNX DFT and STFT): direct O(n^2) discrete Fourier transforms in double, each
 * term's angle 2 pi (j k mod n) / n reduced exactly before its sine and cosine
 * (backend_api.h). Complex values are a trailing dim of 2; a trailing dim of 1 is real. */
#include "cpuref.h"

#include <math.h>
#include <stdlib.h>

static const double two_pi = 6.283185307179586476925286766559;

/* exp(sign * 2 pi i m / n) for 0 <= m < n. */
static void twiddle(int64_t m, int64_t n, double sign, double* re, double* im) {
    double angle = two_pi * (double)m / (double)n;
    *re = cos(angle);
    *im = sign * sin(angle);
}

/* One line of a transform: `count` complex values in (re, im) pairs of `src` (missing ones
 * are zero) to `n_out` values of `dst`: dst_k = scale * sum_j src_j exp(sign 2 pi i j k / n). */
static void transform(const double* src, int64_t count, int64_t n, int64_t n_out, double sign,
                      double scale, double* dst) {
    for (int64_t k = 0; k < n_out; ++k) {
        double re = 0.0, im = 0.0;
        for (int64_t j = 0; j < count; ++j) {
            double c, s;
            twiddle((j * k) % n, n, sign, &c, &s); /* j, k < n: no overflow below 2^31 */
            re += src[2 * j] * c - src[2 * j + 1] * s;
            im += src[2 * j] * s + src[2 * j + 1] * c;
        }
        dst[2 * k] = re * scale;
        dst[2 * k + 1] = im * scale;
    }
}

typedef struct spectral_state {
    double* line;    /* 2 * max(n, L) doubles: one input line */
    double* result;  /* 2 * n doubles: one output line */
} spectral_state;

/* ---- DFT ------------------------------------------------------------------------------ */

static pn_status dft_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                            pn_string_out* message_out) {
    (void)message_out;
    const pn_spectral_desc* d = &op->desc.spectral;
    const spectral_state* st = (const spectral_state*)op->priv;
    const pn_tensor_info* x = &op->inputs[0];
    const pn_tensor_info* y = &op->outputs[0];
    pn_data_type t = x->dtype;
    uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, x->rank);
    int64_t n = d->length;
    int64_t len = x->dims[axis], out_len = y->dims[axis];
    int64_t cin = x->dims[x->rank - 1], cout = y->dims[y->rank - 1];
    int64_t outer = cpuref_span(x, 0, axis);
    int64_t inner = cpuref_span(x, axis + 1, x->rank - 1);
    int inverse = d->inverse != 0, onesided = d->onesided != 0;
    int64_t used = len < n ? len : n;
    if (inverse && onesided) {
        used = used < n / 2 + 1 ? used : n / 2 + 1;
    }
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            for (int64_t j = 0; j < used; ++j) {
                int64_t at = ((o * len + j) * inner + i) * cin;
                st->line[2 * j] = pn_load_double(t, in[0], at);
                st->line[2 * j + 1] = cin == 2 ? pn_load_double(t, in[0], at + 1) : 0.0;
            }
            int64_t count = used;
            if (inverse && onesided) {
                /* The Hermitian extension of the one-sided spectrum (NumPy's irfft): the
                 * imaginary parts of x_0 and x_{n/2} are ignored, x_{n-k} = conj(x_k). */
                st->line[1] = 0.0;
                if (n % 2 == 0 && n / 2 < used) {
                    st->line[2 * (n / 2) + 1] = 0.0;
                }
                for (int64_t k = used; k < n; ++k) {
                    int64_t m = n - k;
                    int mirrored = m >= 1 && m < used;
                    st->line[2 * k] = mirrored ? st->line[2 * m] : 0.0;
                    st->line[2 * k + 1] = mirrored ? -st->line[2 * m + 1] : 0.0;
                }
                count = n;
            }
            transform(st->line, count, n, out_len, inverse ? 1.0 : -1.0,
                      inverse ? 1.0 / (double)n : 1.0, st->result);
            for (int64_t k = 0; k < out_len; ++k) {
                int64_t at = ((o * out_len + k) * inner + i) * cout;
                pn_store_double(t, out[0], at, st->result[2 * k]);
                if (cout == 2) {
                    pn_store_double(t, out[0], at + 1, st->result[2 * k + 1]);
                }
            }
        }
    }
    return PN_OK;
}

/* ---- STFT ----------------------------------------------------------------------------- */

static pn_status stft_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                             pn_string_out* message_out) {
    (void)message_out;
    const pn_spectral_desc* d = &op->desc.spectral;
    const spectral_state* st = (const spectral_state*)op->priv;
    const pn_tensor_info* x = &op->inputs[0];
    const pn_tensor_info* y = &op->outputs[0];
    pn_data_type t = x->dtype;
    int has_window = (d->flags & PN_SPECTRAL_HAS_WINDOW) != 0;
    int64_t n = d->length, len = x->dims[1], cin = x->dims[2];
    int64_t frames = y->dims[1], bins = y->dims[2];
    for (int64_t b = 0; b < x->dims[0]; ++b) {
        for (int64_t f = 0; f < frames; ++f) {
            for (int64_t j = 0; j < n; ++j) {
                double w = has_window ? pn_load_double(t, in[1], j) : 1.0;
                int64_t at = (b * len + f * d->frame_step + j) * cin;
                st->line[2 * j] = w * pn_load_double(t, in[0], at);
                st->line[2 * j + 1] = cin == 2 ? w * pn_load_double(t, in[0], at + 1) : 0.0;
            }
            transform(st->line, n, n, bins, -1.0, 1.0, st->result);
            for (int64_t k = 0; k < bins; ++k) {
                int64_t at = ((b * frames + f) * bins + k) * 2;
                pn_store_double(t, out[0], at, st->result[2 * k]);
                pn_store_double(t, out[0], at + 1, st->result[2 * k + 1]);
            }
        }
    }
    return PN_OK;
}

/* ---- Create ------------------------------------------------------------------------------ */

/* The kernel's two line buffers live in one allocation after the state (freed with it). */
pn_status cpuref_spectral_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                 pn_string_out* message_out) {
    (void)context;
    const pn_spectral_desc* d = (const pn_spectral_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    int64_t len = d->op == PN_SPECTRAL_DFT ? x->dims[pn_normalize_axis(d->axis, x->rank)]
                                           : x->dims[1];
    int64_t longest = len > d->length ? len : d->length;
    if (d->length > ((int64_t)1 << 31) || longest > ((int64_t)1 << 40)) {
        return pn_fail(message_out, PN_ERR_UNSUPPORTED, "CpuRef Spectral: a transform of length "
                       "%lld is beyond its direct O(n^2) DFT (at most 2^31)", (long long)d->length);
    }
    size_t doubles = (size_t)(2 * longest + 2 * d->length);
    spectral_state* s = (spectral_state*)malloc(sizeof(spectral_state) + doubles * sizeof(double));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: out of memory creating a "
                       "Spectral workload");
    }
    s->line = (double*)(s + 1);
    s->result = s->line + 2 * longest;
    cpuref_typed_kernel kernel = d->op == PN_SPECTRAL_DFT ? dft_kernel : stft_kernel;
    return cpuref_typed_workload_new(layer, sizeof(pn_spectral_desc), NULL, kernel, s,
                                     workload_out, message_out);
}
