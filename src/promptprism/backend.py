"""The array backend of the core: numpy (the reference) or torch (CUDA when present, else the CPU).

One option, ``device``, chooses it for a whole computation:

* ``'cpu'`` - numpy on the CPU, the reference every other backend is tested against;
* ``'auto'`` - torch on CUDA when a GPU is present, else numpy (the default of the estimators);
* ``'cuda'``, ``'cuda:N'``, ``'mps'`` - torch on that accelerator;
* ``'torch'`` - torch on the CPU: the accelerator's code path, run where there is none (the tests use it).

Core functions are written once over the `array API standard <https://data-apis.org/array-api/>`_ (numpy 2's
own namespace; torch through ``array_api_compat``, the layer scikit-learn and SciPy use): they take
``xp = array_namespace(x)`` from their inputs and never call numpy or torch by name, so the same function runs
on both backends. Estimators convert their inputs once with :meth:`Backend.asarray` and their results back
with :func:`to_numpy`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._params import Check
from .errors import OptionError

#: the values ``device`` accepts besides 'cuda:N'
DEVICES = ("auto", "cpu", "cuda", "mps", "torch")


@dataclass(frozen=True)
class Backend:
    """Where the array core runs: ``name`` 'numpy' or 'torch', and the torch device ('cpu', 'cuda:0', ...)."""

    name: str
    torch_device: str | None = None

    @property
    def xp(self) -> Any:
        """The array-API namespace of this backend: numpy itself, or ``array_api_compat``'s torch wrapper."""
        if self.name == "numpy":
            return np
        import array_api_compat.torch as xp

        return xp

    @property
    def device(self) -> str:
        """The device arrays of this backend live on ('cpu' for numpy), for ``xp.empty(..., device=)``."""
        return "cpu" if self.name == "numpy" else str(self.torch_device)

    @property
    def label(self) -> str:
        """'numpy' or 'torch:<device>', as recorded in results' config."""
        return "numpy" if self.name == "numpy" else f"torch:{self.torch_device}"

    def asarray(self, x: Any, dtype: Any = None) -> Any:
        """``x`` as an array of this backend (on its device), in ``dtype`` (a numpy dtype or its name)."""
        if self.name == "numpy":
            return np.asarray(x, dtype=dtype)
        import torch

        if dtype is not None:
            dtype = getattr(torch, np.dtype(dtype).name)
        if isinstance(x, torch.Tensor):
            return x.to(device=self.torch_device, dtype=dtype)
        a = np.asarray(x)
        if not a.flags.writeable:  # (a tensor would share read-only memory: torch warns; writes undefined)
            a = a.copy()
        return torch.as_tensor(a, dtype=dtype, device=self.torch_device)

    def empty(self, shape: tuple[int, ...], dtype: Any, *, threads_write: bool = False) -> Any:
        """An uninitialised array of this backend (``dtype``: a numpy dtype or its name); large numpy
        arrays come with their pages mapped (:func:`populated_empty`), or, when several threads will write
        it (``threads_write``), mapped by their writes (:func:`unpopulated_empty`)."""
        if self.name == "numpy":
            return unpopulated_empty(shape, dtype) if threads_write else populated_empty(shape, dtype)
        import torch

        return torch.empty(shape, dtype=getattr(torch, np.dtype(dtype).name), device=self.torch_device)


#: arrays at least this large are allocated with their pages mapped up front
POPULATE_BYTES = 16 * 2**20


def populated_zeros(shape: tuple[int, ...], dtype: Any, order: str = "C") -> np.ndarray:
    """``np.zeros(shape, dtype, order)`` whose memory pages are mapped at allocation (Linux ``MAP_POPULATE``,
    anonymous memory comes zeroed) when it is at least :data:`POPULATE_BYTES`: the first write to fresh
    memory otherwise takes one page fault per 4 KiB page, one at a time (measured on a virtual machine:
    1.1 s for 720 MB, 0.2 s for the first pass over a 72 MB sum; 0.23 s for 720 MB populated)."""
    import mmap

    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    flag = getattr(mmap, "MAP_POPULATE", None)
    if size < POPULATE_BYTES or flag is None:
        return np.zeros(shape, dtype=dtype, order=order)
    try:
        buffer = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | flag)
    except OSError:  # e.g. ENOMEM: numpy's own allocation answers (a MemoryError callers know how to report)
        return np.zeros(shape, dtype=dtype, order=order)
    flat = np.frombuffer(buffer, dtype=dtype)
    return flat.reshape(shape[::-1]).T if order == "F" else flat.reshape(shape)


def populated_empty(shape: tuple[int, ...], dtype: Any, order: str = "C") -> np.ndarray:
    """An array to be overwritten, allocated as :func:`populated_zeros` (the zeros cost nothing extra)."""
    return populated_zeros(shape, dtype, order)


def populated_copy(a: np.ndarray, dtype: Any, order: str = "K") -> np.ndarray:
    """``a`` converted to ``dtype`` (``order`` 'C', 'F', or 'K': as ``a``), in a new array from
    :func:`populated_empty`: for a large working copy, predictable page costs (numpy's own allocation takes
    huge pages when it can, whose first touch costs up to 2 ms per MB on a virtual machine whose host has
    not backed them yet; mapped 4 KiB pages cost ~0.35 ms per MB)."""
    if order == "K":
        order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    out = populated_empty(a.shape, dtype, order=order)
    np.copyto(out, a, casting="same_kind")
    return out


def unpopulated_empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised C-ordered array to be written by several threads at once: anonymous memory mapped
    without its pages (Linux), huge pages declined (``MADV_NOHUGEPAGE``), so each writing thread takes the
    page faults of its own rows beside the others and no fault waits for the kernel to compact memory into
    a huge page. Measured on a 2-core virtual machine, 720 MB: written by two threads 0.15 s; mapped up front
    (:func:`populated_empty`, one thread) 0.22 s; huge pages 0.03 s usually, 0.8-1.5 s when compacting."""
    import mmap

    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    if size < POPULATE_BYTES or not hasattr(mmap, "MADV_NOHUGEPAGE"):
        return populated_empty(shape, dtype)
    try:
        buffer = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except OSError:  # e.g. ENOMEM: numpy's own allocation answers (a MemoryError callers know how to report)
        return np.empty(shape, dtype=dtype)
    try:
        buffer.madvise(mmap.MADV_NOHUGEPAGE)
    except OSError:  # (a kernel without transparent huge pages: nothing to decline)
        pass
    return np.frombuffer(buffer, dtype=dtype).reshape(shape)


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Hold torch's intra-op pool to ``threads`` for the block and give back the count it had: a training
    recipe's ``main`` may run inside a process of the caller's (a notebook, a test process)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


NUMPY = Backend("numpy")


def resolve_backend(device: str | Backend = "cpu", name: str = "device") -> Backend:
    """The :class:`Backend` that ``device`` names (see the module docstring); OptionError otherwise."""
    if isinstance(device, Backend):
        return device
    if not isinstance(device, str) or not (device in DEVICES or (device.startswith("cuda:")
                                                                 and device[5:].isdigit())):
        raise OptionError(f"{name} must be one of {', '.join(DEVICES)} or cuda:N, got {device!r}")
    if device == "cpu" or (device == "auto" and not _cuda_visible()):
        return NUMPY  # (importing torch only to learn that there is no GPU costs seconds of start-up)
    try:
        import torch
    except ImportError as exc:
        if device == "auto":
            return NUMPY
        raise OptionError(f"{name}={device!r} needs torch (pip install 'promptprism[torch]')") from exc
    if device == "auto":
        return Backend("torch", "cuda") if torch.cuda.is_available() else NUMPY
    if device == "torch":
        return Backend("torch", "cpu")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise OptionError(f"{name}={device!r}: no CUDA device is available here (use 'auto' or 'cpu')")
        index = device.partition(":")[2]
        if index and int(index) >= torch.cuda.device_count():
            raise OptionError(f"{name}={device!r}: there are {torch.cuda.device_count()} CUDA devices")
    if device == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise OptionError(f"{name}='mps': no MPS device is available here (use 'auto' or 'cpu')")
    return Backend("torch", device)


#: the estimators' ``device`` parameter: a name :func:`resolve_backend` accepts (checked where it is given)
DEVICE = Check(resolve_backend, "'auto', 'cpu', 'cuda', 'cuda:N', 'mps' or 'torch'")


def _cuda_visible() -> bool:
    """False when this machine certainly has no CUDA device (Linux without the NVIDIA driver, macOS),
    without importing torch; True when there may be one (then torch is asked)."""
    import os
    import sys

    if "torch" in sys.modules:  # already paid for: ask it
        return True
    if sys.platform == "darwin":
        return False
    if sys.platform.startswith("linux"):
        try:
            devices = os.listdir("/dev")
        except OSError:
            devices = []
        return os.path.exists("/proc/driver/nvidia/version") or any(d.startswith("nvidia") for d in devices)
    return True


def array_namespace(*arrays: Any) -> Any:
    """The array-API namespace of ``arrays``: numpy itself for plain sequences and numpy arrays (numpy 2's
    main namespace is the standard's; array_api_compat's numpy wrapper imports every numpy submodule,
    f2py included: ~0.1 s of each command's start-up), else array_api_compat's (torch)."""
    if all(isinstance(a, np.ndarray | np.generic) or not hasattr(a, "shape") for a in arrays):
        return np
    from array_api_compat import array_namespace as _namespace

    return _namespace(*[a if hasattr(a, "shape") else np.asarray(a) for a in arrays])


def to_numpy(x: Any) -> Any:
    """``x`` as a numpy array (copied from the device when it is a torch tensor); other values unchanged."""
    if isinstance(x, np.ndarray) or not hasattr(x, "detach"):
        return x
    return x.detach().cpu().numpy()


def is_numpy(x: Any) -> bool:
    """Whether ``x`` is a numpy array (or a plain value): the reference backend's branch of a solver."""
    return not hasattr(x, "detach")


def backend_of(x: Any) -> Backend:
    """The :class:`Backend` an array lives on: numpy, or torch on the tensor's device. Random draws are
    made by numpy (the same numbers on every backend) and moved there with ``backend_of(x).asarray``."""
    return NUMPY if is_numpy(x) else Backend("torch", str(x.device))


def float_dtype(xp: Any, precision: str) -> Any:
    """The floating dtype of namespace ``xp`` named by ``precision`` ('float32' or 'float64')."""
    return xp.float32 if precision == "float32" else xp.float64


def as_float(xp: Any, x: Any, dtype: Any) -> Any:
    """``x`` as an array of namespace ``xp`` in the floating ``dtype``: a torch tensor is cast with
    ``Tensor.to`` (differentiable, autograd's graph kept; torch.asarray would decide ``requires_grad``
    itself), anything else through ``xp.asarray``."""
    return xp.asarray(x, dtype=dtype) if is_numpy(x) else x.to(dtype)


def scalar(x: Any) -> float:
    """A 0-d array's value as a float, read off a detached copy for a torch tensor autograd records."""
    return float(x if is_numpy(x) else x.detach())


def inplace(name: str, x: Any) -> Any:
    """Apply the elementwise function ``name`` ('exp', 'cos', 'sqrt', ...) to ``x`` in place, as numpy's
    ``out=`` and torch's ``x.exp_()`` do (the array API has no in-place functions; on N x N kernel matrices
    a temporary copy would double the memory). Returns ``x``."""
    if is_numpy(x):
        return getattr(np, name)(x, out=x)
    return getattr(x, name + "_")()


def dtype_name(x: Any) -> str:
    """The name of an array's dtype without its library's prefix ('float32' for numpy and torch alike),
    as :meth:`Backend.asarray` takes it."""
    return str(x.dtype).rsplit(".", 1)[-1]


#: share of the free memory (host RAM, or the accelerator's) that kept intermediate arrays may take
MEMORY_SHARE = 0.25


def feature_memory(backend: Backend) -> int:
    """Bytes an estimator may use to keep a pass's features for a later pass instead of recomputing them:
    :data:`MEMORY_SHARE` of the memory free now, on the backend's device (host RAM for numpy and CPU torch,
    the accelerator's free memory for CUDA)."""
    if backend.name == "torch" and str(backend.torch_device).startswith("cuda"):
        import torch

        free, _ = torch.cuda.mem_get_info(torch.device(backend.torch_device))
        return int(MEMORY_SHARE * free)
    from ._validation import available_memory

    return int(MEMORY_SHARE * available_memory())


def into(name: str, x: Any, out: Any) -> Any:
    """Write the elementwise function ``name`` of ``x`` into ``out`` (which may be a strided view, e.g. half
    of a feature matrix), as numpy's and torch's ``out=`` do: no temporary copy. Returns ``out``."""
    if is_numpy(x):
        return getattr(np, name)(x, out=out)
    import torch

    return getattr(torch, name)(x, out=out)
