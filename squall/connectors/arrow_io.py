"""Reading and writing files with pyarrow, for connector tasks that cannot have a SparkSession.

A task of a topology on the Spark runtime runs inside a Spark executor's Python worker,
where no SparkSession can be started; there the Spark connectors read and write Parquet,
CSV and JSON (one object per line, as Spark writes it) with pyarrow instead. The layout is
Spark's: hive-style partition folders (``day=2024-01-01/``), names starting with ``_`` or
``.`` skipped, so either side reads what the other wrote. pyarrow is imported only here.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

FORMATS = ("parquet", "csv", "json")
_EXTENSIONS = {"parquet": ".parquet", "csv": ".csv", "json": ".json"}
_DDL_TYPES = {
    "string": "string", "varchar": "string", "char": "string",
    "long": "int64", "bigint": "int64", "int": "int32", "integer": "int32",
    "short": "int16", "smallint": "int16", "byte": "int8", "tinyint": "int8",
    "double": "float64", "float": "float32", "real": "float32",
    "boolean": "bool", "bool": "bool", "binary": "binary",
    "date": "date32", "timestamp": "timestamp[us]",
}


def check_format(fmt: str, who: str) -> None:
    """Refuse a format pyarrow cannot handle here, naming the choices."""
    if fmt not in FORMATS:
        raise ValueError(f"{who}: format {fmt!r} needs Spark; without a SparkSession (a task in a "
                         f"Spark executor) the formats are {', '.join(FORMATS)}")


def parse_ddl(ddl: str) -> Any:
    """A pyarrow schema from a Spark DDL string of simple types (``"id long, word string"``)."""
    import pyarrow as pa

    fields = []
    for part in (p.strip() for p in ddl.split(",")):
        m = re.fullmatch(r"`?(\w+)`?\s+(\w+)(?:\(\d+(?:,\s*\d+)?\))?", part)
        if not m or m.group(2).lower() not in _DDL_TYPES:
            raise ValueError(f"schema {ddl!r}: cannot read {part!r} without Spark (simple types "
                             f"only: {', '.join(sorted(_DDL_TYPES))})")
        fields.append(pa.field(m.group(1), pa.type_for_alias(_DDL_TYPES[m.group(2).lower()])))
    return pa.schema(fields)


def _uri(path: Path) -> str:
    # as Spark's inputFiles() names files: "=" of partition folders unescaped, spaces as %20
    return "file://" + quote(str(path.resolve()), safe="/=,+:@")


def list_files(path: str) -> list[str]:
    """The data files under ``path`` (a file or a folder), as ``file:`` URIs, sorted."""
    root = Path(path)
    if root.is_file():
        return [_uri(root)]
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        found += [_uri(Path(folder, f)) for f in files if not f.startswith(("_", "."))]
    return sorted(found)


def file_path(uri: str) -> str:
    """The local path of a ``file:`` URI (as ``list_files`` and Spark's inputFiles name files)."""
    return unquote(uri[len("file://"):]) if uri.startswith("file://") else uri


def _truthy(value: Any) -> bool:
    return str(value).lower() in ("true", "1", "yes")


def _file_format(fmt: str, options: dict, schema: Any) -> Any:
    import pyarrow.dataset as ds

    if fmt == "parquet":
        return ds.ParquetFileFormat()
    if fmt == "csv":
        import pyarrow.csv as pcsv

        # as Spark: no header by default; columns named by the schema, else _c0, _c1, ...
        header = _truthy(options.get("header", "false"))
        read = pcsv.ReadOptions(skip_rows=1 if header and schema is not None else 0,
                                column_names=schema.names if schema is not None else None,
                                autogenerate_column_names=not header and schema is None)
        parse = pcsv.ParseOptions(delimiter=str(options.get("sep", options.get("delimiter", ","))))
        # as Spark: an empty field is null
        convert = pcsv.ConvertOptions(column_types=schema, strings_can_be_null=True)
        return ds.CsvFileFormat(parse_options=parse, read_options=read, convert_options=convert)
    return ds.JsonFileFormat()


def read_rows(uri: str, base: str, fmt: str, options: dict, schema_ddl: str | None,
              batch_rows: int = 1024) -> Iterator[list]:
    """The rows of one file, in order, partition columns (from ``base``) last, as lists."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    schema = parse_ddl(schema_ddl) if schema_ddl else None
    files, fmt_obj = [file_path(uri)], _file_format(fmt, options, schema)
    where = {"partitioning": "hive", "partition_base_dir": str(Path(base).resolve())}
    dataset = ds.dataset(files, format=fmt_obj, **where)
    if schema is not None and fmt != "csv":
        # the given schema names the data columns; partition columns follow, as in Spark
        extra = [f for f in dataset.schema if f.name not in schema.names]
        dataset = ds.dataset(files, format=fmt_obj, schema=pa.schema(list(schema) + extra), **where)
    for batch in dataset.to_batches(batch_size=batch_rows):
        columns = [c.to_pylist() for c in batch.columns]
        yield from (list(row) for row in zip(*columns, strict=True))


def columns(path: str, fmt: str, options: dict, schema_ddl: str | None) -> list[str]:
    """The column names of the files under ``path`` (partition columns last)."""
    if schema_ddl:
        return list(parse_ddl(schema_ddl).names)
    files = list_files(path)
    if not files:
        raise ValueError(f"{path}: no data files to read the columns from; give fields=")
    import pyarrow.dataset as ds

    dataset = ds.dataset([file_path(files[0])], format=_file_format(fmt, options, None),
                         partitioning="hive", partition_base_dir=str(Path(path).resolve()))
    return list(dataset.schema.names)


def write_batch(rows: list[tuple], names: list[str], folder: Path, fmt: str,
                partition_by: list[str], options: dict, schema_ddl: str | None) -> None:
    """Write ``rows`` as a new dataset in ``folder`` (which must not exist), partitioned as Spark."""
    import pyarrow as pa

    schema = parse_ddl(schema_ddl) if schema_ddl else None
    if schema is not None:
        schema = pa.schema([pa.field(n, schema.field(i).type) for i, n in enumerate(names)])
    table = pa.Table.from_pylist([dict(zip(names, r, strict=True)) for r in rows], schema=schema)
    folder.mkdir(parents=True)
    groups: dict[tuple, list[int]] = {}
    keys = [table.column(c).to_pylist() for c in partition_by]
    for i, key in enumerate(zip(*keys, strict=True) if keys else ((),) * table.num_rows):
        groups.setdefault(tuple(key), []).append(i)
    data_names = [n for n in names if n not in partition_by]
    name = f"part-00000-{uuid.uuid4()}{_EXTENSIONS[fmt]}"
    for key, indices in groups.items():
        sub = folder.joinpath(*(f"{c}={_partition_text(v)}" for c, v in zip(partition_by, key,
                                                                              strict=True)))
        sub.mkdir(parents=True, exist_ok=True)
        part = table.take(indices).select(data_names)
        _write_file(part, sub / name, fmt, options)
    (folder / "_SUCCESS").touch()


def _partition_text(value: Any) -> str:
    return "__HIVE_DEFAULT_PARTITION__" if value is None else str(value)


def _write_file(table: Any, path: Path, fmt: str, options: dict) -> None:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, path, compression=options.get("compression", "snappy"))
    elif fmt == "csv":
        import pyarrow.csv as pcsv

        header = _truthy(options.get("header", "false"))
        pcsv.write_csv(table, path, pcsv.WriteOptions(
            include_header=header, delimiter=str(options.get("sep", options.get("delimiter", ",")))))
    else:
        with open(path, "w", encoding="utf-8") as out:
            for row in table.to_pylist():
                # Spark leaves out null fields
                out.write(json.dumps({k: v for k, v in row.items() if v is not None},
                                     default=str) + "\n")
