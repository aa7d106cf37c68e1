"""The explanation stage: orientation and CF/SF categorisation, metrics, evaluation tables and figures."""
