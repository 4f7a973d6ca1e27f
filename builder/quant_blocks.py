"""Block-quantised weights in the layout of onnxruntime's MatMulNBits, exact or rounded.

A linear layer's weight ``W`` [N, K] is stored as codes in blocks of ``block`` values along K,
each block with a scale and a (float) zero point: ``W[n, k] = (code - zero) * scale``. Two
sources fill it:

- a GGUF file already quantised this way (Q4_1: 4-bit codes, scale ``d`` and minimum ``m`` per
  32 values; Q8_0: 8-bit signed codes, scale ``d``): converted *exactly*, so the ONNX model
  computes with the very weights the source file holds (``zero = -m / d``);
- float weights (a Hugging Face checkpoint): rounded to the nearest code per block (RTN,
  asymmetric), the usual weight-only recipe.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BlockQuantized:
    """One weight matrix [N, K] as block codes; ``dequantize()`` gives the float matrix back."""

    codes: np.ndarray  # uint8 [N, K], values in [0, 2**bits)
    scales: np.ndarray  # float32 [N, K // block]
    zeros: np.ndarray  # float32 [N, K // block]
    bits: int
    block: int

    @property
    def shape(self) -> tuple[int, int]:
        return self.codes.shape  # type: ignore[return-value]

    def dequantize(self) -> np.ndarray:
        n, k = self.shape
        codes = self.codes.reshape(n, k // self.block, self.block).astype(np.float32)
        return ((codes - self.zeros[..., None]) * self.scales[..., None]).reshape(n, k)

    def packed(self) -> np.ndarray:
        """MatMulNBits input B for 8-bit codes: uint8 [N, K // block, block].

        4-bit MatMulNBits is not written: the exact form of GGUF Q4_1 needs float zero points,
        which onnxruntime 1.32 runs on a slow path (157 ms for one token of SmolLM2-135M)."""
        if self.bits != 8:
            raise ValueError(f"only 8-bit codes are packed for MatMulNBits, not {self.bits}-bit")
        n, k = self.shape
        return np.ascontiguousarray(self.codes.reshape(n, k // self.block, self.block))

    @property
    def integer_zeros(self) -> bool:
        whole = bool(np.all(self.zeros == np.rint(self.zeros)))
        return whole and bool(np.all((self.zeros >= 0) & (self.zeros < (1 << self.bits))))

    def packed_zeros(self) -> np.ndarray:
        """MatMulNBits uint8 zero points for 8-bit codes: one byte per block."""
        if self.bits != 8 or not self.integer_zeros:
            raise ValueError("only integer zero points of 8-bit codes are packed")
        return self.zeros.astype(np.uint8).reshape(-1)

    def rows(self, order: np.ndarray) -> BlockQuantized:
        """The same weight with its output rows (N) reordered."""
        return BlockQuantized(self.codes[order], self.scales[order], self.zeros[order], self.bits, self.block)

    @staticmethod
    def stack(parts: list[BlockQuantized]) -> BlockQuantized:
        """Weights that read the same input, concatenated along N (one MatMul instead of several)."""
        first = parts[0]
        if any((p.bits, p.block, p.shape[1]) != (first.bits, first.block, first.shape[1]) for p in parts):
            raise ValueError("only weights with the same K, bits and block size can be stacked")
        return BlockQuantized(
            np.concatenate([p.codes for p in parts]),
            np.concatenate([p.scales for p in parts]),
            np.concatenate([p.zeros for p in parts]),
            first.bits,
            first.block,
        )


def quantize_rtn(weight: np.ndarray, bits: int = 4, block: int = 32, integer_zeros: bool = True) -> BlockQuantized:
    """Round-to-nearest asymmetric block quantisation of a float weight [N, K].

    ``integer_zeros`` rounds each zero point to a code, the form onnxruntime's fast MatMulNBits
    kernels take (float zero points fall back to a much slower path)."""
    n, k = weight.shape
    if k % block:
        raise ValueError(f"K={k} is not a multiple of the block size {block}")
    levels = (1 << bits) - 1
    blocks = weight.astype(np.float32).reshape(n, k // block, block)
    low = np.minimum(blocks.min(axis=-1), 0.0)  # the range holds 0, so the zero point is a code
    high = np.maximum(blocks.max(axis=-1), 0.0)
    scales = (high - low) / levels
    scales = np.where(scales == 0, 1.0, scales).astype(np.float32)  # an all-zero block
    zeros = (-low / scales).astype(np.float32)
    if integer_zeros:
        zeros = np.clip(np.rint(zeros), 0, levels).astype(np.float32)
    codes = np.clip(np.rint(blocks / scales[..., None] + zeros[..., None]), 0, levels)
    return BlockQuantized(codes.astype(np.uint8).reshape(n, k), scales, zeros, bits, block)


# ---- GGUF blocks ------------------------------------------------------------------------------
_Q4_1_BYTES = 20  # fp16 d, fp16 m, 16 bytes of nibbles (values 0-15 low, 16-31 high)
_Q8_0_BYTES = 34  # fp16 d, 32 int8


def from_q4_1(raw: np.ndarray, n: int, k: int) -> BlockQuantized:
    """GGUF Q4_1 blocks of a [N, K] weight: ``w = d * q + m``, i.e. zero point ``-m / d``."""
    blocks = np.ascontiguousarray(raw).reshape(n, k // 32, _Q4_1_BYTES)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    m = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
    nibbles = blocks[..., 4:]
    codes = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1)  # GGUF order: low nibbles are values 0-15
    flat = d == 0
    scales = np.where(flat, np.where(m == 0, 1.0, m), d).astype(np.float32)
    zeros = np.where(flat, np.where(m == 0, 0.0, -1.0), -m / np.where(flat, 1.0, d)).astype(np.float32)
    codes = np.where(flat[..., None], 0, codes)
    return BlockQuantized(codes.reshape(n, k).astype(np.uint8), scales, zeros, 4, 32)


def from_q8_0(raw: np.ndarray, n: int, k: int) -> BlockQuantized:
    """GGUF Q8_0 blocks of a [N, K] weight: ``w = d * q`` with signed q, i.e. codes ``q + 128``, zero 128."""
    blocks = np.ascontiguousarray(raw).reshape(n, k // 32, _Q8_0_BYTES)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    q = blocks[..., 2:].copy().view(np.int8).astype(np.int16)
    codes = (q + 128).astype(np.uint8)
    return BlockQuantized(codes.reshape(n, k), d, np.full_like(d, 128.0), 8, 32)


#: A linear layer's weight [N, K]: block codes, or plain floats (a Hugging Face checkpoint).
Linear = BlockQuantized | np.ndarray


def dense(weight: Linear) -> np.ndarray:
    """The weight as float32 [N, K]."""
    return weight.dequantize() if isinstance(weight, BlockQuantized) else np.asarray(weight, dtype=np.float32)


def stack(parts: list[Linear]) -> Linear:
    """Weights reading the same input, concatenated along N: blocks stay blocks, otherwise floats."""
    if all(isinstance(p, BlockQuantized) for p in parts):
        return BlockQuantized.stack(parts)  # type: ignore[arg-type]
    return np.concatenate([dense(p) for p in parts])
