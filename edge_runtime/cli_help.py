"""``--help`` that shows every option's default, for both command lines (``arc-edge``, ``arc-build``)."""

from __future__ import annotations

import argparse


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """argparse's defaults formatter, also for options declared without a help text; epilogs
    (examples to copy) keep their lines as written.

    The stock formatter appends "(default: X)" only to options that have help; a user reading
    ``arc-edge serve --help`` needs ``--port``'s default as much as ``--spin``'s.
    """

    def _format_action(self, action: argparse.Action) -> str:
        if action.help is None and action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
            action.help = "(default: %(default)s)"
        return super()._format_action(action)
