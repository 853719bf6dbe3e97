"""Records TensorFlow 1 `Timeline` Chrome traces of a small MLP's training steps on the CPU
(`tf.compat.v1` graph mode, one `Session.run` per step, `RunMetadata.step_stats` →
`timeline.Timeline(...).generate_chrome_trace_format()`), one file per step.

Run in a throwaway virtual environment: python3.11 -m venv /tmp/venv-tf &&
/tmp/venv-tf/bin/pip install tensorflow-cpu && /tmp/venv-tf/bin/python record.py OUT_DIR
"""

import gzip
import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow.python.client import timeline

tf.compat.v1.disable_eager_execution()
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
x = tf.compat.v1.placeholder(tf.float32, [64, 256], name="x")
y = tf.compat.v1.placeholder(tf.int64, [64], name="y")


def dense(inputs, units, name):
    with tf.compat.v1.variable_scope(name):
        w = tf.compat.v1.get_variable("kernel", [inputs.shape[1], units])
        b = tf.compat.v1.get_variable("bias", [units], initializer=tf.compat.v1.zeros_initializer())
        return tf.matmul(inputs, w) + b


h = tf.nn.relu(dense(x, 512, "fc1"))
h = tf.nn.relu(dense(h, 512, "fc2"))
logits = dense(h, 10, "head")
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss)
feed = {x: rng.standard_normal((64, 256)).astype(np.float32), y: rng.integers(0, 10, 64)}
config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=2)
with tf.compat.v1.Session(config=config) as session:
    session.run(tf.compat.v1.global_variables_initializer())
    for _ in range(3):
        session.run(train, feed_dict=feed)
    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    for step in range(3):
        metadata = tf.compat.v1.RunMetadata()
        session.run(train, feed_dict=feed, options=options, run_metadata=metadata)
        trace = timeline.Timeline(metadata.step_stats).generate_chrome_trace_format()
        with gzip.GzipFile(os.path.join(out, f"step{step}.timeline.json.gz"), "wb", mtime=0) as f:
            f.write(trace.encode())
