// cpu_flash.node: forward / backward, each sync (runs on the calling thread plus the pool) and async
// (a Napi::AsyncWorker runs it on a libuv thread, so the event loop keeps turning), and buildInfo.
// Every C++ exception becomes a JS Error with a stable `code`; nothing aborts the process.
#include <napi.h>

#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "args.h"
#include "dispatch.h"
#include "memory.h"
#include "thread_pool.h"
#include "varlen.h"

namespace attn_cpu {
namespace {

struct Failure {
  std::string code, message;
};

// Runs the kernels of a parsed call; returns an empty code on success.
Failure run(const Call& call) {
  try {
    const KernelSet& ks = kernels_for(call.isa);
    if (call.backward)
      run_backward(ks, call.bwd);
    else
      run_forward(ks, call.fwd);
    return {};
  } catch (const std::bad_alloc&) {
    return {"ATTN_CPU_FLASH_OOM", "cpu-flash: out of host memory for the kernel's buffers"};
  } catch (const std::invalid_argument& e) {
    return {"ATTN_CPU_FLASH_ARGS", std::string("cpu-flash: ") + e.what()};
  } catch (const std::exception& e) {
    return {"ATTN_CPU_FLASH_INTERNAL", std::string("cpu-flash: ") + e.what()};
  } catch (...) {
    return {"ATTN_CPU_FLASH_INTERNAL", "cpu-flash: unknown failure in the kernel"};
  }
}

Napi::Error to_error(const Napi::Env& env, const Failure& f) {
  Napi::Error e = Napi::Error::New(env, f.message);
  e.Set("code", Napi::String::New(env, f.code));
  return e;
}

// Parses on the JS thread; a non-Napi exception (std::invalid_argument from the dispatcher) becomes
// a JS error too.
Call parse(const Napi::Env& env, const Napi::Value& desc, bool backward) {
  try {
    return backward ? parse_backward(env, desc) : parse_forward(env, desc);
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw to_error(env, {"ATTN_CPU_FLASH_ARGS", std::string("cpu-flash: ") + e.what()});
  }
}

Napi::Value RunSync(const Napi::CallbackInfo& info, bool backward) {
  Napi::Env env = info.Env();
  const Call call = parse(env, info[0], backward);
  const Failure f = run(call);
  if (!f.code.empty()) throw to_error(env, f);
  return env.Undefined();
}

class KernelWorker : public Napi::AsyncWorker {
 public:
  KernelWorker(const Napi::Env& env, Call&& call)
      : Napi::AsyncWorker(env, "attn:cpu-flash"),
        call_(std::move(call)),
        deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

 protected:
  void Execute() override { failure_ = run(call_); }  // libuv thread: no JS here
  void OnOK() override {
    Napi::Env env = Env();
    if (failure_.code.empty())
      deferred_.Resolve(env.Undefined());
    else
      deferred_.Reject(to_error(env, failure_).Value());
    call_.keep.clear();
  }

 private:
  Call call_;
  Failure failure_;
  Napi::Promise::Deferred deferred_;
};

Napi::Value RunAsync(const Napi::CallbackInfo& info, bool backward) {
  Napi::Env env = info.Env();
  Call call = parse(env, info[0], backward);
  auto* w = new KernelWorker(env, std::move(call));  // deletes itself after OnOK
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

Napi::Value Forward(const Napi::CallbackInfo& info) { return RunSync(info, false); }
Napi::Value ForwardAsync(const Napi::CallbackInfo& info) { return RunAsync(info, false); }
Napi::Value Backward(const Napi::CallbackInfo& info) { return RunSync(info, true); }
Napi::Value BackwardAsync(const Napi::CallbackInfo& info) { return RunAsync(info, true); }

Napi::Array isa_list(const Napi::Env& env, bool runnable_only) {
  Napi::Array a = Napi::Array::New(env);
  uint32_t n = 0;
  for (Isa i : compiled_isas())
    if (!runnable_only || isa_runnable(i)) a.Set(n++, Napi::String::New(env, isa_name(i)));
  return a;
}

// What `attn doctor` shows, and which path each dtype takes (for a requested level, default auto).
Napi::Value BuildInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Isa isa = Isa::kAuto;
  if (info.Length() > 0 && info[0].IsString() && !parse_isa(info[0].As<Napi::String>().Utf8Value(), &isa))
    throw to_error(env, {"ATTN_CPU_FLASH_ARGS", "cpu-flash: unknown isa"});
  Napi::Object o = Napi::Object::New(env);
  o.Set("compiledIsas", isa_list(env, false));
  o.Set("runnableIsas", isa_list(env, true));
  o.Set("isa", Napi::String::New(env, isa_name(isa == Isa::kAuto ? best_isa() : isa)));
  o.Set("compiler", Napi::String::New(env, ATTN_CPU_COMPILER));
  o.Set("napiVersion", Napi::Number::New(env, NAPI_VERSION));
  o.Set("poolThreads", Napi::Number::New(env, pool_threads()));
  if (isa_runnable(isa)) {
    const KernelSet& ks = kernels_for(isa);
    Napi::Object fwd = Napi::Object::New(env), bwd = Napi::Object::New(env);
    const std::pair<const char*, DType> dts[] = {
        {"float32", DType::kFloat32}, {"bfloat16", DType::kBFloat16}, {"float16", DType::kFloat16}};
    for (const auto& [name, dt] : dts) {
      fwd.Set(name, Napi::String::New(env, ks.forward_path(dt)));
      bwd.Set(name, Napi::String::New(env, ks.backward_path(dt)));
    }
    o.Set("forwardPath", fwd);
    o.Set("backwardPath", bwd);
  }
  return o;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("forward", Napi::Function::New(env, Forward, "forward"));
  exports.Set("forwardAsync", Napi::Function::New(env, ForwardAsync, "forwardAsync"));
  exports.Set("backward", Napi::Function::New(env, Backward, "backward"));
  exports.Set("backwardAsync", Napi::Function::New(env, BackwardAsync, "backwardAsync"));
  exports.Set("buildInfo", Napi::Function::New(env, BuildInfo, "buildInfo"));
  return exports;
}

}  // namespace
}  // namespace attn_cpu

static Napi::Object InitCpuFlash(Napi::Env env, Napi::Object exports) { return attn_cpu::Init(env, exports); }
NODE_API_MODULE(cpu_flash, InitCpuFlash)
