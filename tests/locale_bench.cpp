// bench with the CPU reference op wrapped in one that does what a user's op may: set the
// process's locale, C and C++, to the environment's (setlocale(LC_ALL, "")) with a ',' decimal
// point and '.' thousands grouping on top, in main and again in every prepare(). tunebench's
// output must not change (locale_test.sh).

#include <clocale>
#include <locale>
#include <memory>

#include "cpu_mxfp4_gemm.hpp"
#include "tunebench/main.hpp"

namespace {

// Decimal comma and grouped thousands, whatever locales the machine has installed.
struct CommaNumpunct : std::numpunct<char> {
  char do_decimal_point() const override { return ','; }
  char do_thousands_sep() const override { return '.'; }
  std::string do_grouping() const override { return "\3"; }
};

void set_user_locale() {
  std::setlocale(LC_ALL, "");  // the environment's (de_DE.UTF-8 in the test, when it exists)
  std::locale env = std::locale::classic();
  try {
    env = std::locale("");
  } catch (const std::runtime_error&) {
  }
  std::locale::global(std::locale(env, new CommaNumpunct));  // unnamed: leaves the C locale as set
}

class LocaleSettingOp final : public tunebench::Op {
 public:
  std::string name() const override { return inner_.name(); }
  benchmark::TimeUnit time_unit() const override { return inner_.time_unit(); }
  bool needs_gpu() const override { return false; }
  tunebench::ShapeRules shape_rules() const override { return inner_.shape_rules(); }
  std::string kernel_version() const override { return inner_.kernel_version(); }
  std::vector<tunebench::Config> config_space(tunebench::SpaceKind kind) const override {
    return inner_.config_space(kind);
  }
  bool can_implement(const tunebench::Config& config, const tunebench::Shape& shape,
                     const tunebench::DeviceInfo& device) const override {
    return inner_.can_implement(config, shape, device);
  }
  std::unique_ptr<tunebench::Workload> prepare(const tunebench::Shape& shape, std::uint64_t seed) const override {
    set_user_locale();
    return inner_.prepare(shape, seed);
  }
  void run(tunebench::Workload& work, const tunebench::Config& config, cudaStream_t stream) const override {
    inner_.run(work, config, stream);
  }
  tunebench::CheckResult check(tunebench::Workload& work, const tunebench::Config& config,
                               cudaStream_t stream) const override {
    return inner_.check(work, config, stream);
  }
  double flops(const tunebench::Shape& shape) const override { return inner_.flops(shape); }
  double bytes(const tunebench::Shape& shape) const override { return inner_.bytes(shape); }

 private:
  tunebench::bench::CpuMxfp4GemmOp inner_;
};

}  // namespace

int main(int argc, char** argv) {
  set_user_locale();
  const tunebench::OpList ops{std::make_shared<LocaleSettingOp>()};
  return tunebench::run_benchmarks(argc, argv, ops, TUNEBENCH_TEST_SHAPES, "^cpu_", "^cpu_");
}
