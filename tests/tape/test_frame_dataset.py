"""A home's tapes exported as a hive-partitioned Parquet dataset, by increments, and read back by every engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import polars as pl
import pytest
from harness.homes import generated_home

from bub_nb.cli import main
from bub_nb.errors import ExportError, TapeError
from bub_nb.tape import open_tape, read_tapes
from bub_nb.tape.frames import COLUMNS
from bub_nb.tape.frames.dataset import STATE, export_dataset

pytestmark = pytest.mark.filterwarnings("ignore:.*not UTF-8")  # the generated homes hold a bad byte on purpose


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns of ``to_arrow()`` in a form two frames can be compared in, rows by tape and id."""
    out = frame[list(COLUMNS)].sort_values(["tape_name", "id"]).reset_index(drop=True)
    for column in ("payload", "meta", "tools"):
        out[column] = [json.dumps(value, sort_keys=True, default=list) for value in out[column].tolist()]
    out["kind"] = out["kind"].astype(str)
    out["tape_name"] = out["tape_name"].astype(str)
    return out


def grow(home: Path) -> dict[str, int]:
    """New entries on two tapes and a new tape, as a later day of work adds them; the last id of each."""
    names = sorted(path.stem for path in (home / "tapes").glob("*.jsonl"))
    grown = {}
    for name in (names[0], names[1]):
        tape = open_tape(name, home=home, create=False)
        tape.append_message({"role": "user", "content": "the next day"})
        grown[name] = tape.append_event("retract", {"ids": [[1, 1]], "reason": "later"}).id
    fresh = open_tape("late__tape", home=home)
    fresh.handoff("session/start")
    grown["late__tape"] = fresh.append_message({"role": "user", "content": "new here"}).id
    return grown


def test_a_second_export_adds_only_what_is_new_and_every_engine_reads_the_home(tmp_path: Path) -> None:
    home, out = generated_home(tmp_path / "home"), tmp_path / "dataset"
    first = export_dataset(out, home)
    assert first.rows == len(read_tapes(home)) and not first.rewritten
    grown = grow(home)
    second = export_dataset(out, home)
    assert second.rows == len(read_tapes(home)) - first.rows and sorted(second.grown) == sorted(grown)
    assert {path.name for path in first.files}.isdisjoint(path.name for path in second.files)  # nothing overwritten
    assert export_dataset(out, home).rows == 0

    ours = read_tapes(dataset=out)
    whole = read_tapes(home)
    pd.testing.assert_frame_equal(comparable(ours), comparable(whole), check_dtype=False)
    assert ours.retracted.any()  # an entry exported before the later retraction is retracted now
    assert list(ours.notebook) == list(whole.sort_values(["tape_name", "id"]).notebook)
    keys = set(zip(whole.tape_name, whole.id, strict=True))
    for name, last in grown.items():
        assert (name, last) in keys

    glob = str(out / "**" / "*.parquet")
    engine = duckdb.sql(
        f"SELECT tape_name, id, day, tape, kind FROM read_parquet('{glob}', hive_partitioning = true)"
    ).df()
    assert len(engine) == len(whole) and not engine.duplicated(["tape_name", "id"]).any()
    assert set(zip(engine.tape_name, engine.id, strict=True)) == keys
    assert (engine["tape"] == engine["tape_name"]).all()
    dated = whole.dropna(subset=["date"])
    days = dict(zip(zip(dated.tape_name, dated.id, strict=True), dated.date.dt.strftime("%Y-%m-%d"), strict=True))
    exported_days = zip(zip(engine.tape_name, engine.id, strict=True), engine.day, strict=True)
    assert all(pd.Timestamp(day).strftime("%Y-%m-%d") == days[key] for key, day in exported_days if key in days)
    polar = pl.scan_parquet(glob, hive_partitioning=True).select("tape_name", "id", "prompt_tokens").collect()
    assert polar.height == len(whole) and polar["prompt_tokens"].sum() == whole.prompt_tokens.sum()
    plain = pd.read_parquet(out)
    assert len(plain) == len(whole) and set(zip(plain.tape_name.astype(str), plain.id, strict=True)) == keys


def test_a_rewritten_tape_is_exported_anew_and_its_old_files_removed(tmp_path: Path) -> None:
    home, out = generated_home(tmp_path / "home", tapes=2), tmp_path / "dataset"
    export_dataset(out, home)
    name = sorted(path.stem for path in (home / "tapes").glob("*.jsonl"))[0]
    tape = open_tape(name, home=home, create=False)
    tape.reset(archive=True)  # ids start again at 1: the old rows are the archive's, not the tape's
    tape.append_message({"role": "user", "content": "after the reset"})
    done = export_dataset(out, home)
    assert done.rewritten == (name,) and name in done.describe()
    pd.testing.assert_frame_equal(comparable(read_tapes(dataset=out)), comparable(read_tapes(home)), check_dtype=False)
    exported = duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}/**/*.parquet') WHERE tape_name = '{name}'")
    assert exported.fetchall() == [(len(tape.read()),)]


HOSTILE = ["...", "x..y", "%", "%2F", "a=b", "tape=x", "ünïcødé", ".hidden", "_under", "a b", "a%2F..%2F..%2Fb"]


def test_hostile_tape_names_stay_inside_the_dataset_and_read_back_whole(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "nest" / "dataset"
    (home / "tapes").mkdir(parents=True)
    for name in HOSTILE:  # files Bub or a copy put there: names open_tape would refuse to make
        line = {"id": 1, "kind": "message", "payload": {"role": "user", "content": name}, "meta": {},
                "date": "2026-01-02T03:04:05+00:00"}  # fmt: skip
        (home / "tapes" / f"{name}.jsonl").write_text(json.dumps(line) + "\n")
    export_dataset(out, home)
    for path in tmp_path.rglob("*.parquet"):
        assert path.resolve().is_relative_to(out.resolve()), path
        assert path.parent.name.startswith("tape=") and path.parent.parent.name.startswith("day=")
    assert sorted(read_tapes(dataset=out).tape_name) == sorted(HOSTILE)
    glob = str(out / "**" / "*.parquet")
    engine = duckdb.sql(f"SELECT tape, tape_name FROM read_parquet('{glob}', hive_partitioning = true)").fetchall()
    assert sorted(engine) == sorted((name, name) for name in HOSTILE)
    assert sorted(pl.read_parquet(glob, hive_partitioning=True)["tape"]) == sorted(HOSTILE)


def test_a_slash_in_a_name_from_elsewhere_is_a_folder_name_not_a_path(tmp_path: Path) -> None:
    from bub_nb.tape.frames import dataset

    table = dataset._schema().empty_table()
    names = ["a/b", "../../escape", "/abs", ".."]
    rows = pd.DataFrame(
        {"tape_name": names, "id": range(1, len(names) + 1), "date": pd.Timestamp("2026-01-02", tz="UTC")}
    )
    import pyarrow as pa

    filled = pa.Table.from_pandas(rows, preserve_index=False)
    table = pa.table(
        {
            c: filled[c] if c in filled.column_names else pa.nulls(len(names), table.schema.field(c).type)
            for c in table.schema.names
        }
    ).cast(table.schema, safe=False)
    written = dataset._write(tmp_path / "out", "x", [table])
    assert sorted(tape for _, tape in written) == sorted(names)
    for relative, _ in written:
        path = (tmp_path / "out" / ".export-x" / relative).resolve()
        assert path.is_file() and path.is_relative_to((tmp_path / "out").resolve())
        assert len(Path(relative).parts) == 3


def test_a_folder_that_is_a_file_or_no_dataset_is_one_line_and_nothing_is_written(tmp_path: Path, capsys: Any) -> None:
    home = generated_home(tmp_path / "home", tapes=1)
    afile = tmp_path / "afile"
    afile.write_text("x")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    before = {path: path.read_bytes() for path in (home / "tapes").iterdir()}
    with pytest.raises(ExportError, match="is a file"):
        export_dataset(afile, home)
    with pytest.raises(ExportError, match=f"no {STATE}"):
        export_dataset(other, home)
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]
    with pytest.raises(TapeError, match="is a file"):
        read_tapes(dataset=afile)
    with pytest.raises(TapeError, match="not a tape dataset"):
        read_tapes(dataset=other)
    with pytest.raises(TapeError, match="No tape dataset"):
        read_tapes(dataset=tmp_path / "missing")
    assert main(["tapes", "export", "--dataset", str(afile), "--home", str(home)]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "afile" in error
    assert {path: path.read_bytes() for path in (home / "tapes").iterdir()} == before


def test_the_command_line_exports_by_increments(tmp_path: Path, capsys: Any) -> None:
    home, out = generated_home(tmp_path / "home", tapes=2), tmp_path / "dataset"
    assert main(["tapes", "export", "--dataset", str(out), "--home", str(home)]) == 0
    grow(home)
    assert main(["tapes", "export", "--dataset", str(out), "--home", str(home)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("Exported 7 new entries of 3 tape(s)") and "4 tape(s) unchanged" not in lines[-1]


def test_an_export_that_stopped_midway_is_undone_by_the_next(tmp_path: Path) -> None:
    home, out = generated_home(tmp_path / "home", tapes=2), tmp_path / "dataset"
    export_dataset(out, home)
    state = json.loads((out / STATE).read_text())
    stray = out / "day=2026-01-01" / "tape=ghost" / "part-stopped-0.parquet"
    stray.parent.mkdir(parents=True)
    stray.write_bytes((next(out.rglob("*.parquet"))).read_bytes())
    (out / STATE).write_text(json.dumps({**state, "pending": {"export": "stopped", "files": [
        stray.relative_to(out).as_posix()]}}))  # fmt: skip
    assert len(read_tapes(dataset=out)) == len(read_tapes(home))  # a reader sees only what was committed
    export_dataset(out, home)
    assert not stray.exists()


def test_a_dataset_reads_lean_and_in_every_form_a_home_does(tmp_path: Path) -> None:
    home, out = generated_home(tmp_path / "home", tapes=3), tmp_path / "dataset"
    export_dataset(out, home)
    lean = read_tapes(dataset=out, kinds=["anchor"], columns=["tape_name", "id", "phase"])
    assert list(lean.columns) == ["tape_name", "id", "phase"]
    pd.testing.assert_frame_equal(lean, read_tapes(home, kinds=["anchor"], columns=["tape_name", "id", "phase"]))
    polar = read_tapes(dataset=out, as_="polars")
    assert polar.height == len(read_tapes(home)) and "notebook" in polar.columns
    with pytest.raises(TapeError, match="dataset alone"):
        read_tapes(home, dataset=out)


def test_a_redacted_secret_leaves_the_dataset_with_the_next_export(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "dataset"
    tape = open_tape("notes", home=home)
    tape.append_message({"role": "user", "content": "hello"})
    pasted = tape.append_message({"role": "user", "content": "the door code is Biscuit-Thirty-Three"})
    holding = f"""SELECT count(*) FROM read_parquet('{out}/**/*.parquet')
                   WHERE content LIKE '%Biscuit-Thirty%' OR payload LIKE '%Biscuit-Thirty%'"""  # any file
    export_dataset(out, home)
    assert duckdb.sql(holding).fetchall() == [(1,)]
    tape.redact(pasted.id)
    done = export_dataset(out, home)
    assert done.rewritten == ("notes",)
    assert duckdb.sql(holding).fetchall() == [(0,)]
    assert sorted(read_tapes(dataset=out).id) == [entry.id for entry in tape.read()]
