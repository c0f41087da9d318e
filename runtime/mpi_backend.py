"""Joining an MPI job (``meshjit.distributed.initialize``), the communicators meshjit uses, and
aborting every process when one fails.

mpi4py is imported only here and only when a job is joined, so single-process use never loads
MPI. meshjit talks on a duplicate of MPI_COMM_WORLD, so a program's own MPI messages never mix
with meshjit's.
"""

from __future__ import annotations

import sys
import time

from meshjit.ir.config import config

from . import mpi_deadline
from .devices import CpuDevice, backend

_state: dict = {"world": None, "communicators": {}}
_ABORT_GRACE_SECONDS = 0.5


def mpi():
    """The mpi4py ``MPI`` module, with a clear error when the ``mpi`` extra is not installed."""
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise ImportError(
            "meshjit's multi-process runtime needs mpi4py and an MPI library; install them with "
            "`pip install 'meshjit[mpi]'` (mpi4py and MPICH from PyPI)"
        ) from error
    return MPI


def is_initialized() -> bool:
    return _state["world"] is not None


def world():
    """meshjit's communicator over every process of the job."""
    if _state["world"] is None:
        raise RuntimeError(
            "this needs a multi-process job: call meshjit.distributed.initialize() first (and run "
            "the program under mpiexec)"
        )
    return _state["world"]


def initialize(coordinator_address=None, num_processes=None, process_id=None, local_device_ids=None,
               *, initialization_timeout: float = 300) -> None:
    """Join the MPI job this process was started in (``mpiexec -n P python program.py``).

    Each process owns ``num_cpu_devices`` (``MESHJIT_NUM_DEVICES``) devices; device ids are
    global and process-major. ``coordinator_address`` is accepted for JAX compatibility and
    ignored (mpiexec connects the processes); ``num_processes`` and ``process_id``, when given,
    must agree with MPI's.
    """
    if is_initialized():
        raise RuntimeError("meshjit.distributed.initialize should only be called once.")
    if backend._devices is not None:
        raise RuntimeError(
            "meshjit.distributed.initialize() must be called before any meshjit devices are used "
            "(devices(), device_put, Mesh, jit ...)"
        )
    if local_device_ids is not None:
        raise ValueError("initialize: local_device_ids is not supported; set MESHJIT_NUM_DEVICES per process")
    MPI = mpi()
    communicator = MPI.COMM_WORLD.Dup()
    rank, size = communicator.Get_rank(), communicator.Get_size()
    _check_given(num_processes, size, "num_processes")
    _check_given(process_id, rank, "process_id")
    _state["world"] = communicator
    _install_abort_hook(rank, size)
    count = config.read("num_cpu_devices")
    config.lock("num_cpu_devices", "the devices were created")
    counts = mpi_deadline.allgather_objects(communicator, count, "initialize: device counts",
                                            timeout=initialization_timeout)
    first_ids = [sum(counts[:process]) for process in range(size)]
    devices = [CpuDevice(first_ids[process] + local, process)
               for process in range(size) for local in range(counts[process])]
    backend.install(devices, rank, size)


def _check_given(value, actual: int, argument: str) -> None:
    if value is not None and value != actual:
        raise ValueError(f"initialize: {argument}={value} but MPI says this job has {argument} {actual}")


def _install_abort_hook(rank: int, size: int) -> None:
    """An uncaught exception on one process prints its traceback and aborts every process, so
    the others never wait forever in a collective the failed one will not reach."""
    previous = sys.excepthook

    def abort_on_exception(kind, error, traceback) -> None:
        print(f"meshjit: process {rank} of {size} failed with {kind.__name__}; aborting the MPI job",
              file=sys.stderr)
        previous(kind, error, traceback)
        sys.stdout.flush()
        sys.stderr.flush()
        # NOTE: give mpiexec a moment to forward the output before the abort tears the job down
        time.sleep(_ABORT_GRACE_SECONDS)
        mpi().COMM_WORLD.Abort(1)

    sys.excepthook = abort_on_exception


def group_communicator(processes: tuple[int, ...]):
    """A communicator over ``processes`` (world ranks; its ranks follow that order), created on
    first use by exactly those processes and kept for the rest of the job."""
    communicator = _state["communicators"].get(processes)
    if communicator is None:
        parent = world()
        group = parent.Get_group().Incl(list(processes))
        # NOTE: Create_group is collective over the group's processes only, so meshes that
        # leave some processes out (or process-local meshes) never wait on the others.
        communicator = parent.Create_group(group)
        group.Free()
        _state["communicators"][processes] = communicator
    return communicator
