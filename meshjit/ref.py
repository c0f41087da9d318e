"""``jax.ref``: mutable array references (compiler/frontend/refs.py), readable and writable with
``ref[idx]`` and ``ref[idx] = value`` at the top level and inside jit, grad and scan."""

from meshjit.compiler.frontend.refs import Ref as Ref
from meshjit.compiler.frontend.refs import addupdate as addupdate
from meshjit.compiler.frontend.refs import freeze as freeze
from meshjit.compiler.frontend.refs import get as get
from meshjit.compiler.frontend.refs import new_ref as new_ref
from meshjit.compiler.frontend.refs import set as set  # noqa: A004 - jax.ref.set's name
from meshjit.compiler.frontend.refs import swap as swap
