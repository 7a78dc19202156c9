"""``agui replay`` and ``agui verify`` read a recording block by block, as the library's ``replay`` does.

Proved without timing: the recording is a 512 MiB sparse file of NUL bytes (one endless SSE line,
made in an instant), and the command runs in a child interpreter that reports its own peak resident
memory (``VmHWM``, Linux's high-water mark of the process image: ``getrusage``'s ``ru_maxrss`` would
carry the parent's across ``exec``, and the test process can be large). Read whole, the file alone
would put the peak past 512 MiB; read block by block, the per-event limit (16 MiB) trips first and
the peak stays a fraction of the file. The limit is reported as the library raises it:
``LimitExceeded`` (rule TR-11), exit status 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SIZE = 512 * 2**20
#: The peak a block-by-block read must stay under: half the file (it is about 60 MiB; reading the
#: file whole puts it past 570 MiB).
CEILING = SIZE // 2

_CHILD = """\
import sys
from agui_client.cli import main
code = main(sys.argv[2:])
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
with open(sys.argv[1], "w") as out:
    out.write(str(peak))
sys.exit(code)
"""

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads Linux's /proc/self/status")


@pytest.fixture(scope="module")
def endless(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sparse 512 MiB file of NUL bytes: no line end anywhere."""
    path = tmp_path_factory.mktemp("recordings") / "endless.sse"
    with open(path, "wb") as handle:
        handle.truncate(SIZE)
    return path


def _agui(tmp_path: Path, *args: str, stdin: Path | None = None) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``agui ARGS`` in a child interpreter; its result and its peak resident memory in bytes."""
    report = tmp_path / "peak"
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1"}
    with open(stdin if stdin is not None else os.devnull, "rb") as source:
        done = subprocess.run([sys.executable, "-c", _CHILD, str(report), *args], stdin=source,
                              capture_output=True, text=True, env=env, timeout=120, check=False)
    assert report.exists(), done.stderr
    return done, int(report.read_text())


def test_replay_reads_block_by_block_and_the_event_limit_trips(endless: Path, tmp_path: Path) -> None:
    done, peak = _agui(tmp_path, "replay", str(endless))

    assert peak < CEILING, f"peak {peak >> 20} MiB reading a {SIZE >> 20} MiB recording"
    assert done.returncode == 1, done.stderr
    assert "protocol error (LimitExceeded)" in done.stdout and "rule TR-11" in done.stdout


def test_replay_json_reports_the_librarys_limit_error(endless: Path, tmp_path: Path) -> None:
    done, peak = _agui(tmp_path, "replay", "--json", str(endless))

    assert peak < CEILING
    assert done.returncode == 1, done.stderr
    error = json.loads(done.stdout)["error"]
    assert (error["error"], error["rule"], error["index"]) == ("LimitExceeded", "TR-11", 0)


def test_replay_reads_stdin_block_by_block(endless: Path, tmp_path: Path) -> None:
    done, peak = _agui(tmp_path, "replay", "-", stdin=endless)

    assert peak < CEILING
    assert done.returncode == 1 and "LimitExceeded" in done.stdout


def test_verify_reads_block_by_block_and_lists_the_limit_as_a_finding(endless: Path, tmp_path: Path) -> None:
    done, peak = _agui(tmp_path, "verify", "--json", str(endless))

    assert peak < CEILING
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)["findings"]
    assert ("LimitExceeded", "TR-11") in [(f.get("error"), f["rule"]) for f in findings]


def test_a_limit_tripped_after_some_events_is_reported_at_its_event(tmp_path: Path) -> None:
    capture = tmp_path / "long.sse"
    with open(capture, "wb") as handle:
        handle.write(b'data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1"}\n\ndata: "')
        handle.truncate(SIZE)  # (an endless JSON string in the second event)

    done, peak = _agui(tmp_path, "replay", "--json", str(capture))

    assert peak < CEILING
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert (report["error"]["error"], report["error"]["index"], report["runId"]) == ("LimitExceeded", 1, "r1")


def test_verify_counts_every_warning_of_a_flood_though_it_keeps_a_bounded_number(tmp_path: Path) -> None:
    # A response keeps at most WARNINGS_PER_CODE warnings of a code (the SSE decoder counts the rest);
    # the count verify gives is of all of them, so a flood is not reported as a thousand.
    from agui_client.wire.sink import WARNINGS_PER_CODE

    capture = tmp_path / "flood.sse"
    lines = 3 * WARNINGS_PER_CODE
    capture.write_bytes(b'data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1"}\n\n' + b"x\n" * lines +
                        b'\ndata: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}\n\n')

    done, _ = _agui(tmp_path, "verify", "--json", str(capture))

    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert report["warnings"] == lines
    assert len(report["findings"]) == WARNINGS_PER_CODE


# --------------------------------------------------------------------------------------------------
# verify keeps what it reports bounded, whatever the number of events or of faults
# --------------------------------------------------------------------------------------------------

_STARTED = b'{"type":"RUN_STARTED","threadId":"t1","runId":"r1"}\n'
_FINISHED = b'{"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}\n'


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> int:
    """The peak of ``agui verify`` of a recording of two events (measured once for the module: it is the
    same interpreter with the same imports for every test that compares with it)."""
    tmp_path = tmp_path_factory.mktemp("baseline")
    small = tmp_path / "small.jsonl"
    small.write_bytes(_STARTED + _FINISHED)
    done, peak = _agui(tmp_path, "verify", "--json", str(small))
    assert done.returncode == 0, done.stderr
    return peak


def test_verify_lists_a_bounded_number_of_errors_and_counts_the_rest(tmp_path: Path, baseline: int) -> None:
    # Each line names a message that was never started: an error per event. Kept whole, 60,000 of
    # them took about 400 MB.
    from agui_client.cli.recordings import LISTED_ERRORS

    faults = 60_000
    capture = tmp_path / "faults.jsonl"
    capture.write_bytes(_STARTED + b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}\n' * faults
                        + _FINISHED)

    done, peak = _agui(tmp_path, "verify", "--json", str(capture))
    shown, _ = _agui(tmp_path, "verify", str(capture))

    assert peak < baseline + 64 * 2**20
    report = json.loads(done.stdout)
    assert done.returncode == 1
    assert (report["errors"], len(report["findings"]), report["unlisted"]) == (faults, LISTED_ERRORS,
                                                                               faults - LISTED_ERRORS)
    assert report["findings"][-1]["line"] == LISTED_ERRORS + 1  # (the first ones, each at its line)
    assert f"... and {faults - LISTED_ERRORS} more finding(s) counted, not listed" in shown.stdout
    assert f"{faults + 2} event(s), {faults} error(s), 0 warning(s)" in shown.stdout


def test_verify_of_many_clean_events_keeps_no_record_of_each(tmp_path: Path, baseline: int) -> None:
    # Where every event started was kept for the whole file (about 200 bytes an event) in case a
    # finding named it: 400,000 events took 85 MB more than two, 200,000 took 43 MB (well past the bound
    # asserted, in half the time).
    events = 200_000
    capture = tmp_path / "many.jsonl"
    capture.write_bytes(_STARTED + b'{"type":"CUSTOM","name":"n","value":1}\n' * events + _FINISHED)

    done, peak = _agui(tmp_path, "verify", "--json", str(capture))

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["events"] == events + 2
    assert peak < baseline + 24 * 2**20


def test_verify_still_places_a_finding_far_into_a_long_recording(tmp_path: Path) -> None:
    before = 50_000
    capture = tmp_path / "late.jsonl"
    capture.write_bytes(_STARTED + b'{"type":"CUSTOM","name":"n","value":1}\n' * before
                        + b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}\n'
                        + b'{"type":"CUSTOM","name":"n","value":1}\n' * before + _FINISHED)

    done, _ = _agui(tmp_path, "verify", "--json", str(capture))

    (finding,) = json.loads(done.stdout)["findings"]
    assert (finding["index"], finding["line"], finding["offset"]) == (before + 1, before + 2,
                                                                      len(_STARTED) + 39 * before)
