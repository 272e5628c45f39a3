"""Names for findings, checked on held-out data: a namer proposes what one side does that the other doesn't,
a judge tests each candidate on samples the namer never saw (Fisher exact test, Holm over candidates)."""

from .clusters import cluster_pools, describe_clusters
from .contrast import ContrastName, NamingOptions, Sample, name_contrast
from .deviations import describe_deviations, deviation_modes, deviation_pools
from .judges import ChatJudge, ChatNamer, EmbeddingJudge, Namer, as_namer, parse_yes_no, propose
from .modes import describe_modes, mode_pools
from .verify import Separation, held_out_split, holm, separation
from .words import LexicalJudge, WordNamer, word_log_odds

__all__ = ["ChatJudge", "ChatNamer", "ContrastName", "EmbeddingJudge", "LexicalJudge", "Namer",
           "NamingOptions", "Sample", "Separation", "WordNamer", "as_namer", "cluster_pools",
           "describe_clusters", "describe_deviations", "describe_modes", "deviation_modes",
           "deviation_pools", "held_out_split", "holm", "mode_pools", "name_contrast",
           "parse_yes_no", "propose", "separation", "word_log_odds"]
