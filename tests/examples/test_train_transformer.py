"""examples/train_transformer.py: a small model trains step for step as a float64 numpy
implementation of the same model and optimizer does (numpy_transformer.py) and as JAX 0.10.2
does, its loss falls on the copy task, its training step sends exactly the collectives of the
textbook plan, and the script itself runs."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from example_loader import EXAMPLE, ROOT, TINY, load_example, tiny_flags

import numpy_transformer

DATA = Path(__file__).resolve().parent / "data"
STEPS = 50


@pytest.fixture(scope="module")
def example():
    return load_example()


@pytest.fixture(scope="module")
def run(example):
    """The tiny model's initial parameters (float64) and the losses of STEPS training steps."""
    import meshjit

    config = example.Config(**TINY)
    trainer = example.Trainer(config)
    params, opt_state = trainer.initial_state()
    initial = meshjit.tree.map(lambda leaf: np.asarray(leaf).astype(np.float64), params)
    losses = []
    for step in range(STEPS):
        params, opt_state, loss = trainer.step(params, opt_state, trainer.batch(step))
        losses.append(float(loss))
    return config, initial, losses


def test_twenty_steps_equal_a_float64_numpy_implementation(example, run):
    config, initial, losses = run
    expected = numpy_transformer.train(config, initial, [example.copy_batch(config, step) for step in range(20)])
    # float32 against float64: Adam's normalized steps amplify rounding to about 5e-5 by step 20
    np.testing.assert_allclose(losses[:20], expected, rtol=1e-4)
    np.testing.assert_allclose(losses[:5], expected[:5], rtol=1e-6)


def test_the_losses_equal_jax(run):
    """The same source under JAX 0.10.2 (data/make_jax_losses.py): the random streams are
    bit-equal, so only float32 rounding differs."""
    _, _, losses = run
    expected = json.loads((DATA / "jax_losses.json").read_text())
    assert expected["config"] == TINY
    np.testing.assert_allclose(losses[:len(expected["losses"])], expected["losses"], rtol=2e-5)


def test_the_loss_falls_on_the_copy_task(run):
    config, _, losses = run
    # without copying, no model does better than guessing among the vocab - 1 tokens
    guessing = math.log(config.vocab - 1)
    assert losses[0] > guessing - 0.1
    assert np.mean(losses[-10:]) < guessing - 1.0, losses


# The textbook plan on the ('data', 'model') = (2, 4) mesh, per device: a 'data' row holds
# b = 8 / 2 = 4 sequences of s = 8 tokens, d = 32; a 'model' device holds 96 / 4 = 24 vocabulary
# rows, one of the 4 heads (head dim 8) and 128 / 4 = 32 MLP units. A float32 all_reduce over n
# devices sends 2 (n - 1) / n of its buffer per device: x 1.5 over 'model', x 1 over 'data'.
ACTIVATIONS = 4 * 8 * 32 * 4 * 3 // 2            # f32[4, 8, 32] over 'model': 6144 bytes
ROWS = 4 * 8 * 4 * 3 // 2                        # f32[4, 8] over 'model': 192 bytes
TEXTBOOK = Counter({
    # forward: the embedding lookup's masked local rows summed over 'model' (Megatron's
    # vocab-parallel embedding), then per layer the heads' output projection and the MLP's
    # second matmul (row-parallel), both partial sums over 'model'
    ("all_reduce", ("model",), ACTIVATIONS): 1 + 2 * 2,
    # log-softmax over the vocabulary split on 'model': its max and its sum of exponentials;
    # backward: the sum over the vocabulary of its cotangent
    ("all_reduce", ("model",), ROWS): 3,
    # backward: the input gradient of the output projection (the tied embedding, contracted
    # over the vocabulary), then per layer the gradients into the MLP's and the attention's
    # first matmuls (column-parallel: summed over the devices' columns and heads)
    ("all_reduce", ("model",), ACTIVATIONS, "backward"): 1 + 2 * 2,
    # every gradient summed over 'data' once: embed f32[24, 32], position f32[8, 32], the final
    # layer norm's two f32[32]; per layer four layer-norm vectors and b2 f32[32], b1 f32[32],
    # w1 f32[32, 32], w2 f32[32, 32], wq/wk/wv f32[32, 1, 8] and wo f32[1, 8, 32]
    ("all_reduce", ("data",), 24 * 32 * 4): 1,
    ("all_reduce", ("data",), 8 * 32 * 4): 1,
    ("all_reduce", ("data",), 32 * 4): 2 + 2 * 6,
    ("all_reduce", ("data",), 32 * 32 * 4): 2 * 2,
    ("all_reduce", ("data",), 8 * 32 * 4, "layer"): 2 * 4,
    # the loss: its target-logit terms (partial over 'model') and its batch terms (partial over
    # 'data') summed once, as a scalar over all 8 devices: 2 * 7/8 * 4 bytes
    ("all_reduce", ("model", "data"), 7): 1,
})


def _plain(counter: Counter) -> Counter:
    """The same plan without the labels that keep equal entries apart above."""
    plain = Counter()
    for key, count in counter.items():
        plain[key[:3]] += count
    return plain


def test_the_step_sends_the_textbook_plan(example):
    config = example.Config(**TINY)
    trainer = example.Trainer(config)
    params, opt_state = trainer.initial_state()
    records = trainer.step.lower(params, opt_state, trainer.batch(0)).compile().collectives()
    found = Counter()
    for record in records:
        found[(record.kind, record.axes, record.bytes)] += record.trips
    assert found == _plain(TEXTBOOK)
    assert sum(record.total_bytes for record in records) == 92487
    # the example prints the same plan (derived in textbook_collectives) beside meshjit's
    sizes = dict(zip(("data", "model"), config.mesh_shape))
    printed = Counter()
    for kind, axes, shape, runs in example.textbook_collectives(config):
        printed[(kind, axes, example.ring_bytes(axes, shape, sizes))] += runs
    assert printed == found


def test_the_script_runs(tmp_path):
    losses = tmp_path / "losses.txt"
    result = subprocess.run([sys.executable, str(EXAMPLE), "--steps=3", f"--losses={losses}", *tiny_flags()],
                            capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "bytes per device per step" in result.stdout and "<- differs" not in result.stdout, result.stdout
    assert len(losses.read_text().split()) == 3


@pytest.fixture(scope="module")
def bfloat16_losses(example):
    """The losses of STEPS steps of the tiny model with ``--dtype bfloat16``."""
    return example.losses(example.Config(**TINY, dtype="bfloat16"), STEPS)


def test_bfloat16_training_follows_jax(bfloat16_losses):
    """JAX's bfloat16 run of the same source (data/make_jax_losses.py): the first five steps
    within 0.06% (JAX's own float32 and bfloat16 runs differ by up to 0.08% there), then two
    trajectories that drift apart as bfloat16 runs do, and both learn."""
    expected = json.loads((DATA / "jax_losses.json").read_text())["bfloat16_losses"]
    np.testing.assert_allclose(bfloat16_losses[:5], expected[:5], rtol=1e-3)


def test_bfloat16_training_learns_the_copy_task(bfloat16_losses):
    guessing = math.log(TINY["vocab"] - 1)
    assert bfloat16_losses[0] > guessing - 0.1
    assert np.mean(bfloat16_losses[-10:]) < guessing - 0.5, bfloat16_losses
