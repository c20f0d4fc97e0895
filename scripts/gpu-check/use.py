"""Uses one GPU package for real and says what happened, as JSON on stdout (scripts/gpu-check.sh real).

    python3 use.py torch|jax|cupy

The use goes past the import to the features doctor judges: a kernel on the GPU, a cuBLAS product
and a cuDNN convolution (torch, jax) or a cuBLAS product and cupy's cuTENSOR module (cupy). `ok` is true only when every one
of them ran on the GPU; `steps` says which ran and each failure's text. JAX falls back to the CPU
without raising when its CUDA plugin cannot start, so `platform` is recorded and a CPU platform is
a failure of the GPU use.
"""

import json
import sys
import traceback


def step(steps, name, fn):
    try:
        value = fn()
        steps.append({"step": name, "ok": True, "value": repr(value)[:200]})
        return value
    except BaseException as e:  # noqa: BLE001 - every failure is the answer
        steps.append({"step": name, "ok": False, "error": f"{type(e).__name__}: {e}"[:2000],
                      "where": traceback.format_exc(limit=3)[-1500:]})
        return None


def use_torch(steps):
    import torch

    step(steps, "cuda available", lambda: torch.cuda.is_available() or (_ for _ in ()).throw(RuntimeError("torch.cuda.is_available() is False")))
    x = step(steps, "kernel", lambda: torch.arange(1 << 20, device="cuda", dtype=torch.float32))
    if x is not None:
        step(steps, "cublas", lambda: float((x[:1024].reshape(32, 32) @ x[:1024].reshape(32, 32)).sum()))
    step(steps, "cudnn conv", lambda: float(torch.nn.functional.conv2d(
        torch.ones(1, 3, 16, 16, device="cuda"), torch.ones(4, 3, 3, 3, device="cuda")).sum()))
    step(steps, "cudnn version", lambda: torch.backends.cudnn.version())


def use_jax(steps):
    import logging

    # JAX logs a plugin's failure and goes on on the CPU: keep what it logs for the answer.
    logged = []

    class Keep(logging.Handler):
        def emit(self, record):
            logged.append(self.format(record))

    logging.getLogger("jax").addHandler(Keep(level=logging.WARNING))
    import jax
    import jax.numpy as jnp

    platform = step(steps, "platform", lambda: jax.devices()[0].platform)
    if platform != "gpu":
        steps.append({"step": "on the GPU", "ok": False,
                      "error": f"jax runs on {platform!r}, not the GPU; it logged: " + " | ".join(logged)[-1500:]})
    step(steps, "kernel", lambda: float(jnp.arange(1 << 20, dtype=jnp.float32).sum()))
    step(steps, "cublas", lambda: float((jnp.ones((64, 64)) @ jnp.ones((64, 64))).sum()))
    step(steps, "cudnn conv", lambda: float(jax.lax.conv(
        jnp.ones((1, 3, 16, 16)), jnp.ones((4, 3, 3, 3)), (1, 1), "SAME").sum()))


def use_cupy(steps):
    import cupy

    step(steps, "device count", lambda: cupy.cuda.runtime.getDeviceCount())
    step(steps, "kernel", lambda: float(cupy.arange(1 << 20, dtype=cupy.float32).sum()))
    step(steps, "cublas", lambda: float((cupy.ones((64, 64)) @ cupy.ones((64, 64))).sum()))
    step(steps, "cutensor", lambda: __import__("cupy_backends.cuda.libs.cutensor").__name__)


def use_torchvision(steps):
    import torch
    import torchvision

    boxes = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60]], dtype=torch.float32, device="cuda")
    scores = torch.tensor([0.9, 0.8, 0.7], device="cuda")
    step(steps, "nms on the GPU", lambda: torchvision.ops.nms(boxes, scores, 0.5).tolist())
    jpeg = step(steps, "encode_jpeg", lambda: torchvision.io.encode_jpeg(torch.randint(0, 255, (3, 32, 32), dtype=torch.uint8)))
    if jpeg is not None:
        step(steps, "decode_jpeg on the GPU (nvJPEG)", lambda: tuple(torchvision.io.decode_jpeg(jpeg, device="cuda").shape))


def use_torchaudio(steps):
    import torch
    import torchaudio

    step(steps, "resample on the GPU", lambda: tuple(torchaudio.functional.resample(
        torch.randn(1, 16000, device="cuda"), 16000, 8000).shape))
    step(steps, "lfilter on the GPU", lambda: float(torchaudio.functional.lfilter(
        torch.randn(1, 1000, device="cuda"), torch.tensor([1.0, 0.0], device="cuda"),
        torch.tensor([0.5, 0.5], device="cuda")).sum()))


def use_triton(steps):
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add(x, y, out, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(out + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)

    def run():
        x = torch.arange(1024, device="cuda", dtype=torch.float32)
        out = torch.empty_like(x)
        add[(4,)](x, x, out, 1024, BLOCK=256)
        return float(out.sum())

    step(steps, "a triton kernel", run)


def use_numba_cuda(steps):
    import numpy as np
    from numba import cuda

    @cuda.jit
    def inc(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1

    def run():
        a = cuda.to_device(np.zeros(256, dtype=np.float32))
        inc[1, 256](a)
        return float(a.copy_to_host().sum())

    step(steps, "a numba.cuda kernel (NVVM)", run)


def use_cuda_core(steps):
    try:
        from cuda.core import Device, Program
    except ImportError:
        from cuda.core.experimental import Device, Program

    def run():
        dev = Device()
        dev.set_current()
        prog = Program('extern "C" __global__ void k(float *a) { a[threadIdx.x] = 1.0f; }', code_type="c++")
        return type(prog.compile("cubin")).__name__

    step(steps, "NVRTC compile through cuda.core", run)


def main():
    pkg = sys.argv[1]
    steps = []
    fn = {"torch": use_torch, "jax": use_jax, "cupy": use_cupy, "torchvision": use_torchvision,
          "torchaudio": use_torchaudio, "triton": use_triton, "numba_cuda": use_numba_cuda,
          "cuda.core": use_cuda_core}[pkg]
    step(steps, "import and use", lambda: fn(steps))
    ok = bool(steps) and all(s["ok"] for s in steps)
    print(json.dumps({"package": pkg, "ok": ok, "steps": steps}, indent=1))


if __name__ == "__main__":
    main()
