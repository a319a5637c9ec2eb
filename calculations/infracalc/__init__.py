"""infra-calc: exact FLOPs, bytes, memory and roofline bounds of LLMs."""

__version__ = "0.1.0"


def _recover_from_bad_bytecode():
    """Import this package's modules from source when their cached bytecode is bad.

    CPython before 3.12 can leave a truncated .pyc behind (a short write under a
    file-size limit or on a full disk is not checked: python/cpython#126606), and
    every later import of that module then fails with "marshal data too short".
    A bad cache file of a module of this package is removed (so the next import
    writes a good one, where the user lets Python write bytecode) and the module
    is compiled from its source. Other modules' caches are left alone."""
    import os
    from importlib.machinery import SourceFileLoader

    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    original = SourceFileLoader.get_code
    if getattr(original, "recovers_bad_bytecode", False):
        return

    def get_code(self, fullname):
        try:
            return original(self, fullname)
        except (EOFError, ValueError, TypeError):   # marshal: "too short", "bad marshal data"
            path = self.get_filename(fullname)
            if not os.path.abspath(path).startswith(here):
                raise
            from importlib.util import cache_from_source
            try:
                os.unlink(cache_from_source(path))
            except (OSError, NotImplementedError, ValueError):
                return self.source_to_code(self.get_data(path), path)
            return original(self, fullname)

    get_code.recovers_bad_bytecode = True
    SourceFileLoader.get_code = get_code


_recover_from_bad_bytecode()
