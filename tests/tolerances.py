"""Per-dtype tolerances of the softmax kernels against float64 (test_softmax.py, test_gluon_softmax.py)."""
import torch

# Forward (atol, rtol) per element against float64 softmax of the same rounded input.
# rtol: rounding the fp32 result to fp16 costs half an ulp, at most 2^-11 relative; we allow
# twice that. bf16 keeps 8 significant bits, and the CPU interpreter converts fp32 -> bf16 by
# truncation (the GPU rounds to nearest), so up to one ulp, 2^-7 ~ 7.8e-3: 8e-3. fp32 error
# comes from exp (ex2.approx on GPU, ~2^-22) of arguments up to ~40 whose own rounding is
# amplified by their size, and fp32 sums of up to 1M terms: 1e-5.
# atol only absorbs fp16 subnormals (step 2^-24 ~ 6e-8) and flush-to-zero below 1.2e-38; it
# stays below the ~1e-6..1e-9 outputs of the longest rows, so rtol is what is tested there.
FORWARD_TOL = {torch.float32: (1e-12, 1e-5), torch.float16: (6e-8, 1e-3), torch.bfloat16: (1e-12, 8e-3)}
# Backward (atol as a fraction of max |dx|, rtol). dx = y * (dy - sum(y * dy)) inherits y's
# rounding (as above) and loses digits where dy ~ sum(y * dy); a fraction of the largest
# gradient in the tensor is the scale on which that cancellation error lives. Each budget is ~4
# roundings of the dtype: y's, dx's, and a biased sum(y * dy) (the interpreter truncates bf16),
# i.e. 4 x 2^-11 (fp16) and 4 x 2^-7 (bf16). Measured on the interpreter, torch's own fp16
# autograd errs the same as ours (~4e-4 of max |dx|); in bf16 ours reaches ~2e-2 of max |dx|.
BACKWARD_TOL = {torch.float32: (1e-5, 1e-4), torch.float16: (2e-3, 1e-2), torch.bfloat16: (3e-2, 5e-2)}
