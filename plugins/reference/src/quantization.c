/* QUANTIZATION: QUANTIZE_LINEAR, DEQUANTIZE_LINEAR (per tensor, per axis, blocked) and
 * DYNAMIC_QUANTIZE_LINEAR, exactly as backend_api.h states them; and the rounding, saturation
 * and requantization the quantized product kinds (quantized_convolution.c,
 * quantized_matmul.c) share. */
#include "cpuref.h"

#include <math.h>
#include <stdlib.h>

/* ---- Shared ------------------------------------------------------------------------ */

/* v clamped to [low, high] (NaN: low). */
static double clamp(double v, double low, double high) {
    if (isnan(v) || v <= low) {
        return low;
    }
    return v >= high ? high : v;
}

double cpuref_round_to(pn_data_type dtype, double v) {
    if (dtype == PN_DTYPE_FLOAT64) {
        return v;
    }
    uint64_t storage = 0; /* room for one element of any float type */
    pn_store_double(dtype, &storage, 0, v);
    return pn_load_double(dtype, &storage, 0);
}

double cpuref_round_half_even(double v) {
    if (!(fabs(v) < 4503599627370496.0)) { /* 2^52: larger values, infinities and NaN stay */
        return v;
    }
    double low = floor(v);
    double frac = v - low; /* exact below 2^52 */
    if (frac > 0.5 || (frac == 0.5 && fmod(low, 2.0) != 0.0)) {
        return low + 1.0;
    }
    return low;
}

/* The range of an integer type the quantization kinds produce. */
static void int_range(pn_data_type dtype, double* low, double* high) {
    switch (dtype) {
    case PN_DTYPE_INT8: *low = -128.0; *high = 127.0; return;
    case PN_DTYPE_UINT8: *low = 0.0; *high = 255.0; return;
    case PN_DTYPE_INT16: *low = -32768.0; *high = 32767.0; return;
    case PN_DTYPE_UINT16: *low = 0.0; *high = 65535.0; return;
    default: *low = -2147483648.0; *high = 2147483647.0; return; /* INT32 */
    }
}

int64_t cpuref_saturate(pn_data_type dtype, double v) {
    double low, high;
    int_range(dtype, &low, &high);
    return (int64_t)clamp(v, low, high);
}

int64_t cpuref_requantize(pn_data_type dtype, int32_t acc, double multiplier, double zero_point) {
    double v = (double)acc * multiplier;
    v = v + zero_point;
    return cpuref_saturate(dtype, cpuref_round_half_even(v));
}

int32_t cpuref_wrap_int32(uint64_t v) {
    uint32_t bits = (uint32_t)v; /* modulo 2^32 */
    return bits <= (uint32_t)INT32_MAX ? (int32_t)bits : -(int32_t)(~bits) - 1;
}

/* ---- Where each element finds its scale and zero point ----------------------------- */

/* Element i of x = (outer, a, inner) with a along the axis; its parameter index is
 * outer * outer_stride + (a / block) * axis_stride + inner * inner_stride. */
typedef struct param_map {
    int64_t axis_size, inner;                          /* x's dim `axis`, the dims after it */
    int64_t block;                                     /* elements per scale along the axis */
    int64_t outer_stride, axis_stride, inner_stride;   /* 0 where the scale does not vary */
} param_map;

static param_map param_map_of(const pn_quantization_desc* d, const pn_tensor_info* x,
                              const pn_tensor_info* scale) {
    param_map m = {1, 1, 1, 0, 0, 0};
    if (d->block_size == 0 && scale->rank <= 1 && pn_num_elements(scale) == 1) {
        return m; /* per tensor */
    }
    uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, x->rank); /* validated */
    m.axis_size = x->dims[axis];
    m.inner = cpuref_span(x, axis + 1, x->rank);
    if (d->block_size == 0) { /* per axis: scale [dim] */
        m.axis_stride = 1;
        return m;
    }
    m.block = (int64_t)d->block_size;
    m.inner_stride = 1;
    m.axis_stride = m.inner;
    m.outer_stride = scale->dims[axis] * m.inner;
    return m;
}

static int64_t param_index(const param_map* m, int64_t i) {
    int64_t inner = i % m->inner;
    int64_t rest = i / m->inner;
    int64_t a = m->axis_size > 0 ? rest % m->axis_size : 0;
    int64_t outer = m->axis_size > 0 ? rest / m->axis_size : 0;
    return outer * m->outer_stride + (a / m->block) * m->axis_stride + inner * m->inner_stride;
}

/* ---- Kernels ------------------------------------------------------------------------- */

static pn_status quantize_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                 pn_string_out* message_out) {
    (void)message_out;
    const pn_quantization_desc* d = &op->desc.quantization;
    const pn_tensor_info* x = &op->inputs[0];
    param_map m = param_map_of(d, x, &op->inputs[1]);
    pn_data_type p = d->precision, y_type = op->outputs[0].dtype;
    int64_t n = pn_num_elements(x);
    for (int64_t i = 0; i < n; ++i) {
        int64_t k = param_index(&m, i);
        double xv = cpuref_round_to(p, pn_load_double(x->dtype, in[0], i));
        double sv = cpuref_round_to(p, pn_load_double(op->inputs[1].dtype, in[1], k));
        double q = cpuref_round_half_even(cpuref_round_to(p, xv / sv));
        double v = q + (double)pn_load_int64(op->inputs[2].dtype, in[2], k);
        pn_store_int64(y_type, out[0], i, cpuref_saturate(y_type, v));
    }
    return PN_OK;
}

static pn_status dequantize_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                   pn_string_out* message_out) {
    (void)message_out;
    const pn_quantization_desc* d = &op->desc.quantization;
    const pn_tensor_info* x = &op->inputs[0];
    param_map m = param_map_of(d, x, &op->inputs[1]);
    pn_data_type p = d->precision;
    int64_t n = pn_num_elements(x);
    for (int64_t i = 0; i < n; ++i) {
        int64_t k = param_index(&m, i);
        int64_t shifted = pn_load_int64(x->dtype, in[0], i) - pn_load_int64(x->dtype, in[2], k);
        double sv = cpuref_round_to(p, pn_load_double(op->inputs[1].dtype, in[1], k));
        double y = cpuref_round_to(p, cpuref_round_to(p, (double)shifted) * sv);
        pn_store_double(op->outputs[0].dtype, out[0], i, y);
    }
    return PN_OK;
}

/* Every step in float32, as ONNX's reference: a float32 operation on float32 values computed
 * in double and rounded to float32 gives the float32 result (double is wide enough). */
static pn_status dynamic_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                pn_string_out* message_out) {
    (void)message_out;
    const float* x = (const float*)in[0];
    int64_t n = pn_num_elements(&op->inputs[0]);
    float hi = 0.0f, lo = 0.0f; /* max(0, max(x)) and min(0, min(x)); NaN left out */
    for (int64_t i = 0; i < n; ++i) {
        hi = x[i] > hi ? x[i] : hi;
        lo = x[i] < lo ? x[i] : lo;
    }
    float range = hi == lo ? 1.0f : (float)((double)hi - (double)lo);
    float scale = (float)((double)range / 255.0);
    float initial = (float)(0.0 - (double)(float)((double)lo / (double)scale));
    double zero_point = cpuref_round_half_even(clamp(initial, 0.0, 255.0));
    for (int64_t i = 0; i < n; ++i) {
        double q = cpuref_round_half_even((double)(float)((double)x[i] / (double)scale));
        pn_store_int64(PN_DTYPE_UINT8, out[0], i,
                       cpuref_saturate(PN_DTYPE_UINT8, q + zero_point));
    }
    *(float*)out[1] = scale;
    *(uint8_t*)out[2] = (uint8_t)zero_point;
    return PN_OK;
}

pn_status cpuref_quantization_create(void* context, const pn_layer* layer,
                                     pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_quantization_desc* d = (const pn_quantization_desc*)layer->descriptor;
    cpuref_typed_kernel kernel = d->op == PN_QUANTIZATION_QUANTIZE_LINEAR     ? quantize_kernel
                                 : d->op == PN_QUANTIZATION_DEQUANTIZE_LINEAR ? dequantize_kernel
                                                                              : dynamic_kernel;
    return cpuref_typed_workload_new(layer, sizeof(*d), NULL, kernel, NULL, workload_out,
                                     message_out);
}
