"""Devices arrays live on (``"cpu"``: NumPy/Numba, ``"cuda"``: CuPy) and the checks that
arrays of one expression or computation share one.

``formats.device`` holds the device tensor format and imports CuPy only when asked to move
data, so recognising a ``DeviceTensor`` here costs nothing on a machine without a GPU. Whether
CuPy sees a GPU is asked through that module on each call (the CUDA emulator of the tests
replaces ``formats.device.cuda_available``).
"""

from __future__ import annotations

from typing import Any

from lazysparse.formats import device as device_format
from lazysparse.formats.device import DeviceTensor


class Device:
    """A device on which arrays live: ``"cpu"`` (NumPy/Numba) or ``"cuda"`` (CuPy)."""

    __slots__ = ("name",)

    def __init__(self, name: str = "cpu") -> None:
        if name not in ("cpu", "cuda"):
            raise ValueError(f"unknown device {name!r}; lazysparse knows 'cpu' and 'cuda'")
        self.name = name

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self.name == other
        return isinstance(other, Device) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("Device", self.name))

    def __repr__(self) -> str:
        return f"Device({self.name!r})"


CPU = Device("cpu")
CUDA_REQUIRED = ("CuPy with a CUDA device is required for device='cuda'; install "
                 "lazysparse[gpu]")


def as_device(device: Any, fname: str) -> Device | None:
    """``device`` (None, a name or a ``Device``) as a ``Device``; ValueError naming it when
    lazysparse has no such device, or when it is ``"cuda"`` and CuPy sees no GPU."""
    if device is None:
        return None
    if isinstance(device, Device):
        dev = device
    elif isinstance(device, str) and device in ("cpu", "cuda"):
        dev = Device(device)
    else:
        raise ValueError(f"{fname}: unsupported device {device!r}; lazysparse knows 'cpu' "
                         "and 'cuda'")
    if dev.name == "cuda" and not device_format.cuda_available():  # asked at call time
        raise ValueError(f"{fname}: {CUDA_REQUIRED}")
    return dev


def is_device_tensor(t: Any) -> bool:
    """Whether ``t`` is a tensor on device cuda (a ``formats.device.DeviceTensor``)."""
    return isinstance(t, DeviceTensor)


def device_mix_error(names: set[str]) -> ValueError:
    """The error for arrays of several devices in one expression or computation."""
    return ValueError(f"arrays on different devices ({' and '.join(sorted(names))}) cannot be "
                      "mixed in one expression; move them first with x.to_device('cuda') or "
                      "x.to_device('cpu')")
