/* CpuAcc blocked chains (chain/chain.h). The arena: where every chain tensor lives in one workspace, tensors apart while a level reads or writes them, the halos zeroed once or every run. */
#include "chain/packed_chain.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(ACCEL_HAVE_X86_KERNELS)

int chain_same_info(const pn_tensor_info* a, const pn_tensor_info* b) {
    return a->dtype == b->dtype && pn_same_dims(a, b);
}

/* 1 when two tensors have the same storage geometry (the halo one leaves zero is the other's). */
static int same_storage(const nchwc_tensor* a, const nchwc_tensor* b) {
    return a->n == b->n && a->ib == b->ib && a->cb == b->cb && a->rows == b->rows && a->cols == b->cols &&
           a->ht == b->ht && a->hl == b->hl && a->h == b->h && a->w == b->w;
}

static size_t storage_floats(const nchwc_tensor* t) {
    return ((size_t)t->n * t->image_floats + B - 1) / B * B;
}

/* How recently the memory [off, off + size) was used, for tensor t about to take it: the
 * bytes of it earlier tensors (dead by t's step) used, each weighted by 1 / (steps since its
 * last reader). Memory a step just read is still in cache; writing there costs no read of
 * the lines from memory. */
static double region_heat(const uint32_t* order, uint32_t placed, const int64_t* first, const int64_t* last,
                          const size_t* offsets, const nchwc_tensor* st, uint32_t t, size_t off, size_t size) {
    double heat = 0.0;
    for (uint32_t q = 0; q < placed; ++q) {
        uint32_t o = order[q];
        if (last[o] >= first[t]) continue; /* alive with t: elsewhere */
        size_t lo = offsets[o] > off ? offsets[o] : off;
        size_t end_o = offsets[o] + storage_floats(&st[o]), hi = end_o < off + size ? end_o : off + size;
        if (hi > lo) heat += (double)(hi - lo) / (double)(first[t] - last[o]);
    }
    return heat;
}

/* Places the chain's tensors in one arena (offsets in floats, 16-float aligned) and returns its
 * size, or 0 when out of memory. A tensor lives from the step that writes it (an input of the
 * chain: from the start) to the last step that reads it (an output of the chain: to the end).
 * In step order, each tensor takes a place between the regions of the tensors whose lives
 * overlap its own, at either end of a gap that fits it: the one whose memory the latest steps
 * used (region_heat), then the smallest gap. So a step writes memory still in cache instead of
 * a fresh region (which costs a read from memory for every line written), and the arena is
 * about the largest set of live tensors. dirty[i] = 1 when tensor i's region overlaps that of
 * a tensor of another geometry or offset: its halo is not left zero by the others, so the step
 * writing it zeros it (zero_halo). */
size_t chain_plan_storage(const accel_chain* ch, const chain_state* cs, const nchwc_tensor* st, size_t* offsets,
                           unsigned char* dirty) {
    const uint32_t nt = ch->num_tensors, ns = ch->num_steps;
    int64_t* first = (int64_t*)malloc((nt + 1) * sizeof(int64_t));
    int64_t* last = (int64_t*)malloc((nt + 1) * sizeof(int64_t));
    uint32_t* order = (uint32_t*)malloc((nt + 1) * sizeof(uint32_t)); /* placement order */
    uint32_t* near = (uint32_t*)malloc((nt + 1) * sizeof(uint32_t));  /* placed, overlapping lives */
    size_t total = 0;
    if (first == NULL || last == NULL || order == NULL || near == NULL) {
        free(first);
        free(last);
        free(order);
        free(near);
        return 0;
    }
    /* Only roots are placed (a tensor inside a concatenation's storage, chain_alias_concats, lives as
     * long as any tensor of its group, at its block of the root's place). */
#define ROOT(i) (ch->tensors[i].alias_of >= 0 ? (uint32_t)ch->tensors[i].alias_of : (uint32_t)(i))
    uint32_t placed = 0;
    for (uint32_t i = 0; i < nt; ++i) first[i] = INT64_MAX;
    for (uint32_t k = 0; k < ch->num_inputs; ++k) {
        first[ch->inputs[k]] = -1;
        order[placed++] = ch->inputs[k];
    }
    /* times: the groups the steps run in (chain_schedule), in the order they run */
    for (uint32_t q = 0; q < ns; ++q) {
        const uint32_t k = cs->exec[q];
        const int64_t time = (int64_t)cs->time_of[k];
        const uint32_t r = ROOT(ch->steps[k].y);
        if (first[r] == INT64_MAX) order[placed++] = r;
        first[r] = first[r] < time ? first[r] : time;
    }
    for (uint32_t i = 0; i < nt; ++i) last[i] = first[i];
#define READ_AT(i, time) last[ROOT(i)] = last[ROOT(i)] > (time) ? last[ROOT(i)] : (time)
    for (uint32_t k = 0; k < ns; ++k) {
        const int64_t time = (int64_t)cs->time_of[k];
        READ_AT(ch->steps[k].x, time);
        if (ch->steps[k].addend >= 0) READ_AT(ch->steps[k].addend, time);
        if (ch->steps[k].scale >= 0) READ_AT(ch->steps[k].scale, time);
        for (uint32_t q = 0; q < ch->steps[k].num_parts; ++q) READ_AT(ch->steps[k].part[q], time);
    }
#undef READ_AT
    for (uint32_t o = 0; o < ch->num_outputs; ++o) last[ROOT(ch->outputs[o])] = (int64_t)cs->num_groups;
    for (uint32_t p = 0; p < placed; ++p) {
        const uint32_t t = order[p];
        const size_t size = storage_floats(&st[t]);
        uint32_t count = 0;
        for (uint32_t q = 0; q < p; ++q) { /* earlier tensors alive with t, by offset */
            uint32_t o = order[q];
            if (first[o] <= last[t] && first[t] <= last[o]) {
                uint32_t at = count++;
                while (at > 0 && offsets[near[at - 1]] > offsets[o]) {
                    near[at] = near[at - 1];
                    --at;
                }
                near[at] = o;
            }
        }
        /* candidates: both ends of every gap that fits, and the end of the arena */
        size_t best = SIZE_MAX, best_gap = SIZE_MAX, free_from = 0;
        double best_heat = -1.0;
        for (uint32_t q = 0; q <= count; ++q) {
            size_t gap_end = q < count ? offsets[near[q]] : SIZE_MAX;
            if (gap_end >= free_from + size) {
                size_t cand[2] = {free_from, gap_end != SIZE_MAX ? gap_end - size : free_from};
                for (int c = 0; c < (gap_end != SIZE_MAX ? 2 : 1); ++c) { /* the arena's end: one place */
                    double heat = region_heat(order, p, first, last, offsets, st, t, cand[c], size);
                    size_t gap = gap_end - free_from;
                    if (heat > best_heat || (heat == best_heat && gap < best_gap)) {
                        best = cand[c];
                        best_gap = gap;
                        best_heat = heat;
                    }
                }
            }
            if (q < count) {
                size_t end = offsets[near[q]] + storage_floats(&st[near[q]]);
                free_from = end > free_from ? end : free_from;
            }
        }
        offsets[t] = best;
        total = offsets[t] + size > total ? offsets[t] + size : total;
    }
    for (uint32_t i = 0; i < nt; ++i) {
        dirty[i] = 0;
        for (uint32_t j = 0; j < nt && ch->tensors[i].alias_of < 0; ++j) {
            int overlap = i != j && ch->tensors[j].alias_of < 0 && offsets[i] < offsets[j] + storage_floats(&st[j]) &&
                          offsets[j] < offsets[i] + storage_floats(&st[i]);
            if (overlap && !(offsets[i] == offsets[j] && same_storage(&st[i], &st[j]))) dirty[i] = 1;
        }
    }
    for (uint32_t i = 0; i < nt; ++i) { /* a member: its root's place and halo state */
        if (ch->tensors[i].alias_of >= 0) {
            const uint32_t r = ROOT(i);
            offsets[i] = offsets[r] + (size_t)(ch->tensors[i].alias_block * st[r].rows * st[r].cols * B);
            dirty[i] = dirty[r];
        }
    }
#undef ROOT
    free(first);
    free(last);
    free(order);
    free(near);
    return total;
}

#endif
