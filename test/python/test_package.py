"""Tests of the jptool Python package (bindings/python) as a package: where it
finds libjptool, that pip installs it offline (with build isolation from
Debian's wheels, and without, with the setuptools installed), and what
`meson install` installs with -Dpython=true.

Run by `meson test` (suite "python"), which sets JPTOOL_LIBRARY,
PYTHONPATH and, for this file, JPT_BUILD_ROOT (the build directory),
JPT_SOURCE_ROOT, JPT_VERSION (meson.build's project version), MESON (the
meson command), JPT_SYSTEM_PYTHON (/usr/bin/python3 where it exists, for
the pip cases) and, with -Dpython=true, JPT_MESON_INSTALLS_PYTHON=1. Each
case runs Python in a child process with the environment it needs.
Standard library only.
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import jptool

BUILD_ROOT = os.environ["JPT_BUILD_ROOT"]
SOURCE_ROOT = os.environ["JPT_SOURCE_ROOT"]
PACKAGE_DIR = os.path.join(SOURCE_ROOT, "bindings", "python")
LIBRARY = os.environ["JPTOOL_LIBRARY"]
MESON = [os.environ["MESON"]]
# The Python whose packages Debian's python3-setuptools and friends are.
SYSTEM_PYTHON = os.environ["JPT_SYSTEM_PYTHON"]

# Debian's wheels of setuptools and wheel (python3-setuptools-whl,
# python3-wheel-whl): what an isolated build installs, offline.
DEBIAN_WHEELS = "/usr/share/python-wheels"

# The package's files, as the source tree holds them: what pip and meson
# install must install, each of them and nothing else.
PACKAGE_FILES = sorted(f for f in os.listdir(os.path.join(PACKAGE_DIR, "jptool"))
                       if f.endswith((".py", ".typed")))

# What the child processes print: where the package and the library are.
SHOW = ("import jptool, jptool.aio, jptool.vfs_tool; "
        "print(jptool.__file__); print(jptool.library_path); print(jptool.version())")

# The variables that choose a library or a package, or configure pip.
CHOOSING = ("JPTOOL_LIBRARY", "JPTOOL_BUILD_LIBRARY", "LD_LIBRARY_PATH", "PYTHONPATH",
            "MESON_DEVENV")


def clean_env(**extra):
    """This process's environment without what chooses a library, a
    package or pip's configuration, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if k not in CHOOSING and not k.startswith("PIP_")}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_NO_CACHE_DIR": "1",
                "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    env.update(extra)
    return env


def run(argv, env, cwd=None):
    """Runs argv; returns (exit status, stdout, stderr)."""
    p = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


class DiscoveryTest(unittest.TestCase):
    """The places the package looks for libjptool, in order
    (jptool/__init__.py, "Loading")."""

    def show(self, env, python=sys.executable):
        return run([python, "-c", SHOW], env)

    def test_jptool_library_names_the_library(self):
        rc, out, err = self.show(clean_env(PYTHONPATH=PACKAGE_DIR, JPTOOL_LIBRARY=LIBRARY,
                                           JPTOOL_BUILD_LIBRARY="/nonexistent.so"))
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.splitlines()[1:], [LIBRARY, jptool.version()])

    def test_a_library_named_but_not_loadable_is_an_error_listing_the_places(self):
        missing = os.path.join(BUILD_ROOT, "no-such-libjptool.so")
        rc, out, err = self.show(clean_env(PYTHONPATH=PACKAGE_DIR, JPTOOL_LIBRARY=missing,
                                           LD_LIBRARY_PATH=os.path.dirname(LIBRARY)))
        self.assertNotEqual(rc, 0)
        self.assertIn(
            "ImportError: jptool: cannot load libjptool; tried, in order:\n"
            f"  - JPTOOL_LIBRARY: {missing}: cannot open shared object file: No such "
            "file or directory\n"
            "  - the build tree of `meson devenv` (JPTOOL_BUILD_LIBRARY): not tried, as "
            "the library named above is the one to use\n"
            "  - the installed library (libjptool.so.0, through the dynamic loader): not "
            "tried, as the library named above is the one to use\n"
            "Set JPTOOL_LIBRARY to the library's path, run under `meson devenv -C <build "
            "directory>`, or install jptool (`meson install`, then `ldconfig`). A VFS "
            "tool gets only PATH and the variables its definition passes: pass it "
            "jptool.python_tool_env().\n", err)

    def test_a_file_that_is_not_a_library(self):
        not_elf = os.path.join(PACKAGE_DIR, "pyproject.toml")
        rc, out, err = self.show(clean_env(PYTHONPATH=PACKAGE_DIR,
                                           JPTOOL_BUILD_LIBRARY=not_elf))
        self.assertNotEqual(rc, 0)
        self.assertIn("  - JPTOOL_LIBRARY: not set\n"
                      "  - the build tree of `meson devenv` (JPTOOL_BUILD_LIBRARY): "
                      f"{not_elf}: invalid ELF header\n", err)

    def test_meson_devenv_gives_the_build_trees_package_and_library(self):
        rc, out, err = run(MESON + ["devenv", "-C", BUILD_ROOT, sys.executable, "-c", SHOW],
                           clean_env())
        self.assertEqual(rc, 0, err)
        package, library, version = out.splitlines()
        self.assertEqual(package, os.path.join(PACKAGE_DIR, "jptool", "__init__.py"))
        self.assertEqual(os.path.realpath(library), os.path.realpath(LIBRARY))
        self.assertEqual(version, jptool.version())

    def test_then_the_soname_through_the_dynamic_loader(self):
        # meson test's own LD_LIBRARY_PATH: the loader finds the build's.
        rc, out, err = self.show(clean_env(PYTHONPATH=PACKAGE_DIR,
                                           LD_LIBRARY_PATH=os.path.dirname(LIBRARY)))
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.splitlines()[1:], ["libjptool.so.0", jptool.version()])

    def test_nothing_found_lists_every_place(self):
        env = clean_env(PYTHONPATH=PACKAGE_DIR)
        installed, _, _ = run([sys.executable, "-c",
                               "import ctypes; ctypes.CDLL('libjptool.so.0')"], env)
        rc, out, err = self.show(env)
        if installed == 0:
            # An installed jptool is what the last place finds here.
            self.assertEqual(rc, 0, err)
            self.assertEqual(out.splitlines()[1], "libjptool.so.0")
            return
        self.assertNotEqual(rc, 0)
        self.assertIn(
            "  - JPTOOL_LIBRARY: not set\n"
            "  - the build tree of `meson devenv` (JPTOOL_BUILD_LIBRARY): not set\n"
            "  - the installed library (libjptool.so.0, through the dynamic loader): "
            "libjptool.so.0: cannot open shared object file: No such file or directory\n",
            err)


class MetadataTest(unittest.TestCase):
    def test_the_package_version_is_the_librarys(self):
        with open(os.path.join(PACKAGE_DIR, "pyproject.toml")) as f:
            versions = [line.split("=", 1)[1].strip().strip('"')
                        for line in f if line.startswith("version =")]
        self.assertEqual(versions, [os.environ["JPT_VERSION"]])
        self.assertEqual(jptool.version(), os.environ["JPT_VERSION"])

    def test_py_typed_marks_the_package_typed(self):
        self.assertTrue(os.path.isfile(os.path.join(PACKAGE_DIR, "jptool", "py.typed")))


def system_python_has(modules):
    rc, _, _ = run([SYSTEM_PYTHON, "-c", "import " + ", ".join(modules)], clean_env())
    return rc == 0


class PipInstallTest(unittest.TestCase):
    """pip installs the package offline into a virtual environment of the
    system's Python (Debian's /usr/bin/python3) that sees the system's
    packages: python3-setuptools and python3-wheel, and the wheels of
    python3-setuptools-whl and python3-wheel-whl (Debian's setuptools wheel
    works with Debian's Python only)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.venv = os.path.join(cls.tmp.name, "venv")
        cls.python = os.path.join(cls.venv, "bin", "python")
        rc, out, err = run([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages",
                            cls.venv], clean_env())
        if rc != 0:
            raise RuntimeError(f"python3 -m venv failed (Debian: python3-venv): {err}")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def source_copy(self):
        """The package's source, copied: pip builds in the tree it is given
        (build/, *.egg-info)."""
        d = tempfile.mkdtemp(dir=self.tmp.name)
        dest = os.path.join(d, "python")
        shutil.copytree(PACKAGE_DIR, dest, ignore=shutil.ignore_patterns(
            "__pycache__", "build", "*.egg-info"))
        return dest

    def pip(self, *args):
        rc, out, err = run([self.python, "-m", "pip", *args], clean_env())
        self.assertEqual(rc, 0, out + err)
        return out

    def check_installed(self):
        rc, out, err = run([self.python, "-c", SHOW], clean_env(JPTOOL_LIBRARY=LIBRARY))
        self.assertEqual(rc, 0, err)
        package, library, version = out.splitlines()
        site = os.path.dirname(os.path.dirname(package))
        self.assertTrue(package.startswith(self.venv + os.sep), package)
        self.assertEqual(sorted(os.listdir(os.path.dirname(package))), PACKAGE_FILES)
        self.assertEqual((library, version), (LIBRARY, jptool.version()))
        [record] = glob.glob(os.path.join(site, "jptool-*.dist-info", "RECORD"))
        with open(record) as f:
            self.assertIn("jptool/py.typed", f.read())
        self.pip("uninstall", "--yes", "jptool")

    @unittest.skipUnless(
        all(glob.glob(os.path.join(DEBIAN_WHEELS, name + "-*.whl"))
            for name in ("setuptools", "wheel")),
        f"{DEBIAN_WHEELS} lacks setuptools or wheel (Debian: python3-setuptools-whl, "
        "python3-wheel-whl; scripts/run-tests installs them)")
    def test_isolated_build_from_debians_wheels(self):
        self.pip("install", "--no-index", "--no-compile", "--find-links", DEBIAN_WHEELS,
                 self.source_copy())
        self.check_installed()

    @unittest.skipUnless(system_python_has(["setuptools", "wheel"]),
                         "the system's Python lacks setuptools or wheel (Debian: "
                         "python3-setuptools, python3-wheel; scripts/run-tests "
                         "installs them)")
    def test_no_build_isolation_with_the_installed_setuptools(self):
        self.pip("install", "--no-index", "--no-compile", "--no-build-isolation",
                 self.source_copy())
        self.check_installed()


@unittest.skipUnless(os.environ.get("JPT_MESON_INSTALLS_PYTHON") == "1",
                     "the build is configured without -Dpython=true")
class MesonInstallTest(unittest.TestCase):
    def test_meson_install_puts_the_package_in_site_packages(self):
        with tempfile.TemporaryDirectory() as dest:
            rc, out, err = run(MESON + ["install", "-C", BUILD_ROOT, "--no-rebuild",
                                        "--destdir", dest, "--tags", "python-runtime"],
                               clean_env())
            self.assertEqual(rc, 0, out + err)
            inits = glob.glob(os.path.join(dest, "**", "jptool", "__init__.py"),
                              recursive=True)
            self.assertEqual(len(inits), 1, inits)
            package = os.path.dirname(inits[0])
            self.assertEqual(sorted(os.listdir(package)), PACKAGE_FILES)
            # Nothing else: the library and headers have tags of their own.
            installed = [os.path.join(d, f) for d, _, files in os.walk(dest) for f in files]
            self.assertEqual(len(installed), len(PACKAGE_FILES), installed)
            rc, out, err = run([sys.executable, "-c", SHOW],
                               clean_env(PYTHONPATH=os.path.dirname(package),
                                         JPTOOL_LIBRARY=LIBRARY))
            self.assertEqual(rc, 0, err)
            self.assertEqual(out.splitlines()[0], inits[0])


if __name__ == "__main__":
    unittest.main()
