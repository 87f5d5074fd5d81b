// MpiSession: the ranks of an MPI job; without MPI (TUNEBENCH_WITH_MPI unset) only the
// launcher's detection, which refuses to run.

#include "sweep/mpi/mpi_session.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "sweep/shard_plan.hpp"

#ifdef TUNEBENCH_WITH_MPI
#include <mpi.h>
#endif

namespace tunebench {
namespace {

std::optional<int> var(const Settings& s, const char* name) {
  const auto it = s.launcher.find(name);
  if (it == s.launcher.end()) return std::nullopt;
  return std::stoi(it->second);  // the settings table checked it is a small non-negative integer
}

[[maybe_unused]] std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown host";
  return name;
}

// This host's GPU entries: CUDA_VISIBLE_DEVICES's, else one per card the driver lists. Counted
// from /proc, not by the CUDA runtime: once it has started, CUDA_VISIBLE_DEVICES is read.
[[maybe_unused]] std::vector<std::string> host_tokens(const Settings& s) {
  if (s.visible_devices) return device_tokens(s.visible_devices->c_str(), 0);
  int cards = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++cards;
  }
  return device_tokens(nullptr, cards);
}

MpiSession*& the_session() {
  static MpiSession* session = nullptr;
  return session;
}

}  // namespace

Launch detect_launch(const Settings& s) {
  Launch l;
  if (s.shard >= 0) return l;
  struct Family {
    const char *size, *rank, *local;
  };
  for (const Family& f : {Family{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"},
                          Family{"PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID"},
                          Family{"SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "SLURM_LOCALID"}}) {
    const auto size = var(s, f.size);
    if (!size) continue;
    l.size = *size;
    l.rank = var(s, f.rank).value_or(0);
    l.local_rank = var(s, f.local).value_or(-1);
    l.by = std::string(f.size) + "=" + std::to_string(*size);
    const bool rank_bad = l.rank >= l.size;
    if (rank_bad || l.local_rank >= l.size) {
      throw std::invalid_argument(std::string(rank_bad ? f.rank : f.local) + "=" +
                                  std::to_string(rank_bad ? l.rank : l.local_rank) + " beside " + l.by +
                                  ": expected a rank below the job's size (variables of another job?)");
    }
    return l;
  }
  // PMIx alone names the rank, not the size: a rank above 0 is one of several.
  if (const auto rank = var(s, "PMIX_RANK"); rank && *rank > 0) {
    l.size = *rank + 1;
    l.rank = *rank;
    l.by = "PMIX_RANK=" + std::to_string(*rank);
  }
  return l;
}

std::string rank_device(int local_rank, const std::vector<std::string>& tokens, const std::string& host) {
  if (tokens.empty()) return "";
  if (local_rank < 0 || static_cast<std::size_t>(local_rank) >= tokens.size()) {
    throw std::invalid_argument("local rank " + std::to_string(local_rank) + " on " + host + ", but this host has " +
                                std::to_string(tokens.size()) + " GPU entr" + (tokens.size() == 1 ? "y" : "ies") +
                                " (CUDA_VISIBLE_DEVICES, else the cards the driver lists): start at most " +
                                std::to_string(tokens.size()) + (tokens.size() == 1 ? " rank" : " ranks") +
                                " per host, one GPU each");
  }
  const auto mine = tokens.begin() + local_rank;
  if (std::find(tokens.begin(), mine, *mine) != mine) {
    throw std::invalid_argument("local rank " + std::to_string(local_rank) + " on " + host +
                                ": CUDA_VISIBLE_DEVICES lists '" + *mine +
                                "' twice, so two ranks would share one GPU; list each GPU once");
  }
  return *mine;
}

MpiSession* MpiSession::current() { return the_session(); }

bool built_with_mpi() {
#ifdef TUNEBENCH_WITH_MPI
  return true;
#else
  return false;
#endif
}

#ifndef TUNEBENCH_WITH_MPI

struct MpiSession::Pending {};

MpiSession* MpiSession::start(Settings& settings) {
  const Launch l = detect_launch(settings);
  if (l.size <= 1) return nullptr;
  throw std::invalid_argument("this bench was built without MPI, but runs as rank " + std::to_string(l.rank) + " of " +
                              std::to_string(l.size) + " under a launcher (" + l.by +
                              "): rebuild with Open MPI or MPICH installed (scripts/setup.sh), or start one bench");
}
void MpiSession::end(int) {}
MpiSession::~MpiSession() = default;
void MpiSession::post(int, int, const std::string&) {}
std::optional<MpiSession::Message> MpiSession::receive() { return std::nullopt; }
void MpiSession::forget(int) {}
std::vector<std::string> MpiSession::gather(const std::string& mine) { return {mine}; }
int MpiSession::scatter(const std::vector<int>& flags) { return flags.empty() ? 0 : flags[0]; }

#else

struct MpiSession::Pending {
  MPI_Request request = MPI_REQUEST_NULL;
  int to = 0;
  std::string text;
};

namespace {

// The local rank from the launcher, else from the ranks that share this host's memory.
int local_rank_of(const Launch& l) {
  if (l.local_rank >= 0) return l.local_rank;
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int r = 0;
  MPI_Comm_rank(local, &r);
  MPI_Comm_free(&local);
  return r;
}

// Every rank learns whether every rank found its GPU; a rank that did not says why, the others
// that it was another one, and all leave MPI together (exit status 2, no rank left waiting).
void agree_on_devices(const std::string& error, int rank) {
  int ok = error.empty() ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (all) return;
  MPI_Finalize();
  throw std::invalid_argument(
      "rank " + std::to_string(rank) + ": " +
      (error.empty() ? std::string("another rank has no GPU of its own (see its line)") : error));
}

}  // namespace

MpiSession* MpiSession::start(Settings& settings) {
  const Launch l = detect_launch(settings);
  if (settings.shard >= 0) return nullptr;  // a rank's sweep child, which inherits the launcher's variables
  if (l.size <= 1 && (!l.by.empty() || !settings.launcher.count("PMIX_RANK"))) return nullptr;
  auto* s = new MpiSession();
  s->host_ = host_name();
  const auto tokens = host_tokens(settings);
  std::string error;
  // The GPU is chosen before MPI starts where the launcher names the local rank: some MPI
  // builds touch CUDA in MPI_Init, and CUDA reads CUDA_VISIBLE_DEVICES once.
  const auto choose = [&](int local) {
    try {
      s->device_ = rank_device(local, tokens, s->host_);
      if (!s->device_.empty()) {
        setenv("CUDA_VISIBLE_DEVICES", s->device_.c_str(), 1);
        settings.visible_devices = s->device_;
      }
    } catch (const std::invalid_argument& e) {
      error = e.what();
    }
  };
  const auto visible_given = settings.visible_devices;
  if (l.local_rank >= 0) choose(l.local_rank);
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &s->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &s->size_);
  if (s->size_ <= 1) {
    if (l.size > 1) {
      // Variables left from another job (a shell inside an allocation, say): a plain run, on the
      // devices the caller gave.
      std::cerr << "bench: WARNING: " << l.by << " says " << l.size
                << " ranks, but MPI started this process alone: a plain run, not a rank of an MPI sweep\n";
      if (visible_given) {
        setenv("CUDA_VISIBLE_DEVICES", visible_given->c_str(), 1);
      } else {
        unsetenv("CUDA_VISIBLE_DEVICES");
      }
      settings.visible_devices = visible_given;
    }
    MPI_Finalize();
    delete s;
    return nullptr;
  }
  if (l.local_rank < 0) choose(local_rank_of(l));
  // A lost rank is the sweep's to handle (its keys go to others), not a reason to end the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  agree_on_devices(error, s->rank_);
  the_session() = s;
  return s;
}

void MpiSession::end(int exit_status) {
  MpiSession* s = the_session();
  if (!s) return;
  the_session() = nullptr;
  if (exit_status != 0 && s->rank_ == 0) MPI_Abort(MPI_COMM_WORLD, exit_status);
  const bool lost = s->lost_rank_;
  delete s;
  if (lost) {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    std::_Exit(exit_status);
  }
  MPI_Finalize();
}

MpiSession::~MpiSession() {
  for (auto& p : pending_) {
    int done = 0;
    MPI_Test(&p->request, &done, MPI_STATUS_IGNORE);
    if (!done) {
      MPI_Cancel(&p->request);
      MPI_Request_free(&p->request);
    }
  }
}

void MpiSession::post(int to, int tag, const std::string& text) {
  for (std::size_t i = 0; i < pending_.size();) {
    int done = 0;
    MPI_Test(&pending_[i]->request, &done, MPI_STATUS_IGNORE);
    if (done) {
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  auto p = std::make_unique<Pending>();
  p->to = to;
  p->text = text;
  MPI_Isend(p->text.data(), static_cast<int>(p->text.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD, &p->request);
  pending_.push_back(std::move(p));
}

std::optional<MpiSession::Message> MpiSession::receive() {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
  if (!flag) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  Message m{status.MPI_SOURCE, status.MPI_TAG, std::string(static_cast<std::size_t>(count), '\0')};
  MPI_Recv(m.text.data(), count, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return m;
}

void MpiSession::forget(int rank) {
  for (std::size_t i = 0; i < pending_.size();) {
    if (pending_[i]->to != rank) {
      ++i;
      continue;
    }
    MPI_Cancel(&pending_[i]->request);
    MPI_Request_free(&pending_[i]->request);
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

std::vector<std::string> MpiSession::gather(const std::string& mine) {
  int n = static_cast<int>(mine.size());
  std::vector<int> sizes(rank_ == 0 ? static_cast<std::size_t>(size_) : 0);
  MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(sizes.size());
  int total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    offsets[i] = total;
    total += sizes[i];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    out.push_back(all.substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(sizes[i])));
  }
  return out;
}

int MpiSession::scatter(const std::vector<int>& flags) {
  int mine = 0;
  MPI_Scatter(flags.data(), 1, MPI_INT, &mine, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return mine;
}

#endif

}  // namespace tunebench
