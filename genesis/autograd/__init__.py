"""Automatic differentiation: Function, the engine, grad mode and gradient checking."""

from . import forward_ad, functional, graph
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .engine import backward, grad
from .function import Function, once_differentiable
from .grad_mode import (_force_original_view_tracking, enable_grad, enforce_grad_layout_policy,
                        inference_mode, is_grad_enabled, is_inference_mode_enabled,
                        is_multithreading_enabled, is_view_replay_enabled, no_grad,
                        set_grad_enabled, set_multithreading_enabled)
from .gradcheck import gradcheck, gradgradcheck
from .variable import Variable

__all__ = ["Function", "backward", "grad", "gradcheck", "gradgradcheck", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled",
           "once_differentiable", "graph", "functional", "detect_anomaly", "set_detect_anomaly",
           "Variable", "enforce_grad_layout_policy", "set_multithreading_enabled",
           "is_multithreading_enabled", "is_view_replay_enabled", "forward_ad"]
