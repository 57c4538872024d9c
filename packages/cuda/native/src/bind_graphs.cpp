// Graph capture and replay (graphs.h): graphBegin, graphEnd, graphAbort, graphLaunch, graphDestroy,
// graphNodeCount.
// Graph ids are bigints, checked against the registry.
#include "bindings.h"
#include "graphs.h"
#include "handles.h"
#include "attn/napi_args.h"
#include "napi_errors.h"

namespace attn {
namespace {

Napi::Value GraphBegin(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    GraphRegistry::instance().begin(arg_int(info, 0, "device"));
    return info.Env().Undefined();
  });
}

Napi::Value GraphEnd(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    return Napi::BigInt::New(info.Env(), GraphRegistry::instance().end(arg_int(info, 0, "device")));
  });
}

Napi::Value GraphAbort(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    GraphRegistry::instance().abort(arg_int(info, 0, "device"));
    return info.Env().Undefined();
  });
}

// graphLaunch(graph, stream)
Napi::Value GraphLaunch(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    GraphRegistry::instance().launch(arg_u64(info, 0, "graph"), stream_from_u64(arg_u64(info, 1, "stream")));
    return info.Env().Undefined();
  });
}

Napi::Value GraphDestroy(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    GraphRegistry::instance().destroy(arg_u64(info, 0, "graph"));
    return info.Env().Undefined();
  });
}

Napi::Value GraphNodeCount(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    return Napi::Number::New(info.Env(),
                             static_cast<double>(GraphRegistry::instance().node_count(arg_u64(info, 0, "graph"))));
  });
}

}  // namespace

void bind_graphs(Napi::Env env, Napi::Object exports) {
  exports.Set("graphBegin", Napi::Function::New(env, GraphBegin, "graphBegin"));
  exports.Set("graphEnd", Napi::Function::New(env, GraphEnd, "graphEnd"));
  exports.Set("graphAbort", Napi::Function::New(env, GraphAbort, "graphAbort"));
  exports.Set("graphLaunch", Napi::Function::New(env, GraphLaunch, "graphLaunch"));
  exports.Set("graphDestroy", Napi::Function::New(env, GraphDestroy, "graphDestroy"));
  exports.Set("graphNodeCount", Napi::Function::New(env, GraphNodeCount, "graphNodeCount"));
}

}  // namespace attn
