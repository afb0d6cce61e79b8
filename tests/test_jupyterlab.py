"""The JupyterLab path: `make lab` serves the course on loopback behind a token, a kernel started
through the server runs notebook 00, and (where Debian's chromium is installed) a learner, played
by Playwright, opens notebook 00 in the Lab, runs all its cells and sees the checkers' verdicts."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
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
from conftest import CHROMIUM, needs_browser
from playwright.sync_api import Page, expect, sync_playwright
from tornado.websocket import websocket_connect

from notebooks import notebook_paths

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [path.name for path in notebook_paths()]
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


# Debian's chromium, driven by Playwright (never a browser of Playwright's own: nothing downloaded).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# Generous: a cold kernel imports torch on two shared cores; expect() polls, so a fast run is fast.
LONG = 300_000  # ms


def click_menu(page: Page, menu: str, item: str) -> None:
    """Click ``menu`` in the Lab's menu bar, then its ``item``, as a learner would."""
    page.locator(".lm-MenuBar-item").filter(has_text=re.compile(f"^{re.escape(menu)}$")).click()
    label = page.locator(".lm-Menu-itemLabel").filter(has_text=re.compile(f"^{re.escape(item)}$"))
    page.locator(".lm-Menu .lm-Menu-item").filter(has=label).click()


def run_notebook_00_as_a_learner(page: Page, url: str, code_cells: int, screenshot: Path) -> None:
    """Open notebook 00 in the Lab, run all its cells from the menu, check what a learner sees."""
    page.set_default_timeout(60_000)
    expect.set_options(timeout=60_000)
    page.goto(url)
    notebook = page.locator(".jp-NotebookPanel .jp-Notebook")
    prompts = notebook.locator(".jp-CodeCell .jp-InputPrompt")
    # The status bar's "Python 3 (ipykernel) | Idle": it says Idle only once the kernel is
    # connected (the toolbar's indicator says idle before the kernel has even started).
    kernel = page.locator(".jp-StatusBar-TextItem").filter(has_text=re.compile(r" \| \w+$"))
    idle = re.compile(r"^Python 3.* \| Idle$")
    outputs = notebook.locator(".jp-OutputArea-output")

    # The notebook renders, markdown included, and its kernel starts.
    expect(prompts).to_have_count(code_cells, timeout=LONG)
    expect(notebook).to_contain_text("Transformer Math: start here")
    expect(kernel).to_have_text(idle, timeout=LONG)

    # Clear the stored outputs, so that what is seen next comes from this run.
    click_menu(page, "Edit", "Clear Outputs of All Cells")
    expect(outputs).to_have_count(0)
    expect(prompts).to_have_text(["[ ]:"] * code_cells)

    # Run → Run All Cells. Wait for the last cell's execution count, or for a traceback (a
    # failing cell stops the run: the cells after it would never get one).
    click_menu(page, "Run", "Run All Cells")
    numbered = re.compile(r"^\[\d+\]:$")
    traceback = notebook.locator(".jp-RenderedText").filter(has_text="Traceback")
    expect(prompts.last.filter(has_text=numbered).or_(traceback).first).to_be_visible(
        timeout=LONG
    )
    # No cell failed (warnings are stderr too: look for a traceback, not for stderr).
    expect(traceback).to_have_count(0)
    # Every code cell has its execution count, in document order, and the kernel is idle.
    expect(prompts).to_have_text([numbered] * code_cells)
    expect(kernel).to_have_text(idle, timeout=LONG)
    counts = [int(text.strip("[]:")) for text in prompts.all_inner_texts()]
    assert counts == sorted(set(counts)), counts

    # The checkers' verdicts: the wrong attempt's failed (✗) and passed (✓) cases, the
    # stub's "not attempted yet"; and the environment report's python row.
    expect(outputs.filter(has_text="not attempted yet").first).to_be_visible()
    expect(outputs.filter(has_text="✗").first).to_be_visible()
    expect(outputs.filter(has_text="✓").first).to_be_visible()
    expect(outputs.filter(has_text=re.compile(r"python\s+3\.\d+")).first).to_be_visible()
    page.screenshot(path=screenshot)

    # Close the tab; asked to save the run's outputs, discard them: the file stays as is.
    click_menu(page, "File", "Close Tab")
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Save your work")
    dialog.locator("button", has_text=re.compile("^Discard$")).click()
    expect(notebook).to_have_count(0)


@needs_browser
def test_a_learner_runs_notebook_00_in_the_lab_and_sees_the_checkers_verdict(lab):
    base, token, tmp = lab
    before = START.read_bytes()
    code_cells = sum(c.cell_type == "code" for c in nbformat.reads(before, as_version=4).cells)
    url = f"{base}/lab/tree/notebooks/00_start_here.ipynb?token={token}"
    screenshot = tmp / "notebook00.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2400})
            try:
                run_notebook_00_as_a_learner(page, url, code_cells, screenshot)
            except Exception:
                page.screenshot(path=tmp / "notebook00-failure.png")  # what the learner saw
                raise
        finally:
            browser.close()
    assert screenshot.stat().st_size > 20_000
    assert START.read_bytes() == before, "the browser wrote to notebooks/00_start_here.ipynb"
    print(f"screenshot: {screenshot}")
