"""Receiving a result file on the import page without letting it exhaust the web server.

Django's default upload handlers take a file of any size: up to FILE_UPLOAD_MAX_MEMORY_SIZE in
memory, beyond it into a temporary file, and a view can only look at the size once the whole
body is on disk. ResultFileUploadHandler enforces HEADROOM_MAX_UPLOAD_BYTES while the body
arrives, in the two ways Django's multipart parser offers:

- A body whose Content-Length already passes the limit is refused when its file part begins,
  with StopUpload(connection_reset=True): the file is never read, the fields before it (the CSRF
  token first) are, so the page can say why. A browser still sending may show a reset
  connection instead; static/js/import.js checks the size before it sends.
- A file that passes the limit as its chunks arrive (no or a false Content-Length) is dropped
  with SkipFile: what was written is deleted and the rest of that part is read and thrown away.

An accepted file is written straight into HEADROOM_IMPORT_DIR under a random name, and linked to
its import's stored path (same folder, nothing copied) once the import row exists.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, SkipFile, StopUpload
from django.template.defaultfilters import filesizeformat

# What the import form's other fields and the multipart framing may add to a file's size in the
# Content-Length: a dozen short fields, the boundaries and each part's headers.
FORM_ALLOWANCE_BYTES = 64 * 1024


def import_dir() -> Path:
    directory = Path(settings.HEADROOM_IMPORT_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


class ReceivedFile(UploadedFile):
    """A file as it arrives, in the imports folder under a random name (never the user's).

    Its temporary name is deleted when it is closed (Django closes uploaded files at the end of
    the request); keep() gives the bytes a second, lasting name first.
    """

    def __init__(
        self, name: str, content_type: str, charset: str | None, content_type_extra: Any
    ) -> None:
        # Open for the request's lifetime, as Django's TemporaryUploadedFile; closed with it.
        file = tempfile.NamedTemporaryFile(  # noqa: SIM115
            dir=import_dir(), prefix="receiving-", suffix=".part"
        )
        super().__init__(file, name, content_type, 0, charset, content_type_extra)

    def temporary_file_path(self) -> str:
        return self._received().name

    def keep(self, path: Path) -> None:
        """Give the received bytes the lasting name path, in the same folder: a hard link,
        nothing copied, and the temporary name is deleted as usual when the file is closed."""
        received = self._received()
        received.flush()
        os.link(received.name, path)

    def _received(self) -> IO[bytes]:
        # Django's File types .file as optional; this one is always the file opened above.
        if self.file is None:
            raise ValueError(f"{self.name}: the received file is gone")
        return self.file


class ResultFileUploadHandler(FileUploadHandler):
    """The import page's only upload handler; `refusal` says why a file was not taken.

    The limit holds for the files of one body together (a result file and the file that came
    with it): each is counted from where the ones before it ended.
    """

    def __init__(self, request: Any = None, limit: int | None = None) -> None:
        super().__init__(request)
        self.limit = settings.HEADROOM_MAX_UPLOAD_BYTES if limit is None else limit
        self.refusal = ""
        self.body_too_large = False
        self.received_before = 0  # bytes of the files already complete in this body

    def handle_raw_input(  # type: ignore[override]  # django-stubs says str; Django passes bytes
        self,
        input_data: Any,
        META: Any,
        content_length: int,
        boundary: bytes,
        encoding: str | None = None,
    ) -> None:
        # Raising here would escape the parser's own handling (a 500); new_file raises instead.
        self.body_too_large = content_length > self.limit + FORM_ALLOWANCE_BYTES

    def new_file(self, field_name: str, file_name: str, content_type: str,
                 content_length: int | None, charset: str | None = None,
                 content_type_extra: Any = None) -> None:  # fmt: skip
        super().new_file(field_name, file_name, content_type, content_length, charset,
                         content_type_extra)  # fmt: skip
        if self.body_too_large or self.received_before + (content_length or 0) > self.limit:
            self._refuse()
            raise StopUpload(connection_reset=True)  # the rest of the body is never read
        self.file = ReceivedFile(file_name, content_type, charset, content_type_extra)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        if self.received_before + start + len(raw_data) > self.limit:
            self._refuse()
            raise SkipFile  # the parser closes (so deletes) the file and skips its remainder
        self.file.write(raw_data)

    def file_complete(self, file_size: int) -> ReceivedFile:
        self.file.seek(0)
        self.file.size = file_size
        self.received_before += file_size
        return self.file

    def upload_interrupted(self) -> None:
        if hasattr(self, "file"):
            self.file.close()

    def _refuse(self) -> None:
        what = "The files together are" if self.received_before else "This file is"
        self.refusal = (
            f"{what} larger than the upload limit of {filesizeformat(self.limit)}: "
            "nothing was stored."
        )
