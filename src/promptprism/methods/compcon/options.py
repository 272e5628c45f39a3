"""The values CompCon's options take, without the pipeline (the command line lists them in ``--help``)."""

#: where each attribute's threshold is calibrated: on model B's similarities ('reference') or on both
#: models' ('pooled')
NULL_SETS = ("reference", "pooled")
