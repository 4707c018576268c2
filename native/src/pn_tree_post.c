/* TREE_ENSEMBLE's post transforms (backend_api.h, "Tree ensembles"), in double, one home for
 * every backend (CpuRef's oracle and CpuAcc). */
#include "plugnn/plugin_common.h"

#include <math.h>

/* sqrt(2) * erfinv(2p - 1): Winitzki's approximation (a = 0.147) refined by Newton steps on
 * erf, in double. */
static double probit(double p) {
    double y = 2.0 * p - 1.0;
    if (!(y > -1.0 && y < 1.0)) {
        return y == -1.0 ? -INFINITY : (y == 1.0 ? INFINITY : NAN);
    }
    const double a = 0.147, two_over_pi_a = 2.0 / (3.14159265358979323846 * a);
    double l = log((1.0 - y) * (1.0 + y));
    double u = two_over_pi_a + 0.5 * l;
    double z = sqrt(sqrt(u * u - l / a) - u);
    z = y < 0.0 ? -z : z;
    for (int k = 0; k < 8; ++k) {
        double step = (erf(z) - y) / (1.1283791670955126 * exp(-z * z));
        z -= step;
        if (fabs(step) <= 1e-15 * (1.0 + fabs(z))) {
            break;
        }
    }
    return 1.4142135623730951 * z;
}

void pn_tree_apply_post_transform(pn_tree_post_transform post, double* s, int64_t k) {
    switch (post) {
    case PN_TREE_POST_LOGISTIC:
        for (int64_t j = 0; j < k; ++j) {
            s[j] = 1.0 / (1.0 + exp(-s[j]));
        }
        break;
    case PN_TREE_POST_SOFTMAX:
    case PN_TREE_POST_SOFTMAX_ZERO: {
        int zero = post == PN_TREE_POST_SOFTMAX_ZERO;
        double top = -INFINITY, sum = 0.0;
        for (int64_t j = 0; j < k; ++j) {
            if (!(zero && fabs(s[j]) <= 1e-7) && s[j] > top) {
                top = s[j];
            }
        }
        for (int64_t j = 0; j < k; ++j) {
            if (zero && fabs(s[j]) <= 1e-7) {
                s[j] = 0.0;
            } else {
                s[j] = exp(s[j] - top);
                sum += s[j];
            }
        }
        for (int64_t j = 0; j < k; ++j) {
            s[j] = sum > 0.0 ? s[j] / sum : s[j];
        }
        break;
    }
    case PN_TREE_POST_PROBIT:
        for (int64_t j = 0; j < k; ++j) {
            s[j] = probit(s[j]);
        }
        break;
    default: /* NONE */
        break;
    }
}


int64_t pn_tree_finish_row(pn_tree_aggregate agg, int64_t trees, const double* base, pn_tree_post_transform post,
                           double* s, int64_t k) {
    int64_t best = 0;
    for (int64_t j = 0; j < k; ++j) {
        if (agg == PN_TREE_AGGREGATE_AVERAGE) {
            s[j] /= (double)trees;
        }
        s[j] += base[j];
        if (s[j] > s[best]) {
            best = j;
        }
    }
    pn_tree_apply_post_transform(post, s, k);
    return best;
}
