"""placeholder"""
TENSOR_METHODS = {}
__all__ = []
