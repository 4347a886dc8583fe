"""The page of `punctkit serve` (`GET /`, punctkit/serve/page.html): served as one self-contained file under a
strict Content-Security-Policy, behind the Host check like every route, and used in a real headless
browser (Chromium from the system's packages, driven by Selenium: utils/install.sh installs both) against
a real server of the shipped model `fast`: pasted text punctuated, an SRT file chosen and its answer
downloaded as SRT, the server's own 413 shown for a file over --max-body, a foreign Host refused."""
from __future__ import annotations

import re
import shutil
import urllib.error
import urllib.request

import pytest

from serve_util import Server, post

pytest.importorskip("aiohttp", reason="aiohttp (punctkit serve) is not installed")
pytest.importorskip("onnxruntime", reason="onnxruntime (the shipped model fast) is not installed")

MAX_BODY = 4000
WORDS = "so i think we should go now what do you think"
SRT = """1
00:00:00,000 --> 00:00:02,500
so i think we should go now

2
00:00:02,600 --> 00:00:04,000
what do you think
"""
FOREIGN = "punct.rebound.example"  # a name of another site, which the browser resolves to 127.0.0.1


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`punctkit serve -m fast` on a free loopback port, with a body limit of MAX_BODY bytes."""
    d = tmp_path_factory.mktemp("page")
    s = Server("fast", d / "serve.log", "--max-body", MAX_BODY)
    yield s
    s.stop()


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    """(status, headers, body) of a GET; an HTTP error status is returned, not raised."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


# ------------------------------------------------------------------ plain HTTP

def test_page_is_html_under_a_strict_policy_with_nothing_external(server):
    status, headers, page = fetch(server.url + "/")
    assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
    policy = dict(d.strip().split(" ", 1) for d in headers["Content-Security-Policy"].split(";"))
    assert policy["default-src"] == "'none'" and policy["connect-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'" and policy["base-uri"] == "'none'"
    assert re.fullmatch(r"'sha256-[A-Za-z0-9+/]{43}='", policy["script-src"]), policy
    assert headers["X-Content-Type-Options"] == "nosniff"
    # one file: no URL, no loaded resource (src=, link, @import, url()), nothing but its inline script and style
    assert not re.search(r"https?:|//[a-z]|\bsrc=|<link|@import", page, re.I) and "url(" not in page, page
    assert page.count("<script>") == 1 and page.count("<style>") == 1 and len(page.encode()) < 8192
    # the model the server runs, and every format a /punctuate answer can be in (none that is a directory)
    _, _, health = fetch(server.url + "/health")
    model = re.search(r'"model": "([^"]+)"', health).group(1)
    assert f'<option value="{model}">' in page
    formats = re.findall(r'<option value="([^"]*)"', page.split('id="format"')[1].split("</select>")[0])
    assert formats[0] == "" and {"readable", "srt", "vtt", "ctm", "jsonl", "timed-json"} <= set(formats)
    assert "datadir" not in formats
    assert f"Largest body: {MAX_BODY:,} bytes" in page


def test_page_goes_through_the_host_check(server):
    for path in ("/", "/health"):
        status, headers, body = fetch(server.url + path, {"Host": f"{FOREIGN}:{server.port}"})
        assert status == 403 and headers["Content-Type"].startswith("application/json"), body
        assert f"host '{FOREIGN}:{server.port}' is not allowed" in body and "<html" not in body
    status, _, _ = fetch(server.url + "/", {"Host": f"localhost:{server.port}"})
    assert status == 200


def test_answer_names_its_format(server):
    """The page names the file it offers by the format of the answer (the default one too)."""
    status, ctype, body = post(server.url + "/punctuate", WORDS.encode())
    assert status == 200 and body.startswith("So I think")
    req = urllib.request.Request(server.url + "/punctuate?format=srt", data=SRT.encode(), method="POST")
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.headers["X-Punctkit-Format"] == "srt"
    with urllib.request.urlopen(urllib.request.Request(server.url + "/punctuate", data=WORDS.encode()),
                                timeout=60) as r:
        assert r.headers["X-Punctkit-Format"] == "readable"


# ------------------------------------------------------------------ a real browser

def browser_paths() -> tuple[str, str]:
    """The system's Chromium and its driver; a skip saying what is missing where there are none."""
    pytest.importorskip("selenium", reason="selenium is not installed (pip install selenium; utils/install.sh)")
    binary = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    driver = shutil.which("chromedriver")
    if binary is None or driver is None:
        pytest.skip("no headless browser: Chromium and chromedriver not found on PATH "
                    "(Debian: apt-get install chromium chromium-driver; utils/install.sh installs them)")
    return binary, driver


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium (Selenium), downloading into its own folder, resolving FOREIGN to 127.0.0.1."""
    binary, driver_path = browser_paths()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    downloads = tmp_path_factory.mktemp("downloads")
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1000,1100", f"--host-resolver-rules=MAP {FOREIGN} 127.0.0.1"):
        opts.add_argument(arg)
    opts.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                           "download.prompt_for_download": False})
    try:
        drv = webdriver.Chrome(options=opts, service=DriverService(executable_path=driver_path))
    except Exception as e:  # noqa: BLE001 (a browser that is installed but cannot start here)
        pytest.skip(f"headless Chromium did not start: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    drv.downloads = downloads
    yield drv
    drv.quit()


def punctuate_in_page(drv, timeout: float = 30) -> str:
    """Click Punctuate and wait for the page to say it is done or failed; its status line."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    drv.find_element(By.ID, "go").click()
    WebDriverWait(drv, timeout).until(
        lambda d: re.match(r"Done|Error|The service", d.find_element(By.ID, "status").text))
    return drv.find_element(By.ID, "status").text


@pytest.mark.slow  # a browser
def test_page_in_a_browser(server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    drv = browser
    drv.get(server.url + "/")
    assert drv.title == "punctkit"
    assert drv.get_log("browser") == []  # no policy violation: the page's own inline script and style are allowed
    drv.execute_script("const s = document.createElement('script'); s.textContent = 'window.injected = 1';"
                       "document.body.appendChild(s);")  # any other script is not
    assert drv.execute_script("return window.injected") is None
    assert any("Content Security Policy" in e["message"] for e in drv.get_log("browser"))
    # pasted text, the default format: the words passed through, marks and case set
    drv.find_element(By.ID, "text").send_keys(WORDS)
    assert punctuate_in_page(drv) == "Done (readable)."  # the default format for words without times
    out = drv.find_element(By.ID, "out").text
    assert out == post(server.url + "/punctuate", WORDS.encode())[2].rstrip("\n")  # the service's answer, shown
    assert out[0] == "S" and out[-1] in ".?!" and [w.strip(",.?!").lower() for w in out.split()] == WORDS.split()
    link = drv.find_element(By.ID, "download")
    assert link.is_displayed() and link.get_attribute("download") == "punctuated.txt"
    drv.save_screenshot(str(tmp_path / "page.png"))

    # an SRT file chosen, written as SRT, downloaded
    (tmp_path / "talk.srt").write_text(SRT)
    drv.find_element(By.ID, "file").send_keys(str(tmp_path / "talk.srt"))
    Select(drv.find_element(By.ID, "format")).select_by_value("srt")
    assert punctuate_in_page(drv) == "Done (srt)."
    assert link.get_attribute("download") == "talk-punctuated.srt"
    link.click()
    target = drv.downloads / "talk-punctuated.srt"
    WebDriverWait(drv, 20).until(lambda d: target.is_file() and target.stat().st_size > 0)
    got = target.read_text()
    assert got == post(server.url + "/punctuate?format=srt", SRT.encode())[2]  # the service's answer, as a file
    assert got.rstrip("\n") == drv.find_element(By.ID, "out").text
    cues = [c.splitlines() for c in got.strip().split("\n\n")]
    assert cues[0][1].startswith("00:00:00,000 --> ") and cues[-1][1].endswith(" --> 00:00:04,000")
    text = " ".join(ln for c in cues for ln in c[2:])
    assert text[0] == "S" and [w.strip(",.?!").lower() for w in text.split()] == WORDS.split()

    # a file over --max-body: the server's own 413 in the page
    (tmp_path / "big.txt").write_text((WORDS + "\n") * (200 * MAX_BODY // len(WORDS)))  # 200 times the limit
    drv.find_element(By.ID, "file").send_keys(str(tmp_path / "big.txt"))
    status = punctuate_in_page(drv)
    assert status == f"Error 413: request: body over the limit of {MAX_BODY} bytes (--max-body)", status
    assert drv.find_element(By.ID, "out").text == "" and not link.is_displayed()


@pytest.mark.slow  # a browser
def test_page_of_a_foreign_host_is_refused_in_a_browser(server, browser):
    """A name of another site rebound to 127.0.0.1 (DNS rebinding) gets the 403 every route gives, no page."""
    from selenium.webdriver.common.by import By

    browser.get(f"http://{FOREIGN}:{server.port}/")
    text = browser.find_element(By.TAG_NAME, "body").text
    assert f"host '{FOREIGN}:{server.port}' is not allowed" in text
    assert not browser.find_elements(By.ID, "go")
