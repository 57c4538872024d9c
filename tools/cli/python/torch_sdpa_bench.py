#!/usr/bin/env python3
"""Times PyTorch's scaled_dot_product_attention backends for `attn bench --compare torch`.

Reads one JSON request on stdin, writes one JSON answer on stdout, progress on stderr. Never raises:
a missing torch, device or backend becomes a reason in the answer.

Request:  {"device": "cuda"|"cpu", "deviceIndex": 0, "threads": 2, "dtype": "bfloat16",
           "warmup": 2, "warmupMs": 200, "repeat": 10, "budgetMs": 3000, "callsPerSample": 1,
           "modes": ["fwd", "bwd", "fwdbwd"],
           "backends": ["flash", "efficient", "cudnn", "math"],
           "cases": [{"id": 0, "batch": 2, "headsQ": 8, "headsKV": 8, "seqQ": 512, "seqK": 512,
                      "headDim": 64, "headDimV": 64, "causal": true, "alignment": "upperLeft",
                      "dropoutP": 0.0, "mask": null}]}
Answer:   {"available": true, "torch": "2.x", "device": "...", "threads": 2, "timer": "...",
           (on the CPU: device "cpu (ATen capability AVX2)" and capability "AVX2", the SIMD level
           torch's kernels dispatch to)
           "results": [{"case": 0, "mode": "fwd", "backend": "flash", "ok": true,
                        "medianMs": 1.0, "p20Ms": 0.9, "p80Ms": 1.1, "samples": 10}
                       | {"case": 0, "mode": "fwd", "backend": "flash", "ok": false, "reason": "..."}]}
          or {"available": false, "reason": "..."}

Timing: warm-up calls, then timed calls rotating among several input sets (so that caches do not
flatter), median of the samples. CUDA: torch.cuda.Event pairs around each call (as triton's
do_bench); CPU: time.perf_counter with torch.set_num_threads(threads). With callsPerSample > 1
(`attn bench --overhead`) each sample is a loop of that many back-to-back calls, each dropping its
outputs as a user's loop does, and the reported times are per call: what the loop pays, host included.

Masks ("mask": "bool" | "additive", as `attn bench --mask`): one random [B, 1, Sq, Sk] mask per input
set, made before timing as the CLI makes ours (tools/cli/src/runtime/inputs.ts): additive N(0, 1) in
the problem's dtype, requiring grad in bwd/fwdbwd because ours computes dbias there; bool keeps each
key with probability 0.9 (a fully masked row is vanishingly rare, as ours). With causal the mask goes
together with is_causal=True: the efficient (and CPU flash) kernels apply both and skip the tiles
above the diagonal, as ours do; backends that refuse the pair (math) report torch's reason.
"""
import json
import math
import sys
import time
import warnings

BACKEND_NAMES = {
    "flash": "FLASH_ATTENTION",
    "efficient": "EFFICIENT_ATTENTION",
    "cudnn": "CUDNN_ATTENTION",
    "math": "MATH",
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def first_line(text, limit=300):
    line = str(text).strip().splitlines()[0] if str(text).strip() else ""
    return line[:limit]


def median_and_quantiles(samples):
    s = sorted(samples)

    def q(p):
        pos = (len(s) - 1) * p
        lo, hi = math.floor(pos), math.ceil(pos)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    return {"medianMs": q(0.5), "p20Ms": q(0.2), "p80Ms": q(0.8), "samples": len(s)}


class Timer:
    def __init__(self, torch, device):
        self.torch = torch
        self.cuda = device.type == "cuda"
        self.description = "torch.cuda.Event" if self.cuda else "time.perf_counter"

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def time(self, fn):
        if self.cuda:
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1000.0


def rotation_sets(set_bytes, cache_bytes, memory_bytes, most=8):
    wanted = math.ceil(2 * cache_bytes / max(1, set_bytes))
    affordable = int(memory_bytes * 0.25 // max(1, set_bytes))
    return max(1, min(most, max(2, wanted), affordable))


def mask_bytes(case, elem):
    """Bytes of one set's mask: bool masks take one byte an element, additive ones the dtype's."""
    kind = case.get("mask")
    if kind is None:
        return 0
    return (1 if kind == "bool" else elem) * case["batch"] * case["seqQ"] * case["seqK"]


def make_mask(torch, case, dtype, device, seed, requires_grad):
    """The random [B, 1, Sq, Sk] mask of one input set, or None (drawn on the device: it can be large)."""
    kind = case.get("mask")
    if kind is None:
        return None
    shape = (case["batch"], 1, case["seqQ"], case["seqK"])
    g = torch.Generator(device=device).manual_seed(seed)
    if kind == "bool":
        return torch.rand(shape, generator=g, device=device) < 0.9  # keep 90% of the keys, as ours
    if kind == "additive":
        mask = torch.randn(shape, generator=g, device=device, dtype=torch.float32).to(dtype)
        return mask.requires_grad_(requires_grad)  # ours computes dbias in every backward
    raise ValueError("unknown mask kind %r (want null, 'bool' or 'additive')" % kind)


def make_sets(torch, case, dtype, device, count, requires_grad):
    sets = []
    for i in range(count):
        g = torch.Generator(device="cpu").manual_seed(1000 * case["id"] + i)

        def rnd(*shape):
            t = torch.randn(*shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)
            return t.requires_grad_(requires_grad)

        b, hq, hk, sq, sk = case["batch"], case["headsQ"], case["headsKV"], case["seqQ"], case["seqK"]
        q = rnd(b, hq, sq, case["headDim"])
        k = rnd(b, hk, sk, case["headDim"])
        v = rnd(b, hk, sk, case["headDimV"])
        grad = torch.randn(b, hq, sq, case["headDimV"], generator=g).to(device=device, dtype=dtype)
        mask = make_mask(torch, case, dtype, device, 1000 * case["id"] + i + 500, requires_grad)
        sets.append((q, k, v, mask, grad))
    return sets


def sdpa_call(torch, case):
    """call(q, k, v, mask) with the case's options; mask is the set's random mask or None."""
    F = torch.nn.functional
    kwargs = {"dropout_p": float(case.get("dropoutP", 0.0))}
    if case["headsQ"] != case["headsKV"]:
        kwargs["enable_gqa"] = True
    lower_right = case.get("alignment") == "lowerRight" and case["seqQ"] != case["seqK"]
    if case["causal"] and lower_right:
        if case.get("mask") is not None:
            # The CLI does not send these (torchIncompatibility); a dense folded mask would time
            # every tile where ours skips the causal half.
            raise ValueError("a mask together with lower-right causal (Sq != Sk) is not compared")
        from torch.nn.attention.bias import causal_lower_right

        causal_bias = causal_lower_right(case["seqQ"], case["seqK"])
        return lambda q, k, v, mask: F.scaled_dot_product_attention(q, k, v, attn_mask=causal_bias, **kwargs)
    if case["causal"]:
        # With a mask too: ours applies both; torch's efficient kernel does as well (math refuses).
        kwargs["is_causal"] = True
    return lambda q, k, v, mask: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kwargs)


def grad_inputs(q, k, v, mask):
    """What backward differentiates: q, k, v, and an additive mask that requires grad (dbias)."""
    if mask is not None and mask.requires_grad:
        return (q, k, v, mask)
    return (q, k, v)


def make_op(torch, call, mode, sets):
    """op(i) runs `mode` once on input set i % len(sets)."""
    if mode == "fwd":

        def op(i):
            q, k, v, mask, _ = sets[i % len(sets)]
            with torch.no_grad():
                call(q, k, v, mask)

        return op
    if mode == "fwdbwd":

        def op(i):
            q, k, v, mask, grad = sets[i % len(sets)]
            out = call(q, k, v, mask)
            torch.autograd.grad(out, grad_inputs(q, k, v, mask), grad)

        return op
    if mode == "bwd":
        saved = [call(q, k, v, mask) for (q, k, v, mask, _) in sets]

        def op(i):
            q, k, v, mask, grad = sets[i % len(sets)]
            torch.autograd.grad(saved[i % len(sets)], grad_inputs(q, k, v, mask), grad, retain_graph=True)

        return op
    raise ValueError("unknown mode %r" % mode)


def bench_one(torch, timer, case, mode, sets, req):
    op = make_op(torch, sdpa_call(torch, case), mode, sets)
    n = 0
    k = max(1, int(req.get("callsPerSample", 1)))

    def loop(i):
        for _ in range(k):
            op(i)

    # At least `warmup` samples and `warmupMs` of them, each a timed sample's loop, as the CLI warms ours
    # (timing/measure.ts).
    warm_until = time.perf_counter() + float(req.get("warmupMs", 0)) / 1e3
    i = 0
    while i < max(0, int(req.get("warmup", 2))) or time.perf_counter() < warm_until:
        timer.time(lambda: loop(n))
        n += 1
        i += 1
    samples, spent = [], 0.0
    budget = float(req.get("budgetMs", 3000))
    while len(samples) < max(1, int(req.get("repeat", 10))):
        ms = timer.time(lambda: loop(n))
        n += 1
        samples.append(ms / k)
        spent += ms
        if spent > budget and len(samples) >= 3:
            break
    return median_and_quantiles(samples)


def cpu_capability(torch):
    """The SIMD level torch's CPU kernels dispatch to (AVX2, AVX512, ...), shown beside ours."""
    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except Exception:  # an old torch, or a stand-in without it
        return "unknown"


def run(req):
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        return {"available": False, "reason": "torch is not importable: %s" % first_line(e)}
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except Exception as e:
        return {"available": False, "reason": "torch %s has no torch.nn.attention.sdpa_kernel (need >= 2.3): %s" % (torch.__version__, first_line(e))}

    want = req.get("device", "cpu")
    if want == "cuda":
        if not torch.cuda.is_available():
            return {"available": False, "torch": torch.__version__, "reason": "torch.cuda.is_available() is False (torch %s)" % torch.__version__}
        index = int(req.get("deviceIndex", 0))
        device = torch.device("cuda", index)
        capability = None
        props = torch.cuda.get_device_properties(index)
        name = props.name
        cache = getattr(props, "L2_cache_size", 50 * 2**20)
        memory = props.total_memory
    else:
        device = torch.device("cpu")
        threads = int(req.get("threads", 0))
        if threads > 0:
            torch.set_num_threads(threads)
        capability = cpu_capability(torch)
        name = "cpu (ATen capability %s)" % capability
        cache = 32 * 2**20
        memory = 8 * 2**30

    dtype = getattr(torch, req.get("dtype", "float32"))
    timer = Timer(torch, device)
    results = []
    cases = req.get("cases", [])
    modes = req.get("modes", ["fwd"])
    backends = req.get("backends", ["math"])
    total = len(cases) * len(modes) * len(backends)
    done = 0
    for case in cases:
        for mode in modes:
            grad = mode != "fwd"
            elem = torch.tensor([], dtype=dtype).element_size()
            set_bytes = elem * case["batch"] * (
                case["headsQ"] * case["seqQ"] * (case["headDim"] + 2 * case["headDimV"])
                + case["headsKV"] * case["seqK"] * (case["headDim"] + case["headDimV"])
            ) + mask_bytes(case, elem)
            try:
                sets = make_sets(torch, case, dtype, device, rotation_sets(set_bytes, cache, memory), grad)
            except Exception as e:
                for b in backends:
                    results.append({"case": case["id"], "mode": mode, "backend": b, "ok": False, "reason": "inputs: %s" % first_line(e)})
                done += len(backends)
                continue
            for b in backends:
                done += 1
                entry = {"case": case["id"], "mode": mode, "backend": b}
                attr = BACKEND_NAMES.get(b)
                if attr is None or not hasattr(SDPBackend, attr):
                    entry.update(ok=False, reason="torch %s has no SDPBackend.%s" % (torch.__version__, attr or b))
                    results.append(entry)
                    continue
                try:
                    with warnings.catch_warnings(record=True) as caught, sdpa_kernel([getattr(SDPBackend, attr)]):
                        warnings.simplefilter("always")
                        try:
                            entry.update(ok=True, **bench_one(torch, timer, case, mode, sets, req))
                        except RuntimeError as e:
                            # "No available kernel" comes with one warning per reason; other errors
                            # (out of memory, ...) speak for themselves.
                            hints = [first_line(w.message) for w in caught if "deprecat" not in str(w.message).lower()]
                            no_kernel = "No available kernel" in str(e)
                            why = "; ".join(hints) if no_kernel and hints else first_line(e)
                            entry.update(ok=False, reason=why)
                except Exception as e:  # OOM, TypeError on an older torch, anything else
                    entry.update(ok=False, reason="%s: %s" % (type(e).__name__, first_line(e)))
                finally:
                    if device.type == "cuda":
                        torch.cuda.empty_cache()
                results.append(entry)
                state = "%.3f ms" % entry["medianMs"] if entry.get("ok") else "unsupported: %s" % entry.get("reason", "")
                log("[torch %d/%d] %s %s case %d: %s" % (done, total, b, mode, case["id"], state))
            del sets
    answer = {
        "available": True,
        "torch": torch.__version__,
        "device": name,
        "threads": torch.get_num_threads(),
        "timer": timer.description,
        "results": results,
    }
    if capability is not None:
        answer["capability"] = capability
    return answer


def main():
    try:
        req = json.load(sys.stdin)
    except Exception as e:
        json.dump({"available": False, "reason": "bad request on stdin: %s" % first_line(e)}, sys.stdout)
        return 0
    try:
        answer = run(req)
    except Exception as e:  # never crash: the caller prints the reason
        answer = {"available": False, "reason": "%s: %s" % (type(e).__name__, first_line(e))}
    json.dump(answer, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
