"""Profiles: the TOML file, and the precedence flags > environment > profile > defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from admin import profiles
from admin.errors import BadInput, NotFound
from admin.profiles import Profile, ProfileFile


def test_round_trip_and_first_profile_becomes_current(tmp_path: Path) -> None:
    path = tmp_path / "rmq" / "config.toml"
    profiles.create(path, Profile("prod", 'a:1;b:2"\\', "json", 2.5))
    profiles.create(path, Profile("dev", "c:3"))
    content = profiles.load(path)
    assert content.current == "prod"
    assert content.profiles["prod"] == Profile("prod", 'a:1;b:2"\\', "json", 2.5)
    assert content.profiles["dev"] == Profile("dev", "c:3")
    assert path.stat().st_mode & 0o777 == 0o600
    assert profiles.use(path, "dev").current == "dev"
    assert profiles.delete(path, "dev").current is None
    with pytest.raises(NotFound):
        profiles.use(path, "dev")
    with pytest.raises(NotFound):
        profiles.delete(path, "nope")


def test_dump_is_small_toml() -> None:
    text = profiles.dump_toml(ProfileFile("local", {"local": Profile("local", "127.0.0.1:9876", None, 5.0)}))
    assert text == 'current = "local"\n\n[profiles."local"]\nnamesrv = "127.0.0.1:9876"\ntimeout = 5.0\n'


def test_bad_files_and_values(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[profiles.x]\nnamesrv = 1\ncolour = 'red'\n")
    with pytest.raises(BadInput, match="unknown setting"):
        profiles.load(path)
    path.write_text("not toml [")
    with pytest.raises(BadInput, match="cannot read"):
        profiles.load(path)
    with pytest.raises(BadInput):
        profiles.check_profile(Profile("bad name"))
    with pytest.raises(BadInput):
        profiles.check_profile(Profile("x", output="yaml"))
    assert profiles.load(tmp_path / "absent.toml") == ProfileFile()


def test_precedence(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    profiles.create(path, Profile("a", "pa:1", "json", 7.0))
    profiles.create(path, Profile("b", "pb:1", "text", None))

    def resolve(env: dict[str, str], **flags: object) -> profiles.Settings:
        return profiles.resolve(env=env, path=path, **flags)  # type: ignore[arg-type]

    # current profile over defaults
    s = resolve({})
    assert (s.namesrv, s.output, s.timeout, s.profile) == (["pa:1"], "json", 7.0, "a")
    # RMQ_PROFILE picks another; missing values fall back to defaults
    s = resolve({"RMQ_PROFILE": "b"})
    assert (s.namesrv, s.output, s.timeout) == (["pb:1"], "text", profiles.DEFAULT_TIMEOUT)
    # environment over profile
    s = resolve(
        {"RMQ_PROFILE": "b", "NAMESRV_ADDR": "env:1;env:2", "RMQ_OUTPUT": "table", "RMQ_TIMEOUT": "3"}
    )
    assert (s.namesrv, s.output, s.timeout) == (["env:1", "env:2"], "table", 3.0)
    assert s.sources == {
        "namesrv": "env NAMESRV_ADDR",
        "output": "env RMQ_OUTPUT",
        "timeout": "env RMQ_TIMEOUT",
    }
    # flags over everything, --profile over RMQ_PROFILE
    s = resolve(
        {"NAMESRV_ADDR": "env:1", "RMQ_PROFILE": "b"},
        namesrv="flag:1",
        output="text",
        timeout=1.5,
        profile="a",
    )
    assert (s.namesrv, s.output, s.timeout, s.profile) == (["flag:1"], "text", 1.5, "a")
    # defaults when there is nothing
    s = profiles.resolve(env={}, path=tmp_path / "none.toml")
    assert (s.namesrv, s.output, s.timeout, s.profile) == (["127.0.0.1:9876"], "table", 5.0, None)
    with pytest.raises(BadInput, match="no profile zz"):
        resolve({}, profile="zz")
    with pytest.raises(BadInput, match="not a number"):
        resolve({"RMQ_TIMEOUT": "soon"})


def test_local_profile_for_rmq_up(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    profiles.create(path, Profile("prod", "p:1"))
    assert profiles.save_local_profile("127.0.0.1:9999", path) == path
    content = profiles.load(path)
    assert content.current == "prod"  # an existing choice is kept
    assert content.profiles["local"].namesrv == "127.0.0.1:9999"
    fresh = tmp_path / "fresh.toml"
    profiles.save_local_profile("127.0.0.1:9876", fresh)
    assert profiles.load(fresh).current == "local"


def test_config_path(tmp_path: Path) -> None:
    assert profiles.config_path({"RMQ_CONFIG": str(tmp_path / "x.toml")}) == tmp_path / "x.toml"
    assert profiles.config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "rmq" / "config.toml"
