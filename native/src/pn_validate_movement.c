/* Validation of the data-movement kinds SLICE, SPLIT, PAD, EXPAND and TRIANGULAR
 * (backend_api.h): the descriptor, the counts, the types and every shape. */
#include "pn_validate_internal.h"

/* ---- SLICE -------------------------------------------------------------------------- */

pn_status pn_validate_slice(const pn_layer* layer, pn_string_out* reason) {
    const pn_slice_desc* d = (const pn_slice_desc*)layer->descriptor;
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, PNV_ANY, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* y = &layer->outputs[0];
    if (d->rank != x->rank || y->rank != x->rank) {
        return PNV_FAIL(reason, "Slice: the descriptor has rank %u and the output rank %u, the "
                        "input rank is %u", d->rank, y->rank, x->rank);
    }
    for (uint32_t i = 0; i < d->rank; ++i) {
        int64_t start = d->starts[i], step = d->steps[i], count = y->dims[i], dim = x->dims[i];
        if (step == 0) {
            return PNV_FAIL(reason, "Slice: the step of axis %u is 0", i);
        }
        if (count == 0) {
            if (start != 0) {
                return PNV_FAIL(reason, "Slice: axis %u is empty in the output, so its start must "
                                "be 0, got %lld", i, (long long)start);
            }
            continue;
        }
        /* The last element read, computed so that no product overflows. */
        int in_range = start >= 0 && start < dim;
        if (in_range) {
            int64_t room = step > 0 ? dim - 1 - start : start;   /* elements left that way */
            int64_t stride = step > 0 ? step : -step;
            in_range = count - 1 <= room / stride;
        }
        if (!in_range) {
            return PNV_FAIL(reason, "Slice: axis %u: %lld elements from %lld by step %lld leave "
                            "0..%lld", i, (long long)count, (long long)start, (long long)step,
                            (long long)(dim - 1));
        }
    }
    return PN_OK;
}

/* ---- SPLIT -------------------------------------------------------------------------- */

pn_status pn_validate_split(const pn_layer* layer, pn_string_out* reason) {
    const pn_split_desc* d = (const pn_split_desc*)layer->descriptor;
    if (layer->num_inputs != 1) {
        return PNV_FAIL(reason, "Split takes 1 input, got %u", layer->num_inputs);
    }
    if (layer->num_outputs < 1) {
        return PNV_FAIL(reason, "Split has at least 1 output, got 0");
    }
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, PNV_ANY, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    int32_t axis = pn_normalize_axis(d->axis, x->rank);
    if (axis < 0) {
        return PNV_FAIL(reason, "Split: axis %d is out of range for rank %u", d->axis, x->rank);
    }
    int64_t total = 0;
    for (uint32_t o = 0; o < layer->num_outputs; ++o) {
        const pn_tensor_info* y = &layer->outputs[o];
        int same = y->rank == x->rank;
        for (uint32_t i = 0; same && i < x->rank; ++i) {
            same = (int32_t)i == axis || y->dims[i] == x->dims[i];
        }
        if (!same) {
            char ys[160], xs[160];
            return PNV_FAIL(reason, "Split: output %u of shape %s differs from the input %s "
                            "outside axis %d", o, pn_format_shape(y, ys, sizeof(ys)),
                            pn_format_shape(x, xs, sizeof(xs)), axis);
        }
        total += y->dims[axis];
    }
    if (total != x->dims[axis]) {
        return PNV_FAIL(reason, "Split: the outputs' sizes along axis %d add up to %lld, the "
                        "input's is %lld", axis, (long long)total, (long long)x->dims[axis]);
    }
    return PN_OK;
}

/* ---- PAD ---------------------------------------------------------------------------- */

static const char* pad_mode_name(pn_pad_mode mode) {
    switch (mode) {
    case PN_PAD_CONSTANT: return "constant";
    case PN_PAD_REFLECT: return "reflect";
    case PN_PAD_EDGE: return "edge";
    case PN_PAD_WRAP: return "wrap";
    case PN_PAD_INVALID: break;
    }
    return "?";
}

/* Pads are bounded so that no sum below overflows (far beyond any real tensor). */
#define PAD_LIMIT ((int64_t)1 << 40)

pn_status pn_validate_pad(const pn_layer* layer, pn_string_out* reason) {
    const pn_pad_desc* d = (const pn_pad_desc*)layer->descriptor;
    if (d->mode < PN_PAD_CONSTANT || d->mode > PN_PAD_WRAP) {
        return PNV_FAIL(reason, "Pad: unknown mode %d", (int)d->mode);
    }
    PNV_TRY(pnv_counts(layer, 1, 2, reason));
    PNV_TRY(pnv_same_type(layer, 0, 1, 1, PNV_ANY, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    if (layer->num_inputs == 2) {
        if (d->mode != PN_PAD_CONSTANT) {
            return PNV_FAIL(reason, "Pad: a value input is for constant padding only, the mode "
                            "is %s", pad_mode_name(d->mode));
        }
        if (pn_num_elements(&layer->inputs[1]) != 1) {
            return PNV_FAIL(reason, "Pad: input 1 (the value) must hold one element, it holds "
                            "%lld", (long long)pn_num_elements(&layer->inputs[1]));
        }
    }
    if (d->rank != x->rank) {
        return PNV_FAIL(reason, "Pad: the descriptor has pads for rank %u, the input rank is %u",
                        d->rank, x->rank);
    }
    pn_tensor_info expected = *x;
    for (uint32_t i = 0; i < x->rank; ++i) {
        int64_t b = d->pads_begin[i], e = d->pads_end[i], dim = x->dims[i];
        if (b < -PAD_LIMIT || b > PAD_LIMIT || e < -PAD_LIMIT || e > PAD_LIMIT) {
            return PNV_FAIL(reason, "Pad: axis %u: pads %lld / %lld are beyond +-2^40", i,
                            (long long)b, (long long)e);
        }
        int64_t kept = dim - (b < 0 ? -b : 0) - (e < 0 ? -e : 0);
        if (kept < 0) {
            return PNV_FAIL(reason, "Pad: axis %u: negative pads %lld / %lld remove more than its "
                            "%lld elements", i, (long long)b, (long long)e, (long long)dim);
        }
        int64_t grow = (b > 0 ? b : 0) > (e > 0 ? e : 0) ? (b > 0 ? b : 0) : (e > 0 ? e : 0);
        if (d->mode == PN_PAD_REFLECT && grow > 0 && grow >= kept) {
            return PNV_FAIL(reason, "Pad: axis %u: reflect pads %lld / %lld must be smaller than "
                            "its %lld (cropped) elements", i, (long long)b, (long long)e,
                            (long long)kept);
        }
        if ((d->mode == PN_PAD_EDGE || d->mode == PN_PAD_WRAP) && grow > 0 && kept == 0) {
            return PNV_FAIL(reason, "Pad: axis %u: %s padding of an empty axis", i,
                            pad_mode_name(d->mode));
        }
        expected.dims[i] = b + dim + e;
    }
    return pnv_shape_is(layer, &layer->outputs[0], &expected, "output", reason);
}

/* ---- EXPAND ------------------------------------------------------------------------- */

pn_status pn_validate_expand(const pn_layer* layer, pn_string_out* reason) {
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, PNV_ANY, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* y = &layer->outputs[0];
    pn_tensor_info shape = *y;
    if (pn_broadcast_shape(x, y, &shape) != 0 || !pn_same_dims(&shape, y)) {
        char xs[160], ys[160];
        return PNV_FAIL(reason, "Expand: the input of shape %s does not broadcast to the output "
                        "%s", pn_format_shape(x, xs, sizeof(xs)), pn_format_shape(y, ys, sizeof(ys)));
    }
    return PN_OK;
}

/* ---- TRIANGULAR --------------------------------------------------------------------- */

pn_status pn_validate_triangular(const pn_layer* layer, pn_string_out* reason) {
    const pn_triangular_desc* d = (const pn_triangular_desc*)layer->descriptor;
    if (d->upper > 1) {
        return PNV_FAIL(reason, "Triangular: upper must be 0 or 1, got %u", d->upper);
    }
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, PNV_ANY, reason));
    PNV_TRY(pnv_rank(layer, &layer->inputs[0], "input", 2, PN_MAX_DIMS, reason));
    return pnv_shape_is(layer, &layer->outputs[0], &layer->inputs[0], "output", reason);
}
