"""rangeprof.load: run records from any mix of JSON Lines files and Parquet datasets.

It stands above both readers, so that neither knows the other: frame.py reads JSON Lines
files, dataset.py reads and writes Parquet datasets (and reads JSON Lines through
frame.py when it converts them). Before, frame.load handed datasets to dataset.py, which
called frame.load back: the one import circle of the package."""
import os


def load(paths_or_globs, report="stderr", combine=None, derive=(), columns=None,
         filters=None):
    """Long-form DataFrame of every run record in the files (names, directories, globs;
    many processes and sessions together): one row per run and metric, as
    rangeprof.frame.load reads JSON Lines files (its report, combine, derive and columns).
    A Parquet dataset's directory (rangeprof-report --to-parquet) is read as its files
    were; filters ([(column, op, value), ...]: rangeprof.dataset) keeps the rows they
    match, pushed down into the dataset's reading. combine and derive read JSON Lines
    files only: with a dataset among the paths they raise ValueError naming it."""
    from rangeprof import dataset
    from rangeprof.frame import load as load_files
    parts = ([paths_or_globs] if isinstance(paths_or_globs, (str, os.PathLike))
             else list(paths_or_globs))
    if any(dataset.is_dataset(p) for p in parts):
        if combine or derive:
            raise ValueError("rangeprof.load: combine= and derive= read JSON Lines files, "
                             "not a Parquet dataset ('" + next(
                                 str(p) for p in parts if dataset.is_dataset(p)) +
                             "'): give the files it was converted from")
        return dataset.load_mixed(parts, report, columns, filters)
    df = load_files(paths_or_globs, report, combine, derive, columns)
    return dataset.filter_frame(df, filters) if filters else df
