"""KID's and MMD's subset kernel sums read off the k-NN metrics' distance blocks (no product of their own).

The k-NN metrics (:mod:`.neighbours`) compute every squared distance within each set (the upper triangle)
and between the sets, in float32 GEMM blocks. A random subset pair of KID (Binkowski et al. 2018: s rows of
each set) needs kernel values at pairs of its own rows only, and every kernel here is a function of the
squared distance D_ab and of per-row terms:

* polynomial (KID): (gamma <a, b> + coef)^degree, <a, b> = (|a|^2 + |b|^2 - D_ab) / 2;
* gaussian: exp(-D_ab / (2 sigma^2)).

A pass centres its rows on c and scales them by a power of two s; its GEMM multiplies x = fl32(s (a - c))
by [-2 x, n^, 1] with n^ = fl32(|x|^2), so D~_ab = n^_a + n^_b - 2 <x_a, x_b> up to the product's rounding.
Then <a - c, b - c> = (n^_a + n^_b - D~_ab) / (2 s^2), and <a, b> adds q_a + q_b with q = <a - c, c> +
|c|^2 / 2 (float64, from the rows themselves: the rounding of x never meets |c|); D_ab = (D~_ab - d_a -
d_b) / s^2 with d = n^ - |x|^2, the rounding of each row's squared norm. Taking out the n^ the product put
in leaves only the product's own rounding, which averages out of the sums; a row's rounded norm would not
(it shifts all of the row's entries alike). The gaussian's exp(d_a / (2 sigma^2 s^2)) are per-row factors
(in the exponent, clipped at 0, where they could overflow: a bandwidth tiny against the rows' spread).

So each block visited gives, per subset, the entries whose row and column are both in the subset (a
gather), their kernel values in float64 and their weighted row and column sums: 2 s^2 entries per subset
pair whatever the sets' sizes, the element-wise work KID does after its own products, and none of the
products (100 x 2,000^2 x d flops at the defaults). The sums are :class:`.kernel_sums.KernelSums`, so MMD^2_u
and its variance parts follow as from :func:`.kernel_sums.kernel_sums`.

The blocks are over each set's *distinct* rows (in the order of its pass, :func:`.neighbours.own_radii`):
a subset's rows map to distinct positions with multiplicities c_u (a repeated row is the same position), its
off-diagonal pairs at one position are c_u (c_u - 1) copies of K(u, u), and the row sums are
sum_v c_v K(u, v) over the subset's positions (its diagonal included, as :class:`KernelSums`' row sums).
Within a set only entries above the diagonal of the pass's order are read (each pair once, for both its
row and its column).

The D values are float32 (the features' own precision, as KID's float32 Gram matrices for float32 features):
used for float32 features only (:func:`.kid.gather_subsets`); float64 features take :mod:`.kid`'s own float64
products.
Measured against float64 (10,000 rows a set, 2,048-d): KID within 9e-8 of its value, MMD^2 within 1e-7.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .kernel_sums import GAUSSIAN_FACTORED_MAX_H, KernelSums, SubsetKernel

#: the sides of the blocks: KID's first set (the generated rows) and its second (the reference)
SIDES = ("generated", "reference")
#: the subset kernels the distances give (the cosine needs the rows' own norms in each entry: not fused)
FUSED_KINDS = ("polynomial", "gaussian")


def fusable(kernels: Sequence[SubsetKernel]) -> bool:
    """Whether these kernels can be read off the distance blocks: polynomial and gaussian only (the features
    must also be float32: :func:`.kid.gather_subsets` asks :func:`.kid.gram_precision`)."""
    return all(k.kind in FUSED_KINDS for k in kernels)


def gather(block: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``block[np.ix_(rows, cols)]``, by ``take`` (of the flat array when it is contiguous: 2.5 -> 1.3 ns
    an entry)."""
    if block.flags.c_contiguous:
        return block.reshape(-1).take((rows[:, None] * block.shape[1] + cols).reshape(-1)).reshape(
            rows.size, cols.size)
    return block.take(rows, axis=0).take(cols, axis=1)


@dataclass(frozen=True)
class PassTerms:
    """Per row of one pass (module docstring): ``nhat`` = n^ and ``delta`` = n^ - |x|^2 (scaled units),
    ``q`` = <a - c, c> + |c|^2 / 2 and ``sq`` = |a - c|^2 (the rows' units, float64 from the rows
    themselves); ``unit`` = 1 / s^2."""

    nhat: np.ndarray
    delta: np.ndarray
    q: np.ndarray
    sq: np.ndarray
    unit: float


def pass_terms(x32: np.ndarray, nhat32: np.ndarray, centred: Callable[[int, int], np.ndarray],
               shift: np.ndarray, scale: float, *, factor: float = 1.0, sq: np.ndarray | None = None,
               chunk: int = 1024) -> PassTerms:
    """:class:`PassTerms` of the rows whose GEMM operand is x = ``factor`` x ``x32`` (float32, x =
    fl32(``scale`` (a - ``shift``)); ``factor`` -1/2 reads a form's -2 x exactly) with squared norms
    ``nhat32``; ``centred(lo, hi)``: rows lo..hi of a - c in float64; ``sq``: their |a - c|^2 when known."""
    n = x32.shape[0]
    exact, q = np.empty(n), np.empty(n)
    known = sq is not None
    sq = np.asarray(sq, dtype=np.float64) if known else np.empty(n)
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        part = np.asarray(x32[lo:hi], dtype=np.float64) * factor
        np.einsum("ij,ij->i", part, part, out=exact[lo:hi])
        rows = centred(lo, hi)
        np.matmul(rows, shift, out=q[lo:hi])
        if not known:
            np.einsum("ij,ij->i", rows, rows, out=sq[lo:hi])
    nhat = np.asarray(nhat32, dtype=np.float64)
    return PassTerms(nhat, nhat - exact, q + 0.5 * float(shift @ shift), sq, 1.0 / scale**2)


def form_terms(form: Any) -> PassTerms:
    """:class:`PassTerms` of a :class:`.neighbours.Form`'s rows (its operand R = [-2 x, n^, 1], its centre,
    scale and float64 |a - c|^2)."""
    d = form.right.shape[1] - 2
    return pass_terms(form.right[:, :d], form.right[:, d],
                      lambda lo, hi: form.rows.block(lo, hi) - form.shift, form.shift, form.scale,
                      factor=-0.5, sq=form.sq)


@dataclass
class _Side:
    """One set's subsets as positions of a pass over its distinct rows: per subset the sorted positions
    ``pos``, their multiplicities ``count``, each member's index into ``pos`` (``member``), each position's
    distinct row (``rows``); per kernel and subset the sums accumulated over ``pos`` (``acc[q][s]``)."""

    pos: list[np.ndarray]
    count: list[np.ndarray]
    member: list[np.ndarray]
    rows: list[np.ndarray]
    acc: list[list[np.ndarray]]
    adds: list[list[np.ndarray]] = field(default_factory=list)


class SubsetGather:
    """The kernel sums of ``kernels`` on KID's subset pairs (``subsets``: (rows of x, rows of y) pairs, as
    :func:`.kid.subset_indices`; x the generated set, y the reference) in ``dim`` dimensions, accumulated
    from distance blocks: :meth:`own_visitor` for each set's upper triangle, :meth:`cross_visitor` for the
    blocks between them, then :meth:`sums`."""

    def __init__(self, dim: int, kernels: Sequence[SubsetKernel],
                 subsets: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
        self.kernels = list(kernels)
        self.subsets = list(subsets)
        self.dim = int(dim)
        self.inverse: dict[str, np.ndarray] = {}
        self.terms: dict[str, PassTerms] = {}
        self.own: dict[str, _Side] = {}
        self.cross: tuple[_Side, _Side] | None = None
        self._lock = threading.Lock()

    def _gamma(self, k: SubsetKernel) -> float:
        return 1.0 / self.dim if k.gamma is None else float(k.gamma)

    def _row_terms(self, k: SubsetKernel, t: PassTerms, at: np.ndarray | slice) -> np.ndarray:
        """Kernel ``k``'s per-row addend to its argument for rows ``at`` of a pass (module docstring): the
        polynomial's gamma (n^ / (2 s^2) + q) + coef / 2, the gaussian's d / (2 sigma^2 s^2)."""
        if k.kind == "gaussian":
            return t.delta[at] * (0.5 * t.unit / k.sigma**2)
        return self._gamma(k) * (0.5 * t.unit * t.nhat[at] + t.q[at]) + 0.5 * k.coef

    def _weighted_sums(self, d2: np.ndarray, unit: float, terms: list[tuple[np.ndarray, np.ndarray]],
                       w_rows: np.ndarray, w_cols: np.ndarray, upper: int = 0
                       ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per kernel, (sum_j K_ij w_cols[j], sum_i w_rows[i] K_ij) on the float32 block ``d2`` of a pass of
        unit 1 / s^2 (the kernels in float64), its rows' and columns' terms ``terms`` (:meth:`_row_terms`);
        ``upper`` > 0: the block's first ``upper`` columns are its rows, and only the entries above the
        diagonal of that square are read."""
        below = np.tri(upper, dtype=bool) if upper else None
        out = []
        for k, (rows, cols) in zip(self.kernels, terms, strict=True):
            scale = -0.5 * unit / k.sigma**2 if k.kind == "gaussian" else -0.5 * self._gamma(k) * unit
            v = np.multiply(d2, scale, dtype=np.float64)
            factors = None
            if k.kind == "gaussian" and max(np.abs(rows).max(initial=0.0),
                                            np.abs(cols).max(initial=0.0)) <= GAUSSIAN_FACTORED_MAX_H:
                factors = np.exp(rows), np.exp(cols)  # exp(-D~ / (2 sigma^2 s^2)) times e^(t_i) e^(t_j)
                np.exp(v, out=v)
            else:
                v += rows[:, None]
                v += cols
                if k.kind == "gaussian":  # (terms too large for factors: in the exponent, clipped at 0)
                    np.exp(np.minimum(v, 0.0, out=v), out=v)
                elif k.degree == 3:
                    v *= np.square(v)
                else:
                    v = np.power(v, k.degree, out=v)
            if below is not None:
                v[:, :upper][below] = 0.0
            if factors is None:
                out.append((v @ w_cols, w_rows @ v))
            else:
                fr, fc = factors
                out.append(((v @ (w_cols * fc)) * fr, ((w_rows * fr) @ v) * fc))
        return out

    def _diagonal(self, k: SubsetKernel, t: PassTerms, rows: np.ndarray) -> np.ndarray:
        """The kernel of each of ``rows`` with itself: gaussian 1, polynomial at |a|^2 = |a - c|^2 + 2 q."""
        if k.kind == "gaussian":
            return np.ones(rows.size)
        inner = t.sq[rows] + 2.0 * t.q[rows]
        return (self._gamma(k) * inner + k.coef) ** k.degree

    def _side(self, side: str, order: np.ndarray | None) -> _Side:
        """The subsets of ``side`` as positions of a pass whose position p holds distinct row ``order[p]``
        (None: the distinct rows in their own order)."""
        inverse = self.inverse[side]
        at = None
        if order is not None:
            at = np.empty(order.size, dtype=np.int64)
            at[order] = np.arange(order.size)
        which = SIDES.index(side)
        pos, count, member, rows = [], [], [], []
        for pair in self.subsets:
            distinct = inverse[pair[which]]
            p = distinct if at is None else at[distinct]
            u, first, back, c = np.unique(p, return_index=True, return_inverse=True, return_counts=True)
            pos.append(u)
            count.append(c.astype(np.float64))
            member.append(back.reshape(-1))
            rows.append(distinct[first])
        return _Side(pos, count, member, rows, [[np.zeros(u.size) for u in pos] for _ in self.kernels])

    def own_visitor(self, side: str, inverse: np.ndarray, form: Any
                    ) -> Callable[[np.ndarray | None], Callable[[np.ndarray, int], None]]:
        """``visit`` for :func:`.neighbours.own_radii` of ``side``'s distinct rows (``form``: their
        :class:`.neighbours.Form`; ``inverse``: each original row's distinct row): given the pass's order
        (position p holds distinct row ``order[p]``, None: p), a function of each block of ``form.scale``^2 D
        between positions lo.. and lo.. (rows, then columns)."""
        self.inverse[side] = np.asarray(inverse)
        self.terms[side] = terms = form_terms(form)

        def start(order: np.ndarray | None) -> Callable[[np.ndarray, int], None]:
            made = self.own[side] = self._side(side, order)
            made.adds = [[self._row_terms(k, terms, r) for r in made.rows] for k in self.kernels]
            return lambda d2, lo: self._own_block(made, d2, lo, terms.unit)

        return start

    def _own_block(self, side: _Side, d2: np.ndarray, lo: int, unit: float) -> None:
        """A block of the upper triangle: entries above the diagonal count for their row and column."""
        hi, end = lo + d2.shape[0], lo + d2.shape[1]
        for s, pos in enumerate(side.pos):
            a, b, e = np.searchsorted(pos, (lo, hi, end))
            if a == b:
                continue
            block = gather(d2, pos[a:b] - lo, pos[a:e] - lo)
            terms = [(add[s][a:b], add[s][a:e]) for add in side.adds]
            sums = self._weighted_sums(block, unit, terms, side.count[s][a:b], side.count[s][a:e], b - a)
            for q, (row_sums, col_sums) in enumerate(sums):
                acc = side.acc[q][s]
                acc[a:b] += row_sums
                acc[a:e] += col_sums

    def cross_visitor(self, form: Any) -> Callable[[np.ndarray, int, np.ndarray, np.ndarray], None]:
        """A function (block, lo, centred, left) for :func:`.neighbours.memberships`: ``form.scale``^2 D
        between the generated set's distinct rows lo.. (``centred``: those rows less the reference's
        centre, float64; ``left``: their GEMM operand [x, 1, n^]) and every distinct reference row
        (``form``: the reference's :class:`.neighbours.Form` at that scale), each set's rows in their own
        order."""
        d = form.right.shape[1] - 2
        gen, ref = self._side("generated", None), self._side("reference", None)
        ref_terms = form_terms(form)
        ref_adds = [[self._row_terms(k, ref_terms, r) for r in ref.rows] for k in self.kernels]
        self.cross = (gen, ref)
        pending: dict[int, tuple[int, list]] = {}  # (blocks done, by their first row, not yet added)
        state = {"next": 0}

        def visit(d2: np.ndarray, lo: int, centred: np.ndarray, left: np.ndarray) -> None:
            hi = lo + d2.shape[0]
            terms = pass_terms(left[:, :d], left[:, d + 1], lambda a, b: centred[a:b], form.shift, form.scale)
            cols = []
            for s, pos in enumerate(gen.pos):
                a, b = np.searchsorted(pos, (lo, hi))
                if a == b:
                    continue
                block = gather(d2, pos[a:b] - lo, ref.pos[s])
                row_terms = [(self._row_terms(k, terms, pos[a:b] - lo), ref_add[s])
                             for k, ref_add in zip(self.kernels, ref_adds, strict=True)]
                sums = self._weighted_sums(block, terms.unit, row_terms, gen.count[s][a:b], ref.count[s])
                for q, (row_sums, col_sums) in enumerate(sums):
                    gen.acc[q][s][a:b] = row_sums
                    cols.append((q, s, col_sums))
            with self._lock:  # the reference's sums gather every block's, in the blocks' order (the same
                pending[lo] = (hi, cols)  # sums whatever the threads' timing)
                while state["next"] in pending:
                    state["next"], done = pending.pop(state["next"])
                    for q, s, col in done:
                        ref.acc[q][s] += col

        return visit

    def sums_for(self, subsets: Sequence[tuple[np.ndarray, np.ndarray]], kernels: Sequence[SubsetKernel]
                 ) -> list[list[KernelSums]]:
        """:meth:`sums`, once it is known that they are of these ``subsets`` and ``kernels`` and that the
        blocks were visited (else a ValueError: the gather was made for other arguments)."""
        same = len(subsets) == len(self.subsets) and all(
            np.array_equal(a, b) for pair, mine in zip(subsets, self.subsets, strict=True)
            for a, b in zip(pair, mine, strict=True))
        if not same or list(kernels) != self.kernels or self.cross is None:
            raise ValueError("these subset sums were gathered for other subsets or kernels, or their "
                             "blocks were not visited: pass the gather made by gather_subsets with the same "
                             "arguments through neighbour_indicators first")
        return self.sums()

    def sums(self) -> list[list[KernelSums]]:
        """Per subset pair, per kernel, the :class:`KernelSums` of its rows (in the subsets' row order)."""
        gen_x, ref_x = self.cross
        # (a set of one distinct row has no block: its sums are its diagonal's)
        sides = {name: self.own[name] if name in self.own else self._side(name, None) for name in SIDES}
        out = []
        for s in range(len(self.subsets)):
            per = []
            for q, k in enumerate(self.kernels):
                parts = []
                for name, side in sides.items():
                    diag = self._diagonal(k, self.terms[name], side.rows[s])
                    full = side.acc[q][s] + side.count[s] * diag
                    parts += [full[side.member[s]], diag[side.member[s]]]
                per.append(KernelSums(*parts, gen_x.acc[q][s][gen_x.member[s]],
                                      ref_x.acc[q][s][ref_x.member[s]]))
            out.append(per)
        return out
