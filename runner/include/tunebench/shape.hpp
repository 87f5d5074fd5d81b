#pragma once
// Trace shape sets: the GEMM shapes a model actually runs, read from YAML files (runs/shape/).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tunebench {

/// A shape file or folder that cannot be used. what() is one line naming the file, the entry
/// (for example "shapes[3].m", with its line) and the reason; control characters of `what`
/// (a newline in a set name or a path) are escaped as \n, \t, \xHH.
class ShapeError : public std::runtime_error {
 public:
  explicit ShapeError(const std::string& what);
};

/// One GEMM problem of a shape set: Y[M,N] = X[M,K] . W[N,K]^T.
/// For a routed (MoE) op, M is the token count of the layer call; the tokens are routed top_k
/// over `experts` experts, each expert's GEMM being [tokens_e, K] x [N, K]^T.
struct Shape {
  std::string set;                    ///< name of the shape set it belongs to, e.g. "dsv4f_decode_ep"
  std::string gemm;                   ///< name of the GEMM within the set, e.g. "w13" or "w2"
  std::int64_t m = 0;                 ///< rows of X and Y (tokens), > 0
  std::int64_t n = 0;                 ///< rows of W, columns of Y, > 0
  std::int64_t k = 0;                 ///< reduction dimension, > 0 (an op may ask more: ShapeRules)
  std::int64_t experts = 0;           ///< routed experts E, > 0; 0 when the set has no `moe:` block
  std::int64_t top_k = 0;             ///< experts per token, 1 <= top_k <= experts; 0 without `moe:`
  std::optional<std::int64_t> calls;  ///< calls of this shape in the source trace, when known
};

/// One entry of a shape file's `gemms` list as read, kept so that a rule checked after loading
/// (check_shape_rules) can name the entry and its line, as the loader's own errors do.
struct GemmEntry {
  std::string name;    ///< the entry's `name`, unique in its set
  std::int64_t n = 0;  ///< its `n`
  std::int64_t k = 0;  ///< its `k`
  int k_line = 0;      ///< 1-based line of its `k` value in ShapeSet::source, 0 when unknown
};

/// A shape set as read from one YAML file. Shapes are ordered as in the file: for each entry of
/// `shapes`, one Shape per entry of `gemms`.
struct ShapeSet {
  std::string name;              ///< unique set name, [A-Za-z0-9_]+ (it appears in benchmark names)
  std::string description;       ///< free text
  std::filesystem::path source;  ///< the file it was read from (empty for a set built in code)
  std::vector<Shape> shapes;
  /// The `gemms` entries in file order (index i is "gemms[i]"); may be empty for a set built
  /// in code, whose errors then name the set and the gemm instead of an entry and a line.
  /// (Initialized here, so aggregate initialization that stops at `shapes` stays warning-free.)
  std::vector<GemmEntry> gemms = {};
};

/// What an op needs of a shape beyond the shape file's own rules, declared by the op
/// (Op::shape_rules) and checked per shape set by check_shape_rules when families are made.
/// The default asks for nothing: any K the file may hold, no MoE geometry.
struct ShapeRules {
  /// K must be a multiple of this, >= 1 (1: any K). An MXFP4-weight op asks 32, its block.
  std::int64_t k_multiple = 1;
  /// Why, as the error gives it after the number: "the MXFP4 block size" reads
  /// "K=100 is not a multiple of 32 (the MXFP4 block size)". Empty: no parenthesis.
  std::string k_reason;
  /// The op reads Shape::experts and Shape::top_k, so it has no benchmarks on a set without a
  /// `moe:` block. Routed ops (Op::routed) need it whatever this says.
  bool needs_moe = false;
};

/// True when every shape of `set` carries the MoE geometry (experts and top_k > 0), as a file
/// with a `moe:` block gives. False for a set with no shapes.
bool has_moe(const ShapeSet& set);

/// Whether an op with `rules` gets benchmarks on `set`: false when rules.needs_moe and the set
/// has no MoE geometry (has_moe), without checking further, so an op that does not apply to a
/// set never rejects it. Otherwise checks every shape against rules.k_multiple and returns true.
/// Throws ShapeError, one line naming the file, the entry, its line and the reason, e.g.
/// "a.yaml: gemms[0].k (line 3): K=100 is not a multiple of 32 (the MXFP4 block size)", when
/// a K breaks the rule: a file the op cannot run is a mistake to fix, not a set to skip.
/// Throws std::invalid_argument if rules.k_multiple < 1.
bool check_shape_rules(const ShapeSet& set, const ShapeRules& rules);

/// The most shapes (Shape values: entries of a file's `shapes` times its `gemms`) one load takes,
/// over all the files of a folder. Each shape becomes a benchmark per op, and Google Benchmark
/// keeps several copies of each (about 2 KB a benchmark when listing), so 100,000 shapes of
/// bench's 5 ops list in seconds and about 1 GB; beyond it a trace is to be binned (its most
/// called shapes kept), not loaded.
inline constexpr std::int64_t kMaxShapes = 100000;

/// The largest shape file the loader parses, checked before parsing: a YAML parse takes far more
/// memory than the file, so a trace of millions of shapes is refused at once, not after minutes.
/// 8 MiB holds kMaxShapes entries with room for comments (an entry is about 25 bytes).
inline constexpr std::uintmax_t kMaxShapeFileBytes = std::uintmax_t{8} << 20;

/// Parses one shape-set file. The format (see runs/shape/*.yaml and the README's "Shape sets"):
///
///     name: dsv4f_decode_ep            # required, [A-Za-z0-9_]+
///     description: free text           # optional
///     moe: {experts: 256, top_k: 6}    # optional; both keys required when present
///     gemms:                           # required, non-empty
///       - {name: w13, n: 4096, k: 4096}
///     shapes:                          # required, non-empty
///       - {m: 1, calls: 172}           # calls optional
///
/// Every key is checked: a missing key, an unknown key, a value of the wrong type, a dimension
/// that is zero or negative or above its bound (M <= 2^24, N and K <= 2^20, experts and top_k
/// <= 2^16, calls <= 2^40), top_k > experts, two gemms with the same N and K, or a repeated
/// (M, N, K) throws ShapeError naming the file, the entry and the reason. Nothing is defaulted
/// silently: without `moe:`, Shape::experts and top_k are 0, which routed ops do not run on.
/// What an op needs beyond this (K a multiple of its block, say) is the op's ShapeRules,
/// checked when families are made (check_shape_rules), not here. Also throws ShapeError, before
/// parsing, for a file that is not a regular file or is larger than kMaxShapeFileBytes, and for
/// one holding more than kMaxShapes shapes.
ShapeSet load_shape_file(const std::filesystem::path& file);

/// Parses a shape file, or every *.yaml / *.yml file directly inside a folder (in name order).
/// Throws ShapeError if the path does not exist, a folder holds no shape file, any file is bad
/// (load_shape_file), the files together hold more than kMaxShapes shapes (naming the file that
/// goes over), or two files declare the same set name.
std::vector<ShapeSet> load_shape_path(const std::filesystem::path& path);

}  // namespace tunebench
