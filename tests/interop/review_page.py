"""The review page in a real headless browser (Chromium from the Debian
packages, driven by Playwright for Python), as a person uses it.

Run by tests/e2e/review.rs, which starts `toolhost serve --http`, has an
agent create the tools over MCP, and checks the MCP side afterwards.

    review_page.py BASE_URL PLAN_JSON

PLAN_JSON: {"login": the sign-in link, "approve": {"id", "name", "grant"}, "reject": {"id", "reason"},
"other": ID (a pending tool to try forged requests on), "screenshot": PATH,
"chromium": PATH}. The page lives where the link points (BASE_URL plus
/review/<random>). It also runs a server of its own on another loopback
port and has the signed-in browser open it, to see which cookies such a
server gets. Prints one JSON object of what it saw; exits non-zero
(with the reason) when the page does not behave.
"""

import http.server
import json
import sys
import threading
import urllib.error
import urllib.request

from playwright.sync_api import sync_playwright


def fail(why):
    print(json.dumps({"ok": False, "why": why}))
    sys.exit(1)


class Collector(http.server.BaseHTTPRequestHandler):
    """A server on another loopback port: it keeps every Cookie header."""

    cookies = []

    def do_GET(self):
        Collector.cookies.extend(self.headers.get_all("Cookie") or [])
        body = b"<!doctype html><title>elsewhere</title><p>another server"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def status_of(url, headers=None, data=None):
    request = urllib.request.Request(url, headers=headers or {}, data=data)
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def main():
    base, plan = sys.argv[1], json.loads(sys.argv[2])
    page_base = plan["login"].split("/login?", 1)[0]
    seen = {}
    collector = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    elsewhere = f"http://127.0.0.1:{collector.server_address[1]}"
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=plan["chromium"],
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        # The page asks before a changed grant or a rejection: say yes.
        page.on("dialog", lambda dialog: dialog.accept())
        blocked = []
        page.on("requestfailed", lambda r: blocked.append(r.url))
        # Signing in with the printed link sets the cookie and lands on the page.
        response = page.goto(plan["login"])
        if page.url != page_base:
            fail("the sign-in link did not lead to the page: " + page.url)
        seen["csp"] = response.headers.get("content-security-policy")

        approve = page.locator(f"article#t-{plan['approve']['id']}")
        if approve.count() != 1:
            fail("the tool to approve is not shown as pending")
        seen["warnings"] = approve.locator("ul.warnings li").all_inner_texts()
        seen["requested"] = approve.locator("dd.requested").inner_text()
        seen["hidden_marks"] = approve.locator("pre.source mark.cc").all_inner_texts()
        # The policy holds: the page's own script cannot fetch anything.
        seen["fetch_blocked"] = page.evaluate(
            "() => fetch(location.href).then(() => false, () => true)"
        )
        page.screenshot(path=plan["screenshot"], full_page=True)

        # Approve with an edited grant.
        grant = approve.locator("input[name=grant]")
        grant.fill(plan["approve"]["grant"])
        seen["grant_marked_changed"] = "changed-grant" in (grant.get_attribute("class") or "")
        with page.expect_navigation():
            approve.locator("button.approve-button").click()
        if page.locator("p.notice").count() != 1:
            fail("no notice after approving; the page says: " + page.locator("body").inner_text()[:2000])
        seen["after_approve"] = page.locator("p.notice").inner_text()

        # Reject the other with a reason.
        reject = page.locator(f"article#t-{plan['reject']['id']}")
        reject.locator("input[name=reason]").fill(plan["reject"]["reason"])
        with page.expect_navigation():
            reject.locator("button.reject-button").click()
        if page.locator("p.notice").count() != 1:
            fail("no notice after rejecting; the page says: " + page.locator("body").inner_text()[:2000])
        seen["after_reject"] = page.locator("p.notice").inner_text()
        seen["decided_rows"] = page.locator("table tbody tr").all_inner_texts()

        # Forged requests change nothing: no CSRF token, a wrong one, and
        # the right one sent from another site.
        csrf = page.locator("input[name=csrf]").first.get_attribute("value") if page.locator("input[name=csrf]").count() else None
        other = plan["other"]
        forged = {}
        forged["no_token"] = page.request.post(
            f"{page_base}/approve", form={"id": other, "grant": "commands"}
        ).status
        forged["wrong_token"] = page.request.post(
            f"{page_base}/approve", form={"id": other, "grant": "commands", "csrf": "0" * 64}
        ).status
        forged["other_site"] = page.request.post(
            f"{page_base}/approve",
            form={"id": other, "grant": "commands", "csrf": csrf or ""},
            headers={"Origin": "http://evil.example"},
        ).status
        # The right token, but no word of where it comes from: refused.
        forged["no_origin"] = page.request.post(
            f"{page_base}/approve", form={"id": other, "grant": "", "csrf": csrf or ""}
        ).status
        # The right token and origin, but not what was shown: refused.
        unseen = page.request.post(
            f"{page_base}/approve",
            form={"id": other, "grant": "", "csrf": csrf or "", "seen": "0" * 64},
            headers={"Origin": base},
        )
        forged["unseen"] = unseen.status
        if "changed after it was shown" not in unseen.text():
            fail("an approval of something not shown says why: " + unseen.text()[:500])
        seen["forged"] = forged
        page.goto(page_base)
        seen["other_still_pending"] = page.locator(f"article#t-{other}").count() == 1

        # A server on another loopback port, opened by the signed-in
        # browser at the paths it could guess: whatever cookies it gets
        # open nothing on the review page and approve nothing.
        for path in ("/", "/review", "/review/", "/review/login", "/review/approve"):
            page.goto(elsewhere + path)
        seen["cookies_elsewhere"] = sorted(set(Collector.cookies))
        replayed = []
        for cookie in Collector.cookies:
            replayed.append(status_of(page_base, {"Cookie": cookie}))
            replayed.append(status_of(
                f"{page_base}/approve",
                {"Cookie": cookie, "Origin": base, "Content-Type": "application/x-www-form-urlencoded"},
                f"id={other}&grant=commands&csrf={csrf}".encode(),
            ))
        seen["replayed"] = replayed
        page.goto(page_base)
        seen["other_still_pending_after_replay"] = page.locator(f"article#t-{other}").count() == 1
        # The control: under the page's own random path, the same server
        # does get the cookie; that path is what it cannot know.
        page.goto(elsewhere + page_base.split(base, 1)[1] + "/x")
        seen["cookie_under_the_secret_path"] = any("toolhost_review=" in c for c in Collector.cookies)

        # The sign-in link works once.
        again = page.context.browser.new_context().new_page()
        used = again.goto(plan["login"])
        seen["link_again"] = used.status
        seen["link_again_says"] = again.locator("p.error").inner_text() if again.locator("p.error").count() else ""

        # The tool list and the audit log, filtered.
        page.goto(f"{page_base}/tools")
        seen["tools_rows"] = page.locator("table.tools tbody tr").count()
        seen["approved_row"] = page.locator(f"tr#tool-{plan['approve']['name']}").inner_text()
        page.goto(f"{page_base}/audit")
        page.select_option("select[name=tool]", "create_tool")
        with page.expect_navigation():
            page.locator("form.filter button").click()
        seen["audit_tools"] = sorted(
            set(page.locator("table.audit tbody tr td:nth-child(2)").all_inner_texts())
        )
        seen["audit_count"] = page.locator("p.count").inner_text()
        seen["blocked_requests"] = blocked
        browser.close()
    collector.shutdown()
    print(json.dumps({"ok": True, **seen}))


main()
