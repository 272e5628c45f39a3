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


__all__ = ["ROUND_OFF", "clip_table", "clipped_notes"]
