"""``--help`` of the group and of every subcommand: examples kept one per line."""

from __future__ import annotations

import pytest

from kartoframe.cli import cli, main


def _example_lines(help_text: str) -> list[str]:
    """The lines after ``Examples:`` in a command's help source."""
    lines = help_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "Examples:")
    out = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        out.append(line.strip())
    return out


@pytest.mark.parametrize("name", list(cli.commands))
def test_subcommand_help_keeps_examples_on_their_own_lines(name, capsys) -> None:
    assert main(["./x", name, "--help"]) == 0
    printed = capsys.readouterr().out
    assert "\\b" not in printed and "\b" not in printed, printed
    shown = [line.strip() for line in printed.splitlines()]
    examples = _example_lines(cli.commands[name].help or "")
    assert examples, name
    assert "Examples:" in shown
    for example in examples:
        assert example in shown, f"{name}: {example!r} not on its own line in\n{printed}"


def test_group_help_keeps_its_blocks(capsys) -> None:
    assert main(["--help"]) == 0
    printed = capsys.readouterr().out
    assert "\\b" not in printed and "\b" not in printed
    shown = [line.strip() for line in printed.splitlines()]
    assert "kartoframe ./data ls" in shown and "0  success" in shown
