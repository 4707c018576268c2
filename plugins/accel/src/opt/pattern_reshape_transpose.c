/* CpuAcc pattern fusion (opt/patterns.h): a Transpose with its Reshapes as one strided copy (ops/index_copy.h). */
#include "opt/pattern_match.h"
#include "ops/index_copy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Reshape-transpose (ops/index_copy.h) ------------------------------------------------------------ */

static int is_reshape(const pn_layer* l) {
    return (l->kind == PN_LAYER_RESHAPE || l->kind == PN_LAYER_COPY) && l->num_inputs == 1;
}

/* Transpose `t` with the Reshape (or Copy) that only feeds it and / or the one that only it
 * feeds: one PRECOMPILED copy (at least one Reshape, else the Transpose stays as it is). */
int accel_match_reshape_transpose(pat_ctx* c, int64_t t, pat_match* m) {
    const pn_layer* tl = layer_at(c, t);
    if (tl->kind != PN_LAYER_TRANSPOSE || tl->num_inputs != 1) {
        return 0;
    }
    const pn_transpose_desc* d = (const pn_transpose_desc*)tl->descriptor;
    const pn_tensor_info* a = &tl->inputs[0]; /* the shape the permutation applies to */
    c->num_members = 0;
    add_member(c, t);
    uint32_t in_id = tl->input_ids[0];
    pn_tensor_info in_info = *a;
    const int64_t pr = prod(c, in_id);
    if (pr >= 0 && inner(c, in_id, 1) && is_reshape(layer_at(c, pr)) && add_member(c, pr)) {
        in_id = layer_at(c, pr)->input_ids[0];
        in_info = layer_at(c, pr)->inputs[0];
    }
    uint32_t out_id = tl->output_ids[0];
    pn_tensor_info out_info = tl->outputs[0];
    const int64_t nr = consumer(c, out_id);
    if (nr >= 0 && is_reshape(layer_at(c, nr)) && add_member(c, nr)) {
        out_id = layer_at(c, nr)->output_ids[0];
        out_info = layer_at(c, nr)->outputs[0];
    }
    if (c->num_members < 2 || in_info.dtype != out_info.dtype || d->rank != a->rank) {
        return 0;
    }
    /* only a transpose whose innermost output run is contiguous in x: a strided one keeps the
     * Transpose layer's 16 x 16 block transposes (YOLO's [.., 85, H, W] -> [.., H, W, 85]) */
    int64_t as[PN_MAX_DIMS];
    contiguous_strides(a, as);
    int32_t last = (int32_t)d->rank - 1;
    while (last > 0 && tl->outputs[0].dims[last] == 1) --last;
    if (d->rank > 0 && as[d->perm[last]] != 1) {
        return 0;
    }
    accel_index_copy* p = (accel_index_copy*)calloc(1, sizeof(*p));
    if (p == NULL) {
        return -1;
    }
    p->magic = ACCEL_INDEX_COPY_MAGIC;
    p->rank = d->rank;
    for (uint32_t i = 0; i < d->rank; ++i) {
        p->dims[i] = tl->outputs[0].dims[i];
        p->xs[i] = as[d->perm[i]];
    }
    p->input = in_info;
    p->output = out_info;
    p->input.struct_size = p->output.struct_size = (uint32_t)sizeof(pn_tensor_info);
    p->input.extension = p->output.extension = NULL;
    int at = snprintf(p->label, sizeof(p->label), "reshape-transpose: rank %u perm (", d->rank);
    for (uint32_t i = 0; i < d->rank && at > 0 && (size_t)at < sizeof(p->label); ++i) {
        at += snprintf(p->label + at, sizeof(p->label) - (size_t)at, i > 0 ? ", %u" : "%u", d->perm[i]);
    }
    if (at > 0 && (size_t)at < sizeof(p->label)) {
        snprintf(p->label + at, sizeof(p->label) - (size_t)at, "), one copy");
    }
    m->kind = PN_LAYER_PRECOMPILED;
    m->own.payload = p;
    m->own.release = accel_index_copy_release;
    m->own.label = p->label;
    m->num_inputs = 1;
    m->input_ids[0] = in_id;
    m->inputs[0] = in_info;
    m->constants[0] = NULL;
    m->output_id = out_id;
    m->output = out_info;
    return 1;
}

