#include "mxfp4_gpu.hpp"

#include "tunebench/op_switch.hpp"

#include <algorithm>
#include <exception>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "cpu_mxfp4_gemm.hpp"
#include "cublaslt_gemm.hpp"
#include "gemm_cost.hpp"
#include "inputs.hpp"
#include "moe_routing.hpp"

namespace tunebench::bench {
namespace {

// Where element (row g + 8*(j&1), column 16w + 2t + 8*(j>>1) + h) of an atom lives: the byte
// offset of its 32-bit word (lane 4g + t, word w) and its register j and half h.
struct AtomPos {
  int word_byte;
  int j, h;
};

AtomPos atom_pos(int r, int c) {  // r in 0..15, c in 0..31
  const int g = r & 7, jr = r >> 3;
  const int w = c >> 4, cc = c & 15;
  const int jc = cc >> 3, t = (cc & 7) >> 1, h = cc & 1;
  return {(g * 4 + t) * 8 + w * 4, jr | (jc << 1), h};
}

// The kernel's left rotation of a word for bit `bit` (0 = m, 1 = e0, 2 = e1, 3 = sign) of a
// code in register j (raw_pair in bench/kernels/mxfp4_gemm.cuh).
int rotation(int j, int bit) {
  static constexpr int kRot[3] = {0, 4, 10};
  if (j < 3) return kRot[j];
  return bit == 2 ? 30 : 6;
}

// Bit `bit` of a code at (j, h): the bf16 bit it becomes (sign 15, e1 8, e0 7, m 6, +16 in the
// high half) rotated back.
int source_bit(int j, int h, int bit) {
  static constexpr int kTarget[4] = {6, 7, 8, 15};
  return (16 * h + kTarget[bit] - rotation(j, bit) + 32) % 32;
}

std::uint32_t load_word(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::uint8_t get_code(const std::uint8_t* atom, const AtomPos& pos) {
  const std::uint32_t word = load_word(atom + pos.word_byte);
  std::uint8_t code = 0;
  for (int bit = 0; bit < 4; ++bit) code |= static_cast<std::uint8_t>(((word >> source_bit(pos.j, pos.h, bit)) & 1u) << bit);
  return code;
}

void put_code(std::uint8_t* atom, const AtomPos& pos, std::uint8_t code) {
  std::uint32_t word = load_word(atom + pos.word_byte);
  for (int bit = 0; bit < 4; ++bit) word |= static_cast<std::uint32_t>((code >> bit) & 1) << source_bit(pos.j, pos.h, bit);
  std::memcpy(atom + pos.word_byte, &word, 4);
}

std::uint32_t rotl(std::uint32_t x, int s) { return s == 0 ? x : (x << s) | (x >> (32 - s)); }

// raw_pair of the kernel, on the host: register j of a word as a bf16 pair, each half the
// code's value times 2^-126.
std::uint32_t raw_pair(std::uint32_t q, int j) {
  switch (j) {
    case 0: return q & 0x81C081C0u;
    case 1: return rotl(q, 4) & 0x81C081C0u;
    case 2: return rotl(q, 10) & 0x81C081C0u;
    default: return (rotl(q, 6) & 0x80C080C0u) | (rotl(q, 30) & 0x01000100u);
  }
}

// What fma.rn.bf16x2 computes for these exact power-of-two products: the float product
// (exact), then rounded to bf16 (exact as well, subnormals included).
std::uint16_t bf16_mul(std::uint16_t a, std::uint16_t b) {
  return mxfp4::float_to_bf16(mxfp4::bf16_to_float(a) * mxfp4::bf16_to_float(b));
}

std::uint16_t scale_bf16(std::uint8_t s) {
  return s == 0xFF ? 0x7FC0 : (s == 0 ? 0x0040 : static_cast<std::uint16_t>(s << 7));
}

int ceil_div(std::int64_t a, std::int64_t b) { return static_cast<int>((a + b - 1) / b); }

struct Tiles {
  std::int64_t block_m, block_n, block_k, warps, warps_k, stages, split_k;
  explicit Tiles(const Config& c)
      : block_m(c.get("BLOCK_M")), block_n(c.get("BLOCK_N")), block_k(c.get("BLOCK_K")),
        warps(c.get("WARPS")), warps_k(c.get("WARPS_K")), stages(c.get("STAGES")),
        split_k(c.get("SPLIT_K")) {}
  std::int64_t warps_n() const { return warps / warps_k; }
  // A thread's fp32 accumulators: its warp's W tiles times the block's activation tiles, 4 each.
  std::int64_t accumulators() const { return block_n / 16 / warps_n() * (block_m / 8) * 4; }
  // Mirrors the kernel's split-K-across-warps reduction buffer.
  std::int64_t reduction_bytes() const { return (warps_k - 1) * warps_n() * 32 * accumulators() * 4; }
  // Mirrors STAGE_BYTES in the kernel.
  std::int64_t smem_bytes() const {
    const std::int64_t a = block_m * (block_k + 8) * 2;
    const std::int64_t wq = block_n / 16 * (block_k / 32) * 256;
    const std::int64_t ws = block_n / 16 * (block_k / 32) * 16;
    return stages * (a + wq + ws);
  }
};

// Device-resident weights, shared by every workload of the same geometry and seed.
struct DeviceWeights {
  std::int64_t rows = 0, cols = 0;
  DeviceBuffer codes, scales;
};

std::shared_ptr<DeviceWeights> upload_weights(const PackedMxfp4& w) {
  auto d = std::make_shared<DeviceWeights>();
  d->rows = w.rows;
  d->cols = w.cols;
  d->codes = DeviceBuffer(w.codes.size());
  d->codes.upload(w.codes.data(), w.codes.size());
  d->scales = DeviceBuffer(w.scales.size());
  d->scales.upload(w.scales.data(), w.scales.size());
  return d;
}

std::size_t l2_bytes() {
  int device = 0, l2 = 0;
  TUNEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  TUNEBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  return static_cast<std::size_t>(l2);
}

CheckResult compare(const std::vector<std::uint16_t>& out, const std::vector<float>& ref) {
  CheckResult r;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double o = mxfp4::bf16_to_float(out[i]);
    if (!std::isfinite(o)) r.all_finite = false;
    diff += (o - ref[i]) * (o - ref[i]);
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  r.checked = out.size();
  r.rel_error = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  if (!std::isfinite(r.rel_error)) r.all_finite = false;
  return r;
}

// Float reference: the CPU GEMM's fp32 sums before rounding, so the check measures the GPU's
// error alone.
void reference_rows(const std::uint16_t* a, const mxfp4::Matrix& w, std::int64_t rows, float* out) {
  cpu_mxfp4_gemm_f32(a, w, out, rows, 64, std::min<std::int64_t>(512, w.cols));
}

}  // namespace

PackedMxfp4 pack_for_gpu(const mxfp4::Matrix& w) {
  if (w.rows % 16 != 0 || w.cols % 32 != 0) {
    throw std::invalid_argument("pack_for_gpu: rows must be a multiple of 16 and cols of 32, got " +
                                std::to_string(w.rows) + " x " + std::to_string(w.cols));
  }
  PackedMxfp4 p{w.rows, w.cols, std::vector<std::uint8_t>(w.codes.size()),
                std::vector<std::uint8_t>(w.scales.size())};
  const std::int64_t atoms_per_row = w.cols / 32;
  for (std::int64_t r = 0; r < w.rows; ++r) {
    for (std::int64_t c = 0; c < w.cols; ++c) {
      const std::uint8_t byte = w.codes[(r * w.cols + c) / 2];
      const std::uint8_t code = (c & 1) ? byte >> 4 : byte & 0xF;
      const auto pos = atom_pos(static_cast<int>(r & 15), static_cast<int>(c & 31));
      const std::int64_t atom = (r / 16) * atoms_per_row + c / 32;
      put_code(p.codes.data() + atom * 256, pos, code);
      if (c % 32 == 0) p.scales[atom * 16 + (r & 15)] = w.scales[r * atoms_per_row + c / 32];
    }
  }
  return p;
}

mxfp4::Matrix unpack_from_gpu(const std::uint8_t* codes, const std::uint8_t* scales,
                              std::int64_t cols, std::int64_t row0, std::int64_t nrows) {
  if (row0 % 16 != 0 || nrows % 16 != 0 || nrows <= 0 || cols % 32 != 0) {
    throw std::invalid_argument("unpack_from_gpu: rows must be multiples of 16 and cols of 32");
  }
  mxfp4::Matrix w{nrows, cols, std::vector<std::uint8_t>(nrows * cols / 2),
                  std::vector<std::uint8_t>(nrows * cols / 32)};
  const std::int64_t atoms_per_row = cols / 32;
  for (std::int64_t r = 0; r < nrows; ++r) {
    const std::int64_t gr = row0 + r;
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto pos = atom_pos(static_cast<int>(gr & 15), static_cast<int>(c & 31));
      const std::int64_t atom = (gr / 16) * atoms_per_row + c / 32;
      const std::uint8_t code = get_code(codes + atom * 256, pos);
      w.codes[(r * cols + c) / 2] |= static_cast<std::uint8_t>((c & 1) ? code << 4 : code);
      if (c % 32 == 0) w.scales[r * atoms_per_row + c / 32] = scales[atom * 16 + (gr & 15)];
    }
  }
  return w;
}

float kernel_decode(const PackedMxfp4& w, std::int64_t r, std::int64_t c, bool folded) {
  const auto pos = atom_pos(static_cast<int>(r & 15), static_cast<int>(c & 31));
  const std::int64_t atom = (r / 16) * (w.cols / 32) + c / 32;
  const std::uint32_t pair = raw_pair(load_word(w.codes.data() + atom * 256 + pos.word_byte), pos.j);
  const auto raw = static_cast<std::uint16_t>(pos.h ? pair >> 16 : pair & 0xFFFF);
  const std::uint8_t s = w.scales[atom * 16 + (r & 15)];
  if (folded && (s <= 128 || s == 0xFF)) {
    const std::uint16_t fold = s == 0xFF ? 0x7FC0 : static_cast<std::uint16_t>((s + 126) << 7);
    return mxfp4::bf16_to_float(bf16_mul(raw, fold));
  }
  return mxfp4::bf16_to_float(bf16_mul(bf16_mul(raw, 0x7E80), scale_bf16(s)));
}

bool is_dequant_config(const Config& config) { return config.has("DEQUANT_BF16"); }

bool is_decode_config(const Config& config) { return config.has("DECODE"); }

bool is_wgmma_config(const Config& config) { return config.has("WGMMA"); }

// Mirrors WG_SMEM_MAIN and the row indices after it in the kernel.
std::int64_t wgmma_smem_bytes(const Config& config) {
  const std::int64_t block_m = config.get("BLOCK_M"), block_k = config.get("BLOCK_K"), block_n = config.get("BLOCK_N");
  const std::int64_t stage = block_m * block_k * 2 + block_n / 16 * (block_k / 32) * (256 + 16);
  const std::int64_t out = block_m * (block_n + 8) * 2;
  return std::max(config.get("STAGES") * stage, out) + 2 * block_m * 4;
}

std::int64_t decode_block_n(const Config& config) { return config.has("BLOCK_N") ? config.get("BLOCK_N") : 16; }

// Dynamic shared memory of a decode config: each warp's ring of STAGES slots of UNROLL atoms
// (256 bytes of codes and 16 scales each); none for STAGES = 0 (W straight to registers).
std::int64_t decode_smem_bytes(const Config& config) {
  return config.get("WARPS_K") * config.get("STAGES") * config.get("UNROLL") * (256 + 16);
}

namespace {
const OpSwitch kFoldScale{
    "FLAGGEMS_MXFP4_FOLDSCALE",
    "`1`: the MXFP4 ops fold the exponent-bias correction into each block's scale (one multiply per element pair "
    "instead of two; bit-identical output). A compiled variant, not part of the config, so an A/B can replay "
    "identical configs both ways"};
}  // namespace

bool foldscale_from_env() { return kFoldScale.value(); }

namespace {

// The dynamic shared memory a launch of the config's main kernel asks for.
std::int64_t launch_smem_bytes(const Config& config) {
  if (is_decode_config(config)) return decode_smem_bytes(config);
  if (is_wgmma_config(config)) return wgmma_smem_bytes(config);
  return Tiles(config).smem_bytes();
}

CompileRequest mxfp4_request(const Config& config, bool moe, bool foldscale, const std::string& arch) {
  CompileRequest req;
  req.source = mxfp4_kernel_source();
  req.source_name = "mxfp4_gemm.cuh";
  req.arch = arch;
  if (is_dequant_config(config)) {
    // One kernel for every ALGO: cuBLASLt's algorithm is chosen at run time.
    req.options = {"-std=c++17", "-DDEQUANT_ONLY=1", "-DFOLDSCALE=" + std::to_string(foldscale ? 1 : 0)};
    return req;
  }
  // wgmma exists only in sm_90a, the architecture-specific variant of sm_90.
  if (is_wgmma_config(config) && arch == "sm_90") req.arch = "sm_90a";
  req.options = {"-std=c++17", "-DMOE=" + std::to_string(moe ? 1 : 0),
                 "-DFOLDSCALE=" + std::to_string(foldscale ? 1 : 0)};
  for (const auto& [name, value] : config.params()) {
    req.options.push_back("-D" + name + "=" + std::to_string(value));
  }
  // The kernel checks the launch's figure against its own layout (a static_assert), so that a
  // change to one side that the other misses fails the compilation instead of a launch.
  req.options.push_back("-DLAUNCH_SMEM_BYTES=" + std::to_string(launch_smem_bytes(config)));
  return req;
}

}  // namespace

JitBuild mxfp4_jit_build(const Config& config, bool moe, bool foldscale, const std::string& arch) {
  JitBuild build{mxfp4_request(config, moe, foldscale, arch), {}};
  if (is_dequant_config(config)) {
    build.kernels = {JitKernel{"mxfp4_dequant_bf16"}};
  } else {
    const char* main = is_decode_config(config) ? "mxfp4_decode" : is_wgmma_config(config) ? "mxfp4_wgmma" : "mxfp4_gemm";
    build.kernels = {JitKernel{main, static_cast<int>(launch_smem_bytes(config))}, JitKernel{"mxfp4_splitk_finish"}};
  }
  return build;
}

int mxfp4_block_threads(const Config& config) {
  if (is_decode_config(config)) return static_cast<int>(config.get("WARPS_K")) * 32;
  if (is_dequant_config(config)) return kMxfp4GridStrideThreads;
  return static_cast<int>(config.get("WARPS")) * 32;
}

CompileResult compile_mxfp4_kernel(const KernelCompiler& compiler, const Config& config, bool moe,
                                   bool foldscale, const std::string& arch) {
  return compiler.compile(mxfp4_request(config, moe, foldscale, arch));
}

namespace {

// The form a config takes in the JIT cache: the dequantize family's ALGO picks a cuBLASLt
// algorithm at run time, so all of them share one entry and one binary.
// A reference, not a copy: kernels() runs on every launch.
const Config& jit_config(const Config& config) {
  static const Config dequant{{"DEQUANT_BF16", 1}};
  return is_dequant_config(config) ? dequant : config;
}

}  // namespace

Mxfp4GpuOp::Mxfp4GpuOp(bool foldscale, std::uint8_t scale_lo, std::uint8_t scale_hi)
    : foldscale_(foldscale),
      scale_lo_(scale_lo),
      scale_hi_(scale_hi),
      // routed() is virtual: the builder runs only after construction, when it is the final op's.
      jit_("", [this](const Config& config, const std::string& arch) {
        return mxfp4_jit_build(config, routed(), foldscale_, arch);
      }) {}

Mxfp4GpuOp::~Mxfp4GpuOp() = default;

std::string Mxfp4GpuOp::kernel_version() const { return "mxfp4-" + content_hash(mxfp4_kernel_source()); }

std::vector<Config> Mxfp4GpuOp::config_space(SpaceKind kind) const {
  std::vector<Config> out;
  auto add = [&out](std::vector<ConfigAxis> axes) {
    for (auto& c : cartesian_product(axes)) {
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(std::move(c));
    }
  };
  // A wgmma family (SPLIT_K 1): BLOCK_M, its BLOCK_N, BLOCK_K, WARPS and STAGES, then the
  // optional axes it sets. An optional axis at its default (MMA_N 64, MMA_OVERLAP 0, MIN_BLOCKS
  // 1) is left out of the name, so that a kernel has one name in both spaces and one cache row.
  const auto add_wgmma = [&add](std::int64_t block_m, std::vector<std::int64_t> block_n, std::vector<std::int64_t> block_k,
                                std::int64_t warps, std::vector<std::int64_t> stages, std::vector<ConfigAxis> optional = {}) {
    std::vector<ConfigAxis> axes{{"WGMMA", {1}},   {"BLOCK_M", {block_m}}, {"BLOCK_N", std::move(block_n)},
                                 {"BLOCK_K", std::move(block_k)}, {"WARPS", {warps}}, {"STAGES", std::move(stages)},
                                 {"SPLIT_K", {1}}};
    axes.insert(axes.end(), optional.begin(), optional.end());
    add(std::move(axes));
  };
  // Few rows (both ops): the decode kernel (bench/kernels/mxfp4_gemm.cuh). The default keeps
  // the region where the winners of the decode sets sat on an H200 (2026-11-30, 45 configs of
  // BLOCK_M 8 x WARPS_K 1..16 x UNROLL 2/4/8 with each load path and vote setting, both ops):
  // 1 and 2 warps for the grouped op and for M = 64, 4 to 16 for the dense op at M <= 16, no
  // split-K; the ring (STAGES 2) won dense K = 512 (TP4 w2, 4 warps) and tied the register
  // path on EP w2 at M = 1 (16 warps, UNROLL 2).
  const auto add_decode = [&] {
    if (kind == SpaceKind::kExpanded) {
      add({{"DECODE", {1}}, {"BLOCK_M", {8, 16}}, {"WARPS_K", {1, 2, 4, 8, 16, 32}}, {"UNROLL", {2, 4, 8}},
           {"SPLIT_K", {1, 2, 4}}, {"STAGES", {0}}, {"SCALE_VOTE", {0, 1}}});
      // The ring with BLOCK_M 8 only: its prefetched activation fragments (UNROLL x BLOCK_M / 2
      // registers) spill under the 64-register bound at BLOCK_M 16.
      add({{"DECODE", {1}}, {"BLOCK_M", {8}}, {"WARPS_K", {1, 2, 4, 8, 16, 32}}, {"UNROLL", {2, 4, 8}},
           {"SPLIT_K", {1}}, {"STAGES", {1, 2}}, {"SCALE_VOTE", {1}}});
      // Two or four W tiles per block sharing each activation load (register path only; at
      // BLOCK_N 64 the 32-warp reduction buffer would exceed 48 KiB of static shared memory).
      add({{"DECODE", {1}}, {"BLOCK_M", {8}}, {"BLOCK_N", {32}}, {"WARPS_K", {1, 2, 4, 8, 16, 32}},
           {"UNROLL", {2, 4, 8}}, {"SPLIT_K", {1}}, {"STAGES", {0}}, {"SCALE_VOTE", {0, 1}}});
      add({{"DECODE", {1}}, {"BLOCK_M", {8}}, {"BLOCK_N", {64}}, {"WARPS_K", {1, 2, 4, 8, 16}},
           {"UNROLL", {2, 4, 8}}, {"SPLIT_K", {1}}, {"STAGES", {0}}, {"SCALE_VOTE", {0, 1}}});
      // The warps' sums added by the whole block (BLOCK_REDUCE 1), for the many-warp blocks
      // where it paid (its default 0 is left out of the name, as BLOCK_N 16 is).
      add({{"DECODE", {1}}, {"BLOCK_M", {8}}, {"WARPS_K", {8, 16, 32}}, {"UNROLL", {2, 4, 8}}, {"SPLIT_K", {1}},
           {"STAGES", {0}}, {"SCALE_VOTE", {0, 1}}, {"BLOCK_REDUCE", {1}}});
      add({{"DECODE", {1}}, {"BLOCK_M", {8}}, {"BLOCK_N", {32}}, {"WARPS_K", {8, 16, 32}}, {"UNROLL", {2, 4, 8}},
           {"SPLIT_K", {1}}, {"STAGES", {0}}, {"SCALE_VOTE", {0, 1}}, {"BLOCK_REDUCE", {1}}});
    } else {
      add({{"DECODE", {1}}, {"BLOCK_M", {8}}, {"WARPS_K", {1, 2, 4, 8, 16}}, {"UNROLL", {2, 4, 8}}, {"SPLIT_K", {1}},
           {"STAGES", {0}}, {"SCALE_VOTE", {0, 1}}});
      add({{"DECODE", {1}}, {"BLOCK_M", {8}}, {"WARPS_K", {4, 16}}, {"UNROLL", {2, 4}}, {"SPLIT_K", {1}},
           {"STAGES", {2}}, {"SCALE_VOTE", {1}}});
      add({{"DECODE", {1}}, {"BLOCK_M", {8}}, {"BLOCK_N", {32}}, {"WARPS_K", {4, 8, 16}}, {"UNROLL", {2, 4, 8}},
           {"SPLIT_K", {1}}, {"STAGES", {0}}, {"SCALE_VOTE", {1}}});
      // The winners of EP M = 8 and TP4 w13 M = 4..8 with the block adding the warps' sums: 3-5%
      // and 1-2% faster there (H200, 2026-12-01; slower with WARPS_K 2-4, so not for those).
      add({{"DECODE", {1}}, {"BLOCK_M", {8}}, {"BLOCK_N", {32}}, {"WARPS_K", {16}}, {"UNROLL", {2, 4}},
           {"SPLIT_K", {1}}, {"STAGES", {0}}, {"SCALE_VOTE", {1}}, {"BLOCK_REDUCE", {1}}});
      add({{"DECODE", {1}}, {"BLOCK_M", {8}}, {"WARPS_K", {16}}, {"UNROLL", {8}}, {"SPLIT_K", {1}}, {"STAGES", {0}},
           {"SCALE_VOTE", {0}}, {"BLOCK_REDUCE", {1}}});
    }
  };
  // Large M (dense only), last: dequantize W to BF16 once per call and hand the GEMM to
  // cuBLASLt, whose tensor-core kernels this op's mma.sync kernel does not match once the GEMM
  // is compute-bound; ALGO indexes cuBLASLt's heuristic candidates as in bf16_gemm.
  const auto add_dequant = [&] {
    if (routed()) return;
    add({{"DEQUANT_BF16", {1}},
         {"ALGO", kind == SpaceKind::kExpanded ? std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}
                                               : std::vector<std::int64_t>{0, 1, 2, 3}}});
  };
  if (kind == SpaceKind::kExpanded) {
    // A superset of the default space (hundreds of configs): the same families of tiles with
    // more values on every axis, so an exhaustive search can only find the same or better.
    add({{"BLOCK_M", {8, 16}}, {"BLOCK_N", {16, 32, 64}}, {"BLOCK_K", {256, 512}}, {"WARPS", {4}},
         {"WARPS_K", {1, 2, 4}}, {"STAGES", {3, 4, 6}}, {"SPLIT_K", {1, 2, 4}}});
    add({{"BLOCK_M", {8, 32}}, {"BLOCK_N", {32}}, {"BLOCK_K", {256, 512}}, {"WARPS", {4}}, {"WARPS_K", {2}},
         {"STAGES", {4}}, {"SPLIT_K", {1, 4}}});
    add({{"BLOCK_M", {32, 64}}, {"BLOCK_N", {64, 128}}, {"BLOCK_K", {64, 128, 256}}, {"WARPS", {4, 8}},
         {"WARPS_K", {1, 2}}, {"STAGES", {2, 3, 4}}, {"SPLIT_K", {1, 2, 4}}});
    add({{"BLOCK_M", {128}}, {"BLOCK_N", {128, 256}}, {"BLOCK_K", {64, 128}}, {"WARPS", {8}}, {"WARPS_K", {1}},
         {"STAGES", {2, 3, 4}}, {"SPLIT_K", {1}}});
    // Many rows on wgmma (sm_90a): W dequantized once per block into registers, the
    // activations read by the tensor cores from shared memory.
    add_wgmma(64, {128, 256}, {64, 128}, 8, {3, 4});
    add_wgmma(128, {128, 256}, {64, 128}, 8, {3, 4});
    add_wgmma(256, {128}, {64, 128}, 8, {3});
    add_wgmma(256, {128}, {64}, 8, {4});  // BLOCK_K 128 with 4 stages would take 290 KiB
    add_wgmma(64, {128}, {64, 128}, 4, {3, 4});
    // Wider instructions (MMA_N activation rows each) on the same tiles.
    add_wgmma(128, {128, 256}, {64, 128}, 8, {3, 4}, {{"MMA_N", {128}}});
    add_wgmma(256, {128}, {64, 128}, 8, {3}, {{"MMA_N", {128, 256}}});
    add_wgmma(256, {128}, {64}, 8, {4}, {{"MMA_N", {128, 256}}});
    // The last atom's MMAs of a K tile kept running into the next tile.
    add_wgmma(128, {256}, {64, 128}, 8, {3, 4}, {{"MMA_N", {128}}, {"MMA_OVERLAP", {1}}});
    // Two blocks an SM (at most 128 registers a thread), so that one block's barrier, prologue
    // and epilogue overlap another's MMAs.
    for (const bool overlap : {false, true}) {
      const std::vector<ConfigAxis> overlapping = overlap ? std::vector<ConfigAxis>{{"MMA_OVERLAP", {1}}} : std::vector<ConfigAxis>{};
      const auto with = [&](std::vector<ConfigAxis> first) {
        first.insert(first.end(), overlapping.begin(), overlapping.end());
        first.push_back({"MIN_BLOCKS", {2}});
        return first;
      };
      add_wgmma(128, {128}, {64}, 8, {3, 4}, with({}));
      add_wgmma(128, {128}, {64}, 8, {3, 4}, with({{"MMA_N", {128}}}));
      add_wgmma(64, {128}, {64, 128}, 8, {3, 4}, with({}));
    }
    // Beyond the edges where the exhaustive winners of the decode sets sat (BLOCK_N 64 and
    // STAGES 6 for BLOCK_M 8/16, on H200, 2026-11-30): wider and deeper decode tiles.
    add({{"BLOCK_M", {8, 16}}, {"BLOCK_N", {128}}, {"BLOCK_K", {256}}, {"WARPS", {4, 8}}, {"WARPS_K", {1}},
         {"STAGES", {3, 4, 6, 8}}, {"SPLIT_K", {1, 2, 4}}});
    add({{"BLOCK_M", {8, 16}}, {"BLOCK_N", {64}}, {"BLOCK_K", {256, 512}}, {"WARPS", {4}}, {"WARPS_K", {1}},
         {"STAGES", {8}}, {"SPLIT_K", {1, 2, 4}}});
    add_decode();
    add_dequant();
    return out;
  }
  // The default space (54 configs) is what an exhaustive search of the expanded space chose on
  // the decode sets on an H200, as families (docs/cache-and-autotuner.md has the figures).
  // Decode (few rows, weight-bound): 8/16-row tiles, 64 columns per block, deep pipelines, and
  // split-K where N alone gives too few blocks to keep the loads in flight.
  add({{"BLOCK_M", {8, 16}}, {"BLOCK_N", {64}}, {"BLOCK_K", {256}}, {"WARPS", {4}}, {"WARPS_K", {1}},
       {"STAGES", {3, 4, 6}}, {"SPLIT_K", {1, 2, 4}}});
  add({{"BLOCK_M", {8}}, {"BLOCK_N", {64}}, {"BLOCK_K", {512}}, {"WARPS", {4}}, {"WARPS_K", {1}},
       {"STAGES", {3, 6}}, {"SPLIT_K", {4}}});
  // Narrow N (N = 1024 shards): fewer columns per block and warps that split K, for more blocks.
  add({{"BLOCK_M", {8}}, {"BLOCK_N", {16}}, {"BLOCK_K", {256}}, {"WARPS", {4}}, {"WARPS_K", {4}},
       {"STAGES", {3, 4}}, {"SPLIT_K", {1, 4}}});
  add({{"BLOCK_M", {8}}, {"BLOCK_N", {32}}, {"BLOCK_K", {256}}, {"WARPS", {4}}, {"WARPS_K", {2}},
       {"STAGES", {4}}, {"SPLIT_K", {1, 4}}});
  // Late decode (M = 32..256): 8 warps on 32/64 x 128 tiles, each dequantized W fragment reused
  // over more rows.
  add({{"BLOCK_M", {32, 64}}, {"BLOCK_N", {128}}, {"BLOCK_K", {128}}, {"WARPS", {8}}, {"WARPS_K", {1}},
       {"STAGES", {2}}, {"SPLIT_K", {1, 2, 4}}});
  add({{"BLOCK_M", {32, 64}}, {"BLOCK_N", {128}}, {"BLOCK_K", {256}}, {"WARPS", {8}}, {"WARPS_K", {1}},
       {"STAGES", {3, 4}}, {"SPLIT_K", {1, 4}}});
  add({{"BLOCK_M", {32}}, {"BLOCK_N", {64}}, {"BLOCK_K", {256}}, {"WARPS", {8}}, {"WARPS_K", {2}},
       {"STAGES", {3}}, {"SPLIT_K", {1, 4}}});
  // The grouped op's prefill on wgmma: the three configs that won its prefill shapes (M >=
  // 4096) in a search of the expanded space's 57 on an H200 (2026-12-01, docs/perf-mxfp4.md):
  // 128 x 256 x 128 tiles at one block an SM, MMA_N 128, with and without MMA_OVERLAP.
  if (routed()) {
    add_wgmma(128, {256}, {128}, 8, {3}, {{"MMA_N", {128}}});
    add_wgmma(128, {256}, {128}, 8, {3, 4}, {{"MMA_N", {128}}, {"MMA_OVERLAP", {1}}});
  }
  // Prefill: the tiles plain autotune chose on the prefill sets (wide tiles, 4 or 8 warps).
  add({{"BLOCK_M", {32, 64}}, {"BLOCK_N", {128}}, {"BLOCK_K", {128}}, {"WARPS", {4}}, {"WARPS_K", {1}},
       {"STAGES", {3}}, {"SPLIT_K", {1, 4}}});
  add({{"BLOCK_M", {128}}, {"BLOCK_N", {128, 256}}, {"BLOCK_K", {64, 128}}, {"WARPS", {8}}, {"WARPS_K", {1}},
       {"STAGES", {3, 4}}, {"SPLIT_K", {1}}});
  add_decode();
  add_dequant();
  return out;
}

bool Mxfp4GpuOp::can_implement(const Config& config, const Shape& shape, const DeviceInfo& device) const {
  if (is_dequant_config(config)) {
    return !routed() && config.has("ALGO") && config.get("DEQUANT_BF16") == 1 && config.get("ALGO") >= 0 &&
           shape.m >= kDequantMinRows && shape.n % 16 == 0 && shape.k % 32 == 0;
  }
  if (is_decode_config(config)) {
    for (const char* name : {"BLOCK_M", "WARPS_K", "UNROLL", "SPLIT_K", "STAGES", "SCALE_VOTE"}) {
      if (!config.has(name)) return false;
    }
    const std::int64_t block_m = config.get("BLOCK_M"), warps_k = config.get("WARPS_K"),
                       unroll = config.get("UNROLL"), split_k = config.get("SPLIT_K");
    const std::int64_t stages = config.get("STAGES"), vote = config.get("SCALE_VOTE");
    const std::int64_t block_reduce = config.has("BLOCK_REDUCE") ? config.get("BLOCK_REDUCE") : 0;
    if (block_reduce != 0 && (block_reduce != 1 || warps_k == 1)) return false;
    // Bounds first, so that the products below cannot overflow.
    if (config.get("DECODE") != 1 || (block_m != 8 && block_m != 16) || warps_k < 1 ||
        warps_k > device.max_threads_per_block / 32 || unroll < 1 || unroll > 32 || split_k < 1 ||
        split_k > 64 || stages < 0 || stages > 8 || !(vote == 1 || (vote == 0 && stages == 0))) {
      return false;
    }
    const std::int64_t block_n = decode_block_n(config);
    if (block_n != 16 && ((block_n != 32 && block_n != 64) || stages != 0)) return false;
    // The warps' partial sums (all of them with BLOCK_REDUCE, all but warp 0's without): static
    // shared memory, at most 48 KiB.
    const std::int64_t red_bytes = (warps_k - 1 + block_reduce) * 32 * (block_n / 16) * (block_m / 8) * 4 * 4;
    return red_bytes <= 48 * 1024 &&
           decode_smem_bytes(config) + red_bytes <= static_cast<std::int64_t>(device.smem_per_block_optin) &&
           shape.m <= kDecodeMaxRows && shape.n % block_n == 0 && shape.k % (32 * warps_k * unroll * split_k) == 0;
  }
  if (is_wgmma_config(config)) {
    for (const char* name : {"BLOCK_M", "BLOCK_N", "BLOCK_K", "WARPS", "STAGES", "SPLIT_K"}) {
      if (!config.has(name)) return false;
    }
    const std::int64_t block_m = config.get("BLOCK_M"), block_n = config.get("BLOCK_N"), block_k = config.get("BLOCK_K"),
                       warps = config.get("WARPS"), stages = config.get("STAGES"), split_k = config.get("SPLIT_K");
    // wgmma is sm_90a's alone: other architectures neither compile nor run it.
    if (config.get("WGMMA") != 1 || device.cc_major != 9 || device.cc_minor != 0) return false;
    if (block_m < 64 || block_m > 256 || block_m % 64 || (warps != 4 && warps != 8) || block_n < 64 ||
        block_n > 1024 || block_n % (64 * warps / 4) || block_k < 32 || block_k > 512 || block_k % 32 || stages < 2 ||
        stages > 8 || split_k != 1) {
      return false;
    }
    // MMA_N (optional, 64 when absent): activation rows per wgmma, a divisor of BLOCK_M.
    const std::int64_t mma_n = config.has("MMA_N") ? config.get("MMA_N") : 64;
    if ((mma_n != 64 && mma_n != 128 && mma_n != 256) || block_m % mma_n) return false;
    // MMA_OVERLAP (optional, 0 or 1): 1 needs a stage beyond the one computed and the one in
    // flight, and an even number of atoms a K tile.
    const std::int64_t overlap = config.has("MMA_OVERLAP") ? config.get("MMA_OVERLAP") : 0;
    if ((overlap != 0 && overlap != 1) || (overlap == 1 && (stages < 3 || block_k % 64))) return false;
    // MIN_BLOCKS (optional): blocks an SM holds at once, within sm_90's 2048 threads and 228 KiB
    // of shared memory, 1 KiB of it reserved per block (CUDA C++ Programming Guide, "Compute
    // Capability 9.0").
    const std::int64_t min_blocks = config.has("MIN_BLOCKS") ? config.get("MIN_BLOCKS") : 1;
    if (min_blocks < 1 || min_blocks > 16 || min_blocks * warps * 32 > 2048 || min_blocks * (wgmma_smem_bytes(config) + 1024) > 228 * 1024) {
      return false;
    }
    // A thread's accumulators: BLOCK_M / 2 per 64-row W tile of its warpgroup; with 64 more
    // registers for everything else within what MIN_BLOCKS leaves a thread of the 64 Ki
    // registers an SM (ptxas took 124-128 for 64 accumulators at two blocks, H200 build 2026-12-01).
    const std::int64_t accumulators = block_n / 64 / (warps / 4) * block_m / 2;
    if (accumulators > 128 || accumulators + 64 > 65536 / (min_blocks * warps * 32)) return false;
    return shape.m >= kWgmmaMinRows && shape.n % block_n == 0 && shape.k % (block_k * split_k) == 0 &&
           wgmma_smem_bytes(config) <= static_cast<std::int64_t>(device.smem_per_block_optin);
  }
  const Tiles t(config);
  if (t.block_m % 8 || t.warps < 1 || t.warps > 32 || t.warps_k < 1 || t.warps_k > 32 || t.warps % t.warps_k ||
      t.block_n % (16 * t.warps_n()) ||
      t.block_k % (32 * t.warps_k) || t.stages < 2 || t.split_k < 1) {
    return false;
  }
  if (shape.n % t.block_n || shape.k % (t.block_k * t.split_k)) return false;
  if (t.accumulators() > 128) return false;
  if (t.warps * 32 > device.max_threads_per_block) return false;
  return t.smem_bytes() <= static_cast<std::int64_t>(device.smem_per_block_optin) &&
         t.reduction_bytes() <= t.smem_bytes();
}

void Mxfp4GpuOp::precompile(const std::vector<Config>& configs, const DeviceInfo& device, int threads) const {
  std::vector<Config> keys;
  keys.reserve(configs.size());
  for (const auto& c : configs) keys.push_back(jit_config(c));
  jit_.precompile(keys, device.arch(), threads);
}

const JitKernels& Mxfp4GpuOp::kernels(const Config& config) const {
  const Config& key = jit_config(config);
  try {
    return jit_.get(key);
  } catch (const CompileError& e) {
    std::cerr << name() << " [" << key.str() << "]: compile failed:\n" << e.log() << "\n";
    throw;
  }
}

void Mxfp4GpuOp::dequantize(const void* wq, const void* ws, void* wb, std::int64_t rows, std::int64_t k,
                            cudaStream_t stream) const {
  static const Config dequant{{"DEQUANT_BF16", 1}};
  const JitKernels& kern = kernels(dequant);
  int n = static_cast<int>(rows), kk = static_cast<int>(k);
  void* args[] = {&wq, &ws, &wb, &n, &kk};
  const long long chunks = static_cast<long long>(rows) * (k / 8);
  const int threads = kMxfp4GridStrideThreads;
  const unsigned blocks = static_cast<unsigned>(std::min<long long>((chunks + threads - 1) / threads, 132 * 32));
  TUNEBENCH_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kern.kernel(0)), dim3(blocks),
                                        dim3(static_cast<unsigned>(threads)), args, 0, stream));
}

void Mxfp4GpuOp::launch(const Config& config, const void* a, const void* wq, const void* ws, void* y,
                        float* yacc, int rows, int n, int k, int grid_rows, const void* tiles,
                        const int* a_rows, const int* out_rows, cudaStream_t stream) const {
  const JitKernels& kern = kernels(config);
  void* args[] = {&a, &wq, &ws, &y, &yacc, &rows, &n, &k, &tiles, &a_rows, &out_rows};
  const bool decode = is_decode_config(config);
  const std::int64_t split_k = config.get("SPLIT_K");
  const auto block_n = decode ? decode_block_n(config) : config.get("BLOCK_N");
  const int threads = mxfp4_block_threads(config);
  const dim3 grid(static_cast<unsigned>(n / block_n), static_cast<unsigned>(grid_rows), static_cast<unsigned>(split_k));
  TUNEBENCH_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kern.kernel(0)), grid,
                                        dim3(static_cast<unsigned>(threads)), args,
                                        static_cast<std::size_t>(kern.dynamic_smem_bytes(0)), stream));
  if (split_k > 1) {
    long long count = static_cast<long long>(rows) * n;
    void* fargs[] = {&yacc, &y, &count};
    constexpr int finish_threads = kMxfp4GridStrideThreads;
    const unsigned blocks = static_cast<unsigned>(std::min<long long>((count + finish_threads - 1) / finish_threads, 132 * 16));
    TUNEBENCH_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kern.kernel(1)), dim3(blocks),
                                          dim3(finish_threads), fargs, 0, stream));
  }
}

// ---------------------------------------------------------------------------------------------
// Dense

namespace {

// A dense op's weights: as generated (packed, the reference's canonical form) and their device
// copies, enough to rotate through more than twice the L2. They depend on the geometry and the
// seed, not on M: the keys of one (N, K) share them, so a sweep or a run over the M of a set
// generates them once.
struct DenseWeights {
  PackedMxfp4 host;
  std::vector<DeviceWeights> copies;
};

struct DenseWorkload final : Workload {
  Shape shape;
  std::shared_ptr<DenseWeights> weights;
  const PackedMxfp4& w_host() const { return weights->host; }
  std::vector<std::uint16_t> x_host;
  DeviceBuffer x, y, yacc;
  DeviceBuffer w_bf16;                // the dequantize-then-GEMM path's W, made on first use
  std::unique_ptr<CublasLtGemm> lt;   // its cuBLASLt state, likewise
  std::size_t calls = 0;
  std::size_t variants() const override { return weights->copies.size(); }
  std::vector<float> ref;  // computed on the first check
  std::vector<std::uint16_t> out;  // of the last check
};

}  // namespace

namespace {

// The last few geometries' dense weights (a set has 2-4 of them), kept for the run.
std::mutex g_dense_mutex;
std::vector<std::pair<std::tuple<std::int64_t, std::int64_t, std::uint64_t, int, int>, std::shared_ptr<DenseWeights>>>
    g_dense;  // most recently used last
constexpr std::size_t kDenseKept = 4;

std::shared_ptr<DenseWeights> dense_weights(const Shape& shape, std::uint64_t seed, std::uint8_t lo, std::uint8_t hi) {
  int device = 0;
  TUNEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  const auto key = std::make_tuple(shape.n, shape.k, seed, int(lo) << 8 | hi, device);
  std::lock_guard<std::mutex> lock(g_dense_mutex);
  const auto it = std::find_if(g_dense.begin(), g_dense.end(), [&](const auto& e) { return e.first == key; });
  if (it != g_dense.end()) {
    auto found = *it;
    g_dense.erase(it);
    g_dense.push_back(found);
    return found.second;
  }
  auto w = std::make_shared<DenseWeights>();
  // Random codes and scales are as random in the packed layout as in the canonical one.
  auto random = random_mxfp4(shape.n, shape.k, seed + 1, lo, hi);
  w->host = PackedMxfp4{shape.n, shape.k, std::move(random.codes), std::move(random.scales)};
  const std::size_t weight_bytes = w->host.codes.size() + w->host.scales.size();
  const std::size_t copies = std::max<std::size_t>(1, (2 * l2_bytes() + weight_bytes - 1) / weight_bytes);
  const auto first = upload_weights(w->host);
  for (std::size_t i = 0; i < copies; ++i) {
    DeviceWeights d{shape.n, shape.k, DeviceBuffer(weight_bytes - w->host.scales.size()),
                    DeviceBuffer(w->host.scales.size())};
    TUNEBENCH_CUDA_CHECK(cudaMemcpy(d.codes.get(), first->codes.get(), d.codes.bytes(), cudaMemcpyDeviceToDevice));
    TUNEBENCH_CUDA_CHECK(cudaMemcpy(d.scales.get(), first->scales.get(), d.scales.bytes(), cudaMemcpyDeviceToDevice));
    w->copies.push_back(std::move(d));
  }
  if (g_dense.size() >= kDenseKept) g_dense.erase(g_dense.begin());
  g_dense.emplace_back(key, w);
  return w;
}

}  // namespace

std::unique_ptr<Workload> Mxfp4GemmOp::prepare(const Shape& shape, std::uint64_t seed) const {
  auto w = std::make_unique<DenseWorkload>();
  w->shape = shape;
  w->weights = dense_weights(shape, seed, scale_lo_, scale_hi_);
  w->x_host = random_bf16(static_cast<std::size_t>(shape.m * shape.k), seed);
  w->x = DeviceBuffer(w->x_host.size() * 2);
  w->x.upload(w->x_host.data(), w->x_host.size() * 2);
  w->y = DeviceBuffer(static_cast<std::size_t>(shape.m * shape.n) * 2);
  w->yacc = DeviceBuffer(static_cast<std::size_t>(shape.m * shape.n) * 4);
  TUNEBENCH_CUDA_CHECK(cudaMemset(w->yacc.get(), 0, w->yacc.bytes()));
  return w;
}

void Mxfp4GemmOp::run(Workload& work, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<DenseWorkload&>(work);
  const auto& weights = w.weights->copies[w.calls++ % w.weights->copies.size()];
  if (is_dequant_config(config)) {
    run_dequant(w, weights.codes.get(), weights.scales.get(), config, stream);
    return;
  }
  launch(config, w.x.get(), weights.codes.get(), weights.scales.get(), w.y.get(), w.yacc.as<float>(),
         static_cast<int>(w.shape.m), static_cast<int>(w.shape.n), static_cast<int>(w.shape.k),
         ceil_div(w.shape.m, config.get("BLOCK_M")), nullptr, nullptr, nullptr, stream);
}

void Mxfp4GemmOp::run_dequant(Workload& work, const void* wq, const void* ws, const Config& config,
                              cudaStream_t stream) const {
  auto& w = dynamic_cast<DenseWorkload&>(work);
  if (!w.lt) {
    w.w_bf16 = DeviceBuffer(static_cast<std::size_t>(w.shape.n * w.shape.k) * 2);
    w.lt = std::make_unique<CublasLtGemm>(w.shape.m, w.shape.n, w.shape.k, name());
  }
  dequantize(wq, ws, w.w_bf16.get(), w.shape.n, w.shape.k, stream);
  w.lt->run(config.get("ALGO"), w.w_bf16.get(), w.x.get(), w.y.get(), stream);
}

CheckResult Mxfp4GemmOp::check(Workload& work, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<DenseWorkload&>(work);
  if (w.ref.empty()) {
    const auto canonical = unpack_from_gpu(w.w_host().codes.data(), w.w_host().scales.data(), w.shape.k, 0, w.shape.n);
    w.ref.resize(static_cast<std::size_t>(w.shape.m * w.shape.n));
    reference_rows(w.x_host.data(), canonical, w.shape.m, w.ref.data());
  }
  TUNEBENCH_CUDA_CHECK(cudaMemsetAsync(w.y.get(), 0xFF, w.y.bytes(), stream));  // bf16 NaN
  run(work, config, stream);
  TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  TUNEBENCH_CUDA_CHECK(cudaGetLastError());
  w.out.resize(w.ref.size());
  w.y.download(w.out.data(), w.out.size() * 2);
  return compare(w.out, w.ref);
}

double Mxfp4GemmOp::flops(const Shape& s) const { return gemm_flops(dim(s.m), dim(s.n), dim(s.k)); }

double Mxfp4GemmOp::bytes(const Shape& s) const {
  return gemm_bytes(dim(s.m), dim(s.n), dim(s.k), kMxfp4WeightBytes);
}

// ---------------------------------------------------------------------------------------------
// Grouped MoE

namespace {

constexpr int kRoutings = kMoeRoutings;

struct Routing {
  std::vector<int> sorted;   // pairs in expert order
  std::vector<int> expert_count;
  DeviceBuffer a_rows, out_rows;
  std::map<std::int64_t, std::pair<DeviceBuffer, int>> tiles;  // by BLOCK_M: tile list, count
};

struct MoeWorkload final : Workload {
  Shape shape;
  bool pair_input = false;  // w2: A has one row per routed pair
  std::int64_t rows_a = 0, pairs = 0;
  std::shared_ptr<DeviceWeights> w;
  std::vector<std::uint16_t> a_host;
  DeviceBuffer a, y, yacc;
  std::vector<Routing> routings;
  std::size_t calls = 0;
  std::size_t variants() const override { return routings.size(); }
  std::vector<float> ref;  // routing 0
  std::vector<std::uint16_t> out;  // of the last check
};

// Weights of all experts of one geometry stay on the device for the whole run: regenerating
// gigabytes per benchmark would dominate it.
std::mutex g_weights_mutex;
std::map<std::tuple<std::int64_t, std::int64_t, std::uint64_t, int, int>, std::shared_ptr<DeviceWeights>> g_weights;

std::shared_ptr<DeviceWeights> moe_weights(const Shape& s, std::uint64_t seed, std::uint8_t lo, std::uint8_t hi) {
  int device = 0;
  TUNEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(g_weights_mutex);
  auto key = std::make_tuple(s.experts * s.n, s.k, seed, int(lo) << 8 | hi, device);
  auto& slot = g_weights[key];
  if (!slot) {
    auto random = random_mxfp4(s.experts * s.n, s.k, seed + 1, lo, hi);
    slot = upload_weights(PackedMxfp4{s.experts * s.n, s.k, std::move(random.codes), std::move(random.scales)});
  }
  return slot;
}

Routing make_routing(const Shape& s, bool pair_input, std::uint64_t seed) {
  MoeRouting routed = route_tokens(s, seed);
  const std::vector<int> rows = a_rows(routed, pair_input, s.top_k);
  Routing r;
  r.sorted = std::move(routed.sorted);
  r.expert_count = std::move(routed.expert_count);
  r.a_rows = DeviceBuffer(rows.size() * sizeof(int));
  r.a_rows.upload(rows.data(), rows.size() * sizeof(int));
  r.out_rows = DeviceBuffer(r.sorted.size() * sizeof(int));
  r.out_rows.upload(r.sorted.data(), r.sorted.size() * sizeof(int));
  return r;
}

// One tile per BLOCK_M run of an expert's pairs: {expert, first sorted pair, count, 0}.
std::pair<DeviceBuffer, int>& tiles_for(Routing& r, std::int64_t block_m) {
  auto it = r.tiles.find(block_m);
  if (it != r.tiles.end()) return it->second;
  std::vector<int> tiles;
  int start = 0;
  for (std::size_t e = 0; e < r.expert_count.size(); ++e) {
    for (int i = 0; i < r.expert_count[e]; i += static_cast<int>(block_m)) {
      tiles.insert(tiles.end(), {static_cast<int>(e), start + i,
                                 std::min(static_cast<int>(block_m), r.expert_count[e] - i), 0});
    }
    start += r.expert_count[e];
  }
  DeviceBuffer buf(tiles.size() * sizeof(int));
  buf.upload(tiles.data(), tiles.size() * sizeof(int));
  return r.tiles[block_m] = {std::move(buf), static_cast<int>(tiles.size() / 4)};
}

}  // namespace

bool Mxfp4MoeOp::can_implement(const Config& config, const Shape& shape, const DeviceInfo& device) const {
  return Mxfp4GpuOp::can_implement(config, shape, device) && shape.m * shape.top_k < (1LL << 31);
}

namespace {
std::mutex g_bf16_mutex;
std::map<std::tuple<std::int64_t, std::int64_t, std::uint64_t, int, int>, std::shared_ptr<const DeviceBuffer>>
    g_bf16_weights;
}  // namespace

std::shared_ptr<const DeviceBuffer> Mxfp4MoeOp::dequantized_weights(const Shape& shape, std::uint64_t seed) const {
  const std::int64_t rows = shape.experts * shape.n;
  if (rows <= 0 || rows % 16 != 0 || shape.k <= 0 || shape.k % 32 != 0) {
    throw std::invalid_argument("mxfp4_moe: dequantized weights need experts * N a multiple of 16 and K of 32, got " +
                                std::to_string(rows) + " x " + std::to_string(shape.k));
  }
  int device = 0;
  TUNEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  const auto packed = moe_weights(shape, seed, scale_lo_, scale_hi_);
  std::lock_guard<std::mutex> lock(g_bf16_mutex);
  auto& slot = g_bf16_weights[std::make_tuple(rows, shape.k, seed, int(scale_lo_) << 8 | scale_hi_, device)];
  if (!slot) {
    auto wb = std::make_shared<DeviceBuffer>(static_cast<std::size_t>(rows * shape.k) * 2);
    dequantize(packed->codes.get(), packed->scales.get(), wb->get(), rows, shape.k, nullptr);
    TUNEBENCH_CUDA_CHECK(cudaDeviceSynchronize());
    slot = std::move(wb);
  }
  return slot;
}

std::unique_ptr<Workload> Mxfp4MoeOp::prepare(const Shape& shape, std::uint64_t seed) const {
  auto w = std::make_unique<MoeWorkload>();
  w->shape = shape;
  w->pair_input = pair_input(shape);
  w->pairs = shape.m * shape.top_k;
  w->rows_a = w->pair_input ? w->pairs : shape.m;
  w->w = moe_weights(shape, seed, scale_lo_, scale_hi_);
  w->a_host = random_bf16(static_cast<std::size_t>(w->rows_a * shape.k), seed);
  w->a = DeviceBuffer(w->a_host.size() * 2);
  w->a.upload(w->a_host.data(), w->a_host.size() * 2);
  w->y = DeviceBuffer(static_cast<std::size_t>(w->pairs * shape.n) * 2);
  w->yacc = DeviceBuffer(static_cast<std::size_t>(w->pairs * shape.n) * 4);
  TUNEBENCH_CUDA_CHECK(cudaMemset(w->yacc.get(), 0, w->yacc.bytes()));
  // Independent generators: made side by side, the same routings as one after the other.
  w->routings.resize(kRoutings);
  int device = 0;
  TUNEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  std::vector<std::exception_ptr> failed(kRoutings);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < kRoutings; ++i) {
    try {
      TUNEBENCH_CUDA_CHECK(cudaSetDevice(device));  // a new thread starts on device 0
      w->routings[i] = make_routing(shape, w->pair_input, routing_seed(seed, i));
    } catch (...) {
      failed[i] = std::current_exception();
    }
  }
  for (const auto& f : failed) {
    if (f) std::rethrow_exception(f);
  }
  return w;
}

void Mxfp4MoeOp::run(Workload& work, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<MoeWorkload&>(work);
  // Tile lists for every routing on the first run of a BLOCK_M, so later runs (in a captured
  // CUDA graph, say) never allocate.
  for (auto& routing : w.routings) tiles_for(routing, config.get("BLOCK_M"));
  launch_routing(w, w.calls++ % w.routings.size(), config, stream);
}

void Mxfp4MoeOp::launch_routing(Workload& work, std::size_t routing, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<MoeWorkload&>(work);
  Routing& r = w.routings[routing];
  auto& [tiles, count] = tiles_for(r, config.get("BLOCK_M"));
  launch(config, w.a.get(), w.w->codes.get(), w.w->scales.get(), w.y.get(), w.yacc.as<float>(),
         static_cast<int>(w.pairs), static_cast<int>(w.shape.n), static_cast<int>(w.shape.k), count, tiles.get(),
         r.a_rows.as<int>(), r.out_rows.as<int>(), stream);
}

CheckResult Mxfp4MoeOp::check(Workload& work, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<MoeWorkload&>(work);
  const Shape& s = w.shape;
  Routing& r = w.routings[0];
  if (w.ref.empty()) {
    w.ref.assign(static_cast<std::size_t>(w.pairs * s.n), 0.0f);
    const std::size_t expert_codes = static_cast<std::size_t>(s.n * s.k / 2), expert_scales = expert_codes / 16;
    std::vector<std::uint8_t> codes(expert_codes), scales(expert_scales);
    std::size_t start = 0;
    for (std::int64_t e = 0; e < s.experts; ++e) {
      const int count = r.expert_count[e];
      if (count == 0) continue;
      TUNEBENCH_CUDA_CHECK(cudaMemcpy(codes.data(), w.w->codes.as<std::uint8_t>() + e * expert_codes, expert_codes,
                                      cudaMemcpyDeviceToHost));
      TUNEBENCH_CUDA_CHECK(cudaMemcpy(scales.data(), w.w->scales.as<std::uint8_t>() + e * expert_scales,
                                      expert_scales, cudaMemcpyDeviceToHost));
      const auto canonical = unpack_from_gpu(codes.data(), scales.data(), s.k, 0, s.n);
      std::vector<std::uint16_t> rows(static_cast<std::size_t>(count * s.k));
      for (int i = 0; i < count; ++i) {
        const int p = r.sorted[start + i];
        const std::int64_t src = w.pair_input ? p : p / s.top_k;
        std::copy_n(w.a_host.data() + src * s.k, s.k, rows.data() + i * s.k);
      }
      std::vector<float> out(static_cast<std::size_t>(count * s.n));
      reference_rows(rows.data(), canonical, count, out.data());
      for (int i = 0; i < count; ++i) {
        std::copy_n(out.data() + i * s.n, s.n, w.ref.data() + static_cast<std::int64_t>(r.sorted[start + i]) * s.n);
      }
      start += count;
    }
  }
  TUNEBENCH_CUDA_CHECK(cudaMemsetAsync(w.y.get(), 0xFF, w.y.bytes(), stream));
  launch_routing(w, 0, config, stream);
  TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  TUNEBENCH_CUDA_CHECK(cudaGetLastError());
  w.out.resize(w.ref.size());
  w.y.download(w.out.data(), w.out.size() * 2);
  return compare(w.out, w.ref);
}

std::vector<std::uint16_t> last_output(const Workload& work) {
  if (auto* d = dynamic_cast<const DenseWorkload*>(&work)) return d->out;
  if (auto* m = dynamic_cast<const MoeWorkload*>(&work)) return m->out;
  throw std::invalid_argument("last_output: not an MXFP4 op's workload");
}

double Mxfp4MoeOp::flops(const Shape& s) const { return gemm_flops(dim(s.m * s.top_k), dim(s.n), dim(s.k)); }

double Mxfp4MoeOp::bytes(const Shape& s) const { return moe_bytes(s, kMxfp4WeightBytes); }

}  // namespace tunebench::bench
