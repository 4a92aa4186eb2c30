"""Untrusted YAML is bounded before it is built: time, memory and recursion stay small."""

import subprocess
import sys
import time

import pytest

from spsa_bench.config import safe_yaml
from spsa_bench.config.safe_yaml import YamlError, load_file, load_text


def _laughs(levels: int, width: int = 9) -> str:
    lines = ["l0: &l0 [" + ", ".join(['"lol"'] * width) + "]"]
    for level in range(1, levels):
        refs = ", ".join([f"*l{level - 1}"] * width)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_once_without_expanding():
    bomb = _laughs(9)  # 9**9 ~ 3.9e8 strings once expanded, about 400 bytes of text
    assert len(bomb) < 1000
    start = time.process_time()
    with pytest.raises(YamlError, match="expands to more than 200,000 values"):
        load_text(bomb)
    assert time.process_time() - start < 1.0
    # A little sharing stays fine, and aliases still work.
    assert load_text("a: &a {x: 1}\nb: *a\n") == {"a": {"x": 1}, "b": {"x": 1}}
    small = load_text(_laughs(3))
    assert len(small["l2"]) == 9 and small["l2"][0] == small["l1"]


def test_deep_nesting_is_refused_without_recursion_error():
    for text in (
        "[" * 50_000 + "]" * 50_000,
        "a:\n" + "".join(f"{' ' * i}b{i}:\n" for i in range(1, 80)),
    ):
        with pytest.raises(YamlError, match="nested deeper than 32 levels"):
            load_text(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("? [1, 2]\n: 3\n", "line 1: a mapping key must be a plain string"),
        ("a: {? {b: 1} : 2}\n", "a mapping key must be a plain string"),
        ("1: one\n", "mapping key 1 is a int"),
        ("a: {true: 1}\n", "mapping key True is a bool"),
        ("a:\n  null: 1\n", "mapping key None is a NoneType"),
        ("a: 1\nb: 2\na: 3\n", "line 3: duplicate key 'a' (first on line 1)"),
        ("a: 1\n---\nb: 2\n", "line 2: more than one YAML document"),
        ("a: [1, 2\n", "not valid YAML"),
        ("a: !!python/object:os.system {}\n", "not valid YAML"),
    ],
)
def test_bad_documents_are_refused_naming_what_is_wrong(text, message):
    with pytest.raises(YamlError) as caught:
        load_text(text)
    assert message in str(caught.value)


def test_files_name_themselves_bad_bytes_their_position(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("seeds:\n  first: 0\nname: caf\xe9\n".encode("latin-1"))
    with pytest.raises(YamlError) as caught:
        load_file(path)
    assert (
        str(caught.value)
        == f"{path}: line 3, column 10: byte 0xe9 is not UTF-8 (save the file as UTF-8)"
    )
    with pytest.raises(YamlError, match="cannot read"):
        load_file(tmp_path / "missing.yaml")
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * (safe_yaml.MAX_BYTES + 1))
    with pytest.raises(YamlError, match="larger than"):
        load_file(big)


def test_the_packaged_configurations_load_within_the_limits():
    for path in ("config/config.yaml", ".test/config/config.yaml"):
        assert isinstance(load_file(path), dict)


def test_a_bomb_stays_within_a_small_memory_limit(tmp_path):
    """In a child process capped at 512 MiB of address space, the bomb is refused cleanly."""
    path = tmp_path / "bomb.yaml"
    path.write_text(_laughs(12))
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (512 * 2**20, 512 * 2**20))\n"
        "from spsa_bench.config.safe_yaml import load_file, YamlError\n"
        f"try:\n    load_file({str(path)!r})\nexcept YamlError as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "expands to more than" in done.stdout
