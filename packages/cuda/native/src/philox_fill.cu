#include "philox_fill.h"

#include "attn/cuda_check.h"
#include "attn/philox.h"
#include "device_buffer.h"
#include "device_guard.h"
#include "errors.h"
#include "streams.h"

namespace attn {
namespace {

constexpr int kThreads = 256;

__global__ void philox_raw_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                                  std::size_t n) {
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint32_t* p = in + 6 * t;
    const Philox4 r = philox4x32_10(Philox4{p[0], p[1], p[2], p[3]}, p[4], p[5]);
    out[4 * t + 0] = r.x;
    out[4 * t + 1] = r.y;
    out[4 * t + 2] = r.z;
    out[4 * t + 3] = r.w;
  }
}

// One thread per group of four keys: a Philox call yields the words of keys 4*(j>>2) .. +3, the same
// grouping the attention kernels use.
__global__ void dropout_words_kernel(std::uint32_t* __restrict__ words, std::uint8_t* __restrict__ keep,
                                     std::uint64_t seed, std::uint32_t offset, std::uint32_t bh_count,
                                     std::uint32_t seq_q, std::uint32_t seq_k, std::uint32_t threshold) {
  const std::uint32_t groups = (seq_k + 3) / 4;
  const std::size_t total = static_cast<std::size_t>(bh_count) * seq_q * groups;
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint32_t g = static_cast<std::uint32_t>(t % groups);
    const std::uint32_t i = static_cast<std::uint32_t>((t / groups) % seq_q);
    const std::uint32_t bh = static_cast<std::uint32_t>(t / groups / seq_q);
    const Philox4 r = dropout_words(seed, offset, bh, i, g);
    const std::size_t row = (static_cast<std::size_t>(bh) * seq_q + i) * seq_k;
    for (std::uint32_t w = 0; w < 4; ++w) {
      const std::uint32_t j = 4 * g + w;
      if (j >= seq_k) break;
      words[row + j] = philox_word(r, w);
      // The element decision through the one shared helper, not re-derived from the word here.
      keep[row + j] = dropout_keep(seed, offset, bh, i, j, threshold) ? 1 : 0;
    }
  }
}

unsigned grid_for(std::size_t n) {
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 4096 ? blocks : 4096);
}

}  // namespace

std::vector<std::uint32_t> philox_raw_on_device(int device, const std::vector<std::uint32_t>& inputs) {
  if (inputs.size() % 6 != 0) throw InvalidArgument("philoxRaw: inputs must hold 6 words per item", "ATTN_BAD_SIZE");
  const std::size_t n = inputs.size() / 6;
  if (n > kMaxPhiloxFillElements) throw InvalidArgument("philoxRaw: too many items", "ATTN_BAD_SIZE");
  std::vector<std::uint32_t> out(4 * n);
  if (n == 0) return out;
  gpuStream_t stream = StreamRegistry::instance().current(device);
  DeviceGuard guard(device);
  DeviceBuffer d_in(device, inputs.size() * sizeof(std::uint32_t), stream);
  DeviceBuffer d_out(device, out.size() * sizeof(std::uint32_t), stream);
  ATTN_CUDA_CHECK(gpuMemcpyAsync(d_in.as<void>(), inputs.data(), inputs.size() * sizeof(std::uint32_t),
                                 gpuMemcpyHostToDevice, stream));
  philox_raw_kernel<<<grid_for(n), kThreads, 0, stream>>>(d_in.as<std::uint32_t>(), d_out.as<std::uint32_t>(), n);
  ATTN_LAUNCH_CHECK("philox_raw_kernel");
  ATTN_CUDA_CHECK(
      gpuMemcpyAsync(out.data(), d_out.as<void>(), out.size() * sizeof(std::uint32_t), gpuMemcpyDeviceToHost, stream));
  ATTN_CUDA_CHECK(gpuStreamSynchronize(stream));
  return out;
}

DropoutWords dropout_words_on_device(int device, std::uint64_t seed, std::uint32_t offset, std::uint32_t bh_count,
                                     std::uint32_t seq_q, std::uint32_t seq_k, std::uint32_t threshold) {
  const std::size_t n = static_cast<std::size_t>(bh_count) * seq_q * seq_k;
  if (n > kMaxPhiloxFillElements) {
    throw InvalidArgument("dropoutWords: bh * seqQ * seqK must be at most " + std::to_string(kMaxPhiloxFillElements),
                          "ATTN_BAD_SIZE");
  }
  DropoutWords result;
  result.words.resize(n);
  result.keep.resize(n);
  if (n == 0) return result;
  gpuStream_t stream = StreamRegistry::instance().current(device);
  DeviceGuard guard(device);
  DeviceBuffer d_words(device, n * sizeof(std::uint32_t), stream);
  DeviceBuffer d_keep(device, n, stream);
  const std::size_t groups = static_cast<std::size_t>(bh_count) * seq_q * ((seq_k + 3) / 4);
  dropout_words_kernel<<<grid_for(groups), kThreads, 0, stream>>>(
      d_words.as<std::uint32_t>(), d_keep.as<std::uint8_t>(), seed, offset, bh_count, seq_q, seq_k, threshold);
  ATTN_LAUNCH_CHECK("dropout_words_kernel");
  ATTN_CUDA_CHECK(gpuMemcpyAsync(result.words.data(), d_words.as<void>(), n * sizeof(std::uint32_t),
                                 gpuMemcpyDeviceToHost, stream));
  ATTN_CUDA_CHECK(gpuMemcpyAsync(result.keep.data(), d_keep.as<void>(), n, gpuMemcpyDeviceToHost, stream));
  ATTN_CUDA_CHECK(gpuStreamSynchronize(stream));
  return result;
}

}  // namespace attn
