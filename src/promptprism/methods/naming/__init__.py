"""Names for findings, checked on held-out data: a namer proposes what one side does that the other doesn't,
a judge tests each candidate on samples the namer never saw (Fisher's exact test of yes/no answers, or a rank
test of scores; Holm over candidates)."""

from ...stats.two_sample import holm
from .clusters import cluster_pools, describe_clusters
from .contrast import ContrastName, NamingOptions, Sample, name_contrast
from .deviations import describe_deviations, deviation_modes, deviation_pools
from .facets import FACETS, CompletionJudge, Facet, FacetNamer
from .judges import ChatJudge, ChatNamer, EmbeddingJudge, Namer, as_namer, parse_yes_no, propose
from .length import LengthJudge, LengthNamer, length_name
from .modes import describe_modes, mode_pools
from .verify import RankSeparation, Separation, held_out_split, rank_separation, separation
from .words import LexicalJudge, WordNamer, word_log_odds

__all__ = ["FACETS", "ChatJudge", "ChatNamer", "CompletionJudge", "ContrastName", "EmbeddingJudge",
           "Facet", "FacetNamer", "LengthJudge", "LengthNamer", "LexicalJudge", "Namer", "NamingOptions",
           "RankSeparation", "Sample", "Separation", "WordNamer", "as_namer", "cluster_pools",
           "describe_clusters", "describe_deviations", "describe_modes", "deviation_modes", "deviation_pools",
           "held_out_split", "holm", "length_name", "mode_pools", "name_contrast", "parse_yes_no", "propose",
           "rank_separation", "separation", "word_log_odds"]
