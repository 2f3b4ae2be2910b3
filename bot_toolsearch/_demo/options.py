"""The ``demo`` command's options, apart from the runner so building the CLI parser stays light."""

from __future__ import annotations

import argparse

__all__ = ["add_demo_arguments"]


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``demo`` command's options."""
    parser.add_argument("--model-url", help="a real OpenAI-compatible base URL (default: offline)")
    parser.add_argument("--model", help="model name for --model-url")
    parser.add_argument("--api-key", help="API key for --model-url (default: $OPENAI_API_KEY)")
    parser.add_argument(
        "--api", choices=("chat_completions", "responses"), default="chat_completions"
    )
