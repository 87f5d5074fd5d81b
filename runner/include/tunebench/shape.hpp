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
/// (for example "shapes[3].m", with its line) and the reason.
class ShapeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One GEMM problem of a shape set: Y[M,N] = X[M,K] . W[N,K]^T.
/// For a routed (MoE) op, M is the token count of the layer call; the tokens are routed top_k
/// over `experts` experts, each expert's GEMM being [tokens_e, K] x [N, K]^T.
struct Shape {
  std::string set;   ///< name of the shape set it belongs to, e.g. "dsv4f_decode_ep"
  std::string gemm;  ///< name of the GEMM within the set, e.g. "w13" or "w2"
  std::int64_t m = 0;        ///< rows of X and Y (tokens), > 0
  std::int64_t n = 0;        ///< rows of W, columns of Y, > 0
  std::int64_t k = 0;        ///< reduction dimension, > 0 and a multiple of 32 (MXFP4 block)
  std::int64_t experts = 0;  ///< routed experts E, > 0
  std::int64_t top_k = 0;    ///< experts per token, 1 <= top_k <= experts
  std::optional<std::int64_t> calls;  ///< calls of this shape in the source trace, when known
};

/// A shape set as read from one YAML file. Shapes are ordered as in the file: for each entry of
/// `shapes`, one Shape per entry of `gemms`.
struct ShapeSet {
  std::string name;         ///< unique set name, [A-Za-z0-9_]+ (it appears in benchmark names)
  std::string description;  ///< free text
  std::filesystem::path source;  ///< the file it was read from
  std::vector<Shape> shapes;
};

/// MXFP4 block size along K: one E8M0 scale per 32 E2M1 elements (OCP Microscaling v1.0).
inline constexpr std::int64_t kMxfp4BlockSize = 32;

/// Parses one shape-set file. The format (see runs/shape/*.yaml and docs/shapes.md):
///
///     name: dsv4f_decode_ep            # required, [A-Za-z0-9_]+
///     description: free text           # optional
///     moe: {experts: 256, top_k: 6}    # required
///     gemms:                           # required, non-empty
///       - {name: w13, n: 4096, k: 4096}
///     shapes:                          # required, non-empty
///       - {m: 1, calls: 172}           # calls optional
///
/// Every key is checked: a missing key, an unknown key, a value of the wrong type, a dimension
/// that is zero or negative, K not a multiple of 32, top_k > experts, or a repeated (M, N, K)
/// throws ShapeError naming the file, the entry and the reason. Nothing is defaulted silently.
ShapeSet load_shape_file(const std::filesystem::path& file);

/// Parses a shape file, or every *.yaml / *.yml file directly inside a folder (in name order).
/// Throws ShapeError if the path does not exist, a folder holds no shape file, any file is bad,
/// or two files declare the same set name.
std::vector<ShapeSet> load_shape_path(const std::filesystem::path& path);

}  // namespace tunebench
