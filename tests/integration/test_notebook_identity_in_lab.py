"""A notebook keeps its tape through rename, move, Duplicate, a copy of its project and a clone elsewhere: a real
Jupyter server changes the files through its REST API as JupyterLab does (contents ``PATCH`` to rename or move,
``POST`` with ``copy_from`` to duplicate) and starts each kernel for the notebook at its path (sessions API); the
turns run in that kernel against the local model server, and the notebook is saved with their outputs."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest
from harness.browser import JupyterLab, running_lab
from harness.kernel import Kernel, shown_text
from jupyter_client import BlockingKernelClient

from bub_nb.tape import open_tape, session_tape_name
from bub_nb.testing import OpenAICompatibleServer

pytestmark = pytest.mark.integration


def model_env(server: OpenAICompatibleServer) -> dict[str, str]:
    return {"BUB_MODEL": "openai:test-model", "BUB_API_BASE": server.base_url, "BUB_API_KEY": "test-key-not-secret"}


def new_notebook(lab: JupyterLab, path: str) -> None:
    lab.api(
        f"api/contents/{path}",
        "PUT",
        body={"type": "notebook", "format": "json", "content": nbformat.v4.new_notebook()},
    )


@contextmanager
def kernel_for(lab: JupyterLab, path: str) -> Iterator[Kernel]:
    """A kernel the server starts for the notebook at ``path`` (as opening it in JupyterLab does), with bub_nb."""
    session = lab.api(
        "api/sessions",
        "POST",
        body={"path": path, "name": Path(path).name, "type": "notebook", "kernel": {"name": "python3"}},
        timeout=30,
    )
    connection = lab.root.parent / "jupyter-runtime" / f"kernel-{session['kernel']['id']}.json"
    deadline = time.monotonic() + 30
    while not connection.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    client = BlockingKernelClient(connection_file=str(connection))
    client.load_connection_file()
    client.start_channels(hb=False)  # the server watches the kernel's heartbeat
    try:
        client.wait_for_ready(timeout=60)
        kernel = Kernel(client)
        kernel.ok("%load_ext bub_nb")
        yield kernel
    finally:
        client.stop_channels()
        lab.api(f"api/sessions/{session['id']}", "DELETE", timeout=30)


def turn(lab: JupyterLab, kernel: Kernel, path: str, prompt: str) -> str:
    """Run ``%%bub`` PROMPT and save the notebook with its output, as JupyterLab saves it; what the cell showed."""
    code = f"%%bub\n{prompt}"
    content, outputs = kernel.run(code)
    assert content["status"] == "ok", content.get("evalue")
    saved = lab.api(f"api/contents/{path}")["content"]
    notebook = nbformat.from_dict(saved)
    cell = nbformat.v4.new_code_cell(code)
    for output in outputs:
        if output["type"] in ("display_data", "update_display_data"):
            cell.outputs.append(nbformat.v4.new_output("display_data", output["data"], metadata=output["metadata"]))
    notebook.cells.append(cell)
    lab.api(f"api/contents/{path}", "PUT", body={"type": "notebook", "format": "json", "content": notebook})
    return shown_text(outputs)


def users(home: Path, tape: str) -> list[str]:
    entries = open_tape(tape, home=home, create=False).read()
    return [e.payload["content"] for e in entries if e.kind == "message" and e.payload.get("role") == "user"]


def tape_of(lab: JupyterLab, path: str) -> str:
    return session_tape_name((lab.root / path).parent, Path(path).name)


def sent(server: OpenAICompatibleServer) -> str:
    return json.dumps(server.requests[-1]["messages"])


def plan_then_rename(lab: JupyterLab) -> str:
    """A first turn in ``trip.ipynb``, the file renamed ``lisbon.ipynb``, and a turn there: what that turn showed."""
    new_notebook(lab, "trip.ipynb")
    with kernel_for(lab, "trip.ipynb") as kernel:
        turn(lab, kernel, "trip.ipynb", "Plan the trip to Lisbon")
    lab.api("api/contents/trip.ipynb", "PATCH", body={"path": "lisbon.ipynb"})
    with kernel_for(lab, "lisbon.ipynb") as kernel:
        return turn(lab, kernel, "lisbon.ipynb", "And the second day?")


def test_a_renamed_notebook_continues_its_tape_across_a_restart(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    home = tmp_path / "bub"
    with running_lab(tmp_path / "lab", [], home, model_env(openai_server)) as lab:
        shown = plan_then_rename(lab)
        assert "continues tape" in shown and "renamed or moved" in shown
        with kernel_for(lab, "lisbon.ipynb") as kernel:  # a restart: a new kernel for the same file
            shown = turn(lab, kernel, "lisbon.ipynb", "And the third day?")
        old = session_tape_name(lab.root, "trip.ipynb")
        assert users(home, old) == ["Plan the trip to Lisbon", "And the second day?", "And the third day?"]
        assert not (home / "tapes" / f"{tape_of(lab, 'lisbon.ipynb')}.jsonl").exists()
        assert "Plan the trip to Lisbon" in sent(openai_server) and "second day" in sent(openai_server)


def test_a_notebook_moved_to_another_folder_continues_its_tape(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    home = tmp_path / "bub"
    with running_lab(tmp_path / "lab", [], home, model_env(openai_server)) as lab:
        lab.api("api/contents/archive", "PUT", body={"type": "directory"})
        new_notebook(lab, "draft.ipynb")
        with kernel_for(lab, "draft.ipynb") as kernel:
            turn(lab, kernel, "draft.ipynb", "Outline the report")
        lab.api("api/contents/draft.ipynb", "PATCH", body={"path": "archive/draft.ipynb"})
        with kernel_for(lab, "archive/draft.ipynb") as kernel:
            shown = turn(lab, kernel, "archive/draft.ipynb", "Now the conclusion")
        assert "renamed or moved" in shown
        assert users(home, tape_of(lab, "draft.ipynb")) == ["Outline the report", "Now the conclusion"]
        assert "Outline the report" in sent(openai_server)


def test_a_duplicate_forks_the_originals_tape_and_the_two_stay_apart(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    home = tmp_path / "bub"
    with running_lab(tmp_path / "lab", [], home, model_env(openai_server)) as lab:
        new_notebook(lab, "analysis.ipynb")
        with kernel_for(lab, "analysis.ipynb") as kernel:
            turn(lab, kernel, "analysis.ipynb", "Load the sales data")
        copy = lab.api("api/contents", "POST", body={"copy_from": "analysis.ipynb"})["path"]
        assert copy == "analysis-Copy1.ipynb"
        with kernel_for(lab, copy) as kernel:
            shown = turn(lab, kernel, copy, "Try a log scale instead")
        assert "is a copy" in shown and "forked" in shown
        assert "Load the sales data" in sent(openai_server)  # the copy starts with the original's history
        with kernel_for(lab, "analysis.ipynb") as kernel:
            turn(lab, kernel, "analysis.ipynb", "Keep the linear scale")
        assert "log scale" not in sent(openai_server)  # no two notebooks' prompts in one request
        original, duplicate = tape_of(lab, "analysis.ipynb"), tape_of(lab, copy)
        assert users(home, original) == ["Load the sales data", "Keep the linear scale"]
        assert users(home, duplicate) == ["Load the sales data", "Try a log scale instead"]
        lineage = [json.loads(line) for line in (home / "tapes" / "session_graph.jsonl").read_text().splitlines()]
        assert any(r.get("parent") == original and r.get("child") == duplicate for r in lineage)


def test_a_copy_of_the_project_folder_forks_each_notebooks_tape(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    home = tmp_path / "bub"
    with running_lab(tmp_path / "lab", [], home, model_env(openai_server)) as lab:
        lab.api("api/contents/project", "PUT", body={"type": "directory"})
        new_notebook(lab, "project/model.ipynb")
        with kernel_for(lab, "project/model.ipynb") as kernel:
            turn(lab, kernel, "project/model.ipynb", "Fit the baseline")
        shutil.copytree(lab.root / "project", lab.root / "project-v2")
        with kernel_for(lab, "project-v2/model.ipynb") as kernel:
            shown = turn(lab, kernel, "project-v2/model.ipynb", "Fit with more features")
        assert "is a copy" in shown
        assert users(home, tape_of(lab, "project/model.ipynb")) == ["Fit the baseline"]
        assert users(home, tape_of(lab, "project-v2/model.ipynb")) == ["Fit the baseline", "Fit with more features"]


def test_a_clone_elsewhere_says_so_and_continue_own_settles_it(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    with running_lab(tmp_path / "there", [], tmp_path / "their-bub", model_env(openai_server)) as lab:
        new_notebook(lab, "study.ipynb")
        with kernel_for(lab, "study.ipynb") as kernel:
            turn(lab, kernel, "study.ipynb", "Their private question")
        theirs = tape_of(lab, "study.ipynb")
        cloned = tmp_path / "study.ipynb"
        shutil.copy(lab.root / "study.ipynb", cloned)
    home = tmp_path / "my-bub"
    with running_lab(tmp_path / "here", [cloned], home, model_env(openai_server)) as lab:
        with kernel_for(lab, "study.ipynb") as kernel:
            shown = turn(lab, kernel, "study.ipynb", "My first question")
            assert "does not have" in shown and "%tape continue --own" in shown and theirs in shown
            kernel.ok("%tape continue --own")
        with kernel_for(lab, "study.ipynb") as kernel:
            shown = turn(lab, kernel, "study.ipynb", "My second question")
        assert "Note:" not in shown
        assert users(home, tape_of(lab, "study.ipynb")) == ["My first question", "My second question"]
        assert "Their private question" not in sent(openai_server)
        kept = home / "notebooks" / f"{tape_of(lab, 'study.ipynb')}.json"
        assert kept.stat().st_mode & 0o777 == 0o600


def test_a_new_notebook_where_a_renamed_one_stood_starts_a_tape_of_its_own(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    home = tmp_path / "bub"
    with running_lab(tmp_path / "lab", [], home, model_env(openai_server)) as lab:
        plan_then_rename(lab)
        new_notebook(lab, "trip.ipynb")  # JupyterLab's next notebook, at the path the renamed one left
        with kernel_for(lab, "trip.ipynb") as kernel:
            shown = turn(lab, kernel, "trip.ipynb", "Budget for the office party")
        assert "went on with that one" in shown and "of its own" in shown
        assert "Lisbon" not in sent(openai_server) and "second day" not in sent(openai_server)
        with kernel_for(lab, "trip.ipynb") as kernel:  # a restart keeps the new notebook on its new tape
            shown = turn(lab, kernel, "trip.ipynb", "And the drinks?")
        assert "Note:" not in shown and "Budget for the office party" in sent(openai_server)
        assert "Lisbon" not in sent(openai_server)
        with kernel_for(lab, "lisbon.ipynb") as kernel:
            turn(lab, kernel, "lisbon.ipynb", "And the third day?")
        assert "office party" not in sent(openai_server) and "Plan the trip to Lisbon" in sent(openai_server)
        old = session_tape_name(lab.root, "trip.ipynb")
        assert users(home, old) == ["Plan the trip to Lisbon", "And the second day?", "And the third day?"]
        assert users(home, f"{old}-2") == ["Budget for the office party", "And the drinks?"]


def test_a_clone_with_its_attached_tape_continues_from_it(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    with running_lab(tmp_path / "there", [], tmp_path / "their-bub", model_env(openai_server)) as lab:
        new_notebook(lab, "study.ipynb")
        with kernel_for(lab, "study.ipynb") as kernel:
            turn(lab, kernel, "study.ipynb", "The sample holds 48 plots")
            kernel.ok("%tape attach")
        cloned = [tmp_path / "study.ipynb", tmp_path / "study.tape.jsonl"]
        for name in cloned:
            shutil.copy(lab.root / name.name, name)
    home = tmp_path / "my-bub"
    with running_lab(tmp_path / "here", cloned, home, model_env(openai_server)) as lab:
        with kernel_for(lab, "study.ipynb") as kernel:
            shown = turn(lab, kernel, "study.ipynb", "How many plots were there?")
        assert "continues from" in shown and "study.tape.jsonl" in shown
        assert "48 plots" in sent(openai_server)  # the model got the attached history
        with kernel_for(lab, "study.ipynb") as kernel:  # a restart: the tape is the home's own now
            shown = turn(lab, kernel, "study.ipynb", "And per hectare?")
        assert "Note:" not in shown
        mine = tape_of(lab, "study.ipynb")
        assert users(home, mine) == ["The sample holds 48 plots", "How many plots were there?", "And per hectare?"]
        ids = [e.id for e in open_tape(mine, home=home, create=False).read()]
        assert ids == list(range(1, len(ids) + 1))
