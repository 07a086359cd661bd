"""rangeprof/parquet_schema.py - what a part of the Parquet dataset holds (doc/records.md,
"The Parquet dataset"): the schema's version, the dataset's file names, its partition
columns, and each column with its Parquet type; and how a column of strings is written.
Both writers of a part read it here: dataset.py (from load()'s frame) and runcolumns.py
(straight from the run lines), so that neither imports the other's module back."""
from rangeprof import table

# 2: the ledger's lines are batches' (dataset.ledger()); the parts' columns are schema 1's. A
# reader of 1 would read a ledger of 2 as naming no part: it is refused there.
SCHEMA_VERSION = 2
MARKER = "_rangeprof_dataset.json"
LEDGER = "_rangeprof_sources.jsonl"
PARTITIONS = ("JobId", "Host")
# The columns of a part, as load() names them (the partition columns are in the paths),
# with their Parquet types; then one string column per config word (the key=value words of
# the range texts, listed in the part's metadata under rangeprof.config_columns).
STRING, INT, FLOAT = "string", "int64", "double"
COLUMNS = [(c, STRING if c in ("Annotation", "Kernel", "Metric", "Unit", "Launch", "Workload",
                               "RangeKernelNames", "Session", "GPU", "Grid", "Block",
                               "CacheControl", "ClockControl", "ThrottleReasons", "Time",
                               "File")
            else FLOAT if c in ("Value", "SMClock", "ComputeClock", "MemoryClock",
                                "Temperature")
            else INT)
           for c in table.ID_COLUMNS if c not in PARTITIONS]


def strings(pa, col):
    """A column as a pyarrow string array (null for None and NaN): a categorical as a
    dictionary array (its codes and categories: no string per row; the part stores it
    as Parquet's dictionary-encoded strings), other values each as str() gives them."""
    import numpy as np
    import pandas as pd
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = np.asarray(col.cat.codes, dtype=np.int32)
        cats = pa.array([None if v is None else str(v) for v in col.cat.categories], pa.string())
        return pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0), cats)
    values = col.to_numpy(dtype=object, na_value=None)
    return pa.array([None if v is None or (isinstance(v, float) and v != v) else str(v)
                     for v in values], pa.string())
