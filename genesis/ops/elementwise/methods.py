"""The Tensor methods of the elementwise family: the functions themselves, their in-place forms,
and Python's arithmetic, comparison and bitwise operators."""

import functools

from ... import dtypes
from ...tensor import Tensor
from ..common import NUMPY_SCALAR_TYPES, SCALAR_TYPES, python_number
from .binary import (add, atan2, bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or,
                     bitwise_right_shift, bitwise_xor, copysign, div, eq, float_power,
                     floor_divide, fmax, fmin, fmod, ge, gt, heaviside, hypot, le, logaddexp,
                     logical_and, logical_not, logical_or, logical_xor, lt, maximum, minimum, mul,
                     ne, pow, remainder, rsub, sub, true_divide, xlogy)
from .inplace_plans import (_add_plan, _addcdiv_plan, _addcmul_plan, _clamp_max_plan,
                            _clamp_min_plan, _clamp_plan, _div_plan, _float_power_, _inplace,
                            _lerp_plan, _mul_plan, _sub_plan, _unary_plan)
from .selection import addcdiv, addcmul, clamp, clamp_max, clamp_min, lerp
from .unary import (UNARY_OPS, abs, acos, acosh, asin, asinh, atan, atanh, ceil, cos, cosh, erf,
                    erfc, exp, exp2, expm1, floor, frac, isfinite, isinf, isnan, log, log10,
                    log1p, log2, nan_to_num, neg, reciprocal, relu, round, rsqrt, sgn, sigmoid,
                    sign, signbit, sin, sinh, sqrt, square, tan, tanh, trunc)


_OPERANDS = (Tensor,) + SCALAR_TYPES


def _numpy_scalars_read(operator):
    """Python operator method `operator` taking a numpy scalar as the Python number PyTorch
    reads it as (else numpy would answer `x * np.float32(2)` itself, with an array)."""
    @functools.wraps(operator)
    def read(self, other):
        if isinstance(other, NUMPY_SCALAR_TYPES):
            other = python_number(other)
        return operator(self, other)
    return read


class ElementwiseMethods:
    """Tensor methods of this family: its functions (the same objects), their in-place forms,
    and Python's arithmetic, comparison and bitwise operators."""

    # out of place
    add = add
    sub = sub
    mul = mul
    div = div
    true_divide = true_divide
    floor_divide = floor_divide
    pow = pow
    float_power = float_power
    remainder = remainder
    fmod = fmod
    maximum = maximum
    minimum = minimum
    fmax = fmax
    fmin = fmin
    atan2 = atan2
    arctan2 = atan2
    hypot = hypot
    logaddexp = logaddexp
    xlogy = xlogy
    copysign = copysign
    heaviside = heaviside
    lerp = lerp
    addcmul = addcmul
    addcdiv = addcdiv
    clamp = clamp
    clip = clamp
    clamp_min = clamp_min
    clamp_max = clamp_max
    neg = neg
    abs = abs
    exp = exp
    exp2 = exp2
    expm1 = expm1
    log = log
    log2 = log2
    log10 = log10
    log1p = log1p
    sqrt = sqrt
    rsqrt = rsqrt
    sin = sin
    cos = cos
    tan = tan
    asin = asin
    acos = acos
    atan = atan
    sinh = sinh
    cosh = cosh
    tanh = tanh
    asinh = asinh
    acosh = acosh
    atanh = atanh
    arcsin = asin
    arccos = acos
    arctan = atan
    sigmoid = sigmoid
    relu = relu
    erf = erf
    erfc = erfc
    reciprocal = reciprocal
    square = square
    floor = floor
    ceil = ceil
    trunc = trunc
    frac = frac
    sign = sign
    sgn = sgn
    round = round
    nan_to_num = nan_to_num
    eq = eq
    ne = ne
    lt = lt
    le = le
    gt = gt
    ge = ge
    greater = gt
    greater_equal = ge
    less = lt
    less_equal = le
    not_equal = ne
    logical_and = logical_and
    logical_or = logical_or
    logical_xor = logical_xor
    logical_not = logical_not
    bitwise_and = bitwise_and
    bitwise_or = bitwise_or
    bitwise_xor = bitwise_xor
    bitwise_not = bitwise_not
    bitwise_left_shift = bitwise_left_shift
    bitwise_right_shift = bitwise_right_shift
    negative = neg
    absolute = abs
    subtract = sub
    multiply = mul
    divide = div
    isnan = isnan
    isinf = isinf
    isfinite = isfinite
    signbit = signbit

    # in place
    add_ = _inplace(add, "add_", _add_plan)
    sub_ = _inplace(sub, "sub_", _sub_plan)
    mul_ = _inplace(mul, "mul_", _mul_plan)
    div_ = _inplace(div, "div_", _div_plan)
    true_divide_ = _inplace(true_divide, "true_divide_", _div_plan)
    floor_divide_ = _inplace(floor_divide, "floor_divide_")
    pow_ = _inplace(pow, "pow_")
    remainder_ = _inplace(remainder, "remainder_")
    fmod_ = _inplace(fmod, "fmod_")
    maximum_ = _inplace(maximum, "maximum_")
    minimum_ = _inplace(minimum, "minimum_")
    fmax_ = _inplace(fmax, "fmax_")
    fmin_ = _inplace(fmin, "fmin_")
    atan2_ = _inplace(atan2, "atan2_")
    arctan2_ = _inplace(atan2, "arctan2_")
    hypot_ = _inplace(hypot, "hypot_")
    logaddexp_ = _inplace(logaddexp, "logaddexp_")
    xlogy_ = _inplace(xlogy, "xlogy_")
    copysign_ = _inplace(copysign, "copysign_")
    heaviside_ = _inplace(heaviside, "heaviside_")
    lerp_ = _inplace(lerp, "lerp_", _lerp_plan)
    addcmul_ = _inplace(addcmul, "addcmul_", _addcmul_plan)
    addcdiv_ = _inplace(addcdiv, "addcdiv_", _addcdiv_plan)
    clamp_ = _inplace(clamp, "clamp_", _clamp_plan)
    clip_ = _inplace(clamp, "clip_", _clamp_plan)
    clamp_min_ = _inplace(clamp_min, "clamp_min_", _clamp_min_plan)
    clamp_max_ = _inplace(clamp_max, "clamp_max_", _clamp_max_plan)
    neg_ = _inplace(neg, "neg_", _unary_plan("neg"))
    abs_ = _inplace(abs, "abs_", _unary_plan("abs"))
    exp_ = _inplace(exp, "exp_", _unary_plan("exp"))
    exp2_ = _inplace(exp2, "exp2_", _unary_plan("exp2"))
    expm1_ = _inplace(expm1, "expm1_", _unary_plan("expm1"))
    log_ = _inplace(log, "log_", _unary_plan("log"))
    log2_ = _inplace(log2, "log2_", _unary_plan("log2"))
    log10_ = _inplace(log10, "log10_", _unary_plan("log10"))
    log1p_ = _inplace(log1p, "log1p_", _unary_plan("log1p"))
    sqrt_ = _inplace(sqrt, "sqrt_", _unary_plan("sqrt"))
    rsqrt_ = _inplace(rsqrt, "rsqrt_", _unary_plan("rsqrt"))
    sin_ = _inplace(sin, "sin_", _unary_plan("sin"))
    cos_ = _inplace(cos, "cos_", _unary_plan("cos"))
    tan_ = _inplace(tan, "tan_", _unary_plan("tan"))
    asin_ = _inplace(asin, "asin_", _unary_plan("asin"))
    acos_ = _inplace(acos, "acos_", _unary_plan("acos"))
    atan_ = _inplace(atan, "atan_", _unary_plan("atan"))
    sinh_ = _inplace(sinh, "sinh_", _unary_plan("sinh"))
    cosh_ = _inplace(cosh, "cosh_", _unary_plan("cosh"))
    tanh_ = _inplace(tanh, "tanh_", _unary_plan("tanh"), UNARY_OPS["tanh"])
    asinh_ = _inplace(asinh, "asinh_", _unary_plan("asinh"))
    acosh_ = _inplace(acosh, "acosh_", _unary_plan("acosh"))
    atanh_ = _inplace(atanh, "atanh_", _unary_plan("atanh"))
    arcsin_ = _inplace(asin, "arcsin_", _unary_plan("asin"))
    arccos_ = _inplace(acos, "arccos_", _unary_plan("acos"))
    arctan_ = _inplace(atan, "arctan_", _unary_plan("atan"))
    sigmoid_ = _inplace(sigmoid, "sigmoid_", _unary_plan("sigmoid"), UNARY_OPS["sigmoid"])
    relu_ = _inplace(relu, "relu_", _unary_plan("relu"), UNARY_OPS["relu"])
    erf_ = _inplace(erf, "erf_", _unary_plan("erf"))
    erfc_ = _inplace(erfc, "erfc_", _unary_plan("erfc"))
    reciprocal_ = _inplace(reciprocal, "reciprocal_", _unary_plan("reciprocal"))
    square_ = _inplace(square, "square_")
    floor_ = _inplace(floor, "floor_", _unary_plan("floor"))
    ceil_ = _inplace(ceil, "ceil_", _unary_plan("ceil"))
    trunc_ = _inplace(trunc, "trunc_", _unary_plan("trunc"))
    frac_ = _inplace(frac, "frac_", _unary_plan("frac"))
    sign_ = _inplace(sign, "sign_", _unary_plan("sign"))
    sgn_ = _inplace(sgn, "sgn_", _unary_plan("sgn"))
    round_ = _inplace(round, "round_")
    nan_to_num_ = _inplace(nan_to_num, "nan_to_num_")
    eq_ = _inplace(eq, "eq_")
    ne_ = _inplace(ne, "ne_")
    lt_ = _inplace(lt, "lt_")
    le_ = _inplace(le, "le_")
    gt_ = _inplace(gt, "gt_")
    ge_ = _inplace(ge, "ge_")
    greater_ = _inplace(gt, "greater_")
    greater_equal_ = _inplace(ge, "greater_equal_")
    less_ = _inplace(lt, "less_")
    less_equal_ = _inplace(le, "less_equal_")
    not_equal_ = _inplace(ne, "not_equal_")
    logical_and_ = _inplace(logical_and, "logical_and_")
    logical_or_ = _inplace(logical_or, "logical_or_")
    logical_xor_ = _inplace(logical_xor, "logical_xor_")
    logical_not_ = _inplace(logical_not, "logical_not_")
    bitwise_and_ = _inplace(bitwise_and, "bitwise_and_")
    bitwise_or_ = _inplace(bitwise_or, "bitwise_or_")
    bitwise_xor_ = _inplace(bitwise_xor, "bitwise_xor_")
    bitwise_not_ = _inplace(bitwise_not, "bitwise_not_")
    bitwise_left_shift_ = _inplace(bitwise_left_shift, "bitwise_left_shift_")
    bitwise_right_shift_ = _inplace(bitwise_right_shift, "bitwise_right_shift_")
    negative_ = _inplace(neg, "negative_", _unary_plan("neg"))
    absolute_ = _inplace(abs, "absolute_", _unary_plan("abs"))
    subtract_ = _inplace(sub, "subtract_", _sub_plan)
    multiply_ = _inplace(mul, "multiply_", _mul_plan)
    divide_ = _inplace(div, "divide_", _div_plan)
    float_power_ = _float_power_

    # operators: a Tensor or a Python number (a numpy scalar read as one) on the other side,
    # else NotImplemented
    @_numpy_scalars_read
    def __add__(self, other):
        """self + other."""
        return add(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __radd__(self, other):
        """other + self."""
        return add(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __sub__(self, other):
        """self - other."""
        return sub(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __rsub__(self, other):
        """other - self."""
        return rsub(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __mul__(self, other):
        """self * other."""
        return mul(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __rmul__(self, other):
        """other * self, as PyTorch's: self.mul(other)."""
        return mul(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __truediv__(self, other):
        """self / other."""
        return div(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __rtruediv__(self, other):
        """other / self, as PyTorch's: self.reciprocal() * other (the reciprocal rounded to a
        half type first, the number then read unrounded)."""
        return mul(reciprocal(self), other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __floordiv__(self, other):
        """self // other."""
        return floor_divide(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __rfloordiv__(self, other):
        """other // self."""
        return floor_divide(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __mod__(self, other):
        """self % other."""
        return remainder(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __rmod__(self, other):
        """other % self."""
        return remainder(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __pow__(self, other):
        """self ** other."""
        return pow(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __rpow__(self, other):
        """other ** self."""
        return pow(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __and__(self, other):
        """self & other."""
        return bitwise_and(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __rand__(self, other):
        """other & self."""
        return bitwise_and(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __or__(self, other):
        """self | other."""
        return bitwise_or(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __ror__(self, other):
        """other | self."""
        return bitwise_or(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __xor__(self, other):
        """self ^ other."""
        return bitwise_xor(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __rxor__(self, other):
        """other ^ self."""
        return bitwise_xor(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __lshift__(self, other):
        """self << other."""
        return bitwise_left_shift(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __rlshift__(self, other):
        """other << self."""
        return bitwise_left_shift(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __rshift__(self, other):
        """self >> other."""
        return bitwise_right_shift(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __rrshift__(self, other):
        """other >> self."""
        return bitwise_right_shift(other, self) if isinstance(other, _OPERANDS) else NotImplemented

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_
    __ifloordiv__ = floor_divide_
    __imod__ = remainder_
    __ipow__ = pow_
    __iand__ = bitwise_and_
    __ior__ = bitwise_or_
    __ixor__ = bitwise_xor_
    __ilshift__ = bitwise_left_shift_
    __irshift__ = bitwise_right_shift_

    @_numpy_scalars_read
    def __eq__(self, other):
        """self == other, elementwise."""
        return eq(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __ne__(self, other):
        """self != other, elementwise."""
        return ne(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __lt__(self, other):
        """self < other, elementwise."""
        return lt(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __le__(self, other):
        """self <= other, elementwise."""
        return le(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __gt__(self, other):
        """self > other, elementwise."""
        return gt(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    @_numpy_scalars_read
    def __ge__(self, other):
        """self >= other, elementwise."""
        return ge(self, other) if isinstance(other, _OPERANDS) else NotImplemented

    __neg__ = neg
    __abs__ = abs

    def __invert__(self):
        """~self: logical not of a bool tensor, bitwise not of an integer one."""
        return logical_not(self) if self.dtype is dtypes.bool_ else bitwise_not(self)

    def __pos__(self):
        """+self: the tensor itself."""
        return self
