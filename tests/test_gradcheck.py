"""gradcheck/gradgradcheck: they pass correct backwards and catch wrong ones."""

import pytest

import genesis
from genesis.autograd import Function, gradcheck, gradgradcheck
from genesis.autograd.gradcheck import GradcheckError
from helpers import make_pair


def leaf(shape, rng, low=-2.0, high=2.0):
    return make_pair(shape, genesis.float64, low=low, high=high, requires_grad=True, rng=rng)[0]


class SquareWrongFirst(Function):
    """x**2 with backward 3*x*g (should be 2*x*g)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * g


class SquareWrongSecond(Function):
    """x**2 whose first derivative is right but is not differentiable through x."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x.detach() * g


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def test_gradcheck_catches_a_wrong_backward(rng):
    x = leaf((3,), rng)
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(SquareWrongFirst.apply, (x,))
    assert gradcheck(SquareWrongFirst.apply, (x,), raise_exception=False) is False
    assert isinstance(GradcheckError("x"), RuntimeError)


def test_gradgradcheck_catches_a_wrong_double_backward(rng):
    x = leaf((3,), rng)
    assert gradcheck(SquareWrongSecond.apply, (x,))
    with pytest.raises(GradcheckError):
        gradgradcheck(SquareWrongSecond.apply, (x,))


def test_correct_custom_function_passes(rng):
    x = leaf((4,), rng)
    assert gradcheck(Square.apply, (x,))
    assert gradgradcheck(Square.apply, (x,))


def test_gradcheck_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError):
        gradcheck(lambda x: x * 2, (genesis.ones(2, dtype=genesis.float64),))


COMPOSITES = {
    "poly_trig": (lambda x, y: x ** 3 * genesis.sin(y) + genesis.exp(x / (y * y + 1)),
                  ((3, 4), (3, 4))),
    "broadcast": (lambda x, y: genesis.tanh(x * y) - y / (1 + x * x), ((3, 1), (4,))),
    "reduction": (lambda x, y: (genesis.sigmoid(x) * y).sum() * x.mean(), ((2, 3), (2, 3))),
    "shared": (lambda x, y: (lambda h: h * h + h * x)(genesis.log1p(x * x) * y), ((5,), (5,))),
    "scalar_0d": (lambda x, y: genesis.sqrt(x * x + 1) * y, ((), (3,))),
    "two_outputs": (lambda x, y: (x * y, genesis.cos(x) + y), ((2, 2), (2, 2))),
    "maximum": (lambda x, y: genesis.maximum(x, y * 2) * x, ((4,), (4,))),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composites_pass_gradcheck_and_gradgradcheck(name, rng):
    fn, shapes = COMPOSITES[name]
    inputs = tuple(leaf(s, rng) for s in shapes)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_gradcheck_with_a_non_differentiable_argument(rng):
    x = leaf((3,), rng)
    c = genesis.tensor([1.0, 2.0, 3.0], dtype=genesis.float64)
    assert gradcheck(lambda x, c: x * c + c, (x, c))
