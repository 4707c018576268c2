/* Validation of the quantization kinds (backend_api.h, "Quantization"): QUANTIZATION
 * (quantize, dequantize, dynamic quantize), QUANTIZED_CONVOLUTION and QUANTIZED_MATMUL
 * (INTEGER and QLINEAR): descriptors, counts, element types, the shapes of every scale and
 * zero point (per tensor, per axis, blocked, per channel, per row or column) and the rule
 * that their tensors are plain (no static quantization in a tensor info). */
#include "pn_validate_internal.h"

#include "plugnn/pn_elements.h"

#include <stdio.h>

#define QUANT "Quantization"
#define QCONV "QuantizedConvolution"
#define QMATMUL "QuantizedMatMul"

/* ---- Shared ------------------------------------------------------------------------ */

/* INT8, UINT8, INT16 or UINT16: the types QUANTIZE_LINEAR gives and DEQUANTIZE_LINEAR reads. */
static int is_quantized_type(pn_data_type t) {
    return t == PN_DTYPE_INT8 || t == PN_DTYPE_UINT8 || t == PN_DTYPE_INT16 ||
           t == PN_DTYPE_UINT16;
}

static int is_8bit(pn_data_type t) { return t == PN_DTYPE_INT8 || t == PN_DTYPE_UINT8; }

/* No tensor of the layer carries static quantization in its info: these kinds take their
 * scales and zero points as inputs. */
static pn_status check_plain(const pn_layer* layer, const char* kind, pn_string_out* reason) {
    for (uint32_t i = 0; i < layer->num_inputs + layer->num_outputs; ++i) {
        int is_input = i < layer->num_inputs;
        uint32_t index = is_input ? i : i - layer->num_inputs;
        const pn_tensor_info* info = is_input ? &layer->inputs[index] : &layer->outputs[index];
        if (PN_HAS_FIELD(info, pn_tensor_info, quant_zero_point) &&
            (info->quant_scale != 0.0f || info->quant_zero_point != 0)) {
            return PNV_FAIL(reason,
                            "%s: %s %u carries static quantization in its tensor info "
                            "(quant_scale %g, zero point %d); this kind takes its scales and "
                            "zero points as inputs, its tensors are plain",
                            kind, is_input ? "input" : "output", index,
                            (double)info->quant_scale, (int)info->quant_zero_point);
        }
    }
    return PN_OK;
}

/* `info` (named `what`) is of element type `expected`. */
static pn_status type_is(const char* kind, const pn_tensor_info* info, const char* what,
                         pn_data_type expected, pn_string_out* reason) {
    if (info->dtype != expected) {
        return PNV_FAIL(reason, "%s: %s is %s; it must be %s", kind, what,
                        pn_dtype_name(info->dtype), pn_dtype_name(expected));
    }
    return PN_OK;
}

/* An 8-bit integer (INT8 or UINT8) operand or zero point. */
static pn_status type_8bit(const char* kind, const pn_tensor_info* info, const char* what,
                           pn_string_out* reason) {
    if (!is_8bit(info->dtype)) {
        return PNV_FAIL(reason, "%s: %s is %s; it must be int8 or uint8", kind, what,
                        pn_dtype_name(info->dtype));
    }
    return PN_OK;
}

static pn_status type_float(const char* kind, const pn_tensor_info* info, const char* what,
                            pn_string_out* reason) {
    if (!pn_dtype_is_float(info->dtype)) {
        return PNV_FAIL(reason, "%s: %s is %s; it must be a float type", kind, what,
                        pn_dtype_name(info->dtype));
    }
    return PN_OK;
}

/* One element, rank 0 or 1 (a per-tensor scale or zero point). */
static pn_status one_element(const char* kind, const pn_tensor_info* info, const char* what,
                             pn_string_out* reason) {
    if (info->rank > 1 || pn_num_elements(info) != 1) {
        char s[160];
        return PNV_FAIL(reason, "%s: %s has shape %s; it must hold one element (rank 0 or 1)",
                        kind, what, pn_format_shape(info, s, sizeof(s)));
    }
    return PN_OK;
}

/* One element (rank 0 or 1), or [count]: per tensor or per output channel. */
static pn_status one_or_per_channel(const char* kind, const pn_tensor_info* info,
                                    const char* what, int64_t count, pn_string_out* reason) {
    if (info->rank <= 1 && pn_num_elements(info) == 1) {
        return PN_OK;
    }
    if (info->rank == 1 && info->dims[0] == count) {
        return PN_OK;
    }
    char s[160];
    return PNV_FAIL(reason,
                    "%s: %s has shape %s; it must hold one element (per tensor) or be [%lld] "
                    "(per output channel)",
                    kind, what, pn_format_shape(info, s, sizeof(s)), (long long)count);
}

/* ---- QUANTIZATION ------------------------------------------------------------------- */

static const char* quantization_op_name(pn_quantization_op op) {
    switch (op) {
    case PN_QUANTIZATION_QUANTIZE_LINEAR: return "QUANTIZE_LINEAR";
    case PN_QUANTIZATION_DEQUANTIZE_LINEAR: return "DEQUANTIZE_LINEAR";
    case PN_QUANTIZATION_DYNAMIC_QUANTIZE_LINEAR: return "DYNAMIC_QUANTIZE_LINEAR";
    case PN_QUANTIZATION_INVALID: break;
    }
    return "?";
}

/* The shapes of scale and zero_point against x: per tensor, per axis or blocked. */
static pn_status check_granularity(const pn_layer* layer, const pn_quantization_desc* d,
                                   pn_string_out* reason) {
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* scale = &layer->inputs[1];
    const pn_tensor_info* zero_point = &layer->inputs[2];
    char a[160], b[160];
    if (!pn_same_dims(scale, zero_point)) {
        return PNV_FAIL(reason, QUANT ": zero_point has shape %s and scale %s; they have one shape",
                        pn_format_shape(zero_point, a, sizeof(a)),
                        pn_format_shape(scale, b, sizeof(b)));
    }
    if (d->block_size == 0 && scale->rank <= 1 && pn_num_elements(scale) == 1) {
        return PN_OK; /* per tensor: the axis is ignored */
    }
    int32_t axis = pn_normalize_axis(d->axis, x->rank);
    if (axis < 0) {
        return PNV_FAIL(reason, QUANT ": axis %d is out of range for x of rank %u (per-axis and "
                        "blocked quantization need an axis of x)", d->axis, x->rank);
    }
    if (d->block_size == 0) {
        if (scale->rank != 1) {
            return PNV_FAIL(reason,
                            QUANT ": scale has shape %s with block_size 0; it must hold one "
                            "element (per tensor) or be [%lld] (per axis %d), or block_size "
                            "must be >= 1 (blocked)",
                            pn_format_shape(scale, a, sizeof(a)), (long long)x->dims[axis], axis);
        }
        if (scale->dims[0] != x->dims[axis]) {
            return PNV_FAIL(reason,
                            QUANT ": a per-axis scale has x's dim %d (%lld) elements, got %lld",
                            axis, (long long)x->dims[axis], (long long)scale->dims[0]);
        }
        return PN_OK;
    }
    if (scale->rank != x->rank) {
        return PNV_FAIL(reason, QUANT ": a blocked scale has x's rank %u, got shape %s", x->rank,
                        pn_format_shape(scale, a, sizeof(a)));
    }
    pn_tensor_info expected = *x;
    expected.dims[axis] = (x->dims[axis] + (int64_t)d->block_size - 1) / (int64_t)d->block_size;
    if (!pn_same_dims(scale, &expected)) {
        return PNV_FAIL(reason,
                        QUANT ": a scale blocked along axis %d by %u has shape %s (x's, with "
                        "ceil(%lld / %u) there), got %s",
                        axis, d->block_size, pn_format_shape(&expected, a, sizeof(a)),
                        (long long)x->dims[axis], d->block_size,
                        pn_format_shape(scale, b, sizeof(b)));
    }
    return PN_OK;
}

static pn_status check_quantize_types(const pn_layer* layer, pn_string_out* reason) {
    const pn_tensor_info* in = layer->inputs;
    if (!pn_dtype_is_float(in[0].dtype) && in[0].dtype != PN_DTYPE_INT32) {
        return PNV_FAIL(reason, QUANT ": QUANTIZE_LINEAR's x (input 0) is %s; it must be a float "
                        "type or int32", pn_dtype_name(in[0].dtype));
    }
    if (!pn_dtype_is_float(in[1].dtype) && in[1].dtype != PN_DTYPE_INT32) {
        return PNV_FAIL(reason, QUANT ": QUANTIZE_LINEAR's scale (input 1) is %s; it must be a "
                        "float type or int32", pn_dtype_name(in[1].dtype));
    }
    if (!is_quantized_type(in[2].dtype)) {
        return PNV_FAIL(reason, QUANT ": QUANTIZE_LINEAR's zero_point (input 2) is %s; it must "
                        "be int8, uint8, int16 or uint16", pn_dtype_name(in[2].dtype));
    }
    return type_is(QUANT, &layer->outputs[0], "QUANTIZE_LINEAR's output (zero_point's type)",
                   in[2].dtype, reason);
}

static pn_status check_dequantize_types(const pn_layer* layer, pn_string_out* reason) {
    const pn_tensor_info* in = layer->inputs;
    if (!is_quantized_type(in[0].dtype) && in[0].dtype != PN_DTYPE_INT32) {
        return PNV_FAIL(reason, QUANT ": DEQUANTIZE_LINEAR's x (input 0) is %s; it must be int8, "
                        "uint8, int16, uint16 or int32", pn_dtype_name(in[0].dtype));
    }
    PNV_TRY(type_float(QUANT, &in[1], "DEQUANTIZE_LINEAR's scale (input 1)", reason));
    PNV_TRY(type_is(QUANT, &in[2], "DEQUANTIZE_LINEAR's zero_point (input 2, x's type)",
                    in[0].dtype, reason));
    return type_float(QUANT, &layer->outputs[0], "DEQUANTIZE_LINEAR's output", reason);
}

/* DYNAMIC_QUANTIZE_LINEAR: x FLOAT32 -> y UINT8 of x's shape, scale FLOAT32 [] and zero point
 * UINT8 []. */
static pn_status check_dynamic(const pn_layer* layer, const pn_quantization_desc* d,
                               pn_string_out* reason) {
    if (d->axis != 0 || d->block_size != 0 || d->precision != PN_DTYPE_FLOAT32) {
        return PNV_FAIL(reason, QUANT ": DYNAMIC_QUANTIZE_LINEAR takes axis 0, block_size 0 and "
                        "precision float32 (it computes in float32), got %d, %u and %s", d->axis,
                        d->block_size, pn_dtype_name(d->precision));
    }
    if (layer->num_inputs != 1 || layer->num_outputs != 3) {
        return PNV_FAIL(reason, QUANT ": DYNAMIC_QUANTIZE_LINEAR takes 1 input (x) and has 3 "
                        "outputs (y, scale, zero_point), got %u and %u", layer->num_inputs,
                        layer->num_outputs);
    }
    PNV_TRY(type_is(QUANT, &layer->inputs[0], "DYNAMIC_QUANTIZE_LINEAR's x", PN_DTYPE_FLOAT32,
                    reason));
    PNV_TRY(type_is(QUANT, &layer->outputs[0], "DYNAMIC_QUANTIZE_LINEAR's y (output 0)",
                    PN_DTYPE_UINT8, reason));
    PNV_TRY(type_is(QUANT, &layer->outputs[1], "DYNAMIC_QUANTIZE_LINEAR's scale (output 1)",
                    PN_DTYPE_FLOAT32, reason));
    PNV_TRY(type_is(QUANT, &layer->outputs[2], "DYNAMIC_QUANTIZE_LINEAR's zero_point (output 2)",
                    PN_DTYPE_UINT8, reason));
    PNV_TRY(pnv_shape_is(layer, &layer->outputs[0], &layer->inputs[0], "output 0 (y, x's shape)",
                         reason));
    pn_tensor_info scalar = {0};
    PNV_TRY(pnv_shape_is(layer, &layer->outputs[1], &scalar, "output 1 (scale)", reason));
    return pnv_shape_is(layer, &layer->outputs[2], &scalar, "output 2 (zero_point)", reason);
}

pn_status pn_validate_quantization(const pn_layer* layer, pn_string_out* reason) {
    const pn_quantization_desc* d = (const pn_quantization_desc*)layer->descriptor;
    if (d->op < PN_QUANTIZATION_QUANTIZE_LINEAR ||
        d->op > PN_QUANTIZATION_DYNAMIC_QUANTIZE_LINEAR) {
        return PNV_FAIL(reason, QUANT ": unknown op %d", (int)d->op);
    }
    if (!pn_dtype_is_float(d->precision)) {
        return PNV_FAIL(reason, QUANT ": %s's precision is %s (%d); it must be a float type",
                        quantization_op_name(d->op), pn_dtype_name(d->precision),
                        (int)d->precision);
    }
    PNV_TRY(check_plain(layer, QUANT, reason));
    if (d->op == PN_QUANTIZATION_DYNAMIC_QUANTIZE_LINEAR) {
        return check_dynamic(layer, d, reason);
    }
    PNV_TRY(pnv_counts(layer, 3, 3, reason));
    if (d->op == PN_QUANTIZATION_QUANTIZE_LINEAR) {
        PNV_TRY(check_quantize_types(layer, reason));
    } else {
        PNV_TRY(check_dequantize_types(layer, reason));
    }
    PNV_TRY(pnv_shape_is(layer, &layer->outputs[0], &layer->inputs[0], "output (x's shape)",
                         reason));
    return check_granularity(layer, d, reason);
}

/* ---- What QUANTIZED_CONVOLUTION and QUANTIZED_MATMUL share ---------------------------- */

/* Input positions of the operands and parameters, per op (INTEGER: x, x_zp, w, w_zp;
 * QLINEAR: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp[, bias]). -1: none. */
typedef struct product_inputs {
    int x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point;
} product_inputs;

static product_inputs inputs_of(pn_quantized_op op) {
    product_inputs integer = {0, -1, 1, 2, -1, 3, -1, -1};
    product_inputs qlinear = {0, 1, 2, 3, 4, 5, 6, 7};
    return op == PN_QUANTIZED_INTEGER ? integer : qlinear;
}

/* Element types: 8-bit operands with zero points of their types; INTEGER gives INT32;
 * QLINEAR has one float type for the scales and gives y_zero_point's type. */
static pn_status check_product_types(const pn_layer* layer, const char* kind, pn_quantized_op op,
                                     const char* x_name, const char* w_name,
                                     pn_string_out* reason) {
    product_inputs p = inputs_of(op);
    const pn_tensor_info* in = layer->inputs;
    char what[64];
    snprintf(what, sizeof(what), "%s (input %d)", x_name, p.x);
    PNV_TRY(type_8bit(kind, &in[p.x], what, reason));
    snprintf(what, sizeof(what), "%s_zero_point (input %d, %s's type)", x_name, p.x_zero_point,
             x_name);
    PNV_TRY(type_is(kind, &in[p.x_zero_point], what, in[p.x].dtype, reason));
    snprintf(what, sizeof(what), "%s (input %d)", w_name, p.w);
    PNV_TRY(type_8bit(kind, &in[p.w], what, reason));
    snprintf(what, sizeof(what), "%s_zero_point (input %d, %s's type)", w_name, p.w_zero_point,
             w_name);
    PNV_TRY(type_is(kind, &in[p.w_zero_point], what, in[p.w].dtype, reason));
    if (op == PN_QUANTIZED_INTEGER) {
        return type_is(kind, &layer->outputs[0], "INTEGER's output", PN_DTYPE_INT32, reason);
    }
    snprintf(what, sizeof(what), "%s_scale (input %d)", x_name, p.x_scale);
    PNV_TRY(type_float(kind, &in[p.x_scale], what, reason));
    int scales[2] = {p.w_scale, p.y_scale};
    for (int i = 0; i < 2; ++i) {
        if (in[scales[i]].dtype != in[p.x_scale].dtype) {
            return PNV_FAIL(reason, "%s: input %d (a scale) is %s but %s_scale (input %d) is %s; "
                            "the scales share one float type", kind, scales[i],
                            pn_dtype_name(in[scales[i]].dtype), x_name, p.x_scale,
                            pn_dtype_name(in[p.x_scale].dtype));
        }
    }
    PNV_TRY(type_8bit(kind, &in[p.y_zero_point], "y_zero_point (input 7)", reason));
    PNV_TRY(type_is(kind, &layer->outputs[0], "QLINEAR's output (y_zero_point's type)",
                    in[p.y_zero_point].dtype, reason));
    PNV_TRY(one_element(kind, &in[p.y_scale], "y_scale (input 6)", reason));
    return one_element(kind, &in[p.y_zero_point], "y_zero_point (input 7)", reason);
}

static pn_status check_quantized_op(const char* kind, pn_quantized_op op, pn_string_out* reason) {
    if (op != PN_QUANTIZED_INTEGER && op != PN_QUANTIZED_QLINEAR) {
        return PNV_FAIL(reason, "%s: unknown op %d", kind, (int)op);
    }
    return PN_OK;
}

/* ---- QUANTIZED_CONVOLUTION ---------------------------------------------------------- */

static pn_status check_qconv_desc(const pn_quantized_convolution_desc* d, pn_string_out* reason) {
    PNV_TRY(check_quantized_op(QCONV, d->op, reason));
    if (d->spatial_rank < 1 || d->spatial_rank > 3) {
        return PNV_FAIL(reason, QCONV ": spatial_rank must be 1, 2 or 3, got %u", d->spatial_rank);
    }
    for (uint32_t a = 0; a < d->spatial_rank; ++a) {
        if (d->strides[a] == 0) {
            return PNV_FAIL(reason, QCONV ": strides[%u] must be >= 1, got 0", a);
        }
        if (d->dilations[a] == 0) {
            return PNV_FAIL(reason, QCONV ": dilations[%u] must be >= 1, got 0", a);
        }
    }
    if (d->groups == 0) {
        return PNV_FAIL(reason, QCONV ": groups must be >= 1, got 0");
    }
    if ((d->flags & ~PN_LAYER_FLAG_HAS_BIAS) != 0) {
        return PNV_FAIL(reason, QCONV ": unknown flags 0x%x (only PN_LAYER_FLAG_HAS_BIAS)",
                        d->flags);
    }
    if ((d->flags & PN_LAYER_FLAG_HAS_BIAS) && d->op != PN_QUANTIZED_QLINEAR) {
        return PNV_FAIL(reason, QCONV ": only QLINEAR takes a bias (PN_LAYER_FLAG_HAS_BIAS)");
    }
    return PN_OK;
}

/* x's and w's shapes and the output's, from the FORWARD convolution's rules. */
static pn_status check_qconv_shapes(const pn_layer* layer, const pn_quantized_convolution_desc* d,
                                    const pn_tensor_info* x, const pn_tensor_info* w,
                                    pn_string_out* reason) {
    uint32_t rank = d->spatial_rank;
    PNV_TRY(pnv_rank(layer, x, "x", rank + 2, rank + 2, reason));
    PNV_TRY(pnv_rank(layer, w, "w", rank + 2, rank + 2, reason));
    int64_t channels = x->dims[1];
    if (channels % d->groups != 0 || w->dims[0] % d->groups != 0) {
        return PNV_FAIL(reason, QCONV ": groups (%u) must divide x's channels (%lld) and w's "
                        "output channels (%lld)", d->groups, (long long)channels,
                        (long long)w->dims[0]);
    }
    if (w->dims[1] != channels / d->groups) {
        return PNV_FAIL(reason, QCONV ": w's dim 1 is %lld, expected x's channels / groups = "
                        "%lld / %u = %lld", (long long)w->dims[1], (long long)channels, d->groups,
                        (long long)(channels / d->groups));
    }
    pn_tensor_info y = {0};
    y.rank = rank + 2;
    y.dims[0] = x->dims[0];
    y.dims[1] = w->dims[0];
    for (uint32_t a = 0; a < rank; ++a) {
        int64_t k = w->dims[2 + a];
        if (k < 1 || k > UINT32_MAX) {
            return PNV_FAIL(reason, QCONV ": the kernel size of spatial axis %u is %lld; it must "
                            "be 1..%u", a, (long long)k, UINT32_MAX);
        }
        y.dims[2 + a] = pn_window_output_size(x->dims[2 + a], d->pads_begin[a], d->pads_end[a],
                                              (uint32_t)k, d->strides[a], d->dilations[a], 0);
        if (y.dims[2 + a] < 0) {
            return PNV_FAIL(reason, QCONV ": the window of spatial axis %u (kernel %lld, dilation "
                            "%u) does not fit the padded input (%lld + %u + %u)", a, (long long)k,
                            d->dilations[a], (long long)x->dims[2 + a], d->pads_begin[a],
                            d->pads_end[a]);
        }
    }
    return pnv_shape_is(layer, &layer->outputs[0], &y, "output", reason);
}

pn_status pn_validate_quantized_convolution(const pn_layer* layer, pn_string_out* reason) {
    const pn_quantized_convolution_desc* d =
        (const pn_quantized_convolution_desc*)layer->descriptor;
    PNV_TRY(check_qconv_desc(d, reason));
    uint32_t count = d->op == PN_QUANTIZED_INTEGER ? 4u
                                                  : ((d->flags & PN_LAYER_FLAG_HAS_BIAS) ? 9u : 8u);
    PNV_TRY(pnv_counts(layer, count, count, reason));
    PNV_TRY(check_plain(layer, QCONV, reason));
    PNV_TRY(check_product_types(layer, QCONV, d->op, "x", "w", reason));
    product_inputs p = inputs_of(d->op);
    const pn_tensor_info* x = &layer->inputs[p.x];
    const pn_tensor_info* w = &layer->inputs[p.w];
    PNV_TRY(check_qconv_shapes(layer, d, x, w, reason));
    int64_t outputs = w->dims[0];
    char what[64];
    snprintf(what, sizeof(what), "x_zero_point (input %d)", p.x_zero_point);
    PNV_TRY(one_element(QCONV, &layer->inputs[p.x_zero_point], what, reason));
    snprintf(what, sizeof(what), "w_zero_point (input %d)", p.w_zero_point);
    PNV_TRY(one_or_per_channel(QCONV, &layer->inputs[p.w_zero_point], what, outputs, reason));
    if (d->op == PN_QUANTIZED_QLINEAR) {
        PNV_TRY(one_element(QCONV, &layer->inputs[p.x_scale], "x_scale (input 1)", reason));
        PNV_TRY(one_or_per_channel(QCONV, &layer->inputs[p.w_scale], "w_scale (input 4)", outputs,
                                   reason));
        if (count == 9) {
            PNV_TRY(type_is(QCONV, &layer->inputs[8], "bias (input 8)", PN_DTYPE_INT32, reason));
            pn_tensor_info bias = {0};
            bias.rank = 1;
            bias.dims[0] = outputs;
            PNV_TRY(pnv_shape_is(layer, &layer->inputs[8], &bias, "bias (input 8)", reason));
        }
    }
    return PN_OK;
}

/* ---- QUANTIZED_MATMUL --------------------------------------------------------------- */

/* The batch dims of a matmul operand (all but its last two, or none for rank <= 2). */
static pn_tensor_info batch_of(const pn_tensor_info* t) {
    pn_tensor_info r = {0};
    r.struct_size = (uint32_t)sizeof(r);
    r.rank = t->rank > 2 ? t->rank - 2 : 0;
    for (uint32_t i = 0; i < r.rank; ++i) {
        r.dims[i] = t->dims[i];
    }
    return r;
}

/* A zero point or scale of an operand: it broadcasts to the operand's shape and does not vary
 * along the operand's summed axis `k_axis`. */
static pn_status check_operand_parameter(const pn_layer* layer, uint32_t index,
                                         const char* what, uint32_t operand_index,
                                         const char* operand, uint32_t k_axis,
                                         pn_string_out* reason) {
    const pn_tensor_info* param = &layer->inputs[index];
    const pn_tensor_info* of = &layer->inputs[operand_index];
    int64_t strides[PN_MAX_DIMS];
    char a[160], b[160];
    if (param->rank > of->rank || pn_broadcast_strides(param, of, strides) != 0) {
        return PNV_FAIL(reason, QMATMUL ": %s (input %u) has shape %s, which does not broadcast "
                        "to %s's %s", what, index, pn_format_shape(param, a, sizeof(a)), operand,
                        pn_format_shape(of, b, sizeof(b)));
    }
    int64_t aligned = (int64_t)k_axis - (int64_t)(of->rank - param->rank);
    if (aligned >= 0 && param->dims[aligned] != 1) {
        return PNV_FAIL(reason, QMATMUL ": %s (input %u) has shape %s, which varies along %s's "
                        "summed axis %u (per tensor, per row of a or per column of b only)", what,
                        index, pn_format_shape(param, a, sizeof(a)), operand, k_axis);
    }
    return PN_OK;
}

static pn_status check_qmatmul_shapes(const pn_layer* layer, const pn_tensor_info* a,
                                      const pn_tensor_info* b, pn_string_out* reason) {
    PNV_TRY(pnv_rank(layer, a, "a", 1, PN_MAX_DIMS, reason));
    PNV_TRY(pnv_rank(layer, b, "b", 1, PN_MAX_DIMS, reason));
    int64_t ka = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    if (ka != kb) {
        return PNV_FAIL(reason, QMATMUL ": inner dimensions differ: a's last dim is %lld, b's %s "
                        "is %lld", (long long)ka,
                        b->rank == 1 ? "only dim" : "second-to-last dim", (long long)kb);
    }
    pn_tensor_info ba = batch_of(a), bb = batch_of(b), expected;
    if (pn_broadcast_shape(&ba, &bb, &expected) != 0) {
        char as[160], bs[160];
        return PNV_FAIL(reason, QMATMUL ": batch dims %s and %s do not broadcast",
                        pn_format_shape(&ba, as, sizeof(as)), pn_format_shape(&bb, bs, sizeof(bs)));
    }
    if (a->rank >= 2) {
        expected.dims[expected.rank++] = a->dims[a->rank - 2];
    }
    if (b->rank >= 2) {
        expected.dims[expected.rank++] = b->dims[b->rank - 1];
    }
    return pnv_shape_is(layer, &layer->outputs[0], &expected, "output", reason);
}

pn_status pn_validate_quantized_matmul(const pn_layer* layer, pn_string_out* reason) {
    const pn_quantized_matmul_desc* d = (const pn_quantized_matmul_desc*)layer->descriptor;
    PNV_TRY(check_quantized_op(QMATMUL, d->op, reason));
    uint32_t count = d->op == PN_QUANTIZED_INTEGER ? 4u : 8u;
    PNV_TRY(pnv_counts(layer, count, count, reason));
    PNV_TRY(check_plain(layer, QMATMUL, reason));
    PNV_TRY(check_product_types(layer, QMATMUL, d->op, "a", "b", reason));
    product_inputs p = inputs_of(d->op);
    const pn_tensor_info* a = &layer->inputs[p.x];
    const pn_tensor_info* b = &layer->inputs[p.w];
    PNV_TRY(check_qmatmul_shapes(layer, a, b, reason));
    uint32_t ka = a->rank - 1;
    uint32_t kb = b->rank == 1 ? 0u : b->rank - 2;
    PNV_TRY(check_operand_parameter(layer, (uint32_t)p.x_zero_point, "a_zero_point",
                                    (uint32_t)p.x, "a", ka, reason));
    PNV_TRY(check_operand_parameter(layer, (uint32_t)p.w_zero_point, "b_zero_point",
                                    (uint32_t)p.w, "b", kb, reason));
    if (d->op == PN_QUANTIZED_QLINEAR) {
        PNV_TRY(check_operand_parameter(layer, (uint32_t)p.x_scale, "a_scale", (uint32_t)p.x, "a",
                                        ka, reason));
        PNV_TRY(check_operand_parameter(layer, (uint32_t)p.w_scale, "b_scale", (uint32_t)p.w, "b",
                                        kb, reason));
    }
    return PN_OK;
}
