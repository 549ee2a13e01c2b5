"""Function transforms, as torch.func: grad, vjp, jvp, jacrev, jacfwd, hessian and vmap over
genesis's tape autograd, and functional_call to run a module as a function of its state.

The transforms nest (vmap(grad(f)), jacrev(jacrev(f))): a differentiating transform running
inside another keeps its graph, so the outer one can differentiate its result; at the top level
its results are detached. vmap loops over the batch (see genesis.func.batching)."""

from .module_state import functional_call, stack_module_state
from .gradient import grad, grad_and_value
from .jacobian import hessian, jacfwd, jacrev
from .pushforward import jvp
from .pullback import vjp
from .batching import vmap

__all__ = ["grad", "grad_and_value", "vmap", "hessian", "jacfwd", "jacrev", "jvp", "vjp",
           "functional_call", "stack_module_state"]
