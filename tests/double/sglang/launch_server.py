"""Launch the inference server: ``python -m sglang.launch_server [flags]`` (test double)."""

import sys

from sglang.srt.server_args import prepare_server_args


def run_server(server_args) -> None:
    from sglang.srt.entrypoints.http_server import launch_server

    launch_server(server_args)


if __name__ == "__main__":
    run_server(prepare_server_args(sys.argv[1:]))
