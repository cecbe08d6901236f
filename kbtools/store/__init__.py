"""The store: the only package that touches a bank's files. One module per job:

    bank.py         create and open a bank, read its tables (a snapshot), reload, apply a transaction
    fresh.py        a bank made for one filling command, removed again when the command fails
    manifest.py     what a version names (``manifest.json``) and reading it
    segments.py     reading a table's segments and the keyed merge (latest ``_seq`` wins)
    rowindex.py     a table's rows by the value of one column, kept current by each write
    commit.py       writing a transaction's segments and the manifest swap: the commit point
    compaction.py   tail merges after a commit, full compaction, and the sweep of retired files
    usage.py        the per-process usage logs, merged by the next commit
    vectors.py      entry vectors, read in place from memory-mapped segments
    caches.py       derived values: files under ``cache/`` sealed with what they were built from,
                    fingerprints and the in-memory values of ``Bank.derived``
    sidecars.py     what a full compaction writes beside the base entries and edges segments
                    (display records, edge ends) for a fresh process's first query
    files.py        atomic writes, the paths a manifest may name, the kept manifests
    lock.py         the writers' lock
    scan.py         the door for other tools: polars LazyFrames, DuckDB, SQL
    check.py        every invariant of a bank, and whether a version's files are whole
    repair.py       roll a damaged bank back to its newest whole version, and say what that loses
    storage.py      how a bank lies on disk
    embed_cache.py  vectors by text hash, shared between banks

A bank is a folder::

    bank.json            what the folder is (format, version, when it was created)
    manifest.json        the current version: which segment files make up each table, the vector
                         segments and their embedder, the settings, the last commit
    tables/<table>/      immutable Parquet segments, one or more per table
    vectors/             memory-mappable .npy segments (entry vectors, one per search dimension;
                         a big segment stores each distinct vector once, with a code per entry)
    cache/               derived artefacts (the query and linker indexes, the linker's anchors,
                         layouts), each sealed with what it was built from
    usage/               the usage logs not yet merged
    manifests/           the last manifests, for ``kb repair``
    retired.jsonl        the files commits retired, for the sweep (after a grace period)
    .lock                the writers' lock file (flock); its text names the holder

A write is one transaction across tables: under the lock it re-reads the manifest (so it plans on
the latest state), writes new segment files (temp name, fsync, rename), then writes the next
manifest the same way and renames it over ``manifest.json``. The rename is the commit point: a
crash before it leaves the old manifest, and the orphan segments are swept later; a crash after it
leaves the new one. Readers only ever read a manifest and the immutable files it names, so they
never see half a write.

Every read of a bank file goes through one door per kind of file: the manifest
(:func:`~kbtools.store.manifest.parse_manifest`), table segments
(:func:`~kbtools.store.segments.read_segment`), vector files (:func:`~kbtools.store.vectors.load_npy`).
A file that is not what its commit wrote raises :class:`~kbtools.errors.BankDamaged` naming it and
saying to run ``kb check`` and ``kb repair``. Caches are derived: a damaged one is rebuilt, silently.
"""
