from rmexplain.evaluation import compute_distances
from rmexplain.hub import use_local_copies
from rmexplain.logs import script_logger
from rmexplain.schemas import COMPARISONS, DISTANCES, PERTURBATIONS, read_table, write_table

log = script_logger(snakemake)
use_local_copies(snakemake.input.get("hub", []), log)  # models fetched by download_model: cache only
frame = compute_distances(
    read_table(snakemake.input.comparisons, COMPARISONS, "comparisons"),
    read_table(snakemake.input.perturbations, PERTURBATIONS, "perturbations"),
    snakemake.params.settings,
    log,
)
write_table(frame, snakemake.output[0], DISTANCES, "distances")
