"""The README's commands are the ones CI and users run."""
import re

from labfixtures import REPO


def test_ci_runs_the_readme_test_command_word_for_word():
    readme = (REPO / "README.md").read_text()
    ci_command = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci_command in readme


def test_readme_has_exactly_two_setup_commands():
    readme = (REPO / "README.md").read_text()
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", setup, re.S)
    assert len(commands) == 2 and all(len(c.strip().splitlines()) == 1 for c in commands)
