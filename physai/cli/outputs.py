"""The files a command writes and the text it prints, made safe: paths checked before any work, atomic writes, and
text taken from a recording made inert.

- :func:`check_output`: an output path is refused, before anything runs, when it could not be written or would
  destroy something: a folder, a symbolic link (a write would land wherever it points), an existing file without
  ``force``, a read-only file or folder, a place inside a folder the command reads from (MuJoCo Menagerie's model,
  the dataset).
- :func:`write_atomic`: the file is written to a temporary file in the same folder, flushed to disk, then moved over
  the target with ``os.replace`` (atomic on POSIX and Windows within one file system), so an interrupted run leaves
  the old file whole and never a half-written one; ``os.replace`` replaces a link rather than writing through it.
  Where no file may be replaced (no ``--force``), the temporary file is published under its name with ``os.link``,
  which fails if the name exists: a file that appeared while the command ran (another run's, say) is never
  overwritten, however the two runs interleave.
- :func:`inert`: text from a recording (folder names, ``robot_type``, paths) with every control and format character
  (Unicode category C: terminal escapes, newlines, bidirectional overrides) written as a visible escape, so that it
  can neither drive a terminal nor forge a line of a report. :func:`comment_text` also keeps it from ending an XML
  comment (``--`` cannot appear in one).
"""

from __future__ import annotations

import os
import pathlib
import re
import stat
import tempfile
import unicodedata
from collections.abc import Callable, Sequence


def inert(text) -> str:
    """``str(text)`` with every character of Unicode category C (control, format, surrogate, private, unassigned)
    written as its escape (``\\x1b``, ``\\n``, ``\\u202e``): printable, one line, and saying what was there."""
    return ''.join(ch if unicodedata.category(ch)[0] != 'C' else ch.encode('unicode_escape').decode('ascii')
                   for ch in str(text))


def comment_text(text) -> str:
    """:func:`inert` text that an XML comment can hold: no ``--`` anywhere (every run of hyphens is spaced out, so
    ``--->`` becomes ``- - ->``), and no ``-`` at its end, where it would join the comment's closing ``-->``."""
    text = re.sub(r'-(?=-)', '- ', inert(text))
    return text + ' ' if text.endswith('-') else text


def _inside(path: pathlib.Path, folder: pathlib.Path) -> bool:
    return path == folder or folder in path.parents


def check_output(path, *, option: str, suffix: str, force: bool = False,
                 keep_out: Sequence[tuple[str, str | os.PathLike]] = ()) -> pathlib.Path:
    """``path`` as a ``pathlib.Path`` if the command may write it, else a ValueError saying why and what to do.

    Args:
      path: the file to write.
      option: its command-line option (``--out``), for the message.
      suffix: the file type it must name (``.xml``), compared without case.
      force: whether an existing file may be replaced.
      keep_out: ``(what, folder)`` pairs: no write inside these folders, however the path reaches them (symbolic
        links included), e.g. ``("MuJoCo Menagerie's SO-101 model", folder)``.
    """
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise ValueError(f'{option} must be a file path, got {path!r}')
    path = pathlib.Path(path)
    name = inert(path)
    if path.suffix.lower() != suffix:
        raise ValueError(f'{option} must name a {suffix} file, got {name!r}')
    if path.is_symlink():
        raise ValueError(f'{option} must not be a symbolic link (a write would land in {inert(os.readlink(path))!r}), '
                         f'got {name!r}: give the path of the file itself')
    folder = path.parent
    if not folder.is_dir():
        raise ValueError(f'{option} must be in an existing folder, got {name!r}')
    target = folder.resolve() / path.name
    for what, protected in keep_out:
        protected = pathlib.Path(protected).resolve()
        if _inside(target, protected):
            raise ValueError(f'{option} must not be inside {what} ({inert(protected)}), which the command reads, got '
                             f'{name!r}: write it elsewhere')
    if path.exists():
        if path.is_dir():
            raise ValueError(f'{option} must name a file, got the folder {name!r}')
        if not path.is_file():
            raise ValueError(f'{option} must name a regular file, got {name!r}, which is not one')
        if not force:
            raise ValueError(f'{option} must not be an existing file unless --force is given, got {name!r}, which '
                             f'exists: add --force to replace it, or choose another name')
        if not path.stat().st_mode & stat.S_IWUSR:  # marked read-only by its owner (root could still write it)
            raise ValueError(f'{option} must be writable, got {name!r}, which is read-only')
    try:  # the one sure test that the folder takes a new file (permissions, a read-only disk, a full quota)
        descriptor, probe = tempfile.mkstemp(dir=folder, prefix=f'.{path.name}.', suffix='.part')
    except OSError as err:
        raise ValueError(f'{option} must be in a folder you can write to, got {name!r}: '
                         f'{inert(err.strerror)}') from None
    os.close(descriptor)
    os.unlink(probe)
    return path


def _mode(path: pathlib.Path) -> int:
    """The permissions the written file gets: the replaced file's, or a new file's under the process's umask."""
    if path.is_file():
        return stat.S_IMODE(path.stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path, write: Callable, *, replace: bool = True) -> pathlib.Path:
    """Write ``path`` all at once: ``write(file)`` fills a temporary file (binary) in the same folder, which is then
    flushed to disk and published as ``path``. On any error or interrupt the temporary file is removed and ``path``
    is left as it was.

    Args:
      path: the file to write.
      write: fills the open temporary file.
      replace: whether ``path`` may be replaced (``os.replace``). False publishes with ``os.link``, which refuses a
        name that exists (FileExistsError): a file that appeared after the command checked its outputs is kept.
        Where the file system has no hard links, the name is taken with an exclusive create first (an empty file,
        for a moment, until ``os.replace`` puts the whole one in its place).
    """
    path = pathlib.Path(path)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f'.{path.name}.', suffix='.part')
    try:
        with os.fdopen(descriptor, 'wb') as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, _mode(path))
        if replace:
            os.replace(temporary, path)
        else:
            _publish_new(temporary, path)
    except FileExistsError:
        _remove(temporary)
        raise FileExistsError(f'{inert(path)} appeared while the command ran (another run, or someone else) and is '
                              f'kept as it is: nothing was written over it; add --force to replace it, or choose '
                              f'another name') from None
    except BaseException:
        _remove(temporary)
        raise
    return path


def _publish_new(temporary: str, path: pathlib.Path) -> None:
    """Give the written ``temporary`` the name ``path`` only if no file has it (FileExistsError otherwise)."""
    try:
        os.link(temporary, path)
    except FileExistsError:
        raise
    except OSError:  # no hard links here (some network and FAT file systems): take the name, then fill it
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.replace(temporary, path)
        return
    os.unlink(temporary)


def _remove(temporary: str) -> None:
    try:
        os.unlink(temporary)
    except FileNotFoundError:
        pass
