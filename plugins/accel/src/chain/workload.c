/* CpuAcc blocked chains (chain/chain.h). The workload: a PRECOMPILED chain's pn_workload (weights packed into shared blocks, the arena, the schedule) and its create function. */
#include "chain/packed_chain.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(ACCEL_HAVE_X86_KERNELS)

static void chain_state_release(void* vs) {
    chain_state* s = (chain_state*)vs;
    if (s != NULL) {
        free(s->w);
        free(s->bias);
        free(s->storage);
        free(s->dirty);
        free(s->raw);
        free(s->exec);
        free(s->time_of);
        free(s->group_first);
        free(s->layer_ns);
        free(s);
    }
}

static pn_status chain_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                             pn_workload** workload_out, pn_string_out* message_out) {
    const pn_precompiled_desc* d = (const pn_precompiled_desc*)layer->descriptor;
    const accel_chain* ch = d != NULL ? (const accel_chain*)d->payload : NULL;
    if (ch == NULL || ch->magic != CHAIN_MAGIC) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc: precompiled layer '%s' was not made by this CpuAcc build", layer->name);
    }
    if (!accel_kernel_set_for(env->isa)->nchwc) {
        return pn_fail(message_out, PN_ERR_UNSUPPORTED,
                       "CpuAcc: precompiled layer '%s' needs the avx512 kernels, option isa is %s",
                       layer->name, accel_isa_name(env->isa));
    }
    if (layer->num_inputs != ch->num_inputs + ch->num_consts || layer->num_outputs != ch->num_outputs) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc: precompiled layer '%s' has %u inputs and %u outputs, its chain %u and %u",
                       layer->name, layer->num_inputs, layer->num_outputs, ch->num_inputs + ch->num_consts,
                       ch->num_outputs);
    }
    for (uint32_t i = 0; i < ch->num_inputs + ch->num_consts; ++i) {
        const pn_tensor_info* want = i < ch->num_inputs ? &ch->tensors[ch->inputs[i]].info
                                                        : &ch->const_infos[i - ch->num_inputs];
        if (!chain_same_info(&layer->inputs[i], want)) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           "CpuAcc: precompiled layer '%s' input %u does not have its chain's shape", layer->name, i);
        }
        if (i >= ch->num_inputs && (layer->constant_data == NULL || layer->constant_data[i] == NULL)) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           "CpuAcc: precompiled layer '%s' input %u (weights of its chain) is not a constant",
                           layer->name, i);
        }
    }
    for (uint32_t i = 0; i < ch->num_outputs; ++i) {
        if (!chain_same_info(&layer->outputs[i], &ch->tensors[ch->outputs[i]].info)) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           "CpuAcc: precompiled layer '%s' output %u does not have its chain's shape", layer->name, i);
        }
    }
    chain_state* s = (chain_state*)calloc(1, sizeof(*s));
    if (s != NULL) {
        s->storage = (nchwc_tensor*)calloc(ch->num_tensors, sizeof(nchwc_tensor));
        s->dirty = (unsigned char*)calloc(ch->num_tensors + 1, 1);
        s->w = (const float**)calloc(ch->num_steps + 1, sizeof(float*));
        s->bias = (const float**)calloc(ch->num_steps + 1, sizeof(float*));
    }
    if (s == NULL || s->storage == NULL || s->dirty == NULL || s->w == NULL || s->bias == NULL) {
        chain_state_release(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    s->ch = ch;
    for (uint32_t i = 0; i < ch->num_steps; ++i) {
        const packed_step* st = &ch->steps[i];
        if (chain_step_weightless(st)) {
            continue;
        }
        const nchwc_geom* g = &st->g;
        const float* bsrc = st->b_in >= 0 ? (const float*)layer->constant_data[st->b_in] : NULL;
        if (st->deconv) {
            s->w[i] = accel_nchwc_packed_deconv(packs, (const float*)layer->constant_data[st->w_in], bsrc, st->c, st->o,
                                                g->kh, g->kw);
            if (s->w[i] == NULL) {
                chain_state_release(s);
                return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing the weights of '%s'",
                               layer->name);
            }
            s->bias[i] = s->w[i] + (size_t)(g->ocb * g->kh * g->cb * B * g->kw * B);
            continue;
        }
        if (st->grouped) {
            s->w[i] = accel_nchwc_packed_grouped(packs, env->threads, (const float*)layer->constant_data[st->w_in], bsrc,
                                                 st->o, st->c, st->groups, &st->win);
        } else {
            s->w[i] = accel_nchwc_packed(packs, env->threads, (const float*)layer->constant_data[st->w_in], bsrc, st->o,
                                         st->c, &st->win, g->ib, st->depthwise);
        }
        if (s->w[i] == NULL) {
            chain_state_release(s);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing the weights of '%s'",
                           layer->name);
        }
        s->bias[i] = s->w[i] + (st->depthwise ? (size_t)(g->cb * g->kh * g->kw * B)
                                              : (size_t)(g->ocb * g->cb * g->kh * g->kw * g->ib * B));
    }
    for (uint32_t i = 0; i < ch->num_tensors; ++i) {
        const chain_tensor* t = &ch->tensors[i];
        nchwc_tensor* nt = &s->storage[i];
        nt->n = t->info.dims[0];
        nt->c = t->info.dims[1];
        nt->h = t->info.dims[2];
        nt->w = t->info.dims[3];
        nt->ib = t->ib;
        nt->cb = (nt->c + t->ib - 1) / t->ib;
        nt->ht = t->ht;
        nt->hl = t->hl;
        nt->rows = t->ht + nt->h + t->hb;
        nt->cols = t->hl + nt->w + t->hr;
        nt->image_floats = (size_t)(nt->cb * nt->rows * nt->cols * nt->ib);
    }
    for (uint32_t i = 0; i < ch->num_tensors; ++i) { /* inside a concatenation: its image stride */
        if (ch->tensors[i].alias_of >= 0) {
            s->storage[i].image_floats = s->storage[ch->tensors[i].alias_of].image_floats;
        }
    }
    s->layer_ns = (uint64_t*)calloc((size_t)ch->num_layer_names + 1, sizeof(uint64_t));
    s->exec = (uint32_t*)calloc((size_t)ch->num_steps + 1, sizeof(uint32_t));
    s->time_of = (uint32_t*)calloc((size_t)ch->num_steps + 1, sizeof(uint32_t));
    s->group_first = (uint32_t*)calloc((size_t)ch->num_steps + 2, sizeof(uint32_t));
    s->num_groups = s->exec != NULL && s->time_of != NULL && s->group_first != NULL
                        ? chain_schedule(ch, accel_threads_count(env->threads), s->exec, s->time_of, s->group_first)
                        : 0;
    size_t* offsets = (size_t*)malloc((size_t)(ch->num_tensors + 1) * sizeof(size_t));
    size_t total = offsets != NULL && (s->num_groups > 0 || ch->num_steps == 0)
                       ? chain_plan_storage(ch, s, s->storage, offsets, s->dirty)
                       : 0;
    s->raw = total > 0 ? (float*)calloc(total + 16, sizeof(float)) : NULL; /* zero halos */
    if (s->raw == NULL || s->layer_ns == NULL) {
        free(offsets);
        chain_state_release(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory for the blocked chain of '%s'",
                       layer->name);
    }
    for (uint32_t i = 0; i < ch->num_tensors; ++i) {
        s->storage[i].data = accel_align64(s->raw) + offsets[i];
    }
    free(offsets);
    pn_workload* wl = pn_workload_new(s, chain_execute, chain_state_release, 0);
    if (wl == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    pn_workload_set_read_profile(wl, chain_read_profile);
    *workload_out = wl;
    return PN_OK;
}

pn_status accel_chain_create(void* context, const pn_layer* layer,
                             pn_workload** workload_out, pn_string_out* message_out) {
    return accel_reshapable_new((const accel_env*)context, layer, chain_build, workload_out, message_out);
}

#else

pn_status accel_chain_create(void* context, const pn_layer* layer,
                             pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    (void)workload_out;
    return pn_fail(message_out, PN_ERR_UNSUPPORTED, "CpuAcc: precompiled layer '%s' needs the avx512 kernels",
                   layer->name);
}

#endif
