"""Generator semantics that need no GPU: CUDA (Philox) generator state and seeding, and the
in-place random fills (uniform_, normal_, random_, exponential_, bernoulli_) on the CPU."""

import math

import numpy as np
import pytest

import genesis
from genesis import random as grandom
from genesis.device import as_device


@pytest.fixture(autouse=True)
def _fresh_cuda_generators():
    """Each test sees CUDA default generators made afresh (none exist before it)."""
    saved = dict(grandom._cuda_generators), list(grandom._cuda_seed)
    grandom._cuda_generators.clear()
    yield
    grandom._cuda_generators.clear()
    grandom._cuda_generators.update(saved[0])
    grandom._cuda_seed[:] = saved[1]


def test_cuda_generator_is_a_generator_and_touches_no_driver():
    before = genesis.cuda.is_initialized()
    g = genesis.Generator(device="cuda")
    assert isinstance(g, genesis.Generator) and isinstance(g, grandom.PhiloxGenerator)
    assert g.device.type == "cuda" and g.get_offset() == 0
    assert g.initial_seed() == grandom.DEFAULT_SEED
    assert genesis.cuda.is_initialized() == before
    assert type(genesis.Generator()) is genesis.Generator


def test_reserve_advances_the_offset_by_the_count():
    g = genesis.Generator("cuda:0").manual_seed(77)
    assert g.philox_reserve(10) == (77, 0)
    assert g.philox_reserve(3) == (77, 10)
    assert g.philox_reserve(0) == (77, 13)
    assert g.get_offset() == 13
    g.manual_seed(78)
    assert g.philox_reserve(1) == (78, 0)


def test_state_round_trip_and_layout():
    g = genesis.Generator("cuda").manual_seed(2 ** 64 - 5)
    g.philox_reserve(123456789)
    state = g.get_state()
    assert state.dtype is genesis.uint8 and tuple(state.shape) == (16,)
    assert state.device.type == "cpu"
    seed, offset = np.asarray(state.numpy()).view("<u8")
    assert (int(seed), int(offset)) == (2 ** 64 - 5, 123456789)
    first = g.philox_reserve(8)
    g.set_state(state)
    assert g.philox_reserve(8) == first


def test_set_state_rejects_bad_states():
    g = genesis.Generator("cuda")
    with pytest.raises(TypeError):
        g.set_state(genesis.zeros(16, dtype=genesis.int64))
    with pytest.raises(RuntimeError, match="wrong size"):
        g.set_state(genesis.zeros(15, dtype=genesis.uint8))


def test_manual_seed_seeds_existing_and_future_cuda_generators():
    early = grandom.cuda_generator(0)
    early.philox_reserve(50)
    genesis.manual_seed(4242)
    assert early.philox_reserve(1) == (4242, 0)
    assert grandom.cuda_generator(3).philox_reserve(1) == (4242, 0)
    assert genesis.initial_seed() == 4242 and genesis.cuda.initial_seed() == 4242


def test_cuda_module_seeding_functions():
    genesis.cuda.manual_seed_all(9)
    genesis.cuda.manual_seed(10)
    assert genesis.cuda.initial_seed() == 10
    assert grandom.cuda_generator(1).initial_seed() == 9
    genesis.cuda.seed()
    assert genesis.cuda.initial_seed() != 10
    genesis.cuda.seed_all()
    assert grandom.cuda_generator(0).initial_seed() == grandom.cuda_generator(5).initial_seed()
    state = genesis.cuda.get_rng_state("cuda:1")
    grandom.cuda_generator(1).philox_reserve(7)
    genesis.cuda.set_rng_state(state, 1)
    assert grandom.cuda_generator(1).get_offset() == 0


def test_seed_reseeds_cuda_generators_with_the_cpu_seed():
    s = genesis.seed()
    assert grandom.cuda_generator(0).initial_seed() == s


def test_generator_device_type_must_match():
    cuda = as_device("cuda:0")
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator"):
        grandom.generator_for(genesis.Generator(), cuda)
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator"):
        grandom.generator_for(genesis.Generator("cuda"), as_device("cpu"))
    assert grandom.generator_for(None, cuda) is grandom.cuda_generator(0)


def test_host_draws_from_a_cuda_generator_are_reproducible_and_advance_it():
    g = genesis.Generator("cuda").manual_seed(11)
    a = genesis.random.rng_for(g).random(5)
    assert g.get_offset() == 1
    b = genesis.random.rng_for(g).random(5)
    assert not np.array_equal(a, b)
    g.manual_seed(11)
    np.testing.assert_array_equal(genesis.random.rng_for(g).random(5), a)


def test_in_place_fills_on_cpu_follow_the_generator():
    g = genesis.Generator().manual_seed(3)
    a = genesis.empty(50).uniform_(-2, 5, generator=g).tolist()
    g.manual_seed(3)
    assert genesis.empty(50).uniform_(-2, 5, generator=g).tolist() == a
    assert all(-2 <= v < 5 for v in a)


N = 200_000


def _z(sample_mean, mean, var, n=N):
    return abs(sample_mean - mean) / math.sqrt(var / n)


def test_cpu_fills_have_the_right_moments():
    x = genesis.empty(N, dtype=genesis.float64)
    assert _z(x.uniform_(1, 3).numpy().mean(), 2.0, 1 / 3) < 6
    assert _z(x.normal_(-1, 2).numpy().mean(), -1.0, 4.0) < 6
    assert _z(x.exponential_(4.0).numpy().mean(), 0.25, 1 / 16) < 6
    assert _z(x.bernoulli_(0.2).numpy().mean(), 0.2, 0.16) < 6
    ints = genesis.empty(N, dtype=genesis.int64).random_(-3, 4).numpy()
    assert ints.min() == -3 and ints.max() == 3
    assert _z(ints.mean(), 0.0, 4.0) < 6


@pytest.mark.parametrize("dtype,top", [(genesis.uint8, 255), (genesis.bool, 1),
                                       (genesis.float16, 2 ** 11), (genesis.int16, 2 ** 15 - 1)])
def test_random_without_bounds_covers_the_dtype(dtype, top):
    values = genesis.empty(20000, dtype=dtype).random_().numpy().astype(np.float64)
    assert values.min() >= 0 and values.max() <= top
    assert values.max() > top / 2


def test_fill_on_a_view_writes_only_the_view():
    base = genesis.full((6, 9), -7.0)
    view = base[1::2, ::3]
    view.normal_()
    host = base.numpy()
    assert np.all(host[0::2] == -7.0)
    assert np.all(host[1::2][:, 1::3] == -7.0) and np.all(host[1::2][:, 2::3] == -7.0)
    assert np.all(host[1::2, ::3] != -7.0)


def test_bernoulli_with_a_probability_tensor_broadcasts():
    probs = genesis.tensor([0.0, 1.0, 0.0])
    out = genesis.empty(4, 3).bernoulli_(probs).numpy()
    assert np.all(out == np.array([0.0, 1.0, 0.0]))
    assert genesis.tensor([[0.0, 1.0]]).bernoulli().tolist() == [[0.0, 1.0]]


def test_fills_validate_their_arguments():
    x = genesis.empty(3)
    with pytest.raises(RuntimeError, match="from=2 > to=1"):
        x.uniform_(2, 1)
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        x.normal_(0, -1)
    with pytest.raises(RuntimeError, match="lambda > 0.0"):
        x.exponential_(0)
    with pytest.raises(RuntimeError, match="from=5 >= to=5"):
        x.random_(5, 5)
    with pytest.raises(RuntimeError, match="p to be in"):
        x.bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="must be in"):
        x.bernoulli_(genesis.tensor([0.5, 2.0, 0.1]))
    with pytest.raises(RuntimeError, match="floating point"):
        genesis.zeros(3, dtype=genesis.int64).uniform_()


def test_fill_gives_the_old_values_no_gradient():
    x = genesis.ones(4, requires_grad=True)
    y = x * 2
    y.uniform_()
    (y * 3).sum().backward()
    assert x.grad.tolist() == [0.0] * 4
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.normal_()
    with genesis.no_grad():
        x.normal_()
