"""Fused kernels as machine code that a process loads without Numba.

Numba compiles a kernel once (the first call with each argument signature) into a C-callable
entry point, whose object code is written next to the kernel's source in the cache directory;
every later process links that object with llvmlite's MCJIT and calls it through ctypes
(releasing the GIL), so it neither imports Numba nor builds Numba's typing tables (about
0.45-0.6 s on the 2-core machine, docs/execution.md "Start-up"). The object's calls resolve to
the process's own symbols (libc, libm), and Numba's error-reporting helpers, which these kernels
never reach (no bounds checks, no allocation, ``error_model="numpy"``), to a stub that aborts; a
kernel whose object needs anything else keeps running through Numba. With NUMBA_DISABLE_JIT the
kernel is the plain Python function.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import struct
import sys
import threading
import types

import numpy as np

# NOTE: only reached when a kernel raises, which fused kernels cannot (module docstring)
_ERROR_PATH_SYMBOLS = {
    "numba_gil_ensure", "numba_gil_release", "numba_do_raise", "numba_runtime_build_excinfo_struct",
    "numba_unpickle", "NRT_MemInfo_call_dtor", "NRT_Free", "PyErr_Clear", "PyErr_SetNone",
    "PyErr_SetString", "PyErr_WriteUnraisable", "PyExc_RuntimeError", "PyExc_StopIteration",
    "PyExc_SystemError", "PyUnicode_FromString", "PyBytes_FromStringAndSize", "Py_DecRef",
}
_CTYPES = {"i": ctypes.c_int64, "p": ctypes.c_void_p}
_INLINED_MAX_ARGUMENTS = 30
# NOTE: a kernel with more C arguments than ctypes can pass (a wide fused group: every array is a
# pointer and its shape) runs through Numba's own dispatcher instead
_MOST_C_ARGUMENTS = 1024


@ctypes.CFUNCTYPE(None)
def _UNREACHABLE():
    # what the error-path helpers resolve to without Numba: a kernel never calls them
    sys.stderr.write("meshjit: a cached fused kernel reached Numba's error path\n")
    os.abort()


def undefined_symbols(elf: bytes) -> set[str]:
    """The names an ELF64 object file refers to but does not define."""
    section_offset, = struct.unpack_from("<Q", elf, 0x28)
    entry_size, count = struct.unpack_from("<HH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, section_offset + index * entry_size) for index in range(count)]
    names = set()
    for _, kind, _, _, offset, size, link, _, _, symbol_size in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        strings = sections[link][4]
        for position in range(offset, offset + size, symbol_size):
            name_offset, _, _, section_index = struct.unpack_from("<IBBH", elf, position)
            if section_index == 0 and name_offset:
                end = elf.index(b"\0", strings + name_offset)
                names.add(elf[strings + name_offset:end].decode())
    return names


class _Linker:
    """One MCJIT engine for the process; objects are added to it as kernels are first called."""

    def __init__(self):
        self.engine = None
        self.machine_key = None
        self.lock = threading.Lock()
        self.linked: dict[str, int] = {}  # symbol -> address: an object is linked once per process

    def start(self):
        if self.engine is None:
            import llvmlite.binding as llvm
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            from llvmlite.binding import ffi
            with ffi.OutputString() as error:  # the process's own symbols (libc's memset) resolve
                ffi.lib.LLVMPY_LoadLibraryPermanently(None, error)
            for name in _ERROR_PATH_SYMBOLS:
                if not llvm.address_of_symbol(name):  # Numba's helpers, when Numba is not loaded
                    llvm.add_symbol(name, ctypes.cast(_UNREACHABLE, ctypes.c_void_p).value)
            cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
            machine = llvm.Target.from_default_triple().create_target_machine(
                cpu=cpu, features=features, codemodel="jitdefault", reloc="static")
            self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
            self.llvm = llvm
            self.machine_key = f"{cpu} {features} numba {importlib.metadata.version('numba')}"
        return self.engine

    def key(self) -> str:
        with self.lock:
            self.start()
            return self.machine_key

    def link(self, elf: bytes, symbol: str) -> int | None:
        """The address of ``symbol`` once ``elf`` is linked into the process; None (and nothing
        linked) when the object needs a symbol the process does not have, which LLVM would
        otherwise end the process over."""
        with self.lock:
            if symbol in self.linked:
                return self.linked[symbol]
            engine = self.start()
            if not all(self.llvm.address_of_symbol(name) for name in undefined_symbols(elf)):
                return None
            engine.add_object_file(self.llvm.ObjectFileRef.from_data(elf))
            engine.finalize_object()
            address = self.linked[symbol] = engine.get_function_address(symbol)
            return address


_LINKER = _Linker()
# NOTE: set by compile_service.py: ``compile_elsewhere(kernel, signature, stem)`` waits for a
# compile worker to write the object and says whether it did (False: compile here)
compile_elsewhere = None


def _signature(arguments) -> tuple:
    """Per argument: ("i",) for an int, ("a", dtype, ndim) for an array."""
    kinds = []
    for value in arguments:
        if isinstance(value, np.ndarray):
            kinds.append(("a", value.dtype.str, value.ndim))
        else:
            kinds.append(("i",))
    return tuple(kinds)


def _wrapper_source(signature, entry: str) -> str:
    """A Numba cfunc taking each array as (pointer, dims...) and calling ``entry``."""
    types, parameters, arguments = [], [], []
    for index, kind in enumerate(signature):
        if kind[0] == "i":
            types.append("numba.types.int64")
            parameters.append(f"x{index}")
            arguments.append(f"x{index}")
            continue
        dtype = "numba.from_dtype(np.dtype(" + repr(kind[1]) + "))"
        dims = [f"d{index}_{dim}" for dim in range(kind[2])]
        types += [f"numba.types.CPointer({dtype})"] + ["numba.types.int64"] * kind[2]
        parameters += [f"p{index}"] + dims
        arguments.append(f"numba.carray(p{index}, ({', '.join(dims)}{',' if len(dims) == 1 else ''}))")
    return (f"@numba.cfunc(numba.types.void({', '.join(types)}), nopython=True, nogil=True, error_model='numpy')\n"
            f"def c_entry({', '.join(parameters)}):\n"
            f"    {entry}({', '.join(arguments)})\n")


_HELPERS: dict[str, dict] = {}  # sha256 of a kernel file's helper source -> its namespace
_HELPERS_LOCK = threading.Lock()


def split_source(source: str, entry: str) -> tuple[str, str]:
    """A kernel file's (helpers, entry point): the text before the entry's decorators, and the
    rest."""
    at = source.find(f"\ndef {entry}(")
    if at < 0:
        return "", source
    start = at + 1
    while start > 0:
        previous = source.rfind("\n", 0, start - 1) + 1
        if not source.startswith("@", previous):
            break
        start = previous
    return source[:start], source[start:]


def shared_helpers(source: str) -> dict:
    """The namespace of helper source ``source`` (the kernels' prelude), executed once per process,
    so every kernel with that prelude calls the same Numba functions: a helper is typed, lowered
    and optimised once per process and argument types instead of once per kernel (Numba links
    its LLVM module into each caller, which inlines it exactly as when compiled afresh). Numba's
    disk cache is off for them: a helper loaded from it would be object code, which a caller
    cannot link into the object it writes."""
    key = hashlib.sha256(source.encode()).hexdigest()
    with _HELPERS_LOCK:
        namespace = _HELPERS.get(key)
        if namespace is None:
            module = types.ModuleType(f"meshjit_kernels.helpers_{key[:20]}")
            sys.modules[module.__name__] = module
            namespace = module.__dict__
            uncached = source.replace("cache=True", "cache=False")
            exec(compile(uncached, f"<meshjit kernel helpers {key[:20]}>", "exec"), namespace)
            _HELPERS[key] = namespace
        return {name: value for name, value in namespace.items() if not name.startswith("__")}


class ObjectKernel:
    """``kernel(*arguments)`` for ints and C-contiguous arrays, by the cached object code."""

    def __init__(self, path: str, digest: str, entry: str, object_digest: str | None = None):
        self.path, self.digest, self.entry = path, digest, entry
        # NOTE: objects are named by the entry and the helpers it reaches (kernel_digest.py)
        self.object_digest = object_digest or digest
        self.module = None
        self.functions: dict[tuple, object] = {}
        self.lock = threading.Lock()

    def python_module(self):
        """The kernel's source as a module (imports Numba, unless NUMBA_DISABLE_JIT): its helpers
        are the process's shared ones for the same helper source (``shared_helpers``), its entry
        point is compiled from the kernel's file."""
        if self.module is None:
            name = f"meshjit_kernels.fused_{self.digest}"
            with open(self.path) as handle:
                helpers, entry = split_source(handle.read(), self.entry)
            module = types.ModuleType(name)
            module.__file__ = self.path
            module.__dict__.update(shared_helpers(helpers))
            sys.modules[name] = module
            # NOTE: the entry keeps its line numbers in the file (Numba's cache and error locations)
            exec(compile("\n" * helpers.count("\n") + entry, self.path, "exec"), module.__dict__)
            self.module = module
        return self.module

    @property
    def numba_function(self):
        """The Numba dispatcher of the entry point (for inspecting its assembly)."""
        return getattr(self.python_module(), self.entry)

    def __call__(self, *arguments):
        return self.resolve(arguments)(*arguments)

    def resolve(self, arguments):
        """The function that runs arguments of these kinds: a ctypes caller whose ``native``
        takes each array as its address and dims (launch.py calls that directly), or Numba's."""
        signature = _signature(arguments)
        function = self.functions.get(signature)
        if function is None:
            with self.lock:
                function = self.functions.get(signature) or self._load(signature)
                self.functions[signature] = function
        return function

    def stem(self, signature) -> str:
        """The path, but for its suffix, of the object for arguments of these kinds."""
        directory = os.path.dirname(self.path)
        key = hashlib.sha256(repr((signature, _LINKER.key())).encode()).hexdigest()[:16]
        return os.path.join(directory, f"object_{self.object_digest}-{key}")

    def request(self, signature) -> dict:
        """What a compile worker (compile_worker.py) needs to make that object."""
        return {"path": self.path, "digest": self.digest, "entry": self.entry,
                "signature": [list(kind) for kind in signature], "stem": self.stem(signature)}

    def _load(self, signature):
        if os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):
            return self.numba_function
        stem = self.stem(signature)
        if not os.path.exists(stem + ".json") and not (compile_elsewhere and compile_elsewhere(self, signature, stem)):
            try:
                self._compile(signature, stem)
            except OSError:  # a cache directory we may not write: Numba runs the kernel
                return self.numba_function
        with open(stem + ".json") as handle:
            record = json.load(handle)
        with open(stem + ".o", "rb") as handle:
            address = _LINKER.link(handle.read(), record["symbol"])
        if not address:
            return self.numba_function  # the object calls something this process lacks
        kinds = [part for kind in signature for part in (["i"] if kind[0] == "i" else ["p"] + ["i"] * kind[2])]
        if len(kinds) > _MOST_C_ARGUMENTS:
            return self.numba_function  # NOTE: ctypes calls take at most 1024 arguments
        native = ctypes.CFUNCTYPE(None, *(_CTYPES[kind] for kind in kinds))(address)
        return _caller(native)

    def _compile(self, signature, stem: str, namespace: dict | None = None) -> None:
        """Numba compiles the entry for ``signature``, wrapped as a C function, into ``stem``'s
        object; the entry is looked up in ``namespace`` (default: the kernel's module)."""
        import numba
        namespace = dict(vars(self.python_module()) if namespace is None else namespace)
        # NOTE: the entry is inlined into the wrapper (Numba's IR), so it is typed, lowered and
        # optimised once, inside the wrapper, instead of compiled as a function of its own that
        # the wrapper's module links and LLVM optimises again: 25-40% less compile time. Python
        # passes more than 30 arguments as one tuple (CPython's stack-use guideline), which
        # Numba's inliner cannot take apart, so a larger entry is called as before.
        entry, called = namespace[self.entry], self.entry
        if len(signature) <= _INLINED_MAX_ARGUMENTS and hasattr(entry, "py_func"):
            namespace["_inlined_entry"] = numba.njit(inline="always", nogil=True, error_model="numpy")(entry.py_func)
            called = "_inlined_entry"
        try:
            exec(compile(_wrapper_source(signature, called), self.path + ":c_entry", "exec"), namespace)
        except numba.core.errors.UnsupportedError:
            if called == self.entry:
                raise
            exec(compile(_wrapper_source(signature, self.entry), self.path + ":c_entry", "exec"), namespace)
        wrapper = namespace["c_entry"]
        library = wrapper._library
        _write(stem + ".o", library._codegen._tm.emit_object(library._final_module))
        _write(stem + ".json", json.dumps({"symbol": wrapper.native_name}).encode())


def _caller(native):
    def call(*arguments):
        flat = []
        for value in arguments:
            if isinstance(value, np.ndarray):
                if not value.flags.c_contiguous:
                    raise ValueError("fused kernels take C-contiguous arrays")
                flat.append(value.ctypes.data)
                flat.extend(value.shape)
            else:
                flat.append(value)
        native(*flat)
    call.native = native
    return call


def _write(path: str, data: bytes) -> None:
    temporary = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)  # atomic: concurrent processes never see half a file
