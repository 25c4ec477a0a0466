"""Outputs never replace special files: a device or a link is written through, only a regular file is renamed over.

Devices are made with ``mknod`` in a temporary folder (never the real /dev/null: a rename onto it as root
replaces the device with a file and breaks the machine)."""

from __future__ import annotations

import os
import stat

import pytest

from unmask.io import atomic_write


def _write(text: str):
    return lambda tmp: open(tmp, "w").write(text)


@pytest.fixture
def null_device(tmp_path):
    """A character device like /dev/null (major 1, minor 3), made in ``tmp_path``."""
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root (CAP_MKNOD)")
    return node


def test_a_device_is_written_in_place_never_replaced(null_device):
    # Bug caught: `--out /dev/null` renaming a temporary file over the device (as root it becomes a file).
    atomic_write(null_device, _write("a table\n"))
    assert stat.S_ISCHR(os.stat(null_device).st_mode)
    assert os.stat(null_device).st_rdev == os.makedev(1, 3)
    assert not [p for p in null_device.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_link_to_a_device_stays_a_link_to_the_device(null_device, tmp_path):
    # Bug caught: `--out /dev/stdout` (a link) replaced by a regular file.
    link = tmp_path / "stdout"
    link.symlink_to(null_device)
    atomic_write(link, _write("a table\n"))
    assert link.is_symlink() and os.readlink(link) == str(null_device)
    assert stat.S_ISCHR(os.stat(null_device).st_mode)


def test_a_link_to_a_regular_file_keeps_the_link_and_replaces_the_file(tmp_path):
    # Bug caught: the rename replacing the link itself, leaving the file it pointed to stale.
    real = tmp_path / "real.md"
    real.write_text("old\n")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    atomic_write(link, _write("new\n"))
    assert link.is_symlink() and real.read_text() == "new\n"


def test_a_regular_file_is_still_replaced_atomically(tmp_path):
    out = tmp_path / "out.md"
    out.write_text("old\n")
    atomic_write(out, _write("new\n"))
    assert out.read_text() == "new\n" and oct(out.stat().st_mode & 0o777) == "0o644"


def test_a_pipe_is_written_in_place(tmp_path):
    # Bug caught: a named pipe (or a shell's process substitution, /dev/fd/N) replaced by a file.
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    atomic_write(fifo, _write("through the pipe\n"))
    reader.join(timeout=30)
    assert got == ["through the pipe\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_eval_out_to_a_device_leaves_the_device(cli, sudoku_files, null_device):
    # Bug caught: `unmask sudoku eval ... --out /dev/null` (as root) replacing the device with a regular file.
    model_dir, puzzles = sudoku_files
    code, _, err = cli(["sudoku", "eval", "--puzzles", puzzles, "--model", model_dir, "--out", null_device])
    assert code == 0, err
    assert stat.S_ISCHR(os.stat(null_device).st_mode)
