#pragma once
// The kernel families of the MXFP4 ops and their tuning axes, declared once: the host's config
// spaces, config names and can_implement bounds and the -D defines each kernel is compiled with
// all come from this table (bench/mxfp4_kernel_axes.cpp), so the two sides cannot drift.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tunebench/config.hpp"

namespace tunebench::bench {

/// One tuning axis of a kernel family: a config parameter of that name.
struct KernelAxis {
  std::string name;
  /// The values the kernel takes: `choices` when not empty, else the multiples of `multiple` in
  /// [min, max].
  std::vector<std::int64_t> choices;
  std::int64_t min = 0, max = 0, multiple = 1;
  /// For an optional axis, the value the kernel takes when a config leaves the axis out. A
  /// config at this value leaves it out, so that one kernel has one name (and one cache row) in
  /// every space; std::nullopt: every config of the family sets it.
  std::optional<std::int64_t> fallback;
  /// Whether the axis is compiled in as -D<name>=<value> (ALGO, a run-time choice, is not).
  bool define = true;

  /// Whether `value` is one the kernel takes.
  bool admits(std::int64_t value) const;
};

/// The MXFP4 kernel families, each one kernel file of bench/kernels/.
enum class Mxfp4Family { kTile, kDecode, kWgmma, kWgmmaWs, kDequant };

/// A kernel family: its kernel file, the kernels its binary holds and its axes.
struct KernelFamily {
  Mxfp4Family id;
  /// The parameter (always 1) that marks a config of this family, its first axis; empty for the
  /// tile family, the configs that have none of the others' markers.
  std::string marker;
  std::string file;    ///< its kernel file in bench/kernels/, e.g. "mxfp4_decode.cuh"
  std::string kernel;  ///< the extern "C" name of its main kernel
  /// Whether its binary is compiled per op (-DMOE) and carries mxfp4_splitk_finish after the
  /// main kernel: the GEMM families, not the dequantization.
  bool gemm = true;
  std::vector<KernelAxis> axes;  ///< in the order of config names, the marker first

  /// The axis `name`, or nullptr.
  const KernelAxis* axis(const std::string& name) const;
  /// `config`'s value of axis `name`, its fallback when the config leaves an optional axis out.
  /// Throws ConfigError if `name` is not an axis of the family or a required axis is missing.
  std::int64_t value(const Config& config, const std::string& name) const;
  /// Whether `config` sets every required axis, no parameter outside the family's axes, and each
  /// to a value the axis admits (per-axis bounds only; can_implement adds the relations between
  /// axes, the shape and the device).
  bool admits(const Config& config) const;
  /// The configs of `axes` (the cartesian product, the first axis varying slowest): the marker
  /// is added when left out, the axes are put in the family's order, and an optional axis at
  /// its fallback is left out of the name. Throws std::logic_error for an axis the family does
  /// not have, a required axis missing or a value an axis does not admit: the spaces are code.
  std::vector<Config> space(std::vector<ConfigAxis> axes) const;
  /// The -D options that compile `config`: every compiled axis, optional ones at their fallback
  /// when left out, in the family's order. Throws ConfigError naming the parameter for a config
  /// that lacks a required axis or has a parameter outside the family's axes.
  std::vector<std::string> defines(const Config& config) const;
};

/// Every family: tile, decode, wgmma, warp-specialized wgmma, dequantize.
const std::vector<KernelFamily>& mxfp4_families();
/// The family `id`.
const KernelFamily& mxfp4_family(Mxfp4Family id);
/// The family `config` belongs to, by its marker (DEQUANT_BF16, DECODE, WGMMA, WGMMA_WS; none: tile).
const KernelFamily& family_of(const Config& config);

}  // namespace tunebench::bench
