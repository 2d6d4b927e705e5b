# A script written only from nrtpy's public documentation (configuration,
# model, tensor and error pages, and the "debug a NEFF" tutorial), as a
# user of AWS's nrtpy writes it: its imports are nrtpy's own. The tests run
# it unchanged through `python -m neffld.nrtpy`, and with the imports
# rewritten to `from neffld import nrtpy`. It expects model.neff (a NEFF
# with float32 inputs of shape (128, 512)) in the working directory.
import numpy as np

import nrtpy
from nrtpy import NrtError, NrtpyError, NrtpyModel, NrtpyTensor

# Configuration page: choose cores before the first operation.
nrtpy.configure(visible_cores=[0, 1])
model = NrtpyModel.load_from_neff("model.neff")
data = np.random.randn(128, 512).astype(np.float32)
tensor = NrtpyTensor.from_numpy(data, name="input")
del model, tensor
nrtpy.reset()
nrtpy.configure(visible_cores=[2, 3])
model = NrtpyModel.load_from_neff("model.neff", core_id=0)

# Tutorial: what the model takes and gives.
print("Input tensors:")
for name, info in model.input_tensors_info.items():
    print(f"  {name}: shape={info.shape}, size={info.size}")
print("Output tensors:")
for name, info in model.output_tensors_info.items():
    print(f"  {name}: shape={info.shape}, size={info.size}")

# Tensor page: from_numpy, write_from_numpy, numpy.
inputs = {}
for name in model.input_tensors_info.keys():
    inputs[name] = NrtpyTensor.from_numpy(np.ones((128, 512), dtype=np.float32), name=name)
first = next(iter(inputs.values()))
print("round trip:", first.numpy().shape, first.numpy().dtype, float(first.numpy().sum()))
first.write_from_numpy(np.zeros((128, 512), dtype=np.float32))
print("after write_from_numpy:", float(first.numpy().sum()), first.shape, first.dtype, first.name)
try:
    first.write_from_numpy(np.zeros((1, 10), dtype=np.float32))
except ValueError as e:
    print("size check: ValueError")

# Tutorial: run it, catching the runtime's error.
try:
    outputs = model(inputs=inputs)
    print("executed:", list(outputs))
except NrtError as e:
    print(f"NrtError: {e}")

# Error page: a missing NEFF, a freed tensor, RuntimeError as the base.
try:
    NrtpyModel.load_from_neff("nonexistent.neff")
except NrtError as e:
    print(f"missing NEFF: {e}")
scratch = NrtpyTensor.from_numpy(np.arange(10, dtype=np.float32), name="scratch")
nrtpy.get_nrtpy_singleton().free_tensor(scratch)
try:
    scratch.numpy()
except NrtpyError as e:
    print("freed tensor: NrtpyError")
try:
    model.benchmark(inputs=inputs, warmup_iter=5, benchmark_iter=100)
except RuntimeError as e:
    print(f"benchmark: {type(e).__name__}")
nrtpy.reset()
print("done")
