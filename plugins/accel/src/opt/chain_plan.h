/*
 * CpuAcc blocked-chain planning, the second pass of optimize_subgraph (opt/optimize.h): the runs
 * of two or more consecutive steps (a convolution with what fusion gave it, or a pooling
 * layer; nothing else in between) that the blocked kernels run on the backend's ISA
 * (accel_chain_step_fit, chain/chain.h), each replaced by one PRECOMPILED layer whose payload
 * is the chain (accel_chain_new). A fusion taken into a chain is dropped from the
 * substitutions; the chain replaces its layers.
 */
#ifndef ACCEL_CHAIN_PLAN_H
#define ACCEL_CHAIN_PLAN_H

#include "opt/pass.h"

/* The chains above, over the layers `state` marks LAYER_CANDIDATE and the fusion items of `o`:
 * each chain appended to o's chains, its layers marked LAYER_CLAIMED, and o's substitutions
 * rebuilt (the fusions no chain took, then the chains). PN_OK, or PN_ERR_OUT_OF_MEMORY (what
 * was made stays for accel_release_optimization). */
pn_status accel_plan_chains(const pn_subgraph* sg, accel_optimization* o, unsigned char* state,
                            accel_isa isa);

#endif /* ACCEL_CHAIN_PLAN_H */
