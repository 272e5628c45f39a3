"""The values the reference-set metrics' options take, without the estimator (the command line lists them in
``--help``)."""

ALIGNMENT_CHOICES = ("auto", "on", "off")
