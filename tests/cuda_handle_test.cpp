#include <gtest/gtest.h>

#include <type_traits>
#include <utility>

#include "tunebench/cuda.hpp"
#include "tunebench/nvrtc.hpp"

namespace {

int destroyed = 0;
int last_destroyed = 0;

cudaError_t fake_destroy(int* handle) {
  ++destroyed;
  last_destroyed = *handle;
  return cudaSuccess;
}

cudaError_t failing_destroy(int*) {
  ++destroyed;
  return cudaErrorInvalidValue;
}

template <class T>
constexpr bool move_only_nothrow = std::is_nothrow_move_constructible_v<T>&& std::is_nothrow_move_assignable_v<T> &&
                                   !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T>;

static_assert(move_only_nothrow<tunebench::Stream>);
static_assert(move_only_nothrow<tunebench::Event>);
static_assert(move_only_nothrow<tunebench::DeviceBuffer>);
static_assert(move_only_nothrow<tunebench::KernelLibrary>);
static_assert(std::is_nothrow_destructible_v<tunebench::Stream>);

}  // namespace

TEST(CudaHandle, ReleasesOnceWhateverTheMoves) {
  destroyed = 0;
  int a = 1, b = 2;
  {
    tunebench::Handle<int*, fake_destroy> first(&a);
    tunebench::Handle<int*, fake_destroy> second(std::move(first));
    EXPECT_EQ(first.get(), nullptr);
    EXPECT_EQ(destroyed, 0);
    tunebench::Handle<int*, fake_destroy> third(&b);
    third = std::move(second);  // releases b, takes a
    EXPECT_EQ(destroyed, 1);
    EXPECT_EQ(last_destroyed, 2);
    EXPECT_EQ(third.get(), &a);
    tunebench::Handle<int*, fake_destroy> empty;  // null: destroyed without a call
  }
  EXPECT_EQ(destroyed, 2);
  EXPECT_EQ(last_destroyed, 1);
}

TEST(CudaHandle, AFailingDestroyIsReportedNotThrown) {
  destroyed = 0;
  int a = 1;
  testing::internal::CaptureStderr();
  { tunebench::Handle<int*, failing_destroy> h(&a); }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(destroyed, 1);
  EXPECT_NE(err.find("cudaErrorInvalidValue"), std::string::npos) << err;
}

TEST(CudaHandle, AnEmptyOrMovedFromBufferHasNoBytes) {
  tunebench::DeviceBuffer none;
  EXPECT_EQ(none.get(), nullptr);
  EXPECT_EQ(none.bytes(), 0u);
  tunebench::DeviceBuffer zero(0);  // allocates nothing: no device needed
  tunebench::DeviceBuffer moved(std::move(zero));
  EXPECT_EQ(zero.bytes(), 0u);
  EXPECT_EQ(moved.bytes(), 0u);
  EXPECT_THROW(none.upload(&destroyed, 1), std::out_of_range);
}
