"""Fixtures shared by the tests that talk to the local OpenAI-compatible fake, and the trail
check every offline Turn of the tests goes through."""
import os
import sys
from pathlib import Path

import pytest

from tests import prefork

# Bytecode written during the collection even where the environment says not to write any (this
# machine's image sets PYTHONDONTWRITEBYTECODE=1): without it every worker compiled and rewrote
# the ~120 test modules again (collection 16 s instead of 8-9). Only while collecting: a test that
# edits a module and runs it again within the same second, at the same size, would otherwise run
# the bytecode of the edit (a pyc is checked by mtime in whole seconds and size). Into the usual
# `__pycache__` folders, not a PYTHONPYCACHEPREFIX: with a prefix an interpreter reads no
# `__pycache__`, so a fresh clone's workers compiled every installed package they import again
# (a fresh clone's suite: 335 s against 279 s for a warm one). The commands the tests start get
# this repository's bytecode compiled once, by the controller, before any worker starts
# (tests/bytecode.py).
_NO_BYTECODE = sys.dont_write_bytecode
if _NO_BYTECODE:
    sys.dont_write_bytecode = False
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        from tests.bytecode import compile_tree

        compile_tree(Path(__file__).resolve().parents[1])


def pytest_collection_finish(session):
    if _NO_BYTECODE:
        sys.dont_write_bytecode = True
    _start_building_the_fresh_venv(session)


def _start_building_the_fresh_venv(session):
    """test_standalone's wheel and fresh venv (~25 s, mostly pip) are built in the background
    from the end of collection, by one worker, under the lock its fixtures take
    (tests/standalone_helpers.py:built_once): the workers that reach those tests find it made or
    wait less, instead of each waiting on the lock with nothing to do."""
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":
        return
    items = [item for item in session.items if item.path.stem == "test_standalone"]
    if not items:
        return
    import threading

    from tests.standalone_helpers import shared_venv, shared_wheel

    factory = session.config._tmp_path_factory
    factory.getbasetemp()  # made here, not by two threads at once
    plugin = items[0].module.PLUGIN

    def build():
        try:
            shared_venv(factory, shared_wheel(factory), plugin)
        except Exception:  # noqa: BLE001 - the fixtures build it again and fail there, visibly
            pass

    threading.Thread(target=build, name="fresh-venv", daemon=True).start()

# pytest-xdist's workers get COLUMNS=80, which rich (in process and in the commands the tests
# start) would wrap paths and ids at; a run without xdist has no COLUMNS when piped.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)


@pytest.fixture(scope="session", autouse=True)
def memo_of_this_run(tmp_path_factory):
    """The statements' disk memo (turngate/gate/memo.py) of this test run, shared by its xdist
    workers and the commands they start, never a developer's ~/.cache/turngate."""
    if "TURNGATE_CACHE_DIR" not in os.environ:
        base = tmp_path_factory.getbasetemp()
        shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
        os.environ["TURNGATE_CACHE_DIR"] = str(shared / "turngate-memo")
    yield


@pytest.fixture(scope="session", autouse=True)
def offline_turns_match_their_trail():
    """Every Turn the offline model gives in any test says only what its trail shows (issue 37,
    tests/offline_trail.py). Left out: a prompt that says to report every request as done (the
    model follows it: `ReportDone(True)`), and above temperature 0 the seeded false_success slip
    (a refused refund told as done), which exists to misbehave (docs/offline-model.md)."""
    from app.refund_agent import client
    from app.refund_agent.models import parse_spec
    from app.refund_agent.offline.policy import parse_policy
    from tests.offline_trail import misstatements

    original = client.Conversation.turn

    async def checked(self):
        turn = await original(self)
        spec = parse_spec(self.model_spec)
        if spec.provider == "offline" and not turn.error and not parse_policy(self.spec.instructions).report_done:
            bad = misstatements(turn)
            if _temperature(self.model_spec) > 0:
                # the false_success slip: a refund the tool refused, told as done
                tried = any(c.name == "refund_order" for c in turn.tool_calls)
                bad = [b for b in bad if not (tried and b.startswith("claims refund"))]
            assert not bad, f"the offline model misstates its trail: {bad} (turn: {turn.messages})"
        return turn

    client.Conversation.turn = checked
    yield
    client.Conversation.turn = original


def _temperature(model_spec: str) -> float:
    """The offline model's temperature from its spec ("offline:temperature=0"; 0.25 by default)."""
    for part in model_spec.split(":", 1)[-1].split(","):
        key, _, value = part.partition("=")
        if key.strip() == "temperature":
            return float(value)
    return 0.25


@pytest.fixture
def openai_env(monkeypatch):
    """Point langchain-openai at a local fake server with a dummy (but well-formed) key."""
    def use(server):
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-123456")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    return use


@pytest.fixture(scope="module")
def small_gate_record(tmp_path_factory) -> str:
    """The text of one small complete gate record of this repository's agent (real runs, judged
    with its bars and reference): tests copy it fresh and read or edit the copy."""
    from turngate.commands import regression

    out = tmp_path_factory.mktemp("gate")
    assert regression.main(["--only", "status", "refund_full_a1001", "--no-upload", "--quiet",
                            "--out", str(out)]) == 0
    (path,) = out.glob("*.json")
    return path.read_text()


# The quick loop, `pytest -m "not slow"`: every layer's own tests in about a minute. Slow are the
# tests that run whole gates, studies, subprocess commands, a wheel build, a browser or a Ray
# cluster; the README's `pytest -q -n auto` (and CI) runs them all. Chosen by `pytest --durations=0`.
SLOW_MODULES = {
    "test_standalone", "test_ray_executor", "test_report_browser", "test_review_browser",
    "test_review_browser_northwind", "test_gate_study", "test_gate_power", "test_faults", "test_faults_env",
    "test_gate_ops", "test_gate", "test_workflow", "test_exits", "test_record_readers", "test_shards",
    "test_sensitivity", "test_simulation_e2e", "test_simulation_standalone", "test_serve_gate",
    "test_serve_workers", "test_serve_limits", "test_orq_gate", "test_resume_agent", "test_records_last",
    "test_example_agent", "test_taxonomy_page", "test_conversation_release", "test_server_stdio",
    "test_calibrate", "test_compare", "test_regrade", "test_ci_outputs", "test_layers", "test_docs_commands",
    # each over 3 s of the quick loop's time under load, with a faster module covering its layer
    "test_record_integrity", "test_review_server", "test_review_export", "test_library", "test_user_errors",
    "test_workers", "test_startup", "test_server_properties", "test_secrets", "test_serve", "test_offline_scan",
    "test_orq_router", "test_prefork",
}
SLOW_TESTS = {
    "test_offline_linear.py::test_64k_through_the_whole_model_is_answered",
    "test_docs.py::test_the_complete_example_runs_from_an_empty_folder",
    "test_docs.py::test_the_readme_walkthrough_runs_and_leaves_the_tree_clean",
    "test_docs.py::test_the_plugin_example_is_a_module_that_imports_and_registers",
    # over 4 s each; the quick loop keeps the mutate layer's dry run, bad input, workers and
    # list operators, and the offline model's own behaviour on every set
    "test_mutate_propose.py::test_a_proposer_that_fails_or_is_missing_is_one_line_and_exit_2",
    "test_mutate_propose.py::test_proposed_edits_are_gated_and_classified_like_any_mutant",
    "test_mutate.py::test_the_rows_suggested_for_three_faq_survivors_kill_them",
    "test_mutate.py::test_one_provider_budget_caps_the_whole_run_in_process_and_across_workers",
    "test_mutate.py::test_the_faq_bot_is_mutated_from_the_command_line_with_json_and_markdown",
    "test_mutate.py::test_report_writes_the_html_page_and_never_replaces_a_file_without_force",
    "test_mutate_review.py::test_faq_survivors_become_draft_modes_that_the_review_export_turns_into_scorer_skeletons",
    "test_offline_noise.py::test_same_output_in_a_fresh_process",
    "test_offline_linear.py::test_the_gloss_and_the_place_names_are_those_of_every_pattern_tried_on_every_message",
    "test_offline_linear.py::test_bounded_sentence_gaps_match_as_the_unbounded_patterns_on_every_message",
}


def pytest_configure(config):
    """pytest-xdist's controller starts the one prefork server its workers share
    (tests/prefork.py), before it starts them: ~7 s of CPU once instead of once per worker, and
    ready by the time a worker's first command needs it."""
    if (hasattr(config, "workerinput") or config.getoption("dist", "no") == "no" or not config.getoption("tx", None)
            or config.getoption("collectonly") or os.environ.get("TURNGATE_TESTS_PREFORK", "1") == "0"
            or os.environ.get(prefork.SHARED)):
        return
    server, root = prefork.start_shared()
    os.environ[prefork.SHARED] = root
    config.add_cleanup(lambda: prefork._stop(server, root))


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker per core, plus one. Some of the suite's time is waiting (hung-tool
    timeouts, servers and Ray clusters starting, the fresh venv's lock, a browser); the extra
    worker runs tests meanwhile. Measured on 2 cores: 2 workers 413 s, 3 workers 355 s; later, with
    the machine's speed moving by +-15% between runs, 2 workers 342-356 s and 3 workers 324-379 s."""
    return (os.cpu_count() or 1) + 1


# The longest tests start first (the docs pages' commands, 10-150 s each), so that on two workers
# the short ones fill in around them instead of one page running alone at the end.
FIRST = ["validation-gate.md", "gate.md", "validation.md", "mutate.md", "ray.md", "ci.md"]


def _start_order(item) -> int:
    if item.path.stem != "test_docs_commands":
        return len(FIRST) + 1
    page = item.name.partition("[")[2].rstrip("]")
    return FIRST.index(page) if page in FIRST else len(FIRST)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_start_order)  # stable: every other test keeps its place
    for item in items:
        module = item.path.stem
        if module in SLOW_MODULES or f"{item.path.name}::{item.name.split('[')[0]}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
