/* QUANTIZED_MATMUL and QUANTIZED_CONVOLUTION on CpuAcc (ONNX MatMulInteger / QLinearMatMul,
 * ConvInteger / QLinearConv), INTEGER and QLINEAR, over the integer GEMM (gemm/qgemm.h): the
 * weights (b; w) packed once at create with their column sums, the activations shifted to u8
 * and packed per execute (the convolution's through im2col rows gathered from the image padded
 * with x_zero_point and laid out channels-last, so each tap is a run of C bytes), the zero-point compensation, bias, requantization (double product and sum,
 * round half to even, zero point, saturation: backend_api.h's formula) and the store in the
 * GEMM's epilogue. The integer sums are exact, so CpuAcc gives CpuRef's bits, INTEGER and
 * QLINEAR, at every thread count and on every kernel set.
 *
 * Accepted: a MatMul whose b is a constant shared by every batch (b's batch dims 1: a's batch
 * dims fold into rows), its zero points and scales of any granularity backend_api.h allows; a
 * convolution of 1 to 3 spatial axes with groups 1 and constant w. Refused with the reason (they
 * run on CpuRef): b or w given at run time, a batched b, grouped / depthwise convolutions. */
#include "ops/create.h"

#include "gemm/qgemm.h"
#include "kernels/byte_transpose.h"
#include "kernels/int8_kernels.h"
#include "plugnn/pn_elements.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- Checks ------------------------------------------------------------------------------ */

static int input_constant(const pn_layer* layer, int i) {
    return layer->constant_data != NULL && layer->constant_data[i] != NULL;
}

pn_status accel_quantized_matmul_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_quantized_matmul_desc* d = (const pn_quantized_matmul_desc*)layer->descriptor;
    const int ib = d->op == PN_QUANTIZED_QLINEAR ? 3 : 2;
    const pn_tensor_info* b = &layer->inputs[ib];
    if (!input_constant(layer, ib)) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs QuantizedMatMul with a constant b only (packed "
                       "once); b (input %d) is given at run time", plugin->id, ib);
    }
    for (uint32_t i = 0; i + 2 < b->rank; ++i) {
        if (b->dims[i] != 1) {
            return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs QuantizedMatMul with one b for every batch "
                           "only; b (input %d) has batch dim %u of size %lld", plugin->id, ib, i,
                           (long long)b->dims[i]);
        }
    }
    return PN_OK;
}

pn_status accel_quantized_convolution_check(const pn_plugin* plugin, const pn_layer* layer,
                                            pn_string_out* reason) {
    const pn_quantized_convolution_desc* d = (const pn_quantized_convolution_desc*)layer->descriptor;
    const int iw = d->op == PN_QUANTIZED_QLINEAR ? 3 : 2;
    const int64_t channels = layer->inputs[0].dims[1];
    if (d->groups != 1 && (int64_t)d->groups != channels) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs QuantizedConvolution with groups 1 or one group per "
                       "input channel (depthwise) only; this one has %u groups of %lld channels", plugin->id,
                       d->groups, (long long)(channels / (d->groups > 0 ? d->groups : 1)));
    }
    if (!input_constant(layer, iw)) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs QuantizedConvolution with constant weights only "
                       "(packed once); w (input %d) is given at run time", plugin->id, iw);
    }
    return PN_OK;
}

/* ---- State ------------------------------------------------------------------------------- */

#define QP_MAX_INPUTS 9

typedef struct qprod_state {
    accel_env env;
    const qgemm_arch* arch;
    const accel_int8_kernels* kern;
    int conv, qlinear;
    uint32_t num_inputs;
    pn_tensor_info infos[QP_MAX_INPUTS + 1]; /* inputs, then the output */
    int ia, ia_scale, ia_zero, ib_scale, ib_zero, iy_scale, iy_zero, ibias; /* -1: absent */
    int a_signed, y_signed;
    int64_t m, n, k;           /* GEMM rows (matmul: all of a's rows; conv: positions per image), cols, K */
    qgemm_packed_b b;
    int64_t* a_zero_off;       /* matmul: [m] a's zero point index per row; NULL: one element */
    int64_t* a_scale_off;      /* matmul QLINEAR: [m] a's scale index per row; NULL: one element */
    int64_t b_zero_step, b_scale_step; /* index step per column of b's zero point / scale (0: one) */
    /* convolution: geometry, spatial axes right-aligned in 3-D */
    int64_t batch, channels, in[3], kd[3], out[3], stride[3], dil[3], pad[3];
    int64_t padded[3];         /* the padded image's sizes (every tap any output reads) */
    pn_data_type scale_type;
    double lo, hi;             /* the output type's range */
    /* depthwise convolution (groups = C): output channel o reads input channel o / multiplier */
    int depthwise;
    int64_t multiplier, taps;
} qprod_state;

static void qprod_release(void* raw) {
    qprod_state* s = (qprod_state*)raw;
    qgemm_packed_b_free(&s->b);
    free(s->a_zero_off);
    free(s->a_scale_off);
    free(s);
}

/* The scales' type T rounding of v (backend_api.h: m's product and quotient each rounded to T). */
static double round_to(pn_data_type t, double v) {
    if (t == PN_DTYPE_FLOAT64) {
        return v;
    }
    if (t == PN_DTYPE_FLOAT32) {
        return (double)(float)v;
    }
    uint64_t storage = 0;
    pn_store_double(t, &storage, 0, v);
    return pn_load_double(t, &storage, 0);
}

/* ---- Execute ----------------------------------------------------------------------------- */

typedef struct qprod_run {
    const qprod_state* s;
    const void* const* in;     /* the execute's input data */
    void* y;
    uint32_t* a_packed;
    int32_t* rowsum;           /* [m] R_i */
    int32_t* za;               /* [m] za'_i (matmul) or [1] */
    int32_t *zb, *d, *bias;    /* [n] zb''_j, S_j - K * zb''_j, bias_j (0 without one) */
    double* mult;              /* [n] m_j (QLINEAR, a's scale one element) */
    double a_scale, y_scale, yz;
    int64_t image;             /* conv: the image whose positions the GEMM's rows are */
    atomic_int oom;            /* conv: an im2col row could not be allocated */
    int want_sum;              /* some zb''_j is not 0: R_i is needed */
    const uint8_t* x_image;    /* conv: x of that image */
    uint8_t* image_hwc;        /* conv: that image padded, channels-last, a' */
} qprod_run;

/* matmul: rows [b, e) of a packed with their sums. */
static void pack_rows_matmul(void* raw, int64_t b, int64_t e) {
    const qprod_run* r = (const qprod_run*)raw;
    const qprod_state* s = r->s;
    const uint8_t* a = (const uint8_t*)r->in[s->ia];
    const uint8_t flip = s->a_signed ? 0x80 : 0;
    for (int64_t i = b; i < e; ++i) {
        r->rowsum[i] = qgemm_pack_a_row(s->arch, a + i * s->k, flip, s->k, r->a_packed, i, r->want_sum);
    }
}

/* conv: one image as a' channels-last ([Dp][Hp][Wp][C], the padding x_zero_point, already a'):
 * padded rows [b, e) (z * Hp + y) of it. */
static void pad_image_rows(void* raw, int64_t b, int64_t e) {
    const qprod_run* r = (const qprod_run*)raw;
    const qprod_state* s = r->s;
    const uint8_t flip = s->a_signed ? 0x80 : 0;
    const uint8_t pad = (uint8_t)(r->za[0]);
    const int64_t c_count = s->channels, wp = s->padded[2], plane = s->in[0] * s->in[1] * s->in[2];
    for (int64_t row = b; row < e; ++row) {
        const int64_t iz = row / s->padded[1] - s->pad[0], iy = row % s->padded[1] - s->pad[1];
        uint8_t* dst = r->image_hwc + row * wp * c_count;
        if (iz < 0 || iz >= s->in[0] || iy < 0 || iy >= s->in[1]) {
            memset(dst, pad, (size_t)(wp * c_count));
            continue;
        }
        const int64_t left = s->pad[2], width = s->in[2];
        memset(dst, pad, (size_t)(left * c_count));
        memset(dst + (left + width) * c_count, pad, (size_t)((wp - left - width) * c_count));
        const uint8_t* src = r->x_image + (iz * s->in[1] + iy) * width;
        accel_transpose_bytes(src, plane, dst + left * c_count, c_count, c_count, width, flip);
    }
}

/* conv: the im2col rows [b, e) of one image (position p; k = (kz, ky, kx, c), the order w was
 * packed in: each tap a run of C bytes of the padded channels-last image), packed with their sums. */
static void pack_rows_conv(void* raw, int64_t b, int64_t e) {
    const qprod_run* r = (const qprod_run*)raw;
    const qprod_state* s = r->s;
    const int64_t c_count = s->channels;
    /* a row of taps: with dilation 1 along x, the kd[2] taps of one (kz, ky) are one run of the
     * padded image */
    const int64_t run = s->dil[2] == 1 ? s->kd[2] * c_count : c_count, runs = s->dil[2] == 1 ? 1 : s->kd[2];
    uint8_t* row = NULL;
    for (int64_t p = b; p < e; ++p) {
        /* the packed row itself where the arch keeps a row's bytes in order (AMX), else a copy
         * packed after */
        uint8_t* direct = qgemm_a_row_bytes(s->arch, r->a_packed, p, s->k);
        if (direct == NULL && row == NULL && (row = (uint8_t*)malloc((size_t)(s->k > 0 ? s->k : 1))) == NULL) {
            atomic_store(&((qprod_run*)raw)->oom, 1);
            return;
        }
        const int64_t oz = p / (s->out[1] * s->out[2]), oy = (p / s->out[2]) % s->out[1], ox = p % s->out[2];
        uint8_t* t = direct != NULL ? direct : row;
        for (int64_t kz = 0; kz < s->kd[0]; ++kz) {
            const int64_t iz = oz * s->stride[0] + kz * s->dil[0];
            for (int64_t ky = 0; ky < s->kd[1]; ++ky) {
                const int64_t iy = oy * s->stride[1] + ky * s->dil[1];
                const uint8_t* src = r->image_hwc + ((iz * s->padded[1] + iy) * s->padded[2]) * c_count;
                for (int64_t kx = 0; kx < runs; ++kx, t += run) {
                    memcpy(t, src + (ox * s->stride[2] + kx * s->dil[2]) * c_count, (size_t)run);
                }
            }
        }
        r->rowsum[p] = direct != NULL ? qgemm_seal_a_row(s->arch, r->a_packed, p, s->k, r->want_sum)
                                      : qgemm_pack_a_row(s->arch, row, 0, s->k, r->a_packed, p, r->want_sum);
    }
    free(row);
}

/* m for row i's a scale and columns [j0, j0 + cols), into out. */
static void row_multipliers(const qprod_run* r, double as, int64_t j0, int64_t cols, double* out) {
    const qprod_state* s = r->s;
    const void* bs = r->in[s->ib_scale];
    for (int64_t t = 0; t < cols; ++t) {
        double b = pn_load_double(s->scale_type, bs, (j0 + t) * s->b_scale_step);
        out[t] = round_to(s->scale_type, round_to(s->scale_type, as * b) / r->y_scale);
    }
}

static void epilogue(void* ctx, int32_t* c, int64_t ldc, int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
    const qprod_run* r = (const qprod_run*)ctx;
    const qprod_state* s = r->s;
    const int per_row_za = !s->conv && s->a_zero_off != NULL;
    for (int64_t t = 0; t < rows; ++t) {
        const int64_t i = i0 + t;
        s->kern->compensate(c + t * ldc, cols, r->bias + j0, r->d + j0, r->zb + j0, r->za[per_row_za ? i : 0],
                         r->rowsum[i]);
    }
    const int step = s->b_scale_step != 0;
    if (!s->conv) {
        for (int64_t t = 0; t < rows; ++t) {
            const int64_t i = i0 + t;
            if (!s->qlinear) {
                memcpy((int32_t*)r->y + i * s->n + j0, c + t * ldc, (size_t)cols * sizeof(int32_t));
                continue;
            }
            double mrow[QGEMM_NC];
            const double* m = r->mult + (step ? j0 : 0);
            if (s->a_scale_off != NULL) {
                row_multipliers(r, pn_load_double(s->scale_type, r->in[s->ia_scale], s->a_scale_off[i]), j0, cols, mrow);
                m = mrow;
            }
            s->kern->requantize(c + t * ldc, (uint8_t*)r->y + i * s->n + j0, cols, m,
                             step || s->a_scale_off != NULL, r->yz, s->lo, s->hi, s->y_signed);
        }
        return;
    }
    /* conv: C[position][channel], y [N, O, positions]: stored transposed */
    const int64_t positions = s->m;
    if (!s->qlinear) {
        int32_t* y = (int32_t*)r->y + r->image * s->n * positions;
        for (int64_t o = 0; o < cols; ++o) {
            int32_t* yo = y + (j0 + o) * positions + i0;
            for (int64_t t = 0; t < rows; ++t) {
                yo[t] = c[t * ldc + o];
            }
        }
        return;
    }
    uint8_t q[QGEMM_MC * QGEMM_NC]; /* the block requantized, then stored transposed */
    for (int64_t t = 0; t < rows; ++t) {
        s->kern->requantize(c + t * ldc, q + t * QGEMM_NC, cols, r->mult + (step ? j0 : 0), step, r->yz, s->lo, s->hi,
                         s->y_signed);
    }
    uint8_t* y = (uint8_t*)r->y + r->image * s->n * positions;
    accel_transpose_bytes(q, QGEMM_NC, y + j0 * positions + i0, positions, rows, cols, 0);
}

/* The execute's arguments checked against the layer's, and its input pointers into in. */
static pn_status qprod_inputs(const qprod_state* s, const pn_execute_args* args, const void** in,
                              pn_string_out* message_out) {
    pn_status st = pn_check_execute_args(args, s->num_inputs, s->infos, 1, &s->infos[s->num_inputs], "CpuAcc",
                                         message_out);
    for (uint32_t i = 0; st == PN_OK && i < s->num_inputs; ++i) {
        in[i] = args->inputs[i].data;
    }
    return st;
}

static pn_status qprod_execute(void* raw, const pn_execute_args* args, pn_string_out* message_out) {
    const qprod_state* s = (const qprod_state*)raw;
    const void* in[QP_MAX_INPUTS];
    pn_status st = qprod_inputs(s, args, in, message_out);
    if (st != PN_OK) {
        return st;
    }
    const int64_t m = s->m, n = s->n;
    const int64_t rows_za = !s->conv && s->a_zero_off != NULL ? m : 1;
    const int64_t units = qgemm_a_units(s->arch, m, s->k);
    /* one block: packed a, R, za', zb'', d, bias, m */
    const size_t image_bytes = s->conv ? (size_t)(s->padded[0] * s->padded[1] * s->padded[2] * s->channels) : 0;
    size_t bytes = (size_t)units * 4 + (size_t)m * 4 + (size_t)rows_za * 4 + (size_t)n * 12 + (size_t)n * 8 + image_bytes + 64;
    char* mem = (char*)malloc(bytes);
    if (mem == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory running a quantized %s layer "
                       "(%zu bytes)", s->conv ? "convolution" : "matmul", bytes);
    }
    qprod_run r;
    memset(&r, 0, sizeof(r));
    atomic_init(&r.oom, 0);
    r.s = s;
    r.in = in;
    r.y = args->outputs[0].data;
    r.mult = (double*)mem; /* first: 8-byte aligned */
    r.a_packed = (uint32_t*)(mem + (size_t)n * 8);
    r.rowsum = (int32_t*)(r.a_packed + units);
    r.za = r.rowsum + m;
    r.zb = r.za + rows_za;
    r.d = r.zb + n;
    r.bias = r.d + n;
    r.image_hwc = (uint8_t*)(r.bias + n);
    const pn_data_type at = s->infos[s->ia].dtype, bt = s->infos[s->ib_zero].dtype;
    for (int64_t i = 0; i < rows_za; ++i) {
        int64_t z = pn_load_int64(at, in[s->ia_zero], s->a_zero_off != NULL ? s->a_zero_off[i] : 0);
        r.za[i] = (int32_t)(s->a_signed ? z + 128 : z);
    }
    for (int64_t j = 0; j < n; ++j) {
        int64_t z = pn_load_int64(bt, in[s->ib_zero], j * s->b_zero_step);
        r.zb[j] = (int32_t)(bt == PN_DTYPE_UINT8 ? z - 128 : z);
        r.d[j] = (int32_t)((uint32_t)s->b.colsum[j] - (uint32_t)s->k * (uint32_t)r.zb[j]);
        r.bias[j] = s->ibias >= 0 ? ((const int32_t*)in[s->ibias])[j] : 0;
        r.want_sum |= r.zb[j] != 0;
    }
    if (s->qlinear) {
        r.y_scale = pn_load_double(s->scale_type, in[s->iy_scale], 0);
        r.yz = (double)pn_load_int64(s->infos[s->num_inputs].dtype, in[s->iy_zero], 0);
        if (s->a_scale_off == NULL) {
            r.a_scale = pn_load_double(s->scale_type, in[s->ia_scale], 0);
            row_multipliers(&r, r.a_scale, 0, s->b_scale_step != 0 ? n : 1, r.mult);
        }
    }
    int failed = 0;
    const int64_t images = s->conv ? s->batch : 1;
    const int64_t per_image = s->conv ? s->channels * s->in[0] * s->in[1] * s->in[2] : 0;
    for (int64_t img = 0; img < images && !failed; ++img) {
        r.image = img;
        if (s->conv) {
            r.x_image = (const uint8_t*)in[s->ia] + img * per_image;
            accel_parallel_for_grain(s->env.threads, s->padded[0] * s->padded[1], 4, pad_image_rows, &r);
            accel_parallel_for_grain(s->env.threads, m, 64, pack_rows_conv, &r);
            if (atomic_load(&r.oom)) {
                failed = 1;
                break;
            }
        } else {
            accel_parallel_for_grain(s->env.threads, m, 64, pack_rows_matmul, &r);
        }
        qgemm_pad_a(s->arch, r.a_packed, m, s->k);
        failed = qgemm_run(s->env.threads, s->arch, m, n, r.a_packed, &s->b, epilogue, &r) != 0;
    }
    free(mem);
    if (failed) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory running a quantized %s layer",
                       s->conv ? "convolution" : "matmul");
    }
    return PN_OK;
}

/* ---- Depthwise convolution ---------------------------------------------------------------- */

/* A depthwise convolution (one input channel per group) has no GEMM to speak of (K = the taps
 * of one channel), so it runs directly: per (image, output channel), the input channel as
 * x - x_zero_point in int16 with the padding 0 (it adds nothing, as backend_api.h says), each
 * tap's row of products summed into the plane's int32 sums by the ISA's multiply_add row kernel
 * (kernels/int8_kernels.h; modulo 2^32, as CpuRef), the bias,
 * then the plane requantized with the channel's multiplier by the same row kernel as the GEMM's
 * epilogue: CpuRef's bits. */

typedef struct dw_run {
    const qprod_state* s;
    const void* const* in;
    void* y;
    int32_t xz;
    const double* mult;        /* [O] or [1] */
    double yz;
    atomic_int oom;
} dw_run;

static void dw_units(void* raw, int64_t b, int64_t e) {
    dw_run* r = (dw_run*)raw;
    const qprod_state* s = r->s;
    const int64_t dp = s->padded[0], hp = s->padded[1], wp = s->padded[2];
    const int64_t plane_in = s->in[0] * s->in[1] * s->in[2], plane_out = s->out[0] * s->out[1] * s->out[2];
    /* stride 1 in y and x: the sums of a plane computed as rows of the padded width wp, so a tap is
     * one long run (out[1] * wp, the columns past out[2] computed and dropped) instead of out[1]
     * short ones; x then reads up to (kd[2] - 1) * dil[2] < wp past the padded image */
    const int wide = s->stride[1] == 1 && s->stride[2] == 1;
    const int64_t acc_width = wide ? wp : s->out[2], acc_plane = s->out[1] * acc_width;
    const int64_t xp_count = dp * hp * wp + wp;
    int16_t* xp = (int16_t*)malloc((size_t)xp_count * sizeof(int16_t));
    uint32_t* acc = (uint32_t*)malloc((size_t)(s->out[0] * acc_plane > 0 ? s->out[0] * acc_plane : 1) *
                                      sizeof(uint32_t));
    if (xp == NULL || acc == NULL) {
        free(xp);
        free(acc);
        atomic_store(&r->oom, 1);
        return;
    }
    const pn_data_type wt = s->infos[s->qlinear ? 3 : 2].dtype, zt = s->infos[s->ib_zero].dtype;
    const void* w = r->in[s->qlinear ? 3 : 2];
    const int signed_x = s->a_signed;
    int64_t filled = -1; /* the image * C + channel xp holds */
    for (int64_t unit = b; unit < e; ++unit) {
        const int64_t img = unit / s->n, o = unit % s->n, c = o / s->multiplier;
        if (filled != img * s->channels + c) {
            memset(xp, 0, (size_t)xp_count * sizeof(int16_t));
            const uint8_t* xu = (const uint8_t*)r->in[s->ia] + (img * s->channels + c) * plane_in;
            const int8_t* xs = (const int8_t*)xu;
            for (int64_t z = 0; z < s->in[0]; ++z) {
                for (int64_t yy = 0; yy < s->in[1]; ++yy) {
                    int16_t* dst = xp + ((z + s->pad[0]) * hp + yy + s->pad[1]) * wp + s->pad[2];
                    const int64_t at = (z * s->in[1] + yy) * s->in[2];
                    for (int64_t xx = 0; xx < s->in[2]; ++xx) {
                        dst[xx] = (int16_t)((signed_x ? (int32_t)xs[at + xx] : (int32_t)xu[at + xx]) - r->xz);
                    }
                }
            }
            filled = img * s->channels + c;
        }
        const int32_t wz = (int32_t)pn_load_int64(zt, r->in[s->ib_zero], o * s->b_zero_step);
        memset(acc, 0, (size_t)(s->out[0] * acc_plane) * sizeof(uint32_t));
        for (int64_t t = 0; t < s->taps; ++t) {
            const int64_t kz = t / (s->kd[1] * s->kd[2]), ky = (t / s->kd[2]) % s->kd[1], kx = t % s->kd[2];
            const int32_t wv = (int32_t)pn_load_int64(wt, w, o * s->taps + t) - wz;
            if (wv == 0) {
                continue;
            }
            for (int64_t oz = 0; oz < s->out[0]; ++oz) {
                const int16_t* src = xp + ((oz * s->stride[0] + kz * s->dil[0]) * hp + ky * s->dil[1]) * wp +
                                     kx * s->dil[2];
                if (wide) {
                    s->kern->multiply_add(acc + oz * acc_plane, 1, acc_plane, src, 0, 1, wv);
                } else {
                    s->kern->multiply_add(acc + oz * acc_plane, s->out[1], s->out[2], src, s->stride[1] * wp,
                                          s->stride[2], wv);
                }
            }
        }
        if (wide && acc_width != s->out[2]) { /* the rows' first out[2] sums, packed */
            for (int64_t row = 1; row < s->out[0] * s->out[1]; ++row) {
                memmove(acc + row * s->out[2], acc + row * acc_width, (size_t)s->out[2] * sizeof(uint32_t));
            }
        }
        if (s->ibias >= 0) {
            const uint32_t bias = (uint32_t)((const int32_t*)r->in[s->ibias])[o];
            for (int64_t p = 0; p < plane_out; ++p) {
                acc[p] += bias;
            }
        }
        const int64_t at = (img * s->n + o) * plane_out;
        if (!s->qlinear) {
            memcpy((int32_t*)r->y + at, acc, (size_t)plane_out * sizeof(int32_t));
            continue;
        }
        s->kern->requantize((const int32_t*)acc, (uint8_t*)r->y + at, plane_out, r->mult + (s->b_scale_step ? o : 0),
                            0, r->yz, s->lo, s->hi, s->y_signed);
    }
    free(xp);
    free(acc);
}

static pn_status dw_execute(void* raw, const pn_execute_args* args, pn_string_out* message_out) {
    const qprod_state* s = (const qprod_state*)raw;
    const void* in[QP_MAX_INPUTS];
    pn_status st = qprod_inputs(s, args, in, message_out);
    if (st != PN_OK) {
        return st;
    }
    double* mult = (double*)malloc((size_t)(s->n > 0 ? s->n : 1) * sizeof(double));
    if (mult == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory running a depthwise quantized "
                       "convolution");
    }
    dw_run r;
    memset(&r, 0, sizeof(r));
    atomic_init(&r.oom, 0);
    r.s = s;
    r.in = in;
    r.y = args->outputs[0].data;
    r.mult = mult;
    r.xz = (int32_t)pn_load_int64(s->infos[s->ia].dtype, in[s->ia_zero], 0);
    if (s->qlinear) {
        qprod_run q; /* the GEMM path's multipliers, computed the same way */
        memset(&q, 0, sizeof(q));
        q.s = s;
        q.in = in;
        q.y_scale = pn_load_double(s->scale_type, in[s->iy_scale], 0);
        row_multipliers(&q, pn_load_double(s->scale_type, in[s->ia_scale], 0), 0, s->b_scale_step != 0 ? s->n : 1,
                        mult);
        r.yz = (double)pn_load_int64(s->infos[s->num_inputs].dtype, in[s->iy_zero], 0);
    }
    accel_parallel_for_grain(s->env.threads, s->batch * s->n, 1, dw_units, &r);
    free(mult);
    if (atomic_load(&r.oom)) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory running a depthwise quantized "
                       "convolution");
    }
    return PN_OK;
}

/* ---- Create ------------------------------------------------------------------------------ */

static qprod_state* qprod_new(const accel_env* env, const pn_layer* layer, int conv, int qlinear) {
    qprod_state* s = (qprod_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    s->env = *env;
    const accel_kernel_set* ks = accel_kernel_set_for(env->isa);
    s->arch = accel_qgemm_for(env);
    s->kern = ks->int8;
    s->conv = conv;
    s->qlinear = qlinear;
    s->num_inputs = layer->num_inputs;
    for (uint32_t i = 0; i <= layer->num_inputs; ++i) {
        const pn_tensor_info* src = i < layer->num_inputs ? &layer->inputs[i] : &layer->outputs[0];
        s->infos[i].struct_size = (uint32_t)sizeof(pn_tensor_info);
        s->infos[i].dtype = src->dtype;
        s->infos[i].rank = src->rank;
        memcpy(s->infos[i].dims, src->dims, sizeof(s->infos[i].dims));
    }
    /* inputs: a, [a_scale], a_zero, b, [b_scale], b_zero, [y_scale, y_zero], [bias] */
    s->ia = 0;
    s->ia_scale = qlinear ? 1 : -1;
    s->ia_zero = qlinear ? 2 : 1;
    s->ib_scale = qlinear ? 4 : -1;
    s->ib_zero = qlinear ? 5 : 3;
    s->iy_scale = qlinear ? 6 : -1;
    s->iy_zero = qlinear ? 7 : -1;
    s->ibias = -1;
    s->a_signed = layer->inputs[0].dtype == PN_DTYPE_INT8;
    s->y_signed = layer->outputs[0].dtype == PN_DTYPE_INT8;
    s->lo = s->y_signed ? -128.0 : 0.0;
    s->hi = s->y_signed ? 127.0 : 255.0;
    s->scale_type = qlinear ? layer->inputs[1].dtype : PN_DTYPE_FLOAT32;
    return s;
}

static pn_status qprod_finish(qprod_state* s, const pn_layer* layer, int ib, const int64_t* koff, int64_t col_stride,
                              pn_workload** workload_out, pn_string_out* message_out) {
    const char* what = s->conv ? "QuantizedConvolution" : "QuantizedMatMul";
    if (s->arch->kg_align * s->arch->kr > 2 * s->k) {
        /* K fills less than half of the arch's k step (AMX: 64 bytes a tile row): the ISA's
         * kernel set's GEMM (VNNI) wastes less */
        s->arch = accel_kernel_set_for(s->env.isa)->qgemm;
    }
    if (qgemm_pack_b(s->arch, layer->constant_data[ib], layer->inputs[ib].dtype == PN_DTYPE_INT8, s->k, s->n, koff,
                     col_stride, &s->b) != 0) {
        qprod_release(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing a %s's weights", what);
    }
    *workload_out = pn_workload_new(s, qprod_execute, qprod_release, 0);
    if (*workload_out == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a %s workload", what);
    }
    return PN_OK;
}

/* The index, in `param` broadcast to `operand`, of every row of the operand (all dims but the
 * last: a's rows), into a new array of `rows`; NULL with *one = 1 when param has one element. */
static int row_offsets(const pn_tensor_info* param, const pn_tensor_info* operand, int64_t rows, int64_t** out) {
    *out = NULL;
    if (pn_num_elements(param) == 1) {
        return 0;
    }
    int64_t strides[PN_MAX_DIMS];
    pn_broadcast_strides(param, operand, strides); /* validated: it broadcasts */
    int64_t* off = (int64_t*)malloc((size_t)(rows > 0 ? rows : 1) * sizeof(int64_t));
    if (off == NULL) {
        return -1;
    }
    const uint32_t lead = operand->rank >= 1 ? operand->rank - 1 : 0;
    for (int64_t i = 0; i < rows; ++i) {
        int64_t rest = i, at = 0;
        for (int32_t dim = (int32_t)lead - 1; dim >= 0; --dim) {
            at += (rest % operand->dims[dim]) * strides[dim];
            rest /= operand->dims[dim];
        }
        off[i] = at;
    }
    *out = off;
    return 0;
}

/* The index step per column of `param` broadcast to b (its last dim; 0 for one element or a
 * rank-1 b). */
static int64_t column_step(const pn_tensor_info* param, const pn_tensor_info* b) {
    if (pn_num_elements(param) == 1 || b->rank < 2) {
        return 0;
    }
    int64_t strides[PN_MAX_DIMS];
    pn_broadcast_strides(param, b, strides);
    return strides[b->rank - 1];
}

pn_status accel_quantized_matmul_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                        pn_string_out* message_out) {
    const pn_quantized_matmul_desc* d = (const pn_quantized_matmul_desc*)layer->descriptor;
    const int q = d->op == PN_QUANTIZED_QLINEAR;
    qprod_state* s = qprod_new((const accel_env*)context, layer, 0, q);
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a QuantizedMatMul workload");
    }
    const int ib = q ? 3 : 2;
    const pn_tensor_info* a = &layer->inputs[0];
    const pn_tensor_info* b = &layer->inputs[ib];
    s->k = a->dims[a->rank - 1];
    s->n = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    s->m = pn_num_elements(a) / (s->k > 0 ? s->k : 1);
    if (s->k == 0) {
        s->m = accel_span(a, 0, a->rank - 1);
    }
    if (row_offsets(&layer->inputs[s->ia_zero], a, s->m, &s->a_zero_off) != 0 ||
        (q && row_offsets(&layer->inputs[s->ia_scale], a, s->m, &s->a_scale_off) != 0)) {
        qprod_release(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a QuantizedMatMul workload");
    }
    s->b_zero_step = column_step(&layer->inputs[s->ib_zero], b);
    s->b_scale_step = q ? column_step(&layer->inputs[s->ib_scale], b) : 0;
    int64_t* koff = (int64_t*)malloc((size_t)(s->k > 0 ? s->k : 1) * sizeof(int64_t));
    if (koff == NULL) {
        qprod_release(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a QuantizedMatMul workload");
    }
    for (int64_t k = 0; k < s->k; ++k) {
        koff[k] = k * s->n; /* b [K, N] */
    }
    pn_status st = qprod_finish(s, layer, ib, koff, 1, workload_out, message_out);
    free(koff);
    return st;
}

pn_status accel_quantized_convolution_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                             pn_string_out* message_out) {
    const pn_quantized_convolution_desc* d = (const pn_quantized_convolution_desc*)layer->descriptor;
    const int q = d->op == PN_QUANTIZED_QLINEAR;
    qprod_state* s = qprod_new((const accel_env*)context, layer, 1, q);
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a QuantizedConvolution workload");
    }
    s->ibias = (q && (d->flags & PN_LAYER_FLAG_HAS_BIAS)) ? 8 : -1;
    const int iw = q ? 3 : 2;
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* w = &layer->inputs[iw];
    const pn_tensor_info* y = &layer->outputs[0];
    const uint32_t rank = d->spatial_rank;
    s->batch = x->dims[0];
    s->channels = x->dims[1];
    s->n = y->dims[1];
    for (int i = 0; i < 3; ++i) { /* right-aligned: axis i of the 3-D geometry is spatial axis i - (3 - rank) */
        const int a = i - (3 - (int)rank);
        s->in[i] = a >= 0 ? x->dims[2 + a] : 1;
        s->kd[i] = a >= 0 ? w->dims[2 + a] : 1;
        s->out[i] = a >= 0 ? y->dims[2 + a] : 1;
        s->stride[i] = a >= 0 ? d->strides[a] : 1;
        s->dil[i] = a >= 0 ? d->dilations[a] : 1;
        s->pad[i] = a >= 0 ? d->pads_begin[a] : 0;
        const int64_t reach = s->out[i] > 0 ? (s->out[i] - 1) * s->stride[i] + (s->kd[i] - 1) * s->dil[i] + 1 : 0;
        s->padded[i] = reach > s->pad[i] + s->in[i] ? reach : s->pad[i] + s->in[i];
    }
    s->m = s->out[0] * s->out[1] * s->out[2];
    s->k = s->channels * s->kd[0] * s->kd[1] * s->kd[2];
    s->b_zero_step = pn_num_elements(&layer->inputs[s->ib_zero]) > 1 ? 1 : 0;
    s->b_scale_step = q && pn_num_elements(&layer->inputs[s->ib_scale]) > 1 ? 1 : 0;
    if (d->groups > 1) { /* depthwise (the check admits no other grouping) */
        s->depthwise = 1;
        s->multiplier = s->n / (s->channels > 0 ? s->channels : 1);
        s->taps = s->kd[0] * s->kd[1] * s->kd[2];
        *workload_out = pn_workload_new(s, dw_execute, qprod_release, 0);
        if (*workload_out == NULL) { /* s released */
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a QuantizedConvolution "
                           "workload");
        }
        return PN_OK;
    }
    int64_t* koff = (int64_t*)malloc((size_t)(s->k > 0 ? s->k : 1) * sizeof(int64_t));
    if (koff == NULL) {
        qprod_release(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a QuantizedConvolution workload");
    }
    const int64_t taps = s->kd[0] * s->kd[1] * s->kd[2];
    for (int64_t t = 0; t < taps; ++t) { /* k = (tap, c); w [O, C, taps]: column o at o * K */
        for (int64_t c = 0; c < s->channels; ++c) {
            koff[t * s->channels + c] = c * taps + t;
        }
    }
    pn_status st = qprod_finish(s, layer, iw, koff, s->k, workload_out, message_out);
    free(koff);
    return st;
}
