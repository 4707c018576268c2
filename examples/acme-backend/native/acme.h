/* Acme's plugnn backend: what backend.c (the plugin) and kernels.c (the workloads) share. */
#ifndef ACME_H
#define ACME_H

#include "plugnn/plugin_common.h"
#include "plugnn/pn_plugin.h"

/* pn_plugin_kind.check: Acme's own limits, after plugnn's shared validation accepted the layer. */
pn_status acme_check_activation(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason);
pn_status acme_check_binary(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason);
pn_status acme_check_fully_connected(const pn_plugin* plugin, const pn_layer* layer,
                                     pn_string_out* reason);

/* pn_plugin_kind.create: the workload of an accepted layer. */
pn_status acme_create_activation(void* context, const pn_layer* layer, pn_workload** workload_out,
                                 pn_string_out* message_out);
pn_status acme_create_binary(void* context, const pn_layer* layer, pn_workload** workload_out,
                             pn_string_out* message_out);
pn_status acme_create_fully_connected(void* context, const pn_layer* layer,
                                      pn_workload** workload_out, pn_string_out* message_out);

#endif
