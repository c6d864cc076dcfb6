"""The ``sglang`` console command of the test double: ``sglang serve|version``.

SGLang 0.5.9 keeps this in ``sglang/cli/main.py`` (entry point
``sglang.cli.main:main``); the double has it as ``sglang.cli:main``.
"""

import argparse
import sys
from typing import List, Optional

from sglang.version import __version__


def _serve(extra_argv: List[str]) -> int:
    from sglang.launch_server import run_server
    from sglang.srt.server_args import prepare_server_args

    if any(h in extra_argv for h in ("-h", "--help")):
        print("Usage: sglang serve --model-path <model-name-or-path> [additional-arguments]\n")
        print("This command can launch either a standard language model server or a diffusion model server.")
        print("The server type is determined by the model path.\n")
        print("For specific arguments, please provide a model_path.")
        print("\n--- Help for Standard Language Model Server ---")
        try:
            prepare_server_args(["--help"])
        except SystemExit:
            pass
        return 0
    # 0.5.9's cli/serve.py reads the model path from argv itself (cli/utils.py
    # get_model_path: only "--model-path X" or "--model-path=X") before any parsing, so
    # neither the --model alias nor a model-path from a --config file is enough there.
    if not any(a == "--model-path" and i + 1 < len(extra_argv) or a.startswith("--model-path=")
               for i, a in enumerate(extra_argv)):
        raise Exception("Error: --model-path is required. Please provide the path to the model.")
    run_server(prepare_server_args(extra_argv))
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers(dest="subcommand", required=True)
    subparsers.add_parser("serve", help="Launch the SGLang server.", add_help=False)
    subparsers.add_parser("generate", help="Run inference on a multimodal model.", add_help=False)
    subparsers.add_parser("version", help="Show the version information.")
    args, extra_argv = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    if args.subcommand == "version":
        if extra_argv:
            parser.error("unrecognized arguments: %s" % " ".join(extra_argv))
        print("sglang version: %s" % __version__)
        print("git revision: N/A")
        return 0
    if args.subcommand == "generate":
        print("sglang generate (diffusion models) is not modelled by the SGLang test double.", file=sys.stderr)
        return 2
    return _serve(extra_argv)


if __name__ == "__main__":
    sys.exit(main())
