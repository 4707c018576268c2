/* LINEAR_ALGEBRA (ONNX Det): the determinant of each matrix of the last two dims, by
 * Gaussian elimination with partial pivoting in double, rounded once (backend_api.h). */
#include "cpuref.h"

#include <math.h>
#include <stdlib.h>

/* The determinant of the m x m matrix in a (row-major, overwritten). */
static double determinant(double* a, int64_t m) {
    double det = 1.0;
    for (int64_t col = 0; col < m; ++col) {
        int64_t pivot = col;
        for (int64_t row = col + 1; row < m; ++row) {
            if (fabs(a[row * m + col]) > fabs(a[pivot * m + col])) {
                pivot = row;
            }
        }
        if (pivot != col) {
            for (int64_t k = 0; k < m; ++k) {
                double t = a[col * m + k];
                a[col * m + k] = a[pivot * m + k];
                a[pivot * m + k] = t;
            }
            det = -det;
        }
        double p = a[col * m + col];
        det *= p;
        if (p == 0.0) {
            return det; /* singular (0, or NaN where a NaN was multiplied in) */
        }
        for (int64_t row = col + 1; row < m; ++row) {
            double factor = a[row * m + col] / p;
            for (int64_t k = col; k < m; ++k) {
                a[row * m + k] -= factor * a[col * m + k];
            }
        }
    }
    return det;
}

static pn_status linalg_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                               pn_string_out* message_out) {
    const pn_tensor_info* x = &op->inputs[0];
    int64_t m = x->dims[x->rank - 1];
    int64_t count = cpuref_span(x, 0, x->rank - 2);
    double* a = (double*)malloc((size_t)(m > 0 ? m * m : 1) * sizeof(double));
    if (a == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef LinearAlgebra: out of memory "
                       "for a %lld x %lld matrix", (long long)m, (long long)m);
    }
    for (int64_t b = 0; b < count; ++b) {
        for (int64_t i = 0; i < m * m; ++i) {
            a[i] = pn_load_double(x->dtype, in[0], b * m * m + i);
        }
        pn_store_double(op->outputs[0].dtype, out[0], b, determinant(a, m));
    }
    free(a);
    return PN_OK;
}

pn_status cpuref_linear_algebra_create(void* context, const pn_layer* layer,
                                       pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, sizeof(pn_linear_algebra_desc), NULL, linalg_kernel,
                                     NULL, workload_out, message_out);
}
