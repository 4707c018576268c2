/* CpuAcc's create_precompiled: the PRECOMPILED layers its optimize_subgraph makes, each payload
 * starting with a magic number that names its workload. */
#include "attention.h"
#include "batch_norm.h"
#include "chain_run.h"
#include "families.h"
#include "index_copy.h"
#include "linear.h"

pn_status accel_precompiled_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                   pn_string_out* message_out) {
    const pn_precompiled_desc* d = (const pn_precompiled_desc*)layer->descriptor;
    const uint32_t* magic = d != NULL ? (const uint32_t*)d->payload : NULL;
    if (magic != NULL && *magic == ACCEL_ATTN_MAGIC) { /* a fused attention (attention.h) */
        return accel_attention_create(context, layer, workload_out, message_out);
    }
    if (magic != NULL && *magic == ACCEL_LINEAR_MAGIC) { /* a fused linear layer (linear.h) */
        return accel_linear_create(context, layer, workload_out, message_out);
    }
    if (magic != NULL && *magic == ACCEL_LINEAR_GROUP_MAGIC) { /* sibling projections (linear.h) */
        return accel_linear_group_create(context, layer, workload_out, message_out);
    }
    if (magic != NULL && *magic == ACCEL_INDEX_COPY_MAGIC) { /* a fused reshape-transpose (index_copy.h) */
        return accel_index_copy_create(context, layer, workload_out, message_out);
    }
    if (magic != NULL && *magic == ACCEL_BN_ACT_MAGIC) { /* a batch normalization with its activation */
        return accel_bn_act_create(context, layer, workload_out, message_out);
    }
    return accel_chain_create(context, layer, workload_out, message_out); /* a blocked chain (chain_run.h) */
}
