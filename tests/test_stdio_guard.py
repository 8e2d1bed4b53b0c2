"""Every stdio request gets an answer: lines the SDK's reader would drop without a word are
answered with a JSON-RPC error naming what is wrong (mcp_memory/server/stdio.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mcp_memory.server.stdio import INVALID_PARAMS, INVALID_REQUEST, MAX_DEPTH, PARSE_ERROR, Refused, check

from .test_stdio import SERVE, server_params

CALL = '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":%s}'
BAD_LINES = [
    # (raw line, id expected in the answer, code, words in the message)
    (CALL % (11, '{"name":"memory_search","arguments":{"query":"\\ud800"}}'), 11, INVALID_REQUEST, "surrogate"),
    (CALL % (12, '"hello"'), 12, INVALID_PARAMS, "params must be an object"),
    (CALL % (13, "[1, 2]"), 13, INVALID_PARAMS, "params must be an object"),
    (CALL % ('"deep"', '{"name":"memory_search","arguments":{"query":"x","m":' + "[" * 300 + "]" * 300 + "}}"),
     "deep", INVALID_REQUEST, "nested"),
    ('{"jsonrpc":"2.0","id":15,', None, PARSE_ERROR, "not valid JSON"),
    ('[{"jsonrpc":"2.0","id":16,"method":"ping"}]', None, INVALID_REQUEST, "JSON object"),
    ('{"jsonrpc":"2.0","id":17}', 17, INVALID_REQUEST, "Invalid Request"),
]


@pytest.mark.parametrize(("line", "request_id", "code", "words"), BAD_LINES)
def test_check_refuses(line: str, request_id: object, code: int, words: str) -> None:
    with pytest.raises(Refused) as refused:
        check(line)
    assert (refused.value.request_id, refused.value.code) == (request_id, code)
    assert words in refused.value.message


def test_check_lets_good_messages_through() -> None:
    check(CALL % (1, '{"name":"memory_search","arguments":{"query":"caf\\u00e9 \\ud83d\\ude00"}}'))  # a pair is fine
    check('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    check('{"jsonrpc":"2.0","id":2,"method":"ping"}')
    check(CALL % (3, '{"name":"x","arguments":{"m":' + "[" * (MAX_DEPTH - 4) + "]" * (MAX_DEPTH - 4) + "}}"))


def test_a_real_server_answers_every_line(tmp_path: Path) -> None:
    env = {**os.environ, **server_params(tmp_path).env}
    proc = subprocess.Popen([SERVE, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)

    def send(line: str) -> None:
        proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        proc.stdin.flush()

    def reply() -> dict:
        line = proc.stdout.readline()
        assert line, "server closed stdout"
        return json.loads(line)

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
        assert reply()["id"] == 0
        send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for line, request_id, code, words in BAD_LINES:
            send(line)
            answer = reply()
            assert (answer["id"], answer["error"]["code"]) == (request_id, code), answer
            assert words in answer["error"]["message"]
        # Bytes that are not UTF-8 inside a string.
        proc.stdin.write(b'{"jsonrpc":"2.0","id":98,"method":"ping","params":{"x":"\xff\xfe"}}\n')
        proc.stdin.flush()
        assert (lambda a: (a["id"], a["error"]["code"]))(reply()) == (98, INVALID_REQUEST)
        # And the session still works.
        send(CALL % (99, '{"name":"memory_list","arguments":{}}'))
        assert reply()["result"]["isError"] is False
    finally:
        # End of input is how a client says goodbye: the server then stops its embedded database.
        # Killed instead, it left that PostgreSQL running after the suite.
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
