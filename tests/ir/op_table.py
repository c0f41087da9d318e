"""The one op table behind the ir tests: per op, its dtypes, cases (attributes and operand
shapes), an operand generator, an independent oracle (``op_oracles``), and malformed uses with
the errors they must raise. A new op gets reference, shape-rule and interpreter tests by adding
one record to its family's ``op_table_*`` file.
"""

from __future__ import annotations

from op_table_complex import COMPLEX_CAPABLE, COMPLEX_RECORDS, with_complex_cases
from op_table_elementwise import ELEMENTWISE_RECORDS
from op_table_indexing import INDEXING_RECORDS
from op_table_layout import CREATION_AND_SHAPE_RECORDS
from op_table_linalg import LINALG_RECORDS
from op_table_random import RANDOM_RECORDS
from op_table_reductions import CONTRACTION_RECORDS, REDUCTION_RECORDS
from op_table_spmd import SPMD_RECORDS
from op_table_windows import WINDOW_RECORDS

RECORDS = (
    [with_complex_cases(record) if record.name in COMPLEX_CAPABLE else record for record in ELEMENTWISE_RECORDS]
    + COMPLEX_RECORDS
    + CREATION_AND_SHAPE_RECORDS
    + CONTRACTION_RECORDS
    + REDUCTION_RECORDS
    + RANDOM_RECORDS
    + INDEXING_RECORDS
    + WINDOW_RECORDS
    + SPMD_RECORDS
    + LINALG_RECORDS
)
RECORDS_BY_NAME = {record.name: record for record in RECORDS}
