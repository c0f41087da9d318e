"""jax.random.generalized_normal and ball against JAX 0.10.2's values (key 0, float32 words):
generalized_normal within one rounding (bit for bit on the machine the table was made on: gamma
and rademacher are exact, the power may be numpy's, whose last bit depends on the CPU's vector
code); ball within one rounding (XLA fuses its final normalisation)."""

import numpy as np
import pytest

import meshjit as jax
from meshjit.sharding import NamedSharding, PartitionSpec as P

pytestmark = pytest.mark.usefixtures("restore_runtime_state")

GENERALIZED_NORMAL = {(2.0, (3,)): [1064586100, 1035509938, 3214116479], (0.5, (2, 3)): [[1075627039, 1056289789, 3234549277], [1083184852, 1110513898, 1072792749]], (1.0, (5,)): [1058695904, 1041406909, 3214950823, 1064824371, 1057561177], (4.0, ()): 1063319092}
BALL = [((3,), (3,), [1063963387, 1053365632, 1010757204]), ((2, 1.0), (2,), [1059213133, 1052286665]), ((4, 3.0, (2,)), (2, 4), [[1064715890, 1054857278, 1034165479, 3196802488], [1034288245, 3165421206, 3212773622, 1023698508]])]
JITTED_BALL = [[1063963387, 1053365632, 1010757204], [3210510956, 1050819055, 3179330138], [3209994348, 1017897360, 1048827080], [3191277249, 1060479371, 1054094166]]


@pytest.mark.parametrize("p, shape", sorted(GENERALIZED_NORMAL))
def test_generalized_normal_equals_jax_within_a_rounding(p, shape):
    values = np.asarray(jax.random.generalized_normal(jax.random.key(0), p, shape))
    assert values.dtype == np.float32 and values.shape == shape
    np.testing.assert_array_max_ulp(values, _words(GENERALIZED_NORMAL[(p, shape)]), maxulp=1)


def _words(values):
    return np.asarray(values, np.uint32).view(np.float32)


@pytest.mark.parametrize("args, shape, words", BALL)
def test_ball_equals_jax_within_a_rounding(args, shape, words):
    values = np.asarray(jax.random.ball(jax.random.key(0), *args))
    assert values.shape == shape and values.dtype == np.float32
    np.testing.assert_array_max_ulp(values, _words(words), maxulp=1)
    assert np.all(np.sum(np.abs(values) ** (args[1] if len(args) > 1 else 2), axis=-1) <= 1.0)


def test_ball_under_jit_and_sharded():
    key = jax.random.key(0)
    np.testing.assert_array_max_ulp(np.asarray(jax.jit(lambda k: jax.random.ball(k, 3, shape=(4,)))(key)),
                                    _words(JITTED_BALL), maxulp=1)
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    sharded = jax.random.ball(key, 2, shape=(8,), out_sharding=NamedSharding(mesh, P("x")))
    assert sharded.sharding.spec == P("x", None)
    np.testing.assert_array_equal(np.asarray(sharded), np.asarray(jax.random.ball(key, 2, shape=(8,))))
