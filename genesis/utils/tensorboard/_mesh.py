"""Mesh and point-cloud summaries for the mesh plugin: vertices, faces and colors, each a
B x N x 3 float tensor with the plugin's metadata, as torch.utils.tensorboard.summary.mesh."""

import json

from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.mesh import metadata
from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData

from ...ops.creation import as_tensor


def mesh(tag, vertices, colors, faces, config_dict, display_name=None, description=None):
    """One summary value per part given (vertices, faces, colors), sharing `config_dict`
    (ThreeJS settings, as sorted JSON)."""
    json_config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [(part, kind) for part, kind in ((vertices, MeshPluginData.VERTEX),
                                             (faces, MeshPluginData.FACE),
                                             (colors, MeshPluginData.COLOR))
             if part is not None]
    components = metadata.get_components_bitmask([kind for _, kind in parts])
    return Summary(value=[_part(tag, display_name, description, part, kind, components,
                                json_config) for part, kind in parts])


def _part(name, display_name, description, tensor, content_type, components, json_config):
    tensor = as_tensor(tensor)
    part_metadata = metadata.create_summary_metadata(name, display_name, content_type,
                                                     components, tensor.shape, description,
                                                     json_config=json_config)
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=tensor.shape[i]) for i in range(3)])
    proto = TensorProto(dtype="DT_FLOAT", float_val=tensor.reshape(-1).tolist(),
                        tensor_shape=shape)
    return Summary.Value(tag=metadata.get_instance_name(name, content_type), tensor=proto,
                         metadata=part_metadata)
