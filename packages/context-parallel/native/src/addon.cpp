// N-API surface of context_parallel.node: NCCL's communicator and grouped send/recv on caller-given
// CUDA streams and device addresses, and the ring's element-wise kernels (ring_kernels.h). NCCL is
// linked at build time (the one CMake found through findNccl) with its folder as RPATH. Every error
// (an NCCL result, a CUDA error, a bad argument) becomes a JS Error with a code; nothing aborts.
//
// The communicator is non-blocking (ncclConfig_t.blocking = 0): no call here waits on another rank.
// Init, and a send/recv whose peer connection is still being set up, return with the communicator
// "in progress"; the caller polls commStatus from its event loop, under its own deadline, and only
// then may it record events after the transfer or issue the next call (NCCL's rule for
// non-blocking communicators). A rank that never arrives therefore costs a timeout, not a hang.
#include <napi.h>
#include <nccl.h>

#include <cstring>
#include <exception>
#include <string>

#include "attn/cuda_check.h"
#include "attn/napi_args.h"
#include "ring_kernels.h"

namespace {

constexpr const char* kPrefix = "context-parallel: ";

class NcclError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void nccl_check(ncclResult_t r, const char* what, ncclComm_t comm = nullptr) {
  if (r == ncclSuccess) return;
  std::string msg = std::string(what) + " failed: " + ncclGetErrorString(r);
  if (comm) {
    const char* last = ncclGetLastError(comm);
    if (last && *last) msg += std::string(" (") + last + ")";
  }
  throw NcclError(msg);
}

Napi::Error to_js(Napi::Env env, const std::exception& e, const char* code) {
  Napi::Error err = Napi::Error::New(env, std::string(kPrefix) + e.what());
  err.Set("code", Napi::String::New(env, code));
  return err;
}

template <typename Fn>
auto with_js_errors(Napi::Env env, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const NcclError& e) {
    throw to_js(env, e, "ATTN_CP_NCCL");
  } catch (const attn::CudaError& e) {
    throw to_js(env, e, "ATTN_CUDA_ERROR");
  } catch (const attn::InvalidArgument& e) {
    throw to_js(env, e, e.code());
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw to_js(env, e, "ATTN_CP_TRANSPORT");
  }
}

// Every reader below throws attn::InvalidArgument (ATTN_BAD_ARGUMENT); each binding reads its
// arguments inside with_js_errors, which turns that into a JS error with the code.
using attn::arg_size;
using attn::arg_u64;

ncclComm_t comm_of(const Napi::CallbackInfo& info, size_t i) {
  const uint64_t h = arg_u64(info, i, "communicator");
  if (h == 0) throw attn::InvalidArgument("the communicator is destroyed", "ATTN_BAD_HANDLE");
  return reinterpret_cast<ncclComm_t>(h);
}

Napi::TypedArrayOf<uint64_t> u64_array(const Napi::CallbackInfo& info, size_t i, const char* what) {
  return attn::arg_typed_array<Napi::TypedArrayOf<uint64_t>>(info, i, what, napi_biguint64_array, "BigUint64Array");
}

// getUniqueId(): Uint8Array(NCCL_UNIQUE_ID_BYTES).
Napi::Value GetUniqueId(const Napi::CallbackInfo& info) {
  return with_js_errors(info.Env(), [&]() -> Napi::Value {
    ncclUniqueId id;
    nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    auto out = Napi::Uint8Array::New(info.Env(), sizeof(id.internal));
    std::memcpy(out.Data(), id.internal, sizeof(id.internal));
    return out;
  });
}

// commInitRank(size, id: Uint8Array, rank, device): bigint handle of a non-blocking communicator,
// returned at once; it is usable when commStatus says ''.
Napi::Value CommInitRank(const Napi::CallbackInfo& info) {
  return with_js_errors(info.Env(), [&]() -> Napi::Value {
    const size_t size = arg_size(info, 0, "size");
    auto idArr = attn::arg_bytes(info, 1, "id");
    ncclUniqueId id;
    if (idArr.ElementLength() != sizeof(id.internal))
      throw attn::InvalidArgument("id must have " + std::to_string(sizeof(id.internal)) + " bytes",
                                  "ATTN_BAD_ARGUMENT");
    std::memcpy(id.internal, idArr.Data(), sizeof(id.internal));
    const size_t rank = arg_size(info, 2, "rank");
    const size_t device = arg_size(info, 3, "device");
    ATTN_CUDA_CHECK(cudaSetDevice(static_cast<int>(device)));
    ncclComm_t comm = nullptr;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t r = ncclCommInitRankConfig(&comm, static_cast<int>(size), id, static_cast<int>(rank), &config);
    if (r != ncclInProgress) nccl_check(r, "ncclCommInitRankConfig", comm);
    return Napi::BigInt::New(info.Env(), static_cast<uint64_t>(reinterpret_cast<uintptr_t>(comm)));
  });
}

// commFinalize(comm): flushes the issued work (every transfer completed); the communicator is then
// in progress until commStatus says '', after which commDestroy frees it. commAbort(comm) gives up on
// pending work and frees the communicator at once.
Napi::Value CommFinalize(const Napi::CallbackInfo& info) {
  with_js_errors(info.Env(), [&] {
    ncclComm_t comm = comm_of(info, 0);
    const ncclResult_t r = ncclCommFinalize(comm);
    if (r != ncclInProgress) nccl_check(r, "ncclCommFinalize", comm);
  });
  return info.Env().Undefined();
}

Napi::Value CommDestroy(const Napi::CallbackInfo& info) {
  with_js_errors(info.Env(), [&] { nccl_check(ncclCommDestroy(comm_of(info, 0)), "ncclCommDestroy"); });
  return info.Env().Undefined();
}

Napi::Value CommAbort(const Napi::CallbackInfo& info) {
  with_js_errors(info.Env(), [&] {
    ncclComm_t comm = comm_of(info, 0);
    const ncclResult_t r = ncclCommAbort(comm);
    if (r != ncclInProgress) nccl_check(r, "ncclCommAbort");
  });
  return info.Env().Undefined();
}

// commStatus(comm): '' (ready: the last call's work is on its stream), 'in-progress', or the
// communicator's asynchronous error.
Napi::Value CommStatus(const Napi::CallbackInfo& info) {
  return with_js_errors(info.Env(), [&]() -> Napi::Value {
    ncclComm_t comm = comm_of(info, 0);
    ncclResult_t r = ncclSuccess;
    nccl_check(ncclCommGetAsyncError(comm, &r), "ncclCommGetAsyncError");
    if (r == ncclSuccess) return Napi::String::New(info.Env(), "");
    if (r == ncclInProgress) return Napi::String::New(info.Env(), "in-progress");
    std::string msg = ncclGetErrorString(r);
    const char* last = ncclGetLastError(comm);
    if (last && *last) msg += std::string(" (") + last + ")";
    return Napi::String::New(info.Env(), msg);
  });
}

// sendRecv(comm, next, prev, send: BigUint64Array, sendBytes: BigUint64Array, recv: BigUint64Array,
// recvBytes: BigUint64Array, stream): one group of ncclSend(send[i] -> next) and ncclRecv(recv[i] <- prev),
// queued on `stream`. Send and receive sizes differ where shards are uneven (what this rank sends to next
// is not what it receives from prev); a pair with 0 bytes on one side queues nothing on that side.
// Returns true when the group is still being enqueued (poll commStatus until ''), false when its work
// is on `stream` already.
Napi::Value SendRecv(const Napi::CallbackInfo& info) {
  return with_js_errors(info.Env(), [&]() -> Napi::Value {
    ncclComm_t comm = comm_of(info, 0);
    const size_t next = arg_size(info, 1, "next");
    const size_t prev = arg_size(info, 2, "prev");
    auto send = u64_array(info, 3, "send addresses");
    auto send_bytes = u64_array(info, 4, "send byte counts");
    auto recv = u64_array(info, 5, "receive addresses");
    auto recv_bytes = u64_array(info, 6, "receive byte counts");
    const uint64_t stream = arg_u64(info, 7, "stream");
    const size_t n = send.ElementLength();
    if (send_bytes.ElementLength() != n || recv.ElementLength() != n || recv_bytes.ElementLength() != n)
      throw attn::InvalidArgument("send, receive and byte arrays differ in length", "ATTN_BAD_ARGUMENT");
    cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    try {
      for (size_t i = 0; i < n; ++i) {
        if (send_bytes[i] != 0)
          nccl_check(ncclSend(reinterpret_cast<const void*>(send[i]), send_bytes[i], ncclInt8, static_cast<int>(next),
                              comm, s),
                     "ncclSend", comm);
        if (recv_bytes[i] != 0)
          nccl_check(
              ncclRecv(reinterpret_cast<void*>(recv[i]), recv_bytes[i], ncclInt8, static_cast<int>(prev), comm, s),
              "ncclRecv", comm);
      }
    } catch (...) {
      ncclGroupEnd();
      throw;
    }
    const ncclResult_t r = ncclGroupEnd();
    if (r != ncclInProgress) nccl_check(r, "ncclGroupEnd", comm);
    return Napi::Boolean::New(info.Env(), r == ncclInProgress);
  });
}

attn::cp::Elem elem_of(const Napi::CallbackInfo& info, size_t i) {
  const size_t e = arg_size(info, i, "element type");
  if (e > 2) throw attn::InvalidArgument("element type must be 0, 1 or 2", "ATTN_BAD_ARGUMENT");
  return static_cast<attn::cp::Elem>(e);
}

int64_t count_of(const Napi::CallbackInfo& info, size_t i, const char* what) {
  return static_cast<int64_t>(arg_size(info, i, what));
}

cudaStream_t stream_of(const Napi::CallbackInfo& info, size_t i) {
  return reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(arg_u64(info, i, "stream")));
}

// merge(accOut, accLse, partOut, partLse, rows, dv, elem, stream)
Napi::Value Merge(const Napi::CallbackInfo& info) {
  with_js_errors(info.Env(), [&] {
    attn::cp::merge(static_cast<float*>(attn::arg_pointer(info, 0, "accOut")),
                    static_cast<float*>(attn::arg_pointer(info, 1, "accLse")), attn::arg_pointer(info, 2, "partOut"),
                    static_cast<const float*>(attn::arg_pointer(info, 3, "partLse")), count_of(info, 4, "rows"),
                    count_of(info, 5, "dv"), elem_of(info, 6), stream_of(info, 7));
  });
  return info.Env().Undefined();
}

// accumulate(acc, x, n, elem, stream)
Napi::Value Accumulate(const Napi::CallbackInfo& info) {
  with_js_errors(info.Env(), [&] {
    attn::cp::accumulate(static_cast<float*>(attn::arg_pointer(info, 0, "acc")), attn::arg_pointer(info, 1, "x"),
                         count_of(info, 2, "n"), elem_of(info, 3), stream_of(info, 4));
  });
  return info.Env().Undefined();
}

// convert(dst, src, n, elem, stream)
Napi::Value Convert(const Napi::CallbackInfo& info) {
  with_js_errors(info.Env(), [&] {
    attn::cp::convert(attn::arg_pointer(info, 0, "dst"), static_cast<const float*>(attn::arg_pointer(info, 1, "src")),
                      count_of(info, 2, "n"), elem_of(info, 3), stream_of(info, 4));
  });
  return info.Env().Undefined();
}

Napi::Value BuildInfo(const Napi::CallbackInfo& info) {
  Napi::Object o = Napi::Object::New(info.Env());
  int version = 0;
  ncclGetVersion(&version);
  o.Set("ncclVersion", version);
  o.Set("ncclHeaderVersion", NCCL_VERSION_CODE);
  o.Set("ncclLibrary", ATTN_NCCL_LIBRARY);
  o.Set("cudaArchs", ATTN_CUDA_ARCHS_STRING);
  o.Set("uniqueIdBytes", static_cast<double>(sizeof(ncclUniqueId)));
  return o;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("getUniqueId", Napi::Function::New(env, GetUniqueId));
  exports.Set("commInitRank", Napi::Function::New(env, CommInitRank));
  exports.Set("commFinalize", Napi::Function::New(env, CommFinalize));
  exports.Set("commDestroy", Napi::Function::New(env, CommDestroy));
  exports.Set("commAbort", Napi::Function::New(env, CommAbort));
  exports.Set("commStatus", Napi::Function::New(env, CommStatus));
  exports.Set("sendRecv", Napi::Function::New(env, SendRecv));
  exports.Set("merge", Napi::Function::New(env, Merge));
  exports.Set("accumulate", Napi::Function::New(env, Accumulate));
  exports.Set("convert", Napi::Function::New(env, Convert));
  exports.Set("buildInfo", Napi::Function::New(env, BuildInfo));
  return exports;
}

}  // namespace

NODE_API_MODULE(context_parallel, Init)
