"""The values the regions method's options take, without the estimator (the command line lists them in
``--help``)."""

#: block estimators of the region CMS
BLOCK_ESTIMATORS = ("corrected", "paper")
