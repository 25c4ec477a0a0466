"""What the CLI tests check of a refusal, in one place."""

from __future__ import annotations

from unmask.cli import main


def refused(capsys, argv: list, message: str) -> str:
    """``argv`` exits with 2 and exactly one stderr line (besides progress bars and notes), containing ``message``;
    that line."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:  # argparse's own errors
        code = e.code
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("unmask: note:") and "%|" not in line]
    assert len(lines) == 1 and lines[0].startswith("unmask: error:") and message in lines[0], err
    assert "Traceback" not in err
    return lines[0]
