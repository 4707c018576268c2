/* Validation of PN_LAYER_SPECTRAL (ONNX DFT and STFT): the descriptor, the inputs, the
 * output's shape and the element types (backend_api.h). */
#include "pn_validate_internal.h"

#define SPECTRAL "Spectral"

static pn_status check_desc(const pn_spectral_desc* d, pn_string_out* reason) {
    if (d->op != PN_SPECTRAL_DFT && d->op != PN_SPECTRAL_STFT) {
        return PNV_FAIL(reason, SPECTRAL ": unknown op %d (DFT or STFT)", (int)d->op);
    }
    if (d->inverse > 1 || d->onesided > 1) {
        return PNV_FAIL(reason, SPECTRAL ": inverse and onesided must be 0 or 1, got %u and %u",
                        d->inverse, d->onesided);
    }
    if (d->length < 1) {
        return PNV_FAIL(reason, SPECTRAL ": length (%s) must be >= 1, got %lld",
                        d->op == PN_SPECTRAL_DFT ? "dft_length" : "the frame length",
                        (long long)d->length);
    }
    if (d->op == PN_SPECTRAL_DFT) {
        if (d->frame_step != 0 || d->flags != 0) {
            return PNV_FAIL(reason, SPECTRAL ": a DFT takes frame_step 0 and flags 0 (STFT's), got "
                            "%lld and 0x%x", (long long)d->frame_step, d->flags);
        }
        return PN_OK;
    }
    if (d->frame_step < 1) {
        return PNV_FAIL(reason, SPECTRAL ": STFT's frame_step must be >= 1, got %lld",
                        (long long)d->frame_step);
    }
    if (d->inverse != 0 || d->axis != 0) {
        return PNV_FAIL(reason, SPECTRAL ": STFT takes inverse 0 and axis 0, got %u and %d",
                        d->inverse, (int)d->axis);
    }
    if ((d->flags & ~PN_SPECTRAL_HAS_WINDOW) != 0) {
        return PNV_FAIL(reason, SPECTRAL ": unknown flags 0x%x (PN_SPECTRAL_HAS_WINDOW)",
                        d->flags & ~PN_SPECTRAL_HAS_WINDOW);
    }
    return PN_OK;
}

static pn_status check_complex_dim(const pn_layer* layer, const pn_tensor_info* info,
                                   const char* what, pn_string_out* reason) {
    int64_t c = info->dims[info->rank - 1];
    if (c != 1 && c != 2) {
        return PNV_FAIL(reason, SPECTRAL ": the last dim of %s must be 1 (real) or 2 (complex), "
                        "got %lld", what, (long long)c);
    }
    (void)layer;
    return PN_OK;
}

static pn_status validate_dft(const pn_layer* layer, const pn_spectral_desc* d,
                              pn_string_out* reason) {
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    PNV_TRY(pnv_rank(layer, x, "input x", 2, PN_MAX_DIMS, reason));
    PNV_TRY(check_complex_dim(layer, x, "input x", reason));
    int32_t axis = pn_normalize_axis(d->axis, x->rank);
    if (axis < 0 || (uint32_t)axis == x->rank - 1) {
        return PNV_FAIL(reason, SPECTRAL ": DFT axis %d must name a dim of x but the last (rank "
                        "%u)", (int)d->axis, x->rank);
    }
    pn_tensor_info y = *x;
    int64_t n = d->length;
    y.dims[axis] = (d->onesided && !d->inverse) ? n / 2 + 1 : n;
    y.dims[x->rank - 1] = (d->onesided && d->inverse) ? 1 : 2;
    return pnv_shape_is(layer, &layer->outputs[0], &y, "output", reason);
}

static pn_status validate_stft(const pn_layer* layer, const pn_spectral_desc* d,
                               pn_string_out* reason) {
    uint32_t inputs = (d->flags & PN_SPECTRAL_HAS_WINDOW) ? 2u : 1u;
    PNV_TRY(pnv_counts(layer, inputs, inputs, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    PNV_TRY(pnv_rank(layer, x, "signal", 3, 3, reason));
    PNV_TRY(check_complex_dim(layer, x, "signal", reason));
    int64_t n = d->length;
    if (inputs == 2) {
        pn_tensor_info window = {0};
        window.rank = 1;
        window.dims[0] = n;
        PNV_TRY(pnv_shape_is(layer, &layer->inputs[1], &window, "window", reason));
    }
    int64_t span = x->dims[1] - n;
    /* floor((L - n) / step) + 1 frames, which must be >= 0. */
    int64_t step = d->frame_step;
    int64_t frames = (span >= 0 ? span / step : -((-span + step - 1) / step)) + 1;
    if (frames < 0) {
        return PNV_FAIL(reason, SPECTRAL ": STFT of a signal of length %lld with frames of %lld "
                        "every %lld gives %lld frames", (long long)x->dims[1], (long long)n,
                        (long long)d->frame_step, (long long)frames);
    }
    pn_tensor_info y = {0};
    y.rank = 4;
    y.dims[0] = x->dims[0];
    y.dims[1] = frames;
    y.dims[2] = d->onesided ? n / 2 + 1 : n;
    y.dims[3] = 2;
    return pnv_shape_is(layer, &layer->outputs[0], &y, "output", reason);
}

pn_status pn_validate_spectral(const pn_layer* layer, pn_string_out* reason) {
    const pn_spectral_desc* d = (const pn_spectral_desc*)layer->descriptor;
    PNV_TRY(check_desc(d, reason));
    PNV_TRY(d->op == PN_SPECTRAL_DFT ? validate_dft(layer, d, reason)
                                     : validate_stft(layer, d, reason));
    return pnv_same_type(layer, 0, UINT32_MAX, 1, PNV_FLOAT, reason);
}
