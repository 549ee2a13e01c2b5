"""Function transforms, as torch.func: grad, vjp, jvp, linearize, jacrev, jacfwd, hessian and
vmap over genesis's tape autograd, and functional_call to run a module as a function of its
state; functionalize and debug_unwrap give PyTorch's eager results (see functionalization.py);
rearrange reorders dimensions by an einops pattern.

The transforms nest (vmap(grad(f)), jacrev(jacrev(f))): a differentiating transform running
inside another keeps its graph, so the outer one can differentiate its result; at the top level
its results are detached. vmap loops over the batch (see genesis.func.batching)."""

from .module_state import functional_call, replace_all_batch_norm_modules_, stack_module_state
from .gradient import grad, grad_and_value
from .jacobian import hessian, jacfwd, jacrev
from .pushforward import jvp, linearize
from .pullback import vjp
from .batching import vmap
from .functionalization import debug_unwrap, functionalize
from .einops import rearrange

__all__ = ["grad", "grad_and_value", "vmap", "hessian", "jacfwd", "jacrev", "jvp", "vjp",
           "functional_call", "stack_module_state", "linearize", "functionalize",
           "debug_unwrap", "replace_all_batch_norm_modules_", "rearrange"]
