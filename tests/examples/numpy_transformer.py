"""The model and optimizer of examples/train_transformer.py in float64 numpy, written without it:
the forward pass, its gradient by hand (backpropagation op by op), AdamW, and the dropout masks
from a numpy threefry2x32 with JAX's key derivation (partitionable counters), so a training run
can be compared step for step with meshjit's float32 one."""

from __future__ import annotations

import math

import numpy as np

MASK32 = np.uint64(0xFFFFFFFF)


# -- random bits: threefry2x32 (Salmon et al., 20 rounds) and JAX's use of it ---------------------
def _rotate_left(value, distance: int):
    return (value << np.uint32(distance)) | (value >> np.uint32(32 - distance))


def threefry2x32(key, first, second):
    """The block cipher on counter words ``first`` and ``second`` (uint32 arrays)."""
    rotations = ((13, 15, 26, 6), (17, 29, 16, 24))
    schedule = (np.uint32(key[0]), np.uint32(key[1]), np.uint32(key[0]) ^ np.uint32(key[1]) ^ np.uint32(0x1BD11BDA))
    with np.errstate(over="ignore"):
        x0 = first.astype(np.uint32) + schedule[0]
        x1 = second.astype(np.uint32) + schedule[1]
        for block in range(5):
            for distance in rotations[block % 2]:
                x0 = x0 + x1
                x1 = _rotate_left(x1, distance) ^ x0
            x0 = x0 + schedule[(block + 1) % 3]
            x1 = x1 + schedule[(block + 2) % 3] + np.uint32(block + 1)
    return x0, x1


def key(seed: int):
    return (np.uint32(seed >> 32), np.uint32(seed & 0xFFFFFFFF))


def fold_in(parent, data: int):
    words = threefry2x32(parent, np.zeros(1, np.uint32), np.array([data], np.uint32))
    return (words[0][0], words[1][0])


def split(parent, count: int):
    """Key ``i`` hashes the counter ``i`` (high word, low word)."""
    index = np.arange(count, dtype=np.uint64)
    words = threefry2x32(parent, (index >> np.uint64(32)).astype(np.uint32), (index & MASK32).astype(np.uint32))
    return [(words[0][i], words[1][i]) for i in range(count)]


def bernoulli(parent, probability: float, shape):
    """uniform(key, shape) < p in float32: 23 random mantissa bits under 1.0's exponent, minus one."""
    index = np.arange(math.prod(shape), dtype=np.uint64)
    high, low = threefry2x32(parent, (index >> np.uint64(32)).astype(np.uint32), (index & MASK32).astype(np.uint32))
    bits = (high ^ low) >> np.uint32(9) | np.uint32(0x3F800000)
    uniform = bits.view(np.float32) - np.float32(1.0)
    return (uniform < np.float32(probability)).reshape(shape)


# -- the model's pieces, each with its backward --------------------------------------------------
def layer_norm(x, scale, bias):
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    inverse = 1.0 / np.sqrt((centred ** 2).mean(-1, keepdims=True) + 1e-5)
    normalized = centred * inverse
    return normalized * scale + bias, (normalized, inverse, scale)


def layer_norm_backward(grad, saved):
    normalized, inverse, scale = saved
    dnormalized = grad * scale
    dx = inverse * (dnormalized - dnormalized.mean(-1, keepdims=True)
                    - normalized * (dnormalized * normalized).mean(-1, keepdims=True))
    return dx, (grad * normalized).sum((0, 1)), grad.sum((0, 1))


GELU_C = math.sqrt(2 / math.pi)


def gelu(x):
    return 0.5 * x * (1 + np.tanh(GELU_C * (x + 0.044715 * x ** 3)))


def gelu_derivative(x):
    t = np.tanh(GELU_C * (x + 0.044715 * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_C * (1 + 3 * 0.044715 * x * x)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


class Model:
    """Forward and backward of the transformer for one batch; parameters are a dict of float64
    arrays named as the example's (layer weights stacked on a leading layer dim)."""

    def __init__(self, config):
        self.config = config

    def dropout_masks(self, step: int):
        """Per layer (attention mask, MLP mask): keep-masks of the step's dropout."""
        config = self.config
        step_key = fold_in(key(config.seed + 1), step)
        shape = (config.batch, config.seq, config.d_model)
        masks = []
        for layer_key in split(step_key, config.layers):
            attention_key, mlp_key = split(layer_key, 2)
            keep = 1.0 - config.dropout
            masks.append((bernoulli(attention_key, keep, shape), bernoulli(mlp_key, keep, shape)))
        return masks

    def loss_and_gradients(self, params, tokens, step: int):
        config = self.config
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        keep = 1.0 - config.dropout
        masks = self.dropout_masks(step)
        h = params["embed"][inputs] + params["position"]
        saved = []
        for index in range(config.layers):
            layer = {name: value[index] for name, value in params["layers"].items()}
            h, record = self._block(h, layer, masks[index], keep)
            saved.append(record)
        final, final_saved = layer_norm(h, params["final_scale"], params["final_bias"])
        logits = final @ params["embed"].T
        log_probs = logits - logits.max(-1, keepdims=True)
        log_probs = log_probs - np.log(np.exp(log_probs).sum(-1, keepdims=True))
        copied = (np.arange(targets.shape[1]) >= targets.shape[1] // 2).astype(np.float64)
        count = targets.shape[0] * copied.sum()
        picked = np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]
        loss = -(picked * copied).sum() / count

        grads = {"layers": {name: np.zeros_like(value) for name, value in params["layers"].items()}}
        dlogits = np.exp(log_probs)
        np.put_along_axis(dlogits, targets[..., None], np.take_along_axis(dlogits, targets[..., None], -1) - 1, -1)
        dlogits *= copied[None, :, None] / count
        grads["embed"] = np.einsum("bsv,bsd->vd", dlogits, final)
        dh, grads["final_scale"], grads["final_bias"] = layer_norm_backward(dlogits @ params["embed"], final_saved)
        for index in reversed(range(config.layers)):
            layer = {name: value[index] for name, value in params["layers"].items()}
            dh, layer_grads = self._block_backward(dh, layer, saved[index], masks[index], keep)
            for name, value in layer_grads.items():
                grads["layers"][name][index] = value
        np.add.at(grads["embed"], inputs, dh)
        grads["position"] = dh.sum(0)
        return loss, grads

    def _block(self, h, layer, masks, keep):
        attention_mask, mlp_mask = masks
        x, ln1 = layer_norm(h, layer["ln1_scale"], layer["ln1_bias"])
        q, k, v = (np.einsum("bsd,dhk->bshk", x, layer[name]) for name in ("wq", "wk", "wv"))
        seq = h.shape[1]
        scores = np.einsum("bshk,bthk->bhst", q, k) / math.sqrt(q.shape[-1])
        scores = np.where(np.tril(np.ones((seq, seq), bool)), scores, -1e9)
        probs = softmax(scores)
        out = np.einsum("bhst,bthk->bshk", probs, v)
        attention = np.einsum("bshk,hkd->bsd", out, layer["wo"])
        h = h + np.where(attention_mask, attention / keep, 0.0)
        y, ln2 = layer_norm(h, layer["ln2_scale"], layer["ln2_bias"])
        pre = y @ layer["w1"] + layer["b1"]
        hidden = gelu(pre)
        mlp = hidden @ layer["w2"] + layer["b2"]
        h = h + np.where(mlp_mask, mlp / keep, 0.0)
        return h, (x, ln1, q, k, v, probs, out, y, ln2, pre, hidden)

    def _block_backward(self, dh, layer, saved, masks, keep):
        attention_mask, mlp_mask = masks
        x, ln1, q, k, v, probs, out, y, ln2, pre, hidden = saved
        grads = {}
        dmlp = np.where(mlp_mask, dh / keep, 0.0)
        grads["b2"] = dmlp.sum((0, 1))
        grads["w2"] = np.einsum("bsf,bsd->fd", hidden, dmlp)
        dpre = (dmlp @ layer["w2"].T) * gelu_derivative(pre)
        grads["b1"] = dpre.sum((0, 1))
        grads["w1"] = np.einsum("bsd,bsf->df", y, dpre)
        dy, grads["ln2_scale"], grads["ln2_bias"] = layer_norm_backward(dpre @ layer["w1"].T, ln2)
        dh = dh + dy
        dattention = np.where(attention_mask, dh / keep, 0.0)
        grads["wo"] = np.einsum("bshk,bsd->hkd", out, dattention)
        dout = np.einsum("bsd,hkd->bshk", dattention, layer["wo"])
        dprobs = np.einsum("bshk,bthk->bhst", dout, v)
        dv = np.einsum("bhst,bshk->bthk", probs, dout)
        dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdims=True)) / math.sqrt(q.shape[-1])
        dq = np.einsum("bhst,bthk->bshk", dscores, k)
        dk = np.einsum("bhst,bshk->bthk", dscores, q)
        dx = 0.0
        for name, gradient in (("wq", dq), ("wk", dk), ("wv", dv)):
            grads[name] = np.einsum("bsd,bshk->dhk", x, gradient)
            dx = dx + np.einsum("bshk,dhk->bsd", gradient, layer[name])
        dx, grads["ln1_scale"], grads["ln1_bias"] = layer_norm_backward(dx, ln1)
        return dh + dx, grads


DECAYED = {"embed", "position", "wq", "wk", "wv", "wo", "w1", "w2"}


def adamw(params, grads, state, config):
    """One AdamW step on nested dicts of arrays; ``state`` is (step, m, v)."""
    step, m, v = state
    step += 1

    def update(params, grads, m, v):
        new_params = {}
        for name, value in params.items():
            if isinstance(value, dict):
                new_params[name] = update(value, grads[name], m[name], v[name])
                continue
            m[name] = config.beta1 * m[name] + (1 - config.beta1) * grads[name]
            v[name] = config.beta2 * v[name] + (1 - config.beta2) * grads[name] ** 2
            m_hat = m[name] / (1 - config.beta1 ** step)
            v_hat = v[name] / (1 - config.beta2 ** step)
            decay = config.weight_decay if name in DECAYED else 0.0
            new_params[name] = value - config.learning_rate * (m_hat / (np.sqrt(v_hat) + config.epsilon) + decay * value)
        return new_params

    return update(params, grads, m, v), (step, m, v)


def zeros_like(tree):
    return {name: zeros_like(value) if isinstance(value, dict) else np.zeros_like(value) for name, value in tree.items()}


def train(config, params, batches) -> list[float]:
    """The loss of each step of training from ``params`` on ``batches``."""
    model = Model(config)
    state = (0, zeros_like(params), zeros_like(params))
    losses = []
    for step, tokens in enumerate(batches):
        loss, grads = model.loss_and_gradients(params, tokens, step)
        params, state = adamw(params, grads, state, config)
        losses.append(loss)
    return losses
