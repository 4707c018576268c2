/* QUANTIZED_MATMUL (ONNX MatMulInteger, QLinearMatMul): NumPy matmul of INT8/UINT8 operands
 * shifted by their zero points (per tensor, per row of a, per column of b), each output an
 * exact integer sum wrapped to INT32, given as such (INTEGER) or requantized (QLINEAR) as
 * backend_api.h states. */
#include "cpuref.h"

#include <stdlib.h>

/* One operand as the kernel walks it: [batch..., rows, cols] with its own batch dims broadcast
 * into the output's, and where its zero point and scale are for a given batch and row/column. */
typedef struct operand {
    uint32_t rank, batch_rank;
    int64_t dims[PN_MAX_DIMS];      /* of the operand as given */
    int64_t strides[PN_MAX_DIMS];   /* dense element strides */
    int64_t zero_strides[PN_MAX_DIMS];  /* the zero point broadcast to the operand */
    int64_t scale_strides[PN_MAX_DIMS]; /* the scale broadcast to the operand (QLINEAR) */
} operand;

typedef struct qmatmul_state {
    int64_t m, k, n, batches;
    uint32_t out_batch_rank;
    int64_t out_batch[PN_MAX_DIMS];
    operand a, b;
    int qlinear;
} qmatmul_state;

static void operand_of(operand* o, const pn_tensor_info* info, const pn_tensor_info* zero,
                       const pn_tensor_info* scale) {
    o->rank = info->rank;
    o->batch_rank = info->rank > 2 ? info->rank - 2 : 0;
    cpuref_dense_strides(info, o->strides);
    for (uint32_t i = 0; i < info->rank; ++i) {
        o->dims[i] = info->dims[i];
    }
    pn_broadcast_strides(zero, info, o->zero_strides); /* validated: they broadcast */
    if (scale != NULL) {
        pn_broadcast_strides(scale, info, o->scale_strides);
    }
}

/* The operand's index of output batch element `batch` (its own dims broadcast), with
 * `row_axis_value` at its axis rank - 2 (a's row, 0 for b) and `col_axis_value` at its last
 * (b's column, 0 for a), dotted with `strides`. */
static int64_t offset(const qmatmul_state* s, const operand* o, const int64_t* batch,
                      int64_t row, int64_t col, const int64_t* strides) {
    int64_t at = 0;
    for (uint32_t d = 0; d < o->batch_rank; ++d) {
        int64_t i = batch[d + (s->out_batch_rank - o->batch_rank)];
        at += (o->dims[d] == 1 ? 0 : i) * strides[d];
    }
    if (o->rank >= 2) {
        at += row * strides[o->rank - 2] + col * strides[o->rank - 1];
    } else {
        at += (row + col) * strides[0]; /* rank 1: the one axis takes whichever is used */
    }
    return at;
}

static pn_status qmatmul_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                pn_string_out* message_out) {
    (void)message_out;
    const qmatmul_state* s = (const qmatmul_state*)op->priv;
    int q = s->qlinear;
    /* inputs: a, [a_scale], a_zero_point, b, [b_scale], b_zero_point, [y_scale, y_zero_point] */
    int ia = 0, ia_scale = 1, ia_zero = q ? 2 : 1, ib = q ? 3 : 2, ib_scale = 4,
        ib_zero = q ? 5 : 3;
    pn_data_type at = op->inputs[ia].dtype, bt = op->inputs[ib].dtype, yt = op->outputs[0].dtype;
    pn_data_type st = q ? op->inputs[ia_scale].dtype : PN_DTYPE_FLOAT32;
    double ys = q ? pn_load_double(st, in[6], 0) : 0.0;
    double y_zero = q ? (double)pn_load_int64(yt, in[7], 0) : 0.0;
    int64_t batch[PN_MAX_DIMS] = {0};
    int64_t index = 0;
    for (int64_t bi = 0; bi < s->batches; ++bi) {
        for (int64_t i = 0; i < s->m; ++i) {
            int64_t a_zero = pn_load_int64(at, in[ia_zero],
                                           offset(s, &s->a, batch, i, 0, s->a.zero_strides));
            double as = q ? pn_load_double(st, in[ia_scale],
                                           offset(s, &s->a, batch, i, 0, s->a.scale_strides))
                          : 0.0;
            for (int64_t j = 0; j < s->n; ++j, ++index) {
                int64_t b_zero = pn_load_int64(bt, in[ib_zero],
                                               offset(s, &s->b, batch, 0, j, s->b.zero_strides));
                uint64_t acc = 0; /* modulo 2^64, so modulo 2^32 too */
                for (int64_t k = 0; k < s->k; ++k) {
                    int64_t av =
                        pn_load_int64(at, in[ia], offset(s, &s->a, batch, i, k, s->a.strides));
                    int64_t bv =
                        pn_load_int64(bt, in[ib], offset(s, &s->b, batch, k, j, s->b.strides));
                    acc += (uint64_t)((av - a_zero) * (bv - b_zero)); /* |product| < 2^16 */
                }
                int32_t sum = cpuref_wrap_int32(acc);
                if (!q) {
                    ((int32_t*)out[0])[index] = sum;
                    continue;
                }
                double bs = pn_load_double(st, in[ib_scale],
                                           offset(s, &s->b, batch, 0, j, s->b.scale_strides));
                /* (a_scale * b_scale) / y_scale, each step rounded to the scales' type */
                double multiplier = cpuref_round_to(st, cpuref_round_to(st, as * bs) / ys);
                pn_store_int64(yt, out[0], index, cpuref_requantize(yt, sum, multiplier, y_zero));
            }
        }
        for (int32_t d = (int32_t)s->out_batch_rank - 1; d >= 0; --d) { /* next batch index */
            if (++batch[d] < s->out_batch[d]) {
                break;
            }
            batch[d] = 0;
        }
    }
    return PN_OK;
}

pn_status cpuref_quantized_matmul_create(void* context, const pn_layer* layer,
                                         pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_quantized_matmul_desc* d = (const pn_quantized_matmul_desc*)layer->descriptor;
    qmatmul_state* s = (qmatmul_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                       "CpuRef: out of memory creating a QuantizedMatMul workload");
    }
    int q = d->op == PN_QUANTIZED_QLINEAR;
    const pn_tensor_info* in = layer->inputs;
    const pn_tensor_info* a = &in[0];
    const pn_tensor_info* b = &in[q ? 3 : 2];
    s->qlinear = q;
    operand_of(&s->a, a, &in[q ? 2 : 1], q ? &in[1] : NULL);
    operand_of(&s->b, b, &in[q ? 5 : 3], q ? &in[4] : NULL);
    s->m = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
    s->k = a->dims[a->rank - 1];
    s->n = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    /* The output's batch dims: all of its dims but the matrix ones a and b contribute. */
    const pn_tensor_info* y = &layer->outputs[0];
    uint32_t matrix = (a->rank >= 2 ? 1u : 0u) + (b->rank >= 2 ? 1u : 0u);
    s->out_batch_rank = y->rank - matrix;
    s->batches = 1;
    for (uint32_t i = 0; i < s->out_batch_rank; ++i) {
        s->out_batch[i] = y->dims[i];
        s->batches *= y->dims[i];
    }
    return cpuref_typed_workload_new(layer, sizeof(*d), NULL, qmatmul_kernel, s, workload_out,
                                     message_out);
}
