"""A command's JSON document as a dict, and its tables as pandas DataFrames."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

# The table `to_pandas()` gives without a name, by document (its `schema` without version).
_DEFAULT_TABLE = {
    "stepcast.info": "steps",
    "stepcast.replay": "steps",
    "stepcast.replay-ranks": "ranks",
    "stepcast.analyze": "steps",
    "stepcast.whatif": "phases",
    "stepcast.advise": "candidates",
    "stepcast.compare": "kernels.rows",
}


class Result(dict):
    """A ``stepcast ... --json`` document: a plain dict (``==`` to the parsed JSON), plus
    ``tables()`` and ``to_pandas()``."""

    @property
    def schema(self) -> str:
        """The document's kind and version, e.g. ``stepcast.analyze/1``."""
        return self.get("schema", "")

    def tables(self) -> List[str]:
        """The dotted paths of every list of records outside other lists, e.g.
        ``statistics.top_kernels``: the names ``to_pandas`` takes."""
        found: List[str] = []
        _find_tables(self, "", found)
        return found

    def to_pandas(self, table: Optional[str] = None) -> Any:
        """One table as a ``pandas.DataFrame``, a row per record, nested fields flattened
        into dotted columns. ``table`` is a dotted path from ``tables()``; by default the
        document's main one (the steps of ``replay`` and ``analyze``, the candidates of
        ``advise``...). Needs pandas."""
        try:
            import pandas
        except ImportError as error:
            raise ImportError(
                "to_pandas needs pandas: pip install pandas (or stepcast[pandas])"
            ) from error
        if table is None:
            table = _DEFAULT_TABLE.get(self.schema.split("/")[0])
            if table is None:
                tables = self.tables()
                if not tables:
                    raise KeyError(f"{self.schema} has no table")
                table = tables[0]
        records = _at(self, table)
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise KeyError(f"{table} is not a table of {self.schema}; its tables: {self.tables()}")
        return pandas.json_normalize(records)


def _find_tables(value: Any, path: str, found: List[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _find_tables(item, f"{path}.{key}" if path else key, found)
    elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        found.append(path)


def _at(document: Dict[str, Any], path: str) -> Any:
    value: Any = document
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            raise KeyError(f"{path} is not in the document; its tables: {_tables(document)}")
        value = value[key]
    return value


def _tables(document: Dict[str, Any]) -> List[str]:
    found: List[str] = []
    _find_tables(document, "", found)
    return found
