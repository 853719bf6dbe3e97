"""How long the training process takes to receive a batch a DataLoader worker has ready.

With `num_workers > 0` and no pin-memory thread, `_MultiProcessingDataLoaderIter.__next__`
takes each batch from the workers' result queue in the training process: it unpickles the
batch and, for each tensor, receives the worker's shared-memory file descriptor and maps it
(`torch.multiprocessing`'s `file_descriptor` strategy, Linux's default). This times that call
with the workers always ahead (the training loop sleeps between batches), for batches of k
tensors of one size, and prints the median per batch.

    python3 handoff_probe.py
"""

import statistics
import sys
import time

import torch


class Fields(torch.utils.data.Dataset):
    def __init__(self, fields, shape):
        self.fields, self.shape = fields, shape

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        return tuple(torch.full(self.shape, float(i)) for _ in range(self.fields))


def per_batch_ms(fields, shape, batch=8, workers=2, batches=40):
    loader = torch.utils.data.DataLoader(
        Fields(fields, shape), batch_size=batch, num_workers=workers
    )
    it = iter(loader)
    times = []
    for n in range(batches):
        time.sleep(0.03)  # the workers get ahead: the queue holds a ready batch
        t0 = time.perf_counter()
        next(it)
        times.append(time.perf_counter() - t0)
    del it
    return statistics.median(times[5:]) * 1e3


if __name__ == "__main__":
    torch.set_num_threads(1)
    print("torch", torch.__version__, "sharing", torch.multiprocessing.get_sharing_strategy())
    for shape in [(), (3, 32, 32), (3, 224, 224)]:
        for fields in [1, 2, 4, 8, 16]:
            elems = 8 * int(torch.tensor(shape).prod()) if shape else 8
            print(f"fields {fields:2d} shape {str(shape):15s} bytes/tensor {elems*4:9d}: "
                  f"{per_batch_ms(fields, shape):.3f} ms per batch", flush=True)
