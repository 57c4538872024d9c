// Streams and events as bigint handles; every handle is checked against its registry.
#include "bindings.h"
#include "events.h"
#include "graphs.h"
#include "handles.h"
#include "attn/napi_args.h"
#include "napi_errors.h"
#include "streams.h"

namespace attn {
namespace {

gpuStream_t arg_stream(const Napi::CallbackInfo& info, std::size_t i) {
  return stream_from_u64(arg_u64(info, i, "stream"));
}
gpuEvent_t arg_event(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  return event_from_u64(arg_u64(info, i, name));
}
Napi::BigInt stream_value(Napi::Env env, gpuStream_t s) { return Napi::BigInt::New(env, handle_to_u64(s)); }

Napi::Value StreamCreate(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    return stream_value(info.Env(), StreamRegistry::instance().create(arg_int(info, 0, "device")));
  });
}

Napi::Value StreamDestroy(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    StreamRegistry::instance().destroy(arg_stream(info, 0));
    return info.Env().Undefined();
  });
}

Napi::Value StreamSynchronize(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    refuse_during_capture("Stream.synchronize()",
                          "Wait for or time the work after the capture ends (time replays instead).");
    StreamRegistry::instance().synchronize(arg_stream(info, 0));
    return info.Env().Undefined();
  });
}

Napi::Value StreamQuery(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    refuse_during_capture("Stream.query()", "Wait for or time the work after the capture ends (time replays instead).");
    return Napi::Boolean::New(info.Env(), StreamRegistry::instance().query(arg_stream(info, 0)));
  });
}

Napi::Value StreamDevice(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    return Napi::Number::New(info.Env(), StreamRegistry::instance().device_of(arg_stream(info, 0)));
  });
}

Napi::Value CurrentStream(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    return stream_value(info.Env(), StreamRegistry::instance().current(arg_int(info, 0, "device")));
  });
}

Napi::Value DefaultStream(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    return stream_value(info.Env(), StreamRegistry::instance().default_stream(arg_int(info, 0, "device")));
  });
}

// setCurrentStream(device, stream): 0n restores the device's default stream.
Napi::Value SetCurrentStream(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    StreamRegistry::instance().set_current(arg_int(info, 0, "device"), arg_stream(info, 1));
    return info.Env().Undefined();
  });
}

Napi::Value EventCreate(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    gpuEvent_t e = EventRegistry::instance().create(arg_int(info, 0, "device"), arg_bool(info, 1, "timing"));
    return Napi::BigInt::New(info.Env(), handle_to_u64(e));
  });
}

Napi::Value EventDestroy(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    EventRegistry::instance().destroy(arg_event(info, 0, "event"));
    return info.Env().Undefined();
  });
}

Napi::Value EventRecord(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    EventRegistry::instance().record(arg_event(info, 0, "event"), arg_stream(info, 1));
    return info.Env().Undefined();
  });
}

Napi::Value EventSynchronize(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    refuse_during_capture("Event.synchronize()",
                          "Wait for or time the work after the capture ends (time replays instead).");
    EventRegistry::instance().synchronize(arg_event(info, 0, "event"));
    return info.Env().Undefined();
  });
}

Napi::Value EventQuery(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    refuse_during_capture("Event.query()", "Wait for or time the work after the capture ends (time replays instead).");
    return Napi::Boolean::New(info.Env(), EventRegistry::instance().query(arg_event(info, 0, "event")));
  });
}

Napi::Value EventElapsedMs(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    refuse_during_capture("Event.elapsedMs()",
                          "Wait for or time the work after the capture ends (time replays instead).");
    const float ms = EventRegistry::instance().elapsed_ms(arg_event(info, 0, "start"), arg_event(info, 1, "end"));
    return Napi::Number::New(info.Env(), ms);
  });
}

// streamWaitEvent(stream, event)
Napi::Value StreamWaitEvent(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    EventRegistry::instance().stream_wait(arg_stream(info, 0), arg_event(info, 1, "event"));
    return info.Env().Undefined();
  });
}

}  // namespace

void bind_streams(Napi::Env env, Napi::Object exports) {
  exports.Set("streamCreate", Napi::Function::New(env, StreamCreate, "streamCreate"));
  exports.Set("streamDestroy", Napi::Function::New(env, StreamDestroy, "streamDestroy"));
  exports.Set("streamSynchronize", Napi::Function::New(env, StreamSynchronize, "streamSynchronize"));
  exports.Set("streamQuery", Napi::Function::New(env, StreamQuery, "streamQuery"));
  exports.Set("streamDevice", Napi::Function::New(env, StreamDevice, "streamDevice"));
  exports.Set("currentStream", Napi::Function::New(env, CurrentStream, "currentStream"));
  exports.Set("defaultStream", Napi::Function::New(env, DefaultStream, "defaultStream"));
  exports.Set("setCurrentStream", Napi::Function::New(env, SetCurrentStream, "setCurrentStream"));
  exports.Set("eventCreate", Napi::Function::New(env, EventCreate, "eventCreate"));
  exports.Set("eventDestroy", Napi::Function::New(env, EventDestroy, "eventDestroy"));
  exports.Set("eventRecord", Napi::Function::New(env, EventRecord, "eventRecord"));
  exports.Set("eventSynchronize", Napi::Function::New(env, EventSynchronize, "eventSynchronize"));
  exports.Set("eventQuery", Napi::Function::New(env, EventQuery, "eventQuery"));
  exports.Set("eventElapsedMs", Napi::Function::New(env, EventElapsedMs, "eventElapsedMs"));
  exports.Set("streamWaitEvent", Napi::Function::New(env, StreamWaitEvent, "streamWaitEvent"));
}

}  // namespace attn
