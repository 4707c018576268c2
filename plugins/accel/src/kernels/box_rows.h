/*
 * Box rows (part of kernels/vector_kernels_body.h): whether any of a run of boxes suppresses a box
 * in non-maximum suppression, exactly as CpuRef decides it (plugins/reference/src/data_dependent.c,
 * `suppresses`), in double.
 *
 * For boxes p (the candidate, its corners and area passed as q_*) and r (the run's box j), with
 * max(a, b) = a > b ? a : b and min(a, b) = a < b ? a : b (NaN operands as those ternaries take
 * them), w = min(p.x1, r.x1) - max(p.x0, r.x0), h likewise, inter = w * h and
 * uni = (area_p + area_r) - inter: r suppresses p when w > 0, h > 0, inter > 0, area_p > 0,
 * area_r > 0, uni > 0 and inter / uni > threshold.
 *
 * The division is the one slow operation, so the lanes compute inter > m * (1 - 2^-40) with
 * m = threshold * uni (a positive threshold): a lane for which that is false has
 * inter < threshold * uni exactly (m is within 2^-53 of its real value), so inter / uni
 * rounds to at most the threshold and does not suppress; the few lanes for which it is true
 * take the exact test (the division) one by one. A threshold <= 0 takes the exact test on
 * every lane that passes the other conditions. So the answer is the scalar loop's, bit for bit.
 */

#define BOX_LANES 16

/* Lanes [0, lanes) of the run from box j0: maybe[l] = the lane may suppress (then inter_of[l]
 * and uni_of[l] are its intersection and union); returns whether any lane may. Inlined with
 * lanes = BOX_LANES (a fixed trip count the compiler vectorizes) and with the tail's count. */
KINLINE int KSUF(box_lanes)(const double* x0, const double* y0, const double* x1, const double* y1,
                            const double* area, int64_t j0, int lanes, double q_x0, double q_y0, double q_x1,
                            double q_y1, double q_area, double threshold, double near, unsigned char* maybe,
                            double* inter_of, double* uni_of) {
    int any = 0;
    for (int l = 0; l < lanes; ++l) {
        const int64_t j = j0 + l;
        const double a0 = q_x0 > x0[j] ? q_x0 : x0[j], a1 = q_x1 < x1[j] ? q_x1 : x1[j];
        const double b0 = q_y0 > y0[j] ? q_y0 : y0[j], b1 = q_y1 < y1[j] ? q_y1 : y1[j];
        const double w = a1 - a0, h = b1 - b0;
        const double inter = w * h, uni = (q_area + area[j]) - inter;
        const int base = (w > 0.0) & (h > 0.0) & (inter > 0.0) & (area[j] > 0.0) & (uni > 0.0);
        const int close = threshold > 0.0 ? inter > near * uni : 1;
        maybe[l] = (unsigned char)(base & close);
        inter_of[l] = inter, uni_of[l] = uni;
        any |= base & close;
    }
    return any;
}

/* 1 when some box j < n of (x0, y0, x1, y1, area) suppresses the box (q_x0 .. q_area) at
 * `threshold`, else 0. */
static int KSUF(box_suppressed)(const double* x0, const double* y0, const double* x1, const double* y1,
                                const double* area, int64_t n, double q_x0, double q_y0, double q_x1,
                                double q_y1, double q_area, double threshold) {
    if (!(q_area > 0.0)) {
        return 0;
    }
    const double near = threshold > 0.0 ? threshold * (1.0 - 0x1p-40) : 0.0;
    for (int64_t j0 = 0; j0 < n; j0 += BOX_LANES) {
        const int lanes = n - j0 < BOX_LANES ? (int)(n - j0) : BOX_LANES;
        unsigned char maybe[BOX_LANES] KALIGN64;
        double inter_of[BOX_LANES] KALIGN64, uni_of[BOX_LANES] KALIGN64;
        const int any = lanes == BOX_LANES
            ? KSUF(box_lanes)(x0, y0, x1, y1, area, j0, BOX_LANES, q_x0, q_y0, q_x1, q_y1, q_area, threshold, near,
                              maybe, inter_of, uni_of)
            : KSUF(box_lanes)(x0, y0, x1, y1, area, j0, lanes, q_x0, q_y0, q_x1, q_y1, q_area, threshold, near,
                              maybe, inter_of, uni_of);
        if (!any) {
            continue;
        }
        for (int l = 0; l < lanes; ++l) {
            if (maybe[l] && inter_of[l] / uni_of[l] > threshold) {
                return 1;
            }
        }
    }
    return 0;
}
