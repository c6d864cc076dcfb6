"""Pure parts of the performance gate: the figures from SGLang's answers, the verdict against the known-good ones."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _perf


def test_perf_request_asks_for_exactly_n_tokens():
    extra = {"chat_template_kwargs": {"thinking": False}, "max_tokens": 1, "ignore_eos": False}
    body = json.loads(_perf.perf_request("m", "Tell a story.", 256, extra))
    assert body == {"model": "m", "messages": [{"role": "user", "content": "Tell a story."}], "stream": False,
                    "max_tokens": 256, "ignore_eos": True, "temperature": 0,
                    "chat_template_kwargs": {"thinking": False}}


@pytest.mark.parametrize("status, body, expect", [
    (200, json.dumps({"usage": {"completion_tokens": 256}}), 256),
    (200, b'{"usage": {"completion_tokens": 3}}', 3),
    (503, "{}", "HTTP 503"),
    (None, "", "HTTP None"),
    (200, "not json", "no usage.completion_tokens"),
    (200, json.dumps({"usage": {"completion_tokens": True}}), "usage.completion_tokens is True"),
])
def test_completion_tokens(status, body, expect):
    if isinstance(expect, int):
        assert _perf.completion_tokens(status, body) == expect
    else:
        with pytest.raises(ValueError, match=expect):
            _perf.completion_tokens(status, body)


@pytest.mark.parametrize("tokens, seconds, expect", [
    ([256] * 8, 25.6, 80.0),
    ([100, 100], 3.0, 66.7),
    ([5], 0, 0.0),
])
def test_decode_throughput(tokens, seconds, expect):
    assert _perf.decode_throughput(tokens, seconds) == expect


@pytest.mark.parametrize("body, expect", [
    # SGLang 0.5.23 /server_info: internal_states per dp rank, avg_spec_accept_length only with speculative decoding
    ({"internal_states": [{"dp_rank": 0, "avg_spec_accept_length": 2.6123}]}, 2.61),
    ({"internal_states": [{"avg_spec_accept_length": 2.0}, {"avg_spec_accept_length": 3.0}]}, 2.5),
    ({"internal_states": [{"avg_spec_accept_length": 2.0}, {"dp_rank": 1}]}, 2.0),
    ({"internal_states": [{"dp_rank": 0, "last_gen_throughput": 0.0}]}, None),
    ({"internal_states": []}, None),
    ({}, None),
    ("not json", None),
    (json.dumps({"internal_states": [{"avg_spec_accept_length": 1.0}]}), 1.0),
    ({"internal_states": [{"avg_spec_accept_length": True}]}, None),
])
def test_accept_length(body, expect):
    assert _perf.accept_length(body) == expect


KNOWN_GOOD = {"decode_tokens_per_s": 80.0, "accept_length": 2.6}


@pytest.mark.parametrize("measured, baseline, tolerance, ok, compared, words", [
    # Field case C38: known-good 2.6 / 80 tokens/s, the new configuration 1.0 / 45: both figures named
    ({"decode_tokens_per_s": 45.0, "accept_length": 1.0}, KNOWN_GOOD, 20, False, ["decode_tokens_per_s", "accept_length"],
     ["decode throughput 45 tokens/s is 44 % below the known-good 80 tokens/s",
      "accept length 1 is 62 % below the known-good 2.6", "cutover_perf_tolerance (20 %)"]),
    ({"decode_tokens_per_s": 79.0, "accept_length": 1.8}, KNOWN_GOOD, 20, False, ["decode_tokens_per_s", "accept_length"],
     ["accept length 1.8 is 31 % below", "known-good: decode throughput 80 tokens/s, accept length 2.6"]),
    ({"decode_tokens_per_s": 64.0, "accept_length": 2.6}, KNOWN_GOOD, 20, True, ["decode_tokens_per_s", "accept_length"],
     ["within 20 %"]),
    ({"decode_tokens_per_s": 63.9, "accept_length": 2.6}, KNOWN_GOOD, 20, False, ["decode_tokens_per_s", "accept_length"],
     ["decode throughput 63.9 tokens/s"]),
    ({"decode_tokens_per_s": 63.9, "accept_length": 2.6}, KNOWN_GOOD, 25, True, ["decode_tokens_per_s", "accept_length"], []),
    ({"decode_tokens_per_s": 200.0, "accept_length": 3.5}, KNOWN_GOOD, 0, True, ["decode_tokens_per_s", "accept_length"], []),
    # speculative decoding off in the new configuration: throughput alone is compared
    ({"decode_tokens_per_s": 90.0, "accept_length": None}, KNOWN_GOOD, 20, True, ["decode_tokens_per_s"], []),
    # the first adoption: no known-good figures, nothing compared, the figures recorded
    ({"decode_tokens_per_s": 45.0, "accept_length": 1.0}, {}, 20, True, [],
     ["no known-good figures to compare with; recorded decode throughput 45 tokens/s, accept length 1"]),
    ({"decode_tokens_per_s": 45.0}, None, 20, True, [], []),
    ({"decode_tokens_per_s": 45.0}, {"decode_tokens_per_s": 0}, 20, True, [], []),
])
def test_perf_verdict(measured, baseline, tolerance, ok, compared, words):
    verdict = _perf.perf_verdict(measured, baseline, tolerance)
    assert verdict[0] is ok and verdict[2] == compared, verdict
    for word in words:
        assert word in verdict[1], verdict[1]


@pytest.mark.parametrize("tolerance", [-1, 101, "x"])
def test_perf_verdict_refuses_a_tolerance_out_of_range(tolerance):
    with pytest.raises(ValueError):
        _perf.perf_verdict({}, KNOWN_GOOD, tolerance)


def test_describe_figures():
    assert _perf.describe_figures({"decode_tokens_per_s": 1950.3, "accept_length": None}) == "decode throughput 1950.3 tokens/s"
    assert _perf.describe_figures({}) == "no figures"
