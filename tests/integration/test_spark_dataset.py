"""An exported tape dataset read by PySpark in local mode, as a team's cluster reads it, checked against the frame."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from harness.homes import generated_home
from harness.spark import SESSION, run_spark

from bub_nb.tape import read_tapes
from bub_nb.tape.frames.dataset import export_dataset

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore:.*not UTF-8")]

DAILY = (
    SESSION
    + """
import json, sys

tapes = spark.read.parquet(sys.argv[1])  # the hive folders as they are: day and tape found from the paths
tapes.createOrReplaceTempView("tapes")
tokens = spark.sql('''
    SELECT CAST(day AS STRING) AS day, sum(prompt_tokens) AS prompt, sum(completion_tokens) AS completion
    FROM tapes WHERE kind = 'event' AND name = 'run' GROUP BY day
''').collect()
failures = spark.sql('''
    SELECT CAST(day AS STRING) AS day, count(*) AS failed
    FROM (SELECT day, explode(from_json(payload, 'results ARRAY<STRING>').results) AS result
          FROM tapes WHERE kind = 'tool_result')
    WHERE get_json_object(result, '$.error') IS NOT NULL
       OR (get_json_object(result, '$.kind') IS NOT NULL AND get_json_object(result, '$.message') IS NOT NULL)
    GROUP BY day
''').collect()
names = spark.sql("SELECT DISTINCT tape, tape_name FROM tapes").collect()
print(json.dumps({
    "rows": tapes.count(),
    "tokens": {row.day: [row.prompt, row.completion] for row in tokens},
    "failures": {row.day: row.failed for row in failures},
    "names": sorted([row.tape, row.tape_name] for row in names),
}))
"""
)


def test_spark_reads_the_days_tokens_and_failures_the_frame_gives(tmp_path: Path) -> None:
    # Every call is answered and no tape copies another, so a failed call is one failed result Spark can count.
    home = generated_home(tmp_path / "home", tapes=8, steps=60, styles=("bub", "bub_nb"), outcomes=(
        "ok", "ok", "bub_failed", "bub_nb_failed", "error_key"), odd=False)  # fmt: skip
    out = tmp_path / "dataset"
    export_dataset(out, home)
    (home / "tapes" / "ünï %2F=x.jsonl").write_text(
        '{"id": 1, "kind": "message", "payload": {"role": "user", "content": "hi"}, "meta": {}, '
        '"date": "2025-11-05T10:00:00+00:00"}\n'
    )
    export_dataset(out, home)  # the second export adds the new tape only
    frame = read_tapes(home)

    spark = run_spark(DAILY, str(out))

    assert spark["rows"] == len(frame)
    usage = frame.tape.usage(by=[pd.Grouper(key="date", freq="D")])
    expected = {day.strftime("%Y-%m-%d"): [int(row.tokens_in), int(row.tokens_out)] for day, row in usage.iterrows()}
    assert spark["tokens"] == expected and len(expected) > 1
    calls = frame.tape.tool_calls()
    failed = calls[calls.ok == False]  # noqa: E712 - ok is a nullable boolean
    by_day = failed.groupby(failed.answered.dt.strftime("%Y-%m-%d")).size()
    assert spark["failures"] == {day: int(count) for day, count in by_day.items()} and by_day.sum() > 0
    assert ["ünï %2F=x"] in [[name] for _, name in spark["names"]]  # tape_name holds the name whole
