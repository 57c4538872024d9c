#include "fwd_outputs.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "abi.h"
#include "attn/allocator_api.h"
#include "dispatch.h"

namespace attn::flash {

namespace {

const AllocatorApi* g_allocator = nullptr;

// Blocks taken from the allocator during one call; whatever is still held when it goes out of scope is
// returned (a failed allocation or launch leaves nothing behind).
class Held {
 public:
  Held(const AllocatorApi& api, int device) : api_(api), device_(device) {}
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;
  ~Held() {
    for (int i = 0; i < count_; ++i) api_.free(device_, blocks_[i]);
  }
  // nullptr when the allocator has none to give.
  void* take(double bytes, void* stream) {
    if (!(bytes >= 1 && bytes <= 9007199254740992.0) || bytes != std::floor(bytes))
      throw std::invalid_argument("flash-cuda: an output size must be a positive whole number of bytes");
    void* p = api_.allocate(device_, static_cast<std::size_t>(bytes), stream);
    if (p != nullptr) blocks_[count_++] = p;
    return p;
  }
  // The caller owns p from now on.
  void release(void* p) {
    for (int i = 0; i < count_; ++i)
      if (blocks_[i] == p) {
        blocks_[i] = blocks_[--count_];
        return;
      }
  }

 private:
  const AllocatorApi& api_;
  int device_;
  void* blocks_[3] = {};
  int count_ = 0;
};

}  // namespace

void use_allocator(uint64_t address) {
  const auto* api = reinterpret_cast<const AllocatorApi*>(address);
  if (api == nullptr || api->version != kAllocatorApiVersion || api->size != sizeof(AllocatorApi))
    throw std::invalid_argument("flash-cuda: @attn/cuda's allocator table is of another version (expected " +
                                std::to_string(kAllocatorApiVersion) + "); rebuild both addons together");
  g_allocator = api;
}

bool forward_with_outputs(uint64_t* ptrs, const double* nums) {
  using namespace abi;
  const double mask_value = nums[kAllocate];
  if (mask_value == 0) {
    forward(ptrs, nums);
    return true;
  }
  if (!(mask_value >= 1 && mask_value <= 15) || mask_value != std::floor(mask_value))
    throw std::invalid_argument("flash-cuda: the allocation bits must be an integer in [0, 15]");
  if (g_allocator == nullptr)
    throw std::invalid_argument("flash-cuda: forward was asked to allocate before useAllocator()");
  const int mask = static_cast<int>(mask_value);
  if ((mask & kAllocLse) && (mask & kAllocLseScratch))
    throw std::invalid_argument("flash-cuda: lse is either kept or scratch, not both");
  const double device_value = nums[kDevice];
  if (!(device_value >= 0 && device_value <= 1023) || device_value != std::floor(device_value))
    throw std::invalid_argument("flash-cuda: device index must be an integer in [0, 1023]");
  const int device = static_cast<int>(device_value);
  const AllocatorApi& api = *g_allocator;

  void* stream = nullptr;
  if (api.current_stream(device, &stream) != 0) return false;  // the runtime refused the device: JS says why
  Held held(api, device);
  void* out = nullptr;
  void* lse = nullptr;
  void* partials = nullptr;
  if ((mask & kAllocOut) && (out = held.take(nums[kOutBytes], stream)) == nullptr) return false;
  if ((mask & (kAllocLse | kAllocLseScratch)) && (lse = held.take(nums[kLseBytes], stream)) == nullptr) return false;
  if ((mask & kAllocPartials) && (partials = held.take(nums[kAccumBytes], stream)) == nullptr) return false;
  // The plan chose 16-byte accesses from the other tensors (kAligned16); the allocator's blocks start on its
  // size-class boundaries (>= 512 bytes), so a fresh out never breaks that.
  if (out != nullptr && reinterpret_cast<uintptr_t>(out) % 16 != 0)
    throw std::runtime_error("flash-cuda: the allocator gave a block not aligned to 16 bytes");
  ptrs[kStream] = reinterpret_cast<uint64_t>(stream);
  if (out != nullptr) ptrs[kOut] = reinterpret_cast<uint64_t>(out);
  if (lse != nullptr) ptrs[kLse] = reinterpret_cast<uint64_t>(lse);
  if (partials != nullptr) {
    const double offset = nums[kLseAccumOffset];
    if (!(offset >= 0 && offset < nums[kAccumBytes]) || offset != std::floor(offset))
      throw std::invalid_argument("flash-cuda: the lse partials' offset must lie inside the partials' block");
    ptrs[kOaccum] = reinterpret_cast<uint64_t>(partials);
    ptrs[kLseAccum] = reinterpret_cast<uint64_t>(partials) + static_cast<uint64_t>(offset);
  }
  forward(ptrs, nums);  // throws: held frees out, lse and the partials (nothing was queued)
  // The partials (and a scratch lse) return to the cache now: stream-ordered, reused only by work queued
  // after the kernels.
  if (out != nullptr) held.release(out);
  if (mask & kAllocLse) held.release(lse);
  return true;
}

}  // namespace attn::flash
