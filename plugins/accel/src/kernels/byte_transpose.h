/*
 * CpuAcc's transpose of a byte matrix (8-bit tensors changing between channel-major and
 * position-major order: the quantized convolution's input and output, ops/quantized_products.c).
 *
 * dst[j * dst_stride + i] = src[i * src_stride + j] ^ flip for i < rows, j < cols. Whole 8 x 8
 * tiles are transposed in eight 64-bit registers (three rounds of swapping 1-, 2- and 4-byte
 * blocks between register pairs), so each tile costs eight 8-byte loads and eight 8-byte stores
 * instead of 64 byte accesses that each touch another cache line; the edges go byte by byte.
 * Portable C: exact on every CPU.
 */
#ifndef ACCEL_BYTE_TRANSPOSE_H
#define ACCEL_BYTE_TRANSPOSE_H

#include <stdint.h>
#include <string.h>

static inline void accel_swap_blocks(uint64_t* a, uint64_t* b, int shift, uint64_t mask) {
    const uint64_t t = ((*a >> shift) ^ *b) & mask;
    *b ^= t;
    *a ^= t << shift;
}

static inline void accel_transpose_bytes(const uint8_t* src, int64_t src_stride, uint8_t* dst, int64_t dst_stride,
                                         int64_t rows, int64_t cols, uint8_t flip) {
    const uint64_t flips = (uint64_t)flip * 0x0101010101010101ull;
    int64_t i = 0;
    for (; i + 8 <= rows; i += 8) {
        int64_t j = 0;
        for (; j + 8 <= cols; j += 8) {
            uint64_t x[8];
            for (int r = 0; r < 8; ++r) {
                memcpy(&x[r], src + (i + r) * src_stride + j, 8);
            }
            for (int r = 0; r < 8; r += 2) {
                accel_swap_blocks(&x[r], &x[r + 1], 8, 0x00FF00FF00FF00FFull);
            }
            for (int r = 0; r < 8; r += 4) {
                accel_swap_blocks(&x[r], &x[r + 2], 16, 0x0000FFFF0000FFFFull);
                accel_swap_blocks(&x[r + 1], &x[r + 3], 16, 0x0000FFFF0000FFFFull);
            }
            for (int r = 0; r < 4; ++r) {
                accel_swap_blocks(&x[r], &x[r + 4], 32, 0x00000000FFFFFFFFull);
            }
            for (int c = 0; c < 8; ++c) {
                const uint64_t v = x[c] ^ flips;
                memcpy(dst + (j + c) * dst_stride + i, &v, 8);
            }
        }
        for (; j < cols; ++j) {
            for (int r = 0; r < 8; ++r) {
                dst[j * dst_stride + i + r] = (uint8_t)(src[(i + r) * src_stride + j] ^ flip);
            }
        }
    }
    for (; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
            dst[j * dst_stride + i] = (uint8_t)(src[i * src_stride + j] ^ flip);
        }
    }
}

#endif /* ACCEL_BYTE_TRANSPOSE_H */
