/* ACTIVATION: one vectorized pass, split over the pool. */
#include "ops/create.h"

#define MIN_PARALLEL 32768

typedef struct act_job {
    const accel_op* op;
    const float* x;
    float* y;
} act_job;

static void act_range(void* raw, int64_t b, int64_t e) {
    const act_job* j = (const act_job*)raw;
    (j->op->stream_out ? j->op->k->activation_stream : j->op->k->activation)(&j->op->desc.activation, j->x + b,
                                                                             j->y + b, e - b);
}

static void activation_kernel(const accel_op* op, const float* const* in, float* const* out) {
    act_job j = {op, in[0], out[0]};
    accel_parallel_for_grain(op->env.threads, pn_num_elements(&op->outputs[0]), MIN_PARALLEL,
                             act_range, &j);
}

pn_status accel_activation_create(void* context, const pn_layer* layer,
                                  pn_workload** workload_out, pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    return accel_workload_new(env, layer, sizeof(pn_activation_desc), NULL, activation_kernel,
                              NULL, workload_out, message_out);
}
