"""AdaptiveLogSoftmaxWithLoss (Grave et al. 2016): a softmax over many classes as a head over
the frequent ones plus one entry per cluster of rarer ones, each cluster with its own
low-rank softmax."""

from collections import namedtuple

from ...ops import creation
from ...ops import elementwise as ew
from ...ops.shape_copies import cat
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """log p(target | input) for `n_classes` classes split at `cutoffs`: classes below
    cutoffs[0] are scored by the head, cluster i (cutoffs[i] .. cutoffs[i + 1]) by
    log p(cluster i) from the head plus its own log-softmax over a projection of size
    in_features // div_value ** (i + 1)."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1 \
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        factory = {"device": device, "dtype": dtype}
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs, self.div_value, self.head_bias = cutoffs + [n_classes], div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, size, bias=False, **factory)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for projection, output in self.tail:
            projection.reset_parameters()
            output.reset_parameters()

    def _check(self, input, target):
        if target.ndim == 1:
            if input.shape[0] != target.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input.ndim != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {list(input.shape)}")
        elif target.ndim == 0:
            if input.ndim != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {list(input.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if target.numel() and bool(((target < 0) | (target >= self.n_classes)).any()):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{int(target.min())}, {int(target.max())}] "
                               f"were found. ")

    def forward(self, input, target):
        """(log-probability of each target, mean negative log-likelihood) as a named tuple."""
        self._check(input, target)
        batched = target.ndim > 0
        if not batched:
            input, target = input.unsqueeze(0), target.unsqueeze(0)
        head_index = target.clone()
        output = creation.zeros(target.shape[0], dtype=input.dtype, device=input.device)
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            rows = ((target >= low) & (target < high)).nonzero().reshape(-1)
            if not rows.numel():
                continue
            head_index = head_index.index_fill(0, rows, self.shortlist_size + i)
            logprob = F.log_softmax(self.tail[i](input.index_select(0, rows)), 1)
            local = (target.index_select(0, rows) - low).unsqueeze(1)
            output = output.index_add(0, rows, logprob.gather(1, local).squeeze(1))
        head_logprob = F.log_softmax(self.head(input), 1)
        output = output + head_logprob.gather(1, head_index.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, 1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), 1)
            parts.append(cluster + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input):
        """log p(class | input) for every class: (N, n_classes)."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row (the full distribution only where the head's best
        entry is a cluster)."""
        head_output = self.head(input)
        output = head_output.argmax(1)
        outside = output >= self.shortlist_size
        if not bool(outside.any()):
            return output
        full = self._full_log_prob(input, head_output).argmax(1)
        return ew.where(outside, full, output)
