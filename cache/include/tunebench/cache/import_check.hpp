#pragma once
// What `tunebench-cache import` checks a file's entries against: the ops of the build.

#include <string>
#include <vector>

namespace tunebench::cache {

/// The ops an import is checked against. The cache library knows no op (cache/ includes
/// neither runner/ nor bench/): a tool linked with ops implements this from them (bench's
/// tunebench-cache does, from its built-in ops), and the import asks it about every entry.
/// Methods are called with the fields as the file holds them, any text.
class ImportCheck {
 public:
  virtual ~ImportCheck() = default;

  /// The names of the ops this build has (Op::name), for the error naming an unknown one.
  virtual std::vector<std::string> op_names() const = 0;

  /// Why `tuning_key` is not a key that op `op` (one of op_names()) makes for some shape, in a
  /// few words ("" when it is one), e.g. "expected M=<m>,N=<n>,K=<k> with each > 0".
  virtual std::string tuning_key_problem(const std::string& op, const std::string& tuning_key) const = 0;

  /// Why `config` is not a config of op `op`'s default or expanded space, in a few words ("" when
  /// it is one).
  virtual std::string config_problem(const std::string& op, const std::string& config) const = 0;

  /// Whether op `op` (one of op_names()) may compile its configs (a GPU op: NVRTC compiles
  /// them): a host op compiles nothing, so a compile_failed measurement of one can only be
  /// forged, and the import refuses it.
  virtual bool compiles_configs(const std::string& op) const = 0;
};

}  // namespace tunebench::cache
