"""meshjit.ir: the intermediate representation shared by the compiler and the tools."""

from .core import Attrs as Attrs
from .core import Block as Block
from .core import DenseAttr as DenseAttr
from .core import Func as Func
from .core import Module as Module
from .core import Op as Op
from .core import SymbolRef as SymbolRef
from .core import Value as Value
from .core import renumber as renumber
from .dtypes import DTYPES as DTYPES
from .graph import to_digraph as to_digraph
from .interpret import interpret as interpret
from .parser import ParseError as ParseError
from .parser import parse_module as parse_module
from .printer import print_module as print_module
from .shape_rules import ShapeError as ShapeError
from .shape_rules import infer_result_types as infer_result_types
from .sharding import AxisRef as AxisRef
from .sharding import DimSharding as DimSharding
from .sharding import MeshAttr as MeshAttr
from .sharding import TensorSharding as TensorSharding
from .stablehlo import parse_stablehlo as parse_stablehlo
from .types import TensorType as TensorType
from .verify import VerifyError as VerifyError
from .verify import verify as verify
