"""The one writer of output files (--output, --plot, reproduce's results).

write_files([(path, text), ...]) writes each text to a temporary file in its
target's directory and renames them onto the targets only once every one is
written: a failed write (full disk, size limit, kill) leaves every target as
it was, never truncated, and one failing target means none is replaced. A
target that exists and is not a regular file (/dev/stdout, /dev/null, a FIFO)
cannot be replaced by a rename; it is written in place, after the others are
staged and before they are renamed (so its failure too leaves them unchanged).
"""

import os

from ..errors import UserError, quote


def _fail(flag, path, e):
    return UserError(f"cannot write {flag} {quote(path)}: {getattr(e, 'strerror', None) or e}")


def _utf8(text):
    """Output bytes: UTF-8, an unencodable character (an undecodable byte of a file
    name) written as a backslash escape, as on stdout."""
    return text.encode("utf-8", "backslashreplace")


def _mode(path):
    """The permissions the file gets: those of the file it replaces, else 0666 less the umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _is_special(path):
    try:
        import stat
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def write_files(outputs):
    """Write [(flag, path, text)] all or nothing (see the module docstring)."""
    import tempfile

    staged, special = [], []
    try:
        for flag, path, text in outputs:
            if _is_special(path):
                special.append((flag, path, text))
                continue
            real = os.path.realpath(path)    # replace a symlink's target, not the link
            try:
                fd, tmp = tempfile.mkstemp(dir=os.path.dirname(real) or ".",
                                           prefix=f".{os.path.basename(real)}.", suffix=".tmp")
            except (OSError, ValueError) as e:
                raise _fail(flag, path, e) from None
            staged.append((tmp, real))
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(_utf8(text))
                    f.flush()
                    os.fsync(f.fileno())
                os.chmod(tmp, _mode(real))
            except OSError as e:
                raise _fail(flag, path, e) from None
        for flag, path, text in special:
            try:
                with open(path, "wb") as f:
                    f.write(_utf8(text))
            except OSError as e:
                raise _fail(flag, path, e) from None
        for tmp, real in staged:
            os.replace(tmp, real)
        staged = []
    finally:
        for tmp, _ in staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass
