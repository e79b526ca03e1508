"""Fixtures shared by the tests that talk to the local OpenAI-compatible fake."""
import pytest


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
