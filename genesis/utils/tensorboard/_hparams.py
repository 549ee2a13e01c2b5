"""The hparams plugin's three summaries (experiment, session start, session end), as
torch.utils.tensorboard.summary.hparams builds them."""

from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboard.plugins.hparams import metadata
from tensorboard.plugins.hparams.api_pb2 import (DataType, Experiment, HParamInfo, MetricInfo,
                                                 MetricName, Status)
from tensorboard.plugins.hparams.plugin_data_pb2 import (HParamsPluginData, SessionEndInfo,
                                                         SessionStartInfo)

from ...tensor import Tensor
from ._convert import make_np


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The Experiment (hyperparameter and metric names), SessionStartInfo (the values) and
    SessionEndInfo (success) summaries."""
    domains = hparam_domain_discrete or {}
    for name, value in (("hparam_dict", hparam_dict), ("metric_dict", metric_dict),
                        ("hparam_domain_discrete", domains)):
        if not isinstance(value, dict):
            raise TypeError(f"parameter: {name} should be a dictionary, nothing logged.")
    _check_domains(hparam_dict, domains)
    start = SessionStartInfo()
    infos = [_hparam(start, name, value, domains.get(name))
             for name, value in hparam_dict.items() if value is not None]
    experiment = Experiment(hparam_infos=infos,
                            metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    end = SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))
    return (_summary(metadata.EXPERIMENT_TAG, HParamsPluginData(experiment=experiment)),
            _summary(metadata.SESSION_START_INFO_TAG, HParamsPluginData(session_start_info=start)),
            _summary(metadata.SESSION_END_INFO_TAG, HParamsPluginData(session_end_info=end)))


def _check_domains(hparam_dict, domains):
    for name, values in domains.items():
        if (name not in hparam_dict or not isinstance(values, list)
                or not all(isinstance(v, type(hparam_dict[name])) for v in values)):
            raise TypeError(f"parameter: hparam_domain_discrete[{name}] should be a list of same "
                            f"type as hparam_dict[{name}].")


def _hparam(start, name, value, domain):
    """Sets `name`'s value in SessionStartInfo `start`; its HParamInfo. Numbers (bools among
    them, as in torch) are float64, strings strings, a tensor its first element."""
    if isinstance(value, (int, float)):
        start.hparams[name].number_value = value
        return _info(name, "DATA_TYPE_FLOAT64", domain, "number_value")
    if isinstance(value, str):
        start.hparams[name].string_value = value
        return _info(name, "DATA_TYPE_STRING", domain, "string_value")
    if isinstance(value, Tensor):
        start.hparams[name].number_value = make_np(value)[0]
        return HParamInfo(name=name, type=DataType.Value("DATA_TYPE_FLOAT64"))
    raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")


def _info(name, data_type, domain, field):
    discrete = (None if domain is None else
                struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in domain]))
    return HParamInfo(name=name, type=DataType.Value(data_type), domain_discrete=discrete)


def _summary(tag, content):
    content.version = metadata.PLUGIN_DATA_VERSION
    plugin = SummaryMetadata.PluginData(plugin_name=metadata.PLUGIN_NAME,
                                        content=content.SerializeToString())
    return Summary(value=[Summary.Value(tag=tag, metadata=SummaryMetadata(plugin_data=plugin))])
