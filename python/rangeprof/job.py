"""rangeprof/job.py - the rank and job columns of a run, from its session record's "job"
member (doc/records.md, "Ranks and jobs"): JobId, Rank, LocalRank, WorldSize. One place
for the names, used by the record reader (table.py), load() (frame.py) and the Parquet
dataset (dataset.py). Standard library only."""

# In the order tables show them, after Host.
COLUMNS = ("JobId", "Rank", "LocalRank", "WorldSize")
# The session's job member behind each column.
MEMBERS = {"JobId": "id", "Rank": "rank", "LocalRank": "local_rank", "WorldSize": "world_size"}
INTEGER_COLUMNS = ("Rank", "LocalRank", "WorldSize")


def columns(session):
    """{column: value} of a session record (None where it has no job member, or the
    member is null: a file written before ranks were recorded, or no launcher)."""
    job = session.get("job") if isinstance(session, dict) else None
    if not isinstance(job, dict):
        return dict.fromkeys(COLUMNS)
    return {c: job.get(m) for c, m in MEMBERS.items()}
