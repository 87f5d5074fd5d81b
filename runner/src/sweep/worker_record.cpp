#include "sweep/worker_record.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <stdexcept>
#include <utility>

namespace tunebench {
namespace {

constexpr std::pair<WorkerRecord::Kind, const char*> kKinds[] = {
    {WorkerRecord::Kind::kStarted, "started"},     {WorkerRecord::Kind::kPreparing, "preparing"},
    {WorkerRecord::Kind::kCompiling, "compiling"}, {WorkerRecord::Kind::kTiming, "timing"},
    {WorkerRecord::Kind::kTuned, "tuned"},         {WorkerRecord::Kind::kWaiting, "waiting"}};

}  // namespace

std::string to_json_line(const WorkerRecord& r) {
  nlohmann::json j;
  for (const auto& [kind, name] : kKinds) {
    if (kind == r.kind) j["record"] = name;
  }
  if (r.time != 0) j["time"] = r.time;
  if (r.kind == WorkerRecord::Kind::kStarted) {
    j["device"] = r.device;
    return j.dump();
  }
  j["key"] = r.key;
  if (r.kind == WorkerRecord::Kind::kTiming) j["config"] = r.config;
  if (r.kind == WorkerRecord::Kind::kTuned) {
    j["seconds"] = r.seconds;
    j["runs"] = r.runs;
    j["kernel_seconds"] = r.kernel_s;
    j["dropped"] = r.dropped;
    j["pruned"] = r.pruned;
    j["finalists"] = r.finalists;
    j["compile_wait_seconds"] = r.compile_wait_s;
  }
  return j.dump();
}

std::optional<WorkerRecord> parse_record_line(const std::string& line) {
  try {
    const auto j = nlohmann::json::parse(line);
    const std::string name = j.at("record").get<std::string>();
    WorkerRecord r;
    const auto k = std::find_if(std::begin(kKinds), std::end(kKinds), [&](const auto& e) { return name == e.second; });
    if (k == std::end(kKinds)) return std::nullopt;
    r.kind = k->first;
    r.time = j.value("time", 0.0);
    if (r.kind == WorkerRecord::Kind::kStarted) {
      r.device = j.at("device").get<std::string>();
      return r;
    }
    r.key = j.at("key").get<std::string>();
    if (r.kind == WorkerRecord::Kind::kTiming) r.config = j.at("config").get<std::string>();
    if (r.kind == WorkerRecord::Kind::kTuned) {
      r.seconds = j.at("seconds").get<double>();
      r.runs = j.value("runs", std::int64_t{0});
      r.kernel_s = j.value("kernel_seconds", 0.0);
      r.dropped = j.value("dropped", 0);
      r.pruned = j.value("pruned", 0);
      r.finalists = j.value("finalists", std::vector<std::string>{});
      r.compile_wait_s = j.value("compile_wait_seconds", 0.0);
    }
    return r;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

RecordWriter::RecordWriter(const std::filesystem::path& file) : file_(std::fopen(file.c_str(), "a")) {
  if (!file_) throw std::runtime_error("cannot open the sweep's records file " + file.string());
}

RecordWriter::~RecordWriter() {
  if (file_) std::fclose(file_);
}

void RecordWriter::write(const WorkerRecord& record) {
  WorkerRecord stamped = record;
  if (stamped.time == 0) {
    stamped.time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  const std::string line = to_json_line(stamped) + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

std::vector<WorkerRecord> RecordReader::poll() {
  std::vector<WorkerRecord> out;
  std::FILE* f = std::fopen(file_.c_str(), "r");
  if (!f) return out;
  if (std::fseek(f, offset_, SEEK_SET) == 0) {
    char buf[4096];
    std::size_t got;
    while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) {
      partial_.append(buf, got);
      offset_ += static_cast<long>(got);
    }
  }
  std::fclose(f);
  std::size_t nl;
  while ((nl = partial_.find('\n')) != std::string::npos) {
    if (auto r = parse_record_line(partial_.substr(0, nl))) out.push_back(std::move(*r));
    partial_.erase(0, nl + 1);
  }
  return out;
}

}  // namespace tunebench
