"""The one writer of output files (--output, --plot, reproduce's results).

write_files([(path, text), ...]) writes each text to a temporary file in its
target's directory and renames them onto the targets only once every one is
written: a failed write (full disk, size limit, kill) leaves every target as
it was, never truncated, and one failing target means none is replaced. A
target that exists and is not a regular file (/dev/stdout, /dev/null, a FIFO)
cannot be replaced by a rename; it is written in place, after the others are
staged and before they are renamed (so its failure too leaves them unchanged).
So is a regular file with more than one hard link (a rename would split it from
its other names). A file that is read-only (no write permission bit, or not
writable by this user) is refused, never replaced; a replaced file keeps its
permissions and, where the user may set it, its owner.
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


def _in_place(flag, path):
    """True when the target must be written in place rather than replaced: anything
    but a regular file (/dev/stdout, a FIFO) or a regular file with other hard links.
    A read-only target is refused (UserError)."""
    import stat

    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return True
    if not st.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise UserError(f"cannot write {flag} {quote(path)}: the file is read-only "
                        "(make it writable, or choose another file)")
    return st.st_nlink > 1


def _keep_owner(tmp, real):
    try:
        st = os.stat(real)
    except OSError:
        return
    try:
        os.chown(tmp, st.st_uid, st.st_gid)
    except (OSError, AttributeError):   # not permitted (another user's file), or no chown
        pass


def _stage(staged, real, flag, path):
    """Create the temporary file beside `real` and return its descriptor. Its name is
    entered in `staged` before the file exists, so that a signal arriving at any moment
    (SIGTERM between the creation and the bookkeeping) leaves no file that the caller's
    clean-up does not know of."""
    folder, base = os.path.dirname(real) or ".", os.path.basename(real)
    for _ in range(100):
        tmp = os.path.join(folder, f".{base}.{os.urandom(4).hex()}.tmp")
        staged.append((tmp, real))
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:   # another file's name: never ours to remove
            staged.pop()
        except (OSError, ValueError) as e:
            staged.pop()
            raise _fail(flag, path, e) from None
    raise _fail(flag, path, OSError("no free temporary file name"))


def write_files(outputs):
    """Write [(flag, path, text)] all or nothing (see the module docstring)."""
    staged, special = [], []
    try:
        for flag, path, text in outputs:
            if _in_place(flag, path):
                special.append((flag, path, text))
                continue
            real = os.path.realpath(path)    # replace a symlink's target, not the link
            fd = _stage(staged, real, flag, path)
            tmp = staged[-1][0]
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(_utf8(text))
                    f.flush()
                    os.fsync(f.fileno())
                os.chmod(tmp, _mode(real))
                _keep_owner(tmp, real)
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
