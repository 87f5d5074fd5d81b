#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "cpu_mxfp4_gemm.hpp"
#include "host_op.hpp"
#include "settings_from_env.hpp"
#include "timing/timer.hpp"
#include "tune/autotuner.hpp"
#include "tune/sweep_strategy.hpp"
#include "tune/sweep_strategy_table.hpp"
#include "tunebench/nvrtc.hpp"

using tunebench::Config;
using tunebench::cache::Status;

namespace tunebench {
namespace {
SpaceKind space_from_env() { return testing::settings_from_env().space; }
}  // namespace
}  // namespace tunebench

namespace {

// Four configs B=1..4; B=4 is rejected by can_implement.
class FakeOp final : public tunebench::Op {
 public:
  std::string name() const override { return "fake"; }
  benchmark::TimeUnit time_unit() const override { return benchmark::kMicrosecond; }
  bool needs_gpu() const override { return false; }
  std::string kernel_version() const override { return "fake-1"; }
  std::vector<Config> config_space(tunebench::SpaceKind kind) const override {
    if (kind == tunebench::SpaceKind::kExpanded) return tunebench::cartesian_product({{"B", {1, 2, 3, 4, 5}}});
    return tunebench::cartesian_product({{"B", {1, 2, 3, 4}}});
  }
  bool can_implement(const Config& c, const tunebench::Shape&, const tunebench::DeviceInfo&) const override {
    return c.get("B") != 4;
  }
  std::unique_ptr<tunebench::Workload> prepare(const tunebench::Shape&, std::uint64_t) const override {
    return nullptr;
  }
  void run(tunebench::Workload&, const Config&, cudaStream_t) const override {}
  double flops(const tunebench::Shape&) const override { return 1; }
  double bytes(const tunebench::Shape&) const override { return 1; }
  void precompile(const std::vector<Config>& configs, const tunebench::DeviceInfo&, int threads) const override {
    precompiled.push_back({configs, threads});
  }
  mutable std::vector<std::pair<std::vector<Config>, int>> precompiled;
};

const tunebench::Shape kShape{"s", "w", 8, 64, 64, 8, 2, std::nullopt};
const auto kDevice = tunebench::sm90_reference_device();

tunebench::RunTimer fixed(std::map<std::int64_t, std::int64_t> ns) {
  return tunebench::run_by_run([ns](const Config& c) { return std::chrono::nanoseconds(ns.at(c.get("B"))); });
}

}  // namespace

TEST(Autotuner, PicksTheFastestAndRecordsEveryConfig) {
  tunebench::TuneOptions o;
  const auto out = tunebench::autotune(FakeOp(), kShape, kDevice, fixed({{1, 3000}, {2, 1000}, {3, 2000}}), o);
  ASSERT_TRUE(out.found());
  EXPECT_EQ(out.best.str(), "B=2");
  EXPECT_EQ(out.best_p50_ns, 1000);
  ASSERT_EQ(out.results.size(), 3u);
  EXPECT_EQ(out.rejected, 1);
  for (const auto& m : out.results) {
    EXPECT_EQ(m.status, Status::kOk);
    EXPECT_TRUE(m.p20_ns && m.p50_ns && m.p80_ns);
  }
}

TEST(Autotuner, TiesWithinNoiseGoToTheEarliestConfig) {
  tunebench::TuneOptions o;  // 1% tolerance
  auto out = tunebench::autotune(FakeOp(), kShape, kDevice, fixed({{1, 1005}, {2, 1000}, {3, 1200}}), o);
  EXPECT_EQ(out.best.str(), "B=1");
  out = tunebench::autotune(FakeOp(), kShape, kDevice, fixed({{1, 1020}, {2, 1000}, {3, 1000}}), o);
  EXPECT_EQ(out.best.str(), "B=2");
  o.tie_tolerance = 0;
  out = tunebench::autotune(FakeOp(), kShape, kDevice, fixed({{1, 1005}, {2, 1000}, {3, 1200}}), o);
  EXPECT_EQ(out.best.str(), "B=2");
}

TEST(Autotuner, FailuresAreDataAndStoredFailuresAreNotRetried) {
  tunebench::TuneOptions o;
  const tunebench::RunTimer timer = tunebench::run_by_run([](const Config& c) -> std::chrono::nanoseconds {
    if (c.get("B") == 1) throw tunebench::CompileError("", "error: too many registers\nsecond line of the log");
    if (c.get("B") == 2) throw std::runtime_error("illegal launch");
    return std::chrono::nanoseconds(500);
  });
  const auto out = tunebench::autotune(FakeOp(), kShape, kDevice, timer, o, {}, "GPU-x");
  ASSERT_TRUE(out.found());
  EXPECT_EQ(out.best.str(), "B=3");
  ASSERT_EQ(out.results.size(), 3u);
  EXPECT_EQ(out.results[0].status, Status::kCompileFailed);
  EXPECT_EQ(out.results[0].error, "compile_failed: error: too many registers");
  EXPECT_EQ(out.results[1].status, Status::kLaunchFailed);
  EXPECT_FALSE(out.results[1].p50_ns);
  EXPECT_EQ(out.results[2].device_uuid, "GPU-x");

  int calls = 0;
  const tunebench::RunTimer counting = tunebench::run_by_run([&](const Config&) {
    ++calls;
    return std::chrono::nanoseconds(700);
  });
  const auto rerun = tunebench::autotune(FakeOp(), kShape, kDevice, counting, o, out.results);
  EXPECT_EQ(rerun.reused_failures, 2);
  EXPECT_EQ(rerun.results.size(), 1u);  // only B=3 timed again
  EXPECT_GT(calls, 0);

  const auto none = tunebench::autotune(
      FakeOp(), kShape, kDevice,
      tunebench::run_by_run([](const Config&) -> std::chrono::nanoseconds { throw std::runtime_error("always"); }), o);
  EXPECT_FALSE(none.found());
}

TEST(Autotuner, RepetitionsFollowTheBudgetAndTimeoutsStopAConfig) {
  tunebench::TuneOptions o;
  o.warmup = 1;
  o.min_repetitions = 3;
  o.max_repetitions = 9;
  o.budget_per_config = std::chrono::nanoseconds(4000);
  std::map<std::int64_t, int> calls;
  const tunebench::RunTimer timer = tunebench::run_by_run([&](const Config& c) {
    ++calls[c.get("B")];
    return std::chrono::nanoseconds(c.get("B") == 1 ? 1000 : 100);
  });
  tunebench::autotune(FakeOp(), kShape, kDevice, timer, o);
  EXPECT_EQ(calls[1], 1 + 4);  // 4 runs fit 4000 ns
  EXPECT_EQ(calls[2], 1 + 9);  // capped at max

  o.timeout_per_config = std::chrono::milliseconds(30);
  const auto out = tunebench::autotune(FakeOp(), kShape, kDevice, tunebench::run_by_run([](const Config& c) {
                                         if (c.get("B") == 2)
                                           std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                         return std::chrono::nanoseconds(1000);
                                       }),
                                       o);
  EXPECT_EQ(out.results[1].status, Status::kTimeout);
  EXPECT_EQ(out.best.str(), "B=1");
}

TEST(Autotuner, SpaceFromEnvAndQuantiles) {
  ::unsetenv("USE_FLAGTUNE");
  EXPECT_EQ(tunebench::space_from_env(), tunebench::SpaceKind::kDefault);
  ::setenv("USE_FLAGTUNE", "1", 1);
  EXPECT_EQ(tunebench::space_from_env(), tunebench::SpaceKind::kExpanded);
  tunebench::TuneOptions expanded;
  expanded.space = tunebench::space_from_env();
  const auto out = tunebench::autotune(FakeOp(), kShape, kDevice, fixed({{1, 5}, {2, 4}, {3, 3}, {5, 1}}), expanded);
  EXPECT_EQ(out.best.str(), "B=5");  // only in the expanded space
  ::setenv("USE_FLAGTUNE", "yes", 1);
  EXPECT_THROW(tunebench::space_from_env(), std::invalid_argument);
  ::unsetenv("USE_FLAGTUNE");
  EXPECT_EQ(tunebench::quantile({5, 1, 4, 2, 3}, 0.5), 3);
  EXPECT_EQ(tunebench::quantile({5, 1, 4, 2, 3}, 0.2), 2);
  EXPECT_EQ(tunebench::quantile({5, 1, 4, 2, 3}, 0.8), 4);
  EXPECT_EQ(tunebench::quantile({7}, 0.8), 7);
}

TEST(TuningKey, BucketsM) {
  EXPECT_EQ(tunebench::bucket_m(1, tunebench::MBucket::kNextPow2), 1);
  EXPECT_EQ(tunebench::bucket_m(5, tunebench::MBucket::kNextPow2), 8);
  EXPECT_EQ(tunebench::bucket_m(64, tunebench::MBucket::kNextPow2), 64);
  EXPECT_EQ(tunebench::bucket_m(1, tunebench::MBucket::kAlign32), 32);
  EXPECT_EQ(tunebench::bucket_m(33, tunebench::MBucket::kAlign32), 64);
  EXPECT_EQ(tunebench::bucket_m(37, tunebench::MBucket::kExact), 37);
  EXPECT_EQ(tunebench::tuning_key_for(kShape, true, tunebench::MBucket::kNextPow2), "M=8,N=64,K=64,E=8,topk=2");
  EXPECT_EQ(FakeOp().tuning_key(kShape), "M=8,N=64,K=64");
}

// The real CPU op through the real host timer: a sweep over its default space.
TEST(Autotuner, TunesTheCpuReference) {
  const tunebench::bench::CpuMxfp4GemmOp op;
  const tunebench::Shape s{"s", "w", 2, 256, 512, 8, 2, std::nullopt};
  auto work = op.prepare(s, 3);
  tunebench::HostTimer timer;
  tunebench::TuneOptions o;
  o.budget_per_config = std::chrono::milliseconds(5);
  const auto out = tunebench::autotune(op, s, kDevice, tunebench::run_by_run([&](const Config& c) {
                                         timer.start();
                                         op.run(*work, c, nullptr);
                                         return timer.stop();
                                       }),
                                       o);
  ASSERT_TRUE(out.found());
  EXPECT_EQ(out.results.size() + static_cast<std::size_t>(out.rejected),
            op.config_space(tunebench::SpaceKind::kDefault).size());
  for (const auto& m : out.results) {
    EXPECT_EQ(m.status, Status::kOk) << m.config << ": " << m.error;
    EXPECT_LE(out.best_p50_ns, static_cast<std::int64_t>(*m.p50_ns * 1.01) + 1);
  }
}

// A config that leaves a sticky CUDA error ends the sweep with the config recorded.
TEST(Autotuner, StickyCudaErrorEndsTheSweepWithTheConfigRecorded) {
  int calls_after = 0;
  const tunebench::RunTimer timer = tunebench::run_by_run([&](const Config& c) -> std::chrono::nanoseconds {
    if (c.get("B") == 2) {
      throw tunebench::CudaError("kernel at x.cu:1: cudaErrorIllegalAddress: an illegal memory access",
                                 cudaErrorIllegalAddress, true);
    }
    if (c.get("B") == 3) ++calls_after;
    return std::chrono::nanoseconds(100);
  });
  const auto out = tunebench::autotune(FakeOp(), kShape, kDevice, timer, tunebench::TuneOptions{});
  EXPECT_FALSE(out.found());
  EXPECT_NE(out.fatal_error.find("cudaErrorIllegalAddress"), std::string::npos);
  ASSERT_EQ(out.results.size(), 2u);
  EXPECT_EQ(out.results[1].config, "B=2");
  EXPECT_EQ(out.results[1].status, Status::kLaunchFailed);
  EXPECT_EQ(calls_after, 0);
}

TEST(Autotuner, ASingleCandidateIsChosenWithoutTiming) {
  const tunebench::bench::CpuMxfp4GemmOp op;
  const tunebench::Shape prefill{"s", "w13", 16384, 4096, 4096, 256, 6, std::nullopt};
  int calls = 0;
  const auto out = tunebench::autotune(op, prefill, kDevice, tunebench::run_by_run([&](const Config&) {
                                         ++calls;
                                         return std::chrono::nanoseconds(1);
                                       }),
                                       tunebench::TuneOptions{});
  ASSERT_TRUE(out.found());
  EXPECT_EQ(out.best.str(), "BLOCK_N=64,BLOCK_K=512");
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(out.results.empty());
}

TEST(Autotuner, OnlyTimesTheGivenContenders) {
  tunebench::TuneOptions o;
  o.only = {Config{{"B", 3}}, Config{{"B", 1}}};
  std::map<std::int64_t, int> calls;
  const auto out = tunebench::autotune(FakeOp(), kShape, kDevice, tunebench::run_by_run([&](const Config& c) {
                                         ++calls[c.get("B")];
                                         return std::chrono::nanoseconds(c.get("B") * 100);
                                       }),
                                       o);
  EXPECT_EQ(out.best.str(), "B=1");
  EXPECT_EQ(calls.count(2), 0u);
  EXPECT_EQ(out.results.size(), 2u);
}

TEST(Autotuner, PrecompilesExactlyTheConfigsItWillTimeBeforeTimingAny) {
  FakeOp op;
  tunebench::TuneOptions o;
  o.compile_threads = 3;
  // B=4 is rejected; B=1 failed in an earlier run; B=2 and B=3 remain.
  const std::vector<tunebench::cache::Measurement> known = {
      {"B=1", Status::kCompileFailed, std::nullopt, std::nullopt, std::nullopt, "bad", 0, "", ""}};
  std::size_t precompiled_before_first_run = 99;
  const auto timer = tunebench::run_by_run([&](const Config& c) {
    if (precompiled_before_first_run == 99) precompiled_before_first_run = op.precompiled.size();
    return std::chrono::nanoseconds(c.get("B") * 1000);
  });
  const auto out = tunebench::autotune(op, kShape, kDevice, timer, o, known);
  ASSERT_EQ(op.precompiled.size(), 1u);
  EXPECT_EQ(precompiled_before_first_run, 1u);
  EXPECT_EQ(op.precompiled[0].first, (std::vector<Config>{Config{{"B", 2}}, Config{{"B", 3}}}));
  EXPECT_EQ(op.precompiled[0].second, 3);
  EXPECT_EQ(out.best.str(), "B=2");
}

namespace {

// A strategy that times nothing: it records what it was handed and declares the last config
// the winner, as a racing strategy would after dropping the others.
class LastWins final : public tunebench::SweepStrategy {
 public:
  std::string name() const override { return "last-wins"; }
  void sweep(const std::vector<Config>& order, const tunebench::RunTimer&, const tunebench::TuneOptions&,
             const std::string&, tunebench::TuneOutcome& out) const override {
    handed = order;
    out.best = order.back();
    out.best_p50_ns = 7;
  }
  mutable std::vector<Config> handed;
};

}  // namespace

TEST(Autotuner, TheStrategyGetsThePreparedConfigsAndChoosesTheWinner) {
  auto strategy = std::make_shared<LastWins>();
  tunebench::TuneOptions o;
  o.strategy = strategy;
  FakeOp op;
  // B=4 is refused by can_implement and B=2 failed in an earlier run: neither reaches the strategy.
  const std::vector<tunebench::cache::Measurement> known = {
      {"B=2", Status::kLaunchFailed, std::nullopt, std::nullopt, std::nullopt, "earlier", 0, "", ""}};
  const auto out = tunebench::autotune(op, kShape, kDevice, fixed({{1, 10}, {2, 10}, {3, 10}}), o, known);
  ASSERT_EQ(strategy->handed.size(), 2u);
  EXPECT_EQ(strategy->handed[0].str(), "B=1");
  EXPECT_EQ(strategy->handed[1].str(), "B=3");
  EXPECT_EQ(out.best.str(), "B=3");
  EXPECT_EQ(out.best_p50_ns, 7);
  EXPECT_EQ(out.rejected, 1);
  EXPECT_EQ(out.reused_failures, 1);
  ASSERT_EQ(op.precompiled.size(), 1u);  // precompiled before the strategy runs
  EXPECT_EQ(op.precompiled[0].first, strategy->handed);
}

namespace {

// Twenty configs B=1..20 (24 in the expanded space): the race's tests need a field to drop from.
tunebench::testing::HostOp FieldOp() {
  return tunebench::testing::HostOp("field", tunebench::testing::b_range(1, 20), tunebench::testing::b_range(1, 24));
}

// A batched timer over fixed times per config that keeps every batch it was given and counts.
struct Recorder {
  explicit Recorder(std::function<std::int64_t(const Config&, std::int64_t call)> f) : ns(std::move(f)) {}
  std::function<std::int64_t(const Config&, std::int64_t call)> ns;
  std::vector<std::vector<Config>> batches;
  std::map<std::int64_t, int> runs_of;
  std::int64_t calls = 0, total_ns = 0;
  tunebench::RunTimer timer() {
    return [this](const std::vector<Config>& runs) {
      batches.push_back(runs);
      std::vector<std::chrono::nanoseconds> out;
      for (const auto& c : runs) {
        const auto t = ns(c, calls++);
        ++runs_of[c.get("B")];
        total_ns += t;
        out.emplace_back(t);
      }
      return out;
    };
  }
};

// The best is B=7 (1000 ns); a config costs 300 ns more per step away from it.
std::int64_t valley(const Config& c, std::int64_t) { return 1000 + 300 * std::abs(c.get("B") - 7); }

tunebench::TuneOptions race_options() {
  tunebench::TuneOptions o;
  o.strategy = std::make_shared<tunebench::RaceSweep>();
  o.budget_per_config = std::chrono::nanoseconds(100000);  // every config gets 15 runs at full repetitions
  return o;
}

}  // namespace

TEST(Race, DropsClearlySlowerConfigsEarlyAndFindsTheBest) {
  Recorder rec{valley};
  const auto out = tunebench::autotune(FieldOp(), kShape, kDevice, rec.timer(), race_options());
  ASSERT_TRUE(out.found());
  EXPECT_EQ(out.best.str(), "B=7");
  EXPECT_EQ(out.best_p50_ns, 1000);
  ASSERT_EQ(out.results.size(), 20u);  // every config measured, the dropped ones too
  // Within 1.5x of the best after the screen: B=6..8 (1300 ns). Finalists: the three fastest.
  EXPECT_EQ(out.stats.finalists, (std::vector<Config>{Config{{"B", 6}}, Config{{"B", 7}}, Config{{"B", 8}}}));
  EXPECT_EQ(out.stats.dropped, 17);
  EXPECT_EQ(rec.runs_of[1], 2);  // the screen: one warmup and one timed run
  EXPECT_EQ(rec.runs_of[20], 2);
  // Screen, race, full repetitions; runs this short (1 us) are timed each after an untimed run
  // of their own config, as a config's runs follow each other in Google Benchmark's loop.
  EXPECT_EQ(rec.runs_of[7], 2 + 2 * 3 + 2 * 15);
  EXPECT_EQ(rec.runs_of[6], 2 + 2 * 3 + 2 * 15);
  EXPECT_EQ(out.stats.runs, rec.calls);
  EXPECT_EQ(out.stats.kernel_ns, rec.total_ns);
  // Every config has its quantiles; the dropped ones from the runs they had.
  for (const auto& m : out.results) {
    ASSERT_EQ(m.status, Status::kOk) << m.config;
    EXPECT_EQ(*m.p50_ns, valley(Config::parse(m.config), 0)) << m.config;
  }
  // The same winner as every config to full repetitions, for far fewer runs.
  Recorder full{valley};
  tunebench::TuneOptions f = race_options();
  f.strategy = std::make_shared<tunebench::FullSweep>();
  const auto all = tunebench::autotune(FieldOp(), kShape, kDevice, full.timer(), f);
  EXPECT_EQ(all.best, out.best);
  EXPECT_EQ(all.stats.dropped, 0);
  EXPECT_EQ(full.calls, 20 * (1 + 15));
  EXPECT_LT(rec.calls * 2, full.calls);
}

namespace {

// The key with half the M as the cache gives it: B=7 best at best_ns, B=b (b - 6) times that
// for b >= 7 and 7 - b + 1 times for b < 7; B=2 was pruned there, B=3 failed there, B=20 has no row;
// B=99 (a config this op lacks) was dropped there after one lucky run faster than the best.
std::vector<tunebench::cache::Measurement> half_m_key(std::int64_t best_ns) {
  std::vector<tunebench::cache::Measurement> rows;
  tunebench::cache::Measurement lucky;
  lucky.config = "B=99";
  lucky.p20_ns = lucky.p50_ns = lucky.p80_ns = best_ns / 6;
  rows.push_back(lucky);
  for (std::int64_t b = 1; b <= 19; ++b) {
    tunebench::cache::Measurement m;
    m.config = "B=" + std::to_string(b);
    const std::int64_t ratio = b >= 7 ? b - 6 : 7 - b + 1;
    m.p20_ns = m.p50_ns = m.p80_ns = best_ns * ratio;
    if (b == 2) {
      m.status = Status::kPruned;
      m.p20_ns = m.p50_ns = m.p80_ns = std::nullopt;
    }
    if (b == 3) {
      m.status = Status::kLaunchFailed;
      m.p20_ns = m.p50_ns = m.p80_ns = std::nullopt;
    }
    rows.push_back(m);
  }
  return rows;
}

}  // namespace

// Configs that ran more than prune_factor x the stored best of the key with half the M (not its
// fastest row), or were pruned there, are not run: stored as pruned with the ratio; those it
// failed or lacks still run.
TEST(Race, PrunesByTheKeyWithHalfTheMAndRunsTheRest) {
  const auto long_valley = [](const Config& c, std::int64_t) { return 400'000 + 50'000 * std::abs(c.get("B") - 7); };
  Recorder rec{long_valley};
  auto o = race_options();
  o.prune_from = half_m_key(300'000);
  o.prune_from_best_ns = 300'000;
  o.prune_from_label = "M=16";
  const auto out = tunebench::autotune(FieldOp(), kShape, kDevice, rec.timer(), o);
  ASSERT_TRUE(out.found());
  EXPECT_EQ(out.best.str(), "B=7");
  ASSERT_EQ(out.results.size(), 20u);  // every config has its row
  // More than 4x the best there: B=1, 2 (pruned there), 11..19 (5x..13x); B=4 is exactly 4x.
  const std::set<std::int64_t> expected{1, 2, 11, 12, 13, 14, 15, 16, 17, 18, 19};
  EXPECT_EQ(out.stats.pruned, static_cast<int>(expected.size()));
  for (const auto& m : out.results) {
    const auto b = Config::parse(m.config).get("B");
    if (expected.count(b)) {
      EXPECT_EQ(m.status, Status::kPruned) << m.config;
      EXPECT_FALSE(m.p50_ns) << m.config;
      EXPECT_EQ(rec.runs_of[b], 0) << m.config;
    } else {
      EXPECT_EQ(m.status, Status::kOk) << m.config;
      EXPECT_GT(rec.runs_of[b], 0) << m.config;
    }
  }
  const auto row = [&](const std::string& c) {
    return *std::find_if(out.results.begin(), out.results.end(), [&](const auto& m) { return m.config == c; });
  };
  EXPECT_EQ(row("B=12").error, "pruned: 6.00x the best on M=16");
  EXPECT_EQ(row("B=2").error, "pruned: not run on M=16 either");
  EXPECT_EQ(out.stats.dropped + out.stats.pruned + static_cast<int>(out.stats.finalists.size()), 20);
}

// Nothing is pruned by a key of short runs (under 200 us), with the factor 0, or where every
// config would be.
TEST(Race, PrunesNothingByShortKeysWithFactorZeroOrWhenNoneWouldBeLeft) {
  const auto long_valley = [](const Config& c, std::int64_t) { return 400'000 + 50'000 * std::abs(c.get("B") - 7); };
  const auto pruned_with = [&](tunebench::TuneOptions o) {
    Recorder rec{long_valley};
    const auto out = tunebench::autotune(FieldOp(), kShape, kDevice, rec.timer(), o);
    EXPECT_TRUE(out.found());
    return out.stats.pruned;
  };
  auto o = race_options();
  o.prune_from = half_m_key(150'000);
  o.prune_from_best_ns = 150'000;
  o.prune_from_label = "M=16";
  EXPECT_EQ(pruned_with(o), 0);
  o.prune_from = half_m_key(300'000);
  o.prune_from_best_ns = 300'000;
  EXPECT_GT(pruned_with(o), 0);
  o.prune_from_best_ns = 0;  // no stored best
  EXPECT_EQ(pruned_with(o), 0);
  o.prune_from_best_ns = 300'000;
  o.prune_factor = 0;
  EXPECT_EQ(pruned_with(o), 0);
  // Only B=12 and B=13 here, both more than 4x the best there: none is pruned.
  o.prune_factor = 4;
  Recorder rec{long_valley};
  auto partial = o;
  partial.only = {Config{{"B", 12}}, Config{{"B", 13}}};
  const auto out = tunebench::autotune(FieldOp(), kShape, kDevice, rec.timer(), partial);
  EXPECT_TRUE(out.found());
  EXPECT_EQ(out.stats.pruned, 0);
}

TEST(Race, FinalistsAreEveryConfigWithinTheBandAndAtLeastTheMinimum) {
  // B=1..5 within 2% of the best (B=3), the rest 8% slower: all of the five are finalists.
  Recorder rec{[](const Config& c, std::int64_t) -> std::int64_t {
    const auto b = c.get("B");
    return b <= 5 ? 1000 + 4 * std::abs(b - 3) : 1080;
  }};
  const auto out = tunebench::autotune(FieldOp(), kShape, kDevice, rec.timer(), race_options());
  EXPECT_EQ(out.stats.finalists.size(), 5u);
  EXPECT_EQ(out.best.str(), "B=1");  // 1008 ns ties with 1000 within 1%: the earliest wins
  EXPECT_EQ(out.stats.dropped, 15);
}

TEST(Race, TheScreenRunsConfigsInTurnAndLaterRoundsInterleave) {
  Recorder rec{valley};
  tunebench::autotune(FieldOp(), kShape, kDevice, rec.timer(), race_options());
  // The screen: the first config alone (its time sizes the batches), then the others in few
  // batches, each config's warmup and timed run together, in the op's order.
  ASSERT_EQ(rec.batches[0], (std::vector<Config>{Config{{"B", 1}}, Config{{"B", 1}}}));
  std::vector<Config> runs;
  std::size_t b = 0;
  while (runs.size() < 40) runs.insert(runs.end(), rec.batches[b].begin(), rec.batches[b].end()), ++b;
  ASSERT_EQ(runs.size(), 40u);
  EXPECT_LE(b, 3u);
  for (std::size_t i = 0; i < 40; ++i) EXPECT_EQ(runs[i].get("B"), static_cast<std::int64_t>(i / 2 + 1)) << i;
  // The race and the final: round-robin over their configs, each timed run of these short runs
  // after an untimed run of its own config (pairs).
  ASSERT_LT(b, rec.batches.size());
  for (std::size_t i = b; i < rec.batches.size(); ++i) {
    const auto& batch = rec.batches[i];
    ASSERT_EQ(batch.size() % 2, 0u) << "batch " << i;
    for (std::size_t j = 0; j < batch.size(); j += 2) EXPECT_EQ(batch[j], batch[j + 1]) << "batch " << i;
    for (std::size_t j = 2; j < batch.size(); j += 2) {
      // The same config in two pairs in a row only once the others have had all their runs.
      if (batch[j] == batch[j - 2]) {
        for (std::size_t k = j; k < batch.size(); ++k) EXPECT_EQ(batch[k], batch[j]) << "batch " << i;
        break;
      }
    }
  }
}

// Runs of 200 us or more are interleaved one by one: an untimed run before each would double
// their cost for a start-up far smaller than the run.
TEST(Race, LongRunsAreInterleavedWithoutAnUntimedRunBeforeEach) {
  Recorder rec{
      [](const Config& c, std::int64_t) -> std::int64_t { return 300'000 + 50'000 * std::abs(c.get("B") - 7); }};
  const auto out = tunebench::autotune(FieldOp(), kShape, kDevice, rec.timer(), race_options());
  ASSERT_TRUE(out.found());
  EXPECT_EQ(out.best.str(), "B=7");
  // The screen's first config (its warmup and its run: the key's length is not known yet), then
  // one run each (B=20, 3.2x the best, leaves there); the race's and final's runs one by one,
  // round-robin.
  EXPECT_EQ(rec.runs_of[1], 2);
  EXPECT_EQ(rec.runs_of[20], 1);
  EXPECT_EQ(rec.runs_of[7], 1 + 3 + 3);  // full repetitions: the minimum, 3, past the budget
  bool pair = false;
  for (std::size_t i = 0; i < rec.batches.size(); ++i) {
    const auto& batch = rec.batches[i];
    if (batch.size() < 4) continue;
    for (std::size_t j = 1; j + 1 < batch.size(); ++j) pair |= batch[j] == batch[j - 1] && !(batch[j + 1] == batch[j]);
  }
  EXPECT_FALSE(pair);
}

// A timer that names the failing run (as OpTiming does for a config's first runs): only that
// config is recorded, the sticky error stops the sweep, the others' screen results are kept.
TEST(Race, AFailureNamedByTheTimerIsRecordedAgainstItsConfigAlone) {
  Recorder rec{valley};
  const auto inner = rec.timer();
  const tunebench::RunTimer naming = [&](const std::vector<Config>& runs) {
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].get("B") == 12) {
        try {
          throw tunebench::CudaError("cudaErrorIllegalAddress", cudaErrorIllegalAddress, true);
        } catch (const std::exception& e) {
          throw tunebench::BatchRunError(i, std::current_exception(), e.what());
        }
      }
    }
    return inner(runs);
  };
  const auto out = tunebench::autotune(FieldOp(), kShape, kDevice, naming, race_options());
  EXPECT_FALSE(out.found());
  EXPECT_NE(out.fatal_error.find("cudaErrorIllegalAddress"), std::string::npos);
  int failed = 0;
  for (const auto& m : out.results) {
    if (m.status != Status::kOk) {
      ++failed;
      EXPECT_EQ(m.config, "B=12");
    }
  }
  EXPECT_EQ(failed, 1);
}

// A clock that slows the GPU down as the sweep goes on (a power limit, say) favours whatever is
// timed first when configs are timed one after the other; interleaving does not.
TEST(Race, ADriftingClockDoesNotFavourTheConfigTimedFirst) {
  const auto drifting = [](const Config& c, std::int64_t call) -> std::int64_t {
    const double base = c.get("B") == 2 ? 1000 : c.get("B") == 1 ? 1030 : 5000;
    return static_cast<std::int64_t>(base * (1.0 + 0.004 * static_cast<double>(call)));
  };
  tunebench::TuneOptions o = race_options();
  o.tie_tolerance = 0;
  Recorder race{drifting};
  EXPECT_EQ(tunebench::autotune(FieldOp(), kShape, kDevice, race.timer(), o).best.str(), "B=2");
  Recorder full{drifting};
  o.strategy = std::make_shared<tunebench::FullSweep>();
  EXPECT_EQ(tunebench::autotune(FieldOp(), kShape, kDevice, full.timer(), o).best.str(), "B=1");
}

// Runs that take their workload's variants in turn (routings of unequal cost, one per run
// whatever config runs) are compared on the same variants: with four finalists timed each after
// an untimed run of its own, every pass is 8 runs long, so without padding each finalist would
// keep one routing for all its repetitions, and B=8 (0.8% slower) on a cheap one would win.
TEST(Race, ConfigsOnRotatingVariantsAreComparedOnEveryVariant) {
  constexpr double kRouting[8] = {1.00, 1.04, 0.97, 1.03, 0.98, 1.05, 0.96, 1.02};
  const auto routed = [&](const Config& c, std::int64_t call) -> std::int64_t {
    const std::int64_t b = c.get("B");
    const double base = b == 7 ? 1000 : b == 8 ? 1008 : b == 6 ? 1012 : b == 9 ? 1016 : 2000 + 10 * b;
    return static_cast<std::int64_t>(base * kRouting[call % 8]);
  };
  tunebench::TuneOptions o = race_options();
  o.tie_tolerance = 0;
  o.run_variants = 8;
  Recorder rec{routed};
  const auto out = tunebench::autotune(FieldOp(), kShape, kDevice, rec.timer(), o);
  ASSERT_TRUE(out.found());
  EXPECT_GE(out.stats.finalists.size(), 3u);
  EXPECT_EQ(out.best.str(), "B=7");
}

TEST(Race, ExhaustiveSearchRacesTooAndTimesTheExpandedSpace) {
  Recorder rec{valley};
  tunebench::TuneOptions o = race_options();
  o.space = tunebench::SpaceKind::kExpanded;
  const auto out = tunebench::autotune(FieldOp(), kShape, kDevice, rec.timer(), o);
  EXPECT_EQ(out.results.size(), 24u);
  EXPECT_EQ(out.best.str(), "B=7");
  EXPECT_EQ(out.stats.dropped, 21);
}

TEST(Race, AConfigThatFailsMidRaceLeavesItAndTheOthersGoOn) {
  // B=8 throws from its third run on (inside an interleaved batch).
  int b8 = 0;
  Recorder rec{[&](const Config& c, std::int64_t) -> std::int64_t {
    if (c.get("B") == 8 && ++b8 >= 3) throw std::runtime_error("launch failed on run " + std::to_string(b8));
    return valley(c, 0);
  }};
  const auto out = tunebench::autotune(FieldOp(), kShape, kDevice, rec.timer(), race_options());
  EXPECT_EQ(out.best.str(), "B=7");
  const auto m8 = std::find_if(out.results.begin(), out.results.end(), [](const auto& m) { return m.config == "B=8"; });
  ASSERT_NE(m8, out.results.end());
  EXPECT_EQ(m8->status, Status::kLaunchFailed);
  EXPECT_NE(m8->error.find("launch failed"), std::string::npos);
  EXPECT_EQ(std::count(out.stats.finalists.begin(), out.stats.finalists.end(), Config{{"B", 8}}), 0);
}

TEST(Race, AStickyErrorInAnInterleavedRoundRecordsItsBatchAndStops) {
  int b6 = 0;
  Recorder rec{[&](const Config& c, std::int64_t) -> std::int64_t {
    if (c.get("B") == 6 && ++b6 == 3) {
      throw tunebench::CudaError("cudaErrorIllegalAddress", cudaErrorIllegalAddress, true);
    }
    return valley(c, 0);
  }};
  const auto out = tunebench::autotune(FieldOp(), kShape, kDevice, rec.timer(), race_options());
  EXPECT_FALSE(out.found());
  EXPECT_NE(out.fatal_error.find("cudaErrorIllegalAddress"), std::string::npos);
  // The race's batch held B=6..8: each is recorded failed, so no later sweep runs them again.
  for (const char* config : {"B=6", "B=7", "B=8"}) {
    const auto m =
        std::find_if(out.results.begin(), out.results.end(), [&](const auto& r) { return r.config == config; });
    ASSERT_NE(m, out.results.end()) << config;
    EXPECT_EQ(m->status, Status::kLaunchFailed) << config;
  }
  EXPECT_EQ(out.results.size(), 20u);  // the screen's measurements are kept
}

TEST(Race, TheFinalRoundOrdersContendersByTheOpsConfigOrderForTheTieRule) {
  tunebench::TuneOptions o;
  o.strategy = std::make_shared<tunebench::FinalRound>();
  o.only = {Config{{"B", 9}}, Config{{"B", 3}}, Config{{"B", 22}}};  // 22: of the expanded space only
  Recorder rec{[](const Config& c, std::int64_t) -> std::int64_t { return c.get("B") == 9 ? 1000 : 1008; }};
  const auto out = tunebench::autotune(FieldOp(), kShape, kDevice, rec.timer(), o);
  EXPECT_EQ(out.best.str(), "B=3");  // within 1% of B=9 and earlier in the op's order
  EXPECT_EQ(out.stats.finalists, (std::vector<Config>{Config{{"B", 3}}, Config{{"B", 9}}, Config{{"B", 22}}}));
  // One warmup, then full repetitions, each of these short runs after an untimed run of its own
  // config.
  EXPECT_EQ(rec.runs_of[3], 1 + 2 * 15);
  EXPECT_EQ(rec.batches.front().size(), 3u);  // the warmups of all three in one batch
}

TEST(Race, StrategiesByName) {
  EXPECT_EQ((*tunebench::strategy_named("race"))->name(), "race");
  EXPECT_EQ((*tunebench::strategy_named("full"))->name(), "full");
  EXPECT_FALSE(tunebench::strategy_named("fastest"));
}

TEST(Race, EachRowOfTheStrategyTableMakesTheStrategyItNames) {
  const auto& table = tunebench::sweep_strategy_table();
  ASSERT_GE(table.size(), 2u);
  EXPECT_EQ(tunebench::default_sweep_strategy(), "race");
  for (const auto& row : table) {
    EXPECT_EQ(row.make()->name(), row.name);
    EXPECT_EQ(tunebench::sweep_strategy(row.name, "TUNEBENCH_SWEEP")->name(), row.name);
  }
}

// The checked lookup: one line naming where the name came from and every name of the table.
TEST(Race, AnUnknownStrategyIsOneLineListingTheTablesNames) {
  try {
    tunebench::sweep_strategy("fastest", "TUNEBENCH_SWEEP");
    FAIL() << "no error for an unknown strategy";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what, "TUNEBENCH_SWEEP='fastest': expected " + tunebench::sweep_strategy_choices());
    EXPECT_EQ(what.find('\n'), std::string::npos);
    for (const auto& row : tunebench::sweep_strategy_table()) EXPECT_NE(what.find(row.name), std::string::npos);
  }
  // "race, ... or <last>", in the table's order.
  const auto& table = tunebench::sweep_strategy_table();
  const std::string choices = tunebench::sweep_strategy_choices();
  EXPECT_EQ(choices.rfind(std::string(table.front().name) + (table.size() > 2 ? ", " : " or "), 0), 0u) << choices;
  const std::string last = std::string(" or ") + table.back().name;
  EXPECT_EQ(choices.substr(choices.size() - last.size()), last) << choices;
}

TEST(Race, FullSweepBatchesAConfigsRunsAndReportsFinalists) {
  Recorder rec{valley};
  tunebench::TuneOptions o = race_options();
  o.strategy = std::make_shared<tunebench::FullSweep>();
  const auto out = tunebench::autotune(FieldOp(), kShape, kDevice, rec.timer(), o);
  EXPECT_EQ(out.best.str(), "B=7");
  // Per config: the warmup and first timed run, then the rest of its repetitions in one batch.
  EXPECT_EQ(rec.batches.size(), 40u);
  EXPECT_EQ(rec.batches[0].size(), 2u);
  EXPECT_EQ(out.stats.finalists, (std::vector<Config>{Config{{"B", 6}}, Config{{"B", 7}}, Config{{"B", 8}}}));
  EXPECT_EQ(out.stats.runs, rec.calls);
}
