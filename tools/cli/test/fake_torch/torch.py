"""A stand-in for torch, just enough for python/torch_sdpa_bench.py on the CPU (no torch installed here).

It checks what the script hands to scaled_dot_product_attention and autograd.grad, not any numbers:
each call is appended as one JSON line to the file named by FAKE_TORCH_LOG. Like torch, the math
backend refuses attn_mask together with is_causal=True.
"""
import contextlib
import json
import os
import sys
import types

__version__ = "0.0-fake"

_SIZES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "bool": 1}


class dtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


float32, float16, bfloat16, float64 = dtype("float32"), dtype("float16"), dtype("bfloat16"), dtype("float64")
bool = dtype("bool")  # noqa: A001 (torch.bool)


class device:
    def __init__(self, type, index=None):  # noqa: A002
        self.type = type
        self.index = index


class Tensor:
    def __init__(self, shape, dt, dev="cpu"):
        self.shape = tuple(shape)
        self.dtype = dt
        self.device = dev
        self.requires_grad = False

    def to(self, *args, device=None, dtype=None):
        for a in args:  # torch takes .to(dtype) and .to(device) positionally too
            if isinstance(a, globals()["dtype"]):
                dtype = a
            else:
                device = a
        return Tensor(self.shape, dtype or self.dtype, device or self.device)

    def requires_grad_(self, flag=True):
        self.requires_grad = flag
        return self

    def element_size(self):
        return _SIZES[self.dtype.name]

    def __lt__(self, other):
        return Tensor(self.shape, bool, self.device)

    def describe(self):
        return {"shape": list(self.shape), "dtype": self.dtype.name, "requiresGrad": self.requires_grad}


def _shape(args):
    return args[0] if len(args) == 1 and isinstance(args[0], tuple) else args


def randn(*shape, generator=None, dtype=None, device="cpu"):
    return Tensor(_shape(shape), dtype or float32, device)


def rand(*shape, generator=None, dtype=None, device="cpu"):
    return Tensor(_shape(shape), dtype or float32, device)


def tensor(values, dtype=None):
    return Tensor((len(values),), dtype or float32)


class Generator:
    def __init__(self, device="cpu"):
        self.device = device

    def manual_seed(self, seed):
        return self


_threads = [1]


def set_num_threads(n):
    _threads[0] = n


def get_num_threads():
    return _threads[0]


@contextlib.contextmanager
def no_grad():
    yield


cuda = types.SimpleNamespace(is_available=lambda: False, empty_cache=lambda: None, synchronize=lambda: None)
backends = types.SimpleNamespace(cpu=types.SimpleNamespace(get_cpu_capability=lambda: "FAKE_SIMD"))


def _log(entry):
    path = os.environ.get("FAKE_TORCH_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")


class SDPBackend:
    FLASH_ATTENTION = "flash"
    EFFICIENT_ATTENTION = "efficient"
    MATH = "math"


_active = ["math"]


@contextlib.contextmanager
def sdpa_kernel(backends):
    _active[0] = backends[0]
    yield


def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, enable_gqa=False):
    if is_causal and attn_mask is not None and _active[0] == "math":
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    mask = attn_mask.describe() if isinstance(attn_mask, Tensor) else attn_mask
    _log({"call": "sdpa", "backend": _active[0], "q": q.describe(), "mask": mask, "isCausal": is_causal})
    out = Tensor(q.shape[:3] + v.shape[3:], q.dtype, q.device)
    out.requires_grad = q.requires_grad
    return out


def _grad(outputs, inputs, grad_outputs=None, retain_graph=None):
    _log({"call": "grad", "backend": _active[0], "inputs": [t.describe() for t in inputs]})
    return tuple(Tensor(t.shape, t.dtype, t.device) for t in inputs)


autograd = types.SimpleNamespace(grad=_grad)
nn = types.ModuleType("torch.nn")
nn.functional = types.SimpleNamespace(scaled_dot_product_attention=scaled_dot_product_attention)
nn.attention = types.ModuleType("torch.nn.attention")
nn.attention.SDPBackend = SDPBackend
nn.attention.sdpa_kernel = sdpa_kernel
sys.modules["torch.nn"] = nn
sys.modules["torch.nn.attention"] = nn.attention
