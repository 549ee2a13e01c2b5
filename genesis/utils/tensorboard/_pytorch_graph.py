"""A module's forward as a TensorBoard GraphDef, for SummaryWriter.add_graph.

PyTorch traces the forward with the JIT; Genesis has no tracer, so it records the autograd
graph instead. The model runs once in eval mode, with grad enabled, on copies of its inputs
that require grad and with every parameter requiring grad, so each differentiable op leaves a
grad_fn node whose next_functions are its inputs' nodes: the data flow. Forward pre-hooks and
hooks on every submodule give the module scopes: entering a submodule, the nodes behind its
arguments not yet scoped belong to the module running (they were made between its children),
and leaving it, the nodes behind its outputs not yet scoped belong to it.

The GraphDef holds nodes named as torch's:

- inputs `input/<name>.1` (op "IO Node"), named by the forward's parameters;
- parameters `<scope>/<attr>/<attr>` (op "prim::GetAttr"), e.g. `Net/Conv2d[conv1]/weight/weight`;
- ops `<scope>/<n>` with a running number n, e.g. `Net/Linear[fc]/7`, in data-flow order;
- outputs `output/output.<i>` (op "IO Node").

An op's name is its grad_fn's name less "Backward<k>": ConvolutionBackward0 gives
"Convolution" where torch shows aten::_convolution, ReluBackward0 "Relu" for aten::relu. Ops
are Genesis's own: Linear shows as T, Mm and Addmm where torch shows aten::linear, and
max_pool2d as the ConstantPadNd, Im2Col, View and MaxPool2DWithIndices it is made of. What
does not reach autograd is not shown: constants, buffers, ops on integer tensors and ops run
under no_grad.
"""

import inspect
import re

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

import genesis
from genesis.func._pytree import tree_flatten


def graph(model, args, verbose=False, use_strict_trace=True):
    """(GraphDef, RunMetadata) of `model` run on `args` (a tensor or a tuple of them), as
    torch's graph(); `verbose` prints the GraphDef; `use_strict_trace` is accepted for torch's
    signature (any nesting of outputs is recorded)."""
    args = _as_args(args)
    trainings = {m: m.training for m in model.modules()}
    model.eval()
    try:
        graph_def = _Recorder(model).record(args)
    finally:
        for m, training in trainings.items():
            m.training = training
    if verbose:
        print(graph_def)
    stepstats = RunMetadata(step_stats=StepStats(dev_stats=[DeviceStepStats(
        device="/device:CPU:0")]))
    return graph_def, stepstats


def _as_args(args):
    """`args` as a tuple, refused as torch's tracer refuses what is not (nested) tensors."""
    if args is None:
        raise RuntimeError("add_graph needs input_to_model: a tensor, or a tuple of the tensors "
                           "the model's forward takes")
    args = args if isinstance(args, tuple) else (args,)
    for leaf in tree_flatten(args)[0]:
        if not isinstance(leaf, genesis.Tensor):
            raise RuntimeError(f"Type '{type(leaf).__name__}' cannot be traced. Only Tensors and "
                               "(possibly nested) Lists, Dicts, and Tuples of Tensors can be "
                               "traced")
    return args


def _tensors(obj):
    """The tensors among the leaves of nested tuples, lists and dicts, in order."""
    return [leaf for leaf in tree_flatten(obj)[0] if isinstance(leaf, genesis.Tensor)]


def _input_names(model, count):
    """The forward's positional parameter names, input.<i> past them (as for *args)."""
    params = [p.name for p in inspect.signature(model.forward).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [params[i] if i < len(params) else f"input.{i}" for i in range(count)]


def _scope_names(model):
    """{module: scope} for the model and its submodules: `Net`, `Net/Conv2d[conv1]`, ..."""
    scopes = {model: type(model).__name__}
    for name, module in model.named_modules():
        if name:
            parent, _, attr = name.rpartition(".")
            parent_scope = scopes[model.get_submodule(parent)] if parent else scopes[model]
            scopes[module] = f"{parent_scope}/{type(module).__name__}[{attr}]"
    return scopes


def _op_name(node):
    return re.sub(r"Backward\d*$", "", node.name())


def _shape_attr(shape):
    dims = [TensorShapeProto.Dim(size=int(d)) for d in shape]
    return AttrValue(list=AttrValue.ListValue(shape=[TensorShapeProto(dim=dims)]))


def _node_def(name, op, inputs=(), shape=None):
    attr = {"attr": AttrValue(s=b"")}
    if shape is not None:
        attr["_output_shapes"] = _shape_attr(shape)
    return NodeDef(name=name, op=op, input=list(inputs), attr=attr)


class _Recorder:
    """One forward of `model` under scope hooks, then its autograd graph as a GraphDef."""

    def __init__(self, model):
        self.model = model
        self.module_scopes = _scope_names(model)
        self.stack = [self.module_scopes[model]]
        self.node_scopes = {}  # grad_fn node -> scope, in the order scoped

    def record(self, args):
        inputs = [t.detach().requires_grad_(t.is_floating_point() or t.is_complex())
                  for t in args if isinstance(t, genesis.Tensor)]
        leaves = {id(t): f"input/{name}.1"
                  for t, name in zip(inputs, _input_names(self.model, len(inputs)))}
        call_args = [inputs.pop(0) if isinstance(a, genesis.Tensor) else a for a in args]
        outputs = self._run(call_args)
        self._claim(outputs, self.stack[0])
        return self._graph_def(leaves, call_args, outputs)

    def _run(self, args):
        """The model's outputs, run with grad enabled, hooks on its submodules and every
        parameter requiring grad."""
        handles = []
        frozen = [p for p in self.model.parameters() if not p.requires_grad]
        for module in self.module_scopes:
            if module is not self.model:
                handles.append(module.register_forward_pre_hook(self._enter))
                handles.append(module.register_forward_hook(self._leave))
        for p in frozen:
            p.requires_grad_(True)
        try:
            with genesis.enable_grad():
                return self.model(*args)
        finally:
            for p in frozen:
                p.requires_grad_(False)
            for handle in handles:
                handle.remove()

    def _enter(self, module, args):
        self._claim(args, self.stack[-1])
        self.stack.append(self.module_scopes[module])

    def _leave(self, module, args, output):
        self._claim(output, self.stack.pop())

    def _claim(self, obj, scope):
        """Put the unscoped grad_fn nodes behind the tensors of `obj` in `scope`."""
        pending = [t.grad_fn for t in _tensors(obj)]
        while pending:
            node = pending.pop()
            if node is None or node in self.node_scopes or hasattr(node, "variable"):
                continue
            self.node_scopes[node] = scope
            pending.extend(n for n, _ in node.next_functions)

    def _graph_def(self, leaves, args, outputs):
        """GraphDef of the nodes behind `outputs`: inputs, parameters, ops, outputs."""
        nodes = [_node_def(name, "IO Node", shape=t.shape)
                 for t in _tensors(args) if (name := leaves.get(id(t)))]
        leaves.update(self._parameter_names())
        names = {}
        for node in self._data_flow_order(outputs):
            if hasattr(node, "variable"):
                name = leaves.get(id(node.variable))
                if name is not None and name.startswith("input/"):
                    names[node] = name
                    continue
                name = name or f"{self.stack[0]}/{len(names)}"
                op = "prim::GetAttr" if id(node.variable) in leaves else "prim::Constant"
                nodes.append(_node_def(name, op, shape=node.variable.shape))
            else:
                name = f"{self.node_scopes[node]}/{len(names)}"
                meta = getattr(node, "_output_meta", ())
                nodes.append(_node_def(name, _op_name(node),
                                       [names[n] for n, _ in node.next_functions if n],
                                       meta[0][0] if meta else None))
            names[node] = name
        for i, t in enumerate(_tensors(outputs), 1):
            source = names.get(t.grad_fn) or leaves.get(id(t))
            nodes.append(_node_def(f"output/output.{i}", "IO Node", [source] if source else (),
                                   t.shape))
        return GraphDef(node=nodes, versions=VersionDef(producer=22))

    def _parameter_names(self):
        """{id(parameter): `<scope>/<attr>/<attr>`} for the model's parameters."""
        names = {}
        for module, scope in self.module_scopes.items():
            for attr, p in module.named_parameters(recurse=False):
                names.setdefault(id(p), f"{scope}/{attr}/{attr}")
        return names

    def _data_flow_order(self, outputs):
        """The nodes behind `outputs`, each after the nodes of its inputs."""
        order, seen = [], set()
        for t in _tensors(outputs):
            stack = [(t.grad_fn, False)]
            while stack:
                node, expanded = stack.pop()
                if node is None or (node in seen and not expanded):
                    continue
                if expanded:
                    order.append(node)
                    continue
                seen.add(node)
                stack.append((node, True))
                stack.extend((n, False) for n, _ in reversed(node.next_functions))
        return order
