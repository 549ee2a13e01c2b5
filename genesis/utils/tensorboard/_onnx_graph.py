"""An ONNX model file as a TensorBoard GraphDef, as torch.utils.tensorboard's add_onnx_graph
shows it: inputs and outputs as Variable nodes, each ONNX node under its first output's name."""

import itertools

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef


def load_onnx_graph(fname):
    """The GraphDef of the ONNX file `fname` (read with the onnx package)."""
    import onnx

    return parse(onnx.load(fname).graph)


def parse(graph):
    """The GraphDef of an onnx GraphProto."""
    nodes = [_variable(value) for value in itertools.chain(graph.input, graph.output)]
    nodes += [_operation(node) for node in graph.node]
    return GraphDef(node=nodes, versions=VersionDef(producer=22))


def _variable(value):
    tensor_type = value.type.tensor_type
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d.dim_value)
                                  for d in tensor_type.shape.dim])
    return NodeDef(name=value.name.encode(encoding="utf_8"), op="Variable", input=[],
                   attr={"dtype": AttrValue(type=tensor_type.elem_type),
                         "shape": AttrValue(shape=shape)})


def _operation(node):
    fields = [" = ".join(str(f[1]) for f in a.ListFields()) for a in node.attribute]
    return NodeDef(name=node.output[0].encode(encoding="utf_8"), op=node.op_type,
                   input=node.input,
                   attr={"parameters": AttrValue(s=", ".join(fields).encode(encoding="utf_8"))})
