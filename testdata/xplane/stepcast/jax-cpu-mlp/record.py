"""Records the XPlane trace beside this script: a small MLP trained for 6 steps with JAX on the
CPU, each step marked with `jax.profiler.StepTraceAnnotation` (the `step_num` convention that
TensorBoard's profile plugin and xprof group steps by).

Run in a throwaway virtual environment:
    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install "jax[cpu]"
    /tmp/jaxenv/bin/python record.py OUTDIR
The trace lands in OUTDIR/plugins/profile/<run>/<host>.xplane.pb; the vendored copy is renamed
`train.xplane.pb`.
"""

import sys

import jax
import jax.numpy as jnp


def init(key, sizes):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append((jax.random.normal(sub, (fan_in, fan_out)) / jnp.sqrt(fan_in), jnp.zeros(fan_out)))
    return params


def loss(params, x, y):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return jnp.mean((x @ w + b - y) ** 2)


@jax.jit
def train_step(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]


def main(outdir):
    key = jax.random.PRNGKey(0)
    params = init(key, [256, 512, 512, 10])
    x = jax.random.normal(key, (128, 256))
    y = jax.random.normal(key, (128, 10))
    params = train_step(params, x, y)  # compile outside the trace
    jax.block_until_ready(params)
    jax.profiler.start_trace(outdir)
    for step in range(6):
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            params = train_step(params, x, y)
            jax.block_until_ready(params)
    jax.profiler.stop_trace()


if __name__ == "__main__":
    main(sys.argv[1])
