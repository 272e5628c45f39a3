"""Scendi's estimates held to the ranges their population values lie in, and what was clipped, recorded.

The population split C_II = Lambda_T + Lambda_I has both parts positive semi-definite and Tr C_II = 1
(normalised kernels), so:

* the shares model_share = Tr Lambda_I and prompt_share = Tr Lambda_T lie in [0, 1];
* Scendi <= Vendi and Scendi_T <= Vendi. With T = Tr Lambda_I, C_II = T rho_I + (1 - T) rho_T for the
  unit-trace rho_I = Lambda_I / T and rho_T = Lambda_T / (1 - T), and appendix eq. 9's Scendi_I =
  T S(rho_I) (nats; S the von Neumann entropy), Scendi_T = (1 - T) S(rho_T). Concavity of S gives
  S(C_II) >= T S(rho_I) + (1 - T) S(rho_T), i.e. log Vendi >= Scendi_I + Scendi_T, and both are >= 0:
  each of exp(Scendi_I) and exp(Scendi_T) is at most Vendi (their product too).

The order-2 variants have no such bound (C_II = (delta + uniform over 100 directions) / 2: T H_2(rho_I) =
0.5 log 100 = 2.30 > H_2(C_II) = log(4 / 1.01) = 1.38), so they are left as estimated.

The in-sample estimator meets these by construction (a Schur complement of a PSD covariance). The debiased
one (W + c B, c > 1, :mod:`.debias`) and the cross-fitted one can leave them when the prompts explain little
of the outputs (Lambda_I^dfc can exceed C_II; an out-of-fold residual can exceed the output's variance):
measured on 100 sets of 40 prompts (30-d) x 5 outputs that barely depend on them, the default (debiased)
estimator's model_share > 1 in 46 (up to 1.082) and Scendi > Vendi in 28; the in-sample one's in none
(docs/scendi.md). :func:`clip_table` clips the estimate to its range and
:func:`clipped_notes` says so; the raw values stay in the result's ``clipped`` record (the intervals are
computed from them, since the replicates are the raw estimator's).
"""

from __future__ import annotations

import numpy as np

#: relative excess over a bound below which a clip is round-off and not recorded (the entropy's clamp of
#: zero eigenvalues at 1e-10 adds ~2e-9 nats per eigenvalue)
ROUND_OFF = 1e-6


def clip_table(table: dict) -> tuple[dict, dict]:
    """(the score table with its shares in [0, 1] and scendi, scendi_prompt at most vendi, the clipped
    record): the record maps each field moved by more than round-off to {'raw', 'reported', 'range'}; the
    ``entropies`` (nats) follow their scores."""
    out = dict(table)
    out["entropies"] = dict(table.get("entropies", {}))
    bounds = {"model_share": (0.0, 1.0), "prompt_share": (0.0, 1.0),
              "scendi": (1.0, table["vendi"]), "scendi_prompt": (1.0, table["vendi"])}
    clipped = {}
    for name, (low, high) in bounds.items():
        raw = float(table[name])
        value = min(max(raw, low), high)
        if value == raw:
            continue
        out[name] = value
        if name in out["entropies"]:
            out["entropies"][name] = min(float(out["entropies"][name]), float(out["entropies"]["vendi"]))
        if abs(raw - value) > ROUND_OFF * max(abs(value), 1.0):
            clipped[name] = {"raw": raw, "reported": value,
                             "range": "[0, 1]" if high == 1.0 else "[1, vendi]"}
    return out, clipped


def clipped_notes(clipped: dict, estimator: str) -> list[str]:
    """One line naming every clipped field with its raw value, and why (``estimator``: the Gamma* text)."""
    if not clipped:
        return []
    said = ", ".join(f"{k} {v['raw']:.4g} -> {v['reported']:.4g}" for k, v in clipped.items())
    return [f"clipped to the estimates' ranges: {said} (the {estimator.split(' (')[0]} estimator left them: "
            "shares lie in [0, 1] and Scendi, Scendi_T at most Vendi for the population split; the raw "
            "values are in 'clipped', the intervals come from them; this happens when the prompts explain "
            "little of the outputs)"]


#: C_II whose eigenvalues beyond the largest sum to at most this fraction of its trace spans one direction
#: (relative round-off of a rank-1 eigen-solve: ~1e-16 in float64, ~1e-7 in float32)
ONE_DIRECTION = {"float64": 1e-10, "float32": 1e-5}
#: the fields left undefined when the outputs have no diversity
SHARES = ("model_share", "prompt_share")
#: the note (warnings, CLI) when the shares are left undefined
NO_SPLIT_NOTE = ("model_share and prompt_share are not defined here: the outputs have no diversity (their "
                 "kernel covariance C_II spans one direction, Vendi = 1: every output embedding is the same "
                 "under the kernel), so there is nothing to split between the prompts and the model")


def no_output_diversity(output_eigenvalues: np.ndarray, precision: str = "float64") -> bool:
    """Whether C_II spans one direction: sum_{j >= 2} |l_j| <= tol sum_j |l_j| (l_1 the largest eigenvalue;
    tol :data:`ONE_DIRECTION` of the precision), i.e. Vendi = 1 up to round-off.

    Then Lambda_T and Lambda_I, PSD with Lambda_T + Lambda_I = C_II = u u^T, are both multiples of u u^T:
    Scendi = Scendi_T = Vendi = 1, and the shares only say how well the prompts predict the one output (its
    value depends on the prompts' mean, m^T C_TT^+ m in-sample, not on the model): no output diversity to
    attribute, so the shares are left undefined (NaN, null in result.json)."""
    lam = np.abs(np.asarray(output_eigenvalues, dtype=np.float64))
    total = float(lam.sum())
    return total > 0 and total - float(lam.max()) <= ONE_DIRECTION.get(precision, 1e-10) * total


def without_shares(table: dict) -> dict:
    """The score table of a set without output diversity: :data:`SHARES` NaN (undefined). Its Scendi and
    Scendi_T are at most Vendi = 1, as :func:`clip_table` has made them; an excess it clipped is the
    entropy's clamp of the zero eigenvalues (~2e-9 nats each), so the caller records no clip."""
    return {**table, **dict.fromkeys(SHARES, float("nan"))}


__all__ = ["NO_SPLIT_NOTE", "ONE_DIRECTION", "ROUND_OFF", "SHARES", "clip_table", "clipped_notes",
           "no_output_diversity", "without_shares"]
