"""The exercise checkers of notebooks 01-04: a correct solution passes, a plausible wrong one
fails, and the stub is "not attempted"."""

import numpy as np
import pytest

from course_utils.checks import nb01, nb02, nb03, nb04


def stub(*args):
    raise NotImplementedError


def require_3d(x):
    if x.ndim != 3:
        raise ValueError("expected (batch, seq, d)")


# --- correct solutions, written the way a learner would -------------------------------------


def last_token(x):
    require_3d(x)
    return x[:, -1, :]


def flatten_tokens(x):
    require_3d(x)
    b, n, d = x.shape
    return x.reshape(b * n, d)


def broadcast_shape(a, b):
    a, b = (1,) * (len(b) - len(a)) + tuple(a), (1,) * (len(a) - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b, strict=True):
        if x != y and 1 not in (x, y):
            raise ValueError(f"{x} vs {y}")
        out.append(max(x, y) if 0 not in (x, y) else 0)
    return tuple(out)


def matmul(a, b):
    if a.shape[1] != b.shape[0]:
        raise ValueError("inner sizes differ")
    c = np.zeros((a.shape[0], b.shape[1]), dtype=np.result_type(a, b))
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            c[i, j] = sum(a[i, p] * b[p, j] for p in range(a.shape[1]))
    return c


def cosine_similarity(a, b):
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        raise ValueError("zero vector")
    return float(a @ b / (na * nb))


def attention_scores(q, k):
    if q.shape[1] != k.shape[1]:
        raise ValueError("d_k differs")
    return q @ k.T


def is_eigenpair(a, v, lam):
    if not np.any(v):
        raise ValueError("zero vector")
    return bool(np.allclose(a @ v, lam * v))


def power_iteration(a, num_iters):
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError("square matrix expected")
    v = np.random.default_rng(0).standard_normal(a.shape[0])
    for _ in range(num_iters):
        v = a @ v
        v /= np.linalg.norm(v)
    return float(v @ a @ v)


def explained_variance_ratio(x):
    if x.shape[0] < 2:
        raise ValueError("need 2 points")
    values = np.linalg.eigvalsh(np.cov(x, rowvar=False))[::-1]
    if values.sum() <= 0:
        raise ValueError("no variance")
    return values / values.sum()


def variance(x, ddof):
    if len(x) - ddof <= 0:
        raise ValueError("too few values")
    return float(np.sum((x - x.mean()) ** 2) / (len(x) - ddof))


def standardize(x):
    mu = x.mean(axis=-1, keepdims=True)
    sigma = x.std(axis=-1, keepdims=True)
    if np.any(sigma == 0):
        raise ValueError("constant row")
    return (x - mu) / sigma


def empirical_frequencies(samples, n_categories):
    if len(samples) == 0 or samples.min() < 0 or samples.max() >= n_categories:
        raise ValueError("bad samples")
    return np.bincount(samples, minlength=n_categories) / len(samples)


# --- plausible mistakes ---------------------------------------------------------------------


def last_token_wrong_axis(x):
    require_3d(x)
    return x[:, :, -1]  # the last embedding coordinate, not the last token


def flatten_tokens_wrong_order(x):
    require_3d(x)
    b, n, d = x.shape
    return x.transpose(1, 0, 2).reshape(b * n, d)  # sequence-major: tokens shuffled


def broadcast_shape_left_aligned(a, b):
    n = max(len(a), len(b))
    a, b = tuple(a) + (1,) * (n - len(a)), tuple(b) + (1,) * (n - len(b))
    return tuple(max(x, y) for x, y in zip(a, b, strict=True))


def matmul_elementwise(a, b):
    if a.shape[1] != b.shape[0]:
        raise ValueError("inner sizes differ")
    return a * b


def cosine_without_norms(a, b):
    if not (np.any(a) and np.any(b)):
        raise ValueError("zero vector")
    return float(a @ b)


def attention_scores_transposed(q, k):
    if q.shape[1] != k.shape[1]:
        raise ValueError("d_k differs")
    return k @ q.T


def is_eigenpair_direction_only(a, v, lam):  # forgets to compare the eigenvalue
    if not np.any(v):
        raise ValueError("zero vector")
    w = a @ v
    return bool(abs(w @ v) == pytest.approx(np.linalg.norm(w) * np.linalg.norm(v)))


def power_iteration_norm_ratio(a, num_iters):  # |lambda| only: loses the sign
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError("square matrix expected")
    v = np.ones(a.shape[0])
    for _ in range(num_iters):
        v = a @ v
        v /= np.linalg.norm(v)
    return float(np.linalg.norm(a @ v))


def explained_variance_unsorted(x):
    if x.shape[0] < 2:
        raise ValueError("need 2 points")
    values = np.linalg.eigvalsh(np.cov(x, rowvar=False))  # ascending
    if values.sum() <= 0:
        raise ValueError("no variance")
    return values / values.sum()


def explained_variance_uncentred(x):
    if x.shape[0] < 2:
        raise ValueError("need 2 points")
    values = np.linalg.eigvalsh(x.T @ x / len(x))[::-1]
    if values.sum() <= 0:
        raise ValueError("no variance")
    return values / values.sum()


def variance_ignores_ddof(x, ddof):
    if len(x) == 0:
        raise ValueError("empty")
    return float(np.var(x))


def standardize_sample_std(x):
    mu = x.mean(axis=-1, keepdims=True)
    sigma = x.std(axis=-1, ddof=1, keepdims=True)
    if np.any(sigma == 0):
        raise ValueError("constant row")
    return (x - mu) / sigma


def standardize_global(x):
    if x.std() == 0:
        raise ValueError("constant")
    return (x - x.mean()) / x.std()


def frequencies_without_minlength(samples, n_categories):
    if len(samples) == 0 or samples.max() >= n_categories:
        raise ValueError("bad samples")
    return np.bincount(samples) / len(samples)


CHECKERS = {
    "last_token": (nb01.check_last_token, last_token, [last_token_wrong_axis]),
    "broadcast_shape": (nb01.check_broadcast_shape, broadcast_shape,
                        [broadcast_shape_left_aligned]),
    "flatten_tokens": (nb01.check_flatten_tokens, flatten_tokens, [flatten_tokens_wrong_order]),
    "matmul": (nb02.check_matmul, matmul, [matmul_elementwise]),
    "cosine_similarity": (nb02.check_cosine_similarity, cosine_similarity,
                          [cosine_without_norms]),
    "attention_scores": (nb02.check_attention_scores, attention_scores,
                         [attention_scores_transposed]),
    "is_eigenpair": (nb03.check_is_eigenpair, is_eigenpair, [is_eigenpair_direction_only]),
    "power_iteration": (nb03.check_power_iteration, power_iteration,
                        [power_iteration_norm_ratio]),
    "explained_variance_ratio": (nb03.check_explained_variance_ratio, explained_variance_ratio,
                                 [explained_variance_unsorted, explained_variance_uncentred]),
    "variance": (nb04.check_variance, variance, [variance_ignores_ddof]),
    "standardize": (nb04.check_standardize, standardize,
                    [standardize_sample_std, standardize_global]),
    "empirical_frequencies": (nb04.check_empirical_frequencies, empirical_frequencies,
                              [frequencies_without_minlength]),
}


@pytest.mark.parametrize("name", CHECKERS)
def test_correct_solution_passes(name):
    checker, solution, _ = CHECKERS[name]
    result = checker(solution)
    assert result.passed, result.cases


@pytest.mark.parametrize(
    ("name", "index"), [(n, i) for n, (_, _, wrong) in CHECKERS.items() for i in range(len(wrong))]
)
def test_plausible_mistake_is_caught(name, index):
    checker, _, wrong = CHECKERS[name]
    result = checker(wrong[index])
    assert result.status == "failed"
    assert any(not case.passed for case in result.cases)


@pytest.mark.parametrize("name", CHECKERS)
def test_stub_is_not_attempted(name):
    checker, _, _ = CHECKERS[name]
    result = checker(stub)
    assert result.status == "not attempted"
    assert "not attempted yet" in repr(result)


def test_checker_messages_name_the_problem(capsys):
    nb02.check_matmul(matmul_elementwise)
    printed = capsys.readouterr().out
    assert "✓ [[19, 22], [43, 50]]" not in printed
    assert "values differ" in printed or "shape" in printed
    nb03.check_power_iteration(power_iteration_norm_ratio)
    assert "✗ diag(-4, 1, 2): -4, sign kept" in capsys.readouterr().out
