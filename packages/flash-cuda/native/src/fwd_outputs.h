// A forward call that allocates its outputs from @attn/cuda's caching allocator (its C table,
// attn/allocator_api.h) and launches, all in one N-API call: one round trip from JS per call instead of one
// per allocation plus one for the stream.
#pragma once
#include <cstdint>

namespace attn::flash {

// Remembers @attn/cuda's allocator table (its allocatorApi() address); throws std::invalid_argument for a
// table of another version or size.
void use_allocator(uint64_t address);

// forward(ptrs, nums) (dispatch.h), after allocating what nums[kAllocate]'s bits ask for (out, lse, the split
// partials; the stream is then the device's current one) and writing their addresses into ptrs. The partials
// and a scratch lse are freed once the kernels are queued (stream-ordered); out and a kept lse belong to the
// caller, who adopts them into @attn/cuda storages. Returns false, holding nothing and launching nothing, when an allocation could not
// be had; on a throw, whatever it allocated is freed again.
bool forward_with_outputs(uint64_t* ptrs, const double* nums);

}  // namespace attn::flash
