// copyDeviceToHostAsync(device, dst: Uint8Array, srcPointer) -> Promise<void>.
// The device-to-pinned copy is enqueued at call time (so it is ordered with the stream's other
// work); a libuv worker thread waits for it; back on the JS thread the bytes go into `dst`. The
// array is kept alive by a reference until then and must not be read before the promise settles.
#include <cstring>

#include "attn/cuda_check.h"
#include "bindings.h"
#include "copies.h"
#include "device_guard.h"
#include "host_staging.h"
#include "attn/napi_args.h"
#include "napi_errors.h"

namespace attn {
namespace {

class ReadWorker : public Napi::AsyncWorker {
 public:
  ReadWorker(Napi::Env env, Napi::Uint8Array dst, HostStaging::Buffer* staged, int device, std::size_t bytes)
      : Napi::AsyncWorker(env, "attn:copyDeviceToHostAsync"),
        deferred_(Napi::Promise::Deferred::New(env)),
        dst_(Napi::Persistent(dst)),
        staged_(staged),
        device_(device),
        bytes_(bytes) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  // Worker thread: no JS here, only the wait. Exceptions are kept for OnOK, never thrown across.
  void Execute() override {
    try {
      DeviceGuard guard(device_);
      ATTN_CUDA_CHECK(gpuEventSynchronize(staged_->event));
    } catch (const CudaError& e) {
      failed_ = true;
      error_code_ = e.code();
      error_message_ = e.what();
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (failed_) {
      release();
      deferred_.Reject(make_gpu_error(env, CudaError(error_code_, error_message_)).Value());
      return;
    }
    Napi::Uint8Array dst = dst_.Value();
    // The array's buffer may have been transferred (detached) while the copy ran.
    if (dst.ByteLength() != bytes_) {
      release();
      deferred_.Reject(make_error(env, "ATTN_BAD_ARGUMENT",
                                  "copyDeviceToHostAsync: the destination array was detached or resized before the "
                                  "copy finished; keep it untouched until the promise settles")
                           .Value());
      return;
    }
    std::memcpy(dst.Data(), staged_->ptr, bytes_);
    try {
      release();
    } catch (const CudaError& e) {
      deferred_.Reject(make_gpu_error(env, e).Value());
      return;
    }
    deferred_.Resolve(env.Undefined());
  }

  void OnError(const Napi::Error& e) override {
    release();
    deferred_.Reject(e.Value());
  }

 private:
  void release() {
    if (staged_ != nullptr) {
      HostStaging::Buffer* b = staged_;
      staged_ = nullptr;
      HostStaging::instance().release_read(b);
    }
  }

  Napi::Promise::Deferred deferred_;
  Napi::Reference<Napi::Uint8Array> dst_;
  HostStaging::Buffer* staged_;
  int device_;
  std::size_t bytes_;
  bool failed_ = false;
  gpuError_t error_code_ = gpuSuccess;
  std::string error_message_;
};

Napi::Value CopyDeviceToHostAsync(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int device = arg_int(info, 0, "device");
    Napi::Uint8Array dst = arg_bytes(info, 1, "dst");
    void* src = arg_pointer(info, 2, "src");
    const std::size_t bytes = dst.ByteLength();
    if (bytes == 0) {
      auto done = Napi::Promise::Deferred::New(info.Env());
      done.Resolve(info.Env().Undefined());
      return done.Promise();
    }
    HostStaging::Buffer* staged = begin_device_to_host_async(device, src, bytes);
    auto* worker = new ReadWorker(info.Env(), dst, staged, device, bytes);  // deletes itself when done
    Napi::Promise promise = worker->Promise();
    worker->Queue();
    return promise;
  });
}

}  // namespace

void bind_async_read(Napi::Env env, Napi::Object exports) {
  exports.Set("copyDeviceToHostAsync", Napi::Function::New(env, CopyDeviceToHostAsync, "copyDeviceToHostAsync"));
}

}  // namespace attn
