/* plugin_common: how a Reshape groups axes (plugin_common.h, "Reshapes"). */
#include "plugnn/plugin_common.h"

#include <string.h>

int pn_reshape_groups_make(uint32_t in_rank, const int64_t* in, uint32_t out_rank, const int64_t* out,
                           pn_reshape_groups* g) {
    memset(g, 0, sizeof(*g));
    if (in_rank > PN_MAX_DIMS || out_rank > PN_MAX_DIMS) {
        return 0;
    }
    for (uint32_t i = 0; i < in_rank; ++i) {
        if (in[i] < 1) {
            return 0;
        }
        g->in_dims[i] = in[i];
    }
    for (uint32_t j = 0; j < out_rank; ++j) {
        if (out[j] < 1) {
            return 0;
        }
        g->out_dims[j] = out[j];
    }
    g->in_rank = in_rank;
    g->out_rank = out_rank;
    uint32_t i = 0, j = 0;
    int32_t last = -1; /* the first output axis of the last group */
    while (i < in_rank || j < out_rank) {
        if (i < in_rank && j < out_rank && in[i] == 1 && out[j] == 1) {
            g->first[j] = (uint8_t)i;
            g->count[j] = 1;
            last = (int32_t)j;
            ++i;
            ++j;
            continue;
        }
        if (j < out_rank && out[j] == 1) {
            g->first[j] = (uint8_t)i;
            g->count[j] = 0;
            g->kept[j] = 1;
            ++j;
            continue;
        }
        if (j == out_rank) { /* input axes of size 1 after the last output axis */
            if (in[i] != 1 || last < 0) {
                return 0;
            }
            for (uint32_t k = (uint32_t)last; k < out_rank; ++k) {
                if (g->count[k] > 0 && g->first[k] + g->count[k] == i) {
                    ++g->count[k];
                }
            }
            ++i;
            continue;
        }
        if (i == in_rank) {
            return 0;
        }
        const uint32_t i0 = i, j0 = j;
        int64_t pi = in[i], po = out[j];
        while (pi != po) {
            if (pi < po) {
                if (++i == in_rank) {
                    return 0;
                }
                pi *= in[i];
            } else {
                if (++j == out_rank) {
                    return 0;
                }
                po *= out[j];
            }
        }
        for (uint32_t k = j0; k <= j; ++k) {
            g->first[k] = (uint8_t)i0;
            g->count[k] = (uint8_t)(i - i0 + 1);
            g->kept[k] = j > j0;
        }
        last = (int32_t)j0;
        ++i;
        ++j;
    }
    return 1;
}

int pn_reshape_groups_apply(const pn_reshape_groups* g, const int64_t* in, int64_t* out) {
    for (uint32_t j = 0; j < g->out_rank; ++j) {
        const uint32_t f = g->first[j], n = g->count[j];
        if (g->kept[j]) {
            for (uint32_t i = f; i < f + n; ++i) {
                if (in[i] != g->in_dims[i]) {
                    return 0;
                }
            }
            out[j] = g->out_dims[j];
            continue;
        }
        int64_t p = 1;
        for (uint32_t i = f; i < f + n; ++i) {
            if (in[i] < 1) {
                return 0;
            }
            p *= in[i];
        }
        out[j] = p;
    }
    return 1;
}
