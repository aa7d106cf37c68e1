"""rmexplain: explain language reward models.

Contrastive explanations of reward-model preferences (Jiang et al., ICLR 2025) and
optimal/pessimal-token analyses (Christian et al.), as a library driven by a Snakemake workflow.
"""

__version__ = "0.1.0"
