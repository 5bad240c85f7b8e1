"""Build the guests' initramfs: a cached base layer (busybox, the host's python3, the venv's
dependencies, their shared libraries) and a fresh project layer (perfprobe, tests, guest scripts).

Why two layers: the base is ~350 MB and changes only when the interpreter or the installed packages
change, so it is built once under .vm/; the project layer is a few hundred kB, rebuilt every run so
the guests always run the working tree. Linux unpacks concatenated cpio archives in order, so the
initrd handed to QEMU is simply base + project.

Files keep their host paths in the guest (the interpreter under its own prefix, libraries where
ldd found them, the checkout at its own absolute path): the interpreter then finds its standard
library as on the host, and the guest's venv is built for the very interpreter the guest runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numba_warm

HERE = Path(__file__).resolve().parent
BASE_LAYOUT = "3"  # bump when build_base or what it copies changes: the cached base is rebuilt
GUEST_VENV = Path("/venv")
TOP_LEVEL_LINKS = ("bin", "sbin", "lib", "lib64")
# The config-3.X-<arch> folder holds the static libpython (tens of MB); sysconfig reads
# _sysconfigdata*.py, which stays.
STDLIB_DROP = {"test", "site-packages", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3",
               "pydoc_data", "__phello__", Path(sysconfig.get_config_var("LIBPL") or "config").name}
# Extension modules nobody here imports, some of which pull in X11/Tk libraries.
DYNLOAD_DROP = ("_tkinter", "_test", "xxlimited", "_xxtestfuzz", "_ctypes_test", "audioop",
                "ossaudiodev", "nis", "spwd")
SITE_DROP = {"pip", "setuptools", "pkg_resources", "_distutils_hack", "distutils-precedence.pth"}
# GPU and other heavy packages a venv may hold that nothing in a CPU-only guest imports: the HTML
# renderer's plotly, the browser test's selenium, the linters (mypy's compiled part is a 36 MB .so
# named by hash, hence "*__mypyc"), and scipy (143 MB: only compare's U test imports it, inside the
# function, and no guest compares). With them the initrd grew past what a 768 MiB guest can unpack
# (scipy alone made the small-nodes and broken-membind guests fail: "Initramfs unpacking failed").
SITE_DROP_PREFIXES = ("cupy", "nvidia", "fastrlock", "torch", "triton", "__editable__", "plotly", "selenium",
                      "mypy", "ruff", "narwhals", "trio", "scipy")
# Loaded through ctypes/dlopen, so ldd on the extension modules does not list them.
DLOPENED = ("libnuma.so.1", "libgcc_s.so.1")


def python_facts() -> dict[str, str]:
    """The interpreter this script runs under (the project's venv) and where its pieces live."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    return {
        "version": version,
        "full_version": sys.version.split()[0],
        "base_prefix": sys.base_prefix,
        "executable": os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
        "stdlib": sysconfig.get_paths()["stdlib"],
        "site_packages": sysconfig.get_paths()["purelib"],
    }


def base_key(py: dict[str, str]) -> str:
    """Changes whenever the base layer would differ: the builder, the interpreter, the packages."""
    site = Path(py["site_packages"])
    parts = [BASE_LAYOUT.encode(), repr(sorted(py.items())).encode(),
             repr(sorted(p.name for p in site.glob("*.dist-info"))).encode(),
             os.path.realpath(shutil.which("busybox") or "").encode()]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]


class Tree:
    """A staging directory that mirrors host paths, symlinks included."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def dst(self, host_path: str | Path) -> Path:
        return self.root / str(host_path).lstrip("/")

    def replicate(self, host_path: str | Path) -> None:
        """Copy one host path (and the symlinks on its way) to the same path in the tree."""
        path = Path(os.path.abspath(host_path))
        if path == Path("/"):
            return
        self.replicate(path.parent)
        dst = self.dst(path)
        if dst.exists() or dst.is_symlink():
            return
        if path.is_symlink():
            target = os.readlink(path)
            dst.symlink_to(target)
            self.replicate(os.path.normpath(os.path.join(path.parent, target)))
        elif path.is_dir():
            dst.mkdir()
        else:
            shutil.copy2(path, dst)

    def make_parent(self, path: str | Path) -> None:
        """The parent directories of `path`: host ones replicated (symlinks kept), guest-only made."""
        parent = Path(path).parent
        if parent.exists():
            self.replicate(parent)
        else:
            self.dst(parent).mkdir(parents=True, exist_ok=True)

    def copy_tree(self, src: str | Path, dst: str | Path, drop: set[str],
                  drop_prefixes: tuple[str, ...] = ()) -> None:
        """Copy a directory tree, leaving out names in `drop` or starting with `drop_prefixes`
        (top level only), tests of numpy/numba, and optimised pycs."""
        top = os.path.abspath(src)

        def ignore(directory: str, names: list[str]) -> set[str]:
            here = Path(directory)
            at_top = os.path.abspath(directory) == top
            return {n for n in names if n in drop or n.endswith((".opt-1.pyc", ".opt-2.pyc"))
                    or (at_top and (n.startswith(drop_prefixes) or "__mypyc." in n))
                    or (here.name == "lib-dynload" and n.startswith(DYNLOAD_DROP))
                    or (n == "tests" and ("numpy" in here.parts or "numba" in here.parts))}
        self.make_parent(dst)
        shutil.copytree(src, self.dst(dst), symlinks=True, ignore=ignore)


def shared_libraries(files: list[Path]) -> set[str]:
    """Every library ldd resolves for `files` (ELF objects), as absolute host paths."""
    libs: set[str] = set()
    for chunk in range(0, len(files), 64):
        out = subprocess.run(["ldd", *map(str, files[chunk:chunk + 64])], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            words = line.split()
            if "=>" in words and len(words) > words.index("=>") + 1:
                target = words[words.index("=>") + 1]
                if target.startswith("/"):
                    libs.add(target)
            elif words and words[0].startswith("/") and not words[0].endswith(":"):
                libs.add(words[0])
    return libs


def library_path(soname: str) -> str | None:
    """Where the host's loader finds `soname` (ldconfig's cache)."""
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith(soname + " ") and "x86-64" in line:
            return line.split("=>")[-1].strip()
    return None


def is_elf(path: Path) -> bool:
    if path.is_symlink() or not path.is_file():
        return False
    with path.open("rb") as f:
        return f.read(4) == b"\x7fELF"


def elf_files(root: Path) -> list[Path]:
    """Shared objects and executables under `root` (what ldd must resolve)."""
    return [p for p in root.rglob("*") if (".so" in p.name or os.access(p, os.X_OK)) and is_elf(p)]


def build_base(tree: Tree, py: dict[str, str], venv_site: Path) -> None:
    """busybox, ldconfig, the interpreter and its trimmed stdlib, a venv with the dependencies."""
    for name in TOP_LEVEL_LINKS:
        if Path("/", name).is_symlink():
            tree.replicate(Path("/", name))
    tree.replicate(os.path.realpath(shutil.which("busybox") or "/bin/busybox"))
    tree.replicate(shutil.which("ldconfig") or "/sbin/ldconfig")
    tree.replicate(py["executable"])
    tree.copy_tree(py["stdlib"], py["stdlib"], STDLIB_DROP)
    make_guest_venv(tree, py, venv_site)
    libs = {lib for lib in shared_libraries(elf_files(tree.root))
            if not Path(lib).is_relative_to(tree.root)}  # bundled ones (numpy.libs) are there
    libs |= {p for p in map(library_path, DLOPENED) if p}
    for lib in sorted(libs):
        tree.replicate(lib)
    conf = sorted({str(Path(os.path.realpath(lib)).parent) for lib in libs})
    (tree.dst("/etc")).mkdir(exist_ok=True)
    tree.dst("/etc/ld.so.conf").write_text("\n".join(conf) + "\n")
    subprocess.run(["ldconfig", "-r", str(tree.root)], check=True)


def make_guest_venv(tree: Tree, py: dict[str, str], venv_site: Path) -> None:
    """A venv for the guest's interpreter holding the project venv's packages (no pip, no editable
    hook: the project layer adds a .pth pointing at the checkout)."""
    site = GUEST_VENV / "lib" / f"python{py['version']}" / "site-packages"
    tree.copy_tree(venv_site, site, SITE_DROP, SITE_DROP_PREFIXES)
    bindir = tree.dst(GUEST_VENV / "bin")
    bindir.mkdir(parents=True, exist_ok=True)
    for name in ("python", "python3", f"python{py['version']}"):
        (bindir / name).symlink_to(py["executable"])
    tree.dst(GUEST_VENV / "pyvenv.cfg").write_text(
        f"home = {Path(py['executable']).parent}\ninclude-system-site-packages = false\n"
        f"version = {py['full_version']}\n")


def write_cpio(tree: Path, out: Path) -> None:
    """newc cpio of `tree`, owned by root, written atomically."""
    tmp = out.with_suffix(".tmp")
    names = subprocess.run(["find", ".", "-mindepth", "1"], cwd=tree, check=True,
                           capture_output=True).stdout
    with tmp.open("wb") as sink:
        subprocess.run(["cpio", "-o", "-H", "newc", "-R", "0:0", "--quiet"], cwd=tree,
                       input=names, stdout=sink, check=True)
    tmp.replace(out)


def cached_base(cache: Path) -> Path:
    """The base layer's cpio, built when missing or stale (older ones are removed)."""
    py = python_facts()
    out = cache / f"base-{base_key(py)}.cpio"
    if out.exists():
        return out
    for old in cache.glob("base-*.cpio"):
        old.unlink()
    stage = cache / "base-tree"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    print(f"numa-vm: building the guests' base layer (python {py['full_version']}, packages, "
          f"libraries) into {out}", file=sys.stderr)
    build_base(Tree(stage), py, Path(py["site_packages"]))
    write_cpio(stage, out)
    shutil.rmtree(stage)
    return out


def build_project_layer(cache: Path, project: Path, shapes_json: str) -> Path:
    """The checkout (perfprobe/, tests/, pyproject.toml), /init, the guest scripts, and numba's
    cache of the checkout's kernels compiled here (see numba_warm.py)."""
    py = python_facts()
    stage = cache / "project-tree"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    tree = Tree(stage)
    junk = {"__pycache__", ".pytest_cache", ".hypothesis"}
    for name in ("perfprobe", "tests"):
        tree.copy_tree(project / name, project / name, junk)
    shutil.copy2(project / "pyproject.toml", tree.dst(project / "pyproject.toml"))
    tree.copy_tree(HERE / "guest", "/numavm", junk)
    tree.dst("/numavm/shapes.json").write_text(shapes_json)
    tree.dst("/numavm/mtimes.json").write_text(numba_warm.mtime_manifest(project))
    numba_cache = cache / "numba-cache"
    if numba_warm.warm(numba_cache, project):
        tree.copy_tree(numba_cache, numba_cache, set())
    shutil.copy2(HERE / "guest" / "init", tree.dst("/init"))
    site = GUEST_VENV / "lib" / f"python{py['version']}" / "site-packages"
    tree.dst(site).mkdir(parents=True, exist_ok=True)
    tree.dst(site / "perfprobe_checkout.pth").write_text(f"{project}\n")
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", str(stage)],
                   check=False, stdout=subprocess.DEVNULL)
    out = cache / "project.cpio"
    write_cpio(stage, out)
    shutil.rmtree(stage)
    return out


def build_initrd(cache: Path, project: Path, shapes_json: str) -> Path:
    """base + project layer, concatenated into the one file QEMU loads."""
    cache = cache.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    base = cached_base(cache)
    layer = build_project_layer(cache, project, shapes_json)
    out = cache / "initrd.cpio"
    with out.open("wb") as sink:
        for part in (base, layer):
            with part.open("rb") as src:
                shutil.copyfileobj(src, sink, 16 << 20)
    return out
