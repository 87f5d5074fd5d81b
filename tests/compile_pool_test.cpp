// The sweep's compile pool (sweep/compile_pool.hpp): keys compiled in the order the workers reach
// them, each config once, a key announced as soon as what it needs is compiled; the host's cores
// held while it compiles; the workers' side of the announcements.

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sweep/compile_pool.hpp"
#include "sweep/host_cores.hpp"
#include "sweep/shard_plan.hpp"
#include "tunebench/cuda.hpp"
#include "tunebench/op.hpp"

namespace fs = std::filesystem;
using tunebench::CompilePool;
using tunebench::Config;

namespace {

fs::path scratch(const char* name) {
  const fs::path p = fs::temp_directory_path() / ("tunebench-compile-pool-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

Config b(std::int64_t v) { return Config{{"B", v}}; }

// An op whose precompile records what it was given (one config a call from the pool), and can
// fail for one config or check something while it compiles.
class CompilingOp final : public tunebench::Op {
 public:
  std::string name() const override { return "compiling"; }
  benchmark::TimeUnit time_unit() const override { return benchmark::kMicrosecond; }
  bool needs_gpu() const override { return true; }
  std::string kernel_version() const override { return "compiling-1"; }
  std::vector<Config> config_space(tunebench::SpaceKind) const override { return {}; }
  std::unique_ptr<tunebench::Workload> prepare(const tunebench::Shape&, std::uint64_t) const override {
    return nullptr;
  }
  void run(tunebench::Workload&, const Config&, cudaStream_t) const override {}
  double flops(const tunebench::Shape&) const override { return 1; }
  double bytes(const tunebench::Shape&) const override { return 1; }
  void precompile(const std::vector<Config>& configs, const tunebench::DeviceInfo&, int threads) const override {
    if (while_compiling) while_compiling();
    if (while_compiling_each) {
      for (const auto& c : configs) while_compiling_each(c);
    }
    std::lock_guard<std::mutex> lock(mutex);
    calls.push_back({configs, threads});
    for (const auto& c : configs) compiled.insert(c.str());
    for (const auto& c : configs) {
      if (c == fails) throw std::runtime_error("compile_failed: " + c.str());
    }
  }
  bool has_compiled(const std::vector<Config>& configs) const {
    std::lock_guard<std::mutex> lock(mutex);
    return std::all_of(configs.begin(), configs.end(), [&](const Config& c) { return compiled.count(c.str()) > 0; });
  }
  Config fails;
  std::function<void()> while_compiling;
  std::function<void(const Config&)> while_compiling_each;
  mutable std::mutex mutex;
  mutable std::vector<std::pair<std::vector<Config>, int>> calls;
  mutable std::set<std::string> compiled;
};

const auto kDevice = tunebench::sm90_reference_device();

}  // namespace

// One thread: the configs go in the order of the keys, each once, one a call; a key whose
// configs an earlier key had needs nothing compiled for it (k3 may come before k2: b(1) alone).
TEST(CompilePool, CompilesKeyByKeyInTheOrderAddedEachConfigOnce) {
  CompilingOp op;
  std::vector<std::string> announced;
  CompilePool pool(kDevice, 1, [&](const std::string& name) { announced.push_back(name); });
  pool.add("k1", op, {b(1), b(2), b(3)});
  pool.add("k2", op, {b(2), b(4)});
  pool.add("k3", op, {b(1)});
  pool.wait();
  ASSERT_EQ(announced.size(), 3u);
  EXPECT_EQ(std::set<std::string>(announced.begin(), announced.end()), (std::set<std::string>{"k1", "k2", "k3"}));
  std::vector<Config> order;
  for (const auto& [configs, threads] : op.calls) {
    ASSERT_EQ(configs.size(), 1u);
    EXPECT_EQ(threads, 1);
    order.push_back(configs[0]);
  }
  EXPECT_EQ(order, (std::vector<Config>{b(1), b(2), b(3), b(4)}));
  EXPECT_EQ(pool.compiled(), 4u);
  // Another op's config of the same text is another binary: compiled too.
  CompilingOp other;
  pool.add("k4", other, {b(1)});
  pool.wait();
  EXPECT_EQ(other.calls.size(), 1u);
  EXPECT_EQ(announced.back(), "k4");
}

// On many threads: whenever a key is announced, every config it needs has been compiled, and
// every key is announced once.
TEST(CompilePool, AnnouncesAKeyOnlyOnceEveryConfigItNeedsIsCompiled) {
  CompilingOp op;
  std::vector<std::vector<Config>> keys;
  for (int k = 0; k < 40; ++k) {
    std::vector<Config> configs;
    for (int c = 0; c < 1 + k % 7; ++c) configs.push_back(b((k * 5 + c * 3) % 60));
    keys.push_back(configs);
  }
  std::vector<std::string> announced;
  std::vector<std::string> early;  // keys announced before their configs were compiled
  CompilePool pool(kDevice, 8, [&](const std::string& name) {
    announced.push_back(name);
    if (!op.has_compiled(keys[std::stoul(name)])) early.push_back(name);
  });
  std::vector<std::string> names;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    names.push_back(std::to_string(k));
    pool.add(names.back(), op, keys[k]);
  }
  pool.wait();
  EXPECT_EQ(std::multiset<std::string>(announced.begin(), announced.end()),
            std::multiset<std::string>(names.begin(), names.end()));
  EXPECT_TRUE(early.empty()) << early.front();
  std::set<std::string> distinct;
  for (const auto& k : keys) {
    for (const auto& c : k) distinct.insert(c.str());
  }
  EXPECT_EQ(op.calls.size(), distinct.size());  // each config once
  EXPECT_EQ(pool.compiled(), distinct.size());
}

// A key is announced once its own configs are compiled, while a key added before it still waits
// for one of its own: a worker may tune the later key first (ready_key).
TEST(CompilePool, AnnouncesAKeyWhoseConfigsAreCompiledBeforeAnEarlierKeyStillCompiling) {
  CompilingOp op;
  std::mutex m;
  std::vector<std::string> announced;
  std::atomic<bool> release{false};
  op.while_compiling_each = [&](const Config& c) {
    // k1's only config holds its thread until k2 is announced (10 s at most).
    if (c != b(1)) return;
    for (int i = 0; i < 5000 && !release; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
  CompilePool pool(kDevice, 2, [&](const std::string& name) {
    std::lock_guard<std::mutex> lock(m);
    announced.push_back(name);
    if (name == "k2") release = true;
  });
  pool.add("k1", op, {b(1)});
  pool.add("k2", op, {b(2), b(3)});
  pool.add("k3", op, {b(1), b(3)});  // needs k1's config too: after it
  pool.wait();
  EXPECT_EQ(announced, (std::vector<std::string>{"k2", "k1", "k3"}));
}

// A config that does not compile is the sweep's to report: the pool goes on, and announces.
TEST(CompilePool, AFailingConfigCountsAsCompiled) {
  CompilingOp op;
  op.fails = b(2);
  std::vector<std::string> announced;
  CompilePool pool(kDevice, 2, [&](const std::string& name) { announced.push_back(name); });
  pool.add("k1", op, {b(1), b(2), b(3)});
  pool.add("k2", op, {b(4)});
  pool.wait();
  EXPECT_EQ(std::set<std::string>(announced.begin(), announced.end()), (std::set<std::string>{"k1", "k2"}));
  EXPECT_EQ(announced.size(), 2u);
  EXPECT_EQ(pool.compiled(), 4u);
}

// The pool holds the host's cores while it compiles, so no shard times a host op meanwhile, and
// lets them go once it has nothing to compile; it waits for a shard that holds them.
TEST(CompilePool, HoldsTheHostsCoresWhileItCompiles) {
  const fs::path dir = scratch("cores");
  tunebench::HostCores shard(tunebench::host_cores_file(dir));
  std::atomic<bool> free_while_compiling{false};
  std::atomic<bool> shard_done{false};
  std::atomic<bool> compiled_while_shard_held{false};
  CompilingOp op;
  op.while_compiling = [&] {
    if (!shard_done) compiled_while_shard_held = true;
    tunebench::HostCores other(tunebench::host_cores_file(dir));
    if (other.try_hold()) free_while_compiling = true;
  };
  auto held = shard.try_hold();
  ASSERT_TRUE(held);
  std::vector<std::string> announced;
  CompilePool pool(
      kDevice, 3, [&](const std::string& name) { announced.push_back(name); }, tunebench::host_cores_file(dir));
  pool.add("k1", op, {b(1), b(2), b(3), b(4)});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the pool tries the lock meanwhile
  shard_done = true;
  held.reset();
  pool.wait();
  EXPECT_EQ(announced, (std::vector<std::string>{"k1"}));
  EXPECT_FALSE(compiled_while_shard_held);
  EXPECT_FALSE(free_while_compiling);
  EXPECT_TRUE(tunebench::HostCores(tunebench::host_cores_file(dir)).try_hold());  // let go when idle
  pool.stop();
  // And every time it runs out of work, whichever of its threads asked for the cores last.
  CompilePool many(kDevice, 8, nullptr, tunebench::host_cores_file(dir));
  int kept = 0;
  for (int round = 0; round < 100; ++round) {
    many.add("more" + std::to_string(round), op, {b(100 + 3 * round), b(101 + 3 * round), b(102 + 3 * round)});
    many.wait();
    kept += tunebench::HostCores(tunebench::host_cores_file(dir)).try_hold() ? 0 : 1;
  }
  EXPECT_EQ(kept, 0) << "rounds after which the idle pool kept the host's cores";
  fs::remove_all(dir);
}

TEST(CompilePool, StopReturnsAndAnnouncesNothingMore) {
  CompilingOp op;
  std::vector<std::string> announced;
  CompilePool pool(kDevice, 2, [&](const std::string& name) { announced.push_back(name); });
  pool.add("k1", op, {b(1)});
  pool.wait();
  pool.stop();
  pool.add("k2", op, {b(2)});
  pool.stop();
  EXPECT_EQ(announced, (std::vector<std::string>{"k1"}));
  EXPECT_EQ(op.calls.size(), 1u);
}

// A worker's side: without the file, no pool feeds the sweep and nothing is waited for; with it,
// a key is there once its line is.
TEST(CompiledKeys, AWorkerSeesTheKeysThePoolAnnounced) {
  const fs::path dir = scratch("keys");
  tunebench::CompiledKeys none(tunebench::compiled_keys_file(dir));
  EXPECT_FALSE(none.active());
  EXPECT_TRUE(none.announced("op/set/M:1/N:64/K:64"));
  EXPECT_EQ(none.wait_for("op/set/M:1/N:64/K:64", [] { FAIL() << "waited without a pool"; }), 0);

  tunebench::CompiledKeysWriter writer(tunebench::compiled_keys_file(dir));
  tunebench::CompiledKeys keys(tunebench::compiled_keys_file(dir));
  ASSERT_TRUE(keys.active());
  EXPECT_FALSE(keys.announced("op/set/M:1/N:64/K:64"));
  writer.announce("op/set/M:1/N:64/K:64");
  EXPECT_TRUE(keys.announced("op/set/M:1/N:64/K:64"));
  EXPECT_FALSE(keys.announced("op/set/M:1/N:64"));  // a whole line, not a prefix
  int waits = 0;
  const double waited = keys.wait_for("op/set/M:8/N:64/K:64", [&] {
    ++waits;
    writer.announce("op/set/M:8/N:64/K:64");  // the pool announces it while the worker waits
  });
  EXPECT_EQ(waits, 1);
  EXPECT_GE(waited, 0);
  EXPECT_EQ(keys.wait_for("op/set/M:1/N:64/K:64", [&] { ++waits; }), 0);
  EXPECT_EQ(waits, 1);
  fs::remove_all(dir);
}

// Each config is announced as soon as it is compiled, before its key: a worker times a key's
// first configs while the pool compiles the rest.
TEST(CompilePool, AnnouncesEachConfigAsSoonAsItIsCompiled) {
  CompilingOp op;
  std::mutex m;
  std::vector<std::string> events;
  std::atomic<int> compiling{0};
  op.while_compiling = [&] {
    // The third config waits until the first two were announced: they were, before the key.
    if (++compiling == 3) {
      for (int i = 0; i < 500; ++i) {
        {
          std::lock_guard<std::mutex> lock(m);
          if (events.size() >= 2) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
  };
  CompilePool pool(
      kDevice, 1,
      [&](const std::string& name) {
        std::lock_guard<std::mutex> lock(m);
        events.push_back("key " + name);
      },
      {},
      [&](const tunebench::Op& o, const Config& c) {
        std::lock_guard<std::mutex> lock(m);
        events.push_back(o.name() + " " + c.str());
      });
  pool.add("k1", op, {b(1), b(2), b(3)});
  pool.wait();
  EXPECT_EQ(events, (std::vector<std::string>{"compiling B=1", "compiling B=2", "compiling B=3", "key k1"}));
}

// A worker waits for a config's own line, or for its key's (which covers a config the pool never
// had on its own line); a config line is no key.
TEST(CompiledKeys, AWorkerWaitsForAConfigOrItsKey) {
  const fs::path dir = scratch("configs");
  tunebench::CompiledKeysWriter writer(tunebench::compiled_keys_file(dir));
  tunebench::CompiledKeys keys(tunebench::compiled_keys_file(dir));
  writer.announce(tunebench::compiled_config_line("op", "B=1"));
  int waits = 0;
  EXPECT_EQ(keys.wait_for_config("op", "B=1", "op/set/M:1", [&] { ++waits; }), 0);
  EXPECT_FALSE(keys.announced("op/set/M:1"));
  EXPECT_FALSE(keys.announced("B=1"));
  const double waited = keys.wait_for_config("op", "B=2", "op/set/M:1", [&] {
    ++waits;
    writer.announce("op/set/M:1");  // the key: all of its configs are compiled
  });
  EXPECT_EQ(waits, 1);
  EXPECT_GE(waited, 0);
  // Another op's config of the same text is not the first op's.
  EXPECT_GE(keys.wait_for_config("other", "B=1", "other/set/M:1",
                                 [&] {
                                   ++waits;
                                   writer.announce(tunebench::compiled_config_line("other", "B=1"));
                                 }),
            0);
  EXPECT_EQ(waits, 2);
  EXPECT_EQ(keys.wait_for_config("other", "B=1", "other/set/M:1", [&] { ++waits; }), 0);
  EXPECT_EQ(waits, 2);
  fs::remove_all(dir);
}

// The pool compiles in the order the shards reach the keys: one shard, its list (largest cost
// first); several, by each key's estimated start, a doubled key at its earlier one.
TEST(CompilePool, KeysAreCompiledInTheOrderTheShardsReachThem) {
  const std::vector<double> costs{1, 8, 3, 5, 2};
  EXPECT_EQ(tunebench::reach_order(tunebench::plan_shards(costs, 1, 0), costs),
            (std::vector<std::size_t>{1, 3, 2, 4, 0}));
  tunebench::ShardPlan plan;
  plan.shards = {{1, 4, 0}, {3, 2, 0}};  // key 0 doubled: at 10 on shard 0, at 8 on shard 1
  plan.doubled = {0};
  EXPECT_EQ(tunebench::reach_order(plan, costs), (std::vector<std::size_t>{1, 3, 2, 4, 0}));
  plan.shards = {{1}, {3, 2, 4, 0}};  // 1 and 3 both start at 0: the larger first
  EXPECT_EQ(tunebench::reach_order(plan, costs), (std::vector<std::size_t>{1, 3, 2, 4, 0}));
  plan.shards = {{2, 4}, {0, 1, 3}};  // starts: 2@0 0@0 4@3 1@1 3@9
  EXPECT_EQ(tunebench::reach_order(plan, costs), (std::vector<std::size_t>{2, 0, 1, 4, 3}));
}
