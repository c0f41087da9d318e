"""Python source for fused kernels over rows and columns (a Group with a split,
compiler/fusion_groups.py): an elementwise chain with its reductions in one pass over memory.

Trailing reductions (``rows`` kernels) run one row at a time: one loop over the row's columns
per reduction a later step needs (softmax: the max, then the sum of exp(x - max), then the
output), every loop after the first reading the row from cache, not memory. A value a later
loop needs again is recomputed when cheap, and kept in a row of scratch when it takes a
transcendental function or a division. Leading reductions (``columns`` kernels) walk the rows of
a block of columns and accumulate into the output in place. A float sum over a row writes its
terms to a row of scratch (or sums an input row where it is) and adds them with ``_lane_sum``
(codegen_lanes.py), in an order fixed by construction that numpy repeats on the first tier; every
other reduction runs in column order.
"""

from __future__ import annotations

from dataclasses import dataclass

from meshjit.ir import Op, Value
from meshjit.ir.dtypes import to_numpy

from .codegen_expressions import expression
from .codegen_lanes import LANES
from .fusion_groups import REDUCERS, Group
from ..tables import math_of

COLUMN_BLOCK = 1024
DECORATOR = '@numba.njit(cache=True, nogil=True, error_model="numpy")'
_ALIASES = ("broadcast_in_dim", "reshape", "expand_dims", "squeeze")


@dataclass
class KernelSource:
    """A generated entry point ``kernel(start, stop, rows, n, in0, map0, ..., out0, ...)``, or
    ``kernel(start, stop, slot, rows, n, ..., out0, ..., scratch_rows0, ...)`` when it keeps
    values in scratch (one row of each ``scratch_rows`` array per thread ``slot``)."""

    entry: str
    inputs: list[tuple[Value, str]]    # (value, "full" | "row" | "col" | "scalar")
    outputs: list[tuple[Value, str]]   # (value, "full" | "row" | "col")
    scratch: list[str]                 # dtype per scratch row


def _cast(value: Value) -> str:
    return "np." + to_numpy(value.type.dtype).name.replace("bool", "bool_")


def _identity(op: Op) -> str:
    dtype, cast = op.result.type.dtype, _cast(op.result)
    if dtype == "bool":
        return "True" if op.name == "reduce_and" else "False"
    if op.name in ("reduce_sum", "reduce_prod"):
        return f"{cast}({0 if op.name == 'reduce_sum' else 1})"
    if dtype in ("f32", "f64"):
        return f"{cast}({'-' if op.name == 'reduce_max' else ''}np.inf)"
    limits = f"np.iinfo({cast})"
    return f"{cast}({limits}.{'min' if op.name == 'reduce_max' else 'max'})"


def _update(op: Op, accumulator: str, value: str, *, reassociate: bool) -> str:
    """``accumulator`` combined with ``value`` (both source text)."""
    floating = op.result.type.dtype in ("f32", "f64")
    cast = _cast(op.result)
    if op.name in ("reduce_and", "reduce_or"):
        return f"{accumulator} {'&' if op.name == 'reduce_and' else '|'} {value}"
    if op.name in ("reduce_sum", "reduce_prod"):
        if floating and reassociate:
            return f"{'_add_reassoc' if op.name == 'reduce_sum' else '_mul_reassoc'}({accumulator}, {value})"
        return f"{cast}({accumulator} {'+' if op.name == 'reduce_sum' else '*'} {value})"
    if floating:
        return f"{'_maximum' if op.name == 'reduce_max' else '_minimum'}({accumulator}, {value})"
    return f"{cast}({'max' if op.name == 'reduce_max' else 'min'}({accumulator}, {value}))"


class _Kernel:
    """Names, levels and statements shared by the two kernel shapes."""

    def __init__(self, group: Group, outputs: list[Value]):
        self.group = group
        self.op_of = {op.result.id: op for op in group.ops}
        self.inputs = list(group.inputs.values())
        self.outputs = [(value, group.kind[value.id]) for value in outputs]
        # NOTE: locals are numbered within the kernel, never by global value ids, so the same
        # program traced again gives the same source and hits the on-disk cache
        self.local = {op.result.id: f"v{index}" for index, op in enumerate(group.ops)}
        self.reads: dict[int, str] = {}
        self.level: dict[int, str] = {}
        for index, (value, kind) in enumerate(self.inputs):
            self.reads[value.id] = f"row{index}[k]" if kind in ("full", "col") else f"x{index}"
            self.level[value.id] = "element" if kind in ("full", "col") else "row"
        for op in group.ops:
            levels = [self.level[self.source(operand).id] for operand in op.operands]
            element = op.name not in REDUCERS and "element" in levels
            self.level[op.result.id] = "element" if element else "row"

    def source(self, value: Value) -> Value:
        return self.group.aliases.get(value.id, value)

    def name(self, value: Value) -> str:
        value = self.source(value)
        return self.local[value.id] if value.id in self.op_of else self.reads[value.id]

    def statement(self, op: Op) -> str:
        args = [self.name(operand) for operand in op.operands]
        value = args[0] if op.name in _ALIASES else expression(op, args)
        return f"{self.local[op.result.id]} = {value}"

    def input_lines(self, kinds, position: str, columns: str = "") -> list[str]:
        """Views of the inputs of ``kinds`` at ``position`` (a row), their columns limited to
        ``columns`` (a slice, or all)."""
        lines = []
        for index, (_, kind) in enumerate(self.inputs):
            if kind not in kinds:
                continue
            block = f"in{index}[map{index}[lead]"
            suffix = {"full": f", {position}{', ' + columns if columns else ''}]", "row": f", {position}]",
                      "col": f"{', ' + columns if columns else ''}]", "scalar": ", 0]"}[kind]
            lines.append(f"{'row' if kind in ('full', 'col') else 'x'}{index} = {block}{suffix}")
        return lines

    def signature(self) -> str:
        names = ["start", "stop", "rows", "n"]
        for index in range(len(self.inputs)):
            names += [f"in{index}", f"map{index}"]
        return ", ".join(names + [f"out{index}" for index in range(len(self.outputs))])

    def element_ops(self, roots, stops=frozenset()) -> list[Op]:
        """The element-level ops computing ``roots`` (value ids), in program order, not going
        past the values in ``stops``."""
        needed: set[int] = set()
        pending = [root for root in roots if self.level.get(root) == "element"]
        while pending:
            value_id = pending.pop()
            if value_id in needed or value_id not in self.op_of or value_id in stops:
                continue
            needed.add(value_id)
            for operand in self.op_of[value_id].operands:
                source = self.source(operand).id
                if self.level[source] == "element":
                    pending.append(source)
        return [op for op in self.group.ops if op.result.id in needed]


class _RowsKernel(_Kernel):
    """Trailing reductions: one loop per step of the row's computation (module docstring)."""

    def __init__(self, group: Group, outputs: list[Value]):
        super().__init__(group, outputs)
        self.phase: dict[int, int] = {value.id: 0 for value, _ in self.inputs}
        self.loop_of: dict[int, int] = {}
        for op in group.ops:
            operand_phase = max((self.phase[self.source(operand).id] for operand in op.operands), default=0)
            if op.name in REDUCERS:
                self.loop_of[op.result.id] = operand_phase
                self.phase[op.result.id] = operand_phase + 1
            else:
                self.phase[op.result.id] = operand_phase
        self.reduction_loops = 1 + max(self.loop_of.values(), default=-1)
        self.full_outputs = [value for value, kind in self.outputs if kind == "full"]
        self.loops = self.reduction_loops + (1 if self.full_outputs else 0)
        self.stored = self._choose_scratch()
        # float sums over the row add in lanes (codegen_lanes): an input row summed where it is
        # (layer norm's mean), terms a loop of cheap ops computes into lane accumulators as it
        # goes (``lane_loops``: the variance), and terms of a loop with a transcendental function
        # from a row of scratch after it (_lane_sum), the one keeping them already (softmax's
        # exponentials) or one of their own; ``summed`` sums have a scratch row of their own
        self.summed: list[int] = []
        self.sum_rows: dict[int, str] = {}
        kept = {value: index for index, value in enumerate(self.stored)}
        rows_in = {value.id: f"row{index}" for index, (value, kind) in enumerate(self.inputs) if kind in ("full", "col")}
        closures = self._closures(self.stored)
        self.costly = {loop for loop, ops in enumerate(closures) if any(math_of(op.name).expensive for op in ops)}
        for op in group.ops:
            if op.name == "reduce_sum" and op.result.type.dtype in ("f32", "f64"):
                term = self.source(op.operands[0]).id
                if term in rows_in:
                    self.sum_rows[op.result.id] = rows_in[term]
                elif term in kept and self.loop_of[op.result.id] in self.costly:
                    self.sum_rows[op.result.id] = f"scratch{kept[term]}"
                else:
                    self.sum_rows[op.result.id] = f"sum{len(self.summed)}"
                    self.summed.append(op.result.id)

    def roots(self, loop: int) -> list[int]:
        if loop < self.reduction_loops:
            return [self.source(op.operands[0]).id for op in self.group.ops
                    if self.loop_of.get(op.result.id) == loop]
        return [value.id for value in self.full_outputs]

    def _closures(self, stored: dict[int, int]) -> list[list[Op]]:
        closures = []
        for loop in range(self.loops):
            stops = frozenset(value for value, where in stored.items() if where < loop)
            closures.append(self.element_ops(self.roots(loop), stops))
        return closures

    def _choose_scratch(self) -> dict[int, int]:
        """Expensive element values needed by two loops or more: value id -> the loop storing it."""
        stored: dict[int, int] = {}
        while True:
            loops_of: dict[int, list[int]] = {}
            for loop, ops in enumerate(self._closures(stored)):
                for op in ops:
                    loops_of.setdefault(op.result.id, []).append(loop)
            fresh = {value: loops[0] for value, loops in loops_of.items()
                     if len(loops) > 1 and value not in stored and math_of(self.op_of[value].name).expensive}
            if not fresh:
                break
            stored.update(fresh)
        read_later = set()
        for loop, ops in enumerate(self._closures(stored)):
            used = [self.source(operand).id for op in ops for operand in op.operands] + self.roots(loop)
            read_later |= {value for value in used if value in stored and stored[value] < loop}
        return {value: where for value, where in stored.items() if value in read_later}

    def loop_lines(self, loop: int) -> list[str]:
        scratch = {value: index for index, value in enumerate(self.stored)}
        stops = frozenset(value for value, where in self.stored.items() if where < loop)
        body = []
        loaded = set()
        for op in self.element_ops(self.roots(loop), stops):
            for operand in op.operands:
                source = self.source(operand).id
                if source in stops and source not in loaded:
                    body.append(f"{self.local[source]} = scratch{scratch[source]}[k]")
                    loaded.add(source)
            body.append(self.statement(op))
            if self.stored.get(op.result.id) == loop:
                body.append(f"scratch{scratch[op.result.id]}[k] = {self.local[op.result.id]}")
        for root in self.roots(loop):
            if root in stops and root not in loaded:
                body.append(f"{self.local[root]} = scratch{scratch[root]}[k]")
                loaded.add(root)
        if loop == self.reduction_loops:
            body += [f"target{index}[k] = {self.name(value)}" for index, (value, kind) in enumerate(self.outputs)
                     if kind == "full"]
            return ["for k in range(n):"] + ["    " + line for line in body]
        reductions = [op for op in self.group.ops if self.loop_of.get(op.result.id) == loop]
        computed = [op for op in reductions if op.result.id in self.sum_rows
                    and not self.sum_rows[op.result.id].startswith("row")]
        in_lanes = computed if loop not in self.costly else []
        for op in reductions:
            value = self.name(op.operands[0])
            if op.result.id in self.summed and op not in in_lanes:
                body.append(f"{self.sum_rows[op.result.id]}[k] = {value}")
            elif op.result.id not in self.sum_rows:
                target = f"acc{self.local[op.result.id]}"
                body.append(f"{target} = {_update(op, target, value, reassociate=False)}")
        heads = [f"acc{self.local[op.result.id]} = {_identity(op)}" for op in reductions
                 if op.result.id not in self.sum_rows]
        tails = [f"{self.local[op.result.id]} = "
                 + (f"_lane_sum({self.sum_rows[op.result.id]}, n)" if op.result.id in self.sum_rows
                    else f"acc{self.local[op.result.id]}") for op in reductions if op not in in_lanes]
        tails += [f"{self.local[op.result.id]} = _lane_sum({row}, head_{row} + n - whole)"
                  for op, row in ((op, self.sum_rows[op.result.id]) for op in in_lanes)]
        if in_lanes:
            return heads + self.lane_loops(in_lanes, body) + tails
        if computed and not heads:
            # NOTE: LLVM interleaves a vectorised loop (four vectors of terms in flight) only when
            # it has a reduction; a loop storing terms for _lane_sum has none, and its
            # exponentials ran 1.1-1.2x slower than the reassociated sum it replaced. A
            # reassociated sum of the terms, passed to an empty asm statement (_keep_alive) and
            # otherwise unused, is that reduction: it changes no value
            heads.append(f"hint{loop} = {_cast(computed[0].result)}(0)")
            body.append(f"hint{loop} = _add_reassoc(hint{loop}, {self.name(computed[0].operands[0])})")
            tails.append(f"_keep_alive(hint{loop})")
        # NOTE: a loop whose only reduction sums an input row in place has nothing to do per column
        loop = ["for k in range(n):"] + ["    " + line for line in body] if body else []
        return heads + loop + tails

    def lane_loops(self, sums: list[Op], body: list[str]) -> list[str]:
        """The column loop computing ``body`` with ``sums``' terms added into their lanes as it
        goes, in ``_lane_sum``'s order (codegen_lanes.py), where no row of terms is stored: whole
        blocks of columns, column j of a block into lane j mod L in ``[0, L)`` of the sum's
        scratch row, then the columns left over, their terms stored after the lanes (from 0 when
        there was no whole block), and ``_lane_sum`` of lanes and tail as one row adds the tail
        and folds as it would over the row of terms (a lane starts from +0, and +0 plus a lane
        is the lane)."""
        block = max(LANES[op.result.type.dtype] for op in sums)
        lines, adds, stores = [f"whole = n - n % {block}"], [], []
        for op in sums:
            row, lanes, cast, term = (self.sum_rows[op.result.id], LANES[op.result.type.dtype], _cast(op.result),
                                      self.name(op.operands[0]))
            lane = "j" if lanes == block else f"j & {lanes - 1}"
            lines += [f"head_{row} = {lanes} if whole else 0", f"for j in range(head_{row}):",
                      f"    {row}[j] = {cast}(0)"]
            adds.append(f"{row}[{lane}] = {cast}({row}[{lane}] + {term})")
            stores.append(f"{row}[k - np.uint64(whole - head_{row})] = {term}")
        lines += [f"for base in range(0, whole, {block}):", f"    for j in range({block}):", "        k = base + j"]
        lines += ["        " + line for line in body + adds]
        # NOTE: unsigned indices (k >= whole >= whole - head): no wraparound check, which would
        # stop LLVM vectorising the columns left over
        lines += ["for k in range(np.uint64(whole), np.uint64(n)):"] + ["    " + line for line in body + stores]
        return lines

    def row_ops(self, phase: int) -> list[str]:
        return [self.statement(op) for op in self.group.ops
                if self.level[op.result.id] == "row" and op.name not in REDUCERS and self.phase[op.result.id] == phase]

    def entry(self) -> str:
        # NOTE: scratch rows come from the caller, one per thread (``slot``): a kernel that
        # allocates needs Numba's runtime, which the cached object code does without
        lines = [f"scratch{index} = scratch_rows{index}[slot]" for index in range(len(self.stored))]
        lines += [f"sum{index} = scratch_rows{len(self.stored) + index}[slot]" for index in range(len(self.summed))]
        lines.append("for position in range(start, stop):")
        body = ["lead = position // rows", "row = position - lead * rows"]
        body += self.input_lines(("full", "row", "col", "scalar"), "row")
        body += [f"target{index} = out{index}[lead, row]" for index, (_, kind) in enumerate(self.outputs)
                 if kind == "full"]
        for loop in range(self.loops):
            body += self.row_ops(loop)
            body += self.loop_lines(loop)
        body += self.row_ops(self.reduction_loops) if self.loops == self.reduction_loops else []
        body += [f"out{index}[lead, row] = {self.name(value)}" for index, (value, kind) in enumerate(self.outputs)
                 if kind == "row"]
        lines += ["    " + line for line in body]
        signature = self.signature()
        if self.stored or self.summed:
            signature = signature.replace("start, stop, ", "start, stop, slot, ", 1)
            signature += "".join(f", scratch_rows{index}" for index in range(len(self.stored) + len(self.summed)))
        return f"{DECORATOR}\ndef kernel({signature}):\n" + "\n".join("    " + line for line in lines) + "\n"

    def scratch_dtypes(self) -> list[str]:
        return [self.op_of[value].result.type.dtype for value in list(self.stored) + self.summed]


class _ColumnsKernel(_Kernel):
    """Leading reductions: blocks of columns, accumulated row by row into the outputs."""

    def entry(self) -> str:
        reductions = [op for op in self.group.ops if op.name in REDUCERS]
        accumulators = {value.id: index for index, (value, kind) in enumerate(self.outputs) if kind == "col"}
        lines = ["position = start", "while position < stop:"]
        # NOTE: an index that may be negative gets Numba's wraparound check on every access, which
        # stops LLVM vectorising; so loops run over views from 0, or over unsigned indices
        segment = ["lead = position // n", "first = position - lead * n", "last = min(n, first + stop - position)",
                   "width = last - first"]
        segment += self.input_lines(("col", "scalar"), "row", "first:last")
        for op in reductions:
            segment += [f"acc{self.local[op.result.id]} = out{accumulators[op.result.id]}[lead, first:last]",
                        "for k in range(width):",
                        f"    acc{self.local[op.result.id]}[k] = {_identity(op)}"]
        per_row = self.input_lines(("full", "row"), "row", "first:last")
        per_row += [f"target{index} = out{index}[lead, row, first:last]"
                    for index, (_, kind) in enumerate(self.outputs) if kind == "full"]
        per_row += [self.statement(op) for op in self.group.ops
                    if self.level[op.result.id] == "row" and op.name not in REDUCERS]
        roots = [self.source(op.operands[0]).id for op in reductions]
        full_outputs = [(index, value) for index, (value, kind) in enumerate(self.outputs) if kind == "full"]
        roots += [value.id for _, value in full_outputs]
        body = [self.statement(op) for op in self.element_ops(roots)]
        for op in reductions:
            slot = f"acc{self.local[op.result.id]}[k]"
            body.append(f"{slot} = {_update(op, slot, self.name(op.operands[0]), reassociate=False)}")
        body += [f"target{index}[k] = {self.name(value)}" for index, value in full_outputs]
        per_row += [f"for k in range(np.uint64(block), np.uint64(min(width, block + {COLUMN_BLOCK}))):"]
        per_row += ["    " + line for line in body]
        segment += [f"for block in range(0, width, {COLUMN_BLOCK}):",
                    "    for row in range(rows):"] + ["        " + line for line in per_row]
        segment.append("position += width")
        lines += ["    " + line for line in segment]
        return f"{DECORATOR}\ndef kernel({self.signature()}):\n" + "\n".join("    " + line for line in lines) + "\n"


def row_kernel_source(group: Group, outputs: list[Value]) -> KernelSource:
    """The entry point for ``group`` writing ``outputs`` (leading-reduction groups also write
    every reduction result)."""
    kernel = (_ColumnsKernel if group.leading else _RowsKernel)(group, outputs)
    scratch = kernel.scratch_dtypes() if isinstance(kernel, _RowsKernel) else []
    return KernelSource(kernel.entry(), kernel.inputs, kernel.outputs, scratch)
