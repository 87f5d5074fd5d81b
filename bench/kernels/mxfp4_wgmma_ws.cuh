// mxfp4_wgmma_ws, the warp-specialized wgmma family (WGMMA_WS=1, sm_90a only): both ops' kernel
// for the middle band of rows (M = 32 and up), dense or grouped (MOE), followed by
// mxfp4_splitk_finish when SPLIT_K > 1 (unless CLUSTER_REDUCE). Its axes are the family's in bench/mxfp4_kernel_axes.cpp.
#if !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(BLOCK_K) || !defined(CONSUMERS) || !defined(STAGES) || !defined(SPLIT_K) || !defined(MMA_N) || !defined(PRODUCERS) || !defined(W_SMEM) || !defined(CLUSTER_REDUCE) || !defined(TMA)
#error "mxfp4_wgmma_ws: the host defines every axis of its family (mxfp4_families in bench/mxfp4_kernel_axes.cpp)"
#endif

#include "mxfp4_common.cuh"
#include "mxfp4_rows.cuh"
#include "mxfp4_atoms.cuh"
#include "mxfp4_wgmma_ops.cuh"

// Block = CONSUMERS warpgroups (warps 0 .. 4 CONSUMERS - 1, so that each warpgroup starts at a
// warp index divisible by 4, as wgmma asks) and PRODUCERS producer warps after them (1, or 4:
// no more registers are lost, since nine warps already put three on one of the SM's four
// register files; 4 or 8 with W_SMEM 1).
// - The producer's copy warps alone move data: for each K tile of the block's K range
//   (blockIdx.z's 1/SPLIT_K of K) they wait until the consumers have released the tile's stage
//   (the `empty` mbarrier), copy the activation rows (BF16, gathered for the grouped op) and the
//   W codes and scales of the tile into the stage with cp.async, and have the stage's `full`
//   mbarrier (`copied` with W_SMEM) count each thread's arrival once its copies have landed
//   (cp.async.mbarrier.arrive). No copy waits for another, so all STAGES tiles can be in flight
//   while the consumers compute, with no block-wide barrier anywhere in the main loop.
// - Consumer warpgroup wg owns WS_MW tiles of 64 W rows (BLOCK_N = 64 x WS_MW x CONSUMERS); as
//   in mxfp4_wgmma, warp q of the group dequantizes rows 16q..16q+15 of each tile from the
//   stage into wgmma's register A fragment (pack_for_gpu's layout is, warp by warp, that
//   fragment), and the activations are the B operand, read by the tensor cores from the stage
//   in pieces of MMA_N rows (K-major, 128-byte swizzled: sw128).
//   While an atom's MMAs run, the next atom's codes are loaded and, once the MMAs before them
//   are done, dequantized; the first atom of the next tile likewise, so the tensor pipe does not
//   drain at tile boundaries. A tile's stage is released (every consumer thread arrives on
//   `empty`) once the MMAs of its last atom are known complete.
// - Epilogue: SPLIT_K 1 writes rounded BF16 rows through shared memory in 16-byte pieces (as
//   mxfp4_wgmma); SPLIT_K > 1 stages the fp32 partial tile in shared memory and adds it into the
//   fp32 workspace with 16-byte vector reductions (red.global.add.v4.f32), and
//   mxfp4_splitk_finish rounds and zeroes it. CLUSTER_REDUCE 1 launches the SPLIT_K blocks of an
//   output tile as one cluster instead: each stages its partial tile, and after a cluster
//   barrier block q adds every block's q-th share of the rows through distributed shared memory
//   (in block order: the same sum on every run) and writes them as BF16; no atomics, no
//   workspace, no finishing kernel. Split-K is what fills the 132 SMs where M gives
//   few block rows and N / BLOCK_N few block columns (M = 128, N = 4096: 32 blocks without it).
// - TMA 1 (the dense op) has one producer warp copy each tile with
//   the Tensor Memory Accelerator instead of 16-byte cp.asyncs: the activation tile as
//   BLOCK_K / 64 boxes of a 2-D tensor map (`a_map`, 64 columns x BLOCK_M rows, swizzled by the
//   TMA into the sw128 layout; rows past M zero-filled), and each 16-row group's W codes and
//   scales as two 1-D bulk copies (contiguous in pack_for_gpu's layout), all counted in bytes on
//   the stage's `full` barrier, which lane 0's arrival arms with the tile's byte count. No
//   thread computes an address per 16 bytes, so the copy issue no longer grows with the tile.
//   With W_SMEM 1 that warp's copies land on `copied`, and every other producer warp
//   dequantizes, into a BF16 W tile of the stage's own.
// - W_SMEM 1 moves the dequantization off the consumers: the producer warps (one or two whole
//   warpgroups) also dequantize each tile's W codes, once their copies have landed, into one of
//   two BF16 W tiles in the activations' layout, and arrive on `full` only then. The consumers
//   issue a whole tile's wgmmas with both operands in shared memory and wait once a tile (for
//   the previous tile's MMAs, whose stage they then release), so up to two tiles of MMAs are in
//   flight and none waits on a dequantization. The BF16 tiles are two whatever STAGES is, so
//   that the ring of copies can be deep.
// Config: WGMMA_WS=1, BLOCK_M (a multiple of MMA_N, at most 256), BLOCK_N (a multiple of 64 x
// CONSUMERS), BLOCK_K (a multiple of 64: an even number of atoms, so that the two register
// buffers of W fragments alternate the same way in every tile), CONSUMERS (1 or 2), STAGES (>= 2),
// SPLIT_K (K / SPLIT_K a multiple of BLOCK_K), MMA_N (32, 64, 128 or 256), PRODUCERS (1 or 4;
// 4 or 8 with W_SMEM 1), W_SMEM (0 or 1), CLUSTER_REDUCE (0 or 1), TMA (0 or 1), FOLDSCALE, MOE.
#define WS_MW (BLOCK_N / 64 / CONSUMERS)  // 64-row W tiles per consumer warpgroup
#define WS_NP (BLOCK_M / MMA_N)           // activation pieces of MMA_N rows, one wgmma each
#define WS_CONSUMER_THREADS (CONSUMERS * 128)
#define WS_PRODUCER_THREADS (PRODUCERS * 32)
#define WS_THREADS (WS_CONSUMER_THREADS + WS_PRODUCER_THREADS)
// Shared memory: the activation ring (STAGES tiles), the ring of dequantized W tiles (W_SMEM
// only: two, since a tile is dequantized just before its MMAs; with TMA one a stage, whose reuse
// the stage's release then orders), both aligned to 1024 bytes as
// the 128-byte swizzle asks, then the ring of W codes and scales as copied.
#define WS_A_STAGE (BLOCK_M * BLOCK_K * 2)
#define WS_W_STAGE (WQ_STAGE + WS_STAGE)
#if W_SMEM && TMA
#define WS_WB_STAGES STAGES
#elif W_SMEM
#define WS_WB_STAGES 2
#else
#define WS_WB_STAGES 0
#endif
#define WS_WB_STAGE (BLOCK_N * BLOCK_K * 2)
#define WS_WB_RING (STAGES * WS_A_STAGE)
#define WS_W_RING (WS_WB_RING + WS_WB_STAGES * WS_WB_STAGE)
#define WS_PIPE_BYTES (WS_W_RING + STAGES * WS_W_STAGE + 1024)  // + the alignment to 1024 bytes
#if SPLIT_K > 1
#define WS_OUT_LD (BLOCK_N + 4)  // the epilogue's padded fp32 row: a warp's 4 rows in different banks
#define WS_OUT_BYTES (BLOCK_M * WS_OUT_LD * 4)
#else
#define WS_OUT_LD (BLOCK_N + 8)  // the epilogue's padded bf16 row
#define WS_OUT_BYTES (BLOCK_M * WS_OUT_LD * 2)
#endif
#define WS_SMEM_MAIN (WS_PIPE_BYTES > WS_OUT_BYTES ? WS_PIPE_BYTES : WS_OUT_BYTES)
// W_SMEM: PRODUCERS / 4 copy warps (one with TMA) and the rest dequantize; otherwise every
// producer copies.
#if W_SMEM && TMA
#define WS_COPIERS 1
#elif W_SMEM
#define WS_COPIERS (PRODUCERS / 4)
#else
#define WS_COPIERS PRODUCERS
#endif
#define WS_COPY_THREADS (WS_COPIERS * 32)
#define WS_DEQUANT_WARPS (PRODUCERS - WS_COPIERS)
#define WS_DEQUANT_THREADS (WS_DEQUANT_WARPS * 32)
// Two consumer warpgroups and one copying warpgroup: the copies need few registers, so they
// hand theirs to the consumers (setmaxnreg: 72 and 216 a thread, 64512 of the SM's 65536),
// whose accumulators and W fragments otherwise press against the 168 of a 12-warp block and
// make ptxas serialize the MMAs (a wait for every wgmma, H200 profile 2026-12-02). With TMA the
// one issuing warp needs fewer still: 40 and 232.
#define WS_SETMAXNREG (!W_SMEM && PRODUCERS == 4 && CONSUMERS == 2)
#if TMA
#define WS_PRODUCER_REGS 40
#define WS_CONSUMER_REGS 232
#else
#define WS_PRODUCER_REGS 72
#define WS_CONSUMER_REGS 216
#endif

#define WS_BARRIERS ((W_SMEM ? 3 : 2) * STAGES)  // full, empty (and copied) a stage

#if CLUSTER_REDUCE && (SPLIT_K < 2 || SPLIT_K > 8)
#error "mxfp4_wgmma_ws: CLUSTER_REDUCE 1 reduces 2..8 split blocks (a portable cluster)"
#endif
#if TMA && MOE
#error "mxfp4_wgmma_ws: TMA 1 copies a dense op's activations by tensor map"
#endif
#if W_SMEM && PRODUCERS % 4 != 0
#error "mxfp4_wgmma_ws: W_SMEM 1 dequantizes with whole producer warpgroups (PRODUCERS 4 or 8)"
#endif
#if BLOCK_K % 64 != 0 || STAGES < 2 || BLOCK_M % MMA_N != 0 || BLOCK_N % (64 * CONSUMERS) != 0
#error "mxfp4_wgmma_ws: BLOCK_K a multiple of 64, STAGES >= 2, BLOCK_M a multiple of MMA_N, BLOCK_N of 64 x CONSUMERS"
#endif
#ifdef LAUNCH_SMEM_BYTES
static_assert(LAUNCH_SMEM_BYTES == WS_SMEM_MAIN + 2 * BLOCK_M * sizeof(int) + WS_BARRIERS * 8,
              "the host's dynamic shared memory for mxfp4_wgmma_ws is not its pipeline, epilogue, row indices and "
              "barriers");
#endif

// An arrival on `bar` once every cp.async this thread issued before has completed, without
// raising the phase's expected count: the barrier's count includes it (PTX ISA,
// "cp.async.mbarrier.arrive", .noinc).
__device__ __forceinline__ void cp_async_arrive_noinc(unsigned long long* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

// The consumers' own barrier (named barrier 1): the producer warp has left by then.
__device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(WS_CONSUMER_THREADS) : "memory");
}

// wgmma's 128-byte swizzled K-major layout (PTX ISA, "Shared Memory Matrix Layout": swizzling
// mode 128B), for the activations and the dequantized W alike: a block of rows, 64 BF16
// columns (128 bytes) each, in groups of 8 rows (1024 bytes); chunk c (0..7, 16 bytes) of row
// r sits at chunk c ^ (r % 8) of its row, so that the 8 rows a core matrix takes from one chunk
// column lie in 8 different bank groups. A K tile is BLOCK_K / 64 such blocks, one after the
// other. This returns the byte offset of chunk c of row r within its block.
__device__ __forceinline__ int sw128(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }

// The matrix descriptor of a 128-byte swizzled K-major operand at `addr` (its first row within
// a 1024-byte-aligned block, plus 32 bytes per k16 step): stride 1024 bytes between 8-row
// groups; the leading offset is unused in this mode (1 by convention).
__device__ __forceinline__ unsigned long long smem_desc_sw128(u32 addr) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | 1ull << 16 | (unsigned long long)(1024 >> 4) << 32 | 1ull << 62;
}

#if W_SMEM
// Dequantizing warp dw (of WS_DEQUANT_WARPS) dequantizes the atoms dw, dw + WS_DEQUANT_WARPS, ... of the codes
// and scales at `w` into the BF16 W tile `wb`. Register j of word s of a lane's fragment
// (dequant_atom) holds W row 16T + g (+ 8 for odd j), columns 32 ka + 16 s + 2t (+ 8 for j >= 2)
// and the next: chunk (ka % 2) 4 + 2s + j / 2 of the row in column block ka / 2. A warp's store
// of one register fills 8 rows' chunks, which the swizzle puts in 8 different bank groups.
__device__ __forceinline__ void dequant_tile_to_smem(const u8* w, u8* wb, int dw, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll 2
  for (int atom = dw; atom < BLOCK_N / 16 * KA; atom += WS_DEQUANT_WARPS) {
    const int tile16 = atom / KA, ka = atom % KA;
    u32 a[2][4];
    tile_w_fragment(w, w + WQ_STAGE, atom, lane, a);
    u8* block = wb + (ka >> 1) * (BLOCK_N * 128) + (tile16 * 16) * 128 + t * 4;
#pragma unroll
    for (int s = 0; s < 2; ++s)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        *reinterpret_cast<u32*>(block + sw128(g + (j & 1) * 8, (ka & 1) * 4 + s * 2 + (j >> 1))) = a[s][j];
  }
}
#endif

// The descriptor of activation piece p (MMA_N rows) at k16 step ks of the stage at `a_addr`.
__device__ __forceinline__ unsigned long long activation_desc(u32 a_addr, int ks, int p) {
  return smem_desc_sw128(a_addr + (ks >> 2) * (BLOCK_M * 128) + p * MMA_N * 128 + (ks & 3) * 32);
}

// Pins every accumulator of the thread across the asynchronous MMAs (fence_acc).
__device__ __forceinline__ void fence_tile_acc(float (&acc)[WS_MW][WS_NP][MMA_N / 2]) {
#pragma unroll
  for (int m = 0; m < WS_MW; ++m)
#pragma unroll
    for (int p = 0; p < WS_NP; ++p) fence_acc(acc[m][p]);
}

#if CLUSTER_REDUCE
// Cluster-wide barrier of every non-exited thread, releasing this block's shared-memory writes
// to the cluster and acquiring the others' (PTX ISA, "barrier.cluster").
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ u32 cluster_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// The 16 bytes at shared address `addr` of cluster block `rank` (mapa, ld.shared::cluster).
__device__ __forceinline__ float4 ld_cluster_v4(u32 addr, u32 rank) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(addr), "r"(rank));
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(remote)
               : "memory");
  return v;
}
#endif

__device__ __forceinline__ void red_add_v4(float* p, float4 v) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
               : "memory");
}

extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
    mxfp4_wgmma_ws(const u16* __restrict__ A, const u8* __restrict__ Wq, const u8* __restrict__ Ws,
                   u16* __restrict__ Y, float* __restrict__ Yacc, int rows, int N, int K,
                   const int4* __restrict__ tiles, const int* __restrict__ a_rows,
                   const int* __restrict__ out_rows
#if TMA
                   ,
                   const __grid_constant__ TmaMap a_map
#endif
                   ) {
  extern __shared__ __align__(128) u8 smem[];
  u8* const pipe = smem + ((1024 - (smem_addr(smem) & 1023)) & 1023);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const BlockRows br = block_rows(tiles, rows);
  const int expert = br.expert, row0 = br.row0, row_count = br.count;
  const int n0 = blockIdx.x * BLOCK_N;
  const int k_len = K / SPLIT_K, k_begin = blockIdx.z * k_len, k_tiles = k_len / BLOCK_K;
  const long long atoms_per_row = K / 32;
  int* const a_idx = reinterpret_cast<int*>(smem + WS_SMEM_MAIN);
  int* const y_idx = a_idx + BLOCK_M;
  unsigned long long* const full = reinterpret_cast<unsigned long long*>(y_idx + BLOCK_M);
  unsigned long long* const empty = full + STAGES;
  unsigned long long* const copied = empty + STAGES;  // W_SMEM only
  for (int r = tid; r < BLOCK_M; r += WS_THREADS) {
    a_idx[r] = r < row_count ? a_row(a_rows, row0, r) : 0;
    y_idx[r] = r < row_count ? (int)y_row(out_rows, row0, r) : 0;
  }
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], W_SMEM ? WS_DEQUANT_THREADS : TMA ? 1 : WS_COPY_THREADS);
      mbar_init(&empty[s], WS_CONSUMER_THREADS);  // every consumer thread
      if (W_SMEM) mbar_init(&copied[s], TMA ? 1 : WS_COPY_THREADS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warp >= CONSUMERS * 4) {
    // The producer warps: the copy warps, then (W_SMEM) the dequantizing warps.
    const int pwarp = warp - CONSUMERS * 4;
#if WS_SETMAXNREG
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(WS_PRODUCER_REGS));
#endif
#if W_SMEM
    if (pwarp >= WS_COPIERS) {
      // Tile j's codes, once its copies have landed, into W slot j % WS_WB_STAGES, once the
      // consumers have released the tile that used the slot before: with two slots tile j - 2;
      // with TMA the stage's own slot, released before the copies that landed were issued.
      const int dw = pwarp - WS_COPIERS;
      for (int j = 0; j < k_tiles; ++j) {
        mbar_wait(&copied[j % STAGES], (j / STAGES) & 1);
#if !TMA
        if (j >= 2) mbar_wait(&empty[(j - 2) % STAGES], ((j - 2) / STAGES) & 1);
#endif
        dequant_tile_to_smem(pipe + WS_W_RING + (j % STAGES) * WS_W_STAGE,
                             pipe + WS_WB_RING + (j % WS_WB_STAGES) * WS_WB_STAGE, dw, lane);
        fence_proxy_async();
        mbar_arrive(&full[j % STAGES]);
      }
      return;
    }
    unsigned long long* const landed = copied;
#else
    unsigned long long* const landed = full;
#endif
    const u8* wq_g = Wq + (long long)expert * N / 16 * atoms_per_row * 256;
    const u8* ws_g = Ws + (long long)expert * N / 16 * atoms_per_row * 16;
#if TMA
    if (pwarp != 0) return;
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int s = kt % STAGES;
      if (kt >= STAGES) mbar_wait(&empty[s], ((kt / STAGES) - 1) & 1);
      // Armed before any copy of the tile is issued, so no landing can complete the phase early.
      if (lane == 0) mbar_arrive_expect_tx(&landed[s], WS_A_STAGE + WS_W_STAGE);
      __syncwarp();
      const int k0 = k_begin + kt * BLOCK_K;
      u8* const a_s = pipe + s * WS_A_STAGE;
      if (lane < BLOCK_K / 64) tma_load_2d(a_s + lane * (BLOCK_M * 128), &a_map, k0 + lane * 64, row0, &landed[s]);
      u8* const wq_s = pipe + WS_W_RING + s * WS_W_STAGE;
      for (int t = lane; t < BLOCK_N / 16; t += 32) {
        const long long atom0 = (long long)(n0 / 16 + t) * atoms_per_row + k0 / 32;
        bulk_load(wq_s + t * KA * 256, wq_g + atom0 * 256, KA * 256, &landed[s]);
        bulk_load(wq_s + WQ_STAGE + t * KA * 16, ws_g + atom0 * 16, KA * 16, &landed[s]);
      }
    }
#else
    const int ctid = pwarp * 32 + lane;
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int s = kt % STAGES;
      if (kt >= STAGES) mbar_wait(&empty[s], ((kt / STAGES) - 1) & 1);
      u8* const a_s = pipe + s * WS_A_STAGE;
      const int k0 = k_begin + kt * BLOCK_K;
      // Neighbouring threads read a row's neighbouring 16 bytes; rows past the block's count
      // are zero-filled (no global read).
#pragma unroll 4
      for (int c = ctid; c < BLOCK_M * (BLOCK_K / 8); c += WS_COPY_THREADS) {
        const int r = c / (BLOCK_K / 8), q = c % (BLOCK_K / 8);
        cp_async16(a_s + (q >> 3) * (BLOCK_M * 128) + sw128(r, q & 7), A + (long long)a_idx[r] * K + k0 + q * 8,
                   r < row_count ? 16 : 0);
      }
      u8* wq_s = pipe + WS_W_RING + s * WS_W_STAGE;
#pragma unroll 4
      for (int c = ctid; c < WQ_STAGE / 16; c += WS_COPY_THREADS) {
        const int t = c / (KA * 16), rest = c % (KA * 16);
        cp_async16(wq_s + c * 16, wq_g + ((long long)(n0 / 16 + t) * atoms_per_row + k0 / 32) * 256 + rest * 16, 16);
      }
      u8* ws_s = wq_s + WQ_STAGE;
      for (int c = ctid; c < WS_STAGE / 16; c += WS_COPY_THREADS) {
        const int t = c / KA, a = c % KA;
        cp_async16(ws_s + c * 16, ws_g + ((long long)(n0 / 16 + t) * atoms_per_row + k0 / 32 + a) * 16, 16);
      }
      // The barrier counts this thread's arrival once all its copies so far have landed, so
      // the copies of later tiles go out without waiting for these.
      cp_async_arrive_noinc(&landed[s]);
    }
#endif
    return;
  }

  // The consumer warpgroups.
#if WS_SETMAXNREG
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(WS_CONSUMER_REGS));
#endif
  const int wg = warp >> 2, wq = warp & 3;
  float acc[WS_MW][WS_NP][MMA_N / 2];
#pragma unroll
  for (int m = 0; m < WS_MW; ++m)
#pragma unroll
    for (int p = 0; p < WS_NP; ++p)
#pragma unroll
      for (int i = 0; i < MMA_N / 2; ++i) acc[m][p][i] = 0.0f;

#if W_SMEM
  for (int kt = 0; kt < k_tiles; ++kt) {
    mbar_wait(&full[kt % STAGES], (kt / STAGES) & 1);
    fence_proxy_async();
    const u32 a_addr = smem_addr(pipe + (kt % STAGES) * WS_A_STAGE),
              w_addr = smem_addr(pipe + WS_WB_RING + (kt % WS_WB_STAGES) * WS_WB_STAGE);
    fence_tile_acc(acc);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < BLOCK_K / 16; ++ks)
#pragma unroll
      for (int p = 0; p < WS_NP; ++p) {
        if (p * MMA_N >= row_count) continue;  // block-uniform
        const unsigned long long b = activation_desc(a_addr, ks, p);
#pragma unroll
        for (int m = 0; m < WS_MW; ++m) {
          const unsigned long long w =
              smem_desc_sw128(w_addr + (ks >> 2) * (BLOCK_N * 128) + (wg * WS_MW + m) * 64 * 128 + (ks & 3) * 32);
          wgmma_ss<MMA_N>(acc[m][p], w, b);
        }
      }
    wgmma_commit();
    wgmma_wait<1>();  // the previous tile's MMAs: its stage is free
    if (kt > 0) mbar_arrive(&empty[(kt - 1) % STAGES]);
  }
#else
  const int tile0 = (wg * WS_MW * 4 + wq) * KA;  // the warp's first 16-row tile, atom 0
  u32 wa[2][WS_MW][2][4];
  mbar_wait(&full[0], 0);
  fence_proxy_async();
#pragma unroll
  for (int m = 0; m < WS_MW; ++m) tile_w_fragment(pipe + WS_W_RING, pipe + WS_W_RING + WQ_STAGE, tile0 + m * 4 * KA, lane, wa[0][m]);

  for (int kt = 0; kt < k_tiles; ++kt) {
    const u32 a_addr = smem_addr(pipe + (kt % STAGES) * WS_A_STAGE);
    const u8* wq_s = pipe + WS_W_RING + (kt % STAGES) * WS_W_STAGE;
    const u8* ws_s = wq_s + WQ_STAGE;
#pragma unroll
    for (int ka = 0; ka < KA; ++ka) {
      fence_tile_acc(acc);
      wgmma_fence();
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int p = 0; p < WS_NP; ++p) {
          if (p * MMA_N >= row_count) continue;  // block-uniform
          const int ks = ka * 2 + s;
          const unsigned long long b = activation_desc(a_addr, ks, p);
#pragma unroll
          for (int m = 0; m < WS_MW; ++m) wgmma_rs<MMA_N>(acc[m][p], wa[ka & 1][m][s], b);
        }
      wgmma_commit();
      if (ka + 1 < KA) {
        AtomCodes next[WS_MW];
#pragma unroll
        for (int m = 0; m < WS_MW; ++m) next[m] = load_atom(wq_s, ws_s, tile0 + m * 4 * KA + ka + 1, lane);
        wgmma_wait<1>();  // atom ka - 1's MMAs, which read the registers refilled here
        // At the tile's first atom that includes the previous tile's last MMAs: its stage is free.
        if (ka == 0 && kt > 0) mbar_arrive(&empty[(kt - 1) % STAGES]);
#pragma unroll
        for (int m = 0; m < WS_MW; ++m) dequant_atom(next[m], wa[(ka + 1) & 1][m]);
      } else if (kt + 1 < k_tiles) {
        // The next tile's first atom, into the buffer of this tile's second-to-last (KA even).
        mbar_wait(&full[(kt + 1) % STAGES], ((kt + 1) / STAGES) & 1);
        fence_proxy_async();
        const u8* nwq = pipe + WS_W_RING + ((kt + 1) % STAGES) * WS_W_STAGE;
        AtomCodes next[WS_MW];
#pragma unroll
        for (int m = 0; m < WS_MW; ++m) next[m] = load_atom(nwq, nwq + WQ_STAGE, tile0 + m * 4 * KA, lane);
        wgmma_wait<1>();
#pragma unroll
        for (int m = 0; m < WS_MW; ++m) dequant_atom(next[m], wa[0][m]);
      }
    }
  }
#endif
  wgmma_wait<0>();
  fence_tile_acc(acc);

  // D fragment of m64nNk16: register 4i + e at W row 16q + g (+8 for e >= 2) of the tile,
  // activation row 8i + 2t (+1 for odd e) of the piece.
  const int g = lane >> 2, tq = (lane & 3) * 2;
  consumers_sync();  // every consumer is done with the pipeline's shared memory (and the producer's copies landed)
#if SPLIT_K > 1
  float* const out_s = reinterpret_cast<float*>(smem);
#else
  u16* const out_s = reinterpret_cast<u16*>(smem);
#endif
#pragma unroll
  for (int m = 0; m < WS_MW; ++m) {
    const int n = (wg * WS_MW + m) * 64 + wq * 16 + g;
#pragma unroll
    for (int p = 0; p < WS_NP; ++p)
#pragma unroll
      for (int i = 0; i < MMA_N / 2; ++i) {
        const int r = p * MMA_N + (i >> 2) * 8 + tq + (i & 1);
#if SPLIT_K > 1
        out_s[r * WS_OUT_LD + n + ((i >> 1) & 1) * 8] = acc[m][p][i];
#else
        out_s[r * WS_OUT_LD + n + ((i >> 1) & 1) * 8] = to_bf16(acc[m][p][i]);
#endif
      }
  }
  consumers_sync();
#if CLUSTER_REDUCE
  cluster_sync();  // every block of the cluster has staged its partial tile
  const u32 rank = cluster_rank(), out_addr = smem_addr(out_s);
  for (int c = rank * WS_CONSUMER_THREADS + tid; c < row_count * (BLOCK_N / 4); c += SPLIT_K * WS_CONSUMER_THREADS) {
    const int r = c / (BLOCK_N / 4), col = (c % (BLOCK_N / 4)) * 4;
    const u32 at = out_addr + (r * WS_OUT_LD + col) * 4;
    float4 sum = ld_cluster_v4(at, 0);
#pragma unroll
    for (int q = 1; q < SPLIT_K; ++q) {
      const float4 v = ld_cluster_v4(at, q);
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    *reinterpret_cast<uint2*>(Y + (long long)y_idx[r] * N + n0 + col) =
        make_uint2(to_bf16(sum.x) | (u32)to_bf16(sum.y) << 16, to_bf16(sum.z) | (u32)to_bf16(sum.w) << 16);
  }
  cluster_sync();  // no block leaves while another still reads its shared memory
#elif SPLIT_K > 1
  for (int c = tid; c < row_count * (BLOCK_N / 4); c += WS_CONSUMER_THREADS) {
    const int r = c / (BLOCK_N / 4), col = (c % (BLOCK_N / 4)) * 4;
    red_add_v4(Yacc + (long long)y_idx[r] * N + n0 + col, *reinterpret_cast<const float4*>(out_s + r * WS_OUT_LD + col));
  }
#else
  for (int c = tid; c < row_count * (BLOCK_N / 8); c += WS_CONSUMER_THREADS) {
    const int r = c / (BLOCK_N / 8), col = (c % (BLOCK_N / 8)) * 8;
    *reinterpret_cast<uint4*>(Y + (long long)y_idx[r] * N + n0 + col) =
        *reinterpret_cast<const uint4*>(out_s + r * WS_OUT_LD + col);
  }
#endif
}

#include "mxfp4_splitk.cuh"
