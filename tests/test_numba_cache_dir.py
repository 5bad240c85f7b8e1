"""numba's cache still works when perfprobe is installed where it cannot write (a system install)."""

import os

import perfprobe.kernels as kernels


def test_read_only_package_falls_back_to_a_user_cache_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    kernels._ensure_numba_cache_dir()
    assert os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "perfprobe" / "numba")
    assert (tmp_path / "perfprobe" / "numba").is_dir()


def test_writable_package_keeps_numba_default(monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(os, "access", lambda path, mode: True)
    kernels._ensure_numba_cache_dir()
    assert "NUMBA_CACHE_DIR" not in os.environ


def test_users_own_setting_wins(monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/somewhere")
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    kernels._ensure_numba_cache_dir()
    assert os.environ["NUMBA_CACHE_DIR"] == "/somewhere"
