#include "mxfp4_kernel_axes.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace tunebench::bench {
namespace {

constexpr std::int64_t kUnbounded = std::numeric_limits<std::int64_t>::max();

KernelAxis one_of(std::string name, std::vector<std::int64_t> choices, std::optional<std::int64_t> fallback = {}) {
  return {std::move(name), std::move(choices), 0, 0, 1, fallback};
}

KernelAxis range(std::string name, std::int64_t min, std::int64_t max, std::int64_t multiple = 1,
                 std::optional<std::int64_t> fallback = {}) {
  return {std::move(name), {}, min, max, multiple, fallback};
}

// Per-axis bounds only; what relates axes to each other, to the shape or to the device is in
// can_implement (bench/mxfp4_can_implement.cpp). The kernels' #error checks and static_asserts
// hold the same rules on the device side.
std::vector<KernelFamily> make_families() {
  std::vector<KernelFamily> f;
  f.push_back({Mxfp4Family::kTile,
               "",
               "mxfp4_tile.cuh",
               "mxfp4_gemm",
               true,
               {range("BLOCK_M", 8, kUnbounded, 8), range("BLOCK_N", 16, kUnbounded, 16),
                range("BLOCK_K", 32, kUnbounded, 32), range("WARPS", 1, 32), range("WARPS_K", 1, 32),
                range("STAGES", 2, kUnbounded), range("SPLIT_K", 1, kUnbounded)}});
  // BLOCK_N 16 is one W tile a block, the kernel as it was before BLOCK_N; BLOCK_REDUCE 0 has
  // warp 0 add the warps' sums. WARPS_K's bound is the device's threads a block (can_implement).
  f.push_back({Mxfp4Family::kDecode,
               "DECODE",
               "mxfp4_decode.cuh",
               "mxfp4_decode",
               true,
               {one_of("DECODE", {1}), one_of("BLOCK_M", {8, 16}), one_of("BLOCK_N", {16, 32, 64}, 16),
                range("WARPS_K", 1, kUnbounded), range("UNROLL", 1, 32), range("SPLIT_K", 1, 64), range("STAGES", 0, 8),
                one_of("SCALE_VOTE", {0, 1}), one_of("BLOCK_REDUCE", {0, 1}, 0)}});
  // MMA_N 64 is one m64n64k16 a piece of activation rows, MMA_OVERLAP 0 waits for each K tile's
  // MMAs, MIN_BLOCKS 1 asks no register bound beyond one block an SM.
  f.push_back(
      {Mxfp4Family::kWgmma,
       "WGMMA",
       "mxfp4_wgmma.cuh",
       "mxfp4_wgmma",
       true,
       {one_of("WGMMA", {1}), range("BLOCK_M", 64, 256, 64), range("BLOCK_N", 64, 1024, 64),
        range("BLOCK_K", 32, 512, 32), one_of("WARPS", {4, 8}), range("STAGES", 2, 8), one_of("SPLIT_K", {1}),
        one_of("MMA_N", {64, 128, 256}, 64), one_of("MMA_OVERLAP", {0, 1}, 0), range("MIN_BLOCKS", 1, 16, 1, 1)}});
  // The warp-specialized wgmma family: PRODUCERS producer warps (1 when absent) and CONSUMERS
  // warpgroups, split-K for the middle band. BLOCK_K a multiple of 64 (an even number of atoms a tile, which its
  // register double buffer of W fragments needs); MMA_N 32 serves M = 32. W_SMEM 1 (0 when
  // absent) has the producers dequantize W into shared memory for wgmma with both operands there;
  // CLUSTER_REDUCE 1 (0 when absent) sums the split-K blocks in a cluster, not by atomics; TMA 1
  // (0 when absent) copies the dense op's tiles with the Tensor Memory Accelerator.
  f.push_back({Mxfp4Family::kWgmmaWs,
               "WGMMA_WS",
               "mxfp4_wgmma_ws.cuh",
               "mxfp4_wgmma_ws",
               true,
               {one_of("WGMMA_WS", {1}), range("BLOCK_M", 32, 256, 32), range("BLOCK_N", 64, 1024, 64),
                range("BLOCK_K", 64, 512, 64), one_of("CONSUMERS", {1, 2}), range("STAGES", 2, 8),
                range("SPLIT_K", 1, 16), one_of("MMA_N", {32, 64, 128, 256}), one_of("PRODUCERS", {1, 4, 8}, 1),
                one_of("W_SMEM", {0, 1}, 0), one_of("CLUSTER_REDUCE", {0, 1}, 0), one_of("TMA", {0, 1}, 0)}});
  // One binary for every ALGO: it indexes cuBLASLt's heuristic candidates at run time.
  KernelAxis algo = range("ALGO", 0, kUnbounded);
  algo.define = false;
  KernelAxis marker = one_of("DEQUANT_BF16", {1});
  marker.define = false;
  f.push_back(
      {Mxfp4Family::kDequant, "DEQUANT_BF16", "mxfp4_dequant.cuh", "mxfp4_dequant_bf16", false, {marker, algo}});
  return f;
}

}  // namespace

bool KernelAxis::admits(std::int64_t value) const {
  if (!choices.empty()) return std::find(choices.begin(), choices.end(), value) != choices.end();
  return value >= min && value <= max && value % multiple == 0;
}

const KernelAxis* KernelFamily::axis(const std::string& name) const {
  const auto it = std::find_if(axes.begin(), axes.end(), [&](const KernelAxis& a) { return a.name == name; });
  return it == axes.end() ? nullptr : &*it;
}

std::int64_t KernelFamily::value(const Config& config, const std::string& name) const {
  const KernelAxis* a = axis(name);
  if (a == nullptr) throw ConfigError(kernel + ": '" + name + "' is not one of its axes");
  if (!config.has(name) && a->fallback) return *a->fallback;
  return config.get(name);
}

bool KernelFamily::admits(const Config& config) const {
  for (const auto& [name, v] : config.params()) {
    const KernelAxis* a = axis(name);
    if (a == nullptr || !a->admits(v)) return false;
  }
  return std::all_of(axes.begin(), axes.end(), [&](const KernelAxis& a) { return a.fallback || config.has(a.name); });
}

std::vector<Config> KernelFamily::space(std::vector<ConfigAxis> given) const {
  if (!marker.empty() &&
      std::none_of(given.begin(), given.end(), [&](const ConfigAxis& a) { return a.name == marker; })) {
    given.insert(given.begin(), ConfigAxis{marker, {1}});
  }
  const auto position = [&](const ConfigAxis& g) {
    const KernelAxis* a = axis(g.name);
    if (a == nullptr) throw std::logic_error(kernel + " space: '" + g.name + "' is not one of its axes");
    for (auto v : g.values) {
      if (!a->admits(v))
        throw std::logic_error(kernel + " space: " + g.name + "=" + std::to_string(v) + " is not admitted");
    }
    return a - axes.data();
  };
  std::stable_sort(given.begin(), given.end(),
                   [&](const ConfigAxis& x, const ConfigAxis& y) { return position(x) < position(y); });
  for (const auto& a : axes) {
    const bool present = std::any_of(given.begin(), given.end(), [&](const ConfigAxis& g) { return g.name == a.name; });
    if (!present && !a.fallback) throw std::logic_error(kernel + " space: required axis " + a.name + " missing");
  }
  std::vector<Config> out;
  for (const auto& c : cartesian_product(given)) {
    std::vector<Config::Param> params;
    for (const auto& p : c.params()) {
      if (axis(p.first)->fallback != p.second) params.push_back(p);
    }
    out.emplace_back(std::move(params));
  }
  return out;
}

std::vector<std::string> KernelFamily::defines(const Config& config) const {
  for (const auto& p : config.params()) {
    if (axis(p.first) == nullptr) {
      throw ConfigError("config '" + config.str() + "': " + kernel + " has no axis '" + p.first + "'");
    }
  }
  std::vector<std::string> out;
  for (const auto& a : axes) {
    if (a.define) out.push_back("-D" + a.name + "=" + std::to_string(value(config, a.name)));
  }
  return out;
}

const std::vector<KernelFamily>& mxfp4_families() {
  static const std::vector<KernelFamily> families = make_families();
  return families;
}

const KernelFamily& mxfp4_family(Mxfp4Family id) {
  for (const auto& f : mxfp4_families()) {
    if (f.id == id) return f;
  }
  throw std::logic_error("mxfp4_family: unknown family");
}

const KernelFamily& family_of(const Config& config) {
  // The dequantize marker first: it was told apart first when the families were added.
  for (const Mxfp4Family id :
       {Mxfp4Family::kDequant, Mxfp4Family::kDecode, Mxfp4Family::kWgmma, Mxfp4Family::kWgmmaWs}) {
    if (config.has(mxfp4_family(id).marker)) return mxfp4_family(id);
  }
  return mxfp4_family(Mxfp4Family::kTile);
}

}  // namespace tunebench::bench
