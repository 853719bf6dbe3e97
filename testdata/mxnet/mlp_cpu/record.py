"""Records testdata/mxnet/mlp_cpu/profile.json: MXNet's profiler (mx.profiler) over 3 training
steps of a small MLP on the CPU, as `mx.profiler.set_config(filename=...)` documents it.

Run with mxnet 1.9.1 (pip wheel, Python 3.11, numpy 1.23.5) from this directory:
    python record.py
The file is written as MXNet writes it, then gzip-compressed byte for byte (gzip -9n).
"""
import mxnet as mx
from mxnet import autograd, gluon, nd

mx.random.seed(0)
net = gluon.nn.Sequential()
net.add(gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(10))
net.initialize(mx.init.Xavier(), ctx=mx.cpu())
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
x = nd.random.uniform(shape=(64, 128))
y = nd.array([i % 10 for i in range(64)])

# Warm-up step (not profiled): shapes inferred, memory allocated.
with autograd.record():
    loss = loss_fn(net(x), y)
loss.backward()
trainer.step(64)
nd.waitall()

mx.profiler.set_config(profile_all=True, aggregate_stats=False, filename="profile.json")
mx.profiler.set_state("run")
for step in range(3):
    # A user range per step (mx.profiler.Task), the step markers `--step-range` can take.
    domain = mx.profiler.Domain("train")
    task = mx.profiler.Task(domain, "step%d" % step)
    task.start()
    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(64)
    nd.waitall()
    task.stop()
mx.profiler.set_state("stop")
mx.profiler.dump()
