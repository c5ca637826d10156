"""A .zip of a tool's output folder, unpacked within bounds so it imports as the folder would.

The import page takes one file; a sweep's results are a folder (an inference-perf run's stage
reports with their Prometheus reports, a vllm bench sweep's run=N.json files), so the page
takes the folder zipped. Unpacking is bounded before anything is parsed: at most
runner.importer.folders.MAX_FILES members, each read only up to the document limit (its size
as stored in the zip is not trusted), all of them together up to max_total_bytes; a member
whose name leads out of the folder (an absolute path, "..") or that is a link is refused.
"""

from __future__ import annotations

import contextlib
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from runner.importer.folders import MAX_FILES
from runner.importer.vllm_document import ImportFileError

ZIP_START = b"PK\x03\x04"
CHUNK = 1 << 20


def is_zip(head: bytes) -> bool:
    return head.startswith(ZIP_START)


@contextlib.contextmanager
def unpacked(
    path: Path, name: str, *, max_member_bytes: int | None, max_total_bytes: int | None
) -> Iterator[Path]:
    """The zip's members in a temporary folder, removed afterwards; ImportFileError naming the
    member that breaks a bound."""
    folder = Path(tempfile.mkdtemp(prefix="headroom-import-"))
    try:
        _unpack(path, name, folder, max_member_bytes, max_total_bytes)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _unpack(
    path: Path, name: str, folder: Path, max_member: int | None, max_total: int | None
) -> None:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise ImportFileError(f"{name}: not a readable .zip file") from None
    total = 0
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) > MAX_FILES:
            raise ImportFileError(f"{name}: more than {MAX_FILES} files in the .zip")
        for member in members:
            target = _target(folder, member, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            written = 0
            try:
                with archive.open(member) as source, target.open("wb") as out:
                    while chunk := source.read(CHUNK):
                        written += len(chunk)
                        total += len(chunk)
                        if max_member is not None and written > max_member:
                            raise ImportFileError(
                                f"{name}: {member.filename} is over the {max_member / 2**20:.1f} "
                                "MB limit for a file read whole"
                            )
                        if max_total is not None and total > max_total:
                            raise ImportFileError(
                                f"{name}: its files unpacked are over the {max_total / 2**20:.1f} "
                                "MB upload limit"
                            )
                        out.write(chunk)
            except (zipfile.BadZipFile, RuntimeError, NotImplementedError, EOFError) as exc:
                raise ImportFileError(f"{name}: {member.filename}: cannot be unpacked "
                                      f"({exc})") from None  # fmt: skip


def _target(folder: Path, member: zipfile.ZipInfo, name: str) -> Path:
    relative = PurePosixPath(member.filename)
    mode = member.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise ImportFileError(f"{name}: {member.filename} is a link; a .zip of results holds "
                              "files only")  # fmt: skip
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise ImportFileError(f"{name}: {member.filename} leads out of the folder")
    return folder.joinpath(*relative.parts)
