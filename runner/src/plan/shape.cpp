#include "tunebench/shape.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <map>
#include <set>
#include <tuple>

#include "common/one_line.hpp"
#include "common/plural.hpp"
#include "common/regular_file.hpp"

namespace tunebench {

ShapeError::ShapeError(const std::string& what) : std::runtime_error(escape_controls(what)) {}

namespace {

namespace fs = std::filesystem;

// Carries the file and entry path so every error reads "file: entry (line N): reason".
class Where {
 public:
  Where(const fs::path& file, std::string entry, YAML::Node node, int key_line = -1)
      : file_(file), entry_(std::move(entry)), node_(std::move(node)), key_line_(key_line) {}
  Where child(const std::string& key) const {
    int line = -1;
    if (node_.IsMap()) {
      for (const auto& kv : node_) {
        if (kv.first.IsScalar() && kv.first.Scalar() == key) line = kv.first.Mark().line;
      }
    }
    const YAML::Node& map = node_;  // const: a missing key must not be added
    return {file_, entry_.empty() ? key : entry_ + "." + key, node_.IsMap() ? map[key] : YAML::Node(), line};
  }
  Where index(std::size_t i) const {
    const YAML::Node& list = node_;
    return {file_, entry_ + "[" + std::to_string(i) + "]", node_.IsSequence() ? list[i] : YAML::Node()};
  }

  [[noreturn]] void fail(const YAML::Node& node, const std::string& reason) const {
    std::string where = file_.string() + ": " + (entry_.empty() ? "top level" : entry_);
    // An empty value ("name:" at the end of a line) is marked where the next token starts, often
    // the next line: its key's line is the one to name.
    const int line = node.IsDefined() && node.IsNull() && key_line_ >= 0 ? key_line_
                     : node.IsDefined()                                  ? node.Mark().line
                                                                         : -1;
    if (line >= 0) where += " (line " + std::to_string(line + 1) + ")";
    throw ShapeError(where + ": " + reason);
  }

 private:
  const fs::path& file_;
  std::string entry_;
  YAML::Node node_;  // the value this entry names, for its children's lines
  int key_line_;     // 0-based line of the key naming this entry, -1 if none
};

const char* type_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    default:
      return "nothing";
  }
}

void check_keys(const YAML::Node& map, const Where& at, std::initializer_list<const char*> required,
                std::initializer_list<const char*> optional) {
  if (!map.IsMap()) at.fail(map, std::string("expected a map, got ") + type_name(map));
  std::set<std::string> known;
  for (const char* k : required) known.insert(k);
  for (const char* k : optional) known.insert(k);
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) at.fail(kv.first, "expected a string key");
    const auto key = kv.first.Scalar();
    if (!seen.insert(key).second) at.child(key).fail(kv.first, "duplicate key");
    if (!known.count(key)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      at.child(key).fail(kv.first, "unknown key (expected one of: " + list + ")");
    }
  }
  for (const char* k : required) {
    if (!map[k]) at.fail(map, std::string("missing required key '") + k + "'");
  }
}

std::string read_string(const YAML::Node& node, const Where& at) {
  if (!node.IsScalar()) at.fail(node, std::string("expected a string, got ") + type_name(node));
  return node.as<std::string>();
}

std::int64_t read_positive(const YAML::Node& node, const Where& at, std::int64_t max) {
  if (!node.IsScalar()) {
    at.fail(node, std::string("expected a positive integer, got ") + type_name(node));
  }
  // Plain decimal digits only: yaml-cpp would also take "0x10", "010" (octal) and quoted "1".
  const std::string& text = node.Scalar();
  const bool quoted = node.Tag() == "!";
  const std::size_t digits_from = !text.empty() && text[0] == '-' ? 1 : 0;
  const bool decimal = text.size() > digits_from &&
                       std::all_of(text.begin() + static_cast<std::ptrdiff_t>(digits_from), text.end(),
                                   [](unsigned char c) { return std::isdigit(c); }) &&
                       !(text.size() - digits_from > 1 && text[digits_from] == '0');
  if (quoted || !decimal) {
    at.fail(node,
            "expected a positive decimal integer, got " + std::string(quoted ? "the string " : "") + "'" + text + "'");
  }
  // Out of range before stoll can overflow: every bound is far below 18 digits.
  if (digits_from == 0 && text.size() > 18) at.fail(node, "must be <= " + std::to_string(max) + ", got " + text);
  if (digits_from == 1 && text.size() > 19) at.fail(node, "must be > 0, got " + text);
  const std::int64_t v = std::stoll(text);
  if (v <= 0) at.fail(node, "must be > 0, got " + std::to_string(v));
  if (v > max) at.fail(node, "must be <= " + std::to_string(max) + ", got " + std::to_string(v));
  return v;
}

// Bounds keep every tensor of a shape addressable with 64-bit sizes and allocatable.
constexpr std::int64_t kMaxM = 1 << 24, kMaxNK = 1 << 20, kMaxExperts = 1 << 16;

bool is_identifier(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

// The last line up to `last` (1-based) whose indentation holds a tab, or 0: YAML indents with
// spaces only, and its parser names the error a tab causes, not the tab.
int tab_indented_line(const std::string& text, int last) {
  int found = 0, line = 1;
  for (std::size_t at = 0; at < text.size() && line <= last; ++line) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::size_t lead = std::min(text.find_first_not_of(" \t", at), end);
    if (text.find('\t', at) < lead) found = line;
    at = end + 1;
  }
  return found;
}

// The file's one YAML document (null when empty).
YAML::Node read_yaml(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    throw ShapeError(file.string() + ": " + file_kind(file) + ", expected a YAML shape file");
  }
  if (const auto bytes = fs::file_size(file, ec); !ec && bytes > kMaxShapeFileBytes) {
    throw ShapeError(file.string() + ": " + std::to_string(bytes) + " bytes, larger than a shape file may be (" +
                     std::to_string(kMaxShapeFileBytes) + " bytes; a run takes at most " + std::to_string(kMaxShapes) +
                     " shapes): keep the trace's most called shapes");
  }
  // What the YAML parser would report in its own words: text that is not UTF-8 (UTF-16 reads as
  // a scalar of NUL bytes), and indentation by tabs (an "illegal block entry" or the like).
  std::string text;
  try {
    const auto read = read_regular_file(file);
    if (!read) throw ShapeError(file.string() + ": no such shape file");
    text = *read;
  } catch (const NotRegularFile& e) {
    throw ShapeError(e.what());  // names the file and why (permission, ...)
  }
  if (text.find('\0') != std::string::npos) {
    const bool utf16 =
        text.size() >= 2 && ((text[0] == '\xff' && text[1] == '\xfe') || (text[0] == '\xfe' && text[1] == '\xff'));
    throw ShapeError(file.string() + ": " + (utf16 ? "UTF-16 text" : "holds NUL bytes") +
                     ", expected a UTF-8 (or ASCII) YAML shape file");
  }
  try {
    const auto docs = YAML::LoadAll(text);
    if (docs.size() > 1) {
      throw ShapeError(file.string() + ": holds " + std::to_string(docs.size()) +
                       " YAML documents, expected one shape set per file");
    }
    return docs.empty() ? YAML::Node() : docs[0];
  } catch (const YAML::Exception& e) {
    std::string msg = e.msg;
    for (auto& c : msg) {
      if (!std::isprint(static_cast<unsigned char>(c))) c = '?';  // keep the error one clean line
    }
    if (const int tab = tab_indented_line(text, e.mark.line + 1); tab > 0) {
      msg += " (line " + std::to_string(tab) + " is indented with a tab; YAML indents with spaces)";
    }
    throw ShapeError(file.string() + ": line " + std::to_string(e.mark.line + 1) + ": not valid YAML: " + msg);
  }
}

// The non-empty list `key` of the top level.
YAML::Node read_list(const YAML::Node& root, const Where& at) {
  const YAML::Node list = root;
  if (!list.IsSequence() || list.size() == 0) {
    at.fail(list, list.IsSequence() ? std::string("expected a non-empty list, got an empty one")
                                    : std::string("expected a non-empty list, got ") + type_name(list));
  }
  return list;
}

// Only routed ops read the geometry; whether a set must have it is theirs to say
// (ShapeRules::needs_moe), but one that is given must be whole. {0, 0} when absent.
std::pair<std::int64_t, std::int64_t> read_moe(const YAML::Node& root, const Where& top) {
  if (!root["moe"]) return {0, 0};
  const Where moe_at = top.child("moe");
  check_keys(root["moe"], moe_at, {"experts", "top_k"}, {});
  const auto experts = read_positive(root["moe"]["experts"], moe_at.child("experts"), kMaxExperts);
  const auto top_k = read_positive(root["moe"]["top_k"], moe_at.child("top_k"), kMaxExperts);
  if (top_k > experts) {
    moe_at.child("top_k").fail(root["moe"]["top_k"],
                               "top_k " + std::to_string(top_k) + " exceeds experts " + std::to_string(experts));
  }
  return {experts, top_k};
}

std::vector<GemmEntry> read_gemms(const YAML::Node& root, const Where& top) {
  const Where gemms_at = top.child("gemms");
  const YAML::Node gemms_node = read_list(root["gemms"], gemms_at);
  std::vector<GemmEntry> gemms;
  for (std::size_t i = 0; i < gemms_node.size(); ++i) {
    const YAML::Node g = gemms_node[i];
    const Where at = gemms_at.index(i);
    check_keys(g, at, {"name", "n", "k"}, {});
    GemmEntry gemm{read_string(g["name"], at.child("name")), read_positive(g["n"], at.child("n"), kMaxNK),
                   read_positive(g["k"], at.child("k"), kMaxNK), g["k"].Mark().line + 1};
    if (!is_identifier(gemm.name)) {
      at.child("name").fail(g["name"], "expected letters, digits and '_', got '" + gemm.name + "'");
    }
    for (const auto& other : gemms) {
      if (other.name == gemm.name) at.child("name").fail(g["name"], "duplicate gemm name '" + gemm.name + "'");
      if (other.n == gemm.n && other.k == gemm.k) {
        // Benchmark names hold M, N and K, not the gemm's name: every M would collide.
        at.fail(g, "gemms '" + other.name + "' and '" + gemm.name + "' have the same N=" + std::to_string(gemm.n) +
                       " K=" + std::to_string(gemm.k) + " (their benchmark names would collide)");
      }
    }
    gemms.push_back(gemm);
  }
  return gemms;
}

// One Shape per entry of `shapes` and gemm, in that order. `earlier`: shapes of the files read
// before this one, which count towards kMaxShapes.
void read_shapes(const YAML::Node& root, const Where& top, std::pair<std::int64_t, std::int64_t> moe, ShapeSet& set,
                 std::int64_t earlier) {
  const Where shapes_at = top.child("shapes");
  const YAML::Node shapes_node = read_list(root["shapes"], shapes_at);
  const auto count = static_cast<std::int64_t>(shapes_node.size() * set.gemms.size());
  if (earlier + count > kMaxShapes) {
    shapes_at.fail(
        shapes_node,
        count_of(static_cast<long long>(shapes_node.size()), "entry", "entries") + " x " +
            count_of(static_cast<long long>(set.gemms.size()), "gemm", "gemms") + " = " +
            count_of(count, "shape", "shapes") +
            (earlier > 0 ? " (" + std::to_string(earlier + count) + " with the files before it)" : std::string()) +
            ", more than a run takes (" + std::to_string(kMaxShapes) + "): keep the trace's most called shapes");
  }
  set.shapes.reserve(static_cast<std::size_t>(count));
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> seen;
  for (std::size_t i = 0; i < shapes_node.size(); ++i) {
    const YAML::Node s = shapes_node[i];
    const Where at = shapes_at.index(i);
    check_keys(s, at, {"m"}, {"calls"});
    const auto m = read_positive(s["m"], at.child("m"), kMaxM);
    std::optional<std::int64_t> calls;
    if (s["calls"]) calls = read_positive(s["calls"], at.child("calls"), std::int64_t{1} << 40);
    for (const auto& g : set.gemms) {
      if (!seen.emplace(m, g.n, g.k).second) {
        at.child("m").fail(s["m"], "duplicate shape M=" + std::to_string(m) + " N=" + std::to_string(g.n) +
                                       " K=" + std::to_string(g.k) + " (benchmark names would collide)");
      }
      set.shapes.push_back(Shape{set.name, g.name, m, g.n, g.k, moe.first, moe.second, calls});
    }
  }
}

ShapeSet load_shape_file(const fs::path& file, std::int64_t earlier) {
  const YAML::Node root = read_yaml(file);
  const Where top(file, "", root);
  if (!root.IsDefined() || root.IsNull()) {
    throw ShapeError(file.string() + ": empty (no shape set), expected a map with name, gemms and shapes");
  }
  if (!root.IsMap()) top.fail(root, std::string("expected a map, got ") + type_name(root));
  check_keys(root, top, {"name", "gemms", "shapes"}, {"description", "moe"});
  ShapeSet set;
  set.source = file;
  set.name = read_string(root["name"], top.child("name"));
  if (!is_identifier(set.name)) {
    top.child("name").fail(root["name"], "expected letters, digits and '_', got '" + set.name + "'");
  }
  if (root["description"]) set.description = read_string(root["description"], top.child("description"));
  const auto moe = read_moe(root, top);
  set.gemms = read_gemms(root, top);
  read_shapes(root, top, moe, set, earlier);
  return set;
}

}  // namespace

ShapeSet load_shape_file(const fs::path& file) { return load_shape_file(file, 0); }

bool has_moe(const ShapeSet& set) {
  return !set.shapes.empty() &&
         std::all_of(set.shapes.begin(), set.shapes.end(), [](const Shape& s) { return s.experts > 0 && s.top_k > 0; });
}

bool check_shape_rules(const ShapeSet& set, const ShapeRules& rules) {
  if (rules.k_multiple < 1) {
    throw std::invalid_argument("ShapeRules::k_multiple must be >= 1, got " + std::to_string(rules.k_multiple));
  }
  if (rules.needs_moe && !has_moe(set)) return false;
  for (const auto& shape : set.shapes) {
    if (shape.k % rules.k_multiple == 0) continue;
    // The rule is checked after loading, so the error is put together here in the loader's own
    // "file: entry (line N): reason" form from what the set kept of its file.
    std::string where;
    const auto entry =
        std::find_if(set.gemms.begin(), set.gemms.end(), [&](const GemmEntry& g) { return g.name == shape.gemm; });
    if (!set.source.empty() && entry != set.gemms.end()) {
      where = set.source.string() + ": gemms[" + std::to_string(entry - set.gemms.begin()) + "].k";
      if (entry->k_line > 0) where += " (line " + std::to_string(entry->k_line) + ")";
    } else {
      where =
          (set.source.empty() ? "shape set '" + set.name + "'" : set.source.string()) + ": gemm '" + shape.gemm + "'";
    }
    std::string reason = "K=" + std::to_string(shape.k) + " is not a multiple of " + std::to_string(rules.k_multiple);
    if (!rules.k_reason.empty()) reason += " (" + rules.k_reason + ")";
    throw ShapeError(where + ": " + reason);
  }
  return true;
}

std::vector<ShapeSet> load_shape_path(const fs::path& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    throw ShapeError(path.string() + ": no such shape file or folder");
  }
  std::vector<fs::path> files;
  if (fs::is_directory(status)) {
    for (const auto& entry : fs::directory_iterator(path)) {
      // Any case: a.YAML is as much a shape file as a.yaml.
      std::string ext = entry.path().extension().string();
      for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (ext != ".yaml" && ext != ".yml") continue;
      // Named as a shape file, so meant as one: anything else there (a FIFO, which would block
      // the read, a folder, a dangling link) is refused by name rather than skipped.
      if (const std::string kind = file_kind(entry.path()); kind != "a regular file") {
        throw ShapeError(entry.path().string() + ": " + kind + ", expected a YAML shape file");
      }
      files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw ShapeError(path.string() + ": folder holds no *.yaml or *.yml shape file");
  } else {
    files.push_back(path);
  }
  std::vector<ShapeSet> sets;
  std::map<std::string, fs::path> names;
  std::int64_t shapes = 0;
  for (const auto& f : files) {
    auto set = load_shape_file(f, shapes);
    shapes += static_cast<std::int64_t>(set.shapes.size());
    if (auto [it, fresh] = names.emplace(set.name, f); !fresh) {
      throw ShapeError(f.string() + ": name: set '" + set.name + "' is already declared by " + it->second.string());
    }
    sets.push_back(std::move(set));
  }
  return sets;
}

}  // namespace tunebench
