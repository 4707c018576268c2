/* Tensor shape helpers for plugins. */
#include "plugnn/plugin_common.h"

size_t pn_dtype_size(pn_data_type dtype) {
    switch (dtype) {
    case PN_DTYPE_FLOAT32: return 4;
    case PN_DTYPE_FLOAT16: return 2;
    case PN_DTYPE_INT8: return 1;
    case PN_DTYPE_UINT8: return 1;
    case PN_DTYPE_INT32: return 4;
    case PN_DTYPE_INT64: return 8;
    case PN_DTYPE_BOOL: return 1;
    case PN_DTYPE_INT16: return 2;
    case PN_DTYPE_UINT16: return 2;
    case PN_DTYPE_UINT32: return 4;
    case PN_DTYPE_UINT64: return 8;
    case PN_DTYPE_FLOAT64: return 8;
    case PN_DTYPE_BFLOAT16: return 2;
    case PN_DTYPE_INVALID: break;
    }
    return 0;
}

int64_t pn_num_elements(const pn_tensor_info* info) {
    int64_t n = 1;
    for (uint32_t i = 0; i < info->rank && i < PN_MAX_DIMS; ++i) {
        n *= info->dims[i];
    }
    return n;
}

size_t pn_num_bytes(const pn_tensor_info* info) {
    return (size_t)pn_num_elements(info) * pn_dtype_size(info->dtype);
}

int pn_same_dims(const pn_tensor_info* a, const pn_tensor_info* b) {
    if (a->rank != b->rank) {
        return 0;
    }
    for (uint32_t i = 0; i < a->rank; ++i) {
        if (a->dims[i] != b->dims[i]) {
            return 0;
        }
    }
    return 1;
}

int32_t pn_normalize_axis(int32_t axis, uint32_t rank) {
    int32_t r = (int32_t)rank;
    if (axis < -r || axis >= r) {
        return -1;
    }
    return axis < 0 ? axis + r : axis;
}

int pn_broadcast_strides(const pn_tensor_info* in, const pn_tensor_info* out,
                         int64_t strides_out[PN_MAX_DIMS]) {
    if (in->rank > out->rank || out->rank > PN_MAX_DIMS) {
        return -1;
    }
    uint32_t offset = out->rank - in->rank;
    int64_t stride = 1;
    for (int32_t i = (int32_t)out->rank - 1; i >= 0; --i) {
        if ((uint32_t)i < offset) {
            strides_out[i] = 0;
            continue;
        }
        int64_t d = in->dims[(uint32_t)i - offset];
        if (d == out->dims[i]) {
            strides_out[i] = d == 1 ? 0 : stride;
        } else if (d == 1) {
            strides_out[i] = 0;
        } else {
            return -1;
        }
        stride *= d;
    }
    return 0;
}

int64_t pn_window_output_size(int64_t in, uint32_t pad_begin, uint32_t pad_end, uint32_t kernel,
                              uint32_t stride, uint32_t dilation, int ceil_mode) {
    if (stride == 0 || dilation == 0 || kernel == 0) {
        return -1;
    }
    int64_t span = (int64_t)dilation * ((int64_t)kernel - 1) + 1;
    int64_t room = in + (int64_t)pad_begin + (int64_t)pad_end - span;
    if (room < 0) {
        return -1;
    }
    int64_t n = ceil_mode ? (room + stride - 1) / stride + 1 : room / stride + 1;
    /* Ceil rounding never starts a window inside the end padding. */
    if (ceil_mode && (n - 1) * (int64_t)stride >= in + (int64_t)pad_begin) {
        n -= 1;
    }
    return n;
}
