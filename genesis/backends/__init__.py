"""The backends: cpu (numpy kernels), cuda (Genesis's GPU runtime and Triton kernels) and meta
(shapes, dtypes and strides with no data).

Each registers its kernels with the dispatcher when its registering module is imported; this
package tells the dispatcher which modules those are, so each loads on first use.
"""

from ..dispatch import register_backend
from . import cudnn, mps  # noqa: F401  (settings modules, as torch.backends.cudnn and .mps)

register_backend("cpu", "genesis.backends.cpu")
register_backend("cuda", "genesis.backends.cuda.register")
register_backend("meta", "genesis.backends.meta")
