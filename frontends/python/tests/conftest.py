"""The front-end's tests run on every supported Python (3.9 to 3.13; scripts/test runs them on
the oldest and newest pyenv has). Before 3.11 the standard library has no tomllib: tomli, the
same parser (`python -m pip install tomli`), stands in for it."""

import sys

if sys.version_info < (3, 11):
    try:
        import tomllib  # noqa: F401
    except ImportError:
        try:
            import tomli
        except ImportError:
            raise ImportError("the tests read dumps with tomllib (Python 3.11+); on Python %d.%d "
                              "install tomli: %s -m pip install tomli"
                              % (sys.version_info[0], sys.version_info[1], sys.executable)) from None
        sys.modules["tomllib"] = tomli
