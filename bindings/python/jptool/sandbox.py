"""What a VFS tool written in Python needs in the OS sandbox (vfs.h, "The OS
sandbox"): the paths it reads and the environment that finds jptool."""

from __future__ import annotations

import os
import sys
from typing import Dict, List, Optional

from ._lib import library_path
from ._util import _Path

def python_tool_read_paths(workspace: Optional[_Path] = None) -> List[str]:
    """The paths a VFS tool written in Python needs to read beside what
    the OS sandbox allows anyway (/usr, /lib, …), when it runs on this
    interpreter (``sys.executable``) and imports :mod:`jptool.vfs_tool`
    as this process imported jptool: pass them as
    ``VfsHost(sandbox_read=…)`` or in a definition's ``"os_sandbox":
    {"read": […]}``. Without them an interpreter outside /usr (pyenv,
    /opt) cannot even load its standard library in the sandbox, nor a
    tool in a virtualenv import its packages. In this order, absolute and
    with symlinks resolved (the sandbox grants what a path resolves to),
    each once, and none beneath another of the list:

      - ``sys.base_prefix`` and ``sys.base_exec_prefix``: the interpreter,
        its shared library and its standard library;
      - ``sys.prefix`` and ``sys.exec_prefix``: a virtualenv's own
        site-packages, when this is one;
      - the directory this jptool package was imported from (its sys.path
        entry);
      - the directory of the libjptool this process loaded
        (:data:`library_path`), when that is a path rather than the
        installed soname.

    Never the workspace (``workspace``, by default the current directory,
    which is also the default root of a :class:`VfsHost` and a
    :class:`Registry`), a directory above it, the home directory or a
    directory above that: a tool that may read those reads the
    workspace's ``.env`` and the user's keys with open(). Where one of
    the above is such a directory, what is given instead is narrower: the
    interpreter's own directories (``sysconfig``: its standard library,
    site-packages and shared library) and program file; the jptool package
    directory itself (an agent that keeps ``jptool/`` in its project); the
    library file itself. Python finds a package by listing its sys.path
    entry, which such a tool then cannot list: it needs ``PYTHONPATH`` to
    name a directory that holds the package alone (a symlink to it will
    do) or an installed jptool.

    Not included: the tool's script when it is not its program (argv[0]),
    anything it imports from elsewhere, and its environment
    (:func:`python_tool_env`)."""
    import sysconfig

    kept = [os.path.realpath(os.fsdecode(workspace) if workspace is not None else os.getcwd()),
            os.path.realpath(os.path.expanduser("~"))]

    def forbidden(path: str) -> bool:
        # The workspace or home, or above one of them ("/" is above both).
        return any(k == path or k.startswith(path.rstrip(os.sep) + os.sep) for k in kept)

    def narrower_prefix() -> List[str]:
        config = sysconfig.get_paths()
        found = [config[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in config]
        if sysconfig.get_config_var("LIBDIR"):
            found.append(sysconfig.get_config_var("LIBDIR"))
        return found + [sys.executable]

    package = os.path.dirname(os.path.realpath(__file__))
    candidates: List[str] = []
    for prefix in (sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix):
        real = os.path.realpath(prefix)
        candidates += [real] if not forbidden(real) else narrower_prefix()
    entry = os.path.dirname(package)
    candidates.append(entry if not forbidden(entry) else package)
    if os.sep in library_path:
        library = os.path.realpath(library_path)
        directory = os.path.dirname(library)
        candidates.append(directory if not forbidden(directory) else library)
    paths = [p for p in dict.fromkeys(os.path.realpath(c) for c in candidates) if not forbidden(p)]
    return [p for p in paths
            if not any(p.startswith(q.rstrip(os.sep) + os.sep) for q in paths if q != p)]


def python_tool_env() -> Dict[str, str]:
    """The environment a VFS tool written in Python needs, beside PATH, to
    import :mod:`jptool.vfs_tool` as this process imported jptool, when it
    runs on this interpreter: pass it as a definition's ``"env": {"set":
    jptool.python_tool_env()}`` or, for a :class:`VfsHost`, on the command
    line (``["env", "NAME=value", …, sys.executable, script]``). A tool's
    environment is PATH and what its definition passes, so the variables
    that told this process where jptool is (PYTHONPATH, JPTOOL_LIBRARY, or
    the JPTOOL_BUILD_LIBRARY of ``meson devenv``) do not reach it by
    themselves; they may not even be variables (``sys.path`` changed in
    code). Holds:

      - ``PYTHONPATH``: the directory this jptool package was imported
        from (its sys.path entry), unless it is one of the interpreter's
        site-packages directories (an installed jptool);
      - ``JPTOOL_LIBRARY``: the libjptool this process loaded
        (:data:`library_path`), when that is a path rather than the
        installed soname.

    {} for an installed jptool. The tool reads these paths in the OS
    sandbox through :func:`python_tool_read_paths`."""
    import site  # here: the module's import does not need it

    env = {}
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    own = [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
    own += site.getsitepackages()
    if not any(os.path.realpath(d) == os.path.realpath(package_parent) for d in own):
        env["PYTHONPATH"] = package_parent
    if os.sep in library_path:
        env["JPTOOL_LIBRARY"] = os.path.abspath(library_path)
    return env
