#include "report/results_file.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

#include "common/atomic_file.hpp"
#include "report/baseline_speedup.hpp"

namespace tunebench {

void complete_results_file(const std::filesystem::path& json_file, const std::vector<ContextEntry>& entries,
                           const std::map<std::string, std::vector<std::string>>& markers,
                           const std::vector<Family>& families) {
  nlohmann::json doc;
  {
    std::ifstream in(json_file);
    try {
      doc = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception&) {
      return;  // CSV output
    }
  }
  auto& context = doc["context"];
  for (const auto& e : entries) context[e.name] = e.value;
  for (const auto& [marker, names] : markers) {
    std::string list;
    for (const auto& f : names) list += (list.empty() ? "" : " ") + f;
    context[marker] = list;
  }
  add_baseline_speedups(doc, families);
  write_file_atomically(json_file, doc.dump(2) + "\n");
}

}  // namespace tunebench
