"""The JupyterLab path: `make lab` serves the course on loopback behind a token, a kernel started
through the server runs notebook 00, and (where Chromium is installed) the page renders it."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import nbformat
import pytest
from tornado.websocket import websocket_connect

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
START = ROOT / "notebooks" / "00_start_here.ipynb"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, token: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab started by `make lab`, as a learner would, with a known token and no browser."""
    tmp = tmp_path_factory.mktemp("lab")
    port, token = free_port(), secrets.token_hex(16)
    # The browser must never write to the course's notebooks: autosave off (and no news pop-up).
    settings = tmp / "settings"
    for plugin, values in {
        "docmanager-extension/plugin": {"autosave": False},
        "apputils-extension/notification": {"fetchNews": "false"},
        "notebook-extension/tracker": {"windowingMode": "none"},  # every cell in the page
    }.items():
        path = settings / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env = {
        **os.environ,
        "JUPYTER_TOKEN": token,
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
    }
    args = f"--no-browser --ServerApp.port={port} --ServerApp.port_retries=0"
    log = open(tmp / "lab.log", "w")
    process = subprocess.Popen(
        ["make", "-s", "lab", f"LAB_ARGS={args}"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if get(f"{base}/api/status", token)[0] == 200:
                    break
            except OSError:
                pass
            assert process.poll() is None, (tmp / "lab.log").read_text()
            assert time.monotonic() < deadline, "JupyterLab did not start in 120 s"
            time.sleep(0.5)
        yield base, token, tmp
    finally:
        stop(process)
        log.close()


def stop(process: subprocess.Popen) -> None:
    """Stop a process started with start_new_session=True, and all its children."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_contents_api_lists_every_notebook(lab):
    base, token, _ = lab
    status, body = get(f"{base}/api/contents/notebooks", token)
    assert status == 200
    content = json.loads(body)["content"]
    listed = sorted(item["name"] for item in content if item["type"] == "notebook")
    assert listed == NOTEBOOKS


def test_requests_without_the_token_are_refused(lab):
    base, token, _ = lab
    assert get(f"{base}/api/contents/notebooks")[0] == 403
    assert get(f"{base}/api/contents/notebooks", "not-the-token")[0] == 403
    assert get(f"{base}/api/kernels")[0] == 403


def test_server_is_bound_to_loopback_only(lab):
    base, _, tmp = lab
    log = (tmp / "lab.log").read_text()
    assert f"{base}/lab" in log and "0.0.0.0" not in log


async def run_cells(base: str, token: str, cells: list[str]) -> list[dict]:
    """Execute each source through the server's kernel websocket; return the replies."""
    request = urllib.request.Request(
        f"{base}/api/kernels", data=b'{"name": "python3"}', method="POST",
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        kernel = json.loads(response.read())["id"]
    ws_url = base.replace("http", "ws") + f"/api/kernels/{kernel}/channels?token={token}"
    connection = await websocket_connect(ws_url)
    replies = []
    session = uuid.uuid4().hex
    for source in cells:
        msg_id = uuid.uuid4().hex
        message = {
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": session,
                       "username": "test", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": source, "silent": False, "store_history": True,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
        }
        await connection.write_message(json.dumps(message))
        reply, idle, errors = None, False, []
        while reply is None or not idle:
            incoming = json.loads(await asyncio.wait_for(connection.read_message(), 120))
            if incoming["parent_header"].get("msg_id") != msg_id:
                continue
            kind = incoming["msg_type"]
            if kind == "execute_reply":
                reply = incoming["content"]
            elif kind == "error":
                errors.append(incoming["content"]["ename"])
            elif kind == "status" and incoming["content"]["execution_state"] == "idle":
                idle = True
        replies.append({"status": reply["status"], "errors": errors})
    connection.close()
    delete = urllib.request.Request(
        f"{base}/api/kernels/{kernel}", method="DELETE", headers={"Authorization": f"token {token}"}
    )
    urllib.request.urlopen(delete, timeout=30).close()
    return replies


def test_a_kernel_started_through_the_server_runs_notebook_00(lab):
    base, token, _ = lab
    cells = [c.source for c in nbformat.read(START, as_version=4).cells if c.cell_type == "code"]
    replies = asyncio.run(run_cells(base, token, cells))
    assert len(replies) == len(cells) >= 5
    assert all(r == {"status": "ok", "errors": []} for r in replies), replies


async def render(url: str, debug_port: int, screenshot: Path, code_cells: int) -> dict:
    """Open ``url`` in the Chromium listening on ``debug_port``; wait for notebook 00's outputs."""
    deadline = time.monotonic() + 30
    while True:
        try:
            status, body = get(f"http://127.0.0.1:{debug_port}/json/list")
            pages = [t for t in json.loads(body) if t["type"] == "page"]
            if status == 200 and pages:
                break
        except OSError:
            pass
        assert time.monotonic() < deadline, "Chromium's debugging port did not open"
        await asyncio.sleep(0.5)
    connection = await websocket_connect(pages[0]["webSocketDebuggerUrl"])
    counter = 0

    async def call(method: str, **params):
        nonlocal counter
        counter += 1
        message = {"id": counter, "method": method, "params": params}
        await connection.write_message(json.dumps(message))
        while True:
            answer = json.loads(await asyncio.wait_for(connection.read_message(), 60))
            if answer.get("id") == counter:
                return answer.get("result", {})

    await call("Page.navigate", url=url)
    probe = """(() => {
        const notebook = document.querySelector('.jp-Notebook');
        return JSON.stringify({
            code: document.querySelectorAll('.jp-Notebook .jp-CodeCell').length,
            outputs: document.querySelectorAll('.jp-Notebook .jp-OutputArea-output').length,
            text: notebook ? notebook.innerText : '',
        });
    })()"""
    state: dict = {}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        result = await call("Runtime.evaluate", expression=probe, returnByValue=True)
        state = json.loads(result.get("result", {}).get("value", "{}"))
        rendered = state.get("code") == code_cells and state.get("outputs", 0) >= 4
        text = state.get("text", "")
        if rendered and "matches np.linalg.norm" in text and "How exercises and checkers" in text:
            break
        await asyncio.sleep(1)
    shot = await call("Page.captureScreenshot", format="png")
    screenshot.write_bytes(base64.b64decode(shot["data"]))
    connection.close()
    return state


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_chromium_renders_notebook_00_with_its_outputs(lab):
    base, token, tmp = lab
    debug_port = free_port()
    browser = subprocess.Popen(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp / 'chromium'}", f"--remote-debugging-port={debug_port}",
         "--remote-allow-origins=*", "--window-size=1400,2400", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    screenshot = tmp / "notebook00.png"
    code_cells = sum(c.cell_type == "code" for c in nbformat.read(START, as_version=4).cells)
    try:
        url = f"{base}/lab/tree/notebooks/00_start_here.ipynb?token={token}"
        state = asyncio.run(render(url, debug_port, screenshot, code_cells))
    finally:
        stop(browser)
    assert state["code"] == code_cells, state
    assert state["outputs"] >= 4, state
    assert "||(3, 4)|| = 5.0" in state["text"]
    assert "Transformer Math: start here" in state["text"]  # markdown rendered too
    assert screenshot.stat().st_size > 20_000
    print(f"screenshot: {screenshot}")
