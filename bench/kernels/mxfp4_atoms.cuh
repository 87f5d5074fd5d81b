// The W atoms of a shared-memory pipeline stage, as the tile and the wgmma kernels load them:
// BLOCK_N / 16 tiles of KA 32-column atoms, their codes (WQ_STAGE) then their scales (WS_STAGE).
#pragma once

#include "mxfp4_common.cuh"

#define KA (BLOCK_K / 32)          // 32-column atoms per K tile
#define WQ_STAGE (BLOCK_N / 16 * KA * 256)
#define WS_STAGE (BLOCK_N / 16 * KA * 16)

// One lane's codes of one 16-row W tile and 32-column atom of the stage (atom index tile16 * KA
// + ka) and the E8M0 scale codes of its rows g and g + 8.
struct AtomCodes {
  uint2 q;
  u32 lo, hi;
};

__device__ __forceinline__ AtomCodes load_atom(const u8* wq_s, const u8* ws_s, int atom, int lane) {
  const int g = lane >> 2;
  return {*reinterpret_cast<const uint2*>(wq_s + atom * 256 + lane * 8), ws_s[atom * 16 + g], ws_s[atom * 16 + g + 8]};
}

// The atom's A fragments for both k16 steps.
__device__ __forceinline__ void dequant_atom(const AtomCodes& c, u32 (&a)[2][4]) {
  const AtomScales sc = atom_scales(c.lo, c.hi);
  dequant_word(c.q.x, sc, a[0]);
  dequant_word(c.q.y, sc, a[1]);
}

__device__ __forceinline__ void tile_w_fragment(const u8* wq_s, const u8* ws_s, int atom, int lane, u32 (&a)[2][4]) {
  dequant_atom(load_atom(wq_s, ws_s, atom, lane), a);
}
