"""The README's Python router runs as written (against a stand-in urlopen)."""

import io
import pathlib
import re
import urllib.request

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_readme_router(monkeypatch):
    code = re.search(r"## From Python.*?```python\n(.*?)```", README.read_text(), re.S).group(1)
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    ns = {}
    exec(compile(code, str(README), "exec"), ns)
    pool = ns["pool"]
    seen = []

    def urlopen(url, data=None):
        backend = next(w for w in pool.workers() if url.startswith(w))
        seen.append(pool.in_flight(backend))
        return io.BytesIO(b"done")

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    assert ns["route"]("/v1/completions", b"{}", 300) == b"done"
    assert seen == [300]
    assert all(load == 0 for load in pool.loads().values())
