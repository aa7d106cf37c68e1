"""``two_steps`` solved a block at a time: the same numbers as least squares on the whole design."""

from __future__ import annotations

import numpy as np
import pytest

from rmexplain.effects.base import Observations
from rmexplain.effects.estimators import (
    column_blocks,
    dose_spreads,
    length_design,
    two_steps,
    with_covariates,
    without_spanned,
)

N_COMPARISONS = 12


def _edits(seed: int = 0) -> Observations:
    """Edits of four attributes on 12 comparisons: a and b both ways (a with doses of 1–3 instances, in turn:
    three columns), c added only (one column), d both ways with one dose (two columns); two classes held
    equal."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(N_COMPARISONS):
        rows += [
            (c, 0, 1.0, float(1 + c % 3)),
            (c, 0, -1.0, -1.0),
            (c, 1, 1.0, 1.0),
            (c, 1, -1.0, -1.0),
        ]
        rows += [(c, 2, 1.0, 1.0), (c, 3, 1.0, 1.0), (c, 3, -1.0, -1.0)]
    comparison, attribute, sign, dose = (np.array(column) for column in zip(*rows, strict=True))
    length = rng.normal(size=len(rows))
    classes = rng.integers(-2, 3, size=(len(rows), 2)).astype(np.float64)
    value = 0.4 * sign * (attribute == 0) + 0.3 * length + classes @ [0.2, -0.1] + rng.normal(size=len(rows))
    return Observations(
        comparison.astype(np.int64), attribute.astype(np.int64), value, sign, length, dose, classes
    )


def _by_least_squares(obs: Observations, counts: np.ndarray) -> tuple[np.ndarray, float]:
    """The two steps by plain least squares on the whole design, each edit repeated by its comparison's
    count: γ with the classes, then the other columns on y − γ·Δℓ without them."""
    design, _ = length_design(obs)
    repeat = counts[obs.comparison]
    root = np.sqrt(repeat)[:, None]
    full = with_covariates(design, obs)
    gamma = np.linalg.lstsq(full * root, obs.value * root[:, 0], rcond=None)[0][-1]
    rest = np.linalg.lstsq(
        design[:, :-1] * root, (obs.value - gamma * obs.length_change) * root[:, 0], rcond=None
    )
    return rest[0], float(gamma)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_coefficient_and_the_slope_are_least_squares_on_the_whole_design(seed):
    obs = _edits(seed)
    design, _ = length_design(obs)
    counts = np.random.default_rng(seed + 10).multinomial(N_COMPARISONS, [1 / N_COMPARISONS] * N_COMPARISONS)
    weights = np.vstack([np.ones(N_COMPARISONS), counts]).astype(np.float64)
    coefficients, slopes = two_steps(obs, design, weights, N_COMPARISONS)
    for row, count in enumerate(weights):
        expected, gamma = _by_least_squares(obs, count)
        assert slopes[row] == pytest.approx(gamma, abs=1e-10)
        assert coefficients[row] == pytest.approx(expected, abs=1e-10)


def test_an_attribute_no_resample_draws_is_unidentified_and_the_others_are_not():
    """Attribute c's edits all come from comparisons 0 and 1; a resample without them leaves its one
    column unidentified (NaN), every other coefficient as least squares has it."""
    obs = _edits()
    keep = (obs.attribute != 2) | (obs.comparison < 2)
    obs = Observations(*(None if v is None else v[keep] for v in vars(obs).values()))
    design, columns = length_design(obs)
    weights = np.ones((1, N_COMPARISONS))
    weights[0, :2] = 0.0
    coefficients, slope = two_steps(obs, design, weights, N_COMPARISONS)
    assert np.isnan(coefficients[0, columns[2]])
    drawn = obs.comparison >= 2
    others = Observations(*(None if v is None else v[drawn] for v in vars(obs).values()))
    expected, gamma = _by_least_squares(others, np.ones(N_COMPARISONS))
    assert slope[0] == pytest.approx(gamma, abs=1e-10)
    assert np.delete(coefficients[0], columns[2]) == pytest.approx(expected, abs=1e-10)


def test_the_blocks_group_each_attributes_columns_in_order():
    obs = _edits()
    design, columns = length_design(obs)
    block, slot, of_attribute = column_blocks(obs.attribute, design[:, :-1])
    # numbered by first column: the intercepts of a, b and d come first; c, added only, has none
    assert [int(block[columns[a]]) for a in range(4)] == [0, 1, 3, 2]
    assert np.bincount(block).tolist() == [3, 2, 2, 1]  # a: intercept, β, dose; c: β alone
    assert sorted(slot[block == 0].tolist()) == [0, 1, 2]
    assert of_attribute == {0: 0, 1: 1, 3: 2, 2: 3}


def test_a_column_on_two_attributes_edits_is_refused():
    attribute = np.array([0, 0, 1, 1])
    shared_column = np.array([[1.0], [1.0], [1.0], [1.0]])
    with pytest.raises(ValueError, match="design column 0 is nonzero on the edits of 2 attributes"):
        column_blocks(attribute, shared_column)


def test_edits_that_do_not_inform_the_slope_are_fitted_at_the_others_slope():
    """Attribute d's edits marked out of the slope (``in_slope``): γ is least squares over the other
    attributes' edits alone, and d's coefficients are its own edits' fit at that γ."""
    obs = _edits()
    obs.in_slope = obs.attribute != 3
    design, columns = length_design(obs)
    coefficients, slope = two_steps(obs, design, np.ones((1, N_COMPARISONS)), N_COMPARISONS)
    others = Observations(*(None if v is None else v[obs.in_slope] for v in vars(obs).values()))
    _, gamma = _by_least_squares(others, np.ones(N_COMPARISONS))
    assert slope[0] == pytest.approx(gamma, abs=1e-10)
    mine = obs.attribute == 3
    own_columns = [j for j in range(design.shape[1] - 1) if np.any(design[mine, j])]
    by_hand = np.linalg.lstsq(
        design[mine][:, own_columns], obs.value[mine] - gamma * obs.length_change[mine], rcond=None
    )[0]
    assert coefficients[0, own_columns] == pytest.approx(by_hand, abs=1e-10)
    assert columns[3] in own_columns


def test_a_class_that_changes_only_in_edits_out_of_the_slope_is_left_out_of_it():
    """A third class that only attribute d's edits change, d out of the slope (as a discovery round's probe
    changes only in its own edits): no column for it, and γ and every coefficient as without it."""
    obs = _edits()
    obs.in_slope = obs.attribute != 3
    design, _ = length_design(obs)
    third = np.where(obs.attribute == 3, obs.sign * 2.0, 0.0)
    wider = Observations(*vars(obs).values())
    wider.covariates = np.column_stack([obs.covariates, third])
    held = with_covariates(design, wider)
    assert held.shape[1] == design.shape[1] + 2  # the two classes, not the third
    ones = np.ones((1, N_COMPARISONS))
    with_third, without = (
        two_steps(wider, design, ones, N_COMPARISONS),
        two_steps(obs, design, ones, N_COMPARISONS),
    )
    assert with_third[1][0] == without[1][0]
    assert np.array_equal(with_third[0], without[0], equal_nan=True)


def test_a_class_that_is_an_attributes_dose_is_left_out_and_the_slope_is_as_without_it():
    """A third class whose count changes only in attribute a's edits, by their dose (a probe's count in its
    own edits of a discovery round): it lies in the span of a's columns, holds nothing equal, and is left
    out — γ and every coefficient as without it, in every resample."""
    obs = _edits()
    design, _ = length_design(obs)
    wider = Observations(*vars(obs).values())
    wider.covariates = np.column_stack([obs.covariates, np.where(obs.attribute == 0, obs.dose, 0.0)])
    assert with_covariates(design, wider).shape[1] == design.shape[1] + 2
    weights = np.random.default_rng(1).multinomial(N_COMPARISONS, [1 / N_COMPARISONS] * N_COMPARISONS, 50)
    with_third = two_steps(wider, design, weights.astype(np.float64), N_COMPARISONS)
    without = two_steps(obs, design, weights.astype(np.float64), N_COMPARISONS)
    assert np.array_equal(with_third[1], without[1], equal_nan=True)
    assert np.array_equal(with_third[0], without[0], equal_nan=True)


def test_a_class_spanned_in_a_resample_has_its_row_of_the_schur_complement_set_to_zero():
    """In a resample a class may lie in the span of the drawn edits' columns although it does not in the
    whole sample: what is left of it is rounding (1e-15 of its own sum of squares, of either sign), which
    scaled to a unit diagonal would be noise as large as the real rows (LAPACK's eigh then failed to
    converge on one). Its row, column and right-hand side are set to 0; the others and the length, left to
    ``slope_unidentified`` even where as small, are kept."""
    gram = np.array([[[4.0, 1.0, 0.5], [1.0, 9.0, 2.0], [0.5, 2.0, 1.0]]])
    schur = np.array([[[2.0, 3e-16, 0.4], [3e-16, -9e-15, 1e-16], [0.4, 1e-16, 5e-12]]])
    right = np.array([[1.0, 2e-16, 0.3]])
    kept_schur, kept_right = without_spanned(schur, right, gram)
    assert np.array_equal(kept_schur[0, 1], [0.0, 0.0, 0.0]) and np.array_equal(
        kept_schur[0, :, 1], [0, 0, 0]
    )
    assert kept_schur[0, 0, 0] == 2.0 and kept_schur[0, 0, 2] == 0.4 and kept_schur[0, 2, 2] == 5e-12
    assert np.array_equal(kept_right, [[1.0, 0.0, 0.3]])


def test_a_slope_the_design_cannot_tell_from_the_directions_is_nan_and_the_classes_still_fitted():
    """Every edit's length change a function of its attribute and direction (Δℓ = p_a + q_a·s): γ is not
    identified (NaN, not the pseudo-inverse's number), while the two classes beside it are."""
    obs = _edits()
    offsets = np.array([0.3, -0.2, 0.5, 0.1])
    obs.length_change = offsets[obs.attribute] + 0.25 * obs.sign * (obs.attribute + 1)
    design, _ = length_design(obs)
    _, slope = two_steps(obs, design, np.ones((1, N_COMPARISONS)), N_COMPARISONS)
    assert np.isnan(slope[0])
    full = with_covariates(design, obs)
    assert np.linalg.matrix_rank(full[:, :-1]) == full.shape[1] - 1  # the classes are identified


def test_where_no_edit_changes_the_length_the_others_are_the_unadjusted_fit():
    obs = _edits()
    obs.length_change = np.zeros_like(obs.length_change)
    design, _ = length_design(obs)
    coefficients, slope = two_steps(obs, design, np.ones((1, N_COMPARISONS)), N_COMPARISONS)
    assert np.isnan(slope[0])
    plain = np.linalg.lstsq(design[:, :-1], obs.value, rcond=None)[0]
    assert coefficients[0] == pytest.approx(plain, abs=1e-10)


def test_no_resample_and_no_edit_give_empty_and_undefined_fits():
    obs = _edits()
    design, _ = length_design(obs)
    coefficients, slope = two_steps(obs, design, np.ones((0, N_COMPARISONS)), N_COMPARISONS)
    assert coefficients.shape == (0, design.shape[1] - 1) and slope.shape == (0,)
    none = Observations(*(None if v is None else v[:0] for v in vars(obs).values()))
    empty, _ = length_design(none)
    coefficients, slope = two_steps(none, empty, np.ones((2, N_COMPARISONS)), N_COMPARISONS)
    assert coefficients.shape == (2, 0) and np.isnan(slope).all()


def _lists_added(doses: list[tuple[int, int, float]]) -> Observations:
    """Edits that each add a list, one per comparison: per (count, items, reward change) that many edits of
    that many items with that change; no length change."""
    dose = np.concatenate([np.full(count, float(items)) for count, items, _ in doses])
    value = np.concatenate([np.full(count, change) for count, _, change in doses])
    n = dose.size
    return Observations(np.arange(n), np.zeros(n, dtype=np.int64), value, np.ones(n), np.zeros(n), dose)


def _per_instance(obs: Observations) -> float:
    design, columns = length_design(obs)
    return float(np.linalg.lstsq(design[:, :-1], obs.value, rcond=None)[0][columns[0]])


def test_a_dose_that_few_pairs_hold_gives_the_change_per_instance_not_a_slope_per_further_one():
    """One three-item list among twenty of two: a column per further item would rest on that one edit
    (δ = 3, and one item's effect extrapolated to 0 − 3 = −3). Its β column is the dose instead: the change
    per item by least squares through the origin, Σ y·d / Σ d² = 9 / (20·4 + 9)."""
    obs = _lists_added([(20, 2, 0.0), (1, 3, 3.0)])
    assert dose_spreads(obs) == {0: "linear"}
    design, columns = length_design(obs)
    assert design.shape[1] == 2  # β and the length change
    assert design[:, columns[0]].tolist() == obs.dose.tolist()
    assert _per_instance(obs) == pytest.approx(9 / 89)


def test_one_instance_never_edited_is_not_extrapolated_to():
    """Twenty lists of two items and five of three, none of one: one item's effect would be 2·y₂ − y₃ = −3,
    outside the doses edited; the change per item through all of them is 5·3·3 / (20·4 + 5·9)."""
    obs = _lists_added([(20, 2, 0.0), (5, 3, 3.0)])
    assert dose_spreads(obs) == {0: "linear"}
    assert _per_instance(obs) == pytest.approx(45 / 125)


def test_single_instances_and_a_dose_five_pairs_hold_get_the_further_instances_column():
    """Twenty single items (+1) and five lists of two (+3): the further item's column is in, δ = 2, and β
    is one item's, +1, as edited."""
    obs = _lists_added([(20, 1, 1.0), (5, 2, 3.0)])
    assert dose_spreads(obs) == {0: "varied"}
    design, columns = length_design(obs)
    assert design.shape[1] == 3
    assert design[:, columns[0]].tolist() == obs.sign.tolist()
    assert _per_instance(obs) == pytest.approx(1.0)
    assert dose_spreads(_lists_added([(20, 1, 1.0), (4, 2, 3.0)])) == {0: "linear"}  # four pairs: too few


def test_doses_of_one_size_per_direction_get_no_column_and_no_spread():
    """Twenty lists of two items and nothing else: no spread, the sign is β's column (no dose column)."""
    obs = _lists_added([(20, 2, 0.0)])
    assert dose_spreads(obs) == {}
    assert length_design(obs)[0].shape[1] == 2
