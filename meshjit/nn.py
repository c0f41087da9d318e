"""meshjit.nn: jax.nn's activations, softmax family and one_hot."""

from meshjit.compiler.frontend.nn import gelu as gelu
from meshjit.compiler.frontend.nn import leaky_relu as leaky_relu
from meshjit.compiler.frontend.nn import log_sigmoid as log_sigmoid
from meshjit.compiler.frontend.nn import log_softmax as log_softmax
from meshjit.compiler.frontend.nn import logsumexp as logsumexp
from meshjit.compiler.frontend.nn import one_hot as one_hot
from meshjit.compiler.frontend.nn import relu as relu
from meshjit.compiler.frontend.nn import relu6 as relu6
from meshjit.compiler.frontend.nn import sigmoid as sigmoid
from meshjit.compiler.frontend.nn import silu as silu
from meshjit.compiler.frontend.nn import softmax as softmax
from meshjit.compiler.frontend.nn import softplus as softplus
from meshjit.compiler.frontend.nn import swish as swish
