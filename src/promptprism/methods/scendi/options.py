"""The values Scendi's options take, without the estimator (the command line lists them in ``--help``)."""

#: Gamma* estimators: 'auto' = 'debiased' while G > rank(C_TT), else in-sample if 2 rank < n, else cross-fit
GAMMA_ESTIMATORS = ("auto", "in-sample", "debiased", "cross-fit")
INTERVAL_METHODS = ("auto", "jackknife", "basic")
