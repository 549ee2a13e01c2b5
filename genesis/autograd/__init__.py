"""Automatic differentiation: Function, the engine, grad mode and gradient checking."""

from . import functional, graph
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .engine import backward, grad
from .function import Function, once_differentiable
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                        no_grad, set_grad_enabled)
from .gradcheck import gradcheck, gradgradcheck
from .variable import Variable

__all__ = ["Function", "backward", "grad", "gradcheck", "gradgradcheck", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled",
           "once_differentiable", "graph", "functional", "detect_anomaly", "set_detect_anomaly",
           "Variable"]
