"""onnxruntime's OrtValue and OrtDevice over NumPy arrays.

Every plugnn backend bundled today computes in host memory, so an OrtValue is a NumPy array
(or, as a run's output, a list of arrays for a sequence, None for an empty optional) on the
device "cpu". `OrtValue.ortvalue_from_numpy(array)` keeps a reference to the caller's array
when it is C-contiguous (no copy, as onnxruntime does on the CPU); `numpy()` returns that
array. Another device ("cuda", ...) is a NotImplemented error naming plugnn's only device.
"""

from __future__ import annotations

import ctypes
import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from plugnn.onnx.context import np_dtype, onnx_module
from plugnn.session.model import onnx_type
from plugnn.session.ort_errors import InvalidArgument, NotImplemented

CPU = "cpu"
# onnxruntime's device names, for OrtDevice.make; only "cpu" has memory plugnn can use.
_DEVICE_TYPES = {"cpu": 0, "cuda": 1, "gpu": 1, "fpga": 2, "npu": 3, "dml": 4, "cann": 5, "webgpu": 6}


class OrtDeviceVendorId(enum.IntEnum):
    """The PCI vendor ids onnxruntime names devices' vendors by (NONE for the CPU)."""

    NONE = 0
    AMD = 0x1002
    NVIDIA = 0x10DE
    ARM = 0x13B5
    MICROSOFT = 0x1414
    HUAWEI = 0x19E5
    QUALCOMM = 0x5143
    INTEL = 0x8086


_VENDORS = {"cuda": OrtDeviceVendorId.NVIDIA, "cann": OrtDeviceVendorId.HUAWEI, "dml": OrtDeviceVendorId.MICROSOFT}


def check_device(device_type: Any, device_id: Any = 0, what: str = "OrtValue") -> None:
    """NotImplemented for any device but the CPU (device id 0)."""
    name = getattr(device_type, "device_name", lambda: device_type)() if isinstance(device_type, OrtDevice) \
        else device_type
    if not isinstance(name, str) or name.lower() != CPU:
        raise NotImplemented(f"{what}: device {device_type!r}: plugnn's backends compute in host memory; the only "
                             f"device is 'cpu'")
    if device_id not in (0, None):
        raise InvalidArgument(f"{what}: device id {device_id!r}: the CPU is device 0")


def element_type_of(dtype: np.dtype) -> int:
    """The ONNX TensorProto element type of a NumPy dtype (STRING for str/bytes/object)."""
    onnx = onnx_module()
    if dtype.kind in "OUS":
        return int(onnx.TensorProto.STRING)
    try:
        return int(onnx.helper.np_dtype_to_tensor_dtype(dtype))
    except (KeyError, ValueError, TypeError):
        raise InvalidArgument(f"NumPy dtype {dtype} has no ONNX element type") from None


def _numpy_dtype(element_type: Any) -> np.dtype:
    """A NumPy dtype from a NumPy type/dtype, a dtype string or an ONNX element type (int)."""
    if isinstance(element_type, (int, np.integer)) and not isinstance(element_type, bool):
        dtype = np_dtype(int(element_type))
        if dtype == np.dtype(object) and int(element_type) != int(onnx_module().TensorProto.STRING):
            raise InvalidArgument(f"ONNX element type {element_type} has no NumPy dtype plugnn holds")
        return dtype
    try:
        return np.dtype(element_type)
    except TypeError:
        raise InvalidArgument(f"{element_type!r} is not a NumPy type or ONNX element type") from None


def string_array(array: np.ndarray) -> np.ndarray:
    """A `<U`, `|S` or `|V` array as an object array of `str` (bytes decoded as UTF-8)."""
    out = np.empty(array.shape, dtype=object)
    flat = out.reshape(-1)
    if array.dtype.kind == "U":
        flat[:] = [str(v) for v in array.reshape(-1)]
    else:
        flat[:] = [bytes(v).rstrip(b"\0").decode("utf-8", errors="replace") for v in array.reshape(-1)]
    return out


class OrtDevice:
    """onnxruntime's OrtDevice: a device type and id. plugnn can make one for any of
    onnxruntime's device names, but only the CPU holds values."""

    def __init__(self, device_type: int = 0, memory_type: int = 0, device_id: int = 0, vendor_id: int = 0) -> None:
        self._type, self._memory, self._id, self._vendor = int(device_type), int(memory_type), int(device_id), \
            int(vendor_id)

    @staticmethod
    def make(device_name: str, device_id: int = 0) -> OrtDevice:
        key = str(device_name).lower()
        if key not in _DEVICE_TYPES:
            raise InvalidArgument(f"unknown device {device_name!r}; onnxruntime's device names are "
                                  f"{', '.join(_DEVICE_TYPES)} (plugnn has 'cpu')")
        return OrtDevice(_DEVICE_TYPES[key], 0, device_id, _VENDORS.get(key, 0))

    @staticmethod
    def cpu() -> int:
        return _DEVICE_TYPES["cpu"]

    @staticmethod
    def cuda() -> int:
        return _DEVICE_TYPES["cuda"]

    @staticmethod
    def default_memory() -> int:
        return 0

    def device_id(self) -> int:
        return self._id

    def device_type(self) -> int:
        return self._type

    def device_mem_type(self) -> int:
        return self._memory

    def device_vendor_id(self) -> int:
        return self._vendor

    def device_name(self) -> str:
        return next((n for n, t in _DEVICE_TYPES.items() if t == self._type), str(self._type))

    def __repr__(self) -> str:
        return f"<plugnn.OrtDevice {self.device_name()}:{self._id}>"


class OrtValue:
    """onnxruntime's OrtValue: a tensor (a NumPy array), a sequence of tensors (a list) or an
    empty optional (None), on the CPU. Make one with `ortvalue_from_numpy` or
    `ortvalue_from_shape_and_type`; a run's outputs come as OrtValues from
    `run_with_ort_values` and `IOBinding.get_outputs`."""

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        self._value = value

    # -- making one --------------------------------------------------------------------

    @staticmethod
    def ortvalue_from_numpy(numpy_obj: Any, device_type: str = CPU, device_id: int = 0,
                            vendor_id: int = -1) -> OrtValue:
        """An OrtValue over `numpy_obj` (its memory when C-contiguous, else a contiguous copy);
        a str/bytes array becomes the object array of str plugnn's string tensors are."""
        check_device(device_type, device_id)
        if not isinstance(numpy_obj, np.ndarray):
            raise InvalidArgument(f"ortvalue_from_numpy takes a numpy.ndarray, got {type(numpy_obj).__name__}")
        if numpy_obj.dtype.kind in "USV":
            numpy_obj = string_array(numpy_obj)
        return OrtValue(numpy_obj if numpy_obj.flags.c_contiguous else np.ascontiguousarray(numpy_obj))

    @staticmethod
    def ortvalue_from_numpy_with_onnx_type(data: np.ndarray, onnx_element_type: int) -> OrtValue:
        """An OrtValue of ONNX element type `onnx_element_type` over `data`'s bytes (same item
        size: a reinterpretation, as for float8 data held in uint8)."""
        if not isinstance(data, np.ndarray):
            raise InvalidArgument(f"ortvalue_from_numpy_with_onnx_type takes a numpy.ndarray, got {type(data).__name__}")
        dtype = _numpy_dtype(onnx_element_type)
        array = np.ascontiguousarray(data)
        if array.dtype != dtype:
            if array.dtype.itemsize != dtype.itemsize:
                raise InvalidArgument(f"ortvalue_from_numpy_with_onnx_type: {array.dtype} data cannot hold ONNX "
                                      f"element type {onnx_element_type} ({dtype}): item sizes differ")
            array = array.view(dtype)
        return OrtValue(array)

    @staticmethod
    def ortvalue_from_shape_and_type(shape: Sequence[int], element_type: Any, device_type: str = CPU,
                                     device_id: int = 0, vendor_id: int = -1) -> OrtValue:
        """A new OrtValue of `shape` and `element_type` (a NumPy type or an ONNX element type);
        its contents are undefined until written (e.g. as a bound output)."""
        check_device(device_type, device_id)
        dims = [int(d) for d in shape]
        if any(d < 0 for d in dims):
            raise InvalidArgument(f"ortvalue_from_shape_and_type: negative dim in shape {list(shape)}")
        dtype = _numpy_dtype(element_type)
        return OrtValue(np.empty(dims, dtype) if dtype != np.dtype(object) else np.full(dims, "", dtype=object))

    @staticmethod
    def ort_value_from_sparse_tensor(sparse_tensor: Any) -> OrtValue:
        raise NotImplemented("plugnn has no sparse tensors (OrtValue.ort_value_from_sparse_tensor)")

    # -- what it holds -----------------------------------------------------------------

    def _tensor(self, what: str) -> np.ndarray:
        if not isinstance(self._value, np.ndarray):
            kind = "an empty optional" if self._value is None else "a sequence"
            raise InvalidArgument(f"OrtValue.{what}: the OrtValue holds {kind}, not a tensor")
        return self._value

    def numpy(self) -> Any:
        """The array (not a copy), a list of arrays for a sequence, None for an empty optional."""
        return self._value

    def shape(self) -> list[int]:
        return list(self._tensor("shape").shape)

    def data_type(self) -> str:
        """onnxruntime's type text: "tensor(float)", "seq(tensor(int64))", ..."""
        value = self._value
        if isinstance(value, list):
            inner = onnx_type(element_type_of(value[0].dtype)) if value else "tensor(undefined)"
            return f"seq({inner})"
        return onnx_type(element_type_of(self._tensor("data_type").dtype))

    def element_type(self) -> int:
        """The ONNX TensorProto element type (1 for float, 7 for int64, ...)."""
        return element_type_of(self._tensor("element_type").dtype)

    def device_name(self) -> str:
        return CPU

    def data_ptr(self) -> int:
        """The address of the tensor's first element."""
        return int(self._tensor("data_ptr").__array_interface__["data"][0])

    def tensor_size_in_bytes(self) -> int:
        array = self._tensor("tensor_size_in_bytes")
        if array.dtype == np.dtype(object):
            raise InvalidArgument("OrtValue.tensor_size_in_bytes: a string tensor has no fixed size in bytes")
        return int(array.nbytes)

    def has_value(self) -> bool:
        return self._value is not None

    def is_tensor(self) -> bool:
        return isinstance(self._value, np.ndarray)

    def is_tensor_sequence(self) -> bool:
        return isinstance(self._value, list)

    def is_sparse_tensor(self) -> bool:
        return False

    def as_sparse_tensor(self) -> Any:
        raise NotImplemented("plugnn has no sparse tensors (OrtValue.as_sparse_tensor)")

    def update_inplace(self, np_arr: np.ndarray) -> None:
        """Copy `np_arr` (same number of elements, cast to this tensor's type) into the tensor."""
        array = self._tensor("update_inplace")
        source = np.asarray(np_arr)
        if source.size != array.size:
            raise InvalidArgument(f"OrtValue.update_inplace: {source.size} elements for a tensor of {array.size}")
        np.copyto(array.reshape(-1), source.reshape(-1), casting="same_kind")

    # -- NumPy and DLPack ------------------------------------------------------------------

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The tensor's array for np.asarray / np.array: the same memory unless another dtype or
        a copy is asked for."""
        array = self._tensor("__array__")
        if dtype is not None and np.dtype(dtype) != array.dtype:
            return array.astype(dtype)
        return array.copy() if copy else array

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._tensor("__dlpack__").__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._tensor("__dlpack_device__").__dlpack_device__()

    @staticmethod
    def from_dlpack(data: Any, is_bool_tensor: bool | None = None) -> OrtValue:
        """An OrtValue over what a DLPack producer holds in host memory (an object with
        `__dlpack__`, such as a NumPy array, a torch CPU tensor or an OrtValue, or a DLPack
        capsule), without a copy. `is_bool_tensor` reads uint8 data as bool."""
        if not hasattr(data, "__dlpack__"):
            data = _Capsule(data)
        try:
            array = np.from_dlpack(data)
        except (TypeError, ValueError, BufferError, RuntimeError) as exc:
            raise InvalidArgument(f"OrtValue.from_dlpack: {exc} (plugnn takes host memory only)") from None
        if is_bool_tensor and array.dtype == np.uint8:
            array = array.view(np.bool_)
        return OrtValue(array)

    def to_dlpack(self) -> Any:
        """A DLPack capsule of the tensor (its memory, no copy)."""
        return self.__dlpack__()

    def _get_c_value(self) -> OrtValue:
        """onnxruntime's handle of the underlying value; in plugnn the OrtValue itself."""
        return self

    @property
    def _ortvalue(self) -> OrtValue:
        return self

    def __repr__(self) -> str:
        value = self._value
        if isinstance(value, np.ndarray):
            return f"<plugnn.OrtValue {self.data_type()} {list(value.shape)} on cpu>"
        return f"<plugnn.OrtValue {'empty optional' if value is None else self.data_type()}>"


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):  # DLPack's DLTensor, as dlpack.h lays it out
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("dtype", _DLDataType)]


def is_dlpack_uint8_tensor(capsule: Any) -> bool:
    """Whether a DLPack capsule ("dltensor") holds uint8 data, read without consuming it."""
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    name = get_name(capsule) if type(capsule).__name__ == "PyCapsule" else None
    if name != b"dltensor":
        raise InvalidArgument(f"is_dlpack_uint8_tensor takes an unused DLPack capsule, got {capsule!r}")
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    tensor = _DLTensor.from_address(get_pointer(capsule, name))  # DLManagedTensor starts with its DLTensor
    return tensor.dtype.code == 1 and tensor.dtype.bits == 8 and tensor.dtype.lanes == 1  # kDLUInt, 8 bits


class _Capsule:
    """A bare DLPack capsule as a producer NumPy takes (host memory: device (1, 0))."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


class OrtValueVector(list):  # type: ignore[type-arg]
    """onnxruntime's OrtValueVector: the OrtValues of a run, in output order (a list)."""

    def numpy(self) -> list[Any]:
        return [v.numpy() for v in self]


def as_ort_value(value: Any) -> OrtValue:
    """A run's output as an OrtValue (arrays kept, not copied)."""
    return value if isinstance(value, OrtValue) else OrtValue(value)
