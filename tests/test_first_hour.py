"""The mistakes of a first hour with agui_client, each met with a message that says what to do: a
misspelt command or option, an agent's URL that reaches nothing (a closed port, a name that does not
resolve, https:// to a plain-HTTP agent), an agent that wants credentials.

The CLI is run as ``agui`` runs (clikit); the library against real servers on 127.0.0.1, through both
shells.
"""

from __future__ import annotations

from clikit import agui_here


def test_a_misspelt_command_is_refused_naming_the_one_meant() -> None:
    done = agui_here("rn", "http://127.0.0.1:9/agent")

    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith("invalid choice: 'rn' (choose from 'demo', 'run', 'replay', "
                                                 "'verify', 'probe', 'serve', 'chat'); did you mean run?")


def test_a_word_like_no_command_gets_only_the_list() -> None:
    done = agui_here("launch")

    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith("'chat')")


def test_a_misspelt_option_is_refused_under_the_commands_usage_naming_the_one_meant() -> None:
    # argparse leaves an argument a command does not know to the top parser, which showed
    # `usage: agui [-h] [--version] COMMAND ...`: none of the options the user was looking for.
    done = agui_here("run", "--mesage", "hi", "http://127.0.0.1:9/agent")

    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0].startswith("usage: agui run [-h] [-m MESSAGE]")
    assert lines[-1] == ("agui run: error: unrecognized arguments: --mesage (did you mean --message?) "
                         "http://127.0.0.1:9/agent")


def test_an_option_given_a_value_with_equals_is_matched_by_its_name() -> None:
    done = agui_here("chat", "--threadfile=t.db")

    assert done.returncode == 2
    assert done.stderr.splitlines()[0].startswith("usage: agui chat ")
    assert done.stderr.splitlines()[-1] == ("agui chat: error: unrecognized arguments: --threadfile=t.db "
                                            "(did you mean --thread-file?)")


def test_an_extra_argument_is_refused_by_the_command_it_was_given_to() -> None:
    done = agui_here("verify", "a.jsonl", "b.jsonl")

    assert done.returncode == 2
    assert done.stderr.splitlines() == ["usage: agui verify [-h] [--json] [--plain] DIR|FILE",
                                        "agui verify: error: unrecognized arguments: b.jsonl"]


def test_a_misspelt_choice_of_an_option_names_the_one_meant() -> None:
    done = agui_here("run", "http://127.0.0.1:9/agent", "--legacy-interrupts", "langgrph")

    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith("invalid choice: 'langgrph' (choose from 'langgraph'); "
                                                 "did you mean langgraph?")
